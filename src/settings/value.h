/* value.h: the syntax of setting values: durations, lock keys, commands. */
#ifndef PGLEADER_VALUE_H
#define PGLEADER_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parsers return 0, or -1 with *out untouched. */

/* "250ms", "5s", "2m", "1h", "0"; a bare number is seconds. */
int value_parse_duration(const char *s, int64_t *ms);
/* In the largest of h, m and s that divides ms, else in ms below a second
 * and decimal seconds above: "2m", "90s", "250ms", "126.25s"; "0"; "none"
 * when negative. Returns buf. */
const char *value_format_duration(int64_t ms, char *buf, size_t len);

/* A size in bytes: digits and a unit, B (or none), K or KiB, M or MiB,
 * G or GiB (powers of 1024): "4KiB", "512", "1M". At most 2^62 bytes. */
int value_parse_size(const char *s, int64_t *bytes);

/* Signed 64-bit decimal: digits, with a '-' before them or not. */
int value_parse_int(const char *s, int64_t *n);
/* true/yes/on/1 or false/no/off/0, in any case. */
int value_parse_bool(const char *s, bool *value);
/* Signed 64-bit decimal, or 0x hex up to 16 digits (two's complement). */
int value_parse_lock_key(const char *s, int64_t *key);

/* Splits like a POSIX shell without expansions: blanks separate words,
 * '...' is literal, "..." honours \" \\ \$ \`, a backslash quotes the next
 * character. Returns a malloc'd NULL-terminated argv, or NULL with err. */
char **value_split_command(const char *s, char *err, size_t errlen);
/* The first shell syntax in a command line as value_split_command reads
 * it: | > < ; & ` or $( outside quotes, ` or $( inside "...", where a
 * shell would run them and the split passes them on as plain characters.
 * A pointer into s, or NULL when there is none. */
const char *value_shell_syntax(const char *s);
/* Frees such an argv; NULL is fine. */
void value_free_words(char **words);

/* HOST:PORT, as an address to listen on or a peer to reach: 127.0.0.1:8008,
 * [::1]:8008, localhost:8008, or :8008 (every address; only when any_host).
 * host gets the name or address without brackets ("" for every address),
 * port the decimal port, 1 to 65535. Returns 0, or -1 with why. */
#define VALUE_HOST_MAX 256 /* a DNS name is at most 253 characters */
#define VALUE_PORT_MAX 6
int value_parse_host_port(const char *s, bool any_host, char *host, char *port,
			  char *why, size_t whylen);

/* The first n bytes of s at most, for a message: control and non-ASCII
 * bytes shown as '?', so that input cannot move the cursor, ring the bell
 * or split the line; cut to len - 1. Returns buf. */
const char *value_printable(const char *s, size_t n, char *buf, size_t len);

/* A file's path for a message: as value_printable, and one of
 * VALUE_PATH_SHOWN bytes or more shortened in the middle ("/etc/...x.conf"),
 * so that the reason after it is never cut off the line. len must be at
 * least VALUE_PATH_SHOWN, else it is only value_printable. Returns buf. */
#define VALUE_PATH_SHOWN 200
const char *value_path_shown(const char *path, char *buf, size_t len);

/* Whether s is valid UTF-8 (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF): what PostgreSQL takes as text in a UTF-8
 * database, and what a lock name must be to hash the same everywhere. */
bool value_is_utf8(const char *s);

/* The edit distance of a and b (insertions, deletions, substitutions and
 * swaps of two neighbours, each 1: "lcok_key" is 1 from "lock_key"), or
 * limit + 1 when it is more than limit; bytes, case-sensitive. */
size_t value_edit_distance(const char *a, const char *b, size_t limit);
/* Whether a typed name is near enough to a known one to suggest it: at
 * most 1 edit for names of up to 4 bytes, 2 up to 8, 3 beyond. */
bool value_is_near(const char *typed, const char *known);

/* Writes the reason a value is refused into why; returns -1, what the
 * checks and parsers that take a why return. */
int value_why(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* s in double quotes for a one-line message: cut after 40 characters with
 * "...", control and non-ASCII bytes shown as '?'. len: 48 holds the
 * longest. Returns buf. */
const char *value_quote(const char *s, char *buf, size_t len);

#endif
