/* pgtemp.h: a throwaway PostgreSQL for the unit tests that run the *_sql.c
 * statements (test_sql_pg.c): initdb'd into a private directory in /tmp,
 * listening on a free loopback port and a private socket directory, run as
 * the postgres user when we are root. Started once per test binary
 * (pgtemp_start, before srunner_run_all, so that check's forked tests share
 * it), stopped at exit; it dies with the test binary however that ends
 * (its parent-death signal is SIGQUIT, an immediate shutdown). */
#ifndef PGLEADER_PGTEMP_H
#define PGLEADER_PGTEMP_H

#include <libpq-fe.h>

/* The server's binaries: $PG_BINDIR, else PostgreSQL 15's (as
 * tests/integration/pgharness.py). */
#define PGTEMP_BINDIR_DEFAULT "/usr/lib/postgresql/15/bin"

/* initdb and start; on failure one line on stderr and exit(1). Idempotent. */
void pgtemp_start(void);
/* A new session as the superuser postgres, application_name app (NULL:
 * none); fails the running test when it cannot connect. */
PGconn *pgtemp_connect(const char *app);
/* The same as another role (created by the test). */
PGconn *pgtemp_connect_as(const char *role, const char *app);
/* Connection string of the server (socket directory and port) for a role. */
const char *pgtemp_conninfo(void);

#endif
