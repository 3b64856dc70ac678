/* jobs.h: what runs when (DESIGN 10), above the election: while the
 * election lets this node run commands, each job without a schedule runs
 * all the time, and each scheduled job runs once per tick that it claimed
 * in the ledger first. */
#ifndef PGLEADER_JOBS_H
#define PGLEADER_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>

#include "config.h"
#include "fault.h"
#include "ledger.h"

struct jobs;

struct jobs_callbacks {
	/* After jobs_stop or jobs_kill: every run is gone and its end is
	 * recorded (or could not be within a bound). With --once-per, also
	 * when the command ended by itself: status is its exit status. */
	void (*gone)(void *arg, int status);
	/* Nothing can run: the ledger is missing and may not be made
	 * (FAULT_LEDGER), or the --once-per window ran already or the
	 * one-shot is paused (FAULT_ALREADY_RUN); reason is one line. */
	void (*refused)(void *arg, enum fault fault, const char *reason);
	void *arg;
};

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
	int pid;                    /* of the run going on, 0 when none */
	double next_tick;           /* 0 when none is due (not leading) */
	double last_tick;           /* of the last run started here */
	double last_success;        /* end of the job's last run that exited 0,
				     * on any node: read from the ledger when
				     * this node begins to lead */
	uint64_t runs[JOBS_OUTCOME_COUNT];
	uint64_t duration_counts[JOBS_BUCKETS + 1]; /* per bucket, +Inf last */
	uint64_t duration_count;
	double duration_sum;
	bool paused;                /* DESIGN 11: as part of the lock, or by name */
	const char *paused_by;      /* who asked and when (RFC 3339); NULL when */
	const char *paused_at;      /* not paused or not told */
};

/* The jobs of cfg; the ledger is used only when cfg->uses_ledger. NULL
 * with err when one cannot be set up. */
struct jobs *jobs_new(struct ev_loop *loop, const struct config *cfg,
		      struct ledger *ledger, const struct jobs_callbacks *cb,
		      char *err, size_t errlen);
void jobs_free(struct jobs *j);

/* The election started "the command": run the jobs for this term. */
void jobs_start(struct jobs *j, const struct ledger_term *term);
/* The lock session holding the lock for this term is now lock_pid: a
 * leader back from failsafe (DESIGN 9) holds the lock again on a new
 * session, in the same term; its claims name that session. */
void jobs_set_lock_pid(struct jobs *j, int lock_pid);
/* The election stops it: no tick fires any more, every run is stopped
 * (SIGTERM, grace period, SIGKILL) and recorded interrupted; then gone. */
void jobs_stop(struct jobs *j);
void jobs_kill(struct jobs *j);
/* Forwards a signal to every run going on. */
void jobs_signal(struct jobs *j, int sig);
/* The pauses in force (DESIGN 11): all pauses every job; names[0..n) the
 * jobs paused by name; by/at (may be NULL) who asked and when (RFC 3339),
 * for the log line. Called after every read of the controls, and once
 * before jobs_start. A job that becomes paused has its run stopped as a
 * stop does (recorded interrupted) and its ticks recorded paused, not
 * run; a --once-per one-shot that is paused ends through refused with
 * FAULT_ALREADY_RUN. On resume a job without a schedule starts at once, a
 * scheduled one with its next tick. One log line per change per job. */
void jobs_set_paused(struct jobs *j, bool all, const char *const *names,
		     const char *const *by, const char *const *at, int n,
		     const char *all_by, const char *all_at);
/* The resumes the controls recorded (the same shape: all for the whole
 * lock's, names[0..n) by job), for the line of a job that jobs_set_paused
 * resumes next: who resumed it and when. */
void jobs_set_resumed(struct jobs *j, bool all, const char *const *names,
		      const char *const *by, const char *const *at, int n,
		      const char *all_by, const char *all_at);

size_t jobs_count(const struct jobs *j);
void jobs_view(const struct jobs *j, size_t i, struct jobs_view *v);

#endif
