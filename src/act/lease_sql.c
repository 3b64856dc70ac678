/* lease_sql.c: the lease's SQL, answers, messages and fault classes, without I/O. */
#include "lease_sql.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h" /* LOG_MSG_MAX only: nothing here logs */
#include "wire.h"

/* The last column: may this role write a transactional logical message
 * (the text variant; PostgreSQL 17 added a fourth, defaulted argument), the
 * cheapest WAL that makes a claim's commit durable. Looked up by signature
 * (to_regprocedure is NULL for one that does not exist), not by a scan of
 * pg_proc, which costs a fresh backend 0.6 ms more. */
#define EMIT_MESSAGE "pg_catalog.to_regprocedure('pg_catalog.pg_logical_emit_message(" \
	"boolean, text, text"
/* The setup runs before its own search_path is in force: every function it
 * calls is qualified, so that no overload in a schema the role searches
 * (a better-matching one in public, CVE-2018-1058) runs in its place. */
#define SETUP_COLUMNS "SELECT pg_catalog.pg_backend_pid(), pg_catalog.pg_is_in_recovery(), " \
	"pg_catalog.current_setting('server_version_num')::int, " \
	"pg_catalog.has_database_privilege(pg_catalog.current_database(), 'TEMP'), " \
	"coalesce(pg_catalog.has_function_privilege(coalesce(" \
	EMIT_MESSAGE ")'), " EMIT_MESSAGE ", boolean)')), 'EXECUTE'), false)"
/* Its five columns, the name's key when given, and the five settings. */
#define SETUP_NCOLS (5 + 5)

void lease_sql_setup(char *buf, size_t len, bool with_name, double lock_timeout,
		     double statement_timeout)
{
	/* The settings ride in the same statement, set for the session
	 * (set_config's false), so that a session is ready after one round
	 * trip: a queued wait ends after lock_timeout so the standby sees a
	 * broken session within that time; every statement ends within
	 * statement_timeout, whatever waits behind it (a role's own setting
	 * must not cut a queued wait short: it is set past lock_timeout);
	 * a role's default_transaction_read_only must not refuse the claim's
	 * WAL. Both are at most INT_MAX ms, PostgreSQL's bound (a retry_interval
 * at that bound plus ping_timeout would be refused, every try). Nothing of
 * anyone else's runs here (DESIGN 10): no row-level
	 * security policy (a query it would touch fails instead), and no name
	 * found outside pg_catalog (every relation is written qualified). */
	snprintf(buf, len, "%s%s, pg_catalog.set_config('lock_timeout', '%.0f', false), "
		 "pg_catalog.set_config('statement_timeout', '%.0f', false), "
		 "pg_catalog.set_config('default_transaction_read_only', 'off', false), "
		 "pg_catalog.set_config('row_security', 'off', false), "
		 "pg_catalog.set_config('search_path', 'pg_catalog', false)",
		 SETUP_COLUMNS, with_name ? ", " WIRE_KEY_OF_NAME("$1") : "",
		 fmin(lock_timeout * 1000, INT_MAX), fmin(statement_timeout * 1000, INT_MAX));
}

void lease_sql_fence_halves(int64_t key, int32_t *hi, int32_t *lo)
{
	uint64_t u = (uint64_t)key;

	/* Through uint32_t: converting a value above INT32_MAX to int32_t is
	 * implementation-defined in C11, two's complement everywhere that
	 * matters, and what the server does with an int4. */
	*hi = (int32_t)(uint32_t)(u >> 32);
	*lo = (int32_t)(uint32_t)(u & 0xffffffffu);
}

void lease_sql_lock(struct lease_sql_lock *out, enum lease_sql_lock_op op,
		    bool fence, int64_t key)
{
	static const char *const lock[] = {
		[LEASE_SQL_TRY] = "SELECT pg_try_advisory_lock($1::bigint)",
		[LEASE_SQL_WAIT] = "SELECT pg_advisory_lock($1::bigint)",
		[LEASE_SQL_UNLOCK] = "SELECT pg_advisory_unlock($1::bigint)",
	};
	static const char *const fence_lock[] = {
		[LEASE_SQL_TRY] = "SELECT pg_try_advisory_lock($1::int4, $2::int4)",
		[LEASE_SQL_WAIT] = "SELECT pg_advisory_lock($1::int4, $2::int4)",
		[LEASE_SQL_UNLOCK] = NULL, /* below */
	};
	int32_t hi, lo;

	if (!fence) {
		out->sql = lock[op];
		out->nparams = 1;
		snprintf(out->params[0], sizeof(out->params[0]), "%" PRId64, key);
		out->params[1][0] = '\0';
		return;
	}
	if (op == LEASE_SQL_UNLOCK) {
		/* Every hold: a wait that lock_timeout cancels just as the lock
		 * is granted leaves the lock held (session locks outlive the
		 * aborted statement), and the next take holds it twice. The
		 * fence session holds nothing else. */
		out->sql = "SELECT pg_advisory_unlock_all()";
		out->nparams = 0;
		out->params[0][0] = out->params[1][0] = '\0';
		return;
	}
	lease_sql_fence_halves(key, &hi, &lo);
	out->sql = fence_lock[op];
	out->nparams = 2;
	snprintf(out->params[0], sizeof(out->params[0]), "%" PRId32, hi);
	snprintf(out->params[1], sizeof(out->params[1]), "%" PRId32, lo);
}

