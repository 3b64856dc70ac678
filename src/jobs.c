/* jobs.c: what runs when (DESIGN 10): each job's ticks, claimed in the
 * ledger before they run, and its runs, recorded when they end. The
 * election decides who leads; this layer only runs what a leader runs. */
#include "jobs.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child.h"
#include "clocks.h"
#include "exit_codes.h"
#include "log.h"
#include "schedule.h"
#include "tickplan.h"

/* An older term's run still recorded running: asked about again this
 * often while the term lasts. */
#define RETRY_AFTER 0.2
/* How long a stop waits for the runs' ends to reach the ledger. */
#define FLUSH_FOR 3.0
#define PRUNE_EVERY 60.0
#define RESTART_MIN 1.0
#define RESTART_MAX 30.0

enum job_state {
	JOB_IDLE,       /* no run */
	JOB_CLAIMING,   /* a tick's claim in flight */
	JOB_RUNNING,
	JOB_STOPPING,   /* SIGTERM sent: max_runtime, or the term ended */
};

enum { ENV_NODE, ENV_KEY, ENV_TOKEN, ENV_JOB, ENV_TICK, ENV_RUN, ENV_COUNT };

struct job {
	struct jobs *owner;
	const struct config_job *cfg;
	struct schedule *sched;     /* NULL: runs all the time */
	struct child *child;
	enum job_state state;
	ev_timer tick_timer;        /* the next tick, plus its jitter */
	ev_timer limit_timer;       /* max_runtime; a restart's delay */
	ev_timer wait_timer;        /* an older term's run: ask again */
	bool cutting;               /* the LAST in flight records them cut */
	bool older_logged;
	int64_t next_tick;          /* the server's ms; INT64_MIN: none */
	int64_t last_handled;       /* ticks up to here are planned */
	int64_t claim_tick;
	bool claim_rerun;
	uint64_t claim_gen;         /* the term the claim in flight is for */
	int64_t run_id, run_tick;
	int64_t record_tick;        /* the newest fired tick recorded not run */
	enum jobs_outcome record_outcome;
	uint64_t record_gen;
	bool timed_out, interrupted;
	double run_started;         /* monotonic */
	double restart_backoff;
	bool paused;                /* DESIGN 11: runs nothing */
	bool pause_stop;            /* the run going on is stopped by a pause */
	int64_t resumed_at;         /* the server's ms; INT64_MIN: never paused */
	char paused_by[256], paused_at[64];
	char resumed_by[256], resumed_at_text[64]; /* the last resume, for its line */
	char env[ENV_COUNT][128];
	char *envp[ENV_COUNT + 1];
	struct jobs_view view;
};

struct jobs {
	struct ev_loop *loop;
	const struct config *cfg;
	struct ledger *ledger;      /* NULL: no ledger (a plain command) */
	struct jobs_callbacks cb;
	struct job *job;
	size_t n;
	bool active;                /* between jobs_start and jobs_stop */
	bool stopping;              /* jobs_stop: gone is owed */
	bool begun;                 /* the term's jobs began (the ledger is there) */
	char refusal[LOG_MSG_MAX];  /* a paused one-shot: refused once the
				     * ledger has the runs' ends, not gone */
	uint64_t gen;               /* the term; answers of older ones are stale */
	struct ledger_term term;
	char node_id[64];
	double offset_ms;           /* the server's clock minus ours */
	double offset_err_ms;       /* good to this much when read (INFINITY: never) */
	double offset_at;           /* monotonic, when read */
	ev_timer flush_timer;       /* a stop waits for the runs' ends */
	double flush_until;
	int last_status;
	double last_prune;
	double started_at;          /* monotonic, of this term */
};

static int64_t db_now(const struct jobs *j)
{
	return (int64_t)llround(clocks_monotonic() * 1000 + j->offset_ms);
}

/* How fast our reading of the server's clock may drift from it, at most
 * (both clocks' rates), for the comparison below. */
#define CLOCK_DRIFT 0.001

/* The server's clock as of an answer, its reading taken halfway through
 * the round trip, so good to half the round trip: kept unless it is worse
 * than the reading in hand has become. One slow way (a request that
 * waited out a partition, answered at once) would put it seconds off, and
 * ticks due now would be planned missed (the simulator's finding 10). */
static void sync_clock(struct jobs *j, const struct ledger_answer *a)
{
	double now = clocks_monotonic(), err = a->rtt / 2 * 1000;

	if (!a->ok || !a->db_now ||
	    err > j->offset_err_ms + (now - j->offset_at) * 1000 * CLOCK_DRIFT)
		return;
	j->offset_ms = (double)a->db_now - (now - a->rtt / 2) * 1000;
	j->offset_err_ms = err;
	j->offset_at = now;
}

/* ---- runs ---- */

static void arm_tick(struct job *jb);
static void plan_and_run(struct job *jb, int64_t fired);
static void check_gone(struct jobs *j);
static void end_paused_one_shot(struct job *jb, const char *what);

static void count_outcome(struct job *jb, enum jobs_outcome o)
{
	jb->view.runs[o]++;
}

static void record_duration(struct job *jb, double secs)
{
	size_t b = 0;

	while (b < JOBS_BUCKETS && secs > jobs_duration_bound((int)b))
		b++;
	jb->view.duration_counts[b]++;
	jb->view.duration_count++;
	jb->view.duration_sum += secs;
}

