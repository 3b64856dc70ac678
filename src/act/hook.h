/* hook.h: a short command pgleader runs for itself, such as a job's
 * on_failure (DESIGN 13): /bin/sh -c COMMAND in a process group of its
 * own, with extra environment and a buffer on its stdin, stopped
 * (SIGTERM to the group, SIGKILL after a grace period) when it takes
 * longer than its timeout. */
#ifndef PGLEADER_HOOK_H
#define PGLEADER_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <ev.h>

struct hook;

/* Called once the hook's main process is reaped: its exit status (128+N
 * for signal N), and whether it was stopped at its timeout. The hook is
 * freed right after fn returns. */
typedef void (*hook_done_fn)(void *arg, int status, bool timed_out);

/* Starts command through /bin/sh -c with pgleader's environment (without
 * PGLEADER_DSN) plus extra_env (NULL-terminated "NAME=value", copied),
 * input[0..len) written to its stdin, which is then closed (len 0: an
 * empty stdin, at its end at once). NULL with err when it cannot start. */
struct hook *hook_start(struct ev_loop *loop, const char *command,
			char *const *extra_env, const char *input, size_t len,
			double timeout, double grace, hook_done_fn fn, void *arg,
			char *err, size_t errlen);
/* SIGKILL to its group, and its watchers stopped: fn is not called. */
void hook_free(struct hook *h);

#endif
