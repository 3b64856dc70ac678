/* main.c: command line to configuration, the event loop, and the exit code. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <ev.h>
#include <libpq-fe.h>

#include "dynlib.h"
#include "child.h"
#include "config.h"
#include "election.h"
#include "exit_codes.h"
#include "http.h"
#include "jobs.h"
#include "controls_cli.h"
#include "trigger_cli.h"
#include "ledger_cli.h"
#include "metrics.h"
#include "log.h"
#include "notify.h"
#include "status.h"
#include "stdfd.h"
#include "supervisor.h"
#include "version.h"

/* Reads the configuration. Returns -1 to go on, else the exit code after
 * --help, --version or one line about what is wrong. */
static int load(struct config *cfg, int argc, char **argv)
{
	char err[LOG_MSG_MAX];
	int code = EXIT_USAGE;

	switch (config_load(cfg, argc, argv, err, sizeof(err))) {
	case CONFIG_OK:
		return -1;
	case CONFIG_HELP:
		config_usage(stdout);
		return EXIT_OK;
	case CONFIG_VERSION:
		version_print(stdout);
		return EXIT_OK;
	case EXIT_CONFIG:
		code = EXIT_CONFIG;
		break;
	case EXIT_USAGE:
		break;
	}
	fprintf(stderr, "pgleader: %s\n", log_redact(err));
	return code;
}

/* libev cannot go on after a failed system call (too few descriptors for
 * its signal pipe, epoll_create refused): it would print and abort(). One
 * line and the internal-error exit instead; the lock session ends with the
 * process and the command with its parent-death signal. */
static void loop_failed_cb(const char *msg)
{
	const char *prefix = "(libev) ";

	if (strncmp(msg, prefix, strlen(prefix)) == 0)
		msg += strlen(prefix);
	log_error("event loop failed: %s: %s", msg, strerror(errno));
	_exit(EXIT_INTERNAL);
}

/* First thing: a core dump would hold the DSN, and with it any password,
 * so pgleader is not dumpable. That also keeps other processes of the same
 * user from ptrace(2) and from its /proc/PID/mem, environ and fd: only root
 * (CAP_SYS_PTRACE) may look inside a process that holds a password. The
 * command is not affected: execve makes it dumpable again. */
static void harden(void)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fprintf(stderr, "pgleader: cannot turn core dumps off: %s\n",
			strerror(errno));
	ev_set_syserr_cb(loop_failed_cb);
}

/* Whether libpq still reads a password out of s that is not all stars:
 * what scrubbing left of a DSN is checked with libpq's own parser. */
static bool password_left(const char *s)
{
	char *err = NULL;
	PQconninfoOption *opts = PQconninfoParse(s, &err);
	bool left = false;

	PQfreemem(err);
	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (o->val && strstr(o->keyword, "password") &&
		    o->val[strspn(o->val, "*")] != '\0')
			left = true;
	PQconninfoFree(opts);
	return left;
}

/* Scrubs one argument: every password in it as log_redact_dsn finds them.
 * In a word of short options a value may follow its letter
 * ("-dpassword=x", "-vdpassword=x"), where "password" would look like the
 * end of a longer word: there every "password" is also taken as the start
 * of a value. Whatever libpq still finds (the DSN whole, or after "--dsn="
 * or "-d") puts the whole argument out of sight. The argument only shrinks;
 * what it leaves behind is zeroed. */
static void scrub_arg(char *arg)
{
	size_t old = strlen(arg);
	char *p = arg, *after;

	log_redact_dsn(arg);
	if (p[0] == '-' && p[1] != '-')
		while ((p = strcasestr(p + 1, "password")) != NULL)
			log_redact_dsn(p);
	after = strchr(arg, arg[0] == '-' && arg[1] != '-' ? 'd' : '=');
	if (password_left(arg) || (arg[0] == '-' && after && password_left(after + 1)))
		snprintf(arg, old + 1, "%.*s", (int)(old < 4 ? old : 4), "****");
	memset(arg + strlen(arg), 0, old - strlen(arg));
}

/* The configuration holds its own copies: star out every password in our
 * argv so that ps and /proc/PID/cmdline do not show it, each as "****"
 * whatever its length. The strings of argv lie end to end: the scrubbed
 * ones are moved together, so that no run of NULs between two arguments
 * (shown as blanks) tells how long a password was. */
static void scrub_argv(int argc, char **argv)
{
	char *end, *to;
	bool packed = true;

	if (argc < 1)
		return; /* execve(2) with an empty argv */
	end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
	for (int i = 1; i < argc; i++)
		packed &= argv[i] == argv[i - 1] + strlen(argv[i - 1]) + 1;
	for (int i = 1; i < argc; i++)
		scrub_arg(argv[i]);
	if (!packed)
		return;
	to = argv[0] + strlen(argv[0]) + 1;
	for (int i = 1; i < argc; i++) {
		size_t len = strlen(argv[i]) + 1;

		memmove(to, argv[i], len);
		argv[i] = to;
		to += len;
	}
	memset(to, 0, (size_t)(end - to));
}

