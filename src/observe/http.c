/* http.c: the health, status and metrics endpoints, libmicrohttpd on the libev loop. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>
#include <microhttpd.h>

#include "clocks.h"
#include "log.h"
#include "procstat.h"

/* Bounds: enough for a few probes and scrapers at once. A client that
 * connects and never sends is dropped after the idle timeout, and one that
 * sends a byte now and then after HTTP_REQUEST_S: a request must be read
 * and answered within that time of its connection being accepted (or of
 * the previous answer on a kept-alive connection). A request's headers must
 * fit in the per-connection memory. One address may hold a quarter of the
 * connections, so that a misbehaving client leaves room for others; when
 * every slot is taken a new connection is closed at once, not left waiting
 * in the listen backlog. */
#define HTTP_CONNECTIONS 32u
#define HTTP_PER_ADDRESS 8u
#define HTTP_TIMEOUT_S 5u
#define HTTP_REQUEST_S 2.0
#define HTTP_MEMORY ((size_t)16 * 1024)
/* Kept for the failsafe members (issue 25 item 4): when every general
 * slot is taken, or its address's share of them, a connection from a
 * member's address gets one of these, up to HTTP_MEMBER_SHARE for each
 * member listed at that address. Such a connection serves one
 * authenticated /failsafe request and nothing else (anything else is 503
 * and closed, a wrong secret 401 and closed), and must be read within
 * HTTP_MEMBER_REQUEST_S: a flood from other addresses never reaches these
 * slots, and a client without the secret at a member's address holds one
 * for at most that long. */
#define HTTP_MEMBER_SLOTS 16u
#define HTTP_MEMBER_SHARE 4u
#define HTTP_MEMBER_REQUEST_S 1.0
#define HTTP_MEMBER_ADDRESSES 32
/* A connection closed for want of a slot is logged at most this often. */
#define HTTP_FULL_QUIET_S 60.0
/* A failsafe refusal is logged once per client address and reason, and
 * again after REFUSAL_QUIET_S: a member with a wrong secret asks every
 * ping_interval. */
#define REFUSAL_SLOTS 16
#define REFUSAL_QUIET_S 60.0
/* The timer's period while libmicrohttpd needs no timeout: any period works,
 * the timer is re-armed after every run. */
#define HTTP_IDLE_PERIOD 3600.0

/* A client's address as compared: IPv4 also when it came mapped into
 * IPv6 (a listener on "::"). */
struct address {
	int family;             /* AF_INET, AF_INET6; 0: unknown */
	unsigned char bytes[16];
};

enum slot { SLOT_NONE, SLOT_GENERAL, SLOT_MEMBER };

/* An open connection and the time by which its request must be answered. */
struct conn {
	struct MHD_Connection *c;
	double deadline;        /* CLOCK_MONOTONIC seconds */
	struct address from;
	enum slot slot;
	struct conn *prev, *next;
};

struct http {
	struct ev_loop *loop;
	struct MHD_Daemon *daemon;
	ev_io io;               /* libmicrohttpd's epoll descriptor */
	ev_timer timer;         /* its next timeout */
	http_snapshot_fn get;
	void *arg;
	struct metrics_versions versions;
	char *version, *libpq_version;
	int port;
	double boot_time;       /* procstat_boot_time(), read once */
	struct http_failsafe fs;
	bool failsafe;          /* http_set_failsafe was given callbacks */
	struct conn *conns;     /* every open connection */
	enum slot admitted;     /* accept_cb's decision, for connection_cb */
	bool full_logged;
	double full_logged_at;  /* CLOCK_MONOTONIC seconds */
	struct member_address {
		struct address at;
		unsigned share;    /* slots it may hold */
	} members[HTTP_MEMBER_ADDRESSES];
	size_t n_members;
	struct refusal {
		char who[NI_MAXHOST];
		char why[160];
		double at;      /* CLOCK_MONOTONIC seconds; 0: free */
	} refusals[REFUSAL_SLOTS];
};

/* A failsafe claim's body, read in the pieces libmicrohttpd hands over. */
struct upload {
	size_t len;
	char data[HTTP_FAILSAFE_BODY_MAX + 1];
};

/* ---- requests ----------------------------------------------------------- */

