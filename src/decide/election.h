/* election.h: the leadership state machine, free of I/O and clocks. */
#ifndef PGLEADER_ELECTION_H
#define PGLEADER_ELECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exit_codes.h"
#include "fault.h"
#include "log.h"

/*
 * States and events. election.c's table (states[]) has one row per state
 * naming what START, SHUTDOWN, each piece of the lock session's news and
 * the command's end do there, and its deadlines: the row is the state,
 * defined with its handlers in the state's own file (election_impl.h). The
 * fence session's news and the command's other news are handled alike in
 * every state (fence_news, election_on_command). An event a row
 * does not name is ignored there ("-": none); TICK does nothing of its
 * own: the deadlines are checked after every event. A session's news in a
 * step whose deadlines end that session anyway (run out during a freeze)
 * is stale: the step is decided by the deadlines alone (election.c, decide).
 *
 * The table (tests/state-table.py prints it; make lint checks it):
 * INIT          START start, SHUTDOWN election_shutdown
 * CONNECTING    SHUTDOWN shutdown_unanswered, CONNECTED connecting_done,
 *               FAILED connection_failed, deadlines connecting_tick,
 *               fence connecting_fence
 * BACKOFF       SHUTDOWN election_shutdown, FAILED backoff_lost,
 *               deadlines backoff_tick
 * STANDBY       SHUTDOWN standby_shutdown, FAILED connection_failed,
 *               ACQUIRED standby_acquired, BUSY lock_busy,
 *               GRANTED standby_granted, deadlines standby_tick,
 *               fence standby_fence
 * LEADER        SHUTDOWN election_shutdown, FAILED leader_lost,
 *               PING_OK ping_ok, GONE leader_child_gone,
 *               deadlines leader_tick, fence leader_fence
 * FAILSAFE      SHUTDOWN election_shutdown, CONNECTED fs_state_connected,
 *               FAILED fs_state_lost, ACQUIRED fs_state_regained,
 *               BUSY fs_state_busy, GONE fs_state_child_gone,
 *               deadlines fs_state_tick, fence fs_state_fence
 * DEMOTING      SHUTDOWN election_shutdown, FAILED stopping_lost,
 *               PING_OK ping_ok, GONE demoted_child_gone,
 *               deadlines draining_tick, fence demoting_fence
 * SHUTTING_DOWN SHUTDOWN kill_on_second_signal, FAILED stopping_lost,
 *               PING_OK ping_ok, GONE stopped_child_gone,
 *               deadlines draining_tick, fence shutting_down_fence
 * RELEASING     FAILED release_lost, RELEASED released,
 *               deadlines releasing_tick
 * DONE          -
 * (end of the table)
 *
 * fence: what the state means for the fence machine (election_fence.c),
 * told with each of its events (struct election_fence_inputs); a state
 * without one means nothing to it but the command and the lock session.
 * connection_failed, leader_lost: a permanent fault (election_exit_for) ends
 * pgleader instead, after the command is stopped; backoff_lost,
 * stopping_lost: only a permanent fault counts. LEADER's FAILED (or its
 * pings') enters FAILSAFE only inside the lease (server_lease after the last
 * ping reply); FAILSAFE demotes, even on ACQUIRED, once its last agreed
 * claim is failsafe_ttl old. Command: STARTED records the pid; GONE restarts
 * (LEADER), reconnects (DEMOTING) or goes on ending (SHUTTING_DOWN); the
 * fence is dropped with it.
 * Fence: connected at start beside the lock; taken after the lock and before
 * the command (a STANDBY asks at GRANTED, while the lock's claim is under
 * way, and gives it back if it leaves STANDBY but for LEADER; the other
 * states ignore GRANTED), ELECTION_SETTLE later when this standby saw the
 * database go away; reconnected when lost, and taken again while the
 * command lives, in every state (only tried while it is being stopped). While the command is
 * stopped without the lock: the fence lost on its own, or held elsewhere:
 * KILL now. The fence (election_fence.c) and failsafe's claims, check and
 * record (election_failsafe.c) are machines of their own: only their file
 * touches their struct. Peers: REGAINED from the node a member agreed to ends its
 * record: BACKOFF reconnects at once.
 * Controls (DESIGN 11, election_controls.c), read over the fence session by
 * LEADER and STANDBY: a leader starts nothing before a read answered since
 * the lock came; a pause stops the command and keeps it from starting (the
 * lock stays); a switchover asked of this leader is DEMOTING with the lock
 * still held (handing_over) until the command is gone, then a reconnect and
 * a STANDBY that does not ask for the lock until it is over; one to another
 * node gives a new leader's lock back before anything started; priority 0
 * never asks for the lock.
 */
