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

/* The fence is wanted while the command lives, in every state, so that no
 * new leader's command starts before this one is gone; and by a leader
 * about to start one, once its settle wait (if any) is over. */
bool election_fence_wanted(const struct election *e, double now)
{
	if (!e->p.fence || e->killing)
		return false;
	return e->child_running ||
	       (e->state == ELECTION_LEADER && now >= e->fence_not_before);
}

/* The command is being stopped and the lock is gone, or may be: only the
 * fence keeps the next leader's command out. With the lock still held
 * (a graceful shutdown), the lock does. */
static bool stopping_unlocked(const struct election *e)
{
	return e->p.fence && e->child_running && !e->killing &&
	       ((e->state == ELECTION_DEMOTING && !e->handing_over) ||
		(e->state == ELECTION_SHUTTING_DOWN && !e->connected));
}

/* A node that holds, or held, the lock waits in the queue for the fence; one
 * whose command is being stopped without the lock only tries: held
 * elsewhere, another command may start any moment. */
void election_fence_take(struct election *e, struct election_output *out)
{
	if (e->fence != ELECTION_FENCE_READY)
		return; /* taken once the session is ready */
	e->fence = ELECTION_FENCE_TAKING;
	if (stopping_unlocked(e))
		out->actions |= ELECTION_DO_FENCE_TRY;
	else
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

/* Nothing keeps another leader's command out any more: SIGKILL now rather
 * than at the end of the grace period (DESIGN 3, the fence). */
static void kill_now(struct election *e, struct election_output *out,
		     const char *why)
{
	e->killing = true;
	election_say(out, LOG_LEVEL_WARNING, "%s: killing the command now, as another "
	    "leader's command may start", why);
	out->actions |= ELECTION_DO_KILL_CHILD;
}

/* The lock is gone (at now) while the command stops, and the fence may be
 * gone too. Both sessions lost together, or in failsafe: the database went
 * away, and nobody else can take the fence before it is back: take it again
 * the moment it is (a standby that saw the outage waits ELECTION_SETTLE for
 * that). The fence lost on its own earlier: another leader may hold it. */
void election_fence_stopping(struct election *e, struct election_output *out,
			     double now, bool outage)
{
	e->lock_lost_at = now;
	if (!stopping_unlocked(e) || e->fence == ELECTION_FENCE_HELD)
		return;
	if (!outage && now - e->fence_lost_at > ELECTION_SESSIONS_TOGETHER) {
		kill_now(e, out, "the fence was lost before the lock");
		return;
	}
	if (e->fence == ELECTION_FENCE_CLOSED)
		e->fence_retry_at = now;
	election_fence_take(e, out);
}

/* While the command stops without the lock, a lost fence session is
 * reopened every ELECTION_FENCE_RETRY_STOPPING, at once the first time;
 * a held fence lost on its own, the database still up, is a kill. */
static bool fence_failed_stopping(struct election *e, struct election_output *out,
				  double now, enum election_fence was)
{
	if (!stopping_unlocked(e))
		return false;
	if (was == ELECTION_FENCE_HELD &&
	    now - e->lock_lost_at > ELECTION_SESSIONS_TOGETHER) {
		kill_now(e, out, "fence session lost while the command is stopping");
		return true;
	}
	e->fence_retry_at = was == ELECTION_FENCE_OPENING
		? now + ELECTION_FENCE_RETRY_STOPPING : now;
	return true;
}

/* The fence session was lost: reopen it after a backoff; a leader takes it
 * again once it is back (DESIGN 3: losing the fence alone is no demotion). */
static void fence_failed(struct election *e, struct election_output *out,
			 double now, const struct election_event *ev)
{
	enum election_fence was = e->fence;
	double delay = e->fence_backoff;

	e->fence = ELECTION_FENCE_CLOSED;
	if (election_end_on_permanent(e, out, now, ev))
		return;
	if (was == ELECTION_FENCE_HELD || was == ELECTION_FENCE_TAKING)
		e->fence_lost_at = now;
	/* with the lock session down for a while (lost alone, another node
	 * may have led since), the fence session's end is the only sign that
	 * the database went away: its settle wait runs from now. Lost with
	 * the lock, the node led until the outage: no wait. */
	if (was != ELECTION_FENCE_OPENING &&
	    (!e->connected || e->state == ELECTION_CONNECTING) &&
	    now - e->lock_lost_at > ELECTION_SESSIONS_TOGETHER)
		election_saw_outage(e, now);
	if (fence_failed_stopping(e, out, now, was))
		return;
	e->fence_retry_at = now + delay;
	e->fence_backoff = fmin(delay * 2, fmax(e->p.retry_interval,
						 ELECTION_RECONNECT_MIN));
	/* it matters while a command runs, once an outage; a standby's lock
	 * session already says what is wrong with the database */
	election_say(out, e->child_running && !e->fence_outage_logged
		     ? LOG_LEVEL_WARNING : LOG_LEVEL_DEBUG,
		     "fence session: %s; reconnecting in %.1fs",
		     election_reason_of(ev, "connection lost"), delay);
	election_about(out, ev->fault);
	e->fence_outage_logged |= e->child_running;
}

static void fence_ready(struct election *e, struct election_output *out,
			double now)
{
	e->fence = ELECTION_FENCE_READY;
	e->fence_backoff = ELECTION_RECONNECT_MIN;
	if (e->fence_outage_logged)
		election_say(out, LOG_LEVEL_NOTICE, "fence session: connected again");
	e->fence_outage_logged = false;
	if (election_fence_wanted(e, now))
		election_fence_take(e, out);
}

static void fence_acquired(struct election *e, struct election_output *out,
			   double now)
{
	e->fence = ELECTION_FENCE_HELD;
	/* demoted before a command started, or the command gone, while
	 * waiting: give it back */
	if (!election_fence_wanted(e, now))
		election_fence_drop(e, out, now);
}

/* The queued wait ended (lock_timeout): the old leader's command is still
 * stopping; a leader waits on. A try while this node's command stops: the
 * fence is held elsewhere, so another command may start: kill. Anyone else
 * lets go. */
static void fence_busy(struct election *e, struct election_output *out)
{
	e->fence = ELECTION_FENCE_READY;
	if (e->state != ELECTION_LEADER && e->state != ELECTION_FAILSAFE) {
		if (stopping_unlocked(e))
			kill_now(e, out, "the fence is held by another session");
		/* a wait cancelled just as the fence was granted leaves it held:
		 * give back whatever this session may hold */
		e->fence = ELECTION_FENCE_DROPPING;
		out->actions |= ELECTION_DO_FENCE_DROP;
		return;
	}
	if (!e->fence_wait_logged && !e->child_running)
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
	fence_ready(e, out, now);
}

void election_on_fence(struct election *e, struct election_output *out,
	               double now, const struct election_event *ev)
{
	if (!e->p.fence || e->fence == ELECTION_FENCE_CLOSED)
		return; /* news from a session already closed */
	switch ((enum election_session_news)ev->news) {
	case ELECTION_SESSION_CONNECTED: fence_ready(e, out, now); return;
	case ELECTION_SESSION_FAILED: fence_failed(e, out, now, ev); return;
	case ELECTION_SESSION_ACQUIRED: fence_acquired(e, out, now); return;
	case ELECTION_SESSION_BUSY: fence_busy(e, out); return;
	case ELECTION_SESSION_RELEASED: fence_released(e, out, now, ev); return;
	case ELECTION_SESSION_PING_OK:
		return;
	}
}


/* A closed fence session is reopened only while the lock session is up or
 * the command runs, and not once the command is being killed. */
static bool fence_reopens(const struct election *e)
{
	return e->fence == ELECTION_FENCE_CLOSED && !e->killing &&
	       (e->state == ELECTION_STANDBY || e->state == ELECTION_LEADER ||
		e->state == ELECTION_FAILSAFE || e->state == ELECTION_DEMOTING ||
		(e->state == ELECTION_SHUTTING_DOWN && e->child_running));
}

/* After the state's deadlines, which may have just closed the session. */
void election_fence_tick(struct election *e, struct election_output *out,
			 double now)
{
	if (fence_reopens(e) && now >= e->fence_retry_at)
		election_fence_open(e, out);
	/* a new leader's settle wait is over */
	if (e->fence == ELECTION_FENCE_READY && e->state == ELECTION_LEADER &&
	    election_fence_wanted(e, now))
		election_fence_take(e, out);
}

double election_fence_wakeup(const struct election *e)
{
	return fence_reopens(e) ? e->fence_retry_at : INFINITY;
}
