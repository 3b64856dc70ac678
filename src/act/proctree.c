/* proctree.c: finds a process's descendants, and processes by environment, in /proc. */
#include "proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The longest environment read: Linux allows a quarter of the stack limit,
 * so a few megabytes; a bigger one is read only this far. */
#define ENVIRONMENT_MAX (4 << 20)

struct proc_entry {
	pid_t pid, ppid, pgid;
};

struct proctree {
	struct proc_entry *procs; /* sorted by pid */
	size_t n;
};

/* The pid of a /proc entry's name, or 0 for anything but a process. */
static pid_t entry_pid(const char *name)
{
	char *end;
	long pid;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	errno = 0;
	pid = strtol(name, &end, 10);
	return *end == '\0' && errno == 0 && pid > 0 ? (pid_t)pid : 0;
}

const char *proctree_stat_fields(int dir_fd, const char *name, char *buf, size_t size)
{
	char path[64];
	const char *comm_end;
	ssize_t len;
	int fd;

	if (size < 2)
		return NULL;
	snprintf(path, sizeof(path), "%s/stat", name);
	fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	len = read(fd, buf, size - 1);
	close(fd);
	if (len <= 0)
		return NULL;
	buf[len] = '\0';
	/* "pid (comm) state ...": comm may hold spaces and ')' */
	comm_end = strrchr(buf, ')');
	return comm_end ? comm_end + 1 : NULL;
}

/* Reads pid's parent and group into e: 1 when read, 0 when the process is
 * gone (it exited since the directory was read), -1 with errno set when it
 * could not be read for any other reason (no descriptor left, say), which
 * must not pass for "gone". */
static int read_stat(pid_t pid, struct proc_entry *e)
{
	char name[32], buf[1024];
	const char *fields;
	int ppid, pgid;

	snprintf(name, sizeof(name), "/proc/%d", (int)pid);
	errno = 0;
	fields = proctree_stat_fields(AT_FDCWD, name, buf, sizeof(buf));
	if (!fields)
		return errno == ENOENT || errno == ESRCH || errno == 0 ? 0 : -1;
	if (sscanf(fields, " %*c %d %d", &ppid, &pgid) != 2)
		return 0;
	e->pid = pid;
	e->ppid = (pid_t)ppid;
	e->pgid = (pid_t)pgid;
	return 1;
}

