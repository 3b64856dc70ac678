/* election_standby.c: the states without the command: CONNECTING, BACKOFF,
 * STANDBY and RELEASING, each one's handling (the lock session's news, its
 * deadlines, its wakeup) and the reconnect cadence they share; each
 * state's row at the end. */
#include "election_impl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* ---- the reconnect cadence ------------------------------------------- */

/* What a database restart, a switchover or a failover looks like to a
 * client: the session ends (FATAL or closed), then the server refuses,
 * says it is starting up or shutting down (57P03), or is still a read-only
 * replica. A silent host (a timeout) is not one: each try already took
 * connect_timeout. */
static bool restart_like(enum fault f)
{
	return f == FAULT_UNREACHABLE || f == FAULT_HOT_STANDBY ||
	       f == FAULT_TERMINATED || f == FAULT_CONNECTION;
}

/* A lock session that worked was lost: if the database seems to be
 * restarting, retry fast for a while, so that the command runs again
 * within a try or two of the server accepting writes. */
void election_session_lost(struct election *e, double now, enum fault f)
{
	if (!restart_like(f))
		return;
	e->restart_until = now + ELECTION_RESTART_WINDOW;
	e->restart_said = false;
}

static bool restarting(const struct election *e, double now, enum fault f)
{
	return restart_like(f) && now < e->restart_until;
}

/* The wait before the next connection attempt. Inside a restart window:
 * ELECTION_RECONNECT_FAST, jittered to [0.5, 1.5) of it. Otherwise full
 * jitter over a cap that doubles from ELECTION_RECONNECT_MIN up to
 * retry_interval: (0, cap], never below the fast step. The random fraction
 * comes with the event (0 in tests: the longest wait), so that a fleet's
 * nodes, and the daemons of one node, do not retry at the same instants. */
static double reconnect_delay(struct election *e, double now, enum fault f)
{
	double cap = e->reconnect_backoff;

	if (restarting(e, now, f))
		return ELECTION_RECONNECT_FAST * (1.5 - e->jitter);
	e->reconnect_backoff = fmin(cap * 2, fmax(e->p.retry_interval,
						   ELECTION_RECONNECT_MIN));
	return fmax(cap * (1 - e->jitter), ELECTION_RECONNECT_FAST);
}

/* The connection is gone or useless: close it and try again after
 * reconnect_delay: fast while the database restarts, else a
 * backoff that doubles up to retry_interval, jittered either way.
 * A one-shot makes one attempt: not reaching the database is 69, never the
 * conflict code, which means "the database answered: another node has it". */
static void reconnect_later(struct election *e, struct election_output *out,
			    double now, enum fault fault, const char *why)
{
	bool fast = restarting(e, now, fault);
	double delay;

	election_disconnect(e, out);
	election_request_done(e);
	if (e->p.nonblock) {
		election_say(out, LOG_LEVEL_ERROR, "%s; giving up (one attempt with --nonblock)",
		    why);
		election_exit_now(e, out, now, EXIT_UNAVAILABLE);
		return;
	}
	election_set_state(e, out, now, ELECTION_BACKOFF);
	delay = reconnect_delay(e, now, fault);
	e->next_attempt_at = now + delay;
	if (!fast)
		election_say(out, LOG_LEVEL_WARNING, "%s; retrying in %.1fs", why, delay);
	else if (!e->restart_said)
		election_say(out, LOG_LEVEL_WARNING, "%s; retrying every %.1fs for up to "
		    "%.0fs (the database may be restarting)", why,
		    ELECTION_RECONNECT_FAST, e->restart_until - now);
	else
		election_say(out, LOG_LEVEL_DEBUG, "%s; retrying in %.2fs", why, delay);
	e->restart_said |= fast;
}

/* A try counts the queue where its answer may queue this standby (wait
 * mode, not a one-shot): always, but a polling standby's only every
 * count_every-th time (ELECTION_COUNT_SLOTS), or every time while its
 * last ranking found it next in line (ELECTION_RANK_LIMIT): the count
 * walks the server's whole lock table, and a thousand polling standbys
 * each counting every retry_interval took a fifth of a core (DESIGN 15). */
