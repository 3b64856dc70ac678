/* election_impl.h: what the parts of the election share. Each state's
 * handling lives in one file, which exports only the state's row:
 * election.c (the core: saying, requests, the shared transitions, the
 * table; INIT and DONE), election_standby.c (CONNECTING, BACKOFF, STANDBY,
 * RELEASING), election_command.c (LEADER, DEMOTING, SHUTTING_DOWN, the
 * command's news), election_failsafe.c (FAILSAFE, and the failsafe
 * machine), election_fence.c (the fence machine), election_controls.c
 * (the operator controls). Private to them, their unit tests and the
 * simulator's invariants: no other module includes it. */
#ifndef PGLEADER_ELECTION_IMPL_H
#define PGLEADER_ELECTION_IMPL_H

#include "election.h"

/* ---- the machine's state: struct election and its sub-machines' ---- */
/* The fence session, beside the lock session. */
enum election_fence {
	ELECTION_FENCE_CLOSED,
	ELECTION_FENCE_OPENING,
	ELECTION_FENCE_READY,    /* connected, not held */
	ELECTION_FENCE_TAKING,   /* waiting for it */
	ELECTION_FENCE_HELD,
	ELECTION_FENCE_DROPPING, /* unlocking */
};

/* The fence's own machine (election_fence.c): only that file reads or
 * writes these; the rest of the election goes through its functions. */
struct election_fence_machine {
	enum election_fence state;
	double retry_at;         /* reopen a closed session; INFINITY */
	double backoff;
	double backoff_cap;
	bool wait_logged;
	bool outage_logged;      /* its loss was warned about, not its return */
	double not_before;       /* a new leader's settle wait (ELECTION_SETTLE) */
	double lost_at;          /* held (or taking) and lost; -INFINITY: never */
	double lock_lost_at;     /* the lock went while the command stopped */
};

/* What the election's state means for the fence, told with each of its
 * events: the same for every state (command, killing, lock_down), then
 * filled in by the state's row (struct state_ops' fence). */
struct election_fence_inputs {
	bool command;   /* the command lives (started, not yet gone) */
	bool killing;   /* SIGKILL sent: the fence no longer matters */
	bool leader;    /* LEADER (or its lock granted, the claim under way):
			 * the command is due once the fence is held */
	bool leading;   /* the same, or FAILSAFE: a busy fence is waited for */
	bool unlocked;  /* the command is being stopped without the lock */
	bool lock_down; /* no lock session is up */
	bool reopens;   /* a closed fence session is reopened in this state */
};

/* The fence machine's events: its session's news, then what the election
 * tells it. */
enum election_fence_event_type {
	ELECTION_FENCE_EV_READY,    /* connected, or unlocked (RELEASED) */
	ELECTION_FENCE_EV_FAILED,   /* the session ended: fault, reason */
	ELECTION_FENCE_EV_ACQUIRED,
	ELECTION_FENCE_EV_BUSY,     /* held elsewhere, or the queued wait ended */
	ELECTION_FENCE_EV_LEAD,     /* a new term: take it from not_before on */
	ELECTION_FENCE_EV_SETTLED,  /* the members run nothing: no settle wait */
	ELECTION_FENCE_EV_STOPPING, /* the lock went while the command stops;
				     * outage: the database went away */
	ELECTION_FENCE_EV_TAKE,     /* the lock is back after failsafe */
	ELECTION_FENCE_EV_TICK,     /* after the state's deadlines */
	ELECTION_FENCE_EV_COUNT
};

struct election_fence_event {
	enum election_fence_event_type type;
	struct election_fence_inputs in; /* filled in by election_tell_fence */
	double not_before;       /* LEAD */
	bool outage;             /* STOPPING */
	enum fault fault;        /* FAILED */
	const char *reason;      /* FAILED, or NULL */
};

/* What the fence tells the election back, beside actions and lines. */
struct election_fence_verdict {
	const char *kill; /* kill the command now, and why; NULL: no */
	bool outage;      /* the database seems to have gone away */
	bool permanent;   /* its session ended with a permanent fault */
};

/* What a state means for failsafe's peers (DESIGN 9): its row's cell,
 * which the peers' news reads (election_failsafe.c). */
