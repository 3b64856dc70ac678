/* test_failsafe.c: the failsafe client against real http.c members, all on one libev loop. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "config.h"
#include "log_stub.h"
#include "failsafe.h"
#include "http.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define SECRET "s3cret-token_for.the+fleet/=="
#define MEMBERS 3

static struct ev_loop *loop;
static char dir[64], secret_file[128], wrong_file[128];

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *text, size_t len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* ---- configurations ------------------------------------------------------ */

struct fleet_config {
	struct config cfg;
	struct config_peer peers[MEMBERS + 2];
	char ports[MEMBERS + 2][8];
};

/* This node "a" plus one member per port, named b, c, d... */
static void make_config(struct fleet_config *fc, const int *ports, size_t n,
			const char *file, int64_t timeout_ms)
{
	static char *ids[] = { "a", "b", "c", "d", "e" };

	memset(fc, 0, sizeof(*fc));
	fc->cfg.node_id = "a";
	fc->cfg.failsafe_secret_file = (char *)file;
	fc->cfg.ping_timeout_ms = timeout_ms;
	fc->cfg.peers = fc->peers;
	fc->cfg.n_peers = n + 1;
	for (size_t i = 0; i <= n; i++) {
		snprintf(fc->ports[i], sizeof(fc->ports[i]), "%d", i ? ports[i - 1] : 1);
		fc->peers[i] = (struct config_peer){ ids[i], "127.0.0.1", fc->ports[i] };
	}
}

/* ---- what the client reports ---------------------------------------------- */

static struct {
	int rounds, agree, total, checks;
	enum failsafe_check check;
	bool same_members;
	double at;
	char detail[512];
	struct failsafe **free_in_callback;
} got;

/* The client under test, for the callbacks (their arg points here). */
static struct failsafe *current;

static void round_done(void *arg, int agree, int total)
{
	struct failsafe *f = *(struct failsafe **)arg;

	got.rounds++;
	got.agree = agree;
	got.total = total;
	got.at = mono();
	snprintf(got.detail, sizeof(got.detail), "%s", failsafe_detail(f));
	if (got.free_in_callback) {
		failsafe_free(*got.free_in_callback);
		*got.free_in_callback = NULL;
	}
	ev_break(loop, EVBREAK_ALL);
}

static void check_done(void *arg, enum failsafe_check result, bool same_members)
{
	struct failsafe *f = *(struct failsafe **)arg;

	got.checks++;
	got.check = result;
	got.same_members = same_members;
	got.at = mono();
	snprintf(got.detail, sizeof(got.detail), "%s", failsafe_detail(f));
	ev_break(loop, EVBREAK_ALL);
}

static const struct failsafe_callbacks callbacks = { round_done, check_done, &current };

static struct failsafe *client(const struct fleet_config *fc)
{
	char err[256];
	struct failsafe *f = failsafe_new(loop, &fc->cfg, &callbacks, err, sizeof(err));

	ck_assert_msg(f != NULL, "failsafe_new: %s", err);
	current = f;
	return f;
}

/* A client "a" of members on ports, whose answers are due in timeout_ms. */
static struct failsafe *client_of(const int *ports, size_t n, const char *file,
				  int64_t timeout_ms)
{
	struct fleet_config fc;

	make_config(&fc, ports, n, file, timeout_ms);
	return client(&fc);
}

static void stop_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ALL);
}

/* Runs the loop until a callback or for at most seconds. */
static void run_for(double seconds)
{
	ev_timer t;

	ev_timer_init(&t, stop_cb, seconds, 0.0);
	ev_timer_start(loop, &t);
	ev_run(loop, 0);
	ev_timer_stop(loop, &t);
}

/* ---- members: real http.c servers with fake election callbacks ----------- */

struct member {
	struct http *h;
	int port;
	int status;              /* what a claim gets: 200 or 409 */
	bool running;
	int claims;
	int regained;            /* claims that said "regained": true */
	uint64_t token;
	char node[64], hash[32];
};

static struct member members[MEMBERS];
static struct failsafe *server_secret; /* holds the right secret */

static bool m_authorized(void *arg, const char *authorization)
{
	(void)arg;
	return failsafe_authorized(server_secret, authorization);
}

static int m_claim(void *arg, const char *node_id, uint64_t token,
		   const char *hash, char *reason, size_t len)
{
	struct member *m = arg;

	m->claims++;
	m->token = token;
	snprintf(m->node, sizeof(m->node), "%s", node_id);
	snprintf(m->hash, sizeof(m->hash), "%s", hash);
	if (m->status != 200)
		snprintf(reason, len, "running the command");
	return m->status;
}

static int m_regained(void *arg, const char *node_id, const char *hash,
		      char *reason, size_t len)
{
	struct member *m = arg;

	m->regained++;
	snprintf(m->node, sizeof(m->node), "%s", node_id);
	snprintf(m->hash, sizeof(m->hash), "%s", hash);
	if (m->status != 200)
		snprintf(reason, len, "the member lists differ");
	return m->status;
}

static bool m_running(void *arg)
{
	return ((struct member *)arg)->running;
}

static const struct election_snapshot *no_snapshot(void *arg)
{
	(void)arg;
	return NULL;
}

static void start_member(struct member *m)
{
	struct http_failsafe fs = { m_authorized, m_claim, m_running, m, m_regained, NULL };
	char err[256];

	memset(m, 0, sizeof(*m));
	m->status = 200;
	m->h = http_new(loop, "127.0.0.1:0", NULL, no_snapshot, NULL, err, sizeof(err));
	ck_assert_msg(m->h != NULL, "http_new: %s", err);
	m->port = http_port(m->h);
	http_set_failsafe(m->h, &fs);
}

