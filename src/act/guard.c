/* guard.c: the one process that kills pgleader's commands if pgleader dies first. */
#include "guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exit_codes.h"
#include "log.h"
#include "proctree.h"

/* The longest message: a header and the marks that fit (the fencing
 * token's come first); one datagram, read whole. */
#define GUARD_MSG_MAX 4096
#define GUARD_MARKS_MAX 32
/* How many times the guard looks for processes to kill: one may fork while
 * it looks. */
#define GUARD_ROUNDS 20
#define STRAYS_MAX 256

enum { GUARD_WATCH = 1, GUARD_FORGET = 2 };

struct guard_header {
	int32_t op;
	int32_t pgid;
};

/* pgleader's side: the guard, and what it was told, to tell a new one. */
struct watched {
	pid_t pgid;
	char *const *marks;
};

static struct {
	int fd;                /* pgleader's end of the socket, or -1 */
	pid_t pid;             /* until reaped, else 0 */
	pid_t owner;           /* the process that started it */
	struct watched *list;
	size_t n, cap;
} g = { .fd = -1 };

/* ---- the guard process ---- */

/* What the guard was told of one command. */
struct entry {
	pid_t pgid;
	char *blob;            /* the marks, NUL-separated */
	char *marks[GUARD_MARKS_MAX + 1];
};

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

/* The guard's last act. The processes that left a group cannot be found
 * by their parents any more: those links died with pgleader, whose orphans
 * went to init. But each still has, as it was at its exec, the environment
 * pgleader gave its command, whose fencing token names this term: the
 * guard kills every process that has all of one command's. */
static void kill_all(struct entry *e, size_t n)
{
	char *const **sets = calloc(n ? n : 1, sizeof(*sets));
	pid_t pids[STRAYS_MAX];
	size_t nsets = 0, found = 1;
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	for (size_t i = 0; i < n; i++) {
		kill(-e[i].pgid, SIGKILL);
		if (sets && e[i].marks[0])
			sets[nsets++] = e[i].marks;
	}
	for (int round = 0; nsets && round < GUARD_ROUNDS && found > 0; round++) {
		found = proctree_with_any_environment(sets, nsets, pids, STRAYS_MAX);
		for (size_t i = 0; i < found && i < STRAYS_MAX; i++)
			kill(pids[i], SIGKILL);
		/* A killed process keeps its environment until it is gone. */
		nanosleep(&tick, NULL);
	}
}

/* One message: a command to watch (its group and marks) or to forget. */
static void take(struct entry **list, size_t *n, const char *msg, size_t len)
{
	struct guard_header hd;
	struct entry *grown, *e;
	size_t k = 0;

	memcpy(&hd, msg, sizeof(hd));
	for (size_t i = 0; hd.op == GUARD_FORGET && i < *n; i++) {
		if ((*list)[i].pgid == hd.pgid) {
			free((*list)[i].blob);
			(*list)[i] = (*list)[--*n];
			return;
		}
	}
	if (hd.op != GUARD_WATCH || !(grown = realloc(*list, (*n + 1) * sizeof(*grown))))
		return;
	*list = grown;
	e = &grown[*n];
	e->pgid = hd.pgid;
	e->marks[0] = NULL;
	e->blob = malloc(len - sizeof(hd) + 1);
	if (e->blob) {
		memcpy(e->blob, msg + sizeof(hd), len - sizeof(hd));
		e->blob[len - sizeof(hd)] = '\0';
		for (char *p = e->blob; p < e->blob + len - sizeof(hd) && k < GUARD_MARKS_MAX;
		     p += strlen(p) + 1)
			e->marks[k++] = p;
		e->marks[k] = NULL;
	}
	++*n;
}

static void guard_main(int fd)
{
	char msg[GUARD_MSG_MAX];
	struct entry *list = NULL;
	size_t n = 0;
	ssize_t len;

	for (;;) {
		len = recv(fd, msg, sizeof(msg), 0);
		if (len == 0)
			break; /* pgleader is gone */
		if (len < 0 && errno != EINTR)
			_exit(EXIT_INTERNAL);
		if (len >= (ssize_t)sizeof(struct guard_header))
			take(&list, &n, msg, (size_t)len);
	}
	kill_all(list, n);
	_exit(EXIT_OK);
}

/* ---- pgleader's side ---- */

/* Forks the guard with every signal blocked (it must not run libev's
 * handlers; SIGKILL still ends it). 0, or -1 with errno. */
