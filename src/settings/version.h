/* version.h: what `pgleader --version` prints. */
#ifndef PGLEADER_VERSION_H
#define PGLEADER_VERSION_H

#include <stddef.h>
#include <stdio.h>

/* One line: pgleader's version (from the top-level VERSION file) and the
 * versions of libpq, libev and libmicrohttpd that it runs with, which may
 * differ from the ones it was built against. */
void version_print(FILE *out);

/* The libpq version it runs with, "15.18". */
void version_libpq(char *buf, size_t len);

#endif
