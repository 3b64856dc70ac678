/* ledger.h: the run records of DESIGN 10, written over the fence session:
 * the ledger's presence, the database's clock, tick claims, run ends. */
#ifndef PGLEADER_LEDGER_H
#define PGLEADER_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

#include "lease.h"

struct ledger;

/* The fence session's bounds (seconds), which its ledger statements serve:
 * a wait for a lock at most LEDGER_LOCK_TIMEOUT (or retry_interval when
 * shorter), any statement that much and LEDGER_STATEMENT_SLACK more. */
#define LEDGER_LOCK_TIMEOUT 3.0
#define LEDGER_STATEMENT_SLACK 1.0

/* Who claims: the current term of this node, as the lock gave it. */
struct ledger_term {
	int64_t lock_key;
	uint64_t fencing_token;
	int lock_pid;            /* the lock session's backend pid */
	const char *node_id;
};

/* The controls in force (DESIGN 11), as the last read found them. */
#define LEDGER_CONTROLS_MAX 60 /* LEDGER_SQL_CONTROLS_ROWS */
struct ledger_control {
	bool pause;              /* a pause in force */
	bool resumed;            /* a pause resumed: asked_by and _at say by
				  * whom and when */
	char job[64];            /* "" for the whole lock */
	char target[64];         /* switchover: "" for any standby */
	char leader[64];         /* switchover: the node asked to hand over */
	int64_t left_ms;         /* until it lapses; INT64_MAX: never */
	char asked_by[192];
	char asked_at[40];       /* RFC 3339 */
};
struct ledger_controls {
	bool readable;           /* false: no controls table (no ledger), or
				  * this role may not read it: none in force */
	int n;
	struct ledger_control c[LEDGER_CONTROLS_MAX];
};

/* The whole lock's pause in force (resumed false) or resume (resumed
 * true) among the rows read, the last row of its kind counting: true with
 * who asked and when, or false with both NULL. */
bool ledger_controls_whole(const struct ledger_controls *lc, bool resumed,
			   const char **by, const char **at);

/* The requests to run now that wait for the leader (DESIGN 13). */
#define LEDGER_TRIGGERS_MAX 32 /* LEDGER_SQL_TRIGGERS_ROWS */
struct ledger_trigger {
	int64_t id;
	int64_t tick;            /* asked_at, Unix ms rounded down */
	char job[64];
	char asked_by[192];
};
struct ledger_triggers {
	int n;
	struct ledger_trigger t[LEDGER_TRIGGERS_MAX];
};

/* A statement's answer. Times are Unix milliseconds of the server's clock. */
struct ledger_answer {
	bool ok;                 /* answered without error */
	bool lost;               /* the session closed or was not there */
	bool missing;            /* ENSURE: no ledger, and it may not be made;
				  * any other, with an error: the ledger's
				  * schema or table is gone (dropped) */
	bool denied;             /* ENSURE: there, but this role may not read
				  * and write its runs and terms */
	bool untrusted;          /* ENSURE, CONTROLS, PRIORITY_ASK: the ledger
				  * is owned by a role not trusted (DESIGN 10):
				  * refused, never read; error says it */
	char error[256];         /* one line unless ok */
	int64_t db_now;          /* clock_timestamp() while answering */
	double rtt;              /* seconds from send to answer */
	/* CLAIM */
	int64_t tick;            /* the tick asked about (server's ms) */
	int64_t run_id;          /* 0: not claimed */
	bool holder;             /* the term's lock session holds the lock */
	bool newest;             /* no newer fencing token is recorded */
	bool early;              /* the tick is later than the server's clock */
	/* LAST */
	int64_t last_tick;       /* INT64_MIN: no row for the job */
	int64_t interrupted;     /* newest run of an older term left running,
				  * now recorded interrupted; INT64_MIN: none */
	int64_t last_success;    /* end of the newest succeeded run; 0: none */
	int64_t older_running;   /* without cut: the newest run an older term
				  * left running; INT64_MIN: none */
	int interrupted_attempt; /* the attempt of that newest cut run */
	/* the newest tick's last attempt (run_id 0: no row), for a retry
	 * owed (DESIGN 13): its outcome, exit status (-1: none) and end
	 * (INT64_MIN: not ended) */
	int64_t last_run_id;
	int last_attempt, last_exit;
	char last_outcome[16];
	int64_t last_ended;
	/* the newest run whose on_failure is owed and was not sent (run_id 0:
	 * none) */
	int64_t owed_run_id, owed_tick;
	int owed_attempt, owed_exit;
	char owed_outcome[16];
	/* CONTROLS */
	const struct ledger_controls *controls; /* valid during the call */
	/* TRIGGERS: the requests to run now (DESIGN 13), valid during the call */
	const struct ledger_triggers *triggers;
	/* PRIORITY_ASK */
	char leader_node[64];    /* "" when no node holds the lock */
	int leader_priority;
	bool asked;              /* a switchover to this node was asked */
};

