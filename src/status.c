/* status.c: "pgleader status": the lease holder, its standbys and the fences,
 * from pg_locks, once or on every change. */
#include "status.h"

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

#include <jansson.h>
#include <libpq-fe.h>

#include "controls_cli.h"
#include "exit_codes.h"
#include "lease_sql.h"
#include "ledger_cli.h"
#include "log.h"
#include "wire.h"

/* How often --watch looks: a change shows within this, at one small query
 * per look. */
#define WATCH_INTERVAL_MS 250

/* A query's answer is due within the connect timeout; the server's
 * statement_timeout is the same, and this much more is for it to say so. */
#define QUERY_SLACK_S 1

enum role {
	ROLE_LEADER,
	ROLE_HOLDER,       /* a second granted holder: only possible in shared mode */
	ROLE_WAITING,      /* queued in pg_advisory_lock (wait mode) */
	ROLE_IDLE,         /* holds and awaits nothing: poll mode, between tries */
	ROLE_FENCE_HELD,   /* a node's second session, holding the fence */
	ROLE_FENCE_WAITING,
	ROLE_FENCE_IDLE,
};

static const char *const role_json[] = { "leader", "holding", "waiting", "idle",
	"holding", "waiting", "idle" };
static const char *const role_label[] = { "leader:  ", "holder:  ", "standby: ",
	"standby: ", "fence:   ", "fence:   ", "fence:   " };
static const char *const role_text[] = { "", "  also holds the lock (shared mode)",
	"  waiting", "  idle (poll mode or between attempts)", "  holds the fence",
	"  waiting for the fence", "  idle, ready to take the fence" };

static bool is_fence(enum role r)
{
	return r >= ROLE_FENCE_HELD;
}

/* One row of the query; strings point into the PGresult, NULL when SQL NULL
 * (pg_stat_activity hides most columns of other roles' sessions from a user
 * without pg_read_all_stats). */
struct session {
	const char *application_name;
	const char *node_id;         /* NULL: not a pgleader session */
	const char *client_addr;
	const char *pid;
	const char *connected_since;
	const char *waiting_since;
	const char *leader_since;    /* from the leader's tag (wire.h) */
	const char *priority;        /* from a lock session's tag; NULL: 1 */
	const char *session_state;
	enum role role;
	char label[80];              /* what the text output shows as node id */
};

/* One look at the lock. */
struct snapshot {
	PGresult *res;
	struct session *s;
	int n;
	bool leader;                 /* s[0] is the leader */
};

/* libpq's messages span lines ("connection to server ... failed: ...\n\tIs
 * the server running ...") and can quote the DSN: redact the whole message
 * first, so that truncation cannot hide a password from log_redact(), then
 * make it one line as the daemon does. */
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
	_exit(EXIT_OK);
}

static void stop_cb(int sig)
{
	(void)sig;
	if (!printing)
		stop_now();
	stop_asked = 1;
}

static void print_begin(void)
{
	printing = 1;
}

static void print_end(void)
{
	fflush(stdout);
	fflush(stderr);
	printing = 0;
	if (stop_asked)
		stop_now();
}

static void catch_stop(void)
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

/* Permanent faults exit as the daemon's do (78 for a DSN libpq cannot
 * use, 69 for a refused login); anything else is 69 here. */
static int exit_for(enum fault f)
{
	int code = exit_code_of_fault(f);

	return code ? code : EXIT_UNAVAILABLE;
}

static void fail(const char *what, const char *msg)
{
	char line[LOG_MSG_MAX];
	char *copy = strdup(msg && *msg ? msg : "unknown error");

	lease_sql_one_line(line, sizeof(line), copy ? log_redact(copy) : "out of memory",
			   NULL);
	free(copy);
	if (quiet)
		return;
	print_begin();
	fprintf(stderr, "pgleader: %s: %s\n", what, line);
	print_end();
}

/* A message about the DSN may quote its password raw (percent-encoded,
 * where log_redact cannot see it): scrub it against the DSN first. */
