/* test_http.c: the HTTP server on a real libev loop, driven by clients in a thread. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>
#include <jansson.h>

#include "election.h"
#include "http.h"
#include "log_stub.h"
#include "metrics.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MB (1024 * 1024)

static const struct metrics_versions versions = { "9.8.7", "15.3" };

static struct ev_loop *loop;
static struct http *srv;
static struct election_snapshot snap;
static bool no_snapshot;
static int port;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const struct election_snapshot *get_snapshot(void *arg)
{
	return no_snapshot ? NULL : arg;
}

static void set_state(enum election_state st, bool connected)
{
	memset(&snap, 0, sizeof(snap));
	snap.state = st;
	snap.db_connected = connected;
	snap.node_id = "node-a";
	snap.lock_name = "nightly";
	snap.lock_key = 42;
	snap.since_wall = 1714564800;
	snap.command_due = INFINITY;
	if (st == ELECTION_LEADER) {
		snap.command_pid = 1234;
		snap.term = 1;
		snap.fencing_token = 77;
	}
}

static struct http *start(const char *addr)
{
	char err[256];
	struct http *h = http_new(loop, addr, &versions, get_snapshot, &snap,
				  err, sizeof(err));

	ck_assert_msg(h != NULL, "http_new(%s): %s", addr, err);
	return h;
}

/* The fixture's server replaced by one on addr. */
static void listen_again(const char *addr)
{
	http_free(srv);
	srv = start(addr);
	port = http_port(srv);
}

static void setup(void)
{
	loop = ev_loop_new(EVFLAG_AUTO);
	set_state(ELECTION_LEADER, true);
	no_snapshot = false;
	srv = start("127.0.0.1:0");
	port = http_port(srv);
	ck_assert_int_gt(port, 0);
}

static void teardown(void)
{
	http_free(srv);
	ev_loop_destroy(loop);
}

/* ---- a client thread while the loop runs here ------------------------- */

struct job {
	void (*fn)(void *arg);
	void *arg;
	ev_async done;
};

static void *job_main(void *p)
{
	struct job *j = p;

	j->fn(j->arg);
	ev_async_send(loop, &j->done);
	return NULL;
}

static void done_cb(struct ev_loop *l, ev_async *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ALL);
}

/* Runs fn in a thread and the server's loop here until fn returns. The
 * thread only records; assertions are made here, afterwards. */
static void run_client(void (*fn)(void *arg), void *arg)
{
	struct job j = { .fn = fn, .arg = arg };
	pthread_t t;

	ev_async_init(&j.done, done_cb);
	ev_async_start(loop, &j.done);
	ck_assert_int_eq(pthread_create(&t, NULL, job_main, &j), 0);
	ev_run(loop, 0);
	pthread_join(t, NULL);
	ev_async_stop(loop, &j.done);
}

/* ---- libcurl requests --------------------------------------------------- */

struct resp {
	long code;
	CURLcode error;
	char type[128];
	char allow[64];
	char body[64 * 1024];
	size_t len;
};

struct req {
	const char *method, *url;
	struct resp r;
};

static size_t body_cb(char *data, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = size * n, room = sizeof(r->body) - 1 - r->len;

	memcpy(r->body + r->len, data, len < room ? len : room);
	r->len += len < room ? len : room;
	r->body[r->len] = '\0';
	return len;
}

static size_t header_cb(char *data, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = size * n;

	if (len > 7 && !strncasecmp(data, "Allow: ", 7))
		snprintf(r->allow, sizeof(r->allow), "%.*s", (int)(len - 9), data + 7);
	return len;
}

static void fetch(void *arg)
{
	struct req *q = arg;
	CURL *c = curl_easy_init();
	char *type = NULL;

	curl_easy_setopt(c, CURLOPT_URL, q->url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &q->r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &q->r);
	if (!strcmp(q->method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(q->method, "GET"))
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	q->r.error = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &q->r.code);
	if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type) == CURLE_OK && type)
		snprintf(q->r.type, sizeof(q->r.type), "%s", type);
	curl_easy_cleanup(c);
}

static struct resp request(const char *method, const char *host, const char *path)
{
	struct req q = { .method = method };
	char url[256];

	snprintf(url, sizeof(url), "http://%s:%d%s", host, port, path);
	q.url = url;
	run_client(fetch, &q);
	ck_assert_msg(q.r.error == CURLE_OK, "%s %s: %s", method, url,
		      curl_easy_strerror(q.r.error));
	return q.r;
}

/* ---- every endpoint in every state --------------------------------------- */

