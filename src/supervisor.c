/* supervisor.c: the glue between the election's decisions and the I/O. */
#include "supervisor.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clocks.h"
#include "dynlib.h"
#include "election.h"
#include "failsafe.h"
#include "lease.h"
#include "ledger.h"
#include "log.h"
#include "notify.h"
#include "params.h"
#include "pooled.h"
#include "runner.h"

#define QUEUE_SIZE 32

struct queued_event {
	struct election_event ev;
	char reason[LOG_MSG_MAX];
	char node[64];             /* the peers' node, the controls' leader */
	struct election_answer *answer; /* a member's claim: its step's answer
					 * goes there; else NULL */
};

struct supervisor {
	struct ev_loop *loop;
	struct election *election;
	struct lease *lease;
	struct lease *fence;       /* the fence session (DESIGN 3) */
	struct runner *runner;     /* the command, or the jobs */
	struct ledger *ledger;     /* NULL unless the config uses it */
	struct ledger *lock_ledger; /* the controls of a polling standby, which
				     * has no fence session, over the lock
				     * session (DESIGN 15) */
	struct failsafe *failsafe; /* NULL unless failsafe_peers */
	struct poll *poll;         /* NULL unless poll_dsn (DESIGN 15) */
	ev_timer wakeup;
	ev_signal signals[5];

	/* Callbacks may fire from inside an action (a lease call that fails
	 * at once): events are queued and handled one at a time, in order. */
	struct queued_event queue[QUEUE_SIZE];
	unsigned head, tail;
	bool draining;

	unsigned short seed[3];    /* erand48: the jitter of each event */

	/* the operator controls (DESIGN 11): who asks, and the last read's
	 * whole-lock controls, which the event points into */
	char node_id[64];
	int priority;
	int64_t switchover_ms;     /* a priority switchover lapses after this */
	struct election_controls ctl;
	struct ledger_controls rows; /* the last read's, which ctl points into */
	struct election_term term;   /* the step's, for START_CHILD and
				      * RUNNER_SESSION */
	bool poll_counts;            /* the step's, for POLL */
	/* DESIGN 13: SIGHUP reads the file again (NULL: forwarded) */
	supervisor_reload_fn reload;
	void *reload_arg;
};

static void enqueue(struct supervisor *s, const struct election_event *ev);
static void enqueue_answered(struct supervisor *s, const struct election_event *ev,
			     struct election_answer *answer);

/* The jitter's source, seeded per process (pid, start time, node id), so
 * that nodes, and the daemons of one node, draw different delays. The
 * election itself draws nothing: its tests stay deterministic. */
static void seed_jitter(struct supervisor *s, const char *node_id)
{
	struct timespec ts;
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const char *c = node_id ? node_id : ""; *c; c++)
		h = (h ^ (unsigned char)*c) * 16777619u;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	h ^= (uint32_t)ts.tv_nsec ^ (uint32_t)getpid() << 16;
	s->seed[0] = (unsigned short)h;
	s->seed[1] = (unsigned short)(h >> 16);
	s->seed[2] = (unsigned short)((uint32_t)getpid() ^ (uint32_t)ts.tv_sec);
}

/* START, TICK, SHUTDOWN: no payload. */
static void dispatch(struct supervisor *s, enum election_event_type type,
		     const char *reason)
{
	struct election_event ev = { .type = type, .reason = reason };

	enqueue(s, &ev);
}

static void command_news(struct supervisor *s, enum election_command_news news,
			 int pid, int status, const char *reason)
{
	struct election_event ev = {
		.type = ELECTION_COMMAND, .reason = reason,
		.command = { .news = news, .pid = pid, .status = status },
	};

	enqueue(s, &ev);
}

/* The term's fencing token, as the snapshot shows it: read when the lock
 * came, and kept when a leader back from failsafe holds it again (the same
 * term, DESIGN 9), although that lock session read a newer one: the token
 * the members hear in a claim. */
static uint64_t term_token(const struct supervisor *s)
{
	return election_snapshot(s->election)->fencing_token;
}

/* The term the election names: its key, token and lock session. */
static void start_child(struct supervisor *s)
{
	struct ledger_term term = {
		.lock_key = s->term.lock_key,
		.fencing_token = s->term.fencing_token,
		.lock_pid = s->term.lock_pid,
	};

	runner_start(s->runner, &term);
}

