/* election_impl.h: what the parts of the election share. Each state's
 * handling lives in one file, which exports only the state's row:
 * election.c (the core: saying, requests, the shared transitions, the
 * table; INIT and DONE), election_standby.c (CONNECTING, BACKOFF, STANDBY,
 * RELEASING), election_command.c (LEADER, DEMOTING, SHUTTING_DOWN, the
 * command's news), election_failsafe.c (FAILSAFE, and the failsafe
 * machine), election_fence.c (the fence machine), election_controls.c
 * (the operator controls). Private to them: no other module includes it. */
#ifndef PGLEADER_ELECTION_IMPL_H
#define PGLEADER_ELECTION_IMPL_H

#include "election.h"

/* ---- the states' table (election.c): one row per state ---- */
typedef void election_handler(struct election *e, struct election_output *out,
			      double now, const struct election_event *ev);

/* What each piece of the lock session's news does in one state. */
struct lock_ops {
	election_handler *connected, *failed, *acquired, *busy, *ping_ok,
		*released, *granted;
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

extern const struct state_ops connecting_state, backoff_state, standby_state,
	releasing_state;                       /* election_standby.c */
extern const struct state_ops leader_state, demoting_state,
	shutting_down_state;                   /* election_command.c */
extern const struct state_ops failsafe_state; /* election_failsafe.c */

/* ---- election.c: saying, requests, the shared transitions ---- */
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
void election_saw_outage(struct election *e, double now);
bool election_end_on_permanent(struct election *e, struct election_output *out,
			     double now, const struct election_event *ev);
const char *election_reason_of(const struct election_event *ev, const char *dflt);
election_handler election_shutdown;

/* ---- election_standby.c ---- */
void election_session_lost(struct election *e, double now, enum fault f);

/* ---- election_command.c ---- */
double election_settle_until(const struct election *e);
void election_tell_term(const struct election *e, struct election_output *out);
void election_become_leader(struct election *e, struct election_output *out,
			  double now, const struct election_event *ev);
bool election_reap(struct election *e, struct election_output *out, double now,
		 const struct election_event *ev);
bool election_restarts(const struct election *e, int status);
election_handler election_on_command;

/* ---- election_fence.c: the fence's machine (DESIGN 3); it owns e->fence ---- */
void fence_init(struct fence_machine *f, double retry_interval);
void fence_open(struct fence_machine *f, struct election_output *out);
void fence_close(struct fence_machine *f, struct election_output *out);
bool fence_ok(const struct fence_machine *f);
bool fence_held(const struct fence_machine *f);
void fence_drop(struct fence_machine *f, struct election_output *out, double now);
/* driven by the election: each reads what it needs of it */
void fence_take(struct election *e, struct election_output *out);
void fence_lead(struct election *e, struct election_output *out, double now,
		double not_before);
void fence_stopping(struct election *e, struct election_output *out,
		    double now, bool outage);
/* The members answered that none runs the command (issue 25 item 12):
 * a settle wait still running ends now. */
void fence_settled(struct election *e, struct election_output *out, double now);
election_handler fence_news;
void fence_tick(struct election *e, struct election_output *out, double now);
double fence_wakeup(const struct election *e, double now);

/* ---- election_controls.c: the operator controls (DESIGN 11) ---- */
void election_controls_tick(struct election *e, struct election_output *out,
			    double now);
double election_controls_wakeup(const struct election *e);
bool election_controls_allow_start(const struct election *e);
bool election_controls_defer_lock(struct election *e, double now);
void election_controls_granted(struct election *e, struct election_output *out);
void election_controls_new_term(struct election *e, struct election_output *out);
election_handler election_on_controls;

/* ---- election_failsafe.c: failsafe (DESIGN 9); it owns e->failsafe ---- */
void failsafe_init(struct election *e);
bool failsafe_keeps(const struct election *e);
void failsafe_enter(struct election *e, struct election_output *out,
		    double now, enum fault fault, const char *why);
void failsafe_no_check(struct election *e);
void failsafe_ask(struct election *e, struct election_output *out, double now);
bool failsafe_members_ok(const struct election *e);
void failsafe_check_tick(struct election *e, struct election_output *out,
			 double now);
double failsafe_check_wakeup(const struct election *e);
bool failsafe_stays_out(struct election *e, struct election_output *out,
			double now);
double failsafe_record(const struct election *e, double now);
election_handler failsafe_news;

#endif