static const struct {
	enum election_state state;
	bool connected;
	const char *method, *path;
	long code;
} rows[] = {
	{ ELECTION_LEADER, true, "GET", "/leader", 200 },
	{ ELECTION_LEADER, true, "GET", "/primary", 200 },
	{ ELECTION_LEADER, true, "GET", "/replica", 503 },
	{ ELECTION_LEADER, true, "GET", "/standby", 503 },
	{ ELECTION_LEADER, true, "GET", "/liveness", 200 },
	{ ELECTION_LEADER, true, "GET", "/readiness", 200 },
	{ ELECTION_LEADER, true, "GET", "/status", 200 },
	{ ELECTION_LEADER, true, "GET", "/metrics", 200 },
	{ ELECTION_LEADER, true, "GET", "/leader?verbose=1", 200 },
	{ ELECTION_LEADER, false, "GET", "/leader", 200 },
	{ ELECTION_LEADER, false, "GET", "/readiness", 503 },
	{ ELECTION_STANDBY, true, "GET", "/leader", 503 },
	{ ELECTION_STANDBY, true, "GET", "/primary", 503 },
	{ ELECTION_STANDBY, true, "GET", "/replica", 200 },
	{ ELECTION_STANDBY, true, "GET", "/standby", 200 },
	{ ELECTION_STANDBY, true, "GET", "/liveness", 200 },
	{ ELECTION_STANDBY, true, "GET", "/readiness", 200 },
	{ ELECTION_INIT, false, "GET", "/liveness", 200 },
	{ ELECTION_CONNECTING, false, "GET", "/replica", 503 },
	{ ELECTION_CONNECTING, false, "GET", "/readiness", 503 },
	{ ELECTION_BACKOFF, false, "GET", "/leader", 503 },
	{ ELECTION_BACKOFF, false, "GET", "/replica", 503 },
	{ ELECTION_BACKOFF, false, "GET", "/liveness", 200 },
	{ ELECTION_BACKOFF, false, "GET", "/readiness", 503 },
	{ ELECTION_DEMOTING, true, "GET", "/leader", 503 },
	{ ELECTION_DEMOTING, true, "GET", "/replica", 503 },
	{ ELECTION_DEMOTING, true, "GET", "/liveness", 200 },
	{ ELECTION_DEMOTING, true, "GET", "/readiness", 503 },
	{ ELECTION_SHUTTING_DOWN, true, "GET", "/liveness", 503 },
	{ ELECTION_SHUTTING_DOWN, true, "GET", "/leader", 503 },
	{ ELECTION_SHUTTING_DOWN, true, "GET", "/readiness", 503 },
	{ ELECTION_SHUTTING_DOWN, true, "GET", "/status", 200 },
	{ ELECTION_SHUTTING_DOWN, true, "GET", "/metrics", 200 },
	{ ELECTION_RELEASING, true, "GET", "/liveness", 503 },
	{ ELECTION_DONE, false, "GET", "/liveness", 503 },
	{ ELECTION_LEADER, true, "HEAD", "/leader", 200 },
	{ ELECTION_LEADER, true, "HEAD", "/replica", 503 },
	{ ELECTION_LEADER, true, "HEAD", "/metrics", 200 },
	{ ELECTION_STANDBY, true, "HEAD", "/replica", 200 },
	{ ELECTION_LEADER, true, "POST", "/leader", 405 },
	{ ELECTION_LEADER, true, "PUT", "/metrics", 405 },
	{ ELECTION_LEADER, true, "DELETE", "/status", 405 },
	{ ELECTION_LEADER, true, "OPTIONS", "/liveness", 405 },
	{ ELECTION_LEADER, true, "GET", "/nope", 404 },
	{ ELECTION_LEADER, true, "GET", "/", 404 },
	{ ELECTION_LEADER, true, "GET", "/leader/", 404 },
	{ ELECTION_LEADER, true, "GET", "/leader%00", 404 },
	{ ELECTION_LEADER, true, "GET", "/leader%00x", 404 },
	{ ELECTION_LEADER, true, "GET", "/metrics%00.txt", 404 },
	{ ELECTION_LEADER, true, "GET", "/leader%20", 404 },
	{ ELECTION_LEADER, true, "GET", "/leader%0a", 404 },
	{ ELECTION_LEADER, true, "GET", "/%6ceader", 200 },
	{ ELECTION_STANDBY, true, "GET", "/replica%00", 404 },
	{ ELECTION_LEADER, true, "HEAD", "/nope", 404 },
};

START_TEST(test_endpoint)
{
	struct resp r;

	set_state(rows[_i].state, rows[_i].connected);
	r = request(rows[_i].method, "127.0.0.1", rows[_i].path);
	ck_assert_msg(r.code == rows[_i].code, "%s %s in %s: %ld, want %ld",
		      rows[_i].method, rows[_i].path, election_state_name(rows[_i].state),
		      r.code, rows[_i].code);
	if (!strcmp(rows[_i].method, "HEAD"))
		ck_assert_uint_eq(r.len, 0);
	else
		ck_assert_uint_gt(r.len, 0);
	if (r.code == 405)
		ck_assert_str_eq(r.allow, "GET, HEAD");
	else
		ck_assert_str_eq(r.allow, "");
}
END_TEST

/* Health endpoints carry the /status document; /status and /metrics say
 * what they are. */
