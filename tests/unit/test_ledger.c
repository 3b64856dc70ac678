/* test_ledger.c: ledger.c's queue over a fake lease_query: what is kept
 * and sent again when the fence session is lost, what its asker hears. */
#include "ledger.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_sql.h"

/* ---- the fake session: lease_query keeps the one statement sent ------- */

static struct {
	int sent;                /* statements sent */
	lease_query_fn fn;
	void *arg;
	char outcomes[64];       /* the last claim's outcomes array */
} fq;
static int heard, heard_lost;

bool lease_query(struct lease *l, const char *sql, int nparams,
		 const char *const *params, lease_query_fn fn, void *arg)
{
	(void)l;
	(void)sql;
	fq.sent++;
	fq.fn = fn;
	fq.arg = arg;
	if (nparams == 8)
		snprintf(fq.outcomes, sizeof(fq.outcomes), "%s", params[6]);
	return true;
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
}

static const struct ledger_term term = { .lock_key = 42, .fencing_token = 7,
					 .lock_pid = 1234, .node_id = "n1" };

static struct ledger *fresh(void)
{
	static int session; /* the lease pointer is only handed back */
	struct ledger *l = ledger_new((struct lease *)&session, "pgleader");

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

	ledger_claim(l, &term, "j", 1800000000000, "skipped", false, asker, NULL);
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
 * for its term if the term goes on (jobs.c's claim_cb). */
START_TEST(test_run_claim_told_when_lost)
{
	struct ledger *l = fresh();

	ledger_claim(l, &term, "j", 1800000000000, "running", false, asker, NULL);
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

	ledger_finish(l, 7, 99, "succeeded", 0);
	session_lost();
	ck_assert(!ledger_idle(l));
	ledger_session_ready(l);
	ck_assert_int_eq(fq.sent, 2);
	ledger_free(l);
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
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
