/* test_config.c: config.c's contract, one table per concern. */
#include "config.h"
#include "inifile.h"
#include "log.h"

#include <check.h>
#include <sched.h>
#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN 512

extern char **environ;

static char tmpdir[64];

/* Unchecked fixture: runs once per tcase in the parent, so the directory
 * outlives forked tests and goes away even when one of them fails. */
static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/test_config.XXXXXX");
	if (!mkdtemp(tmpdir))
		abort();
}

static void remove_tmpdir(void)
{
	DIR *dir = opendir(tmpdir);
	struct dirent *entry;
	char path[PATH_MAX];

	while (dir && (entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, entry->d_name);
		if (unlink(path) < 0)
			rmdir(path);
	}
	if (dir)
		closedir(dir);
	rmdir(tmpdir);
}

/* Checked fixture: the caller's PGLEADER_* variables must not leak into
 * any test, nor one test's into the next when CK_FORK=no. */
static void clear_pgleader_env(void)
{
	for (;;) {
		char name[256] = "";

		for (char **e = environ; *e && !name[0]; e++)
			if (strncmp(*e, "PGLEADER_", 9) == 0)
				snprintf(name, sizeof(name), "%.*s",
					 (int)strcspn(*e, "="), *e);
		if (!name[0])
			return;
		unsetenv(name);
	}
}

static const char *write_bytes(const char *name, const char *data, size_t len)
{
	static char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
	return path;
}

static const char *write_file(const char *content)
{
	return write_bytes("pgleader.conf", content, strlen(content));
}

