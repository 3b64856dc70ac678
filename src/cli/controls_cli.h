/* controls_cli.h: the operator controls from the command line (DESIGN 11):
 * "pgleader pause", "resume", "switchover", and the controls "pgleader
 * status" shows. */
#ifndef PGLEADER_CONTROLS_CLI_H
#define PGLEADER_CONTROLS_CLI_H

#include "cli.h"
#include "cli_sessions.h"
#include "config.h"

/* pgleader pause | resume | switchover, as cfg->mode says. Returns the exit
 * code: 0 done; 3 switchover refused, or no standby took over within
 * --wait; 69 database unreachable, no ledger and may not create it, or may
 * not write the controls; 78 a bad DSN or schema. */
int controls_cli_run(const struct config *cfg);

/* What a switchover may do, from the nodes of the lock (cli_sessions.h). */
enum controls_cli_plan {
	CONTROLS_PLAN_GO,          /* a standby can take over */
	CONTROLS_PLAN_NO_LEADER,   /* no node leads */
	CONTROLS_PLAN_LEADS,       /* --to names the leader */
	CONTROLS_PLAN_NOT_STANDBY, /* --to names no standby of the lock */
	CONTROLS_PLAN_NEVER_LEADS, /* --to names a standby of priority 0 */
	CONTROLS_PLAN_NO_STANDBY,  /* no standby of priority 1 or more */
};
/* Pure: the plan for a switchover to target (NULL: any) among nodes[0..n);
 * *leader the node that leads (NULL when none). */
enum controls_cli_plan controls_cli_plan(const struct cli_node *nodes, int n,
					 const char *target, const struct cli_node **leader);

/* For status: the controls in force on the lock, one line per control
 * after the sessions and jobs, the "controls" object of --json; nothing
 * when there is no ledger, it is unreadable or did not answer. */
extern const struct cli_section controls_cli_section;

#endif