/* ---- the operator controls (DESIGN 11), read over the fence session ---- */

/* The whole lock's controls out of the rows read; the jobs get theirs. */
static void controls_of(struct supervisor *s, const struct ledger_controls *lc)
{
	struct election_controls *c = &s->ctl;

	memset(c, 0, sizeof(*c));
	c->readable = lc->readable;
	c->paused = ledger_controls_whole(lc, false, &c->paused_by, &c->paused_at);
	ledger_controls_whole(lc, true, &c->resumed_by, &c->resumed_at);
	for (int i = 0; i < lc->n; i++) {
		const struct ledger_control *k = &lc->c[i];

		if (k->job[0]) { /* a job's: the jobs' business */
			c->parts_paused |= k->pause;
			continue;
		}
		if (!k->resumed && !k->pause) { /* else a pause or resume: above */
			c->switchover = true;
			c->target = k->target;
			c->leader = k->leader;
			c->asked_by = k->asked_by;
			c->asked_at = k->asked_at;
			c->left = k->left_ms == INT64_MAX ? INFINITY : k->left_ms / 1000.0;
		}
	}
}

/* What a read of the controls answered, as the election's news. */
static enum election_controls_news read_news(const struct ledger_answer *a)
{
	if (a->untrusted)
		return ELECTION_CONTROLS_REFUSED;
	return a->ok && a->controls ? ELECTION_CONTROLS_READ : ELECTION_CONTROLS_FAILED;
}

static void controls_cb(void *arg, const struct ledger_answer *a)
{
	struct supervisor *s = arg;
	struct election_event ev = {
		.type = ELECTION_CONTROLS, .reason = a->error,
		.controls = { .news = read_news(a), .session_lost = a->lost },
	};

	/* the rows are kept: the event points into them, and the runner may
	 * get them (RUNNER_PAUSES) */
	if (ev.controls.news == ELECTION_CONTROLS_READ) {
		s->rows = *a->controls;
		controls_of(s, &s->rows);
		ev.controls.in_force = &s->ctl;
		ev.reason = NULL;
	}
	enqueue(s, &ev);
}

/* Why the ledger gave no answer to a priority ask, as the election's. */
static enum election_ask_trouble ask_trouble(const struct ledger_answer *a)
{
	if (!a->ok)
		return a->lost ? ELECTION_ASK_LOST : ELECTION_ASK_FAILED;
	if (a->missing)
		return ELECTION_ASK_MISSING;
	return a->denied ? ELECTION_ASK_DENIED : ELECTION_ASK_ANSWERED;
}

static void priority_cb(void *arg, const struct ledger_answer *a)
{
	struct election_event ev = {
		.type = ELECTION_CONTROLS, .reason = a->ok ? NULL : a->error,
		.controls = { .news = ELECTION_CONTROLS_ASKED,
			      .to_me = a->ok && a->asked,
			      .leader = a->ok ? a->leader_node : NULL,
			      .leader_priority = a->leader_priority,
			      .trouble = ask_trouble(a) },
	};

	if (a->untrusted) {
		ev.controls.news = ELECTION_CONTROLS_REFUSED;
		ev.reason = a->error;
	}
	enqueue(arg, &ev);
}

/* One function per action; run_actions calls them in the election's
 * order (election_actions). */
static void do_disconnect(struct supervisor *s) { lease_disconnect(s->lease); }
static void do_fence_close(struct supervisor *s) { lease_disconnect(s->fence); }
static void do_connect(struct supervisor *s) { lease_connect(s->lease); }
static void do_fence_connect(struct supervisor *s) { lease_connect(s->fence); }
static void do_try_lock(struct supervisor *s) { lease_try_lock(s->lease); }
static void do_plain_try(struct supervisor *s) { lease_plain_try(s->lease); }
static void do_rank_queue(struct supervisor *s) { lease_rank_queue(s->lease); }
static void do_wait_lock(struct supervisor *s) { lease_wait_lock(s->lease); }
static void do_fence_take(struct supervisor *s) { lease_wait_lock(s->fence); }
static void do_fence_try(struct supervisor *s) { lease_try_lock(s->fence); }
static void do_ping(struct supervisor *s) { lease_ping(s->lease); }
static void do_fence_ping(struct supervisor *s) { lease_ping(s->fence); }
static void do_release(struct supervisor *s) { lease_release(s->lease); }
static void do_fence_drop(struct supervisor *s) { lease_unlock(s->fence); }
static void do_exit(struct supervisor *s) { ev_break(s->loop, EVBREAK_ALL); }

