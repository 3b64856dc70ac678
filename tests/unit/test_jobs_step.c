/* test_jobs_step.c: the job decider alone (DESIGN 10 and 14), on the
 * configuration the daemon loads from a jobs file (config_load), with a
 * fake clock: which statements, commands and lines each event asks for.
 * No loop, no ledger, no process: the actions are the answer. */
#include "jobs_step.h"
#include "jobs_retry.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S 1000
#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z, a multiple of 10 s */
#define TOKEN 7
#define LOCK_PID 111

static struct config cfg;
static struct jobs_state *js;
static struct jobs_output out;
static double now;      /* the fake monotonic clock, seconds */
static int tick_job, svc_job;
static bool exited[2];

/* `pgleader -c FILE --node-id a` over a file with a scheduled job
 * ("tick", every 10 s) and one that runs all the time ("svc"); extra: more
 * lines of [job.tick]. */
static void load(const char *extra)
{
	char path[] = "/tmp/test_jobs_step-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	char *argv[] = { "pgleader", "-c", path, "--node-id", "a", NULL };
	char err[512];

	ck_assert_ptr_nonnull(f);
	fprintf(f, "[pgleader]\nlock_key = 42\n[job.tick]\ncommand = true\n"
		"schedule = @every 10s\n%s[job.svc]\ncommand = sleep 100\n", extra);
	fclose(f);
	memset(&cfg, 0, sizeof(cfg));
	ck_assert_msg(config_load(&cfg, 5, argv, err, sizeof(err)) == CONFIG_OK, "%s", err);
	unlink(path);
	ck_assert_int_eq((int)cfg.n_jobs, 2);
	tick_job = strcmp(cfg.jobs[0].name, "tick") ? 1 : 0;
	svc_job = 1 - tick_job;
	js = jobs_state_new(&cfg, cfg.uses_ledger, err, sizeof(err));
	ck_assert_ptr_nonnull(js);
	now = 100;
}

static void unload(void)
{
	jobs_state_free(js);
	jobs_output_free(&out);
	config_free(&cfg);
}

static void step(struct jobs_event ev)
{
	ev.exited = exited;
	ev.ledger_idle = true;
	jobs_step(js, &ev, now, &out);
}

static void answer(enum jobs_event_type type, int job, struct jobs_answer a)
{
	step((struct jobs_event){ .type = type, .job = job, .answer = &a });
}

/* The server's answer at db_now (its clock at T0 when now is 100 s). */
static struct jobs_answer ok_at(int64_t db_now)
{
	return (struct jobs_answer){ .ok = true, .db_now = db_now, .holder = true,
				     .newest = true, .last_tick = INT64_MIN,
				     .interrupted = INT64_MIN, .older_running = INT64_MIN };
}

/* The nth (from 0) action of type for job (-2: any job), or NULL. */
static const struct jobs_action *find(enum jobs_action_type type, int job, int nth)
{
	for (size_t i = 0; i < out.n; i++)
		if (out.a[i].type == type && (job == -2 || out.a[i].job == job) && nth-- == 0)
			return &out.a[i];
	return NULL;
}

static int count(enum jobs_action_type type, int job)
{
	int n = 0;

	while (find(type, job, n))
		n++;
	return n;
}

static bool said(const char *part)
{
	for (size_t i = 0; i < out.n; i++)
		if (out.a[i].type == JOBS_DO_LOG && strstr(out.a[i].text, part))
			return true;
	return false;
}

/* The lead began and the ledger is there; the tick job's newest row is
 * last (with interrupted, a run cut off): its claims go out. */
static void lead(int64_t last, int64_t interrupted)
{
	struct jobs_answer a = ok_at(T0);

	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	ck_assert_ptr_nonnull(find(JOBS_DO_ENSURE, -1, 0));
	answer(JOBS_EV_ENSURED, -1, ok_at(T0));
	ck_assert_ptr_nonnull(find(JOBS_DO_LAST, tick_job, 0));
	ck_assert_ptr_nonnull(find(JOBS_DO_START, svc_job, 0));
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = svc_job, .pid = 300 });
	a.last_tick = last;
	a.interrupted = interrupted;
	answer(JOBS_EV_LAST, tick_job, a);
}

/* lead, then the claim of T0 answered with run 5: its run starts. */
static void running(void)
{
	struct jobs_answer a = ok_at(T0 + 5);

	lead(T0 - 10 * S, INT64_MIN);
	a.run_id = 5;
	a.tick = T0;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_ptr_nonnull(find(JOBS_DO_START, tick_job, 0));
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 400 });
}

/* A tick is claimed, for this term's token and lock session, before it
 * runs; it runs only once the ledger gave it a run. */
START_TEST(test_claim_before_run)
{
	const struct jobs_action *c, *s;
	struct jobs_answer a = ok_at(T0 + 5);

	load("");
	lead(T0 - 10 * S, INT64_MIN);
	c = find(JOBS_DO_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert(!c->record);
	ck_assert_int_eq(c->tick, T0);
	ck_assert_uint_eq(c->term.fencing_token, TOKEN);
	ck_assert_int_eq(c->term.lock_pid, LOCK_PID);
	ck_assert_ptr_null(find(JOBS_DO_START, tick_job, 0));
	a.run_id = 5;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	s = find(JOBS_DO_START, tick_job, 0);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(s->tick, T0);
	ck_assert_int_eq(s->run_id, 5);
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 400 });
	ck_assert(said("job tick: started run 5 for tick 2027-01-15T08:00:00Z (pid 400)"));
	ck_assert_int_eq(find(JOBS_DO_LOG, -2, 0)->pid, 400);
	unload();
}
END_TEST

/* The claim's verdict is the decider's: the lock gone, or a newer term's
 * fencing token recorded, and the tick does not run. */
START_TEST(test_token_check)
{
	struct jobs_answer a = ok_at(T0 + 5);

	load("");
	lead(T0 - 10 * S, INT64_MIN);
	a.newest = false;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	ck_assert(said("tick 2027-01-15T08:00:00Z not run: a newer term's fencing token"));
	unload();
	load("");
	lead(T0 - 10 * S, INT64_MIN);
	a = ok_at(T0 + 5);
	a.holder = false;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	ck_assert(said("no longer holds the lock"));
	unload();
}
END_TEST

/* A run cut off with its leader is recorded interrupted and not run
 * again, unless rerun_interrupted says so. */