typedef void (*ledger_fn)(void *arg, const struct ledger_answer *a);

/* schema is a plain identifier (config checked it); owner: the role of
 * --ledger-owner, trusted to own the ledger besides this role, its roles
 * and superusers, or NULL. */
struct ledger *ledger_new(struct lease *session, const char *schema, const char *owner);
void ledger_free(struct ledger *l);

/* The session is connected: what waits is sent. */
void ledger_session_ready(struct ledger *l);
/* Statements not yet answered, finishes included. */
bool ledger_idle(const struct ledger *l);

/* Is the ledger there and usable? Creates it when missing and the role
 * may; else missing. */
void ledger_ensure(struct ledger *l, ledger_fn fn, void *arg);
/* Claims (lock key, job, tick) for the term: one row, inserted only while
 * the term's lock session holds the lock, its token is not older than the
 * newest recorded for the lock, and the tick is not in the server's
 * future. attempt: 1, or 2 .. retries+1 for a retry of the tick (a row
 * of its own, claimed alike). outcome is "running" (a run starts: started_at now) or what the
 * tick was instead ("skipped", "missed": finished at once). With rerun, a
 * tick recorded interrupted by an older term is claimed again. trigger:
 * the request to run now this claims the run of (DESIGN 13; its tick is
 * the request's), 0 for a tick. */
void ledger_claim(struct ledger *l, const struct ledger_term *t, const char *job,
		  int64_t tick, int attempt, int64_t trigger, const char *outcome,
		  bool rerun, ledger_fn fn, void *arg);
/* The requests to run now of the lock, oldest first (DESIGN 13). */
void ledger_triggers(struct ledger *l, int64_t lock_key, ledger_fn fn, void *arg);
/* LISTEN on the session for the NOTIFY of a new request, from now on and
 * on each new session; fn(arg) when one arrives. */
void ledger_listen(struct ledger *l, void (*fn)(void *arg), void *arg);
/* The newest tick recorded for the job and the end of its newest
 * successful run; with cut, after recording as interrupted every run an
 * older term left running, without, telling the newest of them. */
void ledger_last(struct ledger *l, const struct ledger_term *t, const char *job,
		 bool cut, ledger_fn fn, void *arg);
/* Ends a run: its outcome and exit status (-1: none); owed: its row
 * records that the job's on_failure is owed; the last bytes of its output
 * (output_len of them; output NULL: not read, the row's output stays
 * NULL). Kept and sent again until the server has it, whatever happens to
 * the term. A run recorded interrupted meanwhile keeps that outcome, and
 * gets its end. */
void ledger_finish(struct ledger *l, uint64_t fencing_token, int64_t run_id,
		   const char *outcome, int exit_status, bool owed, const char *output,
		   size_t output_len);
/* Claims a failed run's on_failure for the term (DESIGN 13): run_id in
 * the answer when this node is to send it, 0 when not (sent already, or
 * the lock lost). */
void ledger_on_failure(struct ledger *l, const struct ledger_term *t, int64_t run_id,
		       ledger_fn fn, void *arg);
/* Deletes up to 100 rows of this lock older than keep_ms. */
void ledger_prune(struct ledger *l, int64_t lock_key, int64_t keep_ms);
/* DESIGN 13: one job of the term's announcement (ledger_sql_announce);
 * the last one removes what older announcements named and this one does
 * not. Nobody is told the answer; a failure is a warning. */
struct ledger_job {
	const char *name;
	const char *schedule;    /* NULL: runs all the time */
	const char *timezone;
	int64_t next_tick;       /* the server's ms; 0: none */
	uint64_t generation;
	bool last;
};
void ledger_announce(struct ledger *l, const struct ledger_term *t,
		     const struct ledger_job *job);

/* The controls of the lock in force (DESIGN 11). Without a ledger, or
 * one this role may not read, none: readable false, ok. A plain single
 * command asks this too; it never creates nor writes anything here. */
void ledger_controls(struct ledger *l, int64_t lock_key, ledger_fn fn, void *arg);
/* A standby of this priority asks for a switchover to itself when the
 * leader's priority is lower and none stands; wait_ms: how long it may
 * take before it lapses. */
void ledger_priority_ask(struct ledger *l, int64_t lock_key, const char *node_id,
			 int priority, int64_t wait_ms, ledger_fn fn, void *arg);
/* The switchover this node answered is done: its row goes. */
void ledger_handed(struct ledger *l, int64_t lock_key, const char *node_id);

#endif
