/* trigger_cli.h: "pgleader trigger" (DESIGN 13): a run of a job asked for
 * now, and with --wait, its end. */
#ifndef PGLEADER_TRIGGER_CLI_H
#define PGLEADER_TRIGGER_CLI_H

#include "config.h"

/* Returns the exit code: 0 (written), 3 (refused, or with --wait: not run
 * in time, or ended without an exit status), the run's exit status with
 * --wait, 69 (the database), 64 and 78 as config. */
int trigger_cli_run(const struct config *cfg);

#endif