static void try_lock(struct election *e, struct election_output *out)
{
	bool counts = e->p.wait_in_queue && !e->p.nonblock &&
		      (!e->polling || e->next_in_line ||
		       e->tries_uncounted + 1 >= e->count_every);

	out->actions |= ELECTION_DO_TRY_LOCK;
	if (!counts && e->p.wait_in_queue && !e->p.nonblock)
		out->actions |= ELECTION_DO_PLAIN_TRY; /* poll mode's are anyway */
	if (counts && e->polling && !e->ranked_once && e->count_every > 1)
		out->actions |= ELECTION_DO_RANK_QUEUE;
	e->counting = counts;
	e->tries_uncounted = counts ? 0 : e->tries_uncounted + 1;
}

/* How often a polling standby counts, from the lock table's size its last
 * count said: one try in ceil(slots / ELECTION_COUNT_SLOTS), within [1,
 * ELECTION_COUNT_EVERY_MAX]. */
static int count_every_of(int slots)
{
	int every = (int)((slots + (long long)ELECTION_COUNT_SLOTS - 1) /
			  ELECTION_COUNT_SLOTS);

	return every < 1 ? 1 : every > ELECTION_COUNT_EVERY_MAX
		? ELECTION_COUNT_EVERY_MAX : every;
}

static void ask_for_lock(struct election *e, struct election_output *out,
			 double now)
{
	if (election_controls_defer_lock(e, now))
		return;
	e->next_attempt_at = INFINITY;
	/* pg_try_advisory_lock unless the last one found room in the queue:
	 * it answers at once, says where this standby stands when it counts,
	 * and --nonblock and poll mode never do anything else. */
	e->counting = false;
	if (e->queue_next && e->p.wait_in_queue && !e->p.nonblock)
		out->actions |= ELECTION_DO_WAIT_LOCK;
	else
		try_lock(e, out);
	e->queue_next = false;
	/* The server ends a queued wait after retry_interval (lock_timeout);
	 * past that plus ping_timeout without an answer the session is suspect. */
	election_request(e, now, e->p.retry_interval + e->p.ping_timeout);
}

static void lock_session_up(struct election *e, struct election_output *out,
			    double now, const struct election_event *ev)
{
	election_request_done(e);
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	e->queue_next = false;
	e->waits_unchecked = 0;
	e->tries_uncounted = e->count_every; /* a new session's try counts */
	e->next_in_line = false; /* a new session ranks after the others */
	e->ranked_once = false;
	e->waiting_logged = e->waiting_logged && e->joining;
	e->joining = false;
	e->standby_since = now;
	e->snap.lock_key = ev->session.lock_key;
	e->outage_began = e->lost_since;
	e->lost_since = INFINITY;
	e->back_at = now;
	e->handing_over = false; /* a switchover's lock went with the old session */
	election_set_state(e, out, now, ELECTION_STANDBY);
	if (e->p.priority == 0 && !e->waiting_logged)
		election_say(out, LOG_LEVEL_INFO, "priority 0: a standby that never "
		    "asks for the leader lease");
	e->waiting_logged |= e->p.priority == 0;
	ask_for_lock(e, out, now);
	/* a one-shot's fence, or one closed meanwhile, beside the first lock
	 * request: ready by the time a lock is granted; not while polling */
	if (!e->polling)
		election_fence_open(&e->fence, out);
}

/* ---- the deadlines and wakeups ---------------------------------------- */

/* --wait-timeout passed: the conflict code only when the database answered
 * that another session holds the lock; never having reached it is 69. */
static bool wait_expired(struct election *e, struct election_output *out,
			 double now)
{
	if (now < e->wait_deadline)
		return false;
	if (e->busy_seen) {
		election_say(out, LOG_LEVEL_NOTICE,
		    "no leader lease after %.1fs of waiting; giving up",
		    e->p.wait_timeout);
		election_exit_now(e, out, now, e->p.conflict_exit_code);
	} else {
		election_say(out, LOG_LEVEL_ERROR,
		    "database not reached within %.1fs; giving up",
		    e->p.wait_timeout);
		election_exit_now(e, out, now, EXIT_UNAVAILABLE);
	}
	return true;
}

