/* test_ledger.c: ledger.c's queue over a fake lease_query: what is kept
 * and sent again when the fence session is lost, what its asker hears. */
#include "ledger.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_sql.h"
#include "ledger_sql.h"

/* ---- the fake session: lease_query keeps the one statement sent ------- */

static struct {
	int sent;                /* statements sent */
	lease_query_fn fn;
	void *arg;
	char outcomes[64];       /* the last claim's outcomes array */
	char sql[16384];          /* the last statement */
	char output[64];         /* a finish's $6, "(null)" for NULL */
} fq;
static int heard, heard_lost;
static struct ledger_answer last; /* what the asker heard last */

bool lease_query(struct lease *l, const char *sql, int nparams,
		 const char *const *params, lease_query_fn fn, void *arg)
{
	(void)l;
	snprintf(fq.sql, sizeof(fq.sql), "%s", sql);
	fq.sent++;
	fq.fn = fn;
	fq.arg = arg;
	if (nparams == 10) /* a claim */
		snprintf(fq.outcomes, sizeof(fq.outcomes), "%s", params[6]);
	if (nparams == 6 && strstr(sql, "output = $6"))
		snprintf(fq.output, sizeof(fq.output), "%s",
			 params[5] ? params[5] : "(null)");
	return true;
}

static int backend_pid; /* the session's; 0: not connected */
static int notify_set;

int lease_backend_pid(const struct lease *l)
{
	(void)l;
	return backend_pid;
}

void lease_on_notify(struct lease *l, void (*fn)(void *arg), void *arg)
{
	(void)l;
	(void)arg;
	notify_set += fn != NULL;
}

/* The session closes with the statement in flight (lease.c's closed()). */
static void session_lost(void)
{
	lease_query_fn fn = fq.fn;

	fq.fn = NULL;
	fn(fq.arg, NULL, NULL, "the session closed");
}

static void asker(void *arg, const struct ledger_answer *a)
{
	(void)arg;
	heard++;
	heard_lost += a->lost;
	last = *a;
}

/* The statement in flight answered with one row of text values (NULL: SQL
 * NULL), or with an error of that SQLSTATE. */
static void answer_row(int ncols, const char *const *v)
{
	struct lease_sql_answer a = { 1, ncols, v };

	fq.fn(fq.arg, &a, NULL, NULL);
}

static void answer_error(const char *sqlstate, const char *msg)
{
	fq.fn(fq.arg, NULL, sqlstate, msg);
}

static const struct ledger_term term = { .lock_key = 42, .fencing_token = 7,
					 .lock_pid = 1234, .node_id = "n1" };

static struct ledger *fresh(void)
{
	static int session; /* the lease pointer is only handed back */
	struct ledger *l = ledger_new((struct lease *)&session, "pgleader", NULL);

	memset(&fq, 0, sizeof(fq));
	heard = heard_lost = 0;
	ck_assert_ptr_nonnull(l);
	return l;
}

/* A tick recorded not run (skipped, missed, paused) is kept across a lost
 * session, as a run's end is, and sent again once the session is back:
 * dropped, its tick had no row (the simulator's finding 9). */
START_TEST(test_record_kept_when_lost)
{
	struct ledger *l = fresh();

	ledger_claim(l, &term, "j", 1800000000000, 1, 0, "skipped", false, asker, NULL);
	ck_assert_int_eq(fq.sent, 1);
	ck_assert_str_eq(fq.outcomes, "{\"skipped\"}");
	session_lost();
	ck_assert(!ledger_idle(l));
	ck_assert_int_eq(heard, 0);
	ledger_session_ready(l);
	ck_assert_int_eq(fq.sent, 2);
	ck_assert_str_eq(fq.outcomes, "{\"skipped\"}");
	ledger_free(l);
}
END_TEST

/* A run's claim is not kept: its asker hears the loss and claims again
 * for its term if the term goes on (jobs_step.c's claim_answered). */
START_TEST(test_run_claim_told_when_lost)
{
	struct ledger *l = fresh();

	ledger_claim(l, &term, "j", 1800000000000, 1, 0, "running", false, asker, NULL);
	session_lost();
	ck_assert_int_eq(heard, 1);
	ck_assert_int_eq(heard_lost, 1);
	ck_assert(ledger_idle(l));
	ledger_free(l);
}
END_TEST

