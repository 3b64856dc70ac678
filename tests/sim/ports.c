/* ports.c: the ports of the simulator (tests/sim/README.md): what
 * src/supervisor.c and the job layer call for I/O (lease.h, child.h,
 * failsafe.h, libev, notify.h, dynlib.h, log.h, erand48), implemented over
 * the models at link time; the election's steps, traced and checked; the
 * pgleader processes (boot, exit, kill -9, SIGSTOP and SIGCONT). */
#include <errno.h>

#include "exit_codes.h"
#include "output.h"
#include "sim.h"

static void cs_query_answer(struct node *n, struct csess *c, const struct simev *e);
static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ---- the client sessions: lease.c over the network model --------------- */

static void cs_send(struct node *n, struct csess *c, enum op op)
{
	struct simev e = { .kind = K_TO_DB, .node = NOBODY, .from = n->i, .op = op,
			   .skind = c->skind, .conn = c->conn, .status = c->sid };

	send_link(e, n->i, 0);
}

int cur_node = NOBODY; /* whose code runs: its clock (sim_clock_gettime) */

/* lease.c's closed(): the caller's statement, if any, is answered with
 * an error without a SQLSTATE (the session closed), at once. */
static void cs_closed(struct csess *c)
{
	lease_query_fn fn = c->q_fn;
	void *arg = c->q_arg;
	bool abandon = c->q_waiting || c->q_in_flight;

	c->phase = PH_CLOSED;
	c->then = THEN_HOLD;
	c->ping_wanted = false;
	c->conn = 0;
	c->sid = NOBODY;
	c->pid = 0;
	c->want_lock = 0;
	c->plain_next = c->rank_next = false;
	c->q_waiting = c->q_in_flight = false;
	c->q_fn = NULL;
	if (abandon && fn)
		AT_NODE(&W.nodes[c->node], fn(arg, NULL, NULL, "the session closed"));
}

/* lease_conn_close: the server hears the close (FIN) over the network. */
static void cs_close(struct node *n, struct csess *c)
{
	if (c->conn)
		cs_send(n, c, C_CLOSE);
	cs_closed(c);
}

static const char *news_name(int news)
{
	static const char *const names[] = { "CONNECTED", "FAILED", "ACQUIRED",
		"BUSY", "PING_OK", "RELEASED", "GRANTED" };

	return news >= 0 && news < 7 ? names[news] : "?";
}

/* What a lease reports, for news the election's session news: the
 * supervisor's lease_event_cb or fence_event_cb hears it, as node n. */
static void cs_emit(struct node *n, struct csess *c, int news, enum fault fault,
		    const char *reason, unsigned nodes)
{
	static const enum lease_event of_news[] = {
		[ELECTION_SESSION_CONNECTED] = LEASE_CONNECTED,
		[ELECTION_SESSION_FAILED] = LEASE_LOST,
		[ELECTION_SESSION_ACQUIRED] = LEASE_ACQUIRED,
		[ELECTION_SESSION_BUSY] = LEASE_BUSY,
		[ELECTION_SESSION_PING_OK] = LEASE_PING_OK,
		[ELECTION_SESSION_RELEASED] = LEASE_RELEASED,
		[ELECTION_SESSION_GRANTED] = LEASE_GRANTED,
	};

	if (!n->up || !c->cb)
		return;
	c->ping_mask = nodes;
	if (news == ELECTION_SESSION_PING_OK)
		reason = NULL;
	AT_NODE(n, c->cb(c->cb_arg, of_news[news], fault, reason));
}

/* lease_conn_vfail: closed, then LOST (or CONNECT_FAILED) at once. */
static void cs_fail(struct node *n, struct csess *c, enum fault fault,
		    const char *why)
{
	bool connecting = c->phase == PH_CONNECTING;

	cs_close(n, c);
	(void)connecting; /* both are SESSION_FAILED to the election */
	cs_emit(n, c, ELECTION_SESSION_FAILED, fault, why, 0);
}

static void cs_connect(struct node *n, struct csess *c)
{
	cs_close(n, c);
	c->token = 0;
	c->conn = ++W.next_conn;
	c->phase = PH_CONNECTING;
	cs_send(n, c, C_CONNECT);
}

static void cs_lock(struct node *n, struct csess *c, bool queue)
{
	if (c->phase == PH_QUERYING && c->q_back == PH_READY) {
		c->want_lock = queue ? 2 : 1; /* after the statement's answer */
		return;
	}
	if (c->phase != PH_READY) {
		cs_fail(n, c, FAULT_PROTOCOL, "lock requested on a connection that is not ready");
		return;
	}
	c->in_queue = queue;
	c->counted = !c->plain_next && !queue && !c->skind;
	c->phase = PH_LOCKING;
	cs_send(n, c, queue ? C_WAIT : c->counted && c->rank_next ? C_TRY_RANK : C_TRY);
	c->plain_next = c->rank_next = false;
}

static void cs_ping(struct node *n, struct csess *c)
{
	if ((c->phase == PH_CLAIMING && c->skind) ||
	    (c->phase == PH_QUERYING && c->q_back == PH_HELD))
		c->ping_wanted = true;
	if (c->phase != PH_HELD)
		return;
	c->phase = PH_PINGING;
	cs_send(n, c, C_PING);
}

/* lease.c's released(): closed without an unlock, or after one. */
static void cs_released(struct node *n, struct csess *c, enum fault fault)
{
	cs_close(n, c);
	cs_emit(n, c, ELECTION_SESSION_RELEASED, fault, NULL, 0);
}

static bool cs_unlock_when_held(struct node *n, struct csess *c, enum lthen then)
{
	switch (c->phase) {
	case PH_HELD:
		c->then = then;
		c->phase = PH_UNLOCKING;
		cs_send(n, c, C_UNLOCK);
		return true;
	case PH_QUERYING:
		if (c->q_back != PH_HELD)
			return false;
		/* unlocked after the caller's statement */
		__attribute__((fallthrough));
	case PH_CLAIMING: case PH_PINGING: case PH_UNLOCKING:
		if (c->then != THEN_RELEASE)
			c->then = then;
		return true;
	case PH_CLOSED: case PH_CONNECTING: case PH_READY: case PH_LOCKING:
		return false;
	}
	return false;
}

static void cs_unlock(struct node *n, struct csess *c)
{
	if (c->phase == PH_READY || (c->phase == PH_QUERYING && c->q_back == PH_READY))
		cs_emit(n, c, ELECTION_SESSION_RELEASED, FAULT_NONE, NULL, 0);
	else if (!cs_unlock_when_held(n, c, THEN_UNLOCK))
		cs_released(n, c, FAULT_CONNECTION);
}

static void cs_release(struct node *n, struct csess *c)
{
	if (!cs_unlock_when_held(n, c, THEN_RELEASE))
		cs_released(n, c, FAULT_CONNECTION);
}

/* held(): the lock is ours after a claim or a ping; give it back if asked. */
static bool cs_held(struct node *n, struct csess *c)
{
	c->phase = PH_HELD;
	if (c->then == THEN_HOLD)
		return true;
	c->phase = PH_UNLOCKING;
	cs_send(n, c, C_UNLOCK);
	return false;
}