enum route_kind { ROUTE_HEALTH, ROUTE_STATUS, ROUTE_METRICS };

/* Patroni's names, so that HAProxy and Kubernetes users guess them. */
static const struct route {
	const char *path;
	enum route_kind kind;
	bool (*healthy)(const struct election_snapshot *s);
} routes[] = {
	{ "/leader", ROUTE_HEALTH, metrics_is_leader },
	{ "/primary", ROUTE_HEALTH, metrics_is_leader },
	{ "/replica", ROUTE_HEALTH, metrics_is_standby },
	{ "/standby", ROUTE_HEALTH, metrics_is_standby },
	{ "/liveness", ROUTE_HEALTH, metrics_is_live },
	{ "/readiness", ROUTE_HEALTH, metrics_is_ready },
	{ "/status", ROUTE_STATUS, NULL },
	{ "/metrics", ROUTE_METRICS, NULL },
};

/* Queues a response with one extra header (name NULL: none); body is
 * copied unless owned, in which case it is malloc()ed and handed over (also
 * on failure). */
static enum MHD_Result respond(struct MHD_Connection *c, unsigned status,
			       const char *type, char *body, bool owned,
			       const char *name, const char *value)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(strlen(body), body, owned
					    ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	if (!r) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (name)
		MHD_add_response_header(r, name, value);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *type, char *body, bool owned)
{
	return respond(c, status, type, body, owned,
		       status == MHD_HTTP_METHOD_NOT_ALLOWED ? MHD_HTTP_HEADER_ALLOW : NULL,
		       "GET, HEAD");
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status,
				  const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", (char *)text, false);
}

static enum MHD_Result serve_metrics(struct http *h, struct MHD_Connection *c,
				     const struct election_snapshot *s)
{
	struct metrics_process p;
	struct metrics_buf b = { 0 };

	procstat_read(h->boot_time, &p);
	if (metrics_prometheus(s, &p, &h->versions, &b) < 0) {
		metrics_buf_free(&b);
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	}
	return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
		     b.data, true);
}

/* Health endpoints answer with the /status document, as Patroni's do, so
 * that a failing probe's body says why. */
static enum MHD_Result serve(struct http *h, struct MHD_Connection *c,
			     const struct route *r)
{
	const struct election_snapshot *s = h->get(h->arg);
	unsigned status = MHD_HTTP_OK;
	char *json;

	if (!s)
		return reply_text(c, r->healthy == metrics_is_live ? MHD_HTTP_OK
				  : MHD_HTTP_SERVICE_UNAVAILABLE, "starting\n");
	if (r->kind == ROUTE_METRICS)
		return serve_metrics(h, c, s);
	if (r->kind == ROUTE_HEALTH && !r->healthy(s))
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
	json = metrics_status_json(s, &h->versions);
	if (!json)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return reply(c, status, "application/json", json, true);
}

/* The endpoints are read-only: a request that carries a body is refused
 * before the body is read, and the connection is closed after the answer
 * (an answer on libmicrohttpd's first call closes it). */
static bool has_body(struct MHD_Connection *c)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (len && strspn(len, "0") != strlen(len)) ||
	       MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

/* The request context of a GET or HEAD whose headers are read: it is
 * answered on the next call. */
static char request_read;

/* ---- failsafe (DESIGN 9) ------------------------------------------------ */

/* {"ok": false, "reason": ...} with status, and extra header name: value. */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status,
			      const char *reason, const char *name, const char *value)
{
	json_t *doc = json_pack("{s:b, s:s}", "ok", 0, "reason", reason);
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!body)
		return MHD_NO;
	return respond(c, status, "application/json", body, true, name, value);
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned status,
				  json_t *doc)
{
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!body)
		return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	return reply(c, status, "application/json", body, true);
}

/* A decimal unsigned 64-bit number, digits only. */
static bool parse_token(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 20)
		return false;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

/* The client's numeric address, or "?". */
static void client_address(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	socklen_t salen = sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							  : sizeof(struct sockaddr_in);

	if (!sa || getnameinfo(sa, salen, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST))
		snprintf(buf, len, "?");
}

/* A claimant's node id for a log line: at most len - 1 bytes, anything
 * but printable ASCII shown as '?'. */
