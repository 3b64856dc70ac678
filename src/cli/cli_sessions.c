/* cli_sessions.c: the sessions of a lock, from pg_locks and
 * pg_stat_activity in one query. */
#include "cli_sessions.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_role_is_fence(enum cli_role r)
{
	return r >= CLI_ROLE_FENCE_HELD;
}

/* The lease's advisory lock on one bigint shows in pg_locks as classid =
 * high 32 bits, objid = low 32 bits, objsubid = 1; the fence, the two-int4
 * form of the same 64 bits, as the same classid and objid with objsubid = 2;
 * both in the database of the session that took them.
 *
 * A session that holds or awaits neither shows only through
 * pg_stat_activity: its last statement, never the statement's parameters.
 * pgleader tags every statement of its sessions (WIRE_TAG_*), so that an
 * idle session tagged with another key is left out, and one tagged with
 * this key is a standby between tries (lock) or a fence connection kept
 * ready (fence). An idle pgleader session without a tag (a pgleader without
 * tags, or a statement hidden from a role without pg_read_all_stats) cannot
 * say which lock it is for: it is shown as an idle standby. A session that
 * holds or awaits another advisory lock belongs to another fleet.
 * A queued session's wait started with its last try (each retry_interval):
 * since when it has been queueing is its own comment (WIRE_WAITING_RE).
 * $1 the key, $2 WIRE_TAG_RE, $3 WIRE_WAITING_RE. */
#define SESSIONS_SQL(waitstart) \
	"WITH k AS (SELECT (($1::bigint >> 32) & 4294967295)::oid AS k_class,\n" \
	"                  ($1::bigint & 4294967295)::oid AS k_obj,\n" \
	"                  (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) AS k_db),\n" \
	"     l AS (SELECT pid, granted, objsubid, " waitstart " AS waitstart FROM pg_catalog.pg_locks, k\n" \
	"            WHERE locktype = 'advisory' AND database = k_db\n" \
	"              AND classid = k_class AND objid = k_obj AND objsubid IN (1, 2)),\n" \
	"     a AS (SELECT *, regexp_match(query, $2) AS tag FROM pg_catalog.pg_stat_activity\n" \
	"            WHERE pid <> pg_backend_pid())\n" \
	"SELECT a.application_name,\n" \
	"       CASE WHEN a.client_port = -1 THEN 'local' ELSE host(a.client_addr) END,\n" \
	"       a.pid,\n" \
	"       to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),\n" \
	"       l.granted,\n" \
	"       CASE WHEN NOT l.granted THEN COALESCE((regexp_match(a.query, $3))[1] || 'Z',\n" \
	"         to_char(l.waitstart AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) END,\n" \
	"       a.state,\n" \
	"       COALESCE(CASE l.objsubid WHEN 1 THEN 'lock' WHEN 2 THEN 'fence' END,\n" \
	"                a.tag[1], 'lock') AS part,\n" \
	"       CASE WHEN a.tag[2] = $1::bigint::text THEN a.tag[3] END,\n" \
	"       CASE WHEN a.tag[2] = $1::bigint::text THEN a.tag[4] END\n" \
	"  FROM a LEFT JOIN l ON l.pid = a.pid\n" \
	" WHERE l.pid IS NOT NULL\n" \
	"    OR (a.application_name LIKE '" WIRE_APP_PREFIX "%'\n" \
	"        AND a.datid = (SELECT k_db FROM k)\n" \
	"        AND (a.tag IS NULL OR a.tag[2] = $1::bigint::text)\n" \
	"        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks o\n" \
	"                         WHERE o.pid = a.pid AND o.locktype = 'advisory'))\n" \
	" ORDER BY COALESCE(l.objsubid = 2, a.tag[1] = 'fence', false), l.granted DESC NULLS LAST, l.waitstart NULLS LAST,\n" \
	"          a.backend_start, a.pid"

static enum cli_role role_of(const char *granted, bool fence, bool *leader_seen)
{
	if (fence)
		return !granted ? CLI_ROLE_FENCE_IDLE
		       : *granted == 't' ? CLI_ROLE_FENCE_HELD : CLI_ROLE_FENCE_WAITING;
	if (!granted)
		return CLI_ROLE_IDLE;
	if (*granted != 't')
		return CLI_ROLE_WAITING;
	if (*leader_seen)
		return CLI_ROLE_HOLDER;
	*leader_seen = true;
	return CLI_ROLE_LEADER;
}

