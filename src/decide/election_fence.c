/* election_fence.c: the fence's machine: when to take and give back the
 * second lock a leader holds while its command lives (DESIGN 3). It owns
 * struct election_fence_machine and knows nothing of the election's
 * states: the election tells it, with each of its own events (struct
 * election_fence_event), what its state means for the fence (struct
 * election_fence_inputs, from the state's row), and acts on what it hears
 * back (struct election_fence_verdict). No I/O: actions only. */
#include <math.h>
#include <string.h>

#include "election_impl.h"

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
static bool wanted(const struct election_fence_machine *f, const struct election_fence_inputs *in,
		   double now)
{
	if (in->killing)
		return false;
	return in->command || (in->leader && now >= f->not_before);
}

/* The command is being stopped and the lock is gone, or may be: only the
 * fence keeps the next leader's command out. With the lock still held
 * (a graceful shutdown), the lock does. */
static bool stopping_unlocked(const struct election_fence_inputs *in)
{
	return in->command && !in->killing && in->unlocked;
}

/* A node that holds, or held, the lock waits in the queue for the fence; one
 * whose command is being stopped without the lock only tries: held
 * elsewhere, another command may start any moment. */
static void fm_take(struct election_fence_machine *f, const struct election_fence_inputs *in,
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
static void on_lead(struct election_fence_machine *f,
		    const struct election_fence_event *ev, double now,
		    struct election_output *out, struct election_fence_verdict *v)
{
	(void)v;
	f->wait_logged = false;
	f->not_before = ev->not_before;
	if (wanted(f, &ev->in, now))
		fm_take(f, &ev->in, out);
}

/* The settle wait is for an old leader whose command still stops; the
 * failsafe members, each asked after this node took the lock, answered
 * that none runs the command (or refused the connection): nobody is left
 * to take the fence first, so it is taken now. */
static void on_settled(struct election_fence_machine *f,
		       const struct election_fence_event *ev, double now,
		       struct election_output *out, struct election_fence_verdict *v)
{
	(void)v;
	if (now >= f->not_before)
		return;
	election_say(out, LOG_LEVEL_INFO, "every failsafe member runs nothing: taking "
	    "the fence now, %.2fs before the settle wait would end", f->not_before - now);
	f->not_before = now;
	if (wanted(f, &ev->in, now))
		fm_take(f, &ev->in, out);
}

/* The lock is gone (at now) while the command stops, and the fence may be
 * gone too. Both sessions lost together, or in failsafe: the database went
 * away, and nobody else can take the fence before it is back: take it again
 * the moment it is (a standby that saw the outage waits ELECTION_SETTLE for
 * that). The fence lost on its own earlier: another leader may hold it. */
static void on_stopping(struct election_fence_machine *f,
			const struct election_fence_event *ev, double now,
			struct election_output *out, struct election_fence_verdict *v)
{
	/* The fence's loss is weighed against the first word of the lock's
	 * after it; a later word in the same stop (a lock reconnection begun
	 * in failsafe, failing in the outage) is no news of the fence. */
	bool weighed = isfinite(f->lost_at) && f->lock_lost_at >= f->lost_at;

	f->lock_lost_at = now;
	if (!stopping_unlocked(&ev->in) || f->state == ELECTION_FENCE_HELD)
		return;
	if (!weighed && !ev->outage && now - f->lost_at > ELECTION_SESSIONS_TOGETHER) {
		v->kill = "the fence was lost before the lock";
		return;
	}
	if (f->state == ELECTION_FENCE_CLOSED)
		f->retry_at = now;
	fm_take(f, &ev->in, out);
}

/* While the command stops without the lock, a lost fence session is
 * reopened every ELECTION_FENCE_RETRY_STOPPING, at once the first time;
 * a held fence lost on its own, the database still up, is a kill. */
static bool failed_stopping(struct election_fence_machine *f,
			    const struct election_fence_inputs *in, double now,
			    enum election_fence was, struct election_fence_verdict *v)
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
static void on_failed(struct election_fence_machine *f,
		      const struct election_fence_event *ev, double now,
		      struct election_output *out, struct election_fence_verdict *v)
{
	const struct election_fence_inputs *in = &ev->in;
	enum election_fence was = f->state;
	double delay = f->backoff;

	f->state = ELECTION_FENCE_CLOSED;
	if (election_exit_for(ev->fault)) {
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
		     ev->reason ? ev->reason : "connection lost", delay);
	election_about(out, ev->fault);
	f->outage_logged |= in->command;
}

static void on_ready(struct election_fence_machine *f,
		     const struct election_fence_event *ev, double now,
		     struct election_output *out, struct election_fence_verdict *v)
{
	(void)v;
	f->state = ELECTION_FENCE_READY;
	f->backoff = ELECTION_RECONNECT_MIN;
	if (f->outage_logged)
		election_say(out, LOG_LEVEL_NOTICE, "fence session: connected again");
	f->outage_logged = false;
	if (wanted(f, &ev->in, now))
		fm_take(f, &ev->in, out);
}

static void on_acquired(struct election_fence_machine *f,
			const struct election_fence_event *ev, double now,
			struct election_output *out, struct election_fence_verdict *v)
{
	(void)v;
	f->state = ELECTION_FENCE_HELD;
	/* demoted before a command started, or the command gone, while
	 * waiting: give it back */
	if (!wanted(f, &ev->in, now))
		election_fence_drop(f, out, now);
}

/* The queued wait ended (lock_timeout): the old leader's command is still
 * stopping; a leader waits on. A try while this node's command stops: the
 * fence is held elsewhere, so another command may start: kill. Anyone else
 * lets go. */
static void on_busy(struct election_fence_machine *f,
		    const struct election_fence_event *ev, double now,
		    struct election_output *out, struct election_fence_verdict *v)
{
	const struct election_fence_inputs *in = &ev->in;

	(void)now;
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

/* As on the way into LEADER: the fence, unless held or being taken. */
static void on_take(struct election_fence_machine *f,
		    const struct election_fence_event *ev, double now,
		    struct election_output *out, struct election_fence_verdict *v)
{
	(void)now;
	(void)v;
	fm_take(f, &ev->in, out);
}

/* After the state's deadlines, which may have just closed the session: a
 * closed session is reopened when due, and a new leader's settle wait
 * ends. */
static void on_tick(struct election_fence_machine *f,
		    const struct election_fence_event *ev, double now,
		    struct election_output *out, struct election_fence_verdict *v)
{
	const struct election_fence_inputs *in = &ev->in;

	(void)v;
	if (f->state == ELECTION_FENCE_CLOSED && in->reopens && !in->killing &&
	    now >= f->retry_at)
		election_fence_open(f, out);
	if (f->state == ELECTION_FENCE_READY && in->leader && wanted(f, in, now))
		fm_take(f, in, out);
}

typedef void fence_handler(struct election_fence_machine *f,
			   const struct election_fence_event *ev, double now,
			   struct election_output *out,
			   struct election_fence_verdict *v);

/* The machine's table: one cell per event. news: its session's news, which
 * is ignored once that session was closed (it came from the old one). */
static const struct {
	fence_handler *on;
	bool news;
} cells[ELECTION_FENCE_EV_COUNT] = {
	[ELECTION_FENCE_EV_READY] = { on_ready, true },
	[ELECTION_FENCE_EV_FAILED] = { on_failed, true },
	[ELECTION_FENCE_EV_ACQUIRED] = { on_acquired, true },
	[ELECTION_FENCE_EV_BUSY] = { on_busy, true },
	[ELECTION_FENCE_EV_LEAD] = { on_lead, false },
	[ELECTION_FENCE_EV_SETTLED] = { on_settled, false },
	[ELECTION_FENCE_EV_STOPPING] = { on_stopping, false },
	[ELECTION_FENCE_EV_TAKE] = { on_take, false },
	[ELECTION_FENCE_EV_TICK] = { on_tick, false },
};

void election_fence_step(struct election_fence_machine *f,
			 const struct election_fence_event *ev, double now,
			 struct election_output *out,
			 struct election_fence_verdict *v)
{
	memset(v, 0, sizeof(*v));
	if (ev->type >= ELECTION_FENCE_EV_COUNT)
		return;
	if (cells[ev->type].news && f->state == ELECTION_FENCE_CLOSED)
		return; /* news from a session already closed */
	cells[ev->type].on(f, ev, now, out, v);
}

double election_fence_wakeup(const struct election_fence_machine *f,
			     const struct election_fence_inputs *in, double now)
{
	if (f->state == ELECTION_FENCE_CLOSED && in->reopens && !in->killing)
		return f->retry_at;
	if (f->state == ELECTION_FENCE_READY && in->leader && now < f->not_before)
		return f->not_before;
	return INFINITY;
}
