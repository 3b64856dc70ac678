/* test_jobproc.c: a job's environment (systemd's quoting), its environment file, shell syntax in a command line, and the lookups at load. */
#include "jobproc.h"
#include "value.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN 512

static const char *join(char **words)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (; words && *words && n < sizeof(buf); words++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? "|" : "", *words);
	return buf;
}

/* ---- environment = (systemd's Environment=) ---- */

static const struct {
	const char *text;
	const char *expect; /* joined, or the reason */
	int result;
} environment_cases[] = {
	{ "A=1", "A=1", 0 },
	{ "A=1 B=2", "A=1|B=2", 0 },
	{ "  \t A=1  \n B=2 ", "A=1|B=2", 0 },
	{ "\"A=x y\" B=z", "A=x y|B=z", 0 },
	{ "A=\"x y\"", "A=x y", 0 },
	{ "'A=$HOME \"q\"'", "A=$HOME \"q\"", 0 },
	{ "A=1 B=2 A=3", "A=3|B=2", 0 },
	{ "A=a\\nb A2=\\tc", "A=a\nb|A2=\tc", 0 },
	{ "A=x\\ y", "A=x y", 0 },
	{ "A=\\q", "A=\\q", 0 },
	{ "A=\"\\\"\"", "A=\"", 0 },
	{ "A= B=", "A=|B=", 0 },
	{ "A==b", "A==b", 0 },
	{ "_x9=1", "_x9=1", 0 },
	{ "A=|;&$(x)`y`>z", "A=|;&$(x)`y`>z", 0 },
	{ "A=\xff\x01\x7f", "A=\xff\x01\x7f", 0 },
	{ "", "", 0 },
	{ "A=1 'B=2", "assignment 2: unterminated quote", -1 },
	{ "A=\"S3CRET", "assignment 1: unterminated quote", -1 },
	{ "S3CRET", "assignment 1: not NAME=VALUE", -1 },
	{ "1A=2", "assignment 1: the name is not [A-Za-z_][A-Za-z0-9_]*", -1 },
	{ "=S3CRET", "assignment 1: the name is not [A-Za-z_][A-Za-z0-9_]*", -1 },
	{ "A-B=1", "assignment 1: the name is not [A-Za-z_][A-Za-z0-9_]*", -1 },
	{ "A=1 \"B C\"=2", "assignment 2: the name is not [A-Za-z_][A-Za-z0-9_]*", -1 },
};

START_TEST(environment_values)
{
	char **env = NULL, why[ERRLEN] = "";
	int result = jobproc_parse_environment(environment_cases[_i].text, &env, why,
					       sizeof(why));

	ck_assert_int_eq(result, environment_cases[_i].result);
	if (result == 0) {
		ck_assert_str_eq(join(env), environment_cases[_i].expect);
	} else {
		ck_assert_str_eq(why, environment_cases[_i].expect);
		ck_assert_ptr_null(strstr(why, "S3CRET")); /* a value may be a secret */
	}
	jobproc_free_env(env);
}
END_TEST

