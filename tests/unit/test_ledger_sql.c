/* test_ledger_sql.c: the ledger's SQL text: schema names, the creation, the
 * check and its answer, the run listing and the summary with their
 * parameters. (That the SQL runs: test_sql_pg.c, against a real server.) */
#include "ledger_sql.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NROWS(table) ((int)(sizeof(table) / sizeof(table[0])))

#define LONG63 "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" \
	"abcdefghij" "abc"

static const struct {
	const char *schema;
	bool ok;
} schema_cases[] = {
	{ "pgleader", true }, { "a", true }, { "_x", true }, { "x9_", true },
	{ "select", true }, /* a keyword: always written quoted */
	{ LONG63, true }, { LONG63 "d", false },
	{ "", false }, { NULL, false }, { "Pgleader", false }, { "pg_ledger", false },
	{ "9a", false }, { "a-b", false }, { "a\"b", false }, { "a'b", false },
	{ "a b", false }, { "a.b", false }, { "caf\xc3\xa9", false },
	{ "pg", true }, { "pgx_", true },
};

START_TEST(schema_ok)
{
	ck_assert_int_eq(ledger_sql_schema_ok(schema_cases[_i].schema), schema_cases[_i].ok);
}
END_TEST

/* The controls' probe without --ledger-owner, as the other builders. */
static char *controls_probe(const char *schema)
{
	return ledger_sql_controls_probe(schema, NULL);
}

/* A bad schema: NULL, never a statement with it in. */
START_TEST(refuses)
{
	struct ledger_sql_query q;
	const char *schema = schema_cases[_i].schema;
	char *init = ledger_sql_init(schema), *script = ledger_sql_init_script(schema);
	char *check = ledger_sql_check(schema, NULL);

	ck_assert_int_eq(init != NULL, schema_cases[_i].ok);
	ck_assert_int_eq(script != NULL, schema_cases[_i].ok);
	ck_assert_int_eq(check != NULL, schema_cases[_i].ok);
	ck_assert_int_eq(ledger_sql_runs(&q, schema, 1, NULL, -1, 10, false), schema_cases[_i].ok);
	ck_assert_int_eq(ledger_sql_summary(&q, schema, 1, 10), schema_cases[_i].ok);
	free(init);
	free(script);
	free(check);
	/* the daemon's statements alike */
	{
		char *(*const daemon[])(const char *) = {
			ledger_sql_claim, ledger_sql_last, ledger_sql_finish,
			ledger_sql_prune, ledger_sql_schema_probe, controls_probe,
			ledger_sql_controls_read, ledger_sql_priority_ask,
			ledger_sql_handed, ledger_sql_on_failure,
		};

		for (size_t k = 0; k < sizeof(daemon) / sizeof(daemon[0]); k++) {
			char *sql = daemon[k](schema);

			ck_assert_int_eq(sql != NULL, schema_cases[_i].ok);
			free(sql);
		}
	}
}
END_TEST

/* The daemon's statements: the schema quoted wherever a table is named,
 * nothing left of the template, and the claim's guards (the lock's holder
 * by its pid, checked again after the terms row is locked, DESIGN 10; the
 * newest token; not before the server's clock); the server each run
 * began on recorded, and an older term's run of this server cut at once. */
