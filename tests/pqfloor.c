/* pqfloor: the benchmark's floor for a one-shot. What any lock-based
 * one-shot pays at least: one libpq connection with the DSN (argv[1]), one
 * pg_try_advisory_lock(argv[2]) on it, and the exit (closing the session
 * gives the lock back). Exits 0 when the lock was free, 75 when held, 69 on
 * any failure. */
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	const char *params[1];
	PGconn *c;
	PGresult *r;
	int rc = 69;

	if (argc != 3) {
		fprintf(stderr, "usage: pqfloor DSN KEY\n");
		return 64;
	}
	c = PQconnectdb(argv[1]);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "pqfloor: %s", PQerrorMessage(c));
		PQfinish(c);
		return 69;
	}
	params[0] = argv[2];
	r = PQexecParams(c, "SELECT pg_try_advisory_lock($1::bigint)", 1, NULL,
			 params, NULL, NULL, 0);
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		rc = strcmp(PQgetvalue(r, 0, 0), "t") ? 75 : 0;
	else
		fprintf(stderr, "pqfloor: %s", PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
	return rc;
}
