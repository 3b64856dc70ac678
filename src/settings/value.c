/* value.c: setting values as text: durations, numbers, lock keys, commands. */
#include "value.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DURATION_MS (INT64_C(30) * 24 * 60 * 60 * 1000)

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int value_parse_duration(const char *s, int64_t *ms)
{
	static const struct { const char *suffix; int64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "", 1000 }, { "m", 60000 },
		{ "h", 3600000 },
	};
	int64_t whole = 0, fraction = 0, scale = 1, unit = 0;

	if (!is_digit(*s))
		return -1; /* also rejects "", "-5s", " 5s" and ".5s" */
	for (; is_digit(*s); s++) {
		if (whole > MAX_DURATION_MS)
			return -1; /* keeps the arithmetic below in range */
		whole = whole * 10 + (*s - '0');
	}
	if (*s == '.') {
		if (!is_digit(*++s))
			return -1;
		for (; is_digit(*s); s++) {
			if (scale == 1000000000)
				return -1;
			fraction = fraction * 10 + (*s - '0');
			scale *= 10;
		}
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s, units[i].suffix) == 0)
			unit = units[i].ms;
	if (unit == 0 || whole > MAX_DURATION_MS / unit)
		return -1;
	/* Timers run in whole milliseconds: "1.0005s" would be a lie. */
	if (fraction * unit % scale != 0)
		return -1;
	whole = whole * unit + fraction * unit / scale;
	if (whole > MAX_DURATION_MS)
		return -1;
	*ms = whole;
	return 0;
}

const char *value_format_duration(int64_t ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "none");
	else if (ms == 0)
		snprintf(buf, len, "0");
	else if (ms % 3600000 == 0)
		snprintf(buf, len, "%lldh", (long long)(ms / 3600000));
	else if (ms % 60000 == 0)
		snprintf(buf, len, "%lldm", (long long)(ms / 60000));
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%llds", (long long)(ms / 1000));
	else if (ms < 1000)
		snprintf(buf, len, "%lldms", (long long)ms);
	else {
		int n = snprintf(buf, len, "%lld.%03lld", (long long)(ms / 1000),
				 (long long)(ms % 1000));
		while (n > 0 && buf[n - 1] == '0')
			buf[--n] = '\0';
		snprintf(buf + n, len - (size_t)n, "s");
	}
	return buf;
}

int value_parse_size(const char *s, int64_t *bytes)
{
	static const struct { const char *suffix; int64_t scale; } units[] = {
		{ "", 1 }, { "B", 1 }, { "K", 1024 }, { "KiB", 1024 },
		{ "M", 1024 * 1024 }, { "MiB", 1024 * 1024 },
		{ "G", 1024 * 1024 * 1024 }, { "GiB", 1024 * 1024 * 1024 },
	};
	const int64_t max = INT64_C(1) << 62;
	int64_t whole = 0;

	if (!is_digit(*s))
		return -1; /* also rejects "", "-1" and " 1" */
	for (; is_digit(*s); s++) {
		if (whole > max / 10)
			return -1;
		whole = whole * 10 + (*s - '0');
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(s, units[i].suffix) == 0)
			return whole > max / units[i].scale ? -1
			       : (*bytes = whole * units[i].scale, 0);
	return -1;
}

int value_parse_int(const char *s, int64_t *n)
{
	char *end;
	long long value;

	if (!is_digit(s[0]) && !(s[0] == '-' && is_digit(s[1])))
		return -1; /* strtoll would skip blanks and take '+' */
	errno = 0;
	value = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*n = value;
	return 0;
}

int value_parse_bool(const char *s, bool *value)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *value = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *value = false, 0;
	}
	return -1;
}

int value_parse_lock_key(const char *s, int64_t *key)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		size_t digits = strspn(s + 2, "0123456789abcdefABCDEF");

		if (digits == 0 || digits > 16 || s[2 + digits] != '\0')
			return -1;
		/* Two's complement, as PostgreSQL prints a bigint from hex. */
		*key = (int64_t)strtoull(s + 2, NULL, 16);
		return 0;
	}
	return value_parse_int(s, key);
}

static int push_word(char ***argv, size_t *argc, const char *word, size_t len)
{
	char **grown = realloc(*argv, (*argc + 2) * sizeof(char *));

	if (!grown)
		return -1;
	*argv = grown;
	if (!(grown[*argc] = strndup(word, len)))
		return -1;
	grown[++*argc] = NULL;
	return 0;
}

