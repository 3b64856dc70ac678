/* options.c: the table engine: defaults, INI file, environment, getopt_long
 * and --help, all driven by the caller's rows. */
#include "exit_codes.h"
#include "options.h"
#include "inifile.h"
#include "setting.h"
#include "value.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELP_COLUMN 30
#define WHERE_MAX 600 /* "FILE:LINE: key" */
#define OPTION_BASE 256 /* getopt_long's value for row i: past every char */

/* Per row: which layer set it last, on which line of the file, and the
 * value of an OPTION_TEXT row. */
struct row_state {
	enum options_layer layer;
	int line;
	char *text;
};

struct setting {
	const struct option_row *row;
	const char *value; /* borrowed from argv */
};

struct options {
	const struct options_spec *spec;
	void *target;
	void *user;
	char *err;
	size_t errlen;
	bool failed;
	enum options_layer layer; /* being applied: decides messages and exit codes */
	char *path;       /* the file, as shown in messages */
	int line;
	struct row_state *state;
	struct setting *settings;
	size_t nsettings;
	struct option *longopts;
	char *shortopts;
};

int options_fail(struct options *op, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(op->err, op->errlen, fmt, ap);
	va_end(ap);
	op->failed = true;
	return code;
}

static bool takes_value(const struct option_row *row)
{
	return row->type != OPTION_FLAG && row->type != OPTION_BOOL &&
	       (row->type != OPTION_ACTION || row->metavar);
}

static const struct option_row *find_key(const struct options_spec *spec,
					 const char *key)
{
	for (size_t i = 0; key && i < spec->nrows; i++)
		if (spec->rows[i].key && strcmp(spec->rows[i].key, key) == 0)
			return &spec->rows[i];
	return NULL;
}

static struct row_state *state_of(const struct options *op,
				  const struct option_row *row)
{
	return &op->state[row - op->spec->rows];
}

/* OPTION_TEXT values live in the loader until every layer is in. */
static void *field_of(const struct options *op, const struct option_row *row)
{
	if (row->type == OPTION_TEXT)
		return &state_of(op, row)->text;
	return (char *)op->target + row->offset;
}

/* ---- layers ---- */

/* How messages name a setting: file:line and key, variable, or option. */
static void describe(const struct options *op, const struct option_row *row,
		     enum options_layer layer, int line, char *buf, size_t len)
{
	size_t n;

	switch (layer) {
	case OPTIONS_LAYER_FILE:
		snprintf(buf, len, "%s:%d: %s", op->path, line, row->key);
		break;
	case OPTIONS_LAYER_ENV:
		n = (size_t)snprintf(buf, len, "%s", op->spec->env_prefix);
		for (const char *k = row->key; *k && n + 1 < len; k++)
			buf[n++] = (*k >= 'a' && *k <= 'z') ? (char)(*k - 32) : *k;
		buf[n < len ? n : len - 1] = '\0';
		break;
	case OPTIONS_LAYER_ARGV:
		snprintf(buf, len, "--%s", row->long_name);
		break;
	case OPTIONS_LAYER_NONE:
	case OPTIONS_LAYER_DEFAULTS:
		snprintf(buf, len, "default %s", row->key);
		break;
	}
}

/* A key given twice in the file is a mistake (which one was meant?), and
 * so are two keys that name one thing in one layer; a higher layer
 * overrides either. */
static int check_twice(struct options *op, const struct option_row *row,
		       const char *where, int code)
{
	const struct option_row *other = find_key(op->spec, row->conflicts);
	const struct row_state *self = state_of(op, row), *them;
	char conflict[WHERE_MAX];

	if (op->layer == OPTIONS_LAYER_FILE && self->layer == OPTIONS_LAYER_FILE)
		return options_fail(op, code, "%s: already set on line %d; set it only once",
				    where, self->line);
	if (!other || (them = state_of(op, other))->layer != op->layer)
		return OPTIONS_OK;
	if (op->layer == OPTIONS_LAYER_FILE)
		snprintf(conflict, sizeof(conflict), "%s on line %d", other->key,
			 them->line);
	else
		describe(op, other, op->layer, 0, conflict, sizeof(conflict));
	return options_fail(op, code, "%s: conflicts with %s; set only one of them",
			    where, conflict);
}

