/* lease.c: connects, takes, watches, pings and releases the advisory lock. */
#include "lease.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "log.h"

#define DEFAULT_CONNECT_TIMEOUT 10.0

/* What the connection is doing; each query step has its own state so that
 * the result handler knows what the answer means. */
enum lease_phase {
	PHASE_CLOSED,
	PHASE_CONNECTING,   /* PQconnectPoll */
	PHASE_SETUP,        /* pid, recovery, version, key */
	PHASE_SET_TIMEOUTS, /* lock_timeout, statement_timeout */
	PHASE_READY,        /* idle, no lock */
	PHASE_LOCKING,      /* try or queued wait in flight */
	PHASE_CLAIMING,     /* lock held: server-side lease, fencing token */
	PHASE_HELD,         /* idle, lock held */
	PHASE_PINGING,
	PHASE_UNLOCKING,
};

struct lease {
	struct ev_loop *loop;
	struct lease_options o;
	char *dsn;
	char *node_id;
	char *lock_name;
	char application_name[64];
	double connect_timeout;
	lease_event_fn fn;
	void *arg;

	PGconn *conn;
	ev_io io;
	enum lease_phase phase;
	bool waiting_in_queue;  /* the lock request is a pg_advisory_lock */
	bool release_wanted;    /* unlock once the query in flight is answered */
	int backend_pid;        /* pg_backend_pid() of this session */
	int server_version;
	bool warned_old_server;
	bool can_create_temp;   /* the claim can make its commit durable */
	bool warned_no_temp;
	bool key_logged;
	int64_t key;
	char token[32];
	char fatal[512];        /* a FATAL the notice receiver saw while idle */

	PGresult *last_rows;    /* last tuples result of the query in flight */
	PGresult *error;        /* first error result of the query in flight */
};

static void emit(struct lease *l, enum lease_event ev, enum fault fault,
		 const char *reason)
{
	l->fn(l->arg, ev, fault, reason);
}

static void close_conn(struct lease *l)
{
	if (ev_is_active(&l->io))
		ev_io_stop(l->loop, &l->io);
	PQclear(l->last_rows);
	PQclear(l->error);
	l->last_rows = l->error = NULL;
	if (l->conn)
		PQfinish(l->conn);
	l->conn = NULL;
	l->phase = PHASE_CLOSED;
	l->release_wanted = false;
	l->fatal[0] = '\0';
}

/* Watches the connection's socket for the given events; the socket itself
 * can change while libpq works through a multi-host DSN. */
static void watch(struct lease *l, int events)
{
	int fd = PQsocket(l->conn);

	if (ev_is_active(&l->io)) {
		if (l->io.fd == fd && (l->io.events & (EV_READ | EV_WRITE)) == events)
			return;
		ev_io_stop(l->loop, &l->io);
	}
	ev_io_set(&l->io, fd, events);
	ev_io_start(l->loop, &l->io);
}

