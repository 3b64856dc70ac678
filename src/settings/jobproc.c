/* jobproc.c: a job's environment, directory, user and groups: the keys' syntax and their lookups at load. */
#include "jobproc.h"
#include "value.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool jobproc_valid_name(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return false;
	}
	return true;
}

void jobproc_free_env(char **env)
{
	value_free_words(env);
}

int jobproc_env_put(char ***env, const char *assignment, size_t len)
{
	size_t name = (size_t)((const char *)memchr(assignment, '=', len) - assignment);
	size_t n = 0;
	char *copy = strndup(assignment, len), **grown;

	if (!copy)
		return -1;
	for (; *env && (*env)[n]; n++) {
		if (strncmp((*env)[n], copy, name + 1) == 0) {
			free((*env)[n]);
			(*env)[n] = copy;
			return 0;
		}
	}
	if (!(grown = realloc(*env, (n + 2) * sizeof(*grown)))) {
		free(copy);
		return -1;
	}
	grown[n] = copy;
	grown[n + 1] = NULL;
	*env = grown;
	return 0;
}

/* Whether out[0..len) may be given to a command: NAME=VALUE, not too
 * long. The problem, or NULL. */
static const char *check_assignment(const char *out, size_t len)
{
	const char *eq = memchr(out, '=', len);

	if (!eq)
		return "not NAME=VALUE";
	if (!jobproc_valid_name(out, (size_t)(eq - out)))
		return "the name is not [A-Za-z_][A-Za-z0-9_]*";
	if (len > JOBPROC_ASSIGNMENT_MAX)
		return "longer than 128KiB, which Linux refuses to pass to a command";
	return NULL;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* An assignment being read: the next byte, and the word so far (never
 * longer than the text). */
struct scan {
	const char *s;
	char *out;
	size_t len;
};

/* C's escapes as systemd decodes them; 0: not one. */
static char c_escape(char c)
{
	static const char from[] = "ntrabfvs\\\"' ", to[] = "\n\t\r\a\b\f\v \\\"' ";
	const char *at = c ? strchr(from, c) : NULL;

	return at ? to[at - from] : 0;
}

/* After a backslash: the escaped character, or the backslash itself when
 * it escapes nothing it knows (the next character is then read as it is). */
static void take_escape(struct scan *sc)
{
	char decoded = c_escape(*sc->s);

	if (!decoded) {
		sc->out[sc->len++] = '\\';
		return;
	}
	sc->out[sc->len++] = decoded;
	sc->s++;
}

/* One assignment, up to a blank outside quotes. The problem, or NULL. */
static const char *env_word(struct scan *sc)
{
	char quote = 0;

	sc->len = 0;
	while (*sc->s && (quote || !is_blank(*sc->s))) {
		char c = *sc->s++;

		if (c == '\\')
			take_escape(sc);
		else if (quote && c == quote)
			quote = 0;
		else if (!quote && (c == '"' || c == '\''))
			quote = c;
		else
			sc->out[sc->len++] = c;
	}
	return quote ? "unterminated quote" : NULL;
}

int jobproc_parse_environment(const char *text, char ***env, char *why, size_t whylen)
{
	struct scan sc = { text, malloc(strlen(text) + 1), 0 };
	const char *problem = sc.out ? NULL : "out of memory";
	int n = 0;

	while (!problem) {
		while (is_blank(*sc.s))
			sc.s++;
		if (!*sc.s)
			break;
		n++;
		if (!(problem = env_word(&sc)) &&
		    !(problem = check_assignment(sc.out, sc.len)) &&
		    jobproc_env_put(env, sc.out, sc.len) < 0)
			problem = "out of memory";
	}
	free(sc.out);
	if (problem)
		return value_why(why, whylen, "assignment %d: %s", n, problem);
	return 0;
}

/* ---- environment files ---- */

struct file_scan {
	const char *p, *end;
	int line;              /* of p */
	char *out;
	size_t len;
	size_t hard;           /* out[0..hard) quoted or escaped: kept */
};

static void skip_line(struct file_scan *fs)
{
	while (fs->p < fs->end && *fs->p != '\n')
		fs->p++;
}

/* To the first byte of the next assignment, past blank lines and
 * comments; false at the end. */
static bool next_assignment(struct file_scan *fs)
{
	while (fs->p < fs->end) {
		char c = *fs->p;

		if (c == '#' || c == ';')
			skip_line(fs);
		else if (!is_blank(c))
			return true;
		else if (*fs->p++ == '\n')
			fs->line++;
	}
	return false;
}

/* NAME, blanks around it, and the '='. The problem, or NULL. */
static const char *file_name(struct file_scan *fs)
{
	const char *start = fs->p;
	size_t n;

	while (fs->p < fs->end && *fs->p != '=' && *fs->p != '\n')
		fs->p++;
	if (fs->p == fs->end || *fs->p != '=')
		return "not NAME=VALUE";
	n = (size_t)(fs->p - start);
	while (n > 0 && is_blank(start[n - 1]))
		n--;
	if (!jobproc_valid_name(start, n))
		return "the name is not [A-Za-z_][A-Za-z0-9_]*";
	memcpy(fs->out, start, n);
	fs->out[n] = '=';
	fs->len = fs->hard = n + 1;
	fs->p++;
	while (fs->p < fs->end && (*fs->p == ' ' || *fs->p == '\t'))
		fs->p++;
	return NULL;
}

/* After an opening quote: up to the closing one. */
static const char *file_quoted(struct file_scan *fs, char quote)
{
	while (fs->p < fs->end && *fs->p != quote) {
		char c = *fs->p++;

		if (c == '\n')
			fs->line++;
		if (quote == '"' && c == '\\' && fs->p < fs->end &&
		    strchr("\"\\`$\n", *fs->p)) {
			c = *fs->p++;
			if (c == '\n') {
				fs->line++;
				continue;
			}
		}
		fs->out[fs->len++] = c;
	}
	if (fs->p == fs->end)
		return "unterminated quote";
	fs->p++;
	fs->hard = fs->len;
	return NULL;
}

/* VALUE, up to the end of its line. The problem, or NULL. */
static const char *file_value(struct file_scan *fs)
{
	const char *problem = NULL;

	while (!problem && fs->p < fs->end && *fs->p != '\n') {
		char c = *fs->p++;

		if (c == '"' || c == '\'') {
			problem = file_quoted(fs, c);
		} else if (c == '\\' && fs->p < fs->end) {
			c = *fs->p++;
			if (c == '\n')
				fs->line++; /* a continuation */
			else
				fs->out[fs->len++] = c;
			fs->hard = fs->len;
		} else {
			fs->out[fs->len++] = c;
		}
	}
	while (fs->len > fs->hard && is_blank(fs->out[fs->len - 1]))
		fs->len--;
	return problem;
}

int jobproc_parse_environment_file(const char *text, size_t len, char ***env,
				   int *line, char *why, size_t whylen)
{
	struct file_scan fs = { text, text + len, 1, malloc(len + 2), 0, 0 };
	const char *nul = memchr(text, '\0', len), *problem = NULL;
	int first = 1;

	if (nul) {
		*line = 1;
		for (const char *p = text; p < nul; p++)
			*line += *p == '\n';
		free(fs.out);
		return value_why(why, whylen, "holds a NUL byte: not a text file");
	}
	while (fs.out && !problem && next_assignment(&fs)) {
		first = fs.line;
		if (!(problem = file_name(&fs)) && !(problem = file_value(&fs)) &&
		    !(problem = check_assignment(fs.out, fs.len)) &&
		    jobproc_env_put(env, fs.out, fs.len) < 0)
			problem = "out of memory";
	}
	if (!fs.out)
		problem = "out of memory";
	free(fs.out);
	*line = first;
	return problem ? value_why(why, whylen, "%s", problem) : 0;
}

/* The whole of an open regular file, at most JOBPROC_FILE_MAX bytes, or
 * NULL with why. */
static char *read_whole(int fd, const char *shown, size_t *len, char *why, size_t whylen)
{
	struct stat st;
	char *text;
	ssize_t n = 1;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		value_why(why, whylen, "%s is not a regular file", shown);
		return NULL;
	}
	if (!(text = malloc(JOBPROC_FILE_MAX + 1))) {
		value_why(why, whylen, "out of memory");
		return NULL;
	}
	*len = 0;
	while (n > 0 && *len <= JOBPROC_FILE_MAX) {
		n = read(fd, text + *len, JOBPROC_FILE_MAX + 1 - *len);
		if (n > 0)
			*len += (size_t)n;
	}
	if (n < 0 || *len > JOBPROC_FILE_MAX) {
		if (n < 0)
			value_why(why, whylen, "cannot read %s: %s", shown, strerror(errno));
		else
			value_why(why, whylen, "%s is larger than 1MiB", shown);
		free(text);
		return NULL;
	}
	return text;
}

