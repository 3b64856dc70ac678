/* config.c: one table of settings drives defaults, the INI file, PGLEADER_*
 * variables, getopt_long and --help, so none of them can drift apart. */
#include "config.h"
#include "log.h" /* enum log_level only: config must not log */
#include "value.h"

#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* application_name is "pgleader/<node_id>" and PostgreSQL keeps 63 bytes. */
#define NODE_ID_MAX 54
#define USAGE "pgleader [OPTION]... [--] COMMAND [ARG]..."
#define HELP_COLUMN 30
#define WHERE_MAX 600 /* "FILE:LINE: key" */

enum param_type {
	T_DURATION,
	T_INT,
	T_BOOL,
	T_STRING,
	T_ENUM,
	T_LOCK_KEY,
	T_COMMAND, /* kept as one line, split once every layer is known */
	T_FLAG,    /* command line only, no value: sets a bool */
	T_ACTION,  /* command line only: handled while argv is read */
};

enum action { ACT_NONE, ACT_CONFIG, ACT_VERBOSE, ACT_QUIET, ACT_HELP, ACT_VERSION };

struct choice {
	const char *name;
	int value;
};

struct param {
	const char *key;           /* INI key, PGLEADER_<KEY>; NULL: argv only */
	const char *long_name;     /* NULL: file and environment only */
	char short_name;
	enum param_type type;
	size_t offset;             /* field of struct config */
	const char *default_value; /* parsed by the same setter as any value */
	const char *default_shown; /* for --help, when it is not default_value */
	const char *metavar;
	const char *help;
	int64_t min, max;          /* T_INT; T_DURATION uses min only */
	bool none_allowed;         /* T_DURATION: "none" stands for -1 */
	const struct choice *choices;
	int (*check)(const char *value, char *why, size_t whylen);
	enum action action;
};

static int check_lock_name(const char *value, char *why, size_t whylen);
static int check_node_id(const char *value, char *why, size_t whylen);

static const struct choice acquire_modes[] = {
	{ "wait", ACQUIRE_WAIT }, { "poll", ACQUIRE_POLL }, { NULL, 0 },
};
static const struct choice restart_policies[] = {
	{ "no", RESTART_NO }, { "on-failure", RESTART_ON_FAILURE },
	{ "always", RESTART_ALWAYS }, { NULL, 0 },
};
static const struct choice log_levels[] = {
	{ "error", LOG_LEVEL_ERROR }, { "warning", LOG_LEVEL_WARNING },
	{ "notice", LOG_LEVEL_NOTICE }, { "info", LOG_LEVEL_INFO },
	{ "debug", LOG_LEVEL_DEBUG }, { NULL, 0 },
};

#define FIELD(name) offsetof(struct config, name)

