/* test_election_controls.c: the operator controls (DESIGN 11) in the
 * election, on a fake clock, with the parameters the daemon uses (the
 * fence, the controls read): pause and resume, a switchover asked of this
 * leader, one to another node, the hold-off and its end, priority. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_params.h"
#include "election_impl.h" /* the machine's state, for white-box checks */

/* The daemon's configuration (node "a") with a quicker cadence. */
static struct config quick(void)
{
	struct config c = daemon_cfg;

	c.retry_interval_ms = 1000;
	c.ping_interval_ms = 250;
	c.ping_timeout_ms = 500;
	c.grace_period_ms = 1000;
	return c;
}

/* quick()'s parameters, built in main() */
static struct election_params daemon;

static struct election M;

static struct election_output ev(int type, int news, double now)
{
	struct election_event e = { .type = type, .wall = 1.7e9 + now };
	struct election_output out;

	if (type == ELECTION_COMMAND)
		e.command.news = (enum election_command_news)news;
	else
		e.session.news = (enum election_session_news)news;

	election_step(&M, &e, now, &out);
	return out;
}

static struct election_output controls(const struct election_controls *c, double now)
{
	struct election_event e = { .type = ELECTION_CONTROLS,
		.controls = { .news = ELECTION_CONTROLS_READ, .in_force = c },
		.wall = 1.7e9 + now };
	struct election_output out;

	election_step(&M, &e, now, &out);
	return out;
}

static struct election_output tick(double now)
{
	return ev(ELECTION_TICK, 0, now);
}

static const struct election_controls none = { .readable = true };
static const struct election_controls paused_by_alice = {
	.readable = true, .paused = true, .paused_by = "alice", .paused_at = "T",
};

/* The world around the machine: a queued lock wait ends BUSY after
 * retry_interval, a try at once; pings answer at once; reads find
 * *world. advance() steps it to until, and returns every action asked
 * and whether any line said `want`. */
static const struct election_controls *world = &none;
static bool world_fails;   /* reads fail with an error instead */
static int warned;         /* "cannot read the operator controls" lines */
static double wait_ends = INFINITY;
static bool heard;
static unsigned seen;

/* A read that fails with an error: the controls table locked by an ALTER
 * TABLE (lock_timeout). */
static struct election_output failed_read(double now)
{
	struct election_event e = { .type = ELECTION_CONTROLS,
		.controls = { .news = ELECTION_CONTROLS_FAILED },
		.reason = "canceling statement due to lock timeout", .wall = 1.7e9 + now };
	struct election_output out;

	election_step(&M, &e, now, &out);
	return out;
}

static void react(const struct election_output *o, double t, const char *want)
{
	struct election_output next;

	seen |= o->actions;
	for (int i = 0; getenv("TRACE") && i < o->n_logs; i++)
		fprintf(stderr, "%.2f %s\n", t, o->logs[i].text); /* TRACE=1: what it says */
	for (int i = 0; want && i < o->n_logs; i++)
		heard |= strcmp(o->logs[i].text, want) == 0;
	for (int i = 0; i < o->n_logs; i++)
		warned += strstr(o->logs[i].text, "cannot read the operator controls") != NULL;
	if (o->actions & ELECTION_DO_WAIT_LOCK)
		wait_ends = t + M.p.retry_interval;
	if (o->actions & ELECTION_DO_TRY_LOCK) {
		next = ev(ELECTION_LOCK, ELECTION_SESSION_BUSY, t);
		react(&next, t, want);
	}
	if (o->actions & ELECTION_DO_PING) {
		next = ev(ELECTION_LOCK, ELECTION_SESSION_PING_OK, t);
		react(&next, t, want);
	}
	if (o->actions & ELECTION_DO_CONTROLS_READ) {
		next = world_fails ? failed_read(t) : controls(world, t);
		react(&next, t, want);
	}
}

static unsigned advance(double *t, double until, const char *want)
{
	struct election_output out;

	heard = false;
	seen = 0;
	while (*t < until) {
		double w = fmin(election_next_wakeup(&M, *t), wait_ends);

		if (w > until)
			break;
		*t = fmax(*t, w);
		if (*t >= wait_ends) {
			wait_ends = INFINITY;
			out = ev(ELECTION_LOCK, ELECTION_SESSION_BUSY, *t);
		} else {
			out = tick(*t);
		}
		react(&out, *t, want);
	}
	*t = until;
	return seen;
}

static bool has(const struct election_output *o, unsigned a)
{
	return (o->actions & a) == a;
}

static const char *said(const struct election_output *o)
{
	return o->n_logs ? o->logs[o->n_logs - 1].text : "";
}

/* Connected, both sessions, at t: a standby asking for the lock (and
 * reading the controls once). */
