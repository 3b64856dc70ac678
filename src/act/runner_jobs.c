/* runner_jobs.c: the runner of the jobs (DESIGN 10), over jobs.h. */
#include "runner.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "jobs.h"

struct jobs_runner {
	struct jobs *jobs;
	struct runner_callbacks cb;
};

static void gone_cb(void *arg, int status)
{
	struct jobs_runner *j = arg;

	j->cb.gone(j->cb.arg, status);
}

static void refused_cb(void *arg, enum fault fault, const char *reason)
{
	struct jobs_runner *j = arg;

	j->cb.refused(j->cb.arg, fault, reason);
}

void *runner_jobs_new(struct ev_loop *loop, const struct config *cfg,
		      struct ledger *ledger, const struct runner_callbacks *cb,
		      char *err, size_t errlen)
{
	struct jobs_runner *j = calloc(1, sizeof(*j));
	struct jobs_callbacks jcb = { gone_cb, refused_cb, j };

	if (!j) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	j->cb = *cb;
	j->jobs = jobs_new(loop, cfg, ledger, &jcb, err, errlen);
	if (!j->jobs) {
		free(j);
		return NULL;
	}
	return j;
}

/* The jobs of this term have no pid of their own; started comes first, as
 * jobs_start may refuse at once. */
static void jobs_runner_start(void *impl, const struct ledger_term *term)
{
	struct jobs_runner *j = impl;

	j->cb.started(j->cb.arg, 0);
	jobs_start(j->jobs, term);
}

static void jobs_runner_set_lock_pid(void *impl, int lock_pid)
{
	jobs_set_lock_pid(((struct jobs_runner *)impl)->jobs, lock_pid);
}

static void jobs_runner_stop(void *impl)
{
	jobs_stop(((struct jobs_runner *)impl)->jobs);
}

static void jobs_runner_drain(void *impl)
{
	jobs_drain(((struct jobs_runner *)impl)->jobs);
}

static void jobs_runner_reload(void *impl, const struct config *cfg)
{
	jobs_reload(((struct jobs_runner *)impl)->jobs, cfg);
}

static void jobs_runner_kill(void *impl)
{
	jobs_kill(((struct jobs_runner *)impl)->jobs);
}

static void jobs_runner_signal(void *impl, int sig)
{
	jobs_signal(((struct jobs_runner *)impl)->jobs, sig);
}

/* The rows of jobs by name that are pauses in force (resumed false) or
 * pauses a resume ended (resumed true): their names, who asked and when. */
static int job_rows(const struct ledger_controls *lc, bool resumed,
		    const char **names, const char **by, const char **at)
{
	int n = 0;

	for (int i = 0; i < lc->n; i++) {
		if (!lc->c[i].job[0] ||
		    !(resumed ? lc->c[i].resumed : lc->c[i].pause))
			continue;
		names[n] = lc->c[i].job;
		by[n] = lc->c[i].asked_by;
		at[n++] = lc->c[i].asked_at;
	}
	return n;
}

/* The pauses of jobs by name, and of them all, for the jobs to act on. */
static void jobs_runner_pauses(void *impl, const struct ledger_controls *lc)
{
	struct jobs_runner *j = impl;
	const char *names[LEDGER_CONTROLS_MAX], *by[LEDGER_CONTROLS_MAX],
		   *at[LEDGER_CONTROLS_MAX];
	const char *all_by, *all_at;
	bool all;
	int n;

	/* who resumed first, so that a job resumed now says so */
	all = ledger_controls_whole(lc, true, &all_by, &all_at);
	n = job_rows(lc, true, names, by, at);
	jobs_set_resumed(j->jobs, all, names, by, at, n, all_by, all_at);
	all = ledger_controls_whole(lc, false, &all_by, &all_at);
	n = job_rows(lc, false, names, by, at);
	jobs_set_paused(j->jobs, all, names, by, at, n, all_by, all_at);
}

static struct jobs *jobs_runner_jobs(const void *impl)
{
	return ((const struct jobs_runner *)impl)->jobs;
}

static void jobs_runner_free(void *impl)
{
	struct jobs_runner *j = impl;

	jobs_free(j->jobs);
	free(j);
}

const struct runner_ops runner_jobs_ops = {
	.start = jobs_runner_start,
	.set_lock_pid = jobs_runner_set_lock_pid,
	.stop = jobs_runner_stop,
	.drain = jobs_runner_drain,
	.reload = jobs_runner_reload,
	.kill = jobs_runner_kill,
	.signal = jobs_runner_signal,
	.pauses = jobs_runner_pauses,
	.jobs = jobs_runner_jobs,
	.free = jobs_runner_free,
};
