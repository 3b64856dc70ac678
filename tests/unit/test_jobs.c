/* test_jobs.c: jobs.c (the effector) and jobs_step.c (the decider) over a
 * fake ledger and fake commands, on a real libev loop that is never run:
 * what they claim and record, in which order, for which lock session. */
#include "jobs.h"
#include "hook.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "log_stub.h"

/* jobs.c's monotonic clock (clocks.h) is ours: the Makefile builds this
 * test with -Dclock_gettime=test_clock_gettime. The real clock plus
 * mono_offset, which a test moves to make a run long. */
static double mono_offset;
#undef clock_gettime
int clock_gettime(clockid_t id, struct timespec *ts);
int test_clock_gettime(clockid_t id, struct timespec *ts);
int test_clock_gettime(clockid_t id, struct timespec *ts)
{
	int r = clock_gettime(id, ts);

	if (r == 0 && id == CLOCK_MONOTONIC) {
		ts->tv_sec += (time_t)mono_offset;
		ts->tv_nsec += (long)((mono_offset - (double)(time_t)mono_offset) * 1e9);
		if (ts->tv_nsec >= 1000000000L) {
			ts->tv_sec++;
			ts->tv_nsec -= 1000000000L;
		}
	}
	return r;
}

#define S 1000
#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z */

/* ---- the fake ledger: every request kept, answered by the test -------- */

enum req_kind { R_ENSURE, R_CLAIM, R_LAST };
static struct req {
	enum req_kind kind;
	int64_t tick;
	char outcome[16];
	int lock_pid;
	ledger_fn fn;
	void *arg;
} reqs[64];
static int n_reqs;

static void keep(enum req_kind kind, int64_t tick, const char *outcome, int pid,
		 ledger_fn fn, void *arg)
{
	ck_assert_int_lt(n_reqs, 64);
	reqs[n_reqs] = (struct req){ kind, tick, "", pid, fn, arg };
	snprintf(reqs[n_reqs].outcome, sizeof(reqs[0].outcome), "%s", outcome);
	n_reqs++;
}

void ledger_ensure(struct ledger *l, ledger_fn fn, void *arg)
{
	(void)l;
	keep(R_ENSURE, 0, "", 0, fn, arg);
}

void ledger_claim(struct ledger *l, const struct ledger_term *t, const char *job,
		  int64_t tick, int attempt, int64_t trigger, const char *outcome,
		  bool rerun, ledger_fn fn, void *arg)
{
	(void)l;
	(void)job;
	(void)rerun;
	(void)attempt;
	(void)trigger;
	keep(R_CLAIM, tick, outcome, t->lock_pid, fn, arg);
}

void ledger_listen(struct ledger *l, void (*fn)(void *arg), void *arg)
{
	(void)l;
	(void)fn;
	(void)arg;
}

void ledger_triggers(struct ledger *l, int64_t lock_key, ledger_fn fn, void *arg)
{
	(void)l;
	(void)lock_key;
	(void)fn;
	(void)arg;
}

void ledger_last(struct ledger *l, const struct ledger_term *t, const char *job,
		 bool cut, ledger_fn fn, void *arg)
{
	(void)l;
	(void)job;
	(void)cut;
	keep(R_LAST, 0, "", t->lock_pid, fn, arg);
}

/* the last run's end recorded */
static char finished_outcome[16];
static int finished_status = -1;

void ledger_finish(struct ledger *l, uint64_t token, int64_t run_id,
		   const char *outcome, int exit_status, bool owed, const char *output,
		   size_t output_len)
{
	(void)l;
	(void)output;
	(void)output_len;
	(void)token;
	(void)run_id;
	(void)owed;
	snprintf(finished_outcome, sizeof(finished_outcome), "%s", outcome);
	finished_status = exit_status;
}

void ledger_on_failure(struct ledger *l, const struct ledger_term *t, int64_t run_id,
		       ledger_fn fn, void *arg)
{
	(void)l;
	(void)t;
	(void)run_id;
	(void)fn;
	(void)arg;
}

