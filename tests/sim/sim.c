/* sim.c: a deterministic simulation of a pgleader fleet (DESIGN 12).
 *
 * The real decider (src/election*.c, through election.h only) runs on N
 * simulated nodes, with parameters built by the daemon's own function
 * (election_params_from_config over config_load). Everything around it is
 * a model, driven by one seeded random generator and one event queue: no
 * real time passes, and a seed replays the same run.
 *
 * Models: PostgreSQL (sessions, the lock and the fence key with FIFO
 * queues, lock_timeout, pg_terminate_backend, restarts and failovers with
 * transaction ids that continue, idle_session_timeout after the server
 * lease), a network (delay, retransmissions, partitions node-database and
 * node-node), commands that take from 0 to past the grace period to stop,
 * frozen (SIGSTOP) and killed (kill -9) pgleaders, systemd restarting a
 * pgleader that exited, failsafe members, and each node's monotonic clock.
 *
 * The job layer of DESIGN 10 is the daemon's own too: src/jobs.c,
 * src/tickplan.c, src/schedule.c and src/ledger.c are linked in, with
 * the node's simulated clock (SIM_DEFS: clock_gettime is sim_clock_gettime
 * below), libev's timers, child.c's processes and lease.c's statements on
 * the fence session implemented here against the models, and the ledger's
 * SQL (src/ledger_sql.c) executed by a model of its tables.
 *
 * The supervisor's part (supervisor.c and lease.c: actions to calls,
 * outcomes to events, in their order) is re-implemented here against the
 * models: see sup_run_actions and the cs_* functions. Where it differs
 * from the daemon, a comment says so (DIFFERS:).
 */
/* the real clock for the summary; the linked job layer reads the node's */
#undef clock_gettime
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "child.h"
#include "config.h"
#include "election.h"
#include "fleet.h"
#include "jobs.h"
#include "lease.h"
#include "lease_sql.h"
#include "ledger.h"
#include "ledger_sql.h"
#include "log.h"
#include "params.h"
#include "schedule.h"
#include "tickplan.h"

int sim_clock_gettime(clockid_t id, struct timespec *ts);

#define MAXN 5
/* The longest one-way delay the network model gives (a slow moment and a
 * retransmission): the man page's bounds run from when a node can know. */
static double net_slack = 2.0; /* --slack */
#define NOBODY (-1)
/* The longest a group takes to be gone after SIGKILL (uninterruptible
 * sleep): the man page's SAFETY section allows it beside grace_period. */
#define SIGKILL_GONE 1.0

/* ---- random numbers: splitmix64, one stream per run ------------------- */

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double urand(double lo, double hi)
{
	return lo + (hi - lo) * ((double)(rnd64() >> 11) / 9007199254740992.0);
}

static int irand(int n)
{
	return (int)(rnd64() % (uint64_t)n);
}

static bool chance(double p)
{
	return urand(0, 1) < p;
}

/* ---- the trace ---------------------------------------------------------- */

struct tline {
	double t;
	unsigned nodes; /* bit per node the line is about */
	char *text;
};

static struct tline *trace;
static size_t n_trace, cap_trace;
static double T;             /* global simulated time, seconds */
static bool trace_live;      /* --trace: print as it goes */
static uint64_t n_events;    /* decider steps */
static uint64_t n_simev;     /* simulated events */

