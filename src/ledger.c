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
	int n_flight;            /* requests the statement in flight answers */
	double sent_at;
	/* the statements, with the schema in them */
	char *sql_ensure, *sql_create, *sql_claim, *sql_last, *sql_finish,
	     *sql_prune;
};

#define SQL_NOW "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

static const char sql_clock[] = "SELECT " SQL_NOW;

/* The lock is the bigint form: objsubid 1, classid and objid its halves
 * (lease_sql.h). The claim's parts see one snapshot; the term's upsert
 * locks the lock's row in terms, so two claims for one lock (a frozen old
 * leader that woke up, the new one) are taken one at a time, and the older
 * token loses. The ticks come as arrays ($2 jobs, $3 ticks, $7 outcomes,
 * $8 reruns): the claims that wait together, jobs that share a tick, are
 * one statement and one commit; an answer row each, in their order. */
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
	" req AS (SELECT q.job, to_timestamp(q.tick / 1000.0) AS at, q.outcome," \
	" q.rerun, q.ord FROM unnest($2::text[], $3::bigint[], $7::text[]," \
	" $8::boolean[]) WITH ORDINALITY AS q (job, tick, outcome, rerun, ord))," \
	" run AS (INSERT INTO %1$s.runs AS r (lock_key, job, tick, node_id," \
	" fencing_token, outcome, started_at, finished_at)" \
	" SELECT $1::bigint, q.job, q.at, $4::text, $5::bigint, q.outcome," \
	" CASE WHEN q.outcome = 'running' THEN clock_timestamp() END," \
	" CASE WHEN q.outcome <> 'running' THEN clock_timestamp() END" \
	" FROM req q, term WHERE q.at <= clock_timestamp()" \
	" ON CONFLICT (lock_key, job, tick) DO UPDATE SET node_id = EXCLUDED.node_id," \
	" fencing_token = EXCLUDED.fencing_token, outcome = EXCLUDED.outcome," \
	" started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at," \
	" exit_status = NULL WHERE r.outcome = 'interrupted'" \
	" AND r.fencing_token < EXCLUDED.fencing_token AND EXISTS (SELECT FROM req q" \
	" WHERE q.job = EXCLUDED.job AND q.at = EXCLUDED.tick AND q.rerun)" \
	" RETURNING run_id, job, tick)" \
	" SELECT r.run_id, EXISTS (SELECT FROM holder), EXISTS (SELECT FROM term)," \
	" q.at > clock_timestamp(), " SQL_NOW \
	" FROM req q LEFT JOIN run r ON r.job = q.job AND r.tick = q.at ORDER BY q.ord"

/* Claims sent as one statement at most; each answer row is 5 values. */
#define CLAIM_BATCH 64
_Static_assert(CLAIM_BATCH * 5 <= LEASE_ANSWER_MAX, "a batch's answer fits");

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

/* One row of an answer, by kind: v its ncols values. */
static void parse_row(struct request *r, const char *const *v, int ncols,
		      struct ledger_answer *out)
{
	out->db_now = int_of(v[ncols - 1], 0);
	switch (r->kind) {
	case REQ_ENSURE: {
		enum ledger_state st = ledger_sql_parse_check(v);

		out->missing = st == LEDGER_MISSING;
		out->denied = st == LEDGER_NO_ACCESS || st == LEDGER_READ_ONLY;
		r->may_create = bool_of(v[LEDGER_CHECK_MAY_CREATE]);
		return;
	}
	case REQ_CLAIM:
		out->run_id = int_of(v[0], 0);
		out->holder = bool_of(v[1]);
		out->newest = bool_of(v[2]);
		out->early = bool_of(v[3]);
		return;
	case REQ_LAST:
		out->last_tick = int_of(v[0], INT64_MIN);
		out->interrupted = int_of(v[1], INT64_MIN);
		out->last_success = int_of(v[2], 0);
		out->older_running = int_of(v[3], INT64_MIN);
		return;
	case REQ_CLOCK:
	case REQ_CREATE:
	case REQ_FINISH:
	case REQ_PRUNE:
		return;
	}
}

/* Whether the answer has the shape sent for: a row for each of the n
 * requests in flight (one, but for a batch of claims), of the kind's
 * columns; statements that return nothing are not looked at. */
