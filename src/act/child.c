/* child.c: runs the command in its own process group and reports when all of it is gone. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_codes.h"
#include "log.h"
#include "proctree.h"

/* How often to look at a group whose main process is already reaped: a
 * member whose parent is not pgleader (one that left the group, say) ends
 * without a SIGCHLD to us. */
#define GROUP_POLL_INTERVAL 0.05
/* The most processes outside the group one look signals; the next look
 * finds the rest. */
#define STRAYS_MAX 256
/* How many times the guard looks for processes to kill: one may fork while
 * it looks. */
#define GUARD_ROUNDS 20
/* Room for the pids of other child objects' processes; pgleader has one. */
#define OTHERS_MAX 32

struct child {
	struct ev_loop *loop;
	char *const *argv;
	bool shell;
	double grace_period;
	child_gone_fn on_gone;
	void (*on_killed)(void *arg); /* SIGKILL after the grace period */
	void *arg;

	pid_t pid;		/* main process and process group id; 0 when not running */
	bool main_reaped;
	int status;		/* exit code or 128+N, valid once main_reaped */
	bool stopping;		/* SIGTERM has gone to the group */
	bool sweeping;		/* and to the processes that left it */
	bool killing;		/* SIGKILL to whatever is left, and is found */
	bool resweep;		/* the sweep's scan failed: SIGTERM at the next one */
	bool scan_failing;	/* the last scan of /proc failed (logged once) */
	ev_timer grace_timer;	/* then SIGKILL */
	char *const *marks;	/* the command's added environment, for the guard */
	int guard_fd;		/* write end of the guard's pipe, or -1 */
	pid_t guard_pid;	/* until reaped, else 0 */
	ev_timer group_poll_timer;
	char who[80];		/* "job NAME: " before each line, or "" */
	int out_fd;		/* the command's stdout and stderr; -1: pgleader's */
	bool owner_logs_start;	/* a labelled child: its owner says the start */
	struct child *next;	/* in reaper.children */
};

/* libev reaps every child of the process (waitpid(-1)) on the default loop.
 * One pid-0 watcher hears about all of them, orphans included, and hands
 * each to the child object it belongs to, if any. */
static struct {
	struct ev_loop *loop;
	ev_child watcher;
	struct child *children;
} reaper;

static bool group_exists(pid_t pgid)
{
	/* Zombies still count as members until reaped, so "empty" also means
	 * nothing is left for us to reap. */
	return kill(-pgid, 0) == 0 || errno != ESRCH;
}

/* "1234 1240 ..." for a log line: the first few of pids[0..n). */
static void format_pids(char *buf, size_t len, const pid_t *pids, size_t n)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && i < 8 && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%d",
					 i ? " " : "", (int)pids[i]);
	if (n > 8 && used < len)
		snprintf(buf + used, len - used, " ...");
}

/* The command's processes outside its group, which a stop must reach too
 * (setsid, setpgid). pgleader is a subreaper, so each is below pgleader:
 * under the command, or under pgleader itself once orphaned. pgleader's
 * other processes (guards, another object's command) are left out; with
 * the one command pgleader runs, everything else below it is the
 * command's. Sends sig to each (0: none) and returns how many there are,
 * or -1 when /proc cannot be read. */
static long signal_strays(const struct child *c, int sig, pid_t *pids, size_t max)
{
	pid_t prune[OTHERS_MAX];
	size_t nprune = 0, n;
	struct proctree *t = proctree_read();

	if (!t)
		return -1;
	for (const struct child *o = reaper.children; o && nprune + 2 <= OTHERS_MAX; o = o->next) {
		if (o->guard_pid > 0)
			prune[nprune++] = o->guard_pid;
		if (o != c && o->pid > 0 && !o->main_reaped)
			prune[nprune++] = o->pid;
	}
	n = proctree_below(t, getpid(), prune, nprune, c->pid, pids, max);
	proctree_free(t);
	/* A pid below us cannot be reused before its parent reaps it, and
	 * those just found are alive or zombies: the window is the parent's
	 * wait between the look and the signal, as for any kill by pid. */
	for (size_t i = 0; sig != 0 && i < n && i < max; i++) {
		kill(pids[i], sig);
		if (sig != SIGKILL)
			kill(pids[i], SIGCONT);
	}
	return (long)n;
}