bool lease_sql_tag(char *buf, size_t len, const char *sql, const char *part,
		   int64_t key, const char *since, int priority)
{
	char when[LEASE_SQL_TAG_MAX], prio[32] = "";
	int n;

	snprintf(when, sizeof(when), "%s%s", since && *since ? WIRE_TAG_SINCE : "",
		 since ? since : "");
	if (priority != 1)
		snprintf(prio, sizeof(prio), WIRE_TAG_PRIORITY "%d", priority);
	n = snprintf(buf, len, "%s" WIRE_TAG_FMT, sql, part, key, when, prio);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return false;
	}
	return true;
}

void lease_sql_since(char *buf, size_t len, int64_t sec, long nsec)
{
	time_t t = (time_t)sec;
	struct tm tm;
	char day[32];

	if (!gmtime_r(&t, &tm) ||
	    !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm))
		snprintf(day, sizeof(day), "1970-01-01T00:00:00");
	snprintf(buf, len, "%s.%03ldZ", day, nsec / 1000000);
}

/* A whole decimal number in [min, max]; nothing else around it. */
static bool parse_ll(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_pid(const char *s, int *pid)
{
	long long v;

	if (!parse_ll(s, 1, INT32_MAX, &v))
		return false;
	*pid = (int)v;
	return true;
}

static bool parse_bool(const char *s, bool *out)
{
	if (!s || (strcmp(s, "t") && strcmp(s, "f")))
		return false;
	*out = !strcmp(s, "t");
	return true;
}

static bool one_row(const struct lease_sql_answer *a, int ncols)
{
	return a && a->nrows == 1 && a->ncols == ncols && a->values;
}

bool lease_sql_parse_setup(const struct lease_sql_answer *a, bool with_name,
			   struct lease_sql_server *out)
{
	long long version, key = 0;

	if (!one_row(a, with_name ? SETUP_NCOLS + 1 : SETUP_NCOLS) ||
	    !parse_pid(a->values[0], &out->backend_pid) ||
	    !parse_bool(a->values[1], &out->in_recovery) ||
	    !parse_ll(a->values[2], 1, INT32_MAX, &version) ||
	    !parse_bool(a->values[3], &out->can_create_temp) ||
	    !parse_bool(a->values[4], &out->can_emit_message) ||
	    (with_name && !parse_ll(a->values[5], INT64_MIN, INT64_MAX, &key)))
		return false;
	out->version = (int)version;
	if (with_name)
		out->key = key;
	return true;
}

bool lease_sql_parse_identity_row(const struct lease_sql_answer *a,
				  struct lease_sql_server *out)
{
	return one_row(a, 2) && lease_sql_parse_identity(a->values[0], a->values[1],
							 &out->system_id, &out->db_oid);
}

bool lease_sql_parse_identity(const char *system_id, const char *db_oid,
			      uint64_t *system_id_out, uint32_t *db_oid_out)
{
	long long sysid = 0, oid;

	/* the identifier is an unsigned 64-bit number shown as a bigint */
	if ((system_id && !parse_ll(system_id, INT64_MIN, INT64_MAX, &sysid)) ||
	    !parse_ll(db_oid, 1, UINT32_MAX, &oid))
		return false;
	*system_id_out = (uint64_t)sysid;
	*db_oid_out = (uint32_t)oid;
	return true;
}

/* snprintf that appends at *n and never moves *n past the buffer. */
static void append(char *buf, size_t len, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	r = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	*n = r < 0 ? len : *n + (size_t)r;
}

/* idle_session_timeout is new in PostgreSQL 14 */
#define IDLE_TIMEOUT_VERSION 140000

/* Linux refuses a TCP_KEEPIDLE or TCP_KEEPINTVL above this many seconds,
 * and the server then only logs it and keeps the system's keepalives. */
#define TCP_KEEPALIVE_MAX_S 32767

/* The server drops a leader that goes silent within server_lease: an idle
 * session by idle_session_timeout (PostgreSQL 14+), a cut TCP connection by
 * keepalives (idle + count * interval, never less than server_lease: the
 * leader stops its command before then) and tcp_user_timeout for
 * unacknowledged data. A long lease takes more probes, not longer ones. */
static unsigned append_server_lease(char *buf, size_t len, size_t *n, int version,
				    double s)
{
	long ms = (long)(s * 1000);
	long count = (long)fmax(3, ceil(s / TCP_KEEPALIVE_MAX_S) - 1);
	long probe = (long)fmax(1, ceil(s / (double)(count + 1)));
	unsigned missing = 0;

	if (s <= 0)
		return 0;
	if (version >= IDLE_TIMEOUT_VERSION)
		append(buf, len, n, "SET idle_session_timeout = %ld; ", ms);
	else
		missing |= LEASE_SQL_NO_IDLE_TIMEOUT;
	append(buf, len, n, "SET tcp_keepalives_idle = %ld; "
	       "SET tcp_keepalives_interval = %ld; "
	       "SET tcp_keepalives_count = %ld; ", probe, probe, count);
	if (version >= 120000) /* new in PostgreSQL 12 */
		append(buf, len, n, "SET tcp_user_timeout = %ld; ", ms);
	return missing;
}

unsigned lease_sql_claim(char *buf, size_t len, const struct lease_sql_server *srv,
			 double server_lease)
{
	size_t n = 0;
	unsigned missing;

	if (len)
		buf[0] = '\0';
	missing = append_server_lease(buf, len, &n, srv->version, server_lease);
	/* A transaction that only takes an xid commits asynchronously: after
	 * a crash the server could hand the same xid, so the same fencing
	 * token, to the next leader. Writing a little catalog WAL makes the
	 * commit wait for its flush (and for synchronous standbys, if any).
	 * A transactional logical message is the cheapest such WAL (no file
	 * to create and unlink, no catalog rows: about 0.05 ms against 0.6,
	 * with a tail of several ms); logical decoding plugins see it under
	 * the prefix "pgleader", pgoutput only with its messages option. The
	 * temporary table is the fallback, named in pg_temp: a role whose
	 * search_path puts another schema first must not have its own
	 * pgleader_term dropped. */
	if (srv->can_emit_message)
		append(buf, len, &n, "SELECT pg_catalog.pg_logical_emit_message(true, "
		       "'pgleader', ''::text); ");
	else if (srv->can_create_temp)
		append(buf, len, &n, "CREATE TEMP TABLE pg_temp.pgleader_term (); "
		       "DROP TABLE pg_temp.pgleader_term; ");
	else
		missing |= LEASE_SQL_NO_DURABLE_TOKEN;
	/* txid_current() is the same 64-bit number before PostgreSQL 13 */
	append(buf, len, &n, "SELECT %s::text, pg_backend_pid()",
	       srv->version >= 130000 ? "pg_current_xact_id()" : "txid_current()");
	return missing;
}

bool lease_sql_fence_claim(char *buf, size_t len, const struct lease_sql_server *srv,
			   double server_lease)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	if (server_lease <= 0)
		return false;
	append_server_lease(buf, len, &n, srv->version, server_lease);
	append(buf, len, &n, LEASE_SQL_PING);
	return true;
}