static const char *printable(const char *s, char *buf, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = s[i] > ' ' && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* Logs why a member's request was refused, unless the same client was
 * refused for the same reason less than REFUSAL_QUIET_S ago (REFUSAL_SLOTS
 * pairs of client and reason are remembered). node: the
 * claimant's node id, or NULL. */
static void log_refusal(struct http *h, struct MHD_Connection *c, const char *node,
			unsigned status, const char *why)
{
	struct refusal *slot = &h->refusals[0];
	char who[NI_MAXHOST], what[160], shown[64];
	double now = clocks_monotonic();

	client_address(c, who, sizeof(who));
	snprintf(what, sizeof(what), "%u %s", status, why);
	for (size_t i = 0; i < REFUSAL_SLOTS; i++) {
		struct refusal *r = &h->refusals[i];

		if (r->at > 0 && !strcmp(r->who, who) && !strcmp(r->why, what)) {
			if (now - r->at < REFUSAL_QUIET_S)
				return;
			slot = r;
			break;
		}
		if (r->at < slot->at)
			slot = r; /* the free or oldest one */
	}
	snprintf(slot->who, sizeof(slot->who), "%s", who);
	snprintf(slot->why, sizeof(slot->why), "%s", what);
	slot->at = now;
	if (node)
		log_warning("failsafe: refused the claim of node %s from %s: %s",
			    printable(node, shown, sizeof(shown)), who, what);
	else
		log_warning("failsafe: refused a request from %s: %s", who, what);
}

/* The claim in the body, answered by the election's callback. */
static enum MHD_Result serve_claim(struct http *h, struct MHD_Connection *c,
				   const struct upload *u)
{
	json_t *doc = json_loadb(u->data, u->len, JSON_REJECT_DUPLICATES, NULL);
	const char *node = json_string_value(json_object_get(doc, "node_id"));
	const char *token = json_string_value(json_object_get(doc, "fencing_token"));
	const char *members = json_string_value(json_object_get(doc, "members"));
	char reason[256] = "";
	uint64_t fencing_token;
	int status;

	if (!node || !*node || !members || !parse_token(token, &fencing_token)) {
		json_decref(doc);
		return refuse(c, MHD_HTTP_BAD_REQUEST, "expected a JSON object with "
			      "node_id, fencing_token (a decimal string) and members",
			      NULL, NULL);
	}
	if (json_is_true(json_object_get(doc, "regained")) && h->fs.regained)
		status = h->fs.regained(h->fs.arg, node, members, reason, sizeof(reason));
	else
		status = h->fs.claim(h->fs.arg, node, fencing_token, members, reason,
				     sizeof(reason));
	if (status == MHD_HTTP_OK) {
		json_decref(doc);
		return reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	}
	log_refusal(h, c, node, MHD_HTTP_CONFLICT, *reason ? reason : "refused");
	json_decref(doc);
	return refuse(c, MHD_HTTP_CONFLICT, *reason ? reason : "refused", NULL, NULL);
}

/* The first call, headers only: the method, the secret and the announced
 * size are checked before any of the body is read. */
static enum MHD_Result failsafe_begin(struct http *h, struct MHD_Connection *c,
				      const char *method, void **req_cls)
{
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_CONTENT_LENGTH);
	bool post = !strcmp(method, MHD_HTTP_METHOD_POST);

	if (!post && strcmp(method, MHD_HTTP_METHOD_GET) &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD))
		return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
			      MHD_HTTP_HEADER_ALLOW, "GET, HEAD, POST");
	if (!h->fs.authorized(h->fs.arg, MHD_lookup_connection_value(
				      c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION))) {
		log_refusal(h, c, NULL, MHD_HTTP_UNAUTHORIZED, "wrong or missing secret");
		return refuse(c, MHD_HTTP_UNAUTHORIZED, "wrong or missing secret",
			      MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
	}
	if (!post && has_body(c))
		return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "a request body is not accepted",
			      NULL, NULL);
	/* the asker compares the member list with its own (a new leader's
	 * settle wait ends early only when they are the same) */
	if (!post && h->fs.members_hash)
		return reply_json(c, MHD_HTTP_OK, json_pack("{s:b, s:s}", "running",
							    h->fs.running(h->fs.arg),
							    "members", h->fs.members_hash));
	if (!post)
		return reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "running",
							    h->fs.running(h->fs.arg)));
	if (len && strtoull(len, NULL, 10) > HTTP_FAILSAFE_BODY_MAX)
		return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, "the body is too large",
			      NULL, NULL);
	*req_cls = calloc(1, sizeof(struct upload));
	return *req_cls ? MHD_YES : MHD_NO;
}