static int member_ports[MEMBERS];

static void setup(void)
{
	loop = ev_loop_new(EVFLAG_AUTO);
	snprintf(dir, sizeof(dir), "/tmp/test_failsafe.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(secret_file, sizeof(secret_file), "%s/secret", dir);
	snprintf(wrong_file, sizeof(wrong_file), "%s/wrong", dir);
	write_file(secret_file, SECRET "\n", strlen(SECRET) + 1, 0600);
	write_file(wrong_file, "not-the-secret\n", 15, 0600);
	server_secret = client_of(NULL, 0, secret_file, 1000);
	for (int i = 0; i < MEMBERS; i++) {
		start_member(&members[i]);
		member_ports[i] = members[i].port;
	}
	memset(&got, 0, sizeof(got));
}

static void teardown(void)
{
	for (int i = 0; i < MEMBERS; i++)
		http_free(members[i].h);
	failsafe_free(server_secret);
	unlink(secret_file);
	unlink(wrong_file);
	rmdir(dir);
	ev_loop_destroy(loop);
}

/* A port where nothing listens: connections are refused. */
static int refused_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* A listening socket that never accepts: the kernel completes the
 * handshake, takes the request, and nobody ever answers. */
static int silent_socket(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- claims ---------------------------------------------------------------- */

START_TEST(test_all_agree)
{
	struct failsafe *f;

	f = client_of(member_ports, MEMBERS, secret_file, 2000);
	failsafe_claim(f, UINT64_C(18446744073709551615));
	ck_assert_int_eq(got.rounds, 0); /* never from within the call */
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 3);
	ck_assert_int_eq(got.total, 3);
	ck_assert_str_eq(got.detail, "");
	for (int i = 0; i < MEMBERS; i++) {
		ck_assert_int_eq(members[i].claims, 1);
		ck_assert_str_eq(members[i].node, "a");
		ck_assert(members[i].token == UINT64_C(18446744073709551615));
		ck_assert_str_eq(members[i].hash, failsafe_members_hash(f));
	}
	failsafe_free(f);
}
END_TEST

/* Back from failsafe (issue 17, 3): the same round to every member, which
 * hears "regained", not a claim to record. */
START_TEST(test_regained)
{
	struct failsafe *f;

	f = client_of(member_ports, MEMBERS, secret_file, 2000);
	failsafe_regained(f, 5);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 3);
	for (int i = 0; i < MEMBERS; i++) {
		ck_assert_int_eq(members[i].claims, 0);
		ck_assert_int_eq(members[i].regained, 1);
		ck_assert_str_eq(members[i].node, "a");
		ck_assert_str_eq(members[i].hash, failsafe_members_hash(f));
	}
	failsafe_free(f);
}
END_TEST

/* The nodes the leader's ping saw (a, b, c are members, x is not). */
static const struct {
	const char *nodes, *stranger;
} stranger_cases[] = {
	{ "", NULL }, { "a", NULL }, { "a,b,c", NULL }, { "c,a", NULL },
	{ "a,x", "x" }, { "x", "x" }, { "ab", "ab" }, { "a,,b", NULL },
	{ "b,a,cc", "cc" },
};

START_TEST(test_stranger)
{
	struct failsafe *f = client_of(member_ports, 2, secret_file, 1000);
	char buf[64];
	const char *got_id = failsafe_stranger(f, stranger_cases[_i].nodes, buf,
					       sizeof(buf));

	if (stranger_cases[_i].stranger)
		ck_assert_str_eq(got_id, stranger_cases[_i].stranger);
	else
		ck_assert_ptr_null(got_id);
	failsafe_free(f);
}
END_TEST

/* One refusal loses the claim: the round ends with it, whatever the others
 * answered by then (those that agreed before it count). */
START_TEST(test_one_conflict)
{
	struct failsafe *f;

	members[1].status = 409;
	f = client_of(member_ports, MEMBERS, secret_file, 2000);
	failsafe_claim(f, 7);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_le(got.agree, 2);
	ck_assert_int_eq(got.total, 3);
	ck_assert_str_eq(got.detail, "c: 409 running the command");
	failsafe_free(f);
}
END_TEST

/* Refused: no agreement for a claim, "not running" for a check. */
START_TEST(test_refused)
{
	struct failsafe *f;
	int ports[] = { member_ports[0], refused_port(), member_ports[2] };

	f = client_of(ports, N(ports), secret_file, 2000);
	failsafe_claim(f, 8);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_le(got.agree, 2);
	ck_assert_str_eq(got.detail, "c: connection refused");
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.checks, 1);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	ck_assert_str_eq(got.detail, "");
	failsafe_free(f);
}
END_TEST

START_TEST(test_check_running)
{
	struct failsafe *f;

	f = client_of(member_ports, MEMBERS, secret_file, 2000);
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.checks, 1);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	members[2].running = true;
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.checks, 2);
	ck_assert_int_eq(got.check, FAILSAFE_RUNNING);
	ck_assert_str_eq(got.detail, "d: running");
	for (int i = 0; i < MEMBERS; i++)
		ck_assert_int_eq(members[i].claims, 0);
	failsafe_free(f);
}
END_TEST

/* Issue 25, 12: a member's answer to a check names its member list; the
 * client says whether every answer named its own (and at least one
 * answered): a new leader's settle wait ends early only then. */
static char list_of[MEMBERS][32];

static void name_lists(const char *const hashes[MEMBERS])
{
	for (int i = 0; i < MEMBERS; i++) {
		struct member *m = &members[i];

		snprintf(list_of[i], sizeof(list_of[i]), "%s", hashes[i] ? hashes[i] : "");
		http_set_failsafe(m->h, &(struct http_failsafe){
			m_authorized, m_claim, m_running, m, m_regained,
			hashes[i] ? list_of[i] : NULL });
	}
}

