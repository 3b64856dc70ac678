/* test_value.c: value.c's syntax of durations, numbers, lock keys, commands. */
#include "value.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 512

static const char *join(char **words)
{
	static char buf[1024];
	size_t n = 0;

	buf[0] = '\0';
	for (; words && *words; words++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
				      n ? "|" : "", *words);
	return buf;
}

/* ---- durations ---- */

static const struct {
	const char *text;
	int result;
	int64_t ms;
} duration_cases[] = {
	{ "250ms", 0, 250 }, { "5s", 0, 5000 }, { "1.5s", 0, 1500 },
	{ "2m", 0, 120000 }, { "1h", 0, 3600000 }, { "0", 0, 0 },
	{ "0ms", 0, 0 }, { "7", 0, 7000 }, { "0.5", 0, 500 },
	{ "0.001s", 0, 1 }, { "1.25m", 0, 75000 }, { "007s", 0, 7000 },
	{ "720h", 0, INT64_C(2592000000) },
	{ "2592000000ms", 0, INT64_C(2592000000) },
	{ "2592000001ms", -1, 0 }, { "721h", -1, 0 }, { "43201m", -1, 0 },
	{ "99999999999999999999999", -1, 0 }, { "", -1, 0 }, { "-1s", -1, 0 },
	{ "-0", -1, 0 }, { "+5s", -1, 0 }, { " 5s", -1, 0 }, { "5s ", -1, 0 },
	{ "5 s", -1, 0 }, { "5x", -1, 0 }, { "s", -1, 0 }, { "ms", -1, 0 },
	{ ".5s", -1, 0 }, { "1.", -1, 0 }, { "1.s", -1, 0 }, { "1.5ms", -1, 0 },
	{ "1.0005s", -1, 0 }, { "5S", -1, 0 }, { "5sec", -1, 0 },
	{ "5mss", -1, 0 }, { "1e3", -1, 0 }, { "0x10", -1, 0 }, { "1d", -1, 0 },
	{ "1h30m", -1, 0 }, { "none", -1, 0 }, { "1.0000000001s", -1, 0 },
};

START_TEST(duration)
{
	int64_t ms = -42;

	ck_assert_msg(value_parse_duration(duration_cases[_i].text, &ms) ==
		      duration_cases[_i].result, "\"%s\"", duration_cases[_i].text);
	if (duration_cases[_i].result == 0)
		ck_assert_int_eq(ms, duration_cases[_i].ms);
	else
		ck_assert_int_eq(ms, -42); /* untouched on error */
}
END_TEST

/* The other way, for messages; every row that fits the range reads back. */
static const struct {
	int64_t ms;
	const char *text;
} format_cases[] = {
	{ -1, "none" }, { 0, "0" }, { 1, "1ms" }, { 250, "250ms" },
	{ 999, "999ms" }, { 1000, "1s" }, { 1001, "1.001s" }, { 1500, "1.5s" },
	{ 1010, "1.01s" }, { 126250, "126.25s" }, { 90000, "90s" },
	{ 120000, "2m" }, { 5400000, "90m" }, { 3600000, "1h" },
	{ INT64_C(2592000000), "720h" }, { INT64_C(2591999999), "2591999.999s" },
	{ INT64_C(2597184000000), "721440h" }, /* sums may pass the range */
};

START_TEST(format_duration)
{
	char buf[32];
	int64_t ms = -42;

	ck_assert_str_eq(value_format_duration(format_cases[_i].ms, buf, sizeof(buf)),
			 format_cases[_i].text);
	if (format_cases[_i].ms >= 0 && format_cases[_i].ms <= INT64_C(2592000000)) {
		ck_assert_int_eq(value_parse_duration(buf, &ms), 0);
		ck_assert_int_eq(ms, format_cases[_i].ms);
	}
}
END_TEST

/* ---- numbers ---- */