bool lease_sql_fence_wait_claim(char *buf, size_t len, const struct lease_sql_server *srv,
				double server_lease, int64_t key)
{
	size_t n = 0;
	int32_t hi, lo;

	if (len)
		buf[0] = '\0';
	if (server_lease <= 0)
		return false;
	/* integers only, so written in the statement: a query of several
	 * statements takes no parameters. The settings commit with the
	 * grant, or are undone with the wait that lock_timeout ends. */
	lease_sql_fence_halves(key, &hi, &lo);
	append(buf, len, &n, "SELECT pg_advisory_lock(%" PRId32 ", %" PRId32 "); ", hi, lo);
	append_server_lease(buf, len, &n, srv->version, server_lease);
	append(buf, len, &n, LEASE_SQL_PING);
	return n < len;
}

bool lease_sql_unclaim(char *buf, size_t len, const struct lease_sql_server *srv,
		       double server_lease)
{
	if (len)
		buf[0] = '\0';
	/* keepalives and tcp_user_timeout only end a connection that is
	 * broken: they stay */
	if (server_lease <= 0 || srv->version < IDLE_TIMEOUT_VERSION)
		return false;
	snprintf(buf, len, "RESET idle_session_timeout");
	return true;
}

bool lease_sql_parse_claim(const struct lease_sql_answer *a, uint64_t *token,
			   int *pid)
{
	const char *s;
	char *end;

	if (!one_row(a, 2))
		return false;
	s = a->values[0];
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*token = strtoull(s, &end, 10);
	return !errno && !*end && *token > 0 && parse_pid(a->values[1], pid);
}

