/* tickplan.h: which ticks are due at a planning point, and what becomes of
 * each (DESIGN 10). Pure: the schedule's arithmetic and nothing else. */
#ifndef PGLEADER_TICKPLAN_H
#define PGLEADER_TICKPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "schedule.h"

/* Missed ticks recorded one row each, newest first; the others counted. */
#define TICKPLAN_ROWS 20
/* Counting stops here: a fleet down for days under @every 1s must not
 * keep the loop from its pings while the leader counts. */
#define TICKPLAN_COUNT_MAX 1000

struct tickplan {
	int64_t run;                    /* INT64_MIN: none */
	int64_t missed[TICKPLAN_ROWS];  /* recorded as missed, newest first */
	int n_missed;
	int64_t missed_total;           /* how many were missed in all */
	int64_t next;                   /* the first tick after now */
};

/* At the server's time now, the ticks in (last, now] are due. The newest
 * is run when it is the tick the timer was set for (fired), or, with
 * missed_once, when it is at most window old (window < 0: one interval of
 * the schedule); every other due tick is missed. last INT64_MIN: the job
 * has no row yet, and no past tick is due (a new job starts with its next
 * tick). */
void tickplan(const struct schedule *s, int64_t last, int64_t now, int64_t fired,
	      bool missed_once, int64_t window, struct tickplan *p);

/* The pause in force for one job (DESIGN 11): the whole lock's (all) or
 * its own among names[0..n); by and at (NULL: not told) say who asked and
 * when, the job's own row before the lock's, as the more precise. */
struct tickplan_pause {
	bool paused;
	const char *by, *at;
};
void tickplan_pause_of(const char *job, bool all, const char *const *names,
		       const char *const *by, const char *const *at, int n,
		       const char *all_by, const char *all_at,
		       struct tickplan_pause *out);

/* A tick that comes due while its job is paused, or that fell before the
 * pause ended (resumed_at, the server's ms; INT64_MIN: never paused) is
 * recorded paused and never run: a tick's jitter or a claim in flight does
 * not carry it past the resume. */
bool tickplan_paused(bool paused, int64_t resumed_at, int64_t tick);

#endif