static void connecting_tick(struct election *e, struct election_output *out,
			    double now)
{
	if (wait_expired(e, out, now))
		return;
	if (now >= e->request_deadline) {
		e->snap.counters.connect_failures++;
		reconnect_later(e, out, now, FAULT_TIMEOUT,
					 "connection attempt timed out");
	}
}

static void backoff_tick(struct election *e, struct election_output *out,
			 double now)
{
	if (!wait_expired(e, out, now) && now >= e->next_attempt_at)
		election_connect_now(e, out, now);
}

static void polling_closes_fence(struct election *e, struct election_output *out);
static bool pooled_tick(struct election *e, struct election_output *out,
			double now);

static void standby_tick(struct election *e, struct election_output *out,
			 double now)
{
	if (wait_expired(e, out, now))
		return;
	polling_closes_fence(e, out);
	if (pooled_tick(e, out, now))
		return;
	if (now >= e->request_deadline) {
		/* Outcome unknown: a lock request may yet be granted, so this
		 * connection is never reused. */
		reconnect_later(e, out, now, FAULT_TIMEOUT,
					 "lock request got no answer in time");
		return;
	}
	if (isinf(e->request_deadline) && now >= e->next_attempt_at)
		ask_for_lock(e, out, now);
}

static void releasing_tick(struct election *e, struct election_output *out,
			   double now)
{
	/* the unlock got no answer: closing releases the lock too */
	if (now >= e->request_deadline)
		election_exit_now(e, out, now, e->exit_code);
}

/* CONNECTING and STANDBY: the request in flight, or the next attempt
 * (a pooled standby's: its poll in flight, or the next). */
static double request_wakeup(const struct election *e, double now)
{
	(void)now;
	if (e->pooled)
		return fmin(e->wait_deadline, e->poll_pending ? e->poll_deadline
			    : e->next_attempt_at);
	return fmin(e->wait_deadline, isinf(e->request_deadline)
		    ? e->next_attempt_at : e->request_deadline);
}

static double backoff_wakeup(const struct election *e, double now)
{
	(void)now;
	return fmin(e->wait_deadline, e->next_attempt_at);
}

static double releasing_wakeup(const struct election *e, double now)
{
	(void)now;
	return e->request_deadline;
}

/* ---- the events -------------------------------------------------------- */

/* SIGTERM before any lock or connect request was answered: the lock state
 * is unknown, so close the connection instead of unlocking. */
static void shutdown_unanswered(struct election *e, struct election_output *out,
				double now, const struct election_event *ev)
{
	election_say(out, LOG_LEVEL_INFO, "received %s, shutting down",
	    election_reason_of(ev, "signal"));
	election_exit_now(e, out, now, EXIT_OK);
}

static void standby_shutdown(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev)
{
	if (isinf(e->request_deadline))
		election_shutdown(e, out, now, ev);
	else
		shutdown_unanswered(e, out, now, ev);
}

/* No connection, or one that cannot be trusted: retry, or end for good. */
static void connection_failed(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev)
{
	e->connected = false; /* the lease closed it */
	e->joining = false;
	if (e->state == ELECTION_CONNECTING) {
		e->snap.counters.connect_failures++;
	} else { /* a standby's */
		election_session_lost(e, now, ev->session.fault);
		election_saw_outage(e, now);
	}
	if (!election_end_on_permanent(e, out, now, ev))
		reconnect_later(e, out, now, ev->session.fault,
			election_reason_of(ev, "database connection failed"));
}

/* DESIGN 15: a polling standby holds one session, the lock's: its fence
 * session closes (once no controls read is in flight on it), and its
 * controls are read over the lock session between tries. A standby that
 * queues, or whose lock is granted, opens it again: ready, or nearly, by
 * the time the fence is asked for. */
static void start_polling(struct election *e)
{
	/* the count's turn starts anywhere in its cycle (the jitter), so that
	 * standbys that start polling together do not count together */
	if (!e->polling)
		e->tries_uncounted = (int)(e->jitter * e->count_every);
	e->polling = true;
}