/* lock_done: granted, the claim sets the server lease (and, for the lock,
 * reads the token); a fence is told held at once, a lock granted. */
static void cs_lock_answer(struct node *n, struct csess *c, const struct simev *e)
{
	if (c->phase != PH_LOCKING)
		return;
	if (e->op == S_LOCK_TIMEOUT || !e->status) {
		c->phase = PH_READY;
		c->ahead = e->op == S_LOCK_TIMEOUT || c->in_queue || !c->counted
			? -1 : (int)e->token;
		c->ranked = c->ahead >= 0 && e->mask; /* S_LOCK's mask: ranked */
		cs_emit(n, c, ELECTION_SESSION_BUSY, FAULT_NONE, NULL, 0);
		return;
	}
	c->phase = PH_CLAIMING;
	cs_send(n, c, C_CLAIM);
	cs_emit(n, c, c->skind ? ELECTION_SESSION_ACQUIRED : ELECTION_SESSION_GRANTED,
		FAULT_NONE, NULL, 0);
}

static void cs_claim_answer(struct node *n, struct csess *c, const struct simev *e)
{
	if (c->phase != PH_CLAIMING)
		return;
	c->token = e->token;
	if (!cs_held(n, c))
		return;
	if (!c->skind) {
		cs_emit(n, c, ELECTION_SESSION_ACQUIRED, FAULT_NONE, NULL, 0);
	} else if (c->ping_wanted) {
		c->ping_wanted = false;
		cs_emit(n, c, ELECTION_SESSION_PING_OK, FAULT_NONE, NULL, 0);
	}
}

static void cs_unlock_answer(struct node *n, struct csess *c)
{
	if (c->phase != PH_UNLOCKING)
		return;
	/* DIFFERS: lease.c undoes the claim in a second round trip
	 * (UNCLAIMING); the model's unlock does both at once */
	if (c->then == THEN_RELEASE) {
		cs_released(n, c, FAULT_NONE);
		return;
	}
	c->phase = PH_READY;
	c->then = THEN_HOLD;
	cs_emit(n, c, ELECTION_SESSION_RELEASED, FAULT_NONE, NULL, 0);
}

/* lease.c's answered() and conn_failed(). */
void cs_answer(struct node *n, struct csess *c, const struct simev *e)
{
	switch (e->op) {
	case S_CONNECTED:
		if (c->phase != PH_CONNECTING)
			return;
		c->sid = e->status;
		c->pid = (int)e->token;
		c->phase = PH_READY;
		cs_emit(n, c, ELECTION_SESSION_CONNECTED, FAULT_NONE, NULL, 0);
		return;
	case S_REFUSED:
		cs_closed(c);
		cs_emit(n, c, ELECTION_SESSION_FAILED, FAULT_UNREACHABLE,
			"connection refused (the server is down)", 0);
		return;
	case S_ENDED:
		cs_closed(c);
		cs_emit(n, c, ELECTION_SESSION_FAILED, FAULT_TERMINATED,
			"the server ended the session", 0);
		return;
	case S_LOCK: case S_LOCK_TIMEOUT: cs_lock_answer(n, c, e); return;
	case S_CLAIMED: cs_claim_answer(n, c, e); return;
	case S_PONG:
		if (c->phase == PH_PINGING && cs_held(n, c))
			cs_emit(n, c, ELECTION_SESSION_PING_OK, FAULT_NONE, NULL, e->mask);
		return;
	case S_UNLOCKED: cs_unlock_answer(n, c); return;
	case S_ANSWER: cs_query_answer(n, c, e); return;
	default: return; /* not the server's */
	}
}

/* ---- the command: child.c over the process model ------------------------ */

static void child_exit_at(struct node *n, const struct child *ch, double at, int status)
{
	push((struct simev){ .t = at, .kind = K_CHILD_EXIT, .node = n->i,
			     .gen = ch->id, .status = status });
}

/* Any of the node's processes alive: the command, or a job's run. */
bool cmd_alive(const struct node *n)
{
	for (int k = 0; k < n->n_procs; k++)
		if (n->procs[k] && n->procs[k]->alive)
			return true;
	return false;
}

struct child *proc_of(struct node *n, uint64_t id)
{
	for (int k = 0; k < n->n_procs; k++)
		if (n->procs[k] && n->procs[k]->id == id)
			return n->procs[k];
	return NULL;
}

/* child.c's child_stop: SIGTERM, SIGKILL after grace_period. */
static void proc_stop(struct node *n, struct child *ch)
{
	if (!ch->alive || ch->term_sent)
		return;
	ch->term_sent = true;
	say(1u << n->i, "%s: SIGTERM to pid %d", n->name, ch->pid);
	child_exit_at(n, ch, T + ch->stop_need, 143);
	push((struct simev){ .t = T + W.grace, .kind = K_NOTIFY, .node = n->i,
			     .op = N_GRACE, .gen = ch->id });
}

void proc_kill(struct node *n, struct child *ch, const char *why)
{
	if (!ch->alive)
		return;
	say(1u << n->i, "%s: SIGKILL to pid %d (%s)", n->name, ch->pid, why);
	/* the group is gone once every process left uninterruptible sleep */
	child_exit_at(n, ch, T + (chance(0.1) ? urand(0.05, SIGKILL_GONE)
				  : urand(0, 0.05)), 137);
}


/* ---- the clocks, the log and libev's timers ----------------------------
 *
 * What the supervisor, jobs.c and ledger.c read and arm: the node's
 * monotonic clock, the server's wall clock, the trace, the node's timers;
 * the server's side of ledger_sql.c's statements is database.c's. */

int64_t db_ms(void)
{
	return DB_BASE_MS + (int64_t)llround(T * 1000);
}

double t_of_ms(int64_t ms)
{
	return (double)(ms - DB_BASE_MS) / 1000;
}

/* clock_gettime of the linked job layer: the node's monotonic clock. */
int sim_clock_gettime(clockid_t id, struct timespec *ts)
{
	double t = cur_node >= 0 ? node_now(&W.nodes[cur_node]) : T;

	if (id == CLOCK_REALTIME)
		t = (double)DB_BASE_MS / 1000 + T;
	ts->tv_sec = (time_t)floor(t);
	ts->tv_nsec = (long)((t - floor(t)) * 1e9);
	return 0;
}

/* log.c: the lines of the job layer and the ledger go to the trace (not
 * their debug lines). */
