/* lease_sql.h: the lease's pure part: the SQL it sends, how it reads the
 * answers and libpq's messages, and which fault a failure is. */
#ifndef PGLEADER_LEASE_SQL_H
#define PGLEADER_LEASE_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#include "fault.h"

/* Room for the longest query the lease builds. */
#define LEASE_SQL_MAX 512

/* Room for a statement's tag (wire.h), on top of LEASE_SQL_MAX. */
#define LEASE_SQL_TAG_MAX 128

#define LEASE_SQL_PING "SELECT pg_backend_pid()"
/* With failsafe, the ping also names every node with a session tagged for
 * this key ($1, decimal), lock or fence, itself included: a member missing
 * from failsafe_peers must turn failsafe off (DESIGN 9). */
#define LEASE_SQL_PING_NODES \
	"SELECT pg_backend_pid(), (SELECT string_agg(DISTINCT substr(" \
	"application_name, length('" WIRE_APP_PREFIX "') + 1), ',') FROM " \
	"pg_catalog.pg_stat_activity WHERE application_name LIKE '" \
	WIRE_APP_PREFIX "%' AND query ~ ('/\\* pgleader (lock|fence) ' || " \
	"$1::text || '[ *]'))"
/* A standby's try of the lock (DESIGN 15), which also counts the
 * standbys waiting in the lock's queue (pg_locks: the bigint form,
 * objsubid 1, classid and objid its halves), and says the size of the lock
 * table that count walks: pg_locks reads every slot of it, so that a count
 * costs the server in proportion to max_connections (0.17 ms at 250, 0.83
 * ms at 2,050 on PostgreSQL 15), and the election counts less often on a
 * large one (election.h, ELECTION_COUNT_SLOTS). $1 the key. One row:
 * granted, the count, the slots. Sent only when the election asks for a
 * count (not after lease_plain_try). */
#define LEASE_SQL_TRY_QUEUE \
	"SELECT pg_catalog.pg_try_advisory_lock($1::bigint), (SELECT count(*)" \
	" FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND NOT granted" \
	" AND objsubid = 1 AND classid::bigint = ($1::bigint >> 32) & 4294967295" \
	" AND objid::bigint = $1::bigint & 4294967295 AND database = (SELECT oid" \
	" FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())" \
	" AND pid <> pg_catalog.pg_backend_pid()), pg_catalog.current_setting(" \
	"'max_locks_per_transaction')::bigint * (pg_catalog.current_setting(" \
	"'max_connections')::bigint + pg_catalog.current_setting(" \
	"'max_prepared_transactions')::bigint)"
/* Sent only after a try that found fewer waiters than queue_depth: the
 * standbys that wait, then those that rank before this session (a
 * pgleader lock session of this key that neither leads nor waits for a
 * lock, by its tag's priority, then by arrival: backend_start, pid),
 * counted up to $4 (ELECTION_RANK_LIMIT: a few times queue_depth) only:
 * all that matters is whether there are queue_depth, and whether this
 * standby is next in line after them. A standby's tag is matched with
 * LIKE (the key, then the tag's end or " priority "), the regular
 * expression run only on a tag that gives a priority, and only until $4
 * are found: at a thousand nodes, the expression on every session made a
 * ranking cost the server 45 ms, 9 ms without (most of it
 * pg_stat_get_activity itself). A pgleader session that has sent no
 * statement yet (its query still '') ranks as one of priority 1 would: it
 * may be a standby that a poll through poll_dsn sent to try the lock at
 * the same moment as this one (DESIGN 15), and two that each ranked
 * before the other could both queue. A tagged session that waits on a lock
 * counts whatever its rank, and a session counted by both parts once
 * (UNION): the two parts read the server at two moments, and a standby that
 * began to wait between them was in neither (test_fleet on a loaded
 * machine: 3 queued for a queue_depth of 2). $1 the key, $2 the node's priority,
 * $3 WIRE_TAG_RE, $4 queue_depth. One row: the count. */
