/* failsafe.c: the failsafe peer protocol, libcurl's multi interface on the libev loop. */
#include "failsafe.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <ev.h>
#include <jansson.h>

/* Response headers one member reads from another before giving up: libcurl
 * keeps them in memory, and a hostile peer must not fill it. */
#define FAILSAFE_HEADERS_MAX ((size_t)16 * 1024)
#define FAILSAFE_DETAIL_MAX 512
#define FAILSAFE_REASON_MAX 120
#define BEARER "Bearer "

enum round_kind { ROUND_CLAIM, ROUND_CHECK };

/* What one member's answer means to its round. */
enum answer { ANSWER_AGREE, ANSWER_NOT_RUNNING, ANSWER_RUNNING, ANSWER_NONE };

struct peer {
	char *node_id;
	char *url;              /* http://host:port/failsafe */
};

struct round;

/* One member's request: its answer is read into body, never past it. */
struct request {
	struct round *round;
	const struct peer *peer;
	CURL *easy;             /* NULL when not in flight */
	size_t len, header_bytes;
	bool body_too_big, headers_too_big;
	char body[FAILSAFE_BODY_MAX + 1];
};

/* A claim or a check: one request per other member, all in parallel. */
struct round {
	struct failsafe *f;
	enum round_kind kind;
	struct request *reqs;
	size_t pending;         /* requests still in flight */
	bool active;            /* started and its result not yet delivered */
	int agree;
	bool running, silent;
	char detail[FAILSAFE_DETAIL_MAX];
};

/* A socket libcurl asked us to watch. */
struct sock {
	ev_io io;
	struct failsafe *f;
	struct sock *prev, *next;
};

struct failsafe {
	struct ev_loop *loop;
	CURLM *multi;
	ev_timer timeout;       /* libcurl's next timeout */
	ev_timer deliver;       /* hands results to the callbacks */
	struct failsafe_callbacks cb;
	char *secret;
	struct curl_slist *headers;
	char *node_id;
	struct peer *peers;     /* the other members */
	size_t n_peers;
	long timeout_ms;
	char hash[17];
	struct round claim, check;
	struct sock *socks;
	char detail[FAILSAFE_DETAIL_MAX];
	bool curl_inited;
};

/* ---- the secret --------------------------------------------------------- */

static void burn(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* The file's text, at most FAILSAFE_SECRET_MAX bytes, from a regular file
 * that others cannot read or write: a secret that anyone on the machine
 * can read protects nothing. Returns the length or -1 with err. */
static ssize_t read_secret_file(const char *path, char *buf, size_t cap,
				char *err, size_t errlen)
{
	struct stat st;
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open failsafe secret file %s: %s",
			 path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "failsafe secret file %s is not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(err, errlen, "failsafe secret file %s is open to others "
			 "(mode %04o): chmod o-rw it", path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	do {
		n = read(fd, buf + total, cap - (size_t)total);
		total += n > 0 ? n : 0;
	} while ((n > 0 && (size_t)total < cap) || (n < 0 && errno == EINTR));
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read failsafe secret file %s: %s",
			 path, strerror(errno));
		return -1;
	}
	return total;
}

/* What is wrong with the file's text, or NULL; *len loses the newline. */
static const char *secret_problem(const char *buf, size_t *len)
{
	if (*len > FAILSAFE_SECRET_MAX)
		return "is larger than 4096 bytes";
	if (*len && buf[*len - 1] == '\n')
		(*len)--;
	if (*len && buf[*len - 1] == '\r')
		(*len)--;
	if (*len == 0)
		return "is empty";
	for (size_t i = 0; i < *len; i++)
		if (buf[i] == '\n')
			return "must hold one line";
		else if (buf[i] <= ' ' || buf[i] >= 0x7f)
			return "may hold only printable ASCII without spaces";
	return NULL;
}

