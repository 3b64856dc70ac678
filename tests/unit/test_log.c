/* test_log.c: password redaction, log line format, levels, journald prefixes. */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* ---- log_redact ------------------------------------------------------- */

static const struct {
	const char *in;
	const char *want;
} redact_rows[] = {
	/* keyword=value, libpq's conninfo syntax */
	{ "host=db password=secret dbname=x", "host=db password=****** dbname=x" },
	{ "password=secret", "password=******" },
	{ "Password=Secret", "Password=******" },
	{ "PASSWORD = x", "PASSWORD = *" },
	{ "password\t=\tsecret\tdbname=x", "password\t=\t******\tdbname=x" },
	{ "password = 'a b' user=u", "password = '***' user=u" },
	{ "password='se cr\\'et' host=db", "password='*********' host=db" },
	{ "password='unterminated", "password='************" },
	{ "host=db password='' dbname=x", "host=db password='' dbname=x" },
	/* libpq takes the next word after "= " as the value */
	{ "password= dbname=x", "password= ********" },
	/* a backslash escapes white space in a bare value: one password */
	{ "host=db password=se\\ cret dbname=x", "host=db password=******** dbname=x" },
	/* '&' is part of a bare conninfo value */
	{ "host=db password=a&b dbname=x", "host=db password=*** dbname=x" },
	{ "password=secret\nnext line", "password=******\nnext line" },
	{ "user=u password=x1 password=x2", "user=u password=** password=**" },
	{ "PGPASSWORD=secret", "PGPASSWORD=******" },
	/* URIs */
	{ "postgresql://u:secret@h/db", "postgresql://u:******@h/db" },
	{ "postgresql://u:secret@h", "postgresql://u:******@h" },
	{ "postgres://u:s%40x@h:5432/db?sslmode=require",
	  "postgres://u:*****@h:5432/db?sslmode=require" },
	{ "postgresql://u:pw@h1:5432,h2:5433/db?target_session_attrs=read-write",
	  "postgresql://u:**@h1:5432,h2:5433/db?target_session_attrs=read-write" },
	{ "postgresql://h/db?user=u&password=secret&sslmode=require",
	  "postgresql://h/db?user=u&password=******&sslmode=require" },
	{ "postgresql://u:pw@h/db?password=two", "postgresql://u:**@h/db?password=***" },
	/* raw '@', '?', '#' in the password: libpq takes them (up to the '/') */
	{ "postgresql://u:p@ss@h/db", "postgresql://u:****@h/db" },
	{ "postgresql://u:pa?ss@h/db", "postgresql://u:*****@h/db" },
	{ "postgresql://u:pa#ss@h/db", "postgresql://u:*****@h/db" },
	{ "cannot connect to postgresql://u:secret@h/db: timeout",
	  "cannot connect to postgresql://u:******@h/db: timeout" },
	{ "a postgresql://a:x@h/db b postgres://b:yy@k/db",
	  "a postgresql://a:*@h/db b postgres://b:**@k/db" },
	/* nothing to hide: unchanged */
	{ "", "" },
	{ "host=db user=u dbname=x", "host=db user=u dbname=x" },
	{ "passwordless=1", "passwordless=1" },
	{ "nopassword=x", "nopassword=x" },
	{ "sslpassword=keysecret sslmode=require", "sslpassword=********* sslmode=require" },
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
	/* in place, same length */
	ck_assert_ptr_eq(log_redact(buf), buf);
	ck_assert_uint_eq(strlen(buf), len);
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
	memcpy(want + 3000 + strlen(" password="), "*******", 7);
	log_redact(buf);
	ck_assert_str_eq(buf, want);
	ck_assert_ptr_null(strstr(buf, "hunter2"));
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
		   "password=\\*\\*\\*\\*\\*\\*\\* dbname=app; retrying in 1.0s\n"
		   "[^\n]* error: cannot connect: postgresql://app:\\*\\*\\*\\*\\*\\*\\*"
		   "@db1,db2/app\n$");

	/* under journald too */
	capture_begin();
	set_journal_stream_to_stderr();
	log_init(LOG_LEVEL_INFO);
	log_warning("dsn %s", "password='a b c' host=db");
	out = capture_end();
	unsetenv("JOURNAL_STREAM");
	ck_assert_str_eq(out, "<4>dsn password='*****' host=db\n");
}
END_TEST

/* ---- suite ------------------------------------------------------------ */

#define ROWS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc;

	tc = tcase_create("redact");
	tcase_set_timeout(tc, 5);
	tcase_add_loop_test(tc, test_redact, 0, ROWS(redact_rows));
	tcase_add_test(tc, test_redact_long_line);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_set_timeout(tc, 5);
	tcase_add_test(tc, test_plain_format);
	tcase_add_loop_test(tc, test_level_tags, 0, ROWS(level_rows));
	tcase_add_test(tc, test_macros);
	tcase_add_loop_test(tc, test_threshold, 0, ROWS(level_rows));
	tcase_add_loop_test(tc, test_one_line, 0, ROWS(fold_rows));
	tcase_add_test(tc, test_long_message_one_line);
	tcase_add_test(tc, test_password_redacted_in_line);
	suite_add_tcase(s, tc);

	tc = tcase_create("journald");
	tcase_set_timeout(tc, 5);
	tcase_add_loop_test(tc, test_journal_prefix, 0, ROWS(level_rows));
	tcase_add_test(tc, test_journal_stream_mismatch);
	tcase_add_test(tc, test_journal_decided_at_init);
	suite_add_tcase(s, tc);

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