/* on_failure's command (hook.h): never started here */
struct hook *hook_start(struct ev_loop *loop, const char *command,
			char *const *extra_env, const char *input, size_t len,
			double timeout, double grace, hook_done_fn fn, void *arg,
			char *err, size_t errlen)
{
	(void)loop;
	(void)command;
	(void)extra_env;
	(void)input;
	(void)len;
	(void)timeout;
	(void)grace;
	(void)fn;
	(void)arg;
	snprintf(err, errlen, "not in this test");
	return NULL;
}

void hook_free(struct hook *h)
{
	(void)h;
}

void ledger_prune(struct ledger *l, int64_t lock_key, int64_t keep_ms)
{
	(void)l;
	(void)lock_key;
	(void)keep_ms;
}

/* the jobs announced (DESIGN 13), "name@next_tick_ms" joined by
 * spaces, "!" after the last */
static char announced[512];

void ledger_announce(struct ledger *l, const struct ledger_term *t,
		     const struct ledger_job *job)
{
	size_t at = strlen(announced);

	(void)l;
	(void)t;
	snprintf(announced + at, sizeof(announced) - at, "%s%s@%lld%s", at ? " " : "",
		 job->name, (long long)job->next_tick, job->last ? "!" : "");
}

bool ledger_idle(const struct ledger *l)
{
	(void)l;
	return true;
}

/* ---- the fake commands -------------------------------------------------- */

struct child {
	int started;
	child_gone_fn on_gone; /* to end a run as the command would */
	void *arg;
};
static struct child the_child;

struct child *child_new(struct ev_loop *loop, char *const *argv, bool shell,
			double grace, child_gone_fn on_gone, void *arg)
{
	(void)loop;
	(void)argv;
	(void)shell;
	(void)grace;
	the_child.on_gone = on_gone;
	the_child.arg = arg;
	return &the_child;
}

void child_free(struct child *c) { (void)c; }
void child_set_label(struct child *c, const char *job) { (void)c; (void)job; }
void child_set_process(struct child *c, const struct job_process *p) { (void)c; (void)p; }
void child_set_output(struct child *c, int fd) { (void)c; (void)fd; }
int child_start(struct child *c, char *const *env, char *err, size_t len)
{
	(void)env;
	(void)err;
	(void)len;
	c->started++;
	return 0;
}
void child_stop(struct child *c) { (void)c; }
void child_kill(struct child *c) { (void)c; }
void child_signal(struct child *c, int sig) { (void)c; (void)sig; }
bool child_running(const struct child *c) { (void)c; return false; }
bool child_exited(const struct child *c) { (void)c; return false; }
pid_t child_pid(const struct child *c) { (void)c; return 1; }

/* ---- the jobs ------------------------------------------------------------ */

static void gone(void *arg, int status) { (void)arg; (void)status; }
static void refused(void *arg, enum fault f, const char *why)
{
	(void)arg;
	(void)f;
	(void)why;
}

static char *argv_job[] = { "job", NULL };
static struct config_job job = {
	.name = "j", .command = argv_job, .schedule = "@every 1s", .timezone = "UTC",
	.max_runtime_ms = -1, .missed = MISSED_ONCE, .missed_window_ms = -1,
	.grace_period_ms = 1000,
};
static struct config cfg = {
	.node_id = "n1", .jobs = &job, .n_jobs = 1, .schema = "pgleader",
	.ping_interval_ms = 1000, .ping_failures = 3, .ping_timeout_ms = 2000,
	.uses_ledger = true,
};
static struct ev_loop *loop;
static struct jobs *jobs;

/* jobs_start for lock session pid, the ledger there, and the server's
 * clock at T0 plus a little: ok, which begin answers the ensure with. */
static void begin(int pid, const struct ledger_answer *ok)
{
	const struct jobs_callbacks cb = { gone, refused, NULL };
	const struct ledger_term term = { .lock_key = 42, .fencing_token = 7,
					  .lock_pid = pid };
	char err[256];

	n_reqs = 0;
	log_stub_reset();
	loop = ev_loop_new(0);
	jobs = jobs_new(loop, &cfg, (struct ledger *)&cfg, &cb, err, sizeof(err));
	ck_assert_ptr_nonnull(jobs);
	jobs_start(jobs, &term);
	ck_assert_int_eq(reqs[0].kind, R_ENSURE);
	reqs[0].fn(reqs[0].arg, ok);
}

