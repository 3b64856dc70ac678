/* version.c: pgleader's version and the library versions it runs with. */
#include <stdio.h>
#include <ev.h>
#include <libpq-fe.h>
#include <microhttpd.h>

#include "version.h"

#ifndef PGLEADER_VERSION
#error "PGLEADER_VERSION comes from the VERSION file, through the Makefile"
#endif

/* PQlibVersion() is major*10000+minor since PostgreSQL 10, and
 * major*10000+minor*100+patch before: 150018 is 15.18, 90624 is 9.6.24. */
void version_libpq(char *buf, size_t len)
{
	int v = PQlibVersion();

	if (v >= 100000)
		snprintf(buf, len, "%d.%d", v / 10000, v % 10000);
	else
		snprintf(buf, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

void version_print(FILE *out)
{
	const char *mhd = MHD_get_version();
	char libpq[32];

	version_libpq(libpq, sizeof(libpq));
	fprintf(out, "pgleader %s (libpq %s, libev %d.%d, libmicrohttpd %s)\n",
		PGLEADER_VERSION, libpq, ev_version_major(), ev_version_minor(),
		mhd ? mhd : "unknown");
}
