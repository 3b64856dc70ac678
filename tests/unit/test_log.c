/* test_log.c: password redaction, log line format, levels, journald prefixes
 * and fields, JSON lines. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* ---- sd_journal_sendv, as journald would receive it --------------------- */

/* This binary links no libsystemd: log.c's journal lines land here. */
#define SENT_MAX 16
static char sent[SENT_MAX][LOG_MSG_MAX + 64];
static int nsent, sends;
static int send_result; /* what sd_journal_sendv returns: 0, or -errno */

int sd_journal_sendv(const struct iovec *iov, int n);
int sd_journal_sendv(const struct iovec *iov, int n)
{
	sends++;
	nsent = 0;
	for (int i = 0; i < n && i < SENT_MAX; i++) {
		size_t len = iov[i].iov_len < sizeof(sent[i]) - 1 ? iov[i].iov_len
								   : sizeof(sent[i]) - 1;

		memcpy(sent[i], iov[i].iov_base, len);
		sent[i][len] = '\0';
		nsent++;
	}
	return send_result;
}

/* The value of journal field name in the last send, or NULL. */
static const char *sent_field(const char *name)
{
	size_t len = strlen(name);

	for (int i = 0; i < nsent; i++)
		if (strncmp(sent[i], name, len) == 0 && sent[i][len] == '=')
			return sent[i] + len + 1;
	return NULL;
}

/* ---- log_redact ------------------------------------------------------- */

static const struct {
	const char *in;
	const char *want;
} redact_rows[] = {
	/* keyword=value, libpq's conninfo syntax */
	{ "host=db password=secret dbname=x", "host=db password=**** dbname=x" },
	{ "password=secret", "password=****" },
	{ "Password=Secret", "Password=****" },
	{ "PASSWORD = x", "PASSWORD = *" },
	{ "password\t=\tsecret\tdbname=x", "password\t=\t****\tdbname=x" },
	{ "password = 'a b' user=u", "password = '***' user=u" },
	{ "password='se cr\\'et' host=db", "password='****' host=db" },
	{ "password='unterminated", "password='****" },
	{ "host=db password='' dbname=x", "host=db password='' dbname=x" },
	/* libpq takes the next word after "= " as the value */
	{ "password= dbname=x", "password= ****" },
	/* a backslash escapes white space in a bare value: one password */
	{ "host=db password=se\\ cret dbname=x", "host=db password=**** dbname=x" },
	/* '&' is part of a bare conninfo value */
	{ "host=db password=a&b dbname=x", "host=db password=*** dbname=x" },
	{ "password=secret\nnext line", "password=****\nnext line" },
	{ "user=u password=x1 password=x2", "user=u password=** password=**" },
	{ "PGPASSWORD=secret", "PGPASSWORD=****" },
	/* URIs */
	{ "postgresql://u:secret@h/db", "postgresql://u:****@h/db" },
	{ "postgresql://u:secret@h", "postgresql://u:****@h" },
	{ "postgres://u:s%40x@h:5432/db?sslmode=require",
	  "postgres://u:****@h:5432/db?sslmode=require" },
	{ "postgresql://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write",
	  "postgresql://u:**@h1:5432,h2:5433/db?target_session_attrs=read-write" },
	{ "postgresql://h/db?user=u&password=secret&sslmode=require",
	  "postgresql://h/db?user=u&password=****&sslmode=require" },
	{ "postgresql://u:pw@h/db?password=two", "postgresql://u:**@h/db?password=***" },
	/* raw '@', '?', '#' in the password: libpq takes them (up to the '/') */
	{ "postgresql://u:p@ss@h/db", "postgresql://u:****@h/db" },
	{ "postgresql://u:pa?ss@h/db", "postgresql://u:****@h/db" },
	{ "postgresql://u:pa#ss@h/db", "postgresql://u:****@h/db" },
	{ "cannot connect to postgresql://u:secret@h/db: timeout",
	  "cannot connect to postgresql://u:****@h/db: timeout" },
	{ "a postgresql://a:x@h/db b postgres://b:yy@k/db",
	  "a postgresql://a:*@h/db b postgres://b:**@k/db" },
	/* a percent-encoded parameter name: libpq decodes it (issue 17, 6.5) */
	{ "postgresql://u@h/db?pass%77ord=secret", "postgresql://u@h/db?pass%77ord=****" },
	{ "postgresql://h/db?%70assword=se%20cret&user=u",
	  "postgresql://h/db?%70assword=****&user=u" },
	{ "postgresql://h/db?sslpass%77ord=k&x=1", "postgresql://h/db?sslpass%77ord=*&x=1" },
	{ "postgresql://h/db?pass%77ord=x timed out", "postgresql://h/db?pass%77ord=* timed out" },
	/* nothing to hide: unchanged */
	{ "", "" },
	{ "host=db user=u dbname=x", "host=db user=u dbname=x" },
	{ "passwordless=1", "passwordless=1" },
	{ "nopassword=x", "nopassword=x" },
	{ "sslpassword=keysecret sslmode=require", "sslpassword=**** sslmode=require" },
	{ "host=h sslpassword = 'k s'", "host=h sslpassword = '***'" },
	{ "my_password=x", "my_password=x" },
	{ "FATAL:  password authentication failed for user \"u\"",
	  "FATAL:  password authentication failed for user \"u\"" },
	{ "postgresql://u@h/db", "postgresql://u@h/db" },
	{ "postgresql://h:5432/db", "postgresql://h:5432/db" },
	{ "postgresql:///db?host=/tmp", "postgresql:///db?host=/tmp" },
	{ "retrying in 1.0s: connection refused", "retrying in 1.0s: connection refused" },
};

