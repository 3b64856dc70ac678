/* config.h: pgleader's settings, from defaults, file, environment and argv. */
#ifndef PGLEADER_CONFIG_H
#define PGLEADER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exit_codes.h"
#include "jobproc.h" /* struct job_process */
#include "log.h" /* enum log_format */

#define CONFIG_DEFAULT_LOCK_KEY INT64_C(0x50474c4541444552) /* "PGLEADER" */

enum acquire_mode { ACQUIRE_WAIT, ACQUIRE_POLL };
enum restart_policy { RESTART_NO, RESTART_ON_FAILURE, RESTART_ALWAYS };
enum missed_policy { MISSED_ONCE, MISSED_SKIP };
/* DESIGN 13: a tick that falls while the job's run goes on */
enum overlap_policy { OVERLAP_SKIP, OVERLAP_QUEUE, OVERLAP_REPLACE };
/* Where a job's stdout and stderr go (DESIGN 13): AUTO until the load
 * ends, then INHERIT for the one command without a schedule (a Docker
 * entrypoint's), LOG for every other job. */
enum output_mode { OUTPUT_AUTO, OUTPUT_INHERIT, OUTPUT_LOG };
#define CONFIG_OUTPUT_TAIL_MAX (1024 * 1024)

/* What pgleader was asked to do: the daemon, or one of its subcommands. */
enum config_mode {
	CONFIG_MODE_DAEMON,
	CONFIG_MODE_STATUS,     /* pgleader status */
	CONFIG_MODE_RUNS,       /* pgleader runs (DESIGN 10) */
	CONFIG_MODE_INIT_DB,    /* pgleader init-db (DESIGN 10) */
	CONFIG_MODE_PAUSE,      /* pgleader pause (DESIGN 11) */
	CONFIG_MODE_RESUME,     /* pgleader resume (DESIGN 11) */
	CONFIG_MODE_SWITCHOVER, /* pgleader switchover (DESIGN 11) */
	CONFIG_MODE_TRIGGER,    /* pgleader trigger (DESIGN 13) */
};

/* One job (DESIGN 10): the command line's is named "default"; a file's
 * [job.NAME] sections one each. Keys a section leaves out take the
 * [pgleader] section's value (timezone, jitter, max_runtime, missed,
 * missed_window, rerun_interrupted, grace_period, restart, shell,
 * environment, environment_file, working_directory, user, group), never
 * its schedule or command. */
