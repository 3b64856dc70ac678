/* LOCAL STUB, never committed: @every only. */
#include "schedule.h"
#include "value.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct schedule { int64_t every; char expr[128]; };
struct schedule *schedule_new(const char *expr, const char *zone, char *err, size_t errlen)
{
	struct schedule *s = calloc(1, sizeof(*s));

	(void)zone;
	snprintf(s->expr, sizeof(s->expr), "%s", expr);
	if (!strcmp(expr, "@hourly")) { s->every = 3600000; return s; }
	if (strncmp(expr, "@every ", 7) || value_parse_duration(expr + 7, &s->every) < 0 || s->every <= 0) {
		snprintf(err, errlen, "bad schedule \"%s\"", expr);
		free(s);
		return NULL;
	}
	return s;
}
void schedule_free(struct schedule *s) { free(s); }
int64_t schedule_next(const struct schedule *s, int64_t t) { int64_t q = t / s->every; if (t < 0 && t % s->every) q--; return (q + 1) * s->every; }
int64_t schedule_prev(const struct schedule *s, int64_t t) { int64_t q = t / s->every; if (t < 0 && t % s->every) q--; return q * s->every; }
int64_t schedule_interval(const struct schedule *s, int64_t t) { (void)t; return s->every; }
int64_t schedule_jitter(int64_t k, const char *job, int64_t tick, int64_t jitter) { uint64_t h = (uint64_t)k ^ (uint64_t)tick * 0x9E3779B97F4A7C15u; for (; *job; job++) h = (h ^ (unsigned char)*job) * 0x100000001b3u; return jitter > 0 ? (int64_t)(h % (uint64_t)jitter) : 0; }
const char *schedule_expr(const struct schedule *s) { return s->expr; }
