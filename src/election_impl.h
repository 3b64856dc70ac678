/* election_impl.h: what the parts of the election (election.c, the core;
 * election_clock.c; election_command.c; election_fence.c;
 * election_failsafe.c) share.
 * Private to them: no other module includes it. */
#ifndef PGLEADER_ELECTION_IMPL_H
#define PGLEADER_ELECTION_IMPL_H

#include "election.h"

/* ---- election.c: saying, states, requests, the shared transitions ---- */
void election_say(struct election_output *out, enum log_level level,
		  const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void election_about(struct election_output *out, enum fault fault);
void election_set_state(struct election *e, struct election_output *out,
		      double now, enum election_state s);
void election_request(struct election *e, double now, double timeout);
void election_request_done(struct election *e);
void election_disconnect(struct election *e, struct election_output *out);
void election_connect_now(struct election *e, struct election_output *out,
			double now);
void election_finish(struct election *e, struct election_output *out, double now);
void election_exit_now(struct election *e, struct election_output *out,
		       double now, int code);
void election_reconnect_later(struct election *e, struct election_output *out,
			      double now, enum fault fault, const char *why);
void election_ask_for_lock(struct election *e, struct election_output *out,
			   double now);
void election_lose_lease(struct election *e, struct election_output *out,
			 double now, enum fault fault, const char *why);
bool election_end_on_permanent(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev);
const char *election_reason_of(const struct election_event *ev, const char *dflt);
void election_connected(struct election *e, struct election_output *out,
		      double now, const struct election_event *ev);
void election_become_leader(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev);

/* ---- the states' table (election.c): each row names these ---- */
typedef void election_handler(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev);

/* What each piece of the lock session's news does in one state. */
struct lock_ops {
	election_handler *connected, *failed, *acquired, *busy, *ping_ok,
		*released;
};

struct state_ops {
	election_handler *start;
	election_handler *shutdown;
	struct lock_ops lock;
	election_handler *command_gone;
	void (*deadlines)(struct election *e, struct election_output *out,
			  double now);
	double (*wakeup)(const struct election *e, double now);
};

/* ---- election_clock.c: each state's deadlines and wakeups ---- */
void election_connecting_tick(struct election *e, struct election_output *out,
			      double now);
void election_backoff_tick(struct election *e, struct election_output *out,
			   double now);
void election_standby_tick(struct election *e, struct election_output *out,
			   double now);
void election_leader_tick(struct election *e, struct election_output *out,
			  double now);
void election_releasing_tick(struct election *e, struct election_output *out,
			     double now);
double election_request_wakeup(const struct election *e, double now);
double election_backoff_wakeup(const struct election *e, double now);
double election_leader_wakeup(const struct election *e, double now);
double election_releasing_wakeup(const struct election *e, double now);
void election_session_lost(struct election *e, double now, enum fault f);
bool election_restarting(const struct election *e, double now, enum fault f);
double election_reconnect_delay(struct election *e, double now, enum fault f);
bool election_ping_expired(const struct election *e, double now);

/* ---- election_command.c: the command's start, restarts and end ---- */
void election_start_child(struct election *e, struct election_output *out,
			  double now);
bool election_reap(struct election *e, struct election_output *out, double now,
		 const struct election_event *ev);
bool election_restarts(const struct election *e, int status);
election_handler election_on_command, election_leader_child_gone,
	election_demoted_child_gone, election_stopped_child_gone;

/* ---- election_fence.c: the fence's machine (DESIGN 3) ---- */
/* What the election tells the fence, at each call. */
struct fence_inputs {
	bool command;   /* the command lives (started, not yet gone) */
	bool killing;   /* SIGKILL sent: the fence no longer matters */
	bool leader;    /* LEADER: the command is due once the fence is held */
	bool leading;   /* LEADER or FAILSAFE: a busy fence is waited for */
	bool unlocked;  /* the command is being stopped without the lock */
	bool lock_down; /* no lock session is up */
	bool reopens;   /* a closed fence session is reopened in this state */
};

/* What the fence tells the election back, beside actions and lines. */
struct fence_verdict {
	const char *kill; /* kill the command now, and why; NULL: no */
	bool outage;      /* the database seems to have gone away */
	bool permanent;   /* its session ended with a permanent fault */
};

void fence_init(struct fence_machine *f, double retry_interval);
void fence_open(struct fence_machine *f, struct election_output *out);
void fence_close(struct fence_machine *f, struct election_output *out);
bool fence_ok(const struct fence_machine *f);
bool fence_held(const struct fence_machine *f);
void fence_take(struct fence_machine *f, const struct fence_inputs *in,
		struct election_output *out);
void fence_drop(struct fence_machine *f, struct election_output *out, double now);
void fence_lead(struct fence_machine *f, const struct fence_inputs *in,
		struct election_output *out, double now, double not_before);
void fence_stopping(struct fence_machine *f, const struct fence_inputs *in,
		    struct election_output *out, double now, bool outage,
		    struct fence_verdict *v);
void fence_news(struct fence_machine *f, const struct fence_inputs *in,
		struct election_output *out, double now,
		const struct election_event *ev, struct fence_verdict *v);
void fence_tick(struct fence_machine *f, const struct fence_inputs *in,
		struct election_output *out, double now);
double fence_wakeup(const struct fence_machine *f, const struct fence_inputs *in,
		    double now);

/* election.c: the election's side of the fence */
void election_fence_take(struct election *e, struct election_output *out);
void election_fence_stopping(struct election *e, struct election_output *out,
			     double now, bool outage);

/* ---- election_controls.c: the operator controls (DESIGN 11) ---- */
void election_controls_tick(struct election *e, struct election_output *out,
			    double now);
double election_controls_wakeup(const struct election *e);
bool election_controls_allow_start(const struct election *e);
bool election_controls_defer_lock(struct election *e, double now);
void election_controls_new_term(struct election *e, struct election_output *out,
				double now);
election_handler election_on_controls;

/* ---- election_failsafe.c: failsafe (DESIGN 9); it owns e->failsafe ---- */
void election_failsafe_init(struct election *e);
bool election_failsafe_keeps(const struct election *e);
void election_failsafe_no_check(struct election *e);
void election_failsafe_check_tick(struct election *e, struct election_output *out,
				  double now);
double election_failsafe_check_wakeup(const struct election *e);
double election_failsafe_record(const struct election *e, double now);
double election_failsafe_wakeup(const struct election *e, double now);
bool election_members_ok(const struct election *e);
void election_ask_members(struct election *e, struct election_output *out,
			double now);
void election_enter_failsafe(struct election *e, struct election_output *out,
			   double now, enum fault fault, const char *why);
void election_failsafe_tick(struct election *e, struct election_output *out,
			  double now);
election_handler election_on_peers, election_failsafe_connected,
	election_failsafe_lost, election_failsafe_regained, election_failsafe_busy,
	election_failsafe_child_gone, election_connecting_done,
	election_standby_acquired;

#endif
