/* config.c: pgleader's settings: its table of keys for the options engine,
 * and the rules that span keys, checked once every layer is in. */
#include "config.h"
#include "exit_codes.h"
#include "jobproc.h"
#include "log.h" /* the enums only: config must not log */
#include "options.h"
#include "schedule.h"
#include "setting.h"
#include "value.h"
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define USAGE "pgleader [OPTION]... [--] COMMAND [ARG]..."
/* an exit code as the text of a default value: written once, in exit_codes.h */
#define CODE_TEXT_(code) #code
#define CODE_TEXT(code) CODE_TEXT_(code)
#define JOB_NAME_MAX 63
#define SCHEMA_MAX 63 /* PostgreSQL's NAMEDATALEN - 1 */
#define JOB_NAME_RULE "1 to 63 of A-Z a-z 0-9 _ . -"

/* The server takes lock_timeout (retry_interval) and idle_session_timeout
 * and tcp_user_timeout (server_lease) in milliseconds as an int: past that
 * the SET fails on every attempt, so the value is refused here instead. */
#define PG_TIMEOUT_MAX_MS INT_MAX

enum action {
	ACT_CONFIG = 1, ACT_VERBOSE, ACT_QUIET, ACT_HELP, ACT_VERSION, ACT_JOB,
	ACT_SINCE, ACT_TO, ACT_WAIT, ACT_GRANT_TO, ACT_OUTPUT,
};

/* The server hashes the name as text: bytes that are not UTF-8 are an
 * error there (or, in another encoding, a different key), so they are
 * refused here, before any connection. */
static int check_lock_name(const char *value, char *why, size_t whylen)
{
	char shown[64];

	if (!*value)
		return value_why(why, whylen, "must not be empty");
	if (!value_is_utf8(value))
		return value_why(why, whylen, "%s is not valid UTF-8",
				value_quote(value, shown, sizeof(shown)));
	return 0;
}

