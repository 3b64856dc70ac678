/* jobs_retry.h: the arithmetic of retries and on_failure (DESIGN 13).
 * Pure: no clock, no I/O; jobs_step.c asks it what becomes of a run that
 * ended, at its end or when a new leader reads the ledger. */
#ifndef PGLEADER_JOBS_RETRY_H
#define PGLEADER_JOBS_RETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "jobs_step.h" /* enum jobs_outcome */

/* The share of an attempt's delay its jitter may add, at most: jitter in
 * [0, delay / JOBS_RETRY_JITTER_PART). */
#define JOBS_RETRY_JITTER_PART 10

/* The wait before attempt (>= 2) of a tick, from the end of the one
 * before: first_ms for attempt 2, doubled for each next one, at most
 * max_ms. */
int64_t jobs_retry_delay(int64_t first_ms, int64_t max_ms, int attempt);

/* The jitter added to that wait: in [0, delay_ms / 10), the same on every
 * node: schedule_jitter of the lock key, the job and the tick plus the
 * attempt's number (in ms). */
int64_t jobs_retry_jitter(int64_t lock_key, const char *job, int64_t tick,
			  int attempt, int64_t delay_ms);

/* What becomes of a run that ended. */
enum jobs_retry_verdict {
	JOBS_RETRY_NONE,        /* it did not fail (nor time out) */
	JOBS_RETRY_AGAIN,       /* its next attempt is due at *due */
	JOBS_RETRY_LAST,        /* it failed and was the last attempt */
	JOBS_RETRY_OVERTAKEN,   /* it failed, and the next tick falls before
				 * its next attempt would (or fell already):
				 * the newer tick wins */
};

/* The facts of one ended run; times in the server's Unix ms. */
struct jobs_retry_run {
	enum jobs_outcome outcome;
	int attempt;            /* 1, 2 .. */
	int retries;            /* the job's retries */
	int64_t first_ms, max_ms; /* retry_delay, retry_max_delay */
	int64_t lock_key;
	const char *job;
	int64_t tick;
	int64_t ended;          /* when it ended */
	int64_t next_tick;      /* the tick after it; INT64_MIN or
				 * SCHEDULE_NEVER: none */
	int64_t now;            /* the server's clock now */
};

enum jobs_retry_verdict jobs_retry_decide(const struct jobs_retry_run *r, int64_t *due);

/* Whether an outcome is one that retries and on_failure are for. */
bool jobs_retry_failed(enum jobs_outcome o);

/* An outcome's ledger name back as the enum; JOBS_OUTCOME_COUNT when it
 * is none of them (NULL or ""). */
enum jobs_outcome jobs_outcome_from_name(const char *name);

/* What on_failure ended with, as the metric's result label. */
enum jobs_hook_result {
	JOBS_HOOK_SUCCEEDED, JOBS_HOOK_FAILED, JOBS_HOOK_TIMED_OUT, JOBS_HOOK_RESULTS
};
_Static_assert(JOBS_HOOK_RESULTS == sizeof(((struct jobs_view *)0)->on_failure) /
	       sizeof(uint64_t), "struct jobs_view counts each result");
static inline const char *jobs_hook_result_name(enum jobs_hook_result r)
{
	static const char *const names[JOBS_HOOK_RESULTS] = {
		"succeeded", "failed", "timed_out",
	};

	return r < JOBS_HOOK_RESULTS ? names[r] : "unknown";
}

#endif
