/* status.c: "pgleader status": the lease holder and its standbys, from pg_locks. */
#include "status.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "log.h"
#include "wire.h"

#define STATUS_LEADER 0
#define STATUS_NO_LEADER 3
#define STATUS_UNAVAILABLE 69 /* EX_UNAVAILABLE */

/* WIRE_CONNECT_TIMEOUT_DEFAULT as a libpq keyword value */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

enum role {
	ROLE_LEADER,
	ROLE_HOLDER,  /* a second granted holder: only possible in shared mode */
	ROLE_WAITING, /* queued in pg_advisory_lock (wait mode) */
	ROLE_IDLE,    /* a pgleader session holding and awaiting no advisory lock */
};

static const char *const role_json[] = { "leader", "holding", "waiting", "idle" };
static const char *const role_label[] = { "leader:  ", "holder:  ", "standby: ",
	"standby: " };
static const char *const role_text[] = { "", "  also holds the lock (shared mode)",
	"  waiting", "  idle (poll mode or between attempts)" };

/* One row of the query; strings point into the PGresult, NULL when SQL NULL
 * (pg_stat_activity hides most columns of other roles' sessions from a user
 * without pg_read_all_stats). */
struct session {
	const char *application_name;
	const char *node_id;         /* NULL: not a pgleader session */
	const char *client_addr;
	const char *pid;
	const char *connected_since;
	const char *waiting_since;
	const char *session_state;
	enum role role;
	char label[80];              /* what the text output shows as node id */
};

/* libpq's messages span lines ("connection to server ... failed: ...\n\tIs
 * the server running ...") and can quote the DSN: redact the whole message
 * first, so that truncation cannot hide a password from log_redact(), then
 * fold every run of white space into one space. */
static void fail(const char *what, const char *msg)
{
	char line[1024];
	size_t n = 0;
	bool gap = false;
	char *copy = strdup(msg && *msg ? msg : "unknown error");

	for (const char *p = copy ? log_redact(copy) : "out of memory";
	     *p && n + 2 < sizeof(line); p++) {
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			gap = n > 0;
			continue;
		}
		if (gap)
			line[n++] = ' ';
		gap = false;
		line[n++] = *p;
	}
	line[n] = '\0';
	free(copy);
	fprintf(stderr, "pgleader: %s: %s\n", what, line);
}