/* The order of rows is the order of --help. */
static const struct param params[] = {
	{ .long_name = "config", .short_name = 'c', .type = T_ACTION,
	  .action = ACT_CONFIG, .metavar = "FILE",
	  .help = "read settings from the INI file FILE" },
	{ .key = "dsn", .long_name = "dsn", .short_name = 'd', .type = T_STRING,
	  .offset = FIELD(dsn), .default_shown = "libpq environment",
	  .metavar = "CONNINFO", .help = "PostgreSQL connection string or URI" },
	{ .key = "lock_key", .long_name = "lock-key", .short_name = 'k',
	  .type = T_LOCK_KEY, .offset = FIELD(lock_key),
	  .default_value = "0x50474c4541444552", .metavar = "N",
	  .help = "advisory lock key: signed 64-bit or 0x hex" },
	{ .key = "lock_name", .long_name = "lock-name", .short_name = 'n',
	  .type = T_STRING, .offset = FIELD(lock_name), .default_shown = "none",
	  .metavar = "NAME", .help = "lock key = hashtextextended(NAME, 0)",
	  .check = check_lock_name },
	{ .key = "acquire", .long_name = "acquire", .type = T_ENUM,
	  .offset = FIELD(acquire), .default_value = "wait", .metavar = "MODE",
	  .help = "standby: wait (lock queue) or poll",
	  .choices = acquire_modes },
	{ .key = "retry_interval", .long_name = "retry-interval",
	  .type = T_DURATION, .offset = FIELD(retry_interval_ms),
	  .default_value = "5s", .metavar = "DUR",
	  .help = "standby: lock wait or poll period", .min = 1 },
	{ .key = "ping_interval", .long_name = "ping-interval",
	  .type = T_DURATION, .offset = FIELD(ping_interval_ms),
	  .default_value = "1s", .metavar = "DUR",
	  .help = "leader: time between pings", .min = 1 },
	{ .key = "ping_timeout", .long_name = "ping-timeout", .type = T_DURATION,
	  .offset = FIELD(ping_timeout_ms), .default_value = "2s",
	  .metavar = "DUR", .help = "leader: time a ping reply may take",
	  .min = 1 },
	{ .key = "ping_failures", .long_name = "ping-failures", .type = T_INT,
	  .offset = FIELD(ping_failures), .default_value = "3", .metavar = "N",
	  .help = "failed pings in a row that lose the lease",
	  .min = 1, .max = 1000 },
	{ .key = "server_lease", .long_name = "server-lease", .type = T_DURATION,
	  .offset = FIELD(server_lease_ms), .default_value = "20s",
	  .metavar = "DUR",
	  .help = "server ends a silent leader's session (0: off)" },
	{ .key = "grace_period", .long_name = "grace-period", .type = T_DURATION,
	  .offset = FIELD(grace_period_ms), .default_value = "8s",
	  .metavar = "DUR", .help = "time from SIGTERM to SIGKILL for COMMAND" },
	{ .key = "takeover_delay", .long_name = "takeover-delay",
	  .type = T_DURATION, .offset = FIELD(takeover_delay_ms),
	  .default_value = "0", .metavar = "DUR",
	  .help = "leader: wait this long before starting COMMAND" },
	{ .key = "restart", .long_name = "restart", .type = T_ENUM,
	  .offset = FIELD(restart), .default_value = "no", .metavar = "POLICY",
	  .help = "when COMMAND exits: no, on-failure or always",
	  .choices = restart_policies },
	{ .long_name = "nonblock", .type = T_FLAG, .offset = FIELD(nonblock),
	  .default_shown = "off", .help = "give up at once when another node leads" },
	{ .key = "wait_timeout", .long_name = "wait-timeout", .type = T_DURATION,
	  .offset = FIELD(wait_timeout_ms), .default_value = "none",
	  .metavar = "DUR", .help = "give up after waiting this long as standby",
	  .none_allowed = true },
	{ .key = "conflict_exit_code", .long_name = "conflict-exit-code",
	  .type = T_INT, .offset = FIELD(conflict_exit_code),
	  .default_value = "75", .metavar = "N",
	  .help = "exit code when pgleader gives up waiting",
	  .min = 0, .max = 255 },
	{ .key = "shell", .long_name = "shell", .type = T_BOOL,
	  .offset = FIELD(shell), .default_value = "off",
	  .help = "run COMMAND with /bin/sh -c" },
	{ .key = "node_id", .long_name = "node-id", .type = T_STRING,
	  .offset = FIELD(node_id), .default_shown = "host name",
	  .metavar = "NAME", .help = "this node's name in pg_stat_activity",
	  .check = check_node_id },
	{ .key = "log_level", .long_name = "log-level", .type = T_ENUM,
	  .offset = FIELD(log_level), .default_value = "info",
	  .metavar = "LEVEL", .help = "error, warning, notice, info or debug",
	  .choices = log_levels },
	{ .long_name = "verbose", .short_name = 'v', .type = T_ACTION,
	  .action = ACT_VERBOSE, .help = "log one level more (repeatable)" },
	{ .long_name = "quiet", .short_name = 'q', .type = T_ACTION,
	  .action = ACT_QUIET, .help = "log one level less (repeatable)" },
	{ .long_name = "json", .type = T_FLAG, .offset = FIELD(json),
	  .help = "status: print JSON" },
	{ .long_name = "help", .short_name = 'h', .type = T_ACTION,
	  .action = ACT_HELP, .help = "print this help and exit" },
	{ .long_name = "version", .short_name = 'V', .type = T_ACTION,
	  .action = ACT_VERSION, .help = "print the version and exit" },
	{ .key = "command", .type = T_COMMAND, .metavar = "COMMAND [ARG]...",
	  .help = "COMMAND as one line, split like a shell" },
};

#define NPARAMS (sizeof(params) / sizeof(params[0]))

enum layer { LAYER_NONE, LAYER_DEFAULTS, LAYER_FILE, LAYER_ENV, LAYER_ARGV };

struct argv_setting {
	const struct param *param;
	const char *value;
};

/* Everything config_load needs between layers; cfg gets only the results. */
struct loader {
	struct config *cfg;
	char *err;
	size_t errlen;
	bool failed;
	enum layer layer;  /* being applied: decides message and exit code */
	const char *path;  /* LAYER_FILE position */
	int line;
	/* lock_key / lock_name: which layer set each, and on which line */
	enum layer lock_layer[2];
	int lock_line[2];
	char *command_line;        /* the 'command' key, not yet split */
	char command_origin[WHERE_MAX];  /* where it came from, for split errors */
	struct argv_setting *settings;
	size_t nsettings;
	char **words;              /* the command from argv, borrowed */
	int nwords;
	int verbosity;             /* -v minus -q */
	const char *config_path;   /* -c */
};