static int check_node_id(const char *value, char *why, size_t whylen)
{
	char shown[64];
	size_t len = strlen(value);

	if (len == 0 || len > WIRE_NODE_ID_MAX)
		return value_why(why, whylen, "%s must have 1 to %d characters",
				value_quote(value, shown, sizeof(shown)), WIRE_NODE_ID_MAX);
	for (const char *p = value; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return value_why(why, whylen,
					"%s may hold only printable ASCII without spaces",
					value_quote(value, shown, sizeof(shown)));
	return 0;
}

static int check_http_addr(const char *value, char *why, size_t whylen)
{
	char host[VALUE_HOST_MAX], port[VALUE_PORT_MAX], reason[128], shown[64];

	if (*value && value_parse_host_port(value, true, host, port, reason,
					    sizeof(reason)) < 0)
		return value_why(why, whylen,
				"invalid address %s: %s (examples: 127.0.0.1:8008, [::1]:8008, :8008)",
				value_quote(value, shown, sizeof(shown)), reason);
	return 0;
}

/* The expression alone (in UTC) and the zone alone: each refused with the
 * schedule module's own line, before any connection. */
static int check_schedule(const char *value, char *why, size_t whylen)
{
	struct schedule *parsed;
	char reason[256];

	/* "--schedule ''" is likely a "$VAR" that expanded to nothing: said,
	 * not taken as "runs all the time". */
	if (!*value)
		return value_why(why, whylen, "must not be empty (leave it out for a "
				 "command that runs all the time)");
	if (!(parsed = schedule_new(value, "UTC", reason, sizeof(reason))))
		return value_why(why, whylen, "%s", reason);
	schedule_free(parsed);
	return 0;
}

static int check_timezone(const char *value, char *why, size_t whylen)
{
	struct schedule *parsed;
	char reason[256];

	if (!*value)
		return value_why(why, whylen, "must not be empty (the default is UTC)");
	if (!(parsed = schedule_new("@hourly", value, reason, sizeof(reason))))
		return value_why(why, whylen, "%s", reason);
	schedule_free(parsed);
	return 0;
}

/* A plain lower-case identifier, so that it needs no quoting in SQL and
 * reads the same everywhere; pg_ names are the server's own. */
static int check_schema(const char *value, char *why, size_t whylen)
{
	char shown[64];
	size_t len = strlen(value);
	bool ok = len > 0 && len <= SCHEMA_MAX && !(*value >= '0' && *value <= '9');

	for (const char *p = value; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
	if (!ok)
		return value_why(why, whylen,
				"invalid schema name %s (1 to %d of a-z 0-9 _, not starting with a digit)",
				value_quote(value, shown, sizeof(shown)), SCHEMA_MAX);
	if (strncmp(value, "pg_", 3) == 0)
		return value_why(why, whylen,
				"invalid schema name %s (pg_ names are reserved by PostgreSQL)",
				value_quote(value, shown, sizeof(shown)));
	return 0;
}

/* A role's name as the server takes it: 1 to 63 bytes of UTF-8 without
 * control characters (it is sent as a literal, never as SQL). */
static int check_role(const char *value, char *why, size_t whylen)
{
	char shown[80];
	bool ok = *value && strlen(value) <= SCHEMA_MAX && value_is_utf8(value);

	for (const char *p = value; ok && *p; p++)
		ok = (unsigned char)*p >= ' ' && *p != 0x7f;
	if (!ok)
		return value_why(why, whylen, "invalid role name %s (1 to %d bytes of"
				" UTF-8, no control characters)",
				value_quote(value, shown, sizeof(shown)), SCHEMA_MAX);
	return 0;
}

static int check_job_name(const char *value, char *why, size_t whylen)
{
	char shown[64];
	size_t len = strlen(value);
	bool ok = len > 0 && len <= JOB_NAME_MAX;

	for (const char *p = value; ok && *p; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		     (*p >= '0' && *p <= '9') || *p == '_' || *p == '.' || *p == '-';
	if (!ok)
		return value_why(why, whylen, "invalid job name %s (" JOB_NAME_RULE ")",
				value_quote(value, shown, sizeof(shown)));
	return 0;
}

static int parse_peers(const char *list, struct config_peer **peers, size_t *n,
		       char *why, size_t whylen);
static void free_peers(struct config_peer *peers, size_t n);

/* The job's process (DESIGN 13). A value is never shown: it may be a
 * secret. */
static int check_environment(const char *value, char *why, size_t whylen)
{
	char **env = NULL;
	int result = jobproc_parse_environment(value, &env, why, whylen);

	jobproc_free_env(env);
	return result;
}

static int check_absolute(const char *value, char *why, size_t whylen)
{
	char shown[64];

	if (*value != '/')
		return value_why(why, whylen, "%s is not an absolute path",
				 value_quote(value, shown, sizeof(shown)));
	return 0;
}

/* environment_file: '-' before the path makes a missing file no error. */
static int check_environment_file(const char *value, char *why, size_t whylen)
{
	return check_absolute(value + (*value == '-'), why, whylen);
}

/* A user's or group's name or number as the system's databases hold it. */
static int check_account(const char *value, char *why, size_t whylen)
{
	char shown[64];
	bool ok = *value && strlen(value) <= 256;

	for (const char *p = value; ok && *p; p++)
		ok = (unsigned char)*p > ' ' && *p != 0x7f && *p != ':' && *p != '/';
	if (!ok)
		return value_why(why, whylen, "invalid name %s (no blanks, ':' or '/')",
				 value_quote(value, shown, sizeof(shown)));
	return 0;
}

static int check_failsafe_peers(const char *value, char *why, size_t whylen)
{
	struct config_peer *peers = NULL;
	size_t n = 0;
	int result = *value ? parse_peers(value, &peers, &n, why, whylen) : 0;

	free_peers(peers, n);
	return result;
}

static const struct option_choice acquire_modes[] = {
	{ "wait", ACQUIRE_WAIT }, { "poll", ACQUIRE_POLL }, { NULL, 0 },
};
static const struct option_choice restart_policies[] = {
	{ "no", RESTART_NO }, { "on-failure", RESTART_ON_FAILURE },
	{ "always", RESTART_ALWAYS }, { NULL, 0 },
};
static const struct option_choice log_levels[] = {
	{ "error", LOG_LEVEL_ERROR }, { "warning", LOG_LEVEL_WARNING },
	{ "notice", LOG_LEVEL_NOTICE }, { "info", LOG_LEVEL_INFO },
	{ "debug", LOG_LEVEL_DEBUG }, { NULL, 0 },
};
static const struct option_choice missed_policies[] = {
	{ "once", MISSED_ONCE }, { "skip", MISSED_SKIP }, { NULL, 0 },
};
static const struct option_choice overlap_policies[] = {
	{ "skip", OVERLAP_SKIP }, { "queue", OVERLAP_QUEUE },
	{ "replace", OVERLAP_REPLACE }, { NULL, 0 },
};
static const struct option_choice output_modes[] = {
	{ "inherit", OUTPUT_INHERIT }, { "log", OUTPUT_LOG }, { NULL, 0 },
};
static const struct option_choice log_formats[] = {
	{ "text", LOG_FORMAT_TEXT }, { "json", LOG_FORMAT_JSON }, { NULL, 0 },
};

#define FIELD(name) offsetof(struct config, name)
#define MAX_DURATION "720h" /* what value_parse_duration takes at most */

/* One row per setting; the order of rows is the order of --help. A new key
 * is a row here, a paragraph in pgleader(1) and pgleader.conf(5), and a
 * commented line in conf/pgleader.conf: tests/check-docs.sh reads --help. */
static const struct option_row rows[] = {
	{ .long_name = "config", .short_name = 'c', .type = OPTION_ACTION,
	  .action = ACT_CONFIG, .metavar = "FILE", .variable = "PGLEADER_CONFIG",
	  .help = "read settings from the INI file FILE" },
	{ .key = "dsn", .long_name = "dsn", .short_name = 'd', .type = OPTION_STRING,
	  .offset = FIELD(dsn), .default_shown = "libpq environment",
	  .metavar = "CONNINFO", .help = "PostgreSQL connection string or URI" },
	{ .key = "lock_key", .long_name = "lock-key", .short_name = 'k',
	  .type = OPTION_LOCK_KEY, .offset = FIELD(lock_key),
	  .default_value = "0x50474c4541444552", .metavar = "N",
	  .help = "advisory lock key: signed 64-bit or 0x hex",
	  .conflicts = "lock_name" },
	{ .key = "lock_name", .long_name = "lock-name", .short_name = 'n',
	  .type = OPTION_STRING, .offset = FIELD(lock_name), .default_shown = "none",
	  .metavar = "NAME", .help = "lock key = hashtextextended(NAME, 0)",
	  .check = check_lock_name, .conflicts = "lock_key" },
	{ .key = "acquire", .long_name = "acquire", .type = OPTION_ENUM,
	  .offset = FIELD(acquire), .default_value = "wait", .metavar = "MODE",
	  .help = "standby: wait (lock queue) or poll",
	  .choices = acquire_modes },
	{ .key = "queue_depth", .long_name = "queue-depth", .type = OPTION_INT,
	  .offset = FIELD(queue_depth), .default_value = "3", .metavar = "N",
	  .help = "standby: at most N wait in the lock queue,\n"
		  "the others poll", .min = 1, .max = 1000 },
	{ .key = "poll_dsn", .long_name = "poll-dsn", .type = OPTION_STRING,
	  .offset = FIELD(poll_dsn), .default_shown = "none", .metavar = "CONNINFO",
	  .help = "standby: poll through this transaction pooler" },
	{ .key = "retry_interval", .long_name = "retry-interval",
	  .type = OPTION_DURATION, .offset = FIELD(retry_interval_ms),
	  .default_value = "5s", .metavar = "DUR",
	  .help = "standby: lock wait or poll period", .min = 1,
	  .max = PG_TIMEOUT_MAX_MS },
	{ .key = "ping_interval", .long_name = "ping-interval",
	  .type = OPTION_DURATION, .offset = FIELD(ping_interval_ms),
	  .default_value = "1s", .metavar = "DUR",
	  .help = "leader: time between pings", .min = 1 },
	{ .key = "ping_timeout", .long_name = "ping-timeout", .type = OPTION_DURATION,
	  .offset = FIELD(ping_timeout_ms), .default_value = "2s",
	  .metavar = "DUR", .help = "leader: time a ping reply may take",
	  .min = 1 },
	{ .key = "ping_failures", .long_name = "ping-failures", .type = OPTION_INT,
	  .offset = FIELD(ping_failures), .default_value = "3", .metavar = "N",
	  .help = "failed pings in a row that lose the lease",
	  .min = 1, .max = 1000 },
	{ .key = "server_lease", .long_name = "server-lease", .type = OPTION_DURATION,
	  .offset = FIELD(server_lease_ms), .default_value = "20s",
	  .metavar = "DUR",
	  .help = "server ends a silent leader's session (0: off)",
	  .max = PG_TIMEOUT_MAX_MS },
	{ .key = "grace_period", .long_name = "grace-period", .type = OPTION_DURATION,
	  .offset = FIELD(grace_period_ms), .default_value = "8s",
	  .metavar = "DUR", .help = "time from SIGTERM to SIGKILL for COMMAND" },
	{ .key = "drain_timeout", .long_name = "drain-timeout", .type = OPTION_DURATION,
	  .offset = FIELD(drain_timeout_ms), .default_value = "0",
	  .metavar = "DUR", .help = "leader giving up the lead: let scheduled runs\n"
				    "finish this long before stopping them" },
	{ .key = "takeover_delay", .long_name = "takeover-delay",
	  .type = OPTION_DURATION, .offset = FIELD(takeover_delay_ms),
	  .default_value = "0", .metavar = "DUR",
	  .help = "leader: wait this long before starting COMMAND" },
	{ .key = "priority", .long_name = "priority", .type = OPTION_INT,
	  .offset = FIELD(priority), .default_value = "1", .metavar = "N",
	  .help = "higher takes over from lower (0: never leads)",
	  .min = 0, .max = 1000 },
	{ .key = "priority_delay", .long_name = "priority-delay",
	  .type = OPTION_DURATION, .offset = FIELD(priority_delay_ms),
	  .default_value = "10s", .metavar = "DUR",
	  .help = "healthy standby time before a priority takeover" },
	{ .key = "restart", .long_name = "restart", .type = OPTION_ENUM,
	  .offset = FIELD(restart), .default_value = "no", .metavar = "POLICY",
	  .help = "when COMMAND exits: no, on-failure or always",
	  .choices = restart_policies },
	{ .key = "restart_limit", .long_name = "restart-limit", .type = OPTION_INT,
	  .offset = FIELD(restart_limit), .default_value = "5", .metavar = "N",
	  .help = "give up after N quick failures in a row",
	  .min = 0, .max = 1000000 },
	{ .long_name = "nonblock", .type = OPTION_FLAG, .offset = FIELD(nonblock),
	  .default_shown = "off", .help = "give up at once when another node leads" },
	{ .key = "wait_timeout", .long_name = "wait-timeout", .type = OPTION_DURATION,
	  .offset = FIELD(wait_timeout_ms), .default_value = "none",
	  .metavar = "DUR", .help = "give up after waiting this long as standby",
	  .none_allowed = true },
	{ .key = "conflict_exit_code", .long_name = "conflict-exit-code",
	  .type = OPTION_INT, .offset = FIELD(conflict_exit_code),
	  .default_value = CODE_TEXT(EXIT_CONFLICT), .metavar = "N",
	  .help = "exit code when pgleader gives up waiting",
	  .min = 0, .max = 255 },
	{ .key = "shell", .long_name = "shell", .type = OPTION_BOOL,
	  .offset = FIELD(top.shell), .default_value = "off",
	  .help = "run COMMAND with /bin/sh -c" },
	{ .key = "environment", .long_name = "environment", .type = OPTION_STRING,
	  .offset = FIELD(top.environment), .default_shown = "none",
	  .metavar = "LIST", .help = "COMMAND's variables: NAME=VALUE ... (quoted\n"
	  "as systemd's Environment=)", .check = check_environment },
	{ .key = "environment_file", .long_name = "environment-file",
	  .type = OPTION_STRING, .offset = FIELD(top.environment_file),
	  .default_shown = "none", .metavar = "FILE",
	  .help = "and those of FILE's NAME=VALUE lines (read at\n"
	  "start; -FILE: may be missing)", .check = check_environment_file },
	{ .key = "working_directory", .long_name = "working-directory",
	  .type = OPTION_STRING, .offset = FIELD(top.working_directory),
	  .default_shown = "pgleader's", .metavar = "DIR",
	  .help = "run COMMAND in DIR", .check = check_absolute },
	{ .key = "user", .long_name = "user", .type = OPTION_STRING,
	  .offset = FIELD(top.user), .default_shown = "pgleader's", .metavar = "NAME",
	  .help = "run COMMAND as this user (pgleader as root)",
	  .check = check_account },
	{ .key = "group", .long_name = "group", .type = OPTION_STRING,
	  .offset = FIELD(top.group), .default_shown = "the user's",
	  .metavar = "NAME", .help = "run COMMAND with this group (pgleader as root)",
	  .check = check_account },
	{ .key = "node_id", .long_name = "node-id", .type = OPTION_STRING,
	  .offset = FIELD(node_id), .default_shown = "host name",
	  .metavar = "NAME", .help = "this node's name in pg_stat_activity",
	  .check = check_node_id },
	{ .key = "http_addr", .long_name = "http-addr", .type = OPTION_STRING,
	  .offset = FIELD(http_addr), .default_shown = "off",
	  .metavar = "HOST:PORT", .help = "serve health checks and metrics there",
	  .check = check_http_addr },
	{ .key = "failsafe_peers", .long_name = "failsafe-peers", .type = OPTION_STRING,
	  .offset = FIELD(failsafe_peers), .default_shown = "off",
	  .metavar = "LIST", .help = "failsafe: every member, as ID=HOST:PORT,...",
	  .check = check_failsafe_peers },
	{ .key = "failsafe_secret_file", .long_name = "failsafe-secret-file",
	  .type = OPTION_STRING, .offset = FIELD(failsafe_secret_file),
	  .default_shown = "none", .metavar = "FILE",
	  .help = "failsafe: the members' shared secret" },
	{ .key = "failsafe_ttl", .long_name = "failsafe-ttl", .type = OPTION_DURATION,
	  .offset = FIELD(failsafe_ttl_ms), .default_value = "15s", .metavar = "DUR",
	  .help = "failsafe: how long a member's consent lasts", .min = 1 },
	{ .key = "schedule", .long_name = "schedule", .type = OPTION_STRING,
	  .offset = FIELD(top.schedule), .default_shown = "none", .metavar = "EXPR",
	  .help = "run COMMAND once a tick, on one node: 5 cron\n"
		  "fields, @hourly... or @every DUR",
	  .check = check_schedule },
	{ .key = "timezone", .long_name = "timezone", .type = OPTION_STRING,
	  .offset = FIELD(top.timezone), .default_value = "UTC", .metavar = "ZONE",
	  .help = "schedule: tz database zone of the fields\n"
		  "(and of --once-per's windows)",
	  .check = check_timezone },
	{ .key = "jitter", .long_name = "jitter", .type = OPTION_DURATION,
	  .offset = FIELD(top.jitter_ms), .default_value = "0", .metavar = "DUR",
	  .help = "schedule: start a tick up to DUR late" },
	{ .key = "max_runtime", .long_name = "max-runtime", .type = OPTION_DURATION,
	  .offset = FIELD(top.max_runtime_ms), .default_value = "none",
	  .metavar = "DUR", .help = "schedule: stop a run that takes longer",
	  .min = 1, .none_allowed = true },
	{ .key = "missed", .long_name = "missed", .type = OPTION_ENUM,
	  .offset = FIELD(top.missed), .default_value = "once", .metavar = "POLICY",
	  .help = "schedule: missed ticks: once or skip",
	  .choices = missed_policies },
	{ .key = "missed_window", .long_name = "missed-window", .type = OPTION_DURATION,
	  .offset = FIELD(top.missed_window_ms), .default_shown = "one interval",
	  .metavar = "DUR", .help = "schedule: oldest missed tick still run",
	  .min = 1 },
	{ .key = "rerun_interrupted", .long_name = "rerun-interrupted",
	  .type = OPTION_BOOL, .offset = FIELD(top.rerun_interrupted),
	  .default_value = "off",
	  .help = "schedule: rerun a run cut off by failover" },
	{ .key = "overlap", .long_name = "overlap", .type = OPTION_ENUM,
	  .offset = FIELD(top.overlap), .default_value = "skip", .metavar = "POLICY",
	  .help = "schedule: tick during a run: skip, queue, replace\n"
		  "(queue: run it after; replace: stop the run)",
	  .choices = overlap_policies },
	{ .key = "output", .type = OPTION_ENUM,
	  .offset = FIELD(top.output), .metavar = "MODE",
	  .default_shown = "log; inherit for COMMAND without a schedule",
	  .help = "the runs' stdout and stderr: inherit (pgleader's\n"
		  "own) or log (a line each, named by the job)",
	  .choices = output_modes },
	{ .key = "output_tail", .long_name = "output-tail", .type = OPTION_SIZE,
	  .offset = FIELD(top.output_tail), .default_value = "4KiB", .metavar = "SIZE",
	  .help = "output log: the last SIZE bytes of a run's\n"
		  "output kept in its ledger row (0: none)",
	  .min = 0, .max = CONFIG_OUTPUT_TAIL_MAX },
	{ .key = "retries", .long_name = "retries", .type = OPTION_INT,
	  .offset = FIELD(top.retries), .default_value = "0", .metavar = "N",
	  .help = "schedule: try a failed run N more times", .min = 0,
	  .max = 100 },
	{ .key = "retry_delay", .long_name = "retry-delay", .type = OPTION_DURATION,
	  .offset = FIELD(top.retry_delay_ms), .default_value = "30s",
	  .metavar = "DUR", .help = "schedule: wait before the first retry\n"
	  "(doubled for each next one)", .min = 1 },
	{ .key = "retry_max_delay", .long_name = "retry-max-delay",
	  .type = OPTION_DURATION, .offset = FIELD(top.retry_max_delay_ms),
	  .default_value = "10m", .metavar = "DUR",
	  .help = "schedule: longest wait before a retry", .min = 1 },
	{ .key = "on_failure", .long_name = "on-failure", .type = OPTION_STRING,
	  .offset = FIELD(top.on_failure), .default_shown = "none",
	  .metavar = "COMMAND", .help = "schedule: run by /bin/sh -c once across the\n"
	  "fleet for each run that failed for good" },
	{ .key = "on_failure_timeout", .long_name = "on-failure-timeout",
	  .type = OPTION_DURATION, .offset = FIELD(top.on_failure_timeout_ms),
	  .default_value = "60s", .metavar = "DUR",
	  .help = "schedule: stop an on_failure command after DUR", .min = 1 },
	{ .key = "once_per", .long_name = "once-per", .type = OPTION_DURATION,
	  .offset = FIELD(once_per_ms), .default_value = "0", .metavar = "DUR",
	  .help = "one-shot: run once per DUR window, fleet-wide\n"
		  "(with --nonblock or --wait-timeout; 0: off)" },
	{ .key = "schema", .long_name = "schema", .type = OPTION_STRING,
	  .offset = FIELD(schema), .default_value = "pgleader", .metavar = "NAME",
	  .help = "the run ledger's schema", .check = check_schema },
	{ .key = "ledger_owner", .long_name = "ledger-owner", .type = OPTION_STRING,
	  .offset = FIELD(ledger_owner), .default_shown = "none", .metavar = "ROLE",
	  .help = "trust a ledger this role owns (besides this\n"
		  "role, its roles and superusers)", .check = check_role },
	{ .key = "keep_runs", .long_name = "keep-runs", .type = OPTION_DURATION,
	  .offset = FIELD(keep_runs_ms), .default_value = MAX_DURATION,
	  .metavar = "DUR", .help = "delete ledger rows older than this", .min = 1 },
	{ .key = "log_level", .long_name = "log-level", .type = OPTION_ENUM,
	  .offset = FIELD(log_level), .default_value = "info",
	  .metavar = "LEVEL", .help = "error, warning, notice, info or debug",
	  .choices = log_levels },
	{ .key = "log_format", .long_name = "log-format", .type = OPTION_ENUM,
	  .offset = FIELD(log_format), .default_value = "text",
	  .metavar = "FORMAT", .help = "text or json (one JSON object a line)",
	  .choices = log_formats },
	{ .long_name = "verbose", .short_name = 'v', .type = OPTION_ACTION,
	  .action = ACT_VERBOSE, .help = "log one level more (repeatable)" },
	{ .long_name = "quiet", .short_name = 'q', .type = OPTION_ACTION,
	  .action = ACT_QUIET, .help = "log one level less (repeatable)" },
	{ .long_name = "json", .type = OPTION_FLAG, .offset = FIELD(json),
	  .help = "status, runs: print JSON" },
	{ .long_name = "watch", .type = OPTION_FLAG, .offset = FIELD(watch),
	  .help = "status: a line each time the leader changes" },
	{ .long_name = "job", .type = OPTION_ACTION, .action = ACT_JOB,
	  .metavar = "NAME", .default_shown = "every job",
	  .help = "runs, pause, resume: only this job;\n"
		  "trigger: the job to run now" },
	{ .long_name = "since", .type = OPTION_ACTION, .action = ACT_SINCE,
	  .metavar = "DUR", .default_shown = "all",
	  .help = "runs: only the ticks of the last DUR" },
	{ .long_name = "failed", .type = OPTION_FLAG, .offset = FIELD(runs_failed),
	  .help = "runs: only the runs that did not succeed" },
	{ .long_name = "output", .type = OPTION_ACTION, .action = ACT_OUTPUT,
	  .metavar = "MODE|RUN_ID", .default_shown = "see output",
	  .help = "the daemon: the output key (inherit or log);\n"
		  "runs: print run RUN_ID's stored output" },
	{ .long_name = "print-sql", .type = OPTION_FLAG, .offset = FIELD(print_sql),
	  .help = "init-db: print the SQL instead of running it" },
	{ .long_name = "grant-to", .type = OPTION_ACTION, .action = ACT_GRANT_TO,
	  .metavar = "ROLE", .default_shown = "none",
	  .help = "init-db: let ROLE's nodes use the ledger" },
	{ .long_name = "to", .type = OPTION_ACTION, .action = ACT_TO,
	  .metavar = "NODE", .default_shown = "any standby",
	  .help = "switchover: the node that takes over" },
	{ .long_name = "force", .type = OPTION_FLAG, .offset = FIELD(force),
	  .help = "pause, resume, switchover, trigger: write it\n"
		  "though no node announced the job or is the node" },
	{ .long_name = "wait", .type = OPTION_ACTION, .action = ACT_WAIT,
	  .metavar = "DUR", .default_shown = "30s",
	  .help = "switchover: how long a standby has to take over;\n"
		  "trigger: wait up to DUR for the run's end" },
	{ .long_name = "help", .short_name = 'h', .type = OPTION_ACTION,
	  .action = ACT_HELP, .help = "print this help and exit" },
	{ .long_name = "version", .short_name = 'V', .type = OPTION_ACTION,
	  .action = ACT_VERSION, .help = "print the version and exit" },
	{ .key = "command", .type = OPTION_TEXT, .metavar = "COMMAND [ARG]...",
	  .help = "COMMAND as one line, split like a shell\n"
		  "a COMMAND on the command line replaces it" },
};

/* The keys of a [job.NAME] section: their rows above say how each is
 * parsed; offset is the field's in struct config_job. */
#define JOB(name) offsetof(struct config_job, name)
enum job_key {
	JK_COMMAND, JK_SCHEDULE, JK_TIMEZONE, JK_JITTER, JK_MAX_RUNTIME, JK_MISSED,
	JK_MISSED_WINDOW, JK_RERUN_INTERRUPTED, JK_OVERLAP, JK_RETRIES, JK_RETRY_DELAY,
	JK_RETRY_MAX_DELAY, JK_ON_FAILURE, JK_ON_FAILURE_TIMEOUT, JK_GRACE_PERIOD,
	JK_RESTART, JK_OUTPUT, JK_OUTPUT_TAIL, JK_SHELL, JK_ENVIRONMENT,
	JK_ENVIRONMENT_FILE, JK_WORKING_DIRECTORY, JK_USER, JK_GROUP, JK_COUNT
};
static const struct {
	const char *key;
	size_t offset;
} job_keys[JK_COUNT] = {
	[JK_COMMAND] = { "command", 0 },
	[JK_SCHEDULE] = { "schedule", JOB(schedule) },
	[JK_TIMEZONE] = { "timezone", JOB(timezone) },
	[JK_JITTER] = { "jitter", JOB(jitter_ms) },
	[JK_MAX_RUNTIME] = { "max_runtime", JOB(max_runtime_ms) },
	[JK_MISSED] = { "missed", JOB(missed) },
	[JK_MISSED_WINDOW] = { "missed_window", JOB(missed_window_ms) },
	[JK_RERUN_INTERRUPTED] = { "rerun_interrupted", JOB(rerun_interrupted) },
	[JK_OVERLAP] = { "overlap", JOB(overlap) },
	[JK_RETRIES] = { "retries", JOB(retries) },
	[JK_RETRY_DELAY] = { "retry_delay", JOB(retry_delay_ms) },
	[JK_RETRY_MAX_DELAY] = { "retry_max_delay", JOB(retry_max_delay_ms) },
	[JK_ON_FAILURE] = { "on_failure", JOB(on_failure) },
	[JK_ON_FAILURE_TIMEOUT] = { "on_failure_timeout", JOB(on_failure_timeout_ms) },
	[JK_GRACE_PERIOD] = { "grace_period", JOB(grace_period_ms) },
	[JK_RESTART] = { "restart", JOB(restart) },
	[JK_OUTPUT] = { "output", JOB(output) },
	[JK_OUTPUT_TAIL] = { "output_tail", JOB(output_tail) },
	[JK_SHELL] = { "shell", JOB(shell) },
	[JK_ENVIRONMENT] = { "environment", JOB(environment) },
	[JK_ENVIRONMENT_FILE] = { "environment_file", JOB(environment_file) },
	[JK_WORKING_DIRECTORY] = { "working_directory", JOB(working_directory) },
	[JK_USER] = { "user", JOB(user) },
	[JK_GROUP] = { "group", JOB(group) },
};
/* These mean something only to a job with a schedule. */
#define JK_SCHEDULED_FIRST JK_JITTER
#define JK_SCHEDULED_LAST JK_ON_FAILURE_TIMEOUT

/* A [job.NAME] section as read: its keys, the line of its header and of
 * each key it sets (0: left out, inherited). */
struct section {
	struct config_job job;
	char *command;           /* the line as written; split once shell is known */
	int line;
	int lines[JK_COUNT];
};

/* Everything config_load needs between steps; cfg gets only the results. */
struct loader {
	struct config *cfg;
	struct options *op;
	int verbosity;           /* -v minus -q */
	const char *config_path; /* -c */
	char **words;            /* the command from argv, borrowed */
	int nwords;
	const char *subcommand;  /* "status", "runs", "init-db", ...; NULL: the daemon */
	bool since_given;        /* runs --since */
	bool wait_given;         /* switchover --wait */
	const char *output_arg;  /* --output, as given: a mode or a run id */
	int output_mode;         /* --output's mode; OUTPUT_AUTO: not given */
	struct section *sections; /* the file's [job.NAME], in order */
	size_t n_sections;
	struct config_job inherit; /* [pgleader]'s job keys, or their defaults */
};

static int action_cb(void *user, int action, const char *value);
static int section_cb(void *user, int line, const char *name);
static int section_key_cb(void *user, int line, const char *name, const char *key,
			  const char *value);

static const struct options_spec spec = {
	.rows = rows,
	.nrows = sizeof(rows) / sizeof(rows[0]),
	.target_size = sizeof(struct config),
	.section = "pgleader",
	.env_prefix = "PGLEADER_",
	.program = "pgleader",
	.action = action_cb,
	.sub_prefix = "job.",
	.sub_shown = "job.NAME",
	.sub_section = section_cb,
	.sub_key = section_key_cb,
};

static const struct option_row *find_row(const char *key)
{
	for (size_t i = 0; i < spec.nrows; i++)
		if (rows[i].key && strcmp(rows[i].key, key) == 0)
			return &rows[i];
	return NULL;
}

/* runs --job NAME, runs --since DUR: read at once, a mistake is usage. */
static int take_runs_option(struct loader *ld, int action, const char *value)
{
	struct config *cfg = ld->cfg;
	char why[128], shown[64];
	int64_t ms;

	if (action == ACT_JOB) {
		if (check_job_name(value, why, sizeof(why)) < 0)
			return options_fail(ld->op, EXIT_USAGE, "--job: %s", why);
		free(cfg->runs_job);
		if (!(cfg->runs_job = strdup(value)))
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
		return CONFIG_OK;
	}
	if (value_parse_duration(value, &ms) < 0)
		return options_fail(ld->op, EXIT_USAGE,
				    "--since: invalid duration %s (examples: 30m, 24h, 720h)",
				    value_quote(value, shown, sizeof(shown)));
	cfg->runs_since_ms = ms;
	ld->since_given = true;
	return CONFIG_OK;
}

/* switchover --to NODE, --wait DUR, init-db --grant-to ROLE: read at
 * once, a mistake is usage. */
static int take_switchover_option(struct loader *ld, int action, const char *value)
{
	struct config *cfg = ld->cfg;
	char why[128], shown[64];
	int64_t ms;

	if (action == ACT_GRANT_TO) {
		if (check_role(value, why, sizeof(why)) < 0)
			return options_fail(ld->op, EXIT_USAGE, "--grant-to: %s", why);
		free(cfg->grant_to);
		if (!(cfg->grant_to = strdup(value)))
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
		return CONFIG_OK;
	}
	if (action == ACT_TO) {
		if (check_node_id(value, why, sizeof(why)) < 0)
			return options_fail(ld->op, EXIT_USAGE, "--to: %s", why);
		free(cfg->switchover_to);
		if (!(cfg->switchover_to = strdup(value)))
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
		return CONFIG_OK;
	}
	if (value_parse_duration(value, &ms) < 0 || ms <= 0)
		return options_fail(ld->op, EXIT_USAGE,
				    "--wait: invalid duration %s (more than 0; examples: 30s, 2m)",
				    value_quote(value, shown, sizeof(shown)));
	cfg->switchover_wait_ms = ms;
	cfg->trigger_wait = ld->wait_given = true;
	return CONFIG_OK;
}

static int action_cb(void *user, int action, const char *value)
{
	struct loader *ld = user;

	switch ((enum action)action) {
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
		if (!*value)
			return options_fail(ld->op, EXIT_USAGE, "-c: empty file name");
		ld->config_path = value;
		break;
	case ACT_JOB:
	case ACT_SINCE:
		return take_runs_option(ld, action, value);
	case ACT_TO:
	case ACT_WAIT:
	case ACT_GRANT_TO:
		return take_switchover_option(ld, action, value);
	case ACT_OUTPUT:
		ld->output_arg = value; /* a mode or a run id: read_argv knows which */
		break;
	}
	return CONFIG_OK;
}

/* ---- [job.NAME] sections ---- */

static int section_cb(void *user, int line, const char *name)
{
	struct loader *ld = user;
	struct section *grown;
	char why[128];
	const char *path = options_path(ld->op);

	if (check_job_name(name, why, sizeof(why)) < 0)
		return options_fail(ld->op, EXIT_CONFIG, "%s:%d: %s", path, line, why);
	for (size_t i = 0; i < ld->n_sections; i++)
		if (strcmp(ld->sections[i].job.name, name) == 0)
			return options_fail(ld->op, EXIT_CONFIG,
					    "%s:%d: [job.%s] is already defined on line %d",
					    path, line, name, ld->sections[i].line);
	if (!(grown = realloc(ld->sections, (ld->n_sections + 1) * sizeof(*grown))))
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	ld->sections = grown;
	grown[ld->n_sections] = (struct section){ .line = line };
	if (!(grown[ld->n_sections++].job.name = strdup(name)))
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	ld->cfg->job_sections = true;
	return CONFIG_OK;
}

/* "lock-key" or "Max_Runtime": the key it likely meant, or NULL. */
static const char *job_key_hint(const char *key)
{
	return options_nearest(key, false, &job_keys[0].key, JK_COUNT, sizeof(job_keys[0]));
}

static int unknown_job_key(struct loader *ld, int line, const char *name,
			   const char *key)
{
	const char *hint = job_key_hint(key);
	char shown[64];

	if (hint)
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s:%d: unknown key %s in [job.%s] (did you mean %s?)",
				    options_path(ld->op), line,
				    value_quote(key, shown, sizeof(shown)), name, hint);
	return options_fail(ld->op, EXIT_CONFIG,
			    "%s:%d: unknown key %s in [job.%s] (a job takes command, schedule, timezone, jitter, max_runtime, missed, missed_window, rerun_interrupted, overlap, retries, retry_delay, retry_max_delay, on_failure, on_failure_timeout, grace_period, restart, output, output_tail, shell, environment, environment_file, working_directory, user, group)",
			    options_path(ld->op), line, value_quote(key, shown, sizeof(shown)),
			    name);
}

static int section_key_cb(void *user, int line, const char *name, const char *key,
			  const char *value)
{
	struct loader *ld = user;
	struct section *sec = &ld->sections[ld->n_sections - 1];
	const char *path = options_path(ld->op);
	char why[256];
	void *field;
	int k;

	for (k = 0; k < JK_COUNT && strcmp(key, job_keys[k].key) != 0; k++)
		;
	if (k == JK_COUNT)
		return unknown_job_key(ld, line, name, key);
	if (sec->lines[k])
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s:%d: [job.%s] %s: already set on line %d; set it only once",
				    path, line, name, key, sec->lines[k]);
	field = k == JK_COMMAND ? (void *)&sec->command
				: (char *)&sec->job + job_keys[k].offset;
	if (setting_parse(find_row(key), field, value, why, sizeof(why)) < 0)
		return options_fail(ld->op, EXIT_CONFIG, "%s:%d: [job.%s] %s: %s", path,
				    line, name, key, why);
	sec->lines[k] = line;
	return CONFIG_OK;
}

/* One job key from a field of from (laid out as row says) to a field of
 * to: a string is copied. */
static int copy_key(const struct option_row *row, void *to, const void *from)
{
	switch (row->type) {
	case OPTION_DURATION:
	case OPTION_SIZE:
		*(int64_t *)to = *(const int64_t *)from;
		return 0;
	case OPTION_ENUM:
		*(int *)to = *(const int *)from;
		return 0;
	case OPTION_BOOL:
		*(bool *)to = *(const bool *)from;
		return 0;
	case OPTION_STRING:
		free(*(char **)to);
		*(char **)to = NULL;
		return *(char *const *)from && !(*(char **)to = strdup(*(char *const *)from))
		       ? -1 : 0;
	case OPTION_INT:
		*(int *)to = *(const int *)from;
		return 0;
	case OPTION_LOCK_KEY:
	case OPTION_TEXT:
	case OPTION_FLAG:
	case OPTION_ACTION:
		break;
	}
	return 0;
}

/* The job keys from cfg's fields (the top-level rows) into job, from first
 * on: JK_SCHEDULE for the default job, JK_TIMEZONE for what sections
 * inherit (never a schedule). */
static int copy_top_keys(const struct config *cfg, struct config_job *job,
			 enum job_key first)
{
	for (int k = first; k < JK_COUNT; k++) {
		const struct option_row *row = find_row(job_keys[k].key);

		if (copy_key(row, (char *)job + job_keys[k].offset,
			     (const char *)cfg + row->offset) < 0)
			return -1;
	}
	return 0;
}

static void free_job(struct config_job *job, char **shared_command)
{
	free(job->name);
	free(job->schedule);
	free(job->timezone);
	free(job->environment);
	free(job->environment_file);
	free(job->working_directory);
	free(job->user);
	free(job->group);
	jobproc_free(&job->process);
	free(job->on_failure);
	if (job->command != shared_command)
		value_free_words(job->command);
	memset(job, 0, sizeof(*job));
}

static void free_sections(struct loader *ld)
{
	for (size_t i = 0; i < ld->n_sections; i++) {
		free_job(&ld->sections[i].job, NULL);
		free(ld->sections[i].command);
	}
	free(ld->sections);
	ld->sections = NULL;
	ld->n_sections = 0;
	free_job(&ld->inherit, NULL);
}

#define MODE_BIT(mode) (1u << (mode))

/* The options that belong to subcommands, refused anywhere else. */
static int check_subcommand_options(struct loader *ld)
{
	static const struct {
		const char *option;
		unsigned modes;
		const char *where;
	} only[] = {
		{ "json", MODE_BIT(CONFIG_MODE_STATUS) | MODE_BIT(CONFIG_MODE_RUNS),
		  "'pgleader status' or 'pgleader runs'" },
		{ "watch", MODE_BIT(CONFIG_MODE_STATUS), "'pgleader status'" },
		{ "job", MODE_BIT(CONFIG_MODE_RUNS) | MODE_BIT(CONFIG_MODE_PAUSE) |
		  MODE_BIT(CONFIG_MODE_RESUME) | MODE_BIT(CONFIG_MODE_TRIGGER),
		  "'pgleader runs', 'pause', 'resume' or 'trigger'" },
		{ "since", MODE_BIT(CONFIG_MODE_RUNS), "'pgleader runs'" },
		{ "failed", MODE_BIT(CONFIG_MODE_RUNS), "'pgleader runs'" },
		{ "print-sql", MODE_BIT(CONFIG_MODE_INIT_DB), "'pgleader init-db'" },
		{ "grant-to", MODE_BIT(CONFIG_MODE_INIT_DB), "'pgleader init-db'" },
		{ "to", MODE_BIT(CONFIG_MODE_SWITCHOVER), "'pgleader switchover'" },
		{ "wait", MODE_BIT(CONFIG_MODE_SWITCHOVER) | MODE_BIT(CONFIG_MODE_TRIGGER),
		  "'pgleader switchover' or 'pgleader trigger'" },
		{ "force", MODE_BIT(CONFIG_MODE_PAUSE) | MODE_BIT(CONFIG_MODE_RESUME) |
		  MODE_BIT(CONFIG_MODE_SWITCHOVER) | MODE_BIT(CONFIG_MODE_TRIGGER),
		  "'pgleader pause', 'resume', 'switchover' or 'trigger'" },
	};
	const struct config *cfg = ld->cfg;
	const bool given[] = { cfg->json, cfg->watch, cfg->runs_job != NULL,
			       ld->since_given, cfg->runs_failed, cfg->print_sql, cfg->grant_to != NULL,
			       cfg->switchover_to != NULL,
			       ld->wait_given, cfg->force };

	for (size_t i = 0; i < sizeof(only) / sizeof(only[0]); i++)
		if (given[i] && !(only[i].modes & MODE_BIT(cfg->mode)))
			return options_fail(ld->op, EXIT_USAGE, "--%s is only valid with %s",
					    only[i].option, only[i].where);
	return CONFIG_OK;
}

/* The daemon's own options, given to a subcommand: a mistake, not a
 * setting to ignore (a file or the environment may hold them, shared with
 * the daemon). */
static int check_daemon_options(struct loader *ld)
{
	static const char *const keys[] = {
		"wait_timeout", "schedule", "timezone", "jitter", "max_runtime",
		"missed", "missed_window", "rerun_interrupted", "overlap", "once_per", "keep_runs",
		"output", "output_tail",
		"retries", "retry_delay", "retry_max_delay", "on_failure",
		"on_failure_timeout",
	};
	char option[32];

	if (!ld->subcommand)
		return CONFIG_OK;
	if (ld->cfg->nonblock)
		return options_fail(ld->op, EXIT_USAGE,
				    "--nonblock is not valid with 'pgleader %s'",
				    ld->subcommand);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!options_given(ld->op, keys[i]))
			continue;
		snprintf(option, sizeof(option), "%s", keys[i]);
		for (char *c = option; *c; c++)
			*c = *c == '_' ? '-' : *c;
		return options_fail(ld->op, EXIT_USAGE, "--%s is not valid with 'pgleader %s'",
				    option, ld->subcommand);
	}
	return CONFIG_OK;
}