static const struct {
	const char *text;
	int result;
	int64_t n;
} int_cases[] = {
	{ "0", 0, 0 }, { "42", 0, 42 }, { "-1", 0, -1 }, { "007", 0, 7 },
	{ "-0", 0, 0 }, { "9223372036854775807", 0, INT64_MAX },
	{ "-9223372036854775808", 0, INT64_MIN },
	{ "9223372036854775808", -1, 0 }, { "-9223372036854775809", -1, 0 },
	{ "", -1, 0 }, { "-", -1, 0 }, { "--1", -1, 0 }, { "+2", -1, 0 },
	{ " 1", -1, 0 }, { "1 ", -1, 0 }, { "2x", -1, 0 }, { "1.0", -1, 0 },
	{ "0x10", -1, 0 }, { "1e3", -1, 0 },
};

START_TEST(integer)
{
	int64_t n = 42;

	ck_assert_msg(value_parse_int(int_cases[_i].text, &n) == int_cases[_i].result,
		      "\"%s\"", int_cases[_i].text);
	ck_assert_int_eq(n, int_cases[_i].result == 0 ? int_cases[_i].n : 42);
}
END_TEST

static const struct {
	const char *text;
	int result;
	bool value;
} bool_cases[] = {
	{ "true", 0, true }, { "TRUE", 0, true }, { "yes", 0, true },
	{ "On", 0, true }, { "1", 0, true }, { "false", 0, false },
	{ "No", 0, false }, { "OFF", 0, false }, { "0", 0, false },
	{ "", -1, false }, { "y", -1, false }, { "t", -1, false },
	{ "2", -1, false }, { "enabled", -1, false }, { " true", -1, false },
	{ "true ", -1, false }, { "01", -1, false },
};

START_TEST(boolean)
{
	/* Starts as the opposite of the answer, or as both on error. */
	for (int start = 0; start < 2; start++) {
		bool value = bool_cases[_i].result == 0 ? !bool_cases[_i].value : start;

		ck_assert_msg(value_parse_bool(bool_cases[_i].text, &value) ==
			      bool_cases[_i].result, "\"%s\"", bool_cases[_i].text);
		ck_assert_int_eq(value, bool_cases[_i].result == 0 ? bool_cases[_i].value
								   : start);
	}
}
END_TEST

static const struct {
	const char *text;
	int result;
	int64_t key;
} lock_key_cases[] = {
	{ "0", 0, 0 }, { "42", 0, 42 }, { "-1", 0, -1 }, { "007", 0, 7 },
	{ "9223372036854775807", 0, INT64_MAX },
	{ "-9223372036854775808", 0, INT64_MIN },
	{ "9223372036854775808", -1, 0 }, { "-9223372036854775809", -1, 0 },
	{ "99999999999999999999", -1, 0 },
	{ "0x0", 0, 0 }, { "0xff", 0, 255 }, { "0XFF", 0, 255 },
	{ "0x50474c4541444552", 0, INT64_C(0x50474c4541444552) }, /* the default */
	{ "0x7fffffffffffffff", 0, INT64_MAX },
	{ "0x8000000000000000", 0, INT64_MIN },
	{ "0xffffffffffffffff", 0, -1 },
	{ "0x0000000000000001", 0, 1 },
	{ "0x10000000000000000", -1, 0 }, { "0x00000000000000001", -1, 0 },
	{ "0x", -1, 0 }, { "0xg", -1, 0 }, { "0x1g", -1, 0 }, { "-0x1", -1, 0 },
	{ "x10", -1, 0 }, { "", -1, 0 }, { "-", -1, 0 }, { "+1", -1, 0 },
	{ " 1", -1, 0 }, { "1 ", -1, 0 }, { "12abc", -1, 0 }, { "1.0", -1, 0 },
	{ "010", 0, 10 }, /* decimal, not octal */
};

START_TEST(lock_key)
{
	int64_t key = 42;

	ck_assert_msg(value_parse_lock_key(lock_key_cases[_i].text, &key) ==
		      lock_key_cases[_i].result, "\"%s\"", lock_key_cases[_i].text);
	if (lock_key_cases[_i].result == 0)
		ck_assert_int_eq(key, lock_key_cases[_i].key);
}
END_TEST

/* ---- commands ---- */

