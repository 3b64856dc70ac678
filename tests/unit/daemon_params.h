/* daemon_params.h: the election's parameters as the daemon builds them
 * (config_load, then election_params_from_config), for the election's
 * unit tests. A test copies daemon_cfg, changes the configured values it
 * needs, and builds its parameters with daemon_params(). */
#ifndef PGLEADER_TEST_DAEMON_PARAMS_H
#define PGLEADER_TEST_DAEMON_PARAMS_H

#include "config.h"
#include "election.h"

/* What the lease's connect attempt is bounded by in the tests (the daemon
 * takes it from the DSN: election_params_from_config leaves it 0). */
#define DAEMON_CONNECT_TIMEOUT 10

/* `pgleader --node-id a -- job`, with no PGLEADER_* environment: every
 * other value is the daemon's default. Loaded by daemon_config_load(),
 * before the tests run; copies of it are never freed. */
extern struct config daemon_cfg;

void daemon_config_load(void);

/* election_params_from_config(cfg), connect_timeout
 * DAEMON_CONNECT_TIMEOUT. */
struct election_params daemon_params(const struct config *cfg);

#endif
