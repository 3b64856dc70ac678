/* zone.c: a tz database zone's UTC offsets and their changes, learnt once
 * through libc's localtime_r, never from a table of our own. */
#include "zone.h"
#include "value.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The zone's UTC offsets are learnt for 1970 to 2100, all at once: about
 * 16,000 localtime_r calls, 4ms, once per zone and process; a table read
 * lazily as ticks move on would set TZ again at some later tick, in the
 * middle of the daemon's work, for no gain a daemon could see. Outside,
 * the offset at the nearer end holds. The samples are this far apart: two
 * offset changes closer than that would hide each other. In tzdata 2025
 * the closest pair between 1970 and 2100 is 6.96 days apart (Brazil 2000,
 * the predicted Gaza rules); zdump -v over every zone says so. */
#define ZONE_FROM INT64_C(0)
#define ZONE_TO INT64_C(4102444800) /* 2100-01-01 */
#define ZONE_STEP (4 * 86400)

/* One zone: its UTC offset per segment. Segment i starts at start[i]
 * (start[0] is INT64_MIN) and lasts until start[i + 1]; wall_max[i] is the
 * latest local time the clock showed before start[i]. Read once per
 * process and zone (a few milliseconds), shared by the schedules in that
 * zone and kept until the process ends (a few KB): a reload that keeps
 * the zone does not read it again. */
struct zone {
	struct zone *next;
	char *name;
	size_t n, cap;
	int64_t *start, *off, *wall_max;
};

static struct zone *zones; /* every zone read so far */