static const struct {
	char *(*make)(const char *schema);
	const char *must[5];
	int tables;              /* "schema". occurrences */
} daemon_cases[] = {
	{ ledger_sql_claim, { "pid = $6::int AND objsubid = 1",
	  "WHERE t.fencing_token <= EXCLUDED.fencing_token RETURNING EXISTS (SELECT FROM "
	  "pg_catalog.pg_locks WHERE locktype = 'advisory' AND granted AND pid = $6::int",
	  "AND t.lock_key = $1::bigint) AS held",
	  "FROM req q, term, server s, clock WHERE term.held AND q.at <= clock.read_at",
	  "s.sysid, s.tli, s.started" }, 4 },
	/* each row early or written: one reading of the clock for both */
	{ ledger_sql_claim, { "clock AS (SELECT clock_timestamp() AS read_at)",
	  "q.at > (SELECT read_at FROM clock)", NULL }, 4 },
	/* DESIGN 13: each attempt of a tick a row of its own, claimed alike */
	{ ledger_sql_claim, { "$10::bigint[]) WITH ORDINALITY",
	  "ON CONFLICT (lock_key, job, tick, attempt) DO UPDATE",
	  "AND q.attempt = EXCLUDED.attempt AND q.rerun",
	  "LEFT JOIN run r ON r.job = q.job AND r.tick = q.at AND r.attempt = q.attempt",
	  NULL }, 4 },
	/* DESIGN 13: a run asked for now takes its request's time as its tick,
	 * only while the request is there, and the request goes with it */
	{ ledger_sql_claim, { "COALESCE(g.asked_at, to_timestamp(q.tick / 1000.0)) AS at",
	  "AND (q.trig = 0 OR q.trigger_id IS NOT NULL)",
	  "used AS (DELETE FROM \"my_ledger\".triggers g USING req q, run r",
	  "s.sysid, s.tli, s.started, q.attempt, q.asked_by", NULL }, 4 },
	{ ledger_sql_triggers, { "WHERE lock_key = $1::bigint ORDER BY asked_at LIMIT "
	  LEDGER_SQL_TRIGGERS_ROWS_TEXT, NULL, NULL, NULL }, 1 },
	{ ledger_sql_last, { "AND ($4::boolean OR COALESCE(r.system_identifier = s.sysid AND "
	  "r.timeline_id = s.tli AND r.postmaster_start = s.started, false)) RETURNING r.tick",
	  "AND NOT $4::boolean AND NOT COALESCE(r.system_identifier = s.sysid",
	  "outcome = 'succeeded'", "pg_catalog.pg_postmaster_start_time() AS started", NULL }, 7 },
	{ ledger_sql_last, { "ORDER BY tick DESC, attempt DESC LIMIT 1",
	  "o.on_failure = 'owed' AND o.outcome IN ('failed', 'timed_out')",
	  "AND n.tick = o.tick AND n.attempt > o.attempt",
	  "RETURNING r.tick, r.attempt", "FROM cut WHERE trigger IS NULL" }, 7 },
	{ ledger_sql_on_failure, { "pid = $3::int AND objsubid = 1",
	  "SET on_failure = 'sent', on_failure_token = $4::bigint WHERE r.run_id = $2::bigint",
	  "(r.on_failure IS DISTINCT FROM 'sent' OR r.on_failure_token = $4::bigint)",
	  "AND t.fencing_token > $4::bigint", "EXISTS (SELECT FROM holder)" }, 2 },
	{ ledger_sql_finish, { "WHERE run_id = $1::bigint",
	  "AND fencing_token = $2::bigint AND finished_at IS NULL",
	  "on_failure = CASE WHEN $5::boolean AND on_failure IS NULL THEN 'owed'", NULL }, 1 },
	{ ledger_sql_prune, { "LIMIT 100", "outcome <> 'running'",
	  "DELETE FROM \"my_ledger\".triggers WHERE trigger_id IN", NULL }, 4 },
	/* the controls (DESIGN 11): a plain command probes the catalog first,
	 * the schema by name (no catalog join to plan), then the table */
	{ ledger_sql_schema_probe, { "SELECT pg_catalog.to_regnamespace('my_ledger') IS NOT NULL",
	  NULL, NULL, NULL }, 0 },
	{ controls_probe, { "n.nspname = 'my_ledger'",
	  "a.attname = 'leader'", "c.relkind IN ('r', 'p')",
	  "WHERE NOT (pg_catalog.pg_has_role(x.owner, 'MEMBER')" }, 0 },
	{ ledger_sql_controls_read, { "WHERE lock_key = $1::bigint",
	  "(until IS NULL OR until > now() OR kind = 'pause')",
	  "WHEN until <= now() AND kind = 'pause' THEN 'resumed'",
	  "LIMIT " LEDGER_SQL_CONTROLS_ROWS_TEXT }, 1 },
	{ ledger_sql_priority_ask, { "k.granted AND k.objsubid = 1",
	  "WHERE l.priority < $3::int AND l.node <> $2::text",
	  "DO UPDATE SET target = EXCLUDED.target", "WHERE c.until <= now()" }, 1 },
	{ ledger_sql_handed, { "(target IS NULL OR target = $2::text)",
	  "leader IS DISTINCT FROM $2::text", "kind = 'switchover'", NULL }, 1 },
};

