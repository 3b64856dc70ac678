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
 * The supervisor's part (supervisor.c and lease.c: actions to calls,
 * outcomes to events, in their order) is re-implemented here against the
 * models: see sup_run_actions and the cs_* functions. Where it differs
 * from the daemon, a comment says so (DIFFERS:).
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "election.h"
#include "fleet.h"
#include "params.h"

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
};

enum op {
	/* client to server */
	C_CONNECT, C_TRY, C_WAIT, C_CLAIM, C_PING, C_UNLOCK, C_CLOSE,
	/* server to client */
	S_CONNECTED, S_REFUSED, S_LOCK, S_LOCK_TIMEOUT, S_CLAIMED, S_PONG,
	S_UNLOCKED, S_ENDED,
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
	      PH_HELD, PH_PINGING, PH_UNLOCKING };
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
	uint64_t token;
};

struct child {
	bool alive;
	uint64_t id;
	int pid;
	double stop_need;        /* seconds from SIGTERM to its exit */
	bool term_sent;
	int self_status;
	uint64_t token;          /* its PGLEADER_FENCING_TOKEN */
};

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
	bool switchover;
	int so_leader, so_target;     /* the target NOBODY: any standby */
	double so_until;
	/* failure */
	bool failed;
	char why[512];
	unsigned why_nodes;
};

static struct world W;
static const char *mutant_name = "";
/* After SIGCONT: the expired timer first (libev's order), or the sockets
 * first (another loop's): odd seeds run the sockets first, so that the
 * decider is checked in both orders; --io-first and --timers-first force
 * one for every seed. */
static enum { ORDER_BY_SEED, ORDER_IO_FIRST, ORDER_TIMERS_FIRST } order_opt;
static bool io_first; /* this seed's */
static bool with_controls; /* --controls: switchovers and pauses among the faults */

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
	if (d > RESTART_SLOW && W.nodes[i].ch.alive)
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
				   .conn = e->conn };
	db_reply(sid, S_CONNECTED, 0, 0, sid);
	db_done(sid);
}