/* args: NULL-terminated, without argv[0]. */
static int load_args(struct config *cfg, char *err, const char *const *args)
{
	char *argv[32];
	int argc = 0;

	argv[argc++] = "pgleader";
	for (; args && *args; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	return config_load(cfg, argc, argv, err, ERRLEN);
}

static int load(struct config *cfg, char *err, ...)
{
	const char *args[32];
	size_t n = 0;
	va_list ap;

	va_start(ap, err);
	while ((args[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	return load_args(cfg, err, args);
}

/* "FILE" in an expected message stands for the temporary file's path,
 * each time it appears. */
static const char *expand(const char *expected, const char *path)
{
	static char buf[ERRLEN * 2];
	const char *at;
	size_t n = 0;

	if (!path)
		return expected;
	buf[0] = '\0';
	while ((at = strstr(expected, "FILE")) && n < sizeof(buf)) {
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%.*s%s",
				      (int)(at - expected), expected, path);
		expected = at + 4;
	}
	if (n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n, "%s", expected);
	return buf;
}

static const char *join(char **words)
{
	static char buf[1024];
	size_t n = 0;

	buf[0] = '\0';
	for (; words && *words; words++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
				      n ? "|" : "", *words);
	return buf;
}

#define INT(name, value) if (strcmp(key, name) == 0) \
		return snprintf(buf, sizeof(buf), "%lld", (long long)(value)), buf
#define STR(name, value) if (strcmp(key, name) == 0) \
		return (value) ? (value) : "(null)"

/* The job keys as the default job got them, as text; NULL: not one. */
static const char *job_field_text(const struct config *cfg, const char *key)
{
	static char buf[256];

	STR("schedule", cfg->n_jobs ? cfg->jobs[0].schedule : "(no job)");
	STR("timezone", cfg->n_jobs ? cfg->jobs[0].timezone : "(no job)");
	INT("jitter", cfg->n_jobs ? cfg->jobs[0].jitter_ms : -99);
	INT("max_runtime", cfg->n_jobs ? cfg->jobs[0].max_runtime_ms : -99);
	INT("missed", cfg->n_jobs ? (int)cfg->jobs[0].missed : -99);
	INT("missed_window", cfg->n_jobs ? cfg->jobs[0].missed_window_ms : -99);
	INT("rerun_interrupted", cfg->n_jobs ? cfg->jobs[0].rerun_interrupted : -99);
	INT("overlap", cfg->n_jobs ? (int)cfg->jobs[0].overlap : -99);
	return NULL;
}

/* DESIGN 13: the default job's output and retry keys; NULL: not one. */
static const char *job_retry_text(const struct config *cfg, const char *key)
{
	static char buf[256];

	INT("output", cfg->n_jobs ? (int)cfg->jobs[0].output : -99);
	INT("output_tail", cfg->n_jobs ? cfg->jobs[0].output_tail : -99);
	INT("retries", cfg->n_jobs ? cfg->jobs[0].retries : -99);
	INT("retry_delay", cfg->n_jobs ? cfg->jobs[0].retry_delay_ms : -99);
	INT("retry_max_delay", cfg->n_jobs ? cfg->jobs[0].retry_max_delay_ms : -99);
	STR("on_failure", cfg->n_jobs ? cfg->jobs[0].on_failure : "(no job)");
	INT("on_failure_timeout", cfg->n_jobs ? cfg->jobs[0].on_failure_timeout_ms : -99);
	return NULL;
}

/* DESIGN 13: the default job's process keys, as written; NULL: not one. */
static const char *job_process_text(const struct config *cfg, const char *key)
{
	STR("environment", cfg->n_jobs ? cfg->jobs[0].environment : "(no job)");
	STR("environment_file", cfg->n_jobs ? cfg->jobs[0].environment_file : "(no job)");
	STR("working_directory", cfg->n_jobs ? cfg->jobs[0].working_directory : "(no job)");
	STR("user", cfg->n_jobs ? cfg->jobs[0].user : "(no job)");
	STR("group", cfg->n_jobs ? cfg->jobs[0].group : "(no job)");
	return NULL;
}

/* A setting rendered as text, so that one table can check every type. */
static const char *field_text(const struct config *cfg, const char *key)
{
	static char buf[256];
	const char *job;

	STR("dsn", cfg->dsn);
	INT("lock_key", cfg->lock_key);
	STR("lock_name", cfg->lock_name);
	INT("acquire", cfg->acquire);
	INT("retry_interval", cfg->retry_interval_ms);
	INT("ping_interval", cfg->ping_interval_ms);
	INT("ping_timeout", cfg->ping_timeout_ms);
	INT("ping_failures", cfg->ping_failures);
	INT("queue_depth", cfg->queue_depth);
	STR("poll_dsn", cfg->poll_dsn);
	INT("server_lease", cfg->server_lease_ms);
	INT("grace_period", cfg->grace_period_ms);
	INT("drain_timeout", cfg->drain_timeout_ms);
	INT("takeover_delay", cfg->takeover_delay_ms);
	INT("priority", cfg->priority);
	INT("priority_delay", cfg->priority_delay_ms);
	INT("restart", cfg->restart);
	INT("restart_limit", cfg->restart_limit);
	INT("wait_timeout", cfg->wait_timeout_ms);
	INT("conflict_exit_code", cfg->conflict_exit_code);
	INT("shell", cfg->top.shell);
	STR("node_id", cfg->node_id);
	INT("log_level", cfg->log_level);
	INT("log_format", cfg->log_format);
	STR("http_addr", cfg->http_addr);
	STR("failsafe_peers", cfg->failsafe_peers);
	STR("failsafe_secret_file", cfg->failsafe_secret_file);
	INT("failsafe_ttl", cfg->failsafe_ttl_ms);
	STR("command", join(cfg->command));
	INT("once_per", cfg->once_per_ms);
	STR("schema", cfg->schema);
	STR("ledger_owner", cfg->ledger_owner);
	INT("keep_runs", cfg->keep_runs_ms);
	if ((job = job_field_text(cfg, key)) || (job = job_retry_text(cfg, key)) ||
	    (job = job_process_text(cfg, key)))
		return job;
	ck_abort_msg("no such key %s", key);
	return NULL;
}
#undef INT
#undef STR

static void env_name(const char *key, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "PGLEADER_");

	for (; *key && n + 1 < len; key++)
		buf[n++] = (*key >= 'a' && *key <= 'z') ? (char)(*key - 32) : *key;
	buf[n] = '\0';
}

/* ---- every key, through every layer ---- */

static const struct key_case {
	const char *key;
	const char *option;  /* NULL: file and environment only */
	bool flag;           /* the option takes no value and means "true" */
	const char *good, *expect;
	const char *bad, *why; /* bad NULL: every value is valid */
} key_cases[] = {
	{ "dsn", "dsn", false, "host=db1,db2 dbname=app", "host=db1,db2 dbname=app",
	  NULL, NULL },
	{ "lock_key", "lock-key", false, "0x10", "16", "12x",
	  "invalid lock key \"12x\" (signed 64-bit decimal, or 0x and 1 to 16 hex digits)" },
	{ "lock_name", "lock-name", false, "nightly report", "nightly report", "",
	  "must not be empty" },
	{ "acquire", "acquire", false, "poll", "1", "sometimes",
	  "invalid value \"sometimes\" (expected wait, poll)" },
	{ "retry_interval", "retry-interval", false, "250ms", "250", "5 s",
	  "invalid duration \"5 s\" (examples: 250ms, 5s, 2m)" },
	{ "ping_interval", "ping-interval", false, "1.5s", "1500", "-1s",
	  "invalid duration \"-1s\" (examples: 250ms, 5s, 2m)" },
	{ "ping_timeout", "ping-timeout", false, "3s", "3000", "0",
	  "must be greater than 0" },
	{ "ping_failures", "ping-failures", false, "5", "5", "0",
	  "0 is out of range (1 to 1000)" },
	{ "queue_depth", "queue-depth", false, "2", "2", "0",
	  "0 is out of range (1 to 1000)" },
	{ "poll_dsn", "poll-dsn", false, "host=pgbouncer port=6432 dbname=app",
	  "host=pgbouncer port=6432 dbname=app", NULL, NULL },
	{ "server_lease", "server-lease", false, "0", "0", "forever",
	  "invalid duration \"forever\" (examples: 250ms, 5s, 2m)" },
	{ "grace_period", "grace-period", false, "1s", "1000", "-8s",
	  "invalid duration \"-8s\" (examples: 250ms, 5s, 2m)" },
	{ "drain_timeout", "drain-timeout", false, "90s", "90000", "soon",
	  "invalid duration \"soon\" (examples: 250ms, 5s, 2m)" },
	{ "takeover_delay", "takeover-delay", false, "1h", "3600000", "1d",
	  "invalid duration \"1d\" (examples: 250ms, 5s, 2m)" },
	{ "priority", "priority", false, "3", "3", "1001",
	  "1001 is out of range (0 to 1000)" },
	{ "priority_delay", "priority-delay", false, "30s", "30000", "-1s",
	  "invalid duration \"-1s\" (examples: 250ms, 5s, 2m)" },
	{ "restart", "restart", false, "on-failure", "1", "On-Failure",
	  "invalid value \"On-Failure\" (expected no, on-failure, always)" },
	{ "restart_limit", "restart-limit", false, "0", "0", "-1",
	  "-1 is out of range (0 to 1000000)" },
	{ "wait_timeout", "wait-timeout", false, "30s", "30000", "never",
	  "invalid duration \"never\" (examples: 250ms, 5s, 2m)" },
	{ "conflict_exit_code", "conflict-exit-code", false, "0", "0", "256",
	  "256 is out of range (0 to 255)" },
	{ "shell", "shell", true, "yes", "1", "maybe",
	  "invalid boolean \"maybe\" (true/false, yes/no, on/off, 1/0)" },
	{ "node_id", "node-id", false, "db-1.example", "db-1.example", "has space",
	  "\"has space\" may hold only printable ASCII without spaces" },
	{ "log_level", "log-level", false, "debug", "7", "loud",
	  "invalid value \"loud\" (expected error, warning, notice, info, debug)" },
	{ "log_format", "log-format", false, "json", "1", "yaml",
	  "invalid value \"yaml\" (expected text, json)" },
	{ "http_addr", "http-addr", false, "[::1]:8008", "[::1]:8008", "localhost",
	  "invalid address \"localhost\": no :PORT (examples: 127.0.0.1:8008, [::1]:8008, :8008)" },
	{ "failsafe_peers", "failsafe-peers", false, "a=10.0.0.1:8008, b=[::2]:8008",
	  "a=10.0.0.1:8008, b=[::2]:8008", "a=h:1,a=h:2", "node id \"a\" is listed twice" },
	{ "failsafe_secret_file", "failsafe-secret-file", false, "/etc/pgleader/secret",
	  "/etc/pgleader/secret", NULL, NULL },
	{ "failsafe_ttl", "failsafe-ttl", false, "1m", "60000", "0",
	  "must be greater than 0" },
	{ "command", NULL, false, "./report --daily 'a b'", "./report|--daily|a b",
	  "'open", "unterminated single quote" },
	/* DESIGN 10; a bad expression or zone: see schedule_values */
	{ "schedule", "schedule", false, "*/15 * * * *", "*/15 * * * *", NULL, NULL },
	{ "timezone", "timezone", false, "Europe/Berlin", "Europe/Berlin", "",
	  "must not be empty (the default is UTC)" },
	{ "jitter", "jitter", false, "30s", "30000", "soon",
	  "invalid duration \"soon\" (examples: 250ms, 5s, 2m)" },
	{ "max_runtime", "max-runtime", false, "1h", "3600000", "0",
	  "must be greater than 0" },
	{ "missed", "missed", false, "skip", "1", "twice",
	  "invalid value \"twice\" (expected once, skip)" },
	{ "missed_window", "missed-window", false, "2h", "7200000", "0",
	  "must be greater than 0" },
	{ "rerun_interrupted", "rerun-interrupted", true, "yes", "1", "maybe",
	  "invalid boolean \"maybe\" (true/false, yes/no, on/off, 1/0)" },
	{ "overlap", "overlap", false, "replace", "2", "allow",
	  "invalid value \"allow\" (expected skip, queue, replace)" },
	/* DESIGN 13 */
	{ "retries", "retries", false, "3", "3", "101", "101 is out of range (0 to 100)" },
	{ "retry_delay", "retry-delay", false, "1m", "60000", "0",
	  "must be greater than 0" },
	{ "retry_max_delay", "retry-max-delay", false, "1h", "3600000", "0",
	  "must be greater than 0" },
	{ "on_failure", "on-failure", false, "mail -s \"$PGLEADER_JOB failed\" ops",
	  "mail -s \"$PGLEADER_JOB failed\" ops", NULL, NULL },
	{ "on_failure_timeout", "on-failure-timeout", false, "2m", "120000", "0",
	  "must be greater than 0" },
	{ "once_per", "once-per", false, "1h", "3600000", "-1h",
	  "invalid duration \"-1h\" (examples: 250ms, 5s, 2m)" },
	{ "schema", "schema", false, "ledger_2", "ledger_2", "PgLeader",
	  "invalid schema name \"PgLeader\" (1 to 63 of a-z 0-9 _, not starting with a digit)" },
	{ "output", NULL, false, "log", "2", "file",
	  "invalid value \"file\" (expected inherit, log)" },
	{ "output_tail", "output-tail", false, "64KiB", "65536", "2MiB",
	  "2MiB is out of range (0 to 1048576 bytes)" },
	{ "keep_runs", "keep-runs", false, "24h", "86400000", "721h",
	  "invalid duration \"721h\" (examples: 250ms, 5s, 2m)" },
	{ "ledger_owner", "ledger-owner", false, "Ops DBA", "Ops DBA", "a\tb",
	  "invalid role name \"a?b\" (1 to 63 bytes of UTF-8, no control characters)" },
	/* DESIGN 13; the values' syntax: test_jobproc */
	{ "environment", "environment", false, "A=1 \"B=x y\"", "A=1 \"B=x y\"",
	  "A=1 'B=2", "assignment 2: unterminated quote" },
	{ "environment_file", "environment-file", false, "-/nonexistent/env",
	  "-/nonexistent/env", "etc/env", "\"etc/env\" is not an absolute path" },
	{ "working_directory", "working-directory", false, "/tmp", "/tmp", "tmp",
	  "\"tmp\" is not an absolute path" },
	{ "user", "user", false, "root", "root", "a b",
	  "invalid name \"a b\" (no blanks, ':' or '/')" },
	{ "group", "group", false, "0", "0", "a:b",
	  "invalid name \"a:b\" (no blanks, ':' or '/')" },
};

#define NKEYS (int)(sizeof(key_cases) / sizeof(key_cases[0]))

/* user and group load only where pgleader runs as root (test_jobproc and
 * the integration tests check the refusal). */
static bool needs_root(const struct key_case *k)
{
	return geteuid() != 0 && (!strcmp(k->key, "user") || !strcmp(k->key, "group"));
}

static const char *const scheduled[] = {
	"jitter", "max_runtime", "missed", "missed_window", "rerun_interrupted", "overlap",
	"retries", "retry_delay", "retry_max_delay", "on_failure", "on_failure_timeout",
};

static const char *const *command_args(const struct key_case *k,
				       const char *first, const char *second)
{
	static const char *args[8];
	size_t n = 0;

	/* what failsafe needs beside its members */
	if (strcmp(k->key, "failsafe_peers") == 0) {
		args[n++] = "--http-addr=:8008";
		args[n++] = "--failsafe-secret-file=/secret";
		args[n++] = "--node-id=a";
	}
	/* what the keys of a schedule and a one-shot need */
	for (size_t i = 0; i < sizeof(scheduled) / sizeof(scheduled[0]); i++)
		if (strcmp(k->key, scheduled[i]) == 0)
			args[n++] = "--schedule=@hourly";
	if (strcmp(k->key, "once_per") == 0)
		args[n++] = "--nonblock";
	if (first)
		args[n++] = first;
	if (second)
		args[n++] = second;
	if (strcmp(k->key, "command") != 0)
		args[n++] = "true";
	args[n] = NULL;
	return args;
}

START_TEST(key_in_file)
{
	const struct key_case *k = &key_cases[_i];
	struct config cfg;
	char err[ERRLEN], content[512];
	const char *path;
	if (needs_root(k))
		return;

	snprintf(content, sizeof(content), "[pgleader]\n%s = %s\n", k->key, k->good);
	path = write_file(content);
	ck_assert_int_eq(load_args(&cfg, err, command_args(k, "-c", path)), CONFIG_OK);
	ck_assert_str_eq(field_text(&cfg, k->key), k->expect);
	config_free(&cfg);

	if (!k->why)
		return;
	snprintf(content, sizeof(content), "[pgleader]\n%s = %s\n", k->key, k->bad);
	path = write_file(content);
	ck_assert_int_eq(load_args(&cfg, err, command_args(k, "-c", path)),
			 EX_CONFIG);
	snprintf(content, sizeof(content), "FILE:2: %s: %s", k->key, k->why);
	ck_assert_str_eq(err, expand(content, path));
}
END_TEST

START_TEST(key_in_environment)
{
	const struct key_case *k = &key_cases[_i];
	struct config cfg;
	char err[ERRLEN], name[64], expected[512];
	if (needs_root(k))
		return;

	env_name(k->key, name, sizeof(name));
	setenv(name, k->good, 1);
	ck_assert_int_eq(load_args(&cfg, err, command_args(k, NULL, NULL)), CONFIG_OK);
	ck_assert_str_eq(field_text(&cfg, k->key), k->expect);
	config_free(&cfg);

	if (!k->why || !*k->bad) /* an empty variable counts as unset */
		return;
	setenv(name, k->bad, 1);
	ck_assert_int_eq(load_args(&cfg, err, command_args(k, NULL, NULL)),
			 EX_CONFIG);
	snprintf(expected, sizeof(expected), "%s: %s", name, k->why);
	ck_assert_str_eq(err, expected);
}
END_TEST

START_TEST(key_on_command_line)
{
	const struct key_case *k = &key_cases[_i];
	struct config cfg;
	char err[ERRLEN], option[256], expected[512];
	if (needs_root(k))
		return;

	if (!k->option)
		return;
	if (k->flag)
		snprintf(option, sizeof(option), "--%s", k->option);
	else
		snprintf(option, sizeof(option), "--%s=%s", k->option, k->good);
	ck_assert_int_eq(load_args(&cfg, err, command_args(k, option, NULL)), CONFIG_OK);
	ck_assert_str_eq(field_text(&cfg, k->key), k->expect);
	config_free(&cfg);

	if (!k->why || k->flag)
		return;
	/* The value as a separate word, the way most people type it. */
	snprintf(option, sizeof(option), "--%s", k->option);
	ck_assert_int_eq(load_args(&cfg, err, command_args(k, option, k->bad)),
			 EX_USAGE);
	snprintf(expected, sizeof(expected), "--%s: %s", k->option, k->why);
	ck_assert_str_eq(err, expected);
}
END_TEST

/* Help lists every option's key and default; the key table above must
 * cover every key that help shows, so a new key cannot go untested. */
START_TEST(help_lists_every_key)
{
	char *text = NULL, *line;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	int keyed = 0, listed = 0;

	config_usage(out);
	fclose(out);
	for (int i = 0; i < NKEYS; i++) {
		char needle[128];

		if (key_cases[i].option) {
			keyed++;
			snprintf(needle, sizeof(needle), "--%s", key_cases[i].option);
			ck_assert_msg(strstr(text, needle), "%s not in help", needle);
			snprintf(needle, sizeof(needle), "key: %s, default: ",
				 key_cases[i].key);
		} else {
			snprintf(needle, sizeof(needle), "  %s = ", key_cases[i].key);
		}
		ck_assert_msg(strstr(text, needle), "%s not in help", needle);
	}
	for (line = text; (line = strstr(line, "  key: ")); line++)
		listed++;
	ck_assert_int_eq(listed, keyed);
	for (line = text; *line;) {
		size_t len = strcspn(line, "\n");

		ck_assert_msg(len < 80, "help line too long: %.*s", (int)len, line);
		line += len + (line[len] == '\n');
	}
	ck_assert(strstr(text, "environment: PGLEADER_CONFIG"));
	ck_assert(strstr(text, "Usage: pgleader [OPTION]... [--] COMMAND [ARG]..."));
	free(text);
}
END_TEST

/* ---- values ---- */

/* Edges of each key's range that the key table does not reach. */
static const struct {
	const char *option, *value, *key, *expect, *error;
} range_cases[] = {
	{ "retry-interval", "0", NULL, NULL, "--retry-interval: must be greater than 0" },
	{ "ping-interval", "0", NULL, NULL, "--ping-interval: must be greater than 0" },
	{ "ping-timeout", "1ms", "ping_timeout", "1", NULL },
	{ "grace-period", "0", "grace_period", "0", NULL },
	{ "grace-period", "8", "grace_period", "8000", NULL },
	{ "takeover-delay", "0", "takeover_delay", "0", NULL },
	{ "wait-timeout", "0", "wait_timeout", "0", NULL },
	{ "wait-timeout", "none", "wait_timeout", "-1", NULL },
	{ "server-lease", "none", NULL, NULL,
	  "--server-lease: invalid duration \"none\" (examples: 250ms, 5s, 2m)" },
	{ "ping-failures", "1", "ping_failures", "1", NULL },
	{ "ping-failures", "1001", NULL, NULL, "--ping-failures: 1001 is out of range (1 to 1000)" },
	{ "ping-failures", "2x", NULL, NULL, "--ping-failures: invalid number \"2x\"" },
	{ "ping-failures", "+2", NULL, NULL, "--ping-failures: invalid number \"+2\"" },
	{ "ping-failures", "99999999999999999999", NULL, NULL,
	  "--ping-failures: invalid number \"99999999999999999999\"" },
	{ "conflict-exit-code", "255", "conflict_exit_code", "255", NULL },
	{ "conflict-exit-code", "-1", NULL, NULL,
	  "--conflict-exit-code: -1 is out of range (0 to 255)" },
	{ "node-id", "a", "node_id", "a", NULL },
	{ "node-id", "123456789012345678901234567890123456789012345678901234",
	  "node_id", "123456789012345678901234567890123456789012345678901234", NULL },
	{ "node-id", "1234567890123456789012345678901234567890123456789012345", NULL, NULL,
	  "--node-id: \"1234567890123456789012345678901234567890...\" must have 1 to 54 characters" },
	{ "node-id", "", NULL, NULL, "--node-id: \"\" must have 1 to 54 characters" },
	{ "node-id", "caf\xc3\xa9", NULL, NULL,
	  "--node-id: \"caf??\" may hold only printable ASCII without spaces" },
	{ "node-id", "a\nb", NULL, NULL,
	  "--node-id: \"a?b\" may hold only printable ASCII without spaces" },
	{ "log-level", "error", "log_level", "3", NULL },
	{ "log-level", "warning", "log_level", "4", NULL },
	{ "log-level", "notice", "log_level", "5", NULL },
	{ "log-level", "info", "log_level", "6", NULL },
	{ "acquire", "wait", "acquire", "0", NULL },
	{ "restart", "always", "restart", "2", NULL },
	{ "restart", "no", "restart", "0", NULL },
	{ "dsn", "", "dsn", "(null)", NULL }, /* back to the libpq environment */
	{ "http-addr", "127.0.0.1:8008", "http_addr", "127.0.0.1:8008", NULL },
	{ "http-addr", "[::1]:8008", "http_addr", "[::1]:8008", NULL },
	{ "http-addr", ":8008", "http_addr", ":8008", NULL },
	{ "http-addr", "localhost:8008", "http_addr", "localhost:8008", NULL },
	{ "http-addr", "", "http_addr", "(null)", NULL }, /* off */
	{ "http-addr", "127.0.0.1:0", NULL, NULL,
	  "--http-addr: invalid address \"127.0.0.1:0\": the port must be a number from 1 to 65535 (examples: 127.0.0.1:8008, [::1]:8008, :8008)" },
	{ "http-addr", "::1:8008", NULL, NULL,
	  "--http-addr: invalid address \"::1:8008\": an IPv6 address goes in brackets, as [::1]:8008 (examples: 127.0.0.1:8008, [::1]:8008, :8008)" },
	{ "http-addr", "http://localhost:8008/", NULL, NULL,
	  "--http-addr: invalid address \"http://localhost:8008/\": invalid host name or address (examples: 127.0.0.1:8008, [::1]:8008, :8008)" },
	{ "http-addr", "8008", NULL, NULL,
	  "--http-addr: invalid address \"8008\": no :PORT (examples: 127.0.0.1:8008, [::1]:8008, :8008)" },
	{ "http-addr", "l\x1b[0mocalhost:8008", NULL, NULL,
	  "--http-addr: invalid address \"l?[0mocalhost:8008\": invalid host name or address (examples: 127.0.0.1:8008, [::1]:8008, :8008)" },
	{ "log-format", "text", "log_format", "0", NULL },
	{ "failsafe-ttl", "1ms", "failsafe_ttl", "1", NULL }, /* failsafe off: no rule */
	/* what PostgreSQL takes as lock_timeout and idle_session_timeout: an int
	 * of milliseconds; past it every SET would fail */
	{ "retry-interval", "2147483647ms", "retry_interval", "2147483647", NULL },
	{ "retry-interval", "2147483648ms", NULL, NULL,
	  "--retry-interval: \"2147483648ms\" is out of range (at most 2147483.647s, about 596h)" },
	{ "retry-interval", "597h", NULL, NULL,
	  "--retry-interval: \"597h\" is out of range (at most 2147483.647s, about 596h)" },
	{ "server-lease", "2147483647ms", "server_lease", "2147483647", NULL },
	{ "server-lease", "2147483648ms", NULL, NULL,
	  "--server-lease: \"2147483648ms\" is out of range (at most 2147483.647s, about 596h)" },
	{ "server-lease", "720h", NULL, NULL,
	  "--server-lease: \"720h\" is out of range (at most 2147483.647s, about 596h)" },
	/* other durations are pgleader's own timers */
	{ "wait-timeout", "720h", "wait_timeout", "2592000000", NULL },
	/* the server hashes the name as text */
	{ "lock-name", "caf\xc3\xa9", "lock_name", "caf\xc3\xa9", NULL },
	{ "lock-name", "\xff", NULL, NULL, "--lock-name: \"?\" is not valid UTF-8" },
	{ "lock-name", "caf\xe9", NULL, NULL, "--lock-name: \"caf?\" is not valid UTF-8" },
	{ "lock-key", "-9223372036854775808", "lock_key", "-9223372036854775808", NULL },
	{ "lock-key", "0xffffffffffffffff", "lock_key", "-1", NULL },
	{ "lock-key", "0x1ffffffffffffffff", NULL, NULL,
	  "--lock-key: invalid lock key \"0x1ffffffffffffffff\" (signed 64-bit decimal, or 0x and 1 to 16 hex digits)" },
};

START_TEST(value_ranges)
{
	struct config cfg;
	char err[ERRLEN];
	int result = load(&cfg, err, "--", "true", NULL);
	char option[256];

	config_free(&cfg);
	ck_assert_int_eq(result, CONFIG_OK);
	snprintf(option, sizeof(option), "--%s=%s", range_cases[_i].option,
		 range_cases[_i].value);
	result = load(&cfg, err, option, "true", NULL);
	if (range_cases[_i].error) {
		ck_assert_int_eq(result, EX_USAGE);
		ck_assert_str_eq(err, range_cases[_i].error);
	} else {
		ck_assert_msg(result == CONFIG_OK, "%s: %s", option, err);
		ck_assert_str_eq(field_text(&cfg, range_cases[_i].key),
				 range_cases[_i].expect);
		config_free(&cfg);
	}
}
END_TEST

static const struct {
	const char *value;
	bool expect;
} bool_cases[] = {
	{ "true", true }, { "TRUE", true }, { "yes", true }, { "on", true },
	{ "1", true }, { "false", false }, { "No", false }, { "off", false },
	{ "0", false },
};

START_TEST(booleans)
{
	struct config cfg;
	char err[ERRLEN];

	setenv("PGLEADER_SHELL", bool_cases[_i].value, 1);
	ck_assert_int_eq(load(&cfg, err, "x", NULL), CONFIG_OK);
	ck_assert_int_eq(cfg.top.shell, bool_cases[_i].expect);
	config_free(&cfg);
}
END_TEST

/* ---- layers ---- */

/* Bit 0: file, bit 1: environment, bit 2: command line; each gives
 * retry_interval its own value, and the highest present must win. */
START_TEST(precedence)
{
	struct config cfg;
	char err[ERRLEN];
	const char *args[8];
	size_t n = 0;
	int64_t expect = 5000;

	if (_i & 1) {
		args[n++] = "-c";
		args[n++] = write_file("[pgleader]\nretry_interval = 2s\n");
		expect = 2000;
	}
	if (_i & 2) {
		setenv("PGLEADER_RETRY_INTERVAL", "3s", 1);
		expect = 3000;
	}
	if (_i & 4) {
		args[n++] = "--retry-interval=4s";
		expect = 4000;
	}
	args[n++] = "true";
	args[n] = NULL;
	ck_assert_int_eq(load_args(&cfg, err, args), CONFIG_OK);
	ck_assert_int_eq(cfg.retry_interval_ms, expect);
	config_free(&cfg);
}
END_TEST

static const struct {
	const char *file;               /* lines after [pgleader], or NULL */
	const char *env_key, *env_name; /* PGLEADER_LOCK_KEY / _NAME */
	const char *args[6];            /* before the command */
	int result;
	const char *error;
	int64_t key;
	const char *name;
} lock_cases[] = {
	{ NULL, NULL, NULL, { NULL }, CONFIG_OK, NULL, CONFIG_DEFAULT_LOCK_KEY, NULL },
	{ "lock_name = a\n", NULL, NULL, { NULL }, CONFIG_OK, NULL, 0, "a" },
	{ "lock_key = 5\n", NULL, NULL, { NULL }, CONFIG_OK, NULL, 5, NULL },
	{ "lock_key = 5\nlock_name = a\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:3: lock_name: conflicts with lock_key on line 2; set only one of them", 0, NULL },
	{ "lock_name = a\n\nlock_key = 5\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:4: lock_key: conflicts with lock_name on line 2; set only one of them", 0, NULL },
	{ NULL, "1", "b", { NULL }, EX_CONFIG,
	  "PGLEADER_LOCK_NAME: conflicts with PGLEADER_LOCK_KEY; set only one of them", 0, NULL },
	{ NULL, NULL, NULL, { "-k", "1", "-n", "c", NULL }, EX_USAGE,
	  "--lock-name: conflicts with --lock-key; set only one of them", 0, NULL },
	{ NULL, NULL, NULL, { "--lock-name=c", "--lock-key=1", NULL }, EX_USAGE,
	  "--lock-key: conflicts with --lock-name; set only one of them", 0, NULL },
	{ "lock_key = 5\n", NULL, "b", { NULL }, CONFIG_OK, NULL, 0, "b" },
	{ "lock_name = a\n", "7", NULL, { NULL }, CONFIG_OK, NULL, 7, NULL },
	{ NULL, "7", NULL, { "-n", "c", NULL }, CONFIG_OK, NULL, 0, "c" },
	{ "lock_name = a\n", NULL, NULL, { "-k", "9", NULL }, CONFIG_OK, NULL, 9, NULL },
	{ NULL, NULL, "b", { "-k", "1", "-k", "2", NULL }, CONFIG_OK, NULL, 2, NULL },
	{ "lock_key = 5\n", "6", NULL, { "-n", "c", NULL }, CONFIG_OK, NULL, 0, "c" },
	{ "lock_name = a\nlock_name = b\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:3: lock_name: already set on line 2; set it only once", 0, NULL },
	{ "lock_key = 5\nlock_key = 5\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:3: lock_key: already set on line 2; set it only once", 0, NULL },
	{ "lock_name = a\n", NULL, NULL, { "-n", "c", "-n", "d", NULL }, CONFIG_OK,
	  NULL, 0, "d" },
};

START_TEST(lock_key_or_name)
{
	struct config cfg;
	char err[ERRLEN], content[256];
	const char *args[12], *path = NULL;
	size_t n = 0;
	int result;

	if (lock_cases[_i].file) {
		snprintf(content, sizeof(content), "[pgleader]\n%s", lock_cases[_i].file);
		path = write_file(content);
		args[n++] = "-c";
		args[n++] = path;
	}
	if (lock_cases[_i].env_key)
		setenv("PGLEADER_LOCK_KEY", lock_cases[_i].env_key, 1);
	if (lock_cases[_i].env_name)
		setenv("PGLEADER_LOCK_NAME", lock_cases[_i].env_name, 1);
	for (const char *const *a = lock_cases[_i].args; *a; a++)
		args[n++] = *a;
	args[n++] = "true";
	args[n] = NULL;
	result = load_args(&cfg, err, args);
	ck_assert_msg(result == lock_cases[_i].result, "%d: %s", result, err);
	if (result != CONFIG_OK) {
		ck_assert_str_eq(err, expand(lock_cases[_i].error, path));
		return;
	}
	ck_assert_int_eq(cfg.lock_key, lock_cases[_i].key);
	if (lock_cases[_i].name)
		ck_assert_str_eq(cfg.lock_name, lock_cases[_i].name);
	else
		ck_assert_ptr_null(cfg.lock_name);
	config_free(&cfg);
}
END_TEST

START_TEST(config_file_sources)
{
	struct config cfg;
	char err[ERRLEN], other[PATH_MAX];
	const char *path;

	/* PGLEADER_CONFIG names the file when -c does not. */
	path = write_file("[pgleader]\ncommand = from-file --x\n");
	setenv("PGLEADER_CONFIG", path, 1);
	ck_assert_int_eq(load(&cfg, err, NULL), CONFIG_OK);
	ck_assert_str_eq(cfg.config_file, path);
	ck_assert_str_eq(join(cfg.command), "from-file|--x");
	config_free(&cfg);

	/* -c wins over PGLEADER_CONFIG. */
	snprintf(other, sizeof(other), "%s", path);
	path = write_bytes("other.conf", "[pgleader]\ncommand = other\n", 27);
	ck_assert_int_eq(load(&cfg, err, "-c", path, NULL), CONFIG_OK);
	ck_assert_str_eq(join(cfg.command), "other");
	config_free(&cfg);

	/* PGLEADER_COMMAND wins over the file, the command line over both. */
	setenv("PGLEADER_COMMAND", "from-env", 1);
	ck_assert_int_eq(load(&cfg, err, NULL), CONFIG_OK);
	ck_assert_str_eq(join(cfg.command), "from-env");
	config_free(&cfg);
	ck_assert_int_eq(load(&cfg, err, "--", "argv", "'x y'", NULL), CONFIG_OK);
	ck_assert_str_eq(join(cfg.command), "argv|'x y'");
	ck_assert_str_eq(cfg.config_file, other);
	config_free(&cfg);

	/* An empty PGLEADER_CONFIG is no file at all. */
	setenv("PGLEADER_CONFIG", "", 1);
	unsetenv("PGLEADER_COMMAND");
	ck_assert_int_eq(load(&cfg, err, NULL), EX_USAGE);
	ck_assert_ptr_null(cfg.config_file);
}
END_TEST

START_TEST(empty_variables_are_unset)
{
	struct config cfg;
	char err[ERRLEN];

	setenv("PGLEADER_PING_INTERVAL", "", 1);
	setenv("PGLEADER_NODE_ID", "", 1);
	setenv("PGLEADER_UNKNOWN_THING", "x", 1); /* not ours: ignored */
	ck_assert_int_eq(load(&cfg, err, "true", NULL), CONFIG_OK);
	ck_assert_int_eq(cfg.ping_interval_ms, 1000);
	ck_assert_ptr_null(cfg.lock_name);
	ck_assert_int_eq(cfg.lock_key, CONFIG_DEFAULT_LOCK_KEY);
	config_free(&cfg);
	/* but not the lock's identity: the default key is every fleet's */
	setenv("PGLEADER_LOCK_NAME", "", 1);
	ck_assert_int_eq(load(&cfg, err, "true", NULL), EX_CONFIG);
	ck_assert_str_eq(err, "PGLEADER_LOCK_NAME is set but empty: set it or unset it");
	unsetenv("PGLEADER_LOCK_NAME");
	setenv("PGLEADER_LOCK_KEY", "", 1);
	ck_assert_int_eq(load(&cfg, err, "true", NULL), EX_CONFIG);
	ck_assert_str_eq(err, "PGLEADER_LOCK_KEY is set but empty: set it or unset it");
	unsetenv("PGLEADER_LOCK_KEY");
}
END_TEST

START_TEST(defaults)
{
	struct config cfg;
	char err[ERRLEN], host[256] = "";

	ck_assert_int_eq(load(&cfg, err, "true", NULL), CONFIG_OK);
	ck_assert_ptr_null(cfg.config_file);
	ck_assert_ptr_null(cfg.dsn);
	ck_assert_int_eq(cfg.lock_key, CONFIG_DEFAULT_LOCK_KEY);
	ck_assert_ptr_null(cfg.lock_name);
	ck_assert_int_eq(cfg.acquire, ACQUIRE_WAIT);
	ck_assert_int_eq(cfg.retry_interval_ms, 5000);
	ck_assert_int_eq(cfg.ping_interval_ms, 1000);
	ck_assert_int_eq(cfg.ping_timeout_ms, 2000);
	ck_assert_int_eq(cfg.ping_failures, 3);
	ck_assert_int_eq(cfg.server_lease_ms, 20000);
	ck_assert_int_eq(cfg.grace_period_ms, 8000);
	ck_assert_int_eq(cfg.takeover_delay_ms, 0);
	ck_assert_int_eq(cfg.priority, 1);
	ck_assert_int_eq(cfg.priority_delay_ms, 10000);
	ck_assert_int_eq(cfg.restart, RESTART_NO);
	ck_assert(!cfg.nonblock);
	ck_assert_int_eq(cfg.wait_timeout_ms, -1);
	ck_assert_int_eq(cfg.conflict_exit_code, 75);
	ck_assert(!cfg.top.shell);
	ck_assert_ptr_null(cfg.http_addr);
	ck_assert_ptr_null(cfg.failsafe_peers);
	ck_assert_ptr_null(cfg.peers);
	ck_assert_uint_eq(cfg.n_peers, 0);
	ck_assert_ptr_null(cfg.failsafe_secret_file);
	ck_assert_int_eq(cfg.failsafe_ttl_ms, 15000);
	ck_assert_int_eq(cfg.log_format, LOG_FORMAT_TEXT);
	ck_assert(!cfg.watch);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_INFO);
	ck_assert_str_eq(join(cfg.command), "true");
	ck_assert(!cfg.status_mode);
	ck_assert(!cfg.json);
	/* node_id: the host name (one that fits: a longer one is refused,
	 * see bad_host_name) */
	ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
	host[54] = '\0';
	ck_assert_str_eq(cfg.node_id, host);
	config_free(&cfg);
}
END_TEST

/* The host name stands in for --node-id and passes its checks. A host
 * name of our choosing needs a UTS namespace of our own: as root only. */
static const struct {
	const char *host, *error;
} host_cases[] = {
	{ "db-1.example", NULL },
	{ "has space", "the host name cannot be the node id: \"has space\" may hold only printable ASCII without spaces; set --node-id" },
	{ "bell\a", "the host name cannot be the node id: \"bell?\" may hold only printable ASCII without spaces; set --node-id" },
	{ "a-host-name-of-sixty-characters.very-long.example.internal1",
	  "the host name cannot be the node id: \"a-host-name-of-sixty-characters.very-lon...\" must have 1 to 54 characters; set --node-id" },
};

START_TEST(bad_host_name)
{
	struct config cfg;
	char err[ERRLEN];
	int result;

	if (unshare(CLONE_NEWUTS) < 0) /* CK_FORK: this process only */
		return;
	ck_assert_int_eq(sethostname(host_cases[_i].host, strlen(host_cases[_i].host)), 0);
	result = load(&cfg, err, "true", NULL);
	if (!host_cases[_i].error) {
		ck_assert_int_eq(result, CONFIG_OK);
		ck_assert_str_eq(cfg.node_id, host_cases[_i].host);
		config_free(&cfg);
		return;
	}
	ck_assert_int_eq(result, EX_CONFIG);
	ck_assert_str_eq(err, host_cases[_i].error);
	/* --node-id is the way out */
	ck_assert_int_eq(load(&cfg, err, "--node-id=db-1", "true", NULL), CONFIG_OK);
	config_free(&cfg);
}
END_TEST

/* ---- the file ---- */

/* Expected error: "FILE" stands for the path; NULL: loads fine and key
 * then reads expect. */
static const struct {
	const char *content;
	int result;
	const char *error, *key, *expect;
} file_cases[] = {
	{ "[pgleader]\nping_interval = 2s\nbogus = 1\n", EX_CONFIG,
	  "FILE:3: unknown key \"bogus\"", NULL, NULL },
	{ "[pgleader]\nlock-key = 1\n", EX_CONFIG,
	  "FILE:2: unknown key \"lock-key\" (did you mean lock_key?)", NULL, NULL },
	{ "[pgleader]\nLog_Level = info\n", EX_CONFIG,
	  "FILE:2: unknown key \"Log_Level\" (did you mean log_level?)", NULL, NULL },
	{ "; comment\n[other]\nx = 1\n", EX_CONFIG,
	  "FILE:2: unknown section [other] (expected [pgleader] or [job.NAME])", NULL, NULL },
	{ "[pgleader]\ncommand = true\n[Pgleader]\n", EX_CONFIG,
	  "FILE:3: unknown section [Pgleader] (expected [pgleader] or [job.NAME])", NULL, NULL },
	{ "dsn = x\n[pgleader]\n", EX_CONFIG,
	  "FILE:1: key \"dsn\" is outside the [pgleader] section", NULL, NULL },
	{ "[pgleader]\n\nnot a setting\n", EX_CONFIG,
	  "FILE:3: syntax error (expected key = value or [pgleader])", NULL, NULL },
	{ "[pgleader\ncommand = true\n", EX_CONFIG,
	  "FILE:1: syntax error (expected key = value or [pgleader])", NULL, NULL },
	{ "[pgleader] extra\n", EX_CONFIG,
	  "FILE:1: unexpected text after [pgleader]", NULL, NULL },
	{ "[pgleader]\nping_interval = 2s\n\n  ; note\nping_timeout = soon\n",
	  EX_CONFIG,
	  "FILE:5: ping_timeout: invalid duration \"soon\" (examples: 250ms, 5s, 2m)",
	  NULL, NULL },
	/* a key given twice: which one was meant? */
	{ "[pgleader]\ncommand = x\nping_interval = 2s\nping_interval = 3s\n",
	  EX_CONFIG, "FILE:4: ping_interval: already set on line 3; set it only once",
	  NULL, NULL },
	{ "[pgleader]\ncommand = x\n; again\n[pgleader]\n\ncommand = y\n", EX_CONFIG,
	  "FILE:6: command: already set on line 2; set it only once", NULL, NULL },
	/* control characters of the input never reach the terminal raw */
	{ "[pg\x1b[2Jleader]\n", EX_CONFIG,
	  "FILE:1: unknown section [pg?[2Jleader] (expected [pgleader] or [job.NAME])", NULL, NULL },
	{ "[pgleader]\nlock\x07key = 1\n", EX_CONFIG,
	  "FILE:2: unknown key \"lock?key\" (did you mean lock_key?)", NULL, NULL },
	/* a typo: the nearest key by edit distance */
	{ "[pgleader]\nlcok_key = 1\n", EX_CONFIG,
	  "FILE:2: unknown key \"lcok_key\" (did you mean lock_key?)", NULL, NULL },
	{ "[pgleader]\nretry_intervall = 1s\n", EX_CONFIG,
	  "FILE:2: unknown key \"retry_intervall\" (did you mean retry_interval?)",
	  NULL, NULL },
	{ "[pgleader]\nping-intreval = 1s\n", EX_CONFIG,
	  "FILE:2: unknown key \"ping-intreval\" (did you mean ping_interval?)",
	  NULL, NULL },
	{ "[pgleader]\ndns = host=x\n", EX_CONFIG,
	  "FILE:2: unknown key \"dns\" (did you mean dsn?)", NULL, NULL },
	{ "[pgleader]\nacquire = \x1b]0;owned\x07\n", EX_CONFIG,
	  "FILE:2: acquire: invalid value \"?]0;owned?\" (expected wait, poll)", NULL, NULL },
	/* the first error is the one reported, whoever found it */
	{ "[pgleader]\nbogus = 1\nping_timeout = soon\nnonsense\n", EX_CONFIG,
	  "FILE:2: unknown key \"bogus\"", NULL, NULL },
	{ "[pgleader]\nnonsense\nbogus = 1\n", EX_CONFIG,
	  "FILE:2: syntax error (expected key = value or [pgleader])", NULL, NULL },
	/* an indented line is not a continuation of the value above */
	{ "[pgleader]\ncommand = ./report\n    --daily\n", EX_CONFIG,
	  "FILE:3: syntax error (expected key = value or [pgleader])", NULL, NULL },
	{ "[pgleader]\ncommand = 'a\n", EX_CONFIG,
	  "FILE:2: command: unterminated single quote", NULL, NULL },
	{ "[pgleader]\ncommand =\n", EX_CONFIG,
	  "FILE:2: command: empty command", NULL, NULL },
	/* '' names no program: refused before the lock is taken */
	{ "[pgleader]\ncommand = ''\n", EX_CONFIG,
	  "FILE:2: command: empty command name", NULL, NULL },
	{ "[pgleader]\ncommand = \"\" --daily\n", EX_CONFIG,
	  "FILE:2: command: empty command name", NULL, NULL },
	{ "[pgleader]\ncommand = x ''\n", CONFIG_OK, NULL, "command", "x|" },
	{ "[pgleader]\nlock_name = \xff\xfe\ncommand = x\n", EX_CONFIG,
	  "FILE:2: lock_name: \"??\" is not valid UTF-8", NULL, NULL },
	{ "[pgleader]\nserver_lease = 600h\ncommand = x\n", EX_CONFIG,
	  "FILE:2: server_lease: \"600h\" is out of range (at most 2147483.647s, about 596h)",
	  NULL, NULL },
	{ "", EX_CONFIG, "FILE: no command given and no 'command' key", NULL, NULL },
	{ "[pgleader]\nping_interval = 2s\n", EX_CONFIG,
	  "FILE: no command given and no 'command' key", NULL, NULL },
	{ "[pgleader]\nserver_lease = 10s\ncommand = x\n", EX_CONFIG,
	  "server_lease 10s must be greater than ping_interval 1s * ping_failures 3 + ping_timeout 2s + grace_period 8s = 13s",
	  NULL, NULL },
	/* what does load */
	{ "[pgleader]\n  ping_interval = 2s\ncommand = x\n", CONFIG_OK, NULL,
	  "ping_interval", "2000" },
	{ "[pgleader]\r\ncommand = a b\r\n", CONFIG_OK, NULL, "command", "a|b" },
	{ "\xef\xbb\xbf[pgleader]\ncommand = bom\n", CONFIG_OK, NULL, "command", "bom" },
	{ "# hash\n; semicolon\n\n[pgleader] ; here\ncommand = x\n", CONFIG_OK, NULL,
	  "command", "x" },
	{ "[pgleader]\ncommand = echo a ; comment\n", CONFIG_OK, NULL, "command", "echo|a" },
	{ "[pgleader]\ncommand = x\ndsn = password=a;b #c\n", CONFIG_OK, NULL,
	  "dsn", "password=a;b #c" },
	{ "[pgleader]\ncommand = x\nnode_id: colon\n", CONFIG_OK, NULL,
	  "node_id", "colon" },
	{ "[pgleader]\ncommand = x\ndsn = \"quoted\"\n", CONFIG_OK, NULL,
	  "dsn", "\"quoted\"" },
	{ "[pgleader]\n[pgleader]\ncommand = x\n", CONFIG_OK, NULL, "command", "x" },
	{ "[pgleader]\ncommand = \"sh\" -c 'exit 3' \\$x\n", CONFIG_OK, NULL,
	  "command", "sh|-c|exit 3|$x" },
};

START_TEST(file)
{
	struct config cfg;
	char err[ERRLEN];
	const char *path = write_file(file_cases[_i].content);
	int result = load(&cfg, err, "-c", path, NULL);

	ck_assert_msg(result == file_cases[_i].result, "%d: %s", result, err);
	if (result != CONFIG_OK) {
		ck_assert_str_eq(err, expand(file_cases[_i].error, path));
		return;
	}
	ck_assert_str_eq(field_text(&cfg, file_cases[_i].key), file_cases[_i].expect);
	config_free(&cfg);
}
END_TEST

START_TEST(file_cannot_be_read)
{
	struct config cfg;
	char err[ERRLEN], path[PATH_MAX], expected[PATH_MAX + 64];
	static const char nul_file[] = "[pgleader]\nnode_id = a\0b\n";

	snprintf(path, sizeof(path), "%s/missing.conf", tmpdir);
	ck_assert_int_eq(load(&cfg, err, "-c", path, "true", NULL), EX_CONFIG);
	snprintf(expected, sizeof(expected), "%s: cannot open: %s", path, strerror(ENOENT));
	ck_assert_str_eq(err, expected);

	ck_assert_int_eq(load(&cfg, err, "-c", tmpdir, "true", NULL), EX_CONFIG);
	snprintf(expected, sizeof(expected), "%s: cannot read: %s", tmpdir, strerror(EISDIR));
	ck_assert_str_eq(err, expected);

	ck_assert_int_eq(load(&cfg, err, "-c",
			      write_bytes("nul.conf", nul_file, sizeof(nul_file) - 1),
			      "true", NULL),
			 EX_CONFIG);
	ck_assert(strstr(err, "nul.conf:2: line holds a NUL byte"));

	/* A path is input too: shown without its control characters. */
	snprintf(path, sizeof(path), "%s/a\033[2Jb.conf", tmpdir);
	ck_assert_int_eq(load(&cfg, err, "-c", path, "true", NULL), EX_CONFIG);
	snprintf(expected, sizeof(expected), "%s/a?[2Jb.conf: cannot open: %s", tmpdir,
		 strerror(ENOENT));
	ck_assert_str_eq(err, expected);
}
END_TEST

/* Only a regular file is read, and only up to 1 MiB: /dev/zero would grow
 * without end, a FIFO would wait for a writer for ever. */
static const struct {
	const char *path;  /* NULL: the FIFO */
	const char *error; /* after "PATH: " */
} special_cases[] = {
	{ "/dev/zero", "not a regular file (a character device)" },
	{ "/dev/full", "not a regular file (a character device)" },
	{ "/dev/null", "not a regular file (a character device)" },
	{ NULL, "not a regular file (a FIFO)" },
};

START_TEST(special_files)
{
	struct config cfg;
	char err[ERRLEN], fifo[PATH_MAX], expected[PATH_MAX + 64];
	const char *path = special_cases[_i].path;

	if (!path) {
		snprintf(fifo, sizeof(fifo), "%s/fifo", tmpdir);
		ck_assert_int_eq(mkfifo(fifo, 0600), 0);
		path = fifo;
	}
	ck_assert_int_eq(load(&cfg, err, "-c", path, "true", NULL), EX_CONFIG);
	snprintf(expected, sizeof(expected), "%s: %s", path, special_cases[_i].error);
	ck_assert_str_eq(err, expected);
}
END_TEST

/* "; ..." lines up to exactly n bytes, then "command = x\n" if it fits. */
static const char *big_file(size_t n)
{
	static const char line[] = "; xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
	static const char tail[] = "[pgleader]\ncommand = x\n";
	char *data = malloc(n);
	const char *path;
	size_t used = 0;

	ck_assert_ptr_nonnull(data);
	while (used + sizeof(line) - 1 <= n - (sizeof(tail) - 1)) {
		memcpy(data + used, line, sizeof(line) - 1);
		used += sizeof(line) - 1;
	}
	memset(data + used, ';', n - (sizeof(tail) - 1) - used);
	data[n - sizeof(tail)] = '\n';
	memcpy(data + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	path = write_bytes("big.conf", data, n);
	free(data);
	return path;
}

START_TEST(file_size_bound)
{
	struct config cfg;
	char err[ERRLEN], expected[PATH_MAX + 64];
	const char *path;

	path = big_file(1024 * 1024);
	ck_assert_msg(load(&cfg, err, "-c", path, NULL) == CONFIG_OK, "%s", err);
	ck_assert_str_eq(join(cfg.command), "x");
	config_free(&cfg);

	path = big_file(1024 * 1024 + 1);
	ck_assert_int_eq(load(&cfg, err, "-c", path, NULL), EX_CONFIG);
	snprintf(expected, sizeof(expected), "%s: larger than 1024 KiB", path);
	ck_assert_str_eq(err, expected);
}
END_TEST

/* A line holds INIFILE_LINE_MAX characters (L) without its line end, its
 * "\r" too; one more is refused, never cut, and so are the two more that
 * inih's buffer of L + 3 would still take. 199 and 200, inih's own limit,
 * pass: a command with a long path once broke the tests. */
#define L INIFILE_LINE_MAX
static const struct {
	int length;
	bool crlf, comment, ok;
} line_cases[] = {
	{ 199, false, false, true }, { 200, false, false, true },
	{ L - 1, false, false, true }, { L, false, false, true },
	{ L, true, false, true }, { L + 1, false, false, false },
	{ L + 1, true, false, false }, { L + 2, false, false, false },
	{ L + 3, false, false, false }, { 4 * L, false, false, false },
	{ L, false, true, true }, { L + 1, false, true, false },
};

START_TEST(line_length)
{
	struct config cfg;
	char err[ERRLEN], expected[ERRLEN], *content, *line;
	const char *path;
	int len = line_cases[_i].length;
	const char *head = line_cases[_i].comment ? "; " : "command = echo ";

	ck_assert_ptr_nonnull(line = malloc((size_t)len + 1));
	ck_assert_ptr_nonnull(content = malloc((size_t)len + 64));
	memset(line, 'x', (size_t)len);
	memcpy(line, head, strlen(head));
	line[len] = '\0';
	snprintf(content, (size_t)len + 64, "[pgleader]%s%s%s%s",
		 line_cases[_i].crlf ? "\r\n" : "\n", line,
		 line_cases[_i].crlf ? "\r\n" : "\n",
		 line_cases[_i].comment ? "command = x\n" : "");
	path = write_file(content);
	if (line_cases[_i].ok) {
		ck_assert_msg(load(&cfg, err, "-c", path, NULL) == CONFIG_OK, "%s", err);
		if (!line_cases[_i].comment)
			ck_assert_int_eq(strlen(cfg.command[1]), (size_t)len - strlen(head));
		config_free(&cfg);
	} else {
		ck_assert_int_eq(load(&cfg, err, "-c", path, NULL), EX_CONFIG);
		snprintf(expected, sizeof(expected),
			 "FILE:2: line is longer than %d characters", L);
		ck_assert_str_eq(err, expand(expected, path));
	}
	free(content);
	free(line);
}
END_TEST
#undef L

static int keep_value_cb(void *user, const char *section, const char *name,
			 const char *value)
{
	(void)section;
	(void)name;
	snprintf(user, 1024, "%s", value);
	return 1;
}

/* The boundary measured on inih itself, with its own fgets reader and its
 * defaults (which reading our file puts back): a 199-character line arrives
 * whole, a 200-character one is cut. */
START_TEST(inih_own_boundary)
{
	struct config cfg;
	char content[512], value[1024], err[ERRLEN];
	FILE *f;

	ck_assert_msg(load(&cfg, err, "-c", write_file("[pgleader]\ncommand = x\n"),
			   NULL) == CONFIG_OK, "%s", err);
	config_free(&cfg);
	for (int len = 198; len <= 200; len++) {
		memset(content, 'y', sizeof(content));
		memcpy(content, "[s]\nk=", 6);
		content[4 + len] = '\n';
		content[5 + len] = '\0';
		f = fmemopen(content, strlen(content), "r");
		value[0] = '\0';
		ini_parse_file(f, keep_value_cb, value);
		fclose(f);
		if (len < 200)
			ck_assert_int_eq(strlen(value), (size_t)len - 2);
		else
			ck_assert_int_lt(strlen(value), (size_t)len - 2);
	}
}
END_TEST

/* ---- the command line ---- */

static const struct {
	const char *args[6];
	int result;
	const char *error;
} option_cases[] = {
	{ { "-x", "true" }, EX_USAGE, "unknown option -x; see pgleader --help" },
	{ { "-vx", "true" }, EX_USAGE, "unknown option -x; see pgleader --help" },
	{ { "--foo", "true" }, EX_USAGE, "unknown option --foo; see pgleader --help" },
	{ { "--lock-kye=1", "true" }, EX_USAGE,
	  "unknown option --lock-kye (did you mean --lock-key?)" },
	{ { "--scheduel", "@daily", "true" }, EX_USAGE,
	  "unknown option --scheduel (did you mean --schedule?)" },
	{ { "--once_per=1h", "true" }, EX_USAGE,
	  "unknown option --once_per (did you mean --once-per?)" },
	{ { "--Retry-Interval=1s", "true" }, EX_USAGE,
	  "unknown option --Retry-Interval (did you mean --retry-interval?)" },
	{ { "--foo=bar", "true" }, EX_USAGE, "unknown option --foo; see pgleader --help" },
	{ { "--metrics-addr=:9187", "true" }, EX_USAGE,
	  "unknown option --metrics-addr; see pgleader --help" },
	{ { "--ping", "1s", "true" }, EX_USAGE,
	  "ambiguous option --ping (--ping-interval, --ping-timeout, --ping-failures)" },
	{ { "--nonblock=yes", "true" }, EX_USAGE, "--nonblock takes no value" },
	{ { "--shell=no", "true" }, EX_USAGE, "--shell takes no value" },
	{ { "--dsn" }, EX_USAGE, "--dsn: missing value" },
	{ { "true", "-d" }, CONFIG_OK, NULL }, /* the command's own option */
	{ { "-d" }, EX_USAGE, "--dsn: missing value" },
	{ { "--ping-i=2s", "true" }, CONFIG_OK, NULL }, /* unique prefix */
	{ { "-c" }, EX_USAGE, "--config: missing value" },
	{ { "--json", "true" }, EX_USAGE,
	  "--json is only valid with 'pgleader status' or 'pgleader runs'" },
	{ { "--nonblock" }, EX_USAGE,
	  "no command given (usage: pgleader [OPTION]... [--] COMMAND [ARG]...)" },
	{ { "--" }, EX_USAGE,
	  "no command given (usage: pgleader [OPTION]... [--] COMMAND [ARG]...)" },
	{ { "--ping-interval", "x", "true" }, EX_USAGE,
	  "--ping-interval: invalid duration \"x\" (examples: 250ms, 5s, 2m)" },
	{ { "--fo\x1b[2Jo", "true" }, EX_USAGE,
	  "unknown option --fo?[2Jo; see pgleader --help" },
	{ { "-\x01", "true" }, EX_USAGE, "unknown option -?; see pgleader --help" },
	{ { "--ping\n", "true" }, EX_USAGE, "unknown option --ping?; see pgleader --help" },
	{ { "--log-level", "a\nb\tc", "true" }, EX_USAGE,
	  "--log-level: invalid value \"a?b?c\" (expected error, warning, notice, info, debug)" },
	{ { "--help", "--bogus" }, CONFIG_HELP, NULL },
	{ { "--bogus", "--help" }, EX_USAGE, "unknown option --bogus; see pgleader --help" },
	{ { "-h" }, CONFIG_HELP, NULL },
	{ { "--ping-interval=x", "-h" }, CONFIG_HELP, NULL }, /* values are checked later */
	{ { "-c", "/nonexistent", "-h" }, CONFIG_HELP, NULL },
	{ { "-V" }, CONFIG_VERSION, NULL },
	{ { "status", "--version" }, CONFIG_VERSION, NULL },
	{ { "--version", "true" }, CONFIG_VERSION, NULL },
};

START_TEST(options)
{
	struct config cfg;
	char err[ERRLEN];
	int result = load_args(&cfg, err, option_cases[_i].args);

	ck_assert_msg(result == option_cases[_i].result, "%d: %s", result, err);
	if (option_cases[_i].error)
		ck_assert_str_eq(err, option_cases[_i].error);
	config_free(&cfg);
}
END_TEST

static const struct {
	const char *args[8];
	int result;
	bool status, json;
	const char *command, *error;
} status_cases[] = {
	{ { "status" }, CONFIG_OK, true, false, "", NULL },
	{ { "status", "--json" }, CONFIG_OK, true, true, "", NULL },
	{ { "--json", "status" }, CONFIG_OK, true, true, "", NULL },
	{ { "-d", "host=x", "status", "-q", "--json" }, CONFIG_OK, true, true, "", NULL },
	{ { "status", "--" }, CONFIG_OK, true, false, "", NULL },
	{ { "-d", "--", "status" }, CONFIG_OK, true, false, "", NULL }, /* "--" is -d's */
	{ { "--", "status" }, CONFIG_OK, false, false, "status", NULL },
	{ { "--", "status", "--json" }, CONFIG_OK, false, false, "status|--json", NULL },
	{ { "echo", "status" }, CONFIG_OK, false, false, "echo|status", NULL },
	{ { "Status" }, CONFIG_OK, false, false, "Status", NULL },
	{ { "status", "foo" }, EX_USAGE, false, false, NULL,
	  "status takes no arguments (got \"foo\")" },
	{ { "status", "--", "foo" }, EX_USAGE, false, false, NULL,
	  "status takes no arguments (got \"foo\")" },
	{ { "status", "--bogus" }, EX_USAGE, false, false, NULL,
	  "unknown option --bogus; see pgleader --help" },
	{ { "status", "--ping-interval=0" }, EX_USAGE, false, false, NULL,
	  "--ping-interval: must be greater than 0" },
	{ { "status", "--server-lease=1s" }, EX_CONFIG, false, false, NULL,
	  "server_lease 1s must be greater than ping_interval 1s * ping_failures 3 + ping_timeout 2s + grace_period 8s = 13s" },
	{ { "--json", "--", "status" }, EX_USAGE, false, false, NULL,
	  "--json is only valid with 'pgleader status' or 'pgleader runs'" },
	{ { "status", "--watch" }, CONFIG_OK, true, false, "", NULL },
	{ { "--watch", "status", "--json" }, CONFIG_OK, true, true, "", NULL },
	{ { "--watch", "true" }, EX_USAGE, false, false, NULL,
	  "--watch is only valid with 'pgleader status'" },
	{ { "status", "--watch=yes" }, EX_USAGE, false, false, NULL,
	  "--watch takes no value" },
};

START_TEST(status_mode)
{
	struct config cfg;
	char err[ERRLEN];
	int result = load_args(&cfg, err, status_cases[_i].args);

	ck_assert_msg(result == status_cases[_i].result, "%d: %s", result, err);
	if (result != CONFIG_OK) {
		ck_assert_str_eq(err, status_cases[_i].error);
		return;
	}
	ck_assert_int_eq(cfg.status_mode, status_cases[_i].status);
	ck_assert_int_eq(cfg.json, status_cases[_i].json);
	ck_assert_int_eq(cfg.watch, strcmp(status_cases[_i].args[0], "--watch") == 0 ||
				    strcmp(status_cases[_i].args[1] ? status_cases[_i].args[1]
								    : "", "--watch") == 0);
	if (cfg.status_mode)
		ck_assert_ptr_null(cfg.command);
	ck_assert_str_eq(join(cfg.command), status_cases[_i].command);
	config_free(&cfg);
}
END_TEST

START_TEST(status_ignores_file_command)
{
	struct config cfg;
	char err[ERRLEN];
	const char *path = write_file("[pgleader]\ncommand = 'broken\ndsn = x\n");

	ck_assert_int_eq(load(&cfg, err, "-c", path, "status", NULL), CONFIG_OK);
	ck_assert_ptr_null(cfg.command);
	ck_assert_str_eq(cfg.dsn, "x");
	config_free(&cfg);
}
END_TEST

static const struct {
	const char *args[8];
	int level;
} verbosity_cases[] = {
	{ { "true" }, LOG_LEVEL_INFO },
	{ { "-v", "true" }, LOG_LEVEL_DEBUG },
	{ { "-vvvv", "true" }, LOG_LEVEL_DEBUG },
	{ { "-q", "true" }, LOG_LEVEL_NOTICE },
	{ { "-qqqqqqqq", "true" }, LOG_LEVEL_ERROR },
	{ { "--quiet", "--quiet", "-v", "true" }, LOG_LEVEL_NOTICE },
	{ { "-v", "--log-level=error", "true" }, LOG_LEVEL_WARNING },
	{ { "--log-level=debug", "-q", "-q", "true" }, LOG_LEVEL_NOTICE },
	{ { "--log-level=warning", "--verbose", "true" }, LOG_LEVEL_NOTICE },
	{ { "-q", "true", "-v" }, LOG_LEVEL_NOTICE }, /* -v is the command's */
};

START_TEST(verbosity)
{
	struct config cfg;
	char err[ERRLEN];

	ck_assert_int_eq(load_args(&cfg, err, verbosity_cases[_i].args), CONFIG_OK);
	ck_assert_int_eq(cfg.log_level, verbosity_cases[_i].level);
	config_free(&cfg);
}
END_TEST

START_TEST(verbosity_applies_after_all_layers)
{
	struct config cfg;
	char err[ERRLEN];

	setenv("PGLEADER_LOG_LEVEL", "warning", 1);
	ck_assert_int_eq(load(&cfg, err, "-v", "-c",
			      write_file("[pgleader]\nlog_level = error\ncommand = x\n"),
			      NULL), CONFIG_OK);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_NOTICE);
	config_free(&cfg);
}
END_TEST

START_TEST(shell_keeps_the_line_whole)
{
	struct config cfg;
	char err[ERRLEN];
	const char *path = write_file("[pgleader]\ncommand = echo \"a  b\" | tr a b\n");

	ck_assert_int_eq(load(&cfg, err, "-c", path, "--shell", NULL), CONFIG_OK);
	ck_assert_str_eq(join(cfg.command), "echo \"a  b\" | tr a b");
	ck_assert_ptr_null(cfg.command[1]);
	config_free(&cfg);

	setenv("PGLEADER_SHELL", "true", 1);
	ck_assert_int_eq(load(&cfg, err, "-c", path, NULL), CONFIG_OK);
	ck_assert_ptr_null(cfg.command[1]);
	config_free(&cfg);

	/* from argv the words are joined into one script for sh -c */
	ck_assert_int_eq(load(&cfg, err, "--", "echo $X", "y", NULL), CONFIG_OK);
	ck_assert_str_eq(cfg.command[0], "echo $X y");
	ck_assert_ptr_null(cfg.command[1]);
	ck_assert(cfg.top.shell);
	config_free(&cfg);

	setenv("PGLEADER_COMMAND", "a 'b", 1);
	setenv("PGLEADER_SHELL", "no", 1);
	ck_assert_int_eq(load(&cfg, err, NULL), EX_CONFIG);
	ck_assert_str_eq(err, "PGLEADER_COMMAND: unterminated single quote");
}
END_TEST

/* ---- cross-field rules ---- */

static const struct {
	const char *args[8];
	int result;
	const char *error;
} timing_cases[] = {
	{ { NULL }, CONFIG_OK, NULL },
	{ { "--server-lease=13s" }, EX_CONFIG,
	  "server_lease 13s must be greater than ping_interval 1s * ping_failures 3 + ping_timeout 2s + grace_period 8s = 13s" },
	{ { "--server-lease=13001ms" }, CONFIG_OK, NULL },
	{ { "--server-lease=0", "--grace-period=720h" }, CONFIG_OK, NULL },
	{ { "--ping-interval=1.5s", "--ping-failures=4", "--ping-timeout=250ms",
	    "--grace-period=2m", "--server-lease=2m" }, EX_CONFIG,
	  "server_lease 2m must be greater than ping_interval 1.5s * ping_failures 4 + ping_timeout 250ms + grace_period 2m = 126.25s" },
	{ { "--grace-period=0", "--ping-timeout=1ms", "--server-lease=3002ms" },
	  CONFIG_OK, NULL },
	{ { "--grace-period=0", "--ping-timeout=1ms", "--server-lease=3.001s" },
	  EX_CONFIG,
	  "server_lease 3.001s must be greater than ping_interval 1s * ping_failures 3 + ping_timeout 1ms + grace_period 0 = 3.001s" },
	{ { "--server-lease=90" }, CONFIG_OK, NULL }, /* a bare number: seconds */
	{ { "--ping-interval=720h", "--ping-failures=1000", "--ping-timeout=720h",
	    "--grace-period=720h", "--server-lease=596h" }, EX_CONFIG,
	  "server_lease 596h must be greater than ping_interval 720h * ping_failures 1000 + ping_timeout 720h + grace_period 720h = 721440h" },
	{ { "--ping-interval=720h", "--ping-failures=1000", "--server-lease=0" },
	  CONFIG_OK, NULL },
};

START_TEST(timing_rule)
{
	struct config cfg;
	char err[ERRLEN];
	const char *args[10];
	size_t n = 0;
	int result;

	for (const char *const *a = timing_cases[_i].args; *a; a++)
		args[n++] = *a;
	args[n++] = "true";
	args[n] = NULL;
	result = load_args(&cfg, err, args);
	ck_assert_msg(result == timing_cases[_i].result, "%d: %s", result, err);
	if (timing_cases[_i].error)
		ck_assert_str_eq(err, timing_cases[_i].error);
	config_free(&cfg);
}
END_TEST

/* args go before the command "true", or end with "status"; NULL error:
 * loads. */
static const struct {
	const char *args[10];
	int result;
	const char *error;
} failsafe_cases[] = {
#define FS "--http-addr=:8008", "--failsafe-secret-file=/secret", "--node-id=a"
	{ { FS, "--failsafe-peers=a=h:8008" }, CONFIG_OK, NULL },
	{ { FS, "--failsafe-peers=b=h:1, a=h:8008 ,c=[::1]:3" }, CONFIG_OK, NULL },
	{ { FS, "--failsafe-peers=" }, CONFIG_OK, NULL }, /* off */
	{ { "--failsafe-peers=a=h:8008", "--node-id=a", "--failsafe-secret-file=/s" },
	  EX_CONFIG, "failsafe_peers needs http_addr: the members talk over HTTP" },
	{ { "--failsafe-peers=a=h:8008", "--node-id=a", "--http-addr=:1" },
	  EX_CONFIG, "failsafe_peers needs failsafe_secret_file" },
	{ { FS, "--failsafe-peers=b=h:1,c=h:2" }, EX_CONFIG,
	  "failsafe_peers must list this node, node_id \"a\"" },
	{ { FS, "--failsafe-peers=A=h:1" }, EX_CONFIG,
	  "failsafe_peers must list this node, node_id \"a\"" },
	{ { FS, "--failsafe-peers=a=h:8008", "--failsafe-ttl=11s" }, EX_CONFIG,
	  "failsafe_ttl 11s must be greater than ping_interval 1s + ping_timeout 2s + grace_period 8s = 11s" },
	{ { FS, "--failsafe-peers=a=h:8008", "--failsafe-ttl=11001ms" }, CONFIG_OK, NULL },
	{ { FS, "--failsafe-peers=a=h:8008", "--ping-interval=250ms", "--ping-timeout=500ms",
	    "--grace-period=2s", "--failsafe-ttl=2.75s", "--server-lease=0" },
	  EX_CONFIG,
	  "failsafe_ttl 2.75s must be greater than ping_interval 250ms + ping_timeout 500ms + grace_period 2s = 2.75s" },
	{ { FS, "--failsafe-peers=a", "--failsafe-ttl=1s" }, EX_USAGE,
	  "--failsafe-peers: member \"a\" is not ID=HOST:PORT" },
	{ { FS, "--failsafe-peers=a=h:1,,b=h:2" }, EX_USAGE,
	  "--failsafe-peers: empty member in the list (expected ID=HOST:PORT,...)" },
	{ { FS, "--failsafe-peers=a=h:1," }, EX_USAGE,
	  "--failsafe-peers: empty member in the list (expected ID=HOST:PORT,...)" },
	{ { FS, "--failsafe-peers==h:1" }, EX_USAGE,
	  "--failsafe-peers: node id \"\" must have 1 to 54 characters" },
	{ { FS, "--failsafe-peers=a b=h:1" }, EX_USAGE,
	  "--failsafe-peers: node id \"a b\" may hold only printable ASCII without spaces" },
	{ { FS, "--failsafe-peers=a=h" }, EX_USAGE,
	  "--failsafe-peers: member a: invalid address \"h\": no :PORT" },
	{ { FS, "--failsafe-peers=a=:8008" }, EX_USAGE,
	  "--failsafe-peers: member a: invalid address \":8008\": no host before :PORT" },
	{ { FS, "--failsafe-peers=a=h:1,b=h:99999" }, EX_USAGE,
	  "--failsafe-peers: member b: invalid address \"h:99999\": the port must be a number from 1 to 65535" },
	{ { FS, "--failsafe-peers=a=h:1,b=x:2,a=y:3" }, EX_USAGE,
	  "--failsafe-peers: node id \"a\" is listed twice" },
	/* this node's entry is where its http_addr listens, and nobody else's
	 * (issue 17 item 6.9) */
	{ { "--http-addr=127.0.0.1:8008", "--failsafe-secret-file=/s", "--node-id=a",
	    "--failsafe-peers=a=127.0.0.1:8009,b=127.0.0.1:8010" }, EX_CONFIG,
	  "failsafe_peers: this node's member \"a\" is at 127.0.0.1:8009, but its http_addr is 127.0.0.1:8008" },
	{ { "--http-addr=10.0.0.1:8008", "--failsafe-secret-file=/s", "--node-id=a",
	    "--failsafe-peers=a=10.0.0.2:8008,b=10.0.0.1:8009" }, EX_CONFIG,
	  "failsafe_peers: this node's member \"a\" is at 10.0.0.2:8008, but its http_addr is 10.0.0.1:8008" },
	{ { "--http-addr=127.0.0.1:8008", "--failsafe-secret-file=/s", "--node-id=a",
	    "--failsafe-peers=a=127.0.0.1:8008,b=127.0.0.1:8008" }, EX_CONFIG,
	  "failsafe_peers: member \"b\" is at 127.0.0.1:8008, this node's own address" },
	{ { FS, "--failsafe-peers=a=10.0.0.1:8008,b=127.0.0.1:8008" }, EX_CONFIG,
	  "failsafe_peers: member \"b\" is at 127.0.0.1:8008, this node's own address" },
	{ { FS, "--failsafe-peers=a=10.0.0.1:8008,b=10.0.0.2:8008" }, CONFIG_OK, NULL },
	{ { "--http-addr=127.0.0.1:8008", "--failsafe-secret-file=/s", "--node-id=a",
	    "--failsafe-peers=a=127.0.0.1:8008,b=127.0.0.1:8009" }, CONFIG_OK, NULL },
	{ { "--http-addr=127.0.0.1:8008", "--failsafe-secret-file=/s", "--node-id=a",
	    "--failsafe-peers=a=localhost:8008,b=127.0.0.1:8009" }, CONFIG_OK, NULL },
	{ { "--http-addr=127.0.0.1:8008", "--failsafe-secret-file=/s", "--node-id=a",
	    "--failsafe-peers=a=127.0.0.1:1,b=127.0.0.1:8008", "status" }, CONFIG_OK, NULL },
	/* status may run anywhere: it need not be a member */
	{ { FS, "--failsafe-peers=b=h:1", "status" }, CONFIG_OK, NULL },
	{ { FS, "--failsafe-peers=b=h:1", "--failsafe-ttl=1s", "status" }, EX_CONFIG,
	  "failsafe_ttl 1s must be greater than ping_interval 1s + ping_timeout 2s + grace_period 8s = 11s" },
#undef FS
};

START_TEST(failsafe_rules)
{
	struct config cfg;
	char err[ERRLEN];
	const char *args[12];
	size_t n = 0;
	int result;

	for (const char *const *a = failsafe_cases[_i].args; *a; a++)
		args[n++] = *a;
	if (strcmp(args[n - 1], "status") != 0)
		args[n++] = "true";
	args[n] = NULL;
	result = load_args(&cfg, err, args);
	ck_assert_msg(result == failsafe_cases[_i].result, "%d: %s", result, err);
	if (failsafe_cases[_i].error)
		ck_assert_str_eq(err, failsafe_cases[_i].error);
	config_free(&cfg);
}
END_TEST

/* The list as the failsafe module gets it, from every layer. */
START_TEST(failsafe_peers_parsed)
{
	struct config cfg;
	char err[ERRLEN];
	const char *path = write_file("[pgleader]\nhttp_addr = [::]:18008\n"
				      "failsafe_secret_file = /etc/pgleader/secret\n"
				      "failsafe_peers = db-1=10.0.0.1:8008, db-2=[fe80::2]:18008 ,"
				      "\tdb-3=node3.example:1\n"
				      "node_id = db-2\ncommand = x\n");

	ck_assert_msg(load(&cfg, err, "-c", path, NULL) == CONFIG_OK, "%s", err);
	ck_assert_uint_eq(cfg.n_peers, 3);
	ck_assert_str_eq(cfg.peers[0].node_id, "db-1");
	ck_assert_str_eq(cfg.peers[0].host, "10.0.0.1");
	ck_assert_str_eq(cfg.peers[0].port, "8008");
	ck_assert_str_eq(cfg.peers[1].node_id, "db-2");
	ck_assert_str_eq(cfg.peers[1].host, "fe80::2");
	ck_assert_str_eq(cfg.peers[1].port, "18008");
	ck_assert_str_eq(cfg.peers[2].node_id, "db-3");
	ck_assert_str_eq(cfg.peers[2].host, "node3.example");
	ck_assert_str_eq(cfg.peers[2].port, "1");
	ck_assert_str_eq(cfg.http_addr, "[::]:18008");
	ck_assert_str_eq(cfg.failsafe_secret_file, "/etc/pgleader/secret");
	ck_assert_int_eq(cfg.failsafe_ttl_ms, 15000);
	config_free(&cfg);

	/* the command line's list replaces the file's */
	ck_assert_msg(load(&cfg, err, "-c", path, "--failsafe-peers=db-2=h:18008", NULL)
		      == CONFIG_OK, "%s", err);
	ck_assert_uint_eq(cfg.n_peers, 1);
	config_free(&cfg);

	/* off: nothing parsed */
	setenv("PGLEADER_FAILSAFE_PEERS", "db-2=h:1", 1);
	ck_assert_msg(load(&cfg, err, "-c", path, "--failsafe-peers=", NULL) == CONFIG_OK,
		      "%s", err);
	ck_assert_ptr_null(cfg.failsafe_peers);
	ck_assert_ptr_null(cfg.peers);
	ck_assert_uint_eq(cfg.n_peers, 0);
	config_free(&cfg);
}
END_TEST

/* ---- exit codes, one row per class of error ---- */

static const struct {
	const char *what;
	const char *file, *env_name, *env_value;
	const char *args[6];
	int result;
} exit_cases[] = {
	{ "loads", NULL, NULL, NULL, { "true" }, CONFIG_OK },
	{ "help", NULL, NULL, NULL, { "--help" }, CONFIG_HELP },
	{ "version", NULL, NULL, NULL, { "--version" }, CONFIG_VERSION },
	{ "unknown option", NULL, NULL, NULL, { "--bogus", "true" }, EX_USAGE },
	{ "missing value", NULL, NULL, NULL, { "--dsn" }, EX_USAGE },
	{ "bad option value", NULL, NULL, NULL, { "-k", "x", "true" }, EX_USAGE },
	{ "lock conflict, argv", NULL, NULL, NULL, { "-k", "1", "-n", "a", "true" },
	  EX_USAGE },
	{ "no command", NULL, NULL, NULL, { NULL }, EX_USAGE },
	{ "json without status", NULL, NULL, NULL, { "--json", "x" }, EX_USAGE },
	{ "word after status", NULL, NULL, NULL, { "status", "x" }, EX_USAGE },
	{ "bad file value", "[pgleader]\nacquire = x\n", NULL, NULL, { "true" },
	  EX_CONFIG },
	{ "unknown key", "[pgleader]\nx = 1\n", NULL, NULL, { "true" }, EX_CONFIG },
	{ "file without command", "[pgleader]\n", NULL, NULL, { NULL }, EX_CONFIG },
	{ "lock conflict, file", "[pgleader]\nlock_key = 1\nlock_name = a\n", NULL, NULL,
	  { "true" }, EX_CONFIG },
	{ "bad variable", NULL, "PGLEADER_RESTART", "sometimes", { "true" }, EX_CONFIG },
	{ "bad command variable", NULL, "PGLEADER_COMMAND", "\"", { NULL }, EX_CONFIG },
	{ "missing file", NULL, "PGLEADER_CONFIG", "/nonexistent/pgleader.conf",
	  { "true" }, EX_CONFIG },
	{ "timing rule", NULL, NULL, NULL, { "--server-lease=1s", "true" }, EX_CONFIG },
	{ "bad http_addr, argv", NULL, NULL, NULL, { "--http-addr=x", "true" }, EX_USAGE },
	{ "bad http_addr, file", "[pgleader]\nhttp_addr = x:0\n", NULL, NULL, { "true" },
	  EX_CONFIG },
	{ "bad http_addr, env", NULL, "PGLEADER_HTTP_ADDR", ":http", { "true" },
	  EX_CONFIG },
	{ "bad log_format", NULL, "PGLEADER_LOG_FORMAT", "xml", { "true" }, EX_CONFIG },
	{ "failsafe without http_addr", "[pgleader]\nfailsafe_peers = a=h:1\n", NULL, NULL,
	  { "--node-id=a", "--failsafe-secret-file=/s", "true" }, EX_CONFIG },
	{ "failsafe timing rule", NULL, "PGLEADER_FAILSAFE_TTL", "5s",
	  { "--node-id=a", "--failsafe-secret-file=/s", "--http-addr=:1",
	    "--failsafe-peers=a=h:1", "true" }, EX_CONFIG },
	{ "watch without status", NULL, NULL, NULL, { "--watch", "x" }, EX_USAGE },
	{ "empty command name, argv", NULL, NULL, NULL, { "--", "", "x" }, EX_USAGE },
	{ "empty command name, shell", NULL, NULL, NULL, { "--shell", "--", "" },
	  EX_USAGE },
	{ "empty command name, file", "[pgleader]\ncommand = ''\n", NULL, NULL, { NULL },
	  EX_CONFIG },
	{ "empty command name, env", NULL, "PGLEADER_COMMAND", "''", { NULL },
	  EX_CONFIG },
	{ "lock name not UTF-8, env", NULL, "PGLEADER_LOCK_NAME", "\xe9t\xe9", { "true" },
	  EX_CONFIG },
	{ "lock name not UTF-8, status", NULL, NULL, NULL,
	  { "status", "--lock-name", "\xff" }, EX_USAGE },
	{ "retry_interval too long, env", NULL, "PGLEADER_RETRY_INTERVAL", "597h",
	  { "true" }, EX_CONFIG },
	/* a command line mistake is a usage error, whatever else is wrong */
	{ "bad option value, bad file", "[pgleader]\nacquire = x\n", NULL, NULL,
	  { "-k", "x", "true" }, EX_USAGE },
	{ "bad option value, bad variable", NULL, "PGLEADER_RESTART", "x",
	  { "--restart=x", "true" }, EX_USAGE },
	{ "lock conflict, argv, bad file", "[pgleader]\nx = 1\n", NULL, NULL,
	  { "-k", "1", "-n", "a", "true" }, EX_USAGE },
};

START_TEST(exit_codes)
{
	struct config cfg;
	char err[ERRLEN];
	const char *args[10];
	size_t n = 0;
	int result;

	if (exit_cases[_i].file) {
		args[n++] = "-c";
		args[n++] = write_file(exit_cases[_i].file);
	}
	if (exit_cases[_i].env_name)
		setenv(exit_cases[_i].env_name, exit_cases[_i].env_value, 1);
	for (const char *const *a = exit_cases[_i].args; *a; a++)
		args[n++] = *a;
	args[n] = NULL;
	result = load_args(&cfg, err, args);
	ck_assert_msg(result == exit_cases[_i].result, "%s: got %d (%s)",
		      exit_cases[_i].what, result, err);
	if (result >= EX_USAGE)
		ck_assert_msg(err[0] && !strchr(err, '\n'), "%s: one line", exit_cases[_i].what);
	config_free(&cfg);
}
END_TEST

START_TEST(failure_leaves_nothing)
{
	struct config cfg;
	char err[ERRLEN];
	static const struct config zero;

	ck_assert_int_eq(load(&cfg, err, "-d", "x", "-n", "y", "--server-lease=1s",
			      "true", NULL), EX_CONFIG);
	ck_assert_mem_eq(&cfg, &zero, sizeof(cfg));
	config_free(&cfg); /* harmless after a failure, and twice */
	config_free(&cfg);

	ck_assert_int_eq(config_load(&cfg, 0, NULL, err, sizeof(err)), EX_USAGE);
	ck_assert_int_eq(load(&cfg, err, "true", NULL), CONFIG_OK);
	config_free(&cfg);
	config_free(&cfg);
}
END_TEST

/* ---- DESIGN 10: schedules, jobs, the ledger's keys, subcommands ---- */

/* Each job as "NAME=COMMAND SCHEDULE TZ JITTER MAX_RUNTIME MISSED WINDOW
 * RERUN GRACE RESTART", "; " between jobs. */
static const char *jobs_text(const struct config *cfg)
{
	static char buf[2048];
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < cfg->n_jobs && n < sizeof(buf); i++) {
		const struct config_job *j = &cfg->jobs[i];

		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", i ? "; " : "");
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s=%s", j->name,
				      join(j->command));
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      " %s %s %lld %lld %d %lld %d %lld %d",
				      j->schedule ? j->schedule : "-", j->timezone,
				      (long long)j->jitter_ms, (long long)j->max_runtime_ms,
				      (int)j->missed, (long long)j->missed_window_ms,
				      j->rerun_interrupted, (long long)j->grace_period_ms,
				      (int)j->restart);
	}
	return buf;
}