/* Copies libpq's message into buf as one line without the trailing newline. */
static void one_line(char *buf, size_t len, const char *msg)
{
	char *p;

	snprintf(buf, len, "%s", msg && *msg ? msg : "unknown error");
	for (p = buf; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	while (p > buf && p[-1] == ' ')
		*--p = '\0';
}

static void fail_lost(struct lease *l, const char *why)
{
	char reason[1200];

	snprintf(reason, sizeof(reason), "%s", why);
	close_conn(l);
	emit(l, LEASE_LOST, FAULT_CONNECTION, reason);
}

static void fail_connect(struct lease *l, const char *why)
{
	char reason[1200];

	snprintf(reason, sizeof(reason), "%s", why);
	close_conn(l);
	emit(l, LEASE_CONNECT_FAILED, FAULT_UNREACHABLE, reason);
}

static void fail_fatal(struct lease *l, int code, const char *why)
{
	char reason[1200];

	snprintf(reason, sizeof(reason), "%s", why);
	close_conn(l);
	emit(l, LEASE_LOST, code == 69 ? FAULT_AUTH : FAULT_POOLER, reason);
}

/* Notices arrive here, and so does a FATAL the server sends while no query
 * runs (pg_terminate_backend, idle_session_timeout, shutdown): libpq hands
 * those to the notice receiver before it sees the socket close. */
static void notice_cb(void *arg, const PGresult *res)
{
	struct lease *l = arg;
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	if (severity && (!strcmp(severity, "FATAL") || !strcmp(severity, "PANIC"))) {
		snprintf(l->fatal, sizeof(l->fatal),
			 "connection terminated by the server: %s: %s (%s)",
			 severity, msg ? msg : "", sqlstate ? sqlstate : "?????");
		return;
	}
	if (msg)
		log_debug("server notice: %s", msg);
}

/* Sends one query (with at most one parameter) and waits for its answer
 * on the socket; false when libpq refused it (connection broken). */
static bool send_query(struct lease *l, const char *sql, const char *param)
{
	int ok;

	if (param)
		ok = PQsendQueryParams(l->conn, sql, 1, NULL, &param, NULL, NULL, 0);
	else
		ok = PQsendQuery(l->conn, sql);
	if (!ok) {
		char why[512];

		one_line(why, sizeof(why), PQerrorMessage(l->conn));
		fail_lost(l, why);
		return false;
	}
	/* Non-blocking mode: a query that does not fit in the socket buffer
	 * at once is flushed from the write watcher. */
	watch(l, PQflush(l->conn) == 1 ? EV_READ | EV_WRITE : EV_READ);
	return true;
}

static const char *result_message(const PGresult *res, char *buf, size_t len)
{
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);

	snprintf(buf, len, "%s (%s)", msg ? msg : PQresStatus(PQresultStatus(res)),
		 sqlstate ? sqlstate : "?????");
	return buf;
}

static bool is_fatal(const PGresult *res)
{
	const char *severity = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);

	return severity && (!strcmp(severity, "FATAL") || !strcmp(severity, "PANIC"));
}

static void send_unlock(struct lease *l)
{
	char key[24];

	snprintf(key, sizeof(key), "%" PRId64, l->key);
	l->release_wanted = false;
	l->phase = PHASE_UNLOCKING;
	send_query(l, "SELECT pg_advisory_unlock($1::bigint)", key);
}

static void send_timeouts(struct lease *l)
{
	char sql[160];

	/* A queued wait ends after retry_interval so the standby sees a
	 * broken session within that time; a role's statement_timeout must
	 * not cut it short. */
	snprintf(sql, sizeof(sql),
		 "SET lock_timeout = %.0f; SET statement_timeout = 0; "
		 "SET default_transaction_read_only = off",
		 l->o.retry_interval * 1000);
	l->phase = PHASE_SET_TIMEOUTS;
	send_query(l, sql, NULL);
}

/* The server drops a leader that goes silent within server_lease: an idle
 * session by idle_session_timeout (PostgreSQL 14+), a cut TCP connection by
 * keepalives (idle + count * interval = server_lease) and tcp_user_timeout
 * for unacknowledged data. The same query reads the fencing token. */
static void send_claim(struct lease *l)
{
	char sql[640];
	size_t n = 0;
	double s = l->o.server_lease;

	sql[0] = '\0';
	if (s > 0) {
		long ms = (long)(s * 1000);
		long probe = (long)(s / 4) > 0 ? (long)(s / 4) : 1;

		if (l->server_version >= 140000)
			n += (size_t)snprintf(sql + n, sizeof(sql) - n,
					      "SET idle_session_timeout = %ld; ", ms);
		else if (!l->warned_old_server) {
			log_warning("PostgreSQL %d has no idle_session_timeout: "
				    "a frozen leader keeps the lock until TCP "
				    "keepalives give up", l->server_version / 10000);
			l->warned_old_server = true;
		}
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
				      "SET tcp_keepalives_idle = %ld; "
				      "SET tcp_keepalives_interval = %ld; "
				      "SET tcp_keepalives_count = 3; ", probe, probe);
		if (l->server_version >= 120000) /* new in PostgreSQL 12 */
			n += (size_t)snprintf(sql + n, sizeof(sql) - n,
					      "SET tcp_user_timeout = %ld; ", ms);
	}
	/* A transaction that only takes an xid commits asynchronously: after
	 * a crash the server could hand the same xid, so the same fencing
	 * token, to the next leader. Writing a little catalog WAL makes the
	 * commit wait for its flush (and for synchronous standbys, if any). */
	if (l->can_create_temp)
		n += (size_t)snprintf(sql + n, sizeof(sql) - n,
				      "CREATE TEMP TABLE pgleader_term (); "
				      "DROP TABLE pgleader_term; ");
	else if (!l->warned_no_temp) {
		log_warning("the role may not create temporary tables: after a "
			    "database crash the fencing token can repeat");
		l->warned_no_temp = true;
	}
	/* txid_current() is the same 64-bit number before PostgreSQL 13 */
	snprintf(sql + n, sizeof(sql) - n, "SELECT %s::text, pg_backend_pid()",
		 l->server_version >= 130000 ? "pg_current_xact_id()" : "txid_current()");
	l->phase = PHASE_CLAIMING;
	send_query(l, sql, NULL);
}

