/* schedule.c: cron expressions and @every read in a tz database zone: the
 * next and previous tick, in Unix milliseconds. */
#include "schedule.h"
#include "value.h"
#include "zone.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MINUTE_MS INT64_C(60000)
#define DAY_MINUTES 1440
/* The calendar repeats every 400 years (146097 days, a whole number of
 * weeks): a cron expression that matches nothing in 401 years never does. */
#define HORIZON_DAYS INT64_C(146463)
/* Days from 1970-01-01 to 0001-01-01 and to 9999-12-31: the range of ticks. */
#define FIRST_DAY INT64_C(-719162)
#define LAST_DAY INT64_C(2932896)
#define NO_MATCH INT64_MAX
/* The shortest @every: each tick is a row in the ledger, and a second is
 * what a cron user expects as the finest grain. */
#define EVERY_MIN_MS 1000

struct schedule {
	char *expr;
	const struct zone *zone;
	int64_t every;  /* > 0: @every, in ms */
	uint64_t minute, hour, dom, month, dow; /* bit i: value i */
	bool dom_star, dow_star; /* the field starts with '*' */
	bool wild;      /* the minute or the hour field starts with '*' */
};

/* ---- calendar ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Days since 1970-01-01 of a proleptic Gregorian date, and back (the
 * well-known era arithmetic: 400-year eras of 146097 days). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

struct civil {
	int64_t year;
	int month, day, wday; /* 1-12, 1-31, 0-6 (Sunday 0) */
};

