/* ledger_cli.c: "pgleader init-db", "pgleader runs" and the jobs of
 * "pgleader status": blocking libpq, as status does, with every query
 * bounded in time. */
#include "ledger_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clocks.h"
#include "exit_codes.h"
#include "ledger_sql.h"
#include "log.h"
#include "schedule.h"
#include "status.h"
#include "value.h"
#include "wire.h"

#define SQLSTATE_NO_PRIVILEGE "42501" /* insufficient_privilege */

#define STR_(x) #x
#define STR(x) STR_(x)

/* How many jobs status shows at most. */
#define JOBS_LIMIT 200

static const char *schema_of(const struct config *cfg)
{
	return cfg->schema ? cfg->schema : LEDGER_SQL_SCHEMA_DEFAULT;
}

/* ---- bounded queries ------------------------------------------------------ */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until a result can be read without blocking; false when the
 * deadline passed (*timed_out) or the connection broke. */
static bool wait_ready(PGconn *conn, int64_t deadline, bool *timed_out)
{
	struct pollfd pfd;
	int flush, left;

	for (;;) {
		if ((flush = PQflush(conn)) < 0 || !PQconsumeInput(conn))
			return false;
		if (flush == 0 && !PQisBusy(conn))
			return true;
		left = (int)(deadline - now_ms());
		if (left <= 0) {
			*timed_out = true;
			return false;
		}
		pfd.fd = PQsocket(conn);
		pfd.events = (short)(POLLIN | (flush ? POLLOUT : 0));
		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return false;
	}
}

/* Sends sql (several statements when nparams < 0) and returns the first
 * error or else the last result; NULL, with the line about what, when no
 * answer came in time or the connection broke. The connection is of no
 * further use after NULL: the callers end there. */
static PGresult *exec_bounded(PGconn *conn, const char *what, const char *sql,
			      int nparams, const char *const *params, bool quiet)
{
	int64_t deadline = now_ms() + LEDGER_CLI_TIMEOUT_MS;
	PGresult *res, *kept = NULL;
	bool timed_out = false;
	int sent = nparams < 0 ? PQsendQuery(conn, sql)
		   : PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	while (sent && wait_ready(conn, deadline, &timed_out) &&
	       (res = PQgetResult(conn)) != NULL) {
		if (kept && PQresultStatus(kept) == PGRES_FATAL_ERROR) {
			PQclear(res);
			continue;
		}
		PQclear(kept);
		kept = res;
	}
	if (sent && !timed_out && PQstatus(conn) == CONNECTION_OK && kept)
		return kept;
	PQclear(kept);
	if (!quiet)
		status_fail(what, timed_out ? "no answer within "
			    STR(LEDGER_CLI_TIMEOUT_MS) " ms" : PQerrorMessage(conn));
	return NULL;
}

/* The session's own bounds, so that the server gives up too; and nothing
 * of anyone else's runs here (DESIGN 10): no row-level security policy
 * (an error instead), no name found outside pg_catalog. */
static bool set_timeouts(PGconn *conn, bool quiet)
{
	PGresult *res = exec_bounded(conn, "cannot query",
				     "SET statement_timeout = " STR(LEDGER_CLI_TIMEOUT_MS) ";"
				     " SET lock_timeout = " STR(LEDGER_CLI_TIMEOUT_MS) ";"
				     " SET row_security = off; SET search_path = pg_catalog",
				     -1, NULL, quiet);
	bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;

	if (res && !ok && !quiet)
		status_fail("cannot query", PQresultErrorMessage(res));
	PQclear(res);
	return ok;
}

/* A query whose rows are wanted: NULL, with a line unless quiet, when it
 * failed. */
static PGresult *select_rows(PGconn *conn, const char *sql, int nparams,
			     const char *const *params, bool quiet)
{
	PGresult *res = exec_bounded(conn, "cannot query", sql, nparams, params, quiet);

	if (res && PQresultStatus(res) != PGRES_TUPLES_OK) {
		if (!quiet)
			status_fail("cannot query", PQresultErrorMessage(res));
		PQclear(res);
		return NULL;
	}
	return res;
}

static const char *cell(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* A ledger this role does not trust (DESIGN 10): one line, whatever the
 * caller's quiet, naming the owner and the fix; once (status checks the
 * ledger for the controls and for the jobs). */
