/* invariants.c: what the simulator checks after every event
 * (tests/sim/README.md): one command at a time but for the exempt faults
 * and their bounds, the fencing tokens, failsafe, the lock's queue, the
 * ticks of the jobs, and the liveness bound. */
#include "sim.h"

#include "jobs_retry.h"

/* ---- the invariants, after every event ---------------------------------- */

/* The man page's SAFETY section exempts some faults from "one command at
 * a time", each with a bound; a node is covered while its window lasts. */
static bool node_exempt(int i)
{
	return W.nodes[i].frozen || T < W.exempt_node_until[i];
}

/* A command starts with its term's token: a new term's is the one its lock
 * session read. Back from failsafe the term goes on (DESIGN 9), and so
 * does its token, although the new lock session read a newer one. */
void check_token(struct node *n)
{
	const struct election_snapshot *s = election_snapshot(n->el);
	bool same_term = n->i == W.last_token_node && n->inc == W.last_inc &&
			 s->term == W.last_term;

	if (same_term)
		return; /* a restart of the command, or back from failsafe */
	if (s->fencing_token != n->lock.token) {
		fail_at(1u << n->i, "%s: the snapshot's fencing token %" PRIu64
			" is not the session's %" PRIu64, n->name,
			s->fencing_token, n->lock.token);
		return;
	}
	/* inside an exempt overlap an older term's command may start after a
	 * newer one (its fence grant was late): the token is what fences it */
	if (s->fencing_token <= W.last_token && !node_exempt(n->i) &&
	    T >= W.exempt_db_until)
		fail_at(1u << n->i | (W.last_token_node >= 0 ? 1u << W.last_token_node : 0),
			"%s: term %" PRIu64 " starts its command with fencing token %"
			PRIu64 ", not above the previous term's %" PRIu64 " (%s)",
			n->name, s->term, s->fencing_token, W.last_token,
			node_name(W.last_token_node));
	if (s->fencing_token < W.last_token)
		return;
	W.last_token = s->fencing_token;
	W.last_token_node = n->i;
	W.last_inc = n->inc;
	W.last_term = s->term;
}

/* ---- ticks (DESIGN 10) -------------------------------------------------- */

static const char *tick_text(int64_t ms, char *buf, size_t len)
{
	snprintf(buf, len, "%.3f", t_of_ms(ms));
	return buf;
}

/* ---- DESIGN 13: retries and on_failure ---- */

/* Job j's configuration, as the nodes loaded it. */
static const struct config_job *job_cfg(int j)
{
	const struct config *c = &W.nodes[0].cfg;

	for (size_t i = 0; i < c->n_jobs; i++)
		if (!strcmp(c->jobs[i].name, W.job_name[j]))
			return &c->jobs[i];
	abort();
}

static bool failed_row(const struct lrow *r)
{
	return r->finished && (!strcmp(r->outcome, "failed") || !strcmp(r->outcome, "timed_out"));
}

/* An attempt after the first starts only after the attempt before it
 * failed, within retries, and not once its tick's next tick has fallen
 * due (the newer tick wins): its claim went out before then, and is
 * answered within TICK_MARGIN. */
static void check_attempt(struct node *n, int j, const struct lrow *r)
{
	const struct lrow *prev;
	int64_t next;
	char at[32];

	if (r->attempt <= 1)
		return;
	prev = row_attempt(j, r->tick, r->attempt - 1);
	if (r->attempt > job_cfg(j)->retries + 1 || !prev || !failed_row(prev))
		fail_at(1u << n->i, "%s: job %s's attempt %d of tick %s starts, but "
			"attempt %d %s (retries %d)", n->name, W.job_name[j], r->attempt,
			tick_text(r->tick, at, sizeof(at)), r->attempt - 1,
			prev ? prev->outcome : "has no row", job_cfg(j)->retries);
	next = schedule_next(W.sched[j], r->tick);
	if (next != SCHEDULE_NEVER &&
	    db_ms() > next + W.jitter_ms[j] + (int64_t)(TICK_MARGIN * 1000))
		fail_at(1u << n->i, "%s: job %s's attempt %d of tick %s starts %.1fs "
			"after the next tick fell due (the newer tick wins)", n->name,
			W.job_name[j], r->attempt, tick_text(r->tick, at, sizeof(at)),
			(double)(db_ms() - next) / 1000);
}

