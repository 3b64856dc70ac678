/* jobs.c: the job layer's effector (DESIGN 14): the calls of jobs.h,
 * the ledger's answers, the commands' exits and the timers become events
 * of jobs_step.c, which decides; their actions are carried out here, in
 * order: ledger statements (ledger.h), commands (child.h), timers (libev)
 * and log lines. Nothing here decides what runs when. */
#include "jobs.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "clocks.h"
#include "hook.h"
#include "log.h"
#include "output.h"

#define FEED_DEPTH 4

enum { ENV_NODE, ENV_KEY, ENV_TOKEN, ENV_JOB, ENV_TICK, ENV_RUN, ENV_ATTEMPT, ENV_COUNT };

/* Whose answer a ledger callback carries. */
enum { ASK_REMADE, ASK_CLAIMED, ASK_RECORDED, ASK_LAST, ASK_ON_FAILURE, ASK_COUNT };
struct asker {
	struct jobs *owner;
	int job;                    /* -1: the term's ENSURE */
	enum jobs_event_type type;
};

struct job_io {
	struct jobs *owner;
	int index;
	const struct config_job *cfg;
	struct child *child;
	struct output *out;         /* output = log; NULL: inherit */
	int64_t run_id;             /* of the run started last (0: not scheduled) */
	ev_timer timers[JOBS_TIMER_FLUSH]; /* TICK, LIMIT, WAIT, RETRY */
	struct asker askers[ASK_COUNT];
	char env[ENV_COUNT][128];
	char *envp[ENV_COUNT + 1];
};

struct jobs {
	struct ev_loop *loop;
	const struct config *cfg;
	struct ledger *ledger;      /* NULL: no ledger (a plain command) */
	struct jobs_callbacks cb;
	struct jobs_state *state;   /* the decider's */
	struct job_io **job;        /* each apart: libev holds their timers */
	size_t n;
	bool *exited;               /* [job], for each event */
	struct asker ensure_asker;
	/* the steps' outputs, kept from one event to the next (an action's
	 * outcome is the next event at once: one per depth) */
	struct jobs_output outs[FEED_DEPTH];
	int depth;
	ev_timer flush_timer;       /* a stop waits for the runs' ends */
	struct on_failure_run *hooks; /* on_failure commands running */
	ev_timer drain_timer;       /* drain_timeout (DESIGN 13) */
	ev_timer triggers_timer;    /* the next read of the runs asked for now */
	char node_id[64];
};

static void carry_out(struct jobs *j, const struct jobs_output *out);

/* One event through the decider, now, and its actions carried out. An
 * action's own outcome (a command started or not) is the next event, at
 * once. */
static void feed(struct jobs *j, struct jobs_event *ev)
{
	struct jobs_output deeper = { 0 };
	struct jobs_output *out = j->depth < FEED_DEPTH ? &j->outs[j->depth] : &deeper;

	for (size_t i = 0; i < j->n; i++)
		j->exited[i] = child_exited(j->job[i]->child);
	ev->exited = j->exited;
	ev->ledger_idle = !j->ledger || ledger_idle(j->ledger);
	jobs_step(j->state, ev, clocks_monotonic(), out);
	if (out->lost)
		log_error("jobs: out of memory; some of what the jobs do was dropped");
	j->depth++;
	carry_out(j, out);
	j->depth--;
	jobs_output_free(&deeper);
}

/* ---- what comes in ---- */

static void answer_of(const struct ledger_answer *a, struct jobs_answer *to)
{
	*to = (struct jobs_answer){
		.ok = a->ok, .lost = a->lost, .missing = a->missing,
		.denied = a->denied, .untrusted = a->untrusted,
		.db_now = a->db_now, .rtt = a->rtt, .tick = a->tick,
		.run_id = a->run_id, .holder = a->holder, .newest = a->newest,
		.early = a->early, .last_tick = a->last_tick,
		.interrupted = a->interrupted, .last_success = a->last_success,
		.older_running = a->older_running,
		.interrupted_attempt = a->interrupted_attempt,
		.last_run_id = a->last_run_id, .last_ended = a->last_ended,
		.last_attempt = a->last_attempt, .last_exit = a->last_exit,
		.owed_run_id = a->owed_run_id, .owed_tick = a->owed_tick,
		.owed_attempt = a->owed_attempt, .owed_exit = a->owed_exit,
	};
	snprintf(to->error, sizeof(to->error), "%s", a->error);
	snprintf(to->last_outcome, sizeof(to->last_outcome), "%s", a->last_outcome);
	snprintf(to->owed_outcome, sizeof(to->owed_outcome), "%s", a->owed_outcome);
}

