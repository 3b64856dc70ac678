/* test_election.c: every transition and timing rule of the election, on a fake clock. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_params.h"
#include "election_impl.h" /* the machine's state, for white-box checks */
#include "log.h"

/* A bit less than any step of the tests' clocks: "just before a deadline".
 * Times in the tests are sums of halves and quarters, exact in a double, so
 * a deadline the machine computes equals the one the test computes. */
#define JUST 0.0009765625 /* 1/1024 */

/* The daemon's parameters over its default configuration (daemon_cfg:
 * retry_interval 5s, ping_interval 1s, ping_timeout 2s, ping_failures 3,
 * grace_period 8s, restart no, restart_limit 5, acquire wait, priority 1),
 * with connect_timeout 10s; built in main(). A test that needs another
 * value sets it in a copy of daemon_cfg and builds its own with
 * daemon_params(). */
static struct election_params defaults;

/* Seconds, as the configuration holds them (milliseconds). */
#define MS(seconds) ((int64_t)llround((seconds) * 1000))

static struct election M; /* the machine under test */

/* ---- helpers ---------------------------------------------------------- */

/* The tests name events as they were before faults were classified and
 * events grouped by where they come from: step() turns each name into the
 * event it is now. CONNECT_FAILED and CONN_LOST are a lock session FAILED
 * with a transient fault, FATAL one with the permanent fault its code stood
 * for. */
enum {
	ELECTION_CONNECTED = 100, ELECTION_CONNECT_FAILED, ELECTION_LOCK_ACQUIRED,
	ELECTION_LOCK_BUSY, ELECTION_PING_OK, ELECTION_CONN_LOST, ELECTION_FATAL,
	ELECTION_RELEASED, ELECTION_CHILD_STARTED, ELECTION_CHILD_START_FAILED,
	ELECTION_CHILD_KILLED, ELECTION_CHILD_GONE, FENCE_CONNECTED, FENCE_ACQUIRED,
	FENCE_BUSY, FENCE_FAILED, FENCE_RELEASED, CONTROLS_ANSWERED, CONTROLS_FAILED,
	ELECTION_LOCK_GRANTED,
};

static const struct {
	int name;
	enum election_event_type type;
	int news;
} event_names[] = {
	{ ELECTION_CONNECTED, ELECTION_LOCK, ELECTION_SESSION_CONNECTED },
	{ ELECTION_CONNECT_FAILED, ELECTION_LOCK, ELECTION_SESSION_FAILED },
	{ ELECTION_LOCK_ACQUIRED, ELECTION_LOCK, ELECTION_SESSION_ACQUIRED },
	{ ELECTION_LOCK_GRANTED, ELECTION_LOCK, ELECTION_SESSION_GRANTED },
	{ ELECTION_LOCK_BUSY, ELECTION_LOCK, ELECTION_SESSION_BUSY },
	{ ELECTION_PING_OK, ELECTION_LOCK, ELECTION_SESSION_PING_OK },
	{ ELECTION_CONN_LOST, ELECTION_LOCK, ELECTION_SESSION_FAILED },
	{ ELECTION_FATAL, ELECTION_LOCK, ELECTION_SESSION_FAILED },
	{ ELECTION_RELEASED, ELECTION_LOCK, ELECTION_SESSION_RELEASED },
	{ ELECTION_CHILD_STARTED, ELECTION_COMMAND, ELECTION_COMMAND_STARTED },
	{ ELECTION_CHILD_START_FAILED, ELECTION_COMMAND, ELECTION_COMMAND_START_FAILED },
	{ ELECTION_CHILD_KILLED, ELECTION_COMMAND, ELECTION_COMMAND_KILLED },
	{ ELECTION_CHILD_GONE, ELECTION_COMMAND, ELECTION_COMMAND_GONE },
	{ FENCE_CONNECTED, ELECTION_FENCE, ELECTION_SESSION_CONNECTED },
	{ FENCE_ACQUIRED, ELECTION_FENCE, ELECTION_SESSION_ACQUIRED },
	{ FENCE_BUSY, ELECTION_FENCE, ELECTION_SESSION_BUSY },
	{ FENCE_FAILED, ELECTION_FENCE, ELECTION_SESSION_FAILED },
	{ FENCE_RELEASED, ELECTION_FENCE, ELECTION_SESSION_RELEASED },
	{ CONTROLS_ANSWERED, ELECTION_CONTROLS, ELECTION_CONTROLS_READ },
	{ CONTROLS_FAILED, ELECTION_CONTROLS, ELECTION_CONTROLS_FAILED },
};

/* The news of an event of this type, in its payload. */
static void set_news(struct election_event *ev, enum election_event_type type,
		     int news)
{
	ev->type = type;
	if (type == ELECTION_COMMAND)
		ev->command.news = (enum election_command_news)news;
	else if (type == ELECTION_CONTROLS)
		ev->controls.news = (enum election_controls_news)news;
	else if (type == ELECTION_PEERS)
		ev->peers.news = (enum election_peer_news)news;
	else
		ev->session.news = (enum election_session_news)news;
}

static void name_event(int name, struct election_event *ev)
{
	ev->type = (enum election_event_type)name;
	for (size_t i = 0; i < sizeof(event_names) / sizeof(event_names[0]); i++)
		if (event_names[i].name == name)
			set_news(ev, event_names[i].type, event_names[i].news);
}

static enum fault fatal_fault(int code)
{
	return code == 69 ? FAULT_AUTH : FAULT_POOLER;
}

/* The database answers the fence session and the operator controls at
 * once, as a healthy one does: step() feeds the answer to each request
 * back to the machine in the same instant, and adds what the answers led
 * to (actions, lines) to the step's output. A test that plays the fence
 * session itself turns answer_fence off; one that plays the controls,
 * answer_controls. Both are on at the start of every test (new_case). */
static bool answer_fence = true, answer_controls = true;
static const struct election_controls nothing_in_force = { .readable = true };

/* Adds what an answer led to to the output of the step that asked. */
static void merge(struct election_output *out, const struct election_output *more)
{
	out->actions |= more->actions;
	if (more->actions & ELECTION_DO_EXIT)
		out->exit_code = more->exit_code;
	out->state_changed |= more->state_changed;
	out->stopping |= more->stopping;
	for (int i = 0; i < more->n_logs && out->n_logs < ELECTION_MAX_LOGS; i++)
		out->logs[out->n_logs++] = more->logs[i];
}

/* The answer to one request of `asked`, or false when the world gives
 * none: the fence session's, the controls', a started command's pid. */
static bool answer(unsigned asked, struct election_event *ev)
{
	static const struct { unsigned action; enum election_event_type type; int news; }
	answers[] = {
		{ ELECTION_DO_FENCE_CONNECT, ELECTION_FENCE, ELECTION_SESSION_CONNECTED },
		{ ELECTION_DO_FENCE_TAKE, ELECTION_FENCE, ELECTION_SESSION_ACQUIRED },
		{ ELECTION_DO_FENCE_TRY, ELECTION_FENCE, ELECTION_SESSION_ACQUIRED },
		{ ELECTION_DO_FENCE_DROP, ELECTION_FENCE, ELECTION_SESSION_RELEASED },
		{ ELECTION_DO_CONTROLS_READ, ELECTION_CONTROLS, ELECTION_CONTROLS_READ },
		{ ELECTION_DO_LOCK_CONTROLS_READ, ELECTION_CONTROLS, ELECTION_CONTROLS_READ },
		{ ELECTION_DO_START_CHILD, ELECTION_COMMAND, ELECTION_COMMAND_STARTED },
	};

	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		if (!(asked & answers[i].action) ||
		    (answers[i].type == ELECTION_FENCE && !answer_fence) ||
		    (answers[i].type == ELECTION_CONTROLS && !answer_controls))
			continue;
		*ev = (struct election_event){ .type = answers[i].type };
		set_news(ev, answers[i].type, answers[i].news);
		if (ev->type == ELECTION_CONTROLS)
			ev->controls.in_force = &nothing_in_force;
		if (ev->type == ELECTION_COMMAND)
			ev->command.pid = 4242;
		return true;
	}
	return false;
}

/* Answers the requests of out, in the order the supervisor carries them
 * out (the fence's before the controls read, which waits behind it on
 * the fence session), and those the answers lead to. */
static void answer_all(struct election *e, struct election_output *out, double now)
{
	unsigned asked = out->actions;
	struct election_event ev;

	for (int guard = 0; guard < 20; guard++) {
		struct election_output more;
		unsigned one = 0;

		for (size_t i = 0; i < ELECTION_ACTION_COUNT && !one; i++)
			if ((asked & election_actions[i].action) &&
			    answer(election_actions[i].action, &ev))
				one = election_actions[i].action;
		if (!one)
			return;
		asked &= ~one;
		ev.wall = now + 1.7e9;
		election_step(e, &ev, now, &more);
		if (ev.type == ELECTION_COMMAND)
			ck_assert_int_eq(more.actions, 0);
		merge(out, &more);
		asked |= more.actions;
	}
	ck_abort_msg("the answers go on asking");
}

/* One event, at now, and the answers to what it asks for. */
static struct election_output deliver(struct election *e, struct election_event ev,
				      double now)
{
	struct election_output out;

	ev.wall = now + 1.7e9;
	memset(&out, 0xa5, sizeof(out)); /* the machine must clear it */
	election_step(e, &ev, now, &out);
	answer_all(e, &out, now);
	return out;
}

static struct election_output step(struct election *e, int type, int code,
				   const char *reason, double now)
{
	struct election_event ev = { .reason = reason, .wall = now + 1.7e9 };
	struct election_output out;
	long long key;
	unsigned long long token;
	int lock_pid = 0;

	name_event(type, &ev);
	if (ev.type == ELECTION_COMMAND) {
		ev.command.status = code;
		ev.command.pid = code;
	} else if (ev.type == ELECTION_CONTROLS) {
		ev.controls.in_force = &nothing_in_force; /* CONTROLS_ANSWERED */
	}
	if (type == ELECTION_CONNECT_FAILED || type == ELECTION_CONN_LOST ||
	    type == FENCE_FAILED)
		ev.session.fault = FAULT_CONNECTION;
	else if (type == ELECTION_FATAL)
		ev.session.fault = fatal_fault(code);
	else if (type == ELECTION_LOCK_ACQUIRED && reason &&
		 sscanf(reason, "key %lld, fencing token %llu, lock pid %d", &key,
			&token, &lock_pid) >= 2) {
		ev.session.lock_key = key;
		ev.session.fencing_token = token;
		ev.session.lock_pid = lock_pid;
	}
	memset(&out, 0xa5, sizeof(out)); /* the machine must clear it */
	election_step(e, &ev, now, &out);
	answer_all(e, &out, now);
	return out;
}

/* The line at this level, or NULL: a step may say several things. */
static const char *log_at(const struct election_output *out, int level)
{
	for (int i = 0; i < out->n_logs; i++)
		if ((int)out->logs[i].level == level)
			return out->logs[i].text;
	return NULL;
}

static struct election_output tick(struct election *e, double now)
{
	return step(e, ELECTION_TICK, 0, NULL, now);
}

static const char *bits(unsigned a, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ELECTION_ACTION_COUNT; i++)
		if (a & election_actions[i].action)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "",
					      election_actions[i].name);
	if (!n)
		snprintf(buf, len, "none");
	return buf;
}

#define ck_actions(out, want) do { \
	unsigned a_ = (out).actions, w_ = (want); \
	char ab_[200], wb_[200]; \
	ck_assert_msg(a_ == w_, "actions %s, want %s", bits(a_, ab_, sizeof(ab_)), \
		      bits(w_, wb_, sizeof(wb_))); \
} while (0)

#define ck_state(e, s) ck_assert_msg((e)->state == (s), "state %s, want %s", \
	election_state_name((e)->state), election_state_name(s))

/* out is evaluated once: it may be a step() */
#define ck_exit(out, e, code) do { \
	struct election_output x_ = (out); \
	ck_assert_msg(x_.actions & ELECTION_DO_EXIT, "no EXIT"); \
	ck_assert_int_eq(x_.exit_code, (code)); \
	ck_state((e), ELECTION_DONE); \
} while (0)

#define ck_log(out, level, text) do { \
	const struct election_output *l_ = &(out); \
	const char *t_ = log_at(l_, (level)); \
	ck_assert_msg(t_ != NULL, "no log at level %d (%d lines)", (level), l_->n_logs); \
	ck_assert_str_eq(t_, (text)); \
} while (0)

#define ck_no_log(out) ck_assert_msg((out).n_logs == 0, "unexpected log: %s", \
				     (out).logs[0].text)

#define ck_log_prefix(out, level, prefix) do { \
	const char *t_ = log_at(&(out), (level)); \
	ck_assert_msg(t_ != NULL, "no log at level %d", (level)); \
	ck_assert_msg(!strncmp(t_, (prefix), strlen(prefix)), \
		      "log \"%s\" does not start with \"%s\"", t_, (prefix)); \
} while (0)

#define ck_wakeup(e, now, want) \
	ck_assert_double_eq_tol(election_next_wakeup((e), (now)), (want), 1e-9)

/* What the machine asks for with the lock session: START opens the fence
 * session beside it; a standby reads the controls when it connects, and
 * every retry_interval; a new leader takes the fence and reads the
 * controls before its command starts (all answered at once by step()). */
#define OPEN_BOTH (ELECTION_DO_CONNECT | ELECTION_DO_FENCE_CONNECT)
#define STANDBY_READ (ELECTION_DO_TRY_LOCK | ELECTION_DO_CONTROLS_READ)
#define LEAD_FIRST (ELECTION_DO_FENCE_TAKE | ELECTION_DO_CONTROLS_READ)
/* A leader pings both sessions and reads the controls every ping_interval. */
#define LEADER_PING (ELECTION_DO_PING | ELECTION_DO_FENCE_PING | ELECTION_DO_CONTROLS_READ)

/* From now on the world answers nothing by itself: the database went
 * silent (the test answers the pings it wants answered); a read of the
 * controls in flight stays in flight. */
static void world_silent(void)
{
	answer_fence = answer_controls = false;
}

/* The world answers again (for the next machine a test starts). */
static void world_answers(void)
{
	answer_fence = answer_controls = true;
}

/* START at t, CONNECTED at t: standby, TRY_LOCK in flight, the fence
 * session ready and the controls read. */
static void to_standby(struct election *e, const struct election_params *p, double t)
{
	struct election_output out;

	election_init(e, p);
	out = step(e, ELECTION_START, 0, NULL, t);
	ck_actions(out, OPEN_BOTH);
	out = step(e, ELECTION_CONNECTED, 0, NULL, t);
	ck_actions(out, STANDBY_READ);
	ck_state(e, ELECTION_STANDBY);
}

/* Leader from time t: the fence taken and the controls read, then the
 * command started, unless a takeover delay is set. */
static void to_leader(struct election *e, const struct election_params *p, double t)
{
	struct election_output out;

	to_standby(e, p, t);
	out = step(e, ELECTION_LOCK_ACQUIRED, 0, "key 42, fencing token 7", t);
	ck_actions(out, p->takeover_delay > 0 ? (unsigned)LEAD_FIRST
		   : LEAD_FIRST | ELECTION_DO_START_CHILD);
	ck_state(e, ELECTION_LEADER);
	ck_assert(e->fence.state == ELECTION_FENCE_HELD && e->ctl_fresh);
}

/* A healthy leader from *t to until: a TICK at every wakeup, every ping
 * answered at once. Records when the command was started; fails on any
 * other action. Returns the number of starts. */
static int lead_until(struct election *e, double *t, double until,
		      double *starts, int max_starts)
{
	int n = 0;

	for (int guard = 0; guard < 100000; guard++) {
		double w = election_next_wakeup(e, *t);
		struct election_output out;

		if (w > until)
			break;
		*t = w;
		out = tick(e, *t);
		ck_assert_msg(!(out.actions & ~(unsigned)(LEADER_PING |
							  ELECTION_DO_START_CHILD)),
			      "unexpected actions %#x at %g", out.actions, *t);
		if (out.actions & ELECTION_DO_START_CHILD) {
			ck_assert_int_lt(n, max_starts);
			starts[n++] = *t;
		}
		if (out.actions & ELECTION_DO_PING) {
			out = step(e, ELECTION_PING_OK, 0, NULL, *t);
			ck_actions(out, 0);
		}
		ck_state(e, ELECTION_LEADER);
	}
	*t = until;
	return n;
}

/* ---- connecting ------------------------------------------------------- */

START_TEST(test_init)
{
	election_init(&M, &defaults);
	ck_state(&M, ELECTION_INIT);
	ck_assert(isinf(election_next_wakeup(&M, 0)));
	ck_assert(!M.connected && !M.child_running);
}
END_TEST

START_TEST(test_start_connects)
{
	struct election_output out;

	election_init(&M, &defaults);
	out = step(&M, ELECTION_START, 0, NULL, 100);
	ck_actions(out, OPEN_BOTH);
	ck_state(&M, ELECTION_CONNECTING);
	ck_assert(out.state_changed);
	ck_no_log(out);
	/* the connect attempt is bounded by connect_timeout */
	ck_wakeup(&M, 100, 110);
	/* a second START changes nothing */
	out = step(&M, ELECTION_START, 0, NULL, 101);
	ck_actions(out, 0);
	ck_assert(!out.state_changed);
	ck_wakeup(&M, 101, 110);
}
END_TEST

/* Reconnect delays after consecutive failures: 0.5 s doubling, capped at
 * retry_interval (but never below the 0.5 s minimum). */
static const struct {
	double retry_interval;
	double delays[8];
	int n;
} backoff_rows[] = {
	{ 5, { 0.5, 1, 2, 4, 5, 5, 5 }, 7 },
	{ 1.5, { 0.5, 1, 1.5, 1.5 }, 4 },
	{ 1, { 0.5, 1, 1, 1 }, 4 },
	{ 0.25, { 0.5, 0.5, 0.5 }, 3 },
	{ 60, { 0.5, 1, 2, 4, 8, 16, 32, 60 }, 8 },
};

START_TEST(test_connect_backoff)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double t = 0;
	char want[128];

	c.retry_interval_ms = MS(backoff_rows[_i].retry_interval);
	p = daemon_params(&c);
	election_init(&M, &p);
	ck_actions(step(&M, ELECTION_START, 0, NULL, t), OPEN_BOTH);
	for (int k = 0; k < backoff_rows[_i].n; k++) {
		double d = backoff_rows[_i].delays[k];

		t += 0.25;
		out = step(&M, ELECTION_CONNECT_FAILED, 0, "connection refused", t);
		/* the lease closed the connection itself: no DISCONNECT */
		ck_actions(out, 0);
		ck_state(&M, ELECTION_BACKOFF);
		snprintf(want, sizeof(want), "connection refused; retrying in %.1fs", d);
		ck_log(out, LOG_LEVEL_WARNING, want);
		ck_wakeup(&M, t, t + d);
		ck_actions(tick(&M, t + d / 2), 0);
		ck_actions(tick(&M, t + d - JUST), 0);
		ck_state(&M, ELECTION_BACKOFF);
		t += d;
		out = tick(&M, t);
		ck_actions(out, ELECTION_DO_CONNECT);
		ck_no_log(out);
		ck_wakeup(&M, t, t + p.connect_timeout);
	}
}
END_TEST

START_TEST(test_connect_failed_default_reason)
{
	struct election_output out;

	election_init(&M, &defaults);
	step(&M, ELECTION_START, 0, NULL, 0);
	out = step(&M, ELECTION_CONNECT_FAILED, 0, NULL, 1);
	ck_log(out, LOG_LEVEL_WARNING, "database connection failed; retrying in 0.5s");
}
END_TEST

START_TEST(test_backoff_reset_after_connect)
{
	struct election_output out;
	double t = 0;

	election_init(&M, &defaults);
	step(&M, ELECTION_START, 0, NULL, t);
	for (int k = 0; k < 4; k++) { /* 0.5, 1, 2, 4 */
		out = step(&M, ELECTION_CONNECT_FAILED, 0, "down", t);
		t = election_next_wakeup(&M, t);
		ck_actions(tick(&M, t), ELECTION_DO_CONNECT);
	}
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, t), STANDBY_READ);
	/* a connection that worked starts the backoff again from 0.5 s (a
	 * lost session that looks like no restart: the lock request's answer
	 * never came) */
	out = tick(&M, t + 7);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_BACKOFF);
	ck_log(out, LOG_LEVEL_WARNING, "lock request got no answer in time; retrying in 0.5s");
	ck_wakeup(&M, t + 7, t + 7.5);
	ck_actions(tick(&M, t + 7.5), ELECTION_DO_CONNECT);
}
END_TEST

START_TEST(test_connect_timeout)
{
	struct election_output out;

	election_init(&M, &defaults);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 0), OPEN_BOTH);
	ck_actions(tick(&M, 5), 0);
	ck_actions(tick(&M, 10 - JUST), 0);
	/* the connection being opened is closed, then retried after backoff */
	out = tick(&M, 10);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_BACKOFF);
	ck_log(out, LOG_LEVEL_WARNING, "connection attempt timed out; retrying in 0.5s");
	ck_wakeup(&M, 10, 10.5);
	ck_actions(tick(&M, 10.5 - JUST), 0);
	ck_actions(tick(&M, 10.5), ELECTION_DO_CONNECT);
	ck_wakeup(&M, 10.5, 20.5);
	out = tick(&M, 20.5);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_log(out, LOG_LEVEL_WARNING, "connection attempt timed out; retrying in 1.0s");
	ck_actions(tick(&M, 21.5 - JUST), 0);
	ck_actions(tick(&M, 21.5), ELECTION_DO_CONNECT);
}
END_TEST

START_TEST(test_connected_tries_lock_first)
{
	struct election_output out;

	for (int wait = 0; wait <= 1; wait++) {
		struct config c = daemon_cfg;
		struct election_params p = defaults;

		c.acquire = wait ? ACQUIRE_WAIT : ACQUIRE_POLL;
		p = daemon_params(&c);
		election_init(&M, &p);
		step(&M, ELECTION_START, 0, NULL, 0);
		out = step(&M, ELECTION_CONNECTED, 0, NULL, 0.25);
		ck_actions(out, STANDBY_READ);
		ck_state(&M, ELECTION_STANDBY);
		ck_assert(out.state_changed);
		ck_no_log(out);
		/* the next controls read after retry_interval, then
		 * retry_interval + ping_timeout for the answer */
		ck_wakeup(&M, 0.25, 5.25);
		ck_actions(tick(&M, 5.25), ELECTION_DO_CONTROLS_READ);
		ck_wakeup(&M, 5.25, 7.25);
	}
}
END_TEST

START_TEST(test_standby_conn_lost_reconnects)
{
	struct election_output out;

	to_standby(&M, &defaults, 0);
	out = step(&M, ELECTION_CONN_LOST, 0, "server closed the connection", 1);
	ck_actions(out, 0); /* already gone: nothing to close */
	ck_state(&M, ELECTION_BACKOFF);
	/* a working session lost: the database may be restarting */
	ck_log(out, LOG_LEVEL_WARNING, "server closed the connection; retrying every "
	       "0.1s for up to 15s (the database may be restarting)");
	ck_actions(tick(&M, 1.15 - JUST), 0);
	ck_actions(tick(&M, 1.15), ELECTION_DO_CONNECT);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 1.25), ELECTION_DO_TRY_LOCK);
}
END_TEST

/* ---- the reconnect cadence after a restart ---------------------------- */

/* A lock session's news with this fault and this jitter. */
static struct election_output lost(struct election *e, enum fault f,
				   double jitter, const char *reason, double now)
{
	struct election_event ev = { .type = ELECTION_LOCK,
		.session = { .news = ELECTION_SESSION_FAILED, .fault = f },
		.jitter = jitter, .reason = reason, .wall = now + 1.7e9 };
	struct election_output out;

	election_step(e, &ev, now, &out);
	return out;
}

/* After a working standby session ends: every 0.15 s (0.1 s, jitter 0: the
 * longest) while the server refuses, starts, stops or is read-only, for
 * ELECTION_RESTART_WINDOW; one warning, the rest at debug; then the usual
 * backoff from 0.5 s. */
static const enum fault restart_faults[] = {
	FAULT_UNREACHABLE, FAULT_HOT_STANDBY, FAULT_TERMINATED, FAULT_CONNECTION,
};

