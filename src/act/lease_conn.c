/* lease_conn.c: the lease's connection: libpq's async API driven on libev. */
#include "lease_conn.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bound on one connection attempt is connect_timeout for each host,
 * and this much more, so that the lease's own report of the last host
 * comes before the election's deadline. */
#define LEASE_CONNECT_SLACK 1.0

static const char *const list_keyword[LEASE_CONN_LISTS] = {
	"host", "hostaddr", "port"
};

static void forget_prepared(struct lease_conn *c)
{
	free(c->prepared_sql);
	c->prepared_sql = NULL;
	c->prepared = false;
}

void lease_conn_close(struct lease_conn *c)
{
	if (ev_is_active(&c->io))
		ev_io_stop(c->loop, &c->io);
	ev_timer_stop(c->loop, &c->host_timer);
	PQclear(c->last_rows);
	PQclear(c->error);
	c->last_rows = c->error = NULL;
	if (c->pg)
		PQfinish(c->pg);
	c->pg = NULL;
	c->connecting = c->busy = false;
	c->start_failed = false;
	forget_prepared(c);
	c->fatal[0] = '\0';
}

/* The one way out of a failure: close the connection, then tell. The
 * arguments may point into what closing frees or clears (libpq's error
 * message, a PGresult, c->fatal), so the reason is formatted into a buffer
 * of this frame first. */
void lease_conn_vfail(struct lease_conn *c, enum fault fault, const char *fmt,
		      va_list ap)
{
	char reason[LOG_MSG_MAX];

	vsnprintf(reason, sizeof(reason), fmt, ap);
	lease_conn_close(c);
	c->h.failed(c->arg, fault, reason);
}

static void fail(struct lease_conn *c, enum fault fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct lease_conn *c, enum fault fault, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lease_conn_vfail(c, fault, fmt, ap);
	va_end(ap);
}

/* An established session ended with libpq's message: the server's FATAL
 * in its first line ("FATAL:  57P01: terminating connection ...", then
 * libpq's "server closed the connection unexpectedly ..."), said as a
 * FATAL that came alone is (its SQLSTATE when the message has it); else
 * what libpq says. */
static void fail_session(struct lease_conn *c, const char *error)
{
	char first[LOG_MSG_MAX], msg[LOG_MSG_MAX], sqlstate[6];
	const char *fatal = "FATAL:";

	snprintf(first, sizeof(first), "%.*s", (int)strcspn(error, "\n"), error);
	lease_sql_one_line(msg, sizeof(msg), first, sqlstate);
	if (!strncmp(msg, fatal, strlen(fatal))) {
		if (*sqlstate)
			lease_sql_server_error(first, sizeof(first), "FATAL",
					       msg + strlen(fatal) + 1, sqlstate);
		else
			snprintf(first, sizeof(first), "%s", msg);
		fail(c, lease_sql_classify(LEASE_SQL_SESSION, *sqlstate ? sqlstate : "?????",
					   false, first),
		     "connection terminated by the server: %s", first);
		return;
	}
	lease_sql_one_line(msg, sizeof(msg), error, sqlstate);
	fail(c, lease_sql_classify(LEASE_SQL_SESSION, sqlstate, false, msg),
	     "connection lost: %s", msg);
}

/* Fails with libpq's message for the connection, classified for the stage. */
static void fail_libpq(struct lease_conn *c, enum lease_sql_stage stage)
{
	char msg[LOG_MSG_MAX], sqlstate[6];
	bool needs_password = stage == LEASE_SQL_CONNECT &&
			      PQconnectionNeedsPassword(c->pg);
	enum fault f;
	const char *what = "";

	if (stage == LEASE_SQL_SESSION && c->pg) {
		fail_session(c, PQerrorMessage(c->pg));
		return;
	}
	lease_sql_one_line(msg, sizeof(msg), c->pg ? PQerrorMessage(c->pg)
				  : "out of memory", sqlstate);
	f = lease_sql_classify(stage, sqlstate, needs_password, msg);
	if (stage == LEASE_SQL_START || stage == LEASE_SQL_CONNECT)
		what = f == FAULT_AUTH ? "cannot connect: "
		     : f == FAULT_BAD_DSN ? "cannot use the connection string: "
		     : "database connection failed: ";
	fail(c, f, "%s%s%s", what, *what ? c->skipped : "", msg);
}

