/* test_child.c: child.c against real processes: statuses, stopping, groups, inheritance; stdfd.c. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "proctree.h"
#include "stdfd.h"

#define TEST_TIMEOUT 20
/* bits of signals 32 and 33 in /proc/PID/status masks (bit N-1 = signal N) */
#define GLIBC_INTERNAL_SIGNALS ((1ULL << 31) | (1ULL << 32))
#define NOEXEC_FILE "@noexec" /* stands for a temporary file without x bits */

static struct ev_loop *loop;
static char tmpdir[64];

/* Everything a test starts, so that it can be ended even when the test
 * fails. Raw pids are processes not (or no longer) under a child object,
 * dropped once reaped so that a reused pid is never signalled. */
static struct child *started_children[8];
static pid_t started_pids[8];

static void end_started_processes(void)
{
	for (size_t i = 0; i < sizeof(started_children) / sizeof(*started_children); i++) {
		child_free(started_children[i]); /* SIGKILLs a running group */
		started_children[i] = NULL;
	}
	for (size_t i = 0; i < sizeof(started_pids) / sizeof(*started_pids); i++) {
		if (started_pids[i] > 0) {
			kill(-started_pids[i], SIGKILL);
			kill(started_pids[i], SIGKILL);
		}
		started_pids[i] = 0;
	}
}

static void remove_tmpdir(void)
{
	DIR *dir = opendir(tmpdir);
	struct dirent *e;

	if (dir) {
		while ((e = readdir(dir)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(dir), e->d_name, 0);
		closedir(dir);
	}
	rmdir(tmpdir);
}

/* Check's fork mode _exits on a failed assertion, without teardown. */
static void clean_up_before_failing(void)
{
	end_started_processes();
	remove_tmpdir();
}

static void track_pid(pid_t pid)
{
	for (size_t i = 0; i < sizeof(started_pids) / sizeof(*started_pids); i++) {
		if (started_pids[i] == 0) {
			started_pids[i] = pid;
			return;
		}
	}
	clean_up_before_failing();
	ck_abort_msg("too many tracked pids");
}

static void untrack_pid(pid_t pid)
{
	for (size_t i = 0; i < sizeof(started_pids) / sizeof(*started_pids); i++)
		if (started_pids[i] == pid)
			started_pids[i] = 0;
}

/* Assertions that end the test's processes before failing. */
#define expect(cond)                                                     \
	do {                                                             \
		if (!(cond)) {                                           \
			clean_up_before_failing();                       \
			ck_abort_msg("expected %s", #cond);              \
		}                                                        \
	} while (0)
#define expect_int_eq(actual, expected)                                  \
	do {                                                             \
		long long actual_ = (actual), expected_ = (expected);    \
		if (actual_ != expected_) {                              \
			clean_up_before_failing();                       \
			ck_abort_msg("expected %s == %lld, got %lld",    \
				     #actual, expected_, actual_);       \
		}                                                        \
	} while (0)

#define expect_str_eq(actual, expected)                                  \
	do {                                                             \
		const char *actual_ = (actual), *expected_ = (expected); \
		if (!actual_ || strcmp(actual_, expected_) != 0) {       \
			clean_up_before_failing();                       \
			ck_abort_msg("expected %s == \"%s\", got \"%s\"", \
				     #actual, expected_,                  \
				     actual_ ? actual_ : "(null)");       \
		}                                                        \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A path in the test's directory; the last 8 stay valid, enough for the
 * arguments of one snprintf. */
static const char *path_in_tmpdir(const char *name)
{
	static char paths[8][128];
	static unsigned next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", tmpdir, name);
	return p;
}

static bool read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	return true;
}

static pid_t read_pid(const char *path)
{
	char buf[32];

	return read_file(path, buf, sizeof(buf)) ? (pid_t)atoi(buf) : 0;
}

static bool wait_for_file(const char *path, double timeout)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	double deadline = now() + timeout;

	while (access(path, F_OK) != 0) {
		if (now() > deadline)
			return false;
		nanosleep(&tick, NULL);
	}
	return true;
}

/* Whether a "SigBlk:"-style line of our own /proc status has any bit set. */
static bool signal_mask_line_is_set(const char *name)
{
	char status[8192];
	const char *line;

	if (!read_file("/proc/self/status", status, sizeof(status)))
		return false;
	line = strstr(status, name);
	return line && strtoull(line + strlen(name), NULL, 16) != 0;
}

/* The state letter of /proc/PID/stat ('S' sleeping, 'Z' zombie), or 0. */
static char process_state(pid_t pid)
{
	char path[64], stat[512];
	const char *end_of_name;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!read_file(path, stat, sizeof(stat)))
		return 0;
	end_of_name = strrchr(stat, ')');
	return end_of_name && end_of_name[1] == ' ' ? end_of_name[2] : 0;
}

static bool process_gone(pid_t pid)
{
	return kill(pid, 0) == -1 && errno == ESRCH;
}

/* What on_gone saw. */
struct gone_record {
	pid_t pgid;		/* filled in by start_command */
	int calls;
	int status;
	double at;
	bool group_empty;	/* at the moment on_gone was called */
	pid_t escapee;		/* a process outside the group, when set */
	bool escapee_gone;	/* at the moment on_gone was called */
};

static void record_gone_cb(void *arg, int status)
{
	struct gone_record *r = arg;

	r->calls++;
	r->status = status;
	r->at = now();
	r->group_empty = process_gone(-r->pgid); /* the whole group */
	if (r->escapee > 0)
		r->escapee_gone = process_gone(r->escapee);
	ev_break(loop, EVBREAK_ONE);
}

static void break_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ONE);
}

static void run_loop_for(double seconds)
{
	ev_timer timer;

	ev_timer_init(&timer, break_cb, seconds, 0.);
	ev_now_update(loop);
	ev_timer_start(loop, &timer);
	while (ev_is_active(&timer))
		ev_run(loop, 0);
}

static bool run_until_gone(struct gone_record *r, double timeout)
{
	ev_timer guard;

	ev_timer_init(&guard, break_cb, timeout, 0.);
	ev_now_update(loop);
	ev_timer_start(loop, &guard);
	while (r->calls == 0 && ev_is_active(&guard))
		ev_run(loop, 0);
	ev_timer_stop(loop, &guard);
	return r->calls > 0;
}

