/* guard.h: one process beside pgleader that kills the commands' process
 * groups, and every process that still carries a command's environment,
 * if pgleader dies without a word (SIGKILL, a crash). */
#ifndef PGLEADER_GUARD_H
#define PGLEADER_GUARD_H

#include <stdbool.h>
#include <sys/types.h>

/* PR_SET_PDEATHSIG reaches only a command's main process, so a pgleader
 * killed with SIGKILL would leave the rest of its group running. One
 * guard, forked once (at the first command) with every signal blocked,
 * holds the other end of a socket from pgleader: each command's process
 * group and environment is told it at its start, and forgotten at its
 * end; end of file means pgleader died, and the guard kills what it was
 * told of. One guard for every run: a run's start costs one message, not a
 * fork of the daemon. marks (NULL-terminated "NAME=value"s, at least the
 * fencing token's) are borrowed until guard_forget. Returns 0, or -1
 * after one warning when there is no guard. */
int guard_watch(pid_t pgid, char *const *marks);
void guard_forget(pid_t pgid);
/* Ends the guard (it kills nothing: call it with nothing watched), so
 * that pgleader exits with no descriptor of it open. */
void guard_stop(void);
/* The guard's pid, 0 when none: not one of the commands' processes. */
pid_t guard_pid(void);
/* Whether pid, just reaped, was the guard; if groups are watched, a new
 * guard is started at once and told them, with a warning. */
bool guard_reaped(pid_t pid, int wstatus);

#endif
