/* notify.c: tells systemd about readiness, state, liveness and shutdown. */
#include "notify.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-daemon.h>

static ev_timer watchdog_timer;

static void watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	sd_notify(0, "WATCHDOG=1");
}

void notify_init(struct ev_loop *loop)
{
	uint64_t usec = 0;

	/* Pinging at half the period leaves room for one late loop turn.  The
	 * timer runs in the main loop on purpose: a frozen loop must starve
	 * systemd's watchdog, which then kills pgleader and its command. */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		double period = (double)usec / 2e6;

		ev_timer_init(&watchdog_timer, watchdog_cb, 0., period);
		ev_timer_again(loop, &watchdog_timer);
		sd_notify(0, "WATCHDOG=1");
	}
}

void notify_ready(void)
{
	sd_notify(0, "READY=1");
}

void notify_status(const char *fmt, ...)
{
	char status[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(status, sizeof(status), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", status);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void notify_done(struct ev_loop *loop)
{
	ev_timer_stop(loop, &watchdog_timer);
}
