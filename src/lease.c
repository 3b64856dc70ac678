/* lease.c: drives the lock connection through libpq's async API on libev. */
#include "lease.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "lease_sql.h"
#include "log.h"
#include "wire.h"

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

/* The bound on one connection attempt is connect_timeout for each host,
 * and this much more, so that the lease's own report of the last host
 * comes before the election's deadline. */
#define LEASE_CONNECT_SLACK 1.0

/* The DSN's host, hostaddr and port lists, in that order. */
enum { LIST_HOST, LIST_HOSTADDR, LIST_PORT, LISTS };
static const char *const list_keyword[LISTS] = { "host", "hostaddr", "port" };

struct lease {
	struct ev_loop *loop;
	struct lease_options o;
	char *dsn;
	char *node_id;
	char *lock_name;
	char application_name[WIRE_APP_NAME_MAX + 1];
	double host_timeout;    /* connect_timeout, for each host */
	int hosts;              /* how many hosts the DSN names */
	lease_event_fn fn;
	void *arg;

	PGconn *conn;
	ev_io io;
	enum lease_phase phase;
	/* connect_timeout for the host being tried: libpq enforces it only in
	 * its blocking calls */
	ev_timer host_timer;
	char host_now[320];     /* host and port being tried */
	char *lists[LISTS];     /* the DSN's, without hosts that timed out */
	char skipped[LOG_MSG_MAX]; /* the hosts that timed out, for the reason */
	bool start_failed;      /* libpq refused to start; told from the loop */

	bool waiting_in_queue;  /* the lock request is a pg_advisory_lock */
	bool release_wanted;    /* unlock once the query in flight is answered */
	struct lease_sql_server srv;
	bool warned_old_server;
	bool warned_no_temp;
	bool key_logged;
	int64_t key;
	uint64_t token;
	char fatal[LOG_MSG_MAX]; /* a FATAL the notice receiver saw while idle */
	enum fault fatal_fault;

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
	ev_timer_stop(l->loop, &l->host_timer);
	PQclear(l->last_rows);
	PQclear(l->error);
	l->last_rows = l->error = NULL;
	if (l->conn)
		PQfinish(l->conn);
	l->conn = NULL;
	l->phase = PHASE_CLOSED;
	l->release_wanted = false;
	l->start_failed = false;
	l->fatal[0] = '\0';
}

static bool connecting(const struct lease *l)
{
	return l->phase == PHASE_CONNECTING || l->phase == PHASE_SETUP ||
	       l->phase == PHASE_SET_TIMEOUTS;
}

/* The one way out of a failure: close the connection, then report it,
 * LEASE_CONNECT_FAILED before the connection was ready and LEASE_LOST
 * after. The arguments may point into what closing frees or clears (libpq's
 * error message, a PGresult, l->fatal), so the reason is formatted into a
 * buffer of this frame first. */
