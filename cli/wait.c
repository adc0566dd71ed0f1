/*
 * wait.c - the poll loop every waiting `tau` command runs on.
 *
 * The one idea: the loop (deadline on the monotonic clock, look, note, sleep)
 * is here once; a command brings only its look (one GET and what it prints
 * about it) and what it says while waiting, and decides what a timeout means
 * from the 0 it gets back.  The CLI polls the API rather than watching it: a
 * command that waits a few minutes gains nothing from a watch and would lose
 * the answer to a dropped connection.
 */
#include "wait.h"

#include "tau/clock.h"

#include <stddef.h>

int tau_cli_wait(tau_cli_wait_look look, tau_cli_wait_note note, void *arg, int64_t timeout_ms,
                 uint64_t interval_ms)
{
	uint64_t deadline = tau_clock_mono_ms() + (timeout_ms > 0 ? (uint64_t)timeout_ms : 0);

	for (;;) {
		int v = look(arg);

		if (v != 0)
			return v;
		if (timeout_ms <= 0 || tau_clock_mono_ms() >= deadline)
			return 0;
		if (note != NULL)
			note(arg);
		tau_clock_sleep_ms(interval_ms);
	}
}