bool lease_sql_parse_granted(const struct lease_sql_answer *a, bool *granted)
{
	return one_row(a, 1) && parse_bool(a->values[0], granted);
}

bool lease_sql_parse_try_queue(const struct lease_sql_answer *a, bool *granted,
			       int *ahead, int *slots)
{
	long long v, n;

	if (!one_row(a, 3) || !parse_bool(a->values[0], granted) ||
	    !parse_ll(a->values[1], 0, INT32_MAX, &v) ||
	    !parse_ll(a->values[2], 0, INT64_MAX, &n))
		return false;
	*ahead = (int)v;
	*slots = n > INT32_MAX ? INT32_MAX : (int)n;
	return true;
}

bool lease_sql_parse_count(const struct lease_sql_answer *a, int *count)
{
	long long v;

	if (!one_row(a, 1) || !parse_ll(a->values[0], 0, INT32_MAX, &v))
		return false;
	*count = (int)v;
	return true;
}

bool lease_sql_parse_pid(const struct lease_sql_answer *a, int *pid)
{
	return one_row(a, 1) && parse_pid(a->values[0], pid);
}

bool lease_sql_parse_ping_nodes(const struct lease_sql_answer *a, int *pid,
				char *nodes, size_t len)
{
	if (!one_row(a, 2) || !parse_pid(a->values[0], pid))
		return false;
	snprintf(nodes, len, "%s", a->values[1] ? a->values[1] : "");
	return true;
}

/* libpq's verbose form puts the SQLSTATE after the severity:
 * "FATAL:  28P01: password ...". p points at the colon. */