/* libmicrohttpd calls once with the headers, once per piece of the body,
 * and once more at its end. A body that grows past the bound while it is
 * read (chunked) closes the connection: no answer may be queued while a
 * piece is handed over. */
static enum MHD_Result serve_failsafe(struct http *h, struct MHD_Connection *c,
				      const char *method, const char *data,
				      size_t *size, void **req_cls)
{
	struct upload *u = *req_cls;

	if (!u)
		return failsafe_begin(h, c, method, req_cls);
	if (*size) {
		if (*size > HTTP_FAILSAFE_BODY_MAX - u->len)
			return MHD_NO;
		memcpy(u->data + u->len, data, *size);
		u->len += *size;
		*size = 0;
		return MHD_YES;
	}
	return serve_claim(h, c, u);
}

/* A request is over: the next one on a kept-alive connection gets its own
 * HTTP_REQUEST_S. */
static void completed_cb(void *cls, struct MHD_Connection *c, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;

	(void)cls;
	(void)toe;
	if (k)
		k->deadline = clocks_monotonic() + HTTP_REQUEST_S;
	if (*req_cls != &request_read)
		free(*req_cls);
	*req_cls = NULL;
}

/* ---- admission: general slots and the members' (issue 25 item 4) ------ */

static struct address address_of(const struct sockaddr *sa)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct address a = { 0 };

	if (sa && sa->sa_family == AF_INET) {
		a.family = AF_INET;
		memcpy(a.bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6) {
		const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		bool v4 = !memcmp(b, mapped, sizeof(mapped));

		a.family = v4 ? AF_INET : AF_INET6;
		memcpy(a.bytes, v4 ? b + 12 : b, v4 ? 4 : 16);
	}
	return a;
}

static bool same_address(const struct address *a, const struct address *b)
{
	return a->family && a->family == b->family && !memcmp(a->bytes, b->bytes, 16);
}

/* The reserved slots connections from a may hold: 0 unless a is a
 * member's address. */
static unsigned member_share(const struct http *h, const struct address *a)
{
	for (size_t i = 0; i < h->n_members; i++)
		if (same_address(&h->members[i].at, a))
			return h->members[i].share;
	return 0;
}

/* Where a new connection from a goes: a general slot while there is one
 * and a's share of them is not taken, else a member's slot when a is a
 * member's address and its share of those is not taken, else nowhere. */
static enum slot admit(const struct http *h, const struct address *a)
{
	unsigned general = 0, general_here = 0, member = 0, member_here = 0;

	for (const struct conn *k = h->conns; k; k = k->next) {
		bool here = same_address(&k->from, a);

		if (k->slot == SLOT_MEMBER) {
			member++;
			member_here += here;
		} else {
			general++;
			general_here += here;
		}
	}
	if (general < HTTP_CONNECTIONS && general_here < HTTP_PER_ADDRESS)
		return SLOT_GENERAL;
	if (member < HTTP_MEMBER_SLOTS && member_here < member_share(h, a))
		return SLOT_MEMBER;
	return SLOT_NONE;
}

/* A flood is worth a line, but not one a connection. */
static void log_full(struct http *h, const struct address *a)
{
	double now = clocks_monotonic();
	char who[INET6_ADDRSTRLEN] = "?";
	unsigned open = 0;

	if (h->full_logged && now - h->full_logged_at < HTTP_FULL_QUIET_S)
		return;
	h->full_logged = true;
	h->full_logged_at = now;
	for (const struct conn *k = h->conns; k; k = k->next)
		open++;
	if (a->family)
		inet_ntop(a->family, a->bytes, who, sizeof(who));
	log_warning("http: closed a connection from %s at once: every connection it may "
		    "have is taken (%u open; at most %u, %u from one address, and %u "
		    "kept for failsafe members); said at most once a minute", who, open,
		    HTTP_CONNECTIONS, HTTP_PER_ADDRESS, HTTP_MEMBER_SLOTS);
}

