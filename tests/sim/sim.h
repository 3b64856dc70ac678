/* sim.h: what the files of the simulator share (tests/sim/README.md):
 * the world and its models' types, and the functions one file calls in
 * another. */
#ifndef PGLEADER_SIM_H
#define PGLEADER_SIM_H

#include <inttypes.h>
#include <math.h>
#include <signal.h>
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
#include "dynlib.h"
#include "election_impl.h" /* the machines' state, for the invariants */
#include "failsafe.h"
#include "hook.h"
#include "fleet.h"
#include "jobs.h"
#include "lease.h"
#include "lease_sql.h"
#include "ledger.h"
#include "ledger_sql.h"
#include "log.h"
#include "params.h"
#include "pooled.h"
#include "notify.h"
#include "schedule.h"
#include "supervisor.h"
#include "tickplan.h"

int sim_clock_gettime(clockid_t id, struct timespec *ts);

#define MAXN 5
extern double net_slack; /* --slack */
#define NOBODY (-1)
/* The longest a group takes to be gone after SIGKILL (uninterruptible
 * sleep): the man page's SAFETY section allows it beside grace_period. */
#define SIGKILL_GONE 1.0


struct tline {
	double t;
	unsigned nodes; /* bit per node the line is about */
	char *text;
};

enum kind {
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
	K_TRIGGER,       /* pgleader trigger asks for a run now (DESIGN 13) */
};

enum op {
	/* client to server */
	C_CONNECT, C_TRY, C_TRY_RANK, C_WAIT, C_CLAIM, C_PING, C_UNLOCK, C_CLOSE,
	C_QUERY,         /* lease_query: a ledger statement */
	/* server to client */
	S_CONNECTED, S_REFUSED, S_LOCK, S_LOCK_TIMEOUT, S_CLAIMED, S_PONG,
	S_UNLOCKED, S_ENDED, S_ANSWER,
	/* node notifications */
	N_CHILD_GONE, N_GRACE, N_KILLED_GONE,
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
				  * -1 after a queued wait ran out or a
				  * try that did not count */
	bool plain_next;         /* lease_plain_try: the next try does not
				  * count */
	bool counted;            /* the try in flight counts the queue */
	bool ranked;             /* its count ranked the standbys too */
	bool rank_next;          /* lease_rank_queue: the next count ranks
				  * even with the queue full */
	unsigned ping_mask;      /* the last ping's nodes with a session */
	char ping_nodes[64];     /* ... as lease_ping_nodes names them */
	lease_event_fn cb;       /* supervisor.c's lease_event_cb, fence_event_cb */
	void *cb_arg;
};

/* A command's process group: child.h's object (child_new below), the
 * single command's or each job's of the job layer. */
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
	int job;                 /* index of its job in the configuration; -1:
				  * the single command */
	int64_t run_id, tick;    /* PGLEADER_RUN_ID and its tick; 0: none */
	child_gone_fn on_gone;
	void (*on_killed)(void *arg); /* child_on_killed */
	void *arg;
};

/* libev's loop and the lease as the job layer sees them: a node's. */
/* libev's loop, the lease and the failsafe client as supervisor.c and
 * the job layer see them: a node's (the lease: its session skind). */
struct ev_loop { int node; };
struct lease { int node; int skind; };
struct failsafe { int node; };
#define MAXJ 3                   /* jobs per node */
#define MAXT 48                  /* libev timers per node */
#define NSIG_HANDLED 5           /* supervisor.c's signals */

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
	/* the daemon's own supervisor.c, and its election (election_new's) */
	struct supervisor *sup;
	struct election *el;
	bool exiting;            /* ev_break: its loop returns, it exits */
	double clk_off, clk_rate;
	struct csess lock, fence;
	struct simev *pend;      /* events that arrived while frozen */
	size_t n_pend, cap_pend;
	unsigned members;        /* bit per node in failsafe_peers */
	char hash[FLEET_HASH_LEN + 1];
	struct round rnd[2];     /* R_CLAIM, R_CHECK */
	uint64_t last_term_seen;
	double frozen_until;
	/* the job layer (DESIGN 10): the daemon's jobs.c and ledger.c */
	struct jobs *jobs;       /* NULL: a single command */
	/* the ports: what supervisor.c and the job layer call */
	struct ev_loop loop;
	struct lease lease_h[2]; /* the lock session, the fence session */
	struct failsafe fs_h;
	struct failsafe_callbacks fcb;
	ev_signal *sig[NSIG_HANDLED];
	int n_sig;
	struct child *procs[MAXJ]; /* the command, or the jobs' processes */
	int n_procs;
	struct { ev_timer *w; uint64_t stamp; } tm[MAXT];
	int n_tm;
	double steady_since;     /* leads with its jobs planned: see check_ticks */
	/* the controls as its last read answered found them (DESIGN 11) */
	bool ctl_read;           /* one was answered, ever */
	bool ctl_paused;         /* ... and found the lock paused */
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
	int attempt;             /* DESIGN 13: 1, or a retry's */
	char on_failure[8];      /* "", "owed" or "sent" */
	int on_failure_by;       /* the node that claimed it */
	uint64_t on_failure_inc; /* its incarnation then */
	int on_failure_runs;     /* on_failure commands started for it */
	uint64_t on_failure_token; /* the term that claimed it */
	double on_failure_at;    /* when it was claimed (the simulation's time) */
	int owed_told_node;      /* the node a LAST last told it owed to, */
	uint64_t owed_told_inc;  /* ... in that incarnation, */
	double owed_told_at;     /* ... then (0: never told) */
	uint64_t server;         /* the server it began on (W.server) */
	int64_t trigger;         /* DESIGN 13: the request it ran; 0: a tick */
	bool due_seen, busy_at_due; /* its retry's due time came: a run of the
				     * job (asked for now) was alive then */
};

