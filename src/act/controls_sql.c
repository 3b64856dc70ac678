/* controls_sql.c: the operator controls' SQL as text (DESIGN 11), the
 * schema put in by ledger_sql_expand as for the ledger's own statements. */
#include "controls_sql.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define TS LEDGER_SQL_TS

/* $1 key, $2 job */
static const char pause_sql[] =
	"INSERT INTO @S.controls AS c (lock_key, job, kind, asked_by)\n"
	"VALUES ($1::bigint, $2::text, 'pause', " CONTROLS_SQL_ASKED_BY ")\n"
	"ON CONFLICT (lock_key, job, kind) DO UPDATE\n"
	"   SET asked_by = EXCLUDED.asked_by, asked_at = EXCLUDED.asked_at, until = NULL\n"
	"RETURNING c.asked_by, " TS("c.asked_at");

/* $1 key, $2 job or NULL. A resume ends the pause at now() (until) and
 * records who resumed it in its place, so that the nodes can say who; a
 * pause with an until past is not in force. The final SELECT sees the
 * table as it was before the UPDATE: a job's resume leaves the whole
 * lock's row, which it then still finds. */
static const char resume_sql[] =
	"WITH d AS (UPDATE @S.controls\n"
	"              SET until = now(), asked_at = now(), asked_by = " CONTROLS_SQL_ASKED_BY "\n"
	"            WHERE lock_key = $1::bigint AND kind = 'pause' AND until IS NULL\n"
	"              AND ($2::text IS NULL OR job = $2::text)\n"
	"           RETURNING job)\n"
	"SELECT (SELECT count(*) FROM d),\n"
	"       (SELECT string_agg(job, ', ' ORDER BY job) FROM d WHERE job <> ''),\n"
	"       EXISTS (SELECT FROM d WHERE job = ''),\n"
	"       $2::text IS NOT NULL AND EXISTS (SELECT FROM @S.controls\n"
	"            WHERE lock_key = $1::bigint AND kind = 'pause' AND job = ''\n"
	"              AND until IS NULL)";

/* $1 key */
static const char read_sql[] =
	"SELECT job, kind, target, " TS("until") ", asked_by, " TS("asked_at") ", leader\n"
	"  FROM @S.controls\n"
	" WHERE lock_key = $1::bigint AND (until IS NULL OR until > now())\n"
	" ORDER BY kind, job";

/* $1 key */
static const char lapsed_sql[] =
	"DELETE FROM @S.controls\n"
	" WHERE lock_key = $1::bigint AND job = '' AND kind = 'switchover' AND until <= now()";

/* $1 key, $2 target, $3 wait ms, $4 leader */
static const char switchover_sql[] =
	"INSERT INTO @S.controls AS c (lock_key, job, kind, target, until, asked_by, leader)\n"
	"VALUES ($1::bigint, '', 'switchover', $2::text,\n"
	"        now() + $3::bigint * interval '1 millisecond', " CONTROLS_SQL_ASKED_BY ",\n"
	"        $4::text)\n"
	"ON CONFLICT (lock_key, job, kind) DO NOTHING\n"
	"RETURNING c.asked_at::text, " TS("c.asked_at") ", " TS("c.until") ", c.asked_by";

/* $1 key */
static const char standing_sql[] =
	"SELECT asked_by, " TS("asked_at") ", " TS("until") ", target\n"
	"  FROM @S.controls\n"
	" WHERE lock_key = $1::bigint AND job = '' AND kind = 'switchover'";

/* $1 key, $2 stamp */
static const char done_sql[] =
	"DELETE FROM @S.controls\n"
	" WHERE lock_key = $1::bigint AND job = '' AND kind = 'switchover'\n"
	"   AND asked_at = $2::timestamptz";

/* q holds tmpl for schema, with the key as $1 and n parameters in all. */
static bool build(struct ledger_sql_query *q, const char *tmpl, const char *schema,
		  int64_t key, int n)
{
	memset(q, 0, sizeof(*q));
	if (!ledger_sql_expand(q->sql, sizeof(q->sql), tmpl, schema))
		return false;
	q->nparams = n;
	snprintf(q->text[0], sizeof(q->text[0]), "%" PRId64, key);
	q->params[0] = q->text[0];
	return true;
}

bool controls_sql_pause(struct ledger_sql_query *q, const char *schema, int64_t key,
			const char *job)
{
	if (!build(q, pause_sql, schema, key, 2))
		return false;
	q->params[1] = job ? job : "";
	return true;
}

bool controls_sql_resume(struct ledger_sql_query *q, const char *schema, int64_t key,
			 const char *job)
{
	if (!build(q, resume_sql, schema, key, 2))
		return false;
	q->params[1] = job;
	return true;
}

bool controls_sql_read(struct ledger_sql_query *q, const char *schema, int64_t key)
{
	return build(q, read_sql, schema, key, 1);
}

bool controls_sql_lapsed(struct ledger_sql_query *q, const char *schema, int64_t key)
{
	return build(q, lapsed_sql, schema, key, 1);
}