void log_msg(enum log_level level, const char *fmt, ...)
{
	char buf[LOG_MSG_MAX];
	va_list ap;

	if (level > LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (cur_node >= 0)
		check_run_end_line(&W.nodes[cur_node], level, buf);
	say(cur_node >= 0 ? 1u << cur_node : 0, "%s:   jobs: %s",
	    cur_node >= 0 ? W.nodes[cur_node].name : "?", buf);
}

/* The election's lines (supervisor.c's report) and the runs' (jobs.c). */
void log_event(enum log_level level, const struct log_fields *f, const char *fmt, ...)
{
	char buf[LOG_MSG_MAX];
	va_list ap;

	(void)f;
	if (level > LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say(cur_node >= 0 ? 1u << cur_node : 0, "%s:   log: %s",
	    cur_node >= 0 ? W.nodes[cur_node].name : "?", buf);
}

/* libev: the loop's idea of the time made the clock's; a node's timers
 * count from its simulated clock at the moment they start, always. */
void ev_now_update(struct ev_loop *loop)
{
	(void)loop;
}

/* libev: a timer of node loop->node, on its clock, a nanosecond late: the
 * clock the node reads (sim_clock_gettime) is whole nanoseconds, so that a
 * timer due within one of them would find its deadline not reached yet,
 * and be set again, some 17,000 times a nanosecond (seed 3000190 of sim
 * --triggers, a leader's wakeup 6e-14 s ahead of the clock it read). */
void ev_timer_start(struct ev_loop *loop, ev_timer *w)
{
	struct node *n = &W.nodes[loop->node];

	if (w->active)
		return; /* as libev: starting an active watcher does nothing */
	if (n->n_tm == MAXT)
		abort(); /* raise MAXT */
	w->active = 1;
	n->tm[n->n_tm].w = w;
	n->tm[n->n_tm].stamp = ++W.next_tstamp;
	push((struct simev){ .t = fmax(T, global_of(n, node_now(n) + w->at + 1e-9)),
			     .kind = K_EVTIMER, .node = n->i, .gen = n->tm[n->n_tm].stamp });
	n->n_tm++;
}

void ev_timer_stop(struct ev_loop *loop, ev_timer *w)
{
	struct node *n = &W.nodes[loop->node];

	w->active = 0;
	for (int k = 0; k < n->n_tm; k++)
		if (n->tm[k].w == w) {
			n->tm[k] = n->tm[--n->n_tm];
			return;
		}
}

void evtimer_fire(struct node *n, uint64_t stamp)
{
	for (int k = 0; k < n->n_tm; k++) {
		ev_timer *w = n->tm[k].w;

		if (n->tm[k].stamp != stamp)
			continue;
		n->tm[k] = n->tm[--n->n_tm];
		w->active = 0;
		AT_NODE(n, w->cb(&n->loop, w, EV_TIMER));
		return;
	}
}

/* ---- lease_query: lease.c's one statement at a time, on either session --- */

void cs_send_query(struct node *n, struct csess *c)
{
	struct simev e;

	if (!c->q_waiting || (c->phase != PH_READY && c->phase != PH_HELD))
		return;
	c->q_waiting = false;
	c->q_in_flight = true;
	c->q_back = c->phase;
	c->phase = PH_QUERYING;
	e = (struct simev){ .kind = K_TO_DB, .node = NOBODY, .from = n->i, .op = C_QUERY,
			    .skind = c->skind, .conn = c->conn, .status = c->sid,
			    .gen = c->q_id };
	send_link(e, n->i, 0);
}

bool lease_query(struct lease *l, const char *sql, int nparams,
		 const char *const *params, lease_query_fn fn, void *arg)
{
	struct node *n = &W.nodes[l->node];
	struct csess *c = l->skind ? &n->fence : &n->lock;

	if (c->q_waiting || c->q_in_flight || nparams > LEASE_QUERY_PARAMS ||
	    c->phase == PH_CLOSED || c->phase == PH_CONNECTING)
		return false;
	c->q_id = sq_new(sql, nparams, params);
	c->q_fn = fn;
	c->q_arg = arg;
	c->q_waiting = true;
	cs_send_query(n, c);
	return true;
}

/* lease.c's query_answered: what the lease's owner asked for meanwhile
 * goes first, then the caller hears, then the next statement may go. */
static void cs_query_answer(struct node *n, struct csess *c, const struct simev *e)
{
	struct squery *q = &sq[e->token - 1];
	struct lease_sql_answer a = { q->nrows, q->ncols, q->vals };
	lease_query_fn fn = c->q_fn;
	void *arg = c->q_arg;
	int want = c->want_lock;

	if (c->phase != PH_QUERYING || !c->q_in_flight || c->q_id != e->token)
		return;
	c->phase = c->q_back;
	c->q_in_flight = false;
	c->q_fn = NULL;
	c->want_lock = 0;
	if (c->phase == PH_HELD && c->then != THEN_HOLD) {
		c->phase = PH_UNLOCKING;
		cs_send(n, c, C_UNLOCK);
	} else if (c->phase == PH_READY && want) {
		cs_lock(n, c, want == 2);
	} else if (c->phase == PH_HELD && c->ping_wanted) {
		c->ping_wanted = false;
		cs_ping(n, c);
	}
	if (q->kind == Q_CONTROLS && !q->error) {
		n->ctl_read = true; /* what check_start goes by */
		n->ctl_paused = q->paused;
	}
	if (q->error)
		AT_NODE(n, fn(arg, NULL, "55P03", "canceling statement due to lock timeout"));
	else
		AT_NODE(n, fn(arg, &a, NULL, NULL));
	cs_send_query(n, c);
}

/* ---- child.h: the command's and the jobs' processes, over the model ----- */
int64_t interval_ms[MAXJ];

struct child *child_new(struct ev_loop *loop, char *const *argv, bool shell,
			double grace_period, child_gone_fn on_gone, void *arg)
{
	struct node *n = &W.nodes[loop->node];
	struct child *c = calloc(1, sizeof(*c));

	(void)argv;
	(void)shell;
	(void)grace_period; /* every command has the fleet's (W.grace) */
	if (!c || n->n_procs == MAXJ)
		abort();
	c->job = W.n_jobs ? n->n_procs : -1;
	c->on_gone = on_gone;
	c->arg = arg;
	n->procs[n->n_procs++] = c;
	return c;
}

void child_on_killed(struct child *c, void (*fn)(void *arg))
{
	c->on_killed = fn;
}

void child_set_label(struct child *c, const char *job)
{
	(void)c;
	(void)job;
}

void child_set_process(struct child *c, const struct job_process *p)
{
	(void)c;
	(void)p;
}

/* The commands of the process model print nothing: no pipe, no output. */
void child_set_output(struct child *c, int fd)
{
	(void)c;
	(void)fd;
}

struct output {
	int none;
};

struct output *output_new(struct ev_loop *loop, const char *job, size_t tail_bytes)
{
	(void)loop;
	(void)job;
	(void)tail_bytes;
	return calloc(1, sizeof(struct output));
}

void output_free(struct output *o)
{
	free(o);
}

int output_open(struct output *o)
{
	(void)o;
	errno = ENOSYS; /* said once a run, as a pipe that could not be made */
	return -1;
}

void output_started(struct output *o)
{
	(void)o;
}

void output_finish(struct output *o)
{
	(void)o;
}

int output_captured(const struct output *o)
{
	(void)o;
	return 0;
}

const char *output_tail(struct output *o, size_t *len)
{
	(void)o;
	*len = 0;
	return NULL;
}

const char *output_last_line(const struct output *o)
{
	(void)o;
	return "";
}

void child_free(struct child *c)
{
	struct node *n = &W.nodes[cur_node];

	for (int k = 0; k < n->n_procs; k++)
		if (n->procs[k] == c)
			n->procs[k] = NULL;
	free(c);
}

static const char *env_of(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; env && *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* A scheduled run takes from nothing to a few intervals (a run still
 * going at its next tick makes it skipped; max_runtime may stop it); a
 * job without a schedule runs as the single command does. */
static void run_length(struct node *n, struct child *ch)
{
	double iv = ch->job < 0 ? 0 : (double)interval_ms[ch->job] / 1000;
	double r = ch->job < 0 ? 0 : urand(0, 1);

	if (ch->job < 0 || !W.sched[ch->job]) {
		if (chance(0.15))
			child_exit_at(n, ch, T + urand(0.5, 60), (int[]){ 0, 1, 2, 143 }[irand(4)]);
		return;
	}
	child_exit_at(n, ch, T + (r < 0.7 ? urand(0.01, 0.5 * iv) : r < 0.95
				  ? urand(0.5, 1.5) * iv : urand(2, 4) * iv),
		      chance(0.85) ? 0 : 1);
}

int child_start(struct child *c, char *const *extra_env, char *err, size_t errlen)
{
	struct node *n = &W.nodes[cur_node];
	const char *token = env_of(extra_env, "PGLEADER_FENCING_TOKEN"),
		   *run = env_of(extra_env, "PGLEADER_RUN_ID");
	double r = urand(0, 1);

	(void)err;
	(void)errlen;
	if (c->alive || c->running)
		fail_at(1u << n->i, "%s: %s%s started while its last run is alive",
			n->name, c->job < 0 ? "the command" : "job ",
			c->job < 0 ? "" : W.job_name[c->job]);
	c->alive = c->running = true;
	c->id = ++W.next_child;
	c->pid = ++W.next_pid;
	c->term_sent = false;
	c->token = token ? strtoull(token, NULL, 10) : 0;
	c->run_id = run ? strtoll(run, NULL, 10) : 0;
	c->tick = 0;
	c->stop_need = r < 0.3 ? urand(0, 0.1) : r < 0.8 ? urand(0.1, W.grace)
		: urand(W.grace, 2 * W.grace + 1);
	if (c->job < 0)
		say(1u << n->i, "%s: command pid %d starts (stops in %.3fs after SIGTERM)",
		    n->name, c->pid, c->stop_need);
	else
		say(1u << n->i, "%s: job %s pid %d starts (run %" PRId64 ", token %"
		    PRIu64 ", stops in %.3fs after SIGTERM)", n->name, W.job_name[c->job],
		    c->pid, c->run_id, c->token, c->stop_need);
	run_length(n, c);
	check_run_start(n, c);
	return 0;
}

/* ---- hook.h: a job's on_failure command (DESIGN 13) ---- */

/* It takes from nothing to one and a half times its timeout (then it is
 * stopped: timed out), and ends by itself; a kill -9 of its pgleader
 * ends it with the process (jobs_free is never called then). */
struct hook {
	ev_timer done;
	struct ev_loop *loop;
	hook_done_fn fn;
	void *arg;
	bool timed_out;
	int status;
};

static void hook_done_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct hook *h = w->data;

	(void)loop;
	(void)revents;
	h->fn(h->arg, h->status, h->timed_out);
	free(h);
}

struct hook *hook_start(struct ev_loop *loop, const char *command,
			char *const *extra_env, const char *input, size_t len,
			double timeout, double grace, hook_done_fn fn, void *arg,
			char *err, size_t errlen)
{
	struct node *n = &W.nodes[cur_node];
	const char *run = env_of(extra_env, "PGLEADER_RUN_ID");
	struct hook *h = calloc(1, sizeof(*h));
	double takes = urand(0, 1.5 * timeout);

	(void)command;
	(void)input;
	(void)len;
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	say(1u << n->i, "%s: on_failure for run %s starts", n->name, run ? run : "?");
	check_on_failure_start(n, run ? strtoll(run, NULL, 10) : 0);
	h->fn = fn;
	h->arg = arg;
	h->loop = loop;
	h->timed_out = takes > timeout;
	h->status = h->timed_out ? 143 : irand(2);
	ev_timer_init(&h->done, hook_done_cb, h->timed_out ? timeout + grace / 2 : takes, 0.);
	h->done.data = h;
	ev_timer_start(loop, &h->done);
	return h;
}

void hook_free(struct hook *h)
{
	if (!h)
		return;
	ev_timer_stop(h->loop, &h->done);
	free(h);
}

void child_stop(struct child *c)
{
	proc_stop(&W.nodes[cur_node], c);
}

void child_kill(struct child *c)
{
	proc_kill(&W.nodes[cur_node], c, "jobs_kill");
}

void child_signal(struct child *c, int sig)
{
	(void)c;
	(void)sig;
}

bool child_running(const struct child *c)
{
	return c->running;
}

bool child_exited(const struct child *c)
{
	return !c->running || !c->alive;
}

pid_t child_pid(const struct child *c)
{
	return c->running ? c->pid : 0;
}

/* ---- failsafe.h: failsafe.c's rounds over the network model ------------- */

struct failsafe *failsafe_new(struct ev_loop *loop, const struct config *cfg,
			      const struct failsafe_callbacks *cb, char *err,
			      size_t errlen)
{
	struct node *n = &W.nodes[loop->node];

	(void)cfg;
	(void)err;
	(void)errlen;
	n->fcb = *cb;
	n->fs_h.node = n->i;
	return &n->fs_h;
}

void failsafe_free(struct failsafe *f)
{
	(void)f;
}

const char *failsafe_detail(const struct failsafe *f)
{
	(void)f;
	return NULL; /* the model's rounds say nothing of their answers */
}

const char *failsafe_members_hash(const struct failsafe *f)
{
	return W.nodes[f->node].hash;
}

bool failsafe_authorized(const struct failsafe *f, const char *authorization)
{
	(void)f;
	(void)authorization;
	return true;
}

/* The first of nodes (node ids, comma-separated) that f's node does not
 * list. */
const char *failsafe_stranger(const struct failsafe *f, const char *nodes,
			      char *buf, size_t len)
{
	const struct node *n = &W.nodes[f->node];

	for (const char *p = nodes; p && *p; p += strcspn(p, ","), p += *p == ',') {
		int j;

		snprintf(buf, len, "%.*s", (int)strcspn(p, ","), p);
		j = node_of_name(buf);
		if (j >= 0 && !(n->members >> j & 1))
			return buf;
	}
	return NULL;
}

double peer_delay(void)
{
	return urand(0.0005, 0.005) + (chance(0.02) ? urand(0, 0.5) : 0);
}

struct round *round_of(struct node *n, int op)
{
	return &n->rnd[op == P_CHECK ? R_CHECK : R_CLAIM];
}

static void peers_ask(struct node *n, int op, uint64_t token)
{
	struct round *r = round_of(n, op);

	*r = (struct round){ .open = true, .id = ++W.next_round, .op = op };
	for (int j = 0; j < W.n; j++) {
		if (j == n->i || !(n->members >> j & 1))
			continue;
		r->asked++;
		if (!W.nodes[j].up) {
			r->answered++; /* refused: no agreement; "not running" */
			continue;
		}
		if (W.part_nn[n->i][j])
			continue; /* silent */
		push((struct simev){ .t = T + peer_delay(), .kind = K_PEER_REQ, .node = j,
				     .from = n->i, .op = op, .gen = r->id, .token = token });
	}
	/* each answer is due within ping_timeout; a claim a member refused
	 * (here: nothing listens) is lost at once (failsafe.c's claim_lost) */
	push((struct simev){ .t = T + (r->answered == r->asked ||
				       (op == P_CLAIM && r->answered > 0) ? 0
				       : W.p.ping_timeout),
			     .kind = K_PEER_DEADLINE, .node = n->i, .op = op, .gen = r->id });
}

void failsafe_claim(struct failsafe *f, uint64_t fencing_token)
{
	peers_ask(&W.nodes[f->node], P_CLAIM, fencing_token);
}

void failsafe_regained(struct failsafe *f, uint64_t fencing_token)
{
	peers_ask(&W.nodes[f->node], P_REGAINED, fencing_token);
}

void failsafe_check(struct failsafe *f)
{
	peers_ask(&W.nodes[f->node], P_CHECK, 0);
}

/* failsafe.c's deliver_cb: round_done_cb (ROUND_DONE, after a claim or a
 * regained claim) or check_done_cb. */
void peers_finish(struct node *n, struct round *r)
{
	enum failsafe_check check = FAILSAFE_CLEAR;

	r->open = false;
	if (r->op != P_CHECK) {
		AT_NODE(n, n->fcb.round_done(n->fcb.arg, r->agree, r->asked));
		return;
	}
	if (r->running)
		check = FAILSAFE_RUNNING;
	else if (r->answered < r->asked)
		check = FAILSAFE_SILENT;
	AT_NODE(n, n->fcb.check_done(n->fcb.arg, check,
				     r->same_list > 0 && r->other_list == 0));
}

/* A member answers: a claim goes through the election (supervisor_claim;
 * with "regained", http.c calls supervisor_regained), a check reads the
 * snapshot (supervisor_running). */
void peer_request(struct node *m, const struct simev *e)
{
	struct node *asker = &W.nodes[e->from];
	char reason[256];
	int status;

	cur_node = m->i;
	if (e->op == P_CHECK)
		status = supervisor_running(m->sup);
	else if (e->op == P_CLAIM)
		status = supervisor_claim(m->sup, asker->name, e->token, asker->hash,
					  reason, sizeof(reason));
	else
		status = supervisor_regained(m->sup, asker->name, asker->hash, reason,
					     sizeof(reason));
	cur_node = NOBODY;
	say(1u << m->i | 1u << asker->i, "%s answers %s's %s: %d", m->name,
	    asker->name, e->op == P_CLAIM ? "claim" : e->op == P_CHECK ? "check"
	    : "regained claim", status);
	if (W.part_nn[m->i][asker->i])
		return;
	push((struct simev){ .t = T + peer_delay(), .kind = K_PEER_ANS, .node = e->from,
			     .from = m->i, .op = e->op, .gen = e->gen, .status = status });
}

void peer_answer(struct node *n, const struct simev *e)
{
	struct round *r = round_of(n, e->op);

	if (!r->open || r->id != e->gen)
		return;
	r->answered++;
	if (e->op == P_CHECK) {
		r->running |= e->status == 1;
		/* http.c names the member's list in its answer */
		if (!strcmp(W.nodes[e->from].hash, n->hash))
			r->same_list++;
		else
			r->other_list++;
	} else
		r->agree += e->status == 200;
	/* failsafe.c's claim_lost: a claim ends with its first refusal; the
	 * regained claim runs to its end */
	if (r->answered == r->asked || (e->op == P_CLAIM && e->status != 200))
		peers_finish(n, r);
}

/* ---- lease.h: lease.c over the network model ----------------------------- */

static struct node *node_of_lease(const struct lease *l)
{
	return &W.nodes[l->node];
}

static struct csess *sess_of(const struct lease *l)
{
	struct node *n = node_of_lease(l);

	return l->skind ? &n->fence : &n->lock;
}

struct lease *lease_new(struct ev_loop *loop, const struct lease_options *o,
			lease_event_fn fn, void *arg, char *err, size_t errlen)
{
	struct node *n = &W.nodes[loop->node];
	struct lease *l = &n->lease_h[o->fence];
	struct csess *c;

	(void)err;
	(void)errlen;
	l->node = n->i;
	l->skind = o->fence;
	c = sess_of(l);
	c->cb = fn;
	c->cb_arg = arg;
	return l;
}

/* The process is gone or starts again: its sessions are closed already
 * (node_gone); what they answer late goes nowhere. */
void lease_free(struct lease *l)
{
	sess_of(l)->cb = NULL;
}

double lease_connect_timeout(const struct lease *l)
{
	(void)l;
	return 10.25; /* libpq's connect_timeout of one host, as lease.c's */
}

/* ---- what the election may ask of its sessions ---------------------------
 *
 * lease.c copes with any call, but the election asks only what the
 * session it knows can do: each request below is checked against the
 * session's state as the election last heard of it (the contract
 * test_election.c's random world checked against a world of its own). */

/* The session holds its key, as the election heard (a fence's ACQUIRED
 * comes at the grant, before its claim is answered). */
static bool sess_held(const struct csess *c)
{
	return c->phase == PH_HELD || c->phase == PH_PINGING ||
	       (c->phase == PH_CLAIMING && c->skind) ||
	       (c->phase == PH_QUERYING && c->q_back == PH_HELD);
}

static const char *const sess_names[] = { "lock", "fence" };

/* A lock or fence request: the session is open and idle (or busy with a
 * statement, after which the request goes), none in flight, not held. */
static void check_lock_request(struct node *n, const struct csess *c)
{
	bool idle = c->phase == PH_READY ||
		    (c->phase == PH_QUERYING && c->q_back == PH_READY && !c->want_lock);

	if (!idle)
		fail_at(1u << n->i, "%s: the election asks for the %s on a session that "
			"is %s", n->name, sess_names[c->skind], sess_held(c)
			? "holding it" : "not open and idle (a request in flight?)");
}

/* A ping: the session holds its key; the lock's, with no ping in flight. */
static void check_ping(struct node *n, const struct csess *c)
{
	if (!c->skind && c->phase == PH_PINGING)
		fail_at(1u << n->i, "%s: a second ping of the lock in flight", n->name);
	else if (!sess_held(c) && c->phase != PH_UNLOCKING)
		fail_at(1u << n->i, "%s: a ping of the %s without it", n->name,
			sess_names[c->skind]);
}

/* The fence is never let go of while the command lives, unless SIGKILL
 * was sent (then the fence no longer matters); the lock is released only
 * once the command is gone, with no lock request in flight. */
static void check_let_go(struct node *n, const struct csess *c)
{
	bool alive = cmd_alive(n) && !n->el->killing;

	if (c->skind && sess_held(c) && alive)
		fail_at(1u << n->i, "%s: the fence let go of while the command lives",
			n->name);
	if (!c->skind && (cmd_alive(n) || c->phase == PH_LOCKING))
		fail_at(1u << n->i, "%s: the lock released %s", n->name, cmd_alive(n)
			? "while the command lives" : "with a lock request in flight");
}

void lease_connect(struct lease *l)
{
	struct node *n = node_of_lease(l);
	struct csess *c = sess_of(l);

	if (c->phase != PH_CLOSED)
		fail_at(1u << n->i, "%s: the election connects its %s session while one "
			"is open", n->name, sess_names[c->skind]);
	cs_connect(n, c);
}

void lease_try_lock(struct lease *l)
{
	check_lock_request(node_of_lease(l), sess_of(l));
	cs_lock(node_of_lease(l), sess_of(l), false);
}

void lease_wait_lock(struct lease *l)
{
	check_lock_request(node_of_lease(l), sess_of(l));
	cs_lock(node_of_lease(l), sess_of(l), true);
}

void lease_ping(struct lease *l)
{
	check_ping(node_of_lease(l), sess_of(l));
	cs_ping(node_of_lease(l), sess_of(l));
}

void lease_unlock(struct lease *l)
{
	check_let_go(node_of_lease(l), sess_of(l));
	cs_unlock(node_of_lease(l), sess_of(l));
}

void lease_release(struct lease *l)
{
	check_let_go(node_of_lease(l), sess_of(l));
	cs_release(node_of_lease(l), sess_of(l));
}

void lease_disconnect(struct lease *l)
{
	if (sess_of(l)->skind)
		check_let_go(node_of_lease(l), sess_of(l));
	cs_close(node_of_lease(l), sess_of(l));
}
int64_t lease_key(const struct lease *l) { (void)l; return W.p.lock_key; }
uint64_t lease_fencing_token(const struct lease *l) { return sess_of(l)->token; }
int lease_queue_ahead(const struct lease *l) { return sess_of(l)->ahead; }
void lease_plain_try(struct lease *l) { sess_of(l)->plain_next = true; }
bool lease_queue_ranked(const struct lease *l) { return sess_of(l)->ranked; }
void lease_rank_queue(struct lease *l) { sess_of(l)->rank_next = true; }

int lease_lock_slots(const struct lease *l)
{
	const struct csess *c = sess_of(l);

	return c->counted && c->ahead >= 0 ? W.lock_slots : 0;
}

/* No NOTIFY reaches a simulated session: a leader reads the requests to
 * run now at its ping interval (DESIGN 13). */
void lease_on_notify(struct lease *l, void (*fn)(void *arg), void *arg)
{
	(void)l;
	(void)fn;
	(void)arg;
}

/* The one database every session and the pooler reach: poll_dsn's check
 * (election_standby.c check_poll_db) must never refuse it. */
#define SIM_SYSTEM_ID UINT64_C(7337000000000000001)
#define SIM_DB_OID 5

uint64_t lease_system_id(const struct lease *l)
{
	return lease_backend_pid(l) ? SIM_SYSTEM_ID : 0;
}

uint32_t lease_db_oid(const struct lease *l)
{
	return lease_backend_pid(l) ? SIM_DB_OID : 0;
}

int lease_backend_pid(const struct lease *l)
{
	const struct csess *c = sess_of(l);

	return c->phase >= PH_READY ? c->pid : 0;
}

/* The lock's last ping: the nodes with a session for the key, their
 * names comma-separated (the failsafe members' stranger check). */
const char *lease_ping_nodes(const struct lease *l)
{
	struct csess *c = sess_of(l);
	size_t used = 0;

	if (l->skind || !W.failsafe)
		return NULL;
	c->ping_nodes[0] = '\0';
	for (int j = 0; j < W.n; j++)
		if (c->ping_mask >> j & 1)
			used += (size_t)snprintf(c->ping_nodes + used, sizeof(c->ping_nodes) - used,
						 "%s%s", used ? "," : "", W.nodes[j].name);
	return c->ping_nodes;
}

/* ---- libev, systemd, dlopen, log.c: what else supervisor.c calls --------- */

/* supervisor.c's signals: a fault sends one (F_SIGTERM). */
void ev_signal_start(struct ev_loop *loop, ev_signal *w)
{
	struct node *n = &W.nodes[loop->node];

	if (n->n_sig == NSIG_HANDLED)
		abort(); /* raise NSIG_HANDLED */
	n->sig[n->n_sig++] = w;
}

void ev_signal_stop(struct ev_loop *loop, ev_signal *w)
{
	struct node *n = &W.nodes[loop->node];

	for (int k = 0; k < n->n_sig; k++)
		if (n->sig[k] == w) {
			n->sig[k] = n->sig[--n->n_sig];
			return;
		}
}

void send_signal(struct node *n, int signum)
{
	for (int k = 0; k < n->n_sig; k++)
		if (n->sig[k]->signum == signum) {
			AT_NODE(n, n->sig[k]->cb(&n->loop, n->sig[k], EV_SIGNAL));
			return;
		}
}

/* supervisor_start's: the election starts at once, inside the node's loop. */
void ev_once(struct ev_loop *loop, int fd, int events, ev_tstamp timeout,
	     void (*cb)(int revents, void *arg), void *arg)
{
	(void)loop;
	(void)fd;
	(void)events;
	(void)timeout;
	cb(EV_TIMER, arg);
}

/* EXIT: the node's loop returns once the event at hand is handled
 * (exits_now), then the process exits with supervisor_exit_code. */
void ev_break(struct ev_loop *loop, int how)
{
	(void)how;
	W.nodes[loop->node].exiting = true;
}

void notify_publish(const struct election_snapshot *s) { (void)s; }
void notify_stopping(void) {}
void notify_reloading(void) {}
void notify_ready(void) {}
void log_set_context(const struct log_fields *f) { (void)f; }

bool dynlib_load_curl(char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	return true;
}

/* supervisor.c's jitter source: each event's draw comes from the seed's
 * stream (the supervisor seeds erand48 from its pid and clock). */
double erand48(unsigned short xsubi[3])
{
	(void)xsubi;
	return urand(0, 1);
}

/* ---- the election as supervisor.c steps it: checked and traced ----------- */

struct election *__real_election_new(const struct election_params *p);
struct election *__wrap_election_new(const struct election_params *p);
void __real_election_step(struct election *e, const struct election_event *ev,
			  double now, struct election_output *out);
void __wrap_election_step(struct election *e, const struct election_event *ev,
			  double now, struct election_output *out);

/* The election of the supervisor being made (the linker's --wrap, see the
 * Makefile): the node's, for the invariants. */
struct election *__wrap_election_new(const struct election_params *p)
{
	if (cur_node < 0)
		abort(); /* a port called without AT_NODE: the wrong clock */
	W.nodes[cur_node].el = __real_election_new(p);
	return W.nodes[cur_node].el;
}

/* A command starts alone, with its term's token, and (DESIGN 11) only
 * under a read of the controls answered that found no pause. */
static void check_start(struct node *n)
{
	if (cmd_alive(n)) {
		fail_at(1u << n->i, "%s: START_CHILD while %s is alive", n->name,
			n->jobs ? "a run of its jobs" : "its command");
		return;
	}
	if (!sess_held(&n->lock) || n->lock.phase == PH_CLAIMING || !sess_held(&n->fence))
		fail_at(1u << n->i, "%s: the command starts without %s (as the election "
			"heard)", n->name, !sess_held(&n->fence) ? "the fence" : "the lock");
	check_token(n);
	if (!n->jobs && (!n->ctl_read || n->ctl_paused))
		fail_at(1u << n->i, "%s: the command starts %s", n->name, !n->ctl_read
			? "before any read of the controls was answered"
			: "while the last read of the controls found the lock paused");
}

static void actions_text(unsigned a, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < ELECTION_ACTION_COUNT; i++)
		if (a & election_actions[i].action)
			used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
						 " %s", election_actions[i].name);
}

