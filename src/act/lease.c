/* lease.c: takes, holds, pings and gives back the lock or the fence on its
 * own connection (lease_conn.c). */
#include "lease.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lease_conn.h"
#include "lease_sql.h"
#include "log.h"
#include "wire.h"

/* What the connection is doing; each query step has its own phase so that
 * the answer's handler knows what the answer means. */
enum lease_phase {
	PHASE_CLOSED,
	PHASE_CONNECTING,   /* lease_conn until ready */
	PHASE_SETUP,        /* pid, recovery, version, key; the timeouts */
	PHASE_IDENTITY,     /* with read_identity: the database reached */
	PHASE_READY,        /* idle, no lock */
	PHASE_LOCKING,      /* try or queued wait in flight */
	PHASE_RANKING,      /* a try found room in the queue: where this
			     * standby ranks (LEASE_SQL_QUEUE_RANK) */
	PHASE_CLAIMING,     /* lock held: server-side lease (, fencing token) */
	PHASE_HELD,         /* idle, lock held */
	PHASE_PINGING,
	PHASE_UNLOCKING,
	PHASE_UNCLAIMING,   /* unlocked, the session kept: server-side lease off */
	PHASE_QUERYING,     /* a caller's statement (lease_query) in flight */
};

/* What the caller asked for while an answer was awaited. */
enum lease_then {
	THEN_HOLD,
	THEN_UNLOCK,        /* lease_unlock: unlock, keep the session */
	THEN_RELEASE,       /* lease_release: unlock, close */
};

struct lease {
	struct lease_options o; /* its strings are the caller's: not kept */
	char *lock_name;
	lease_event_fn fn;
	void *arg;
	struct lease_conn conn;
	void (*notify_fn)(void *arg); /* lease_on_notify */
	void *notify_arg;

	enum lease_phase phase;
	enum lease_then then;
	bool waiting_in_queue;  /* the lock request is a pg_advisory_lock */
	bool claim_with_lock;   /* ... with the fence's claim after it */
	bool plain_next;        /* the next try does not count the queue
				 * (lease_plain_try) */
	bool rank_next;         /* ... ranks even when it is full
				 * (lease_rank_queue) */
	bool rank_always;       /* the try in flight does */
	bool try_ranked;        /* the try is LEASE_SQL_TRY_QUEUE */
	int queue_ahead;        /* its count; -1: not known */
	bool ranked;            /* ... with the standbys ranked before it */
	int lock_slots;         /* the lock table's size it said; 0: not
				 * counted */
	bool ping_wanted;       /* a ping asked for during a fence's claim */
	struct lease_sql_server srv;
	bool warned_old_server;
	bool warned_no_temp;
	bool key_known;         /* a lock name's key came from the server */
	int64_t key;
	uint64_t token;
	char since[32];         /* when the lock was granted, "" when not held */
	char waiting[32];       /* when this session queued for the lock, "" */
	char nodes[LOG_MSG_MAX]; /* the last ping's node ids (list_nodes) */

	/* lease_query: one caller's statement, sent when the session is idle
	 * (ready or held); the lease's own requests asked for meanwhile wait
	 * for its answer (want_lock, ping_wanted, then). */
	struct {
		bool waiting, in_flight;
		enum lease_phase back_to; /* READY or HELD, after the answer */
		char *sql;
		char *params[LEASE_QUERY_PARAMS];
		int nparams;
		lease_query_fn fn;
		void *arg;
	} q;
	enum { WANT_NONE, WANT_TRY, WANT_WAIT } want_lock;
};

static void emit(struct lease *l, enum lease_event ev, enum fault fault,
		 const char *reason)
{
	l->fn(l->arg, ev, fault, reason);
}

static bool connecting(const struct lease *l)
{
	return l->phase == PHASE_CONNECTING || l->phase == PHASE_SETUP ||
	       l->phase == PHASE_IDENTITY;
}

/* The connection is closed: nothing held, nothing asked for. */
static void query_forget(struct lease *l)
{
	free(l->q.sql);
	for (int i = 0; i < l->q.nparams; i++)
		free(l->q.params[i]);
	memset(&l->q, 0, sizeof(l->q));
}

/* The caller's statement, if any, is answered with error (the session
 * closed, or it never went out). */
