/* lease.h: the lock connection, or the fence's, driven without blocking on
 * the libev loop. */
#ifndef PGLEADER_LEASE_H
#define PGLEADER_LEASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>

#include "fault.h"

struct lease;

struct lease_options {
	const char *dsn;        /* NULL: libpq environment (PGHOST, ...) */
	const char *node_id;    /* application_name = pgleader/<node_id> */
	int64_t lock_key;
	const char *lock_name;  /* non-NULL: key = hashtextextended(name, 0) */
	double retry_interval;  /* lock_timeout of a queued wait, seconds */
	double statement_timeout; /* every statement's bound, seconds, past
				   * retry_interval (DESIGN 10) */
	double server_lease;    /* seconds, 0 = off */
	/* The fence (DESIGN 3): the two-int4 form of the same 64 bits,
	 * pg_advisory_lock(key >> 32, key & 0xffffffff) with each half a
	 * signed int4, in a lock space of its own (pg_locks objsubid 2). The
	 * same connection, application_name, checks, faults and, once granted,
	 * server-side lease as the lock's, so that a partitioned leader's fence
	 * ends with its lock session; no fencing token. LEASE_ACQUIRED comes
	 * as soon as it is granted, the server-side lease is set after it (a
	 * failure there is LEASE_LOST). Its statements are tagged "fence"
	 * (wire.h). */
	bool fence;
	/* The lock's pings also name every node with a session for this key
	 * (lease_ping_nodes), for failsafe's member check. */
	bool list_nodes;
	int priority;           /* the lock's tags name it unless 1 (wire.h) */
	/* A try says where the standby stands in the queue
	 * (LEASE_SQL_TRY_QUEUE, lease_queue_ahead), ranking the standbys only
	 * while fewer than this many wait, unless lease_plain_try said not
	 * to; 0: a plain try always. */
	int queue_depth;
	/* ... counting the standbys ranked before it up to this many (at
	 * least queue_depth) */
	int rank_limit;
	/* poll_dsn: once set up, the session reads which database it reached
	 * (LEASE_SQL_IDENTITY, one more round trip) before LEASE_CONNECTED,
	 * for the election to compare with the poll's */
	bool read_identity;
};

enum lease_event {
	LEASE_CONNECTED,        /* ready to ask for the lock; lease_key() valid */
	LEASE_CONNECT_FAILED,   /* before LEASE_CONNECTED: fault, reason;
				 * connection closed */
	LEASE_GRANTED,          /* the lock (not a fence) is granted, its
				 * claim sent: LEASE_ACQUIRED or LEASE_LOST
				 * follows */
	LEASE_ACQUIRED,         /* lease_fencing_token() valid (not for a
				 * fence) */
	LEASE_BUSY,             /* the lock is held elsewhere; ready again */
	LEASE_PING_OK,
	LEASE_LOST,             /* the session ended or is unusable; fault,
				 * reason; connection closed */
	LEASE_RELEASED,         /* fault FAULT_NONE when unlocked (after
				 * lease_unlock, the connection is ready for
				 * the next take; after lease_release, closed),
				 * else closed without an unlock */
};

/* The lease reports what happened, classified once as a fault; it never
 * decides what follows. May be called from inside any lease_* call: the
 * receiver must queue. reason is one line of at most LOG_MSG_MAX bytes. */
typedef void (*lease_event_fn)(void *arg, enum lease_event ev, enum fault fault,
			       const char *reason);

/* Checks the DSN; NULL with err on a DSN libpq cannot parse. */
struct lease *lease_new(struct ev_loop *loop, const struct lease_options *o,
			lease_event_fn fn, void *arg, char *err, size_t errlen);
void lease_free(struct lease *l);

/* Client-side bound on one connection attempt, for the election's deadline.
 * The lease gives each host of the DSN its own connect_timeout (the DSN's,
 * else PGCONNECT_TIMEOUT's, else WIRE_CONNECT_TIMEOUT_DEFAULT), as libpq
 * does only in its blocking calls, and reports LEASE_CONNECT_FAILED when
 * the last one did not answer in time; the bound is that for every host,
 * plus a second, so that the lease's report comes first. Hosts from a
 * service file are not counted. */
double lease_connect_timeout(const struct lease *l);

/* Connects, checks the session (no pooler, not a hot standby), computes a
 * lock name's key on the server and sets lock_timeout: LEASE_CONNECTED, or
 * LEASE_CONNECT_FAILED. */
