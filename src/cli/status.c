/* status.c: "pgleader status": the lease holder, its standbys and the fences,
 * from pg_locks, once or on every change. */
#include "status.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "cli.h"
#include "cli_sessions.h"
#include "exit_codes.h"

/* How often --watch looks: a change shows within this, at one small query
 * per look. */
#define WATCH_INTERVAL_MS 250

static const char *const role_json[] = { "leader", "holding", "waiting", "idle",
	"holding", "waiting", "idle" };
static const char *const role_label[] = { "leader:  ", "holder:  ", "standby: ",
	"standby: ", "fence:   ", "fence:   ", "fence:   " };
static const char *const role_text[] = { "", "  also holds the lock (shared mode)",
	"  waiting", "  idle (poll mode or between attempts)", "  holds the fence",
	"  waiting for the fence", "  idle, ready to take the fence" };

/* What one look shows after the sessions: each section's read, NULL when
 * it has nothing to show. */
struct sections_read {
	const struct cli_section *const *sections;
	void *read[STATUS_SECTIONS_MAX];
	int n;
};

/* ---- text --------------------------------------------------------------- */

static void widen(int *width, const char *s)
{
	int n = s ? (int)strlen(s) : 1;

	*width = n > *width ? n : *width;
}

static void print_session_text(const struct cli_session *s, int wlabel, int waddr, int wpid)
{
	fputs(role_label[s->role], stdout);
	cli_put_text(s->label, wlabel + 2);
	cli_put_text(s->client_addr ? s->client_addr : "?", waddr + 2);
	fputs("server pid ", stdout);
	cli_put_text(s->pid, wpid + 2);
	fputs("connected since ", stdout);
	cli_put_text(s->connected_since ? s->connected_since : "?", 0);
	if (s->leader_since) {
		fputs("  leader since ", stdout);
		cli_put_text(s->leader_since, 0);
	}
	fputs(role_text[s->role], stdout);
	if (s->waiting_since) {
		fputs(" since ", stdout);
		cli_put_text(s->waiting_since, 0);
	}
	/* last: the line reads as before for a node of the default */
	if (s->priority) {
		fputs("  priority ", stdout);
		cli_put_text(s->priority, 0);
		if (strcmp(s->priority, "0") == 0)
			fputs(": never leads", stdout);
	}
	putchar('\n');
}

static void print_text(const char *key, const char *lock_name, const struct cli_sessions *snap,
		       const struct sections_read *more)
{
	int wlabel = 0, waddr = 0, wpid = 0;
	bool hidden = false;

	for (int i = 0; i < snap->n; i++) {
		widen(&wlabel, snap->s[i].label);
		widen(&waddr, snap->s[i].client_addr);
		widen(&wpid, snap->s[i].pid);
	}
	printf("lock key %s", key);
	if (lock_name) {
		fputs(" (lock name \"", stdout);
		cli_put_text(lock_name, 0);
		fputs("\")", stdout);
	}
	putchar('\n');
	if (!snap->leader)
		puts("no leader");
	for (int i = 0; i < snap->n; i++) {
		print_session_text(&snap->s[i], wlabel, waddr, wpid);
		hidden |= !snap->s[i].connected_since;
	}
	for (int i = 0; i < more->n; i++)
		if (more->read[i])
			more->sections[i]->print(more->read[i]);
	/* Without pg_read_all_stats, pg_stat_activity shows only the pid and
	 * application_name of other roles' sessions. */
	if (hidden)
		fputs("pgleader: some sessions belong to other roles; grant"
		      " pg_read_all_stats to see their address and start time\n", stderr);
}

/* ---- JSON --------------------------------------------------------------- */