START_TEST(test_bodies)
{
	json_error_t jerr;
	json_t *doc;
	struct resp r;

	set_state(ELECTION_STANDBY, true);
	r = request("GET", "127.0.0.1", "/leader");
	ck_assert_int_eq(r.code, 503);
	ck_assert_str_eq(r.type, "application/json");
	doc = json_loads(r.body, 0, &jerr);
	ck_assert_msg(doc != NULL, "%s: %s", jerr.text, r.body);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "state")), "standby");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "node_id")), "node-a");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "version")), "9.8.7");
	json_decref(doc);

	set_state(ELECTION_LEADER, true);
	r = request("GET", "127.0.0.1", "/metrics");
	ck_assert_str_eq(r.type, "text/plain; version=0.0.4; charset=utf-8");
	ck_assert_ptr_nonnull(strstr(r.body, "\npgleader_is_leader{lock_key=\"42\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\npgleader_fencing_token 77\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\nprocess_open_fds "));
	ck_assert_ptr_nonnull(strstr(r.body, "\nprocess_resident_memory_bytes "));
	ck_assert_ptr_nonnull(strstr(r.body, "\nprocess_start_time_seconds "));
	ck_assert_ptr_nonnull(strstr(r.body, "\nprocess_max_fds "));
	ck_assert_ptr_nonnull(strstr(r.body,
		"pgleader_build_info{version=\"9.8.7\",libpq_version=\"15.3\"} 1"));
}
END_TEST

/* The served text, process_* included, passes promtool's own lint. */
START_TEST(test_metrics_promtool)
{
	struct resp r = request("GET", "127.0.0.1", "/metrics");
	FILE *p = popen("promtool check metrics", "w");
	int status;

	ck_assert_ptr_nonnull(p);
	fputs(r.body, p);
	status = pclose(p);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "promtool check metrics failed (status %d) on:\n%s", status, r.body);
}
END_TEST

START_TEST(test_no_snapshot_yet)
{
	no_snapshot = true;
	ck_assert_int_eq(request("GET", "127.0.0.1", "/liveness").code, 200);
	ck_assert_int_eq(request("GET", "127.0.0.1", "/leader").code, 503);
	ck_assert_int_eq(request("GET", "127.0.0.1", "/readiness").code, 503);
	ck_assert_int_eq(request("GET", "127.0.0.1", "/metrics").code, 503);
}
END_TEST

/* ---- addresses ---------------------------------------------------------- */

/* Each form of address, and the hosts a client reaches it by. */
static const struct {
	const char *addr;
	const char *hosts[2];
} listen_rows[] = {
	{ "127.0.0.1:0", { "127.0.0.1" } },
	{ "[::1]:0", { "[::1]" } },
	{ ":0", { "127.0.0.1", "[::1]" } },
	{ "localhost:0", { "localhost" } },
};

START_TEST(test_listen_forms)
{
	listen_again(listen_rows[_i].addr);
	for (size_t k = 0; k < N(listen_rows[_i].hosts) && listen_rows[_i].hosts[k]; k++)
		ck_assert_int_eq(request("GET", listen_rows[_i].hosts[k], "/leader").code, 200);
}
END_TEST

static int listener(int family, struct sockaddr *sa, socklen_t len)
{
	int fd = socket(family, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, sa, len), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

/* A port taken by someone else, in each form of address: one line. */
START_TEST(test_port_in_use)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	const char *forms[] = { "127.0.0.1", "", "[::1]" };
	char addr[64], err[256], want[128];
	int others[2];

	/* our own server's port, then another program's on each family */

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ck_assert_ptr_null(http_new(loop, addr, &versions, get_snapshot, &snap, err, sizeof(err)));
	snprintf(want, sizeof(want), "cannot listen on %s: Address already in use", addr);
	ck_assert_str_eq(err, want);

	sin.sin_port = htons((uint16_t)port);
	http_free(srv);
	srv = NULL;
	others[0] = listener(AF_INET, (struct sockaddr *)&sin, sizeof(sin));
	sin6.sin6_port = htons((uint16_t)port);
	others[1] = listener(AF_INET6, (struct sockaddr *)&sin6, sizeof(sin6));
	for (size_t i = 0; i < N(forms); i++) {
		snprintf(addr, sizeof(addr), "%s:%d", forms[i], port);
		ck_assert_ptr_null(http_new(loop, addr, &versions, get_snapshot, &snap,
					    err, sizeof(err)));
		snprintf(want, sizeof(want), "cannot listen on %s: Address already in use", addr);
		ck_assert_str_eq(err, want);
		ck_assert_ptr_null(strchr(err, '\n'));
	}
	close(others[0]);
	close(others[1]);
}
END_TEST