/* After every event (standby_tick): the fence session of a polling
 * standby closes once no controls read is in flight on it. */
static void polling_closes_fence(struct election *e, struct election_output *out)
{
	if (e->polling && !e->ctl_pending && !e->child_running)
		election_fence_close(&e->fence, out);
}

static void close_pooler(struct election *e, struct election_output *out)
{
	if (e->poll_open)
		out->actions |= ELECTION_DO_POLL_CLOSE;
	e->poll_open = false;
}

static void stop_polling(struct election *e, struct election_output *out)
{
	close_pooler(e, out); /* queued or granted: no more polls for now */
	if (!e->polling)
		return;
	e->polling = false;
	election_fence_open(&e->fence, out);
}

/* DESIGN 15: at most queue_depth standbys wait in the lock's queue, where
 * each wait past deadlock_timeout costs the server a deadlock check over the
 * whole queue; the others poll every retry_interval. A try that found fewer
 * than queue_depth standbys queued or ranked before this one (priority,
 * then arrival) queues it at once; a queued wait that ended (lock_timeout:
 * ahead unknown) waits again at once, or every ELECTION_QUEUE_RECHECK-th
 * time tries, which says whether it still belongs there; else, and after
 * a polling standby's try that did not count, the next try is a
 * retry_interval away. */
static void queue_or_poll(struct election *e, struct election_output *out,
			  double now, const struct election_session_event *s)
{
	int ahead = s->queue_ahead;

	if (e->counting && s->lock_slots > 0)
		e->count_every = count_every_of(s->lock_slots);
	if (e->counting && s->ranked) {
		e->next_in_line = ahead < ELECTION_RANK_LIMIT(e->p.queue_depth);
		e->ranked_once = true;
	}
	if (!e->p.wait_in_queue || ahead >= e->p.queue_depth ||
	    (e->polling && !e->counting)) {
		start_polling(e);
		e->next_attempt_at = now + e->p.retry_interval;
		/* poll_dsn: its lock session closes, and it polls through
		 * the pooler (not with a controls read in flight on it) */
		if (election_polls_pooled(e) && !e->ctl_pending)
			election_go_pooled(e, out, now, e->next_attempt_at);
		return;
	}
	stop_polling(e, out);
	if (ahead >= 0)
		e->waits_unchecked = 0;
	else
		e->waits_unchecked++;
	e->queue_next = ahead >= 0 || e->waits_unchecked % ELECTION_QUEUE_RECHECK;
	ask_for_lock(e, out, now);
}

static void lock_busy(struct election *e, struct election_output *out, double now,
		      const struct election_event *ev)
{
	election_request_done(e);
	e->busy_seen = true;
	if (e->p.nonblock) {
		election_say(out, LOG_LEVEL_NOTICE,
		    "leader lease is held by another node; giving up");
		election_exit_now(e, out, now, e->p.conflict_exit_code);
		return;
	}
	if (!e->waiting_logged) {
		election_say(out, LOG_LEVEL_INFO, "waiting for leader lease");
		e->waiting_logged = true;
		out->state_changed = true;
	}
	queue_or_poll(e, out, now, &ev->session);
}

static void released(struct election *e, struct election_output *out,
		     double now, const struct election_event *ev)
{
	e->connected = false;
	if (ev->session.fault == FAULT_NONE)
		election_say(out, LOG_LEVEL_INFO, "released leader lease");
	election_exit_now(e, out, now, e->exit_code);
}

/* The connection went while unlocking: closing it released the lock. */
static void release_lost(struct election *e, struct election_output *out,
			 double now, const struct election_event *ev)
{
	e->connected = false; /* the lease closed it */
	if (!election_end_on_permanent(e, out, now, ev))
		election_exit_now(e, out, now, e->exit_code);
}

/* Nothing is open while backing off; only a permanent fault counts. */
static void backoff_lost(struct election *e, struct election_output *out,
			 double now, const struct election_event *ev)
{
	election_end_on_permanent(e, out, now, ev);
}