enum election_state {
	ELECTION_INIT,
	ELECTION_CONNECTING,    /* opening the lock connection */
	ELECTION_BACKOFF,       /* no connection; reconnecting after a delay */
	ELECTION_STANDBY,       /* connected, asking for the lock */
	ELECTION_LEADER,        /* holding the lock; the command runs or is due */
	ELECTION_FAILSAFE,      /* lock lost, the command kept: the members agree */
	ELECTION_DEMOTING,      /* lease lost; stopping the command */
	ELECTION_SHUTTING_DOWN, /* stopping the command before exiting */
	ELECTION_RELEASING,     /* the command is gone; unlocking */
	ELECTION_DONE,          /* exit with election_exit_code() */
	ELECTION_STATE_COUNT
};

enum election_event_type {
	ELECTION_START,
	ELECTION_TICK,          /* time passed: check deadlines */
	ELECTION_SHUTDOWN,      /* SIGTERM or SIGINT; reason = signal name */
	ELECTION_LOCK,          /* news from the lock session */
	ELECTION_FENCE,         /* news from the fence session */
	ELECTION_COMMAND,       /* news about the command */
	ELECTION_PEERS,         /* news from the failsafe members */
	ELECTION_CONTROLS,      /* the operator controls were read (DESIGN 11) */
	ELECTION_POLL,          /* the lock's state read through poll_dsn
				 * (DESIGN 15) */
};

/* What a session (the lock's or the fence's) reports. */
enum election_session_news {
	ELECTION_SESSION_CONNECTED, /* ready; lock_key */
	ELECTION_SESSION_FAILED,    /* connect failed or the session was lost;
				     * fault, reason; the connection is closed */
	ELECTION_SESSION_ACQUIRED,  /* lock_key, fencing_token (the lock's) */
	ELECTION_SESSION_BUSY,      /* held elsewhere, or the queued wait ended */
	ELECTION_SESSION_PING_OK,
	ELECTION_SESSION_RELEASED,  /* fault FAULT_NONE: unlocked; else closed */
	ELECTION_SESSION_GRANTED,   /* the lock's only: granted, its claim (the
				     * server-side lease, the token) under way:
				     * ACQUIRED or FAILED follows */
};

enum election_command_news {
	ELECTION_COMMAND_STARTED,      /* pid */
	ELECTION_COMMAND_START_FAILED, /* fork failed; reason */
	ELECTION_COMMAND_KILLED,       /* SIGKILL sent after the grace period */
	ELECTION_COMMAND_GONE,         /* the process group is empty; status */
	ELECTION_COMMAND_REFUSED,      /* the runner cannot run anything: fault
					* FAULT_LEDGER (its ledger), or
					* FAULT_ALREADY_RUN (its work was done
					* already: the conflict code); reason;
					* nothing was started */
};

enum election_peer_news {
	ELECTION_PEERS_CLAIMED,    /* a member leads in failsafe: node,
				    * same_members; the step answers it
				    * (election_output.answer) */
	ELECTION_PEERS_ROUND_DONE, /* our claim: agree of asked; reason = the
				    * refusals */
	ELECTION_PEERS_CHECK_DONE, /* check */
	ELECTION_PEERS_STRANGER,   /* node: one with a session for this lock
				    * that is not a member, or NULL */
	ELECTION_PEERS_REGAINED,   /* a member that led in failsafe holds the
				    * lock again: node, same_members; answered
				    * as CLAIMED */
};

enum election_controls_news {
	ELECTION_CONTROLS_READ,     /* in_force = what is in force */
	ELECTION_CONTROLS_FAILED,   /* the read got no answer (session_lost) or
				     * an error; reason */
	ELECTION_CONTROLS_ASKED,    /* a priority ask was answered: to_me,
				     * leader, leader_priority */
	ELECTION_CONTROLS_REFUSED,  /* the ledger is owned by a role this node
				     * does not trust (DESIGN 10): reason */
};