static struct child *new_child(char *const *argv, bool shell, double grace,
			       struct gone_record *r)
{
	struct child *c = child_new(loop, argv, shell, grace, record_gone_cb, r);

	expect(c != NULL);
	for (size_t i = 0; i < sizeof(started_children) / sizeof(*started_children); i++) {
		if (!started_children[i]) {
			started_children[i] = c;
			return c;
		}
	}
	clean_up_before_failing();
	ck_abort_msg("too many children");
	return NULL;
}

static void free_child(struct child *c)
{
	for (size_t i = 0; i < sizeof(started_children) / sizeof(*started_children); i++)
		if (started_children[i] == c)
			started_children[i] = NULL;
	child_free(c);
}

/* Starts c with fd target_fd of the command (1 or 2) going to path, or
 * inheriting ours when path is NULL. */
static void start_command(struct child *c, char *const *env, struct gone_record *r,
			  int target_fd, const char *path)
{
	char err[256] = "";
	int saved = -1, fd, rc;

	if (path) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		expect(fd >= 0);
		fflush(NULL);
		saved = fcntl(target_fd, F_DUPFD_CLOEXEC, 3);
		expect(saved >= 0);
		dup2(fd, target_fd);
		close(fd);
	}
	rc = child_start(c, env, err, sizeof(err));
	if (path) {
		dup2(saved, target_fd);
		close(saved);
	}
	if (rc != 0) {
		clean_up_before_failing();
		ck_abort_msg("child_start failed: %s", err);
	}
	r->pgid = child_pid(c);
	expect(r->pgid > 0);
	expect(child_running(c));
	/* The group exists and is the command's own as soon as start returns. */
	expect_int_eq(getpgid(r->pgid), r->pgid);
}

static sigset_t saved_mask;
static struct sigaction saved_term_action, saved_hup_action;

static void setup(void)
{
	loop = EV_DEFAULT;
	ck_assert_int_eq(child_init_reaper(loop), 0);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_child.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	sigprocmask(SIG_SETMASK, NULL, &saved_mask);
	sigaction(SIGTERM, NULL, &saved_term_action);
	sigaction(SIGHUP, NULL, &saved_hup_action);
}

static void teardown(void)
{
	end_started_processes();
	sigprocmask(SIG_SETMASK, &saved_mask, NULL);
	sigaction(SIGTERM, &saved_term_action, NULL);
	sigaction(SIGHUP, &saved_hup_action, NULL);
	unsetenv("PGLEADER_DSN");
	unsetenv("PGLEADER_NODE_ID");
	unsetenv("PGLEADER_TEST_INHERITED");
	remove_tmpdir();
}

struct exit_case {
	bool shell;
	const char *argv[4];
	int status;
	const char *exec_error; /* strerror in our one stderr line, or NULL */
};

static const struct exit_case exit_cases[] = {
	{ true, { "exit 0" }, 0, NULL },
	{ true, { "exit 7" }, 7, NULL },
	{ true, { "kill -TERM $$" }, 128 + SIGTERM, NULL },
	{ true, { "kill -KILL $$" }, 128 + SIGKILL, NULL },
	{ true, { "pgleader-test-no-such-command" }, 127, NULL }, /* sh says so */
	{ true, { NOEXEC_FILE }, 126, NULL },
	{ false, { "/bin/sh", "-c", "exit 7" }, 7, NULL },
	{ false, { "true" }, 0, NULL }, /* found in PATH */
	{ false, { "false" }, 1, NULL },
	{ false, { "/nonexistent/pgleader-test" }, 127, "No such file or directory" },
	{ false, { "pgleader-test-no-such-command" }, 127, "No such file or directory" },
	{ false, { "/etc/passwd/x" }, 127, "Not a directory" },
	{ false, { NOEXEC_FILE }, 126, "Permission denied" },
	{ false, { "/tmp" }, 126, "Permission denied" },
};

START_TEST(test_exit_status)
{
	const struct exit_case *ec = &exit_cases[_i];
	const char *noexec = path_in_tmpdir("noexec.sh");
	const char *errfile = path_in_tmpdir("stderr");
	char *argv[4] = { NULL };
	char output[4096], expected[512];
	struct gone_record r = { 0 };
	struct child *c;
	FILE *f;

	f = fopen(noexec, "w");
	expect(f != NULL);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	expect(chmod(noexec, 0644) == 0);
	for (int i = 0; i < 3 && ec->argv[i]; i++)
		argv[i] = strcmp(ec->argv[i], NOEXEC_FILE) == 0 ? (char *)noexec
							       : (char *)ec->argv[i];

	c = new_child(argv, ec->shell, 5.0, &r);
	start_command(c, NULL, &r, STDERR_FILENO, errfile);
	expect(run_until_gone(&r, 10.0));
	expect_int_eq(r.status, ec->status);
	expect(r.group_empty);
	expect(!child_running(c));
	expect_int_eq(child_pid(c), 0);
	if (ec->exec_error) {
		expect(read_file(errfile, output, sizeof(output)));
		snprintf(expected, sizeof(expected), "pgleader: cannot run '%s': %s\n",
			 argv[0], ec->exec_error);
		expect(strstr(output, expected) != NULL);
		/* One line, not one per attempt. */
		expect(strstr(strstr(output, expected) + 1, "pgleader:") == NULL);
	}
}
END_TEST

START_TEST(test_stop_is_graceful)
{
	char *argv[] = { "sleep", "30", NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, false, 10.0, &r);
	double stopped;

	start_command(c, NULL, &r, 0, NULL);
	stopped = now();
	child_stop(c);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 128 + SIGTERM);
	expect(r.at - stopped < 5.0); /* SIGTERM did it, not the SIGKILL at 10s */
	expect(r.group_empty);
}
END_TEST

START_TEST(test_stop_escalates_to_sigkill)
{
	char cmd[256];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 0.5, &r);
	double stopped;

	snprintf(cmd, sizeof(cmd), "trap '' TERM; : > %s; exec sleep 30",
		 path_in_tmpdir("ready"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	stopped = now();
	child_stop(c);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 128 + SIGKILL);
	/* ev timers never fire early; the upper bound allows a loaded host. */
	expect(r.at - stopped >= 0.5);
	expect(r.at - stopped < 2.5);
	expect(r.group_empty);
}
END_TEST