static void answered_cb(void *arg, const struct ledger_answer *a)
{
	struct asker *k = arg;
	struct jobs_answer ans;
	struct jobs_event ev = { .type = k->type, .job = k->job, .answer = &ans };

	answer_of(a, &ans);
	feed(k->owner, &ev);
}

static void run_gone_cb(void *arg, int status)
{
	struct job_io *io = arg;
	struct jobs_event ev = { .type = JOBS_EV_RUN_GONE, .job = io->index,
				 .status = status };

	/* What is left in the pipe is the run's too: read before its end is
	 * told, so that its last line is in the line that says so. */
	if (io->out) {
		output_finish(io->out);
		ev.last_line = output_last_line(io->out);
	}
	feed(io->owner, &ev);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job_io *io = w->data;
	struct jobs_event ev = { .type = JOBS_EV_TIMER, .job = io->index,
				 .timer = (enum jobs_timer)(w - io->timers) };

	(void)loop;
	(void)revents;
	feed(io->owner, &ev);
}

static void flush_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct jobs_event ev = { .type = JOBS_EV_TIMER, .job = -1,
				 .timer = JOBS_TIMER_FLUSH };

	(void)loop;
	(void)revents;
	feed(w->data, &ev);
}

/* DRAIN and TRIGGERS, the jobs' own timers besides FLUSH */
static void jobs_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct jobs *j = w->data;
	struct jobs_event ev = { .type = JOBS_EV_TIMER, .job = -1,
				 .timer = w == &j->drain_timer ? JOBS_TIMER_DRAIN
				 : JOBS_TIMER_TRIGGERS };

	(void)loop;
	(void)revents;
	feed(j, &ev);
}

/* A NOTIFY of a new request to run now (DESIGN 13). */
static void notified_cb(void *arg)
{
	struct jobs_event ev = { .type = JOBS_EV_NOTIFIED, .job = -1 };

	feed(arg, &ev);
}

/* The requests to run now the ledger holds (DESIGN 13), as the decider's. */
static void triggers_cb(void *arg, const struct ledger_answer *a)
{
	struct jobs_trigger t[LEDGER_TRIGGERS_MAX];
	struct jobs_answer ans;
	struct jobs_event ev = { .type = JOBS_EV_TRIGGERS, .job = -1, .answer = &ans };
	int n = a->ok && a->triggers ? a->triggers->n : 0;

	answer_of(a, &ans);
	for (int i = 0; i < n; i++) {
		const struct ledger_trigger *g = &a->triggers->t[i];

		t[i] = (struct jobs_trigger){ .id = g->id, .tick = g->tick, .job = g->job,
					      .asked_by = g->asked_by };
	}
	ans.triggers = t;
	ans.n_triggers = n;
	feed(arg, &ev);
}

/* ---- what goes out ---- */

static struct ledger_term term_of(const struct jobs *j, const struct jobs_action *a)
{
	return (struct ledger_term){ .lock_key = a->term.lock_key,
				     .fencing_token = a->term.fencing_token,
				     .lock_pid = a->term.lock_pid,
				     .node_id = j->node_id };
}

static void set_env(struct job_io *io, const struct jobs_action *a)
{
	char when[40];

	snprintf(io->env[ENV_NODE], sizeof(io->env[0]), "PGLEADER_NODE_ID=%s",
		 io->owner->node_id);
	snprintf(io->env[ENV_KEY], sizeof(io->env[0]), "PGLEADER_LOCK_KEY=%" PRId64,
		 a->term.lock_key);
	snprintf(io->env[ENV_TOKEN], sizeof(io->env[0]), "PGLEADER_FENCING_TOKEN=%" PRIu64,
		 a->term.fencing_token);
	snprintf(io->env[ENV_JOB], sizeof(io->env[0]), "PGLEADER_JOB=%s", io->cfg->name);
	for (int i = 0; i < ENV_TICK; i++)
		io->envp[i] = io->env[i];
	io->envp[ENV_TICK] = io->envp[ENV_RUN] = io->envp[ENV_ATTEMPT] = NULL;
	io->envp[ENV_COUNT] = NULL;
	if (a->run_id <= 0)
		return;
	snprintf(io->env[ENV_TICK], sizeof(io->env[0]), "PGLEADER_TICK=%s",
		 clocks_rfc3339(a->tick, when, sizeof(when)));
	snprintf(io->env[ENV_RUN], sizeof(io->env[0]), "PGLEADER_RUN_ID=%" PRId64,
		 a->run_id);
	snprintf(io->env[ENV_ATTEMPT], sizeof(io->env[0]), "PGLEADER_ATTEMPT=%d",
		 a->attempt > 0 ? a->attempt : 1);
	io->envp[ENV_TICK] = io->env[ENV_TICK];
	io->envp[ENV_RUN] = io->env[ENV_RUN];
	io->envp[ENV_ATTEMPT] = io->env[ENV_ATTEMPT];
}