/* Why a priority ask got no answer (ELECTION_CONTROLS_ASKED). */
enum election_ask_trouble {
	ELECTION_ASK_ANSWERED,   /* none */
	ELECTION_ASK_MISSING,    /* no ledger, and this role may not make it */
	ELECTION_ASK_DENIED,     /* this role may not write its controls */
	ELECTION_ASK_FAILED,     /* an error; reason */
	ELECTION_ASK_LOST,       /* the session went */
};

/* The controls in force that concern the whole lock, as the last read found
 * them (strings valid during the step). */
struct election_controls {
	bool readable;           /* false: no controls (no ledger): none in force */
	bool paused;             /* the whole lock: all that the runner runs */
	bool parts_paused;       /* a part of it by name (a job): the runner
				  * acts on it */
	const char *paused_by, *paused_at;
	const char *resumed_by, *resumed_at; /* the last resume, or NULL */
	bool switchover;         /* one stands, not lapsed */
	const char *target;      /* "" for any standby */
	const char *leader;      /* the node asked to hand over */
	const char *asked_by, *asked_at;
	double left;             /* seconds until it lapses */
};

/* A new leader's question to the members: does one still run the command? */
enum election_check {
	ELECTION_CHECK_CLEAR,    /* none runs it (or refused the connection) */
	ELECTION_CHECK_RUNNING,  /* one still runs it */
	ELECTION_CHECK_SILENT,   /* one did not answer */
};

/* Each event's own payload (struct election_event's union, by type). */

/* ELECTION_LOCK and ELECTION_FENCE: a session's news. */
struct election_session_event {
	enum election_session_news news;
	enum fault fault;        /* FAILED, RELEASED: why it ended */
	int64_t lock_key;        /* CONNECTED, ACQUIRED */
	uint64_t fencing_token;  /* ACQUIRED, the lock's */
	int lock_pid;            /* ACQUIRED, the lock's: its session's backend
				  * pid, which the runner's claims name */
	int queue_ahead;         /* BUSY after a try (DESIGN 15): the standbys
				  * waiting in the lock's queue or ranked
				  * before this one (priority, then arrival);
				  * -1 after a queued wait ended or a try
				  * that did not count: not known */
	bool ranked;             /* BUSY: queue_ahead counts the standbys
				  * ranked before this one too (the queue had
				  * room), up to ELECTION_RANK_LIMIT */
	int lock_slots;          /* BUSY after a try that counted: the lock
				  * table's size the server said (what its
				  * pg_locks walks); 0: not said */
	uint64_t system_id;      /* CONNECTED: the database the session
				  * reached, its cluster's system identifier
				  * (0: the role may not read it) */
	uint32_t db_oid;         /* ... and its oid (0: not known) */
};

struct election_command_event {
	enum election_command_news news;
	int pid;                 /* STARTED (0: the runner has no one
				  * process, as the jobs) */
	int status;              /* GONE: exit code or 128+N */
	enum fault fault;        /* REFUSED */
};

struct election_peers_event {
	enum election_peer_news news;
	const char *node;        /* CLAIMED, REGAINED: the member that asks;
				  * STRANGER: a node that is no member, or
				  * NULL */
	uint64_t fencing_token;  /* CLAIMED: the claimant's term's */
	bool same_members;       /* CLAIMED, REGAINED: its member list is ours;
				  * CHECK_DONE: a member answered, and every
				  * answer named our list */
	int agree, asked;        /* ROUND_DONE: members that agreed, asked */
	enum election_check check; /* CHECK_DONE */
};

struct election_controls_event {
	enum election_controls_news news;
	const struct election_controls *in_force; /* READ */
	bool session_lost;       /* FAILED: the session went, not an error */
	bool to_me;              /* ASKED: a switchover to this node was asked */
	const char *leader;      /* ASKED: the leader ("" none) */
	int leader_priority;     /* ASKED */
	enum election_ask_trouble trouble; /* ASKED */
};

/* ELECTION_POLL: what a read of the lock's state through the pooler
 * (poll_dsn) found, or why it found nothing. */
struct election_poll_event {
	bool ok;                 /* answered; else fault, reason (the
				  * pooler's connection is closed) */
	enum fault fault;        /* !ok: FAULT_POOLER (not a transaction
				  * pooler), or what a session's is */
	bool recovery;           /* !ok: the server said it is in recovery
				  * (a hot standby) */
	bool held;               /* ok: a session holds the lock */
	int queued;              /* ok: the sessions waiting in its queue; -1
				  * unknown (the poll did not count) */
	uint64_t system_id;      /* ok: the database the pooler reached, as
				  * the session event's (0: not known) */
	uint32_t db_oid;
};