#define LEASE_SQL_QUEUE_RANK \
	"SELECT count(*) FROM (SELECT pid FROM pg_catalog.pg_locks WHERE" \
	" locktype = 'advisory' AND NOT granted AND objsubid = 1 AND" \
	" classid::bigint = ($1::bigint >> 32) & 4294967295 AND objid::bigint =" \
	" $1::bigint & 4294967295 AND database = (SELECT oid FROM" \
	" pg_catalog.pg_database WHERE datname = pg_catalog.current_database())" \
	" AND pid <> pg_catalog.pg_backend_pid() UNION SELECT a.pid FROM" \
	" pg_catalog.pg_stat_get_activity(NULL) a," \
	" pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) m" \
	" WHERE a.pid <> m.pid AND a.application_name LIKE '" WIRE_APP_PREFIX \
	"%' AND (a.query = '' OR a.query LIKE '%pgleader lock ' || $1::text ||" \
	" ' */%' OR a.query LIKE '%pgleader lock ' || $1::text || ' priority %')" \
	" AND (a.wait_event_type = 'Lock' OR (CASE WHEN a.query" \
	" LIKE '%pgleader lock ' || $1::text || ' priority %' THEN COALESCE((" \
	"pg_catalog.regexp_match(a.query, $3::text))[4]::int, 1) ELSE 1 END," \
	" m.backend_start, m.pid) > ($2::int, a.backend_start, a.pid)) LIMIT" \
	" $4::int) r"
#define LEASE_SQL_QUEUE_RANK_PARAMS 4
/* lock_not_available: a queued pg_advisory_lock ran into lock_timeout */
#define LEASE_SQL_LOCK_TIMEOUT "55P03"

/* An answer as libpq hands it over: rows x columns of text, NULL for SQL
 * NULL (row-major, values[row * ncols + col]). */
/* The most values (rows times columns) an answer is given with; more is
 * given as no values at all. */
#define LEASE_ANSWER_MAX 512

struct lease_sql_answer {
	int nrows;
	int ncols;
	const char *const *values;
};

/* The lock is the bigint key; the fence is the same 64 bits as two int4,
 * hi = key >> 32 and lo = its low 32 bits, each read as a signed int4. The
 * two forms live in lock spaces of their own (pg_locks objsubid 1 and 2,
 * both with classid = the high and objid = the low half, unsigned), so a
 * fence never collides with any bigint key. */
void lease_sql_fence_halves(int64_t key, int32_t *hi, int32_t *lo);

enum lease_sql_lock_op { LEASE_SQL_TRY, LEASE_SQL_WAIT, LEASE_SQL_UNLOCK };

/* A lock or fence statement and its parameters, in decimal: the key as $1,
 * or the fence's halves as $1 and $2. Parameters, not literals: the
 * parser reads -2147483648 as a bigint and -9223372036854775808 not at
 * all. */
#define LEASE_SQL_PARAM_MAX 24
struct lease_sql_lock {
	const char *sql;
	int nparams;
	char params[2][LEASE_SQL_PARAM_MAX];
};
void lease_sql_lock(struct lease_sql_lock *out, enum lease_sql_lock_op op,
		    bool fence, int64_t key);

/* sql with its tag (wire.h WIRE_TAG_FMT): part WIRE_TAG_LOCK or
 * WIRE_TAG_FENCE, since "" or when the lock was granted (see
 * lease_sql_since), the node's priority (written unless 1). False, and buf
 * "", when it does not fit: a statement cut short would be another
 * statement. */
bool lease_sql_tag(char *buf, size_t len, const char *sql, const char *part,
		   int64_t key, const char *since, int priority);
/* A time as the tag says since when a node leads: RFC 3339, UTC, with
 * milliseconds ("2026-11-22T01:18:33.123Z"). */
void lease_sql_since(char *buf, size_t len, int64_t sec, long nsec);

/* What the setup query learns about the session. */
struct lease_sql_server {
	int backend_pid;
	bool in_recovery;
	int version;          /* server_version_num, e.g. 150004 */
	bool can_create_temp; /* TEMP privilege on the database */
	bool can_emit_message; /* EXECUTE on pg_logical_emit_message */
	int64_t key;          /* the lock name's key, when one was given */
	uint64_t system_id;   /* LEASE_SQL_IDENTITY's, when asked: 0, the role */
	uint32_t db_oid;      /* may not read it */
};