static int apply(struct options *op, const struct option_row *row,
		 const char *value)
{
	int code = op->layer == OPTIONS_LAYER_ARGV ? EXIT_USAGE : EXIT_CONFIG;
	const struct option_row *other = find_key(op->spec, row->conflicts);
	struct row_state *self = state_of(op, row);
	char where[WHERE_MAX], why[256];
	int result;

	describe(op, row, op->layer, op->line, where, sizeof(where));
	if ((result = check_twice(op, row, where, code)) != OPTIONS_OK)
		return result;
	if (setting_parse(row, field_of(op, row), value, why, sizeof(why)) < 0)
		return options_fail(op, code, "%s: %s", where, why);
	self->layer = op->layer;
	self->line = op->line;
	if (other) {
		setting_clear(other, field_of(op, other));
		state_of(op, other)->layer = OPTIONS_LAYER_NONE;
	}
	return OPTIONS_OK;
}

int options_load_defaults(struct options *op)
{
	int result = OPTIONS_OK;

	op->layer = OPTIONS_LAYER_DEFAULTS;
	for (size_t i = 0; i < op->spec->nrows && result == OPTIONS_OK; i++)
		if (op->spec->rows[i].key && op->spec->rows[i].default_value)
			result = apply(op, &op->spec->rows[i],
				       op->spec->rows[i].default_value);
	return result;
}

int options_load_environment(struct options *op)
{
	op->layer = OPTIONS_LAYER_ENV;
	for (size_t i = 0; i < op->spec->nrows; i++) {
		const struct option_row *row = &op->spec->rows[i];
		char name[128];
		const char *value;
		int result;

		if (!row->key)
			continue;
		describe(op, row, OPTIONS_LAYER_ENV, 0, name, sizeof(name));
		/* An empty variable is unset: what "${VAR}" in a unit gives. */
		if (!(value = getenv(name)) || !*value)
			continue;
		if ((result = apply(op, row, value)) != OPTIONS_OK)
			return result;
	}
	return OPTIONS_OK;
}

const char *options_env_hint(const struct options *op, char *buf, size_t len)
{
	const char *prefix = op->spec->env_prefix, *hint;
	size_t plen;
	char name[64], shown[64], normal[64];

	buf[0] = '\0';
	if (!prefix)
		return buf;
	plen = strlen(prefix);
	for (char **e = environ; *e; e++) {
		size_t n = strcspn(*e, "=");

		if (strncmp(*e, prefix, plen) != 0 || n <= plen || n - plen >= sizeof(name))
			continue;
		memcpy(name, *e + plen, n - plen);
		name[n - plen] = '\0';
		options_normal_key(name, normal, sizeof(normal));
		if (find_key(op->spec, normal) && strcmp(normal, name) != 0 &&
		    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") == strlen(name))
			continue; /* PGLEADER_LOCK_KEY itself */
		hint = options_nearest(name, false, &op->spec->rows[0].key, op->spec->nrows,
				       sizeof(op->spec->rows[0]));
		if (!hint)
			continue;
		describe(op, find_key(op->spec, hint), OPTIONS_LAYER_ENV, 0, normal,
			 sizeof(normal));
		snprintf(buf, len, "%s%s is not a setting and is ignored (did you mean %s?)",
			 prefix, value_printable(name, strlen(name), shown, sizeof(shown)),
			 normal);
		break;
	}
	return buf;
}

int options_load_argv(struct options *op)
{
	int result = OPTIONS_OK;

	op->layer = OPTIONS_LAYER_ARGV;
	for (size_t i = 0; i < op->nsettings && result == OPTIONS_OK; i++)
		result = apply(op, op->settings[i].row, op->settings[i].value);
	return result;
}

int options_check_argv(struct options *op)
{
	void *scratch = calloc(1, op->spec->target_size);
	struct options *trial = scratch ? options_new(op->spec, scratch, op->user,
						      op->err, op->errlen) : NULL;
	int result;

	if (!trial) {
		free(scratch);
		return options_fail(op, EXIT_CONFIG, "out of memory");
	}
	trial->settings = op->settings;
	trial->nsettings = op->nsettings;
	result = options_load_argv(trial);
	trial->settings = NULL;
	options_free(trial);
	options_release(op->spec, scratch);
	free(scratch);
	return result;
}

/* ---- the INI file ---- */

const char *options_normal_key(const char *name, char *buf, size_t len)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < len; i++)
		buf[i] = name[i] == '-' ? '_'
		       : (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] + 32)
		       : name[i];
	buf[i] = '\0';
	return buf;
}

static const char *name_at(const char *const *name, size_t i, size_t stride)
{
	return *(const char *const *)(const void *)((const char *)name + i * stride);
}