static const char *event_news(const struct election_event *ev)
{
	static const char *const cmd[] = { "STARTED", "START_FAILED", "KILLED", "GONE",
		"REFUSED" };
	static const char *const peers[] = { "CLAIMED", "ROUND_DONE", "CHECK_DONE",
		"STRANGER", "REGAINED" };
	static const char *const ctl[] = { "READ", "FAILED", "ASKED" };

	if (ev->type == ELECTION_LOCK || ev->type == ELECTION_FENCE)
		return news_name((int)ev->session.news);
	if (ev->type == ELECTION_COMMAND)
		return (unsigned)ev->command.news < 5 ? cmd[ev->command.news] : "?";
	if (ev->type == ELECTION_PEERS)
		return (unsigned)ev->peers.news < 5 ? peers[ev->peers.news] : "?";
	if (ev->type == ELECTION_CONTROLS)
		return (unsigned)ev->controls.news < 3 ? ctl[ev->controls.news] : "?";
	if (ev->type == ELECTION_POLL)
		return !ev->poll.ok ? "FAILED" : !ev->poll.held ? "FREE"
			: ev->poll.queued ? "QUEUED" : "HELD";
	return "";
}
static size_t append(char *buf, size_t len, size_t used, const char *fmt, ...)
{
	va_list ap;

	if (used >= len)
		return used;
	va_start(ap, fmt);
	used += (size_t)vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	return used;
}