/* Full: the new connection is closed at once, instead of waiting in the
 * listen backlog for a slot. The decision is kept for connection_cb,
 * which libmicrohttpd calls next for the same connection. */
static enum MHD_Result accept_cb(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct http *h = cls;
	struct address a = address_of(len ? addr : NULL);

	h->admitted = admit(h, &a);
	if (h->admitted == SLOT_NONE)
		log_full(h, &a);
	return h->admitted != SLOT_NONE ? MHD_YES : MHD_NO;
}

/* Every connection is known from its accept to its close, with its
 * address, its slot and its deadline. */
static void connection_cb(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http *h = cls;
	struct conn *k = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		k = calloc(1, sizeof(*k));
		if (!k)
			return; /* not tracked: it gets the idle timeout only */
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		k->c = c;
		k->from = address_of(ci ? ci->client_addr : NULL);
		k->slot = h->admitted == SLOT_MEMBER ? SLOT_MEMBER : SLOT_GENERAL;
		k->deadline = clocks_monotonic() + (k->slot == SLOT_MEMBER
						    ? HTTP_MEMBER_REQUEST_S : HTTP_REQUEST_S);
		h->admitted = SLOT_NONE;
		k->next = h->conns;
		if (h->conns)
			h->conns->prev = k;
		h->conns = k;
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	if (k->prev)
		k->prev->next = k->next;
	else
		h->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	free(k);
	*socket_context = NULL;
}

/* Whether c holds a member's slot. */
static bool in_member_slot(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct conn *k = ci ? ci->socket_context : NULL;

	return k && k->slot == SLOT_MEMBER;
}

static void add_member_address(struct http *h, const struct sockaddr *sa)
{
	struct address a = address_of(sa);

	for (size_t i = 0; i < h->n_members; i++)
		if (same_address(&h->members[i].at, &a)) {
			h->members[i].share += HTTP_MEMBER_SHARE;
			return;
		}
	if (a.family && h->n_members < HTTP_MEMBER_ADDRESSES)
		h->members[h->n_members++] = (struct member_address){ a, HTTP_MEMBER_SHARE };
}

void http_keep_for_members(struct http *h, const char *const *hosts, size_t n)
{
	const struct addrinfo hints = { .ai_socktype = SOCK_STREAM };

	h->n_members = 0;
	for (size_t i = 0; i < n; i++) {
		struct addrinfo *res;
		int e = getaddrinfo(hosts[i], NULL, &hints, &res);

		if (e) {
			log_warning("failsafe: cannot resolve member host %s (%s): its "
				    "requests get no reserved http connection",
				    hosts[i], gai_strerror(e));
			continue;
		}
		for (const struct addrinfo *ai = res; ai; ai = ai->ai_next)
			add_member_address(h, ai->ai_addr);
		freeaddrinfo(res);
	}
}

/* Ends the connections past their deadline: shut down, their socket reads
 * end of file, and libmicrohttpd closes them in its next run. Returns the
 * seconds until the next deadline (HTTP_IDLE_PERIOD: none). */
static double expire(struct http *h)
{
	double now = clocks_monotonic(), next = HTTP_IDLE_PERIOD;

	for (struct conn *k = h->conns; k; k = k->next) {
		const union MHD_ConnectionInfo *ci;

		if (k->deadline > now) {
			next = k->deadline - now < next ? k->deadline - now : next;
			continue;
		}
		ci = MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci)
			shutdown(ci->connect_fd, SHUT_RDWR);
		k->deadline = now + HTTP_REQUEST_S; /* once; then the idle timeout */
	}
	return next;
}

void http_set_failsafe(struct http *h, const struct http_failsafe *fs)
{
	h->failsafe = fs != NULL;
	if (fs)
		h->fs = *fs;
}

static enum MHD_Result request_cb(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **req_cls)
{
	struct http *h = cls;

