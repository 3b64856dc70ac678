/* ledger_cli.c: "pgleader init-db", "pgleader runs" and the jobs of
 * "pgleader status": blocking libpq over the ledger's session
 * (cli_ledger.c), every query bounded in time. */
#include "ledger_cli.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_ledger.h"
#include "clocks.h"
#include "exit_codes.h"
#include "ledger_sql.h"
#include "log.h"
#include "schedule.h"
#include "value.h"
#include "wire.h"

/* How many jobs status shows at most. */
#define JOBS_LIMIT 200

/* ---- init-db -------------------------------------------------------------- */

/* There, but this role may not use it: no DDL would change that. */
static void fail_access(const char *schema, enum ledger_state state)
{
	char line[512];

	snprintf(line, sizeof(line), "the ledger is in schema \"%s\" but this role may"
		 " not %s it: it needs USAGE on schema %s and %s", schema,
		 state == LEDGER_NO_ACCESS ? "read" : "write", schema,
		 state == LEDGER_NO_ACCESS ? "SELECT on its table runs"
		 : "SELECT, INSERT, UPDATE and DELETE on its tables runs, terms and jobs,"
		 " SELECT and DELETE on triggers (init-db --print-sql --grant-to ROLE"
		 " prints them)");
	cli_fail("cannot use the ledger", line);
}

/* init-db --print-sql: the creation in one transaction, and the grants
 * for the nodes' role in it (as comments without --grant-to). */
static int print_sql(const struct config *cfg)
{
	char *sql = ledger_sql_init_script(cli_ledger_schema(cfg));
	char *grants = ledger_sql_grants(cli_ledger_schema(cfg), cfg->grant_to);
	size_t body = sql ? strlen(sql) - strlen("COMMIT;\n") : 0;

	if (!sql || !grants) {
		free(sql);
		free(grants);
		cli_fail("cannot print the ledger's SQL", "invalid schema or out of memory");
		return EXIT_CONFIG;
	}
	printf("%.*s%sCOMMIT;\n", (int)body, sql, grants);
	free(sql);
	free(grants);
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_UNAVAILABLE;
}

/* init-db --grant-to ROLE: the grants, by the ledger's owner. */
static int grant(PGconn *conn, const struct config *cfg)
{
	char *sql = ledger_sql_grants(cli_ledger_schema(cfg), cfg->grant_to);
	PGresult *res;
	int rc = EXIT_OK;

	if (!sql) {
		cli_fail("cannot grant", "out of memory");
		return EXIT_UNAVAILABLE;
	}
	res = cli_ledger_exec(conn, "cannot grant", sql, -1, NULL, false);
	free(sql);
	if (!res)
		return EXIT_UNAVAILABLE;
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		cli_fail("cannot grant", PQresultErrorMessage(res));
		rc = EXIT_UNAVAILABLE;
	}
	PQclear(res);
	return rc;
}

int ledger_cli_init_db(const struct config *cfg)
{
	enum ledger_state state;
	PGconn *conn;
	int rc;

	if (cfg->print_sql)
		return print_sql(cfg);
	if (!(conn = cli_ledger_open(cfg, NULL, &rc)))
		return rc;
	rc = EXIT_OK;
	/* Already there and usable: nothing to create, and nothing that needs
	 * CREATE on the database (CREATE SCHEMA IF NOT EXISTS checks it even
	 * when the schema exists). */
	if (!cli_ledger_check(conn, cfg, &state, false))
		rc = EXIT_UNAVAILABLE;
	else if (state == LEDGER_MISSING)
		rc = cli_ledger_create(conn, cli_ledger_schema(cfg));
	else if (state != LEDGER_READY) {
		fail_access(cli_ledger_schema(cfg), state);
		rc = EXIT_UNAVAILABLE;
	}
	if (rc == EXIT_OK && cfg->grant_to)
		rc = grant(conn, cfg);
	if (rc == EXIT_OK)
		printf("ledger ready in schema \"%s\"%s%s\n", cli_ledger_schema(cfg),
		       cfg->grant_to ? "; granted to role " : "",
		       cfg->grant_to ? cfg->grant_to : "");
	PQfinish(conn);
	return rc;
}

