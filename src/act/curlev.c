/* curlev.c: libcurl's multi interface on the libev loop, after curl's multi-event example. */
#include "curlev.h"

#include <stdlib.h>

#include <ev.h>

/* A socket libcurl asked us to watch. */
struct sock {
	ev_io io;
	struct curlev *c;
	struct sock *prev, *next;
};

struct curlev {
	struct ev_loop *loop;
	CURLM *multi;
	ev_timer timeout;       /* libcurl's next timeout */
	struct sock *socks;
	curlev_done_fn done;
	void *arg;
};

/* The transfers libcurl has finished, each handed over once. */
static void collect(struct curlev *c)
{
	CURLMsg *m;
	CURL *easy;
	CURLcode result;
	int left;

	while ((m = curl_multi_info_read(c->multi, &left)))
		if (m->msg == CURLMSG_DONE) {
			/* m is invalid once the handle is removed */
			easy = m->easy_handle;
			result = m->data.result;
			curl_multi_remove_handle(c->multi, easy);
			c->done(c->arg, easy, result);
		}
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct curlev *c = ((struct sock *)w)->c;
	int running, action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) |
			      ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);

	(void)loop;
	/* w may be freed inside: libcurl can drop the socket it reports on. */
	curl_multi_socket_action(c->multi, w->fd, action, &running);
	collect(c);
}

static void timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct curlev *c = w->data;
	int running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	collect(c);
}

static void sock_free(struct curlev *c, struct sock *s)
{
	ev_io_stop(c->loop, &s->io);
	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

/* CURLMOPT_SOCKETFUNCTION: watch fd for what libcurl waits for. */
static int socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp,
		     void *socketp)
{
	struct curlev *c = userp;
	struct sock *s = socketp;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s)
			sock_free(c, s);
		return 0;
	}
	if (!s) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return -1;
		s->c = c;
		s->next = c->socks;
		if (c->socks)
			c->socks->prev = s;
		c->socks = s;
		ev_init(&s->io, io_cb);
		curl_multi_assign(c->multi, fd, s);
	}
	ev_io_stop(c->loop, &s->io);
	ev_io_set(&s->io, fd, ((what & CURL_POLL_IN) ? EV_READ : 0) |
		  ((what & CURL_POLL_OUT) ? EV_WRITE : 0));
	ev_io_start(c->loop, &s->io);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: -1 stops the timer; 0 is "as soon as you can",
 * from the loop, since libcurl may not be called back from in here. */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
	struct curlev *c = userp;

	(void)multi;
	ev_timer_stop(c->loop, &c->timeout);
	if (timeout_ms >= 0) {
		ev_timer_set(&c->timeout, (double)timeout_ms / 1000.0, 0.0);
		ev_timer_start(c->loop, &c->timeout);
	}
	return 0;
}

struct curlev *curlev_new(struct ev_loop *loop, curlev_done_fn done, void *arg)
{
	struct curlev *c;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->multi = curl_multi_init()) == NULL) {
		free(c);
		curl_global_cleanup();
		return NULL;
	}
	c->loop = loop;
	c->done = done;
	c->arg = arg;
	ev_init(&c->timeout, timeout_cb);
	c->timeout.data = c;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	return c;
}

int curlev_add(struct curlev *c, CURL *easy)
{
	return curl_multi_add_handle(c->multi, easy) == CURLM_OK ? 0 : -1;
}

void curlev_remove(struct curlev *c, CURL *easy)
{
	curl_multi_remove_handle(c->multi, easy);
}

void curlev_free(struct curlev *c)
{
	if (!c)
		return;
	curl_multi_cleanup(c->multi);
	/* libcurl reports its sockets gone as it closes them; this is for any
	 * it did not */
	while (c->socks)
		sock_free(c, c->socks);
	ev_timer_stop(c->loop, &c->timeout);
	free(c);
	curl_global_cleanup();
}