/* Watches the connection's socket. While connecting, libpq closes it and
 * opens another for the next host or address, which may get the same
 * number: libev would still believe the old one registered and never
 * wake up, so then the watcher is set anew on every step (ev_io_set tells
 * libev the descriptor may be a new one). */
static void watch(struct lease_conn *c, int events, bool anew)
{
	int fd = PQsocket(c->pg);

	if (ev_is_active(&c->io)) {
		if (!anew && c->io.fd == fd &&
		    (c->io.events & (EV_READ | EV_WRITE)) == events)
			return;
		ev_io_stop(c->loop, &c->io);
	}
	ev_io_set(&c->io, fd, events);
	ev_io_start(c->loop, &c->io);
}

/* Gives each host its own connect_timeout: the timer starts again when
 * libpq moves on to another host. */
static void track_host(struct lease_conn *c)
{
	char now[sizeof(c->host_now)];
	const char *port = PQport(c->pg);

	snprintf(now, sizeof(now), "%s\n%s", PQhost(c->pg), port ? port : "");
	if (ev_is_active(&c->host_timer) && !strcmp(now, c->host_now))
		return;
	memcpy(c->host_now, now, sizeof(now));
	ev_timer_stop(c->loop, &c->host_timer);
	ev_timer_set(&c->host_timer, c->host_timeout, 0);
	ev_timer_start(c->loop, &c->host_timer);
}

/* Notices arrive here, and so does a FATAL the server sends while no query
 * runs (pg_terminate_backend, idle_session_timeout, shutdown): libpq hands
 * those to the notice receiver before it sees the socket close. */
static void notice_cb(void *arg, const PGresult *res)
{
	struct lease_conn *c = arg;
	const char *sqlstate = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	char msg[LOG_MSG_MAX];

	if (!lease_sql_server_error(msg, sizeof(msg),
				    PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED),
				    PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
				    sqlstate)) {
		log_debug("server notice: %s", msg);
		return;
	}
	memcpy(c->fatal, msg, sizeof(c->fatal));
	c->fatal_fault = lease_sql_classify(LEASE_SQL_SESSION, sqlstate ? sqlstate
					    : "?????", false, msg);
}

/* libpq took a query (ok) or refused it. */
static bool sent(struct lease_conn *c, int ok)
{
	if (!ok) {
		fail_libpq(c, LEASE_SQL_SESSION);
		return false;
	}
	c->busy = true;
	/* Non-blocking mode: a query that does not fit in the socket buffer
	 * at once is flushed from the write watcher. */
	watch(c, PQflush(c->pg) == 1 ? EV_READ | EV_WRITE : EV_READ, false);
	return true;
}

bool lease_conn_send(struct lease_conn *c, const char *sql, int nparams,
		     const char *const *params)
{
	if (nparams > 0)
		return sent(c, PQsendQueryParams(c->pg, sql, nparams, NULL, params,
						 NULL, NULL, 0));
	return sent(c, PQsendQuery(c->pg, sql));
}

static void prepared_name(const struct lease_conn *c, char *buf, size_t len)
{
	snprintf(buf, len, "pgleader_%u", c->prepared_n);
}

/* Executes the prepared statement with the parameters kept for it. */
static bool execute_prepared(struct lease_conn *c)
{
	const char *params[LEASE_CONN_PREPARED_PARAMS];
	char name[32];

	for (int i = 0; i < c->prepared_nparams; i++)
		params[i] = c->prepared_params[i];
	prepared_name(c, name, sizeof(name));
	return sent(c, PQsendQueryPrepared(c->pg, name, c->prepared_nparams,
					   params, NULL, NULL, 0));
}

bool lease_conn_send_prepared(struct lease_conn *c, const char *sql,
			      int nparams, const char *const *params)
{
	char name[32];

	if (nparams > LEASE_CONN_PREPARED_PARAMS)
		return lease_conn_send(c, sql, nparams, params);
	c->prepared_nparams = nparams;
	for (int i = 0; i < nparams; i++)
		snprintf(c->prepared_params[i], sizeof(c->prepared_params[i]),
			 "%s", params[i]);
	if (c->prepared && !strcmp(c->prepared_sql, sql))
		return execute_prepared(c);
	forget_prepared(c);
	c->prepared_sql = strdup(sql);
	if (!c->prepared_sql)
		return lease_conn_send(c, sql, nparams, params);
	c->prepared_n++;
	prepared_name(c, name, sizeof(name));
	return sent(c, PQsendPrepare(c->pg, name, sql, nparams, NULL));
}