static void fail_dsn(const char *what, const char *msg, const char *dsn)
{
	char *copy = strdup(msg);

	fail(what, copy ? log_redact_dsn_error(copy, dsn) : "out of memory");
	free(copy);
}

/* A DSN libpq cannot parse is a configuration error, as for the daemon:
 * no server would ever take it. Sets wait_s from its connect_timeout, else
 * PGCONNECT_TIMEOUT's, as the daemon does: 0 (libpq: for ever) or garbage
 * is the default. */
static bool dsn_parses(const char *dsn)
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
static PGresult *query(PGconn *conn, const char *sql, int nparams,
		       const char *const *params)
{
	double deadline = now_mono() + wait_s + QUERY_SLACK_S;
	PGresult *res = NULL, *r;
	char late[64];

	stalled = false;
	if (!PQsendQueryParams(conn, sql, nparams, NULL, params, NULL, NULL, 0)) {
		fail("cannot query", PQerrorMessage(conn));
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
		fail("cannot query", stalled ? late : PQerrorMessage(conn));
		PQclear(res);
		return NULL;
	}
	return res;
}

/* A session ready for the queries: answers are awaited without blocking,
 * and the server ends a statement that runs longer than wait_s. */
static bool session_ready(PGconn *conn)
{
	char ms[24];
	const char *params[1] = { ms };
	PGresult *res;

	snprintf(ms, sizeof(ms), "%d", wait_s * 1000);
	if (PQsetnonblocking(conn, 1) != 0) {
		fail("cannot connect", PQerrorMessage(conn));
		return false;
	}
	/* nothing of anyone else's runs here (DESIGN 10): no row-level
	 * security policy, no name found outside pg_catalog */
	res = query(conn, "SELECT pg_catalog.set_config('statement_timeout', $1, false),"
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
	res = query(conn, "SELECT pg_catalog.set_config('application_name', $1, false)", 1, params);
	PQclear(res);
	return res != NULL;
}

/* Connects as libpq does in blocking mode (each host gets wait_s), and
 * classifies a failure as the daemon does: a DSN libpq refuses before it
 * tries any host (a bad sslmode or port) is 78; see lease_sql_classify.
 * fallback: NULL for status's own name, else the name when neither the DSN
 * nor PGAPPNAME gives one (the controls record who asked by it). */
static PGconn *connect_db(const struct config *cfg, int *code, const char *fallback)
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
		fail("cannot connect", "out of memory");
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
	if (!session_ready(conn) || (fallback && !name_not_a_node(conn, fallback))) {
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/* The lease's advisory lock on one bigint shows in pg_locks as classid =
 * high 32 bits, objid = low 32 bits, objsubid = 1; the fence, the two-int4
 * form of the same 64 bits, as the same classid and objid with objsubid = 2;
 * both in the database of the session that took them.
 *
 * A session that holds or awaits neither shows only through
 * pg_stat_activity: its last statement, never the statement's parameters.
 * pgleader tags every statement of its sessions (WIRE_TAG_*), so that an
 * idle session tagged with another key is left out, and one tagged with
 * this key is a standby between tries (lock) or a fence connection kept
 * ready (fence). An idle pgleader session without a tag (a pgleader without
 * tags, or a statement hidden from a role without pg_read_all_stats) cannot
 * say which lock it is for: it is shown as an idle standby. A session that
 * holds or awaits another advisory lock belongs to another fleet.
 * A queued session's wait started with its last try (each retry_interval):
 * since when it has been queueing is its own comment (WIRE_WAITING_RE).
 * $1 the key, $2 WIRE_TAG_RE, $3 WIRE_WAITING_RE. */
#define SESSIONS_SQL(waitstart) \
	"WITH k AS (SELECT (($1::bigint >> 32) & 4294967295)::oid AS k_class,\n" \
	"                  ($1::bigint & 4294967295)::oid AS k_obj,\n" \
	"                  (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) AS k_db),\n" \
	"     l AS (SELECT pid, granted, objsubid, " waitstart " AS waitstart FROM pg_catalog.pg_locks, k\n" \
	"            WHERE locktype = 'advisory' AND database = k_db\n" \
	"              AND classid = k_class AND objid = k_obj AND objsubid IN (1, 2)),\n" \
	"     a AS (SELECT *, regexp_match(query, $2) AS tag FROM pg_catalog.pg_stat_activity\n" \
	"            WHERE pid <> pg_backend_pid())\n" \
	"SELECT a.application_name,\n" \
	"       CASE WHEN a.client_port = -1 THEN 'local' ELSE host(a.client_addr) END,\n" \
	"       a.pid,\n" \
	"       to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),\n" \
	"       l.granted,\n" \
	"       CASE WHEN NOT l.granted THEN COALESCE((regexp_match(a.query, $3))[1] || 'Z',\n" \
	"         to_char(l.waitstart AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) END,\n" \
	"       a.state,\n" \
	"       COALESCE(CASE l.objsubid WHEN 1 THEN 'lock' WHEN 2 THEN 'fence' END,\n" \
	"                a.tag[1], 'lock') AS part,\n" \
	"       CASE WHEN a.tag[2] = $1::bigint::text THEN a.tag[3] END,\n" \
	"       CASE WHEN a.tag[2] = $1::bigint::text THEN a.tag[4] END\n" \
	"  FROM a LEFT JOIN l ON l.pid = a.pid\n" \
	" WHERE l.pid IS NOT NULL\n" \
	"    OR (a.application_name LIKE '" WIRE_APP_PREFIX "%'\n" \
	"        AND a.datid = (SELECT k_db FROM k)\n" \
	"        AND (a.tag IS NULL OR a.tag[2] = $1::bigint::text)\n" \
	"        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks o\n" \
	"                         WHERE o.pid = a.pid AND o.locktype = 'advisory'))\n" \
	" ORDER BY COALESCE(l.objsubid = 2, a.tag[1] = 'fence', false), l.granted DESC NULLS LAST, l.waitstart NULLS LAST,\n" \
	"          a.backend_start, a.pid"

static const char *value(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static enum role role_of(const char *granted, bool fence, bool *leader_seen)
{
	if (fence)
		return !granted ? ROLE_FENCE_IDLE
		       : *granted == 't' ? ROLE_FENCE_HELD : ROLE_FENCE_WAITING;
	if (!granted)
		return ROLE_IDLE;
	if (*granted != 't')
		return ROLE_WAITING;
	if (*leader_seen)
		return ROLE_HOLDER;
	*leader_seen = true;
	return ROLE_LEADER;
}

static void fill_session(struct session *s, const PGresult *res, int row,
			 bool *leader_seen)
{
	size_t plen = strlen(WIRE_APP_PREFIX);

	s->application_name = value(res, row, 0);
	s->node_id = NULL;
	if (s->application_name && strncmp(s->application_name, WIRE_APP_PREFIX, plen) == 0)
		s->node_id = s->application_name + plen;
	s->client_addr = value(res, row, 1);
	s->pid = value(res, row, 2);
	s->connected_since = value(res, row, 3);
	s->waiting_since = value(res, row, 5);
	s->session_state = value(res, row, 6);
	s->role = role_of(value(res, row, 4), strcmp(value(res, row, 7), "fence") == 0,
			  leader_seen);
	s->leader_since = s->role == ROLE_LEADER ? value(res, row, 8) : NULL;
	s->priority = is_fence(s->role) ? NULL : value(res, row, 9);
	if (s->priority && strcmp(s->priority, "1") == 0)
		s->priority = NULL;
	/* A psql session queued on the key is worth showing, but must not be
	 * mistaken for a node. */
	snprintf(s->label, sizeof(s->label), s->node_id ? "%s" : "<%s>",
		 s->node_id ? s->node_id
		 : s->application_name && *s->application_name ? s->application_name
		 : "unnamed");
}

static void snapshot_free(struct snapshot *snap)
{
	free(snap->s);
	PQclear(snap->res);
	memset(snap, 0, sizeof(*snap));
}

/* Looks at the lock once; false (with a message) when the query failed. */
static bool snapshot_take(PGconn *conn, const char *key, struct snapshot *snap)
{
	const char *params[3] = { key, WIRE_TAG_RE, WIRE_WAITING_RE };

	memset(snap, 0, sizeof(*snap));
	/* pg_locks.waitstart exists from PostgreSQL 14 on. */
	snap->res = query(conn, PQserverVersion(conn) >= 140000 ? SESSIONS_SQL("waitstart")
			  : SESSIONS_SQL("NULL::timestamptz"), 3, params);
	if (!snap->res)
		return false;
	snap->n = PQntuples(snap->res);
	snap->s = calloc((size_t)snap->n + 1, sizeof(*snap->s));
	if (!snap->s) {
		fail("cannot query", "out of memory");
		snapshot_free(snap);
		return false;
	}
	for (int i = 0; i < snap->n; i++)
		fill_session(&snap->s[i], snap->res, i, &snap->leader);
	return true;
}

/* ---- text --------------------------------------------------------------- */

/* Text goes to a terminal: no control characters from foreign sessions. */
static void put_text(const char *s, int width)
{
	int n = 0;

	for (; s && *s; s++, n++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
	for (; n < width; n++)
		putchar(' ');
}

static void widen(int *width, const char *s)
{
	int n = s ? (int)strlen(s) : 1;

	*width = n > *width ? n : *width;
}

static void print_session_text(const struct session *s, int wlabel, int waddr, int wpid)
{
	fputs(role_label[s->role], stdout);
	put_text(s->label, wlabel + 2);
	put_text(s->client_addr ? s->client_addr : "?", waddr + 2);
	fputs("server pid ", stdout);
	put_text(s->pid, wpid + 2);
	fputs("connected since ", stdout);
	put_text(s->connected_since ? s->connected_since : "?", 0);
	if (s->leader_since) {
		fputs("  leader since ", stdout);
		put_text(s->leader_since, 0);
	}
	fputs(role_text[s->role], stdout);
	if (s->waiting_since) {
		fputs(" since ", stdout);
		put_text(s->waiting_since, 0);
	}
	/* last: the line reads as before for a node of the default */
	if (s->priority) {
		fputs("  priority ", stdout);
		put_text(s->priority, 0);
		if (strcmp(s->priority, "0") == 0)
			fputs(": never leads", stdout);
	}
	putchar('\n');
}

static void print_text(const char *key, const char *lock_name, const struct snapshot *snap,
		       const struct ledger_cli_jobs *jobs,
		       const struct controls_cli_controls *controls)
{
	int wlabel = 0, waddr = 0, wpid = 0;
	bool hidden = false;

	for (int i = 0; i < snap->n; i++) {
		widen(&wlabel, snap->s[i].label);
		widen(&waddr, snap->s[i].client_addr);
		widen(&wpid, snap->s[i].pid);
	}
	printf("lock key %s", key);
	if (lock_name) {
		fputs(" (lock name \"", stdout);
		put_text(lock_name, 0);
		fputs("\")", stdout);
	}
	putchar('\n');
	if (!snap->leader)
		puts("no leader");
	for (int i = 0; i < snap->n; i++) {
		print_session_text(&snap->s[i], wlabel, waddr, wpid);
		hidden |= !snap->s[i].connected_since;
	}
	ledger_cli_jobs_print(jobs);
	controls_cli_print(controls);
	/* Without pg_read_all_stats, pg_stat_activity shows only the pid and
	 * application_name of other roles' sessions. */
	if (hidden)
		fputs("pgleader: some sessions belong to other roles; grant"
		      " pg_read_all_stats to see their address and start time\n", stderr);
}

/* ---- JSON --------------------------------------------------------------- */

/* A JSON string, or null. client_encoding is UTF8, but an SQL_ASCII
 * database passes any byte through: jansson takes only UTF-8. */
static json_t *json_text(const char *s)
{
	size_t size = s ? 3 * strlen(s) + 1 : 0;
	char *buf = s ? malloc(size) : NULL;
	json_t *j = buf ? json_string(log_utf8_copy(buf, size, s)) : json_null();

	free(buf);
	return j;
}

static json_t *json_session(const struct session *s)
{
	const char *fields[][2] = {
		{ "node_id", s->node_id }, { "application_name", s->application_name },
		{ "client_addr", s->client_addr }, { "connected_since", s->connected_since },
		{ "state", role_json[s->role] }, { "waiting_since", s->waiting_since },
		{ "session_state", s->session_state },
	};
	json_t *o = json_object();

	/* pid: the server backend's, as in pg_stat_activity */
	json_object_set_new(o, "pid", s->pid ? json_integer(strtoll(s->pid, NULL, 10))
			    : json_null());
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		json_object_set_new(o, fields[i][0], json_text(fields[i][1]));
	if (s->role == ROLE_LEADER)
		json_object_set_new(o, "leader_since", json_text(s->leader_since));
	/* only when not the default, as the tag says it */
	if (s->priority)
		json_object_set_new(o, "priority", json_integer(strtoll(s->priority, NULL, 10)));
	return o;
}

/* Prints o as one line and frees it. */
static void put_json(json_t *o)
{
	char *text = json_dumps(o, JSON_PRESERVE_ORDER | JSON_COMPACT);

	json_decref(o);
	if (!text) {
		fail("cannot print", "out of memory");
		return;
	}
	puts(text);
	free(text);
}

static void print_json(const char *key, const char *lock_name, const struct snapshot *snap,
		       const struct ledger_cli_jobs *jobs,
		       const struct controls_cli_controls *controls)
{
	json_t *o = json_object();
	json_t *standbys = json_array();
	json_t *fences = json_array();

	/* The key as a string: JSON readers often hold numbers in doubles. */
	json_object_set_new(o, "lock_key", json_string(key));
	json_object_set_new(o, "lock_name", json_text(lock_name));
	json_object_set_new(o, "leader", snap->leader ? json_session(&snap->s[0]) : json_null());
	for (int i = snap->leader ? 1 : 0; i < snap->n; i++)
		json_array_append_new(is_fence(snap->s[i].role) ? fences : standbys,
				      json_session(&snap->s[i]));
	json_object_set_new(o, "standbys", standbys);
	json_object_set_new(o, "fences", fences);
	/* Only with a ledger: without one, the output is what it always was. */
	if (jobs)
		json_object_set_new(o, "jobs", ledger_cli_jobs_json(jobs));
	if (controls)
		json_object_set_new(o, "controls", controls_cli_json(controls));
	put_json(o);
}

/* ---- the key -------------------------------------------------------------- */

/* Writes cfg's key, computed by the server from the lock name if there is
 * one, into key; false (with a message) when that failed. A hot standby's
 * pg_locks knows nothing of the primary's sessions: it would report "no
 * leader" while one runs. */
static bool resolve_key(PGconn *conn, const struct config *cfg, char *key, size_t size)
{
	char given[32];
	const char *params[2] = { given, cfg->lock_name };
	PGresult *res;

	snprintf(given, sizeof(given), "%" PRId64, cfg->lock_key);
	res = query(conn, "SELECT pg_is_in_recovery(),"
		    " COALESCE(" WIRE_KEY_OF_NAME("$2") ", $1::bigint)", 2, params);
	if (!res)
		return false;
	if (strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
		fail("cannot query", "the server is a hot standby, which does not see"
		     " the leader's lock; point the DSN at the primary, e.g. with"
		     " target_session_attrs=read-write");
		PQclear(res);
		return false;
	}
	snprintf(key, size, "%s", PQgetvalue(res, 0, 1));
	PQclear(res);
	return true;
}

/* Queries and prints once; returns the exit code. */
static int show(PGconn *conn, const struct config *cfg, const char *key)
{
	struct snapshot snap;
	struct ledger_cli_jobs *jobs;
	struct controls_cli_controls *controls;
	int rc;

	if (!snapshot_take(conn, key, &snap))
		return EXIT_UNAVAILABLE;
	/* The ledger's jobs and controls, if there is a readable ledger; else
	 * nothing. */
	jobs = ledger_cli_jobs_read(conn, cfg, key);
	controls = controls_cli_read(conn, cfg, key);
	if (cfg->json)
		print_json(key, cfg->lock_name, &snap, jobs, controls);
	else
		print_text(key, cfg->lock_name, &snap, jobs, controls);
	fflush(stdout);
	rc = snap.leader ? EXIT_OK : EXIT_NO_LEADER;
	ledger_cli_jobs_free(jobs);
	controls_cli_free(controls);
	snapshot_free(&snap);
	return rc;
}

/* ---- --watch ------------------------------------------------------------ */

/* Who leads, as --watch compares it: the node (or session name) and its
 * server pid; empty when no one does. */
struct leader_id {
	char label[80];
	char pid[16];
};

static void now_utc(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), size - strlen(buf), ".%03ldZ", ts.tv_nsec / 1000000);
}

/* One line: "TIME leader NODE (server pid N)" or "TIME no leader". */
static void print_change(const struct config *cfg, const struct snapshot *snap)
{
	char stamp[48];
	json_t *o;

	now_utc(stamp, sizeof(stamp));
	print_begin();
	if (!cfg->json) {
		fputs(stamp, stdout);
		if (snap->leader) {
			fputs(" leader ", stdout);
			put_text(snap->s[0].label, 0);
			fputs(" (server pid ", stdout);
			put_text(snap->s[0].pid, 0);
			puts(")");
		} else {
			puts(" no leader");
		}
	} else {
		o = json_object();
		json_object_set_new(o, "time", json_string(stamp));
		json_object_set_new(o, "leader", snap->leader ? json_session(&snap->s[0])
				    : json_null());
		put_json(o);
	}
	print_end();
}

/* One line when the database goes away and when it is back:
 * "TIME database unreachable" / "TIME database reachable". */
static void print_database(const struct config *cfg, bool reachable)
{
	const char *what = reachable ? "reachable" : "unreachable";
	char stamp[48];
	json_t *o;

	now_utc(stamp, sizeof(stamp));
	print_begin();
	if (!cfg->json) {
		printf("%s database %s\n", stamp, what);
	} else {
		o = json_object();
		json_object_set_new(o, "time", json_string(stamp));
		json_object_set_new(o, "database", json_string(what));
		put_json(o);
	}
	print_end();
}

/* Looks once; prints a line when the leader is not last's. False when the
 * query failed. */
static bool watch_look(PGconn *conn, const struct config *cfg, const char *key,
		       struct leader_id *last, bool *first)
{
	struct snapshot snap;
	struct leader_id now = { "", "" };

	if (!snapshot_take(conn, key, &snap))
		return false;
	if (snap.leader) {
		snprintf(now.label, sizeof(now.label), "%s", snap.s[0].label);
		snprintf(now.pid, sizeof(now.pid), "%s", snap.s[0].pid ? snap.s[0].pid : "?");
	}
	if (*first || strcmp(now.label, last->label) || strcmp(now.pid, last->pid))
		print_change(cfg, &snap);
	*first = false;
	*last = now;
	snapshot_free(&snap);
	return true;
}

/* Connects again after a look failed: a stalled or broken connection is
 * made anew (PQreset blocks up to connect_timeout per host), one that
 * merely had a query fail is kept. */
static bool reconnect(PGconn *conn)
{
	if (stalled || PQstatus(conn) != CONNECTION_OK) {
		PQsetnonblocking(conn, 0);
		PQreset(conn);
	}
	return PQstatus(conn) == CONNECTION_OK && session_ready(conn);
}

/* Looks every WATCH_INTERVAL_MS until SIGINT or SIGTERM (stop_cb) ends
 * the process. A failed look is one message on stderr and one line on
 * stdout; once the database answers again, a line says so and the leader
 * is printed again, changed or not. */
static int watch(PGconn *conn, const struct config *cfg, const char *key)
{
	const struct timespec interval = { WATCH_INTERVAL_MS / 1000,
					   (WATCH_INTERVAL_MS % 1000) * 1000000L };
	struct leader_id last = { "", "" };
	bool first = true, up = true;

	for (;;) {
		if (!up && reconnect(conn)) {
			up = first = true;
			quiet = false;
			print_database(cfg, true);
		}
		if (up && !watch_look(conn, cfg, key, &last, &first)) {
			up = false;
			quiet = true; /* the attempts of this outage */
			print_database(cfg, false);
		}
		nanosleep(&interval, NULL);
	}
	return EXIT_UNAVAILABLE;
}

int status_run(const struct config *cfg)
{
	PGconn *conn;
	char key[32];
	int rc;

	if (cfg->watch)
		catch_stop();
	if (!dsn_parses(cfg->dsn))
		return EXIT_CONFIG;
	conn = connect_db(cfg, &rc, NULL);
	if (!conn)
		return rc;
	if (!resolve_key(conn, cfg, key, sizeof(key)))
		rc = EXIT_UNAVAILABLE;
	else if (cfg->watch)
		rc = watch(conn, cfg, key);
	else
		rc = show(conn, cfg, key);
	PQfinish(conn);
	return rc;
}

/* ---- for the ledger's subcommands (ledger_cli.c) ----------------------- */

void status_fail(const char *what, const char *msg)
{
	fail(what, msg);
}

bool status_dsn_parses(const char *dsn)
{
	return dsn_parses(dsn);
}

PGconn *status_connect(const struct config *cfg, int *code)
{
	return connect_db(cfg, code, NULL);
}

PGconn *status_connect_as(const struct config *cfg, const char *fallback, int *code)
{
	return connect_db(cfg, code, fallback);
}

bool status_resolve_key(PGconn *conn, const struct config *cfg, char *key, size_t size)
{
	return resolve_key(conn, cfg, key, size);
}

/* The node of s in nodes[0..*n), added when new. */
static struct status_node *node_of(struct status_node *nodes, int *n, const char *id)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(nodes[i].node_id, id) == 0)
			return &nodes[i];
	snprintf(nodes[*n].node_id, sizeof(nodes[*n].node_id), "%s", id);
	nodes[*n].priority = 1;
	return &nodes[(*n)++];
}

bool status_nodes_read(PGconn *conn, const char *key, struct status_node **nodes, int *n)
{
	struct snapshot snap;
	struct status_node *node;

	*nodes = NULL;
	*n = 0;
	if (!snapshot_take(conn, key, &snap))
		return false;
	if (!(*nodes = calloc((size_t)snap.n + 1, sizeof(**nodes)))) {
		fail("cannot query", "out of memory");
		snapshot_free(&snap);
		return false;
	}
	for (int i = 0; i < snap.n; i++) {
		const struct session *s = &snap.s[i];

		if (!s->node_id)
			continue;
		node = node_of(*nodes, n, s->node_id);
		node->leader |= s->role == ROLE_LEADER;
		node->standby |= s->role == ROLE_WAITING || s->role == ROLE_IDLE;
		node->fence_held |= s->role == ROLE_FENCE_HELD;
		if (s->priority && !is_fence(s->role))
			node->priority = (int)strtol(s->priority, NULL, 10);
	}
	snapshot_free(&snap);
	return true;
}

void status_put_text(const char *s, int width)
{
	put_text(s, width);
}

json_t *status_json_text(const char *s)
{
	return json_text(s);
}

void status_put_json(json_t *o)
{
	put_json(o);
}
