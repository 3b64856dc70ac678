/* pooled.c: the lock's state read through a transaction pooler (poll_dsn,
 * DESIGN 15). One client connection to the pooler, kept between polls (it
 * holds no server session in transaction pooling), checked when it opens:
 * a pooler (libpq's backend pid is not the server's) in front of a primary
 * (pg_is_in_recovery). And no session pooler, which gives each client a
 * server session of its own for as long as it is connected: every poll
 * also says its pg_backend_pid(), and until the pooler was seen sharing its
 * server sessions, a second client connection, kept open beside the
 * first, asks its own after each poll. They are shared as soon as the
 * second gets the one the poll just had, or either gets another than the
 * first time on its connection: a quiet transaction pooler that reuses its
 * idle server sessions last in, first out (PgBouncer's default) shows it at
 * the first poll, a busy one within a few. After POLL_PROBES polls without
 * it, the pooler is refused as a session pooler. */
#include "pooled.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_conn.h"
#include "lease_sql.h"
#include "log.h"
#include "wire.h"

/* Polls without a server session shared before the pooler is refused as a
 * session pooler: POLL_PROBES retry_intervals (50 s by default) after the
 * start, so that a busy transaction pooler has had time to show it. */
#define POLL_PROBES 10
#define POLL_SQL_MAX LEASE_SQL_POLL_MAX
#define POLL_APP_NAME "pgleader-poll"

enum poll_phase {
	PH_CLOSED, PH_CONNECTING, PH_CHECKING, PH_READING, PH_PROBING, PH_READY
};

struct poll {
	struct poll_options o;
	poll_fn fn;
	void *arg;
	struct lease_conn conn;   /* the poll's */
	struct lease_conn probe;  /* the second client, while checking */
	enum poll_phase phase;
	bool wanted;              /* a read was asked for and not told */
	bool counts;              /* ... and counts the queue */
	bool verified;            /* server sessions were seen shared */
	int probes;               /* polls without it */
	int server_pid;           /* what served the poll just answered */
	int first_pid, probe_pid; /* what served each connection first; 0 */
	struct poll_answer found; /* the poll's, told once the probe answered */
	char key_sql[64];         /* the key as a literal, once known */
	int64_t key;              /* ... and as a number */
	uint32_t db_oid;          /* the pooled sessions' database, once checked */
	uint64_t system_id;       /* ... its cluster's (0: not readable) */
	ev_timer later;           /* sends from the loop, never from poll_read */
};

static void tell(struct poll *p, const struct poll_answer *a)
{
	if (!p->wanted)
		return;
	p->wanted = false;
	p->fn(p->arg, a);
}

/* Both connections closed, and the failure told. */
static void failed(struct poll *p, enum fault fault, bool recovery,
		   const char *reason)
{
	char why[LOG_MSG_MAX];

	snprintf(why, sizeof(why), "%s", reason);
	lease_conn_close(&p->conn);
	lease_conn_close(&p->probe);
	p->phase = PH_CLOSED;
	p->first_pid = p->probe_pid = 0;
	tell(p, &(struct poll_answer){ .fault = fault, .recovery = recovery,
				       .reason = why });
}

static void send_on(struct poll *p, struct lease_conn *c, const char *what)
{
	char sql[POLL_SQL_MAX];

	if (!lease_sql_poll(sql, sizeof(sql), p->o.statement_timeout, what)) {
		failed(p, FAULT_INTERNAL, false, "poll_dsn: statement too long");
		return;
	}
	lease_conn_send(c, sql, 0, NULL); /* a refusal is told as failed */
}

static void send_check(struct poll *p)
{
	char what[1024], name[400] = "";
	char *lit = NULL;

	if (p->o.lock_name && !p->key_sql[0]) {
		lit = PQescapeLiteral(p->conn.pg, p->o.lock_name, strlen(p->o.lock_name));
		if (!lit) {
			failed(p, FAULT_INTERNAL, false, "poll_dsn: out of memory");
			return;
		}
		snprintf(name, sizeof(name), ", " WIRE_KEY_OF_NAME("%s"), lit);
		PQfreemem(lit);
	}
	snprintf(what, sizeof(what), "pg_catalog.pg_backend_pid(), "
		 "pg_catalog.pg_is_in_recovery(), " LEASE_SQL_IDENTITY "%s", name);
	p->phase = PH_CHECKING;
	send_on(p, &p->conn, what);
}

