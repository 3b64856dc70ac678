/* fleet.h: the failsafe fleet's identity: its shared secret and its member list. */
#ifndef PGLEADER_FLEET_H
#define PGLEADER_FLEET_H

#include <stdbool.h>
#include <stddef.h>

struct config_peer;

#define FLEET_SECRET_MAX 4096
#define FLEET_HASH_LEN 16

/* The secret in path: a regular file of at most FLEET_SECRET_MAX bytes that
 * others can neither read nor write, one line of printable ASCII without
 * spaces, a final newline (or CRLF) not part of it, not empty. NULL with
 * one line in err, which never holds the secret. Free with fleet_burn. */
char *fleet_read_secret(const char *path, char *err, size_t errlen);

/* Zeroes and frees a string; NULL is a no-op. */
void fleet_burn(char *s);

/* Whether an Authorization header value (NULL: none) is "Bearer <secret>",
 * the scheme in any case; constant time in the secret's length. */
bool fleet_authorized(const char *secret, const char *authorization);

/* 64-bit FNV-1a over the sorted "id=host:port" entries (an IPv6 host in
 * brackets), one a line, as FLEET_HASH_LEN lower-case hex digits in out.
 * -1 when out of memory. */
int fleet_members_hash(const struct config_peer *peers, size_t n,
		       char out[FLEET_HASH_LEN + 1]);

/* "http://host:port/failsafe" (malloc()ed; NULL when out of memory), an
 * IPv6 host in brackets with its zone's "%" as "%25". */
char *fleet_peer_url(const struct config_peer *p);

#endif
