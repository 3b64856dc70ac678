/* ledger.c: the run records of DESIGN 10 on the fence session: one
 * statement at a time, in the order asked, and a run's end kept until the
 * server has it. */
#include "ledger.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h"
#include "lease_sql.h"
#include "ledger_sql.h"
#include "log.h"

#define SQLSTATE_UNDEFINED_TABLE "42P01"
#define SQLSTATE_INVALID_SCHEMA "3F000"

/* The creation (under LEDGER_SQL_MAX, test_ledger_sql) goes through
 * lease_query, which refuses a statement of LEASE_QUERY_MAX or more: the
 * ledger would never be made, and its queue would wait for it forever. */
_Static_assert(LEDGER_SQL_MAX <= LEASE_QUERY_MAX, "the ledger's creation must fit lease_query");

enum ledger_kind { REQ_ENSURE, REQ_CREATE, REQ_CLAIM, REQ_LAST,
		   REQ_FINISH, REQ_PRUNE, REQ_SCHEMA, REQ_PROBE, REQ_CONTROLS,
		   REQ_PRIORITY, REQ_HANDED, REQ_ON_FAILURE, REQ_ANNOUNCE, REQ_TRIGGERS,
		   REQ_LISTEN };

struct request {
	struct request *next;
	enum ledger_kind kind;
	const char *sql;         /* one of the ledger's texts */
	int nparams;
	char params[LEASE_QUERY_PARAMS][96];
	ledger_fn fn;
	void *arg;
	bool may_create;         /* ENSURE: the role may create the ledger */
	enum ledger_kind then;   /* ENSURE: what the ledger was ensured for
				  * (REQ_ENSURE: itself) */
	int then_nparams;
	bool there;              /* SCHEMA: the schema is there, usable;
				  * PROBE: the controls are there, readable */
	unsigned null_param;     /* bit i: parameter i is NULL */
	char *blob;              /* the last parameter instead of params[], when
				  * set (a run's output, as bytea's hex) */
	const char *schema;      /* the ledger's, for its lines */
};

struct ledger {
	struct lease *session;
	char schema[64];
	struct request *head, *tail;
	int n_flight;            /* requests the statement in flight answers */
	double sent_at;
	/* the statements, with the schema in them */
	char *sql_ensure, *sql_create, *sql_claim, *sql_last, *sql_finish,
	     *sql_prune, *sql_schema, *sql_probe, *sql_controls, *sql_priority,
	     *sql_handed, *sql_on_failure, *sql_announce, *sql_triggers;
	bool controls_there;     /* the probe found the controls readable */
	bool ensured;            /* the check found the ledger there, trusted */
	struct ledger_controls controls; /* the last read's */
	struct ledger_triggers triggers; /* the last read's */
	bool listen;             /* LISTEN for requests to run now (DESIGN 13) */
	int listen_pid;          /* the session (backend pid) it was sent on */
};
_Static_assert(LEDGER_TRIGGERS_MAX == LEDGER_SQL_TRIGGERS_ROWS, "a read's rows fit");



/* Claims sent as one statement at most (ledger_sql_claim); each answer
 * row is 5 values. */
#define CLAIM_BATCH 64
_Static_assert(CLAIM_BATCH * 5 <= LEASE_ANSWER_MAX, "a batch's answer fits");




/* Every statement's text was made (none out of memory, the schema good). */
static bool all_made(const struct ledger *l)
{
	const char *const texts[] = {
		l->sql_ensure, l->sql_create, l->sql_claim, l->sql_last, l->sql_finish,
		l->sql_prune, l->sql_schema, l->sql_probe, l->sql_controls,
		l->sql_priority, l->sql_handed, l->sql_on_failure, l->sql_announce,
		l->sql_triggers,
	};

	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (!texts[i])
			return false;
	return true;
}

