/* tickplan.c: which ticks are due at a planning point (a new term, a
 * tick's timer), and whether each runs or is recorded missed or paused. */
#include "tickplan.h"

#include <stddef.h>
#include <string.h>

void tickplan(const struct schedule *s, int64_t last, int64_t now, int64_t fired,
	      bool missed_once, int64_t window, struct tickplan *p)
{
	int64_t newest = schedule_prev(s, now), t;

	memset(p, 0, sizeof(*p));
	p->run = INT64_MIN;
	p->next = schedule_next(s, now);
	if (last == INT64_MIN || newest == INT64_MIN || newest <= last)
		return;
	if (window < 0)
		window = schedule_interval(s, newest);
	if (newest == fired || (missed_once && now - newest <= window)) {
		p->run = newest;
	} else {
		p->missed[p->n_missed++] = newest;
		p->missed_total++;
	}
	/* the older ones: a few recorded, the rest counted up to a bound */
	for (t = schedule_prev(s, newest - 1);
	     t != INT64_MIN && t > last && p->missed_total < TICKPLAN_COUNT_MAX;
	     t = schedule_prev(s, t - 1)) {
		if (p->n_missed < TICKPLAN_ROWS)
			p->missed[p->n_missed++] = t;
		p->missed_total++;
	}
}

void tickplan_pause_of(const char *job, bool all, const char *const *names,
		       const char *const *by, const char *const *at, int n,
		       const char *all_by, const char *all_at,
		       struct tickplan_pause *out)
{
	out->paused = all;
	out->by = all ? all_by : NULL;
	out->at = all ? all_at : NULL;
	for (int i = 0; i < n; i++) {
		if (!names[i] || strcmp(names[i], job))
			continue;
		out->paused = true;
		out->by = by ? by[i] : NULL;
		out->at = at ? at[i] : NULL;
		return;
	}
}

bool tickplan_paused(bool paused, int64_t resumed_at, int64_t tick)
{
	return paused || (resumed_at != INT64_MIN && tick < resumed_at);
}