START_TEST(test_check_names_lists)
{
	struct failsafe *f = client_of(member_ports, MEMBERS, secret_file, 2000);
	const char *ours = failsafe_members_hash(f);
	int ports[] = { refused_port(), refused_port() };
	struct failsafe *alone;

	name_lists((const char *[MEMBERS]){ ours, ours, ours });
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	ck_assert(got.same_members);
	name_lists((const char *[MEMBERS]){ ours, "0123456789abcdef", ours });
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	ck_assert(!got.same_members);
	/* an older pgleader names no list */
	name_lists((const char *[MEMBERS]){ ours, NULL, ours });
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	ck_assert(!got.same_members);
	failsafe_free(f);
	/* every member refused: "not running", but no list was named */
	alone = client_of(ports, N(ports), secret_file, 2000);
	failsafe_check(alone);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	ck_assert(!got.same_members);
	failsafe_free(alone);
}
END_TEST

/* ---- a silent member: bounded by ping_timeout, the loop turns meanwhile ---- */

static struct {
	double last, max_gap;
} tick;

static void tick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	double now = mono();

	(void)l;
	(void)w;
	(void)revents;
	if (now - tick.last > tick.max_gap)
		tick.max_gap = now - tick.last;
	tick.last = now;
}

/* Runs a claim (or a check) against two members and a silent socket with
 * a 300ms timeout while a 20ms timer ticks on the same loop. */
static double run_silent(bool claim)
{
	struct failsafe *f;
	ev_timer t;
	int port, fd = silent_socket(&port);
	int ports[] = { member_ports[0], member_ports[1], port };
	double t0;

	f = client_of(ports, N(ports), secret_file, 300);
	ev_timer_init(&t, tick_cb, 0.02, 0.02);
	ev_timer_start(loop, &t);
	t0 = tick.last = mono();
	tick.max_gap = 0;
	if (claim)
		failsafe_claim(f, 9);
	else
		failsafe_check(f);
	run_for(5);
	ev_timer_stop(loop, &t);
	failsafe_free(f);
	close(fd);
	return got.at - t0;
}

START_TEST(test_silent_claim)
{
	double took = run_silent(true);

	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 2);
	ck_assert_str_eq(got.detail, "d: no answer within 300ms");
	ck_assert_msg(took >= 0.29 && took < 0.8, "the round took %.3fs (timeout 0.3s)", took);
	ck_assert_msg(tick.max_gap < 0.15, "a 20ms timer waited %.3fs", tick.max_gap);
}
END_TEST

START_TEST(test_silent_check)
{
	double took = run_silent(false);

	ck_assert_int_eq(got.checks, 1);
	ck_assert_int_eq(got.check, FAILSAFE_SILENT);
	ck_assert_msg(took >= 0.29 && took < 0.8, "the check took %.3fs (timeout 0.3s)", took);
	ck_assert_msg(tick.max_gap < 0.15, "a 20ms timer waited %.3fs", tick.max_gap);
}
END_TEST

/* One round (a claim, or the regained claim) to b, the member on c_port
 * and a silent member d, answers due within timeout_ms; returns how long
 * it took. A second result never follows. */
static double round_beside_silent(int c_port, bool regained, int64_t timeout_ms)
{
	int port, fd = silent_socket(&port);
	int ports[] = { member_ports[0], c_port, port };
	struct failsafe *f = client_of(ports, N(ports), secret_file, timeout_ms);
	double t0 = mono(), took;

	if (regained)
		failsafe_regained(f, 12);
	else
		failsafe_claim(f, 11);
	run_for(5);
	took = got.at - t0;
	run_for(0.3);
	ck_assert_int_eq(got.rounds, 1);
	failsafe_free(f);
	close(fd);
	return took;
}

/* Known finding 4 of the simulator: a claim one member refuses is lost,
 * so the round ends with that refusal, not ping_timeout later when a
 * silent member's answer is due; the leader in failsafe demotes at once.
 * The refusal comes from a member that refuses (409) or from one that is
 * down (connection refused). */
START_TEST(test_refusal_ends_claim)
{
	double took;

	members[1].status = 409;
	took = round_beside_silent(_i ? refused_port() : member_ports[1], false, 2000);
	ck_assert_int_le(got.agree, 1);
	ck_assert_int_eq(got.total, 3);
	ck_assert_str_eq(got.detail, _i ? "c: connection refused"
			 : "c: 409 running the command");
	ck_assert_msg(took < 1.0, "the round took %.3fs (timeout 2s)", took);
}
END_TEST

/* The regained claim tells every member: a refusal does not cut it short,
 * so the silent member's request runs to its timeout. */
START_TEST(test_regained_runs_to_its_end)
{
	double took;

	members[0].status = 409;
	took = round_beside_silent(member_ports[1], true, 300);
	ck_assert_int_eq(got.agree, 1);
	ck_assert_int_eq(members[0].regained, 1);
	ck_assert_int_eq(members[1].regained, 1);
	ck_assert_msg(took >= 0.29, "the round took %.3fs (timeout 0.3s)", took);
}
END_TEST

/* A running answer wins over a silent one. */
START_TEST(test_running_beats_silent)
{
	struct failsafe *f;
	int port, fd = silent_socket(&port);
	int ports[] = { member_ports[0], port };

	members[0].running = true;
	f = client_of(ports, N(ports), secret_file, 300);
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_RUNNING);
	ck_assert_str_eq(got.detail, "b: running; c: no answer within 300ms");
	failsafe_free(f);
	close(fd);
}
END_TEST