	(void)version;
	/* A member's slot serves a member's claim or check, nothing else. */
	if (in_member_slot(c) && !(h->failsafe && !strcmp(url, "/failsafe")))
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "busy: the free "
				  "connections are kept for failsafe members\n");
	if (h->failsafe && !strcmp(url, "/failsafe"))
		return serve_failsafe(h, c, method, upload_data, upload_data_size, req_cls);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (has_body(c))
		return reply_text(c, MHD_HTTP_CONTENT_TOO_LARGE,
				  "a request body is not accepted\n");
	/* Answered on the next call, once the request is read whole:
	 * libmicrohttpd closes a connection answered on the first call, and
	 * a scraper's connection may stay open for the next request. */
	if (!*req_cls) {
		*req_cls = &request_read;
		return MHD_YES;
	}
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!strcmp(url, routes[i].path))
			return serve(h, c, &routes[i]);
	return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* libmicrohttpd's own decoding turns "/leader%00" into "/leader" followed
 * by a NUL, which a path comparison takes for "/leader". A string with an
 * encoded NUL is left as it came, so that such a path is 404 (a request
 * path never holds a NUL); any other is decoded by libmicrohttpd. Returns
 * the decoded length. */
static size_t unescape_cb(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	if (strstr(s, "%00"))
		return strlen(s);
	return MHD_http_unescape(s);
}

/* ---- the loop ----------------------------------------------------------- */

/* libmicrohttpd never blocks in MHD_run in this mode: it handles what its
 * epoll set reports ready, then says when it next needs to run (a
 * connection's timeout, or 0 when it has more to do). */
static void run(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	double after;

	MHD_run(h->daemon);
	after = expire(h);
	if (MHD_get_timeout(h->daemon, &ms) == MHD_YES && (double)ms / 1000.0 < after)
		after = ms ? (double)ms / 1000.0 : 1e-4;
	/* A repeating timer restarted in place stays active, so the ev_unref
	 * taken when it was started stays right. */
	h->timer.repeat = after;
	ev_timer_again(h->loop, &h->timer);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	run(w->data);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	run(w->data);
}

/* ---- listening ---------------------------------------------------------- */

/* "HOST:PORT", "[V6]:PORT" or ":PORT" into host ("" for every address) and
 * a numeric port. */
static int split_addr(const char *addr, char host[256], char port[8])
{
	const char *colon, *h = addr;
	size_t hlen;

	if (*addr == '[') {
		colon = strchr(addr, ']');
		if (!colon || colon[1] != ':')
			return -1;
		h = addr + 1;
		hlen = (size_t)(colon - h);
		colon++;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || memchr(addr, ':', (size_t)(colon - addr)))
			return -1;
		hlen = (size_t)(colon - addr);
	}
	if (hlen >= 256 || !colon[1] || strlen(colon + 1) > 5 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    atoi(colon + 1) > 65535)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static int bind_one(const struct addrinfo *ai, int *error)
{
	int fd, on = 1, off = 0;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*error = errno;
		return -1;
	}
	/* SO_REUSEADDR lets a restart bind over TIME_WAIT; on Linux it never
	 * lets two listeners share a port. "::" takes IPv4 too. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
		*error = errno;
		close(fd);
		return -1;
	}
	return fd;
}

/* The first address of host (NULL: the wildcard) in family that binds.
 * flags: AI_NUMERICHOST for a bracketed address, never looked up.
 * -1 with errno's value in *error, or -2 with getaddrinfo's. */
static int bind_first(const char *host, const char *port, int family,
		      int flags, int *error)
{
	struct addrinfo hints = { .ai_family = family, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV | flags };
	struct addrinfo *res, *ai;
	int fd = -1, e;

	*error = getaddrinfo(host, port, &hints, &res);
	if (*error)
		return -2;
	*error = EADDRNOTAVAIL;
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = bind_one(ai, &e);
		/* Report why the preferred address failed. */
		if (fd < 0 && ai == res)
			*error = e;
	}
	freeaddrinfo(res);
	return fd;
}

/* Every address: "::" with IPv4 mapped, or 0.0.0.0 on a kernel without
 * IPv6. A named host: its first address that binds. */