static void query_abandon(struct lease *l, const char *error)
{
	lease_query_fn fn = l->q.fn;
	void *arg = l->q.arg;

	if (!l->q.waiting && !l->q.in_flight)
		return;
	query_forget(l);
	fn(arg, NULL, NULL, error);
}

static void closed(struct lease *l)
{
	l->phase = PHASE_CLOSED;
	l->then = THEN_HOLD;
	l->ping_wanted = false;
	l->want_lock = WANT_NONE;
	l->plain_next = l->rank_next = false;
	l->since[0] = '\0';
	l->waiting[0] = '\0';
	query_abandon(l, "the session closed");
}

/* The connection failed and is closed: LEASE_CONNECT_FAILED before it was
 * ready, LEASE_LOST after. */
static void conn_failed(void *arg, enum fault fault, const char *reason)
{
	struct lease *l = arg;
	enum lease_event ev = connecting(l) ? LEASE_CONNECT_FAILED : LEASE_LOST;
	char said[LOG_MSG_MAX + 16];

	/* A standby's lost session says which one it was; a leader's loss is
	 * "lost leader lease: ...", and the fence's is named by the election. */
	snprintf(said, sizeof(said), "%s%s", ev == LEASE_LOST && !l->o.fence &&
		 !l->since[0] ? "lock session: " : "", reason ? reason : "");
	closed(l);
	emit(l, ev, fault, reason ? said : NULL);
}

/* A failure the lease finds in an answer: the session is in a state it
 * does not know, and never carries the lock on. */
static void fail(struct lease *l, enum fault fault, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct lease *l, enum fault fault, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lease_conn_vfail(&l->conn, fault, fmt, ap);
	va_end(ap);
}

/* Closed without an unlock (fault set) or after one (FAULT_NONE). */
static void released(struct lease *l, enum fault fault)
{
	lease_conn_close(&l->conn);
	closed(l);
	emit(l, LEASE_RELEASED, fault, NULL);
}

/* Sends a statement with its tag (wire.h): which lock the session is for,
 * and since when it leads; not before a lock name's key is known. A tag
 * that does not fit is left out rather than the statement cut. */
static bool send_sql_as(struct lease *l, enum lease_phase phase, const char *sql,
			int nparams, const char *const *params, bool prepare)
{
	char tagged[LEASE_QUERY_MAX + LEASE_SQL_TAG_MAX], waited[LEASE_SQL_MAX + 64];
	int n;

	/* A queued wait says since when this session has been queueing. */
	if (phase == PHASE_LOCKING && l->waiting_in_queue && l->waiting[0] &&
	    (n = snprintf(waited, sizeof(waited), "%s" WIRE_WAITING_FMT, sql,
			  l->waiting)) > 0 && (size_t)n < sizeof(waited))
		sql = waited;
	if ((!l->lock_name || l->key_known) &&
	    lease_sql_tag(tagged, sizeof(tagged), sql, l->o.fence ? WIRE_TAG_FENCE
			  : WIRE_TAG_LOCK, l->key, l->since,
			  l->o.fence ? 1 : l->o.priority))
		sql = tagged;
	l->phase = phase;
	return prepare ? lease_conn_send_prepared(&l->conn, sql, nparams, params)
		       : lease_conn_send(&l->conn, sql, nparams, params);
}

static bool send_sql(struct lease *l, enum lease_phase phase, const char *sql,
		     int nparams, const char *const *params)
{
	return send_sql_as(l, phase, sql, nparams, params, false);
}

static void send_lock_sql(struct lease *l, enum lease_phase phase,
			  enum lease_sql_lock_op op)
{
	struct lease_sql_lock q;
	const char *params[2];

	lease_sql_lock(&q, op, l->o.fence, l->key);
	params[0] = q.params[0];
	params[1] = q.params[1];
	/* A polling standby's try, every retry_interval for as long as it
	 * polls: prepared once on the session, then only executed. */
	send_sql_as(l, phase, q.sql, q.nparams, params, op == LEASE_SQL_TRY);
}

static void send_unlock(struct lease *l)
{
	l->ping_wanted = false;
	l->since[0] = '\0'; /* the unlock ends the lead: its tag says so */
	send_lock_sql(l, PHASE_UNLOCKING, LEASE_SQL_UNLOCK);
}

/* Once per lease, what its claims cannot do on this server. The fence's
 * lease leaves it to the lock's. */