static void set_env(struct job *jb, int64_t tick, int64_t run_id)
{
	struct jobs *j = jb->owner;
	char when[40];

	snprintf(jb->env[ENV_NODE], sizeof(jb->env[0]), "PGLEADER_NODE_ID=%s", j->node_id);
	snprintf(jb->env[ENV_KEY], sizeof(jb->env[0]), "PGLEADER_LOCK_KEY=%" PRId64,
		 j->term.lock_key);
	snprintf(jb->env[ENV_TOKEN], sizeof(jb->env[0]), "PGLEADER_FENCING_TOKEN=%" PRIu64,
		 j->term.fencing_token);
	snprintf(jb->env[ENV_JOB], sizeof(jb->env[0]), "PGLEADER_JOB=%s", jb->cfg->name);
	for (int i = 0; i < ENV_TICK; i++)
		jb->envp[i] = jb->env[i];
	jb->envp[ENV_TICK] = jb->envp[ENV_RUN] = jb->envp[ENV_COUNT] = NULL;
	if (run_id <= 0)
		return;
	snprintf(jb->env[ENV_TICK], sizeof(jb->env[0]), "PGLEADER_TICK=%s",
		 clocks_rfc3339(tick, when, sizeof(when)));
	snprintf(jb->env[ENV_RUN], sizeof(jb->env[0]), "PGLEADER_RUN_ID=%" PRId64, run_id);
	jb->envp[ENV_TICK] = jb->env[ENV_TICK];
	jb->envp[ENV_RUN] = jb->env[ENV_RUN];
}

static void start_run(struct job *jb, int64_t tick, int64_t run_id)
{
	char err[256], when[40];

	set_env(jb, tick, run_id);
	jb->run_id = run_id;
	jb->run_tick = tick;
	jb->timed_out = jb->interrupted = false;
	if (child_start(jb->child, jb->envp, err, sizeof(err)) < 0) {
		log_error("job %s: cannot start its command: %s", jb->cfg->name, err);
		if (run_id > 0)
			ledger_finish(jb->owner->ledger, jb->owner->term.fencing_token,
				      run_id, "failed", EXIT_NOEXEC);
		count_outcome(jb, JOBS_FAILED);
		jb->state = JOB_IDLE;
		return;
	}
	jb->state = JOB_RUNNING;
	jb->run_started = clocks_monotonic();
	jb->view.pid = (int)child_pid(jb->child);
	/* The one line of a start (the child leaves it to us): the job, and
	 * the run and its tick for a scheduled one. */
	if (run_id > 0) {
		jb->view.last_tick = (double)tick / 1000;
		log_event(LOG_LEVEL_INFO, &(struct log_fields){ .command_pid = jb->view.pid },
			  "job %s: started run %" PRId64 " for tick %s (pid %d)",
			  jb->cfg->name, run_id, clocks_rfc3339(tick, when, sizeof(when)),
			  jb->view.pid);
	} else {
		log_event(LOG_LEVEL_INFO, &(struct log_fields){ .command_pid = jb->view.pid },
			  "job %s: started command (pid %d)", jb->cfg->name, jb->view.pid);
	}
	if (jb->cfg->max_runtime_ms > 0 && run_id > 0) {
		ev_timer_set(&jb->limit_timer, (double)jb->cfg->max_runtime_ms / 1000, 0.);
		ev_timer_start(jb->owner->loop, &jb->limit_timer);
	}
}

static enum jobs_outcome outcome_of(const struct job *jb, int status)
{
	if (jb->interrupted)
		return JOBS_INTERRUPTED;
	if (jb->timed_out)
		return JOBS_TIMED_OUT;
	return status == 0 ? JOBS_SUCCEEDED : JOBS_FAILED;
}

/* A job without a schedule runs again after a delay, if its restart
 * policy says so, while the term lasts. */
static void restart_later(struct job *jb, int status, double ran)
{
	bool again = jb->cfg->restart == RESTART_ALWAYS ||
		     (jb->cfg->restart == RESTART_ON_FAILURE && status != 0);

	if (!again || status == EXIT_NOEXEC || status == EXIT_NOTFOUND) {
		log_notice("job %s: its command exited with status %d; not "
			   "restarted (%s) until this node leads again", jb->cfg->name,
			   status, again ? "it cannot be executed" : "restart=no");
		return;
	}
	if (ran >= RESTART_MAX)
		jb->restart_backoff = RESTART_MIN;
	log_notice("job %s: its command exited with status %d; restarting in %.1fs",
		   jb->cfg->name, status, jb->restart_backoff);
	ev_timer_set(&jb->limit_timer, jb->restart_backoff, 0.);
	ev_timer_start(jb->owner->loop, &jb->limit_timer);
	jb->restart_backoff = fmin(jb->restart_backoff * 2, RESTART_MAX);
}

/* What follows a run's end: the end of a one-shot or of a stop, or a job
 * without a schedule started again (at once when a pause stopped it and
 * was lifted meanwhile). */