/* A bad expression or zone: the schedule module words the reason; config
 * names where it came from and picks the exit code. */
static const struct {
	const char *file, *env_name, *env_value;
	const char *args[6];
	int result;
	const char *prefix; /* of the message, "FILE" for the path */
} schedule_value_cases[] = {
	{ NULL, NULL, NULL, { "--schedule", "* * *", "true" }, EX_USAGE, "--schedule: " },
	{ NULL, NULL, NULL, { "--schedule", "@fortnightly", "true" }, EX_USAGE,
	  "--schedule: " },
	{ NULL, NULL, NULL, { "--schedule", "@every soon", "true" }, EX_USAGE,
	  "--schedule: " },
	{ NULL, NULL, NULL, { "--timezone", "Mars/Olympus_Mons", "true" }, EX_USAGE,
	  "--timezone: " },
	{ NULL, NULL, NULL, { "--timezone=../../etc/passwd", "true" }, EX_USAGE,
	  "--timezone: " },
	{ "[pgleader]\nschedule = * *\ncommand = true\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:2: schedule: " },
	{ "[pgleader]\ncommand = true\ntimezone = Nowhere/City\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: timezone: " },
	{ NULL, "PGLEADER_SCHEDULE", "every day", { "true" }, EX_CONFIG,
	  "PGLEADER_SCHEDULE: " },
	{ NULL, "PGLEADER_TIMEZONE", "Europe/Nowhere", { "true" }, EX_CONFIG,
	  "PGLEADER_TIMEZONE: " },
	{ "[job.a]\ncommand = true\nschedule = 1 2 3\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: [job.a] schedule: " },
	{ "[job.a]\ncommand = true\nschedule = @daily\ntimezone = Europe/Nowhere\n",
	  NULL, NULL, { NULL }, EX_CONFIG, "FILE:4: [job.a] timezone: " },
	/* never runs, far too often, a bare number, nothing: refused */
	{ NULL, NULL, NULL, { "--schedule", "", "true" }, EX_USAGE,
	  "--schedule: must not be empty (leave it out for a command" },
	{ "[pgleader]\nschedule =\ncommand = true\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:2: schedule: must not be empty" },
	{ "[job.a]\ncommand = true\nschedule =\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: [job.a] schedule: must not be empty" },
	{ NULL, NULL, NULL, { "--schedule", "0 0 30 2 *", "true" }, EX_USAGE,
	  "--schedule: invalid schedule \"0 0 30 2 *\": no date matches it" },
	{ "[pgleader]\nschedule = 0 0 31 4 *\ncommand = true\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:2: schedule: invalid schedule \"0 0 31 4 *\": no date" },
	{ NULL, NULL, NULL, { "--schedule=@every 1ms", "true" }, EX_USAGE,
	  "--schedule: invalid schedule \"@every 1ms\": @every needs at" },
	{ "[job.a]\ncommand = true\nschedule = @every 5\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: [job.a] schedule: invalid schedule \"@every 5\": "
	  "@every needs a unit" },
	{ NULL, NULL, NULL, { "--schedule=0 0 * * * *", "true" }, EX_USAGE,
	  "--schedule: invalid schedule \"0 0 * * * *\": 6 fields, takes 5" },
	/* the command line's mistake is usage, whatever the file holds */
	{ "[pgleader]\ntimezone = Nowhere/City\n", NULL, NULL,
	  { "--schedule=x", "true" }, EX_USAGE, "--schedule: " },
	/* what loads */
	{ NULL, NULL, NULL, { "--schedule", "@every 90s", "true" }, CONFIG_OK, NULL },
	{ NULL, NULL, NULL, { "--schedule", "0 3 * * *", "--timezone", "Europe/Berlin",
			      "true" }, CONFIG_OK, NULL },
	{ "[job.a]\ncommand = true\nschedule = */15 * * * *\ntimezone = America/New_York\n",
	  NULL, NULL, { NULL }, CONFIG_OK, NULL },
};

