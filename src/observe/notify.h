/* notify.h: systemd service notifications (sd_notify). */
#ifndef PGLEADER_NOTIFY_H
#define PGLEADER_NOTIFY_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>

#include "election.h"

/* Loads libsystemd when a service manager listens (NOTIFY_SOCKET) and
 * starts the watchdog timer when WATCHDOG_USEC is set for this process;
 * false with one line in err when libsystemd cannot be loaded. */
bool notify_init(struct ev_loop *loop, char *err, size_t errlen);
void notify_ready(void);
/* STATUS= for what a person reads in `systemctl status`, from the
 * election's snapshot. */
void notify_publish(const struct election_snapshot *s);
/* The text notify_publish sends, into buf. */
void notify_status_text(const struct election_snapshot *s, char *buf, size_t len);
void notify_stopping(void);
/* RELOADING=1 (DESIGN 13): a reload is under way; READY=1 (notify_ready)
 * when it is done, taken or not. */
void notify_reloading(void);
void notify_done(struct ev_loop *loop);

#endif