struct ledger *ledger_new(struct lease *session, const char *schema, const char *owner)
{
	struct ledger *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->session = session;
	snprintf(l->schema, sizeof(l->schema), "%s", schema);
	l->sql_ensure = ledger_sql_check(schema, owner);
	l->sql_create = ledger_sql_init(schema);
	l->sql_claim = ledger_sql_claim(schema);
	l->sql_last = ledger_sql_last(schema);
	l->sql_finish = ledger_sql_finish(schema);
	l->sql_prune = ledger_sql_prune(schema);
	l->sql_schema = ledger_sql_schema_probe(schema);
	l->sql_probe = ledger_sql_controls_probe(schema, owner);
	l->sql_controls = ledger_sql_controls_read(schema);
	l->sql_priority = ledger_sql_priority_ask(schema);
	l->sql_handed = ledger_sql_handed(schema);
	l->sql_on_failure = ledger_sql_on_failure(schema);
	l->sql_announce = ledger_sql_announce(schema);
	l->sql_triggers = ledger_sql_triggers(schema);
	if (!all_made(l)) {
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
		free(r->blob);
		free(r);
	}
	free(l->sql_ensure);
	free(l->sql_create);
	free(l->sql_claim);
	free(l->sql_last);
	free(l->sql_finish);
	free(l->sql_prune);
	free(l->sql_schema);
	free(l->sql_probe);
	free(l->sql_controls);
	free(l->sql_priority);
	free(l->sql_handed);
	free(l->sql_on_failure);
	free(l->sql_announce);
	free(l->sql_triggers);
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

/* A ledger owned by a role not trusted (what: the check's line about it,
 * or NULL when none is): refused, the line in the answer's error. */
static void refused_if(const struct request *r, const char *what,
		       struct ledger_answer *out)
{
	out->untrusted = what != NULL;
	if (what)
		ledger_sql_untrusted_line(out->error, sizeof(out->error), what, r->schema);
}

static void parse_check(struct request *r, const char *const *v, struct ledger_answer *out)
{
	enum ledger_state st = ledger_sql_parse_check(v);

	out->missing = st == LEDGER_MISSING;
	out->denied = st == LEDGER_NO_ACCESS || st == LEDGER_READ_ONLY;
	r->may_create = bool_of(v[LEDGER_CHECK_MAY_CREATE]);
	refused_if(r, st == LEDGER_UNTRUSTED ? v[LEDGER_CHECK_UNTRUSTED] : NULL, out);
}

static void copy(char *dst, size_t len, const char *v)
{
	snprintf(dst, len, "%s", v ? v : "");
}

static void parse_last(const char *const *v, struct ledger_answer *out)
{
	out->last_tick = int_of(v[LEDGER_LAST_TICK], INT64_MIN);
	out->interrupted = int_of(v[LEDGER_LAST_CUT], INT64_MIN);
	out->last_success = int_of(v[LEDGER_LAST_SUCCESS], 0);
	out->older_running = int_of(v[LEDGER_LAST_OLDER], INT64_MIN);
	out->interrupted_attempt = (int)int_of(v[LEDGER_LAST_CUT_ATTEMPT], 1);
	out->last_run_id = int_of(v[LEDGER_LAST_RUN_ID], 0);
	out->last_attempt = (int)int_of(v[LEDGER_LAST_ATTEMPT], 1);
	out->last_exit = (int)int_of(v[LEDGER_LAST_EXIT], -1);
	copy(out->last_outcome, sizeof(out->last_outcome), v[LEDGER_LAST_OUTCOME]);
	out->last_ended = int_of(v[LEDGER_LAST_ENDED], INT64_MIN);
	out->owed_run_id = int_of(v[LEDGER_LAST_OWED_RUN], 0);
	out->owed_tick = int_of(v[LEDGER_LAST_OWED_TICK], 0);
	out->owed_attempt = (int)int_of(v[LEDGER_LAST_OWED_ATTEMPT], 1);
	out->owed_exit = (int)int_of(v[LEDGER_LAST_OWED_EXIT], -1);
	copy(out->owed_outcome, sizeof(out->owed_outcome), v[LEDGER_LAST_OWED_OUTCOME]);
}

/* One row of an answer, by kind: v its ncols values. */
static void parse_row(struct request *r, const char *const *v, int ncols,
		      struct ledger_answer *out)
{
	enum ledger_kind k = r->kind;

