/* notify.c: tells systemd about readiness, state, liveness and shutdown. */
#include "notify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>

#include "dynlib.h"

static ev_timer watchdog_timer;

static void watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	sd_notify(0, "WATCHDOG=1");
}

bool notify_init(struct ev_loop *loop, char *err, size_t errlen)
{
	uint64_t usec = 0;

	/* a service manager that waits for READY=1 must hear it, or be told
	 * why not at once rather than time out */
	if (getenv("NOTIFY_SOCKET") && !dynlib_load_systemd(err, errlen))
		return false;

	/* Pinging at half the period leaves room for one late loop turn.  The
	 * timer runs in the main loop on purpose: a frozen loop must starve
	 * systemd's watchdog, which then kills pgleader and its command. */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		double period = (double)usec / 2e6;

		ev_timer_init(&watchdog_timer, watchdog_cb, 0., period);
		ev_timer_again(loop, &watchdog_timer);
		sd_notify(0, "WATCHDOG=1");
	}
	return true;
}

void notify_ready(void)
{
	sd_notify(0, "READY=1");
}

static void state_text(const struct election_snapshot *s, char *buf, size_t len)
{
	switch (s->state) {
	case ELECTION_INIT:
	case ELECTION_CONNECTING:
	case ELECTION_BACKOFF:
		snprintf(buf, len, "connecting to database");
		return;
	case ELECTION_STANDBY:
		snprintf(buf, len, "standby: waiting for leader lease");
		return;
	case ELECTION_LEADER:
		if (s->command_pid)
			snprintf(buf, len, "leader, command pid %d", s->command_pid);
		else if (isfinite(s->command_due))
			snprintf(buf, len, "leader, starting command in %.1fs",
				 fmax(0, s->command_due - s->now));
		else
			snprintf(buf, len, "leader, starting command");
		return;
	case ELECTION_FAILSAFE:
		snprintf(buf, len, "failsafe: database lost, %d of %d members agree, "
			 "command pid %d", s->failsafe_agree, s->failsafe_asked,
			 s->command_pid);
		return;
	case ELECTION_DEMOTING:
		snprintf(buf, len, "demoting: stopping command");
		return;
	case ELECTION_SHUTTING_DOWN:
	case ELECTION_RELEASING:
	case ELECTION_DONE:
	case ELECTION_STATE_COUNT:
		break;
	}
	snprintf(buf, len, "shutting down");
}

/* The state, then the operator's controls in force (DESIGN 11). */
void notify_status_text(const struct election_snapshot *s, char *buf, size_t len)
{
	size_t n;

	state_text(s, buf, len);
	n = strlen(buf);
	if (s->paused && n < len)
		snprintf(buf + n, len - n, "; paused by %s", s->paused_by);
	n = strlen(buf);
	if (s->hold_until > 0 && n < len)
		snprintf(buf + n, len - n, "; holding off for a switchover for %.0fs",
			 fmax(0, s->hold_until - s->now));
}

void notify_publish(const struct election_snapshot *s)
{
	char status[256];

	if (s->state == ELECTION_INIT)
		return;
	memcpy(status, "STATUS=", 7);
	notify_status_text(s, status + 7, sizeof(status) - 7);
	sd_notify(0, status);
}

/* DESIGN 13: a reload under way, with the monotonic time systemd's
 * Type=notify-reload wants; notify_ready() when it is done. */
void notify_reloading(void)
{
	struct timespec ts;
	char msg[64];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ULL +
		 (unsigned long long)ts.tv_nsec / 1000);
	sd_notify(0, msg);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void notify_done(struct ev_loop *loop)
{
	ev_timer_stop(loop, &watchdog_timer);
}