/* ---- runs ----------------------------------------------------------------- */

/* cfg's key, from the lock name by the server as the daemon does. */
static bool resolve_key(PGconn *conn, const struct config *cfg, int64_t *key)
{
	char given[32];
	const char *params[2] = { given, cfg->lock_name };
	PGresult *res;

	snprintf(given, sizeof(given), "%" PRId64, cfg->lock_key);
	res = cli_ledger_select(conn, "SELECT COALESCE(" WIRE_KEY_OF_NAME("$2") ", $1::bigint)",
			  2, params, false);
	if (!res)
		return false;
	*key = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return true;
}

static const char *duration_text(const char *ms, char *buf, size_t len)
{
	if (!ms)
		return "-";
	value_format_duration(strtoll(ms, NULL, 10), buf, len);
	return strcmp(buf, "0") == 0 ? "0s" : buf;
}

/* A number column as JSON: null for SQL NULL. */
static json_t *number_or_null(const char *v)
{
	return v ? json_integer(strtoll(v, NULL, 10)) : json_null();
}

/* The object of one run: the fields of DESIGN 10 and 13. */
static json_t *run_json(const PGresult *res, int row)
{
	static const struct { const char *name; int col; } text[] = {
		{ "job", LEDGER_RUN_JOB }, { "tick", LEDGER_RUN_TICK },
		{ "node_id", LEDGER_RUN_NODE }, { "fencing_token", LEDGER_RUN_TOKEN },
		{ "outcome", LEDGER_RUN_OUTCOME },
	};
	const char *exit_status = cli_cell(res, row, LEDGER_RUN_EXIT);
	json_t *o = json_object();

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		json_object_set_new(o, text[i].name,
				    cli_json_text(cli_cell(res, row, text[i].col)));
	json_object_set_new(o, "exit_status", exit_status
			    ? json_integer(strtoll(exit_status, NULL, 10)) : json_null());
	json_object_set_new(o, "started_at",
			    cli_json_text(cli_cell(res, row, LEDGER_RUN_STARTED)));
	json_object_set_new(o, "finished_at",
			    cli_json_text(cli_cell(res, row, LEDGER_RUN_FINISHED)));
	json_object_set_new(o, "run_id", number_or_null(cli_cell(res, row, LEDGER_RUN_ID)));
	json_object_set_new(o, "output_bytes",
			    number_or_null(cli_cell(res, row, LEDGER_RUN_OUTPUT_BYTES)));
	json_object_set_new(o, "attempt", json_integer(cli_cell(res, row, LEDGER_RUN_ATTEMPT)
			    ? strtoll(cli_cell(res, row, LEDGER_RUN_ATTEMPT), NULL, 10) : 1));
	json_object_set_new(o, "trigger",
			    cli_json_text(cli_cell(res, row, LEDGER_RUN_TRIGGER)));
	return o;
}

static const char *const heads[] = { "TICK", "JOB", "NODE", "OUTCOME", "EXIT", "DURATION",
				     "RUN", "ATTEMPT", "BY" };
static const int head_cols[] = { LEDGER_RUN_TICK, LEDGER_RUN_JOB, LEDGER_RUN_NODE,
				 LEDGER_RUN_OUTCOME, LEDGER_RUN_EXIT, LEDGER_RUN_DURATION_MS,
				 LEDGER_RUN_ID, LEDGER_RUN_ATTEMPT, LEDGER_RUN_TRIGGER };
#define NHEADS ((int)(sizeof(heads) / sizeof(heads[0])))

/* Column c of a row as the table shows it. */
static const char *shown(const PGresult *res, int row, int c, char *buf, size_t len)
{
	const char *v = cli_cell(res, row, head_cols[c]);

	if (head_cols[c] == LEDGER_RUN_DURATION_MS)
		return duration_text(v, buf, len);
	if (head_cols[c] == LEDGER_RUN_TRIGGER) { /* DESIGN 13: who asked for it now */
		snprintf(buf, len, "%s%s", v ? "manual by " : "schedule", v ? v : "");
		return buf;
	}
	return v ? v : "-";
}

