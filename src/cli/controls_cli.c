/* controls_cli.c: "pgleader pause", "resume" and "switchover" (DESIGN 11),
 * and the controls "pgleader status" shows: blocking libpq over the
 * ledger's session (cli_ledger.c), the nodes as status reads them
 * (cli_sessions.c). */
#include "controls_cli.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_ledger.h"
#include "controls_sql.h"
#include "exit_codes.h"
#include "ledger_sql.h"
#include "log.h"
#include "value.h"
#include "wire.h"

#define SQLSTATE_NO_PRIVILEGE "42501" /* insufficient_privilege */

/* How often a switchover looks whether a standby took over. */
#define POLL_MS 100

/* "lock "NAME"" or "lock KEY", for the lines below. */
static void lock_text(const struct config *cfg, const char *key, char *buf, size_t len)
{
	if (cfg->lock_name)
		snprintf(buf, len, "lock \"%s\"", cfg->lock_name);
	else
		snprintf(buf, len, "lock %s", key);
}

static double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The statement's rows, or NULL with one line: what failed, and what to
 * grant when the role may not write the controls. */
static PGresult *run_query(PGconn *conn, const struct config *cfg, const char *what,
			   const struct ledger_sql_query *q)
{
	PGresult *res = cli_ledger_exec(conn, what, q->sql, q->nparams, q->params, false);
	const char *state;
	char line[LOG_MSG_MAX];

	if (!res || PQresultStatus(res) == PGRES_TUPLES_OK ||
	    PQresultStatus(res) == PGRES_COMMAND_OK)
		return res;
	state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	if (state && strcmp(state, SQLSTATE_NO_PRIVILEGE) == 0) {
		snprintf(line, sizeof(line), "%s; the role needs INSERT, UPDATE and DELETE"
			 " on %s.controls (GRANT ... ON %s.controls TO ...)",
			 PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY),
			 cli_ledger_schema(cfg), cli_ledger_schema(cfg));
		cli_fail(what, line);
	} else {
		cli_fail(what, PQresultErrorMessage(res));
	}
	PQclear(res);
	return NULL;
}

/* Connected, the key resolved; NULL with *rc otherwise. */
static PGconn *open_lock(const struct config *cfg, const char *name, char *key,
			 size_t keylen, int *rc)
{
	PGconn *conn = cli_ledger_open(cfg, name, rc);

	if (conn && !cli_resolve_key(conn, cfg, key, keylen)) {
		PQfinish(conn);
		*rc = EXIT_UNAVAILABLE;
		return NULL;
	}
	return conn;
}

/* ---- pause, resume ------------------------------------------------------- */

static int pause_lock(PGconn *conn, const struct config *cfg, const char *key)
{
	struct ledger_sql_query q;
	char lock[128], bound[32];
	const char *job = cfg->runs_job;
	PGresult *res;
	int rc;

	if ((rc = cli_job_checked(conn, cfg, key, job, "pause refused")) != EXIT_OK ||
	    (rc = cli_ledger_ensure(conn, cfg)) != EXIT_OK)
		return rc;
	if (!controls_sql_pause(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10), job) ||
	    !(res = run_query(conn, cfg, "cannot pause", &q)))
		return EXIT_UNAVAILABLE;
	lock_text(cfg, key, lock, sizeof(lock));
	/* The leader reads the controls with each ping (DESIGN 11). */
	value_format_duration(cfg->ping_interval_ms + cfg->grace_period_ms, bound,
			      sizeof(bound));
	fputs(job ? "paused job " : "paused ", stdout);
	cli_put_text(job, 0);
	fputs(job ? " of " : "", stdout);
	cli_put_text(lock, 0);
	fputs(job ? " as asked by " : " (every job) as asked by ", stdout);
	cli_put_text(cli_cell(res, 0, CONTROLS_PAUSE_BY), 0);
	fputs(" at ", stdout);
	cli_put_text(cli_cell(res, 0, CONTROLS_PAUSE_AT), 0);
	printf("; the leader stops %s within %s\n", job ? "it" : "the command", bound);
	PQclear(res);
	return EXIT_OK;
}

/* "job J of lock X was not paused" or "lock X was not paused", no newline. */
static void print_not_paused(const struct config *cfg, const char *lock)
{
	if (cfg->runs_job) {
		fputs("job ", stdout);
		cli_put_text(cfg->runs_job, 0);
		fputs(" of ", stdout);
	}
	cli_put_text(lock, 0);
	fputs(" was not paused", stdout);
}

