/* supervisor.h: turns lease, child, signal and timer callbacks into election
 * events, and carries out the actions the election returns. */
#ifndef PGLEADER_SUPERVISOR_H
#define PGLEADER_SUPERVISOR_H

#include <ev.h>

#include "config.h"
#include "election.h"

struct supervisor;

/* NULL with err when the lease cannot be set up (a DSN libpq cannot parse). */
struct supervisor *supervisor_new(struct ev_loop *loop, const struct config *cfg,
				  char *err, size_t errlen);
/* Starts the election; the loop then runs until the election exits. */
void supervisor_start(struct supervisor *s);
/* The election's exit code; EX_SOFTWARE if the loop stopped early. */
int supervisor_exit_code(struct supervisor *s);
/* What the election last published, for observers. */
const struct election_snapshot *supervisor_snapshot(const struct supervisor *s);
void supervisor_free(struct supervisor *s);

#endif
