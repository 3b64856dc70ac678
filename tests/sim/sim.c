/* sim.c: a deterministic simulation of a pgleader fleet (DESIGN 12).
 *
 * The daemon's own supervisor (src/supervisor.c, made by supervisor_new
 * from the configuration config_load read) with the real decider
 * (src/election*.c) and the parameters election_params_from_config builds
 * runs on N simulated nodes, one struct supervisor each. Everything around
 * it is a model, driven by one seeded random generator and one event
 * queue: no real time passes, and a seed replays the same run.
 *
 * Models: PostgreSQL (sessions, the lock and the fence key with FIFO
 * queues, lock_timeout, pg_terminate_backend, restarts and failovers with
 * transaction ids that continue, idle_session_timeout after the server
 * lease), a network (delay, retransmissions, partitions node-database and
 * node-node), commands that take from 0 to past the grace period to stop,
 * frozen (SIGSTOP) and killed (kill -9) pgleaders, systemd restarting a
 * pgleader that exited, failsafe members, and each node's monotonic clock.
 *
 * The job layer of DESIGN 10 is the daemon's own too: src/act/jobs.c,
 * src/decide/tickplan.c, src/decide/schedule.c and src/act/ledger.c are linked in, with
 * the node's simulated clock (SIM_DEFS: clock_gettime is sim_clock_gettime
 * below), and the ledger's SQL (src/act/ledger_sql.c) executed by a model of
 * its tables.
 *
 * The ports: what that code calls for I/O is implemented here, at link
 * time, against the models: lease.h (the cs_* functions, after lease.c's
 * sessions), child.h, failsafe.h's rounds, libev's timers, signals, once
 * and break, notify.h, dynlib.h, log.h and erand48 (the jitter). The
 * linker wraps election_new and election_step (the Makefile's SIM_DEFS):
 * each node's election is known to the invariants, and each step traced.
 * Where a port differs from the daemon, a comment says so (DIFFERS:).
 *
 * The files: sim.c (random numbers, the trace, the event queue, the world,
 * the loop, a seed's set-up, main), network.c and database.c (the models),
 * ports.c (the ports, and pgleader's processes), invariants.c, faults.c;
 * sim.h is what they share.
 */
/* the real clock for the summary; the linked job layer reads the node's */
#undef clock_gettime
#include "sim.h"

/* The longest one-way delay the network model gives (a slow moment and a
 * retransmission): the man page's bounds run from when a node can know. */
double net_slack = 2.0; /* --slack */

/* ---- random numbers: splitmix64, one stream per run ------------------- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double urand(double lo, double hi)
{
	return lo + (hi - lo) * ((double)(rnd64() >> 11) / 9007199254740992.0);
}

int irand(int n)
{
	return (int)(rnd64() % (uint64_t)n);
}

bool chance(double p)
{
	return urand(0, 1) < p;
}

/* ---- the trace ---------------------------------------------------------- */

static struct tline *trace;
static size_t n_trace, cap_trace;
double T;             /* global simulated time, seconds */
static bool trace_live;      /* --trace: print as it goes */
uint64_t n_events;    /* decider steps */
static uint64_t n_simev;     /* simulated events */
void say(unsigned nodes, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (trace_live)
		printf("%11.6f %s\n", T, buf);
	if (n_trace == cap_trace) {
		cap_trace = cap_trace ? cap_trace * 2 : 4096;
		trace = realloc(trace, cap_trace * sizeof(*trace));
		if (!trace)
			abort();
	}
	trace[n_trace++] = (struct tline){ T, nodes, strdup(buf) };
}

static void trace_free(void)
{
	for (size_t i = 0; i < n_trace; i++)
		free(trace[i].text);
	free(trace);
	trace = NULL;
	n_trace = cap_trace = 0;
}

/* ---- the event queue ---------------------------------------------------- */

static struct simev *heap;
static size_t n_heap, cap_heap;
static uint64_t seq_no;

