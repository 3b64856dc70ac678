/* runner.c: the runner interface, over the kind the config asks for. */
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>

struct runner {
	const struct runner_ops *ops;
	void *impl;
};

struct runner *runner_new(struct ev_loop *loop, const struct config *cfg,
			  struct ledger *ledger, const struct runner_callbacks *cb,
			  char *err, size_t errlen)
{
	struct runner *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (cfg->uses_ledger) {
		r->ops = &runner_jobs_ops;
		r->impl = runner_jobs_new(loop, cfg, ledger, cb, err, errlen);
	} else {
		r->ops = &runner_command_ops;
		r->impl = runner_command_new(loop, cfg, cb, err, errlen);
	}
	if (!r->impl) {
		free(r);
		return NULL;
	}
	return r;
}

void runner_free(struct runner *r)
{
	if (!r)
		return;
	r->ops->free(r->impl);
	free(r);
}

void runner_start(struct runner *r, const struct ledger_term *term)
{
	r->ops->start(r->impl, term);
}

void runner_set_lock_pid(struct runner *r, int lock_pid)
{
	r->ops->set_lock_pid(r->impl, lock_pid);
}

void runner_stop(struct runner *r) { r->ops->stop(r->impl); }
void runner_drain(struct runner *r) { r->ops->drain(r->impl); }
void runner_reload(struct runner *r, const struct config *cfg)
{
	r->ops->reload(r->impl, cfg);
}
void runner_kill(struct runner *r) { r->ops->kill(r->impl); }
void runner_signal(struct runner *r, int sig) { r->ops->signal(r->impl, sig); }

void runner_pauses(struct runner *r, const struct ledger_controls *rows)
{
	r->ops->pauses(r->impl, rows);
}

struct jobs *runner_jobs(const struct runner *r)
{
	return r->ops->jobs(r->impl);
}