START_TEST(test_restart_cadence)
{
	struct election_output out;
	double t = 1, last = 0;
	int tries = 0;

	to_standby(&M, &defaults, 0);
	out = lost(&M, FAULT_TERMINATED, 0, "terminated", t);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "terminated; retrying every 0.1s");
	for (;;) {
		t = election_next_wakeup(&M, t);
		ck_actions(tick(&M, t), ELECTION_DO_CONNECT);
		out = lost(&M, restart_faults[_i], 0, "starting up", t);
		ck_state(&M, ELECTION_BACKOFF);
		if (election_next_wakeup(&M, t) - t > 0.2)
			break;
		ck_assert_double_eq_tol(election_next_wakeup(&M, t) - t, 0.15, 1e-9);
		ck_assert_ptr_null(log_at(&out, LOG_LEVEL_WARNING));
		ck_log(out, LOG_LEVEL_DEBUG, "starting up; retrying in 0.15s");
		last = t;
		tries++;
	}
	/* the window is 15 s from the loss: the first try after it backs off */
	ck_assert_double_le(last, 1 + ELECTION_RESTART_WINDOW);
	ck_assert_double_ge(t, 1 + ELECTION_RESTART_WINDOW);
	ck_assert_int_ge(tries, 95);
	ck_log(out, LOG_LEVEL_WARNING, "starting up; retrying in 0.5s");
	for (int k = 0; k < 4; k++) { /* 1, 2, 4, 5: the backoff goes on */
		static const double want[] = { 1, 2, 4, 5 };

		t = election_next_wakeup(&M, t);
		ck_actions(tick(&M, t), ELECTION_DO_CONNECT);
		lost(&M, restart_faults[_i], 0, "starting up", t);
		ck_assert_double_eq_tol(election_next_wakeup(&M, t) - t, want[k], 1e-9);
	}
}
END_TEST

/* Inside the window, a silent host or a protocol error is no restart: the
 * backoff (a connect attempt that timed out already waited for it). */
START_TEST(test_restart_cadence_not_for_timeouts)
{
	struct election_output out;

	to_standby(&M, &defaults, 0);
	lost(&M, FAULT_CONNECTION, 0, "closed", 1);
	ck_actions(tick(&M, 1.15), ELECTION_DO_CONNECT);
	out = tick(&M, 1.15 + defaults.connect_timeout);
	ck_log(out, LOG_LEVEL_WARNING, "connection attempt timed out; retrying in 0.5s");
	ck_actions(tick(&M, 11.65), ELECTION_DO_CONNECT);
	out = lost(&M, FAULT_PROTOCOL, 0, "odd answer", 11.75);
	ck_log(out, LOG_LEVEL_WARNING, "odd answer; retrying in 1.0s");
	/* still inside the window: a refusal is fast again */
	ck_actions(tick(&M, 12.75), ELECTION_DO_CONNECT);
	lost(&M, FAULT_UNREACHABLE, 0, "refused", 12.75);
	ck_wakeup(&M, 12.75, 12.9);
}
END_TEST

/* No working session yet (pgleader starting while the database is down),
 * or one lost to a ping timeout (a partition, not a restart): the backoff. */
START_TEST(test_restart_cadence_needs_a_restart)
{
	struct election_params p = defaults;
	struct election_output out;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	out = lost(&M, FAULT_UNREACHABLE, 0, "refused", 0.25);
	ck_log(out, LOG_LEVEL_WARNING, "refused; retrying in 0.5s");

	to_leader(&M, &p, 0);
	out = tick(&M, 5); /* pings due at 1, 2, 3 unanswered: lost at 5 */
	ck_state(&M, ELECTION_DEMOTING);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 0, NULL, 5.25), ELECTION_DO_DISCONNECT |
		   ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	out = lost(&M, FAULT_UNREACHABLE, 0, "refused", 5.5);
	ck_log(out, LOG_LEVEL_WARNING, "refused; retrying in 0.5s");
}
END_TEST

/* A leader whose session the restart ended stops its command, reconnects
 * at once, and then retries fast. */
START_TEST(test_restart_cadence_leader)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	out = lost(&M, FAULT_TERMINATED, 0, "terminated", 2);
	ck_state(&M, ELECTION_DEMOTING);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 0, NULL, 2.25),
		   ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	out = lost(&M, FAULT_UNREACHABLE, 0, "refused", 2.5);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "refused; retrying every 0.1s");
	ck_wakeup(&M, 2.5, 2.65);
}
END_TEST

/* The jitter the supervisor draws: the fast step spread over [0.05, 0.15),
 * the backoff's full jitter over (0, cap], never below 0.1 s; the cap
 * doubles whatever was drawn. An out-of-range draw counts as 0. */
static const struct {
	double jitter;
	double fast;
	double backoff[4];
} jitter_rows[] = {
	{ 0, 0.15, { 0.5, 1, 2, 4 } },
	{ 0.5, 0.1, { 0.25, 0.5, 1, 2 } },
	{ 0.75, 0.075, { 0.125, 0.25, 0.5, 1 } },
	{ 0.96875, 0.053125, { 0.1, 0.1, 0.1, 0.125 } },
	{ -1, 0.15, { 0.5, 1, 2, 4 } },
	{ NAN, 0.15, { 0.5, 1, 2, 4 } },
};

START_TEST(test_reconnect_jitter)
{
	double j = jitter_rows[_i].jitter, t = 0.25;

	to_standby(&M, &defaults, 0);
	lost(&M, FAULT_CONNECTION, j, "closed", t);
	ck_assert_double_eq_tol(election_next_wakeup(&M, t) - t, jitter_rows[_i].fast, 1e-9);

	election_init(&M, &defaults);
	step(&M, ELECTION_START, 0, NULL, 0);
	for (int k = 0; k < 4; k++) {
		lost(&M, FAULT_UNREACHABLE, j, "refused", t);
		ck_assert_double_eq_tol(election_next_wakeup(&M, t) - t,
					jitter_rows[_i].backoff[k], 1e-9);
		t = election_next_wakeup(&M, t);
		ck_actions(tick(&M, t), ELECTION_DO_CONNECT);
	}
}
END_TEST

/* ---- standby ---------------------------------------------------------- */

START_TEST(test_wait_mode_busy)
{
	struct election_output out;
	double t = 0.25;

	to_standby(&M, &defaults, 0);
	out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, t);
	/* queue for the lock at once */
	ck_actions(out, ELECTION_DO_WAIT_LOCK);
	ck_state(&M, ELECTION_STANDBY);
	ck_log(out, LOG_LEVEL_INFO, "waiting for leader lease");
	ck_assert(out.state_changed); /* the status line changes */
	/* the controls read every retry_interval comes before the request
	 * deadline */
	ck_wakeup(&M, t, 5);
	ck_assert_double_eq(M.request_deadline, t + 7);
	/* lock_timeout ends each queued wait: queue again, log nothing; the
	 * controls read due meanwhile goes with it */
	for (int k = 0; k < 5; k++) {
		t += 5;
		out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, t);
		ck_actions(out, ELECTION_DO_WAIT_LOCK | ELECTION_DO_CONTROLS_READ);
		ck_no_log(out);
		ck_assert(!out.state_changed);
		ck_wakeup(&M, t, t + 5);
		ck_assert_double_eq(M.request_deadline, t + 7);
	}
	/* a new standby period after a reconnect logs again, once */
	out = step(&M, ELECTION_CONN_LOST, 0, "connection closed", t + 1);
	ck_actions(out, 0);
	t = election_next_wakeup(&M, t + 1);
	ck_actions(tick(&M, t), ELECTION_DO_CONNECT);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, t), ELECTION_DO_TRY_LOCK);
	out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, t);
	ck_actions(out, ELECTION_DO_WAIT_LOCK);
	ck_log(out, LOG_LEVEL_INFO, "waiting for leader lease");
	out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, t + 5);
	ck_actions(out, ELECTION_DO_WAIT_LOCK | ELECTION_DO_CONTROLS_READ);
	ck_no_log(out);
}
END_TEST

START_TEST(test_poll_mode_busy)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double t = 0.25;

	c.acquire = ACQUIRE_POLL;
	p = daemon_params(&c);
	to_standby(&M, &p, 0);
	/* a polling standby holds one session (DESIGN 15): the fence's
	 * closes */
	out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, t);
	ck_actions(out, ELECTION_DO_FENCE_CLOSE);
	ck_log(out, LOG_LEVEL_INFO, "waiting for leader lease");
	for (int k = 0; k < 5; k++) {
		/* the controls are read every retry_interval from 0, over
		 * the lock session; the tries every retry_interval after
		 * each answer */
		double read = 5.0 * (k + 1);

		ck_wakeup(&M, t, read);
		ck_actions(tick(&M, t + 2.5), 0);
		ck_actions(tick(&M, read), ELECTION_DO_LOCK_CONTROLS_READ);
		ck_wakeup(&M, read, t + 5);
		ck_actions(tick(&M, t + 5 - JUST), 0);
		t += 5;
		/* never a queued wait in poll mode */
		ck_actions(tick(&M, t), ELECTION_DO_TRY_LOCK);
		ck_assert_double_eq(M.request_deadline, t + 7);
		t += 0.25;
		out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, t);
		ck_actions(out, 0);
		ck_no_log(out);
	}
	/* the lock came: the fence session opens again, and is taken */
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 2", t + 1);
	ck_state(&M, ELECTION_LEADER);
	ck_actions(out, ELECTION_DO_FENCE_CONNECT | LEAD_FIRST | ELECTION_DO_START_CHILD);
}
END_TEST

/* BUSY from the lock session, with where its try found this standby
 * (DESIGN 15): queue_ahead standbys queued or ranked before it; -1 after a
 * queued wait ran out. */
static struct election_output busy(struct election *e, int ahead, double now)
{
	return deliver(e, (struct election_event){ .type = ELECTION_LOCK,
		.session = { .news = ELECTION_SESSION_BUSY, .queue_ahead = ahead } }, now);
}

/* Queue or poll (DESIGN 15): a try that found fewer than queue_depth
 * standbys queued or ranked before this one queues it at once; one that
 * found as many or more polls a retry_interval later; a queued wait that
 * ran out tries at once, to learn whether it still belongs in the queue.
 * Poll mode never queues. */
static const struct {
	bool wait;       /* --acquire=wait */
	int depth;
	int ahead;
	unsigned now;    /* the request sent at once, or 0 */
} queue_rows[] = {
	{ true, 3, 0, ELECTION_DO_WAIT_LOCK },
	{ true, 3, 2, ELECTION_DO_WAIT_LOCK },
	{ true, 3, 3, 0 },
	{ true, 3, 999, 0 },
	{ true, 1, 0, ELECTION_DO_WAIT_LOCK },
	{ true, 1, 1, 0 },
	{ true, 3, -1, ELECTION_DO_WAIT_LOCK }, /* a queued wait ran out */
	{ false, 3, 0, 0 },
};

START_TEST(test_queue_or_poll)
{
	struct config c = daemon_cfg;
	struct election_params p;
	struct election_output out;
	double t = 0.25;

	c.acquire = queue_rows[_i].wait ? ACQUIRE_WAIT : ACQUIRE_POLL;
	c.queue_depth = queue_rows[_i].depth;
	p = daemon_params(&c);
	to_standby(&M, &p, 0);
	out = busy(&M, queue_rows[_i].ahead, t);
	/* a standby that polls holds one session: the fence's closes */
	ck_actions(out, queue_rows[_i].now ? queue_rows[_i].now : ELECTION_DO_FENCE_CLOSE);
	ck_log(out, LOG_LEVEL_INFO, "waiting for leader lease");
	if (queue_rows[_i].now) {
		ck_assert_double_eq(M.request_deadline, t + 7);
		return;
	}
	/* polling: the next try a retry_interval after the answer (the
	 * controls read at 5 comes first, over the lock session), a plain
	 * try */
	ck_actions(tick(&M, 5), ELECTION_DO_LOCK_CONTROLS_READ);
	ck_actions(tick(&M, t + 5 - JUST), 0);
	ck_actions(tick(&M, t + 5), ELECTION_DO_TRY_LOCK);
	/* the queue has room now: in wait mode, queue at once, with the
	 * fence session open again */
	out = busy(&M, 0, t + 5.25);
	ck_actions(out, queue_rows[_i].wait
		   ? ELECTION_DO_WAIT_LOCK | ELECTION_DO_FENCE_CONNECT : 0);
	ck_no_log(out);
	if (queue_rows[_i].wait)
		ck_actions(tick(&M, 10), ELECTION_DO_CONTROLS_READ);
}
END_TEST

/* A queued standby whose wait ran out waits again at once; every
 * ELECTION_QUEUE_RECHECK-th time it tries instead, and stays queued only
 * while its try says it belongs there; a try that finds the queue full of
 * standbys ranked before it polls. */
START_TEST(test_queued_standby_rechecks)
{
	double t = 0.25;

	to_standby(&M, &defaults, 0);
	ck_actions(busy(&M, 0, t), ELECTION_DO_WAIT_LOCK);
	for (int round = 0; round < 2; round++) {
		for (int k = 1; k < ELECTION_QUEUE_RECHECK; k++) {
			t += 5; /* lock_timeout; the controls read due goes with it */
			ck_actions(busy(&M, -1, t), ELECTION_DO_WAIT_LOCK |
				   ELECTION_DO_CONTROLS_READ);
		}
		t += 5;
		ck_actions(busy(&M, -1, t), ELECTION_DO_TRY_LOCK | ELECTION_DO_CONTROLS_READ);
		if (round == 0)
			ck_actions(busy(&M, 2, t), ELECTION_DO_WAIT_LOCK);
	}
	ck_actions(busy(&M, 3, t), ELECTION_DO_FENCE_CLOSE);
	ck_wakeup(&M, t, t + 5); /* the poll, with the controls read */
	ck_actions(tick(&M, t + 5 - JUST), 0);
	ck_actions(tick(&M, t + 5), ELECTION_DO_TRY_LOCK | ELECTION_DO_LOCK_CONTROLS_READ);
}
END_TEST

/* DESIGN 15: a polling standby holds one session. Its fence session
 * closes once no controls read is in flight on it; the next read goes
 * over the lock session; a try that finds room opens the fence session
 * again, beside the queued wait. */
START_TEST(test_polling_closes_fence_after_read)
{
	struct election_output out;

	to_standby(&M, &defaults, 0);
	answer_controls = false;
	ck_actions(tick(&M, 5), ELECTION_DO_CONTROLS_READ);
	ck_actions(busy(&M, 3, 5.25), 0); /* the read is on the fence session */
	ck_assert(M.polling);
	out = step(&M, CONTROLS_ANSWERED, 0, NULL, 5.5);
	ck_actions(out, ELECTION_DO_FENCE_CLOSE);
	ck_actions(tick(&M, 10.25), ELECTION_DO_TRY_LOCK);
	ck_actions(tick(&M, 10.5), ELECTION_DO_LOCK_CONTROLS_READ);
	ck_actions(step(&M, CONTROLS_ANSWERED, 0, NULL, 10.5), 0);
	ck_actions(busy(&M, 1, 10.75), ELECTION_DO_WAIT_LOCK | ELECTION_DO_FENCE_CONNECT);
	ck_assert(!M.polling);
	ck_actions(tick(&M, 15.5), ELECTION_DO_CONTROLS_READ);
}
END_TEST

/* BUSY after a try that counted, with the lock table's size the server
 * said (DESIGN 15). */
static struct election_output busy_ranked(struct election *e, int ahead, int slots,
					  bool ranked, double now)
{
	struct election_event ev = {
		.type = ELECTION_LOCK, .wall = now + 1.7e9,
		.session = { .news = ELECTION_SESSION_BUSY, .queue_ahead = ahead,
			     .lock_slots = slots, .ranked = ranked },
	};
	struct election_output out;

	election_step(e, &ev, now, &out);
	answer_all(e, &out, now);
	return out;
}

/* ... after a count that found the queue full: no ranking. */
static struct election_output busy_slots(struct election *e, int ahead, int slots,
					 double now)
{
	return busy_ranked(e, ahead, slots, false, now);
}

/* What a tick at a poll's time asks of the lock: the try, plain or not. */
static unsigned poll_try(struct election *e, double now)
{
	return tick(e, now).actions & (ELECTION_DO_TRY_LOCK | ELECTION_DO_PLAIN_TRY |
				       ELECTION_DO_RANK_QUEUE | ELECTION_DO_WAIT_LOCK);
}

/* How often a polling standby's try counts the queue: one try in
 * ceil(slots / ELECTION_COUNT_SLOTS), from 1 to ELECTION_COUNT_EVERY_MAX;
 * the others are plain tries. */
static const struct {
	int slots;       /* what the last count said */
	int every;       /* the tries that count, one in this many */
} count_rows[] = {
	{ 0, 1 },                              /* not said */
	{ 6400, 1 },                           /* PostgreSQL's defaults */
	{ ELECTION_COUNT_SLOTS, 1 },
	{ ELECTION_COUNT_SLOTS + 1, 2 },
	{ 64 * 650, 6 },                       /* 600 connections and more */
	{ 64 * 2050, ELECTION_COUNT_EVERY_MAX }, /* 2,050: the bench at 1,000 */
	{ 2147483647, ELECTION_COUNT_EVERY_MAX },
};

START_TEST(test_polling_counts_every_nth_try)
{
	int every = count_rows[_i].every;
	double t = 0.25;

	to_standby(&M, &defaults, 0);
	/* the first try counted: the queue is full, this standby polls */
	ck_actions(busy_slots(&M, 3, count_rows[_i].slots, t), ELECTION_DO_FENCE_CLOSE);
	for (int round = 0; round < 2; round++) {
		for (int k = 1; k < every; k++) {
			t += 5;
			ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK |
					  ELECTION_DO_PLAIN_TRY);
			/* a plain try's answer says nothing of the queue: it
			 * polls on, a retry_interval later */
			ck_actions(busy_slots(&M, -1, 0, t), 0);
			ck_assert_uint_eq(poll_try(&M, t + 5 - JUST), 0);
		}
		t += 5;
		/* where the count is rarer, the first one on the session
		 * ranks this standby even with the queue full, once */
		ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK |
				  (round == 0 && every > 1 ? ELECTION_DO_RANK_QUEUE : 0));
		if (round == 0)
			ck_actions(busy_ranked(&M, ELECTION_RANK_LIMIT(3),
					       count_rows[_i].slots, every > 1, t), 0);
	}
	/* the count found room: queue at once, the fence session open again */
	ck_actions(busy_slots(&M, 2, count_rows[_i].slots, t),
		   ELECTION_DO_WAIT_LOCK | ELECTION_DO_FENCE_CONNECT);
	ck_assert(!M.polling);
}
END_TEST

/* A polling standby reads the controls, which it only shows, as often as
 * it counts the queue: one read per count_every retry_intervals, not one
 * per try; queued again, at once and then every retry_interval (DESIGN
 * 15). */
START_TEST(test_polling_reads_controls_as_often_as_it_counts)
{
	const int slots = 64 * 2050, every = ELECTION_COUNT_EVERY_MAX;
	double t = 0.25, end = t + 3 * every * 5 + JUST;
	int reads = 0, tries = 0;

	to_standby(&M, &defaults, 0);
	ck_actions(busy_slots(&M, 3, slots, t), ELECTION_DO_FENCE_CLOSE);
	ck_assert(M.polling);
	while ((t = election_next_wakeup(&M, t)) < end) {
		struct election_output out = tick(&M, t);

		reads += !!(out.actions & (ELECTION_DO_CONTROLS_READ |
					   ELECTION_DO_LOCK_CONTROLS_READ));
		if (out.actions & ELECTION_DO_TRY_LOCK) {
			bool plain = out.actions & ELECTION_DO_PLAIN_TRY;

			tries++;
			out.actions &= ~(ELECTION_DO_TRY_LOCK | ELECTION_DO_PLAIN_TRY |
					 ELECTION_DO_RANK_QUEUE);
			answer_all(&M, &out, t);
			/* the queue stays full: counted or not, it polls on */
			busy_ranked(&M, plain ? -1 : 3, slots, !plain, t);
		} else {
			answer_all(&M, &out, t);
		}
		ck_assert(M.polling);
	}
	ck_assert_int_ge(tries, 3 * every - 1);
	ck_assert_int_le(reads, 3 + 1);
	ck_assert_int_ge(reads, 3 - 1);
	/* the count found room: it queues, the controls read on its fence
	 * session as a queued standby's are, every retry_interval */
	t += 5;
	ck_actions(busy_slots(&M, 2, slots, t), ELECTION_DO_WAIT_LOCK |
		   ELECTION_DO_FENCE_CONNECT | ELECTION_DO_CONTROLS_READ);
	ck_assert(!M.polling);
}
END_TEST

/* A polling standby that its last ranking found next in line (fewer than
 * ELECTION_RANK_LIMIT queued or ranked before it) counts with every try,
 * whatever the lock table's size: the queue's refill after a failover
 * waits for the first of them. A count that found the queue full ranks
 * nobody and changes nothing; a ranking that finds it further back, or a
 * new session, ends it. */
START_TEST(test_next_in_line_counts_every_try)
{
	int big = 64 * 2050, limit = ELECTION_RANK_LIMIT(3);
	double t = 0.25;

	to_standby(&M, &defaults, 0);
	/* the queue had room, two standbys ranked before this one: 2 queued
	 * and 3 ranked before it, 5 < 12 */
	ck_actions(busy_ranked(&M, 5, big, true, t), ELECTION_DO_FENCE_CLOSE);
	for (int k = 1; k <= 3; k++) {
		t += 5;
		ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK);
		ck_actions(busy_slots(&M, 3, big, t), 0); /* full: no ranking */
	}
	/* ranked at the limit (the count stops there): one try in 8 again */
	t += 5;
	ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK);
	ck_actions(busy_ranked(&M, limit, big, true, t), 0);
	t += 5;
	ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK | ELECTION_DO_PLAIN_TRY);
	ck_actions(busy_slots(&M, -1, 0, t), 0);
	/* just inside it again */
	for (int k = 2; k < ELECTION_COUNT_EVERY_MAX; k++) {
		t += 5;
		ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK | ELECTION_DO_PLAIN_TRY);
		ck_actions(busy_slots(&M, -1, 0, t), 0);
	}
	t += 5;
	ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK);
	ck_actions(busy_ranked(&M, limit - 1, big, true, t), 0);
	t += 5;
	ck_assert_uint_eq(poll_try(&M, t), ELECTION_DO_TRY_LOCK);
}
END_TEST

/* A standby that is not polling counts with every try (its first, a
 * queued one's recheck), and so does a polling one's first try on a new
 * session; poll mode and --nonblock never queue: their tries are plain
 * anyway (the lease's queue_depth is 0), the election says nothing. */
START_TEST(test_count_on_new_session)
{
	double t = 0.25;
	struct election_output out;

	to_standby(&M, &defaults, 0);
	ck_actions(busy_slots(&M, 3, 64 * 2050, t), ELECTION_DO_FENCE_CLOSE);
	ck_assert_uint_eq(poll_try(&M, t + 5), ELECTION_DO_TRY_LOCK | ELECTION_DO_PLAIN_TRY);
	step(&M, ELECTION_CONN_LOST, 0, "gone", t + 5.5);
	ck_state(&M, ELECTION_BACKOFF);
	t = M.next_attempt_at;
	ck_assert(tick(&M, t).actions & ELECTION_DO_CONNECT);
	out = step(&M, ELECTION_CONNECTED, 0, NULL, t);
	ck_assert(out.actions & ELECTION_DO_TRY_LOCK);
	ck_assert(!(out.actions & ELECTION_DO_PLAIN_TRY));
}
END_TEST


/* ---- poll_dsn (DESIGN 15): polling through a transaction pooler ------- */

static struct election_params pooled_params(int priority)
{
	struct config c = daemon_cfg;

	c.poll_dsn = "host=pooler";
	c.priority = priority;
	return daemon_params(&c);
}

/* A poll's answer: ok with held and queued, or fault (recovery: the
 * server said it is in recovery). */
static struct election_output polled(struct election *e, bool ok, bool held,
				     int queued, enum fault fault, bool recovery,
				     const char *reason, double now)
{
	struct election_event ev = {
		.type = ELECTION_POLL, .wall = now + 1.7e9, .reason = reason,
		.poll = { .ok = ok, .held = held, .queued = queued, .fault = fault,
			  .recovery = recovery },
	};
	struct election_output out;

	memset(&out, 0xa5, sizeof(out)); /* the machine must clear it */
	election_step(e, &ev, now, &out);
	answer_all(e, &out, now);
	return out;
}

/* START with poll_dsn: no direct session, neither the lock's nor the
 * fence's, before a poll said the lock is free or its queue has room: a
 * fleet that starts holds no backend per node. A full queue: the next poll
 * a retry_interval later, and no controls read meanwhile (no session to
 * read them over); the standby counts as connected to the database. */