/* When the attempt after failed row r is due, by the daemon's rule from
 * the row's end (the server's, a little after the daemon's own: the
 * later due, so a bound from it holds); INT64_MIN when none follows (or
 * the next tick is too close to tell: within RETRY_CLOSE_MS, the most
 * the daemon's reading of the server's clock may run ahead of it). */
#define RETRY_CLOSE_MS 1000
static int64_t retry_due(int j, const struct lrow *r)
{
	const struct config_job *c = job_cfg(j);
	int64_t due, next = schedule_next(W.sched[j], r->tick);
	struct jobs_retry_run run = {
		.outcome = jobs_outcome_from_name(r->outcome), .attempt = r->attempt,
		.retries = c->retries, .first_ms = c->retry_delay_ms,
		.max_ms = c->retry_max_delay_ms, .lock_key = W.nodes[0].cfg.lock_key,
		.job = W.job_name[j], .tick = r->tick, .ended = r->finished_ms,
		.next_tick = next, .now = r->finished_ms,
	};

	if (jobs_retry_decide(&run, &due) != JOBS_RETRY_AGAIN || due + RETRY_CLOSE_MS >= next)
		return INT64_MIN;
	return due;
}

static unsigned alive_of(int j);

/* A failed attempt's next one, TICK_MARGIN after it was due: when a
 * node led steadily from before it was due until now, it has a row. */
static void check_retries(void)
{
	double now_ms = (double)db_ms();

	for (int k = 0; k < W.n_failed_rows; k++) {
		struct lrow *r = &W.rows[W.failed_rows[k]];
		int j = job_index(r->job);
		int64_t due;
		bool steady = false;
		char at[32];

		if (j < 0 || !W.sched[j] || r->trigger) { /* a run asked for now: no retry */
			W.failed_rows[k--] = W.failed_rows[--W.n_failed_rows];
			continue;
		}
		due = retry_due(j, r);
		if (due != INT64_MIN && now_ms >= (double)due && !r->due_seen) {
			r->due_seen = true;
			r->busy_at_due = alive_of(j) != 0;
		}
		if (due != INT64_MIN && now_ms < (double)due + TICK_MARGIN * 1000)
			continue;
		W.failed_rows[k--] = W.failed_rows[--W.n_failed_rows];
		for (int i = 0; i < W.n && due != INT64_MIN; i++)
			steady |= W.nodes[i].steady_since <= t_of_ms(due) - net_slack;
		if (!steady)
			continue;
		/* a run asked for now went on when it was due: the attempt
		 * follows it, or the next tick overtook it (DESIGN 13) */
		if (r->busy_at_due)
			continue;
		W.retries_checked++;
		if (row_attempt(j, r->tick, r->attempt + 1))
			continue;
		fail_at((1u << W.n) - 1, "job %s's attempt %d of tick %s was due %.1fs "
			"after attempt %d %s while a node led steadily, and %.1fs later it "
			"has no row", W.job_name[j], r->attempt + 1,
			tick_text(r->tick, at, sizeof(at)),
			(double)(due - r->finished_ms) / 1000, r->attempt, r->outcome,
			TICK_MARGIN);
	}
}

/* An on_failure command starts: its row is marked sent by this node, in
 * this incarnation, and it is the only one ever for that run. */