/* One line of printable ASCII without spaces: it goes into an HTTP header. */
static char *read_secret(const char *path, char *err, size_t errlen)
{
	char buf[FAILSAFE_SECRET_MAX + 1];
	const char *why;
	char *secret = NULL;
	ssize_t n = read_secret_file(path, buf, sizeof(buf), err, errlen);
	size_t len = n > 0 ? (size_t)n : 0;

	if (n < 0)
		return NULL;
	if ((why = secret_problem(buf, &len)))
		snprintf(err, errlen, "failsafe secret file %s %s", path, why);
	else if ((secret = strndup(buf, len)) == NULL)
		snprintf(err, errlen, "cannot read failsafe secret file %s: out of memory", path);
	explicit_bzero(buf, sizeof(buf));
	return secret;
}

bool failsafe_authorized(const struct failsafe *f, const char *authorization)
{
	const char *given = authorization;
	size_t want, got;
	volatile unsigned char diff;

	if (!given || strncasecmp(given, BEARER, strlen(BEARER)) != 0)
		return false;
	given += strlen(BEARER);
	while (*given == ' ')
		given++;
	want = strlen(f->secret);
	got = strlen(given);
	/* As long as the secret whatever is given: the time tells nothing of
	 * how many characters matched. */
	diff = got != want;
	for (size_t i = 0; i < want; i++)
		diff |= (unsigned char)(f->secret[i] ^ given[i < got ? i : 0]);
	return diff == 0;
}

/* ---- the member list ---------------------------------------------------- */

/* "id=host:port", an IPv6 host in brackets. */
static char *member_entry(const struct config_peer *p)
{
	char *s;
	bool v6 = strchr(p->host, ':') != NULL;

	if (asprintf(&s, "%s=%s%s%s:%s", p->node_id, v6 ? "[" : "", p->host,
		     v6 ? "]" : "", p->port) < 0)
		return NULL;
	return s;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* FNV-1a, 64-bit: stable everywhere, enough to tell two lists apart. */
static int members_hash(const struct config *cfg, char out[17])
{
	char **entries = calloc(cfg->n_peers ? cfg->n_peers : 1, sizeof(*entries));
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	int result = 0;

	if (!entries)
		return -1;
	for (size_t i = 0; i < cfg->n_peers && result == 0; i++)
		if ((entries[i] = member_entry(&cfg->peers[i])) == NULL)
			result = -1;
	if (result == 0) {
		qsort(entries, cfg->n_peers, sizeof(*entries), compare_entries);
		for (size_t i = 0; i < cfg->n_peers; i++)
			for (const char *c = entries[i];; c++) {
				h = (h ^ (unsigned char)(*c ? *c : '\n')) *
				    UINT64_C(0x100000001b3);
				if (!*c)
					break;
			}
		snprintf(out, 17, "%016" PRIx64, h);
	}
	for (size_t i = 0; i < cfg->n_peers; i++)
		free(entries[i]);
	free(entries);
	return result;
}

/* A zone in an IPv6 address ("fe80::1%eth0") is "%25" in a URL. */
static char *peer_url(const struct config_peer *p)
{
	char host[256 * 3], *s;
	size_t j = 0;
	bool v6 = strchr(p->host, ':') != NULL;

	for (const char *c = p->host; *c && j + 4 < sizeof(host); c++)
		if (*c == '%' && v6) {
			memcpy(host + j, "%25", 3);
			j += 3;
		} else {
			host[j++] = *c;
		}
	host[j] = '\0';
	if (asprintf(&s, "http://%s%s%s:%s/failsafe", v6 ? "[" : "", host,
		     v6 ? "]" : "", p->port) < 0)
		return NULL;
	return s;
}

static void free_peers(struct failsafe *f)
{
	for (size_t i = 0; i < f->n_peers; i++) {
		free(f->peers[i].node_id);
		free(f->peers[i].url);
	}
	free(f->peers);
	f->peers = NULL;
	f->n_peers = 0;
}

/* Every member but this node. */
static int keep_others(struct failsafe *f, const struct config *cfg)
{
	f->peers = calloc(cfg->n_peers ? cfg->n_peers : 1, sizeof(*f->peers));
	if (!f->peers)
		return -1;
	for (size_t i = 0; i < cfg->n_peers; i++) {
		struct peer *p = &f->peers[f->n_peers];

		if (cfg->node_id && strcmp(cfg->peers[i].node_id, cfg->node_id) == 0)
			continue;
		f->n_peers++;
		p->node_id = strdup(cfg->peers[i].node_id);
		p->url = peer_url(&cfg->peers[i]);
		if (!p->node_id || !p->url)
			return -1;
	}
	return 0;
}

/* ---- libcurl on libev --------------------------------------------------- */

static void collect(struct failsafe *f);

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct failsafe *f = ((struct sock *)w)->f;
	int running, action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
			      ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);

	(void)loop;
	/* w may be freed inside: libcurl can drop the socket it reports on. */
	curl_multi_socket_action(f->multi, w->fd, action, &running);
	collect(f);
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct failsafe *f = w->data;
	int running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	collect(f);
}