START_TEST(test_pooled_start_polls)
{
	struct election_params p = pooled_params(1);
	struct election_output out;

	election_init(&M, &p);
	out = step(&M, ELECTION_START, 0, NULL, 0);
	ck_actions(out, ELECTION_DO_POLL);
	ck_state(&M, ELECTION_STANDBY);
	ck_assert(M.pooled && M.poll_pending && !M.connected);
	ck_assert(!election_snapshot(&M)->db_connected);
	ck_wakeup(&M, 0, 10 + 2); /* connect_timeout + ping_timeout */
	out = polled(&M, true, true, 3, FAULT_NONE, false, NULL, 0.25);
	ck_actions(out, 0);
	ck_log(out, LOG_LEVEL_INFO, "waiting for leader lease");
	ck_assert(election_snapshot(&M)->db_connected);
	ck_wakeup(&M, 0.25, 5.25);
	ck_actions(tick(&M, 5.25 - JUST), 0);
	out = tick(&M, 5.25);
	ck_actions(out, ELECTION_DO_POLL);
	ck_actions(polled(&M, true, true, 7, FAULT_NONE, false, NULL, 5.5), 0);
	ck_actions(tick(&M, 10.5), ELECTION_DO_POLL);
	/* a stale answer (none in flight) changes nothing */
	ck_actions(polled(&M, true, false, 0, FAULT_NONE, false, NULL, 10.6), ELECTION_DO_CONNECT);
	ck_actions(polled(&M, true, false, 0, FAULT_NONE, false, NULL, 10.7), 0);
}
END_TEST

/* A pooled poll counts the queue at START and then every
 * ELECTION_POLL_COUNT_EVERY-th time; the others only ask whether the lock
 * is held. A free lock is tried at once whichever poll saw it; a poll that
 * did not count (queued -1) never joins the queue. */
START_TEST(test_pooled_counts_every)
{
	struct election_params p = pooled_params(1);
	struct election_output out;
	double t = 0.25;

	election_init(&M, &p);
	out = step(&M, ELECTION_START, 0, NULL, 0);
	ck_actions(out, ELECTION_DO_POLL);
	ck_assert(out.poll_counts);
	ck_actions(polled(&M, true, true, 3, FAULT_NONE, false, NULL, t), 0);
	for (int i = 1; i <= 2 * ELECTION_POLL_COUNT_EVERY; i++) {
		t += 5;
		out = tick(&M, t);
		ck_actions(out, ELECTION_DO_POLL);
		ck_assert_int_eq(out.poll_counts, i % ELECTION_POLL_COUNT_EVERY == 0);
		ck_actions(polled(&M, true, true, out.poll_counts ? 3 : -1, FAULT_NONE,
				  false, NULL, t), 0);
		ck_wakeup(&M, t, t + 5);
	}
	out = tick(&M, t + 5);
	ck_assert(!out.poll_counts);
	ck_actions(polled(&M, true, false, -1, FAULT_NONE, false, NULL, t + 5),
		   ELECTION_DO_CONNECT);
}
END_TEST

/* A poll that finds the lock free, or its queue with room: the standby
 * connects and tries, counting the queue (a new session's try counts);
 * the try says whether it queues (the fence session opens, the pooler's
 * closes, and the controls are read over it) or polls through the pooler
 * again (the lock session closes; no controls read went over it). */
#define QUEUES (ELECTION_DO_WAIT_LOCK | ELECTION_DO_FENCE_CONNECT | \
		ELECTION_DO_POLL_CLOSE | ELECTION_DO_CONTROLS_READ)
static const struct {
	bool held;
	int queued;     /* what the poll saw */
	int ahead;      /* what the try then found */
	unsigned then;  /* the try's BUSY leads to */
} join_rows[] = {
	{ false, 0, 0, QUEUES },
	{ true, 2, 2, QUEUES },
	{ true, 2, 3, ELECTION_DO_DISCONNECT }, /* another took the room first */
	{ true, 0, 5, ELECTION_DO_DISCONNECT }, /* ranked after five others */
};

START_TEST(test_pooled_poll_joins)
{
	struct election_params p = pooled_params(1);
	struct election_output out;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	out = polled(&M, true, join_rows[_i].held, join_rows[_i].queued, FAULT_NONE,
		     false, NULL, 0.25);
	ck_actions(out, ELECTION_DO_CONNECT);
	ck_state(&M, ELECTION_CONNECTING);
	ck_assert(!M.pooled);
	out = step(&M, ELECTION_CONNECTED, 0, NULL, 0.3);
	ck_actions(out, ELECTION_DO_TRY_LOCK); /* counts; no fence session */
	out = busy(&M, join_rows[_i].ahead, 0.35);
	ck_actions(out, join_rows[_i].then);
	/* "waiting for leader lease" is said once: by the poll that saw the
	 * lock held, else by the try */
	if (join_rows[_i].held)
		ck_no_log(out);
	else
		ck_log(out, LOG_LEVEL_INFO, "waiting for leader lease");
	if (join_rows[_i].then & ELECTION_DO_WAIT_LOCK) {
		ck_assert(!M.pooled && !M.polling && M.connected);
		return;
	}
	ck_assert(M.pooled && M.polling && !M.connected);
	ck_actions(tick(&M, 5.35 - JUST), 0);
	ck_actions(tick(&M, 5.35), ELECTION_DO_POLL);
}
END_TEST

/* A poll that finds room in the queue (the lock held) joins within
 * ELECTION_JOIN_SPREAD by the event's jitter, so that the standbys that saw
 * the room at once do not all try at once; a free lock is tried at once. */
START_TEST(test_pooled_join_spread)
{
	struct election_params p = pooled_params(1);
	struct election_event ev = {
		.type = ELECTION_POLL, .jitter = 0.5,
		.poll = { .ok = true, .held = true, .queued = 0 },
	};
	struct election_output out;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	election_step(&M, &ev, 0.25, &out);
	ck_actions(out, 0);
	ck_wakeup(&M, 0.25, 0.25 + 0.5 * ELECTION_JOIN_SPREAD);
	ck_actions(tick(&M, 0.75 - JUST), 0);
	ck_actions(tick(&M, 0.75), ELECTION_DO_CONNECT);
	ck_state(&M, ELECTION_CONNECTING);
	/* the lock free: at once, whatever the jitter */
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ev.poll.held = false;
	election_step(&M, &ev, 0.25, &out);
	ck_actions(out, ELECTION_DO_CONNECT);
}
END_TEST

/* A free lock: the poll's standby connects, and its try takes it. */
START_TEST(test_pooled_poll_takes_free_lock)
{
	struct election_params p = pooled_params(1);
	struct election_output out;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_actions(polled(&M, true, false, 0, FAULT_NONE, false, NULL, 0.25),
		   ELECTION_DO_CONNECT);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0.3);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 42, fencing token 7", 0.35);
	ck_state(&M, ELECTION_LEADER);
	ck_assert(out.actions & ELECTION_DO_FENCE_CONNECT);
	ck_assert(!M.pooled && !M.polling);
}
END_TEST

/* A standby of higher priority keeps its direct session (the queue's
 * ranking sees it, its switchover ask goes over it), priority 0 never asks
 * for the lock, poll mode and one-shots never queue: none uses the pooler. */
START_TEST(test_pooled_only_priority_1)
{
	struct config c = daemon_cfg;
	struct election_params p;

	c.poll_dsn = "host=pooler";
	c.priority = 2;
	p = daemon_params(&c);
	election_init(&M, &p);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 0), OPEN_BOTH);
	c.priority = 1;
	c.nonblock = true;
	p = daemon_params(&c);
	election_init(&M, &p);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 0), OPEN_BOTH);
	c.nonblock = false;
	c.acquire = ACQUIRE_POLL;
	p = daemon_params(&c);
	election_init(&M, &p);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 0), OPEN_BOTH);
	/* and without poll_dsn, a full queue keeps the lock session */
	to_standby(&M, &defaults, 0);
	ck_actions(busy(&M, 3, 0.25), ELECTION_DO_FENCE_CLOSE);
	ck_assert(M.connected && !M.pooled);
}
END_TEST

/* A poll that failed: the standby tries the lock directly (a leader lost
 * while the pooler is down is still followed within retry_interval), and
 * says so once until a poll is answered again. A poll unanswered by its
 * deadline is one that failed: the pooler's connection closes. */
START_TEST(test_pooled_poll_fails_over_to_direct)
{
	struct election_params p = pooled_params(1);
	struct election_output out;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	out = polled(&M, false, false, 0, FAULT_CONNECTION, false,
		     "poll_dsn: connection refused", 0.25);
	ck_actions(out, ELECTION_DO_CONNECT);
	ck_log(out, LOG_LEVEL_WARNING, "poll_dsn: connection refused; trying the "
	       "lock directly meanwhile");
	step(&M, ELECTION_CONNECTED, 0, NULL, 0.3);
	ck_actions(busy(&M, 3, 0.35), ELECTION_DO_DISCONNECT);
	ck_actions(tick(&M, 5.35), ELECTION_DO_POLL);
	/* unanswered: at connect_timeout + ping_timeout */
	ck_actions(tick(&M, 5.35 + 12 - JUST), 0);
	out = tick(&M, 5.35 + 12);
	ck_actions(out, ELECTION_DO_POLL_CLOSE | ELECTION_DO_CONNECT);
	ck_no_log(out); /* said once */
	step(&M, ELECTION_CONNECTED, 0, NULL, 17.4);
	ck_actions(busy(&M, 3, 17.45), ELECTION_DO_DISCONNECT);
	ck_actions(tick(&M, 22.45), ELECTION_DO_POLL);
	out = polled(&M, true, true, 3, FAULT_NONE, false, NULL, 22.5);
	ck_actions(out, 0);
	ck_log(out, LOG_LEVEL_INFO, "poll_dsn answers again");
}
END_TEST

/* A poll_dsn that is no transaction pooler (FAULT_POOLER: a direct
 * connection, a session pooler) ends pgleader with the configuration's
 * code and the effector's one line; so does a server in recovery on the
 * first poll (a poll_dsn that reaches a hot standby); one in recovery
 * later (a failover under way) is a poll that failed. */
static const struct {
	enum fault fault;
	bool recovery;
	bool answered_before;
	int code;       /* 0: the standby goes on, directly */
} refuse_rows[] = {
	{ FAULT_POOLER, false, false, EXIT_CONFIG },
	{ FAULT_POOLER, false, true, EXIT_CONFIG },
	{ FAULT_AUTH, false, false, EXIT_UNAVAILABLE },
	{ FAULT_HOT_STANDBY, true, false, EXIT_CONFIG },
	{ FAULT_HOT_STANDBY, true, true, 0 },
	{ FAULT_HOT_STANDBY, false, false, 0 }, /* 57P03: starting up */
};

START_TEST(test_pooled_poll_refused)
{
	struct election_params p = pooled_params(1);
	struct election_output out;
	double t = 0.25;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	if (refuse_rows[_i].answered_before) {
		ck_actions(polled(&M, true, true, 3, FAULT_NONE, false, NULL, t), 0);
		t += 5;
		ck_actions(tick(&M, t), ELECTION_DO_POLL);
	}
	out = polled(&M, false, false, 0, refuse_rows[_i].fault, refuse_rows[_i].recovery,
		     "poll_dsn: the line", t);
	if (!refuse_rows[_i].code) {
		ck_actions(out, ELECTION_DO_CONNECT);
		return;
	}
	ck_exit(out, &M, refuse_rows[_i].code);
	ck_log(out, LOG_LEVEL_ERROR, "poll_dsn: the line");
	ck_assert(!(out.actions & (ELECTION_DO_CONNECT | ELECTION_DO_FENCE_CONNECT)));
}
END_TEST

/* The database a session reached: the lock session's CONNECTED, or a poll
 * that found the lock free, or held with a full queue. */
struct db_said {
	uint64_t system_id;
	uint32_t oid;
};

static struct election_output connected_to(struct election *e, struct db_said db,
					   double now)
{
	return deliver(e, (struct election_event){ .type = ELECTION_LOCK,
		.session = { .news = ELECTION_SESSION_CONNECTED, .lock_key = 42,
			     .system_id = db.system_id, .db_oid = db.oid } }, now);
}

static struct election_output polled_in(struct election *e, struct db_said db,
					bool held, double now)
{
	return deliver(e, (struct election_event){ .type = ELECTION_POLL,
		.poll = { .ok = true, .held = held, .queued = 3,
			  .system_id = db.system_id, .db_oid = db.oid } }, now);
}

/* poll_dsn must reach the lock's database: the same cluster (system
 * identifier) and the same database (oid). Told apart the first time both
 * were said, whichever said it first, pgleader ends with the
 * configuration's code and one line naming both; where one side could not
 * read its system identifier (0), the oids alone tell. */
static const struct {
	struct db_said lock, poll;
	const char *refused; /* the line's parenthesis, or NULL */
} other_db_rows[] = {
	{ { 7001, 5 }, { 7001, 5 }, NULL },
	{ { 7001, 5 }, { 7001, 16384 }, "database oid 16384 of system 7001; the "
	  "lock's: database oid 5 of system 7001" },
	{ { 7001, 5 }, { 7002, 5 }, "database oid 5 of system 7002; the lock's: "
	  "database oid 5 of system 7001" },
	{ { 0, 5 }, { 7002, 5 }, NULL },         /* cannot tell */
	{ { 7001, 5 }, { 0, 5 }, NULL },
	{ { 0, 5 }, { 0, 16384 }, "database oid 16384; the lock's: database oid 5" },
	{ { 7001, 0 }, { 7002, 5 }, NULL },      /* not said (never, in fact) */
};

START_TEST(test_pooled_other_db_refused)
{
	struct election_params p = pooled_params(1);
	struct election_output out;
	char line[256];
	int row = _i / 2;
	bool poll_first = _i % 2;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	if (poll_first) {
		/* the pooled start's poll: the lock free, the standby connects */
		out = polled_in(&M, other_db_rows[row].poll, false, 0.25);
		ck_actions(out, ELECTION_DO_CONNECT);
		out = connected_to(&M, other_db_rows[row].lock, 0.3);
	} else {
		out = polled(&M, false, false, 0, FAULT_CONNECTION, false,
			     "poll_dsn: connection refused", 0.25);
		ck_actions(out, ELECTION_DO_CONNECT);
		ck_actions(connected_to(&M, other_db_rows[row].lock, 0.3),
			   ELECTION_DO_TRY_LOCK);
		ck_actions(busy(&M, 3, 0.35), ELECTION_DO_DISCONNECT);
		ck_actions(tick(&M, 5.35), ELECTION_DO_POLL);
		out = polled_in(&M, other_db_rows[row].poll, true, 5.4);
	}
	if (!other_db_rows[row].refused) {
		ck_assert(!(out.actions & ELECTION_DO_EXIT));
		ck_assert(M.state != ELECTION_DONE);
		return;
	}
	ck_exit(out, &M, EXIT_CONFIG);
	snprintf(line, sizeof(line), "poll_dsn reaches another database than the "
		 "lock's (%s): point it at a pooler in front of the lock's database",
		 other_db_rows[row].refused);
	ck_log(out, LOG_LEVEL_ERROR, line);
	ck_assert(!(out.actions & (ELECTION_DO_CONNECT | ELECTION_DO_FENCE_CONNECT |
				   ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK)));
}
END_TEST

/* Once alike, told apart later: one side was pointed elsewhere before the
 * other (a migration, a pooler repointed). Not a mistake in the
 * configuration: the pooler's connection closes (the next poll checks
 * again) and the standby tries the lock directly, said once, until the two
 * are alike again. */
START_TEST(test_pooled_db_pointed_apart)
{
	struct election_params p = pooled_params(1);
	struct election_output out;
	struct db_said here = { 7001, 5 }, there = { 7002, 5 };

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_actions(polled_in(&M, here, false, 0.25), ELECTION_DO_CONNECT);
	ck_actions(connected_to(&M, here, 0.3), ELECTION_DO_TRY_LOCK);
	ck_actions(busy(&M, 3, 0.35), ELECTION_DO_DISCONNECT);
	ck_actions(tick(&M, 5.35), ELECTION_DO_POLL);
	ck_actions(polled_in(&M, here, true, 5.4), 0);
	ck_actions(tick(&M, 10.4), ELECTION_DO_POLL);
	out = polled_in(&M, there, true, 10.45);
	ck_actions(out, ELECTION_DO_POLL_CLOSE | ELECTION_DO_CONNECT);
	ck_log(out, LOG_LEVEL_WARNING, "poll_dsn now reaches another database than "
	       "the lock's (database oid 5 of system 7002; the lock's: database "
	       "oid 5 of system 7001); trying the lock directly until it reaches "
	       "the lock's again");
	/* ... whose session is the lock's: the lock session reached "here"
	 * before, so the comparison is with it */
	ck_actions(connected_to(&M, here, 10.5), ELECTION_DO_TRY_LOCK);
	ck_actions(busy(&M, 3, 10.55), ELECTION_DO_DISCONNECT);
	ck_actions(tick(&M, 15.55), ELECTION_DO_POLL);
	out = polled_in(&M, there, true, 15.6);
	ck_actions(out, ELECTION_DO_POLL_CLOSE | ELECTION_DO_CONNECT);
	ck_no_log(out); /* said once */
	/* the lock's DSN followed the pooler: alike again */
	ck_actions(connected_to(&M, there, 15.65), ELECTION_DO_TRY_LOCK);
	ck_actions(busy(&M, 3, 15.7), ELECTION_DO_DISCONNECT);
	ck_actions(tick(&M, 20.7), ELECTION_DO_POLL);
	ck_actions(polled_in(&M, there, true, 20.75), 0);
	ck_assert(!M.poll_db_said);
}
END_TEST

/* SIGTERM while polling through the pooler: nothing to release. */
START_TEST(test_pooled_shutdown)
{
	struct election_params p = pooled_params(1);
	struct election_output out;

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_actions(polled(&M, true, true, 3, FAULT_NONE, false, NULL, 0.25), 0);
	out = step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 1);
	ck_exit(out, &M, EXIT_OK);
	ck_assert(!(out.actions & (ELECTION_DO_RELEASE | ELECTION_DO_DISCONNECT)));
	/* and with a poll in flight: the answer, if any, comes too late */
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_exit(step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 0.1), &M, EXIT_OK);
	ck_actions(polled(&M, true, false, 0, FAULT_NONE, false, NULL, 0.2), 0);
}
END_TEST

/* A lock request unanswered for retry_interval + ping_timeout: the
 * connection is closed (never reused) and a new one opened after backoff. */
static const struct {
	bool wait;
	bool busy_first; /* the request that times out is the queued wait */
	double deadline;
} request_timeout_rows[] = {
	{ true, false, 7 },   /* try sent at 0 */
	{ false, false, 7 },  /* try sent at 0, poll mode */
	{ true, true, 8 },    /* wait sent at 1 */
};

START_TEST(test_lock_request_deadline)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double dl = request_timeout_rows[_i].deadline;

	c.acquire = request_timeout_rows[_i].wait ? ACQUIRE_WAIT : ACQUIRE_POLL;
	p = daemon_params(&c);
	to_standby(&M, &p, 0);
	if (request_timeout_rows[_i].busy_first)
		ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 1), ELECTION_DO_WAIT_LOCK);
	/* the standby reads the controls every retry_interval meanwhile */
	ck_wakeup(&M, 1, 5);
	ck_actions(tick(&M, 5), ELECTION_DO_CONTROLS_READ);
	ck_wakeup(&M, 5, dl);
	ck_actions(tick(&M, dl - JUST), 0);
	ck_state(&M, ELECTION_STANDBY);
	out = tick(&M, dl);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_BACKOFF);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lock request got no answer in time; retrying in 0.5s");
	/* the answer to the abandoned request must not make us leader */
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 2", dl + 0.25);
	ck_actions(out, 0);
	ck_state(&M, ELECTION_BACKOFF);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, dl + 0.25), 0);
	ck_actions(tick(&M, dl + 0.5), ELECTION_DO_CONNECT);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, dl + 0.75), ELECTION_DO_TRY_LOCK);
}
END_TEST

static const struct {
	bool wait;
	int code;
} nonblock_rows[] = { { true, 75 }, { false, 75 }, { true, 3 } };

START_TEST(test_nonblock_busy_exits)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.nonblock = true;
	c.acquire = nonblock_rows[_i].wait ? ACQUIRE_WAIT : ACQUIRE_POLL;
	c.conflict_exit_code = nonblock_rows[_i].code;
	p = daemon_params(&c);
	to_standby(&M, &p, 0); /* a try, even in wait mode */
	out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0.25);
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, nonblock_rows[_i].code);
	ck_log(out, LOG_LEVEL_NOTICE, "leader lease is held by another node; giving up");
	ck_assert(out.state_changed);
}
END_TEST

START_TEST(test_nonblock_acquires)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.nonblock = true;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
}
END_TEST

START_TEST(test_wait_timeout_standby)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.wait_timeout_ms = 10000;
	p = daemon_params(&c);
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0.5), ELECTION_DO_WAIT_LOCK);
	/* the controls read due at 5 goes with it */
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 5.5),
		   ELECTION_DO_WAIT_LOCK | ELECTION_DO_CONTROLS_READ);
	ck_wakeup(&M, 5.5, 10); /* before the request deadline 12.5 */
	ck_actions(tick(&M, 10 - JUST), 0);
	out = tick(&M, 10);
	/* the queued wait is in flight: close, do not unlock */
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, 75);
	ck_log(out, LOG_LEVEL_NOTICE, "no leader lease after 10.0s of waiting; giving up");
}
END_TEST

START_TEST(test_wait_timeout_database_down)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double t = 0;

	c.wait_timeout_ms = 10000;
	c.conflict_exit_code = 9;
	p = daemon_params(&c);
	election_init(&M, &p);
	world_silent(); /* the fence session's attempt gets no answer either */
	step(&M, ELECTION_START, 0, NULL, t);
	/* failures at 0.25, 1, 2.25, 4.5, 8.75: the last backs off to 13.75 */
	for (int k = 0; k < 5; k++) {
		step(&M, ELECTION_CONNECT_FAILED, 0, "down", t + 0.25);
		t = election_next_wakeup(&M, t + 0.25);
		if (t >= 10)
			break;
		ck_actions(tick(&M, t), ELECTION_DO_CONNECT);
	}
	ck_assert_double_eq(t, 10);
	out = tick(&M, 10);
	/* nothing open to close but the fence session's attempt */
	ck_actions(out, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, 69); /* never reached: not the conflict code */
}
END_TEST

START_TEST(test_wait_timeout_not_while_leader)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double starts[4], t = 1;

	c.wait_timeout_ms = 10000;
	p = daemon_params(&c);
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0.5);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 2", 1);
	ck_actions(out, LEAD_FIRST | ELECTION_DO_START_CHILD);
	ck_assert_int_eq(lead_until(&M, &t, 60, starts, 4), 0);
	ck_state(&M, ELECTION_LEADER);
	/* nor after the lease is lost: the deadline was for becoming leader */
	out = step(&M, ELECTION_CONN_LOST, 0, "connection closed", 61);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 143, NULL, 62),
		   ELECTION_DO_FENCE_DROP | ELECTION_DO_CONNECT);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 62), STANDBY_READ);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 62), ELECTION_DO_WAIT_LOCK);
	ck_wakeup(&M, 62, 67); /* the controls read */
	ck_actions(tick(&M, 67), ELECTION_DO_CONTROLS_READ);
	ck_wakeup(&M, 67, 69);
}
END_TEST

/* ---- leader ----------------------------------------------------------- */

START_TEST(test_acquired_starts_command)
{
	struct election_output out;

	to_standby(&M, &defaults, 0);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0.5), ELECTION_DO_WAIT_LOCK);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 42, fencing token 1234", 3.5);
	ck_actions(out, LEAD_FIRST | ELECTION_DO_START_CHILD);
	ck_state(&M, ELECTION_LEADER);
	ck_assert(out.state_changed);
	ck_log(out, LOG_LEVEL_INFO, "acquired leader lease (key 42, fencing token 1234)");
	ck_assert(M.child_running);
	ck_wakeup(&M, 3.5, 4.5); /* first ping one interval later */
}
END_TEST

static const double takeover_rows[] = { 0.5, 2.5, 3, 10 };

START_TEST(test_takeover_delay)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double d = takeover_rows[_i], t = 0, starts[4];

	c.takeover_delay_ms = MS(d);
	p = daemon_params(&c);
	to_standby(&M, &p, 0);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 42, fencing token 7", 0);
	ck_actions(out, LEAD_FIRST);
	ck_state(&M, ELECTION_LEADER);
	ck_log(out, LOG_LEVEL_INFO, "acquired leader lease (key 42, fencing token 7)");
	ck_assert(!M.child_running);
	ck_wakeup(&M, 0, fmin(1, d));
	/* pinging all along, the command not before acquired + delay */
	ck_assert_int_eq(lead_until(&M, &t, d - JUST, starts, 4), 0);
	ck_assert_int_eq(lead_until(&M, &t, d, starts, 4), 1);
	ck_assert_double_eq(starts[0], d);
	ck_assert(M.child_running);
	/* and only once */
	ck_assert_int_eq(lead_until(&M, &t, d + 20, starts, 4), 0);
}
END_TEST

START_TEST(test_takeover_delay_pings)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.takeover_delay_ms = 3000;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 1), 0);
	ck_actions(tick(&M, 2), LEADER_PING);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 2.5), 0);
	ck_wakeup(&M, 2.5, 3);
	ck_actions(tick(&M, 3 - JUST), 0);
	out = tick(&M, 3);
	ck_actions(out, LEADER_PING | ELECTION_DO_START_CHILD);
	ck_assert(out.state_changed); /* status shows the pid now */
}
END_TEST

