/* cli.c: what the command-line subcommands share: one line on stderr for a
 * failure, text and JSON on stdout, and a session to the database whose
 * every query is answered within connect_timeout. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "exit_codes.h"
#include "lease_sql.h"
#include "log.h"
#include "wire.h"

/* A query's answer is due within the connect timeout; the server's
 * statement_timeout is the same, and this much more is for it to say so. */
#define QUERY_SLACK_S 1

static bool quiet; /* --watch: said once per outage */

/* How long the server may take, in seconds: connect_timeout as the daemon
 * reads it (lease_sql_connect_timeout), for connecting to each host and
 * for each query. */
static int wait_s;
/* The last query got no answer in time: the connection is stalled. */
static bool stalled;

/* --watch ends at once on SIGINT or SIGTERM, whatever it waits for (a
 * connection, an answer, the next look), but never in the middle of a
 * line: while one is written, the signal only asks for the exit. */
static volatile sig_atomic_t printing, stop_asked;
static int max_fd; /* descriptors to close on the way out */

/* Exits 0 with the session's socket closed, from a signal handler too:
 * close(2) and _exit(2) are async-signal-safe, libpq is not. */
static void stop_now(void)
{
	for (int fd = 3; fd < max_fd; fd++)
		close(fd);
	_exit(0);
}

static void stop_cb(int sig)
{
	(void)sig;
	if (!printing)
		stop_now();
	stop_asked = 1;
}

void cli_print_begin(void)
{
	printing = 1;
}

void cli_print_end(void)
{
	fflush(stdout);
	fflush(stderr);
	printing = 0;
	if (stop_asked)
		stop_now();
}

void cli_stop_on_signal(void)
{
	struct sigaction sa;
	struct rlimit rl;

	max_fd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536
		 ? (int)rl.rlim_cur : 65536;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = stop_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void cli_quiet(bool on)
{
	quiet = on;
}

bool cli_stalled(void)
{
	return stalled;
}

/* Permanent faults exit as the daemon's do (78 for a DSN libpq cannot
 * use, 69 for a refused login); anything else is 69 here. */
static int exit_for(enum fault f)
{
	int code = exit_code_of_fault(f);

	return code ? code : EXIT_UNAVAILABLE;
}

/* libpq's messages span lines ("connection to server ... failed: ...\n\tIs
 * the server running ...") and can quote the DSN: redact the whole message
 * first, so that truncation cannot hide a password from log_redact(), then
 * make it one line as the daemon does. */
void cli_fail(const char *what, const char *msg)
{
	char line[LOG_MSG_MAX];
	char *copy = strdup(msg && *msg ? msg : "unknown error");

	lease_sql_one_line(line, sizeof(line), copy ? log_redact(copy) : "out of memory",
			   NULL);
	free(copy);
	if (quiet)
		return;
	cli_print_begin();
	fprintf(stderr, "pgleader: %s: %s\n", what, line);
	cli_print_end();
}

/* A message about the DSN may quote its password raw (percent-encoded,
 * where log_redact cannot see it): scrub it against the DSN first. */
static void fail_dsn(const char *what, const char *msg, const char *dsn)
{
	char *copy = strdup(msg);

	cli_fail(what, copy ? log_redact_dsn_error(copy, dsn) : "out of memory");
	free(copy);
}

/* A DSN libpq cannot parse is a configuration error, as for the daemon:
 * no server would ever take it. Sets wait_s from its connect_timeout, else
 * PGCONNECT_TIMEOUT's, as the daemon does: 0 (libpq: for ever) or garbage
 * is the default. */
bool cli_dsn_parses(const char *dsn)
{
	char *perr = NULL;
	PQconninfoOption *opts = dsn ? PQconninfoParse(dsn, &perr) : NULL;
	const char *timeout = getenv("PGCONNECT_TIMEOUT");

	if (dsn && !opts) {
		fail_dsn("invalid dsn", perr ? perr : "out of memory", dsn);
		PQfreemem(perr);
		return false;
	}
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (o->val && !strcmp(o->keyword, "connect_timeout"))
			timeout = o->val;
	wait_s = lease_sql_connect_timeout(timeout);
	PQconninfoFree(opts);
	return true;
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Waits until libpq holds a whole result, sending what it still has to
 * send; false when the connection broke, or when the deadline passed
 * (stalled: a server or proxy that stopped answering). */
static bool await_result(PGconn *conn, double deadline)
{
	int flush;

	while ((flush = PQflush(conn)) == 1 || (flush == 0 && PQisBusy(conn))) {
		double left = deadline - now_mono();
		struct pollfd p = { PQsocket(conn), POLLIN | (flush ? POLLOUT : 0), 0 };
		int n;

		if (left <= 0) {
			stalled = true;
			return false;
		}
		n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR)
			return false;
		if (n > 0 && !PQconsumeInput(conn))
			return false;
	}
	return flush == 0;
}

/* One query, its answer due within wait_s (and the server's
 * statement_timeout): the rows, or NULL with a message. */
PGresult *cli_query(PGconn *conn, const char *sql, int nparams,
		    const char *const *params)
{
	double deadline = now_mono() + wait_s + QUERY_SLACK_S;
	PGresult *res = NULL, *r;
	char late[64];

	stalled = false;
	if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0)) {
		cli_fail("cannot query", PQerrorMessage(conn));
		return NULL;
	}
	while (await_result(conn, deadline) && (r = PQgetResult(conn)) != NULL) {
		if (res)
			PQclear(r);
		else
			res = r;
	}
	if (PQisBusy(conn) || stalled || PQresultStatus(res) != PGRES_TUPLES_OK) {
		snprintf(late, sizeof(late), "no answer from the server within %d s",
			 wait_s + QUERY_SLACK_S);
		cli_fail("cannot query", stalled ? late : PQerrorMessage(conn));
		PQclear(res);
		return NULL;
	}
	return res;
}

