/* tickplan.c: which ticks are due at a planning point (a new term, a
 * tick's timer), and whether each runs or is recorded missed. */
#include "tickplan.h"

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
