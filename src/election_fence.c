/* election_fence.c: when to take and give back the fence, the second lock a
 * leader holds while its command lives (DESIGN 3). No I/O: actions only. */
#include <math.h>

#include "election_impl.h"

/* The fence session is opened at start, beside the lock session, so that a
 * new leader takes the fence in one round trip. */
void election_fence_open(struct election *e, struct election_output *out)
{
	if (!e->p.fence || e->fence != ELECTION_FENCE_CLOSED)
		return;
	e->fence = ELECTION_FENCE_OPENING;
	e->fence_retry_at = INFINITY;
	out->actions |= ELECTION_DO_FENCE_CONNECT;
}

void election_fence_close(struct election *e, struct election_output *out)
{
	if (e->fence != ELECTION_FENCE_CLOSED)
		out->actions |= ELECTION_DO_FENCE_CLOSE;
	e->fence = ELECTION_FENCE_CLOSED;
	e->fence_retry_at = INFINITY;
}

/* The command may start: the fence is held, or not used. */
bool election_fence_ok(const struct election *e)
{
	return !e->p.fence || e->fence == ELECTION_FENCE_HELD;
}

void election_fence_take(struct election *e, struct election_output *out)
{
	if (e->fence != ELECTION_FENCE_READY)
		return; /* taken once the session is ready */
	e->fence = ELECTION_FENCE_TAKING;
	out->actions |= ELECTION_DO_FENCE_TAKE;
}

/* The command's group is gone: let the next leader's command start. A
 * queued wait for the fence can only be ended by closing its session. */
void election_fence_drop(struct election *e, struct election_output *out,
		       double now)
{
	if (e->fence == ELECTION_FENCE_HELD) {
		e->fence = ELECTION_FENCE_DROPPING;
		out->actions |= ELECTION_DO_FENCE_DROP;
	} else if (e->fence == ELECTION_FENCE_TAKING) {
		election_fence_close(e, out);
		e->fence_retry_at = now;
	}
}

/* The fence session was lost: reopen it after a backoff; a leader takes it
 * again once it is back (DESIGN 3: losing the fence alone is no demotion). */
static void fence_failed(struct election *e, struct election_output *out,
			 double now, const struct election_event *ev)
{
	double delay = e->fence_backoff;

	e->fence = ELECTION_FENCE_CLOSED;
	if (election_end_on_permanent(e, out, now, ev))
		return;
	e->fence_retry_at = now + delay;
	e->fence_backoff = fmin(delay * 2, fmax(e->p.retry_interval,
						 ELECTION_RECONNECT_MIN));
	/* it matters while a command runs; a standby's lock session already
	 * says what is wrong with the database */
	election_say(out, e->child_running ? LOG_LEVEL_WARNING : LOG_LEVEL_DEBUG,
		     "fence session: %s; reconnecting in %.1fs",
		     election_reason_of(ev, "connection lost"), delay);
	election_about(out, ev->fault);
}

static void fence_ready(struct election *e, struct election_output *out)
{
	e->fence = ELECTION_FENCE_READY;
	e->fence_backoff = ELECTION_RECONNECT_MIN;
	if (e->state == ELECTION_LEADER)
		election_fence_take(e, out);
}

static void fence_acquired(struct election *e, struct election_output *out,
			   double now)
{
	e->fence = ELECTION_FENCE_HELD;
	/* demoted, or the command gone, while waiting: give it back */
	if (e->state != ELECTION_LEADER)
		election_fence_drop(e, out, now);
}

/* The queued wait ended (lock_timeout): the old leader's command is still
 * stopping. A leader waits on; anyone else lets go. */
static void fence_busy(struct election *e, struct election_output *out)
{
	e->fence = ELECTION_FENCE_READY;
	if (e->state != ELECTION_LEADER) {
		/* a wait cancelled just as the fence was granted leaves it held:
		 * give back whatever this session may hold */
		e->fence = ELECTION_FENCE_DROPPING;
		out->actions |= ELECTION_DO_FENCE_DROP;
		return;
	}
	if (!e->fence_wait_logged)
		election_say(out, LOG_LEVEL_NOTICE, "waiting for the fence: the previous "
		    "leader's command is still stopping");
	e->fence_wait_logged = true;
	election_fence_take(e, out);
}

static void fence_released(struct election *e, struct election_output *out,
			   double now, const struct election_event *ev)
{
	if (ev->fault != FAULT_NONE) {
		fence_failed(e, out, now, ev);
		return;
	}
	fence_ready(e, out);
}

void election_on_fence(struct election *e, const struct election_event *ev,
		     double now, struct election_output *out)
{
	if (!e->p.fence || e->fence == ELECTION_FENCE_CLOSED)
		return; /* news from a session already closed */
	switch ((enum election_session_news)ev->news) {
	case ELECTION_SESSION_CONNECTED: fence_ready(e, out); return;
	case ELECTION_SESSION_FAILED: fence_failed(e, out, now, ev); return;
	case ELECTION_SESSION_ACQUIRED: fence_acquired(e, out, now); return;
	case ELECTION_SESSION_BUSY: fence_busy(e, out); return;
	case ELECTION_SESSION_RELEASED: fence_released(e, out, now, ev); return;
	case ELECTION_SESSION_PING_OK:
		return;
	}
}