START_TEST(test_redact)
{
	char buf[256];
	size_t len = strlen(redact_rows[_i].in);

	snprintf(buf, sizeof(buf), "%s", redact_rows[_i].in);
	/* in place, never longer: a password is at most STARS stars */
	ck_assert_ptr_eq(log_redact(buf), buf);
	ck_assert_uint_le(strlen(buf), len);
	ck_assert_str_eq(buf, redact_rows[_i].want);
	/* and again: nothing more to hide */
	log_redact(buf);
	ck_assert_str_eq(buf, redact_rows[_i].want);
}
END_TEST

START_TEST(test_redact_long_line)
{
	char buf[4096], want[4096];

	memset(buf, 'x', 3000);
	snprintf(buf + 3000, sizeof(buf) - 3000, " password=hunter2 tail");
	memcpy(want, buf, sizeof(want));
	snprintf(want + 3000, sizeof(want) - 3000, " password=**** tail");
	log_redact(buf);
	ck_assert_str_eq(buf, want);
	ck_assert_ptr_null(strstr(buf, "hunter2"));
}
END_TEST

/* ---- log_redact_dsn ----------------------------------------------------- */

/* One whole connection string, read to its end as libpq reads it. */
static const struct {
	const char *in, *want;
} dsn_rows[] = {
	/* unquoted "two words": libpq takes the second for a keyword */
	{ "host=h password=two words", "host=h password=****" },
	{ "password=two words and more port=5", "password=**** port=5" },
	{ "password=a b", "password=***" },
	{ "password=secret port=5", "password=**** port=5" },
	/* a URI query's value runs to '&' or the end */
	{ "postgresql://h/db?pass%77ord=a b c", "postgresql://h/db?pass%77ord=****" },
	{ "postgresql://h/db?password=a b&user=u", "postgresql://h/db?password=***&user=u" },
	{ "postgresql://u:secret@h/db", "postgresql://u:****@h/db" },
	{ "host=h user=u", "host=h user=u" },
};

START_TEST(test_redact_dsn)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", dsn_rows[_i].in);
	ck_assert_ptr_eq(log_redact_dsn(buf), buf);
	ck_assert_str_eq(buf, dsn_rows[_i].want);
}
END_TEST

/* ---- log_redact_dsn_error ---------------------------------------------- */

/* libpq's own messages (PQconninfoParse, libpq 15) for the DSN beside them. */
static const struct {
	const char *dsn, *msg, *want;
} dsn_error_rows[] = {
	/* the raw token of a percent-decoding error, in a URI's authority ... */
	{ "postgresql://app:50%off@h/db",
	  "invalid percent-encoded token: \"50%off\"",
	  "invalid percent-encoded token: \"****\"" },
	{ "postgresql://app:%00x@h/db",
	  "forbidden value %00 in percent-encoded value: \"%00x\"",
	  "forbidden value %00 in percent-encoded value: \"****\"" },
	/* ... and in its query */
	{ "postgresql://h/db?user=u&password=50%off",
	  "invalid percent-encoded token: \"50%off\"",
	  "invalid percent-encoded token: \"****\"" },
	/* every copy, and a password that is also a keyword form's */
	{ "postgresql://u:s3cr%zz@h/db?password=s3cr%zz",
	  "a \"s3cr%zz\" b s3cr%zz", "a \"****\" b ****" },
	{ "host=h password='50%off' sslpassword=k%zz", "x 50%off y k%zz",
	  "x **** y ****" },
	/* the whole URI quoted: log_redact's own part */
	{ "postgresql://u:pw@[::1]x/db",
	  "unexpected character \"x\" at position 24 in URI (expected \":\" or \"/\"): \"postgresql://u:pw@[::1]x/db\"",
	  "unexpected character \"x\" at position 24 in URI (expected \":\" or \"/\"): \"postgresql://u:**@[::1]x/db\"" },
	/* other tokens, and DSNs without a password, stay as they are */
	{ "postgresql://app%zz:pw@h/db", "invalid percent-encoded token: \"app%zz\"",
	  "invalid percent-encoded token: \"app%zz\"" },
	{ "postgresql://app@h/d%zz", "invalid percent-encoded token: \"d%zz\"",
	  "invalid percent-encoded token: \"d%zz\"" },
	{ "postgresql://app:@h/d%zz", "invalid percent-encoded token: \"d%zz\"",
	  "invalid percent-encoded token: \"d%zz\"" },
	{ "host=h bogus=1", "invalid connection option \"bogus\"",
	  "invalid connection option \"bogus\"" },
	{ NULL, "password=x in a message", "password=* in a message" },
	/* a percent-encoded parameter name; "two words" (issue 17, 6.5) */
	{ "postgresql://h/db?pass%77ord=50%off", "invalid percent-encoded token: \"50%off\"",
	  "invalid percent-encoded token: \"****\"" },
	{ "host=h password=two words", "missing \"=\" after \"words\" in connection info string",
	  "missing \"=\" after \"****\" in connection info string" },
};