static void after_run(struct job *jb, int status, double ran)
{
	struct jobs *j = jb->owner;
	bool by_pause = jb->pause_stop;

	jb->pause_stop = false;
	if (j->cfg->once_per_ms > 0 && j->active && by_pause && !j->stopping) {
		end_paused_one_shot(jb, "stopped");
	} else if (j->stopping || (j->cfg->once_per_ms > 0 && j->active)) {
		j->active = false;
		j->stopping = true;
		check_gone(j);
	} else if (j->active && !jb->sched && !jb->paused) {
		if (by_pause)
			start_run(jb, 0, 0);
		else
			restart_later(jb, status, ran);
	}
}

static void run_gone_cb(void *arg, int status)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	enum jobs_outcome o = outcome_of(jb, status);
	double ran = clocks_monotonic() - jb->run_started;

	ev_timer_stop(j->loop, &jb->limit_timer);
	jb->state = JOB_IDLE;
	jb->view.pid = 0;
	j->last_status = status;
	count_outcome(jb, o);
	record_duration(jb, ran);
	if (o == JOBS_SUCCEEDED)
		jb->view.last_success = (double)db_now(j) / 1000;
	if (jb->run_id > 0) {
		log_info("job %s: run %" PRId64 " %s (exit status %d, %.1fs)",
			 jb->cfg->name, jb->run_id, jobs_outcome_name(o), status, ran);
		ledger_finish(j->ledger, j->term.fencing_token, jb->run_id,
			      jobs_outcome_name(o), status);
		if (j->cfg->keep_runs_ms > 0 && clocks_monotonic() - j->last_prune > PRUNE_EVERY) {
			j->last_prune = clocks_monotonic();
			ledger_prune(j->ledger, j->term.lock_key, j->cfg->keep_runs_ms);
		}
	}
	jb->run_id = 0;
	after_run(jb, status, ran);
}

/* max_runtime ran out, or a job without a schedule is due again. */
static void limit_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job *jb = w->data;

	(void)loop;
	(void)revents;
	if (jb->state == JOB_RUNNING) {
		log_warning("job %s: run %" PRId64 " exceeded its max_runtime; stopping it",
			    jb->cfg->name, jb->run_id);
		jb->timed_out = true;
		jb->state = JOB_STOPPING;
		child_stop(jb->child);
	} else if (jb->state == JOB_IDLE && jb->owner->active && !jb->sched &&
		   !jb->paused) {
		start_run(jb, 0, 0);
	}
}

/* ---- claims ---- */

static void claim(struct job *jb, int64_t tick, bool rerun);
static void remake(struct job *jb);

/* A --once-per one-shot whose window was not claimed ends: with the
 * conflict code when it ran already, else as a ledger that cannot be used
 * (the election decides; nothing was started). */
static void once_per_not_run(struct jobs *j, const struct ledger_answer *a,
			     const char *when)
{
	char why[LOG_MSG_MAX];
	enum fault f = FAULT_LEDGER;

	if (!a->ok)
		snprintf(why, sizeof(why), "cannot claim the --once-per window starting "
			 "%s: %s", when, a->error);
	else if (!a->holder || !a->newest)
		snprintf(why, sizeof(why), "the --once-per window starting %s was not "
			 "claimed: %s", when, !a->holder ? "the lock was lost first"
			 : "a newer term's fencing token is recorded for this lock");
	else
		f = FAULT_ALREADY_RUN;
	if (f == FAULT_ALREADY_RUN)
		snprintf(why, sizeof(why), "not run: the --once-per window starting "
			 "%s ran already", when);
	j->active = false;
	j->cb.refused(j->cb.arg, f, why);
}

static void claimed(struct job *jb, const struct ledger_answer *a, const char *when);

/* The answer to a claim of a term that ended while it waited (for the
 * session, for a row lock): a row claimed is recorded interrupted, never
 * run; either way the tick is told, and the next leader plans it from the
 * ledger's newest row (run, or recorded missed). */
static void stale_claim(struct job *jb, const struct ledger_answer *a, const char *when)
{
	struct jobs *j = jb->owner;

	if (a->run_id > 0) {
		log_warning("job %s: tick %s was claimed as this node stopped leading: "
			    "recorded interrupted, not run", jb->cfg->name, when);
		ledger_finish(j->ledger, j->term.fencing_token, a->run_id,
			      "interrupted", -1);
	} else if (a->ok && !a->holder) {
		log_warning("job %s: tick %s not run: this node's lock session no "
			    "longer holds the lock", jb->cfg->name, when);
	} else if (!a->ok) {
		log_warning("job %s: tick %s not claimed: %s", jb->cfg->name, when, a->error);
	}
}

static void claim_cb(void *arg, const struct ledger_answer *a)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	char when[40];

	clocks_rfc3339(jb->claim_tick, when, sizeof(when));
	if (jb->claim_gen != j->gen || !j->active) {
		/* the term ended while the claim was on its way */
		jb->state = JOB_IDLE;
		stale_claim(jb, a, when);
		check_gone(j);
		return;
	}
	jb->state = JOB_IDLE;
	sync_clock(j, a);
	if (a->lost) {
		claim(jb, jb->claim_tick, jb->claim_rerun); /* waits for the session */
		return;
	}
	if (j->cfg->once_per_ms > 0 && (!a->ok || !a->holder || !a->newest || !a->run_id)) {
		once_per_not_run(j, a, when);
		return;
	}
	claimed(jb, a, when);
}

