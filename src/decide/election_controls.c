/* election_controls.c: the operator controls (DESIGN 11) as the election
 * sees them: when they are read, and what a pause, a switchover and a
 * priority lead to in each state. No I/O: actions only. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "election_impl.h"

/* However long a switchover says it may take, a node holds off at most
 * this long before it asks for the lock again. */
#define HOLD_MAX 3600.0

static bool is_me(const struct election *e, const char *node)
{
	return node && *node && e->p.node_id && strcmp(node, e->p.node_id) == 0;
}

/* What the state means for the controls: its row's cell. */
static bool as_leader(const struct election *e)
{
	return election_state_controls(e) == ELECTION_CONTROLS_AS_LEADER;
}

static bool as_standby(const struct election *e)
{
	return election_state_controls(e) == ELECTION_CONTROLS_AS_STANDBY;
}

static bool holding_off(const struct election *e, double now)
{
	return now < e->hold_until;
}

/* How often a node reads the controls: a leader, and a standby that waits
 * for a switchover to end, every ping interval (so that a pause stops the
 * command within ping_interval plus the read's round trip plus
 * grace_period); other standbys, which only show them, every
 * retry_interval, and a polling standby as often as it counts the queue
 * (count_every tries): a thousand of them reading at every try were a
 * third of the statements a fleet sent (DESIGN 15). Whatever a standby
 * saw, it reads them again the moment the lock is granted, before it
 * starts anything. */
static double read_interval(const struct election *e, double now)
{
	double standby = fmax(e->p.retry_interval, e->p.ping_interval);

	if (as_leader(e) || holding_off(e, now))
		return e->p.ping_interval;
	return e->polling ? standby * e->count_every : standby;
}

/* The read or ask in flight is answered: whether it counts for the term,
 * that is, it was sent since the lock came. */
static bool answered(struct election *e)
{
	bool counts = !e->ctl_stale;

	e->ctl_pending = false;
	e->ctl_stale = false;
	return counts;
}

/* The lock came (granted, or a new term): a read in flight was sent
 * before, and does not count. */
static void lock_came(struct election *e)
{
	e->ctl_fresh = false;
	e->ctl_clear = false;
	e->ctl_stale = e->ctl_pending;
}

static void controls_read(struct election *e, struct election_output *out)
{
	if (e->ctl_pending)
		return;
	e->ctl_pending = true;
	e->next_ctl_at = INFINITY;
	/* a polling standby's over its only session, the lock's */
	out->actions |= e->polling ? ELECTION_DO_LOCK_CONTROLS_READ
				   : ELECTION_DO_CONTROLS_READ;
}

/* A standby of higher priority than any leader can be (1 is the lowest
 * that leads) asks, once it has been a healthy standby for
 * priority_delay. */
static bool asks_priority(const struct election *e, double now)
{
	return e->p.priority > 1 && as_standby(e) &&
	       !holding_off(e, now) && now - e->standby_since >= e->p.priority_delay;
}

static bool reads_now(const struct election *e)
{
	/* a standby that polls through the pooler (poll_dsn) reads them
	 * once it queues or its lock is granted: none of its decisions
	 * hangs on them, and its direct session, opened only to try the
	 * lock, closes again at once when the queue is full (DESIGN 15) */
	return !e->ctl_pending && !(e->polling && election_polls_pooled(e)) &&
	       election_state_controls(e) != ELECTION_CONTROLS_AS_NONE;
}

void election_controls_tick(struct election *e, struct election_output *out,
			    double now)
{
	if (!reads_now(e))
		return;
	if (asks_priority(e, now) && now >= e->next_ctl_at) {
		e->ctl_pending = true;
		out->actions |= e->polling ? ELECTION_DO_LOCK_PRIORITY_ASK
					   : ELECTION_DO_PRIORITY_ASK;
		return;
	}
	/* a new leader reads at once, but while reads fail (an error
	 * answers at once) at its cadence */
	if ((as_leader(e) && !e->ctl_fresh && !e->ctl_failed_said) ||
	    now >= e->next_ctl_at)
		controls_read(e, out);
}

/* The next read (or, once priority_delay passed, ask) is due. */
double election_controls_wakeup(const struct election *e)
{
	return reads_now(e) ? e->next_ctl_at : INFINITY;
}

/* The command may start: a read answered since the lock came, nothing
 * paused (unless the runner acts on pauses itself), no switchover under
 * way. */
bool election_controls_allow_start(const struct election *e)
{
	return e->ctl_fresh && !e->handing_over &&
	       (!e->paused || e->p.runner_pauses);
}

/* A node that handed over, or stepped aside, asks for the lock again once
 * the switchover is done or lapsed. */
