/* zone.h: a tz database zone's UTC offsets, read once through libc, and
 * local wall time from and to UTC (for schedule.c). */
#ifndef PGLEADER_ZONE_H
#define PGLEADER_ZONE_H

#include <stddef.h>
#include <stdint.h>

/* Times are Unix milliseconds; a wall time is a local date and time as
 * milliseconds since 1970-01-01 00:00 local (the UTC time plus the offset). */
struct zone;

/* The zone of that name ("UTC", "Europe/Berlin"): a file of the tz
 * database under $TZDIR or /usr/share/zoneinfo, read the first time it is
 * asked for and kept until the process ends. "UTC" needs no file. NULL
 * with why. */
const struct zone *zone_get(const char *name, char *why, size_t whylen);

/* A stretch of constant offset: [start, end), start INT64_MIN for the
 * first, end INT64_MAX for the last. */
struct zone_span {
	int64_t start, end, off;
};

/* The span that holds instant t, and its index; the span of an index
 * (0 to zone_spans() - 1). */
size_t zone_span_at(const struct zone *z, int64_t t);
struct zone_span zone_span(const struct zone *z, size_t i);
size_t zone_spans(const struct zone *z);

/* The latest wall time the clock has shown by instant t: past the wall
 * time of t while a repeated hour (fall back) runs a second time. */
int64_t zone_wall_max(const struct zone *z, int64_t t);
/* The first instant at which the clock shows wall time w or a later one:
 * the end of the gap when w falls in one (spring forward), the first of
 * the two when w is repeated. */
int64_t zone_first_reaching(const struct zone *z, int64_t w);

#endif