START_TEST(test_second_stop_does_not_extend_grace)
{
	char cmd[256];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 1.0, &r);
	double stopped;

	snprintf(cmd, sizeof(cmd), "trap '' TERM; : > %s; exec sleep 30",
		 path_in_tmpdir("ready"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	stopped = now();
	child_stop(c);
	run_loop_for(0.6);
	expect_int_eq(r.calls, 0);
	child_stop(c); /* a restarted grace period would end at 1.6s */
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 128 + SIGKILL);
	expect(r.at - stopped >= 1.0);
	expect(r.at - stopped < 1.5);
}
END_TEST

START_TEST(test_kill_is_immediate)
{
	char cmd[256];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 10.0, &r);
	double killed;

	snprintf(cmd, sizeof(cmd), "trap '' TERM; : > %s; exec sleep 30",
		 path_in_tmpdir("ready"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	child_stop(c);
	killed = now();
	child_kill(c);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 128 + SIGKILL);
	expect(r.at - killed < 2.0);
}
END_TEST

START_TEST(test_grandchildren_die_with_the_group)
{
	char cmd[512];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	pid_t grandchild1, grandchild2;

	snprintf(cmd, sizeof(cmd),
		 "sleep 30 & echo $! > %s; sleep 30 & echo $! > %s; : > %s; wait",
		 path_in_tmpdir("g1"), path_in_tmpdir("g2"), path_in_tmpdir("ready"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	grandchild1 = read_pid(path_in_tmpdir("g1"));
	grandchild2 = read_pid(path_in_tmpdir("g2"));
	expect(grandchild1 > 0 && grandchild2 > 0);
	expect_int_eq(getpgid(grandchild1), r.pgid);
	expect_int_eq(getpgid(grandchild2), r.pgid);

	child_stop(c);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 128 + SIGTERM);
	expect(r.group_empty);
	expect(process_gone(grandchild1));
	expect(process_gone(grandchild2));
}
END_TEST

START_TEST(test_leftovers_of_exited_command_are_terminated)
{
	char cmd[256];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	pid_t grandchild;
	double started;

	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > %s; exit 3", path_in_tmpdir("g"));
	started = now();
	start_command(c, NULL, &r, 0, NULL);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 3); /* the main process's, not the leftover's */
	expect(r.group_empty);
	expect(r.at - started < 4.0); /* SIGTERM, not the grace period's end */
	grandchild = read_pid(path_in_tmpdir("g"));
	expect(grandchild > 0);
	expect(process_gone(grandchild));
}
END_TEST

START_TEST(test_gone_waits_for_leftover_ignoring_sigterm)
{
	char cmd[512];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 0.5, &r);
	pid_t grandchild;
	double main_exited;

	snprintf(cmd, sizeof(cmd),
		 "(trap '' TERM; : > %s; exec sleep 30) & echo $! > %s; "
		 "while [ ! -e %s ]; do sleep 0.01; done; : > %s; exit 3",
		 path_in_tmpdir("armed"), path_in_tmpdir("g"), path_in_tmpdir("armed"),
		 path_in_tmpdir("exiting"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("exiting"), 5.0));
	main_exited = now();
	grandchild = read_pid(path_in_tmpdir("g"));
	expect(grandchild > 0);

	run_loop_for(0.25);
	expect_int_eq(r.calls, 0);
	expect(child_running(c));
	expect(kill(grandchild, 0) == 0);

	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 3);
	expect(r.group_empty);
	expect(process_gone(grandchild));
	/* Gone only after the grace period that began when main exited. */
	expect(r.at - main_exited >= 0.45);
	expect(r.at - main_exited < 2.5);
}
END_TEST