/* The election has ended: no signal may kill pgleader now or change its
 * exit code. Tearing down stops the signal watchers, and libev gives each
 * signal back its default action, so the tail of a burst of SIGTERMs would
 * kill a standby that was exiting 0 with 143. Blocked, they stay pending
 * until the exit. */
static void hold_signals(void)
{
	const int handled[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2 };
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&set, handled[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

static const struct election_snapshot *snapshot_cb(void *arg)
{
	return supervisor_snapshot(arg);
}

static size_t jobs_count_cb(const void *arg)
{
	return jobs_count(arg);
}

static void jobs_view_cb(const void *arg, size_t i, struct jobs_view *v)
{
	jobs_view(arg, i, v);
}

/* The HTTP endpoints, when --http-addr asks for them; *web stays NULL
 * otherwise. Returns false with err when the address cannot be listened on. */
static bool start_http(struct ev_loop *loop, const struct config *cfg,
		       struct supervisor *sup, struct http **web,
		       char *err, size_t errlen)
{
	char libpq[32];
	struct metrics_versions versions = { PGLEADER_VERSION, libpq };

	*web = NULL;
	if (!cfg->http_addr)
		return true;
	if (!dynlib_load_mhd(err, errlen))
		return false;
	version_libpq(libpq, sizeof(libpq));
	if (supervisor_jobs(sup))
		metrics_set_jobs(&(struct metrics_jobs){ jobs_count_cb, jobs_view_cb,
							 supervisor_jobs(sup) });
	*web = http_new(loop, cfg->http_addr, &versions, snapshot_cb, sup, err, errlen);
	if (*web && supervisor_failsafe(sup)) {
		const char *hosts[cfg->n_peers + 1];

		http_set_failsafe(*web, &(struct http_failsafe){
			supervisor_authorized, supervisor_claim, supervisor_running, sup,
			supervisor_regained, supervisor_members_hash(sup) });
		for (size_t i = 0; i < cfg->n_peers; i++)
			hosts[i] = cfg->peers[i].host;
		http_keep_for_members(*web, hosts, cfg->n_peers);
	}
	return *web != NULL;
}

/* About a dozen descriptors at rest (the loop's, two sessions, the HTTP
 * socket), then one per HTTP client and failsafe request: below this,
 * whatever failed first would say something misleading. */
#define MIN_DESCRIPTORS 32

static bool enough_descriptors(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= MIN_DESCRIPTORS)
		return true;
	fprintf(stderr, "pgleader: too few file descriptors: ulimit -n is %llu, "
		"pgleader needs at least %d\n", (unsigned long long)rl.rlim_cur,
		MIN_DESCRIPTORS);
	return false;
}

/* ---- reload (DESIGN 13) ---- */

/* The command line as it was given (scrub_argv stars out main's), read
 * again with the file on SIGHUP; every configuration read, freed at the
 * exit: the jobs keep pointing into the one they run with. */
struct reloader {
	int argc;
	char **argv;
	const struct config *current;
	struct config **read;
	size_t n;
};

static char **copy_argv(int argc, char **argv)
{
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));

	for (int i = 0; copy && i < argc; i++)
		if (!(copy[i] = strdup(argv[i])))
			return NULL; /* out of memory before anything ran */
	return copy;
}

static void reloader_free(struct reloader *r)
{
	for (size_t i = 0; i < r->n; i++) {
		config_free(r->read[i]);
		free(r->read[i]);
	}
	free(r->read);
	for (int i = 0; r->argv && i < r->argc; i++) {
		explicit_bzero(r->argv[i], strlen(r->argv[i])); /* a DSN's password */
		free(r->argv[i]);
	}
	free(r->argv);
}

/* The file read again: one error line and NULL when it cannot be used;
 * else the new configuration, the keys that take a restart kept as they
 * were (one warning naming them). */
