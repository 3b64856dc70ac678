/* stampjob: the benchmark's command with the least start-up of its own.
 * It appends "start NODE PID t=MONO ." to LEDGER with one O_APPEND write, the
 * line tests/integration/job.py writes, then waits for SIGTERM or SIGINT and
 * appends "stop NODE PID t=MONO why=term ." before it exits 0. NODE is
 * PGLEADER_NODE_ID. A C program: the Python toy job's own ~20 ms of
 * start-up would hide what pgleader's failover costs.
 *
 * stampjob --tick LEDGER: a scheduled run's stamp (DESIGN 10) instead:
 * appends "tick JOB TICK t=REALTIME ." (PGLEADER_JOB, PGLEADER_TICK, the
 * wall clock as Unix seconds) and exits 0 at once. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void stamp(const char *ledger, const char *kind, const char *node,
		  const char *extra)
{
	struct timespec ts;
	char line[256];
	int fd, n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(line, sizeof(line), "%s %s %d t=%lld.%09ld%s .\n", kind, node,
		     (int)getpid(), (long long)ts.tv_sec, ts.tv_nsec, extra);
	fd = open(ledger, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || n <= 0 || (size_t)n >= sizeof(line) || write(fd, line, (size_t)n) != n)
		exit(1);
	close(fd);
}

/* The wall clock, which the database's (on this machine) also reads. */
static int stamp_tick(const char *ledger)
{
	const char *job = getenv("PGLEADER_JOB"), *tick = getenv("PGLEADER_TICK");
	struct timespec ts;
	char line[256];
	int fd, n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(line, sizeof(line), "tick %s %s t=%lld.%09ld .\n", job ? job : "-",
		     tick ? tick : "-", (long long)ts.tv_sec, ts.tv_nsec);
	fd = open(ledger, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || n <= 0 || (size_t)n >= sizeof(line) || write(fd, line, (size_t)n) != n)
		return 1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *node = getenv("PGLEADER_NODE_ID");
	sigset_t stop;
	int sig;

	if (argc == 3 && !strcmp(argv[1], "--tick"))
		return stamp_tick(argv[2]);
	if (argc != 2) {
		fprintf(stderr, "usage: stampjob LEDGER | stampjob --tick LEDGER\n");
		return 2;
	}
	if (!node || !*node)
		node = "?";
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, NULL);
	stamp(argv[1], "start", node, "");
	if (sigwait(&stop, &sig) != 0)
		return 1;
	stamp(argv[1], "stop", node, " why=term");
	return 0;
}
