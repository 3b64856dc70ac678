/* test_tickplan.c: which ticks are due at a planning point, and what each
 * becomes (run, missed or paused), table-driven over @every and cron
 * schedules. */
#include "tickplan.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NROWS(table) ((int)(sizeof(table) / sizeof(table[0])))
#define NONE INT64_MIN
#define S 1000  /* one second in ms */
#define T0 INT64_C(1800000000000) /* 2027-01-15T08:00:00Z, a whole minute */

static const struct {
	const char *name, *expr;
	int64_t last, now, fired;
	bool once;
	int64_t window;
	int64_t run, next;
	int n_missed;
	int64_t total, newest_missed;
} cases[] = {
	{ "a new job waits for its next tick", "@every 2s",
	  NONE, T0 + 3 * S, NONE, true, -1, NONE, T0 + 4 * S, 0, 0, NONE },
	{ "the timer's own tick runs", "@every 2s",
	  T0 + 1 * S, T0 + 2 * S + 5, T0 + 2 * S, false, -1, T0 + 2 * S, T0 + 4 * S, 0, 0, NONE },
	{ "the timer's tick runs under skip too, however late", "@every 2s",
	  T0 + 1 * S, T0 + 3 * S, T0 + 2 * S, false, 10, T0 + 2 * S, T0 + 4 * S, 0, 0, NONE },
	{ "nothing due between two ticks", "@every 2s",
	  T0 + 2 * S, T0 + 3 * S, NONE, true, -1, NONE, T0 + 4 * S, 0, 0, NONE },
	{ "once: the newest missed tick runs, the older are missed", "@every 2s",
	  T0, T0 + 7 * S, NONE, true, -1, T0 + 6 * S, T0 + 8 * S, 2, 2, T0 + 4 * S },
	{ "once, past the window: all missed", "@every 2s",
	  T0, T0 + 7 * S, NONE, true, 500, NONE, T0 + 8 * S, 3, 3, T0 + 6 * S },
	{ "once, the default window: the tick just past runs", "@every 2s",
	  T0, T0 + 8 * S, NONE, true, -1, T0 + 8 * S, T0 + 10 * S, 3, 3, T0 + 6 * S },
	/* the window's edge is in it (missed_window = 1s, the tick 1s ago),
	 * one millisecond past it is not */
	{ "once, at the window's edge: runs", "@every 2s",
	  T0, T0 + 9 * S, NONE, true, 1 * S, T0 + 8 * S, T0 + 10 * S, 3, 3, T0 + 6 * S },
	{ "once, just past the window's edge: missed", "@every 2s",
	  T0, T0 + 9 * S + 1, NONE, true, 1 * S, NONE, T0 + 10 * S, 4, 4, T0 + 8 * S },
	{ "skip: every missed tick is recorded, none runs", "@every 2s",
	  T0, T0 + 7 * S, NONE, false, -1, NONE, T0 + 8 * S, 3, 3, T0 + 6 * S },
	{ "late timer: the newer tick runs, the fired one is missed", "@every 1s",
	  T0, T0 + 2 * S + 100, T0 + S, true, -1, T0 + 2 * S, T0 + 3 * S, 1, 1, T0 + S },
	{ "a long outage: rows for the newest, the rest counted to the bound", "@every 1s",
	  T0, T0 + 5000 * S, NONE, false, -1, NONE, T0 + 5001 * S, TICKPLAN_ROWS,
	  TICKPLAN_COUNT_MAX, T0 + 5000 * S },
	{ "cron: the 15-minute tick missed by a down fleet runs once", "*/15 * * * *",
	  T0 - 30 * 60 * S, T0 + 5 * 60 * S, NONE, true, -1, T0, T0 + 15 * 60 * S, 1, 1,
	  T0 - 15 * 60 * S },
};

START_TEST(test_plan)
{
	char err[256];
	struct schedule *s = schedule_new(cases[_i].expr, "UTC", err, sizeof(err));
	struct tickplan p;

	ck_assert_msg(s != NULL, "%s: %s", cases[_i].name, err);
	tickplan(s, cases[_i].last, cases[_i].now, cases[_i].fired, cases[_i].once,
		 cases[_i].window, &p);
	ck_assert_msg(p.run == cases[_i].run, "%s: run %lld", cases[_i].name,
		      (long long)p.run);
	ck_assert_msg(p.next == cases[_i].next, "%s: next %lld", cases[_i].name,
		      (long long)p.next);
	ck_assert_msg(p.n_missed == cases[_i].n_missed, "%s: %d missed rows",
		      cases[_i].name, p.n_missed);
	ck_assert_msg(p.missed_total == cases[_i].total, "%s: %lld missed",
		      cases[_i].name, (long long)p.missed_total);
	if (cases[_i].n_missed)
		ck_assert_msg(p.missed[0] == cases[_i].newest_missed, "%s: newest missed %lld",
			      cases[_i].name, (long long)p.missed[0]);
	for (int i = 1; i < p.n_missed; i++)
		ck_assert_msg(p.missed[i] < p.missed[i - 1], "%s: not newest first",
			      cases[_i].name);
	schedule_free(s);
}
END_TEST

