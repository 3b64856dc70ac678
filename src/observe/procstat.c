/* procstat.c: this process's own facts from /proc, for /metrics. */
#include "procstat.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proctree.h"

double procstat_boot_time(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char *line = NULL;
	size_t cap = 0;
	unsigned long long btime;
	double t = -1;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0)
		if (sscanf(line, "btime %llu", &btime) == 1) {
			t = (double)btime;
			break;
		}
	free(line);
	fclose(f);
	return t;
}

/* The descriptors in /proc/self/fd, not counting the one reading it. */
static long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			n++;
	closedir(d);
	return n;
}

static void read_stat(double boot_time, struct metrics_process *p)
{
	char buf[1024];
	unsigned long utime, stime, vsize;
	unsigned long long start;
	long rss, ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	const char *rest = proctree_stat_fields(AT_FDCWD, "/proc/self", buf, sizeof(buf));

	if (!rest || ticks <= 0 ||
	    sscanf(rest, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u"
		   " %lu %lu %*d %*d %*d %*d %*d %*d %llu %lu %ld",
		   &utime, &stime, &start, &vsize, &rss) != 5)
		return;
	p->cpu_seconds = (double)(utime + stime) / (double)ticks;
	p->virtual_bytes = (double)vsize;
	p->resident_bytes = (double)rss * (double)page;
	if (boot_time >= 0)
		p->start_time_seconds = boot_time + (double)start / (double)ticks;
}

void procstat_read(double boot_time, struct metrics_process *p)
{
	struct rlimit rl;

	*p = (struct metrics_process){ -1, -1, -1, -1, -1, -1 };
	read_stat(boot_time, p);
	p->open_fds = count_fds();
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		p->max_fds = (long)rl.rlim_cur;
}
