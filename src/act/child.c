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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_codes.h"
#include "guard.h"
#include "log.h"
#include "proctree.h"

/* How often to look at a group whose main process is already reaped: a
 * member whose parent is not pgleader (one that left the group, say) ends
 * without a SIGCHLD to us. */
#define GROUP_POLL_INTERVAL 0.05
/* The most processes outside the group one look signals; the next look
 * finds the rest. */
#define STRAYS_MAX 256
/* Room for the pids of other child objects' processes; pgleader has one. */
#define OTHERS_MAX 32

struct child {
	struct ev_loop *loop;
	char *const *argv;
	bool shell;
	const struct job_process *process; /* NULL: pgleader's own */
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
	bool guarded;		/* the guard watches its group (guard.h) */
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
	if (guard_pid() > 0)
		prune[nprune++] = guard_pid();
	for (const struct child *o = reaper.children; o && nprune + 1 <= OTHERS_MAX; o = o->next) {
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

void child_set_process(struct child *c, const struct job_process *p)
{
	c->process = p;
}

void child_on_killed(struct child *c, void (*fn)(void *arg))
{
	c->on_killed = fn;
}

/* The guard (guard.h) stops watching c's group: it is gone, or being
 * killed by pgleader itself. */
static void release_guard(struct child *c)
{
	if (!c->guarded)
		return;
	guard_forget(c->pid);
	c->guarded = false;
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
	if (guard_reaped(w->rpid, w->rstatus))
		return;
	for (c = reaper.children; c; c = c->next)
		if (c->pid == w->rpid && !c->main_reaped)
			main_reaped(c, w->rstatus);
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
	/* The last command object is gone (pgleader is ending): so is the
	 * guard. */
	if (!reaper.children)
		guard_stop();
}

static size_t count_strings(char *const *list)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	return n;
}

/* Whether one of list[0..n) sets the variable of assignment. */
static bool sets_same(char *const *list, size_t n, const char *assignment)
{
	size_t name = strcspn(assignment, "=");

	for (size_t j = 0; j < n; j++)
		if (!strncmp(assignment, list[j], name + 1))
			return true;
	return false;
}

/* The command's environment, built before the new process exists: pgleader's
 * own without PGLEADER_DSN (the password stays with pgleader), then the
 * job's own variables, then extra_env; each set once, by the last of them.
 * NULL when out of memory. */
static char **command_environment(char *const *job_env, char *const *extra_env)
{
	size_t n = count_strings(environ), own = count_strings(job_env),
	       extra = count_strings(extra_env), k = 0;
	char **envp = calloc(n + own + extra + 1, sizeof(*envp));

	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "PGLEADER_DSN=", 13) &&
		    !sets_same(job_env, own, environ[i]) &&
		    !sets_same(extra_env, extra, environ[i]))
			envp[k++] = environ[i];
	for (size_t j = 0; j < own; j++)
		if (!sets_same(extra_env, extra, job_env[j]))
			envp[k++] = job_env[j];
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
static void spawn_failed(const char *what, const char *arg)
{
	char line[512];
	int len = snprintf(line, sizeof(line), "pgleader: cannot %s%s: %s\n", what,
			   arg, strerror(errno));

	if (len >= (int)sizeof(line))
		len = (int)sizeof(line) - 1;
	(void)!write(STDERR_FILENO, line, (size_t)len);
	_exit(EXIT_NOEXEC);
}

/* The 32-bit ids' calls where the plain ones take 16 bits (i386, arm). */
#ifdef SYS_setgroups32
#define SETGROUPS SYS_setgroups32
#define SETRESGID SYS_setresgid32
#define SETRESUID SYS_setresuid32
#else
#define SETGROUPS SYS_setgroups
#define SETRESGID SYS_setresgid
#define SETRESUID SYS_setresuid
#endif

/* The groups, the group, then the user (each change needs the privilege
 * the next one drops), by raw system calls: glibc's wrappers would, in a
 * process with threads, signal the threads they think are theirs, which
 * here are pgleader's. Only this thread's credentials change, and it is
 * the new process's only one. Then the directory, as the user: one it may
 * not enter is an error, as in systemd. */
__attribute__((no_sanitize_address, no_sanitize_undefined))
static void become(const struct job_process *p)
{
	if (p->set_ids) {
		if (syscall(SETGROUPS, p->n_groups, p->groups) == -1)
			spawn_failed("set the supplementary groups", "");
		if (syscall(SETRESGID, p->gid, p->gid, p->gid) == -1)
			spawn_failed("set the group", "");
		if (syscall(SETRESUID, p->uid, p->uid, p->uid) == -1)
			spawn_failed("set the user", "");
	}
	if (p->working_directory && chdir(p->working_directory) == -1)
		spawn_failed("change to directory ", p->working_directory);
}

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
	if (c->process)
		become(c->process);
	/* Armed only now, after the ids (a change of ids clears it), so if
	 * pgleader died since the clone nobody would send it: the parent
	 * check closes that window. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		spawn_failed("set parent-death signal", "");
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
	char **envp = command_environment(c->process ? c->process->environment : NULL,
					  extra_env);
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
		c->guarded = true; /* also when it failed: guard.c keeps it to tell a new guard */
		guard_watch(pid, extra_env);
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