START_TEST(test_interrupted_not_rerun)
{
	const struct jobs_action *c;

	load("");
	lead(T0, T0 - 10 * S);
	ck_assert(said("was cut off with its leader: recorded interrupted"));
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	unload();
	load("rerun_interrupted = true\n");
	lead(T0, T0 - 10 * S);
	c = find(JOBS_DO_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->rerun);
	ck_assert_int_eq(c->tick, T0 - 10 * S);
	unload();
}
END_TEST

/* A tick that comes while the run of the last goes is recorded skipped,
 * not claimed to run: never two runs of one job. */
START_TEST(test_no_start_while_running)
{
	const struct jobs_action *r;

	load("");
	running();
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	r = find(JOBS_DO_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert(r->record);
	ck_assert_int_eq(r->outcome, JOBS_SKIPPED);
	ck_assert_int_eq(r->tick, T0 + 10 * S);
	ck_assert(said("skipped: the run for 2027-01-15T08:00:00Z is still going"));
	unload();
}
END_TEST

/* The lead ends: every run is stopped and recorded interrupted, a claim
 * answered afterwards runs nothing, no tick fires; then gone, once. */
START_TEST(test_nothing_after_lead)
{
	struct jobs_answer a = ok_at(T0 + 10 * S);
	const struct jobs_action *f;

	load("");
	running();
	step((struct jobs_event){ .type = JOBS_EV_LEAD_ENDING, .job = -1 });
	ck_assert_int_eq(count(JOBS_DO_STOP, -2), 2);
	ck_assert_int_eq(count(JOBS_DO_GONE, -1), 0);
	a.run_id = 6;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->outcome, JOBS_INTERRUPTED);
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_int_eq(out.n, 0);
	step((struct jobs_event){ .type = JOBS_EV_RUN_GONE, .job = tick_job, .status = 143 });
	ck_assert_int_eq(find(JOBS_DO_FINISH, -2, 0)->outcome, JOBS_INTERRUPTED);
	ck_assert_int_eq(count(JOBS_DO_GONE, -1), 0);
	step((struct jobs_event){ .type = JOBS_EV_RUN_GONE, .job = svc_job, .status = 143 });
	ck_assert_int_eq(count(JOBS_DO_GONE, -1), 1);
	unload();
}
END_TEST

/* The action of the line that says part, or NULL. */
static const struct jobs_action *line_of(const char *part)
{
	for (size_t i = 0; i < out.n; i++)
		if (out.a[i].type == JOBS_DO_LOG && strstr(out.a[i].text, part))
			return &out.a[i];
	return NULL;
}

/* How a run ended is one line (DESIGN 13): a warning for failed,
 * timed_out and interrupted, naming the job, the tick, the run id, the
 * exit status and the output's last line; info for succeeded. */
START_TEST(test_run_end_line)
{
	static const struct {
		int status;
		bool stop, time_out;
		const char *last, *outcome;
		enum log_level level;
	} rows[] = {
		{ 0, false, false, "all done", "succeeded", LOG_LEVEL_INFO },
		{ 3, false, false, "ERROR: disk full", "failed", LOG_LEVEL_WARNING },
		{ 143, false, true, "still working", "timed_out", LOG_LEVEL_WARNING },
		{ 143, true, false, "", "interrupted", LOG_LEVEL_WARNING },
		{ 1, false, false, NULL, "failed", LOG_LEVEL_WARNING },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct jobs_action *l;
		char head[160];

		load("max_runtime = 5s\n");
		running();
		if (rows[i].time_out) {
			now += 5;
			step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
						  .timer = JOBS_TIMER_LIMIT });
		}
		if (rows[i].stop)
			step((struct jobs_event){ .type = JOBS_EV_LEAD_ENDING, .job = -1 });
		now += 1;
		step((struct jobs_event){ .type = JOBS_EV_RUN_GONE, .job = tick_job,
					  .status = rows[i].status,
					  .last_line = rows[i].last });
		snprintf(head, sizeof(head), "job tick: run 5 for tick 2027-01-15T08:00:00Z "
			 "%s (exit status %d, ", rows[i].outcome, rows[i].status);
		l = line_of(head);
		ck_assert_msg(l != NULL, "no line \"%s...\"", head);
		ck_assert_int_eq(l->level, rows[i].level);
		if (rows[i].last && *rows[i].last) {
			char tail[128];

			snprintf(tail, sizeof(tail), "s); last output line: %s", rows[i].last);
			ck_assert_msg(strstr(l->text, tail), "%s", l->text);
		} else {
			ck_assert_msg(!strstr(l->text, "last output line"), "%s", l->text);
		}
		unload();
	}
}
END_TEST

/* A pause stops what runs and records the ticks paused; a resume starts
 * the job without a schedule at once. */
START_TEST(test_pause_and_resume)
{
	const char *by[] = { "ops" }, *at[] = { "2027-01-15T08:00:00Z" };
	struct jobs_pauses all = { .all = true, .all_by = by[0], .all_at = at[0] };
	struct jobs_pauses none = { .all = false };
	const struct jobs_action *r;

	load("");
	lead(T0, INT64_MIN);
	step((struct jobs_event){ .type = JOBS_EV_PAUSES, .job = -1, .pauses = &all });
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, svc_job, 0));
	ck_assert(said("job svc paused by ops at 2027-01-15T08:00:00Z: stopping it"));
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	r = find(JOBS_DO_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->outcome, JOBS_PAUSED);
	step((struct jobs_event){ .type = JOBS_EV_RUN_GONE, .job = svc_job, .status = 143 });
	ck_assert_int_eq(find(JOBS_DO_FINISH, -2, 0) == NULL, 1); /* no run row */
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	step((struct jobs_event){ .type = JOBS_EV_PAUSES, .job = -1, .pauses = &none });
	ck_assert_ptr_nonnull(find(JOBS_DO_START, svc_job, 0));
	ck_assert(said("job svc resumed"));
	unload();
}
END_TEST

/* Ticks missed while no node led: recorded missed, oldest first, and
 * the newest run (missed = once); with missed = skip, none runs. */