const char *options_nearest(const char *typed, bool dashes, const char *const *name,
			    size_t n, size_t stride)
{
	const char *best = NULL, *known;
	size_t best_distance = SIZE_MAX, d;
	char normal[64];

	options_normal_key(typed, normal, sizeof(normal));
	for (char *c = normal; dashes && *c; c++)
		*c = *c == '_' ? '-' : *c;
	for (size_t i = 0; i < n; i++)
		if ((known = name_at(name, i, stride)) && strcmp(normal, known) == 0)
			return known;
	for (size_t i = 0; i < n; i++) {
		if (!(known = name_at(name, i, stride)) || !value_is_near(normal, known))
			continue;
		d = value_edit_distance(normal, known, 3);
		if (d < best_distance) {
			best = known;
			best_distance = d;
		}
	}
	return best;
}

static void report_unknown_key(struct options *op, const char *name)
{
	const char *hint;
	char shown[64];

	/* A hint for the likely typo: "lock-key", "Lock_Key" or "lcok_key". */
	hint = options_nearest(name, false, &op->spec->rows[0].key, op->spec->nrows,
			       sizeof(op->spec->rows[0]));
	options_fail(op, EXIT_CONFIG, "%s:%d: unknown key %s%s%s%s", op->path,
		     op->line, value_quote(name, shown, sizeof(shown)),
		     hint ? " (did you mean " : "", hint ? hint : "", hint ? "?)" : "");
}

/* A further section's header and keys go to the caller, with the name
 * after the prefix. */
static int file_section_cb(void *user, int line, const char *name)
{
	struct options *op = user;

	op->line = line;
	return op->spec->sub_section(op->user, line, name + strlen(op->spec->sub_prefix))
	       == OPTIONS_OK ? 0 : -1;
}

static int file_key_cb(void *user, int line, const char *section, const char *key,
		       const char *value)
{
	struct options *op = user;
	const struct option_row *row = find_key(op->spec, key);

	op->line = line;
	if (strcmp(section, op->spec->section) != 0)
		return op->spec->sub_key(op->user, line,
					 section + strlen(op->spec->sub_prefix), key,
					 value) == OPTIONS_OK ? 0 : -1;
	if (!row) {
		report_unknown_key(op, key);
		return -1;
	}
	return apply(op, row, value) == OPTIONS_OK ? 0 : -1;
}

int options_load_file(struct options *op, const char *path)
{
	const struct inifile_spec ini = {
		.section = op->spec->section, .prefix = op->spec->sub_prefix,
		.prefix_shown = op->spec->sub_shown, .section_fn = file_section_cb,
		.key_fn = file_key_cb, .user = op,
	};
	int result;

	op->layer = OPTIONS_LAYER_FILE;
	free(op->path);
	if (!(op->path = strdup(path)))
		return options_fail(op, EXIT_CONFIG, "out of memory");
	value_path_shown(path, op->path, strlen(path) + 1);
	result = inifile_read(path, &ini, op->err, op->errlen);
	op->line = 0;
	if (result < 0) {
		op->failed = true;
		return EXIT_CONFIG;
	}
	return OPTIONS_OK;
}

/* ---- the command line ---- */

static const struct option_row *find_option(const struct options_spec *spec, int c)
{
	if (c >= OPTION_BASE && (size_t)(c - OPTION_BASE) < spec->nrows)
		return &spec->rows[c - OPTION_BASE];
	for (size_t i = 0; c > 0 && i < spec->nrows; i++)
		if (spec->rows[i].short_name == c)
			return &spec->rows[i];
	return NULL;
}

/* getopt_long takes unique prefixes, and says nothing of the others. */
static size_t list_candidates(const struct options_spec *spec, const char *word,
			      size_t len, char *buf, size_t buflen)
{
	size_t matches = 0, used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < spec->nrows && len > 2; i++) {
		const char *name = spec->rows[i].long_name;

		if (!name || strncmp(name, word + 2, len - 2) != 0)
			continue;
		used += (size_t)snprintf(buf + used, buflen - used, "%s--%s",
					 matches++ ? ", " : "", name);
		if (used >= buflen)
			used = buflen - 1;
	}
	return matches;
}

/* "--lock-kye": getopt_long only says '?'; the nearest long option is a
 * likelier hint than --help. */
static int unknown_long_option(struct options *op, const char *word, size_t len,
			       const char *shown)
{
	const char *hint = NULL;
	char typed[64];

	if (strncmp(word, "--", 2) == 0 && len - 2 < sizeof(typed)) {
		memcpy(typed, word + 2, len - 2);
		typed[len - 2] = '\0';
		hint = options_nearest(typed, true, &op->spec->rows[0].long_name,
				       op->spec->nrows, sizeof(op->spec->rows[0]));
	}
	if (hint)
		return options_fail(op, EXIT_USAGE, "unknown option %s (did you mean --%s?)",
				    shown, hint);
	return options_fail(op, EXIT_USAGE, "unknown option %s; see %s --help", shown,
			    op->spec->program);
}

