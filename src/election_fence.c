/* election_fence.c: the fence's machine: when to take and give back the
 * second lock a leader holds while its command lives (DESIGN 3). The
 * machine (fm_* and its helpers) owns struct election_fence_machine; the election's
 * side, at the end, tells it what it needs to know (struct fm_inputs)
 * and acts on what it hears back (struct fm_verdict); the rest of the
 * election sees only the fence_* functions of election_impl.h. No I/O:
 * actions only. */
#include <math.h>

#include "election_impl.h"

/* What the election tells the fence, at each call. */
struct fm_inputs {
	bool command;   /* the command lives (started, not yet gone) */
	bool killing;   /* SIGKILL sent: the fence no longer matters */
	bool leader;    /* LEADER (or its lock granted, the claim under way):
			 * the command is due once the fence is held */
	bool leading;   /* the same, or FAILSAFE: a busy fence is waited for */
	bool unlocked;  /* the command is being stopped without the lock */
	bool lock_down; /* no lock session is up */
	bool reopens;   /* a closed fence session is reopened in this state */
};

/* What the fence tells the election back, beside actions and lines. */
struct fm_verdict {
	const char *kill; /* kill the command now, and why; NULL: no */
	bool outage;      /* the database seems to have gone away */
	bool permanent;   /* its session ended with a permanent fault */
};

void election_fence_init(struct election_fence_machine *f, double retry_interval)
{
	f->state = ELECTION_FENCE_CLOSED;
	f->retry_at = INFINITY;
	f->backoff = ELECTION_RECONNECT_MIN;
	f->backoff_cap = fmax(retry_interval, ELECTION_RECONNECT_MIN);
	f->wait_logged = false;
	f->outage_logged = false;
	f->not_before = -INFINITY;
	f->lost_at = -INFINITY;
	f->lock_lost_at = -INFINITY;
}

/* The fence session is opened at start, beside the lock session, so that a
 * new leader takes the fence in one round trip. */
void election_fence_open(struct election_fence_machine *f, struct election_output *out)
{
	if (f->state != ELECTION_FENCE_CLOSED)
		return;
	f->state = ELECTION_FENCE_OPENING;
	f->retry_at = INFINITY;
	out->actions |= ELECTION_DO_FENCE_CONNECT;
}

void election_fence_close(struct election_fence_machine *f, struct election_output *out)
{
	if (f->state != ELECTION_FENCE_CLOSED)
		out->actions |= ELECTION_DO_FENCE_CLOSE;
	f->state = ELECTION_FENCE_CLOSED;
	f->retry_at = INFINITY;
}

/* The command may start: the fence is held. */
bool election_fence_ok(const struct election_fence_machine *f)
{
	return f->state == ELECTION_FENCE_HELD;
}

bool election_fence_held(const struct election_fence_machine *f)
{
	return f->state == ELECTION_FENCE_HELD;
}

/* The fence is wanted while the command lives, in every state, so that no
 * new leader's command starts before this one is gone; and by a leader
 * about to start one, once its settle wait (if any) is over. */
static bool wanted(const struct election_fence_machine *f, const struct fm_inputs *in,
		   double now)
{
	if (in->killing)
		return false;
	return in->command || (in->leader && now >= f->not_before);
}

/* The command is being stopped and the lock is gone, or may be: only the
 * fence keeps the next leader's command out. With the lock still held
 * (a graceful shutdown), the lock does. */
static bool stopping_unlocked(const struct fm_inputs *in)
{
	return in->command && !in->killing && in->unlocked;
}

/* A node that holds, or held, the lock waits in the queue for the fence; one
 * whose command is being stopped without the lock only tries: held
 * elsewhere, another command may start any moment. */
static void fm_take(struct election_fence_machine *f, const struct fm_inputs *in,
		    struct election_output *out)
{
	if (f->state != ELECTION_FENCE_READY)
		return; /* taken once the session is ready */
	f->state = ELECTION_FENCE_TAKING;
	if (stopping_unlocked(in))
		out->actions |= ELECTION_DO_FENCE_TRY;
	else
		out->actions |= ELECTION_DO_FENCE_TAKE;
}

