/* http.h: the health, status and metrics endpoints, served on the libev loop. */
#ifndef PGLEADER_HTTP_H
#define PGLEADER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "election.h"
#include "metrics.h"

struct ev_loop;
struct http;

/* Returns the election's current snapshot, or NULL before there is one
 * (every endpoint but /liveness then answers 503). */
typedef const struct election_snapshot *(*http_snapshot_fn)(void *arg);

/* Listens on addr: "127.0.0.1:8008", "[::1]:8008", "localhost:8008" (the
 * first address the name has that can be bound), ":8008" (every address,
 * IPv6 and IPv4 on one socket; IPv4 alone without IPv6). Port 0 picks a free
 * port (http_port tells which). Versions are copied. On failure returns
 * NULL with one line in err, e.g. "cannot listen on 127.0.0.1:8008: Address
 * already in use". Never blocks the loop, starts no thread, and does not
 * keep ev_run from returning on its own. */
struct http *http_new(struct ev_loop *loop, const char *addr,
		      const struct metrics_versions *versions,
		      http_snapshot_fn get, void *arg, char *err, size_t errlen);

/* The failsafe endpoints (DESIGN 9), answered by the election's side. */
struct http_failsafe {
	/* whether an Authorization header value (NULL: none) holds the secret */
	bool (*authorized)(void *arg, const char *authorization);
	/* a member's claim: returns 200 (recorded) or 409 with a one-line
	 * reason in reason[len] */
	int (*claim)(void *arg, const char *node_id, uint64_t fencing_token,
		     const char *members_hash, char *reason, size_t len);
	/* this node runs the command or holds the lock */
	bool (*running)(void *arg);
	void *arg;
	/* a claim with "regained": true: the claimant holds the lock again
	 * after failsafe; returns 200 or 409 as claim does (NULL: claim) */
	int (*regained)(void *arg, const char *node_id, const char *members_hash,
			char *reason, size_t len);
	/* this node's member list hash, named in the answer to GET (NULL:
	 * not named); must outlive the server */
	const char *members_hash;
};

/* Serves GET and POST /failsafe through fs (copied; NULL: 404 again).
 * Both need the secret: 401 with "WWW-Authenticate: Bearer" otherwise.
 * GET answers 200 {"running": BOOL, "members": HASH}. POST takes a JSON body of at most
 * HTTP_FAILSAFE_BODY_MAX bytes, {"node_id": S, "fencing_token": "DECIMAL",
 * "members": S} (and "regained": true after failsafe), and answers 200 {"ok": true} or 409 {"ok": false,
 * "reason": S}; a body announced bigger is 413, one that grows bigger while
 * it is read closes the connection, a body that is not that object is 400. */
#define HTTP_FAILSAFE_BODY_MAX 4096
void http_set_failsafe(struct http *h, const struct http_failsafe *fs);

/* Keeps HTTP connections for the failsafe members at hosts[n] (names or
 * addresses, looked up now; one that cannot be is logged and skipped):
 * when every general connection, or an address's share of them, is taken,
 * a connection from a member's address gets a reserved one, for one
 * /failsafe request with the secret. Call after http_set_failsafe;
 * n = 0: none kept. Blocks while names are looked up: call it before the
 * loop runs. */
void http_keep_for_members(struct http *h, const char *const *hosts, size_t n);

/* The port listened on. */
int http_port(const struct http *h);

/* Closes the listening socket and every connection; NULL is a no-op. Call
 * it before freeing what the snapshot function reads. */
void http_free(struct http *h);

#endif
