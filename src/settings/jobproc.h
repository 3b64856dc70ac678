/* jobproc.h: the process a job's command runs as (DESIGN 13): the syntax
 * of the environment and environment_file keys (systemd's Environment=
 * and EnvironmentFile=), and the environment, directory, user and groups
 * that the settings give a command, resolved when they are loaded. */
#ifndef PGLEADER_JOBPROC_H
#define PGLEADER_JOBPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The longest assignment a command can be given: Linux refuses an exec
 * with a string of 128 KiB or more (MAX_ARG_STRLEN). */
#define JOBPROC_ASSIGNMENT_MAX (128 * 1024 - 1)
/* A larger environment file is refused, never read whole. */
#define JOBPROC_FILE_MAX (1024 * 1024)

/* What a job's command is set up with, between its fork and its exec. */
struct job_process {
	char **environment;      /* "NAME=VALUE"s, NULL-terminated; NULL: none */
	char *working_directory; /* NULL: pgleader's own */
	bool set_ids;            /* user or group given: the ids below */
	uid_t uid;               /* pgleader's own when only group is given */
	gid_t gid;
	gid_t *groups;           /* the supplementary groups */
	size_t n_groups;
};

/* ---- pure ---- */

/* Whether s[0..len) is a variable's name: [A-Za-z_][A-Za-z0-9_]*. */
bool jobproc_valid_name(const char *s, size_t len);
/* Sets the assignment "NAME=VALUE" (len bytes) in *env: an assignment of
 * the same name is replaced, where it was. 0, or -1 when out of memory. */
int jobproc_env_put(char ***env, const char *assignment, size_t len);
/* Frees such a list; NULL is fine. */
void jobproc_free_env(char **env);

/* systemd's Environment=: assignments separated by blanks, each NAME=VALUE;
 * "..." or '...' quote (a whole assignment, or a part: "A=x y" and
 * A="x y" are one); a backslash escapes the next character, C's \n \t \r
 * \a \b \f \v and \s (a space) are decoded, outside quotes and in them; no
 * $ expansion. Each is put in *env (jobproc_env_put). 0, or -1 with why
 * (which never holds a value: it may be a secret). */
int jobproc_parse_environment(const char *text, char ***env, char *why, size_t whylen);

/* systemd's EnvironmentFile=, the text's len bytes: one NAME=VALUE a line;
 * blank lines and lines whose first non-blank is # or ; are skipped;
 * blanks around NAME and before VALUE go; VALUE's unquoted trailing blanks
 * go; "..." keeps all but a backslash before " \ ` $ or a newline, '...'
 * keeps all, both may span lines; unquoted, a backslash escapes the next
 * character and a backslash-newline continues the line. 0, or -1 with
 * *line the line of the mistake and why. */
int jobproc_parse_environment_file(const char *text, size_t len, char ***env,
				   int *line, char *why, size_t whylen);

/* ---- what the settings resolve at load ---- */

/* Reads the file at path (a regular file of at most JOBPROC_FILE_MAX
 * bytes) into *env. A path that begins with '-' names a file that may be
 * missing. 0, or -1 with why ("PATH:LINE: ..." for a mistake inside). */
int jobproc_read_environment_file(const char *path, char ***env, char *why,
				  size_t whylen);
/* user and group (names or numeric ids; either may be NULL, not both)
 * into p's ids: the user's own group unless group is given, and the
 * user's supplementary groups; the user's HOME, USER, LOGNAME and SHELL
 * into *env. Refused unless pgleader runs as root. 0, or -1 with why. */
int jobproc_resolve_ids(const char *user, const char *group, struct job_process *p,
			char ***env, char *why, size_t whylen);

void jobproc_free(struct job_process *p);

#endif