static void sock_free(struct failsafe *f, struct sock *s)
{
	ev_io_stop(f->loop, &s->io);
	if (s->prev)
		s->prev->next = s->next;
	else
		f->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

/* CURLMOPT_SOCKETFUNCTION: watch s for what libcurl waits for. */
static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp,
		     void *socketp)
{
	struct failsafe *f = userp;
	struct sock *s = socketp;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s)
			sock_free(f, s);
		return 0;
	}
	if (!s) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return -1;
		s->f = f;
		s->next = f->socks;
		if (f->socks)
			f->socks->prev = s;
		f->socks = s;
		ev_init(&s->io, io_cb);
		curl_multi_assign(f->multi, fd, s);
	}
	ev_io_stop(f->loop, &s->io);
	ev_io_set(&s->io, fd, ((what & CURL_POLL_IN) ? EV_READ : 0) |
		  ((what & CURL_POLL_OUT) ? EV_WRITE : 0));
	ev_io_start(f->loop, &s->io);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: -1 stops the timer; 0 is "as soon as you can",
 * from the loop, since libcurl may not be called back from in here. */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct failsafe *f = userp;

	(void)multi;
	ev_timer_stop(f->loop, &f->timeout);
	if (timeout_ms >= 0) {
		ev_timer_set(&f->timeout, (double)timeout_ms / 1000.0, 0.0);
		ev_timer_start(f->loop, &f->timeout);
	}
	return 0;
}

/* ---- answers ------------------------------------------------------------ */

/* The body is capped: past FAILSAFE_BODY_MAX the transfer fails. */
static size_t write_cb(char *data, size_t size, size_t n, void *arg)
{
	struct request *q = arg;
	size_t len = size * n;

	if (len > FAILSAFE_BODY_MAX - q->len) {
		q->body_too_big = true;
		return 0;
	}
	memcpy(q->body + q->len, data, len);
	q->len += len;
	return len;
}

static size_t header_cb(char *data, size_t size, size_t n, void *arg)
{
	struct request *q = arg;
	size_t len = size * n;

	(void)data;
	q->header_bytes += len;
	if (q->header_bytes > FAILSAFE_HEADERS_MAX) {
		q->headers_too_big = true;
		return 0;
	}
	return len;
}

/* A peer's reason, printable and short: it ends up in a log line. */
static void copy_reason(char *out, size_t outlen, const char *reason)
{
	size_t i;

	for (i = 0; reason && reason[i] && i < FAILSAFE_REASON_MAX && i + 1 < outlen; i++)
		out[i] = (unsigned char)reason[i] < ' ' || reason[i] == 0x7f ? '?' : reason[i];
	out[i] = '\0';
}

/* A complete HTTP answer: 200 {"ok": true} agrees to a claim, 200
 * {"running": false} is "not running"; anything else is no answer. */
static enum answer parse_answer(struct request *q, long code, char *why, size_t len)
{
	json_t *doc, *v;
	enum answer a = ANSWER_NONE;
	char reason[FAILSAFE_REASON_MAX + 1] = "";

