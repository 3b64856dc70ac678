/* dynlib.h: libmicrohttpd and libcurl, loaded only when the HTTP server or
 * failsafe is configured; libsystemd only under systemd. */
#ifndef PGLEADER_DYNLIB_H
#define PGLEADER_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

/* Loads the library (once) and every function pgleader calls in it; false
 * with one line in err when it is missing or lacks one. */
bool dynlib_load_mhd(char *err, size_t errlen);
bool dynlib_load_curl(char *err, size_t errlen);
bool dynlib_load_systemd(char *err, size_t errlen);

#endif