static void say(unsigned nodes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void say(unsigned nodes, const char *fmt, ...)
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

enum kind {
	K_WAKE,          /* a node's wakeup timer */
	K_TO_DB,         /* a client message reaches the server */
	K_TO_NODE,       /* a server message reaches a node */
	K_CHILD_EXIT,    /* the command's process group is gone */
	K_NOTIFY,        /* pgleader learns something (child gone, grace timer) */
	K_LOCK_TIMEOUT,  /* lock_timeout of a queued wait */
	K_IDLE,          /* idle_session_timeout check */
	K_PEER_REQ,      /* a failsafe HTTP request reaches a member */
	K_PEER_ANS,      /* its answer reaches the asker */
	K_PEER_DEADLINE, /* a round's or a check's ping_timeout */
	K_FAULT,         /* the fault schedule */
	K_HEAL,          /* a partition or a freeze ends, the database is back */
	K_BOOT,          /* systemd starts pgleader (again) */
	K_EVTIMER,       /* a libev timer of the job layer */
	K_DB_RESUME,     /* a claim that waited on the terms row goes on */
};

enum op {
	/* client to server */
	C_CONNECT, C_TRY, C_WAIT, C_CLAIM, C_PING, C_UNLOCK, C_CLOSE,
	C_QUERY,         /* lease_query: a ledger statement */
	/* server to client */
	S_CONNECTED, S_REFUSED, S_LOCK, S_LOCK_TIMEOUT, S_CLAIMED, S_PONG,
	S_UNLOCKED, S_ENDED, S_ANSWER,
	/* node notifications */
	N_CHILD_GONE, N_GRACE, N_KILLED_GONE,
	N_CONTROLS,      /* a controls read's answer (none in force) */
	/* failsafe */
	P_CLAIM, P_CHECK, P_REGAINED, /* a claim with "regained": true */
};

struct simev {
	double t;
	uint64_t seq;
	enum kind kind;
	int node;        /* the node it is for, or NOBODY */
	int op;
	int from;        /* peer messages: the asker */
	int skind;       /* 0 lock session, 1 fence session */
	uint64_t conn;   /* client connection id */
	uint64_t gen;    /* wake generation, child id, round id, stamp */
	uint64_t token;
	int status;
	unsigned mask;   /* S_PONG: nodes with a session for the key */
	double arg;      /* fault duration */
};

static struct simev *heap;
static size_t n_heap, cap_heap;
static uint64_t seq_no;

static bool ev_before(const struct simev *a, const struct simev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void push(struct simev e)
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

enum lphase { PH_CLOSED, PH_CONNECTING, PH_READY, PH_LOCKING, PH_CLAIMING,
	      PH_HELD, PH_PINGING, PH_UNLOCKING, PH_QUERYING };
enum lthen { THEN_HOLD, THEN_UNLOCK, THEN_RELEASE };

/* A client session: lease.c's state as far as the model needs it. */
struct csess {
	int skind;               /* 0 lock, 1 fence */
	enum lphase phase;
	enum lthen then;
	bool ping_wanted;
	bool in_queue;
	uint64_t conn;           /* 0: none */
	int sid;                 /* the server's session, once connected */
	int pid;                 /* its backend pid (the setup query's) */
	uint64_t token;
	int node;
	/* lease_query's one statement (lease.c's q): waiting for the
	 * session to be idle, or in flight; the lease's own lock request
	 * asked for meanwhile waits for its answer (want_lock) */
	bool q_waiting, q_in_flight;
	enum lphase q_back;
	uint64_t q_id;
	lease_query_fn q_fn;
	void *q_arg;
	int want_lock;           /* 0 none, 1 try, 2 wait */
	int ahead;               /* the last try's queue count (DESIGN 15);
				  * -1 after a queued wait ran out */
};

/* A command's process group: the single command's (struct node's ch), or
 * child.h's object for each job of the job layer (child_new below). */
struct child {
	bool alive;
	uint64_t id;
	int pid;
	double stop_need;        /* seconds from SIGTERM to its exit */
	bool term_sent;
	int self_status;
	uint64_t token;          /* its PGLEADER_FENCING_TOKEN */
	/* the job layer's */
	bool running;            /* child_running: started, gone not yet told */
	int job;                 /* index of its job in the configuration */
	int64_t run_id, tick;    /* PGLEADER_RUN_ID and its tick; 0: none */
	child_gone_fn on_gone;
	void *arg;
};

/* libev's loop and the lease as the job layer sees them: a node's. */
struct ev_loop { int node; };
struct lease { int node; };
#define MAXJ 3                   /* jobs per node */
#define MAXT 16                  /* libev timers per node */

#define QMAX 64
struct qev {
	struct election_event ev;
	char reason[LOG_MSG_MAX];
};

/* failsafe.c's two rounds: the claim round (claims, and the claim that says
 * "regained"; a new one cancels the last) and the check round. */
enum { R_CLAIM, R_CHECK };
struct round {
	bool open;
	uint64_t id;
	int op;                  /* P_CLAIM, P_REGAINED or P_CHECK */
	int asked, answered, agree, running, silent;
	int same_list, other_list; /* check answers naming the asker's list, another */
};

struct node {
	int i;
	char name[16];
	bool up;                 /* the pgleader process exists */
	bool frozen;
	uint64_t inc;            /* incarnation */
	struct config cfg;
	bool cfg_ok;
	struct election el;
	double clk_off, clk_rate;
	uint64_t wake_gen;
	struct csess lock, fence;
	struct child ch;
	struct qev q[QMAX];
	unsigned qh, qt;
	bool draining;
	int claim_answer;
	struct simev *pend;      /* events that arrived while frozen */
	size_t n_pend, cap_pend;
	unsigned members;        /* bit per node in failsafe_peers */
	char hash[FLEET_HASH_LEN + 1];
	struct round rnd[2];     /* R_CLAIM, R_CHECK */
	uint64_t last_term_seen;
	double frozen_until;
	/* the job layer (DESIGN 10): the daemon's jobs.c and ledger.c */
	struct jobs *jobs;       /* NULL: a single command (ch) */
	struct ledger *ledger;
	struct ev_loop loop;
	struct lease fence_h;    /* the fence session, for ledger.c */
	struct child *procs[MAXJ]; /* ch, or the jobs' processes */
	int n_procs;
	struct { ev_timer *w; uint64_t stamp; } tm[MAXT];
	int n_tm;
	double steady_since;     /* leads with its jobs planned: see check_ticks */
	/* the controls as its last read answered found them (DESIGN 11) */
	bool ctl_read;           /* one was answered, ever */
	bool ctl_paused;         /* ... and found the lock paused */
	bool rows_paused;        /* the last read's, for RUNNER_PAUSES */
	struct election_term term; /* the step's (START_CHILD, RUNNER_SESSION) */
};

struct ssess {
	bool alive;
	int node;
	int skind;
	uint64_t conn;
	bool waiting;
	uint64_t wait_stamp;
	double idle_timeout;
	double last_done;
	uint64_t stamp;
	int pid;                 /* pg_backend_pid(), unique in a run */
};

/* A row of the ledger's runs table (ledger_sql.c's). */
struct lrow {
	char job[64];
	int64_t tick;            /* Unix ms of the server's clock */
	int node;
	uint64_t token;
	char outcome[16];
	int exit_status;         /* -1: NULL */
	bool finished;
	int64_t finished_ms;
	int64_t run_id;
	int starts;              /* commands started for it (the invariant's) */
	uint64_t server;         /* the server it began on (W.server) */
};

#define MAXS (1 << 17)
struct world {
	int n;
	struct node nodes[MAXN];
	/* the database */
	bool db_up;
	uint64_t xid;
	struct ssess s[MAXS];
	int n_s;
	int holder[2];           /* session holding the lock, the fence */
	int queue[2][64];
	int n_queue[2];
	/* the network */
	bool part_db[MAXN];
	bool part_nn[MAXN][MAXN];
	double link_last[MAXN][2];
	struct simev *held;      /* messages held by a node-database partition */
	size_t n_held, cap_held;
	/* parameters, from node 0's configuration */
	struct election_params p;
	double server_lease, grace, retry;
	bool failsafe, mismatch;
	double faults_end, end;
	uint64_t next_conn, next_child, next_round;
	int next_pid;
	/* exemptions: the man page's SAFETY section, each with its bound */
	/* a restart or failover: two commands may overlap from..until */
	double exempt_db_from, exempt_db_until;
	double exempt_db_kill_until; /* ... and from the restart until then */
	double restart_at;       /* the last one began */
	double exempt_node_until[MAXN];
	double fence_lost_at[MAXN];   /* the node's fence session ended */
	const char *exempt_node_why[MAXN];
	/* fencing tokens */
	uint64_t last_token;
	int last_token_node;
	uint64_t last_inc, last_term;
	/* liveness */
	double led_after_heal;
	/* the operator controls (DESIGN 11), as the ledger holds them */
	bool paused;
	/* the controls table locked by an ALTER TABLE until then: a read
	 * waits for it up to lock_timeout (retry_interval), then fails */
	double ctl_locked_from, ctl_locked_until;
	bool switchover;
	int so_leader, so_target;     /* the target NOBODY: any standby */
	double so_until;
	/* the ledger (DESIGN 10): its runs and its terms; a failover keeps
	 * them (the replica is synchronous: what committed is there) */
	struct lrow *rows;
	size_t n_rows, cap_rows;
	uint64_t term_token;     /* terms: the newest token recorded */
	/* the lock's row of terms held by another session (an operator's
	 * SELECT ... FOR UPDATE) until then: claims wait for it */
	double terms_held_until;
	/* the server's identity (system identifier, timeline, postmaster
	 * start): a new one at each restart and failover */
	uint64_t server;
	int64_t next_run_id;
	int next_spid;
	uint64_t next_tstamp;
	/* the jobs, the same on every node (none: a single command) */
	int n_jobs;
	bool sched_jobs;          /* one of them has a schedule */
	struct schedule *sched[MAXJ]; /* the checker's own; NULL: always runs */
	char job_name[MAXJ][16];
	int64_t jitter_ms[MAXJ];
	int64_t check_tick[MAXJ];     /* the next tick check_ticks looks at */
	uint64_t ticks_checked, ticks_run;
	/* failure */
	bool failed;
	char why[512];
	unsigned why_nodes;
};

static struct world W;
static bool cmd_alive(const struct node *n);
static const char *mutant_name = "";
/* After SIGCONT: the expired timer first (libev's order), or the sockets
 * first (another loop's): odd seeds run the sockets first, so that the
 * decider is checked in both orders; --io-first and --timers-first force
 * one for every seed. */
static enum { ORDER_BY_SEED, ORDER_IO_FIRST, ORDER_TIMERS_FIRST } order_opt;
static bool io_first; /* this seed's */
static bool with_controls; /* --controls: switchovers and pauses among the faults */
static bool with_jobs; /* --jobs: the nodes run jobs (DESIGN 10), not one command */
/* --no-fix-lock-pid: the supervisor as it was before finding 8 */
static bool nofix_lock_pid;

static void fail_at(unsigned nodes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail_at(unsigned nodes, const char *fmt, ...)
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
static void exempt_node(int i, double until, const char *why)
{
	if (until <= W.exempt_node_until[i])
		return;
	W.exempt_node_until[i] = until;
	W.exempt_node_why[i] = why;
	say(1u << i, "exempt: %s until %.3f (%s)", W.nodes[i].name, until, why);
}

/* ---- clocks ----------------------------------------------------------- */

static double node_now(const struct node *n)
{
	return n->clk_off + T * n->clk_rate;
}

static double global_of(const struct node *n, double t)
{
	return (t - n->clk_off) / n->clk_rate;
}

/* ---- the network ---------------------------------------------------------- */

static void restart_otherwise(double until, const char *why);
/* A delay that may keep an old leader from its fence past the settle wait
 * (1 s: a retry every 0.25 s, a round trip to connect, one to try). */
#define RESTART_SLOW 0.1

/* One way, node i to the database (dir 0) or back (dir 1): FIFO per link,
 * as TCP is; a lost segment is a retransmission, a late delivery. */
static double net_delay(int i, int dir)
{
	double d = urand(0.0002, 0.003);

	if (chance(0.02))
		d += urand(0, 0.3);       /* a slow moment */
	if (chance(0.005))
		d += urand(0.2, 1.5);     /* a lost segment, retransmitted */
	/* an old leader slowed down while a restart's window is open may not
	 * take its fence back within a standby's settle wait */
	if (d > RESTART_SLOW && cmd_alive(&W.nodes[i]))
		restart_otherwise(W.exempt_db_until, "a leader's network is slow");
	d = fmax(T + d, W.link_last[i][dir] + 1e-7);
	W.link_last[i][dir] = d;
	return d;
}

static void hold(struct simev e)
{
	if (W.n_held == W.cap_held) {
		W.cap_held = W.cap_held ? W.cap_held * 2 : 256;
		W.held = realloc(W.held, W.cap_held * sizeof(*W.held));
		if (!W.held)
			abort();
	}
	W.held[W.n_held++] = e;
}

/* A message between node i and the database; held while they are parted
 * and delivered in order when the partition heals (TCP retransmits). */
static void send_link(struct simev e, int i, int dir)
{
	if (W.part_db[i]) {
		e.arg = dir;
		hold(e);
		return;
	}
	e.t = net_delay(i, dir);
	push(e);
}

static void heal_link(int i)
{
	size_t k = 0;

	W.part_db[i] = false;
	for (size_t j = 0; j < W.n_held; j++) {
		struct simev e = W.held[j];

		if (e.kind == K_TO_DB ? e.from == i : e.node == i) {
			e.t = net_delay(i, (int)e.arg);
			push(e);
		} else {
			W.held[k++] = e;
		}
	}
	W.n_held = k;
}

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

static const char *node_name(int i)
{
	return i >= 0 && i < W.n ? W.nodes[i].name : "?";
}

/* The session ends: its locks pass on; the client hears (unless it closed). */
static void db_end(int sid, bool tell, const char *why)
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
 * session: the lock sessions that neither lead nor wait, all of one
 * priority in the model, so by arrival (the backend pid). */
static int db_queue_ahead(int sid)
{
	int n = 0;

	for (int k = 0; k < W.n_s; k++)
		if (k != sid && W.s[k].alive && !W.s[k].skind && W.s[k].waiting)
			n++;
	if (n >= W.p.queue_depth)
		return n;
	for (int k = 0; k < W.n_s; k++)
		if (k != sid && W.s[k].alive && !W.s[k].skind && !W.s[k].waiting &&
		    W.holder[0] != k && W.s[k].pid < W.s[sid].pid)
			n++;
	return n;
}

static void db_lock(int sid, bool wait)
{
	int key = W.s[sid].skind;
	/* a lock's try says where the standby stands (the reply's token) */
	uint64_t ahead = !wait && !key ? (uint64_t)db_queue_ahead(sid) : 0;

	if (W.holder[key] < 0 && W.n_queue[key] == 0) {
		W.holder[key] = sid;
		db_reply(sid, S_LOCK, 0, 0, 1);
		db_done(sid);
		return;
	}
	if (!wait || W.holder[key] == sid) {
		db_reply(sid, S_LOCK, ahead, 0, W.holder[key] == sid);
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

static void db_query(int sid, const struct simev *e);

static void db_receive(const struct simev *e)
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
	if (sid < 0)
		return; /* the session is gone; its client was told */
	switch (e->op) {
	case C_TRY: db_lock(sid, false); return;
	case C_WAIT: db_lock(sid, true); return;
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

static void db_lock_timeout(const struct simev *e)
{
	struct ssess *s = &W.s[e->status];

	if (!s->alive || !s->waiting || s->wait_stamp != e->gen)
		return;
	s->waiting = false;
	db_dequeue(s->skind, e->status);
	db_reply(e->status, S_LOCK_TIMEOUT, 0, 0, 0);
	db_done(e->status);
}

static void db_idle(const struct simev *e)
{
	struct ssess *s = &W.s[e->status];

	if (s->alive && !s->waiting && s->idle_timeout > 0 && s->stamp == e->gen)
		db_end(e->status, true, "idle_session_timeout (server_lease)");
}

/* A leader that cannot hear its sessions end, or cannot reach the server
 * again (parted from the database: the man page's "host dies without
 * closing the connection" and "the old leader cannot reach the server"):
 * the pings notice, then grace_period and SIGKILL's time. */
static double restart_unheard_until(void)
{
	return T + W.p.ping_interval * W.p.ping_failures + W.p.ping_timeout +
	       W.grace + SIGKILL_GONE + net_slack;
}

/* The restart's window widens to the man page's "otherwise": from the
 * restart on, until at least `until`. */
static void restart_otherwise(double until, const char *why)
{
	if (T >= W.exempt_db_until)
		return;
	W.exempt_db_from = fmin(W.exempt_db_from, W.restart_at);
	W.exempt_db_until = fmax(W.exempt_db_until, until);
	say(0, "exempt: the fleet from %.3f until %.3f (%s)", W.exempt_db_from,
	    W.exempt_db_until, why);
}

static bool db_exempt(void)
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
static void db_down(const char *what, double down)
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

/* ---- the supervisor: supervisor.c's queue and drain --------------------- */

static void sup_enqueue(struct node *n, const struct election_event *ev);

/* START, TICK, SHUTDOWN: no payload. */
static void sup_dispatch(struct node *n, enum election_event_type type,
			 const char *reason)
{
	struct election_event ev = { .type = type, .reason = reason };

	sup_enqueue(n, &ev);
}

static void sup_command(struct node *n, enum election_command_news news, int pid,
			int status)
{
	struct election_event ev = { .type = ELECTION_COMMAND,
		.command = { .news = news, .pid = pid, .status = status } };

	sup_enqueue(n, &ev);
}

static void sup_peers(struct node *n, const struct election_peers_event *p)
{
	struct election_event ev = { .type = ELECTION_PEERS, .peers = *p };

	sup_enqueue(n, &ev);
}

/* ---- the client sessions: lease.c over the network model --------------- */

static void cs_send(struct node *n, struct csess *c, enum op op)
{
	struct simev e = { .kind = K_TO_DB, .node = NOBODY, .from = n->i, .op = op,
			   .skind = c->skind, .conn = c->conn, .status = c->sid };

	send_link(e, n->i, 0);
}

static int cur_node = NOBODY; /* whose code runs: its clock (sim_clock_gettime) */
/* Runs stmt as node n's code: the job layer reads n's clock. */
#define AT_NODE(n, stmt) do { int saved_ = cur_node; cur_node = (n)->i; stmt; \
			      cur_node = saved_; } while (0)

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

/* lease_event_cb and fence_event_cb of supervisor.c. */
static void cs_emit(struct node *n, struct csess *c, int news, enum fault fault,
		    const char *reason, unsigned nodes)
{
	struct election_event ev = {
		.type = c->skind ? ELECTION_FENCE : ELECTION_LOCK, .reason = reason,
		.session = { .news = (enum election_session_news)news, .fault = fault,
			     .lock_key = W.p.lock_key },
	};

	if (!c->skind && news == ELECTION_SESSION_ACQUIRED) {
		ev.session.fencing_token = c->token;
		ev.session.lock_pid = c->pid;
	}
	if (news == ELECTION_SESSION_BUSY)
		ev.session.queue_ahead = c->ahead;
	if (news == ELECTION_SESSION_PING_OK)
		ev.reason = NULL;
	sup_enqueue(n, &ev);
	/* the ledger's statements wait for the session: here it may be back */
	if (c->skind && n->ledger && n->up)
		AT_NODE(n, ledger_session_ready(n->ledger));
	/* a ping with failsafe names the nodes with a session for this lock */
	if (!c->skind && news == ELECTION_SESSION_PING_OK && W.failsafe && n->up) {
		const char *stranger = NULL;

		for (int j = 0; j < W.n; j++)
			if ((nodes >> j & 1) && !(n->members >> j & 1)) {
				stranger = W.nodes[j].name;
				break;
			}
		sup_peers(n, &(struct election_peers_event){
			.news = ELECTION_PEERS_STRANGER, .node = stranger });
	}
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
	c->phase = PH_LOCKING;
	cs_send(n, c, queue ? C_WAIT : C_TRY);
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
		c->ahead = e->op == S_LOCK_TIMEOUT || c->in_queue ? -1 : (int)e->token;
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

static void cs_query_answer(struct node *n, struct csess *c, const struct simev *e);
static void cs_send_query(struct node *n, struct csess *c);

/* lease.c's answered() and conn_failed(). */
static void cs_answer(struct node *n, struct csess *c, const struct simev *e)
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

static void check_token(struct node *n);
static void start_jobs(struct node *n);

/* Any of the node's processes alive: the command, or a job's run. */
static bool cmd_alive(const struct node *n)
{
	for (int k = 0; k < n->n_procs; k++)
		if (n->procs[k] && n->procs[k]->alive)
			return true;
	return n->ch.alive;
}

static struct child *proc_of(struct node *n, uint64_t id)
{
	for (int k = 0; k < n->n_procs; k++)
		if (n->procs[k] && n->procs[k]->id == id)
			return n->procs[k];
	return n->ch.id == id ? &n->ch : NULL;
}

static void start_child(struct node *n)
{
	struct child *ch = &n->ch;
	double r = urand(0, 1);

	if (n->jobs) {
		if (cmd_alive(n))
			fail_at(1u << n->i, "%s: START_CHILD while a run of its jobs is alive",
				n->name);
		check_token(n);
		start_jobs(n);
		return;
	}

	if (ch->alive) {
		fail_at(1u << n->i, "%s: START_CHILD while its command (pid %d) is alive",
			n->name, ch->pid);
		return;
	}
	check_token(n);
	/* controls fail closed (DESIGN 11): a command starts only under the
	 * last read answered, which found no pause */
	if (!n->ctl_read || n->ctl_paused)
		fail_at(1u << n->i, "%s: the command starts %s", n->name, !n->ctl_read
			? "before any read of the controls was answered"
			: "while the last read of the controls found the lock paused");
	/* supervisor.c's term_token: the snapshot's, the term's token */
	*ch = (struct child){ .alive = true, .id = ++W.next_child, .pid = ++W.next_pid,
			      .token = election_snapshot(&n->el)->fencing_token };
	/* from nothing to past the grace period to stop */
	ch->stop_need = r < 0.3 ? urand(0, 0.1) : r < 0.8 ? urand(0.1, W.grace)
		: urand(W.grace, 2 * W.grace + 1);
	if (chance(0.15))
		child_exit_at(n, ch, T + urand(0.5, 60), (int[]){ 0, 1, 2, 143 }[irand(4)]);
	say(1u << n->i, "%s: command pid %d starts (stops in %.3fs after SIGTERM)",
	    n->name, ch->pid, ch->stop_need);
	sup_command(n, ELECTION_COMMAND_STARTED, ch->pid, 0);
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

static void stop_child(struct node *n)
{
	if (n->jobs)
		AT_NODE(n, jobs_stop(n->jobs));
	else
		proc_stop(n, &n->ch);
}

static void proc_kill(struct node *n, struct child *ch, const char *why)
{
	if (!ch->alive)
		return;
	say(1u << n->i, "%s: SIGKILL to pid %d (%s)", n->name, ch->pid, why);
	/* the group is gone once every process left uninterruptible sleep */
	child_exit_at(n, ch, T + (chance(0.1) ? urand(0.05, SIGKILL_GONE)
				  : urand(0, 0.05)), 137);
}

static void kill_child(struct node *n, const char *why)
{
	if (n->jobs)
		AT_NODE(n, jobs_kill(n->jobs));
	else
		proc_kill(n, &n->ch, why);
}

/* ---- the job layer (DESIGN 10): the daemon's jobs.c and ledger.c --------
 *
 * Linked as they are; what they call is implemented here: the node's
 * clock, libev's timers, child.h's processes, lease_query on the fence
 * session (lease.c's one statement at a time), and the server's side of
 * ledger_sql.c's statements (db_query). */

/* The database server's clock, in Unix ms: the time of ticks. */
#define DB_BASE_MS INT64_C(1800000000000)

static int64_t db_ms(void)
{
	return DB_BASE_MS + (int64_t)llround(T * 1000);
}

static double t_of_ms(int64_t ms)
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

/* log.c: the job layer's lines go to the trace (not its debug lines). */
void log_msg(enum log_level level, const char *fmt, ...)
{
	char buf[LOG_MSG_MAX];
	va_list ap;

	if (level > LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say(cur_node >= 0 ? 1u << cur_node : 0, "%s:   jobs: %s",
	    cur_node >= 0 ? W.nodes[cur_node].name : "?", buf);
}

void log_event(enum log_level level, const struct log_fields *f, const char *fmt, ...)
{
	char buf[LOG_MSG_MAX];
	va_list ap;

	(void)f;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_msg(level, "%s", buf);
}

/* libev: a timer of node loop->node, on its clock. */
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
	push((struct simev){ .t = fmax(T, global_of(n, node_now(n) + w->at)),
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

static void evtimer_fire(struct node *n, uint64_t stamp)
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

/* ---- the ledger's tables, and its statements on the server's side ------ */

static size_t *hidx;         /* (job, tick) -> row index + 1 */
static size_t hcap;

static int job_index(const char *job)
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

static struct lrow *row_at(int j, int64_t tick)
{
	if (!hcap)
		return NULL;
	for (size_t k = hslot(j, tick); hidx[k]; k = (k + 1) & (hcap - 1)) {
		struct lrow *r = &W.rows[hidx[k] - 1];

		if (r->tick == tick && job_index(r->job) == j)
			return r;
	}
	return NULL;
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

static struct lrow *row_by_id(int64_t run_id)
{
	return run_id >= 1 && (size_t)run_id <= W.n_rows ? &W.rows[run_id - 1] : NULL;
}

/* A statement on its way: what lease_query sent, and the answer. */
enum qkind { Q_ENSURE, Q_CLAIM, Q_LAST, Q_FINISH, Q_PRUNE, Q_OTHER };
struct squery {
	enum qkind kind;
	bool started;            /* a claim that waited: the lock held at its start */
	int nparams;
	char *p[LEASE_QUERY_PARAMS];
	int nrows, ncols;
	char (*val)[24];
	const char **vals;
};
static struct squery *sq;
static size_t n_sq, cap_sq;

static void sq_free_all(void)
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
	}
	for (int k = 0; k < Q_OTHER; k++)
		if (texts[k] && !strcmp(sql, texts[k]))
			return (enum qkind)k;
	return Q_OTHER;
}

static uint64_t sq_new(const char *sql, int nparams, const char *const *params)
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
	__attribute__((format(printf, 5, 6)));
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

static int node_of_name(const char *name)
{
	for (int i = 0; i < W.n; i++)
		if (!strcmp(W.nodes[i].name, name))
			return i;
	return NOBODY;
}

/* One tick of a claim: inserted, or an interrupted one claimed again
 * with rerun; its run_id, 0 when not claimed. */
static int64_t claim_one(const char *job, int64_t tick, const char *node,
			 uint64_t token, const char *outcome, bool rerun)
{
	int j = job_index(job);
	struct lrow *r = j >= 0 ? row_at(j, tick) : NULL;

	if (j < 0)
		return 0;
	if (r && !(rerun && !strcmp(r->outcome, "interrupted") && r->token < token))
		return 0;
	if (!r) {
		r = row_new();
		snprintf(r->job, sizeof(r->job), "%s", job);
		r->tick = tick;
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
	    "(%s...) by %s token %" PRIu64 ": %s", n, n == 1 ? "" : "s", q->p[6],
	    q->p[3], token, !holder ? "refused, not the holder" : !term
	    ? "refused, a newer token is recorded" : "taken");
	sq_answer(q, n, 5);
	for (int i = 0; i < n; i++) {
		char job[64], tick[24], outcome[16], rerun[8];
		int64_t at, id = 0;

		array_elem(q->p[1], i, job, sizeof(job));
		array_elem(q->p[2], i, tick, sizeof(tick));
		array_elem(q->p[6], i, outcome, sizeof(outcome));
		array_elem(q->p[7], i, rerun, sizeof(rerun));
		at = strtoll(tick, NULL, 10);
		if (term && holder && at <= now)
			id = claim_one(job, at, q->p[3], token, outcome, rerun[0] == 't');
		if (id > 0 && !held)
			fail_at(node >= 0 ? 1u << node : 0, "a claim wrote the row of tick "
				"%" PRId64 " after %s's lock session lost the lock (DESIGN 10: "
				"the lock is checked again after any wait)", at, q->p[3]);
		put(q, i, 0, id == 0, "%" PRId64, id);
		put(q, i, 1, false, "%s", holder ? "t" : "f");
		put(q, i, 2, false, "%s", term ? "t" : "f");
		put(q, i, 3, false, "%s", at > now ? "t" : "f");
		put(q, i, 4, false, "%" PRId64, now);
	}
}

/* ledger_sql.c's last: with cut, an older term's running rows become
 * interrupted; the newest tick, the cut's, the last success, and
 * without cut the newest older running. */
static void db_last(struct squery *q)
{
	int j = job_index(q->p[1]);
	uint64_t token = strtoull(q->p[2], NULL, 10);
	bool cut = q->p[3][0] == 't';
	int64_t last = INT64_MIN, cut_max = INT64_MIN, success = INT64_MIN,
		older = INT64_MIN;

	for (size_t k = 0; k < W.n_rows; k++) {
		struct lrow *r = &W.rows[k];
		bool old_running = !strcmp(r->outcome, "running") && r->token < token;
		/* begun on this server, which never restarted since: over */
		bool same = r->server == W.server;

		if (job_index(r->job) != j)
			continue;
		last = r->tick > last ? r->tick : last;
		if (!strcmp(r->outcome, "succeeded") && r->finished_ms > success)
			success = r->finished_ms;
		if (old_running && !cut && !same && r->tick > older)
			older = r->tick;
		if (old_running && (cut || same)) {
			snprintf(r->outcome, sizeof(r->outcome), "interrupted");
			cut_max = r->tick > cut_max ? r->tick : cut_max;
		}
	}
	sq_answer(q, 1, 5);
	put(q, 0, 0, last == INT64_MIN, "%" PRId64, last);
	put(q, 0, 1, cut_max == INT64_MIN, "%" PRId64, cut_max);
	put(q, 0, 2, success == INT64_MIN, "%" PRId64, success);
	put(q, 0, 3, older == INT64_MIN, "%" PRId64, older);
	put(q, 0, 4, false, "%" PRId64, db_ms());
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
	}
	sq_answer(q, 0, 0);
}

/* A statement reaches the server on session sid: executed at once (one
 * snapshot, one commit), answered over the network. DIFFERS: no statement
 * fails with an SQL error, ENSURE always finds the ledger usable, and the
 * prune deletes nothing (no row is 30 days old). */
static void db_query(int sid, const struct simev *e)
{
	struct squery *q = &sq[e->gen - 1];

	switch (q->kind) {
	case Q_ENSURE:
		sq_answer(q, 1, LEDGER_CHECK_NCOLS);
		for (int c = 0; c < LEDGER_CHECK_DB_NOW_MS; c++) /* trusted: NULL */
			put(q, 0, c, c == LEDGER_CHECK_UNTRUSTED, "t");
		put(q, 0, LEDGER_CHECK_DB_NOW_MS, false, "%" PRId64, db_ms());
		break;
	case Q_CLAIM:
		if (T < W.terms_held_until) {
			/* waits for the row: no answer, not idle, until then */
			q->started = lock_held_by(atoi(q->p[5]));
			W.s[sid].stamp = ++stamps;
			push((struct simev){ .t = W.terms_held_until, .kind = K_DB_RESUME,
					     .node = NOBODY, .status = sid,
					     .conn = W.s[sid].conn, .gen = e->gen });
			return;
		}
		db_claim(q, lock_held_by(atoi(q->p[5])));
		break;
	case Q_LAST: db_last(q); break;
	case Q_FINISH: db_finish(q); break;
	case Q_PRUNE: sq_answer(q, 0, 0); break; /* nothing is 30 days old */
	case Q_OTHER:
		fail_at(1u << W.s[sid].node, "a ledger statement the model does not know");
		sq_answer(q, 0, 0);
		break;
	}
	db_reply(sid, S_ANSWER, e->gen, 0, 0);
	db_done(sid);
}

/* The terms row is free: a claim that waited on it goes on, unless its
 * session ended meanwhile (its statement went with it). */
static void db_resume(const struct simev *e)
{
	int sid = e->status;
	struct squery *q = &sq[e->gen - 1];

	if (sid >= W.n_s || !W.s[sid].alive || W.s[sid].conn != e->conn)
		return;
	db_claim(q, q->started);
	db_reply(sid, S_ANSWER, e->gen, 0, 0);
	db_done(sid);
}

/* ---- lease_query on the fence session (lease.c's q) --------------------- */

static void cs_send_query(struct node *n, struct csess *c)
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
	struct csess *c = &n->fence;

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
	AT_NODE(n, fn(arg, &a, NULL, NULL));
	cs_send_query(n, c);
}

/* ---- child.h: the job layer's processes, over the process model ----------- */

static void check_run_start(struct node *n, struct child *ch);
static void child_exit_at(struct node *n, const struct child *ch, double at, int status);
static void proc_stop(struct node *n, struct child *ch);
static void proc_kill(struct node *n, struct child *ch, const char *why);
static int64_t interval_ms[MAXJ];

struct child *child_new(struct ev_loop *loop, char *const *argv, bool shell,
			double grace_period, child_gone_fn on_gone, void *arg)
{
	struct node *n = &W.nodes[loop->node];
	struct child *c = calloc(1, sizeof(*c));

	(void)argv;
	(void)shell;
	(void)grace_period; /* every job has the fleet's (W.grace) */
	if (!c || n->n_procs == MAXJ)
		abort();
	c->job = n->n_procs;
	c->on_gone = on_gone;
	c->arg = arg;
	n->procs[n->n_procs++] = c;
	return c;
}

void child_set_label(struct child *c, const char *job)
{
	(void)c;
	(void)job;
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
	double iv = (double)interval_ms[ch->job] / 1000, r = urand(0, 1);

	if (!W.sched[ch->job]) {
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
		fail_at(1u << n->i, "%s: job %s started while its last run is alive",
			n->name, W.job_name[c->job]);
	c->alive = c->running = true;
	c->id = ++W.next_child;
	c->pid = ++W.next_pid;
	c->term_sent = false;
	c->token = token ? strtoull(token, NULL, 10) : 0;
	c->run_id = run ? strtoll(run, NULL, 10) : 0;
	c->tick = 0;
	c->stop_need = r < 0.3 ? urand(0, 0.1) : r < 0.8 ? urand(0.1, W.grace)
		: urand(W.grace, 2 * W.grace + 1);
	say(1u << n->i, "%s: job %s pid %d starts (run %" PRId64 ", token %" PRIu64
	    ", stops in %.3fs after SIGTERM)", n->name, W.job_name[c->job], c->pid,
	    c->run_id, c->token, c->stop_need);
	run_length(n, c);
	check_run_start(n, c);
	return 0;
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

/* ---- the supervisor's part for jobs (supervisor.c's start_jobs, ...) ---- */

static void jobs_gone_cb(void *arg, int status)
{
	sup_command(arg, ELECTION_COMMAND_GONE, 0, status);
}

static void jobs_refused_cb(void *arg, enum fault fault, const char *reason)
{
	struct election_event ev = { .type = ELECTION_COMMAND, .reason = reason,
				     .command = { .news = ELECTION_COMMAND_REFUSED,
						  .fault = fault } };

	sup_enqueue(arg, &ev);
}

/* supervisor.c's open_command with a ledger: the node's jobs. */
static void jobs_open(struct node *n)
{
	const struct jobs_callbacks cb = { jobs_gone_cb, jobs_refused_cb, n };
	char err[256];

	n->n_procs = 0;
	n->n_tm = 0;
	n->loop.node = n->fence_h.node = n->i;
	AT_NODE(n, n->ledger = ledger_new(&n->fence_h, n->cfg.schema, NULL));
	AT_NODE(n, n->jobs = jobs_new(&n->loop, &n->cfg, n->ledger, &cb, err, sizeof(err)));
	if (!n->ledger || !n->jobs) {
		fprintf(stderr, "sim: jobs_new: %s\n", err);
		exit(2);
	}
}

/* The process is gone: its jobs, timers and statements with it. */
static void jobs_close(struct node *n)
{
	if (!n->jobs)
		return;
	n->fence.q_waiting = n->fence.q_in_flight = false;
	n->fence.q_fn = NULL;
	AT_NODE(n, jobs_free(n->jobs));
	AT_NODE(n, ledger_free(n->ledger));
	n->jobs = NULL;
	n->ledger = NULL;
	n->n_procs = 0;
	n->n_tm = 0;
}

/* supervisor.c's start_jobs: "the command" is this term's jobs. */
static void start_jobs(struct node *n)
{
	struct ledger_term term = {
		.lock_key = n->term.lock_key,
		.fencing_token = n->term.fencing_token,
		.lock_pid = n->term.lock_pid,
	};

	sup_command(n, ELECTION_COMMAND_STARTED, 0, 0);
	AT_NODE(n, jobs_start(n->jobs, &term));
}

/* ---- failsafe: failsafe.c's rounds over the network model --------------- */

static double peer_delay(void)
{
	return urand(0.0005, 0.005) + (chance(0.02) ? urand(0, 0.5) : 0);
}

static struct round *round_of(struct node *n, int op)
{
	return &n->rnd[op == P_CHECK ? R_CHECK : R_CLAIM];
}

static void peers_ask(struct node *n, int op)
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
		/* failsafe.c's claim names the term's token */
		push((struct simev){ .t = T + peer_delay(), .kind = K_PEER_REQ, .node = j,
				     .from = n->i, .op = op, .gen = r->id,
				     .token = election_snapshot(&n->el)->fencing_token });
	}
	/* each answer is due within ping_timeout; a claim a member refused
	 * (here: nothing listens) is lost at once (failsafe.c's claim_lost) */
	push((struct simev){ .t = T + (r->answered == r->asked ||
				       (op == P_CLAIM && r->answered > 0) ? 0
				       : W.p.ping_timeout),
			     .kind = K_PEER_DEADLINE, .node = n->i, .op = op, .gen = r->id });
}

/* failsafe.c's deliver_cb: round_done_cb (ROUND_DONE, after a claim or a
 * regained claim) or check_done_cb. */
static void peers_finish(struct node *n, struct round *r)
{
	enum election_check check = ELECTION_CHECK_CLEAR;

	r->open = false;
	if (r->op != P_CHECK) {
		sup_peers(n, &(struct election_peers_event){
			.news = ELECTION_PEERS_ROUND_DONE, .agree = r->agree,
			.asked = r->asked });
		return;
	}
	if (r->running)
		check = ELECTION_CHECK_RUNNING;
	else if (r->answered < r->asked)
		check = ELECTION_CHECK_SILENT;
	sup_peers(n, &(struct election_peers_event){
		.news = ELECTION_PEERS_CHECK_DONE, .check = check,
		.same_members = r->same_list > 0 && r->other_list == 0 });
}

/* A member answers: a claim goes through the election (supervisor_claim;
 * with "regained", http.c calls supervisor_regained), a check reads the
 * snapshot (supervisor_running). */
static void peer_request(struct node *m, const struct simev *e)
{
	struct node *asker = &W.nodes[e->from];
	int status;

	if (e->op == P_CHECK) {
		status = election_runs_command(election_snapshot(&m->el));
	} else {
		m->claim_answer = 409;
		sup_peers(m, &(struct election_peers_event){
			.news = e->op == P_CLAIM ? ELECTION_PEERS_CLAIMED
				: ELECTION_PEERS_REGAINED,
			.node = asker->name, .fencing_token = e->op == P_CLAIM ? e->token : 0,
			.same_members = !strcmp(asker->hash, m->hash) });
		status = m->claim_answer;
	}
	say(1u << m->i | 1u << asker->i, "%s answers %s's %s: %d", m->name,
	    asker->name, e->op == P_CLAIM ? "claim" : e->op == P_CHECK ? "check"
	    : "regained claim", status);
	if (W.part_nn[m->i][asker->i])
		return;
	push((struct simev){ .t = T + peer_delay(), .kind = K_PEER_ANS, .node = e->from,
			     .from = m->i, .op = e->op, .gen = e->gen, .status = status });
}

static void peer_answer(struct node *n, const struct simev *e)
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

/* ---- the supervisor: actions, in supervisor.c's order -------------------- */

static void node_exit(struct node *n, const char *why);
static void controls_read(struct node *n);
static void lock_controls_read(struct node *n);

static void sup_disconnect(struct node *n) { cs_close(n, &n->lock); }
static void sup_fence_close(struct node *n) { cs_close(n, &n->fence); }
static void sup_connect(struct node *n) { cs_connect(n, &n->lock); }
static void sup_fence_connect(struct node *n) { cs_connect(n, &n->fence); }
static void sup_try_lock(struct node *n) { cs_lock(n, &n->lock, false); }
static void sup_wait_lock(struct node *n) { cs_lock(n, &n->lock, true); }
static void sup_fence_take(struct node *n) { cs_lock(n, &n->fence, true); }
/* ACQUIRED or BUSY as fence news */
static void sup_fence_try(struct node *n) { cs_lock(n, &n->fence, false); }
static void sup_ping(struct node *n) { cs_ping(n, &n->lock); }
static void sup_fence_ping(struct node *n) { cs_ping(n, &n->fence); }
static void sup_kill_child(struct node *n) { kill_child(n, "second signal"); }
static void sup_release(struct node *n) { cs_release(n, &n->lock); }
static void sup_fence_drop(struct node *n) { cs_unlock(n, &n->fence); }
static void sup_claim(struct node *n) { peers_ask(n, P_CLAIM); }
static void sup_check(struct node *n) { peers_ask(n, P_CHECK); }
static void sup_regained(struct node *n) { peers_ask(n, P_REGAINED); }
/* the switchover answered: deleted */
static void sup_controls_done(struct node *n) { (void)n; W.switchover = false; }
static void sup_nothing(struct node *n) { (void)n; } /* priority: not modelled */
static void sup_exit(struct node *n) { node_exit(n, "exits"); }

/* supervisor.c's runner: the jobs' claims name the lock session that holds
 * the lock now (back from failsafe, a new one in the same term) */
static void sup_runner_session(struct node *n)
{
	if (n->jobs && !nofix_lock_pid)
		AT_NODE(n, jobs_set_lock_pid(n->jobs, n->term.lock_pid));
}

/* runner_jobs.c's pauses: the whole lock's */
static void sup_runner_pauses(struct node *n)
{
	if (n->jobs)
		AT_NODE(n, jobs_set_paused(n->jobs, n->rows_paused, NULL, NULL, NULL,
					   0, "sim", "T"));
}

/* supervisor.c's action functions, run in the election's order */
static const struct {
	enum election_action action;
	void (*run)(struct node *n);
} sup_fns[] = {
	{ ELECTION_DO_DISCONNECT, sup_disconnect },
	{ ELECTION_DO_FENCE_CLOSE, sup_fence_close },
	{ ELECTION_DO_CONNECT, sup_connect },
	{ ELECTION_DO_FENCE_CONNECT, sup_fence_connect },
	{ ELECTION_DO_TRY_LOCK, sup_try_lock },
	{ ELECTION_DO_WAIT_LOCK, sup_wait_lock },
	{ ELECTION_DO_FENCE_TAKE, sup_fence_take },
	{ ELECTION_DO_FENCE_TRY, sup_fence_try },
	{ ELECTION_DO_PING, sup_ping },
	{ ELECTION_DO_FENCE_PING, sup_fence_ping },
	{ ELECTION_DO_RUNNER_SESSION, sup_runner_session },
	{ ELECTION_DO_RUNNER_PAUSES, sup_runner_pauses },
	{ ELECTION_DO_STOP_CHILD, stop_child },
	{ ELECTION_DO_KILL_CHILD, sup_kill_child },
	{ ELECTION_DO_START_CHILD, start_child },
	{ ELECTION_DO_RELEASE, sup_release },
	{ ELECTION_DO_FENCE_DROP, sup_fence_drop },
	{ ELECTION_DO_FAILSAFE_CLAIM, sup_claim },
	{ ELECTION_DO_FAILSAFE_CHECK, sup_check },
	{ ELECTION_DO_FAILSAFE_REGAINED, sup_regained },
	{ ELECTION_DO_CONTROLS_READ, controls_read },
	{ ELECTION_DO_CONTROLS_DONE, sup_controls_done },
	{ ELECTION_DO_PRIORITY_ASK, sup_nothing },
	{ ELECTION_DO_LOCK_CONTROLS_READ, lock_controls_read },
	{ ELECTION_DO_LOCK_PRIORITY_ASK, sup_nothing },
	{ ELECTION_DO_EXIT, sup_exit },
};
_Static_assert(sizeof(sup_fns) / sizeof(sup_fns[0]) == ELECTION_ACTION_COUNT,
	       "a function for every action");

static void sup_run_actions(struct node *n, const struct election_output *out)
{
	n->term = out->term;
	for (size_t i = 0; i < ELECTION_ACTION_COUNT; i++) {
		if (!(out->actions & election_actions[i].action))
			continue;
		for (size_t j = 0; j < ELECTION_ACTION_COUNT; j++)
			if (sup_fns[j].action == election_actions[i].action)
				sup_fns[j].run(n);
	}
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
	return "";
}

static void event_text(const struct election_event *ev, char *buf, size_t len)
{
	static const char *const types[] = { "START", "TICK", "SHUTDOWN", "LOCK",
		"FENCE", "COMMAND", "PEERS", "CONTROLS" };
	size_t used = (size_t)snprintf(buf, len, "%s %s", types[ev->type], event_news(ev));

	int status = ev->type == ELECTION_COMMAND ? ev->command.pid + ev->command.status
		: ev->type == ELECTION_PEERS ? ev->peers.agree : 0;
	int asked = ev->type == ELECTION_PEERS ? ev->peers.asked : 0;
	uint64_t token = ev->type == ELECTION_LOCK ? ev->session.fencing_token : 0;

	if (status && used < len)
		used += (size_t)snprintf(buf + used, len - used, " status=%d", status);
	if (asked && used < len)
		used += (size_t)snprintf(buf + used, len - used, " asked=%d", asked);
	if (token && used < len)
		used += (size_t)snprintf(buf + used, len - used, " token=%" PRIu64, token);
	if (ev->type == ELECTION_PEERS && ev->peers.node && used < len)
		used += (size_t)snprintf(buf + used, len - used, " node=%s", ev->peers.node);
	if (ev->reason && used < len)
		snprintf(buf + used, len - used, " (%s)", ev->reason);
}

static void sup_arm(struct node *n);

static void sup_drain(struct node *n)
{
	struct election_output out;

	if (n->draining)
		return;
	n->draining = true;
	while (n->up && n->qh != n->qt) {
		struct qev *q = &n->q[n->qh % QMAX];
		enum election_state before = n->el.state;
		char evs[300], acts[200];

		q->ev.wall = 1.7e9 + T;
		q->ev.jitter = urand(0, 1); /* supervisor.c draws it with erand48 */
		election_step(&n->el, &q->ev, node_now(n), &out);
		n->qh++;
		n_events++;
		event_text(&q->ev, evs, sizeof(evs));
		actions_text(out.actions, acts, sizeof(acts));
		if (out.actions || before != n->el.state || out.n_logs ||
		    !(q->ev.type == ELECTION_TICK ||
		      ((q->ev.type == ELECTION_LOCK || q->ev.type == ELECTION_FENCE) &&
		       q->ev.session.news == ELECTION_SESSION_PING_OK) ||
		      (q->ev.type == ELECTION_PEERS &&
		       q->ev.peers.news == ELECTION_PEERS_STRANGER)))
			say(1u << n->i, "%s: %s | %s -> %s |%s", n->name, evs,
			    election_state_name(before), election_state_name(n->el.state),
			    acts);
		for (int k = 0; k < out.n_logs; k++)
			say(1u << n->i, "%s:   log: %s", n->name, out.logs[k].text);
		if (out.answer.given)
			n->claim_answer = out.answer.agreed ? 200 : 409;
		sup_run_actions(n, &out);
	}
	n->draining = false;
	if (n->up)
		sup_arm(n);
}

static void sup_enqueue(struct node *n, const struct election_event *ev)
{
	struct qev *q;

	if (!n->up)
		return;
	if (n->qt - n->qh >= QMAX) {
		fail_at(1u << n->i, "%s: supervisor event queue full", n->name);
		return;
	}
	q = &n->q[n->qt % QMAX];
	q->ev = *ev;
	if (ev->reason) {
		snprintf(q->reason, sizeof(q->reason), "%s", ev->reason);
		q->ev.reason = q->reason;
	}
	n->qt++;
	sup_drain(n);
}

/* One timer serves every deadline the election keeps. */
static void sup_arm(struct node *n)
{
	double at;

	n->wake_gen++;
	if (n->el.state == ELECTION_DONE)
		return;
	at = election_next_wakeup(&n->el, node_now(n));
	if (isfinite(at))
		push((struct simev){ .t = fmax(T, global_of(n, at) + 1e-7), .kind = K_WAKE,
				     .node = n->i, .gen = n->wake_gen });
}

/* ---- pgleader processes: boot, exit, kill -9, freeze ---------------------- */

static void node_boot(struct node *n)
{
	struct election_params p;

	n->up = true;
	n->frozen = false;
	n->inc++;
	n->qh = n->qt = 0;
	n->draining = false;
	n->n_pend = 0;
	n->rnd[R_CLAIM].open = n->rnd[R_CHECK].open = false;
	cs_closed(&n->lock);
	cs_closed(&n->fence);
	n->lock.skind = 0;
	n->fence.skind = 1;
	election_params_from_config(&n->cfg, &p);
	p.connect_timeout = W.p.connect_timeout;
	election_init(&n->el, &p);
	n->steady_since = INFINITY;
	n->ctl_read = n->ctl_paused = false; /* a new process read nothing */
	jobs_close(n);
	if (W.n_jobs)
		jobs_open(n);
	/* a node started during a restart waits for nothing: the man page's
	 * "otherwise" bound, with SIGKILL's time */
	restart_otherwise(W.exempt_db_until, "a node started");
	say(1u << n->i, "%s: pgleader starts (incarnation %" PRIu64 ")", n->name, n->inc);
	sup_dispatch(n, ELECTION_START, NULL);
}

/* The process is gone: the kernel closes its sockets; systemd starts it
 * again (Restart=always) after a while. */
static void node_gone(struct node *n, double reboot_after)
{
	n->up = false;
	n->frozen = false;
	n->wake_gen++;
	n->n_pend = 0;
	n->rnd[R_CLAIM].open = n->rnd[R_CHECK].open = false;
	n->steady_since = INFINITY;
	/* a dead process runs nothing: its statement is not answered; its
	 * jobs are freed at its next start (node_exit may run inside them) */
	n->fence.q_waiting = n->fence.q_in_flight = false;
	n->fence.q_fn = NULL;
	cs_close(n, &n->lock);
	cs_close(n, &n->fence);
	push((struct simev){ .t = T + reboot_after, .kind = K_BOOT, .node = n->i,
			     .gen = n->inc });
}

static void node_exit(struct node *n, const char *why)
{
	say(1u << n->i, "%s: pgleader %s with code %d", n->name, why,
	    election_exit_code(&n->el));
	if (cmd_alive(n))
		fail_at(1u << n->i, "%s: pgleader exited while its command is alive",
			n->name);
	node_gone(n, urand(1, 5));
}

/* kill -9: the command dies with it (PR_SET_PDEATHSIG, the guard). */
static void node_kill(struct node *n)
{
	say(1u << n->i, "%s: kill -9", n->name);
	/* the kernel kills the command in the same exit that closes the
	 * sessions; the guard kills the rest of its group at once */
	for (int k = -1; k < n->n_procs; k++) {
		struct child *ch = k < 0 ? &n->ch : n->procs[k];

		if (ch && ch->alive) {
			ch->alive = false;
			say(1u << n->i, "%s: command pid %d is gone (status 137)",
			    n->name, ch->pid);
		}
	}
	node_gone(n, urand(1, 10));
}

static void stash(struct node *n, const struct simev *e)
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
		    W.nodes[j].up && election_runs_command(election_snapshot(&W.nodes[j].el)))
			return true;
	return false;
}

static void node_thaw(struct node *n)
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
	if (!io_first)
		push((struct simev){ .t = T, .kind = K_WAKE, .node = n->i,
				     .gen = n->wake_gen });
	for (size_t k = 0; k < n->n_pend; k++) {
		struct simev e = n->pend[k];

		if (e.kind == K_WAKE)
			continue;
		e.t = T;
		push(e);
	}
	n->n_pend = 0;
	if (io_first)
		push((struct simev){ .t = T, .kind = K_WAKE, .node = n->i,
				     .gen = n->wake_gen });
}

/* ---- the invariants, after every event ---------------------------------- */

/* The man page's SAFETY section exempts some faults from "one command at
 * a time", each with a bound; a node is covered while its window lasts. */
static bool node_exempt(int i)
{
	return W.nodes[i].frozen || T < W.exempt_node_until[i];
}

/* A command starts with its term's token: a new term's is the one its lock
 * session read. Back from failsafe the term goes on (DESIGN 9), and so
 * does its token, although the new lock session read a newer one. */
static void check_token(struct node *n)
{
	const struct election_snapshot *s = election_snapshot(&n->el);
	bool same_term = n->i == W.last_token_node && n->inc == W.last_inc &&
			 s->term == W.last_term;

	if (same_term)
		return; /* a restart of the command, or back from failsafe */
	if (s->fencing_token != n->lock.token) {
		fail_at(1u << n->i, "%s: the snapshot's fencing token %" PRIu64
			" is not the session's %" PRIu64, n->name,
			s->fencing_token, n->lock.token);
		return;
	}
	/* inside an exempt overlap an older term's command may start after a
	 * newer one (its fence grant was late): the token is what fences it */
	if (s->fencing_token <= W.last_token && !node_exempt(n->i) &&
	    T >= W.exempt_db_until)
		fail_at(1u << n->i | (W.last_token_node >= 0 ? 1u << W.last_token_node : 0),
			"%s: term %" PRIu64 " starts its command with fencing token %"
			PRIu64 ", not above the previous term's %" PRIu64 " (%s)",
			n->name, s->term, s->fencing_token, W.last_token,
			node_name(W.last_token_node));
	if (s->fencing_token < W.last_token)
		return;
	W.last_token = s->fencing_token;
	W.last_token_node = n->i;
	W.last_inc = n->inc;
	W.last_term = s->term;
}

/* ---- ticks (DESIGN 10) -------------------------------------------------- */

/* A tick is planned, claimed and answered within this after it fell (its
 * jitter aside): a round trip or two on the fence session behind the
 * statements before it, each as slow as the network gets. */
#define TICK_MARGIN (2 * net_slack + 1)

static const char *tick_text(int64_t ms, char *buf, size_t len)
{
	snprintf(buf, len, "%.3f", t_of_ms(ms));
	return buf;
}

/* A run of a scheduled job starts: its tick was claimed in the ledger by
 * this node's term (the row's token is the command's), and it is the
 * first command of that tick, in the whole fleet, under any fault. */
static void check_run_start(struct node *n, struct child *ch)
{
	const char *job = W.job_name[ch->job];
	struct lrow *r;
	char at[32];

	if (!W.sched[ch->job])
		return;
	if (ch->run_id <= 0) {
		fail_at(1u << n->i, "%s: a run of scheduled job %s starts without a "
			"tick claimed in the ledger", n->name, job);
		return;
	}
	r = row_by_id(ch->run_id);
	if (!r) {
		fail_at(1u << n->i, "%s: job %s's run %" PRId64 " has no row", n->name,
			job, ch->run_id);
		return;
	}
	ch->tick = r->tick;
	if (r->token != ch->token || r->node != n->i || r->finished)
		fail_at(1u << n->i, "%s: job %s's run for tick %s starts with token %"
			PRIu64 ", its row is %s's, token %" PRIu64 ", %s", n->name, job,
			tick_text(r->tick, at, sizeof(at)), ch->token, node_name(r->node),
			r->token, r->outcome);
	if (++r->starts > 1)
		fail_at(1u << n->i, "job %s's tick %s runs a second time (%s, token %"
			PRIu64 ")", job, tick_text(r->tick, at, sizeof(at)), n->name,
			ch->token);
	W.ticks_run++;
}

/* A node leads steadily: its jobs' ticks are planned this term (each has
 * a next tick), it holds the lock and the fence with the sessions it
 * knows, nothing paused, nothing parted, frozen or restarting. */
static bool node_steady(struct node *n)
{
	const struct election_snapshot *s = election_snapshot(&n->el);

	if (!n->up || n->frozen || !n->jobs || W.part_db[n->i] || !W.db_up ||
	    s->state != ELECTION_LEADER || !s->command_active)
		return false;
	if (W.holder[0] < 0 || W.s[W.holder[0]].conn != n->lock.conn ||
	    W.holder[1] < 0 || W.s[W.holder[1]].conn != n->fence.conn)
		return false;
	for (int j = 0; j < W.n_jobs; j++) {
		struct jobs_view v;

		jobs_view(n->jobs, (size_t)j, &v);
		if (v.paused || (W.sched[j] && v.next_tick == 0))
			return false;
	}
	return true;
}

/* A fault or a heal: every steady period starts again. */
static void unsteady(void)
{
	for (int i = 0; i < W.n; i++)
		W.nodes[i].steady_since = INFINITY;
}

/* Tick t of job j, TICK_MARGIN after it fell: when a node led steadily
 * from before it until now, the tick has a row, and it is not "missed"
 * (it ran, or was skipped because the run before was still going). */
static void check_tick(int j, int64_t t)
{
	bool steady = false;
	struct lrow *r;
	char at[32];

	for (int i = 0; i < W.n; i++)
		steady |= W.nodes[i].steady_since <= t_of_ms(t) - net_slack;
	if (!steady)
		return;
	W.ticks_checked++;
	r = row_at(j, t);
	if (!r || !strcmp(r->outcome, "missed"))
		fail_at((1u << W.n) - 1, "job %s's tick %s fell while a node led "
			"steadily, and %.1fs later it %s", W.job_name[j],
			tick_text(t, at, sizeof(at)), TICK_MARGIN,
			r ? "is recorded missed" : "has no row");
}

static void check_ticks(void)
{
	for (int i = 0; i < W.n; i++) {
		struct node *n = &W.nodes[i];

		if (!n->jobs || !node_steady(n))
			n->steady_since = INFINITY;
		else if (!isfinite(n->steady_since))
			n->steady_since = T;
	}
	for (int j = 0; j < W.n_jobs; j++) {
		while (W.sched[j] && W.check_tick[j] != SCHEDULE_NEVER &&
		       T >= t_of_ms(W.check_tick[j] + W.jitter_ms[j]) + TICK_MARGIN) {
			check_tick(j, W.check_tick[j]);
			W.check_tick[j] = schedule_next(W.sched[j], W.check_tick[j]);
		}
	}
}

/* At the end: no tick is lost silently. From each job's first row to
 * the last planned tick every tick has a row, but the older ticks of a
 * long gap: tickplan records the newest TICKPLAN_ROWS missed ticks of a
 * gap one row each and counts the others in the log (exempt: a stretch
 * without rows right before TICKPLAN_ROWS missed rows). */
static void check_lost(void)
{
	int64_t limit = db_ms() - (int64_t)(TICK_MARGIN * 1000);
	char a[32], b[32];

	for (int j = 0; j < W.n_jobs && !W.failed; j++) {
		int64_t first = INT64_MAX, t, u;
		int missed;

		for (size_t k = 0; k < W.n_rows; k++)
			if (job_index(W.rows[k].job) == j && W.rows[k].tick < first)
				first = W.rows[k].tick;
		for (t = first; W.sched[j] && t != INT64_MAX && t != SCHEDULE_NEVER &&
		     t <= limit - W.jitter_ms[j]; t = schedule_next(W.sched[j], t)) {
			if (row_at(j, t))
				continue;
			for (u = t; u != SCHEDULE_NEVER && u <= limit && !row_at(j, u);)
				u = schedule_next(W.sched[j], u);
			for (missed = 0; u != SCHEDULE_NEVER && row_at(j, u) &&
			     !strcmp(row_at(j, u)->outcome, "missed") && missed < TICKPLAN_ROWS;
			     u = schedule_next(W.sched[j], u))
				missed++;
			if (missed < TICKPLAN_ROWS) {
				fail_at((1u << W.n) - 1, "job %s's ticks from %s on (before %s) "
					"have no row: lost without a trace", W.job_name[j],
					tick_text(t, a, sizeof(a)), tick_text(u, b, sizeof(b)));
				return;
			}
			t = u;
		}
	}
}

/* Liveness: when, after the last fault, a node first led with its command. */
static void note_leader(void)
{
	if (T < W.faults_end || isfinite(W.led_after_heal))
		return;
	for (int i = 0; i < W.n; i++)
		if (W.nodes[i].up && W.nodes[i].el.state == ELECTION_LEADER &&
		    (W.nodes[i].jobs ? election_snapshot(&W.nodes[i].el)->command_active
		     : W.nodes[i].ch.alive))
			W.led_after_heal = T;
}

/* The longest overlap of each covering reason, over every seed run: the
 * summary prints it beside the man page's bounds. */
enum { OV_DB, OV_FROZEN, OV_SESSIONS, OV_N };
static const char *const overlap_names[OV_N] = { "database restart or failover",
	"leader frozen", "both sessions ended" };
static double overlap_max[OV_N];
static uint64_t overlap_seed[OV_N];
static uint64_t cur_seed;
static double overlap_began = INFINITY;
static int overlap_kind;

static void measure_overlap(unsigned alive)
{
	if (__builtin_popcount(alive) > 1 && !isfinite(overlap_began)) {
		overlap_began = T;
		overlap_kind = OV_SESSIONS;
		if (db_exempt())
			overlap_kind = OV_DB;
		for (int i = 0; i < W.n; i++)
			if ((alive >> i & 1) && (W.nodes[i].frozen || (node_exempt(i) &&
			    !strcmp(W.exempt_node_why[i], "leader frozen"))))
				overlap_kind = OV_FROZEN;
		return;
	}
	if (__builtin_popcount(alive) > 1 || !isfinite(overlap_began))
		return;
	if (T - overlap_began > overlap_max[overlap_kind]) {
		overlap_max[overlap_kind] = T - overlap_began;
		overlap_seed[overlap_kind] = cur_seed;
	}
	overlap_began = INFINITY;
}

/* One token is the truth: /status and the metrics (the snapshot) show the
 * token each running command was started with (known.txt had it as
 * finding 1: a command restarted after a failsafe regain got the new lock
 * session's token, the snapshot kept the term's). */
static void check_command_tokens(void)
{
	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];
		uint64_t shown = election_snapshot(&n->el)->fencing_token;

		for (int k = -1; n->up && k < n->n_procs; k++) {
			const struct child *ch = k < 0 ? &n->ch : n->procs[k];

			if (ch && ch->alive && shown != ch->token)
				fail_at(1u << i, "%s: the snapshot shows fencing token %"
					PRIu64 ", its command (pid %d) was started with %"
					PRIu64, n->name, shown, ch->pid, ch->token);
		}
	}
}

/* The nodes where job j's command (the single command: j 0) is alive. */
static unsigned alive_of(int j)
{
	unsigned m = 0;

	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];
		const struct child *ch = n->jobs ? (j < n->n_procs ? n->procs[j] : NULL)
				       : j == 0 ? &n->ch : NULL;

		if (ch && ch->alive)
			m |= 1u << i;
	}
	return m;
}

