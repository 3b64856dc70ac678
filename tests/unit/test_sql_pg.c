/* test_sql_pg.c: every statement of ledger_sql.c, lease_sql.c and
 * controls_sql.c run against a real PostgreSQL (pgtemp.h), for what the
 * text tests cannot see: a stale fencing token's claim inserts nothing, a
 * lost lock's claim inserts nothing, a claim that waited on the locked terms
 * row while a newer term was recorded inserts nothing, a run is finished
 * only by its own token, the controls are written and read back. Each test
 * makes its ledger in a schema of its own. Not in make unit (the package
 * builds have no server): make unit-pg, run by make check. */
#include "controls_sql.h"
#include "lease_sql.h"
#include "ledger_sql.h"
#include "pgtemp.h"
#include "wire.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY 4242
#define KEY_TEXT "4242"

static PGresult *run(PGconn *c, const char *sql, int n, const char *const *params)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	ExecStatusType s = PQresultStatus(r);

	ck_assert_msg(s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK, "%s in: %.200s",
		      PQresultErrorMessage(r), sql);
	return r;
}

/* A simple query, which may hold several statements (as the creation). */
static void exec_ok(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	ExecStatusType s = PQresultStatus(r);

	ck_assert_msg(s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK, "%s in: %.200s",
		      PQresultErrorMessage(r), sql);
	PQclear(r);
}

/* One value of a one-row query, malloc'd ("" for NULL: callers ask
 * IS NULL themselves). */
static char *value(PGconn *c, const char *sql)
{
	PGresult *r = run(c, sql, 0, NULL);
	char *v;

	ck_assert_int_eq(PQntuples(r), 1);
	v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static long long number(PGconn *c, const char *sql)
{
	char *v = value(c, sql);
	long long n = atoll(v);

	free(v);
	return n;
}

static PGresult *run_q(PGconn *c, const struct ledger_sql_query *q)
{
	return run(c, q->sql, q->nparams, q->params);
}

/* The ledger in schema s, made by its own creation statement. */
static void make_ledger(PGconn *c, const char *s)
{
	char *init = ledger_sql_init(s);

	ck_assert_ptr_nonnull(init);
	exec_ok(c, init);
	free(init);
}

static long long rows(PGconn *c, const char *s, const char *where)
{
	char sql[512];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\".runs WHERE %s", s, where);
	return number(c, sql);
}

/* ---- the claim ---------------------------------------------------------- */

struct claim {
	bool claimed;   /* a run_id came back */
	long long run_id;
	bool holder, newest, early;
};

static void claim_params(char p[10][64], const char *job, long long tick_ms,
			 const char *node, long long token, int pid,
			 const char *outcome, bool rerun)
{
	snprintf(p[8], 64, "{1}"); /* the attempt */
	snprintf(p[9], 64, "{0}"); /* no request to run now */
	snprintf(p[0], 64, "%d", KEY);
	snprintf(p[1], 64, "{\"%s\"}", job);
	snprintf(p[2], 64, "{%lld}", tick_ms);
	snprintf(p[3], 64, "%s", node);
	snprintf(p[4], 64, "%lld", token);
	snprintf(p[5], 64, "%d", pid);
	snprintf(p[6], 64, "{%s}", outcome);
	snprintf(p[7], 64, "{%s}", rerun ? "t" : "f");
}

static struct claim claim_answer(PGresult *r)
{
	struct claim out;

	/* the columns ledger_sql.h names, in its order (more may follow) */
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_int_ge(PQnfields(r), 5);
	out.claimed = !PQgetisnull(r, 0, 0);
	out.run_id = out.claimed ? atoll(PQgetvalue(r, 0, 0)) : 0;
	out.holder = !strcmp(PQgetvalue(r, 0, 1), "t");
	out.newest = !strcmp(PQgetvalue(r, 0, 2), "t");
	out.early = !strcmp(PQgetvalue(r, 0, 3), "t");
	ck_assert(!PQgetisnull(r, 0, 4));
	return out;
}

static struct claim claim_attempt_as(PGconn *c, const char *s, const char *job,
				     long long tick_ms, int attempt, long long token,
				     int pid, const char *outcome, bool rerun)
{
	char p[10][64];
	const char *params[10];
	char *sql = ledger_sql_claim(s);
	struct claim out;
	PGresult *r;

	claim_params(p, job, tick_ms, "n1", token, pid, outcome, rerun);
	snprintf(p[8], 64, "{%d}", attempt);
	for (int i = 0; i < 10; i++)
		params[i] = p[i];
	r = run(c, sql, 10, params);
	out = claim_answer(r);
	PQclear(r);
	free(sql);
	return out;
}

static struct claim claim_as(PGconn *c, const char *s, const char *job, long long tick_ms,
			     long long token, int pid, const char *outcome, bool rerun)
{
	return claim_attempt_as(c, s, job, tick_ms, 1, token, pid, outcome, rerun);
}

static long long now_ms(PGconn *c)
{
	return number(c, LEDGER_SQL_CLOCK);
}

/* The lock session (L) holds KEY; claims go over the fence session (F). */
struct sessions {
	PGconn *lock, *fence;
	int lock_pid;
};

static struct sessions leader(const char *s)
{
	struct sessions x = { pgtemp_connect("pgleader/n1"), pgtemp_connect("pgleader/n1"), 0 };

	make_ledger(x.fence, s);
	exec_ok(x.lock, "SELECT pg_advisory_lock(" KEY_TEXT ")");
	x.lock_pid = PQbackendPID(x.lock);
	return x;
}

static void done(struct sessions *x)
{
	PQfinish(x->lock);
	PQfinish(x->fence);
}

START_TEST(claim_current_token_inserts_one_row)
{
	const char *s = "claim_current";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) - 1000;
	struct claim c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);

	ck_assert(c.claimed && c.holder && c.newest && !c.early);
	ck_assert_int_eq(rows(x.fence, s, "job = 'backup' AND outcome = 'running'"
			      " AND fencing_token = 100 AND started_at IS NOT NULL"), 1);
	ck_assert_int_eq(number(x.fence, "SELECT fencing_token FROM claim_current.terms"
			      " WHERE lock_key = " KEY_TEXT), 100);
	/* the same tick again: it has a row, so it never runs again */
	c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	ck_assert(!c.claimed && c.holder && c.newest);
	ck_assert_int_eq(rows(x.fence, s, "true"), 1);
	done(&x);
}
END_TEST

/* A term recorded a newer token: an older term's claim (a frozen leader that
 * woke up, still holding its lock session) inserts nothing. */
START_TEST(claim_stale_token_inserts_nothing)
{
	const char *s = "claim_stale";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) - 1000;
	struct claim c = claim_as(x.fence, s, "backup", tick - 1000, 200, x.lock_pid,
				  "running", false);

	ck_assert(c.claimed);
	c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	ck_assert(!c.claimed);
	ck_assert(c.holder);
	ck_assert(!c.newest);
	c = claim_as(x.fence, s, "report", tick, 100, x.lock_pid, "missed", false);
	ck_assert(!c.claimed);
	ck_assert_int_eq(rows(x.fence, s, "true"), 1);
	ck_assert_int_eq(rows(x.fence, s, "fencing_token = 100"), 0);
	ck_assert_int_eq(number(x.fence, "SELECT fencing_token FROM claim_stale.terms"), 200);
	done(&x);
}
END_TEST

/* ---- the jobs announced (DESIGN 13) ---------------------------------------- */

/* One job of an announcement as the term (token, lock pid) sends it;
 * whether it was written. */
static bool announce(PGconn *c, const char *s, const char *job, const char *sched,
		     long long token, int pid, int gen, bool last)
{
	char p[10][64];
	const char *params[10];
	char *sql = ledger_sql_announce(s);
	PGresult *r;
	bool ok;

	snprintf(p[0], 64, "%d", KEY);
	snprintf(p[1], 64, "%s", job);
	snprintf(p[2], 64, "%s", sched ? sched : "");
	snprintf(p[3], 64, "n1");
	snprintf(p[4], 64, "%lld", token);
	snprintf(p[5], 64, "%d", pid);
	snprintf(p[6], 64, "UTC");
	snprintf(p[7], 64, "1800000000000");
	snprintf(p[8], 64, "%d", gen);
	snprintf(p[9], 64, "%s", last ? "true" : "false");
	for (int i = 0; i < 10; i++)
		params[i] = p[i];
	params[2] = sched ? p[2] : NULL;
	params[6] = sched ? p[6] : NULL;
	r = run(c, sql, 10, params);
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_int_eq(PQnfields(r), 2);
	ok = !strcmp(PQgetvalue(r, 0, 0), "t");
	PQclear(r);
	free(sql);
	return ok;
}

static long long jobs_named(PGconn *c, const char *s, const char *where)
{
	char sql[512];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\".jobs WHERE %s", s, where);
	return number(c, sql);
}

/* Written while the lock session holds the lock and no newer token is
 * recorded; the last job of an announcement removes what older ones named
 * and it does not; an older term's, or one without the lock, writes
 * nothing. */