static void print_table(const PGresult *res, int n)
{
	int width[NHEADS];
	char buf[256];

	for (int c = 0; c < NHEADS; c++) {
		width[c] = (int)strlen(heads[c]);
		for (int r = 0; r < n; r++) {
			int w = (int)strlen(shown(res, r, c, buf, sizeof(buf)));

			width[c] = w > width[c] ? w : width[c];
		}
	}
	for (int r = -1; r < n; r++) {
		for (int c = 0; c < NHEADS; c++)
			cli_put_text(r < 0 ? heads[c] : shown(res, r, c, buf, sizeof(buf)),
					c + 1 < NHEADS ? width[c] + 2 : 0);
		putchar('\n');
	}
}

static void print_runs(const struct config *cfg, const PGresult *res)
{
	int n = PQntuples(res);
	json_t *a;

	if (n > LEDGER_CLI_RUNS_LIMIT) {
		n = LEDGER_CLI_RUNS_LIMIT;
		fprintf(stderr, "pgleader: showing the newest %d runs; narrow with --job"
			" or --since\n", n);
	}
	if (!cfg->json) {
		if (n == 0)
			puts(cfg->runs_failed ? "no failed runs" : "no runs");
		else
			print_table(res, n);
		return;
	}
	a = json_array();
	for (int r = 0; r < n; r++)
		json_array_append_new(a, run_json(res, r));
	cli_put_json(a);
}

/* The ledger is readable, or one line and false. */
static bool readable(PGconn *conn, const struct config *cfg)
{
	const char *schema = cli_ledger_schema(cfg);
	enum ledger_state state;
	char line[256];

	if (!cli_ledger_check(conn, cfg, &state, false))
		return false;
	if (state == LEDGER_MISSING) {
		snprintf(line, sizeof(line), "no ledger in schema \"%s\"; create it with"
			 " 'pgleader init-db'", schema);
		cli_fail("cannot list runs", line);
		return false;
	}
	if (state == LEDGER_NO_ACCESS) {
		fail_access(schema, state);
		return false;
	}
	return true;
}

/* runs --output RUN_ID: the bytes as the run wrote them (the last
 * output_tail of them), nothing added. */
static int print_output(const struct config *cfg, const PGresult *res, int64_t key)
{
	unsigned char *bytes;
	size_t len = 0;
	char line[160];

	if (PQntuples(res) == 0) {
		snprintf(line, sizeof(line), "lock key %" PRId64 " has no run %" PRId64
			 " (give the daemon's --lock-name or --lock-key)", key,
			 cfg->runs_output_id);
		cli_fail("cannot print a run's output", line);
		return EXIT_NO_LEADER;
	}
	if (PQgetisnull(res, 0, 0)) {
		fprintf(stderr, "pgleader: run %" PRId64 " has no stored output (output ="
			" inherit, output_tail = 0, or it was cut off)\n", cfg->runs_output_id);
		return EXIT_OK;
	}
	if (!(bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 0), &len))) {
		cli_fail("cannot print a run's output", "out of memory");
		return EXIT_UNAVAILABLE;
	}
	fwrite(bytes, 1, len, stdout);
	PQfreemem(bytes);
	return EXIT_OK;
}

/* The listing's statement, or --output's. */
static bool runs_query(struct ledger_sql_query *q, const struct config *cfg, int64_t key)
{
	if (cfg->runs_output_id > 0)
		return ledger_sql_run_output(q, cli_ledger_schema(cfg), key, cfg->runs_output_id);
	/* One row past the limit says the list was cut. */
	return ledger_sql_runs(q, cli_ledger_schema(cfg), key, cfg->runs_job,
			       cfg->runs_since_ms, LEDGER_CLI_RUNS_LIMIT + 1, cfg->runs_failed);
}

