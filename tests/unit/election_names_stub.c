/* election_names_stub.c: election.h's names and bounds, until election.c
 * implements the new header (temporary: removed when it does). */
#include "election.h"

const double election_bucket_bounds[ELECTION_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
	0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

const char *election_state_name(enum election_state s)
{
	switch (s) {
	case ELECTION_INIT: return "init";
	case ELECTION_CONNECTING: return "connecting";
	case ELECTION_BACKOFF: return "backoff";
	case ELECTION_STANDBY: return "standby";
	case ELECTION_LEADER: return "leader";
	case ELECTION_DEMOTING: return "demoting";
	case ELECTION_SHUTTING_DOWN: return "shutting down";
	case ELECTION_RELEASING: return "releasing";
	case ELECTION_DONE: return "done";
	case ELECTION_STATE_COUNT: break;
	}
	return "?";
}

const char *election_outcome_label(enum election_outcome o)
{
	switch (o) {
	case ELECTION_OUTCOME_SUCCESS: return "success";
	case ELECTION_OUTCOME_FAILURE: return "failure";
	case ELECTION_OUTCOME_SIGNAL: return "signal";
	case ELECTION_OUTCOME_COUNT: break;
	}
	return "?";
}