/* "status", "runs", "init-db", "pause", "resume" or "switchover" as the
 * first word, and its own options. */
static int read_subcommand(struct loader *ld)
{
	static const struct {
		const char *word;
		enum config_mode mode;
	} subcommands[] = {
		{ "status", CONFIG_MODE_STATUS }, { "runs", CONFIG_MODE_RUNS },
		{ "init-db", CONFIG_MODE_INIT_DB }, { "pause", CONFIG_MODE_PAUSE },
		{ "resume", CONFIG_MODE_RESUME }, { "switchover", CONFIG_MODE_SWITCHOVER },
		{ "trigger", CONFIG_MODE_TRIGGER },
	};
	int result, first_word;
	bool after_dashdash;
	char shown[64];

	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(ld->words[0], subcommands[i].word) == 0) {
			ld->subcommand = subcommands[i].word;
			ld->cfg->mode = subcommands[i].mode;
		}
	if (!ld->subcommand)
		return CONFIG_OK;
	ld->cfg->status_mode = ld->cfg->mode == CONFIG_MODE_STATUS;
	/* The subcommand plays argv[0] for the options after it. */
	if ((result = options_read_argv(ld->op, ld->nwords, ld->words, &first_word,
					&after_dashdash)) != CONFIG_OK)
		return result;
	if (first_word < ld->nwords)
		return options_fail(ld->op, EXIT_USAGE, "%s takes no arguments (got %s)",
				    ld->subcommand,
				    value_quote(ld->words[first_word], shown, sizeof(shown)));
	ld->nwords = 0;
	return CONFIG_OK;
}