static void fail(struct lease *l, enum fault fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct lease *l, enum fault fault, const char *fmt, ...)
{
	enum lease_event ev = connecting(l) ? LEASE_CONNECT_FAILED : LEASE_LOST;
	char reason[LOG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	close_conn(l);
	emit(l, ev, fault, reason);
}

/* Fails with libpq's message for the connection, classified for the stage. */
static void fail_libpq(struct lease *l, enum lease_sql_stage stage)
{
	char msg[LOG_MSG_MAX], sqlstate[6];
	bool needs_password = stage == LEASE_SQL_CONNECT &&
			      PQconnectionNeedsPassword(l->conn);
	enum fault f;
	const char *what = "";

	lease_sql_one_line(msg, sizeof(msg), l->conn ? PQerrorMessage(l->conn)
				  : "out of memory", sqlstate);
	f = lease_sql_classify(stage, sqlstate, needs_password, msg);
	if (stage == LEASE_SQL_START || stage == LEASE_SQL_CONNECT)
		what = f == FAULT_AUTH ? "cannot connect: "
		     : f == FAULT_BAD_DSN ? "cannot use the connection string: "
		     : "database connection failed: ";
	fail(l, f, "%s%s%s", what, *what ? l->skipped : "", msg);
}

/* Closed without an unlock (fault set) or after one (FAULT_NONE). */
static void released(struct lease *l, enum fault fault)
{
	close_conn(l);
	emit(l, LEASE_RELEASED, fault, NULL);
}

/* Watches the connection's socket. While connecting, libpq closes it and
 * opens another for the next host or address, which may get the same
 * number: libev would still believe the old one registered and never
 * wake up, so then the watcher is set anew on every step (ev_io_set tells
 * libev the descriptor may be a new one). */
static void watch(struct lease *l, int events, bool anew)
{
	int fd = PQsocket(l->conn);

	if (ev_is_active(&l->io)) {
		if (!anew && l->io.fd == fd &&
		    (l->io.events & (EV_READ | EV_WRITE)) == events)
			return;
		ev_io_stop(l->loop, &l->io);
	}
	ev_io_set(&l->io, fd, events);
	ev_io_start(l->loop, &l->io);
}

/* Gives each host its own connect_timeout: the timer starts again when
 * libpq moves on to another host. */
static void track_host(struct lease *l)
{
	char now[sizeof(l->host_now)];
	const char *port = PQport(l->conn);

	snprintf(now, sizeof(now), "%s\n%s", PQhost(l->conn), port ? port : "");
	if (ev_is_active(&l->host_timer) && !strcmp(now, l->host_now))
		return;
	memcpy(l->host_now, now, sizeof(now));
	ev_timer_stop(l->loop, &l->host_timer);
	ev_timer_set(&l->host_timer, l->host_timeout, 0);
	ev_timer_start(l->loop, &l->host_timer);
}

/* Notices arrive here, and so does a FATAL the server sends while no query
 * runs (pg_terminate_backend, idle_session_timeout, shutdown): libpq hands
 * those to the notice receiver before it sees the socket close. */
static void notice_cb(void *arg, const PGresult *res)
{
	struct lease *l = arg;
	const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	char msg[LOG_MSG_MAX];

	if (!lease_sql_server_error(msg, sizeof(msg),
				    PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED),
				    PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
				    sqlstate)) {
		log_debug("server notice: %s", msg);
		return;
	}
	memcpy(l->fatal, msg, sizeof(l->fatal));
	l->fatal_fault = lease_sql_classify(LEASE_SQL_SESSION, sqlstate ? sqlstate
					    : "?????", false, msg);
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
		fail_libpq(l, LEASE_SQL_SESSION);
		return false;
	}
	/* Non-blocking mode: a query that does not fit in the socket buffer
	 * at once is flushed from the write watcher. */
	watch(l, PQflush(l->conn) == 1 ? EV_READ | EV_WRITE : EV_READ, false);
	return true;
}

static void send_key_query(struct lease *l, enum lease_phase phase,
			   const char *sql)
{
	char key[24];

	snprintf(key, sizeof(key), "%" PRId64, l->key);
	l->phase = phase;
	send_query(l, sql, key);
}

static void send_unlock(struct lease *l)
{
	l->release_wanted = false;
	send_key_query(l, PHASE_UNLOCKING, LEASE_SQL_UNLOCK);
}

static void send_timeouts(struct lease *l)
{
	char sql[LEASE_SQL_MAX];

	lease_sql_timeouts(sql, sizeof(sql), l->o.retry_interval);
	l->phase = PHASE_SET_TIMEOUTS;
	send_query(l, sql, NULL);
}

/* The server-side lease and the fencing token, in one round trip. */
static void send_claim(struct lease *l)
{
	char sql[LEASE_SQL_MAX];
	unsigned missing = lease_sql_claim(sql, sizeof(sql), &l->srv,
					   l->o.server_lease);

	if ((missing & LEASE_SQL_NO_IDLE_TIMEOUT) && !l->warned_old_server) {
		log_warning("PostgreSQL %d has no idle_session_timeout: a frozen "
			    "leader keeps the lock until TCP keepalives give up",
			    l->srv.version / 10000);
		l->warned_old_server = true;
	}
	if ((missing & LEASE_SQL_NO_DURABLE_TOKEN) && !l->warned_no_temp) {
		log_warning("the role may not create temporary tables: after a "
			    "database crash the fencing token can repeat");
		l->warned_no_temp = true;
	}
	l->phase = PHASE_CLAIMING;
	send_query(l, sql, NULL);
}

/* A pooler answers the startup with its own backend key, and a transaction
 * pooler hands each query to any server session: session advisory locks
 * mean nothing through it. */
static bool through_pooler(struct lease *l, int pid, const char *when)
{
	if (pid == l->srv.backend_pid)
		return false;
	fail(l, FAULT_POOLER, "backend pid changed from %d to %d%s: a connection "
	     "pooler is between pgleader and PostgreSQL", l->srv.backend_pid,
	     pid, when);
	return true;
}

