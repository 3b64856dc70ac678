/* proctree.h: which processes descend from which, read from /proc. */
#ifndef PGLEADER_PROCTREE_H
#define PGLEADER_PROCTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A snapshot of every process's parent and process group. It is only as
 * true as the moment it was read: a process can exit, fork or be reparented
 * the next instant, so callers read it again while anything may change. */
struct proctree;

/* Reads NAME/stat relative to dir_fd (a pid under an open /proc, or
 * "/proc/self" with AT_FDCWD) into buf and returns where the fields after
 * the command name begin (" state ppid pgrp ..."), or NULL. The name may
 * hold spaces and ')': the fields follow the last ')'. */
const char *proctree_stat_fields(int dir_fd, const char *name, char *buf, size_t size);

/* NULL with errno set when /proc cannot be read whole (not mounted, no
 * descriptor left, no memory): a process that could not be read is never
 * left out as if it had exited. */
struct proctree *proctree_read(void);
void proctree_free(struct proctree *t);

/* Holds a descriptor in reserve (on /dev/null) that proctree_read gives
 * back for its scan and takes again, so that a scan works with a full
 * descriptor table. Call once at start; a failure is only a lost reserve. */
void proctree_reserve(void);

/* Puts into out (up to max) every process below root, zombies included,
 * leaving out the subtrees whose top is in prune[0..nprune) and the members
 * of process group skip_pgid (0: none; their own descendants outside that
 * group are still found). Returns how many there are, which may be more
 * than max. */
size_t proctree_below(const struct proctree *t, pid_t root, const pid_t *prune,
		      size_t nprune, pid_t skip_pgid, pid_t *out, size_t max);

/* Puts into out (up to max) every live process other than the caller
 * whose environment, as it was at its exec, holds every "NAME=value" of
 * vars (NULL-terminated, at least one). Processes whose environment the
 * caller may not read are not found. Returns how many there are. Safe in
 * a forked child of a single-threaded process. */
size_t proctree_with_environment(char *const *vars, pid_t *out, size_t max);
/* The same for any of sets[0..nsets), each such a list: every process
 * whose environment holds all of one of them, each environment read once. */
size_t proctree_with_any_environment(char *const *const *sets, size_t nsets,
				     pid_t *out, size_t max);

#endif