/* A tick that was not claimed or recorded (an error, a timeout, the lock
 * gone) is planned again with the next: recorded missed, or run as the
 * newest missed tick, never silently lost (DESIGN 10). A leader that lost
 * the lock records nothing more, and the next one plans from the ledger's
 * newest row, below this tick. */
static void unclaimed(struct job *jb, int64_t tick)
{
	if (jb->last_handled >= tick)
		jb->last_handled = tick - 1;
}

/* The pause came while the tick's claim was on its way: the tick is
 * recorded paused, not run (its row, claimed running, ends at once). */
static void drop_paused_claim(struct job *jb, int64_t run_id, const char *when)
{
	struct jobs *j = jb->owner;

	log_debug("job %s: tick %s recorded paused, not run", jb->cfg->name, when);
	count_outcome(jb, JOBS_PAUSED);
	ledger_finish(j->ledger, j->term.fencing_token, run_id, "paused", -1);
	if (j->cfg->once_per_ms > 0)
		end_paused_one_shot(jb, "not run");
}

/* The answer to a claim of this term: the tick runs, or why not. */
static void claimed(struct job *jb, const struct ledger_answer *a, const char *when)
{
	if (!a->ok && a->missing) {
		jb->state = JOB_CLAIMING; /* claimed again once it is back */
		remake(jb);
	} else if (!a->ok) {
		log_warning("job %s: tick %s not claimed: %s; it counts as missed",
			    jb->cfg->name, when, a->error);
		unclaimed(jb, jb->claim_tick);
	} else if (a->early) {
		/* our reading of the server's clock ran ahead: the same tick
		 * again once the server reaches it, still due when planned */
		jb->next_tick = jb->claim_tick;
		jb->last_handled = jb->claim_tick - 1;
		arm_tick(jb);
	} else if (!a->holder) {
		log_warning("job %s: tick %s not run: this node's lock session no "
			    "longer holds the lock", jb->cfg->name, when);
		unclaimed(jb, jb->claim_tick);
	} else if (!a->newest) {
		log_error("job %s: tick %s not run: a newer term's fencing token "
			  "is recorded for this lock", jb->cfg->name, when);
	} else if (a->run_id == 0) {
		log_info("job %s: tick %s is recorded already; not run again",
			 jb->cfg->name, when);
	} else if (tickplan_paused(jb->paused, jb->resumed_at, jb->claim_tick)) {
		drop_paused_claim(jb, a->run_id, when);
	} else {
		start_run(jb, jb->claim_tick, a->run_id);
	}
}

static void claim(struct job *jb, int64_t tick, bool rerun)
{
	struct jobs *j = jb->owner;

	jb->state = JOB_CLAIMING;
	jb->claim_tick = tick;
	jb->claim_rerun = rerun;
	jb->claim_gen = j->gen;
	ledger_claim(j->ledger, &j->term, jb->cfg->name, tick, "running", rerun,
		     claim_cb, jb);
}

/* The tick the timer fired for reached the server a moment before its
 * clock did (our reading of it runs a little ahead, as a run's claim may
 * find): recorded again once the server is there, as a claim is. */
static void record_cb(void *arg, const struct ledger_answer *a)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	char when[40];

	if (!j->active)
		return;
	if (!a->ok && !a->lost) {
		/* no row for it (one lost with the session is kept and sent
		 * again): planned again with the next tick, as a claim is */
		log_warning("job %s: tick %s not recorded: %s; it counts as missed",
			    jb->cfg->name, clocks_rfc3339(a->tick, when, sizeof(when)),
			    a->error);
		unclaimed(jb, a->tick);
		return;
	}
	if (jb->record_gen != j->gen)
		return;
	sync_clock(j, a);
	if (!a->ok || !a->early || a->tick != jb->record_tick)
		return;
	jb->view.runs[jb->record_outcome]--; /* counted when sent again */
	jb->next_tick = jb->record_tick;
	jb->last_handled = jb->record_tick - 1;
	arm_tick(jb);
}

/* A tick that is not run is recorded as what it was instead; fired: the
 * tick the timer was set for, which the server may not have reached. */
static void record(struct job *jb, int64_t tick, enum jobs_outcome o, bool fired)
{
	struct jobs *j = jb->owner;

	count_outcome(jb, o);
	if (fired) {
		jb->record_tick = tick;
		jb->record_outcome = o;
		jb->record_gen = j->gen;
	}
	ledger_claim(j->ledger, &j->term, jb->cfg->name, tick, jobs_outcome_name(o),
		     false, record_cb, jb);
}

static void run_tick(struct job *jb, int64_t tick, bool rerun)
{
	char when[40], prev[40];

	if (tickplan_paused(jb->paused, jb->resumed_at, tick)) {
		/* debug: one line a second under @every 1s for as long as the
		 * pause lasts; the pause's own line and the ledger tell it */
		log_debug("job %s: tick %s recorded paused, not run", jb->cfg->name,
			  clocks_rfc3339(tick, when, sizeof(when)));
		record(jb, tick, JOBS_PAUSED, true);
		return;
	}
	if (jb->state == JOB_IDLE) {
		claim(jb, tick, rerun);
		return;
	}
	if (jb->state == JOB_CLAIMING) {
		/* recorded after the claim (one statement at a time, in
		 * order): refused too if that claim finds the lock gone, and
		 * a claim that fails is planned again (unclaimed) */
		log_notice("job %s: tick %s skipped: the claim of tick %s is still "
			   "waiting for the ledger", jb->cfg->name,
			   clocks_rfc3339(tick, when, sizeof(when)),
			   clocks_rfc3339(jb->claim_tick, prev, sizeof(prev)));
		record(jb, tick, JOBS_SKIPPED, true);
		return;
	}
	log_notice("job %s: tick %s skipped: the run for %s is still going",
		   jb->cfg->name, clocks_rfc3339(tick, when, sizeof(when)),
		   clocks_rfc3339(jb->run_tick, prev, sizeof(prev)));
	record(jb, tick, JOBS_SKIPPED, true);
}

