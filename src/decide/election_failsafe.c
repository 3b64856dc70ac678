/* election_failsafe.c: failsafe (DESIGN 9): a leader that lost the lock
 * keeps its command while every member agrees; a member that agreed stays
 * out of the lock queue; a new leader asks the members first. The machine
 * (fs_*) owns struct election_failsafe_machine: the claim rounds, the new leader's
 * check, the record of a member leading in failsafe, a stranger seen; the
 * rest of this file is the FAILSAFE state (its row at the end) and what
 * the other states ask of failsafe (the failsafe_* functions of
 * election_impl.h). No I/O. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "election_impl.h"

/* ---- the machine: struct election_failsafe_machine, and nothing else ------------- */

static void fs_init(struct election_failsafe_machine *fs, const struct election_params *p)
{
	fs->enabled = p->failsafe;
	fs->ttl = p->failsafe_ttl;
	fs->ping_interval = p->ping_interval;
	fs->ping_timeout = p->ping_timeout;
	fs->next_claim_at = INFINITY;
	fs->claim_deadline = INFINITY;
	fs->check_again_at = INFINITY;
	fs->silent_since = INFINITY;
}

/* A new leader asks the members whether one still runs the command; the
 * re-ask time doubles as the deadline of the question in flight. */
static void fs_check_ask(struct election_failsafe_machine *fs, struct election_output *out,
			 double now)
{
	fs->check = CHECK_ASKING;
	fs->check_again_at = now + fs->ping_timeout + fs->ping_interval;
	out->actions |= ELECTION_DO_FAILSAFE_CHECK;
}

/* The members' answer to the check: the earliest the command may start
 * (-INFINITY: no bound). */
static double fs_check_done(struct election_failsafe_machine *fs, struct election_output *out,
			    double now, enum election_check check)
{
	switch (check) {
	case ELECTION_CHECK_CLEAR:
		fs->check = CHECK_CLEAR;
		break;
	case ELECTION_CHECK_RUNNING:
		/* that leader demotes at its next round: we now answer 409 */
		election_say(out, LOG_LEVEL_NOTICE, "a member still runs the command in "
		    "failsafe; asking again in %.1fs", fs->ping_interval);
		fs->check_again_at = now + fs->ping_interval;
		fs->silent_since = INFINITY;
		break;
	case ELECTION_CHECK_SILENT:
		/* Asked again: a member killed as it was asked (its socket
		 * still accepting, the process gone) refuses the next time.
		 * At the latest its record, if any, has run out ttl after. */
		if (isinf(fs->silent_since)) {
			fs->silent_since = now;
			election_say(out, LOG_LEVEL_NOTICE, "a member did not answer; "
			    "asking again every %.1fs, and starting the command in "
			    "%.1fs at the latest, when any failsafe record it holds "
			    "has expired", fs->ping_interval, fs->ttl);
		}
		fs->check_again_at = now + fs->ping_interval;
		break;
	}
	return -INFINITY;
}

/* Each member's answer is due within ping_timeout; the round must have
 * ended by one ping_interval more. */
static void fs_claim_round(struct election_failsafe_machine *fs, struct election_output *out,
			   double now)
{
	fs->next_claim_at = INFINITY;
	fs->round_sent_at = now;
	fs->claim_deadline = now + fs->ping_timeout + fs->ping_interval;
	out->actions |= ELECTION_DO_FAILSAFE_CLAIM;
}

static void fs_claims_begin(struct election_failsafe_machine *fs, struct election_output *out,
			    double now, enum fault fault)
{
	fs->fault = fault;
	fs->agree = fs->asked = 0;
	fs->agreed_at = now;
	fs_claim_round(fs, out, now);
}

static void fs_claims_end(struct election_failsafe_machine *fs)
{
	fs->next_claim_at = INFINITY;
	fs->claim_deadline = INFINITY;
}

/* The members' agreement has lapsed: a record made by the last round they
 * all agreed to (from when it was sent, the earliest they can have heard
 * it) may have run out, and another node may have led since. Whatever
 * comes after that (a round's answer, a lock grant, read late after a
 * thaw) belongs to no failsafe term. */
static bool fs_lapsed(const struct election_failsafe_machine *fs, double now)
{
	return now >= fs->agreed_at + fs->ttl;
}

/* The round in flight got no answer in time (true), or the next is due. */
static bool fs_claims_tick(struct election_failsafe_machine *fs, struct election_output *out,
			   double now)
{
	if (now >= fs->claim_deadline)
		return true;
	if (now >= fs->next_claim_at)
		fs_claim_round(fs, out, now);
	return false;
}