static void db_lock(int sid, bool wait)
{
	int key = W.s[sid].skind;

	if (W.holder[key] < 0 && W.n_queue[key] == 0) {
		W.holder[key] = sid;
		db_reply(sid, S_LOCK, 0, 0, 1);
		db_done(sid);
		return;
	}
	if (!wait || W.holder[key] == sid) {
		db_reply(sid, S_LOCK, 0, 0, W.holder[key] == sid);
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
			    !(W.nodes[i].ch.alive && notice - T > RESTART_SLOW);
		/* SAFETY, "Both sessions ended, one after the other": a leader
		 * stopping its command without the lock loses its fence here,
		 * the fence may pass to the new leader before the server ends
		 * that session too, and the old command is SIGKILLed once its
		 * leader hears: gone SIGKILL's time later */
		if (heard && W.nodes[i].ch.alive && !(lock_ended >> i & 1))
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
		if (W.part_db[i] && W.nodes[i].ch.alive)
			restart_otherwise(restart_unheard_until(), "a leader parted");
		/* a segment sent before the restart and still being
		 * retransmitted holds up what follows it on the link (seed
		 * 93487: the old leader's fence connect waited 1.2 s behind a
		 * ping) */
		if (W.nodes[i].ch.alive &&
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

static void cs_closed(struct csess *c)
{
	c->phase = PH_CLOSED;
	c->then = THEN_HOLD;
	c->ping_wanted = false;
	c->conn = 0;
	c->sid = NOBODY;
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
		"BUSY", "PING_OK", "RELEASED" };

	return news >= 0 && news < 6 ? names[news] : "?";
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

	if (!c->skind && news == ELECTION_SESSION_ACQUIRED)
		ev.session.fencing_token = c->token;
	if (news == ELECTION_SESSION_PING_OK)
		ev.reason = NULL;
	sup_enqueue(n, &ev);
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
	if (c->phase == PH_CLAIMING && c->skind)
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
	if (c->phase == PH_READY)
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
 * reads the token); a fence is told held at once. */
static void cs_lock_answer(struct node *n, struct csess *c, const struct simev *e)
{
	if (c->phase != PH_LOCKING)
		return;
	if (e->op == S_LOCK_TIMEOUT || !e->status) {
		c->phase = PH_READY;
		cs_emit(n, c, ELECTION_SESSION_BUSY, FAULT_NONE, NULL, 0);
		return;
	}
	c->phase = PH_CLAIMING;
	cs_send(n, c, C_CLAIM);
	if (c->skind)
		cs_emit(n, c, ELECTION_SESSION_ACQUIRED, FAULT_NONE, NULL, 0);
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
static void cs_answer(struct node *n, struct csess *c, const struct simev *e)
{
	switch (e->op) {
	case S_CONNECTED:
		if (c->phase != PH_CONNECTING)
			return;
		c->sid = e->status;
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
	default: return; /* not the server's */
	}
}

/* ---- the command: child.c over the process model ------------------------ */

static void child_exit_at(struct node *n, double at, int status)
{
	push((struct simev){ .t = at, .kind = K_CHILD_EXIT, .node = n->i,
			     .gen = n->ch.id, .status = status });
}

static void check_token(struct node *n);

static void start_child(struct node *n)
{
	struct child *ch = &n->ch;
	double r = urand(0, 1);

	if (ch->alive) {
		fail_at(1u << n->i, "%s: START_CHILD while its command (pid %d) is alive",
			n->name, ch->pid);
		return;
	}
	check_token(n);
	/* supervisor.c's term_token: the snapshot's, the term's token */
	*ch = (struct child){ .alive = true, .id = ++W.next_child, .pid = ++W.next_pid,
			      .token = election_snapshot(&n->el)->fencing_token };
	/* from nothing to past the grace period to stop */
	ch->stop_need = r < 0.3 ? urand(0, 0.1) : r < 0.8 ? urand(0.1, W.grace)
		: urand(W.grace, 2 * W.grace + 1);
	if (chance(0.15))
		child_exit_at(n, T + urand(0.5, 60), (int[]){ 0, 1, 2, 143 }[irand(4)]);
	say(1u << n->i, "%s: command pid %d starts (stops in %.3fs after SIGTERM)",
	    n->name, ch->pid, ch->stop_need);
	sup_command(n, ELECTION_COMMAND_STARTED, ch->pid, 0);
}

static void stop_child(struct node *n)
{
	struct child *ch = &n->ch;

	if (!ch->alive || ch->term_sent)
		return;
	ch->term_sent = true;
	say(1u << n->i, "%s: SIGTERM to pid %d", n->name, ch->pid);
	child_exit_at(n, T + ch->stop_need, 143);
	push((struct simev){ .t = T + W.grace, .kind = K_NOTIFY, .node = n->i,
			     .op = N_GRACE, .gen = ch->id });
}


static void kill_child(struct node *n, const char *why)
{
	if (!n->ch.alive)
		return;
	say(1u << n->i, "%s: SIGKILL to pid %d (%s)", n->name, n->ch.pid, why);
	/* the group is gone once every process left uninterruptible sleep */
	child_exit_at(n, T + (chance(0.1) ? urand(0.05, SIGKILL_GONE) : urand(0, 0.05)), 137);
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
		push((struct simev){ .t = T + peer_delay(), .kind = K_PEER_REQ, .node = j,
				     .from = n->i, .op = op, .gen = r->id });
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
		.news = ELECTION_PEERS_CHECK_DONE, .check = check });
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
			.node = asker->name, .same_members = !strcmp(asker->hash, m->hash) });
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
	if (e->op == P_CHECK)
		r->running |= e->status == 1;
	else
		r->agree += e->status == 200;
	/* failsafe.c's claim_lost: a claim ends with its first refusal; the
	 * regained claim runs to its end */
	if (r->answered == r->asked || (e->op == P_CLAIM && e->status != 200))
		peers_finish(n, r);
}

/* ---- the supervisor: actions, in supervisor.c's order -------------------- */

static void node_exit(struct node *n, const char *why);
static void controls_read(struct node *n);

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
	{ ELECTION_DO_EXIT, sup_exit },
};
_Static_assert(sizeof(sup_fns) / sizeof(sup_fns[0]) == ELECTION_ACTION_COUNT,
	       "a function for every action");