static void do_stop_child(struct supervisor *s) { runner_stop(s->runner); }
static void do_drain_child(struct supervisor *s) { runner_drain(s->runner); }
static void do_kill_child(struct supervisor *s) { runner_kill(s->runner); }

static void do_runner_session(struct supervisor *s)
{
	runner_set_lock_pid(s->runner, s->term.lock_pid);
}

static void do_runner_pauses(struct supervisor *s)
{
	runner_pauses(s->runner, &s->rows);
}

static void do_failsafe_claim(struct supervisor *s)
{
	failsafe_claim(s->failsafe, term_token(s));
}

static void do_failsafe_check(struct supervisor *s)
{
	failsafe_check(s->failsafe);
}

static void do_failsafe_regained(struct supervisor *s)
{
	failsafe_regained(s->failsafe, term_token(s));
}

static void do_controls_read(struct supervisor *s)
{
	ledger_controls(s->ledger, lease_key(s->lease), controls_cb, s);
}

static void do_lock_controls_read(struct supervisor *s)
{
	ledger_controls(s->lock_ledger, lease_key(s->lease), controls_cb, s);
}

static void do_lock_priority_ask(struct supervisor *s)
{
	ledger_priority_ask(s->lock_ledger, lease_key(s->lease), s->node_id,
			    s->priority, s->switchover_ms, priority_cb, s);
}

static void do_controls_done(struct supervisor *s)
{
	ledger_handed(s->ledger, lease_key(s->lease), s->node_id);
}

static void do_priority_ask(struct supervisor *s)
{
	ledger_priority_ask(s->ledger, lease_key(s->lease), s->node_id, s->priority,
			    s->switchover_ms, priority_cb, s);
}

/* poll_dsn (DESIGN 15): the lock's state read through the pooler */
static void poll_cb(void *arg, const struct poll_answer *a)
{
	struct supervisor *s = arg;
	struct election_event ev = {
		.type = ELECTION_POLL,
		.poll = { .ok = a->ok, .fault = a->fault, .recovery = a->recovery,
			  .held = a->held, .queued = a->queued,
			  .system_id = a->system_id, .db_oid = a->db_oid },
		.reason = a->reason,
	};

	enqueue(s, &ev);
}

static void do_poll(struct supervisor *s)
{
	if (s->poll)
		poll_read(s->poll, s->poll_counts);
}

static void do_poll_close(struct supervisor *s)
{
	if (s->poll)
		poll_close(s->poll);
}