static void to_standby(const struct election_params *p, double t)
{
	struct election_output out;

	world = &none;
	world_fails = false;
	warned = 0;
	wait_ends = INFINITY;
	election_init(&M, p);
	out = ev(ELECTION_START, 0, t);
	ck_assert(has(&out, ELECTION_DO_CONNECT | ELECTION_DO_FENCE_CONNECT));
	ev(ELECTION_FENCE, ELECTION_SESSION_CONNECTED, t);
	out = ev(ELECTION_LOCK, ELECTION_SESSION_CONNECTED, t);
	ck_assert_int_eq(M.state, ELECTION_STANDBY);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ | ELECTION_DO_TRY_LOCK));
	controls(&none, t);
	out = ev(ELECTION_LOCK, ELECTION_SESSION_BUSY, t);
	ck_assert(has(&out, ELECTION_DO_WAIT_LOCK));
	wait_ends = t + p->retry_interval;
}

/* The lock's claim came back at t (ACQUIRED): a leader. */
static struct election_output to_leader_acquired(double t)
{
	struct election_output out;
	struct election_event acq = { .type = ELECTION_LOCK,
		.session = { .news = ELECTION_SESSION_ACQUIRED, .lock_key = 42,
			     .fencing_token = 7, .lock_pid = 4242 } };

	wait_ends = INFINITY;
	election_step(&M, &acq, t, &out);
	ck_assert_int_eq(M.state, ELECTION_LEADER);
	return out;
}

/* The lock at t: the fence taken and the controls read before the
 * command starts; returns the step that started it. */
static struct election_output to_leader(const struct election_controls *c, double t)
{
	struct election_output out = to_leader_acquired(t);

	ck_assert(has(&out, ELECTION_DO_FENCE_TAKE));
	if (!(out.actions & ELECTION_DO_CONTROLS_READ)) {
		/* a standby's read was in flight: its answer does not count,
		 * and a new read goes at once */
		out = controls(c, t);
		ck_assert(!has(&out, ELECTION_DO_START_CHILD));
		ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	}
	out = ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, t);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD)); /* not before the read */
	return controls(c, t);
}

/* A leader with the daemon's parameters whose command runs, at 0. */
static void leader_running(void)
{
	to_standby(&daemon, 0);
	to_leader(&none, 0);
	ev(ELECTION_COMMAND, ELECTION_COMMAND_STARTED, 0);
}

START_TEST(nothing_starts_before_the_read)
{
	struct election_output out;

	to_standby(&daemon, 0);
	out = to_leader(&none, 0.5);
	ck_assert(has(&out, ELECTION_DO_START_CHILD));
}
END_TEST

/* The lock granted, its claim under way: the fence and the read go at
 * once, on the other session, and the command starts the moment the claim
 * comes back (the round trips overlap). */
START_TEST(granted_takes_fence_and_reads_during_claim)
{
	struct election_output out;

	to_standby(&daemon, 0);
	out = ev(ELECTION_LOCK, ELECTION_SESSION_GRANTED, 0.5);
	ck_assert(has(&out, ELECTION_DO_FENCE_TAKE | ELECTION_DO_CONTROLS_READ));
	ck_assert_int_eq(M.state, ELECTION_STANDBY);
	out = ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	ck_assert_uint_eq(out.actions, 0); /* held, not given back */
	out = controls(&none, 0.5);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	out = to_leader_acquired(0.6);
	ck_assert_uint_eq(out.actions, ELECTION_DO_START_CHILD);
	ck_assert_int_eq(M.state, ELECTION_LEADER);
}
END_TEST

/* The read since the grant found a pause: the leader reads again, and
 * acts on it as any new leader does. */
START_TEST(granted_read_finds_a_pause)
{
	struct election_output out;

	to_standby(&daemon, 0);
	ev(ELECTION_LOCK, ELECTION_SESSION_GRANTED, 0.5);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	controls(&paused_by_alice, 0.5);
	out = to_leader_acquired(0.6);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	out = controls(&paused_by_alice, 0.6);
	ck_assert_str_eq(said(&out), "paused by alice at T");
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
}
END_TEST

/* A standby's read in flight when the lock is granted does not count;
 * the grant's own goes the moment it answered. */
START_TEST(granted_read_behind_a_standby_read)
{
	struct election_output out;
	double t = 0;

	to_standby(&daemon, 0);
	/* the standby's next read, left unanswered */
	t = M.next_ctl_at;
	out = tick(t);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	out = ev(ELECTION_LOCK, ELECTION_SESSION_GRANTED, t);
	ck_assert(has(&out, ELECTION_DO_FENCE_TAKE));
	ck_assert(!has(&out, ELECTION_DO_CONTROLS_READ));
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, t);
	out = controls(&none, t);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	controls(&none, t);
	out = to_leader_acquired(t);
	ck_assert_uint_eq(out.actions, ELECTION_DO_START_CHILD);
}
END_TEST

/* The claim fails after the grant: the fence taken meanwhile goes back,
 * and nothing starts. */