static void sup_run_actions(struct node *n, const struct election_output *out)
{
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
	cs_close(n, &n->lock);
	cs_close(n, &n->fence);
	push((struct simev){ .t = T + reboot_after, .kind = K_BOOT, .node = n->i,
			     .gen = n->inc });
}

static void node_exit(struct node *n, const char *why)
{
	say(1u << n->i, "%s: pgleader %s with code %d", n->name, why,
	    election_exit_code(&n->el));
	if (n->ch.alive)
		fail_at(1u << n->i, "%s: pgleader exited while its command (pid %d) "
			"is alive", n->name, n->ch.pid);
	node_gone(n, urand(1, 5));
}

/* kill -9: the command dies with it (PR_SET_PDEATHSIG, the guard). */
static void node_kill(struct node *n)
{
	say(1u << n->i, "%s: kill -9", n->name);
	/* the kernel kills the command in the same exit that closes the
	 * sessions; the guard kills the rest of its group at once */
	if (n->ch.alive) {
		n->ch.alive = false;
		say(1u << n->i, "%s: command pid %d is gone (status 137)", n->name,
		    n->ch.pid);
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
	if (n->ch.alive)
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

/* Ticks (DESIGN 10) are a later layer: their invariant goes here. */
static void check_ticks(void)
{
}

/* Liveness: when, after the last fault, a node first led with its command. */
static void note_leader(void)
{
	if (T < W.faults_end || isfinite(W.led_after_heal))
		return;
	for (int i = 0; i < W.n; i++)
		if (W.nodes[i].up && W.nodes[i].ch.alive &&
		    W.nodes[i].el.state == ELECTION_LEADER)
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

		if (n->up && n->ch.alive && shown != n->ch.token)
			fail_at(1u << i, "%s: the snapshot shows fencing token %" PRIu64
				", its command (pid %d) was started with %" PRIu64,
				n->name, shown, n->ch.pid, n->ch.token);
	}
}

static void check_invariants(void)
{
	unsigned alive = 0, uncovered = 0;
	int fs = NOBODY, ld = NOBODY;

	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];

		if (!n->ch.alive)
			continue;
		alive |= 1u << i;
		if (!node_exempt(i))
			uncovered |= 1u << i;
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
	if (__builtin_popcount(alive) > 1 && !db_exempt() &&
	    __builtin_popcount(uncovered) > 1)
		fail_at(alive, "%d commands alive at once, no exempt fault covers it",
			__builtin_popcount(alive));
	measure_overlap(alive);
	note_leader();
	check_ticks();
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
		if (W.nodes[i].up && W.nodes[i].ch.alive)
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

static void fault(const struct simev *e)
{
	int i = e->node;
	struct node *n = &W.nodes[i];

	say(1u << i, "FAULT %s on %s for %.3fs", fault_names[e->op], n->name, e->arg);
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
		if (n->ch.alive)
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
		push((struct simev){ .t = T + e->arg, .kind = K_HEAL, .node = i, .op = 4 });
		return;
	default:
		return;
	}
}

static void heal(const struct simev *e)
{
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

	if (!n->ch.alive || n->ch.id != e->gen)
		return;
	if (e->status != 137 && !n->ch.term_sent && T > W.faults_end)
		return; /* no command ends by itself once the faults end */
	n->ch.alive = false;
	say(1u << n->i, "%s: command pid %d is gone (status %d)", n->name, n->ch.pid,
	    e->status);
	if (n->up)
		push((struct simev){ .t = T, .kind = K_NOTIFY, .node = n->i,
				     .op = N_CHILD_GONE, .gen = e->gen, .status = e->status });
}

/* The operator controls (DESIGN 11): none is ever in force here; a read
 * answers after a round trip on the fence session that asked, or fails as
 * ledger.c's does when that session is gone. */
static void controls_read(struct node *n)
{
	double there = net_delay(n->i, 0) - T, back = net_delay(n->i, 1) - T;

	push((struct simev){ .t = T + there + back, .kind = K_NOTIFY, .node = n->i,
			     .op = N_CONTROLS, .gen = n->fence.conn });
}