static bool ev_before(const struct simev *a, const struct simev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void push(struct simev e)
{
	size_t i;

	e.seq = seq_no++;
	if (n_heap == cap_heap) {
		cap_heap = cap_heap ? cap_heap * 2 : 1024;
		heap = realloc(heap, cap_heap * sizeof(*heap));
		if (!heap)
			abort();
	}
	i = n_heap++;
	while (i > 0 && ev_before(&e, &heap[(i - 1) / 2])) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = e;
}

static struct simev pop(void)
{
	struct simev top = heap[0], last = heap[--n_heap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n_heap)
			break;
		if (c + 1 < n_heap && ev_before(&heap[c + 1], &heap[c]))
			c++;
		if (!ev_before(&heap[c], &last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (n_heap > 0)
		heap[i] = last;
	return top;
}

/* ---- the world ---------------------------------------------------------- */

struct world W;
static const char *mutant_name = "";
/* After SIGCONT: the expired timer first (libev's order), or the sockets
 * first (another loop's): odd seeds run the sockets first, so that the
 * decider is checked in both orders; --io-first and --timers-first force
 * one for every seed. */
static enum { ORDER_BY_SEED, ORDER_IO_FIRST, ORDER_TIMERS_FIRST } order_opt;
bool io_first; /* this seed's */
bool with_controls; /* --controls: switchovers and pauses among the faults */
bool with_jobs; /* --jobs: the nodes run jobs (DESIGN 10), not one command */
/* --triggers (with --jobs): runs asked for now and each job's overlap
 * (DESIGN 13), on seeds of their own: the --jobs seeds' streams stay */
bool with_triggers;
void fail_at(unsigned nodes, const char *fmt, ...)
{
	va_list ap;

	if (W.failed)
		return;
	W.failed = true;
	W.why_nodes = nodes;
	va_start(ap, fmt);
	vsnprintf(W.why, sizeof(W.why), fmt, ap);
	va_end(ap);
	say(nodes, "VIOLATION: %s", W.why);
}

/* Opens (or extends) the window of an exempt fault on node i: the man
 * page's SAFETY section, "Overlap bounds", names each. */
void exempt_node(int i, double until, const char *why)
{
	if (until <= W.exempt_node_until[i])
		return;
	W.exempt_node_until[i] = until;
	W.exempt_node_why[i] = why;
	say(1u << i, "exempt: %s until %.3f (%s)", W.nodes[i].name, until, why);
}

/* ---- clocks ----------------------------------------------------------- */

double node_now(const struct node *n)
{
	return n->clk_off + T * n->clk_rate;
}

double global_of(const struct node *n, double t)
{
	return (t - n->clk_off) / n->clk_rate;
}

/* ---- the loop --------------------------------------------------------------- */

/* Events for a pgleader: dropped when it is not running, held while it is
 * frozen (SIGSTOP: nothing runs, nothing is read). */
static struct node *for_node(const struct simev *e)
{
	struct node *n = &W.nodes[e->node];

	if (!n->up)
		return NULL;
	if (n->frozen) {
		stash(n, e);
		return NULL;
	}
	return n;
}

static void child_exit(const struct simev *e)
{
	struct node *n = &W.nodes[e->node];
	struct child *ch = proc_of(n, e->gen);

	if (!ch || !ch->alive)
		return;
	/* no command ends by itself once the faults end; a scheduled run does */
	if (e->status != 137 && !ch->term_sent && T > W.faults_end && ch->run_id <= 0)
		return;
	ch->alive = false;
	say(1u << n->i, "%s: command pid %d is gone (status %d)", n->name, ch->pid,
	    e->status);
	if (n->up)
		push((struct simev){ .t = T, .kind = K_NOTIFY, .node = n->i,
				     .op = N_CHILD_GONE, .gen = e->gen, .status = e->status });
}

static void notify(struct node *n, const struct simev *e)
{
	struct child *ch = proc_of(n, e->gen);

	if (e->op == N_CHILD_GONE) {
		/* child.c's reaping: its owner hears the command is gone */
		if (ch && ch->running) {
			ch->running = false;
			AT_NODE(n, ch->on_gone(ch->arg, e->status));
		}
	} else if (e->op == N_GRACE && ch && ch->alive) {
		proc_kill(n, ch, "grace period over");
		if (ch->on_killed) /* child_on_killed: the jobs do not ask */
			AT_NODE(n, ch->on_killed(ch->arg));
	}
}

static void fault_now(const struct simev *e)
{
	struct simev f = *e;

	if (f.op == F_END) {
		faults_end();
		return;
	}
	if (!f.mask) { /* not the second half of terms_row_first's */
		f.node = f.gen ? current_leader() : f.from;
		f.from = (f.node + 1 + irand(W.n - 1)) % W.n;
	}
	fault(&f);
}

/* The server's message to one of n's sessions, unless that one closed. */
static void server_message(struct node *n, const struct simev *e)
{
	struct csess *c = e->skind ? &n->fence : &n->lock;

	if (c->conn != e->conn)
		return;
	cs_answer(n, c, e);
	/* lease.c's answered(): the caller's statement goes once the
	 * session is idle again */
	if (c->conn == e->conn)
		cs_send_query(n, c);
}

/* What reaches a running, unfrozen pgleader. */
static void handle_node(const struct simev *e)
{
	struct node *n;

	if (e->kind == K_PEER_REQ && !W.nodes[e->node].up) {
		/* connection refused: an answer that says no, and not running */
		push((struct simev){ .t = T + peer_delay(), .kind = K_PEER_ANS,
				     .node = e->from, .from = e->node, .op = e->op,
				     .gen = e->gen, .status = 0 });
		return;
	}
	if (!(n = for_node(e)))
		return;
	switch ((int)e->kind) {
	case K_TO_NODE: server_message(n, e); return;
	case K_NOTIFY: notify(n, e); return;
	case K_EVTIMER: evtimer_fire(n, e->gen); return;
	case K_PEER_REQ: peer_request(n, e); return;
	case K_PEER_ANS: peer_answer(n, e); return;
	case K_PEER_DEADLINE: {
		struct round *r = round_of(n, e->op);

		if (r->open && r->id == e->gen)
			peers_finish(n, r);
		return;
	}
	default:
		return;
	}
}

static void trigger_now(void);

static void handle(const struct simev *e)
{
	switch ((int)e->kind) {
	case K_TO_DB: db_receive(e); return;
	case K_LOCK_TIMEOUT: db_lock_timeout(e); return;
	case K_IDLE: db_idle(e); return;
	case K_DB_RESUME: db_resume(e); return;
	case K_CHILD_EXIT: child_exit(e); return;
	case K_HEAL: heal(e); return;
	case K_BOOT:
		if (!W.nodes[e->node].up && W.nodes[e->node].inc == e->gen)
			node_boot(&W.nodes[e->node]);
		return;
	case K_FAULT: fault_now(e); return;
	case K_TRIGGER: trigger_now(); return;
	default: handle_node(e); return; /* what reaches a pgleader */
	}
}

/* ---- set-up: each node's configuration through config_load -------------- */

/* DESIGN 13: retries (0 to 2, a delay from a fifth of the interval to
 * one and a half, the cap twice the delay) and on_failure, from the seed
 * by a hash of its own: the random stream, and so what the seeds of
 * regress-jobs.txt did before retries, is unchanged. */
static void pick_retries(struct knobs *k, int j, int64_t every)
{
	static const double part[] = { 0.2, 0.5, 1.5 };
	uint64_t h = (cur_seed + 1) * 0x9e3779b97f4a7c15ULL + (uint64_t)j * 0xbf58476d1ce4e5b9ULL;

	h ^= h >> 31;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 29;
	k->retries[j] = (int)(h % 3);
	k->retry_delay_ms[j] = (int64_t)(part[h / 3 % 3] * (double)every);
	k->on_failure[j] = h / 9 % 2 == 0;
}

/* Some seeds run jobs: up to three, most with a schedule (@every or a
 * cron expression), jitter, max_runtime, missed once or skip. */
static void pick_jobs(struct knobs *k)
{
	static const int64_t every[] = { 1000, 2000, 3000, 5000, 60000 };

	k->n_jobs = with_jobs ? 1 + irand(MAXJ) : 0;
	for (int j = 0; j < k->n_jobs; j++) {
		int64_t e = every[irand(5)];

		k->every_ms[j] = e;
		if (j > 0 && chance(0.25)) {
			k->sched[j][0] = '\0'; /* runs all the time */
			continue;
		}
		if (e == 60000)
			snprintf(k->sched[j], sizeof(k->sched[j]), "* * * * *");
		else
			snprintf(k->sched[j], sizeof(k->sched[j]), "@every %" PRId64 "ms", e);
		k->jitter_ms[j] = chance(0.5) ? (int64_t)(urand(0, 0.4) * (double)e) : 0;
		k->max_runtime_ms[j] = chance(0.3) ? 2 * e : 0;
		k->window_ms[j] = chance(0.3) ? 3 * e : 0;
		k->skip[j] = chance(0.3);
		pick_retries(k, j, e);
	}
}

static void pick_knobs(struct knobs *k)
{
	static const double graces[] = { 0.5, 1, 3, 8 };

	k->n = 2 + irand(MAXN - 1);
	k->acquire = chance(0.8) ? "wait" : "poll";
	k->restart = (const char *[]){ "no", "on-failure", "always" }[irand(3)];
	k->retry = chance(0.5) ? 5 : 2;
	k->ping_interval = chance(0.7) ? 1 : 0.5;
	k->ping_timeout = chance(0.7) ? 2 : 1;
	k->failures = 2 + irand(3);
	k->grace = graces[irand(4)];
	k->lease = ceil(k->ping_interval * k->failures + k->ping_timeout + k->grace +
			urand(0.5, 8));
	k->failsafe = chance(0.35);
	k->mismatch = k->failsafe && k->n >= 3 && chance(0.8);
	k->ttl = ceil(k->ping_interval + k->ping_timeout + k->grace + urand(0.5, 5));
	k->takeover = chance(0.1) ? 1 : 0;
	pick_jobs(k);
}

/* The [job.NAME] sections of the configuration file, as a user writes
 * them; the other keys are on the command line. */
static char jobs_file_path[64];

static const char *jobs_file(const struct knobs *k)
{
	char *path = jobs_file_path;
	FILE *f;

	if (!path[0])
		snprintf(jobs_file_path, sizeof(jobs_file_path), "/tmp/pgleader-sim-%d.conf",
			 (int)getpid());
	if (!(f = fopen(path, "w")))
		abort();
	fprintf(f, "[pgleader]\n");
	for (int j = 0; j < k->n_jobs; j++) {
		fprintf(f, "[job.j%d]\ncommand = job %d\n", j + 1, j + 1);
		if (!k->sched[j][0])
			continue;
		fprintf(f, "schedule = %s\n", k->sched[j]);
		if (k->jitter_ms[j])
			fprintf(f, "jitter = %" PRId64 "ms\n", k->jitter_ms[j]);
		if (k->max_runtime_ms[j])
			fprintf(f, "max_runtime = %" PRId64 "ms\n", k->max_runtime_ms[j]);
		if (k->window_ms[j])
			fprintf(f, "missed_window = %" PRId64 "ms\n", k->window_ms[j]);
		fprintf(f, "missed = %s\n", k->skip[j] ? "skip" : "once");
		if (k->retries[j])
			fprintf(f, "retries = %d\nretry_delay = %" PRId64 "ms\n"
				"retry_max_delay = %" PRId64 "ms\n", k->retries[j],
				k->retry_delay_ms[j], 2 * k->retry_delay_ms[j]);
		if (k->on_failure[j])
			fprintf(f, "on_failure = notify %d\n", j + 1);
		if (with_triggers)
			fprintf(f, "overlap = %s\n",
				(const char *[]){ "skip", "queue", "replace" }[k->overlap[j]]);
	}
	fclose(f);
	return path;
}

/* The failsafe options of node n, into argv from c on: the new c. With
 * mismatch, the first and the last node do not list each other; the
 * others list everyone: three different lists. */
static int failsafe_args(struct node *n, const struct knobs *k, char **argv, int c,
			 char peers[256], char http[32], char *ttl)
{
	peers[0] = '\0';
	snprintf(http, 32, "127.0.0.1:%d", 8100 + n->i);
	for (int j = 0; j < k->n; j++) {
		size_t used = strlen(peers);

		if (k->mismatch && ((n->i == 0 && j == k->n - 1) ||
				    (n->i == k->n - 1 && j == 0)))
			continue;
		snprintf(peers + used, 256 - used, "%sn%d=127.0.0.1:%d",
			 used ? "," : "", j + 1, 8100 + j);
		n->members |= 1u << j;
	}
	argv[c++] = "--http-addr"; argv[c++] = http;
	argv[c++] = "--failsafe-peers"; argv[c++] = peers;
	argv[c++] = "--failsafe-secret-file"; argv[c++] = "/nonexistent/sim-secret";
	argv[c++] = "--failsafe-ttl"; argv[c++] = ttl;
	return c;
}

/* The node's configuration, through config_load as the daemon reads it. */
static void node_load(struct node *n, const struct knobs *k, int argc, char **argv)
{
	char err[512];

	if (config_load(&n->cfg, argc, argv, err, sizeof(err)) != CONFIG_OK) {
		fprintf(stderr, "sim: config_load refused node %s: %s\n", n->name, err);
		exit(2);
	}
	if (k->n_jobs)
		unlink(jobs_file_path); /* read: nothing reads it again */
	n->cfg_ok = true;
	if (k->failsafe && fleet_members_hash(n->cfg.peers, n->cfg.n_peers, n->hash) < 0)
		abort();
}

static void node_config(struct node *n, const struct knobs *k)
{
	char d[12][32], peers[256], http[32];
	char *argv[40];
	int c = 0;

	snprintf(d[0], 32, "%gs", k->retry);
	snprintf(d[1], 32, "%gs", k->ping_interval);
	snprintf(d[2], 32, "%gs", k->ping_timeout);
	snprintf(d[3], 32, "%d", k->failures);
	snprintf(d[4], 32, "%gs", k->lease);
	snprintf(d[5], 32, "%gs", k->grace);
	snprintf(d[6], 32, "%gs", k->ttl);
	snprintf(d[7], 32, "%gs", k->takeover);
	snprintf(d[8], 32, "%d", k->queue_depth);
	argv[c++] = "pgleader";
	argv[c++] = "--dsn"; argv[c++] = "host=sim dbname=sim";
	argv[c++] = "--node-id"; argv[c++] = n->name;
	argv[c++] = "--acquire"; argv[c++] = (char *)k->acquire;
	argv[c++] = "--restart"; argv[c++] = (char *)k->restart;
	argv[c++] = "--retry-interval"; argv[c++] = d[0];
	argv[c++] = "--ping-interval"; argv[c++] = d[1];
	argv[c++] = "--ping-timeout"; argv[c++] = d[2];
	argv[c++] = "--ping-failures"; argv[c++] = d[3];
	argv[c++] = "--server-lease"; argv[c++] = d[4];
	argv[c++] = "--grace-period"; argv[c++] = d[5];
	argv[c++] = "--takeover-delay"; argv[c++] = d[7];
	argv[c++] = "--queue-depth"; argv[c++] = d[8];
	if (k->poll_dsn) {
		argv[c++] = "--poll-dsn"; argv[c++] = "host=pooler dbname=sim";
	}
	snprintf(d[9], 32, "%gs", k->drain);
	argv[c++] = "--drain-timeout"; argv[c++] = d[9];
	if (k->failsafe)
		c = failsafe_args(n, k, argv, c, peers, http, d[6]);
	if (k->n_jobs) {
		argv[c++] = "-c";
		argv[c++] = (char *)jobs_file(k);
	} else {
		argv[c++] = "--";
		argv[c++] = "job";
	}
	argv[c] = NULL;
	node_load(n, k, c, argv);
}

/* The checker's view of the jobs: their schedules, through the same
 * schedule.c as the daemon's (its own tests and schedule-diff check it). */
static void setup_jobs(const struct knobs *k)
{
	char err[256];

	W.n_jobs = k->n_jobs;
	for (int j = 0; j < k->n_jobs; j++) {
		snprintf(W.job_name[j], sizeof(W.job_name[j]), "j%d", j + 1);
		interval_ms[j] = k->every_ms[j];
		W.jitter_ms[j] = k->jitter_ms[j];
		if (!k->sched[j][0])
			continue;
		W.sched_jobs = true;
		W.sched[j] = schedule_new(k->sched[j], "UTC", err, sizeof(err));
		if (!W.sched[j]) {
			fprintf(stderr, "sim: schedule %s: %s\n", k->sched[j], err);
			exit(2);
		}
		W.check_tick[j] = schedule_next(W.sched[j], db_ms());
		say(0, "job j%d: schedule %s, jitter %" PRId64 "ms, max_runtime %" PRId64
		    "ms, missed %s, missed_window %" PRId64 "ms", j + 1, k->sched[j],
		    k->jitter_ms[j], k->max_runtime_ms[j], k->skip[j] ? "skip" : "once",
		    k->window_ms[j]);
		say(0, "job j%d: retries %d, retry_delay %" PRId64 "ms, on_failure %s", j + 1,
		    k->retries[j], k->retry_delay_ms[j], k->on_failure[j] ? "on" : "off");
		W.overlap[j] = k->overlap[j];
		if (with_triggers)
			say(0, "job j%d: overlap %s", j + 1,
			    (const char *[]){ "skip", "queue", "replace" }[k->overlap[j]]);
	}
	for (int j = 0; j < k->n_jobs; j++)
		if (!k->sched[j][0])
			say(0, "job j%d: no schedule (runs all the time)", j + 1);
}

/* The last run's world is freed, but the totals over the runs. */
static void teardown(void)
{
	uint64_t checked = W.ticks_checked, ticks = W.ticks_run;
	uint64_t retries = W.retries_checked, hooks = W.on_failures_run;
	uint64_t triggered = W.triggers_run;

	for (int i = 0; i < W.n; i++) {
		node_free_supervisor(&W.nodes[i]);
		if (W.nodes[i].cfg_ok)
			config_free(&W.nodes[i].cfg);
		free(W.nodes[i].pend);
	}
	for (int j = 0; j < W.n_jobs; j++)
		schedule_free(W.sched[j]);
	free(W.held);
	free(W.rows);
	free(hidx);
	hidx = NULL;
	hcap = 0;
	sq_free_all();
	memset(&W, 0, sizeof(W));
	W.ticks_checked = checked;
	W.ticks_run = ticks;
	W.retries_checked = retries;
	W.on_failures_run = hooks;
	W.triggers_run = triggered;
}

/* Node i before it first starts: its clock and its configuration. */
static void node_setup(int i, const struct knobs *k)
{
	struct node *n = &W.nodes[i];

	n->i = i;
	snprintf(n->name, sizeof(n->name), "n%d", i + 1);
	n->clk_off = urand(100, 1e6);
	n->clk_rate = 1 + urand(-1e-4, 1e-4);
	n->lock.skind = 0;
	n->fence.skind = 1;
	n->lock.node = n->fence.node = i;
	n->steady_since = INFINITY;
	W.fence_lost_at[i] = -INFINITY;
	node_config(n, k);
}

/* DESIGN 13: runs asked for now, every 4 to 25 s until after the faults
 * end (--triggers only: no draw otherwise, the other seeds' streams stay). */
static void schedule_triggers(void)
{
	if (!with_triggers)
		return;
	for (double t = urand(3, 8); t < W.faults_end + 30; t += urand(4, 25))
		push((struct simev){ .t = t, .kind = K_TRIGGER, .node = NOBODY });
}

static void setup(uint64_t seed)
{
	struct knobs k = { 0 }; /* what is not picked (overlap: skip) is 0 */

	teardown();
	n_heap = 0;
	seq_no = 0;
	T = 0;
	rng_state = seed * 0x2545f4914f6cdd1dULL + 1;
	cur_seed = seed;
	pick_knobs(&k);
	for (int j = 0; with_triggers && j < k.n_jobs; j++)
		k.overlap[j] = irand(3);
	queue_empty_since = queue_empty_pooled_since = INFINITY;
	/* from the seed, not the random stream: 1 to 3 (DESIGN 15) */
	k.queue_depth = 1 + (int)(seed / 2 % 3);
	/* ... and one seed of three polls through a pooler (poll_dsn) */
	k.poll_dsn = seed % 3 == 1 && !strcmp(k.acquire, "wait");
	/* and the lock table's size a count says: a polling standby counts
	 * every try, or every 2nd, 3rd or 16th (ELECTION_COUNT_SLOTS); the
	 * --jobs runs, whose seeds are the job layer's, every try */
	W.count_every = with_jobs ? 1 : (int[]){ 1, 2, 3, 16 }[seed / 6 % 4];
	W.lock_slots = W.count_every * ELECTION_COUNT_SLOTS - (int)(seed % 7);
	/* DESIGN 13: one seed of six with jobs drains, for twice its first
	 * job's interval; from the seed, so that every seed runs the fleet
	 * and the faults it ran before, and the regression seeds of
	 * regress-jobs.txt (none a multiple of six) what they found */
	k.drain = k.n_jobs && seed % 6 == 0 ? 2.0 * (double)k.every_ms[0] / 1000 : 0;
	W.n = k.n;
	W.db_up = true;
	W.xid = 700 + (uint64_t)irand(1000);
	W.holder[0] = W.holder[1] = NOBODY;
	W.last_token_node = NOBODY;
	W.led_after_heal = INFINITY;
	for (int i = 0; i < W.n; i++)
		node_setup(i, &k);
	setup_jobs(&k);
	election_params_from_config(&W.nodes[0].cfg, &W.p);
	W.p.connect_timeout = 10.25; /* lease_connect_timeout of one host */
	W.server_lease = W.nodes[0].cfg.server_lease_ms / 1000.0;
	W.grace = W.nodes[0].cfg.grace_period_ms / 1000.0;
	W.drain = W.nodes[0].cfg.drain_timeout_ms / 1000.0;
	W.retry = W.p.retry_interval;
	W.failsafe = k.failsafe;
	W.mismatch = k.mismatch;
	W.faults_end = urand(60, 240);
	W.end = W.faults_end + liveness_bound() + 1;
	say(0, "seed %" PRIu64 ": %d nodes, acquire %s (queue_depth %d, count every %d%s), restart %s, retry %gs, ping %gs/%gs x%d, "
	    "grace %gs, server_lease %gs, takeover %gs, failsafe %s%s (ttl %gs), faults until "
	    "%.1fs, liveness bound %.1fs, after SIGCONT %s first%s%s", seed, k.n, k.acquire,
	    k.queue_depth, W.count_every, k.poll_dsn ? ", poll_dsn" : "", k.restart, k.retry, k.ping_interval, k.ping_timeout, k.failures, k.grace, k.lease,
	    k.takeover, k.failsafe ? "on" : "off",
	    k.mismatch ? " with member lists that differ" : "", k.ttl, W.faults_end,
	    liveness_bound(), io_first ? "sockets" : "timers",
	    *mutant_name ? ", mutant " : "", mutant_name);
	for (int i = 0; i < W.n; i++)
		push((struct simev){ .t = urand(0, 2), .kind = K_BOOT, .node = i, .gen = 0 });
	schedule_faults();
	schedule_triggers();
}

/* pgleader trigger (DESIGN 13): a request for one of the scheduled jobs,
 * written as the CLI writes it (never for a paused lock; never at a whole
 * millisecond of a second, where a schedule's ticks fall). */
static void trigger_now(void)
{
	int cand[MAXJ], n = 0;
	struct trig *g;

	for (int j = 0; j < W.n_jobs; j++)
		if (W.sched[j])
			cand[n++] = j;
	if (!W.db_up || W.paused || n == 0 || W.n_trigs == (int)(sizeof(W.trigs) / sizeof(W.trigs[0])))
		return;
	g = &W.trigs[W.n_trigs++];
	*g = (struct trig){ .id = W.n_trigs, .job = cand[irand(n)], .asked = T };
	g->tick = db_ms();
	g->tick += g->tick % 1000 == 0;
	say(0, "trigger %" PRId64 ": job %s asked for now (tick %" PRId64 ")", g->id,
	    W.job_name[g->job], g->tick);
}

/* Runs one seed; true when every invariant held. */
/* A node whose loop was broken (ev_break) exits, as main.c does after
 * ev_run returns. */
static void exits_now(void)
{
	for (int i = 0; i < W.n; i++)
		if (W.nodes[i].up && W.nodes[i].exiting)
			node_exit(&W.nodes[i], "exits");
}

bool run(uint64_t seed)
{
	io_first = order_opt == ORDER_IO_FIRST ||
		   (order_opt == ORDER_BY_SEED && seed % 2 == 1);
	setup(seed);
	cur_seed = seed;
	overlap_began = INFINITY;
	while (n_heap > 0 && !W.failed) {
		struct simev e = pop();

		if (e.t > W.end)
			break;
		T = e.t;
		n_simev++;
		handle(&e);
		exits_now();
		check_invariants();
	}
	if (!W.failed && !(W.led_after_heal <= W.faults_end + liveness_bound()))
		fail_at((1u << W.n) - 1, "no leader within %.1fs after the last fault "
			"(at %.1fs)", liveness_bound(), W.faults_end);
	if (!W.failed)
		check_lost();
	if (!W.failed)
		check_on_failure_end();
	return !W.failed;
}

/* The last lines, and the last lines about the nodes that broke a rule. */
static void print_failure(uint64_t seed, size_t keep)
{
	size_t start = n_trace > keep ? n_trace - keep : 0, shown = 0, from;

	printf("sim: seed %" PRIu64 " FAILED: %s\n", seed, W.why);
	printf("  %s\n", trace[0].text);
	printf("  -- the events involving the nodes concerned (last %zu):\n", 2 * keep);
	for (from = n_trace; from > 0 && shown < 2 * keep; from--)
		if (trace[from - 1].nodes & W.why_nodes && from - 1 < start)
			shown++;
	for (size_t k = from; k < start; k++)
		if (trace[k].nodes & W.why_nodes)
			printf("  %11.6f %s\n", trace[k].t, trace[k].text);
	printf("  -- the last %zu events:\n", keep);
	for (size_t k = start; k < n_trace; k++)
		printf("  %11.6f %s\n", trace[k].t, trace[k].text);
	printf("sim: replay with tests/sim/sim --seed %" PRIu64 "%s [--trace]%s%s%s\n",
	       seed, order_opt == ORDER_IO_FIRST ? " --io-first" : order_opt ==
	       ORDER_TIMERS_FIRST ? " --timers-first" : "", *mutant_name ? " (mutant " : "",
	       mutant_name, *mutant_name ? ")" : "");
}

bool known(const char *path, uint64_t seed)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[256];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = line[0] >= '0' && line[0] <= '9' &&
			strtoull(line, NULL, 10) == seed;
	fclose(f);
	return found;
}

/* The n-th seed of a file of seeds (known.txt, regress.txt), or 0. */
static uint64_t seed_in(const char *path, size_t n)
{
	FILE *f = path ? fopen(path, "r") : NULL;
	char line[256];
	uint64_t seed = 0;

	if (!f)
		return 0;
	while (!seed && fgets(line, sizeof(line), f))
		if (line[0] >= '0' && line[0] <= '9' && n-- == 0)
			seed = strtoull(line, NULL, 10);
	fclose(f);
	return seed;
}

static void usage(void)
{
	fprintf(stderr, "usage: sim [--seed N | --seeds COUNT [--first N]] [--trace] "
		"[--known FILE] [--regress FILE] [--mutant NAME] [--keep K] [--io-first | --timers-first] [--controls] [--jobs] "
		"[--slack SECONDS]\n");
	exit(EX_USAGE);
}

/* An option with a value; false: not one of them. */
static bool value_option(const char *name, const char *v, struct opts *o)
{
	if (!strcmp(name, "--seed")) {
		o->first = strtoull(v, NULL, 10);
		o->count = 1;
		o->one = true;
	} else if (!strcmp(name, "--seeds")) {
		o->count = strtoull(v, NULL, 10);
	} else if (!strcmp(name, "--first")) {
		o->first = strtoull(v, NULL, 10);
	} else if (!strcmp(name, "--known")) {
		o->known_file = v;
	} else if (!strcmp(name, "--regress")) {
		o->regress_file = v;
	} else if (!strcmp(name, "--mutant")) {
		mutant_name = v;
	} else if (!strcmp(name, "--keep")) {
		o->keep = strtoull(v, NULL, 10);
	} else if (!strcmp(name, "--slack")) {
		net_slack = strtod(v, NULL);
	} else {
		return false;
	}
	return true;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .first = 1, .count = 100, .keep = 40 };
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--io-first"))
			order_opt = ORDER_IO_FIRST;
		else if (!strcmp(argv[i], "--timers-first"))
			order_opt = ORDER_TIMERS_FIRST;
		else if (!strcmp(argv[i], "--controls"))
			with_controls = true;
		else if (!strcmp(argv[i], "--jobs"))
			with_jobs = true;
		else if (!strcmp(argv[i], "--triggers"))
			with_jobs = with_triggers = true;
		else if (!strcmp(argv[i], "--trace"))
			trace_live = true;
		else if (i + 1 < argc && value_option(argv[i], argv[i + 1], o))
			i++;
		else
			usage();
	}
}