START_TEST(daemon_sql)
{
	char *sql = daemon_cases[_i].make("my_ledger");
	int n = 0;

	ck_assert_ptr_nonnull(sql);
	ck_assert_ptr_null(strchr(sql, '@'));
	for (const char *p = sql; (p = strstr(p, "\"my_ledger\".")); p++)
		n++;
	ck_assert_int_eq(n, daemon_cases[_i].tables);
	for (int k = 0; k < 5 && daemon_cases[_i].must[k]; k++)
		ck_assert_msg(strstr(sql, daemon_cases[_i].must[k]), "missing: %s\n%s",
			      daemon_cases[_i].must[k], sql);
	free(sql);
}
END_TEST

/* The longest creation fits LEDGER_SQL_MAX, what callers size for (and
 * ledger.c asserts that the session's lease_query takes). */
START_TEST(longest_fits)
{
	char *script = ledger_sql_init_script(LONG63);
	char *init = ledger_sql_init(LONG63);

	ck_assert_ptr_nonnull(script);
	ck_assert_ptr_nonnull(init);
	ck_assert_uint_lt(strlen(script), LEDGER_SQL_MAX);
	ck_assert_uint_lt(strlen(init), LEDGER_SQL_MAX);
	free(script);
	free(init);
}
END_TEST

/* What the creation must say, for each schema: %s is the quoted name. */
static const char *const init_has[] = {
	"-- Two creations",
	"\nSELECT pg_advisory_xact_lock(" LEDGER_SQL_INIT_LOCK ");\nCREATE SCHEMA IF NOT EXISTS %s;\n",
	"\nCREATE TABLE IF NOT EXISTS %s.meta (version integer NOT NULL);\n",
	"\nINSERT INTO %s.meta (version) SELECT 3 WHERE NOT EXISTS (SELECT FROM %s.meta);\n",
	"\nALTER TABLE %s.controls ADD COLUMN IF NOT EXISTS leader text;\n",
	"\nUPDATE %s.meta SET version = 2 WHERE version < 2;\n",
	"\nALTER TABLE %s.runs ADD COLUMN IF NOT EXISTS system_identifier bigint,\n"
	"    ADD COLUMN IF NOT EXISTS timeline_id integer,\n"
	"    ADD COLUMN IF NOT EXISTS postmaster_start timestamptz;\n",
	"\nUPDATE %s.meta SET version = 3 WHERE version < 3;\n",
	"\nALTER TABLE %s.runs ADD COLUMN IF NOT EXISTS attempt integer NOT NULL DEFAULT 1\n",
	"\nCREATE UNIQUE INDEX IF NOT EXISTS runs_attempt ON %s.runs (lock_key, job, tick, attempt);\n"
	"ALTER TABLE %s.runs DROP CONSTRAINT IF EXISTS runs_lock_key_job_tick_key;\n",
	"\nALTER TABLE %s.runs ADD COLUMN IF NOT EXISTS on_failure text\n",
	"\nUPDATE %s.meta SET version = 4 WHERE version < 4;\n",
	"\nGRANT USAGE ON SCHEMA %s TO PUBLIC;\nGRANT SELECT ON %s.controls TO PUBLIC;\n",
	"\nCREATE TABLE IF NOT EXISTS %s.terms (\n    lock_key bigint PRIMARY KEY,\n",
	"\nCREATE TABLE IF NOT EXISTS %s.runs (\n    run_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n",
	"'running', 'succeeded', 'failed',\n        'timed_out', 'interrupted', 'skipped', 'missed', 'paused'))",
	"    UNIQUE (lock_key, job, tick));\nCREATE INDEX IF NOT EXISTS runs_tick ON %s.runs (tick);\n",
	"\nCREATE TABLE IF NOT EXISTS %s.controls (\n",
	"kind text NOT NULL CHECK (kind IN ('pause', 'switchover'))",
	"    PRIMARY KEY (lock_key, job, kind));\n",
	"\nCOMMENT ON SCHEMA %s IS ",
};