static int by_pid(const void *a, const void *b)
{
	const struct proc_entry *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static bool append(struct proctree *t, size_t *cap, const struct proc_entry *e)
{
	if (t->n == *cap) {
		size_t new_cap = *cap ? *cap * 2 : 256;
		struct proc_entry *p = realloc(t->procs, new_cap * sizeof(*p));

		if (!p)
			return false;
		t->procs = p;
		*cap = new_cap;
	}
	t->procs[t->n++] = *e;
	return true;
}

/* A descriptor held in reserve for the scans, so that a process whose
 * descriptor table is full (slow HTTP clients, say) can still see which
 * processes are left: it is given back just before a scan and taken again
 * after it. A scan uses one descriptor at a time. */
static int reserve_fd = -1;

/* Closed at exit, so that nothing but 0-2 is open then (valgrind's
 * --track-fds). */
static void release_reserve(void)
{
	if (reserve_fd >= 0)
		close(reserve_fd);
	reserve_fd = -1;
}

void proctree_reserve(void)
{
	static bool registered;

	if (!registered)
		registered = atexit(release_reserve) == 0;
	if (reserve_fd < 0)
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The pids in /proc, in *pids (malloc()ed); how many, or -1 with errno. */
static long list_pids(pid_t **pids)
{
	DIR *dir = opendir("/proc");
	struct dirent *d;
	size_t n = 0, cap = 0;
	pid_t *p;

	*pids = NULL;
	if (!dir)
		return -1;
	while ((errno = 0, d = readdir(dir))) {
		pid_t pid = entry_pid(d->d_name);

		if (pid <= 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			p = realloc(*pids, cap * sizeof(*p));
			if (!p) {
				errno = ENOMEM;
				break;
			}
			*pids = p;
		}
		(*pids)[n++] = pid;
	}
	if (errno != 0) { /* readdir or realloc failed: the list is not whole */
		int saved_errno = errno;

		closedir(dir);
		free(*pids);
		*pids = NULL;
		errno = saved_errno;
		return -1;
	}
	closedir(dir);
	return (long)n;
}

/* Reads every listed process's stat into t; false with errno set when one
 * could not be read and was not gone either. */
static bool read_all(struct proctree *t, const pid_t *pids, long n)
{
	struct proc_entry e;
	size_t cap = 0;

	for (long i = 0; i < n; i++) {
		int r = read_stat(pids[i], &e);

		if (r < 0)
			return false;
		if (r > 0 && !append(t, &cap, &e)) {
			errno = ENOMEM;
			return false;
		}
	}
	return true;
}

struct proctree *proctree_read(void)
{
	struct proctree *t = calloc(1, sizeof(*t));
	pid_t *pids = NULL;
	long n = -1;
	bool ok;
	int saved_errno;

	release_reserve();
	if (t)
		n = list_pids(&pids);
	ok = t && n >= 0 && read_all(t, pids, n);
	saved_errno = errno;
	free(pids);
	proctree_reserve();
	if (!ok) {
		proctree_free(t);
		errno = saved_errno ? saved_errno : ENOMEM;
		return NULL;
	}
	qsort(t->procs, t->n, sizeof(*t->procs), by_pid);
	return t;
}

void proctree_free(struct proctree *t)
{
	if (!t)
		return;
	free(t->procs);
	free(t);
}

static bool contains(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* The index of pid in t, or -1. */
static long find(const struct proctree *t, pid_t pid)
{
	struct proc_entry key = { .pid = pid };
	const struct proc_entry *e = bsearch(&key, t->procs, t->n, sizeof(key), by_pid);

	return e ? (long)(e - t->procs) : -1;
}

/* Marks in below[] every process under root, one pass per generation: a
 * process is below root when its parent is root or below it. */
static void mark_below(const struct proctree *t, pid_t root, const pid_t *prune,
		       size_t nprune, bool *below)
{
	bool grew = true;

	while (grew) {
		grew = false;
		for (size_t i = 0; i < t->n; i++) {
			const struct proc_entry *e = &t->procs[i];
			long parent;

			if (below[i] || e->pid == root || contains(prune, nprune, e->pid))
				continue;
			parent = find(t, e->ppid);
			if (e->ppid == root || (parent >= 0 && below[parent]))
				below[i] = grew = true;
		}
	}
}

size_t proctree_below(const struct proctree *t, pid_t root, const pid_t *prune,
		      size_t nprune, pid_t skip_pgid, pid_t *out, size_t max)
{
	bool *below = calloc(t->n ? t->n : 1, sizeof(*below));
	size_t count = 0;

	if (!below)
		return 0;
	mark_below(t, root, prune, nprune, below);
	for (size_t i = 0; i < t->n; i++) {
		if (!below[i] || (skip_pgid > 0 && t->procs[i].pgid == skip_pgid))
			continue;
		if (count < max)
			out[count] = t->procs[i].pid;
		count++;
	}
	free(below);
	return count;
}

/* Reads /proc/PID/environ whole, up to ENVIRONMENT_MAX; *len excludes the
 * terminating NUL added after it. NULL when it cannot be read. */
static char *read_environment(int proc_fd, pid_t pid, size_t *len)
{
	char path[32], *buf = NULL, *p;
	size_t cap = 0;
	ssize_t n = 1;
	int fd;

	snprintf(path, sizeof(path), "%d/environ", (int)pid);
	fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	*len = 0;
	while (n > 0 && cap < ENVIRONMENT_MAX) {
		if (*len + 1 >= cap) {
			cap = cap ? cap * 2 : 4096;
			p = realloc(buf, cap);
			if (!p)
				break;
			buf = p;
		}
		n = read(fd, buf + *len, cap - *len - 1);
		if (n > 0)
			*len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

/* Whether the NUL-separated strings env[0..len) hold every one of vars. */
static bool holds_all(const char *env, size_t len, char *const *vars)
{
	for (; *vars; vars++) {
		const char *s = env;
		bool found = false;

		while (!found && s < env + len) {
			found = strcmp(s, *vars) == 0;
			s += strlen(s) + 1;
		}
		if (!found)
			return false;
	}
	return true;
}

/* Whether env holds all of one of sets[0..nsets), none of them empty. */
static bool holds_one_set(const char *env, size_t len, char *const *const *sets,
			  size_t nsets)
{
	for (size_t i = 0; i < nsets; i++)
		if (holds_all(env, len, sets[i]))
			return true;
	return false;
}

size_t proctree_with_any_environment(char *const *const *sets, size_t nsets,
				     pid_t *out, size_t max)
{
	DIR *dir = opendir("/proc");
	pid_t self = getpid();
	struct dirent *d;
	size_t count = 0;

	for (size_t i = 0; i < nsets; i++)
		if (!sets[i] || !*sets[i])
			nsets = 0; /* an empty set would match every process */
	if (!dir || nsets == 0) {
		if (dir)
			closedir(dir);
		return 0;
	}
	while ((d = readdir(dir))) {
		pid_t pid = entry_pid(d->d_name);
		size_t len;
		char *env;

		if (pid <= 0 || pid == self)
			continue;
		env = read_environment(dirfd(dir), pid, &len);
		if (env && holds_one_set(env, len, sets, nsets)) {
			if (count < max)
				out[count] = pid;
			count++;
		}
		free(env);
	}
	closedir(dir);
	return count;
}

size_t proctree_with_environment(char *const *vars, pid_t *out, size_t max)
{
	return proctree_with_any_environment(&vars, 1, out, max);
}
