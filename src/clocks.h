/* clocks.h: the two clocks pgleader reads, and how it writes a time of the
 * wall clock's for people and the child (RFC 3339, UTC). */
#ifndef PGLEADER_CLOCKS_H
#define PGLEADER_CLOCKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* Every deadline runs on CLOCK_MONOTONIC: a step of the wall clock (NTP,
 * date -s, a resumed VM) moves none. ev_now() is the wall clock's. */
static inline double clocks_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* For reports only. */
static inline double clocks_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Unix milliseconds as 2026-11-24T17:00:00Z, or ...17:00:00.250Z when
 * they are not a whole second. */
static inline const char *clocks_rfc3339(int64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	int rest = (int)(ms - (int64_t)secs * 1000);
	struct tm tm;
	size_t n;

	gmtime_r(&secs, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, rest ? ".%03dZ" : "Z", rest);
	return buf;
}

#endif