/* What resume found and did, in one line: "resumed lock X (every job)",
 * "resumed job a, b of lock X", "resumed lock X (every job) and job a",
 * or that nothing was paused. */
static void print_resumed(const struct config *cfg, const char *lock, const PGresult *res)
{
	const char *jobs = cli_cell(res, 0, CONTROLS_RESUME_JOBS);
	bool all = strcmp(cli_cell(res, 0, CONTROLS_RESUME_ALL), "t") == 0;
	bool stays = strcmp(cli_cell(res, 0, CONTROLS_RESUME_ALL_STAYS), "t") == 0;

	if (!all && !jobs) {
		print_not_paused(cfg, lock);
	} else if (!all) {
		fputs("resumed job ", stdout);
		cli_put_text(jobs, 0);
		fputs(" of ", stdout);
		cli_put_text(lock, 0);
	} else {
		fputs("resumed ", stdout);
		cli_put_text(lock, 0);
		fputs(jobs ? " (every job) and job " : " (every job)", stdout);
		cli_put_text(jobs, 0);
	}
	if (stays)
		fputs("; the whole lock stays paused (pgleader resume without --job)", stdout);
	putchar('\n');
}

static int resume_lock(PGconn *conn, const struct config *cfg, const char *key)
{
	struct ledger_sql_query q;
	char lock[128];
	PGresult *res;
	int present;

	if ((present = cli_job_checked(conn, cfg, key, cfg->runs_job,
				       "resume refused")) != EXIT_OK)
		return present;
	lock_text(cfg, key, lock, sizeof(lock));
	/* No ledger, nothing paused: resume creates nothing. */
	if ((present = cli_ledger_usable(conn, cfg)) != 1) {
		if (present < 0 && PQstatus(conn) == CONNECTION_OK)
			return EXIT_UNAVAILABLE; /* refused: said */
		if (PQstatus(conn) != CONNECTION_OK) {
			cli_fail("cannot resume", PQerrorMessage(conn));
			return EXIT_UNAVAILABLE;
		}
		print_not_paused(cfg, lock);
		puts(" (no ledger)");
		return EXIT_OK;
	}
	if (!controls_sql_resume(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10), cfg->runs_job) ||
	    !(res = run_query(conn, cfg, "cannot resume", &q)))
		return EXIT_UNAVAILABLE;
	print_resumed(cfg, lock, res);
	PQclear(res);
	return EXIT_OK;
}

/* ---- switchover ---------------------------------------------------------- */

static bool may_take_over(const struct cli_node *node)
{
	return node->standby && !node->leader && node->priority >= 1;
}

enum controls_cli_plan controls_cli_plan(const struct cli_node *nodes, int n,
					 const char *target, const struct cli_node **leader)
{
	const struct cli_node *named = NULL;
	bool any = false;

	*leader = NULL;
	for (int i = 0; i < n; i++) {
		if (nodes[i].leader && !*leader)
			*leader = &nodes[i];
		if (target && strcmp(nodes[i].node_id, target) == 0)
			named = &nodes[i];
		any |= may_take_over(&nodes[i]);
	}
	if (!*leader)
		return CONTROLS_PLAN_NO_LEADER;
	if (named == *leader)
		return CONTROLS_PLAN_LEADS;
	if (target && (!named || !named->standby))
		return CONTROLS_PLAN_NOT_STANDBY;
	if (target && named->priority < 1)
		return CONTROLS_PLAN_NEVER_LEADS;
	return any ? CONTROLS_PLAN_GO : CONTROLS_PLAN_NO_STANDBY;
}

/* "a, b" the standbys that could take over, or "none". */
static void candidates(const struct cli_node *nodes, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && at < len; i++)
		if (may_take_over(&nodes[i]))
			at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
					       nodes[i].node_id);
	if (!buf[0])
		snprintf(buf, len, "none");
}