/* Every table and column has its comment, for a DBA's \d+. */
static const char *const commented[] = {
	"TABLE %s.meta", "TABLE %s.terms", "TABLE %s.runs", "TABLE %s.controls",
	"COLUMN %s.terms.lock_key", "COLUMN %s.terms.fencing_token",
	"COLUMN %s.terms.node_id", "COLUMN %s.terms.since",
	"COLUMN %s.runs.run_id", "COLUMN %s.runs.lock_key", "COLUMN %s.runs.job",
	"COLUMN %s.runs.tick", "COLUMN %s.runs.node_id", "COLUMN %s.runs.fencing_token",
	"COLUMN %s.runs.outcome", "COLUMN %s.runs.exit_status", "COLUMN %s.runs.started_at",
	"COLUMN %s.runs.finished_at",
	"COLUMN %s.controls.lock_key", "COLUMN %s.controls.job", "COLUMN %s.controls.kind",
	"COLUMN %s.controls.target", "COLUMN %s.controls.until",
	"COLUMN %s.controls.asked_by", "COLUMN %s.controls.asked_at",
	"COLUMN %s.controls.leader", "COLUMN %s.runs.attempt", "COLUMN %s.runs.on_failure",
	"COLUMN %s.runs.on_failure_token",
};

static const char *const init_schemas[] = { "pgleader", "select", "x", LONG63 };

/* fmt with every %s as "schema". */
static void with_schema(char *out, size_t len, const char *fmt, const char *schema)
{
	char quoted[80];

	snprintf(quoted, sizeof(quoted), "\"%s\"", schema);
	out[0] = '\0';
	for (const char *p = fmt; *p; p++) {
		if (p[0] == '%' && p[1] == 's') {
			strncat(out, quoted, len - strlen(out) - 1);
			p++;
		} else {
			strncat(out, (char[2]){ *p, '\0' }, len - strlen(out) - 1);
		}
	}
}

START_TEST(init_sql)
{
	char want[512];
	const char *schema = init_schemas[_i];
	char *buf = ledger_sql_init(schema), *script = ledger_sql_init_script(schema);

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(script);
	ck_assert_ptr_null(strchr(buf, '@'));
	/* Sent as one simple query, one implicit transaction: an explicit
	 * BEGIN would leave the session in a failed block after an error. */
	ck_assert(strncmp(buf, "-- Two creations", 16) == 0);
	ck_assert_ptr_null(strstr(buf, "BEGIN"));
	ck_assert_ptr_null(strstr(buf, "COMMIT"));
	/* The script is the same between BEGIN and COMMIT. */
	ck_assert(strncmp(script, "BEGIN;\n", 7) == 0);
	ck_assert_uint_eq(strlen(script), strlen(buf) + strlen("BEGIN;\nCOMMIT;\n"));
	ck_assert(strncmp(script + 7, buf, strlen(buf)) == 0);
	ck_assert_str_eq(script + 7 + strlen(buf), "COMMIT;\n");
	for (int i = 0; i < NROWS(init_has); i++) {
		with_schema(want, sizeof(want), init_has[i], schema);
		ck_assert_msg(strstr(buf, want), "missing: %s", want);
	}
	for (int i = 0; i < NROWS(commented); i++) {
		with_schema(want, sizeof(want), commented[i], schema);
		strcat(want, " IS '");
		ck_assert_msg(strstr(buf, want), "no comment: %s", want);
	}
	/* Idempotent: nothing is created without IF NOT EXISTS. */
	for (const char *p = buf; (p = strstr(p, "CREATE ")); p++)
		ck_assert_msg(strstr(p, "IF NOT EXISTS") &&
			      strstr(p, "IF NOT EXISTS") - p <=
			      (long)strlen("CREATE UNIQUE INDEX "),
			      "not idempotent: %.40s", p);
	free(buf);
	free(script);
}
END_TEST

START_TEST(check_sql)
{
	char want[128];
	const char *schema = init_schemas[_i];
	char *buf = ledger_sql_check(schema, NULL);

	ck_assert_ptr_nonnull(buf);
	snprintf(want, sizeof(want), "WHERE nspname = '%s'", schema);
	ck_assert_msg(strstr(buf, want), "%s", buf);
	ck_assert_ptr_null(strchr(buf, '@'));
	/* Nothing that errors instead of answering on a missing object. */
	ck_assert_ptr_null(strstr(buf, "regclass"));
	ck_assert_ptr_null(strstr(buf, "FROM \""));
	/* the last three columns: may create, what is owned by a role not
	 * trusted (none given by --ledger-owner), the server's clock */
	ck_assert(strstr(buf, "has_database_privilege(pg_catalog.current_database(), 'CREATE'),\n"
			 "       (SELECT x.what || ' is owned by role '"));
	ck_assert(strstr(buf, "w.rolsuper OR w.rolname = NULL"));
	ck_assert(strstr(buf, "LIMIT 1),\n"
			 "       (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint"));
	free(buf);
}
END_TEST