START_TEST(announce_by_the_holder_only)
{
	const char *s = "announce";
	struct sessions x = leader(s);

	ck_assert(announce(x.fence, s, "a", "@every 1h", 100, x.lock_pid, 1, false));
	ck_assert(announce(x.fence, s, "b", NULL, 100, x.lock_pid, 1, true));
	ck_assert_int_eq(jobs_named(x.fence, s, "true"), 2);
	ck_assert_int_eq(jobs_named(x.fence, s, "job = 'b' AND schedule IS NULL"
				    " AND timezone IS NULL"), 1);
	ck_assert_int_eq(jobs_named(x.fence, s, "job = 'a' AND next_tick ="
				    " to_timestamp(1800000000)"), 1);
	/* a reload: a again, c new, b gone */
	ck_assert(announce(x.fence, s, "a", "@every 2h", 100, x.lock_pid, 2, false));
	ck_assert(announce(x.fence, s, "c", "@daily", 100, x.lock_pid, 2, true));
	ck_assert_int_eq(jobs_named(x.fence, s, "true"), 2);
	ck_assert_int_eq(jobs_named(x.fence, s, "job = 'a' AND schedule = '@every 2h'"), 1);
	ck_assert_int_eq(jobs_named(x.fence, s, "job = 'b'"), 0);
	/* a newer term recorded (a claim of token 200): token 100 writes nothing */
	exec_ok(x.fence, "INSERT INTO announce.terms (lock_key, fencing_token, node_id)"
		" VALUES (" KEY_TEXT ", 200, 'n2') ON CONFLICT (lock_key) DO UPDATE"
		" SET fencing_token = 200");
	ck_assert(!announce(x.fence, s, "d", NULL, 100, x.lock_pid, 3, true));
	ck_assert_int_eq(jobs_named(x.fence, s, "job = 'd'"), 0);
	ck_assert_int_eq(jobs_named(x.fence, s, "true"), 2);
	/* the lock gone from the lock session: nothing */
	ck_assert(!announce(x.fence, s, "e", NULL, 300, x.lock_pid + 1, 1, true));
	ck_assert_int_eq(jobs_named(x.fence, s, "true"), 2);
	/* a new term's list replaces the old one's */
	ck_assert(announce(x.fence, s, "z", NULL, 300, x.lock_pid, 1, true));
	ck_assert_int_eq(jobs_named(x.fence, s, "true"), 1);
	ck_assert_int_eq(jobs_named(x.fence, s, "job = 'z' AND fencing_token = 300"), 1);
	done(&x);
}
END_TEST

/* The lock session's lock is gone (unlocked, or another pid): nothing. */
START_TEST(claim_without_the_lock_inserts_nothing)
{
	const char *s = "claim_lost";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) - 1000;
	struct claim c;

	PGconn *waiter = pgtemp_connect(NULL);
	char wpid[16];
	const char *wp[1] = { wpid };

	/* a session that waits for the lock does not hold it */
	ck_assert(PQsendQuery(waiter, "SELECT pg_advisory_lock(" KEY_TEXT ")"));
	snprintf(wpid, sizeof(wpid), "%d", PQbackendPID(waiter));
	for (int i = 0;; i++) {
		PGresult *w = run(x.fence, "SELECT count(*) FROM pg_catalog.pg_locks WHERE"
				  " locktype = 'advisory' AND NOT granted AND pid = $1::int", 1, wp);
		bool waiting = !strcmp(PQgetvalue(w, 0, 0), "1");

		PQclear(w);
		if (waiting)
			break;
		ck_assert_msg(i < 500, "the waiter never waited");
		usleep(10000);
	}
	c = claim_as(x.fence, s, "backup", tick, 100, PQbackendPID(waiter), "running", false);
	ck_assert(!c.claimed && !c.holder);
	PQfinish(waiter);
	exec_ok(x.lock, "SELECT pg_advisory_unlock(" KEY_TEXT ")");
	c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	ck_assert(!c.claimed && !c.holder && !c.newest);
	/* a session holding another key, or the fence form of this key */
	exec_ok(x.lock, "SELECT pg_advisory_lock(" KEY_TEXT " + 1)");
	exec_ok(x.lock, "SELECT pg_advisory_lock(0, " KEY_TEXT ")");
	c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	ck_assert(!c.claimed && !c.holder);
	/* the lock held by another session than the one named */
	c = claim_as(x.fence, s, "backup", tick, 100, PQbackendPID(x.fence), "running", false);
	ck_assert(!c.claimed && !c.holder);
	ck_assert_int_eq(rows(x.fence, s, "true"), 0);
	ck_assert_int_eq(number(x.fence, "SELECT count(*) FROM claim_lost.terms"), 0);
	done(&x);
}
END_TEST

/* The poll through poll_dsn's pooler (DESIGN 15): who holds the lock and
 * how many wait, in one statement that sets nothing, so that the pooled
 * server session is left as it was. */
static const char *poll_answer(PGconn *c, const char *sql)
{
	static char got[64];
	PGresult *r = PQexec(c, sql);

	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
	snprintf(got, sizeof(got), "%s|%s%s", PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1),
		 atoi(PQgetvalue(r, 0, 2)) == PQbackendPID(c) ? "" : "|another pid");
	PQclear(r);
	return got;
}

static uint32_t db_oid(PGconn *c)
{
	return (uint32_t)number(c, "SELECT oid FROM pg_database WHERE datname = current_database()");
}

START_TEST(lease_poll_state)
{
	PGconn *holder = pgtemp_connect(NULL), *waiter = pgtemp_connect(NULL);
	PGconn *c = pgtemp_connect(NULL);
	char sql[LEASE_SQL_POLL_MAX];

	ck_assert(lease_sql_poll_state(sql, sizeof(sql), KEY, db_oid(c)));
	ck_assert_str_eq(poll_answer(c, sql), "0|0");
	exec_ok(holder, "SELECT pg_advisory_lock(" KEY_TEXT ")");
	/* the fence's form and another key are not the lock */
	exec_ok(holder, "SELECT pg_advisory_lock(0, " KEY_TEXT ")");
	exec_ok(holder, "SELECT pg_advisory_lock(" KEY_TEXT " + 1)");
	ck_assert_str_eq(poll_answer(c, sql), "1|0");
	ck_assert(PQsendQuery(waiter, "SELECT pg_advisory_lock(" KEY_TEXT ")"));
	for (int i = 0; strcmp(poll_answer(c, sql), "1|1"); i++) {
		ck_assert_msg(i < 500, "the waiter never waited");
		usleep(10000);
	}
	/* another database's lock of the same key is not this one's */
	ck_assert(lease_sql_poll_state(sql, sizeof(sql), KEY, db_oid(c) + 1));
	ck_assert_str_eq(poll_answer(c, sql), "0|0");
	PQfinish(waiter);
	PQfinish(holder);
	PQfinish(c);
}
END_TEST

/* LEASE_SQL_QUEUE_RANK from c, as a standby of this priority, counting up
 * to limit. */
static long long queue_rank(PGconn *c, int priority, int limit)
{
	char prio[16], lim[16];
	const char *params[LEASE_SQL_QUEUE_RANK_PARAMS] = { KEY_TEXT, prio, WIRE_TAG_RE, lim };
	PGresult *r;
	long long n;

	snprintf(prio, sizeof(prio), "%d", priority);
	snprintf(lim, sizeof(lim), "%d", limit);
	r = run(c, LEASE_SQL_QUEUE_RANK, LEASE_SQL_QUEUE_RANK_PARAMS, params);
	n = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return n;
}

/* The ranking (DESIGN 15) counts the standbys that wait, and the pgleader
 * lock sessions of this key that rank before this one: a higher priority,
 * or the same and an earlier start, a session that sent nothing yet as
 * priority 1; not a leader's, another key's (one whose digits begin with
 * this key's), another program's, one that starts later, and only up to
 * the limit. Sessions connect in the order below: "me" ranks. */