struct config_job {
	char *name;              /* 1-63 bytes of [A-Za-z0-9_.-] */
	char **command;          /* NULL-terminated argv */
	char *schedule;          /* NULL: runs all the time while leading */
	char *timezone;          /* tz database name, default "UTC" */
	int64_t jitter_ms;       /* 0: none */
	int64_t max_runtime_ms;  /* -1: none */
	enum missed_policy missed;
	int64_t missed_window_ms; /* -1: one interval of the schedule */
	bool rerun_interrupted;
	enum overlap_policy overlap;
	int64_t grace_period_ms;
	enum restart_policy restart; /* for a job without a schedule */
	/* The job's process (DESIGN 13), as written; process is what they
	 * resolve to when the daemon loads them (the environment file read,
	 * the user and group looked up). */
	bool shell;              /* command run as /bin/sh -c COMMAND */
	char *environment;       /* systemd's Environment= quoting */
	char *environment_file;  /* absolute; a leading '-': may be missing */
	char *working_directory; /* absolute */
	char *user;
	char *group;
	struct job_process process;
	enum output_mode output;     /* never AUTO once loaded */
	int64_t output_tail;         /* bytes of a run's output kept in its row; 0: none */
	/* DESIGN 13: a run that ends failed or timed_out is tried again as
	 * attempts 2 .. retries+1 of its tick, the first retry_delay_ms after
	 * it ended, each next twice as long, at most retry_max_delay_ms; and
	 * on_failure (NULL: none) runs once across the fleet for a failed run
	 * with no attempt to follow, bounded by on_failure_timeout_ms. */
	int retries;
	int64_t retry_delay_ms;
	int64_t retry_max_delay_ms;
	char *on_failure;
	int64_t on_failure_timeout_ms;
};

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
	int queue_depth;
	char *poll_dsn;          /* NULL: polling standbys poll over their
				  * lock session (DESIGN 15) */
	int64_t retry_interval_ms;
	int64_t ping_interval_ms;
	int64_t ping_timeout_ms;
	int ping_failures;
	int64_t server_lease_ms; /* 0 = off */
	int64_t grace_period_ms;
	int64_t drain_timeout_ms; /* DESIGN 13: 0, none */
	int64_t takeover_delay_ms;
	int priority;            /* 0: never leads (DESIGN 11) */
	int64_t priority_delay_ms;
	enum restart_policy restart;
	bool nonblock;
	int64_t wait_timeout_ms; /* -1 = wait for ever */
	int conflict_exit_code;
	int restart_limit;       /* 0 = no limit */
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
	bool status_mode;        /* "pgleader status" (mode == STATUS) */
	bool json;               /* status --json, runs --json */
	bool watch;              /* status --watch */

	/* DESIGN 10 and 11. jobs[] always holds every job of the daemon: the
	 * command line's (or the file's [pgleader] command) as "default"
	 * first, then the [job.NAME] sections in file order; command above
	 * is jobs[0].command when there is a default job. */
	enum config_mode mode;
	struct config_job *jobs;
	size_t n_jobs;
	bool job_sections;       /* the file had [job.NAME] sections */
	int64_t once_per_ms;     /* --once-per; 0: off */
	char *schema;            /* the ledger's schema, default "pgleader" */
	char *ledger_owner;      /* --ledger-owner ROLE: a role trusted to own
				  * the ledger besides this one's own; NULL: none */
	char *grant_to;          /* init-db --grant-to ROLE; NULL: no grants */
	int64_t keep_runs_ms;    /* default 720h */
	char *runs_job;          /* runs, pause, resume, trigger --job NAME; NULL:
				  * every job (trigger: the lock's only job) */
	int64_t runs_since_ms;   /* runs --since DUR; -1: all */
	bool runs_failed;        /* runs --failed: only runs that did not succeed */
	int64_t runs_output_id;  /* runs --output RUN_ID; 0: list the runs */
	bool print_sql;          /* init-db --print-sql */
	char *switchover_to;     /* switchover --to NODE; NULL: any standby */
	int64_t switchover_wait_ms; /* switchover --wait DUR; default 30s; trigger
				     * --wait DUR: how long to wait for the run */
	bool trigger_wait;       /* trigger --wait DUR given: wait for the run */
	bool force;              /* pause, resume, switchover --force: a job or
				  * node no node announced is written anyway */
	/* True when the daemon needs the ledger: a schedule, [job.NAME]
	 * sections or --once-per. Never true for a plain single command,
	 * which must not touch the ledger (DESIGN 10). */
	bool uses_ledger;
	/* The job keys as [pgleader], the environment and the command line
	 * set them: the default job's (name and command unused). Read
	 * jobs[] instead: a [job.NAME] section inherits only the file's
	 * [pgleader] values, or the defaults. */
	struct config_job top;
	/* A PGLEADER_ variable near a key's name, ignored: one line for the
	 * log once it is set up ("" when none; options_env_hint). */
	char env_hint[256];
};

/* What config_load returns besides the two exit codes it passes on from
 * options.h: EXIT_USAGE (bad command line) and EXIT_CONFIG (bad file,
 * environment or combination). */
enum config_result {
	CONFIG_OK = 0,
	CONFIG_HELP,            /* --help: print config_usage() to stdout, exit 0 */
	CONFIG_VERSION,         /* --version */
};

/* Fills cfg from defaults, then the file (-c or PGLEADER_CONFIG), then
 * PGLEADER_<KEY> environment variables, then argv; validates the result.
 * Returns an enum config_result, or on error EXIT_USAGE or EXIT_CONFIG with one
 * line in err that names the option, variable or file:line. */
int config_load(struct config *cfg, int argc, char **argv, char *err,
		size_t errlen);
void config_free(struct config *cfg);

/* DESIGN 13: a reload's fresh configuration keeps old's value of each key
 * that takes a restart (dsn, lock_key, lock_name, schema, node_id,
 * http_addr, failsafe_peers, the timings, ...): names gets those that
 * differed, ", "-joined; returns how many. */
size_t config_keep_restart_keys(struct config *fresh, const struct config *old,
				char *names, size_t len);

void config_usage(FILE *out);

#endif
