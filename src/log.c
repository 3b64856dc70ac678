/* log.c: leveled log lines on stderr, as text or JSON, with journald fields
 * and redaction. */
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
/* The code location would always be this file: leave it out. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

static enum log_level threshold = LOG_LEVEL_INFO;
static enum log_format format = LOG_FORMAT_TEXT;
static bool journal_prefixes;  /* stderr is the journal's stream */
static bool journal_native;    /* ... and a socket: send fields with the line */

/* Redacted copies of a log_fields; "" is absent. */
struct field_copies {
	char state[32];
	char lock_key[24];
	char node_id[64];
	char reason[LOG_MSG_MAX / 2];
	long command_pid;
	char job[64];
};

static struct field_copies context;

/* One line's fields, the event's over the context's: NULL is absent. */
struct line_fields {
	const char *state, *lock_key, *node_id, *reason;
	long command_pid;
	const char *job;       /* the line is this job's output; NULL: pgleader's */
};

/* systemd sets JOURNAL_STREAM to "device:inode" of the stream it connected
 * to stderr; if stderr is still that stream, journald adds the timestamps and
 * reads "<N>" as the priority (sd-daemon(3)). Returns false otherwise; *sock
 * says whether stderr is a socket, as journald's streams always are. */
static bool stderr_is_journal(bool *sock)
{
	const char *stream = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	*sock = false;
	if (!stream || sscanf(stream, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	*sock = S_ISSOCK(st.st_mode);
	return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

/* Under systemd, lines go to the journal natively (sd_journal_send) INSTEAD
 * of the stream, so that each line is stored once, with its fields. A
 * JOURNAL_STREAM that matches a file that is not a socket is not journald's
 * (a test, a redirection that reused the numbers): "<N>" lines there. */
void log_init(enum log_level level)
{
	bool sock;

	threshold = level;
	journal_prefixes = stderr_is_journal(&sock);
	journal_native = journal_prefixes && sock;
}

void log_set_level(enum log_level level)
{
	threshold = level;
}

enum log_level log_get_level(void)
{
	return threshold;
}

void log_set_format(enum log_format f)
{
	format = f;
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

/* ---- redaction ---------------------------------------------------------- */

/* How many stars stand for a secret: its length is nobody's business. */
#define STARS 4

/* How to redact: REDACT_SAME_LENGTH keeps every offset (a copy that is
 * compared with the original); REDACT_DSN reads the whole string as one
 * connection string, as libpq would (a value ends where libpq ends it, not
 * where a log line's next words begin). */
enum { REDACT_SAME_LENGTH = 1, REDACT_DSN = 2 };

/* Stars out the n bytes at p and returns the end of the stars. With
 * same_length (a copy whose offsets must still match the original's) each
 * byte but a blank becomes a star; else the secret becomes STARS stars and
 * the rest of the string moves up (a secret shorter than that keeps its
 * length: the string can only shrink in place). */
static char *star(char *p, size_t n, int how)
{
	if (how & REDACT_SAME_LENGTH) {
		for (size_t i = 0; i < n; i++)
			p[i] = p[i] == ' ' || p[i] == '\t' ? p[i] : '*';
		return p + n;
	}
	if (n <= STARS) {
		memset(p, '*', n);
		return p + n;
	}
	memset(p, '*', STARS);
	memmove(p + STARS, p + n, strlen(p + n) + 1);
	return p + STARS;
}

/* Whether the "password" at p (inside s) is a keyword of its own: libpq's
 * sslpassword is a secret too; other words that merely end in "password"
 * (e.g. "nopassword", "my_password") are not. */
static bool password_word(const char *s, const char *p)
{
	bool ssl = p - s >= 3 && !strncasecmp(p - 3, "ssl", 3) &&
		   (p - 3 == s || !isalpha((unsigned char)p[-4]));

	return p == s || ssl || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'));
}

static char *skip_blanks(char *v)
{
	while (*v == ' ' || *v == '\t')
		v++;
	return v;
}

/* The end of a quoted value starting at v: the first unescaped quote. */
static char *quoted_end(char *v)
{
	while (*v && *v != '\'') {
		if (*v == '\\' && v[1])
			v++;
		v++;
	}
	return v;
}

/* The end of a bare value: unescaped white space ("se\ cret" is one value);
 * in a URI query ("?password=x&...") also '&', and '\' escapes nothing. */
static char *bare_end(char *v, bool query)
{
	while (*v && !isspace((unsigned char)*v) && !(query && *v == '&')) {
		if (*v == '\\' && v[1] && !query)
			v++;
		v++;
	}
	return v;
}

/* An unquoted "password=two words": libpq ends the value at the blank and
 * then takes "words" for a keyword without '=', an error that quotes it.
 * The words after a bare value up to the next "keyword=" are the
 * password's too. Returns the end of the last of them. */
static char *stray_words_end(char *end)
{
	for (;;) {
		char *w = skip_blanks(end), *e;

		if (!*w || *w == '\'' || isspace((unsigned char)*w))
			return end;
		e = bare_end(w, false);
		if (memchr(w, '=', (size_t)(e - w)) || *skip_blanks(e) == '=')
			return end;
		end = e;
	}
}

/* "password=secret", "password = 'se cret'", with libpq's quoting rules:
 * a quoted value ends at an unescaped quote, a bare one at unescaped white
 * space; in a URI query a value ends at '&', elsewhere '&' is part of it. */
static void redact_keyword(char *s, int how)
{
	char *p = s;

	while ((p = strcasestr(p, "password")) != NULL) {
		char *v = skip_blanks(p + strlen("password"));
		bool query = p > s && (p[-1] == '?' || p[-1] == '&');
		char *end;

		if (!password_word(s, p) || *v != '=') {
			p = v;
			continue;
		}
		v = skip_blanks(v + 1);
		if (*v == '\'')
			end = quoted_end(++v);
		else
			end = bare_end(v, query);
		if (!query && (how & REDACT_DSN))
			end = stray_words_end(end);
		p = star(v, (size_t)(end - v), how);
	}
}

/* Whether the k bytes at key name a password once percent-decoded, as
 * libpq decodes a URI's parameter names ("pass%77ord"). */
static bool query_key_is_password(const char *key, size_t k)
{
	char name[16];
	size_t n = 0;

	for (size_t i = 0; i < k; i++) {
		if (n + 1 >= sizeof(name))
			return false;
		if (key[i] == '%' && i + 2 < k && isxdigit((unsigned char)key[i + 1]) &&
		    isxdigit((unsigned char)key[i + 2])) {
			char hex[3] = { key[i + 1], key[i + 2], '\0' };

			name[n++] = (char)strtol(hex, NULL, 16);
			i += 2;
		} else {
			name[n++] = key[i];
		}
	}
	name[n] = '\0';
	return !strcasecmp(name, "password") || !strcasecmp(name, "sslpassword");
}

/* "postgresql://host/db?pass%77ord=secret": a URI's query parameters, each
 * name compared percent-decoded; a value ends at '&', and at white space
 * but in a whole DSN, which libpq reads to its end. */
static void redact_query(char *s, int how)
{
	const char *stop = how & REDACT_DSN ? "&" : "& \t\n";

	for (char *p = s; (p = strstr(p, "://")) != NULL;) {
		char *k;

		p += 3;
		k = p + strcspn(p, "? \t\n");
		while (*k == '?' || *k == '&') {
			size_t n = strcspn(++k, "=&");
			char *v = k + n + 1, *end;

			if (k[n] != '=') {
				k += n;
				continue;
			}
			end = v + strcspn(v, stop);
			k = query_key_is_password(k, n) ? star(v, (size_t)(end - v), how) : end;
		}
	}
}

/* "postgresql://user:secret@host": the part between ':' and '@' of the
 * authority. libpq looks for the '@' up to the first '/' only, so a raw '?'
 * or '#' may be part of the password. */
static void redact_uri(char *s, int how)
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
			p = star(colon + 1, (size_t)(at - colon - 1), how);
	}
}

static char *redact(char *s, int how)
{
	redact_keyword(s, how);
	redact_query(s, how);
	redact_uri(s, how);
	return s;
}

char *log_redact(char *s)
{
	return redact(s, 0);
}

char *log_redact_dsn(char *s)
{
	return redact(s, REDACT_DSN);
}

/* Stars out every copy of the n bytes at secret in msg. */
static void star_copies(char *msg, const char *secret, size_t n)
{
	for (char *p = msg; (p = memmem(p, strlen(p), secret, n)) != NULL;)
		p = star(p, n, 0);
}

char *log_redact_dsn_error(char *msg, const char *dsn)
{
	char *starred;

	if (!dsn)
		return log_redact(msg);
	/* Out of memory, the message cannot be checked: it is not shown. */
	if (!(starred = strdup(dsn))) {
		star(msg, strlen(msg), 0);
		return msg;
	}
	/* The passwords are the runs that redaction stars in the DSN, word
	 * by word: "password=two words" is starred as "two" and "words". */
	redact(starred, REDACT_SAME_LENGTH | REDACT_DSN);
	for (size_t i = 0; starred[i];) {
		size_t n = strspn(starred + i, "*");

		if (n)
			star_copies(msg, dsn + i, n);
		i += n ? n : 1;
	}
	free(starred);
	return log_redact(msg);
}

/* ---- UTF-8 -------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlong forms, no
 * surrogates), 0 when invalid. Stops at the first bad byte, so it never reads
 * past a terminating NUL. */
static size_t utf8_len(const unsigned char *p)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		lo = p[0] == 0xe0 ? 0xa0 : lo;
		hi = p[0] == 0xed ? 0x9f : hi;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		lo = p[0] == 0xf0 ? 0x90 : lo;
		hi = p[0] == 0xf4 ? 0x8f : hi;
	} else {
		return 0;
	}
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

char *log_utf8_copy(char *dst, size_t size, const char *src)
{
	static const char fffd[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)src;
	size_t n = 0;

	if (size == 0)
		return dst;
	while (*p) {
		size_t len = *p < 0x80 ? 1 : utf8_len(p);
		const char *from = len ? (const char *)p : fffd;
		size_t take = len ? len : 3;

		if (n + take >= size)
			break;
		memcpy(dst + n, from, take);
		n += take;
		p += len ? len : 1;
	}
	dst[n] = '\0';
	return dst;
}

/* A text line shows what it holds: a TAB as \t, another control byte or
 * one that is not part of valid UTF-8 as \xNN (a backslash stays as it
 * is). Cut at a character when out is full. Returns out. */
static char *escape_text(char *out, size_t size, const char *in)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t n = 0;

	while (*p && size > 0) {
		size_t len = *p >= 0x80 ? utf8_len(p) : *p < 0x20 || *p == 0x7f ? 0 : 1;
		char esc[8] = "";
		const char *from = (const char *)p;
		size_t take = len;

		if (!len) {
			snprintf(esc, sizeof(esc), *p == '\t' ? "\\t" : "\\x%02x", *p);
			from = esc;
			take = strlen(esc);
		}
		if (n + take >= size)
			break;
		memcpy(out + n, from, take);
		n += take;
		p += len ? len : 1;
	}
	if (size > 0)
		out[n] = '\0';
	return out;
}