/* The run's output pipe; without one (no descriptor left) the command
 * writes to pgleader's own stdout and stderr, said once a run. */
static void open_output(struct job_io *io)
{
	int fd = output_open(io->out);

	if (fd < 0)
		log_warning("job %s: cannot make a pipe for its output (%s): it goes "
			    "to pgleader's own stdout and stderr", io->cfg->name,
			    strerror(errno));
	child_set_output(io->child, fd);
}

static void start(struct job_io *io, const struct jobs_action *a)
{
	char err[256];
	struct jobs_event ev = { .job = io->index };

	set_env(io, a);
	io->run_id = a->run_id;
	if (io->out)
		open_output(io);
	if (child_start(io->child, io->envp, err, sizeof(err)) < 0) {
		ev.type = JOBS_EV_START_FAILED;
		ev.error = err;
	} else {
		ev.type = JOBS_EV_RUN_STARTED;
		ev.pid = (int)child_pid(io->child);
	}
	if (io->out)
		output_started(io->out);
	feed(io->owner, &ev);
}

static void set_timer(struct jobs *j, const struct jobs_action *a)
{
	ev_timer *w = a->job >= 0 ? &j->job[a->job]->timers[a->timer]
		      : a->timer == JOBS_TIMER_DRAIN ? &j->drain_timer
		      : a->timer == JOBS_TIMER_TRIGGERS ? &j->triggers_timer : &j->flush_timer;

	if (a->after >= 0 && !a->restart && ev_is_active(w))
		return; /* as libev's ev_timer_start: it keeps its time */
	ev_timer_stop(j->loop, w);
	if (a->after < 0)
		return;
	/* after counts from the decider's reading of the clock, just now;
	 * libev counts from its own, taken when the loop last woke, which a
	 * slow callback leaves behind: the timer would fire early by that
	 * much, and the decider would only set it again */
	ev_now_update(j->loop);
	ev_timer_set(w, a->after, 0.);
	ev_timer_start(j->loop, w);
}

static void say(const struct jobs_action *a)
{
	if (a->pid)
		log_event(a->level, &(struct log_fields){ .command_pid = a->pid }, "%s",
			  a->text);
	else
		log_msg(a->level, "%s", a->text);
}

/* A run's end, with the last bytes of its output when they were read:
 * those of the job whose run it is, gone by now (its RUN_GONE came
 * first). A run that never started has none. */
static void finish_run(struct jobs *j, const struct jobs_action *a)
{
	const char *tail = NULL;
	size_t len = 0;

	for (size_t i = 0; i < j->n && a->run_id > 0; i++) {
		struct job_io *io = j->job[i];

		if (io->run_id == a->run_id && io->out && io->cfg->output_tail > 0 &&
		    !child_running(io->child) && output_captured(io->out))
			tail = output_tail(io->out, &len);
	}
	ledger_finish(j->ledger, a->term.fencing_token, a->run_id,
		      jobs_outcome_name(a->outcome), a->status, a->owed, tail, len);
}

/* DESIGN 13: the jobs' list, one statement each, the last one sweeping. */
static void announce(struct jobs *j, const struct jobs_action *a,
		     const struct ledger_term *t)
{
	size_t n = jobs_state_count(j->state), last = n;
	struct jobs_view v;

	for (size_t i = 0; i < n; i++) {
		jobs_state_view(j->state, i, &v);
		if (!v.removed)
			last = i;
	}
	for (size_t i = 0; i < n; i++) {
		jobs_state_view(j->state, i, &v);
		if (v.removed)
			continue; /* draining, no longer the leader's */
		ledger_announce(j->ledger, t, &(struct ledger_job){
			.name = v.name, .schedule = v.schedule, .timezone = v.timezone,
			.next_tick = (int64_t)(v.announced_next * 1000),
			.generation = a->generation, .last = i == last });
	}
}

