/* pooled.h: a polling standby's reads of the lock's state through a
 * transaction pooler (poll_dsn, DESIGN 15), driven on the libev loop. It
 * only reads: who holds the lock, how many wait in its queue. The election
 * decides what follows. */
#ifndef PGLEADER_POOLED_H
#define PGLEADER_POOLED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>

#include "fault.h"

struct poll;

struct poll_options {
	const char *dsn;          /* poll_dsn */
	const char *node_id;      /* application_name = pgleader/<node_id> */
	int64_t lock_key;
	const char *lock_name;    /* non-NULL: key = hashtextextended(name, 0) */
	double statement_timeout; /* each statement's bound, seconds */
};

/* What a poll found; with ok false, fault and reason say why (the
 * pooler's connection is closed), recovery that the server said it is in
 * recovery. */
struct poll_answer {
	bool ok;
	enum fault fault;
	bool recovery;
	bool held;
	int queued;               /* -1: not counted */
	uint64_t system_id;       /* ok: the database the pooler reached, */
	uint32_t db_oid;          /* as the lease's (LEASE_SQL_IDENTITY) */
	const char *reason;
};
typedef void (*poll_fn)(void *arg, const struct poll_answer *a);

/* Checks the DSN; NULL with err on one libpq cannot parse. */
struct poll *poll_new(struct ev_loop *loop, const struct poll_options *o,
		      poll_fn fn, void *arg, char *err, size_t errlen);
void poll_free(struct poll *p);

/* Reads the lock's state, its queue counted (pg_locks) if counts, else
 * only whether it is held; connects first, and checks the connection (a
 * transaction pooler in front of a primary), when none is open. fn hears
 * the answer, never from inside this call. A read asked for while one is
 * in flight is that one. */
void poll_read(struct poll *p, bool counts);
/* Closes the connection; a read in flight is forgotten (fn not called). */
void poll_close(struct poll *p);

#endif