START_TEST(test_ping_every_interval)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	for (int k = 1; k <= 20; k++) {
		ck_wakeup(&M, k - 1 + 0.125, k);
		ck_actions(tick(&M, k - JUST), 0);
		out = tick(&M, k);
		ck_actions(out, LEADER_PING);
		ck_no_log(out);
		/* one ping at a time */
		ck_actions(tick(&M, k + 0.0625), 0);
		ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, k + 0.125), 0);
		/* the next is due an interval after sending, not after the reply */
		ck_wakeup(&M, k + 0.125, k + 1);
	}
	/* an answer nobody asked for is ignored */
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 20.5), 0);
	ck_wakeup(&M, 20.5, 21);
}
END_TEST

/* The failure rule: the first failure ping_timeout after sending, one more
 * per ping_interval; the lease is lost at exactly
 * sent + ping_timeout + (ping_failures - 1) * ping_interval. */
static const struct {
	double interval, timeout;
	int failures;
} ping_rows[] = {
	{ 1, 2, 3 },
	{ 1, 0.5, 3 },
	{ 2, 1, 1 },
	{ 0.5, 2, 5 },
	{ 0.25, 0.75, 4 },
	{ 1, 1, 2 },
};

START_TEST(test_ping_failure_rule)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out = { 0 };
	double sent, lost;
	char want[160];

	c.ping_interval_ms = MS(ping_rows[_i].interval);
	c.ping_timeout_ms = MS(ping_rows[_i].timeout);
	c.ping_failures = ping_rows[_i].failures;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	world_silent(); /* neither the ping nor the controls read is answered */
	sent = p.ping_interval;
	ck_actions(tick(&M, sent), LEADER_PING);
	lost = sent + p.ping_timeout + (p.ping_failures - 1) * p.ping_interval;
	for (int k = 0; k < p.ping_failures; k++) {
		double dl = sent + p.ping_timeout + k * p.ping_interval;

		/* each failure's deadline is the next wakeup */
		ck_wakeup(&M, dl - p.ping_interval / 2, dl);
		ck_actions(tick(&M, dl - JUST), 0);
		ck_state(&M, ELECTION_LEADER);
		out = tick(&M, dl);
		if (k < p.ping_failures - 1) {
			ck_actions(out, 0); /* no second ping while one is out */
			ck_state(&M, ELECTION_LEADER);
		}
	}
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_assert(out.state_changed);
	snprintf(want, sizeof(want),
		 "lost leader lease: ping timed out %d times (last reply %.1fs ago)",
		 p.ping_failures, lost);
	ck_log(out, LOG_LEVEL_WARNING, want);
}
END_TEST

START_TEST(test_ping_failure_defaults_message)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	world_silent();
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_wakeup(&M, 1, 3);
	ck_actions(tick(&M, 3), 0);
	ck_wakeup(&M, 3, 4);
	ck_actions(tick(&M, 4), 0);
	ck_wakeup(&M, 4, 5);
	/* asking at any time between deadlines gives the next one */
	ck_wakeup(&M, 4.5, 5);
	ck_actions(tick(&M, 5 - JUST), 0);
	out = tick(&M, 5);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lost leader lease: ping timed out 3 times (last reply 5.0s ago)");
}
END_TEST

START_TEST(test_late_reply_resets)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	world_silent(); /* the controls read sent at 1 stays in flight */
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(tick(&M, 3), 0); /* 1 failure */
	ck_actions(tick(&M, 4), 0); /* 2 failures */
	/* the answer comes before the third: all forgiven, and the next ping,
	 * overdue, goes out at once */
	out = step(&M, ELECTION_PING_OK, 0, NULL, 4.5);
	ck_actions(out, ELECTION_DO_PING | ELECTION_DO_FENCE_PING);
	ck_state(&M, ELECTION_LEADER);
	ck_wakeup(&M, 4.5, 6.5);
	ck_actions(tick(&M, 6.5), 0);
	ck_actions(tick(&M, 7.5), 0);
	ck_actions(tick(&M, 8.5 - JUST), 0);
	out = tick(&M, 8.5);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lost leader lease: ping timed out 3 times (last reply 4.0s ago)");
}
END_TEST

START_TEST(test_frozen_with_ping_out)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	/* the process was stopped for 99 s; one timer fires on thaw */
	out = tick(&M, 100);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lost leader lease: ping timed out 98 times (last reply 100.0s ago)");
}
END_TEST

/* Sim finding 3: the answer to a ping that has already failed ping_failures
 * times is read first (a frozen pgleader thawed, the reply waiting in its
 * socket, and a loop that hands over the socket before the expired timer):
 * it is too late and saves nothing, as if the timer had come first. One
 * that comes before the last failure still counts. */
START_TEST(test_ping_answer_after_its_deadline)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	/* sent at 1, failed at 3, 4 and 5 */
	out = step(&M, ELECTION_PING_OK, 0, NULL, 100);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost leader lease: ping timed out 98 times");
	/* at the third failure exactly: too late */
	to_leader(&M, &defaults, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 5), ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	/* just before it: counted, and the next ping, overdue, goes out */
	to_leader(&M, &defaults, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 5 - JUST), LEADER_PING);
	ck_state(&M, ELECTION_LEADER);
}
END_TEST

/* Most of the time no ping is in flight (answers take milliseconds): a
 * process frozen then must demote at once on thaw too, not send a ping and
 * wait ping_timeout + (ping_failures - 1) * ping_interval more while the
 * server may have given the lock to another node. */
START_TEST(test_frozen_between_pings)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 1.0625), 0);
	out = tick(&M, 100);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost leader lease: ping timed out ");
}
END_TEST

/* A loop that stalls past a ping's due time but not past the limit: the
 * ping's deadlines run from when it was due, so the lease is lost at the
 * same time as if the ping had gone out on time. */
START_TEST(test_stalled_ping_counts_from_due_time)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 1.0625), 0);
	/* due at 2, sent at 5.5: two failures already counted */
	out = tick(&M, 5.5);
	ck_actions(out, LEADER_PING);
	ck_state(&M, ELECTION_LEADER);
	ck_wakeup(&M, 5.5, 6);
	ck_actions(tick(&M, 6 - JUST), 0);
	out = tick(&M, 6);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
}
END_TEST

START_TEST(test_frozen_during_takeover_delay)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.takeover_delay_ms = 30000;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	ck_actions(tick(&M, 1), LEADER_PING);
	out = tick(&M, 100);
	/* no command yet: close at once and start over, never START_CHILD;
	 * the fence, taken with the lock, is given back */
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_CONNECTING);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost leader lease: ping timed out ");
}
END_TEST

/* next_wakeup in init, done and connecting: never, the connect deadline,
 * the end of the backoff, or the wait timeout when that is earlier. */
static void wakeup_connecting(struct config *c, struct election_params *p)
{
	/* init and done: never */
	election_init(&M, p);
	ck_assert(isinf(election_next_wakeup(&M, 0)));

	/* connecting: the connect deadline, or the end of the backoff */
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_wakeup(&M, 0, 10);
	step(&M, ELECTION_CONNECT_FAILED, 0, "down", 1);
	ck_wakeup(&M, 1, 1.5);

	/* ... or the wait timeout when that is earlier */
	c->wait_timeout_ms = 4000;
	*p = daemon_params(c);
	election_init(&M, p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_wakeup(&M, 0, 4);
	step(&M, ELECTION_CONNECT_FAILED, 0, "down", 3.75);
	ck_wakeup(&M, 3.75, 4);
	c->wait_timeout_ms = -1;
	*p = daemon_params(c);
}

/* next_wakeup of a standby, in wait and in poll mode. */
static void wakeup_standby(struct config *c, struct election_params *p)
{
	/* standby, wait mode: the controls read every retry_interval, and
	 * the lock request deadline */
	to_standby(&M, p, 0);
	ck_wakeup(&M, 0, 5);
	ck_actions(tick(&M, 5), ELECTION_DO_CONTROLS_READ);
	ck_wakeup(&M, 5, 7);
	to_standby(&M, p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 1);
	ck_wakeup(&M, 1, 5);
	tick(&M, 5);
	ck_wakeup(&M, 5, 8);
	/* standby, poll mode: the next try, then the request deadline (the
	 * next read at 10 after it) */
	c->acquire = ACQUIRE_POLL;
	*p = daemon_params(c);
	to_standby(&M, p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 1);
	ck_wakeup(&M, 1, 5);
	tick(&M, 5);
	ck_wakeup(&M, 5, 6);
	tick(&M, 6);
	ck_wakeup(&M, 6, 10);
	ck_assert_double_eq(M.request_deadline, 13);
	c->acquire = ACQUIRE_WAIT;
	*p = daemon_params(c);
}

/* next_wakeup of a leader: pings, the takeover delay, a restart. */
static void wakeup_leader(struct config *c, struct election_params *p)
{
	/* leader: the next ping, then each failure deadline (the database
	 * silent, the controls read sent with the ping stays in flight) */
	to_leader(&M, p, 0);
	ck_wakeup(&M, 0, 1);
	world_silent();
	tick(&M, 1);
	ck_wakeup(&M, 1, 3);       /* 0 failures */
	ck_wakeup(&M, 2.5, 3);
	tick(&M, 3);
	ck_wakeup(&M, 3, 4);       /* 1 failure */
	tick(&M, 4);
	ck_wakeup(&M, 4, 5);       /* 2 failures: the loss */
	step(&M, ELECTION_PING_OK, 0, NULL, 4.5);
	ck_wakeup(&M, 4.5, 6.5);   /* a new ping went out at 4.5 */

	/* leader during the takeover delay: the earlier of ping and start */
	world_answers();
	c->takeover_delay_ms = 500;
	*p = daemon_params(c);
	to_leader(&M, p, 0);
	ck_wakeup(&M, 0, 0.5);
	c->takeover_delay_ms = 0;
	*p = daemon_params(c);

	/* leader waiting to restart the command */
	c->restart = RESTART_ALWAYS;
	*p = daemon_params(c);
	to_leader(&M, p, 0);
	step(&M, ELECTION_CHILD_GONE, 1, NULL, 0.25);
	ck_wakeup(&M, 0.25, 1);    /* ping at 1 before restart at 1.25 */
	tick(&M, 1);
	step(&M, ELECTION_PING_OK, 0, NULL, 1);
	ck_wakeup(&M, 1, 1.25);
	c->restart = RESTART_NO;
	*p = daemon_params(c);
}

/* next_wakeup while demoting and shutting down. */
static void wakeup_ending(struct election_params *p)
{
	double t;

	/* demoting: only the command's end moves it on */
	to_leader(&M, p, 0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	ck_state(&M, ELECTION_DEMOTING);
	ck_assert(isinf(election_next_wakeup(&M, 0.5)));

	/* shutting down: nothing while the command stops, then the release */
	to_leader(&M, p, 0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 0.5);
	ck_assert(isinf(election_next_wakeup(&M, 0.5)));
	step(&M, ELECTION_CHILD_GONE, 143, NULL, 1);
	ck_wakeup(&M, 1, 3);
	t = 3;
	tick(&M, t);
	ck_state(&M, ELECTION_DONE);
	ck_assert(isinf(election_next_wakeup(&M, t)));
}

START_TEST(test_next_wakeup_each_state)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	wakeup_connecting(&c, &p);
	wakeup_standby(&c, &p);
	wakeup_leader(&c, &p);
	wakeup_ending(&p);
}
END_TEST

/* ---- demotion --------------------------------------------------------- */

START_TEST(test_lease_lost_waits_for_command)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	tick(&M, 1);
	tick(&M, 3);
	tick(&M, 4);
	out = tick(&M, 5);
	/* the connection stays open, idle, until the command is gone */
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_assert(M.connected);
	ck_assert(isinf(election_next_wakeup(&M, 5)));
	ck_actions(tick(&M, 10), 0);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 10), 0);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "x", 10), 0);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 10), 0);
	ck_state(&M, ELECTION_DEMOTING);
	/* the fence goes with the command */
	out = step(&M, ELECTION_CHILD_GONE, 143, NULL, 13);
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_CONNECTING);
	ck_assert(out.state_changed);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 13.5), STANDBY_READ);
	ck_state(&M, ELECTION_STANDBY);
	/* and it can lead again */
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 42, fencing token 9", 14);
	ck_actions(out, LEAD_FIRST | ELECTION_DO_START_CHILD);
}
END_TEST

START_TEST(test_conn_lost_while_leading)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	tick(&M, 1); /* a ping is out */
	out = step(&M, ELECTION_CONN_LOST, 0,
		   "connection terminated by the server: FATAL (57P01)", 1.5);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lost leader lease: connection terminated by the server: FATAL (57P01)");
	ck_actions(tick(&M, 20), 0);
	/* the connection is already gone: no DISCONNECT */
	out = step(&M, ELECTION_CHILD_GONE, 143, NULL, 9.5);
	ck_actions(out, ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_CONNECTING);
}
END_TEST

START_TEST(test_conn_lost_while_demoting)
{
	to_leader(&M, &defaults, 0);
	tick(&M, 1);
	tick(&M, 5);
	ck_state(&M, ELECTION_DEMOTING);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "connection closed", 6), 0);
	ck_state(&M, ELECTION_DEMOTING);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 0, NULL, 7),
		   ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
}
END_TEST

START_TEST(test_lease_lost_without_command)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	/* ping timeout during the takeover delay: reconnect at once */
	c.takeover_delay_ms = 10000;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	tick(&M, 1);
	tick(&M, 3);
	tick(&M, 4);
	out = tick(&M, 5);
	/* the fence, taken with the lock, is given back */
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_CONNECTING);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lost leader lease: ping timed out 3 times (last reply 5.0s ago)");
	/* the command is never started by the old term's deadline */
	ck_actions(tick(&M, 10), 0);

	/* connection lost during the takeover delay */
	to_leader(&M, &p, 0);
	out = step(&M, ELECTION_CONN_LOST, 0, "connection closed", 2);
	ck_actions(out, ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_CONNECTING);
	ck_actions(tick(&M, 10), 0);

	/* connection lost while waiting to restart the command */
	c.takeover_delay_ms = 0;
	c.restart = RESTART_ALWAYS;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	/* the fence goes with the command, and is taken again for the next */
	ck_actions(step(&M, ELECTION_CHILD_GONE, 1, NULL, 0.25),
		   ELECTION_DO_FENCE_DROP | ELECTION_DO_FENCE_TAKE);
	out = step(&M, ELECTION_CONN_LOST, 0, "connection closed", 0.5);
	ck_actions(out, ELECTION_DO_CONNECT | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_CONNECTING);
	ck_actions(tick(&M, 1.25), 0);
}
END_TEST

/* ---- the command ------------------------------------------------------ */

static const int exit_statuses[] = { 0, 1, 2, 126, 127, 137, 143 };

START_TEST(test_restart_no_exits_with_status)
{
	struct election_output out;
	int status = exit_statuses[_i];

	to_leader(&M, &defaults, 0);
	tick(&M, 1); /* a ping in flight changes nothing */
	out = step(&M, ELECTION_CHILD_GONE, status, NULL, 1.5);
	ck_actions(out, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_RELEASING);
	ck_assert(out.state_changed);
	ck_wakeup(&M, 1.5, 3.5); /* the release is bounded by ping_timeout */
	ck_actions(tick(&M, 2), 0); /* no more pings */
	out = step(&M, ELECTION_RELEASED, 0, NULL, 2);
	ck_actions(out, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, status);
}
END_TEST

START_TEST(test_restart_on_failure_success_exits)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.restart = RESTART_ON_FAILURE;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	out = step(&M, ELECTION_CHILD_GONE, 0, NULL, 0.5);
	ck_actions(out, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_RELEASING);
	out = step(&M, ELECTION_RELEASED, 0, NULL, 0.75);
	ck_exit(out, &M, 0);
}
END_TEST

/* Consecutive failures, each after a short run: 1 s doubling to 30 s. */
static const double restart_delays[] = { 1, 2, 4, 8, 16, 30, 30, 30 };

static const struct {
	enum restart_policy restart;
	int status;
} restart_rows[] = {
	{ RESTART_ON_FAILURE, 1 },
	{ RESTART_ON_FAILURE, 137 },
	{ RESTART_ALWAYS, 0 },
	{ RESTART_ALWAYS, 2 },
};

START_TEST(test_restart_backoff)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double t = 0, due, starts[4];
	char want[64];

	c.restart = restart_rows[_i].restart;
	c.restart_limit = 0; /* no limit: test_restart_limit has it */
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	for (size_t k = 0; k < sizeof(restart_delays) / sizeof(restart_delays[0]); k++) {
		double d = restart_delays[k];

		lead_until(&M, &t, t + 0.5, starts, 4);
		out = step(&M, ELECTION_CHILD_GONE, restart_rows[_i].status, NULL, t);
		/* the fence goes with the command, and is taken again for the next */
		ck_actions(out, ELECTION_DO_FENCE_DROP | ELECTION_DO_FENCE_TAKE);
		ck_state(&M, ELECTION_LEADER);
		ck_assert(out.state_changed);
		snprintf(want, sizeof(want), "restarting command in %.1fs", d);
		ck_log(out, LOG_LEVEL_NOTICE, want);
		due = t + d;
		ck_assert_int_eq(lead_until(&M, &t, due - JUST, starts, 4), 0);
		ck_assert_int_eq(lead_until(&M, &t, due, starts, 4), 1);
		ck_assert_double_eq(starts[0], due);
	}
}
END_TEST

/* The backoff starts again at 1 s after a run of at least 30 s. */
static const struct {
	double ran;
	double want;
} reset_rows[] = {
	{ 0.5, 16 }, { 29.5, 16 }, { 30, 1 }, { 300, 1 },
};

START_TEST(test_restart_backoff_reset)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double t = 0, due, starts[4];
	char want[64];

	c.restart = RESTART_ON_FAILURE;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	for (int k = 0; k < 4; k++) { /* restarts after 1, 2, 4, 8 s */
		lead_until(&M, &t, t + 0.5, starts, 4);
		step(&M, ELECTION_CHILD_GONE, 1, NULL, t);
		due = t + restart_delays[k];
		ck_assert_int_eq(lead_until(&M, &t, due, starts, 4), 1);
		ck_assert_double_eq(starts[0], due);
	}
	/* the next delay would be 16 s, unless this run lasted 30 s */
	lead_until(&M, &t, t + reset_rows[_i].ran, starts, 4);
	out = step(&M, ELECTION_CHILD_GONE, 1, NULL, t);
	snprintf(want, sizeof(want), "restarting command in %.1fs", reset_rows[_i].want);
	ck_log(out, LOG_LEVEL_NOTICE, want);
	due = t + reset_rows[_i].want;
	ck_assert_int_eq(lead_until(&M, &t, due - JUST, starts, 4), 0);
	ck_assert_int_eq(lead_until(&M, &t, due, starts, 4), 1);
	ck_assert_double_eq(starts[0], due);
	if (reset_rows[_i].want == 1) {
		/* and doubles again from there */
		lead_until(&M, &t, t + 0.5, starts, 4);
		out = step(&M, ELECTION_CHILD_GONE, 1, NULL, t);
		ck_log(out, LOG_LEVEL_NOTICE, "restarting command in 2.0s");
	}
}
END_TEST

START_TEST(test_restart_pending_then_shutdown)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.restart = RESTART_ALWAYS;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 0, NULL, 0.25),
		   ELECTION_DO_FENCE_DROP | ELECTION_DO_FENCE_TAKE);
	out = step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 0.5);
	ck_actions(out, ELECTION_DO_RELEASE);
	ck_actions(tick(&M, 1.25), 0); /* the restart is off */
	out = step(&M, ELECTION_RELEASED, 0, NULL, 1.5);
	ck_exit(out, &M, 0);
}
END_TEST

START_TEST(test_child_gone_without_child_ignored)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.takeover_delay_ms = 5000;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 1, NULL, 0.5), 0);
	ck_state(&M, ELECTION_LEADER);
	to_standby(&M, &defaults, 0);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 1, NULL, 0.5), 0);
	ck_state(&M, ELECTION_STANDBY);
}
END_TEST

/* ---- shutdown --------------------------------------------------------- */

static void setup_init(struct election *e)
{
	election_init(e, &defaults);
}

static void setup_connecting(struct election *e)
{
	election_init(e, &defaults);
	step(e, ELECTION_START, 0, NULL, 0);
}

static void setup_backoff(struct election *e)
{
	setup_connecting(e);
	step(e, ELECTION_CONNECT_FAILED, 0, "down", 1);
}

static void setup_standby_try(struct election *e)
{
	to_standby(e, &defaults, 0);
}

static void setup_standby_queued(struct election *e)
{
	to_standby(e, &defaults, 0);
	step(e, ELECTION_LOCK_BUSY, 0, NULL, 1);
}

static void setup_standby_poll_idle(struct election *e)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.acquire = ACQUIRE_POLL;
	p = daemon_params(&c);
	to_standby(e, &p, 0);
	step(e, ELECTION_LOCK_BUSY, 0, NULL, 1);
}

static void setup_leader(struct election *e)
{
	to_leader(e, &defaults, 0);
}

static void setup_leader_ping_out(struct election *e)
{
	to_leader(e, &defaults, 0);
	tick(e, 1);
}

static void setup_leader_takeover(struct election *e)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.takeover_delay_ms = 30000;
	p = daemon_params(&c);
	to_leader(e, &p, 0);
}

static void setup_demoting(struct election *e)
{
	to_leader(e, &defaults, 0);
	tick(e, 1);
	tick(e, 5);
}

static void setup_demoting_conn_lost(struct election *e)
{
	to_leader(e, &defaults, 0);
	step(e, ELECTION_CONN_LOST, 0, "gone", 2);
}

struct script_step {
	int type;
	int code;
	unsigned want;
	enum election_state state;
};

static const struct {
	const char *name;
	void (*setup)(struct election *e);
	struct script_step steps[3]; /* SHUTDOWN first; then until EXIT */
} shutdown_rows[] = {
	/* no session open yet */
	{ "init", setup_init, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "connecting, request pending", setup_connecting, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE |
		  ELECTION_DO_EXIT,
		  ELECTION_DONE } } },
	{ "connecting, backing off", setup_backoff, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "standby, try in flight", setup_standby_try, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE |
		  ELECTION_DO_EXIT,
		  ELECTION_DONE } } },
	{ "standby, queued for the lock", setup_standby_queued, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE |
		  ELECTION_DO_EXIT,
		  ELECTION_DONE } } },
	/* a polling standby's fence session is closed already (DESIGN 15) */
	{ "standby, polling, idle", setup_standby_poll_idle, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_RELEASE, ELECTION_RELEASING },
		{ ELECTION_RELEASED, 0, ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "leader", setup_leader, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_STOP_CHILD, ELECTION_SHUTTING_DOWN },
		{ ELECTION_CHILD_GONE, 143, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP, ELECTION_RELEASING },
		{ ELECTION_RELEASED, 0, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "leader, ping in flight", setup_leader_ping_out, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_STOP_CHILD, ELECTION_SHUTTING_DOWN },
		{ ELECTION_CHILD_GONE, 0, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP, ELECTION_RELEASING },
		{ ELECTION_RELEASED, 0, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "leader, takeover delay", setup_leader_takeover, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_RELEASE, ELECTION_RELEASING },
		{ ELECTION_RELEASED, 0, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "demoting", setup_demoting, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_STOP_CHILD, ELECTION_SHUTTING_DOWN },
		{ ELECTION_CHILD_GONE, 1, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP, ELECTION_RELEASING },
		{ ELECTION_RELEASED, 0, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT, ELECTION_DONE } } },
	{ "demoting, connection lost", setup_demoting_conn_lost, {
		{ ELECTION_SHUTDOWN, 0, ELECTION_DO_STOP_CHILD, ELECTION_SHUTTING_DOWN },
		{ ELECTION_CHILD_GONE, 1, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT, ELECTION_DONE } } },
};

START_TEST(test_shutdown_each_state)
{
	double t = 10;

	shutdown_rows[_i].setup(&M);
	for (int k = 0; k < 3; k++) {
		const struct script_step *s = &shutdown_rows[_i].steps[k];
		struct election_output out;
		char ab[160], wb[160];

		if (k > 0 && s->type == ELECTION_START)
			break; /* zeroed row: script over */
		out = step(&M, s->type, s->code, s->type == ELECTION_SHUTDOWN
			   ? "SIGTERM" : NULL, t);
		ck_assert_msg(out.actions == s->want, "%s, step %d: actions %s, want %s",
			      shutdown_rows[_i].name, k, bits(out.actions, ab, sizeof(ab)),
			      bits(s->want, wb, sizeof(wb)));
		ck_assert_msg(M.state == s->state, "%s, step %d: state %s, want %s",
			      shutdown_rows[_i].name, k, election_state_name(M.state),
			      election_state_name(s->state));
		if (k == 0) {
			ck_log(out, LOG_LEVEL_INFO, "received SIGTERM, shutting down");
			ck_assert(out.state_changed);
		}
		if (out.actions & ELECTION_DO_EXIT) {
			ck_assert_int_eq(out.exit_code, 0);
			break;
		}
		t += 1;
	}
	ck_state(&M, ELECTION_DONE);
}
END_TEST

