/* status.h: "pgleader status": who leads, who waits. */
#ifndef PGLEADER_STATUS_H
#define PGLEADER_STATUS_H

#include <stdbool.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "config.h"
#include "wire.h"

/* Prints the leader and the standbys of cfg's lock to stdout (text, or JSON
 * with cfg->json), and the jobs of the ledger when there is a readable one. Returns the exit code: 0 a leader exists, 3 none, 69 the
 * database cannot be reached or queried. */
int status_run(const struct config *cfg);

/* What status does, for the ledger's subcommands (ledger_cli.c), so that
 * they connect, fail and print as it does. */
/* One line "pgleader: WHAT: MSG" on stderr, redacted, made one line. */
void status_fail(const char *what, const char *msg);
/* False, with the line, when libpq cannot parse dsn (NULL is fine). */
bool status_dsn_parses(const char *dsn);
/* Connected, or NULL with the line and the exit code in *code (69, or 78
 * for a DSN libpq cannot use); bounded by connect_timeout. */
PGconn *status_connect(const struct config *cfg, int *code);
/* status_connect, but the session's application_name is the DSN's or
 * PGAPPNAME's when one is given (not a node's "pgleader/..."), else
 * fallback: the controls record who asked by it (DESIGN 11). */
PGconn *status_connect_as(const struct config *cfg, const char *fallback, int *code);
/* cfg's lock key as decimal text, from the lock name by the server; false
 * (with the line) when the server did not answer or is a hot standby. */
bool status_resolve_key(PGconn *conn, const struct config *cfg, char *key, size_t size);

/* A pgleader node of the lock as status sees it: its lock and fence
 * sessions, by node id (application_name). */
struct status_node {
	char node_id[WIRE_APP_NAME_MAX + 1];
	bool leader;             /* its lock session holds the lock */
	bool standby;            /* its lock session waits, or is idle between tries */
	bool fence_held;         /* its fence session holds the fence */
	int priority;            /* its lock session's tag (wire.h); 1 when absent */
};
/* The nodes of the lock key (decimal text), *nodes malloc'd (free it);
 * false with the line when the query failed. */
bool status_nodes_read(PGconn *conn, const char *key, struct status_node **nodes, int *n);

/* s padded to width, control characters shown as '?'. */
void status_put_text(const char *s, int width);
/* s as a JSON string (valid UTF-8 whatever the bytes), or null. */
json_t *status_json_text(const char *s);
/* o as one line on stdout; frees o. */
void status_put_json(json_t *o);

#endif
