/* election_command.c: the states with the command: LEADER (its term's
 * start, the pings, the command's start and restarts), DEMOTING and
 * SHUTTING_DOWN (the command stopping), each one's handling, and the
 * command's news in every state; each state's row at the end. */
#include "election_impl.h"

#include <math.h>
#include <stdio.h>

/* ---- the command ------------------------------------------------------- */

/* The term the runner runs for: its key, its token (the snapshot's, which
 * a leader back from failsafe keeps) and the lock session holding it. */
void election_tell_term(const struct election *e, struct election_output *out)
{
	out->term = (struct election_term){
		.lock_key = e->snap.lock_key,
		.fencing_token = e->snap.fencing_token,
		.lock_pid = e->lock_pid,
	};
}

static void start_child(struct election *e, struct election_output *out,
			double now)
{
	e->child_start_at = INFINITY;
	e->child_running = true;
	e->child_started_at = now;
	out->actions |= ELECTION_DO_START_CHILD;
	election_tell_term(e, out);
	out->state_changed = true; /* "starting command" ends */
}

static enum election_outcome outcome_of(int status)
{
	if (status == 0)
		return ELECTION_OUTCOME_SUCCESS;
	if (status > EXIT_SIGNAL_BASE && status <= EXIT_SIGNAL_BASE + 64)
		return ELECTION_OUTCOME_SIGNAL;
	return ELECTION_OUTCOME_FAILURE;
}

/* The command's group is empty: count it; true when it was running. */
bool election_reap(struct election *e, struct election_output *out, double now,
		 const struct election_event *ev)
{
	if (!e->child_running)
		return false;
	election_fence_drop(&e->fence, out, now);
	e->child_running = false;
	e->killing = false;
	e->pause_stopped = false;
	e->draining = false;
	e->snap.command_pid = 0;
	e->snap.command_active = false;
	e->snap.counters.command_exits[outcome_of(ev->command.status)]++;
	return true;
}

static void child_started(struct election *e, struct election_output *out,
			  const struct election_event *ev)
{
	if (!e->child_running)
		return;
	e->snap.command_pid = ev->command.pid;
	e->snap.command_active = true;
	e->snap.counters.command_starts++;
	out->state_changed = true; /* the status now shows the command's pid */
}

static void child_killed(struct election *e)
{
	e->snap.counters.command_kills++;
}

/* The command could not even be forked. */
static void start_failed(struct election *e, struct election_output *out,
			 double now, const struct election_event *ev)
{
	if (!e->child_running)
		return;
	election_fence_drop(&e->fence, out, now);
	e->child_running = false;
	election_say(out, LOG_LEVEL_ERROR, "cannot start command: %s",
	    election_reason_of(ev, "fork failed"));
	e->exit_code = election_exit_for(FAULT_FORK);
	election_finish(e, out, now);
}

/* The runner cannot run anything: its ledger is missing and may not be
 * made, or its work was done already (a --once-per window ran elsewhere,
 * DESIGN 10). */
static void command_refused(struct election *e, struct election_output *out,
			    double now, const struct election_event *ev)
{
	if (!e->child_running)
		return;
	election_fence_drop(&e->fence, out, now);
	e->child_running = false;
	e->snap.command_pid = 0;
	e->snap.command_active = false;
	election_say(out, ev->command.fault == FAULT_ALREADY_RUN ? LOG_LEVEL_NOTICE
		     : LOG_LEVEL_ERROR, "%s", election_reason_of(ev, "the runner refused"));
	e->exit_code = ev->command.fault == FAULT_ALREADY_RUN ? e->p.conflict_exit_code
		       : election_exit_for(ev->command.fault);
	election_finish(e, out, now);
}

bool election_restarts(const struct election *e, int status)
{
	/* a command that cannot be executed never runs by trying again */
	if (status == EXIT_NOEXEC || status == EXIT_NOTFOUND)
		return false;
	return e->p.restart == ELECTION_RESTART_ALWAYS ||
	       (e->p.restart == ELECTION_RESTART_ON_FAILURE && status != 0);
}

/* --restart-limit: a command that keeps failing soon after it starts is
 * given up, and the lock with it, so that another node can try. */