/* The configuration is the command line's alone. */
static void clear_environment(void)
{
	extern char **environ;

	for (char **e = environ; *e;) {
		if (!strncmp(*e, "PGLEADER_", 9)) {
			char name[128];

			snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
			unsetenv(name);
		} else {
			e++;
		}
	}
}

static uint64_t failed, ran, skipped;

/* Runs one seed unless known.txt lists it; false: stop (a mutant caught). */
static bool run_seed(const struct opts *o, uint64_t seed)
{
	if (!o->one && known(o->known_file, seed)) {
		skipped++;
		return true;
	}
	ran++;
	if (!run(seed)) {
		failed++;
		if (!trace_live)
			print_failure(seed, o->keep);
		else
			printf("sim: seed %" PRIu64 " FAILED: %s\n", seed, W.why);
	}
	trace_free();
	return !(failed && *mutant_name); /* a mutant is caught by its first failure */
}

int main(int argc, char **argv)
{
	struct opts o;
	struct timespec t0, t1;
	double secs;
	bool go = true;
	uint64_t extra;

	parse_args(argc, argv, &o);
	clear_environment();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = o.first; go && seed < o.first + o.count; seed++)
		go = run_seed(&o, seed);
	/* the regression seeds outside the range (tests/sim/regress.txt) */
	for (size_t k = 0; go && (extra = seed_in(o.regress_file, k)); k++)
		if (extra < o.first || extra >= o.first + o.count)
			go = run_seed(&o, extra);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	for (int k = 0; k < OV_N; k++)
		if (overlap_seed[k])
			printf("sim: longest overlap, %s: %.3fs (seed %" PRIu64 ")\n",
			       overlap_names[k], overlap_max[k], overlap_seed[k]);
	if (with_jobs)
		printf("sim: %" PRIu64 " ticks run, %" PRIu64 " ticks checked while a node "
		       "led steadily; %" PRIu64 " retries due checked, %" PRIu64
		       " on_failure run; %" PRIu64 " runs asked for now\n", W.ticks_run,
		       W.ticks_checked, W.retries_checked, W.on_failures_run, W.triggers_run);
	printf("sim: %" PRIu64 " seeds from %" PRIu64 " (%" PRIu64 " known, skipped), %"
	       PRIu64 " failed; %" PRIu64 " events (%" PRIu64 " decider steps) in %.2fs: "
	       "%.0f events/s%s%s\n", ran, o.first, skipped, failed, n_simev, n_events,
	       secs, (double)n_simev / fmax(secs, 1e-9), *mutant_name ? "; mutant " : "",
	       mutant_name);
	return failed ? 1 : 0;
}