void check_on_failure_start(struct node *n, int64_t run_id)
{
	struct lrow *r = row_by_id(run_id);

	if (!r || strcmp(r->on_failure, "sent") || r->on_failure_by != n->i ||
	    r->on_failure_inc != n->inc) {
		fail_at(1u << n->i, "%s: on_failure for run %" PRId64 " starts, but its "
			"row %s", n->name, run_id, !r ? "is not there"
			: strcmp(r->on_failure, "sent") ? "does not record it sent"
			: "records it sent by another pgleader");
		return;
	}
	if (++r->on_failure_runs > 1)
		fail_at(1u << n->i, "%s: on_failure for run %" PRId64 " starts a second "
			"time", n->name, run_id);
	W.on_failures_run++;
}

/* Whether job j's newest row is a failure with no attempt to follow,
 * settled TICK_MARGIN before now. */
static bool failed_for_good(int j, const struct lrow *r)
{
	int64_t next = schedule_next(W.sched[j], r->tick);
	int64_t limit = db_ms() - (int64_t)(TICK_MARGIN * 1000);

	if (!failed_row(r) || r->finished_ms > limit)
		return false;
	return r->attempt > job_cfg(j)->retries ||
	       (next != SCHEDULE_NEVER && next + W.jitter_ms[j] <= limit);
}

/* Job j's newest row (by tick, then attempt), or NULL. */
static const struct lrow *newest_row(int j)
{
	const struct lrow *newest = NULL;

	for (size_t k = 0; k < W.n_rows; k++) {
		const struct lrow *r = &W.rows[k];

		if (job_index(r->job) == j && (!newest || r->tick > newest->tick ||
		    (r->tick == newest->tick && r->attempt > newest->attempt)))
			newest = r;
	}
	return newest;
}

/* Whether an on_failure claimed TICK_MARGIN ago by a node that led on
 * since, in the same incarnation, never ran. */
static bool claimed_not_run(const struct lrow *r)
{
	const struct node *n;

	if (strcmp(r->on_failure, "sent") || r->on_failure_runs ||
	    r->on_failure_at > T - TICK_MARGIN)
		return false;
	n = &W.nodes[r->on_failure_by];
	return n->up && n->inc == r->on_failure_inc && n->steady_since <= r->on_failure_at;
}

/* Whether a LAST told node n, leading steadily since, in the same
 * incarnation, TICK_MARGIN ago, that the row's on_failure was owed, and it
 * is owed still: the node never claimed it (DESIGN 13: a new leader sends
 * the newest on_failure owed that nobody claimed). */
static bool told_owed_not_claimed(const struct lrow *r)
{
	const struct node *n;

	if (!r || strcmp(r->on_failure, "owed") || r->owed_told_at <= 0 ||
	    r->owed_told_at > T - TICK_MARGIN)
		return false;
	n = &W.nodes[r->owed_told_node];
	return n->up && n->inc == r->owed_told_inc && n->steady_since <= T - TICK_MARGIN &&
	       n->steady_since <= r->owed_told_at + TICK_MARGIN;
}

/* At the end: each job's newest run that failed for good, with a node
 * leading steadily for TICK_MARGIN, had its on_failure sent (never lost),
 * and one claimed by a node that led on since ran. */
void check_on_failure_end(void)
{
	bool steady = false;

	for (int i = 0; i < W.n; i++)
		steady |= W.nodes[i].steady_since <= T - TICK_MARGIN;
	for (int j = 0; j < W.n_jobs && steady && !W.failed; j++) {
		const struct lrow *newest, *any, *owed;

		if (!W.sched[j] || !job_cfg(j)->on_failure || !(newest = newest_row(j)))
			continue;
		newest_rows(j, &any, &owed);
		if (failed_for_good(j, newest) && strcmp(newest->on_failure, "sent"))
			fail_at((1u << W.n) - 1, "job %s's run %" PRId64 " failed for good, "
				"a node led steadily since, and its on_failure was never sent "
				"(%s)", W.job_name[j], newest->run_id,
				newest->on_failure[0] ? newest->on_failure : "not owed");
		else if (told_owed_not_claimed(owed))
			fail_at(1u << owed->owed_told_node, "%s was told that the on_failure "
				"of job %s's run %" PRId64 " was owed, led on, and never "
				"claimed it", W.nodes[owed->owed_told_node].name,
				W.job_name[j], owed->run_id);
		else if (claimed_not_run(newest))
			fail_at(1u << newest->on_failure_by, "%s claimed the on_failure of job "
				"%s's run %" PRId64 ", led on, and never ran it",
				W.nodes[newest->on_failure_by].name, W.job_name[j],
				newest->run_id);
	}
}