static const struct {
	const char *addr, *err;
} bad_rows[] = {
	{ "8008", "invalid http address \"8008\": expected HOST:PORT, [IPV6]:PORT or :PORT" },
	{ "127.0.0.1", "invalid http address" },
	{ "127.0.0.1:", "invalid http address" },
	{ "127.0.0.1:65536", "invalid http address" },
	{ "127.0.0.1:80a", "invalid http address" },
	{ "127.0.0.1:-1", "invalid http address" },
	{ "::1:8008", "invalid http address" },
	{ "[::1]8008", "invalid http address" },
	{ "[::1:8008", "invalid http address" },
	{ "", "invalid http address" },
	/* a bracketed host is an IPv6 address, never looked up */
	{ "[127.0.0.1]:8008", "cannot resolve http address [127.0.0.1]:8008: " },
	{ "[localhost]:8008", "cannot resolve http address [localhost]:8008: " },
};

START_TEST(test_bad_address)
{
	char err[256] = "";

	ck_assert_ptr_null(http_new(loop, bad_rows[_i].addr, &versions, get_snapshot,
				    &snap, err, sizeof(err)));
	ck_assert_msg(!strncmp(err, bad_rows[_i].err, strlen(bad_rows[_i].err)),
		      "%s: %s", bad_rows[_i].addr, err);
}
END_TEST

/* ---- raw sockets for clients that misbehave ----------------------------- */

static int tcp_connect(const char *ip, int p, double timeout)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p) };
	struct timeval tv = { .tv_sec = (time_t)timeout,
			      .tv_usec = (suseconds_t)((timeout - floor(timeout)) * 1e6) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, ip, &sin.sin_addr);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* How a connection ended: what was read before EOF or reset, and whether
 * the read timed out instead. */
struct ending {
	char head[64];
	size_t len;
	bool timed_out;
	bool reset;
	double seconds;
};

static struct ending read_to_end(int fd)
{
	struct ending e = { .len = 0 };
	char buf[4096];
	double t0 = mono();
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), 0)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			e.timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
			e.reset = errno == ECONNRESET;
			break;
		}
		if (e.len < sizeof(e.head) - 1)
			memcpy(e.head + e.len, buf, (size_t)n < sizeof(e.head) - 1 - e.len
			       ? (size_t)n : sizeof(e.head) - 1 - e.len);
		e.len += (size_t)n;
	}
	e.head[e.len < sizeof(e.head) - 1 ? e.len : sizeof(e.head) - 1] = '\0';
	e.seconds = mono() - t0;
	return e;
}

/* A client that connects and never sends is dropped after the server's
 * request timeout (2 s): the timer that runs the deadlines works. */
static void silent(void *arg)
{
	struct ending *e = arg;
	int fd = tcp_connect("127.0.0.1", port, 15);

	*e = read_to_end(fd);
	close(fd);
}

START_TEST(test_silent_client_dropped)
{
	struct ending e;

	run_client(silent, &e);
	ck_assert(!e.timed_out);
	ck_assert_uint_eq(e.len, 0);
	ck_assert_msg(e.seconds > 1.5 && e.seconds < 4, "dropped after %.2f s", e.seconds);
}
END_TEST

static int connect_from(const char *src, const char *dst, double timeout);

/* ---- hostile clients do not hold up the loop ---------------------------- */

#define TICK 0.01

struct lateness {
	ev_timer timer;
	double last, worst;
};

static void tick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct lateness *t = (struct lateness *)w;
	double now = mono();

	(void)l;
	(void)revents;
	if (now - t->last - TICK > t->worst)
		t->worst = now - t->last - TICK;
	t->last = now;
}

struct hostile {
	int silent[12];
	struct ending polite_body, blasted_body, header_flood;
	struct resp during;
};

/* Sends head, then body_len bytes as fast as the socket takes them, and
 * reads until the server ends the connection. */
static struct ending send_and_end(const char *head, size_t body_len)
{
	char *body = malloc(body_len + 1);
	int fd = tcp_connect("127.0.0.1", port, 5);
	struct ending e;

	memset(body, 'x', body_len);
	send(fd, head, strlen(head), MSG_NOSIGNAL);
	if (body_len)
		send(fd, body, body_len, MSG_NOSIGNAL);
	e = read_to_end(fd);
	close(fd);
	free(body);
	return e;
}

static void hostile_clients(void *arg)
{
	struct hostile *h = arg;
	struct req q = { .method = "GET" };
	char url[64];

	for (size_t i = 0; i < N(h->silent); i++)
		h->silent[i] = connect_from(i % 2 ? "127.0.0.2" : "127.0.0.3", "127.0.0.1", 5);
	/* announces a megabyte and waits: refused (413) before it is sent */
	h->polite_body = send_and_end("GET /leader HTTP/1.1\r\nHost: x\r\n"
				      "Content-Length: 1048576\r\n\r\n", 0);
	/* a POST of a megabyte sent at once: 405, or a reset */
	h->blasted_body = send_and_end("POST /leader HTTP/1.1\r\nHost: x\r\n"
				       "Content-Length: 1048576\r\n\r\n", MB);
	/* a megabyte of one header line: more than a connection's memory */
	h->header_flood = send_and_end("GET /leader HTTP/1.1\r\nHost: x\r\nX-Flood: ", MB);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/leader", port);
	q.url = url;
	fetch(&q);
	h->during = q.r;
	for (size_t i = 0; i < N(h->silent); i++)
		close(h->silent[i]);
}

