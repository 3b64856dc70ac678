/* cli_sessions.h: the sessions of a lock as pg_locks and pg_stat_activity
 * show them: who leads, who waits, who holds the fence. What "pgleader
 * status" prints, and the nodes a switchover plans with. */
#ifndef PGLEADER_CLI_SESSIONS_H
#define PGLEADER_CLI_SESSIONS_H

#include <stdbool.h>

#include <libpq-fe.h>

#include "wire.h"

enum cli_role {
	CLI_ROLE_LEADER,
	CLI_ROLE_HOLDER,     /* a second granted holder: only possible in shared mode */
	CLI_ROLE_WAITING,    /* queued in pg_advisory_lock (wait mode) */
	CLI_ROLE_IDLE,       /* holds and awaits nothing: poll mode, between tries */
	CLI_ROLE_FENCE_HELD, /* a node's second session, holding the fence */
	CLI_ROLE_FENCE_WAITING,
	CLI_ROLE_FENCE_IDLE,
};

/* A role of the fence session (the last three). */
bool cli_role_is_fence(enum cli_role r);

/* One row of the query; strings point into the PGresult, NULL when SQL NULL
 * (pg_stat_activity hides most columns of other roles' sessions from a user
 * without pg_read_all_stats). */
struct cli_session {
	const char *application_name;
	const char *node_id;         /* NULL: not a pgleader session */
	const char *client_addr;
	const char *pid;
	const char *connected_since;
	const char *waiting_since;
	const char *leader_since;    /* from the leader's tag (wire.h) */
	const char *priority;        /* from a lock session's tag; NULL: 1 */
	const char *session_state;
	enum cli_role role;
	char label[80];              /* what the text output shows as node id */
};

/* One look at the lock. */
struct cli_sessions {
	PGresult *res;
	struct cli_session *s;
	int n;
	bool leader;                 /* s[0] is the leader */
};

/* Looks at the lock key (decimal text) once; false (with the line) when
 * the query failed. */
bool cli_sessions_take(PGconn *conn, const char *key, struct cli_sessions *snap);
void cli_sessions_free(struct cli_sessions *snap);

/* A pgleader node of the lock as status sees it: its lock and fence
 * sessions, by node id (application_name). */
struct cli_node {
	char node_id[WIRE_APP_NAME_MAX + 1];
	bool leader;             /* its lock session holds the lock */
	bool standby;            /* its lock session waits, or is idle between tries */
	bool fence_held;         /* its fence session holds the fence */
	int priority;            /* its lock session's tag (wire.h); 1 when absent */
};
/* The nodes of the lock key (decimal text), *nodes malloc'd (free it);
 * false with the line when the query failed. */
bool cli_sessions_nodes(PGconn *conn, const char *key, struct cli_node **nodes, int *n);

#endif