START_TEST(lease_queue_rank)
{
	PGconn *early = pgtemp_connect("pgleader/early");
	PGconn *leader = pgtemp_connect("pgleader/leader");
	PGconn *longer = pgtemp_connect("pgleader/longer");
	PGconn *other = pgtemp_connect("psql");
	PGconn *waiter = pgtemp_connect("pgleader/waiter");
	PGconn *fresh = pgtemp_connect("pgleader/fresh");
	PGconn *me = pgtemp_connect("pgleader/me");
	PGconn *high = pgtemp_connect("pgleader/high");
	PGconn *late = pgtemp_connect("pgleader/late");
	PGconn *blocked = NULL; /* connected below, after the ranks above */
	PGconn *conns[] = { early, leader, longer, other, waiter, fresh, me, high, late };

	exec_ok(early, "SELECT 1 /* pgleader lock " KEY_TEXT " */");
	exec_ok(leader, "SELECT pg_advisory_lock(" KEY_TEXT ") /* pgleader lock " KEY_TEXT
		" leader since 2026-12-07T05:00:00.000Z */");
	exec_ok(longer, "SELECT 1 /* pgleader lock " KEY_TEXT "0 */");
	exec_ok(other, "SELECT 1 /* pgleader lock " KEY_TEXT " */");
	ck_assert(PQsendQuery(waiter, "SELECT pg_advisory_lock(" KEY_TEXT ") /* pgleader lock "
			      KEY_TEXT " */"));
	exec_ok(high, "SELECT 1 /* pgleader lock " KEY_TEXT " priority 5 */");
	exec_ok(late, "SELECT 1 /* pgleader lock " KEY_TEXT " */");
	/* as priority 9: only the waiter, once it waits */
	for (int i = 0; queue_rank(me, 9, 100) != 1; i++) {
		ck_assert_msg(i < 500, "the waiter never waited");
		usleep(10000);
	}
	ck_assert_int_eq(queue_rank(me, 1, 100), 4); /* waiter, early, fresh, high */
	ck_assert_int_eq(queue_rank(me, 1, 2), 2);
	ck_assert_int_eq(queue_rank(me, 5, 100), 1); /* high is 5 too, and later */
	ck_assert_int_eq(queue_rank(me, 0, 100), 5); /* and late */
	/* a tagged session that waits on a lock counts whatever its rank,
	 * though pg_locks's advisory waiters do not show it: the standby
	 * that began to wait between the two parts' readings */
	blocked = pgtemp_connect("pgleader/blocked");
	exec_ok(other, "CREATE TABLE rank_wait ()");
	exec_ok(other, "BEGIN");
	exec_ok(other, "LOCK TABLE rank_wait");
	ck_assert(PQsendQuery(blocked, "SELECT FROM rank_wait /* pgleader lock " KEY_TEXT
			      " priority 1 */"));
	for (int i = 0; queue_rank(me, 9, 100) != 2; i++) {
		ck_assert_msg(i < 500, "a session waiting on a lock not counted");
		usleep(10000);
	}
	for (size_t i = 0; i < sizeof(conns) / sizeof(conns[0]); i++)
		PQfinish(conns[i]);
	PQfinish(blocked);
}
END_TEST

/* A key with both halves (negative: the high one all ones), and a server
 * session whose search_path puts another schema's = before pg_catalog's:
 * the poll names every operator with its schema, so it counts the lock. */
START_TEST(lease_poll_state_hostile_search_path)
{
	PGconn *holder = pgtemp_connect(NULL), *c = pgtemp_connect(NULL);
	char sql[LEASE_SQL_POLL_MAX];
	const int64_t key = -4242LL * 1000000007LL;

	exec_ok(c, "DROP SCHEMA IF EXISTS poll_evil CASCADE; CREATE SCHEMA poll_evil; "
		"CREATE FUNCTION poll_evil.yes(text, text) RETURNS boolean LANGUAGE sql "
		"AS 'SELECT true'; CREATE FUNCTION poll_evil.yes(oid, oid) RETURNS boolean "
		"LANGUAGE sql AS 'SELECT true'; CREATE OPERATOR poll_evil.= "
		"(FUNCTION = poll_evil.yes, LEFTARG = text, RIGHTARG = text); "
		"CREATE OPERATOR poll_evil.= (FUNCTION = poll_evil.yes, LEFTARG = oid, "
		"RIGHTARG = oid); SET search_path = poll_evil, pg_catalog");
	ck_assert(lease_sql_poll_state(sql, sizeof(sql), key, db_oid(c)));
	exec_ok(holder, "SELECT pg_advisory_lock(0, 1)"); /* another lock */
	ck_assert_str_eq(poll_answer(c, sql), "0|0");
	exec_ok(holder, "SELECT pg_advisory_lock(-4242::bigint * 1000000007)");
	ck_assert_str_eq(poll_answer(c, sql), "1|0");
	exec_ok(c, "RESET search_path; DROP SCHEMA poll_evil CASCADE");
	PQfinish(holder);
	PQfinish(c);
}
END_TEST

/* The poll that does not count: whether the lock was free (taken with the
 * transaction, and let go of with it) and the server session's pid. */
static const char *held_answer(PGconn *c, const char *sql)
{
	static char got[64];
	PGresult *r = PQexec(c, sql);

	ck_assert_msg(PQresultStatus(r) == PGRES_TUPLES_OK, "%s", PQresultErrorMessage(r));
	snprintf(got, sizeof(got), "%s%s", PQgetvalue(r, 0, 0),
		 atoi(PQgetvalue(r, 0, 1)) == PQbackendPID(c) ? "" : "|another pid");
	PQclear(r);
	return got;
}

START_TEST(lease_poll_held)
{
	PGconn *holder = pgtemp_connect(NULL), *c = pgtemp_connect(NULL);
	char sql[LEASE_SQL_POLL_MAX];

	ck_assert(lease_sql_poll_held(sql, sizeof(sql), "(" KEY_TEXT ")::bigint"));
	ck_assert_str_eq(held_answer(c, sql), "t");
	/* let go of with its transaction: another session takes it at once */
	ck_assert_int_eq(number(holder, "SELECT pg_try_advisory_lock(" KEY_TEXT ")::int"), 1);
	ck_assert_str_eq(held_answer(c, sql), "f");
	exec_ok(holder, "SELECT pg_advisory_unlock(" KEY_TEXT ")");
	/* the fence's form is not the lock */
	exec_ok(holder, "SELECT pg_advisory_lock(0, " KEY_TEXT ")");
	ck_assert_str_eq(held_answer(c, sql), "t");
	PQfinish(holder);
	PQfinish(c);
}
END_TEST

/* A tick still in the server's future is early: no row. */
START_TEST(claim_early_tick_inserts_nothing)
{
	const char *s = "claim_early";
	struct sessions x = leader(s);
	struct claim c = claim_as(x.fence, s, "backup", now_ms(x.fence) + 60000, 100,
				  x.lock_pid, "running", false);

	ck_assert(!c.claimed && c.early && c.holder);
	ck_assert_int_eq(rows(x.fence, s, "true"), 0);
	done(&x);
}
END_TEST

/* An array literal of n elements: "{v,v,...}", or with v NULL the job
 * names "{j0,j1,...}". */
static char *array_of(int n, const char *v)
{
	size_t len = (size_t)n * (v ? strlen(v) + 1 : 12) + 3, used = 1;
	char *a = malloc(len);

	ck_assert_ptr_nonnull(a);
	a[0] = '{';
	for (int i = 0; i < n; i++) {
		const char *sep = i ? "," : "";

		used += (size_t)(v ? snprintf(a + used, len - used, "%s%s", sep, v)
				   : snprintf(a + used, len - used, "%sj%d", sep, i));
	}
	snprintf(a + used, len - used, "}");
	return a;
}

/* A tick is early or written, never neither: the insert and the answer
 * read one clock. Many jobs share a tick a few ms ahead of the server's
 * clock, so the tick falls while the statement writes their rows; read
 * twice, the rows filtered before it were answered not early, and the
 * leader took each for one recorded already, its tick lost. */
#define BATCH 2000
START_TEST(claim_early_or_written_by_one_clock)
{
	const char *s = "claim_one_clock";
	struct sessions x = leader(s);
	char *sql = ledger_sql_claim(s), node[] = "n1", token[] = "100", key[16], pid[16];
	char *jobs = array_of(BATCH, NULL), *outcomes = array_of(BATCH, "running");
	char *reruns = array_of(BATCH, "f"), *attempts = array_of(BATCH, "1");
	char *trigs = array_of(BATCH, "0");
	const char *params[10] = { key, jobs, NULL, node, token, pid, outcomes,
				   reruns, attempts, trigs };
	int spanned = 0;

	snprintf(key, sizeof(key), "%d", KEY);
	snprintf(pid, sizeof(pid), "%d", x.lock_pid);
	for (int ahead = 0; ahead <= 60; ahead++) {
		char tick[24], *ticks;
		int written = 0, early = 0;
		PGresult *r;

		snprintf(tick, sizeof(tick), "%lld", now_ms(x.fence) + ahead);
		ticks = array_of(BATCH, tick);
		params[2] = ticks;
		r = run(x.fence, sql, 10, params);
		ck_assert_int_eq(PQntuples(r), BATCH);
		for (int i = 0; i < BATCH; i++) {
			bool claimed = !PQgetisnull(r, i, 0);
			bool is_early = !strcmp(PQgetvalue(r, i, 3), "t");

			ck_assert_msg(claimed != is_early, "tick +%d ms, row %d: claimed %d, "
				      "early %d", ahead, i, claimed, is_early);
			written += claimed;
			early += is_early;
		}
		spanned += written > 0 && early > 0;
		PQclear(r);
		free(ticks);
	}
	/* one reading: a batch is all written or all early */
	ck_assert_int_eq(spanned, 0);
	free(jobs);
	free(outcomes);
	free(reruns);
	free(attempts);
	free(trigs);
	free(sql);
	done(&x);
}
END_TEST

/* An interrupted run is taken again only by a newer term that asks to
 * (rerun), and a record (missed) is finished at once. */
