/* trigger_cli.c: "pgleader trigger" (DESIGN 13): a run of a job asked for
 * now, written in the ledger for the leader, which claims and runs it
 * once; with --wait, followed to its end. Blocking libpq over the ledger's
 * session (cli_ledger.c). */
#include "trigger_cli.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_ledger.h"
#include "controls_sql.h"
#include "exit_codes.h"
#include "ledger_sql.h"
#include "log.h"
#include "value.h"

#define SQLSTATE_UNIQUE "23505"
#define SQLSTATE_NO_PRIVILEGE "42501"
/* How often --wait looks at the run. */
#define POLL_MS 100
/* Two requests of one job in the same microsecond: the second is written
 * again, at most this many times. */
#define WRITE_TRIES 3

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static bool is_null(const PGresult *res, int col)
{
	return PQgetisnull(res, 0, col);
}

/* The request written: its row, or NULL with one line. */
static PGresult *write_request(PGconn *conn, const struct config *cfg, const char *key)
{
	struct ledger_sql_query q;
	char line[LOG_MSG_MAX];

	if (!controls_sql_trigger(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10),
				  cfg->runs_job, cfg->force))
		return NULL;
	for (int i = 0; i < WRITE_TRIES; i++) {
		PGresult *res = cli_ledger_exec(conn, "cannot ask for a run", q.sql, q.nparams,
						q.params, false);
		const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

		if (!res || PQresultStatus(res) == PGRES_TUPLES_OK)
			return res;
		if (state && !strcmp(state, SQLSTATE_UNIQUE) && i + 1 < WRITE_TRIES) {
			PQclear(res);
			continue;
		}
		if (state && !strcmp(state, SQLSTATE_NO_PRIVILEGE))
			snprintf(line, sizeof(line), "%s; the role needs INSERT on %s.triggers"
				 " (GRANT INSERT ON %s.triggers TO ...)",
				 PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
				 cli_ledger_schema(cfg), cli_ledger_schema(cfg));
		else
			snprintf(line, sizeof(line), "%s", PQresultErrorMessage(res));
		cli_fail("cannot ask for a run", line);
		PQclear(res);
		return NULL;
	}
	return NULL;
}

/* Why nothing was written, as one line (exit 3), or 0 when it was. */
static int refused(const PGresult *res, const char *key)
{
	const char *job = PQgetvalue(res, 0, CONTROLS_TRIGGER_JOB);
	const char *jobs = is_null(res, CONTROLS_TRIGGER_SCHEDULED_JOBS) ? "none"
			   : PQgetvalue(res, 0, CONTROLS_TRIGGER_SCHEDULED_JOBS);
	char line[LOG_MSG_MAX];

	if (!is_null(res, CONTROLS_TRIGGER_ASKED_AT))
		return EXIT_OK;
	if (is_null(res, CONTROLS_TRIGGER_JOB))
		snprintf(line, sizeof(line), "lock %s has %s scheduled job announced: name "
			 "one with --job (announced: %s)", key,
			 strcmp(jobs, "none") ? "more than one" : "no", jobs);
	else if (!is_null(res, CONTROLS_TRIGGER_PAUSED_BY))
		snprintf(line, sizeof(line), "job \"%s\" is paused (asked by %s at %s): "
			 "'pgleader resume' first", job,
			 PQgetvalue(res, 0, CONTROLS_TRIGGER_PAUSED_BY),
			 PQgetvalue(res, 0, CONTROLS_TRIGGER_PAUSED_AT));
	else if (!is_null(res, CONTROLS_TRIGGER_SCHEDULED))
		snprintf(line, sizeof(line), "job \"%s\" has no schedule: it runs all the "
			 "time while its node leads, so there is no run to ask for", job);
	else
		snprintf(line, sizeof(line), "no node announced job \"%s\" of lock %s (jobs "
			 "announced with a schedule: %s); --force writes it anyway", job, key,
			 jobs);
	cli_fail("trigger refused", line);
	return EXIT_NO_LEADER;
}

/* The run's exit: its exit status when it has one, else 3. */
static int run_ended(const PGresult *res)
{
	const char *outcome = PQgetvalue(res, 0, CONTROLS_RUN_OUTCOME);
	bool exited = !is_null(res, CONTROLS_RUN_EXIT);

	fputs("run ", stdout);
	cli_put_text(PQgetvalue(res, 0, CONTROLS_RUN_ID), 0);
	fputs(" ", stdout);
	cli_put_text(outcome, 0);
	if (exited)
		printf(" (exit status %s)\n", PQgetvalue(res, 0, CONTROLS_RUN_EXIT));
	else
		fputs(" (no exit status)\n", stdout);
	if (!exited || (strcmp(outcome, "succeeded") && strcmp(outcome, "failed") &&
			strcmp(outcome, "timed_out")))
		return EXIT_NO_LEADER;
	return (int)strtol(PQgetvalue(res, 0, CONTROLS_RUN_EXIT), NULL, 10) & 0xff;
}