__attribute__((format(printf, 3, 4)))
static enum config_result fail(struct loader *ld, enum config_result code,
			       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ld->err, ld->errlen, fmt, ap);
	va_end(ap);
	ld->failed = true;
	return code;
}

__attribute__((format(printf, 3, 4)))
static int why_fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

static int check_lock_name(const char *value, char *why, size_t whylen)
{
	if (!*value)
		return why_fail(why, whylen, "must not be empty");
	return 0;
}

static int check_node_id(const char *value, char *why, size_t whylen)
{
	char shown[64];
	size_t len = strlen(value);

	if (len == 0 || len > NODE_ID_MAX)
		return why_fail(why, whylen, "%s must have 1 to %d characters",
				value_quote(value, shown, sizeof(shown)), NODE_ID_MAX);
	for (const char *p = value; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return why_fail(why, whylen,
					"%s may hold only printable ASCII without spaces",
					value_quote(value, shown, sizeof(shown)));
	return 0;
}

static int set_string(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -1;
	free(*field);
	*field = copy;
	return 0;
}

/* Parses value for p into the config (or the loader, for 'command'); on
 * error says why, without saying where: the caller knows the layer. */
static int set_value(struct loader *ld, const struct param *p,
		     const char *value, char *why, size_t whylen)
{
	void *field = (char *)ld->cfg + p->offset;
	char shown[64];
	int64_t number;

	switch (p->type) {
	case T_DURATION:
		if (p->none_allowed && strcmp(value, "none") == 0)
			number = -1;
		else if (value_parse_duration(value, &number) < 0)
			return why_fail(why, whylen,
					"invalid duration %s (examples: 250ms, 5s, 2m)",
					value_quote(value, shown, sizeof(shown)));
		else if (number < p->min)
			return why_fail(why, whylen, "must be greater than 0");
		*(int64_t *)field = number;
		return 0;
	case T_INT:
		if (value_parse_int(value, &number) < 0)
			return why_fail(why, whylen, "invalid number %s",
					value_quote(value, shown, sizeof(shown)));
		if (number < p->min || number > p->max)
			return why_fail(why, whylen, "%s is out of range (%lld to %lld)",
					value, (long long)p->min, (long long)p->max);
		*(int *)field = (int)number;
		return 0;
	case T_BOOL:
		if (value_parse_bool(value, (bool *)field) < 0)
			return why_fail(why, whylen,
					"invalid boolean %s (true/false, yes/no, on/off, 1/0)",
					value_quote(value, shown, sizeof(shown)));
		return 0;
	case T_ENUM: {
		char names[128] = "";

		for (const struct choice *c = p->choices; c->name; c++) {
			if (strcmp(value, c->name) == 0) {
				*(int *)field = c->value; /* enums are ints here */
				return 0;
			}
			strcat(strcat(names, c == p->choices ? "" : ", "), c->name);
		}
		return why_fail(why, whylen, "invalid value %s (expected %s)",
				value_quote(value, shown, sizeof(shown)), names);
	}
	case T_LOCK_KEY:
		if (value_parse_lock_key(value, &number) < 0)
			return why_fail(why, whylen,
					"invalid lock key %s (signed 64-bit decimal, or 0x and 1 to 16 hex digits)",
					value_quote(value, shown, sizeof(shown)));
		*(int64_t *)field = number;
		return 0;
	case T_STRING:
		if (p->check && p->check(value, why, whylen) < 0)
			return -1;
		if (!*value) { /* "dsn =": back to the libpq environment */
			free(*(char **)field);
			*(char **)field = NULL;
			return 0;
		}
		if (set_string(field, value) < 0)
			return why_fail(why, whylen, "out of memory");
		return 0;
	case T_COMMAND:
		if (set_string(&ld->command_line, value) < 0)
			return why_fail(why, whylen, "out of memory");
		return 0;
	case T_FLAG:
		*(bool *)field = true;
		return 0;
	case T_ACTION:
		break;
	}
	return 0;
}

/* How messages name a setting: file:line and key, variable, or option. */
static void describe_source(const struct loader *ld, const struct param *p,
			    char *buf, size_t len)
{
	switch (ld->layer) {
	case LAYER_FILE:
		snprintf(buf, len, "%s:%d: %s", ld->path, ld->line, p->key);
		break;
	case LAYER_ENV: {
		size_t n = (size_t)snprintf(buf, len, "PGLEADER_");

		for (const char *k = p->key; *k && n + 1 < len; k++)
			buf[n++] = (*k >= 'a' && *k <= 'z') ? (char)(*k - 32) : *k;
		buf[n] = '\0';
		break;
	}
	case LAYER_ARGV:
		snprintf(buf, len, "--%s", p->long_name);
		break;
	default:
		snprintf(buf, len, "default %s", p->key);
	}
}

static const struct param *find_key(const char *key)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (params[i].key && strcmp(params[i].key, key) == 0)
			return &params[i];
	return NULL;
}

