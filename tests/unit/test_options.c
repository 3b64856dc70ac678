/* test_options.c: the table engine with a table of its own, so that what
 * it promises does not hang on pgleader's keys. */
#include "options.h"

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ERRLEN 512

struct toy {
	int64_t wait_ms;
	char *host;
	char *socket;
	int level;
	bool dry_run;
};

enum { ACT_HELP = 1 };

static int action_cb(void *user, int action, const char *value)
{
	(void)user;
	(void)value;
	return action == ACT_HELP ? 1 : OPTIONS_OK;
}

#define FIELD(name) offsetof(struct toy, name)

static const struct option_row rows[] = {
	{ .key = "wait", .long_name = "wait", .short_name = 'w', .type = OPTION_DURATION,
	  .offset = FIELD(wait_ms), .default_value = "1s", .metavar = "DUR",
	  .help = "how long", .min = 1 },
	{ .key = "host", .long_name = "host", .type = OPTION_STRING, .offset = FIELD(host),
	  .metavar = "NAME", .help = "by name", .conflicts = "socket" },
	{ .key = "socket", .long_name = "socket-directory-for-the-server",
	  .type = OPTION_STRING, .offset = FIELD(socket), .metavar = "DIR",
	  .help = "or by socket\nin a directory", .conflicts = "host" },
	{ .key = "level", .long_name = "level", .type = OPTION_INT, .offset = FIELD(level),
	  .default_value = "3", .metavar = "N", .help = "how loud", .min = 0, .max = 9 },
	{ .long_name = "dry-run", .short_name = 'n', .type = OPTION_FLAG,
	  .offset = FIELD(dry_run), .help = "do nothing" },
	{ .long_name = "help", .type = OPTION_ACTION, .action = ACT_HELP,
	  .help = "help" },
	{ .key = "script", .type = OPTION_TEXT, .metavar = "LINE", .help = "what to run" },
};

static const struct options_spec spec = {
	.rows = rows, .nrows = sizeof(rows) / sizeof(rows[0]),
	.target_size = sizeof(struct toy), .section = "toy", .env_prefix = "TOY_",
	.program = "toy", .action = action_cb,
};

static char dir[64];

static void make_dir(void)
{
	strcpy(dir, "/tmp/test_options.XXXXXX");
	if (!mkdtemp(dir))
		abort();
}

static void remove_dir(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/toy.ini", dir);
	unlink(path);
	rmdir(dir);
}

static void clear_env(void)
{
	unsetenv("TOY_HOST");
	unsetenv("TOY_SOCKET");
	unsetenv("TOY_SCRIPT");
}

static const char *write_ini(const char *content)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/toy.ini", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(content, f);
	fclose(f);
	return path;
}

/* Every layer in order, as a program would: file may be NULL. */
static int load(struct toy *toy, char *err, struct options **out, const char *file,
		char **argv)
{
	struct options *op = options_new(&spec, toy, NULL, err, ERRLEN);
	int argc = 0, first_word, result;
	bool dashdash;

	ck_assert_ptr_nonnull(op);
	while (argv[argc])
		argc++;
	memset(toy, 0, sizeof(*toy));
	if ((result = options_read_argv(op, argc, argv, &first_word, &dashdash)) ||
	    (result = options_check_argv(op)) || (result = options_load_defaults(op)) ||
	    (file && (result = options_load_file(op, file))) ||
	    (result = options_load_environment(op)) || (result = options_load_argv(op)))
		options_release(&spec, toy);
	if (out)
		*out = op;
	else
		options_free(op);
	return result;
}

/* The conflicts column, on keys that are not pgleader's. */
static const struct {
	const char *file;   /* after [toy] */
	const char *env;    /* TOY_HOST */
	const char *argv[4];
	int result;
	const char *error;  /* "FILE" is the path */
	const char *host, *socket;
} conflict_cases[] = {
	{ "host = a\nsocket = /run\n", NULL, { NULL }, EX_CONFIG,
	  "FILE:3: socket: conflicts with host on line 2; set only one of them", NULL, NULL },
	{ "socket = /run\n", "b", { NULL }, OPTIONS_OK, NULL, "b", NULL },
	{ "host = a\n", NULL, { "--socket-directory-for-the-server=/run", NULL },
	  OPTIONS_OK, NULL, NULL, "/run" },
	{ NULL, NULL, { "--host=a", "--socket-d=/run", NULL }, EX_USAGE,
	  "--socket-directory-for-the-server: conflicts with --host; set only one of them",
	  NULL, NULL },
	{ "host = a\nhost = b\n", NULL, { NULL }, EX_CONFIG,
	  "FILE:3: host: already set on line 2; set it only once", NULL, NULL },
	{ NULL, NULL, { "--host=a", "--host=b", NULL }, OPTIONS_OK, NULL, "b", NULL },
	/* the command line is tried alone first: its mistake is a usage error */
	{ "bogus = 1\n", NULL, { "--level=10", NULL }, EX_USAGE,
	  "--level: 10 is out of range (0 to 9)", NULL, NULL },
};