/* One look at the run: -1 to look again, else the exit code. */
static int look(PGconn *conn, const struct config *cfg, const char *key, const char *job,
		int64_t asked_us, bool *said_start)
{
	struct ledger_sql_query q;
	PGresult *res;
	int rc = -1;

	if (!controls_sql_trigger_run(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10),
				      job, asked_us) ||
	    !(res = cli_ledger_select(conn, q.sql, q.nparams, q.params, false)))
		return EXIT_UNAVAILABLE;
	if (PQntuples(res) != 1 || PQnfields(res) != CONTROLS_TRIGGER_RUN_NCOLS) {
		cli_fail("cannot follow the run", "unexpected answer from the ledger");
		rc = EXIT_UNAVAILABLE;
	} else if (is_null(res, CONTROLS_RUN_ID) &&
		   strcmp(PQgetvalue(res, 0, CONTROLS_RUN_ASKED), "t") != 0) {
		cli_fail("not run", "the request is gone from the ledger and no run was "
			 "claimed for it (pruned or deleted)");
		rc = EXIT_NO_LEADER;
	} else if (!is_null(res, CONTROLS_RUN_ID) &&
		   strcmp(PQgetvalue(res, 0, CONTROLS_RUN_ENDED), "t") == 0) {
		rc = run_ended(res);
	} else if (!is_null(res, CONTROLS_RUN_ID) && !*said_start) {
		fputs("run ", stdout);
		cli_put_text(PQgetvalue(res, 0, CONTROLS_RUN_ID), 0);
		fputs(" started on node ", stdout);
		cli_put_text(PQgetvalue(res, 0, CONTROLS_RUN_NODE), 0);
		putchar('\n');
		fflush(stdout);
		*said_start = true;
	}
	PQclear(res);
	return rc;
}

/* --wait DUR: until the run ends, or DUR is over (3). */
static int await_run(PGconn *conn, const struct config *cfg, const char *key,
		     const char *job, int64_t asked_us)
{
	double until = now_mono() + (double)cfg->switchover_wait_ms / 1000;
	bool said_start = false;
	char bound[32], line[LOG_MSG_MAX];
	int rc;

	while ((rc = look(conn, cfg, key, job, asked_us, &said_start)) < 0) {
		if (now_mono() >= until) {
			value_format_duration(cfg->switchover_wait_ms, bound, sizeof(bound));
			snprintf(line, sizeof(line), "the run %s within %s (--wait); the request "
				 "stands, and 'pgleader runs --job %s' shows the run",
				 said_start ? "did not end" : "did not start", bound, job);
			cli_fail("trigger", line);
			return EXIT_NO_LEADER;
		}
		nanosleep(&(struct timespec){ 0, POLL_MS * 1000000L }, NULL);
	}
	return rc;
}

/* The leader hears of the request at once (it LISTENs), instead of at its
 * next read; without it (a NOTIFY refused) it reads it then. */
static void tell_the_leader(PGconn *conn, const char *key)
{
	const char *params[1] = { key };
	PGresult *res = cli_ledger_select(conn, "SELECT pg_catalog.pg_notify('"
					  LEDGER_SQL_TRIGGERS_CHANNEL "', $1::text)",
					  1, params, true);

	PQclear(res);
}

static int trigger(PGconn *conn, const struct config *cfg, const char *key)
{
	char bound[32], job[128];
	int64_t asked_us;
	PGresult *res;
	int rc;

	if ((rc = cli_ledger_ensure(conn, cfg)) != EXIT_OK)
		return rc;
	if (!(res = write_request(conn, cfg, key)))
		return EXIT_UNAVAILABLE;
	if (PQntuples(res) != 1 || PQnfields(res) != CONTROLS_TRIGGER_NCOLS) {
		cli_fail("cannot ask for a run", "unexpected answer from the ledger");
		PQclear(res);
		return EXIT_UNAVAILABLE;
	}
	if ((rc = refused(res, key)) != EXIT_OK) {
		PQclear(res);
		return rc;
	}
	snprintf(job, sizeof(job), "%s", PQgetvalue(res, 0, CONTROLS_TRIGGER_JOB));
	asked_us = strtoll(PQgetvalue(res, 0, CONTROLS_TRIGGER_ASKED_US), NULL, 10);
	tell_the_leader(conn, key);
	/* The leader reads the requests at each ping interval. */
	value_format_duration(cfg->ping_interval_ms, bound, sizeof(bound));
	fputs("asked for a run of job ", stdout);
	cli_put_text(job, 0);
	fputs(" now, as ", stdout);
	cli_put_text(PQgetvalue(res, 0, CONTROLS_TRIGGER_ASKED_BY), 0);
	fputs(" at ", stdout);
	cli_put_text(PQgetvalue(res, 0, CONTROLS_TRIGGER_ASKED_AT), 0);
	printf("; the leader starts it at once (within %s), or once the run going on"
	       " ends\n", bound);
	fflush(stdout);
	PQclear(res);
	return cfg->trigger_wait ? await_run(conn, cfg, key, job, asked_us) : EXIT_OK;
}

int trigger_cli_run(const struct config *cfg)
{
	char key[32];
	int rc = EXIT_UNAVAILABLE;
	PGconn *conn = cli_ledger_open(cfg, "pgleader-trigger", &rc);

	if (!conn)
		return rc;
	rc = EXIT_UNAVAILABLE;
	if (cli_resolve_key(conn, cfg, key, sizeof(key)))
		rc = trigger(conn, cfg, key);
	PQfinish(conn);
	if (fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_UNAVAILABLE;
	return rc;
}