START_TEST(claim_rerun_of_interrupted)
{
	const char *s = "claim_rerun";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) - 1000;
	struct claim c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);

	ck_assert(c.claimed);
	exec_ok(x.fence, "UPDATE claim_rerun.runs SET outcome = 'interrupted'");
	/* not by the term that ran it, nor without asking */
	c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", true);
	ck_assert(!c.claimed);
	c = claim_as(x.fence, s, "backup", tick, 150, x.lock_pid, "running", false);
	ck_assert(!c.claimed);
	c = claim_as(x.fence, s, "backup", tick, 150, x.lock_pid, "running", true);
	ck_assert(c.claimed);
	ck_assert_int_eq(rows(x.fence, s, "outcome = 'running' AND fencing_token = 150"), 1);
	c = claim_as(x.fence, s, "report", tick, 150, x.lock_pid, "missed", false);
	ck_assert(c.claimed);
	ck_assert_int_eq(rows(x.fence, s, "job = 'report' AND outcome = 'missed'"
			      " AND finished_at IS NOT NULL AND started_at IS NULL"), 1);
	done(&x);
}
END_TEST

/* Waiting for the terms row that another claim holds locked: that claim
 * records a newer token and commits, and the waiting (older) claim inserts
 * nothing once it goes on. */
START_TEST(claim_after_locked_row_newer_term_inserts_nothing)
{
	const char *s = "claim_locked";
	struct sessions x = leader(s);
	PGconn *other = pgtemp_connect("pgleader/n2");
	long long tick = now_ms(x.fence) - 1000;
	char p[10][64], pid[16];
	const char *params[10];
	char *sql = ledger_sql_claim(s);
	struct claim c = claim_as(x.fence, s, "backup", tick - 1000, 100, x.lock_pid,
				  "running", false);
	PGresult *r;

	ck_assert(c.claimed);
	exec_ok(other, "BEGIN");
	exec_ok(other, "UPDATE claim_locked.terms SET fencing_token = 300, node_id = 'n2'");
	claim_params(p, "backup", tick, "n1", 200, x.lock_pid, "running", false);
	for (int i = 0; i < 10; i++)
		params[i] = p[i];
	ck_assert(PQsendQueryParams(x.fence, sql, 10, NULL, params, NULL, NULL, 0));
	snprintf(pid, sizeof(pid), "%d", PQbackendPID(x.fence));
	/* until the claim waits for the row */
	for (int i = 0;; i++) {
		PGresult *w;
		const char *wp[1] = { pid };

		ck_assert_msg(i < 500, "the claim never waited on the terms row");
		w = run(other, "SELECT count(*) FROM pg_catalog.pg_stat_activity"
			" WHERE pid = $1::int AND wait_event_type = 'Lock'", 1, wp);
		if (!strcmp(PQgetvalue(w, 0, 0), "1")) {
			PQclear(w);
			break;
		}
		PQclear(w);
		usleep(10000);
	}
	exec_ok(other, "COMMIT");
	r = PQgetResult(x.fence);
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	c = claim_answer(r);
	PQclear(r);
	while ((r = PQgetResult(x.fence)))
		PQclear(r);
	ck_assert(!c.claimed);
	ck_assert_int_eq(rows(x.fence, s, "true"), 1);
	ck_assert_int_eq(number(x.fence, "SELECT fencing_token FROM claim_locked.terms"), 300);
	free(sql);
	PQfinish(other);
	done(&x);
}
END_TEST

/* ---- last, finish, prune ---------------------------------------------- */

static PGresult *last(PGconn *c, const char *s, const char *job, long long token, bool cut)
{
	char tok[24], *sql = ledger_sql_last(s);
	const char *params[4] = { KEY_TEXT, job, tok, cut ? "t" : "f" };
	PGresult *r;

	snprintf(tok, sizeof(tok), "%lld", token);
	r = run(c, sql, 4, params);
	free(sql);
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_int_eq(PQnfields(r), LEDGER_LAST_NCOLS);
	return r;
}

START_TEST(last_cuts_older_running)
{
	const char *s = "last_cut";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) / 1000 * 1000 - 2000;
	char want[24];
	PGresult *r;

	ck_assert(claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false).claimed);
	snprintf(want, sizeof(want), "%lld", tick);
	/* begun on this same server, never restarted since: its term is over
	 * for sure, so a newer term cuts it even without cut */
	r = last(x.fence, s, "backup", 150, false);
	ck_assert_str_eq(PQgetvalue(r, 0, 1), want);
	ck_assert(PQgetisnull(r, 0, 3));
	PQclear(r);
	ck_assert_int_eq(rows(x.fence, s, "outcome = 'interrupted'"), 1);
	exec_ok(x.fence, "DELETE FROM last_cut.runs");
	/* a run with no server recorded (a 0.4 ledger's): maybe of another
	 * server, which a restart could have left running */
	ck_assert(claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false).claimed);
	exec_ok(x.fence, "UPDATE last_cut.runs SET system_identifier = NULL");
	/* a newer term without cut: told, nothing changed */
	r = last(x.fence, s, "backup", 150, false);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), want);
	ck_assert(PQgetisnull(r, 0, 1));
	ck_assert_str_eq(PQgetvalue(r, 0, 3), want);
	PQclear(r);
	ck_assert_int_eq(rows(x.fence, s, "outcome = 'running'"), 1);
	/* its own term: its run is not cut */
	r = last(x.fence, s, "backup", 100, true);
	ck_assert(PQgetisnull(r, 0, 1));
	PQclear(r);
	ck_assert_int_eq(rows(x.fence, s, "outcome = 'running'"), 1);
	/* a newer term with cut: interrupted */
	r = last(x.fence, s, "backup", 150, true);
	ck_assert_str_eq(PQgetvalue(r, 0, 1), want);
	ck_assert(PQgetisnull(r, 0, 3));
	ck_assert(PQgetisnull(r, 0, 2));
	PQclear(r);
	ck_assert_int_eq(rows(x.fence, s, "outcome = 'interrupted'"), 1);
	/* another job's rows are not this one's */
	r = last(x.fence, s, "report", 150, true);
	ck_assert(PQgetisnull(r, 0, 0));
	PQclear(r);
	done(&x);
}
END_TEST

/* The finish statement: $5 owed ("t"/"f"), $6 the output (bytea text, or
 * NULL); the rows it changed. */
static int finish_with(PGconn *c, const char *s, long long run_id, const char *token,
		       const char *outcome, const char *exit_status, const char *owed,
		       const char *output)
{
	char id[24], *sql = ledger_sql_finish(s);
	const char *params[6] = { id, token, outcome, exit_status, owed, output };
	PGresult *r;
	int n;

	snprintf(id, sizeof(id), "%lld", run_id);
	r = run(c, sql, 6, params);
	n = atoi(PQcmdTuples(r));
	PQclear(r);
	free(sql);
	return n;
}

static int finish(PGconn *c, const char *s, long long run_id, const char *token,
		  const char *outcome, const char *exit_status)
{
	return finish_with(c, s, run_id, token, outcome, exit_status, "f", "\\x6f6b0a");
}

START_TEST(finish_by_its_token_once)
{
	const char *s = "finish_once";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) - 1000;
	struct claim c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	PGresult *r;

	ck_assert(c.claimed);
	ck_assert_int_eq(finish(x.fence, s, c.run_id, "99", "failed", "1"), 0);
	ck_assert_int_eq(finish(x.fence, s, c.run_id + 1, "100", "failed", "1"), 0);
	ck_assert_int_eq(finish(x.fence, s, c.run_id, "100", "succeeded", "0"), 1);
	ck_assert_int_eq(finish(x.fence, s, c.run_id, "100", "failed", "1"), 0);
	ck_assert_int_eq(rows(x.fence, s, "outcome = 'succeeded' AND exit_status = 0"
			      " AND finished_at IS NOT NULL"), 1);
	/* its output, as the bytes it wrote (version 4) */
	ck_assert_int_eq(rows(x.fence, s, "output = '\\x6f6b0a'::bytea"), 1);
	/* a run a newer term took for cut whose own leader then saw it end
	 * (frozen meanwhile, say) is recorded as it ended */
	c = claim_as(x.fence, s, "report", tick, 100, x.lock_pid, "running", false);
	PQclear(last(x.fence, s, "report", 150, true));
	ck_assert_int_eq(rows(x.fence, s, "job = 'report' AND outcome = 'interrupted'"), 1);
	ck_assert_int_eq(finish(x.fence, s, c.run_id, "100", "succeeded", "0"), 1);
	ck_assert_int_eq(rows(x.fence, s, "job = 'report' AND outcome = 'succeeded'"
			      " AND exit_status = 0 AND finished_at IS NOT NULL"), 1);
	/* the last success is told */
	r = last(x.fence, s, "backup", 100, false);
	ck_assert(!PQgetisnull(r, 0, 2));
	PQclear(r);
	done(&x);
}
END_TEST