/* A round ended: true when every member asked agreed, and the next round
 * is due in ping_interval; false with why in why. */
static bool fs_round_done(struct election_failsafe_machine *fs, struct election_output *out,
			  double now, const struct election_event *ev, char *why,
			  size_t len)
{
	const struct election_peers_event *p = &ev->peers;
	const char *detail = ev->reason && *ev->reason ? ev->reason : NULL;

	fs->claim_deadline = INFINITY;
	if (p->agree < p->asked) {
		/* with each refusal's reason, as the failsafe client gave them */
		snprintf(why, len, "%d of %d members agree%s%s%s", p->agree, p->asked,
			 detail ? " (" : "", detail ? detail : "", detail ? ")" : "");
		return false;
	}
	if (fs->agree != p->agree || fs->asked != p->asked) {
		election_say(out, LOG_LEVEL_NOTICE, "failsafe: %d of %d members agree; "
		    "the command keeps running", p->agree, p->asked);
		out->state_changed = true;
	}
	fs->agree = p->agree;
	fs->asked = p->asked;
	fs->agreed_at = fs->round_sent_at;
	fs->next_claim_at = now + fs->ping_interval;
	return true;
}

/* A member leads in failsafe: its record keeps this node out of the lock
 * queue until it expires. */
static void fs_record(struct election_failsafe_machine *fs, struct election_output *out,
		      double now, const char *node, uint64_t token)
{
	if (now >= fs->record_until)
		election_say(out, LOG_LEVEL_NOTICE, "node %s leads in failsafe: staying out "
		    "of the lock queue", node ? node : "?");
	fs->record_until = now + fs->ttl;
	snprintf(fs->record_node, sizeof(fs->record_node), "%s", node ? node : "");
	fs->record_token = token;
}

/* The member the record is about holds the lock again: true when that
 * ended the record. */
static bool fs_record_ends(struct election_failsafe_machine *fs, struct election_output *out,
			   double now, const char *node)
{
	const char *id = node ? node : "";

	if (now >= fs->record_until || strcmp(id, fs->record_node) != 0)
		return false;
	fs->record_until = 0;
	fs->record_node[0] = '\0';
	election_say(out, LOG_LEVEL_NOTICE, "node %s holds the lock again after "
	    "failsafe: back in the lock queue", id);
	return true;
}

/* A node holds a session for this lock but is not in failsafe_peers: its
 * consent was never asked, so failsafe is off until it is gone. */
static void fs_stranger(struct election_failsafe_machine *fs, struct election_output *out,
			const char *node)
{
	const char *id = node ? node : "";

	if (!strcmp(id, fs->stranger))
		return;
	if (*id)
		election_say(out, LOG_LEVEL_ERROR, "node %s has a session for this lock but "
		    "is not in failsafe_peers: failsafe is off until it is gone "
		    "or the list is fixed", id);
	else
		election_say(out, LOG_LEVEL_NOTICE, "every node with a session for this lock "
		    "is in failsafe_peers: failsafe is on again");
	snprintf(fs->stranger, sizeof(fs->stranger), "%s", id);
}

static double fs_claims_wakeup(const struct election_failsafe_machine *fs)
{
	return fmin(fmin(fs->claim_deadline, fs->next_claim_at),
		    fs->agreed_at + fs->ttl);
}

/* A round is in flight. */
static bool fs_claiming(const struct election_failsafe_machine *fs)
{
	return isfinite(fs->claim_deadline);
}

/* A member leads in failsafe until then (past: none). */
static double fs_record_until(const struct election_failsafe_machine *fs)
{
	return fs->record_until;
}

/* ---- what the rest of the election asks of it -------------------------- */

void election_failsafe_init(struct election *e)
{
	fs_init(&e->failsafe, &e->p);
}

/* The lock is lost while the command runs: failsafe keeps it when every
 * node with a session for the lock is a member. */
bool election_failsafe_keeps(const struct election *e)
{
	return e->failsafe.enabled && !e->failsafe.stranger[0] && e->child_running;
}

/* Leading no more (or handing over): no question to the members. */
void election_failsafe_no_check(struct election *e)
{
	e->failsafe.check = CHECK_NONE;
}

/* A member leads in failsafe until then; 0: none. */
double election_failsafe_record(const struct election *e, double now)
{
	double until = fs_record_until(&e->failsafe);

	return now < until ? until : 0;
}

