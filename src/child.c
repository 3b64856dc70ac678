/* child.c: runs the command in its own process group and reports when all of it is gone. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

/* How often to look at a group whose main process is already reaped: a
 * member whose parent is not pgleader (one that left the group, say) ends
 * without a SIGCHLD to us. */
#define GROUP_POLL_INTERVAL 0.05

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
	ev_timer grace_timer;	/* then SIGKILL */
	int guard_fd;		/* write end of the guard's pipe, or -1 */
	ev_timer group_poll_timer;
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

	(void)loop;
	(void)revents;
	log_warning("grace period %gs expired: sending SIGKILL to process group %d",
		    c->grace_period, (int)c->pid);
	kill(-c->pid, SIGKILL);
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
 * copy of the argument strings, contiguous from argv[0], is blanked. */
static void retitle_guard(void)
{
	static const char title[] = "pgleader-guard";
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

static int start_guard(pid_t pgid)
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
			kill(-pgid, SIGKILL);
		_exit(0);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return -1;
	}
	return fds[1];
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
	c->stopping = false;
	c->on_gone(c->arg, c->status);
}

/* With the main process reaped: reports gone if the group is empty, else
 * makes sure its leftovers are being stopped and watched. Returns true when
 * on_gone was called, after which c must not be touched. */
static bool settle(struct child *c)
{
	if (!group_exists(c->pid)) {
		report_gone(c);
		return true;
	}
	if (!c->stopping) {
		log_info("command (pid %d) exited but its process group still has "
			 "processes: sending SIGTERM to process group %d",
			 (int)c->pid, (int)c->pid);
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
		c->status = 128 + WTERMSIG(wstatus);
		log_info("command killed by signal %d", WTERMSIG(wstatus));
	} else {
		c->status = WEXITSTATUS(wstatus);
		log_info("command exited with status %d", c->status);
	}
}

static void reaped_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct child *c;
	bool list_changed;

	(void)loop;
	(void)revents;
	for (c = reaper.children; c; c = c->next) {
		if (c->pid == w->rpid && !c->main_reaped) {
			main_reaped(c, w->rstatus);
			break;
		}
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
	ev_timer_init(&c->grace_timer, grace_expired_cb, grace_period, 0.);
	c->grace_timer.data = c;
	ev_timer_init(&c->group_poll_timer, group_poll_cb, GROUP_POLL_INTERVAL,
		      GROUP_POLL_INTERVAL);
	c->group_poll_timer.data = c;
	c->next = reaper.children;
	reaper.children = c;
	return c;
}

void child_free(struct child *c)
{
	struct child **p;

	if (!c)
		return;
	/* Nothing of the command may outlive the object that supervises it. */
	if (c->pid != 0) {
		kill(-c->pid, SIGKILL);
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

/* In the new process, between fork and exec. pgleader is single-threaded,
 * so the libc calls below cannot meet a lock held by another thread. */
static _Noreturn void exec_command(const struct child *c, char *const *extra_env,
				   pid_t parent)
{
	struct sigaction default_action = { .sa_handler = SIG_DFL };
	const char *program = c->shell ? "/bin/sh" : c->argv[0];
	sigset_t no_signals;
	int sig, exec_errno;

	setpgid(0, 0);
	/* Armed only now, so if pgleader died since fork nobody would send
	 * it: the parent check closes that window. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1) {
		dprintf(STDERR_FILENO, "pgleader: cannot set parent-death signal: %s\n",
			strerror(errno));
		_exit(126);
	}
	if (getppid() != parent)
		raise(SIGKILL);

	/* Dispositions before the mask: a signal that arrived since fork is
	 * still blocked (child_start blocked all) and must, once unblocked,
	 * meet SIG_DFL, not a copy of libev's handler. */
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &default_action, NULL); /* EINVAL for KILL, STOP, libc's own */
	sigemptyset(&no_signals);
	sigprocmask(SIG_SETMASK, &no_signals, NULL);

	if (close_range(3, ~0U, 0) == -1) {
		long max_fd = sysconf(_SC_OPEN_MAX);

		for (int fd = 3; fd < max_fd; fd++)
			close(fd);
	}

	unsetenv("PGLEADER_DSN");
	/* putenv keeps the caller's strings, which is fine: exec follows. */
	for (; extra_env && *extra_env; extra_env++)
		putenv(*extra_env);

	if (c->shell)
		execl("/bin/sh", "sh", "-c", c->argv[0], (char *)NULL);
	else
		execvp(c->argv[0], c->argv);
	exec_errno = errno;
	dprintf(STDERR_FILENO, "pgleader: cannot run '%s': %s\n", program,
		strerror(exec_errno));
	_exit(exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126);
}

int child_start(struct child *c, char *const *extra_env, char *err, size_t errlen)
{
	sigset_t all_signals, saved_mask;
	pid_t parent = getpid(), pid;
	int fork_errno;

	if (c->pid != 0) {
		snprintf(err, errlen, "command already running (pid %d)", (int)c->pid);
		return -1;
	}
	if (!reaper.loop) {
		snprintf(err, errlen, "child_init_reaper() was not called");
		return -1;
	}
	/* All signals blocked across fork, so none reaches the new process
	 * before exec_command resets the dispositions: a SIGTERM to the group
	 * right after this returns must kill it, not run libev's handler. */
	sigfillset(&all_signals);
	sigprocmask(SIG_SETMASK, &all_signals, &saved_mask);
	pid = fork();
	if (pid == 0)
		exec_command(c, extra_env, parent);
	fork_errno = errno;
	if (pid > 0) {
		/* Both sides call setpgid, so the group exists before either
		 * goes on and child_stop can reach it at once. EACCES here
		 * only means the child has already done it and exec'd. */
		setpgid(pid, pid);
		c->guard_fd = start_guard(pid);
		if (c->guard_fd < 0)
			log_warning("cannot start the guard process (%s): if pgleader "
				    "is killed with SIGKILL, only the command's main "
				    "process dies with it", strerror(errno));
	}
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	if (pid < 0) {
		snprintf(err, errlen, "cannot fork: %s", strerror(fork_errno));
		return -1;
	}
	c->pid = pid;
	c->main_reaped = false;
	c->stopping = false;
	c->status = 0;
	ev_ref(c->loop); /* ev_run keeps going while the command runs */
	log_info("started command (pid %d)", (int)pid);
	return 0;
}

void child_stop(struct child *c)
{
	if (c->pid == 0 || c->stopping)
		return;
	log_info("stopping command (pid %d): sending SIGTERM to process group",
		 (int)c->pid);
	terminate_group(c);
}

void child_kill(struct child *c)
{
	if (c->pid == 0)
		return;
	log_warning("killing command (pid %d): sending SIGKILL to process group",
		    (int)c->pid);
	c->stopping = true;
	ev_timer_stop(c->loop, &c->grace_timer);
	kill(-c->pid, SIGKILL);
}

void child_signal(struct child *c, int sig)
{
	/* Only the main process: the command decides what its children get. */
	if (c->pid == 0 || c->main_reaped)
		return;
	log_debug("forwarding signal %d to command (pid %d)", sig, (int)c->pid);
	kill(c->pid, sig);
}

bool child_running(const struct child *c)
{
	return c->pid != 0;
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}
