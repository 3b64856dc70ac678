/* stdfd.c: opens whichever of descriptors 0, 1 and 2 is closed on /dev/null. */
#include "stdfd.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* Started with stderr closed, the first descriptor pgleader opens (say the
 * lock connection's socket) would be 2, and every log line would go into
 * the database session: the server ends it, pgleader reconnects, the next
 * line ends that one, and so on. */
static void fill(int fd)
{
	int got = open("/dev/null", (fd == STDIN_FILENO ? O_RDONLY : O_WRONLY) | O_NOCTTY);

	if (got < 0)
		got = open("/", O_PATH | O_DIRECTORY); /* takes the number; writes fail */
	/* open returns the lowest free number, which is fd when those below
	 * are open: the caller fills them in order. */
	if (got >= 0 && got != fd) {
		dup2(got, fd);
		close(got);
	}
}

void stdfd_ensure_open(void)
{
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++)
		if (fcntl(fd, F_GETFD) == -1 && errno == EBADF)
			fill(fd);
}