/* ---- fields ------------------------------------------------------------- */

static void copy_field(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
	log_redact(dst);
}

static void copy_fields(struct field_copies *dst, const struct log_fields *f)
{
	static const struct log_fields none;

	f = f ? f : &none;
	copy_field(dst->state, sizeof(dst->state), f->state);
	copy_field(dst->lock_key, sizeof(dst->lock_key), f->lock_key);
	copy_field(dst->node_id, sizeof(dst->node_id), f->node_id);
	copy_field(dst->reason, sizeof(dst->reason), f->reason);
	copy_field(dst->job, sizeof(dst->job), f->job);
	dst->command_pid = f->command_pid;
}

void log_set_context(const struct log_fields *f)
{
	copy_fields(&context, f);
}

static const char *pick(const char *event, const char *ctx)
{
	return *event ? event : *ctx ? ctx : NULL;
}

static void merge_fields(struct line_fields *out, const struct field_copies *ev)
{
	out->state = pick(ev->state, context.state);
	out->lock_key = pick(ev->lock_key, context.lock_key);
	out->node_id = pick(ev->node_id, context.node_id);
	out->reason = pick(ev->reason, context.reason);
	out->command_pid = ev->command_pid ? ev->command_pid : context.command_pid;
	out->job = *ev->job ? ev->job : NULL; /* the event's alone */
}

