/* fence_driver.c: drives one lease (the fence, or with --lock the lock) from
 * commands on stdin and prints its events on stdout, for the integration
 * tests of lease.c against a real PostgreSQL. Not installed.
 *
 *   fence_driver [--lock] [--dsn DSN] --node ID (--key N | --name NAME)
 *                [--retry-interval S] [--server-lease S] [--ping-when-acquired]
 *
 * Commands, one a line: connect, wait, try, ping, unlock, release,
 * disconnect. End of input, SIGTERM or SIGINT: disconnect and exit 0.
 * Events, one a line: "<event> <fault label> <reason>", e.g.
 * "acquired none fence of key 42 (0, 42)", "busy none", "lost terminated
 * connection terminated by the server: ...". A bad command line is 64. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <ev.h>

#include "lease.h"
#include "log.h"

struct driver {
	struct ev_loop *loop;
	struct lease *lease;
	ev_io input;
	ev_signal term, intr;
	/* --ping-when-acquired: a ping as early as the lease allows, from the
	 * loop right after LEASE_ACQUIRED (the receiver of an event queues) */
	bool ping_when_acquired;
	ev_timer ping_now;
	char line[256];
	size_t len;
};

static const char *event_name(enum lease_event ev)
{
	switch (ev) {
	case LEASE_CONNECTED: return "connected";
	case LEASE_CONNECT_FAILED: return "connect_failed";
	case LEASE_GRANTED: return "granted";
	case LEASE_ACQUIRED: return "acquired";
	case LEASE_BUSY: return "busy";
	case LEASE_PING_OK: return "ping_ok";
	case LEASE_LOST: return "lost";
	case LEASE_RELEASED: return "released";
	}
	return "unknown";
}

static void event_cb(void *arg, enum lease_event ev, enum fault fault,
		     const char *reason)
{
	struct driver *d = arg;

	if (ev == LEASE_ACQUIRED && d->ping_when_acquired)
		ev_timer_start(d->loop, &d->ping_now);
	if (ev == LEASE_CONNECTED)
		printf("connected none key %" PRId64 "\n", lease_key(d->lease));
	else
		printf("%s %s %s\n", event_name(ev), fault_label(fault),
		       reason ? reason : "");
	fflush(stdout);
}

static void quit(struct driver *d)
{
	lease_disconnect(d->lease);
	ev_break(d->loop, EVBREAK_ALL);
}

static void command(struct driver *d, const char *cmd)
{
	static const struct {
		const char *name;
		void (*fn)(struct lease *);
	} commands[] = {
		{ "connect", lease_connect }, { "wait", lease_wait_lock },
		{ "try", lease_try_lock }, { "ping", lease_ping },
		{ "unlock", lease_unlock }, { "release", lease_release },
		{ "disconnect", lease_disconnect },
	};

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name)) {
			commands[i].fn(d->lease);
			return;
		}
	if (*cmd) {
		printf("error none unknown command \"%s\"\n", cmd);
		fflush(stdout);
	}
}

static void input_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct driver *d = w->data;
	ssize_t n;
	char *nl;

	(void)loop;
	(void)revents;
	n = read(0, d->line + d->len, sizeof(d->line) - 1 - d->len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		quit(d);
		return;
	}
	d->len += (size_t)n;
	d->line[d->len] = '\0';
	while ((nl = strchr(d->line, '\n')) != NULL) {
		*nl = '\0';
		command(d, d->line);
		d->len -= (size_t)(nl + 1 - d->line);
		memmove(d->line, nl + 1, d->len + 1);
	}
	if (d->len == sizeof(d->line) - 1)
		d->len = 0; /* a line this long is no command */
}

static void ping_now_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct driver *d = w->data;

	(void)loop;
	(void)revents;
	lease_ping(d->lease);
}

static void signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	quit(w->data);
}

static int usage(void)
{
	fprintf(stderr, "usage: fence_driver [--lock] [--dsn DSN] --node ID "
		"(--key N | --name NAME) [--retry-interval S] [--server-lease S]\n"
		"                    [--ping-when-acquired] [-v]\n");
	return 64;
}

/* The command line into o; false on a bad one. */
static bool parse_args(int argc, char **argv, struct lease_options *o,
		       struct driver *d, bool *verbose)
{
	static const struct option longopts[] = {
		{ "lock", no_argument, NULL, 'l' }, { "dsn", required_argument, NULL, 'd' },
		{ "node", required_argument, NULL, 'n' }, { "key", required_argument, NULL, 'k' },
		{ "name", required_argument, NULL, 'N' },
		{ "retry-interval", required_argument, NULL, 'r' },
		{ "server-lease", required_argument, NULL, 's' },
		{ "ping-when-acquired", no_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' }, { NULL, 0, NULL, 0 },
	};
	bool have_key = false;
	int c;

	while ((c = getopt_long(argc, argv, "v", longopts, NULL)) != -1) {
		switch (c) {
		case 'l': o->fence = false; break;
		case 'd': o->dsn = optarg; break;
		case 'n': o->node_id = optarg; break;
		case 'k': o->lock_key = strtoll(optarg, NULL, 10); have_key = true; break;
		case 'N': o->lock_name = optarg; have_key = true; break;
		case 'r': o->retry_interval = strtod(optarg, NULL); break;
		case 's': o->server_lease = strtod(optarg, NULL); break;
		case 'p': d->ping_when_acquired = true; break;
		case 'v': *verbose = true; break;
		default: return false;
		}
	}
	return optind == argc && o->node_id && have_key && o->retry_interval > 0;
}

int main(int argc, char **argv)
{
	struct lease_options o = { .retry_interval = 5, .fence = true, .priority = 1 };
	struct driver d = { 0 };
	bool verbose = false;
	char err[LOG_MSG_MAX];

	if (!parse_args(argc, argv, &o, &d, &verbose))
		return usage();
	log_init(verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	d.loop = ev_default_loop(EVFLAG_AUTO);
	d.lease = lease_new(d.loop, &o, event_cb, &d, err, sizeof(err));
	if (!d.lease) {
		fprintf(stderr, "fence_driver: %s\n", err);
		return 78;
	}
	ev_io_init(&d.input, input_cb, 0, EV_READ);
	d.input.data = &d;
	ev_io_start(d.loop, &d.input);
	ev_timer_init(&d.ping_now, ping_now_cb, 0, 0);
	d.ping_now.data = &d;
	ev_signal_init(&d.term, signal_cb, SIGTERM);
	ev_signal_init(&d.intr, signal_cb, SIGINT);
	d.term.data = d.intr.data = &d;
	ev_signal_start(d.loop, &d.term);
	ev_signal_start(d.loop, &d.intr);
	ev_run(d.loop, 0);
	lease_free(d.lease);
	ev_loop_destroy(d.loop);
	return 0;
}
