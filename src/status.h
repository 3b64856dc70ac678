/* status.h: "pgleader status": who leads, who waits. */
#ifndef PGLEADER_STATUS_H
#define PGLEADER_STATUS_H

#include "config.h"

/* Prints the leader and the standbys of cfg's lock to stdout (text, or JSON
 * with cfg->json). Returns the exit code: 0 a leader exists, 3 none, 69 the
 * database cannot be reached or queried. */
int status_run(const struct config *cfg);

#endif