/* A session ready for the queries: answers are awaited without blocking,
 * and the server ends a statement that runs longer than wait_s. */
bool cli_session_ready(PGconn *conn)
{
	char ms[24];
	const char *params[1] = { ms };
	PGresult *res;

	snprintf(ms, sizeof(ms), "%d", wait_s * 1000);
	if (PQsetnonblocking(conn, 1) != 0) {
		cli_fail("cannot connect", PQerrorMessage(conn));
		return false;
	}
	/* nothing of anyone else's runs here (DESIGN 10): no row-level
	 * security policy, no name found outside pg_catalog */
	res = cli_query(conn, "SELECT pg_catalog.set_config('statement_timeout', $1, false),"
			" pg_catalog.set_config('row_security', 'off', false),"
			" pg_catalog.set_config('search_path', 'pg_catalog', false)", 1, params);
	PQclear(res);
	return res != NULL;
}

/* A name of the DSN's or PGAPPNAME's that is a node's ("pgleader/...")
 * would make this session look like a standby to a status run: the
 * fallback replaces it. */
static bool name_not_a_node(PGconn *conn, const char *fallback)
{
	const char *name = PQparameterStatus(conn, "application_name");
	const char *params[1] = { fallback };
	PGresult *res;

	if (!name || strncmp(name, WIRE_APP_PREFIX, strlen(WIRE_APP_PREFIX)) != 0)
		return true;
	res = cli_query(conn, "SELECT pg_catalog.set_config('application_name', $1, false)",
			1, params);
	PQclear(res);
	return res != NULL;
}

/* Connects as libpq does in blocking mode (each host gets wait_s), and
 * classifies a failure as the daemon does: a DSN libpq refuses before it
 * tries any host (a bad sslmode or port) is 78; see lease_sql_classify.
 * fallback: NULL for status's own name, else the name when neither the DSN
 * nor PGAPPNAME gives one (the controls record who asked by it). */
PGconn *cli_connect(const struct config *cfg, const char *fallback, int *code)
{
	/* libpq applies the keywords in order, the last one winning; an expanded
	 * dbname (the DSN) counts at its place. Those after it win: the
	 * connect timeout as the daemon reads it, a "pgleader/..." name from
	 * the DSN would make this session look like a standby to another
	 * status run, and the JSON output wants UTF-8. */
	char timeout[16];
	const char *keys[] = { "dbname", "connect_timeout",
			       fallback ? "fallback_application_name" : "application_name",
			       "client_encoding", NULL };
	const char *vals[] = { cfg->dsn, timeout, fallback ? fallback : "pgleader-status",
			       "UTF8", NULL };
	PGconn *conn;
	char line[LOG_MSG_MAX];

	snprintf(timeout, sizeof(timeout), "%d", wait_s);
	conn = PQconnectdbParams(keys, vals, 1);
	*code = EXIT_UNAVAILABLE;
	if (!conn) {
		cli_fail("cannot connect", "out of memory");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		lease_sql_one_line(line, sizeof(line), PQerrorMessage(conn), NULL);
		*code = exit_for(lease_sql_classify(LEASE_SQL_START, NULL, false, line));
		fail_dsn(*code == EXIT_CONFIG ? "invalid dsn" : "cannot connect",
			 PQerrorMessage(conn), cfg->dsn);
		PQfinish(conn);
		return NULL;
	}
	if (!cli_session_ready(conn) || (fallback && !name_not_a_node(conn, fallback))) {
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

const char *cli_cell(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* ---- text and JSON ------------------------------------------------------ */

/* Text goes to a terminal: no control characters from foreign sessions. */
void cli_put_text(const char *s, int width)
{
	int n = 0;

	for (; s && *s; s++, n++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
	for (; n < width; n++)
		putchar(' ');
}

/* A JSON string, or null. client_encoding is UTF8, but an SQL_ASCII
 * database passes any byte through: jansson takes only UTF-8. */
json_t *cli_json_text(const char *s)
{
	size_t size = s ? 3 * strlen(s) + 1 : 0;
	char *buf = s ? malloc(size) : NULL;
	json_t *j = buf ? json_string(log_utf8_copy(buf, size, s)) : json_null();

	free(buf);
	return j;
}

/* Prints o as one line and frees it. */
void cli_put_json(json_t *o)
{
	char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);

	json_decref(o);
	if (!text) {
		cli_fail("cannot print", "out of memory");
		return;
	}
	puts(text);
	free(text);
}

/* Writes cfg's key, computed by the server from the lock name if there is
 * one, into key; false (with a message) when that failed. A hot standby's
 * pg_locks knows nothing of the primary's sessions: it would report "no
 * leader" while one runs. */
bool cli_resolve_key(PGconn *conn, const struct config *cfg, char *key, size_t size)
{
	char given[32];
	const char *params[2] = { given, cfg->lock_name };
	PGresult *res;

	snprintf(given, sizeof(given), "%" PRId64, cfg->lock_key);
	res = cli_query(conn, "SELECT pg_is_in_recovery(),"
			" COALESCE(" WIRE_KEY_OF_NAME("$2") ", $1::bigint)", 2, params);
	if (!res)
		return false;
	if (strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
		cli_fail("cannot query", "the server is a hot standby, which does not see"
			 " the leader's lock; point the DSN at the primary, e.g. with"
			 " target_session_attrs=read-write");
		PQclear(res);
		return false;
	}
	snprintf(key, size, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return true;
}