static void fail_untrusted(const char *what, const char *schema)
{
	static bool said;
	char line[LOG_MSG_MAX];

	if (said)
		return;
	said = true;
	ledger_sql_untrusted_line(line, sizeof(line), what, schema);
	status_fail("cannot use the ledger", line);
}

/* What the check query says; false (with a line unless quiet) when it
 * could not be asked. */
static bool check_ledger(PGconn *conn, const struct config *cfg, enum ledger_state *state,
			 bool quiet)
{
	const char *schema = schema_of(cfg);
	char *sql = ledger_sql_check(schema, cfg->ledger_owner);
	const char *values[LEDGER_CHECK_NCOLS];
	PGresult *res = sql ? select_rows(conn, sql, 0, NULL, quiet) : NULL;

	free(sql);
	if (!res)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != LEDGER_CHECK_NCOLS) {
		PQclear(res);
		return false;
	}
	for (int i = 0; i < LEDGER_CHECK_NCOLS; i++)
		values[i] = cell(res, 0, i);
	*state = ledger_sql_parse_check(values);
	if (*state == LEDGER_UNTRUSTED)
		fail_untrusted(values[LEDGER_CHECK_UNTRUSTED], schema);
	PQclear(res);
	return *state != LEDGER_UNTRUSTED;
}

