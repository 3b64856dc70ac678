/* runner_command.c: the runner of the single command, over child.h. */
#include "runner.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "log.h"
#include "output.h"

struct command_runner {
	struct child *child;
	struct output *out;     /* output = log (DESIGN 13); NULL: inherit */
	struct runner_callbacks cb;
	/* the command's environment: valid until it is gone (child_start) */
	char env_node[96], env_key[48], env_token[64];
	char *env[4];
};

static void gone_cb(void *arg, int status)
{
	struct command_runner *c = arg;

	if (c->out)
		output_finish(c->out);
	c->cb.gone(c->cb.arg, status);
}

static void killed_cb(void *arg)
{
	struct command_runner *c = arg;

	c->cb.killed(c->cb.arg);
}

void *runner_command_new(struct ev_loop *loop, const struct config *cfg,
			 const struct runner_callbacks *cb, char *err, size_t errlen)
{
	struct command_runner *c = calloc(1, sizeof(*c));

	if (c)
		c->child = child_new(loop, cfg->command, cfg->jobs[0].shell,
				     cfg->grace_period_ms / 1000.0, gone_cb, c);
	if (c && c->child && cfg->n_jobs > 0 && cfg->jobs[0].output == OUTPUT_LOG)
		c->out = output_new(loop, cfg->jobs[0].name, 0);
	if (!c || !c->child || (cfg->n_jobs > 0 && cfg->jobs[0].output == OUTPUT_LOG && !c->out)) {
		if (c)
			child_free(c->child);
		free(c);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	child_on_killed(c->child, killed_cb);
	child_set_process(c->child, &cfg->jobs[0].process);
	c->cb = *cb;
	snprintf(c->env_node, sizeof(c->env_node), "PGLEADER_NODE_ID=%s", cfg->node_id);
	c->env[0] = c->env_node;
	c->env[1] = c->env_key;
	c->env[2] = c->env_token;
	c->env[3] = NULL;
	return c;
}

static void command_start(void *impl, const struct ledger_term *term)
{
	struct command_runner *c = impl;
	char err[256];
	int rc;

	snprintf(c->env_key, sizeof(c->env_key), "PGLEADER_LOCK_KEY=%" PRId64,
		 term->lock_key);
	snprintf(c->env_token, sizeof(c->env_token), "PGLEADER_FENCING_TOKEN=%" PRIu64,
		 term->fencing_token);
	if (c->out) {
		int fd = output_open(c->out);

		if (fd < 0)
			log_warning("cannot make a pipe for the command's output (%s): it "
				    "goes to pgleader's own stdout and stderr", strerror(errno));
		child_set_output(c->child, fd);
	}
	rc = child_start(c->child, c->env, err, sizeof(err));
	if (c->out)
		output_started(c->out);
	if (rc < 0)
		c->cb.start_failed(c->cb.arg, err);
	else
		c->cb.started(c->cb.arg, (int)child_pid(c->child));
}

/* The command does not name its lock session. */
static void command_set_lock_pid(void *impl, int lock_pid)
{
	(void)impl;
	(void)lock_pid;
}

/* Never asked: SIGHUP goes to the single command (supervisor.c). */
static void command_reload(void *impl, const struct config *cfg)
{
	(void)impl;
	(void)cfg;
}

static void command_stop(void *impl)
{
	child_stop(((struct command_runner *)impl)->child);
}

static void command_kill(void *impl)
{
	child_kill(((struct command_runner *)impl)->child);
}

static void command_signal(void *impl, int sig)
{
	struct command_runner *c = impl;

	if (!child_running(c->child))
		return;
	log_debug("forwarding SIG%s to the command (pid %d)", sigabbrev_np(sig),
		  (int)child_pid(c->child));
	child_signal(c->child, sig);
}

/* A pause stops the command through the election, not here. */
static void command_pauses(void *impl, const struct ledger_controls *rows)
{
	(void)impl;
	(void)rows;
}

static struct jobs *command_jobs(const void *impl)
{
	(void)impl;
	return NULL;
}

static void command_free(void *impl)
{
	struct command_runner *c = impl;

	child_free(c->child);
	output_free(c->out);
	free(c);
}

const struct runner_ops runner_command_ops = {
	.start = command_start,
	.set_lock_pid = command_set_lock_pid,
	.stop = command_stop,
	.drain = command_stop, /* it runs all the time: stopped at once */
	.reload = command_reload,
	.kill = command_kill,
	.signal = command_signal,
	.pauses = command_pauses,
	.jobs = command_jobs,
	.free = command_free,
};