START_TEST(test_redact_dsn_error)
{
	char buf[512];
	size_t len = strlen(dsn_error_rows[_i].msg);

	snprintf(buf, sizeof(buf), "%s", dsn_error_rows[_i].msg);
	ck_assert_ptr_eq(log_redact_dsn_error(buf, dsn_error_rows[_i].dsn), buf);
	ck_assert_uint_le(strlen(buf), len);
	ck_assert_str_eq(buf, dsn_error_rows[_i].want);
}
END_TEST

/* ---- log_msg ---------------------------------------------------------- */

static int saved_stderr = -1;
static FILE *captured;

/* stderr goes to a temporary file until capture_end. */
static void capture_begin(void)
{
	fflush(stderr);
	captured = tmpfile();
	ck_assert_ptr_nonnull(captured);
	saved_stderr = dup(STDERR_FILENO);
	ck_assert_int_ge(saved_stderr, 0);
	ck_assert_int_eq(dup2(fileno(captured), STDERR_FILENO), STDERR_FILENO);
}

static const char *capture_end(void)
{
	static char buf[8192];
	size_t n;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	saved_stderr = -1;
	rewind(captured);
	n = fread(buf, 1, sizeof(buf) - 1, captured);
	buf[n] = '\0';
	fclose(captured);
	captured = NULL;
	return buf;
}

/* The file stderr now points to, as systemd writes it in JOURNAL_STREAM. */
static void set_journal_stream_to_stderr(void)
{
	struct stat st;
	char v[64];

	ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", v, 1);
}

static void ck_matches(const char *s, const char *pattern)
{
	regex_t re;
	int rc = regcomp(&re, pattern, REG_EXTENDED);

	ck_assert_int_eq(rc, 0);
	rc = regexec(&re, s, 0, NULL, 0);
	regfree(&re);
	ck_assert_msg(rc == 0, "\"%s\" does not match /%s/", s, pattern);
}

/* "2026-01-31T12:34:56.789 pgleader[PID] LEVEL: MESSAGE\n" */
static void ck_plain_line(const char *line, const char *level, const char *msg)
{
	char pattern[512];

	snprintf(pattern, sizeof(pattern),
		 "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} "
		 "pgleader\\[%d\\] %s: ", (int)getpid(), level);
	ck_matches(line, pattern);
	ck_assert_ptr_nonnull(strchr(line, ' '));
	ck_assert_str_eq(strstr(strchr(line, ' ') + 1, ": ") + 2, msg);
}

START_TEST(test_plain_format)
{
	const char *out;
	struct tm tm;
	time_t before = time(NULL), stamp;

	unsetenv("JOURNAL_STREAM");
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_info("hello %d from %s", 42, "node-a");
	out = capture_end();
	ck_plain_line(out, "info", "hello 42 from node-a\n");
	/* the timestamp is the local time, now */
	memset(&tm, 0, sizeof(tm));
	ck_assert_ptr_nonnull(strptime(out, "%Y-%m-%dT%H:%M:%S", &tm));
	tm.tm_isdst = -1;
	stamp = mktime(&tm);
	ck_assert_msg(stamp >= before - 1 && stamp <= time(NULL) + 1,
		      "timestamp %s is not now", out);
}
END_TEST

static const struct {
	enum log_level level;
	const char *tag;
	int priority;
} level_rows[] = {
	{ LOG_LEVEL_ERROR, "error", 3 },
	{ LOG_LEVEL_WARNING, "warning", 4 },
	{ LOG_LEVEL_NOTICE, "notice", 5 },
	{ LOG_LEVEL_INFO, "info", 6 },
	{ LOG_LEVEL_DEBUG, "debug", 7 },
};

START_TEST(test_level_tags)
{
	const char *out;

	unsetenv("JOURNAL_STREAM");
	capture_begin();
	log_init(LOG_LEVEL_DEBUG);
	log_msg(level_rows[_i].level, "%s", "something happened");
	out = capture_end();
	ck_plain_line(out, level_rows[_i].tag, "something happened\n");
}
END_TEST

START_TEST(test_macros)
{
	const char *out;

	unsetenv("JOURNAL_STREAM");
	capture_begin();
	log_init(LOG_LEVEL_DEBUG);
	log_error("e%d", 1);
	log_warning("w%d", 2);
	log_notice("n%d", 3);
	log_info("i%d", 4);
	log_debug("d%d", 5);
	out = capture_end();
	ck_matches(out, "^[^\n]* error: e1\n[^\n]* warning: w2\n[^\n]* notice: n3\n"
		   "[^\n]* info: i4\n[^\n]* debug: d5\n$");
}
END_TEST