bool controls_sql_switchover(struct ledger_sql_query *q, const char *schema, int64_t key,
			     const char *target, int64_t wait_ms, const char *leader)
{
	if (!build(q, switchover_sql, schema, key, 4))
		return false;
	q->params[1] = target;
	snprintf(q->text[2], sizeof(q->text[2]), "%" PRId64, wait_ms);
	q->params[2] = q->text[2];
	q->params[3] = leader;
	return true;
}

bool controls_sql_standing(struct ledger_sql_query *q, const char *schema, int64_t key)
{
	return build(q, standing_sql, schema, key, 1);
}

bool controls_sql_switchover_done(struct ledger_sql_query *q, const char *schema,
				  int64_t key, const char *stamp)
{
	if (!build(q, done_sql, schema, key, 2))
		return false;
	q->params[1] = stamp;
	return true;
}

/* $1 key, $2 job or NULL (the lock's one scheduled job), $3 force: a run
 * of the job asked for now (DESIGN 13), written only for a job a leader
 * announced with a schedule (with force: or no leader announced), never
 * for a paused one. Its asked_at is never a whole millisecond, which a
 * schedule's ticks always are. One row, enum controls_trigger_col. */
static const char trigger_sql[] =
	"WITH a AS (SELECT job, schedule FROM @S.jobs WHERE lock_key = $1::bigint),\n"
	"     pick AS (SELECT COALESCE($2::text, CASE\n"
	"         WHEN (SELECT count(*) FROM a WHERE schedule IS NOT NULL) = 1\n"
	"         THEN (SELECT job FROM a WHERE schedule IS NOT NULL)\n"
	"         WHEN $3::boolean AND NOT EXISTS (SELECT FROM a) THEN 'default' END) AS job),\n"
	"     known AS (SELECT a.schedule IS NOT NULL AS scheduled FROM a, pick\n"
	"                WHERE a.job = pick.job),\n"
	"     p AS (SELECT c.asked_by, " TS("c.asked_at") " AS at FROM @S.controls c, pick\n"
	"            WHERE c.lock_key = $1::bigint AND c.kind = 'pause'\n"
	"              AND c.job IN ('', pick.job) AND (c.until IS NULL OR c.until > now())\n"
	"            ORDER BY c.job LIMIT 1),\n"
	"     t AS (SELECT clock_timestamp() AS c),\n"
	"     ins AS (INSERT INTO @S.triggers (lock_key, job, asked_by, asked_at)\n"
	"             SELECT $1::bigint, pick.job, " CONTROLS_SQL_ASKED_BY ",\n"
	"                    CASE WHEN extract(microseconds FROM t.c)::bigint % 1000 = 0\n"
	"                         THEN t.c + interval '1 microsecond' ELSE t.c END\n"
	"               FROM pick, t\n"
	"              WHERE pick.job IS NOT NULL AND NOT EXISTS (SELECT FROM p)\n"
	"                AND (EXISTS (SELECT FROM known WHERE scheduled)\n"
	"                     OR ($3::boolean AND NOT EXISTS (SELECT FROM known)))\n"
	"             RETURNING asked_at, asked_by)\n"
	"SELECT pick.job, (SELECT scheduled FROM known), p.asked_by, p.at,\n"
	"       (extract(epoch FROM ins.asked_at) * 1000000)::bigint, " TS("ins.asked_at") ",\n"
	"       ins.asked_by,\n"
	"       (SELECT string_agg(job, ', ' ORDER BY job) FROM (SELECT job FROM a\n"
	"         WHERE schedule IS NOT NULL ORDER BY job LIMIT 20) x)\n"
	"  FROM (SELECT) AS one LEFT JOIN pick ON true LEFT JOIN p ON true\n"
	"  LEFT JOIN ins ON true";

/* $1 key, $2 job, $3 the request's asked_at in Unix microseconds: its run
 * (attempt 1), as trigger --wait follows it. One row, enum
 * controls_trigger_run_col. */
static const char trigger_run_sql[] =
	"SELECT r.run_id, r.outcome, r.exit_status, r.finished_at IS NOT NULL, r.node_id,\n"
	"       EXISTS (SELECT FROM @S.triggers g WHERE g.lock_key = $1::bigint\n"
	"                 AND g.job = $2::text AND g.asked_at = x.at)\n"
	"  FROM (SELECT to_timestamp(0) + $3::bigint * interval '1 microsecond' AS at) x\n"
	"  LEFT JOIN @S.runs r ON r.lock_key = $1::bigint AND r.job = $2::text\n"
	"   AND r.tick = x.at AND r.attempt = 1";

bool controls_sql_trigger(struct ledger_sql_query *q, const char *schema, int64_t key,
			  const char *job, bool force)
{
	if (!build(q, trigger_sql, schema, key, 3))
		return false;
	q->params[1] = job;
	q->params[2] = force ? "true" : "false";
	return true;
}

bool controls_sql_trigger_run(struct ledger_sql_query *q, const char *schema, int64_t key,
			      const char *job, int64_t asked_us)
{
	if (!build(q, trigger_run_sql, schema, key, 3))
		return false;
	q->params[1] = job;
	snprintf(q->text[2], sizeof(q->text[2]), "%" PRId64, asked_us);
	q->params[2] = q->text[2];
	return true;
}