struct election_event {
	enum election_event_type type;
	union {                  /* START, TICK, SHUTDOWN: none */
		struct election_session_event session; /* LOCK, FENCE */
		struct election_command_event command;
		struct election_peers_event peers;
		struct election_controls_event controls;
		struct election_poll_event poll;
	};
	double wall;             /* wall-clock time of the event, for reports only */
	double jitter;           /* a random fraction in [0, 1) the supervisor
				  * draws for each event, which spreads the
				  * reconnects of a fleet; 0 (tests): the
				  * longest delay */
	const char *reason;      /* one line for the log, or NULL (SHUTDOWN:
				  * the signal's name) */
};

/* What the supervisor must do: a bit each, carried out in the order of
 * election_actions below, not of the bits. */
enum election_action {
	ELECTION_DO_DISCONNECT = 1 << 0,  /* close the lock connection, no unlock */
	ELECTION_DO_CONNECT = 1 << 1,
	ELECTION_DO_TRY_LOCK = 1 << 2,    /* pg_try_advisory_lock */
	ELECTION_DO_WAIT_LOCK = 1 << 3,   /* pg_advisory_lock under lock_timeout */
	ELECTION_DO_PING = 1 << 4,
	ELECTION_DO_STOP_CHILD = 1 << 5,  /* SIGTERM, SIGKILL after the grace period */
	ELECTION_DO_KILL_CHILD = 1 << 6,  /* SIGKILL now */
	ELECTION_DO_START_CHILD = 1 << 7,
	ELECTION_DO_RELEASE = 1 << 8,     /* unlock if held, close; then RELEASED */
	ELECTION_DO_EXIT = 1 << 9,
	ELECTION_DO_FENCE_CONNECT = 1 << 10,
	ELECTION_DO_FENCE_TAKE = 1 << 11,  /* wait for the fence under lock_timeout */
	ELECTION_DO_FENCE_DROP = 1 << 12,  /* unlock it, keep the connection */
	ELECTION_DO_FENCE_CLOSE = 1 << 13, /* close the fence connection */
	ELECTION_DO_FAILSAFE_CLAIM = 1 << 14, /* POST /failsafe to the members */
	ELECTION_DO_FAILSAFE_CHECK = 1 << 15, /* GET /failsafe from the members */
	ELECTION_DO_FENCE_TRY = 1 << 16,   /* pg_try_advisory_lock of the fence */
	ELECTION_DO_FAILSAFE_REGAINED = 1 << 17, /* tell the members: leading again */
	ELECTION_DO_CONTROLS_READ = 1 << 18,  /* read the controls (fence session) */
	ELECTION_DO_CONTROLS_DONE = 1 << 19,  /* the switchover answered: delete it */
	ELECTION_DO_PRIORITY_ASK = 1 << 20,   /* ask for a switchover to this node
					       * if the leader's priority is lower */
	ELECTION_DO_FENCE_PING = 1 << 21,     /* ping the held fence, or its own
					       * server-side lease ends it */
	/* a polling standby has no fence session (DESIGN 15): its controls
	 * read and priority ask go over the lock session, between tries */
	ELECTION_DO_LOCK_CONTROLS_READ = 1 << 22,
	ELECTION_DO_LOCK_PRIORITY_ASK = 1 << 23,
	/* the runner (runner.h): the term goes on over a new lock session
	 * (back from failsafe), election_output.term names it */
	ELECTION_DO_RUNNER_SESSION = 1 << 24,
	/* the runner acts on pauses itself (runner_pauses): hand it the
	 * controls just read, while this node leads or the command runs */
	ELECTION_DO_RUNNER_PAUSES = 1 << 25,
	/* with TRY_LOCK: a plain try; without it, a standby's try in wait
	 * mode also counts the lock's queue, and ranks this standby when it
	 * has room (DESIGN 15) */
	ELECTION_DO_PLAIN_TRY = 1 << 26,
	/* with TRY_LOCK: the count ranks this standby even when the queue is
	 * full, so that it learns whether it is next in line */
	ELECTION_DO_RANK_QUEUE = 1 << 27,
	/* DESIGN 13: as STOP_CHILD, of this node's own will: the runner lets
	 * its scheduled runs finish for up to drain_timeout first */
	ELECTION_DO_DRAIN_CHILD = 1 << 28,
	/* DESIGN 15, poll_dsn: a polling standby without a lock session reads
	 * the lock's state through the pooler (connecting to it first if need
	 * be): ELECTION_POLL follows */
	ELECTION_DO_POLL = 1 << 29,
	/* close the pooler's connection (a poll in flight is forgotten) */
	ELECTION_DO_POLL_CLOSE = 1 << 30,
};