static void event_text(const struct election_event *ev, char *buf, size_t len)
{
	static const char *const types[] = { "START", "TICK", "SHUTDOWN", "LOCK",
		"FENCE", "COMMAND", "PEERS", "CONTROLS", "POLL" };
	size_t used = (size_t)snprintf(buf, len, "%s %s", types[ev->type], event_news(ev));
	bool peers = ev->type == ELECTION_PEERS;
	int status = ev->type == ELECTION_COMMAND ? ev->command.pid + ev->command.status
		: peers ? ev->peers.agree : 0;
	int asked = peers ? ev->peers.asked : 0;
	uint64_t token = ev->type == ELECTION_LOCK ? ev->session.fencing_token : 0;

	if (status)
		used = append(buf, len, used, " status=%d", status);
	if (asked)
		used = append(buf, len, used, " asked=%d", asked);
	if (token)
		used = append(buf, len, used, " token=%" PRIu64, token);
	if (peers && ev->peers.node)
		used = append(buf, len, used, " node=%s", ev->peers.node);
	if (ev->reason)
		append(buf, len, used, " (%s)", ev->reason);
}

/* Whether the trace shows an event that changed nothing: not the ticks,
 * the pings answered and the stranger checks, which come all the time. */
static bool event_worth_saying(const struct election_event *ev)
{
	bool ping = (ev->type == ELECTION_LOCK || ev->type == ELECTION_FENCE) &&
		    ev->session.news == ELECTION_SESSION_PING_OK;

	return !(ev->type == ELECTION_TICK || ping ||
		 (ev->type == ELECTION_POLL && ev->poll.ok) ||
		 (ev->type == ELECTION_PEERS && ev->peers.news == ELECTION_PEERS_STRANGER));
}

