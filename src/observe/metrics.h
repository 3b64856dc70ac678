/* metrics.h: Prometheus text and /status JSON from the election's snapshot. */
#ifndef PGLEADER_METRICS_H
#define PGLEADER_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "election.h"
#include "jobs_step.h" /* what a job shows: struct jobs_view, outcomes */

/* Facts about this process that the caller gathers (from /proc); a negative
 * value leaves that metric out. */
struct metrics_process {
	double start_time_seconds;  /* wall clock, since the epoch */
	double cpu_seconds;         /* user + system */
	double resident_bytes;
	double virtual_bytes;
	long open_fds;
	long max_fds;
};

struct metrics_versions {
	const char *version;        /* pgleader's */
	const char *libpq_version;  /* e.g. "15.3" */
};

/* A growing text buffer; start it zeroed, free it with metrics_buf_free. */
struct metrics_buf {
	char *data;
	size_t len, cap;
	bool failed;                /* out of memory: data holds less */
};

void metrics_buf_free(struct metrics_buf *b);

/* What the health endpoints answer, from the snapshot alone. */
bool metrics_is_leader(const struct election_snapshot *s);   /* holds the lock */
bool metrics_is_standby(const struct election_snapshot *s);  /* connected, waiting */
bool metrics_is_live(const struct election_snapshot *s);     /* not stopping */
bool metrics_is_ready(const struct election_snapshot *s);    /* leader or standby */

/* The state's name as a label value: "shutting down" -> "shutting_down". */
const char *metrics_state_label(enum election_state st, char *buf, size_t len);

/* The jobs of DESIGN 10, when the daemon has them: /metrics and /status
 * read them through this (set once, before the HTTP server starts). */
struct metrics_jobs {
	size_t (*count)(const void *arg);
	void (*view)(const void *arg, size_t i, struct jobs_view *v);
	const void *arg;
};
void metrics_set_jobs(const struct metrics_jobs *jobs);

/* Appends the Prometheus text format 0.0.4 to out; 0, or -1 when memory ran
 * out. p may be NULL (no process_* metrics). */
int metrics_prometheus(const struct election_snapshot *s,
		       const struct metrics_process *p,
		       const struct metrics_versions *v,
		       struct metrics_buf *out);

/* The /status document, NUL-terminated, to be free()d; NULL when memory
 * ran out. */
char *metrics_status_json(const struct election_snapshot *s,
			  const struct metrics_versions *v);

#endif
