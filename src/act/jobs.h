/* jobs.h: what runs when (DESIGN 10), above the election: while the
 * election lets this node run commands, each job without a schedule runs
 * all the time, and each scheduled job runs once per tick that it claimed
 * in the ledger first. jobs_step.c decides; jobs.c, the effector behind
 * this interface, turns calls, ledger answers, child exits and timers
 * into its events and carries out its actions. */
#ifndef PGLEADER_JOBS_H
#define PGLEADER_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>

#include "config.h"
#include "fault.h"
#include "jobs_step.h" /* the outcomes and struct jobs_view */
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
/* The same, of this node's own will (DESIGN 13): no tick fires any more;
 * the scheduled runs going on may finish for up to drain_timeout, then
 * are stopped as jobs_stop stops them; jobs without a schedule are
 * stopped at once. A jobs_stop meanwhile stops them all now. */
void jobs_drain(struct jobs *j);
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

/* DESIGN 13: the file read again: cfg (which outlives the jobs) has the
 * jobs from now on, by name: added ones run from their next tick, removed
 * ones drain, changed ones take the new settings from their next run. */
void jobs_reload(struct jobs *j, const struct config *cfg);

size_t jobs_count(const struct jobs *j);
void jobs_view(const struct jobs *j, size_t i, struct jobs_view *v);

#endif