/* Known apart: both oids known and not the same, or both system
 * identifiers. */
static bool other_db(const struct election_db *a, const struct election_db *b)
{
	return (a->oid && b->oid && a->oid != b->oid) ||
	       (a->system_id && b->system_id && a->system_id != b->system_id);
}

/* "database oid N of system S", the system left out where not known */
static const char *db_name(char *buf, size_t len, const struct election_db *d)
{
	int n = snprintf(buf, len, "database oid %" PRIu32, d->oid);

	if (d->system_id && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " of system %" PRIu64, d->system_id);
	return buf;
}

/* After the lock session or the pooler said which database it reached:
 * poll_dsn must reach the lock's, or its polls read the locks of a
 * database that nobody's lock is in. Told apart at the first comparison,
 * a mistake in the configuration: refused (78). Told apart after the two
 * were once alike, one was pointed elsewhere before the other (a
 * migration, a pooler repointed): an outage of the pooler, not a mistake.
 * Its connection closes, so that the next poll checks again, and the
 * standby tries the lock directly meanwhile, as when a poll fails. */
static enum election_db_check check_poll_db(struct election *e,
					   struct election_output *out, double now)
{
	char poll[64], lock[64];

	if (!e->lock_db.oid || !e->poll_db.oid)
		return ELECTION_DB_SAME; /* not both said yet */
	if (!other_db(&e->lock_db, &e->poll_db)) {
		e->poll_db_matched = true;
		e->poll_db_said = false;
		return ELECTION_DB_SAME;
	}
	db_name(poll, sizeof(poll), &e->poll_db);
	db_name(lock, sizeof(lock), &e->lock_db);
	if (!e->poll_db_matched) {
		election_say(out, LOG_LEVEL_ERROR, "poll_dsn reaches another database "
		    "than the lock's (%s; the lock's: %s): point it at a pooler in "
		    "front of the lock's database", poll, lock);
		election_about(out, FAULT_CONFIG);
		close_pooler(e, out);
		election_exit_now(e, out, now, election_exit_for(FAULT_CONFIG));
		return ELECTION_DB_REFUSED;
	}
	if (!e->poll_db_said)
		election_say(out, LOG_LEVEL_WARNING, "poll_dsn now reaches another "
		    "database than the lock's (%s; the lock's: %s); trying the lock "
		    "directly until it reaches the lock's again", poll, lock);
	e->poll_db_said = true;
	e->poll_db = (struct election_db){ 0, 0 };
	close_pooler(e, out);
	return ELECTION_DB_ELSEWHERE;
}

/* A member that holds a failsafe record takes no lock (DESIGN 9). */
static void connecting_done(struct election *e, struct election_output *out,
			    double now, const struct election_event *ev)
{
	e->lock_db = (struct election_db){ ev->session.system_id, ev->session.db_oid };
	if (check_poll_db(e, out, now) == ELECTION_DB_REFUSED)
		return;
	if (!election_failsafe_stays_out(e, out, now))
		lock_session_up(e, out, now, ev);
}

/* The lock is granted and its claim (the server-side lease, the token) is
 * on its way. The fence and the controls need not wait for it: asked for
 * now on the fence session, their round trips overlap the claim's. Not by
 * a member that stays out for a failsafe leader, nor with a settle wait
 * due: those wait for ACQUIRED, as before. Leaving STANDBY but for LEADER
 * gives the fence back (election_set_state). */
static void standby_granted(struct election *e, struct election_output *out,
			    double now, const struct election_event *ev)
{
	(void)ev;
	stop_polling(e, out);
	if (election_failsafe_record(e, now) > 0 || now < election_settle_until(e))
		return;
	e->granted_at = now;
	election_tell_fence(e, out, now, &(struct election_fence_event){
		.type = ELECTION_FENCE_EV_LEAD, .not_before = -INFINITY });
	election_controls_granted(e, out);
}

static void standby_acquired(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev)
{
	stop_polling(e, out);
	if (!election_failsafe_stays_out(e, out, now))
		election_become_leader(e, out, now, ev);
}

