/* schedule.h: cron expressions and @every, read in a time zone: when is the
 * next tick (DESIGN 10). Pure: no I/O but the tz database, no clock. */
#ifndef PGLEADER_SCHEDULE_H
#define PGLEADER_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* Times are Unix milliseconds, UTC. */
#define SCHEDULE_NEVER INT64_MAX

struct schedule;

/* Parses expr: five cron fields (minute hour day-of-month month
 * day-of-week; lists, ranges, steps, month and day names, 7 = Sunday, the
 * usual day-of-month OR day-of-week rule when both are restricted), the
 * @hourly @daily @weekly @monthly @yearly (@annually) shorthands, or
 * "@every DUR" (a duration as config takes it, at least 1ms: ticks at the
 * whole multiples of DUR since the epoch, so every node computes the same
 * ones). zone is a tz database name (NULL: "UTC"); cron fields are read in
 * that zone. NULL with one line in err naming what is wrong (the
 * expression, or the zone). */
struct schedule *schedule_new(const char *expr, const char *zone, char *err,
			      size_t errlen);
void schedule_free(struct schedule *s);

/* The first tick strictly after t; SCHEDULE_NEVER when there is none
 * (0 0 30 2 *). A DST gap or repeat runs a tick once, as cronie does. */
int64_t schedule_next(const struct schedule *s, int64_t t);
/* The newest tick at or before t; INT64_MIN when there is none within the
 * last few years. */
int64_t schedule_prev(const struct schedule *s, int64_t t);
/* One interval of the schedule around t: the time from the tick at or
 * before t to the next one (the default missed window). */
int64_t schedule_interval(const struct schedule *s, int64_t t);

/* The delay in [0, jitter) before a tick starts: the same on every node,
 * derived from the lock key, the job and the tick. 0 when jitter <= 0. */
int64_t schedule_jitter(int64_t lock_key, const char *job, int64_t tick,
			int64_t jitter);

/* The expression as given, for logs and /status. */
const char *schedule_expr(const struct schedule *s);

#endif
