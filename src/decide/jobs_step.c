/* jobs_step.c: what runs when (DESIGN 10): each job's ticks, claimed in
 * the ledger before they run, and its runs, recorded when they end. The
 * election decides who leads; this layer only decides what a leader runs.
 * Pure: every statement, command, timer and log line is an action. */
#include "jobs_step.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks.h" /* clocks_rfc3339 only: this file reads no clock */
#include "exit_codes.h"
#include "jobs_retry.h"
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

/* A failed run's on_failure claims in flight, at most (answered in order). */
#define NOTICES 8
/* Requests to run now a job keeps, at most: the rest wait in the ledger
 * for the next read. */
#define PENDING 8

/* A failed run whose on_failure is to be claimed (DESIGN 13). */
struct notice {
	int64_t run_id, tick;
	int attempt, status;
	enum jobs_outcome outcome;
	bool manual;                /* a run asked for now: never retried */
};

/* A request to run now (DESIGN 13) that waits for the job's run. */
struct pending {
	int64_t id, tick;
	char by[192];
};

/* The next attempt of a tick whose run failed: due at the server's due
 * ms; the failed run's facts for its on_failure if it never comes. */
struct retry {
	bool on;
	int64_t tick, due;
	int attempt;
	struct notice failed;
};

enum job_phase {
	JOB_IDLE,       /* no run */
	JOB_CLAIMING,   /* a tick's claim in flight */
	JOB_STARTING,   /* JOBS_DO_START sent: RUN_STARTED or START_FAILED next */
	JOB_RUNNING,
	JOB_STOPPING,   /* SIGTERM sent: max_runtime, or the term ended */
};

struct job {
	struct jobs_state *owner;
	int index;
	const struct config_job *cfg;
	struct schedule *sched;     /* NULL: runs all the time */
	enum job_phase state;
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
	int claim_attempt, run_attempt; /* DESIGN 13: the claim's, the run's */
	int64_t claim_trigger;      /* the request to run now the claim in flight
				     * is for; 0: a tick */
	char claim_by[192];         /* and who asked it */
	bool run_manual;            /* the run going on was asked for now */
	struct pending pend[PENDING]; /* requests to run now, oldest first */
	int n_pend;
	bool planned;               /* this term planned its ticks: an older
				     * term's run is over */
	bool catching_up;           /* apply() records missed ticks: no tick of
				     * the plan is queued (below them, it would
				     * be lost with the lead) */
	int64_t regained;           /* the server's ms the lock came back with a
				     * new session (failsafe), for the plan
				     * after it; INT64_MIN: none */
	int64_t first_planned;      /* the server's ms this term first planned
				     * the job, which had no row; INT64_MIN */
	int64_t queued;             /* DESIGN 13, overlap: the tick that runs
				     * once the run going on ends; INT64_MIN:
				     * none */
	struct retry retry;
	struct notice notices[NOTICES]; /* on_failure claims in flight, oldest first */
	int n_notices;
	int64_t sent[NOTICES];      /* the runs whose on_failure this node ran, newest */
	int n_sent;                 /* (a ring): never claimed again by this term */
	bool removed;               /* a reload removed it (DESIGN 13) */
	bool reconfigure;           /* a reload changed it: its command is set
				     * anew once its run ends */
	bool seen;                  /* in the file a reload read */
	struct jobs_view view;
};

struct jobs_state {
	const struct config *cfg;
	bool has_ledger;            /* false: no ledger (a plain command) */
	struct job *job;
	size_t n;
	bool active;                /* between LEAD_BEGAN and LEAD_ENDING */
	bool stopping;              /* LEAD_ENDING: gone is owed */
	bool begun;                 /* the term's jobs began (the ledger is there) */
	bool draining;              /* LEAD_ENDING with drain: runs finish */
	char refusal[LOG_MSG_MAX];  /* a paused one-shot: refused once the
				     * ledger has the runs' ends, not gone */
	uint64_t gen;               /* the term; answers of older ones are stale */
	struct jobs_term term;
	double offset_ms;           /* the server's clock minus ours */
	double offset_err_ms;       /* good to this much when read (INFINITY: never) */
	double offset_at;           /* monotonic, when read */
	double flush_until;
	double drain_until;         /* monotonic; 0: no drain bound set */
	uint64_t announced;         /* the announcements sent (DESIGN 13) */
	bool reading;               /* a read of the requests to run now is on
				     * its way */
	bool reread;                /* ... and one was written since it went */
	uint64_t read_gen;          /* the term it was sent for */
	bool stranger_said;         /* this term said a request names no job */
	int last_status;
	double last_prune;
	double started_at;          /* monotonic, of this term */
	/* the step under way */
	double now;
	const struct jobs_event *ev;
	struct jobs_output *out;
	bool sent;                  /* a ledger statement among its actions */
};

/* ---- actions ---- */

static struct jobs_action *act(struct jobs_state *j, enum jobs_action_type type,
			       int job)
{
	static struct jobs_action dropped;
	struct jobs_output *o = j->out;

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct jobs_action *a = realloc(o->a, cap * sizeof(*a));

		if (!a) {
			o->lost = true;
			return &dropped;
		}
		o->a = a;
		o->cap = cap;
	}
	memset(&o->a[o->n], 0, offsetof(struct jobs_action, text));
	o->a[o->n].text[0] = '\0';
	o->a[o->n].type = type;
	o->a[o->n].job = job;
	o->a[o->n].term = j->term;
	if ((type >= JOBS_DO_ENSURE && type <= JOBS_DO_PRUNE) ||
	    type == JOBS_DO_ON_FAILURE_CLAIM)
		j->sent = true;
	return &o->a[o->n++];
}

__attribute__((format(printf, 4, 5)))
static void say_pid(struct jobs_state *j, enum log_level level, int pid,
		    const char *fmt, ...)
{
	struct jobs_action *a = act(j, JOBS_DO_LOG, -1);
	va_list ap;

	a->level = level;
	a->pid = pid;
	va_start(ap, fmt);
	vsnprintf(a->text, sizeof(a->text), fmt, ap);
	va_end(ap);
}
#define say(j, level, ...) say_pid(j, level, 0, __VA_ARGS__)

static void timer(struct job *jb, enum jobs_timer t, double after)
{
	struct jobs_action *a = act(jb->owner, JOBS_DO_TIMER, jb->index);

	a->timer = t;
	a->after = after;
	/* the next tick, or attempt, is set anew */
	a->restart = t == JOBS_TIMER_TICK || t == JOBS_TIMER_RETRY;
}

static struct jobs_action *finish(struct jobs_state *j, int64_t run_id,
				  enum jobs_outcome o, int status)
{
	struct jobs_action *a = act(j, JOBS_DO_FINISH, -1);

	a->run_id = run_id;
	a->outcome = o;
	a->status = status;
	return a;
}

static void refused(struct jobs_state *j, enum fault f, const char *why)
{
	struct jobs_action *a = act(j, JOBS_DO_REFUSED, -1);

	a->fault = f;
	snprintf(a->text, sizeof(a->text), "%s", why);
}

static int64_t db_now(const struct jobs_state *j)
{
	return (int64_t)llround(j->now * 1000 + j->offset_ms);
}

/* How fast our reading of the server's clock may drift from it, at most
 * (both clocks' rates), for the comparison below. */
#define CLOCK_DRIFT 0.001

/* The server's clock as of an answer, its reading taken halfway through
 * the round trip, so good to half the round trip: kept unless it is worse
 * than the reading in hand has become. One slow way (a request that
 * waited out a partition, answered at once) would put it seconds off, and
 * ticks due now would be planned missed (the simulator's finding 10). */