/* Every level against every threshold: printed when at least as important. */
START_TEST(test_threshold)
{
	enum log_level threshold = level_rows[_i].level;

	unsetenv("JOURNAL_STREAM");
	log_init(LOG_LEVEL_INFO);
	ck_assert_int_eq(log_get_level(), LOG_LEVEL_INFO);
	log_set_level(threshold);
	ck_assert_int_eq(log_get_level(), threshold);
	for (size_t k = 0; k < sizeof(level_rows) / sizeof(level_rows[0]); k++) {
		const char *out;

		capture_begin();
		log_msg(level_rows[k].level, "%s", "m");
		out = capture_end();
		if (level_rows[k].level <= threshold)
			ck_plain_line(out, level_rows[k].tag, "m\n");
		else
			ck_assert_msg(out[0] == '\0', "threshold %s printed \"%s\"",
				      level_rows[_i].tag, out);
	}
	/* log_init sets the threshold too */
	log_init(threshold);
	ck_assert_int_eq(log_get_level(), threshold);
}
END_TEST

static const struct {
	const char *msg;
	const char *want;
} fold_rows[] = {
	{ "connection failed\n", "connection failed" },
	{ "FATAL:  terminating connection\nDETAIL:  admin\n",
	  "FATAL:  terminating connection DETAIL:  admin" },
	{ "a\n\nb", "a  b" },
	{ "\nleading", " leading" },
	{ "no newline", "no newline" },
};

START_TEST(test_one_line)
{
	const char *out;
	char want[256];

	unsetenv("JOURNAL_STREAM");
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_warning("%s", fold_rows[_i].msg);
	out = capture_end();
	snprintf(want, sizeof(want), "%s\n", fold_rows[_i].want);
	ck_plain_line(out, "warning", want);
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
}
END_TEST

START_TEST(test_long_message_one_line)
{
	static char big[5000];
	const char *out;

	unsetenv("JOURNAL_STREAM");
	memset(big, 'y', sizeof(big) - 1);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_info("%s", big);
	out = capture_end();
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	ck_assert_uint_gt(strlen(out), 1000);
	ck_assert_uint_lt(strlen(out), 2048 + 64);
}
END_TEST

START_TEST(test_journal_prefix)
{
	const char *out;
	char want[64];

	capture_begin();
	set_journal_stream_to_stderr();
	log_init(LOG_LEVEL_DEBUG); /* after JOURNAL_STREAM and the redirection */
	log_msg(level_rows[_i].level, "lost leader lease: %s", "connection closed");
	out = capture_end();
	unsetenv("JOURNAL_STREAM");
	/* no timestamp, no name: journald adds both */
	snprintf(want, sizeof(want), "<%d>lost leader lease: connection closed\n",
		 level_rows[_i].priority);
	ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_journal_stream_mismatch)
{
	static const char *const values[] = {
		"1:1", "garbage", "", "12345", NULL,
	};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		const char *out;

		capture_begin();
		if (values[i])
			setenv("JOURNAL_STREAM", values[i], 1);
		else
			unsetenv("JOURNAL_STREAM");
		log_init(LOG_LEVEL_INFO);
		log_info("%s", "x");
		out = capture_end();
		ck_plain_line(out, "info", "x\n");
	}
	unsetenv("JOURNAL_STREAM");

	/* stderr redirected elsewhere after systemd set it up: no prefixes.
	 * The journal's file stays open so that its inode is not reused. */
	{
		FILE *journal = tmpfile();
		struct stat st;
		char v[64];

		ck_assert_ptr_nonnull(journal);
		ck_assert_int_eq(fstat(fileno(journal), &st), 0);
		snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino);
		setenv("JOURNAL_STREAM", v, 1);
		capture_begin();
		log_init(LOG_LEVEL_INFO);
		log_info("%s", "y");
		ck_plain_line(capture_end(), "info", "y\n");
		fclose(journal);
	}
	unsetenv("JOURNAL_STREAM");
}
END_TEST

/* The decision is made in log_init, not per line. */
START_TEST(test_journal_decided_at_init)
{
	const char *out;

	unsetenv("JOURNAL_STREAM");
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	set_journal_stream_to_stderr();
	log_info("%s", "before");
	log_init(LOG_LEVEL_INFO);
	log_info("%s", "after");
	out = capture_end();
	unsetenv("JOURNAL_STREAM");
	ck_matches(out, "^[^\n]* info: before\n<6>after\n$");
}
END_TEST

/* ---- text lines: TAB and bytes that are not UTF-8 escaped --------------- */

START_TEST(test_text_escapes)
{
	const char *out;

	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_set_format(LOG_FORMAT_TEXT);
	log_info("a\tb \xff\xfe c\x01 d\\e caf\xc3\xa9 \xe2\x82");
	out = capture_end();
	ck_assert_ptr_nonnull(strstr(out, " info: a\\tb \\xff\\xfe c\\x01 d\\e caf\xc3\xa9 \\xe2\\x82\n"));
	ck_assert_ptr_null(strchr(out, '\t'));
}
END_TEST

