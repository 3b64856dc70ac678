/* runner.h: what the election calls "the command", one interface for its
 * two kinds: the single command (child.h) and the jobs (jobs.h). The
 * supervisor carries out the election's actions through it and never asks
 * which kind it has. */
#ifndef PGLEADER_RUNNER_H
#define PGLEADER_RUNNER_H

#include <stddef.h>
#include <ev.h>

#include "config.h"
#include "fault.h"
#include "ledger.h"

struct runner;
struct jobs;

/* What the runner reports, each as the election's command news. */
struct runner_callbacks {
	void (*started)(void *arg, int pid);       /* pid 0: the jobs */
	void (*start_failed)(void *arg, const char *reason);
	void (*gone)(void *arg, int status);       /* all of it is gone */
	void (*killed)(void *arg);                 /* SIGKILL after the grace */
	/* nothing can run (DESIGN 10): FAULT_LEDGER or FAULT_ALREADY_RUN */
	void (*refused)(void *arg, enum fault fault, const char *reason);
	void *arg;
};

/* The single command of cfg, or (cfg->uses_ledger) its jobs, whose ledger
 * statements go over ledger. NULL with err when it cannot be set up. */
struct runner *runner_new(struct ev_loop *loop, const struct config *cfg,
			  struct ledger *ledger, const struct runner_callbacks *cb,
			  char *err, size_t errlen);
void runner_free(struct runner *r);

/* Runs for the term: its lock key, fencing token and lock session. */
void runner_start(struct runner *r, const struct ledger_term *term);
/* The term goes on over a new lock session (back from failsafe). */
void runner_set_lock_pid(struct runner *r, int lock_pid);
/* SIGTERM, SIGKILL after the grace period; then gone. */
void runner_stop(struct runner *r);
/* A stop of this node's own will (DESIGN 13): scheduled runs may finish
 * for up to drain_timeout first; the rest is stopped as runner_stop does.
 * A runner_stop meanwhile ends the drain. Then gone. */
void runner_drain(struct runner *r);
/* DESIGN 13: the jobs of cfg (which outlives the runner) from now on. */
void runner_reload(struct runner *r, const struct config *cfg);
void runner_kill(struct runner *r);
/* Forwards a signal (HUP, USR1, USR2) to what runs. */
void runner_signal(struct runner *r, int sig);
/* The controls just read (DESIGN 11), for a runner that acts on pauses
 * itself (the jobs, by name); the single command ignores them: the
 * election stops it. */
void runner_pauses(struct runner *r, const struct ledger_controls *rows);

/* The jobs, for /metrics and /status; NULL for the single command. */
struct jobs *runner_jobs(const struct runner *r);

/* Each kind's operations (runner_command.c, runner_jobs.c). */
struct runner_ops {
	void (*start)(void *impl, const struct ledger_term *term);
	void (*set_lock_pid)(void *impl, int lock_pid);
	void (*stop)(void *impl);
	void (*drain)(void *impl);
	void (*reload)(void *impl, const struct config *cfg);
	void (*kill)(void *impl);
	void (*signal)(void *impl, int sig);
	void (*pauses)(void *impl, const struct ledger_controls *rows);
	struct jobs *(*jobs)(const void *impl);
	void (*free)(void *impl);
};
void *runner_command_new(struct ev_loop *loop, const struct config *cfg,
			 const struct runner_callbacks *cb, char *err, size_t errlen);
extern const struct runner_ops runner_command_ops;
void *runner_jobs_new(struct ev_loop *loop, const struct config *cfg,
		      struct ledger *ledger, const struct runner_callbacks *cb,
		      char *err, size_t errlen);
extern const struct runner_ops runner_jobs_ops;

#endif