START_TEST(prune_keeps_running_and_recent)
{
	const char *s = "prune";
	struct sessions x = leader(s);
	long long now = now_ms(x.fence);
	char *sql = ledger_sql_prune(s);
	const char *params[2] = { KEY_TEXT, "60000" };
	PGresult *r;

	ck_assert(claim_as(x.fence, s, "a", now - 3600000, 100, x.lock_pid, "missed", false).claimed);
	ck_assert(claim_as(x.fence, s, "b", now - 3600000, 100, x.lock_pid, "running", false).claimed);
	ck_assert(claim_as(x.fence, s, "c", now - 1000, 100, x.lock_pid, "missed", false).claimed);
	exec_ok(x.fence, "INSERT INTO prune.runs (lock_key, job, tick, node_id, fencing_token,"
		" outcome) VALUES (" KEY_TEXT " + 1, 'a', now() - interval '1 day', 'x', 1, 'missed')");
	r = run(x.fence, sql, 2, params);
	ck_assert_str_eq(PQcmdTuples(r), "1");
	PQclear(r);
	ck_assert_int_eq(rows(x.fence, s, "job = 'a' AND lock_key = " KEY_TEXT), 0);
	ck_assert_int_eq(rows(x.fence, s, "true"), 3);
	free(sql);
	done(&x);
}
END_TEST

/* ---- retries and on_failure (DESIGN 13) -------------------------------- */

static enum ledger_state check_as(PGconn *c, const char *s);

static int finish_owed(PGconn *c, const char *s, long long run_id, const char *outcome,
		       const char *exit_status, bool owed)
{
	return finish_with(c, s, run_id, "100", outcome, exit_status, owed ? "t" : "f", NULL);
}

/* Each attempt of a tick is a row of its own, claimed once; LAST tells
 * the newest tick's last attempt, its outcome and end. */
START_TEST(attempts_claimed_once)
{
	const char *s = "attempts";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) / 1000 * 1000 - 5000;
	struct claim a1 = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	struct claim a2;
	char want[24];
	PGresult *r;

	ck_assert(a1.claimed);
	ck_assert_int_eq(finish_owed(x.fence, s, a1.run_id, "failed", "3", false), 1);
	a2 = claim_attempt_as(x.fence, s, "backup", tick, 2, 100, x.lock_pid, "running", false);
	ck_assert(a2.claimed);
	ck_assert(a2.run_id != a1.run_id);
	/* the same attempt again, by anyone: nothing */
	ck_assert(!claim_attempt_as(x.fence, s, "backup", tick, 2, 100, x.lock_pid,
				    "running", false).claimed);
	ck_assert(!claim_attempt_as(x.fence, s, "backup", tick, 2, 120, x.lock_pid,
				    "running", false).claimed);
	/* a stale token's attempt 3: nothing */
	ck_assert(!claim_attempt_as(x.fence, s, "backup", tick, 3, 90, x.lock_pid,
				    "running", false).claimed);
	ck_assert_int_eq(rows(x.fence, s, "attempt = 2"), 1);
	ck_assert_int_eq(finish_owed(x.fence, s, a2.run_id, "timed_out", "143", true), 1);
	r = last(x.fence, s, "backup", 120, false);
	snprintf(want, sizeof(want), "%lld", a2.run_id);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_LAST_RUN_ID), want);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_LAST_ATTEMPT), "2");
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_LAST_OUTCOME), "timed_out");
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_LAST_EXIT), "143");
	ck_assert(!PQgetisnull(r, 0, LEDGER_LAST_ENDED));
	/* the owed on_failure is the last attempt's, not the first's */
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_LAST_OWED_RUN), want);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_LAST_OWED_ATTEMPT), "2");
	PQclear(r);
	done(&x);
}
END_TEST

static struct claim on_failure_as(PGconn *c, const char *s, long long run_id, int pid,
				  long long token)
{
	char id[24], p[16], tok[24], *sql = ledger_sql_on_failure(s);
	const char *params[4] = { KEY_TEXT, id, p, tok };
	struct claim out = { 0 };
	PGresult *r;

	snprintf(id, sizeof(id), "%lld", run_id);
	snprintf(p, sizeof(p), "%d", pid);
	snprintf(tok, sizeof(tok), "%lld", token);
	r = run(c, sql, 4, params);
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_int_eq(PQnfields(r), 3);
	out.claimed = !PQgetisnull(r, 0, 0);
	out.run_id = atoll(PQgetvalue(r, 0, 0));
	out.holder = !strcmp(PQgetvalue(r, 0, 1), "t");
	PQclear(r);
	free(sql);
	return out;
}

/* A failed run's on_failure is claimed once, only by the lock's holder
 * with a token not older than the newest; a new leader's LAST no longer
 * finds it owed once sent. */
START_TEST(on_failure_claimed_once)
{
	const char *s = "on_failure";
	struct sessions x = leader(s);
	long long tick = now_ms(x.fence) - 3000;
	struct claim c = claim_as(x.fence, s, "backup", tick, 100, x.lock_pid, "running", false);
	struct claim ok = claim_as(x.fence, s, "report", tick, 100, x.lock_pid, "running", false);
	PGresult *r;

	ck_assert(c.claimed && ok.claimed);
	ck_assert_int_eq(finish_owed(x.fence, s, c.run_id, "failed", "1", true), 1);
	ck_assert_int_eq(finish_owed(x.fence, s, ok.run_id, "succeeded", "0", false), 1);
	/* not a failed run: nothing to send */
	ck_assert(!on_failure_as(x.fence, s, ok.run_id, x.lock_pid, 100).claimed);
	/* not the lock's holder (another session's pid): nothing */
	c = on_failure_as(x.fence, s, c.run_id, x.lock_pid + 1, 100);
	ck_assert(!c.claimed && !c.holder);
	/* an older token than the newest recorded: nothing */
	ck_assert(!on_failure_as(x.fence, s, c.run_id ? c.run_id : 1, x.lock_pid, 99).claimed);
	r = last(x.fence, s, "backup", 100, false);
	ck_assert(!PQgetisnull(r, 0, LEDGER_LAST_OWED_RUN));
	c.run_id = atoll(PQgetvalue(r, 0, LEDGER_LAST_OWED_RUN));
	PQclear(r);
	c = on_failure_as(x.fence, s, c.run_id, x.lock_pid, 100);
	ck_assert(c.claimed && c.holder);
	/* its own term again (the answer was lost): claimed; a newer one
	 * (the next leader, which takes the lock and records its token): not */
	ck_assert(on_failure_as(x.fence, s, c.run_id, x.lock_pid, 100).claimed);
	exec_ok(x.fence, "UPDATE on_failure.terms SET fencing_token = 120");
	ck_assert(!on_failure_as(x.fence, s, c.run_id, x.lock_pid, 120).claimed);
	ck_assert_int_eq(rows(x.fence, s, "on_failure = 'sent'"), 1);
	r = last(x.fence, s, "backup", 100, false);
	ck_assert(PQgetisnull(r, 0, LEDGER_LAST_OWED_RUN));
	PQclear(r);
	done(&x);
}
END_TEST

/* A version 3 ledger (UNIQUE (lock_key, job, tick), no attempt) is seen
 * as not of this layout and made again: the old constraint gone, the new
 * index there, its rows kept as attempt 1; twice is the same. */
START_TEST(version_3_migrated)
{
	PGconn *c = pgtemp_connect(NULL);

	make_ledger(c, "mig3");
	exec_ok(c, "ALTER TABLE mig3.runs DROP COLUMN attempt, DROP COLUMN on_failure;"
		" ALTER TABLE mig3.runs ADD CONSTRAINT runs_lock_key_job_tick_key"
		" UNIQUE (lock_key, job, tick); UPDATE mig3.meta SET version = 3;"
		" INSERT INTO mig3.runs (lock_key, job, tick, node_id, fencing_token, outcome)"
		" VALUES (1, 'a', now(), 'n', 1, 'failed')");
	ck_assert_int_eq(check_as(c, "mig3"), LEDGER_MISSING);
	make_ledger(c, "mig3");
	make_ledger(c, "mig3");
	ck_assert_int_eq(check_as(c, "mig3"), LEDGER_READY);
	ck_assert_int_eq(number(c, "SELECT version FROM mig3.meta"), LEDGER_SQL_VERSION);
	ck_assert_int_eq(number(c, "SELECT count(*) FROM pg_catalog.pg_constraint"
				" WHERE conname = 'runs_lock_key_job_tick_key'"
				" AND connamespace = 'mig3'::regnamespace"), 0);
	ck_assert_int_eq(number(c, "SELECT count(*) FROM mig3.runs WHERE attempt = 1"), 1);
	exec_ok(c, "INSERT INTO mig3.runs (lock_key, job, tick, node_id, fencing_token,"
		" outcome, attempt) SELECT lock_key, job, tick, node_id, fencing_token,"
		" outcome, 2 FROM mig3.runs");
	PQfinish(c);
}
END_TEST

/* ---- the creation, the check, the listing ------------------------------ */