/* ---- the secret ---------------------------------------------------------- */

START_TEST(test_wrong_secret)
{
	struct failsafe *f;

	f = client_of(member_ports, MEMBERS, wrong_file, 2000);
	failsafe_claim(f, 10);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 0);
	/* the first refusal ends the round: b's, c's or d's */
	ck_assert_ptr_nonnull(strstr(got.detail, ": 401 wrong or missing secret"));
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_SILENT);
	for (int i = 0; i < MEMBERS; i++)
		ck_assert_int_eq(members[i].claims, 0);
	failsafe_free(f);
}
END_TEST

/* Issue 17 item 6.10: the reason is logged on both sides, once: rounds
 * that end the same way, and the members' refusals of the same client for
 * the same reason, add no line. One member, so that every claim round ends
 * the same way (the first refusal ends it). */
START_TEST(test_wrong_secret_logged_once)
{
	struct failsafe *f;

	log_stub_reset();
	f = client_of(member_ports, 1, wrong_file, 2000);
	for (int round = 0; round < 3; round++) {
		failsafe_claim(f, 10);
		run_for(5);
	}
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.rounds, 3);
	ck_assert_uint_eq(log_stub_count("failsafe: members that did not agree to the claim: "
					 "b: 401 wrong or missing secret"), 1);
	ck_assert_uint_eq(log_stub_count("failsafe: members that did not answer \"not running\": "
					 "b: 401 wrong or missing secret"), 1);
	ck_assert_uint_eq(log_stub_count("failsafe: refused a request from 127.0.0.1: "
					 "401 wrong or missing secret"), 1);
	failsafe_free(f);
}
END_TEST

static const struct {
	const char *header;
	bool ok;
} auth_rows[] = {
	{ "Bearer " SECRET, true },
	{ "bearer " SECRET, true },
	{ "BEARER  " SECRET, true },
	{ NULL, false },
	{ "", false },
	{ "Bearer", false },
	{ "Bearer ", false },
	{ SECRET, false },
	{ "Basic " SECRET, false },
	{ "Bearer " SECRET "x", false },
	{ "Bearer s3cret-token_for.the+fleet/=", false },
	{ "Bearer S3CRET-TOKEN_FOR.THE+FLEET/==", false },
	{ "Bearer " SECRET " ", false },
};

START_TEST(test_authorized)
{
	ck_assert_msg(failsafe_authorized(server_secret, auth_rows[_i].header) == auth_rows[_i].ok,
		      "Authorization: %s", auth_rows[_i].header ? auth_rows[_i].header : "(none)");
}
END_TEST

static const struct {
	const char *text;
	size_t len;          /* 0: strlen */
	mode_t mode;
	const char *error;   /* NULL: accepted */
} secret_rows[] = {
	{ "QQsecretQQ\n", 0, 0600, NULL },
	{ "QQsecretQQ", 0, 0400, NULL },
	{ "QQsecretQQ\r\n", 0, 0640, NULL },
	{ "QQsecretQQ\n", 0, 0644, "is open to others (mode 0644): chmod o-rw it" },
	{ "QQsecretQQ\n", 0, 0602, "is open to others (mode 0602)" },
	{ "", 0, 0600, "is empty" },
	{ "\n", 0, 0600, "is empty" },
	{ "QQsecretQQ\ndef\n", 0, 0600, "must hold one line" },
	{ "QQsecretQQ\n\n", 0, 0600, "must hold one line" },
	{ "a b\n", 0, 0600, "may hold only printable ASCII without spaces" },
	{ "ab\tc\n", 0, 0600, "may hold only printable ASCII without spaces" },
	{ "ab\0c\n", 5, 0600, "may hold only printable ASCII without spaces" },
	{ "caf\xc3\xa9\n", 0, 0600, "may hold only printable ASCII without spaces" },
};

START_TEST(test_secret_file)
{
	struct fleet_config fc;
	struct failsafe *f;
		char path[160], err[256] = "";
	size_t len = secret_rows[_i].len ? secret_rows[_i].len : strlen(secret_rows[_i].text);

	snprintf(path, sizeof(path), "%s/row", dir);
	write_file(path, secret_rows[_i].text, len, secret_rows[_i].mode);
	make_config(&fc, NULL, 0, path, 1000);
	f = failsafe_new(loop, &fc.cfg, &callbacks, err, sizeof(err));
	if (!secret_rows[_i].error) {
		ck_assert_msg(f != NULL, "%s", err);
		ck_assert(failsafe_authorized(f, "Bearer QQsecretQQ"));
	} else {
		ck_assert_ptr_null(f);
		ck_assert_msg(strstr(err, secret_rows[_i].error) && strstr(err, path),
			      "error: %s", err);
		ck_assert_ptr_null(strstr(err, "QQsecretQQ"));
	}
	failsafe_free(f);
	unlink(path);
}
END_TEST

START_TEST(test_secret_file_unusable)
{
	struct fleet_config fc;
		char big[FAILSAFE_SECRET_MAX + 2], path[160], err[256];

	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	snprintf(path, sizeof(path), "%s/big", dir);
	write_file(path, big, sizeof(big), 0600);
	make_config(&fc, NULL, 0, path, 1000);
	ck_assert_ptr_null(failsafe_new(loop, &fc.cfg, &callbacks, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "is larger than 4096 bytes"));
	unlink(path);
	ck_assert_ptr_null(failsafe_new(loop, &fc.cfg, &callbacks, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "cannot open failsafe secret file"));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	fc.cfg.failsafe_secret_file = dir;
	ck_assert_ptr_null(failsafe_new(loop, &fc.cfg, &callbacks, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "is not a regular file"));
}
END_TEST