/* words joined by '|'; NULL words: an error, with this message. */
static const struct {
	const char *line, *words, *error;
} split_cases[] = {
	{ "./report --daily", "./report|--daily", NULL },
	{ "  a \t b\n c  ", "a|b|c", NULL },
	{ "'a b' c", "a b|c", NULL },
	{ "'a \\ \" $HOME'", "a \\ \" $HOME", NULL },
	{ "\"a \\\" \\\\ \\$ \\` b\"", "a \" \\ $ ` b", NULL },
	{ "\"\\n \\a\"", "\\n \\a", NULL }, /* other backslashes stay */
	{ "\"a\\\nb\"", "ab", NULL },       /* escaped newline goes */
	{ "a\\\nb", "ab", NULL },
	{ "a \\\n b", "a|b", NULL },
	{ "a\\ b", "a b", NULL },
	{ "\\'a\\'", "'a'", NULL },
	{ "\\\"", "\"", NULL },
	{ "a\\", "a\\", NULL },             /* trailing backslash: literal */
	{ "x'a'\"b\"c", "xabc", NULL },     /* quotes join one word */
	{ "a '' b \"\"", "a||b|", NULL },   /* empty quotes: empty words */
	{ "$HOME ~ *.c `id` $(id)", "$HOME|~|*.c|`id`|$(id)", NULL },
	{ "a|b;c>d&", "a|b;c>d&", NULL },   /* no operators either */
	{ "# not a comment", "#|not|a|comment", NULL },
	{ "'unterminated", NULL, "unterminated single quote" },
	{ "a \"b", NULL, "unterminated double quote" },
	{ "\"a\\\"", NULL, "unterminated double quote" },
	{ "", NULL, "empty command" },
	{ " \t\n ", NULL, "empty command" },
	{ "\\\n", NULL, "empty command" },
};

START_TEST(split_command)
{
	char err[ERRLEN] = "";
	char **words = value_split_command(split_cases[_i].line, err, sizeof(err));

	if (split_cases[_i].words) {
		ck_assert_msg(words != NULL, "\"%s\": %s", split_cases[_i].line, err);
		/* join() cannot show the empty words of case "a '' b" apart. */
		ck_assert_str_eq(join(words), split_cases[_i].words);
		value_free_words(words);
	} else {
		ck_assert_ptr_null(words);
		ck_assert_str_eq(err, split_cases[_i].error);
	}
}
END_TEST

/* ---- addresses ---- */

/* host and port as parsed; host NULL: an error, with this reason. */
static const struct {
	const char *text;
	bool any_host;
	const char *host, *port;
} host_port_cases[] = {
	{ "127.0.0.1:8008", true, "127.0.0.1", "8008" },
	{ "[::1]:8008", true, "::1", "8008" },
	{ "[fe80::1%eth0]:8008", true, NULL, "invalid IPv6 address" },
	{ "[2001:db8::7]:1", true, "2001:db8::7", "1" },
	{ ":8008", true, "", "8008" },
	{ ":8008", false, NULL, "no host before :PORT" },
	{ "[]:8008", true, NULL, "no host before :PORT" },
	{ "localhost:8008", false, "localhost", "8008" },
	{ "db-1.example.com:65535", false, "db-1.example.com", "65535" },
	{ "node3:080", false, "node3", "80" },
	{ "localhost", true, NULL, "no :PORT" },
	{ "localhost:", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:0", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:65536", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:-1", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:+80", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:http", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:8008 ", true, NULL, "the port must be a number from 1 to 65535" },
	{ "localhost:0000080", true, NULL, "the port must be a number from 1 to 65535" },
	{ "::1:8008", true, NULL, "an IPv6 address goes in brackets, as [::1]:8008" },
	{ "[::1]8008", true, NULL, "no ]:PORT after an IPv6 address" },
	{ "[::1:8008", true, NULL, "no ]:PORT after an IPv6 address" },
	{ "[127.0.0.1]:8008", true, NULL, "invalid IPv6 address" },
	{ "256.0.0.1:8008", true, NULL, "invalid host name or address" },
	{ "1.2.3:8008", true, NULL, "invalid host name or address" },
	{ "-a.example:8008", true, NULL, "invalid host name or address" },
	{ "a-.example:8008", true, NULL, "invalid host name or address" },
	{ "a..example:8008", true, NULL, "invalid host name or address" },
	{ "a.example.:8008", true, NULL, "invalid host name or address" },
	{ "a b:8008", true, NULL, "invalid host name or address" },
	{ "a\n:8008", true, NULL, "invalid host name or address" },
	{ "*:8008", true, NULL, "invalid host name or address" },
	{ "user@host:8008", true, NULL, "invalid host name or address" },
	{ "http://host:8008", true, NULL, "invalid host name or address" },
	{ "2001:db8::7:8008", true, NULL, "an IPv6 address goes in brackets, as [::1]:8008" },
	{ "a123456789012345678901234567890123456789012345678901234567890123.b:1",
	  true, NULL, "invalid host name or address" },
	{ "a12345678901234567890123456789012345678901234567890123456789012.b:1",
	  true, "a12345678901234567890123456789012345678901234567890123456789012.b", "1" },
};

