/* cli.h: what the command-line subcommands (status.c, ledger_cli.c,
 * controls_cli.c) share: one line for a failure, text and JSON on stdout,
 * a session to the database bounded in time, and the sections that status
 * shows of the others. None of the three includes another's header. */
#ifndef PGLEADER_CLI_H
#define PGLEADER_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "config.h"

/* ---- failing ---- */

/* One line "pgleader: WHAT: MSG" on stderr, redacted, made one line;
 * nothing while quiet. */
void cli_fail(const char *what, const char *msg);
/* status --watch: one line per outage, not one per failed look. */
void cli_quiet(bool on);

/* status --watch ends at once on SIGINT or SIGTERM (exit 0), but never in
 * the middle of a line: whatever prints a line does so between
 * cli_print_begin and cli_print_end. */
void cli_stop_on_signal(void);
void cli_print_begin(void);
void cli_print_end(void);

/* ---- connecting ---- */

/* False, with the line, when libpq cannot parse dsn (NULL is fine); sets
 * the bound of connecting and of each query from its connect_timeout. */
bool cli_dsn_parses(const char *dsn);
/* Connected, or NULL with the line and the exit code in *code (69, or 78
 * for a DSN libpq cannot use); bounded by connect_timeout. fallback NULL:
 * the session is named "pgleader-status"; else its application_name is
 * the DSN's or PGAPPNAME's when one is given (not a node's
 * "pgleader/..."), else fallback: the controls record who asked by it
 * (DESIGN 11). */
PGconn *cli_connect(const struct config *cfg, const char *fallback, int *code);
/* The session made ready again after cli_connect or PQreset (nonblocking,
 * the server's statement_timeout); false with the line. */
bool cli_session_ready(PGconn *conn);
/* One query whose rows are wanted, answered within connect_timeout: its
 * rows, or NULL with the line. */
PGresult *cli_query(PGconn *conn, const char *sql, int nparams, const char *const *params);
/* The last cli_query got no answer in time: the connection is stalled. */
bool cli_stalled(void);
/* A value of a row, NULL when SQL NULL. */
const char *cli_cell(const PGresult *res, int row, int col);
/* cfg's lock key as decimal text, from the lock name by the server; false
 * (with the line) when the server did not answer or is a hot standby. */
bool cli_resolve_key(PGconn *conn, const struct config *cfg, char *key, size_t size);

/* ---- printing ---- */

/* s padded to width, control characters shown as '?'. */
void cli_put_text(const char *s, int width);
/* s as a JSON string (valid UTF-8 whatever the bytes), or null. */
json_t *cli_json_text(const char *s);
/* o as one line on stdout; frees o. */
void cli_put_json(json_t *o);

/* ---- what status shows of the other subcommands ---- */

/* A part of "pgleader status" after the sessions (the jobs of the ledger,
 * the controls): main.c hands status the sections, in the order they
 * show. read returns NULL when there is nothing to show (no ledger, unreadable,
 * no answer): never a line, never creates anything; print writes its
 * lines, json the value of member json_name of status --json. */
struct cli_section {
	const char *json_name;
	void *(*read)(PGconn *conn, const struct config *cfg, const char *key);
	void (*print)(const void *read);
	json_t *(*json)(const void *read);
	void (*free)(void *read);
};

#endif