/* A run of a scheduled job starts: its tick was claimed in the ledger by
 * this node's term (the row's token is the command's), and it is the
 * first command of that tick, in the whole fleet, under any fault. */
void check_run_start(struct node *n, struct child *ch)
{
	const char *job;
	struct lrow *r;
	char at[32];

	if (ch->job < 0 || !W.sched[ch->job])
		return;
	job = W.job_name[ch->job];
	if (ch->run_id <= 0) {
		fail_at(1u << n->i, "%s: a run of scheduled job %s starts without a "
			"tick claimed in the ledger", n->name, job);
		return;
	}
	r = row_by_id(ch->run_id);
	if (!r) {
		fail_at(1u << n->i, "%s: job %s's run %" PRId64 " has no row", n->name,
			job, ch->run_id);
		return;
	}
	ch->tick = r->tick;
	if (r->token != ch->token || r->node != n->i || r->finished)
		fail_at(1u << n->i, "%s: job %s's run for tick %s starts with token %"
			PRIu64 ", its row is %s's, token %" PRIu64 ", %s", n->name, job,
			tick_text(r->tick, at, sizeof(at)), ch->token, node_name(r->node),
			r->token, r->outcome);
	if (++r->starts > 1)
		fail_at(1u << n->i, "job %s's %s %s runs a second time (%s, token %"
			PRIu64 ")", job, r->trigger ? "run asked for now at" : "tick",
			tick_text(r->tick, at, sizeof(at)), n->name, ch->token);
	W.triggers_run += r->trigger != 0;
	check_attempt(n, ch->job, r);
	W.ticks_run++;
}

/* The line that says how a run ended (DESIGN 13): a warning when it
 * failed, timed out or was interrupted, so that --log-level warning shows
 * it; info when it succeeded. text is a line jobs.c logs. */
void check_run_end_line(struct node *n, enum log_level level, const char *text)
{
	static const struct { const char *outcome; enum log_level level; } ends[] = {
		{ "succeeded", LOG_LEVEL_INFO }, { "failed", LOG_LEVEL_WARNING },
		{ "timed_out", LOG_LEVEL_WARNING }, { "interrupted", LOG_LEVEL_WARNING },
	};
	char job[64], tick[40], outcome[16];
	long long run;

	if (sscanf(text, "job %63s run %lld for tick %39s %15s (exit status", job, &run,
		   tick, outcome) != 4)
		return;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		if (!strcmp(outcome, ends[i].outcome) && level != ends[i].level)
			fail_at(1u << n->i, "%s: the end of run %lld (%s) is logged at "
				"level %d, not %d: \"%s\"", n->name, run, outcome,
				(int)level, (int)ends[i].level, text);
}

/* A node leads steadily: its jobs' ticks are planned this term (each has
 * a next tick), it holds the lock and the fence with the sessions it
 * knows, nothing paused, nothing parted, frozen or restarting. */
/* Whether the server's holder of the lock (k 0) or the fence (k 1) is
 * session c. */
static bool holds(const struct csess *c, int k)
{
	return W.holder[k] >= 0 && W.s[W.holder[k]].conn == c->conn;
}

