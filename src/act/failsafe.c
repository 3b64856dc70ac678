/* failsafe.c: the failsafe peer protocol (DESIGN 9): claims and checks to every other member. */
#include "failsafe.h"
#include "config.h"
#include "curlev.h"
#include "fleet.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <ev.h>
#include <jansson.h>

/* Response headers one member reads from another before giving up: libcurl
 * keeps them in memory, and a hostile peer must not fill it. */
#define FAILSAFE_HEADERS_MAX ((size_t)16 * 1024)
#define FAILSAFE_DETAIL_MAX 512
#define FAILSAFE_REASON_MAX 120
#define BEARER "Bearer "

_Static_assert(FAILSAFE_SECRET_MAX == FLEET_SECRET_MAX, "one bound for the secret file");

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
	bool regained;          /* a claim that says "regained": true */
	int agree;
	bool running, silent;
	/* check: answers that named this node's member list, and another */
	unsigned same_list, other_list;
	char detail[FAILSAFE_DETAIL_MAX];
	char logged[FAILSAFE_DETAIL_MAX]; /* the last detail logged */
};

struct failsafe {
	struct ev_loop *loop;
	struct curlev *curl;
	ev_timer deliver;       /* hands results to the callbacks */
	struct failsafe_callbacks cb;
	char *secret;
	struct curl_slist *headers;
	char *node_id;
	struct peer *peers;     /* the other members */
	size_t n_peers;
	long timeout_ms;
	char hash[FLEET_HASH_LEN + 1];
	struct round claim, check;
	char detail[FAILSAFE_DETAIL_MAX];
};

/* ---- the member list ---------------------------------------------------- */

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
		p->url = fleet_peer_url(&cfg->peers[i]);
		if (!p->node_id || !p->url)
			return -1;
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

/* A check's answer names the member's list (its hash; an older pgleader
 * names none): counted as this node's or another. */
static void count_list(struct round *r, const char *members)
{
	if (members && !strcmp(members, r->f->hash))
		r->same_list++;
	else
		r->other_list++;
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
		if (a != ANSWER_NONE)
			count_list(q->round, json_string_value(json_object_get(doc, "members")));
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

/* A claim is lost with the first member that does not agree: failsafe
 * cannot hold (DESIGN 9), and waiting for the other answers (a silent
 * member's takes ping_timeout) would only keep the command running beside
 * the node that refused, a new leader maybe. The regained claim's round
 * tells every member and runs to its end. */
static bool claim_lost(const struct round *r)
{
	return r->kind == ROUND_CLAIM && !r->regained && r->silent;
}

static void round_step(struct round *r)
{
	if (--r->pending == 0 || claim_lost(r))
		ev_timer_start(r->f->loop, &r->f->deliver);
}

static void request_done(struct request *q, CURLcode rc)
{
	char why[FAILSAFE_REASON_MAX + 64];
	enum answer a = classify(q, rc, why, sizeof(why));

	curl_easy_cleanup(q->easy);
	q->easy = NULL;
	record(q->round, q->peer, a, why);
	round_step(q->round);
}

/* curlev's done callback: easy is out of the multi handle. */
static void transfer_done(void *arg, CURL *easy, CURLcode result)
{
	char *q;

	(void)arg;
	if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, &q) == CURLE_OK && q)
		request_done((struct request *)q, result);
	else
		curl_easy_cleanup(easy);
}

/* ---- rounds ------------------------------------------------------------- */