/* The options, then the command, or a subcommand and its own options. */
/* --output names two things (DESIGN 13): the daemon's output key (inherit
 * or log), which wins over the file and the environment as an option
 * does, and the run whose stored output 'pgleader runs' prints. */
static int take_output_option(struct loader *ld)
{
	static const struct option_row mode = { .type = OPTION_ENUM,
						.choices = output_modes };
	struct config *cfg = ld->cfg;
	char why[128], shown[64];
	int64_t id;

	if (!ld->output_arg)
		return CONFIG_OK;
	if (cfg->mode == CONFIG_MODE_RUNS) {
		if (value_parse_int(ld->output_arg, &id) < 0 || id <= 0)
			return options_fail(ld->op, EXIT_USAGE,
					    "--output: invalid run id %s (a run's number, as 'pgleader runs' shows it)",
					    value_quote(ld->output_arg, shown, sizeof(shown)));
		cfg->runs_output_id = id;
		if (cfg->json || cfg->runs_failed || cfg->runs_job || ld->since_given)
			return options_fail(ld->op, EXIT_USAGE,
					    "--output prints one run's output: it takes no --json, --failed, --job or --since");
		return CONFIG_OK;
	}
	if (cfg->mode != CONFIG_MODE_DAEMON)
		return options_fail(ld->op, EXIT_USAGE,
				    "--output is only valid with the daemon or 'pgleader runs'");
	if (setting_parse(&mode, &ld->output_mode, ld->output_arg, why, sizeof(why)) < 0)
		return options_fail(ld->op, EXIT_USAGE, "--output: %s", why);
	return CONFIG_OK;
}