static void setup_done(struct lease *l, PGresult *rows)
{
	int libpq_pid = PQbackendPID(l->conn);
	char why[300];

	if (!rows || PQntuples(rows) != 1) {
		fail_connect(l, "unexpected answer to the setup query");
		return;
	}
	l->backend_pid = atoi(PQgetvalue(rows, 0, 0));
	l->server_version = atoi(PQgetvalue(rows, 0, 2));
	/* A pooler answers the startup with its own backend key, and a
	 * transaction pooler hands each query to any server session: session
	 * advisory locks mean nothing through it. */
	if (libpq_pid != l->backend_pid) {
		snprintf(why, sizeof(why),
			 "the lock connection goes through a connection pooler "
			 "(libpq sees backend pid %d, the server says %d): connect "
			 "pgleader directly to PostgreSQL", libpq_pid, l->backend_pid);
		fail_fatal(l, 78, why);
		return;
	}
	if (!strcmp(PQgetvalue(rows, 0, 1), "t")) {
		fail_connect(l, "the server is in recovery (a hot standby): its "
			     "advisory locks are its own, pgleader leads only "
			     "through a primary (target_session_attrs=read-write)");
		return;
	}
	l->can_create_temp = !strcmp(PQgetvalue(rows, 0, 3), "t");
	if (l->lock_name) {
		l->key = strtoll(PQgetvalue(rows, 0, 4), NULL, 10);
		if (!l->key_logged)
			log_info("lock name \"%s\" is lock key %" PRId64,
				 l->lock_name, l->key);
		l->key_logged = true;
	}
	send_timeouts(l);
}

static void claim_done(struct lease *l, PGresult *rows)
{
	char why[300];
	int pid;

	if (!rows || PQntuples(rows) != 1) {
		fail_lost(l, "unexpected answer while taking the lock");
		return;
	}
	snprintf(l->token, sizeof(l->token), "%s", PQgetvalue(rows, 0, 0));
	pid = atoi(PQgetvalue(rows, 0, 1));
	if (pid != l->backend_pid) {
		snprintf(why, sizeof(why), "backend pid changed from %d to %d: a "
			 "connection pooler is between pgleader and PostgreSQL",
			 l->backend_pid, pid);
		fail_fatal(l, 78, why);
		return;
	}
	l->phase = PHASE_HELD;
	if (l->release_wanted) {
		send_unlock(l);
		return;
	}
	snprintf(why, sizeof(why), "key %" PRId64 ", fencing token %s", l->key,
		 l->token);
	emit(l, LEASE_ACQUIRED, FAULT_NONE, why);
}

static void ping_done(struct lease *l, PGresult *rows)
{
	char why[300];
	int pid = rows && PQntuples(rows) == 1 ? atoi(PQgetvalue(rows, 0, 0)) : -1;

	if (pid != l->backend_pid) {
		snprintf(why, sizeof(why), "backend pid changed from %d to %d while "
			 "leading: a connection pooler is between pgleader and "
			 "PostgreSQL", l->backend_pid, pid);
		fail_fatal(l, 78, why);
		return;
	}
	l->phase = PHASE_HELD;
	if (l->release_wanted) {
		send_unlock(l);
		return;
	}
	emit(l, LEASE_PING_OK, FAULT_NONE, NULL);
}

/* The query in flight is fully answered: rows is its last row set, error
 * its first error (both may be NULL). */