/* The ledger's statements. */
static void ask(struct jobs *j, const struct jobs_action *a)
{
	struct job_io *io = a->job >= 0 ? j->job[a->job] : NULL;
	struct ledger_term t = term_of(j, a);

	if (a->type == JOBS_DO_ENSURE)
		ledger_ensure(j->ledger, answered_cb,
			      io ? &io->askers[ASK_REMADE] : &j->ensure_asker);
	else if (a->type == JOBS_DO_CLAIM)
		ledger_claim(j->ledger, &t, io->cfg->name, a->tick, a->attempt, a->trigger,
			     jobs_outcome_name(a->outcome), a->rerun, answered_cb,
			     &io->askers[a->record ? ASK_RECORDED : ASK_CLAIMED]);
	else if (a->type == JOBS_DO_LAST)
		ledger_last(j->ledger, &t, io->cfg->name, a->cut, answered_cb,
			    &io->askers[ASK_LAST]);
	else if (a->type == JOBS_DO_FINISH)
		finish_run(j, a);
	else if (a->type == JOBS_DO_ON_FAILURE_CLAIM)
		ledger_on_failure(j->ledger, &t, a->run_id, answered_cb,
				  &io->askers[ASK_ON_FAILURE]);
	else if (a->type == JOBS_DO_ANNOUNCE)
		announce(j, a, &t);
	else if (a->type == JOBS_DO_TRIGGERS)
		ledger_triggers(j->ledger, a->term.lock_key, triggers_cb, j);
	else if (a->type == JOBS_DO_LISTEN)
		ledger_listen(j->ledger, notified_cb, j);
	else
		ledger_prune(j->ledger, a->term.lock_key, a->keep_ms);
}

/* The commands' signals. */
static void signal_run(struct jobs *j, const struct jobs_action *a)
{
	struct child *c = j->job[a->job]->child;

	if (a->type == JOBS_DO_STOP)
		child_stop(c);
	else if (a->type == JOBS_DO_KILL && child_running(c))
		child_kill(c);
	else if (a->type == JOBS_DO_SIGNAL && child_running(c))
		child_signal(c, a->sig);
}

/* ---- on_failure (DESIGN 13) ---- */

enum { HENV_NODE, HENV_JOB, HENV_TICK, HENV_RUN, HENV_ATTEMPT, HENV_OUTCOME,
       HENV_EXIT, HENV_COUNT };

/* An on_failure command running, with its environment (the hook copies
 * none of it before its fork). */
struct on_failure_run {
	struct on_failure_run *next;
	struct job_io *io;
	struct hook *hook;
	int64_t run_id;
	char env[HENV_COUNT][128];
	char *envp[HENV_COUNT + 1];
};

/* What goes to on_failure's stdin (DESIGN 13): the failed run's output
 * tail while this node still has it (the run it ran last, no other
 * started since); empty otherwise (output = inherit, output_tail = 0, or
 * a run of an earlier leader, whose tail is in its row: runs --output). */
static void on_failure_input(struct job_io *io, int64_t run_id,
			     const char **buf, size_t *len)
{
	const char *tail = NULL;

	*len = 0;
	if (io->out && io->run_id == run_id && !child_running(io->child) &&
	    output_captured(io->out))
		tail = output_tail(io->out, len);
	*buf = tail ? tail : "";
	if (!tail)
		*len = 0;
}

static void unlink_hook(struct jobs *j, struct on_failure_run *r)
{
	for (struct on_failure_run **p = &j->hooks; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			return;
		}
}

static void on_failure_done_cb(void *arg, int status, bool timed_out)
{
	struct on_failure_run *r = arg;
	struct jobs *j = r->io->owner;
	struct jobs_event ev = { .type = JOBS_EV_ON_FAILURE_DONE, .job = r->io->index,
				 .status = status, .timed_out = timed_out,
				 .run_id = r->run_id };

	unlink_hook(j, r);
	free(r); /* the hook frees itself once this returns */
	feed(j, &ev);
}