static void setup_done(struct lease *l, const struct lease_sql_answer *a)
{
	int libpq_pid = PQbackendPID(l->conn);

	if (!lease_sql_parse_setup(a, l->lock_name != NULL, &l->srv)) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to the setup query");
		return;
	}
	if (libpq_pid != l->srv.backend_pid) {
		fail(l, FAULT_POOLER, "the lock connection goes through a connection "
		     "pooler (libpq sees backend pid %d, the server says %d): "
		     "connect pgleader directly to PostgreSQL", libpq_pid,
		     l->srv.backend_pid);
		return;
	}
	if (l->srv.in_recovery) {
		fail(l, FAULT_HOT_STANDBY, "the server is in recovery (a hot "
		     "standby): its advisory locks are its own, pgleader leads "
		     "only through a primary (target_session_attrs=read-write)");
		return;
	}
	if (l->lock_name) {
		l->key = l->srv.key;
		if (!l->key_logged)
			log_info("lock name \"%s\" is lock key %" PRId64,
				 l->lock_name, l->key);
		l->key_logged = true;
	}
	send_timeouts(l);
}

static void lock_done(struct lease *l, const struct lease_sql_answer *a)
{
	/* pg_advisory_lock returns only once the lock is ours */
	bool granted = l->waiting_in_queue;

	if (!granted && !lease_sql_parse_granted(a, &granted)) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to the lock request");
		return;
	}
	if (granted) {
		send_claim(l);
		return;
	}
	l->phase = PHASE_READY;
	emit(l, LEASE_BUSY, FAULT_NONE, NULL);
}

/* The lock is ours again after a claim or a ping: unlock if asked to. */
static bool held(struct lease *l)
{
	l->phase = PHASE_HELD;
	if (!l->release_wanted)
		return true;
	send_unlock(l);
	return false;
}

static void claim_done(struct lease *l, const struct lease_sql_answer *a)
{
	char why[LOG_MSG_MAX];
	int pid;

	if (!lease_sql_parse_claim(a, &l->token, &pid)) {
		fail(l, FAULT_PROTOCOL, "unexpected answer while taking the lock");
		return;
	}
	if (through_pooler(l, pid, "") || !held(l))
		return;
	snprintf(why, sizeof(why), "key %" PRId64 ", fencing token %" PRIu64,
		 l->key, l->token);
	emit(l, LEASE_ACQUIRED, FAULT_NONE, why);
}

static void ping_done(struct lease *l, const struct lease_sql_answer *a)
{
	int pid;

	if (!lease_sql_parse_pid(a, &pid)) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to a ping");
		return;
	}
	if (through_pooler(l, pid, " while leading") || !held(l))
		return;
	emit(l, LEASE_PING_OK, FAULT_NONE, NULL);
}

/* The query in flight was answered with an error. */
static void query_failed(struct lease *l, const PGresult *error)
{
	const char *sqlstate = PQresultErrorField(error, PG_DIAG_SQLSTATE);
	const char *primary = PQresultErrorField(error, PG_DIAG_MESSAGE_PRIMARY);
	char msg[LOG_MSG_MAX];

	if (lease_sql_server_error(msg, sizeof(msg),
				   PQresultErrorField(error, PG_DIAG_SEVERITY_NONLOCALIZED),
				   primary ? primary : PQresStatus(PQresultStatus(error)),
				   sqlstate)) {
		fail(l, lease_sql_classify(LEASE_SQL_SESSION, sqlstate ? sqlstate
					   : "?????", false, msg),
		     "connection terminated by the server: %s", msg);
		return;
	}
	/* lock_timeout of a queued wait: nothing is wrong, queue up again */
	if (l->phase == PHASE_LOCKING && l->waiting_in_queue && sqlstate &&
	    !strcmp(sqlstate, LEASE_SQL_LOCK_TIMEOUT)) {
		l->phase = PHASE_READY;
		emit(l, LEASE_BUSY, FAULT_NONE, NULL);
	} else if (l->phase == PHASE_UNLOCKING) {
		released(l, FAULT_CONNECTION);
	} else {
		/* A session in an unknown state never carries the lock on. */
		fail(l, lease_sql_classify(LEASE_SQL_QUERY, sqlstate, false, msg),
		     "%s failed: %s", connecting(l) ? "setting up the lock connection"
		     : "query on the lock connection", msg);
	}
}