int ledger_cli_runs(const struct config *cfg)
{
	struct ledger_sql_query q;
	PGconn *conn;
	PGresult *res = NULL;
	int64_t key;
	int rc;

	if (!(conn = cli_ledger_open(cfg, NULL, &rc)))
		return rc;
	rc = EXIT_UNAVAILABLE;
	if (readable(conn, cfg) && resolve_key(conn, cfg, &key) && runs_query(&q, cfg, key) &&
	    (res = cli_ledger_select(conn, q.sql, q.nparams, q.params, false)) != NULL) {
		if (cfg->runs_output_id > 0) {
			rc = print_output(cfg, res, key);
		} else {
			print_runs(cfg, res);
			rc = EXIT_OK;
		}
		rc = fflush(stdout) == 0 ? rc : EXIT_UNAVAILABLE;
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* ---- the jobs of status --------------------------------------------------- */

struct jobs_read {
	PGresult *res; /* the summary's rows */
	char (*next)[40]; /* each row's next tick, RFC 3339; "" when none */
};

/* A job's next tick after the server's now, from the schedule its leader
 * announced (DESIGN 13), else from this configuration's schedule for it
 * (status run with the daemon's file); "" when neither has one. */
static void next_tick_of(const struct config *cfg, const PGresult *res, int row,
			 int64_t now, char *out, size_t len)
{
	const char *job = cli_cell(res, row, LEDGER_RUN_JOB);
	const char *sched = cli_cell(res, row, LEDGER_SUMMARY_SCHEDULE);
	const char *zone = cli_cell(res, row, LEDGER_SUMMARY_TIMEZONE);
	char err[LOG_MSG_MAX];
	struct schedule *s = NULL;
	int64_t t;

	out[0] = '\0';
	if (sched)
		s = schedule_new(sched, zone ? zone : "UTC", err, sizeof(err));
	for (size_t i = 0; i < cfg->n_jobs && !s && !sched; i++)
		if (!strcmp(cfg->jobs[i].name, job) && cfg->jobs[i].schedule)
			s = schedule_new(cfg->jobs[i].schedule, cfg->jobs[i].timezone,
					 err, sizeof(err));
	if (!s)
		return;
	t = schedule_next(s, now);
	schedule_free(s);
	if (t != SCHEDULE_NEVER)
		clocks_rfc3339(t, out, len);
}

/* The server's clock, which decides the ticks (DESIGN 10). */
static bool server_now(PGconn *conn, int64_t *ms)
{
	PGresult *res = cli_ledger_select(conn, LEDGER_SQL_CLOCK, 0, NULL, true);

	if (!res)
		return false;
	*ms = PQntuples(res) == 1 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
	PQclear(res);
	return *ms > 0;
}

/* Each job of the lock key (decimal text) with its last run, or NULL
 * when the ledger is absent, unreadable or does not answer in time; never
 * a message, never creates anything. */
static void *jobs_read(PGconn *conn, const struct config *cfg, const char *key)
{
	struct ledger_sql_query q;
	struct jobs_read *jobs;
	enum ledger_state state;
	PGresult *res;
	int64_t now;

	/* A status that found no ledger says nothing about it: most fleets
	 * run one command and have none. */
	if (!ledger_sql_summary(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10), JOBS_LIMIT) ||
	    !cli_ledger_bound(conn, true) ||
	    !cli_ledger_check(conn, cfg, &state, true) ||
	    state == LEDGER_MISSING || state == LEDGER_NO_ACCESS ||
	    !(res = cli_ledger_select(conn, q.sql, q.nparams, q.params, true)))
		return NULL;
	if (!(jobs = calloc(1, sizeof(*jobs))) ||
	    !(jobs->next = calloc((size_t)PQntuples(res) + 1, sizeof(*jobs->next)))) {
		free(jobs);
		PQclear(res);
		return NULL;
	}
	jobs->res = res;
	if (server_now(conn, &now))
		for (int r = 0; r < PQntuples(res); r++)
			next_tick_of(cfg, res, r, now, jobs->next[r], sizeof(jobs->next[r]));
	return jobs;
}

/* "  schedule S (ZONE)" or "  runs all the time", as its leader
 * announced it; nothing for a job no leader announces. */
static void print_announced(const PGresult *res, int r)
{
	const char *sched = cli_cell(res, r, LEDGER_SUMMARY_SCHEDULE);

	if (!cli_cell(res, r, LEDGER_SUMMARY_ANNOUNCED_BY))
		return;
	if (!sched) {
		fputs("  runs all the time", stdout);
		return;
	}
	fputs("  schedule ", stdout);
	cli_put_text(sched, 0);
	fputs(" (", stdout);
	cli_put_text(cli_cell(res, r, LEDGER_SUMMARY_TIMEZONE), 0);
	putchar(')');
}

/* "job:     NAME  last tick T  NODE  OUTCOME  exit N  DURATION  last success T",
 * or "job:     NAME  never run" for an announced one without a run */
static void jobs_print(const void *read)
{
	const struct jobs_read *jobs = read;
	const PGresult *res = jobs ? jobs->res : NULL;
	const char *exit_status, *success;
	char buf[32];

	for (int r = 0; res && r < PQntuples(res); r++) {
		exit_status = cli_cell(res, r, LEDGER_RUN_EXIT);
		success = cli_cell(res, r, LEDGER_RUN_LAST_SUCCESS);
		fputs("job:     ", stdout);
		cli_put_text(cli_cell(res, r, LEDGER_RUN_JOB), 0);
		print_announced(res, r);
		if (!cli_cell(res, r, LEDGER_RUN_TICK)) {
			fputs("  never run", stdout);
			if (jobs->next[r][0])
				printf("  next tick %s", jobs->next[r]);
			putchar('\n');
			continue;
		}
		fputs("  last tick ", stdout);
		cli_put_text(cli_cell(res, r, LEDGER_RUN_TICK), 0);
		fputs(" on ", stdout);
		cli_put_text(cli_cell(res, r, LEDGER_RUN_NODE), 0);
		fputs("  ", stdout);
		cli_put_text(cli_cell(res, r, LEDGER_RUN_OUTCOME), 0);
		if (exit_status)
			printf("  exit %s", exit_status);
		if (cli_cell(res, r, LEDGER_RUN_DURATION_MS))
			printf("  took %s", duration_text(cli_cell(res, r, LEDGER_RUN_DURATION_MS),
							  buf, sizeof(buf)));
		fputs("  last success ", stdout);
		cli_put_text(success ? success : "never", 0);
		if (jobs->next[r][0])
			printf("  next tick %s", jobs->next[r]);
		putchar('\n');
	}
}

/* DESIGN 13: "announced" (by whom, or false), "schedule", "timezone". */
static void announced_json(json_t *o, const PGresult *res, int r)
{
	const char *by = cli_cell(res, r, LEDGER_SUMMARY_ANNOUNCED_BY);

	json_object_set_new(o, "announced_by", cli_json_text(by));
	json_object_set_new(o, "schedule",
			    cli_json_text(cli_cell(res, r, LEDGER_SUMMARY_SCHEDULE)));
	json_object_set_new(o, "timezone",
			    cli_json_text(cli_cell(res, r, LEDGER_SUMMARY_TIMEZONE)));
}

/* The "jobs" array of status --json. */
static json_t *jobs_json(const void *read)
{
	const struct jobs_read *jobs = read;
	const PGresult *res = jobs ? jobs->res : NULL;
	const char *ms;
	json_t *a = json_array(), *o, *last;

	for (int r = 0; res && r < PQntuples(res); r++) {
		o = json_object();
		last = run_json(res, r);
		ms = cli_cell(res, r, LEDGER_RUN_DURATION_MS);
		json_object_set_new(last, "duration_seconds", ms
				    ? json_real((double)strtoll(ms, NULL, 10) / 1000.0)
				    : json_null());
		json_object_set_new(o, "job", cli_json_text(cli_cell(res, r, LEDGER_RUN_JOB)));
		announced_json(o, res, r);
		if (!cli_cell(res, r, LEDGER_RUN_TICK)) { /* announced, never run */
			json_decref(last);
			last = json_null();
		}
		json_object_set_new(o, "last_run", last);
		json_object_set_new(o, "last_success",
				    cli_json_text(cli_cell(res, r, LEDGER_RUN_LAST_SUCCESS)));
		/* from the schedule of the configuration status was given */
		json_object_set_new(o, "next_tick", jobs->next[r][0]
				    ? json_string(jobs->next[r]) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

static void jobs_free(void *read)
{
	struct jobs_read *jobs = read;

	if (!jobs)
		return;
	PQclear(jobs->res);
	free(jobs->next);
	free(jobs);
}

const struct cli_section ledger_cli_jobs_section = {
	"jobs", jobs_read, jobs_print, jobs_json, jobs_free,
};