/* ---- poll_dsn (DESIGN 15): polling through a transaction pooler ---------- */

/* A standby that would poll does so through the pooler: it waits in the
 * queue otherwise (not a one-shot), and has the default priority (one of
 * higher priority keeps its direct session, where the queue's ranking
 * sees it and its switchover ask goes; priority 0 never asks). */
bool election_polls_pooled(const struct election *e)
{
	return e->p.poll_pooled && e->p.wait_in_queue && !e->p.nonblock &&
	       e->p.priority == 1;
}

/* The lock session closes (the fence's is closed as polling's is) and the
 * next poll through the pooler is at poll_at. */
void election_go_pooled(struct election *e, struct election_output *out,
			double now, double poll_at)
{
	election_disconnect(e, out);
	election_request_done(e);
	e->queue_next = false;
	election_set_state(e, out, now, ELECTION_STANDBY);
	start_polling(e);
	/* the count's turn starts anywhere in its cycle, as a direct one's */
	if (!e->pooled)
		e->polls_uncounted = (int)(e->jitter * ELECTION_POLL_COUNT_EVERY);
	e->pooled = true;
	e->poll_pending = false;
	e->poll_deadline = INFINITY;
	e->next_attempt_at = poll_at;
}

/* Out of STANDBY (election_set_state): no longer pooled. The pooler's
 * connection stays while the standby connects to try the lock (it may
 * poll again at once), but a poll in flight is forgotten with it. */
void election_leave_pooled(struct election *e, struct election_output *out)
{
	if (!e->pooled)
		return;
	if (e->poll_pending)
		close_pooler(e, out);
	e->pooled = false;
	e->poll_pending = false;
	e->poll_deadline = INFINITY;
	e->poll_ok = false;
	e->join_due = false;
}

/* The next poll is due, or the one in flight took too long: the pooler's
 * connect and a statement bounded by ping_timeout on the server. */
static bool pooled_tick(struct election *e, struct election_output *out,
			double now)
{
	if (!e->pooled)
		return false;
	if (e->poll_pending && now >= e->poll_deadline) {
		close_pooler(e, out);
		election_on_poll(e, out, now, &(struct election_event){
			.type = ELECTION_POLL, .poll = { .fault = FAULT_TIMEOUT },
			.reason = "poll_dsn: no answer in time" });
	} else if (!e->poll_pending && now >= e->next_attempt_at && e->join_due) {
		e->join_due = false;
		election_connect_now(e, out, now);
		e->joining = true;
	} else if (!e->poll_pending && now >= e->next_attempt_at) {
		out->actions |= ELECTION_DO_POLL;
		out->poll_counts = ++e->polls_uncounted >= ELECTION_POLL_COUNT_EVERY;
		if (out->poll_counts)
			e->polls_uncounted = 0;
		e->poll_pending = e->poll_open = true;
		e->poll_deadline = now + e->p.connect_timeout + e->p.ping_timeout;
		e->next_attempt_at = INFINITY;
	}
	return true;
}

/* A poll got no answer. A permanent fault ends pgleader (a session pooler
 * is FAULT_POOLER), as does a server in recovery on the first poll: that
 * poll_dsn reaches a hot standby, whose pg_locks say nothing of the
 * primary's lock. Anything else (the pooler down or restarting): the
 * standby tries the lock over a direct session, as without poll_dsn, and
 * polls again after that try: a leader lost meanwhile is followed within
 * retry_interval whatever the pooler does. */
static void poll_failed(struct election *e, struct election_output *out,
			double now, const struct election_event *ev)
{
	enum fault f = ev->poll.fault;
	int code = election_exit_for(f);

	e->poll_ok = false;
	e->poll_open = false; /* the effector closed it */
	if (!code && ev->poll.recovery && !e->poll_ok_once)
		code = election_exit_for(FAULT_CONFIG);
	if (code) {
		election_say(out, LOG_LEVEL_ERROR, "%s",
		    election_reason_of(ev, "poll_dsn refused"));
		election_about(out, f);
		election_exit_now(e, out, now, code);
		return;
	}
	if (!e->poll_failed_said)
		election_say(out, LOG_LEVEL_WARNING, "%s; trying the lock directly "
		    "meanwhile", election_reason_of(ev, "poll_dsn failed"));
	e->poll_failed_said = true;
	election_connect_now(e, out, now);
}