static enum config_result apply(struct loader *ld, const struct param *p,
				const char *value)
{
	enum config_result code = ld->layer == LAYER_ARGV ? CONFIG_USAGE
							   : CONFIG_INVALID;
	bool is_key = p->offset == FIELD(lock_key) && p->type == T_LOCK_KEY;
	bool is_name = p->offset == FIELD(lock_name) && p->type == T_STRING;
	char where[WHERE_MAX], why[256];

	describe_source(ld, p, where, sizeof(where));
	/* lock_key and lock_name name the same lock two ways: one layer
	 * giving both is a mistake, a higher layer giving either overrides. */
	if (is_key || is_name) {
		int other = is_key ? 1 : 0;

		if (ld->lock_layer[other] == ld->layer) {
			char conflict[64];

			if (ld->layer == LAYER_FILE)
				snprintf(conflict, sizeof(conflict), "%s on line %d",
					 is_key ? "lock_name" : "lock_key",
					 ld->lock_line[other]);
			else
				describe_source(ld, find_key(is_key ? "lock_name" : "lock_key"),
						conflict, sizeof(conflict));
			return fail(ld, code, "%s: conflicts with %s; set only one of them",
				    where, conflict);
		}
	}
	if (set_value(ld, p, value, why, sizeof(why)) < 0)
		return fail(ld, code, "%s: %s", where, why);
	if (is_key || is_name) {
		int self = is_key ? 0 : 1;

		ld->lock_layer[self] = ld->layer;
		ld->lock_line[self] = ld->line;
		ld->lock_layer[!self] = LAYER_NONE;
		if (is_key) {
			free(ld->cfg->lock_name);
			ld->cfg->lock_name = NULL;
		} else {
			ld->cfg->lock_key = 0;
		}
	}
	if (p->type == T_COMMAND)
		snprintf(ld->command_origin, sizeof(ld->command_origin), "%s", where);
	return CONFIG_OK;
}

struct file_reader {
	struct loader *ld;
	FILE *fp;
	char *line;
	size_t cap;
};

/* inih's own reader would cut a long line in two and parse the rest as a
 * new line; this one refuses it, counts lines for messages and checks
 * section names, which inih passes on only with the keys under them. */
static char *read_line_cb(char *buf, int size, void *stream)
{
	struct file_reader *r = stream;
	struct loader *ld = r->ld;
	ssize_t n;
	char *start;

	if (ld->failed)
		return NULL;
	errno = 0;
	if ((n = getline(&r->line, &r->cap, r->fp)) < 0) {
		if (ferror(r->fp))
			fail(ld, CONFIG_INVALID, "%s: cannot read: %s", ld->path,
			     strerror(errno ? errno : EIO));
		return NULL;
	}
	ld->line++;
	if (n > 0 && r->line[n - 1] == '\n')
		r->line[--n] = '\0';
	if (n > 0 && r->line[n - 1] == '\r')
		r->line[--n] = '\0';
	if (strlen(r->line) != (size_t)n) {
		fail(ld, CONFIG_INVALID, "%s:%d: line holds a NUL byte", ld->path,
		     ld->line);
		return NULL;
	}
	if (n > size - 1) {
		fail(ld, CONFIG_INVALID, "%s:%d: line is longer than %d characters",
		     ld->path, ld->line, size - 1);
		return NULL;
	}
	start = r->line;
	if (ld->line == 1 && strncmp(start, "\xef\xbb\xbf", 3) == 0)
		start += 3;
	/* Indented lines are plain lines: inih would glue them to the value
	 * above as a continuation, which nobody expects in a daemon's file. */
	start += strspn(start, " \t");
	if (*start == '[') {
		char *close = strchr(start, ']');

		if (close) {
			char *after = close + 1 + strspn(close + 1, " \t");

			*close = '\0';
			if (strcmp(start + 1, "pgleader") != 0) {
				fail(ld, CONFIG_INVALID,
				     "%s:%d: unknown section [%.40s] (expected [pgleader])",
				     ld->path, ld->line, start + 1);
				return NULL;
			}
			if (*after && *after != ';' && *after != '#') {
				fail(ld, CONFIG_INVALID,
				     "%s:%d: unexpected text after [pgleader]",
				     ld->path, ld->line);
				return NULL;
			}
			*close = ']';
		}
	}
	memcpy(buf, start, strlen(start) + 1);
	return buf;
}