/* A scan of /proc that failed (no descriptor or memory left, /proc gone)
 * says nothing about which processes are left: the stop goes on as if some
 * were, and the scan is tried again (group_poll_timer). Logged once. */
static void scan_failed(struct child *c)
{
	if (!c->scan_failing)
		log_error("cannot read /proc (%s): the processes that left the "
			  "command's process group cannot be found; the command "
			  "counts as running until they can", strerror(errno));
	c->scan_failing = true;
}

static void scan_worked(struct child *c)
{
	if (c->scan_failing)
		log_info("can read /proc again: looking for the command's processes "
			 "outside its process group");
	c->scan_failing = false;
}

/* Stops the processes outside the group, once per stop: those that appear
 * later are the stopping processes' own, as in the group, and get SIGKILL
 * when the grace period ends. */
static void sweep_strays(struct child *c)
{
	pid_t pids[STRAYS_MAX];
	char list[128];
	long n;

	if (c->sweeping)
		return;
	c->sweeping = true;
	n = signal_strays(c, c->killing ? SIGKILL : SIGTERM, pids, STRAYS_MAX);
	if (n < 0) {
		scan_failed(c);
		c->resweep = true;
	} else if (n > 0) {
		format_pids(list, sizeof(list), pids, (size_t)n);
		log_info("%ssending %s to %ld %s outside the command's process "
			 "group: %s", c->who, c->killing ? "SIGKILL" : "SIGTERM", n,
			 n == 1 ? "process" : "processes", list);
	}
}

/* SIGKILL to the group and, once a stop reaches them, to the processes
 * outside it. Returns how many of those there are. */
static long kill_all(struct child *c)
{
	pid_t pids[STRAYS_MAX];

	c->killing = true;
	kill(-c->pid, SIGKILL);
	if (!c->sweeping)
		return 0;
	return signal_strays(c, SIGKILL, pids, STRAYS_MAX);
}

static void terminate_group(struct child *c)
{
	c->stopping = true;
	kill(-c->pid, SIGTERM);
	/* A stopped member would keep SIGTERM pending until the SIGKILL. */
	kill(-c->pid, SIGCONT);
	/* The loop's clock may be stale after a long callback: the grace
	 * period must not start in the past. */
	ev_now_update(c->loop);
	ev_timer_set(&c->grace_timer, c->grace_period, 0.);
	ev_timer_start(c->loop, &c->grace_timer);
}

static void grace_expired_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct child *c = w->data;
	long strays;

	(void)loop;
	(void)revents;
	strays = kill_all(c);
	if (strays > 0)
		log_warning("%sgrace period %gs expired: sending SIGKILL to process "
			    "group %d and %ld %s outside it", c->who, c->grace_period,
			    (int)c->pid, strays, strays == 1 ? "process" : "processes");
	else
		log_warning("%sgrace period %gs expired: sending SIGKILL to process group %d",
			    c->who, c->grace_period, (int)c->pid);
	if (c->on_killed)
		c->on_killed(c->arg);
}

void child_on_killed(struct child *c, void (*fn)(void *arg))
{
	c->on_killed = fn;
}

/* PR_SET_PDEATHSIG reaches only the command's main process, so a pgleader
 * killed with SIGKILL would leave the rest of the group running. A guard
 * process, forked with every signal blocked, waits on a pipe whose write end
 * only pgleader holds: end of file without the all-clear byte means pgleader
 * died while the group lived, and the guard kills the whole group. */
/* In ps and pgrep -f the guard must not pass for a second pgleader: its
 * copy of the argument strings, contiguous from argv[0], is blanked. Nor
 * may `pkill pgleader` (a pattern matched anywhere in the name) kill it
 * with pgleader: its name does not contain "pgleader". */
static void retitle_guard(void)
{
	static const char title[] = "pgl-guard";
	char buf[4096];
	ssize_t len = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);

	prctl(PR_SET_NAME, title);
	if (fd >= 0) {
		len = read(fd, buf, sizeof(buf));
		close(fd);
	}
	if (len > (ssize_t)sizeof(title)) {
		memset(program_invocation_name, 0, (size_t)len);
		memcpy(program_invocation_name, title, sizeof(title));
	}
}

