/* failsafe.h: the failsafe peer protocol (DESIGN 9) over HTTP, libcurl's
 * multi interface on the libev loop; no threads of ours, nothing blocks. */
#ifndef PGLEADER_FAILSAFE_H
#define PGLEADER_FAILSAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct ev_loop;
struct failsafe;

/* The largest secret file, and the largest answer or request body a member
 * reads from another: anything bigger is refused, never buffered. */
#define FAILSAFE_SECRET_MAX 4096
#define FAILSAFE_BODY_MAX 4096

enum failsafe_check { FAILSAFE_CLEAR, FAILSAFE_RUNNING, FAILSAFE_SILENT };

struct failsafe_callbacks {
	/* A claim round ended: agree members of total others answered 200
	 * with {"ok": true}. Not called for a round a newer claim cancelled. */
	void (*round_done)(void *arg, int agree, int total);
	/* A check ended: CLEAR when every other member answered "not running"
	 * or refused the connection; RUNNING when one answered "running";
	 * SILENT when one gave no usable answer in time (a timeout, a reset,
	 * a 401, garbage) and none said running. same_members: at least one
	 * member answered, and every answer named this node's member list
	 * (refused connections aside). */
	void (*check_done)(void *arg, enum failsafe_check result, bool same_members);
	void *arg;
};

/* Reads cfg->failsafe_secret_file: a regular file of at most
 * FAILSAFE_SECRET_MAX bytes, not readable or writable by others (mode
 * o-rw), one line of printable ASCII without spaces, its trailing newline
 * stripped, not empty. Keeps cfg->peers other than cfg->node_id, and the
 * hash of the whole list. NULL with one line in err on failure (the line
 * never holds the secret). The callbacks are called from the loop, never
 * from within failsafe_claim or failsafe_check; they may call any function
 * here, failsafe_free included. */
struct failsafe *failsafe_new(struct ev_loop *loop, const struct config *cfg,
			      const struct failsafe_callbacks *cb,
			      char *err, size_t errlen);

/* Cancels what is in flight, without callbacks; NULL is a no-op. */
void failsafe_free(struct failsafe *f);

/* POST /failsafe to every other member in parallel with the secret, body
 * {"node_id": ..., "fencing_token": "<decimal>", "members": "<hash>"};
 * each answer due within cfg->ping_timeout_ms; then round_done. A claim
 * while one is in flight cancels the old one first. */
void failsafe_claim(struct failsafe *f, uint64_t fencing_token);

/* The same round, the body with "regained": true: this node holds the lock
 * again after failsafe, so the members may queue for it again. Its
 * round_done is of no interest. */
void failsafe_regained(struct failsafe *f, uint64_t fencing_token);

/* GET /failsafe to every other member in parallel with the secret, each
 * due within ping_timeout; then check_done. A check while one is in flight
 * cancels the old one first. Claims and checks do not cancel each other. */
void failsafe_check(struct failsafe *f);

/* The answers of the last round that ended that were not "agree" or "not
 * running", e.g. "b: 409 running the command; c: no answer within 400ms";
 * "" when there were none. Valid until the next round ends. */
const char *failsafe_detail(const struct failsafe *f);

/* 16 lower-case hex digits: 64-bit FNV-1a over the sorted
 * "id=host:port" entries of failsafe_peers (IPv6 hosts in brackets), one a
 * line. The same list in any order gives the same hash on every node. An
 * equality check against misconfiguration, not a security measure: the
 * secret is. */
const char *failsafe_members_hash(const struct failsafe *f);

/* Whether an Authorization header value is "Bearer <secret>" (the scheme
 * in any case); the secret is compared in constant time. NULL: false. */
bool failsafe_authorized(const struct failsafe *f, const char *authorization);

/* The first node id of a comma-separated list (the nodes with a session for
 * this lock) that is not a member, copied into buf; NULL when all are. */
const char *failsafe_stranger(const struct failsafe *f, const char *nodes,
			      char *buf, size_t len);

#endif