START_TEST(host_port)
{
	char host[VALUE_HOST_MAX] = "unset", port[VALUE_PORT_MAX] = "unset";
	char why[ERRLEN] = "";
	int result = value_parse_host_port(host_port_cases[_i].text,
					   host_port_cases[_i].any_host, host, port,
					   why, sizeof(why));

	if (host_port_cases[_i].host) {
		ck_assert_msg(result == 0, "%s: %s", host_port_cases[_i].text, why);
		ck_assert_str_eq(host, host_port_cases[_i].host);
		ck_assert_str_eq(port, host_port_cases[_i].port);
	} else {
		ck_assert_int_eq(result, -1);
		ck_assert_str_eq(why, host_port_cases[_i].port);
		ck_assert_str_eq(host, "unset");
	}
}
END_TEST

/* A name of 253 characters is the longest DNS allows; inet_pton's and
 * our buffers must take it. */
START_TEST(host_name_length)
{
	char text[300], host[VALUE_HOST_MAX], port[VALUE_PORT_MAX], why[ERRLEN];

	for (size_t len = 252; len <= 254; len++) {
		memset(text, 'a', len);
		for (size_t i = 50; i < len; i += 50)
			text[i] = '.';
		strcpy(text + len, ":1");
		ck_assert_int_eq(value_parse_host_port(text, false, host, port, why,
						       sizeof(why)), (len <= 253 ? 0 : -1));
	}
}
END_TEST

/* ---- quoting for messages ---- */

static const struct {
	const char *text;
	size_t len;
	const char *quoted;
} quote_cases[] = {
	{ "abc", 64, "\"abc\"" },
	{ "", 64, "\"\"" },
	{ "a b", 64, "\"a b\"" },
	{ "a\nb", 64, "\"a?b\"" },
	{ "\t\x7f", 64, "\"??\"" },
	{ "caf\xc3\xa9", 64, "\"caf??\"" },
	{ "1234567890123456789012345678901234567890", 64,
	  "\"1234567890123456789012345678901234567890\"" },
	{ "12345678901234567890123456789012345678901", 64,
	  "\"1234567890123456789012345678901234567890...\"" },
	{ "12345678901234567890123456789012345678901", 48, /* the smallest */
	  "\"1234567890123456789012345678901234567890...\"" },
};

START_TEST(quote)
{
	char buf[64];

	memset(buf, 'x', sizeof(buf));
	ck_assert_str_eq(value_quote(quote_cases[_i].text, buf, quote_cases[_i].len),
			 quote_cases[_i].quoted);
	ck_assert_uint_lt(strlen(buf), quote_cases[_i].len);
}
END_TEST

static const struct {
	const char *text;
	size_t n, len;
	const char *shown;
} printable_cases[] = {
	{ "--foo", 64, 64, "--foo" },
	{ "--fo\x1b[2Jo", 64, 64, "--fo?[2Jo" },
	{ "a\nb\rc\td\x7f", 64, 64, "a?b?c?d?" },
	{ "caf\xc3\xa9", 64, 64, "caf??" },
	{ "abcdef", 3, 64, "abc" },
	{ "abcdef", 64, 4, "abc" },
	{ "", 64, 64, "" },
};

START_TEST(printable)
{
	char buf[64];

	memset(buf, 'x', sizeof(buf));
	ck_assert_str_eq(value_printable(printable_cases[_i].text, printable_cases[_i].n,
					 buf, printable_cases[_i].len),
			 printable_cases[_i].shown);
}
END_TEST