static const struct {
	enum election_action action;
	void (*run)(struct supervisor *s);
} action_fns[] = {
	{ ELECTION_DO_DISCONNECT, do_disconnect },
	{ ELECTION_DO_FENCE_CLOSE, do_fence_close },
	{ ELECTION_DO_POLL_CLOSE, do_poll_close },
	{ ELECTION_DO_CONNECT, do_connect },
	{ ELECTION_DO_POLL, do_poll },
	{ ELECTION_DO_FENCE_CONNECT, do_fence_connect },
	{ ELECTION_DO_PLAIN_TRY, do_plain_try },
	{ ELECTION_DO_RANK_QUEUE, do_rank_queue },
	{ ELECTION_DO_TRY_LOCK, do_try_lock },
	{ ELECTION_DO_WAIT_LOCK, do_wait_lock },
	{ ELECTION_DO_FENCE_TAKE, do_fence_take },
	{ ELECTION_DO_FENCE_TRY, do_fence_try },
	{ ELECTION_DO_PING, do_ping },
	{ ELECTION_DO_FENCE_PING, do_fence_ping },
	{ ELECTION_DO_RUNNER_SESSION, do_runner_session },
	{ ELECTION_DO_RUNNER_PAUSES, do_runner_pauses },
	{ ELECTION_DO_STOP_CHILD, do_stop_child },
	{ ELECTION_DO_DRAIN_CHILD, do_drain_child },
	{ ELECTION_DO_KILL_CHILD, do_kill_child },
	{ ELECTION_DO_START_CHILD, start_child },
	{ ELECTION_DO_RELEASE, do_release },
	{ ELECTION_DO_FENCE_DROP, do_fence_drop },
	{ ELECTION_DO_FAILSAFE_CLAIM, do_failsafe_claim },
	{ ELECTION_DO_FAILSAFE_CHECK, do_failsafe_check },
	{ ELECTION_DO_FAILSAFE_REGAINED, do_failsafe_regained },
	{ ELECTION_DO_CONTROLS_READ, do_controls_read },
	{ ELECTION_DO_CONTROLS_DONE, do_controls_done },
	{ ELECTION_DO_PRIORITY_ASK, do_priority_ask },
	{ ELECTION_DO_LOCK_CONTROLS_READ, do_lock_controls_read },
	{ ELECTION_DO_LOCK_PRIORITY_ASK, do_lock_priority_ask },
	{ ELECTION_DO_EXIT, do_exit },
};
_Static_assert(sizeof(action_fns) / sizeof(action_fns[0]) == ELECTION_ACTION_COUNT,
	       "a function for every action");

static void run_action(struct supervisor *s, enum election_action a)
{
	for (size_t i = 0; i < ELECTION_ACTION_COUNT; i++)
		if (action_fns[i].action == a)
			action_fns[i].run(s);
}

static void run_actions(struct supervisor *s, const struct election_output *out)
{
	s->term = out->term;
	s->poll_counts = out->poll_counts;
	for (size_t i = 0; i < ELECTION_ACTION_COUNT; i++)
		if (out->actions & election_actions[i].action)
			run_action(s, election_actions[i].action);
}

/* Every line carries what the election's snapshot says now: the node, the
 * key (once the server has turned a name into one), the state and the
 * command's pid. */
static void set_log_context(const struct election_snapshot *snap)
{
	char key[24];
	struct log_fields f = {
		.state = election_state_name(snap->state),
		.node_id = snap->node_id,
		.lock_key = key,
		.command_pid = snap->command_pid,
	};

	snprintf(key, sizeof(key), "%" PRId64, snap->lock_key);
	log_set_context(&f);
}

/* Says what the election decided: its log lines, then systemd. */
static void report(struct supervisor *s, const struct election_output *out)
{
	const struct election_snapshot *snap = election_snapshot(s->election);

	if (out->state_changed)
		set_log_context(snap);
	for (int i = 0; i < out->n_logs; i++) {
		const struct election_log *l = &out->logs[i];
		struct log_fields f = {
			.reason = l->fault ? fault_label(l->fault) : NULL,
		};

		log_event(l->level, &f, "%s", l->text);
	}
	if (out->stopping)
		notify_stopping();
	if (out->state_changed)
		notify_publish(snap);
}

/* One timer serves every deadline the election keeps. */
static void arm_wakeup(struct supervisor *s)
{
	double now = clocks_monotonic(), at;

	ev_timer_stop(s->loop, &s->wakeup);
	at = election_next_wakeup(s->election, now);
	if (isfinite(at)) {
		/* from our reading of the clock, as jobs.c's timers: libev
		 * counts from the loop's last wake, and a slow callback would
		 * have the election woken early, only to set it again */
		ev_now_update(s->loop);
		ev_timer_set(&s->wakeup, fmax(at - now, 0), 0.);
		ev_timer_start(s->loop, &s->wakeup);
	}
}

static void drain(struct supervisor *s)
{
	struct election_output out;

	if (s->draining)
		return;
	s->draining = true;
	while (s->head != s->tail) {
		struct queued_event *q = &s->queue[s->head % QUEUE_SIZE];

		q->ev.wall = clocks_wall();
		q->ev.jitter = erand48(s->seed);
		election_step(s->election, &q->ev, clocks_monotonic(), &out);
		if (q->answer)
			*q->answer = out.answer;
		s->head++;
		report(s, &out);
		run_actions(s, &out);
	}
	s->draining = false;
	arm_wakeup(s);
}