START_TEST(granted_then_claim_lost_gives_fence_back)
{
	struct election_output out;
	struct election_event lost = { .type = ELECTION_LOCK, .reason = "server closed",
		.session = { .news = ELECTION_SESSION_FAILED, .fault = FAULT_CONNECTION } };

	to_standby(&daemon, 0);
	ev(ELECTION_LOCK, ELECTION_SESSION_GRANTED, 0.5);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	controls(&none, 0.5);
	election_step(&M, &lost, 0.6, &out);
	ck_assert_int_eq(M.state, ELECTION_BACKOFF);
	ck_assert(has(&out, ELECTION_DO_FENCE_DROP));
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	out = ev(ELECTION_FENCE, ELECTION_SESSION_RELEASED, 0.6);
	ck_assert(!has(&out, ELECTION_DO_FENCE_TAKE));
}
END_TEST

START_TEST(pause_stops_and_resume_starts)
{
	struct election_output out;
	double t = 0;

	leader_running();
	/* the leader reads them again within a ping interval, with the ping */
	world = &paused_by_alice;
	ck_assert(advance(&t, 0.25, "paused by alice at T: stopping the command") &
		  ELECTION_DO_STOP_CHILD);
	ck_assert(heard);
	ck_assert(election_snapshot(&M)->paused);
	advance(&t, 1.0, NULL);
	/* gone: no restart, no exit (restart=no would end it otherwise) */
	out = ev(ELECTION_COMMAND, ELECTION_COMMAND_GONE, 1.0);
	ck_assert(!(out.actions & (ELECTION_DO_EXIT | ELECTION_DO_START_CHILD)));
	ck_assert(has(&out, ELECTION_DO_FENCE_DROP));
	ck_assert_int_eq(M.state, ELECTION_LEADER);
	/* a leader due to start holds the fence, as after the lock came */
	out = ev(ELECTION_FENCE, ELECTION_SESSION_RELEASED, 1.0);
	ck_assert(has(&out, ELECTION_DO_FENCE_TAKE));
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 1.0);
	ck_assert(!(advance(&t, 30, NULL) & (ELECTION_DO_START_CHILD | ELECTION_DO_EXIT)));
	ck_assert_int_eq(M.state, ELECTION_LEADER);
	/* resumed: the next read, a ping interval later at most, starts it */
	world = &none;
	ck_assert(advance(&t, 30.25, "resumed: starting the command") &
		  ELECTION_DO_START_CHILD);
	ck_assert(heard);
}
END_TEST

/* Resumed while the command still stops (found by the simulation: the
 * leader woke up for ever at a start it could not make, and a command
 * without restarts ended pgleader when it was gone). */
START_TEST(resumed_while_stopping)
{
	struct election_output out;
	double t = 0;

	leader_running();
	world = &paused_by_alice;
	ck_assert(advance(&t, 0.25, NULL) & ELECTION_DO_STOP_CHILD);
	world = &none;
	ck_assert(!(advance(&t, 0.5, "resumed: the command starts again once it stopped") &
		    (ELECTION_DO_START_CHILD | ELECTION_DO_STOP_CHILD)));
	ck_assert(heard);
	ck_assert(election_next_wakeup(&M, 0.5) > 0.5); /* no wakeup in the past */
	out = ev(ELECTION_COMMAND, ELECTION_COMMAND_GONE, 0.6);
	ck_assert(!(out.actions & ELECTION_DO_EXIT));
	ck_assert_str_eq(said(&out), "command stopped for a pause that has ended: "
			 "starting it again");
	ev(ELECTION_FENCE, ELECTION_SESSION_RELEASED, 0.6);
	out = ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.6);
	ck_assert(has(&out, ELECTION_DO_START_CHILD));
}
END_TEST

START_TEST(a_paused_new_leader_starts_nothing)
{
	struct election_output out;

	to_standby(&daemon, 0);
	out = to_leader(&paused_by_alice, 0);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	ck_assert_double_eq(election_next_wakeup(&M, 0), 0.25); /* pings, reads */
}
END_TEST

/* A standby at 0 with jobs (the ledger in use). */
static void to_standby_with_jobs(void)
{
	struct config c = quick();
	static struct election_params p;

	c.uses_ledger = true;
	p = daemon_params(&c);
	to_standby(&p, 0);
}

START_TEST(jobs_act_on_pauses_themselves)
{
	struct election_output out;

	to_standby_with_jobs();
	out = to_leader(&paused_by_alice, 0);
	ck_assert(has(&out, ELECTION_DO_START_CHILD));
	ck_assert(election_snapshot(&M)->paused);
}
END_TEST

/* With jobs, a read since the grant is not enough even when it found
 * nothing: the jobs hear of their own pauses from a leader's read. */
START_TEST(jobs_read_again_as_leader)
{
	struct election_output out;

	to_standby_with_jobs();
	ev(ELECTION_LOCK, ELECTION_SESSION_GRANTED, 0.5);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	controls(&none, 0.5);
	out = to_leader_acquired(0.6);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	out = controls(&none, 0.6);
	ck_assert(has(&out, ELECTION_DO_START_CHILD));
}
END_TEST

/* The runner that acts on pauses itself (the jobs) gets each read from
 * the election while this node leads or its jobs run, the first one in the
 * step that starts them, before they start; a standby's runs nothing. */