static bool node_steady(struct node *n)
{
	const struct election_snapshot *s;

	if (!n->up || n->frozen || !n->jobs || W.part_db[n->i] || !W.db_up)
		return false;
	s = election_snapshot(n->el);
	if (s->state != ELECTION_LEADER || !s->command_active)
		return false;
	if (!holds(&n->lock, 0) || !holds(&n->fence, 1))
		return false;
	for (int j = 0; j < W.n_jobs; j++) {
		struct jobs_view v;

		jobs_view(n->jobs, (size_t)j, &v);
		if (v.paused || (W.sched[j] && v.next_tick == 0))
			return false;
	}
	return true;
}

/* A fault or a heal: every steady period starts again. */
void unsteady(void)
{
	for (int i = 0; i < W.n; i++)
		W.nodes[i].steady_since = INFINITY;
}

/* Tick t of job j, TICK_MARGIN after it fell: when a node led steadily
 * from before it until now, the tick has a row, and it is not "missed"
 * (it ran, or was skipped because the run before was still going). With
 * overlap queue or replace (DESIGN 13) a tick that fell during a run is
 * claimed once the run is gone: checked TICK_MARGIN after the job's last
 * run was last seen alive. false: not yet. */
static bool check_tick(int j, int64_t t)
{
	bool steady = false;
	struct lrow *r;
	char at[32];

	for (int i = 0; i < W.n; i++)
		steady |= W.nodes[i].steady_since <= t_of_ms(t) - net_slack;
	if (!steady)
		return true;
	r = row_at(j, t);
	if (!r && W.overlap[j] != OVERLAP_SKIP && T < W.last_alive[j] + TICK_MARGIN)
		return false;
	W.ticks_checked++;
	if (!r || !strcmp(r->outcome, "missed"))
		fail_at((1u << W.n) - 1, "job %s's tick %s fell while a node led "
			"steadily, and %.1fs later it %s", W.job_name[j],
			tick_text(t, at, sizeof(at)), TICK_MARGIN,
			r ? "is recorded missed" : "has no row");
	return true;
}

static unsigned alive_of(int j);

static void check_ticks(void)
{
	for (int i = 0; i < W.n; i++) {
		struct node *n = &W.nodes[i];

		if (!n->jobs || !node_steady(n))
			n->steady_since = INFINITY;
		else if (!isfinite(n->steady_since))
			n->steady_since = T;
	}
	for (int j = 0; j < W.n_jobs; j++) {
		if (alive_of(j))
			W.last_alive[j] = T;
		while (W.sched[j] && W.check_tick[j] != SCHEDULE_NEVER &&
		       T >= t_of_ms(W.check_tick[j] + W.jitter_ms[j]) + TICK_MARGIN &&
		       check_tick(j, W.check_tick[j]))
			W.check_tick[j] = schedule_next(W.sched[j], W.check_tick[j]);
	}
}

/* DESIGN 13: a run asked for now is claimed once a node leads steadily,
 * within the ping interval (the leader's read) and TICK_MARGIN after the
 * job's run going on, if any, was last seen alive (a request waits for
 * it). */
static void check_triggers(void)
{
	for (int k = 0; k < W.n_trigs; k++) {
		const struct trig *g = &W.trigs[k];
		double from = fmax(g->asked, W.last_alive[g->job]);

		if (g->run_id)
			continue;
		for (int i = 0; i < W.n; i++) {
			double since = fmax(from, W.nodes[i].steady_since);

			if (!isfinite(W.nodes[i].steady_since) ||
			    T < since + W.p.ping_interval + TICK_MARGIN)
				continue;
			fail_at(1u << i, "the run of job %s asked for now at %.3fs (request %"
				PRId64 ") is not claimed %.1fs after %s led steadily and the "
				"job's last run ended", W.job_name[g->job], g->asked, g->id,
				T - since, W.nodes[i].name);
			return;
		}
	}
}

/* At the end: no tick is lost silently. From each job's first row to
 * the last planned tick every tick has a row, but the older ticks of a
 * long gap: tickplan records the newest TICKPLAN_ROWS missed ticks of a
 * gap one row each and counts the others in the log (exempt: a stretch
 * without rows right before TICKPLAN_ROWS missed rows). */