/* Every action once, in the order the supervisor (and the simulator)
 * carries out one step's: sessions closed before others are opened, then
 * the requests, the pings, the command, what follows the command, the exit
 * last; with its name, for traces and tests. */
#define ELECTION_ACTION_COUNT 31
struct election_action_info {
	enum election_action action;
	const char *name;
};
extern const struct election_action_info election_actions[ELECTION_ACTION_COUNT];

/* The exit code (exit_codes.h) a permanent fault ends pgleader with; 0 for
 * a transient fault, which is retried. */
int election_exit_for(enum fault f);

enum election_restart { ELECTION_RESTART_NO, ELECTION_RESTART_ON_FAILURE,
			ELECTION_RESTART_ALWAYS };

/* All durations in seconds. */
struct election_params {
	bool wait_in_queue;       /* --acquire=wait */
	int queue_depth;          /* at most this many standbys wait in the
				   * lock's queue; the others poll (DESIGN 15) */
	bool poll_pooled;         /* poll_dsn: a polling standby of priority 1
				   * closes its lock session and polls the
				   * lock's state through the pooler */
	bool nonblock;
	double retry_interval;
	double ping_interval;
	double ping_timeout;
	int ping_failures;
	double takeover_delay;
	int priority;             /* DESIGN 11: above 1, asks a leader of lower
				   * priority for a switchover; 0 never asks
				   * for the lock */
	double priority_delay;    /* healthy standby time before asking */
	double wait_timeout;      /* < 0: wait for ever */
	double connect_timeout;
	enum election_restart restart;
	int restart_limit;        /* quick failures in a row; 0: no limit */
	int conflict_exit_code;
	bool failsafe;            /* DESIGN 9 */
	double failsafe_ttl;
	double server_lease;      /* the server ends a silent leader's session
				   * after it (0: no server lease); failsafe
				   * is entered only inside it */
	const char *schema;       /* the ledger's, for its lines only */
	double grace_period;      /* the command's, and so the old leader's, stop
				   * bound: caps the settle wait (0: no wait) */
	double drain;             /* drain_timeout (DESIGN 13); 0: none */
	bool runner_pauses;       /* the runner acts on pauses itself (the
				   * jobs), not the election */
	/* for the snapshot only */
	const char *node_id;
	const char *lock_name;    /* NULL: lock_key as configured */
	int64_t lock_key;
};

/* A queued standby whose wait ran out waits again at once, without a try
 * (while it is out, the polling standbys see room and rank themselves, a
 * cost to the server); every ELECTION_QUEUE_RECHECK-th time it tries
 * instead, to learn whether it still belongs in the queue (DESIGN 15). */
#define ELECTION_QUEUE_RECHECK 6

/* A polling standby's try counts the lock's queue (pg_locks, which walks
 * the whole lock table: its cost grows with max_connections) only every
 * count_every-th time: one per ELECTION_COUNT_SLOTS slots of the lock
 * table the last count said (max_locks_per_transaction times
 * max_connections plus max_prepared_transactions), at least 1 and at most
 * ELECTION_COUNT_EVERY_MAX. PostgreSQL's defaults up to 128 connections:
 * every try, as before; a fleet of 1,000 on max_connections 2,050: every
 * 16th. A count costs the server in proportion to that size (pg_locks
 * walks the predicate lock table too, as large), so that the counts cost
 * the same per standby at any size: at 1,000 nodes one in 8 was still
 * half of the server's time. Every try still asks for the lock: a leader
 * killed with every queued standby is followed within retry_interval;
 * what waits longer is only the queue's refill, by the standby ranked
 * first among the polling ones (DESIGN 15). */
