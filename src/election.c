/* election.c: decides when to connect, ask for the lock, ping, run and stop. */
#include "election.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

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
}

const char *election_state_name(enum election_state s)
{
	switch (s) {
	case ELECTION_INIT: return "init";
	case ELECTION_CONNECTING: return "connecting";
	case ELECTION_STANDBY: return "standby";
	case ELECTION_LEADER: return "leader";
	case ELECTION_DEMOTING: return "demoting";
	case ELECTION_SHUTTING_DOWN: return "shutting down";
	case ELECTION_DONE: return "done";
	}
	return "?";
}

/* One log line per step is enough: when two things happen, the later,
 * more important one wins (errors are never overwritten by info). */
__attribute__((format(printf, 3, 4)))
static void say(struct election_output *out, enum log_level level,
		const char *fmt, ...)
{
	va_list ap;

	if (out->log_level && out->log_level < (int)level)
		return;
	out->log_level = (int)level;
	va_start(ap, fmt);
	vsnprintf(out->log, sizeof(out->log), fmt, ap);
	va_end(ap);
}

static void set_state(struct election *e, struct election_output *out,
		      enum election_state s)
{
	if (e->state != s)
		out->state_changed = true;
	e->state = s;
}

static void request(struct election *e, double now, double timeout)
{
	e->request_pending = true;
	e->request_deadline = now + timeout;
}

static void request_done(struct election *e)
{
	e->request_pending = false;
	e->request_deadline = INFINITY;
}

static void connect_now(struct election *e, struct election_output *out,
			double now)
{
	set_state(e, out, ELECTION_CONNECTING);
	e->connected = true;
	e->next_attempt_at = INFINITY;
	request(e, now, e->p.connect_timeout);
	out->actions |= ELECTION_DO_CONNECT;
}

/* The connection is gone or useless: close it and try again after the
 * backoff, which doubles up to retry_interval while the database is away. */
static void reconnect_later(struct election *e, struct election_output *out,
			    double now, const char *why)
{
	double delay = e->reconnect_backoff;

	if (e->connected)
		out->actions |= ELECTION_DO_DISCONNECT;
	e->connected = false;
	request_done(e);
	set_state(e, out, ELECTION_CONNECTING);
	e->next_attempt_at = now + delay;
	e->reconnect_backoff = fmin(delay * 2, fmax(e->p.retry_interval,
						     ELECTION_RECONNECT_MIN));
	say(out, LOG_LEVEL_WARNING, "%s; retrying in %.1fs", why, delay);
}

static void ask_for_lock(struct election *e, struct election_output *out,
			 double now)
{
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
	request(e, now, e->p.retry_interval + e->p.ping_timeout);
}

static void exit_now(struct election *e, struct election_output *out, int code)
{
	if (e->connected)
		out->actions |= ELECTION_DO_DISCONNECT;
	e->connected = false;
	request_done(e);
	e->exit_code = code;
	out->exit_code = code;
	out->actions |= ELECTION_DO_EXIT;
	set_state(e, out, ELECTION_DONE);
}

/* Shutting down: the command first, then the lock, then exit. Called again
 * on every event of the shutdown until nothing is left to wait for. */
static void finish(struct election *e, struct election_output *out, double now)
{
	set_state(e, out, ELECTION_SHUTTING_DOWN);
	e->child_start_at = INFINITY;
	e->next_attempt_at = INFINITY;
	e->next_ping_at = INFINITY;
	e->ping_pending = false;
	if (e->child_running) {
		out->actions |= ELECTION_DO_STOP_CHILD;
		return;
	}
	if (e->connected) {
		if (!e->request_pending) {
			out->actions |= ELECTION_DO_RELEASE;
			request(e, now, e->p.ping_timeout);
		}
		return;
	}
	exit_now(e, out, e->exit_code);
}

static void start_child(struct election *e, struct election_output *out,
			double now)
{
	e->child_start_at = INFINITY;
	e->child_running = true;
	e->child_started_at = now;
	out->actions |= ELECTION_DO_START_CHILD;
	out->state_changed = true; /* the status now shows the command's pid */
}

/* The lock may be gone: stop the command but keep the connection, doing
 * nothing with it, until the command is gone. If the server still counts us
 * as the holder, nobody else gets the lock while the old command lives. */
static void lose_lease(struct election *e, struct election_output *out,
		       double now, const char *why)
{
	e->ping_pending = false;
	e->next_ping_at = INFINITY;
	e->child_start_at = INFINITY;
	request_done(e);
	say(out, LOG_LEVEL_WARNING, "lost leader lease: %s", why);
	if (e->child_running) {
		set_state(e, out, ELECTION_DEMOTING);
		out->actions |= ELECTION_DO_STOP_CHILD;
	} else {
		if (e->connected)
			out->actions |= ELECTION_DO_DISCONNECT;
		e->connected = false;
		connect_now(e, out, now);
	}
}