START_TEST(test_password_redacted_in_line)
{
	const char *out;

	unsetenv("JOURNAL_STREAM");
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_warning("database connection failed: %s; retrying in 1.0s",
		    "host=db password=hunter2 dbname=app");
	log_error("cannot connect: %s", "postgresql://app:hunter3@db1,db2/app");
	out = capture_end();
	ck_assert_ptr_null(strstr(out, "hunter"));
	ck_matches(out, "^[^\n]* warning: database connection failed: host=db "
		   "password=\\*\\*\\*\\* dbname=app; retrying in 1.0s\n"
		   "[^\n]* error: cannot connect: postgresql://app:\\*\\*\\*\\*"
		   "@db1,db2/app\n$");

	/* under journald too */
	capture_begin();
	set_journal_stream_to_stderr();
	log_init(LOG_LEVEL_INFO);
	log_warning("dsn %s", "password='a b c' host=db");
	out = capture_end();
	unsetenv("JOURNAL_STREAM");
	ck_assert_str_eq(out, "<4>dsn password='****' host=db\n");
}
END_TEST

/* ---- log_utf8_copy ----------------------------------------------------- */

static const struct {
	const char *in;
	size_t size;
	const char *want;
} utf8_rows[] = {
	{ "plain ascii", 64, "plain ascii" },
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 64, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
	{ "a\xff" "b", 64, "a\xef\xbf\xbd" "b" },
	{ "lone \xc3", 64, "lone \xef\xbf\xbd" },
	{ "overlong \xc0\xaf", 64, "overlong \xef\xbf\xbd\xef\xbf\xbd" },
	{ "surrogate \xed\xa0\x80", 64, "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	{ "too big \xf4\x90\x80\x80", 64, "too big \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	{ "cut \xf0\x9f\x98", 64, "cut \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
	/* truncated at a character boundary, never inside one */
	{ "ab\xc3\xa9" "cd", 4, "ab" },
	{ "ab\xc3\xa9" "cd", 5, "ab\xc3\xa9" },
	{ "ab\xff", 5, "ab" },
	{ "", 1, "" },
};

START_TEST(test_utf8_copy)
{
	char buf[64];

	memset(buf, 'z', sizeof(buf));
	ck_assert_ptr_eq(log_utf8_copy(buf, utf8_rows[_i].size, utf8_rows[_i].in), buf);
	ck_assert_str_eq(buf, utf8_rows[_i].want);
	ck_assert_uint_lt(strlen(buf), utf8_rows[_i].size);
}
END_TEST

/* ---- JSON lines -------------------------------------------------------- */

/* Parses out, which must be exactly one line holding one JSON object. */
static json_t *one_json_line(const char *out)
{
	json_error_t err;
	json_t *o;
	size_t len = strlen(out);

	ck_assert_msg(len > 0 && out[len - 1] == '\n', "not one line: \"%s\"", out);
	ck_assert_ptr_eq(strchr(out, '\n'), out + len - 1);
	o = json_loads(out, JSON_REJECT_DUPLICATES, &err);
	ck_assert_msg(o != NULL, "not JSON (%s): %s", err.text, out);
	ck_assert(json_is_object(o));
	return o;
}

static const char *jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_string(v), "\"%s\" is not a string", key);
	return json_string_value(v);
}

static void json_setup(void)
{
	unsetenv("JOURNAL_STREAM");
	log_set_context(NULL);
	log_set_format(LOG_FORMAT_JSON);
}

START_TEST(test_json_line_fields)
{
	const struct log_fields ctx = { .node_id = "node-a", .lock_key = "-9223372036854775808" };
	const struct log_fields ev = { .state = "leader", .reason = "acquired",
				       .command_pid = 4242 };
	time_t before = time(NULL);
	struct tm tm;
	json_t *o;
	const char *t;

	json_setup();
	log_set_context(&ctx);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_NOTICE, &ev, "acquired leader lease (key %s)", ctx.lock_key);
	o = one_json_line(capture_end());
	t = jstr(o, "time");
	/* RFC 3339, UTC, milliseconds */
	ck_matches(t, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$");
	memset(&tm, 0, sizeof(tm));
	ck_assert_ptr_nonnull(strptime(t, "%Y-%m-%dT%H:%M:%S", &tm));
	ck_assert_msg(timegm(&tm) >= before - 1 && timegm(&tm) <= time(NULL) + 1,
		      "time %s is not now in UTC", t);
	ck_assert_str_eq(jstr(o, "level"), "notice");
	ck_assert_str_eq(jstr(o, "message"), "acquired leader lease (key -9223372036854775808)");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "pid")), getpid());
	ck_assert_str_eq(jstr(o, "node_id"), "node-a");
	ck_assert_str_eq(jstr(o, "lock_key"), "-9223372036854775808");
	ck_assert_str_eq(jstr(o, "state"), "leader");
	ck_assert_str_eq(jstr(o, "reason"), "acquired");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "command_pid")), 4242);
	json_decref(o);
}
END_TEST

/* The context goes on every line, log_msg's too; an event's field wins over
 * it for that line only; NULL clears it. */
