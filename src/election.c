/* election.c: decides when to connect, ask for the lock, ping, run and stop. */
#include "election_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The one table of exit codes: what each permanent fault ends pgleader
 * with. A fault not listed is transient (0): retried, or a lost lease. */
static const int exit_for_fault[FAULT_COUNT] = {
	[FAULT_USAGE] = EX_USAGE,
	[FAULT_CONFIG] = EX_CONFIG,
	[FAULT_BAD_DSN] = EX_CONFIG,
	[FAULT_AUTH] = EX_UNAVAILABLE,
	[FAULT_POOLER] = EX_CONFIG,
	[FAULT_FORK] = EXIT_NOEXEC,
	[FAULT_INTERNAL] = EX_SOFTWARE,
	[FAULT_LEDGER] = EX_UNAVAILABLE,
	/* FAULT_ALREADY_RUN: the conflict code, a parameter (election_command.c) */
};

const double election_bucket_bounds[ELECTION_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	60, 600, 3600,
};

int election_exit_for(enum fault f)
{
	return f > FAULT_NONE && f < FAULT_COUNT ? exit_for_fault[f] : 0;
}

void election_init(struct election *e, const struct election_params *p)
{
	memset(e, 0, sizeof(*e));
	e->p = *p;
	e->state = ELECTION_INIT;
	e->request_deadline = INFINITY;
	e->next_attempt_at = INFINITY;
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	e->wait_deadline = INFINITY;
	e->next_ping_at = INFINITY;
	e->child_start_at = INFINITY;
	e->restart_backoff = ELECTION_RESTART_MIN;
	fence_init(&e->fence, p->retry_interval);
	e->lost_since = INFINITY;
	e->outage_began = INFINITY;
	election_failsafe_init(e);
	e->hold_until = -INFINITY;
	e->next_ctl_at = 0; /* a standby reads them once connected */
	e->snap.node_id = p->node_id;
	e->snap.priority = p->priority;
	e->snap.lock_name = p->lock_name;
	e->snap.lock_key = p->lock_key;
	e->snap.command_due = INFINITY;
}

#define ACTION(a) { ELECTION_DO_##a, #a }
const struct election_action_info election_actions[ELECTION_ACTION_COUNT] = {
	ACTION(DISCONNECT), ACTION(FENCE_CLOSE), ACTION(CONNECT), ACTION(FENCE_CONNECT),
	ACTION(TRY_LOCK), ACTION(WAIT_LOCK), ACTION(FENCE_TAKE), ACTION(FENCE_TRY),
	ACTION(PING), ACTION(FENCE_PING), ACTION(STOP_CHILD), ACTION(KILL_CHILD),
	ACTION(START_CHILD), ACTION(RELEASE), ACTION(FENCE_DROP),
	ACTION(FAILSAFE_CLAIM), ACTION(FAILSAFE_CHECK), ACTION(FAILSAFE_REGAINED),
	ACTION(CONTROLS_READ), ACTION(CONTROLS_DONE), ACTION(PRIORITY_ASK),
	ACTION(EXIT),
};
#undef ACTION

const char *election_state_name(enum election_state s)
{
	switch (s) {
	case ELECTION_INIT: return "init";
	case ELECTION_CONNECTING: return "connecting";
	case ELECTION_BACKOFF: return "backoff";
	case ELECTION_STANDBY: return "standby";
	case ELECTION_LEADER: return "leader";
	case ELECTION_FAILSAFE: return "failsafe";
	case ELECTION_DEMOTING: return "demoting";
	case ELECTION_SHUTTING_DOWN: return "shutting down";
	case ELECTION_RELEASING: return "releasing";
	case ELECTION_DONE: return "done";
	case ELECTION_STATE_COUNT: break;
	}
	return "?";
}

const char *election_outcome_label(enum election_outcome o)
{
	switch (o) {
	case ELECTION_OUTCOME_SUCCESS: return "success";
	case ELECTION_OUTCOME_FAILURE: return "failure";
	case ELECTION_OUTCOME_SIGNAL: return "signal";
	case ELECTION_OUTCOME_COUNT: break;
	}
	return "?";
}

/* ---- effects on the output ------------------------------------------- */