START_TEST(test_shutdown_stops_pinging)
{
	to_leader(&M, &defaults, 0);
	ck_actions(step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 0.5), ELECTION_DO_STOP_CHILD);
	ck_assert(isinf(election_next_wakeup(&M, 0.5)));
	/* the grace period is child.c's: no ping, no lease loss meanwhile */
	ck_actions(tick(&M, 1), 0);
	ck_actions(tick(&M, 100), 0);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 100), 0);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
}
END_TEST

START_TEST(test_release_timeout)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 10);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 143, NULL, 11),
		   ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	ck_wakeup(&M, 11, 13);
	ck_actions(tick(&M, 13 - JUST), 0);
	/* no answer to the unlock: closing the session releases it */
	out = tick(&M, 13);
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, 0);
}
END_TEST

START_TEST(test_release_conn_lost)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	step(&M, ELECTION_CHILD_GONE, 4, NULL, 10);
	out = step(&M, ELECTION_CONN_LOST, 0, "connection closed", 10.5);
	ck_actions(out, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, 4);
}
END_TEST

START_TEST(test_conn_lost_while_stopping)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 10);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "connection closed", 11), 0);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	out = step(&M, ELECTION_CHILD_GONE, 143, NULL, 12);
	/* nothing left to release; the fence session is closed */
	ck_actions(out, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, 0);
}
END_TEST

START_TEST(test_second_shutdown_kills)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	ck_actions(step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 10), ELECTION_DO_STOP_CHILD);
	out = step(&M, ELECTION_SHUTDOWN, 0, "SIGINT", 11);
	ck_actions(out, ELECTION_DO_KILL_CHILD);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	ck_log(out, LOG_LEVEL_NOTICE, "received SIGINT again: killing the command now");
	ck_actions(step(&M, ELECTION_SHUTDOWN, 0, NULL, 11.5), ELECTION_DO_KILL_CHILD);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 137, NULL, 12),
		   ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	/* nothing left to kill */
	out = step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 12.5);
	ck_actions(out, 0);
	ck_no_log(out);
	out = step(&M, ELECTION_RELEASED, 0, NULL, 13);
	ck_exit(out, &M, 0);
}
END_TEST

/* ---- fatal errors ----------------------------------------------------- */

START_TEST(test_fatal_while_connecting)
{
	struct election_output out;

	setup_connecting(&M);
	out = step(&M, ELECTION_FATAL, 69,
		   "cannot connect: password authentication failed (28P01)", 1);
	/* at once; closing what is open is allowed, nothing else */
	ck_assert_uint_eq(out.actions & ~(unsigned)(ELECTION_DO_DISCONNECT |
						    ELECTION_DO_FENCE_CLOSE),
			  ELECTION_DO_EXIT);
	ck_exit(out, &M, 69);
	ck_log(out, LOG_LEVEL_ERROR,
	       "cannot connect: password authentication failed (28P01)");

	setup_backoff(&M);
	out = step(&M, ELECTION_FATAL, 69, NULL, 1.25);
	ck_actions(out, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_EXIT);
	ck_exit(out, &M, 69);
	ck_log(out, LOG_LEVEL_ERROR, "fatal error");
}
END_TEST

START_TEST(test_fatal_in_standby)
{
	struct election_output out;

	setup_standby_poll_idle(&M);
	out = step(&M, ELECTION_FATAL, 78, "a connection pooler is in the way", 2);
	/* the lease closed the connection, and with it the lock: no RELEASE;
	 * a polling standby's fence session is closed already (DESIGN 15) */
	ck_actions(out, ELECTION_DO_EXIT);
	ck_exit(out, &M, 78);
}
END_TEST

START_TEST(test_fatal_while_leading)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	tick(&M, 1);
	out = step(&M, ELECTION_FATAL, 78, "backend pid changed from 10 to 11", 1.5);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	ck_log(out, LOG_LEVEL_ERROR, "backend pid changed from 10 to 11");
	ck_actions(tick(&M, 100), 0);
	/* SIGTERM meanwhile: the command is killed, the fatal code stays */
	out = step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 2);
	ck_actions(out, ELECTION_DO_KILL_CHILD);
	/* the lease closed the connection already: nothing to release */
	ck_exit(step(&M, ELECTION_CHILD_GONE, 137, NULL, 3), &M, 78);
}
END_TEST

START_TEST(test_fatal_while_demoting)
{
	struct election_output out;

	setup_demoting(&M);
	out = step(&M, ELECTION_FATAL, 78, "pooler", 6);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	ck_exit(step(&M, ELECTION_CHILD_GONE, 143, NULL, 7), &M, 78);
}
END_TEST

/* What the code does when a FATAL comes during a shutdown: a non-zero exit
 * code already decided (the command's status) stays; after SIGTERM or a
 * command that exited 0, the error's code is the exit code. */
START_TEST(test_fatal_during_shutdown)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	step(&M, ELECTION_CHILD_GONE, 3, NULL, 1);
	out = step(&M, ELECTION_FATAL, 78, "pooler", 1.5);
	/* the unlock in flight ended with the connection: exit at once */
	ck_log(out, LOG_LEVEL_ERROR, "pooler");
	ck_exit(out, &M, 3);

	to_leader(&M, &defaults, 0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 1);
	out = step(&M, ELECTION_FATAL, 78, "pooler", 1.5);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	ck_assert(!(out.actions & (ELECTION_DO_EXIT | ELECTION_DO_RELEASE)));
	/* the lease closed the connection already: nothing to release */
	ck_exit(step(&M, ELECTION_CHILD_GONE, 143, NULL, 2), &M, 78);
}
END_TEST

/* ---- done, ignored events, names -------------------------------------- */

START_TEST(test_done_ignores_everything)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.nonblock = true;
	p = daemon_params(&c);
	to_standby(&M, &p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0);
	ck_state(&M, ELECTION_DONE);
	static const int every[] = {
		ELECTION_START, ELECTION_TICK, ELECTION_SHUTDOWN, ELECTION_CONNECTED,
		ELECTION_CONNECT_FAILED, ELECTION_LOCK_ACQUIRED, ELECTION_LOCK_BUSY,
		ELECTION_PING_OK, ELECTION_CONN_LOST, ELECTION_FATAL, ELECTION_RELEASED,
		ELECTION_CHILD_STARTED, ELECTION_CHILD_START_FAILED,
		ELECTION_CHILD_KILLED, ELECTION_CHILD_GONE,
	};

	for (size_t k = 0; k < sizeof(every) / sizeof(every[0]); k++) {
		int type = every[k];
		struct election_output out = step(&M, type, 1, "x", 1000 + (double)k);

		ck_actions(out, 0);
		ck_no_log(out);
		ck_assert(!out.state_changed);
		ck_state(&M, ELECTION_DONE);
		ck_assert(isinf(election_next_wakeup(&M, 1000 + (double)k)));
	}
}
END_TEST

START_TEST(test_events_out_of_place_ignored)
{
	struct election_output out;

	/* before START nothing is asked for */
	election_init(&M, &defaults);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 0), 0);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, NULL, 0), 0);
	ck_actions(tick(&M, 0), 0);
	ck_state(&M, ELECTION_INIT);

	setup_connecting(&M);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "x", 1), 0);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 1), 0);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 1), 0);
	ck_actions(step(&M, ELECTION_RELEASED, 0, NULL, 1), 0);
	ck_state(&M, ELECTION_CONNECTING);

	to_standby(&M, &defaults, 0);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 1), 0);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 0, NULL, 1), 0);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 1), 0);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 1), 0);
	ck_state(&M, ELECTION_STANDBY);

	to_leader(&M, &defaults, 0);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 0.5), 0);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 0.5), 0);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0.5), 0);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "x", 0.5);
	ck_actions(out, 0);
	ck_no_log(out);
	ck_state(&M, ELECTION_LEADER);
}
END_TEST

START_TEST(test_state_names)
{
	static const struct {
		enum election_state s;
		const char *name;
	} names[] = {
		{ ELECTION_INIT, "init" },
		{ ELECTION_CONNECTING, "connecting" },
		{ ELECTION_STANDBY, "standby" },
		{ ELECTION_LEADER, "leader" },
		{ ELECTION_DEMOTING, "demoting" },
		{ ELECTION_SHUTTING_DOWN, "shutting down" },
		{ ELECTION_DONE, "done" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		ck_assert_str_eq(election_state_name(names[i].s), names[i].name);
	ck_assert_str_eq(election_state_name((enum election_state)99), "?");
}
END_TEST

/* ---- properties over random runs -------------------------------------- */

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rnd(void) /* [0, 1) */
{
	return (double)(rng() >> 11) / 9007199254740992.0;
}

/* Random durations are multiples of 1/64 s and every parameter is a sum of
 * halves and quarters, so the clock's sums are exact and a deadline the
 * machine reports is the very time at which it counts as passed. */
static double rnd_time(double max)
{
	return floor(rnd() * max * 64) / 64;
}

static bool chance(double p)
{
	return rnd() < p;
}

/* A configuration's values drawn at random (the rest the defaults), and
 * the parameters the daemon builds from it; connect_timeout, the lease's,
 * drawn too. */
static struct election_params random_params(void)
{
	static const double intervals[] = { 0.25, 0.5, 1, 2 };
	struct config c = daemon_cfg;
	struct election_params p;
	double connect_timeout;

	c.acquire = chance(0.6) ? ACQUIRE_WAIT : ACQUIRE_POLL;
	c.nonblock = chance(0.05);
	c.retry_interval_ms = MS(1 + (double)(rng() % 8));
	c.ping_interval_ms = MS(intervals[rng() % 4]);
	c.ping_timeout_ms = MS(intervals[rng() % 4] * 2);
	c.ping_failures = 1 + (int)(rng() % 4);
	c.takeover_delay_ms = MS(chance(0.3) ? (double)(rng() % 4) : 0);
	c.wait_timeout_ms = chance(0.1) ? MS(5 + (double)(rng() % 60)) : -1;
	connect_timeout = 1 + (double)(rng() % 10);
	c.restart = (enum restart_policy)(rng() % 3);
	p = daemon_params(&c);
	p.connect_timeout = connect_timeout;
	return p;
}

/* What the command may be doing, and what may be done to it, whatever
 * the events: actions a after a step that began with the command running
 * when child_before. */
static void check_command_invariants(const struct election *e, bool child_before, unsigned a)
{
	if (a & ELECTION_DO_START_CHILD) {
		ck_assert_msg(e->fence.state == ELECTION_FENCE_HELD,
			      "START_CHILD without the fence");
		ck_assert_msg(!child_before, "START_CHILD while a command runs");
		ck_assert_msg(e->state == ELECTION_LEADER, "START_CHILD in %s",
			      election_state_name(e->state));
	}
	if (e->child_running)
		ck_assert_msg(e->state == ELECTION_LEADER ||
			      e->state == ELECTION_DEMOTING ||
			      e->state == ELECTION_SHUTTING_DOWN,
			      "command running in %s", election_state_name(e->state));
	if (e->state == ELECTION_DEMOTING)
		ck_assert_msg(e->child_running, "demoting without a command");
	if (a & (ELECTION_DO_STOP_CHILD | ELECTION_DO_KILL_CHILD))
		ck_assert_msg(child_before && e->child_running,
			      "STOP/KILL without a command");
	/* nothing that could let another node take the lock, or take it
	 * ourselves, while our command lives */
	if (a & (ELECTION_DO_DISCONNECT | ELECTION_DO_CONNECT | ELECTION_DO_TRY_LOCK |
		 ELECTION_DO_WAIT_LOCK | ELECTION_DO_RELEASE))
		ck_assert_msg(!e->child_running,
			      "actions %#x while the command runs", a);
}

/* The requests of a step from state before that did actions a. */
static void check_request_invariants(const struct election *e, enum election_state before,
				     unsigned a)
{
	if (a & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK))
		ck_assert_msg(e->state == ELECTION_STANDBY, "lock request in %s from %s",
			      election_state_name(e->state), election_state_name(before));
	if (a & ELECTION_DO_PING)
		ck_assert(e->state == ELECTION_LEADER);
	ck_assert_msg(!((a & ELECTION_DO_TRY_LOCK) && (a & ELECTION_DO_WAIT_LOCK)),
		      "two lock requests at once");
	ck_assert_msg(!((a & ELECTION_DO_CONNECT) && (a & ELECTION_DO_EXIT)),
		      "CONNECT and EXIT");
}

/* One exit, and only in done; every deadline at or before now handled. */
static void check_exit_invariants(const struct election *e, unsigned a, double now,
				  unsigned *exits)
{
	if (a & ELECTION_DO_EXIT) {
		(*exits)++;
		ck_assert_uint_eq(*exits, 1);
		ck_assert(e->state == ELECTION_DONE);
		ck_assert(!e->child_running);
		ck_assert(!(a & ~(unsigned)(ELECTION_DO_EXIT | ELECTION_DO_DISCONNECT |
					    ELECTION_DO_FENCE_CLOSE)));
	}
	ck_assert_msg((e->state == ELECTION_DONE) == (*exits == 1),
		      "state %s after %u exits", election_state_name(e->state), *exits);
	/* every deadline at or before now has been handled: no busy loop, no
	 * deadline forgotten */
	if (e->state != ELECTION_DONE && e->state != ELECTION_INIT) {
		double w = election_next_wakeup(e, now);

		ck_assert_msg(w > now, "next wakeup %.17g is not after now %.17g in %s",
			      w, now, election_state_name(e->state));
	}
}

/* Invariants that hold whatever events come, in whatever order. */
static void check_invariants(const struct election *e, bool child_before,
			     enum election_state before,
			     const struct election_output *out, double now,
			     unsigned *exits)
{
	unsigned a = out->actions;

	if (before == ELECTION_DONE) {
		ck_assert_uint_eq(a, 0);
		ck_assert_int_eq(out->n_logs, 0);
		return;
	}
	check_command_invariants(e, child_before, a);
	check_request_invariants(e, before, a);
	check_exit_invariants(e, a, now, exits);
}

/* Chaos: any event at any time, including ones the supervisor would never
 * send in that state. */
START_TEST(test_property_chaos)
{
	for (int run = 0; run < 100; run++) {
		struct election_params p;
		double now = 0;
		unsigned exits = 0;

		rng_state = 0x5eed0000u + (uint64_t)run;
		p = random_params();
		election_init(&M, &p);
		for (int i = 0; i < 3000; i++) {
			static const int events[] = {
				ELECTION_START, ELECTION_TICK, ELECTION_CONNECTED,
				ELECTION_CONNECT_FAILED, ELECTION_LOCK_ACQUIRED,
				ELECTION_LOCK_BUSY, ELECTION_PING_OK, ELECTION_CONN_LOST,
				ELECTION_FATAL, ELECTION_CHILD_GONE, ELECTION_RELEASED,
				ELECTION_SHUTDOWN, ELECTION_CHILD_KILLED,
				FENCE_CONNECTED, FENCE_ACQUIRED, FENCE_BUSY,
				FENCE_FAILED, FENCE_RELEASED,
			};
			int type = events[rng() % (sizeof(events) / sizeof(events[0]))];
			bool child_before = M.child_running;
			enum election_state before = M.state;
			struct election_output out;

			/* START first, most of the time */
			if (i == 0 && chance(0.9))
				type = ELECTION_START;
			if ((type == ELECTION_SHUTDOWN || type == ELECTION_FATAL) &&
			    chance(0.9))
				type = ELECTION_TICK;
			/* RELEASED answers RELEASE, issued only once the command
			 * is gone (asserted above): unsolicited while a command
			 * runs, it would end the machine with the command alive */
			if (type == ELECTION_RELEASED && M.child_running)
				type = ELECTION_TICK;
			now += chance(0.01) ? rnd_time(100) : rnd_time(3);
			out = step(&M, type, (int)(rng() % 3), "x", now);
			check_invariants(&M, child_before, before, &out, now, &exits);
		}
	}
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

#define ROWS(a) ((int)(sizeof(a) / sizeof((a)[0])))


/* ---- decisions new with the one decider: exit table, snapshot ---------- */

static const struct {
	enum fault fault;
	int code;
} exit_rows[] = {
	{ FAULT_NONE, 0 }, { FAULT_USAGE, 64 }, { FAULT_CONFIG, 78 },
	{ FAULT_BAD_DSN, 78 }, { FAULT_AUTH, 69 }, { FAULT_POOLER, 78 },
	{ FAULT_FORK, 126 }, { FAULT_INTERNAL, 70 }, { FAULT_UNREACHABLE, 0 },
	{ FAULT_HOT_STANDBY, 0 }, { FAULT_TERMINATED, 0 }, { FAULT_CONNECTION, 0 },
	{ FAULT_PROTOCOL, 0 }, { FAULT_TIMEOUT, 0 }, { FAULT_PING_TIMEOUT, 0 },
	{ FAULT_COUNT, 0 },
};

START_TEST(test_exit_table)
{
	ck_assert_int_eq(election_exit_for(exit_rows[_i].fault), exit_rows[_i].code);
}
END_TEST

static struct election_output db_failed(struct election *e, enum fault f,
					const char *why, double now)
{
	struct election_event ev = { .type = ELECTION_LOCK,
		.session = { .news = ELECTION_SESSION_FAILED, .fault = f },
		.reason = why };
	struct election_output out;

	election_step(e, &ev, now, &out);
	return out;
}

/* Every permanent fault ends a connecting node at once with its code; every
 * transient one backs off. */
START_TEST(test_fault_classes_while_connecting)
{
	enum fault f = (enum fault)_i;
	struct election_output out;

	if (f == FAULT_NONE)
		return;
	setup_connecting(&M);
	out = db_failed(&M, f, "why", 1);
	if (election_exit_for(f)) {
		ck_exit(out, &M, election_exit_for(f));
		ck_log(out, LOG_LEVEL_ERROR, "why");
	} else {
		ck_state(&M, ELECTION_BACKOFF);
		ck_log(out, LOG_LEVEL_WARNING, "why; retrying in 0.5s");
	}
}
END_TEST

/* A one-shot makes one attempt: a database that cannot be reached is 69,
 * never the conflict code (75), which means "another node has it". */
START_TEST(test_nonblock_unreachable)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.nonblock = true;
	p = daemon_params(&c);
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	out = db_failed(&M, FAULT_UNREACHABLE, "connection refused", 0.5);
	ck_exit(out, &M, 69);
	ck_log(out, LOG_LEVEL_ERROR,
	       "connection refused; giving up (one attempt with --nonblock)");

	/* the attempt is bounded by connect_timeout */
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	ck_actions(tick(&M, 10 - JUST), 0);
	out = tick(&M, 10);
	ck_assert(out.actions & ELECTION_DO_DISCONNECT);
	ck_exit(out, &M, 69);
}
END_TEST

/* --wait-timeout: 75 only after the database said the lock is held. */
START_TEST(test_wait_timeout_busy_is_conflict)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.wait_timeout_ms = 3000;
	p = daemon_params(&c);
	to_standby(&M, &p, 0);
	ck_actions(step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0), ELECTION_DO_WAIT_LOCK);
	ck_exit(tick(&M, 3), &M, 75);
}
END_TEST

/* A command that cannot be executed never restarts, whatever --restart. */
START_TEST(test_unexecutable_never_restarts)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	c.restart = RESTART_ALWAYS;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	out = step(&M, ELECTION_CHILD_GONE, 126 + _i, NULL, 0.5);
	ck_actions(out, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	ck_state(&M, ELECTION_RELEASING);
	ck_exit(step(&M, ELECTION_RELEASED, 0, NULL, 0.75), &M, 126 + _i);
}
END_TEST

START_TEST(test_fork_failure)
{
	struct election_output out;
	struct election_event ev = { .type = ELECTION_COMMAND,
		.command = { .news = ELECTION_COMMAND_START_FAILED, .fault = FAULT_FORK },
		.reason = "fork: Resource temporarily unavailable" };

	to_standby(&M, &defaults, 0);
	/* the command's start is an action, once the fence is held and the
	 * controls read (answered here by hand); fork fails before any pid */
	election_step(&M, &(struct election_event){ .type = ELECTION_LOCK,
			.session = { .news = ELECTION_SESSION_ACQUIRED, .lock_key = 1,
				     .fencing_token = 2 } }, 0, &out);
	ck_actions(out, LEAD_FIRST);
	election_step(&M, &(struct election_event){ .type = ELECTION_FENCE,
			.session = { .news = ELECTION_SESSION_ACQUIRED } }, 0, &out);
	ck_actions(out, 0);
	election_step(&M, &(struct election_event){ .type = ELECTION_CONTROLS,
			.controls = { .news = ELECTION_CONTROLS_READ,
				      .in_force = &nothing_in_force } }, 0, &out);
	ck_actions(out, ELECTION_DO_START_CHILD);
	election_step(&M, &ev, 0, &out);
	/* the fence goes with the command that never was */
	ck_actions(out, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	ck_log(out, LOG_LEVEL_ERROR,
	       "cannot start command: fork: Resource temporarily unavailable");
	ck_exit(step(&M, ELECTION_RELEASED, 0, NULL, 0.5), &M, 126);
	ck_assert_uint_eq(election_snapshot(&M)->counters.command_starts, 0);
}
END_TEST

START_TEST(test_abandon)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	ck_assert_int_eq(election_exit_code(&M), 70);
	election_abandon(&M, &out);
	ck_exit(out, &M, 70);
	ck_log(out, LOG_LEVEL_ERROR,
	       "internal error: the event loop stopped in state leader");
	ck_assert_int_eq(election_exit_code(&M), 70);
}
END_TEST

/* STOPPING is said once, when the shutdown begins. */
START_TEST(test_stopping_said_once)
{
	struct election_output out;

	to_leader(&M, &defaults, 0);
	out = step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 1);
	ck_assert(out.stopping);
	out = step(&M, ELECTION_CHILD_GONE, 143, NULL, 2);
	ck_assert(!out.stopping);
	out = step(&M, ELECTION_RELEASED, 0, NULL, 2);
	ck_assert(!out.stopping);
	ck_log(out, LOG_LEVEL_INFO, "released leader lease");
	ck_exit(out, &M, 0);
}
END_TEST

/* The snapshot from init to a standby whose first try found the lock busy,
 * after one failed connection; the time it became standby. */
static double snapshot_to_standby(const struct election_snapshot *s, double t)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	c.node_id = "n1";
	c.lock_name = "reports";
	p = daemon_params(&c);
	election_init(&M, &p);
	ck_assert_int_eq(s->state, ELECTION_INIT);
	ck_assert_str_eq(s->node_id, "n1");
	step(&M, ELECTION_START, 0, NULL, t);
	ck_assert(!s->db_connected);
	db_failed(&M, FAULT_UNREACHABLE, "refused", t + 0.25);
	ck_assert_uint_eq(s->counters.connect_failures, 1);
	t = election_next_wakeup(&M, t);
	tick(&M, t);
	step(&M, ELECTION_CONNECTED, 0, NULL, t);
	ck_assert(s->db_connected);
	ck_assert_int_eq(s->state, ELECTION_STANDBY);
	ck_assert_double_eq(s->since, t);
	ck_assert_double_eq(s->since_wall, t + 1.7e9);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, t);
	return t;
}

/* The snapshot of a leader, its command started and one ping answered. */
static void snapshot_lead(const struct election_snapshot *s, double t)
{
	step(&M, ELECTION_LOCK_ACQUIRED, 0, "key -5, fencing token 77", t + 0.02);
	ck_assert_int_eq(s->state, ELECTION_LEADER);
	ck_assert_uint_eq(s->term, 1);
	ck_assert_int_eq(s->lock_key, -5);
	ck_assert_uint_eq(s->fencing_token, 77);
	ck_assert_uint_eq(s->counters.acquisitions, 1);
	ck_assert_uint_eq(s->counters.lock_wait.count, 1);
	ck_assert_uint_eq(s->counters.lock_wait.counts[4], 1); /* le 0.025 */
	ck_assert_double_eq(s->leader_since_wall, t + 0.02 + 1.7e9);
	ck_assert_int_eq(s->command_pid, 4242);
	ck_assert_uint_eq(s->counters.command_starts, 1);
	/* one ping answered in 3 ms */
	tick(&M, t + 1.02);
	step(&M, ELECTION_PING_OK, 0, NULL, t + 1.023);
	ck_assert_uint_eq(s->counters.ping_duration.count, 1);
	ck_assert_uint_eq(s->counters.ping_duration.counts[2], 1); /* le 0.005 */
	ck_assert_double_eq(s->last_ping_reply, t + 1.023);
}