/* A run's end is kept too (unchanged). */
START_TEST(test_finish_kept_when_lost)
{
	struct ledger *l = fresh();

	ledger_finish(l, 7, 99, "succeeded", 0, false, NULL, 0);
	session_lost();
	ck_assert(!ledger_idle(l));
	ledger_session_ready(l);
	ck_assert_int_eq(fq.sent, 2);
	ledger_free(l);
}
END_TEST

/* A run's output goes with its end as bytea's hex text, any byte as it
 * is, kept with the end when the session is lost; none read is NULL
 * (the row's output stays NULL), nothing printed is the empty bytea. */
START_TEST(test_finish_output)
{
	struct ledger *l = fresh();

	ledger_finish(l, 7, 99, "failed", 1, false, "a\n\0\xff", 4);
	ck_assert_str_eq(fq.output, "\\x610a00ff");
	session_lost();
	ledger_session_ready(l);
	ck_assert_str_eq(fq.output, "\\x610a00ff");
	answer_row(1, (const char *const[]){ "1" });
	ledger_finish(l, 7, 100, "succeeded", 0, false, "", 0);
	ck_assert_str_eq(fq.output, "\\x");
	answer_row(1, (const char *const[]){ "1" });
	ledger_finish(l, 7, 101, "succeeded", 0, false, NULL, 0);
	ck_assert_str_eq(fq.output, "(null)");
	ledger_free(l);
}
END_TEST

/* DESIGN 10: a ledger dropped while in use is told as missing, so that
 * the jobs make it again (or give up the lead). */
START_TEST(test_dropped_ledger_is_missing)
{
	struct ledger *l = fresh();

	ledger_claim(l, &term, "j", 1800000000000, 1, 0, "running", false, asker, NULL);
	answer_error("3F000", "ERROR: schema \"pgleader\" does not exist");
	ck_assert_int_eq(heard, 1);
	ck_assert(!last.ok && last.missing && !last.lost);
	ledger_last(l, &term, "j", false, asker, NULL);
	answer_error("40001", "ERROR: could not serialize access");
	ck_assert(!last.ok && !last.missing);
	ledger_free(l);
}
END_TEST

/* A priority ask writes the controls: the ledger is checked first, its
 * owner too (issue 25 item 8); a trusted, ready ledger: the ask goes. */
START_TEST(test_priority_ask_checks_the_ledger_first)
{
	struct ledger *l = fresh();
	const char *ready[LEDGER_CHECK_NCOLS] = { "t", "t", "t", "t", "t", "f", NULL, "1" };
	const char *asked[3] = { "a", "1", "t" };

	ledger_priority_ask(l, 42, "n1", 2, 30000, asker, NULL);
	ck_assert_ptr_nonnull(strstr(fq.sql, "has_database_privilege"));
	answer_row(LEDGER_CHECK_NCOLS, ready);
	ck_assert_int_eq(heard, 0);
	ck_assert_ptr_nonnull(strstr(fq.sql, "INSERT INTO \"pgleader\".controls"));
	answer_row(3, asked);
	ck_assert(heard == 1 && last.ok && last.asked);
	/* checked once: the next ask goes at once */
	ledger_priority_ask(l, 42, "n1", 2, 30000, asker, NULL);
	ck_assert_ptr_nonnull(strstr(fq.sql, "INSERT INTO \"pgleader\".controls"));
	ledger_free(l);
}
END_TEST

/* A ledger owned by a role not trusted: refused with the line, the ask
 * and the controls never sent (DESIGN 10). */
START_TEST(test_untrusted_ledger_is_never_read)
{
	struct ledger *l = fresh();
	const char *hostile[LEDGER_CHECK_NCOLS] = { "t", "t", "t", "t", "t", "t",
		"schema pgleader is owned by role mallory", "1" };
	const char *yes[1] = { "t" };
	const char *probe[2] = { "t", "table pgleader.controls is owned by role mallory" };

	ledger_priority_ask(l, 42, "n1", 2, 30000, asker, NULL);
	answer_row(LEDGER_CHECK_NCOLS, hostile);
	ck_assert(heard == 1 && last.untrusted && !last.asked);
	ck_assert_ptr_nonnull(strstr(last.error, "owned by role mallory"));
	ck_assert_ptr_nonnull(strstr(last.error, "--ledger-owner"));
	ck_assert_int_eq(fq.sent, 1);

	ledger_controls(l, 42, asker, NULL);
	answer_row(1, yes);      /* the schema's probe */
	answer_row(2, probe);    /* the table's: owned by mallory */
	ck_assert(heard == 2 && !last.ok && last.untrusted);
	ck_assert_ptr_nonnull(strstr(last.error, "table pgleader.controls is owned by role mallory"));
	ck_assert_int_eq(fq.sent, 3); /* never the read */
	ledger_free(l);
}
END_TEST