static void sync_clock(struct jobs_state *j, const struct jobs_answer *a)
{
	double now = j->now, err = a->rtt / 2 * 1000;

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
static void check_gone(struct jobs_state *j);
static void end_paused_one_shot(struct job *jb, const char *what);
static void run_ended(struct job *jb, enum jobs_outcome o, int status);
static void retry_due(struct job *jb);
static void retry_overtaken(struct job *jb);
static void retry_catch_up(struct job *jb, const struct jobs_answer *a);
static bool retry_claimed_late(struct job *jb, const struct jobs_answer *a);
static void failed_for_good(struct job *jb, const struct notice *n);

static void reconfigure_if_due(struct job *jb);

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

/* The command is started by the effector, which tells RUN_STARTED or
 * START_FAILED at once. */
static bool removed_start(struct job *jb, int64_t run_id);

static void start_run(struct job *jb, int64_t tick, int64_t run_id)
{
	struct jobs_action *a;

	if (removed_start(jb, run_id))
		return;
	a = act(jb->owner, JOBS_DO_START, jb->index);

	a->tick = tick;
	a->run_id = run_id;
	a->attempt = jb->run_attempt;
	jb->run_id = run_id;
	jb->run_tick = tick;
	jb->timed_out = jb->interrupted = false;
	jb->run_manual = false;
	jb->state = JOB_STARTING;
}

static void start_failed(struct job *jb, const char *err)
{
	say(jb->owner, LOG_LEVEL_ERROR, "job %s: cannot start its command: %s",
	    jb->cfg->name, err);
	if (jb->run_id > 0)
		finish(jb->owner, jb->run_id, JOBS_FAILED, EXIT_NOEXEC);
	count_outcome(jb, JOBS_FAILED);
	jb->state = JOB_IDLE;
}

static void replace_run(struct job *jb);

static void run_started(struct job *jb, int pid)
{
	char when[40];

	jb->state = JOB_RUNNING;
	jb->run_started = jb->owner->now;
	jb->view.pid = pid;
	/* The one line of a start (the child leaves it to us): the job, and
	 * the run and its tick for a scheduled one. */
	if (jb->run_id > 0 && jb->run_manual) {
		say_pid(jb->owner, LOG_LEVEL_INFO, pid, "job %s: started run %" PRId64
			" asked for now by %s at %s (pid %d)", jb->cfg->name, jb->run_id,
			jb->claim_by, clocks_rfc3339(jb->run_tick, when, sizeof(when)), pid);
	} else if (jb->run_id > 0) {
		jb->view.last_tick = (double)jb->run_tick / 1000;
		say_pid(jb->owner, LOG_LEVEL_INFO, pid,
			"job %s: started run %" PRId64 " for tick %s (pid %d)",
			jb->cfg->name, jb->run_id,
			clocks_rfc3339(jb->run_tick, when, sizeof(when)), pid);
	} else {
		say_pid(jb->owner, LOG_LEVEL_INFO, pid, "job %s: started command (pid %d)",
			jb->cfg->name, pid);
	}
	if (jb->cfg->max_runtime_ms > 0 && jb->run_id > 0)
		timer(jb, JOBS_TIMER_LIMIT, (double)jb->cfg->max_runtime_ms / 1000);
	if (jb->queued != INT64_MIN && jb->cfg->overlap == OVERLAP_REPLACE)
		replace_run(jb); /* the tick came while it started */
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
	struct jobs_state *j = jb->owner;
	bool again = jb->cfg->restart == RESTART_ALWAYS ||
		     (jb->cfg->restart == RESTART_ON_FAILURE && status != 0);

	if (!again || status == EXIT_NOEXEC || status == EXIT_NOTFOUND) {
		say(j, LOG_LEVEL_NOTICE, "job %s: its command exited with status %d; not "
		    "restarted (%s) until this node leads again", jb->cfg->name,
		    status, again ? "it cannot be executed" : "restart=no");
		return;
	}
	if (ran >= RESTART_MAX)
		jb->restart_backoff = RESTART_MIN;
	say(j, LOG_LEVEL_NOTICE, "job %s: its command exited with status %d; "
	    "restarting in %.1fs", jb->cfg->name, status, jb->restart_backoff);
	timer(jb, JOBS_TIMER_LIMIT, jb->restart_backoff);
	jb->restart_backoff = fmin(jb->restart_backoff * 2, RESTART_MAX);
}

/* What follows a run's end: the end of a one-shot or of a stop, or a job
 * without a schedule started again (at once when a pause stopped it and
 * was lifted meanwhile). */
static void after_run(struct job *jb, int status, double ran)
{
	struct jobs_state *j = jb->owner;
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

/* The line that says how a run ended (DESIGN 13): a warning unless it
 * succeeded, so that --log-level warning shows every run that did not,
 * with its tick, its run id and the last line it printed. */
static void say_run_end(struct job *jb, enum jobs_outcome o, int status, double ran,
			const char *last_line)
{
	char when[40];
	bool quoted = last_line && *last_line;

	say(jb->owner, o == JOBS_SUCCEEDED ? LOG_LEVEL_INFO : LOG_LEVEL_WARNING,
	    "job %s: run %" PRId64 " for tick %s %s (exit status %d, %.1fs)%s%s",
	    jb->cfg->name, jb->run_id, clocks_rfc3339(jb->run_tick, when, sizeof(when)),
	    jobs_outcome_name(o), status, ran, quoted ? "; last output line: " : "",
	    quoted ? last_line : "");
}

static void run_gone(struct job *jb, int status, const char *last_line)
{
	struct jobs_state *j = jb->owner;
	enum jobs_outcome o = outcome_of(jb, status);
	double ran = j->now - jb->run_started;

	timer(jb, JOBS_TIMER_LIMIT, -1);
	jb->state = JOB_IDLE;
	jb->view.pid = 0;
	j->last_status = status;
	count_outcome(jb, o);
	record_duration(jb, ran);
	if (o == JOBS_SUCCEEDED)
		jb->view.last_success = (double)db_now(j) / 1000;
	if (jb->run_id > 0) {
		say_run_end(jb, o, status, ran, last_line);
		run_ended(jb, o, status);
		if (j->cfg->keep_runs_ms > 0 && j->now - j->last_prune > PRUNE_EVERY) {
			j->last_prune = j->now;
			act(j, JOBS_DO_PRUNE, -1)->keep_ms = j->cfg->keep_runs_ms;
		}
	}
	jb->run_id = 0;
	reconfigure_if_due(jb);
	after_run(jb, status, ran);
}

/* max_runtime ran out, or a job without a schedule is due again. */
static void limit_out(struct job *jb)
{
	if (jb->state == JOB_RUNNING) {
		say(jb->owner, LOG_LEVEL_WARNING, "job %s: run %" PRId64 " exceeded its "
		    "max_runtime; stopping it", jb->cfg->name, jb->run_id);
		jb->timed_out = true;
		jb->state = JOB_STOPPING;
		act(jb->owner, JOBS_DO_STOP, jb->index);
	} else if (jb->state == JOB_IDLE && jb->owner->active && !jb->sched &&
		   !jb->paused) {
		start_run(jb, 0, 0);
	}
}

/* ---- claims ---- */

static void claim(struct job *jb, int64_t tick, bool rerun);
static void claim_attempt(struct job *jb, int64_t tick, bool rerun, int attempt);
static void remake(struct job *jb);

/* A --once-per one-shot whose window was not claimed ends: with the
 * conflict code when it ran already, else as a ledger that cannot be used
 * (the election decides; nothing was started). */
static void once_per_not_run(struct jobs_state *j, const struct jobs_answer *a,
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
	refused(j, f, why);
}

static void claimed(struct job *jb, const struct jobs_answer *a, const char *when);

/* The answer to a claim of a term that ended while it waited (for the
 * session, for a row lock): a row claimed is recorded interrupted, never
 * run; either way the tick is told, and the next leader plans it from the
 * ledger's newest row (run, or recorded missed). */
static void stale_claim(struct job *jb, const struct jobs_answer *a, const char *when)
{
	struct jobs_state *j = jb->owner;

	if (a->run_id > 0) {
		say(j, LOG_LEVEL_WARNING, "job %s: tick %s was claimed as this node "
		    "stopped leading: recorded interrupted, not run", jb->cfg->name, when);
		finish(j, a->run_id, JOBS_INTERRUPTED, -1);
	} else if (a->ok && !a->holder) {
		say(j, LOG_LEVEL_WARNING, "job %s: tick %s not run: this node's lock "
		    "session no longer holds the lock", jb->cfg->name, when);
	} else if (!a->ok) {
		say(j, LOG_LEVEL_WARNING, "job %s: tick %s not claimed: %s", jb->cfg->name,
		    when, a->error);
	}
}

static void claim_answered(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;
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
		/* waits for the session */
		claim_attempt(jb, jb->claim_tick, jb->claim_rerun, jb->claim_attempt);
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
	/* a retry's claim that failed ends its tick's retries: the tick
	 * itself was claimed and run */
	if ((jb->claim_attempt > 1 || jb->claim_trigger) && tick == jb->claim_tick)
		return;
	if (jb->last_handled >= tick)
		jb->last_handled = tick - 1;
	/* a tick queued behind it is planned again with it (DESIGN 13) */
	if (jb->queued >= tick)
		jb->queued = INT64_MIN;
}

/* The pause came while the tick's claim was on its way: the tick is
 * recorded paused, not run (its row, claimed running, ends at once). */
static void drop_paused_claim(struct job *jb, int64_t run_id, const char *when)
{
	struct jobs_state *j = jb->owner;

	say(j, LOG_LEVEL_DEBUG, "job %s: tick %s recorded paused, not run",
	    jb->cfg->name, when);
	count_outcome(jb, JOBS_PAUSED);
	finish(j, run_id, JOBS_PAUSED, -1);
	if (j->cfg->once_per_ms > 0)
		end_paused_one_shot(jb, "not run");
}

/* How long ago, at most, the server ran the statement that a answers:
 * its round trip, or less when our reading of the server's clock (good to
 * its error, sync_clock) shows that the statement went out late and its
 * answer came back at once. */
static double answer_age(const struct jobs_state *j, const struct jobs_answer *a)
{
	double err;

	if (!a->db_now || !isfinite(j->offset_err_ms))
		return a->rtt;
	err = j->offset_err_ms + (j->now - j->offset_at) * 1000 * CLOCK_DRIFT;
	return fmin(a->rtt, fmax((double)(db_now(j) - a->db_now) + err, 0) / 1000);
}

/* A claim's answer read more than ping_timeout after the server ran it
 * (the node was frozen or stalled meanwhile) proves nothing about now: the
 * lock was held then, but the fence session, idle since, may have ended by
 * server_lease and a new leader, holding the fence, may have cut the run
 * as gone and run the next tick. A ping answered as late is a failed one;
 * the timing rule (DESIGN 3) keeps ping_timeout + grace_period inside
 * server_lease, so a run started within ping_timeout of its claim is
 * stopped before that fence session can end. Its row is recorded
 * interrupted, not run; a retry's failure before it was the tick's last. */
static bool claimed_too_late(struct job *jb, const struct jobs_answer *a, const char *when)
{
	struct jobs_state *j = jb->owner;
	double bound = (double)j->cfg->ping_timeout_ms / 1000, age = answer_age(j, a);

	/* a --once-per window is claimed once across the fleet, by its row:
	 * no other node runs it, whenever the answer is read */
	if (!(age > bound) || j->cfg->once_per_ms > 0)
		return false;
	say(j, LOG_LEVEL_WARNING, "job %s: tick %s not run: its claim's answer was "
	    "read %.1fs after the server ran it, over ping_timeout (%.1fs); this node "
	    "may have lost the lead meanwhile: recorded interrupted", jb->cfg->name,
	    when, age, bound);
	count_outcome(jb, JOBS_INTERRUPTED);
	finish(j, a->run_id, JOBS_INTERRUPTED, -1);
	if (jb->claim_attempt > 1 && jb->retry.failed.tick == jb->claim_tick &&
	    jb->retry.failed.attempt == jb->claim_attempt - 1)
		failed_for_good(jb, &jb->retry.failed);
	return true;
}

static bool replaced_before_start(struct job *jb, int64_t run_id);

/* A claim of a request to run now (DESIGN 13) that failed, or that found
 * the request claimed already or withdrawn: said, true. */
static bool request_not_claimed(struct job *jb, const struct jobs_answer *a,
				const char *when)
{
	struct jobs_state *j = jb->owner;

	if (!jb->claim_trigger)
		return false;
	if (!a->ok) {
		say(j, LOG_LEVEL_WARNING, "job %s: the run asked for now by %s at %s not "
		    "claimed: %s; claimed again after the next read", jb->cfg->name,
		    jb->claim_by, when, a->error);
		return true;
	}
	if (a->early || !a->holder || !a->newest || a->run_id != 0)
		return false;
	say(j, LOG_LEVEL_INFO, "job %s: the run asked for now by %s at %s was claimed "
	    "already or withdrawn; not run", jb->cfg->name, jb->claim_by, when);
	return true;
}

/* The claimed tick is paused, or fell before the resume; a request to
 * run now only while paused (the claim went out before the pause). */
static bool claim_paused(const struct job *jb)
{
	return tickplan_paused(jb->paused, jb->claim_trigger ? INT64_MIN : jb->resumed_at,
			       jb->claim_tick);
}

/* A claimed run not to start: a newer tick won while its claim waited (a
 * retry's, or one a queued tick replaces), or its answer was read too
 * late to trust; each recorded and said. */
static bool overtaken(struct job *jb, const struct jobs_answer *a, const char *when)
{
	return retry_claimed_late(jb, a) || replaced_before_start(jb, a->run_id) ||
	       claimed_too_late(jb, a, when);
}

/* The answer to a claim of this term: the tick runs, or why not. */
static void claimed(struct job *jb, const struct jobs_answer *a, const char *when)
{
	struct jobs_state *j = jb->owner;

	if (!a->ok && a->missing) {
		jb->state = JOB_CLAIMING; /* claimed again once it is back */
		remake(jb);
	} else if (request_not_claimed(jb, a, when)) {
		/* said; the request stays for the next read, or it is gone */
	} else if (!a->ok) {
		say(j, LOG_LEVEL_WARNING, "job %s: tick %s not claimed: %s; it counts "
		    "as missed", jb->cfg->name, when, a->error);
		unclaimed(jb, jb->claim_tick);
	} else if (a->early) {
		/* our reading of the server's clock ran ahead: the same tick
		 * again once the server reaches it, still due when planned */
		jb->next_tick = jb->claim_tick;
		jb->last_handled = jb->claim_tick - 1;
		arm_tick(jb);
	} else if (!a->holder) {
		say(j, LOG_LEVEL_WARNING, "job %s: tick %s not run: this node's lock "
		    "session no longer holds the lock", jb->cfg->name, when);
		unclaimed(jb, jb->claim_tick);
	} else if (!a->newest) {
		say(j, LOG_LEVEL_ERROR, "job %s: tick %s not run: a newer term's fencing "
		    "token is recorded for this lock", jb->cfg->name, when);
	} else if (a->run_id == 0) {
		say(j, LOG_LEVEL_INFO, "job %s: tick %s is recorded already; not run again",
		    jb->cfg->name, when);
	} else if (claim_paused(jb)) {
		drop_paused_claim(jb, a->run_id, when);
	} else if (overtaken(jb, a, when)) {
		/* the newer tick won while the claim waited, or a stale answer */
	} else {
		jb->run_attempt = jb->claim_attempt;
		if (jb->run_attempt > 1)
			jb->view.retries++;
		jb->view.triggers += jb->claim_trigger != 0;
		start_run(jb, jb->claim_tick, a->run_id);
		jb->run_manual = jb->claim_trigger != 0;
	}
}

/* attempt: 1, or 2 .. retries+1 for a retry of the tick (DESIGN 13). */
static void claim_attempt(struct job *jb, int64_t tick, bool rerun, int attempt)
{
	struct jobs_state *j = jb->owner;
	struct jobs_action *a;

	jb->state = JOB_CLAIMING;
	jb->claim_tick = tick;
	jb->claim_rerun = rerun;
	jb->claim_attempt = attempt;
	jb->claim_gen = j->gen;
	a = act(j, JOBS_DO_CLAIM, jb->index);
	a->tick = tick;
	a->outcome = JOBS_RUNNING;
	a->rerun = rerun;
	a->attempt = attempt;
	a->trigger = jb->claim_trigger;
}

/* A tick's attempt (not a request to run now). */
static void claim_tick_attempt(struct job *jb, int64_t tick, bool rerun, int attempt)
{
	jb->claim_trigger = 0;
	claim_attempt(jb, tick, rerun, attempt);
}

static void claim(struct job *jb, int64_t tick, bool rerun)
{
	claim_tick_attempt(jb, tick, rerun, 1);
}

/* The tick the timer fired for reached the server a moment before its
 * clock did (our reading of it runs a little ahead, as a run's claim may
 * find): recorded again once the server is there, as a claim is. */
static void recorded(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;
	char when[40];

	if (!j->active)
		return;
	if (!a->ok && !a->lost) {
		/* no row for it (one lost with the session is kept and sent
		 * again): planned again with the next tick, as a claim is */
		say(j, LOG_LEVEL_WARNING, "job %s: tick %s not recorded: %s; it counts "
		    "as missed", jb->cfg->name, clocks_rfc3339(a->tick, when, sizeof(when)),
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
	struct jobs_state *j = jb->owner;
	struct jobs_action *a;

	count_outcome(jb, o);
	if (fired) {
		jb->record_tick = tick;
		jb->record_outcome = o;
		jb->record_gen = j->gen;
	}
	a = act(j, JOBS_DO_CLAIM, jb->index);
	a->tick = tick;
	a->outcome = o;
	a->record = true;
	a->attempt = 1;
}

static void overlapped(struct job *jb, int64_t tick);

static void run_tick(struct job *jb, int64_t tick, bool rerun)
{
	struct jobs_state *j = jb->owner;
	char when[40], prev[40];

	if (tickplan_paused(jb->paused, jb->resumed_at, tick)) {
		/* debug: one line a second under @every 1s for as long as the
		 * pause lasts; the pause's own line and the ledger tell it */
		say(j, LOG_LEVEL_DEBUG, "job %s: tick %s recorded paused, not run",
		    jb->cfg->name, clocks_rfc3339(tick, when, sizeof(when)));
		record(jb, tick, JOBS_PAUSED, true);
		return;
	}
	if (jb->state == JOB_IDLE) {
		claim(jb, tick, rerun);
		return;
	}
	if (jb->cfg->overlap != OVERLAP_SKIP && !jb->catching_up) {
		overlapped(jb, tick);
		return;
	}
	if (jb->state == JOB_CLAIMING) {
		/* recorded after the claim (one statement at a time, in
		 * order): refused too if that claim finds the lock gone, and
		 * a claim that fails is planned again (unclaimed) */
		say(j, LOG_LEVEL_NOTICE, "job %s: tick %s skipped: the claim of tick %s "
		    "is still waiting for the ledger", jb->cfg->name,
		    clocks_rfc3339(tick, when, sizeof(when)),
		    clocks_rfc3339(jb->claim_tick, prev, sizeof(prev)));
		record(jb, tick, JOBS_SKIPPED, true);
		return;
	}
	say(j, LOG_LEVEL_NOTICE, "job %s: tick %s skipped: the run for %s is still going",
	    jb->cfg->name, clocks_rfc3339(tick, when, sizeof(when)),
	    clocks_rfc3339(jb->run_tick, prev, sizeof(prev)));
	record(jb, tick, JOBS_SKIPPED, true);
}

/* The plan after the lock came back with a new session at since (the
 * server's ms; failsafe): the ticks that fell since fell while this node
 * led, their claims stuck behind one of the old session's: the newest
 * runs, the others are recorded skipped, as they would have been (the
 * claim of an older tick was waiting); only the older ones were missed.
 * How many of p's missed ticks fell since, newest first. */
static int fell_since(struct tickplan *p, int64_t since)
{
	int n = 0;

	if (since == INT64_MIN)
		return 0;
	if (p->run == INT64_MIN && p->n_missed > 0 && p->missed[0] >= since) {
		p->run = p->missed[0];
		memmove(p->missed, p->missed + 1, (size_t)--p->n_missed * sizeof(p->missed[0]));
		p->missed_total--;
	}
	while (n < p->n_missed && p->missed[n] >= since)
		n++;
	return n;
}

static void apply(struct job *jb, struct tickplan *p, int64_t since)
{
	char when[40];
	int skipped = fell_since(p, since);
	int64_t missed = p->missed_total - skipped;

	/* oldest first: a leader that loses the lock between two of these
	 * statements leaves the older ticks recorded and the newer ones to
	 * the next leader, which plans from the newest row; newest first
	 * left a hole under a row nobody plans below. A tick queued behind
	 * the run going on (DESIGN 13) is older than these: recorded first */
	if (p->n_missed > 0 && jb->queued != INT64_MIN) {
		record(jb, jb->queued, JOBS_SKIPPED, false);
		jb->queued = INT64_MIN;
	}
	for (int i = p->n_missed - 1; i >= 0; i--)
		/* the newest may be in the server's future (our reading of
		 * its clock runs ahead): sent again once it is there, as the
		 * tick a timer fired for */
		record(jb, p->missed[i], i < skipped ? JOBS_SKIPPED : JOBS_MISSED,
		       i == 0 && p->run == INT64_MIN);
	if (skipped > 0)
		say(jb->owner, LOG_LEVEL_NOTICE, "job %s: %d tick%s skipped while the "
		    "claim of an older one waited on the lock's old session", jb->cfg->name,
		    skipped, skipped == 1 ? "" : "s");
	if (missed > 0)
		say(jb->owner, LOG_LEVEL_WARNING, "job %s: %" PRId64 "%s tick%s missed "
		    "while no node led (newest %s)%s", jb->cfg->name, missed,
		    p->missed_total >= TICKPLAN_COUNT_MAX ? " or more" : "",
		    missed == 1 ? "" : "s", skipped < p->n_missed
		    ? clocks_rfc3339(p->missed[skipped], when, sizeof(when))
		    : "before the skipped ones",
		    p->missed_total > p->n_missed ? "; the newest are recorded" : "");
	jb->catching_up = p->n_missed > 0;
	if (p->run != INT64_MIN)
		run_tick(jb, p->run, false);
	jb->catching_up = false;
	jb->next_tick = p->next;
	arm_tick(jb);
}

static void plan_and_run(struct job *jb, int64_t fired)
{
	struct jobs_state *j = jb->owner;
	struct tickplan p;
	int64_t now = db_now(j), since = jb->regained;

	tickplan(jb->sched, jb->last_handled, now, fired,
		  jb->cfg->missed == MISSED_ONCE, jb->cfg->missed_window_ms, &p);
	jb->last_handled = now;
	jb->regained = INT64_MIN; /* the plan after the regain only */
	apply(jb, &p, since);
}

static void arm_tick(struct job *jb)
{
	struct jobs_state *j = jb->owner;
	int64_t at;

	if (jb->next_tick == SCHEDULE_NEVER || jb->next_tick == INT64_MIN) {
		timer(jb, JOBS_TIMER_TICK, -1);
		return;
	}
	jb->view.next_tick = (double)jb->next_tick / 1000;
	/* a millisecond late: our reading of the server's clock is good to
	 * a fraction of the round trip, and a claim that comes early is
	 * refused and sent again */
	at = jb->next_tick + 1 + schedule_jitter(j->term.lock_key, jb->cfg->name,
						 jb->next_tick, jb->cfg->jitter_ms);
	timer(jb, JOBS_TIMER_TICK, fmax((double)(at - db_now(j)) / 1000, 0.001));
}

/* ---- a new term ---- */

static void ensure(struct jobs_state *j);
static void ask_last(struct job *jb, bool cut);

/* How long a run of an older term may still be stopping once this node
 * leads: its leader notices the loss within its pings' deadline, then gives
 * the command its grace period (the timing rule's terms, DESIGN 3). */
static double older_run_bound(const struct jobs_state *j, const struct job *jb)
{
	const struct config *c = j->cfg;

	return (double)(c->ping_interval_ms * c->ping_failures + c->ping_timeout_ms +
			jb->cfg->grace_period_ms) / 1000;
}

/* The ledger told the job's newest tick: its ticks are planned from
 * there, and a cut-off run is run again if asked (not while paused). */
static void first_plan(struct job *jb, const struct jobs_answer *a)
{
	jb->planned = true;
	jb->last_handled = a->last_tick;
	/* a job without a row, planned again after a regain (lock_pid): its
	 * ticks since this term first planned it were this node's, their
	 * claims and records refused with the old session; from there, not
	 * from now, or they were lost without a row (sim --jobs seed 2022487:
	 * a job's first claims stuck behind another session's lock on the
	 * terms row while the lock session was ended) */
	if (jb->regained == INT64_MIN)
		jb->first_planned = a->last_tick == INT64_MIN ? db_now(jb->owner) : INT64_MIN;
	else if (a->last_tick == INT64_MIN)
		jb->last_handled = jb->first_planned;
	if (a->last_success > 0)
		jb->view.last_success = (double)a->last_success / 1000;
	plan_and_run(jb, INT64_MIN);
	if (jb->cfg->rerun_interrupted && a->interrupted != INT64_MIN &&
	    jb->state == JOB_IDLE && !jb->paused)
		claim_tick_attempt(jb, a->interrupted, true,
				   a->interrupted_attempt > 0 ? a->interrupted_attempt : 1);
	retry_catch_up(jb, a);
}

/* DESIGN 3 and issue 17: the old leader's command may still be stopping
 * (a database restart ended both its sessions, so no fence keeps this
 * node out): its run's end, or the bound. The ledger tells only a run of
 * another server (or of none recorded); one of this server is over, and
 * was cut. */
static void older_running(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;
	bool wait = j->now < j->started_at + older_run_bound(j, jb);
	char when[40];

	if (wait && !jb->older_logged)
		say(j, LOG_LEVEL_NOTICE, "job %s: the run for tick %s of an older term "
		    "is still recorded running, begun before a database restart or "
		    "failover; waiting up to %.1fs for its end", jb->cfg->name,
		    clocks_rfc3339(a->older_running, when, sizeof(when)),
		    older_run_bound(j, jb));
	jb->older_logged = true;
	if (wait)
		timer(jb, JOBS_TIMER_WAIT, RETRY_AFTER);
	else
		ask_last(jb, true);
}

static void last_answered(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;
	char when[40];

	if (jb->claim_gen != j->gen || !j->active)
		return;
	if (!a->ok && a->missing) {
		remake(jb);
		return;
	}
	if (!a->ok) {
		if (!a->lost)
			say(j, LOG_LEVEL_ERROR, "job %s: cannot read the ledger: %s",
			    jb->cfg->name, a->error);
		ask_last(jb, jb->cutting); /* sent when the session is back */
		return;
	}
	sync_clock(j, a);
	if (a->older_running != INT64_MIN) {
		older_running(jb, a);
		return;
	}
	if (a->interrupted != INT64_MIN)
		say(j, LOG_LEVEL_WARNING, "job %s: the run for tick %s was cut off with "
		    "its leader: recorded interrupted%s", jb->cfg->name,
		    clocks_rfc3339(a->interrupted, when, sizeof(when)),
		    jb->cfg->rerun_interrupted ? "; running it again" : "");
	first_plan(jb, a);
}

static void ask_last(struct job *jb, bool cut)
{
	jb->claim_gen = jb->owner->gen;
	jb->cutting = cut;
	act(jb->owner, JOBS_DO_LAST, jb->index)->cut = cut;
}

static void announce(struct jobs_state *j, int64_t now);
static bool reads_requests(const struct jobs_state *j);
static void read_requests(struct jobs_state *j);
static void forget_waiting(struct jobs_state *j);

/* The ledger is there: each job begins its term. */
static void begin(struct jobs_state *j, int64_t now)
{
	j->begun = true;
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		jb->restart_backoff = RESTART_MIN;
		if (jb->removed)
			continue;
		if (j->cfg->once_per_ms > 0 && jb->paused)
			end_paused_one_shot(jb, "not run");
		else if (j->cfg->once_per_ms > 0)
			claim(jb, schedule_window(jb->cfg->timezone, now,
						  j->cfg->once_per_ms), false);
		else if (jb->sched)
			ask_last(jb, false);
		else if (jb->paused)
			say(j, LOG_LEVEL_INFO, "job %s: paused; not started", jb->cfg->name);
		else
			start_run(jb, 0, 0);
	}
	announce(j, now); /* after the term's first statements */
	if (reads_requests(j)) {
		act(j, JOBS_DO_LISTEN, -1);
		read_requests(j);
	}
}

/* The ledger cannot be used (DESIGN 10): one line, and nothing runs; the
 * election gives up the lead. */
static void refuse_ledger(struct jobs_state *j, const struct jobs_answer *a)
{
	char why[LOG_MSG_MAX];

	if (a->untrusted)
		snprintf(why, sizeof(why), "%s", a->error);
	else if (a->denied)
		snprintf(why, sizeof(why), "the ledger in schema %s is there, but "
			 "this role may not read and write its runs, terms, jobs and "
			 "triggers: grant USAGE on the schema, SELECT, INSERT, UPDATE, "
			 "DELETE on %s.runs, %s.terms and %s.jobs, SELECT and DELETE on "
			 "%s.triggers (pgleader init-db --print-sql --grant-to ROLE shows "
			 "them)", j->cfg->schema, j->cfg->schema, j->cfg->schema,
			 j->cfg->schema, j->cfg->schema);
	else
		snprintf(why, sizeof(why), "%s%s%s: run pgleader init-db as a role "
			 "that may create it (or --print-sql for a DBA)",
			 a->ok ? "the ledger is missing (schema " : "cannot use the ledger: ",
			 a->ok ? j->cfg->schema : a->error, a->ok ? ") and this role "
			 "may not create it" : "");
	j->active = false;
	refused(j, FAULT_LEDGER, why);
}

static bool unusable(const struct jobs_answer *a)
{
	return !a->ok || a->missing || a->denied || a->untrusted;
}

static void ensured(struct jobs_state *j, const struct jobs_answer *a)
{
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
static void remade(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;

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
		claim_attempt(jb, jb->claim_tick, jb->claim_rerun, jb->claim_attempt);
	else
		ask_last(jb, jb->cutting);
}

static void remake(struct job *jb)
{
	say(jb->owner, LOG_LEVEL_WARNING, "job %s: the ledger (schema %s) is gone; "
	    "making it again", jb->cfg->name, jb->owner->cfg->schema);
	jb->claim_gen = jb->owner->gen;
	act(jb->owner, JOBS_DO_ENSURE, jb->index);
}

static void ensure(struct jobs_state *j)
{
	act(j, JOBS_DO_ENSURE, -1);
}

static void drain_over(struct jobs_state *j);

static void lead_began(struct jobs_state *j, const struct jobs_term *term)
{
	j->gen++;
	j->started_at = j->now;
	for (size_t i = 0; i < j->n; i++)
		j->job[i].older_logged = false;
	j->active = true;
	j->stopping = false;
	j->begun = false;
	drain_over(j);
	j->refusal[0] = '\0';
	j->term = *term;
	if (j->has_ledger)
		ensure(j);
	else
		begin(j, 0);
}

static void lock_pid(struct jobs_state *j, int pid)
{
	bool changed = j->term.lock_pid != pid;

	j->term.lock_pid = pid;
	if (!changed || !j->active || !j->begun || j->cfg->once_per_ms > 0)
		return;
	/* back from failsafe: the claims and records made meanwhile named
	 * the old session and were refused, so the ticks after the ledger's
	 * newest are planned again, as a new term plans them (run or
	 * recorded missed), instead of being lost without a row */
	for (size_t i = 0; i < j->n; i++) {
		if (!j->job[i].sched || j->job[i].removed)
			continue;
		timer(&j->job[i], JOBS_TIMER_TICK, -1);
		j->job[i].regained = db_now(j);
		ask_last(&j->job[i], false);
	}
}

/* ---- the jobs announced (DESIGN 13) ---- */

/* The term's list of jobs goes to the ledger, each scheduled one with
 * its next tick after the server's now (a plan later may find an older
 * tick due: the list says what is to come). A one-shot announces none. */
static void announce(struct jobs_state *j, int64_t now)
{
	if (!j->has_ledger || j->cfg->once_per_ms > 0)
		return;
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];
		int64_t next = jb->sched ? schedule_next(jb->sched, now) : SCHEDULE_NEVER;

		jb->view.announced_next = next == SCHEDULE_NEVER ? 0 : (double)next / 1000;
	}
	act(j, JOBS_DO_ANNOUNCE, -1)->generation = ++j->announced;
}

/* ---- reload (DESIGN 13) ---- */

static bool has_exited(const struct job *jb);
static bool job_init(struct jobs_state *j, struct job *jb, size_t i,
		     const struct config_job *cfg, char *err, size_t errlen);

static void reconfigure(struct job *jb)
{
	jb->reconfigure = false;
	act(jb->owner, JOBS_DO_RECONFIGURE, jb->index)->job_cfg = jb->cfg;
}

/* A run of a job a reload changed ended: its next run is of the new
 * command. */
static void reconfigure_if_due(struct job *jb)
{
	if (jb->reconfigure)
		reconfigure(jb);
}

/* A job a reload removed starts nothing more; a run claimed for it meanwhile
 * is recorded interrupted, never run. */
static bool removed_start(struct job *jb, int64_t run_id)
{
	if (!jb->removed)
		return false;
	if (run_id > 0)
		finish(jb->owner, run_id, JOBS_INTERRUPTED, -1);
	jb->state = JOB_IDLE;
	return true;
}

/* Stops the run of a job (a removed one's, or one a schedule now ticks
 * for), recorded interrupted unless it ended by itself. */
static void stop_run(struct job *jb)
{
	if (jb->state != JOB_RUNNING)
		return;
	jb->interrupted = !has_exited(jb);
	jb->state = JOB_STOPPING;
	act(jb->owner, JOBS_DO_STOP, jb->index);
}

/* A removed job's drain ran out. */
static void removed_out(struct job *jb)
{
	say(jb->owner, LOG_LEVEL_WARNING, "job %s: removed by a reload; drain_timeout "
	    "ran out: stopping its run", jb->cfg->name);
	stop_run(jb);
}

/* Gone from the file: no tick more; its scheduled run may finish for up to
 * drain_timeout, anything else stops now. */
static void remove_job(struct job *jb)
{
	struct jobs_state *j = jb->owner;
	double drain = (double)j->cfg->drain_timeout_ms / 1000;
	struct jobs_action *a;

	jb->removed = true;
	timer(jb, JOBS_TIMER_TICK, -1);
	timer(jb, JOBS_TIMER_WAIT, -1);
	jb->view.next_tick = 0;
	if (jb->state == JOB_RUNNING && jb->sched && jb->run_id > 0 && drain > 0) {
		say(j, LOG_LEVEL_NOTICE, "job %s: removed by a reload; its run %" PRId64
		    " may finish for up to %.1fs", jb->cfg->name, jb->run_id, drain);
		a = act(j, JOBS_DO_TIMER, jb->index);
		a->timer = JOBS_TIMER_LIMIT;
		a->after = drain;
		a->restart = true; /* the drain's bound, not max_runtime's */
		return;
	}
	timer(jb, JOBS_TIMER_LIMIT, -1);
	say(j, LOG_LEVEL_NOTICE, "job %s: removed by a reload%s", jb->cfg->name,
	    jb->state == JOB_RUNNING ? "; stopping it" : "");
	stop_run(jb);
}

static bool same_text(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The job's schedule as the reload has it: ticks planned from now on
 * (none before, none missed); a job that runs all the time now starts,
 * one that got a schedule has its command stopped and runs from its next
 * tick. */
static void reschedule(struct job *jb)
{
	struct jobs_state *j = jb->owner;
	char err[LOG_MSG_MAX];
	const struct config_job *c = jb->cfg;

	schedule_free(jb->sched);
	jb->sched = c->schedule ? schedule_new(c->schedule, c->timezone, err, sizeof(err))
		    : NULL;
	jb->view.schedule = jb->sched ? schedule_expr(jb->sched) : NULL;
	timer(jb, JOBS_TIMER_TICK, -1);
	jb->view.next_tick = 0;
	if (!j->active || !j->begun || j->cfg->once_per_ms > 0)
		return;
	if (!jb->sched && jb->state == JOB_IDLE && !jb->paused) {
		jb->restart_backoff = RESTART_MIN;
		start_run(jb, 0, 0);
	} else if (jb->sched) {
		if (jb->run_id == 0)
			stop_run(jb);
		jb->last_handled = db_now(j);
		plan_and_run(jb, INT64_MIN);
	}
}

/* In the file again: the new settings from its next run (its command at
 * once when no run goes on). */
static void keep_job(struct job *jb, const struct config_job *c)
{
	bool resched = !same_text(jb->cfg->schedule, c->schedule) ||
		       !same_text(jb->cfg->timezone, c->timezone) || jb->removed;

	jb->cfg = c;
	jb->view.name = c->name;
	jb->view.timezone = c->timezone;
	jb->removed = false;
	jb->seen = true;
	jb->reconfigure = true;
	if (jb->state == JOB_IDLE || jb->state == JOB_CLAIMING)
		reconfigure(jb);
	if (resched)
		reschedule(jb);
}

/* New in the file: runs from its next tick (a job without a schedule at
 * once) while this node leads. */
static void add_job(struct jobs_state *j, const struct config_job *c)
{
	struct job *grown = realloc(j->job, (j->n + 1) * sizeof(*grown)), *jb;
	char err[LOG_MSG_MAX];

	if (!grown) {
		j->out->lost = true;
		return;
	}
	j->job = grown;
	jb = &j->job[j->n];
	memset(jb, 0, sizeof(*jb));
	if (!job_init(j, jb, j->n, c, err, sizeof(err))) {
		j->out->lost = true; /* a schedule config_load read: memory */
		return;
	}
	j->n++;
	act(j, JOBS_DO_ADD, jb->index)->job_cfg = c;
	say(j, LOG_LEVEL_NOTICE, "job %s: added by a reload", c->name);
	if (!j->active || !j->begun || j->cfg->once_per_ms > 0)
		return;
	jb->restart_backoff = RESTART_MIN;
	if (jb->sched)
		ask_last(jb, false); /* a new job starts with its next tick */
	else
		start_run(jb, 0, 0);
}

static struct job *by_name(struct jobs_state *j, const char *name)
{
	for (size_t i = 0; i < j->n; i++)
		if (!strcmp(j->job[i].cfg->name, name))
			return &j->job[i];
	return NULL;
}

/* The file read again: each job kept, added or removed by name; the new
 * list announced. fresh outlives the jobs. */
static void reload(struct jobs_state *j, const struct config *fresh)
{
	size_t old_n = j->n;

	j->cfg = fresh;
	for (size_t i = 0; i < old_n; i++)
		j->job[i].seen = false;
	for (size_t f = 0; f < fresh->n_jobs; f++) {
		struct job *jb = by_name(j, fresh->jobs[f].name);

		if (jb)
			keep_job(jb, &fresh->jobs[f]);
	}
	for (size_t i = 0; i < old_n; i++)
		if (!j->job[i].seen && !j->job[i].removed)
			remove_job(&j->job[i]);
	for (size_t f = 0; f < fresh->n_jobs; f++)
		if (!by_name(j, fresh->jobs[f].name))
			add_job(j, &fresh->jobs[f]);
	if (j->active && j->begun)
		announce(j, db_now(j));
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
	struct jobs_state *j = jb->owner;
	char who[sizeof(jb->paused_by) + sizeof(jb->paused_at) + 8];

	snprintf(j->refusal, sizeof(j->refusal), "%s: job %s is paused%s "
		 "(pgleader resume lifts it)", what, jb->cfg->name,
		 who_paused(jb, who, sizeof(who)));
	j->active = false;
	j->stopping = true;
	check_gone(j);
}

static bool has_exited(const struct job *jb)
{
	const bool *exited = jb->owner->ev->exited;

	return exited && exited[jb->index];
}

/* The run going on is stopped gracefully, as the end of a term stops it
 * (recorded interrupted); a pending restart is dropped. */
static void pause_job(struct job *jb)
{
	struct jobs_state *j = jb->owner;
	char who[sizeof(jb->paused_by) + sizeof(jb->paused_at) + 8];
	bool running = jb->state == JOB_RUNNING || jb->state == JOB_STOPPING;

	who_paused(jb, who, sizeof(who));
	timer(jb, JOBS_TIMER_LIMIT, -1);
	if (!running) {
		/* a one-shot says it once, as it ends */
		say(j, j->cfg->once_per_ms > 0 ? LOG_LEVEL_DEBUG : LOG_LEVEL_NOTICE,
		    "job %s paused%s", jb->cfg->name, who);
		return;
	}
	say(j, LOG_LEVEL_NOTICE, "job %s paused%s: stopping it", jb->cfg->name, who);
	jb->pause_stop = true;
	if (jb->state == JOB_RUNNING) {
		jb->interrupted = !has_exited(jb);
		jb->state = JOB_STOPPING;
		act(j, JOBS_DO_STOP, jb->index);
	}
}

/* A job without a schedule starts at once (its restart policy and
 * backoff start over); a scheduled one runs from its next tick, the
 * ticks before now stay paused (tickplan_paused). */
static void resume_job(struct job *jb)
{
	struct jobs_state *j = jb->owner;

	jb->resumed_at = db_now(j);
	say(j, LOG_LEVEL_NOTICE, "job %s resumed%s%s%s%s", jb->cfg->name,
	    jb->resumed_by[0] ? " by " : "", jb->resumed_by,
	    jb->resumed_at_text[0] ? " at " : "", jb->resumed_at_text);
	if (j->active && j->begun && !jb->sched && j->cfg->once_per_ms == 0 &&
	    jb->state == JOB_IDLE) {
		jb->restart_backoff = RESTART_MIN;
		start_run(jb, 0, 0);
	}
}

static void pause_of(const struct job *jb, const struct jobs_pauses *p,
		     struct tickplan_pause *out)
{
	tickplan_pause_of(jb->cfg->name, p->all, p->names, p->by, p->at, p->n,
			  p->all_by, p->all_at, out);
}

static void resumes(struct jobs_state *j, const struct jobs_pauses *ps)
{
	struct tickplan_pause r;

	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		/* the same lookup as a pause's: by name first, else the lock's */
		pause_of(jb, ps, &r);
		snprintf(jb->resumed_by, sizeof(jb->resumed_by), "%s", r.by ? r.by : "");
		snprintf(jb->resumed_at_text, sizeof(jb->resumed_at_text), "%s",
			 r.at ? r.at : "");
	}
}

static void pauses(struct jobs_state *j, const struct jobs_pauses *ps)
{
	struct tickplan_pause p;

	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		pause_of(jb, ps, &p);
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

static bool runs_left(const struct jobs_state *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->job[i].state >= JOB_STARTING)
			return true;
	return false;
}

static void flush_timer(struct jobs_state *j, double after)
{
	struct jobs_action *a = act(j, JOBS_DO_TIMER, -1);

	a->timer = JOBS_TIMER_FLUSH;
	a->after = after;
}

/* Every run is gone: tell once the ledger has their ends, or after a
 * bound (the session may be gone for longer). */
static void check_gone(struct jobs_state *j)
{
	bool idle = !j->has_ledger || (j->ev->ledger_idle && !j->sent);

	if (!j->stopping || runs_left(j))
		return;
	if (!j->flush_until)
		j->flush_until = j->now + FLUSH_FOR;
	if (!idle && j->now < j->flush_until) {
		flush_timer(j, 0.02);
		return;
	}
	if (!idle)
		say(j, LOG_LEVEL_WARNING, "the ledger did not take every run's end within "
		    "%.0fs; it is sent when the session is back", FLUSH_FOR);
	flush_timer(j, -1);
	drain_over(j);
	j->stopping = false;
	j->flush_until = 0;
	if (j->refusal[0]) {
		refused(j, FAULT_ALREADY_RUN, j->refusal);
		j->refusal[0] = '\0';
		return;
	}
	act(j, JOBS_DO_GONE, -1)->status = j->last_status;
}

static bool drain_keeps(const struct jobs_state *j, const struct job *jb);
static void drain_begins(struct jobs_state *j);

static void lead_ending(struct jobs_state *j)
{
	j->active = false;
	j->stopping = true;
	j->begun = false;
	j->refusal[0] = '\0'; /* the election's stop: gone is owed */
	j->gen++;
	forget_waiting(j);
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		timer(jb, JOBS_TIMER_TICK, -1);
		timer(jb, JOBS_TIMER_WAIT, -1);
		timer(jb, JOBS_TIMER_RETRY, -1);
		jb->retry.on = false; /* the next leader reads it from the ledger */
		jb->view.next_tick = 0;
		if (drain_keeps(j, jb))
			continue;
		timer(jb, JOBS_TIMER_LIMIT, -1);
		if (jb->state == JOB_RUNNING || jb->state == JOB_STOPPING) {
			/* A command that ended by itself before the stop (while
			 * this node was frozen, say) is recorded as it ended. */
			if (!has_exited(jb))
				jb->interrupted = true;
			jb->state = JOB_STOPPING;
			act(j, JOBS_DO_STOP, jb->index);
		}
	}
	drain_begins(j);
	check_gone(j);
}

/* ---- drain (DESIGN 13) ---- */

/* A scheduled run going on when the lead ends of this node's own will
 * finishes (its max_runtime still counts) for up to drain_timeout; a job
 * without a schedule is stopped at once. */
static bool drain_keeps(const struct jobs_state *j, const struct job *jb)
{
	return j->draining && jb->sched && jb->state == JOB_RUNNING;
}

static void drain_timer(struct jobs_state *j, double after)
{
	struct jobs_action *a = act(j, JOBS_DO_TIMER, -1);

	a->timer = JOBS_TIMER_DRAIN;
	a->after = after;
}

/* Says which runs drain, and sets the bound; a drain asked again (a
 * SIGTERM during a handover's) keeps the first one's. */
static void drain_begins(struct jobs_state *j)
{
	int n = 0;

	if (!j->draining || j->drain_until > 0)
		return;
	for (size_t i = 0; i < j->n; i++)
		n += drain_keeps(j, &j->job[i]);
	if (n == 0)
		return;
	j->drain_until = j->now + (double)j->cfg->drain_timeout_ms / 1000;
	say(j, LOG_LEVEL_NOTICE, "draining: %d run%s may finish for up to %.1fs; "
	    "no new tick starts", n, n == 1 ? "" : "s",
	    (double)j->cfg->drain_timeout_ms / 1000);
	drain_timer(j, (double)j->cfg->drain_timeout_ms / 1000);
}

/* LEAD_ENDING: with drain (and a drain_timeout) the runs may finish;
 * without, a drain under way ends and every run is stopped now. */
static void lead_ends(struct jobs_state *j, bool drain)
{
	bool was = j->draining;

	j->draining = drain && j->cfg->drain_timeout_ms > 0 &&
		      (was || j->active);
	if (was && j->draining)
		return; /* drains already */
	if (was) {
		j->drain_until = 0;
		drain_timer(j, -1);
	}
	lead_ending(j);
}

/* A new term: a drain of the last one is over. */
static void drain_over(struct jobs_state *j)
{
	if (!j->draining && j->drain_until == 0)
		return;
	j->draining = false;
	j->drain_until = 0;
	drain_timer(j, -1);
}

/* drain_timeout ran out: the runs still going are stopped, as a stop
 * without drain stops them (recorded interrupted). */
static void drain_out(struct jobs_state *j)
{
	if (!j->draining)
		return;
	say(j, LOG_LEVEL_WARNING, "drain_timeout (%.1fs) ran out: stopping the "
	    "runs still going", (double)j->cfg->drain_timeout_ms / 1000);
	lead_ends(j, false);
}

/* KILL and SIGNAL (sig): to every run going on. */
static void to_runs(struct jobs_state *j, enum jobs_action_type type, int sig)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->job[i].state >= JOB_STARTING)
			act(j, type, (int)i)->sig = sig;
}