START_TEST(test_json_context)
{
	const struct log_fields ctx = { .node_id = "n1", .state = "standby", .command_pid = 7 };
	const struct log_fields ev = { .state = "leader" };
	const char *out;
	json_t *o;

	json_setup();
	log_set_context(&ctx);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_INFO, &ev, "one");
	out = capture_end();
	o = one_json_line(out);
	ck_assert_str_eq(jstr(o, "state"), "leader");
	ck_assert_str_eq(jstr(o, "node_id"), "n1");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "command_pid")), 7);
	json_decref(o);

	capture_begin();
	log_info("two");
	o = one_json_line(capture_end());
	ck_assert_str_eq(jstr(o, "state"), "standby");
	ck_assert_str_eq(jstr(o, "message"), "two");
	json_decref(o);

	log_set_context(NULL);
	capture_begin();
	log_info("three");
	o = one_json_line(capture_end());
	/* absent fields are left out, not null */
	ck_assert_uint_eq(json_object_size(o), 4);
	ck_assert_ptr_nonnull(json_object_get(o, "pid"));
	ck_assert_ptr_null(json_object_get(o, "state"));
	ck_assert_ptr_null(json_object_get(o, "command_pid"));
	json_decref(o);
}
END_TEST

START_TEST(test_json_levels)
{
	json_t *o;

	json_setup();
	log_init(LOG_LEVEL_INFO);
	log_set_level(level_rows[_i].level);
	for (size_t k = 0; k < sizeof(level_rows) / sizeof(level_rows[0]); k++) {
		const char *out;

		capture_begin();
		log_msg(level_rows[k].level, "m");
		out = capture_end();
		if (level_rows[k].level > level_rows[_i].level) {
			ck_assert_str_eq(out, "");
			continue;
		}
		o = one_json_line(out);
		ck_assert_str_eq(jstr(o, "level"), level_rows[k].tag);
		json_decref(o);
	}
}
END_TEST

/* Whatever bytes a message carries, the line is valid JSON and reads back
 * as the message, invalid UTF-8 as U+FFFD and newlines as spaces. */
static const struct {
	const char *msg;
	const char *want;
} hostile_rows[] = {
	{ "say \"hi\" \\ bye", "say \"hi\" \\ bye" },
	{ "ctl \x01\x02\x1b[31m\t\x7f end", "ctl \x01\x02\x1b[31m\t\x7f end" },
	{ "multi\nline\r\n", "multi line\r" },
	{ "bad \xff\xfe bytes", "bad \xef\xbf\xbd\xef\xbf\xbd bytes" },
	{ "half \xe2\x82", "half \xef\xbf\xbd\xef\xbf\xbd" },
	{ "caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80" },
	{ "</script>{\"a\":1}", "</script>{\"a\":1}" },
};

START_TEST(test_json_hostile_message)
{
	json_t *o;
	const struct log_fields ev = { .reason = hostile_rows[_i].msg,
				       .node_id = hostile_rows[_i].msg };

	json_setup();
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_WARNING, &ev, "%s", hostile_rows[_i].msg);
	o = one_json_line(capture_end());
	ck_assert_str_eq(jstr(o, "message"), hostile_rows[_i].want);
	json_decref(o);
}
END_TEST

START_TEST(test_json_long_message)
{
	static char big[5000];
	const char *out;
	json_t *o;

	json_setup();
	/* every byte invalid: the longest escaped form */
	memset(big, '\xff', sizeof(big) - 1);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_info("%s", big);
	out = capture_end();
	o = one_json_line(out);
	ck_assert_uint_gt(strlen(jstr(o, "message")), 1000);
	json_decref(o);
}
END_TEST

START_TEST(test_json_password_redacted)
{
	const struct log_fields ev = { .reason = "dsn password=hunter4 host=db" };
	const struct log_fields ctx = { .node_id = "postgresql://u:hunter5@h/db" };
	const char *out;
	json_t *o;

	json_setup();
	log_set_context(&ctx);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_ERROR, &ev, "cannot connect: %s",
		  "host=db password='hunter 2' dbname=app");
	log_warning("uri %s", "postgresql://app:hunter3@db1/app");
	out = capture_end();
	ck_assert_ptr_null(strstr(out, "hunter"));
	o = one_json_line(strchr(out, '\n') + 1);
	ck_assert_str_eq(jstr(o, "message"), "uri postgresql://app:****@db1/app");
	json_decref(o);
	*(char *)(strchr(out, '\n') + 1) = '\0';
	o = one_json_line(out);
	ck_assert_str_eq(jstr(o, "message"),
			 "cannot connect: host=db password='****' dbname=app");
	ck_assert_str_eq(jstr(o, "reason"), "dsn password=**** host=db");
	ck_assert_str_eq(jstr(o, "node_id"), "postgresql://u:****@h/db");
	json_decref(o);
}
END_TEST

/* Under journald a JSON line keeps the priority prefix, which journald
 * strips, and is not also sent natively. */
START_TEST(test_json_under_journal)
{
	const char *out;
	json_t *o;

	json_setup();
	capture_begin();
	set_journal_stream_to_stderr();
	log_init(LOG_LEVEL_INFO);
	log_warning("w");
	out = capture_end();
	unsetenv("JOURNAL_STREAM");
	ck_assert_int_eq(strncmp(out, "<4>{", 4), 0);
	o = one_json_line(out + 3);
	ck_assert_str_eq(jstr(o, "message"), "w");
	json_decref(o);
	ck_assert_int_eq(sends, 0);
}
END_TEST

