/* test_controls_sql.c: the operator controls' SQL text (DESIGN 11): each
 * statement for a schema, its parameters, what makes it right (last pause
 * wins, one switchover at a time, a lapsed one ignored, only our own row
 * deleted), and a bad schema refused. (That the SQL runs is
 * test_sql_pg.c's, against a real server.) */
#include "controls_sql.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NROWS(table) ((int)(sizeof(table) / sizeof(table[0])))

#define LONG63 "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" \
	"abcdefghij" "abc"

/* Each builder, called the same way: key 42, job "nightly", target "db2",
 * wait 30 s, leader "db1", stamp "S". */
enum builder { B_PAUSE, B_PAUSE_ALL, B_RESUME, B_RESUME_ALL, B_READ, B_LAPSED,
	       B_SWITCHOVER, B_SWITCHOVER_ANY, B_STANDING, B_DONE };

static bool make(enum builder b, struct ledger_sql_query *q, const char *schema)
{
	switch (b) {
	case B_PAUSE:
		return controls_sql_pause(q, schema, 42, "nightly");
	case B_PAUSE_ALL:
		return controls_sql_pause(q, schema, 42, NULL);
	case B_RESUME:
		return controls_sql_resume(q, schema, 42, "nightly");
	case B_RESUME_ALL:
		return controls_sql_resume(q, schema, 42, NULL);
	case B_READ:
		return controls_sql_read(q, schema, 42);
	case B_LAPSED:
		return controls_sql_lapsed(q, schema, 42);
	case B_SWITCHOVER:
		return controls_sql_switchover(q, schema, 42, "db2", 30000, "db1");
	case B_SWITCHOVER_ANY:
		return controls_sql_switchover(q, schema, 42, NULL, 30000, "db1");
	case B_STANDING:
		return controls_sql_standing(q, schema, 42);
	case B_DONE:
		return controls_sql_switchover_done(q, schema, 42, "S");
	}
	return false;
}

static const struct {
	enum builder b;
	int nparams;
	const char *params[4];   /* NULL: SQL NULL */
	const char *must[3];
} cases[] = {
	{ B_PAUSE, 2, { "42", "nightly" },
	  { "'pause'", "DO UPDATE\n   SET asked_by = EXCLUDED.asked_by, asked_at = EXCLUDED.asked_at",
	    "RETURNING c.asked_by" } },
	/* a pause after a resume is in force again */
	{ B_PAUSE_ALL, 2, { "42", "" }, { "VALUES ($1::bigint, $2::text, 'pause'",
	  "asked_at = EXCLUDED.asked_at, until = NULL", NULL } },
	{ B_RESUME, 2, { "42", "nightly" },
	  { "kind = 'pause'", "($2::text IS NULL OR job = $2::text)",
	    "AND job = ''\n              AND until IS NULL)" } },
	/* the pause ends, who resumed it recorded in its place */
	{ B_RESUME_ALL, 2, { "42", NULL }, { "SET until = now(), asked_at = now()",
	  "AND kind = 'pause' AND until IS NULL", NULL } },
	{ B_READ, 1, { "42" }, { "(until IS NULL OR until > now())", "ORDER BY kind, job" } },
	{ B_LAPSED, 1, { "42" }, { "kind = 'switchover' AND until <= now()" } },
	{ B_SWITCHOVER, 4, { "42", "db2", "30000", "db1" },
	  { "ON CONFLICT (lock_key, job, kind) DO NOTHING",
	    "now() + $3::bigint * interval '1 millisecond'", "RETURNING c.asked_at::text" } },
	{ B_SWITCHOVER_ANY, 4, { "42", NULL, "30000", "db1" }, { "'switchover', $2::text" } },
	{ B_STANDING, 1, { "42" }, { "kind = 'switchover'" } },
	{ B_DONE, 2, { "42", "S" }, { "asked_at = $2::timestamptz", "kind = 'switchover'" } },
};

/* The schema quoted where the table is named, nothing left of the
 * template, the parameters as the statement numbers them. */
START_TEST(statement)
{
	struct ledger_sql_query q;

	ck_assert(make(cases[_i].b, &q, "ops"));
	ck_assert_ptr_nonnull(strstr(q.sql, "\"ops\".controls"));
	ck_assert_ptr_null(strchr(q.sql, '@'));
	ck_assert_int_eq(q.nparams, cases[_i].nparams);
	for (int p = 0; p < q.nparams; p++) {
		char dollar[16];

		snprintf(dollar, sizeof(dollar), "$%d", p + 1);
		ck_assert_ptr_nonnull(strstr(q.sql, dollar));
		ck_assert_pstr_eq(q.params[p], cases[_i].params[p]);
	}
	/* no parameter beyond those */
	{
		char dollar[16];

		snprintf(dollar, sizeof(dollar), "$%d", q.nparams + 1);
		ck_assert_ptr_null(strstr(q.sql, dollar));
	}
	for (int m = 0; m < 3 && cases[_i].must[m]; m++)
		ck_assert_msg(strstr(q.sql, cases[_i].must[m]), "%s lacks %s", q.sql,
			      cases[_i].must[m]);
}
END_TEST

/* Who asked is the server's to say: never a parameter. */
START_TEST(asked_by_from_server)
{
	static const enum builder writers[] = { B_PAUSE, B_SWITCHOVER };
	struct ledger_sql_query q;

	ck_assert(make(writers[_i], &q, "pgleader"));
	ck_assert_ptr_nonnull(strstr(q.sql, "current_setting('application_name')"));
	ck_assert_ptr_nonnull(strstr(q.sql, "session_user"));
	ck_assert_ptr_nonnull(strstr(q.sql, "inet_client_addr()"));
	ck_assert_ptr_nonnull(strstr(q.sql, "'local socket'"));
}
END_TEST

static const struct {
	const char *schema;
	bool ok;
} schemas[] = {
	{ "pgleader", true }, { LONG63, true }, { LONG63 "d", false }, { "", false },
	{ NULL, false }, { "Ops", false }, { "pg_ops", false }, { "a\"b", false },
	{ "a'b", false },
};

/* Every builder for every schema: a statement for a good one (the longest
 * fits), never one for a bad one. */
START_TEST(schema)
{
	struct ledger_sql_query q;

	for (int b = 0; b < NROWS(cases); b++) {
		bool made = make(cases[b].b, &q, schemas[_i].schema);

		ck_assert_int_eq(made, schemas[_i].ok);
		if (!made)
			ck_assert_str_eq(q.sql, "");
	}
}
END_TEST

static Suite *controls_sql_suite(void)
{
	Suite *s = suite_create("controls_sql");
	const struct {
		const char *name;
		const TTest *test;
		int cases;
	} tests[] = {
		{ "statement", statement, NROWS(cases) },
		{ "asked_by_from_server", asked_by_from_server, 2 },
		{ "schema", schema, NROWS(schemas) },
	};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_set_timeout(tc, 30);
		tcase_add_loop_test(tc, tests[i].test, 0, tests[i].cases);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(controls_sql_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