static void end_hold(struct election *e, struct election_output *out, double now)
{
	if (!holding_off(e, now))
		return;
	e->hold_until = -INFINITY;
	election_say(out, LOG_LEVEL_INFO, "the switchover is over: asking for the "
	    "leader lease again");
	out->state_changed = true;
	if (as_standby(e) && isinf(e->request_deadline))
		e->next_attempt_at = now;
}

static void hold_off(struct election *e, double now,
		     const struct election_controls *c)
{
	e->hold_until = now + fmin(fmax(c->left, 0), HOLD_MAX);
}

/* Gives the lock back by closing its session (the command is gone): a
 * standby again, holding off. */
static void give_back(struct election *e, struct election_output *out,
		      double now)
{
	e->handing_over = false;
	election_fence_drop(&e->fence, out, now);
	election_disconnect(e, out);
	election_connect_now(e, out, now);
}

/* This node is the leader a switchover is asked of: stop the command
 * gracefully, holding the lock and the fence until it is gone, then give
 * both back and hold off until the switchover is done or lapsed. */
static void hand_over(struct election *e, struct election_output *out,
		      double now, const struct election_controls *c)
{
	struct election_pings pings = election_pings_of(e);

	e->handing_over = true;
	hold_off(e, now, c);
	election_say(out, LOG_LEVEL_NOTICE, "switchover asked by %s at %s: %s, then "
	    "handing the leader lease to %s", c->asked_by, c->asked_at,
	    e->child_running ? "stopping the command" : "no command to stop",
	    *c->target ? c->target : "any standby");
	e->ping_pending = false;
	e->next_ping_at = INFINITY;
	e->child_start_at = INFINITY;
	election_failsafe_no_check(e);
	election_request_done(e);
	if (e->child_running) {
		election_set_state(e, out, now, ELECTION_DEMOTING);
		out->actions |= ELECTION_DO_STOP_CHILD;
		election_drain(e, out, now, &pings);
	} else {
		give_back(e, out, now);
	}
}

/* A new leader's first read found a switchover to another node: give the
 * lock back before anything started. */
static void step_aside(struct election *e, struct election_output *out,
		       double now, const struct election_controls *c)
{
	hold_off(e, now, c);
	election_say(out, LOG_LEVEL_NOTICE, "switchover to %s asked by %s at %s: "
	    "giving the leader lease back", c->target, c->asked_by, c->asked_at);
	e->next_ping_at = INFINITY;
	e->child_start_at = INFINITY;
	give_back(e, out, now);
}

static void leader_switchover(struct election *e, struct election_output *out,
			      double now, const struct election_controls *c,
			      bool first)
{
	if (!c->switchover || e->handing_over)
		return;
	if (is_me(e, c->leader)) {
		hand_over(e, out, now, c);
	} else if (first && *c->target && !is_me(e, c->target)) {
		step_aside(e, out, now, c);
	} else if (first && !e->handed_said) {
		e->handed_said = true;
		election_say(out, LOG_LEVEL_NOTICE, "switchover asked by %s at %s: taking "
		    "over from %s", c->asked_by, c->asked_at,
		    *c->leader ? c->leader : "the previous leader");
		out->actions |= ELECTION_DO_CONTROLS_DONE;
	}
}

/* A pause stops the command gracefully and keeps it from starting; resume
 * lets it start at once. A runner that acts on pauses itself (the jobs)
 * gets them instead (RUNNER_PAUSES). */
static void leader_pause(struct election *e, struct election_output *out,
			 double now, const struct election_controls *c)
{
	if (e->p.runner_pauses || c->paused == e->paused)
		return;
	e->paused = c->paused;
	if (!c->paused) {
		election_say(out, LOG_LEVEL_NOTICE, "resumed%s%s%s%s: %s",
			     c->resumed_by ? " by " : "", c->resumed_by ? c->resumed_by : "",
			     c->resumed_at ? " at " : "", c->resumed_at ? c->resumed_at : "",
			     e->child_running ? "the command starts again once it stopped"
			     : "starting the command");
		if (!e->child_running)
			e->child_start_at = fmin(e->child_start_at, now);
		return;
	}
	election_say(out, LOG_LEVEL_NOTICE, "paused by %s at %s%s", c->paused_by,
	    c->paused_at, e->child_running ? ": stopping the command" : "");
	if (e->child_running && !e->pause_stopped) {
		e->pause_stopped = true;
		out->actions |= ELECTION_DO_STOP_CHILD;
	}
}

static void copy(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v ? v : "");
}