static int read_argv(struct loader *ld, int argc, char **argv)
{
	int result, first_word;
	bool after_dashdash;

	if (argc < 1)
		return CONFIG_OK;
	if ((result = options_read_argv(ld->op, argc, argv, &first_word,
					&after_dashdash)) != CONFIG_OK)
		return result;
	ld->words = argv + first_word;
	ld->nwords = argc - first_word;
	if (ld->nwords > 0 && !after_dashdash &&
	    (result = read_subcommand(ld)) != CONFIG_OK)
		return result;
	if ((result = check_subcommand_options(ld)) != CONFIG_OK ||
	    (result = check_daemon_options(ld)) != CONFIG_OK ||
	    (result = take_output_option(ld)) != CONFIG_OK)
		return result;
	return options_check_argv(ld->op);
}

/* ---- rules between keys, once every layer is in ---- */

static int check_server_lease(struct loader *ld)
{
	const struct config *cfg = ld->cfg;
	int64_t needed = cfg->ping_interval_ms * cfg->ping_failures +
			 cfg->ping_timeout_ms + cfg->grace_period_ms;
	char lease[32], interval[32], timeout[32], grace[32], sum[32];

	if (cfg->server_lease_ms <= 0 || needed < cfg->server_lease_ms)
		return CONFIG_OK;
	return options_fail(ld->op, EXIT_CONFIG,
			    "server_lease %s must be greater than ping_interval %s * ping_failures %d + ping_timeout %s + grace_period %s = %s",
			    value_format_duration(cfg->server_lease_ms, lease, sizeof(lease)),
			    value_format_duration(cfg->ping_interval_ms, interval, sizeof(interval)),
			    cfg->ping_failures,
			    value_format_duration(cfg->ping_timeout_ms, timeout, sizeof(timeout)),
			    value_format_duration(cfg->grace_period_ms, grace, sizeof(grace)),
			    value_format_duration(needed, sum, sizeof(sum)));
}

static void free_peers(struct config_peer *peers, size_t n)
{
	for (size_t i = 0; peers && i < n; i++) {
		free(peers[i].node_id);
		free(peers[i].host);
		free(peers[i].port);
	}
	free(peers);
}

/* One member, "ID=HOST:PORT" with blanks around it, into peer. */
static int parse_peer(char *entry, struct config_peer *peer, char *why,
		      size_t whylen)
{
	char host[VALUE_HOST_MAX], port[VALUE_PORT_MAX], reason[128], shown[64];
	char *end = entry + strlen(entry), *eq;

	entry += strspn(entry, " \t");
	while (end > entry && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	if (!*entry)
		return value_why(why, whylen, "empty member in the list (expected ID=HOST:PORT,...)");
	if (!(eq = strchr(entry, '=')))
		return value_why(why, whylen, "member %s is not ID=HOST:PORT",
				value_quote(entry, shown, sizeof(shown)));
	*eq = '\0';
	if (check_node_id(entry, reason, sizeof(reason)) < 0)
		return value_why(why, whylen, "node id %s", reason);
	if (value_parse_host_port(eq + 1, false, host, port, reason, sizeof(reason)) < 0)
		return value_why(why, whylen, "member %s: invalid address %s: %s",
				entry, value_quote(eq + 1, shown, sizeof(shown)), reason);
	if (!(peer->node_id = strdup(entry)) || !(peer->host = strdup(host)) ||
	    !(peer->port = strdup(port)))
		return value_why(why, whylen, "out of memory");
	return 0;
}

static int add_peer(struct config_peer **peers, size_t *n, char *entry,
		    char *why, size_t whylen)
{
	struct config_peer *grown = realloc(*peers, (*n + 1) * sizeof(*grown));
	char shown[64];

	if (!grown)
		return value_why(why, whylen, "out of memory");
	*peers = grown;
	grown[*n] = (struct config_peer){ NULL, NULL, NULL };
	/* counted even when half made, so that free_peers frees its parts */
	if (parse_peer(entry, &grown[(*n)++], why, whylen) < 0)
		return -1;
	for (size_t i = 0; i + 1 < *n; i++)
		if (strcmp(grown[i].node_id, grown[*n - 1].node_id) == 0)
			return value_why(why, whylen, "node id %s is listed twice",
					value_quote(grown[i].node_id, shown, sizeof(shown)));
	return 0;
}

/* "ID=HOST:PORT,..." into an array; on error *peers still needs freeing. */
static int parse_peers(const char *list, struct config_peer **peers, size_t *n,
		       char *why, size_t whylen)
{
	char *copy = strdup(list), *entry = copy, *comma;
	int result = 0;

	if (!copy)
		return value_why(why, whylen, "out of memory");
	for (;;) {
		if ((comma = strchr(entry, ',')))
			*comma = '\0';
		result = add_peer(peers, n, entry, why, whylen);
		if (!comma || result < 0)
			break;
		entry = comma + 1;
	}
	free(copy);
	return result;
}

static bool lists_node(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (strcmp(cfg->peers[i].node_id, cfg->node_id) == 0)
			return true;
	return false;
}

static bool is_loopback(const struct addrinfo *ai)
{
	if (ai->ai_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr)
			>> 24) == 127;
	return ai->ai_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
}

/* Whether hosts a and b (names or numeric addresses) name the same
 * machine: equal, sharing an address, or both loopback addresses. A name
 * that does not resolve now shares nothing. */
