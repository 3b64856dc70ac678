/* notify.h: systemd service notifications (sd_notify). */
#ifndef PGLEADER_NOTIFY_H
#define PGLEADER_NOTIFY_H

#include <ev.h>

#include "election.h"

/* Starts the watchdog timer when WATCHDOG_USEC is set for this process. */
void notify_init(struct ev_loop *loop);
void notify_ready(void);
/* STATUS= for what a person reads in `systemctl status`, from the
 * election's snapshot. */
void notify_publish(const struct election_snapshot *s);
/* The text notify_publish sends, into buf. */
void notify_status_text(const struct election_snapshot *s, char *buf, size_t len);
void notify_stopping(void);
void notify_done(struct ev_loop *loop);

#endif