static void round_cancel(struct round *r)
{
	for (size_t i = 0; i < r->f->n_peers; i++)
		if (r->reqs[i].easy) {
			curlev_remove(r->f->curl, r->reqs[i].easy);
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
	    curlev_add(q->round->f->curl, e) < 0) {
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
	r->same_list = r->other_list = 0;
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

/* Why members did not agree (claim) or did not say "not running" (check),
 * each with its answer ("b: 401 wrong or missing secret; c: 409 running the
 * command", "no answer within 400ms", "connection refused"): logged when it
 * changes, not every round. */
static void log_detail(struct round *r)
{
	if (!strcmp(r->detail, r->logged))
		return;
	if (r->kind == ROUND_CLAIM && *r->detail)
		log_warning("failsafe: members that did not agree to the claim: %s", r->detail);
	else if (*r->detail)
		log_warning("failsafe: members that did not answer \"not running\": %s",
			    r->detail);
	else
		log_info("failsafe: every member answered the %s", r->kind == ROUND_CLAIM
			 ? "claim" : "check");
	snprintf(r->logged, sizeof(r->logged), "%s", r->detail);
}

/* One result a turn of the loop: a callback may free f. */
static void deliver_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct failsafe *f = w->data;
	struct round *r = NULL;
	bool claim_done = f->claim.active && (f->claim.pending == 0 ||
					       claim_lost(&f->claim));
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
	round_cancel(r); /* a lost claim's answers still out */
	snprintf(f->detail, sizeof(f->detail), "%s", r->detail);
	log_detail(r);
	if (r->kind == ROUND_CLAIM)
		f->cb.round_done(f->cb.arg, r->agree, (int)f->n_peers);
	else
		f->cb.check_done(f->cb.arg, r->running ? FAILSAFE_RUNNING :
				 r->silent ? FAILSAFE_SILENT : FAILSAFE_CLEAR,
				 r->same_list > 0 && r->other_list == 0);
}

static char *claim_body(const struct failsafe *f, uint64_t fencing_token,
			bool regained)
{
	char token[24];
	json_t *doc;
	char *body;

	snprintf(token, sizeof(token), "%" PRIu64, fencing_token);
	doc = json_pack("{s:s, s:s, s:s}", "node_id", f->node_id,
			"fencing_token", token, "members", f->hash);
	if (doc && regained)
		json_object_set_new(doc, "regained", json_true());
	body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	return body;
}

void failsafe_claim(struct failsafe *f, uint64_t fencing_token)
{
	char *body = claim_body(f, fencing_token, false);

	f->claim.regained = false;
	round_start(&f->claim, body);
	free(body);
}

void failsafe_regained(struct failsafe *f, uint64_t fencing_token)
{
	char *body = claim_body(f, fencing_token, true);

	f->claim.regained = true;
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
	fleet_burn(auth);
	for (size_t i = 0; f->headers && i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!curl_slist_append(f->headers, fixed[i]))
			return -1;
	return f->headers ? 0 : -1;
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
	ev_timer_init(&f->deliver, deliver_cb, 0.0, 0.0);
	f->deliver.data = f;
	if (!cfg->failsafe_secret_file) {
		snprintf(err, errlen, "failsafe needs failsafe_secret_file");
		failsafe_free(f);
		return NULL;
	}
	if ((f->secret = fleet_read_secret(cfg->failsafe_secret_file, err, errlen)) == NULL) {
		failsafe_free(f);
		return NULL;
	}
	if ((f->node_id = strdup(cfg->node_id ? cfg->node_id : "")) == NULL ||
	    keep_others(f, cfg) < 0 || fleet_members_hash(cfg->peers, cfg->n_peers, f->hash) < 0 ||
	    init_round(f, &f->claim, ROUND_CLAIM) < 0 ||
	    init_round(f, &f->check, ROUND_CHECK) < 0 ||
	    init_headers(f) < 0 ||
	    (f->curl = curlev_new(loop, transfer_done, f)) == NULL) {
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
	curlev_free(f->curl);
	ev_timer_stop(f->loop, &f->deliver);
	free(f->claim.reqs);
	free(f->check.reqs);
	free_headers(f->headers);
	free_peers(f);
	free(f->node_id);
	fleet_burn(f->secret);
	free(f);
}

bool failsafe_authorized(const struct failsafe *f, const char *authorization)
{
	return fleet_authorized(f->secret, authorization);
}

const char *failsafe_detail(const struct failsafe *f)
{
	return f->detail;
}

const char *failsafe_members_hash(const struct failsafe *f)
{
	return f->hash;
}

static bool is_member(const struct failsafe *f, const char *id, size_t len)
{
	if (strlen(f->node_id) == len && !strncmp(f->node_id, id, len))
		return true;
	for (size_t i = 0; i < f->n_peers; i++)
		if (strlen(f->peers[i].node_id) == len &&
		    !strncmp(f->peers[i].node_id, id, len))
			return true;
	return false;
}

const char *failsafe_stranger(const struct failsafe *f, const char *nodes,
			      char *buf, size_t len)
{
	for (const char *p = nodes; p && *p;) {
		size_t n = strcspn(p, ",");

		if (n > 0 && !is_member(f, p, n)) {
			snprintf(buf, len, "%.*s", (int)n, p);
			return buf;
		}
		p += n + (p[n] == ',');
	}
	return NULL;
}
