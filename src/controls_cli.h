/* controls_cli.h: the operator controls from the command line (DESIGN 11):
 * "pgleader pause", "resume", "switchover", and the controls "pgleader
 * status" shows. */
#ifndef PGLEADER_CONTROLS_CLI_H
#define PGLEADER_CONTROLS_CLI_H

#include <jansson.h>
#include <libpq-fe.h>

#include "config.h"
#include "status.h"

/* pgleader pause | resume | switchover, as cfg->mode says. Returns the exit
 * code: 0 done; 3 switchover refused, or no standby took over within
 * --wait; 69 database unreachable, no ledger and may not create it, or may
 * not write the controls; 78 a bad DSN or schema. */
int controls_cli_run(const struct config *cfg);

/* What a switchover may do, from the nodes status sees. */
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
enum controls_cli_plan controls_cli_plan(const struct status_node *nodes, int n,
					 const char *target, const struct status_node **leader);

/* For status: the controls in force on the lock key (decimal text), or
 * NULL when there is no ledger, it is unreadable or did not answer; never
 * a message, never creates anything. */
struct controls_cli_controls;
struct controls_cli_controls *controls_cli_read(PGconn *conn, const struct config *cfg,
						const char *key);
/* One line per control, after status's sessions and jobs. */
void controls_cli_print(const struct controls_cli_controls *c);
/* The "controls" object of status --json. */
json_t *controls_cli_json(const struct controls_cli_controls *c);
void controls_cli_free(struct controls_cli_controls *c);

#endif
