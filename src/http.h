/* http.h: the health, status and metrics endpoints, served on the libev loop. */
#ifndef PGLEADER_HTTP_H
#define PGLEADER_HTTP_H

#include <stddef.h>

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

/* The port listened on. */
int http_port(const struct http *h);

/* Closes the listening socket and every connection; NULL is a no-op. Call
 * it before freeing what the snapshot function reads. */
void http_free(struct http *h);

#endif
