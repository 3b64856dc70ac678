/* pgtemp.c: a throwaway PostgreSQL for the unit tests (pgtemp.h). */
#include "pgtemp.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char base[64];          /* the private directory */
static char conninfo[256];
static pid_t server = -1;
static pid_t owner = -1;       /* the process that started it: check forks */

static const char *bindir(void)
{
	const char *d = getenv("PG_BINDIR");

	return d && *d ? d : PGTEMP_BINDIR_DEFAULT;
}

static void die(const char *what)
{
	fprintf(stderr, "pgtemp: %s (server binaries in %s; tests/install-deps.sh)\n",
		what, bindir());
	exit(1);
}

/* A free loopback port, as the kernel hands one out. */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* In a forked child: become the postgres user when root, output to log,
 * die with the parent, exec argv. */
static void exec_as_pg(char *const argv[], const char *log, pid_t parent)
{
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam("postgres");

		if (!pw || setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
			fprintf(stderr, "pgtemp: cannot become the postgres user\n");
			_exit(127);
		}
	}
	/* after the setuid, which clears it */
	prctl(PR_SET_PDEATHSIG, SIGQUIT);
	if (getppid() != parent)
		_exit(127);
	execv(argv[0], argv);
	fprintf(stderr, "pgtemp: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static pid_t spawn(char *const argv[], const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0)
		exec_as_pg(argv, log, parent);
	return pid;
}

static void print_log(void)
{
	char path[128], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/log", base);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(stderr, "pgtemp log: %s", line);
	fclose(f);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void stop(void)
{
	int status;

	if (getpid() != owner)
		return; /* a forked test's exit: the server is its parent's */
	if (server > 0) {
		kill(server, SIGINT); /* fast shutdown */
		for (int i = 0; i < 1000 && waitpid(server, &status, WNOHANG) == 0; i++)
			usleep(10000);
		if (kill(server, SIGKILL) == 0)
			waitpid(server, &status, 0);
		server = -1;
	}
	if (base[0] && !getenv("PGTEMP_KEEP"))
		nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void initdb(void)
{
	char prog[256], data[128], log[128];
	int status;
	pid_t pid;

	snprintf(prog, sizeof(prog), "%s/initdb", bindir());
	snprintf(data, sizeof(data), "%s/data", base);
	snprintf(log, sizeof(log), "%s/log", base);
	if (access(prog, X_OK) != 0)
		die("no initdb");
	char *argv[] = { prog, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
			 "--locale=C", "--no-sync", "--no-instructions", NULL };
	if ((pid = spawn(argv, log)) < 0 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		print_log();
		die("initdb failed");
	}
}

/* Starts the server on a fresh port; true once it answers. */
static bool start_server(void)
{
	char prog[256], data[128], log[128], sock[128], port[16];
	int status, p = free_port();
	struct timespec nap = { 0, 20 * 1000 * 1000 };

	snprintf(prog, sizeof(prog), "%s/postgres", bindir());
	snprintf(data, sizeof(data), "%s/data", base);
	snprintf(log, sizeof(log), "%s/log", base);
	snprintf(sock, sizeof(sock), "%s/sock", base);
	snprintf(port, sizeof(port), "%d", p);
	char *argv[] = { prog, "-D", data, "-p", port, "-k", sock,
			 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
			 "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
			 "-c", "shared_buffers=16MB", "-c", "max_connections=40",
			 "-c", "logging_collector=off", NULL };
	if (p < 0 || (server = spawn(argv, log)) < 0)
		die("cannot start postgres");
	snprintf(conninfo, sizeof(conninfo), "host=%s port=%d dbname=postgres", sock, p);
	for (int i = 0; i < 1500; i++) { /* 30 s */
		char probe[300];

		snprintf(probe, sizeof(probe), "%s user=postgres", conninfo);
		if (PQping(probe) == PQPING_OK)
			return true;
		if (waitpid(server, &status, WNOHANG) == server) {
			server = -1;
			return false;
		}
		nanosleep(&nap, NULL);
	}
	return false;
}

void pgtemp_start(void)
{
	char sock[128];
	struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;

	if (server > 0)
		return;
	if (geteuid() == 0 && !pw)
		die("running as root needs the 'postgres' system user");
	snprintf(base, sizeof(base), "/tmp/pgl-unit-XXXXXX");
	if (!mkdtemp(base))
		die("cannot make a directory in /tmp");
	owner = getpid();
	atexit(stop);
	snprintf(sock, sizeof(sock), "%s/sock", base);
	if (mkdir(sock, 0700) != 0 || chmod(base, 0755) != 0 ||
	    (pw && (chown(base, pw->pw_uid, pw->pw_gid) || chown(sock, pw->pw_uid, pw->pw_gid))))
		die("cannot prepare the directory");
	initdb();
	/* another program may take the free port first */
	for (int tries = 0; !start_server(); tries++) {
		if (tries == 2) {
			print_log();
			die("postgres did not start");
		}
	}
}

const char *pgtemp_conninfo(void)
{
	return conninfo;
}

PGconn *pgtemp_connect_as(const char *role, const char *app)
{
	char info[512];
	PGconn *c;

	snprintf(info, sizeof(info), "%s options='-c client_min_messages=warning' user=%s%s%s",
		 conninfo, role,
		 app ? " application_name=" : "", app ? app : "");
	c = PQconnectdb(info);
	if (PQstatus(c) != CONNECTION_OK)
		ck_abort_msg("pgtemp: cannot connect as %s: %s", role, PQerrorMessage(c));
	return c;
}

PGconn *pgtemp_connect(const char *app)
{
	return pgtemp_connect_as("postgres", app);
}
