/* hook.c: a job's on_failure command and the like: forked, fed its stdin
 * from a buffer without blocking the loop, bounded by a timeout. */
#include "hook.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct hook {
	struct ev_loop *loop;
	pid_t pid;
	ev_child reaped;
	ev_timer limit;
	ev_io feed;
	char *input;
	size_t len, at;
	double grace;
	bool timed_out, killed;
	hook_done_fn fn;
	void *arg;
};

static void stop_feed(struct hook *h)
{
	if (h->feed.fd >= 0) {
		ev_io_stop(h->loop, &h->feed);
		close(h->feed.fd);
		h->feed.fd = -1;
	}
}

void hook_free(struct hook *h)
{
	if (!h)
		return;
	if (h->pid > 0) {
		kill(-h->pid, SIGKILL);
		ev_child_stop(h->loop, &h->reaped);
	}
	ev_timer_stop(h->loop, &h->limit);
	stop_feed(h);
	free(h->input);
	free(h);
}

static void reaped_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct hook *h = w->data;
	int st = w->rstatus;
	int status = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);

	(void)loop;
	(void)revents;
	kill(-h->pid, SIGKILL); /* what it left in its group */
	h->pid = 0;
	ev_child_stop(h->loop, &h->reaped);
	h->fn(h->arg, status, h->timed_out);
	hook_free(h);
}

/* The timeout: SIGTERM to the group, then SIGKILL after the grace period. */
static void limit_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct hook *h = w->data;

	(void)revents;
	if (h->pid <= 0)
		return;
	kill(-h->pid, h->timed_out ? SIGKILL : SIGTERM);
	if (!h->timed_out) {
		h->timed_out = true;
		ev_timer_set(w, h->grace > 0 ? h->grace : 0.001, 0.);
		ev_timer_start(loop, w);
	}
}

/* Writes what the pipe takes; closes it at the end (or when the command
 * stops reading: EPIPE, SIGPIPE being ignored by pgleader). */
static void feed_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct hook *h = w->data;
	ssize_t n;

	(void)loop;
	(void)revents;
	while (h->at < h->len) {
		n = write(w->fd, h->input + h->at, h->len - h->at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		h->at += (size_t)n;
	}
	stop_feed(h);
}

/* pgleader's environment without PGLEADER_DSN and the names extra_env
 * sets, then extra_env: made before the fork, so that the new process
 * only execs (no allocation there). The strings are borrowed. */
static char **hook_environment(char *const *extra_env)
{
	size_t n = 0, extra = 0, k = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	while (extra_env && extra_env[extra])
		extra++;
	if (!(envp = calloc(n + extra + 1, sizeof(*envp))))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t name = strcspn(environ[i], "=");
		bool drop = !strncmp(environ[i], "PGLEADER_DSN=", 13);

		for (size_t j = 0; j < extra && !drop; j++)
			drop = !strncmp(environ[i], extra_env[j], name + 1);
		if (!drop)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < extra; j++)
		envp[k++] = extra_env[j];
	return envp;
}

/* In the new process: its own group, default signals, the pipe as stdin. */
static void exec_hook(const char *command, char *const *envp, int in)
{
	char *const argv[] = { "sh", "-c", (char *)command, NULL };
	sigset_t none;

	setpgid(0, 0);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (in != STDIN_FILENO) {
		dup2(in, STDIN_FILENO);
		close(in);
	}
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	execve("/bin/sh", argv, envp);
	_exit(127);
}

static bool start_feed(struct hook *h, int fd, const char *input, size_t len)
{
	if (len > 0 && !(h->input = malloc(len)))
		return false;
	if (len > 0)
		memcpy(h->input, input, len);
	h->len = len;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	ev_io_init(&h->feed, feed_cb, fd, EV_WRITE);
	h->feed.data = h;
	if (len == 0) {
		stop_feed(h); /* an empty stdin: at its end at once */
		return true;
	}
	ev_io_start(h->loop, &h->feed);
	return true;
}

struct hook *hook_start(struct ev_loop *loop, const char *command,
			char *const *extra_env, const char *input, size_t len,
			double timeout, double grace, hook_done_fn fn, void *arg,
			char *err, size_t errlen)
{
	struct hook *h = calloc(1, sizeof(*h));
	char **envp = hook_environment(extra_env);
	int p[2] = { -1, -1 };

	if (!h || !envp || pipe(p) < 0) {
		snprintf(err, errlen, "cannot start on_failure: %s",
			 strerror(h && envp ? errno : ENOMEM));
		free(h);
		free(envp);
		return NULL;
	}
	*h = (struct hook){ .loop = loop, .grace = grace, .fn = fn, .arg = arg };
	h->feed.fd = -1;
	h->pid = fork();
	if (h->pid == 0)
		exec_hook(command, envp, p[0]);
	free(envp);
	close(p[0]);
	if (h->pid < 0 || !start_feed(h, p[1], input, len)) {
		snprintf(err, errlen, "cannot start on_failure: %s", strerror(errno));
		if (h->pid > 0)
			kill(h->pid, SIGKILL); /* reaped by the daemon's reaper */
		if (h->feed.fd < 0)
			close(p[1]);
		h->pid = 0;
		hook_free(h);
		return NULL;
	}
	setpgid(h->pid, h->pid);
	ev_child_init(&h->reaped, reaped_cb, h->pid, 0);
	h->reaped.data = h;
	ev_child_start(loop, &h->reaped);
	ev_timer_init(&h->limit, limit_cb, timeout > 0 ? timeout : 0.001, 0.);
	h->limit.data = h;
	ev_timer_start(loop, &h->limit);
	return h;
}