#define ELECTION_COUNT_SLOTS 8192
#define ELECTION_COUNT_EVERY_MAX 16
/* ... but a polling standby that its last ranking found next in line
 * (fewer than ELECTION_RANK_LIMIT standbys queued or ranked before it)
 * counts with every try: the queue's refill after a failover waits for
 * the first of them, as before. The ranking counts up to that many. Where
 * the count is rarer than every try, a polling standby's first count on a
 * session ranks it even with the queue full (ELECTION_DO_RANK_QUEUE):
 * once per session, so that the standbys next in line know it. */
#define ELECTION_RANK_LIMIT(queue_depth) (4 * (queue_depth))

/* poll_dsn: a standby whose poll found room in the queue (the lock held)
 * connects to join it within this long (or retry_interval if shorter),
 * by the event's jitter: the standbys that saw the room at once, as a
 * fleet that starts together, do not all try at once (their rankings,
 * each on a session just opened, may not see one another). A free lock
 * is tried at once. */
#define ELECTION_JOIN_SPREAD 1.0
/* poll_dsn: a polling standby's poll counts the lock's queue
 * (pg_lock_status(), 0.15 ms of the server's CPU or more) only every
 * ELECTION_POLL_COUNT_EVERY-th time; the others ask whether the lock is
 * held (pg_try_advisory_xact_lock, a quarter of that), so that a leader
 * killed with every queued standby is still followed within
 * retry_interval. What waits longer is the queue's refill by a fleet too
 * small to have a poll counting every moment: within this many
 * retry_intervals. A thousand polling standbys took an eighth of a core
 * counting at every poll (DESIGN 15). */
#define ELECTION_POLL_COUNT_EVERY 4

/* Reconnect backoff and command restart backoff (seconds). */
#define ELECTION_RECONNECT_MIN 0.5
/* A database restart: once a working session was lost, a refused or
 * starting, stopping or read-only server is retried every FAST seconds
 * (jittered by half either way) for up to RESTART_WINDOW, then with the
 * backoff. */
#define ELECTION_RECONNECT_FAST 0.1
#define ELECTION_RESTART_WINDOW 15.0
#define ELECTION_RESTART_MIN 1.0
#define ELECTION_RESTART_MAX 30.0
/* A command that ran this long restarts after the minimum delay again. */
#define ELECTION_RESTART_RESET_AFTER 30.0

/* A standby that saw the database go away and gets the lock waits this long
 * after its own connection came back before it takes the fence, so that an
 * old leader whose command is still stopping can take its fence again first
 * (never past the outage's start + grace_period + ELECTION_KILL_GONE, when
 * that command is dead anyway). The old leader retries its fence session every
 * ELECTION_FENCE_RETRY_STOPPING while its command stops, and both sessions
 * lost within ELECTION_SESSIONS_TOGETHER of each other mean the database
 * went away, not that someone ended one of them. */
#define ELECTION_SETTLE 1.0
/* The longest a process group may take to be gone after SIGKILL (a process
 * in uninterruptible sleep, a core dump being written): the settle wait's
 * cap counts it beside grace_period before the old command is taken as
 * gone. */
#define ELECTION_KILL_GONE 1.0
#define ELECTION_FENCE_RETRY_STOPPING 0.25
#define ELECTION_SESSIONS_TOGETHER 0.25

#define ELECTION_MAX_LOGS 4

struct election_log {
	enum log_level level;
	enum fault fault;         /* what the line is about, or FAULT_NONE */
	char text[LOG_MSG_MAX];
};

/* The step's answer to a member's claim (DESIGN 9), which goes back to it
 * over HTTP. */
struct election_answer {
	bool given;               /* the event was a claim, and answered */
	bool agreed;              /* 200; false: 409, with reason */
	char reason[128];
};

/* The term the command runs for: with START_CHILD, and with
 * RUNNER_SESSION (its new lock session). */
struct election_term {
	int64_t lock_key;
	uint64_t fencing_token;   /* the term's, kept back from failsafe */
	int lock_pid;             /* the lock session's backend pid */
};

struct election_output {
	unsigned actions;         /* enum election_action bits */
	struct election_term term; /* START_CHILD, RUNNER_SESSION */
	int exit_code;            /* with ELECTION_DO_EXIT */
	bool state_changed;       /* the snapshot says something new to a person */
	bool poll_counts;         /* with ELECTION_DO_POLL: the poll counts the
				   * lock's queue too (pg_locks); else it only
				   * asks whether the lock is held */
	bool stopping;            /* shutdown began: tell the service manager */
	struct election_answer answer; /* PEERS_CLAIMED, PEERS_REGAINED */
	int n_logs;
	struct election_log logs[ELECTION_MAX_LOGS];
};