/* The creation's "already exists, skipping" notices are no news. */
static void drop_notice_cb(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* The DSN checked, connected, bounded; NULL with *rc set otherwise.
 * fallback: see status_connect_as; NULL: status's session name. */
static PGconn *open_session(const struct config *cfg, const char *fallback, int *rc)
{
	PGconn *conn;

	*rc = EXIT_CONFIG;
	if (!ledger_sql_schema_ok(schema_of(cfg))) {
		status_fail("invalid schema", "a lower-case identifier of up to 63"
			    " characters [a-z0-9_], not starting with pg_ or a digit");
		return NULL;
	}
	if (!status_dsn_parses(cfg->dsn))
		return NULL;
	/* 69, or 78 for a DSN libpq parses but cannot use (sslmode=bogus) */
	if (!(conn = fallback ? status_connect_as(cfg, fallback, rc)
		     : status_connect(cfg, rc)))
		return NULL;
	PQsetNoticeProcessor(conn, drop_notice_cb, NULL);
	if (!set_timeouts(conn, false)) {
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* ---- init-db -------------------------------------------------------------- */

/* A role without CREATE on the database: what to grant, or who can run
 * the SQL instead. */
static void fail_privilege(PGconn *conn, const char *msg)
{
	char line[LOG_MSG_MAX];
	const char *db = PQdb(conn);

	snprintf(line, sizeof(line), "%s; the role needs CREATE on database \"%s\""
		 " (GRANT CREATE ON DATABASE ... TO ...), or a DBA can apply the SQL"
		 " of 'pgleader init-db --print-sql'", msg, db ? db : "?");
	status_fail("cannot create the ledger", line);
}

static int create(PGconn *conn, const char *schema)
{
	char *sql = ledger_sql_init(schema);
	PGresult *res;
	const char *state;
	int rc = EXIT_OK;

	if (!sql) {
		status_fail("cannot create the ledger", "out of memory");
		return EXIT_UNAVAILABLE;
	}
	/* One simple query: one implicit transaction, all or nothing. */
	res = exec_bounded(conn, "cannot create the ledger", sql, -1, NULL, false);
	free(sql);
	if (!res)
		return EXIT_UNAVAILABLE;
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (state && strcmp(state, SQLSTATE_NO_PRIVILEGE) == 0)
			fail_privilege(conn, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
		else
			status_fail("cannot create the ledger", PQresultErrorMessage(res));
		rc = EXIT_UNAVAILABLE;
	}
	PQclear(res);
	return rc;
}

/* There, but this role may not use it: no DDL would change that. */
static void fail_access(const char *schema, enum ledger_state state)
{
	char line[512];

	snprintf(line, sizeof(line), "the ledger is in schema \"%s\" but this role may"
		 " not %s it: it needs USAGE on schema %s and %s", schema,
		 state == LEDGER_NO_ACCESS ? "read" : "write", schema,
		 state == LEDGER_NO_ACCESS ? "SELECT on its table runs"
		 : "SELECT, INSERT, UPDATE and DELETE on its tables runs and terms");
	status_fail("cannot use the ledger", line);
}

/* init-db --print-sql: the creation in one transaction, and the grants
 * for the nodes' role in it (as comments without --grant-to). */
static int print_sql(const struct config *cfg)
{
	char *sql = ledger_sql_init_script(schema_of(cfg));
	char *grants = ledger_sql_grants(schema_of(cfg), cfg->grant_to);
	size_t body = sql ? strlen(sql) - strlen("COMMIT;\n") : 0;

	if (!sql || !grants) {
		free(sql);
		free(grants);
		status_fail("cannot print the ledger's SQL", "invalid schema or out of memory");
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
	char *sql = ledger_sql_grants(schema_of(cfg), cfg->grant_to);
	PGresult *res;
	int rc = EXIT_OK;

	if (!sql) {
		status_fail("cannot grant", "out of memory");
		return EXIT_UNAVAILABLE;
	}
	res = exec_bounded(conn, "cannot grant", sql, -1, NULL, false);
	free(sql);
	if (!res)
		return EXIT_UNAVAILABLE;
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		status_fail("cannot grant", PQresultErrorMessage(res));
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
	if (!(conn = open_session(cfg, NULL, &rc)))
		return rc;
	rc = EXIT_OK;
	/* Already there and usable: nothing to create, and nothing that needs
	 * CREATE on the database (CREATE SCHEMA IF NOT EXISTS checks it even
	 * when the schema exists). */
	if (!check_ledger(conn, cfg, &state, false))
		rc = EXIT_UNAVAILABLE;
	else if (state == LEDGER_MISSING)
		rc = create(conn, schema_of(cfg));
	else if (state != LEDGER_READY) {
		fail_access(schema_of(cfg), state);
		rc = EXIT_UNAVAILABLE;
	}
	if (rc == EXIT_OK && cfg->grant_to)
		rc = grant(conn, cfg);
	if (rc == EXIT_OK)
		printf("ledger ready in schema \"%s\"%s%s\n", schema_of(cfg),
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
	res = select_rows(conn, "SELECT COALESCE(" WIRE_KEY_OF_NAME("$2") ", $1::bigint)",
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

/* The object of one run: exactly the fields of DESIGN 10. */
static json_t *run_json(const PGresult *res, int row)
{
	static const struct { const char *name; int col; } text[] = {
		{ "job", LEDGER_RUN_JOB }, { "tick", LEDGER_RUN_TICK },
		{ "node_id", LEDGER_RUN_NODE }, { "fencing_token", LEDGER_RUN_TOKEN },
		{ "outcome", LEDGER_RUN_OUTCOME },
	};
	const char *exit_status = cell(res, row, LEDGER_RUN_EXIT);
	json_t *o = json_object();

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		json_object_set_new(o, text[i].name,
				    status_json_text(cell(res, row, text[i].col)));
	json_object_set_new(o, "exit_status", exit_status
			    ? json_integer(strtoll(exit_status, NULL, 10)) : json_null());
	json_object_set_new(o, "started_at",
			    status_json_text(cell(res, row, LEDGER_RUN_STARTED)));
	json_object_set_new(o, "finished_at",
			    status_json_text(cell(res, row, LEDGER_RUN_FINISHED)));
	return o;
}

static const char *const heads[] = { "TICK", "JOB", "NODE", "OUTCOME", "EXIT", "DURATION" };
static const int head_cols[] = { LEDGER_RUN_TICK, LEDGER_RUN_JOB, LEDGER_RUN_NODE,
				 LEDGER_RUN_OUTCOME, LEDGER_RUN_EXIT, LEDGER_RUN_DURATION_MS };
#define NHEADS ((int)(sizeof(heads) / sizeof(heads[0])))

/* Column c of a row as the table shows it. */
static const char *shown(const PGresult *res, int row, int c, char *buf, size_t len)
{
	const char *v = cell(res, row, head_cols[c]);

	if (head_cols[c] == LEDGER_RUN_DURATION_MS)
		return duration_text(v, buf, len);
	return v ? v : "-";
}

static void print_table(const PGresult *res, int n)
{
	int width[NHEADS];
	char buf[32];

	for (int c = 0; c < NHEADS; c++) {
		width[c] = (int)strlen(heads[c]);
		for (int r = 0; r < n; r++) {
			int w = (int)strlen(shown(res, r, c, buf, sizeof(buf)));

			width[c] = w > width[c] ? w : width[c];
		}
	}
	for (int r = -1; r < n; r++) {
		for (int c = 0; c < NHEADS; c++)
			status_put_text(r < 0 ? heads[c] : shown(res, r, c, buf, sizeof(buf)),
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
			puts("no runs");
		else
			print_table(res, n);
		return;
	}
	a = json_array();
	for (int r = 0; r < n; r++)
		json_array_append_new(a, run_json(res, r));
	status_put_json(a);
}

/* The ledger is readable, or one line and false. */
static bool readable(PGconn *conn, const struct config *cfg)
{
	const char *schema = schema_of(cfg);
	enum ledger_state state;
	char line[256];

	if (!check_ledger(conn, cfg, &state, false))
		return false;
	if (state == LEDGER_MISSING) {
		snprintf(line, sizeof(line), "no ledger in schema \"%s\"; create it with"
			 " 'pgleader init-db'", schema);
		status_fail("cannot list runs", line);
		return false;
	}
	if (state == LEDGER_NO_ACCESS) {
		fail_access(schema, state);
		return false;
	}
	return true;
}

int ledger_cli_runs(const struct config *cfg)
{
	struct ledger_sql_query q;
	PGconn *conn;
	PGresult *res = NULL;
	int64_t key;
	int rc;

	if (!(conn = open_session(cfg, NULL, &rc)))
		return rc;
	rc = EXIT_UNAVAILABLE;
	/* One row past the limit says the list was cut. */
	if (readable(conn, cfg) && resolve_key(conn, cfg, &key) &&
	    ledger_sql_runs(&q, schema_of(cfg), key, cfg->runs_job, cfg->runs_since_ms,
			    LEDGER_CLI_RUNS_LIMIT + 1) &&
	    (res = select_rows(conn, q.sql, q.nparams, q.params, false)) != NULL) {
		print_runs(cfg, res);
		rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_UNAVAILABLE;
	}
	PQclear(res);
	PQfinish(conn);
	return rc;
}

/* ---- the jobs of status --------------------------------------------------- */

struct ledger_cli_jobs {
	PGresult *res; /* the summary's rows */
	char (*next)[40]; /* each row's next tick, RFC 3339; "" when none */
};

/* A job's next tick after the server's now, from this configuration's
 * schedule for it (status run with the daemon's file); "" when the job has
 * none here. */
static void next_tick_of(const struct config *cfg, const char *job, int64_t now,
			 char *out, size_t len)
{
	char err[LOG_MSG_MAX];
	struct schedule *s = NULL;
	int64_t t;

	out[0] = '\0';
	for (size_t i = 0; i < cfg->n_jobs && !s; i++)
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
	PGresult *res = select_rows(conn, LEDGER_SQL_CLOCK, 0, NULL, true);

	if (!res)
		return false;
	*ms = PQntuples(res) == 1 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
	PQclear(res);
	return *ms > 0;
}

struct ledger_cli_jobs *ledger_cli_jobs_read(PGconn *conn, const struct config *cfg,
					     const char *key)
{
	struct ledger_sql_query q;
	struct ledger_cli_jobs *jobs;
	enum ledger_state state;
	PGresult *res;
	int64_t now;

	/* A status that found no ledger says nothing about it: most fleets
	 * run one command and have none. */
	if (!ledger_sql_summary(&q, schema_of(cfg), strtoll(key, NULL, 10), JOBS_LIMIT) ||
	    !set_timeouts(conn, true) ||
	    !check_ledger(conn, cfg, &state, true) ||
	    state == LEDGER_MISSING || state == LEDGER_NO_ACCESS ||
	    !(res = select_rows(conn, q.sql, q.nparams, q.params, true)))
		return NULL;
	if (!(jobs = calloc(1, sizeof(*jobs))) ||
	    !(jobs->next = calloc((size_t)PQntuples(res) + 1, sizeof(*jobs->next)))) {
		free(jobs);
		PQclear(res);
		return NULL;
	}
	jobs->res = res;
	if (cfg->n_jobs && server_now(conn, &now))
		for (int r = 0; r < PQntuples(res); r++)
			next_tick_of(cfg, cell(res, r, LEDGER_RUN_JOB), now, jobs->next[r],
				     sizeof(jobs->next[r]));
	return jobs;
}

/* "job:     NAME  last tick T  NODE  OUTCOME  exit N  DURATION  last success T" */
void ledger_cli_jobs_print(const struct ledger_cli_jobs *jobs)
{
	const PGresult *res = jobs ? jobs->res : NULL;
	const char *exit_status, *success;
	char buf[32];

	for (int r = 0; res && r < PQntuples(res); r++) {
		exit_status = cell(res, r, LEDGER_RUN_EXIT);
		success = cell(res, r, LEDGER_RUN_LAST_SUCCESS);
		fputs("job:     ", stdout);
		status_put_text(cell(res, r, LEDGER_RUN_JOB), 0);
		fputs("  last tick ", stdout);
		status_put_text(cell(res, r, LEDGER_RUN_TICK), 0);
		fputs(" on ", stdout);
		status_put_text(cell(res, r, LEDGER_RUN_NODE), 0);
		fputs("  ", stdout);
		status_put_text(cell(res, r, LEDGER_RUN_OUTCOME), 0);
		if (exit_status)
			printf("  exit %s", exit_status);
		if (cell(res, r, LEDGER_RUN_DURATION_MS))
			printf("  took %s", duration_text(cell(res, r, LEDGER_RUN_DURATION_MS),
							  buf, sizeof(buf)));
		fputs("  last success ", stdout);
		status_put_text(success ? success : "never", 0);
		if (jobs->next[r][0])
			printf("  next tick %s", jobs->next[r]);
		putchar('\n');
	}
}

json_t *ledger_cli_jobs_json(const struct ledger_cli_jobs *jobs)
{
	const PGresult *res = jobs ? jobs->res : NULL;
	const char *ms;
	json_t *a = json_array(), *o, *last;

	for (int r = 0; res && r < PQntuples(res); r++) {
		o = json_object();
		last = run_json(res, r);
		ms = cell(res, r, LEDGER_RUN_DURATION_MS);
		json_object_set_new(last, "duration_seconds", ms
				    ? json_real((double)strtoll(ms, NULL, 10) / 1000.0)
				    : json_null());
		json_object_set_new(o, "job", status_json_text(cell(res, r, LEDGER_RUN_JOB)));
		json_object_set_new(o, "last_run", last);
		json_object_set_new(o, "last_success",
				    status_json_text(cell(res, r, LEDGER_RUN_LAST_SUCCESS)));
		/* from the schedule of the configuration status was given */
		json_object_set_new(o, "next_tick", jobs->next[r][0]
				    ? json_string(jobs->next[r]) : json_null());
		json_array_append_new(a, o);
	}
	return a;
}

void ledger_cli_jobs_free(struct ledger_cli_jobs *jobs)
{
	if (!jobs)
		return;
	PQclear(jobs->res);
	free(jobs->next);
	free(jobs);
}

/* ---- for the controls (controls_cli.c) ------------------------------------ */

PGconn *ledger_cli_open(const struct config *cfg, const char *fallback, int *rc)
{
	return open_session(cfg, fallback, rc);
}

PGresult *ledger_cli_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			  const char *const *params, bool quiet)
{
	return exec_bounded(conn, what, sql, nparams, params, quiet);
}

int ledger_cli_ensure(PGconn *conn, const struct config *cfg)
{
	enum ledger_state state;

	if (!check_ledger(conn, cfg, &state, false))
		return EXIT_UNAVAILABLE;
	return state == LEDGER_MISSING ? create(conn, schema_of(cfg)) : EXIT_OK;
}

int ledger_cli_usable(PGconn *conn, const struct config *cfg)
{
	enum ledger_state state;

	if (!set_timeouts(conn, true) || !check_ledger(conn, cfg, &state, true))
		return -1;
	return state != LEDGER_MISSING;
}

bool ledger_cli_present(PGconn *conn, const struct config *cfg)
{
	return ledger_cli_usable(conn, cfg) == 1;
}
