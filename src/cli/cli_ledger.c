/* cli_ledger.c: the ledger as the subcommands use it (init-db, runs, the
 * controls, status): a session whose every statement is bounded in time,
 * and the ledger checked, trusted, and created when missing. */
#include "cli_ledger.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "exit_codes.h"
#include "log.h"

#define SQLSTATE_NO_PRIVILEGE "42501" /* insufficient_privilege */

#define STR_(x) #x
#define STR(x) STR_(x)

const char *cli_ledger_schema(const struct config *cfg)
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
PGresult *cli_ledger_exec(PGconn *conn, const char *what, const char *sql,
			  int nparams, const char *const *params, bool quiet)
{
	int64_t deadline = now_ms() + CLI_LEDGER_TIMEOUT_MS;
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
		cli_fail(what, timed_out ? "no answer within "
			 STR(CLI_LEDGER_TIMEOUT_MS) " ms" : PQerrorMessage(conn));
	return NULL;
}

/* The session's own bounds, so that the server gives up too; and nothing
 * of anyone else's runs here (DESIGN 10): no row-level security policy
 * (an error instead), no name found outside pg_catalog. */
bool cli_ledger_bound(PGconn *conn, bool quiet)
{
	PGresult *res = cli_ledger_exec(conn, "cannot query",
					"SET statement_timeout = " STR(CLI_LEDGER_TIMEOUT_MS) ";"
					" SET lock_timeout = " STR(CLI_LEDGER_TIMEOUT_MS) ";"
					" SET row_security = off; SET search_path = pg_catalog",
					-1, NULL, quiet);
	bool ok = res && PQresultStatus(res) == PGRES_COMMAND_OK;

	if (res && !ok && !quiet)
		cli_fail("cannot query", PQresultErrorMessage(res));
	PQclear(res);
	return ok;
}

/* A query whose rows are wanted: NULL, with a line unless quiet, when it
 * failed. */
PGresult *cli_ledger_select(PGconn *conn, const char *sql, int nparams,
			    const char *const *params, bool quiet)
{
	PGresult *res = cli_ledger_exec(conn, "cannot query", sql, nparams, params, quiet);

	if (res && PQresultStatus(res) != PGRES_TUPLES_OK) {
		if (!quiet)
			cli_fail("cannot query", PQresultErrorMessage(res));
		PQclear(res);
		return NULL;
	}
	return res;
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
	cli_fail("cannot use the ledger", line);
}

/* What the check query says; false (with a line unless quiet) when it
 * could not be asked. */
bool cli_ledger_check(PGconn *conn, const struct config *cfg, enum ledger_state *state,
		      bool quiet)
{
	const char *schema = cli_ledger_schema(cfg);
	char *sql = ledger_sql_check(schema, cfg->ledger_owner);
	const char *values[LEDGER_CHECK_NCOLS];
	PGresult *res = sql ? cli_ledger_select(conn, sql, 0, NULL, quiet) : NULL;

	free(sql);
	if (!res)
		return false;
	if (PQntuples(res) != 1 || PQnfields(res) != LEDGER_CHECK_NCOLS) {
		PQclear(res);
		return false;
	}
	for (int i = 0; i < LEDGER_CHECK_NCOLS; i++)
		values[i] = cli_cell(res, 0, i);
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
 * fallback: see cli_connect. */
PGconn *cli_ledger_open(const struct config *cfg, const char *fallback, int *rc)
{
	PGconn *conn;

	*rc = EXIT_CONFIG;
	if (!ledger_sql_schema_ok(cli_ledger_schema(cfg))) {
		cli_fail("invalid schema", "a lower-case identifier of up to 63"
			 " characters [a-z0-9_], not starting with pg_ or a digit");
		return NULL;
	}
	if (!cli_dsn_parses(cfg->dsn))
		return NULL;
	/* 69, or 78 for a DSN libpq parses but cannot use (sslmode=bogus) */
	if (!(conn = cli_connect(cfg, fallback, rc)))
		return NULL;
	PQsetNoticeProcessor(conn, drop_notice_cb, NULL);
	if (!cli_ledger_bound(conn, false)) {
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* A role without CREATE on the database: what to grant, or who can run
 * the SQL instead. */
static void fail_privilege(PGconn *conn, const char *msg)
{
	char line[LOG_MSG_MAX];
	const char *db = PQdb(conn);

	snprintf(line, sizeof(line), "%s; the role needs CREATE on database \"%s\""
		 " (GRANT CREATE ON DATABASE ... TO ...), or a DBA can apply the SQL"
		 " of 'pgleader init-db --print-sql'", msg, db ? db : "?");
	cli_fail("cannot create the ledger", line);
}

int cli_ledger_create(PGconn *conn, const char *schema)
{
	char *sql = ledger_sql_init(schema);
	PGresult *res;
	const char *state;
	int rc = EXIT_OK;

	if (!sql) {
		cli_fail("cannot create the ledger", "out of memory");
		return EXIT_UNAVAILABLE;
	}
	/* One simple query: one implicit transaction, all or nothing. */
	res = cli_ledger_exec(conn, "cannot create the ledger", sql, -1, NULL, false);
	free(sql);
	if (!res)
		return EXIT_UNAVAILABLE;
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		if (state && strcmp(state, SQLSTATE_NO_PRIVILEGE) == 0)
			fail_privilege(conn, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
		else
			cli_fail("cannot create the ledger", PQresultErrorMessage(res));
		rc = EXIT_UNAVAILABLE;
	}
	PQclear(res);
	return rc;
}

int cli_ledger_ensure(PGconn *conn, const struct config *cfg)
{
	enum ledger_state state;

	if (!cli_ledger_check(conn, cfg, &state, false))
		return EXIT_UNAVAILABLE;
	return state == LEDGER_MISSING ? cli_ledger_create(conn, cli_ledger_schema(cfg))
	       : EXIT_OK;
}

int cli_ledger_usable(PGconn *conn, const struct config *cfg)
{
	enum ledger_state state;

	if (!cli_ledger_bound(conn, true) || !cli_ledger_check(conn, cfg, &state, true))
		return -1;
	return state != LEDGER_MISSING;
}

bool cli_ledger_present(PGconn *conn, const struct config *cfg)
{
	return cli_ledger_usable(conn, cfg) == 1;
}

/* ---- the jobs announced (DESIGN 11, 13) ----------------------------------- */

int cli_job_announced(PGconn *conn, const struct config *cfg, const char *key,
		      const char *job, char *names, size_t len)
{
	struct ledger_sql_query q;
	PGresult *res;
	int there = cli_ledger_usable(conn, cfg), yes;

	snprintf(names, len, "none");
	if (there <= 0)
		return there; /* no ledger: nothing was announced */
	if (!ledger_sql_announced(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10), job) ||
	    !(res = cli_ledger_select(conn, q.sql, q.nparams, q.params, false)))
		return -1;
	yes = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 1))
		snprintf(names, len, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return yes;
}

int cli_job_checked(PGconn *conn, const struct config *cfg, const char *key,
		    const char *job, const char *refused)
{
	char names[1400], line[LOG_MSG_MAX];
	int yes;

	if (!job || cfg->force)
		return EXIT_OK;
	yes = cli_job_announced(conn, cfg, key, job, names, sizeof(names));
	if (yes < 0)
		return EXIT_UNAVAILABLE;
	if (yes)
		return EXIT_OK;
	snprintf(line, sizeof(line), "no node announced job \"%s\" of lock %s (jobs "
		 "announced: %s); --force writes it anyway", job, key, names);
	cli_fail(refused, line);
	return EXIT_NO_LEADER;
}
