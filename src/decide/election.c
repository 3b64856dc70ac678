/* election.c: decides when to connect, ask for the lock, ping, run and stop. */
#include "election_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double election_bucket_bounds[ELECTION_BUCKETS] = {
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	60, 600, 3600,
};

int election_exit_for(enum fault f)
{
	return exit_code_of_fault(f);
}

void election_init(struct election *e, const struct election_params *p)
{
	memset(e, 0, sizeof(*e));
	e->p = *p;
	e->state = ELECTION_INIT;
	e->request_deadline = INFINITY;
	e->next_attempt_at = INFINITY;
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	e->count_every = 1; /* until a count says the lock table's size */
	e->wait_deadline = INFINITY;
	e->next_ping_at = INFINITY;
	e->child_start_at = INFINITY;
	e->restart_backoff = ELECTION_RESTART_MIN;
	election_fence_init(&e->fence, p->retry_interval);
	e->lost_since = INFINITY;
	e->outage_began = INFINITY;
	e->granted_at = INFINITY;
	election_failsafe_init(e);
	e->hold_until = -INFINITY;
	e->next_ctl_at = 0; /* a standby reads them once connected */
	e->poll_deadline = INFINITY;
	e->snap.node_id = p->node_id;
	e->snap.priority = p->priority;
	e->snap.lock_name = p->lock_name;
	e->snap.lock_key = p->lock_key;
	e->snap.command_due = INFINITY;
}

struct election *election_new(const struct election_params *p)
{
	struct election *e = malloc(sizeof(*e));

	if (e)
		election_init(e, p);
	return e;
}

void election_free(struct election *e)
{
	free(e);
}

#define ACTION(a) { ELECTION_DO_##a, #a }
const struct election_action_info election_actions[ELECTION_ACTION_COUNT] = {
	ACTION(DISCONNECT), ACTION(FENCE_CLOSE), ACTION(POLL_CLOSE), ACTION(CONNECT),
	ACTION(FENCE_CONNECT), ACTION(POLL),
	ACTION(PLAIN_TRY), ACTION(RANK_QUEUE), ACTION(TRY_LOCK), ACTION(WAIT_LOCK), ACTION(FENCE_TAKE), ACTION(FENCE_TRY),
	ACTION(PING), ACTION(FENCE_PING), ACTION(RUNNER_SESSION), ACTION(RUNNER_PAUSES),
	ACTION(STOP_CHILD), ACTION(DRAIN_CHILD), ACTION(KILL_CHILD),
	ACTION(START_CHILD), ACTION(RELEASE), ACTION(FENCE_DROP),
	ACTION(FAILSAFE_CLAIM), ACTION(FAILSAFE_CHECK), ACTION(FAILSAFE_REGAINED),
	ACTION(CONTROLS_READ), ACTION(CONTROLS_DONE), ACTION(PRIORITY_ASK),
	ACTION(LOCK_CONTROLS_READ), ACTION(LOCK_PRIORITY_ASK),
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
	if (s != ELECTION_STANDBY)
		election_leave_pooled(e, out);
	/* a standby whose lock was granted took the fence before its claim
	 * came back: anywhere but LEADER, it gives the fence back */
	if (isfinite(e->granted_at) && s != ELECTION_LEADER) {
		e->granted_at = INFINITY;
		election_fence_drop(&e->fence, out, now);
	}
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
void election_saw_outage(struct election *e, double now)
{
	e->lost_since = now;
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
				    ELECTION_DO_PLAIN_TRY | ELECTION_DO_RANK_QUEUE |
				    ELECTION_DO_WAIT_LOCK | ELECTION_DO_PING |
				    ELECTION_DO_FENCE_PING |
				    ELECTION_DO_RELEASE | ELECTION_DO_FENCE_CONNECT |
				    ELECTION_DO_FENCE_TAKE | ELECTION_DO_FENCE_DROP);
	election_disconnect(e, out);
	election_fence_close(&e->fence, out);
	election_request_done(e);
	e->exit_code = code;
	out->exit_code = code;
	out->actions |= ELECTION_DO_EXIT;
	election_set_state(e, out, now, ELECTION_DONE);
}

