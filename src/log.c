/* log.c: leveled log lines on stderr, with journald priorities and redaction. */
#include "log.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static enum log_level threshold = LOG_LEVEL_INFO;
static bool journal_prefixes;

/* systemd sets JOURNAL_STREAM to "device:inode" of the stream it connected
 * to stderr; if stderr is still that stream, journald adds the timestamps and
 * reads "<N>" as the priority (sd-daemon(3)). */
static bool stderr_is_journal(void)
{
	const char *stream = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!stream || sscanf(stream, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void log_init(enum log_level level)
{
	threshold = level;
	journal_prefixes = stderr_is_journal();
}

void log_set_level(enum log_level level)
{
	threshold = level;
}

enum log_level log_get_level(void)
{
	return threshold;
}

static const char *level_tag(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_ERROR: return "error";
	case LOG_LEVEL_WARNING: return "warning";
	case LOG_LEVEL_NOTICE: return "notice";
	case LOG_LEVEL_INFO: return "info";
	case LOG_LEVEL_DEBUG: return "debug";
	}
	return "?";
}

/* Stars out n bytes from p. */
static void star(char *p, size_t n)
{
	memset(p, '*', n);
}

/* "password=secret", "password = 'se cret'", with libpq's quoting rules:
 * a quoted value ends at an unescaped quote, a bare one at unescaped white
 * space ("se\ cret" is one value); in a URI query ("?password=x&...") a
 * value ends at '&', elsewhere '&' is part of it. */
static void redact_keyword(char *s)
{
	char *p = s;

	while ((p = strcasestr(p, "password")) != NULL) {
		char *v = p + strlen("password");

		/* libpq's sslpassword is a secret too; other words that merely
		 * end in "password" (e.g. "nopassword") are not */
		bool ssl = p - s >= 3 && !strncasecmp(p - 3, "ssl", 3) &&
			   (p - 3 == s || !isalpha((unsigned char)p[-4]));

		if (p > s && !ssl && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'))) {
			p = v;
			continue;
		}
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != '=') {
			p = v;
			continue;
		}
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v == '\'') {
			char *q = ++v;

			while (*q && *q != '\'') {
				if (*q == '\\' && q[1])
					q++;
				q++;
			}
			star(v, (size_t)(q - v));
			p = q;
		} else {
			bool query = p > s && (p[-1] == '?' || p[-1] == '&');
			char *q = v;

			while (*q && !isspace((unsigned char)*q) && !(query && *q == '&')) {
				if (*q == '\\' && q[1] && !query)
					q++;
				q++;
			}
			star(v, (size_t)(q - v));
			p = q;
		}
	}
}

/* "postgresql://user:secret@host": the part between ':' and '@' of the
 * authority. libpq looks for the '@' up to the first '/' only, so a raw '?'
 * or '#' may be part of the password. */
static void redact_uri(char *s)
{
	char *p = s;

	while ((p = strstr(p, "://")) != NULL) {
		char *auth = p + 3;
		size_t len = strcspn(auth, "/ \t\n");
		char *at = memrchr(auth, '@', len);
		char *colon;

		p = auth;
		if (!at)
			continue;
		colon = memchr(auth, ':', (size_t)(at - auth));
		if (colon)
			star(colon + 1, (size_t)(at - colon - 1));
	}
}

char *log_redact(char *s)
{
	redact_keyword(s);
	redact_uri(s);
	return s;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	if (level > threshold)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_redact(line);
	/* libpq messages end in a newline; one event is one line. */
	for (char *c = line; *c; c++)
		if (*c == '\n')
			*c = c[1] ? ' ' : '\0';

	if (journal_prefixes) {
		fprintf(stderr, "<%d>%s\n", (int)level, line);
	} else {
		struct timespec ts;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(stderr, "%s.%03ld pgleader[%d] %s: %s\n", stamp,
			ts.tv_nsec / 1000000, (int)getpid(), level_tag(level), line);
	}
}
