/* inifile.h: reads an INI file of one main section, and of further
 * sections whose names share a prefix, through inih, bounded in size, line
 * by line, with file:line messages. */
#ifndef PGLEADER_INIFILE_H
#define PGLEADER_INIFILE_H

#include <stddef.h>

/* A larger file is refused, never read whole. */
#define INIFILE_MAX (1024 * 1024)

/* The longest line, in characters without its line end: a command line's
 * single argument may be as long on Linux (MAX_ARG_STRLEN). An inih
 * without Debian's run-time settings keeps its own 199. */
#define INIFILE_LINE_MAX (128 * 1024)

/* What to read. Callbacks return 0 to go on, or -1 to stop, having
 * written the message themselves. */
struct inifile_spec {
	const char *section;      /* the main section */
	const char *prefix;       /* further sections [PREFIX...]; NULL: none */
	const char *prefix_shown; /* them in messages: "job.NAME" */
	/* Each further section's header, with its name and line. */
	int (*section_fn)(void *user, int line, const char *name);
	/* Each key, in order, with its line and its section's whole name. */
	int (*key_fn)(void *user, int line, const char *section, const char *key,
		      const char *value);
	void *user;
};

/* Only a regular file is read (a device such as /dev/zero would never end,
 * a FIFO could block for ever). Returns 0, or -1 with one line in err,
 * "PATH:LINE: why" or "PATH: why", the path shown as value_printable()
 * does. */
int inifile_read(const char *path, const struct inifile_spec *spec, char *err,
		 size_t errlen);

#endif