static int ini_handler_cb(void *user, const char *section, const char *name,
			  const char *value)
{
	struct loader *ld = user;
	const struct param *p;
	char shown[64];

	if (ld->failed)
		return 0;
	if (strcmp(section, "pgleader") != 0) {
		fail(ld, CONFIG_INVALID, "%s:%d: key %s is outside the [pgleader] section",
		     ld->path, ld->line, value_quote(name, shown, sizeof(shown)));
		return 0;
	}
	if (!(p = find_key(name))) {
		char normal[64];
		size_t i;

		/* A hint for the likely typo: "lock-key" or "Lock_Key". */
		for (i = 0; name[i] && i + 1 < sizeof(normal); i++)
			normal[i] = name[i] == '-' ? '_'
				  : (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] + 32)
				  : name[i];
		normal[i] = '\0';
		p = find_key(normal);
		fail(ld, CONFIG_INVALID, "%s:%d: unknown key %s%s%s%s", ld->path,
		     ld->line, value_quote(name, shown, sizeof(shown)),
		     p ? " (did you mean " : "", p ? p->key : "", p ? "?)" : "");
		return 0;
	}
	return apply(ld, p, value) == CONFIG_OK;
}

static enum config_result load_file(struct loader *ld)
{
	struct file_reader reader = { .ld = ld };
	int first_error;

	ld->layer = LAYER_FILE;
	ld->path = ld->cfg->config_file;
	if (!(reader.fp = fopen(ld->path, "r")))
		return fail(ld, CONFIG_INVALID, "%s: cannot open: %s", ld->path,
			    strerror(errno));
	first_error = ini_parse_stream(read_line_cb, &reader, ini_handler_cb, ld);
	fclose(reader.fp);
	free(reader.line);
	/* inih goes on after its own syntax errors, and reports only the
	 * line; ours stop the reader, so an earlier inih line came first. */
	if (first_error > 0 && (!ld->failed || first_error < ld->line))
		return fail(ld, CONFIG_INVALID,
			    "%s:%d: syntax error (expected key = value or [pgleader])",
			    ld->path, first_error);
	if (first_error < 0 && !ld->failed)
		return fail(ld, CONFIG_INVALID, "%s: out of memory", ld->path);
	return ld->failed ? CONFIG_INVALID : CONFIG_OK;
}

static enum config_result load_environment(struct loader *ld)
{
	ld->layer = LAYER_ENV;
	for (size_t i = 0; i < NPARAMS; i++) {
		char name[64];
		const char *value;
		enum config_result result;

		if (!params[i].key)
			continue;
		describe_source(ld, &params[i], name, sizeof(name));
		/* An empty variable is unset: what "${VAR}" in a unit gives. */
		if (!(value = getenv(name)) || !*value)
			continue;
		if ((result = apply(ld, &params[i], value)) != CONFIG_OK)
			return result;
	}
	return CONFIG_OK;
}

static bool takes_value(const struct param *p)
{
	return p->type != T_FLAG && p->type != T_BOOL &&
	       (p->type != T_ACTION || p->action == ACT_CONFIG);
}

static const struct param *find_option(int c)
{
	if (c >= 256 && (size_t)(c - 256) < NPARAMS)
		return &params[c - 256];
	for (size_t i = 0; c > 0 && i < NPARAMS; i++)
		if (params[i].short_name == c)
			return &params[i];
	return NULL;
}

static enum config_result bad_option(struct loader *ld, int c, const char *word)
{
	const struct param *p = find_option(optopt);
	size_t len = strcspn(word, "="), matches = 0;
	char candidates[256] = "";

	if (c == ':')
		return fail(ld, CONFIG_USAGE, "--%s: missing value", p->long_name);
	if (p && strncmp(word, "--", 2) == 0)
		return fail(ld, CONFIG_USAGE, "--%s takes no value", p->long_name);
	if (optopt)
		return fail(ld, CONFIG_USAGE, "unknown option -%c; see pgleader --help",
			    optopt);
	/* getopt_long takes unique prefixes, and says nothing of the others. */
	for (size_t i = 0; i < NPARAMS && len > 2; i++) {
		if (params[i].long_name &&
		    strncmp(params[i].long_name, word + 2, len - 2) == 0) {
			size_t used = strlen(candidates);

			snprintf(candidates + used, sizeof(candidates) - used,
				 "%s--%s", matches++ ? ", " : "", params[i].long_name);
		}
	}
	if (matches > 1)
		return fail(ld, CONFIG_USAGE, "ambiguous option %.*s (%s)",
			    (int)(len > 64 ? 64 : len), word, candidates);
	return fail(ld, CONFIG_USAGE, "unknown option %.*s; see pgleader --help",
		    (int)(len > 64 ? 64 : len), word);
}