/* Hostile sizes: the longest assignment Linux passes, and one byte more. */
START_TEST(environment_sizes)
{
	size_t big = JOBPROC_ASSIGNMENT_MAX + 2;
	char *text = malloc(big + 1), **env = NULL, why[ERRLEN];

	ck_assert_ptr_nonnull(text);
	memset(text, 'v', big);
	memcpy(text, "A=", 2);
	text[JOBPROC_ASSIGNMENT_MAX] = '\0';
	ck_assert_int_eq(jobproc_parse_environment(text, &env, why, sizeof(why)), 0);
	ck_assert_uint_eq(strlen(env[0]), JOBPROC_ASSIGNMENT_MAX);
	jobproc_free_env(env);
	env = NULL;
	text[JOBPROC_ASSIGNMENT_MAX] = 'v';
	text[big] = '\0';
	ck_assert_int_eq(jobproc_parse_environment(text, &env, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "assignment 1: longer than 128KiB, which Linux refuses to pass to a command");
	ck_assert_ptr_null(env);
	/* tens of thousands of assignments of one name: one stays */
	for (size_t i = 0; i + 4 < big; i += 4) {
		memcpy(text + i, "A=1 ", 4);
		text[i + 4] = '\0';
	}
	ck_assert_int_eq(jobproc_parse_environment(text, &env, why, sizeof(why)), 0);
	ck_assert_str_eq(join(env), "A=1");
	jobproc_free_env(env);
	free(text);
}
END_TEST

/* ---- environment_file = (systemd's EnvironmentFile=) ---- */

static const struct {
	const char *text;
	size_t len;         /* 0: strlen(text) */
	const char *expect; /* joined, or the reason */
	int line;           /* of the mistake; 0: none */
} file_cases[] = {
	{ "A=1\nB=2\n", 0, "A=1|B=2", 0 },
	{ "# a comment\n; another\n\n   \n  A = 1  \n", 0, "A=1", 0 },
	{ "A=\"x y\"\n", 0, "A=x y", 0 },
	{ "A='x\ny'\nB=2\n", 0, "A=x\ny|B=2", 0 },
	{ "A=\"a\\\"b\\\\c\\d\\$e\"\n", 0, "A=a\"b\\c\\d$e", 0 },
	{ "A=x \\\n y\n", 0, "A=x  y", 0 },
	{ "A=a\\ \n", 0, "A=a ", 0 },
	{ "A=#not a comment\n", 0, "A=#not a comment", 0 },
	{ "A=1\r\nB=2\r\n", 0, "A=1|B=2", 0 },
	{ "A=1", 0, "A=1", 0 },
	{ "A=' x '  \n", 0, "A= x ", 0 },
	{ "A=1\nA=2\n", 0, "A=2", 0 },
	{ "A=\n", 0, "A=", 0 },
	{ "A=|;$(rm -rf /)`x`\n", 0, "A=|;$(rm -rf /)`x`", 0 },
	{ "A=\xfe\xff\x01\n", 0, "A=\xfe\xff\x01", 0 },
	{ "", 0, "", 0 },
	{ "A=1\nS3CRET\n", 0, "not NAME=VALUE", 2 },
	{ "A=1\n\n2B=3\n", 0, "the name is not [A-Za-z_][A-Za-z0-9_]*", 3 },
	{ "export A=1\n", 0, "the name is not [A-Za-z_][A-Za-z0-9_]*", 1 },
	{ "A=1\nB=\"S3CRET\nC=2\n", 0, "unterminated quote", 2 },
	{ "A='S3CRET", 0, "unterminated quote", 1 },
	{ "A=1\nB=\0x\n", 8, "holds a NUL byte: not a text file", 2 },
};

START_TEST(environment_file_values)
{
	char **env = NULL, why[ERRLEN] = "";
	const char *text = file_cases[_i].text;
	size_t len = file_cases[_i].len ? file_cases[_i].len : strlen(text);
	int line = 0;
	int result = jobproc_parse_environment_file(text, len, &env, &line, why,
						    sizeof(why));

	if (!file_cases[_i].line) {
		ck_assert_msg(result == 0, "%s", why);
		ck_assert_str_eq(join(env), file_cases[_i].expect);
	} else {
		ck_assert_int_eq(result, -1);
		ck_assert_str_eq(why, file_cases[_i].expect);
		ck_assert_int_eq(line, file_cases[_i].line);
	}
	jobproc_free_env(env);
}
END_TEST

static const char *temp_file(const char *content, size_t len)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_jobproc.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
	close(fd);
	return path;
}