	q->body[q->len] = '\0';
	doc = json_loadb(q->body, q->len, 0, NULL);
	if (q->round->kind == ROUND_CLAIM) {
		v = json_object_get(doc, "ok");
		if (code == 200 && json_is_true(v))
			a = ANSWER_AGREE;
		copy_reason(reason, sizeof(reason),
			    json_string_value(json_object_get(doc, "reason")));
	} else {
		v = json_object_get(doc, "running");
		if (code == 200 && json_is_boolean(v))
			a = json_is_true(v) ? ANSWER_RUNNING : ANSWER_NOT_RUNNING;
	}
	if (a == ANSWER_RUNNING)
		snprintf(why, len, "running");
	else if (a == ANSWER_NONE && code == 401)
		snprintf(why, len, "401 wrong or missing secret");
	else if (a == ANSWER_NONE)
		snprintf(why, len, "%ld %s", code, *reason ? reason : doc ?
			 "unexpected answer" : "not a JSON answer");
	json_decref(doc);
	return a;
}

static enum answer classify(struct request *q, CURLcode rc, char *why, size_t len)
{
	long code = 0, os_errno = 0;

	if (rc == CURLE_OK) {
		curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
		return parse_answer(q, code, why, len);
	}
	curl_easy_getinfo(q->easy, CURLINFO_OS_ERRNO, &os_errno);
	/* Nothing listens there: no pgleader, so no command either (its
	 * command dies with it). */
	if (rc == CURLE_COULDNT_CONNECT && os_errno == ECONNREFUSED) {
		snprintf(why, len, "connection refused");
		return q->round->kind == ROUND_CHECK ? ANSWER_NOT_RUNNING : ANSWER_NONE;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT)
		snprintf(why, len, "no answer within %ldms", q->round->f->timeout_ms);
	else if (q->headers_too_big)
		snprintf(why, len, "headers larger than %zu bytes", FAILSAFE_HEADERS_MAX);
	else if (q->body_too_big || rc == CURLE_FILESIZE_EXCEEDED)
		snprintf(why, len, "answer larger than %d bytes", FAILSAFE_BODY_MAX);
	else
		snprintf(why, len, "%s", curl_easy_strerror(rc));
	return ANSWER_NONE;
}

static void add_detail(struct round *r, const struct peer *p, const char *why)
{
	size_t used = strlen(r->detail);

	snprintf(r->detail + used, sizeof(r->detail) - used, "%s%s: %s",
		 used ? "; " : "", p->node_id, why);
}

static void record(struct round *r, const struct peer *p, enum answer a,
		   const char *why)
{
	switch (a) {
	case ANSWER_AGREE:
		r->agree++;
		return;
	case ANSWER_NOT_RUNNING:
		return;
	case ANSWER_RUNNING:
		r->running = true;
		break;
	case ANSWER_NONE:
		r->silent = true;
		break;
	}
	add_detail(r, p, why);
}

static void round_step(struct round *r)
{
	if (--r->pending == 0)
		ev_timer_start(r->f->loop, &r->f->deliver);
}

static void request_done(struct request *q, CURLcode rc)
{
	char why[FAILSAFE_REASON_MAX + 64];
	enum answer a = classify(q, rc, why, sizeof(why));

	curl_multi_remove_handle(q->round->f->multi, q->easy);
	curl_easy_cleanup(q->easy);
	q->easy = NULL;
	record(q->round, q->peer, a, why);
	round_step(q->round);
}

/* The transfers libcurl has finished. */
static void collect(struct failsafe *f)
{
	CURLMsg *m;
	int left;
	char *q;

	while ((m = curl_multi_info_read(f->multi, &left)))
		if (m->msg == CURLMSG_DONE &&
		    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &q) == CURLE_OK)
			request_done((struct request *)q, m->data.result);
}

/* ---- rounds ------------------------------------------------------------- */

static void round_cancel(struct round *r)
{
	for (size_t i = 0; i < r->f->n_peers; i++)
		if (r->reqs[i].easy) {
			curl_multi_remove_handle(r->f->multi, r->reqs[i].easy);
			curl_easy_cleanup(r->reqs[i].easy);
			r->reqs[i].easy = NULL;
		}
	r->pending = 0;
	r->active = false;
}