START_TEST(test_escaped_orphan_does_not_delay_gone_and_is_reaped)
{
	char cmd[512];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	pid_t orphan;
	double deadline;

	/* setsid takes the process out of the group; it is reparented to us
	 * (the subreaper) when the command exits. */
	/* The pid file is renamed into place: "ready" can appear before the
	 * shell has written $!, so both are waited for. */
	snprintf(cmd, sizeof(cmd),
		 "setsid sh -c ': > %s; exec sleep 2' & echo $! > %s.tmp && mv %s.tmp %s; "
		 "while [ ! -e %s ]; do sleep 0.01; done; exit 0",
		 path_in_tmpdir("ready"), path_in_tmpdir("orphan"),
		 path_in_tmpdir("orphan"), path_in_tmpdir("orphan"),
		 path_in_tmpdir("ready"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	expect(wait_for_file(path_in_tmpdir("orphan"), 5.0));
	orphan = read_pid(path_in_tmpdir("orphan"));
	expect(orphan > 0);
	track_pid(orphan);
	expect(getpgid(orphan) != r.pgid);

	expect(run_until_gone(&r, 1.5));
	expect_int_eq(r.status, 0);
	expect(kill(orphan, 0) == 0); /* still sleeping, not waited for */

	/* libev reaps it when it ends: no zombie is left. */
	deadline = now() + 5.0;
	while (!process_gone(orphan) && now() < deadline)
		run_loop_for(0.05);
	expect(process_gone(orphan));
	untrack_pid(orphan);
	expect_int_eq(r.calls, 1);
}
END_TEST

START_TEST(test_member_reaped_by_an_escaped_parent)
{
	char cmd[1024];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	pid_t member, escaped;
	double main_exited, deadline;

	/* The last member's parent has left the group and reaps it, so no
	 * SIGCHLD tells us the group is empty: only polling can. */
	snprintf(cmd, sizeof(cmd),
		 "perl -e 'my $x = fork // die; if (!$x) { exec \"sleep\", \"30\" } "
		 "setpgrp(0, 0); open(my $f, \">\", \"%s\") or die; print $f \"$x $$\\n\"; "
		 "close($f); open($f, \">\", \"%s\") or die; close($f); "
		 "waitpid($x, 0); sleep 3' & "
		 "while [ ! -e %s ]; do sleep 0.01; done; exit 0",
		 path_in_tmpdir("pids"), path_in_tmpdir("ready"), path_in_tmpdir("ready"));
	start_command(c, NULL, &r, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	main_exited = now();
	{
		char pids[64];
		int n;

		expect(read_file(path_in_tmpdir("pids"), pids, sizeof(pids)));
		n = sscanf(pids, "%d %d", &member, &escaped);
		expect_int_eq(n, 2);
	}
	track_pid(escaped);
	expect_int_eq(getpgid(member), r.pgid);
	expect(getpgid(escaped) != r.pgid);

	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 0);
	expect(r.group_empty);
	expect(process_gone(member));
	expect(r.at - main_exited < 1.5);
	expect(kill(escaped, 0) == 0); /* its exit did not tell us */

	deadline = now() + 8.0;
	while (!process_gone(escaped) && now() < deadline)
		run_loop_for(0.05);
	expect(process_gone(escaped));
	untrack_pid(escaped);
}
END_TEST

/* Reaps pid within 5 s and expects it to have died of SIGKILL. pid may not
 * be ours yet: a grandchild comes to us, the subreaper, only once its
 * parent is gone, which may take a moment after its parent got SIGKILL. */
static void expect_reaped_killed(pid_t pid)
{
	int wstatus = 0;
	pid_t got;
	double deadline = now() + 5.0;

	while ((got = waitpid(pid, &wstatus, WNOHANG)) != pid && now() < deadline) {
		if (got == -1 && errno != ECHILD)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	expect_int_eq(got, pid); /* else it stays tracked, to be killed */
	untrack_pid(pid);
	expect(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
}

/* A stand-in pgleader: a process of its own that starts c's command and
 * waits for its SIGKILL. */
static pid_t start_in_supervisor(struct child *c, char *const *extra_env)
{
	pid_t supervisor = fork();

	expect(supervisor >= 0);
	if (supervisor == 0) {
		char err[256];

		if (child_start(c, extra_env, err, sizeof(err)) != 0)
			_exit(1);
		for (;;)
			pause();
	}
	track_pid(supervisor);
	return supervisor;
}

/* Kills a stand-in pgleader (a forked process that started a command)
 * with SIGKILL, and expects victim, one of the command's processes, to die
 * of SIGKILL too within 5 s. victim's parent is dead by then, so it is ours,
 * the subreaper's: we can see how it ended. */
static void expect_killed_with_supervisor(pid_t supervisor, pid_t victim)
{
	kill(supervisor, SIGKILL);
	expect_reaped_killed(supervisor);
	expect_reaped_killed(victim);
}

/* The parent pid in /proc/PID/stat, or 0. */
static pid_t process_parent(pid_t pid)
{
	char path[64], stat[512];
	const char *end_of_name;
	int ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!read_file(path, stat, sizeof(stat)))
		return 0;
	end_of_name = strrchr(stat, ')');
	if (!end_of_name || sscanf(end_of_name, ") %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/* A process that leaves the group with setsid, writes its pid to the file
 * "escapee" (renamed into place, so complete once it exists) and runs
 * TERM_ACTION on SIGTERM. */
#define ESCAPEE(TERM_ACTION)                                                  \
	"setsid sh -c 'trap " TERM_ACTION " TERM; echo $$ > %s.tmp; "         \
	"mv %s.tmp %s; while :; do sleep 0.05; done'"
/* Takes a second to stop, then leaves the file "termed". */
#define SLOW_TO_STOP "\"sleep 1; : > %s; exit 0\""

/* Waits for the escapee of the command of r; the test ends it whatever
 * happens. */
static pid_t wait_for_escapee(struct gone_record *r)
{
	pid_t escapee;

	expect(wait_for_file(path_in_tmpdir("escapee"), 5.0));
	escapee = read_pid(path_in_tmpdir("escapee"));
	expect(escapee > 0);
	track_pid(escapee);
	expect(getpgid(escapee) != r->pgid);
	expect(getsid(escapee) == escapee);
	r->escapee = escapee;
	return escapee;
}

/* The command runs: <before> ESCAPEE(SLOW_TO_STOP) <after>. */
struct escapee_case {
	const char *before, *after;
	bool orphaned; /* its parent exits at once: it becomes ours */
	bool table_full; /* no descriptor left while it stops (issue 17 6.2) */
	bool stopped; /* SIGSTOPped before the stop: SIGCONT must follow SIGTERM */
};

static const struct escapee_case escapee_cases[] = {
	{ "", " & wait", false, false, false },
	/* a command that traps SIGTERM and takes a second: its escapee is
	 * still its child, not yet ours, at the stop's first sweep, which must
	 * reach it then (a sweep of our direct children only would reach it
	 * after the command exits, and then only with the SIGKILL) */
	{ "trap 'sleep 1; trap - TERM; kill -TERM $$' TERM; ", " & wait", false, false, false },
	{ "", " & wait", false, false, true },
	{ "(", " &); exec sleep 30", true, false, false },
	{ "", " & wait", false, true, false },
	{ "(", " &); exec sleep 30", true, true, false },
};

/* Opens /dev/null into fds until none is left (at most max); how many. */
static size_t fill_descriptor_table(int *fds, size_t max)
{
	size_t n = 0;

	while (n < max && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	return n;
}

/* proctree_below finds every generation below us, however their parents
 * left the group and session: a group (skipped) whose member leaves with
 * setsid, and that one's child. */
START_TEST(test_proctree_finds_every_generation)
{
	int ready[2];
	pid_t group, out[8];
	struct proctree *t;
	size_t n;
	char buf[2];

	expect(pipe(ready) == 0);
	group = fork();
	expect(group >= 0);
	/* each dies with its parent: a failed test ends the top (tracked) */
	if (group == 0) {
		setpgid(0, 0);
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			setsid();
			if (fork() == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				(void)!write(ready[1], "x", 1);
				pause();
			}
			pause();
		}
		pause();
	}
	track_pid(group);
	expect(read(ready[0], buf, 1) == 1);
	t = proctree_read();
	expect(t != NULL);
	n = proctree_below(t, getpid(), NULL, 0, group, out, 8);
	expect_int_eq(n, 2);
	for (size_t i = 0; i < n && i < 8; i++) {
		expect(getpgid(out[i]) != group);
		expect(process_parent(out[i]) != getpid());
	}
	/* pruned: the subtree under the group's top is left out */
	expect_int_eq(proctree_below(t, getpid(), &group, 1, 0, out, 8), 0);
	proctree_free(t);
	kill(-group, SIGKILL);
	for (size_t i = 0; i < n && i < 8; i++)
		kill(out[i], SIGKILL);
	close(ready[0]);
	close(ready[1]);
}
END_TEST

/* The escapee as the case has it when its group is stopped: orphaned
 * (reparented to us, the subreaper), stopped by SIGSTOP, and the
 * descriptor table full (fills[0..n), closed by the caller). */
static void escapee_prepare(const struct escapee_case *ec, pid_t escapee, int *fills,
			    size_t n)
{
	double deadline = now() + 5.0;
	struct rlimit rl;

	if (ec->orphaned) {
		while (process_parent(escapee) != getpid() && now() < deadline)
			run_loop_for(0.02);
		expect_int_eq(process_parent(escapee), getpid());
	}
	deadline = now() + 5.0;
	if (ec->stopped) {
		kill(escapee, SIGSTOP);
		while (process_state(escapee) != 'T' && now() < deadline)
			run_loop_for(0.01);
		expect_int_eq(process_state(escapee), 'T');
	}
	if (ec->table_full) {
		/* a soft limit the fills can reach */
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = 256;
		expect(setrlimit(RLIMIT_NOFILE, &rl) == 0);
		expect(fill_descriptor_table(fills, n) > 0);
		expect(open("/dev/null", O_RDONLY) == -1 && errno == EMFILE);
	}
}

START_TEST(test_setsid_descendant_is_stopped_with_the_group)
{
	const struct escapee_case *ec = &escapee_cases[_i];
	const char *pidfile = path_in_tmpdir("escapee");
	char cmd[512];
	char *argv[] = { cmd, NULL };
	char *bystander_argv[] = { "sleep", "30", NULL };
	struct gone_record r = { 0 }, rb = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	struct child *bystander = new_child(bystander_argv, false, 5.0, &rb);
	pid_t escapee;
	double stopped;
	int fills[256];
	bool gone;

	for (size_t i = 0; i < sizeof(fills) / sizeof(*fills); i++)
		fills[i] = -1;
	/* Another command of the same pgleader is not part of this one. */
	start_command(bystander, NULL, &rb, 0, NULL);
	snprintf(cmd, sizeof(cmd), "%s" ESCAPEE(SLOW_TO_STOP) "%s", ec->before,
		 path_in_tmpdir("termed"), pidfile, pidfile, pidfile, ec->after);
	start_command(c, NULL, &r, 0, NULL);
	escapee = wait_for_escapee(&r);
	escapee_prepare(ec, escapee, fills, sizeof(fills) / sizeof(*fills));
	stopped = now();
	child_stop(c);
	gone = run_until_gone(&r, 8.0);
	for (size_t i = 0; i < sizeof(fills) / sizeof(*fills); i++)
		if (fills[i] >= 0)
			close(fills[i]);
	expect(gone);
	expect_int_eq(r.status, 128 + SIGTERM);
	expect(r.group_empty);
	/* It had SIGTERM, took its second, and was gone before on_gone (a
	 * full descriptor table must not hide it). */
	expect(r.escapee_gone);
	untrack_pid(escapee);
	expect(access(path_in_tmpdir("termed"), F_OK) == 0);
	expect(r.at - stopped >= 0.9);
	expect(r.at - stopped < 4.0); /* by itself, not by the SIGKILL at 5s */
	expect(kill(child_pid(bystander), 0) == 0);
	expect_int_eq(rb.calls, 0);
}
END_TEST

struct escapee_kill_case {
	double grace;
	bool kill_now; /* child_kill right after child_stop */
};

static const struct escapee_kill_case escapee_kill_cases[] = {
	{ 0.5, false },
	{ 10.0, true },
};

START_TEST(test_setsid_descendant_ignoring_sigterm_is_killed)
{
	const struct escapee_kill_case *kc = &escapee_kill_cases[_i];
	const char *pidfile = path_in_tmpdir("escapee");
	char cmd[512];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, kc->grace, &r);
	pid_t escapee;
	double stopped;

	snprintf(cmd, sizeof(cmd), ESCAPEE("\"\"") " & wait", pidfile, pidfile, pidfile);
	start_command(c, NULL, &r, 0, NULL);
	escapee = wait_for_escapee(&r);

	stopped = now();
	child_stop(c);
	if (kc->kill_now)
		child_kill(c);
	expect(run_until_gone(&r, 8.0));
	expect(r.group_empty);
	expect(r.escapee_gone);
	untrack_pid(escapee);
	if (!kc->kill_now)
		expect(r.at - stopped >= kc->grace);
	expect(r.at - stopped < (kc->kill_now ? 1.5 : kc->grace + 2.0));
}
END_TEST

START_TEST(test_setsid_descendant_dies_with_pgleader)
{
	const char *pidfile = path_in_tmpdir("escapee");
	char cmd[512], token[64], other_token[64];
	char *argv[] = { cmd, NULL };
	char *extra_env[] = { "PGLEADER_NODE_ID=guard-test", "PGLEADER_LOCK_KEY=42",
			      token, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	pid_t supervisor, escapee, bystander;
	int wstatus;

	/* The guard knows the command's descendants by the environment
	 * pgleader gave it; a process of another term is not one of them. */
	snprintf(token, sizeof(token), "PGLEADER_FENCING_TOKEN=%d", (int)getpid());
	snprintf(other_token, sizeof(other_token), "PGLEADER_FENCING_TOKEN=%d0",
		 (int)getpid());
	bystander = fork();
	expect(bystander >= 0);
	if (bystander == 0) {
		char *env[] = { extra_env[0], extra_env[1], other_token, NULL };

		execle("/bin/sleep", "sleep", "30", (char *)NULL, env);
		_exit(127);
	}
	track_pid(bystander);

	snprintf(cmd, sizeof(cmd), ESCAPEE("\"\"") " & wait", pidfile, pidfile, pidfile);
	supervisor = start_in_supervisor(c, extra_env);
	expect(wait_for_file(pidfile, 5.0));
	escapee = read_pid(pidfile);
	expect(escapee > 0);
	track_pid(escapee);
	expect(getsid(escapee) == escapee);

	/* The guard killed it, and not the bystander: the guard signals both
	 * in one look, then looks for 0.2 s at most; a SIGKILL takes a moment
	 * to end its process, so the bystander is looked at well after that
	 * (it was seen alive once a guard that killed it too had not yet
	 * ended it). */
	expect_killed_with_supervisor(supervisor, escapee);
	nanosleep(&(struct timespec){ 0, 500 * 1000 * 1000 }, NULL);
	expect(kill(bystander, 0) == 0);
	expect(process_state(bystander) != 'Z');
	expect(waitpid(bystander, &wstatus, WNOHANG) == 0);
}
END_TEST

/* How many children of parent are named pgl-guard. */
static int guards_of(pid_t parent)
{
	DIR *dir = opendir("/proc");
	struct dirent *d;
	int n = 0;

	expect(dir != NULL);
	while ((d = readdir(dir))) {
		char path[300], comm[64] = "";
		pid_t pid = (pid_t)atoi(d->d_name);

		if (pid <= 0 || process_parent(pid) != parent)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
		if (read_file(path, comm, sizeof(comm)) && !strncmp(comm, "pgl-guard", 9))
			n++;
	}
	closedir(dir);
	return n;
}

/* Issue 24: one guard for every command of a pgleader, not one fork of
 * the daemon per start; it still kills every command's descendants when
 * pgleader dies. */
START_TEST(test_one_guard_for_every_command)
{
	char cmds[3][512], *argvs[3][2];
	const char *paths[3];
	struct gone_record r[3];
	struct child *c[3];
	pid_t supervisor, grandchild[3];
	int fds[2];
	char byte;

	for (int i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), "grandchild%d", i);
		paths[i] = path_in_tmpdir(name);
		snprintf(cmds[i], sizeof(cmds[i]),
			 "sleep 30 & echo $! > %s.tmp && mv %s.tmp %s; wait", paths[i], paths[i],
			 paths[i]);
		argvs[i][0] = cmds[i];
		argvs[i][1] = NULL;
		memset(&r[i], 0, sizeof(r[i]));
		c[i] = new_child(argvs[i], true, 5.0, &r[i]);
	}
	expect(pipe(fds) == 0);
	supervisor = fork();
	expect(supervisor >= 0);
	if (supervisor == 0) {
		char err[256];

		for (int i = 0; i < 3; i++)
			if (child_start(c[i], NULL, err, sizeof(err)) != 0)
				_exit(1);
		if (write(fds[1], "", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	track_pid(supervisor);
	close(fds[1]);
	expect(read(fds[0], &byte, 1) == 1);
	close(fds[0]);
	for (int i = 0; i < 3; i++) {
		expect(wait_for_file(paths[i], 5.0));
		grandchild[i] = read_pid(paths[i]);
		expect(grandchild[i] > 0);
		track_pid(grandchild[i]);
	}
	expect(guards_of(supervisor) == 1);
	kill(supervisor, SIGKILL);
	expect_reaped_killed(supervisor);
	for (int i = 0; i < 3; i++)
		expect_reaped_killed(grandchild[i]);
}
END_TEST

START_TEST(test_only_std_fds_are_inherited)
{
	char *argv[] = { "ls", "/proc/self/fd", NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, false, 5.0, &r);
	char output[256];
	int pipe_fds[2];

	/* Descriptors without FD_CLOEXEC, which exec alone would pass on. */
	expect(pipe(pipe_fds) == 0);
	expect(dup2(pipe_fds[0], 50) == 50);
	expect_int_eq(fcntl(50, F_GETFD), 0);
	expect_int_eq(fcntl(pipe_fds[1], F_GETFD), 0);

	start_command(c, NULL, &r, STDOUT_FILENO, path_in_tmpdir("out"));
	close(50);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 0);
	expect(read_file(path_in_tmpdir("out"), output, sizeof(output)));
	/* 3 is the directory ls itself reads. */
	expect_str_eq(output, "0\n1\n2\n3\n");
}
END_TEST

START_TEST(test_signal_mask_and_dispositions_are_clean)
{
	char *status_argv[] = { "grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status", NULL };
	char *sleep_argv[] = { "sleep", "30", NULL };
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	struct gone_record r1 = { 0 }, r2 = { 0 };
	struct child *status_child = new_child(status_argv, false, 5.0, &r1);
	struct child *sleep_child = new_child(sleep_argv, false, 10.0, &r2);
	sigset_t term;
	char output[256];
	unsigned long long blocked = ~0ULL, ignored = ~0ULL;
	double stopped;

	/* What libev or pgleader itself may do with signals. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	sigaction(SIGTERM, &ignore, NULL);
	sigaction(SIGHUP, &ignore, NULL);
	expect(signal_mask_line_is_set("SigBlk:"));
	expect(signal_mask_line_is_set("SigIgn:"));

	start_command(status_child, NULL, &r1, STDOUT_FILENO, path_in_tmpdir("out"));
	expect(run_until_gone(&r1, 8.0));
	expect_int_eq(r1.status, 0);
	expect(read_file(path_in_tmpdir("out"), output, sizeof(output)));
	expect(sscanf(output, "SigBlk:\t%llx\nSigIgn:\t%llx", &blocked, &ignored) == 2);
	expect(blocked == 0);
	/* Signals 32 and 33 are glibc's own (thread cancellation, setxid):
	 * sigaction refuses to change them, whatever state the caller of the
	 * tests left them in, and glibc sets them up itself in any program
	 * that uses threads. Every other signal must be back to SIG_DFL. */
	expect((ignored & ~GLIBC_INTERNAL_SIGNALS) == 0);

	start_command(sleep_child, NULL, &r2, 0, NULL);
	stopped = now();
	child_stop(sleep_child);
	expect(run_until_gone(&r2, 8.0));
	expect_int_eq(r2.status, 128 + SIGTERM);
	expect(r2.at - stopped < 5.0);
}
END_TEST

START_TEST(test_environment)
{
	char *argv[] = { "env", NULL };
	char *extra_env[] = { "PGLEADER_NODE_ID=node-a", "PGLEADER_LOCK_KEY=42",
			      "PGLEADER_FENCING_TOKEN=1234", NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, false, 5.0, &r);
	char output[65536] = "\n";

	setenv("PGLEADER_DSN", "host=db1 password=secret", 1);
	setenv("PGLEADER_NODE_ID", "stale", 1);
	setenv("PGLEADER_TEST_INHERITED", "yes", 1);
	start_command(c, extra_env, &r, STDOUT_FILENO, path_in_tmpdir("out"));
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 0);
	expect(read_file(path_in_tmpdir("out"), output + 1, sizeof(output) - 1));
	expect(strstr(output, "\nPGLEADER_NODE_ID=node-a\n") != NULL);
	expect(strstr(output, "\nPGLEADER_LOCK_KEY=42\n") != NULL);
	expect(strstr(output, "\nPGLEADER_FENCING_TOKEN=1234\n") != NULL);
	expect(strstr(output, "\nPGLEADER_TEST_INHERITED=yes\n") != NULL);
	expect(strstr(output, "stale") == NULL);
	expect(strstr(output, "PGLEADER_DSN") == NULL);
	expect(strstr(output, "secret") == NULL);
	/* Only the command's environment changed. */
	expect_str_eq(getenv("PGLEADER_DSN"), "host=db1 password=secret");
	expect_str_eq(getenv("PGLEADER_NODE_ID"), "stale");
}
END_TEST

START_TEST(test_command_dies_with_pgleader)
{
	char *argv[] = { "sleep", "30", NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, false, 5.0, &r);
	pid_t supervisor, command = 0;
	int fds[2];

	/* A stand-in pgleader that starts the command and then dies by
	 * SIGKILL, with no chance to stop it. */
	expect(pipe(fds) == 0);
	supervisor = fork();
	expect(supervisor >= 0);
	if (supervisor == 0) {
		char err[256];

		close(fds[0]);
		if (child_start(c, NULL, err, sizeof(err)) != 0)
			_exit(1);
		command = child_pid(c);
		if (write(fds[1], &command, sizeof(command)) != sizeof(command))
			_exit(1);
		for (;;)
			pause();
	}
	track_pid(supervisor);
	close(fds[1]);
	expect(read(fds[0], &command, sizeof(command)) == sizeof(command));
	close(fds[0]);
	track_pid(command);
	expect(kill(command, 0) == 0);

	expect_killed_with_supervisor(supervisor, command);
}
END_TEST

START_TEST(test_grandchildren_die_with_pgleader)
{
	char cmd[512], path[128];
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c;
	pid_t supervisor, grandchild = 0;
	double deadline;
	FILE *f;

	/* The command's child records its pid; PR_SET_PDEATHSIG alone would
	 * not reach it, the guard process must. */
	snprintf(path, sizeof(path), "%s/grandchild.pid", tmpdir);
	snprintf(cmd, sizeof(cmd), "sleep 30 & echo $! > %s.tmp && mv %s.tmp %s; wait",
		 path, path, path);
	c = new_child(argv, true, 5.0, &r);
	supervisor = start_in_supervisor(c, NULL);
	deadline = now() + 5.0;
	while (!(f = fopen(path, "r")) && now() < deadline)
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	expect(f != NULL);
	expect(fscanf(f, "%d", &grandchild) == 1);
	fclose(f);
	track_pid(grandchild);
	expect(kill(grandchild, 0) == 0);

	/* The guard killed it. */
	expect_killed_with_supervisor(supervisor, grandchild);
}
END_TEST

START_TEST(test_signal_is_forwarded)
{
	char cmd[512];
	char *trap_argv[] = { cmd, NULL };
	char *sleep_argv[] = { "sleep", "30", NULL };
	struct gone_record r1 = { 0 }, r2 = { 0 };
	struct child *trapping = new_child(trap_argv, true, 5.0, &r1);
	struct child *sleeping = new_child(sleep_argv, false, 5.0, &r2);
	char output[64];
	pid_t grandchild;

	snprintf(cmd, sizeof(cmd),
		 "sleep 30 & echo $! > %s; trap 'echo usr1 > %s.new; mv %s.new %s' USR1; "
		 ": > %s; while :; do sleep 0.05; done",
		 path_in_tmpdir("g"), path_in_tmpdir("got"), path_in_tmpdir("got"),
		 path_in_tmpdir("got"), path_in_tmpdir("ready"));
	start_command(trapping, NULL, &r1, 0, NULL);
	expect(wait_for_file(path_in_tmpdir("ready"), 5.0));
	grandchild = read_pid(path_in_tmpdir("g"));
	expect(grandchild > 0);
	child_signal(trapping, SIGUSR1);
	expect(wait_for_file(path_in_tmpdir("got"), 5.0));
	expect(read_file(path_in_tmpdir("got"), output, sizeof(output)));
	expect_str_eq(output, "usr1\n");
	/* Only the main process got it: the background sleep, for which
	 * SIGUSR1 is fatal, is still asleep. */
	expect(process_state(grandchild) == 'S');
	child_stop(trapping);
	expect(run_until_gone(&r1, 8.0));
	expect_int_eq(r1.status, 128 + SIGTERM);
	expect(process_gone(grandchild));

	/* A signal whose default action kills gives 128+N. */
	start_command(sleeping, NULL, &r2, 0, NULL);
	child_signal(sleeping, SIGHUP);
	expect(run_until_gone(&r2, 8.0));
	expect_int_eq(r2.status, 128 + SIGHUP);

	/* Nothing to forward to, stop or kill now: no effect, no crash. */
	child_signal(sleeping, SIGUSR1);
	child_stop(sleeping);
	child_kill(sleeping);
	expect(!child_running(sleeping));
}
END_TEST

START_TEST(test_restart_and_gone_once)
{
	char cmd[64] = "sleep 30";
	char *argv[] = { cmd, NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, true, 5.0, &r);
	char err[128] = "";

	expect(!child_running(c));
	expect_int_eq(child_pid(c), 0);
	start_command(c, NULL, &r, 0, NULL);
	/* Never two commands at once. */
	expect_int_eq(child_start(c, NULL, err, sizeof(err)), -1);
	expect(strstr(err, "already running") != NULL);

	child_stop(c);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 128 + SIGTERM);
	run_loop_for(0.2);
	expect_int_eq(r.calls, 1);
	expect(!child_running(c));

	/* argv is borrowed: the same object runs what it points at now. */
	snprintf(cmd, sizeof(cmd), "exit 5");
	r.calls = 0;
	start_command(c, NULL, &r, 0, NULL);
	expect(run_until_gone(&r, 8.0));
	expect_int_eq(r.status, 5);
	run_loop_for(0.2);
	expect_int_eq(r.calls, 1);
}
END_TEST

START_TEST(test_free_kills_running_command)
{
	char *argv[] = { "sleep", "30", NULL };
	struct gone_record r = { 0 };
	struct child *c = new_child(argv, false, 5.0, &r);
	pid_t pid;

	start_command(c, NULL, &r, 0, NULL);
	pid = child_pid(c);
	track_pid(pid);
	free_child(c);
	/* The loop is not run, so libev has not reaped it: we can. */
	expect_reaped_killed(pid);
	expect_int_eq(r.calls, 0);
}
END_TEST

/* Descriptor N closed when bit N of closed is set, on a pipe (whose
 * stat is *pipe_st) otherwise; 0, else the number of the check that
 * failed. */
static int stdfd_close(unsigned closed, struct stat *pipe_st)
{
	int pipe_fds[2];

	if (pipe(pipe_fds) != 0 || fstat(pipe_fds[0], pipe_st) != 0)
		return 1;
	for (int fd = 0; fd <= 2; fd++) {
		if (closed & (1U << fd))
			close(fd);
		else if (dup2(pipe_fds[0], fd) != fd)
			return 2;
	}
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	return 0;
}

/* Standard descriptor fd after stdfd_ensure_open: left alone when it was
 * open, else /dev/null, opened for its direction and inherited; 0, else
 * the number of the check that failed. */
static int stdfd_check(int fd, bool was_closed, const struct stat *null_st,
		       const struct stat *pipe_st)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return 3;
	if (!was_closed) /* left alone */
		return st.st_ino != pipe_st->st_ino ? 4 : 0;
	if (!S_ISCHR(st.st_mode) || st.st_rdev != null_st->st_rdev)
		return 5;
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) != (fd == 0 ? O_RDONLY : O_WRONLY))
		return 6;
	if (fcntl(fd, F_GETFD) != 0) /* inherited by the command */
		return 7;
	return 0;
}

/* Run in a process of its own, with descriptor N closed when bit N of
 * closed is set and on a pipe otherwise: 0 when stdfd_ensure_open put
 * /dev/null in exactly the closed ones, else the number of the first
 * check that failed. */
static int stdfd_case(unsigned closed)
{
	struct stat null_st, pipe_st;
	int fd, failed;

	if (stat("/dev/null", &null_st) != 0)
		return 1;
	if ((failed = stdfd_close(closed, &pipe_st)) != 0)
		return failed;
	stdfd_ensure_open();
	for (fd = 0; fd <= 2; fd++)
		if ((failed = stdfd_check(fd, closed & (1U << fd), &null_st, &pipe_st)) != 0)
			return failed;
	/* What pgleader opens next cannot be a standard descriptor. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd > 2 ? 0 : 8;
}

START_TEST(test_closed_std_fds_are_opened_on_dev_null)
{
	unsigned closed = (unsigned)_i; /* every subset of 0, 1, 2 */
	pid_t pid = fork();
	int wstatus;

	expect(pid >= 0);
	if (pid == 0)
		_exit(stdfd_case(closed));
	expect_int_eq(waitpid(pid, &wstatus, 0), pid);
	expect(WIFEXITED(wstatus));
	if (WEXITSTATUS(wstatus) != 0) {
		clean_up_before_failing();
		ck_abort_msg("closed fds mask %u: check %d of stdfd_case failed", closed,
			     WEXITSTATUS(wstatus));
	}
}
END_TEST

static Suite *child_suite(void)
{
	Suite *s = suite_create("child");
	TCase *status = tcase_create("exit status");
	TCase *stopping = tcase_create("stopping");
	TCase *inheritance = tcase_create("inheritance");
	TCase *lifecycle = tcase_create("lifecycle");
	TCase *stdfd = tcase_create("standard descriptors");
	TCase *all[] = { status, stopping, inheritance, lifecycle, stdfd };

	for (size_t i = 0; i < sizeof(all) / sizeof(*all); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		tcase_set_timeout(all[i], TEST_TIMEOUT);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_loop_test(status, test_exit_status, 0,
			    sizeof(exit_cases) / sizeof(*exit_cases));
	tcase_add_test(stopping, test_stop_is_graceful);
	tcase_add_test(stopping, test_stop_escalates_to_sigkill);
	tcase_add_test(stopping, test_second_stop_does_not_extend_grace);
	tcase_add_test(stopping, test_kill_is_immediate);
	tcase_add_test(stopping, test_grandchildren_die_with_the_group);
	tcase_add_test(stopping, test_leftovers_of_exited_command_are_terminated);
	tcase_add_test(stopping, test_gone_waits_for_leftover_ignoring_sigterm);
	tcase_add_test(stopping, test_escaped_orphan_does_not_delay_gone_and_is_reaped);
	tcase_add_test(stopping, test_member_reaped_by_an_escaped_parent);
	tcase_add_test(stopping, test_proctree_finds_every_generation);
	tcase_add_loop_test(stopping, test_setsid_descendant_is_stopped_with_the_group, 0,
			    sizeof(escapee_cases) / sizeof(*escapee_cases));
	tcase_add_loop_test(stopping, test_setsid_descendant_ignoring_sigterm_is_killed, 0,
			    sizeof(escapee_kill_cases) / sizeof(*escapee_kill_cases));
	tcase_add_test(inheritance, test_only_std_fds_are_inherited);
	tcase_add_test(inheritance, test_signal_mask_and_dispositions_are_clean);
	tcase_add_test(inheritance, test_environment);
	tcase_add_test(inheritance, test_command_dies_with_pgleader);
	tcase_add_test(inheritance, test_grandchildren_die_with_pgleader);
	tcase_add_test(inheritance, test_setsid_descendant_dies_with_pgleader);
	tcase_add_test(inheritance, test_one_guard_for_every_command);
	tcase_add_test(lifecycle, test_signal_is_forwarded);
	tcase_add_test(lifecycle, test_restart_and_gone_once);
	tcase_add_test(lifecycle, test_free_kills_running_command);
	tcase_add_loop_test(stdfd, test_closed_std_fds_are_opened_on_dev_null, 0, 8);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(child_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