static bool same_host(const char *a, const char *b)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ra = NULL, *rb = NULL;
	bool same = strcasecmp(a, b) == 0;

	if (!same && getaddrinfo(a, NULL, &hints, &ra) == 0 &&
	    getaddrinfo(b, NULL, &hints, &rb) == 0)
		for (const struct addrinfo *x = ra; x && !same; x = x->ai_next)
			for (const struct addrinfo *y = rb; y && !same; y = y->ai_next)
				same = (is_loopback(x) && is_loopback(y)) ||
				       (x->ai_addrlen == y->ai_addrlen &&
					memcmp(x->ai_addr, y->ai_addr, x->ai_addrlen) == 0);
	if (ra)
		freeaddrinfo(ra);
	if (rb)
		freeaddrinfo(rb);
	return same;
}

/* This node's member entry must be where its own HTTP server listens
 * (else the others ask someone else, or nobody, for this node's answer),
 * and no other member may be there (else this node asks itself). */
static int check_failsafe_self(struct loader *ld)
{
	const struct config *cfg = ld->cfg;
	const struct config_peer *self = NULL;
	char host[VALUE_HOST_MAX], port[VALUE_PORT_MAX], why[128], shown[64];
	bool wildcard;

	if (value_parse_host_port(cfg->http_addr, true, host, port, why, sizeof(why)) < 0)
		return CONFIG_OK; /* check_http_addr said so */
	wildcard = !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
	for (size_t i = 0; i < cfg->n_peers; i++)
		if (strcmp(cfg->peers[i].node_id, cfg->node_id) == 0)
			self = &cfg->peers[i];
	if (strcmp(self->port, port) != 0 || (!wildcard && !same_host(self->host, host)))
		return options_fail(ld->op, EXIT_CONFIG,
				    "failsafe_peers: this node's member %s is at %s:%s, "
				    "but its http_addr is %s",
				    value_quote(self->node_id, shown, sizeof(shown)),
				    self->host, self->port, cfg->http_addr);
	for (size_t i = 0; i < cfg->n_peers; i++) {
		const struct config_peer *o = &cfg->peers[i];

		if (o != self && strcmp(o->port, port) == 0 &&
		    (same_host(o->host, self->host) ||
		     same_host(o->host, wildcard ? "127.0.0.1" : host)))
			return options_fail(ld->op, EXIT_CONFIG,
					    "failsafe_peers: member %s is at %s:%s, this "
					    "node's own address",
					    value_quote(o->node_id, shown, sizeof(shown)),
					    o->host, o->port);
	}
	return CONFIG_OK;
}

/* A member's consent must outlast the longest a leader can take to notice
 * it is gone and stop its command: one round, its answers, the grace. */
static int check_failsafe_ttl(struct loader *ld)
{
	const struct config *cfg = ld->cfg;
	int64_t needed = cfg->ping_interval_ms + cfg->ping_timeout_ms +
			 cfg->grace_period_ms;
	char ttl[32], interval[32], timeout[32], grace[32], sum[32];

	if (needed < cfg->failsafe_ttl_ms)
		return CONFIG_OK;
	return options_fail(ld->op, EXIT_CONFIG,
			    "failsafe_ttl %s must be greater than ping_interval %s + ping_timeout %s + grace_period %s = %s",
			    value_format_duration(cfg->failsafe_ttl_ms, ttl, sizeof(ttl)),
			    value_format_duration(cfg->ping_interval_ms, interval, sizeof(interval)),
			    value_format_duration(cfg->ping_timeout_ms, timeout, sizeof(timeout)),
			    value_format_duration(cfg->grace_period_ms, grace, sizeof(grace)),
			    value_format_duration(needed, sum, sizeof(sum)));
}

/* Failsafe is on when failsafe_peers is set: the members reach each other
 * at their http_addr, and prove who they are with the shared secret. */
static int check_failsafe(struct loader *ld)
{
	struct config *cfg = ld->cfg;
	char why[256], shown[64];
	int result;

	if (!cfg->failsafe_peers)
		return CONFIG_OK;
	if (!cfg->http_addr)
		return options_fail(ld->op, EXIT_CONFIG,
				    "failsafe_peers needs http_addr: the members talk over HTTP");
	if (!cfg->failsafe_secret_file)
		return options_fail(ld->op, EXIT_CONFIG,
				    "failsafe_peers needs failsafe_secret_file");
	if (parse_peers(cfg->failsafe_peers, &cfg->peers, &cfg->n_peers, why,
			sizeof(why)) < 0)
		return options_fail(ld->op, EXIT_CONFIG, "failsafe_peers: %s", why);
	/* a subcommand may run on any machine: only a node must be a member */
	if (cfg->mode == CONFIG_MODE_DAEMON && !lists_node(cfg))
		return options_fail(ld->op, EXIT_CONFIG,
				    "failsafe_peers must list this node, node_id %s",
				    value_quote(cfg->node_id, shown, sizeof(shown)));
	if (!cfg->status_mode && (result = check_failsafe_self(ld)) != CONFIG_OK)
		return result;
	return check_failsafe_ttl(ld);
}

/* The host name passes the checks --node-id does: cut short, two hosts
 * could share one id; with a space or a control character it would not
 * read back from application_name. */
static int default_node_id(struct loader *ld)
{
	char host[256] = "", why[128];

	if (ld->cfg->node_id)
		return CONFIG_OK;
	if (gethostname(host, sizeof(host) - 1) < 0 || !*host)
		snprintf(host, sizeof(host), "localhost");
	if (check_node_id(host, why, sizeof(why)) < 0)
		return options_fail(ld->op, EXIT_CONFIG,
				    "the host name cannot be the node id: %s; set --node-id",
				    why);
	if (!(ld->cfg->node_id = strdup(host)))
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	return CONFIG_OK;
}

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

static char **copy_words(char *const *words, int nwords)
{
	char **argv = calloc((size_t)nwords + 1, sizeof(char *));

	for (int i = 0; argv && i < nwords; i++) {
		if (!(argv[i] = strdup(words[i]))) {
			value_free_words(argv);
			return NULL;
		}
	}
	return argv;
}

static int no_command(struct loader *ld)
{
	if (ld->cfg->config_file)
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s: no command given and no 'command' key",
				    options_path(ld->op));
	return options_fail(ld->op, EXIT_USAGE, "no command given (usage: " USAGE ")");
}

/* '' names no program: execvp would fail with 127, but only after this
 * node had taken the lock. */
static int check_command_name(struct loader *ld)
{
	char where[640];

	if (ld->cfg->command[0][0])
		return CONFIG_OK;
	if (ld->nwords > 0)
		return options_fail(ld->op, EXIT_USAGE,
				    "empty command name (usage: " USAGE ")");
	return options_fail(ld->op, EXIT_CONFIG, "%s: empty command name",
			    options_origin(ld->op, "command", where, sizeof(where)));
}

/* A command line written with shell syntax, which without shell = on
 * would reach the command as plain arguments (DESIGN 13): a crontab line
 * copied as it is must never run that way without a word. where names
 * the job's command key. */
static int shell_refused(struct loader *ld, const char *where, const char *job,
			 const char *syntax)
{
	char shown[8];

	value_printable(syntax, strspn(syntax, "|><;&$(`21"), shown, sizeof(shown));
	return options_fail(ld->op, EXIT_CONFIG,
			    "%s: job %s: the command holds shell syntax '%s', which "
			    "would be passed to it as plain arguments: set shell = on "
			    "to run it with /bin/sh -c", where, job, shown);
}

/* The command line's command replaces the file's; with --shell either one
 * goes to sh -c whole: splitting it here would undo the quoting the shell
 * needs, and --shell -- a '|' b means the script "a | b". Words from the
 * command line are the user's shell's already: only a line (the key or
 * PGLEADER_COMMAND) is looked at for shell syntax. */
static int build_command(struct loader *ld)
{
	struct config *cfg = ld->cfg;
	const char *line = options_text(ld->op, "command"), *syntax;
	char why[128], where[640];

	if (ld->nwords > 0)
		cfg->command = cfg->top.shell ? shell_script(ld->words, ld->nwords)
					      : copy_words(ld->words, ld->nwords);
	else if (!line && cfg->job_sections)
		return CONFIG_OK; /* the sections are the jobs */
	else if (!line)
		return no_command(ld);
	else if (cfg->top.shell && *line)
		cfg->command = shell_script((char *const *)&line, 1);
	else if ((syntax = value_shell_syntax(line)))
		return shell_refused(ld, options_origin(ld->op, "command", where,
							sizeof(where)), "default", syntax);
	else if (!(cfg->command = value_split_command(line, why, sizeof(why))))
		return options_fail(ld->op, EXIT_CONFIG, "%s: %s",
				    options_origin(ld->op, "command", where, sizeof(where)),
				    why);
	if (!cfg->command)
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	return check_command_name(ld);
}

/* ---- jobs ---- */

/* A section's command, split as [pgleader]'s is, shell and all. */
static int section_command(struct loader *ld, struct section *sec)
{
	const char *path = options_path(ld->op), *name = sec->job.name, *syntax;
	int line = sec->lines[JK_COMMAND];
	char why[128], where[640];

	if (!sec->command)
		return options_fail(ld->op, EXIT_CONFIG, "%s:%d: [job.%s] has no command",
				    path, sec->line, name);
	if (sec->job.shell && *sec->command)
		sec->job.command = shell_script(&sec->command, 1);
	else if ((syntax = value_shell_syntax(sec->command))) {
		snprintf(where, sizeof(where), "%s:%d: [job.%s] command", path, line, name);
		return shell_refused(ld, where, name, syntax);
	} else if (!(sec->job.command = value_split_command(sec->command, why, sizeof(why))))
		return options_fail(ld->op, EXIT_CONFIG, "%s:%d: [job.%s] command: %s",
				    path, line, name, why);
	if (!sec->job.command)
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	if (!sec->job.command[0][0])
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s:%d: [job.%s] command: empty command name", path, line,
				    name);
	return CONFIG_OK;
}

/* The keys a section leaves out come from [pgleader] (or its defaults);
 * those of a schedule need one in the section itself. */
static int build_section(struct loader *ld, struct section *sec)
{
	struct config_job *job = &sec->job;

	if (ld->cfg->command && strcmp(job->name, "default") == 0)
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s:%d: [job.default] clashes with the default job (the command line's or [pgleader]'s command); rename the section",
				    options_path(ld->op), sec->line);
	for (int k = JK_TIMEZONE; k < JK_COUNT; k++)
		if (!sec->lines[k] &&
		    copy_key(find_row(job_keys[k].key), (char *)job + job_keys[k].offset,
			     (const char *)&ld->inherit + job_keys[k].offset) < 0)
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	if (sec->lines[JK_RESTART] && job->schedule && job->restart != RESTART_NO)
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s:%d: [job.%s] restart is for a job without a schedule; "
				    "a scheduled job tries a failed run again with retries = N",
				    options_path(ld->op), sec->lines[JK_RESTART], job->name);
	for (int k = JK_SCHEDULED_FIRST; k <= JK_SCHEDULED_LAST; k++)
		if (sec->lines[k] && !job->schedule)
			return options_fail(ld->op, EXIT_CONFIG,
					    "%s:%d: [job.%s] %s needs a schedule in the section",
					    options_path(ld->op), sec->lines[k], job->name,
					    job_keys[k].key);
	return section_command(ld, sec);
}