	out->db_now = int_of(v[ncols - 1], 0);
	/* the other kinds' rows (the controls', the triggers') are parsed
	 * whole elsewhere, or they have none */
	if (k == REQ_ENSURE) {
		parse_check(r, v, out);
	} else if (k == REQ_CLAIM) {
		out->run_id = int_of(v[0], 0);
		out->holder = bool_of(v[1]);
		out->newest = bool_of(v[2]);
		out->early = bool_of(v[3]);
	} else if (k == REQ_LAST) {
		parse_last(v, out);
	} else if (k == REQ_ON_FAILURE) {
		out->run_id = int_of(v[0], 0);
		out->holder = bool_of(v[1]);
	} else if (k == REQ_SCHEMA || k == REQ_PROBE) {
		r->there = bool_of(v[0]);
		if (k == REQ_PROBE)
			refused_if(r, v[1], out);
	} else if (k == REQ_PRIORITY) {
		snprintf(out->leader_node, sizeof(out->leader_node), "%s", v[0] ? v[0] : "");
		out->leader_priority = (int)int_of(v[1], -1);
		out->asked = bool_of(v[2]);
	} else if (k == REQ_ANNOUNCE) {
		out->holder = bool_of(v[0]);
	}
}

/* An error that says the ledger's schema or a table of it is not there. */
static bool gone(const char *sqlstate)
{
	return sqlstate && (!strcmp(sqlstate, SQLSTATE_UNDEFINED_TABLE) ||
			    !strcmp(sqlstate, SQLSTATE_INVALID_SCHEMA));
}

/* Every row of a read of the requests to run now, into the ledger's copy. */
static void parse_triggers(struct ledger *l, const struct lease_sql_answer *a,
			   struct ledger_answer *out)
{
	struct ledger_triggers *g = &l->triggers;