static void query_done(struct lease *l, PGresult *rows, PGresult *error)
{
	char msg[400], why[512];
	const char *sqlstate;

	if (error) {
		result_message(error, msg, sizeof(msg));
		sqlstate = PQresultErrorField(error, PG_DIAG_SQLSTATE);
		if (is_fatal(error)) {
			snprintf(why, sizeof(why),
				 "connection terminated by the server: %s", msg);
			fail_lost(l, why);
			return;
		}
		switch (l->phase) {
		case PHASE_LOCKING:
			/* lock_timeout: nothing is wrong, queue up again */
			if (l->waiting_in_queue && sqlstate &&
			    !strcmp(sqlstate, "55P03")) {
				l->phase = PHASE_READY;
				emit(l, LEASE_BUSY, FAULT_NONE, NULL);
				return;
			}
			break;
		case PHASE_SETUP:
		case PHASE_SET_TIMEOUTS:
			snprintf(why, sizeof(why), "setting up the lock connection "
				 "failed: %s", msg);
			fail_connect(l, why);
			return;
		case PHASE_UNLOCKING:
			close_conn(l);
			emit(l, LEASE_RELEASED, FAULT_CONNECTION, NULL);
			return;
		default:
			break;
		}
		/* A session in an unknown state never carries the lock on. */
		snprintf(why, sizeof(why), "query on the lock connection failed: %s",
			 msg);
		fail_lost(l, why);
		return;
	}

	switch (l->phase) {
	case PHASE_SETUP:
		setup_done(l, rows);
		return;
	case PHASE_SET_TIMEOUTS:
		l->phase = PHASE_READY;
		emit(l, LEASE_CONNECTED, FAULT_NONE, NULL);
		return;
	case PHASE_LOCKING:
		/* pg_try_advisory_lock says t or f; pg_advisory_lock returns
		 * only once the lock is ours. */
		if (l->waiting_in_queue ||
		    (rows && PQntuples(rows) == 1 && !strcmp(PQgetvalue(rows, 0, 0), "t"))) {
			send_claim(l);
		} else {
			l->phase = PHASE_READY;
			emit(l, LEASE_BUSY, FAULT_NONE, NULL);
		}
		return;
	case PHASE_CLAIMING:
		claim_done(l, rows);
		return;
	case PHASE_PINGING:
		ping_done(l, rows);
		return;
	case PHASE_UNLOCKING:
		close_conn(l);
		emit(l, LEASE_RELEASED, FAULT_NONE, NULL);
		return;
	default:
		return;
	}
}

static bool query_in_flight(const struct lease *l)
{
	return l->phase == PHASE_SETUP || l->phase == PHASE_SET_TIMEOUTS ||
	       l->phase == PHASE_LOCKING || l->phase == PHASE_CLAIMING ||
	       l->phase == PHASE_PINGING || l->phase == PHASE_UNLOCKING;
}

/* Reads what the server sent. Any callback may close the connection, so
 * l->conn is checked after each one. */
static void read_input(struct lease *l)
{
	char why[600];

	bool read_ok = PQconsumeInput(l->conn);

	/* PQconsumeInput only reads; parsing happens in PQisBusy. Without a
	 * query in flight that parse hands a FATAL (57P01 terminated, 57P05
	 * idle timeout, ...) to notice_cb, before the end of file says less. */
	(void)PQisBusy(l->conn);
	if (!read_ok) {
		one_line(why, sizeof(why), PQerrorMessage(l->conn));
		fail_lost(l, l->fatal[0] ? l->fatal : why);
		return;
	}
	while (l->conn && query_in_flight(l) && !PQisBusy(l->conn)) {
		PGresult *res = PQgetResult(l->conn);
		PGresult *rows, *error;

		if (!res) {
			rows = l->last_rows;
			error = l->error;
			l->last_rows = l->error = NULL;
			query_done(l, rows, error);
			PQclear(rows);
			PQclear(error);
			continue;
		}
		if (PQresultStatus(res) == PGRES_TUPLES_OK) {
			PQclear(l->last_rows);
			l->last_rows = res;
		} else if (PQresultStatus(res) == PGRES_FATAL_ERROR && !l->error) {
			l->error = res;
		} else {
			PQclear(res);
		}
	}
	if (!l->conn)
		return;
	if (l->fatal[0]) {
		snprintf(why, sizeof(why), "%s", l->fatal);
		fail_lost(l, why);
	} else if (PQstatus(l->conn) == CONNECTION_BAD) {
		one_line(why, sizeof(why), PQerrorMessage(l->conn));
		fail_lost(l, why);
	}
}

