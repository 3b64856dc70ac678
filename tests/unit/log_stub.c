/* log_stub.c: the log.h functions unit tests need, without log.c. */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static void vline(enum log_level level, const char *fmt, va_list ap)
{
	fprintf(stderr, "<%d>", (int)level);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline(level, fmt, ap);
	va_end(ap);
}

void log_event(enum log_level level, const struct log_fields *f, const char *fmt, ...)
{
	va_list ap;

	(void)f;
	va_start(ap, fmt);
	vline(level, fmt, ap);
	va_end(ap);
}

char *log_redact(char *s)
{
	return s;
}