static enum ledger_state check_as(PGconn *c, const char *s)
{
	char *sql = ledger_sql_check(s, NULL);
	PGresult *r = run(c, sql, 0, NULL);
	const char *v[LEDGER_CHECK_NCOLS];
	enum ledger_state st;

	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_int_eq(PQnfields(r), LEDGER_CHECK_NCOLS);
	for (int i = 0; i < LEDGER_CHECK_NCOLS; i++) {
		/* only the owner's complaint is NULL: a ledger it trusts */
		ck_assert(i == LEDGER_CHECK_UNTRUSTED || !PQgetisnull(r, 0, i));
		v[i] = PQgetisnull(r, 0, i) ? NULL : PQgetvalue(r, 0, i);
	}
	st = ledger_sql_parse_check(v);
	PQclear(r);
	free(sql);
	return st;
}

START_TEST(init_check_and_privileges)
{
	PGconn *c = pgtemp_connect(NULL), *u;
	char *script = ledger_sql_init_script("check_priv");

	ck_assert_int_eq(check_as(c, "check_priv"), LEDGER_MISSING);
	make_ledger(c, "check_priv");
	make_ledger(c, "check_priv"); /* idempotent */
	exec_ok(c, script);           /* and its psql script too */
	free(script);
	ck_assert_int_eq(number(c, "SELECT version FROM check_priv.meta"), LEDGER_SQL_VERSION);
	ck_assert_int_eq(number(c, "SELECT count(*) FROM check_priv.meta"), 1);
	ck_assert_int_eq(check_as(c, "check_priv"), LEDGER_READY);
	exec_ok(c, "DROP ROLE IF EXISTS check_u; CREATE ROLE check_u LOGIN");
	u = pgtemp_connect_as("check_u", NULL);
	ck_assert_int_eq(check_as(u, "check_priv"), LEDGER_NO_ACCESS);
	exec_ok(c, "GRANT SELECT ON check_priv.runs TO check_u");
	ck_assert_int_eq(check_as(u, "check_priv"), LEDGER_READ_ONLY);
	exec_ok(c, "GRANT SELECT, INSERT, UPDATE, DELETE ON check_priv.runs, check_priv.terms"
		" TO check_u");
	/* the jobs announced (version 4) are written by the nodes too */
	ck_assert_int_eq(check_as(u, "check_priv"), LEDGER_READ_ONLY);
	exec_ok(c, "GRANT INSERT, UPDATE, DELETE ON check_priv.jobs TO check_u");
	/* the leader reads and deletes the requests to run now (version 5) */
	ck_assert_int_eq(check_as(u, "check_priv"), LEDGER_READ_ONLY);
	exec_ok(c, "GRANT SELECT, DELETE ON check_priv.triggers TO check_u");
	ck_assert_int_eq(check_as(u, "check_priv"), LEDGER_READY);
	exec_ok(c, "REVOKE USAGE ON SCHEMA check_priv FROM PUBLIC");
	ck_assert_int_eq(check_as(u, "check_priv"), LEDGER_NO_ACCESS);
	exec_ok(c, "DROP TABLE check_priv.meta");
	ck_assert_int_eq(check_as(c, "check_priv"), LEDGER_MISSING);
	PQfinish(u);
	PQfinish(c);
}
END_TEST

START_TEST(runs_and_summary)
{
	const char *s = "listing";
	struct sessions x = leader(s);
	long long now = now_ms(x.fence);
	struct ledger_sql_query q;
	PGresult *r;

	ck_assert(claim_as(x.fence, s, "a", now - 3000, 100, x.lock_pid, "running", false).claimed);
	ck_assert(claim_as(x.fence, s, "a", now - 2000, 100, x.lock_pid, "missed", false).claimed);
	ck_assert(claim_as(x.fence, s, "b", now - 1000, 100, x.lock_pid, "skipped", false).claimed);
	ck_assert(ledger_sql_runs(&q, s, KEY, NULL, -1, 10, false));
	r = run_q(x.fence, &q);
	ck_assert_int_eq(PQntuples(r), 3);
	ck_assert_int_eq(PQnfields(r), LEDGER_RUN_NCOLS);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_RUN_JOB), "b");
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_RUN_OUTCOME), "skipped");
	ck_assert_str_eq(PQgetvalue(r, 2, LEDGER_RUN_TOKEN), "100");
	PQclear(r);
	ck_assert(ledger_sql_runs(&q, s, KEY, "a", -1, 1, false));
	r = run_q(x.fence, &q);
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_RUN_OUTCOME), "missed");
	PQclear(r);
	ck_assert(ledger_sql_runs(&q, s, KEY + 1, NULL, -1, 10, false));
	r = run_q(x.fence, &q);
	ck_assert_int_eq(PQntuples(r), 0);
	PQclear(r);
	ck_assert(ledger_sql_summary(&q, s, KEY, 10));
	r = run_q(x.fence, &q);
	ck_assert_int_eq(PQntuples(r), 2);
	ck_assert_int_eq(PQnfields(r), LEDGER_SUMMARY_NCOLS);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_RUN_JOB), "a");
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_RUN_OUTCOME), "missed");
	ck_assert_str_eq(PQgetvalue(r, 1, LEDGER_RUN_JOB), "b");
	PQclear(r);
	done(&x);
}
END_TEST

/* ---- the controls ------------------------------------------------------ */

/* The controls' probe with no --ledger-owner, as the schema's. */
static char *controls_probe(const char *s)
{
	return ledger_sql_controls_probe(s, NULL);
}

static bool probe(PGconn *c, char *(*build)(const char *), const char *s)
{
	char *sql = build(s), *v = value(c, sql);
	bool yes = !strcmp(v, "t");

	free(v);
	free(sql);
	return yes;
}

/* A job paused, then the whole lock; a second pause is one row. */
static void controls_pause(PGconn *c, const char *s, const char *read, const char *const *key)
{
	struct ledger_sql_query q;
	PGresult *r;

	ck_assert(controls_sql_pause(&q, s, KEY, "nightly"));
	PQclear(run_q(c, &q));
	ck_assert(controls_sql_pause(&q, s, KEY, NULL));
	r = run_q(c, &q);
	ck_assert_int_eq(PQntuples(r), 1);
	ck_assert_ptr_nonnull(strstr(PQgetvalue(r, 0, CONTROLS_PAUSE_BY), "pgleader-pause"));
	PQclear(r);
	PQclear(run_q(c, &q));
	ck_assert(controls_sql_read(&q, s, KEY));
	r = run_q(c, &q);
	ck_assert_int_eq(PQntuples(r), 2);
	ck_assert_str_eq(PQgetvalue(r, 0, CONTROLS_READ_JOB), "");
	ck_assert_str_eq(PQgetvalue(r, 1, CONTROLS_READ_JOB), "nightly");
	PQclear(r);
	r = run(c, read, 1, key);
	ck_assert_int_eq(PQntuples(r), 2);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_CONTROL_KIND), "pause");
	ck_assert(PQgetisnull(r, 0, LEDGER_CONTROL_LEFT_MS));
	PQclear(r);
}

/* One job resumed: the whole lock stays paused; then the lock. */
static void controls_resume(PGconn *c, const char *s)
{
	struct ledger_sql_query q;
	PGresult *r;

	ck_assert(controls_sql_resume(&q, s, KEY, "nightly"));
	r = run_q(c, &q);
	ck_assert_str_eq(PQgetvalue(r, 0, CONTROLS_RESUME_COUNT), "1");
	ck_assert_str_eq(PQgetvalue(r, 0, CONTROLS_RESUME_ALL_STAYS), "t");
	PQclear(r);
	ck_assert(controls_sql_resume(&q, s, KEY, NULL));
	r = run_q(c, &q);
	ck_assert_str_eq(PQgetvalue(r, 0, CONTROLS_RESUME_COUNT), "1");
	ck_assert_str_eq(PQgetvalue(r, 0, CONTROLS_RESUME_ALL), "t");
	ck_assert_str_eq(PQgetvalue(r, 0, CONTROLS_RESUME_ALL_STAYS), "f");
	PQclear(r);
}

/* One switchover at a time, told after the resumed pauses; done deletes
 * only its own row. */
static void controls_switchover(PGconn *c, const char *s, const char *read,
				const char *const *key)
{
	struct ledger_sql_query q;
	char stamp[64];
	PGresult *r;

	ck_assert(controls_sql_switchover(&q, s, KEY, "db2", 30000, "db1"));
	r = run_q(c, &q);
	ck_assert_int_eq(PQntuples(r), 1);
	snprintf(stamp, sizeof(stamp), "%s", PQgetvalue(r, 0, CONTROLS_ASK_STAMP));
	PQclear(r);
	ck_assert(controls_sql_switchover(&q, s, KEY, NULL, 30000, "db1"));
	r = run_q(c, &q);
	ck_assert_int_eq(PQntuples(r), 0);
	PQclear(r);
	ck_assert(controls_sql_standing(&q, s, KEY));
	r = run_q(c, &q);
	ck_assert_int_eq(PQntuples(r), 1);
	PQclear(r);
	/* the resumed pauses are told as such, then the switchover */
	r = run(c, read, 1, key);
	ck_assert_int_eq(PQntuples(r), 3);
	ck_assert_str_eq(PQgetvalue(r, 0, LEDGER_CONTROL_KIND), "resumed");
	ck_assert_str_eq(PQgetvalue(r, 2, LEDGER_CONTROL_KIND), "switchover");
	ck_assert_str_eq(PQgetvalue(r, 2, LEDGER_CONTROL_TARGET), "db2");
	ck_assert_str_eq(PQgetvalue(r, 2, LEDGER_CONTROL_LEADER), "db1");
	ck_assert_int_gt(atoll(PQgetvalue(r, 2, LEDGER_CONTROL_LEFT_MS)), 20000);
	PQclear(r);
	ck_assert(controls_sql_switchover_done(&q, s, KEY, "2000-01-01 00:00:00+00"));
	r = run_q(c, &q);
	ck_assert_str_eq(PQcmdTuples(r), "0");
	PQclear(r);
	ck_assert(controls_sql_switchover_done(&q, s, KEY, stamp));
	r = run_q(c, &q);
	ck_assert_str_eq(PQcmdTuples(r), "1");
	PQclear(r);
}