/* ---- retries and on_failure (DESIGN 13) ---- */

/* The claim of a failed run's on_failure, answered in order. */
static void notice_claim(struct job *jb, const struct notice *n)
{
	if (jb->n_notices == NOTICES) {
		say(jb->owner, LOG_LEVEL_WARNING, "job %s: on_failure for run %" PRId64
		    " not sent: %d others wait for the ledger", jb->cfg->name, n->run_id,
		    NOTICES);
		return;
	}
	jb->notices[jb->n_notices++] = *n;
	act(jb->owner, JOBS_DO_ON_FAILURE_CLAIM, jb->index)->run_id = n->run_id;
}

/* Whether this node claimed run_id's on_failure: its claim is on its way,
 * or it ran. The ledger lets a term claim one again (after an answer lost
 * with the session): a term's own catch-up must not. */
static bool on_failure_known(const struct job *jb, int64_t run_id)
{
	for (int i = 0; i < jb->n_notices; i++)
		if (jb->notices[i].run_id == run_id)
			return true;
	for (int i = 0; i < jb->n_sent && i < NOTICES; i++)
		if (jb->sent[i] == run_id)
			return true;
	return false;
}

/* A failed run with no attempt to follow: its on_failure, once across the
 * fleet, claimed in its row first. */
static void failed_for_good(struct job *jb, const struct notice *n)
{
	if (jb->cfg->on_failure && jb->owner->active && n->run_id > 0 &&
	    !on_failure_known(jb, n->run_id))
		notice_claim(jb, n);
}