/* DESIGN 15: never more than queue_depth standbys in the lock's queue
 * (pg_locks' waiters: the sessions the model has waiting for the lock);
 * and, once the faults are over, the queue is not left empty while the
 * lock is held and a standby could wait in it (connected, asking, not
 * holding off after a switchover): a kill -9 of the leader must find a
 * queued standby. A standby that polls sees room within retry_interval
 * and queues within a round trip; one whose wait ran out tries and waits
 * again within two: QUEUE_EMPTY_BOUND covers either with the network's
 * slowest trips. */
#define QUEUE_EMPTY_BOUND (W.retry + 4 * net_slack + 0.5)

static bool could_queue(const struct node *n)
{
	return n->up && !n->frozen && n->el.state == ELECTION_STANDBY &&
	       n->lock.phase != PH_CLOSED && n->lock.phase != PH_CONNECTING &&
	       n->el.hold_until <= n->el.snap.now && n->el.p.priority > 0;
}

static double queue_empty_since; /* INFINITY: not empty, or no matter */

static void check_queue(void)
{
	double empty_since = queue_empty_since;
	unsigned waiting = 0, standbys = 0;
	int n_waiting = 0;

	for (int k = 0; k < W.n_s; k++)
		if (W.s[k].alive && !W.s[k].skind && W.s[k].waiting) {
			waiting |= 1u << W.s[k].node;
			n_waiting++;
		}
	if (n_waiting > W.p.queue_depth)
		fail_at(waiting, "%d standbys wait in the lock's queue (queue_depth %d)",
			n_waiting, W.p.queue_depth);
	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];

		if (could_queue(n))
			standbys |= 1u << i;
		/* a polling standby holds one session, the lock's */
		if (n->up && n->el.state == ELECTION_STANDBY && n->el.polling &&
		    !n->el.ctl_pending && !n->el.child_running &&
		    n->fence.phase != PH_CLOSED)
			fail_at(1u << i, "%s: polls with its fence session open",
				n->name);
	}
	if (!W.p.wait_in_queue || waiting || !standbys || W.holder[0] < 0 ||
	    !W.db_up || T < W.faults_end) {
		queue_empty_since = INFINITY;
		return;
	}
	if (isinf(empty_since))
		queue_empty_since = empty_since = T;
	if (T - empty_since > QUEUE_EMPTY_BOUND)
		fail_at(standbys, "the lock's queue stayed empty for %.1fs while "
			"standbys could wait in it (bound %.1fs)", T - empty_since,
			QUEUE_EMPTY_BOUND);
}

