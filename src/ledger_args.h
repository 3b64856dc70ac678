/* ledger_args.h: a stopgap that reads "pgleader runs" and "pgleader
 * init-db" with their options (--job, --since, --schema, --print-sql)
 * until config.c's table does (DESIGN 10). Replace by config_load. */
#ifndef PGLEADER_LEDGER_ARGS_H
#define PGLEADER_LEDGER_ARGS_H

#include <stddef.h>

#include "config.h"

/* config_load, plus: when the command would be the word "runs" or
 * "init-db" (not after "--"), that word is a subcommand; its options are
 * taken out and the rest read as "status" reads them. Sets cfg->mode,
 * schema, runs_job and print_sql (pointing into argv), runs_since_ms. */
enum config_result ledger_args_load(struct config *cfg, int argc, char **argv,
				    char *err, size_t errlen);

#endif