/* An asker that asks again from its callback (a stale claim's finish, in
 * jobs_step.c) while the rest of its batch waits for their rows: the
 * batch is answered whole first, and the new statement goes after it,
 * alone (the simulator's seed 2000401: the batch's rest was sent again
 * and its answer taken for the statements queued behind it). */
static struct ledger *asking_ledger;
static int64_t told_run[4];
static int n_told;

static void asker_finishes(void *arg, const struct ledger_answer *a)
{
	(void)arg;
	told_run[n_told++ % 4] = a->run_id;
	if (n_told == 1)
		ledger_finish(asking_ledger, 7, a->run_id, "interrupted", -1, false, NULL, 0);
}

START_TEST(test_batch_answered_whole_first)
{
	struct ledger *l = fresh();
	const char *rows[10] = { "5", "t", "t", "f", "1", "6", "t", "t", "f", "1" };
	struct lease_sql_answer two = { 2, 5, rows };

	asking_ledger = l;
	n_told = 0;
	ledger_finish(l, 7, 1, "succeeded", 0, false, NULL, 0);  /* in flight */
	ledger_claim(l, &term, "a", 1800000000000, 1, 0, "running", false, asker_finishes, NULL);
	ledger_claim(l, &term, "b", 1800000000000, 1, 0, "skipped", false, asker_finishes, NULL);
	answer_row(0, NULL);
	ck_assert_int_eq(fq.sent, 2);
	ck_assert_str_eq(fq.outcomes, "{\"running\",\"skipped\"}");
	fq.fn(fq.arg, &two, NULL, NULL);
	ck_assert_int_eq(n_told, 2);
	ck_assert_int_eq(told_run[0], 5);
	ck_assert_int_eq(told_run[1], 6);
	ck_assert_int_eq(fq.sent, 3); /* the finish, once, after the batch */
	ck_assert_ptr_nonnull(strstr(fq.sql, "UPDATE \"pgleader\".runs SET outcome"));
	answer_row(0, NULL);
	ck_assert(ledger_idle(l));
	ledger_free(l);
}
END_TEST

static void notified(void *arg)
{
	(void)arg;
}

/* DESIGN 13: the LISTEN for requests to run now goes first on a session,
 * once, and again first on the next session. */
START_TEST(test_listen_on_each_session)
{
	struct ledger *l = fresh();
	struct lease_sql_answer none = { 0, 0, NULL };

	backend_pid = 501;
	ledger_listen(l, NULL, NULL);
	ck_assert_int_eq(notify_set, 0);
	ledger_listen(l, notified, NULL);
	ck_assert_int_eq(notify_set, 1);
	ck_assert_str_eq(fq.sql, "LISTEN pgleader_triggers");
	fq.fn(fq.arg, &none, NULL, NULL);
	ledger_claim(l, &term, "j", 1800000000000, 1, 0, "running", false, asker, NULL);
	ck_assert_ptr_nonnull(strstr(fq.sql, "INSERT INTO"));
	session_lost();
	backend_pid = 502; /* a new session */
	ledger_session_ready(l);
	ck_assert_str_eq(fq.sql, "LISTEN pgleader_triggers");
	fq.fn(fq.arg, &none, NULL, NULL);
	ck_assert_int_eq(fq.sent >= 3, 1);
	ledger_free(l);
	backend_pid = 0;
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ledger");
	TCase *tc = tcase_create("queue");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_record_kept_when_lost);
	tcase_add_test(tc, test_run_claim_told_when_lost);
	tcase_add_test(tc, test_finish_kept_when_lost);
	tcase_add_test(tc, test_finish_output);
	tcase_add_test(tc, test_dropped_ledger_is_missing);
	tcase_add_test(tc, test_priority_ask_checks_the_ledger_first);
	tcase_add_test(tc, test_untrusted_ledger_is_never_read);
	tcase_add_test(tc, test_batch_answered_whole_first);
	tcase_add_test(tc, test_listen_on_each_session);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