static bool gives_up(struct election *e, struct election_output *out,
		     double now, int status)
{
	if (status == 0 || now - e->child_started_at >= ELECTION_RESTART_RESET_AFTER) {
		e->quick_failures = 0;
		return false;
	}
	e->quick_failures++;
	if (e->p.restart_limit <= 0 || e->quick_failures <= e->p.restart_limit)
		return false;
	election_say(out, LOG_LEVEL_ERROR, "command failed %d times in a row within %.0fs "
	    "of starting; giving up (--restart-limit %d)", e->quick_failures,
	    ELECTION_RESTART_RESET_AFTER, e->p.restart_limit);
	return true;
}

static void leader_child_gone(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev)
{
	double delay;
	bool for_pause = e->pause_stopped;

	if (!election_reap(e, out, now, ev))
		return;
	if (for_pause) {
		/* stopped for a pause: it starts again on resume, at once if
		 * the resume came while it was stopping */
		e->child_start_at = now;
		out->state_changed = true;
		election_say(out, LOG_LEVEL_NOTICE, e->paused ? "command stopped: paused"
			     : "command stopped for a pause that has ended: starting it again");
		return;
	}
	if (!election_restarts(e, ev->command.status) ||
	    gives_up(e, out, now, ev->command.status)) {
		e->exit_code = ev->command.status;
		election_finish(e, out, now);
		return;
	}
	if (now - e->child_started_at >= ELECTION_RESTART_RESET_AFTER)
		e->restart_backoff = ELECTION_RESTART_MIN;
	delay = e->restart_backoff;
	e->restart_backoff = fmin(delay * 2, ELECTION_RESTART_MAX);
	e->child_start_at = now + delay;
	out->state_changed = true;
	election_say(out, LOG_LEVEL_NOTICE, "restarting command in %.1fs", delay);
}

static void demoted_child_gone(struct election *e, struct election_output *out,
			       double now, const struct election_event *ev)
{
	if (!election_reap(e, out, now, ev))
		return;
	election_disconnect(e, out);
	election_connect_now(e, out, now);
}

static void stopped_child_gone(struct election *e, struct election_output *out,
			       double now, const struct election_event *ev)
{
	if (election_reap(e, out, now, ev))
		election_finish(e, out, now);
}

void election_on_command(struct election *e, struct election_output *out,
			 double now, const struct election_event *ev)
{
	switch (ev->command.news) {
	case ELECTION_COMMAND_STARTED: child_started(e, out, ev); return;
	case ELECTION_COMMAND_START_FAILED: start_failed(e, out, now, ev); return;
	case ELECTION_COMMAND_KILLED: child_killed(e); return;
	case ELECTION_COMMAND_GONE:
		return; /* the state's own (election.c, the table) */
	case ELECTION_COMMAND_REFUSED: command_refused(e, out, now, ev); return;
	}
}

/* ---- LEADER: the term, the pings, the lease ---------------------------- */