/* With failsafe, the members said no one else still runs the command. */
bool election_failsafe_members_ok(const struct election *e)
{
	return !e->failsafe.enabled || e->failsafe.check == CHECK_CLEAR;
}

void election_failsafe_ask(struct election *e, struct election_output *out,
		  double now)
{
	e->failsafe.silent_since = INFINITY;
	fs_check_ask(&e->failsafe, out, now);
}

/* A new leader asks again when the answer is late, or said one still runs
 * the command. */
void election_failsafe_check_tick(struct election *e, struct election_output *out,
			 double now)
{
	struct election_failsafe_machine *fs = &e->failsafe;

	if (fs->check == CHECK_ASKING && now >= fs->silent_since + fs->ttl)
		fs->check = CHECK_CLEAR; /* any record of a silent member is over */
	else if (fs->check == CHECK_ASKING && now >= fs->check_again_at)
		fs_check_ask(fs, out, now);
}

double election_failsafe_check_wakeup(const struct election *e)
{
	const struct election_failsafe_machine *fs = &e->failsafe;

	return fs->check == CHECK_ASKING
		? fmin(fs->check_again_at, fs->silent_since + fs->ttl) : INFINITY;
}

/* ---- the FAILSAFE state, and the members' news in every state ---------- */

/* A member said no, or did not answer, or the lock went to another
 * session: the command must stop, as without failsafe. */
static void fs_state_demote(struct election *e, struct election_output *out,
			    double now, const char *why)
{
	fs_claims_end(&e->failsafe);
	e->next_attempt_at = INFINITY;
	election_request_done(e);
	e->snap.counters.losses[e->failsafe.fault]++;
	election_say(out, LOG_LEVEL_WARNING, "lost leader lease: %s (failsafe)", why);
	election_about(out, e->failsafe.fault);
	election_set_state(e, out, now, ELECTION_DEMOTING);
	out->actions |= ELECTION_DO_STOP_CHILD;
	/* the database is likely away: the fence is taken again once back */
	election_tell_fence(e, out, now, &(struct election_fence_event){
		.type = ELECTION_FENCE_EV_STOPPING, .outage = true });
}

static double fs_state_wakeup(const struct election *e, double now)
{
	(void)now;
	return fmin(fs_claims_wakeup(&e->failsafe),
		    e->connected ? e->request_deadline : e->next_attempt_at);
}

/* The members' agreement lapsed (see fs_lapsed): demote, and say so. */
static bool fs_state_lapsed(struct election *e, struct election_output *out,
			    double now)
{
	if (!fs_lapsed(&e->failsafe, now))
		return false;
	fs_state_demote(e, out, now, "the members' agreement lapsed (no round "
	    "agreed within failsafe_ttl): another node may have led since");
	return true;
}

static void fs_state_tick(struct election *e, struct election_output *out,
			  double now)
{
	if (fs_state_lapsed(e, out, now))
		return;
	if (fs_claims_tick(&e->failsafe, out, now)) {
		fs_state_demote(e, out, now, "a claim round got no answer in time");
		return;
	}
	if (e->connected && now >= e->request_deadline) {
		election_disconnect(e, out);
		election_request_done(e);
		e->next_attempt_at = now + ELECTION_RECONNECT_MIN;
	}
	if (!e->connected && now >= e->next_attempt_at) {
		e->connected = true;
		e->next_attempt_at = INFINITY;
		election_request(e, now, e->p.connect_timeout);
		out->actions |= ELECTION_DO_CONNECT;
	}
}

void election_failsafe_enter(struct election *e, struct election_output *out,
		    double now, enum fault fault, const char *why)
{
	election_disconnect(e, out);
	e->snap.failsafe_agree = e->snap.failsafe_asked = 0;
	election_set_state(e, out, now, ELECTION_FAILSAFE);
	election_say(out, LOG_LEVEL_WARNING, "lost the lock (%s); keeping the command in "
	    "failsafe while every member agrees", why);
	election_about(out, fault);
	e->next_attempt_at = now; /* reconnect at once, and keep trying */
	fs_claims_begin(&e->failsafe, out, now, fault);
	fs_state_tick(e, out, now);
}

static void peers_round_done(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev)
{
	char why[LOG_MSG_MAX / 2];

	if (!election_state_failsafe(e)->claims || !fs_claiming(&e->failsafe))
		return;
	if (fs_state_lapsed(e, out, now))
		return;
	if (!fs_round_done(&e->failsafe, out, now, ev, why, sizeof(why))) {
		fs_state_demote(e, out, now, why);
		return;
	}
	e->snap.failsafe_agree = e->failsafe.agree;
	e->snap.failsafe_asked = e->failsafe.asked;
}