struct election_failsafe_role {
	const char *refuses; /* a member's claim is refused, and why; NULL:
			      * agreed (same member list) */
	bool stays_out;      /* an agreed claim closes the lock session: a
			      * queued wait or a grant is given back */
	bool backs_off;      /* reconnecting: not before the record ends, and
			      * at once when it ends early (REGAINED) */
	bool claims;         /* this node's claim rounds run (FAILSAFE) */
	bool checks;         /* a new leader's question to the members runs */
};

/* What a state means for the operator controls (DESIGN 11): its row's
 * cell, which election_controls.c reads. */
enum election_controls_role {
	ELECTION_CONTROLS_AS_NONE,    /* not read; nothing acts on them */
	ELECTION_CONTROLS_AS_STANDBY, /* read every retry_interval (ping_interval
				       * while holding off); a priority ask; a
				       * switchover holds it off; its grant's
				       * read */
	ELECTION_CONTROLS_AS_LEADER,  /* read every ping_interval, at once in a
				       * new term; a pause and a switchover act */
};

/* Failsafe's own state (DESIGN 9; election_failsafe.c): only that file
 * reads or writes these. */
struct election_failsafe_machine {
	bool enabled;                /* election_params.failsafe, and its */
	double ttl, ping_interval, ping_timeout; /* durations */
	/* as the leader */
	enum fault fault;            /* why the lock was lost */
	double next_claim_at;        /* next round; INFINITY while one runs */
	double claim_deadline;       /* the round in flight must end by then */
	enum { CHECK_NONE, CHECK_ASKING, CHECK_CLEAR } check;
	double check_again_at;       /* a new leader's question to the members */
	double silent_since;         /* a member first did not answer it then;
				      * INFINITY: none has */
	char stranger[64];           /* failsafe is off while one is seen */
	int agree, asked;            /* the last round's answers */
	double round_sent_at;        /* the round in flight was sent then */
	double agreed_at;            /* the last agreed round was sent then
				      * (at first: failsafe was entered):
				      * past it + ttl the members' records
				      * may have run out */
	/* as a member */
	double record_until;         /* another node leads in failsafe */
	char record_node[64];        /* which */
	uint64_t record_token;       /* its term's fencing token, as it claimed */
};

/* Which database a session reached (poll_dsn must reach the lock's,
 * DESIGN 15): its cluster's system identifier, which a physical replica
 * shares, and its oid; 0 where not known. */
struct election_db {
	uint64_t system_id;
	uint32_t oid;
};

enum election_db_check { ELECTION_DB_SAME, ELECTION_DB_ELSEWHERE, ELECTION_DB_REFUSED };