START_TEST(runner_gets_pauses_while_leading)
{
	struct election_output out;
	double t = 0;
	unsigned seen_now;

	to_standby_with_jobs();
	seen_now = advance(&t, 3, NULL);
	ck_assert(seen_now & ELECTION_DO_CONTROLS_READ);
	ck_assert(!(seen_now & ELECTION_DO_RUNNER_PAUSES));
	out = to_leader(&paused_by_alice, 3);
	ck_assert(has(&out, ELECTION_DO_RUNNER_PAUSES | ELECTION_DO_START_CHILD));
	ev(ELECTION_COMMAND, ELECTION_COMMAND_STARTED, 3);
	out = controls(&none, 3.5);
	ck_assert(has(&out, ELECTION_DO_RUNNER_PAUSES));
	/* a read failed: nothing to hand over */
	out = failed_read(4);
	ck_assert(!has(&out, ELECTION_DO_RUNNER_PAUSES));
}
END_TEST

/* The single command's pauses are the election's own: its runner never
 * gets them. */
START_TEST(command_gets_no_pauses)
{
	double t = 0;
	unsigned seen_now;

	leader_running();
	world = &paused_by_alice;
	seen_now = advance(&t, 3, NULL);
	ck_assert(seen_now & ELECTION_DO_CONTROLS_READ);
	ck_assert(seen_now & ELECTION_DO_STOP_CHILD);
	ck_assert(!(seen_now & ELECTION_DO_RUNNER_PAUSES));
}
END_TEST

/* The command starts for the term the lock began: its key, its fencing
 * token, and the lock session holding it (whose pid the jobs' claims
 * name). */
START_TEST(the_command_starts_for_the_term)
{
	struct election_output out;

	to_standby(&daemon, 0);
	out = to_leader(&none, 0.5);
	ck_assert(has(&out, ELECTION_DO_START_CHILD));
	ck_assert_int_eq(out.term.lock_key, 42);
	ck_assert_uint_eq(out.term.fencing_token, 7);
	ck_assert_int_eq(out.term.lock_pid, 4242);
}
END_TEST

static const struct election_controls asked_of_a = {
	.readable = true, .switchover = true, .target = "", .leader = "a",
	.asked_by = "bob", .asked_at = "T", .left = 3,
};

/* Asked of this leader: the command stops, holding the lock; then both
 * locks go, and the node holds off; then it asks again once it is over. */
START_TEST(switchover_asked_of_this_leader)
{
	struct election_output out;

	leader_running();
	tick(0.25);
	out = controls(&asked_of_a, 0.25);
	ck_assert(has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert(!(out.actions & (ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_DROP)));
	ck_assert_str_eq(said(&out), "switchover asked by bob at T: stopping the "
			 "command, then handing the leader lease to any standby");
	ck_assert_int_eq(M.state, ELECTION_DEMOTING);
	ck_assert_int_eq(election_snapshot(&M)->counters.losses[FAULT_NONE], 0);
	out = ev(ELECTION_COMMAND, ELECTION_COMMAND_GONE, 1.0);
	ck_assert(has(&out, ELECTION_DO_DISCONNECT | ELECTION_DO_CONNECT |
		      ELECTION_DO_FENCE_DROP));
	ev(ELECTION_FENCE, ELECTION_SESSION_RELEASED, 1.0);
	out = ev(ELECTION_LOCK, ELECTION_SESSION_CONNECTED, 1.0);
	ck_assert_int_eq(M.state, ELECTION_STANDBY);
	ck_assert(!(out.actions & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK)));
	/* holding off: reads every ping interval; the switchover stands */
	if (!(out.actions & ELECTION_DO_CONTROLS_READ))
		out = tick(1.25);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	struct election_controls still = asked_of_a;
	still.left = 1.5;
	out = controls(&still, 1.5);
	ck_assert(!(out.actions & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK)));
	/* another node took over and deleted it: ask again at once */
	out = tick(1.75);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ));
	out = controls(&none, 1.75);
	ck_assert_str_eq(said(&out), "the switchover is over: asking for the leader "
			 "lease again");
	ck_assert(out.actions & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK));
}
END_TEST

/* Nobody took over: once it lapses the old leader asks for the lock and,
 * reading nothing in force, starts the command again. */
START_TEST(switchover_that_lapses)
{
	struct election_controls c = asked_of_a;
	double t = 0.25;

	leader_running();
	world = &asked_of_a;
	advance(&t, 1.0, NULL); /* read at 0.25: lapses at 3.25 */
	ck_assert_int_eq(M.state, ELECTION_DEMOTING);
	ev(ELECTION_COMMAND, ELECTION_COMMAND_GONE, 1.0);
	ev(ELECTION_FENCE, ELECTION_SESSION_RELEASED, 1.0);
	ev(ELECTION_LOCK, ELECTION_SESSION_CONNECTED, 1.0);
	world = &c;
	c.left = 2; /* the reads find it standing (left is not looked at again) */
	ck_assert(!(advance(&t, 3.2, NULL) & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK)));
	/* lapsed: the reads find nothing, and the lock is asked for at once */
	world = &none;
	ck_assert(advance(&t, 3.3, NULL) & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK));
	ck_assert(to_leader(&none, 3.3).actions & ELECTION_DO_START_CHILD);
}
END_TEST