/* The query in flight was answered with an error: a FATAL ends the
 * session, anything else is the owner's to judge. */
static void query_failed(struct lease_conn *c, const PGresult *error)
{
	const char *sqlstate = PQresultErrorField(error, PG_DIAG_SQLSTATE);
	const char *primary = PQresultErrorField(error, PG_DIAG_MESSAGE_PRIMARY);
	char msg[LOG_MSG_MAX];

	if (lease_sql_server_error(msg, sizeof(msg),
				   PQresultErrorField(error, PG_DIAG_SEVERITY_NONLOCALIZED),
				   primary ? primary : PQresStatus(PQresultStatus(error)),
				   sqlstate)) {
		fail(c, lease_sql_classify(LEASE_SQL_SESSION, sqlstate ? sqlstate
					   : "?????", false, msg),
		     "connection terminated by the server: %s", msg);
		return;
	}
	c->h.answered(c->arg, NULL, sqlstate, msg);
}

/* The query in flight is fully answered: rows is its last row set, error
 * its first error (both may be NULL). The answer goes to the parsers as
 * strings; none of the lease's queries returns more than five values, the
 * ledger's batched claims up to LEASE_ANSWER_MAX. */
static void query_done(struct lease_conn *c, const PGresult *rows, const PGresult *error)
{
	const char *values[LEASE_ANSWER_MAX];
	struct lease_sql_answer a = { 0, 0, values };

	if (error) {
		query_failed(c, error);
		return;
	}
	if (rows) {
		a.nrows = PQntuples(rows);
		a.ncols = PQnfields(rows);
	}
	if ((size_t)a.nrows * (size_t)a.ncols > sizeof(values) / sizeof(values[0]))
		a.values = NULL;
	for (int r = 0; a.values && r < a.nrows; r++)
		for (int col = 0; col < a.ncols; col++)
			values[r * a.ncols + col] = PQgetisnull(rows, r, col) ? NULL
						    : PQgetvalue(rows, r, col);
	c->h.answered(c->arg, &a, NULL, NULL);
}

/* The Parse of lease_conn_send_prepared was answered: without an error,
 * the statement goes now and this is true (should libpq refuse it, the
 * connection is closed and failed told); with an error, false: that is
 * the statement's answer. False too when no Parse was in flight. */
static bool parsed(struct lease_conn *c, const PGresult *error)
{
	if (!c->prepared_sql || c->prepared)
		return false;
	if (error) {
		forget_prepared(c);
		return false;
	}
	c->prepared = true;
	execute_prepared(c);
	return true;
}

/* Takes every result libpq has parsed; a handler may close the connection
 * or send the next query, so both are checked after each one. */
static void take_results(struct lease_conn *c)
{
	while (c->pg && c->busy && !PQisBusy(c->pg)) {
		PGresult *res = PQgetResult(c->pg);

		if (!res) {
			PGresult *rows = c->last_rows, *error = c->error;

			c->last_rows = c->error = NULL;
			c->busy = false;
			if (parsed(c, error)) {
				PQclear(rows);
				continue;
			}
			query_done(c, rows, error);
			PQclear(rows);
			PQclear(error);
		} else if (PQresultStatus(res) == PGRES_TUPLES_OK) {
			PQclear(c->last_rows);
			c->last_rows = res;
		} else if (PQresultStatus(res) == PGRES_FATAL_ERROR && !c->error) {
			c->error = res;
		} else {
			PQclear(res);
		}
	}
}

/* The session ended: with the FATAL the server sent, if it sent one. */
static void session_ended(struct lease_conn *c)
{
	if (c->fatal[0])
		fail(c, c->fatal_fault, "connection terminated by the server: %s",
		     c->fatal);
	else
		fail_libpq(c, LEASE_SQL_SESSION);
}

/* The NOTIFYs that came (on a channel the session LISTENs to), told once:
 * what they name is read by the owner, not here. */
static void told_notifies(struct lease_conn *c)
{
	PGnotify *n;
	bool any = false;

	while (c->pg && (n = PQnotifies(c->pg))) {
		any = true;
		PQfreemem(n);
	}
	if (any && c->h.notified)
		c->h.notified(c->arg);
}

