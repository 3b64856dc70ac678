/* daemon_params.c: the election's parameters as the daemon builds them. */
#include "daemon_params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"

extern char **environ;

struct config daemon_cfg;

static void clear_pgleader_env(void)
{
	for (;;) {
		char name[128] = "";

		for (char **e = environ; *e && !name[0]; e++)
			if (!strncmp(*e, "PGLEADER_", 9))
				snprintf(name, sizeof(name), "%.*s",
					 (int)strcspn(*e, "="), *e);
		if (!name[0])
			return;
		unsetenv(name);
	}
}

void daemon_config_load(void)
{
	char *argv[] = { "pgleader", "--node-id", "a", "--", "job", NULL };
	char err[512];

	clear_pgleader_env();
	if (config_load(&daemon_cfg, 5, argv, err, sizeof(err)) != CONFIG_OK) {
		fprintf(stderr, "config_load: %s\n", err);
		exit(2);
	}
}

struct election_params daemon_params(const struct config *cfg)
{
	struct election_params p;

	election_params_from_config(cfg, &p);
	p.connect_timeout = DAEMON_CONNECT_TIMEOUT;
	return p;
}