START_TEST(test_hostile_clients_do_not_block)
{
	struct lateness t = { .worst = 0 };
	struct hostile h;

	memset(&h, 0, sizeof(h));
	ev_timer_init(&t.timer, tick_cb, TICK, TICK);
	t.last = mono();
	ev_timer_start(loop, &t.timer);
	run_client(hostile_clients, &h);
	ev_timer_stop(loop, &t.timer);

	for (size_t i = 0; i < N(h.silent); i++)
		ck_assert_int_ge(h.silent[i], 0);
	ck_assert_msg(!strncmp(h.polite_body.head, "HTTP/1.1 413", 12), "%s",
		      h.polite_body.head);
	ck_assert(!h.polite_body.timed_out);
	/* the blaster gets its 405 or a reset: either way not held open */
	ck_assert(!h.blasted_body.timed_out);
	ck_assert(h.blasted_body.reset ||
		  !strncmp(h.blasted_body.head, "HTTP/1.1 405", 12));
	ck_assert(!h.header_flood.timed_out);
	ck_assert(h.header_flood.reset || !strncmp(h.header_flood.head, "HTTP/1.1 4", 10));
	ck_assert_int_eq(h.during.code, 200);
	/* a 10 ms timer on the same loop: blocked for a transfer or a
	 * connection timeout it would be late by seconds; a busy 2-core
	 * machine can make it late by tens of milliseconds */
	fprintf(stderr, "test_http: worst timer lateness %.1f ms\n", t.worst * 1e3);
	ck_assert_msg(t.worst < 0.2, "timer late by %.3f s", t.worst);
}
END_TEST

/* One address may hold a quarter of the connections: a client that hogs
 * them leaves the others room (the server listens on both ::1 and
 * 127.0.0.1). */
struct hog {
	int silent[40];
	int dropped;      /* closed by the server at once */
	struct resp other;
	double other_seconds;
};

static void hog_clients(void *arg)
{
	struct hog *h = arg;
	struct req q = { .method = "GET" };
	struct pollfd pfd;
	char url[64];
	double t0;

	for (size_t i = 0; i < N(h->silent); i++)
		h->silent[i] = tcp_connect("127.0.0.1", port, 5);
	usleep(200 * 1000);
	snprintf(url, sizeof(url), "http://[::1]:%d/leader", port);
	q.url = url;
	t0 = mono();
	fetch(&q);
	h->other_seconds = mono() - t0;
	h->other = q.r;
	for (size_t i = 0; i < N(h->silent); i++) {
		pfd = (struct pollfd){ .fd = h->silent[i], .events = POLLIN };
		if (h->silent[i] < 0 || poll(&pfd, 1, 0) == 1)
			h->dropped++;
		if (h->silent[i] >= 0)
			close(h->silent[i]);
	}
}

START_TEST(test_one_address_cannot_hog)
{
	struct hog h;

	memset(&h, 0, sizeof(h));
	listen_again(":0");
	run_client(hog_clients, &h);
	ck_assert_int_eq(h.other.error, CURLE_OK);
	ck_assert_int_eq(h.other.code, 200);
	/* 8 held, the other 32 closed; the other client is served at once,
	 * not once the silent ones time out (2 s) */
	ck_assert_int_eq(h.dropped, 32);
	ck_assert_msg(h.other_seconds < 1, "served after %.2f s", h.other_seconds);
}
END_TEST

/* ---- a request's total time, and a full server (issue 17 item 6.7) ------ */

/* A TCP connection to port from source address src (127.0.0.x). */
static int connect_from(const char *src, const char *dst, double timeout)
{
	struct sockaddr_in from = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = (time_t)timeout };

	inet_pton(AF_INET, src, &from.sin_addr);
	inet_pton(AF_INET, dst, &to.sin_addr);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

struct trickle {
	double closed_after;	/* seconds from connect to the server's close; -1: never */
};

/* A byte every 0.5 s of a header that never ends, for up to 9 s. */
static void trickle_client(void *arg)
{
	struct trickle *t = arg;
	int fd = connect_from("127.0.0.1", "127.0.0.1", 1);
	double t0 = mono();
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char buf[256];

	t->closed_after = -1;
	send(fd, "GET /leader HTTP/1.1\r\nX-Slow: ", 30, MSG_NOSIGNAL);
	while (fd >= 0 && mono() - t0 < 9) {
		if (poll(&pfd, 1, 500) == 1 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0) {
			t->closed_after = mono() - t0;
			break;
		}
		if (send(fd, "x", 1, MSG_NOSIGNAL) < 0) {
			t->closed_after = mono() - t0;
			break;
		}
	}
	if (fd >= 0)
		close(fd);
}