/* Ticks planned one after another from the timer never run one twice nor
 * skip one: the invariant the ledger then enforces across the fleet. */
START_TEST(test_walk_covers_every_tick_once)
{
	char err[256];
	struct schedule *s = schedule_new("@every 3s", NULL, err, sizeof(err));
	struct tickplan p;
	int64_t last = T0, now = T0, expect = T0 + 3 * S;

	ck_assert_ptr_nonnull(s);
	tickplan(s, last, now, NONE, true, -1, &p);
	for (int i = 0; i < 100; i++) {
		int64_t fired = p.next;

		last = now;
		now = fired + (i % 7) * 13; /* the timer's latency */
		tickplan(s, last, now, fired, false, -1, &p);
		ck_assert_int_eq(p.run, expect);
		ck_assert_int_eq(p.n_missed, 0);
		expect += 3 * S;
	}
	schedule_free(s);
}
END_TEST

/* Which pause holds a job (DESIGN 11): the lock's, or its own row, whose
 * asker is named before the lock's. */
static const char *const pause_names[] = { "report", "backup" };
static const char *const pause_by[] = { "psql (role a) from local socket", NULL };
static const char *const pause_at[] = { "2027-01-15T08:00:00Z", NULL };

static const struct {
	const char *name, *job;
	bool all;
	int n;
	bool paused;
	const char *by, *at;
} pause_cases[] = {
	{ "nothing paused", "report", false, 0, false, NULL, NULL },
	{ "another job paused", "cleanup", false, 2, false, NULL, NULL },
	{ "paused by name", "report", false, 2, true,
	  "psql (role a) from local socket", "2027-01-15T08:00:00Z" },
	{ "paused by name, asker not told", "backup", false, 2, true, NULL, NULL },
	{ "the whole lock", "cleanup", true, 2, true, "ops", "2027-01-15T09:00:00Z" },
	{ "both: the job's own row names who", "report", true, 2, true,
	  "psql (role a) from local socket", "2027-01-15T08:00:00Z" },
	{ "names compared whole", "repor", false, 2, false, NULL, NULL },
};

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

START_TEST(test_pause_of)
{
	struct tickplan_pause p;

	tickplan_pause_of(pause_cases[_i].job, pause_cases[_i].all, pause_names, pause_by,
			  pause_at, pause_cases[_i].n, "ops", "2027-01-15T09:00:00Z", &p);
	ck_assert_msg(p.paused == pause_cases[_i].paused, "%s: paused %d",
		      pause_cases[_i].name, p.paused);
	ck_assert_msg(same(p.by, pause_cases[_i].by), "%s: by %s", pause_cases[_i].name,
		      p.by ? p.by : "(null)");
	ck_assert_msg(same(p.at, pause_cases[_i].at), "%s: at %s", pause_cases[_i].name,
		      p.at ? p.at : "(null)");
}
END_TEST

START_TEST(test_pause_of_without_askers)
{
	struct tickplan_pause p;

	tickplan_pause_of("report", true, pause_names, NULL, NULL, 2, NULL, NULL, &p);
	ck_assert(p.paused && !p.by && !p.at);
	tickplan_pause_of("report", false, NULL, NULL, NULL, 0, "x", "y", &p);
	ck_assert(!p.paused && !p.by && !p.at);
}
END_TEST

/* A tick is recorded paused while its job is paused, and when it fell
 * before the resume (its jitter or its claim carried it past). */
static const struct {
	const char *name;
	bool paused;
	int64_t resumed_at, tick;
	bool want;
} paused_cases[] = {
	{ "never paused", false, NONE, T0, false },
	{ "paused now", true, NONE, T0, true },
	{ "paused again after a resume", true, T0 - S, T0, true },
	{ "a tick from before the resume", false, T0 + 1, T0, true },
	{ "the tick at the resume runs", false, T0, T0, false },
	{ "a tick after the resume runs", false, T0 - 1, T0, false },
};

START_TEST(test_paused_tick)
{
	ck_assert_msg(tickplan_paused(paused_cases[_i].paused, paused_cases[_i].resumed_at,
				      paused_cases[_i].tick) == paused_cases[_i].want,
		      "%s", paused_cases[_i].name);
}
END_TEST

static Suite *tickplan_suite(void)
{
	Suite *s = suite_create("tickplan");
	TCase *tc = tcase_create("plan");

	tcase_add_loop_test(tc, test_plan, 0, NROWS(cases));
	tcase_add_test(tc, test_walk_covers_every_tick_once);
	suite_add_tcase(s, tc);
	tc = tcase_create("pause");
	tcase_add_loop_test(tc, test_pause_of, 0, NROWS(pause_cases));
	tcase_add_test(tc, test_pause_of_without_askers);
	tcase_add_loop_test(tc, test_paused_tick, 0, NROWS(paused_cases));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(tickplan_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
