/* lease_conn.h: the lease's connection, private to lease.c: libpq's async
 * API on libev, a connect_timeout for each host, one query at a time, and
 * the socket watched so that the end of the session is seen at once. */
#ifndef PGLEADER_LEASE_CONN_H
#define PGLEADER_LEASE_CONN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <ev.h>
#include <libpq-fe.h>

#include "fault.h"
#include "lease_sql.h"
#include "log.h"
#include "wire.h"

/* The most parameters of a statement lease_conn_send_prepared keeps. */
#define LEASE_CONN_PREPARED_PARAMS 2

/* The DSN's host, hostaddr and port lists, in that order. */
enum { LEASE_CONN_HOST, LEASE_CONN_HOSTADDR, LEASE_CONN_PORT, LEASE_CONN_LISTS };

/* What the connection tells its owner, from the loop or from inside a
 * lease_conn_* call. */
struct lease_conn_handlers {
	/* connected and set up: the first query may go */
	void (*ready)(void *arg);
	/* the query in flight was answered: with its rows (a), or with an
	 * ERROR (error its one line, sqlstate as the server sent it, may be
	 * NULL); a FATAL goes to failed instead */
	void (*answered)(void *arg, const struct lease_sql_answer *a,
			 const char *sqlstate, const char *error);
	/* the connection is closed already: fault and one line of reason */
	void (*failed)(void *arg, enum fault fault, const char *reason);
	/* a NOTIFY on a channel the session LISTENs to arrived (NULL: none
	 * is told) */
	void (*notified)(void *arg);
};

struct lease_conn {
	struct ev_loop *loop;
	struct lease_conn_handlers h;
	void *arg;
	char *dsn;
	char application_name[WIRE_APP_NAME_MAX + 1];
	double host_timeout;    /* connect_timeout, for each host */
	int hosts;              /* how many hosts the DSN names */
	const char *label;      /* "" for the lock's session, "fence session: " */

	PGconn *pg;
	ev_io io;
	bool connecting;        /* PQconnectPoll, until ready */
	bool busy;              /* a query in flight */
	/* connect_timeout for the host being tried: libpq enforces it only in
	 * its blocking calls */
	ev_timer host_timer;
	char host_now[320];     /* host and port being tried */
	char *lists[LEASE_CONN_LISTS]; /* the DSN's, without hosts that timed out */
	char skipped[LOG_MSG_MAX]; /* the hosts that timed out, for the reason */
	bool start_failed;      /* libpq refused to start; told from the loop */
	char fatal[LOG_MSG_MAX]; /* a FATAL the notice receiver saw while idle */
	enum fault fatal_fault;

	PGresult *last_rows;    /* last tuples result of the query in flight */
	PGresult *error;        /* first error result of the query in flight */

	/* The one statement lease_conn_send_prepared keeps prepared on the
	 * session: its text, whether the server has it (else its Parse is in
	 * flight and the parameters wait here for the execution), and the
	 * number in its name (a new text gets a new name). */
	char *prepared_sql;
	bool prepared;
	unsigned prepared_n;
	int prepared_nparams;
	char prepared_params[LEASE_CONN_PREPARED_PARAMS][LEASE_SQL_PARAM_MAX];
};

/* Checks the DSN (false with err when libpq cannot parse it) and names the
 * session WIRE_APP_PREFIX node_id. */
bool lease_conn_init(struct lease_conn *c, struct ev_loop *loop, const char *dsn,
		     const char *node_id, const struct lease_conn_handlers *h,
		     void *arg, char *err, size_t errlen);
/* Closes, and frees what init took. */
void lease_conn_free(struct lease_conn *c);

/* See lease_connect_timeout(). */
double lease_conn_timeout(const struct lease_conn *c);

/* Closes what is open and connects anew, through every host of the DSN. */
void lease_conn_start(struct lease_conn *c);
/* Closes at once, nothing told. */
void lease_conn_close(struct lease_conn *c);

/* The one way out of a failure: closes, then tells failed, the reason
 * formatted first (its arguments may point into what closing frees). */
void lease_conn_vfail(struct lease_conn *c, enum fault fault, const char *fmt,
		      va_list ap) __attribute__((format(printf, 3, 0)));

/* Sends one query (at most LEASE_QUERY_PARAMS parameters) on a ready connection; false
 * when libpq refused it: the connection is then closed and failed told. */
bool lease_conn_send(struct lease_conn *c, const char *sql, int nparams,
		     const char *const *params);
/* The same for a statement sent again and again, as a polling standby's
 * try: prepared on the session once (its Parse the first time, and again
 * when the text changes), then only executed. The server then skips the
 * parse and the plan (a try on an idle session: 1.07 % of a core for 200
 * a second against 1.65 to 2.24 %, BENCHMARKS.md); the session shows the
 * text as it would the statement's. Other statements may go between.
 * Parameters of at most LEASE_SQL_PARAM_MAX - 1 characters; with more
 * than LEASE_CONN_PREPARED_PARAMS, or no memory for the text, it goes as
 * lease_conn_send. The first time costs a round trip more. */
bool lease_conn_send_prepared(struct lease_conn *c, const char *sql,
			      int nparams, const char *const *params);

/* The backend pid libpq got at the startup (0 before). */
int lease_conn_backend_pid(const struct lease_conn *c);

#endif