/* The refusal of a plan, one line; the exit code. */
static int refuse(const struct config *cfg, const char *lock, enum controls_cli_plan plan,
		  const struct cli_node *nodes, int n, const struct cli_node *leader)
{
	char could[512], line[LOG_MSG_MAX];
	const char *to = cfg->switchover_to;

	candidates(nodes, n, could, sizeof(could));
	switch (plan) {
	case CONTROLS_PLAN_GO:
		return EXIT_OK;
	case CONTROLS_PLAN_LEADS:
		cli_put_text(to, 0);
		printf(" leads %s already\n", lock);
		return EXIT_OK;
	case CONTROLS_PLAN_NO_LEADER:
		snprintf(line, sizeof(line), "no node leads %s", lock);
		break;
	case CONTROLS_PLAN_NOT_STANDBY:
		snprintf(line, sizeof(line), "%s is not a connected standby of %s;"
			 " standbys that could take over: %s", to, lock, could);
		break;
	case CONTROLS_PLAN_NEVER_LEADS:
		snprintf(line, sizeof(line), "%s has priority 0: it never leads %s;"
			 " standbys that could take over: %s", to, lock, could);
		break;
	case CONTROLS_PLAN_NO_STANDBY:
		snprintf(line, sizeof(line), "no standby of %s could take over from %s"
			 " (none connected with priority 1 or more)", lock, leader->node_id);
		break;
	}
	cli_fail("switchover refused", line);
	return EXIT_NO_LEADER;
}

/* Who asked the switchover that stands: the refusal's line. */
static void refuse_standing(PGconn *conn, const struct config *cfg, const char *key,
			    const char *lock)
{
	struct ledger_sql_query q;
	char line[LOG_MSG_MAX];
	PGresult *res = NULL;

	if (controls_sql_standing(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10)))
		res = run_query(conn, cfg, "switchover refused", &q);
	if (res && PQntuples(res) == 1)
		snprintf(line, sizeof(line), "a switchover of %s stands already: asked by %s"
			 " at %s, lapses at %s", lock, cli_cell(res, 0, 0), cli_cell(res, 0, 1),
			 cli_cell(res, 0, 2));
	else
		snprintf(line, sizeof(line), "a switchover of %s stands already", lock);
	cli_fail("switchover refused", line);
	PQclear(res);
}

/* Writes our row (a lapsed one deleted first); its stamp in stamp.
 * Returns 0, 3 when one stands, 69. */
static int ask(PGconn *conn, const struct config *cfg, const char *key, const char *lock,
	       const char *leader, char *stamp, size_t len)
{
	struct ledger_sql_query q;
	int64_t k = strtoll(key, NULL, 10);
	PGresult *res;
	int rc;

	if ((rc = cli_ledger_ensure(conn, cfg)) != EXIT_OK)
		return rc;
	if (!controls_sql_lapsed(&q, cli_ledger_schema(cfg), k) ||
	    !(res = run_query(conn, cfg, "cannot ask for a switchover", &q)))
		return EXIT_UNAVAILABLE;
	PQclear(res);
	if (!controls_sql_switchover(&q, cli_ledger_schema(cfg), k, cfg->switchover_to,
				     cfg->switchover_wait_ms, leader) ||
	    !(res = run_query(conn, cfg, "cannot ask for a switchover", &q)))
		return EXIT_UNAVAILABLE;
	if (PQntuples(res) != 1) {
		PQclear(res);
		refuse_standing(conn, cfg, key, lock);
		return EXIT_NO_LEADER;
	}
	snprintf(stamp, len, "%s", cli_cell(res, 0, CONTROLS_ASK_STAMP));
	PQclear(res);
	return EXIT_OK;
}

/* Our row deleted (done or lapsed); false when that failed. */
static bool withdraw(PGconn *conn, const struct config *cfg, const char *key,
		     const char *stamp)
{
	struct ledger_sql_query q;
	PGresult *res = NULL;

	if (controls_sql_switchover_done(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10), stamp))
		res = run_query(conn, cfg, "cannot withdraw the switchover", &q);
	PQclear(res);
	return res != NULL;
}

/* The node that leads now (its fence held: its command starts or runs),
 * if it is not old and is the target when there is one; "" otherwise. */
static bool look(PGconn *conn, const char *key, const struct config *cfg,
		 const char *old, char *now, size_t len)
{
	struct cli_node *nodes;
	int n;

	now[0] = '\0';
	if (!cli_sessions_nodes(conn, key, &nodes, &n))
		return false;
	for (int i = 0; i < n; i++)
		if (nodes[i].leader)
			snprintf(now, len, "%s%s", nodes[i].fence_held ? "" : "?",
				 nodes[i].node_id);
	free(nodes);
	if (now[0] == '?' || !strcmp(now, old) ||
	    (cfg->switchover_to && strcmp(now, cfg->switchover_to)))
		now[0] = '\0';
	return true;
}