void election_say(struct election_output *out, enum log_level level,
		const char *fmt, ...)
{
	struct election_log *l;
	va_list ap;

	if (out->n_logs >= ELECTION_MAX_LOGS)
		return; /* no step says more than this; never block on it */
	l = &out->logs[out->n_logs++];
	l->level = level;
	l->fault = FAULT_NONE;
	va_start(ap, fmt);
	vsnprintf(l->text, sizeof(l->text), fmt, ap);
	va_end(ap);
}

/* The last line said is about this fault (a log field, a metric label). */
void election_about(struct election_output *out, enum fault fault)
{
	if (out->n_logs > 0)
		out->logs[out->n_logs - 1].fault = fault;
}

static bool is_stopping(enum election_state s)
{
	return s == ELECTION_SHUTTING_DOWN || s == ELECTION_RELEASING ||
	       s == ELECTION_DONE;
}

void election_set_state(struct election *e, struct election_output *out,
		      double now, enum election_state s)
{
	if (e->state == s)
		return;
	if (is_stopping(s) && !is_stopping(e->state))
		out->stopping = true;
	out->state_changed = true;
	e->state = s;
	e->snap.since = now;
	e->snap.since_wall = now + e->wall_offset;
}

void election_request(struct election *e, double now, double timeout)
{
	e->request_deadline = now + timeout;
}

void election_request_done(struct election *e)
{
	e->request_deadline = INFINITY;
}

