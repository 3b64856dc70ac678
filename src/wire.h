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
#define WIRE_KEY_OF_NAME(param) "hashtextextended(" param "::text, 0)"

/* connect_timeout when neither the DSN nor PGCONNECT_TIMEOUT sets one
 * (seconds; libpq treats values under 2 as 2). */
#define WIRE_CONNECT_TIMEOUT_DEFAULT 10
#define WIRE_CONNECT_TIMEOUT_MIN 2

#endif
