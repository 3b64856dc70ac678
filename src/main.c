/* main.c: command line to configuration, the event loop, and the exit code. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <ev.h>

#include "child.h"
#include "config.h"
#include "election.h"
#include "http.h"
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
	enum fault fault = FAULT_USAGE;

	switch (config_load(cfg, argc, argv, err, sizeof(err))) {
	case CONFIG_OK:
		return -1;
	case CONFIG_HELP:
		config_usage(stdout);
		return 0;
	case CONFIG_VERSION:
		version_print(stdout);
		return 0;
	case CONFIG_INVALID:
		fault = FAULT_CONFIG;
		break;
	case CONFIG_USAGE:
		break;
	}
	fprintf(stderr, "pgleader: %s\n", log_redact(err));
	return election_exit_for(fault);
}

static const struct election_snapshot *snapshot_cb(void *arg)
{
	return supervisor_snapshot(arg);
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
	version_libpq(libpq, sizeof(libpq));
	*web = http_new(loop, cfg->http_addr, &versions, snapshot_cb, sup, err, errlen);
	if (*web && supervisor_failsafe(sup))
		http_set_failsafe(*web, &(struct http_failsafe){
			supervisor_authorized, supervisor_claim, supervisor_running, sup });
	return *web != NULL;
}

/* The daemon proper: set up, run the loop until the election ends, tear
 * down in reverse order. */
static int run(const struct config *cfg)
{
	struct supervisor *sup;
	struct http *web;
	struct ev_loop *loop;
	char err[LOG_MSG_MAX];
	int code;

	/* Set-up order: the loop, then the reaper (before any child exists),
	 * then the lease and child objects inside the supervisor, then the
	 * HTTP server (a port in use fails before any connection), then
	 * systemd's watchdog, then the election. */
	signal(SIGPIPE, SIG_IGN);
	loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "pgleader: cannot initialise the event loop\n");
		return election_exit_for(FAULT_INTERNAL);
	}
	if (child_init_reaper(loop) < 0)
		log_warning("cannot become a child subreaper: orphans of the "
			    "command are not reaped by pgleader");
	sup = supervisor_new(loop, cfg, err, sizeof(err));
	if (!sup) {
		fprintf(stderr, "pgleader: %s\n", log_redact(err));
		return election_exit_for(FAULT_CONFIG);
	}
	if (!start_http(loop, cfg, sup, &web, err, sizeof(err))) {
		fprintf(stderr, "pgleader: %s\n", err);
		supervisor_free(sup);
		return election_exit_for(FAULT_CONFIG);
	}
	notify_init(loop);
	supervisor_start(sup);
	notify_ready();

	ev_run(loop, 0);

	code = supervisor_exit_code(sup);
	notify_done(loop);
	http_free(web);
	supervisor_free(sup);
	ev_loop_destroy(loop);
	return code;
}

int main(int argc, char **argv)
{
	struct config cfg;
	int code;

	/* Before anything opens a descriptor: a closed 0-2 would hand the next
	 * one (the lock connection's socket) to the log. */
	stdfd_ensure_open();
	code = load(&cfg, argc, argv);

	if (code >= 0) {
		config_free(&cfg);
		return code;
	}
	/* The configuration holds its own copies: star out any password in
	 * our argv so that ps and /proc/PID/cmdline do not show it. */
	for (int i = 1; i < argc; i++)
		log_redact(argv[i]);
	log_init((enum log_level)cfg.log_level);
	log_set_format(cfg.log_format);

	code = cfg.status_mode ? status_run(&cfg) : run(&cfg);
	config_free(&cfg);
	return code;
}
