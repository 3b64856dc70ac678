/* status.h: "pgleader status": who leads, who waits. */
#ifndef PGLEADER_STATUS_H
#define PGLEADER_STATUS_H

#include <stdbool.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "config.h"

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
/* s padded to width, control characters shown as '?'. */
void status_put_text(const char *s, int width);
/* s as a JSON string (valid UTF-8 whatever the bytes), or null. */
json_t *status_json_text(const char *s);
/* o as one line on stdout; frees o. */
void status_put_json(json_t *o);

#endif
