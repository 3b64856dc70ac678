/* election.h: the leadership state machine, free of I/O and clocks. */
#ifndef PGLEADER_ELECTION_H
#define PGLEADER_ELECTION_H

#include <stdbool.h>
#include <stddef.h>

enum election_state {
	ELECTION_INIT,
	ELECTION_CONNECTING,    /* opening the lock connection, or backing off */
	ELECTION_STANDBY,       /* connected, asking for the lock */
	ELECTION_LEADER,        /* holding the lock; the command runs or is due */
	ELECTION_DEMOTING,      /* lease lost; stopping the command */
	ELECTION_SHUTTING_DOWN, /* stopping the command, then releasing */
	ELECTION_DONE,          /* exit with election_output.exit_code */
};

enum election_event_type {
	ELECTION_START,
	ELECTION_TICK,           /* time passed: check deadlines */
	ELECTION_CONNECTED,      /* the lock connection is ready */
	ELECTION_CONNECT_FAILED, /* transient; reason */
	ELECTION_LOCK_ACQUIRED,  /* reason: "key K, fencing token T" */
	ELECTION_LOCK_BUSY,      /* another session holds the lock */
	ELECTION_PING_OK,
	ELECTION_CONN_LOST,      /* the lock session is gone; reason */
	ELECTION_FATAL,          /* cannot go on; code = exit code, reason */
	ELECTION_CHILD_GONE,     /* the command's process group is empty; code */
	ELECTION_RELEASED,       /* unlock answered or failed; connection closed */
	ELECTION_SHUTDOWN,       /* SIGTERM or SIGINT; reason = signal name */
};

struct election_event {
	enum election_event_type type;
	int code;
	const char *reason;
};

/* What the supervisor must do, in this order of bits. */
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
};

enum election_restart { ELECTION_RESTART_NO, ELECTION_RESTART_ON_FAILURE,
			ELECTION_RESTART_ALWAYS };

/* All durations in seconds. */
struct election_params {
	bool wait_in_queue;       /* --acquire=wait */
	bool nonblock;
	double retry_interval;
	double ping_interval;
	double ping_timeout;
	int ping_failures;
	double takeover_delay;
	double wait_timeout;      /* < 0: wait for ever */
	double connect_timeout;
	enum election_restart restart;
	int conflict_exit_code;
};

/* Reconnect backoff and command restart backoff (seconds). */
#define ELECTION_RECONNECT_MIN 0.5
#define ELECTION_RESTART_MIN 1.0
#define ELECTION_RESTART_MAX 30.0
/* A command that ran this long restarts after the minimum delay again. */
#define ELECTION_RESTART_RESET_AFTER 30.0

struct election_output {
	unsigned actions;         /* enum election_action bits */
	int exit_code;            /* with ELECTION_DO_EXIT */
	bool state_changed;
	int log_level;            /* enum log_level of log, 0 = nothing to log */
	char log[320];
};

struct election {
	struct election_params p;
	enum election_state state;
	bool connected;          /* a lock connection is open (or opening) */
	bool request_pending;    /* connect, lock, ping-free request in flight */
	double request_deadline;
	double next_attempt_at;  /* next connect or poll-mode try */
	double reconnect_backoff;
	bool lock_tried;         /* this standby period made its first try */
	bool waiting_logged;
	double wait_deadline;    /* --wait-timeout, absolute */
	bool ping_pending;
	double ping_sent_at;
	double next_ping_at;
	double last_reply_at;
	bool child_running;
	double child_started_at;
	double child_start_at;   /* when the command is due; INFINITY: not due */
	double restart_backoff;
	int exit_code;
};

void election_init(struct election *e, const struct election_params *p);

/* Feeds one event at time now (monotonic seconds) and fills out with the
 * actions to carry out. Deadlines are checked on every event. */
void election_step(struct election *e, const struct election_event *ev,
		   double now, struct election_output *out);

/* When the machine next needs an ELECTION_TICK; INFINITY if never. */
double election_next_wakeup(const struct election *e, double now);

const char *election_state_name(enum election_state s);

#endif
