/* jobs_step.h: the job layer's decider (DESIGN 10 and 14): what runs when.
 * A pure step, like the election's: jobs_step(state, event, now) ->
 * actions. It reads no clock (now is the caller's monotonic seconds), does
 * no I/O and logs nothing: the ledger's statements, the children, the
 * timers and the lines to log are actions that jobs.c, the effector,
 * carries out in order. Over tickplan.c and schedule.c. */
#ifndef PGLEADER_JOBS_STEP_H
#define PGLEADER_JOBS_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "fault.h"
#include "log.h"

/* What a person and the metrics see of one job. Times are Unix seconds of
 * the database's clock, 0 when never. */
enum jobs_outcome {
	JOBS_RUNNING, JOBS_SUCCEEDED, JOBS_FAILED, JOBS_TIMED_OUT,
	JOBS_INTERRUPTED, JOBS_SKIPPED, JOBS_MISSED, JOBS_PAUSED,
	JOBS_OUTCOME_COUNT
};
/* The ledger's and the metrics' name of an outcome. */
static inline const char *jobs_outcome_name(enum jobs_outcome o)
{
	static const char *const names[JOBS_OUTCOME_COUNT] = {
		"running", "succeeded", "failed", "timed_out", "interrupted",
		"skipped", "missed", "paused",
	};

	return o < JOBS_OUTCOME_COUNT ? names[o] : "unknown";
}

/* The run duration histogram's upper bounds, in seconds. */
#define JOBS_BUCKETS 12
static inline double jobs_duration_bound(int i)
{
	static const double bounds[JOBS_BUCKETS] = {
		0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 14400,
	};

	return bounds[i];
}

struct jobs_view {
	const char *name;
	const char *schedule;       /* NULL: runs all the time */
	const char *timezone;       /* its schedule's zone */
	int pid;                    /* of the run going on, 0 when none */
	double next_tick;           /* 0 when none is due (not leading) */
	double announced_next;      /* the next tick the last announcement
				     * named (DESIGN 13); 0: none */
	double last_tick;           /* of the last run started here */
	double last_success;        /* end of the job's last run that exited 0,
				     * on any node: read from the ledger when
				     * this node begins to lead */
	uint64_t runs[JOBS_OUTCOME_COUNT];
	uint64_t duration_counts[JOBS_BUCKETS + 1]; /* per bucket, +Inf last */
	uint64_t duration_count;
	double duration_sum;
	uint64_t retries;           /* DESIGN 13: retry attempts started here */
	uint64_t triggers;          /* DESIGN 13: runs asked for now started here */
	int waiting;                /* requests to run now waiting for its run */
	uint64_t on_failure[3];     /* on_failure commands run here, by enum
				     * jobs_hook_result (jobs_retry.h) */
	bool removed;               /* a reload removed it: no announcement
				     * names it; shown while its run drains */
	bool paused;                /* DESIGN 11: as part of the lock, or by name */
	const char *paused_by;      /* who asked and when (RFC 3339); NULL when */
	const char *paused_at;      /* not paused or not told */
};

/* The term the election gave this node: who claims. */
struct jobs_term {
	int64_t lock_key;
	uint64_t fencing_token;
	int lock_pid;               /* the lock session's backend pid */
};

/* A ledger statement's answer, as ledger.h's struct ledger_answer says
 * it (the fields the jobs read). Times are the server's Unix ms. */
struct jobs_answer {
	bool ok, lost, missing, denied, untrusted;
	char error[256];
	int64_t db_now;
	double rtt;
	int64_t tick, run_id;       /* a claim's */
	bool holder, newest, early;
	int64_t last_tick, interrupted, last_success, older_running; /* LAST's */
	/* LAST's, for retries and on_failure (DESIGN 13): the attempt of the
	 * newest cut; the newest tick's last attempt (run_id 0: none), its
	 * outcome's name, exit status (-1: none) and end (INT64_MIN: none);
	 * the newest run whose on_failure is owed (run_id 0: none) */
	int interrupted_attempt;
	int64_t last_run_id, last_ended;
	int last_attempt, last_exit;
	char last_outcome[16];
	int64_t owed_run_id, owed_tick;
	int owed_attempt, owed_exit;
	char owed_outcome[16];
	/* TRIGGERS': the requests to run now, oldest first */
	const struct jobs_trigger *triggers;
	int n_triggers;
};