/* Which database a session reached, for poll_dsn's check that it reaches
 * the lock's (DESIGN 15): the cluster's system identifier, which a physical
 * replica shares, NULL when the role may not run pg_control_system(); and
 * the database's oid. Two columns, every function qualified. */
#define LEASE_SQL_IDENTITY "CASE WHEN coalesce(pg_catalog.has_function_privilege(" \
	"pg_catalog.to_regprocedure('pg_catalog.pg_control_system()'), 'EXECUTE'), " \
	"false) THEN (SELECT system_identifier FROM pg_catalog.pg_control_system()) " \
	"END, (SELECT oid FROM pg_catalog.pg_database " \
	"WHERE datname = pg_catalog.current_database())"
/* A statement of its own, not a part of the setup: pg_stat_activity shows
 * a statement's first track_activity_query_size bytes (1024 by default),
 * and the setup's tag, at its end, must be within them. */
#define LEASE_SQL_IDENTITY_QUERY "SELECT " LEASE_SQL_IDENTITY
/* Its two values (a NULL identifier is 0); false when they are not the
 * columns' */
bool lease_sql_parse_identity(const char *system_id, const char *db_oid,
			      uint64_t *system_id_out, uint32_t *db_oid_out);
/* The answer of LEASE_SQL_IDENTITY_QUERY, into out's system_id and db_oid */
bool lease_sql_parse_identity_row(const struct lease_sql_answer *a,
				  struct lease_sql_server *out);

/* The setup query, which also sets the session's timeouts (seconds:
 * lock_timeout for a queued wait, statement_timeout for every statement)
 * and row_security off, search_path pg_catalog; with a lock name it takes
 * the name as $1. */
#define LEASE_SQL_SETUP_MAX 1024
void lease_sql_setup(char *buf, size_t len, bool with_name, double lock_timeout,
		     double statement_timeout);
/* False when the answer is not the one row the setup query returns. */
bool lease_sql_parse_setup(const struct lease_sql_answer *a, bool with_name,
			   struct lease_sql_server *out);

/* What a claim could not include, for the lease to warn about once. */
#define LEASE_SQL_NO_IDLE_TIMEOUT 1u  /* server_lease on PostgreSQL < 14 */
#define LEASE_SQL_NO_DURABLE_TOKEN 2u /* the role may not create temp tables */

/* The claim made right after the lock is granted: the server-side lease
 * and the fencing token. Returns LEASE_SQL_NO_* flags. */
unsigned lease_sql_claim(char *buf, size_t len, const struct lease_sql_server *srv,
			 double server_lease);
/* The fence's claim: the same server-side lease, so that a partitioned
 * leader's fence ends with its lock session, and the backend pid; no token.
 * False when there is nothing to set (server_lease off): the fence is then
 * held as soon as it is granted. */
bool lease_sql_fence_claim(char *buf, size_t len, const struct lease_sql_server *srv,
			   double server_lease);
/* A queued wait for the fence and its claim in one statement, answered by
 * the claim's row once the fence is granted: a new leader holds its fence
 * one round trip sooner. False when the claim has nothing to set (the
 * plain wait of lease_sql_lock is then the whole take). */
bool lease_sql_fence_wait_claim(char *buf, size_t len, const struct lease_sql_server *srv,
				double server_lease, int64_t key);
/* After an unlock that keeps the session for the next take: the claim's
 * idle_session_timeout back to the session's own, so that the server does
 * not end a session that waits, idle, for its next take. False when the
 * claim did not set it. */
bool lease_sql_unclaim(char *buf, size_t len, const struct lease_sql_server *srv,
		       double server_lease);
/* The claim's answer: fencing token and backend pid. */
bool lease_sql_parse_claim(const struct lease_sql_answer *a, uint64_t *token,
			   int *pid);
/* The answer of LEASE_SQL_TRY_QUEUE: granted or not, the count, and the
 * lock table's slots (clamped to INT32_MAX). */
bool lease_sql_parse_try_queue(const struct lease_sql_answer *a, bool *granted,
			       int *ahead, int *slots);