static void hook_env(struct on_failure_run *r, const struct jobs_action *a)
{
	char when[40];
	const struct jobs *j = r->io->owner;

	snprintf(r->env[HENV_NODE], sizeof(r->env[0]), "PGLEADER_NODE_ID=%s", j->node_id);
	snprintf(r->env[HENV_JOB], sizeof(r->env[0]), "PGLEADER_JOB=%s", r->io->cfg->name);
	snprintf(r->env[HENV_TICK], sizeof(r->env[0]), "PGLEADER_TICK=%s",
		 clocks_rfc3339(a->tick, when, sizeof(when)));
	snprintf(r->env[HENV_RUN], sizeof(r->env[0]), "PGLEADER_RUN_ID=%" PRId64, a->run_id);
	snprintf(r->env[HENV_ATTEMPT], sizeof(r->env[0]), "PGLEADER_ATTEMPT=%d", a->attempt);
	snprintf(r->env[HENV_OUTCOME], sizeof(r->env[0]), "PGLEADER_OUTCOME=%s",
		 jobs_outcome_name(a->outcome));
	if (a->status >= 0)
		snprintf(r->env[HENV_EXIT], sizeof(r->env[0]), "PGLEADER_EXIT_STATUS=%d",
			 a->status);
	else
		snprintf(r->env[HENV_EXIT], sizeof(r->env[0]), "PGLEADER_EXIT_STATUS=");
	for (int i = 0; i < HENV_COUNT; i++)
		r->envp[i] = r->env[i];
	r->envp[HENV_COUNT] = NULL;
}

/* The claimed on_failure of a failed run: started; its end is an event. */
static void run_on_failure(struct job_io *io, const struct jobs_action *a)
{
	struct jobs *j = io->owner;
	struct on_failure_run *r = calloc(1, sizeof(*r));
	const char *input;
	size_t len;
	char err[256];

	if (!r) {
		log_error("job %s: out of memory for on_failure", io->cfg->name);
		return;
	}
	r->io = io;
	r->run_id = a->run_id;
	hook_env(r, a);
	on_failure_input(io, a->run_id, &input, &len);
	r->hook = hook_start(j->loop, io->cfg->on_failure, r->envp, input, len, a->after,
			     (double)io->cfg->grace_period_ms / 1000, on_failure_done_cb,
			     r, err, sizeof(err));
	if (!r->hook) {
		struct jobs_event ev = { .type = JOBS_EV_ON_FAILURE_DONE, .job = io->index,
					 .status = 127, .run_id = a->run_id };

		log_error("job %s: %s", io->cfg->name, err);
		free(r);
		feed(j, &ev);
		return;
	}
	r->next = j->hooks;
	j->hooks = r;
}

static void do_log(struct jobs *j, const struct jobs_action *a)
{
	(void)j;
	say(a);
}

static void do_start(struct jobs *j, const struct jobs_action *a)
{
	start(j->job[a->job], a);
}

static void do_gone(struct jobs *j, const struct jobs_action *a)
{
	j->cb.gone(j->cb.arg, a->status);
}

static void do_refused(struct jobs *j, const struct jobs_action *a)
{
	j->cb.refused(j->cb.arg, a->fault, a->text);
}

static void do_on_failure(struct jobs *j, const struct jobs_action *a)
{
	run_on_failure(j->job[a->job], a);
}

static bool job_init(struct jobs *j, size_t i, const struct config_job *cfg);
static bool job_child(struct jobs *j, struct job_io *io);

/* DESIGN 13: a job a reload added, at the end. */
static void do_add(struct jobs *j, const struct jobs_action *a)
{
	struct job_io **job = realloc(j->job, (j->n + 1) * sizeof(*job));
	bool *exited = job ? realloc(j->exited, (j->n + 1) * sizeof(*exited)) : NULL;

	if (job)
		j->job = job;
	if (exited)
		j->exited = exited;
	if (!job || !exited || (size_t)a->job != j->n || !job_init(j, j->n, a->job_cfg)) {
		log_error("jobs: cannot add job %s: out of memory", a->job_cfg->name);
		return;
	}
	j->exited[j->n++] = false;
}

/* Its command (and grace period) as the reload has them; no run goes on. */
static void do_reconfigure(struct jobs *j, const struct jobs_action *a)
{
	struct job_io *io = j->job[a->job];
	const struct config_job *was = io->cfg;

	io->cfg = a->job_cfg;
	if (was->output != io->cfg->output || was->output_tail != io->cfg->output_tail) {
		output_free(io->out); /* the last run's tail goes with it */
		io->out = NULL;
	}
	if (!job_child(j, io))
		log_error("jobs: cannot set job %s's new command: out of memory",
			  io->cfg->name);
}

