/* ledger.c: the run records of DESIGN 10 on the fence session: one
 * statement at a time, in the order asked, and a run's end kept until the
 * server has it. */
#include "ledger.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lease_sql.h"
#include "ledger_sql.h"
#include "log.h"

enum ledger_kind { REQ_ENSURE, REQ_CREATE, REQ_CLOCK, REQ_CLAIM, REQ_LAST,
		   REQ_FINISH, REQ_PRUNE };

struct request {
	struct request *next;
	enum ledger_kind kind;
	const char *sql;         /* one of the ledger's texts */
	int nparams;
	char params[LEASE_QUERY_PARAMS][96];
	ledger_fn fn;
	void *arg;
	bool may_create;         /* ENSURE: the role may create the ledger */
	unsigned null_param;     /* bit i: parameter i is NULL */
};

struct ledger {
	struct lease *session;
	char schema[64];
	struct request *head, *tail;
	bool in_flight;
	double sent_at;
	/* the statements, with the schema in them */
	char *sql_ensure, *sql_create, *sql_claim, *sql_last, *sql_finish,
	     *sql_prune;
};

#define SQL_NOW "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

static const char sql_clock[] = "SELECT " SQL_NOW;

/* The lock is the bigint form: objsubid 1, classid and objid its halves
 * (lease_sql.h). The claim's three parts see one snapshot; the term's
 * upsert locks the lock's row in terms, so two claims for one lock (a
 * frozen old leader that woke up, the new one) are taken one at a time,
 * and the older token loses. */
#define CLAIM_SQL \
	"WITH holder AS (SELECT true FROM pg_catalog.pg_locks" \
	" WHERE locktype = 'advisory' AND granted AND pid = $6::int AND objsubid = 1" \
	" AND classid::bigint = ($1::bigint >> 32) & 4294967295" \
	" AND objid::bigint = $1::bigint & 4294967295" \
	" AND database = (SELECT oid FROM pg_catalog.pg_database" \
	" WHERE datname = pg_catalog.current_database()))," \
	" term AS (INSERT INTO %1$s.terms AS t (lock_key, fencing_token, node_id)" \
	" SELECT $1::bigint, $5::bigint, $4::text FROM holder" \
	" ON CONFLICT (lock_key) DO UPDATE SET fencing_token = EXCLUDED.fencing_token," \
	" node_id = EXCLUDED.node_id, since = CASE WHEN t.fencing_token <" \
	" EXCLUDED.fencing_token THEN now() ELSE t.since END" \
	" WHERE t.fencing_token <= EXCLUDED.fencing_token RETURNING true)," \
	" run AS (INSERT INTO %1$s.runs AS r (lock_key, job, tick, node_id," \
	" fencing_token, outcome, started_at, finished_at)" \
	" SELECT $1::bigint, $2::text, to_timestamp($3::bigint / 1000.0), $4::text," \
	" $5::bigint, $7::text," \
	" CASE WHEN $7::text = 'running' THEN clock_timestamp() END," \
	" CASE WHEN $7::text <> 'running' THEN clock_timestamp() END" \
	" FROM term WHERE to_timestamp($3::bigint / 1000.0) <= clock_timestamp()" \
	" ON CONFLICT (lock_key, job, tick) DO UPDATE SET node_id = EXCLUDED.node_id," \
	" fencing_token = EXCLUDED.fencing_token, outcome = EXCLUDED.outcome," \
	" started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at," \
	" exit_status = NULL WHERE $8::boolean AND r.outcome = 'interrupted'" \
	" AND r.fencing_token < EXCLUDED.fencing_token RETURNING run_id)" \
	" SELECT (SELECT run_id FROM run), EXISTS (SELECT FROM holder)," \
	" EXISTS (SELECT FROM term)," \
	" to_timestamp($3::bigint / 1000.0) > clock_timestamp(), " SQL_NOW

/* Runs an older term left running were cut off with their leader, whose
 * command may still be stopping: with cut ($4) they are recorded
 * interrupted (their leader, if alive, still records their end and exit
 * status: finished_at stays for it); without, the newest is only told. */
#define LAST_SQL \
	"WITH cut AS (UPDATE %1$s.runs SET outcome = 'interrupted'" \
	" WHERE lock_key = $1::bigint AND job = $2::text AND outcome = 'running'" \
	" AND fencing_token < $3::bigint AND $4::boolean RETURNING tick)" \
	" SELECT (SELECT (extract(epoch FROM max(tick)) * 1000)::bigint" \
	" FROM %1$s.runs WHERE lock_key = $1::bigint AND job = $2::text)," \
	" (SELECT (extract(epoch FROM max(tick)) * 1000)::bigint FROM cut)," \
	" (SELECT (extract(epoch FROM max(finished_at)) * 1000)::bigint" \
	" FROM %1$s.runs WHERE lock_key = $1::bigint AND job = $2::text" \
	" AND outcome = 'succeeded')," \
	" (SELECT (extract(epoch FROM max(tick)) * 1000)::bigint FROM %1$s.runs" \
	" WHERE lock_key = $1::bigint AND job = $2::text AND outcome = 'running'" \
	" AND fencing_token < $3::bigint AND NOT $4::boolean), " SQL_NOW