static enum jobs_retry_verdict verdict_of(const struct job *jb, const struct notice *n,
					  int64_t ended, int64_t next, int64_t *due)
{
	const struct jobs_state *j = jb->owner;
	struct jobs_retry_run r = {
		.outcome = n->outcome, .attempt = n->attempt,
		.retries = n->manual ? 0 : jb->cfg->retries, .first_ms = jb->cfg->retry_delay_ms,
		.max_ms = jb->cfg->retry_max_delay_ms, .lock_key = j->term.lock_key,
		.job = jb->cfg->name, .tick = n->tick, .ended = ended, .next_tick = next,
		.now = db_now(j),
	};

	return jobs_retry_decide(&r, due);
}

/* The next attempt of the failed run n, due at the server's due ms. */
static void retry_at(struct job *jb, const struct notice *n, int64_t due)
{
	jb->retry = (struct retry){ .on = true, .tick = n->tick, .due = due,
				    .attempt = n->attempt + 1, .failed = *n };
	timer(jb, JOBS_TIMER_RETRY,
	      fmax((double)(due - db_now(jb->owner)) / 1000, 0.001));
}

static void say_overtaken(struct job *jb, const struct notice *n, int64_t next)
{
	char when[40], at[40];

	say(jb->owner, LOG_LEVEL_NOTICE, "job %s: run %" PRId64 " of tick %s not "
	    "tried again: tick %s falls before attempt %d would (the newer tick wins)",
	    jb->cfg->name, n->run_id, clocks_rfc3339(n->tick, when, sizeof(when)),
	    clocks_rfc3339(next, at, sizeof(at)), n->attempt + 1);
}

