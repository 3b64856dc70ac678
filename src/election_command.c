/* election_command.c: the command's life as the election sees it: its
 * start, its restarts and their limit, and what its end leads to in each
 * state. */
#include "election_impl.h"

#include <math.h>

void election_start_child(struct election *e, struct election_output *out,
			  double now)
{
	e->child_start_at = INFINITY;
	e->child_running = true;
	e->child_started_at = now;
	out->actions |= ELECTION_DO_START_CHILD;
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
	fence_drop(&e->fence, out, now);
	e->child_running = false;
	e->killing = false;
	e->pause_stopped = false;
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
	fence_drop(&e->fence, out, now);
	e->child_running = false;
	election_say(out, LOG_LEVEL_ERROR, "cannot start command: %s",
	    election_reason_of(ev, "fork failed"));
	e->exit_code = election_exit_for(FAULT_FORK);
	election_finish(e, out, now);
}

/* The jobs layer cannot run anything (DESIGN 10): the ledger is missing
 * and may not be made, or a --once-per window ran elsewhere already. */
static void command_refused(struct election *e, struct election_output *out,
			    double now, const struct election_event *ev)
{
	if (!e->child_running)
		return;
	fence_drop(&e->fence, out, now);
	e->child_running = false;
	e->snap.command_pid = 0;
	e->snap.command_active = false;
	election_say(out, ev->command.fault == FAULT_ALREADY_RUN ? LOG_LEVEL_NOTICE
		     : LOG_LEVEL_ERROR, "%s", election_reason_of(ev, "jobs refused"));
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

void election_leader_child_gone(struct election *e, struct election_output *out,
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

void election_demoted_child_gone(struct election *e, struct election_output *out,
			       double now, const struct election_event *ev)
{
	if (!election_reap(e, out, now, ev))
		return;
	election_disconnect(e, out);
	election_connect_now(e, out, now);
}

void election_stopped_child_gone(struct election *e, struct election_output *out,
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
