/* pqfloor: the benchmark's floors for a one-shot.
 *
 *   pqfloor DSN KEY
 *	What any lock-based one-shot pays at least: one libpq connection with
 *	the DSN, one pg_try_advisory_lock(KEY) on it, and the exit (closing
 *	the session gives the lock back).
 *   pqfloor DSN KEY --fenced -- COMMAND [ARG...]
 *	What a one-shot that keeps pgleader's promises pays at least: two
 *	sessions opened at once (the lock's and the fence's), the lock tried
 *	on one and the fence taken on the other, the command run to its end,
 *	the exit. No durable token, no controls, no unlock, no guard.
 *
 * Exits 0 when the lock was free (and the command exited 0), 75 when it was
 * held, 69 on any other failure, 64 on bad usage. */
#include <libpq-fe.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

/* Opens n connections at once, as pgleader opens its two; false on the
 * first that fails. */
static bool connect_all(PGconn **c, int n, const char *dsn)
{
	PostgresPollingStatusType st[2];
	int open = n;

	for (int i = 0; i < n; i++) {
		c[i] = PQconnectStart(dsn);
		if (!c[i] || PQstatus(c[i]) == CONNECTION_BAD)
			return false;
		st[i] = PGRES_POLLING_WRITING;
	}
	while (open > 0) {
		struct pollfd p[2];

		for (int i = 0; i < n; i++) {
			p[i].fd = st[i] == PGRES_POLLING_OK ? -1 : PQsocket(c[i]);
			p[i].events = st[i] == PGRES_POLLING_READING ? POLLIN : POLLOUT;
		}
		if (poll(p, (nfds_t)n, 10000) <= 0)
			return false;
		for (int i = 0; i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			st[i] = PQconnectPoll(c[i]);
			if (st[i] == PGRES_POLLING_FAILED)
				return false;
			if (st[i] == PGRES_POLLING_OK)
				open--;
		}
	}
	return true;
}

/* One statement, one boolean or void answer; 1 true, 0 false, -1 error. */
static int ask(PGconn *c, const char *sql, const char *key)
{
	const char *params[1] = { key };
	PGresult *r = PQexecParams(c, sql, 1, NULL, params, NULL, NULL, 0);
	int rc = -1;

	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
		rc = strcmp(PQgetvalue(r, 0, 0), "f") != 0;
	else
		fprintf(stderr, "pqfloor: %s", PQerrorMessage(c));
	PQclear(r);
	return rc;
}

static int run(char **argv)
{
	pid_t pid;
	int status;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
	    waitpid(pid, &status, 0) != pid)
		return 69;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 69;
}

int main(int argc, char **argv)
{
	bool fenced = argc >= 6 && !strcmp(argv[3], "--fenced") && !strcmp(argv[4], "--");
	PGconn *c[2] = { NULL, NULL };
	int n = fenced ? 2 : 1, rc = 69, got;

	if (argc != 3 && !fenced) {
		fprintf(stderr, "usage: pqfloor DSN KEY [--fenced -- COMMAND...]\n");
		return 64;
	}
	if (!connect_all(c, n, argv[1])) {
		fprintf(stderr, "pqfloor: cannot connect\n");
		goto out;
	}
	got = ask(c[0], "SELECT pg_try_advisory_lock($1::bigint)", argv[2]);
	if (got == 0)
		rc = 75;
	else if (got == 1 && !fenced)
		rc = 0;
	else if (got == 1 && ask(c[1], "SELECT true FROM (SELECT pg_advisory_lock(-1, "
				 "hashint8($1::bigint))) AS fence", argv[2]) == 1)
		rc = run(argv + 5);
out:
	for (int i = 0; i < n; i++)
		PQfinish(c[i]);
	return rc;
}