START_TEST(test_trickling_client_cut)
{
	struct trickle t;

	run_client(trickle_client, &t);
	fprintf(stderr, "test_http: trickling client closed after %.2f s\n", t.closed_after);
	/* 2 s from its accept, not never (the idle timeout restarts with each byte) */
	ck_assert_msg(t.closed_after >= 1.5 && t.closed_after < 4,
		      "closed after %.2f s", t.closed_after);
}
END_TEST

static const char *const flooders[] = { "127.0.0.2", "127.0.0.3", "127.0.0.4",
					"127.0.0.5" };

struct full {
	int held[32];
	struct ending late;
	struct resp after;
};

/* 32 silent connections from four addresses fill every slot; one more is
 * closed at once, not left in the backlog until a slot frees. */
static void full_clients(void *arg)
{
	struct full *f = arg;
	struct req q = { .method = "GET" };
	char url[64];
	int fd;

	for (size_t i = 0; i < N(f->held); i++)
		f->held[i] = connect_from(flooders[i / 8], "127.0.0.1", 5);
	usleep(200 * 1000);
	fd = connect_from("127.0.0.6", "127.0.0.1", 3);
	send(fd, "GET /leader HTTP/1.0\r\n\r\n", 24, MSG_NOSIGNAL);
	f->late = read_to_end(fd);
	close(fd);
	for (size_t i = 0; i < N(f->held); i++)
		if (f->held[i] >= 0)
			close(f->held[i]);
	usleep(200 * 1000);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/leader", port);
	q.url = url;
	fetch(&q);
	f->after = q.r;
}

START_TEST(test_full_server_closes_at_once)
{
	struct full f;

	memset(&f, 0, sizeof(f));
	listen_again("127.0.0.1:0");
	run_client(full_clients, &f);
	for (size_t i = 0; i < N(f.held); i++)
		ck_assert_int_ge(f.held[i], 0);
	ck_assert_msg(!f.late.timed_out, "the 33rd client waited (no answer, no close)");
	ck_assert_msg(f.late.len == 0, "the 33rd client was served: %s", f.late.head);
	ck_assert_msg(f.late.seconds < 1, "closed after %.2f s", f.late.seconds);
	ck_assert_int_eq(f.after.code, 200);
}
END_TEST

/* ---- a flood leaves the failsafe members their slots (issue 25 item 4) -- */

#define MEMBER_SECRET "s3cret"

static bool fs_authorized(void *arg, const char *authorization)
{
	(void)arg;
	return authorization && !strcmp(authorization, "Bearer " MEMBER_SECRET);
}

static int fs_claim(void *arg, const char *node_id, uint64_t fencing_token,
		    const char *members_hash, char *reason, size_t len)
{
	(void)arg;
	(void)node_id;
	(void)fencing_token;
	(void)members_hash;
	(void)reason;
	(void)len;
	return 200;
}

static bool fs_running(void *arg)
{
	(void)arg;
	return false;
}

/* The fixture's server, with failsafe on and 127.0.0.1 a member's host. */
static void keep_for_local_member(void)
{
	const char *hosts[] = { "127.0.0.1" };

	http_set_failsafe(srv, &(struct http_failsafe){ fs_authorized, fs_claim,
							fs_running, NULL, NULL, NULL });
	http_keep_for_members(srv, hosts, N(hosts));
}

#define CLAIM_BODY "{\"node_id\":\"b\",\"fencing_token\":\"7\",\"members\":\"h\"}"

struct flood {
	int held[32];                  /* 8 from each flooding address */
	struct ending extra;           /* a ninth from a flooding address */
	struct ending other;           /* a probe from a fifth address */
	struct ending check, claim;    /* a member's GET and POST /failsafe */
	struct ending wrong, probe;    /* from the member's address: a wrong
					* secret, a health probe */
	struct ending silent;          /* from the member's address, silent */
};

static struct ending send_from(const char *src, const char *req)
{
	int fd = connect_from(src, "127.0.0.1", 3);
	struct ending e = { .reset = true };

	if (fd < 0)
		return e;
	send(fd, req, strlen(req), MSG_NOSIGNAL);
	e = read_to_end(fd);
	close(fd);
	return e;
}

static void flood_clients(void *arg)
{
	struct flood *f = arg;
	int fd;

	for (size_t i = 0; i < N(f->held); i++)
		f->held[i] = connect_from(flooders[i / 8], "127.0.0.1", 5);
	usleep(200 * 1000);
	f->extra = send_from("127.0.0.2", "GET /leader HTTP/1.0\r\n\r\n");
	f->other = send_from("127.0.0.6", "GET /leader HTTP/1.0\r\n\r\n");
	f->check = send_from("127.0.0.1", "GET /failsafe HTTP/1.1\r\nHost: x\r\n"
			     "Authorization: Bearer " MEMBER_SECRET "\r\n"
			     "Connection: close\r\n\r\n");
	f->claim = send_from("127.0.0.1", "POST /failsafe HTTP/1.1\r\nHost: x\r\n"
			     "Authorization: Bearer " MEMBER_SECRET "\r\n"
			     "Content-Length: 49\r\nConnection: close\r\n\r\n" CLAIM_BODY);
	f->wrong = send_from("127.0.0.1", "GET /failsafe HTTP/1.1\r\nHost: x\r\n"
			     "Authorization: Bearer nope\r\nConnection: close\r\n\r\n");
	f->probe = send_from("127.0.0.1", "GET /leader HTTP/1.0\r\n\r\n");
	fd = connect_from("127.0.0.1", "127.0.0.1", 5);
	f->silent = read_to_end(fd);
	close(fd);
	for (size_t i = 0; i < N(f->held); i++)
		if (f->held[i] >= 0)
			close(f->held[i]);
}