static void warn_missing(struct lease *l, unsigned missing)
{
	if ((missing & LEASE_SQL_NO_IDLE_TIMEOUT) && !l->warned_old_server) {
		log_warning("PostgreSQL %d has no idle_session_timeout: a frozen "
			    "leader keeps the lock until TCP keepalives give up",
			    l->srv.version / 10000);
		l->warned_old_server = true;
	}
	if ((missing & LEASE_SQL_NO_DURABLE_TOKEN) && !l->warned_no_temp) {
		log_warning("the role may neither write a logical message nor "
			    "create temporary tables: after a database crash the "
			    "fencing token can repeat");
		l->warned_no_temp = true;
	}
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
	int libpq_pid = lease_conn_backend_pid(&l->conn);

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
		/* the fence's lease says nothing the lock's does not */
		if (!l->key_known && !l->o.fence)
			log_info("lock name \"%s\" is lock key %" PRId64,
				 l->lock_name, l->key);
		l->key_known = true;
	}
	if (l->o.read_identity) {
		send_sql(l, PHASE_IDENTITY, LEASE_SQL_IDENTITY_QUERY, 0, NULL);
		return;
	}
	l->phase = PHASE_READY;
	emit(l, LEASE_CONNECTED, FAULT_NONE, NULL);
}

static void identity_done(struct lease *l, const struct lease_sql_answer *a)
{
	if (!lease_sql_parse_identity_row(a, &l->srv)) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to the identity query");
		return;
	}
	l->phase = PHASE_READY;
	emit(l, LEASE_CONNECTED, FAULT_NONE, NULL);
}

/* The lock is ours after a claim or a ping: give it back if asked to. */
static bool held(struct lease *l)
{
	l->phase = PHASE_HELD;
	if (l->then == THEN_HOLD)
		return true;
	send_unlock(l);
	return false;
}

static void acquired(struct lease *l)
{
	char why[LOG_MSG_MAX];
	int32_t hi, lo;

	lease_sql_fence_halves(l->key, &hi, &lo);
	if (l->o.fence)
		snprintf(why, sizeof(why), "fence of key %" PRId64 " (%" PRId32
			 ", %" PRId32 ")", l->key, hi, lo);
	else
		snprintf(why, sizeof(why), "key %" PRId64 ", fencing token %" PRIu64,
			 l->key, l->token);
	emit(l, LEASE_ACQUIRED, FAULT_NONE, why);
}

/* The fence is granted: it is held from now on. Its claim, the
 * server-side lease, brings nothing its holder waits for, so it is told at
 * once and the claim follows: a takeover waits one round trip less. */
static void fence_granted(struct lease *l)
{
	char sql[LEASE_SQL_MAX];

	if (!lease_sql_fence_claim(sql, sizeof(sql), &l->srv, l->o.server_lease))
		l->phase = PHASE_HELD;
	else if (!send_sql(l, PHASE_CLAIMING, sql, 0, NULL))
		return; /* LEASE_LOST told */
	acquired(l);
}

/* The lock is granted: the claim, in one round trip, sets the server-side
 * lease and reads the fencing token the command gets. Told at once, so
 * that the fence and the controls are asked for while it is under way. */
static void lock_granted(struct lease *l)
{
	char sql[LEASE_SQL_MAX];
	struct timespec now;

	/* wall clock time, for people: the tag of every statement from this
	 * one on says since when this node leads */
	clock_gettime(CLOCK_REALTIME, &now);
	lease_sql_since(l->since, sizeof(l->since), (int64_t)now.tv_sec, now.tv_nsec);
	l->waiting[0] = '\0';
	warn_missing(l, lease_sql_claim(sql, sizeof(sql), &l->srv, l->o.server_lease));
	if (send_sql(l, PHASE_CLAIMING, sql, 0, NULL))
		emit(l, LEASE_GRANTED, FAULT_NONE, NULL);
}

/* The claim's answer (the lock's token, the backend pid) is read and the
 * lock held: false when the session failed or the lock goes back. */
static bool claim_held(struct lease *l, const struct lease_sql_answer *a)
{
	int pid;
	bool ok = l->o.fence ? lease_sql_parse_pid(a, &pid)
			     : lease_sql_parse_claim(a, &l->token, &pid);

	if (!ok) {
		fail(l, FAULT_PROTOCOL, "unexpected answer while taking the lock");
		return false;
	}
	return !through_pooler(l, pid, "") && held(l);
}