static void apply(struct job *jb, const struct tickplan *p)
{
	char when[40];

	/* oldest first: a leader that loses the lock between two of these
	 * statements leaves the older ticks recorded and the newer ones to
	 * the next leader, which plans from the newest row; newest first
	 * left a hole under a row nobody plans below */
	for (int i = p->n_missed - 1; i >= 0; i--)
		/* the newest may be in the server's future (our reading of
		 * its clock runs ahead): sent again once it is there, as the
		 * tick a timer fired for */
		record(jb, p->missed[i], JOBS_MISSED, i == 0 && p->run == INT64_MIN);
	if (p->missed_total > 0)
		log_warning("job %s: %" PRId64 "%s tick%s missed while no node led "
			    "(newest %s)%s", jb->cfg->name, p->missed_total,
			    p->missed_total >= TICKPLAN_COUNT_MAX ? " or more" : "",
			    p->missed_total == 1 ? "" : "s",
			    clocks_rfc3339(p->missed[0], when, sizeof(when)),
			    p->missed_total > p->n_missed ? "; the newest are recorded" : "");
	if (p->run != INT64_MIN)
		run_tick(jb, p->run, false);
	jb->next_tick = p->next;
	arm_tick(jb);
}

static void plan_and_run(struct job *jb, int64_t fired)
{
	struct jobs *j = jb->owner;
	struct tickplan p;
	int64_t now = db_now(j);

	tickplan(jb->sched, jb->last_handled, now, fired,
		  jb->cfg->missed == MISSED_ONCE, jb->cfg->missed_window_ms, &p);
	jb->last_handled = now;
	apply(jb, &p);
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job *jb = w->data;

	(void)loop;
	(void)revents;
	if (jb->owner->active)
		plan_and_run(jb, jb->next_tick);
}

static void arm_tick(struct job *jb)
{
	struct jobs *j = jb->owner;
	int64_t at;

	ev_timer_stop(j->loop, &jb->tick_timer);
	if (jb->next_tick == SCHEDULE_NEVER || jb->next_tick == INT64_MIN)
		return;
	jb->view.next_tick = (double)jb->next_tick / 1000;
	/* a millisecond late: our reading of the server's clock is good to
	 * a fraction of the round trip, and a claim that comes early is
	 * refused and sent again */
	at = jb->next_tick + 1 + schedule_jitter(j->term.lock_key, jb->cfg->name,
						 jb->next_tick, jb->cfg->jitter_ms);
	ev_timer_set(&jb->tick_timer, fmax((double)(at - db_now(j)) / 1000, 0.001), 0.);
	ev_timer_start(j->loop, &jb->tick_timer);
}

/* ---- a new term ---- */

static void ensure(struct jobs *j);
static void ask_last(struct job *jb, bool cut);

/* How long a run of an older term may still be stopping once this node
 * leads: its leader notices the loss within its pings' deadline, then gives
 * the command its grace period (the timing rule's terms, DESIGN 3). */
static double older_run_bound(const struct jobs *j, const struct job *jb)
{
	const struct config *c = j->cfg;

	return (double)(c->ping_interval_ms * c->ping_failures + c->ping_timeout_ms +
			jb->cfg->grace_period_ms) / 1000;
}

/* The ledger told the job's newest tick: its ticks are planned from
 * there, and a cut-off run is run again if asked (not while paused). */
static void first_plan(struct job *jb, const struct ledger_answer *a)
{
	jb->last_handled = a->last_tick;
	if (a->last_success > 0)
		jb->view.last_success = (double)a->last_success / 1000;
	plan_and_run(jb, INT64_MIN);
	if (jb->cfg->rerun_interrupted && a->interrupted != INT64_MIN &&
	    jb->state == JOB_IDLE && !jb->paused)
		claim(jb, a->interrupted, true);
}