#define FINISH_SQL \
	"UPDATE %1$s.runs SET outcome = CASE WHEN outcome = 'running'" \
	" THEN $3::text ELSE outcome END, exit_status = $4::int," \
	" finished_at = clock_timestamp() WHERE run_id = $1::bigint" \
	" AND fencing_token = $2::bigint AND finished_at IS NULL"

#define PRUNE_SQL \
	"DELETE FROM %1$s.runs WHERE run_id IN (SELECT run_id FROM %1$s.runs" \
	" WHERE lock_key = $1::bigint AND outcome <> 'running'" \
	" AND tick < clock_timestamp() - $2::bigint * interval '1 millisecond'" \
	" ORDER BY tick LIMIT 100)"

/* Each statement with the schema's name in it; NULL when out of memory. */
#define WITH_SCHEMA(sql, schema) \
	({ char *s_ = NULL; asprintf(&s_, sql, schema) < 0 ? NULL : s_; })

static double monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct ledger *ledger_new(struct lease *session, const char *schema)
{
	struct ledger *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->session = session;
	snprintf(l->schema, sizeof(l->schema), "%s", schema);
	l->sql_ensure = ledger_sql_check(schema);
	l->sql_create = ledger_sql_init(schema);
	l->sql_claim = WITH_SCHEMA(CLAIM_SQL, schema);
	l->sql_last = WITH_SCHEMA(LAST_SQL, schema);
	l->sql_finish = WITH_SCHEMA(FINISH_SQL, schema);
	l->sql_prune = WITH_SCHEMA(PRUNE_SQL, schema);
	if (!l->sql_ensure || !l->sql_create || !l->sql_claim || !l->sql_last ||
	    !l->sql_finish || !l->sql_prune) {
		ledger_free(l);
		return NULL;
	}
	return l;
}

void ledger_free(struct ledger *l)
{
	struct request *r, *next;

	if (!l)
		return;
	for (r = l->head; r; r = next) {
		next = r->next;
		free(r);
	}
	free(l->sql_ensure);
	free(l->sql_create);
	free(l->sql_claim);
	free(l->sql_last);
	free(l->sql_finish);
	free(l->sql_prune);
	free(l);
}

static void pump(struct ledger *l);

static int64_t int_of(const char *v, int64_t none)
{
	return v ? strtoll(v, NULL, 10) : none;
}

static bool bool_of(const char *v)
{
	return v && v[0] == 't';
}

/* The answer's values, by kind; false when its shape is not the one sent
 * for. */
static bool parse(struct request *r, const struct lease_sql_answer *a,
		  struct ledger_answer *out)
{
	const char *const *v = a->values;
	const int want[] = { [REQ_ENSURE] = 3, [REQ_CREATE] = -1, [REQ_CLOCK] = 1,
		       [REQ_CLAIM] = 5, [REQ_LAST] = 5, [REQ_FINISH] = -1,
		       [REQ_PRUNE] = -1 };

	if (want[r->kind] < 0)
		return true;
	if (!v || a->nrows != 1 || a->ncols != want[r->kind])
		return false;
	out->db_now = int_of(v[a->ncols - 1], 0);
	switch (r->kind) {
	case REQ_ENSURE:
		out->missing = !bool_of(v[0]);
		r->may_create = bool_of(v[1]);
		return true;
	case REQ_CLAIM:
		out->run_id = int_of(v[0], 0);
		out->holder = bool_of(v[1]);
		out->newest = bool_of(v[2]);
		out->early = bool_of(v[3]);
		return true;
	case REQ_LAST:
		out->last_tick = int_of(v[0], INT64_MIN);
		out->interrupted = int_of(v[1], INT64_MIN);
		out->last_success = int_of(v[2], 0);
		out->older_running = int_of(v[3], INT64_MIN);
		return true;
	case REQ_CLOCK:
	case REQ_CREATE:
	case REQ_FINISH:
	case REQ_PRUNE:
		return true;
	}
	return false;
}

/* A missing ledger found by ENSURE is made at once when the role may,
 * then ENSURE is asked again: its answer (the server's clock too) is the
 * one the asker hears. */
static bool create_instead(struct ledger *l, struct request *r,
			   const struct ledger_answer *out)
{
	if (r->kind == REQ_CREATE && out->ok) {
		r->kind = REQ_ENSURE;
		r->sql = l->sql_ensure;
		r->may_create = false;
		return true;
	}
	if (r->kind != REQ_ENSURE || !out->ok || !out->missing || !r->may_create)
		return false;
	log_notice("creating the ledger in schema %s on first use", l->schema);
	r->kind = REQ_CREATE;
	r->sql = l->sql_create;
	r->nparams = 0;
	return true;
}