static void send_state(struct poll *p)
{
	char sql[POLL_SQL_MAX];

	p->phase = PH_READING;
	if (!(p->counts ? lease_sql_poll_state(sql, sizeof(sql), p->key, p->db_oid)
			: lease_sql_poll_held(sql, sizeof(sql), p->key_sql))) {
		failed(p, FAULT_INTERNAL, false, "poll_dsn: statement too long");
		return;
	}
	lease_conn_send(&p->conn, sql, 0, NULL);
}

static void later_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct poll *p = w->data;

	(void)loop;
	(void)revents;
	if (p->phase == PH_READY && p->wanted)
		send_state(p);
}

static void conn_ready(void *arg)
{
	send_check(arg);
}

static void probe_ready(void *arg)
{
	struct poll *p = arg;

	send_on(p, &p->probe, "pg_catalog.pg_backend_pid()");
}

static void conn_failed(void *arg, enum fault fault, const char *reason)
{
	failed(arg, fault, false, reason);
}

/* An ERROR: the transaction is rolled back, the connection stays usable,
 * but the poll has no answer: closed, and told as the lease tells one. */
static bool answer_error(struct poll *p, const char *sqlstate, const char *error)
{
	char why[LOG_MSG_MAX];

	if (!error)
		return false;
	snprintf(why, sizeof(why), "poll_dsn: %s", error);
	failed(p, lease_sql_classify(LEASE_SQL_QUERY, sqlstate, false, why), false,
	       why);
	return true;
}

static bool parse_int(const char *s, long long min, long long *v)
{
	char *end;

	if (!s || !*s)
		return false;
	*v = strtoll(s, &end, 10);
	return !*end && *v >= min;
}

/* The check's answer: the server's pid and recovery, the database it
 * reached (system identifier and oid), the name's key. */
static void checked(struct poll *p, const struct lease_sql_answer *a)
{
	int ncols = p->o.lock_name && !p->key_sql[0] ? 5 : 4;
	long long pid, key;

	if (a->nrows != 1 || a->ncols != ncols || !parse_int(a->values[0], 1, &pid) ||
	    !a->values[1] || !lease_sql_parse_identity(a->values[2], a->values[3],
						       &p->system_id, &p->db_oid) ||
	    (ncols == 5 && !parse_int(a->values[4], INT64_MIN, &key))) {
		failed(p, FAULT_PROTOCOL, false, "poll_dsn: unexpected answer to its check");
		return;
	}
	if (ncols == 5) {
		p->key = key;
		snprintf(p->key_sql, sizeof(p->key_sql), "(%lld)::bigint", key);
	}
	if (pid == lease_conn_backend_pid(&p->conn)) {
		failed(p, FAULT_POOLER, false, "poll_dsn reaches PostgreSQL directly, "
		       "not through a connection pooler: point it at PgBouncer with "
		       "pool_mode = transaction, or leave it out");
		return;
	}
	if (!strcmp(a->values[1], "t")) {
		failed(p, FAULT_HOT_STANDBY, true, "poll_dsn reaches a server in "
		       "recovery (a hot standby): its pg_locks say nothing of the "
		       "primary's lock; point it at a pooler in front of the primary");
		return;
	}
	send_state(p);
}

/* The second connection's pid, after a poll: shared, or one more poll
 * without it. */
static void probed(struct poll *p, const struct lease_sql_answer *a)
{
	long long pid;

	if (a->nrows != 1 || a->ncols != 1 || !parse_int(a->values[0], 1, &pid)) {
		failed(p, FAULT_PROTOCOL, false, "poll_dsn: unexpected answer to its check");
		return;
	}
	if (!p->probe_pid)
		p->probe_pid = (int)pid;
	if (pid == p->server_pid || pid != p->probe_pid) {
		p->verified = true;
		lease_conn_close(&p->probe);
	} else if (++p->probes >= POLL_PROBES) {
		failed(p, FAULT_POOLER, false, "poll_dsn is not a transaction pooler: "
		       "each of two client connections kept a server session of its "
		       "own (a session pooler, PgBouncer pool_mode = session?); "
		       "poll_dsn needs pool_mode = transaction");
		return;
	}
	p->phase = PH_READY;
	tell(p, &p->found);
}

/* The answer's columns: held and queued (-1 when the poll did not count)
 * and the server session's pid; false if it is not the poll's. */
static bool parse_state(const struct poll *p, const struct lease_sql_answer *a,
			long long *held, long long *queued, long long *pid)
{
	const char *got;

	*queued = -1;
	if (p->counts)
		return a->nrows == 1 && a->ncols == 3 && parse_int(a->values[0], 0, held) &&
		       parse_int(a->values[1], 0, queued) && parse_int(a->values[2], 1, pid);
	got = a->nrows == 1 && a->ncols == 2 ? a->values[0] : NULL;
	*held = got && !strcmp(got, "f");
	return got && (*held || !strcmp(got, "t")) && parse_int(a->values[1], 1, pid);
}

