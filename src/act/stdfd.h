/* stdfd.h: descriptors 0, 1 and 2 are open before pgleader opens anything else. */
#ifndef PGLEADER_STDFD_H
#define PGLEADER_STDFD_H

/* Opens each of descriptors 0, 1 and 2 that is closed on /dev/null (stdin
 * for reading, the others for writing), so that no socket or file of
 * pgleader's can get one of those numbers and receive log lines or a
 * command's output. Leaves open ones alone. Call first thing in main,
 * before anything can log or open a descriptor. Cannot fail: without
 * /dev/null a descriptor of the root directory that nothing can be
 * written to (O_PATH) takes the number instead. */
void stdfd_ensure_open(void);

#endif
