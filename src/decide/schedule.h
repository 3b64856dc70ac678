/* schedule.h: cron expressions and @every, read in a time zone: when is the
 * next tick (DESIGN 10). Pure: no I/O but the tz database, no clock. */
#ifndef PGLEADER_SCHEDULE_H
#define PGLEADER_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

/* Times are Unix milliseconds, UTC. */
#define SCHEDULE_NEVER INT64_MAX

struct schedule;

/* Parses expr, which is one of:
 *
 * - Five cron fields, separated by blanks: minute (0-59), hour (0-23),
 *   day-of-month (1-31), month (1-12 or jan-dec), day-of-week (0-7 or
 *   sun-sat; 0 and 7 are Sunday). Names are 3 letters, in any case. A
 *   field is a comma-separated list of elements: N, A-B, '*' (every
 *   value), and A-B or '*' followed by /S (every S-th value from A, or
 *   from the first); S is 1 to B - A (cronie warns about a larger one and
 *   runs A alone: refused here). A-B must not go backwards, but for
 *   day-of-week A-0 or A-sun, which is A-7. Not taken: N/S, ~, L, W, #,
 *   ?, a sixth (seconds or year) field.
 * - The day rule is cronie's: when the day-of-month or the day-of-week
 *   field starts with '*' (a step after it too), a day must match both; when
 *   neither does, it matches if either does ("0 0 1,15 * mon": the 1st,
 *   the 15th and every Monday). An expression no date can match (0 0 30 2
 *   *) is refused; a rare one (0 0 29 2 *, every 4 years) is taken.
 * - @hourly (0 * * * *), @daily and @midnight (0 0 * * *), @weekly
 *   (0 0 * * 0), @monthly (0 0 1 * *), @yearly and @annually (0 0 1 1 *),
 *   in any case.
 * - "@every DUR": DUR as config takes durations (5s, 2m, 1h, 1.5s; one
 *   unit, which must be written: "@every 5" is refused, as a cron user
 *   reads minutes; at least 1s, as each tick is a row in the ledger; at
 *   most 720h). The ticks are the whole
 *   multiples of DUR since 1970-01-01T00:00:00Z, whatever the zone, so
 *   that every node computes the same ones.
 *
 * zone is a tz database name (NULL: "UTC"), a TZif file under $TZDIR or
 * /usr/share/zoneinfo (no "..", not absolute; "UTC" works without tzdata).
 * The cron fields are read in local time of that zone. Its offsets come
 * from libc, read once per process and zone for 1970 to 2100 (before and
 * after, the offset at that end holds).
 *
 * DST, as cronie: a job whose minute or hour field starts with '*' (so
 * @hourly too) runs at each instant the local clock shows a matching
 * time: not at all for times a gap skips (spring forward), twice for a
 * matching time a repeat shows twice (fall back: "30 * * * *" runs each
 * real hour). A job with both fixed runs each matching local time once, at
 * the first instant the clock shows that time or a later one: a time a
 * gap skips runs at the end of the gap (Berlin: "30 2 * * *" at 03:00
 * CEST; several such times are one run), a repeated time runs at its
 * first occurrence only (Berlin: 02:30 CEST, not 02:30 CET). Unlike cronie, a
 * gap longer than 3 hours (a zone changing its day) follows the same rule
 * instead of skipping the lost times.
 *
 * NULL with one line in err naming what is wrong: 'invalid schedule
 * "EXPR": minute: 61 is out of range (0-59)', or 'invalid time zone
 * "ZONE": no such zone in /usr/share/zoneinfo'. */
struct schedule *schedule_new(const char *expr, const char *zone, char *err,
			      size_t errlen);
void schedule_free(struct schedule *s);

/* The first tick strictly after t; SCHEDULE_NEVER when there is none
 * (none before year 10000). Microseconds: no I/O, no TZ. */
int64_t schedule_next(const struct schedule *s, int64_t t);
/* The newest tick at or before t; INT64_MIN when there is none (none in
 * the 400 years before t, or t before year 1). */
int64_t schedule_prev(const struct schedule *s, int64_t t);
/* One interval of the schedule around t: the time from the tick at or
 * before t to the next one (the default missed window); SCHEDULE_NEVER
 * for a schedule that never ticks. */
int64_t schedule_interval(const struct schedule *s, int64_t t);

/* The start of the --once-per window of length dur (> 0) that holds
 * instant t, on the clock of zone (a tz database name; NULL or one that
 * cannot be read: UTC). The windows are floor(wall / dur) of the zone's
 * local wall time, counted from 1970-01-01 00:00 local, and a window
 * begins at the first instant the clock shows its start: a 24h window is
 * a local calendar day (23 or 25 hours on a DST change), a 1h window a
 * local clock hour; a start a gap skips (spring forward) begins at the
 * gap's end, and the clock counts as not going back (fall back: the
 * repeated hour belongs to the window its first pass ended in). In UTC,
 * floor(t / dur) * dur. */
int64_t schedule_window(const char *zone, int64_t t, int64_t dur);

/* The delay in [0, jitter) before a tick starts: the same on every node
 * and every version, derived from the lock key, the job name (NULL as "")
 * and the tick: FNV-1a 64 over the key (8 bytes, little-endian), the
 * name's bytes and its NUL, and the tick (8 bytes, little-endian), then
 * splitmix64's finaliser, modulo jitter (a bias below jitter / 2^64). 0
 * when jitter <= 0. */
int64_t schedule_jitter(int64_t lock_key, const char *job, int64_t tick,
			int64_t jitter);

/* The expression as given, for logs and /status. */
const char *schedule_expr(const struct schedule *s);

#endif