/* A new leader that is not the named target gives the lock back at once. */
START_TEST(switchover_to_another_node)
{
	struct election_controls to_c = asked_of_a;
	struct config c = quick();
	struct election_params p;
	struct election_output out;

	c.node_id = "b";
	p = daemon_params(&c);
	to_c.target = "c";
	to_standby(&p, 0);
	out = to_leader(&to_c, 0.5);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	ck_assert(has(&out, ELECTION_DO_DISCONNECT | ELECTION_DO_CONNECT |
		      ELECTION_DO_FENCE_DROP));
	ck_assert_str_eq(said(&out), "switchover to c asked by bob at T: giving the "
			 "leader lease back");
}
END_TEST

/* The target (or any standby, untargeted) takes over and says so once. */
START_TEST(switchover_answered)
{
	struct config c = quick();
	struct election_params p;
	struct election_output out;

	c.node_id = "b";
	p = daemon_params(&c);
	to_standby(&p, 0);
	out = to_leader(&asked_of_a, 0.5);
	ck_assert(has(&out, ELECTION_DO_START_CHILD | ELECTION_DO_CONTROLS_DONE));
	ck_assert_str_eq(said(&out), "switchover asked by bob at T: taking over from a");
	ev(ELECTION_COMMAND, ELECTION_COMMAND_STARTED, 0.5);
	out = tick(0.75);
	out = controls(&asked_of_a, 0.75);
	ck_assert(!(out.actions & ELECTION_DO_CONTROLS_DONE));
	ck_assert_int_eq(out.n_logs, 0);
}
END_TEST

START_TEST(priority_zero_never_asks)
{
	struct config c = quick();
	struct election_params p;
	struct election_output out;
	double t = 0;

	c.priority = 0;
	p = daemon_params(&c);
	world = &none;
	wait_ends = INFINITY;
	election_init(&M, &p);
	ev(ELECTION_START, 0, 0);
	out = ev(ELECTION_LOCK, ELECTION_SESSION_CONNECTED, 0);
	ck_assert(!(out.actions & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK)));
	ck_assert_str_eq(out.logs[0].text, "priority 0: a standby that never asks for "
			 "the leader lease");
	ck_assert(!(advance(&t, 60, NULL) & (ELECTION_DO_TRY_LOCK | ELECTION_DO_WAIT_LOCK)));
	ck_assert_int_eq(M.state, ELECTION_STANDBY);
}
END_TEST

/* A standby of priority 2 asks once it has been one for priority_delay. */
START_TEST(priority_asks_after_the_delay)
{
	struct config c = quick();
	struct election_params p;
	struct election_output out;
	struct election_event asked = { .type = ELECTION_CONTROLS,
		.controls = { .news = ELECTION_CONTROLS_ASKED, .to_me = true,
			      .leader = "z", .leader_priority = 1 } };
	double t = 0;

	c.priority = 2;
	c.priority_delay_ms = 5000;
	p = daemon_params(&c);
	to_standby(&p, 0);
	ck_assert(!(advance(&t, 4.99, NULL) & ELECTION_DO_PRIORITY_ASK));
	/* at the first read due from then on */
	ck_assert(advance(&t, 6, NULL) & ELECTION_DO_PRIORITY_ASK);
	election_step(&M, &asked, t, &out);
	ck_assert_str_eq(said(&out), "priority 2 over leader z's 1: asked for a "
			 "switchover to this node");
}
END_TEST

/* A read that fails with an error, after one that found nothing in
 * force: the node goes by that one (DESIGN 11), said once. */
/* A standby of priority 2 whose ask is due at t (on the daemon's
 * parameters, its ledger schema "pgleader"). */
static void asking_standby(double *t)
{
	struct config c = quick();
	static struct election_params p;

	c.priority = 2;
	c.priority_delay_ms = 1000;
	p = daemon_params(&c);
	to_standby(&p, 0);
	ck_assert(advance(t, 3, NULL) & ELECTION_DO_PRIORITY_ASK);
}

static struct election_output ask_answered(enum election_ask_trouble trouble,
					   const char *reason, double now)
{
	struct election_event e = { .type = ELECTION_CONTROLS, .reason = reason,
		.controls = { .news = ELECTION_CONTROLS_ASKED, .leader = "",
			      .trouble = trouble } };
	struct election_output out;

	election_step(&M, &e, now, &out);
	return out;
}

/* An ask the ledger could not answer is the election's to say, once in
 * the process's life: an error when this role cannot use the ledger... */