static void last_cb(void *arg, const struct ledger_answer *a)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;
	char when[40];

	if (jb->claim_gen != j->gen || !j->active)
		return;
	if (!a->ok && a->missing) {
		remake(jb);
		return;
	}
	if (!a->ok) {
		if (!a->lost)
			log_error("job %s: cannot read the ledger: %s", jb->cfg->name,
				  a->error);
		ask_last(jb, jb->cutting); /* sent when the session is back */
		return;
	}
	sync_clock(j, a);
	if (a->older_running != INT64_MIN) {
		/* DESIGN 3 and issue 17: the old leader's command may still be
		 * stopping (a database restart ended both its sessions, so no
		 * fence keeps this node out): its run's end, or the bound. The
		 * ledger tells only a run of another server (or of none
		 * recorded); one of this server is over, and was cut. */
		bool wait = clocks_monotonic() < j->started_at + older_run_bound(j, jb);

		if (wait && !jb->older_logged)
			log_notice("job %s: the run for tick %s of an older term is still "
				   "recorded running, begun before a database restart or failover; "
				   "waiting up to %.1fs for its end",
				   jb->cfg->name, clocks_rfc3339(a->older_running, when, sizeof(when)),
				   older_run_bound(j, jb));
		jb->older_logged = true;
		if (wait) {
			ev_timer_set(&jb->wait_timer, RETRY_AFTER, 0.);
			ev_timer_start(j->loop, &jb->wait_timer);
		} else {
			ask_last(jb, true);
		}
		return;
	}
	if (a->interrupted != INT64_MIN)
		log_warning("job %s: the run for tick %s was cut off with its leader: "
			    "recorded interrupted%s", jb->cfg->name,
			    clocks_rfc3339(a->interrupted, when, sizeof(when)),
			    jb->cfg->rerun_interrupted ? "; running it again" : "");
	first_plan(jb, a);
}

static void wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job *jb = w->data;

	(void)loop;
	(void)revents;
	if (jb->owner->active)
		ask_last(jb, false);
}

static void ask_last(struct job *jb, bool cut)
{
	jb->claim_gen = jb->owner->gen;
	jb->cutting = cut;
	ledger_last(jb->owner->ledger, &jb->owner->term, jb->cfg->name, cut,
		    last_cb, jb);
}

/* The ledger is there: each job begins its term. */
static void begin(struct jobs *j, int64_t now)
{
	j->begun = true;
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		jb->restart_backoff = RESTART_MIN;
		if (j->cfg->once_per_ms > 0 && jb->paused)
			end_paused_one_shot(jb, "not run");
		else if (j->cfg->once_per_ms > 0)
			claim(jb, schedule_window(jb->cfg->timezone, now,
						  j->cfg->once_per_ms), false);
		else if (jb->sched)
			ask_last(jb, false);
		else if (jb->paused)
			log_info("job %s: paused; not started", jb->cfg->name);
		else
			start_run(jb, 0, 0);
	}
}

/* The ledger cannot be used (DESIGN 10): one line, and nothing runs; the
 * election gives up the lead. */
static void refuse_ledger(struct jobs *j, const struct ledger_answer *a)
{
	char why[LOG_MSG_MAX];

	if (a->untrusted)
		snprintf(why, sizeof(why), "%s", a->error);
	else if (a->denied)
		snprintf(why, sizeof(why), "the ledger in schema %s is there, but "
			 "this role may not read and write its runs and terms: "
			 "grant USAGE on the schema and SELECT, INSERT, UPDATE, "
			 "DELETE on %s.runs and %s.terms (pgleader init-db "
			 "--print-sql --grant-to ROLE shows them)", j->cfg->schema,
			 j->cfg->schema, j->cfg->schema);
	else
		snprintf(why, sizeof(why), "%s%s%s: run pgleader init-db as a role "
			 "that may create it (or --print-sql for a DBA)",
			 a->ok ? "the ledger is missing (schema " : "cannot use the ledger: ",
			 a->ok ? j->cfg->schema : a->error, a->ok ? ") and this role "
			 "may not create it" : "");
	j->active = false;
	j->cb.refused(j->cb.arg, FAULT_LEDGER, why);
}

static bool unusable(const struct ledger_answer *a)
{
	return !a->ok || a->missing || a->denied || a->untrusted;
}

static void ensure_cb(void *arg, const struct ledger_answer *a)
{
	struct jobs *j = arg;

	if (!j->active)
		return;
	if (a->lost) {
		ensure(j);
		return;
	}
	if (unusable(a)) {
		refuse_ledger(j, a);
		return;
	}
	sync_clock(j, a);
	begin(j, a->db_now);
}

/* The ledger was dropped under a job's claim or read: made again when the
 * role may, then the job asks again; else the lead is given up. */
static void remade_cb(void *arg, const struct ledger_answer *a)
{
	struct job *jb = arg;
	struct jobs *j = jb->owner;

	if (jb->claim_gen != j->gen || !j->active) {
		/* the term ended meanwhile: the claim it waited for is off */
		if (jb->state == JOB_CLAIMING)
			jb->state = JOB_IDLE;
		check_gone(j);
		return;
	}
	if (a->lost) {
		remake(jb);
		return;
	}
	if (unusable(a)) {
		refuse_ledger(j, a);
		return;
	}
	sync_clock(j, a);
	if (jb->state == JOB_CLAIMING)
		claim(jb, jb->claim_tick, jb->claim_rerun);
	else
		ask_last(jb, jb->cutting);
}

static void remake(struct job *jb)
{
	log_warning("job %s: the ledger (schema %s) is gone; making it again",
		    jb->cfg->name, jb->owner->cfg->schema);
	jb->claim_gen = jb->owner->gen;
	ledger_ensure(jb->owner->ledger, remade_cb, jb);
}

static void ensure(struct jobs *j)
{
	ledger_ensure(j->ledger, ensure_cb, j);
}

void jobs_start(struct jobs *j, const struct ledger_term *term)
{
	j->gen++;
	j->started_at = clocks_monotonic();
	for (size_t i = 0; i < j->n; i++)
		j->job[i].older_logged = false;
	j->active = true;
	j->stopping = false;
	j->begun = false;
	j->refusal[0] = '\0';
	j->term = *term;
	j->term.node_id = j->node_id;
	if (j->ledger)
		ensure(j);
	else
		begin(j, 0);
}