static void enqueue(struct supervisor *s, const struct election_event *ev)
{
	enqueue_answered(s, ev, NULL);
}

static void enqueue_answered(struct supervisor *s, const struct election_event *ev,
			     struct election_answer *answer)
{
	struct queued_event *q;

	if (s->tail - s->head >= QUEUE_SIZE) {
		/* cannot happen: each event causes at most a few more */
		log_error("internal error: event queue full");
		abort();
	}
	q = &s->queue[s->tail % QUEUE_SIZE];
	q->ev = *ev;
	q->answer = answer;
	if (ev->reason) {
		snprintf(q->reason, sizeof(q->reason), "%s", ev->reason);
		q->ev.reason = q->reason;
	}
	/* the payload's strings, as the reason, may not outlive the call */
	if (ev->type == ELECTION_PEERS && ev->peers.node) {
		snprintf(q->node, sizeof(q->node), "%s", ev->peers.node);
		q->ev.peers.node = q->node;
	} else if (ev->type == ELECTION_CONTROLS && ev->controls.leader) {
		snprintf(q->node, sizeof(q->node), "%s", ev->controls.leader);
		q->ev.controls.leader = q->node;
	}
	s->tail++;
	drain(s);
}

/* What a lease reports, as the election's session news. */
static int session_news(enum lease_event lev)
{
	switch (lev) {
	case LEASE_CONNECTED: return ELECTION_SESSION_CONNECTED;
	case LEASE_CONNECT_FAILED: return ELECTION_SESSION_FAILED;
	case LEASE_LOST: return ELECTION_SESSION_FAILED;
	case LEASE_GRANTED: return ELECTION_SESSION_GRANTED;
	case LEASE_ACQUIRED: return ELECTION_SESSION_ACQUIRED;
	case LEASE_BUSY: return ELECTION_SESSION_BUSY;
	case LEASE_PING_OK: return ELECTION_SESSION_PING_OK;
	case LEASE_RELEASED: return ELECTION_SESSION_RELEASED;
	}
	return ELECTION_SESSION_FAILED;
}

static void lease_event_cb(void *arg, enum lease_event lev, enum fault fault,
			   const char *reason)
{
	struct supervisor *s = arg;
	struct election_event ev = {
		.type = ELECTION_LOCK, .reason = reason,
		.session = { .news = session_news(lev), .fault = fault,
			     .lock_key = lease_key(s->lease),
			     .system_id = lease_system_id(s->lease),
			     .db_oid = lease_db_oid(s->lease) },
	};

	if (lev == LEASE_ACQUIRED) {
		ev.session.fencing_token = lease_fencing_token(s->lease);
		ev.session.lock_pid = lease_backend_pid(s->lease);
	}
	if (lev == LEASE_BUSY) {
		ev.session.queue_ahead = lease_queue_ahead(s->lease);
		ev.session.lock_slots = lease_lock_slots(s->lease);
		ev.session.ranked = lease_queue_ranked(s->lease);
	}
	enqueue(s, &ev);
	/* a polling standby's controls read waits for the session */
	ledger_session_ready(s->lock_ledger);
	/* a ping with failsafe names the nodes with a session for this lock */
	if (lev == LEASE_PING_OK && s->failsafe && lease_ping_nodes(s->lease)) {
		char stranger[64];
		struct election_event pev = {
			.type = ELECTION_PEERS,
			.peers = { .news = ELECTION_PEERS_STRANGER,
				   .node = failsafe_stranger(s->failsafe,
							     lease_ping_nodes(s->lease),
							     stranger, sizeof(stranger)) },
		};

		enqueue(s, &pev);
	}
}

static void fence_event_cb(void *arg, enum lease_event lev, enum fault fault,
			   const char *reason)
{
	struct supervisor *s = arg;
	struct election_event ev = {
		.type = ELECTION_FENCE, .reason = reason,
		.session = { .news = session_news(lev), .fault = fault,
			     .lock_key = lease_key(s->fence) },
	};

	enqueue(s, &ev);
	/* the ledger's statements wait for the session: here it may be back */
	if (s->ledger)
		ledger_session_ready(s->ledger);
}