/* One step of a node's election, as supervisor.c's drain (or a peer's
 * claim) takes it: in the trace, and a START_CHILD checked first. */
/* DESIGN 9: a leader frozen or stalled past its lease (server_lease after
 * its last ping reply; without one, the pings' detection and the grace
 * period) does not keep its term in failsafe: the lock may have passed. */
static void check_failsafe_entry(const struct node *n, const struct election *e,
				 enum election_state before, double now)
{
	const struct election_params *p = &e->p;
	double end = e->last_reply_at + (p->server_lease > 0 ? p->server_lease
		: p->ping_interval * p->ping_failures + p->ping_timeout + p->grace_period);

	if (before != ELECTION_FAILSAFE && e->state == ELECTION_FAILSAFE && now > end)
		fail_at(1u << n->i, "%s: keeps its term in failsafe %.3fs after its lease "
			"ran out (DESIGN 9)", n->name, now - end);
}

void __wrap_election_step(struct election *e, const struct election_event *ev,
			  double now, struct election_output *out)
{
	struct node *n;
	enum election_state before = e->state;
	char evs[300], acts[200];

	if (cur_node < 0)
		abort(); /* a port called without AT_NODE: the wrong clock */
	n = &W.nodes[cur_node];
	__real_election_step(e, ev, now, out);
	n_events++;
	event_text(ev, evs, sizeof(evs));
	actions_text(out->actions, acts, sizeof(acts));
	if (out->actions || before != e->state || out->n_logs || event_worth_saying(ev))
		say(1u << n->i, "%s: %s | %s -> %s |%s", n->name, evs,
		    election_state_name(before), election_state_name(e->state), acts);
	if (out->actions & ELECTION_DO_START_CHILD)
		check_start(n);
	check_failsafe_entry(n, e, before, now);
}

