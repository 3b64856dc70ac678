/* test_lease_sql.c: the lease's SQL, answer parsing, libpq messages and fault classes. */
#include "lease_sql.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "wire.h"

#define NROWS(table) ((int)(sizeof(table) / sizeof(table[0])))

/* ---- libpq's messages in one line ---- */

static const struct {
	const char *msg;
	const char *line;
	const char *sqlstate;
} line_cases[] = {
	{ "connection to server at \"127.0.0.1\", port 5432 failed: FATAL:  28P01: "
	  "password authentication failed for user \"app\"\n"
	  "LOCATION:  auth_failed, auth.c:326\n",
	  "connection to server at \"127.0.0.1\", port 5432 failed: FATAL: "
	  "password authentication failed for user \"app\"", "28P01" },
	{ "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n"
	  "\tIs the server running on that host and accepting TCP/IP connections?\n"
	  "connection to server at \"127.0.0.1\", port 2 failed: Connection refused\n"
	  "\tIs the server running on that host and accepting TCP/IP connections?\n",
	  "connection to server at \"127.0.0.1\", port 1 failed: Connection refused "
	  "Is the server running on that host and accepting TCP/IP connections? "
	  "connection to server at \"127.0.0.1\", port 2 failed: Connection refused "
	  "Is the server running on that host and accepting TCP/IP connections?", "" },
	/* the SQLSTATE is the last host's: here it has none */
	{ "connection to server at \"a\", port 1 failed: FATAL:  57P03: the database "
	  "system is starting up\nconnection to server at \"b\", port 2 failed: "
	  "timeout expired\n",
	  "connection to server at \"a\", port 1 failed: FATAL: the database system "
	  "is starting up connection to server at \"b\", port 2 failed: timeout "
	  "expired", "" },
	{ "FATAL:  3D000: database \"nope\" does not exist\nLOCATION:  InitPostgres, "
	  "postinit.c:941\n", "FATAL: database \"nope\" does not exist", "3D000" },
	{ "ERROR:  55P03: canceling statement due to lock timeout",
	  "ERROR: canceling statement due to lock timeout", "55P03" },
	/* not a SQLSTATE: lower case, or one space */
	{ "failed:  abcde: x", "failed: abcde: x", "" },
	{ "failed: 28P01: x", "failed: 28P01: x", "" },
	{ "  \t leading and trailing \r\n\n ", "leading and trailing", "" },
	{ "bell\aand\x1b[31mescape\x7f", "bell and [31mescape", "" },
	{ "LOCATION: only", "", "" },
	{ "", "unknown error", "" },
	{ NULL, "unknown error", "" },
};

START_TEST(one_line)
{
	char out[LOG_MSG_MAX], sqlstate[6] = "XXXXX";

	lease_sql_one_line(out, sizeof(out), line_cases[_i].msg, sqlstate);
	ck_assert_str_eq(out, line_cases[_i].line);
	ck_assert_str_eq(sqlstate, line_cases[_i].sqlstate);
	/* the SQLSTATE is optional */
	lease_sql_one_line(out, sizeof(out), line_cases[_i].msg, NULL);
	ck_assert_str_eq(out, line_cases[_i].line);
}
END_TEST

START_TEST(one_line_truncates)
{
	char out[8];

	lease_sql_one_line(out, sizeof(out), "a\n\tb   c d e f g", NULL);
	ck_assert_str_eq(out, "a b c d");
	lease_sql_one_line(out, 1, "abc", NULL);
	ck_assert_str_eq(out, "");
}
END_TEST

/* A two-host failure with long host names once lost its tail between
 * buffers of 1200, 640 and 320 bytes: it fits LOG_MSG_MAX whole, also
 * with the lease's prefix. */