/* The guard's last act. The processes that left the group cannot be found
 * by their parents any more: those links died with pgleader, whose orphans
 * went to init. But each still has, as it was at its exec, the environment
 * pgleader gave the command, whose fencing token names this term: the
 * guard kills every process that has all of it. */
static void guard_kill_all(pid_t pgid, char *const *marks)
{
	pid_t pids[STRAYS_MAX];
	size_t n = 1;
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	kill(-pgid, SIGKILL);
	if (!marks || !*marks)
		return;
	for (int round = 0; round < GUARD_ROUNDS && n > 0; round++) {
		n = proctree_with_environment(marks, pids, STRAYS_MAX);
		for (size_t i = 0; i < n && i < STRAYS_MAX; i++)
			kill(pids[i], SIGKILL);
		/* A killed process keeps its environment until it is gone. */
		nanosleep(&tick, NULL);
	}
}

/* Returns the write end of the guard's pipe, or -1. */
static int start_guard(pid_t pgid, char *const *marks, pid_t *guard_pid)
{
	int fds[2];
	pid_t pid;
	char byte;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) == -1)
		return -1;
	pid = fork();
	if (pid == 0) {
		retitle_guard();
		/* nothing of pgleader's but the pipe and stderr */
		if (fds[0] > 3)
			close_range(3, (unsigned)fds[0] - 1, 0);
		close_range((unsigned)fds[0] + 1, ~0U, 0);
		do
			n = read(fds[0], &byte, 1);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			guard_kill_all(pgid, marks);
		_exit(EXIT_OK);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return -1;
	}
	*guard_pid = pid;
	return fds[1];
}

/* Starts c's guard with every signal blocked across the fork (the guard
 * must not run libev's handlers), or logs why it could not. */
static void spawn_guard(struct child *c)
{
	sigset_t all_signals, saved_mask;

	sigfillset(&all_signals);
	sigprocmask(SIG_SETMASK, &all_signals, &saved_mask);
	c->guard_fd = start_guard(c->pid, c->marks, &c->guard_pid);
	if (c->guard_fd < 0)
		log_warning("cannot start the guard process (%s): if pgleader "
			    "is killed with SIGKILL, only the command's main "
			    "process dies with it", strerror(errno));
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
}

/* The guard died while the command runs (someone killed it): without one,
 * a pgleader killed next would leave the command's other processes
 * running. A new one takes its place. */
static void guard_died(struct child *c, int wstatus)
{
	if (WIFSIGNALED(wstatus))
		log_warning("guard process (pid %d) killed by signal %d: starting "
			    "a new one", (int)c->guard_pid, WTERMSIG(wstatus));
	else
		log_warning("guard process (pid %d) exited with status %d: starting "
			    "a new one", (int)c->guard_pid, WEXITSTATUS(wstatus));
	c->guard_pid = 0;
	close(c->guard_fd);
	spawn_guard(c);
}

static void release_guard(struct child *c)
{
	if (c->guard_fd < 0)
		return;
	if (write(c->guard_fd, "", 1) != 1)
		log_debug("cannot tell the guard process to stand down: %s",
			  strerror(errno));
	close(c->guard_fd);
	c->guard_fd = -1;
}

/* Called last: on_gone may start the command again or free c. */
static void report_gone(struct child *c)
{
	release_guard(c);
	ev_timer_stop(c->loop, &c->grace_timer);
	ev_timer_stop(c->loop, &c->group_poll_timer);
	ev_unref(c->loop); /* taken in child_start */
	c->pid = 0;
	c->main_reaped = false;
	c->stopping = c->sweeping = c->killing = c->resweep = false;
	c->on_gone(c->arg, c->status);
}

/* Whether a stop is still waiting for processes outside the group; after
 * the grace period each look kills what it finds. */
static bool strays_left(struct child *c)
{
	pid_t pids[STRAYS_MAX];
	char list[128];
	int sig = c->killing ? SIGKILL : c->resweep ? SIGTERM : 0;
	long n;

	if (!c->sweeping)
		return false;
	n = signal_strays(c, sig, pids, STRAYS_MAX);
	if (n < 0) {
		scan_failed(c);
		return true;
	}
	scan_worked(c);
	if (c->resweep && n > 0) {
		format_pids(list, sizeof(list), pids, (size_t)n);
		log_info("%ssending %s to %ld %s outside the command's process "
			 "group: %s", c->who, sig == SIGKILL ? "SIGKILL" : "SIGTERM", n,
			 n == 1 ? "process" : "processes", list);
	}
	c->resweep = false;
	return n > 0;
}