/* The command's group is gone: let the next leader's command start. A
 * queued wait for the fence can only be ended by closing its session. */
void election_fence_drop(struct election_fence_machine *f, struct election_output *out, double now)
{
	if (f->state == ELECTION_FENCE_HELD) {
		f->state = ELECTION_FENCE_DROPPING;
		out->actions |= ELECTION_DO_FENCE_DROP;
	} else if (f->state == ELECTION_FENCE_TAKING) {
		election_fence_close(f, out);
		f->retry_at = now;
	}
}

/* A new term: take the fence, from not_before on (a settle wait). */
static void fm_lead(struct election_fence_machine *f, const struct fm_inputs *in,
		    struct election_output *out, double now, double not_before)
{
	f->wait_logged = false;
	f->not_before = not_before;
	if (wanted(f, in, now))
		fm_take(f, in, out);
}

/* The settle wait is for an old leader whose command still stops; the
 * failsafe members, each asked after this node took the lock, answered
 * that none runs the command (or refused the connection): nobody is left
 * to take the fence first, so it is taken now. */
static void fm_settled(struct election_fence_machine *f, const struct fm_inputs *in,
		       struct election_output *out, double now)
{
	if (now >= f->not_before)
		return;
	election_say(out, LOG_LEVEL_INFO, "every failsafe member runs nothing: taking "
	    "the fence now, %.2fs before the settle wait would end", f->not_before - now);
	f->not_before = now;
	if (wanted(f, in, now))
		fm_take(f, in, out);
}

/* The lock is gone (at now) while the command stops, and the fence may be
 * gone too. Both sessions lost together, or in failsafe: the database went
 * away, and nobody else can take the fence before it is back: take it again
 * the moment it is (a standby that saw the outage waits ELECTION_SETTLE for
 * that). The fence lost on its own earlier: another leader may hold it. */
static void fm_stopping(struct election_fence_machine *f, const struct fm_inputs *in,
			struct election_output *out, double now, bool outage,
			struct fm_verdict *v)
{
	f->lock_lost_at = now;
	if (!stopping_unlocked(in) || f->state == ELECTION_FENCE_HELD)
		return;
	if (!outage && now - f->lost_at > ELECTION_SESSIONS_TOGETHER) {
		v->kill = "the fence was lost before the lock";
		return;
	}
	if (f->state == ELECTION_FENCE_CLOSED)
		f->retry_at = now;
	fm_take(f, in, out);
}

/* While the command stops without the lock, a lost fence session is
 * reopened every ELECTION_FENCE_RETRY_STOPPING, at once the first time;
 * a held fence lost on its own, the database still up, is a kill. */
static bool failed_stopping(struct election_fence_machine *f, const struct fm_inputs *in,
			    double now, enum election_fence was,
			    struct fm_verdict *v)
{
	if (!stopping_unlocked(in))
		return false;
	if (was == ELECTION_FENCE_HELD &&
	    now - f->lock_lost_at > ELECTION_SESSIONS_TOGETHER) {
		v->kill = "fence session lost while the command is stopping";
		return true;
	}
	f->retry_at = was == ELECTION_FENCE_OPENING
		? now + ELECTION_FENCE_RETRY_STOPPING : now;
	return true;
}

/* The fence session was lost: reopen it after a backoff; a leader takes it
 * again once it is back (DESIGN 3: losing the fence alone is no demotion). */
static void failed(struct election_fence_machine *f, const struct fm_inputs *in,
		   struct election_output *out, double now,
		   const struct election_event *ev, struct fm_verdict *v)
{
	enum election_fence was = f->state;
	double delay = f->backoff;

	f->state = ELECTION_FENCE_CLOSED;
	if (election_exit_for(ev->session.fault)) {
		v->permanent = true;
		return;
	}
	if (was == ELECTION_FENCE_HELD || was == ELECTION_FENCE_TAKING)
		f->lost_at = now;
	/* with the lock session down for a while (lost alone, another node
	 * may have led since), the fence session's end is the only sign that
	 * the database went away: its settle wait runs from now. Lost with
	 * the lock, the node led until the outage: no wait. */
	v->outage = was != ELECTION_FENCE_OPENING && in->lock_down &&
		    now - f->lock_lost_at > ELECTION_SESSIONS_TOGETHER;
	if (failed_stopping(f, in, now, was, v))
		return;
	f->retry_at = now + delay;
	f->backoff = fmin(delay * 2, f->backoff_cap);
	/* it matters while a command runs, once an outage; a standby's lock
	 * session already says what is wrong with the database */
	election_say(out, in->command && !f->outage_logged
		     ? LOG_LEVEL_WARNING : LOG_LEVEL_DEBUG,
		     "fence session: %s; reconnecting in %.1fs",
		     election_reason_of(ev, "connection lost"), delay);
	election_about(out, ev->session.fault);
	f->outage_logged |= in->command;
}

