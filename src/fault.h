/* fault.h: what went wrong, as the I/O modules report it. Only election.c
 * decides what follows (retry, demote, or which exit code). */
#ifndef PGLEADER_FAULT_H
#define PGLEADER_FAULT_H

enum fault {
	FAULT_NONE,
	/* permanent: pgleader ends */
	FAULT_USAGE,        /* a bad command line */
	FAULT_CONFIG,       /* a bad file, environment or combination */
	FAULT_BAD_DSN,      /* libpq cannot use the connection string */
	FAULT_AUTH,         /* bad password, no such role or database, no CONNECT */
	FAULT_POOLER,       /* a connection pooler between pgleader and the server */
	FAULT_FORK,         /* the command could not be forked */
	FAULT_INTERNAL,     /* the event loop stopped before the election ended */
	FAULT_LEDGER,       /* the ledger is missing and may not be made, or
			     * refuses this role (DESIGN 10) */
	FAULT_ALREADY_RUN,  /* --once-per: this window ran on another node */
	/* transient: retried, or a lost lease */
	FAULT_UNREACHABLE,  /* refused, no route, timed out, name not found */
	FAULT_HOT_STANDBY,  /* the server is in recovery */
	FAULT_TERMINATED,   /* the server ended the session (FATAL, SQLSTATE) */
	FAULT_CONNECTION,   /* the connection broke or closed */
	FAULT_PROTOCOL,     /* an answer pgleader did not expect */
	FAULT_TIMEOUT,      /* a connect or lock request got no answer in time */
	FAULT_PING_TIMEOUT, /* the leader's pings went unanswered */
	FAULT_COUNT
};

/* A metric label for each fault: lower case, stable, no spaces. */
static inline const char *fault_label(enum fault f)
{
	switch (f) {
	case FAULT_NONE: return "none";
	case FAULT_USAGE: return "usage";
	case FAULT_CONFIG: return "config";
	case FAULT_BAD_DSN: return "bad_dsn";
	case FAULT_AUTH: return "auth";
	case FAULT_POOLER: return "pooler";
	case FAULT_FORK: return "fork";
	case FAULT_INTERNAL: return "internal";
	case FAULT_LEDGER: return "ledger";
	case FAULT_ALREADY_RUN: return "already_run";
	case FAULT_UNREACHABLE: return "unreachable";
	case FAULT_HOT_STANDBY: return "hot_standby";
	case FAULT_TERMINATED: return "terminated";
	case FAULT_CONNECTION: return "connection";
	case FAULT_PROTOCOL: return "protocol";
	case FAULT_TIMEOUT: return "timeout";
	case FAULT_PING_TIMEOUT: return "ping_timeout";
	case FAULT_COUNT: break;
	}
	return "unknown";
}

#endif