/* Back from failsafe: the same command, the same term, and so the same
 * fencing token (the snapshot's, which a restarted command gets too); the
 * token the new lock session read goes unused. Not once the agreement
 * lapsed: another term may have run meanwhile, so the command stops (the
 * lock, held until it is gone, keeps any other out). */
static void fs_state_regained(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev)
{
	if (fs_state_lapsed(e, out, now))
		return;
	election_request_done(e);
	fs_claims_end(&e->failsafe);
	e->failsafe.check = CHECK_CLEAR;
	e->snap.counters.acquisitions++;
	election_set_state(e, out, now, ELECTION_LEADER);
	e->ping_pending = false;
	e->last_reply_at = now;
	e->next_ping_at = now + e->p.ping_interval;
	e->reconnect_backoff = ELECTION_RECONNECT_MIN;
	election_say(out, LOG_LEVEL_INFO, "acquired leader lease again after failsafe; "
	    "the command kept running");
	/* as on the way into LEADER: the fence, unless taken in failsafe */
	election_tell_fence(e, out, now, &(struct election_fence_event){
		.type = ELECTION_FENCE_EV_TAKE });
	/* the members that agreed stay out of the lock queue until told */
	out->actions |= ELECTION_DO_FAILSAFE_REGAINED;
	/* the runner's claims name the session that holds the lock now, or
	 * the ledger refuses every tick of the rest of the term */
	e->lock_pid = ev->session.lock_pid;
	election_tell_term(e, out);
	out->actions |= ELECTION_DO_RUNNER_SESSION;
}

static void fs_state_lost(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev)
{
	e->connected = false; /* the lease closed it */
	if (election_end_on_permanent(e, out, now, ev))
		return;
	election_request_done(e);
	e->next_attempt_at = now + ELECTION_RECONNECT_MIN;
}

static void fs_state_connected(struct election *e, struct election_output *out,
			       double now, const struct election_event *ev)
{
	e->snap.lock_key = ev->session.lock_key;
	out->actions |= ELECTION_DO_TRY_LOCK;
	election_request(e, now, e->p.ping_timeout);
}

/* A member's claim: agree only when its member list is ours and this node
 * neither runs the command nor holds the lock, and then keep out of the
 * lock queue until the record expires (DESIGN 9). A member with another
 * list may count a majority this node would not. */
static const char *claim_refused(const struct election *e,
				 const struct election_event *ev)
{
	if (!ev->peers.same_members)
		return "the member lists differ (failsafe_peers)";
	return election_state_failsafe(e)->refuses;
}

/* The step's answer to the member: agreed (refused NULL), or why not. */
static void answer(struct election_output *out, const char *refused)
{
	out->answer.given = true;
	out->answer.agreed = !refused;
	snprintf(out->answer.reason, sizeof(out->answer.reason), "%s",
		 refused ? refused : "");
}

/* Closing the connection ends a queued wait, and releases a lock granted
 * meanwhile, before anything was started with it. */
static void stay_out(struct election *e, struct election_output *out,
		     double now)
{
	election_disconnect(e, out);
	election_request_done(e);
	election_set_state(e, out, now, ELECTION_BACKOFF);
	e->next_attempt_at = fs_record_until(&e->failsafe);
}

static void peers_claimed(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev)
{
	const struct election_failsafe_role *role = election_state_failsafe(e);
	const char *refused = claim_refused(e, ev);

	if (refused) {
		answer(out, refused);
		return;
	}
	fs_record(&e->failsafe, out, now, ev->peers.node, ev->peers.fencing_token);
	e->snap.failsafe_record_token = e->failsafe.record_token;
	answer(out, NULL);
	if (role->stays_out)
		stay_out(e, out, now);
	else if (role->backs_off)
		e->next_attempt_at = fmax(e->next_attempt_at,
					  fs_record_until(&e->failsafe));
}

/* The member this node agreed to holds the lock again: its record has done
 * its job, back to the lock queue now rather than failsafe_ttl after the
 * last claim, so that this node can take over at once should that leader
 * die. Another member's news leaves the record alone. */
static void peers_regained(struct election *e, struct election_output *out,
			   double now, const struct election_event *ev)
{
	if (!ev->peers.same_members) {
		answer(out, "the member lists differ (failsafe_peers)");
		return;
	}
	answer(out, NULL);
	if (fs_record_ends(&e->failsafe, out, now, ev->peers.node) &&
	    election_state_failsafe(e)->backs_off)
		e->next_attempt_at = now;
}