/* ---- output ------------------------------------------------------------- */

static void write_text(enum log_level level, const char *msg, const char *job)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	const char *sep = job ? ": " : "";

	job = job ? job : "";
	if (journal_prefixes) {
		fprintf(stderr, "<%d>%s%s%s\n", (int)level, job, sep, msg);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ld pgleader[%d] %s: %s%s%s\n", stamp,
		ts.tv_nsec / 1000000, (int)getpid(), level_tag(level), job, sep, msg);
}

/* Sends the line and its fields to the journal; false when that failed (no
 * journald at the socket), so that the caller writes it to stderr instead. */
static bool send_journal(enum log_level level, const char *msg,
			 const struct line_fields *f)
{
	const struct { const char *name, *value; } rows[] = {
		{ "PGLEADER_STATE", f->state }, { "PGLEADER_LOCK_KEY", f->lock_key },
		{ "PGLEADER_NODE_ID", f->node_id }, { "PGLEADER_REASON", f->reason },
	};
	char head[3][128], pid[48], text[LOG_MSG_MAX + 16], vals[4][LOG_MSG_MAX + 32];
	struct iovec iov[9];
	int n = 0;

	snprintf(text, sizeof(text), "MESSAGE=%s", msg);
	snprintf(head[0], sizeof(head[0]), "PRIORITY=%d", (int)level);
	/* a job's output is the job's own line: journalctl -t NAME finds it */
	snprintf(head[1], sizeof(head[1]), "SYSLOG_IDENTIFIER=%s",
		 f->job ? f->job : program_invocation_short_name);
	snprintf(head[2], sizeof(head[2]), "PGLEADER_JOB=%s", f->job ? f->job : "");
	iov[n++] = (struct iovec){ text, strlen(text) };
	for (int i = 0; i < (f->job ? 3 : 2); i++)
		iov[n++] = (struct iovec){ head[i], strlen(head[i]) };
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (!rows[i].value)
			continue;
		snprintf(vals[i], sizeof(vals[i]), "%s=%s", rows[i].name, rows[i].value);
		iov[n++] = (struct iovec){ vals[i], strlen(vals[i]) };
	}
	if (f->command_pid) {
		snprintf(pid, sizeof(pid), "PGLEADER_COMMAND_PID=%ld", f->command_pid);
		iov[n++] = (struct iovec){ pid, strlen(pid) };
	}
	return sd_journal_sendv(iov, n) >= 0;
}

