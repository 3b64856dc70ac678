/* output.h: a run's stdout and stderr through a pipe that pgleader reads
 * on its loop (DESIGN 13): each line to the log with the job's name, the
 * last bytes kept for the run's ledger row, the last line for the line
 * that says how the run ended. */
#ifndef PGLEADER_OUTPUT_H
#define PGLEADER_OUTPUT_H

#include <stddef.h>
#include <ev.h>

/* A line of output is logged in pieces of at most this many bytes. */
#define OUTPUT_LINE_MAX 1000

struct output;

/* For the runs of job (borrowed, for the life of the object), keeping the
 * last tail_bytes of each run's output (0: none). NULL when out of memory. */
struct output *output_new(struct ev_loop *loop, const char *job, size_t tail_bytes);
void output_free(struct output *o);

/* A new run's pipe: the write end, for the command's descriptors 1 and 2
 * (close-on-exec, so no other process keeps it), or -1 with errno (the
 * command then inherits pgleader's own). The tail and last line of the run
 * before are forgotten. */
int output_open(struct output *o);
/* The command has it, or could not be started: pgleader's copy of the
 * write end is closed, so that the pipe's end of file is the command's. */
void output_started(struct output *o);
/* The run is gone: what is still in the pipe is read (up to the bound of
 * one pipe's worth; a process that left the run and still writes is cut
 * off), an unfinished last line is logged, and the pipe is closed. */
void output_finish(struct output *o);

/* After output_finish: whether the run's output was captured at all. */
int output_captured(const struct output *o);
/* The last bytes of the run's output (at most tail_bytes; *len may be 0);
 * valid until the next output_open. NULL when not captured or out of memory. */
const char *output_tail(struct output *o, size_t *len);
/* The last line that was not blank, as logged; "" when none. */
const char *output_last_line(const struct output *o);

#endif