/* The snapshot through a loss, the command killed, and a second term. */
static void snapshot_loss_and_second_term(const struct election_snapshot *s, double t)
{
	struct election_output out;

	/* lost to pg_terminate_backend; the command is killed after the grace */
	out = db_failed(&M, FAULT_TERMINATED, "terminating connection", t + 1.5);
	ck_assert_int_eq(s->state, ELECTION_DEMOTING);
	ck_log(out, LOG_LEVEL_WARNING, "lost leader lease: terminating connection");
	ck_assert_int_eq(out.logs[0].fault, FAULT_TERMINATED); /* the reason field */
	ck_assert_uint_eq(s->counters.losses[FAULT_TERMINATED], 1);
	ck_assert_double_eq(s->leader_since_wall, 0);
	step(&M, ELECTION_CHILD_KILLED, 0, NULL, t + 9.5);
	ck_assert_uint_eq(s->counters.command_kills, 1);
	step(&M, ELECTION_CHILD_GONE, 137, NULL, t + 9.5);
	ck_assert_int_eq(s->command_pid, 0);
	ck_assert_uint_eq(s->counters.command_exits[ELECTION_OUTCOME_SIGNAL], 1);
	ck_assert_int_eq(s->state, ELECTION_CONNECTING);
	/* a second term counts on */
	step(&M, ELECTION_CONNECTED, 0, NULL, t + 10);
	step(&M, ELECTION_LOCK_ACQUIRED, 0, "key -5, fencing token 80", t + 10);
	ck_assert_uint_eq(s->term, 2);
	ck_assert_uint_eq(s->fencing_token, 80);
	step(&M, ELECTION_CHILD_GONE, 0, NULL, t + 11);
	ck_assert_uint_eq(s->counters.command_exits[ELECTION_OUTCOME_SUCCESS], 1);
}

/* What the snapshot says over one leadership: what metrics and peers read. */
START_TEST(test_snapshot_one_term)
{
	const struct election_snapshot *s = election_snapshot(&M);
	double t;

	t = snapshot_to_standby(s, 10);
	snapshot_lead(s, t);
	snapshot_loss_and_second_term(s, t);
}
END_TEST

START_TEST(test_outcome_labels)
{
	ck_assert_str_eq(election_outcome_label(ELECTION_OUTCOME_SUCCESS), "success");
	ck_assert_str_eq(election_outcome_label(ELECTION_OUTCOME_FAILURE), "failure");
	ck_assert_str_eq(election_outcome_label(ELECTION_OUTCOME_SIGNAL), "signal");
	for (int f = 0; f < FAULT_COUNT; f++)
		ck_assert_str_ne(fault_label((enum fault)f), "unknown");
	for (int st = 0; st < ELECTION_STATE_COUNT; st++)
		ck_assert_str_ne(election_state_name((enum election_state)st), "?");
}
END_TEST


/* ---- the fence ---------------------------------------------------------- */

static struct election_output fence_news(struct election *e, int news,
					 enum fault f, double now)
{
	struct election_event ev = { .type = ELECTION_FENCE,
		.session = { .news = (enum election_session_news)news, .fault = f },
		.reason = "x" };
	struct election_output out;

	election_step(e, &ev, now, &out);
	return out;
}

/* A leader with the fence on: both sessions open, the lock won. */
static void fenced_leader(double t)
{
	struct election_params p = defaults;
	struct election_output out;

	answer_fence = false; /* the test plays the fence session */
	election_init(&M, &p);
	/* both sessions are opened at once */
	ck_actions(step(&M, ELECTION_START, 0, NULL, t),
		   ELECTION_DO_CONNECT | ELECTION_DO_FENCE_CONNECT);
	ck_actions(fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, t), 0);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, t), STANDBY_READ);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 2", t);
	/* the fence first, the command only once it is held (the controls
	 * read, answered by step(), does not start it alone) */
	ck_actions(out, LEAD_FIRST);
	ck_state(&M, ELECTION_LEADER);
	ck_assert(!M.child_running);
}

START_TEST(test_fence_before_command)
{
	struct election_output out;

	fenced_leader(0);
	/* the old leader's command is still stopping: the wait times out */
	out = fence_news(&M, ELECTION_SESSION_BUSY, FAULT_NONE, 0.5);
	ck_actions(out, ELECTION_DO_FENCE_TAKE);
	ck_log(out, LOG_LEVEL_NOTICE, "waiting for the fence: the previous "
	       "leader's command is still stopping");
	/* the leader pings on meanwhile */
	out = fence_news(&M, ELECTION_SESSION_BUSY, FAULT_NONE, 1);
	/* (and reads the controls; the fence not held, no fence ping) */
	ck_actions(out, ELECTION_DO_FENCE_TAKE | ELECTION_DO_PING | ELECTION_DO_CONTROLS_READ);
	ck_no_log(out);
	ck_actions(step(&M, ELECTION_PING_OK, 0, NULL, 1), 0);
	out = fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 1.5);
	ck_actions(out, ELECTION_DO_START_CHILD);
	ck_assert(election_snapshot(&M)->fence_held);
}
END_TEST

/* Losing the fence session alone is no demotion: reopen it, take it again. */
START_TEST(test_fence_lost_while_leading)
{
	struct election_output out;

	fenced_leader(0);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	ck_assert(M.child_running);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 0.25);
	ck_actions(out, 0);
	ck_state(&M, ELECTION_LEADER);
	ck_log(out, LOG_LEVEL_WARNING, "fence session: x; reconnecting in 0.5s");
	ck_wakeup(&M, 0.25, 0.75);
	ck_actions(tick(&M, 0.75), ELECTION_DO_FENCE_CONNECT);
	out = fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 0.8);
	ck_actions(out, ELECTION_DO_FENCE_TAKE);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0.8), 0);
	ck_assert(M.child_running);
}
END_TEST

/* A fence session that stays down is warned about once, not at every
 * reconnection that fails, and its return is said (issue 17 item 6.12). */
START_TEST(test_fence_outage_warned_once)
{
	struct election_output out;

	fenced_leader(0);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 0.25);
	ck_log(out, LOG_LEVEL_WARNING, "fence session: x; reconnecting in 0.5s");
	ck_assert(tick(&M, 0.75).actions & ELECTION_DO_FENCE_CONNECT);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_UNREACHABLE, 0.8);
	ck_log(out, LOG_LEVEL_DEBUG, "fence session: x; reconnecting in 1.0s");
	step(&M, ELECTION_PING_OK, 0, NULL, 1.0);
	ck_assert(tick(&M, 1.8).actions & ELECTION_DO_FENCE_CONNECT);
	step(&M, ELECTION_PING_OK, 0, NULL, 1.8);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_UNREACHABLE, 1.85);
	ck_log_prefix(out, LOG_LEVEL_DEBUG, "fence session: x; reconnecting in ");
	ck_state(&M, ELECTION_LEADER);
	ck_assert(tick(&M, 3.9).actions & ELECTION_DO_FENCE_CONNECT);
	step(&M, ELECTION_PING_OK, 0, NULL, 3.9);
	out = fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 3.95);
	ck_log(out, LOG_LEVEL_NOTICE, "fence session: connected again");
	ck_assert(out.actions & ELECTION_DO_FENCE_TAKE);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 3.95);
	/* the next outage is warned about again */
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 4);
	ck_log(out, LOG_LEVEL_WARNING, "fence session: x; reconnecting in 0.5s");
}
END_TEST

/* The fence goes once the command's group is gone, not before. */
START_TEST(test_fence_dropped_after_command)
{
	struct election_output out;

	fenced_leader(0);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	out = step(&M, ELECTION_CONN_LOST, 0, "terminated", 0.5);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	out = step(&M, ELECTION_CHILD_GONE, 143, NULL, 2);
	ck_actions(out, ELECTION_DO_FENCE_DROP | ELECTION_DO_CONNECT);
	ck_actions(fence_news(&M, ELECTION_SESSION_RELEASED, FAULT_NONE, 2), 0);
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_READY);
}
END_TEST

/* Demoted while still waiting for the fence: the wait is abandoned. */
START_TEST(test_fence_wait_abandoned)
{
	struct election_output out;

	fenced_leader(0);
	out = step(&M, ELECTION_CONN_LOST, 0, "terminated", 0.5);
	/* closed to end the wait; reopened with the lock session */
	ck_actions(out, ELECTION_DO_FENCE_CLOSE | ELECTION_DO_CONNECT);
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_CLOSED);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 0.6),
		   ELECTION_DO_TRY_LOCK | ELECTION_DO_FENCE_CONNECT);
	/* shutting down while waiting for the fence: no command to stop */
	fenced_leader(0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 1);
	ck_state(&M, ELECTION_RELEASING);
}
END_TEST

/* A fence wait that ended when the node no longer leads gives back what
 * the session may hold: PostgreSQL can cancel a wait on lock_timeout just as
 * it grants the lock, and a session lock outlives the aborted statement. */
START_TEST(test_fence_busy_after_demotion)
{
	struct election_output out;

	fenced_leader(0);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	step(&M, ELECTION_CONN_LOST, 0, "terminated", 0.5);
	ck_state(&M, ELECTION_DEMOTING);
	M.fence.state = ELECTION_FENCE_TAKING; /* say a take was in flight */
	out = fence_news(&M, ELECTION_SESSION_BUSY, FAULT_NONE, 1);
	/* held elsewhere while the command stops: it is killed too */
	ck_actions(out, ELECTION_DO_KILL_CHILD | ELECTION_DO_FENCE_DROP);
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_DROPPING);
	/* given back: not taken again, the command dies now anyway */
	ck_actions(fence_news(&M, ELECTION_SESSION_RELEASED, FAULT_NONE, 1), 0);
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_READY);
}
END_TEST

/* Sim finding 12: a pgleader thawed after a long freeze (SIGSTOP) reads
 * news that one of its sessions held for it, in a step whose deadlines
 * have run out and end that very session. The news is stale: the deadlines
 * decide alone, and nothing is asked for on the session they close. */
static struct election_output lock_news(struct election *e, int news, double now)
{
	struct election_event ev = { .type = ELECTION_LOCK, .wall = now + 1.7e9,
		.session = { .news = (enum election_session_news)news } };
	struct election_output out;

	memset(&out, 0xa5, sizeof(out)); /* the machine must clear it */
	election_step(e, &ev, now, &out);
	return out;
}

/* A leader still waiting for the fence hears, 100 s on, that the wait ran
 * out (BUSY): its pings ended the lease meanwhile. It does not take the
 * fence again on the session it closes (before the fix: FENCE_TAKE beside
 * FENCE_CLOSE, and "waiting for the fence" said). */
START_TEST(test_frozen_leader_stale_fence_busy)
{
	struct election_output out;

	fenced_leader(0);
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_TAKING);
	out = fence_news(&M, ELECTION_SESSION_BUSY, FAULT_NONE, 100);
	ck_actions(out, ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_CLOSE |
		   ELECTION_DO_CONNECT);
	ck_state(&M, ELECTION_CONNECTING);
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_CLOSED);
	ck_assert_int_eq(out.n_logs, 1);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost leader lease: ping timed out 98 times");
}
END_TEST

/* A standby whose lock request is 100 s old hears that the lock was
 * granted: the request's deadline closes the lock session, so the grant
 * is not followed (before the fix: FENCE_TAKE and CONTROLS_READ beside
 * DISCONNECT and FENCE_CLOSE), and the fence session stays as it was.
 * News that answers the request the deadline waited for is no stale news:
 * a queued wait's end (BUSY) read as late queues again on the same
 * session, and the deadline, a new one, ends nothing. */
static void frozen_standby_answer_heard(void)
{
	struct election_output out;

	to_standby(&M, &defaults, 0);
	ck_actions(busy(&M, 0, 1), ELECTION_DO_WAIT_LOCK);
	world_silent();
	out = busy(&M, -1, 100);
	ck_actions(out, ELECTION_DO_WAIT_LOCK | ELECTION_DO_CONTROLS_READ);
	ck_state(&M, ELECTION_STANDBY);
	ck_assert_double_eq(M.request_deadline, 100 + 5 + 2);
}

START_TEST(test_frozen_standby_stale_grant)
{
	struct election_output out;

	to_standby(&M, &defaults, 0);
	world_silent();
	out = lock_news(&M, ELECTION_SESSION_GRANTED, 100);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_BACKOFF);
	ck_assert(isinf(M.granted_at));
	ck_assert_int_eq(M.fence.state, ELECTION_FENCE_READY);
	ck_log(out, LOG_LEVEL_WARNING,
	       "lock request got no answer in time; retrying in 0.5s");
	/* nor does the claim that follows make it leader */
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 2", 100), 0);
	ck_state(&M, ELECTION_BACKOFF);
	world_answers();
	frozen_standby_answer_heard();
}
END_TEST

/* A one-shot opens both sessions at once, one attempt each: a fence
 * session that failed before the database answered is opened again only
 * once the lock session connected, never while the lock session is still
 * trying; the lock session's failure decides the exit. */
START_TEST(test_fence_of_a_one_shot)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;

	answer_fence = false; /* the test plays the fence session */
	c.nonblock = true;
	p = daemon_params(&c);
	election_init(&M, &p);
	ck_actions(step(&M, ELECTION_START, 0, NULL, 0),
		   ELECTION_DO_CONNECT | ELECTION_DO_FENCE_CONNECT);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_UNREACHABLE, 0.25);
	ck_assert(isinf(election_next_wakeup(&M, 0.25)) ||
		  election_next_wakeup(&M, 0.25) >= 10);
	ck_actions(tick(&M, 5), 0);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 6),
		   STANDBY_READ | ELECTION_DO_FENCE_CONNECT);

	/* the database down: both fail, the lock session's failure is 69 */
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_UNREACHABLE, 0.25);
	out = step(&M, ELECTION_CONNECT_FAILED, 0, "connection refused", 0.25);
	ck_exit(out, &M, 69);
}
END_TEST

/* Exiting closes the fence session with the lock session. */
START_TEST(test_fence_closed_on_exit)
{
	struct election_output out;

	fenced_leader(0);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 1);
	out = step(&M, ELECTION_CHILD_GONE, 143, NULL, 2);
	ck_actions(out, ELECTION_DO_FENCE_DROP | ELECTION_DO_RELEASE);
	out = step(&M, ELECTION_RELEASED, 0, NULL, 2);
	ck_assert(out.actions & ELECTION_DO_FENCE_CLOSE);
	ck_exit(out, &M, 0);
}
END_TEST

/* A pooler on the fence session is as permanent as on the lock's. */
START_TEST(test_fence_permanent_fault)
{
	struct election_output out;

	fenced_leader(0);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_POOLER, 1);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	step(&M, ELECTION_CHILD_GONE, 143, NULL, 2);
	ck_exit(step(&M, ELECTION_RELEASED, 0, NULL, 2), &M, 78);
}
END_TEST


/* A fenced leader whose command runs: the fence held. */
static void fenced_running(double t)
{
	fenced_leader(t);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, t),
		   ELECTION_DO_START_CHILD);
	ck_assert(M.child_running);
}

/* Issue 17, 1: both sessions lost together (a restart, a switchover) while
 * the command stops: the fence session is reopened at once and every
 * ELECTION_FENCE_RETRY_STOPPING, the fence tried (not waited for) as soon
 * as the database answers, and held until the command is gone. */
START_TEST(test_fence_taken_again_while_stopping)
{
	struct election_output out;

	fenced_running(0);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 1),
		   ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 1.125);
	ck_actions(out, ELECTION_DO_FENCE_CONNECT);
	ck_no_log(out);
	/* the database is still away */
	ck_actions(fence_news(&M, ELECTION_SESSION_FAILED, FAULT_UNREACHABLE, 1.25), 0);
	ck_wakeup(&M, 1.25, 1.25 + ELECTION_FENCE_RETRY_STOPPING);
	ck_actions(tick(&M, 1.5 - JUST), 0);
	ck_actions(tick(&M, 1.5), ELECTION_DO_FENCE_CONNECT);
	/* back: a try, answered at once */
	ck_actions(fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 1.75),
		   ELECTION_DO_FENCE_TRY);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 1.75), 0);
	ck_assert(election_snapshot(&M)->fence_held);
	ck_state(&M, ELECTION_DEMOTING);
	/* given back once the command is gone */
	ck_actions(step(&M, ELECTION_CHILD_GONE, 143, NULL, 3),
		   ELECTION_DO_FENCE_DROP | ELECTION_DO_CONNECT);
	/* the fence first, then the lock: the same */
	fenced_running(0);
	ck_actions(fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 0.5), 0);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 0.625),
		   ELECTION_DO_STOP_CHILD | ELECTION_DO_FENCE_CONNECT);
}
END_TEST

/* Issue 17, 1: a standby that saw its session lost gets the lock soon after
 * its connection came back: it takes the fence ELECTION_SETTLE after that,
 * but never later than the outage's start plus grace_period plus
 * ELECTION_KILL_GONE (sim finding 5: the old command, SIGKILLed at the end
 * of its grace period, may take that long to be gone). */
static const struct {
	double lost, back, acquired, take_at;
} settle_rows[] = {
	{ 10, 10.5, 10.75, 11.5 },   /* a restart: settle from the reconnection */
	{ 10, 12, 13.5, 13.5 },      /* got it 1.5 s after: at once */
	{ 10, 17.5, 17.5, 18.5 },    /* past lost + grace_period: SIGKILL's time */
	{ 10, 18.5, 18.5, 19 },      /* capped by lost + 8 s + ELECTION_KILL_GONE */
	{ 10, 19, 19, 19 },          /* away longer than that: at once */
};

/* A standby (grace_period 8 s) that lost its session at `lost` and is
 * back at `back`; the test plays the fence session. With failsafe:
 * members a and b, failsafe_ttl 15 s. */
static void settle_standby_with(double lost, double back, bool failsafe)
{
	struct config c = daemon_cfg;
	static struct election_params p;

	answer_fence = false;
	if (failsafe) {
		c.failsafe_peers = "a=127.0.0.1:8008,b=127.0.0.1:8009";
		c.failsafe_ttl_ms = 15000;
	}
	c.grace_period_ms = 8000;
	p = daemon_params(&c);
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 0);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0);
	step(&M, ELECTION_CONN_LOST, 0, "terminating connection", lost);
	ck_state(&M, ELECTION_BACKOFF);
	/* reconnecting fails meanwhile: the outage began at the loss */
	step(&M, ELECTION_CONNECT_FAILED, 0, "refused", lost);
	M.state = ELECTION_CONNECTING; /* the attempt that succeeds */
	M.connected = true;
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, back), STANDBY_READ);
}

static void settle_standby(double lost, double back)
{
	settle_standby_with(lost, back, false);
}

START_TEST(test_settle_after_outage)
{
	struct election_output out;
	double take_at = settle_rows[_i].take_at, t;

	settle_standby(settle_rows[_i].lost, settle_rows[_i].back);
	t = settle_rows[_i].acquired;
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", t);
	ck_state(&M, ELECTION_LEADER);
	if (take_at <= t) {
		ck_actions(out, LEAD_FIRST);
		return;
	}
	ck_actions(out, ELECTION_DO_CONTROLS_READ); /* the fence later */
	ck_assert_int_eq(out.n_logs, 2); /* after "acquired leader lease" */
	ck_assert_msg(!strncmp(out.logs[1].text, "the database was away: taking the "
			       "fence in", 40), "%s", out.logs[1].text);
	ck_wakeup(&M, t, take_at);
	/* pings and reads are not the point */
	M.next_ping_at = M.next_ctl_at = 100;
	ck_actions(tick(&M, take_at - JUST), 0);
	ck_actions(tick(&M, take_at), ELECTION_DO_FENCE_TAKE);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, take_at),
		   ELECTION_DO_START_CHILD);
}
END_TEST

/* A lock granted within the settle wait: the fence is not asked for before
 * the claim is back, and then only once the wait is over; granted after it,
 * at once, before the claim is back. */
START_TEST(test_granted_waits_for_settle)
{
	struct election_output out;
	double take_at = settle_rows[_i].take_at, t = settle_rows[_i].acquired;

	settle_standby(settle_rows[_i].lost, settle_rows[_i].back);
	out = step(&M, ELECTION_LOCK_GRANTED, 0, NULL, t);
	ck_state(&M, ELECTION_STANDBY);
	if (take_at <= t) {
		ck_actions(out, LEAD_FIRST);
		return;
	}
	ck_actions(out, 0);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", t);
	ck_actions(out, ELECTION_DO_CONTROLS_READ); /* the fence later */
	M.next_ping_at = M.next_ctl_at = 100;
	ck_actions(tick(&M, take_at), ELECTION_DO_FENCE_TAKE);
}
END_TEST

/* Only a session that was up and lost counts: failing to connect at start,
 * or the previous outage long gone, is no reason to wait. */
START_TEST(test_no_settle_without_outage)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	answer_fence = false; /* the test plays the fence session */
	c.grace_period_ms = 8000;
	p = daemon_params(&c);
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 0);
	step(&M, ELECTION_CONNECT_FAILED, 0, "refused", 0);
	tick(&M, 0.5);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0.75);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", 1),
		   LEAD_FIRST);
}
END_TEST

/* A leader with the fence and this grace period, its command running. */
static void fenced_running_grace(double grace)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;

	answer_fence = false; /* the test plays the fence session */
	c.grace_period_ms = MS(grace);
	p = daemon_params(&c);
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 0);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0);
	step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 2", 0);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0),
		   ELECTION_DO_START_CHILD);
}

/* Sim finding 6: a node that lost its lock as leader and is still stopping
 * its command sees a restart only through its fence session; when it gets
 * the lock after the restart, its settle wait runs from that loss, not from
 * the lock's (or from nothing: a node that led waits for nothing). */
START_TEST(test_settle_after_later_outage)
{
	struct election_output out;

	fenced_running_grace(8);
	/* the lock ended alone (pg_terminate_backend): the fence keeps the
	 * next leader waiting while the command stops */
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 1),
		   ELECTION_DO_STOP_CHILD);
	/* 20 s later the database restarts: the fence goes too, a kill */
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 20);
	ck_actions(out, ELECTION_DO_KILL_CHILD);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 137, NULL, 20.25), ELECTION_DO_CONNECT);
	step(&M, ELECTION_CONNECT_FAILED, 0, "refused", 20.5);
	M.state = ELECTION_CONNECTING; /* the attempt that succeeds */
	M.connected = true;
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 21), STANDBY_READ |
		   ELECTION_DO_FENCE_CONNECT);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 21);
	/* the leader at the restart may still be stopping its command: the
	 * settle wait, from the reconnection (the cap, 20 + 8 + 1, is later) */
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", 21);
	ck_state(&M, ELECTION_LEADER);
	ck_actions(out, ELECTION_DO_CONTROLS_READ); /* the fence later */
	ck_wakeup(&M, 21, 22);
	/* pings and reads are not the point */
	M.next_ping_at = M.next_ctl_at = 100;
	ck_actions(tick(&M, 22 - JUST), 0);
	ck_actions(tick(&M, 22), ELECTION_DO_FENCE_TAKE);
}
END_TEST

/* The leader at the restart loses both sessions together: nobody else led
 * meanwhile, so it waits for nothing when it gets the lock again. */
START_TEST(test_no_settle_for_the_leader)
{
	fenced_running_grace(8);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 10),
		   ELECTION_DO_STOP_CHILD);
	ck_actions(fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 10.125),
		   ELECTION_DO_FENCE_CONNECT);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 143, NULL, 10.25), ELECTION_DO_CONNECT);
	M.connected = true;
	step(&M, ELECTION_CONNECTED, 0, NULL, 11);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 11);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", 11),
		   LEAD_FIRST);
}
END_TEST

/* The same with an older loss on record: the lock lost while the command
 * was stopping (after the pings gave up) caps a later wait at that loss
 * plus grace_period, long over; the restart seen through the fence is the
 * one that counts. */
START_TEST(test_settle_from_latest_loss)
{
	struct election_output out;

	fenced_running_grace(8);
	/* the held fence is pinged with the lock: the election says so */
	ck_actions(tick(&M, 1), LEADER_PING);
	ck_actions(tick(&M, 5), ELECTION_DO_STOP_CHILD); /* 3 failures */
	ck_state(&M, ELECTION_DEMOTING);
	/* the lock session ends while the command stops: a loss on record */
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 6), 0);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 30);
	ck_actions(out, ELECTION_DO_KILL_CHILD);
	step(&M, ELECTION_CHILD_GONE, 137, NULL, 30.25);
	M.state = ELECTION_CONNECTING;
	M.connected = true;
	step(&M, ELECTION_CONNECTED, 0, NULL, 31);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 31);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", 31),
		   ELECTION_DO_CONTROLS_READ); /* the fence later */
	ck_wakeup(&M, 31, 32);
}
END_TEST

/* Issue 17, 6.11: the fence lost on its own while the command stops, the
 * lock gone for a while: nothing keeps the next leader's command out, so
 * the command is killed now; the fence is not sought again. */