/* What the status shows: changed, the service manager hears it. */
static void publish_controls(struct election *e, struct election_output *out,
			     const struct election_controls *c)
{
	struct election_snapshot *s = &e->snap;

	if (s->paused != c->paused || s->switchover != c->switchover ||
	    (c->paused && strcmp(s->paused_at, c->paused_at ? c->paused_at : "")))
		out->state_changed = true;
	s->paused = c->paused;
	copy(s->paused_by, sizeof(s->paused_by), c->paused ? c->paused_by : "");
	copy(s->paused_at, sizeof(s->paused_at), c->paused ? c->paused_at : "");
	s->switchover = c->switchover;
	copy(s->switchover_target, sizeof(s->switchover_target),
	     c->switchover ? c->target : "");
	copy(s->switchover_leader, sizeof(s->switchover_leader),
	     c->switchover ? c->leader : "");
	copy(s->switchover_by, sizeof(s->switchover_by), c->switchover ? c->asked_by : "");
	copy(s->switchover_at, sizeof(s->switchover_at), c->switchover ? c->asked_at : "");
}

/* A standby whose lock was granted, its claim under way: a read sent since
 * the grant that found nothing in force serves the term (a runner that acts
 * on pauses hears of them only from a leader's read); one in flight before held the
 * grant's own back, which goes now. */
static void granted_read(struct election *e, struct election_output *out,
			 bool counts, const struct election_controls *c)
{
	if (counts)
		e->ctl_clear = !c->paused && !c->switchover && !e->paused &&
			       !e->p.runner_pauses;
	else
		controls_read(e, out);
}

/* A standby holding off after a switchover: is it over? */
static void standby_read(struct election *e, struct election_output *out,
			 double now, const struct election_controls *c)
{
	if (!holding_off(e, now))
		return;
	if (!c->switchover || is_me(e, c->target) ||
	    (!*c->target && !is_me(e, c->leader)))
		end_hold(e, out, now);
	else
		hold_off(e, now, c);
}

/* What a read found (c), or, while reads fail, what the last one found
 * if nothing was in force; counts: it was sent since the lock came. */
static void read_apply(struct election *e, struct election_output *out,
		       double now, const struct election_controls *c, bool counts)
{
	bool first = false;
	bool granted = as_standby(e) && isfinite(e->granted_at);

	if (as_leader(e) && counts) {
		first = !e->ctl_fresh;
		e->ctl_fresh = true;
	}
	publish_controls(e, out, c);
	if (as_leader(e)) {
		leader_switchover(e, out, now, c, first);
		if (as_leader(e))
			leader_pause(e, out, now, c);
	} else if (as_standby(e)) {
		standby_read(e, out, now, c);
	}
	e->next_ctl_at = now + read_interval(e, now);
	if (granted) /* still a standby: nothing above leaves STANDBY */
		granted_read(e, out, counts, c);
}

static void read_done(struct election *e, struct election_output *out,
		      double now, const struct election_controls *c)
{
	bool counts = answered(e);

	if (e->ctl_failed_said)
		election_say(out, LOG_LEVEL_NOTICE, "the operator controls are read again");
	e->ctl_failed_said = false;
	e->ctl_read_once = true;
	e->ctl_last_clear = !c->paused && !c->parts_paused && !c->switchover;
	read_apply(e, out, now, c, counts);
}

/* The read failed: the session's loss is told by the session. An error
 * (a lock timeout behind an ALTER TABLE, a privilege revoked) fails
 * closed (DESIGN 11): the node goes by the last read answered when it
 * found nothing in force; otherwise, or with none answered yet, nothing
 * starts that has not started (a new term waits for a read; a leader
 * keeps what runs). Said once until a read is answered again. */
static void read_failed(struct election *e, struct election_output *out,
			double now, const struct election_event *ev)
{
	static const struct election_controls none = { .readable = false };
	bool counts, by_last;

	if (ev->controls.session_lost) {
		answered(e);
		e->next_ctl_at = now + e->p.ping_interval;
		return;
	}
	counts = answered(e);
	by_last = e->ctl_read_once && e->ctl_last_clear;
	if (!e->ctl_failed_said)
		election_say(out, LOG_LEVEL_WARNING, "cannot read the operator controls: "
		    "%s; %s until they are read again", election_reason_of(ev, "error"),
		    by_last ? "going by the last read, which found none in force"
		    : !e->ctl_read_once ? "starting nothing"
		    : "going by the last read, which found one in force: starting nothing");
	e->ctl_failed_said = true;
	if (by_last) {
		read_apply(e, out, now, &none, counts);
		return;
	}
	e->next_ctl_at = now + read_interval(e, now);
	if (as_standby(e) && isfinite(e->granted_at)) {
		if (counts)
			e->ctl_clear = false;
		else
			controls_read(e, out);
	}
}

/* An ask the ledger could not answer is said once in the process's life:
 * an error for a ledger this role cannot use, a warning for a failure; a
 * lost session is the session's to tell. */
