/* main.c: command line to configuration, the event loop, and the exit code. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <ev.h>

#include "child.h"
#include "config.h"
#include "log.h"
#include "notify.h"
#include "status.h"
#include "supervisor.h"
#include "version.h"

int main(int argc, char **argv)
{
	struct config cfg;
	struct supervisor *sup;
	struct ev_loop *loop;
	char err[1024];
	int code;

	switch (config_load(&cfg, argc, argv, err, sizeof(err))) {
	case CONFIG_OK:
		break;
	case CONFIG_HELP:
		config_usage(stdout);
		config_free(&cfg);
		return 0;
	case CONFIG_VERSION:
		version_print(stdout);
		config_free(&cfg);
		return 0;
	case CONFIG_USAGE:
		fprintf(stderr, "pgleader: %s\n", log_redact(err));
		config_free(&cfg);
		return CONFIG_USAGE;
	case CONFIG_INVALID:
		fprintf(stderr, "pgleader: %s\n", log_redact(err));
		config_free(&cfg);
		return CONFIG_INVALID;
	}

	/* The configuration holds its own copies: star out any password in
	 * our argv so that ps and /proc/PID/cmdline do not show it. */
	for (int i = 1; i < argc; i++)
		log_redact(argv[i]);
	log_init((enum log_level)cfg.log_level);

	if (cfg.status_mode) {
		code = status_run(&cfg);
		config_free(&cfg);
		return code;
	}

	/* Set-up order: the loop, then the reaper (before any child exists),
	 * then the lease and child objects inside the supervisor, then
	 * systemd's watchdog, then the election. */
	signal(SIGPIPE, SIG_IGN);
	loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fprintf(stderr, "pgleader: cannot initialise the event loop\n");
		config_free(&cfg);
		return 70;
	}
	if (child_init_reaper(loop) < 0)
		log_warning("cannot become a child subreaper: orphans of the "
			    "command are not reaped by pgleader");
	sup = supervisor_new(loop, &cfg, err, sizeof(err));
	if (!sup) {
		fprintf(stderr, "pgleader: invalid dsn: %s\n", log_redact(err));
		config_free(&cfg);
		return CONFIG_INVALID;
	}
	notify_init(loop);
	supervisor_start(sup);
	notify_ready();

	ev_run(loop, 0);

	/* Tear-down in reverse order. */
	code = supervisor_exit_code(sup);
	notify_done(loop);
	supervisor_free(sup);
	ev_loop_destroy(loop);
	config_free(&cfg);
	return code;
}