/* A request to run now (DESIGN 13), as the leader read it: its run's tick
 * is tick (the server's ms). */
struct jobs_trigger {
	int64_t id, tick;
	const char *job, *asked_by;
};

/* The pauses (or the resumes) the controls read, for PAUSES and RESUMES:
 * all, the whole lock's; names[0..n) by job; by/at who asked and when. */
struct jobs_pauses {
	bool all;
	const char *const *names, *const *by, *const *at;
	int n;
	const char *all_by, *all_at;
};

enum jobs_event_type {
	JOBS_EV_LEAD_BEGAN,     /* term: the election started "the command" */
	JOBS_EV_LOCK_PID,       /* lock_pid: the lock is held on this session */
	JOBS_EV_LEAD_ENDING,    /* stop every run; then GONE; drain: of this
				 * node's own will, the scheduled runs may
				 * finish for up to drain_timeout first */
	JOBS_EV_KILL,           /* SIGKILL every run now */
	JOBS_EV_SIGNAL,         /* sig: forwarded to every run */
	JOBS_EV_PAUSES,         /* pauses: in force */
	JOBS_EV_RESUMES,        /* pauses: the resumes recorded */
	JOBS_EV_ENSURED,        /* answer: the term's ENSURE */
	JOBS_EV_REMADE,         /* job, answer: a job's ENSURE */
	JOBS_EV_CLAIMED,        /* job, answer: a claim of a run */
	JOBS_EV_RECORDED,       /* job, answer: a tick recorded not run */
	JOBS_EV_LAST,           /* job, answer */
	JOBS_EV_RUN_STARTED,    /* job, pid: JOBS_DO_START's command runs */
	JOBS_EV_START_FAILED,   /* job, error: it could not be started */
	JOBS_EV_RUN_GONE,       /* job, status: its command ended */
	JOBS_EV_TIMER,          /* job (or -1), timer: one ran out */
	JOBS_EV_ON_FAILURE_CLAIMED, /* job, answer: JOBS_DO_ON_FAILURE_CLAIM's */
	JOBS_EV_ON_FAILURE_DONE,    /* job, status, timed_out: the command ended */
	JOBS_EV_RELOAD,         /* cfg: the file read again (DESIGN 13); it
				 * outlives the jobs, as the first one does */
	JOBS_EV_TRIGGERS,       /* answer: JOBS_DO_TRIGGERS's (DESIGN 13) */
	JOBS_EV_NOTIFIED,       /* a request to run now was written (NOTIFY) */
};

enum jobs_timer {
	JOBS_TIMER_TICK,        /* the next tick, plus its jitter */
	JOBS_TIMER_LIMIT,       /* max_runtime; a restart's delay */
	JOBS_TIMER_WAIT,        /* an older term's run: ask again */
	JOBS_TIMER_RETRY,       /* a failed run's next attempt is due */
	JOBS_TIMER_FLUSH,       /* (job -1) a stop waits for the runs' ends */
	JOBS_TIMER_DRAIN,       /* (job -1) drain_timeout ran out */
	JOBS_TIMER_TRIGGERS,    /* (job -1) read the requests to run now */
};

struct jobs_event {
	enum jobs_event_type type;
	int job;                    /* index in cfg->jobs, or -1 */
	struct jobs_term term;      /* LEAD_BEGAN */
	int lock_pid;               /* LOCK_PID */
	bool drain;                 /* LEAD_ENDING */
	int sig;                    /* SIGNAL */
	int pid;                    /* RUN_STARTED */
	int status;                 /* RUN_GONE, ON_FAILURE_DONE */
	const char *last_line;      /* RUN_GONE: the output's last line that was
				     * not blank; NULL or "": none, or not read
				     * (output = inherit) */
	bool timed_out;             /* ON_FAILURE_DONE: stopped at its timeout */
	int64_t run_id;             /* ON_FAILURE_DONE: the failed run's */
	enum jobs_timer timer;      /* TIMER */
	const char *error;          /* START_FAILED */
	const struct jobs_pauses *pauses;  /* PAUSES, RESUMES */
	const struct jobs_answer *answer;  /* ENSURED .. LAST */
	const struct config *cfg;   /* RELOAD */
	/* facts of the world as of the event, every type: */
	bool ledger_idle;           /* no statement unanswered */
	const bool *exited;         /* [job]: its command's main process ended */
};