/* libpq's verbose connection errors carry the SQLSTATE: "FATAL:  28P01:
 * password authentication failed ...". Returns the last one found and
 * rewrites msg into a one-line message without SQLSTATEs and LOCATIONs. */
static const char *connect_error(char *msg, char *sqlstate)
{
	char *line, *save = NULL, out[1024];
	size_t n = 0;

	sqlstate[0] = '\0';
	out[0] = '\0';
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p;

		if (!strncmp(line, "LOCATION:", 9))
			continue;
		for (p = line; (p = strstr(p, ":  ")) != NULL; p++) {
			char *code = p + 3;

			if (strspn(code, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") == 5 &&
			    code[5] == ':' && code[6] == ' ') {
				memcpy(sqlstate, code, 5);
				sqlstate[5] = '\0';
				memmove(code, code + 7, strlen(code + 7) + 1);
			}
		}
		n += (size_t)snprintf(out + n, n < sizeof(out) ? sizeof(out) - n : 0,
				      "%s%s", n ? " " : "", line);
		if (n >= sizeof(out))
			break;
	}
	strcpy(msg, out);
	return sqlstate;
}

static void connect_poll(struct lease *l)
{
	PostgresPollingStatusType st = PQconnectPoll(l->conn);
	char msg[1024], sqlstate[6], why[1100];

	switch (st) {
	case PGRES_POLLING_READING:
		watch(l, EV_READ);
		return;
	case PGRES_POLLING_WRITING:
		watch(l, EV_WRITE);
		return;
	case PGRES_POLLING_OK:
		break;
	default:
		snprintf(msg, sizeof(msg), "%s", PQerrorMessage(l->conn));
		connect_error(msg, sqlstate);
		/* Wrong password, no such role or database, no pg_hba entry:
		 * retrying will not help. */
		if (PQconnectionNeedsPassword(l->conn) || !strcmp(sqlstate, "28P01") ||
		    !strcmp(sqlstate, "28000") || !strcmp(sqlstate, "3D000")) {
			snprintf(why, sizeof(why), "cannot connect: %s", msg);
			fail_fatal(l, 69, why);
		} else {
			snprintf(why, sizeof(why), "database connection failed: %s", msg);
			fail_connect(l, why);
		}
		return;
	}

	PQsetErrorVerbosity(l->conn, PQERRORS_DEFAULT);
	if (PQsetnonblocking(l->conn, 1) != 0) {
		one_line(msg, sizeof(msg), PQerrorMessage(l->conn));
		fail_connect(l, msg);
		return;
	}
	l->phase = PHASE_SETUP;
#define SETUP_COLUMNS "SELECT pg_backend_pid(), pg_is_in_recovery(), " \
	"current_setting('server_version_num')::int, " \
	"has_database_privilege(current_database(), 'TEMP')"
	send_query(l, l->lock_name ? SETUP_COLUMNS ", hashtextextended($1, 0)"
				   : SETUP_COLUMNS, l->lock_name);
#undef SETUP_COLUMNS
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct lease *l = w->data;

	(void)loop;
	if (l->phase == PHASE_CONNECTING) {
		connect_poll(l);
		return;
	}
	if (revents & EV_WRITE) {
		int r = PQflush(l->conn);

		if (r < 0) {
			char why[512];

			one_line(why, sizeof(why), PQerrorMessage(l->conn));
			fail_lost(l, why);
			return;
		}
		if (r == 0)
			watch(l, EV_READ);
	}
	if (revents & EV_READ)
		read_input(l);
}