/* The query in flight was answered. */
static void query_answered(struct lease *l, const struct lease_sql_answer *a)
{
	switch (l->phase) {
	case PHASE_SETUP:
		setup_done(l, a);
		return;
	case PHASE_SET_TIMEOUTS:
		l->phase = PHASE_READY;
		emit(l, LEASE_CONNECTED, FAULT_NONE, NULL);
		return;
	case PHASE_LOCKING:
		lock_done(l, a);
		return;
	case PHASE_CLAIMING:
		claim_done(l, a);
		return;
	case PHASE_PINGING:
		ping_done(l, a);
		return;
	case PHASE_UNLOCKING:
		released(l, FAULT_NONE);
		return;
	case PHASE_CLOSED:
	case PHASE_CONNECTING:
	case PHASE_READY:
	case PHASE_HELD:
		return;
	}
}

/* The query in flight is fully answered: rows is its last row set, error
 * its first error (both may be NULL). The answer goes to the parsers as
 * strings; none of the lease's queries returns more than five values. */
static void query_done(struct lease *l, const PGresult *rows, const PGresult *error)
{
	const char *values[8];
	struct lease_sql_answer a = { 0, 0, values };

	if (error) {
		query_failed(l, error);
		return;
	}
	if (rows) {
		a.nrows = PQntuples(rows);
		a.ncols = PQnfields(rows);
	}
	if ((size_t)a.nrows * (size_t)a.ncols > sizeof(values) / sizeof(values[0]))
		a.values = NULL;
	for (int r = 0; a.values && r < a.nrows; r++)
		for (int c = 0; c < a.ncols; c++)
			values[r * a.ncols + c] = PQgetisnull(rows, r, c) ? NULL
						  : PQgetvalue(rows, r, c);
	query_answered(l, &a);
}

static bool query_in_flight(const struct lease *l)
{
	return l->phase == PHASE_SETUP || l->phase == PHASE_SET_TIMEOUTS ||
	       l->phase == PHASE_LOCKING || l->phase == PHASE_CLAIMING ||
	       l->phase == PHASE_PINGING || l->phase == PHASE_UNLOCKING;
}

/* The session ended: with the FATAL the server sent, if it sent one. */
static void session_ended(struct lease *l)
{
	if (l->fatal[0])
		fail(l, l->fatal_fault, "connection terminated by the server: %s",
		     l->fatal);
	else
		fail_libpq(l, LEASE_SQL_SESSION);
}

/* Takes every result libpq has parsed; any handler may close the
 * connection, so l->conn is checked after each one. */
static void take_results(struct lease *l)
{
	while (l->conn && query_in_flight(l) && !PQisBusy(l->conn)) {
		PGresult *res = PQgetResult(l->conn);

		if (!res) {
			PGresult *rows = l->last_rows, *error = l->error;

			l->last_rows = l->error = NULL;
			query_done(l, rows, error);
			PQclear(rows);
			PQclear(error);
		} else if (PQresultStatus(res) == PGRES_TUPLES_OK) {
			PQclear(l->last_rows);
			l->last_rows = res;
		} else if (PQresultStatus(res) == PGRES_FATAL_ERROR && !l->error) {
			l->error = res;
		} else {
			PQclear(res);
		}
	}
}

/* Reads what the server sent. */
static void read_input(struct lease *l)
{
	bool read_ok = PQconsumeInput(l->conn);

	/* PQconsumeInput only reads; parsing happens in PQisBusy. Without a
	 * query in flight that parse hands a FATAL (57P01 terminated, 57P05
	 * idle timeout, ...) to notice_cb, before the end of file says less. */
	(void)PQisBusy(l->conn);
	if (!read_ok) {
		session_ended(l);
		return;
	}
	take_results(l);
	if (l->conn && (l->fatal[0] || PQstatus(l->conn) == CONNECTION_BAD))
		session_ended(l);
}

static void start_conn(struct lease *l);

/* The connection's host lists without the host being tried, into
 * l->lists; false when nothing is left, or when what is left cannot be
 * said (a list of empty entries reads as no list: libpq would take the
 * DSN's again). */