static void become_leader(struct election *e, struct election_output *out,
			  double now, const char *what)
{
	request_done(e);
	set_state(e, out, ELECTION_LEADER);
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	e->restart_backoff = ELECTION_RESTART_MIN;
	e->wait_deadline = INFINITY;
	e->ping_pending = false;
	e->last_reply_at = now;
	e->next_ping_at = now + e->p.ping_interval;
	say(out, LOG_LEVEL_INFO, "acquired leader lease (%s)", what ? what : "");
	if (e->p.takeover_delay > 0)
		e->child_start_at = now + e->p.takeover_delay;
	else
		start_child(e, out, now);
}

static void child_gone(struct election *e, struct election_output *out,
		       double now, int status)
{
	double ran = now - e->child_started_at;
	double delay;

	e->child_running = false;
	switch (e->state) {
	case ELECTION_LEADER:
		if (e->p.restart == ELECTION_RESTART_NO ||
		    (e->p.restart == ELECTION_RESTART_ON_FAILURE && status == 0)) {
			e->exit_code = status;
			finish(e, out, now);
			return;
		}
		if (ran >= ELECTION_RESTART_RESET_AFTER)
			e->restart_backoff = ELECTION_RESTART_MIN;
		delay = e->restart_backoff;
		e->restart_backoff = fmin(delay * 2, ELECTION_RESTART_MAX);
		e->child_start_at = now + delay;
		out->state_changed = true;
		say(out, LOG_LEVEL_NOTICE, "restarting command in %.1fs", delay);
		return;
	case ELECTION_DEMOTING:
		if (e->connected)
			out->actions |= ELECTION_DO_DISCONNECT;
		e->connected = false;
		connect_now(e, out, now);
		return;
	case ELECTION_SHUTTING_DOWN:
		finish(e, out, now);
		return;
	default:
		return;
	}
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

static void check_deadlines(struct election *e, struct election_output *out,
			    double now)
{
	switch (e->state) {
	case ELECTION_CONNECTING:
	case ELECTION_STANDBY:
		if (now >= e->wait_deadline) {
			say(out, LOG_LEVEL_NOTICE,
			    "no leader lease after %.1fs of waiting; giving up",
			    e->p.wait_timeout);
			exit_now(e, out, e->p.conflict_exit_code);
			return;
		}
		if (e->request_pending && now >= e->request_deadline) {
			/* Outcome unknown: a lock request may yet be granted,
			 * so this connection is never reused. */
			reconnect_later(e, out, now, e->state == ELECTION_STANDBY
					? "lock request got no answer in time"
					: "connection attempt timed out");
			return;
		}
		if (!e->request_pending && now >= e->next_attempt_at) {
			if (e->state == ELECTION_CONNECTING)
				connect_now(e, out, now);
			else
				ask_for_lock(e, out, now);
		}
		return;
	case ELECTION_LEADER: {
		int failures = ping_failures_at(e, now);

		if (failures >= e->p.ping_failures) {
			char why[128];

			snprintf(why, sizeof(why),
				 "ping timed out %d times (last reply %.1fs ago)",
				 failures, now - e->last_reply_at);
			lose_lease(e, out, now, why);
			return;
		}
		if (!e->ping_pending && now >= e->next_ping_at) {
			e->ping_pending = true;
			/* deadlines run from when it was due, however late the loop */
			e->ping_sent_at = e->next_ping_at;
			out->actions |= ELECTION_DO_PING;
		}
		if (!e->child_running && now >= e->child_start_at)
			start_child(e, out, now);
		return;
	}
	case ELECTION_SHUTTING_DOWN:
		/* the unlock got no answer: closing releases the lock too */
		if (e->request_pending && now >= e->request_deadline)
			exit_now(e, out, e->exit_code);
		return;
	default:
		return;
	}
}

void election_step(struct election *e, const struct election_event *ev,
		   double now, struct election_output *out)
{
	memset(out, 0, sizeof(*out));
	if (e->state == ELECTION_DONE)
		return;

	switch (ev->type) {
	case ELECTION_START:
		if (e->state != ELECTION_INIT)
			break;
		if (e->p.wait_timeout >= 0)
			e->wait_deadline = now + e->p.wait_timeout;
		connect_now(e, out, now);
		break;
	case ELECTION_TICK:
		break;
	case ELECTION_CONNECTED:
		/* only the answer to the connect in flight counts */
		if (e->state != ELECTION_CONNECTING || !e->request_pending)
			break;
		request_done(e);
		e->reconnect_backoff = ELECTION_RECONNECT_MIN;
		e->lock_tried = false;
		e->waiting_logged = false;
		set_state(e, out, ELECTION_STANDBY);
		ask_for_lock(e, out, now);
		break;
	case ELECTION_CONNECT_FAILED:
		if (e->state != ELECTION_CONNECTING)
			break;
		e->connected = false; /* the lease closed it */
		reconnect_later(e, out, now, ev->reason ? ev->reason
				: "database connection failed");
		break;
	case ELECTION_LOCK_ACQUIRED:
		if (e->state == ELECTION_STANDBY)
			become_leader(e, out, now, ev->reason);
		break;
	case ELECTION_LOCK_BUSY:
		if (e->state != ELECTION_STANDBY)
			break;
		request_done(e);
		if (e->p.nonblock) {
			say(out, LOG_LEVEL_NOTICE,
			    "leader lease is held by another node; giving up");
			exit_now(e, out, e->p.conflict_exit_code);
			return;
		}
		if (!e->waiting_logged) {
			say(out, LOG_LEVEL_INFO, "waiting for leader lease");
			e->waiting_logged = true;
			out->state_changed = true;
		}
		if (e->p.wait_in_queue)
			ask_for_lock(e, out, now);
		else
			e->next_attempt_at = now + e->p.retry_interval;
		break;
	case ELECTION_PING_OK:
		if (e->state != ELECTION_LEADER || !e->ping_pending)
			break;
		e->ping_pending = false;
		e->last_reply_at = now;
		e->next_ping_at = fmax(now, e->ping_sent_at + e->p.ping_interval);
		break;
	case ELECTION_CONN_LOST: {
		const char *why = ev->reason ? ev->reason : "connection lost";

		e->connected = false; /* the lease closed it */
		if (e->state == ELECTION_LEADER)
			lose_lease(e, out, now, why);
		else if (e->state == ELECTION_CONNECTING ||
			 e->state == ELECTION_STANDBY)
			reconnect_later(e, out, now, why);
		else if (e->state == ELECTION_SHUTTING_DOWN && !e->child_running)
			exit_now(e, out, e->exit_code);
		break;
	}
	case ELECTION_FATAL:
		say(out, LOG_LEVEL_ERROR, "%s", ev->reason ? ev->reason : "fatal error");
		if (e->state == ELECTION_SHUTTING_DOWN && e->exit_code != 0)
			break;
		e->exit_code = ev->code;
		if (e->state == ELECTION_CONNECTING && !e->child_running) {
			exit_now(e, out, ev->code);
			return;
		}
		request_done(e);
		finish(e, out, now);
		break;
	case ELECTION_CHILD_GONE:
		if (e->child_running)
			child_gone(e, out, now, ev->code);
		break;
	case ELECTION_RELEASED:
		e->connected = false;
		if (e->state == ELECTION_SHUTTING_DOWN && !e->child_running)
			exit_now(e, out, e->exit_code);
		break;
	case ELECTION_SHUTDOWN:
		if (e->state == ELECTION_SHUTTING_DOWN) {
			if (e->child_running) {
				say(out, LOG_LEVEL_NOTICE,
				    "received %s again: killing the command now",
				    ev->reason ? ev->reason : "signal");
				out->actions |= ELECTION_DO_KILL_CHILD;
			}
			break;
		}
		say(out, LOG_LEVEL_INFO, "received %s, shutting down",
		    ev->reason ? ev->reason : "signal");
		e->exit_code = 0;
		/* An unanswered lock or connect request leaves the lock state
		 * unknown: close the connection instead of unlocking. */
		if (e->request_pending && e->state != ELECTION_LEADER &&
		    e->state != ELECTION_DEMOTING) {
			exit_now(e, out, 0);
			return;
		}
		request_done(e);
		finish(e, out, now);
		break;
	}
	if (e->state != ELECTION_DONE)
		check_deadlines(e, out, now);
}

double election_next_wakeup(const struct election *e, double now)
{
	double t = INFINITY;

	switch (e->state) {
	case ELECTION_CONNECTING:
	case ELECTION_STANDBY:
		t = fmin(e->wait_deadline,
			 e->request_pending ? e->request_deadline : e->next_attempt_at);
		break;
	case ELECTION_LEADER:
		/* the deadline of the next failed ping, or the next ping */
		t = e->ping_pending ? e->ping_sent_at + e->p.ping_timeout +
			ping_failures_at(e, now) * e->p.ping_interval
				    : e->next_ping_at;
		t = fmin(t, e->child_start_at);
		break;
	case ELECTION_SHUTTING_DOWN:
		if (e->request_pending)
			t = e->request_deadline;
		break;
	default:
		break;
	}
	return t;
}