/* Shutting down: the command first, then the lock, then exit. */
void election_finish(struct election *e, struct election_output *out, double now)
{
	e->draining = false; /* a shutdown of its own will drains again */
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
	if (!is_stopping(e->state) || e->exit_code == EXIT_OK)
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

/* SIGTERM or SIGINT: the command first, then the lock, then exit. */
void election_shutdown(struct election *e, struct election_output *out,
		       double now, const struct election_event *ev)
{
	bool own = e->state == ELECTION_LEADER || e->draining;
	struct election_pings pings = election_pings_of(e);

	election_say(out, LOG_LEVEL_INFO, "received %s, shutting down",
	    election_reason_of(ev, "signal"));
	e->exit_code = EXIT_OK;
	election_finish(e, out, now);
	if (own)
		election_drain(e, out, now, &pings);
}

/* ---- INIT and DONE ----------------------------------------------------- */

static void start(struct election *e, struct election_output *out, double now,
		  const struct election_event *ev)
{
	(void)ev;
	if (e->p.wait_timeout >= 0)
		e->wait_deadline = now + e->p.wait_timeout;
	/* poll_dsn: a fleet that starts opens no direct session before its
	 * first poll said the lock is free or its queue has room (DESIGN 15) */
	if (election_polls_pooled(e)) {
		election_go_pooled(e, out, now, now);
		/* ... and that first poll counts the queue: the fleet fills it */
		e->polls_uncounted = ELECTION_POLL_COUNT_EVERY - 1;
		return;
	}
	election_connect_now(e, out, now);
	/* Both sessions at once, so that a new leader takes the fence in one
	 * round trip, and a one-shot waits for one connection, not two in a
	 * row. Each makes one attempt before the database answered: the lock
	 * session's failure decides (69), and a fence session that failed is
	 * opened again only once the lock session connected (the fence is not
	 * reopened while connecting; see lock_session_up). */
	election_fence_open(&e->fence, out);
}

/*
 * One row per state: what START and SHUTDOWN do, what each piece of the
 * lock session's news does, what the command's end does, and what its
 * deadlines are. A NULL entry means the event is ignored in that state.
 * Each row lives with its state's handlers: CONNECTING, BACKOFF, STANDBY
 * and RELEASING in election_standby.c, LEADER, DEMOTING and SHUTTING_DOWN in
 * election_command.c, FAILSAFE in election_failsafe.c. Fence, peers and
 * controls news, and the command's other news, go to their machines alike
 * in every state (fence_news, election_failsafe_news, election_on_controls,
 * election_on_command), which branch on no state of this machine: the row
 * says what its state means to each (fence, failsafe, controls).
 */
static const struct state_ops init_state = {
	.start = start, .shutdown = election_shutdown,
};

static const struct state_ops done_state = { /* nothing more happens */
	.failsafe = { .refuses = "this node is exiting" },
};

static const struct state_ops *const states[ELECTION_STATE_COUNT] = {
	[ELECTION_INIT] = &init_state,
	[ELECTION_CONNECTING] = &connecting_state,
	[ELECTION_BACKOFF] = &backoff_state,
	[ELECTION_STANDBY] = &standby_state,
	[ELECTION_LEADER] = &leader_state,
	[ELECTION_FAILSAFE] = &failsafe_state,
	[ELECTION_DEMOTING] = &demoting_state,
	[ELECTION_SHUTTING_DOWN] = &shutting_down_state,
	[ELECTION_RELEASING] = &releasing_state,
	[ELECTION_DONE] = &done_state,
};

/* ---- the fence's events (election_fence.c): what the state means for it,
 * what its session's news is to it, and what its verdict does ---- */

static struct election_fence_inputs fence_inputs(const struct election *e)
{
	struct election_fence_inputs in = {
		.command = e->child_running,
		.killing = e->killing,
		.lock_down = !e->connected,
	};

	if (e->state < ELECTION_STATE_COUNT && states[e->state]->fence)
		states[e->state]->fence(e, &in);
	return in;
}

/* Nothing keeps another leader's command out any more: SIGKILL now rather
 * than at the end of the grace period (DESIGN 3, the fence). */
struct election_fence_verdict election_tell_fence(struct election *e,
		struct election_output *out, double now,
		struct election_fence_event *ev)
{
	struct election_fence_verdict v;

	ev->in = fence_inputs(e);
	election_fence_step(&e->fence, ev, now, out, &v);
	if (v.outage)
		election_saw_outage(e, now);
	if (v.kill) {
		e->killing = true;
		election_say(out, LOG_LEVEL_WARNING, "%s: killing the command now, "
		    "as another leader's command may start", v.kill);
		out->actions |= ELECTION_DO_KILL_CHILD;
	}
	return v;
}

const struct election_failsafe_role *election_state_failsafe(const struct election *e)
{
	static const struct election_failsafe_role none = { 0 };

	return e->state < ELECTION_STATE_COUNT ? &states[e->state]->failsafe : &none;
}

enum election_controls_role election_state_controls(const struct election *e)
{
	return e->state < ELECTION_STATE_COUNT ? states[e->state]->controls
		: ELECTION_CONTROLS_AS_NONE;
}

/* The fence session's news, as the fence's own events; PING_OK and
 * GRANTED are the lock's only. */
static bool fence_event_of(const struct election_event *ev,
			   enum election_fence_event_type *type)
{
	switch (ev->session.news) {
	case ELECTION_SESSION_CONNECTED: *type = ELECTION_FENCE_EV_READY; return true;
	case ELECTION_SESSION_FAILED: *type = ELECTION_FENCE_EV_FAILED; return true;
	case ELECTION_SESSION_ACQUIRED: *type = ELECTION_FENCE_EV_ACQUIRED; return true;
	case ELECTION_SESSION_BUSY: *type = ELECTION_FENCE_EV_BUSY; return true;
	case ELECTION_SESSION_RELEASED:
		*type = ev->session.fault != FAULT_NONE ? ELECTION_FENCE_EV_FAILED
			: ELECTION_FENCE_EV_READY;
		return true;
	case ELECTION_SESSION_PING_OK: case ELECTION_SESSION_GRANTED:
		break;
	}
	return false;
}

static void fence_news(struct election *e, struct election_output *out,
		       double now, const struct election_event *ev)
{
	struct election_fence_event fev = {
		.fault = ev->session.fault, .reason = ev->reason,
	};

	if (fence_event_of(ev, &fev.type) &&
	    election_tell_fence(e, out, now, &fev).permanent)
		election_end_on_permanent(e, out, now, ev);
}

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
	case ELECTION_SESSION_GRANTED: return l->granted;
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
	case ELECTION_FENCE: return fence_news;
	case ELECTION_PEERS: return election_failsafe_news;
	case ELECTION_CONTROLS: return election_on_controls;
	case ELECTION_POLL: return election_on_poll;
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
	h = handler_for(states[e->state], ev);
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
	if (e->state < ELECTION_STATE_COUNT && states[e->state]->deadlines)
		states[e->state]->deadlines(e, out, now);
	election_controls_tick(e, out, now);
	election_tell_fence(e, out, now, &(struct election_fence_event){
		.type = ELECTION_FENCE_EV_TICK });
}