/* The fence and its claim, asked for in one statement, are granted: the
 * answer is the claim's. */
static void fence_claimed(struct lease *l, const struct lease_sql_answer *a)
{
	if (claim_held(l, a))
		acquired(l);
}

/* The queue has room: where does this standby rank? Only then is
 * pg_stat_activity read, so that a fleet whose queue is full costs the
 * server a pg_locks scan a try. */
static void send_rank(struct lease *l)
{
	char key[24], priority[16], depth[16];
	const char *params[LEASE_SQL_QUEUE_RANK_PARAMS] = {
		key, priority, WIRE_TAG_RE, depth
	};

	snprintf(key, sizeof(key), "%" PRId64, l->key);
	snprintf(priority, sizeof(priority), "%d", l->o.priority);
	snprintf(depth, sizeof(depth), "%d", l->o.rank_limit > l->o.queue_depth
		 ? l->o.rank_limit : l->o.queue_depth);
	send_sql(l, PHASE_RANKING, LEASE_SQL_QUEUE_RANK, LEASE_SQL_QUEUE_RANK_PARAMS,
		 params);
}

static void rank_done(struct lease *l, const struct lease_sql_answer *a)
{
	if (!lease_sql_parse_count(a, &l->queue_ahead)) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to the queue's count");
		return;
	}
	l->ranked = true;
	l->phase = PHASE_READY;
	emit(l, LEASE_BUSY, FAULT_NONE, NULL);
}

static void lock_done(struct lease *l, const struct lease_sql_answer *a)
{
	/* pg_advisory_lock returns only once the lock is ours */
	bool granted = l->waiting_in_queue;
	bool ok = granted || (l->try_ranked
		? lease_sql_parse_try_queue(a, &granted, &l->queue_ahead,
					    &l->lock_slots)
		: lease_sql_parse_granted(a, &granted));

	if (!ok) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to the lock request");
		return;
	}
	if (!granted && l->try_ranked &&
	    (l->queue_ahead < l->o.queue_depth || l->rank_always)) {
		send_rank(l);
		return;
	}
	if (granted) {
		if (l->claim_with_lock)
			fence_claimed(l, a);
		else if (l->o.fence)
			fence_granted(l);
		else
			lock_granted(l);
		return;
	}
	l->phase = PHASE_READY;
	emit(l, LEASE_BUSY, FAULT_NONE, NULL);
}

static void claim_done(struct lease *l, const struct lease_sql_answer *a)
{
	if (!claim_held(l, a))
		return;
	if (!l->o.fence) {
		acquired(l);
	} else if (l->ping_wanted) {
		/* a fence is told held before its claim, which answers a
		 * ping asked for meanwhile: the pid is checked */
		l->ping_wanted = false;
		emit(l, LEASE_PING_OK, FAULT_NONE, NULL);
	}
}

static void ping_done(struct lease *l, const struct lease_sql_answer *a)
{
	int pid;
	bool ok;

	l->nodes[0] = '\0';
	ok = l->o.list_nodes
		? lease_sql_parse_ping_nodes(a, &pid, l->nodes, sizeof(l->nodes))
		: lease_sql_parse_pid(a, &pid);

	if (!ok) {
		fail(l, FAULT_PROTOCOL, "unexpected answer to a ping");
		return;
	}
	if (through_pooler(l, pid, " while leading") || !held(l))
		return;
	emit(l, LEASE_PING_OK, FAULT_NONE, NULL);
}

/* Unlocked, or the server-side lease undone: ready for the next take, or
 * closed when lease_release asked for it. */
static void unlocked(struct lease *l, bool undo_claim)
{
	char sql[LEASE_SQL_MAX];

	if (l->then == THEN_RELEASE) {
		released(l, FAULT_NONE);
		return;
	}
	if (undo_claim && lease_sql_unclaim(sql, sizeof(sql), &l->srv,
					     l->o.server_lease)) {
		send_sql(l, PHASE_UNCLAIMING, sql, 0, NULL);
		return;
	}
	l->phase = PHASE_READY;
	l->then = THEN_HOLD;
	emit(l, LEASE_RELEASED, FAULT_NONE, NULL);
}

/* The query in flight was answered with an ERROR (a FATAL ends the session
 * in lease_conn). */