enum jobs_action_type {
	JOBS_DO_LOG,            /* level, pid (0: none), text */
	JOBS_DO_ENSURE,         /* job -1: the term's; else a job's, remade */
	JOBS_DO_CLAIM,          /* job, tick, outcome, rerun, trigger (the request
				 * to run now it claims, 0: a tick); record: not
				 * a run */
	JOBS_DO_LAST,           /* job, cut */
	JOBS_DO_FINISH,         /* run_id, outcome, status (token: term's) */
	JOBS_DO_ANNOUNCE,       /* generation: the jobs' list, each job's next
				 * tick as jobs_state_view shows it (DESIGN 13) */
	JOBS_DO_PRUNE,          /* keep_ms */
	JOBS_DO_START,          /* job, tick, run_id (0: not scheduled) */
	JOBS_DO_STOP,           /* job: SIGTERM, grace period, SIGKILL */
	JOBS_DO_KILL,           /* job */
	JOBS_DO_SIGNAL,         /* job, sig */
	JOBS_DO_TIMER,          /* job (-1: the jobs'), timer, after (< 0: stop);
				 * one running keeps its time unless restart */
	JOBS_DO_GONE,           /* status: tell the election */
	JOBS_DO_REFUSED,        /* fault, text: tell the election */
	JOBS_DO_ON_FAILURE_CLAIM, /* job, run_id: claim its on_failure */
	JOBS_DO_ON_FAILURE,     /* job, run_id, tick, attempt, outcome, status,
				 * after (the timeout): run on_failure */
	JOBS_DO_ADD,            /* job, job_cfg: a job a reload added, before
				 * any other action names it (DESIGN 13) */
	JOBS_DO_RECONFIGURE,    /* job, job_cfg: its command from now on (no
				 * run of it goes on) */
	JOBS_DO_TRIGGERS,       /* read the requests to run now (DESIGN 13) */
	JOBS_DO_LISTEN,         /* hear of new requests (LISTEN; NOTIFIED) */
};

struct jobs_action {
	enum jobs_action_type type;
	int job;
	struct jobs_term term;      /* CLAIM, LAST, FINISH, PRUNE, START */
	int64_t tick, run_id, keep_ms;
	int64_t trigger;            /* CLAIM: the request to run now; 0: none */
	uint64_t generation;        /* ANNOUNCE */
	const struct config_job *job_cfg; /* ADD, RECONFIGURE */
	enum jobs_outcome outcome;
	bool rerun, record, cut, restart;
	int attempt;                /* CLAIM, START, ON_FAILURE: 1, 2 .. */
	bool owed;                  /* FINISH: on_failure is owed for it */
	int status, sig, pid;
	enum jobs_timer timer;
	double after;
	enum log_level level;
	enum fault fault;
	char text[LOG_MSG_MAX];
};

/* The actions of one step, in the order they are to be carried out. */
struct jobs_output {
	struct jobs_action *a;
	size_t n, cap;
	bool lost;                  /* out of memory: actions were dropped */
};
void jobs_output_free(struct jobs_output *out);

struct jobs_state;

/* The jobs of cfg (which outlives them); has_ledger: cfg->uses_ledger.
 * NULL with err when a schedule cannot be read, or out of memory. */
struct jobs_state *jobs_state_new(const struct config *cfg, bool has_ledger,
				  char *err, size_t errlen);
void jobs_state_free(struct jobs_state *s);

/* One event at monotonic time now; out is emptied, then filled. */
void jobs_step(struct jobs_state *s, const struct jobs_event *ev, double now,
	       struct jobs_output *out);

size_t jobs_state_count(const struct jobs_state *s);
void jobs_state_view(const struct jobs_state *s, size_t i, struct jobs_view *v);

#endif