static void started_cb(void *arg, int pid)
{
	command_news(arg, ELECTION_COMMAND_STARTED, pid, 0, NULL);
}

static void start_failed_cb(void *arg, const char *reason)
{
	command_news(arg, ELECTION_COMMAND_START_FAILED, 0, 0, reason);
}

static void gone_cb(void *arg, int status)
{
	command_news(arg, ELECTION_COMMAND_GONE, 0, status, NULL);
}

static void killed_cb(void *arg)
{
	command_news(arg, ELECTION_COMMAND_KILLED, 0, 0, NULL);
}

static void refused_cb(void *arg, enum fault fault, const char *reason)
{
	struct election_event ev = {
		.type = ELECTION_COMMAND, .reason = reason,
		.command = { .news = ELECTION_COMMAND_REFUSED, .fault = fault },
	};

	enqueue(arg, &ev);
}

static void round_done_cb(void *arg, int agree, int total)
{
	struct supervisor *s = arg;
	struct election_event ev = {
		.type = ELECTION_PEERS, .reason = failsafe_detail(s->failsafe),
		.peers = { .news = ELECTION_PEERS_ROUND_DONE, .agree = agree,
			   .asked = total },
	};

	enqueue(s, &ev);
}

static void check_done_cb(void *arg, enum failsafe_check result, bool same_members)
{
	struct election_event ev = {
		.type = ELECTION_PEERS,
		.peers = { .news = ELECTION_PEERS_CHECK_DONE,
			   .check = ELECTION_CHECK_SILENT, .same_members = same_members },
	};

	switch (result) {
	case FAILSAFE_CLEAR: ev.peers.check = ELECTION_CHECK_CLEAR; break;
	case FAILSAFE_RUNNING: ev.peers.check = ELECTION_CHECK_RUNNING; break;
	case FAILSAFE_SILENT: break;
	}
	enqueue(arg, &ev);
}

bool supervisor_authorized(void *arg, const char *authorization)
{
	struct supervisor *s = arg;

	return s->failsafe && failsafe_authorized(s->failsafe, authorization);
}

/* A member's message, queued as every event is; the step that handles it
 * answers, and the answer goes back over HTTP. It comes from the loop,
 * never from inside a step, so the queue is drained before enqueue
 * returns; were it to come from inside one, it goes unanswered. */
static int ask_election(struct supervisor *s, const struct election_peers_event *p,
			const char *members_hash, char *reason, size_t len)
{
	struct election_event ev = { .type = ELECTION_PEERS, .peers = *p };
	struct election_answer answer = { .given = false };

	snprintf(reason, len, "not answered");
	if (s->draining)
		return 409;
	ev.peers.same_members = !strcmp(members_hash,
					failsafe_members_hash(s->failsafe));
	enqueue_answered(s, &ev, &answer);
	if (!answer.given)
		return 409;
	snprintf(reason, len, "%s", answer.reason);
	return answer.agreed ? 200 : 409;
}

int supervisor_claim(void *arg, const char *node_id, uint64_t fencing_token,
		     const char *members_hash, char *reason, size_t len)
{
	const struct election_peers_event p = {
		.news = ELECTION_PEERS_CLAIMED, .node = node_id,
		.fencing_token = fencing_token,
	};

	return ask_election(arg, &p, members_hash, reason, len);
}

/* A member that led in failsafe holds the lock again. */
int supervisor_regained(void *arg, const char *node_id, const char *members_hash,
			char *reason, size_t len)
{
	const struct election_peers_event p = {
		.news = ELECTION_PEERS_REGAINED, .node = node_id,
	};

	return ask_election(arg, &p, members_hash, reason, len);
}

bool supervisor_running(void *arg)
{
	return election_runs_command(supervisor_snapshot(arg));
}

static void wakeup_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	dispatch(w->data, ELECTION_TICK, NULL);
}

/* The file read again; its new configuration, if it can be used, goes to
 * the jobs as it is (DESIGN 13: the old one is never changed under them). */