/* begin, and the job's newest row at last. */
static void start(int pid, int64_t last)
{
	struct ledger_answer ok = { .ok = true, .db_now = T0 + 10,
				    .last_tick = last, .interrupted = INT64_MIN,
				    .older_running = INT64_MIN };

	begin(pid, &ok);
	ck_assert_int_eq(reqs[1].kind, R_LAST);
	reqs[1].fn(reqs[1].arg, &ok);
}

/* Turns the loop until the fake ledger has one request more (at most five
 * turns): the read of the requests to run now (ping_interval, nothing
 * here) may come before the timer a test waits for. */
static void run_until_request(void)
{
	int before = n_reqs;

	for (int turn = 0; turn < 5 && n_reqs == before; turn++)
		ev_run(loop, EVRUN_ONCE);
}

static void stop(void)
{
	jobs_free(jobs);
	ev_loop_destroy(loop);
}

/* Missed ticks are recorded oldest first, the newest then run: a lock
 * lost between two of these statements leaves the newer ticks to the next
 * leader, which plans from the newest row (newest first left a hole). */
START_TEST(test_missed_oldest_first)
{
	start(111, T0 - 5 * S);
	ck_assert_int_eq(n_reqs, 2 + 5);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(reqs[2 + i].kind, R_CLAIM);
		ck_assert_str_eq(reqs[2 + i].outcome, "missed");
		ck_assert_int_eq(reqs[2 + i].tick, T0 - (4 - i) * S);
	}
	ck_assert_str_eq(reqs[6].outcome, "running");
	ck_assert_int_eq(reqs[6].tick, T0);
	stop();
}
END_TEST

/* A leader back from failsafe holds the lock on a new session: its
 * claims name it, and the ticks after the ledger's newest row are planned
 * again (the claims made meanwhile named the old one and were refused). */
START_TEST(test_regained_plans_again)
{
	struct ledger_answer refused_claim = { .ok = true, .db_now = T0 + 20 };
	struct ledger_answer last = { .ok = true, .db_now = T0 + 30,
				      .last_tick = T0 - S, .interrupted = INT64_MIN,
				      .older_running = INT64_MIN };

	start(111, T0 - S);
	ck_assert_int_eq(n_reqs, 3);
	ck_assert_int_eq(reqs[2].lock_pid, 111);
	jobs_set_lock_pid(jobs, 222);
	/* the claim in flight is answered first (one queue): not the holder */
	reqs[2].fn(reqs[2].arg, &refused_claim);
	ck_assert_int_eq(n_reqs, 4);
	ck_assert_int_eq(reqs[3].kind, R_LAST);
	reqs[3].fn(reqs[3].arg, &last);
	ck_assert_int_eq(n_reqs, 5);
	ck_assert_int_eq(reqs[4].kind, R_CLAIM);
	ck_assert_int_eq(reqs[4].tick, T0);
	ck_assert_int_eq(reqs[4].lock_pid, 222);
	stop();
}
END_TEST

/* missed = skip, nothing to run: the newest missed tick may still be in
 * the server's future (our reading of its clock ran ahead); refused as
 * early, it is planned again once due, and then runs (it was dropped). */
START_TEST(test_early_missed_sent_again)
{
	struct ledger_answer early = { .ok = true, .early = true, .db_now = T0 - 5,
				       .tick = T0 };
	int k;

	job.missed = MISSED_SKIP;
	start(111, T0 - 3 * S);
	job.missed = MISSED_ONCE;
	k = n_reqs - 1;
	ck_assert_int_eq(reqs[k].tick, T0);
	ck_assert_str_eq(reqs[k].outcome, "missed");
	ck_assert_ptr_nonnull(reqs[k].fn);
	reqs[k].fn(reqs[k].arg, &early);
	run_until_request();
	ck_assert_int_eq(reqs[n_reqs - 1].kind, R_CLAIM);
	ck_assert_int_eq(reqs[n_reqs - 1].tick, T0);
	ck_assert_str_eq(reqs[n_reqs - 1].outcome, "running");
	stop();
}
END_TEST