static void check_invariants(void)
{
	unsigned alive = 0, over = 0;
	int fs = NOBODY, ld = NOBODY;

	/* at most one command per job (DESIGN 10: never two runs of a job
	 * at once), outside the exempt windows */
	for (int j = 0; j < (W.n_jobs ? W.n_jobs : 1); j++) {
		unsigned a = alive_of(j), uncovered = 0;

		for (int i = 0; i < W.n; i++)
			if ((a >> i & 1) && !node_exempt(i))
				uncovered |= 1u << i;
		if (__builtin_popcount(a) > 1)
			over |= a;
		if (__builtin_popcount(a) > 1 && !db_exempt() &&
		    __builtin_popcount(uncovered) > 1)
			fail_at(a, "%d commands%s%s alive at once, no exempt fault covers it",
				__builtin_popcount(a), W.n_jobs ? " of job " : "",
				W.n_jobs ? W.job_name[j] : "");
	}
	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];

		if (!cmd_alive(n))
			continue;
		alive |= 1u << i;
		if (!n->up)
			continue;
		if (n->el.state == ELECTION_FAILSAFE && !node_exempt(i))
			fs = i;
		else if (n->el.state == ELECTION_LEADER && !node_exempt(i))
			ld = i;
	}
	check_command_tokens();
	if (fs >= 0 && ld >= 0)
		fail_at(1u << fs | 1u << ld, "failsafe keeps two leaders: %s in failsafe "
			"and %s leading, both commands alive", W.nodes[fs].name,
			W.nodes[ld].name);
	(void)alive;
	measure_overlap(over);
	note_leader();
	check_ticks();
	check_queue();
}