/* A JSON string from any bytes: invalid UTF-8 becomes U+FFFD. */
static json_t *json_text(const char *s)
{
	char buf[3 * LOG_MSG_MAX + 1];

	return json_string(log_utf8_copy(buf, sizeof(buf), s));
}

static json_t *json_line(enum log_level level, const char *msg,
			 const struct line_fields *f)
{
	const struct { const char *name, *value; } rows[] = {
		{ "node_id", f->node_id }, { "lock_key", f->lock_key },
		{ "state", f->state }, { "reason", f->reason },
	};
	json_t *o = json_object();
	struct timespec ts;
	struct tm tm;
	char stamp[48];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(stamp + strlen(stamp), sizeof(stamp) - strlen(stamp), ".%03ldZ",
		 ts.tv_nsec / 1000000);
	json_object_set_new(o, "time", json_string(stamp));
	json_object_set_new(o, "level", json_string(level_tag(level)));
	json_object_set_new(o, "message", json_text(msg));
	json_object_set_new(o, "pid", json_integer(getpid()));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].value)
			json_object_set_new(o, rows[i].name, json_text(rows[i].value));
	if (f->command_pid)
		json_object_set_new(o, "command_pid", json_integer(f->command_pid));
	if (f->job)
		json_object_set_new(o, "job", json_text(f->job));
	return o;
}

/* Under journald the "<N>" prefix gives the line its priority and is
 * stripped, so that the journal's MESSAGE is the JSON object itself. */
static void write_json(enum log_level level, const char *msg,
		       const struct line_fields *f)
{
	json_t *o = json_line(level, msg, f);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(o);
	if (!text) {
		write_text(level, msg, f->job); /* out of memory: the line still counts */
		return;
	}
	if (journal_prefixes)
		fprintf(stderr, "<%d>", (int)level);
	fprintf(stderr, "%s\n", text);
	free(text);
}

static void vlog(enum log_level level, const struct log_fields *fields,
		 const char *fmt, va_list ap)
{
	char line[LOG_MSG_MAX], shown[LOG_MSG_MAX];
	struct field_copies ev;
	struct line_fields f;

	vsnprintf(line, sizeof(line), fmt, ap);
	log_redact(line);
	/* libpq messages end in a newline; one event is one line. */
	for (char *c = line; *c; c++)
		if (*c == '\n')
			*c = c[1] ? ' ' : '\0';
	copy_fields(&ev, fields);
	merge_fields(&f, &ev);

	if (format == LOG_FORMAT_JSON) {
		write_json(level, line, &f);
		return;
	}
	escape_text(shown, sizeof(shown), line);
	if (!journal_native || !send_journal(level, shown, &f))
		write_text(level, shown, f.job);
}

void log_event(enum log_level level, const struct log_fields *f, const char *fmt, ...)
{
	va_list ap;

	if (level > threshold)
		return;
	va_start(ap, fmt);
	vlog(level, f, fmt, ap);
	va_end(ap);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > threshold)
		return;
	va_start(ap, fmt);
	vlog(level, NULL, fmt, ap);
	va_end(ap);
}