size_t zone_span_at(const struct zone *z, int64_t t)
{
	size_t lo = 0, hi = z->n; /* start[lo] <= t < start[hi] */

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->start[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

size_t zone_spans(const struct zone *z)
{
	return z->n;
}

struct zone_span zone_span(const struct zone *z, size_t i)
{
	struct zone_span span = { z->start[i], i + 1 < z->n ? z->start[i + 1] : INT64_MAX,
				  z->off[i] };

	return span;
}

int64_t zone_wall_max(const struct zone *z, int64_t t)
{
	size_t i = zone_span_at(z, t);
	int64_t wall = t + z->off[i];

	return wall > z->wall_max[i] ? wall : z->wall_max[i];
}

int64_t zone_first_reaching(const struct zone *z, int64_t w)
{
	size_t lo = 0, hi = z->n; /* the segment: the first whose end passes w */
	int64_t t;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mid + 1 < z->n && z->wall_max[mid + 1] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	t = w - z->off[lo];
	return t > z->start[lo] ? t : z->start[lo];
}

static int zone_push(struct zone *z, int64_t start, int64_t off)
{
	int64_t end_wall;

	if (z->n == z->cap) {
		size_t cap = z->cap ? z->cap * 2 : 64;
		int64_t *a = realloc(z->start, cap * sizeof(*a)), *b, *c;

		if (a)
			z->start = a;
		b = a ? realloc(z->off, cap * sizeof(*b)) : NULL;
		if (b)
			z->off = b;
		c = b ? realloc(z->wall_max, cap * sizeof(*c)) : NULL;
		if (!c)
			return -1;
		z->wall_max = c;
		z->cap = cap;
	}
	z->start[z->n] = start;
	z->off[z->n] = off;
	z->wall_max[z->n] = INT64_MIN;
	if (z->n > 0) {
		end_wall = start + z->off[z->n - 1] - 1;
		z->wall_max[z->n] = end_wall > z->wall_max[z->n - 1] ?
			end_wall : z->wall_max[z->n - 1];
	}
	z->n++;
	return 0;
}

static long gmtoff_at(int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;

	return localtime_r(&tt, &tm) ? tm.tm_gmtoff : 0;
}

/* Samples the zone that TZ names: the offset every ZONE_STEP, and where it
 * changes, the second it changes by bisection. */
static int zone_sample(struct zone *z)
{
	int64_t a = ZONE_FROM, b, lo, hi, mid;
	long cur = gmtoff_at(a);

	if (zone_push(z, INT64_MIN, (int64_t)cur * 1000) < 0)
		return -1;
	while (a < ZONE_TO) {
		b = a + ZONE_STEP;
		if (gmtoff_at(b) == cur) {
			a = b;
			continue;
		}
		for (lo = a, hi = b; hi - lo > 1;) {
			mid = lo + (hi - lo) / 2;
			*(gmtoff_at(mid) == cur ? &lo : &hi) = mid;
		}
		cur = gmtoff_at(hi);
		if (zone_push(z, hi * 1000, (int64_t)cur * 1000) < 0)
			return -1;
		a = hi;
	}
	return 0;
}

/* Reads the zone's offsets through libc: TZ is set to the zone's file for
 * the sampling only, then put back as it was. Done once per zone and
 * process, so that a tick is computed from the table, without touching TZ
 * (which is global, and re-read by every localtime call) on each call. */
static int zone_read(struct zone *z, const char *path)
{
	const char *was = getenv("TZ");
	char *saved = was ? strdup(was) : NULL;
	char tz[PATH_MAX + 2];
	int rc;

	snprintf(tz, sizeof(tz), ":%s", path);
	if ((was && !saved) || setenv("TZ", tz, 1) < 0) {
		free(saved);
		return -1;
	}
	tzset();
	rc = zone_sample(z);
	if (saved)
		setenv("TZ", saved, 1);
	else
		unsetenv("TZ");
	tzset();
	free(saved);
	return rc;
}

/* A tz database name: relative, no "." or ".." part, no empty part, tame
 * characters. */
static bool zone_name_ok(const char *name)
{
	size_t len = strlen(name);

	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("/_+-.", *p))
			return false;
	return len > 0 && name[0] != '/' && name[0] != '.' && name[len - 1] != '/' &&
	       !strstr(name, "/.") && !strstr(name, "//");
}

/* The name, and a TZif file under TZDIR: glibc takes any other name for
 * UTC, silently. */
static int zone_check(const char *name, char *path, size_t pathlen,
		      char *why, size_t whylen)
{
	const char *dir = getenv("TZDIR");
	char magic[4];
	struct stat st;
	int fd, ok;

	if (!dir || dir[0] != '/')
		dir = "/usr/share/zoneinfo";
	if (!zone_name_ok(name))
		return value_why(why, whylen, "not a tz database name");
	if ((size_t)snprintf(path, pathlen, "%s/%s", dir, name) >= pathlen)
		return value_why(why, whylen, "name too long");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return value_why(why, whylen, "no such zone in %s", dir);
	ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	     read(fd, magic, 4) == 4 && memcmp(magic, "TZif", 4) == 0;
	close(fd);
	return ok ? 0 : value_why(why, whylen, "%s is not a zone file", path);
}

static void zone_free(struct zone *z)
{
	if (!z)
		return;
	free(z->name);
	free(z->start);
	free(z->off);
	free(z->wall_max);
	free(z);
}

const struct zone *zone_get(const char *name, char *why, size_t whylen)
{
	char path[PATH_MAX];
	struct zone *z;

	for (z = zones; z; z = z->next)
		if (strcmp(z->name, name) == 0)
			return z;
	/* UTC needs no file: the default works without tzdata. */
	if (strcmp(name, "UTC") != 0 && zone_check(name, path, sizeof(path), why, whylen) < 0)
		return NULL;
	z = calloc(1, sizeof(*z));
	if (!z || !(z->name = strdup(name)) ||
	    (strcmp(name, "UTC") == 0 ? zone_push(z, INT64_MIN, 0) : zone_read(z, path)) < 0) {
		zone_free(z);
		value_why(why, whylen, "out of memory");
		return NULL;
	}
	z->next = zones;
	zones = z;
	return z;
}