static int request_options(struct request *q, CURL *e, const char *body)
{
	struct failsafe *f = q->round->f;
	int rc = CURLE_OK;

	rc |= curl_easy_setopt(e, CURLOPT_URL, q->peer->url);
	rc |= curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)q);
	rc |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, f->headers);
	rc |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, f->timeout_ms);
	rc |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, f->timeout_ms);
	/* No signals (SIGALRM for name look-ups), no proxy from the
	 * environment, a fresh connection each time (a refused one tells that
	 * the member is gone), plain HTTP only, no redirects, bounded answers. */
	rc |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_PROXY, "");
	rc |= curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	rc |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	rc |= curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	rc |= curl_easy_setopt(e, CURLOPT_MAXFILESIZE, (long)FAILSAFE_BODY_MAX);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
	rc |= curl_easy_setopt(e, CURLOPT_WRITEDATA, q);
	rc |= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
	rc |= curl_easy_setopt(e, CURLOPT_HEADERDATA, q);
	rc |= curl_easy_setopt(e, CURLOPT_USERAGENT, "pgleader/" PGLEADER_VERSION);
	if (body)
		rc |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, body);
	return rc;
}

static int request_start(struct request *q, const char *body)
{
	CURL *e = curl_easy_init();

	q->len = q->header_bytes = 0;
	q->body_too_big = q->headers_too_big = false;
	if (!e)
		return -1;
	if (request_options(q, e, body) != CURLE_OK ||
	    curl_multi_add_handle(q->round->f->multi, e) != CURLM_OK) {
		curl_easy_cleanup(e);
		return -1;
	}
	q->easy = e;
	return 0;
}

/* Every other member asked at once; a request that cannot even start
 * counts as no answer. The result is delivered from the loop, also when
 * there is nobody to ask. */
static void round_start(struct round *r, const char *body)
{
	struct failsafe *f = r->f;

	round_cancel(r);
	r->agree = 0;
	r->running = r->silent = false;
	r->detail[0] = '\0';
	r->active = true;
	r->pending = 1; /* held until every request is out */
	for (size_t i = 0; i < f->n_peers; i++)
		if (body == NULL && r->kind == ROUND_CLAIM) {
			record(r, r->reqs[i].peer, ANSWER_NONE, "out of memory");
		} else if (request_start(&r->reqs[i], body) < 0) {
			record(r, r->reqs[i].peer, ANSWER_NONE, "cannot start a request");
		} else {
			r->pending++;
		}
	round_step(r);
}

/* One result a turn of the loop: a callback may free f. */
static void deliver_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct failsafe *f = w->data;
	struct round *r = NULL;
	bool claim_done = f->claim.active && f->claim.pending == 0;
	bool check_done = f->check.active && f->check.pending == 0;

	(void)revents;
	if (claim_done)
		r = &f->claim;
	else if (check_done)
		r = &f->check;
	if (!r)
		return;
	if (claim_done && check_done)
		ev_timer_start(loop, w);
	r->active = false;
	snprintf(f->detail, sizeof(f->detail), "%s", r->detail);
	if (r->kind == ROUND_CLAIM)
		f->cb.round_done(f->cb.arg, r->agree, (int)f->n_peers);
	else
		f->cb.check_done(f->cb.arg, r->running ? FAILSAFE_RUNNING :
				 r->silent ? FAILSAFE_SILENT : FAILSAFE_CLEAR);
}

static char *claim_body(const struct failsafe *f, uint64_t fencing_token)
{
	char token[24];
	json_t *doc;
	char *body;

	snprintf(token, sizeof(token), "%" PRIu64, fencing_token);
	doc = json_pack("{s:s, s:s, s:s}", "node_id", f->node_id,
			"fencing_token", token, "members", f->hash);
	body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return body;
}

void failsafe_claim(struct failsafe *f, uint64_t fencing_token)
{
	char *body = claim_body(f, fencing_token);

	round_start(&f->claim, body);
	free(body);
}

void failsafe_check(struct failsafe *f)
{
	round_start(&f->check, NULL);
}

/* ---- life cycle --------------------------------------------------------- */