START_TEST(priority_ask_trouble_said_once)
{
	struct election_output out;
	double t = 0;

	asking_standby(&t);
	out = ask_answered(ELECTION_ASK_DENIED, NULL, t);
	ck_assert_int_eq(out.n_logs, 1);
	ck_assert_int_eq(out.logs[0].level, LOG_LEVEL_ERROR);
	ck_assert_str_eq(said(&out), "priority: the ledger is there but this role may "
			 "not write its controls (schema pgleader): run 'pgleader init-db' "
			 "as a role that may, or let a DBA apply 'pgleader init-db "
			 "--print-sql --grant-to ROLE'; this node never asks for a "
			 "switchover until then");
	ck_assert(advance(&t, 6, NULL) & ELECTION_DO_PRIORITY_ASK);
	ck_assert_int_eq(ask_answered(ELECTION_ASK_MISSING, NULL, t).n_logs, 0);
	ck_assert_int_eq(ask_answered(ELECTION_ASK_FAILED, "boom", t).n_logs, 0);
}
END_TEST

/* ... a warning for a failure; nothing for a lost session, which the
 * session tells. */
START_TEST(priority_ask_failure_warned_once)
{
	struct election_output out;
	double t = 0;

	asking_standby(&t);
	ck_assert_int_eq(ask_answered(ELECTION_ASK_LOST, "gone", t).n_logs, 0);
	out = ask_answered(ELECTION_ASK_FAILED, "canceling statement due to lock "
			   "timeout", t);
	ck_assert_int_eq(out.n_logs, 1);
	ck_assert_int_eq(out.logs[0].level, LOG_LEVEL_WARNING);
	ck_assert_str_eq(said(&out), "priority: cannot ask for a switchover: "
			 "canceling statement due to lock timeout");
	out = ask_answered(ELECTION_ASK_MISSING, NULL, t);
	ck_assert_int_eq(out.n_logs, 0);
}
END_TEST

START_TEST(a_failed_read_does_not_block)
{
	struct election_event failed = { .type = ELECTION_CONTROLS,
		.controls = { .news = ELECTION_CONTROLS_FAILED },
		.reason = "permission denied" };
	struct election_output out;
	struct election_event acq = { .type = ELECTION_LOCK,
		.session = { .news = ELECTION_SESSION_ACQUIRED, .lock_key = 42,
			     .fencing_token = 7 } };

	to_standby(&daemon, 0);
	election_step(&M, &acq, 1, &out);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 1);
	election_step(&M, &failed, 1, &out);
	ck_assert(has(&out, ELECTION_DO_START_CHILD));
	ck_assert_str_eq(out.logs[0].text, "cannot read the operator controls: "
			 "permission denied; going by the last read, which found none "
			 "in force until they are read again");
}
END_TEST

/* A node that never read the controls (the table locked by an ALTER
 * TABLE as it starts) starts nothing until a read is answered; it says
 * so once, however many reads fail, and once more when one is answered
 * (issue 25 item 2: it ran a paused command, the warning every 5 s). */
START_TEST(never_read_starts_nothing)
{
	struct election_output out;
	double t = 0;

	election_init(&M, &daemon);
	world = &paused_by_alice;
	world_fails = true;
	warned = 0;
	wait_ends = INFINITY;
	ev(ELECTION_START, 0, 0);
	ev(ELECTION_FENCE, ELECTION_SESSION_CONNECTED, 0);
	out = ev(ELECTION_LOCK, ELECTION_SESSION_CONNECTED, 0);
	ck_assert(has(&out, ELECTION_DO_CONTROLS_READ | ELECTION_DO_TRY_LOCK));
	out = failed_read(0);
	ck_assert_str_eq(said(&out), "cannot read the operator controls: canceling "
			 "statement due to lock timeout; starting nothing until they are "
			 "read again");
	ev(ELECTION_LOCK, ELECTION_SESSION_BUSY, 0);
	to_leader_acquired(0.5);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	out = failed_read(0.5);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	ck_assert_uint_eq(out.n_logs, 0);
	t = 0.5;
	ck_assert(!(advance(&t, 20, NULL) & ELECTION_DO_START_CHILD));
	ck_assert_int_eq(M.state, ELECTION_LEADER);
	ck_assert_int_eq(warned, 0); /* the first was before advance() counted */
	/* readable again: the pause read, still nothing starts */
	world_fails = false;
	ck_assert(!(advance(&t, 21, "the operator controls are read again") &
		    ELECTION_DO_START_CHILD));
	ck_assert(heard);
	ck_assert(election_snapshot(&M)->paused);
	/* resumed: it starts */
	world = &none;
	ck_assert(advance(&t, 22, NULL) & ELECTION_DO_START_CHILD);
}
END_TEST

/* The last read found a pause; the new leader's read fails: it goes by
 * that pause and starts nothing. */
START_TEST(last_read_paused_fails_closed)
{
	struct election_output out;
	double t = 0.5;

	to_standby(&daemon, 0);
	controls(&paused_by_alice, 0);
	world = &paused_by_alice;
	world_fails = true;
	to_leader_acquired(0.5);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	out = failed_read(0.5);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	ck_assert_str_eq(said(&out), "cannot read the operator controls: canceling "
			 "statement due to lock timeout; going by the last read, which "
			 "found one in force: starting nothing until they are read again");
	ck_assert(!(advance(&t, 20, NULL) & ELECTION_DO_START_CHILD));
}
END_TEST

