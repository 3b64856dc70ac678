/* inifile.h: reads an INI file of one section through inih, bounded in
 * size, line by line, with file:line messages. */
#ifndef PGLEADER_INIFILE_H
#define PGLEADER_INIFILE_H

#include <stddef.h>

/* A larger file is refused, never read whole. */
#define INIFILE_MAX (1024 * 1024)

/* Called for each key of the section, in order, with its line number:
 * returns 0 to go on, or -1 to stop, having written the message itself. */
typedef int (*inifile_key_fn)(void *user, int line, const char *key,
			      const char *value);

/* Only a regular file is read (a device such as /dev/zero would never end,
 * a FIFO could block for ever). Returns 0, or -1 with one line in err,
 * "PATH:LINE: why" or "PATH: why", the path shown as value_printable()
 * does. */
int inifile_read(const char *path, const char *section, inifile_key_fn key,
		 void *user, char *err, size_t errlen);

#endif