/* ---- the member-list hash ------------------------------------------------ */

static const char *hash_of(struct config_peer *peers, size_t n, char out[17])
{
	struct config cfg = { .node_id = "a", .failsafe_secret_file = secret_file,
			      .ping_timeout_ms = 1000, .peers = peers, .n_peers = n };
		char err[256];
	struct failsafe *f = failsafe_new(loop, &cfg, &callbacks, err, sizeof(err));

	ck_assert_msg(f != NULL, "%s", err);
	snprintf(out, 17, "%s", failsafe_members_hash(f));
	failsafe_free(f);
	return out;
}

START_TEST(test_members_hash)
{
	struct config_peer one[] = { { "a", "127.0.0.1", "8001" },
				     { "b", "127.0.0.1", "8002" }, { "c", "::1", "8003" } };
	struct config_peer two[] = { { "c", "::1", "8003" }, { "a", "127.0.0.1", "8001" },
				     { "b", "127.0.0.1", "8002" } };
	struct config_peer other[] = { { "a", "127.0.0.1", "8001" },
				       { "b", "127.0.0.1", "8002" }, { "c", "::1", "8004" } };
	struct config_peer fewer[] = { { "a", "127.0.0.1", "8001" }, { "b", "127.0.0.1", "8002" } };
	char h1[17], h2[17], h3[17], h4[17];

	/* Pinned: every version of pgleader must compute the same hash, or a
	 * rolling upgrade splits the fleet. */
	ck_assert_str_eq(hash_of(one, N(one), h1), "0e1bb6e0efd60795");
	ck_assert_str_eq(hash_of(two, N(two), h2), h1);
	ck_assert_str_ne(hash_of(other, N(other), h3), h1);
	ck_assert_str_ne(hash_of(fewer, N(fewer), h4), h1);
	ck_assert_uint_eq(strspn(h1, "0123456789abcdef"), 16);
}
END_TEST

/* ---- cancelling, freeing, two rounds at once -------------------------------- */

START_TEST(test_claim_cancelled_by_next)
{
	struct failsafe *f;

	f = client_of(member_ports, MEMBERS, secret_file, 2000);
	failsafe_claim(f, 1);
	failsafe_claim(f, 2);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 3);
	run_for(0.3);
	ck_assert_int_eq(got.rounds, 1);
	for (int i = 0; i < MEMBERS; i++) {
		ck_assert_int_eq(members[i].claims, 1);
		ck_assert(members[i].token == 2);
	}
	failsafe_free(f);
}
END_TEST

/* A claim waiting on a silent member, replaced by the next one halfway:
 * one result, for the second claim, a timeout after it. */
START_TEST(test_silent_claim_cancelled)
{
	struct failsafe *f;
	int port, fd = silent_socket(&port);
	int ports[] = { member_ports[0], port };
	double t1;

	f = client_of(ports, N(ports), secret_file, 400);
	failsafe_claim(f, 1);
	run_for(0.2);
	ck_assert_int_eq(got.rounds, 0);
	t1 = mono();
	failsafe_claim(f, 2);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_msg(got.at - t1 >= 0.39, "the second round ended %.3fs after it began",
		      got.at - t1);
	ck_assert_int_eq(got.agree, 1);
	ck_assert(members[0].token == 2);
	ck_assert_int_eq(members[0].claims, 2);
	failsafe_free(f);
	close(fd);
}
END_TEST

START_TEST(test_free_in_flight)
{
	struct failsafe *f;
	int port, fd = silent_socket(&port);
	int ports[] = { member_ports[0], port };

	f = client_of(ports, N(ports), secret_file, 300);
	failsafe_claim(f, 1);
	failsafe_check(f);
	run_for(0.1);
	failsafe_free(f);
	run_for(0.5);
	ck_assert_int_eq(got.rounds, 0);
	ck_assert_int_eq(got.checks, 0);
	close(fd);
}
END_TEST

/* A claim and a check at once: both end; the claim's callback frees the
 * client, and the check's result is then never delivered (valgrind
 * watches for a use after free). */
START_TEST(test_claim_and_check)
{
	struct failsafe *f;

	f = client_of(member_ports, MEMBERS, secret_file, 2000);
	failsafe_claim(f, 3);
	failsafe_check(f);
	run_for(5);
	run_for(0.2);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.checks, 1);
	ck_assert_int_eq(got.agree, 3);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	failsafe_claim(f, 4);
	failsafe_check(f);
	got.free_in_callback = &f;
	run_for(5);
	run_for(0.2);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(got.rounds, 2);
	ck_assert_int_eq(got.checks, 1);
}
END_TEST

/* Nobody else in the list: agreement of none of none, from the loop. */
START_TEST(test_alone)
{
	struct failsafe *f;

	f = client_of(NULL, 0, secret_file, 2000);
	failsafe_claim(f, 5);
	ck_assert_int_eq(got.rounds, 0);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 0);
	ck_assert_int_eq(got.total, 0);
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_CLEAR);
	failsafe_free(f);
}
END_TEST

/* ---- hostile members --------------------------------------------------- */

enum hostile_kind { HOSTILE_BIG_LENGTH, HOSTILE_ENDLESS_BODY, HOSTILE_ENDLESS_HEADERS,
		    HOSTILE_GARBAGE, HOSTILE_CANNED };

/* A member that answers every connection with a prefix and then the same
 * filler for ever (or 64 KiB of garbage), on the test's loop. */
struct hostile {
	enum hostile_kind kind;
	int lfd, fd, port;
	ev_io accept_w, write_w;
	size_t prefix_sent, sent;
	const char *prefix;
	char filler[64 * 1024];
};