/* A request to run now (DESIGN 13), as the triggers table holds it, and
 * what the checker knows of it. */
struct trig {
	int64_t id, tick;        /* its run's tick (asked_at) */
	int job;
	double asked;            /* the simulation's time */
	int64_t run_id;          /* the row its claim wrote; 0: none yet */
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
	int lock_slots;          /* what a count says of the lock table's size:
				  * a polling standby counts every
				  * ceil(slots / ELECTION_COUNT_SLOTS)-th try */
	int count_every;         /* ... that many */
	double drain;             /* drain_timeout (DESIGN 13): a leader told to
				   * stop keeps the lock up to this much longer */
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
	uint64_t retries_checked, on_failures_run; /* DESIGN 13 */
	size_t failed_rows[4096];     /* rows that failed, for check_retries */
	int n_failed_rows;
	/* DESIGN 13: the requests to run now (--triggers), and each job's
	 * overlap; the last time a run of the job was seen alive */
	struct trig trigs[256];
	int n_trigs;
	uint64_t triggers_run;
	int overlap[MAXJ];
	double last_alive[MAXJ];
	/* failure */
	bool failed;
	char why[512];
	unsigned why_nodes;
};
/* A delay that may keep an old leader from its fence past the settle wait
 * (1 s: a retry every 0.25 s, a round trip to connect, one to try). */
#define RESTART_SLOW 0.1
/* Runs stmt as node n's code: the job layer reads n's clock. */
#define AT_NODE(n, stmt) do { int saved_ = cur_node; cur_node = (n)->i; stmt; \
			      cur_node = saved_; } while (0)

/* The database server's clock, in Unix ms: the time of ticks. */
#define DB_BASE_MS INT64_C(1800000000000)

/* A statement on its way: what lease_query sent, and the answer. */
enum qkind { Q_ENSURE, Q_CLAIM, Q_LAST, Q_FINISH, Q_PRUNE,
	     /* the controls (DESIGN 11): ledger.c's probes, read, ask, delete */
	     Q_SCHEMA, Q_PROBE, Q_CONTROLS, Q_PRIORITY, Q_HANDED,
	     Q_ON_FAILURE, Q_ANNOUNCE, /* the jobs' list (DESIGN 13): answered, kept nowhere */
	     Q_TRIGGERS, /* the requests to run now (DESIGN 13) */
	     Q_LISTEN,   /* ... and the LISTEN for them: answered, no NOTIFY comes */
	     Q_OTHER };
struct squery {
	enum qkind kind;
	bool started;            /* a claim that waited: the lock held at its start */
	bool error;              /* failed: lock_timeout behind an ALTER TABLE */
	bool paused;             /* a controls read found the lock paused */
	int nparams;
	char *p[LEASE_QUERY_PARAMS];
	int nrows, ncols;
	char (*val)[24];
	const char **vals;
};

/* What a claim's statement found: the term's token may be recorded, the
 * run's insert goes by a holder, the lock is held now. */
struct claim_checks {
	bool term, holder, held;
	uint64_t token;
	int64_t now;
};

/* A tick is planned, claimed and answered within this after it fell (its
 * jitter aside): a round trip or two on the fence session behind the
 * statements before it, each as slow as the network gets. */
#define TICK_MARGIN (2 * net_slack + 1)

/* The longest overlap of each covering reason, over every seed run: the
 * summary prints it beside the man page's bounds. */
enum { OV_DB, OV_FROZEN, OV_SESSIONS, OV_N };

/* DESIGN 15: never more than queue_depth standbys in the lock's queue
 * (pg_locks' waiters: the sessions the model has waiting for the lock);
 * and, once the faults are over, the queue is not left empty while the
 * lock is held and a standby could wait in it (connected, asking, not
 * holding off after a switchover): a kill -9 of the leader must find a
 * queued standby. A standby that polls sees room within count_every
 * tries (its try counts the queue only every count_every-th time,
 * ELECTION_COUNT_SLOTS) and queues within a round trip; one whose wait ran out tries and waits
 * again within two: QUEUE_EMPTY_BOUND covers either with the network's
 * slowest trips. */
#define QUEUE_EMPTY_BOUND (W.count_every * W.retry + 4 * net_slack + 0.5)
/* ... and a standby that polls through the pooler (poll_dsn) counts the
 * queue every ELECTION_POLL_COUNT_EVERY-th poll, and joins within
 * ELECTION_JOIN_SPREAD of one that saw room. */