START_TEST(test_fence_lost_while_stopping_kills)
{
	struct election_output out;

	fenced_running(0);
	step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 1);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 2);
	ck_actions(out, ELECTION_DO_KILL_CHILD);
	ck_log(out, LOG_LEVEL_WARNING, "fence session lost while the command is "
	       "stopping: killing the command now, as another leader's command "
	       "may start");
	ck_assert(isinf(election_next_wakeup(&M, 2)));
	ck_actions(step(&M, ELECTION_CHILD_KILLED, 0, NULL, 2), 0);
	ck_actions(step(&M, ELECTION_CHILD_GONE, 137, NULL, 2), ELECTION_DO_CONNECT);
	ck_assert(!M.killing);

	/* the fence lost first, the lock a second later: killed at once */
	fenced_running(0);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 1);
	out = step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 2);
	ck_actions(out, ELECTION_DO_STOP_CHILD | ELECTION_DO_KILL_CHILD);
	ck_assert_int_eq(out.n_logs, 2); /* after "lost leader lease" */
	ck_assert_msg(!strncmp(out.logs[1].text, "the fence was lost before the "
			       "lock: killing the command now", 59), "%s", out.logs[1].text);

	/* taken again but held by someone else: killed */
	fenced_running(0);
	step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 1);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 1);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 1.5);
	out = fence_news(&M, ELECTION_SESSION_BUSY, FAULT_NONE, 1.5);
	ck_actions(out, ELECTION_DO_KILL_CHILD | ELECTION_DO_FENCE_DROP);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "the fence is held by another session");
}
END_TEST

/* A graceful shutdown holds the lock while the command stops: the lock
 * keeps others out, losing the fence kills nothing. */
START_TEST(test_fence_lost_in_shutdown_with_lock)
{
	struct election_output out;

	fenced_running(0);
	step(&M, ELECTION_SHUTDOWN, 0, "SIGTERM", 1);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
	out = fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 2);
	ck_actions(out, 0);
	ck_log(out, LOG_LEVEL_WARNING, "fence session: x; reconnecting in 0.5s");
	ck_actions(tick(&M, 2.5), ELECTION_DO_FENCE_CONNECT);
	ck_actions(fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 2.5),
		   ELECTION_DO_FENCE_TAKE);
	/* the lock lost too, later: the fence is held again, nothing to do */
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 2.5);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "gone", 3), 0);
}
END_TEST

/* --restart-limit 2: the third failure in a row within 30 s of a start is
 * the last; a run that lasted 30 s starts the count again. */
static struct election_output fail_soon(double *t, double ran, int status)
{
	double starts[1];

	ck_assert_int_eq(lead_until(&M, t, *t + 40, starts, 1), 1);
	*t = starts[0] + ran;
	M.ping_pending = false; /* answered meanwhile */
	M.next_ping_at = *t + 1;
	return step(&M, ELECTION_CHILD_GONE, status, NULL, *t);
}

START_TEST(test_restart_limit)
{
	struct config c = daemon_cfg;
	struct election_params p = defaults;
	struct election_output out;
	double t = 0.5;

	c.restart = RESTART_ALWAYS;
	c.restart_limit = 2;
	p = daemon_params(&c);
	to_leader(&M, &p, 0);
	step(&M, ELECTION_CHILD_GONE, 3, NULL, t);          /* 1 */
	fail_soon(&t, 0.5, 3);                               /* 2 */
	ck_state(&M, ELECTION_LEADER);
	out = fail_soon(&t, 31, 3);                          /* ran 31 s: 0 */
	ck_state(&M, ELECTION_LEADER);
	ck_assert_int_eq(M.quick_failures, 0);
	fail_soon(&t, 0.5, 3);                               /* 1 */
	fail_soon(&t, 0.5, 3);                               /* 2 */
	ck_state(&M, ELECTION_LEADER);
	out = fail_soon(&t, 0.5, 3);                         /* 3: the last */
	ck_log(out, LOG_LEVEL_ERROR, "command failed 3 times in a row within 30s "
	       "of starting; giving up (--restart-limit 2)");
	ck_actions(out, ELECTION_DO_RELEASE | ELECTION_DO_FENCE_DROP);
	ck_exit(step(&M, ELECTION_RELEASED, 0, NULL, t + 0.5), &M, 3);
}
END_TEST


/* ---- failsafe (DESIGN 9) -------------------------------------------------- */

static struct election_output peers(struct election *e, int news, int status,
				    int asked, const char *node, double now)
{
	struct election_event ev = { .type = ELECTION_PEERS, .reason = node,
		.peers = { .news = (enum election_peer_news)news, .node = node,
			   .same_members = status == 1, .agree = status,
			   .asked = asked, .check = (enum election_check)status } };
	struct election_output out;

	election_step(e, &ev, now, &out);
	return out;
}

/* The step's answer to a claim as HTTP says it: 200, 409, or 0 for none. */
static int answer_code(const struct election_output *out)
{
	return !out->answer.given ? 0 : out->answer.agreed ? 200 : 409;
}

enum { OTHER_MEMBERS = 0, SAME_MEMBERS = 1 }; /* a claim's status */

/* Failsafe on: members a (this node) and b; failsafe_ttl 15 s, the
 * default. */
static struct config failsafe_config(void)
{
	struct config c = daemon_cfg;

	c.failsafe_peers = "a=127.0.0.1:8008,b=127.0.0.1:8009";
	c.failsafe_ttl_ms = 15000;
	return c;
}

static struct election_params failsafe_params(void)
{
	struct config c = failsafe_config();

	return daemon_params(&c);
}

/* A failsafe leader whose members said at acquisition nobody else runs it. */
static void failsafe_leader_with(const struct election_params *p, double t)
{
	struct election_output out;

	to_standby(&M, p, t);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 9, lock pid 100", t);
	/* the members first (with the fence and the controls): does one of
	 * them still run the command? */
	ck_actions(out, LEAD_FIRST | ELECTION_DO_FAILSAFE_CHECK);
	out = peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_CLEAR, 0, NULL, t);
	ck_actions(out, ELECTION_DO_START_CHILD);
	ck_assert(M.child_running);
	/* the runner runs for the term the lock began */
	ck_assert_int_eq(out.term.lock_key, 1);
	ck_assert_uint_eq(out.term.fencing_token, 9);
	ck_assert_int_eq(out.term.lock_pid, 100);
}

static void failsafe_leader(double t)
{
	struct election_params p = failsafe_params();

	failsafe_leader_with(&p, t);
}

START_TEST(test_failsafe_keeps_command)
{
	const struct election_snapshot *s = election_snapshot(&M);
	struct election_output out;

	failsafe_leader(0);
	out = step(&M, ELECTION_CONN_LOST, 0, "server closed the connection", 0.5);
	/* the command keeps running; claim, and reconnect at once */
	ck_actions(out, ELECTION_DO_FAILSAFE_CLAIM | ELECTION_DO_CONNECT);
	ck_state(&M, ELECTION_FAILSAFE);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost the lock (server closed the "
		      "connection); keeping the command in failsafe");
	out = peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 0.6);
	ck_log(out, LOG_LEVEL_NOTICE,
	       "failsafe: 2 of 2 members agree; the command keeps running");
	ck_assert_int_eq(s->failsafe_agree, 2);
	/* the database is still down */
	ck_actions(step(&M, ELECTION_CONNECT_FAILED, 0, "refused", 0.7), 0);
	ck_actions(tick(&M, 1.2), ELECTION_DO_CONNECT);
	/* every ping_interval a new round */
	ck_actions(tick(&M, 1.6), ELECTION_DO_FAILSAFE_CLAIM);
	ck_no_log(peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 1.7));
	/* back: the same command, the same term */
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 1.8), ELECTION_DO_TRY_LOCK);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 12, lock pid 200",
		   1.9);
	/* the members that agreed are told: they queue again at once; the
	 * fence is still held, the new term's controls read; the runner
	 * goes on in the same term over the new lock session */
	ck_actions(out, ELECTION_DO_FAILSAFE_REGAINED | ELECTION_DO_CONTROLS_READ |
		   ELECTION_DO_RUNNER_SESSION);
	ck_assert_uint_eq(out.term.fencing_token, 9);
	ck_assert_int_eq(out.term.lock_pid, 200);
	ck_state(&M, ELECTION_LEADER);
	ck_assert(M.child_running);
	ck_assert_uint_eq(s->term, 1);
	ck_assert_uint_eq(s->fencing_token, 9);
	ck_assert_uint_eq(s->counters.losses[FAULT_CONNECTION], 0);
	/* a late round answer changes nothing */
	ck_actions(peers(&M, ELECTION_PEERS_ROUND_DONE, 0, 2, NULL, 2), 0);
	ck_state(&M, ELECTION_LEADER);
}
END_TEST

/* One member missing or saying no: the command stops, as without failsafe. */
START_TEST(test_failsafe_demotes_on_dissent)
{
	struct election_output out;

	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	/* the line says why each member did not agree (issue 17 item 6.10) */
	out = peers(&M, ELECTION_PEERS_ROUND_DONE, 1, 2,
		    "c: 401 wrong or missing secret", 0.7);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_log(out, LOG_LEVEL_WARNING, "lost leader lease: 1 of 2 members agree "
	       "(c: 401 wrong or missing secret) (failsafe)");
	ck_assert_uint_eq(election_snapshot(&M)->counters.losses[FAULT_CONNECTION], 1);

	/* a round that never ends counts as a no */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	step(&M, ELECTION_CONNECT_FAILED, 0, "refused", 0.5);
	ck_actions(tick(&M, 3.5 - JUST) , ELECTION_DO_CONNECT);
	out = tick(&M, 3.5);
	ck_assert(out.actions & ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);

	/* the lock went to another session meanwhile */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0.6);
	out = step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0.6);
	ck_assert(out.actions & ELECTION_DO_STOP_CHILD);
	ck_log(out, LOG_LEVEL_WARNING, "lost leader lease: the lock is held by "
	       "another session (failsafe)");
}
END_TEST

/* The command ends by itself in failsafe: without a restart, pgleader
 * gives back what it holds and exits with its status; with one, it is not
 * started again without the lock: back to the lock queue, no more claims. */
START_TEST(test_failsafe_command_ends)
{
	struct config c = failsafe_config();
	struct election_params p = daemon_params(&c);
	struct election_output out;

	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	ck_state(&M, ELECTION_FAILSAFE);
	out = step(&M, ELECTION_CHILD_GONE, 3, NULL, 1);
	ck_assert(!M.child_running);
	ck_assert_int_eq(election_snapshot(&M)->command_pid, 0);
	ck_assert(!(out.actions & (ELECTION_DO_START_CHILD | ELECTION_DO_FAILSAFE_CLAIM)));
	ck_state(&M, ELECTION_RELEASING); /* the reconnection in flight */
	ck_assert(out.actions & ELECTION_DO_RELEASE);
	ck_exit(step(&M, ELECTION_RELEASED, 0, NULL, 1.1), &M, 3);

	c.restart = RESTART_ALWAYS;
	p = daemon_params(&c);
	failsafe_leader_with(&p, 0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	out = step(&M, ELECTION_CHILD_GONE, 0, NULL, 1);
	ck_assert(!(out.actions & (ELECTION_DO_START_CHILD | ELECTION_DO_FAILSAFE_CLAIM)));
	ck_assert(out.actions & ELECTION_DO_CONNECT);
	ck_state(&M, ELECTION_CONNECTING);
	ck_assert(isinf(M.failsafe.next_claim_at) && isinf(M.failsafe.claim_deadline));
	step(&M, ELECTION_CONNECTED, 0, NULL, 1.1);
	ck_state(&M, ELECTION_STANDBY);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 10", 1.2);
	ck_state(&M, ELECTION_LEADER);
	ck_actions(out, LEAD_FIRST | ELECTION_DO_FAILSAFE_CHECK);
}
END_TEST

/* In failsafe the lock is sought again all along: a connection attempt
 * that hangs is closed at connect_timeout and made again a moment later,
 * the command running on while the members agree. */
START_TEST(test_failsafe_reconnect_times_out)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	p.connect_timeout = 2; /* the lease's, not configured */
	failsafe_leader_with(&p, 0);
	ck_actions(step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5),
		   ELECTION_DO_FAILSAFE_CLAIM | ELECTION_DO_CONNECT);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 0.6);
	ck_actions(tick(&M, 1.6), ELECTION_DO_FAILSAFE_CLAIM);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 1.7);
	ck_actions(tick(&M, 2.5 - JUST), 0);
	out = tick(&M, 2.5);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_FAILSAFE);
	ck_actions(tick(&M, 2.7), ELECTION_DO_FAILSAFE_CLAIM);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 2.8);
	ck_actions(tick(&M, 2.5 + ELECTION_RECONNECT_MIN - JUST), 0);
	ck_actions(tick(&M, 2.5 + ELECTION_RECONNECT_MIN), ELECTION_DO_CONNECT);
	ck_assert(M.child_running);
}
END_TEST

/* A lock session's news that crossed a claim (queued before it): a member
 * that holds a record gives a grant back by closing, and stays out. */
START_TEST(test_failsafe_record_holds_against_late_news)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	to_standby(&M, &p, 0);
	M.failsafe.record_until = 20;
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 9", 1);
	ck_actions(out, ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_BACKOFF);
	ck_assert(!M.child_running);
	ck_wakeup(&M, 1, 20);

	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	M.failsafe.record_until = 20;
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 1), ELECTION_DO_DISCONNECT);
	ck_state(&M, ELECTION_BACKOFF);
}
END_TEST

/* A frozen ping is a lost lock too, and a permanent fault still ends it. */
START_TEST(test_failsafe_on_ping_timeout)
{
	failsafe_leader(0);
	tick(&M, 1);
	ck_actions(tick(&M, 5), ELECTION_DO_DISCONNECT | ELECTION_DO_FAILSAFE_CLAIM |
		   ELECTION_DO_CONNECT);
	ck_state(&M, ELECTION_FAILSAFE);
	ck_actions(step(&M, ELECTION_FATAL, 69, "password authentication failed", 5.5),
		   ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_SHUTTING_DOWN);
}
END_TEST

/* Failsafe needs a lease that was still valid (finding 11): a leader that
 * hears of its session's loss only after the server lease ran out (it was
 * frozen: the server ended its session, and another node may have led)
 * demotes as without failsafe, whichever it sees first after the thaw. */
START_TEST(test_failsafe_not_after_lease)
{
	struct config c = failsafe_config();
	struct election_params p;
	struct election_output out;

	/* server_lease 20 s (the default), last ping reply at 0 */
	failsafe_leader(0);
	out = step(&M, ELECTION_CONN_LOST, 0, "gone", 20.5);
	ck_state(&M, ELECTION_DEMOTING);
	ck_assert(out.actions & ELECTION_DO_STOP_CHILD);
	ck_assert(!(out.actions & ELECTION_DO_FAILSAFE_CLAIM));
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost leader lease: gone (no failsafe: "
		      "the lease ran out");
	/* the pings' timer first */
	failsafe_leader(0);
	out = tick(&M, 20.5);
	ck_state(&M, ELECTION_DEMOTING);
	ck_assert(!(out.actions & ELECTION_DO_FAILSAFE_CLAIM));
	/* inside the lease: failsafe as before */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 19.5);
	ck_state(&M, ELECTION_FAILSAFE);

	/* no server lease: the pings' detection plus grace_period, 13 s; the
	 * pings' own timeout, on time, still enters failsafe */
	c.server_lease_ms = 0;
	p = daemon_params(&c);
	failsafe_leader_with(&p, 0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 13.5);
	ck_state(&M, ELECTION_DEMOTING);
	failsafe_leader_with(&p, 0);
	tick(&M, 1);
	ck_assert(tick(&M, 5).actions & ELECTION_DO_FAILSAFE_CLAIM);
	ck_state(&M, ELECTION_FAILSAFE);
}
END_TEST

/* In failsafe, an agreement that lapsed ends the term: past the last
 * agreed round's sending + failsafe_ttl, the members' records may have run
 * out and another node led. A lock grant or a round's answer read first
 * after a thaw does not keep the command (finding 11). */
START_TEST(test_failsafe_agreement_lapses)
{
	struct election_output out;

	/* round 1 sent at 0.5, agreed: good until 15.5 */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 0.6);
	step(&M, ELECTION_CONNECTED, 0, NULL, 1);
	/* frozen; the grant is the first thing read */
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 12", 15.5);
	ck_assert(!(out.actions & ELECTION_DO_FAILSAFE_REGAINED));
	/* the runner stops in the old session's term, not moved to the new */
	ck_assert(!(out.actions & ELECTION_DO_RUNNER_SESSION));
	ck_assert(out.actions & ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	ck_log_prefix(out, LOG_LEVEL_WARNING, "lost leader lease: the members' "
		      "agreement lapsed");
	/* a round sent before the freeze, its answer read after the lapse */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 0.6);
	ck_actions(tick(&M, 1.6), ELECTION_DO_FAILSAFE_CLAIM);
	out = peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 15.5);
	ck_assert(out.actions & ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	/* the clock alone: the wakeup asks for the lapse */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 0.6);
	M.failsafe.next_claim_at = INFINITY; /* a round that never got sent */
	tick(&M, 15.5 - JUST); /* the reconnection timed out: again at 16 */
	ck_state(&M, ELECTION_FAILSAFE);
	ck_wakeup(&M, 15.5 - JUST, 15.5);
	ck_assert(tick(&M, 15.5).actions & ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);
	/* a late answer, inside the agreement, still counts */
	failsafe_leader(0);
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 0.6);
	step(&M, ELECTION_CONNECTED, 0, NULL, 1);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 12", 15.4);
	ck_assert(out.actions & ELECTION_DO_FAILSAFE_REGAINED);
	ck_state(&M, ELECTION_LEADER);
}
END_TEST

/* As a member: agree only without the command or the lock, then keep out
 * of the lock queue until the record expires. */
START_TEST(test_failsafe_member_record)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	to_standby(&M, &p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0);
	out = peers(&M, ELECTION_PEERS_CLAIMED, SAME_MEMBERS, 0, "n2", 1);
	ck_assert_int_eq(answer_code(&out), 200);
	ck_log(out, LOG_LEVEL_NOTICE, "node n2 leads in failsafe: staying out of "
	       "the lock queue");
	ck_actions(out, ELECTION_DO_DISCONNECT); /* leaves the queue */
	ck_state(&M, ELECTION_BACKOFF);
	ck_wakeup(&M, 1, 16);
	out = peers(&M, ELECTION_PEERS_CLAIMED, SAME_MEMBERS, 0, "n2", 2);
	ck_no_log(out);
	ck_wakeup(&M, 2, 17);
	ck_actions(tick(&M, 17 - JUST), 0);
	ck_actions(tick(&M, 17), ELECTION_DO_CONNECT);
	/* a grant while a record holds is given back by closing */
	step(&M, ELECTION_CONNECTED, 0, NULL, 17);
	peers(&M, ELECTION_PEERS_CLAIMED, SAME_MEMBERS, 0, "n2", 17.5);
	ck_state(&M, ELECTION_BACKOFF);

	/* a leader refuses */
	failsafe_leader(0);
	out = peers(&M, ELECTION_PEERS_CLAIMED, SAME_MEMBERS, 0, "n2", 1);
	ck_assert_int_eq(answer_code(&out), 409);
	ck_assert_str_eq(out.answer.reason, "this node runs the command");
}
END_TEST

/* A claim's fencing token reaches the election, as the claim itself does
 * (one event, queued like every other): the record agreed to keeps it,
 * the snapshot shows it; a refused claim leaves it alone. */
START_TEST(test_failsafe_claim_token_recorded)
{
	struct election_params p = failsafe_params();
	struct election_event claim = { .type = ELECTION_PEERS,
		.peers = { .news = ELECTION_PEERS_CLAIMED, .node = "n2",
			   .fencing_token = 77, .same_members = true } };
	struct election_output out;

	to_standby(&M, &p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0);
	ck_assert_uint_eq(election_snapshot(&M)->failsafe_record_token, 0);
	election_step(&M, &claim, 1, &out);
	ck_assert_int_eq(answer_code(&out), 200);
	ck_assert_uint_eq(election_snapshot(&M)->failsafe_record_token, 77);
	/* another member list: refused, the record's token stays */
	claim.peers.fencing_token = 78;
	claim.peers.same_members = false;
	election_step(&M, &claim, 2, &out);
	ck_assert_int_eq(answer_code(&out), 409);
	ck_assert_uint_eq(election_snapshot(&M)->failsafe_record_token, 77);
}
END_TEST

/* A claimant with another member list is refused, and keeps no record:
 * a standby stays in the lock queue. */
START_TEST(test_failsafe_claim_other_members)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	to_standby(&M, &p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0);
	out = peers(&M, ELECTION_PEERS_CLAIMED, OTHER_MEMBERS, 0, "n2", 1);
	ck_assert_int_eq(answer_code(&out), 409);
	ck_assert_str_eq(out.answer.reason, "the member lists differ (failsafe_peers)");
	ck_actions(out, 0);
	ck_no_log(out);
	ck_state(&M, ELECTION_STANDBY);
	ck_assert(election_snapshot(&M)->failsafe_record_until == 0);
	/* any status but 1 is another list: a caller's zeroed event refuses */
	out = peers(&M, ELECTION_PEERS_CLAIMED, 2, 0, "n2", 1);
	ck_assert_int_eq(answer_code(&out), 409);
}
END_TEST

/* What GET /failsafe answers: running while the node leads, keeps the
 * command in failsafe, stops it or still holds the lock, and whenever a
 * command pid is known. */
START_TEST(test_runs_command_by_state)
{
	static const bool runs[ELECTION_STATE_COUNT] = {
		[ELECTION_LEADER] = true, [ELECTION_FAILSAFE] = true,
		[ELECTION_DEMOTING] = true, [ELECTION_SHUTTING_DOWN] = true,
		[ELECTION_RELEASING] = true,
	};
	struct election_snapshot s = { .command_pid = 0 };

	for (int st = 0; st < ELECTION_STATE_COUNT; st++) {
		s.state = (enum election_state)st;
		s.command_pid = 0;
		ck_assert_msg(election_runs_command(&s) == runs[st], "%s",
			      election_state_name(s.state));
		s.command_pid = 42;
		ck_assert_msg(election_runs_command(&s), "%s with a pid",
			      election_state_name(s.state));
	}
}
END_TEST

/* A failsafe standby whose lock comes at 0: the members are asked first,
 * with the fence and the controls. */
static void failsafe_new_leader(const struct election_params *p)
{
	to_standby(&M, p, 0);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 9", 0),
		   LEAD_FIRST | ELECTION_DO_FAILSAFE_CHECK);
}

/* A new leader waits while a member still runs the command in failsafe;
 * when one does not answer it asks again every ping_interval, and starts
 * failsafe_ttl after the first silence at the latest. */
START_TEST(test_failsafe_new_leader_asks)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	failsafe_new_leader(&p);
	out = peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_RUNNING, 0, NULL, 0.2);
	ck_actions(out, 0);
	ck_log_prefix(out, LOG_LEVEL_NOTICE, "a member still runs the command");
	ck_actions(tick(&M, 1.2), ELECTION_DO_FAILSAFE_CHECK | LEADER_PING);
	step(&M, ELECTION_PING_OK, 0, NULL, 1.2);
	out = peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_SILENT, 0, NULL, 1.3);
	ck_actions(out, 0);
	ck_log_prefix(out, LOG_LEVEL_NOTICE, "a member did not answer; asking again");
	ck_assert(!M.child_running);
	M.ping_pending = false;
	M.next_ping_at = M.next_ctl_at = 100; /* nor reads */
	M.last_reply_at = 16;
	/* silent at every question (each answered 0.25 s after it) until the
	 * ttl is over */
	for (double t = 1.3 + p.ping_interval; t < 16.3 - 0.5; t += p.ping_interval + 0.25) {
		ck_assert(election_next_wakeup(&M, t - 0.25) <= t);
		ck_actions(tick(&M, t), ELECTION_DO_FAILSAFE_CHECK);
		out = peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_SILENT, 0,
			    NULL, t + 0.25);
		ck_actions(out, 0);
		ck_assert_int_eq(out.n_logs, 0); /* said once */
	}
	ck_assert(!M.child_running);
	ck_assert(election_next_wakeup(&M, 16.0) <= 16.3);
	ck_actions(tick(&M, 16.3), ELECTION_DO_START_CHILD);
}
END_TEST

/* A member killed as the new leader asked it (its socket still accepting
 * for a moment, the process gone) is silent once, then refuses: the command
 * starts at the next question, not failsafe_ttl later. */
START_TEST(test_failsafe_silent_then_gone)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	failsafe_new_leader(&p);
	out = peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_SILENT, 0, NULL, 0.01);
	ck_actions(out, 0);
	ck_assert(!M.child_running);
	ck_assert(election_next_wakeup(&M, 0.01) <= 0.01 + p.ping_interval);
	M.ping_pending = false;
	M.next_ping_at = M.next_ctl_at = 100; /* nor reads */
	M.last_reply_at = 5;
	ck_actions(tick(&M, 0.01 + p.ping_interval), ELECTION_DO_FAILSAFE_CHECK);
	out = peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_CLEAR, 0, NULL, 1.05);
	ck_actions(out, ELECTION_DO_START_CHILD);
}
END_TEST