static void hostile_close(struct hostile *x)
{
	if (x->fd >= 0) {
		ev_io_stop(loop, &x->write_w);
		close(x->fd);
		x->fd = -1;
	}
}

static void hostile_write_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct hostile *x = w->data;
	size_t plen = strlen(x->prefix);
	ssize_t n;

	(void)l;
	(void)revents;
	if (x->prefix_sent < plen)
		n = send(x->fd, x->prefix + x->prefix_sent, plen - x->prefix_sent, MSG_NOSIGNAL);
	else
		n = send(x->fd, x->filler, sizeof(x->filler), MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN) {
		hostile_close(x);
		return;
	}
	if (n > 0 && x->prefix_sent < plen)
		x->prefix_sent += (size_t)n;
	else if (n > 0)
		x->sent += (size_t)n;
	if ((x->kind == HOSTILE_GARBAGE && x->sent >= sizeof(x->filler)) ||
	    (x->kind == HOSTILE_CANNED && x->prefix_sent >= plen))
		hostile_close(x);
}

static void hostile_accept_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct hostile *x = w->data;
	int fd = accept4(x->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	(void)revents;
	if (fd < 0)
		return;
	hostile_close(x);
	x->fd = fd;
	x->prefix_sent = 0;
	ev_io_init(&x->write_w, hostile_write_cb, fd, EV_WRITE);
	x->write_w.data = x;
	ev_io_start(l, &x->write_w);
}

static void hostile_start(struct hostile *x, enum hostile_kind kind)
{
	static const char *prefixes[] = {
		[HOSTILE_BIG_LENGTH] = "HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n",
		[HOSTILE_ENDLESS_BODY] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n",
		[HOSTILE_ENDLESS_HEADERS] = "HTTP/1.1 200 OK\r\n",
		[HOSTILE_GARBAGE] = "",
		[HOSTILE_CANNED] = "", /* the test's */
	};

	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->fd = -1;
	x->prefix = prefixes[kind];
	for (size_t i = 0; i < sizeof(x->filler); i++)
		x->filler[i] = kind == HOSTILE_GARBAGE ? (char)(i * 7919 % 251 + 1) :
			       kind == HOSTILE_ENDLESS_HEADERS ? "X-Pad: aaaaaaa\r\n"[i % 16] : '{';
	x->lfd = silent_socket(&x->port);
	fcntl(x->lfd, F_SETFL, O_NONBLOCK);
	ev_io_init(&x->accept_w, hostile_accept_cb, x->lfd, EV_READ);
	x->accept_w.data = x;
	ev_io_start(loop, &x->accept_w);
}

static void hostile_stop(struct hostile *x)
{
	hostile_close(x);
	ev_io_stop(loop, &x->accept_w);
	close(x->lfd);
}

static const char *hostile_names[] = { "10 MB announced", "endless body",
				       "endless headers", "garbage" };
/* What the round says of it: the bounds are pgleader's own, whatever
 * libcurl's version would do without them. */
static const char *hostile_details[] = { "b: answer larger than 4096 bytes",
					 "b: answer larger than 4096 bytes",
					 "b: headers larger than 16384 bytes", NULL };

/* Each answer ends at once (well before the 2s timeout), as no agreement or
 * no usable answer, and the heap does not grow with what was sent. */
START_TEST(test_hostile_member)
{
	static struct hostile x;
	struct failsafe *f;
	struct mallinfo2 before, after;
	double t0;

	hostile_start(&x, (enum hostile_kind)_i);
	f = client_of(&x.port, 1, secret_file, 2000);
	before = mallinfo2();
	t0 = mono();
	failsafe_claim(f, 11);
	run_for(5);
	after = mallinfo2();
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, 0);
	ck_assert_msg(got.at - t0 < 1.0, "%s: the claim took %.3fs", hostile_names[_i], got.at - t0);
	if (hostile_details[_i])
		ck_assert_str_eq(got.detail, hostile_details[_i]);
	else
		ck_assert_ptr_nonnull(strstr(got.detail, "b: "));
	ck_assert_msg(after.uordblks < before.uordblks + 1024 * 1024,
		      "%s: the heap grew by %zu bytes", hostile_names[_i],
		      after.uordblks - before.uordblks);
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.check, FAILSAFE_SILENT);
	ck_assert_msg(got.at - t0 < 2.0, "%s: the check took too long", hostile_names[_i]);
	failsafe_free(f);
	hostile_stop(&x);
}
END_TEST

/* A member whose answer is well formed but is no agreement (a claim) or
 * no "not running" (a check): each is told as the member's answer, never
 * counted as agreement. (pgleader's own server refuses with a 409: only
 * another implementation, or a proxy, answers these.) */
static const struct {
	const char *body;
	int code;
	bool claim_agrees;
	enum failsafe_check check;
	const char *detail;
} canned[] = {
	{ "{\"ok\": false, \"reason\": \"no\"}", 200, false, FAILSAFE_SILENT, "b: 200 no" },
	{ "{\"ok\": \"true\"}", 200, false, FAILSAFE_SILENT, "b: 200 unexpected answer" },
	{ "{\"ok\": 1, \"running\": 0}", 200, false, FAILSAFE_SILENT, NULL },
	{ "{\"ok\": true, \"running\": false}", 500, false, FAILSAFE_SILENT, NULL },
	{ "{}", 200, false, FAILSAFE_SILENT, "b: 200 unexpected answer" },
	/* the control: these are an agreement and a "not running" */
	{ "{\"ok\": true, \"running\": false}", 200, true, FAILSAFE_CLEAR, NULL },
	{ "{\"running\": true}", 200, false, FAILSAFE_RUNNING, NULL },
};