/* --ledger-owner goes in as an escape string literal: quotes and
 * backslashes doubled, whatever standard_conforming_strings says. */
START_TEST(owner_literal)
{
	char *check = ledger_sql_check("pgleader", "dba'; DROP \\x");
	char *probe = ledger_sql_controls_probe("pgleader", "ops");

	ck_assert_ptr_nonnull(check);
	ck_assert_ptr_nonnull(probe);
	ck_assert_msg(strstr(check, "w.rolname = E'dba''; DROP \\\\x'"), "%s", check);
	ck_assert_msg(strstr(probe, "w.rolname = E'ops'"), "%s", probe);
	free(check);
	free(probe);
}
END_TEST

/* init-db --grant-to: what the check calls writable and the controls,
 * to the role as a quoted identifier; without one, comments naming ROLE. */
START_TEST(grants_sql)
{
	char *to = ledger_sql_grants("ops", "app \"x\"");
	char *none = ledger_sql_grants("ops", NULL);

	ck_assert_ptr_nonnull(to);
	ck_assert_ptr_nonnull(none);
	ck_assert_str_eq(to, "GRANT USAGE ON SCHEMA \"ops\" TO \"app \"\"x\"\"\";\n"
			 "GRANT SELECT, INSERT, UPDATE, DELETE ON \"ops\".runs, \"ops\".terms,"
			 " \"ops\".controls, \"ops\".jobs, \"ops\".triggers TO \"app \"\"x\"\"\";\n"
			 "GRANT SELECT ON \"ops\".meta TO \"app \"\"x\"\"\";\n");
	for (const char *line = none; *line; line = strchr(line, '\n') + 1)
		ck_assert_msg(!strncmp(line, "-- ", 3), "not a comment: %s", line);
	ck_assert_ptr_nonnull(strstr(none, "-- GRANT USAGE ON SCHEMA \"ops\" TO ROLE;\n"));
	ck_assert_ptr_null(ledger_sql_grants("Bad", "app"));
	ck_assert_ptr_null(ledger_sql_grants("ops", ""));
	free(to);
	free(none);
}
END_TEST

static const struct {
	const char *v[LEDGER_CHECK_NCOLS];
	enum ledger_state state;
} parse_cases[] = {
	{ { "t", "t", "t", "t", "t", "f", NULL, "1" }, LEDGER_READY },
	{ { "t", "t", "t", "t", "f", "t", NULL, "1" }, LEDGER_READ_ONLY },
	{ { "t", "t", "t", "f", "t", "t", NULL, NULL }, LEDGER_NO_ACCESS },
	{ { "t", "t", "f", "t", "t", "f", NULL, "0" }, LEDGER_NO_ACCESS },
	{ { "t", "f", "t", "t", "t", "t", NULL, "1" }, LEDGER_MISSING },
	{ { "f", "f", "f", "f", "f", "f", NULL, "1" }, LEDGER_MISSING },
	{ { "f", "t", "t", "t", "t", "t", NULL, "1" }, LEDGER_MISSING },
	{ { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL }, LEDGER_MISSING },
	{ { "t", "t", "t", "t", NULL, "t", NULL, "1" }, LEDGER_READ_ONLY },
	{ { "t", "t", "true", "t", "t", "t", NULL, "1" }, LEDGER_NO_ACCESS },
	/* whatever else it says, a ledger not trusted is never used */
	{ { "t", "t", "t", "t", "t", "t", "schema s is owned by role r", "1" },
	  LEDGER_UNTRUSTED },
	{ { "t", "f", "f", "f", "f", "t", "schema s is owned by role r", "1" },
	  LEDGER_UNTRUSTED },
};

START_TEST(parse_check)
{
	ck_assert_int_eq(ledger_sql_parse_check(parse_cases[_i].v), parse_cases[_i].state);
}
END_TEST

static const struct {
	int64_t key;
	const char *job;
	int64_t since_ms, limit;
	bool failed;
	const char *params[5]; /* NULL: SQL NULL */
} runs_cases[] = {
	{ 42, NULL, -1, 1001, false, { "42", NULL, NULL, "1001", "false" } },
	{ INT64_MIN, "nightly", 0, 1, true,
	  { "-9223372036854775808", "nightly", "0", "1", "true" } },
	{ INT64_MAX, "a b'c", 86400000, 5, false,
	  { "9223372036854775807", "a b'c", "86400000", "5", "false" } },
	{ -1, NULL, 90000, 10, true, { "-1", NULL, "90000", "10", "true" } },
};