/* ---- pgleader processes: boot, exit, kill -9, freeze ---------------------- */

/* The last process's supervisor, and what it made (its ports' objects). */
void node_free_supervisor(struct node *n)
{
	if (n->sup)
		AT_NODE(n, supervisor_free(n->sup));
	n->sup = NULL;
	n->el = NULL;
	n->jobs = NULL;
	n->n_procs = 0;
	n->n_tm = 0;
	n->n_sig = 0;
}

/* systemd starts pgleader: supervisor_new and supervisor_start, as main.c
 * calls them, with the node's loop. */
void node_boot(struct node *n)
{
	char err[256];

	n->up = true;
	n->frozen = false;
	n->exiting = false;
	n->inc++;
	n->n_pend = 0;
	n->rnd[R_CLAIM].open = n->rnd[R_CHECK].open = false;
	cs_closed(&n->lock);
	cs_closed(&n->fence);
	n->lock.skind = 0;
	n->fence.skind = 1;
	n->steady_since = INFINITY;
	n->ctl_read = n->ctl_paused = false; /* a new process read nothing */
	node_free_supervisor(n);
	n->loop.node = n->i;
	/* a node started during a restart waits for nothing: the man page's
	 * "otherwise" bound, with SIGKILL's time */
	restart_otherwise(W.exempt_db_until, "a node started");
	say(1u << n->i, "%s: pgleader starts (incarnation %" PRIu64 ")", n->name, n->inc);
	AT_NODE(n, n->sup = supervisor_new(&n->loop, &n->cfg, err, sizeof(err)));
	if (!n->sup) {
		fprintf(stderr, "sim: supervisor_new: %s\n", err);
		exit(2);
	}
	n->jobs = supervisor_jobs(n->sup);
	AT_NODE(n, supervisor_start(n->sup));
}

