/*
 * wait.h - the one poll loop of the `tau` commands that wait for a state
 * (tau cluster install's readiness gate, tau workspace create --wait, tau
 * workspace delete --wait): look, and until the answer comes or the deadline
 * passes, say what is awaited and look again after an interval; and the
 * --timeout D that sets the deadline.
 */
#ifndef TAU_CLI_WAIT_H
#define TAU_CLI_WAIT_H

#include "cli.h"

#include <stdbool.h>
#include <stdint.h>

/** One look at what is awaited: >0 it came, <0 it never will (stop), 0 not yet. */
typedef int (*tau_cli_wait_look)(void *arg);

/** After a "not yet" that will be looked at again: tell the user what is awaited. */
typedef void (*tau_cli_wait_note)(void *arg);

/**
 * Look (`look(arg)`) until it answers non-zero or `timeout_ms` has passed since the call (on
 * the monotonic clock, read after each look), sleeping `interval_ms` between looks; `note`
 * (may be NULL) runs before each sleep.  timeout_ms <= 0 looks once.
 * @return the look's non-zero answer, or 0 when the time ran out with "not yet".
 */
int tau_cli_wait(tau_cli_wait_look look, tau_cli_wait_note note, void *arg, int64_t timeout_ms,
                 uint64_t interval_ms);

/**
 * A command's --timeout D, the bound of its wait: when `arg` is not NULL, *ms becomes its
 * value, min_ms to one day; else *ms is left as it is.  Prints "<cmd>: <why>" when it does
 * not parse.  @return 0, or -1 (exit TAU_CLI_USAGE).
 */
int tau_cli_wait_timeout_parse(int64_t *ms, const char *arg, int64_t min_ms, const char *cmd);

/**
 * The --timeout of a --wait (`arg`, NULL: not given), 1 ms to one day, into *ms: refused
 * without --wait ("<cmd>: --timeout belongs to --wait") or when it does not parse.  With
 * --wait the wait's bound (*ms, given or not) also bounds each request unless
 * --request-timeout says (gl).  @return 0, or -1 (exit TAU_CLI_USAGE).
 */
int tau_cli_wait_timeout(int64_t *ms, tau_cli_globals *gl, bool wait, const char *arg,
                         const char *cmd);

#endif /* TAU_CLI_WAIT_H */