/* With jobs, a job paused by name in the last read: the jobs, which hear
 * of their pauses only from a leader's read, do not start. */
START_TEST(last_read_job_paused_fails_closed)
{
	static const struct election_controls job_paused = { .readable = true,
		.parts_paused = true };
	struct election_output out;
	double t = 0.5;

	to_standby_with_jobs();
	controls(&job_paused, 0);
	world_fails = true;
	to_leader_acquired(0.5);
	ev(ELECTION_FENCE, ELECTION_SESSION_ACQUIRED, 0.5);
	out = failed_read(0.5);
	ck_assert(!has(&out, ELECTION_DO_START_CHILD));
	ck_assert(!(advance(&t, 20, NULL) & ELECTION_DO_START_CHILD));
	world_fails = false;
	world = &none;
	ck_assert(advance(&t, 21, NULL) & ELECTION_DO_START_CHILD);
}
END_TEST

/* A leader already running keeps what runs while reads fail, and says so
 * once. */
START_TEST(running_leader_keeps_running)
{
	double t = 0;

	leader_running();
	world_fails = true;
	warned = 0;
	ck_assert(!(advance(&t, 30, NULL) & ELECTION_DO_STOP_CHILD));
	ck_assert_int_eq(warned, 1);
	ck_assert_int_eq(M.state, ELECTION_LEADER);
}
END_TEST

/* DESIGN 10: a ledger owned by a role this node does not trust is never
 * read, nor taken for none: one error line, then as any permanent fault,
 * exit 69 (a standby at once, a leader once its command stopped). */
static const struct election_event refused = { .type = ELECTION_CONTROLS,
	.controls = { .news = ELECTION_CONTROLS_REFUSED },
	.reason = "refusing the ledger: schema pgleader is owned by role mallory" };

START_TEST(an_untrusted_ledger_ends_a_standby)
{
	struct election_output out;

	to_standby(&daemon, 0);
	election_step(&M, &refused, 0.5, &out);
	ck_assert(has(&out, ELECTION_DO_EXIT));
	ck_assert_int_eq(out.exit_code, 69);
	ck_assert_int_eq(out.n_logs, 1);
	ck_assert_int_eq(out.logs[0].level, LOG_LEVEL_ERROR);
	ck_assert_str_eq(out.logs[0].text, refused.reason);
}
END_TEST