static int bad_option(struct options *op, int c, const char *word)
{
	const struct option_row *row = find_option(op->spec, optopt);
	size_t len = strcspn(word, "=");
	char candidates[256], shown[72], letter = (char)optopt;

	if (c == ':')
		return options_fail(op, EXIT_USAGE, "--%s: missing value", row->long_name);
	if (row && strncmp(word, "--", 2) == 0)
		return options_fail(op, EXIT_USAGE, "--%s takes no value", row->long_name);
	if (optopt)
		return options_fail(op, EXIT_USAGE, "unknown option -%s; see %s --help",
				    value_printable(&letter, 1, shown, sizeof(shown)),
				    op->spec->program);
	value_printable(word, len > 64 ? 64 : len, shown, sizeof(shown));
	if (list_candidates(op->spec, word, len, candidates, sizeof(candidates)) > 1)
		return options_fail(op, EXIT_USAGE, "ambiguous option %s (%s)", shown,
				    candidates);
	return unknown_long_option(op, word, len, shown);
}

/* One option read: an action runs now, a flag is set now (it has no key,
 * so no layers), a setting waits for its layer. */
static int take_option(struct options *op, const struct option_row *row)
{
	const char *value = takes_value(row) ? optarg : NULL;

	switch (row->type) {
	case OPTION_ACTION:
		return op->spec->action(op->user, row->action, value);
	case OPTION_FLAG:
		*(bool *)((char *)op->target + row->offset) = true;
		return OPTIONS_OK;
	case OPTION_DURATION:
	case OPTION_INT:
	case OPTION_SIZE:
	case OPTION_BOOL:
	case OPTION_STRING:
	case OPTION_ENUM:
	case OPTION_LOCK_KEY:
	case OPTION_TEXT:
		break;
	}
	op->settings[op->nsettings++] = (struct setting){ row, value ? value : "true" };
	return OPTIONS_OK;
}

int options_read_argv(struct options *op, int argc, char **argv,
		      int *first_word, bool *after_dashdash)
{
	struct setting *grown;

	*first_word = argc;
	*after_dashdash = false;
	if (argc < 1)
		return OPTIONS_OK;
	if (!(grown = realloc(op->settings, (op->nsettings + (size_t)argc) *
					    sizeof(*grown))))
		return options_fail(op, EXIT_CONFIG, "out of memory");
	op->settings = grown;
	optind = 0; /* glibc: start over, forget any half-read cluster */
	opterr = 0;
	for (;;) {
		int before = optind > 0 ? optind : 1;
		int c = getopt_long(argc, argv, op->shortopts, op->longopts, NULL);
		int result;

		if (c == -1) {
			/* getopt skips a "--" silently; only here can it be told
			 * from a "--" that was some option's value. */
			*after_dashdash = optind == before + 1 &&
					  strcmp(argv[before], "--") == 0;
			*first_word = optind;
			return OPTIONS_OK;
		}
		if (c == '?' || c == ':')
			return bad_option(op, c, argv[optind - 1]);
		if ((result = take_option(op, find_option(op->spec, c))) != OPTIONS_OK)
			return result;
	}
}

/* getopt_long's tables, once per load: row i answers OPTION_BASE + i. */
static int build_getopt(struct options *op)
{
	const struct options_spec *spec = op->spec;
	size_t nlong = 0, nshort = 0;

	op->longopts = calloc(spec->nrows + 1, sizeof(*op->longopts));
	op->shortopts = calloc(2 * spec->nrows + 3, 1);
	if (!op->longopts || !op->shortopts)
		return -1;
	/* '+': the command's own options are not ours; ':': tell a missing
	 * value from an unknown option. */
	op->shortopts[nshort++] = '+';
	op->shortopts[nshort++] = ':';
	for (size_t i = 0; i < spec->nrows; i++) {
		const struct option_row *row = &spec->rows[i];

		if (!row->long_name)
			continue;
		op->longopts[nlong++] = (struct option){ row->long_name,
			takes_value(row) ? required_argument : no_argument, NULL,
			OPTION_BASE + (int)i };
		if (row->short_name) {
			op->shortopts[nshort++] = row->short_name;
			if (takes_value(row))
				op->shortopts[nshort++] = ':';
		}
	}
	return 0;
}

