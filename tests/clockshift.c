/* clockshift.c: an LD_PRELOAD shim that steps the wall clock, and only it, for one process. */
/*
 * The offset, in seconds (a decimal such as 30 or -60.5), is read from the
 * file named by $CLOCKSHIFT_FILE at every call, so a test steps the clock of
 * a running process by rewriting that file (write a new file and rename it
 * into place: a reader never sees half a number). A missing or empty file
 * is an offset of 0.
 *
 * Shifted: clock_gettime(CLOCK_REALTIME and CLOCK_REALTIME_COARSE),
 * gettimeofday, time. Not shifted: CLOCK_MONOTONIC, CLOCK_BOOTTIME and the
 * rest, which is the point: a program that measures its deadlines on the
 * monotonic clock does not notice.
 *
 *     LD_PRELOAD=tests/clockshift.so CLOCKSHIFT_FILE=/tmp/shift pgleader ...
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The offset in nanoseconds, read afresh. No stdio, no allocation, no
 * locale: the clock may be read from anywhere, a signal handler included. */
static long long offset_ns(void)
{
	const char *path = getenv("CLOCKSHIFT_FILE"), *p;
	char buf[64];
	long long whole = 0, frac = 0, scale = 1000000000LL;
	int fd, negative = 0;
	ssize_t len;

	if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	p = buf;
	while (*p == ' ')
		p++;
	if (*p == '-' || *p == '+')
		negative = *p++ == '-';
	for (; *p >= '0' && *p <= '9'; p++)
		whole = whole * 10 + (*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9' && scale > 1; p++) {
			scale /= 10;
			frac += (*p - '0') * scale;
		}
	whole = whole * 1000000000LL + frac;
	return negative ? -whole : whole;
}

/* The real clock, from the kernel: never through a symbol this file
 * replaces. */
static int real_clock_gettime(clockid_t clock, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, clock, ts);
}

static void shift(struct timespec *ts)
{
	long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();

	ts->tv_sec = (time_t)(ns / 1000000000LL);
	ts->tv_nsec = (long)(ns % 1000000000LL);
	if (ts->tv_nsec < 0) {
		ts->tv_nsec += 1000000000L;
		ts->tv_sec--;
	}
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	int rc = real_clock_gettime(clock, ts);

	if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
		shift(ts);
	return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	struct timespec ts;

	(void)tz; /* obsolete: glibc ignores it too */
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
