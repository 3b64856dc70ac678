/* jobs.c: the job layer's effector (DESIGN 14): the calls of jobs.h,
 * the ledger's answers, the commands' exits and the timers become events
 * of jobs_step.c, which decides; their actions are carried out here, in
 * order: ledger statements (ledger.h), commands (child.h), timers (libev)
 * and log lines. Nothing here decides what runs when. */
#include "jobs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "clocks.h"
#include "log.h"

#define FEED_DEPTH 4

enum { ENV_NODE, ENV_KEY, ENV_TOKEN, ENV_JOB, ENV_TICK, ENV_RUN, ENV_COUNT };

/* Whose answer a ledger callback carries. */
enum { ASK_REMADE, ASK_CLAIMED, ASK_RECORDED, ASK_LAST, ASK_COUNT };
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
	ev_timer timers[JOBS_TIMER_FLUSH]; /* TICK, LIMIT, WAIT */
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
	ev_timer drain_timer;       /* drain_timeout (DESIGN 13) */
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
	};
	snprintf(to->error, sizeof(to->error), "%s", a->error);
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

static void drain_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct jobs_event ev = { .type = JOBS_EV_TIMER, .job = -1,
				 .timer = JOBS_TIMER_DRAIN };

	(void)loop;
	(void)revents;
	feed(w->data, &ev);
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
	io->envp[ENV_TICK] = io->envp[ENV_RUN] = io->envp[ENV_COUNT] = NULL;
	if (a->run_id <= 0)
		return;
	snprintf(io->env[ENV_TICK], sizeof(io->env[0]), "PGLEADER_TICK=%s",
		 clocks_rfc3339(a->tick, when, sizeof(when)));
	snprintf(io->env[ENV_RUN], sizeof(io->env[0]), "PGLEADER_RUN_ID=%" PRId64,
		 a->run_id);
	io->envp[ENV_TICK] = io->env[ENV_TICK];
	io->envp[ENV_RUN] = io->env[ENV_RUN];
}

static void start(struct job_io *io, const struct jobs_action *a)
{
	char err[256];
	struct jobs_event ev = { .job = io->index };

	set_env(io, a);
	if (child_start(io->child, io->envp, err, sizeof(err)) < 0) {
		ev.type = JOBS_EV_START_FAILED;
		ev.error = err;
	} else {
		ev.type = JOBS_EV_RUN_STARTED;
		ev.pid = (int)child_pid(io->child);
	}
	feed(io->owner, &ev);
}

static void set_timer(struct jobs *j, const struct jobs_action *a)
{
	ev_timer *w = a->job >= 0 ? &j->job[a->job]->timers[a->timer]
		      : a->timer == JOBS_TIMER_DRAIN ? &j->drain_timer : &j->flush_timer;

	if (a->after >= 0 && !a->restart && ev_is_active(w))
		return; /* as libev's ev_timer_start: it keeps its time */
	ev_timer_stop(j->loop, w);
	if (a->after < 0)
		return;
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
		ledger_claim(j->ledger, &t, io->cfg->name, a->tick,
			     jobs_outcome_name(a->outcome), a->rerun, answered_cb,
			     &io->askers[a->record ? ASK_RECORDED : ASK_CLAIMED]);
	else if (a->type == JOBS_DO_LAST)
		ledger_last(j->ledger, &t, io->cfg->name, a->cut, answered_cb,
			    &io->askers[ASK_LAST]);
	else if (a->type == JOBS_DO_FINISH)
		ledger_finish(j->ledger, a->term.fencing_token, a->run_id,
			      jobs_outcome_name(a->outcome), a->status);
	else if (a->type == JOBS_DO_ANNOUNCE)
		announce(j, a, &t);
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

	io->cfg = a->job_cfg;
	if (!job_child(j, io))
		log_error("jobs: cannot set job %s's new command: out of memory",
			  io->cfg->name);
}

/* Who carries out each action type. */
static void (*const does[])(struct jobs *j, const struct jobs_action *a) = {
	[JOBS_DO_LOG] = do_log,
	[JOBS_DO_ENSURE] = ask, [JOBS_DO_CLAIM] = ask, [JOBS_DO_LAST] = ask,
	[JOBS_DO_FINISH] = ask, [JOBS_DO_ANNOUNCE] = ask, [JOBS_DO_PRUNE] = ask,
	[JOBS_DO_START] = do_start,
	[JOBS_DO_STOP] = signal_run, [JOBS_DO_KILL] = signal_run,
	[JOBS_DO_SIGNAL] = signal_run,
	[JOBS_DO_TIMER] = set_timer,
	[JOBS_DO_GONE] = do_gone,
	[JOBS_DO_REFUSED] = do_refused,
	[JOBS_DO_ADD] = do_add,
	[JOBS_DO_RECONFIGURE] = do_reconfigure,
};

static void carry_out(struct jobs *j, const struct jobs_output *out)
{
	for (size_t i = 0; i < out->n; i++) {
		const struct jobs_action *a = &out->a[i];

		if ((size_t)a->type < sizeof(does) / sizeof(does[0]) && does[a->type])
			does[a->type](j, a);
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
	io->child = child_new(j->loop, io->cfg->command, j->cfg->shell,
			      (double)io->cfg->grace_period_ms / 1000, run_gone_cb, io);
	if (!io->child)
		return false;
	child_set_label(io->child, io->cfg->name);
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
			: k == ASK_RECORDED ? JOBS_EV_RECORDED : JOBS_EV_LAST };
	return job_child(j, io);
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
	ev_init(&j->drain_timer, drain_cb);
	j->drain_timer.data = j;
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
	for (size_t i = 0; i < j->n; i++) {
		for (int t = 0; t < JOBS_TIMER_FLUSH; t++)
			ev_timer_stop(j->loop, &j->job[i]->timers[t]);
		if (j->job[i]->child)
			child_free(j->job[i]->child);
		free(j->job[i]);
	}
	jobs_state_free(j->state);
	for (int d = 0; d < FEED_DEPTH; d++)
		jobs_output_free(&j->outs[d]);
	free(j->exited);
	free(j->job);
	free(j);
}