static void controls_answer(struct node *n, const struct simev *e)
{
	static struct election_controls c;
	struct election_event ev = { .type = ELECTION_CONTROLS,
		.controls = { .news = ELECTION_CONTROLS_READ, .in_force = &c } };

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

	if (n->fence.conn != e->gen || n->fence.phase < PH_READY || W.part_db[n->i]) {
		ev.controls.news = ELECTION_CONTROLS_FAILED;
		ev.controls.session_lost = true;
		ev.reason = "fence session lost";
	}
	sup_enqueue(n, &ev);
}

static void notify(struct node *n, const struct simev *e)
{
	if (e->op == N_CHILD_GONE) {
		sup_command(n, ELECTION_COMMAND_GONE, 0, e->status);
	} else if (e->op == N_GRACE && n->ch.alive && n->ch.id == e->gen) {
		kill_child(n, "grace period over");
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
	f.node = f.gen ? current_leader() : f.from;
	f.from = (f.node + 1 + irand(W.n - 1)) % W.n;
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

		if (c->conn == e->conn)
			cs_answer(n, c, e);
		return;
	}
	case K_NOTIFY: notify(n, e); return;
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
	bool failsafe, mismatch;
};

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
	argv[c++] = "--";
	argv[c++] = "job";
	argv[c] = NULL;
	if (config_load(&n->cfg, c, argv, err, sizeof(err)) != CONFIG_OK) {
		fprintf(stderr, "sim: config_load refused node %s: %s\n", n->name, err);
		exit(2);
	}
	n->cfg_ok = true;
	if (k->failsafe && fleet_members_hash(n->cfg.peers, n->cfg.n_peers, n->hash) < 0)
		abort();
}

static void setup(uint64_t seed)
{
	struct knobs k;

	for (int i = 0; i < W.n; i++) {
		if (W.nodes[i].cfg_ok)
			config_free(&W.nodes[i].cfg);
		free(W.nodes[i].pend);
	}
	free(W.held);
	memset(&W, 0, sizeof(W));
	n_heap = 0;
	seq_no = 0;
	T = 0;
	rng_state = seed * 0x2545f4914f6cdd1dULL + 1;
	pick_knobs(&k);
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
		W.fence_lost_at[i] = -INFINITY;
		node_config(n, &k);
	}
	election_params_from_config(&W.nodes[0].cfg, &W.p);
	W.p.connect_timeout = 10.25; /* lease_connect_timeout of one host */
	W.server_lease = W.nodes[0].cfg.server_lease_ms / 1000.0;
	W.grace = W.nodes[0].cfg.grace_period_ms / 1000.0;
	W.retry = W.p.retry_interval;
	W.failsafe = k.failsafe;
	W.mismatch = k.mismatch;
	W.faults_end = urand(60, 240);
	W.end = W.faults_end + liveness_bound() + 1;
	say(0, "seed %" PRIu64 ": %d nodes, acquire %s, restart %s, retry %gs, ping %gs/%gs x%d, "
	    "grace %gs, server_lease %gs, takeover %gs, failsafe %s%s (ttl %gs), faults until "
	    "%.1fs, liveness bound %.1fs, after SIGCONT %s first%s%s", seed, k.n, k.acquire,
	    k.restart, k.retry, k.ping_interval, k.ping_timeout, k.failures, k.grace, k.lease,
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
		"[--known FILE] [--regress FILE] [--mutant NAME] [--keep K] [--io-first | --timers-first] [--controls] "
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
	printf("sim: %" PRIu64 " seeds from %" PRIu64 " (%" PRIu64 " known, skipped), %"
	       PRIu64 " failed; %" PRIu64 " events (%" PRIu64 " decider steps) in %.2fs: "
	       "%.0f events/s%s%s\n", ran, o.first, skipped, failed, n_simev, n_events,
	       secs, (double)n_simev / fmax(secs, 1e-9), *mutant_name ? "; mutant " : "",
	       mutant_name);
	return failed ? 1 : 0;
}