/* A poll's answer: the lock free, and the standby connects to try it at
 * once; its queue with room, and it connects within ELECTION_JOIN_SPREAD
 * (the try ranks it, and queues it or sends it back to polling); else the
 * next poll is a retry_interval away. */
void election_on_poll(struct election *e, struct election_output *out,
		      double now, const struct election_event *ev)
{
	if (!e->pooled || !e->poll_pending)
		return; /* forgotten (election_leave_pooled) */
	e->poll_pending = false;
	e->poll_deadline = INFINITY;
	if (!ev->poll.ok) {
		poll_failed(e, out, now, ev);
		return;
	}
	e->poll_db = (struct election_db){ ev->poll.system_id, ev->poll.db_oid };
	switch (check_poll_db(e, out, now)) {
	case ELECTION_DB_REFUSED:
		return;
	case ELECTION_DB_ELSEWHERE:
		e->poll_ok = false;
		election_connect_now(e, out, now);
		return;
	case ELECTION_DB_SAME:
		break;
	}
	e->poll_ok = e->poll_ok_once = true;
	if (e->poll_failed_said)
		election_say(out, LOG_LEVEL_INFO, "poll_dsn answers again");
	e->poll_failed_said = false;
	if (ev->poll.held && !e->waiting_logged) {
		election_say(out, LOG_LEVEL_INFO, "waiting for leader lease");
		e->waiting_logged = true;
		out->state_changed = true;
	}
	e->busy_seen |= ev->poll.held;
	e->join_due = ev->poll.queued >= 0 && ev->poll.queued < e->p.queue_depth;
	if (!ev->poll.held) {
		e->join_due = false;
		election_connect_now(e, out, now);
		e->joining = true;
	} else {
		e->next_attempt_at = now + (e->join_due ? e->jitter *
			fmin(e->p.retry_interval, ELECTION_JOIN_SPREAD) : e->p.retry_interval);
	}
}

/* ---- the rows (election.c's table) ------------------------------------- */

/* What CONNECTING and STANDBY mean for the fence (DESIGN 3). No lock
 * session is up yet while connecting. A standby whose lock was granted
 * leads as far as the fence is concerned: it takes the fence while its
 * claim is under way; a polling one has no fence session (DESIGN 15). */
static void connecting_fence(const struct election *e,
			     struct election_fence_inputs *in)
{
	(void)e;
	in->lock_down = true;
}

static void standby_fence(const struct election *e,
			  struct election_fence_inputs *in)
{
	in->leader = in->leading = isfinite(e->granted_at);
	in->reopens = !e->polling;
}

const struct state_ops connecting_state = {
	.shutdown = shutdown_unanswered,
	.lock = { .connected = connecting_done, .failed = connection_failed },
	.deadlines = connecting_tick,
	.wakeup = request_wakeup,
	.fence = connecting_fence,
	.failsafe = { .stays_out = true },
};

const struct state_ops backoff_state = {
	.shutdown = election_shutdown,
	.lock = { .failed = backoff_lost },
	.deadlines = backoff_tick,
	.wakeup = backoff_wakeup,
	.failsafe = { .backs_off = true },
};

const struct state_ops standby_state = {
	.shutdown = standby_shutdown,
	.lock = { .failed = connection_failed, .acquired = standby_acquired,
		  .busy = lock_busy, .granted = standby_granted },
	.deadlines = standby_tick,
	.wakeup = request_wakeup,
	.fence = standby_fence,
	.failsafe = { .stays_out = true },
	.controls = ELECTION_CONTROLS_AS_STANDBY,
};

const struct state_ops releasing_state = {
	.lock = { .failed = release_lost, .released = released },
	.deadlines = releasing_tick,
	.wakeup = releasing_wakeup,
	.failsafe = { .refuses = "this node holds the lock" },
};