static int listen_on(const char *addr, char *err, size_t errlen)
{
	char host[256], port[8];
	int fd, error;

	if (split_addr(addr, host, port) < 0) {
		snprintf(err, errlen, "invalid http address \"%s\": expected HOST:PORT, "
			 "[IPV6]:PORT or :PORT", addr);
		return -1;
	}
	if (*host)
		fd = bind_first(host, port, *addr == '[' ? AF_INET6 : AF_UNSPEC,
				*addr == '[' ? AI_NUMERICHOST : 0, &error);
	else if ((fd = bind_first(NULL, port, AF_INET6, 0, &error)) == -1 &&
		 error == EAFNOSUPPORT)
		fd = bind_first(NULL, port, AF_INET, 0, &error);
	if (fd == -2)
		snprintf(err, errlen, "cannot resolve http address %s: %s", addr,
			 gai_strerror(error));
	else if (fd < 0)
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(error));
	return fd < 0 ? -1 : fd;
}

static int bound_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* ---- life cycle --------------------------------------------------------- */

static struct MHD_Daemon *start_daemon(struct http *h, int fd)
{
	/* No MHD_USE_INTERNAL_POLLING_THREAD: the caller's loop runs it. No
	 * MHD_USE_ERROR_LOG: libmicrohttpd would write to stderr on its own. */
	/* libmicrohttpd's own limit is one above ours, which accept_cb keeps:
	 * at its own limit it would stop accepting, and leave clients waiting.
	 * Its per-address limit is not used: accept_cb counts per address and
	 * slot. */
	return MHD_start_daemon(MHD_USE_EPOLL, 0, accept_cb, h, request_cb, h,
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_LIMIT,
				HTTP_CONNECTIONS + HTTP_MEMBER_SLOTS + 1,
				MHD_OPTION_CONNECTION_TIMEOUT, HTTP_TIMEOUT_S,
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_MEMORY,
				MHD_OPTION_NOTIFY_COMPLETED, completed_cb, NULL,
				MHD_OPTION_NOTIFY_CONNECTION, connection_cb, h,
				MHD_OPTION_UNESCAPE_CALLBACK, unescape_cb, NULL,
				MHD_OPTION_END);
}

static int copy_versions(struct http *h, const struct metrics_versions *v)
{
	h->version = strdup(v && v->version ? v->version : "");
	h->libpq_version = strdup(v && v->libpq_version ? v->libpq_version : "");
	h->versions.version = h->version;
	h->versions.libpq_version = h->libpq_version;
	return h->version && h->libpq_version ? 0 : -1;
}

struct http *http_new(struct ev_loop *loop, const char *addr,
		      const struct metrics_versions *versions,
		      http_snapshot_fn get, void *arg, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info;
	struct http *h = calloc(1, sizeof(*h));
	int fd;

	if (!h || copy_versions(h, versions) < 0) {
		snprintf(err, errlen, "cannot start the http server: out of memory");
		http_free(h);
		return NULL;
	}
	h->loop = loop;
	h->get = get;
	h->arg = arg;
	h->boot_time = procstat_boot_time();
	fd = listen_on(addr, err, errlen);
	if (fd < 0) {
		http_free(h);
		return NULL;
	}
	h->port = bound_port(fd);
	h->daemon = start_daemon(h, fd);
	info = h->daemon ? MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!info) {
		snprintf(err, errlen, "cannot start the http server on %s", addr);
		if (!h->daemon)
			close(fd);
		http_free(h);
		return NULL;
	}
	ev_io_init(&h->io, io_cb, info->epoll_fd, EV_READ);
	ev_init(&h->timer, timer_cb);
	h->io.data = h->timer.data = h;
	ev_io_start(loop, &h->io);
	/* Observers do not keep the loop alive: the election ends it. */
	ev_unref(loop);
	h->timer.repeat = HTTP_IDLE_PERIOD;
	ev_timer_again(loop, &h->timer);
	ev_unref(loop);
	return h;
}

int http_port(const struct http *h)
{
	return h->port;
}

void http_free(struct http *h)
{
	if (!h)
		return;
	if (ev_is_active(&h->io)) {
		ev_ref(h->loop);
		ev_io_stop(h->loop, &h->io);
	}
	if (ev_is_active(&h->timer)) {
		ev_ref(h->loop);
		ev_timer_stop(h->loop, &h->timer);
	}
	if (h->daemon)
		MHD_stop_daemon(h->daemon);
	free(h->version);
	free(h->libpq_version);
	free(h);
}
