/* output.c: a run's stdout and stderr, read from a pipe on the loop, a
 * line at a time to the log, the last bytes kept for the ledger. */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Read at most this much per wakeup: a run that floods waits on the full
 * pipe (its write blocks) while the loop serves pings and timers between
 * two reads; pgleader's memory holds one chunk, one line and the tail. */
#define CHUNK 65536
/* What output_finish still reads from a pipe whose run is gone: a pipe's
 * worth (64 KiB on Linux) and a little, never a writer that goes on. */
#define DRAIN_MAX (256 * 1024)

struct output {
	struct ev_loop *loop;
	const char *job;
	ev_io watcher;
	int read_fd, write_fd;   /* -1 when closed */
	bool captured;           /* this run's output went through the pipe */
	char line[OUTPUT_LINE_MAX + 1];
	size_t line_len;
	char last[OUTPUT_LINE_MAX + 1]; /* the last line that was not blank */
	/* the tail: a ring of tail_cap bytes, of which tail_len are held,
	 * the oldest at tail_start */
	char *ring;
	size_t tail_cap, tail_len, tail_start;
	char *flat;              /* output_tail's copy, in order */
};

/* A line's bytes for the log: a NUL would end the C string, so it is
 * written as the \x00 the log writes for the other control bytes. */
static void emit_line(struct output *o)
{
	char text[4 * OUTPUT_LINE_MAX + 1];
	size_t n = 0;
	bool blank = true;

	for (size_t i = 0; i < o->line_len; i++) {
		if (o->line[i] == '\0') {
			memcpy(text + n, "\\x00", 4);
			n += 4;
		} else {
			text[n++] = o->line[i];
		}
		blank &= o->line[i] == ' ' || o->line[i] == '\t' || o->line[i] == '\r';
	}
	text[n] = '\0';
	/* "\r\n" ends a line as "\n" does */
	if (n > 0 && text[n - 1] == '\r')
		text[--n] = '\0';
	log_event(LOG_LEVEL_INFO, &(struct log_fields){ .job = o->job }, "%s", text);
	if (!blank)
		memcpy(o->last, text, n + 1 <= sizeof(o->last) ? n + 1 : sizeof(o->last));
	o->last[sizeof(o->last) - 1] = '\0';
	o->line_len = 0;
}

static void keep_tail(struct output *o, const char *buf, size_t n)
{
	if (!o->ring || o->tail_cap == 0)
		return;
	if (n >= o->tail_cap) {
		memcpy(o->ring, buf + n - o->tail_cap, o->tail_cap);
		o->tail_start = 0;
		o->tail_len = o->tail_cap;
		return;
	}
	/* Appended at the end, in up to two pieces; what overflows was the
	 * oldest, from tail_start on. */
	while (n > 0) {
		size_t end = (o->tail_start + o->tail_len) % o->tail_cap;
		size_t piece = n < o->tail_cap - end ? n : o->tail_cap - end;

		memcpy(o->ring + end, buf, piece);
		buf += piece;
		n -= piece;
		o->tail_len += piece;
		if (o->tail_len > o->tail_cap) {
			o->tail_start = (o->tail_start + o->tail_len - o->tail_cap) % o->tail_cap;
			o->tail_len = o->tail_cap;
		}
	}
}

/* Lines out of buf; a piece of OUTPUT_LINE_MAX bytes without a newline
 * is logged as a line of its own. */
static void take(struct output *o, const char *buf, size_t n)
{
	keep_tail(o, buf, n);
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n') {
			emit_line(o);
			continue;
		}
		o->line[o->line_len++] = buf[i];
		if (o->line_len == OUTPUT_LINE_MAX)
			emit_line(o);
	}
}

/* One read; returns what read returned (0: end of file, -1: errno). */
static ssize_t read_once(struct output *o, char *buf)
{
	ssize_t n;

	do
		n = read(o->read_fd, buf, CHUNK);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		take(o, buf, (size_t)n);
	return n;
}

static void close_reader(struct output *o)
{
	if (o->read_fd < 0)
		return;
	ev_io_stop(o->loop, &o->watcher);
	close(o->read_fd);
	o->read_fd = -1;
}

static void readable_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct output *o = w->data;
	static char buf[CHUNK];
	ssize_t n;

	(void)loop;
	(void)revents;
	n = read_once(o, buf);
	/* End of file: every writer is gone; the rest waits for the run's end. */
	if (n == 0 || (n < 0 && errno != EAGAIN))
		ev_io_stop(o->loop, &o->watcher);
}

struct output *output_new(struct ev_loop *loop, const char *job, size_t tail_bytes)
{
	struct output *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->loop = loop;
	o->job = job;
	o->read_fd = o->write_fd = -1;
	o->tail_cap = tail_bytes;
	if (tail_bytes > 0 && !(o->ring = malloc(tail_bytes))) {
		free(o);
		return NULL;
	}
	ev_io_init(&o->watcher, readable_cb, -1, EV_READ);
	o->watcher.data = o;
	/* The pings and the timers first: output waits in its pipe. */
	ev_set_priority(&o->watcher, EV_MINPRI);
	return o;
}

void output_free(struct output *o)
{
	if (!o)
		return;
	close_reader(o);
	if (o->write_fd >= 0)
		close(o->write_fd);
	free(o->ring);
	free(o->flat);
	free(o);
}

int output_open(struct output *o)
{
	int fds[2];

	close_reader(o);
	o->captured = false;
	o->line_len = o->tail_len = o->tail_start = 0;
	o->last[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	/* pgleader's end must never block the loop; the command's blocks. */
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	o->read_fd = fds[0];
	o->write_fd = fds[1];
	o->captured = true;
	ev_io_set(&o->watcher, o->read_fd, EV_READ);
	ev_io_start(o->loop, &o->watcher);
	return o->write_fd;
}

void output_started(struct output *o)
{
	if (o->write_fd >= 0)
		close(o->write_fd);
	o->write_fd = -1;
}

void output_finish(struct output *o)
{
	static char buf[CHUNK];
	size_t drained = 0;
	ssize_t n = 1;

	output_started(o);
	while (o->read_fd >= 0 && drained < DRAIN_MAX && n > 0) {
		n = read_once(o, buf);
		drained += n > 0 ? (size_t)n : 0;
	}
	if (o->line_len > 0)
		emit_line(o); /* a last line without a newline */
	close_reader(o);
}

int output_captured(const struct output *o)
{
	return o->captured;
}

const char *output_tail(struct output *o, size_t *len)
{
	size_t first;

	*len = 0;
	if (!o->captured)
		return NULL;
	free(o->flat);
	if (!(o->flat = malloc(o->tail_len + 1)))
		return NULL;
	first = o->tail_cap - o->tail_start < o->tail_len ? o->tail_cap - o->tail_start
							   : o->tail_len;
	if (o->tail_len > 0) {
		memcpy(o->flat, o->ring + o->tail_start, first);
		memcpy(o->flat + first, o->ring, o->tail_len - first);
	}
	*len = o->tail_len;
	return o->flat;
}

const char *output_last_line(const struct output *o)
{
	return o->last;
}
