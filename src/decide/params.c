/* params.c: the election's parameters from the configuration. */
#include "params.h"

static enum election_restart restart_of(enum restart_policy r)
{
	switch (r) {
	case RESTART_ON_FAILURE: return ELECTION_RESTART_ON_FAILURE;
	case RESTART_ALWAYS: return ELECTION_RESTART_ALWAYS;
	case RESTART_NO: break;
	}
	return ELECTION_RESTART_NO;
}

void election_params_from_config(const struct config *cfg,
				 struct election_params *p)
{
	*p = (struct election_params){
		.wait_in_queue = cfg->acquire == ACQUIRE_WAIT,
		.queue_depth = cfg->queue_depth,
		.poll_pooled = cfg->poll_dsn != NULL,
		/* waiting no time at all is --nonblock: try once, then give up */
		.nonblock = cfg->nonblock || cfg->wait_timeout_ms == 0,
		.retry_interval = cfg->retry_interval_ms / 1000.0,
		.ping_interval = cfg->ping_interval_ms / 1000.0,
		.ping_timeout = cfg->ping_timeout_ms / 1000.0,
		.ping_failures = cfg->ping_failures,
		.takeover_delay = cfg->takeover_delay_ms / 1000.0,
		.priority = cfg->priority,
		.priority_delay = cfg->priority_delay_ms / 1000.0,
		/* 0 is --nonblock above, not a deadline that passes at start */
		.wait_timeout = cfg->wait_timeout_ms <= 0 ? -1 : cfg->wait_timeout_ms / 1000.0,
		.restart = restart_of(cfg->restart),
		.restart_limit = cfg->restart_limit,
		.conflict_exit_code = cfg->conflict_exit_code,
		.failsafe = cfg->failsafe_peers != NULL,
		.failsafe_ttl = cfg->failsafe_ttl_ms / 1000.0,
		.server_lease = cfg->server_lease_ms / 1000.0,
		.grace_period = cfg->grace_period_ms / 1000.0,
		.drain = cfg->drain_timeout_ms / 1000.0,
		.runner_pauses = cfg->uses_ledger,
		.schema = cfg->schema,
		.node_id = cfg->node_id,
		.lock_name = cfg->lock_name,
		.lock_key = cfg->lock_key,
	};
}
