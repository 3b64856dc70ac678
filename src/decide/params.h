/* params.h: the election's parameters from the configuration, the one
 * function the daemon and the simulator (tests/sim) both build them with. */
#ifndef PGLEADER_PARAMS_H
#define PGLEADER_PARAMS_H

#include "config.h"
#include "election.h"

/* Fills p from cfg; connect_timeout is the lease's and left 0. */
void election_params_from_config(const struct config *cfg,
				 struct election_params *p);

#endif