static bool sqlstate_tag(const char *p)
{
	return !strncmp(p, ":  ", 3) &&
	       strspn(p + 3, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") >= 5 &&
	       !strncmp(p + 8, ": ", 2);
}

/* Each host a multi-host attempt tried adds a part that starts so. */
#define HOST_PART "connection to server "

/* Skips, at p, what the one-line form leaves out: a LOCATION line, or the
 * "  28P01:" after a severity's colon (recorded in sqlstate). Returns p
 * when there is nothing to skip. */
static const char *skip_noise(const char *msg, const char *p, char *sqlstate)
{
	if ((p == msg || p[-1] == '\n') && !strncmp(p, "LOCATION:", 9))
		return p + strcspn(p, "\n");
	if (sqlstate && !strncmp(p, HOST_PART, strlen(HOST_PART)))
		sqlstate[0] = '\0'; /* a new host: its own SQLSTATE, if any */
	if (p > msg && sqlstate_tag(p - 1)) {
		if (sqlstate)
			snprintf(sqlstate, 6, "%.5s", p + 2);
		return p + 8;
	}
	return p;
}

void lease_sql_one_line(char *out, size_t len, const char *msg, char *sqlstate)
{
	const char *start = msg && *msg ? msg : "unknown error", *p = start;
	size_t n = 0;
	bool gap = false;

	if (sqlstate)
		sqlstate[0] = '\0';
	if (!len)
		return;
	while (*p) {
		const char *next = skip_noise(start, p, sqlstate);
		unsigned char c = (unsigned char)*p;

		if (next != p) {
			p = next;
			continue;
		}
		p++;
		/* tabs, newlines and any other control character fold */
		if (c <= ' ' || c == 0x7f) {
			gap = n > 0;
			continue;
		}
		if (gap && n + 1 < len)
			out[n++] = ' ';
		gap = false;
		if (n + 1 < len)
			out[n++] = (char)c;
	}
	out[n] = '\0';
}

bool lease_sql_server_error(char *out, size_t len, const char *severity,
			    const char *message, const char *sqlstate)
{
	char text[LOG_MSG_MAX];

	snprintf(text, sizeof(text), "%s: %s (%s)", severity ? severity : "ERROR",
		 message && *message ? message : "no message",
		 sqlstate && *sqlstate ? sqlstate : "?????");
	lease_sql_one_line(out, len, text, NULL);
	return severity && (!strcmp(severity, "FATAL") || !strcmp(severity, "PANIC"));
}

static bool has_any(const char *s, const char *const *needles)
{
	for (; *needles; needles++)
		if (strstr(s, *needles))
			return true;
	return false;
}

static bool is_one_of(const char *code, const char *const *codes)
{
	for (; *codes; codes++)
		if (!strncmp(code, *codes, strlen(*codes)))
			return true;
	return false;
}

/* Before a connection exists, libpq either could not reach a host or did
 * not accept its options. */
static const char *const not_reached[] = {
	HOST_PART, "could not connect to server", "could not translate",
	"out of memory", NULL
};
static const char *const protocol_messages[] = {
	"expected authentication request", "received invalid response",
	"unexpected message", "invalid message", "message contents do not agree",
	"lost synchronization", "arrived from server while idle", NULL
};
/* target_session_attrs=read-write or primary found no primary */
static const char *const standby_messages[] = {
	"session is read-only", "server is in hot standby mode", NULL
};
/* bad password (28P01), no such role or no pg_hba entry (28000), no such
 * database (3D000), no CONNECT privilege (42501) */
static const char *const auth_codes[] = { "28000", "28P01", "3D000", "42501", NULL };
/* protocol violation, unsupported protocol version */
static const char *const protocol_codes[] = { "08P01", "0A000", NULL };
/* starting up or shutting down (57P03), too many connections and other
 * resources (class 53), connection exceptions (class 08) */
static const char *const busy_codes[] = { "57P03", "53", "08", NULL };

/* The part of a multi-host message that tells why the attempt ended. */
static const char *last_host(const char *msg)
{
	const char *p, *last = msg;

	for (p = msg; (p = strstr(p, HOST_PART)) != NULL; p++)
		last = p;
	return last;
}

static enum fault classify_connect(const char *code, bool needs_password,
				   const char *msg)
{
	if (needs_password || (*code && is_one_of(code, auth_codes)))
		return FAULT_AUTH;
	if (*code)
		return is_one_of(code, protocol_codes) ? FAULT_PROTOCOL
		     : is_one_of(code, busy_codes) ? FAULT_UNREACHABLE
		     : FAULT_TERMINATED;
	if (has_any(last_host(msg), standby_messages))
		return FAULT_HOT_STANDBY;
	if (has_any(last_host(msg), protocol_messages))
		return FAULT_PROTOCOL;
	return FAULT_UNREACHABLE;
}

enum fault lease_sql_classify(enum lease_sql_stage stage, const char *sqlstate,
			      bool needs_password, const char *message)
{
	const char *code = sqlstate ? sqlstate : "";
	const char *msg = message ? message : "";

	switch (stage) {
	case LEASE_SQL_START:
		/* options are checked before any host is tried */
		return has_any(msg, not_reached) ? FAULT_UNREACHABLE : FAULT_BAD_DSN;
	case LEASE_SQL_CONNECT:
		return classify_connect(code, needs_password, msg);
	case LEASE_SQL_QUERY:
		return FAULT_PROTOCOL;
	case LEASE_SQL_SESSION:
		/* the server says why it ended the session (a FATAL) */
		if (*code)
			return FAULT_TERMINATED;
		return has_any(msg, protocol_messages) ? FAULT_PROTOCOL
						       : FAULT_CONNECTION;
	}
	return FAULT_PROTOCOL;
}

int lease_sql_connect_timeout(const char *value)
{
	long long t;

	/* As libpq does: below the minimum is the minimum; 0 (libpq: wait for
	 * ever) or nothing means pgleader's default. */
	while (value && (*value == ' ' || *value == '\t'))
		value++;
	if (!value || !parse_ll(value, 1, INT32_MAX, &t))
		return WIRE_CONNECT_TIMEOUT_DEFAULT;
	return t < WIRE_CONNECT_TIMEOUT_MIN ? WIRE_CONNECT_TIMEOUT_MIN : (int)t;
}

static int count_elements(const char *list)
{
	int n = 1;

	if (!list || !*list)
		return 0;
	for (; *list; list++)
		n += *list == ',';
	return n;
}

int lease_sql_count_hosts(const char *host, const char *hostaddr)
{
	int h = count_elements(host), a = count_elements(hostaddr);

	return h > a ? h : a > 0 ? a : 1;
}

/* The i-th element of a comma-separated list, and its length; "" past the
 * end. */
static const char *element(const char *list, int i, size_t *len)
{
	const char *p = list ? list : "";

	for (; i > 0 && *p; i--) {
		p += strcspn(p, ",");
		if (*p)
			p++;
		else
			p = "";
	}
	*len = strcspn(p, ",");
	return p;
}

static bool element_is(const char *list, int i, const char *s)
{
	size_t len;
	const char *e = element(list, i, &len);

	return strlen(s) == len && !strncmp(e, s, len);
}

/* Appends element i of list to out, comma-separated. */
static void keep(char *out, size_t *n, const char *list, int i)
{
	size_t len;
	const char *e = element(list, i, &len);

	if (*n)
		out[(*n)++] = ',';
	memcpy(out + *n, e, len);
	*n += len;
	out[*n] = '\0';
}

/* Whether entry i is host:port as PQhost and PQport name it. */
static bool entry_is(const struct lease_sql_hosts *h, int i, int nports,
		     const char *host, const char *port)
{
	size_t len;
	const char *name = h->host, *p;

	element(h->host, i, &len);
	if (!len)
		name = h->hostaddr; /* PQhost gives hostaddr when host is empty */
	if (!element_is(name, i, host))
		return false;
	p = element(h->port, nports == 1 ? 0 : i, &len);
	return !port || !*port || !len || (strlen(port) == len && !strncmp(p, port, len));
}

int lease_sql_drop_host(struct lease_sql_hosts *h, const char *host,
			const char *port)
{
	int n = lease_sql_count_hosts(h->host, h->hostaddr);
	int nports = count_elements(h->port), left = 0;
	bool port_each = nports == n && n > 1; /* else one port for all */
	size_t nh = 0, na = 0, np = 0;

	h->host_out[0] = h->hostaddr_out[0] = h->port_out[0] = '\0';
	if (!port_each && h->port)
		strcpy(h->port_out, h->port);
	for (int i = 0; i < n; i++) {
		if (host && entry_is(h, i, nports, host, port))
			continue;
		left++;
		/* a list of one value (or none) stays as it is */
		if (count_elements(h->host) == n)
			keep(h->host_out, &nh, h->host, i);
		if (count_elements(h->hostaddr) == n)
			keep(h->hostaddr_out, &na, h->hostaddr, i);
		if (port_each)
			keep(h->port_out, &np, h->port, i);
	}
	return left == n ? -1 : left;
}

bool lease_sql_poll(char *buf, size_t len, double statement_timeout, const char *what)
{
	long ms = (long)fmin(fmax(statement_timeout * 1000, 1), 2147483647.0);
	int n = snprintf(buf, len, "BEGIN; SET LOCAL statement_timeout = %ld; "
			 "SET LOCAL lock_timeout = %ld; SET LOCAL search_path = "
			 "pg_catalog; SET LOCAL row_security = off; "
			 "/* pgleader poll */ SELECT %s; COMMIT", ms, ms, what);

	return n > 0 && (size_t)n < len;
}

bool lease_sql_poll_held(char *buf, size_t len, const char *key_sql)
{
	int n = snprintf(buf, len, "/* pgleader poll */ SELECT "
			 "pg_catalog.pg_try_advisory_xact_lock(%s), "
			 "pg_catalog.pg_backend_pid()", key_sql);

	return n > 0 && (size_t)n < len;
}

/* pg_lock_status() rather than the pg_locks view over it: a third less
 * of the server's time, most of it the view's planning. The key's two
 * halves are as pg_advisory_lock(bigint) stores them. */
bool lease_sql_poll_state(char *buf, size_t len, int64_t key, uint32_t db_oid)
{
#define EQ " OPERATOR(pg_catalog.=) "
#define OID "'%" PRIu32 "'::pg_catalog.oid"
	int n = snprintf(buf, len, "/* pgleader poll */ SELECT"
		" pg_catalog.count(*) FILTER (WHERE l.granted),"
		" pg_catalog.count(*) FILTER (WHERE NOT l.granted),"
		" pg_catalog.pg_backend_pid() FROM pg_catalog.pg_lock_status() AS l"
		" WHERE l.locktype" EQ "'advisory' AND l.objsubid" EQ "1"
		" AND l.classid" EQ OID " AND l.objid" EQ OID " AND l.database" EQ OID,
		(uint32_t)((uint64_t)key >> 32), (uint32_t)key, db_oid);
#undef EQ
#undef OID

	return n > 0 && (size_t)n < len;
}