static bool drop_current_host(struct lease *l)
{
	PQconninfoOption *opts = PQconninfo(l->conn), *opt;
	const char *in[LISTS] = { "", "", "" };
	char *out[LISTS];
	bool ok = opts != NULL;
	struct lease_sql_hosts h;

	for (opt = opts; opt && opt->keyword; opt++)
		for (int i = 0; i < LISTS; i++)
			if (!strcmp(opt->keyword, list_keyword[i]) && opt->val)
				in[i] = opt->val;
	for (int i = 0; i < LISTS; i++) {
		out[i] = calloc(1, strlen(in[i]) + 1);
		ok = ok && out[i];
	}
	h = (struct lease_sql_hosts){ in[LIST_HOST], in[LIST_HOSTADDR], in[LIST_PORT],
				      out[LIST_HOST], out[LIST_HOSTADDR], out[LIST_PORT] };
	ok = ok && lease_sql_drop_host(&h, PQhost(l->conn), PQport(l->conn)) > 0;
	for (int i = 0; i < LISTS; i++) {
		ok = ok && !(*in[i] && !*out[i]);
		free(l->lists[i]);
		l->lists[i] = out[i];
	}
	PQconninfoFree(opts);
	return ok;
}

/* The host being tried did not finish connecting within connect_timeout.
 * libpq's async API cannot be told to move on (its blocking calls do it
 * inside), so the attempt starts again without that host; the others are
 * tried again, a refusal costs little. Each round drops a host. (Or libpq
 * refused to start at all, which is told here.) */
static void host_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct lease *l = w->data;
	size_t n = strlen(l->skipped);
	const char *port = PQport(l->conn);

	(void)loop;
	(void)revents;
	if (l->start_failed) {
		fail_libpq(l, LEASE_SQL_START);
		return;
	}
	snprintf(l->skipped + n, sizeof(l->skipped) - n, "host \"%s\" port %s: "
		 "no answer within connect_timeout (%.0fs); ", PQhost(l->conn),
		 port && *port ? port : "(default)", l->host_timeout);
	if (drop_current_host(l)) {
		log_notice("no answer from host \"%s\" port %s within connect_timeout "
			   "(%.0fs): trying the other hosts", PQhost(l->conn),
			   port && *port ? port : "(default)", l->host_timeout);
		close_conn(l);
		start_conn(l);
		return;
	}
	n = strlen(l->skipped);
	if (n >= 2)
		l->skipped[n - 2] = '\0'; /* the last "; " */
	fail(l, FAULT_UNREACHABLE, "database connection failed: %s", l->skipped);
}

/* One step of the connection's startup. */
static void connect_poll(struct lease *l)
{
	switch (PQconnectPoll(l->conn)) {
	case PGRES_POLLING_READING:
		track_host(l);
		watch(l, EV_READ, true);
		return;
	case PGRES_POLLING_WRITING:
		track_host(l);
		watch(l, EV_WRITE, true);
		return;
	case PGRES_POLLING_FAILED:
	case PGRES_POLLING_ACTIVE: /* unused since PostgreSQL 7.4 */
		fail_libpq(l, LEASE_SQL_CONNECT);
		return;
	case PGRES_POLLING_OK:
		break;
	}
	ev_timer_stop(l->loop, &l->host_timer);
	l->skipped[0] = '\0';
	PQsetErrorVerbosity(l->conn, PQERRORS_DEFAULT);
	if (PQsetnonblocking(l->conn, 1) != 0) {
		fail_libpq(l, LEASE_SQL_SESSION);
		return;
	}
	l->phase = PHASE_SETUP;
	send_query(l, lease_sql_setup(l->lock_name != NULL), l->lock_name);
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
			fail_libpq(l, LEASE_SQL_SESSION);
			return;
		}
		if (r == 0)
			watch(l, EV_READ, false);
	}
	if (revents & EV_READ)
		read_input(l);
}

/* Where the DSN, or else the environment, sets connect_timeout and the
 * hosts: each host gets connect_timeout. A service file's hosts are not
 * counted. */
static void read_dsn(struct lease *l, const PQconninfoOption *opts)
{
	const char *timeout = getenv("PGCONNECT_TIMEOUT");
	const char *host = getenv("PGHOST"), *hostaddr = getenv("PGHOSTADDR");

	for (; opts && opts->keyword; opts++) {
		if (!opts->val)
			continue;
		if (!strcmp(opts->keyword, "connect_timeout"))
			timeout = opts->val;
		else if (!strcmp(opts->keyword, "host"))
			host = opts->val;
		else if (!strcmp(opts->keyword, "hostaddr"))
			hostaddr = opts->val;
	}
	l->host_timeout = lease_sql_connect_timeout(timeout);
	l->hosts = lease_sql_count_hosts(host, hostaddr);
}