START_TEST(test_missed_ticks)
{
	load("");
	lead(T0 - 50 * S, INT64_MIN);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 5);
	for (int i = 0; i < 4; i++) {
		const struct jobs_action *m = find(JOBS_DO_CLAIM, tick_job, i);

		ck_assert_int_eq(m->outcome, JOBS_MISSED);
		ck_assert_int_eq(m->tick, T0 - (4 - i) * 10 * S);
	}
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 4)->outcome, JOBS_RUNNING);
	ck_assert(said("job tick: 4 ticks missed while no node led"));
	unload();
	load("missed = skip\n");
	lead(T0 - 50 * S, INT64_MIN);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, i)->outcome, JOBS_MISSED);
	unload();
}
END_TEST

/* A command that cannot be started: its run is recorded failed with the
 * exec code, and the job is idle again (the next tick claims). */
START_TEST(test_start_failed)
{
	struct jobs_answer a = ok_at(T0 + 5);
	const struct jobs_action *f;

	load("");
	lead(T0 - 10 * S, INT64_MIN);
	a.run_id = 5;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	step((struct jobs_event){ .type = JOBS_EV_START_FAILED, .job = tick_job,
				  .error = "no such file" });
	ck_assert(said("job tick: cannot start its command: no such file"));
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->outcome, JOBS_FAILED);
	ck_assert_int_eq(f->run_id, 5);
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->outcome, JOBS_RUNNING);
	unload();
}
END_TEST

/* A ledger this role may not make: one refusal, nothing runs. */
START_TEST(test_ledger_refused)
{
	struct jobs_answer a = ok_at(T0);
	const struct jobs_action *r;

	load("");
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	a.missing = true;
	answer(JOBS_EV_ENSURED, -1, a);
	r = find(JOBS_DO_REFUSED, -1, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->fault, FAULT_LEDGER);
	ck_assert_ptr_nonnull(strstr(r->text, "run pgleader init-db"));
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	ck_assert_int_eq(count(JOBS_DO_LAST, -2), 0);
	unload();
}
END_TEST


/* ---- retries and on_failure (DESIGN 13) ---- */

/* The run going on (run 5, tick T0) ends with status at now + after. */
static void run_ends(double after, int status)
{
	now += after;
	step((struct jobs_event){ .type = JOBS_EV_RUN_GONE, .job = tick_job,
				  .status = status });
}

/* The tick job's timer t set (not stopped) by the last step, or NULL. */
static const struct jobs_action *find_timer(enum jobs_timer t)
{
	const struct jobs_action *a;

	for (int i = 0; (a = find(JOBS_DO_TIMER, tick_job, i)); i++)
		if (a->timer == t && a->after >= 0)
			return a;
	return NULL;
}

static struct jobs_view view_of(int job)
{
	struct jobs_view v;

	jobs_state_view(js, (size_t)job, &v);
	return v;
}

/* The arithmetic: retry_delay doubled per attempt, capped; a jitter under
 * a tenth of the delay, the same for the same tick and attempt. */
START_TEST(test_retry_arithmetic)
{
	static const struct { int attempt; int64_t want; } rows[] = {
		{ 2, 30 * S }, { 3, 60 * S }, { 4, 120 * S }, { 5, 240 * S },
		{ 6, 480 * S }, { 7, 600 * S }, { 40, 600 * S },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ck_assert_int_eq(jobs_retry_delay(30 * S, 600 * S, rows[i].attempt),
				 rows[i].want);
	for (int k = 2; k < 50; k++) {
		int64_t j = jobs_retry_jitter(42, "tick", T0, k, 30 * S);

		ck_assert(j >= 0 && j < 3 * S);
		ck_assert_int_eq(j, jobs_retry_jitter(42, "tick", T0, k, 30 * S));
	}
	ck_assert_int_eq(jobs_outcome_from_name("timed_out"), JOBS_TIMED_OUT);
	ck_assert_int_eq(jobs_outcome_from_name(""), JOBS_OUTCOME_COUNT);
}
END_TEST

/* A failed run is tried again after retry_delay (and its jitter) as
 * attempt 2 of the same tick, claimed as a tick is; no on_failure is
 * owed while an attempt follows. */
START_TEST(test_retry_claimed_as_attempt)
{
	struct jobs_answer a = ok_at(T0 + 7 * S);
	const struct jobs_action *t, *c, *f;

	load("retries = 2\nretry_delay = 3s\non_failure = true\n");
	running();
	run_ends(1, 1);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert(!f->owed);
	ck_assert(said("job tick: run 5 failed (attempt 1 of 3); attempt 2 in"));
	t = find_timer(JOBS_TIMER_RETRY);
	ck_assert_ptr_nonnull(t);
	ck_assert(t->after >= 2.9 && t->after < 3.3);
	ck_assert_int_eq(count(JOBS_DO_ON_FAILURE_CLAIM, -2), 0);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	now += t->after;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_RETRY });
	c = find(JOBS_DO_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->tick, T0);
	ck_assert_int_eq(c->attempt, 2);
	ck_assert_int_eq(c->term.fencing_token, TOKEN);
	ck_assert_int_eq(c->term.lock_pid, LOCK_PID);
	a.run_id = 6;
	a.tick = T0;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(find(JOBS_DO_START, tick_job, 0)->attempt, 2);
	ck_assert_int_eq(find(JOBS_DO_START, tick_job, 0)->run_id, 6);
	ck_assert_int_eq(view_of(tick_job).retries, 1);
	unload();
}
END_TEST

/* Without a retry claimed (the claim refused: the lock gone), nothing
 * starts; an attempt that succeeds owes nothing. */
START_TEST(test_retry_refused_not_run)
{
	struct jobs_answer a = ok_at(T0 + 7 * S);

	load("retries = 1\nretry_delay = 3s\n");
	running();
	run_ends(1, 1);
	now += 3.5;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_RETRY });
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->attempt, 2);
	a.holder = false;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, tick_job), 0);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0); /* not planned again */
	unload();
}
END_TEST

/* A claim answered while this node was frozen (SIGSTOP) is read on
 * SIGCONT, before the election sees its lease gone: the lock was held
 * when the statement ran, 20 s ago, but its sessions may have ended since
 * and another node, holding the fence, may have cut the run and run the
 * next tick (the simulator's seeds 2001621, 2003881). Nothing starts; the
 * row is recorded interrupted, with one warning. An answer that waited on
 * its way to the server and came back at once is fresh: it runs. */