static int load_case(struct config *cfg, char *err, const char *content,
		     const char *env_name, const char *env_value,
		     const char *const *args, const char **path)
{
	const char *argv[16];
	size_t n = 0;

	*path = NULL;
	if (content) {
		*path = write_file(content);
		argv[n++] = "-c";
		argv[n++] = *path;
	}
	if (env_name)
		setenv(env_name, env_value, 1);
	for (; *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return load_args(cfg, err, argv);
}

START_TEST(schedule_values)
{
	struct config cfg;
	char err[ERRLEN], prefix[ERRLEN * 2];
	const char *path;
	int result = load_case(&cfg, err, schedule_value_cases[_i].file,
			       schedule_value_cases[_i].env_name,
			       schedule_value_cases[_i].env_value,
			       schedule_value_cases[_i].args, &path);

	ck_assert_msg(result == schedule_value_cases[_i].result, "%d: %s", result, err);
	if (result == CONFIG_OK) {
		config_free(&cfg);
		return;
	}
	snprintf(prefix, sizeof(prefix), "%s", expand(schedule_value_cases[_i].prefix, path));
	ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s", err);
	ck_assert_msg(strlen(err) > strlen(prefix) + 3, "no reason: %s", err);
	ck_assert_msg(!strchr(err, '\n'), "one line: %s", err);
}
END_TEST

#define NAME63 "abcdefghij-ABCDEFGHIJ.0123456789_abcdefghij-ABCDEFGHIJ.01234567"
#define NAME64 NAME63 "8"

static const struct {
	const char *what, *file, *env_name, *env_value;
	const char *args[8];
	int result;
	const char *expect; /* jobs_text, or the message ("FILE" for the path) */
} job_cases[] = {
	/* inheritance: a section takes [pgleader]'s value, never the command
	 * line's, which sets the default job's alone */
	{ "inherit", "[pgleader]\ntimezone = Europe/Berlin\njitter = 5s\n"
	  "grace_period = 3s\nrestart = always\n"
	  "[job.refresh]\ncommand = ./refresh --all\nschedule = */15 * * * *\n"
	  "[job.clean]\ncommand = ./clean\nschedule = 0 3 * * *\ntimezone = UTC\n"
	  "jitter = 0\nmax_runtime = 1h\nmissed = skip\nmissed_window = 6h\n"
	  "rerun_interrupted = yes\ngrace_period = 30s\nrestart = no\n", NULL, NULL,
	  { "--restart=on-failure", "--grace-period=1s", "--", "./serve" }, CONFIG_OK,
	  "default=./serve - Europe/Berlin 5000 -1 0 -1 0 1000 1; "
	  "refresh=./refresh|--all */15 * * * * Europe/Berlin 5000 -1 0 -1 0 3000 2; "
	  "clean=./clean 0 3 * * * UTC 0 3600000 1 21600000 1 30000 0" },
	{ "environment sets the default job only", "[job.a]\ncommand = a\n",
	  "PGLEADER_TIMEZONE", "Asia/Tokyo", { "b" }, CONFIG_OK,
	  "default=b - Asia/Tokyo 0 -1 0 -1 0 8000 0; a=a - UTC 0 -1 0 -1 0 8000 0" },
	{ "default job's schedule", "[pgleader]\nschedule = @hourly\nmissed = skip\n"
	  "command = ./tick\n[job.b]\ncommand = b\n", NULL, NULL, { NULL }, CONFIG_OK,
	  "default=./tick @hourly UTC 0 -1 1 -1 0 8000 0; b=b - UTC 0 -1 1 -1 0 8000 0" },
	{ "sections alone", "[job.a]\ncommand = a 'b c'\n\n[job.b]\ncommand = b\n"
	  "schedule = @every 2s\n", NULL, NULL, { NULL }, CONFIG_OK,
	  "a=a|b c - UTC 0 -1 0 -1 0 8000 0; b=b @every 2s UTC 0 -1 0 -1 0 8000 0" },
	{ "[job.default] without a default job", "[job.default]\ncommand = d\n", NULL, NULL,
	  { NULL }, CONFIG_OK, "default=d - UTC 0 -1 0 -1 0 8000 0" },
	{ "longest name", "[job." NAME63 "]\ncommand = x\nschedule = @daily\njitter = 1m\n",
	  NULL, NULL, { NULL }, CONFIG_OK,
	  NAME63 "=x @daily UTC 60000 -1 0 -1 0 8000 0" },
	{ "shell keeps a section's line whole", "[job.a]\ncommand = a | b\nshell = on\n",
	  NULL, NULL, { NULL }, CONFIG_OK, "a=a | b - UTC 0 -1 0 -1 0 8000 0" },
	{ "a section inherits [pgleader]'s shell", "[pgleader]\nshell = on\n"
	  "[job.a]\ncommand = a | b\n", NULL, NULL, { NULL }, CONFIG_OK,
	  "a=a | b - UTC 0 -1 0 -1 0 8000 0" },
	{ "quoted shell characters are plain", "[job.a]\ncommand = psql -c 'select 1; select 2'"
	  " \"x|y\" a\\>b\n", NULL, NULL, { NULL }, CONFIG_OK,
	  "a=psql|-c|select 1; select 2|x|y|a>b - UTC 0 -1 0 -1 0 8000 0" },
	/* shell syntax without shell = on (DESIGN 13): refused, not split */
	{ "a crontab line as it is", "[job.cleanup]\ncommand = ./cleanup.sh >> out 2>&1\n",
	  NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:2: [job.cleanup] command: job cleanup: the command holds shell syntax '>>', which would be passed to it as plain arguments: set shell = on to run it with /bin/sh -c" },
	{ "--shell sets the default job's alone", "[job.a]\ncommand = a | b\n", NULL, NULL,
	  { "--shell" }, EX_CONFIG,
	  "FILE:2: [job.a] command: job a: the command holds shell syntax '|', which would be passed to it as plain arguments: set shell = on to run it with /bin/sh -c" },
	{ "[pgleader]'s command", "[pgleader]\ncommand = a; b\n", NULL, NULL, { NULL },
	  EX_CONFIG,
	  "FILE:2: command: job default: the command holds shell syntax ';', which would be passed to it as plain arguments: set shell = on to run it with /bin/sh -c" },
	{ "PGLEADER_COMMAND", NULL, "PGLEADER_COMMAND", "date > /tmp/x", { NULL }, EX_CONFIG,
	  "PGLEADER_COMMAND: job default: the command holds shell syntax '>', which would be passed to it as plain arguments: set shell = on to run it with /bin/sh -c" },
	{ "command substitution in double quotes", "[job.a]\ncommand = echo \"$(date)\"\n",
	  NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:2: [job.a] command: job a: the command holds shell syntax '$(', which would be passed to it as plain arguments: set shell = on to run it with /bin/sh -c" },
	{ "the command line's words are the user's shell's", NULL, NULL, NULL,
	  { "--", "sh", "-c", "a | b" }, CONFIG_OK, "default=sh|-c|a | b - UTC 0 -1 0 -1 0 8000 0" },
	{ "file jitter reaches a scheduled section", "[pgleader]\njitter = 2s\n"
	  "[job.a]\ncommand = a\nschedule = @daily\n", NULL, NULL, { NULL }, CONFIG_OK,
	  "a=a @daily UTC 2000 -1 0 -1 0 8000 0" },
	/* what a section refuses, with its file and line */
	{ "unknown key", "[job.a]\ncommand = a\nlock_key = 1\n", NULL, NULL, { NULL },
	  EX_CONFIG,
	  "FILE:3: unknown key \"lock_key\" in [job.a] (a job takes command, schedule, timezone, jitter, max_runtime, missed, missed_window, rerun_interrupted, overlap, retries, retry_delay, retry_max_delay, on_failure, on_failure_timeout, grace_period, restart, output, output_tail, shell, environment, environment_file, working_directory, user, group)" },
	/* issue 24: restart with a schedule was ignored without a word */
	{ "restart with a schedule", "[job.a]\ncommand = a\nschedule = @daily\n"
	  "restart = on-failure\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:4: [job.a] restart is for a job without a schedule; a scheduled job tries a failed run again with retries = N" },
	{ "--restart with --schedule", NULL, NULL, NULL,
	  { "--schedule", "@daily", "--restart", "always", "x" }, EX_USAGE,
	  "--restart is for a command without a schedule; a scheduled job tries a failed run again with --retries N" },
	{ "a section's retries", "[job.a]\ncommand = a\nschedule = @daily\nretries = 2\n"
	  "on_failure = echo x\n[job.b]\ncommand = b\nretries = 1\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:8: [job.b] retries needs a schedule in the section" },
	{ "a likely typo", "[job.a]\ncommand = a\nMax-Runtime = 1h\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: unknown key \"Max-Runtime\" in [job.a] (did you mean max_runtime?)" },
	{ "unknown key", "[job.a]\ncommand = a\nschedul = @daily\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: unknown key \"schedul\" in [job.a] (did you mean schedule?)" },
	{ "duplicate section", "[job.a]\ncommand = a\n[job.b]\ncommand = b\n[job.a]\n", NULL,
	  NULL, { NULL }, EX_CONFIG, "FILE:5: [job.a] is already defined on line 1" },
	{ "no command", "[job.a]\nschedule = @daily\n[job.b]\ncommand = b\n", NULL, NULL,
	  { NULL }, EX_CONFIG, "FILE:1: [job.a] has no command" },
	{ "empty section", "[pgleader]\ncommand = x\n[job.a]\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: [job.a] has no command" },
	{ "empty name", "[job.]\ncommand = a\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:1: invalid job name \"\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "name with a space", "[job.a b]\ncommand = a\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:1: invalid job name \"a b\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "name with a slash", "[job.a/b]\ncommand = a\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:1: invalid job name \"a/b\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "name too long", "[job." NAME64 "]\ncommand = a\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:1: invalid job name \"abcdefghij-ABCDEFGHIJ.0123456789_abcdefg...\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ "default clashes", "[job.default]\ncommand = d\n", NULL, NULL, { "x" },
	  EX_CONFIG,
	  "FILE:1: [job.default] clashes with the default job (the command line's or [pgleader]'s command); rename the section" },
	{ "key twice", "[job.a]\ncommand = a\ncommand = b\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: [job.a] command: already set on line 2; set it only once" },
	{ "bad value", "[job.a]\ncommand = a\nschedule = @daily\njitter = soon\n", NULL, NULL,
	  { NULL }, EX_CONFIG,
	  "FILE:4: [job.a] jitter: invalid duration \"soon\" (examples: 250ms, 5s, 2m)" },
	{ "bad restart", "[job.a]\ncommand = a\nrestart = sometimes\n", NULL, NULL,
	  { NULL }, EX_CONFIG,
	  "FILE:3: [job.a] restart: invalid value \"sometimes\" (expected no, on-failure, always)" },
	{ "a schedule's key without one", "[job.a]\ncommand = a\nmissed = skip\n", NULL,
	  NULL, { NULL }, EX_CONFIG,
	  "FILE:3: [job.a] missed needs a schedule in the section" },
	{ "bad command", "[job.a]\n\ncommand = a 'b\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:3: [job.a] command: unterminated single quote" },
	{ "empty command name", "[job.a]\ncommand = '' x\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:2: [job.a] command: empty command name" },
	{ "empty command", "[job.a]\ncommand =\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:2: [job.a] command: empty command" },
	{ "not a job section", "[jobs.a]\ncommand = a\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:1: unknown section [jobs.a] (expected [pgleader] or [job.NAME])" },
	{ "text after the header", "[job.a] x\ncommand = a\n", NULL, NULL, { NULL },
	  EX_CONFIG, "FILE:1: unexpected text after [job.a]" },
	/* keys of a schedule where none can use them */
	{ "--jitter without a schedule", NULL, NULL, NULL, { "--jitter=1s", "true" },
	  EX_USAGE,
	  "--jitter needs a schedule: it applies to the default job only, which has none" },
	{ "--max-runtime=none is still given", NULL, NULL, NULL,
	  { "--max-runtime=none", "true" }, EX_USAGE,
	  "--max-runtime needs a schedule: it applies to the default job only, which has none" },
	{ "--missed for the default job, scheduled sections",
	  "[job.a]\ncommand = a\nschedule = @daily\n", NULL, NULL,
	  { "--missed=skip", "true" }, EX_USAGE,
	  "--missed needs a schedule: it applies to the default job only, which has none" },
	{ "variable without a schedule", NULL, "PGLEADER_RERUN_INTERRUPTED", "yes",
	  { "true" }, EX_CONFIG,
	  "PGLEADER_RERUN_INTERRUPTED needs a schedule: it applies to the default job only, which has none" },
	{ "file key without a schedule", "[pgleader]\ncommand = true\nmissed_window = 1h\n",
	  NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:3: missed_window needs a schedule: no job it applies to has one" },
	{ "file key every section overrides", "[pgleader]\njitter = 1s\n[job.a]\ncommand = a\n"
	  "schedule = @daily\njitter = 2s\n", NULL, NULL, { NULL }, EX_CONFIG,
	  "FILE:2: jitter needs a schedule: no job it applies to has one" },
	{ "--schedule with no default job", "[job.a]\ncommand = a\n", NULL, NULL,
	  { "--schedule=@daily" }, EX_USAGE,
	  "--schedule: no job to schedule: there is no COMMAND and no 'command' key (a [job.NAME] section takes its own schedule)" },
	{ "schedule in [pgleader] with sections only",
	  "[pgleader]\nschedule = @daily\n[job.a]\ncommand = a\n", NULL, NULL, { NULL },
	  EX_CONFIG,
	  "FILE:2: schedule: no job to schedule: there is no COMMAND and no 'command' key (a [job.NAME] section takes its own schedule)" },
	/* --once-per */
	{ "--once-per alone", NULL, NULL, NULL, { "--once-per=1h", "true" }, EX_USAGE,
	  "--once-per needs --nonblock or --wait-timeout (it is for one-shots)" },
	{ "once_per variable alone", NULL, "PGLEADER_ONCE_PER", "1h", { "true" },
	  EX_CONFIG, "PGLEADER_ONCE_PER needs --nonblock or --wait-timeout (it is for one-shots)" },
	{ "--once-per and a schedule", NULL, NULL, NULL,
	  { "--once-per=1h", "--nonblock", "--schedule=@hourly", "true" }, EX_USAGE,
	  "--once-per excludes a schedule (--schedule)" },
	{ "once_per and a file's schedule", "[pgleader]\nschedule = @hourly\nonce_per = 1h\n",
	  NULL, NULL, { "--wait-timeout=0", "true" }, EX_CONFIG,
	  "FILE:3: once_per excludes a schedule (FILE:2: schedule)" },
	{ "once_per and sections", "[pgleader]\nonce_per = 1h\n\n[job.a]\ncommand = a\n",
	  NULL, NULL, { "--nonblock", "true" }, EX_CONFIG,
	  "FILE:2: once_per excludes [job.NAME] sections (FILE:4)" },
	{ "--once-per --nonblock", NULL, NULL, NULL, { "--once-per=1h", "--nonblock", "t" },
	  CONFIG_OK, "default=t - UTC 0 -1 0 -1 0 8000 0" },
	{ "--once-per --wait-timeout", NULL, NULL, NULL,
	  { "--once-per=15m", "--wait-timeout=30s", "t" }, CONFIG_OK,
	  "default=t - UTC 0 -1 0 -1 0 8000 0" },
	{ "--once-per=0 is off", NULL, NULL, NULL, { "--once-per=0", "t" }, CONFIG_OK,
	  "default=t - UTC 0 -1 0 -1 0 8000 0" },
	/* priority 0 never leads (DESIGN 11) */
	{ "--priority 0 --nonblock", NULL, NULL, NULL, { "--priority=0", "--nonblock", "t" },
	  EX_USAGE, "--priority 0 never leads: it cannot run a one-shot (--nonblock, "
	  "--wait-timeout)" },
	{ "priority 0 in a file, --wait-timeout", "[pgleader]\npriority = 0\n", NULL, NULL,
	  { "--wait-timeout=5s", "t" }, EX_CONFIG,
	  "FILE:2: priority 0 never leads: it cannot run a one-shot (--nonblock, "
	  "--wait-timeout)" },
	{ "--priority 0 as a daemon", NULL, NULL, NULL, { "--priority=0", "t" }, CONFIG_OK,
	  "default=t - UTC 0 -1 0 -1 0 8000 0" },
	/* poll_dsn is for the standbys outside the queue (DESIGN 15) */
	{ "--poll-dsn --acquire poll", NULL, NULL, NULL,
	  { "--poll-dsn=port=6432", "--acquire=poll", "t" }, EX_USAGE,
	  "--poll-dsn needs acquire = wait (it is where the standbys outside the "
	  "lock's queue poll)" },
	{ "poll_dsn in a file, acquire poll", "[pgleader]\npoll_dsn = port=6432\n"
	  "acquire = poll\n", NULL, NULL, { "t" }, EX_CONFIG,
	  "FILE:2: poll_dsn needs acquire = wait (it is where the standbys outside "
	  "the lock's queue poll)" },
	{ "--poll-dsn as a daemon", NULL, NULL, NULL, { "--poll-dsn=port=6432", "t" },
	  CONFIG_OK, "default=t - UTC 0 -1 0 -1 0 8000 0" },
};

START_TEST(jobs)
{
	struct config cfg;
	char err[ERRLEN];
	const char *path;
	int result = load_case(&cfg, err, job_cases[_i].file,
			       job_cases[_i].env_name,
			       job_cases[_i].env_value, job_cases[_i].args,
			       &path);

	ck_assert_msg(result == job_cases[_i].result, "%s: %d: %s", job_cases[_i].what,
		      result, err);
	if (result != CONFIG_OK) {
		ck_assert_str_eq(err, expand(job_cases[_i].expect, path));
		return;
	}
	ck_assert_str_eq(jobs_text(&cfg), job_cases[_i].expect);
	/* the default job's command is the daemon's single command */
	if (cfg.command) {
		ck_assert_str_eq(cfg.jobs[0].name, "default");
		ck_assert_ptr_eq(cfg.jobs[0].command, cfg.command);
	}
	ck_assert_int_eq(cfg.job_sections, job_cases[_i].file &&
					   strstr(job_cases[_i].file, "[job."));
	config_free(&cfg);
}
END_TEST

static const struct {
	const char *file;
	const char *args[8];
	int result;
	enum config_mode mode;
	const char *expect; /* "json job since print_sql", or the message */
} subcommand_cases[] = {
	{ NULL, { "runs" }, CONFIG_OK, CONFIG_MODE_RUNS, "0 (null) -1 0" },
	{ NULL, { "runs", "--job", "nightly.clean", "--since", "24h", "--json" }, CONFIG_OK,
	  CONFIG_MODE_RUNS, "1 nightly.clean 86400000 0" },
	{ NULL, { "--json", "-d", "x", "runs", "--since=0" }, CONFIG_OK, CONFIG_MODE_RUNS,
	  "1 (null) 0 0" },
	{ NULL, { "init-db" }, CONFIG_OK, CONFIG_MODE_INIT_DB, "0 (null) -1 0" },
	{ NULL, { "init-db", "--print-sql", "--schema", "ops" }, CONFIG_OK,
	  CONFIG_MODE_INIT_DB, "0 (null) -1 1" },
	{ NULL, { "init-db", "--print-sql", "--grant-to", "app" }, CONFIG_OK,
	  CONFIG_MODE_INIT_DB, "0 (null) -1 1" },
	{ NULL, { "status", "--json" }, CONFIG_OK, CONFIG_MODE_STATUS, "1 (null) -1 0" },
	{ NULL, { "--", "runs" }, CONFIG_OK, CONFIG_MODE_DAEMON, "0 (null) -1 0" },
	{ NULL, { "init-db", "--" }, CONFIG_OK, CONFIG_MODE_INIT_DB, "0 (null) -1 0" },
	/* a shared file's daemon rules do not stop a subcommand */
	{ "[pgleader]\nonce_per = 1h\njitter = 1s\n[job.a]\ncommand = a\n",
	  { "runs", "--job", "a" }, CONFIG_OK, CONFIG_MODE_RUNS, "0 a -1 0" },
	{ NULL, { "runs", "foo" }, EX_USAGE, 0, "runs takes no arguments (got \"foo\")" },
	{ NULL, { "init-db", "--", "x" }, EX_USAGE, 0,
	  "init-db takes no arguments (got \"x\")" },
	{ NULL, { "status", "--nonblock" }, EX_USAGE, 0,
	  "--nonblock is not valid with 'pgleader status'" },
	{ NULL, { "--nonblock", "init-db" }, EX_USAGE, 0,
	  "--nonblock is not valid with 'pgleader init-db'" },
	{ NULL, { "runs", "--wait-timeout=1s" }, EX_USAGE, 0,
	  "--wait-timeout is not valid with 'pgleader runs'" },
	{ NULL, { "runs", "--schedule", "@daily" }, EX_USAGE, 0,
	  "--schedule is not valid with 'pgleader runs'" },
	{ NULL, { "status", "--once-per", "1h" }, EX_USAGE, 0,
	  "--once-per is not valid with 'pgleader status'" },
	{ NULL, { "init-db", "--keep-runs=1h" }, EX_USAGE, 0,
	  "--keep-runs is not valid with 'pgleader init-db'" },
	{ NULL, { "status", "--rerun-interrupted" }, EX_USAGE, 0,
	  "--rerun-interrupted is not valid with 'pgleader status'" },
	{ NULL, { "runs", "--watch" }, EX_USAGE, 0,
	  "--watch is only valid with 'pgleader status'" },
	{ NULL, { "init-db", "--job", "a" }, EX_USAGE, 0,
	  "--job is only valid with 'pgleader runs', 'pause', 'resume' or 'trigger'" },
	{ NULL, { "pause", "--job", "a" }, CONFIG_OK, CONFIG_MODE_PAUSE, "0 a -1 0" },
	{ NULL, { "resume" }, CONFIG_OK, CONFIG_MODE_RESUME, "0 (null) -1 0" },
	{ NULL, { "switchover" }, CONFIG_OK, CONFIG_MODE_SWITCHOVER, "0 (null) -1 0" },
	{ NULL, { "switchover", "--job", "a" }, EX_USAGE, 0,
	  "--job is only valid with 'pgleader runs', 'pause', 'resume' or 'trigger'" },
	{ NULL, { "pause", "--to", "a" }, EX_USAGE, 0,
	  "--to is only valid with 'pgleader switchover'" },
	{ NULL, { "--wait", "5s", "status" }, EX_USAGE, 0,
	  "--wait is only valid with 'pgleader switchover' or 'pgleader trigger'" },
	{ NULL, { "switchover", "--to", "" }, EX_USAGE, 0,
	  "--to: \"\" must have 1 to 54 characters" },
	{ NULL, { "switchover", "--wait", "0" }, EX_USAGE, 0,
	  "--wait: invalid duration \"0\" (more than 0; examples: 30s, 2m)" },
	{ NULL, { "switchover", "--wait", "soon" }, EX_USAGE, 0,
	  "--wait: invalid duration \"soon\" (more than 0; examples: 30s, 2m)" },
	{ NULL, { "pause", "x" }, EX_USAGE, 0, "pause takes no arguments (got \"x\")" },
	{ NULL, { "init-db", "--json" }, EX_USAGE, 0,
	  "--json is only valid with 'pgleader status' or 'pgleader runs'" },
	{ NULL, { "status", "--since", "1h" }, EX_USAGE, 0,
	  "--since is only valid with 'pgleader runs'" },
	{ NULL, { "--print-sql", "true" }, EX_USAGE, 0,
	  "--print-sql is only valid with 'pgleader init-db'" },
	{ NULL, { "runs", "--print-sql" }, EX_USAGE, 0,
	  "--print-sql is only valid with 'pgleader init-db'" },
	{ NULL, { "runs", "--grant-to", "app" }, EX_USAGE, 0,
	  "--grant-to is only valid with 'pgleader init-db'" },
	/* --to once freed --grant-to's value, which config_free freed again */
	{ NULL, { "switchover", "--grant-to", "app", "--to", "b" }, EX_USAGE, 0,
	  "--grant-to is only valid with 'pgleader init-db'" },
	{ NULL, { "init-db", "--grant-to", "" }, EX_USAGE, 0,
	  "--grant-to: invalid role name \"\" (1 to 63 bytes of UTF-8, no control characters)" },
	{ NULL, { "runs", "--since", "soon" }, EX_USAGE, 0,
	  "--since: invalid duration \"soon\" (examples: 30m, 24h, 720h)" },
	{ NULL, { "runs", "--job", "a b" }, EX_USAGE, 0,
	  "--job: invalid job name \"a b\" (1 to 63 of A-Z a-z 0-9 _ . -)" },
	{ NULL, { "runs", "--job" }, EX_USAGE, 0, "--job: missing value" },
	{ NULL, { "init-db", "--schema", "pg_ledger" }, EX_USAGE, 0,
	  "--schema: invalid schema name \"pg_ledger\" (pg_ names are reserved by PostgreSQL)" },
};

START_TEST(subcommands)
{
	struct config cfg;
	char err[ERRLEN], got[256];
	const char *path;
	int result = load_case(&cfg, err, subcommand_cases[_i].file, NULL,
			       NULL, subcommand_cases[_i].args, &path);

	ck_assert_msg(result == subcommand_cases[_i].result, "%d: %s", result, err);
	if (result != CONFIG_OK) {
		ck_assert_str_eq(err, subcommand_cases[_i].expect);
		return;
	}
	ck_assert_int_eq(cfg.mode, subcommand_cases[_i].mode);
	ck_assert_int_eq(cfg.status_mode, cfg.mode == CONFIG_MODE_STATUS);
	snprintf(got, sizeof(got), "%d %s %lld %d", cfg.json,
		 cfg.runs_job ? cfg.runs_job : "(null)", (long long)cfg.runs_since_ms,
		 cfg.print_sql);
	ck_assert_str_eq(got, subcommand_cases[_i].expect);
	if (cfg.mode != CONFIG_MODE_DAEMON)
		ck_assert_ptr_null(cfg.command);
	config_free(&cfg);
}
END_TEST

/* switchover --to NODE --wait DUR, and their defaults. */
START_TEST(switchover_options)
{
	static const struct {
		const char *args[6];
		const char *expect;
	} cases[] = {
		{ { "switchover" }, "(null) 30000" },
		{ { "switchover", "--to", "db2", "--wait", "2m" }, "db2 120000" },
		{ { "switchover", "--wait=500ms", "--to=db3" }, "db3 500" },
	};
	struct config cfg;
	char err[ERRLEN], got[256];
	const char *path;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(load_case(&cfg, err, NULL, NULL, NULL, cases[i].args, &path),
				 CONFIG_OK);
		snprintf(got, sizeof(got), "%s %lld",
			 cfg.switchover_to ? cfg.switchover_to : "(null)",
			 (long long)cfg.switchover_wait_ms);
		ck_assert_str_eq(got, cases[i].expect);
		config_free(&cfg);
	}
}
END_TEST

/* uses_ledger: a schedule, [job.NAME] sections or --once-per, and nothing
 * else: a plain single command never touches the ledger. */
static const struct {
	const char *file;
	const char *args[6];
	bool ledger;
} ledger_cases[] = {
	{ NULL, { "true" }, false },
	{ NULL, { "--schema=ops", "--keep-runs=1h", "--timezone=Europe/Paris", "true" },
	  false },
	{ NULL, { "--once-per=0", "--nonblock", "true" }, false },
	{ NULL, { "--schedule=@hourly", "true" }, true },
	{ NULL, { "--once-per=1h", "--nonblock", "true" }, true },
	{ "[job.a]\ncommand = a\n", { NULL }, true },
	{ "[job.a]\ncommand = a\nschedule = @daily\n", { "true" }, true },
	{ "[pgleader]\nschedule = @daily\ncommand = true\n", { NULL }, true },
};

START_TEST(uses_ledger)
{
	struct config cfg;
	char err[ERRLEN];
	const char *path;

	ck_assert_msg(load_case(&cfg, err, ledger_cases[_i].file, NULL, NULL,
				ledger_cases[_i].args, &path) == CONFIG_OK, "%s", err);
	ck_assert_int_eq(cfg.uses_ledger, ledger_cases[_i].ledger);
	config_free(&cfg);
}
END_TEST

/* A PGLEADER_ variable that no key reads is ignored, as the environment
 * holds other programs' variables and the command's own; one near a key's
 * name is likely a typo, said in one line for the log. */
static const struct {
	const char *name, *hint;
} env_hint_cases[] = {
	{ "PGLEADER_LOCKKEY", "PGLEADER_LOCKKEY is not a setting and is ignored "
	  "(did you mean PGLEADER_LOCK_KEY?)" },
	{ "PGLEADER_lock_key", "PGLEADER_lock_key is not a setting and is ignored "
	  "(did you mean PGLEADER_LOCK_KEY?)" },
	{ "PGLEADER_RETRY_INTERVALL", "PGLEADER_RETRY_INTERVALL is not a setting and "
	  "is ignored (did you mean PGLEADER_RETRY_INTERVAL?)" },
	{ "PGLEADER_SCHEDUEL", "PGLEADER_SCHEDUEL is not a setting and is ignored "
	  "(did you mean PGLEADER_SCHEDULE?)" },
	/* what pgleader gives its command, and what its tests set */
	{ "PGLEADER_LOCK_KEY", "" }, { "PGLEADER_NODE_ID", "" }, { "PGLEADER_JOB", "" },
	{ "PGLEADER_TICK", "" }, { "PGLEADER_RUN_ID", "" }, { "PGLEADER_FENCING_TOKEN", "" },
	{ "PGLEADER_COMMAND_PID", "" }, { "PGLEADER_STATE", "" }, { "PGLEADER_REASON", "" },
	{ "PGLEADER_CONFIG", "" }, { "PGLEADER_VERSION", "" }, { "PGLEADER_CURL_SONAME", "" },
	{ "PGLEADER_MHD_SONAME", "" }, { "PGLEADER_SYSTEMD_SONAME", "" },
	{ "PGLEADER_BIN", "" }, { "PGLEADER_SANITIZED", "" }, { "PGLEADER_WRAPPER", "" },
	{ "PGLEADER_CLOCKSHIFT", "" }, { "PGLEADER_FENCE_DRIVER", "" },
	{ "PGLEADER_COMMAND", "" }, { "PGLEADER_", "" }, { "OTHER_LOCK_KEY", "" },
};

START_TEST(env_hint)
{
	struct config cfg;
	char err[ERRLEN];

	setenv(env_hint_cases[_i].name, strstr(env_hint_cases[_i].name, "CONFIG")
	       ? "" : "1", 1);
	ck_assert_msg(load(&cfg, err, "true", NULL) == CONFIG_OK, "%s", err);
	ck_assert_str_eq(cfg.env_hint, env_hint_cases[_i].hint);
	config_free(&cfg);
	unsetenv(env_hint_cases[_i].name);
}
END_TEST

START_TEST(job_defaults)
{
	struct config cfg;
	char err[ERRLEN];

	ck_assert_int_eq(load(&cfg, err, "true", NULL), CONFIG_OK);
	ck_assert_int_eq(cfg.mode, CONFIG_MODE_DAEMON);
	ck_assert_uint_eq(cfg.n_jobs, 1);
	ck_assert_str_eq(jobs_text(&cfg), "default=true - UTC 0 -1 0 -1 0 8000 0");
	ck_assert_ptr_eq(cfg.jobs[0].command, cfg.command);
	ck_assert(!cfg.job_sections);
	ck_assert_int_eq(cfg.once_per_ms, 0);
	ck_assert_str_eq(cfg.schema, "pgleader");
	ck_assert_int_eq(cfg.keep_runs_ms, INT64_C(720) * 3600 * 1000);
	ck_assert_ptr_null(cfg.runs_job);
	ck_assert_int_eq(cfg.runs_since_ms, -1);
	ck_assert(!cfg.print_sql);
	ck_assert(!cfg.uses_ledger);
	config_free(&cfg);
}
END_TEST

/* Schema names: a plain lower-case identifier of at most 63 bytes. */
static const struct {
	const char *value;
	bool ok;
} schema_cases[] = {
	{ "pgleader", true }, { "_ledger", true }, { "a1_", true },
	{ "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123", true },
	{ "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij1234", false },
	{ "", false }, { "1a", false }, { "a-b", false }, { "Ledger", false },
	{ "a b", false }, { "\"x\"", false }, { "pg_x", false }, { "caf\xc3\xa9", false },
};

START_TEST(schema_names)
{
	struct config cfg;
	char err[ERRLEN], option[128];
	int result;

	snprintf(option, sizeof(option), "--schema=%s", schema_cases[_i].value);
	result = load(&cfg, err, option, "true", NULL);
	ck_assert_msg(result == (schema_cases[_i].ok ? CONFIG_OK : EX_USAGE), "%s: %s",
		      option, err);
	if (result == CONFIG_OK) {
		ck_assert_str_eq(cfg.schema, schema_cases[_i].value);
		config_free(&cfg);
	} else {
		ck_assert_msg(strncmp(err, "--schema: invalid schema name ", 30) == 0, "%s", err);
	}
}
END_TEST

/* DESIGN 13: a reload keeps the keys that take a restart (their values
 * copied from the running configuration) and names them; the others
 * (drain_timeout here) are the new file's. */
START_TEST(reload_keeps_restart_keys)
{
	struct config old, fresh;
	char err[ERRLEN], names[256];

	ck_assert_int_eq(load(&old, err, "--dsn=host=a", "--schema=one", "--node-id=n1",
			      "--ping-interval=1s", "true", NULL), CONFIG_OK);
	ck_assert_int_eq(load(&fresh, err, "--dsn=host=b", "--schema=two", "--node-id=n1",
			      "--ping-interval=2s", "--http-addr=:8008", "--drain-timeout=9s",
			      "true", NULL), CONFIG_OK);
	ck_assert_int_eq((int)config_keep_restart_keys(&fresh, &old, names, sizeof(names)), 4);
	ck_assert_str_eq(names, "dsn, schema, http_addr, ping_interval");
	ck_assert_str_eq(fresh.dsn, "host=a");
	ck_assert_str_eq(fresh.schema, "one");
	ck_assert_ptr_null(fresh.http_addr);
	ck_assert_int_eq(fresh.ping_interval_ms, 1000);
	ck_assert_int_eq(fresh.drain_timeout_ms, 9000);
	ck_assert_int_eq((int)config_keep_restart_keys(&fresh, &old, names, sizeof(names)), 0);
	ck_assert_str_eq(names, "");
	config_free(&old);
	config_free(&fresh);
}
END_TEST

/* A test and how many cases of its table it runs. */
struct named_test {
	const char *name;
	const TTest *test;
	int cases;
};

/* One tcase per test, in the fixtures every test of this file has. */
static void add_tcases(Suite *s, const struct named_test *tests, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
		tcase_add_checked_fixture(tc, clear_pgleader_env, NULL);
		/* Pure parsing: seconds even under valgrind. */
		tcase_set_timeout(tc, 30);
		tcase_add_loop_test(tc, tests[i].test, 0, tests[i].cases);
		suite_add_tcase(s, tc);
	}
}

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	const struct named_test tests[] = {
#define LOOP(test, table) { #test, test, (int)(sizeof(table) / sizeof(table[0])) }
#define ONCE(test) { #test, test, 1 }
		LOOP(key_in_file, key_cases),
		LOOP(key_in_environment, key_cases),
		LOOP(key_on_command_line, key_cases),
		ONCE(help_lists_every_key),
		LOOP(value_ranges, range_cases),
		LOOP(booleans, bool_cases),
		{ "precedence", precedence, 8 },
		LOOP(lock_key_or_name, lock_cases),
		ONCE(config_file_sources),
		ONCE(empty_variables_are_unset),
		ONCE(defaults),
		LOOP(bad_host_name, host_cases),
		LOOP(file, file_cases),
		ONCE(file_cannot_be_read),
		LOOP(special_files, special_cases),
		ONCE(file_size_bound),
		LOOP(line_length, line_cases),
		ONCE(inih_own_boundary),
		LOOP(options, option_cases),
		LOOP(status_mode, status_cases),
		ONCE(status_ignores_file_command),
		LOOP(verbosity, verbosity_cases),
		ONCE(verbosity_applies_after_all_layers),
		ONCE(shell_keeps_the_line_whole),
		LOOP(timing_rule, timing_cases),
		LOOP(failsafe_rules, failsafe_cases),
		ONCE(failsafe_peers_parsed),
		LOOP(exit_codes, exit_cases),
		ONCE(failure_leaves_nothing),
		LOOP(schedule_values, schedule_value_cases),
		LOOP(jobs, job_cases),
		LOOP(subcommands, subcommand_cases),
		ONCE(switchover_options),
		LOOP(uses_ledger, ledger_cases),
		ONCE(job_defaults),
		LOOP(env_hint, env_hint_cases),
		LOOP(schema_names, schema_cases),
		ONCE(reload_keeps_restart_keys),
#undef LOOP
#undef ONCE
	};

	add_tcases(s, tests, sizeof(tests) / sizeof(tests[0]));
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(config_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
