/* controls_sql.h: the SQL of "pgleader pause", "resume", "switchover" and
 * of the controls "pgleader status" shows (DESIGN 11), as text, the schema
 * put in as the ledger's statements are (ledger_sql_expand). No libpq here:
 * controls_cli.c sends it. */
#ifndef PGLEADER_CONTROLS_SQL_H
#define PGLEADER_CONTROLS_SQL_H

#include <stdbool.h>
#include <stdint.h>

#include "ledger_sql.h" /* struct ledger_sql_query */

/* Who asked, written by the server, never by the client's say-so: the
 * session's application_name, its role and its address. */
#define CONTROLS_SQL_ASKED_BY \
	"format('%s (role %s) from %s', current_setting('application_name'), session_user," \
	" COALESCE(host(inet_client_addr()), 'local socket'))"

/* pause: $1 key, $2 job ('' for the whole lock). Last one wins: a second
 * pause of the same lock and job records its asker and time. One row: who
 * asked, when (RFC 3339). */
enum controls_pause_col { CONTROLS_PAUSE_BY, CONTROLS_PAUSE_AT, CONTROLS_PAUSE_NCOLS };
bool controls_sql_pause(struct ledger_sql_query *q, const char *schema, int64_t key,
			const char *job);

/* trigger (DESIGN 13): $1 key, $2 job or NULL, $3 force. One row. */
enum controls_trigger_col {
	CONTROLS_TRIGGER_JOB,       /* the job: --job's, or the lock's only
				     * scheduled one; NULL: none to pick */
	CONTROLS_TRIGGER_SCHEDULED, /* it was announced with a schedule ('t'),
				     * without ('f'); NULL: not announced */
	CONTROLS_TRIGGER_PAUSED_BY, /* a pause in force on it: who, when */
	CONTROLS_TRIGGER_PAUSED_AT,
	CONTROLS_TRIGGER_ASKED_US,  /* written: its tick, Unix microseconds */
	CONTROLS_TRIGGER_ASKED_AT,  /* and RFC 3339; NULL: not written */
	CONTROLS_TRIGGER_ASKED_BY,
	CONTROLS_TRIGGER_SCHEDULED_JOBS, /* the jobs announced with a schedule */
	CONTROLS_TRIGGER_NCOLS
};
bool controls_sql_trigger(struct ledger_sql_query *q, const char *schema, int64_t key,
			  const char *job, bool force);
/* trigger --wait: $1 key, $2 job, $3 the request's tick (Unix us). */
enum controls_trigger_run_col {
	CONTROLS_RUN_ID,            /* NULL: not claimed yet */
	CONTROLS_RUN_OUTCOME,
	CONTROLS_RUN_EXIT,          /* NULL: none */
	CONTROLS_RUN_ENDED,         /* 't' once it ended */
	CONTROLS_RUN_NODE,
	CONTROLS_RUN_ASKED,         /* 't' while the request waits */
	CONTROLS_TRIGGER_RUN_NCOLS
};
bool controls_sql_trigger_run(struct ledger_sql_query *q, const char *schema, int64_t key,
			      const char *job, int64_t asked_us);

/* resume: $1 key, $2 job or NULL for every pause of the lock. One row. */
enum controls_resume_col {
	CONTROLS_RESUME_COUNT,   /* rows deleted */
	CONTROLS_RESUME_JOBS,    /* the jobs resumed by name, ", "-joined; NULL none */
	CONTROLS_RESUME_ALL,     /* the whole lock's pause was among them ('t'/'f') */
	CONTROLS_RESUME_ALL_STAYS, /* the whole lock is still paused ('t'/'f') */
	CONTROLS_RESUME_NCOLS
};
bool controls_sql_resume(struct ledger_sql_query *q, const char *schema, int64_t key,
			 const char *job);

/* The controls in force on the lock (a switchover whose until passed is
 * not), pauses first, the whole lock's before the jobs'. */
enum controls_read_col {
	CONTROLS_READ_JOB,       /* '' for the whole lock */
	CONTROLS_READ_KIND,      /* pause, switchover */
	CONTROLS_READ_TARGET,    /* NULL: any standby */
	CONTROLS_READ_UNTIL,     /* RFC 3339, NULL for a pause */
	CONTROLS_READ_BY,
	CONTROLS_READ_AT,        /* RFC 3339 */
	CONTROLS_READ_LEADER,    /* switchover: the node asked to hand over */
	CONTROLS_READ_NCOLS
};
bool controls_sql_read(struct ledger_sql_query *q, const char *schema, int64_t key);

/* A switchover of the lock whose until passed is no longer in force:
 * deleted before a new one is asked. $1 key. */
bool controls_sql_lapsed(struct ledger_sql_query *q, const char *schema, int64_t key);

/* switchover: $1 key, $2 target or NULL, $3 wait in ms, $4 the leader. No
 * row when one stands already (ON CONFLICT DO NOTHING); else one: asked_at
 * as the server's text (to name this row again, in this session), when,
 * until (RFC 3339), who asked. */
enum controls_ask_col {
	CONTROLS_ASK_STAMP, CONTROLS_ASK_AT, CONTROLS_ASK_UNTIL, CONTROLS_ASK_BY,
	CONTROLS_ASK_NCOLS
};
bool controls_sql_switchover(struct ledger_sql_query *q, const char *schema, int64_t key,
			     const char *target, int64_t wait_ms, const char *leader);

/* The switchover standing on the lock, for the refusal: who asked, when,
 * until, the target (NULL any). $1 key. */
bool controls_sql_standing(struct ledger_sql_query *q, const char *schema, int64_t key);

/* The row one switchover wrote, deleted once done or lapsed: $1 key, $2
 * its stamp (CONTROLS_ASK_STAMP). */
bool controls_sql_switchover_done(struct ledger_sql_query *q, const char *schema,
				  int64_t key, const char *stamp);

#endif