/* jobs[]: the default job (the command line's or [pgleader]'s command)
 * first, then the sections in file order. */
static int build_jobs(struct loader *ld)
{
	struct config *cfg = ld->cfg;
	size_t n = (cfg->command ? 1 : 0) + ld->n_sections;
	int result;

	if (!(cfg->jobs = calloc(n ? n : 1, sizeof(*cfg->jobs))))
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	if (cfg->command) {
		cfg->jobs[0].command = cfg->command;
		cfg->n_jobs = 1;
		if (!(cfg->jobs[0].name = strdup("default")) ||
		    copy_top_keys(cfg, &cfg->jobs[0], JK_SCHEDULE) < 0)
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	}
	for (size_t i = 0; i < ld->n_sections; i++) {
		if ((result = build_section(ld, &ld->sections[i])) != CONFIG_OK)
			return result;
		cfg->jobs[cfg->n_jobs++] = ld->sections[i].job;
		memset(&ld->sections[i].job, 0, sizeof(ld->sections[i].job));
	}
	for (size_t i = 0; i < cfg->n_jobs; i++)
		if (!cfg->jobs[i].timezone && !(cfg->jobs[i].timezone = strdup("UTC")))
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	return CONFIG_OK;
}

/* Where job i's key k was set, for a message: its section's line, or
 * where the value it took was set (the command line, the environment,
 * [pgleader]). Returns buf. */
static const char *job_key_origin(const struct loader *ld, size_t i, int k, char *buf,
				  size_t len)
{
	size_t first = ld->cfg->command ? 1 : 0;
	const char *name = ld->cfg->jobs[i].name;
	char top[640];

	if (i < first)
		return options_origin(ld->op, job_keys[k].key, buf, len);
	if (ld->sections[i - first].lines[k])
		snprintf(buf, len, "%s:%d: [job.%s] %s", options_path(ld->op),
			 ld->sections[i - first].lines[k], name, job_keys[k].key);
	else
		snprintf(buf, len, "%s (for [job.%s])",
			 options_origin(ld->op, job_keys[k].key, top, sizeof(top)), name);
	return buf;
}