/* A scheduled run ended: its row's end, and a retry or its on_failure. */
static void run_ended(struct job *jb, enum jobs_outcome o, int status)
{
	struct jobs_state *j = jb->owner;
	struct notice n = { jb->run_id, jb->run_tick, jb->run_attempt, status, o,
			    jb->run_manual };
	/* the tick after the run's: one that fell while it ran (skipped)
	 * ended its retries already */
	int64_t due, next = j->active && jb->sched ? schedule_next(jb->sched, jb->run_tick)
						 : INT64_MIN;
	enum jobs_retry_verdict v = verdict_of(jb, &n, db_now(j), next, &due);

	finish(j, jb->run_id, o, status)->owed =
		jb->cfg->on_failure && (v == JOBS_RETRY_LAST || v == JOBS_RETRY_OVERTAKEN);
	if (!j->active || v == JOBS_RETRY_NONE)
		return;
	if (v == JOBS_RETRY_AGAIN) {
		say(j, LOG_LEVEL_NOTICE, "job %s: run %" PRId64 " %s (attempt %d of %d); "
		    "attempt %d in %.1fs", jb->cfg->name, n.run_id, jobs_outcome_name(o),
		    n.attempt, jb->cfg->retries + 1, n.attempt + 1,
		    (double)(due - db_now(j)) / 1000);
		retry_at(jb, &n, due);
		return;
	}
	if (v == JOBS_RETRY_OVERTAKEN)
		say_overtaken(jb, &n, next);
	failed_for_good(jb, &n);
}