/* Reads the options of one run of argv into ld->settings without applying
 * them: they are the top layer, applied after the file and environment.
 * Stops at the first word that is not an option; *first_word tells where,
 * *after_dashdash whether a "--" came before it. */
static enum config_result read_options(struct loader *ld, int argc, char **argv,
				       int *first_word, bool *after_dashdash)
{
	struct option longopts[NPARAMS + 1];
	/* '+': the command's own options are not ours; ':': tell a missing
	 * value from an unknown option. */
	char shortopts[2 + 2 * NPARAMS + 1] = "+:";
	size_t nlong = 0, nshort = 2;

	for (size_t i = 0; i < NPARAMS; i++) {
		const struct param *p = &params[i];

		if (!p->long_name)
			continue;
		longopts[nlong++] = (struct option){ p->long_name,
			takes_value(p) ? required_argument : no_argument, NULL,
			256 + (int)i };
		if (p->short_name) {
			shortopts[nshort++] = p->short_name;
			if (takes_value(p))
				shortopts[nshort++] = ':';
		}
	}
	longopts[nlong] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[nshort] = '\0';

	*first_word = argc;
	*after_dashdash = false;
	if (argc < 1)
		return CONFIG_OK;
	optind = 0; /* glibc: start over, forget any half-read cluster */
	opterr = 0;
	for (;;) {
		int before = optind > 0 ? optind : 1;
		int c = getopt_long(argc, argv, shortopts, longopts, NULL);
		const struct param *p;

		if (c == -1) {
			/* getopt skips a "--" silently; only here can it be told
			 * from a "--" that was some option's value. */
			*after_dashdash = optind == before + 1 &&
					  strcmp(argv[before], "--") == 0;
			*first_word = optind;
			return CONFIG_OK;
		}
		if (c == '?' || c == ':')
			return bad_option(ld, c, argv[optind - 1]);
		p = find_option(c);
		switch (p->type == T_ACTION ? p->action : ACT_NONE) {
		case ACT_HELP:
			return CONFIG_HELP;
		case ACT_VERSION:
			return CONFIG_VERSION;
		case ACT_VERBOSE:
			ld->verbosity++;
			break;
		case ACT_QUIET:
			ld->verbosity--;
			break;
		case ACT_CONFIG:
			ld->config_path = optarg;
			break;
		case ACT_NONE:
			if (p->type == T_FLAG) { /* no key, so no layers */
				*(bool *)((char *)ld->cfg + p->offset) = true;
				break;
			}
			ld->settings[ld->nsettings++] = (struct argv_setting){
				p, takes_value(p) ? optarg : "true" };
		}
	}
}

/* Tries the command line's values on a scratch config, so that a mistake
 * there is a usage error (64) whatever the file or environment holds. */
static enum config_result check_settings(struct loader *ld)
{
	struct config scratch = { 0 };
	struct loader trial = { .cfg = &scratch, .err = ld->err,
				.errlen = ld->errlen, .layer = LAYER_ARGV };
	enum config_result result = CONFIG_OK;

	for (size_t i = 0; i < ld->nsettings && result == CONFIG_OK; i++)
		result = apply(&trial, ld->settings[i].param, ld->settings[i].value);
	config_free(&scratch);
	return result;
}

static enum config_result read_argv(struct loader *ld, int argc, char **argv)
{
	enum config_result result;
	int first_word;
	bool after_dashdash;

	if (argc < 1)
		return CONFIG_OK;
	if (!(ld->settings = calloc((size_t)argc, sizeof(*ld->settings))))
		return fail(ld, CONFIG_INVALID, "out of memory");
	if ((result = read_options(ld, argc, argv, &first_word,
				   &after_dashdash)) != CONFIG_OK)
		return result;
	ld->words = argv + first_word;
	ld->nwords = argc - first_word;
	if (ld->nwords > 0 && !after_dashdash && strcmp(ld->words[0], "status") == 0) {
		char shown[64];

		ld->cfg->status_mode = true;
		/* "status" plays argv[0] for the options after it. */
		if ((result = read_options(ld, ld->nwords, ld->words, &first_word,
					   &after_dashdash)) != CONFIG_OK)
			return result;
		if (first_word < ld->nwords)
			return fail(ld, CONFIG_USAGE, "status takes no arguments (got %s)",
				    value_quote(ld->words[first_word], shown, sizeof(shown)));
		ld->nwords = 0;
	}
	if (ld->cfg->json && !ld->cfg->status_mode)
		return fail(ld, CONFIG_USAGE, "--json is only valid with 'pgleader status'");
	return check_settings(ld);
}

