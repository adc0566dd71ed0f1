/*
 * wait.h - the one poll loop of the `tau` commands that wait for a state
 * (tau cluster install's readiness gate, tau workspace create --wait, tau
 * workspace delete --wait): look, and until the answer comes or the deadline
 * passes, say what is awaited and look again after an interval.
 */
#ifndef TAU_CLI_WAIT_H
#define TAU_CLI_WAIT_H

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

#endif /* TAU_CLI_WAIT_H */