void lease_connect(struct lease *l);
/* On a connected lease: pg_try_advisory_lock: LEASE_ACQUIRED (for a lock,
 * after LEASE_GRANTED) or LEASE_BUSY. */
void lease_try_lock(struct lease *l);
/* The next lease_try_lock is a plain pg_try_advisory_lock, even with
 * queue_depth: the election says which tries count the queue (DESIGN 15).
 * Forgotten when the session closes. */
void lease_plain_try(struct lease *l);
/* The next lease_try_lock that counts ranks this standby even when the
 * queue is full (lease_queue_ranked then). Forgotten when the session
 * closes. */
void lease_rank_queue(struct lease *l);
/* On a connected lease: pg_advisory_lock, queued for up to retry_interval
 * (lock_timeout): LEASE_ACQUIRED (for a lock, after LEASE_GRANTED), or
 * LEASE_BUSY when the time ran out. */
void lease_wait_lock(struct lease *l);
/* While held: one query, the backend pid checked; LEASE_PING_OK (for a
 * fence whose server-side lease is being set, that query's answer). Else
 * nothing: the caller's ping deadline tells. */
void lease_ping(struct lease *l);
/* With list_nodes, after LEASE_PING_OK: the node ids with a session for
 * this key that the ping found, comma-separated ("a,b,c"); else NULL.
 * Valid until the next ping. */
const char *lease_ping_nodes(const struct lease *l);
/* Unlocks and keeps the connection for the next take (one round trip
 * then); the server-side lease's idle_session_timeout goes back to the
 * session's own. LEASE_RELEASED with FAULT_NONE, at once when nothing was
 * held on a ready connection. With a request or the setup in flight, whose
 * outcome is unknown, it closes as lease_release does. */
void lease_unlock(struct lease *l);
/* Unlocks when the lock is known held, then closes; LEASE_RELEASED. */
void lease_release(struct lease *l);
/* Closes at once, no event. */
void lease_disconnect(struct lease *l);

/* Another statement on this session (the ledger's, on the fence session:
 * DESIGN 10), sent as soon as the session is idle, connected and not
 * asking or unlocking; the lease's own requests made meanwhile wait for
 * its answer. One at a time: false when one is pending already, when the
 * session is closed or connecting, or when it is too long. fn hears the
 * answer (at most LEASE_ANSWER_MAX values), an ERROR (sqlstate, error), or, with error
 * set and no sqlstate, that the session closed first; it is never called
 * from inside lease_query. The statement may not change the session's
 * state (no SET, no transaction left open). */
#define LEASE_QUERY_PARAMS 10
#define LEASE_QUERY_MAX 16384 /* the ledger's creation (ledger_sql.h): over 8 KiB */
struct lease_sql_answer;
typedef void (*lease_query_fn)(void *arg, const struct lease_sql_answer *a,
			       const char *sqlstate, const char *error);
bool lease_query(struct lease *l, const char *sql, int nparams,
		 const char *const *params, lease_query_fn fn, void *arg);

/* The server's pid of this session once connected; 0 before. */
int lease_backend_pid(const struct lease *l);
/* Once connected with read_identity, the database it reached
 * (LEASE_SQL_IDENTITY): the cluster's system identifier (0: the role may
 * not read it) and the database's oid; both 0 before, or without. */
uint64_t lease_system_id(const struct lease *l);
uint32_t lease_db_oid(const struct lease *l);
/* fn(arg) when a NOTIFY the session LISTENs to arrives (DESIGN 13: a run
 * asked for now); fn NULL: none. */
void lease_on_notify(struct lease *l, void (*fn)(void *arg), void *arg);

/* With queue_depth, after a LEASE_BUSY: the standbys that wait in the
 * lock's queue or rank before this one, as the try found them (the count
 * stops at queue_depth waiting); -1 after a queued wait ran out, a try
 * that did not count, or without queue_depth. */
int lease_queue_ahead(const struct lease *l);
/* After a LEASE_BUSY: its lease_queue_ahead counts the standbys ranked
 * before this one too (the queue had room), up to rank_limit. */
bool lease_queue_ranked(const struct lease *l);
/* After a LEASE_BUSY of a try that counted: the lock table's slots the
 * server said (what its pg_locks walks); 0 otherwise. */
int lease_lock_slots(const struct lease *l);

int64_t lease_key(const struct lease *l); /* valid once connected */
uint64_t lease_fencing_token(const struct lease *l); /* 0 before */

#endif