/* With the main process reaped: reports gone if the group is empty and,
 * when pgleader stopped the command, nothing it left outside the group is
 * either; else makes sure the leftovers are being stopped and watched. A
 * command that ended by itself is over when its group is: what it left
 * outside (a daemon it started, say) is stopped with the next stop.
 * Returns true when on_gone was called, after which c must not be
 * touched. */
static bool settle(struct child *c)
{
	if (!group_exists(c->pid) && !strays_left(c)) {
		report_gone(c);
		return true;
	}
	if (!c->stopping) {
		log_info("%scommand (pid %d) exited but its process group still has "
			 "processes: sending SIGTERM to process group %d",
			 c->who, (int)c->pid, (int)c->pid);
		terminate_group(c);
	}
	if (!ev_is_active(&c->group_poll_timer))
		ev_timer_start(c->loop, &c->group_poll_timer);
	return false;
}

static void group_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	settle(w->data);
}

static void main_reaped(struct child *c, int wstatus)
{
	c->main_reaped = true;
	if (WIFSIGNALED(wstatus)) {
		c->status = EXIT_SIGNAL_BASE + WTERMSIG(wstatus);
		log_info("%scommand killed by signal %d", c->who, WTERMSIG(wstatus));
	} else {
		c->status = WEXITSTATUS(wstatus);
		log_info("%scommand exited with status %d", c->who, c->status);
	}
}

static void reaped_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct child *c;
	bool list_changed;

	(void)loop;
	(void)revents;
	for (c = reaper.children; c; c = c->next) {
		if (c->guard_pid == w->rpid && c->guard_fd >= 0 && c->pid != 0)
			guard_died(c, w->rstatus);
		else if (c->guard_pid == w->rpid)
			c->guard_pid = 0; /* its pid may now be anyone's */
		if (c->pid == w->rpid && !c->main_reaped)
			main_reaped(c, w->rstatus);
	}
	/* Whatever was reaped, main process or orphan, may have been the last
	 * member of a group. on_gone may change the list: rescan after it. */
	do {
		list_changed = false;
		for (c = reaper.children; c; c = c->next) {
			if (c->pid != 0 && c->main_reaped && settle(c)) {
				list_changed = true;
				break;
			}
		}
	} while (list_changed);
}