START_TEST(test_claim_read_late_not_run)
{
	struct jobs_answer a = ok_at(T0 + 5);
	const struct jobs_action *f;

	load("");
	lead(T0 - 10 * S, INT64_MIN);
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->tick, T0);
	now += 20;                      /* frozen; the answer came meanwhile */
	a.run_id = 5;
	a.tick = T0;
	a.rtt = 20;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->run_id, 5);
	ck_assert_int_eq(f->outcome, JOBS_INTERRUPTED);
	ck_assert(said("job tick: tick 2027-01-15T08:00:00Z not run: its claim's answer "
		       "was read 20.0s after the server ran it, over ping_timeout (2.0s)"));
	ck_assert_int_eq(count(JOBS_DO_LOG, -2), 1);
	unload();
	load("");
	lead(T0 - 10 * S, INT64_MIN);
	now += 3.4;                     /* the request waited 3.4 s, not the answer */
	a = ok_at(T0 + 3400);
	a.run_id = 5;
	a.tick = T0;
	a.rtt = 3.4;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(find(JOBS_DO_START, tick_job, 0)->run_id, 5);
	ck_assert_int_eq(count(JOBS_DO_FINISH, -2), 0);
	unload();
}
END_TEST

/* A retry's claim read late starts nothing either; the failure before it
 * was the tick's last, so its on_failure is claimed. */
START_TEST(test_retry_claim_read_late)
{
	struct jobs_answer a = ok_at(T0 + 3 * S);

	load("retries = 1\nretry_delay = 3s\non_failure = true\n");
	running();
	run_ends(1, 1);
	now += 3.5;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_RETRY });
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->attempt, 2);
	now += 10;
	a.run_id = 6;
	a.tick = T0;
	a.rtt = 10;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, -2), 0);
	ck_assert_int_eq(find(JOBS_DO_FINISH, -2, 0)->run_id, 6);
	ck_assert_int_eq(find(JOBS_DO_FINISH, -2, 0)->outcome, JOBS_INTERRUPTED);
	ck_assert_int_eq(find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0)->run_id, 5);
	ck_assert_int_eq(view_of(tick_job).retries, 0);
	unload();
}
END_TEST

/* The last attempt fails: its row records on_failure owed, the command's
 * claim goes out (its row, this term's token), and it runs once claimed,
 * with the run's facts and its timeout; its end is counted. */
START_TEST(test_last_attempt_on_failure)
{
	struct jobs_answer a = ok_at(T0 + 3 * S);
	const struct jobs_action *f, *c, *h;

	load("on_failure = echo failed\non_failure_timeout = 5s\n");
	running();
	run_ends(1, 3);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert(f->owed);
	ck_assert_ptr_null(find_timer(JOBS_TIMER_RETRY));
	c = find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->run_id, 5);
	ck_assert_int_eq(c->term.fencing_token, TOKEN);
	ck_assert_int_eq(count(JOBS_DO_ON_FAILURE, -2), 0); /* not before its claim */
	a.run_id = 5;
	answer(JOBS_EV_ON_FAILURE_CLAIMED, tick_job, a);
	h = find(JOBS_DO_ON_FAILURE, tick_job, 0);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(h->run_id, 5);
	ck_assert_int_eq(h->tick, T0);
	ck_assert_int_eq(h->attempt, 1);
	ck_assert_int_eq(h->outcome, JOBS_FAILED);
	ck_assert_int_eq(h->status, 3);
	ck_assert(h->after == 5.0);
	step((struct jobs_event){ .type = JOBS_EV_ON_FAILURE_DONE, .job = tick_job,
				  .status = 0, .run_id = 5 });
	ck_assert_int_eq(view_of(tick_job).on_failure[JOBS_HOOK_SUCCEEDED], 1);
	step((struct jobs_event){ .type = JOBS_EV_ON_FAILURE_DONE, .job = tick_job,
				  .timed_out = true, .status = 143, .run_id = 5 });
	ck_assert_int_eq(view_of(tick_job).on_failure[JOBS_HOOK_TIMED_OUT], 1);
	ck_assert(said("took longer than 5.0s"));
	unload();
}
END_TEST

/* An on_failure claimed by another leader (or the lock gone) is not
 * run here; one lost with the session is claimed again. */
START_TEST(test_on_failure_claimed_elsewhere)
{
	struct jobs_answer a = ok_at(T0 + 3 * S);

	load("on_failure = echo failed\n");
	running();
	run_ends(1, 3);
	answer(JOBS_EV_ON_FAILURE_CLAIMED, tick_job,
	       (struct jobs_answer){ .lost = true, .error = "gone" });
	ck_assert_int_eq(find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0)->run_id, 5);
	a.run_id = 0;
	answer(JOBS_EV_ON_FAILURE_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_ON_FAILURE, -2), 0);
	ck_assert(said("it was sent already"));
	unload();
}
END_TEST

/* A retry that would come after the next tick is not made: the newer
 * tick wins (a line), and the failure is the tick's last. */
START_TEST(test_next_tick_ends_retries)
{
	const struct jobs_action *f;

	load("retries = 3\nretry_delay = 20s\non_failure = true\n");
	running();
	run_ends(1, 1);
	ck_assert(said("not tried again: tick"));
	ck_assert(said("the newer tick wins"));
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert(f->owed);
	ck_assert_ptr_nonnull(find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0));
	unload();
	/* one due first, but the tick's timer fires before it (the retry
	 * waited): the retry is dropped when the tick falls due */
	load("retries = 3\nretry_delay = 5s\n");
	running();
	run_ends(4, 1);
	now += 6;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert(said("the newer tick wins"));
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->attempt, 1);
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->tick, T0 + 10 * S);
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_RETRY });
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	unload();
}
END_TEST

/* A new leader reads the newest tick's last attempt: failed, with an
 * attempt due before the next tick, it claims that attempt when due; an
 * on_failure owed that nobody claimed is claimed. */