static void observe(struct election_histogram *h, double seconds)
{
	size_t i = 0;

	while (i < ELECTION_BUCKETS && seconds > election_bucket_bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += seconds;
}

void election_disconnect(struct election *e, struct election_output *out)
{
	if (e->connected)
		out->actions |= ELECTION_DO_DISCONNECT;
	e->connected = false;
}

/* The lock session, up until now, was lost, or the fence session while
 * the lock session was down: the database may have gone away (see
 * settle_after_outage). The latest loss counts: a node that lost its lock
 * long ago and sees a restart later caps its settle wait from the
 * restart's. */
static void saw_outage(struct election *e, double now)
{
	e->lost_since = now;
}

/* ---- the fence's machine, as the election drives it ------------------- */

/* A closed fence session is reopened only while the lock session is up or
 * the command runs (and not once the command is being killed). */
static bool fence_reopens(const struct election *e)
{
	switch (e->state) {
	case ELECTION_STANDBY: case ELECTION_LEADER: case ELECTION_FAILSAFE:
	case ELECTION_DEMOTING:
		return true;
	case ELECTION_SHUTTING_DOWN:
		return e->child_running;
	case ELECTION_INIT: case ELECTION_CONNECTING: case ELECTION_BACKOFF:
	case ELECTION_RELEASING: case ELECTION_DONE: case ELECTION_STATE_COUNT:
		break;
	}
	return false;
}

static struct fence_inputs fence_inputs(const struct election *e)
{
	struct fence_inputs in = {
		.command = e->child_running,
		.killing = e->killing,
		.leader = e->state == ELECTION_LEADER,
		.leading = e->state == ELECTION_LEADER || e->state == ELECTION_FAILSAFE,
		.unlocked = (e->state == ELECTION_DEMOTING && !e->handing_over) ||
			    (e->state == ELECTION_SHUTTING_DOWN && !e->connected),
		.lock_down = !e->connected || e->state == ELECTION_CONNECTING,
		.reopens = fence_reopens(e),
	};

	return in;
}

/* Nothing keeps another leader's command out any more: SIGKILL now rather
 * than at the end of the grace period (DESIGN 3, the fence). */
static void fence_verdict(struct election *e, struct election_output *out,
			  double now, const struct fence_verdict *v)
{
	if (v->outage)
		saw_outage(e, now);
	if (!v->kill)
		return;
	e->killing = true;
	election_say(out, LOG_LEVEL_WARNING, "%s: killing the command now, as another "
	    "leader's command may start", v->kill);
	out->actions |= ELECTION_DO_KILL_CHILD;
}

void election_fence_take(struct election *e, struct election_output *out)
{
	struct fence_inputs in = fence_inputs(e);

	fence_take(&e->fence, &in, out);
}

/* The lock is gone while the command stops: only the fence keeps the next
 * leader's command out; outage: the database went away. */
void election_fence_stopping(struct election *e, struct election_output *out,
			     double now, bool outage)
{
	struct fence_inputs in = fence_inputs(e);
	struct fence_verdict v = { 0 };

	fence_stopping(&e->fence, &in, out, now, outage, &v);
	fence_verdict(e, out, now, &v);
}

static void on_fence(struct election *e, struct election_output *out,
		     double now, const struct election_event *ev)
{
	struct fence_inputs in = fence_inputs(e);
	struct fence_verdict v = { 0 };

	fence_news(&e->fence, &in, out, now, ev, &v);
	if (v.permanent)
		election_end_on_permanent(e, out, now, ev);
	else
		fence_verdict(e, out, now, &v);
}

/* ---- shared transitions ---------------------------------------------- */

void election_connect_now(struct election *e, struct election_output *out,
			double now)
{
	election_set_state(e, out, now, ELECTION_CONNECTING);
	e->connected = true;
	e->next_attempt_at = INFINITY;
	election_request(e, now, e->p.connect_timeout);
	out->actions |= ELECTION_DO_CONNECT;
}

void election_exit_now(struct election *e, struct election_output *out,
		       double now, int code)
{
	/* nothing asked for earlier in this step may follow the exit */
	out->actions &= ~(unsigned)(ELECTION_DO_CONNECT | ELECTION_DO_TRY_LOCK |
				    ELECTION_DO_WAIT_LOCK | ELECTION_DO_PING |
				    ELECTION_DO_FENCE_PING |
				    ELECTION_DO_RELEASE | ELECTION_DO_FENCE_CONNECT |
				    ELECTION_DO_FENCE_TAKE | ELECTION_DO_FENCE_DROP);
	election_disconnect(e, out);
	fence_close(&e->fence, out);
	election_request_done(e);
	e->exit_code = code;
	out->exit_code = code;
	out->actions |= ELECTION_DO_EXIT;
	election_set_state(e, out, now, ELECTION_DONE);
}

/* The connection is gone or useless: close it and try again after
 * election_reconnect_delay: fast while the database restarts, else a
 * backoff that doubles up to retry_interval, jittered either way.
 * A one-shot makes one attempt: not reaching the database is 69, never the
 * conflict code, which means "the database answered: another node has it". */
void election_reconnect_later(struct election *e, struct election_output *out,
			      double now, enum fault fault, const char *why)
{
	bool fast = election_restarting(e, now, fault);
	double delay;

	election_disconnect(e, out);
	election_request_done(e);
	if (e->p.nonblock) {
		election_say(out, LOG_LEVEL_ERROR, "%s; giving up (one attempt with --nonblock)",
		    why);
		election_exit_now(e, out, now, EX_UNAVAILABLE);
		return;
	}
	election_set_state(e, out, now, ELECTION_BACKOFF);
	delay = election_reconnect_delay(e, now, fault);
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

void election_ask_for_lock(struct election *e, struct election_output *out,
			   double now)
{
	if (election_controls_defer_lock(e, now))
		return;
	e->next_attempt_at = INFINITY;
	/* pg_try_advisory_lock first: it answers at once, and --nonblock and
	 * poll mode never do anything else. */
	if (!e->lock_tried || !e->p.wait_in_queue || e->p.nonblock) {
		out->actions |= ELECTION_DO_TRY_LOCK;
		e->lock_tried = true;
	} else {
		out->actions |= ELECTION_DO_WAIT_LOCK;
	}
	/* The server ends a queued wait after retry_interval (lock_timeout);
	 * past that plus ping_timeout without an answer the session is suspect. */
	election_request(e, now, e->p.retry_interval + e->p.ping_timeout);
}

/* Shutting down: the command first, then the lock, then exit. */
void election_finish(struct election *e, struct election_output *out, double now)
{
	e->child_start_at = INFINITY;
	e->next_attempt_at = INFINITY;
	e->next_ping_at = INFINITY;
	e->ping_pending = false;
	election_request_done(e);
	if (e->child_running) {
		election_set_state(e, out, now, ELECTION_SHUTTING_DOWN);
		out->actions |= ELECTION_DO_STOP_CHILD;
	} else if (e->connected) {
		election_set_state(e, out, now, ELECTION_RELEASING);
		out->actions |= ELECTION_DO_RELEASE;
		election_request(e, now, e->p.ping_timeout);
	} else {
		election_exit_now(e, out, now, e->exit_code);
	}
}

/* A permanent fault: one error line, then stop the command, release and
 * exit with the table's code. Returns false for a transient fault. */
bool election_end_on_permanent(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev)
{
	int code = election_exit_for(ev->session.fault);

	if (!code)
		return false;
	election_say(out, LOG_LEVEL_ERROR, "%s", ev->reason ? ev->reason : "fatal error");
	election_about(out, ev->session.fault);
	if (!is_stopping(e->state) || e->exit_code == 0)
		e->exit_code = code;
	if (e->child_running)
		election_finish(e, out, now);
	else
		election_exit_now(e, out, now, e->exit_code);
	return true;
}

const char *election_reason_of(const struct election_event *ev, const char *dflt)
{
	return ev->reason ? ev->reason : dflt;
}

/* The lease held until then: the server ends a silent leader's session
 * server_lease after its last ping reply; without a server lease, the
 * shortest one the configuration would accept (the pings' detection plus
 * grace_period): past it, a leader that had been awake would have known. */
static double lease_end(const struct election *e)
{
	const struct election_params *p = &e->p;

	return e->last_reply_at + (p->server_lease > 0 ? p->server_lease
		: p->ping_interval * p->ping_failures + p->ping_timeout +
		  p->grace_period);
}

/* The lock may be gone: stop the command but keep the connection, doing
 * nothing with it, until the command is gone. If the server still counts us
 * as the holder, nobody else gets the lock while the old command lives. */
void election_lose_lease(struct election *e, struct election_output *out,
			 double now, enum fault fault, const char *why)
{
	/* a leader frozen or stalled past its lease: the lock may have
	 * passed, so failsafe cannot keep this term (DESIGN 9) */
	bool lapsed = election_failsafe_keeps(e) && now > lease_end(e);

	e->ping_pending = false;
	e->next_ping_at = INFINITY;
	e->child_start_at = INFINITY;
	election_failsafe_no_check(e);
	election_request_done(e);
	if (election_failsafe_keeps(e) && !lapsed) {
		election_enter_failsafe(e, out, now, fault, why);
		return;
	}
	e->snap.counters.losses[fault]++;
	election_say(out, LOG_LEVEL_WARNING, "lost leader lease: %s%s", why,
	    lapsed ? " (no failsafe: the lease ran out, another node may have "
	    "led since)" : "");
	election_about(out, fault);
	if (e->child_running) {
		election_set_state(e, out, now, ELECTION_DEMOTING);
		out->actions |= ELECTION_DO_STOP_CHILD;
		election_fence_stopping(e, out, now, false);
	} else {
		fence_drop(&e->fence, out, now); /* taken or being taken, no command yet */
		election_disconnect(e, out);
		election_connect_now(e, out, now);
	}
}

/* A standby that saw the database go away (its session lost) and got the
 * lock within ELECTION_SETTLE of its connection coming back leaves the
 * fence to an old leader whose command may still be stopping: that one
 * takes it again as soon as it reconnects. Never past the outage's start
 * plus grace_period plus ELECTION_KILL_GONE: that command is dead by then
 * (SIGKILL sent at the end of the grace period, and its group gone). */
static double settle_after_outage(struct election *e, struct election_output *out,
				  double now)
{
	double not_before = -INFINITY;

	if (isfinite(e->outage_began))
		not_before = fmin(e->back_at + ELECTION_SETTLE,
				  e->outage_began + e->p.grace_period +
				  ELECTION_KILL_GONE);
	e->outage_began = INFINITY;
	if (now < not_before)
		election_say(out, LOG_LEVEL_INFO, "the database was away: taking the fence "
		    "in %.2fs, so that a previous leader still stopping its command "
		    "can take it first", not_before - now);
	return not_before;
}

void election_become_leader(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev)
{
	struct election_counters *c = &e->snap.counters;
	struct fence_inputs in;

	election_request_done(e);
	election_set_state(e, out, now, ELECTION_LEADER);
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	e->restart_backoff = ELECTION_RESTART_MIN;
	e->quick_failures = 0;
	e->wait_deadline = INFINITY;
	e->ping_pending = false;
	e->last_reply_at = now;
	e->next_ping_at = now + e->p.ping_interval;
	c->acquisitions++;
	observe(&c->lock_wait, now - e->standby_since);
	e->snap.term++;
	e->snap.fencing_token = ev->session.fencing_token;
	e->snap.lock_key = ev->session.lock_key;
	e->snap.leader_since_wall = now + e->wall_offset;
	election_say(out, LOG_LEVEL_INFO, "acquired leader lease (key %lld, fencing token %llu)",
	    (long long)ev->session.lock_key, (unsigned long long)ev->session.fencing_token);
	/* due now or after the delay; it starts once the fence is held */
	e->child_start_at = now + e->p.takeover_delay;
	in = fence_inputs(e);
	fence_lead(&e->fence, &in, out, now, settle_after_outage(e, out, now));
	/* after the fence's request: on the same session, its answer comes
	 * once the fence is held */
	election_controls_new_term(e, out, now);
	if (e->p.failsafe)
		election_ask_members(e, out, now);
}

static void shutdown_begins(struct election *e, struct election_output *out,
			    double now, const struct election_event *ev)
{
	election_say(out, LOG_LEVEL_INFO, "received %s, shutting down",
	    election_reason_of(ev, "signal"));
	e->exit_code = 0;
	election_finish(e, out, now);
}

/* SIGTERM before any lock or connect request was answered: the lock state
 * is unknown, so close the connection instead of unlocking. */
static void shutdown_unanswered(struct election *e, struct election_output *out,
				double now, const struct election_event *ev)
{
	election_say(out, LOG_LEVEL_INFO, "received %s, shutting down",
	    election_reason_of(ev, "signal"));
	election_exit_now(e, out, now, 0);
}

static void standby_shutdown(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev)
{
	if (isinf(e->request_deadline))
		shutdown_begins(e, out, now, ev);
	else
		shutdown_unanswered(e, out, now, ev);
}

static void kill_on_second_signal(struct election *e, struct election_output *out,
				  double now, const struct election_event *ev)
{
	(void)e;
	(void)now;
	election_say(out, LOG_LEVEL_NOTICE, "received %s again: killing the command now",
	    election_reason_of(ev, "signal"));
	out->actions |= ELECTION_DO_KILL_CHILD;
}

/* ---- events shared by several states ---------------------------------- */

static void start(struct election *e, struct election_output *out, double now,
		  const struct election_event *ev)
{
	(void)ev;
	if (e->p.wait_timeout >= 0)
		e->wait_deadline = now + e->p.wait_timeout;
	election_connect_now(e, out, now);
	/* Both sessions at once, so that a new leader takes the fence in one
	 * round trip, and a one-shot waits for one connection, not two in a
	 * row. Each makes one attempt before the database answered: the lock
	 * session's failure decides (69), and a fence session that failed is
	 * opened again only once the lock session connected (the fence is not
	 * reopened while connecting; see election_connected). */
	fence_open(&e->fence, out);
}

void election_connected(struct election *e, struct election_output *out,
		      double now, const struct election_event *ev)
{
	election_request_done(e);
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	e->lock_tried = false;
	e->waiting_logged = false;
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
	election_ask_for_lock(e, out, now);
	/* a one-shot's fence, or one closed meanwhile, beside the first lock
	 * request: ready by the time a lock is granted */
	fence_open(&e->fence, out);
}

/* No connection, or one that cannot be trusted: retry, or end for good. */
static void connection_failed(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev)
{
	e->connected = false; /* the lease closed it */
	if (e->state == ELECTION_CONNECTING) {
		e->snap.counters.connect_failures++;
	} else { /* a standby's */
		election_session_lost(e, now, ev->session.fault);
		saw_outage(e, now);
	}
	if (!election_end_on_permanent(e, out, now, ev))
		election_reconnect_later(e, out, now, ev->session.fault,
			election_reason_of(ev, "database connection failed"));
}

static void lock_busy(struct election *e, struct election_output *out, double now,
		      const struct election_event *ev)
{
	(void)ev;
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
	if (e->p.wait_in_queue)
		election_ask_for_lock(e, out, now);
	else
		e->next_attempt_at = now + e->p.retry_interval;
}

static void ping_ok(struct election *e, struct election_output *out, double now,
		    const struct election_event *ev)
{
	(void)out;
	(void)ev;
	/* An answer read once its ping had already failed ping_failures
	 * times (a frozen pgleader thawed, the reply waiting in its socket)
	 * is too late, whatever order the loop hands over the timer and the
	 * socket in: the deadlines, checked after this event, end the lease. */
	if (!e->ping_pending || election_ping_expired(e, now))
		return;
	e->ping_pending = false;
	observe(&e->snap.counters.ping_duration, now - e->ping_sent_at);
	e->last_reply_at = now;
	e->snap.last_ping_reply = now;
	e->snap.last_ping_reply_wall = now + e->wall_offset;
	e->next_ping_at = fmax(now, e->ping_sent_at + e->p.ping_interval);
}

static void leader_lost(struct election *e, struct election_output *out,
			double now, const struct election_event *ev)
{
	e->connected = false; /* the lease closed it */
	election_session_lost(e, now, ev->session.fault);
	/* no settle wait for the node that led: it held the lock and the
	 * fence until now, so no other command runs, and its own is reaped
	 * before it asks for the lock again */
	if (!election_end_on_permanent(e, out, now, ev))
		election_lose_lease(e, out, now, ev->session.fault,
			   election_reason_of(ev, "connection lost"));
}

/* While the command is being stopped, the connection may go too; only a
 * permanent fault changes what follows: its exit code, unless a signal
 * already asked for a clean exit with another code. */
static void stopping_lost(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev)
{
	e->connected = false; /* the lease closed it */
	e->handing_over = false; /* the lock went with the session */
	election_session_lost(e, now, ev->session.fault);
	saw_outage(e, now);
	if (!election_end_on_permanent(e, out, now, ev))
		election_fence_stopping(e, out, now, false);
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

/* ---- the states: what each does, one row each ------------------------- */

/*
 * One row per state: what START and SHUTDOWN do, what each piece of the
 * lock session's news does, what the command's end does, and what its
 * deadlines are. A NULL entry means the event is ignored in that state.
 * Fence, peers and controls news, and the command's other news, are
 * handled alike in every state (election_on_fence, _on_peers,
 * _on_controls, _on_command).
 */
static const struct state_ops states[ELECTION_STATE_COUNT] = {
	[ELECTION_INIT] = {
		.start = start, .shutdown = shutdown_begins,
	},
	[ELECTION_CONNECTING] = {
		.shutdown = shutdown_unanswered,
		.lock = { .connected = election_connecting_done,
			  .failed = connection_failed },
		.deadlines = election_connecting_tick,
		.wakeup = election_request_wakeup,
	},
	[ELECTION_BACKOFF] = {
		.shutdown = shutdown_begins,
		.lock = { .failed = backoff_lost },
		.deadlines = election_backoff_tick,
		.wakeup = election_backoff_wakeup,
	},
	[ELECTION_STANDBY] = {
		.shutdown = standby_shutdown,
		.lock = { .failed = connection_failed,
			  .acquired = election_standby_acquired,
			  .busy = lock_busy },
		.deadlines = election_standby_tick,
		.wakeup = election_request_wakeup,
	},
	[ELECTION_LEADER] = {
		.shutdown = shutdown_begins,
		.lock = { .failed = leader_lost, .ping_ok = ping_ok },
		.command_gone = election_leader_child_gone,
		.deadlines = election_leader_tick,
		.wakeup = election_leader_wakeup,
	},
	[ELECTION_FAILSAFE] = {
		.shutdown = shutdown_begins,
		.lock = { .connected = election_failsafe_connected,
			  .failed = election_failsafe_lost,
			  .acquired = election_failsafe_regained,
			  .busy = election_failsafe_busy },
		.command_gone = election_failsafe_child_gone,
		.deadlines = election_failsafe_tick,
		.wakeup = election_failsafe_wakeup,
	},
	[ELECTION_DEMOTING] = {
		.shutdown = shutdown_begins,
		.lock = { .failed = stopping_lost },
		.command_gone = election_demoted_child_gone,
	},
	[ELECTION_SHUTTING_DOWN] = {
		.shutdown = kill_on_second_signal,
		.lock = { .failed = stopping_lost },
		.command_gone = election_stopped_child_gone,
	},
	[ELECTION_RELEASING] = {
		.lock = { .failed = release_lost, .released = released },
		.deadlines = election_releasing_tick,
		.wakeup = election_releasing_wakeup,
	},
	[ELECTION_DONE] = { 0 }, /* nothing more happens */
};

static election_handler *lock_handler(const struct lock_ops *l,
				      enum election_session_news news)
{
	switch (news) {
	case ELECTION_SESSION_CONNECTED: return l->connected;
	case ELECTION_SESSION_FAILED: return l->failed;
	case ELECTION_SESSION_ACQUIRED: return l->acquired;
	case ELECTION_SESSION_BUSY: return l->busy;
	case ELECTION_SESSION_PING_OK: return l->ping_ok;
	case ELECTION_SESSION_RELEASED: return l->released;
	}
	return NULL;
}

static election_handler *handler_for(const struct state_ops *row,
				     const struct election_event *ev)
{
	switch (ev->type) {
	case ELECTION_START: return row->start;
	case ELECTION_SHUTDOWN: return row->shutdown;
	case ELECTION_LOCK:
		return lock_handler(&row->lock, ev->session.news);
	case ELECTION_COMMAND:
		return ev->command.news == ELECTION_COMMAND_GONE ? row->command_gone
			: election_on_command;
	case ELECTION_FENCE: return on_fence;
	case ELECTION_PEERS: return election_on_peers;
	case ELECTION_CONTROLS: return election_on_controls;
	case ELECTION_TICK: return NULL; /* the deadlines run after every event */
	}
	return NULL;
}

static void dispatch(struct election *e, const struct election_event *ev,
		     double now, struct election_output *out)
{
	election_handler *h;

	if (e->state >= ELECTION_DONE)
		return; /* nothing more happens, not even to the sessions' news */
	h = handler_for(&states[e->state], ev);
	if (h)
		h(e, out, now, ev);
}

/* Deadlines are checked on every event, not only on TICK: a loop that was
 * late by a second sees what it missed whatever woke it. The fence
 * session's reopening comes last: a deadline of the state may have just
 * closed it. */
static void check_deadlines(struct election *e, struct election_output *out,
			    double now)
{
	struct fence_inputs in;

	if (e->state < ELECTION_STATE_COUNT && states[e->state].deadlines)
		states[e->state].deadlines(e, out, now);
	election_controls_tick(e, out, now);
	in = fence_inputs(e);
	fence_tick(&e->fence, &in, out, now);
}

double election_next_wakeup(const struct election *e, double now)
{
	struct fence_inputs in = fence_inputs(e);
	double t = INFINITY;

	if (e->state < ELECTION_STATE_COUNT && states[e->state].wakeup)
		t = states[e->state].wakeup(e, now);
	t = fmin(t, fence_wakeup(&e->fence, &in, now));
	return fmin(t, election_controls_wakeup(e));
}

static void publish(struct election *e, double now)
{
	struct election_snapshot *s = &e->snap;

	s->state = e->state;
	s->now = now;
	s->now_wall = now + e->wall_offset;
	s->command_due = e->state == ELECTION_LEADER && !e->child_running
		? e->child_start_at : INFINITY;
	s->db_connected = e->connected && e->state != ELECTION_CONNECTING;
	s->fence_held = fence_held(&e->fence);
	s->failsafe_record_until = election_failsafe_record(e, now);
	if (e->state != ELECTION_LEADER)
		s->leader_since_wall = 0;
	s->hold_until = now < e->hold_until ? e->hold_until : 0;
	s->exit_code = e->exit_code;
}

void election_step(struct election *e, const struct election_event *ev,
		   double now, struct election_output *out)
{
	memset(out, 0, sizeof(*out));
	if (ev->wall > 0)
		e->wall_offset = ev->wall - now;
	e->jitter = ev->jitter >= 0 && ev->jitter < 1 ? ev->jitter : 0;
	dispatch(e, ev, now, out);
	check_deadlines(e, out, now);
	publish(e, now);
}

void election_abandon(struct election *e, struct election_output *out)
{
	double now = e->snap.now;

	memset(out, 0, sizeof(*out));
	if (e->state == ELECTION_DONE)
		return;
	election_say(out, LOG_LEVEL_ERROR, "internal error: the event loop stopped in state %s",
	    election_state_name(e->state));
	election_exit_now(e, out, now, election_exit_for(FAULT_INTERNAL));
	publish(e, now);
}

int election_exit_code(const struct election *e)
{
	return e->state == ELECTION_DONE ? e->exit_code
		: election_exit_for(FAULT_INTERNAL);
}

const struct election_snapshot *election_snapshot(const struct election *e)
{
	return &e->snap;
}