/* Reads what the server sent. */
static void read_input(struct lease_conn *c)
{
	bool read_ok = PQconsumeInput(c->pg);

	/* PQconsumeInput only reads; parsing happens in PQisBusy. Without a
	 * query in flight that parse hands a FATAL (57P01 terminated, 57P05
	 * idle timeout, ...) to notice_cb, before the end of file says less. */
	(void)PQisBusy(c->pg);
	if (!read_ok) {
		session_ended(c);
		return;
	}
	take_results(c);
	if (c->pg && !c->connecting &&
	    (c->fatal[0] || PQstatus(c->pg) == CONNECTION_BAD)) {
		session_ended(c);
		return;
	}
	told_notifies(c);
}

static void start_conn(struct lease_conn *c);

/* The connection's host lists without the host being tried, into
 * c->lists; false when nothing is left, or when what is left cannot be
 * said (a list of empty entries reads as no list: libpq would take the
 * DSN's again). */
static bool drop_current_host(struct lease_conn *c)
{
	PQconninfoOption *opts = PQconninfo(c->pg), *opt;
	const char *in[LEASE_CONN_LISTS] = { "", "", "" };
	char *out[LEASE_CONN_LISTS];
	bool ok = opts != NULL;
	struct lease_sql_hosts h;

	for (opt = opts; opt && opt->keyword; opt++)
		for (int i = 0; i < LEASE_CONN_LISTS; i++)
			if (!strcmp(opt->keyword, list_keyword[i]) && opt->val)
				in[i] = opt->val;
	for (int i = 0; i < LEASE_CONN_LISTS; i++) {
		out[i] = calloc(1, strlen(in[i]) + 1);
		ok = ok && out[i];
	}
	h = (struct lease_sql_hosts){
		in[LEASE_CONN_HOST], in[LEASE_CONN_HOSTADDR], in[LEASE_CONN_PORT],
		out[LEASE_CONN_HOST], out[LEASE_CONN_HOSTADDR], out[LEASE_CONN_PORT] };
	ok = ok && lease_sql_drop_host(&h, PQhost(c->pg), PQport(c->pg)) > 0;
	for (int i = 0; i < LEASE_CONN_LISTS; i++) {
		ok = ok && !(*in[i] && !*out[i]);
		free(c->lists[i]);
		c->lists[i] = out[i];
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
	struct lease_conn *c = w->data;
	size_t n = strlen(c->skipped);
	const char *port = PQport(c->pg);

	(void)loop;
	(void)revents;
	if (c->start_failed) {
		fail_libpq(c, LEASE_SQL_START);
		return;
	}
	snprintf(c->skipped + n, sizeof(c->skipped) - n, "host \"%s\" port %s: "
		 "no answer within connect_timeout (%.0fs); ", PQhost(c->pg),
		 port && *port ? port : "(default)", c->host_timeout);
	if (drop_current_host(c)) {
		log_notice("%sno answer from host \"%s\" port %s within "
			   "connect_timeout (%.0fs): trying the other hosts",
			   c->label ? c->label : "", PQhost(c->pg),
			   port && *port ? port : "(default)", c->host_timeout);
		lease_conn_close(c);
		start_conn(c);
		return;
	}
	n = strlen(c->skipped);
	if (n >= 2)
		c->skipped[n - 2] = '\0'; /* the last "; " */
	fail(c, FAULT_UNREACHABLE, "database connection failed: %s", c->skipped);
}

/* One step of the connection's startup. */
static void connect_poll(struct lease_conn *c)
{
	switch (PQconnectPoll(c->pg)) {
	case PGRES_POLLING_READING:
		track_host(c);
		watch(c, EV_READ, true);
		return;
	case PGRES_POLLING_WRITING:
		track_host(c);
		watch(c, EV_WRITE, true);
		return;
	case PGRES_POLLING_FAILED:
	case PGRES_POLLING_ACTIVE: /* unused since PostgreSQL 7.4 */
		fail_libpq(c, LEASE_SQL_CONNECT);
		return;
	case PGRES_POLLING_OK:
		break;
	}
	ev_timer_stop(c->loop, &c->host_timer);
	c->skipped[0] = '\0';
	if (PQsetnonblocking(c->pg, 1) != 0) {
		fail_libpq(c, LEASE_SQL_SESSION);
		return;
	}
	c->connecting = false;
	c->h.ready(c->arg);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct lease_conn *c = w->data;

	(void)loop;
	if (c->connecting) {
		connect_poll(c);
		return;
	}
	if (revents & EV_WRITE) {
		int r = PQflush(c->pg);

		if (r < 0) {
			fail_libpq(c, LEASE_SQL_SESSION);
			return;
		}
		if (r == 0)
			watch(c, EV_READ, false);
	}
	if (revents & EV_READ)
		read_input(c);
}

/* Where the DSN, or else the environment, sets connect_timeout and the
 * hosts: each host gets connect_timeout. A service file's hosts are not
 * counted. */
static void read_dsn(struct lease_conn *c, const PQconninfoOption *opts)
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
	c->host_timeout = lease_sql_connect_timeout(timeout);
	c->hosts = lease_sql_count_hosts(host, hostaddr);
}