static bool shape_ok(const struct request *r, const struct lease_sql_answer *a, int n)
{
	const int want[] = { [REQ_ENSURE] = LEDGER_CHECK_NCOLS, [REQ_CREATE] = -1, [REQ_CLOCK] = 1,
		       [REQ_CLAIM] = 5, [REQ_LAST] = 5, [REQ_FINISH] = -1,
		       [REQ_PRUNE] = -1 };

	return want[r->kind] < 0 ||
	       (a->values && a->nrows == n && a->ncols == want[r->kind]);
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

/* The request at the head, answered by row i of a (or by the error): off
 * the queue before its asker hears, since the asker may ask again. */
static void answer_head(struct ledger *l, const struct lease_sql_answer *a, int i,
			const char *sqlstate, const char *error, double rtt)
{
	struct request *r = l->head;
	struct ledger_answer out = { .last_tick = INT64_MIN,
				     .interrupted = INT64_MIN,
				     .older_running = INT64_MIN, .rtt = rtt };

	if (error) {
		out.lost = sqlstate == NULL;
		snprintf(out.error, sizeof(out.error), "%s", error);
	} else {
		out.ok = true;
		if (a->values && a->ncols > 0 && a->nrows > i)
			parse_row(r, a->values + (size_t)i * (size_t)a->ncols, a->ncols, &out);
	}
	/* kept, or turned into the creation: sent again */
	if ((r->kind == REQ_FINISH && out.lost) || create_instead(l, r, &out))
		return;
	if (r->kind == REQ_FINISH && !out.ok)
		log_warning("cannot record a run's end in the ledger: %s", out.error);
	l->head = r->next;
	if (!l->head)
		l->tail = NULL;
	if (r->fn)
		r->fn(r->arg, &out);
	free(r);
}

static void answered_cb(void *arg, const struct lease_sql_answer *a,
			const char *sqlstate, const char *error)
{
	struct ledger *l = arg;
	int n = l->n_flight;
	double rtt = monotonic() - l->sent_at;

	l->n_flight = 0;
	if (!error && !shape_ok(l->head, a, n))
		error = "unexpected answer from the ledger";
	for (int i = 0; i < n && l->head; i++) {
		struct request *head = l->head;

		answer_head(l, a, i, sqlstate, error, rtt);
		if (l->head == head)
			break; /* kept, or a creation to send: the rest wait */
	}
	pump(l);
}

/* Appends one array literal's element, quoted: job names and outcomes
 * hold no quote or backslash (config checked the names). */
static void array_add(FILE *f, int i, const char *value, bool quote)
{
	fprintf(f, "%s%s%s%s", i ? "," : "{", quote ? "\"" : "", value, quote ? "\"" : "");
}

/* The claims at the head that share its term, at most CLAIM_BATCH: their
 * jobs, ticks, outcomes and reruns as array literals in arrays[]. */
static int gather_claims(struct ledger *l, char *arrays[4])
{
	FILE *f[4];
	size_t len[4];
	int n = 0;
	const struct request *h = l->head;

	for (int k = 0; k < 4; k++)
		if (!(f[k] = open_memstream(&arrays[k], &len[k])))
			return -1;
	for (const struct request *r = h; r && r->kind == REQ_CLAIM && n < CLAIM_BATCH &&
	     !strcmp(r->params[0], h->params[0]) && !strcmp(r->params[3], h->params[3]) &&
	     !strcmp(r->params[4], h->params[4]) && !strcmp(r->params[5], h->params[5]);
	     r = r->next, n++) {
		array_add(f[0], n, r->params[1], true);
		array_add(f[1], n, r->params[2], false);
		array_add(f[2], n, r->params[6], true);
		array_add(f[3], n, r->params[7], false);
	}
	for (int k = 0; k < 4; k++) {
		fputc('}', f[k]);
		fclose(f[k]);
	}
	return n;
}

/* Sends the claims at the head as one statement; false when it did not go. */
static bool send_claims(struct ledger *l)
{
	const struct request *h = l->head;
	char *arrays[4] = { NULL, NULL, NULL, NULL };
	const char *params[8];
	int n = gather_claims(l, arrays);
	bool sent = false;

	if (n > 0) {
		params[0] = h->params[0];
		params[1] = arrays[0];
		params[2] = arrays[1];
		params[3] = h->params[3];
		params[4] = h->params[4];
		params[5] = h->params[5];
		params[6] = arrays[2];
		params[7] = arrays[3];
		sent = lease_query(l->session, h->sql, 8, params, answered_cb, l);
		l->n_flight = sent ? n : 0;
	}
	for (int k = 0; k < 4; k++)
		free(arrays[k]);
	return sent;
}

/* Sends the oldest statement unless one is in flight; without a session
 * it waits for ledger_session_ready. */
static void pump(struct ledger *l)
{
	struct request *r = l->head;
	const char *params[LEASE_QUERY_PARAMS];

	if (l->n_flight || !r)
		return;
	if (r->kind == REQ_CLAIM) {
		if (send_claims(l))
			l->sent_at = monotonic();
		return;
	}
	for (int i = 0; i < r->nparams; i++)
		params[i] = (r->null_param & (1u << i)) ? NULL : r->params[i];
	if (!lease_query(l->session, r->sql, r->nparams, params, answered_cb, l))
		return;
	l->n_flight = 1;
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