START_TEST(test_catch_up_after_failover)
{
	struct jobs_answer a = ok_at(T0 + 2 * S);
	const struct jobs_action *c;

	load("retries = 2\nretry_delay = 3s\non_failure = true\n");
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	answer(JOBS_EV_ENSURED, -1, ok_at(T0 + 2 * S));
	a.last_tick = T0;
	a.last_run_id = 9;
	a.last_attempt = 1;
	a.last_exit = 1;
	snprintf(a.last_outcome, sizeof(a.last_outcome), "failed");
	a.last_ended = T0 + 1 * S;
	a.owed_run_id = 4;
	a.owed_tick = T0 - 10 * S;
	a.owed_attempt = 3;
	snprintf(a.owed_outcome, sizeof(a.owed_outcome), "timed_out");
	answer(JOBS_EV_LAST, tick_job, a);
	ck_assert_int_eq(find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0)->run_id, 4);
	ck_assert_int_eq(count(JOBS_DO_ON_FAILURE_CLAIM, tick_job), 1);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	ck_assert(said("attempt 2 in"));
	now += 2.5;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_RETRY });
	c = find(JOBS_DO_CLAIM, tick_job, 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->tick, T0);
	ck_assert_int_eq(c->attempt, 2);
	unload();
	/* the newest tick's last attempt, its attempts used up: its
	 * on_failure (the predecessor may have died before claiming it) */
	load("retries = 1\non_failure = true\n");
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	answer(JOBS_EV_ENSURED, -1, ok_at(T0 + 2 * S));
	a.last_attempt = 2;
	a.owed_run_id = 0;
	answer(JOBS_EV_LAST, tick_job, a);
	ck_assert_int_eq(find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0)->run_id, 9);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	unload();
}
END_TEST

/* ---- drain (DESIGN 13) ---- */

static const struct jobs_action *timer_of(enum jobs_timer t, int job)
{
	for (size_t i = 0; i < out.n; i++)
		if (out.a[i].type == JOBS_DO_TIMER && out.a[i].timer == t && out.a[i].job == job)
			return &out.a[i];
	return NULL;
}

static void lead_ends(bool drain)
{
	step((struct jobs_event){ .type = JOBS_EV_LEAD_ENDING, .job = -1, .drain = drain });
}

static void gone(int job, int status)
{
	step((struct jobs_event){ .type = JOBS_EV_RUN_GONE, .job = job, .status = status });
}

/* The runs' ends reached the ledger: the flush's timer. */
static void flushed(void)
{
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = -1, .timer = JOBS_TIMER_FLUSH });
}

/* A stop of the leader's own will: the scheduled run goes on to its end,
 * the job without a schedule is stopped at once, no tick fires; gone once
 * both ended, the run recorded as it ended. */
START_TEST(test_drain_lets_runs_finish)
{
	const struct jobs_action *t;

	load("");
	cfg.drain_timeout_ms = 5 * S;
	running();
	lead_ends(true);
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, svc_job, 0));
	ck_assert_ptr_null(find(JOBS_DO_STOP, tick_job, 0));
	t = timer_of(JOBS_TIMER_DRAIN, -1);
	ck_assert_ptr_nonnull(t);
	ck_assert(t->after == 5.0);
	ck_assert(timer_of(JOBS_TIMER_TICK, tick_job)->after < 0);
	ck_assert(said("draining: 1 run may finish for up to 5.0s"));
	ck_assert_ptr_null(find(JOBS_DO_GONE, -1, 0));
	now += 1;
	gone(svc_job, 143);
	ck_assert_ptr_null(find(JOBS_DO_GONE, -1, 0));
	now += 2;
	gone(tick_job, 0);
	ck_assert_int_eq(find(JOBS_DO_FINISH, -1, 0)->outcome, JOBS_SUCCEEDED);
	flushed();
	ck_assert_ptr_nonnull(find(JOBS_DO_GONE, -1, 0));
	ck_assert(timer_of(JOBS_TIMER_DRAIN, -1)->after < 0);
	/* a drain timer late after all: nothing more */
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = -1, .timer = JOBS_TIMER_DRAIN });
	ck_assert_int_eq(count(JOBS_DO_STOP, -2), 0);
	ck_assert_ptr_null(find(JOBS_DO_GONE, -1, 0));
	unload();
}
END_TEST

/* drain_timeout runs out: the run is stopped then, recorded interrupted;
 * a second drain (a SIGTERM during a handover's) keeps the first bound. */
START_TEST(test_drain_runs_out)
{
	load("");
	cfg.drain_timeout_ms = 5 * S;
	running();
	lead_ends(true);
	gone(svc_job, 143);
	now += 2;
	lead_ends(true);
	ck_assert_int_eq(count(JOBS_DO_STOP, -2), 0);
	ck_assert_ptr_null(timer_of(JOBS_TIMER_DRAIN, -1));
	now += 3;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = -1, .timer = JOBS_TIMER_DRAIN });
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, tick_job, 0));
	ck_assert(said("drain_timeout (5.0s) ran out: stopping the runs still going"));
	gone(tick_job, 143);
	ck_assert_int_eq(find(JOBS_DO_FINISH, -1, 0)->outcome, JOBS_INTERRUPTED);
	flushed();
	ck_assert_ptr_nonnull(find(JOBS_DO_GONE, -1, 0));
	unload();
}
END_TEST

/* A stop that is not of the leader's own will (the lease lost) during a
 * drain stops the run now; without drain_timeout a drain is a stop. */
START_TEST(test_drain_cut_short)
{
	load("");
	cfg.drain_timeout_ms = 5 * S;
	running();
	lead_ends(true);
	now += 1;
	lead_ends(false);
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, tick_job, 0));
	ck_assert(timer_of(JOBS_TIMER_DRAIN, -1)->after < 0);
	unload();
	load("");
	running();
	lead_ends(true);
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, tick_job, 0));
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, svc_job, 0));
	ck_assert_ptr_null(timer_of(JOBS_TIMER_DRAIN, -1));
	unload();
}
END_TEST

/* The term's jobs are announced once the ledger is there, each scheduled
 * one with its next tick after the server's now; each term's announcement
 * is a new generation. */
START_TEST(test_announce)
{
	const struct jobs_action *a;
	struct jobs_view v;

	load("");
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	ck_assert_ptr_null(find(JOBS_DO_ANNOUNCE, -1, 0));
	answer(JOBS_EV_ENSURED, -1, ok_at(T0 + 1));
	a = find(JOBS_DO_ANNOUNCE, -1, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq((int)a->generation, 1);
	ck_assert_int_eq(a->term.fencing_token, TOKEN);
	jobs_state_view(js, (size_t)tick_job, &v);
	ck_assert(v.announced_next == (double)(T0 + 10 * S) / 1000);
	ck_assert(v.next_tick == 0); /* planned only once the ledger told */
	jobs_state_view(js, (size_t)svc_job, &v);
	ck_assert(v.announced_next == 0);
	lead_ends(false);
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN + 1, LOCK_PID } });
	answer(JOBS_EV_ENSURED, -1, ok_at(T0 + 1));
	ck_assert_int_eq((int)find(JOBS_DO_ANNOUNCE, -1, 0)->generation, 2);
	unload();
}
END_TEST

