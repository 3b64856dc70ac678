/* inifile.c: an INI file of one main section and further sections of a
 * prefix, read whole with a size bound and handed to inih line by line,
 * with file:line messages. */
#include "inifile.h"
#include "value.h"

#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Debian's inih (libinih1 55) reads these at run time: a heap buffer of
 * ini_initial_alloc bytes in place of 200 on the stack. Weak, so that a
 * build against an inih without them links, and keeps inih's limit. */
extern int ini_max_line, ini_initial_alloc;
extern bool ini_use_stack;
#pragma weak ini_max_line
#pragma weak ini_initial_alloc
#pragma weak ini_use_stack

struct reader {
	const struct inifile_spec *spec;
	char *current; /* the section being read; NULL before the first */
	char *err;
	size_t errlen;
	bool failed;
	char *path;  /* as shown in messages */
	int line;
	char *data;  /* the whole file, NUL-terminated; lines cut in place */
	size_t size, next;
};

__attribute__((format(printf, 2, 3)))
static int fail(struct reader *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	r->failed = true;
	return -1;
}

static const char *file_kind(mode_t mode)
{
	return S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
	     : S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : "not a file";
}

static int check_type(struct reader *r, int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return fail(r, "%s: cannot read: %s", r->path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return fail(r, "%s: cannot read: %s", r->path, strerror(EISDIR));
	if (!S_ISREG(st.st_mode))
		return fail(r, "%s: not a regular file (%s)", r->path,
			    file_kind(st.st_mode));
	return 0;
}

/* Reads until the end, or until the file proves larger than INIFILE_MAX:
 * at most twice that is ever held. */
static int read_whole(struct reader *r, int fd)
{
	size_t cap = 0;
	ssize_t n = 1;

	while (n > 0 && r->size <= INIFILE_MAX) {
		if (r->size + 1 >= cap) {
			char *grown = realloc(r->data, cap = cap ? 2 * cap : 4096);

			if (!grown)
				return fail(r, "%s: out of memory", r->path);
			r->data = grown;
		}
		n = read(fd, r->data + r->size, cap - r->size - 1);
		if (n > 0)
			r->size += (size_t)n;
		else if (n < 0 && errno == EINTR)
			n = 1;
	}
	if (n < 0)
		return fail(r, "%s: cannot read: %s", r->path, strerror(errno));
	if (r->size > INIFILE_MAX)
		return fail(r, "%s: larger than %d KiB", r->path, INIFILE_MAX / 1024);
	r->data[r->size] = '\0';
	return 0;
}

/* The next line, without its line end; NULL at the end or on a NUL byte. */
static char *next_line(struct reader *r)
{
	char *line = r->data + r->next, *end;
	size_t len;

	if (r->next >= r->size)
		return NULL;
	end = memchr(line, '\n', r->size - r->next);
	len = end ? (size_t)(end - line) : r->size - r->next;
	r->next += len + (end != NULL);
	line[len] = '\0';
	r->line++;
	/* cppcheck-suppress knownConditionTrueFalse ; an empty line has len 0 */
	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	if (strlen(line) != len) {
		fail(r, "%s:%d: line holds a NUL byte", r->path, r->line);
		return NULL;
	}
	return line;
}

static int unknown_section(struct reader *r, const char *name)
{
	const struct inifile_spec *spec = r->spec;
	char shown[64];

	return fail(r, "%s:%d: unknown section [%s] (expected [%s]%s%s%s)", r->path,
		    r->line, value_printable(name, 40, shown, sizeof(shown)),
		    spec->section, spec->prefix ? " or [" : "",
		    spec->prefix ? spec->prefix_shown : "", spec->prefix ? "]" : "");
}

/* inih passes a section's name on only with the keys under it, and cut to
 * its own buffer's size: check each header as it is read, so that an empty
 * section is seen too, and keep its whole name for the keys under it. */
static int check_section(struct reader *r, char *start)
{
	const struct inifile_spec *spec = r->spec;
	char *close = strchr(start, ']'), *after, *name = start + 1;
	char shown[80];
	bool is_main;
	int result = 0;

	if (!close)
		return 0; /* inih reports the syntax error */
	after = close + 1 + strspn(close + 1, " \t");
	*close = '\0';
	is_main = strcmp(name, spec->section) == 0;
	free(r->current);
	r->current = NULL;
	if (!is_main && (!spec->prefix ||
			 strncmp(name, spec->prefix, strlen(spec->prefix)) != 0))
		result = unknown_section(r, name);
	else if (*after && *after != ';' && *after != '#')
		result = fail(r, "%s:%d: unexpected text after [%s]", r->path, r->line,
			      value_printable(name, 72, shown, sizeof(shown)));
	else if (!(r->current = strdup(name)))
		result = fail(r, "%s: out of memory", r->path);
	else if (!is_main && spec->section_fn &&
		 spec->section_fn(spec->user, r->line, name) < 0)
		result = -1;
	*close = ']';
	if (result < 0)
		r->failed = true;
	return result;
}

/* inih's own reader would cut a long line in two and parse the rest as a
 * new line; this one refuses a line longer than INIFILE_LINE_MAX (or than
 * inih's buffer), counts lines for messages and checks section names. */
static char *read_line_cb(char *buf, int size, void *stream)
{
	struct reader *r = stream;
	size_t limit = (size_t)size - 1 < INIFILE_LINE_MAX ? (size_t)size - 1
							   : INIFILE_LINE_MAX;
	char *line, *start;

	if (r->failed || !(line = next_line(r)))
		return NULL;
	if (strlen(line) > limit) {
		fail(r, "%s:%d: line is longer than %zu characters", r->path, r->line,
		     limit);
		return NULL;
	}
	start = line;
	if (r->line == 1 && strncmp(start, "\xef\xbb\xbf", 3) == 0)
		start += 3;
	/* Indented lines are plain lines: inih would glue them to the value
	 * above as a continuation, which nobody expects in a daemon's file. */
	start += strspn(start, " \t");
	if (*start == '[' && check_section(r, start) < 0)
		return NULL;
	memcpy(buf, start, strlen(start) + 1);
	return buf;
}

static int ini_handler_cb(void *user, const char *section, const char *name,
			  const char *value)
{
	struct reader *r = user;
	char shown[64];

	(void)section; /* r->current: inih's copy may be cut short */
	if (r->failed)
		return 0;
	if (!r->current) {
		fail(r, "%s:%d: key %s is outside the [%s] section", r->path, r->line,
		     value_quote(name, shown, sizeof(shown)), r->spec->section);
		return 0;
	}
	if (r->spec->key_fn(r->spec->user, r->line, r->current, name, value) < 0)
		r->failed = true;
	return !r->failed;
}

/* inih's buffer must hold the line, its line end and a NUL: the reader
 * passes on no line end, so a buffer of INIFILE_LINE_MAX + 3 lets through
 * one more than the limit, which the reader refuses. The settings are put
 * back, for any other reader in the process. */
static int parse_raised(struct reader *r)
{
	int max_line, initial_alloc, result;
	bool use_stack;

	if (!&ini_max_line || !&ini_initial_alloc || !&ini_use_stack)
		return ini_parse_stream(read_line_cb, r, ini_handler_cb, r);
	max_line = ini_max_line;
	initial_alloc = ini_initial_alloc;
	use_stack = ini_use_stack;
	ini_max_line = ini_initial_alloc = INIFILE_LINE_MAX + 3;
	ini_use_stack = false;
	result = ini_parse_stream(read_line_cb, r, ini_handler_cb, r);
	ini_max_line = max_line;
	ini_initial_alloc = initial_alloc;
	ini_use_stack = use_stack;
	return result;
}

static int parse(struct reader *r)
{
	int first_error = parse_raised(r);

	/* inih goes on after its own syntax errors, and reports only the
	 * line; ours stop the reader, so an earlier inih line came first. */
	if (first_error > 0 && (!r->failed || first_error < r->line))
		return fail(r, "%s:%d: syntax error (expected key = value or [%s])",
			    r->path, first_error, r->spec->section);
	if (first_error < 0 && !r->failed)
		return fail(r, "%s: out of memory", r->path);
	return r->failed ? -1 : 0;
}

int inifile_read(const char *path, const struct inifile_spec *spec, char *err,
		 size_t errlen)
{
	struct reader r = { .spec = spec, .err = err, .errlen = errlen };
	int fd, result;

	if (!(r.path = strdup(path))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	value_path_shown(path, r.path, strlen(path) + 1);
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0)
		result = fail(&r, "%s: cannot open: %s", r.path, strerror(errno));
	else if ((result = check_type(&r, fd)) == 0 && (result = read_whole(&r, fd)) == 0)
		result = parse(&r);
	if (fd >= 0)
		close(fd);
	free(r.data);
	free(r.path);
	free(r.current);
	return result;
}