static int spawn(void)
{
	sigset_t all_signals, saved_mask;
	int sv[2], saved_errno;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	sigfillset(&all_signals);
	sigprocmask(SIG_SETMASK, &all_signals, &saved_mask);
	pid = fork();
	if (pid == 0) {
		retitle_guard();
		/* nothing of pgleader's but its end of the socket and stderr */
		if (sv[1] > 3)
			close_range(3, (unsigned)sv[1] - 1, 0);
		close_range((unsigned)sv[1] + 1, ~0U, 0);
		guard_main(sv[1]);
	}
	saved_errno = errno;
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		errno = saved_errno;
		return -1;
	}
	g.fd = sv[0];
	g.pid = pid;
	g.owner = getpid();
	return 0;
}

static int tell(int op, pid_t pgid, char *const *marks)
{
	char msg[GUARD_MSG_MAX];
	struct guard_header hd = { op, (int32_t)pgid };
	size_t len = sizeof(hd);

	memcpy(msg, &hd, sizeof(hd));
	for (; marks && *marks && len + strlen(*marks) + 1 <= sizeof(msg); marks++) {
		memcpy(msg + len, *marks, strlen(*marks) + 1);
		len += strlen(*marks) + 1;
	}
	/* Never blocks the loop: a guard that does not read (stopped, say) is
	 * replaced, as a dead one is. */
	return send(g.fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static void drop(void)
{
	if (g.fd >= 0)
		close(g.fd);
	g.fd = -1;
	g.pid = 0;
}

/* A new guard, told every group watched; with a warning when it cannot. */
static int restart(void)
{
	drop();
	if (spawn() < 0) {
		log_warning("cannot start the guard process (%s): if pgleader is killed "
			    "with SIGKILL, only the commands' main processes die with it",
			    strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < g.n; i++) {
		if (tell(GUARD_WATCH, g.list[i].pgid, g.list[i].marks) < 0) {
			log_warning("cannot tell the new guard process (pid %d) of the "
				    "commands: %s", (int)g.pid, strerror(errno));
			kill(g.pid, SIGKILL);
			drop();
			return -1;
		}
	}
	return 0;
}

/* The guard could not be told: it is replaced (killed, so that it cannot
 * act on what it knew) and the new one told everything. */
static int replace(const char *what)
{
	log_warning("cannot tell the guard process (pid %d) %s: %s; starting a new one",
		    (int)g.pid, what, strerror(errno));
	kill(g.pid, SIGKILL);
	return restart();
}

int guard_watch(pid_t pgid, char *const *marks)
{
	struct watched *grown;

	if (g.fd >= 0 && g.owner != getpid()) {
		/* a forked copy of a pgleader: that guard is the other's */
		close(g.fd);
		g.fd = -1;
		g.pid = 0;
		g.n = 0;
	}
	if (g.n == g.cap) {
		size_t cap = g.cap ? g.cap * 2 : 16;

		if (!(grown = realloc(g.list, cap * sizeof(*grown)))) {
			log_warning("out of memory for the guard's list: if pgleader is "
				    "killed with SIGKILL, command %d's group stays", (int)pgid);
			return -1;
		}
		g.list = grown;
		g.cap = cap;
	}
	g.list[g.n++] = (struct watched){ pgid, marks };
	if (g.fd < 0)
		return restart();
	if (tell(GUARD_WATCH, pgid, marks) < 0)
		return replace("of a command");
	return 0;
}

void guard_forget(pid_t pgid)
{
	for (size_t i = 0; i < g.n; i++) {
		if (g.list[i].pgid == pgid) {
			g.list[i] = g.list[--g.n];
			break;
		}
	}
	if (g.fd >= 0 && g.owner == getpid() && tell(GUARD_FORGET, pgid, NULL) < 0)
		replace("that a command ended");
}

void guard_stop(void)
{
	if (g.owner == getpid())
		drop(); /* end of file: the guard exits */
	free(g.list);
	g.list = NULL;
	g.n = g.cap = 0;
}

pid_t guard_pid(void)
{
	return g.owner == getpid() ? g.pid : 0;
}

bool guard_reaped(pid_t pid, int wstatus)
{
	if (pid <= 0 || pid != g.pid || g.owner != getpid())
		return false;
	drop();
	if (g.n == 0)
		return true; /* the next command starts one */
	if (WIFSIGNALED(wstatus))
		log_warning("guard process (pid %d) killed by signal %d: starting a new one",
			    (int)pid, WTERMSIG(wstatus));
	else
		log_warning("guard process (pid %d) exited with status %d: starting a new one",
			    (int)pid, WEXITSTATUS(wstatus));
	restart();
	return true;
}