static void peers_check_done(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev)
{
	if (!election_state_failsafe(e)->checks || e->failsafe.check != CHECK_ASKING)
		return;
	e->child_start_at = fmax(e->child_start_at,
				 fs_check_done(&e->failsafe, out, now, ev->peers.check));
	/* Every member answered that it runs nothing: no old leader is left
	 * whose command still stops, so no settle wait. Only when the members
	 * that answered name this node's list (a node missing from it was
	 * never asked) and no node outside it was seen. */
	if (ev->peers.check == ELECTION_CHECK_CLEAR && ev->peers.same_members &&
	    !e->failsafe.stranger[0])
		election_tell_fence(e, out, now, &(struct election_fence_event){
			.type = ELECTION_FENCE_EV_SETTLED });
}

/* A node holds a session for this lock but is not in failsafe_peers: its
 * consent was never asked, so failsafe is off until it is gone. */

bool election_runs_command(const struct election_snapshot *s)
{
	switch (s->state) {
	case ELECTION_LEADER: case ELECTION_FAILSAFE: case ELECTION_DEMOTING:
	case ELECTION_SHUTTING_DOWN: case ELECTION_RELEASING:
		return true;
	case ELECTION_INIT: case ELECTION_CONNECTING: case ELECTION_BACKOFF:
	case ELECTION_STANDBY: case ELECTION_DONE: case ELECTION_STATE_COUNT:
		break;
	}
	return s->command_active || s->command_pid != 0;
}

static void peers_stranger(struct election *e, struct election_output *out,
			   double now, const struct election_event *ev)
{
	(void)now;
	fs_stranger(&e->failsafe, out, ev->peers.node);
}

/* The peers' news: one cell per kind; what the state means for each is
 * its row's failsafe role (struct election_failsafe_role). */
static election_handler *const peer_cells[] = {
	[ELECTION_PEERS_CLAIMED] = peers_claimed,
	[ELECTION_PEERS_ROUND_DONE] = peers_round_done,
	[ELECTION_PEERS_CHECK_DONE] = peers_check_done,
	[ELECTION_PEERS_STRANGER] = peers_stranger,
	[ELECTION_PEERS_REGAINED] = peers_regained,
};

void election_failsafe_news(struct election *e, struct election_output *out,
		   double now, const struct election_event *ev)
{
	if ((size_t)ev->peers.news < sizeof(peer_cells) / sizeof(peer_cells[0]) &&
	    peer_cells[ev->peers.news])
		peer_cells[ev->peers.news](e, out, now, ev);
}

/* The lock went to another session while this node was away. */
static void fs_state_busy(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev)
{
	(void)ev;
	fs_state_demote(e, out, now, "the lock is held by another session");
}

/* The command ended by itself while the lock was away: without the lock it
 * is not started again; a node that leads again restarts it. */
static void fs_state_child_gone(struct election *e, struct election_output *out,
				double now, const struct election_event *ev)
{
	int status = ev->command.status;

	if (!election_reap(e, out, now, ev))
		return;
	fs_claims_end(&e->failsafe);
	if (!election_restarts(e, status)) {
		e->exit_code = status;
		election_finish(e, out, now);
		return;
	}
	election_disconnect(e, out);
	election_connect_now(e, out, now);
}

/* A member that holds a failsafe record takes no lock (DESIGN 9): it
 * stays out (true), a connection or a grant given back by closing. */
bool election_failsafe_stays_out(struct election *e, struct election_output *out,
			double now)
{
	if (now >= fs_record_until(&e->failsafe))
		return false;
	stay_out(e, out, now);
	return true;
}

/* FAILSAFE leads as far as the fence is concerned: a busy fence is waited
 * for, and its session reopened (DESIGN 3). */
static void fs_state_fence(const struct election *e,
			   struct election_fence_inputs *in)
{
	(void)e;
	in->leading = in->reopens = true;
}

/* The FAILSAFE state's row (election.c's table). */
const struct state_ops failsafe_state = {
	.shutdown = election_shutdown,
	.lock = { .connected = fs_state_connected,
		  .failed = fs_state_lost,
		  .acquired = fs_state_regained,
		  .busy = fs_state_busy },
	.command_gone = fs_state_child_gone,
	.deadlines = fs_state_tick,
	.wakeup = fs_state_wakeup,
	.fence = fs_state_fence,
	.failsafe = { .refuses = "this node runs the command", .claims = true },
};