static json_t *json_session(const struct cli_session *s)
{
	const char *fields[][2] = {
		{ "node_id", s->node_id }, { "application_name", s->application_name },
		{ "client_addr", s->client_addr }, { "connected_since", s->connected_since },
		{ "state", role_json[s->role] }, { "waiting_since", s->waiting_since },
		{ "session_state", s->session_state },
	};
	json_t *o = json_object();

	/* pid: the server backend's, as in pg_stat_activity */
	json_object_set_new(o, "pid", s->pid ? json_integer(strtoll(s->pid, NULL, 10))
			    : json_null());
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		json_object_set_new(o, fields[i][0], cli_json_text(fields[i][1]));
	if (s->role == CLI_ROLE_LEADER)
		json_object_set_new(o, "leader_since", cli_json_text(s->leader_since));
	/* only when not the default, as the tag says it */
	if (s->priority)
		json_object_set_new(o, "priority", json_integer(strtoll(s->priority, NULL, 10)));
	return o;
}

static void print_json(const char *key, const char *lock_name, const struct cli_sessions *snap,
		       const struct sections_read *more)
{
	json_t *o = json_object();
	json_t *standbys = json_array();
	json_t *fences = json_array();

	/* The key as a string: JSON readers often hold numbers in doubles. */
	json_object_set_new(o, "lock_key", json_string(key));
	json_object_set_new(o, "lock_name", cli_json_text(lock_name));
	json_object_set_new(o, "leader", snap->leader ? json_session(&snap->s[0]) : json_null());
	for (int i = snap->leader ? 1 : 0; i < snap->n; i++)
		json_array_append_new(cli_role_is_fence(snap->s[i].role) ? fences : standbys,
				      json_session(&snap->s[i]));
	json_object_set_new(o, "standbys", standbys);
	json_object_set_new(o, "fences", fences);
	/* Only with a ledger: without one, the output is what it always was. */
	for (int i = 0; i < more->n; i++)
		if (more->read[i])
			json_object_set_new(o, more->sections[i]->json_name,
					    more->sections[i]->json(more->read[i]));
	cli_put_json(o);
}

/* Queries and prints once; returns the exit code. */
static int show(PGconn *conn, const struct config *cfg, const char *key,
		const struct cli_section *const *sections)
{
	struct cli_sessions snap;
	struct sections_read more = { sections, { NULL }, 0 };
	int rc;

	if (!cli_sessions_take(conn, key, &snap))
		return EXIT_UNAVAILABLE;
	/* The ledger's jobs and controls, if there is a readable ledger; else
	 * nothing. */
	for (; more.n < STATUS_SECTIONS_MAX && sections[more.n]; more.n++)
		more.read[more.n] = sections[more.n]->read(conn, cfg, key);
	if (cfg->json)
		print_json(key, cfg->lock_name, &snap, &more);
	else
		print_text(key, cfg->lock_name, &snap, &more);
	fflush(stdout);
	rc = snap.leader ? EXIT_OK : EXIT_NO_LEADER;
	for (int i = 0; i < more.n; i++)
		if (more.read[i])
			sections[i]->free(more.read[i]);
	cli_sessions_free(&snap);
	return rc;
}

/* ---- --watch ------------------------------------------------------------ */

/* Who leads, as --watch compares it: the node (or session name) and its
 * server pid; empty when no one does. */
struct leader_id {
	char label[80];
	char pid[16];
};

static void now_utc(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), size - strlen(buf), ".%03ldZ", ts.tv_nsec / 1000000);
}

/* One line: "TIME leader NODE (server pid N)" or "TIME no leader". */
static void print_change(const struct config *cfg, const struct cli_sessions *snap)
{
	char stamp[48];
	json_t *o;

	now_utc(stamp, sizeof(stamp));
	cli_print_begin();
	if (!cfg->json) {
		fputs(stamp, stdout);
		if (snap->leader) {
			fputs(" leader ", stdout);
			cli_put_text(snap->s[0].label, 0);
			fputs(" (server pid ", stdout);
			cli_put_text(snap->s[0].pid, 0);
			puts(")");
		} else {
			puts(" no leader");
		}
	} else {
		o = json_object();
		json_object_set_new(o, "time", json_string(stamp));
		json_object_set_new(o, "leader", snap->leader ? json_session(&snap->s[0])
				    : json_null());
		cli_put_json(o);
	}
	cli_print_end();
}