static void ask_trouble(struct election *e, struct election_output *out,
			const struct election_event *ev)
{
	enum election_ask_trouble t = ev->controls.trouble;

	if (t == ELECTION_ASK_ANSWERED || t == ELECTION_ASK_LOST || e->ask_trouble_said)
		return;
	e->ask_trouble_said = true;
	if (t == ELECTION_ASK_FAILED) {
		election_say(out, LOG_LEVEL_WARNING, "priority: cannot ask for a "
		    "switchover: %s", election_reason_of(ev, "error"));
		return;
	}
	election_say(out, LOG_LEVEL_ERROR, "priority: the ledger %s (schema %s): run "
	    "'pgleader init-db' as a role that may, or let a DBA apply 'pgleader "
	    "init-db --print-sql --grant-to ROLE'; this node never asks for a "
	    "switchover until then", t == ELECTION_ASK_MISSING ? "is missing and "
	    "this role may not create it" : "is there but this role may not write "
	    "its controls", e->p.schema ? e->p.schema : "?");
}

static void priority_asked(struct election *e, struct election_output *out,
			   double now, const struct election_event *ev)
{
	ask_trouble(e, out, ev);
	answered(e);
	e->next_ctl_at = now + read_interval(e, now);
	/* it held back the read of a lock just granted */
	if (as_standby(e) && isfinite(e->granted_at))
		controls_read(e, out);
	if (!ev->controls.to_me)
		return;
	election_say(out, LOG_LEVEL_NOTICE, "priority %d over leader %s's %d: asked "
	    "for a switchover to this node", e->p.priority,
	    ev->controls.leader ? ev->controls.leader : "?",
	    ev->controls.leader_priority);
}

/* The ledger is not one this node trusts: never read, and the node does
 * not go on as if there were none (a pause would be ignored): one error
 * line, the command stopped, exit 69. */
static void refused(struct election *e, struct election_output *out,
		    double now, const struct election_event *ev)
{
	struct election_event permanent = { .type = ev->type, .reason = ev->reason };

	answered(e);
	permanent.session.fault = FAULT_LEDGER;
	election_end_on_permanent(e, out, now, &permanent);
}

/* A runner that acts on pauses itself gets every read's rows while this
 * node leads or its command runs, as the read finds it: a standby's runs
 * nothing, its pauses would only be noise. */
static void hand_pauses(const struct election *e, struct election_output *out)
{
	if (e->p.runner_pauses && (as_leader(e) || e->snap.command_active))
		out->actions |= ELECTION_DO_RUNNER_PAUSES;
}

static void read_answered(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev)
{
	static const struct election_controls none = { .readable = false };

	hand_pauses(e, out);
	read_done(e, out, now, ev->controls.in_force ? ev->controls.in_force : &none);
}

/* The controls' news: one cell per kind; what the state means for each is
 * its row's controls role (enum election_controls_role). */
static election_handler *const news_cells[] = {
	[ELECTION_CONTROLS_READ] = read_answered,
	[ELECTION_CONTROLS_FAILED] = read_failed,
	[ELECTION_CONTROLS_ASKED] = priority_asked,
	[ELECTION_CONTROLS_REFUSED] = refused,
};

void election_on_controls(struct election *e, struct election_output *out,
	                  double now, const struct election_event *ev)
{
	if ((size_t)ev->controls.news < sizeof(news_cells) / sizeof(news_cells[0]) &&
	    news_cells[ev->controls.news])
		news_cells[ev->controls.news](e, out, now, ev);
}

/* Priority 0 never asks for the lock; a node holding off after a
 * switchover asks once it is over. False: ask now. */
bool election_controls_defer_lock(struct election *e, double now)
{
	if (e->p.priority == 0) {
		e->next_attempt_at = INFINITY;
		return true;
	}
	if (!holding_off(e, now))
		return false;
	e->next_attempt_at = e->hold_until;
	return true;
}

/* A standby's lock is granted, its claim under way: the controls are read
 * now, behind the fence. A read in flight, sent before, does not count:
 * this one goes once it answered. */
void election_controls_granted(struct election *e, struct election_output *out)
{
	lock_came(e);
	controls_read(e, out);
}

/* A new term: nothing starts before the controls were read since the lock
 * came. A read since the grant that found nothing in force is enough;
 * anything else is read again as a leader, which acts on it. */
void election_controls_new_term(struct election *e, struct election_output *out)
{
	bool clear = isfinite(e->granted_at) && e->ctl_clear;

	if (!isfinite(e->granted_at))
		lock_came(e);
	e->ctl_fresh = clear;
	e->ctl_clear = false;
	e->granted_at = INFINITY;
	e->handed_said = false;
	e->hold_until = -INFINITY;
	if (!e->ctl_fresh)
		controls_read(e, out);
}