int jobproc_read_environment_file(const char *path, char ***env, char *why,
				  size_t whylen)
{
	bool optional = *path == '-';
	const char *name = optional ? path + 1 : path;
	char shown[VALUE_PATH_SHOWN + 8], reason[160], *text;
	size_t len;
	int fd, line, result;

	value_path_shown(name, shown, sizeof(shown));
	fd = open(name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return optional && errno == ENOENT ? 0
		       : value_why(why, whylen, "cannot read %s: %s", shown, strerror(errno));
	text = read_whole(fd, shown, &len, why, whylen);
	close(fd);
	if (!text)
		return -1;
	result = jobproc_parse_environment_file(text, len, env, &line, reason,
						sizeof(reason));
	free(text);
	if (result < 0)
		return value_why(why, whylen, "%s:%d: %s", shown, line, reason);
	return 0;
}

/* ---- users and groups ---- */

/* A name, or a number that is an id. */
static bool numeric_id(const char *s, uint32_t *id)
{
	int64_t n;

	if (*s < '0' || *s > '9' || value_parse_int(s, &n) < 0 || n < 0 || n >= UINT32_MAX)
		return false;
	*id = (uint32_t)n;
	return true;
}

static int resolve_group(const char *group, gid_t *gid, char *why, size_t whylen)
{
	char shown[64];
	uint32_t id;
	struct group *gr;

	errno = 0;
	if ((gr = getgrnam(group)))
		*gid = gr->gr_gid;
	else if (numeric_id(group, &id))
		*gid = (gid_t)id;
	else
		return value_why(why, whylen, "no such group %s",
				 value_quote(group, shown, sizeof(shown)));
	return 0;
}

/* The user's supplementary groups, gid among them, into p. */
static int user_groups(const struct passwd *pw, struct job_process *p)
{
	int n = 16;
	gid_t *list = NULL, *grown;

	for (int tries = 0; tries < 4; tries++) {
		int asked = n;

		if (!(grown = realloc(list, (size_t)n * sizeof(*list))))
			break;
		list = grown;
		if (getgrouplist(pw->pw_name, p->gid, list, &n) >= 0) {
			p->groups = list;
			p->n_groups = (size_t)n;
			return 0;
		}
		if (n <= asked)
			n = asked * 4;
	}
	free(list);
	return -1;
}

/* HOME, USER, LOGNAME and SHELL of the user, as systemd's User= gives. */
static int user_variables(const struct passwd *pw, char ***env)
{
	const char *names[] = { "HOME", "USER", "LOGNAME", "SHELL" };
	const char *values[] = { pw->pw_dir, pw->pw_name, pw->pw_name, pw->pw_shell };
	char line[4096];

	for (size_t i = 0; i < 4; i++) {
		int n;

		if (!values[i] || !*values[i])
			continue;
		n = snprintf(line, sizeof(line), "%s=%s", names[i], values[i]);
		if (n < 0 || (size_t)n >= sizeof(line))
			continue;
		if (jobproc_env_put(env, line, (size_t)n) < 0)
			return -1;
	}
	return 0;
}

static int resolve_user(const char *user, const char *group, struct job_process *p,
			char ***env, char *why, size_t whylen)
{
	struct passwd *pw = getpwnam(user);
	char shown[64];
	uint32_t id;

	if (!pw && numeric_id(user, &id))
		pw = getpwuid((uid_t)id);
	if (!pw)
		return value_why(why, whylen, "no such user %s",
				 value_quote(user, shown, sizeof(shown)));
	p->uid = pw->pw_uid;
	p->gid = pw->pw_gid;
	if (group && resolve_group(group, &p->gid, why, whylen) < 0)
		return -1;
	if (user_groups(pw, p) < 0 || user_variables(pw, env) < 0)
		return value_why(why, whylen, "out of memory");
	return 0;
}

int jobproc_resolve_ids(const char *user, const char *group, struct job_process *p,
			char ***env, char *why, size_t whylen)
{
	if (geteuid() != 0)
		return value_why(why, whylen, "needs pgleader to run as root to switch "
				 "to it (it runs as uid %u)", (unsigned)geteuid());
	p->set_ids = true;
	p->uid = 0;
	if (user)
		return resolve_user(user, group, p, env, why, whylen);
	if (resolve_group(group, &p->gid, why, whylen) < 0)
		return -1;
	/* root's own supplementary groups go: only the one given */
	if (!(p->groups = malloc(sizeof(*p->groups))))
		return value_why(why, whylen, "out of memory");
	p->groups[0] = p->gid;
	p->n_groups = 1;
	return 0;
}

void jobproc_free(struct job_process *p)
{
	jobproc_free_env(p->environment);
	free(p->working_directory);
	free(p->groups);
	memset(p, 0, sizeof(*p));
}
