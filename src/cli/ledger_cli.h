/* ledger_cli.h: the ledger seen from the command line (DESIGN 10):
 * "pgleader init-db", "pgleader runs", and the jobs of "pgleader status". */
#ifndef PGLEADER_LEDGER_CLI_H
#define PGLEADER_LEDGER_CLI_H

#include "cli.h"
#include "config.h"

/* How many runs "pgleader runs" lists at most, newest first. */
#define LEDGER_CLI_RUNS_LIMIT 1000

/* pgleader init-db [--print-sql]: creates the ledger in cfg's schema, or
 * prints the SQL that does. Returns the exit code: 0 ready, 69 database
 * unreachable or permission denied, 78 a bad DSN or schema. */
int ledger_cli_init_db(const struct config *cfg);

/* pgleader runs [--job NAME] [--since DUR] [--failed] [--json]: the ledger
 * of cfg's lock, newest first; runs --output RUN_ID: that run's stored
 * output, raw, on stdout. Returns 0, 3 (--output: the lock has no such
 * run), 69 (unreachable, no ledger, may not read it), 78 (bad DSN or
 * schema). */
int ledger_cli_runs(const struct config *cfg);

/* For status: each job of the lock with its last run and its next tick,
 * one line per job after the sessions, the "jobs" array of --json;
 * nothing when the ledger is absent, unreadable or does not answer in
 * time. */
extern const struct cli_section ledger_cli_jobs_section;

#endif