/* An answer whose request waited 3.4 s on its way and came back at once
 * says nothing better about the server's clock than the quick answers
 * before it: taken, it put our reading 1.7 s ahead, and the next tick
 * was planned missed when its timer fired (the simulator's finding 10). */
START_TEST(test_slow_answer_keeps_clock)
{
	struct ledger_answer slow = { .ok = true, .db_now = T0 + 20, .rtt = 3.4,
				      .run_id = 1, .holder = true, .newest = true };
	int k;

	start(111, T0 - S);
	ck_assert_int_eq(reqs[2].tick, T0);
	reqs[2].fn(reqs[2].arg, &slow); /* the run starts, and goes on */
	ck_assert_int_eq(the_child.started, 1);
	run_until_request();            /* the next tick's timer, ~1 s */
	for (k = 3; k < n_reqs && reqs[k].tick != T0 + S; k++)
		;
	ck_assert_int_lt(k, n_reqs);
	ck_assert_str_eq(reqs[k].outcome, "skipped");
	the_child.started = 0;
	stop();
}
END_TEST

/* A tick whose claim failed (a statement timeout behind a lock) is told
 * by name and planned again with the next tick: recorded missed, not
 * lost without a row (DESIGN 10). */
START_TEST(test_unclaimed_tick_counts_missed)
{
	struct ledger_answer failed = { .ok = false, .db_now = T0 + 20,
		.error = "ERROR: canceling statement due to statement timeout" };
	bool missed = false, next = false;

	start(111, T0 - S);
	ck_assert_int_eq(reqs[2].tick, T0);
	reqs[2].fn(reqs[2].arg, &failed);
	ck_assert_uint_eq(log_stub_count("tick 2027-01-15T08:00:00Z not claimed: ERROR: "
					 "canceling statement"), 1);
	run_until_request();            /* the next tick's timer, ~1 s */
	for (int k = 3; k < n_reqs; k++) {
		missed |= reqs[k].tick == T0 && !strcmp(reqs[k].outcome, "missed");
		next |= reqs[k].tick == T0 + S && !strcmp(reqs[k].outcome, "running");
	}
	ck_assert_msg(missed, "the unclaimed tick was not recorded missed");
	ck_assert(next);
	stop();
}
END_TEST

/* A tick that fires while the previous tick's claim waits (on a row
 * lock) is skipped, told as what it is: no run was going (0.4.0 named
 * the run before, which had ended). */
START_TEST(test_tick_while_claiming)
{
	start(111, T0 - S);
	ck_assert_int_eq(reqs[2].tick, T0);
	run_until_request();            /* T0 + 1 s fires, the claim unanswered */
	ck_assert_int_eq(reqs[n_reqs - 1].tick, T0 + S);
	ck_assert_str_eq(reqs[n_reqs - 1].outcome, "skipped");
	ck_assert_uint_eq(log_stub_count("tick 2027-01-15T08:00:01Z skipped: the claim of "
					 "tick 2027-01-15T08:00:00Z is still waiting"), 1);
	ck_assert_uint_eq(log_stub_count("still going"), 0);
	stop();
}
END_TEST

/* The term ended while the claim waited; its answer is told, whatever it
 * is: a row claimed (recorded interrupted), or the lock found gone. */
START_TEST(test_stale_claim_told)
{
	struct ledger_answer gone_lock = { .ok = true, .db_now = T0 + 20, .newest = true };

	start(111, T0 - S);
	jobs_stop(jobs);
	reqs[2].fn(reqs[2].arg, &gone_lock);
	ck_assert_uint_eq(log_stub_count("tick 2027-01-15T08:00:00Z not run: this node's "
					 "lock session no longer holds the lock"), 1);
	stop();
}
END_TEST

/* A missed tick whose record failed is told by name and recorded again
 * with the next tick: not a hole under the rows after it. */