double election_next_wakeup(const struct election *e, double now)
{
	struct election_fence_inputs in = fence_inputs(e);
	double t = INFINITY;

	if (e->state < ELECTION_STATE_COUNT && states[e->state]->wakeup)
		t = states[e->state]->wakeup(e, now);
	t = fmin(t, election_fence_wakeup(&e->fence, &in, now));
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
	/* a standby that polls through the pooler reaches the database too */
	s->db_connected = (e->connected || (e->pooled && e->poll_ok)) &&
			  e->state != ELECTION_CONNECTING;
	s->fence_held = election_fence_held(&e->fence);
	s->failsafe_record_until = election_failsafe_record(e, now);
	if (e->state != ELECTION_LEADER)
		s->leader_since_wall = 0;
	s->hold_until = now < e->hold_until ? e->hold_until : 0;
	s->exit_code = e->exit_code;
}

/* The action that closes the session an event is news of, or 0: the lock
 * session's news but its end (FAILED, RELEASED), the fence session's alike. */
static unsigned session_close_of(const struct election_event *ev)
{
	if (ev->type != ELECTION_LOCK && ev->type != ELECTION_FENCE)
		return 0;
	if (ev->session.news == ELECTION_SESSION_FAILED ||
	    ev->session.news == ELECTION_SESSION_RELEASED)
		return 0; /* the session's end: it agrees with the deadline's, and says why */
	return ev->type == ELECTION_LOCK ? ELECTION_DO_DISCONNECT
		: ELECTION_DO_FENCE_CLOSE;
}

/* A step decides the event, then the deadlines. Once they ran out, as after
 * a freeze (SIGSTOP), they may end the very session the event is news of,
 * whatever the news did: it then comes from a session this step gives up,
 * and what it asked for would be asked on the session just closed (sim
 * finding 12: a FENCE BUSY a leader retakes, a LOCK GRANTED a standby
 * follows, beside "lost leader lease" or "lock request got no answer in
 * time"). Such news is stale: the step is decided again from the state
 * before it, by the deadlines alone. News the deadlines then leave be (an
 * answer that ends the request they waited for) is heard as before. */
static void decide(struct election *e, const struct election_event *ev,
		   double now, struct election_output *out)
{
	unsigned closes = session_close_of(ev);
	struct election before;
	unsigned heard;

	if (closes)
		before = *e;
	dispatch(e, ev, now, out);
	heard = out->actions;
	check_deadlines(e, out, now);
	if (!closes || (heard & closes) || !(out->actions & closes))
		return;
	*e = before;
	memset(out, 0, sizeof(*out));
	check_deadlines(e, out, now);
}

void election_step(struct election *e, const struct election_event *ev,
		   double now, struct election_output *out)
{
	memset(out, 0, sizeof(*out));
	if (ev->wall > 0)
		e->wall_offset = ev->wall - now;
	e->jitter = ev->jitter >= 0 && ev->jitter < 1 ? ev->jitter : 0;
	decide(e, ev, now, out);
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