static int init_round(struct failsafe *f, struct round *r, enum round_kind kind)
{
	r->f = f;
	r->kind = kind;
	r->reqs = calloc(f->n_peers ? f->n_peers : 1, sizeof(*r->reqs));
	if (!r->reqs)
		return -1;
	for (size_t i = 0; i < f->n_peers; i++) {
		r->reqs[i].round = r;
		r->reqs[i].peer = &f->peers[i];
	}
	return 0;
}

static int init_headers(struct failsafe *f)
{
	/* No "Expect: 100-continue" round trip before a body. */
	static const char *const fixed[] = { "Content-Type: application/json",
					     "Accept: application/json", "Expect:" };
	char *auth;

	if (asprintf(&auth, "Authorization: " BEARER "%s", f->secret) < 0)
		return -1;
	f->headers = curl_slist_append(NULL, auth);
	burn(auth);
	for (size_t i = 0; f->headers && i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!curl_slist_append(f->headers, fixed[i]))
			return -1;
	return f->headers ? 0 : -1;
}

static int init_curl(struct failsafe *f)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return -1;
	f->curl_inited = true;
	if ((f->multi = curl_multi_init()) == NULL)
		return -1;
	curl_multi_setopt(f->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(f->multi, CURLMOPT_SOCKETDATA, f);
	curl_multi_setopt(f->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(f->multi, CURLMOPT_TIMERDATA, f);
	return 0;
}

struct failsafe *failsafe_new(struct ev_loop *loop, const struct config *cfg,
			      const struct failsafe_callbacks *cb,
			      char *err, size_t errlen)
{
	struct failsafe *f = calloc(1, sizeof(*f));

	if (!f) {
		snprintf(err, errlen, "cannot start failsafe: out of memory");
		return NULL;
	}
	f->loop = loop;
	f->cb = *cb;
	f->timeout_ms = (long)cfg->ping_timeout_ms;
	ev_init(&f->timeout, timeout_cb);
	ev_timer_init(&f->deliver, deliver_cb, 0.0, 0.0);
	f->timeout.data = f->deliver.data = f;
	if (!cfg->failsafe_secret_file) {
		snprintf(err, errlen, "failsafe needs failsafe_secret_file");
		failsafe_free(f);
		return NULL;
	}
	if ((f->secret = read_secret(cfg->failsafe_secret_file, err, errlen)) == NULL) {
		failsafe_free(f);
		return NULL;
	}
	if ((f->node_id = strdup(cfg->node_id ? cfg->node_id : "")) == NULL ||
	    keep_others(f, cfg) < 0 || members_hash(cfg, f->hash) < 0 ||
	    init_round(f, &f->claim, ROUND_CLAIM) < 0 ||
	    init_round(f, &f->check, ROUND_CHECK) < 0 ||
	    init_headers(f) < 0 || init_curl(f) < 0) {
		snprintf(err, errlen, "cannot start failsafe: out of memory");
		failsafe_free(f);
		return NULL;
	}
	return f;
}

static void free_headers(struct curl_slist *l)
{
	for (struct curl_slist *i = l; i; i = i->next)
		explicit_bzero(i->data, strlen(i->data));
	curl_slist_free_all(l);
}

void failsafe_free(struct failsafe *f)
{
	if (!f)
		return;
	if (f->claim.reqs)
		round_cancel(&f->claim);
	if (f->check.reqs)
		round_cancel(&f->check);
	if (f->multi)
		curl_multi_cleanup(f->multi);
	while (f->socks)
		sock_free(f, f->socks);
	ev_timer_stop(f->loop, &f->timeout);
	ev_timer_stop(f->loop, &f->deliver);
	if (f->curl_inited)
		curl_global_cleanup();
	free(f->claim.reqs);
	free(f->check.reqs);
	free_headers(f->headers);
	free_peers(f);
	free(f->node_id);
	burn(f->secret);
	free(f);
}

const char *failsafe_detail(const struct failsafe *f)
{
	return f->detail;
}

const char *failsafe_members_hash(const struct failsafe *f)
{
	return f->hash;
}
