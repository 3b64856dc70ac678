/* procstat.h: this process's own facts from /proc, for /metrics. */
#ifndef PGLEADER_PROCSTAT_H
#define PGLEADER_PROCSTAT_H

#include "metrics.h"

/* The wall clock at boot (/proc/stat's btime), -1 when unknown: read once,
 * it turns a start time in clock ticks since boot into a wall time. */
double procstat_boot_time(void);

/* CPU time, memory, start time and descriptors now; -1 for what cannot be
 * read. */
void procstat_read(double boot_time, struct metrics_process *p);

#endif