static void observe(struct election_histogram *h, double seconds)
{
	size_t i = 0;

	while (i < ELECTION_BUCKETS && seconds > election_bucket_bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += seconds;
}

/* A standby that saw the database go away (its session lost) and got the
 * lock within ELECTION_SETTLE of its connection coming back leaves the
 * fence to an old leader whose command may still be stopping: that one
 * takes it again as soon as it reconnects. Never past the outage's start
 * plus grace_period plus ELECTION_KILL_GONE: that command is dead by then
 * (SIGKILL sent at the end of the grace period, and its group gone). */
double election_settle_until(const struct election *e)
{
	if (!isfinite(e->outage_began))
		return -INFINITY;
	return fmin(e->back_at + ELECTION_SETTLE,
		    e->outage_began + e->p.grace_period + ELECTION_KILL_GONE);
}

static double settle_after_outage(struct election *e, struct election_output *out,
				  double now)
{
	double not_before = election_settle_until(e);

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
	e->lock_pid = ev->session.lock_pid; /* the runner's claims name it */
	/* due now or after the delay; it starts once the fence is held */
	e->child_start_at = now + e->p.takeover_delay;
	election_tell_fence(e, out, now, &(struct election_fence_event){
		.type = ELECTION_FENCE_EV_LEAD,
		.not_before = settle_after_outage(e, out, now) });
	/* after the fence's request: on the same session, its answer comes
	 * once the fence is held */
	election_controls_new_term(e, out);
	if (e->p.failsafe)
		election_failsafe_ask(e, out, now);
}

/* Failed pings so far: the first at ping_timeout after sending, then one
 * more for every ping_interval the answer is still missing. Counting from
 * the clock, not from timer callbacks, makes a process that was frozen for
 * a minute see all of its missed pings at once. */
static int ping_failures_at(const struct election *e, double now)
{
	double sent, late;

	/* A ping that is due but was never sent (frozen between pings, the
	 * usual case) counts as sent when it was due. */
	if (e->ping_pending)
		sent = e->ping_sent_at;
	else if (now >= e->next_ping_at)
		sent = e->next_ping_at;
	else
		return 0;
	late = now - (sent + e->p.ping_timeout);
	if (late < 0)
		return 0;
	return 1 + (int)floor(late / e->p.ping_interval);
}

/* The pings have failed often enough to end the lease. */
static bool ping_expired(const struct election *e, double now)
{
	return ping_failures_at(e, now) >= e->p.ping_failures;
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
static void lose_lease(struct election *e, struct election_output *out,
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
		election_failsafe_enter(e, out, now, fault, why);
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
		election_tell_fence(e, out, now, &(struct election_fence_event){
			.type = ELECTION_FENCE_EV_STOPPING });
	} else {
		election_fence_drop(&e->fence, out, now); /* taken or being taken, no command yet */
		election_disconnect(e, out);
		election_connect_now(e, out, now);
	}
}

/* The lock's ping, when one is due and none is in flight (a leader's, and
 * a draining leader's, which keeps the lock until its runs end). */
static void ping_if_due(struct election *e, struct election_output *out, double now)
{
	if (e->ping_pending || now < e->next_ping_at)
		return;
	e->ping_pending = true;
	/* deadlines run from when it was due, however late the loop */
	e->ping_sent_at = e->next_ping_at;
	out->actions |= ELECTION_DO_PING;
	/* a held fence has the same server-side lease to keep */
	if (election_fence_held(&e->fence))
		out->actions |= ELECTION_DO_FENCE_PING;
}

static void leader_tick(struct election *e, struct election_output *out,
			double now)
{
	int failures = ping_failures_at(e, now);

	if (failures >= e->p.ping_failures) {
		char why[128];

		snprintf(why, sizeof(why),
			 "ping timed out %d times (last reply %.1fs ago)",
			 failures, now - e->last_reply_at);
		lose_lease(e, out, now, FAULT_PING_TIMEOUT, why);
		return;
	}
	ping_if_due(e, out, now);
	election_failsafe_check_tick(e, out, now);
	if (!e->child_running && now >= e->child_start_at && election_fence_ok(&e->fence) &&
	    election_failsafe_members_ok(e) && election_controls_allow_start(e))
		start_child(e, out, now);
}

/* A leader's next deadline: the next failed ping or the next ping, the
 * command when it may start, the members' answer. */
static double leader_wakeup(const struct election *e, double now)
{
	double t = e->ping_pending ? e->ping_sent_at + e->p.ping_timeout +
		ping_failures_at(e, now) * e->p.ping_interval : e->next_ping_at;

	if (!e->child_running && election_fence_ok(&e->fence) && election_failsafe_members_ok(e) &&
	    election_controls_allow_start(e))
		t = fmin(t, e->child_start_at);
	t = fmin(t, election_failsafe_check_wakeup(e));
	return t;
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
	if (!e->ping_pending || ping_expired(e, now))
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
		lose_lease(e, out, now, ev->session.fault,
			   election_reason_of(ev, "connection lost"));
}

/* ---- DEMOTING and SHUTTING_DOWN: the command stopping ------------------ */

/* ---- draining (DESIGN 13) ---- */

struct election_pings election_pings_of(const struct election *e)
{
	return (struct election_pings){ e->ping_pending, e->ping_sent_at, e->next_ping_at };
}

void election_drain(struct election *e, struct election_output *out, double now,
		    const struct election_pings *before)
{
	if (!(out->actions & ELECTION_DO_STOP_CHILD) || e->p.drain <= 0 ||
	    !e->connected || e->killing)
		return;
	out->actions &= ~(unsigned)ELECTION_DO_STOP_CHILD;
	out->actions |= ELECTION_DO_DRAIN_CHILD;
	if (!e->draining)
		election_say(out, LOG_LEVEL_NOTICE, "draining: scheduled runs may "
		    "finish for up to %.1fs; the leader lease is kept until then",
		    e->p.drain);
	e->draining = true;
	/* the lock is pinged on, as the leader pinged it: a silent session
	 * would be ended by the server lease (DESIGN 3) and the lock pass
	 * while runs still go */
	e->ping_pending = before->pending;
	e->ping_sent_at = before->sent_at;
	e->next_ping_at = isfinite(before->next_at) ? before->next_at : now;
}

/* The lock may be gone while the runs drain: stopped now, as a lost
 * leader stops them. */
static void end_drain(struct election *e, struct election_output *out,
		      const char *why)
{
	if (!e->draining)
		return;
	e->draining = false;
	e->ping_pending = false;
	e->next_ping_at = INFINITY;
	election_say(out, LOG_LEVEL_WARNING, "draining ended early: %s; stopping "
	    "the command now", why);
	out->actions |= ELECTION_DO_STOP_CHILD;
}

/* DEMOTING and SHUTTING_DOWN while draining: the pings go on as a
 * leader's; failing, the drain ends (a handover's lock counts as lost). */
static void draining_tick(struct election *e, struct election_output *out,
			  double now)
{
	int failures;
	char why[128];

	if (!e->draining)
		return;
	failures = ping_failures_at(e, now);
	if (failures >= e->p.ping_failures) {
		snprintf(why, sizeof(why), "ping timed out %d times (last reply "
			 "%.1fs ago)", failures, now - e->last_reply_at);
		e->snap.counters.losses[FAULT_PING_TIMEOUT]++;
		end_drain(e, out, why);
		if (e->state == ELECTION_DEMOTING) {
			e->handing_over = false;
			election_tell_fence(e, out, now, &(struct election_fence_event){
				.type = ELECTION_FENCE_EV_STOPPING });
		}
		return;
	}
	ping_if_due(e, out, now);
}

static double draining_wakeup(const struct election *e, double now)
{
	if (!e->draining)
		return INFINITY;
	return e->ping_pending ? e->ping_sent_at + e->p.ping_timeout +
		ping_failures_at(e, now) * e->p.ping_interval : e->next_ping_at;
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
	election_saw_outage(e, now);
	end_drain(e, out, "the lock session was lost");
	if (!election_end_on_permanent(e, out, now, ev))
		election_tell_fence(e, out, now, &(struct election_fence_event){
			.type = ELECTION_FENCE_EV_STOPPING });
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

/* ---- the rows (election.c's table) ------------------------------------- */

/* What LEADER, DEMOTING and SHUTTING_DOWN mean for the fence (DESIGN 3):
 * a leader's command is due once it is held; a command stopped without
 * the lock (lost, not handed over; or a shutdown whose session is gone)
 * only tries for it; a closed fence session is reopened while the command
 * lives. */
static void leader_fence(const struct election *e, struct election_fence_inputs *in)
{
	(void)e;
	in->leader = in->leading = in->reopens = true;
}

static void demoting_fence(const struct election *e,
			   struct election_fence_inputs *in)
{
	in->reopens = true;
	in->unlocked = !e->handing_over;
}

static void shutting_down_fence(const struct election *e,
				struct election_fence_inputs *in)
{
	in->reopens = e->child_running;
	in->unlocked = !e->connected;
}

const struct state_ops leader_state = {
	.shutdown = election_shutdown,
	.lock = { .failed = leader_lost, .ping_ok = ping_ok },
	.command_gone = leader_child_gone,
	.deadlines = leader_tick,
	.wakeup = leader_wakeup,
	.fence = leader_fence,
	.failsafe = { .refuses = "this node runs the command", .checks = true },
	.controls = ELECTION_CONTROLS_AS_LEADER,
};

const struct state_ops demoting_state = {
	.shutdown = election_shutdown,
	.lock = { .failed = stopping_lost, .ping_ok = ping_ok },
	.command_gone = demoted_child_gone,
	.deadlines = draining_tick,
	.wakeup = draining_wakeup,
	.fence = demoting_fence,
	.failsafe = { .refuses = "this node runs the command" },
};

const struct state_ops shutting_down_state = {
	.shutdown = kill_on_second_signal,
	.lock = { .failed = stopping_lost, .ping_ok = ping_ok },
	.command_gone = stopped_child_gone,
	.deadlines = draining_tick,
	.wakeup = draining_wakeup,
	.fence = shutting_down_fence,
	.failsafe = { .refuses = "this node runs the command" },
};