/* A leader within the bound after the last fault: the server lease (a
 * session the server must time out), the leader's detection and grace, a
 * queued wait or poll twice, failsafe's ttl (a silent member), a takeover
 * delay, and systemd starting a pgleader that exited or was killed. */
static double liveness_bound(void)
{
	return W.server_lease + W.p.ping_interval * W.p.ping_failures +
	       W.p.ping_timeout + W.grace + 2 * W.retry +
	       (W.failsafe ? W.p.failsafe_ttl : 0) + W.p.takeover_delay + 10 + 1;
}

/* ---- faults ------------------------------------------------------------- */

enum fault_kind { F_TERM_LOCK, F_TERM_FENCE, F_TERM_BOTH, F_DB_RESTART,
		  F_DB_FAILOVER, F_PART_DB, F_PART_NN, F_FREEZE, F_KILL, F_SIGTERM,
		  F_SWITCHOVER, F_PAUSE, F_COUNT, F_END };

static const char *const fault_names[] = { "pg_terminate_backend(lock)",
	"pg_terminate_backend(fence)", "pg_terminate_backend(both)",
	"database restart", "database failover", "partition node-database",
	"partition node-node", "SIGSTOP", "kill -9", "SIGTERM",
	"pgleader switchover", "pgleader pause" };

