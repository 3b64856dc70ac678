/* jobs_retry.c: when a failed run's next attempt is due, and whether a
 * failure is its tick's last (DESIGN 13). Pure arithmetic. */
#include "jobs_retry.h"

#include <string.h>

#include "schedule.h"

int64_t jobs_retry_delay(int64_t first_ms, int64_t max_ms, int attempt)
{
	int64_t d = first_ms > 0 ? first_ms : 1;

	/* doubled attempt - 2 times, stopping at the cap (no overflow) */
	for (int k = 2; k < attempt && d < max_ms; k++)
		d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
	return max_ms > 0 && d > max_ms ? max_ms : d;
}

int64_t jobs_retry_jitter(int64_t lock_key, const char *job, int64_t tick,
			  int attempt, int64_t delay_ms)
{
	return schedule_jitter(lock_key, job, tick + attempt,
			       delay_ms / JOBS_RETRY_JITTER_PART);
}

bool jobs_retry_failed(enum jobs_outcome o)
{
	return o == JOBS_FAILED || o == JOBS_TIMED_OUT;
}

static bool has_tick(int64_t t)
{
	return t != INT64_MIN && t != SCHEDULE_NEVER;
}

enum jobs_retry_verdict jobs_retry_decide(const struct jobs_retry_run *r, int64_t *due)
{
	int next = r->attempt + 1;
	int64_t delay;

	*due = INT64_MIN;
	if (!jobs_retry_failed(r->outcome))
		return JOBS_RETRY_NONE;
	if (r->attempt > r->retries)
		return JOBS_RETRY_LAST;
	delay = jobs_retry_delay(r->first_ms, r->max_ms, next);
	*due = r->ended + delay +
	       jobs_retry_jitter(r->lock_key, r->job, r->tick, next, delay);
	if (has_tick(r->next_tick) && (*due >= r->next_tick || r->next_tick <= r->now))
		return JOBS_RETRY_OVERTAKEN;
	return JOBS_RETRY_AGAIN;
}

enum jobs_outcome jobs_outcome_from_name(const char *name)
{
	for (int o = 0; name && o < JOBS_OUTCOME_COUNT; o++)
		if (!strcmp(name, jobs_outcome_name((enum jobs_outcome)o)))
			return (enum jobs_outcome)o;
	return JOBS_OUTCOME_COUNT;
}