static struct flood flood_run(void)
{
	struct flood f;

	memset(&f, 0, sizeof(f));
	keep_for_local_member();
	log_stub_reset();
	run_client(flood_clients, &f);
	for (size_t i = 0; i < N(f.held); i++)
		ck_assert_int_ge(f.held[i], 0);
	return f;
}

/* Slow clients from four addresses take every general slot: a member's
 * check and claim are answered all the same. */
START_TEST(test_flood_members_answered)
{
	struct flood f = flood_run();

	ck_assert_msg(!strncmp(f.check.head, "HTTP/1.1 200", 12), "check: %s", f.check.head);
	ck_assert_msg(strstr(f.check.head, "\r\n") != NULL, "check: %s", f.check.head);
	ck_assert_msg(!strncmp(f.claim.head, "HTTP/1.1 200", 12), "claim: %s", f.claim.head);
	ck_assert(f.check.seconds < 1 && f.claim.seconds < 1);
}
END_TEST

/* The flooders get no more than their share, other clients are closed at
 * once, and the members' slots serve nothing but an authenticated
 * /failsafe request, read within 1 s. */
START_TEST(test_flood_bounded)
{
	struct flood f = flood_run();

	ck_assert_msg(f.extra.len == 0 && !f.extra.timed_out && f.extra.seconds < 1,
		      "a ninth connection from a flooding address: %s (%.2f s)",
		      f.extra.head, f.extra.seconds);
	ck_assert_msg(f.other.len == 0 && !f.other.timed_out && f.other.seconds < 1,
		      "another address: %s", f.other.head);
	/* two closed at once, one line */
	ck_assert_uint_eq(log_stub_count("http: closed a connection from 127.0.0.2 at "
					 "once: every connection it may have is taken "
					 "(32 open; at most 32, 8 from one address, and "
					 "16 kept for failsafe members)"), 1);
	ck_assert_uint_eq(log_stub_count("http: closed a connection"), 1);
	ck_assert_msg(!strncmp(f.wrong.head, "HTTP/1.1 401", 12), "wrong secret: %s",
		      f.wrong.head);
	ck_assert_msg(!strncmp(f.probe.head, "HTTP/1.0 503", 12) ||
		      !strncmp(f.probe.head, "HTTP/1.1 503", 12), "probe: %s", f.probe.head);
	ck_assert(!f.silent.timed_out);
	ck_assert_uint_eq(f.silent.len, 0);
	fprintf(stderr, "test_http: a silent client in a member's slot closed after %.2f s\n",
		f.silent.seconds);
	ck_assert_msg(f.silent.seconds > 0.7 && f.silent.seconds < 2,
		      "closed after %.2f s", f.silent.seconds);
}
END_TEST

struct share {
	int held[12];
	int dropped;
	struct ending claim;
};

/* A member's address holds at most 4 of the members' slots for each member
 * there; the rest are closed at once, and freed slots serve again. */
static void share_clients(void *arg)
{
	struct share *s = arg;
	int general[32];
	struct pollfd pfd;

	for (size_t i = 0; i < N(general); i++)
		general[i] = connect_from(flooders[i / 8], "127.0.0.1", 5);
	for (size_t i = 0; i < N(s->held); i++)
		s->held[i] = connect_from("127.0.0.1", "127.0.0.1", 5);
	usleep(200 * 1000);
	for (size_t i = 0; i < N(s->held); i++) {
		pfd = (struct pollfd){ .fd = s->held[i], .events = POLLIN };
		if (s->held[i] < 0 || poll(&pfd, 1, 0) == 1)
			s->dropped++;
		if (s->held[i] >= 0)
			close(s->held[i]);
	}
	usleep(200 * 1000);
	s->claim = send_from("127.0.0.1", "POST /failsafe HTTP/1.1\r\nHost: x\r\n"
			     "Authorization: Bearer " MEMBER_SECRET "\r\n"
			     "Content-Length: 49\r\nConnection: close\r\n\r\n" CLAIM_BODY);
	for (size_t i = 0; i < N(general); i++)
		if (general[i] >= 0)
			close(general[i]);
}

START_TEST(test_flood_member_share)
{
	struct share s;

	memset(&s, 0, sizeof(s));
	keep_for_local_member();
	run_client(share_clients, &s);
	ck_assert_int_eq(s.dropped, 8);
	ck_assert_msg(!strncmp(s.claim.head, "HTTP/1.1 200", 12), "claim: %s", s.claim.head);
}
END_TEST