/* The process is gone: the kernel closes its sockets; systemd starts it
 * again (Restart=always) after a while. */
static void node_gone(struct node *n, double reboot_after)
{
	n->up = false;
	n->frozen = false;
	n->exiting = false;
	n->n_pend = 0;
	n->rnd[R_CLAIM].open = n->rnd[R_CHECK].open = false;
	n->steady_since = INFINITY;
	/* a dead process runs nothing: its statements are not answered; its
	 * supervisor is freed at its next start */
	n->lock.q_waiting = n->lock.q_in_flight = false;
	n->lock.q_fn = NULL;
	n->fence.q_waiting = n->fence.q_in_flight = false;
	n->fence.q_fn = NULL;
	cs_close(n, &n->lock);
	cs_close(n, &n->fence);
	push((struct simev){ .t = T + reboot_after, .kind = K_BOOT, .node = n->i,
			     .gen = n->inc });
}

void node_exit(struct node *n, const char *why)
{
	int code;

	AT_NODE(n, code = supervisor_exit_code(n->sup));
	say(1u << n->i, "%s: pgleader %s with code %d", n->name, why, code);
	/* every node's configuration is sound, and its pooler reaches the
	 * lock's database: nothing the faults do may make it refuse one */
	if (code == EXIT_CONFIG)
		fail_at(1u << n->i, "%s: pgleader refused its configuration (exit "
			"code %d)", n->name, code);
	if (cmd_alive(n))
		fail_at(1u << n->i, "%s: pgleader exited while its command is alive",
			n->name);
	node_gone(n, urand(1, 5));
}

/* kill -9: the command dies with it (PR_SET_PDEATHSIG, the guard). */
void node_kill(struct node *n)
{
	say(1u << n->i, "%s: kill -9", n->name);
	/* the kernel kills the command in the same exit that closes the
	 * sessions; the guard kills the rest of its group at once */
	for (int k = 0; k < n->n_procs; k++) {
		struct child *ch = n->procs[k];

		if (ch && ch->alive) {
			ch->alive = false;
			say(1u << n->i, "%s: command pid %d is gone (status 137)",
			    n->name, ch->pid);
		}
	}
	node_gone(n, urand(1, 10));
}

void stash(struct node *n, const struct simev *e)
{
	if (n->n_pend == n->cap_pend) {
		n->cap_pend = n->cap_pend ? n->cap_pend * 2 : 64;
		n->pend = realloc(n->pend, n->cap_pend * sizeof(*n->pend));
		if (!n->pend)
			abort();
	}
	n->pend[n->n_pend++] = *e;
}

/* A member that refuses n's claim because it leads (it runs the command or
 * holds the lock) is parted from n: that refusal cannot reach it. */
static bool parted_from_leader(const struct node *n)
{
	for (int j = 0; j < W.n; j++)
		if (j != n->i && (n->members >> j & 1) && W.part_nn[n->i][j] &&
		    W.nodes[j].up && election_runs_command(election_snapshot(W.nodes[j].el)))
			return true;
	return false;
}

void node_thaw(struct node *n)
{
	if (!n->frozen)
		return;
	n->frozen = false;
	say(1u << n->i, "%s: SIGCONT", n->name);
	/* SAFETY, "Leader frozen": unbounded while frozen; after it thaws, it
	 * sees the lost session and the command is gone within grace_period.
	 * With failsafe it claims first: the new leader's refusal ends the
	 * round at once, unless a partition keeps it from n, which then waits
	 * for that answer until ping_timeout. */
	if (cmd_alive(n))
		exempt_node(n->i, T + W.grace + net_slack +
			    (W.failsafe && parted_from_leader(n) ? W.p.ping_timeout : 0),
			    "leader frozen");
	/* libev invokes what one loop iteration collected last first: the
	 * timers that expired meanwhile, then the sockets that became
	 * readable (ev_invoke_pending walks the pending array backwards).
	 * The decider must be safe in the other order too (finding 3, fixed:
	 * a ping reply read late counted as fresh): odd seeds use it. */
	for (int timers = !io_first, pass = 0; pass < 2; pass++, timers = !timers)
		for (size_t k = 0; k < n->n_pend; k++) {
			struct simev e = n->pend[k];

			if ((e.kind == K_EVTIMER) != timers)
				continue;
			e.t = T;
			push(e);
		}
	n->n_pend = 0;
}

/* ---- pooled.h: poll_dsn's reads of the lock's state (DESIGN 15) -------- */

/* The pooler as a model: a read is answered after a trip through it, with
 * the database model's lock as it stands then (the sessions holding and
 * waiting); a node cut off from the database, or a database that is down,
 * gets a failed read, as a pooler whose server connection failed. */
struct poll {
	struct ev_loop *loop;
	poll_fn fn;
	void *arg;
	ev_timer answer;
	bool wanted;
	bool counts;
};

static void poll_answer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct poll *p = w->data;
	struct poll_answer a = { .ok = W.db_up && !W.part_db[loop->node] };

	(void)revents;
	if (!p->wanted)
		return;
	p->wanted = false;
	if (a.ok) {
		a.held = W.holder[0] != NOBODY;
		a.queued = p->counts ? W.n_queue[0] : -1;
		a.system_id = SIM_SYSTEM_ID;
		a.db_oid = SIM_DB_OID;
	} else {
		a.fault = FAULT_CONNECTION;
		a.reason = "poll_dsn: server closed the connection unexpectedly";
	}
	p->fn(p->arg, &a);
}

struct poll *poll_new(struct ev_loop *loop, const struct poll_options *o,
		      poll_fn fn, void *arg, char *err, size_t errlen)
{
	struct poll *p = calloc(1, sizeof(*p));

	(void)o;
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->loop = loop;
	p->fn = fn;
	p->arg = arg;
	ev_timer_init(&p->answer, poll_answer_cb, 0., 0.);
	p->answer.data = p;
	return p;
}

void poll_free(struct poll *p)
{
	if (!p)
		return;
	ev_timer_stop(p->loop, &p->answer);
	free(p);
}

void poll_read(struct poll *p, bool counts)
{
	if (p->wanted)
		return;
	p->wanted = true;
	p->counts = counts;
	ev_timer_set(&p->answer, urand(0.001, 0.02 + net_slack), 0.);
	ev_timer_start(p->loop, &p->answer);
}

void poll_close(struct poll *p)
{
	ev_timer_stop(p->loop, &p->answer);
	p->wanted = false;
}