START_TEST(test_canned_answer)
{
	static struct hostile x;
	static char answer[512];
	struct failsafe *f;

	snprintf(answer, sizeof(answer), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", canned[_i].code,
		 strlen(canned[_i].body), canned[_i].body);
	hostile_start(&x, HOSTILE_CANNED);
	x.prefix = answer;
	f = client_of(&x.port, 1, secret_file, 2000);
	failsafe_claim(f, 11);
	run_for(5);
	ck_assert_int_eq(got.rounds, 1);
	ck_assert_int_eq(got.agree, (canned[_i].claim_agrees ? 1 : 0));
	if (!canned[_i].claim_agrees && canned[_i].detail)
		ck_assert_str_eq(got.detail, canned[_i].detail);
	failsafe_check(f);
	run_for(5);
	ck_assert_int_eq(got.checks, 1);
	ck_assert_int_eq(got.check, canned[_i].check);
	failsafe_free(f);
	hostile_stop(&x);
}
END_TEST

/* ---- the server side: raw requests from a thread ---------------------------- */

struct raw {
	int port;
	const char *parts[4];   /* sent one after the other, 50ms apart */
	char resp[16 * 1024];
	size_t len;
	ev_async done;
};

static void *raw_main(void *p)
{
	struct raw *r = p;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)r->port) };
	struct timeval tv = { 3, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ssize_t n;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		for (int i = 0; i < 4 && r->parts[i]; i++) {
			if (i)
				usleep(50000);
			if (send(fd, r->parts[i], strlen(r->parts[i]), MSG_NOSIGNAL) < 0)
				break;
		}
		while (r->len < sizeof(r->resp) - 1 &&
		       (n = recv(fd, r->resp + r->len, sizeof(r->resp) - 1 - r->len, 0)) > 0)
			r->len += (size_t)n;
	}
	r->resp[r->len] = '\0';
	close(fd);
	ev_async_send(loop, &r->done);
	return NULL;
}

static void raw_done_cb(struct ev_loop *l, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ALL);
}

/* The answer's status (0: none) and its text in r->resp. */
static int raw_request(struct raw *r, int port)
{
	pthread_t t;
	int status = 0;

	r->port = port;
	ev_async_init(&r->done, raw_done_cb);
	ev_async_start(loop, &r->done);
	ck_assert_int_eq(pthread_create(&t, NULL, raw_main, r), 0);
	ev_run(loop, 0);
	pthread_join(t, NULL);
	ev_async_stop(loop, &r->done);
	sscanf(r->resp, "HTTP/1.1 %d", &status);
	return status;
}

#define AUTH "Authorization: Bearer " SECRET "\r\n"
#define CLAIM "{\"node_id\":\"z\",\"fencing_token\":\"12345678901234567890\",\"members\":\"h\"}"
#define POST_HEAD "POST /failsafe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"

static char big_chunks[3][6000];

static const struct {
	const char *name;
	bool failsafe;           /* http_set_failsafe was called */
	const char *parts[4];
	int status;
	const char *has;         /* in the answer (headers and body) */
} server_rows[] = {
	{ "get", true, { "GET /failsafe HTTP/1.1\r\nHost: x\r\n" AUTH "Connection: close\r\n\r\n" },
	  200, "{\"running\":false}" },
	{ "head", true, { "HEAD /failsafe HTTP/1.1\r\nHost: x\r\n" AUTH "Connection: close\r\n\r\n" },
	  200, "application/json" },
	{ "get without secret", true, { "GET /failsafe HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" },
	  401, "WWW-Authenticate: Bearer" },
	{ "get, wrong secret", true, { "GET /failsafe HTTP/1.1\r\nHost: x\r\n"
				       "Authorization: Bearer nope\r\nConnection: close\r\n\r\n" },
	  401, "\"reason\":\"wrong or missing secret\"" },
	{ "get with a body", true, { "GET /failsafe HTTP/1.1\r\nHost: x\r\n" AUTH
				     "Content-Length: 2\r\nConnection: close\r\n\r\n{}" }, 413, NULL },
	{ "put", true, { "PUT /failsafe HTTP/1.1\r\nHost: x\r\n" AUTH "Connection: close\r\n\r\n" },
	  405, "Allow: GET, HEAD, POST" },
	{ "claim", true, { POST_HEAD AUTH "Content-Length: 68\r\n\r\n" CLAIM }, 200, "{\"ok\":true}" },
	{ "claim without secret", true, { POST_HEAD "Content-Length: 68\r\n\r\n" CLAIM }, 401,
	  "WWW-Authenticate: Bearer" },
	{ "claim in pieces", true, { POST_HEAD AUTH "Content-Length: 68\r\n\r\n",
				     "{\"node_id\":\"z\",\"fencing_tok",
				     "en\":\"12345678901234567890\",\"memb", "ers\":\"h\"}" },
	  200, "{\"ok\":true}" },
	{ "claim chunked", true, { POST_HEAD AUTH "Transfer-Encoding: chunked\r\n\r\n",
				   "20\r\n{\"node_id\":\"z\",\"fencing_token\":\"\r\n",
				   "24\r\n12345678901234567890\",\"members\":\"h\"}\r\n", "0\r\n\r\n" },
	  200, "{\"ok\":true}" },
	{ "claim refused", true, { POST_HEAD AUTH "Content-Length: 68\r\n\r\n" CLAIM }, 409,
	  "{\"ok\":false,\"reason\":\"running the command\"}" },
	{ "not json", true, { POST_HEAD AUTH "Content-Length: 5\r\n\r\nhello" }, 400, "\"ok\":false" },
	{ "empty body", true, { POST_HEAD AUTH "Content-Length: 0\r\n\r\n" }, 400, NULL },
	{ "token a number", true, { POST_HEAD AUTH "Content-Length: 52\r\n\r\n"
				    "{\"node_id\":\"z\",\"fencing_token\":12,\"members\":\"hash1\"}" },
	  400, NULL },
	{ "token not decimal", true, { POST_HEAD AUTH "Content-Length: 53\r\n\r\n"
				       "{\"node_id\":\"z\",\"fencing_token\":\"-1\",\"members\":\"hash\"}" },
	  400, NULL },
	{ "token too big", true, { POST_HEAD AUTH "Content-Length: 71\r\n\r\n"
				   "{\"node_id\":\"z\",\"fencing_token\":\"18446744073709551616\",\"members\":\"hash\"}" },
	  400, NULL },
	{ "no node", true, { POST_HEAD AUTH "Content-Length: 48\r\n\r\n"
			     "{\"node_id\":\"\",\"fencing_token\":\"1\",\"members\":\"h\"}" }, 400, NULL },
	{ "announced too big", true, { POST_HEAD AUTH "Content-Length: 4097\r\n\r\n" }, 413, NULL },
	{ "grows too big", true, { POST_HEAD AUTH "Transfer-Encoding: chunked\r\n\r\n",
				   big_chunks[0], big_chunks[1], big_chunks[2] }, 0, NULL },
	{ "off: get", false, { "GET /failsafe HTTP/1.1\r\nHost: x\r\n" AUTH "Connection: close\r\n\r\n" },
	  404, NULL },
	{ "off: post", false, { POST_HEAD AUTH "Content-Length: 68\r\n\r\n" CLAIM }, 405, NULL },
};