/* Who carries out each action type. */
static void (*const doers[])(struct jobs *j, const struct jobs_action *a) = {
	[JOBS_DO_LOG] = do_log,
	[JOBS_DO_ENSURE] = ask, [JOBS_DO_CLAIM] = ask, [JOBS_DO_LAST] = ask,
	[JOBS_DO_FINISH] = ask, [JOBS_DO_ANNOUNCE] = ask, [JOBS_DO_PRUNE] = ask,
	[JOBS_DO_TRIGGERS] = ask, [JOBS_DO_LISTEN] = ask,
	[JOBS_DO_START] = do_start,
	[JOBS_DO_STOP] = signal_run, [JOBS_DO_KILL] = signal_run,
	[JOBS_DO_SIGNAL] = signal_run,
	[JOBS_DO_TIMER] = set_timer,
	[JOBS_DO_GONE] = do_gone,
	[JOBS_DO_REFUSED] = do_refused,
	[JOBS_DO_ON_FAILURE_CLAIM] = ask,
	[JOBS_DO_ON_FAILURE] = do_on_failure,
	[JOBS_DO_ADD] = do_add,
	[JOBS_DO_RECONFIGURE] = do_reconfigure,
};

static void carry_out(struct jobs *j, const struct jobs_output *out)
{
	for (size_t i = 0; i < out->n; i++) {
		const struct jobs_action *a = &out->a[i];

		if ((size_t)a->type < sizeof(doers) / sizeof(doers[0]) && doers[a->type])
			doers[a->type](j, a);
	}
}

/* ---- the interface: each call one event ---- */

void jobs_start(struct jobs *j, const struct ledger_term *term)
{
	struct jobs_event ev = { .type = JOBS_EV_LEAD_BEGAN, .job = -1,
				 .term = { term->lock_key, term->fencing_token,
					   term->lock_pid } };

	feed(j, &ev);
}

void jobs_set_lock_pid(struct jobs *j, int lock_pid)
{
	struct jobs_event ev = { .type = JOBS_EV_LOCK_PID, .job = -1,
				 .lock_pid = lock_pid };

	feed(j, &ev);
}

void jobs_stop(struct jobs *j)
{
	struct jobs_event ev = { .type = JOBS_EV_LEAD_ENDING, .job = -1 };

	feed(j, &ev);
}

void jobs_drain(struct jobs *j)
{
	struct jobs_event ev = { .type = JOBS_EV_LEAD_ENDING, .job = -1,
				 .drain = true };

	feed(j, &ev);
}

void jobs_kill(struct jobs *j)
{
	struct jobs_event ev = { .type = JOBS_EV_KILL, .job = -1 };

	feed(j, &ev);
}

void jobs_signal(struct jobs *j, int sig)
{
	struct jobs_event ev = { .type = JOBS_EV_SIGNAL, .job = -1, .sig = sig };

	feed(j, &ev);
}

static void pauses(struct jobs *j, enum jobs_event_type type, bool all,
		   const char *const *names, const char *const *by,
		   const char *const *at, int n, const char *all_by, const char *all_at)
{
	struct jobs_pauses p = { all, names, by, at, n, all_by, all_at };
	struct jobs_event ev = { .type = type, .job = -1, .pauses = &p };

	feed(j, &ev);
}

void jobs_set_paused(struct jobs *j, bool all, const char *const *names,
		     const char *const *by, const char *const *at, int n,
		     const char *all_by, const char *all_at)
{
	pauses(j, JOBS_EV_PAUSES, all, names, by, at, n, all_by, all_at);
}

void jobs_set_resumed(struct jobs *j, bool all, const char *const *names,
		      const char *const *by, const char *const *at, int n,
		      const char *all_by, const char *all_at)
{
	pauses(j, JOBS_EV_RESUMES, all, names, by, at, n, all_by, all_at);
}

size_t jobs_count(const struct jobs *j)
{
	return jobs_state_count(j->state);
}

void jobs_reload(struct jobs *j, const struct config *cfg)
{
	struct jobs_event ev = { .type = JOBS_EV_RELOAD, .job = -1, .cfg = cfg };

	j->cfg = cfg;
	feed(j, &ev);
}

void jobs_view(const struct jobs *j, size_t i, struct jobs_view *v)
{
	jobs_state_view(j->state, i, v);
}

/* ---- set-up ---- */

/* The child of io's job, as its configuration says (again after a
 * reload changed it). */
