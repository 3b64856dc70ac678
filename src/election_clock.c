/* election_clock.c: what time alone decides: each state's deadlines, checked
 * after every event, and the next wakeup they ask for, side by side. */
#include "election_impl.h"

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

bool election_restarting(const struct election *e, double now, enum fault f)
{
	return restart_like(f) && now < e->restart_until;
}

/* The wait before the next connection attempt. Inside a restart window:
 * ELECTION_RECONNECT_FAST, jittered to [0.5, 1.5) of it. Otherwise full
 * jitter over a cap that doubles from ELECTION_RECONNECT_MIN up to
 * retry_interval: (0, cap], never below the fast step. The random fraction
 * comes with the event (0 in tests: the longest wait), so that a fleet's
 * nodes, and the daemons of one node, do not retry at the same instants. */
double election_reconnect_delay(struct election *e, double now, enum fault f)
{
	double cap = e->reconnect_backoff;

	if (election_restarting(e, now, f))
		return ELECTION_RECONNECT_FAST * (1.5 - e->jitter);
	e->reconnect_backoff = fmin(cap * 2, fmax(e->p.retry_interval,
						   ELECTION_RECONNECT_MIN));
	return fmax(cap * (1 - e->jitter), ELECTION_RECONNECT_FAST);
}

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
		election_exit_now(e, out, now, EX_UNAVAILABLE);
	}
	return true;
}

void election_connecting_tick(struct election *e, struct election_output *out,
			    double now)
{
	if (wait_expired(e, out, now))
		return;
	if (now >= e->request_deadline) {
		e->snap.counters.connect_failures++;
		election_reconnect_later(e, out, now, FAULT_TIMEOUT,
					 "connection attempt timed out");
	}
}

void election_backoff_tick(struct election *e, struct election_output *out,
			 double now)
{
	if (!wait_expired(e, out, now) && now >= e->next_attempt_at)
		election_connect_now(e, out, now);
}

void election_standby_tick(struct election *e, struct election_output *out,
			 double now)
{
	if (wait_expired(e, out, now))
		return;
	if (now >= e->request_deadline) {
		/* Outcome unknown: a lock request may yet be granted, so this
		 * connection is never reused. */
		election_reconnect_later(e, out, now, FAULT_TIMEOUT,
					 "lock request got no answer in time");
		return;
	}
	if (isinf(e->request_deadline) && now >= e->next_attempt_at)
		election_ask_for_lock(e, out, now);
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
bool election_ping_expired(const struct election *e, double now)
{
	return ping_failures_at(e, now) >= e->p.ping_failures;
}

void election_leader_tick(struct election *e, struct election_output *out,
			double now)
{
	int failures = ping_failures_at(e, now);

	if (failures >= e->p.ping_failures) {
		char why[128];

		snprintf(why, sizeof(why),
			 "ping timed out %d times (last reply %.1fs ago)",
			 failures, now - e->last_reply_at);
		election_lose_lease(e, out, now, FAULT_PING_TIMEOUT, why);
		return;
	}
	if (!e->ping_pending && now >= e->next_ping_at) {
		e->ping_pending = true;
		/* deadlines run from when it was due, however late the loop */
		e->ping_sent_at = e->next_ping_at;
		out->actions |= ELECTION_DO_PING;
		/* a held fence has the same server-side lease to keep */
		if (fence_held(&e->fence))
			out->actions |= ELECTION_DO_FENCE_PING;
	}
	election_failsafe_check_tick(e, out, now);
	if (!e->child_running && now >= e->child_start_at && fence_ok(&e->fence) &&
	    election_members_ok(e) && election_controls_allow_start(e))
		election_start_child(e, out, now);
}

void election_releasing_tick(struct election *e, struct election_output *out,
			   double now)
{
	/* the unlock got no answer: closing releases the lock too */
	if (now >= e->request_deadline)
		election_exit_now(e, out, now, e->exit_code);
}

/* A leader's next deadline: the next failed ping or the next ping, the
 * command when it may start, the members' answer. */
double election_leader_wakeup(const struct election *e, double now)
{
	double t = e->ping_pending ? e->ping_sent_at + e->p.ping_timeout +
		ping_failures_at(e, now) * e->p.ping_interval : e->next_ping_at;

	if (!e->child_running && fence_ok(&e->fence) && election_members_ok(e) &&
	    election_controls_allow_start(e))
		t = fmin(t, e->child_start_at);
	t = fmin(t, election_failsafe_check_wakeup(e));
	return t;
}

/* CONNECTING and STANDBY: the request in flight, or the next attempt. */
double election_request_wakeup(const struct election *e, double now)
{
	(void)now;
	return fmin(e->wait_deadline, isinf(e->request_deadline)
		    ? e->next_attempt_at : e->request_deadline);
}

double election_backoff_wakeup(const struct election *e, double now)
{
	(void)now;
	return fmin(e->wait_deadline, e->next_attempt_at);
}

double election_releasing_wakeup(const struct election *e, double now)
{
	(void)now;
	return e->request_deadline;
}