/* A lapsed switchover is not in force, and lapsed deletes it. */
static void controls_lapsed(PGconn *c, const char *s, const char *read,
			    const char *const *key)
{
	struct ledger_sql_query q;
	PGresult *r;

	ck_assert(controls_sql_switchover(&q, s, KEY, "db2", -1000, "db1"));
	PQclear(run_q(c, &q));
	r = run(c, read, 1, key);
	ck_assert_int_eq(PQntuples(r), 2);
	ck_assert_str_eq(PQgetvalue(r, 1, LEDGER_CONTROL_KIND), "resumed");
	PQclear(r);
	ck_assert(controls_sql_lapsed(&q, s, KEY));
	r = run_q(c, &q);
	ck_assert_str_eq(PQcmdTuples(r), "1");
	PQclear(r);
}

/* A role that may not read them: the probes still find them there, so
 * its read fails (and the controls fail closed), not "no table". */
static void controls_blind(PGconn *c, const char *s, const char *read,
			   const char *const *key)
{
	PGresult *r;

	exec_ok(c, "CREATE ROLE controls_blind; REVOKE SELECT ON controls.controls FROM PUBLIC;"
		" REVOKE USAGE ON SCHEMA controls FROM PUBLIC; SET ROLE controls_blind");
	ck_assert(probe(c, ledger_sql_schema_probe, s));
	ck_assert(probe(c, controls_probe, s));
	r = PQexecParams(c, read, 1, NULL, key, NULL, NULL, 0);
	ck_assert_int_eq(PQresultStatus(r), PGRES_FATAL_ERROR);
	ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), "42501");
	PQclear(r);
	exec_ok(c, "RESET ROLE; DROP OWNED BY controls_blind; DROP ROLE controls_blind");
}

START_TEST(controls_written_and_read)
{
	PGconn *c = pgtemp_connect("pgleader-pause");
	const char *s = "controls";
	char *read = ledger_sql_controls_read(s);
	const char *key[1] = { KEY_TEXT };

	ck_assert(!probe(c, ledger_sql_schema_probe, s));
	ck_assert(!probe(c, controls_probe, s));
	make_ledger(c, s);
	ck_assert(probe(c, ledger_sql_schema_probe, s));
	ck_assert(probe(c, controls_probe, s));
	controls_pause(c, s, read, key);
	controls_resume(c, s);
	controls_switchover(c, s, read, key);
	controls_lapsed(c, s, read, key);
	controls_blind(c, s, read, key);
	free(read);
	PQfinish(c);
}
END_TEST

/* A standby of higher priority asks for a switchover to itself; the leader's
 * priority is read from its lock session's tag; handed deletes it. */
START_TEST(priority_ask_and_handed)
{
	const char *s = "priority";
	PGconn *lock = pgtemp_connect("pgleader/db1"), *c = pgtemp_connect("pgleader/db2");
	char *ask = ledger_sql_priority_ask(s), *handed = ledger_sql_handed(s);
	char sql[LEASE_SQL_MAX + LEASE_SQL_TAG_MAX];
	const char *hi[4] = { KEY_TEXT, "db2", "5", "30000" }, *lo[4] = { KEY_TEXT, "db3", "1", "30000" };
	const char *h[2] = { KEY_TEXT, "db2" };
	PGresult *r;

	make_ledger(c, s);
	r = run(c, ask, 4, hi);
	ck_assert(PQgetisnull(r, 0, 0)); /* no leader */
	ck_assert_str_eq(PQgetvalue(r, 0, 2), "f");
	PQclear(r);
	ck_assert(lease_sql_tag(sql, sizeof(sql), "SELECT pg_advisory_lock(" KEY_TEXT ")",
				WIRE_TAG_LOCK, KEY, "2026-11-22T01:18:33.123Z", 3));
	exec_ok(lock, sql);
	r = run(c, ask, 4, lo);
	ck_assert_str_eq(PQgetvalue(r, 0, 0), "db1");
	ck_assert_str_eq(PQgetvalue(r, 0, 1), "3");
	ck_assert_str_eq(PQgetvalue(r, 0, 2), "f"); /* 1 is not above 3 */
	PQclear(r);
	r = run(c, ask, 4, hi);
	ck_assert_str_eq(PQgetvalue(r, 0, 2), "t");
	PQclear(r);
	r = run(c, ask, 4, hi); /* one stands */
	ck_assert_str_eq(PQgetvalue(r, 0, 2), "f");
	PQclear(r);
	ck_assert_int_eq(number(c, "SELECT count(*) FROM priority.controls WHERE kind = 'switchover'"
			       " AND target = 'db2' AND leader = 'db1'"), 1);
	r = run(c, handed, 2, h);
	ck_assert_str_eq(PQcmdTuples(r), "1");
	PQclear(r);
	free(ask);
	free(handed);
	PQfinish(lock);
	PQfinish(c);
}
END_TEST

/* ---- the lease's statements ------------------------------------------- */

static struct lease_sql_answer answer(PGresult *r, const char **v, int room)
{
	for (int i = 0; i < PQnfields(r) && i < room; i++)
		v[i] = PQgetisnull(r, 0, i) ? NULL : PQgetvalue(r, 0, i);
	return (struct lease_sql_answer){ PQntuples(r), PQnfields(r), v };
}

static struct lease_sql_server setup(PGconn *c, bool with_name)
{
	char sql[LEASE_SQL_SETUP_MAX];
	const char *name[1] = { "my-lock" };
	struct lease_sql_server srv = { 0 };
	const char *v[16];
	struct lease_sql_answer a;
	PGresult *r;

	lease_sql_setup(sql, sizeof(sql), with_name, 2.5, 4.5);
	r = run(c, sql, with_name ? 1 : 0, with_name ? name : NULL);
	a = answer(r, v, 16);
	ck_assert(lease_sql_parse_setup(&a, with_name, &srv));
	PQclear(r);
	ck_assert_int_eq(srv.backend_pid, PQbackendPID(c));
	/* the database it reached, as poll_dsn's check compares it */
	r = run(c, LEASE_SQL_IDENTITY_QUERY, 0, NULL);
	a = answer(r, v, 16);
	ck_assert(lease_sql_parse_identity_row(&a, &srv));
	PQclear(r);
	ck_assert(srv.system_id == (uint64_t)number(c, "SELECT system_identifier "
						     "FROM pg_control_system()"));
	ck_assert(srv.system_id != 0);
	ck_assert_int_eq(srv.db_oid, number(c, "SELECT oid FROM pg_database "
					      "WHERE datname = current_database()"));
	return srv;
}

/* The last result of a simple query of several statements. */
static PGresult *last_result(PGconn *c, const char *sql)
{
	PGresult *r, *keep = NULL;

	ck_assert(PQsendQuery(c, sql));
	while ((r = PQgetResult(c))) {
		PQclear(keep);
		keep = r;
	}
	return keep;
}

START_TEST(lease_setup_claim_and_token)
{
	PGconn *c = pgtemp_connect("pgleader/n1");
	struct lease_sql_server srv = setup(c, true);
	char sql[LEASE_SQL_MAX], *v;
	const char *vals[4];
	uint64_t t1, t2;
	int pid;
	PGresult *r;
	struct lease_sql_answer a;

	ck_assert_int_eq(srv.key, number(c, "SELECT hashtextextended('my-lock', 0)"));
	ck_assert(!srv.in_recovery);
	ck_assert(srv.can_emit_message && srv.can_create_temp);
	v = value(c, "SHOW lock_timeout");
	ck_assert_str_eq(v, "2500ms");
	free(v);
	/* past lock_timeout: a role's own would cut a queued wait short */
	v = value(c, "SHOW statement_timeout");
	ck_assert_str_eq(v, "4500ms");
	free(v);
	v = value(c, "SHOW row_security");
	ck_assert_str_eq(v, "off");
	free(v);
	v = value(c, "SHOW search_path");
	ck_assert_str_eq(v, "pg_catalog");
	free(v);
	ck_assert_uint_eq(lease_sql_claim(sql, sizeof(sql), &srv, 10), 0);
	r = last_result(c, sql);
	a = answer(r, vals, 4);
	ck_assert(lease_sql_parse_claim(&a, &t1, &pid));
	ck_assert_int_eq(pid, srv.backend_pid);
	PQclear(r);
	v = value(c, "SHOW idle_session_timeout");
	ck_assert_str_eq(v, "10s");
	free(v);
	/* the temporary table's way, and every claim a newer token */
	srv.can_emit_message = false;
	lease_sql_claim(sql, sizeof(sql), &srv, 10);
	r = last_result(c, sql);
	a = answer(r, vals, 4);
	ck_assert(lease_sql_parse_claim(&a, &t2, &pid));
	ck_assert_uint_gt(t2, t1);
	PQclear(r);
	ck_assert(lease_sql_unclaim(sql, sizeof(sql), &srv, 10));
	exec_ok(c, sql);
	v = value(c, "SHOW idle_session_timeout");
	ck_assert_str_eq(v, "0");
	free(v);
	PQfinish(c);
}
END_TEST