/* The answer of LEASE_SQL_QUEUE_RANK: the count. */
bool lease_sql_parse_count(const struct lease_sql_answer *a, int *count);
/* The answer of pg_try_advisory_lock: granted or not. */
bool lease_sql_parse_granted(const struct lease_sql_answer *a, bool *granted);
/* The answer of the ping: the backend pid. */
bool lease_sql_parse_pid(const struct lease_sql_answer *a, int *pid);
/* The answer of LEASE_SQL_PING_NODES: the pid and the node ids, comma
 * separated, into nodes ("" when none). */
bool lease_sql_parse_ping_nodes(const struct lease_sql_answer *a, int *pid,
				char *nodes, size_t len);

/* poll_dsn (DESIGN 15, pooled.c): a statement through a transaction
 * pooler, in one simple-query message and a transaction of its own, so
 * that nothing of it stays on the pooled server session: its timeouts
 * (statement_timeout seconds) and search_path by SET LOCAL, row security
 * off. what: the SELECT's columns and FROM. False when it does not fit. */
#define LEASE_SQL_POLL_MAX 2048
bool lease_sql_poll(char *buf, size_t len, double statement_timeout, const char *what);
/* The poll that counts: one row, the sessions that hold the lock key in
 * the database of oid db_oid, those that wait for it, and the server
 * session that answered (pg_backend_pid). The poll that does not count
 * (ELECTION_POLL_COUNT_EVERY): one row, whether the lock was free
 * (pg_try_advisory_xact_lock, let go of at once with its transaction)
 * and the server session; key_sql is an SQL expression of the key. Each
 * one statement without lease_sql_poll's SET LOCALs, which cost more than
 * the statement: it reads no table, so waits for no lock and meets no
 * row security; every function, operator and type is named with its
 * schema, whatever the server session's search_path; and it is bounded
 * by the poll's deadline on the client. */
bool lease_sql_poll_state(char *buf, size_t len, int64_t key, uint32_t db_oid);
bool lease_sql_poll_held(char *buf, size_t len, const char *key_sql);

/* Copies libpq's message (several lines, maybe verbose) into out as one
 * line: runs of white space become one space, LOCATION lines go, and the
 * SQLSTATEs of verbose messages ("FATAL:  28P01: ...") are taken out.
 * sqlstate (6 bytes, may be NULL) gets the SQLSTATE of the last host the
 * message speaks of, "" when it has none. */
void lease_sql_one_line(char *out, size_t len, const char *msg, char *sqlstate);

/* A server's error or notice in one line, "SEVERITY: message (SQLSTATE)";
 * true when the severity ends the session (FATAL, PANIC). */
bool lease_sql_server_error(char *out, size_t len, const char *severity,
			    const char *message, const char *sqlstate);

/* Where a failure happened, for the classification. */
enum lease_sql_stage {
	LEASE_SQL_START,    /* libpq refused to start: nothing was sent yet */
	LEASE_SQL_CONNECT,  /* connecting, authenticating */
	LEASE_SQL_QUERY,    /* a query was answered with an ERROR */
	LEASE_SQL_SESSION,  /* an established session ended */
};

/* Classifies a failure once, from what libpq tells: the SQLSTATE ("" or
 * NULL: none), whether the server wanted a password that was not given,
 * and the one-line message. */
enum fault lease_sql_classify(enum lease_sql_stage stage, const char *sqlstate,
			      bool needs_password, const char *message);

/* connect_timeout as libpq reads it: NULL, 0 or garbage mean the default,
 * below the minimum is the minimum; in seconds. */
int lease_sql_connect_timeout(const char *value);

/* How many hosts a host and a hostaddr list name (at least one). */
int lease_sql_count_hosts(const char *host, const char *hostaddr);

/* A connection's host lists (as PQconninfo shows them: comma-separated,
 * "" when unset) and, on return, the same lists without the entries that
 * are the given host and port; each output buffer must be as long as its
 * input. */
struct lease_sql_hosts {
	const char *host, *hostaddr, *port;      /* in */
	char *host_out, *hostaddr_out, *port_out; /* out */
};
/* Drops the host that timed out (host as PQhost names it: the host entry,
 * else its hostaddr; port as PQport, "" or NULL matching any). Returns how
 * many entries remain, -1 when none matched. */
int lease_sql_drop_host(struct lease_sql_hosts *h, const char *host,
			const char *port);

#endif