static const struct config *reload_cb(void *arg)
{
	struct reloader *r = arg;
	struct config *fresh = calloc(1, sizeof(*fresh)), **grown = NULL;
	char err[LOG_MSG_MAX], kept[512];
	int rc;

	if (!fresh) {
		log_error("reload failed: out of memory; the running configuration stays");
		return NULL;
	}
	rc = config_load(fresh, r->argc, r->argv, err, sizeof(err));
	if (rc == CONFIG_OK && !fresh->uses_ledger) {
		snprintf(err, sizeof(err), "%s runs a single command now, not jobs: "
			 "restart pgleader for that", r->current->config_file);
		rc = EXIT_CONFIG;
	}
	if (rc == CONFIG_OK && !(grown = realloc(r->read, (r->n + 1) * sizeof(*grown)))) {
		snprintf(err, sizeof(err), "out of memory");
		rc = EXIT_CONFIG;
	}
	if (rc != CONFIG_OK) {
		log_error("reload failed: %s; the running configuration stays", log_redact(err));
		config_free(fresh);
		free(fresh);
		return NULL;
	}
	r->read = grown;
	r->read[r->n++] = fresh;
	if (config_keep_restart_keys(fresh, r->current, kept, sizeof(kept)))
		log_warning("reload: %s changed, which takes a restart of pgleader: "
			    "kept as they were", kept);
	r->current = fresh;
	log_notice("reloaded %s: %zu job%s", fresh->config_file, fresh->n_jobs,
		   fresh->n_jobs == 1 ? "" : "s");
	return fresh;
}

/* The daemon proper: set up, run the loop until the election ends, tear
 * down in reverse order. */
static int run(const struct config *cfg, struct reloader *reloader)
{
	struct supervisor *sup;
	struct http *web;
	struct ev_loop *loop;
	char err[LOG_MSG_MAX];
	int code;

	/* Set-up order: the descriptor floor, the loop, then the reaper
	 * (before any child exists), then the lease and child objects inside
	 * the supervisor, then the HTTP server (a port in use fails before any
	 * connection), then systemd's watchdog, then the election. */
	if (!enough_descriptors())
		return EXIT_INTERNAL;
	signal(SIGPIPE, SIG_IGN);
	loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "pgleader: cannot initialise the event loop\n");
		return EXIT_INTERNAL;
	}
	if (child_init_reaper(loop) < 0)
		log_warning("cannot become a child subreaper: orphans of the "
			    "command are not reaped by pgleader");
	sup = supervisor_new(loop, cfg, err, sizeof(err));
	if (!sup) {
		fprintf(stderr, "pgleader: %s\n", log_redact_dsn_error(
			log_redact_dsn_error(err, cfg->dsn), cfg->poll_dsn));
		return EXIT_CONFIG;
	}
	if (!start_http(loop, cfg, sup, &web, err, sizeof(err))) {
		fprintf(stderr, "pgleader: %s\n", err);
		supervisor_free(sup);
		return EXIT_CONFIG;
	}
	if (!notify_init(loop, err, sizeof(err))) {
		fprintf(stderr, "pgleader: %s\n", err);
		http_free(web);
		supervisor_free(sup);
		return EXIT_CONFIG;
	}
	/* SIGHUP reads a file of jobs again; else it goes to the command */
	if (cfg->config_file && cfg->uses_ledger)
		supervisor_on_reload(sup, reload_cb, reloader);
	supervisor_start(sup);
	notify_ready();

	ev_run(loop, 0);
	hold_signals();

	code = supervisor_exit_code(sup);
	notify_done(loop);
	http_free(web);
	supervisor_free(sup);
	ev_loop_destroy(loop);
	return code;
}

/* What "pgleader status" shows after the sessions, in this order: the
 * ledger's jobs, then its controls. */
static const struct cli_section *const status_sections[] = {
	&ledger_cli_jobs_section, &controls_cli_section, NULL,
};

int main(int argc, char **argv)
{
	struct config cfg;
	struct reloader reloader = { .argc = argc, .current = &cfg };
	int code;

	/* Before anything opens a descriptor: a closed 0-2 would hand the next
	 * one (the lock connection's socket) to the log. */
	stdfd_ensure_open();
	harden();
	reloader.argv = copy_argv(argc, argv); /* before the parse reorders argv */
	code = load(&cfg, argc, argv);
	if (code >= 0) {
		config_free(&cfg);
		reloader_free(&reloader);
		return code;
	}
	scrub_argv(argc, argv);
	log_init((enum log_level)cfg.log_level);
	log_set_format(cfg.log_format);
	if (cfg.env_hint[0])
		log_warning("%s", cfg.env_hint);

	code = cfg.mode == CONFIG_MODE_RUNS ? ledger_cli_runs(&cfg)
	       : cfg.mode == CONFIG_MODE_INIT_DB ? ledger_cli_init_db(&cfg)
	       : cfg.mode == CONFIG_MODE_PAUSE || cfg.mode == CONFIG_MODE_RESUME ||
		 cfg.mode == CONFIG_MODE_SWITCHOVER ? controls_cli_run(&cfg)
	       : cfg.mode == CONFIG_MODE_TRIGGER ? trigger_cli_run(&cfg)
	       : cfg.status_mode ? status_run(&cfg, status_sections) : run(&cfg, &reloader);
	config_free(&cfg);
	reloader_free(&reloader);
	return code;
}
