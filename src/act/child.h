/* child.h: the supervised command: start, signal, stop, reap. */
#ifndef PGLEADER_CHILD_H
#define PGLEADER_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <ev.h>

#include "jobproc.h" /* struct job_process */

struct child;

/* Called once the command's whole process group is gone after a start: the
 * main process reaped and no other member left (its leftovers get SIGTERM,
 * then SIGKILL after the grace period), and, after child_stop or
 * child_kill, no process it started outside the group either. status is an
 * exit code: the command's own, or 128+N when signal N killed it. */
typedef void (*child_gone_fn)(void *arg, int status);

/* argv is borrowed for the life of the child object. With shell, argv[0] is
 * run with /bin/sh -c. extra_env is a NULL-terminated list of "NAME=value"
 * added to the command's environment (borrowed). */
struct child *child_new(struct ev_loop *loop, char *const *argv, bool shell,
			double grace_period, child_gone_fn on_gone, void *arg);
void child_free(struct child *c);
/* The command is job's, of several: its lines name it ("job NAME: command
 * exited with status 0"), and its start is for the owner to log, with the
 * run and the tick, so that a start is one line. */
void child_set_label(struct child *c, const char *job);
/* What the command runs as (DESIGN 13), borrowed for the life of the
 * child object: its variables (before extra_env's, which win), its
 * directory, its user and groups. NULL: pgleader's own. */
void child_set_process(struct child *c, const struct job_process *p);

/* The next starts' stdout and stderr: fd (a pipe's write end, say, which
 * the caller keeps open across child_start and closes after), or -1 for
 * pgleader's own. */
void child_set_output(struct child *c, int fd);
/* fn(arg) is called each time the grace period runs out and the group gets
 * SIGKILL. */
void child_on_killed(struct child *c, void (*fn)(void *arg));

/* Makes pgleader a child subreaper so orphaned grandchildren come back to it
 * and are reaped; installs the SIGCHLD watcher. Call once before starting. */
int child_init_reaper(struct ev_loop *loop);

/* fork+exec in a new process group with PDEATHSIG=SIGKILL, default signal
 * dispositions, an empty signal mask and only fds 0-2, as the process
 * child_set_process says (groups, group, user, then directory). Exec
 * failures exit the command with 127 (not found) or 126 (not executable,
 * or the directory or ids could not be set) after one line on stderr. Returns 0, or -1 with err when fork itself failed. A guard
 * process kills the group if pgleader dies first, and every process whose
 * environment still holds all of extra_env (the fencing token makes it
 * this command's); a guard that dies while the command runs is replaced,
 * so extra_env must stay valid until the command is gone. */
int child_start(struct child *c, char *const *extra_env, char *err, size_t errlen);

/* SIGTERM to the group and to the command's processes outside it (below
 * pgleader, the subreaper: those that called setsid or setpgid), SIGKILL
 * to all that is left, and is found, after the grace period. */
void child_stop(struct child *c);
/* SIGKILL to the group and to the processes outside it now. */
void child_kill(struct child *c);
/* Forwards sig to the main process (HUP, USR1, USR2). */
void child_signal(struct child *c, int sig);

bool child_running(const struct child *c); /* started and not yet gone */
/* Whether the command's main process has ended, reaped or not yet (a
 * zombie: pgleader was frozen, or its loop has not run the reaper yet):
 * a stop sent now is not what ended it. */
bool child_exited(const struct child *c);
pid_t child_pid(const struct child *c);    /* 0 when not running */

#endif
