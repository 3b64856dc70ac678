/* test_controls_cli.c: what a switchover may do (controls_cli_plan), from
 * the nodes status sees, as a table: every refusal, and the leader found.
 * (The I/O around it is tests/integration/test_controls_cli.py's.) */
#include "controls_cli.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NROWS(table) ((int)(sizeof(table) / sizeof(table[0])))

/* A node written "id:flags:priority", flags among L (leads), S (standby),
 * F (holds the fence). */
static int parse(const char *const *spec, struct cli_node *nodes)
{
	int n = 0;

	for (; spec[n]; n++) {
		char flags[8] = "";
		struct cli_node *node = &nodes[n];

		memset(node, 0, sizeof(*node));
		ck_assert_int_eq(sscanf(spec[n], "%63[^:]:%7[^:]:%d", node->node_id, flags,
					&node->priority), 3);
		node->leader = strchr(flags, 'L') != NULL;
		node->standby = strchr(flags, 'S') != NULL;
		node->fence_held = strchr(flags, 'F') != NULL;
	}
	return n;
}

static const struct {
	const char *nodes[5];
	const char *target;
	enum controls_cli_plan plan;
	const char *leader;      /* NULL: none found */
} cases[] = {
	{ { "a:LF:1", "b:S:1" }, NULL, CONTROLS_PLAN_GO, "a" },
	{ { "b:S:1", "a:LF:1" }, "b", CONTROLS_PLAN_GO, "a" },
	{ { "a:LF:2", "b:S:3", "c:S:0" }, "b", CONTROLS_PLAN_GO, "a" },
	{ { NULL }, NULL, CONTROLS_PLAN_NO_LEADER, NULL },
	{ { "b:S:1", "c:S:1" }, NULL, CONTROLS_PLAN_NO_LEADER, NULL },
	{ { "b:S:1" }, "b", CONTROLS_PLAN_NO_LEADER, NULL },
	{ { "a:LF:1" }, NULL, CONTROLS_PLAN_NO_STANDBY, "a" },
	{ { "a:LF:1", "c:S:0" }, NULL, CONTROLS_PLAN_NO_STANDBY, "a" },
	{ { "a:LF:1", "f:F:1" }, NULL, CONTROLS_PLAN_NO_STANDBY, "a" },
	{ { "a:LF:1", "b:S:1" }, "a", CONTROLS_PLAN_LEADS, "a" },
	{ { "a:LF:1", "b:S:1" }, "x", CONTROLS_PLAN_NOT_STANDBY, "a" },
	{ { "a:LF:1", "b:S:1", "f:F:1" }, "f", CONTROLS_PLAN_NOT_STANDBY, "a" },
	{ { "a:LF:1", "b:S:1", "c:S:0" }, "c", CONTROLS_PLAN_NEVER_LEADS, "a" },
	{ { "a:LF:1", "c:S:0" }, "c", CONTROLS_PLAN_NEVER_LEADS, "a" },
	/* a target is checked before "any standby": it names what is wrong */
	{ { "a:LF:1" }, "x", CONTROLS_PLAN_NOT_STANDBY, "a" },
};

START_TEST(plan)
{
	struct cli_node nodes[5];
	const struct cli_node *leader = (const void *)1;
	int n = parse(cases[_i].nodes, nodes);

	ck_assert_int_eq(controls_cli_plan(nodes, n, cases[_i].target, &leader),
			 cases[_i].plan);
	if (cases[_i].leader)
		ck_assert_str_eq(leader->node_id, cases[_i].leader);
	else
		ck_assert_ptr_null(leader);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("controls_cli");
	TCase *tc = tcase_create("plan");
	SRunner *runner;
	int failed;

	tcase_add_loop_test(tc, plan, 0, NROWS(cases));
	suite_add_tcase(s, tc);
	runner = srunner_create(s);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