static void ready(struct election_fence_machine *f, const struct fm_inputs *in,
		  struct election_output *out, double now)
{
	f->state = ELECTION_FENCE_READY;
	f->backoff = ELECTION_RECONNECT_MIN;
	if (f->outage_logged)
		election_say(out, LOG_LEVEL_NOTICE, "fence session: connected again");
	f->outage_logged = false;
	if (wanted(f, in, now))
		fm_take(f, in, out);
}

static void acquired(struct election_fence_machine *f, const struct fm_inputs *in,
		     struct election_output *out, double now)
{
	f->state = ELECTION_FENCE_HELD;
	/* demoted before a command started, or the command gone, while
	 * waiting: give it back */
	if (!wanted(f, in, now))
		election_fence_drop(f, out, now);
}

/* The queued wait ended (lock_timeout): the old leader's command is still
 * stopping; a leader waits on. A try while this node's command stops: the
 * fence is held elsewhere, so another command may start: kill. Anyone else
 * lets go. */
static void busy(struct election_fence_machine *f, const struct fm_inputs *in,
		 struct election_output *out, struct fm_verdict *v)
{
	f->state = ELECTION_FENCE_READY;
	if (!in->leading) {
		if (stopping_unlocked(in))
			v->kill = "the fence is held by another session";
		/* a wait cancelled just as the fence was granted leaves it held:
		 * give back whatever this session may hold */
		f->state = ELECTION_FENCE_DROPPING;
		out->actions |= ELECTION_DO_FENCE_DROP;
		return;
	}
	if (!f->wait_logged && !in->command)
		election_say(out, LOG_LEVEL_NOTICE, "waiting for the fence: the previous "
		    "leader's command is still stopping");
	f->wait_logged = true;
	fm_take(f, in, out);
}

/* The fence session's news. */
static void fm_news(struct election_fence_machine *f, const struct fm_inputs *in,
		    struct election_output *out, double now,
		    const struct election_event *ev, struct fm_verdict *v)
{
	if (f->state == ELECTION_FENCE_CLOSED)
		return; /* news from a session already closed */
	switch (ev->session.news) {
	case ELECTION_SESSION_CONNECTED: ready(f, in, out, now); return;
	case ELECTION_SESSION_FAILED: failed(f, in, out, now, ev, v); return;
	case ELECTION_SESSION_ACQUIRED: acquired(f, in, out, now); return;
	case ELECTION_SESSION_BUSY: busy(f, in, out, v); return;
	case ELECTION_SESSION_RELEASED:
		if (ev->session.fault != FAULT_NONE)
			failed(f, in, out, now, ev, v);
		else
			ready(f, in, out, now);
		return;
	case ELECTION_SESSION_PING_OK: case ELECTION_SESSION_GRANTED:
		return;
	}
}

/* After the state's deadlines, which may have just closed the session: a
 * closed session is reopened when due, and a new leader's settle wait
 * ends. */
static void fm_tick(struct election_fence_machine *f, const struct fm_inputs *in,
		    struct election_output *out, double now)
{
	if (f->state == ELECTION_FENCE_CLOSED && in->reopens && !in->killing &&
	    now >= f->retry_at)
		election_fence_open(f, out);
	if (f->state == ELECTION_FENCE_READY && in->leader && wanted(f, in, now))
		fm_take(f, in, out);
}