/* ---- reload (DESIGN 13) ---- */

static struct config fresh;

/* A second configuration, as a reload reads it: [job.tick] every 20 s,
 * svc gone, [job.added] new and without a schedule. */
static void load_fresh(void)
{
	char path[] = "/tmp/test_jobs_step-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	char *argv[] = { "pgleader", "-c", path, "--node-id", "a", NULL };
	char err[512];

	ck_assert_ptr_nonnull(f);
	fprintf(f, "[pgleader]\nlock_key = 42\n[job.tick]\ncommand = false\n"
		"schedule = @every 20s\n[job.added]\ncommand = sleep 5\n");
	fclose(f);
	memset(&fresh, 0, sizeof(fresh));
	ck_assert_msg(config_load(&fresh, 5, argv, err, sizeof(err)) == CONFIG_OK, "%s", err);
	unlink(path);
}

/* Kept, removed, added by name, the lead kept: the running scheduled run
 * goes on and takes its new command once it ended; the job without a
 * schedule the file lost is stopped; the new one is added, then started;
 * the new list announced. */
START_TEST(test_reload)
{
	const struct jobs_action *a;
	struct jobs_view v;

	load("");
	load_fresh();
	running();
	step((struct jobs_event){ .type = JOBS_EV_RELOAD, .job = -1, .cfg = &fresh });
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, svc_job, 0));
	ck_assert_ptr_null(find(JOBS_DO_STOP, tick_job, 0));
	ck_assert_ptr_null(find(JOBS_DO_RECONFIGURE, tick_job, 0));
	a = find(JOBS_DO_ADD, 2, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(a->job_cfg->name, "added");
	ck_assert_ptr_nonnull(find(JOBS_DO_START, 2, 0));
	ck_assert(a < find(JOBS_DO_START, 2, 0)); /* added before it is named */
	ck_assert_int_eq((int)find(JOBS_DO_ANNOUNCE, -1, 0)->generation, 2);
	ck_assert(said("job svc: removed by a reload; stopping it"));
	ck_assert(said("job added: added by a reload"));
	ck_assert_int_eq((int)jobs_state_count(js), 3); /* svc shown while it stops */
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = 2, .pid = 500 });
	gone(svc_job, 143);
	ck_assert_int_eq(count(JOBS_DO_START, svc_job), 0); /* never again */
	ck_assert_int_eq((int)jobs_state_count(js), 2);
	for (size_t i = 0; i < 2; i++) {
		jobs_state_view(js, i, &v);
		ck_assert(!v.removed && strcmp(v.name, "svc"));
	}
	gone(tick_job, 0);
	a = find(JOBS_DO_RECONFIGURE, tick_job, 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(a->job_cfg->command[0], "false");
	jobs_state_view(js, (size_t)tick_job, &v);
	ck_assert_str_eq(v.schedule, "@every 20s");
	unload();
	config_free(&fresh);
}
END_TEST


/* ---- run now and overlap (DESIGN 13) ---- */

/* The requests to run now a read found, answered at db_now. */
static void requests(int64_t db_now, const struct jobs_trigger *t, int n)
{
	struct jobs_answer a = ok_at(db_now);

	a.triggers = t;
	a.n_triggers = n;
	answer(JOBS_EV_TRIGGERS, -1, a);
}

static const struct jobs_action *claim_of(int job)
{
	const struct jobs_action *c = find(JOBS_DO_CLAIM, job, 0);

	ck_assert_ptr_nonnull(c);
	return c;
}

/* The term reads the requests once the ledger is there, then at the ping
 * interval; one that comes while the job runs waits for the run's end,
 * then is claimed (its request named: its row takes the request's time)
 * and runs, its line naming who asked; read again while its claim is on
 * its way, it is not claimed twice. */
START_TEST(test_trigger_waits_then_runs)
{
	const struct jobs_trigger t = { 9, T0 + 3 * S + 1, "tick", "ops (role x) from local socket" };
	const struct jobs_action *c;

	load("");
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	answer(JOBS_EV_ENSURED, -1, ok_at(T0));
	ck_assert_ptr_nonnull(find(JOBS_DO_TRIGGERS, -1, 0));
	unload();
	load("");
	running();
	now += 3;
	requests(T0 + 3 * S, &t, 1);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	ck_assert_ptr_nonnull(timer_of(JOBS_TIMER_TRIGGERS, -1));
	ck_assert_double_eq_tol(timer_of(JOBS_TIMER_TRIGGERS, -1)->after, 1.0, 1e-9);
	ck_assert_int_eq(view_of(tick_job).waiting, 1);
	run_ends(1, 0);
	c = claim_of(tick_job);
	ck_assert_int_eq(c->trigger, 9);
	ck_assert_int_eq(c->tick, t.tick);
	ck_assert(!c->record && !c->rerun);
	requests(T0 + 4 * S, &t, 1); /* read before the claim's commit */
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	{
		struct jobs_answer a = ok_at(T0 + 4 * S);

		a.run_id = 6;
		a.tick = t.tick;
		answer(JOBS_EV_CLAIMED, tick_job, a);
	}
	ck_assert_int_eq(find(JOBS_DO_START, tick_job, 0)->run_id, 6);
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 401 });
	ck_assert(said("job tick: started run 6 asked for now by ops (role x) from local "
		       "socket at 2027-01-15T08:00:03.001Z (pid 401)"));
	ck_assert_int_eq((int)view_of(tick_job).triggers, 1);
	ck_assert_int_eq(view_of(tick_job).waiting, 0);
	unload();
}
END_TEST

/* A run asked for now that fails is not tried again (its asker sees it
 * fail and may ask again); its on_failure is owed as for any tick. */