/* The retry timer: the next attempt is claimed as a tick is, unless the
 * job is paused or runs meanwhile (then the failure was its last); a run
 * asked for now (DESIGN 13) goes on first, and the attempt follows it
 * (next_up), unless the next tick falls first. */
static void retry_due(struct job *jb)
{
	struct jobs_state *j = jb->owner;
	struct retry r = jb->retry;
	char when[40];

	if (!r.on || !j->active)
		return;
	if (!jb->paused && jb->state != JOB_IDLE && (jb->run_manual || jb->claim_trigger))
		return; /* still on: after the run asked for now */
	jb->retry.on = false;
	if (jb->paused || jb->state != JOB_IDLE) {
		say(j, LOG_LEVEL_NOTICE, "job %s: attempt %d of tick %s not run: %s",
		    jb->cfg->name, r.attempt, clocks_rfc3339(r.tick, when, sizeof(when)),
		    jb->paused ? "the job is paused" : "another run is going on");
		failed_for_good(jb, &r.failed);
		return;
	}
	claim_tick_attempt(jb, r.tick, false, r.attempt);
}

/* A retry's claim answered once the next tick had fallen due (it waited
 * on the ledger): its row is recorded skipped, not run, and the failure
 * before it was the tick's last. */
static bool retry_claimed_late(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;
	int64_t next;
	char when[40], at[40];

	if (jb->claim_attempt <= 1 || !jb->sched)
		return false;
	next = schedule_next(jb->sched, jb->claim_tick);
	if (next == SCHEDULE_NEVER || a->db_now < next)
		return false;
	say(j, LOG_LEVEL_NOTICE, "job %s: attempt %d of tick %s not run: its claim was "
	    "answered after tick %s fell due (the newer tick wins)", jb->cfg->name,
	    jb->claim_attempt, clocks_rfc3339(jb->claim_tick, when, sizeof(when)),
	    clocks_rfc3339(next, at, sizeof(at)));
	count_outcome(jb, JOBS_SKIPPED);
	finish(j, a->run_id, JOBS_SKIPPED, -1);
	if (jb->retry.failed.tick == jb->claim_tick &&
	    jb->retry.failed.attempt == jb->claim_attempt - 1)
		failed_for_good(jb, &jb->retry.failed);
	return true;
}

/* The next tick fell due while an attempt waited: the newer tick wins. */
static void retry_overtaken(struct job *jb)
{
	if (!jb->retry.on)
		return;
	jb->retry.on = false;
	timer(jb, JOBS_TIMER_RETRY, -1);
	say_overtaken(jb, &jb->retry.failed, jb->next_tick);
	failed_for_good(jb, &jb->retry.failed);
}

/* A new leader reads what its predecessor left (the ledger's LAST): the
 * next attempt of the newest tick if it failed and one is due and not
 * claimed, else that failure's on_failure; and the newest on_failure
 * owed that nobody claimed. */
static void retry_catch_up(struct job *jb, const struct jobs_answer *a)
{
	struct notice last = { a->last_run_id, a->last_tick, a->last_attempt,
			       a->last_exit, jobs_outcome_from_name(a->last_outcome), false };
	/* an owed run may have been asked for now: its retries are over
	 * either way, and only its on_failure is owed */
	struct notice owed = { a->owed_run_id, a->owed_tick, a->owed_attempt,
			       a->owed_exit, jobs_outcome_from_name(a->owed_outcome), true };
	int64_t due, next;
	enum jobs_retry_verdict v = JOBS_RETRY_NONE;

	if (owed.run_id > 0)
		failed_for_good(jb, &owed);
	if (last.run_id <= 0 || a->last_ended == INT64_MIN || last.run_id == owed.run_id)
		return;
	next = schedule_next(jb->sched, last.tick);
	v = verdict_of(jb, &last, a->last_ended, next, &due);
	if (v == JOBS_RETRY_AGAIN) {
		/* not while its claim is on its way (planned again after a
		 * regain); a paused job's is dropped when due, with a line */
		if (jb->state != JOB_IDLE)
			return;
		say(jb->owner, LOG_LEVEL_NOTICE, "job %s: run %" PRId64 " %s (attempt %d "
		    "of %d); attempt %d in %.1fs", jb->cfg->name, last.run_id,
		    jobs_outcome_name(last.outcome), last.attempt, jb->cfg->retries + 1,
		    last.attempt + 1, fmax((double)(due - db_now(jb->owner)) / 1000, 0));
		retry_at(jb, &last, due);
	} else if (v != JOBS_RETRY_NONE) {
		if (v == JOBS_RETRY_OVERTAKEN)
			say_overtaken(jb, &last, next);
		failed_for_good(jb, &last);
	}
}

