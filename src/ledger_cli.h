/* ledger_cli.h: the ledger seen from the command line (DESIGN 10):
 * "pgleader init-db", "pgleader runs", and the jobs of "pgleader status". */
#ifndef PGLEADER_LEDGER_CLI_H
#define PGLEADER_LEDGER_CLI_H

#include <jansson.h>
#include <libpq-fe.h>

#include "config.h"

/* Every query of these is answered within this, or given up (server-side
 * statement_timeout and lock_timeout, and a client-side deadline on
 * CLOCK_MONOTONIC for a server or proxy that stalls). */
#define LEDGER_CLI_TIMEOUT_MS 10000

/* How many runs "pgleader runs" lists at most, newest first. */
#define LEDGER_CLI_RUNS_LIMIT 1000

/* pgleader init-db [--print-sql]: creates the ledger in cfg's schema, or
 * prints the SQL that does. Returns the exit code: 0 ready, 69 database
 * unreachable or permission denied, 78 a bad DSN or schema. */
int ledger_cli_init_db(const struct config *cfg);

/* pgleader runs [--job NAME] [--since DUR] [--json]: the ledger of cfg's
 * lock, newest first. Returns 0, 69 (unreachable, no ledger, may not read
 * it), 78 (bad DSN or schema). */
int ledger_cli_runs(const struct config *cfg);

/* For status: each job of the lock key (decimal text) with its last run,
 * or NULL when the ledger is absent, unreadable or does not answer in
 * time; never a message, never creates anything. */
struct ledger_cli_jobs;
struct ledger_cli_jobs *ledger_cli_jobs_read(PGconn *conn, const struct config *cfg,
					     const char *key);
/* One line per job, after status's sessions. */
void ledger_cli_jobs_print(const struct ledger_cli_jobs *jobs);
/* The "jobs" array of status --json. */
json_t *ledger_cli_jobs_json(const struct ledger_cli_jobs *jobs);
void ledger_cli_jobs_free(struct ledger_cli_jobs *jobs);

/* For the controls (controls_cli.c), which use the ledger as these do. */
/* The DSN and schema checked, connected (see status_connect_as for
 * fallback), every query bounded; NULL with the line and *rc (69, 78). */
PGconn *ledger_cli_open(const struct config *cfg, const char *fallback, int *rc);
/* sql sent and its result, an error's too; NULL (with a line naming what
 * unless quiet) when no answer came in time or the connection broke. */
PGresult *ledger_cli_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			  const char *const *params, bool quiet);
/* The ledger there, created when missing and the role may: 0, else 69
 * with one line (naming pgleader init-db when the role may not create). */
int ledger_cli_ensure(PGconn *conn, const struct config *cfg);
/* The ledger's tables are there (the session bounded first); false when
 * not, or no answer; never a line (but for a ledger refused as not
 * trusted), never creates anything. */
bool ledger_cli_present(PGconn *conn, const struct config *cfg);
/* The same, told apart: 1 there, 0 missing, -1 refused (not trusted: one
 * line said) or no answer. */
int ledger_cli_usable(PGconn *conn, const struct config *cfg);

#endif