/* The members' answer to a new leader's check; same_members: a member
 * answered and every answer named this node's list. */
static struct election_output check_done(enum election_check check, bool same_members,
					 double now)
{
	struct election_event ev = { .type = ELECTION_PEERS,
		.peers = { .news = ELECTION_PEERS_CHECK_DONE, .check = check,
			   .same_members = same_members } };
	struct election_output out;

	election_step(&M, &ev, now, &out);
	return out;
}

/* Issue 25, 12: with failsafe members, the settle wait ends the moment
 * every member answers that it runs nothing (a refused connection counts
 * as that): no old leader is left whose command still stops. An answer
 * "running" or no answer keeps the wait; so do answers that name another
 * member list, or none at all (a node missing from this node's list was
 * never asked), and a node outside the list seen with a session for the
 * lock. */
enum settle_answer {
	SETTLE_CLEAR, SETTLE_RUNNING, SETTLE_SILENT, SETTLE_STRANGER, SETTLE_OTHER_LIST
};

static const struct {
	enum settle_answer answer;
	bool ends;
} settle_answer_rows[] = {
	{ SETTLE_CLEAR, true },
	{ SETTLE_RUNNING, false },
	{ SETTLE_SILENT, false },
	{ SETTLE_STRANGER, false },
	{ SETTLE_OTHER_LIST, false },
};

START_TEST(test_settle_ended_by_members)
{
	static const enum election_check checks[] = {
		[SETTLE_CLEAR] = ELECTION_CHECK_CLEAR,
		[SETTLE_RUNNING] = ELECTION_CHECK_RUNNING,
		[SETTLE_SILENT] = ELECTION_CHECK_SILENT,
		[SETTLE_STRANGER] = ELECTION_CHECK_CLEAR,
		[SETTLE_OTHER_LIST] = ELECTION_CHECK_CLEAR,
	};
	enum settle_answer a = settle_answer_rows[_i].answer;
	struct election_output out;

	/* lost at 10, back at 10.5, the lock at 10.75: the fence at 11.5 */
	settle_standby_with(10, 10.5, true);
	if (a == SETTLE_STRANGER)
		peers(&M, ELECTION_PEERS_STRANGER, 0, 0, "stranger", 10.6);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", 10.75);
	ck_state(&M, ELECTION_LEADER);
	ck_actions(out, ELECTION_DO_CONTROLS_READ | ELECTION_DO_FAILSAFE_CHECK);
	ck_assert_msg(!strncmp(out.logs[1].text, "the database was away: taking the "
			       "fence in 0.75s", 46), "%s", out.logs[1].text);
	M.next_ping_at = M.next_ctl_at = 100; /* pings and reads are not the point */
	out = check_done(checks[a], a != SETTLE_OTHER_LIST, 10.8);
	if (settle_answer_rows[_i].ends) {
		ck_actions(out, ELECTION_DO_FENCE_TAKE);
		ck_log(out, LOG_LEVEL_INFO, "every failsafe member runs nothing: taking "
		       "the fence now, 0.70s before the settle wait would end");
		ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 10.85),
			   ELECTION_DO_START_CHILD);
		return;
	}
	ck_actions(out, 0);
	ck_assert(election_next_wakeup(&M, 10.8) <= 11.5);
	ck_actions(tick(&M, 11.5 - JUST), 0);
	out = tick(&M, 11.5);
	ck_assert_msg(out.actions & ELECTION_DO_FENCE_TAKE, "no fence at the wait's end");
	ck_assert(!M.child_running);
}
END_TEST

/* The members' answer after the settle wait is over changes nothing, and
 * without a settle wait there is nothing to end. */
START_TEST(test_settle_members_after_the_wait)
{
	struct election_output out;

	settle_standby_with(10, 10.5, true);
	step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 3", 10.75);
	M.next_ping_at = M.next_ctl_at = 100;
	M.failsafe.check_again_at = 100;
	M.last_reply_at = 11.5;
	ck_actions(tick(&M, 11.5), ELECTION_DO_FENCE_TAKE);
	out = check_done(ELECTION_CHECK_CLEAR, true, 11.6);
	ck_actions(out, 0);
	ck_no_log(out);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 11.7),
		   ELECTION_DO_START_CHILD);
}
END_TEST

/* A node with a session for this lock outside the member list: failsafe
 * off (one error line), until it is gone (one notice). */
START_TEST(test_failsafe_stranger)
{
	struct election_output out;

	failsafe_leader(0);
	out = peers(&M, ELECTION_PEERS_STRANGER, 0, 0, "stranger", 0.2);
	ck_log(out, LOG_LEVEL_ERROR, "node stranger has a session for this lock "
	       "but is not in failsafe_peers: failsafe is off until it is gone or "
	       "the list is fixed");
	ck_no_log(peers(&M, ELECTION_PEERS_STRANGER, 0, 0, "stranger", 0.3));
	out = step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	ck_actions(out, ELECTION_DO_STOP_CHILD);
	ck_state(&M, ELECTION_DEMOTING);

	failsafe_leader(0);
	peers(&M, ELECTION_PEERS_STRANGER, 0, 0, "stranger", 0.2);
	out = peers(&M, ELECTION_PEERS_STRANGER, 0, 0, NULL, 0.4);
	ck_log_prefix(out, LOG_LEVEL_NOTICE, "every node with a session");
	step(&M, ELECTION_CONN_LOST, 0, "gone", 0.5);
	ck_state(&M, ELECTION_FAILSAFE);
}
END_TEST

/* A failsafe leader whose fence session the test plays: the lock and the
 * fence taken at 0, the members clear, the command started. */
static void failsafe_leader_fenced(void)
{
	struct election_params p = failsafe_params();

	answer_fence = false; /* the test plays the fence session */
	election_init(&M, &p);
	step(&M, ELECTION_START, 0, NULL, 0);
	fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 0);
	step(&M, ELECTION_CONNECTED, 0, NULL, 0);
	ck_actions(step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 9", 0),
		   LEAD_FIRST | ELECTION_DO_FAILSAFE_CHECK);
	fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 0);
	ck_actions(peers(&M, ELECTION_PEERS_CHECK_DONE, ELECTION_CHECK_CLEAR, 0, NULL, 0),
		   ELECTION_DO_START_CHILD);
}

/* Issue 17, 6.1: a failsafe leader keeps its fence: taken again in failsafe
 * when its session is back, and on the way back to LEADER. */
START_TEST(test_failsafe_fence_kept)
{
	struct election_output out;

	failsafe_leader_fenced();
	/* a restart: both sessions lost, the command kept */
	step(&M, ELECTION_CONN_LOST, 0, "gone", 1);
	ck_state(&M, ELECTION_FAILSAFE);
	ck_actions(fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 1), 0);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 1.1);
	ck_actions(tick(&M, 1.5), ELECTION_DO_FENCE_CONNECT);
	out = fence_news(&M, ELECTION_SESSION_CONNECTED, FAULT_NONE, 1.6);
	ck_actions(out, ELECTION_DO_FENCE_TAKE);
	/* the old fence wait of a node outside the members: wait on */
	ck_actions(fence_news(&M, ELECTION_SESSION_BUSY, FAULT_NONE, 1.7),
		   ELECTION_DO_FENCE_TAKE);
	step(&M, ELECTION_CONNECTED, 0, NULL, 1.7);
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 12", 1.8);
	ck_state(&M, ELECTION_LEADER);
	ck_actions(out, ELECTION_DO_FAILSAFE_REGAINED | ELECTION_DO_CONTROLS_READ |
		   ELECTION_DO_RUNNER_SESSION);
	ck_actions(fence_news(&M, ELECTION_SESSION_ACQUIRED, FAULT_NONE, 1.9), 0);
	ck_assert(election_snapshot(&M)->fence_held);

	/* the fence session ready just as the lock comes back: taken then */
	step(&M, ELECTION_CONN_LOST, 0, "gone", 3);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 3);
	M.fence.state = ELECTION_FENCE_READY; /* say its news crossed */
	M.connected = true;
	out = step(&M, ELECTION_LOCK_ACQUIRED, 0, "key 1, fencing token 13", 3.5);
	ck_actions(out, LEAD_FIRST | ELECTION_DO_FAILSAFE_REGAINED |
		   ELECTION_DO_RUNNER_SESSION);
}
END_TEST

/* The CI failure of test_member_partitioned: the database down, both
 * sessions lost together in failsafe, a silent member demotes the leader a
 * second later while a lock reconnection is in flight. That connection's
 * failure, read while the command stops, is no news of the fence: it was
 * weighed against the lock's loss when the demotion said outage. Killing
 * the command there cut its SIGTERM short for no reason. */
START_TEST(test_failsafe_demoted_reconnect_fails)
{
	struct election_output out;

	failsafe_leader_fenced();
	step(&M, ELECTION_CONN_LOST, 0, "gone", 1);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 1.001);
	peers(&M, ELECTION_PEERS_ROUND_DONE, 2, 2, NULL, 1.002);
	ck_state(&M, ELECTION_FAILSAFE);
	/* the reconnection asked for in failsafe, still in flight */
	ck_assert(M.connected);
	ck_assert(tick(&M, 2.002).actions & ELECTION_DO_FAILSAFE_CLAIM);
	out = peers(&M, ELECTION_PEERS_ROUND_DONE, 1, 2, "c: no answer", 2.4);
	ck_assert(out.actions & ELECTION_DO_STOP_CHILD);
	ck_assert(!(out.actions & ELECTION_DO_KILL_CHILD));
	ck_state(&M, ELECTION_DEMOTING);
	out = step(&M, ELECTION_CONNECT_FAILED, 0, "refused", 2.401);
	ck_assert_msg(!(out.actions & ELECTION_DO_KILL_CHILD), "killed on a stale loss");
	ck_assert(!M.killing);

	/* the fence lost on its own, long before the lock: still killed */
	fenced_running(0);
	fence_news(&M, ELECTION_SESSION_FAILED, FAULT_TERMINATED, 1);
	out = step(&M, ELECTION_CONN_LOST, 0, "terminating connection", 2);
	ck_assert(out.actions & ELECTION_DO_KILL_CHILD);
}
END_TEST

/* Issue 17, 3: the member told that the node it agreed to holds the lock
 * again drops its record and queues for the lock at once; news of another
 * node, or from another member list, changes nothing. */
START_TEST(test_failsafe_regained_clears_record)
{
	struct election_params p = failsafe_params();
	struct election_output out;

	to_standby(&M, &p, 0);
	step(&M, ELECTION_LOCK_BUSY, 0, NULL, 0);
	peers(&M, ELECTION_PEERS_CLAIMED, SAME_MEMBERS, 0, "n2", 1);
	ck_state(&M, ELECTION_BACKOFF);
	ck_wakeup(&M, 1, 16);
	out = peers(&M, ELECTION_PEERS_REGAINED, SAME_MEMBERS, 0, "n3", 2);
	ck_assert_int_eq(answer_code(&out), 200);
	ck_actions(out, 0);
	ck_wakeup(&M, 2, 16);
	out = peers(&M, ELECTION_PEERS_REGAINED, OTHER_MEMBERS, 0, "n2", 2);
	ck_assert_int_eq(answer_code(&out), 409);
	ck_wakeup(&M, 2, 16);
	out = peers(&M, ELECTION_PEERS_REGAINED, SAME_MEMBERS, 0, "n2", 2.5);
	ck_assert_int_eq(answer_code(&out), 200);
	ck_log(out, LOG_LEVEL_NOTICE, "node n2 holds the lock again after failsafe: "
	       "back in the lock queue");
	ck_actions(out, ELECTION_DO_CONNECT);
	ck_assert(election_snapshot(&M)->failsafe_record_until == 0);
	ck_actions(step(&M, ELECTION_CONNECTED, 0, NULL, 2.6), ELECTION_DO_TRY_LOCK);
	ck_state(&M, ELECTION_STANDBY);
	/* said once: a second message finds no record */
	ck_no_log(peers(&M, ELECTION_PEERS_REGAINED, SAME_MEMBERS, 0, "n2", 2.7));
	ck_state(&M, ELECTION_STANDBY);
}
END_TEST

/* The one order of the actions: every bit once, named once; sessions
 * closed before any is opened, the pings before the command starts, the
 * exit last. */
START_TEST(test_action_order)
{
	unsigned all = 0;
	int at[ELECTION_ACTION_COUNT];

	for (size_t i = 0; i < ELECTION_ACTION_COUNT; i++) {
		unsigned a = election_actions[i].action;

		ck_assert_msg(a && !(a & (a - 1)), "%s is not one bit", election_actions[i].name);
		ck_assert_msg(!(all & a), "%s twice", election_actions[i].name);
		all |= a;
		at[__builtin_ctz(a)] = (int)i;
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(election_actions[j].name, election_actions[i].name);
	}
	ck_assert_uint_eq(all, (1u << ELECTION_ACTION_COUNT) - 1);
#define AT(a) at[__builtin_ctz(ELECTION_DO_##a)]
	ck_assert_int_lt(AT(DISCONNECT), AT(CONNECT));
	ck_assert_int_lt(AT(FENCE_CLOSE), AT(FENCE_CONNECT));
	ck_assert_int_lt(AT(FENCE_PING), AT(START_CHILD));
	ck_assert_int_lt(AT(STOP_CHILD), AT(RELEASE));
	/* the runner hears of its pauses before it starts (jobs.h) */
	ck_assert_int_lt(AT(RUNNER_PAUSES), AT(START_CHILD));
	ck_assert_int_eq(AT(EXIT), ELECTION_ACTION_COUNT - 1);
#undef AT
}
END_TEST

/* A test case whose every test starts with a world that answers (also
 * with CK_FORK=no, where a test's world_silent() would outlive it). */
static TCase *new_case(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, world_answers, NULL);
	return tc;
}

static void add_connecting_case(Suite *s)
{
	TCase *tc;

	tc = new_case("connecting");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_init);
	tcase_add_test(tc, test_action_order);
	tcase_add_test(tc, test_start_connects);
	tcase_add_loop_test(tc, test_connect_backoff, 0, ROWS(backoff_rows));
	tcase_add_test(tc, test_connect_failed_default_reason);
	tcase_add_test(tc, test_backoff_reset_after_connect);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_connected_tries_lock_first);
	tcase_add_test(tc, test_standby_conn_lost_reconnects);
	tcase_add_loop_test(tc, test_restart_cadence, 0, ROWS(restart_faults));
	tcase_add_test(tc, test_restart_cadence_not_for_timeouts);
	tcase_add_test(tc, test_restart_cadence_needs_a_restart);
	tcase_add_test(tc, test_restart_cadence_leader);
	tcase_add_loop_test(tc, test_reconnect_jitter, 0, ROWS(jitter_rows));
	suite_add_tcase(s, tc);
}

static void add_standby_case(Suite *s)
{
	TCase *tc;

	tc = new_case("standby");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_wait_mode_busy);
	tcase_add_test(tc, test_poll_mode_busy);
	tcase_add_loop_test(tc, test_queue_or_poll, 0, ROWS(queue_rows));
	tcase_add_test(tc, test_queued_standby_rechecks);
	tcase_add_test(tc, test_polling_closes_fence_after_read);
	tcase_add_loop_test(tc, test_polling_counts_every_nth_try, 0, ROWS(count_rows));
	tcase_add_test(tc, test_polling_reads_controls_as_often_as_it_counts);
	tcase_add_test(tc, test_count_on_new_session);
	tcase_add_test(tc, test_pooled_start_polls);
	tcase_add_test(tc, test_pooled_counts_every);
	tcase_add_loop_test(tc, test_pooled_poll_joins, 0, ROWS(join_rows));
	tcase_add_test(tc, test_pooled_poll_takes_free_lock);
	tcase_add_test(tc, test_pooled_join_spread);
	tcase_add_test(tc, test_pooled_only_priority_1);
	tcase_add_test(tc, test_pooled_poll_fails_over_to_direct);
	tcase_add_loop_test(tc, test_pooled_poll_refused, 0, ROWS(refuse_rows));
	tcase_add_test(tc, test_pooled_shutdown);
	tcase_add_loop_test(tc, test_pooled_other_db_refused, 0, 2 * ROWS(other_db_rows));
	tcase_add_test(tc, test_pooled_db_pointed_apart);
	tcase_add_test(tc, test_next_in_line_counts_every_try);
	tcase_add_loop_test(tc, test_lock_request_deadline, 0, ROWS(request_timeout_rows));
	tcase_add_loop_test(tc, test_nonblock_busy_exits, 0, ROWS(nonblock_rows));
	tcase_add_test(tc, test_nonblock_acquires);
	tcase_add_test(tc, test_wait_timeout_standby);
	tcase_add_test(tc, test_wait_timeout_database_down);
	tcase_add_test(tc, test_wait_timeout_not_while_leader);
	suite_add_tcase(s, tc);
}

static void add_leader_case(Suite *s)
{
	TCase *tc;

	tc = new_case("leader");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_acquired_starts_command);
	tcase_add_loop_test(tc, test_takeover_delay, 0, ROWS(takeover_rows));
	tcase_add_test(tc, test_takeover_delay_pings);
	tcase_add_test(tc, test_ping_every_interval);
	tcase_add_loop_test(tc, test_ping_failure_rule, 0, ROWS(ping_rows));
	tcase_add_test(tc, test_ping_failure_defaults_message);
	tcase_add_test(tc, test_late_reply_resets);
	tcase_add_test(tc, test_frozen_with_ping_out);
	tcase_add_test(tc, test_ping_answer_after_its_deadline);
	tcase_add_test(tc, test_frozen_between_pings);
	tcase_add_test(tc, test_stalled_ping_counts_from_due_time);
	tcase_add_test(tc, test_frozen_during_takeover_delay);
	tcase_add_test(tc, test_next_wakeup_each_state);
	suite_add_tcase(s, tc);
}

static void add_demotion_case(Suite *s)
{
	TCase *tc;

	tc = new_case("demotion");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_lease_lost_waits_for_command);
	tcase_add_test(tc, test_conn_lost_while_leading);
	tcase_add_test(tc, test_conn_lost_while_demoting);
	tcase_add_test(tc, test_lease_lost_without_command);
	suite_add_tcase(s, tc);
}

static void add_command_case(Suite *s)
{
	TCase *tc;

	tc = new_case("command");
	tcase_set_timeout(tc, 5);
	tcase_add_loop_test(tc, test_restart_no_exits_with_status, 0, ROWS(exit_statuses));
	tcase_add_test(tc, test_restart_on_failure_success_exits);
	tcase_add_loop_test(tc, test_restart_backoff, 0, ROWS(restart_rows));
	tcase_add_loop_test(tc, test_restart_backoff_reset, 0, ROWS(reset_rows));
	tcase_add_test(tc, test_restart_pending_then_shutdown);
	tcase_add_test(tc, test_child_gone_without_child_ignored);
	suite_add_tcase(s, tc);
}

static void add_shutdown_case(Suite *s)
{
	TCase *tc;

	tc = new_case("shutdown");
	tcase_set_timeout(tc, 5);
	tcase_add_loop_test(tc, test_shutdown_each_state, 0, ROWS(shutdown_rows));
	tcase_add_test(tc, test_shutdown_stops_pinging);
	tcase_add_test(tc, test_release_timeout);
	tcase_add_test(tc, test_release_conn_lost);
	tcase_add_test(tc, test_conn_lost_while_stopping);
	tcase_add_test(tc, test_second_shutdown_kills);
	suite_add_tcase(s, tc);
}

static void add_fatal_case(Suite *s)
{
	TCase *tc;

	tc = new_case("fatal");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_fatal_while_connecting);
	tcase_add_test(tc, test_fatal_in_standby);
	tcase_add_test(tc, test_fatal_while_leading);
	tcase_add_test(tc, test_fatal_while_demoting);
	tcase_add_test(tc, test_fatal_during_shutdown);
	suite_add_tcase(s, tc);
}

static void add_misc_case(Suite *s)
{
	TCase *tc;

	tc = new_case("misc");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_done_ignores_everything);
	tcase_add_test(tc, test_events_out_of_place_ignored);
	tcase_add_test(tc, test_state_names);
	suite_add_tcase(s, tc);
}

static void add_decider_case(Suite *s)
{
	TCase *tc;

	tc = new_case("decider");
	tcase_set_timeout(tc, 5);
	tcase_add_loop_test(tc, test_exit_table, 0, ROWS(exit_rows));
	tcase_add_loop_test(tc, test_fault_classes_while_connecting, 0, FAULT_COUNT);
	tcase_add_test(tc, test_nonblock_unreachable);
	tcase_add_test(tc, test_wait_timeout_busy_is_conflict);
	tcase_add_loop_test(tc, test_unexecutable_never_restarts, 0, 2);
	tcase_add_test(tc, test_fork_failure);
	tcase_add_test(tc, test_restart_limit);
	tcase_add_test(tc, test_abandon);
	tcase_add_test(tc, test_stopping_said_once);
	tcase_add_test(tc, test_snapshot_one_term);
	tcase_add_test(tc, test_outcome_labels);
	suite_add_tcase(s, tc);
}

static void add_fence_case(Suite *s)
{
	TCase *tc;

	tc = new_case("fence");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_fence_before_command);
	tcase_add_test(tc, test_fence_lost_while_leading);
	tcase_add_test(tc, test_fence_outage_warned_once);
	tcase_add_test(tc, test_fence_dropped_after_command);
	tcase_add_test(tc, test_fence_wait_abandoned);
	tcase_add_test(tc, test_fence_closed_on_exit);
	tcase_add_test(tc, test_fence_busy_after_demotion);
	tcase_add_test(tc, test_fence_of_a_one_shot);
	tcase_add_test(tc, test_frozen_leader_stale_fence_busy);
	tcase_add_test(tc, test_frozen_standby_stale_grant);
	tcase_add_test(tc, test_fence_permanent_fault);
	tcase_add_test(tc, test_fence_taken_again_while_stopping);
	tcase_add_loop_test(tc, test_settle_after_outage, 0, ROWS(settle_rows));
	tcase_add_loop_test(tc, test_granted_waits_for_settle, 0, ROWS(settle_rows));
	tcase_add_test(tc, test_no_settle_without_outage);
	tcase_add_loop_test(tc, test_settle_ended_by_members, 0, ROWS(settle_answer_rows));
	tcase_add_test(tc, test_settle_members_after_the_wait);
	tcase_add_test(tc, test_settle_after_later_outage);
	tcase_add_test(tc, test_settle_from_latest_loss);
	tcase_add_test(tc, test_no_settle_for_the_leader);
	tcase_add_test(tc, test_fence_lost_while_stopping_kills);
	tcase_add_test(tc, test_fence_lost_in_shutdown_with_lock);
	suite_add_tcase(s, tc);
}

static void add_failsafe_case(Suite *s)
{
	TCase *tc;

	tc = new_case("failsafe");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_failsafe_keeps_command);
	tcase_add_test(tc, test_failsafe_demotes_on_dissent);
	tcase_add_test(tc, test_failsafe_on_ping_timeout);
	tcase_add_test(tc, test_failsafe_not_after_lease);
	tcase_add_test(tc, test_failsafe_agreement_lapses);
	tcase_add_test(tc, test_failsafe_member_record);
	tcase_add_test(tc, test_failsafe_claim_token_recorded);
	tcase_add_test(tc, test_failsafe_new_leader_asks);
	tcase_add_test(tc, test_failsafe_silent_then_gone);
	tcase_add_test(tc, test_failsafe_stranger);
	tcase_add_test(tc, test_failsafe_claim_other_members);
	tcase_add_test(tc, test_failsafe_command_ends);
	tcase_add_test(tc, test_failsafe_reconnect_times_out);
	tcase_add_test(tc, test_failsafe_record_holds_against_late_news);
	tcase_add_test(tc, test_runs_command_by_state);
	tcase_add_test(tc, test_failsafe_fence_kept);
	tcase_add_test(tc, test_failsafe_demoted_reconnect_fails);
	tcase_add_test(tc, test_failsafe_regained_clears_record);
	suite_add_tcase(s, tc);
}

static void add_property_case(Suite *s)
{
	TCase *tc;

	tc = new_case("property");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_property_chaos);
	suite_add_tcase(s, tc);
}

static Suite *election_suite(void)
{
	Suite *s = suite_create("election");

	add_connecting_case(s);
	add_standby_case(s);
	add_leader_case(s);
	add_demotion_case(s);
	add_command_case(s);
	add_shutdown_case(s);
	add_fatal_case(s);
	add_misc_case(s);
	add_decider_case(s);
	add_fence_case(s);
	add_failsafe_case(s);
	add_property_case(s);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	daemon_config_load();
	defaults = daemon_params(&daemon_cfg);
	sr = srunner_create(election_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