struct election {
	struct election_params p;
	enum election_state state;
	bool connected;          /* a lock connection is open (or opening) */
	double request_deadline; /* connect, lock or unlock in flight; INFINITY */
	double next_attempt_at;  /* next connect or poll-mode try */
	double reconnect_backoff;
	double restart_until;    /* a working session was lost: fast retries */
	bool restart_said;       /* the fast retries were announced */
	double jitter;           /* of the event being handled */
	bool queue_next;         /* the next lock request waits in the queue
				  * (the last try found room); else a try */
	int waits_unchecked;     /* queued waits that ran out since the last
				  * try said this standby belongs there */
	int count_every;         /* a polling standby's tries count the queue
				  * every this many (ELECTION_COUNT_SLOTS) */
	int tries_uncounted;     /* its tries since the last that counted */
	bool next_in_line;       /* its last ranking found it within
				  * ELECTION_RANK_LIMIT: every try counts */
	bool ranked_once;        /* a count ranked it on this session */
	bool counting;           /* the try in flight counts the queue */
	bool polling;            /* a standby that polls (DESIGN 15): its fence
				  * session closed, the controls read over
				  * the lock session */
	/* poll_dsn (DESIGN 15): a polling standby without a lock session */
	bool pooled;             /* in STANDBY, its lock session closed: it
				  * reads the lock's state through the pooler */
	bool poll_pending;       /* a poll is in flight */
	double poll_deadline;    /* it must be answered by then; INFINITY */
	bool poll_open;          /* the pooler's connection may be open */
	bool poll_ok;            /* the last poll was answered */
	bool poll_ok_once;       /* a poll was answered, ever */
	bool poll_failed_said;   /* polls fail: warned once, until one works */
	struct election_db lock_db; /* the database the lock session reached */
	struct election_db poll_db; /* ... and the pooler's, since it opened */
	bool poll_db_matched;    /* the two were once compared alike */
	bool poll_db_said;       /* ... then told apart: warned once */
	int polls_uncounted;     /* polls since the last that counted the queue */
	bool join_due;           /* a poll found room in the queue: connect
				  * at next_attempt_at (spread) */
	bool joining;            /* connecting because a poll said so: its
				  * "waiting for leader lease" was said */
	bool waiting_logged;
	bool busy_seen;          /* the database said another session has it */
	double wait_deadline;    /* --wait-timeout, absolute */
	double standby_since;
	bool ping_pending;
	double ping_sent_at;
	double next_ping_at;
	double last_reply_at;
	bool child_running;      /* started (or starting) and not yet gone */
	double child_started_at;
	double child_start_at;   /* when the command is due; INFINITY: not due */
	double restart_backoff;
	int quick_failures;      /* in a row, each within RESTART_RESET_AFTER */
	double wall_offset;      /* wall minus monotonic, from the last event */
	int exit_code;
	struct election_fence_machine fence;
	double lost_since;       /* the lock session was lost; INFINITY: it is up */
	double outage_began;     /* of the outage before this connection, or INF */
	double back_at;          /* the lock session came back */
	bool killing;            /* SIGKILL sent: the fence no longer matters */
	int lock_pid;            /* the lock session's, from its last ACQUIRED */
	struct election_failsafe_machine failsafe;
	/* the operator controls (DESIGN 11) */
	bool ctl_pending;            /* a read or an ask is in flight */
	bool ctl_fresh;              /* a read answered since the lock came */
	bool ctl_stale;              /* the read in flight was sent before */
	double next_ctl_at;          /* the next read; INFINITY: none due */
	bool ctl_failed_said;        /* reads fail: warned once, until one is
				      * answered again */
	bool ask_trouble_said;       /* a priority ask failed: said once */
	bool ctl_read_once;          /* a read was answered, ever */
	bool ctl_last_clear;         /* the last read answered found nothing
				      * in force (no pause, no switchover) */
	bool paused;                 /* the command may not run (a runner
				      * that does not act on pauses) */
	bool pause_stopped;          /* the command is stopping for a pause */
	bool handing_over;           /* a switchover: the command stops, then
				      * the lock goes; the lock is still held */
	bool handed_said;            /* this term answered a switchover */
	bool draining;               /* DESIGN 13: a stop of this node's own
				      * will lets scheduled runs finish (the
				      * runner's drain_timeout); the lock is
				      * kept and pinged until the command is
				      * gone */
	double hold_until;           /* no lock asked for before; -INFINITY */
	double granted_at;           /* a standby's lock granted, its claim under
				      * way (the fence and the controls are
				      * asked for meanwhile); INFINITY: none */
	bool ctl_clear;              /* a read since granted_at found nothing in
				      * force: the term needs no other */
	struct election_snapshot snap;
};

/* Sets a machine up in ELECTION_INIT (election_new allocates one). */
void election_init(struct election *e, const struct election_params *p);

/* ---- the states' table (election.c): one row per state ---- */
typedef void election_handler(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev);

/* What each piece of the lock session's news does in one state. */
struct lock_ops {
	election_handler *connected, *failed, *acquired, *busy, *ping_ok,
		*released, *granted;
};

struct state_ops {
	election_handler *start;
	election_handler *shutdown;
	struct lock_ops lock;
	election_handler *command_gone;
	void (*deadlines)(struct election *e, struct election_output *out,
			  double now);
	double (*wakeup)(const struct election *e, double now);
	/* what the state means for the fence (NULL: nothing of its own) */
	void (*fence)(const struct election *e, struct election_fence_inputs *in);
	struct election_failsafe_role failsafe;
	enum election_controls_role controls;
};

extern const struct state_ops connecting_state, backoff_state, standby_state,
	releasing_state;                       /* election_standby.c */
extern const struct state_ops leader_state, demoting_state,
	shutting_down_state;                   /* election_command.c */
extern const struct state_ops failsafe_state; /* election_failsafe.c */

