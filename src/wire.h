/* wire.h: what pgleader puts on the wire, shared by the lease, status and
 * the configuration checks, so that all three agree. */
#ifndef PGLEADER_WIRE_H
#define PGLEADER_WIRE_H

/* application_name = WIRE_APP_PREFIX <node_id>; PostgreSQL keeps 63 bytes
 * (NAMEDATALEN - 1), so a node id may use what the prefix leaves. */
#define WIRE_APP_PREFIX "pgleader/"
#define WIRE_APP_NAME_MAX 63
#define WIRE_NODE_ID_MAX (WIRE_APP_NAME_MAX - (int)(sizeof(WIRE_APP_PREFIX) - 1))

/* A lock name becomes its key on the server, the same way on every node:
 * the SQL expression, with the name as the parameter given. */
#define WIRE_KEY_OF_NAME(param) "pg_catalog.hashtextextended(" param "::text, 0)"

/* Every statement of a lock or fence session ends with a tag, an SQL
 * comment naming its part, its key and, while the node leads, since when
 * (RFC 3339, UTC): pg_stat_activity shows a session's last statement but
 * never its parameters, so that without the tag a session holding nothing (a
 * poll-mode standby between tries, a fence connection kept ready) would not
 * say which lock it is for, and nothing on the server says since when a lock
 * is held. The comment's text, for a standby's try, a leader's ping and a
 * fence request:
 *   pgleader lock 42
 *   pgleader lock 42 leader since 2026-11-22T01:18:33.123Z
 *   pgleader lock 42 leader since 2026-11-22T01:18:33.123Z priority 3
 *   pgleader fence 42
 * A lock session's tag names the node's priority (DESIGN 11) when it is
 * not the default, 1, so that a standby of higher priority and `pgleader
 * status` can read it, and a fleet of default priorities sends what
 * earlier versions did. WIRE_TAG_FMT takes the part, the key (PRId64,
 * from <inttypes.h>), "" or WIRE_TAG_SINCE "<time>", and "" or
 * WIRE_TAG_PRIORITY "<n>"; WIRE_TAG_RE (a PostgreSQL regular expression)
 * gives the four back as its groups. */
#define WIRE_TAG_LOCK "lock"
#define WIRE_TAG_FENCE "fence"
#define WIRE_TAG_FMT " /* pgleader %s %" PRId64 "%s%s */"
#define WIRE_TAG_SINCE " leader since "
#define WIRE_TAG_PRIORITY " priority "
#define WIRE_TAG_RE "/\\* pgleader (lock|fence) (-?[0-9]+)(?: leader since ([0-9:.TZ-]+))?" \
	"(?: priority ([0-9]+))? \\*/"

/* A session queued for its lock (pg_advisory_lock under lock_timeout,
 * asked again each retry_interval) says from its second try on since when
 * it has been queueing, in a comment of its own before the tag, so that
 * `pgleader status` shows when the node began waiting, not the last try's
 * start (pg_locks.waitstart, right for the first try only). Its own
 * comment, not a part of the tag, so that WIRE_TAG_RE of earlier versions
 * still finds the tag after it:
 *   pgleader waiting since 2026-11-22T01:18:33.123Z
 * WIRE_WAITING_RE gives the time back to the second as its group, as
 * status shows waitstart. */
#define WIRE_WAITING_FMT " /* pgleader waiting since %s */"
#define WIRE_WAITING_RE "/\\* pgleader waiting since " \
	"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(?:\\.[0-9]{1,9})?Z \\*/"

/* connect_timeout when neither the DSN nor PGCONNECT_TIMEOUT sets one
 * (seconds; libpq treats values under 2 as 2). */
#define WIRE_CONNECT_TIMEOUT_DEFAULT 10
#define WIRE_CONNECT_TIMEOUT_MIN 2

#endif
