/* log.h: leveled logging to stderr, journald-aware, with password redaction. */
#ifndef PGLEADER_LOG_H
#define PGLEADER_LOG_H

#include <stddef.h>

/* The longest message any module hands on for a log line: a libpq error
 * for a multi-host DSN carries one line per host. */
#define LOG_MSG_MAX 2048

/* Values are syslog priorities, so they double as journald "<N>" prefixes. */
enum log_level {
	LOG_LEVEL_ERROR = 3,
	LOG_LEVEL_WARNING = 4,
	LOG_LEVEL_NOTICE = 5,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

/* How lines are written: text, or one JSON object a line (--log-format). */
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

/* Sets the threshold and decides, from JOURNAL_STREAM and stderr, whether to
 * write journald priority prefixes instead of timestamps. */
void log_init(enum log_level level);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

/* Overwrites, in place, every password in s with '*': the value of a
 * "password=" keyword (quoted or not) and the password of a
 * "postgres[ql]://user:password@" URI. Returns s. Every log line goes through
 * it; main also uses it to scrub argv so that ps never shows a password. */
char *log_redact(char *s);

#endif