static int check_directory(const char *path, char *why, size_t whylen)
{
	struct stat st;
	char shown[VALUE_PATH_SHOWN + 8];

	value_path_shown(path, shown, sizeof(shown));
	if (stat(path, &st) < 0)
		return value_why(why, whylen, "%s: %s", shown, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return value_why(why, whylen, "%s is not a directory", shown);
	return 0;
}

/* The job's process as it will run: the user's variables, then the
 * environment's, then the file's (each wins over the one before, as in
 * systemd), the directory checked, the ids looked up. The key that failed,
 * or JK_COUNT. */
static int resolve_keys(struct config_job *job, char *why, size_t whylen)
{
	struct job_process *p = &job->process;

	if ((job->user || job->group) &&
	    jobproc_resolve_ids(job->user, job->group, p, &p->environment, why, whylen) < 0)
		return job->user ? JK_USER : JK_GROUP;
	if (job->environment &&
	    jobproc_parse_environment(job->environment, &p->environment, why, whylen) < 0)
		return JK_ENVIRONMENT;
	if (job->environment_file &&
	    jobproc_read_environment_file(job->environment_file, &p->environment, why,
					  whylen) < 0)
		return JK_ENVIRONMENT_FILE;
	if (job->working_directory &&
	    (check_directory(job->working_directory, why, whylen) < 0 ||
	     !(p->working_directory = strdup(job->working_directory))))
		return JK_WORKING_DIRECTORY;
	return JK_COUNT;
}

/* Only the daemon resolves: a subcommand reading the same file runs no
 * command, and need not run as root. */
static int resolve_processes(struct loader *ld)
{
	char why[512], where[1024];

	for (size_t i = 0; i < ld->cfg->n_jobs; i++) {
		int k;

		why[0] = '\0';
		k = resolve_keys(&ld->cfg->jobs[i], why, sizeof(why));

		if (k != JK_COUNT)
			return options_fail(ld->op, EXIT_CONFIG, "%s: %s",
					    job_key_origin(ld, i, k, where, sizeof(where)),
					    why[0] ? why : "out of memory");
	}
	return CONFIG_OK;
}

static bool any_schedule(const struct config *cfg)
{
	for (size_t i = 0; i < cfg->n_jobs; i++)
		if (cfg->jobs[i].schedule)
			return true;
	return cfg->top.schedule != NULL;
}

/* Whether a job that takes key k's top-level value, set in layer, has a
 * schedule: the command line and the environment set the default job's
 * only; [pgleader] also the sections that leave k out. */
static bool reaches_schedule(const struct loader *ld, int k, enum options_layer layer)
{
	const struct config *cfg = ld->cfg;
	size_t first = cfg->command ? 1 : 0;

	if (cfg->command && cfg->jobs[0].schedule)
		return true;
	for (size_t i = 0; layer == OPTIONS_LAYER_FILE && i < ld->n_sections; i++)
		if (!ld->sections[i].lines[k] && cfg->jobs[first + i].schedule)
			return true;
	return false;
}

static int layer_code(enum options_layer layer)
{
	return layer == OPTIONS_LAYER_ARGV ? EXIT_USAGE : EXIT_CONFIG;
}

/* jitter, max_runtime, missed, missed_window, rerun_interrupted: set where
 * no schedule can use them is a mistake, said so; and a top-level schedule
 * needs the default job. */
static int check_scheduled_keys(struct loader *ld)
{
	enum options_layer layer = options_layer(ld->op, "schedule");
	char where[640];

	if (ld->cfg->top.schedule && !ld->cfg->command)
		return options_fail(ld->op, layer_code(layer),
				    "%s: no job to schedule: there is no COMMAND and no 'command' key (a [job.NAME] section takes its own schedule)",
				    options_origin(ld->op, "schedule", where, sizeof(where)));
	layer = options_layer(ld->op, "restart");
	if (ld->cfg->command && ld->cfg->jobs[0].schedule && ld->cfg->restart != RESTART_NO &&
	    layer >= OPTIONS_LAYER_FILE)
		return options_fail(ld->op, layer_code(layer),
				    "%s is for a command without a schedule; a scheduled job "
				    "tries a failed run again with --retries N",
				    options_origin(ld->op, "restart", where, sizeof(where)));
	for (int k = JK_SCHEDULED_FIRST; k <= JK_SCHEDULED_LAST; k++) {
		layer = options_layer(ld->op, job_keys[k].key);
		if (layer < OPTIONS_LAYER_FILE || reaches_schedule(ld, k, layer))
			continue;
		options_origin(ld->op, job_keys[k].key, where, sizeof(where));
		if (layer != OPTIONS_LAYER_FILE)
			return options_fail(ld->op, layer_code(layer),
					    "%s needs a schedule: it applies to the default job only, which has none",
					    where);
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s needs a schedule: no job it applies to has one", where);
	}
	return CONFIG_OK;
}

/* --once-per is for a one-shot under a timer: it gives up at once or after
 * --wait-timeout, and a daemon with schedules claims its ticks itself. */
static int check_once_per(struct loader *ld)
{
	const struct config *cfg = ld->cfg;
	enum options_layer layer = options_layer(ld->op, "once_per");
	char where[640], other[640];

	if (cfg->once_per_ms <= 0)
		return CONFIG_OK;
	options_origin(ld->op, "once_per", where, sizeof(where));
	if (!cfg->nonblock && cfg->wait_timeout_ms < 0)
		return options_fail(ld->op, layer_code(layer),
				    "%s needs --nonblock or --wait-timeout (it is for one-shots)",
				    where);
	if (ld->n_sections > 0)
		return options_fail(ld->op, EXIT_CONFIG,
				    "%s excludes [job.NAME] sections (%s:%d)", where,
				    options_path(ld->op), ld->sections[0].line);
	if (!any_schedule(cfg))
		return CONFIG_OK;
	if (options_layer(ld->op, "schedule") == OPTIONS_LAYER_ARGV)
		layer = OPTIONS_LAYER_ARGV;
	return options_fail(ld->op, layer_code(layer), "%s excludes a schedule (%s)", where,
			    options_origin(ld->op, "schedule", other, sizeof(other)));
}

/* Priority 0 never leads (DESIGN 11): a one-shot with it could only give
 * up, so it is refused rather than left to say "held by another node". */
static int check_never_leads(struct loader *ld)
{
	const struct config *cfg = ld->cfg;
	char where[640];

	if (cfg->mode != CONFIG_MODE_DAEMON || cfg->priority != 0 ||
	    (!cfg->nonblock && cfg->wait_timeout_ms < 0))
		return CONFIG_OK;
	options_origin(ld->op, "priority", where, sizeof(where));
	return options_fail(ld->op, layer_code(options_layer(ld->op, "priority")),
			    "%s 0 never leads: it cannot run a one-shot (--nonblock, "
			    "--wait-timeout)", where);
}

/* poll_dsn is where a standby that would wait in a full queue polls
 * (DESIGN 15): with acquire = poll no standby waits in the queue, and it
 * would be ignored. */
static int check_poll_dsn(struct loader *ld)
{
	const struct config *cfg = ld->cfg;
	enum options_layer layer = options_layer(ld->op, "poll_dsn");
	char where[640];

	if (!cfg->poll_dsn || cfg->acquire == ACQUIRE_WAIT)
		return CONFIG_OK;
	options_origin(ld->op, "poll_dsn", where, sizeof(where));
	if (options_layer(ld->op, "acquire") == OPTIONS_LAYER_ARGV)
		layer = OPTIONS_LAYER_ARGV;
	return options_fail(ld->op, layer_code(layer), "%s needs acquire = wait "
			    "(it is where the standbys outside the lock's queue poll)",
			    where);
}

/* output's default (DESIGN 13): the one command without a schedule keeps
 * pgleader's stdout and stderr, as a Docker entrypoint's must; every other
 * job's output is logged, a line each, named by the job. */
static void resolve_output(struct config *cfg)
{
	bool one_command = !cfg->job_sections && cfg->n_jobs == 1 && !cfg->jobs[0].schedule;

	for (size_t i = 0; i < cfg->n_jobs; i++)
		if (cfg->jobs[i].output == OUTPUT_AUTO)
			cfg->jobs[i].output = one_command ? OUTPUT_INHERIT : OUTPUT_LOG;
}

static int finish_jobs(struct loader *ld)
{
	struct config *cfg = ld->cfg;
	int result;

	if ((result = build_jobs(ld)) != CONFIG_OK)
		return result;
	if (cfg->mode == CONFIG_MODE_DAEMON &&
	    ((result = check_scheduled_keys(ld)) != CONFIG_OK ||
	     (result = check_once_per(ld)) != CONFIG_OK ||
	     (result = check_never_leads(ld)) != CONFIG_OK ||
	     (result = check_poll_dsn(ld)) != CONFIG_OK ||
	     (result = resolve_processes(ld)) != CONFIG_OK))
		return result;
	cfg->uses_ledger = any_schedule(cfg) || cfg->job_sections || cfg->once_per_ms > 0;
	resolve_output(cfg);
	return CONFIG_OK;
}

static int finish(struct loader *ld)
{
	struct config *cfg = ld->cfg;
	int level = cfg->log_level + ld->verbosity, result;

	cfg->log_level = level < LOG_LEVEL_ERROR ? LOG_LEVEL_ERROR
		       : level > LOG_LEVEL_DEBUG ? LOG_LEVEL_DEBUG : level;
	if ((result = check_server_lease(ld)) != CONFIG_OK ||
	    (result = default_node_id(ld)) != CONFIG_OK ||
	    (result = check_failsafe(ld)) != CONFIG_OK)
		return result;
	if (cfg->mode == CONFIG_MODE_DAEMON &&
	    (result = build_command(ld)) != CONFIG_OK)
		return result;
	return finish_jobs(ld);
}

/* An empty variable counts as unset, but not the lock's identity: an
 * empty PGLEADER_LOCK_KEY or PGLEADER_LOCK_NAME (a "${KEY}" that expanded
 * to nothing) would take the default key, every other fleet's lock. */
static int check_lock_variables(struct loader *ld)
{
	const char *const names[] = { "PGLEADER_LOCK_KEY", "PGLEADER_LOCK_NAME" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = getenv(names[i]);

		if (v && !*v)
			return options_fail(ld->op, EXIT_CONFIG,
					    "%s is set but empty: set it or unset it", names[i]);
	}
	return CONFIG_OK;
}

static int load(struct loader *ld, int argc, char **argv)
{
	const char *path;
	int result;

	if ((result = read_argv(ld, argc, argv)) != CONFIG_OK ||
	    (result = options_load_defaults(ld->op)) != CONFIG_OK)
		return result;
	ld->cfg->top.missed_window_ms = -1; /* one interval of the schedule */
	path = ld->config_path ? ld->config_path : getenv("PGLEADER_CONFIG");
	if (path && *path) {
		if (!(ld->cfg->config_file = strdup(path)))
			return options_fail(ld->op, EXIT_CONFIG, "out of memory");
		if ((result = options_load_file(ld->op, path)) != CONFIG_OK)
			return result;
	}
	/* What a section leaves out: [pgleader]'s value, or the default. */
	if (copy_top_keys(ld->cfg, &ld->inherit, JK_TIMEZONE) < 0)
		return options_fail(ld->op, EXIT_CONFIG, "out of memory");
	if ((result = check_lock_variables(ld)) != CONFIG_OK ||
	    (result = options_load_environment(ld->op)) != CONFIG_OK ||
	    (result = options_load_argv(ld->op)) != CONFIG_OK)
		return result;
	if (ld->output_mode != OUTPUT_AUTO)
		ld->cfg->top.output = ld->output_mode;
	options_env_hint(ld->op, ld->cfg->env_hint, sizeof(ld->cfg->env_hint));
	return finish(ld);
}

int config_load(struct config *cfg, int argc, char **argv, char *err,
		size_t errlen)
{
	struct loader ld = { .cfg = cfg };
	int result;

	memset(cfg, 0, sizeof(*cfg));
	cfg->runs_since_ms = -1;
	cfg->switchover_wait_ms = 30000;
	if (errlen > 0)
		err[0] = '\0';
	if (!(ld.op = options_new(&spec, cfg, &ld, err, errlen))) {
		snprintf(err, errlen, "out of memory");
		return EXIT_CONFIG;
	}
	result = load(&ld, argc, argv);
	options_free(ld.op);
	free_sections(&ld);
	/* A caller that stops here owes nothing: only CONFIG_OK keeps cfg. */
	if (result != CONFIG_OK)
		config_free(cfg);
	return result;
}

/* ---- reload (DESIGN 13) ---- */

/* The keys a running daemon cannot take from a reload: its sessions,
 * election, HTTP server and failsafe fleet were made with them. */
#define RK_STR(name) { #name, offsetof(struct config, name), 's' }
#define RK_I64(name, key) { key, offsetof(struct config, name), 'l' }
#define RK_INT(name) { #name, offsetof(struct config, name), 'i' }
static const struct {
	const char *key;
	size_t offset;
	char type; /* s: char *, l: int64_t, i: int (and the enums), b: bool */
} restart_keys[] = {
	RK_STR(dsn), RK_STR(poll_dsn), RK_I64(lock_key, "lock_key"), RK_STR(lock_name),
	RK_STR(schema),
	RK_STR(node_id), RK_STR(http_addr), RK_STR(failsafe_peers),
	RK_STR(failsafe_secret_file), RK_STR(ledger_owner),
	{ "acquire", offsetof(struct config, acquire), 'e' },
	RK_I64(retry_interval_ms, "retry_interval"), RK_I64(ping_interval_ms, "ping_interval"),
	RK_I64(ping_timeout_ms, "ping_timeout"), RK_INT(ping_failures),
	RK_I64(server_lease_ms, "server_lease"), RK_I64(grace_period_ms, "grace_period"),
	RK_I64(takeover_delay_ms, "takeover_delay"), RK_INT(priority),
	RK_I64(priority_delay_ms, "priority_delay"), RK_INT(queue_depth),
	RK_I64(failsafe_ttl_ms, "failsafe_ttl"), RK_INT(log_level),
	{ "log_format", offsetof(struct config, log_format), 'e' },
};

/* Whether field k of a and b differ; if so, b's becomes a copy of a's. */
static bool keep_field(size_t k, struct config *fresh, const struct config *old)
{
	char *f = (char *)fresh + restart_keys[k].offset;
	const char *o = (const char *)old + restart_keys[k].offset;
	char **fs = (char **)(void *)f, *copy;
	char *const *os = (char *const *)(const void *)o;
	size_t size = restart_keys[k].type == 'l' ? sizeof(int64_t)
		: restart_keys[k].type == 'i' ? sizeof(int)
		: restart_keys[k].type == 'e' ? sizeof(enum acquire_mode) : sizeof(bool);

	if (restart_keys[k].type != 's') {
		if (!memcmp(f, o, size))
			return false;
		memcpy(f, o, size);
		return true;
	}
	if ((!*fs && !*os) || (*fs && *os && !strcmp(*fs, *os)))
		return false;
	copy = *os ? strdup(*os) : NULL;
	if (*os && !copy)
		return false; /* out of memory: the new value stays */
	free(*fs);
	*fs = copy;
	return true;
}

size_t config_keep_restart_keys(struct config *fresh, const struct config *old,
				char *names, size_t len)
{
	size_t n = 0, at = 0;

	names[0] = '\0';
	for (size_t k = 0; k < sizeof(restart_keys) / sizeof(restart_keys[0]); k++) {
		if (!keep_field(k, fresh, old))
			continue;
		if (at < len)
			at += (size_t)snprintf(names + at, len - at, "%s%s", n ? ", " : "",
					       restart_keys[k].key);
		n++;
	}
	return n;
}

void config_free(struct config *cfg)
{
	for (size_t i = 0; cfg->jobs && i < cfg->n_jobs; i++)
		free_job(&cfg->jobs[i], cfg->command);
	free(cfg->jobs);
	free(cfg->runs_job);
	free(cfg->switchover_to);
	free(cfg->grant_to);
	options_release(&spec, cfg);
	free_peers(cfg->peers, cfg->n_peers);
	free(cfg->config_file);
	value_free_words(cfg->command);
	memset(cfg, 0, sizeof(*cfg));
}

void config_usage(FILE *out)
{
	fputs("Usage: " USAGE "\n"
	      "       pgleader [OPTION]... -c FILE   (jobs from [job.NAME] sections)\n"
	      "       pgleader status [OPTION]... [--json] [--watch]\n"
	      "       pgleader runs [--job NAME] [--since DUR] [--failed] [--json] [OPTION]...\n"
	      "       pgleader runs --output RUN_ID [OPTION]...\n"
	      "       pgleader init-db [--print-sql] [--grant-to ROLE] [OPTION]...\n"
	      "       pgleader pause | resume [--job NAME] [OPTION]...\n"
	      "       pgleader switchover [--to NODE] [--wait DUR] [OPTION]...\n"
	      "       pgleader trigger [--job NAME] [--wait DUR] [--force] [OPTION]...\n"
	      "       pgleader --help | --version\n"
	      "\n"
	      "Runs COMMAND on exactly one machine of a fleet at a time: the one whose\n"
	      "pgleader holds a PostgreSQL advisory lock.\n"
	      "\n"
	      "Options (key: the setting's name in the file):\n", out);
	options_usage(&spec, out);
	fputs("\n"
	      "The file has a section [pgleader], and one [job.NAME] per further job\n"
	      "(command, schedule, timezone, jitter, max_runtime, missed, missed_window,\n"
	      "rerun_interrupted, overlap, retries, retry_delay, retry_max_delay,\n"
	      "on_failure, on_failure_timeout, grace_period, restart, output,\n"
	      "output_tail, shell, environment, environment_file, working_directory,\n"
	      "user, group; a key\n"
	      "left out takes its [pgleader] value). Every key can also be set as\n"
	      "PGLEADER_<KEY>, e.g. PGLEADER_LOCK_KEY. The command line wins over the\n"
	      "environment, which wins over the file; both set the default job's keys\n"
	      "only. DUR: 250ms, 5s, 1.5s, 2m, 1h or 0; a bare number is seconds.\n"
	      "SIZE: 512, 4KiB, 1MiB (B, K, KiB, M, MiB). The command is split\n"
	      "without expansions; a 'command' line with shell syntax (| > < ; & ` $()\n"
	      "is refused (78) unless shell = on. user and group need pgleader to run\n"
	      "as root (78 otherwise).\n"
	      "\n"
	      "Exit status: COMMAND's own, or 128+N if signal N killed it; 64 bad usage;\n"
	      "78 bad configuration; 69 permanent database error; 70 internal error;\n"
	      "75 gave up waiting (--conflict-exit-code); 126/127 COMMAND not\n"
	      "executable/not found.\n"
	      "pgleader status: 0 a leader exists, 3 none, 69 database unreachable.\n"
	      "pgleader switchover: 0 another node took over, 3 refused or no standby\n"
	      "took over within --wait, 69 database unreachable.\n", out);
}