static PGconn *connect_db(const struct config *cfg)
{
	/* libpq applies the keywords in order, the last one winning; an expanded
	 * dbname (the DSN) counts at its place. connect_timeout comes first so
	 * that the DSN, or PGCONNECT_TIMEOUT when it is set, decides. The two
	 * after it win: a "pgleader/..." name from the DSN would make this
	 * session look like a standby to another status run, and the JSON
	 * escaper expects UTF-8. */
	const char *keys[] = { "connect_timeout", "dbname", "application_name",
			       "client_encoding", NULL };
	const char *vals[] = { getenv("PGCONNECT_TIMEOUT") ? NULL
			       : STRINGIFY(WIRE_CONNECT_TIMEOUT_DEFAULT), cfg->dsn,
			       "pgleader-status", "UTF8", NULL };
	PGconn *conn = PQconnectdbParams(keys, vals, 1);

	if (!conn) {
		fail("cannot connect", "out of memory");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		fail("cannot connect", PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

static PGresult *query(PGconn *conn, const char *sql, int nparams,
		       const char *const *params)
{
	PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		fail("cannot query", PQerrorMessage(conn));
		PQclear(res);
		return NULL;
	}
	return res;
}

/* The lease's advisory lock on one bigint shows in pg_locks as classid =
 * high 32 bits, objid = low 32 bits, objsubid = 1 (the two-int4 form uses 2),
 * in the database of the session that took it. Idle standbys are pgleader
 * sessions of this database with no advisory lock row at all: one that waits
 * for, or holds, another key belongs to another fleet. */
#define SESSIONS_SQL(waitstart) \
	"WITH k AS (SELECT (($1::bigint >> 32) & 4294967295)::oid AS k_class,\n" \
	"                  ($1::bigint & 4294967295)::oid AS k_obj,\n" \
	"                  (SELECT oid FROM pg_database WHERE datname = current_database()) AS k_db),\n" \
	"     l AS (SELECT pid, granted, " waitstart " AS waitstart FROM pg_locks, k\n" \
	"            WHERE locktype = 'advisory' AND database = k_db\n" \
	"              AND classid = k_class AND objid = k_obj AND objsubid = 1)\n" \
	"SELECT a.application_name,\n" \
	"       CASE WHEN a.client_port = -1 THEN 'local' ELSE host(a.client_addr) END,\n" \
	"       a.pid,\n" \
	"       to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),\n" \
	"       l.granted,\n" \
	"       to_char(l.waitstart AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),\n" \
	"       a.state\n" \
	"  FROM pg_stat_activity a LEFT JOIN l ON l.pid = a.pid\n" \
	" WHERE a.pid <> pg_backend_pid()\n" \
	"   AND (l.pid IS NOT NULL\n" \
	"        OR (left(a.application_name, length('" WIRE_APP_PREFIX "')) = '" WIRE_APP_PREFIX "'\n" \
	"            AND a.datid = (SELECT k_db FROM k)\n" \
	"            AND NOT EXISTS (SELECT 1 FROM pg_locks o\n" \
	"                             WHERE o.pid = a.pid AND o.locktype = 'advisory')))\n" \
	" ORDER BY l.granted DESC NULLS LAST, l.waitstart NULLS LAST,\n" \
	"          a.backend_start, a.pid"

static const char *value(const PGresult *res, int row, int col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static void fill_session(struct session *s, const PGresult *res, int row,
			 bool *leader_seen)
{
	const char *granted = value(res, row, 4);
	size_t plen = strlen(WIRE_APP_PREFIX);

	s->application_name = value(res, row, 0);
	s->node_id = NULL;
	if (s->application_name && strncmp(s->application_name, WIRE_APP_PREFIX, plen) == 0)
		s->node_id = s->application_name + plen;
	s->client_addr = value(res, row, 1);
	s->pid = value(res, row, 2);
	s->connected_since = value(res, row, 3);
	s->waiting_since = value(res, row, 5);
	s->session_state = value(res, row, 6);
	if (!granted) {
		s->role = ROLE_IDLE;
	} else if (*granted == 't') {
		s->role = *leader_seen ? ROLE_HOLDER : ROLE_LEADER;
		*leader_seen = true;
	} else {
		s->role = ROLE_WAITING;
	}
	/* A psql session queued on the key is worth showing, but must not be
	 * mistaken for a node. */
	snprintf(s->label, sizeof(s->label), s->node_id ? "%s" : "<%s>",
		 s->node_id ? s->node_id
		 : s->application_name && *s->application_name ? s->application_name
		 : "unnamed");
}

/* Text goes to a terminal: no control characters from foreign sessions. */
static void put_text(const char *s, int width)
{
	int n = 0;

	for (; s && *s; s++, n++)
		putchar((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
	for (; n < width; n++)
		putchar(' ');
}

static void widen(int *width, const char *s)
{
	int n = s ? (int)strlen(s) : 1;

	*width = n > *width ? n : *width;
}

static void print_text(const char *key, const char *lock_name,
		       struct session *s, int n)
{
	int wlabel = 0, waddr = 0, wpid = 0;
	bool hidden = false;
	bool leader = n > 0 && s[0].role == ROLE_LEADER;

	for (int i = 0; i < n; i++) {
		widen(&wlabel, s[i].label);
		widen(&waddr, s[i].client_addr);
		widen(&wpid, s[i].pid);
	}
	printf("lock key %s", key);
	if (lock_name) {
		fputs(" (lock name \"", stdout);
		put_text(lock_name, 0);
		fputs("\")", stdout);
	}
	putchar('\n');
	if (!leader)
		puts("no leader");
	for (int i = 0; i < n; i++) {
		fputs(role_label[s[i].role], stdout);
		put_text(s[i].label, wlabel + 2);
		put_text(s[i].client_addr ? s[i].client_addr : "?", waddr + 2);
		fputs("pid ", stdout);
		put_text(s[i].pid, wpid + 2);
		fputs("connected since ", stdout);
		put_text(s[i].connected_since ? s[i].connected_since : "?", 0);
		fputs(role_text[s[i].role], stdout);
		if (s[i].waiting_since)
			printf(" since %s", s[i].waiting_since);
		putchar('\n');
		hidden |= !s[i].connected_since;
	}
	/* Without pg_read_all_stats, pg_stat_activity shows only the pid and
	 * application_name of other roles' sessions. */
	if (hidden)
		fputs("pgleader: some sessions belong to other roles; grant"
		      " pg_read_all_stats to see their address and start time\n", stderr);
}

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates), 0 when invalid. Stops at the first bad byte, so it never reads
 * past a terminating NUL. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		lo = p[0] == 0xe0 ? 0xa0 : lo;
		hi = p[0] == 0xed ? 0x9f : hi;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		lo = p[0] == 0xf0 ? 0x90 : lo;
		hi = p[0] == 0xf4 ? 0x8f : hi;
	} else {
		return 0;
	}
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A JSON string, or null. client_encoding is UTF8, but an SQL_ASCII
 * database passes any byte through: invalid bytes become U+FFFD so the
 * output is always valid JSON. */
static void put_json(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n;

		if (*p == '"' || *p == '\\') {
			putchar('\\');
			putchar(*p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			printf("\\u%04x", *p++);
		} else if (*p < 0x80) {
			putchar(*p++);
		} else if ((n = utf8_len(p)) > 0) {
			fwrite(p, 1, n, stdout);
			p += n;
		} else {
			fputs("\\ufffd", stdout);
			p++;
		}
	}
	putchar('"');
}

static void put_json_session(const struct session *s)
{
	const char *fields[][2] = {
		{ "node_id", s->node_id }, { "application_name", s->application_name },
		{ "client_addr", s->client_addr }, { "connected_since", s->connected_since },
		{ "state", role_json[s->role] }, { "waiting_since", s->waiting_since },
		{ "session_state", s->session_state },
	};

	printf("{\"pid\": %s", s->pid ? s->pid : "null");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		printf(", \"%s\": ", fields[i][0]);
		put_json(fields[i][1]);
	}
	putchar('}');
}

static void print_json(const char *key, const char *lock_name,
		       const struct session *s, int n)
{
	int first = n > 0 && s[0].role == ROLE_LEADER ? 1 : 0;

	/* The key as a string: JSON readers often hold numbers in doubles. */
	fputs("{\"lock_key\": ", stdout);
	put_json(key);
	fputs(", \"lock_name\": ", stdout);
	put_json(lock_name);
	fputs(", \"leader\": ", stdout);
	if (first)
		put_json_session(&s[0]);
	else
		fputs("null", stdout);
	fputs(", \"standbys\": [", stdout);
	for (int i = first; i < n; i++) {
		fputs(i > first ? ", " : "", stdout);
		put_json_session(&s[i]);
	}
	puts("]}");
}

/* Queries and prints; returns the exit code. */
static int show(PGconn *conn, const struct config *cfg)
{
	char key[32];
	const char *params[2] = { key, cfg->lock_name };
	struct session *sessions;
	bool leader_seen = false;
	PGresult *res;
	int n;

	/* A hot standby's pg_locks knows nothing of the primary's sessions: it
	 * would report "no leader" while one runs. */
	snprintf(key, sizeof(key), "%" PRId64, cfg->lock_key);
	res = query(conn, "SELECT pg_is_in_recovery(),"
		    " COALESCE(" WIRE_KEY_OF_NAME("$2") ", $1::bigint)", 2, params);
	if (!res)
		return STATUS_UNAVAILABLE;
	if (strcmp(PQgetvalue(res, 0, 0), "t") == 0) {
		fail("cannot query", "the server is a hot standby, which does not see"
		     " the leader's lock; point the DSN at the primary, e.g. with"
		     " target_session_attrs=read-write");
		PQclear(res);
		return STATUS_UNAVAILABLE;
	}
	snprintf(key, sizeof(key), "%s", PQgetvalue(res, 0, 1));
	PQclear(res);

	/* pg_locks.waitstart exists from PostgreSQL 14 on. */
	res = query(conn, PQserverVersion(conn) >= 140000 ? SESSIONS_SQL("waitstart")
		    : SESSIONS_SQL("NULL::timestamptz"), 1, params);
	if (!res)
		return STATUS_UNAVAILABLE;
	n = PQntuples(res);
	sessions = calloc((size_t)n + 1, sizeof(*sessions));
	if (!sessions) {
		fail("cannot query", "out of memory");
		PQclear(res);
		return STATUS_UNAVAILABLE;
	}
	for (int i = 0; i < n; i++)
		fill_session(&sessions[i], res, i, &leader_seen);
	if (cfg->json)
		print_json(key, cfg->lock_name, sessions, n);
	else
		print_text(key, cfg->lock_name, sessions, n);
	fflush(stdout);
	free(sessions);
	PQclear(res);
	return leader_seen ? STATUS_LEADER : STATUS_NO_LEADER;
}

int status_run(const struct config *cfg)
{
	PGconn *conn = connect_db(cfg);
	int rc;

	if (!conn)
		return STATUS_UNAVAILABLE;
	rc = show(conn, cfg);
	PQfinish(conn);
	return rc;
}
