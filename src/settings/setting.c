/* setting.c: one setting's value, parsed by its row's type into its field. */
#include "setting.h"
#include "value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "invalid WHAT "VALUE" (HINT)", the value quoted and cut for one line. */
static int invalid(const char *what, const char *value, const char *hint,
		   char *why, size_t whylen)
{
	char shown[64];

	return value_why(why, whylen, "invalid %s %s%s%s%s", what,
			 value_quote(value, shown, sizeof(shown)), *hint ? " (" : "",
			 hint, *hint ? ")" : "");
}

/* "VALUE is out of range (at most MAX, about Nh)": the hours, because a
 * limit such as 2147483.647s means little to a person. */
static int too_long(const char *value, int64_t max, char *why, size_t whylen)
{
	char shown[64], limit[32], hours[32] = "";

	if (max >= 3600000 && max % 3600000)
		snprintf(hours, sizeof(hours), ", about %lldh",
			 (long long)(max / 3600000));
	return value_why(why, whylen, "%s is out of range (at most %s%s)",
			 value_quote(value, shown, sizeof(shown)),
			 value_format_duration(max, limit, sizeof(limit)), hours);
}

static int set_duration(const struct option_row *row, int64_t *field,
			const char *value, char *why, size_t whylen)
{
	int64_t ms;

	if (row->none_allowed && strcmp(value, "none") == 0)
		ms = -1;
	else if (value_parse_duration(value, &ms) < 0)
		return invalid("duration", value, "examples: 250ms, 5s, 2m", why, whylen);
	else if (ms < row->min)
		return value_why(why, whylen, "must be greater than 0");
	else if (row->max > 0 && ms > row->max)
		return too_long(value, row->max, why, whylen);
	*field = ms;
	return 0;
}

static int set_int(const struct option_row *row, int *field, const char *value,
		   char *why, size_t whylen)
{
	int64_t number;

	if (value_parse_int(value, &number) < 0)
		return invalid("number", value, "", why, whylen);
	if (number < row->min || number > row->max)
		return value_why(why, whylen, "%s is out of range (%lld to %lld)",
				 value, (long long)row->min, (long long)row->max);
	*field = (int)number;
	return 0;
}

static int set_size(const struct option_row *row, int64_t *field,
		    const char *value, char *why, size_t whylen)
{
	int64_t bytes;

	if (value_parse_size(value, &bytes) < 0)
		return invalid("size", value, "examples: 0, 512, 4KiB, 1MiB", why, whylen);
	if (bytes < row->min || (row->max > 0 && bytes > row->max))
		return value_why(why, whylen, "%s is out of range (%lld to %lld bytes)",
				 value, (long long)row->min, (long long)row->max);
	*field = bytes;
	return 0;
}

static int set_enum(const struct option_row *row, int *field, const char *value,
		    char *why, size_t whylen)
{
	char names[128] = "expected ";
	size_t used = strlen(names);

	for (const struct option_choice *c = row->choices; c->name; c++) {
		if (strcmp(value, c->name) == 0) {
			*field = c->value; /* the target's enums are ints */
			return 0;
		}
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
					 c == row->choices ? "" : ", ", c->name);
		if (used >= sizeof(names))
			used = sizeof(names) - 1;
	}
	return invalid("value", value, names, why, whylen);
}

/* Replaces *field with a copy of value; "" with NULL when empty_unsets. */
static int set_string(char **field, const char *value, bool empty_unsets,
		      char *why, size_t whylen)
{
	char *copy = NULL;

	if ((*value || !empty_unsets) && !(copy = strdup(value)))
		return value_why(why, whylen, "out of memory");
	free(*field);
	*field = copy;
	return 0;
}

int setting_parse(const struct option_row *row, void *field, const char *value,
		  char *why, size_t whylen)
{
	switch (row->type) {
	case OPTION_DURATION:
		return set_duration(row, field, value, why, whylen);
	case OPTION_INT:
		return set_int(row, field, value, why, whylen);
	case OPTION_SIZE:
		return set_size(row, field, value, why, whylen);
	case OPTION_BOOL:
		if (value_parse_bool(value, field) < 0)
			return invalid("boolean", value, "true/false, yes/no, on/off, 1/0",
				       why, whylen);
		return 0;
	case OPTION_ENUM:
		return set_enum(row, field, value, why, whylen);
	case OPTION_LOCK_KEY:
		if (value_parse_lock_key(value, field) < 0)
			return invalid("lock key", value,
				       "signed 64-bit decimal, or 0x and 1 to 16 hex digits",
				       why, whylen);
		return 0;
	case OPTION_STRING:
	case OPTION_TEXT:
		if (row->check && row->check(value, why, whylen) < 0)
			return -1;
		/* "dsn =" is back to the libpq environment; "command =" is
		 * an empty command, said so once every layer is in. */
		return set_string(field, value, row->type == OPTION_STRING, why, whylen);
	case OPTION_FLAG:
		*(bool *)field = true;
		return 0;
	case OPTION_ACTION:
		break;
	}
	return 0;
}

void setting_clear(const struct option_row *row, void *field)
{
	switch (row->type) {
	case OPTION_DURATION:
	case OPTION_SIZE:
	case OPTION_LOCK_KEY:
		*(int64_t *)field = 0;
		break;
	case OPTION_INT:
	case OPTION_ENUM:
		*(int *)field = 0;
		break;
	case OPTION_BOOL:
	case OPTION_FLAG:
		*(bool *)field = false;
		break;
	case OPTION_STRING:
	case OPTION_TEXT:
		free(*(char **)field);
		*(char **)field = NULL;
		break;
	case OPTION_ACTION:
		break;
	}
}