/* Cross-field rules and what can only be decided once all layers are in. */
/* sh -c takes one string: the words joined by spaces, as a NULL-terminated
 * argv of one; NULL when out of memory. */
static char **shell_script(char *const *words, int nwords)
{
	char **argv = calloc(2, sizeof(char *));
	size_t len = 1;

	for (int i = 0; i < nwords; i++)
		len += strlen(words[i]) + 1;
	if (!argv || !(argv[0] = calloc(len, 1))) {
		free(argv);
		return NULL;
	}
	for (int i = 0; i < nwords; i++) {
		if (i)
			strcat(argv[0], " ");
		strcat(argv[0], words[i]);
	}
	return argv;
}

static enum config_result finish(struct loader *ld)
{
	struct config *cfg = ld->cfg;
	int level = cfg->log_level + ld->verbosity;

	cfg->log_level = level < LOG_LEVEL_ERROR ? LOG_LEVEL_ERROR
		       : level > LOG_LEVEL_DEBUG ? LOG_LEVEL_DEBUG : level;

	if (cfg->server_lease_ms > 0) {
		int64_t needed = cfg->ping_interval_ms * cfg->ping_failures +
				 cfg->ping_timeout_ms + cfg->grace_period_ms;

		if (needed >= cfg->server_lease_ms) {
			char lease[32], interval[32], timeout[32], grace[32], sum[32];

			return fail(ld, CONFIG_INVALID,
				    "server_lease %s must be greater than ping_interval %s * ping_failures %d + ping_timeout %s + grace_period %s = %s",
				    value_format_duration(cfg->server_lease_ms, lease, sizeof(lease)),
				    value_format_duration(cfg->ping_interval_ms, interval, sizeof(interval)),
				    cfg->ping_failures,
				    value_format_duration(cfg->ping_timeout_ms, timeout, sizeof(timeout)),
				    value_format_duration(cfg->grace_period_ms, grace, sizeof(grace)),
				    value_format_duration(needed, sum, sizeof(sum)));
		}
	}

	if (!cfg->node_id) {
		char host[256] = "";

		if (gethostname(host, sizeof(host) - 1) < 0 || !*host)
			snprintf(host, sizeof(host), "localhost");
		host[NODE_ID_MAX] = '\0';
		if (set_string(&cfg->node_id, host) < 0)
			return fail(ld, CONFIG_INVALID, "out of memory");
	}

	if (cfg->status_mode)
		return CONFIG_OK;
	if (ld->nwords > 0 && cfg->shell) {
		/* --shell -- 'a | b' and --shell -- a '|' b both mean the
		 * script "a | b". */
		if (!(cfg->command = shell_script(ld->words, ld->nwords)))
			return fail(ld, CONFIG_INVALID, "out of memory");
	} else if (ld->nwords > 0) {
		/* The command line's command replaces the file's. */
		if (!(cfg->command = calloc((size_t)ld->nwords + 1, sizeof(char *))))
			return fail(ld, CONFIG_INVALID, "out of memory");
		for (int i = 0; i < ld->nwords; i++)
			if (!(cfg->command[i] = strdup(ld->words[i])))
				return fail(ld, CONFIG_INVALID, "out of memory");
	} else if (ld->command_line) {
		char why[128];

		/* With --shell the line goes to sh -c whole: splitting it here
		 * would undo the quoting the shell needs. */
		if (cfg->shell && *ld->command_line) {
			if (!(cfg->command = shell_script(&ld->command_line, 1)))
				return fail(ld, CONFIG_INVALID, "out of memory");
		} else if (!(cfg->command = value_split_command(ld->command_line,
								why, sizeof(why)))) {
			return fail(ld, CONFIG_INVALID, "%s: %s", ld->command_origin, why);
		}
	} else if (cfg->config_file) {
		return fail(ld, CONFIG_INVALID, "%s: no command given and no 'command' key",
			    cfg->config_file);
	} else {
		return fail(ld, CONFIG_USAGE, "no command given (usage: " USAGE ")");
	}
	return CONFIG_OK;
}

static enum config_result load(struct loader *ld, int argc, char **argv)
{
	enum config_result result;
	const char *path;

	if ((result = read_argv(ld, argc, argv)) != CONFIG_OK)
		return result;