/* The text format does not change with fields or context. */
START_TEST(test_text_ignores_fields)
{
	const struct log_fields ctx = { .node_id = "n", .state = "leader" };

	unsetenv("JOURNAL_STREAM");
	log_set_format(LOG_FORMAT_TEXT);
	log_set_context(&ctx);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_INFO, &ctx, "plain %d", 1);
	ck_plain_line(capture_end(), "info", "plain 1\n");
	ck_assert_int_eq(sends, 0);
}
END_TEST

/* ---- journald: native fields ------------------------------------------- */

static int journal_peer = -1;

/* stderr becomes a socket, as journald's stream is, named by JOURNAL_STREAM. */
static void journal_socket_begin(void)
{
	int sv[2];

	fflush(stderr);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	saved_stderr = dup(STDERR_FILENO);
	ck_assert_int_eq(dup2(sv[0], STDERR_FILENO), STDERR_FILENO);
	close(sv[0]);
	journal_peer = sv[1];
	set_journal_stream_to_stderr();
	log_set_context(NULL);
	log_set_format(LOG_FORMAT_TEXT);
	log_init(LOG_LEVEL_DEBUG);
}

/* What reached the stream socket instead of the native protocol. */
static const char *journal_socket_end(void)
{
	static char buf[8192];
	ssize_t n;

	fflush(stderr);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	saved_stderr = -1;
	unsetenv("JOURNAL_STREAM");
	fcntl(journal_peer, F_SETFL, O_NONBLOCK);
	n = read(journal_peer, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(journal_peer);
	journal_peer = -1;
	return buf;
}

START_TEST(test_journal_fields)
{
	const struct log_fields ctx = { .node_id = "node-a", .lock_key = "42" };
	const struct log_fields ev = { .state = "leader", .command_pid = 4242,
				       .reason = "lock granted" };

	journal_socket_begin();
	log_set_context(&ctx);
	log_event(LOG_LEVEL_NOTICE, &ev, "acquired leader lease (key %d)", 42);
	ck_assert_str_eq(journal_socket_end(), ""); /* once, not twice */
	ck_assert_int_eq(sends, 1);
	ck_assert_str_eq(sent[0], "MESSAGE=acquired leader lease (key 42)");
	ck_assert_str_eq(sent_field("PRIORITY"), "5");
	ck_assert_str_eq(sent_field("SYSLOG_IDENTIFIER"), "test_log");
	ck_assert_str_eq(sent_field("PGLEADER_STATE"), "leader");
	ck_assert_str_eq(sent_field("PGLEADER_NODE_ID"), "node-a");
	ck_assert_str_eq(sent_field("PGLEADER_LOCK_KEY"), "42");
	ck_assert_str_eq(sent_field("PGLEADER_COMMAND_PID"), "4242");
	ck_assert_str_eq(sent_field("PGLEADER_REASON"), "lock granted");
	ck_assert_int_eq(nsent, 8);
}
END_TEST

/* A line of a job's output (DESIGN 13) is the job's: its name is the
 * journal's SYSLOG_IDENTIFIER, PGLEADER_JOB names it too; the stream, when
 * the journal cannot be reached, gets "NAME: " before the line. */
START_TEST(test_journal_job_output)
{
	const struct log_fields ev = { .job = "nightly" };

	journal_socket_begin();
	log_event(LOG_LEVEL_INFO, &ev, "%s", "copied 12 rows \x01");
	ck_assert_str_eq(journal_socket_end(), "");
	ck_assert_int_eq(sends, 1);
	ck_assert_str_eq(sent_field("MESSAGE"), "copied 12 rows \\x01");
	ck_assert_str_eq(sent_field("SYSLOG_IDENTIFIER"), "nightly");
	ck_assert_str_eq(sent_field("PGLEADER_JOB"), "nightly");
	ck_assert_str_eq(sent_field("PRIORITY"), "6");
	/* pgleader's own next line is pgleader's again */
	journal_socket_begin();
	log_msg(LOG_LEVEL_INFO, "m");
	journal_socket_end();
	ck_assert_str_eq(sent_field("SYSLOG_IDENTIFIER"), "test_log");
	ck_assert_ptr_null(sent_field("PGLEADER_JOB"));
	/* no journald at the socket: the stream, named */
	journal_socket_begin();
	send_result = -ECONNREFUSED;
	log_event(LOG_LEVEL_INFO, &ev, "%s", "done");
	send_result = 0;
	ck_assert_str_eq(journal_socket_end(), "<6>nightly: done\n");
}
END_TEST

/* Text and JSON: "NAME: " before the line, or the job in its own field. */
START_TEST(test_job_output_line)
{
	const struct log_fields ev = { .job = "nightly" };
	json_t *o;

	log_set_context(NULL);
	log_set_format(LOG_FORMAT_TEXT);
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_INFO, &ev, "%s", "copied 12 rows");
	ck_plain_line(capture_end(), "info", "nightly: copied 12 rows\n");
	json_setup();
	capture_begin();
	log_init(LOG_LEVEL_INFO);
	log_event(LOG_LEVEL_INFO, &ev, "%s", "copied 12 rows");
	o = one_json_line(capture_end());
	ck_assert_str_eq(jstr(o, "message"), "copied 12 rows");
	ck_assert_str_eq(jstr(o, "job"), "nightly");
	json_decref(o);
}
END_TEST