/* Job j's first tick with a row, or INT64_MAX. */
static int64_t first_row(int j)
{
	int64_t first = INT64_MAX;

	for (size_t k = 0; k < W.n_rows; k++)
		if (job_index(W.rows[k].job) == j && !W.rows[k].trigger && W.rows[k].tick < first)
			first = W.rows[k].tick;
	return first;
}

/* Job j's newest tick with a row (a run asked for now is none). */
static int64_t newest_tick(int j)
{
	int64_t newest = INT64_MIN;

	for (size_t k = 0; k < W.n_rows; k++)
		if (job_index(W.rows[k].job) == j && !W.rows[k].trigger &&
		    W.rows[k].tick > newest)
			newest = W.rows[k].tick;
	return newest;
}

/* A gap of job j's ticks without a row from t on: the tick after it (a
 * row's, or past limit), or SCHEDULE_NEVER when the gap is a hole, not
 * the older ticks of a long gap that tickplan records TICKPLAN_ROWS of. */
static int64_t gap_end(int j, int64_t t, int64_t limit)
{
	int64_t u;
	int missed = 0;

	for (u = t; u != SCHEDULE_NEVER && u <= limit && !row_at(j, u);)
		u = schedule_next(W.sched[j], u);
	/* the newest TICKPLAN_ROWS ticks of the gap recorded missed; those
	 * that fell after a failsafe regain skipped, the newest of them run
	 * (jobs_step.c, fell_since): one run at most among them */
	for (int64_t m = u, ran = 0; m != SCHEDULE_NEVER && row_at(j, m) &&
	     missed < TICKPLAN_ROWS; m = schedule_next(W.sched[j], m)) {
		const char *o = row_at(j, m)->outcome;

		if (strcmp(o, "missed") && strcmp(o, "skipped") && ran++)
			break;
		missed++;
	}
	if (missed < TICKPLAN_ROWS) {
		char a[32], b[32];

		fail_at((1u << W.n) - 1, "job %s's ticks from %s on (before %s) "
			"have no row: lost without a trace", W.job_name[j],
			tick_text(t, a, sizeof(a)), tick_text(u, b, sizeof(b)));
		return SCHEDULE_NEVER;
	}
	return u;
}

void check_lost(void)
{
	int64_t limit = db_ms() - (int64_t)(TICK_MARGIN * 1000);

	for (int j = 0; j < W.n_jobs && !W.failed; j++) {
		int64_t t, lim = limit;

		/* a tick queued behind the run going on (DESIGN 13) has no
		 * row yet */
		if (W.overlap[j] != OVERLAP_SKIP && T < W.last_alive[j] + TICK_MARGIN)
			lim = newest_tick(j) < lim ? newest_tick(j) : lim;
		for (t = first_row(j); W.sched[j] && t != INT64_MAX && t != SCHEDULE_NEVER &&
		     t <= lim - W.jitter_ms[j]; t = schedule_next(W.sched[j], t)) {
			if (row_at(j, t))
				continue;
			t = gap_end(j, t, limit);
			if (t == SCHEDULE_NEVER)
				return;
		}
	}
}

/* Liveness: when, after the last fault, a node first led with its command. */
static void note_leader(void)
{
	if (T < W.faults_end || isfinite(W.led_after_heal))
		return;
	for (int i = 0; i < W.n; i++)
		if (W.nodes[i].up && W.nodes[i].el->state == ELECTION_LEADER &&
		    (W.nodes[i].jobs ? election_snapshot(W.nodes[i].el)->command_active
		     : cmd_alive(&W.nodes[i])))
			W.led_after_heal = T;
}
const char *const overlap_names[OV_N] = { "database restart or failover",
	"leader frozen", "both sessions ended" };
double overlap_max[OV_N];
uint64_t overlap_seed[OV_N];
uint64_t cur_seed;
double overlap_began = INFINITY;
static int overlap_kind;

