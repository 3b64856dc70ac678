/* log_stub.h: what the unit tests' log stub kept of the lines logged. */
#ifndef PGLEADER_LOG_STUB_H
#define PGLEADER_LOG_STUB_H

#include <stddef.h>

/* How many lines logged since the last reset hold needle. */
size_t log_stub_count(const char *needle);
void log_stub_reset(void);

#endif