static const struct {
	const char *text;
	bool valid;
} utf8_cases[] = {
	{ "", true },
	{ "nightly report", true },
	{ "caf\xc3\xa9", true },
	{ "\xe2\x82\xac", true },              /* U+20AC */
	{ "\xed\x9f\xbf", true },              /* U+D7FF, below the surrogates */
	{ "\xf0\x9f\x98\x80", true },          /* U+1F600 */
	{ "\xf4\x8f\xbf\xbf", true },          /* U+10FFFF, the last */
	{ "\xff", false },
	{ "a\xff" "b", false },
	{ "\x80", false },                      /* a continuation alone */
	{ "\xc3", false },                      /* cut short */
	{ "caf\xc3", false },
	{ "\xe2\x82", false },
	{ "\xc0\xaf", false },                  /* overlong '/' */
	{ "\xc1\xbf", false },
	{ "\xe0\x80\xaf", false },              /* overlong, three bytes */
	{ "\xf0\x80\x80\xaf", false },          /* overlong, four bytes */
	{ "\xed\xa0\x80", false },              /* U+D800, a surrogate */
	{ "\xf4\x90\x80\x80", false },          /* past U+10FFFF */
	{ "\xf5\x80\x80\x80", false },
	{ "\xe9t\xe9", false },                 /* "ete" accented, in Latin-1 */
};

START_TEST(utf8)
{
	ck_assert_msg(value_is_utf8(utf8_cases[_i].text) == utf8_cases[_i].valid,
		      "case %d", _i);
}
END_TEST

/* The "did you mean" of an unknown key or option: edits, swaps included. */
static const struct {
	const char *a, *b;
	size_t limit, distance;
	bool near; /* value_is_near(a, b) */
} edit_cases[] = {
	{ "lock_key", "lock_key", 3, 0, true },
	{ "lcok_key", "lock_key", 3, 1, true },   /* a swap is one edit */
	{ "lock_ky", "lock_key", 3, 1, true },
	{ "lockkey", "lock_key", 3, 1, true },
	{ "lock_kye", "lock_key", 3, 1, true },
	{ "lock_name", "lock_key", 3, 4, false }, /* limit + 1 */
	{ "retry_intervall", "retry_interval", 3, 1, true },
	{ "ping_intreval", "ping_interval", 3, 1, true },
	{ "grace", "grace_period", 3, 4, false },
	{ "dns", "dsn", 3, 1, true },
	{ "xyz", "dsn", 3, 3, false },
	{ "", "dsn", 3, 3, false },
	{ "abc", "", 2, 3, false },               /* limit + 1 */
	{ "schedul", "schedule", 0, 1, true },    /* limit 0: 1 means more */
	{ "Lock_Key", "lock_key", 3, 2, true },   /* bytes, case-sensitive */
};

START_TEST(edit_distance)
{
	ck_assert_uint_eq(value_edit_distance(edit_cases[_i].a, edit_cases[_i].b,
					      edit_cases[_i].limit), edit_cases[_i].distance);
	ck_assert_int_eq(value_is_near(edit_cases[_i].a, edit_cases[_i].b),
			 edit_cases[_i].near);
}
END_TEST

static Suite *value_suite(void)
{
	Suite *s = suite_create("value");
	struct {
		const char *name;
		const TTest *test;
		int cases;
	} tests[] = {
#define LOOP(test, table) { #test, test, (int)(sizeof(table) / sizeof(table[0])) }
		LOOP(duration, duration_cases),
		LOOP(format_duration, format_cases),
		LOOP(integer, int_cases),
		LOOP(boolean, bool_cases),
		LOOP(lock_key, lock_key_cases),
		LOOP(split_command, split_cases),
		LOOP(quote, quote_cases),
		LOOP(host_port, host_port_cases),
		{ "host_name_length", host_name_length, 1 },
		LOOP(printable, printable_cases),
		LOOP(utf8, utf8_cases),
		LOOP(edit_distance, edit_cases),
#undef LOOP
	};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		/* Pure parsing: seconds even under valgrind or sanitizers. */
		tcase_set_timeout(tc, 30);
		tcase_add_loop_test(tc, tests[i].test, 0, tests[i].cases);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(value_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