/* The answer to an on_failure's claim: run it when this node claimed it
 * (whatever became of the term since: it is this node's to send). */
static void on_failure_claimed(struct job *jb, const struct jobs_answer *a)
{
	struct jobs_state *j = jb->owner;
	struct notice n;
	struct jobs_action *x;

	if (jb->n_notices == 0)
		return;
	n = jb->notices[0];
	memmove(jb->notices, jb->notices + 1, (size_t)--jb->n_notices * sizeof(n));
	if (a->lost) {
		failed_for_good(jb, &n); /* sent when the session is back */
		return;
	}
	if (!a->ok || a->run_id <= 0) {
		say(j, a->ok ? LOG_LEVEL_DEBUG : LOG_LEVEL_WARNING, "job %s: on_failure for "
		    "run %" PRId64 " not sent by this node: %s", jb->cfg->name, n.run_id,
		    !a->ok ? a->error : !a->holder ? "its lock session no longer holds "
		    "the lock" : "it was sent already");
		return;
	}
	say(j, LOG_LEVEL_NOTICE, "job %s: running on_failure for run %" PRId64
	    " (%s, exit status %d)", jb->cfg->name, n.run_id, jobs_outcome_name(n.outcome),
	    n.status);
	jb->sent[jb->n_sent++ % NOTICES] = n.run_id;
	x = act(j, JOBS_DO_ON_FAILURE, jb->index);
	x->run_id = n.run_id;
	x->tick = n.tick;
	x->attempt = n.attempt;
	x->outcome = n.outcome;
	x->status = n.status;
	x->after = (double)jb->cfg->on_failure_timeout_ms / 1000;
}

static void on_failure_done(struct job *jb, const struct jobs_event *ev)
{
	enum jobs_hook_result r = ev->timed_out ? JOBS_HOOK_TIMED_OUT
				: ev->status == 0 ? JOBS_HOOK_SUCCEEDED : JOBS_HOOK_FAILED;

	jb->view.on_failure[r]++;
	if (ev->timed_out)
		say(jb->owner, LOG_LEVEL_WARNING, "job %s: on_failure for run %" PRId64
		    " took longer than %.1fs (on_failure_timeout); stopped", jb->cfg->name,
		    ev->run_id, (double)jb->cfg->on_failure_timeout_ms / 1000);
	else
		say(jb->owner, ev->status ? LOG_LEVEL_WARNING : LOG_LEVEL_INFO,
		    "job %s: on_failure for run %" PRId64 " exited with status %d",
		    jb->cfg->name, ev->run_id, ev->status);
}

/* ---- overlap and run now (DESIGN 13) ---- */

/* The run going on, or the claim on its way, as a line's words. */
static const char *what_goes_on(const struct job *jb, char *buf, size_t len)
{
	char when[40];

	if (jb->state == JOB_CLAIMING)
		snprintf(buf, len, "the claim of %s waits for the ledger",
			 clocks_rfc3339(jb->claim_tick, when, sizeof(when)));
	else
		snprintf(buf, len, "the run for %s is still going",
			 clocks_rfc3339(jb->run_tick, when, sizeof(when)));
	return buf;
}

/* overlap = replace: the run going on is stopped gracefully, recorded
 * interrupted; the queued tick runs once it is gone. */
static void replace_run(struct job *jb)
{
	char when[40];

	if (jb->state != JOB_RUNNING || jb->run_manual)
		return; /* starting: on its start; stopping: it goes anyway; a
			 * run asked for now is never replaced */
	say(jb->owner, LOG_LEVEL_NOTICE, "job %s: tick %s replaces run %" PRId64
	    " (overlap = replace): stopping it", jb->cfg->name,
	    clocks_rfc3339(jb->queued, when, sizeof(when)), jb->run_id);
	jb->interrupted = true;
	jb->state = JOB_STOPPING;
	timer(jb, JOBS_TIMER_LIMIT, -1);
	act(jb->owner, JOBS_DO_STOP, jb->index);
}

/* A claim answered for a run a newer queued tick replaces (overlap =
 * replace): recorded interrupted, never started. */
static bool replaced_before_start(struct job *jb, int64_t run_id)
{
	char when[40];

	if (jb->queued == INT64_MIN || jb->cfg->overlap != OVERLAP_REPLACE ||
	    jb->claim_trigger)
		return false;
	say(jb->owner, LOG_LEVEL_NOTICE, "job %s: run %" PRId64 " not started: tick %s "
	    "replaces it (overlap = replace)", jb->cfg->name, run_id,
	    clocks_rfc3339(jb->queued, when, sizeof(when)));
	count_outcome(jb, JOBS_INTERRUPTED);
	finish(jb->owner, run_id, JOBS_INTERRUPTED, -1);
	return true;
}

/* A tick fell while the job's run goes on (or its claim waits), and
 * overlap is queue or replace: it waits (at most one: a newer one takes
 * its place, the older recorded skipped) and runs once the run is gone;
 * replace stops the run. A request to run now is never stopped. */
static void overlapped(struct job *jb, int64_t tick)
{
	struct jobs_state *j = jb->owner;
	char when[40], prev[40], going[96];
	bool replace = jb->cfg->overlap == OVERLAP_REPLACE && !jb->run_manual;

	if (jb->queued != INT64_MIN) {
		say(j, LOG_LEVEL_NOTICE, "job %s: queued tick %s skipped: tick %s takes "
		    "its place", jb->cfg->name, clocks_rfc3339(jb->queued, prev, sizeof(prev)),
		    clocks_rfc3339(tick, when, sizeof(when)));
		record(jb, jb->queued, JOBS_SKIPPED, false);
	}
	jb->queued = tick;
	if (replace) {
		replace_run(jb);
		return;
	}
	say(j, LOG_LEVEL_NOTICE, "job %s: tick %s queued: %s", jb->cfg->name,
	    clocks_rfc3339(tick, when, sizeof(when)), what_goes_on(jb, going, sizeof(going)));
}

/* A request to run now, claimed as a tick is: its row takes the request's
 * time as its tick, and the request goes with the claim. */
static void claim_request(struct job *jb)
{
	struct pending p = jb->pend[0];

	memmove(jb->pend, jb->pend + 1, (size_t)--jb->n_pend * sizeof(p));
	jb->claim_trigger = p.id;
	snprintf(jb->claim_by, sizeof(jb->claim_by), "%s", p.by);
	claim_attempt(jb, p.tick, false, 1);
}

/* What waits runs once the job is idle: the older of its queued tick and
 * its oldest request to run now. Nothing new starts while the lead ends
 * or drains. */
static void next_up(struct job *jb)
{
	struct jobs_state *j = jb->owner;
	int64_t tick = jb->queued;

	if (jb->state != JOB_IDLE || !j->active || !j->begun || !jb->planned ||
	    jb->removed || !jb->sched)
		return;
	if (jb->retry.on && tick == INT64_MIN && db_now(j) >= jb->retry.due) {
		retry_due(jb); /* it waited for a run asked for now */
		return;
	}
	/* a request waits out a pause (pgleader trigger refused to write
	 * one for a paused job: this one came first, or our reading of the
	 * controls is a ping interval behind a resume) */
	if (jb->n_pend > 0 && !jb->paused && (tick == INT64_MIN || jb->pend[0].tick < tick)) {
		claim_request(jb);
		return;
	}
	if (tick == INT64_MIN)
		return;
	jb->queued = INT64_MIN;
	retry_overtaken(jb);
	run_tick(jb, tick, false);
}

static bool pending_has(const struct job *jb, int64_t id)
{
	if (jb->state == JOB_CLAIMING && jb->claim_trigger == id)
		return true;
	for (int i = 0; i < jb->n_pend; i++)
		if (jb->pend[i].id == id)
			return true;
	return false;
}

/* One request the read found: kept by its job (the ledger keeps it until
 * its run is claimed, so one kept twice is claimed once). */
static void take_request(struct jobs_state *j, const struct jobs_trigger *t)
{
	struct job *jb = NULL;

	for (size_t i = 0; i < j->n && !jb; i++)
		if (!j->job[i].removed && strcmp(j->job[i].cfg->name, t->job ? t->job : "") == 0)
			jb = &j->job[i];
	if (!jb || !jb->sched) {
		if (!j->stranger_said)
			say(j, LOG_LEVEL_WARNING, "a run of job %s was asked for now by %s, "
			    "but this leader has no such scheduled job; the request stays "
			    "for a leader that has", t->job ? t->job : "", t->asked_by);
		j->stranger_said = true;
		return;
	}
	if (pending_has(jb, t->id) || jb->n_pend == PENDING)
		return;
	jb->pend[jb->n_pend] = (struct pending){ .id = t->id, .tick = t->tick };
	snprintf(jb->pend[jb->n_pend].by, sizeof(jb->pend[0].by), "%s",
		 t->asked_by ? t->asked_by : "");
	jb->n_pend++;
}

static void read_requests(struct jobs_state *j)
{
	if (j->reading || !j->active || !j->begun)
		return;
	j->reading = true;
	j->read_gen = j->gen;
	act(j, JOBS_DO_TRIGGERS, -1);
}

/* The requests to run now are read at the leader's ping interval (a
 * pause is read as often), and at once as the term begins. */
static void requests_timer(struct jobs_state *j, double after)
{
	struct jobs_action *a = act(j, JOBS_DO_TIMER, -1);

	a->timer = JOBS_TIMER_TRIGGERS;
	a->after = after;
}

static bool reads_requests(const struct jobs_state *j)
{
	if (!j->has_ledger || j->cfg->once_per_ms > 0)
		return false;
	for (size_t i = 0; i < j->n; i++)
		if (j->job[i].sched && !j->job[i].removed)
			return true;
	return false;
}

static void requests_read(struct jobs_state *j, const struct jobs_answer *a)
{
	j->reading = false;
	if (j->read_gen != j->gen || !j->active)
		return;
	if (a->ok) {
		sync_clock(j, a);
		for (int i = 0; i < a->n_triggers; i++)
			take_request(j, &a->triggers[i]);
	} else if (!a->lost) {
		say(j, LOG_LEVEL_DEBUG, "cannot read the runs asked for now: %s", a->error);
	}
	if (j->reread) { /* a request came while the read was on its way */
		j->reread = false;
		read_requests(j);
		return;
	}
	requests_timer(j, (double)j->cfg->ping_interval_ms / 1000);
}

/* pgleader trigger wrote a request (its NOTIFY): read at once, not at the
 * next ping interval; a read on its way is followed by another. */