START_TEST(test_journal_priorities)
{
	journal_socket_begin();
	log_msg(level_rows[_i].level, "m");
	ck_assert_str_eq(journal_socket_end(), "");
	ck_assert_int_eq(sends, 1);
	ck_assert_int_eq(atoi(sent_field("PRIORITY")), level_rows[_i].priority);
	/* no fields, none sent */
	ck_assert_int_eq(nsent, 3);
	ck_assert_ptr_null(sent_field("PGLEADER_STATE"));
}
END_TEST

START_TEST(test_journal_redacted)
{
	const struct log_fields ev = { .reason = "password=hunter6" };

	journal_socket_begin();
	log_event(LOG_LEVEL_ERROR, &ev, "dsn %s\n", "postgresql://u:hunter7@h/db");
	ck_assert_str_eq(journal_socket_end(), "");
	ck_assert_str_eq(sent_field("MESSAGE"), "dsn postgresql://u:****@h/db");
	ck_assert_str_eq(sent_field("PGLEADER_REASON"), "password=****");
}
END_TEST

/* No journald at the socket: the line goes to the stream after all. */
START_TEST(test_journal_send_fails)
{
	const struct log_fields ev = { .state = "leader" };

	send_result = -ENOENT;
	journal_socket_begin();
	log_event(LOG_LEVEL_WARNING, &ev, "lost %s", "it");
	ck_assert_str_eq(journal_socket_end(), "<4>lost it\n");
	ck_assert_int_eq(sends, 1);
}
END_TEST

/* A socket that is not the journal's stream: plain lines, nothing sent. */
START_TEST(test_journal_other_socket)
{
	const char *out;

	journal_socket_begin();
	setenv("JOURNAL_STREAM", "1:1", 1);
	log_init(LOG_LEVEL_INFO);
	log_info("x");
	out = journal_socket_end();
	ck_plain_line(out, "info", "x\n");
	ck_assert_int_eq(sends, 0);
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

#define ROWS(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Each test starts from the defaults, also without a fork per test. */
static void reset(void)
{
	unsetenv("JOURNAL_STREAM");
	log_set_format(LOG_FORMAT_TEXT);
	log_set_context(NULL);
	log_init(LOG_LEVEL_INFO);
	sends = nsent = send_result = 0;
}

static TCase *add_tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, 5);
	tcase_add_checked_fixture(tc, reset, NULL);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc;

	tc = add_tcase(s, "redact");
	tcase_add_loop_test(tc, test_redact, 0, ROWS(redact_rows));
	tcase_add_test(tc, test_redact_long_line);
	tcase_add_loop_test(tc, test_redact_dsn_error, 0, ROWS(dsn_error_rows));
	tcase_add_loop_test(tc, test_redact_dsn, 0, ROWS(dsn_rows));
	tcase_add_test(tc, test_text_escapes);

	tc = add_tcase(s, "format");
	tcase_add_test(tc, test_plain_format);
	tcase_add_loop_test(tc, test_level_tags, 0, ROWS(level_rows));
	tcase_add_test(tc, test_macros);
	tcase_add_loop_test(tc, test_threshold, 0, ROWS(level_rows));
	tcase_add_loop_test(tc, test_one_line, 0, ROWS(fold_rows));
	tcase_add_test(tc, test_long_message_one_line);
	tcase_add_test(tc, test_password_redacted_in_line);

	tc = add_tcase(s, "journald");
	tcase_add_loop_test(tc, test_journal_prefix, 0, ROWS(level_rows));
	tcase_add_test(tc, test_journal_stream_mismatch);
	tcase_add_test(tc, test_journal_decided_at_init);
	tcase_add_test(tc, test_journal_fields);
	tcase_add_test(tc, test_journal_job_output);
	tcase_add_test(tc, test_job_output_line);
	tcase_add_loop_test(tc, test_journal_priorities, 0, ROWS(level_rows));
	tcase_add_test(tc, test_journal_redacted);
	tcase_add_test(tc, test_journal_send_fails);
	tcase_add_test(tc, test_journal_other_socket);

	tc = add_tcase(s, "json");
	tcase_add_loop_test(tc, test_utf8_copy, 0, ROWS(utf8_rows));
	tcase_add_test(tc, test_json_line_fields);
	tcase_add_test(tc, test_json_context);
	tcase_add_loop_test(tc, test_json_levels, 0, ROWS(level_rows));
	tcase_add_loop_test(tc, test_json_hostile_message, 0, ROWS(hostile_rows));
	tcase_add_test(tc, test_json_long_message);
	tcase_add_test(tc, test_json_password_redacted);
	tcase_add_test(tc, test_json_under_journal);
	tcase_add_test(tc, test_text_ignores_fields);

	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