/* A poll's answer: told at once once the server sessions were seen
 * shared, else after the second connection's pid. */
static void read_state(struct poll *p, const struct lease_sql_answer *a)
{
	long long held, queued, pid;

	if (!parse_state(p, a, &held, &queued, &pid)) {
		failed(p, FAULT_PROTOCOL, false, "poll_dsn: unexpected answer to a poll");
		return;
	}
	p->found = (struct poll_answer){ .ok = true, .held = held > 0,
		.queued = queued > INT32_MAX ? INT32_MAX : (int)queued,
		.system_id = p->system_id, .db_oid = p->db_oid };
	p->server_pid = (int)pid;
	if (!p->first_pid)
		p->first_pid = (int)pid;
	p->verified |= pid != p->first_pid;
	if (p->verified) {
		lease_conn_close(&p->probe);
		p->phase = PH_READY;
		tell(p, &p->found);
		return;
	}
	p->phase = PH_PROBING;
	if (p->probe.pg)
		probe_ready(p);
	else
		lease_conn_start(&p->probe);
}

static void conn_answered(void *arg, const struct lease_sql_answer *a,
			  const char *sqlstate, const char *error)
{
	struct poll *p = arg;

	if (answer_error(p, sqlstate, error))
		return;
	if (p->phase == PH_CHECKING)
		checked(p, a);
	else if (p->phase == PH_READING)
		read_state(p, a);
}

static void probe_answered(void *arg, const struct lease_sql_answer *a,
			   const char *sqlstate, const char *error)
{
	struct poll *p = arg;

	if (!answer_error(p, sqlstate, error))
		probed(p, a);
}

struct poll *poll_new(struct ev_loop *loop, const struct poll_options *o,
		      poll_fn fn, void *arg, char *err, size_t errlen)
{
	static const struct lease_conn_handlers conn_h = {
		conn_ready, conn_answered, conn_failed, NULL };
	static const struct lease_conn_handlers probe_h = {
		probe_ready, probe_answered, conn_failed, NULL };
	struct poll *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->o = *o;
	p->fn = fn;
	p->arg = arg;
	if (!lease_conn_init(&p->conn, loop, o->dsn, o->node_id, &conn_h, p, err,
			     errlen)) {
		free(p);
		return NULL;
	}
	if (!lease_conn_init(&p->probe, loop, o->dsn, o->node_id, &probe_h, p, err,
			     errlen)) {
		lease_conn_free(&p->conn);
		free(p);
		return NULL;
	}
	p->conn.label = p->probe.label = "poll_dsn: ";
	/* not WIRE_APP_PREFIX: the pooler's server sessions, which take the
	 * name of the client they serve, are no node's lock or fence session
	 * to the queue's ranking, failsafe's member check or pgleader status;
	 * and one name for every node: a pooler sends a SET (a transaction of
	 * its own) when a server session goes to a client of another name */
	snprintf(p->conn.application_name, sizeof(p->conn.application_name),
		 "%s", POLL_APP_NAME);
	snprintf(p->probe.application_name, sizeof(p->probe.application_name),
		 "%s", POLL_APP_NAME);
	if (!o->lock_name) {
		p->key = o->lock_key;
		snprintf(p->key_sql, sizeof(p->key_sql), "(%" PRId64 ")::bigint",
			 o->lock_key);
	}
	ev_timer_init(&p->later, later_cb, 0, 0);
	p->later.data = p;
	return p;
}

void poll_free(struct poll *p)
{
	if (!p)
		return;
	ev_timer_stop(p->conn.loop, &p->later);
	lease_conn_free(&p->conn);
	lease_conn_free(&p->probe);
	free(p);
}

void poll_read(struct poll *p, bool counts)
{
	if (p->wanted)
		return;
	p->wanted = true;
	p->counts = counts;
	if (p->phase == PH_CLOSED) {
		p->phase = PH_CONNECTING;
		lease_conn_start(&p->conn);
	} else if (p->phase == PH_READY) {
		ev_timer_stop(p->conn.loop, &p->later);
		ev_timer_set(&p->later, 0, 0);
		ev_timer_start(p->conn.loop, &p->later);
	}
}

void poll_close(struct poll *p)
{
	ev_timer_stop(p->conn.loop, &p->later);
	lease_conn_close(&p->conn);
	lease_conn_close(&p->probe);
	p->phase = PH_CLOSED;
	p->wanted = false;
	p->first_pid = p->probe_pid = 0;
}