/* ---- kept-alive connections (issue 17 item 12) ---------------------------- */

struct kept {
	char first[128], second[128];
	ssize_t second_len;
};

/* Two requests, one after the other, on one connection. */
static void kept_client(void *arg)
{
	struct kept *k = arg;
	const char *req = "GET /leader HTTP/1.1\r\nHost: x\r\n\r\n";
	int fd = connect_from("127.0.0.1", "127.0.0.1", 3);
	char buf[8192];
	ssize_t n;

	send(fd, req, strlen(req), MSG_NOSIGNAL);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(k->first, sizeof(k->first), "%.127s", buf);
	send(fd, req, strlen(req), MSG_NOSIGNAL);
	k->second_len = n = recv(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(k->second, sizeof(k->second), "%.127s", buf);
	close(fd);
}

START_TEST(test_connection_kept_alive)
{
	struct kept k;

	memset(&k, 0, sizeof(k));
	run_client(kept_client, &k);
	ck_assert_msg(!strncmp(k.first, "HTTP/1.1 200 OK\r\n", 17), "%s", k.first);
	ck_assert_msg(!strcasestr(k.first, "\r\nConnection: close"), "%s", k.first);
	ck_assert_msg(!strncmp(k.second, "HTTP/1.1 200 OK\r\n", 17),
		      "no second answer on the connection (%zd): %s", k.second_len, k.second);
}
END_TEST

/* ---- fifty at once ------------------------------------------------------ */

struct crowd {
	struct ending end[50];
};

/* All fifty connect before any sends, so the server sees them at once. */
static void crowd_clients(void *arg)
{
	struct crowd *c = arg;
	const char *req = "GET /leader HTTP/1.0\r\n\r\n";
	int fds[N(c->end)];

	for (size_t i = 0; i < N(fds); i++)
		fds[i] = tcp_connect("127.0.0.1", port, 10);
	usleep(100 * 1000);
	for (size_t i = 0; i < N(fds); i++)
		if (fds[i] >= 0)
			send(fds[i], req, strlen(req), MSG_NOSIGNAL);
	for (size_t i = 0; i < N(fds); i++) {
		if (fds[i] < 0)
			continue; /* refused at connect: len 0 */
		c->end[i] = read_to_end(fds[i]);
		close(fds[i]);
	}
}

START_TEST(test_fifty_at_once)
{
	struct crowd c;
	int answered = 0, refused = 0;

	memset(&c, 0, sizeof(c));
	run_client(crowd_clients, &c);
	for (size_t i = 0; i < N(c.end); i++) {
		struct ending *e = &c.end[i];

		ck_assert_msg(!e->timed_out, "connection %zu got no answer", i);
		if (e->len == 0) {
			refused++; /* closed or reset before a byte: a refusal */
			continue;
		}
		ck_assert_msg(!strncmp(e->head, "HTTP/1.1 200 OK\r\n", 17),
			      "connection %zu: %s", i, e->head);
		answered++;
	}
	fprintf(stderr, "test_http: 50 at once: %d answered, %d refused\n",
		answered, refused);
	/* one address holds at most 8 connections */
	ck_assert_int_ge(answered, 1);
	ck_assert_int_le(answered, 8);
	/* and the server goes on answering */
	ck_assert_int_eq(request("GET", "127.0.0.1", "/leader").code, 200);
}
END_TEST

/* ---- the server never keeps the loop alive on its own -------------------- */

START_TEST(test_loop_not_held)
{
	double t0 = mono();

	ev_run(loop, 0); /* returns at once: only the server's watchers */
	ck_assert(mono() - t0 < 1);
}
END_TEST

static Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("endpoints");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_endpoint, 0, N(rows));
	tcase_add_test(tc, test_bodies);
	tcase_add_test(tc, test_metrics_promtool);
	tcase_add_test(tc, test_no_snapshot_yet);
	tcase_add_test(tc, test_loop_not_held);
	suite_add_tcase(s, tc);

	tc = tcase_create("addresses");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_listen_forms, 0, N(listen_rows));
	tcase_add_test(tc, test_port_in_use);
	tcase_add_loop_test(tc, test_bad_address, 0, N(bad_rows));
	suite_add_tcase(s, tc);

	tc = tcase_create("bounds");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_silent_client_dropped);
	tcase_add_test(tc, test_hostile_clients_do_not_block);
	tcase_add_test(tc, test_one_address_cannot_hog);
	tcase_add_test(tc, test_fifty_at_once);
	tcase_add_test(tc, test_trickling_client_cut);
	tcase_add_test(tc, test_full_server_closes_at_once);
	tcase_add_test(tc, test_connection_kept_alive);
	tcase_add_test(tc, test_flood_members_answered);
	tcase_add_test(tc, test_flood_bounded);
	tcase_add_test(tc, test_flood_member_share);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sr = srunner_create(http_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