static void reload(struct supervisor *s)
{
	const struct config *fresh;

	notify_reloading();
	fresh = s->reload(s->reload_arg);
	if (fresh)
		runner_reload(s->runner, fresh);
	notify_ready();
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct supervisor *s = w->data;

	(void)loop;
	(void)revents;
	if (w->signum == SIGTERM || w->signum == SIGINT) {
		dispatch(s, ELECTION_SHUTDOWN,
			 w->signum == SIGTERM ? "SIGTERM" : "SIGINT");
		return;
	}
	if (w->signum == SIGHUP && s->reload) {
		reload(s);
		return;
	}
	runner_signal(s->runner, w->signum);
}

void supervisor_on_reload(struct supervisor *s, supervisor_reload_fn fn, void *arg)
{
	s->reload = fn;
	s->reload_arg = arg;
}

/* The command, or with a ledger the jobs, whose statements go over the
 * fence session (DESIGN 10: the lock session stays lock-only). */
static bool open_command(struct supervisor *s, const struct config *cfg,
			 char *err, size_t errlen)
{
	const struct runner_callbacks rcb = {
		started_cb, start_failed_cb, gone_cb, killed_cb, refused_cb, s,
	};

	/* every node reads the controls; only jobs write runs */
	s->ledger = ledger_new(s->fence, cfg->schema, cfg->ledger_owner);
	s->lock_ledger = ledger_new(s->lease, cfg->schema, cfg->ledger_owner);
	if (!s->ledger || !s->lock_ledger) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	s->runner = runner_new(s->loop, cfg, s->ledger, &rcb, err, errlen);
	return s->runner != NULL;
}

/* poll_dsn's connection: each poll a statement bounded by ping_timeout */
static bool open_poll(struct supervisor *s, const struct config *cfg,
		      char *err, size_t errlen)
{
	char why[LOG_MSG_MAX];
	struct poll_options po = {
		.dsn = cfg->poll_dsn,
		.node_id = cfg->node_id,
		.lock_key = cfg->lock_key,
		.lock_name = cfg->lock_name,
		.statement_timeout = cfg->ping_timeout_ms / 1000.0,
	};

	s->poll = poll_new(s->loop, &po, poll_cb, s, why, sizeof(why));
	if (!s->poll)
		snprintf(err, errlen, "invalid poll_dsn: %s", why);
	return s->poll != NULL;
}

/* The I/O objects: the lock's and the fence's sessions, the command, the
 * failsafe client. False with
 * err when one cannot be set up; what was made is freed with s. */
static bool open_io(struct supervisor *s, const struct config *cfg,
		    char *err, size_t errlen)
{
	char why[LOG_MSG_MAX];
	struct lease_options lo = {
		.dsn = cfg->dsn,
		.node_id = cfg->node_id,
		.lock_key = cfg->lock_key,
		.lock_name = cfg->lock_name,
		.retry_interval = cfg->retry_interval_ms / 1000.0,
		/* the lock session's longest statement is a queued wait, which
		 * the election gives retry_interval + ping_timeout (a ping its
		 * ping_timeout, client-side) */
		.statement_timeout = (cfg->retry_interval_ms + cfg->ping_timeout_ms) / 1000.0,
		.server_lease = cfg->server_lease_ms / 1000.0,
		.list_nodes = cfg->failsafe_peers != NULL,
		.priority = cfg->priority,
		/* a standby that may queue asks where it stands (DESIGN 15) */
		.queue_depth = cfg->acquire == ACQUIRE_WAIT && !cfg->nonblock &&
			       cfg->wait_timeout_ms != 0 ? cfg->queue_depth : 0,
		.rank_limit = ELECTION_RANK_LIMIT(cfg->queue_depth),
		/* for the election's check that poll_dsn reaches this database */
		.read_identity = cfg->poll_dsn != NULL,
	};
	const struct failsafe_callbacks fcb = { round_done_cb, check_done_cb, s };

	s->lease = lease_new(s->loop, &lo, lease_event_cb, s, why, sizeof(why));
	if (!s->lease) {
		snprintf(err, errlen, "invalid dsn: %s", why);
		return false;
	}
	/* The fence session carries the ledger (claims, the controls): each of
	 * its statements, a queued wait for the fence too, ends within a few
	 * seconds whatever lock or table of anyone else's it meets (DESIGN
	 * 10); a fence not granted by then is waited for again. */
	lo.fence = true;
	lo.list_nodes = false;
	lo.read_identity = false;
	lo.retry_interval = fmin(lo.retry_interval, LEDGER_LOCK_TIMEOUT);
	lo.statement_timeout = lo.retry_interval + LEDGER_STATEMENT_SLACK;
	s->fence = lease_new(s->loop, &lo, fence_event_cb, s, why, sizeof(why));
	if (!s->fence) {
		snprintf(err, errlen, "invalid dsn: %s", why);
		return false;
	}
	if (cfg->poll_dsn && !open_poll(s, cfg, err, errlen))
		return false;
	if (!open_command(s, cfg, err, errlen))
		return false;
	if (cfg->failsafe_peers) {
		if (!dynlib_load_curl(err, errlen))
			return false;
		s->failsafe = failsafe_new(s->loop, cfg, &fcb, err, errlen);
		if (!s->failsafe)
			return false;
	}
	return true;
}