struct lease *lease_new(struct ev_loop *loop, const struct lease_options *o,
			lease_event_fn fn, void *arg, char *err, size_t errlen)
{
	struct lease *l;
	PQconninfoOption *opts = NULL, *opt;
	char *perr = NULL;
	const char *timeout = getenv("PGCONNECT_TIMEOUT");

	if (o->dsn) {
		opts = PQconninfoParse(o->dsn, &perr);
		if (!opts) {
			one_line(err, errlen, perr ? perr : "out of memory");
			PQfreemem(perr);
			return NULL;
		}
		for (opt = opts; opt->keyword; opt++)
			if (!strcmp(opt->keyword, "connect_timeout") && opt->val)
				timeout = opt->val;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		PQconninfoFree(opts);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->loop = loop;
	l->o = *o;
	l->dsn = o->dsn ? strdup(o->dsn) : NULL;
	l->node_id = strdup(o->node_id);
	l->lock_name = o->lock_name ? strdup(o->lock_name) : NULL;
	l->key = o->lock_key;
	l->fn = fn;
	l->arg = arg;
	/* As libpq does: below 2 s is 2 s, 0 or nothing means our default. */
	l->connect_timeout = timeout && atoi(timeout) > 0
		? (atoi(timeout) < 2 ? 2 : atoi(timeout)) : DEFAULT_CONNECT_TIMEOUT;
	snprintf(l->application_name, sizeof(l->application_name), "pgleader/%s",
		 o->node_id);
	ev_init(&l->io, io_cb);
	l->io.data = l;
	PQconninfoFree(opts);
	return l;
}

void lease_free(struct lease *l)
{
	if (!l)
		return;
	close_conn(l);
	free(l->dsn);
	free(l->node_id);
	free(l->lock_name);
	free(l);
}

double lease_connect_timeout(const struct lease *l)
{
	return l->connect_timeout;
}

void lease_connect(struct lease *l)
{
	/* Array entries before the expanded DSN are defaults it may change;
	 * entries after it always win (libpq processes them in order). */
	const char *keys[] = { "keepalives", "keepalives_idle",
			       "keepalives_interval", "keepalives_count",
			       "dbname", "application_name",
			       NULL };
	const char *vals[] = { "1", "10", "5", "3", l->dsn ? l->dsn : "",
			       l->application_name, NULL };

	close_conn(l);
	l->token[0] = '\0';
	l->conn = PQconnectStartParams(keys, vals, 1);
	if (!l->conn || PQstatus(l->conn) == CONNECTION_BAD) {
		char why[600], msg[512];

		one_line(msg, sizeof(msg), l->conn ? PQerrorMessage(l->conn) : "out of memory");
		snprintf(why, sizeof(why), "database connection failed: %s", msg);
		fail_connect(l, why);
		return;
	}
	PQsetNoticeReceiver(l->conn, notice_cb, l);
	/* Verbose errors carry the SQLSTATE that tells a wrong password from
	 * a server that is starting up; see connect_error(). */
	PQsetErrorVerbosity(l->conn, PQERRORS_VERBOSE);
	l->phase = PHASE_CONNECTING;
	watch(l, EV_WRITE);
}

static void send_lock(struct lease *l, bool queue)
{
	char key[24];

	if (l->phase != PHASE_READY) {
		fail_lost(l, "lock requested on a connection that is not ready");
		return;
	}
	snprintf(key, sizeof(key), "%" PRId64, l->key);
	l->waiting_in_queue = queue;
	l->phase = PHASE_LOCKING;
	send_query(l, queue ? "SELECT pg_advisory_lock($1::bigint)"
			    : "SELECT pg_try_advisory_lock($1::bigint)", key);
}

void lease_try_lock(struct lease *l)
{
	send_lock(l, false);
}

void lease_wait_lock(struct lease *l)
{
	send_lock(l, true);
}

void lease_ping(struct lease *l)
{
	if (l->phase != PHASE_HELD)
		return; /* the ping deadline will tell */
	l->phase = PHASE_PINGING;
	send_query(l, "SELECT pg_backend_pid()", NULL);
}

void lease_release(struct lease *l)
{
	switch (l->phase) {
	case PHASE_HELD:
		send_unlock(l);
		return;
	case PHASE_CLAIMING:
	case PHASE_PINGING:
		l->release_wanted = true; /* after the answer in flight */
		return;
	case PHASE_UNLOCKING:
		return;
	default:
		/* No lock, or a request whose outcome is unknown: closing the
		 * session releases whatever it holds. */
		close_conn(l);
		emit(l, LEASE_RELEASED, FAULT_CONNECTION, NULL);
		return;
	}
}

void lease_disconnect(struct lease *l)
{
	close_conn(l);
}

int64_t lease_key(const struct lease *l)
{
	return l->key;
}

uint64_t lease_fencing_token(const struct lease *l)
{
	return strtoull(l->token, NULL, 10);
}