/* ---- the loader ---- */

struct options *options_new(const struct options_spec *spec, void *target,
			    void *user, char *err, size_t errlen)
{
	struct options *op = calloc(1, sizeof(*op));

	if (!op)
		return NULL;
	*op = (struct options){ .spec = spec, .target = target, .user = user,
				.err = err, .errlen = errlen };
	if (!(op->state = calloc(spec->nrows, sizeof(*op->state))) ||
	    build_getopt(op) < 0) {
		options_free(op);
		return NULL;
	}
	return op;
}

void options_free(struct options *op)
{
	if (!op)
		return;
	for (size_t i = 0; op->state && i < op->spec->nrows; i++)
		free(op->state[i].text);
	free(op->state);
	free(op->settings);
	free(op->longopts);
	free(op->shortopts);
	free(op->path);
	free(op);
}

const char *options_text(const struct options *op, const char *key)
{
	const struct option_row *row = find_key(op->spec, key);

	return row ? state_of(op, row)->text : NULL;
}

enum options_layer options_layer(const struct options *op, const char *key)
{
	const struct option_row *row = find_key(op->spec, key);

	return row ? state_of(op, row)->layer : OPTIONS_LAYER_NONE;
}

bool options_given(const struct options *op, const char *key)
{
	for (size_t i = 0; i < op->nsettings; i++)
		if (op->settings[i].row->key && strcmp(op->settings[i].row->key, key) == 0)
			return true;
	return false;
}

const char *options_origin(const struct options *op, const char *key,
			   char *buf, size_t len)
{
	const struct option_row *row = find_key(op->spec, key);

	if (!row)
		snprintf(buf, len, "%s", key);
	else
		describe(op, row, state_of(op, row)->layer, state_of(op, row)->line,
			 buf, len);
	return buf;
}

const char *options_path(const struct options *op)
{
	return op->path ? op->path : "";
}

void options_release(const struct options_spec *spec, void *target)
{
	for (size_t i = 0; i < spec->nrows; i++) {
		char **field = (char **)((char *)target + spec->rows[i].offset);

		if (spec->rows[i].type == OPTION_STRING) {
			free(*field);
			*field = NULL;
		}
	}
}

/* ---- --help ---- */

/* Help text from the column, its further lines under "key:". */
static void print_help(FILE *out, const char *help)
{
	size_t len = strcspn(help, "\n");

	fprintf(out, "%.*s\n", (int)len, help);
	while (help[len] == '\n') {
		help += len + 1;
		len = strcspn(help, "\n");
		fprintf(out, "%*s%.*s\n", HELP_COLUMN + 2, "", (int)len, help);
	}
}

static void print_option_row(const struct option_row *row, FILE *out)
{
	const char *shown = row->default_shown ? row->default_shown : row->default_value;
	char option[64];

	snprintf(option, sizeof(option), "%c%c%c --%s%s%s",
		 row->short_name ? '-' : ' ', row->short_name ? row->short_name : ' ',
		 row->short_name ? ',' : ' ', row->long_name,
		 takes_value(row) ? "=" : "", takes_value(row) ? row->metavar : "");
	/* A long option gets a line of its own, its help under the others. */
	if (strlen(option) > HELP_COLUMN - 3)
		fprintf(out, "  %s\n%*s", option, HELP_COLUMN, "");
	else
		fprintf(out, "  %-*s", HELP_COLUMN - 2, option);
	print_help(out, row->help);
	if (row->key)
		fprintf(out, "%*skey: %s, default: %s\n", HELP_COLUMN + 2, "", row->key,
			shown ? shown : "none");
	else if (row->variable)
		fprintf(out, "%*senvironment: %s, default: %s\n", HELP_COLUMN + 2, "",
			row->variable, shown ? shown : "none");
	else if (shown)
		fprintf(out, "%*sdefault: %s\n", HELP_COLUMN + 2, "", shown);
}

void options_usage(const struct options_spec *spec, FILE *out)
{
	for (size_t i = 0; i < spec->nrows; i++)
		if (spec->rows[i].long_name)
			print_option_row(&spec->rows[i], out);
	fputs("\nIn the file and the environment only:\n", out);
	for (size_t i = 0; i < spec->nrows; i++) {
		const struct option_row *row = &spec->rows[i];
		char setting[64];

		if (!row->key || row->long_name)
			continue;
		snprintf(setting, sizeof(setting), "%s = %s", row->key, row->metavar);
		fprintf(out, "  %-*s", HELP_COLUMN - 2, setting);
		print_help(out, row->help);
	}
}