void jobs_set_lock_pid(struct jobs *j, int lock_pid)
{
	bool changed = j->term.lock_pid != lock_pid;

	j->term.lock_pid = lock_pid;
	if (!changed || !j->active || !j->begun || j->cfg->once_per_ms > 0)
		return;
	/* back from failsafe: the claims and records made meanwhile named
	 * the old session and were refused, so the ticks after the ledger's
	 * newest are planned again, as a new term plans them (run or
	 * recorded missed), instead of being lost without a row */
	for (size_t i = 0; i < j->n; i++) {
		if (!j->job[i].sched)
			continue;
		ev_timer_stop(j->loop, &j->job[i].tick_timer);
		ask_last(&j->job[i], false);
	}
}

/* ---- pauses (DESIGN 11) ---- */

/* " by WHO at T", as far as the controls told. */
static const char *who_paused(const struct job *jb, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", jb->paused_by[0] ? " by " : "", jb->paused_by,
		 jb->paused_at[0] ? " at " : "", jb->paused_at);
	return buf;
}

/* A paused one-shot runs nothing more and ends with the conflict code, the
 * way a window that ran already does, once the ledger has what it wrote;
 * what: "not run" or "stopped". */
static void end_paused_one_shot(struct job *jb, const char *what)
{
	struct jobs *j = jb->owner;
	char who[sizeof(jb->paused_by) + sizeof(jb->paused_at) + 8];

	snprintf(j->refusal, sizeof(j->refusal), "%s: job %s is paused%s "
		 "(pgleader resume lifts it)", what, jb->cfg->name,
		 who_paused(jb, who, sizeof(who)));
	j->active = false;
	j->stopping = true;
	check_gone(j);
}

/* The run going on is stopped gracefully, as the end of a term stops it
 * (recorded interrupted); a pending restart is dropped. */
static void pause_job(struct job *jb)
{
	struct jobs *j = jb->owner;
	char who[sizeof(jb->paused_by) + sizeof(jb->paused_at) + 8];
	bool running = jb->state == JOB_RUNNING || jb->state == JOB_STOPPING;

	who_paused(jb, who, sizeof(who));
	ev_timer_stop(j->loop, &jb->limit_timer);
	if (!running) {
		/* a one-shot says it once, as it ends */
		if (j->cfg->once_per_ms > 0)
			log_debug("job %s paused%s", jb->cfg->name, who);
		else
			log_notice("job %s paused%s", jb->cfg->name, who);
		return;
	}
	log_notice("job %s paused%s: stopping it", jb->cfg->name, who);
	jb->pause_stop = true;
	if (jb->state == JOB_RUNNING) {
		jb->interrupted = !child_exited(jb->child);
		jb->state = JOB_STOPPING;
		child_stop(jb->child);
	}
}

/* A job without a schedule starts at once (its restart policy and
 * backoff start over); a scheduled one runs from its next tick, the
 * ticks before now stay paused (tickplan_paused). */
static void resume_job(struct job *jb)
{
	struct jobs *j = jb->owner;

	jb->resumed_at = db_now(j);
	log_notice("job %s resumed%s%s%s%s", jb->cfg->name,
		   jb->resumed_by[0] ? " by " : "", jb->resumed_by,
		   jb->resumed_at_text[0] ? " at " : "", jb->resumed_at_text);
	if (j->active && j->begun && !jb->sched && j->cfg->once_per_ms == 0 &&
	    jb->state == JOB_IDLE) {
		jb->restart_backoff = RESTART_MIN;
		start_run(jb, 0, 0);
	}
}

void jobs_set_resumed(struct jobs *j, bool all, const char *const *names,
		      const char *const *by, const char *const *at, int n,
		      const char *all_by, const char *all_at)
{
	struct tickplan_pause r;

	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		/* the same lookup as a pause's: by name first, else the lock's */
		tickplan_pause_of(jb->cfg->name, all, names, by, at, n, all_by, all_at, &r);
		snprintf(jb->resumed_by, sizeof(jb->resumed_by), "%s", r.by ? r.by : "");
		snprintf(jb->resumed_at_text, sizeof(jb->resumed_at_text), "%s",
			 r.at ? r.at : "");
	}
}

void jobs_set_paused(struct jobs *j, bool all, const char *const *names,
		     const char *const *by, const char *const *at, int n,
		     const char *all_by, const char *all_at)
{
	struct tickplan_pause p;

	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		tickplan_pause_of(jb->cfg->name, all, names, by, at, n, all_by, all_at, &p);
		snprintf(jb->paused_by, sizeof(jb->paused_by), "%s", p.by ? p.by : "");
		snprintf(jb->paused_at, sizeof(jb->paused_at), "%s", p.at ? p.at : "");
		if (p.paused == jb->paused)
			continue;
		jb->paused = p.paused;
		if (p.paused)
			pause_job(jb);
		else
			resume_job(jb);
	}
}

/* ---- stopping ---- */

static bool runs_left(const struct jobs *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->job[i].state == JOB_RUNNING || j->job[i].state == JOB_STOPPING)
			return true;
	return false;
}

/* Every run is gone: tell once the ledger has their ends, or after a
 * bound (the session may be gone for longer). */