static void notified(struct jobs_state *j)
{
	if (!j->active || !j->begun || !reads_requests(j))
		return;
	if (j->reading)
		j->reread = true;
	else
		read_requests(j);
}

/* After each step: what waits and may run now starts. */
static void sweep(struct jobs_state *j)
{
	for (size_t i = 0; i < j->n; i++) {
		struct job *jb = &j->job[i];

		next_up(jb);
		jb->view.waiting = jb->n_pend + (jb->queued != INT64_MIN);
	}
}

/* The lead ends: what waited is left; the requests stay in the ledger for
 * the next leader, and a queued tick is the next leader's to find missed. */
static void forget_waiting(struct jobs_state *j)
{
	for (size_t i = 0; i < j->n; i++) {
		j->job[i].n_pend = 0;
		j->job[i].queued = INT64_MIN;
		j->job[i].planned = false;
	}
	if (reads_requests(j))
		requests_timer(j, -1);
	j->stranger_said = false;
	j->reread = false;
}

/* ---- the step ---- */

static void timer_out(struct jobs_state *j, struct job *jb, enum jobs_timer t)
{
	if (t == JOBS_TIMER_FLUSH) {
		check_gone(j);
	} else if (t == JOBS_TIMER_DRAIN) {
		drain_out(j);
	} else if (t == JOBS_TIMER_LIMIT && jb->removed) {
		removed_out(jb);
	} else if (t == JOBS_TIMER_LIMIT) {
		limit_out(jb);
	} else if (t == JOBS_TIMER_TICK) {
		if (j->active) {
			retry_overtaken(jb);
			plan_and_run(jb, jb->next_tick);
		}
	} else if (t == JOBS_TIMER_RETRY) {
		retry_due(jb);
	} else if (t == JOBS_TIMER_TRIGGERS) {
		read_requests(j);
	} else if (j->active) {
		ask_last(jb, false); /* WAIT */
	}
}

static void removed_out(struct job *jb);
static void reload(struct jobs_state *j, const struct config *fresh);

typedef void (*handler)(struct jobs_state *j, struct job *jb,
			const struct jobs_event *ev);

static void on_lead_began(struct jobs_state *j, struct job *jb,
			  const struct jobs_event *ev)
{
	(void)jb;
	lead_began(j, &ev->term);
}
static void on_lock_pid(struct jobs_state *j, struct job *jb,
			const struct jobs_event *ev)
{
	(void)jb;
	lock_pid(j, ev->lock_pid);
}
static void on_lead_ending(struct jobs_state *j, struct job *jb,
			   const struct jobs_event *ev)
{
	(void)jb;
	lead_ends(j, ev->drain);
}
static void on_kill(struct jobs_state *j, struct job *jb,
		    const struct jobs_event *ev)
{
	(void)jb;
	(void)ev;
	to_runs(j, JOBS_DO_KILL, 0);
}
static void on_signal(struct jobs_state *j, struct job *jb,
		      const struct jobs_event *ev)
{
	(void)jb;
	to_runs(j, JOBS_DO_SIGNAL, ev->sig);
}
static void on_pauses(struct jobs_state *j, struct job *jb,
		      const struct jobs_event *ev)
{
	(void)jb;
	pauses(j, ev->pauses);
}
static void on_resumes(struct jobs_state *j, struct job *jb,
		       const struct jobs_event *ev)
{
	(void)jb;
	resumes(j, ev->pauses);
}
static void on_ensured(struct jobs_state *j, struct job *jb,
		       const struct jobs_event *ev)
{
	(void)jb;
	ensured(j, ev->answer);
}
static void on_remade(struct jobs_state *j, struct job *jb,
		      const struct jobs_event *ev)
{
	(void)j;
	remade(jb, ev->answer);
}
static void on_claimed(struct jobs_state *j, struct job *jb,
		       const struct jobs_event *ev)
{
	(void)j;
	claim_answered(jb, ev->answer);
}
static void on_recorded(struct jobs_state *j, struct job *jb,
			const struct jobs_event *ev)
{
	(void)j;
	recorded(jb, ev->answer);
}
static void on_last(struct jobs_state *j, struct job *jb,
		    const struct jobs_event *ev)
{
	(void)j;
	last_answered(jb, ev->answer);
}
static void on_run_started(struct jobs_state *j, struct job *jb,
			   const struct jobs_event *ev)
{
	(void)j;
	run_started(jb, ev->pid);
}
static void on_start_failed(struct jobs_state *j, struct job *jb,
			    const struct jobs_event *ev)
{
	(void)j;
	start_failed(jb, ev->error ? ev->error : "");
}
static void on_run_gone(struct jobs_state *j, struct job *jb,
			const struct jobs_event *ev)
{
	(void)j;
	run_gone(jb, ev->status, ev->last_line);
}
static void on_timer(struct jobs_state *j, struct job *jb,
		     const struct jobs_event *ev)
{
	timer_out(j, jb, ev->timer);
}
static void on_reload(struct jobs_state *j, struct job *jb,
		      const struct jobs_event *ev)
{
	(void)jb;
	reload(j, ev->cfg);
}

static void on_failure_claimed_ev(struct jobs_state *j, struct job *jb,
				  const struct jobs_event *ev)
{
	(void)j;
	on_failure_claimed(jb, ev->answer);
}
static void on_failure_done_ev(struct jobs_state *j, struct job *jb,
			       const struct jobs_event *ev)
{
	(void)j;
	on_failure_done(jb, ev);
}
static void on_triggers(struct jobs_state *j, struct job *jb,
			const struct jobs_event *ev)
{
	(void)jb;
	requests_read(j, ev->answer);
}
static void on_notified(struct jobs_state *j, struct job *jb,
			const struct jobs_event *ev)
{
	(void)jb;
	(void)ev;
	notified(j);
}

/* Each event type's handler; per_job: it names a job, which must be one. */
static const struct {
	handler fn;
	bool per_job;
} handlers[] = {
	[JOBS_EV_LEAD_BEGAN] = { on_lead_began, false },
	[JOBS_EV_LOCK_PID] = { on_lock_pid, false },
	[JOBS_EV_LEAD_ENDING] = { on_lead_ending, false },
	[JOBS_EV_KILL] = { on_kill, false },
	[JOBS_EV_SIGNAL] = { on_signal, false },
	[JOBS_EV_PAUSES] = { on_pauses, false },
	[JOBS_EV_RESUMES] = { on_resumes, false },
	[JOBS_EV_ENSURED] = { on_ensured, false },
	[JOBS_EV_REMADE] = { on_remade, true },
	[JOBS_EV_CLAIMED] = { on_claimed, true },
	[JOBS_EV_RECORDED] = { on_recorded, true },
	[JOBS_EV_LAST] = { on_last, true },
	[JOBS_EV_RUN_STARTED] = { on_run_started, true },
	[JOBS_EV_START_FAILED] = { on_start_failed, true },
	[JOBS_EV_RUN_GONE] = { on_run_gone, true },
	[JOBS_EV_TIMER] = { on_timer, false },
	[JOBS_EV_ON_FAILURE_CLAIMED] = { on_failure_claimed_ev, true },
	[JOBS_EV_ON_FAILURE_DONE] = { on_failure_done_ev, true },
	[JOBS_EV_RELOAD] = { on_reload, false },
	[JOBS_EV_TRIGGERS] = { on_triggers, false },
	[JOBS_EV_NOTIFIED] = { on_notified, false },
};

void jobs_step(struct jobs_state *j, const struct jobs_event *ev, double now,
	       struct jobs_output *out)
{
	struct job *jb = NULL;

	out->n = 0;
	out->lost = false;
	if ((size_t)ev->type >= sizeof(handlers) / sizeof(handlers[0]))
		return;
	if (ev->job >= 0 && (size_t)ev->job < j->n)
		jb = &j->job[ev->job];
	if (!jb && (handlers[ev->type].per_job ||
		    (ev->type == JOBS_EV_TIMER && ev->timer < JOBS_TIMER_FLUSH)))
		return;
	j->now = now;
	j->ev = ev;
	j->out = out;
	j->sent = false;
	handlers[ev->type].fn(j, jb, ev);
	sweep(j);
	j->ev = NULL;
	j->out = NULL;
}

void jobs_output_free(struct jobs_output *out)
{
	free(out->a);
	out->a = NULL;
	out->n = out->cap = 0;
}

/* ---- what is seen ---- */

/* A job is seen unless a reload removed it and its run is over. */
static bool shown(const struct job *jb)
{
	return !jb->removed || jb->state != JOB_IDLE;
}

size_t jobs_state_count(const struct jobs_state *j)
{
	size_t n = 0;

	for (size_t i = 0; i < j->n; i++)
		n += shown(&j->job[i]);
	return n;
}

void jobs_state_view(const struct jobs_state *j, size_t i, struct jobs_view *v)
{
	const struct job *jb = j->job;

	for (size_t k = 0; k < j->n; k++, jb++)
		if (shown(jb) && i-- == 0)
			break;

	*v = jb->view;
	v->removed = jb->removed;
	v->paused = jb->paused;
	v->paused_by = jb->paused && jb->paused_by[0] ? jb->paused_by : NULL;
	v->paused_at = jb->paused && jb->paused_at[0] ? jb->paused_at : NULL;
}

/* ---- set-up ---- */

static bool job_init(struct jobs_state *j, struct job *jb, size_t i,
		     const struct config_job *cfg, char *err, size_t errlen)
{
	jb->owner = j;
	jb->index = (int)i;
	jb->cfg = cfg;
	jb->next_tick = INT64_MIN;
	jb->last_handled = INT64_MIN;
	jb->resumed_at = INT64_MIN;
	jb->queued = INT64_MIN;
	jb->regained = INT64_MIN;
	jb->first_planned = INT64_MIN;
	jb->view.name = cfg->name;
	jb->view.timezone = cfg->timezone;
	if (cfg->schedule) {
		jb->sched = schedule_new(cfg->schedule, cfg->timezone, err, errlen);
		if (!jb->sched)
			return false;
		jb->view.schedule = schedule_expr(jb->sched);
	}
	return true;
}

struct jobs_state *jobs_state_new(const struct config *cfg, bool has_ledger,
				  char *err, size_t errlen)
{
	struct jobs_state *j = calloc(1, sizeof(*j));

	if (!j || !(j->job = calloc(cfg->n_jobs ? cfg->n_jobs : 1, sizeof(*j->job)))) {
		free(j);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	j->cfg = cfg;
	j->has_ledger = has_ledger;
	j->last_prune = -PRUNE_EVERY;
	j->offset_err_ms = INFINITY;
	for (size_t i = 0; i < cfg->n_jobs; i++, j->n++) {
		if (!job_init(j, &j->job[i], i, &cfg->jobs[i], err, errlen)) {
			jobs_state_free(j);
			return NULL;
		}
	}
	return j;
}

void jobs_state_free(struct jobs_state *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++)
		schedule_free(j->job[i].sched);
	free(j->job);
	free(j);
}