START_TEST(an_untrusted_ledger_stops_the_leaders_command)
{
	struct election_output out;

	leader_running();
	election_step(&M, &refused, 0.5, &out);
	ck_assert(has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert(!has(&out, ELECTION_DO_EXIT));
	ck_assert_str_eq(said(&out), refused.reason);
	ck_assert_int_eq(M.exit_code, 69);
}
END_TEST

/* ---- drain (DESIGN 13) ---- */

/* quick() with drain_timeout 30s: a leader whose command runs, at 0. */
static void draining_leader(void)
{
	struct config c = quick();
	struct election_params p;

	c.drain_timeout_ms = 30000;
	p = daemon_params(&c);
	to_standby(&p, 0);
	to_leader(&none, 0);
	ev(ELECTION_COMMAND, ELECTION_COMMAND_STARTED, 0);
}

/* A leader's SIGTERM with drain_timeout: DRAIN_CHILD, never STOP_CHILD;
 * the lock and the fence are pinged on meanwhile (a silent session would
 * be ended by the server lease); a SIGTERM again kills; the command gone,
 * the lock is released. */
/* The next PING from t on, ticking every 10 ms (at most 1 s): its time. */
static double next_ping(double t)
{
	for (double end = t + 1; t < end; t += 0.01) {
		struct election_output out = tick(t);

		if (has(&out, ELECTION_DO_PING))
			return t;
	}
	ck_abort_msg("no ping");
	return t;
}

START_TEST(drain_on_shutdown)
{
	struct election_output out;
	double t;

	draining_leader();
	out = ev(ELECTION_SHUTDOWN, 0, 0.1);
	ck_assert(has(&out, ELECTION_DO_DRAIN_CHILD));
	ck_assert(!has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert_int_eq(M.state, ELECTION_SHUTTING_DOWN);
	t = next_ping(0.1);
	ev(ELECTION_LOCK, ELECTION_SESSION_PING_OK, t + 0.01);
	t = next_ping(t + 0.02);
	ev(ELECTION_LOCK, ELECTION_SESSION_PING_OK, t + 0.01);
	t = next_ping(t + 0.02);
	ck_assert_int_eq(M.state, ELECTION_SHUTTING_DOWN);
	out = ev(ELECTION_COMMAND, ELECTION_COMMAND_GONE, t + 0.05);
	ck_assert(has(&out, ELECTION_DO_RELEASE));
	ck_assert(!M.draining);
}
END_TEST

/* The pings fail while the command drains: the lock may be gone, so the
 * drain ends: STOP_CHILD now, one warning. */
START_TEST(drain_ends_when_pings_fail)
{
	struct election_output out;
	double t;

	draining_leader();
	ev(ELECTION_SHUTDOWN, 0, 0.1);
	/* a ping unanswered: failed at ping_timeout, then each ping_interval */
	t = next_ping(0.1);
	out = tick(t + 0.5 + 2 * 0.25 - 0.01);
	ck_assert(!has(&out, ELECTION_DO_STOP_CHILD));
	out = tick(t + 0.5 + 2 * 0.25 + 0.01);
	ck_assert(has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert_msg(strstr(said(&out), "draining ended early: ping timed out 3 times"),
		      "%s", said(&out));
	ck_assert(!M.draining);
	out = tick(t + 2.0);
	ck_assert(!has(&out, ELECTION_DO_PING));
}
END_TEST

/* A switchover asked of this leader drains too, the lock held; a SIGTERM
 * meanwhile drains on (the runner keeps its first bound). */
START_TEST(drain_on_handover)
{
	struct election_output out;

	draining_leader();
	tick(0.25);
	out = controls(&asked_of_a, 0.25);
	ck_assert(has(&out, ELECTION_DO_DRAIN_CHILD));
	ck_assert(!has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert(!(out.actions & (ELECTION_DO_DISCONNECT | ELECTION_DO_FENCE_DROP)));
	ck_assert_int_eq(M.state, ELECTION_DEMOTING);
	out = ev(ELECTION_SHUTDOWN, 0, 0.5);
	ck_assert(has(&out, ELECTION_DO_DRAIN_CHILD));
	ck_assert(!has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert_int_eq(M.state, ELECTION_SHUTTING_DOWN);
}
END_TEST

/* Not of its own will, or no drain_timeout: STOP_CHILD as before. */
START_TEST(no_drain_when_lost_or_off)
{
	struct election_output out;

	leader_running();
	out = ev(ELECTION_SHUTDOWN, 0, 0.1);
	ck_assert(has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert(!has(&out, ELECTION_DO_DRAIN_CHILD));
	draining_leader();
	tick(0.25);
	/* the lease lost: its pings failed */
	out = tick(5.0);
	ck_assert_int_eq(M.state, ELECTION_DEMOTING);
	ck_assert(has(&out, ELECTION_DO_STOP_CHILD));
	ck_assert(!has(&out, ELECTION_DO_DRAIN_CHILD));
	/* a SIGTERM while a lost lease's command stops does not drain */
	out = ev(ELECTION_SHUTDOWN, 0, 5.1);
	ck_assert(!has(&out, ELECTION_DO_DRAIN_CHILD));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("election_controls");
	TCase *tc = tcase_create("controls");
	SRunner *sr;
	struct config c;
	int failed;

	daemon_config_load();
	c = quick();
	daemon = daemon_params(&c);

	tcase_add_test(tc, nothing_starts_before_the_read);
	tcase_add_test(tc, granted_takes_fence_and_reads_during_claim);
	tcase_add_test(tc, granted_read_finds_a_pause);
	tcase_add_test(tc, granted_read_behind_a_standby_read);
	tcase_add_test(tc, granted_then_claim_lost_gives_fence_back);
	tcase_add_test(tc, pause_stops_and_resume_starts);
	tcase_add_test(tc, resumed_while_stopping);
	tcase_add_test(tc, a_paused_new_leader_starts_nothing);
	tcase_add_test(tc, jobs_act_on_pauses_themselves);
	tcase_add_test(tc, jobs_read_again_as_leader);
	tcase_add_test(tc, runner_gets_pauses_while_leading);
	tcase_add_test(tc, command_gets_no_pauses);
	tcase_add_test(tc, the_command_starts_for_the_term);
	tcase_add_test(tc, switchover_asked_of_this_leader);
	tcase_add_test(tc, switchover_that_lapses);
	tcase_add_test(tc, switchover_to_another_node);
	tcase_add_test(tc, switchover_answered);
	tcase_add_test(tc, priority_zero_never_asks);
	tcase_add_test(tc, priority_asks_after_the_delay);
	tcase_add_test(tc, priority_ask_trouble_said_once);
	tcase_add_test(tc, priority_ask_failure_warned_once);
	tcase_add_test(tc, a_failed_read_does_not_block);
	tcase_add_test(tc, an_untrusted_ledger_ends_a_standby);
	tcase_add_test(tc, an_untrusted_ledger_stops_the_leaders_command);
	tcase_add_test(tc, never_read_starts_nothing);
	tcase_add_test(tc, last_read_paused_fails_closed);
	tcase_add_test(tc, last_read_job_paused_fails_closed);
	tcase_add_test(tc, running_leader_keeps_running);
	tcase_add_test(tc, drain_on_shutdown);
	tcase_add_test(tc, drain_ends_when_pings_fail);
	tcase_add_test(tc, drain_on_handover);
	tcase_add_test(tc, no_drain_when_lost_or_off);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
