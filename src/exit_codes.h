/* exit_codes.h: the one table of pgleader's exit codes: the <sysexits.h>
 * ones it uses, under libc's names, and its own. man/pgleader.1 EXIT STATUS
 * and --help list every one (tests/check-docs.sh checks). */
#ifndef PGLEADER_EXIT_CODES_H
#define PGLEADER_EXIT_CODES_H

#include <sysexits.h>

/* From <sysexits.h>, and what each means for pgleader:
 * EX_OK          done: the command exited 0, or a shutdown was asked for
 * EX_USAGE       a mistake on the command line
 * EX_UNAVAILABLE a permanent database error; for a one-shot or a subcommand,
 *                also a database out of reach
 * EX_SOFTWARE    an internal error: too few descriptors, the event loop
 * EX_TEMPFAIL    the default conflict code: another session holds the lock
 * EX_CONFIG      the file, the environment, a rule, the DSN, a pooler */

#define EXIT_NO_LEADER 3     /* status: no leader; switchover...: refused */
#define EXIT_NOEXEC 126      /* the command is not executable, or no fork */
#define EXIT_NOTFOUND 127    /* the command was not found (as the shell) */
#define EXIT_SIGNAL_BASE 128 /* + N: signal N killed the command (shell) */

#endif