/* ---- election.c: saying, requests, the shared transitions ---- */
void election_say(struct election_output *out, enum log_level level,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void election_about(struct election_output *out, enum fault fault);
void election_set_state(struct election *e, struct election_output *out,
		      double now, enum election_state s);
void election_request(struct election *e, double now, double timeout);
void election_request_done(struct election *e);
void election_disconnect(struct election *e, struct election_output *out);
void election_connect_now(struct election *e, struct election_output *out,
			double now);
void election_finish(struct election *e, struct election_output *out, double now);
/* The leader's pings as they stood before a stop cleared them: a drain
 * goes on with them (a ping in flight is waited for, never sent twice). */
struct election_pings {
	bool pending;
	double sent_at, next_at;
};
struct election_pings election_pings_of(const struct election *e);
/* A STOP_CHILD this step asked for, of this node's own will (a shutdown
 * of a leader, a handover): with a drain_timeout it drains instead, the
 * lock kept alive by pings meanwhile (DESIGN 13), from where they stood. */
void election_drain(struct election *e, struct election_output *out, double now,
		    const struct election_pings *before);
void election_exit_now(struct election *e, struct election_output *out,
		       double now, int code);
void election_saw_outage(struct election *e, double now);
bool election_end_on_permanent(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev);
const char *election_reason_of(const struct election_event *ev, const char *dflt);
election_handler election_shutdown;

/* ---- election_standby.c ---- */
void election_session_lost(struct election *e, double now, enum fault f);
bool election_polls_pooled(const struct election *e);
void election_go_pooled(struct election *e, struct election_output *out,
			double now, double poll_at);
void election_leave_pooled(struct election *e, struct election_output *out);
election_handler election_on_poll;

/* ---- election_command.c ---- */
double election_settle_until(const struct election *e);
void election_tell_term(const struct election *e, struct election_output *out);
void election_become_leader(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev);
bool election_reap(struct election *e, struct election_output *out, double now,
		 const struct election_event *ev);
bool election_restarts(const struct election *e, int status);
election_handler election_on_command;

/* ---- election_fence.c: the fence's machine (DESIGN 3); it owns e->fence ---- */
void election_fence_init(struct election_fence_machine *f, double retry_interval);
void election_fence_open(struct election_fence_machine *f, struct election_output *out);
void election_fence_close(struct election_fence_machine *f, struct election_output *out);
bool election_fence_ok(const struct election_fence_machine *f);
bool election_fence_held(const struct election_fence_machine *f);
void election_fence_drop(struct election_fence_machine *f, struct election_output *out, double now);
void election_fence_step(struct election_fence_machine *f,
			 const struct election_fence_event *ev, double now,
			 struct election_output *out,
			 struct election_fence_verdict *v);
double election_fence_wakeup(const struct election_fence_machine *f,
			     const struct election_fence_inputs *in, double now);
/* election.c: tells the fence an event, with what the state means for it
 * (its row's fence cell), and acts on the verdict (a kill, an outage) */
/* election.c: what the state means for failsafe's peers (its row's) */
const struct election_failsafe_role *election_state_failsafe(const struct election *e);
/* election.c: what the state means for the operator controls (its row's) */
enum election_controls_role election_state_controls(const struct election *e);
struct election_fence_verdict election_tell_fence(struct election *e,
		struct election_output *out, double now,
		struct election_fence_event *ev);

/* ---- election_controls.c: the operator controls (DESIGN 11) ---- */
void election_controls_tick(struct election *e, struct election_output *out,
			    double now);
double election_controls_wakeup(const struct election *e);
bool election_controls_allow_start(const struct election *e);
bool election_controls_defer_lock(struct election *e, double now);
void election_controls_granted(struct election *e, struct election_output *out);
void election_controls_new_term(struct election *e, struct election_output *out);
election_handler election_on_controls;

/* ---- election_failsafe.c: failsafe (DESIGN 9); it owns e->failsafe ---- */
void election_failsafe_init(struct election *e);
bool election_failsafe_keeps(const struct election *e);
void election_failsafe_enter(struct election *e, struct election_output *out,
		    double now, enum fault fault, const char *why);
void election_failsafe_no_check(struct election *e);
void election_failsafe_ask(struct election *e, struct election_output *out, double now);
bool election_failsafe_members_ok(const struct election *e);
void election_failsafe_check_tick(struct election *e, struct election_output *out,
			 double now);
double election_failsafe_check_wakeup(const struct election *e);
bool election_failsafe_stays_out(struct election *e, struct election_output *out,
			double now);
double election_failsafe_record(const struct election *e, double now);
election_handler election_failsafe_news;

#endif