	ld->layer = LAYER_DEFAULTS;
	for (size_t i = 0; i < NPARAMS; i++)
		if (params[i].key && params[i].default_value &&
		    (result = apply(ld, &params[i], params[i].default_value)) != CONFIG_OK)
			return result;

	path = ld->config_path ? ld->config_path : getenv("PGLEADER_CONFIG");
	if (path && *path) {
		if (set_string(&ld->cfg->config_file, path) < 0)
			return fail(ld, CONFIG_INVALID, "out of memory");
		if ((result = load_file(ld)) != CONFIG_OK)
			return result;
	}
	if ((result = load_environment(ld)) != CONFIG_OK)
		return result;

	ld->layer = LAYER_ARGV;
	for (size_t i = 0; i < ld->nsettings; i++)
		if ((result = apply(ld, ld->settings[i].param,
				    ld->settings[i].value)) != CONFIG_OK)
			return result;
	return finish(ld);
}

enum config_result config_load(struct config *cfg, int argc, char **argv,
			       char *err, size_t errlen)
{
	struct loader ld = { .cfg = cfg, .err = err, .errlen = errlen };
	enum config_result result;

	memset(cfg, 0, sizeof(*cfg));
	if (errlen > 0)
		err[0] = '\0';
	result = load(&ld, argc, argv);
	free(ld.settings);
	free(ld.command_line);
	/* A caller that stops here owes nothing: only CONFIG_OK keeps cfg. */
	if (result != CONFIG_OK)
		config_free(cfg);
	return result;
}

void config_free(struct config *cfg)
{
	free(cfg->config_file);
	free(cfg->dsn);
	free(cfg->lock_name);
	free(cfg->node_id);
	free(cfg->metrics_addr);
	value_free_words(cfg->command);
	memset(cfg, 0, sizeof(*cfg));
}

void config_usage(FILE *out)
{
	fputs("Usage: " USAGE "\n"
	      "       pgleader status [OPTION]... [--json]\n"
	      "       pgleader --help | --version\n"
	      "\n"
	      "Runs COMMAND on exactly one machine of a fleet at a time: the one whose\n"
	      "pgleader holds a PostgreSQL advisory lock.\n"
	      "\n"
	      "Options (key: the setting's name in the file):\n", out);
	for (size_t i = 0; i < NPARAMS; i++) {
		const struct param *p = &params[i];
		char option[64];
		const char *shown;

		if (!p->long_name)
			continue;
		snprintf(option, sizeof(option), "%c%c%c --%s%s%s",
			 p->short_name ? '-' : ' ', p->short_name ? p->short_name : ' ',
			 p->short_name ? ',' : ' ', p->long_name,
			 takes_value(p) ? "=" : "", takes_value(p) ? p->metavar : "");
		fprintf(out, "  %-*s%s\n", HELP_COLUMN - 2, option, p->help);
		shown = p->default_shown ? p->default_shown : p->default_value;
		if (p->key)
			fprintf(out, "%*skey: %s, default: %s\n", HELP_COLUMN + 2, "",
				p->key, shown ? shown : "none");
		else if (p->action == ACT_CONFIG)
			fprintf(out, "%*senvironment: PGLEADER_CONFIG, default: none\n",
				HELP_COLUMN + 2, "");
		else if (shown)
			fprintf(out, "%*sdefault: %s\n", HELP_COLUMN + 2, "", shown);
	}
	fputs("\nIn the file and the environment only:\n", out);
	for (size_t i = 0; i < NPARAMS; i++) {
		char setting[64];

		if (!params[i].key || params[i].long_name)
			continue;
		snprintf(setting, sizeof(setting), "%s = %s", params[i].key,
			 params[i].metavar);
		fprintf(out, "  %-*s%s\n%*sa COMMAND on the command line replaces it\n",
			HELP_COLUMN - 2, setting, params[i].help, HELP_COLUMN + 2, "");
	}
	fputs("\n"
	      "The file has one section, [pgleader]. Every key can also be set as\n"
	      "PGLEADER_<KEY>, e.g. PGLEADER_LOCK_KEY. The command line wins over the\n"
	      "environment, which wins over the file. DUR: 250ms, 5s, 1.5s, 2m, 1h or 0;\n"
	      "a bare number is seconds. The command is split without expansions.\n"
	      "\n"
	      "Exit status: COMMAND's own, or 128+N if signal N killed it; 64 bad usage;\n"
	      "78 bad configuration; 69 permanent database error; 75 gave up waiting\n"
	      "(--conflict-exit-code); 126/127 COMMAND not executable/not found.\n"
	      "pgleader status: 0 a leader exists, 3 none, 69 database unreachable.\n", out);
}