static double fm_wakeup(const struct election_fence_machine *f, const struct fm_inputs *in,
			double now)
{
	if (f->state == ELECTION_FENCE_CLOSED && in->reopens && !in->killing)
		return f->retry_at;
	if (f->state == ELECTION_FENCE_READY && in->leader && now < f->not_before)
		return f->not_before;
	return INFINITY;
}

/* ---- the election's side: what it tells the machine, what it hears ---- */

/* A closed fence session is reopened only while the lock session is up or
 * the command runs (and not once the command is being killed). */
static bool reopens_in(const struct election *e)
{
	switch (e->state) {
	case ELECTION_STANDBY:
		return !e->polling; /* DESIGN 15: one session while polling */
	case ELECTION_LEADER: case ELECTION_FAILSAFE: case ELECTION_DEMOTING:
		return true;
	case ELECTION_SHUTTING_DOWN:
		return e->child_running;
	case ELECTION_INIT: case ELECTION_CONNECTING: case ELECTION_BACKOFF:
	case ELECTION_RELEASING: case ELECTION_DONE: case ELECTION_STATE_COUNT:
		break;
	}
	return false;
}

/* A standby whose lock was granted leads as far as the fence is concerned:
 * it takes the fence while its claim is under way. */
static struct fm_inputs inputs_of(const struct election *e)
{
	bool granted = e->state == ELECTION_STANDBY && isfinite(e->granted_at);
	struct fm_inputs in = {
		.command = e->child_running,
		.killing = e->killing,
		.leader = e->state == ELECTION_LEADER || granted,
		.leading = e->state == ELECTION_LEADER || e->state == ELECTION_FAILSAFE ||
			   granted,
		.unlocked = (e->state == ELECTION_DEMOTING && !e->handing_over) ||
			    (e->state == ELECTION_SHUTTING_DOWN && !e->connected),
		.lock_down = !e->connected || e->state == ELECTION_CONNECTING,
		.reopens = reopens_in(e),
	};

	return in;
}

/* Nothing keeps another leader's command out any more: SIGKILL now rather
 * than at the end of the grace period (DESIGN 3, the fence). */
static void act_on(struct election *e, struct election_output *out,
			  double now, const struct fm_verdict *v)
{
	if (v->outage)
		election_saw_outage(e, now);
	if (!v->kill)
		return;
	e->killing = true;
	election_say(out, LOG_LEVEL_WARNING, "%s: killing the command now, as another "
	    "leader's command may start", v->kill);
	out->actions |= ELECTION_DO_KILL_CHILD;
}

void election_fence_take(struct election *e, struct election_output *out)
{
	struct fm_inputs in = inputs_of(e);

	fm_take(&e->fence, &in, out);
}

/* The lock is gone while the command stops: only the fence keeps the next
 * leader's command out; outage: the database went away. */
void election_fence_stopping(struct election *e, struct election_output *out,
		    double now, bool outage)
{
	struct fm_inputs in = inputs_of(e);
	struct fm_verdict v = { 0 };

	fm_stopping(&e->fence, &in, out, now, outage, &v);
	act_on(e, out, now, &v);
}

void election_fence_news(struct election *e, struct election_output *out,
		double now, const struct election_event *ev)
{
	struct fm_inputs in = inputs_of(e);
	struct fm_verdict v = { 0 };

	fm_news(&e->fence, &in, out, now, ev, &v);
	if (v.permanent)
		election_end_on_permanent(e, out, now, ev);
	else
		act_on(e, out, now, &v);
}

/* A new term: take the fence, from not_before on (a settle wait). */
void election_fence_lead(struct election *e, struct election_output *out, double now,
		double not_before)
{
	struct fm_inputs in = inputs_of(e);

	fm_lead(&e->fence, &in, out, now, not_before);
}

void election_fence_settled(struct election *e, struct election_output *out, double now)
{
	struct fm_inputs in = inputs_of(e);

	fm_settled(&e->fence, &in, out, now);
}

void election_fence_tick(struct election *e, struct election_output *out, double now)
{
	struct fm_inputs in = inputs_of(e);

	fm_tick(&e->fence, &in, out, now);
}

double election_fence_wakeup(const struct election *e, double now)
{
	struct fm_inputs in = inputs_of(e);

	return fm_wakeup(&e->fence, &in, now);
}
