/* ledger_sql.h: the ledger's SQL (DESIGN 10), as text: the schema, the check
 * that it is there and usable, the run listing and the per-job summary. No
 * libpq here: callers send it. */
#ifndef PGLEADER_LEDGER_SQL_H
#define PGLEADER_LEDGER_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEDGER_SQL_SCHEMA_DEFAULT "pgleader"
#define LEDGER_SQL_VERSION 5

/* The creation takes this transaction-scoped advisory lock first, so that
 * two processes creating the ledger at once (two daemons starting
 * together) run one after the other: concurrent CREATE ... IF NOT EXISTS
 * can fail on pg_type's unique index. The bytes of "pgledger". */
#define LEDGER_SQL_INIT_LOCK "8099561637581120882" /* 0x70676c6564676572 */

/* Room for the longest statement built here (the creation, with a schema
 * name of 63 bytes; about 6 KB with "pgleader"). A caller that sends the
 * creation through a buffer of its own needs this much. */
#define LEDGER_SQL_MAX 16384

/* A schema name the builders take: a plain lower-case identifier, 1 to 63
 * bytes of [a-z0-9_], not starting with a digit, not pg_* (reserved by
 * PostgreSQL). It is always written double-quoted, so a keyword is fine. */
bool ledger_sql_schema_ok(const char *schema);

/* tmpl with @S written as the schema's quoted identifier and @L as its
 * string literal, into buf; false (buf "") for a bad schema or when it does
 * not fit. For the SQL of other modules (controls_sql.c). */
bool ledger_sql_expand(char *buf, size_t len, const char *tmpl, const char *schema);

/* A time as RFC 3339 UTC; whole seconds without a fraction. */
#define LEDGER_SQL_TS(x) "to_char(" x " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS' ||" \
	" CASE WHEN date_trunc('second', " x ") = " x " THEN '\"Z\"' ELSE '.MS\"Z\"' END)"

/* The texts below are malloc'd; NULL for a bad schema or out of memory. */

/* The creation, idempotent, as statements to send in one simple query
 * (PQsendQuery): the server runs them as one implicit transaction, so an
 * error undoes all of it and leaves the session as it was (no transaction
 * block left open, nothing SET). Its first statement takes a
 * transaction-scoped advisory lock, LEDGER_SQL_INIT_LOCK. */
char *ledger_sql_init(const char *schema);
/* The same between BEGIN; and COMMIT;, for a DBA's psql (which sends the
 * statements one by one): what init-db --print-sql prints. */
char *ledger_sql_init_script(const char *schema);

/* The grants the nodes' role needs (USAGE on the schema; SELECT, INSERT,
 * UPDATE, DELETE on runs, terms and controls; SELECT on meta), to role
 * (quoted as an identifier), or, without a role, as SQL comments that
 * name ROLE; malloc'd, NULL for a bad schema or role or out of memory. */
char *ledger_sql_grants(const char *schema, const char *role);

/* Is the ledger there and usable: one row, in this order, of booleans
 * ('t'/'f', never NULL) and then the server's clock. */
enum ledger_sql_check_col {
	LEDGER_CHECK_SCHEMA,     /* the schema exists */
	LEDGER_CHECK_TABLES,     /* meta, terms, runs and controls exist, of
				  * this version's layout (controls.leader) */
	LEDGER_CHECK_USAGE,      /* USAGE on the schema */
	LEDGER_CHECK_READABLE,   /* SELECT on runs */
	LEDGER_CHECK_WRITABLE,   /* SELECT, INSERT, UPDATE, DELETE on runs and terms */
	LEDGER_CHECK_MAY_CREATE, /* CREATE on the database: may run the creation */
	LEDGER_CHECK_UNTRUSTED,  /* NULL, or "schema s is owned by role r" (or
				  * table s.t): the first of the schema and its
				  * tables whose owner is not trusted */
	LEDGER_CHECK_DB_NOW_MS,  /* clock_timestamp(), ms since the epoch */
	LEDGER_CHECK_NCOLS
};
/* owner: --ledger-owner, NULL for none (DESIGN 10 "Who may own the
 * ledger"). */
char *ledger_sql_check(const char *schema, const char *owner);

/* What the check found. */
enum ledger_state {
	LEDGER_UNTRUSTED,    /* owned by a role not trusted: never read */
	LEDGER_MISSING,      /* no schema, or some table missing */
	LEDGER_NO_ACCESS,    /* there, but this role may not read runs */
	LEDGER_READ_ONLY,    /* may read runs, not write runs and terms */
	LEDGER_READY,        /* may read and write */
};
/* The one line for a ledger refused (LEDGER_UNTRUSTED): what (the
 * check's LEDGER_CHECK_UNTRUSTED), and the fix. */
void ledger_sql_untrusted_line(char *buf, size_t len, const char *what, const char *schema);