static void measure_overlap(unsigned alive)
{
	if (__builtin_popcount(alive) > 1 && !isfinite(overlap_began)) {
		overlap_began = T;
		overlap_kind = OV_SESSIONS;
		if (db_exempt())
			overlap_kind = OV_DB;
		for (int i = 0; i < W.n; i++)
			if ((alive >> i & 1) && (W.nodes[i].frozen || (node_exempt(i) &&
			    !strcmp(W.exempt_node_why[i], "leader frozen"))))
				overlap_kind = OV_FROZEN;
		return;
	}
	if (__builtin_popcount(alive) > 1 || !isfinite(overlap_began))
		return;
	if (T - overlap_began > overlap_max[overlap_kind]) {
		overlap_max[overlap_kind] = T - overlap_began;
		overlap_seed[overlap_kind] = cur_seed;
	}
	overlap_began = INFINITY;
}

/* One token is the truth: /status and the metrics (the snapshot) show the
 * token each running command was started with (known.txt had it as
 * finding 1: a command restarted after a failsafe regain got the new lock
 * session's token, the snapshot kept the term's). */
static void check_command_tokens(void)
{
	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];
		uint64_t shown = n->up ? election_snapshot(n->el)->fencing_token : 0;

		for (int k = 0; n->up && k < n->n_procs; k++) {
			const struct child *ch = n->procs[k];

			if (ch && ch->alive && shown != ch->token)
				fail_at(1u << i, "%s: the snapshot shows fencing token %"
					PRIu64 ", its command (pid %d) was started with %"
					PRIu64, n->name, shown, ch->pid, ch->token);
		}
	}
}

/* The nodes where job j's command (the single command: j 0) is alive. */
static unsigned alive_of(int j)
{
	unsigned m = 0;

	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];
		const struct child *ch = n->jobs ? (j < n->n_procs ? n->procs[j] : NULL)
				       : j == 0 ? n->procs[0] : NULL;

		if (ch && ch->alive)
			m |= 1u << i;
	}
	return m;
}

/* A standby that may ask for the lock: running, not holding off after a
 * switchover, of priority above 0. */
static bool may_ask(const struct node *n)
{
	return n->up && !n->frozen && n->el->state == ELECTION_STANDBY &&
	       n->el->hold_until <= n->el->snap.now && n->el->p.priority > 0;
}

static bool could_queue(const struct node *n)
{
	return may_ask(n) && n->lock.phase != PH_CLOSED && n->lock.phase != PH_CONNECTING;
}

/* poll_dsn: a standby that polls through the pooler (its polls
 * answered) could queue too, within QUEUE_EMPTY_POOLED_BOUND */
static bool could_queue_pooled(const struct node *n)
{
	return may_ask(n) && n->el->pooled && n->el->poll_ok;
}

double queue_empty_since; /* INFINITY: not empty, or no matter */
double queue_empty_pooled_since; /* the same, for the pooled standbys */

/* The nodes waiting in the lock's queue, a bit each; never more than
 * queue_depth of them. */
static unsigned queue_waiting(void)
{
	unsigned waiting = 0;
	int n_waiting = 0;

	for (int k = 0; k < W.n_s; k++)
		if (W.s[k].alive && !W.s[k].skind && W.s[k].waiting) {
			waiting |= 1u << W.s[k].node;
			n_waiting++;
		}
	if (n_waiting > W.p.queue_depth)
		fail_at(waiting, "%d standbys wait in the lock's queue (queue_depth %d)",
			n_waiting, W.p.queue_depth);
	return waiting;
}

/* The standbys that could wait in the queue, a bit each; a polling
 * standby holds one session, the lock's. */
static unsigned queue_standbys(void)
{
	unsigned standbys = 0;

	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];
		bool polling = n->up && n->el->state == ELECTION_STANDBY && n->el->polling &&
			       !n->el->ctl_pending && !n->el->child_running;

		if (could_queue(n))
			standbys |= 1u << i;
		if (polling && n->fence.phase != PH_CLOSED)
			fail_at(1u << i, "%s: polls with its fence session open",
				n->name);
	}
	return standbys;
}

