/* log.h: leveled logging to stderr (text or JSON lines), journald-aware,
 * with password redaction. */
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

/* text: "TIME pgleader[PID] LEVEL: MESSAGE", or under journald the message
 * with its fields sent natively; json: one JSON object a line. */
enum log_format { LOG_FORMAT_TEXT, LOG_FORMAT_JSON };

/* What a line is about. NULL strings and a command_pid of 0 are absent.
 * lock_key is a string because JSON readers often hold numbers in doubles. */
struct log_fields {
	const char *state;     /* election state: "leader", "standby", ... */
	const char *lock_key;  /* decimal int64 */
	const char *node_id;
	const char *reason;    /* why, for a loss or an exit: "ping timeout" */
	long command_pid;
	/* The line is a line of this job's output, not pgleader's own
	 * (DESIGN 13): "NAME: " before it in text, "job" in JSON, and under
	 * journald PGLEADER_JOB=NAME and SYSLOG_IDENTIFIER=NAME. Never taken
	 * from the context. */
	const char *job;
};

/* Sets the threshold and decides, from JOURNAL_STREAM and stderr, whether to
 * write journald priority prefixes instead of timestamps, and whether to send
 * lines with their fields to the journal natively (stderr is the journal's
 * stream socket). */
void log_init(enum log_level level);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
void log_set_format(enum log_format format);

/* Fields every later line carries (copied; NULL clears them all), e.g. the
 * node id and lock key once known and the state on every change. A field
 * given to log_event wins over the same field here. */
void log_set_context(const struct log_fields *fields);

/* One line with fields (f may be NULL) on top of the context's. */
void log_event(enum log_level level, const struct log_fields *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One line with only the context's fields. */
void log_msg(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

/* Overwrites, in place, every password in s with "****" (a shorter one
 * with as many stars as it has bytes: s can only shrink): the value of a
 * "password=" or "sslpassword=" keyword (quoted or not), the password of a
 * "postgres[ql]://user:password@" URI and of its query parameters, their
 * names percent-decoded as libpq does ("?pass%77ord="). Returns s. Every
 * log line goes through it. */
char *log_redact(char *s);

/* As log_redact, for a string that is one connection string, read to its
 * end as libpq reads it: the words after an unquoted password up to the
 * next "keyword=" ("password=two words"), and a URI query's value up to
 * '&' whatever it holds, are the password's. For argv. Returns s. */
char *log_redact_dsn(char *s);

/* libpq's errors about a connection string quote its parts raw, before
 * percent-decoding ("invalid percent-encoded token: "50%off""), where
 * log_redact cannot tell a password from other text. Stars out in msg every
 * copy of each password in dsn (what log_redact would star there), then
 * redacts msg as log_redact does. dsn may be NULL. Returns msg. */
char *log_redact_dsn_error(char *msg, const char *dsn);

/* Copies src into dst (size bytes, always terminated, cut at a character
 * boundary) with each byte that is not part of valid UTF-8 (RFC 3629)
 * replaced by U+FFFD, so that jansson accepts it: a message or a foreign
 * session's name may carry any byte. Returns dst. size >= 3 * strlen(src) + 1
 * never truncates. */
char *log_utf8_copy(char *dst, size_t size, const char *src);

#endif