/* How a command ended, for the exit counters. */
enum election_outcome {
	ELECTION_OUTCOME_SUCCESS,   /* status 0 */
	ELECTION_OUTCOME_FAILURE,   /* 1..128 */
	ELECTION_OUTCOME_SIGNAL,    /* 129..192: killed by a signal, as a shell counts */
	ELECTION_OUTCOME_COUNT
};
const char *election_outcome_label(enum election_outcome o);

/* Histogram upper bounds in seconds; counts[ELECTION_BUCKETS] is +Inf. */
#define ELECTION_BUCKETS 16
extern const double election_bucket_bounds[ELECTION_BUCKETS];

struct election_histogram {
	uint64_t counts[ELECTION_BUCKETS + 1]; /* per bucket, not cumulative */
	uint64_t count;
	double sum;
};

struct election_counters {
	uint64_t acquisitions;
	uint64_t losses[FAULT_COUNT];           /* leadership lost, by fault */
	uint64_t connect_failures;
	uint64_t command_starts;
	uint64_t command_exits[ELECTION_OUTCOME_COUNT];
	uint64_t command_kills;                 /* SIGKILL after the grace period */
	struct election_histogram ping_duration;
	struct election_histogram lock_wait;    /* standby until the lock came */
};

/* Published after every step; observers (sd_notify, metrics, peers) read it
 * and nobody else writes it. Times are monotonic seconds unless _wall;
 * 0 means never. */
struct election_snapshot {
	enum election_state state;
	double since, since_wall;       /* when the state was entered */
	double now, now_wall;           /* when this snapshot was published */
	const char *node_id;
	const char *lock_name;          /* NULL when a key was configured */
	int64_t lock_key;               /* the name's key once connected */
	uint64_t term;                  /* this process's terms as leader, 1-based */
	uint64_t fencing_token;         /* of the current or last term */
	double leader_since_wall;       /* 0 unless leader */
	int command_pid;                /* 0 when none */
	bool command_active;            /* the runner (command or jobs) started
					 * and not yet gone */
	double command_due;             /* when a due command starts; INFINITY */
	double last_ping_reply, last_ping_reply_wall;
	bool db_connected;
	bool fence_held;
	int failsafe_agree, failsafe_asked; /* the last claim round's answers */
	double failsafe_record_until;   /* a member leads in failsafe; 0: none */
	uint64_t failsafe_record_token; /* the fencing token of the last claim
					 * agreed to; 0: none */
	int exit_code;                  /* valid in ELECTION_DONE */
	struct election_counters counters;
	/* the operator controls (DESIGN 11), as last read */
	int priority;
	bool paused;                    /* the whole lock */
	char paused_by[192], paused_at[40];
	bool switchover;                /* one stands */
	char switchover_target[64];     /* "" any standby */
	char switchover_leader[64];
	char switchover_by[192], switchover_at[40];
	double hold_until;              /* holding off after a switchover; 0 */
};

/* The machine: its state is private to the election's files
 * (election_impl.h). */
struct election;

/* A new machine in ELECTION_INIT; NULL when out of memory. */
struct election *election_new(const struct election_params *p);
void election_free(struct election *e);

/* Feeds one event at time now (monotonic seconds) and fills out with the
 * actions to carry out. Deadlines are checked on every event. */
void election_step(struct election *e, const struct election_event *ev,
		   double now, struct election_output *out);

/* The event loop stopped before the election ended: a bug. Ends the
 * election with EXIT_INTERNAL and one log line. */
void election_abandon(struct election *e, struct election_output *out);

/* When the machine next needs an ELECTION_TICK; INFINITY if never (and
 * once ELECTION_DONE). */
double election_next_wakeup(const struct election *e, double now);

/* The exit code once ELECTION_DONE. */
int election_exit_code(const struct election *e);

const struct election_snapshot *election_snapshot(const struct election *e);

const char *election_state_name(enum election_state s);

/* Whether the command may be running on the node that published s: what
 * it answers a new leader's GET /failsafe. */
bool election_runs_command(const struct election_snapshot *s);

#endif