static int current_leader(void)
{
	for (int i = 0; i < W.n; i++)
		if (W.nodes[i].up && cmd_alive(&W.nodes[i]))
			return i;
	return irand(W.n);
}

static int session_of(int node, int skind)
{
	for (int k = W.n_s - 1; k >= 0; k--)
		if (W.s[k].alive && W.s[k].node == node && W.s[k].skind == skind)
			return k;
	return NOBODY;
}

static void terminate(int i, bool lock, bool fence)
{
	int ls = session_of(i, 0), fs = session_of(i, 1);

	/* SAFETY, "Both sessions ended together" and "one after the other":
	 * the lock session and the fence session, or the lock session while
	 * the fence is not held: the leader takes its fence again at once, or
	 * sends SIGKILL at once; the overlap is the time to reconnect (the
	 * network's slack) and for the group to be gone after SIGKILL */
	/* (the command may start after the sessions ended: the fence's
	 * grant was on its way) */
	bool fence_held = W.holder[1] >= 0 && W.s[W.holder[1]].node == i;
	/* "before the fence was taken again": the decider reconnects the
	 * fence session after its backoff (at most retry_interval) */
	bool retaking = T - W.fence_lost_at[i] <= W.retry + 2 * net_slack;
	/* counted from when the leader can learn it: with the node parted
	 * from the database, only the pings tell, and its command is gone
	 * grace_period after that (DIFFERS from the man page, which assumes
	 * the leader hears the end at once) */
	double bound = W.part_db[i] ? W.p.ping_interval * W.p.ping_failures +
		W.p.ping_timeout + W.grace : SIGKILL_GONE;

	if (lock && ls >= 0 && (fence || (!fence_held && retaking)))
		exempt_node(i, T + bound + net_slack, "both sessions ended");
	/* ... or the lock session first, then the fence session while the
	 * command is still stopping */
	if (fence && fs >= 0 && ls < 0)
		exempt_node(i, T + bound + net_slack, "both sessions ended");
	if (lock && ls >= 0)
		db_end(ls, true, "pg_terminate_backend");
	if (fence && fs >= 0)
		db_end(fs, true, "pg_terminate_backend");
}

