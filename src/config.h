/* config.h: pgleader's settings, from defaults, file, environment and argv. */
#ifndef PGLEADER_CONFIG_H
#define PGLEADER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "log.h" /* enum log_format */

#define CONFIG_DEFAULT_LOCK_KEY INT64_C(0x50474c4541444552) /* "PGLEADER" */

enum acquire_mode { ACQUIRE_WAIT, ACQUIRE_POLL };
enum restart_policy { RESTART_NO, RESTART_ON_FAILURE, RESTART_ALWAYS };

/* A member of the failsafe fleet (failsafe_peers), as parsed. */
struct config_peer {
	char *node_id;
	char *host; /* a name or address; an IPv6 address without brackets */
	char *port; /* decimal, 1 to 65535 */
};

struct config {
	char *config_file;      /* -c; NULL when none */
	char *dsn;              /* NULL: libpq environment */
	int64_t lock_key;
	char *lock_name;        /* non-NULL: key = hashtextextended(name, 0) */
	enum acquire_mode acquire;
	int64_t retry_interval_ms;
	int64_t ping_interval_ms;
	int64_t ping_timeout_ms;
	int ping_failures;
	int64_t server_lease_ms; /* 0 = off */
	int64_t grace_period_ms;
	int64_t takeover_delay_ms;
	enum restart_policy restart;
	bool nonblock;
	int64_t wait_timeout_ms; /* -1 = wait for ever */
	int conflict_exit_code;
	int restart_limit;       /* 0 = no limit */
	bool shell;
	char *node_id;           /* default: host name */
	char *http_addr;         /* HOST:PORT, [V6]:PORT or :PORT; NULL = off */
	char *failsafe_peers;    /* as given; NULL = failsafe off */
	struct config_peer *peers; /* failsafe_peers parsed, this node among them */
	size_t n_peers;
	char *failsafe_secret_file; /* set whenever failsafe_peers is */
	int64_t failsafe_ttl_ms;
	int log_level;           /* enum log_level, after -v/-q */
	enum log_format log_format;
	char **command;          /* NULL-terminated argv; NULL in status mode */
	bool status_mode;        /* "pgleader status" */
	bool json;               /* status --json */
	bool watch;              /* status --watch */
};

/* The exit codes are options.h's: config_load passes them on. */

enum config_result {
	CONFIG_OK = 0,
	CONFIG_HELP,            /* --help: print config_usage() to stdout, exit 0 */
	CONFIG_VERSION,         /* --version */
	CONFIG_USAGE = 64,      /* bad command line (EX_USAGE) */
	CONFIG_INVALID = 78,    /* bad file, environment or combination (EX_CONFIG) */
};

/* Fills cfg from defaults, then the file (-c or PGLEADER_CONFIG), then
 * PGLEADER_<KEY> environment variables, then argv; validates the result.
 * On error returns CONFIG_USAGE or CONFIG_INVALID with one line in err that
 * names the option, variable or file:line. */
enum config_result config_load(struct config *cfg, int argc, char **argv,
			       char *err, size_t errlen);
void config_free(struct config *cfg);

void config_usage(FILE *out);

#endif