static void query_failed(struct lease *l, const char *sqlstate, const char *msg)
{
	/* lock_timeout of a queued wait: nothing is wrong, queue up again */
	if (l->phase == PHASE_LOCKING && l->waiting_in_queue && sqlstate &&
	    !strcmp(sqlstate, LEASE_SQL_LOCK_TIMEOUT)) {
		l->phase = PHASE_READY;
		l->queue_ahead = -1;
		emit(l, LEASE_BUSY, FAULT_NONE, NULL);
	} else if (l->phase == PHASE_UNLOCKING || l->phase == PHASE_UNCLAIMING) {
		released(l, FAULT_CONNECTION);
	} else {
		/* A session in an unknown state never carries the lock on. */
		fail(l, lease_sql_classify(LEASE_SQL_QUERY, sqlstate, false, msg),
		     "%s failed: %s", connecting(l) ? "setting up the lock connection"
		     : "query on the lock connection", msg);
	}
}

static void send_query(struct lease *l);
static void send_lock(struct lease *l, bool queue);
static void answer_phase(struct lease *l, const struct lease_sql_answer *a);

/* What the lease's own owner asked for while the caller's statement was in
 * flight goes first, then the caller hears its answer (and may send the
 * next one, which waits for the session to be idle again). */
static void query_answered(struct lease *l, const struct lease_sql_answer *a,
			   const char *sqlstate, const char *error)
{
	lease_query_fn fn = l->q.fn;
	void *arg = l->q.arg;

	l->phase = l->q.back_to;
	query_forget(l);
	if (l->phase == PHASE_HELD && l->then != THEN_HOLD)
		send_unlock(l);
	else if (l->phase == PHASE_READY && l->want_lock != WANT_NONE)
		send_lock(l, l->want_lock == WANT_WAIT);
	else if (l->phase == PHASE_HELD && l->ping_wanted)
		lease_ping(l);
	l->want_lock = WANT_NONE;
	fn(arg, a, sqlstate, error);
}

/* The query in flight was answered. */
static void answered(void *arg, const struct lease_sql_answer *a,
		     const char *sqlstate, const char *error)
{
	struct lease *l = arg;

	if (l->phase == PHASE_QUERYING)
		query_answered(l, a, sqlstate, error);
	else if (error)
		query_failed(l, sqlstate, error);
	else
		answer_phase(l, a);
	send_query(l);
}

static void answer_phase(struct lease *l, const struct lease_sql_answer *a)
{
	switch (l->phase) {
	case PHASE_SETUP:
		setup_done(l, a);
		return;
	case PHASE_IDENTITY:
		identity_done(l, a);
		return;
	case PHASE_LOCKING:
		lock_done(l, a);
		return;
	case PHASE_RANKING:
		rank_done(l, a);
		return;
	case PHASE_CLAIMING:
		claim_done(l, a);
		return;
	case PHASE_PINGING:
		ping_done(l, a);
		return;
	case PHASE_UNLOCKING:
		unlocked(l, true);
		return;
	case PHASE_UNCLAIMING:
		unlocked(l, false);
		return;
	case PHASE_CLOSED:
	case PHASE_CONNECTING:
	case PHASE_READY:
	case PHASE_HELD:
	case PHASE_QUERYING:
		return;
	}
}

/* Connected: learn about the session (and a lock name's key). */
static void conn_notified(void *arg)
{
	struct lease *l = arg;

	if (l->notify_fn)
		l->notify_fn(l->notify_arg);
}

void lease_on_notify(struct lease *l, void (*fn)(void *arg), void *arg)
{
	l->notify_fn = fn;
	l->notify_arg = arg;
}

static void conn_ready(void *arg)
{
	struct lease *l = arg;
	char sql[LEASE_SQL_SETUP_MAX];

	lease_sql_setup(sql, sizeof(sql), l->lock_name != NULL, l->o.retry_interval,
			l->o.statement_timeout);
	send_sql(l, PHASE_SETUP, sql, l->lock_name ? 1 : 0,
		 (const char *const *)&l->lock_name);
}