struct lease *lease_new(struct ev_loop *loop, const struct lease_options *o,
			lease_event_fn fn, void *arg, char *err, size_t errlen)
{
	struct lease *l;
	PQconninfoOption *opts = NULL;
	char *perr = NULL;

	if (o->dsn) {
		opts = PQconninfoParse(o->dsn, &perr);
		if (!opts) {
			lease_sql_one_line(err, errlen, perr ? perr : "out of memory",
					   NULL);
			PQfreemem(perr);
			return NULL;
		}
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
	read_dsn(l, opts);
	PQconninfoFree(opts);
	snprintf(l->application_name, sizeof(l->application_name), "%s%s",
		 WIRE_APP_PREFIX, o->node_id);
	ev_init(&l->io, io_cb);
	l->io.data = l;
	ev_init(&l->host_timer, host_timer_cb);
	l->host_timer.data = l;
	return l;
}

static void forget_hosts(struct lease *l)
{
	for (int i = 0; i < LISTS; i++) {
		free(l->lists[i]);
		l->lists[i] = NULL;
	}
	l->skipped[0] = '\0';
}

void lease_free(struct lease *l)
{
	if (!l)
		return;
	close_conn(l);
	forget_hosts(l);
	free(l->dsn);
	free(l->node_id);
	free(l->lock_name);
	free(l);
}

double lease_connect_timeout(const struct lease *l)
{
	return l->host_timeout * l->hosts + LEASE_CONNECT_SLACK;
}

static void start_conn(struct lease *l)
{
	/* Array entries before the expanded DSN are defaults it may change;
	 * entries after it always win (libpq processes them in order): the
	 * host lists without the hosts that timed out, when some did. */
	const char *keys[6 + LISTS + 1] = { "keepalives", "keepalives_idle",
		"keepalives_interval", "keepalives_count", "dbname", "application_name" };
	const char *vals[6 + LISTS + 1] = { "1", "10", "5", "3", l->dsn ? l->dsn : "",
		l->application_name };
	int n = 6;

	l->phase = PHASE_CONNECTING; /* a failure here is a failed connect */
	for (int i = 0; i < LISTS; i++)
		if (l->lists[i] && *l->lists[i]) {
			keys[n] = list_keyword[i];
			vals[n++] = l->lists[i];
		}
	keys[n] = vals[n] = NULL;
	l->conn = PQconnectStartParams(keys, vals, 1);
	if (!l->conn || PQstatus(l->conn) == CONNECTION_BAD) {
		/* Told from the loop, as every other outcome of lease_connect:
		 * a caller that has not entered ev_run yet could not act on
		 * an event it gets from inside this call. */
		l->start_failed = true;
		ev_timer_set(&l->host_timer, 0, 0);
		ev_timer_start(l->loop, &l->host_timer);
		return;
	}
	PQsetNoticeReceiver(l->conn, notice_cb, l);
	/* Verbose errors carry the SQLSTATE that tells a wrong password from
	 * a server that is starting up; see lease_sql_one_line(). */
	PQsetErrorVerbosity(l->conn, PQERRORS_VERBOSE);
	track_host(l);
	watch(l, EV_WRITE, true);
}

void lease_connect(struct lease *l)
{
	close_conn(l);
	forget_hosts(l);
	l->token = 0;
	start_conn(l);
}

static void send_lock(struct lease *l, bool queue)
{
	if (l->phase != PHASE_READY) {
		fail(l, FAULT_PROTOCOL, "lock requested on a connection that is "
		     "not ready");
		return;
	}
	l->waiting_in_queue = queue;
	send_key_query(l, PHASE_LOCKING, queue ? LEASE_SQL_WAIT_LOCK
						: LEASE_SQL_TRY_LOCK);
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
	send_query(l, LEASE_SQL_PING, NULL);
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
	case PHASE_CLOSED:
	case PHASE_CONNECTING:
	case PHASE_SETUP:
	case PHASE_SET_TIMEOUTS:
	case PHASE_READY:
	case PHASE_LOCKING:
		/* No lock, or a request whose outcome is unknown: closing the
		 * session releases whatever it holds. */
		released(l, FAULT_CONNECTION);
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
	return l->token;
}