/* With jobs, half of the lock sessions' ends come while another session
 * holds the lock's row of terms (SELECT ... FOR UPDATE) for 1 to 5 s, so
 * that a claim waits on it, and the end comes within that wait (DESIGN
 * 10: the claim checks the lock again after it). The draws come from the
 * fault's time, not the seed's generator: the seeds' other draws stay. */
static bool terms_row_first(const struct simev *e)
{
	double h = e->t * 7919.0 - floor(e->t * 7919.0);
	double hold = 1 + 4 * (e->t * 104729.0 - floor(e->t * 104729.0));

	if (!with_jobs || e->mask || h >= 0.5 || !W.db_up)
		return false;
	W.terms_held_until = fmax(W.terms_held_until, T + hold);
	say(0, "db: another session holds the terms row for %.3fs", hold);
	push((struct simev){ .t = T + hold * (0.3 + h), .kind = K_FAULT, .node = e->node,
			     .op = F_TERM_LOCK, .arg = e->arg, .from = e->from,
			     .gen = e->gen, .mask = 1 });
	return true;
}

/* With the controls, half of the pauses are followed by an ALTER TABLE
 * of the controls (DESIGN 11: reads fail with lock_timeout while it
 * holds its lock): from 0 to 4 s after the pause, for 2 to 12 s. Drawn
 * from the fault's time, so the seeds' other draws stay. */
static void controls_locked_after(const struct simev *e)
{
	double h = e->t * 6007.0 - floor(e->t * 6007.0);
	double from = T + 4 * (e->t * 3001.0 - floor(e->t * 3001.0));
	double hold = 2 + 10 * (e->t * 12289.0 - floor(e->t * 12289.0));

	if (h >= 0.5)
		return;
	say(0, "db: an ALTER TABLE locks the controls from %.3f for %.3fs", from, hold);
	W.ctl_locked_from = from;
	W.ctl_locked_until = from + hold;
}

static void fault(const struct simev *e)
{
	int i = e->node;
	struct node *n = &W.nodes[i];

	say(1u << i, "FAULT %s on %s for %.3fs", fault_names[e->op], n->name, e->arg);
	unsteady();
	if (e->op == F_TERM_LOCK && terms_row_first(e))
		return;
	if (e->op <= F_TERM_BOTH) { /* pg_terminate_backend */
		terminate(i, e->op != F_TERM_FENCE, e->op != F_TERM_LOCK);
		return;
	}
	switch (e->op) {
	case F_DB_RESTART: case F_DB_FAILOVER:
		if (W.db_up)
			db_down(fault_names[e->op], e->arg);
		return;
	case F_PART_DB:
		W.part_db[i] = true;
		/* a leader parted while a restart's window is open may not
		 * reach the server again in time: the man page's "otherwise" */
		if (cmd_alive(n))
			restart_otherwise(restart_unheard_until(), "a leader parted");
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 1 });
		return;
	case F_PART_NN:
		W.part_nn[i][e->from] = W.part_nn[e->from][i] = true;
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 2,
				     .from = e->from });
		return;
	case F_FREEZE:
		if (!n->up || n->frozen)
			return;
		n->frozen = true;
		n->frozen_until = T + e->arg;
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 3 });
		return;
	case F_KILL:
		if (n->up)
			node_kill(n);
		return;
	case F_SIGTERM:
		if (n->up && !n->frozen)
			sup_dispatch(n, ELECTION_SHUTDOWN, "SIGTERM");
		return;
	case F_SWITCHOVER: /* asked of the node running the command */
		if (W.switchover && T < W.so_until)
			return; /* one stands: refused */
		W.switchover = true;
		W.so_leader = i;
		W.so_target = chance(0.5) ? e->from : NOBODY;
		W.so_until = T + e->arg;
		return;
	case F_PAUSE:
		W.paused = true;
		controls_locked_after(e);
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 4 });
		return;
	default:
		return;
	}
}

static void heal(const struct simev *e)
{
	unsteady();
	switch (e->op) {
	case 0:
		if (!W.db_up)
			say(0, "db: accepts connections again");
		W.db_up = true;
		return;
	case 1:
		if (W.part_db[e->node])
			say(1u << e->node, "partition %s-database heals",
			    W.nodes[e->node].name);
		heal_link(e->node);
		return;
	case 2:
		W.part_nn[e->node][e->from] = W.part_nn[e->from][e->node] = false;
		return;
	case 3:
		node_thaw(&W.nodes[e->node]);
		return;
	case 4:
		if (W.paused)
			say(0, "resumed");
		W.paused = false;
		return;
	default:
		return;
	}
}

/* The last fault: everything heals; the liveness clock starts. */
static void faults_end(void)
{
	say(0, "faults end: everything heals");
	W.ctl_locked_until = fmin(W.ctl_locked_until, T);
	heal(&(struct simev){ .op = 0 });
	heal(&(struct simev){ .op = 4 });
	W.switchover = false;
	for (int i = 0; i < W.n; i++) {
		heal(&(struct simev){ .op = 1, .node = i });
		heal(&(struct simev){ .op = 3, .node = i });
		for (int j = 0; j < W.n; j++)
			W.part_nn[i][j] = false;
	}
}