struct supervisor *supervisor_new(struct ev_loop *loop, const struct config *cfg,
				  char *err, size_t errlen)
{
	struct supervisor *s = calloc(1, sizeof(*s));
	struct election_params p;
	const int handled[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2 };

	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->loop = loop;
	seed_jitter(s, cfg->node_id);
	ev_init(&s->wakeup, wakeup_cb);
	s->wakeup.data = s;
	if (!open_io(s, cfg, err, errlen)) {
		supervisor_free(s);
		return NULL;
	}
	election_params_from_config(cfg, &p);
	p.connect_timeout = lease_connect_timeout(s->lease);
	s->election = election_new(&p);
	if (!s->election) {
		snprintf(err, errlen, "out of memory");
		supervisor_free(s);
		return NULL;
	}

	snprintf(s->node_id, sizeof(s->node_id), "%s", cfg->node_id);
	s->priority = cfg->priority;
	/* the leader's stop, and the pings that tell a standby it is gone */
	s->switchover_ms = cfg->drain_timeout_ms + cfg->grace_period_ms +
			   cfg->ping_interval_ms *
			   cfg->ping_failures + cfg->ping_timeout_ms + 5000;

	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++) {
		ev_signal_init(&s->signals[i], signal_cb, handled[i]);
		s->signals[i].data = s;
		ev_signal_start(loop, &s->signals[i]);
	}
	return s;
}

static void start_cb(int revents, void *arg)
{
	(void)revents;
	dispatch(arg, ELECTION_START, NULL);
}

/* The election starts from inside the loop: an exit decided at once (a
 * DSN libpq refuses to start with) must come after ev_run began, or
 * ev_run would cancel its ev_break and run on. */
void supervisor_start(struct supervisor *s)
{
	ev_once(s->loop, -1, 0, 0., start_cb, s);
}

int supervisor_exit_code(struct supervisor *s)
{
	struct election_output out;

	/* ev_run returns early only if no watcher was left active: a bug,
	 * never a reason to report success. */
	election_abandon(s->election, &out);
	report(s, &out);
	return election_exit_code(s->election);
}

bool supervisor_failsafe(const struct supervisor *s)
{
	return s->failsafe != NULL;
}

const char *supervisor_members_hash(const struct supervisor *s)
{
	return s->failsafe ? failsafe_members_hash(s->failsafe) : NULL;
}

struct jobs *supervisor_jobs(const struct supervisor *s)
{
	return s->runner ? runner_jobs(s->runner) : NULL;
}

const struct election_snapshot *supervisor_snapshot(const struct supervisor *s)
{
	return election_snapshot(s->election);
}

void supervisor_free(struct supervisor *s)
{
	if (!s)
		return;
	ev_timer_stop(s->loop, &s->wakeup);
	for (size_t i = 0; i < sizeof(s->signals) / sizeof(s->signals[0]); i++)
		ev_signal_stop(s->loop, &s->signals[i]);
	failsafe_free(s->failsafe);
	poll_free(s->poll);
	runner_free(s->runner);
	election_free(s->election);
	ledger_free(s->ledger);
	ledger_free(s->lock_ledger);
	if (s->fence)
		lease_free(s->fence);
	if (s->lease)
		lease_free(s->lease);
	free(s);
}
