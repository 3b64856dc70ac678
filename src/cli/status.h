/* status.h: "pgleader status": who leads, who waits. */
#ifndef PGLEADER_STATUS_H
#define PGLEADER_STATUS_H

#include "cli.h"
#include "config.h"

/* How many sections status shows at most after the sessions. */
#define STATUS_SECTIONS_MAX 4

/* Prints the leader and the standbys of cfg's lock to stdout (text, or JSON
 * with cfg->json), and after them each of sections (NULL-terminated: the
 * jobs of the ledger, its controls) that has something to show. Returns
 * the exit code: 0 a leader exists, 3 none, 69 the database cannot be
 * reached or queried. */
int status_run(const struct config *cfg, const struct cli_section *const *sections);

#endif