struct lease *lease_new(struct ev_loop *loop, const struct lease_options *o,
			lease_event_fn fn, void *arg, char *err, size_t errlen)
{
	static const struct lease_conn_handlers handlers = {
		conn_ready, answered, conn_failed, conn_notified
	};
	struct lease *l = calloc(1, sizeof(*l));

	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!lease_conn_init(&l->conn, loop, o->dsn, o->node_id, &handlers, l,
			     err, errlen)) {
		free(l);
		return NULL;
	}
	l->o = *o;
	l->conn.label = o->fence ? "fence session: " : "";
	l->lock_name = o->lock_name ? strdup(o->lock_name) : NULL;
	if (o->lock_name && !l->lock_name) {
		snprintf(err, errlen, "out of memory");
		lease_free(l);
		return NULL;
	}
	l->o.dsn = l->o.node_id = l->o.lock_name = NULL; /* the caller's */
	l->key = o->lock_key;
	l->queue_ahead = -1;
	l->fn = fn;
	l->arg = arg;
	return l;
}

void lease_free(struct lease *l)
{
	if (!l)
		return;
	query_forget(l);
	lease_conn_free(&l->conn);
	free(l->lock_name);
	free(l);
}

double lease_connect_timeout(const struct lease *l)
{
	return lease_conn_timeout(&l->conn);
}

void lease_connect(struct lease *l)
{
	closed(l);
	l->token = 0;
	l->phase = PHASE_CONNECTING;
	lease_conn_start(&l->conn);
}

/* The first queued try's pg_locks.waitstart says since when the session
 * waits; the tries after it, each ended by lock_timeout, say it in their
 * comment (wire.h WIRE_WAITING_FMT), until the grant or the session's
 * end. Wall clock time, for people. */
static void note_waiting(struct lease *l)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	lease_sql_since(l->waiting, sizeof(l->waiting), (int64_t)now.tv_sec, now.tv_nsec);
}

/* A standby's try that also counts the queue (DESIGN 15). */
static void send_try_ranked(struct lease *l)
{
	char key[24];
	const char *param = key;

	snprintf(key, sizeof(key), "%" PRId64, l->key);
	send_sql(l, PHASE_LOCKING, LEASE_SQL_TRY_QUEUE, 1, &param);
}

/* What the lock request about to go says of the queue: a standby's try
 * counts it (and ranks it when it has room, or when lease_rank_queue
 * asked) unless lease_plain_try asked for a plain one. True when it
 * does. */
static bool what_try_says(struct lease *l, bool queue)
{
	l->queue_ahead = -1;
	l->ranked = false;
	l->lock_slots = 0;
	l->try_ranked = !queue && !l->o.fence && l->o.queue_depth > 0 &&
			!l->plain_next;
	l->rank_always = l->try_ranked && l->rank_next;
	l->plain_next = l->rank_next = false;
	return l->try_ranked;
}

static void send_lock(struct lease *l, bool queue)
{
	char sql[LEASE_SQL_MAX];

	if (l->phase == PHASE_QUERYING && l->q.back_to == PHASE_READY) {
		l->want_lock = queue ? WANT_WAIT : WANT_TRY;
		return;
	}
	if (l->phase != PHASE_READY) {
		fail(l, FAULT_PROTOCOL, "lock requested on a connection that is "
		     "not ready");
		return;
	}
	l->waiting_in_queue = queue;
	if (what_try_says(l, queue)) {
		send_try_ranked(l);
		return;
	}
	l->claim_with_lock = queue && l->o.fence &&
		lease_sql_fence_wait_claim(sql, sizeof(sql), &l->srv,
					   l->o.server_lease, l->key);
	if (l->claim_with_lock)
		send_sql(l, PHASE_LOCKING, sql, 0, NULL);
	else
		send_lock_sql(l, PHASE_LOCKING, queue ? LEASE_SQL_WAIT : LEASE_SQL_TRY);
	if (queue && !l->waiting[0])
		note_waiting(l);
}

void lease_plain_try(struct lease *l)
{
	l->plain_next = true;
}

void lease_rank_queue(struct lease *l)
{
	l->rank_next = true;
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
	if ((l->phase == PHASE_CLAIMING && l->o.fence) ||
	    (l->phase == PHASE_QUERYING && l->q.back_to == PHASE_HELD))
		l->ping_wanted = true;
	if (l->phase != PHASE_HELD)
		return; /* the ping deadline will tell */
	if (l->o.list_nodes) {
		char key[24];
		const char *param = key;

		snprintf(key, sizeof(key), "%" PRId64, l->key);
		send_sql(l, PHASE_PINGING, LEASE_SQL_PING_NODES, 1, &param);
		return;
	}
	send_sql(l, PHASE_PINGING, LEASE_SQL_PING, 0, NULL);
}