static void flush_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct jobs *j = w->data;

	(void)loop;
	(void)revents;
	check_gone(j);
}

static void check_gone(struct jobs *j)
{
	double now = clocks_monotonic();

	if (!j->stopping || runs_left(j))
		return;
	if (!j->flush_until)
		j->flush_until = now + FLUSH_FOR;
	if (j->ledger && !ledger_idle(j->ledger) && now < j->flush_until) {
		ev_timer_set(&j->flush_timer, 0.02, 0.);
		ev_timer_start(j->loop, &j->flush_timer);
		return;
	}
	if (j->ledger && !ledger_idle(j->ledger))
		log_warning("the ledger did not take every run's end within %.0fs; "
			    "it is sent when the session is back", FLUSH_FOR);
	ev_timer_stop(j->loop, &j->flush_timer);
	j->stopping = false;
	j->flush_until = 0;
	if (j->refusal[0]) {
		char why[LOG_MSG_MAX];

		memcpy(why, j->refusal, sizeof(why));
		j->refusal[0] = '\0';
		j->cb.refused(j->cb.arg, FAULT_ALREADY_RUN, why);
		return;
	}
	j->cb.gone(j->cb.arg, j->last_status);
}

void jobs_stop(struct jobs *j)
{
	j->active = false;
	j->stopping = true;
	j->begun = false;
	j->refusal[0] = '\0'; /* the election's stop: gone is owed */
	j->gen++;
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		ev_timer_stop(j->loop, &jb->tick_timer);
		ev_timer_stop(j->loop, &jb->limit_timer);
		ev_timer_stop(j->loop, &jb->wait_timer);
		jb->view.next_tick = 0;
		if (jb->state == JOB_RUNNING || jb->state == JOB_STOPPING) {
			/* A command that ended by itself before the stop (while
			 * this node was frozen, say) is recorded as it ended. */
			if (!child_exited(jb->child))
				jb->interrupted = true;
			jb->state = JOB_STOPPING;
			child_stop(jb->child);
		}
	}
	check_gone(j);
}

void jobs_kill(struct jobs *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (child_running(j->job[i].child))
			child_kill(j->job[i].child);
}

void jobs_signal(struct jobs *j, int sig)
{
	for (size_t i = 0; i < j->n; i++)
		if (child_running(j->job[i].child))
			child_signal(j->job[i].child, sig);
}

size_t jobs_count(const struct jobs *j)
{
	return j->n;
}

void jobs_view(const struct jobs *j, size_t i, struct jobs_view *v)
{
	const struct job *jb = &j->job[i];

	*v = jb->view;
	v->paused = jb->paused;
	v->paused_by = jb->paused && jb->paused_by[0] ? jb->paused_by : NULL;
	v->paused_at = jb->paused && jb->paused_at[0] ? jb->paused_at : NULL;
}

/* ---- set-up ---- */

static bool job_init(struct jobs *j, struct job *jb, const struct config_job *cfg,
		     char *err, size_t errlen)
{
	jb->owner = j;
	jb->cfg = cfg;
	jb->next_tick = INT64_MIN;
	jb->last_handled = INT64_MIN;
	jb->resumed_at = INT64_MIN;
	jb->view.name = cfg->name;
	ev_init(&jb->tick_timer, tick_cb);
	jb->tick_timer.data = jb;
	ev_init(&jb->limit_timer, limit_cb);
	jb->limit_timer.data = jb;
	ev_init(&jb->wait_timer, wait_cb);
	jb->wait_timer.data = jb;
	if (cfg->schedule) {
		jb->sched = schedule_new(cfg->schedule, cfg->timezone, err, errlen);
		if (!jb->sched)
			return false;
		jb->view.schedule = schedule_expr(jb->sched);
	}
	jb->child = child_new(j->loop, cfg->command, j->cfg->shell,
			      (double)cfg->grace_period_ms / 1000, run_gone_cb, jb);
	if (!jb->child) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	child_set_label(jb->child, cfg->name);
	return true;
}

struct jobs *jobs_new(struct ev_loop *loop, const struct config *cfg,
		      struct ledger *ledger, const struct jobs_callbacks *cb,
		      char *err, size_t errlen)
{
	struct jobs *j = calloc(1, sizeof(*j));

	if (!j || !(j->job = calloc(cfg->n_jobs ? cfg->n_jobs : 1, sizeof(*j->job)))) {
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
	j->last_prune = -PRUNE_EVERY;
	j->offset_err_ms = INFINITY;
	for (size_t i = 0; i < cfg->n_jobs; i++, j->n++) {
		if (!job_init(j, &j->job[i], &cfg->jobs[i], err, errlen)) {
			j->n++;
			jobs_free(j);
			return NULL;
		}
	}
	return j;
}

void jobs_free(struct jobs *j)
{
	if (!j)
		return;
	ev_timer_stop(j->loop, &j->flush_timer);
	for (size_t i = 0; i < j->n; i++) {
		ev_timer_stop(j->loop, &j->job[i].tick_timer);
		ev_timer_stop(j->loop, &j->job[i].limit_timer);
		ev_timer_stop(j->loop, &j->job[i].wait_timer);
		if (j->job[i].child)
			child_free(j->job[i].child);
		schedule_free(j->job[i].sched);
	}
	free(j->job);
	free(j);
}