static void civil_from_days(int64_t z, struct civil *c)
{
	int64_t era, doe, yoe, doy, mp;

	c->wday = (int)((z % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	c->day = (int)(doy - (153 * mp + 2) / 5 + 1);
	c->month = (int)(mp < 10 ? mp + 3 : mp - 9);
	c->year = yoe + era * 400 + (c->month <= 2);
}

static int days_in_month(int64_t y, int m)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return days[m - 1] + (m == 2 && leap);
}

/* The lowest set bit at or above from, or -1. */
static int next_bit(uint64_t mask, int from)
{
	if (from < 0)
		from = 0;
	if (from > 63 || !(mask >> from))
		return -1;
	return __builtin_ctzll(mask >> from) + from;
}

/* The highest set bit at or below from, or -1. */
static int prev_bit(uint64_t mask, int from)
{
	if (from < 0)
		return -1;
	if (from < 63)
		mask &= (UINT64_C(1) << (from + 1)) - 1;
	return mask ? 63 - __builtin_clzll(mask) : -1;
}

/* cronie's rule: when either day field starts with '*', a day must match
 * both; when neither does, either. */
static bool day_matches(const struct schedule *s, const struct civil *c)
{
	bool dom = s->dom >> c->day & 1, dow = s->dow >> c->wday & 1;

	return s->dom_star || s->dow_star ? dom && dow : dom || dow;
}

/* The first matching minute of the day at or after minute mod, or -1. */
static int next_time_of_day(const struct schedule *s, int mod)
{
	int h = mod / 60, m = next_bit(s->minute, mod % 60);

	if (s->hour >> h & 1 && m >= 0)
		return h * 60 + m;
	h = next_bit(s->hour, h + 1);
	return h < 0 ? -1 : h * 60 + next_bit(s->minute, 0);
}

/* The last matching minute of the day at or before minute mod, or -1. */
static int prev_time_of_day(const struct schedule *s, int mod)
{
	int h = mod / 60, m = prev_bit(s->minute, mod % 60);

	if (s->hour >> h & 1 && m >= 0)
		return h * 60 + m;
	h = prev_bit(s->hour, h - 1);
	return h < 0 ? -1 : h * 60 + prev_bit(s->minute, 59);
}

/* The first minute (since the epoch, local wall time) at or after m that
 * the fields match, or NO_MATCH. */
static int64_t next_match(const struct schedule *s, int64_t m)
{
	int64_t day = floor_div(m, DAY_MINUTES), last = day + HORIZON_DAYS;
	int mod = (int)(m - day * DAY_MINUTES), month;
	struct civil c;

	if (last > LAST_DAY)
		last = LAST_DAY;
	for (; day <= last; mod = 0) {
		civil_from_days(day, &c);
		if (!(s->month >> c.month & 1)) {
			month = next_bit(s->month, c.month + 1);
			day = month < 0 ? days_from_civil(c.year + 1, next_bit(s->month, 1), 1)
					: days_from_civil(c.year, month, 1);
			continue;
		}
		if (day_matches(s, &c) && (mod = next_time_of_day(s, mod)) >= 0)
			return day * DAY_MINUTES + mod;
		day++;
	}
	return NO_MATCH;
}

/* The last minute at or before m that the fields match, or NO_MATCH. */
static int64_t prev_match(const struct schedule *s, int64_t m)
{
	int64_t day = floor_div(m, DAY_MINUTES), first = day - HORIZON_DAYS, y;
	int mod = (int)(m - day * DAY_MINUTES), month;
	struct civil c;

	if (first < FIRST_DAY)
		first = FIRST_DAY;
	for (; day >= first; mod = DAY_MINUTES - 1) {
		civil_from_days(day, &c);
		if (!(s->month >> c.month & 1)) {
			month = prev_bit(s->month, c.month - 1);
			y = c.year;
			if (month < 1) {
				month = prev_bit(s->month, 12);
				y--;
			}
			day = days_from_civil(y, month, days_in_month(y, month));
			continue;
		}
		if (day_matches(s, &c) && (mod = prev_time_of_day(s, mod)) >= 0)
			return day * DAY_MINUTES + mod;
		day--;
	}
	return NO_MATCH;
}

/* ---- parsing ---- */

struct field {
	const char *name;
	int lo, hi;               /* '*' is lo-hi */
	const char *const *names; /* the 3-letter name of lo, lo + 1, ... */
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may",
	"jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL };
static const char *const day_names[] = { "sun", "mon", "tue", "wed", "thu",
	"fri", "sat", NULL };

static const struct field fields[] = {
	{ "minute", 0, 59, NULL },
	{ "hour", 0, 23, NULL },
	{ "day-of-month", 1, 31, NULL },
	{ "month", 1, 12, month_names },
	{ "day-of-week", 0, 7, day_names }, /* 0 and 7: Sunday */
};

/* A number or a name at *p, moved past it; -1 with why. */
static int parse_value(const char **p, const struct field *f, int *out,
		       char *why, size_t whylen)
{
	char word[16], shown[48];
	size_t n = strspn(*p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
	int64_t v;

	if (n == 0 || n >= sizeof(word))
		return value_why(why, whylen, "%s: expected a number at %s", f->name,
				 value_quote(*p, shown, sizeof(shown)));
	memcpy(word, *p, n);
	word[n] = '\0';
	*p += n;
	if (value_parse_int(word, &v) == 0 && word[0] != '-') {
		if (v < f->lo || v > f->hi)
			return value_why(why, whylen, "%s: %s is out of range (%d-%d)",
					 f->name, word, f->lo, f->hi);
		*out = (int)v;
		return 0;
	}
	for (int i = 0; f->names && f->names[i]; i++)
		if (strcasecmp(word, f->names[i]) == 0) {
			*out = f->lo + i;
			return 0;
		}
	return value_why(why, whylen, "%s: %s is not %s", f->name,
			 value_quote(word, shown, sizeof(shown)),
			 f->names ? "a number or a name" : "a number");
}

/* The S of A-B/S: 1 to B - A (cronie takes a larger one with a warning
 * and runs A alone: "*\/90" in minutes is hourly, which is never meant). */
static int parse_step(const char **p, const struct field *f, int span,
		      int *step, char *why, size_t whylen)
{
	char word[8], shown[48];
	size_t n = strspn(*p, "0123456789");
	int64_t v = 0;

	if (n > 0 && n < sizeof(word)) {
		memcpy(word, *p, n);
		word[n] = '\0';
		value_parse_int(word, &v);
	}
	if (v < 1 || v > span)
		return value_why(why, whylen, "%s: step %s is not a number from 1 to %d",
				 f->name, value_quote(v ? word : *p, shown, sizeof(shown)), span);
	*p += n;
	*step = (int)v;
	return 0;
}

/* A, A-B or *, before an optional /S. */
static int parse_span(const char **p, const struct field *f, int *a, int *b,
		      char *why, size_t whylen)
{
	*a = f->lo;
	*b = f->hi;
	if (**p == '*') {
		(*p)++;
		return 0;
	}
	if (parse_value(p, f, a, why, whylen) < 0)
		return -1;
	if (**p != '-') {
		*b = *a;
		return 0;
	}
	(*p)++;
	if (parse_value(p, f, b, why, whylen) < 0)
		return -1;
	if (*a > *b && *b == 0 && f->hi == 7)
		*b = 7; /* fri-sun, as cronie */
	if (*a > *b)
		return value_why(why, whylen, "%s: range %d-%d goes backwards",
				 f->name, *a, *b);
	return 0;
}

/* One element of a list: N, A-B, *, A-B/S or * /S, into mask. */
static int parse_range(const char **p, const struct field *f, uint64_t *mask,
		       char *why, size_t whylen)
{
	bool star = **p == '*';
	int a, b, step = 1;

	if (parse_span(p, f, &a, &b, why, whylen) < 0)
		return -1;
	if (**p == '/') {
		(*p)++;
		if (!star && a == b)
			return value_why(why, whylen, "%s: a step needs a range "
					 "(*/N or A-B/N)", f->name);
		if (parse_step(p, f, b - a, &step, why, whylen) < 0)
			return -1;
	}
	for (int i = a; i <= b; i += step)
		*mask |= UINT64_C(1) << i;
	return 0;
}

/* A comma-separated list of ranges: the whole field. */
static int parse_field(const char *text, const struct field *f, uint64_t *mask,
		       char *why, size_t whylen)
{
	const char *p = text;
	char shown[48];

	for (;;) {
		if (parse_range(&p, f, mask, why, whylen) < 0)
			return -1;
		if (*p == '\0')
			return 0;
		if (*p != ',' || *++p == '\0')
			return value_why(why, whylen, "%s: unexpected %s", f->name,
					 value_quote(p[-1] == ',' && !*p ? "," : p,
						     shown, sizeof(shown)));
	}
}

#define FIELD_MAX 64

/* A sixth field from p on: seconds first (Quartz, Spring) or a year last
 * (Quartz, AWS) make 6 or 7; more is something else. */
static int too_many_fields(const char *p, char *why, size_t whylen)
{
	int n = 5;

	for (p += strspn(p, " \t"); *p; p += strspn(p, " \t")) {
		p += strcspn(p, " \t");
		n++;
	}
	if (n > 7)
		return value_why(why, whylen, "more than 5 fields");
	return value_why(why, whylen, "%d fields, takes 5 (minute hour day-of-month "
			 "month day-of-week): no seconds or year field", n);
}

static int parse_cron(struct schedule *s, const char *expr, char *why,
		      size_t whylen)
{
	char words[5][FIELD_MAX];
	uint64_t *masks[] = { &s->minute, &s->hour, &s->dom, &s->month, &s->dow };
	const char *p = expr;
	int n = 0;

	for (;;) {
		size_t len;

		p += strspn(p, " \t");
		if (!*p)
			break;
		len = strcspn(p, " \t");
		if (n == 5)
			return too_many_fields(p, why, whylen);
		if (len >= FIELD_MAX)
			return value_why(why, whylen, "%s: too long", fields[n].name);
		memcpy(words[n], p, len);
		words[n++][len] = '\0';
		p += len;
	}
	if (n < 5)
		return value_why(why, whylen, "%d fields, needs 5 (minute hour "
				 "day-of-month month day-of-week)", n);
	for (int i = 0; i < 5; i++)
		if (parse_field(words[i], &fields[i], masks[i], why, whylen) < 0)
			return -1;
	if (s->dow >> 7 & 1)
		s->dow = (s->dow | 1) & ~(UINT64_C(1) << 7);
	s->wild = words[0][0] == '*' || words[1][0] == '*';
	s->dom_star = words[2][0] == '*';
	s->dow_star = words[4][0] == '*';
	/* The calendar repeats every 400 years and next_match looks 401 ahead:
	 * no match there is none ever (0 0 29 2 * is found, 0 0 30 2 * not). */
	if (next_match(s, 0) == NO_MATCH)
		return value_why(why, whylen, "no date matches it: it would never run");
	return 0;
}

/* "@every DUR", or a shorthand: what it stands for, as cronie reads it. */
static int parse_at(struct schedule *s, const char *expr, char *why,
		    size_t whylen)
{
	static const struct { const char *name, *cron; } shorthands[] = {
		{ "@hourly", "0 * * * *" }, { "@daily", "0 0 * * *" },
		{ "@midnight", "0 0 * * *" }, { "@weekly", "0 0 * * 0" },
		{ "@monthly", "0 0 1 * *" }, { "@yearly", "0 0 1 1 *" },
		{ "@annually", "0 0 1 1 *" },
	};
	size_t len = strcspn(expr, " \t");
	const char *arg = expr + len + strspn(expr + len, " \t");
	char dur[32], shown[48];

	if (len == 6 && strncasecmp(expr, "@every", 6) == 0) {
		len = strcspn(arg, " \t");
		if (len == 0 || len >= sizeof(dur) || arg[len + strspn(arg + len, " \t")])
			return value_why(why, whylen, "@every takes one duration "
					 "(examples: 30s, 5m, 1h)");
		memcpy(dur, arg, len);
		dur[len] = '\0';
		if (value_parse_duration(dur, &s->every) < 0)
			return value_why(why, whylen, "%s is not a duration (examples: "
					 "30s, 5m, 1h; at most 720h)",
					 value_quote(dur, shown, sizeof(shown)));
		/* A cron user reads "@every 5" as minutes, a duration as seconds. */
		if (dur[len - 1] >= '0' && dur[len - 1] <= '9')
			return value_why(why, whylen, "@every needs a unit: %ss or %sm",
					 dur, dur);
		/* Each tick claims a row in the ledger: @every 1ms is 1,000 rows
		 * a second, never meant. */
		if (s->every < EVERY_MIN_MS)
			return value_why(why, whylen, "@every needs at least 1s");
		return 0;
	}
	for (size_t i = 0; i < sizeof(shorthands) / sizeof(shorthands[0]); i++)
		if (len == strlen(shorthands[i].name) &&
		    strncasecmp(expr, shorthands[i].name, len) == 0) {
			if (*arg)
				return value_why(why, whylen, "%s takes nothing after it",
						 shorthands[i].name);
			return parse_cron(s, shorthands[i].cron, why, whylen);
		}
	return value_why(why, whylen, "unknown shorthand (@hourly, @daily, @midnight, "
			 "@weekly, @monthly, @yearly, @annually, @every DUR)");
}

/* ---- the schedule ---- */

struct schedule *schedule_new(const char *expr, const char *zone, char *err,
			      size_t errlen)
{
	struct schedule *s = calloc(1, sizeof(*s));
	const char *p = expr + strspn(expr, " \t");
	char why[200], shown[48];

	if (!s || !(s->expr = strdup(expr))) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((*p == '@' ? parse_at(s, p, why, sizeof(why))
		       : parse_cron(s, p, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "invalid schedule %s: %s",
			 value_quote(expr, shown, sizeof(shown)), why);
		schedule_free(s);
		return NULL;
	}
	if (!zone)
		zone = "UTC";
	s->zone = zone_get(zone, why, sizeof(why));
	if (!s->zone) {
		snprintf(err, errlen, "invalid time zone %s: %s",
			 value_quote(zone, shown, sizeof(shown)), why);
		schedule_free(s);
		return NULL;
	}
	return s;
}

void schedule_free(struct schedule *s)
{
	if (!s)
		return;
	free(s->expr);
	free(s);
}

const char *schedule_expr(const struct schedule *s)
{
	return s->expr;
}

/* Times outside years 1 to 9999 are not computed. */
#define FIRST_MS (FIRST_DAY * DAY_MINUTES * MINUTE_MS)
#define LAST_MS ((LAST_DAY + 1) * DAY_MINUTES * MINUTE_MS - 1)

/* A job whose minute and hour are fixed runs each matching local time w
 * at the first instant the clock shows w or later: once, even when w
 * repeats (fall back), and at the end of a gap when w is skipped (spring
 * forward); several skipped times are one run. */
static int64_t fixed_next(const struct schedule *s, int64_t t)
{
	int64_t m = next_match(s, floor_div(zone_wall_max(s->zone, t), MINUTE_MS) + 1);

	return m == NO_MATCH ? SCHEDULE_NEVER : zone_first_reaching(s->zone, m * MINUTE_MS);
}

static int64_t fixed_prev(const struct schedule *s, int64_t t)
{
	int64_t m = prev_match(s, floor_div(zone_wall_max(s->zone, t), MINUTE_MS));

	return m == NO_MATCH ? INT64_MIN : zone_first_reaching(s->zone, m * MINUTE_MS);
}

/* A job with '*' in its minute or hour runs at each instant the clock
 * shows a matching time: not in a gap, twice in a repeat. Walks the
 * segments of constant offset from t's on. */
static int64_t wild_next(const struct schedule *s, int64_t t)
{
	size_t i = zone_span_at(s->zone, t);
	struct zone_span span = zone_span(s->zone, i);
	int64_t from = t + span.off + 1, m;

	for (;;) {
		m = next_match(s, floor_div(from - 1, MINUTE_MS) + 1);
		if (m == NO_MATCH)
			return SCHEDULE_NEVER;
		if (span.end == INT64_MAX || m * MINUTE_MS < span.end + span.off)
			return m * MINUTE_MS - span.off;
		span = zone_span(s->zone, ++i);
		from = span.start + span.off;
	}
}

static int64_t wild_prev(const struct schedule *s, int64_t t)
{
	size_t i = zone_span_at(s->zone, t);
	struct zone_span span = zone_span(s->zone, i);
	int64_t to = t + span.off, m;

	for (;;) {
		m = prev_match(s, floor_div(to, MINUTE_MS));
		if (m == NO_MATCH)
			return INT64_MIN;
		if (span.start == INT64_MIN || m * MINUTE_MS >= span.start + span.off)
			return m * MINUTE_MS - span.off;
		span = zone_span(s->zone, --i);
		to = span.end - 1 + span.off;
	}
}

int64_t schedule_next(const struct schedule *s, int64_t t)
{
	if (t >= LAST_MS)
		return SCHEDULE_NEVER;
	if (t < FIRST_MS)
		t = FIRST_MS - 1;
	if (s->every > 0)
		return (floor_div(t, s->every) + 1) * s->every;
	return s->wild ? wild_next(s, t) : fixed_next(s, t);
}

int64_t schedule_prev(const struct schedule *s, int64_t t)
{
	if (t < FIRST_MS)
		return INT64_MIN;
	if (t > LAST_MS)
		t = LAST_MS;
	if (s->every > 0)
		return floor_div(t, s->every) * s->every;
	return s->wild ? wild_prev(s, t) : fixed_prev(s, t);
}

int64_t schedule_interval(const struct schedule *s, int64_t t)
{
	int64_t prev = schedule_prev(s, t), next;

	if (prev == INT64_MIN)
		prev = schedule_next(s, t);
	if (prev == SCHEDULE_NEVER)
		return SCHEDULE_NEVER;
	next = schedule_next(s, prev);
	return next == SCHEDULE_NEVER ? SCHEDULE_NEVER : next - prev;
}

int64_t schedule_window(const char *zone, int64_t t, int64_t dur)
{
	char why[200];
	const struct zone *z = zone_get(zone ? zone : "UTC", why, sizeof(why));

	if (!z)
		return floor_div(t, dur) * dur;
	return zone_first_reaching(z, floor_div(zone_wall_max(z, t), dur) * dur);
}

/* FNV-1a over the bytes, little-endian for the numbers so that every
 * machine gets the same; splitmix64's finaliser then spreads FNV's weak
 * low bits. The remainder's bias is below jitter / 2^64: nothing. */
static uint64_t fnv_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(0x100000001b3);
	return h;
}

static uint64_t fnv_int(uint64_t h, int64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)v >> (8 * i));
	return fnv_bytes(h, b, sizeof(b));
}

int64_t schedule_jitter(int64_t lock_key, const char *job, int64_t tick,
			int64_t jitter)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	if (jitter <= 0)
		return 0;
	h = fnv_int(h, lock_key);
	h = fnv_bytes(h, (const unsigned char *)(job ? job : ""), strlen(job ? job : "") + 1);
	h = fnv_int(h, tick);
	h ^= h >> 30;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	h ^= h >> 27;
	h *= UINT64_C(0x94d049bb133111eb);
	h ^= h >> 31;
	return (int64_t)(h % (uint64_t)jitter);
}