static bool job_child(struct jobs *j, struct job_io *io)
{
	if (io->child)
		child_free(io->child);
	io->child = child_new(j->loop, io->cfg->command, io->cfg->shell,
			      (double)io->cfg->grace_period_ms / 1000, run_gone_cb, io);
	if (!io->child)
		return false;
	child_set_label(io->child, io->cfg->name);
	child_set_process(io->child, &io->cfg->process);
	if (io->cfg->output == OUTPUT_LOG && !io->out &&
	    !(io->out = output_new(j->loop, io->cfg->name, (size_t)io->cfg->output_tail)))
		return false;
	return true;
}

/* Job i, of configuration cfg, into j->job[i] (room made by the caller). */
static bool job_init(struct jobs *j, size_t i, const struct config_job *cfg)
{
	struct job_io *io = calloc(1, sizeof(*io));

	if (!io)
		return false;
	j->job[i] = io;
	io->owner = j;
	io->index = (int)i;
	io->cfg = cfg;
	for (int t = 0; t < JOBS_TIMER_FLUSH; t++) {
		ev_init(&io->timers[t], timer_cb);
		io->timers[t].data = io;
	}
	for (int k = 0; k < ASK_COUNT; k++)
		io->askers[k] = (struct asker){ j, (int)i,
			k == ASK_REMADE ? JOBS_EV_REMADE : k == ASK_CLAIMED ? JOBS_EV_CLAIMED
			: k == ASK_RECORDED ? JOBS_EV_RECORDED : k == ASK_LAST ? JOBS_EV_LAST
			: JOBS_EV_ON_FAILURE_CLAIMED };
	if (!job_child(j, io)) {
		if (io->child)
			child_free(io->child); /* not yet counted in j->n, which jobs_free frees */
		free(io);
		j->job[i] = NULL;
		return false;
	}
	return true;
}

struct jobs *jobs_new(struct ev_loop *loop, const struct config *cfg,
		      struct ledger *ledger, const struct jobs_callbacks *cb,
		      char *err, size_t errlen)
{
	size_t n = cfg->n_jobs ? cfg->n_jobs : 1;
	struct jobs *j = calloc(1, sizeof(*j));

	if (!j || !(j->job = calloc(n, sizeof(*j->job))) ||
	    !(j->exited = calloc(n, sizeof(*j->exited)))) {
		if (j)
			free(j->job);
		free(j);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	j->loop = loop;
	j->cfg = cfg;
	j->ledger = ledger;
	j->cb = *cb;
	snprintf(j->node_id, sizeof(j->node_id), "%s", cfg->node_id);
	ev_init(&j->flush_timer, flush_cb);
	j->flush_timer.data = j;
	ev_init(&j->drain_timer, jobs_timer_cb);
	j->drain_timer.data = j;
	ev_init(&j->triggers_timer, jobs_timer_cb);
	j->triggers_timer.data = j;
	j->ensure_asker = (struct asker){ j, -1, JOBS_EV_ENSURED };
	j->state = jobs_state_new(cfg, ledger != NULL, err, errlen);
	for (size_t i = 0; j->state && i < cfg->n_jobs; i++, j->n++) {
		if (!job_init(j, i, &cfg->jobs[i])) {
			snprintf(err, errlen, "out of memory");
			jobs_free(j);
			return NULL;
		}
	}
	if (!j->state) {
		jobs_free(j);
		return NULL;
	}
	return j;
}

void jobs_free(struct jobs *j)
{
	if (!j)
		return;
	ev_timer_stop(j->loop, &j->flush_timer);
	ev_timer_stop(j->loop, &j->drain_timer);
	ev_timer_stop(j->loop, &j->triggers_timer);
	while (j->hooks) {
		struct on_failure_run *r = j->hooks;

		j->hooks = r->next;
		hook_free(r->hook);
		free(r);
	}
	for (size_t i = 0; i < j->n; i++) {
		for (int t = 0; t < JOBS_TIMER_FLUSH; t++)
			ev_timer_stop(j->loop, &j->job[i]->timers[t]);
		if (j->job[i]->child)
			child_free(j->job[i]->child);
		output_free(j->job[i]->out);
		free(j->job[i]);
	}
	jobs_state_free(j->state);
	for (int d = 0; d < FEED_DEPTH; d++)
		jobs_output_free(&j->outs[d]);
	free(j->exited);
	free(j->job);
	free(j);
}