START_TEST(test_server)
{
	struct raw r = { 0 };
	struct member *m = &members[0];
	double t0;
	int status;

	for (int i = 0; i < 3; i++) {
		/* 0x1000-byte chunks: the body passes 4 KiB in the second */
		snprintf(big_chunks[i], sizeof(big_chunks[i]), "1000\r\n%04096d\r\n", 0);
	}
	memcpy(r.parts, server_rows[_i].parts, sizeof(r.parts));
	if (!server_rows[_i].failsafe)
		http_set_failsafe(m->h, NULL);
	m->status = strstr(server_rows[_i].name, "refused") ? 409 : 200;
	t0 = mono();
	status = raw_request(&r, m->port);
	/* an answer, or the connection closed: never the client's own 3s timeout */
	ck_assert_msg(mono() - t0 < 2.0, "%s: %.3fs", server_rows[_i].name, mono() - t0);
	ck_assert_msg(status == server_rows[_i].status, "%s: status %d, expected %d:\n%s",
		      server_rows[_i].name, status, server_rows[_i].status, r.resp);
	if (server_rows[_i].has)
		ck_assert_msg(strstr(r.resp, server_rows[_i].has), "%s: no %s in\n%s",
			      server_rows[_i].name, server_rows[_i].has, r.resp);
	if (status == 200 && strstr(server_rows[_i].name, "claim")) {
		ck_assert_int_eq(m->claims, 1);
		ck_assert_str_eq(m->node, "z");
		ck_assert(m->token == UINT64_C(12345678901234567890));
		ck_assert_str_eq(m->hash, "h");
	} else if (server_rows[_i].status != 409) {
		ck_assert_int_eq(m->claims, 0);
	}
}
END_TEST

START_TEST(test_server_running)
{
	struct raw r = { .parts = { "GET /failsafe HTTP/1.1\r\nHost: x\r\n" AUTH
				    "Connection: close\r\n\r\n" } };

	members[0].running = true;
	ck_assert_int_eq(raw_request(&r, members[0].port), 200);
	ck_assert_ptr_nonnull(strstr(r.resp, "{\"running\":true}"));
}
END_TEST

static Suite *failsafe_suite(void)
{
	Suite *s = suite_create("failsafe");
	TCase *tc = tcase_create("client");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_all_agree);
	tcase_add_test(tc, test_regained);
	tcase_add_loop_test(tc, test_stranger, 0,
			    sizeof(stranger_cases) / sizeof(stranger_cases[0]));
	tcase_add_test(tc, test_one_conflict);
	tcase_add_test(tc, test_refused);
	tcase_add_test(tc, test_check_running);
	tcase_add_test(tc, test_check_names_lists);
	tcase_add_test(tc, test_silent_claim);
	tcase_add_test(tc, test_silent_check);
	tcase_add_loop_test(tc, test_refusal_ends_claim, 0, 2);
	tcase_add_test(tc, test_regained_runs_to_its_end);
	tcase_add_test(tc, test_running_beats_silent);
	tcase_add_test(tc, test_wrong_secret);
	tcase_add_test(tc, test_wrong_secret_logged_once);
	tcase_add_test(tc, test_claim_cancelled_by_next);
	tcase_add_test(tc, test_silent_claim_cancelled);
	tcase_add_test(tc, test_free_in_flight);
	tcase_add_test(tc, test_claim_and_check);
	tcase_add_test(tc, test_alone);
	tcase_add_loop_test(tc, test_hostile_member, 0, N(hostile_names));
	tcase_add_loop_test(tc, test_canned_answer, 0, N(canned));
	suite_add_tcase(s, tc);

	tc = tcase_create("secret");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_authorized, 0, N(auth_rows));
	tcase_add_loop_test(tc, test_secret_file, 0, N(secret_rows));
	tcase_add_test(tc, test_secret_file_unusable);
	tcase_add_test(tc, test_members_hash);
	suite_add_tcase(s, tc);

	tc = tcase_create("server");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_server, 0, N(server_rows));
	tcase_add_test(tc, test_server_running);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(failsafe_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