static void fill_session(struct cli_session *s, const PGresult *res, int row,
			 bool *leader_seen)
{
	size_t plen = strlen(WIRE_APP_PREFIX);

	s->application_name = cli_cell(res, row, 0);
	s->node_id = NULL;
	if (s->application_name && strncmp(s->application_name, WIRE_APP_PREFIX, plen) == 0)
		s->node_id = s->application_name + plen;
	s->client_addr = cli_cell(res, row, 1);
	s->pid = cli_cell(res, row, 2);
	s->connected_since = cli_cell(res, row, 3);
	s->waiting_since = cli_cell(res, row, 5);
	s->session_state = cli_cell(res, row, 6);
	s->role = role_of(cli_cell(res, row, 4), strcmp(cli_cell(res, row, 7), "fence") == 0,
			  leader_seen);
	s->leader_since = s->role == CLI_ROLE_LEADER ? cli_cell(res, row, 8) : NULL;
	s->priority = cli_role_is_fence(s->role) ? NULL : cli_cell(res, row, 9);
	if (s->priority && strcmp(s->priority, "1") == 0)
		s->priority = NULL;
	/* A psql session queued on the key is worth showing, but must not be
	 * mistaken for a node. */
	snprintf(s->label, sizeof(s->label), s->node_id ? "%s" : "<%s>",
		 s->node_id ? s->node_id
		 : s->application_name && *s->application_name ? s->application_name
		 : "unnamed");
}

void cli_sessions_free(struct cli_sessions *snap)
{
	free(snap->s);
	PQclear(snap->res);
	memset(snap, 0, sizeof(*snap));
}

bool cli_sessions_take(PGconn *conn, const char *key, struct cli_sessions *snap)
{
	const char *params[3] = { key, WIRE_TAG_RE, WIRE_WAITING_RE };

	memset(snap, 0, sizeof(*snap));
	/* pg_locks.waitstart exists from PostgreSQL 14 on. */
	snap->res = cli_query(conn, PQserverVersion(conn) >= 140000 ? SESSIONS_SQL("waitstart")
			      : SESSIONS_SQL("NULL::timestamptz"), 3, params);
	if (!snap->res)
		return false;
	snap->n = PQntuples(snap->res);
	snap->s = calloc((size_t)snap->n + 1, sizeof(*snap->s));
	if (!snap->s) {
		cli_fail("cannot query", "out of memory");
		cli_sessions_free(snap);
		return false;
	}
	for (int i = 0; i < snap->n; i++)
		fill_session(&snap->s[i], snap->res, i, &snap->leader);
	return true;
}

/* The node of s in nodes[0..*n), added when new. */
static struct cli_node *node_of(struct cli_node *nodes, int *n, const char *id)
{
	for (int i = 0; i < *n; i++)
		if (strcmp(nodes[i].node_id, id) == 0)
			return &nodes[i];
	snprintf(nodes[*n].node_id, sizeof(nodes[*n].node_id), "%s", id);
	nodes[*n].priority = 1;
	return &nodes[(*n)++];
}

bool cli_sessions_nodes(PGconn *conn, const char *key, struct cli_node **nodes, int *n)
{
	struct cli_sessions snap;
	struct cli_node *node;

	*nodes = NULL;
	*n = 0;
	if (!cli_sessions_take(conn, key, &snap))
		return false;
	if (!(*nodes = calloc((size_t)snap.n + 1, sizeof(**nodes)))) {
		cli_fail("cannot query", "out of memory");
		cli_sessions_free(&snap);
		return false;
	}
	for (int i = 0; i < snap.n; i++) {
		const struct cli_session *s = &snap.s[i];

		if (!s->node_id)
			continue;
		node = node_of(*nodes, n, s->node_id);
		node->leader |= s->role == CLI_ROLE_LEADER;
		node->standby |= s->role == CLI_ROLE_WAITING || s->role == CLI_ROLE_IDLE;
		node->fence_held |= s->role == CLI_ROLE_FENCE_HELD;
		if (s->priority && !cli_role_is_fence(s->role))
			node->priority = (int)strtol(s->priority, NULL, 10);
	}
	cli_sessions_free(&snap);
	return true;
}
