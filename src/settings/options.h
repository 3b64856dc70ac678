/* options.h: one table of settings drives the defaults, an INI file,
 * environment variables, getopt_long and --help, so none of them can drift
 * apart. The table and the rules between keys belong to the caller. */
#ifndef PGLEADER_OPTIONS_H
#define PGLEADER_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exit_codes.h"

/* What every step returns: OPTIONS_OK goes on; anything else ends the load
 * (an action's own result, or, with one line in err, EXIT_USAGE for a mistake
 * on the command line, EXIT_CONFIG for the file, the environment, a rule). */
#define OPTIONS_OK 0

enum option_type {
	OPTION_DURATION, /* int64_t milliseconds, min to max (0: no max) */
	OPTION_INT,      /* int, min to max */
	OPTION_SIZE,     /* int64_t bytes, min to max (value_parse_size) */
	OPTION_BOOL,     /* bool; the option takes no value and means true */
	OPTION_STRING,   /* char *, malloc'd; "" sets NULL (unset) */
	OPTION_ENUM,     /* an enum, stored as int: one of choices */
	OPTION_LOCK_KEY, /* int64_t */
	OPTION_TEXT,     /* kept by the loader as written, "" too: options_text() */
	OPTION_FLAG,     /* command line only, no value: sets a bool, no layers */
	OPTION_ACTION,   /* command line only: handed to spec->action when read */
};

struct option_choice {
	const char *name;
	int value;
};

struct option_row {
	const char *key;           /* INI key and PREFIX_KEY; NULL: argv only */
	const char *long_name;     /* NULL: file and environment only */
	char short_name;
	enum option_type type;
	size_t offset;             /* of the field in the target */
	const char *default_value; /* parsed like any value */
	const char *default_shown; /* for --help, when not default_value */
	const char *metavar;       /* an OPTION_ACTION with one takes a value */
	const char *help;          /* may hold '\n': further lines of help */
	const char *variable;      /* argv-only row: the variable standing for it */
	/* OPTION_INT; OPTION_DURATION uses min, and max unless it is 0 */
	int64_t min, max;
	bool none_allowed;         /* OPTION_DURATION: "none" stands for -1 */
	const struct option_choice *choices; /* OPTION_ENUM, ending in NULL */
	/* OPTION_STRING and OPTION_TEXT: -1 with why refuses the value. */
	int (*check)(const char *value, char *why, size_t whylen);
	int action;                /* OPTION_ACTION: passed to spec->action */
	/* The key of a row that names the same thing another way: both in one
	 * layer is an error; either in a higher layer clears the other. */
	const char *conflicts;
};

struct options_spec {
	const struct option_row *rows; /* in the order of --help */
	size_t nrows;
	size_t target_size;     /* argv is first tried alone on a scratch copy */
	const char *section;    /* the INI file's one section */
	const char *env_prefix; /* "PGLEADER_" */
	const char *program;    /* for "see PROGRAM --help" */
	/* An OPTION_ACTION read from argv, with its value or NULL: returns
	 * OPTIONS_OK to go on, anything else to stop reading argv. */
	int (*action)(void *user, int action, const char *value);
	/* Further sections of the file, [SUB_PREFIX...] ("job."), NULL: none.
	 * Their headers go to sub_section and their keys to sub_key, with the
	 * name after the prefix and the line; each returns OPTIONS_OK, or a
	 * code with the message set by options_fail. */
	const char *sub_prefix;
	const char *sub_shown;  /* how messages name them: "job.NAME" */
	int (*sub_section)(void *user, int line, const char *name);
	int (*sub_key)(void *user, int line, const char *name, const char *key,
		       const char *value);
};

/* Where a setting's value came from, lowest first. */
enum options_layer {
	OPTIONS_LAYER_NONE,
	OPTIONS_LAYER_DEFAULTS,
	OPTIONS_LAYER_FILE,
	OPTIONS_LAYER_ENV,
	OPTIONS_LAYER_ARGV,
};

/* A load under way: the layers applied so far, which key each layer set
 * and on which line, the command line's settings, and the message. */
struct options;

/* NULL when out of memory. err receives the one-line message of a failure;
 * user goes to spec->action. */
struct options *options_new(const struct options_spec *spec, void *target,
			    void *user, char *err, size_t errlen);
void options_free(struct options *op);

/* Reads the options at the head of argv (argv[0] is skipped) without
 * applying them: the command line is the top layer, applied last. Stops at
 * the first word that is not an option: *first_word says where, and
 * *after_dashdash whether a "--" came just before it. May be called again
 * for a subcommand's options. */
int options_read_argv(struct options *op, int argc, char **argv,
		      int *first_word, bool *after_dashdash);
/* Applies the command line's settings alone to a scratch target, so that a
 * mistake there is EXIT_USAGE whatever the file or environment hold. */
int options_check_argv(struct options *op);

/* The layers, lowest first. */
int options_load_defaults(struct options *op);
int options_load_file(struct options *op, const char *path);
int options_load_environment(struct options *op);
int options_load_argv(struct options *op);

/* Sets the message for a rule of the caller's; returns code. */
int options_fail(struct options *op, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The layer that last set key (after the loads so far). */
enum options_layer options_layer(const struct options *op, const char *key);
/* Whether the command line read so far holds key's option, applied or not. */
bool options_given(const struct options *op, const char *key);
/* An OPTION_TEXT value as last set, or NULL. */
const char *options_text(const struct options *op, const char *key);
/* Where key was last set, as messages name it: "FILE:LINE: key",
 * "PGLEADER_KEY" or "--long-name". Returns buf. */
const char *options_origin(const struct options *op, const char *key,
			   char *buf, size_t len);
/* The file's path as messages show it (control characters masked). */
const char *options_path(const struct options *op);

/* name as a key would be written, for a hint at a likely typo: "lock-key"
 * and "Lock_Key" are "lock_key". Returns buf. */
const char *options_normal_key(const char *name, char *buf, size_t len);
/* The known name nearest to typed for a "did you mean": the one equal to
 * it once normalised (options_normal_key, with dashes when dashes is set),
 * else the nearest by edit distance if near enough (value_is_near), the
 * first of a tie; NULL when none is. The n names are in a table of
 * entries stride bytes apart: name points at the first entry's name (a
 * const char *, NULL for none). */
const char *options_nearest(const char *typed, bool dashes, const char *const *name,
			    size_t n, size_t stride);

/* The first variable of the environment that starts with the prefix, is
 * no key's, and is near one (options_nearest): likely a typo, which would
 * be ignored without a word. One line into buf ("" when none): 'PGLEADER_LOCKKEY
 * is not a setting and is ignored (did you mean PGLEADER_LOCK_KEY?)'. Only
 * a hint: the environment holds variables of other programs, and the
 * command's own PGLEADER_JOB, PGLEADER_TICK, ... Returns buf. */
const char *options_env_hint(const struct options *op, char *buf, size_t len);

/* Frees the OPTION_STRING fields of target and sets them to NULL. */
void options_release(const struct options_spec *spec, void *target);

/* The rows with an option, then those of the file and environment only,
 * each with its help, key and default, as --help shows them. */
void options_usage(const struct options_spec *spec, FILE *out);

#endif