static void schedule_faults(void)
{
	/* the controls' weights are 0 without --controls: the same draws */
	const int weight[F_COUNT] = { 12, 6, 6, 5, 4, 10, 6, 7, 7, 5,
				      with_controls ? 10 : 0, with_controls ? 5 : 0 };
	int total = 0;

	for (int k = 0; k < F_COUNT; k++)
		total += weight[k];
	for (double t = urand(2, 10); t < W.faults_end; t += urand(2, 25)) {
		int r = irand(total), k = 0;
		struct simev e = { .t = t, .kind = K_FAULT, .node = NOBODY };

		while (r >= weight[k])
			r -= weight[k++];
		e.op = k;
		e.from = irand(W.n);
		e.arg = k == F_DB_RESTART ? urand(0.05, 15) : k == F_DB_FAILOVER
			? urand(1, 30) : k == F_PART_DB ? urand(0.5, 3 * W.server_lease)
			: k == F_FREEZE ? urand(0.2, 2 * W.server_lease) : urand(0.5, 30);
		/* a target: the node running the command, or any */
		e.gen = chance(0.6);
		push(e);
	}
	push((struct simev){ .t = W.faults_end, .kind = K_FAULT, .node = NOBODY, .op = F_END });
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

/* The operator controls (DESIGN 11): none is ever in force here; a read
 * answers after a round trip on the fence session that asked, or fails as
 * ledger.c's does when that session is gone. */
/* A controls read over the fence session (skind 1) or, a polling
 * standby's (DESIGN 15), over the lock session (skind 0). DIFFERS: the
 * read does not hold up the lock session's next try, as lease.c's
 * statements do. */
static void controls_read_on(struct node *n, const struct csess *c)
{
	double there = net_delay(n->i, 0) - T, back = net_delay(n->i, 1) - T;
	double at = T + there;
	double locked = at >= W.ctl_locked_from ? W.ctl_locked_until : -INFINITY;
	/* behind the ALTER TABLE's lock: answered when it ends, or an error
	 * at lock_timeout */
	bool fails = at < locked && locked > at + W.retry;

	if (at < locked)
		at = fails ? at + W.retry : locked;
	push((struct simev){ .t = at + back, .kind = K_NOTIFY, .node = n->i,
			     .op = N_CONTROLS, .skind = c->skind, .gen = c->conn, .status = fails });
}

static void controls_read(struct node *n)
{
	controls_read_on(n, &n->fence);
}

static void lock_controls_read(struct node *n)
{
	controls_read_on(n, &n->lock);
}

static void controls_answer(struct node *n, const struct simev *e)
{
	static struct election_controls c;
	struct election_event ev = { .type = ELECTION_CONTROLS,
		.controls = { .news = ELECTION_CONTROLS_READ, .in_force = &c } };
	const struct csess *sess = e->skind ? &n->fence : &n->lock;

	/* what the ledger holds as the read reaches it */
	c = (struct election_controls){ .readable = true, .paused = W.paused,
		.paused_by = "sim", .paused_at = "T", .target = "", .leader = "",
		.asked_by = "sim", .asked_at = "T" };
	if (W.switchover && T < W.so_until) {
		c.switchover = true;
		c.leader = W.nodes[W.so_leader].name;
		c.target = W.so_target == NOBODY ? "" : W.nodes[W.so_target].name;
		c.left = W.so_until - T;
	}

	if (sess->conn != e->gen || sess->phase < PH_READY || W.part_db[n->i]) {
		ev.controls.news = ELECTION_CONTROLS_FAILED;
		ev.controls.session_lost = true;
		ev.reason = e->skind ? "fence session lost" : "lock session lost";
	} else if (e->status) {
		ev.controls.news = ELECTION_CONTROLS_FAILED;
		ev.reason = "canceling statement due to lock timeout";
	}
	if (ev.controls.news == ELECTION_CONTROLS_READ) {
		n->ctl_read = true;
		n->ctl_paused = n->rows_paused = c.paused;
	}
	sup_enqueue(n, &ev);
}

static void notify(struct node *n, const struct simev *e)
{
	struct child *ch = e->op == N_CONTROLS ? NULL : proc_of(n, e->gen);

	if (e->op == N_CHILD_GONE && n->jobs) {
		/* child.c's reaping: the job layer hears its run is gone */
		if (ch && ch->running) {
			ch->running = false;
			AT_NODE(n, ch->on_gone(ch->arg, e->status));
		}
	} else if (e->op == N_CHILD_GONE) {
		sup_command(n, ELECTION_COMMAND_GONE, 0, e->status);
	} else if (e->op == N_GRACE && ch && ch->alive) {
		proc_kill(n, ch, "grace period over");
		if (!n->jobs) /* child_on_killed: the jobs do not ask */
			sup_command(n, ELECTION_COMMAND_KILLED, 0, 0);
	} else if (e->op == N_CONTROLS) {
		controls_answer(n, e);
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
	case K_WAKE:
		if (e->gen == n->wake_gen)
			sup_dispatch(n, ELECTION_TICK, NULL);
		return;
	case K_TO_NODE: {
		struct csess *c = e->skind ? &n->fence : &n->lock;

		if (c->conn != e->conn)
			return;
		cs_answer(n, c, e);
		/* lease.c's answered(): the caller's statement goes once the
		 * session is idle again */
		if (c->conn == e->conn)
			cs_send_query(n, c);
		return;
	}
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
	default: handle_node(e); return; /* what reaches a pgleader */
	}
}

/* ---- set-up: each node's configuration through config_load -------------- */

struct knobs {
	int n;
	const char *acquire, *restart;
	double retry, ping_interval, ping_timeout, grace, lease, ttl, takeover;
	int failures;
	int queue_depth;          /* DESIGN 15 */
	bool failsafe, mismatch;
	/* the jobs of DESIGN 10, in [job.NAME] sections; n_jobs 0: a command */
	int n_jobs;
	char sched[MAXJ][32];     /* "": runs all the time */
	int64_t every_ms[MAXJ];
	int64_t jitter_ms[MAXJ], max_runtime_ms[MAXJ], window_ms[MAXJ];
	bool skip[MAXJ];
};

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
	}
	fclose(f);
	return path;
}

static void node_config(struct node *n, const struct knobs *k)
{
	char d[12][32], peers[256] = "", http[32], err[512];
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
	snprintf(http, sizeof(http), "127.0.0.1:%d", 8100 + n->i);
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
	if (k->failsafe) {
		/* with mismatch, the first and the last node do not list each
		 * other; the others list everyone: three different lists */
		for (int j = 0; j < k->n; j++) {
			size_t used = strlen(peers);

			if (k->mismatch && ((n->i == 0 && j == k->n - 1) ||
					    (n->i == k->n - 1 && j == 0)))
				continue;
			snprintf(peers + used, sizeof(peers) - used, "%sn%d=127.0.0.1:%d",
				 used ? "," : "", j + 1, 8100 + j);
			n->members |= 1u << j;
		}
		argv[c++] = "--http-addr"; argv[c++] = http;
		argv[c++] = "--failsafe-peers"; argv[c++] = peers;
		argv[c++] = "--failsafe-secret-file"; argv[c++] = "/nonexistent/sim-secret";
		argv[c++] = "--failsafe-ttl"; argv[c++] = d[6];
	}
	if (k->n_jobs) {
		argv[c++] = "-c";
		argv[c++] = (char *)jobs_file(k);
	} else {
		argv[c++] = "--";
		argv[c++] = "job";
	}
	argv[c] = NULL;
	if (config_load(&n->cfg, c, argv, err, sizeof(err)) != CONFIG_OK) {
		fprintf(stderr, "sim: config_load refused node %s: %s\n", n->name, err);
		exit(2);
	}
	if (k->n_jobs)
		unlink(jobs_file_path); /* read: nothing reads it again */
	n->cfg_ok = true;
	if (k->failsafe && fleet_members_hash(n->cfg.peers, n->cfg.n_peers, n->hash) < 0)
		abort();
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
	}
	for (int j = 0; j < k->n_jobs; j++)
		if (!k->sched[j][0])
			say(0, "job j%d: no schedule (runs all the time)", j + 1);
}

static void setup(uint64_t seed)
{
	struct knobs k;
	uint64_t checked = W.ticks_checked, ticks = W.ticks_run;

	for (int i = 0; i < W.n; i++) {
		jobs_close(&W.nodes[i]);
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
	n_heap = 0;
	seq_no = 0;
	T = 0;
	rng_state = seed * 0x2545f4914f6cdd1dULL + 1;
	pick_knobs(&k);
	queue_empty_since = INFINITY;
	/* from the seed, not the random stream: 1 to 3 (DESIGN 15) */
	k.queue_depth = 1 + (int)(seed / 2 % 3);
	W.n = k.n;
	W.db_up = true;
	W.xid = 700 + (uint64_t)irand(1000);
	W.holder[0] = W.holder[1] = NOBODY;
	W.last_token_node = NOBODY;
	W.led_after_heal = INFINITY;
	for (int i = 0; i < W.n; i++) {
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
		node_config(n, &k);
	}
	setup_jobs(&k);
	election_params_from_config(&W.nodes[0].cfg, &W.p);
	W.p.connect_timeout = 10.25; /* lease_connect_timeout of one host */
	W.server_lease = W.nodes[0].cfg.server_lease_ms / 1000.0;
	W.grace = W.nodes[0].cfg.grace_period_ms / 1000.0;
	W.retry = W.p.retry_interval;
	W.failsafe = k.failsafe;
	W.mismatch = k.mismatch;
	W.faults_end = urand(60, 240);
	W.end = W.faults_end + liveness_bound() + 1;
	say(0, "seed %" PRIu64 ": %d nodes, acquire %s (queue_depth %d), restart %s, retry %gs, ping %gs/%gs x%d, "
	    "grace %gs, server_lease %gs, takeover %gs, failsafe %s%s (ttl %gs), faults until "
	    "%.1fs, liveness bound %.1fs, after SIGCONT %s first%s%s", seed, k.n, k.acquire,
	    k.queue_depth, k.restart, k.retry, k.ping_interval, k.ping_timeout, k.failures, k.grace, k.lease,
	    k.takeover, k.failsafe ? "on" : "off",
	    k.mismatch ? " with member lists that differ" : "", k.ttl, W.faults_end,
	    liveness_bound(), io_first ? "sockets" : "timers",
	    *mutant_name ? ", mutant " : "", mutant_name);
	for (int i = 0; i < W.n; i++)
		push((struct simev){ .t = urand(0, 2), .kind = K_BOOT, .node = i, .gen = 0 });
	schedule_faults();
}

/* Runs one seed; true when every invariant held. */
static bool run(uint64_t seed)
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
		check_invariants();
	}
	if (!W.failed && !(W.led_after_heal <= W.faults_end + liveness_bound()))
		fail_at((1u << W.n) - 1, "no leader within %.1fs after the last fault "
			"(at %.1fs)", liveness_bound(), W.faults_end);
	if (!W.failed)
		check_lost();
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

static bool known(const char *path, uint64_t seed)
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

struct opts {
	uint64_t first, count;
	bool one;
	const char *known_file;
	const char *regress_file; /* seeds run beside the range */
	size_t keep;
};

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
		else if (!strcmp(argv[i], "--no-fix-lock-pid"))
			nofix_lock_pid = true;
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
		       "led steadily\n", W.ticks_run, W.ticks_checked);
	printf("sim: %" PRIu64 " seeds from %" PRIu64 " (%" PRIu64 " known, skipped), %"
	       PRIu64 " failed; %" PRIu64 " events (%" PRIu64 " decider steps) in %.2fs: "
	       "%.0f events/s%s%s\n", ran, o.first, skipped, failed, n_simev, n_events,
	       secs, (double)n_simev / fmax(secs, 1e-9), *mutant_name ? "; mutant " : "",
	       mutant_name);
	return failed ? 1 : 0;
}