START_TEST(conflicts)
{
	struct toy toy;
	char err[ERRLEN] = "", file[256], expected[512];
	char *argv[6] = { "toy" };
	const char *path = NULL, *at;
	int result;

	for (int i = 0; conflict_cases[_i].argv[i]; i++)
		argv[i + 1] = (char *)conflict_cases[_i].argv[i];
	if (conflict_cases[_i].file) {
		snprintf(file, sizeof(file), "[toy]\n%s", conflict_cases[_i].file);
		path = write_ini(file);
	}
	if (conflict_cases[_i].env)
		setenv("TOY_HOST", conflict_cases[_i].env, 1);
	result = load(&toy, err, NULL, path, argv);
	ck_assert_msg(result == conflict_cases[_i].result, "%d: %s", result, err);
	if (result != OPTIONS_OK) {
		at = strstr(conflict_cases[_i].error, "FILE");
		if (at)
			snprintf(expected, sizeof(expected), "%s%s", path, at + 4);
		else
			snprintf(expected, sizeof(expected), "%s", conflict_cases[_i].error);
		ck_assert_str_eq(err, expected);
		return;
	}
	if (conflict_cases[_i].host)
		ck_assert_str_eq(toy.host, conflict_cases[_i].host);
	else
		ck_assert_ptr_null(toy.host);
	if (conflict_cases[_i].socket)
		ck_assert_str_eq(toy.socket, conflict_cases[_i].socket);
	else
		ck_assert_ptr_null(toy.socket);
	options_release(&spec, &toy);
	ck_assert_ptr_null(toy.host);
	ck_assert_ptr_null(toy.socket);
}
END_TEST

/* Text rows stay with the loader, as written, and say where they came from. */
START_TEST(text_and_origin)
{
	struct toy toy;
	struct options *op;
	char err[ERRLEN], where[256], expected[256];
	char *argv[] = { "toy", "-n", "-w", "250ms", "--", "x", NULL };
	const char *path = write_ini("[toy]\n\nscript =\n");

	ck_assert_int_eq(load(&toy, err, &op, path, argv), OPTIONS_OK);
	ck_assert_str_eq(options_text(op, "script"), "");
	snprintf(expected, sizeof(expected), "%s:3: script", path);
	ck_assert_str_eq(options_origin(op, "script", where, sizeof(where)), expected);
	ck_assert_str_eq(options_origin(op, "wait", where, sizeof(where)), "--wait");
	ck_assert_str_eq(options_origin(op, "level", where, sizeof(where)), "default level");
	ck_assert_int_eq(toy.wait_ms, 250);
	ck_assert_int_eq(toy.level, 3);
	ck_assert(toy.dry_run);
	options_free(op);
	options_release(&spec, &toy);

	setenv("TOY_SCRIPT", "run it", 1);
	ck_assert_int_eq(load(&toy, err, &op, path, argv), OPTIONS_OK);
	ck_assert_str_eq(options_text(op, "script"), "run it");
	ck_assert_str_eq(options_origin(op, "script", where, sizeof(where)), "TOY_SCRIPT");
	options_free(op);
	options_release(&spec, &toy);
}
END_TEST

START_TEST(actions_stop_reading)
{
	struct toy toy;
	char err[ERRLEN];
	char *argv[] = { "toy", "--help", "--bogus", NULL };
	char *bad[] = { "toy", "--bogus", "--help", NULL };

	ck_assert_int_eq(load(&toy, err, NULL, NULL, argv), 1);
	ck_assert_int_eq(load(&toy, err, NULL, NULL, bad), EX_USAGE);
	ck_assert_str_eq(err, "unknown option --bogus; see toy --help");
}
END_TEST

/* A long option gets a line of its own; further help lines go under the
 * key line's column; nothing passes 79 columns. */
START_TEST(usage_layout)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	options_usage(&spec, out);
	fclose(out);
	ck_assert_str_eq(text,
		"  -w, --wait=DUR              how long\n"
		"                                key: wait, default: 1s\n"
		"      --host=NAME             by name\n"
		"                                key: host, default: none\n"
		"      --socket-directory-for-the-server=DIR\n"
		"                              or by socket\n"
		"                                in a directory\n"
		"                                key: socket, default: none\n"
		"      --level=N               how loud\n"
		"                                key: level, default: 3\n"
		"  -n, --dry-run               do nothing\n"
		"      --help                  help\n"
		"\n"
		"In the file and the environment only:\n"
		"  script = LINE               what to run\n");
	free(text);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("options");
	SRunner *runner;
	int failed;

	tcase_add_unchecked_fixture(tc, make_dir, remove_dir);
	tcase_add_checked_fixture(tc, clear_env, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, conflicts, 0,
			    (int)(sizeof(conflict_cases) / sizeof(conflict_cases[0])));
	tcase_add_test(tc, text_and_origin);
	tcase_add_test(tc, actions_stop_reading);
	tcase_add_test(tc, usage_layout);
	suite_add_tcase(s, tc);
	runner = srunner_create(s);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