/* The check's one row as text (NULL for SQL NULL). */
enum ledger_state ledger_sql_parse_check(const char *const values[LEDGER_CHECK_NCOLS]);

/* A statement and its parameters as text (NULL: SQL NULL). */
#define LEDGER_SQL_PARAMS 5
#define LEDGER_SQL_PARAM_MAX 24
struct ledger_sql_query {
	char sql[LEDGER_SQL_MAX];
	int nparams;
	const char *params[LEDGER_SQL_PARAMS];
	char text[LEDGER_SQL_PARAMS][LEDGER_SQL_PARAM_MAX];
};

/* The columns of a run, in the listing and the summary alike: times as RFC
 * 3339 UTC ("2026-11-24T16:00:00Z", milliseconds when not whole seconds),
 * the token as decimal text, the duration in milliseconds (NULL unless the
 * run started and finished). */
enum ledger_sql_run_col {
	LEDGER_RUN_JOB,
	LEDGER_RUN_TICK,
	LEDGER_RUN_NODE,
	LEDGER_RUN_TOKEN,
	LEDGER_RUN_OUTCOME,
	LEDGER_RUN_EXIT,
	LEDGER_RUN_STARTED,
	LEDGER_RUN_FINISHED,
	LEDGER_RUN_DURATION_MS,
	LEDGER_RUN_ID,
	LEDGER_RUN_OUTPUT_BYTES,    /* the stored output's length; NULL: none kept */
	LEDGER_RUN_ATTEMPT,      /* 1, or a retry's (DESIGN 13) */
	LEDGER_RUN_TRIGGER,      /* asked for now: who asked; NULL: a tick */
	LEDGER_RUN_NCOLS,
	/* the summary only: when the job's newest success finished */
	LEDGER_RUN_LAST_SUCCESS = LEDGER_RUN_NCOLS,
	/* as a leader announced it (DESIGN 13); NULL when none did: a job
	 * with runs only, no longer announced */
	LEDGER_SUMMARY_SCHEDULE,
	LEDGER_SUMMARY_TIMEZONE,
	LEDGER_SUMMARY_NEXT_TICK,
	LEDGER_SUMMARY_ANNOUNCED_BY,
	LEDGER_SUMMARY_NCOLS
};

/* The runs of one lock key, newest tick first: of one job when job is not
 * NULL, with a tick not older than since_ms before the server's now() when
 * since_ms >= 0, only those that failed, timed out or were interrupted
 * when failed, at most limit rows. False for a bad schema. */
bool ledger_sql_runs(struct ledger_sql_query *q, const char *schema, int64_t key,
		     const char *job, int64_t since_ms, int64_t limit, bool failed);
/* One run's stored output (runs --output): one column, bytea, NULL when
 * none was kept; no row when the lock key has no run of that id. */
bool ledger_sql_run_output(struct ledger_sql_query *q, const char *schema, int64_t key,
			   int64_t run_id);

/* For each job of the lock key with a row or announced, by name, at most
 * limit jobs: its newest run (NULLs but the job when none) and its last
 * success, and its announcement. Each job costs a few index probes, not
 * a scan of its rows. */
bool ledger_sql_summary(struct ledger_sql_query *q, const char *schema, int64_t key,
			int64_t limit);
/* Whether a leader of the lock key announced job (DESIGN 13): one row,
 * that boolean and the announced names (at most 20, ", "-joined; NULL
 * when none). */
bool ledger_sql_announced(struct ledger_sql_query *q, const char *schema, int64_t key,
			  const char *job);

/* The daemon's statements (ledger.c, over the fence session), with the
 * schema in them; malloc'd, NULL for a bad schema or out of memory.
 * claim: $1 lock key, $2 jobs (text[]), $3 ticks (Unix ms, bigint[]),
 *   $4 node id, $5 fencing token, $6 the lock session's backend pid,
 *   $7 outcomes (text[]), $8 reruns (boolean[]), $9 attempts (int[]: 1,
 *   or 2 .. retries+1 for a retry of the tick), $10 requests to run now
 *   (bigint[]: the trigger_id, 0 for a tick); a row per tick, in order:
 *   run_id (NULL: not claimed), holder, newest, early, the server's clock.
 * last: $1 lock key, $2 job, $3 fencing token, $4 cut; one row, enum
 *   ledger_sql_last_col.
 * finish: $1 run_id, $2 fencing token, $3 outcome, $4 exit status, $5
 *   owed: the job's on_failure is owed for this run (a failed run with no
 *   attempt to follow), $6 the output's last bytes (bytea; NULL: not kept).
 * on_failure: $1 lock key, $2 run_id, $3 the lock session's backend pid,
 *   $4 fencing token: claims the run's on_failure (DESIGN 13); one row:
 *   run_id (NULL: not claimed: sent already, not failed, or not the
 *   holder), holder, the server's clock.
 * prune: $1 lock key, $2 keep (ms).
 * triggers: $1 lock key; the requests to run now, oldest first, at most
 *   LEDGER_SQL_TRIGGERS_ROWS: trigger_id, job, tick (asked_at, Unix ms rounded
 *   down), asked_by, the server's clock.
 * announce (DESIGN 13): $1 lock key, $2 job, $3 schedule (NULL: none),
 *   $4 node id, $5 fencing token, $6 the lock session's backend pid,
 *   $7 zone, $8 next tick (Unix ms; NULL: none), $9 the announcement's
 *   generation, $10 its last job (older ones are removed); one row:
 *   written (held and newest), the server's clock. */