START_TEST(test_trigger_not_retried)
{
	const struct jobs_trigger t = { 3, T0 + 2 * S + 1, "tick", "ops" };
	struct jobs_answer a = ok_at(T0 + 2 * S);
	const struct jobs_action *f;

	load("retries = 2\non_failure = true\n");
	lead(T0 - 10 * S, INT64_MIN);
	a.run_id = 5;
	answer(JOBS_EV_CLAIMED, tick_job, a); /* T0's run */
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 400 });
	run_ends(1, 0);
	now += 1;
	requests(T0 + 2 * S, &t, 1);
	a.run_id = 8;
	a.tick = t.tick;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 402 });
	run_ends(1, 1);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->run_id, 8);
	ck_assert(f->owed);
	ck_assert_ptr_null(find_timer(JOBS_TIMER_RETRY));
	ck_assert_ptr_nonnull(find(JOBS_DO_ON_FAILURE_CLAIM, tick_job, 0));
	unload();
}
END_TEST

/* No request runs before the term planned its ticks (an older term's run
 * may still be stopping), nor one for a job this leader does not have:
 * that one is said once a term, and left in the ledger. */
START_TEST(test_trigger_waits_for_the_plan)
{
	const struct jobs_trigger t[2] = { { 4, T0 + 1, "tick", "ops" },
					   { 5, T0 + 2, "gone", "ops" } };

	load("");
	step((struct jobs_event){ .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				  .term = { 42, TOKEN, LOCK_PID } });
	answer(JOBS_EV_ENSURED, -1, ok_at(T0));
	requests(T0, t, 2);
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	ck_assert(said("a run of job gone was asked for now by ops, but this leader has no"));
	requests(T0, t, 2);
	ck_assert(!said("a run of job gone"));
	{
		struct jobs_answer a = ok_at(T0 + 5);

		a.last_tick = T0; /* T0 ran: nothing due before T0 + 10 s */
		answer(JOBS_EV_LAST, tick_job, a);
	}
	ck_assert_int_eq(claim_of(tick_job)->trigger, 4);
	unload();
}
END_TEST

/* overlap = queue: a tick that falls during a run is claimed once the run
 * ends; of two that fall, the newer waits and the older is recorded
 * skipped. */
START_TEST(test_overlap_queue)
{
	const struct jobs_action *c;

	load("overlap = queue\n");
	running();
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	ck_assert(said("tick 2027-01-15T08:00:10Z queued: the run for 2027-01-15T08:00:00Z "
		       "is still going"));
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	c = claim_of(tick_job);
	ck_assert(c->record);
	ck_assert_int_eq(c->outcome, JOBS_SKIPPED);
	ck_assert_int_eq(c->tick, T0 + 10 * S);
	run_ends(1, 0);
	c = claim_of(tick_job);
	ck_assert(!c->record);
	ck_assert_int_eq(c->tick, T0 + 20 * S);
	ck_assert_int_eq(c->trigger, 0);
	unload();
}
END_TEST

/* overlap = replace: the run going on is stopped (recorded interrupted)
 * and the new tick claimed once it is gone; a claim answered after a
 * newer tick fell starts nothing. A run asked for now is not replaced. */
START_TEST(test_overlap_replace)
{
	const struct jobs_action *f;
	struct jobs_answer a;

	load("overlap = replace\n");
	running();
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_ptr_nonnull(find(JOBS_DO_STOP, tick_job, 0));
	ck_assert(said("tick 2027-01-15T08:00:10Z replaces run 5 (overlap = replace)"));
	run_ends(1, 143);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->outcome, JOBS_INTERRUPTED);
	ck_assert_int_eq(claim_of(tick_job)->tick, T0 + 10 * S);
	now += 10; /* the claim is slow: the next tick falls first */
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	a = ok_at(T0 + 21 * S);
	a.run_id = 7;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, tick_job), 0);
	f = find(JOBS_DO_FINISH, -2, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->run_id, 7);
	ck_assert_int_eq(f->outcome, JOBS_INTERRUPTED);
	ck_assert_int_eq(claim_of(tick_job)->tick, T0 + 20 * S);
	unload();
}
END_TEST

START_TEST(test_overlap_replace_spares_a_manual_run)
{
	const struct jobs_trigger t = { 9, T0 + 2 * S + 1, "tick", "ops" };
	struct jobs_answer a = ok_at(T0 + 2 * S);

	load("overlap = replace\n");
	lead(T0 - 10 * S, INT64_MIN);
	a.run_id = 5;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 400 });
	run_ends(1, 0);
	requests(T0 + 2 * S, &t, 1);
	a.run_id = 6;
	a.tick = t.tick;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 401 });
	now += 8;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_int_eq(count(JOBS_DO_STOP, tick_job), 0);
	ck_assert(said("queued: the run for 2027-01-15T08:00:02.001Z is still going"));
	unload();
}
END_TEST

/* A request to run now whose job a pause stopped meanwhile is recorded
 * paused, not run. */
START_TEST(test_trigger_paused)
{
	const struct jobs_trigger t = { 9, T0 + 2 * S + 1, "tick", "ops" };
	const char *names[] = { "tick" }, *by[] = { "op" }, *at[] = { "T" };
	struct jobs_pauses p = { .names = names, .by = by, .at = at, .n = 1 };
	struct jobs_answer a = ok_at(T0 + 2 * S);

	load("");
	lead(T0 - 10 * S, INT64_MIN);
	a.run_id = 5;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	step((struct jobs_event){ .type = JOBS_EV_RUN_STARTED, .job = tick_job, .pid = 400 });
	run_ends(1, 0);
	requests(T0 + 2 * S, &t, 1);
	step((struct jobs_event){ .type = JOBS_EV_PAUSES, .job = -1, .pauses = &p });
	a.run_id = 6;
	a.tick = t.tick;
	answer(JOBS_EV_CLAIMED, tick_job, a);
	ck_assert_int_eq(count(JOBS_DO_START, tick_job), 0);
	ck_assert_int_eq(find(JOBS_DO_FINISH, -2, 0)->outcome, JOBS_PAUSED);
	/* one read while paused waits for the resume */
	{
		const struct jobs_trigger t2 = { 10, T0 + 3 * S + 1, "tick", "ops" };
		const struct jobs_pauses none = { .n = 0 };

		requests(T0 + 3 * S, &t2, 1);
		ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
		ck_assert_int_eq(view_of(tick_job).waiting, 1);
		step((struct jobs_event){ .type = JOBS_EV_PAUSES, .job = -1, .pauses = &none });
		ck_assert_int_eq(claim_of(tick_job)->trigger, 10);
	}
	unload();
}
END_TEST


