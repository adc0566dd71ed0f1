/*
 * wait.c - the poll loop every waiting `tau` command runs on.
 *
 * The one idea: the loop (deadline on the monotonic clock, look, note, sleep)
 * is here once; a command brings only its look (one GET and what it prints
 * about it) and what it says while waiting, and decides what a timeout means
 * from the 0 it gets back.  The CLI polls the API rather than watching it: a
 * command that waits a few minutes gains nothing from a watch and would lose
 * the answer to a dropped connection.  The --timeout that bounds a wait is
 * read here too, so its range and its messages are the same in each command.
 */
#include "wait.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/parse.h"

#include <stddef.h>
#include <stdio.h>

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

int tau_cli_wait_timeout_parse(int64_t *ms, const char *arg, int64_t min_ms, const char *cmd)
{
	if (arg != NULL &&
	    tau_parse_duration_ms(ms, "--timeout", arg, min_ms, INT64_C(86400000)) != 0) {
		fprintf(stderr, "%s: %s\n", cmd, tau_error_last()->msg);
		return -1;
	}
	return 0;
}

int tau_cli_wait_timeout(int64_t *ms, tau_cli_globals *gl, bool wait, const char *arg,
                         const char *cmd)
{
	if (arg != NULL && !wait) {
		fprintf(stderr, "%s: --timeout belongs to --wait\n", cmd);
		return -1;
	}
	if (tau_cli_wait_timeout_parse(ms, arg, 1, cmd) < 0)
		return -1;
	/* --wait's --timeout bounds each request too, unless --request-timeout says. */
	if (wait && !gl->request_timeout_set) {
		gl->request_timeout_set = true;
		gl->request_timeout_ms = *ms;
	}
	return 0;
}