int child_init_reaper(struct ev_loop *loop)
{
	if (reaper.loop)
		return 0;
	/* libev supports child watchers on the default loop only. */
	if (!ev_is_default_loop(loop)) {
		errno = EINVAL;
		return -1;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		return -1;
	ev_child_init(&reaper.watcher, reaped_cb, 0, 0);
	/* Before our timers: a group's state is best known right after a reap. */
	ev_set_priority(&reaper.watcher, EV_MAXPRI);
	ev_child_start(loop, &reaper.watcher);
	/* Watching for children alone must not keep ev_run going; a running
	 * command holds its own reference instead (child_start). */
	ev_unref(loop);
	proctree_reserve();
	reaper.loop = loop;
	return 0;
}

struct child *child_new(struct ev_loop *loop, char *const *argv, bool shell,
			double grace_period, child_gone_fn on_gone, void *arg)
{
	struct child *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->loop = loop;
	c->argv = argv;
	c->shell = shell;
	c->grace_period = grace_period;
	c->on_gone = on_gone;
	c->arg = arg;
	c->guard_fd = -1;
	c->out_fd = -1;
	ev_timer_init(&c->grace_timer, grace_expired_cb, grace_period, 0.);
	c->grace_timer.data = c;
	ev_timer_init(&c->group_poll_timer, group_poll_cb, GROUP_POLL_INTERVAL,
		      GROUP_POLL_INTERVAL);
	c->group_poll_timer.data = c;
	c->next = reaper.children;
	reaper.children = c;
	return c;
}

void child_set_label(struct child *c, const char *job)
{
	snprintf(c->who, sizeof(c->who), "job %s: ", job);
	c->owner_logs_start = true;
}

void child_set_output(struct child *c, int fd)
{
	c->out_fd = fd;
}

void child_free(struct child *c)
{
	struct child **p;

	if (!c)
		return;
	/* Nothing of the command may outlive the object that supervises it. */
	if (c->pid != 0) {
		c->sweeping = true;
		kill_all(c);
		ev_unref(c->loop);
	}
	release_guard(c);
	ev_timer_stop(c->loop, &c->grace_timer);
	ev_timer_stop(c->loop, &c->group_poll_timer);
	for (p = &reaper.children; *p; p = &(*p)->next) {
		if (*p == c) {
			*p = c->next;
			break;
		}
	}
	free(c);
}

/* The command's environment, built before the new process exists: pgleader's
 * own without PGLEADER_DSN (the password stays with pgleader) and without
 * what extra_env sets, then extra_env. NULL when out of memory. */
static char **command_environment(char *const *extra_env)
{
	size_t n = 0, k = 0, extra = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	while (extra_env && extra_env[extra])
		extra++;
	envp = calloc(n + extra + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t name = strcspn(environ[i], "=");
		bool replaced = !strncmp(environ[i], "PGLEADER_DSN=", 13);

		for (size_t j = 0; j < extra && !replaced; j++)
			replaced = !strncmp(environ[i], extra_env[j], name + 1);
		if (!replaced)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < extra; j++)
		envp[k++] = extra_env[j];
	return envp;
}

struct spawn {
	const struct child *c;
	char *const *envp;
	pid_t parent;
};

/* In the new process, between clone and exec. It shares pgleader's memory
 * (CLONE_VM) while pgleader waits for the exec (CLONE_VFORK), as
 * posix_spawn's does, which spares copying pgleader's page tables on the
 * way to a new command (about 0.4 ms). So it writes nothing of pgleader's:
 * no environ, no malloc, no stdio; only its own stack and system calls.
 * Its signal handlers and descriptors are its own copies. Not instrumented:
 * a sanitizer's stack bookkeeping would land in pgleader's shadow memory. */
__attribute__((no_sanitize_address, no_sanitize_undefined))
static int exec_command(void *arg)
{
	const struct spawn *sp = arg;
	const struct child *c = sp->c;
	struct sigaction default_action = { .sa_handler = SIG_DFL };
	const char *program = c->shell ? "/bin/sh" : c->argv[0];
	char line[512];
	sigset_t no_signals;
	int sig, exec_errno, len;

	setpgid(0, 0);
	/* Armed only now, so if pgleader died since the clone nobody would
	 * send it: the parent check closes that window. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1) {
		len = snprintf(line, sizeof(line), "pgleader: cannot set "
			       "parent-death signal: %s\n", strerror(errno));
		(void)!write(STDERR_FILENO, line, (size_t)len);
		_exit(EXIT_NOEXEC);
	}
	if (getppid() != sp->parent)
		raise(SIGKILL);

	/* Dispositions before the mask: a signal that arrived since the clone
	 * is still blocked (child_start blocked all) and must, once unblocked,
	 * meet SIG_DFL, not a copy of libev's handler. */
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &default_action, NULL); /* EINVAL for KILL, STOP, libc's own */
	sigemptyset(&no_signals);
	sigprocmask(SIG_SETMASK, &no_signals, NULL);

	/* The output pipe's write end (close-on-exec, which dup2 drops). */
	if (c->out_fd > STDERR_FILENO &&
	    (dup2(c->out_fd, STDOUT_FILENO) < 0 || dup2(c->out_fd, STDERR_FILENO) < 0))
		_exit(EXIT_NOEXEC);
	if (close_range(3, ~0U, 0) == -1) {
		long max_fd = sysconf(_SC_OPEN_MAX);

		for (int fd = 3; fd < max_fd; fd++)
			close(fd);
	}

	if (c->shell) {
		char *const sh[] = { "sh", "-c", c->argv[0], NULL };

		execve("/bin/sh", sh, sp->envp);
	} else {
		execvpe(c->argv[0], c->argv, sp->envp);
	}
	exec_errno = errno;
	len = snprintf(line, sizeof(line), "pgleader: cannot run '%s': %s\n",
		       program, strerror(exec_errno));
	if (len >= (int)sizeof(line))
		len = (int)sizeof(line) - 1;
	(void)!write(STDERR_FILENO, line, (size_t)len);
	_exit(exec_errno == ENOENT || exec_errno == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

/* The new process's stack: execvpe's search of PATH and its /bin/sh
 * fallback for a script without #! take a few KiB of it. */
#define SPAWN_STACK (256 * 1024)

/* Starts the command's process; its pid, or -1 with errno. */
static pid_t spawn_command(const struct child *c, char *const *extra_env)
{
	struct spawn sp = { c, NULL, getpid() };
	char *stack = malloc(SPAWN_STACK);
	char **envp = command_environment(extra_env);
	pid_t pid = -1;

	if (stack && envp) {
		sp.envp = envp;
		pid = clone(exec_command, stack + SPAWN_STACK,
			    CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	} else {
		errno = ENOMEM;
	}
	free(envp);
	free(stack);
	return pid;
}

int child_start(struct child *c, char *const *extra_env, char *err, size_t errlen)
{
	sigset_t all_signals, saved_mask;
	pid_t pid;
	int spawn_errno;

	if (c->pid != 0) {
		snprintf(err, errlen, "command already running (pid %d)", (int)c->pid);
		return -1;
	}
	if (!reaper.loop) {
		snprintf(err, errlen, "child_init_reaper() was not called");
		return -1;
	}
	/* All signals blocked across the clone, so none reaches the new
	 * process before exec_command resets the dispositions: a SIGTERM to
	 * the group right after this returns must kill it, not run libev's
	 * handler. */
	sigfillset(&all_signals);
	sigprocmask(SIG_SETMASK, &all_signals, &saved_mask);
	pid = spawn_command(c, extra_env);
	spawn_errno = errno;
	if (pid > 0) {
		/* The new process has exec'd or died by now (CLONE_VFORK), its
		 * group made; this only covers a setpgid of its that failed.
		 * EACCES means it has exec'd. */
		setpgid(pid, pid);
		c->pid = pid;
		c->marks = extra_env;
		spawn_guard(c);
	}
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	if (pid < 0) {
		snprintf(err, errlen, "cannot start the command: %s", strerror(spawn_errno));
		return -1;
	}
	c->pid = pid;
	c->main_reaped = false;
	c->stopping = false;
	c->status = 0;
	ev_ref(c->loop); /* ev_run keeps going while the command runs */
	if (!c->owner_logs_start)
		log_event(LOG_LEVEL_INFO, &(struct log_fields){ .command_pid = pid },
			  "started command (pid %d)", (int)pid);
	return 0;
}

void child_stop(struct child *c)
{
	if (c->pid == 0)
		return;
	/* Already stopping the leftovers of a command that exited: the
	 * grace period runs on, the stop now reaches the rest. */
	if (!c->stopping) {
		log_info("%sstopping command (pid %d): sending SIGTERM to process group",
			 c->who, (int)c->pid);
		terminate_group(c);
	}
	sweep_strays(c);
}

void child_kill(struct child *c)
{
	if (c->pid == 0)
		return;
	log_warning("%skilling command (pid %d): sending SIGKILL to process group",
		    c->who, (int)c->pid);
	c->stopping = true;
	ev_timer_stop(c->loop, &c->grace_timer);
	/* The processes outside the group: those a stop has reached, or
	 * else all of them, with a log line. */
	kill_all(c);
	sweep_strays(c);
}

void child_signal(struct child *c, int sig)
{
	/* Only the main process: the command decides what its children get. */
	if (c->pid == 0 || c->main_reaped)
		return;
	log_debug("%sforwarding signal %d to command (pid %d)", c->who, sig, (int)c->pid);
	kill(c->pid, sig);
}

bool child_running(const struct child *c)
{
	return c->pid != 0;
}

bool child_exited(const struct child *c)
{
	siginfo_t info;

	if (c->pid == 0 || c->main_reaped)
		return true;
	/* A look that leaves the zombie for the reaper: WNOWAIT. */
	memset(&info, 0, sizeof(info));
	return waitid(P_PID, (id_t)c->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       info.si_pid == c->pid;
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}