static void answered_cb(void *arg, const struct lease_sql_answer *a,
			const char *sqlstate, const char *error)
{
	struct ledger *l = arg;
	struct request *r = l->head;
	struct ledger_answer out = { .last_tick = INT64_MIN,
				     .interrupted = INT64_MIN,
				     .older_running = INT64_MIN };

	l->in_flight = false;
	out.rtt = monotonic() - l->sent_at;
	if (error) {
		out.lost = sqlstate == NULL;
		snprintf(out.error, sizeof(out.error), "%s", error);
	} else if (!parse(r, a, &out)) {
		snprintf(out.error, sizeof(out.error), "unexpected answer from the ledger");
	} else {
		out.ok = true;
	}
	/* kept, or turned into the creation: sent again */
	if ((r->kind == REQ_FINISH && out.lost) || create_instead(l, r, &out)) {
		pump(l);
		return;
	}
	if (r->kind == REQ_FINISH && !out.ok)
		log_warning("cannot record a run's end in the ledger: %s", out.error);
	/* off the queue before its asker hears: the asker may ask again */
	l->head = r->next;
	if (!l->head)
		l->tail = NULL;
	if (r->fn)
		r->fn(r->arg, &out);
	free(r);
	pump(l);
}

/* Sends the oldest statement unless one is in flight; without a session
 * it waits for ledger_session_ready. */
static void pump(struct ledger *l)
{
	struct request *r = l->head;
	const char *params[LEASE_QUERY_PARAMS];

	if (l->in_flight || !r)
		return;
	for (int i = 0; i < r->nparams; i++)
		params[i] = (r->null_param & (1u << i)) ? NULL : r->params[i];
	if (!lease_query(l->session, r->sql, r->nparams, params, answered_cb, l))
		return;
	l->in_flight = true;
	l->sent_at = monotonic();
}

void ledger_session_ready(struct ledger *l)
{
	pump(l);
}

bool ledger_idle(const struct ledger *l)
{
	return l->head == NULL;
}

static struct request *request(enum ledger_kind kind, const char *sql,
			       ledger_fn fn, void *arg)
{
	struct request *r = calloc(1, sizeof(*r));

	if (!r) {
		log_error("out of memory for a ledger statement");
		return NULL;
	}
	r->kind = kind;
	r->sql = sql;
	r->fn = fn;
	r->arg = arg;
	return r;
}

/* Queued in order; one that finds no session waits for the next (its
 * asker is told nothing until then). */
static void submit(struct ledger *l, struct request *r)
{
	if (!r)
		return;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	pump(l);
}

static void param(struct request *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void param(struct request *r, const char *fmt, ...)
{
	va_list ap;

	if (!r || r->nparams >= LEASE_QUERY_PARAMS)
		return;
	va_start(ap, fmt);
	vsnprintf(r->params[r->nparams++], sizeof(r->params[0]), fmt, ap);
	va_end(ap);
}

void ledger_ensure(struct ledger *l, ledger_fn fn, void *arg)
{
	submit(l, request(REQ_ENSURE, l->sql_ensure, fn, arg));
}

void ledger_clock(struct ledger *l, ledger_fn fn, void *arg)
{
	submit(l, request(REQ_CLOCK, sql_clock, fn, arg));
}

void ledger_claim(struct ledger *l, const struct ledger_term *t, const char *job,
		  int64_t tick, const char *outcome, bool rerun, ledger_fn fn,
		  void *arg)
{
	struct request *r = request(REQ_CLAIM, l->sql_claim, fn, arg);

	param(r, "%" PRId64, t->lock_key);
	param(r, "%s", job);
	param(r, "%" PRId64, tick);
	param(r, "%s", t->node_id);
	param(r, "%" PRIu64, t->fencing_token);
	param(r, "%d", t->lock_pid);
	param(r, "%s", outcome);
	param(r, "%s", rerun ? "true" : "false");
	submit(l, r);
}

void ledger_last(struct ledger *l, const struct ledger_term *t, const char *job,
		 bool cut, ledger_fn fn, void *arg)
{
	struct request *r = request(REQ_LAST, l->sql_last, fn, arg);

	param(r, "%" PRId64, t->lock_key);
	param(r, "%s", job);
	param(r, "%" PRIu64, t->fencing_token);
	param(r, "%s", cut ? "true" : "false");
	submit(l, r);
}

void ledger_finish(struct ledger *l, uint64_t fencing_token, int64_t run_id,
		   const char *outcome, int exit_status)
{
	struct request *r = request(REQ_FINISH, l->sql_finish, NULL, NULL);

	param(r, "%" PRId64, run_id);
	param(r, "%" PRIu64, fencing_token);
	param(r, "%s", outcome);
	param(r, "%d", exit_status);
	if (r && exit_status < 0)
		r->null_param |= 1u << 3;
	submit(l, r);
}

void ledger_prune(struct ledger *l, int64_t lock_key, int64_t keep_ms)
{
	struct request *r = request(REQ_PRUNE, l->sql_prune, NULL, NULL);

	param(r, "%" PRId64, lock_key);
	param(r, "%" PRId64, keep_ms);
	submit(l, r);
}
