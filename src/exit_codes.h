/* exit_codes.h: the one table of pgleader's exit codes: a name for each
 * reason pgleader, a subcommand or the command's fork ends with, and its
 * code, <sysexits.h>'s where it has one; and what each permanent fault
 * ends with. The election, config and options, the subcommands (status.c,
 * controls_cli.c, ledger_cli.c), main.c and child.c consult it and write
 * no code of their own. man/pgleader.1 EXIT STATUS and --help list every
 * one (tests/check-docs.sh checks). */
#ifndef PGLEADER_EXIT_CODES_H
#define PGLEADER_EXIT_CODES_H

#include <sysexits.h>

#include "fault.h"

/* done: the command exited 0, or a shutdown was asked for; a subcommand
 * did what it was asked */
#define EXIT_OK EX_OK
/* a mistake on the command line */
#define EXIT_USAGE EX_USAGE
/* a permanent database error; for a one-shot (--nonblock, --wait-timeout)
 * or a subcommand, also a database out of reach */
#define EXIT_UNAVAILABLE EX_UNAVAILABLE
/* an internal error: too few descriptors, the event loop */
#define EXIT_INTERNAL EX_SOFTWARE
/* the default conflict code (conflict_exit_code): another session holds
 * the lock */
#define EXIT_CONFLICT EX_TEMPFAIL
/* the file, the environment, a rule, the DSN, a pooler */
#define EXIT_CONFIG EX_CONFIG
#define EXIT_NO_LEADER 3     /* status: no leader; switchover...: refused;
				* runs --output: no such run */
#define EXIT_NOEXEC 126      /* the command is not executable, or no fork */
#define EXIT_NOTFOUND 127    /* the command was not found (as the shell) */
#define EXIT_SIGNAL_BASE 128 /* + N: signal N killed the command (shell) */

/* What a permanent fault ends pgleader with; 0 for a transient fault, which
 * is retried (or a lost lease). FAULT_ALREADY_RUN ends with the conflict
 * code, a parameter (conflict_exit_code), so it is not here. */
static inline int exit_code_of_fault(enum fault f)
{
	switch (f) {
	case FAULT_USAGE: return EXIT_USAGE;
	case FAULT_CONFIG: case FAULT_BAD_DSN: case FAULT_POOLER:
		return EXIT_CONFIG;
	case FAULT_AUTH: case FAULT_LEDGER: return EXIT_UNAVAILABLE;
	case FAULT_FORK: return EXIT_NOEXEC;
	case FAULT_INTERNAL: return EXIT_INTERNAL;
	case FAULT_NONE: case FAULT_ALREADY_RUN: case FAULT_UNREACHABLE:
	case FAULT_HOT_STANDBY: case FAULT_TERMINATED: case FAULT_CONNECTION:
	case FAULT_PROTOCOL: case FAULT_TIMEOUT: case FAULT_PING_TIMEOUT:
	case FAULT_COUNT:
		break;
	}
	return 0;
}

#endif
