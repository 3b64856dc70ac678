/* cli_ledger.h: the ledger as the subcommands use it (DESIGN 10, 11):
 * init-db and runs (ledger_cli.c), the controls (controls_cli.c), what
 * status shows of both. */
#ifndef PGLEADER_CLI_LEDGER_H
#define PGLEADER_CLI_LEDGER_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "config.h"
#include "ledger_sql.h"

/* Every query of these is answered within this, or given up (server-side
 * statement_timeout and lock_timeout, and a client-side deadline on
 * CLOCK_MONOTONIC for a server or proxy that stalls). */
#define CLI_LEDGER_TIMEOUT_MS 10000

/* cfg's schema, or the default one. */
const char *cli_ledger_schema(const struct config *cfg);

/* The DSN and schema checked, connected (see cli_connect for fallback),
 * every query bounded; NULL with the line and *rc (69, 78). */
PGconn *cli_ledger_open(const struct config *cfg, const char *fallback, int *rc);
/* The session's bounds set again (and row_security, search_path); false,
 * with a line unless quiet, when they could not be. */
bool cli_ledger_bound(PGconn *conn, bool quiet);
/* sql sent (several statements when nparams < 0) and the first error or
 * else the last result; NULL (with a line naming what unless quiet) when
 * no answer came in time or the connection broke: the connection is of no
 * further use then. */
PGresult *cli_ledger_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			  const char *const *params, bool quiet);
/* A query whose rows are wanted: NULL, with a line unless quiet, when it
 * failed. */
PGresult *cli_ledger_select(PGconn *conn, const char *sql, int nparams,
			    const char *const *params, bool quiet);

/* What the check query says of cfg's ledger; false (with a line unless
 * quiet) when it could not be asked, or (with one line, once, whatever
 * quiet) when the ledger is not trusted. */
bool cli_ledger_check(PGconn *conn, const struct config *cfg, enum ledger_state *state,
		      bool quiet);
/* Creates the ledger in schema: 0, else 69 with one line (naming what to
 * grant when the role may not create). */
int cli_ledger_create(PGconn *conn, const char *schema);
/* The ledger there, created when missing and the role may: 0, else 69
 * with one line. */
int cli_ledger_ensure(PGconn *conn, const struct config *cfg);
/* The ledger's tables are there (the session bounded first): 1 there, 0
 * missing, -1 refused (not trusted: one line said) or no answer; never
 * another line, never creates anything. */
int cli_ledger_usable(PGconn *conn, const struct config *cfg);
/* cli_ledger_usable says 1. */
bool cli_ledger_present(PGconn *conn, const struct config *cfg);

/* DESIGN 11, 13: whether a leader of the lock key (decimal text) announced
 * job: 1 yes, 0 no (no ledger: none was), -1 no answer (a line said);
 * names gets the jobs that were announced ("none"). Never creates. */
int cli_job_announced(PGconn *conn, const struct config *cfg, const char *key,
		      const char *job, char *names, size_t len);
/* The name check of pause, resume and trigger --job: 0 to go on (job NULL,
 * --force, or announced); else EXIT_NO_LEADER (3) with one line, "refused:
 * ..." naming the jobs announced, or 69 when it could not be asked. */
int cli_job_checked(PGconn *conn, const struct config *cfg, const char *key,
		    const char *job, const char *refused);

#endif