/* One line when the database goes away and when it is back:
 * "TIME database unreachable" / "TIME database reachable". */
static void print_database(const struct config *cfg, bool reachable)
{
	const char *what = reachable ? "reachable" : "unreachable";
	char stamp[48];
	json_t *o;

	now_utc(stamp, sizeof(stamp));
	cli_print_begin();
	if (!cfg->json) {
		printf("%s database %s\n", stamp, what);
	} else {
		o = json_object();
		json_object_set_new(o, "time", json_string(stamp));
		json_object_set_new(o, "database", json_string(what));
		cli_put_json(o);
	}
	cli_print_end();
}

/* Looks once; prints a line when the leader is not last's. False when the
 * query failed. */
static bool watch_look(PGconn *conn, const struct config *cfg, const char *key,
		       struct leader_id *last, bool *first)
{
	struct cli_sessions snap;
	struct leader_id now = { "", "" };

	if (!cli_sessions_take(conn, key, &snap))
		return false;
	if (snap.leader) {
		snprintf(now.label, sizeof(now.label), "%s", snap.s[0].label);
		snprintf(now.pid, sizeof(now.pid), "%s", snap.s[0].pid ? snap.s[0].pid : "?");
	}
	if (*first || strcmp(now.label, last->label) || strcmp(now.pid, last->pid))
		print_change(cfg, &snap);
	*first = false;
	*last = now;
	cli_sessions_free(&snap);
	return true;
}

/* Connects again after a look failed: a stalled or broken connection is
 * made anew (PQreset blocks up to connect_timeout per host), one that
 * merely had a query fail is kept. */
static bool reconnect(PGconn *conn)
{
	if (cli_stalled() || PQstatus(conn) != CONNECTION_OK) {
		PQsetnonblocking(conn, 0);
		PQreset(conn);
	}
	return PQstatus(conn) == CONNECTION_OK && cli_session_ready(conn);
}

/* Looks every WATCH_INTERVAL_MS until SIGINT or SIGTERM ends the process
 * (cli_stop_on_signal). A failed look is one message on stderr and one
 * line on stdout; once the database answers again, a line says so and
 * the leader is printed again, changed or not. */
static int watch(PGconn *conn, const struct config *cfg, const char *key)
{
	const struct timespec interval = { WATCH_INTERVAL_MS / 1000,
					   (WATCH_INTERVAL_MS % 1000) * 1000000L };
	struct leader_id last = { "", "" };
	bool first = true, up = true;

	for (;;) {
		if (!up && reconnect(conn)) {
			up = first = true;
			cli_quiet(false);
			print_database(cfg, true);
		}
		if (up && !watch_look(conn, cfg, key, &last, &first)) {
			up = false;
			cli_quiet(true); /* the attempts of this outage */
			print_database(cfg, false);
		}
		nanosleep(&interval, NULL);
	}
	return EXIT_UNAVAILABLE;
}

int status_run(const struct config *cfg, const struct cli_section *const *sections)
{
	PGconn *conn;
	char key[32];
	int rc;

	if (cfg->watch)
		cli_stop_on_signal();
	if (!cli_dsn_parses(cfg->dsn))
		return EXIT_CONFIG;
	conn = cli_connect(cfg, NULL, &rc);
	if (!conn)
		return rc;
	if (!cli_resolve_key(conn, cfg, key, sizeof(key)))
		rc = EXIT_UNAVAILABLE;
	else if (cfg->watch)
		rc = watch(conn, cfg, key);
	else
		rc = show(conn, cfg, key, sections);
	PQfinish(conn);
	return rc;
}