/* SIGINT, SIGTERM or SIGHUP (the terminal went away) while a switchover
 * waits: withdraw it, rather than leave the others stepping aside until it
 * lapses. */
static volatile sig_atomic_t interrupted;

static void interrupt_cb(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void catch_interrupt(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = interrupt_cb;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Polls until another node leads or --wait passed; the exit code. */
static int await_handover(PGconn *conn, const struct config *cfg, const char *key,
			  const char *lock, const char *old, const char *stamp)
{
	const struct timespec pause = { 0, POLL_MS * 1000000L };
	double deadline = now_mono() + (double)cfg->switchover_wait_ms / 1000.0;
	char now[WIRE_APP_NAME_MAX + 2], wait[32];
	struct cli_node *nodes;
	const struct cli_node *leader;
	int n;

	for (;;) {
		if (interrupted) {
			if (!withdraw(conn, cfg, key, stamp))
				return EXIT_UNAVAILABLE;
			cli_fail("switchover withdrawn", "interrupted");
			return EXIT_NO_LEADER;
		}
		if (!look(conn, key, cfg, old, now, sizeof(now)))
			return EXIT_UNAVAILABLE;
		if (now[0]) {
			if (!withdraw(conn, cfg, key, stamp))
				return EXIT_UNAVAILABLE;
			printf("%s leads %s (was %s)\n", now, lock, old);
			return EXIT_OK;
		}
		if (now_mono() >= deadline)
			break;
		nanosleep(&pause, NULL);
	}
	if (!withdraw(conn, cfg, key, stamp) || !cli_sessions_nodes(conn, key, &nodes, &n))
		return EXIT_UNAVAILABLE;
	controls_cli_plan(nodes, n, NULL, &leader);
	printf("no standby took over %s within %s; %s%s\n", lock,
	       value_format_duration(cfg->switchover_wait_ms, wait, sizeof(wait)),
	       leader ? leader->node_id : "no node",
	       leader && !strcmp(leader->node_id, old) ? " leads again" : " leads");
	free(nodes);
	return EXIT_NO_LEADER;
}

static int switchover(PGconn *conn, const struct config *cfg, const char *key)
{
	char lock[128], old[WIRE_APP_NAME_MAX + 1], stamp[64];
	struct cli_node *nodes;
	const struct cli_node *leader;
	enum controls_cli_plan plan;
	int n, rc;

	lock_text(cfg, key, lock, sizeof(lock));
	if (!cli_sessions_nodes(conn, key, &nodes, &n))
		return EXIT_UNAVAILABLE;
	plan = controls_cli_plan(nodes, n, cfg->switchover_to, &leader);
	/* --force: a node not connected now (being restarted) may take it */
	if (plan == CONTROLS_PLAN_NOT_STANDBY && cfg->force)
		plan = CONTROLS_PLAN_GO;
	if (plan != CONTROLS_PLAN_GO) {
		rc = refuse(cfg, lock, plan, nodes, n, leader);
		free(nodes);
		return rc;
	}
	snprintf(old, sizeof(old), "%s", leader->node_id);
	free(nodes);
	catch_interrupt();
	if ((rc = ask(conn, cfg, key, lock, old, stamp, sizeof(stamp))) != EXIT_OK)
		return rc;
	fflush(stdout);
	return await_handover(conn, cfg, key, lock, old, stamp);
}

int controls_cli_run(const struct config *cfg)
{
	static const char *const names[] = { "pgleader-pause", "pgleader-resume",
					     "pgleader-switchover" };
	int which = cfg->mode == CONFIG_MODE_PAUSE ? 0 : cfg->mode == CONFIG_MODE_RESUME ? 1 : 2;
	char key[32];
	PGconn *conn;
	int rc;

	if (!(conn = open_lock(cfg, names[which], key, sizeof(key), &rc)))
		return rc;
	rc = which == 0 ? pause_lock(conn, cfg, key)
	     : which == 1 ? resume_lock(conn, cfg, key) : switchover(conn, cfg, key);
	PQfinish(conn);
	if (fflush(stdout) != 0 && rc == EXIT_OK)
		rc = EXIT_UNAVAILABLE;
	return rc;
}

/* ---- the controls of status ---------------------------------------------- */

struct controls_read {
	PGresult *res;
};

/* The controls in force on the lock key (decimal text), or NULL when there
 * is no ledger, it is unreadable or did not answer; never a message, never
 * creates anything. */
static void *controls_read(PGconn *conn, const struct config *cfg, const char *key)
{
	struct ledger_sql_query q;
	struct controls_read *c;
	PGresult *res;

	if (!controls_sql_read(&q, cli_ledger_schema(cfg), strtoll(key, NULL, 10)) ||
	    !cli_ledger_present(conn, cfg))
		return NULL;
	res = cli_ledger_exec(conn, "cannot query", q.sql, q.nparams, q.params, true);
	if (!res || PQresultStatus(res) != PGRES_TUPLES_OK ||
	    PQnfields(res) != CONTROLS_READ_NCOLS || !(c = calloc(1, sizeof(*c)))) {
		PQclear(res);
		return NULL;
	}
	c->res = res;
	return c;
}

static bool is_pause(const PGresult *res, int r)
{
	return strcmp(cli_cell(res, r, CONTROLS_READ_KIND), "pause") == 0;
}

/* "paused:  every job since T by WHO", "paused:  job J since T by WHO",
 * "switchover: from OLD to NODE asked by WHO at T, lapses at T" */
static void controls_print(const void *read)
{
	const struct controls_read *c = read;
	const PGresult *res = c ? c->res : NULL;
	const char *job, *target;

	for (int r = 0; res && r < PQntuples(res); r++) {
		job = cli_cell(res, r, CONTROLS_READ_JOB);
		target = cli_cell(res, r, CONTROLS_READ_TARGET);
		if (is_pause(res, r)) {
			fputs(*job ? "paused:  job " : "paused:  every job", stdout);
			cli_put_text(job, 0);
			fputs(" since ", stdout);
		} else {
			fputs("switchover: from ", stdout);
			cli_put_text(cli_cell(res, r, CONTROLS_READ_LEADER), 0);
			fputs(target ? " to " : " to any standby", stdout);
			cli_put_text(target, 0);
			fputs(" asked at ", stdout);
		}
		cli_put_text(cli_cell(res, r, CONTROLS_READ_AT), 0);
		fputs(" by ", stdout);
		cli_put_text(cli_cell(res, r, CONTROLS_READ_BY), 0);
		if (!is_pause(res, r)) {
			fputs(", lapses at ", stdout);
			cli_put_text(cli_cell(res, r, CONTROLS_READ_UNTIL), 0);
		}
		putchar('\n');
	}
}

/* {"paused": {since, asked_by} or null, "paused_jobs": [{job, since,
 * asked_by}], "switchover": {from, to, asked_by, asked_at, until} or null} */
static json_t *controls_json(const void *read)
{
	const struct controls_read *c = read;
	const PGresult *res = c ? c->res : NULL;
	json_t *o = json_object(), *jobs = json_array(), *all = json_null(), *sw = json_null();
	json_t *e;

	for (int r = 0; res && r < PQntuples(res); r++) {
		e = json_object();
		if (is_pause(res, r) && *cli_cell(res, r, CONTROLS_READ_JOB))
			json_object_set_new(e, "job",
					    cli_json_text(cli_cell(res, r, CONTROLS_READ_JOB)));
		if (!is_pause(res, r)) {
			json_object_set_new(e, "from",
					    cli_json_text(cli_cell(res, r, CONTROLS_READ_LEADER)));
			json_object_set_new(e, "to",
					    cli_json_text(cli_cell(res, r, CONTROLS_READ_TARGET)));
		}
		json_object_set_new(e, is_pause(res, r) ? "since" : "asked_at",
				    cli_json_text(cli_cell(res, r, CONTROLS_READ_AT)));
		json_object_set_new(e, "asked_by", cli_json_text(cli_cell(res, r, CONTROLS_READ_BY)));
		if (!is_pause(res, r)) {
			json_object_set_new(e, "until",
					    cli_json_text(cli_cell(res, r, CONTROLS_READ_UNTIL)));
			json_decref(sw);
			sw = e;
		} else if (*cli_cell(res, r, CONTROLS_READ_JOB)) {
			json_array_append_new(jobs, e);
		} else {
			json_decref(all);
			all = e;
		}
	}
	json_object_set_new(o, "paused", all);
	json_object_set_new(o, "paused_jobs", jobs);
	json_object_set_new(o, "switchover", sw);
	return o;
}

static void controls_free(void *read)
{
	struct controls_read *c = read;

	if (!c)
		return;
	PQclear(c->res);
	free(c);
}

const struct cli_section controls_cli_section = {
	"controls", controls_read, controls_print, controls_json, controls_free,
};