bool lease_conn_init(struct lease_conn *c, struct ev_loop *loop, const char *dsn,
		     const char *node_id, const struct lease_conn_handlers *h,
		     void *arg, char *err, size_t errlen)
{
	PQconninfoOption *opts = NULL;
	char *perr = NULL;

	memset(c, 0, sizeof(*c));
	if (dsn) {
		opts = PQconninfoParse(dsn, &perr);
		if (!opts) {
			lease_sql_one_line(err, errlen, perr ? perr : "out of memory",
					   NULL);
			PQfreemem(perr);
			return false;
		}
		c->dsn = strdup(dsn);
		if (!c->dsn) {
			PQconninfoFree(opts);
			snprintf(err, errlen, "out of memory");
			return false;
		}
	}
	c->loop = loop;
	c->h = *h;
	c->arg = arg;
	read_dsn(c, opts);
	PQconninfoFree(opts);
	snprintf(c->application_name, sizeof(c->application_name), "%s%s",
		 WIRE_APP_PREFIX, node_id);
	ev_init(&c->io, io_cb);
	c->io.data = c;
	ev_init(&c->host_timer, host_timer_cb);
	c->host_timer.data = c;
	return true;
}

static void forget_hosts(struct lease_conn *c)
{
	for (int i = 0; i < LEASE_CONN_LISTS; i++) {
		free(c->lists[i]);
		c->lists[i] = NULL;
	}
	c->skipped[0] = '\0';
}

void lease_conn_free(struct lease_conn *c)
{
	lease_conn_close(c);
	forget_hosts(c);
	free(c->dsn);
	c->dsn = NULL;
}

double lease_conn_timeout(const struct lease_conn *c)
{
	return c->host_timeout * c->hosts + LEASE_CONNECT_SLACK;
}

static void start_conn(struct lease_conn *c)
{
	/* Array entries before the expanded DSN are defaults it may change;
	 * entries after it always win (libpq processes them in order): the
	 * host lists without the hosts that timed out, when some did. */
	const char *keys[6 + LEASE_CONN_LISTS + 1] = { "keepalives", "keepalives_idle",
		"keepalives_interval", "keepalives_count", "dbname", "application_name" };
	const char *vals[6 + LEASE_CONN_LISTS + 1] = { "1", "10", "5", "3",
		c->dsn ? c->dsn : "", c->application_name };
	int n = 6;

	c->connecting = true; /* a failure here is a failed connect */
	for (int i = 0; i < LEASE_CONN_LISTS; i++)
		if (c->lists[i] && *c->lists[i]) {
			keys[n] = list_keyword[i];
			vals[n++] = c->lists[i];
		}
	keys[n] = vals[n] = NULL;
	c->pg = PQconnectStartParams(keys, vals, 1);
	if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
		/* Told from the loop, as every other outcome of lease_connect:
		 * a caller that has not entered ev_run yet could not act on
		 * an event it gets from inside this call. */
		c->start_failed = true;
		ev_timer_set(&c->host_timer, 0, 0);
		ev_timer_start(c->loop, &c->host_timer);
		return;
	}
	PQsetNoticeReceiver(c->pg, notice_cb, c);
	/* Verbose errors carry the SQLSTATE that tells a wrong password from
	 * a server that is starting up, and, for the whole session, a FATAL
	 * that ends a query in flight (libpq keeps only the message then, not
	 * the result's fields); see lease_sql_one_line(). */
	PQsetErrorVerbosity(c->pg, PQERRORS_VERBOSE);
	track_host(c);
	watch(c, EV_WRITE, true);
}

void lease_conn_start(struct lease_conn *c)
{
	lease_conn_close(c);
	forget_hosts(c);
	start_conn(c);
}

int lease_conn_backend_pid(const struct lease_conn *c)
{
	return c->pg ? PQbackendPID(c->pg) : 0;
}