START_TEST(environment_file_reading)
{
	char **env = NULL, why[ERRLEN], expect[ERRLEN], dash[80];
	const char *path = temp_file("# from a file\nA=1\n", 18);
	size_t big = JOBPROC_FILE_MAX + 1;
	char *text = malloc(big);

	ck_assert_int_eq(jobproc_read_environment_file(path, &env, why, sizeof(why)), 0);
	ck_assert_str_eq(join(env), "A=1");
	unlink(path);
	/* gone: an error, unless the path says it may be missing */
	ck_assert_int_eq(jobproc_read_environment_file(path, &env, why, sizeof(why)), -1);
	snprintf(expect, sizeof(expect), "cannot read %s: No such file or directory", path);
	ck_assert_str_eq(why, expect);
	snprintf(dash, sizeof(dash), "-%s", path);
	ck_assert_int_eq(jobproc_read_environment_file(dash, &env, why, sizeof(why)), 0);
	ck_assert_str_eq(join(env), "A=1");
	ck_assert_int_eq(jobproc_read_environment_file("/", &env, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "/ is not a regular file");
	/* a mistake inside names the line */
	path = temp_file("A=2\nB\n", 6);
	ck_assert_int_eq(jobproc_read_environment_file(path, &env, why, sizeof(why)), -1);
	snprintf(expect, sizeof(expect), "%s:2: not NAME=VALUE", path);
	ck_assert_str_eq(why, expect);
	unlink(path);
	/* too big to be read whole */
	memset(text, '#', big);
	path = temp_file(text, big);
	ck_assert_int_eq(jobproc_read_environment_file(path, &env, why, sizeof(why)), -1);
	snprintf(expect, sizeof(expect), "%s is larger than 1MiB", path);
	ck_assert_str_eq(why, expect);
	unlink(path);
	free(text);
	jobproc_free_env(env);
}
END_TEST

/* ---- users and groups ---- */

START_TEST(ids)
{
	struct job_process p = { 0 };
	char **env = NULL, why[ERRLEN];

	if (geteuid() != 0) {
		ck_assert_int_eq(jobproc_resolve_ids("root", NULL, &p, &env, why, sizeof(why)), -1);
		ck_assert_msg(strstr(why, "needs pgleader to run as root"), "%s", why);
		return;
	}
	ck_assert_int_eq(jobproc_resolve_ids("root", NULL, &p, &env, why, sizeof(why)), 0);
	ck_assert(p.set_ids);
	ck_assert_int_eq(p.uid, 0);
	ck_assert_int_eq(p.gid, 0);
	ck_assert_uint_ge(p.n_groups, 1);
	ck_assert_ptr_nonnull(strstr(join(env), "HOME=/root"));
	ck_assert_ptr_nonnull(strstr(join(env), "LOGNAME=root"));
	jobproc_free(&p);
	ck_assert_int_eq(jobproc_resolve_ids(NULL, "0", &p, &env, why, sizeof(why)), 0);
	ck_assert_int_eq(p.gid, 0);
	ck_assert_uint_eq(p.n_groups, 1);
	jobproc_free(&p);
	ck_assert_int_eq(jobproc_resolve_ids("no-such-user-x", NULL, &p, &env, why,
					     sizeof(why)), -1);
	ck_assert_str_eq(why, "no such user \"no-such-user-x\"");
	jobproc_free(&p);
	ck_assert_int_eq(jobproc_resolve_ids("root", "no-such-group-x", &p, &env, why,
					     sizeof(why)), -1);
	ck_assert_str_eq(why, "no such group \"no-such-group-x\"");
	jobproc_free(&p);
	jobproc_free_env(env);
}
END_TEST

/* ---- shell syntax in a command line (value.c) ---- */

static const struct {
	const char *line;
	int at; /* where the shell syntax begins; -1: none */
} shell_cases[] = {
	{ "./cleanup.sh >> out 2>&1", 13 },
	{ "a | b", 2 }, { "a;b", 1 }, { "a & b", 2 }, { "a < in", 2 },
	{ "a&&b", 1 }, { "echo $(date)", 5 }, { "echo `date`", 5 },
	{ "echo \"$(date)\"", 6 }, { "echo \"`date`\"", 6 },
	{ "echo \"a|b\" ; c", 11 }, { "a 'x' | b", 6 },
	{ "a 'unterminated | b", 16 },
	{ "echo '$(x) | y'", -1 }, { "echo \"a|b;c>d<e&f\"", -1 },
	{ "a\\|b a\\;b a\\>b a\\`b a\\$(b", -1 }, { "echo \"\\$(x) \\`y\\`\"", -1 },
	{ "echo $HOME ${X}", -1 }, { "psql -c 'select 1; select 2'", -1 },
	{ "./report --daily", -1 }, { "", -1 }, { "a \\", -1 },
	{ "\xff\xfe|", 2 }, { "\"unterminated $(x", 14 },
};

START_TEST(shell_syntax)
{
	const char *line = shell_cases[_i].line;
	const char *found = value_shell_syntax(line);

	if (shell_cases[_i].at < 0)
		ck_assert_msg(!found, "%s: found at %d", line, (int)(found - line));
	else
		ck_assert_msg(found && found - line == shell_cases[_i].at, "%s: at %d", line,
			      found ? (int)(found - line) : -1);
}
END_TEST

static Suite *jobproc_suite(void)
{
	Suite *s = suite_create("jobproc");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, environment_values, 0,
			    sizeof(environment_cases) / sizeof(environment_cases[0]));
	tcase_add_test(tc, environment_sizes);
	tcase_add_loop_test(tc, environment_file_values, 0,
			    sizeof(file_cases) / sizeof(file_cases[0]));
	tcase_add_test(tc, environment_file_reading);
	tcase_add_test(tc, ids);
	tcase_add_loop_test(tc, shell_syntax, 0, sizeof(shell_cases) / sizeof(shell_cases[0]));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(jobproc_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