START_TEST(two_host_message_whole)
{
	char msg[LOG_MSG_MAX], line[LOG_MSG_MAX], reason[LOG_MSG_MAX + 64];
	char host[500];
	int n;

	memset(host, 'h', sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	n = snprintf(msg, sizeof(msg),
		     "connection to server on socket \"/run/%s/.s.PGSQL.5432\" failed: "
		     "No such file or directory\n\tIs the server running locally and "
		     "accepting connections on that socket?\n"
		     "connection to server at \"%s\" (127.0.0.1), port 5433 failed: "
		     "FATAL:  53300: sorry, too many clients already\n"
		     "LOCATION:  InitProcess, proc.c:362\nTHE-TAIL", host, host);
	ck_assert_int_gt(n, 1200);
	ck_assert_int_lt(n, LOG_MSG_MAX - 100);
	lease_sql_one_line(line, sizeof(line), msg, NULL);
	snprintf(reason, sizeof(reason), "database connection failed: %s", line);
	ck_assert_uint_lt(strlen(reason), LOG_MSG_MAX);
	ck_assert_msg(strstr(reason, "too many clients already THE-TAIL"), "%s", reason);
	ck_assert_ptr_nonnull(strstr(reason, "(127.0.0.1), port 5433"));
}
END_TEST

static const struct {
	const char *severity, *message, *sqlstate;
	bool fatal;
	const char *line;
} server_error_cases[] = {
	{ "FATAL", "terminating connection due to administrator command", "57P01", true,
	  "FATAL: terminating connection due to administrator command (57P01)" },
	{ "PANIC", "x", "XX000", true, "PANIC: x (XX000)" },
	{ "ERROR", "canceling statement due to lock timeout", "55P03", false,
	  "ERROR: canceling statement due to lock timeout (55P03)" },
	{ "NOTICE", "line one\n\tline two", NULL, false, "NOTICE: line one line two (?????" ")" },
	{ NULL, NULL, "", false, "ERROR: no message (?????" ")" },
	{ "fatal", "m", "57P01", false, "fatal: m (57P01)" }, /* not localized */
};

START_TEST(server_error)
{
	char out[LOG_MSG_MAX];

	ck_assert_int_eq(lease_sql_server_error(out, sizeof(out),
						server_error_cases[_i].severity,
						server_error_cases[_i].message,
						server_error_cases[_i].sqlstate),
			 server_error_cases[_i].fatal);
	ck_assert_str_eq(out, server_error_cases[_i].line);
}
END_TEST

/* ---- fault classes ---- */

static const struct {
	enum lease_sql_stage stage;
	const char *sqlstate;
	bool needs_password;
	const char *message;
	enum fault fault;
} classify_cases[] = {
	/* PQconnectStart refused: the options, or the network */
	{ LEASE_SQL_START, "", false, "invalid sslmode value: \"bogus\"", FAULT_BAD_DSN },
	{ LEASE_SQL_START, "", false, "invalid integer value \"abc\" for connection "
	  "option \"port\"", FAULT_BAD_DSN },
	{ LEASE_SQL_START, "", false, "invalid port number: \"99999999\"", FAULT_BAD_DSN },
	{ LEASE_SQL_START, "", false, "definition of service \"x\" not found", FAULT_BAD_DSN },
	{ LEASE_SQL_START, "", false, "invalid target_session_attrs value: \"x\"", FAULT_BAD_DSN },
	{ LEASE_SQL_START, "", false, "could not match 3 port numbers to 2 hosts", FAULT_BAD_DSN },
	{ LEASE_SQL_START, NULL, false, NULL, FAULT_BAD_DSN },
	{ LEASE_SQL_START, "", false, "could not translate host name \"db\" to address: "
	  "Name or service not known", FAULT_UNREACHABLE },
	{ LEASE_SQL_START, "", false, "connection to server on socket \"/x/.s.PGSQL.5432\" "
	  "failed: No such file or directory", FAULT_UNREACHABLE },
	{ LEASE_SQL_START, "", false, "could not connect to server: Connection refused",
	  FAULT_UNREACHABLE },
	{ LEASE_SQL_START, "", false, "out of memory", FAULT_UNREACHABLE },
	/* connecting: the server said no for good */
	{ LEASE_SQL_CONNECT, "28P01", false, "password authentication failed", FAULT_AUTH },
	{ LEASE_SQL_CONNECT, "28000", false, "role \"x\" does not exist", FAULT_AUTH },
	{ LEASE_SQL_CONNECT, "28000", false, "no pg_hba.conf entry", FAULT_AUTH },
	{ LEASE_SQL_CONNECT, "3D000", false, "database \"x\" does not exist", FAULT_AUTH },
	{ LEASE_SQL_CONNECT, "42501", false, "permission denied for database \"x\"", FAULT_AUTH },
	{ LEASE_SQL_CONNECT, "", true, "fe_sendauth: no password supplied", FAULT_AUTH },
	/* connecting: worth another try */
	{ LEASE_SQL_CONNECT, "53300", false, "sorry, too many clients already", FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "53200", false, "out of memory", FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "57P03", false, "the database system is starting up", FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "08006", false, "x", FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "", false, "connection to server at \"127.0.0.1\", port 1 "
	  "failed: Connection refused", FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "", false, "server closed the connection unexpectedly",
	  FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "57P01", false, "terminating connection due to "
	  "administrator command", FAULT_TERMINATED },
	{ LEASE_SQL_CONNECT, "08P01", false, "invalid startup packet", FAULT_PROTOCOL },
	{ LEASE_SQL_CONNECT, "0A000", false, "unsupported frontend protocol", FAULT_PROTOCOL },
	{ LEASE_SQL_CONNECT, "", false, "connection to server at \"h\", port 80 failed: "
	  "received invalid response to SSL negotiation: H", FAULT_PROTOCOL },
	{ LEASE_SQL_CONNECT, "", false, "expected authentication request from server, "
	  "but received H", FAULT_PROTOCOL },
	{ LEASE_SQL_CONNECT, "", false, "connection to server at \"a\", port 1 failed: "
	  "session is read-only", FAULT_HOT_STANDBY },
	{ LEASE_SQL_CONNECT, "", false, "connection to server at \"a\", port 1 failed: "
	  "server is in hot standby mode", FAULT_HOT_STANDBY },
	/* only the host that ended the attempt counts */
	{ LEASE_SQL_CONNECT, "", false, "connection to server at \"a\", port 1 failed: "
	  "session is read-only connection to server at \"b\", port 2 failed: "
	  "Connection refused", FAULT_UNREACHABLE },
	{ LEASE_SQL_CONNECT, "", false, "connection to server at \"a\", port 1 failed: "
	  "server is not in hot standby mode", FAULT_UNREACHABLE },
	/* a query answered with an ERROR */
	{ LEASE_SQL_QUERY, "42883", false, "function x does not exist", FAULT_PROTOCOL },
	{ LEASE_SQL_QUERY, NULL, false, NULL, FAULT_PROTOCOL },
	/* the session ended */
	{ LEASE_SQL_SESSION, "57P01", false, "terminating connection due to "
	  "administrator command", FAULT_TERMINATED },
	{ LEASE_SQL_SESSION, "57P05", false, "terminating connection due to idle-session "
	  "timeout", FAULT_TERMINATED },
	{ LEASE_SQL_SESSION, "57P02", false, "terminating connection because of crash "
	  "of another server process", FAULT_TERMINATED },
	{ LEASE_SQL_SESSION, "57P03", false, "x", FAULT_TERMINATED },
	{ LEASE_SQL_SESSION, "25P03", false, "idle-in-transaction timeout", FAULT_TERMINATED },
	{ LEASE_SQL_SESSION, "", false, "server closed the connection unexpectedly This "
	  "probably means the server terminated abnormally", FAULT_CONNECTION },
	{ LEASE_SQL_SESSION, NULL, false, "could not receive data from server: "
	  "Connection reset by peer", FAULT_CONNECTION },
	{ LEASE_SQL_SESSION, "", false, "lost synchronization with server: got message "
	  "type \"x\"", FAULT_PROTOCOL },
	{ LEASE_SQL_SESSION, "", false, "message type 0x31 arrived from server while "
	  "idle", FAULT_PROTOCOL },
};

START_TEST(classify)
{
	enum fault f = lease_sql_classify(classify_cases[_i].stage,
					  classify_cases[_i].sqlstate,
					  classify_cases[_i].needs_password,
					  classify_cases[_i].message);

	ck_assert_msg(f == classify_cases[_i].fault, "row %d (%s): %s, expected %s",
		      _i, classify_cases[_i].message ? classify_cases[_i].message : "NULL",
		      fault_label(f), fault_label(classify_cases[_i].fault));
}
END_TEST

/* ---- the setup query ---- */

START_TEST(setup_sql)
{
	char plain[LEASE_SQL_SETUP_MAX], named[LEASE_SQL_SETUP_MAX];

	lease_sql_setup(plain, sizeof(plain), false, 5.0, 7.0);
	lease_sql_setup(named, sizeof(named), true, 0.25, 1.25);
	ck_assert_ptr_null(strstr(plain, "$1"));
	ck_assert_ptr_nonnull(strstr(named, ", " WIRE_KEY_OF_NAME("$1") ", "));
	/* the settings ride along, after the columns the parser reads:
	 * every statement bounded, nothing of anyone else's run (DESIGN 10) */
	ck_assert_ptr_nonnull(strstr(plain, "), pg_catalog.set_config('lock_timeout', '5000', false), "
				     "pg_catalog.set_config('statement_timeout', '7000', false), "
				     "pg_catalog.set_config('default_transaction_read_only', "
				     "'off', false), "
				     "pg_catalog.set_config('row_security', 'off', false), "
				     "pg_catalog.set_config('search_path', 'pg_catalog', false)"));
	ck_assert_ptr_nonnull(strstr(named, "set_config('statement_timeout', '1250', false)"));
	ck_assert_ptr_nonnull(strstr(named, "set_config('lock_timeout', '250', false)"));
	/* at PostgreSQL's bound, INT_MAX ms, not past it (refused) */
	lease_sql_setup(plain, sizeof(plain), false, 2147483.647, 2147483.647 + 2.0);
	ck_assert_ptr_nonnull(strstr(plain, "set_config('lock_timeout', '2147483647', false)"));
	ck_assert_ptr_nonnull(strstr(plain, "set_config('statement_timeout', '2147483647', false)"));
	/* room for the tag within what send_sql sends, and within what
	 * pg_stat_activity shows (track_activity_query_size, 1024 bytes by
	 * default, with its NUL): an idle fence session's last statement is
	 * its setup, and `pgleader status` finds it by the tag at its end */
	ck_assert_uint_lt(strlen(named) + LEASE_SQL_TAG_MAX, LEASE_SQL_SETUP_MAX);
	ck_assert_uint_lt(strlen(named) + LEASE_SQL_TAG_MAX, 1024);
}
END_TEST

/* ---- which database a session reached (poll_dsn's check) ---- */

/* A system identifier the role may not read is NULL, 0; one past
 * INT64_MAX shows as a negative bigint; an oid is within 1..UINT32_MAX */
static const struct {
	int ncols;
	const char *v[2];
	bool ok;
	uint64_t system_id;
	uint32_t db_oid;
} identity_cases[] = {
	{ 2, { "7337000000000000001", "5" }, true, UINT64_C(7337000000000000001), 5 },
	{ 2, { NULL, "16384" }, true, 0, 16384 },
	{ 2, { "-1", "4294967295" }, true, UINT64_MAX, UINT32_MAX },
	{ 2, { "7337000000000000001", "0" }, false, 0, 0 },
	{ 2, { "7337000000000000001", "4294967296" }, false, 0, 0 },
	{ 2, { "7337000000000000001", NULL }, false, 0, 0 },
	{ 2, { "0x1f", "5" }, false, 0, 0 },
	{ 2, { "18446744073709551615", "5" }, false, 0, 0 },
	{ 1, { "7337000000000000001" }, false, 0, 0 },
};

START_TEST(parse_identity)
{
	struct lease_sql_answer a = { 1, identity_cases[_i].ncols, identity_cases[_i].v };
	struct lease_sql_server s = { 0 };

	ck_assert_int_eq(lease_sql_parse_identity_row(&a, &s), identity_cases[_i].ok);
	if (!identity_cases[_i].ok)
		return;
	ck_assert(s.system_id == identity_cases[_i].system_id);
	ck_assert_uint_eq(s.db_oid, identity_cases[_i].db_oid);
}
END_TEST
static const struct {
	int nrows, ncols;
	const char *v[11];
	bool with_name, ok;
	int pid, version;
	bool recovery, temp;
	int64_t key;
} setup_cases[] = {
	{ 1, 10, { "4242", "f", "150004", "t", "f", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, true, 4242, 150004, false, true, 0 },
	{ 1, 10, { "4242", "f", "150004", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, true, 4242, 150004, false, true, 0 },
	{ 1, 10, { "1", "t", "110000", "f", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, true, 1, 110000, true, false, 0 },
	{ 1, 11, { "7", "f", "170000", "t", "t", "-9223372036854775808", "5000", "0", "off",
	      "off", "pg_catalog" },
	  true, true, 7, 170000,
	  false, true, INT64_MIN },
	{ 1, 11, { "7", "f", "170000", "t", "t", "9223372036854775807", "5000", "0", "off",
	      "off", "pg_catalog" },
	  true, true, 7, 170000,
	  false, true, INT64_MAX },
	{ 1, 11, { "7", "f", "170000", "t", "t", "9223372036854775808", "5000", "0", "off",
	      "off", "pg_catalog" },
	  true, false, 0, 0, false, false, 0 },
	{ 1, 10, { "7", "f", "170000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  true, false, 0, 0, false, false, 0 },
	{ 1, 11, { "7", "f", "170000", "t", "t", "1", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 0, 10, { NULL }, false, false, 0, 0, false, false, 0 },
	{ 2, 10, { "1", "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "0", "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "-5", "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "12x", "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "", "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { NULL, "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "1", "true", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "1", "f", "15.4", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "1", "f", "150000", NULL, "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "99999999999", "f", "150000", "t", "t", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
	{ 1, 10, { "1", "f", "150000", "t", "yes", "5000", "0", "off",
	      "off", "pg_catalog" },
	  false, false, 0, 0, false, false, 0 },
};

START_TEST(parse_setup)
{
	struct lease_sql_answer a = { setup_cases[_i].nrows, setup_cases[_i].ncols,
				      setup_cases[_i].v };
	struct lease_sql_server s = { 0 };

	ck_assert_int_eq(lease_sql_parse_setup(&a, setup_cases[_i].with_name, &s),
			 setup_cases[_i].ok);
	if (!setup_cases[_i].ok)
		return;
	ck_assert_int_eq(s.backend_pid, setup_cases[_i].pid);
	ck_assert_int_eq(s.version, setup_cases[_i].version);
	ck_assert_int_eq(s.in_recovery, setup_cases[_i].recovery);
	ck_assert_int_eq(s.can_create_temp, setup_cases[_i].temp);
	ck_assert_int_eq(s.can_emit_message, !strcmp(setup_cases[_i].v[4], "t"));
	ck_assert(s.key == setup_cases[_i].key);
}
END_TEST

/* ---- the claim ---- */

static const struct {
	int version;
	bool temp;
	double lease;
	unsigned missing;
	const char *has[4];
	const char *lacks[4];
} claim_cases[] = {
	{ 170000, true, 20, 0,
	  { "SET idle_session_timeout = 20000; ", "SET tcp_keepalives_idle = 5; "
	    "SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3; "
	    "SET tcp_user_timeout = 20000; ", "SELECT pg_current_xact_id()::text, "
	    "pg_backend_pid()", NULL },
	  { "txid_current", NULL } },
	{ 140000, true, 2, 0, { "idle_session_timeout = 2000;", "keepalives_idle = 1;", NULL },
	  { NULL } },
	{ 130000, true, 20, LEASE_SQL_NO_IDLE_TIMEOUT,
	  { "tcp_user_timeout = 20000", "pg_current_xact_id()", NULL },
	  { "idle_session_timeout", NULL } },
	{ 120000, false, 20, LEASE_SQL_NO_IDLE_TIMEOUT | LEASE_SQL_NO_DURABLE_TOKEN,
	  { "tcp_user_timeout", "SELECT txid_current()::text", NULL },
	  { "idle_session_timeout", "TABLE", NULL } },
	{ 110000, true, 20, LEASE_SQL_NO_IDLE_TIMEOUT, { "keepalives_idle", NULL },
	  { "tcp_user_timeout", "idle_session_timeout", NULL } },
	/* server lease off: no session settings, the token all the same */
	{ 170000, true, 0, 0, { "CREATE TEMP TABLE", "pg_current_xact_id", NULL },
	  { "SET", NULL } },
	{ 170000, false, 0, LEASE_SQL_NO_DURABLE_TOKEN, { "pg_current_xact_id", NULL },
	  { "SET", "TABLE", NULL } },
};

/* sql has each of has and none of lacks (both NULL-terminated). */
static void has_lacks(const char *sql, const char *const *has, const char *const *lacks)
{
	for (int i = 0; has[i]; i++)
		ck_assert_msg(strstr(sql, has[i]), "%s lacks %s", sql, has[i]);
	for (int i = 0; lacks[i]; i++)
		ck_assert_msg(!strstr(sql, lacks[i]), "%s has %s", sql, lacks[i]);
}

START_TEST(claim_sql)
{
	struct lease_sql_server s = { .version = claim_cases[_i].version,
				      .can_create_temp = claim_cases[_i].temp };
	char sql[LEASE_SQL_MAX];
	unsigned missing = lease_sql_claim(sql, sizeof(sql), &s, claim_cases[_i].lease);

	ck_assert_uint_eq(missing, claim_cases[_i].missing);
	has_lacks(sql, claim_cases[_i].has, claim_cases[_i].lacks);
	ck_assert_uint_lt(strlen(sql), sizeof(sql) - 1); /* not cut */
}
END_TEST

/* A role that may write a logical message makes the token durable with
 * one, not with a temporary table; either way the token comes last. */
START_TEST(claim_sql_logical_message)
{
	struct lease_sql_server s = { .version = 150000, .can_create_temp = true,
				      .can_emit_message = true };
	char sql[LEASE_SQL_MAX];
	static const char *const has[] = {
		"SELECT pg_catalog.pg_logical_emit_message(true, 'pgleader', ''::text); "
		"SELECT pg_current_xact_id()::text, pg_backend_pid()", NULL };
	static const char *const lacks[] = { "TABLE", NULL };

	ck_assert_uint_eq(lease_sql_claim(sql, sizeof(sql), &s, 20), 0);
	has_lacks(sql, has, lacks);
	s.can_create_temp = false;
	ck_assert_uint_eq(lease_sql_claim(sql, sizeof(sql), &s, 0), 0);
	has_lacks(sql, has, lacks);
}
END_TEST

/* Keepalives give a cut connection up no sooner than server_lease, with
 * values Linux takes (at most 32767 s each, 127 probes): past that the
 * server would keep the system's two hours instead. */
START_TEST(claim_keepalives_cover_the_lease)
{
	static const double leases[] = { 0.001, 1, 2, 8, 20, 20.5, 131068, 131069,
					 131400, 1e6, 2147483.647 };
	struct lease_sql_server s = { .version = 170000, .can_create_temp = true };
	char sql[LEASE_SQL_MAX];

	for (size_t i = 0; i < sizeof(leases) / sizeof(*leases); i++) {
		long idle, interval, count;
		const char *at;

		lease_sql_claim(sql, sizeof(sql), &s, leases[i]);
		at = strstr(sql, "SET tcp_keepalives_idle");
		ck_assert_ptr_nonnull(at);
		ck_assert_int_eq(sscanf(at, "SET tcp_keepalives_idle = %ld; "
					"SET tcp_keepalives_interval = %ld; "
					"SET tcp_keepalives_count = %ld;",
					&idle, &interval, &count), 3);
		ck_assert_msg(idle >= 1 && idle <= 32767 && interval >= 1 &&
			      interval <= 32767 && count >= 3 && count <= 127,
			      "lease %g: %ld %ld %ld", leases[i], idle, interval, count);
		ck_assert_msg(idle + count * interval >= leases[i], "lease %g: %ld + %ld * %ld",
			      leases[i], idle, count, interval);
		/* and not much later: within one probe of the lease (each
		 * value is a whole second, at least 1) */
		ck_assert_msg(idle + count * interval <= fmax(4, leases[i] + interval),
			      "lease %g: %ld + %ld * %ld", leases[i], idle, count, interval);
	}
}
END_TEST

/* Every table the claim creates or drops is pg_temp's: a role whose
 * search_path puts public first must keep its own public.pgleader_term. */
START_TEST(claim_names_pg_temp)
{
	struct lease_sql_server s = { .version = 170000, .can_create_temp = true };
	char sql[LEASE_SQL_MAX];
	const char *p;
	int tables = 0;

	lease_sql_claim(sql, sizeof(sql), &s, 20);
	for (p = sql; (p = strstr(p, "TABLE ")) != NULL; p += 6, tables++)
		ck_assert_msg(!strncmp(p + 6, "pg_temp.", 8), "unqualified: %s", p);
	ck_assert_int_eq(tables, 2);
}
END_TEST

static const struct {
	int nrows, ncols;
	const char *v[2];
	bool ok;
	uint64_t token;
	int pid;
} claim_answer_cases[] = {
	{ 1, 2, { "748", "12" }, true, 748, 12 },
	{ 1, 2, { "18446744073709551615", "1" }, true, UINT64_MAX, 1 },
	{ 1, 2, { "18446744073709551616", "1" }, false, 0, 0 },
	{ 1, 2, { "0", "1" }, false, 0, 0 },
	{ 1, 2, { "-1", "1" }, false, 0, 0 },
	{ 1, 2, { " 1", "1" }, false, 0, 0 },
	{ 1, 2, { "1a", "1" }, false, 0, 0 },
	{ 1, 2, { NULL, "1" }, false, 0, 0 },
	{ 1, 2, { "1", "x" }, false, 0, 0 },
	{ 1, 1, { "1" }, false, 0, 0 },
	{ 0, 2, { NULL }, false, 0, 0 },
};

START_TEST(parse_claim)
{
	struct lease_sql_answer a = { claim_answer_cases[_i].nrows,
				      claim_answer_cases[_i].ncols, claim_answer_cases[_i].v };
	uint64_t token = 0;
	int pid = 0;

	ck_assert_int_eq(lease_sql_parse_claim(&a, &token, &pid), claim_answer_cases[_i].ok);
	if (claim_answer_cases[_i].ok) {
		ck_assert(token == claim_answer_cases[_i].token);
		ck_assert_int_eq(pid, claim_answer_cases[_i].pid);
	}
}
END_TEST

static const struct {
	int nrows, ncols;
	const char *v;
	int granted; /* -1: not an answer */
	int pid;     /* 0: not a pid */
} one_value_cases[] = {
	{ 1, 1, "t", 1, 0 }, { 1, 1, "f", 0, 0 }, { 1, 1, "true", -1, 0 },
	{ 1, 1, NULL, -1, 0 }, { 0, 1, "t", -1, 0 }, { 1, 2, "t", -1, 0 },
	{ 1, 1, "4711", -1, 4711 }, { 1, 1, "0", -1, 0 }, { 1, 1, "2147483647", -1, 2147483647 },
	{ 1, 1, "2147483648", -1, 0 }, { 2, 1, "5", -1, 0 },
};

START_TEST(parse_one_value)
{
	const char *v[2] = { one_value_cases[_i].v, one_value_cases[_i].v };
	struct lease_sql_answer a = { one_value_cases[_i].nrows, one_value_cases[_i].ncols, v };
	bool granted = false;
	int pid = 0;

	ck_assert_int_eq(lease_sql_parse_granted(&a, &granted),
			 one_value_cases[_i].granted >= 0);
	if (one_value_cases[_i].granted >= 0)
		ck_assert_int_eq(granted, one_value_cases[_i].granted);
	ck_assert_int_eq(lease_sql_parse_pid(&a, &pid), one_value_cases[_i].pid > 0);
	if (one_value_cases[_i].pid > 0)
		ck_assert_int_eq(pid, one_value_cases[_i].pid);
}
END_TEST

static const struct {
	int ncols;
	const char *pid, *nodes;
	bool ok;
} ping_nodes_cases[] = {
	{ 2, "4711", "a,b", true }, { 2, "4711", NULL, true }, { 1, "4711", "a", false },
	{ 2, "x", "a", false },
};

START_TEST(parse_ping_nodes)
{
	const char *v[2] = { ping_nodes_cases[_i].pid, ping_nodes_cases[_i].nodes };
	struct lease_sql_answer a = { 1, ping_nodes_cases[_i].ncols, v };
	char nodes[16] = "?";
	int pid = 0;

	ck_assert_int_eq(lease_sql_parse_ping_nodes(&a, &pid, nodes, sizeof(nodes)),
			 ping_nodes_cases[_i].ok);
	if (ping_nodes_cases[_i].ok) {
		ck_assert_int_eq(pid, 4711);
		ck_assert_str_eq(nodes, ping_nodes_cases[_i].nodes
				 ? ping_nodes_cases[_i].nodes : "");
	}
}
END_TEST

/* A standby's try with where it stands (DESIGN 15): granted, the count
 * of standbys queued or ranked before it, a count of 0 or more, and the
 * lock table's slots (a bigint: above INT32_MAX is INT32_MAX). */
static const struct {
	int ncols;
	const char *granted, *ahead, *slots;
	bool ok;
	int want, want_slots;
} try_queue_cases[] = {
	{ 3, "f", "3", "6400", true, 3, 6400 }, { 3, "t", "0", "0", true, 0, 0 },
	{ 3, "f", "998", "131200", true, 998, 131200 },
	{ 3, "f", "1", "99999999999", true, 1, INT32_MAX },
	{ 2, "f", "3", "6400", false, 0, 0 }, { 3, "f", NULL, "6400", false, 0, 0 },
	{ 3, "f", "-1", "6400", false, 0, 0 }, { 3, "f", "3x", "6400", false, 0, 0 },
	{ 3, "x", "3", "6400", false, 0, 0 }, { 3, "f", "99999999999", "6400", false, 0, 0 },
	{ 3, "f", "3", NULL, false, 0, 0 }, { 3, "f", "3", "-1", false, 0, 0 },
	{ 3, "f", "3", "64k", false, 0, 0 },
};

START_TEST(parse_try_queue)
{
	const char *v[3] = { try_queue_cases[_i].granted, try_queue_cases[_i].ahead,
			     try_queue_cases[_i].slots };
	struct lease_sql_answer a = { 1, try_queue_cases[_i].ncols, v };
	bool granted = false;
	int ahead = -7, slots = -7;

	ck_assert_int_eq(lease_sql_parse_try_queue(&a, &granted, &ahead, &slots),
			 try_queue_cases[_i].ok);
	if (try_queue_cases[_i].ok) {
		ck_assert_int_eq(granted, !strcmp(try_queue_cases[_i].granted, "t"));
		ck_assert_int_eq(ahead, try_queue_cases[_i].want);
		ck_assert_int_eq(slots, try_queue_cases[_i].want_slots);
	}
}
END_TEST

/* LEASE_SQL_QUEUE_RANK's answer: one count, 0 or more. */
static const struct {
	int ncols;
	const char *value;
	bool ok;
	int want;
} queue_count_cases[] = {
	{ 1, "0", true, 0 }, { 1, "17", true, 17 }, { 2, "1", false, 0 },
	{ 1, NULL, false, 0 }, { 1, "-1", false, 0 }, { 1, "1.5", false, 0 },
};

START_TEST(parse_queue_count)
{
	const char *v[2] = { queue_count_cases[_i].value, "1" };
	struct lease_sql_answer a = { 1, queue_count_cases[_i].ncols, v };
	int count = -7;

	ck_assert_int_eq(lease_sql_parse_count(&a, &count), queue_count_cases[_i].ok);
	if (queue_count_cases[_i].ok)
		ck_assert_int_eq(count, queue_count_cases[_i].want);
}
END_TEST

/* ---- the fence: the key as two int4 ---- */

static const struct {
	int64_t key;
	int32_t hi, lo;
	const char *hi_text, *lo_text;
} halves_cases[] = {
	{ 0, 0, 0, "0", "0" },
	{ 1, 0, 1, "0", "1" },
	{ -1, -1, -1, "-1", "-1" },
	{ INT64_MIN, INT32_MIN, 0, "-2147483648", "0" },
	{ INT64_MAX, INT32_MAX, -1, "2147483647", "-1" },
	/* "PGLEADER" */
	{ 0x50474c4541444552, 0x50474c45, 0x41444552, "1346849861", "1094993234" },
	/* the low half's sign bit set, the high half's not */
	{ 0x123456789abcdef0, 0x12345678, -1698898192, "305419896", "-1698898192" },
	{ 0x0000000080000000, 0, INT32_MIN, "0", "-2147483648" },
	{ -4294967296, -1, 0, "-1", "0" },
};

START_TEST(fence_halves)
{
	int32_t hi = 42, lo = 42;
	struct lease_sql_lock q;

	lease_sql_fence_halves(halves_cases[_i].key, &hi, &lo);
	ck_assert_int_eq(hi, halves_cases[_i].hi);
	ck_assert_int_eq(lo, halves_cases[_i].lo);
	/* what goes on the wire */
	lease_sql_lock(&q, LEASE_SQL_WAIT, true, halves_cases[_i].key);
	ck_assert_int_eq(q.nparams, 2);
	ck_assert_str_eq(q.params[0], halves_cases[_i].hi_text);
	ck_assert_str_eq(q.params[1], halves_cases[_i].lo_text);
}
END_TEST

static const struct {
	enum lease_sql_lock_op op;
	bool fence;
	int64_t key;
	const char *sql;
	int nparams;
	const char *p1, *p2;
} lock_cases[] = {
	{ LEASE_SQL_TRY, false, 42, "SELECT pg_try_advisory_lock($1::bigint)", 1, "42", "" },
	{ LEASE_SQL_WAIT, false, INT64_MIN, "SELECT pg_advisory_lock($1::bigint)", 1,
	  "-9223372036854775808", "" },
	{ LEASE_SQL_UNLOCK, false, -7, "SELECT pg_advisory_unlock($1::bigint)", 1, "-7", "" },
	{ LEASE_SQL_TRY, true, 42, "SELECT pg_try_advisory_lock($1::int4, $2::int4)", 2,
	  "0", "42" },
	{ LEASE_SQL_WAIT, true, -7, "SELECT pg_advisory_lock($1::int4, $2::int4)", 2,
	  "-1", "-7" },
	/* the fence gives back every hold it may have (a lock_timeout that
	 * fires just as the lock is granted leaves it held) */
	{ LEASE_SQL_UNLOCK, true, INT64_MAX, "SELECT pg_advisory_unlock_all()", 0, "", "" },
};

START_TEST(lock_sql)
{
	struct lease_sql_lock q;

	memset(&q, 'x', sizeof(q));
	lease_sql_lock(&q, lock_cases[_i].op, lock_cases[_i].fence, lock_cases[_i].key);
	ck_assert_str_eq(q.sql, lock_cases[_i].sql);
	ck_assert_int_eq(q.nparams, lock_cases[_i].nparams);
	ck_assert_str_eq(q.params[0], lock_cases[_i].p1);
	ck_assert_str_eq(q.params[1], lock_cases[_i].p2);
}
END_TEST

/* ---- the tag of every statement (wire.h) ---- */

static const struct {
	const char *sql, *part;
	int64_t key;
	const char *since, *tagged;
	int priority;            /* -1: 0 */
} tag_cases[] = {
	/* wire.h's three examples */
	{ "SELECT pg_try_advisory_lock($1::bigint)", WIRE_TAG_LOCK, 42, "",
	  "SELECT pg_try_advisory_lock($1::bigint) /* pgleader lock 42 */", 1 },
	{ LEASE_SQL_PING, WIRE_TAG_LOCK, 42, "2026-11-22T01:18:33.123Z",
	  "SELECT pg_backend_pid() /* pgleader lock 42 leader since "
	  "2026-11-22T01:18:33.123Z */", 1 },
	{ "SELECT pg_advisory_lock($1::int4, $2::int4)", WIRE_TAG_FENCE, 42, NULL,
	  "SELECT pg_advisory_lock($1::int4, $2::int4) /* pgleader fence 42 */", 1 },
	{ "SET a = 1; SELECT 1", WIRE_TAG_FENCE, INT64_MIN, "",
	  "SET a = 1; SELECT 1 /* pgleader fence -9223372036854775808 */", 1 },
	/* a priority other than the default (DESIGN 11) */
	{ LEASE_SQL_PING, WIRE_TAG_LOCK, 42, "2026-11-22T01:18:33.123Z",
	  "SELECT pg_backend_pid() /* pgleader lock 42 leader since "
	  "2026-11-22T01:18:33.123Z priority 3 */", 3 },
	{ "SELECT pg_try_advisory_lock($1::bigint)", WIRE_TAG_LOCK, 42, "",
	  "SELECT pg_try_advisory_lock($1::bigint) /* pgleader lock 42 priority 0 */", -1 },
};

START_TEST(tag)
{
	char buf[LEASE_SQL_MAX + LEASE_SQL_TAG_MAX];

	int prio = tag_cases[_i].priority < 0 ? 0 : tag_cases[_i].priority;
	ck_assert(lease_sql_tag(buf, sizeof(buf), tag_cases[_i].sql, tag_cases[_i].part,
				tag_cases[_i].key, tag_cases[_i].since, prio));
	ck_assert_str_eq(buf, tag_cases[_i].tagged);
	/* one byte short: nothing rather than a statement cut */
	ck_assert(!lease_sql_tag(buf, strlen(tag_cases[_i].tagged), tag_cases[_i].sql,
				 tag_cases[_i].part, tag_cases[_i].key, tag_cases[_i].since,
				 prio));
	ck_assert_str_eq(buf, "");
}
END_TEST

/* The longest tag fits LEASE_SQL_TAG_MAX with the longest statement. */
START_TEST(tag_fits)
{
	char sql[LEASE_SQL_MAX], buf[LEASE_SQL_MAX + LEASE_SQL_TAG_MAX];

	memset(sql, 'x', sizeof(sql) - 1);
	sql[sizeof(sql) - 1] = '\0';
	ck_assert(lease_sql_tag(buf, sizeof(buf), sql, WIRE_TAG_FENCE, INT64_MIN,
				"2026-11-22T01:18:33.123Z", 1));
	ck_assert(lease_sql_tag(buf, sizeof(buf), sql, WIRE_TAG_LOCK, INT64_MIN,
				"2026-11-22T01:18:33.123Z", 1000));
}
END_TEST

static const struct {
	int64_t sec;
	long nsec;
	const char *text;
} since_cases[] = {
	{ 0, 0, "1970-01-01T00:00:00.000Z" },
	{ 1795310313, 123456789, "2026-11-22T01:18:33.123Z" },
	{ 1795310313, 999999999, "2026-11-22T01:18:33.999Z" },
	{ 951782400, 1000000, "2000-02-29T00:00:00.001Z" },
};

START_TEST(since)
{
	char buf[64];

	lease_sql_since(buf, sizeof(buf), since_cases[_i].sec, since_cases[_i].nsec);
	ck_assert_str_eq(buf, since_cases[_i].text);
}
END_TEST

/* ---- the fence's claim, and what an unlock that keeps the session undoes ---- */

static const struct {
	int version;
	double lease;
	bool claims;
	const char *has[4];
	const char *lacks[4];
} fence_claim_cases[] = {
	{ 170000, 20, true,
	  { "SET idle_session_timeout = 20000; ", "SET tcp_keepalives_idle = 5; "
	    "SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3; "
	    "SET tcp_user_timeout = 20000; SELECT pg_backend_pid()", NULL },
	  { "xact_id", "txid", "TABLE", NULL } },
	{ 130000, 20, true, { "tcp_user_timeout = 20000", "SELECT pg_backend_pid()", NULL },
	  { "idle_session_timeout", NULL } },
	{ 110000, 8, true, { "keepalives_idle = 2;", NULL },
	  { "tcp_user_timeout", "idle_session_timeout", NULL } },
	/* server lease off: held as soon as granted */
	{ 170000, 0, false, { NULL }, { "S", NULL } },
};

START_TEST(fence_claim_sql)
{
	struct lease_sql_server s = { .version = fence_claim_cases[_i].version,
				      .can_create_temp = true };
	char sql[LEASE_SQL_MAX];

	ck_assert_int_eq(lease_sql_fence_claim(sql, sizeof(sql), &s,
					       fence_claim_cases[_i].lease),
			 fence_claim_cases[_i].claims);
	has_lacks(sql, fence_claim_cases[_i].has, fence_claim_cases[_i].lacks);
	/* the claim's last statement answers with the pid */
	if (fence_claim_cases[_i].claims)
		ck_assert_str_eq(sql + strlen(sql) - strlen(LEASE_SQL_PING), LEASE_SQL_PING);
}
END_TEST

/* A queued wait for the fence with its claim: the lock first, the halves
 * written in (no parameters in a query of several statements), the claim's
 * settings after it, the pid last; nothing to merge without a lease. */
START_TEST(fence_wait_claim_sql)
{
	struct lease_sql_server s = { .version = 170000 };
	char sql[LEASE_SQL_MAX], claim[LEASE_SQL_MAX], want[2 * LEASE_SQL_MAX];

	ck_assert(lease_sql_fence_wait_claim(sql, sizeof(sql), &s, 20, -2));
	ck_assert(lease_sql_fence_claim(claim, sizeof(claim), &s, 20));
	snprintf(want, sizeof(want), "SELECT pg_advisory_lock(-1, -2); %s", claim);
	ck_assert_str_eq(sql, want);
	ck_assert(lease_sql_fence_wait_claim(sql, sizeof(sql), &s, 20, 0x100000002));
	ck_assert_ptr_nonnull(strstr(sql, "SELECT pg_advisory_lock(1, 2); SET "));
	ck_assert(!lease_sql_fence_wait_claim(sql, sizeof(sql), &s, 0, 42));
	ck_assert_str_eq(sql, "");
	ck_assert(!lease_sql_fence_wait_claim(sql, 40, &s, 20, 42)); /* cut short */
}
END_TEST

static const struct {
	int version;
	double lease;
	const char *sql; /* NULL: nothing to undo */
} unclaim_cases[] = {
	{ 170000, 20, "RESET idle_session_timeout" },
	{ 140000, 0.5, "RESET idle_session_timeout" },
	{ 130000, 20, NULL },
	{ 170000, 0, NULL },
};

START_TEST(unclaim_sql)
{
	struct lease_sql_server s = { .version = unclaim_cases[_i].version };
	char sql[LEASE_SQL_MAX], claim[LEASE_SQL_MAX];
	bool undo = lease_sql_unclaim(sql, sizeof(sql), &s, unclaim_cases[_i].lease);

	ck_assert_int_eq(undo, unclaim_cases[_i].sql != NULL);
	ck_assert_str_eq(sql, undo ? unclaim_cases[_i].sql : "");
	/* it undoes exactly what both claims set */
	lease_sql_claim(claim, sizeof(claim), &s, unclaim_cases[_i].lease);
	ck_assert_int_eq(strstr(claim, "idle_session_timeout") != NULL, undo);
	lease_sql_fence_claim(claim, sizeof(claim), &s, unclaim_cases[_i].lease);
	ck_assert_int_eq(strstr(claim, "idle_session_timeout") != NULL, undo);
}
END_TEST

/* ---- hosts and their connect_timeout ---- */

static const struct {
	const char *value;
	int seconds;
} timeout_cases[] = {
	{ NULL, WIRE_CONNECT_TIMEOUT_DEFAULT }, { "", WIRE_CONNECT_TIMEOUT_DEFAULT },
	{ "0", WIRE_CONNECT_TIMEOUT_DEFAULT }, { "-3", WIRE_CONNECT_TIMEOUT_DEFAULT },
	{ "abc", WIRE_CONNECT_TIMEOUT_DEFAULT }, { "1", WIRE_CONNECT_TIMEOUT_MIN },
	{ "2", 2 }, { "30", 30 }, { " 7", 7 }, { "7s", WIRE_CONNECT_TIMEOUT_DEFAULT },
	{ "99999999999", WIRE_CONNECT_TIMEOUT_DEFAULT },
};

START_TEST(connect_timeout)
{
	ck_assert_int_eq(lease_sql_connect_timeout(timeout_cases[_i].value),
			 timeout_cases[_i].seconds);
}
END_TEST

static const struct {
	const char *host, *hostaddr;
	int n;
} count_cases[] = {
	{ NULL, NULL, 1 }, { "", "", 1 }, { "db", NULL, 1 }, { "a,b", NULL, 2 },
	{ NULL, "127.0.0.1,127.0.0.2,127.0.0.3", 3 }, { "a,b", "1.1.1.1,2.2.2.2", 2 },
	{ ",b", "", 2 }, { "a,,c", NULL, 3 },
};

START_TEST(count_hosts)
{
	ck_assert_int_eq(lease_sql_count_hosts(count_cases[_i].host, count_cases[_i].hostaddr),
			 count_cases[_i].n);
}
END_TEST

static const struct {
	const char *host, *hostaddr, *port; /* the connection's lists */
	const char *drop_host, *drop_port;  /* PQhost, PQport */
	int left;
	const char *host_out, *hostaddr_out, *port_out;
} drop_cases[] = {
	/* issue 7: the same address twice, another port */
	{ "127.0.0.1,127.0.0.1", "", "1,5432", "127.0.0.1", "1", 1, "127.0.0.1", "", "5432" },
	{ "127.0.0.1,127.0.0.1", "", "1,5432", "127.0.0.1", "5432", 1, "127.0.0.1", "", "1" },
	{ "a,b,c", "", "5432", "b", "5432", 2, "a,c", "", "5432" },
	{ "a,b,c", "", "", "c", NULL, 2, "a,b", "", "" },
	{ "a,b,c", "", "", "a", "", 2, "b,c", "", "" },
	/* a duplicate entry goes with the one that timed out */
	{ "a,b,a", "", "1,2,1", "a", "1", 1, "b", "", "2" },
	{ "a,b,a", "", "1,2,3", "a", "3", 2, "a,b", "", "1,2" },
	/* PQhost names the hostaddr when the host entry is empty */
	{ "", "10.0.0.1,10.0.0.2", "6432", "10.0.0.1", "6432", 1, "", "10.0.0.2", "6432" },
	{ "a,b", "10.0.0.1,10.0.0.2", "", "b", "5432", 1, "a", "10.0.0.1", "" },
	{ ",b", "10.0.0.1,", "", "10.0.0.1", "5432", 1, "b", "", "" },
	/* the last one */
	{ "a", "", "5432", "a", "5432", 0, "", "", "5432" },
	{ "", "", "", "/run/postgresql", "5432", -1, "", "", "" },
	/* not found: nothing dropped */
	{ "a,b", "", "", "c", "", -1, "a,b", "", "" },
	{ "a,b", "", "1,2", "a", "2", -1, "a,b", "", "1,2" },
};

START_TEST(drop_host)
{
	char host[64], hostaddr[64], port[64];
	struct lease_sql_hosts h = { drop_cases[_i].host, drop_cases[_i].hostaddr,
				     drop_cases[_i].port, host, hostaddr, port };

	ck_assert_int_eq(lease_sql_drop_host(&h, drop_cases[_i].drop_host,
					     drop_cases[_i].drop_port), drop_cases[_i].left);
	if (drop_cases[_i].left < 0)
		return;
	ck_assert_str_eq(host, drop_cases[_i].host_out);
	ck_assert_str_eq(hostaddr, drop_cases[_i].hostaddr_out);
	ck_assert_str_eq(port, drop_cases[_i].port_out);
}
END_TEST

static Suite *lease_sql_suite(void)
{
	Suite *s = suite_create("lease_sql");
	struct {
		const char *name;
		const TTest *test;
		int cases;
	} tests[] = {
		{ "one_line", one_line, NROWS(line_cases) },
		{ "one_line_truncates", one_line_truncates, 1 },
		{ "two_host_message_whole", two_host_message_whole, 1 },
		{ "server_error", server_error, NROWS(server_error_cases) },
		{ "classify", classify, NROWS(classify_cases) },
		{ "setup_sql", setup_sql, 1 },
		{ "parse_setup", parse_setup, NROWS(setup_cases) },
		{ "parse_identity", parse_identity, NROWS(identity_cases) },
		{ "claim_sql", claim_sql, NROWS(claim_cases) },
		{ "claim_sql_logical_message", claim_sql_logical_message, 1 },
		{ "claim_keepalives_cover_the_lease", claim_keepalives_cover_the_lease, 1 },
		{ "claim_names_pg_temp", claim_names_pg_temp, 1 },
		{ "parse_claim", parse_claim, NROWS(claim_answer_cases) },
		{ "parse_one_value", parse_one_value, NROWS(one_value_cases) },
		{ "parse_ping_nodes", parse_ping_nodes, NROWS(ping_nodes_cases) },
		{ "parse_try_queue", parse_try_queue, NROWS(try_queue_cases) },
		{ "parse_queue_count", parse_queue_count, NROWS(queue_count_cases) },
		{ "fence_halves", fence_halves, NROWS(halves_cases) },
		{ "lock_sql", lock_sql, NROWS(lock_cases) },
		{ "tag", tag, NROWS(tag_cases) },
		{ "tag_fits", tag_fits, 1 },
		{ "since", since, NROWS(since_cases) },
		{ "fence_claim_sql", fence_claim_sql, NROWS(fence_claim_cases) },
		{ "fence_wait_claim_sql", fence_wait_claim_sql, 1 },
		{ "unclaim_sql", unclaim_sql, NROWS(unclaim_cases) },
		{ "connect_timeout", connect_timeout, NROWS(timeout_cases) },
		{ "count_hosts", count_hosts, NROWS(count_cases) },
		{ "drop_host", drop_host, NROWS(drop_cases) },
	};

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		TCase *tc = tcase_create(tests[i].name);

		/* Pure string work: seconds even under valgrind or sanitizers. */
		tcase_set_timeout(tc, 30);
		tcase_add_loop_test(tc, tests[i].test, 0, tests[i].cases);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(lease_sql_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