char *ledger_sql_claim(const char *schema);
char *ledger_sql_announce(const char *schema);
char *ledger_sql_last(const char *schema);
char *ledger_sql_finish(const char *schema);
char *ledger_sql_prune(const char *schema);
char *ledger_sql_on_failure(const char *schema);
char *ledger_sql_triggers(const char *schema);
/* pgleader trigger NOTIFYs this channel (the lock key its payload) once
 * its request is written; a leader LISTENs on its fence session, and
 * reads the requests at once rather than at its next ping interval. */
#define LEDGER_SQL_TRIGGERS_CHANNEL "pgleader_triggers"
#define LEDGER_SQL_LISTEN "LISTEN " LEDGER_SQL_TRIGGERS_CHANNEL
#define LEDGER_SQL_TRIGGERS_ROWS 32
#define LEDGER_SQL_TRIGGERS_ROWS_TEXT "32"
/* The columns of last's row: ms times, NULL when none. */
enum ledger_sql_last_col {
	LEDGER_LAST_TICK,        /* the newest tick recorded for the job */
	LEDGER_LAST_CUT,         /* the newest tick cut (recorded interrupted) */
	LEDGER_LAST_SUCCESS,     /* the newest succeeded run's end */
	LEDGER_LAST_OLDER,       /* without cut: the newest older term's running */
	LEDGER_LAST_CUT_ATTEMPT, /* the attempt of the newest cut */
	LEDGER_LAST_RUN_ID,      /* the newest tick's last attempt: its run_id, */
	LEDGER_LAST_ATTEMPT,     /* attempt, */
	LEDGER_LAST_OUTCOME,     /* outcome, */
	LEDGER_LAST_EXIT,        /* exit status */
	LEDGER_LAST_ENDED,       /* and end */
	LEDGER_LAST_OWED_RUN,    /* the newest run whose on_failure is owed, */
	LEDGER_LAST_OWED_TICK,   /* its tick, */
	LEDGER_LAST_OWED_ATTEMPT,
	LEDGER_LAST_OWED_OUTCOME,
	LEDGER_LAST_OWED_EXIT,
	LEDGER_LAST_NOW,         /* the server's clock */
	LEDGER_LAST_NCOLS
};
/* The controls (DESIGN 11), read by every node, a plain single command's
 * too (malloc'd, NULL for a bad schema or out of memory):
 * probe: a boolean: the controls table is there, of this version, and
 *   this role may read it; then NULL, or what of the schema and the table
 *   is owned by a role not trusted (as LEDGER_CHECK_UNTRUSTED): never read.
 * read: $1 lock key; the controls in force, at most LEDGER_SQL_CONTROLS_ROWS,
 *   enum ledger_sql_control_col each.
 * priority_ask: $1 lock key, $2 node id, $3 its priority, $4 how long the
 *   switchover may take (ms); one row: the leader's node id
 *   and priority (NULL when none holds the lock), and whether a switchover
 *   to this node was asked.
 * handed: $1 lock key, $2 node id: deletes the switchover this node
 *   answered. */
#define LEDGER_SQL_CONTROLS_ROWS 60
#define LEDGER_SQL_CONTROLS_ROWS_TEXT "60"
enum ledger_sql_control_col {
	LEDGER_CONTROL_KIND,     /* pause or switchover */
	LEDGER_CONTROL_JOB,      /* "" for the whole lock */
	LEDGER_CONTROL_TARGET,   /* "" for any standby */
	LEDGER_CONTROL_LEADER,   /* the node asked to hand over, or "" */
	LEDGER_CONTROL_LEFT_MS,  /* until it lapses; NULL: never */
	LEDGER_CONTROL_ASKED_BY,
	LEDGER_CONTROL_ASKED_AT, /* RFC 3339 */
	LEDGER_CONTROL_NCOLS
};
char *ledger_sql_schema_probe(const char *schema);
char *ledger_sql_controls_probe(const char *schema, const char *owner);
char *ledger_sql_controls_read(const char *schema);
char *ledger_sql_priority_ask(const char *schema);
char *ledger_sql_handed(const char *schema);
#define LEDGER_SQL_CLOCK "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"

#endif