#define QUEUE_EMPTY_POOLED_BOUND (ELECTION_POLL_COUNT_EVERY * W.retry + \
				  ELECTION_JOIN_SPREAD + 4 * net_slack + 0.5)

enum fault_kind { F_TERM_LOCK, F_TERM_FENCE, F_TERM_BOTH, F_DB_RESTART,
		  F_DB_FAILOVER, F_PART_DB, F_PART_NN, F_FREEZE, F_KILL, F_SIGTERM,
		  F_SWITCHOVER, F_PAUSE, F_COUNT, F_END };

struct knobs {
	int n;
	const char *acquire, *restart;
	double retry, ping_interval, ping_timeout, grace, lease, ttl, takeover;
	int failures;
	int queue_depth;          /* DESIGN 15 */
	bool poll_dsn;            /* ... polling through a pooler */
	bool failsafe, mismatch;
	/* the jobs of DESIGN 10, in [job.NAME] sections; n_jobs 0: a command */
	int n_jobs;
	char sched[MAXJ][32];     /* "": runs all the time */
	int64_t every_ms[MAXJ];
	int64_t jitter_ms[MAXJ], max_runtime_ms[MAXJ], window_ms[MAXJ];
	bool skip[MAXJ];
	/* DESIGN 13, from the seed but not its random stream */
	int retries[MAXJ];
	int64_t retry_delay_ms[MAXJ];
	bool on_failure[MAXJ];
	double drain;             /* drain_timeout (DESIGN 13); 0: none */
	int overlap[MAXJ];        /* --triggers: enum overlap_policy */
};

struct opts {
	uint64_t first, count;
	bool one;
	const char *known_file;
	const char *regress_file; /* seeds run beside the range */
	size_t keep;
};

double urand(double lo, double hi);
int irand(int n);
bool chance(double p);
extern double T;
extern uint64_t n_events;
void say(unsigned nodes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void push(struct simev e);
extern struct world W;
extern bool io_first;
extern bool with_controls;
extern bool with_jobs;
extern bool with_triggers;
void fail_at(unsigned nodes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void exempt_node(int i, double until, const char *why);
double node_now(const struct node *n);
double global_of(const struct node *n, double t);
void hold(struct simev e);
void send_link(struct simev e, int i, int dir);
void heal_link(int i);
const char *node_name(int i);
void db_end(int sid, bool tell, const char *why);
void db_receive(const struct simev *e);
void db_lock_timeout(const struct simev *e);
void db_idle(const struct simev *e);
double restart_unheard_until(void);
void restart_otherwise(double until, const char *why);
bool db_exempt(void);
void db_down(const char *what, double down);
extern int cur_node;
void cs_answer(struct node *n, struct csess *c, const struct simev *e);
bool cmd_alive(const struct node *n);
struct child *proc_of(struct node *n, uint64_t id);
void proc_kill(struct node *n, struct child *ch, const char *why);
int64_t db_ms(void);
double t_of_ms(int64_t ms);
void evtimer_fire(struct node *n, uint64_t stamp);
extern size_t *hidx;
extern size_t hcap;
int job_index(const char *job);
struct lrow *row_at(int j, int64_t tick);
struct lrow *row_attempt(int j, int64_t tick, int attempt);
struct lrow *row_by_id(int64_t run_id);
/* job j's newest row, and its newest owed on_failure (what LAST tells) */
void newest_rows(int j, const struct lrow **newest, const struct lrow **owed);
extern struct squery *sq;
void sq_free_all(void);
uint64_t sq_new(const char *sql, int nparams, const char *const *params);
int node_of_name(const char *name);
void db_resume(const struct simev *e);
void cs_send_query(struct node *n, struct csess *c);
extern int64_t interval_ms[MAXJ];
double peer_delay(void);
struct round *round_of(struct node *n, int op);
void peers_finish(struct node *n, struct round *r);
void peer_request(struct node *m, const struct simev *e);
void peer_answer(struct node *n, const struct simev *e);
void send_signal(struct node *n, int signum);
void node_free_supervisor(struct node *n);
void node_boot(struct node *n);
void node_exit(struct node *n, const char *why);
void node_kill(struct node *n);
void stash(struct node *n, const struct simev *e);
void node_thaw(struct node *n);
void check_token(struct node *n);
void check_run_start(struct node *n, struct child *ch);
void check_run_end_line(struct node *n, enum log_level level, const char *text);
void unsteady(void);
void check_lost(void);
/* DESIGN 13: an on_failure command starts for run_id on node n. */
void check_on_failure_start(struct node *n, int64_t run_id);
void check_on_failure_end(void);
extern const char *const overlap_names[OV_N];
extern double overlap_max[OV_N];
extern uint64_t overlap_seed[OV_N];
extern uint64_t cur_seed;
extern double overlap_began;
extern double queue_empty_since, queue_empty_pooled_since;
void check_invariants(void);
double liveness_bound(void);
int current_leader(void);
void fault(const struct simev *e);
void heal(const struct simev *e);
void faults_end(void);
void schedule_faults(void);
bool run(uint64_t seed);
bool known(const char *path, uint64_t seed);

#endif