/* Gives the lock back: then says whether the session stays. Returns false
 * when the phase leaves nothing to unlock: no lock, or a request whose
 * outcome is unknown (only closing the session releases what it may
 * hold). */
static bool unlock_when_held(struct lease *l, enum lease_then then)
{
	/* a claim, a ping, an unlock or a caller's statement in flight on the
	 * held lock: unlocked after its answer */
	bool answer_first = l->phase == PHASE_CLAIMING || l->phase == PHASE_PINGING ||
			    l->phase == PHASE_UNLOCKING ||
			    (l->phase == PHASE_QUERYING && l->q.back_to == PHASE_HELD);

	if (l->phase == PHASE_HELD) {
		l->then = then;
		send_unlock(l);
		return true;
	}
	if (!answer_first)
		return false; /* nothing held, or a request's outcome unknown */
	if (l->then != THEN_RELEASE) /* a release wins over an unlock */
		l->then = then;
	return true;
}

void lease_unlock(struct lease *l)
{
	if (l->phase == PHASE_UNCLAIMING)
		return; /* LEASE_RELEASED is on its way */
	if (l->phase == PHASE_READY ||
	    (l->phase == PHASE_QUERYING && l->q.back_to == PHASE_READY))
		emit(l, LEASE_RELEASED, FAULT_NONE, NULL);
	else if (!unlock_when_held(l, THEN_UNLOCK))
		released(l, FAULT_CONNECTION);
}

void lease_release(struct lease *l)
{
	if (l->phase == PHASE_UNCLAIMING)
		released(l, FAULT_NONE); /* unlocked already */
	else if (!unlock_when_held(l, THEN_RELEASE))
		released(l, FAULT_CONNECTION);
}

void lease_disconnect(struct lease *l)
{
	lease_conn_close(&l->conn);
	closed(l);
}

/* Sends the caller's waiting statement if the session is idle. */
static void send_query(struct lease *l)
{
	if (!l->q.waiting || (l->phase != PHASE_READY && l->phase != PHASE_HELD))
		return;
	l->q.waiting = false;
	l->q.in_flight = true;
	l->q.back_to = l->phase;
	send_sql(l, PHASE_QUERYING, l->q.sql, l->q.nparams,
		 (const char *const *)l->q.params);
}

bool lease_query(struct lease *l, const char *sql, int nparams,
		 const char *const *params, lease_query_fn fn, void *arg)
{
	if (l->q.waiting || l->q.in_flight || nparams > LEASE_QUERY_PARAMS ||
	    strlen(sql) >= LEASE_QUERY_MAX || l->phase == PHASE_CLOSED ||
	    connecting(l))
		return false;
	l->q.sql = strdup(sql);
	l->q.nparams = nparams;
	for (int i = 0; i < nparams; i++)
		l->q.params[i] = params[i] ? strdup(params[i]) : NULL;
	l->q.fn = fn;
	l->q.arg = arg;
	l->q.waiting = true;
	if (!l->q.sql) {
		query_forget(l);
		return false;
	}
	send_query(l);
	return true;
}

int lease_backend_pid(const struct lease *l)
{
	return l->phase == PHASE_CLOSED || connecting(l) ? 0 : l->srv.backend_pid;
}

uint64_t lease_system_id(const struct lease *l)
{
	return l->phase == PHASE_CLOSED || connecting(l) ? 0 : l->srv.system_id;
}

uint32_t lease_db_oid(const struct lease *l)
{
	return l->phase == PHASE_CLOSED || connecting(l) ? 0 : l->srv.db_oid;
}

const char *lease_ping_nodes(const struct lease *l)
{
	return l->o.list_nodes ? l->nodes : NULL;
}

int lease_queue_ahead(const struct lease *l)
{
	return l->queue_ahead;
}

bool lease_queue_ranked(const struct lease *l)
{
	return l->ranked;
}

int lease_lock_slots(const struct lease *l)
{
	return l->lock_slots;
}

int64_t lease_key(const struct lease *l)
{
	return l->key;
}

uint64_t lease_fencing_token(const struct lease *l)
{
	return l->token;
}