/* The plan after a regain (lock session pid 222): tick missed recorded
 * missed, the next skipped, the one after run, in that order. */
static void ck_regain_plan(int64_t missed)
{
	const struct jobs_action *c;

	for (int i = 0; i < 3; i++) {
		c = find(JOBS_DO_CLAIM, tick_job, i);
		ck_assert_ptr_nonnull(c);
		ck_assert_int_eq(c->record, i < 2);
		ck_assert_int_eq(c->tick, missed + i * 10 * S);
		if (i < 2)
			ck_assert_int_eq(c->outcome, i == 0 ? JOBS_MISSED : JOBS_SKIPPED);
	}
	ck_assert_int_eq(c->term.lock_pid, 222);
}

/* Back from failsafe (lock session pid 222) a second after a claim went
 * out; 24 s later that claim, the old session's, is refused (a). */
static void regained_old_claim_refused(struct jobs_answer a)
{
	now += 1;
	step((struct jobs_event){ .type = JOBS_EV_LOCK_PID, .job = -1, .lock_pid = 222 });
	ck_assert_ptr_nonnull(find(JOBS_DO_LAST, tick_job, 0));
	now += 24;
	a.holder = false;
	answer(JOBS_EV_CLAIMED, tick_job, a);
}

/* Finding 14: back from failsafe (a new lock session), the plan from the
 * ledger's newest row runs the newest tick that fell since the lock came
 * back and records the others since skipped (they fell while this node
 * led, their claims behind the old session's); only the older ones were
 * missed. */
START_TEST(test_regain_plan_runs_what_fell_since)
{
	struct jobs_answer a = ok_at(T0 + 25 * S);

	load("missed = skip\n");
	lead(T0 - 10 * S, INT64_MIN); /* T0's claim goes out */
	regained_old_claim_refused(a);
	a = ok_at(T0 + 25 * S);
	a.last_tick = T0 - 10 * S;
	answer(JOBS_EV_LAST, tick_job, a);
	ck_regain_plan(T0);
	ck_assert(said("1 tick missed while no node led (newest 2027-01-15T08:00:00Z)"));
	ck_assert(said("1 tick skipped while the claim of an older one waited"));
	unload();
}
END_TEST


/* Sim --jobs seed 2022487: a job without a row in the ledger, back from
 * failsafe while its first claim waited (refused then with the old
 * session): the plan after the regain starts where this term first
 * planned it, not at the server's now, so that the ticks that fell
 * meanwhile are recorded (the one before the regain missed, those since
 * skipped but the newest, which runs) instead of lost without a row. */
START_TEST(test_regain_without_a_row_keeps_its_ticks)
{
	struct jobs_answer a = ok_at(T0 + 10 * S);

	load("missed = skip\n");
	lead(INT64_MIN, INT64_MIN); /* no row: planned from T0 */
	ck_assert_int_eq(count(JOBS_DO_CLAIM, tick_job), 0);
	now += 10;
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	ck_assert_int_eq(find(JOBS_DO_CLAIM, tick_job, 0)->tick, T0 + 10 * S);
	regained_old_claim_refused(a);
	answer(JOBS_EV_LAST, tick_job, ok_at(T0 + 35 * S)); /* still no row */
	ck_regain_plan(T0 + 10 * S);
	unload();
}
END_TEST


/* Finding 15: a plan that records missed ticks queues none of its own
 * (a tick queued below recorded ones would be lost with the lead): the
 * due ticks that do not run are recorded, skipped or missed, at once. */
START_TEST(test_catch_up_queues_nothing)
{
	int n = 0;
	const struct jobs_action *c;

	load("overlap = queue\n");
	running(); /* T0's run goes on */
	now += 35; /* frozen, say: the timer set for T0 + 10 s fires now */
	step((struct jobs_event){ .type = JOBS_EV_TIMER, .job = tick_job,
				  .timer = JOBS_TIMER_TICK });
	for (int i = 0; (c = find(JOBS_DO_CLAIM, tick_job, i)); i++) {
		ck_assert(c->record);
		n++;
	}
	ck_assert_int_eq(n, 3); /* T0 + 10, 20, 30 s: each has a row */
	ck_assert_int_eq(view_of(tick_job).waiting, 0);
	ck_assert(!said("queued"));
	unload();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jobs_step");
	TCase *tc = tcase_create("decider");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_claim_before_run);
	tcase_add_test(tc, test_token_check);
	tcase_add_test(tc, test_interrupted_not_rerun);
	tcase_add_test(tc, test_no_start_while_running);
	tcase_add_test(tc, test_nothing_after_lead);
	tcase_add_test(tc, test_pause_and_resume);
	tcase_add_test(tc, test_run_end_line);
	tcase_add_test(tc, test_missed_ticks);
	tcase_add_test(tc, test_start_failed);
	tcase_add_test(tc, test_ledger_refused);
	tcase_add_test(tc, test_retry_arithmetic);
	tcase_add_test(tc, test_retry_claimed_as_attempt);
	tcase_add_test(tc, test_retry_refused_not_run);
	tcase_add_test(tc, test_claim_read_late_not_run);
	tcase_add_test(tc, test_retry_claim_read_late);
	tcase_add_test(tc, test_last_attempt_on_failure);
	tcase_add_test(tc, test_on_failure_claimed_elsewhere);
	tcase_add_test(tc, test_next_tick_ends_retries);
	tcase_add_test(tc, test_catch_up_after_failover);
	tcase_add_test(tc, test_drain_lets_runs_finish);
	tcase_add_test(tc, test_drain_runs_out);
	tcase_add_test(tc, test_drain_cut_short);
	tcase_add_test(tc, test_announce);
	tcase_add_test(tc, test_reload);
	tcase_add_test(tc, test_trigger_waits_then_runs);
	tcase_add_test(tc, test_trigger_not_retried);
	tcase_add_test(tc, test_trigger_waits_for_the_plan);
	tcase_add_test(tc, test_overlap_queue);
	tcase_add_test(tc, test_overlap_replace);
	tcase_add_test(tc, test_overlap_replace_spares_a_manual_run);
	tcase_add_test(tc, test_trigger_paused);
	tcase_add_test(tc, test_regain_plan_runs_what_fell_since);
	tcase_add_test(tc, test_regain_without_a_row_keeps_its_ticks);
	tcase_add_test(tc, test_catch_up_queues_nothing);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
