/* notify.h: systemd service notifications (sd_notify). */
#ifndef PGLEADER_NOTIFY_H
#define PGLEADER_NOTIFY_H

#include <ev.h>

/* Starts the watchdog timer when WATCHDOG_USEC is set for this process. */
void notify_init(struct ev_loop *loop);
void notify_ready(void);
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void notify_stopping(void);
void notify_done(struct ev_loop *loop);

#endif
