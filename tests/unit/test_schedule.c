/* test_schedule.c: schedule.c's cron syntax, its ticks across month ends,
 * leap years and DST changes, @every, and the jitter. */
#include "schedule.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ERRLEN 256
#define ZONE(z) ((z) ? (z) : "UTC")
#define NEVER "never"
#define NONE "none"
#define JITTER_PINNED 48567

/* "2026-03-29T01:00:00Z" (or with .mmm) as Unix ms; NEVER and NONE as
 * SCHEDULE_NEVER and INT64_MIN. */
static int64_t ms(const char *text)
{
	struct tm tm = { 0 };
	int millis = 0;
	const char *rest;

	if (strcmp(text, NEVER) == 0)
		return SCHEDULE_NEVER;
	if (strcmp(text, NONE) == 0)
		return INT64_MIN;
	rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
	ck_assert_msg(rest != NULL, "bad time in the table: %s", text);
	if (*rest == '.')
		millis = atoi(rest + 1);
	return (int64_t)timegm(&tm) * 1000 + millis;
}

/* The other way, for failure messages. */
static const char *show(int64_t t, char *buf, size_t len)
{
	time_t s = (time_t)(t >= 0 ? t / 1000 : (t - 999) / 1000);
	struct tm tm;

	if (t == SCHEDULE_NEVER)
		return NEVER;
	if (t == INT64_MIN)
		return NONE;
	gmtime_r(&s, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

static struct schedule *make(const char *expr, const char *zone)
{
	char err[ERRLEN] = "";
	struct schedule *s = schedule_new(expr, zone, err, sizeof(err));

	ck_assert_msg(s != NULL, "\"%s\" in %s: %s", expr, ZONE(zone), err);
	return s;
}

/* ---- syntax ---- */

static const char *const good_cases[] = {
	"* * * * *", "*/15 * * * *", "0 0 1 1 *", "  5  4\t* * *  ",
	"0,15,30,45 0-23/2 1-31 1-12 0-7", "1-30/5 * * * *", "59 23 31 12 7",
	"0 9 * jan-mar MON-fri", "0 9 * Jan,JUL,dec sun,Sat", "0 0 * * fri-sun",
	"0 0 * * 5-0", "*/59 */23 */30 */11 */7", "0 0 1-31/30 * *",
	"@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly",
	"@annually", "@HOURLY", " @daily ", "@every 1s", "@every 1000ms",
	"@every 5s", "@every 2m", "@every 1h", "@every 1.5s", "@every 720h",
	"@every   90m  ", "@EVERY 7s", "0 0 29 2 *", "0 0 29 2 */7",
};

START_TEST(parse_good)
{
	struct schedule *s = make(good_cases[_i], NULL);

	ck_assert_str_eq(schedule_expr(s), good_cases[_i]);
	schedule_free(s);
}
END_TEST

static const struct {
	const char *expr;
	const char *err;
} bad_cases[] = {
	{ "", "invalid schedule \"\": 0 fields, needs 5 (minute hour day-of-month "
	  "month day-of-week)" },
	{ "* * * *", "invalid schedule \"* * * *\": 4 fields, needs 5 (minute "
	  "hour day-of-month month day-of-week)" },
	{ "0 * * * * *", "invalid schedule \"0 * * * * *\": 6 fields, takes 5 "
	  "(minute hour day-of-month month day-of-week): no seconds or year "
	  "field" },
	{ "0 0 12 * * ? 2026", "invalid schedule \"0 0 12 * * ? 2026\": 7 fields, "
	  "takes 5 (minute hour day-of-month month day-of-week): no seconds or "
	  "year field" },
	{ "0 * * * * * * *", "invalid schedule \"0 * * * * * * *\": more than 5 "
	  "fields" },
	{ "0 0 30 2 *", "invalid schedule \"0 0 30 2 *\": no date matches it: it "
	  "would never run" },
	{ "0 0 31 4,6,9,11 *", "invalid schedule \"0 0 31 4,6,9,11 *\": no date "
	  "matches it: it would never run" },
	{ "0 0 30,31 feb */2", "invalid schedule \"0 0 30,31 feb */2\": no date "
	  "matches it: it would never run" },
	{ "@every 5", "invalid schedule \"@every 5\": @every needs a unit: 5s "
	  "or 5m" },
	{ "@every 1.5", "invalid schedule \"@every 1.5\": @every needs a unit: "
	  "1.5s or 1.5m" },
	{ "@every 1ms", "invalid schedule \"@every 1ms\": @every needs at least "
	  "1s" },
	{ "@every 999ms", "invalid schedule \"@every 999ms\": @every needs at "
	  "least 1s" },
	{ "60 * * * *", "invalid schedule \"60 * * * *\": minute: 60 is out of "
	  "range (0-59)" },
	{ "* 24 * * *", "invalid schedule \"* 24 * * *\": hour: 24 is out of "
	  "range (0-23)" },
	{ "* * 0 * *", "invalid schedule \"* * 0 * *\": day-of-month: 0 is out "
	  "of range (1-31)" },
	{ "* * 32 * *", "invalid schedule \"* * 32 * *\": day-of-month: 32 is "
	  "out of range (1-31)" },
	{ "* * * 13 *", "invalid schedule \"* * * 13 *\": month: 13 is out of "
	  "range (1-12)" },
	{ "* * * * 8", "invalid schedule \"* * * * 8\": day-of-week: 8 is out "
	  "of range (0-7)" },
	{ "* * * foo *", "invalid schedule \"* * * foo *\": month: \"foo\" is "
	  "not a number or a name" },
	{ "* * * * monday", "invalid schedule \"* * * * monday\": day-of-week: "
	  "\"monday\" is not a number or a name" },
	{ "mon * * * *", "invalid schedule \"mon * * * *\": minute: \"mon\" is "
	  "not a number" },
	{ "* * * jan *x", "invalid schedule \"* * * jan *x\": day-of-week: "
	  "unexpected \"x\"" },
	{ "5-1 * * * *", "invalid schedule \"5-1 * * * *\": minute: range 5-1 "
	  "goes backwards" },
	{ "*/0 * * * *", "invalid schedule \"*/0 * * * *\": minute: step \"0\" "
	  "is not a number from 1 to 59" },
	{ "*/60 * * * *", "invalid schedule \"*/60 * * * *\": minute: step "
	  "\"60\" is not a number from 1 to 59" },
	{ "1-5/5 * * * *", "invalid schedule \"1-5/5 * * * *\": minute: step "
	  "\"5\" is not a number from 1 to 4" },
	{ "*/x * * * *", "invalid schedule \"*/x * * * *\": minute: step \"x\" "
	  "is not a number from 1 to 59" },
	{ "5/15 * * * *", "invalid schedule \"5/15 * * * *\": minute: a step "
	  "needs a range (*/N or A-B/N)" },
	{ "1,,2 * * * *", "invalid schedule \"1,,2 * * * *\": minute: expected "
	  "a number at \",2\"" },
	{ "1, * * * *", "invalid schedule \"1, * * * *\": minute: unexpected "
	  "\",\"" },
	{ "-1 * * * *", "invalid schedule \"-1 * * * *\": minute: expected a "
	  "number at \"-1\"" },
	{ "~ * * * *", "invalid schedule \"~ * * * *\": minute: expected a "
	  "number at \"~\"" },
	{ "@reboot", "invalid schedule \"@reboot\": unknown shorthand (@hourly, "
	  "@daily, @midnight, @weekly, @monthly, @yearly, @annually, @every DUR)" },
	{ "@daily 5", "invalid schedule \"@daily 5\": @daily takes nothing after "
	  "it" },
	{ "@every", "invalid schedule \"@every\": @every takes one duration "
	  "(examples: 30s, 5m, 1h)" },
	{ "@every 5s 5s", "invalid schedule \"@every 5s 5s\": @every takes one "
	  "duration (examples: 30s, 5m, 1h)" },
	{ "@every 0s", "invalid schedule \"@every 0s\": @every needs at least 1s" },
	{ "@every 1h30m", "invalid schedule \"@every 1h30m\": \"1h30m\" is not a "
	  "duration (examples: 30s, 5m, 1h; at most 720h)" },
	{ "@every 721h", "invalid schedule \"@every 721h\": \"721h\" is not a "
	  "duration (examples: 30s, 5m, 1h; at most 720h)" },
	{ "@every -5s", "invalid schedule \"@every -5s\": \"-5s\" is not a "
	  "duration (examples: 30s, 5m, 1h; at most 720h)" },
	{ "0 0 * * *\x1b[2J", "invalid schedule \"0 0 * * *?[2J\": day-of-week: "
	  "unexpected \"?[2J\"" },
	{ "0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0",
	  "invalid schedule \"0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 0 0 1 1 1 ...\": "
	  "more than 5 fields" },
};

START_TEST(parse_bad)
{
	char err[ERRLEN] = "";
	struct schedule *s = schedule_new(bad_cases[_i].expr, NULL, err, sizeof(err));

	ck_assert_msg(s == NULL, "\"%s\" was taken", bad_cases[_i].expr);
	ck_assert_str_eq(err, bad_cases[_i].err);
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

static const struct {
	const char *zone;
	const char *err;
} bad_zones[] = {
	{ "Mars/Olympus", "invalid time zone \"Mars/Olympus\": no such zone in "
	  "/usr/share/zoneinfo" },
	{ "utc", "invalid time zone \"utc\": no such zone in /usr/share/zoneinfo" },
	{ "", "invalid time zone \"\": not a tz database name" },
	{ "/etc/localtime", "invalid time zone \"/etc/localtime\": not a tz "
	  "database name" },
	{ "../../../etc/passwd", "invalid time zone \"../../../etc/passwd\": not "
	  "a tz database name" },
	{ "Europe/../Europe/Berlin", "invalid time zone \"Europe/../Europe/"
	  "Berlin\": not a tz database name" },
	{ "Europe//Berlin", "invalid time zone \"Europe//Berlin\": not a tz "
	  "database name" },
	{ "Europe/Berlin/", "invalid time zone \"Europe/Berlin/\": not a tz "
	  "database name" },
	{ "Europe", "invalid time zone \"Europe\": /usr/share/zoneinfo/Europe is "
	  "not a zone file" },
	{ "zone.tab", "invalid time zone \"zone.tab\": /usr/share/zoneinfo/"
	  "zone.tab is not a zone file" },
	{ "Europe/Berlin ", "invalid time zone \"Europe/Berlin \": not a tz "
	  "database name" },
	{ "EST5EDT,M3.2.0,M11.1.0", "invalid time zone \"EST5EDT,M3.2.0,M11.1.0\": "
	  "not a tz database name" },
};

START_TEST(zone_bad)
{
	char err[ERRLEN] = "";
	struct schedule *s = schedule_new("0 0 * * *", bad_zones[_i].zone, err,
					  sizeof(err));

	ck_assert_msg(s == NULL, "zone \"%s\" was taken", bad_zones[_i].zone);
	ck_assert_str_eq(err, bad_zones[_i].err);
}
END_TEST

/* Reading a zone sets TZ for a moment: it must be back as it was, set or
 * not, and libc's own localtime must read it again. */
START_TEST(zone_leaves_tz_alone)
{
	struct schedule *s;
	struct tm tm;
	time_t t = 1782864000; /* 2026-07-01T00:00:00Z */

	ck_assert_int_eq(setenv("TZ", "Asia/Tokyo", 1), 0);
	tzset();
	s = make("0 0 * * *", "America/Los_Angeles");
	ck_assert_str_eq(getenv("TZ"), "Asia/Tokyo");
	localtime_r(&t, &tm);
	ck_assert_int_eq(tm.tm_gmtoff, 9 * 3600);
	schedule_free(s);
	ck_assert_int_eq(unsetenv("TZ"), 0);
	s = make("0 0 * * *", "America/Denver");
	ck_assert_ptr_null(getenv("TZ"));
	schedule_free(s);
}
END_TEST

/* TZDIR, as glibc reads it, says where the zones are: a zone copied
 * there under a name of its own is found, the system's are not. */
START_TEST(zone_tzdir)
{
	char dir[] = "/tmp/test_schedule.XXXXXX", sub[64], path[96], err[ERRLEN];
	char cmd[256];
	struct schedule *s;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/Test", dir);
	snprintf(path, sizeof(path), "%s/Berlin2", sub);
	snprintf(cmd, sizeof(cmd), "mkdir %s && cp /usr/share/zoneinfo/Europe/Berlin %s",
		 sub, path);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(setenv("TZDIR", dir, 1), 0);
	s = make("30 2 * * *", "Test/Berlin2");
	ck_assert_int_eq(schedule_next(s, ms("2026-03-29T00:00:00Z")),
			 ms("2026-03-29T01:00:00Z"));
	schedule_free(s);
	ck_assert_ptr_null(schedule_new("0 0 * * *", "Europe/Paris", err, sizeof(err)));
	snprintf(cmd, sizeof(cmd), "invalid time zone \"Europe/Paris\": no such zone "
		 "in %s", dir);
	ck_assert_str_eq(err, cmd);
	unsetenv("TZDIR");
	snprintf(cmd, sizeof(cmd), "rm -r %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- ticks ---- */

/* From t, the next tick and the newest at or before t. */
struct tick_case {
	const char *expr, *zone, *t, *next, *prev;
};

static void check_ticks(const struct tick_case *c)
{
	struct schedule *s = make(c->expr, c->zone);
	int64_t t = ms(c->t), next = schedule_next(s, t), prev = schedule_prev(s, t);
	char a[32], b[32];

	ck_assert_msg(next == ms(c->next), "\"%s\" %s: next after %s is %s, "
		      "expected %s", c->expr, ZONE(c->zone), c->t,
		      show(next, a, sizeof(a)), c->next);
	ck_assert_msg(prev == ms(c->prev), "\"%s\" %s: prev at %s is %s, "
		      "expected %s", c->expr, ZONE(c->zone), c->t,
		      show(prev, b, sizeof(b)), c->prev);
	schedule_free(s);
}

static const struct tick_case tick_cases[] = {
	/* steps, exact ticks: next is strictly after, prev at or before */
	{ "*/15 * * * *", NULL, "2026-01-31T23:59:00Z", "2026-02-01T00:00:00Z",
	  "2026-01-31T23:45:00Z" },
	{ "*/15 * * * *", NULL, "2026-01-31T23:45:00Z", "2026-02-01T00:00:00Z",
	  "2026-01-31T23:45:00Z" },
	{ "*/15 * * * *", NULL, "2026-01-31T23:44:59.999Z", "2026-01-31T23:45:00Z",
	  "2026-01-31T23:30:00Z" },
	{ "1-30/5 * * * *", NULL, "2026-05-05T10:27:00Z", "2026-05-05T11:01:00Z",
	  "2026-05-05T10:26:00Z" },
	/* month ends, leap years, days that do not exist */
	{ "0 0 31 * *", NULL, "2026-02-01T00:00:00Z", "2026-03-31T00:00:00Z",
	  "2026-01-31T00:00:00Z" },
	{ "0 12 29 2 *", NULL, "2026-03-01T00:00:00Z", "2028-02-29T12:00:00Z",
	  "2024-02-29T12:00:00Z" },
	{ "0 0 29 2 *", NULL, "2097-01-01T00:00:00Z", "2104-02-29T00:00:00Z",
	  "2096-02-29T00:00:00Z" },
	{ "0 0 29 feb *", NULL, "2000-02-28T00:00:00Z", "2000-02-29T00:00:00Z",
	  "1996-02-29T00:00:00Z" },
	/* rare but real: Feb 29 on a Sunday, 2032 then 2060 */
	{ "0 0 29 2 */7", NULL, "2032-03-01T00:00:00Z", "2060-02-29T00:00:00Z",
	  "2032-02-29T00:00:00Z" },
	{ "0 0 31 4,6,9,11 1", NULL, "2026-11-24T00:00:00Z", "2026-11-30T00:00:00Z",
	  "2026-11-23T00:00:00Z" },
	{ "59 23 31 12 *", NULL, "2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z",
	  "2026-12-31T23:59:00Z" },
	/* the day rule: either day when neither field starts with '*' ... */
	{ "0 0 13 * 5", NULL, "2026-11-24T00:00:00Z", "2026-11-27T00:00:00Z",
	  "2026-11-20T00:00:00Z" },
	{ "0 0 1,15 * sun", NULL, "2026-11-24T00:00:00Z", "2026-11-29T00:00:00Z",
	  "2026-11-22T00:00:00Z" },
	{ "0 0 1-31 * 1", NULL, "2026-11-24T12:00:00Z", "2026-11-25T00:00:00Z",
	  "2026-11-24T00:00:00Z" },
	/* ... both when one does, even "*" with a step */
	{ "0 0 */2 * 1", NULL, "2026-11-24T00:00:00Z", "2026-12-07T00:00:00Z",
	  "2026-11-23T00:00:00Z" },
	{ "0 0 * * 1", NULL, "2026-11-24T00:00:00Z", "2026-11-30T00:00:00Z",
	  "2026-11-23T00:00:00Z" },
	{ "0 0 29 2 */7", NULL, "2026-01-01T00:00:00Z", "2032-02-29T00:00:00Z",
	  "2004-02-29T00:00:00Z" },
	/* names, 7 and 0 for Sunday, ranges through Sunday */
	{ "0 9 * * 7", NULL, "2026-11-24T00:00:00Z", "2026-11-29T09:00:00Z",
	  "2026-11-22T09:00:00Z" },
	{ "0 9 * JAN-mar Mon-FRI", NULL, "2026-11-24T00:00:00Z",
	  "2027-01-01T09:00:00Z", "2026-03-31T09:00:00Z" },
	{ "0 0 * * fri-sun", NULL, "2026-11-24T00:00:00Z", "2026-11-27T00:00:00Z",
	  "2026-11-22T00:00:00Z" },
	/* the shorthands */
	{ "@hourly", NULL, "2026-11-24T10:00:00Z", "2026-11-24T11:00:00Z",
	  "2026-11-24T10:00:00Z" },
	{ "@weekly", NULL, "2026-11-24T10:00:00Z", "2026-11-29T00:00:00Z",
	  "2026-11-22T00:00:00Z" },
	{ "@monthly", NULL, "2026-11-24T10:00:00Z", "2026-12-01T00:00:00Z",
	  "2026-11-01T00:00:00Z" },
	{ "@annually", NULL, "2026-11-24T10:00:00Z", "2027-01-01T00:00:00Z",
	  "2026-01-01T00:00:00Z" },
	/* @every: multiples of the duration since the epoch, in any zone */
	{ "@every 7s", NULL, "1970-01-01T00:00:13.999Z", "1970-01-01T00:00:14Z",
	  "1970-01-01T00:00:07Z" },
	{ "@every 7s", "Europe/Berlin", "1970-01-01T00:00:14Z",
	  "1970-01-01T00:00:21Z", "1970-01-01T00:00:14Z" },
	{ "@every 7s", NULL, "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z",
	  "1969-12-31T23:59:53Z" },
	{ "@every 90m", "America/New_York", "2026-11-24T10:00:00Z",
	  "2026-11-24T10:30:00Z", "2026-11-24T09:00:00Z" },
	{ "@every 1s", NULL, "2026-11-24T10:00:00.005Z", "2026-11-24T10:00:01Z",
	  "2026-11-24T10:00:00Z" },
	{ "@every 1.5s", NULL, "2026-11-24T10:00:00.700Z", "2026-11-24T10:00:01.500Z",
	  "2026-11-24T10:00:00Z" },
	{ "@every 720h", NULL, "2026-11-24T10:00:00Z", "2026-12-03T00:00:00Z",
	  "2026-11-03T00:00:00Z" },
	/* a zone without DST */
	{ "0 9 * * *", "Asia/Kolkata", "2026-11-24T00:00:00Z",
	  "2026-11-24T03:30:00Z", "2026-11-23T03:30:00Z" },
	{ "30 23 31 12 *", "Asia/Tokyo", "2026-11-24T00:00:00Z",
	  "2026-12-31T14:30:00Z", "2025-12-31T14:30:00Z" },
	{ "0 0 * * *", "UTC", "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z",
	  "2026-11-24T00:00:00Z" },
};

START_TEST(ticks)
{
	check_ticks(&tick_cases[_i]);
}
END_TEST

/* DST as cronie: a job with '*' in its minute or hour field runs each time
 * the local clock shows a matching time (none in a gap, twice in a
 * repeat); a job with both fixed runs a matching local time once, at the
 * first instant the clock shows it or a later time (a time in a gap: at
 * the gap's end; a repeated time: the first time). Each row is one step. */
static const struct tick_case dst_cases[] = {
	/* Berlin, 2026-03-29 01:00Z: 02:00 CET becomes 03:00 CEST */
	{ "30 2 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
	  "2026-03-29T01:00:00Z", "2026-03-28T01:30:00Z" },
	{ "30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z",
	  "2026-03-30T00:30:00Z", "2026-03-29T01:00:00Z" },
	{ "0,30 2 * * *", "Europe/Berlin", "2026-03-29T00:59:59Z",
	  "2026-03-29T01:00:00Z", "2026-03-28T01:30:00Z" },
	{ "0,30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z",
	  "2026-03-30T00:00:00Z", "2026-03-29T01:00:00Z" },
	{ "0 3 * * *", "Europe/Berlin", "2026-03-29T00:00:00Z",
	  "2026-03-29T01:00:00Z", "2026-03-28T02:00:00Z" },
	{ "*/30 * * * *", "Europe/Berlin", "2026-03-29T00:45:00Z",
	  "2026-03-29T01:00:00Z", "2026-03-29T00:30:00Z" },
	{ "* 2 * * *", "Europe/Berlin", "2026-03-28T23:00:00Z",
	  "2026-03-30T00:00:00Z", "2026-03-28T01:59:00Z" },
	{ "0 * * * *", "Europe/Berlin", "2026-03-29T00:30:00Z",
	  "2026-03-29T01:00:00Z", "2026-03-29T00:00:00Z" },
	/* Berlin, 2026-10-25 01:00Z: 03:00 CEST becomes 02:00 CET */
	{ "30 2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z",
	  "2026-10-25T00:30:00Z", "2026-10-24T00:30:00Z" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-25T00:30:00Z",
	  "2026-10-26T01:30:00Z", "2026-10-25T00:30:00Z" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-25T01:15:00Z",
	  "2026-10-26T01:30:00Z", "2026-10-25T00:30:00Z" },
	{ "30 2 * * *", "Europe/Berlin", "2026-10-25T01:45:00Z",
	  "2026-10-26T01:30:00Z", "2026-10-25T00:30:00Z" },
	{ "30 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z",
	  "2026-10-25T01:30:00Z", "2026-10-25T00:30:00Z" },
	{ "*/15 2 * * *", "Europe/Berlin", "2026-10-25T00:45:00Z",
	  "2026-10-25T01:00:00Z", "2026-10-25T00:45:00Z" },
	{ "*/15 2 * * *", "Europe/Berlin", "2026-10-25T01:45:00Z",
	  "2026-10-26T01:00:00Z", "2026-10-25T01:45:00Z" },
	{ "0 3 * * *", "Europe/Berlin", "2026-10-25T00:59:59Z",
	  "2026-10-25T02:00:00Z", "2026-10-24T01:00:00Z" },
	/* New York, 2026-03-08 07:00Z: 02:00 EST becomes 03:00 EDT */
	{ "30 2 * * *", "America/New_York", "2026-03-08T06:00:00Z",
	  "2026-03-08T07:00:00Z", "2026-03-07T07:30:00Z" },
	{ "30 2 * * *", "America/New_York", "2026-03-08T07:00:00Z",
	  "2026-03-09T06:30:00Z", "2026-03-08T07:00:00Z" },
	/* New York, 2026-11-01 06:00Z: 02:00 EDT becomes 01:00 EST */
	{ "30 1 * * *", "America/New_York", "2026-11-01T04:00:00Z",
	  "2026-11-01T05:30:00Z", "2026-10-31T05:30:00Z" },
	{ "30 1 * * *", "America/New_York", "2026-11-01T05:30:00Z",
	  "2026-11-02T06:30:00Z", "2026-11-01T05:30:00Z" },
	{ "0 * * * *", "America/New_York", "2026-11-01T05:00:00Z",
	  "2026-11-01T06:00:00Z", "2026-11-01T05:00:00Z" },
	{ "0 * * * *", "America/New_York", "2026-11-01T06:00:00Z",
	  "2026-11-01T07:00:00Z", "2026-11-01T06:00:00Z" },
	/* Lord Howe, 2026-10-03 15:30Z: 02:00 (+10:30) becomes 02:30 (+11) */
	{ "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T15:00:00Z",
	  "2026-10-03T15:30:00Z", "2026-10-02T15:45:00Z" },
	{ "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T15:30:00Z",
	  "2026-10-04T15:15:00Z", "2026-10-03T15:30:00Z" },
	{ "*/15 * * * *", "Australia/Lord_Howe", "2026-10-03T15:15:00Z",
	  "2026-10-03T15:30:00Z", "2026-10-03T15:15:00Z" },
	/* Lord Howe, 2026-04-04 15:00Z: 02:00 (+11) becomes 01:30 (+10:30) */
	{ "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:00:00Z",
	  "2026-04-04T14:45:00Z", "2026-04-03T14:45:00Z" },
	{ "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:45:00Z",
	  "2026-04-05T15:15:00Z", "2026-04-04T14:45:00Z" },
	{ "*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T14:30:00Z",
	  "2026-04-04T15:00:00Z", "2026-04-04T14:30:00Z" },
	{ "*/30 * * * *", "Australia/Lord_Howe", "2026-04-04T15:00:00Z",
	  "2026-04-04T15:30:00Z", "2026-04-04T15:00:00Z" },
	/* Sao Paulo 1999-10-03 03:00Z: midnight became 01:00, so the day's
	 * first local time was 01:00 */
	{ "0 0 * * *", "America/Sao_Paulo", "1999-10-03T02:00:00Z",
	  "1999-10-03T03:00:00Z", "1999-10-02T03:00:00Z" },
};

START_TEST(dst)
{
	check_ticks(&dst_cases[_i]);
}
END_TEST

/* Walking from tick to tick over a year sees each expected run once: in
 * Berlin a daily 02:30 runs 365 times (the spring one at 03:00), an
 * hourly one 8760 times less the gap hour plus the repeat hour. */
static const struct {
	const char *expr, *zone;
	int runs;
} year_cases[] = {
	{ "30 2 * * *", "Europe/Berlin", 365 },
	{ "0 * * * *", "Europe/Berlin", 8760 },
	{ "*/30 2 * * *", "Europe/Berlin", 365 * 2 - 2 + 2 },
	{ "15 2 * * *", "Australia/Lord_Howe", 365 },
	{ "*/15 * * * *", "Australia/Lord_Howe", 365 * 96 },
	{ "0 0 * * *", "Asia/Kolkata", 365 },
	{ "@every 1h", "Europe/Berlin", 8760 },
};

START_TEST(year)
{
	struct schedule *s = make(year_cases[_i].expr, year_cases[_i].zone);
	int64_t t = schedule_prev(s, ms("2025-12-31T12:00:00Z")),
		end = ms("2026-12-31T12:00:00Z");
	int runs = 0;

	for (int64_t next = schedule_next(s, t); next <= end; next = schedule_next(s, t)) {
		ck_assert_int_gt(next, t);
		ck_assert_int_eq(schedule_prev(s, next), next);
		ck_assert_int_eq(schedule_prev(s, next - 1), t);
		t = next;
		runs++;
	}
	ck_assert_int_eq(runs, year_cases[_i].runs);
	schedule_free(s);
}
END_TEST

static const struct {
	const char *expr, *zone, *t;
	int64_t interval;
} interval_cases[] = {
	{ "*/15 * * * *", NULL, "2026-11-24T10:07:00Z", 900000 },
	{ "@every 7s", NULL, "2026-11-24T10:07:00Z", 7000 },
	{ "0 0 29 2 *", NULL, "2026-11-24T10:07:00Z", INT64_C(1461) * 86400000 },
	{ "0 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", 23 * 3600000 },
	{ "0 2 * * *", "Europe/Berlin", "2026-10-25T01:30:00Z", 25 * 3600000 },
	{ "0 0 1 * *", NULL, "2026-02-15T00:00:00Z", INT64_C(28) * 86400000 },
};

START_TEST(interval)
{
	struct schedule *s = make(interval_cases[_i].expr, interval_cases[_i].zone);

	ck_assert_int_eq(schedule_interval(s, ms(interval_cases[_i].t)),
			 interval_cases[_i].interval);
	schedule_free(s);
}
END_TEST

/* ---- the --once-per window ---- */

/* Each checked against python's zoneinfo: the window is the local wall
 * time's floor, begun at the first instant the clock shows it. */
static const struct {
	const char *zone, *t;
	int64_t dur;
	const char *start;
} window_cases[] = {
	{ NULL, "2026-11-26T15:00:00Z", 24 * 3600000, "2026-11-26T00:00:00Z" },
	{ "UTC", "2026-11-26T15:00:00Z", 24 * 3600000, "2026-11-26T00:00:00Z" },
	{ NULL, "2026-11-26T15:07:00Z", 90 * 60000, "2026-11-26T15:00:00Z" },
	/* local days, not UTC ones */
	{ "Europe/Berlin", "2026-11-26T15:00:00Z", 24 * 3600000, "2026-11-25T23:00:00Z" },
	{ "Europe/Berlin", "2026-11-26T22:59:59.999Z", 24 * 3600000, "2026-11-25T23:00:00Z" },
	{ "Europe/Berlin", "2026-11-26T23:30:00Z", 24 * 3600000, "2026-11-26T23:00:00Z" },
	{ "America/New_York", "2026-11-26T03:00:00Z", 24 * 3600000, "2026-11-25T05:00:00Z" },
	/* DST days: 25 hours (fall back), 23 hours (spring forward) */
	{ "Europe/Berlin", "2026-10-24T21:59:00Z", 24 * 3600000, "2026-10-23T22:00:00Z" },
	{ "Europe/Berlin", "2026-10-24T22:00:00Z", 24 * 3600000, "2026-10-24T22:00:00Z" },
	{ "Europe/Berlin", "2026-10-25T22:30:00Z", 24 * 3600000, "2026-10-24T22:00:00Z" },
	{ "Europe/Berlin", "2026-10-25T23:00:00Z", 24 * 3600000, "2026-10-25T23:00:00Z" },
	{ "Europe/Berlin", "2026-03-29T21:00:00Z", 24 * 3600000, "2026-03-28T23:00:00Z" },
	{ "Europe/Berlin", "2026-03-29T22:00:00Z", 24 * 3600000, "2026-03-29T22:00:00Z" },
	{ "America/New_York", "2026-03-08T12:00:00Z", 24 * 3600000, "2026-03-08T05:00:00Z" },
	/* local hours: a skipped one is no window, a repeated one is one */
	{ "Europe/Berlin", "2026-03-29T00:59:00Z", 3600000, "2026-03-29T00:00:00Z" },
	{ "Europe/Berlin", "2026-03-29T01:30:00Z", 3600000, "2026-03-29T01:00:00Z" },
	{ "Europe/Berlin", "2026-10-25T00:30:00Z", 3600000, "2026-10-25T00:00:00Z" },
	{ "Europe/Berlin", "2026-10-25T01:30:00Z", 3600000, "2026-10-25T00:00:00Z" },
	{ "Europe/Berlin", "2026-10-25T02:10:00Z", 3600000, "2026-10-25T02:00:00Z" },
	/* a zone half an hour off UTC: its hours, not UTC's */
	{ "Asia/Kolkata", "2026-11-26T10:00:00Z", 3600000, "2026-11-26T09:30:00Z" },
	{ "Nowhere/Zone", "2026-11-26T15:00:00Z", 24 * 3600000, "2026-11-26T00:00:00Z" },
};

START_TEST(window)
{
	char buf[40];
	int64_t start = schedule_window(window_cases[_i].zone, ms(window_cases[_i].t),
					window_cases[_i].dur);

	ck_assert_str_eq(show(start, buf, sizeof(buf)), window_cases[_i].start);
	ck_assert_int_eq(start % 1000, 0);
}
END_TEST

/* ---- jitter ---- */

START_TEST(jitter)
{
	int64_t tick = ms("2026-11-24T10:00:00Z"), j, first = -1;
	int buckets[10] = { 0 }, same = 0;

	ck_assert_int_eq(schedule_jitter(42, "default", tick, 0), 0);
	ck_assert_int_eq(schedule_jitter(42, "default", tick, -5), 0);
	ck_assert_int_eq(schedule_jitter(42, "default", tick, 1), 0);
	/* Pinned: every node and every version must compute the same delay. */
	ck_assert_int_eq(schedule_jitter(42, "default", tick, 60000), JITTER_PINNED);
	ck_assert_int_eq(schedule_jitter(42, NULL, tick, 60000),
			 schedule_jitter(42, "", tick, 60000));
	for (int i = 0; i < 10000; i++) {
		j = schedule_jitter(7, "refresh", tick + i * INT64_C(60000), 10000);
		ck_assert_int_ge(j, 0);
		ck_assert_int_lt(j, 10000);
		ck_assert_int_eq(j, schedule_jitter(7, "refresh", tick + i * INT64_C(60000),
						    10000));
		buckets[j / 1000]++;
		if (i == 0)
			first = j;
		same += schedule_jitter(8, "refresh", tick, 10000) == first;
	}
	/* uniform enough: each tenth of the range gets 10% +- 2% */
	for (int i = 0; i < 10; i++)
		ck_assert_msg(buckets[i] > 800 && buckets[i] < 1200, "bucket %d: %d",
			      i, buckets[i]);
	/* the key and the job change the delay */
	ck_assert_int_lt(same, 10000);
	ck_assert_int_ne(schedule_jitter(7, "refresh", tick, INT64_C(1) << 40),
			 schedule_jitter(7, "refresh2", tick, INT64_C(1) << 40));
	ck_assert_int_ne(schedule_jitter(7, "refresh", tick, INT64_C(1) << 40),
			 schedule_jitter(8, "refresh", tick, INT64_C(1) << 40));
}
END_TEST

/* A daemon with 50 jobs asks for each one's next tick every second: the
 * arithmetic must cost microseconds, not the tz database's reading. */
START_TEST(fast)
{
	static const char *const exprs[] = { "*/15 * * * *", "30 2 * * *",
		"0 0 29 2 *", "0 9 * jan-mar mon-fri", "@every 5s" };
	struct schedule *s[5];
	struct timespec a, b;
	int64_t t = ms("2026-01-01T00:00:00Z"), sum = 0;
	double elapsed;

	for (int i = 0; i < 5; i++)
		s[i] = make(exprs[i], "Europe/Berlin");
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 100000; i++, t += 1000)
		sum += schedule_next(s[i % 5], t) - t;
	clock_gettime(CLOCK_MONOTONIC, &b);
	elapsed = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	ck_assert_int_gt(sum, 0);
	/* about 0.05s here; a loaded machine under valgrind, far more */
	ck_assert_msg(elapsed < 20.0, "100000 ticks took %.2fs", elapsed);
	for (int i = 0; i < 5; i++)
		schedule_free(s[i]);
}
END_TEST

static Suite *schedule_suite(void)
{
	Suite *s = suite_create("schedule");
	struct {
		const char *name;
		const TTest *test;
		int cases;
	} tests[] = {
#define LOOP(test, table) { #test, test, (int)(sizeof(table) / sizeof(table[0])) }
		LOOP(parse_good, good_cases),
		LOOP(parse_bad, bad_cases),
		LOOP(zone_bad, bad_zones),
		{ "zone_leaves_tz_alone", zone_leaves_tz_alone, 1 },
		{ "zone_tzdir", zone_tzdir, 1 },
		LOOP(ticks, tick_cases),
		LOOP(dst, dst_cases),
		LOOP(year, year_cases),
		LOOP(interval, interval_cases),
		LOOP(window, window_cases),
		{ "jitter", jitter, 1 },
		{ "fast", fast, 1 },
#undef LOOP
	};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		tcase_set_timeout(tc, 60);
		tcase_add_loop_test(tc, tests[i].test, 0, tests[i].cases);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(schedule_suite());
	int failed;

	/* The zones' paths in the messages are the default's. */
	unsetenv("TZDIR");
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