	g->n = 0;
	for (int i = 0; a->values && i < a->nrows && g->n < LEDGER_TRIGGERS_MAX; i++) {
		const char *const *v = a->values + (size_t)i * (size_t)a->ncols;
		struct ledger_trigger *t = &g->t[g->n++];

		t->id = int_of(v[0], 0);
		copy(t->job, sizeof(t->job), v[1]);
		t->tick = int_of(v[2], 0);
		copy(t->asked_by, sizeof(t->asked_by), v[3]);
		out->db_now = int_of(v[4], 0);
	}
	out->triggers = g;
}

/* Every row of a controls read, into the ledger's copy. */
static void parse_controls(struct ledger *l, const struct lease_sql_answer *a)
{
	struct ledger_controls *c = &l->controls;

	c->readable = true;
	c->n = 0;
	for (int i = 0; a->values && i < a->nrows && c->n < LEDGER_CONTROLS_MAX; i++) {
		const char *const *v = a->values + (size_t)i * (size_t)a->ncols;
		struct ledger_control *k = &c->c[c->n++];

		k->pause = v[LEDGER_CONTROL_KIND] && !strcmp(v[LEDGER_CONTROL_KIND], "pause");
		k->resumed = v[LEDGER_CONTROL_KIND] && !strcmp(v[LEDGER_CONTROL_KIND], "resumed");
		copy(k->job, sizeof(k->job), v[LEDGER_CONTROL_JOB]);
		copy(k->target, sizeof(k->target), v[LEDGER_CONTROL_TARGET]);
		copy(k->leader, sizeof(k->leader), v[LEDGER_CONTROL_LEADER]);
		k->left_ms = int_of(v[LEDGER_CONTROL_LEFT_MS], INT64_MAX);
		copy(k->asked_by, sizeof(k->asked_by), v[LEDGER_CONTROL_ASKED_BY]);
		copy(k->asked_at, sizeof(k->asked_at), v[LEDGER_CONTROL_ASKED_AT]);
	}
}

/* Whether the answer has the shape sent for: a row for each of the n
 * requests in flight (one, but for a batch of claims), of the kind's
 * columns; statements that return nothing are not looked at. */
static bool shape_ok(const struct request *r, const struct lease_sql_answer *a, int n)
{
	const int want[] = { [REQ_ENSURE] = LEDGER_CHECK_NCOLS, [REQ_CREATE] = -1,
		       [REQ_CLAIM] = 5, [REQ_LAST] = LEDGER_LAST_NCOLS, [REQ_FINISH] = -1,
		       [REQ_PRUNE] = -1, [REQ_SCHEMA] = 1, [REQ_PROBE] = 2,
		       [REQ_CONTROLS] = LEDGER_CONTROL_NCOLS, [REQ_PRIORITY] = 3,
		       [REQ_HANDED] = -1, [REQ_ON_FAILURE] = 3, [REQ_ANNOUNCE] = 2,
		       [REQ_TRIGGERS] = 5, [REQ_LISTEN] = -1 };

	if (r->kind == REQ_CONTROLS || r->kind == REQ_TRIGGERS) /* any number of rows */
		return a->nrows == 0 || (a->values && a->ncols == want[r->kind]);
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
	if (r->kind == REQ_ENSURE && out->ok && !out->missing && !out->denied &&
	    !out->untrusted) {
		l->ensured = true;
		if (r->then != REQ_ENSURE) { /* ensured for it: now it goes */
			r->kind = r->then;
			r->sql = r->then == REQ_PRIORITY ? l->sql_priority : r->sql;
			r->nparams = r->then_nparams;
			return true;
		}
	}
	if (r->kind != REQ_ENSURE || !out->ok || !out->missing || !r->may_create)
		return false;
	log_notice("creating the ledger in schema %s on first use", l->schema);
	r->kind = REQ_CREATE;
	r->sql = l->sql_create;
	r->nparams = 0;
	return true;
}

/* A controls read: once the schema's probe found it, the table's probe;
 * once that found the table, the read itself (each sent again at once); an
 * error that is not the session's (the table gone, the privilege revoked)
 * probes again next time. The answer has the rows. */
static bool controls_instead(struct ledger *l, struct request *r,
			     struct ledger_answer *out, const struct lease_sql_answer *a)
{
	if (r->kind == REQ_SCHEMA && out->ok && r->there) {
		r->kind = REQ_PROBE;
		r->sql = l->sql_probe;
		return true;
	}
	if (r->kind == REQ_PROBE && out->untrusted)
		out->ok = r->there = false; /* refused, never read */
	if (r->kind == REQ_PROBE && out->ok && r->there) {
		l->controls_there = true;
		r->kind = REQ_CONTROLS;
		r->sql = l->sql_controls;
		r->nparams = 1; /* the key, kept in params[0] */
		return true;
	}
	if (r->kind != REQ_SCHEMA && r->kind != REQ_PROBE && r->kind != REQ_CONTROLS)
		return false;
	l->controls.readable = false;
	l->controls.n = 0;
	if (r->kind == REQ_CONTROLS && out->ok)
		parse_controls(l, a);
	else if (!out->lost)
		l->controls_there = false;
	out->controls = &l->controls;
	return false;
}

/* An answer to r with nothing in it yet; a claim's names its tick (an
 * error answers each claim of a batch). */
static struct ledger_answer blank_answer(const struct request *r, double rtt)
{
	struct ledger_answer out = { .last_tick = INT64_MIN,
				     .interrupted = INT64_MIN,
				     .older_running = INT64_MIN, .rtt = rtt,
				     .last_ended = INT64_MIN, .last_exit = -1,
				     .owed_exit = -1 };