void value_free_words(char **words)
{
	for (size_t i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

/* A command line being split: the word under way and the words so far. */
struct split {
	const char *s;  /* the next character to read */
	char *word;     /* never longer than the line */
	size_t len;
	bool in_word;   /* "" is a word, so len alone cannot tell */
	char **argv;
	size_t argc;
};

static const char *end_word(struct split *sp)
{
	if (sp->in_word && push_word(&sp->argv, &sp->argc, sp->word, sp->len) < 0)
		return "out of memory";
	sp->in_word = false;
	sp->len = 0;
	return NULL;
}

/* After an opening quote '\'': everything up to the next one, as it is. */
static const char *single_quoted(struct split *sp)
{
	const char *close = strchr(sp->s, '\'');

	if (!close)
		return "unterminated single quote";
	memcpy(sp->word + sp->len, sp->s, (size_t)(close - sp->s));
	sp->len += (size_t)(close - sp->s);
	sp->s = close + 1;
	return NULL;
}

/* After an opening '"': a backslash quotes only " \ $ ` and a newline
 * (which then goes, as a line continuation); other backslashes stay. */
static const char *double_quoted(struct split *sp)
{
	for (;;) {
		char c = *sp->s;

		if (!c)
			return "unterminated double quote";
		sp->s++;
		if (c == '"')
			return NULL;
		if (c == '\\' && *sp->s && strchr("\"\\$`\n", *sp->s)) {
			c = *sp->s++;
			if (c == '\n')
				continue;
		}
		sp->word[sp->len++] = c;
	}
}

/* One character outside quotes, or one quoted run. */
static const char *split_step(struct split *sp)
{
	char c = *sp->s++;

	if (c == '\\' && *sp->s == '\n') {
		sp->s++; /* a line continuation, as in sh */
		return NULL;
	}
	if (c == ' ' || c == '\t' || c == '\n')
		return end_word(sp);
	sp->in_word = true;
	if (c == '\'')
		return single_quoted(sp);
	if (c == '"')
		return double_quoted(sp);
	if (c == '\\' && *sp->s)
		c = *sp->s++;
	sp->word[sp->len++] = c; /* also a trailing backslash, as sh does */
	return NULL;
}

char **value_split_command(const char *s, char *err, size_t errlen)
{
	struct split sp = { .s = s, .word = malloc(strlen(s) + 1) };
	const char *problem = sp.word ? NULL : "out of memory";

	while (!problem && *sp.s)
		problem = split_step(&sp);
	if (!problem)
		problem = end_word(&sp);
	free(sp.word);
	if (!problem && sp.argc == 0)
		problem = "empty command";
	if (problem) {
		snprintf(err, errlen, "%s", problem);
		value_free_words(sp.argv);
		return NULL;
	}
	return sp.argv;
}

static bool is_alnum(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A DNS name: dot-separated labels of 1 to 63 letters, digits and hyphens,
 * a hyphen never first or last in its label. */
static bool is_host_name(const char *s, size_t n)
{
	size_t label = 0;

	for (size_t i = 0; i < n; i++) {
		bool dot = s[i] == '.';

		if (dot ? label == 0 || s[i - 1] == '-'
			: !is_alnum(s[i]) && (s[i] != '-' || label == 0))
			return false;
		label = dot ? 0 : label + 1;
		if (label > 63)
			return false;
	}
	return label > 0 && s[n - 1] != '-';
}

/* An IPv4 or IPv6 address as inet_pton reads it, or a DNS name that does
 * not look like a broken address (all digits and dots). */
static bool is_host(const char *s, size_t n, bool bracketed)
{
	char copy[VALUE_HOST_MAX];
	unsigned char addr[16];

	if (n == 0 || n > 253) /* DNS's longest name; fits copy */
		return false;
	memcpy(copy, s, n);
	copy[n] = '\0';
	if (bracketed)
		return inet_pton(AF_INET6, copy, addr) == 1;
	if (strspn(copy, "0123456789.") == n)
		return inet_pton(AF_INET, copy, addr) == 1;
	return is_host_name(copy, n);
}

static bool is_port(const char *s, int64_t *number)
{
	return strlen(s) < VALUE_PORT_MAX && is_digit(*s) &&
	       value_parse_int(s, number) == 0 && *number >= 1 && *number <= 65535;
}

int value_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -1;
}

int value_parse_host_port(const char *s, bool any_host, char *host, char *port,
			  char *why, size_t whylen)
{
	bool bracketed = s[0] == '[';
	const char *colon = strrchr(s, ':');
	const char *start = s + bracketed, *end = colon;
	int64_t number;

	if (!colon)
		return value_why(why, whylen, "no :PORT");
	if (bracketed && (colon == s || colon[-1] != ']'))
		return value_why(why, whylen, "no ]:PORT after an IPv6 address");
	end -= bracketed;
	/* "::1:8008" could be read two ways; a URL is no address at all. */
	if (!bracketed && memchr(s, ':', (size_t)(colon - s)))
		return value_why(why, whylen, is_host(s, (size_t)(colon - s), true)
			? "an IPv6 address goes in brackets, as [::1]:8008"
			: "invalid host name or address");
	if (end == start && (bracketed || !any_host))
		return value_why(why, whylen, "no host before :PORT");
	if (end != start && !is_host(start, (size_t)(end - start), bracketed))
		return value_why(why, whylen, bracketed ? "invalid IPv6 address"
						: "invalid host name or address");
	if (!is_port(colon + 1, &number))
		return value_why(why, whylen, "the port must be a number from 1 to 65535");
	memcpy(host, start, (size_t)(end - start));
	host[end - start] = '\0';
	snprintf(port, VALUE_PORT_MAX, "%d", (int)number);
	return 0;
}

/* The length of the valid sequence at p, or 0: the second byte's range
 * rules out overlong forms (after 0xe0, 0xf0), surrogates (after 0xed) and
 * code points past U+10FFFF (after 0xf4). */
static size_t utf8_sequence(const unsigned char *p)
{
	static const struct { unsigned char first, last, n, lo, hi; } forms[] = {
		{ 0xc2, 0xdf, 2, 0x80, 0xbf }, { 0xe0, 0xe0, 3, 0xa0, 0xbf },
		{ 0xe1, 0xec, 3, 0x80, 0xbf }, { 0xed, 0xed, 3, 0x80, 0x9f },
		{ 0xee, 0xef, 3, 0x80, 0xbf }, { 0xf0, 0xf0, 4, 0x90, 0xbf },
		{ 0xf1, 0xf3, 4, 0x80, 0xbf }, { 0xf4, 0xf4, 4, 0x80, 0x8f },
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (p[0] < forms[i].first || p[0] > forms[i].last)
			continue;
		if (p[1] < forms[i].lo || p[1] > forms[i].hi)
			return 0;
		for (size_t k = 2; k < forms[i].n; k++)
			if ((p[k] & 0xc0) != 0x80)
				return 0; /* also stops at the terminating NUL */
		return forms[i].n;
	}
	return 0;
}

#define EDIT_NAME_MAX 64 /* longer names are not compared */

static size_t min2(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Row i of the optimal string alignment table from the two before it;
 * returns the row's least cell. */
static size_t edit_row(const char *a, size_t i, const char *b, size_t nb,
		       const size_t *before, const size_t *prev, size_t *cur)
{
	size_t best = cur[0] = i;

	for (size_t j = 1; j <= nb; j++) {
		size_t d = min2(prev[j - 1] + (a[i - 1] != b[j - 1]),
				min2(prev[j], cur[j - 1]) + 1);

		if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
			d = min2(d, before[j - 2] + 1);
		cur[j] = d;
		best = min2(best, d);
	}
	return best;
}

size_t value_edit_distance(const char *a, const char *b, size_t limit)
{
	size_t rows[3][EDIT_NAME_MAX + 1], na = strlen(a), nb = strlen(b);
	size_t *before = rows[0], *prev = rows[1], *cur = rows[2], *spare;

	if (na > EDIT_NAME_MAX || nb > EDIT_NAME_MAX || (na > nb ? na - nb : nb - na) > limit)
		return limit + 1;
	for (size_t j = 0; j <= nb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= na; i++) {
		/* Cells only grow from a row whose least is past limit. */
		if (edit_row(a, i, b, nb, before, prev, cur) > limit)
			return limit + 1;
		spare = before;
		before = prev;
		prev = cur;
		cur = spare;
	}
	return min2(prev[nb], limit + 1);
}

bool value_is_near(const char *typed, const char *known)
{
	size_t len = strlen(known), limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;

	return value_edit_distance(typed, known, limit) <= limit;
}

bool value_is_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 1 : utf8_sequence(p);

		if (n == 0)
			return false;
		p += n;
	}
	return true;
}

const char *value_printable(const char *s, size_t n, char *buf, size_t len)
{
	size_t i = 0;

	for (; i < n && s[i] && i + 1 < len; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (len > 0)
		buf[i] = '\0';
	return buf;
}

const char *value_path_shown(const char *path, char *buf, size_t len)
{
	size_t n = strlen(path), keep = VALUE_PATH_SHOWN / 2 - 2;

	if (n < VALUE_PATH_SHOWN || len < VALUE_PATH_SHOWN)
		return value_printable(path, n, buf, len);
	value_printable(path, keep, buf, len);
	memcpy(buf + keep, "...", 3);
	value_printable(path + n - keep, keep, buf + keep + 3, len - keep - 3);
	return buf;
}

/* Values land in one-line messages: quote them, cut them short and make
 * control characters visible so a stray newline cannot split the line. */
const char *value_quote(const char *s, char *buf, size_t len)
{
	size_t n = 0, max = len >= 48 ? 40 : len / 2 - 4;

	buf[n++] = '"';
	for (; *s && n <= max; s++)
		buf[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	if (*s) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n++] = '"';
	buf[n] = '\0';
	return buf;
}

/* After an opening '"': the end of the quoted run, or NULL when it has
 * none; *found the first "$(" or '`' in it (which a shell would run). */
static const char *shell_double_quoted(const char *s, const char **found)
{
	for (; *s && *s != '"'; s++) {
		if (*s == '\\' && s[1])
			s++;
		else if (!*found && (*s == '`' || (*s == '$' && s[1] == '(')))
			*found = s;
	}
	return *s ? s : NULL;
}

const char *value_shell_syntax(const char *s)
{
	const char *found = NULL, *close;

	for (; *s && !found; s++) {
		if (*s == '\\' && s[1])
			s++;
		else if (*s == '\'' && (close = strchr(s + 1, '\'')))
			s = close;
		else if (*s == '"' && (close = shell_double_quoted(s + 1, &found)))
			s = close;
		else if (strchr("|><;&`", *s) || (*s == '$' && s[1] == '('))
			found = s;
	}
	return found;
}