START_TEST(test_failed_record_told_and_again)
{
	struct ledger_answer failed = { .ok = false, .db_now = T0 + 20, .tick = T0 - 2 * S,
		.error = "ERROR: canceling statement due to statement timeout" };
	int before, again = 0;

	start(111, T0 - 3 * S);
	ck_assert_int_eq(reqs[2].tick, T0 - 2 * S);
	ck_assert_str_eq(reqs[2].outcome, "missed");
	ck_assert_ptr_nonnull(reqs[2].fn);
	reqs[2].fn(reqs[2].arg, &failed);
	ck_assert_uint_eq(log_stub_count("tick 2027-01-15T07:59:58Z not recorded: ERROR: "
					 "canceling statement"), 1);
	before = n_reqs;
	run_until_request();            /* the next tick's timer */
	for (int k = before; k < n_reqs; k++)
		again += reqs[k].tick == T0 - 2 * S && !strcmp(reqs[k].outcome, "missed");
	ck_assert_int_eq(again, 1);
	stop();
}
END_TEST

/* A run's end is recorded as its exit status says: 0 succeeded, any other
 * failed (1 included), with the status. */
START_TEST(test_run_outcome_of_exit_status)
{
	static const int statuses[] = { 0, 1, 2, 143 };
	static const char *const outcomes[] = { "succeeded", "failed", "failed", "failed" };
	struct ledger_answer claimed = { .ok = true, .db_now = T0 + 20, .run_id = 1,
					 .holder = true, .newest = true };

	for (int i = 0; i < 4; i++) {
		start(111, T0 - S);
		ck_assert_int_eq(reqs[2].kind, R_CLAIM);
		ck_assert_int_eq(reqs[2].tick, T0);
		reqs[2].fn(reqs[2].arg, &claimed);
		finished_outcome[0] = '\0';
		the_child.on_gone(the_child.arg, statuses[i]);
		ck_assert_str_eq(finished_outcome, outcomes[i]);
		ck_assert_int_eq(finished_status, statuses[i]);
		stop();
	}
	the_child.started = 0;
}
END_TEST

/* A job without a schedule, restart = always: each quick failure doubles
 * the delay before its next start (1 s, 2 s); a run as long as the longest
 * delay (30 s) starts it over at 1 s. */
START_TEST(test_restart_backoff_reset_after_long_run)
{
	struct ledger_answer ok = { .ok = true, .db_now = T0 + 10, .last_tick = INT64_MIN,
				    .interrupted = INT64_MIN, .older_running = INT64_MIN };

	job.schedule = NULL;
	job.restart = RESTART_ALWAYS;
	the_child.started = 0;
	begin(111, &ok);
	ck_assert_int_eq(the_child.started, 1);
	/* a quick failure: 1 s, and the next one would be 2 s */
	the_child.on_gone(the_child.arg, 1);
	ck_assert_uint_eq(log_stub_count("restarting in 1.0s"), 1);
	ev_run(loop, EVRUN_ONCE); /* the 1 s delay */
	ck_assert_int_eq(the_child.started, 2);
	/* another: 2 s */
	the_child.on_gone(the_child.arg, 1);
	ck_assert_uint_eq(log_stub_count("restarting in 2.0s"), 1);
	ev_run(loop, EVRUN_ONCE);
	ck_assert_int_eq(the_child.started, 3);
	/* a run of 31 s: 1 s again, not 4 */
	mono_offset += 31;
	the_child.on_gone(the_child.arg, 1);
	ck_assert_uint_eq(log_stub_count("restarting in 4.0s"), 0);
	ck_assert_uint_eq(log_stub_count("restarting in 1.0s"), 2);
	stop();
	job.schedule = "@every 1s";
	job.restart = RESTART_NO;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jobs");
	TCase *tc = tcase_create("planning");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_missed_oldest_first);
	tcase_add_test(tc, test_regained_plans_again);
	tcase_add_test(tc, test_early_missed_sent_again);
	tcase_add_test(tc, test_slow_answer_keeps_clock);
	tcase_add_test(tc, test_unclaimed_tick_counts_missed);
	tcase_add_test(tc, test_tick_while_claiming);
	tcase_add_test(tc, test_stale_claim_told);
	tcase_add_test(tc, test_failed_record_told_and_again);
	tcase_add_test(tc, test_run_outcome_of_exit_status);
	tcase_add_test(tc, test_restart_backoff_reset_after_long_run);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
