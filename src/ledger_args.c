/* ledger_args.c: the stopgap reader of "pgleader runs" and "pgleader
 * init-db" (see ledger_args.h). It lets config_load find the word as it
 * finds a command, then reads the rest as a "status" would be read. */
#include "ledger_args.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_sql.h"
#include "value.h"

struct ledger_opts {
	const char *schema, *job, *since;
	bool print_sql;
};

/* argv[*i] is "--NAME VALUE" or "--NAME=VALUE": *value set, *i past it. */
static bool take(char **argv, int argc, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return false;
	if (argv[*i][n] == '=') {
		*value = argv[*i] + n + 1;
		return true;
	}
	if (argv[*i][n] != '\0' || *i + 1 >= argc)
		return false;
	*value = argv[++*i];
	return true;
}

/* argv with word sub as "status" and the ledger's options out, into out. */
static int rebuild(int argc, char **argv, int sub, char **out, struct ledger_opts *o)
{
	int n = 0;

	for (int i = 0; i < argc; i++) {
		if (i == sub)
			out[n++] = "status";
		else if (i < sub)
			out[n++] = argv[i];
		else if (strcmp(argv[i], "--print-sql") == 0)
			o->print_sql = true;
		else if (!take(argv, argc, &i, "--schema", &o->schema) &&
			 !take(argv, argc, &i, "--job", &o->job) &&
			 !take(argv, argc, &i, "--since", &o->since))
			out[n++] = argv[i];
	}
	out[n] = NULL;
	return n;
}

static enum config_result usage(char *err, size_t errlen, const char *msg)
{
	snprintf(err, errlen, "%s", msg);
	return CONFIG_USAGE;
}

/* The subcommand's options against its mode. */
static enum config_result apply(struct config *cfg, const struct ledger_opts *o,
				char *err, size_t errlen)
{
	bool runs = cfg->mode == CONFIG_MODE_RUNS;

	cfg->status_mode = false;
	cfg->schema = (char *)(o->schema ? o->schema : LEDGER_SQL_SCHEMA_DEFAULT);
	cfg->runs_job = (char *)o->job;
	cfg->print_sql = o->print_sql;
	cfg->runs_since_ms = -1;
	if (!ledger_sql_schema_ok(cfg->schema))
		return usage(err, errlen, "--schema: a lower-case identifier of up to 63"
			     " characters [a-z0-9_], not starting with pg_ or a digit");
	if (cfg->watch)
		return usage(err, errlen, "--watch is only valid with 'pgleader status'");
	if (!runs && (o->job || o->since || cfg->json))
		return usage(err, errlen, "--job, --since and --json are not valid with"
			     " 'pgleader init-db'");
	if (runs && o->print_sql)
		return usage(err, errlen, "--print-sql is only valid with 'pgleader init-db'");
	if (o->since && (value_parse_duration(o->since, &cfg->runs_since_ms) < 0 ||
			 cfg->runs_since_ms < 0))
		return usage(err, errlen, "--since: not a duration (e.g. 90m, 24h)");
	return CONFIG_OK;
}

enum config_result ledger_args_load(struct config *cfg, int argc, char **argv,
				    char *err, size_t errlen)
{
	enum config_result r = config_load(cfg, argc, argv, err, errlen);
	struct ledger_opts o = { NULL, NULL, NULL, false };
	enum config_mode mode;
	int words = 0, sub;
	char **again;

	if (r != CONFIG_OK || cfg->status_mode || cfg->shell || !cfg->command)
		return r;
	while (cfg->command[words])
		words++;
	sub = argc - words;
	mode = strcmp(cfg->command[0], "runs") == 0 ? CONFIG_MODE_RUNS
	       : strcmp(cfg->command[0], "init-db") == 0 ? CONFIG_MODE_INIT_DB
	       : CONFIG_MODE_DAEMON;
	if (mode == CONFIG_MODE_DAEMON || sub < 1 || strcmp(argv[sub], cfg->command[0]) ||
	    strcmp(argv[sub - 1], "--") == 0)
		return r;
	config_free(cfg);
	if (!(again = calloc((size_t)argc + 1, sizeof(*again)))) {
		snprintf(err, errlen, "out of memory");
		return CONFIG_INVALID;
	}
	r = config_load(cfg, rebuild(argc, argv, sub, again, &o), again, err, errlen);
	free(again);
	if (r != CONFIG_OK)
		return r;
	cfg->mode = mode;
	if ((r = apply(cfg, &o, err, errlen)) != CONFIG_OK)
		config_free(cfg);
	return r;
}