	if (r->kind == REQ_CLAIM)
		out.tick = strtoll(r->params[2], NULL, 10);
	return out;
}

/* What nobody is told of (a run's end, an announcement) and failed: one
 * warning. */
static void warn_unwritten(const struct request *r, const struct ledger_answer *out)
{
	if (r->kind == REQ_FINISH && !out->ok)
		log_warning("cannot record a run's end in the ledger: %s", out->error);
	else if (r->kind == REQ_ANNOUNCE && !out->ok && !out->lost)
		log_warning("cannot announce job %s in the ledger: %s", r->params[1],
			    out->error);
}

/* The request at the head, answered by row i of a (or by the error) in
 * out: off the queue, returned for its asker to hear; NULL when it is
 * kept, or turned into the creation or the read, to be sent again. */
static struct request *answer_head(struct ledger *l, const struct lease_sql_answer *a,
				   int i, const char *sqlstate, const char *error,
				   double rtt, struct ledger_answer *out)
{
	struct request *r = l->head;

	*out = blank_answer(r, rtt);
	if (error) {
		out->lost = sqlstate == NULL;
		/* dropped while in use (DESIGN 10): ensured again before the
		 * next priority ask; the asker may make it again */
		out->missing = gone(sqlstate);
		l->ensured &= !out->missing;
		snprintf(out->error, sizeof(out->error), "%s", error);
	} else {
		out->ok = true;
		if (r->kind == REQ_TRIGGERS)
			parse_triggers(l, a, out);
		else if (a->values && a->ncols > 0 && a->nrows > i)
			parse_row(r, a->values + (size_t)i * (size_t)a->ncols, a->ncols, out);
	}
	/* a tick recorded not run (skipped, missed, paused) is kept as a
	 * finish is, or it would be lost with the session */
	if (((r->kind == REQ_FINISH || (r->kind == REQ_CLAIM &&
					 strcmp(r->params[6], "running"))) && out->lost) ||
	    create_instead(l, r, out) ||
	    controls_instead(l, r, out, a))
		return NULL;
	warn_unwritten(r, out);
	l->head = r->next;
	if (!l->head)
		l->tail = NULL;
	return r;
}

/* Every request the statement answered comes off the queue before any of
 * their askers hears: what an asker submits may go out at once, never a
 * request of the batch again (it would be answered twice). */
static void answered_cb(void *arg, const struct lease_sql_answer *a,
			const char *sqlstate, const char *error)
{
	struct ledger *l = arg;
	int n = l->n_flight, k = 0;
	double rtt = clocks_monotonic() - l->sent_at;
	struct request *told[CLAIM_BATCH];
	struct ledger_answer out[CLAIM_BATCH]; /* a lost session may tell its
						* answers from inside an asker */

	if (!error && !shape_ok(l->head, a, n))
		error = "unexpected answer from the ledger";
	for (int i = 0; i < n && i < CLAIM_BATCH && l->head; i++) {
		struct request *r = answer_head(l, a, i, sqlstate, error, rtt, &out[k]);

		if (!r)
			break; /* kept, or a creation to send: the rest wait */
		told[k++] = r;
	}
	l->n_flight = 0;
	for (int i = 0; i < k; i++) {
		if (told[i]->fn)
			told[i]->fn(told[i]->arg, &out[i]);
		free(told[i]->blob);
		free(told[i]);
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
 * jobs, ticks, outcomes, reruns, attempts and requests to run now as
 * array literals in arrays[]. */
#define CLAIM_ARRAYS 6
static int gather_claims(struct ledger *l, char *arrays[CLAIM_ARRAYS])
{
	FILE *f[CLAIM_ARRAYS];
	size_t len[CLAIM_ARRAYS];
	int n = 0;
	const struct request *h = l->head;

	for (int k = 0; k < CLAIM_ARRAYS; k++)
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
		array_add(f[4], n, r->params[8], false);
		array_add(f[5], n, r->params[9], false);
	}
	for (int k = 0; k < CLAIM_ARRAYS; k++) {
		fputc('}', f[k]);
		fclose(f[k]);
	}
	return n;
}

/* Sends the claims at the head as one statement; false when it did not go. */
static bool send_claims(struct ledger *l)
{
	const struct request *h = l->head;
	char *arrays[CLAIM_ARRAYS] = { NULL, NULL, NULL, NULL, NULL, NULL };
	const char *params[10];
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
		params[8] = arrays[4];
		params[9] = arrays[5];
		sent = lease_query(l->session, h->sql, 10, params, answered_cb, l);
		l->n_flight = sent ? n : 0;
	}
	for (int k = 0; k < CLAIM_ARRAYS; k++)
		free(arrays[k]);
	return sent;
}

static struct request *request(enum ledger_kind kind, const char *sql,
			       ledger_fn fn, void *arg);

/* A session the LISTEN was not sent on (a new one) gets it first. */
static void listen_if_new(struct ledger *l)
{
	int pid = lease_backend_pid(l->session);
	struct request *r;

	if (!l->listen || l->n_flight || pid <= 0 || pid == l->listen_pid ||
	    !(r = request(REQ_LISTEN, LEDGER_SQL_LISTEN, NULL, NULL)))
		return;
	r->schema = l->schema;
	r->next = l->head;
	l->head = r;
	if (!l->tail)
		l->tail = r;
	l->listen_pid = pid;
}

/* Sends the oldest statement unless one is in flight; without a session
 * it waits for ledger_session_ready. */
static void pump(struct ledger *l)
{
	struct request *r;
	const char *params[LEASE_QUERY_PARAMS];

	listen_if_new(l);
	r = l->head;
	if (l->n_flight || !r)
		return;
	if (r->kind == REQ_CLAIM) {
		if (send_claims(l))
			l->sent_at = clocks_monotonic();
		return;
	}
	for (int i = 0; i < r->nparams; i++)
		params[i] = (r->null_param & (1u << i)) ? NULL : r->params[i];
	if (r->blob && r->nparams > 0)
		params[r->nparams - 1] = r->blob;
	if (!lease_query(l->session, r->sql, r->nparams, params, answered_cb, l))
		return;
	l->n_flight = 1;
	l->sent_at = clocks_monotonic();
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
	r->then = REQ_ENSURE;
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
	r->schema = l->schema;
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

void ledger_claim(struct ledger *l, const struct ledger_term *t, const char *job,
		  int64_t tick, int attempt, int64_t trigger, const char *outcome,
		  bool rerun, ledger_fn fn, void *arg)
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
	param(r, "%d", attempt > 0 ? attempt : 1);
	param(r, "%" PRId64, trigger);
	submit(l, r);
}

void ledger_listen(struct ledger *l, void (*fn)(void *arg), void *arg)
{
	lease_on_notify(l->session, fn, arg);
	l->listen = true;
	pump(l);
}

void ledger_triggers(struct ledger *l, int64_t lock_key, ledger_fn fn, void *arg)
{
	struct request *r = request(REQ_TRIGGERS, l->sql_triggers, fn, arg);

	param(r, "%" PRId64, lock_key);
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

/* bytea's text input, hex: "\\x" and two digits a byte; NULL when out
 * of memory (the output is then not recorded, the run's end is). */
static char *bytea_hex(const char *bytes, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char *hex = malloc(2 * len + 3);

	if (!hex)
		return NULL;
	hex[0] = '\\';
	hex[1] = 'x';
	for (size_t i = 0; i < len; i++) {
		hex[2 + 2 * i] = digits[(unsigned char)bytes[i] >> 4];
		hex[3 + 2 * i] = digits[(unsigned char)bytes[i] & 15];
	}
	hex[2 + 2 * len] = '\0';
	return hex;
}

void ledger_finish(struct ledger *l, uint64_t fencing_token, int64_t run_id,
		   const char *outcome, int exit_status, bool owed, const char *output,
		   size_t output_len)
{
	struct request *r = request(REQ_FINISH, l->sql_finish, NULL, NULL);

	param(r, "%" PRId64, run_id);
	param(r, "%" PRIu64, fencing_token);
	param(r, "%s", outcome);
	param(r, "%d", exit_status);
	param(r, "%s", owed ? "true" : "false");
	param(r, "%s", ""); /* the output: the blob, or NULL */
	if (r && exit_status < 0)
		r->null_param |= 1u << 3;
	if (r && output && !(r->blob = bytea_hex(output, output_len)))
		log_warning("out of memory for run %" PRId64 "'s output: not recorded", run_id);
	if (r && !r->blob)
		r->null_param |= 1u << 5;
	submit(l, r);
}

void ledger_on_failure(struct ledger *l, const struct ledger_term *t, int64_t run_id,
		       ledger_fn fn, void *arg)
{
	struct request *r = request(REQ_ON_FAILURE, l->sql_on_failure, fn, arg);

	param(r, "%" PRId64, t->lock_key);
	param(r, "%" PRId64, run_id);
	param(r, "%d", t->lock_pid);
	param(r, "%" PRIu64, t->fencing_token);
	submit(l, r);
}

void ledger_controls(struct ledger *l, int64_t lock_key, ledger_fn fn, void *arg)
{
	struct request *r = l->controls_there
		? request(REQ_CONTROLS, l->sql_controls, fn, arg)
		: request(REQ_SCHEMA, l->sql_schema, fn, arg);

	if (r && r->kind == REQ_CONTROLS)
		param(r, "%" PRId64, lock_key);
	else if (r) /* the read's parameter, kept for it */
		snprintf(r->params[0], sizeof(r->params[0]), "%" PRId64, lock_key);
	submit(l, r);
}

void ledger_priority_ask(struct ledger *l, int64_t lock_key, const char *node_id,
			 int priority, int64_t wait_ms, ledger_fn fn, void *arg)
{
	struct request *r = request(REQ_PRIORITY, l->sql_priority, fn, arg);

	param(r, "%" PRId64, lock_key);
	param(r, "%s", node_id);
	param(r, "%d", priority);
	param(r, "%" PRId64, wait_ms);
	/* it writes the controls: the ledger is checked (its owner too), and
	 * made when missing and the role may, first */
	if (r && !l->ensured) {
		r->then = REQ_PRIORITY;
		r->then_nparams = r->nparams;
		r->nparams = 0;
		r->kind = REQ_ENSURE;
		r->sql = l->sql_ensure;
	}
	submit(l, r);
}

void ledger_handed(struct ledger *l, int64_t lock_key, const char *node_id)
{
	struct request *r = request(REQ_HANDED, l->sql_handed, NULL, NULL);

	param(r, "%" PRId64, lock_key);
	param(r, "%s", node_id);
	submit(l, r);
}

void ledger_announce(struct ledger *l, const struct ledger_term *t,
		     const struct ledger_job *job)
{
	struct request *r = request(REQ_ANNOUNCE, l->sql_announce, NULL, NULL);

	param(r, "%" PRId64, t->lock_key);
	param(r, "%s", job->name);
	param(r, "%s", job->schedule ? job->schedule : "");
	param(r, "%s", t->node_id);
	param(r, "%" PRIu64, t->fencing_token);
	param(r, "%d", t->lock_pid);
	param(r, "%s", job->timezone ? job->timezone : "");
	param(r, "%" PRId64, job->next_tick);
	param(r, "%" PRIu64, job->generation);
	param(r, "%s", job->last ? "true" : "false");
	if (r && !job->schedule)
		r->null_param |= 1u << 2 | 1u << 6;
	if (r && job->next_tick <= 0)
		r->null_param |= 1u << 7;
	submit(l, r);
}

void ledger_prune(struct ledger *l, int64_t lock_key, int64_t keep_ms)
{
	struct request *r = request(REQ_PRUNE, l->sql_prune, NULL, NULL);

	param(r, "%" PRId64, lock_key);
	param(r, "%" PRId64, keep_ms);
	submit(l, r);
}

bool ledger_controls_whole(const struct ledger_controls *lc, bool resumed,
			   const char **by, const char **at)
{
	*by = *at = NULL;
	for (int i = 0; i < lc->n; i++) {
		const struct ledger_control *k = &lc->c[i];

		if (k->job[0] || !(resumed ? k->resumed : k->pause && !k->resumed))
			continue;
		*by = k->asked_by;
		*at = k->asked_at;
	}
	return *by != NULL;
}