static bool granted(PGconn *c, const struct lease_sql_lock *l)
{
	const char *p[2] = { l->params[0], l->params[1] };
	PGresult *r = run(c, l->sql, l->nparams, p);
	const char *v[2];
	struct lease_sql_answer a = answer(r, v, 2);
	bool g = false;

	ck_assert(lease_sql_parse_granted(&a, &g));
	PQclear(r);
	return g;
}

/* An unlock; the lock's answers true (it was held), the fence's
 * unlock_all nothing. */
static void unlock(PGconn *c, const struct lease_sql_lock *l)
{
	const char *p[2] = { l->params[0], l->params[1] };
	PGresult *r = run(c, l->sql, l->nparams, p);

	ck_assert_str_eq(PQgetvalue(r, 0, 0), l->nparams ? "t" : "");
	PQclear(r);
}

/* The lock and the fence are two lock spaces: each one holder. */
START_TEST(lease_lock_and_fence)
{
	PGconn *a = pgtemp_connect(NULL), *b = pgtemp_connect(NULL);
	struct lease_sql_lock l;
	int64_t keys[] = { KEY, -1, INT64_MIN, INT64_MAX, (int64_t)1 << 32 };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		lease_sql_lock(&l, LEASE_SQL_TRY, false, keys[i]);
		ck_assert(granted(a, &l));
		ck_assert(!granted(b, &l));
		lease_sql_lock(&l, LEASE_SQL_TRY, true, keys[i]);
		ck_assert(granted(b, &l)); /* the fence is not the lock */
		ck_assert(!granted(a, &l));
		ck_assert_int_eq(number(a, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
				       " AND granted"), 2);
		lease_sql_lock(&l, LEASE_SQL_UNLOCK, false, keys[i]);
		unlock(a, &l);
		lease_sql_lock(&l, LEASE_SQL_UNLOCK, true, keys[i]);
		unlock(b, &l);
		ck_assert_int_eq(number(a, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"), 0);
	}
	PQfinish(a);
	PQfinish(b);
}
END_TEST

/* The fence's wait-and-claim: ends by lock_timeout while another holds the
 * fence (55P03, nothing set), answers its pid once free. */
START_TEST(lease_fence_wait_claim)
{
	PGconn *a = pgtemp_connect(NULL), *b = pgtemp_connect(NULL);
	struct lease_sql_server srv = setup(a, false);
	struct lease_sql_lock l;
	char sql[LEASE_SQL_MAX], *v;
	const char *vals[2], *p[2];
	PGresult *r;
	struct lease_sql_answer ans;
	int pid;

	exec_ok(a, "SET lock_timeout = '100ms'");
	lease_sql_lock(&l, LEASE_SQL_WAIT, true, KEY);
	p[0] = l.params[0], p[1] = l.params[1];
	PQclear(run(b, l.sql, 2, p));
	ck_assert(lease_sql_fence_wait_claim(sql, sizeof(sql), &srv, 10, KEY));
	r = last_result(a, sql);
	ck_assert_int_eq(PQresultStatus(r), PGRES_FATAL_ERROR);
	ck_assert_str_eq(PQresultErrorField(r, PG_DIAG_SQLSTATE), LEASE_SQL_LOCK_TIMEOUT);
	PQclear(r);
	v = value(a, "SHOW idle_session_timeout");
	ck_assert_str_eq(v, "0"); /* undone with the wait */
	free(v);
	exec_ok(b, "SELECT pg_advisory_unlock_all()");
	r = last_result(a, sql);
	ans = answer(r, vals, 2);
	ck_assert(lease_sql_parse_pid(&ans, &pid));
	ck_assert_int_eq(pid, PQbackendPID(a));
	PQclear(r);
	v = value(a, "SHOW idle_session_timeout");
	ck_assert_str_eq(v, "10s");
	free(v);
	lease_sql_lock(&l, LEASE_SQL_TRY, true, KEY);
	ck_assert(!granted(b, &l));
	ck_assert(lease_sql_fence_claim(sql, sizeof(sql), &srv, 5));
	r = last_result(a, sql);
	ans = answer(r, vals, 2);
	ck_assert(lease_sql_parse_pid(&ans, &pid));
	PQclear(r);
	PQfinish(a);
	PQfinish(b);
}
END_TEST

/* The ping names every node with a session tagged for the key. */
START_TEST(lease_ping_nodes)
{
	PGconn *n1 = pgtemp_connect("pgleader/n1"), *n2 = pgtemp_connect("pgleader/n2"),
	       *other = pgtemp_connect("pgleader/n9");
	char sql[LEASE_SQL_MAX + LEASE_SQL_TAG_MAX], nodes[128];
	const char *key[1] = { KEY_TEXT }, *vals[2];
	struct lease_sql_answer a;
	PGresult *r;
	int pid;

	ck_assert(lease_sql_tag(sql, sizeof(sql), "SELECT 1", WIRE_TAG_LOCK, KEY, "", 1));
	exec_ok(n1, sql);
	ck_assert(lease_sql_tag(sql, sizeof(sql), "SELECT 1", WIRE_TAG_FENCE, KEY, "", 1));
	exec_ok(n2, sql);
	ck_assert(lease_sql_tag(sql, sizeof(sql), "SELECT 1", WIRE_TAG_LOCK, KEY * 10, "", 1));
	exec_ok(other, sql); /* another key, whose text begins with this one's */
	/* the leader's ping, tagged as each statement of its lock session */
	ck_assert(lease_sql_tag(sql, sizeof(sql), LEASE_SQL_PING_NODES, WIRE_TAG_LOCK, KEY,
				"2026-11-22T01:18:33.123Z", 1));
	r = run(n1, sql, 1, key);
	a = answer(r, vals, 2);
	ck_assert(lease_sql_parse_ping_nodes(&a, &pid, nodes, sizeof(nodes)));
	ck_assert_int_eq(pid, PQbackendPID(n1));
	PQclear(r);
	ck_assert_str_eq(nodes, "n1,n2");
	r = run(n1, LEASE_SQL_PING, 0, NULL);
	a = answer(r, vals, 2);
	ck_assert(lease_sql_parse_pid(&a, &pid));
	PQclear(r);
	PQfinish(n1);
	PQfinish(n2);
	PQfinish(other);
}
END_TEST

static Suite *sql_pg_suite(void)
{
	Suite *s = suite_create("sql_pg");
	TCase *t = tcase_create("statements");

	tcase_set_timeout(t, 30);
	tcase_add_test(t, claim_current_token_inserts_one_row);
	tcase_add_test(t, claim_stale_token_inserts_nothing);
	tcase_add_test(t, announce_by_the_holder_only);
	tcase_add_test(t, claim_without_the_lock_inserts_nothing);
	tcase_add_test(t, claim_early_tick_inserts_nothing);
	tcase_add_test(t, claim_early_or_written_by_one_clock);
	tcase_add_test(t, claim_rerun_of_interrupted);
	tcase_add_test(t, claim_after_locked_row_newer_term_inserts_nothing);
	tcase_add_test(t, last_cuts_older_running);
	tcase_add_test(t, finish_by_its_token_once);
	tcase_add_test(t, prune_keeps_running_and_recent);
	tcase_add_test(t, attempts_claimed_once);
	tcase_add_test(t, on_failure_claimed_once);
	tcase_add_test(t, version_3_migrated);
	tcase_add_test(t, init_check_and_privileges);
	tcase_add_test(t, runs_and_summary);
	tcase_add_test(t, controls_written_and_read);
	tcase_add_test(t, priority_ask_and_handed);
	tcase_add_test(t, lease_setup_claim_and_token);
	tcase_add_test(t, lease_lock_and_fence);
	tcase_add_test(t, lease_fence_wait_claim);
	tcase_add_test(t, lease_ping_nodes);
	tcase_add_test(t, lease_poll_state);
	tcase_add_test(t, lease_queue_rank);
	tcase_add_test(t, lease_poll_state_hostile_search_path);
	tcase_add_test(t, lease_poll_held);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(sql_pg_suite());
	int failed;

	pgtemp_start();
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
