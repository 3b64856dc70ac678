/* fleet.c: the failsafe fleet's identity: its shared secret and its member list. */
#include "fleet.h"
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define BEARER "Bearer "

/* ---- the secret --------------------------------------------------------- */

void fleet_burn(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* The file's text, at most FLEET_SECRET_MAX bytes, from a regular file
 * (not a FIFO, a directory or a device) that others cannot read or write:
 * a secret that anyone on the machine can read protects nothing. Returns
 * the length or -1 with err. */
static ssize_t read_secret_file(const char *path, char *buf, size_t cap,
				char *err, size_t errlen)
{
	struct stat st;
	ssize_t n, total = 0;
	/* O_NONBLOCK: a FIFO or a device would block open() for ever; only a
	 * regular file gets past the fstat, and it reads the same either way. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		snprintf(err, errlen, "cannot open failsafe secret file %s: %s",
			 path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "failsafe secret file %s is not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(err, errlen, "failsafe secret file %s is open to others "
			 "(mode %04o): chmod o-rw it", path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	do {
		n = read(fd, buf + total, cap - (size_t)total);
		total += n > 0 ? n : 0;
	} while ((n > 0 && (size_t)total < cap) || (n < 0 && errno == EINTR));
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "cannot read failsafe secret file %s: %s",
			 path, strerror(errno));
		return -1;
	}
	return total;
}

/* What is wrong with the file's text, or NULL; *len loses the newline. */
static const char *secret_problem(const char *buf, size_t *len)
{
	if (*len > FLEET_SECRET_MAX)
		return "is larger than 4096 bytes";
	if (*len && buf[*len - 1] == '\n')
		(*len)--;
	if (*len && buf[*len - 1] == '\r')
		(*len)--;
	if (*len == 0)
		return "is empty";
	for (size_t i = 0; i < *len; i++)
		if (buf[i] == '\n')
			return "must hold one line";
		else if (buf[i] <= ' ' || buf[i] >= 0x7f)
			return "may hold only printable ASCII without spaces";
	return NULL;
}

/* One line of printable ASCII without spaces: it goes into an HTTP header. */
char *fleet_read_secret(const char *path, char *err, size_t errlen)
{
	char buf[FLEET_SECRET_MAX + 1];
	const char *why;
	char *secret = NULL;
	ssize_t n = read_secret_file(path, buf, sizeof(buf), err, errlen);
	size_t len = n > 0 ? (size_t)n : 0;

	if (n < 0)
		return NULL;
	if ((why = secret_problem(buf, &len)))
		snprintf(err, errlen, "failsafe secret file %s %s", path, why);
	else if ((secret = strndup(buf, len)) == NULL)
		snprintf(err, errlen, "cannot read failsafe secret file %s: out of memory", path);
	explicit_bzero(buf, sizeof(buf));
	return secret;
}

bool fleet_authorized(const char *secret, const char *authorization)
{
	const char *given = authorization;
	size_t want, got;
	volatile unsigned char diff;

	if (!given || strncasecmp(given, BEARER, strlen(BEARER)) != 0)
		return false;
	given += strlen(BEARER);
	while (*given == ' ')
		given++;
	want = strlen(secret);
	got = strlen(given);
	/* As long as the secret whatever is given: the time tells nothing of
	 * how many characters matched. */
	diff = got != want;
	for (size_t i = 0; i < want; i++)
		diff |= (unsigned char)(secret[i] ^ given[i < got ? i : 0]);
	return diff == 0;
}

/* ---- the member list ---------------------------------------------------- */

/* "id=host:port", an IPv6 host in brackets. */
static char *member_entry(const struct config_peer *p)
{
	char *s;
	bool v6 = strchr(p->host, ':') != NULL;

	if (asprintf(&s, "%s=%s%s%s:%s", p->node_id, v6 ? "[" : "", p->host,
		     v6 ? "]" : "", p->port) < 0)
		return NULL;
	return s;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* FNV-1a, 64-bit: stable everywhere, enough to tell two lists apart. */
int fleet_members_hash(const struct config_peer *peers, size_t n, char out[FLEET_HASH_LEN + 1])
{
	char **entries = calloc(n ? n : 1, sizeof(*entries));
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	int result = 0;

	if (!entries)
		return -1;
	for (size_t i = 0; i < n && result == 0; i++)
		if ((entries[i] = member_entry(&peers[i])) == NULL)
			result = -1;
	if (result == 0) {
		qsort(entries, n, sizeof(*entries), compare_entries);
		for (size_t i = 0; i < n; i++)
			for (const char *c = entries[i];; c++) {
				h = (h ^ (unsigned char)(*c ? *c : '\n')) *
				    UINT64_C(0x100000001b3);
				if (!*c)
					break;
			}
		snprintf(out, FLEET_HASH_LEN + 1, "%016" PRIx64, h);
	}
	for (size_t i = 0; i < n; i++)
		free(entries[i]);
	free(entries);
	return result;
}

/* A zone in an IPv6 address ("fe80::1%eth0") is "%25" in a URL. */
char *fleet_peer_url(const struct config_peer *p)
{
	char host[256 * 3], *s;
	size_t j = 0;
	bool v6 = strchr(p->host, ':') != NULL;

	for (const char *c = p->host; *c && j + 4 < sizeof(host); c++)
		if (*c == '%' && v6) {
			memcpy(host + j, "%25", 3);
			j += 3;
		} else {
			host[j++] = *c;
		}
	host[j] = '\0';
	if (asprintf(&s, "http://%s%s%s:%s/failsafe", v6 ? "[" : "", host,
		     v6 ? "]" : "", p->port) < 0)
		return NULL;
	return s;
}
