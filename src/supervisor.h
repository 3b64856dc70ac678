/* supervisor.h: turns lease, child, signal and timer callbacks into election
 * events, and carries out the actions the election returns. */
#ifndef PGLEADER_SUPERVISOR_H
#define PGLEADER_SUPERVISOR_H

#include <stdbool.h>
#include <stdint.h>
#include <ev.h>

#include "config.h"
#include "election.h"

struct supervisor;

/* NULL with err when the lease (a DSN libpq cannot parse) or the failsafe
 * client (its secret file) cannot be set up: a configuration error. */
struct supervisor *supervisor_new(struct ev_loop *loop, const struct config *cfg,
				  char *err, size_t errlen);
/* Starts the election; the loop then runs until the election exits. */
void supervisor_start(struct supervisor *s);
/* The election's exit code; EXIT_INTERNAL if the loop stopped early. */
int supervisor_exit_code(struct supervisor *s);
/* The failsafe endpoints' answers (http.h's struct http_failsafe), arg
 * being the supervisor; only with failsafe_peers. */
bool supervisor_authorized(void *arg, const char *authorization);
int supervisor_claim(void *arg, const char *node_id, uint64_t fencing_token,
		     const char *members_hash, char *reason, size_t len);
bool supervisor_running(void *arg);
int supervisor_regained(void *arg, const char *node_id, const char *members_hash,
			char *reason, size_t len);
/* Whether failsafe is on. */
bool supervisor_failsafe(const struct supervisor *s);
/* The failsafe member list's hash (failsafe_members_hash); NULL without
 * failsafe. */
const char *supervisor_members_hash(const struct supervisor *s);

/* DESIGN 13: SIGHUP calls fn, which reads the configuration file again:
 * a new configuration (the supervisor's until it is freed; it must outlive
 * it) whose jobs replace the running ones, or NULL when it cannot be used
 * (fn said why). Without it, SIGHUP is forwarded to what runs. */
typedef const struct config *(*supervisor_reload_fn)(void *arg);
void supervisor_on_reload(struct supervisor *s, supervisor_reload_fn fn, void *arg);

/* The jobs (DESIGN 10), for /metrics and /status; NULL without them. */
struct jobs *supervisor_jobs(const struct supervisor *s);

/* What the election last published, for observers. */
const struct election_snapshot *supervisor_snapshot(const struct supervisor *s);
void supervisor_free(struct supervisor *s);

#endif
