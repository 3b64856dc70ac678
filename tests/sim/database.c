/* database.c: the PostgreSQL model of the simulator (tests/sim/README.md):
 * sessions, the lock and the fence keys with their queues, lock_timeout,
 * idle_session_timeout, restarts and failovers; the ledger's tables and
 * the server's side of its statements (recognised by their SQL text). */
#include "sim.h"

static void db_session_op(int sid, const struct simev *e);
static void put(struct squery *q, int row, int col, bool null, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void db_query(int sid, const struct simev *e);

/* ---- the database ------------------------------------------------------- */

static void db_reply(int sid, int op, uint64_t token, unsigned mask, int status)
{
	struct ssess *s = &W.s[sid];
	struct simev e = { .kind = K_TO_NODE, .node = s->node, .op = op,
			   .skind = s->skind, .conn = s->conn, .token = token,
			   .mask = mask, .status = status };

	send_link(e, s->node, 1);
}

static uint64_t stamps; /* unique: an old session's timer never hits a new one */

/* A query finished: the session is idle from now on. */
static void db_done(int sid)
{
	struct ssess *s = &W.s[sid];

	s->last_done = T;
	s->stamp = ++stamps;
	if (s->idle_timeout > 0 && !s->waiting)
		push((struct simev){ .t = T + s->idle_timeout, .kind = K_IDLE,
				     .node = NOBODY, .status = sid, .gen = s->stamp });
}

static void db_grant_next(int key)
{
	while (W.holder[key] < 0 && W.n_queue[key] > 0) {
		int sid = W.queue[key][0];

		memmove(W.queue[key], W.queue[key] + 1,
			(size_t)--W.n_queue[key] * sizeof(int));
		if (!W.s[sid].alive || !W.s[sid].waiting)
			continue;
		W.s[sid].waiting = false;
		W.holder[key] = sid;
		db_reply(sid, S_LOCK, 0, 0, 1);
		db_done(sid);
	}
}

static void db_dequeue(int key, int sid)
{
	for (int k = 0; k < W.n_queue[key]; k++)
		if (W.queue[key][k] == sid) {
			memmove(W.queue[key] + k, W.queue[key] + k + 1,
				(size_t)(W.n_queue[key] - k - 1) * sizeof(int));
			W.n_queue[key]--;
			return;
		}
}

const char *node_name(int i)
{
	return i >= 0 && i < W.n ? W.nodes[i].name : "?";
}

/* The session ends: its locks pass on; the client hears (unless it closed). */
void db_end(int sid, bool tell, const char *why)
{
	struct ssess *s = &W.s[sid];

	if (!s->alive)
		return;
	s->alive = false;
	if (s->skind)
		W.fence_lost_at[s->node] = T;
	say(1u << s->node, "db: %s session of %s (conn %" PRIu64 ") ends: %s",
	    s->skind ? "fence" : "lock", node_name(s->node), s->conn, why);
	for (int key = 0; key < 2; key++) {
		db_dequeue(key, sid);
		if (W.holder[key] == sid) {
			W.holder[key] = NOBODY;
			db_grant_next(key);
		}
	}
	if (tell)
		db_reply(sid, S_ENDED, 0, 0, 0);
}

/* The client names its server session (S_CONNECTED said which). */
static int db_find(const struct simev *e)
{
	int sid = e->status;

	return sid >= 0 && sid < W.n_s && W.s[sid].alive &&
	       W.s[sid].conn == e->conn ? sid : NOBODY;
}

static unsigned db_sessions_mask(void)
{
	unsigned m = 0;

	for (int k = 0; k < W.n_s; k++)
		if (W.s[k].alive)
			m |= 1u << W.s[k].node;
	return m;
}

static void db_connect(const struct simev *e)
{
	int sid;

	if (!W.db_up) {
		send_link((struct simev){ .kind = K_TO_NODE, .node = e->from,
					  .op = S_REFUSED, .skind = e->skind,
					  .conn = e->conn }, e->from, 1);
		return;
	}
	if (W.n_s == MAXS)
		abort(); /* raise MAXS */
	sid = W.n_s++;
	W.s[sid] = (struct ssess){ .alive = true, .node = e->from, .skind = e->skind,
				   .conn = e->conn, .pid = ++W.next_spid };
	db_reply(sid, S_CONNECTED, (uint64_t)W.s[sid].pid, 0, sid);
	db_done(sid);
}

/* LEASE_SQL_TRY_QUEUE (DESIGN 15): the lock's waiters in pg_locks and,
 * while fewer than queue_depth wait, the standbys ranked before this
 * session (*ranked then): the lock sessions that neither lead nor wait,
 * all of one priority in the model, so by arrival (the backend pid). */
static int db_queue_ahead(int sid, bool rank_always, bool *ranked)
{
	int n = 0;

	for (int k = 0; k < W.n_s; k++)
		if (k != sid && W.s[k].alive && !W.s[k].skind && W.s[k].waiting)
			n++;
	*ranked = n < W.p.queue_depth || rank_always;
	if (!*ranked)
		return n;
	for (int k = 0; k < W.n_s; k++)
		if (k != sid && W.s[k].alive && !W.s[k].skind && !W.s[k].waiting &&
		    W.holder[0] != k && W.s[k].pid < W.s[sid].pid)
			n++;
	return n;
}

static void db_lock(int sid, bool wait, bool rank_always)
{
	int key = W.s[sid].skind;
	/* a lock's try says where the standby stands (the reply's token) */
	bool ranked = false;
	uint64_t ahead = !wait && !key ? (uint64_t)db_queue_ahead(sid, rank_always,
								  &ranked) : 0;

	if (W.holder[key] < 0 && W.n_queue[key] == 0) {
		W.holder[key] = sid;
		db_reply(sid, S_LOCK, 0, 0, 1);
		db_done(sid);
		return;
	}
	if (!wait || W.holder[key] == sid) {
		db_reply(sid, S_LOCK, ahead, ranked, W.holder[key] == sid);
		db_done(sid);
		return;
	}
	W.s[sid].waiting = true;
	W.s[sid].wait_stamp = ++stamps;
	W.queue[key][W.n_queue[key]++] = sid;
	/* lock_timeout = retry_interval, as lease.c sets it */
	push((struct simev){ .t = T + W.retry, .kind = K_LOCK_TIMEOUT, .node = NOBODY,
			     .status = sid, .gen = W.s[sid].wait_stamp });
}

static void db_unlock(int sid)
{
	int key = W.s[sid].skind;

	W.s[sid].idle_timeout = 0;
	if (W.holder[key] == sid) {
		W.holder[key] = NOBODY;
		db_grant_next(key);
	}
	db_reply(sid, S_UNLOCKED, 0, 0, 0);
	db_done(sid);
}

void db_receive(const struct simev *e)
{
	int sid;

	if (e->op == C_CONNECT) {
		db_connect(e);
		return;
	}
	sid = db_find(e);
	if (sid < 0 && e->op == C_CLOSE && e->status < 0) {
		/* closed before the client heard it was connected */
		for (int k = W.n_s - 1; k >= 0; k--)
			if (W.s[k].conn == e->conn)
				db_end(k, false, "client closed the connection");
		return;
	}
	if (sid >= 0)
		db_session_op(sid, e); /* else the session is gone; its client was told */
}

/* A client's message on its live session sid. */
static void db_session_op(int sid, const struct simev *e)
{
	switch (e->op) {
	case C_TRY: db_lock(sid, false, false); return;
	case C_TRY_RANK: db_lock(sid, false, true); return;
	case C_WAIT: db_lock(sid, true, false); return;
	case C_CLAIM:
		/* the claim sets idle_session_timeout = server_lease (and the
		 * keepalives); the lock's reads pg_current_xact_id() */
		W.s[sid].idle_timeout = W.server_lease;
		db_reply(sid, S_CLAIMED, W.s[sid].skind ? 0 : ++W.xid, 0, 0);
		db_done(sid);
		return;
	case C_PING:
		db_reply(sid, S_PONG, 0, db_sessions_mask(), 0);
		db_done(sid);
		return;
	case C_UNLOCK: db_unlock(sid); return;
	case C_QUERY: db_query(sid, e); return;
	case C_CLOSE: db_end(sid, false, "client closed the connection"); return;
	default: return; /* not a client's message */
	}
}

void db_lock_timeout(const struct simev *e)
{
	struct ssess *s = &W.s[e->status];

	if (!s->alive || !s->waiting || s->wait_stamp != e->gen)
		return;
	s->waiting = false;
	db_dequeue(s->skind, e->status);
	db_reply(e->status, S_LOCK_TIMEOUT, 0, 0, 0);
	db_done(e->status);
}

void db_idle(const struct simev *e)
{
	struct ssess *s = &W.s[e->status];

	if (s->alive && !s->waiting && s->idle_timeout > 0 && s->stamp == e->gen)
		db_end(e->status, true, "idle_session_timeout (server_lease)");
}

/* A leader that cannot hear its sessions end, or cannot reach the server
 * again (parted from the database: the man page's "host dies without
 * closing the connection" and "the old leader cannot reach the server"):
 * the pings notice, then grace_period and SIGKILL's time. */
double restart_unheard_until(void)
{
	return T + W.p.ping_interval * W.p.ping_failures + W.p.ping_timeout +
	       W.grace + SIGKILL_GONE + net_slack;
}

/* The restart's window widens to the man page's "otherwise": from the
 * restart on, until at least `until`. */
void restart_otherwise(double until, const char *why)
{
	if (T >= W.exempt_db_until)
		return;
	W.exempt_db_from = fmin(W.exempt_db_from, W.restart_at);
	W.exempt_db_until = fmax(W.exempt_db_until, until);
	say(0, "exempt: the fleet from %.3f until %.3f (%s)", W.exempt_db_from,
	    W.exempt_db_until, why);
}

bool db_exempt(void)
{
	return T < W.exempt_db_kill_until ||
	       (T >= W.exempt_db_from && T < W.exempt_db_until);
}

/* When each node hears its sessions end (those of the nodes in `ended`,
 * the lock sessions of those in `lock_ended`): the notice on its link,
 * after whatever the server sent before; the first and the last. False:
 * the man page's "otherwise" applies. */
static bool restart_notices(unsigned ended, unsigned lock_ended, double *first,
			    double *last)
{
	bool all_wait = true;

	for (int i = 0; i < W.n; i++) {
		bool heard = (ended >> i & 1) && !W.part_db[i];
		double notice = fmax(T, W.link_last[i][1]);

		if (heard) {
			*first = fmin(*first, notice);
			*last = fmax(*last, notice);
		}
		/* a node up without a session, or an old leader that hears
		 * late (see net_delay) */
		all_wait &= (heard || !W.nodes[i].up) &&
			    !(cmd_alive(&W.nodes[i]) && notice - T > RESTART_SLOW);
		/* SAFETY, "Both sessions ended, one after the other": a leader
		 * stopping its command without the lock loses its fence here,
		 * the fence may pass to the new leader before the server ends
		 * that session too, and the old command is SIGKILLed once its
		 * leader hears: gone SIGKILL's time later */
		if (heard && cmd_alive(&W.nodes[i]) && !(lock_ended >> i & 1))
			W.exempt_db_kill_until = fmax(W.exempt_db_kill_until,
						      notice + SIGKILL_GONE);
	}
	return all_wait;
}

/* The window a restart opens (see restart_notices). */
static void restart_window(const char *what, unsigned ended, unsigned lock_ended)
{
	double first = INFINITY, last = T;
	bool all_wait = restart_notices(ended, lock_ended, &first, &last);

	/* SAFETY, "Database restart": 0 when the old leader reaches the
	 * server again within the standby's settle wait: it takes its fence
	 * back first, and a standby takes the fence no later than
	 * grace_period plus SIGKILL's time after its own session ended, when
	 * the old command is gone. The nodes hear the end at different
	 * times (the network's delays): an overlap from the first one's cap
	 * to the last one's is allowed, no other. "Database failover": the
	 * same, from when the old primary went away. */
	if (T >= W.exempt_db_until)
		W.exempt_db_from = isfinite(first) ? first + W.grace + SIGKILL_GONE : T;
	W.exempt_db_until = fmax(W.exempt_db_until, last + W.grace + SIGKILL_GONE);
	W.restart_at = T;
	say(0, "exempt: the fleet from %.3f until %.3f (%s)", W.exempt_db_from,
	    W.exempt_db_until, what);
	/* ... otherwise (a node whose own session did not end with the
	 * server's waits for nothing; see also node_boot()) at most
	 * grace_period plus SIGKILL's time minus the time the server was
	 * away; with the pings' detection when the leader cannot hear (see
	 * also fault(), F_PART_DB) */
	if (!all_wait)
		restart_otherwise(W.exempt_db_until, "a node without a session, or "
				  "a leader's network slow");
	for (int i = 0; i < W.n; i++) {
		if (W.part_db[i] && cmd_alive(&W.nodes[i]))
			restart_otherwise(restart_unheard_until(), "a leader parted");
		/* a segment sent before the restart and still being
		 * retransmitted holds up what follows it on the link (seed
		 * 93487: the old leader's fence connect waited 1.2 s behind a
		 * ping) */
		if (cmd_alive(&W.nodes[i]) &&
		    fmax(W.link_last[i][0], W.link_last[i][1]) > T + RESTART_SLOW)
			restart_otherwise(W.exempt_db_until, "a leader's network is slow");
	}
}

/* Restart or failover: every session ends with an error (fast shutdown);
 * the transaction ids continue (a replica's are the primary's). */
void db_down(const char *what, double down)
{
	unsigned ended = 0, lock_ended = 0;

	W.db_up = false;
	W.server++;
	W.terms_held_until = 0;
	say(0, "db: %s, away for %.3fs", what, down);
	for (int k = 0; k < W.n_s; k++) {
		if (W.s[k].alive)
			*(W.s[k].skind ? &ended : &lock_ended) |= 1u << W.s[k].node;
		db_end(k, true, what);
	}
	W.holder[0] = W.holder[1] = NOBODY;
	W.n_queue[0] = W.n_queue[1] = 0;
	W.n_s = 0;
	restart_window(what, ended | lock_ended, lock_ended);
	push((struct simev){ .t = T + down, .kind = K_HEAL, .node = NOBODY, .op = 0 });
}

/* ---- the ledger's tables, and its statements on the server's side ------ */

size_t *hidx;         /* (job, tick) -> row index + 1 */
size_t hcap;

int job_index(const char *job)
{
	for (int j = 0; j < W.n_jobs; j++)
		if (!strcmp(W.job_name[j], job))
			return j;
	return NOBODY;
}

static size_t hslot(int j, int64_t tick)
{
	uint64_t h = (uint64_t)tick * 0x9e3779b97f4a7c15ULL ^ (uint64_t)j * 0xbf58476d1ce4e5b9ULL;

	return (size_t)(h ^ h >> 29) & (hcap - 1);
}

/* The row of (job, tick, attempt) (DESIGN 13: each attempt its own). */
struct lrow *row_attempt(int j, int64_t tick, int attempt)
{
	if (!hcap)
		return NULL;
	for (size_t k = hslot(j, tick); hidx[k]; k = (k + 1) & (hcap - 1)) {
		struct lrow *r = &W.rows[hidx[k] - 1];

		if (r->tick == tick && r->attempt == attempt && job_index(r->job) == j)
			return r;
	}
	return NULL;
}

/* A tick's first row: the tick claimed or recorded. */
struct lrow *row_at(int j, int64_t tick)
{
	return row_attempt(j, tick, 1);
}

static void hput(size_t idx)
{
	size_t k = hslot(job_index(W.rows[idx].job), W.rows[idx].tick);

	while (hidx[k])
		k = (k + 1) & (hcap - 1);
	hidx[k] = idx + 1;
}

static struct lrow *row_new(void)
{
	if (W.n_rows == W.cap_rows) {
		W.cap_rows = W.cap_rows ? W.cap_rows * 2 : 512;
		W.rows = realloc(W.rows, W.cap_rows * sizeof(*W.rows));
		if (!W.rows)
			abort();
	}
	if (2 * (W.n_rows + 1) > hcap) {
		free(hidx);
		hcap = hcap ? hcap * 2 : 2048;
		hidx = calloc(hcap, sizeof(*hidx));
		if (!hidx)
			abort();
		for (size_t k = 0; k < W.n_rows; k++)
			hput(k);
	}
	memset(&W.rows[W.n_rows], 0, sizeof(W.rows[0]));
	W.rows[W.n_rows].run_id = (int64_t)W.n_rows + 1;
	return &W.rows[W.n_rows++];
}

struct lrow *row_by_id(int64_t run_id)
{
	return run_id >= 1 && (size_t)run_id <= W.n_rows ? &W.rows[run_id - 1] : NULL;
}
struct squery *sq;
static size_t n_sq, cap_sq;

void sq_free_all(void)
{
	for (size_t k = 0; k < n_sq; k++) {
		for (int i = 0; i < sq[k].nparams; i++)
			free(sq[k].p[i]);
		free(sq[k].val);
		free(sq[k].vals);
	}
	n_sq = 0;
}

static enum qkind qkind_of(const char *sql)
{
	static char *texts[Q_OTHER];

	if (!texts[0]) {
		texts[Q_ENSURE] = ledger_sql_check("pgleader", NULL);
		texts[Q_CLAIM] = ledger_sql_claim("pgleader");
		texts[Q_LAST] = ledger_sql_last("pgleader");
		texts[Q_FINISH] = ledger_sql_finish("pgleader");
		texts[Q_PRUNE] = ledger_sql_prune("pgleader");
		texts[Q_SCHEMA] = ledger_sql_schema_probe("pgleader");
		texts[Q_PROBE] = ledger_sql_controls_probe("pgleader", NULL);
		texts[Q_CONTROLS] = ledger_sql_controls_read("pgleader");
		texts[Q_PRIORITY] = ledger_sql_priority_ask("pgleader");
		texts[Q_HANDED] = ledger_sql_handed("pgleader");
		texts[Q_ON_FAILURE] = ledger_sql_on_failure("pgleader");
		texts[Q_ANNOUNCE] = ledger_sql_announce("pgleader");
		texts[Q_TRIGGERS] = ledger_sql_triggers("pgleader");
		texts[Q_LISTEN] = strdup(LEDGER_SQL_LISTEN);
	}
	for (int k = 0; k < Q_OTHER; k++)
		if (texts[k] && !strcmp(sql, texts[k]))
			return (enum qkind)k;
	return Q_OTHER;
}

uint64_t sq_new(const char *sql, int nparams, const char *const *params)
{
	struct squery *q;

	if (n_sq == cap_sq) {
		cap_sq = cap_sq ? cap_sq * 2 : 256;
		sq = realloc(sq, cap_sq * sizeof(*sq));
		if (!sq)
			abort();
	}
	q = &sq[n_sq];
	memset(q, 0, sizeof(*q));
	q->kind = qkind_of(sql);
	q->nparams = nparams;
	for (int i = 0; i < nparams; i++)
		q->p[i] = params[i] ? strdup(params[i]) : NULL;
	return ++n_sq; /* its id: index + 1 */
}

/* The answer's shape: rows of ncols values, each set with put(). */
static void sq_answer(struct squery *q, int nrows, int ncols)
{
	q->nrows = nrows;
	q->ncols = ncols;
	q->val = calloc((size_t)(nrows * ncols) + 1, sizeof(*q->val));
	q->vals = calloc((size_t)(nrows * ncols) + 1, sizeof(*q->vals));
	if (!q->val || !q->vals)
		abort();
}
static void put(struct squery *q, int row, int col, bool null, const char *fmt, ...)
{
	int k = row * q->ncols + col;
	va_list ap;

	if (null)
		return;
	va_start(ap, fmt);
	vsnprintf(q->val[k], sizeof(q->val[k]), fmt, ap);
	va_end(ap);
	q->vals[k] = q->val[k];
}

/* The n-th element of an array literal ({"a","b"} or {1,2}), unquoted. */
static void array_elem(const char *a, int n, char *out, size_t len)
{
	const char *p = a + (*a == '{');

	for (; n > 0 && p; n--)
		if ((p = strchr(p, ',')))
			p++;
	out[0] = '\0';
	if (!p)
		return;
	p += *p == '"';
	snprintf(out, len, "%.*s", (int)strcspn(p, "\",}"), p);
}

static int array_len(const char *a)
{
	int n = a[1] == '}' ? 0 : 1;

	for (; *a; a++)
		n += *a == ',';
	return n;
}

int node_of_name(const char *name)
{
	for (int i = 0; i < W.n; i++)
		if (!strcmp(W.nodes[i].name, name))
			return i;
	return NOBODY;
}

/* One tick of a claim: inserted, or an interrupted one claimed again
 * with rerun; its run_id, 0 when not claimed. */
static int64_t claim_one(const char *job, int64_t tick, int attempt, const char *node,
			 uint64_t token, const char *outcome, bool rerun)
{
	int j = job_index(job);
	struct lrow *r = j >= 0 ? row_attempt(j, tick, attempt) : NULL;

	if (j < 0)
		return 0;
	if (r && !(rerun && !strcmp(r->outcome, "interrupted") && r->token < token))
		return 0;
	if (!r) {
		r = row_new();
		snprintf(r->job, sizeof(r->job), "%s", job);
		r->tick = tick;
		r->attempt = attempt;
		hput((size_t)(r - W.rows));
	}
	r->node = node_of_name(node);
	r->token = token;
	snprintf(r->outcome, sizeof(r->outcome), "%s", outcome);
	r->exit_status = -1;
	r->finished = strcmp(outcome, "running") != 0;
	r->finished_ms = r->finished ? db_ms() : 0;
	r->server = W.server;
	return r->run_id;
}

/* Whether ledger_sql.c's claim checks the lock again once it has the
 * terms row (the upsert's RETURNING, DESIGN 10): the model runs what the
 * text says, so a build whose claim lost the check (the mutant
 * claim-no-recheck) writes runs for a lock checked only at the start. */
static bool claim_rechecks(void)
{
	static int known = -1;

	if (known < 0) {
		char *sql = ledger_sql_claim("pgleader");

		known = sql && strstr(sql, "RETURNING EXISTS (SELECT FROM pg_catalog.pg_locks")
			&& strstr(sql, "WHERE term.held AND");
		free(sql);
	}
	return known;
}

static bool lock_held_by(int pid)
{
	return W.holder[0] >= 0 && W.s[W.holder[0]].pid == pid;
}

/* The request to run now id of job j still in the triggers table (not
 * claimed), or NULL. */
static struct trig *trig_waiting(int64_t id, int j)
{
	for (int k = 0; k < W.n_trigs; k++)
		if (W.trigs[k].id == id && W.trigs[k].job == j && !W.trigs[k].run_id)
			return &W.trigs[k];
	return NULL;
}

/* A claim of a request to run now (DESIGN 13): its row takes the
 * request's tick, and the request goes with it; none, no row. */
static int64_t claim_request(const char *job, int64_t trig, const char *node,
			     uint64_t token, const char *outcome)
{
	struct trig *g = trig_waiting(trig, job_index(job));
	int64_t id;

	if (!g)
		return 0;
	id = claim_one(job, g->tick, 1, node, token, outcome, false);
	if (id > 0) {
		g->run_id = id;
		row_by_id(id)->trigger = g->id;
	}
	return id;
}

/* Row i of a claim's answer: tick i of its arrays, inserted if it may. */
static void db_claim_row(struct squery *q, int i, struct claim_checks k)
{
	char job[64], tick[24], outcome[16], rerun[8], attempt[8], trig[24];
	int64_t at, id = 0;
	int node = node_of_name(q->p[3]);

	array_elem(q->p[1], i, job, sizeof(job));
	array_elem(q->p[2], i, tick, sizeof(tick));
	array_elem(q->p[6], i, outcome, sizeof(outcome));
	array_elem(q->p[7], i, rerun, sizeof(rerun));
	array_elem(q->p[8], i, attempt, sizeof(attempt));
	array_elem(q->p[9], i, trig, sizeof(trig));
	at = strtoll(tick, NULL, 10);
	if (k.term && k.holder && at <= k.now && strtoll(trig, NULL, 10) > 0)
		id = claim_request(job, strtoll(trig, NULL, 10), q->p[3], k.token, outcome);
	else if (k.term && k.holder && at <= k.now)
		id = claim_one(job, at, atoi(attempt), q->p[3], k.token, outcome,
			       rerun[0] == 't');
	if (id > 0 && !k.held)
		fail_at(node >= 0 ? 1u << node : 0, "a claim wrote the row of tick "
			"%" PRId64 " after %s's lock session lost the lock (DESIGN 10: "
			"the lock is checked again after any wait)", at, q->p[3]);
	put(q, i, 0, id == 0, "%" PRId64, id);
	put(q, i, 1, false, "%s", k.holder ? "t" : "f");
	put(q, i, 2, false, "%s", k.term ? "t" : "f");
	put(q, i, 3, false, "%s", at > k.now ? "t" : "f");
	put(q, i, 4, false, "%" PRId64, k.now);
}

/* ledger_sql.c's claim: the term's upsert, then each tick's row; started:
 * whether the lock was held when the statement began (it waited on the
 * terms row since), the lock's holder now otherwise. */
static void db_claim(struct squery *q, bool started)
{
	int64_t now = db_ms();
	uint64_t token = strtoull(q->p[4], NULL, 10);
	int n = array_len(q->p[1]), pid = atoi(q->p[5]), node = node_of_name(q->p[3]);
	bool held = lock_held_by(pid);
	bool term = started && W.term_token <= token;
	/* what the run's insert goes by: the check after the row lock, or
	 * only the one at the start */
	bool holder = claim_rechecks() ? started && held : started;

	if (term)
		W.term_token = token;
	say(node >= 0 ? 1u << node : 0, "db: claim of %d tick%s "
	    "(%s %s %s...) by %s token %" PRIu64 ": %s", n, n == 1 ? "" : "s", q->p[1], q->p[2], q->p[6],
	    q->p[3], token, !holder ? "refused, not the holder" : !term
	    ? "refused, a newer token is recorded" : "taken");
	sq_answer(q, n, 5);
	for (int i = 0; i < n; i++)
		db_claim_row(q, i, (struct claim_checks){ term, holder, held, token, now });
}

/* ledger_sql.c's last: with cut, an older term's running rows become
 * interrupted; the newest tick, the cut's, the last success, and
 * without cut the newest older running. */
/* The newest row of job j (by tick, then attempt), and the newest one
 * whose on_failure is owed and that is its tick's last attempt. */
void newest_rows(int j, const struct lrow **newest, const struct lrow **owed)
{
	*newest = *owed = NULL;
	for (size_t k = 0; k < W.n_rows; k++) {
		const struct lrow *r = &W.rows[k];

		if (job_index(r->job) != j)
			continue;
		if (!r->trigger && (!*newest || r->tick > (*newest)->tick ||
		    (r->tick == (*newest)->tick && r->attempt > (*newest)->attempt)))
			*newest = r;
		if (!strcmp(r->on_failure, "owed") && !row_attempt(j, r->tick, r->attempt + 1) &&
		    (!strcmp(r->outcome, "failed") || !strcmp(r->outcome, "timed_out")) &&
		    (!*owed || r->tick > (*owed)->tick))
			*owed = r;
	}
}

/* LAST's columns for retries and on_failure (enum ledger_sql_last_col). */
static void put_last_rows(struct squery *q, int j, int sid)
{
	const struct lrow *n, *o;

	newest_rows(j, &n, &o);
	if (o) { /* whom it told, for check_on_failure_end */
		struct lrow *told = row_by_id(o->run_id);

		told->owed_told_node = W.s[sid].node;
		told->owed_told_inc = W.nodes[W.s[sid].node].inc;
		told->owed_told_at = T;
	}
	put(q, 0, LEDGER_LAST_RUN_ID, !n, "%" PRId64, n ? n->run_id : 0);
	put(q, 0, LEDGER_LAST_ATTEMPT, !n, "%d", n ? n->attempt : 0);
	put(q, 0, LEDGER_LAST_OUTCOME, !n, "%s", n ? n->outcome : "");
	put(q, 0, LEDGER_LAST_EXIT, !n || n->exit_status < 0, "%d", n ? n->exit_status : 0);
	put(q, 0, LEDGER_LAST_ENDED, !n || !n->finished, "%" PRId64, n ? n->finished_ms : 0);
	put(q, 0, LEDGER_LAST_OWED_RUN, !o, "%" PRId64, o ? o->run_id : 0);
	put(q, 0, LEDGER_LAST_OWED_TICK, !o, "%" PRId64, o ? o->tick : 0);
	put(q, 0, LEDGER_LAST_OWED_ATTEMPT, !o, "%d", o ? o->attempt : 0);
	put(q, 0, LEDGER_LAST_OWED_OUTCOME, !o, "%s", o ? o->outcome : "");
	put(q, 0, LEDGER_LAST_OWED_EXIT, !o || o->exit_status < 0, "%d",
	    o ? o->exit_status : 0);
}

/* Row r cut (recorded interrupted): the newest cut, and its attempt. */
static void note_cut(struct lrow *r, int64_t *cut_max, int *cut_attempt)
{
	snprintf(r->outcome, sizeof(r->outcome), "interrupted");
	if (r->tick > *cut_max || (r->tick == *cut_max && r->attempt > *cut_attempt))
		*cut_attempt = r->attempt;
	*cut_max = r->tick > *cut_max ? r->tick : *cut_max;
}

/* What LAST found over a job's rows. */
struct last_scan {
	int64_t last, cut_max, success, older;
	int cut_attempt;
};

/* One row of the job: an older term's running row is cut (with cut, or
 * begun on this server, which never restarted since: over), else told. */
static void scan_row(struct lrow *r, uint64_t token, bool cut, struct last_scan *s)
{
	bool old_running = !strcmp(r->outcome, "running") && r->token < token;
	bool cuts = old_running && (cut || r->server == W.server);

	if (!strcmp(r->outcome, "succeeded") && r->finished_ms > s->success)
		s->success = r->finished_ms;
	if (old_running && !cuts && r->tick > s->older)
		s->older = r->tick;
	/* DESIGN 13: a run asked for now is no tick: not the newest, not cut
	 * to be run again (cut: recorded interrupted) */
	if (r->trigger && cuts)
		snprintf(r->outcome, sizeof(r->outcome), "interrupted");
	if (r->trigger)
		return;
	s->last = r->tick > s->last ? r->tick : s->last;
	if (cuts)
		note_cut(r, &s->cut_max, &s->cut_attempt);
}

static void db_last(int sid, struct squery *q)
{
	int j = job_index(q->p[1]);
	uint64_t token = strtoull(q->p[2], NULL, 10);
	bool cut = q->p[3][0] == 't';
	struct last_scan s = { INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN, 1 };

	for (size_t k = 0; k < W.n_rows; k++)
		if (job_index(W.rows[k].job) == j)
			scan_row(&W.rows[k], token, cut, &s);
	sq_answer(q, 1, LEDGER_LAST_NCOLS);
	put(q, 0, LEDGER_LAST_TICK, s.last == INT64_MIN, "%" PRId64, s.last);
	put(q, 0, LEDGER_LAST_CUT, s.cut_max == INT64_MIN, "%" PRId64, s.cut_max);
	put(q, 0, LEDGER_LAST_SUCCESS, s.success == INT64_MIN, "%" PRId64, s.success);
	put(q, 0, LEDGER_LAST_OLDER, s.older == INT64_MIN, "%" PRId64, s.older);
	put(q, 0, LEDGER_LAST_CUT_ATTEMPT, s.cut_max == INT64_MIN, "%d", s.cut_attempt);
	put_last_rows(q, j, sid);
	put(q, 0, LEDGER_LAST_NOW, false, "%" PRId64, db_ms());
}

static void db_finish(struct squery *q)
{
	struct lrow *r = row_by_id(strtoll(q->p[0], NULL, 10));

	if (r && r->token == strtoull(q->p[1], NULL, 10) && !r->finished) {
		if (!strcmp(r->outcome, "running"))
			snprintf(r->outcome, sizeof(r->outcome), "%s", q->p[2]);
		r->exit_status = q->p[3] ? atoi(q->p[3]) : -1;
		r->finished = true;
		r->finished_ms = db_ms();
		if (q->p[4] && q->p[4][0] == 't' && !r->on_failure[0])
			snprintf(r->on_failure, sizeof(r->on_failure), "owed");
		if ((!strcmp(r->outcome, "failed") || !strcmp(r->outcome, "timed_out")) &&
		    W.n_failed_rows < (int)(sizeof(W.failed_rows) / sizeof(W.failed_rows[0])))
			W.failed_rows[W.n_failed_rows++] = (size_t)(r - W.rows);
	}
	sq_answer(q, 0, 0);
}

/* ledger_sql.c's on_failure claim (DESIGN 13): the lock's holder with a
 * token not older than the newest marks a failed run's on_failure sent,
 * once. */
static void db_on_failure(int sid, struct squery *q)
{
	struct lrow *r = row_by_id(strtoll(q->p[1], NULL, 10));
	bool holder = lock_held_by(atoi(q->p[2]));
	uint64_t token = strtoull(q->p[3], NULL, 10);
	bool sent = r && holder && W.term_token <= token &&
		    (strcmp(r->on_failure, "sent") || r->on_failure_token == token) &&
		    (!strcmp(r->outcome, "failed") || !strcmp(r->outcome, "timed_out"));

	if (sent) {
		snprintf(r->on_failure, sizeof(r->on_failure), "sent");
		r->on_failure_by = W.s[sid].node;
		r->on_failure_inc = W.nodes[r->on_failure_by].inc;
		r->on_failure_token = token;
		r->on_failure_at = T;
	}
	sq_answer(q, 1, 3);
	put(q, 0, 0, !sent, "%" PRId64, sent ? r->run_id : 0);
	put(q, 0, 1, false, "%s", holder ? "t" : "f");
	put(q, 0, 2, false, "%" PRId64, db_ms());
}

/* The controls in force (DESIGN 11): the whole lock's pause and a
 * switchover asked, rows of enum ledger_sql_control_col. */
static void db_controls_read(struct squery *q)
{
	bool so = W.switchover && T < W.so_until;
	int row = 0;

	sq_answer(q, W.paused + so, LEDGER_CONTROL_NCOLS);
	q->paused = W.paused;
	if (W.paused) {
		put(q, row, LEDGER_CONTROL_KIND, false, "pause");
		put(q, row, LEDGER_CONTROL_JOB, false, "%s", "");
		put(q, row, LEDGER_CONTROL_TARGET, false, "%s", "");
		put(q, row, LEDGER_CONTROL_LEADER, false, "%s", "");
		put(q, row, LEDGER_CONTROL_ASKED_BY, false, "sim");
		put(q, row++, LEDGER_CONTROL_ASKED_AT, false, "T");
	}
	if (!so)
		return;
	put(q, row, LEDGER_CONTROL_KIND, false, "switchover");
	put(q, row, LEDGER_CONTROL_JOB, false, "%s", "");
	put(q, row, LEDGER_CONTROL_TARGET, false, "%s",
	    W.so_target == NOBODY ? "" : W.nodes[W.so_target].name);
	put(q, row, LEDGER_CONTROL_LEADER, false, "%s", W.nodes[W.so_leader].name);
	put(q, row, LEDGER_CONTROL_LEFT_MS, false, "%" PRId64,
	    (int64_t)llround((W.so_until - T) * 1000));
	put(q, row, LEDGER_CONTROL_ASKED_BY, false, "sim");
	put(q, row, LEDGER_CONTROL_ASKED_AT, false, "T");
}

/* A statement on the controls table, executed. DIFFERS: a priority ask
 * finds the leader's priority equal to the asker's (every node has one in
 * the model): it asks for nothing; the switchover answered is deleted
 * whoever answers it. */
static void db_controls(struct squery *q)
{
	if (q->kind == Q_CONTROLS) {
		db_controls_read(q);
	} else if (q->kind == Q_PRIORITY) {
		sq_answer(q, 1, 3);
		put(q, 0, 0, W.holder[0] < 0, "%s",
		    W.holder[0] < 0 ? "" : W.nodes[W.s[W.holder[0]].node].name);
		put(q, 0, 1, W.holder[0] < 0, "%d", W.nodes[0].cfg.priority);
		put(q, 0, 2, false, "f");
	} else if (q->kind == Q_HANDED) {
		W.switchover = false;
		sq_answer(q, 0, 0);
	}
}

/* Behind the ALTER TABLE's lock on the controls: answered when it ends,
 * or an error at lock_timeout (the retry interval); true when the
 * statement waits (the session busy until then). */
static bool db_controls_wait(int sid, const struct simev *e)
{
	struct squery *q = &sq[e->gen - 1];
	double locked = T >= W.ctl_locked_from ? W.ctl_locked_until : -INFINITY;

	if (T >= locked)
		return false;
	q->error = locked > T + W.retry;
	W.s[sid].stamp = ++stamps;
	push((struct simev){ .t = q->error ? T + W.retry : locked, .kind = K_DB_RESUME,
			     .node = NOBODY, .status = sid, .conn = W.s[sid].conn,
			     .gen = e->gen });
	return true;
}

/* A claim while another session holds the lock's row of terms: it waits
 * for the row (no answer, not idle) until then; true when it waits. */
static bool db_claim_wait(int sid, const struct simev *e)
{
	struct squery *q = &sq[e->gen - 1];

	if (T >= W.terms_held_until)
		return false;
	q->started = lock_held_by(atoi(q->p[5]));
	W.s[sid].stamp = ++stamps;
	push((struct simev){ .t = W.terms_held_until, .kind = K_DB_RESUME,
			     .node = NOBODY, .status = sid,
			     .conn = W.s[sid].conn, .gen = e->gen });
	return true;
}

static void db_ensure(struct squery *q)
{
	sq_answer(q, 1, LEDGER_CHECK_NCOLS);
	for (int c = 0; c < LEDGER_CHECK_DB_NOW_MS; c++) /* trusted: NULL */
		put(q, 0, c, c == LEDGER_CHECK_UNTRUSTED, "t");
	put(q, 0, LEDGER_CHECK_DB_NOW_MS, false, "%" PRId64, db_ms());
}

/* The jobs' list (DESIGN 13): written while the lock is held; kept
 * nowhere, nothing reads it. */
static void db_announce(struct squery *q)
{
	sq_answer(q, 1, 2);
	put(q, 0, 0, false, "%s", lock_held_by(atoi(q->p[5])) ? "t" : "f");
	put(q, 0, 1, false, "%" PRId64, db_ms());
}

/* The requests to run now still waiting, oldest first (ledger_sql.c's
 * triggers read). */
static void db_triggers(struct squery *q)
{
	int rows = 0, k;

	for (k = 0; k < W.n_trigs; k++)
		rows += !W.trigs[k].run_id;
	rows = rows > LEDGER_SQL_TRIGGERS_ROWS ? LEDGER_SQL_TRIGGERS_ROWS : rows;
	sq_answer(q, rows, 5);
	for (int r = 0, k2 = 0; r < rows && k2 < W.n_trigs; k2++) {
		const struct trig *g = &W.trigs[k2];

		if (g->run_id)
			continue;
		put(q, r, 0, false, "%" PRId64, g->id);
		put(q, r, 1, false, "%s", W.job_name[g->job]);
		put(q, r, 2, false, "%" PRId64, g->tick);
		put(q, r, 3, false, "sim");
		put(q, r++, 4, false, "%" PRId64, db_ms());
	}
}

/* Statement q, executed on session sid. */
/* The schema's and the controls' probes: there, and the owner trusted
 * (the probe's second column NULL). */
static void db_probe(struct squery *q)
{
	sq_answer(q, 1, q->kind == Q_SCHEMA ? 1 : 2);
	put(q, 0, 0, false, "t");
}

static void db_execute(int sid, struct squery *q)
{
	enum qkind k = q->kind;

	if (k == Q_ENSURE) {
		db_ensure(q);
	} else if (k == Q_CLAIM) {
		db_claim(q, lock_held_by(atoi(q->p[5])));
	} else if (k == Q_LAST) {
		db_last(sid, q);
	} else if (k == Q_FINISH) {
		db_finish(q);
	} else if (k == Q_ON_FAILURE) {
		db_on_failure(sid, q);
	} else if (k == Q_PRUNE || k == Q_LISTEN) {
		sq_answer(q, 0, 0); /* nothing is 30 days old; no NOTIFY comes */
	} else if (k == Q_SCHEMA || k == Q_PROBE) {
		db_probe(q);
	} else if (k == Q_CONTROLS || k == Q_PRIORITY || k == Q_HANDED) {
		db_controls(q);
	} else if (k == Q_ANNOUNCE) {
		db_announce(q);
	} else if (k == Q_TRIGGERS) {
		db_triggers(q);
	} else {
		fail_at(1u << W.s[sid].node, "a ledger statement the model does not know");
		sq_answer(q, 0, 0);
	}
}

/* A statement reaches the server on session sid: executed at once (one
 * snapshot, one commit), answered over the network, unless it waits for
 * a row or a table someone else locked. DIFFERS: no statement fails with
 * an SQL error but a lock_timeout, ENSURE always finds the ledger usable,
 * and the prune deletes nothing (no row is 30 days old). */
static void db_query(int sid, const struct simev *e)
{
	struct squery *q = &sq[e->gen - 1];
	bool controls = q->kind == Q_CONTROLS || q->kind == Q_PRIORITY ||
			q->kind == Q_HANDED;

	if ((q->kind == Q_CLAIM && db_claim_wait(sid, e)) ||
	    (controls && db_controls_wait(sid, e)))
		return;
	db_execute(sid, q);
	db_reply(sid, S_ANSWER, e->gen, 0, 0);
	db_done(sid);
}

/* The terms row is free: a claim that waited on it goes on, unless its
 * session ended meanwhile (its statement went with it). */
void db_resume(const struct simev *e)
{
	int sid = e->status;
	struct squery *q = &sq[e->gen - 1];

	if (sid >= W.n_s || !W.s[sid].alive || W.s[sid].conn != e->conn)
		return;
	if (q->kind == Q_CLAIM)
		db_claim(q, q->started);
	else if (!q->error)
		db_controls(q);
	db_reply(sid, S_ANSWER, e->gen, 0, 0);
	db_done(sid);
}
