/* schedule_oracle.c: schedule.c driven from stdin, for the differential
 * test against croniter (tests/schedule_diff.py). Each line is
 * "EXPR ZONE T_MS" (the expression may hold blanks: the last two words are
 * the zone and the time); each answer is "NEXT PREV" in ms ("never" and
 * "none" when there is none), or "error MESSAGE". */
#include "schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void answer(char *line)
{
	char *t_word, *zone, err[256];
	struct schedule *s;
	long long t;
	int64_t next, prev;

	line[strcspn(line, "\n")] = '\0';
	t_word = strrchr(line, ' ');
	if (!t_word) {
		puts("error no time");
		return;
	}
	*t_word++ = '\0';
	zone = strrchr(line, ' ');
	if (!zone) {
		puts("error no zone");
		return;
	}
	*zone++ = '\0';
	t = strtoll(t_word, NULL, 10);
	s = schedule_new(line, zone, err, sizeof(err));
	if (!s) {
		printf("error %s\n", err);
		return;
	}
	next = schedule_next(s, t);
	prev = schedule_prev(s, t);
	if (next == SCHEDULE_NEVER)
		printf("never ");
	else
		printf("%lld ", (long long)next);
	if (prev == INT64_MIN)
		puts("none");
	else
		printf("%lld\n", (long long)prev);
	schedule_free(s);
}

int main(void)
{
	char line[1024];

	while (fgets(line, sizeof(line), stdin))
		answer(line);
	return 0;
}