/* The queue empty since *since while standbys could wait in it: no
 * longer than bound. */
static void check_queue_empty(double *since, unsigned waiting, unsigned standbys,
			      double bound, const char *who)
{
	if (!W.p.wait_in_queue || waiting || !standbys || W.holder[0] < 0 ||
	    !W.db_up || T < W.faults_end) {
		*since = INFINITY;
		return;
	}
	if (isinf(*since))
		*since = T;
	if (T - *since > bound)
		fail_at(standbys, "the lock's queue stayed empty for %.1fs while "
			"%s could wait in it (bound %.1fs)", T - *since, who, bound);
}

static void check_queue(void)
{
	unsigned waiting = queue_waiting(), standbys = queue_standbys(), pooled = 0;

	for (int i = 0; i < W.n; i++)
		if (could_queue_pooled(&W.nodes[i]))
			pooled |= 1u << i;
	check_queue_empty(&queue_empty_since, waiting, standbys, QUEUE_EMPTY_BOUND,
			  "standbys");
	check_queue_empty(&queue_empty_pooled_since, waiting, pooled,
			  QUEUE_EMPTY_POOLED_BOUND, "standbys polling through the pooler");
}

/* At most one command per job (DESIGN 10: never two runs of a job at
 * once), outside the exempt windows; the nodes with more, a bit each. */
static unsigned check_one_command(void)
{
	unsigned over = 0;

	for (int j = 0; j < (W.n_jobs ? W.n_jobs : 1); j++) {
		unsigned a = alive_of(j), uncovered = 0;

		for (int i = 0; i < W.n; i++)
			if ((a >> i & 1) && !node_exempt(i))
				uncovered |= 1u << i;
		if (__builtin_popcount(a) > 1)
			over |= a;
		if (__builtin_popcount(a) > 1 && !db_exempt() &&
		    __builtin_popcount(uncovered) > 1)
			fail_at(a, "%d commands%s%s alive at once, no exempt fault covers it",
				__builtin_popcount(a), W.n_jobs ? " of job " : "",
				W.n_jobs ? W.job_name[j] : "");
	}
	return over;
}

/* Failsafe never keeps two leaders: one in failsafe, one leading, both
 * commands alive and neither exempt. */
static void check_failsafe_leaders(void)
{
	int fs = NOBODY, ld = NOBODY;

	for (int i = 0; i < W.n; i++) {
		const struct node *n = &W.nodes[i];

		if (!cmd_alive(n) || !n->up || node_exempt(i))
			continue;
		if (n->el->state == ELECTION_FAILSAFE)
			fs = i;
		else if (n->el->state == ELECTION_LEADER)
			ld = i;
	}
	check_command_tokens();
	if (fs >= 0 && ld >= 0)
		fail_at(1u << fs | 1u << ld, "failsafe keeps two leaders: %s in failsafe "
			"and %s leading, both commands alive", W.nodes[fs].name,
			W.nodes[ld].name);
}

void check_invariants(void)
{
	unsigned over = check_one_command();

	check_failsafe_leaders();
	measure_overlap(over);
	note_leader();
	check_ticks();
	check_triggers();
	check_retries();
	check_queue();
}

/* A leader within the bound after the last fault: the server lease (a
 * session the server must time out), the leader's detection and grace, a
 * queued wait or poll twice, failsafe's ttl (a silent member), a takeover
 * delay, and systemd starting a pgleader that exited or was killed. */
double liveness_bound(void)
{
	return W.server_lease + W.p.ping_interval * W.p.ping_failures +
	       W.p.ping_timeout + W.drain + W.grace + 2 * W.retry +
	       (W.failsafe ? W.p.failsafe_ttl : 0) + W.p.takeover_delay + 10 + 1;
}