static void assert_params(const struct ledger_sql_query *q, const char *const *want, int n)
{
	ck_assert_int_eq(q->nparams, n);
	for (int i = 0; i < n; i++) {
		if (want[i])
			ck_assert_str_eq(q->params[i], want[i]);
		else
			ck_assert_ptr_null(q->params[i]);
	}
}

START_TEST(runs_sql)
{
	struct ledger_sql_query q;

	ck_assert(ledger_sql_runs(&q, "pgleader", runs_cases[_i].key, runs_cases[_i].job,
				  runs_cases[_i].since_ms, runs_cases[_i].limit,
				  runs_cases[_i].failed));
	assert_params(&q, runs_cases[_i].params, 5);
	ck_assert(strstr(q.sql, "(NOT $5::boolean OR r.outcome IN ('failed', 'timed_out', "
			 "'interrupted'))"));
	ck_assert(strstr(q.sql, "\n  FROM \"pgleader\".runs r\n"));
	ck_assert(strstr(q.sql, "r.lock_key = $1::bigint"));
	ck_assert(strstr(q.sql, "($2::text IS NULL OR r.job = $2::text)"));
	ck_assert(strstr(q.sql, "($3::bigint IS NULL OR r.tick >= now() - $3::bigint"));
	ck_assert(strstr(q.sql, " ORDER BY r.tick DESC, r.job, r.run_id DESC\n LIMIT $4::bigint"));
	/* The job is a parameter, never in the text. */
	ck_assert(!runs_cases[_i].job || !strstr(q.sql, runs_cases[_i].job));
}
END_TEST

START_TEST(summary_sql)
{
	struct ledger_sql_query q;
	const char *const want[] = { "-7", "200" };

	ck_assert(ledger_sql_summary(&q, "ledger", -7, 200));
	assert_params(&q, want, 2);
	ck_assert(strstr(q.sql, "WITH RECURSIVE j(job)"));
	ck_assert(strstr(q.sql, "FROM \"ledger\".runs r WHERE r.lock_key = $1::bigint AND r.job > j.job"));
	ck_assert(strstr(q.sql, "r.outcome = 'succeeded'"));
	ck_assert(strstr(q.sql, " LIMIT $2::bigint"));
	ck_assert_ptr_null(strchr(q.sql, '@'));
}
END_TEST

/* The run columns come first in both, in the same order. */
START_TEST(same_columns)
{
	struct ledger_sql_query runs, summary;
	const char *a, *b;

	ck_assert(ledger_sql_runs(&runs, "s", 1, NULL, -1, 1, false));
	ck_assert(ledger_sql_summary(&summary, "s", 1, 1));
	/* the summary's job is the announced or run job's (DESIGN 13) */
	a = strstr(runs.sql, "SELECT r.job, ");
	b = strstr(summary.sql, "SELECT n.job, ");
	ck_assert(a && b);
	for (a += strlen("SELECT r.job, "), b += strlen("SELECT n.job, ");
	     *a && *a != '\n'; a++, b++)
		ck_assert_int_eq(*a == 'r' && a[1] == '.' ? 'l' : *a, *b);
}
END_TEST

static Suite *ledger_sql_suite(void)
{
	Suite *s = suite_create("ledger_sql");
	const struct {
		const char *name;
		const TTest *test;
		int cases;
	} tests[] = {
		{ "schema_ok", schema_ok, NROWS(schema_cases) },
		{ "refuses", refuses, NROWS(schema_cases) },
		{ "longest_fits", longest_fits, 1 },
		{ "init_sql", init_sql, NROWS(init_schemas) },
		{ "check_sql", check_sql, NROWS(init_schemas) },
		{ "parse_check", parse_check, NROWS(parse_cases) },
		{ "owner_literal", owner_literal, 1 },
		{ "grants_sql", grants_sql, 1 },
		{ "runs_sql", runs_sql, NROWS(runs_cases) },
		{ "summary_sql", summary_sql, 1 },
		{ "same_columns", same_columns, 1 },
		{ "daemon_sql", daemon_sql, NROWS(daemon_cases) },
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
	SRunner *runner = srunner_create(ledger_sql_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
