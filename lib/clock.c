/*
 * clock.c - the monotonic and wall clocks, a sleep, and RFC 3339 stamps.
 *
 * The one idea: every read of the system clock in libtau and its programs goes
 * through here, so which clock a caller uses is visible in its name.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/clock.h"

#include "tau/error.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* `id` in units of 1/`per_second` seconds. */
static uint64_t read_clock(clockid_t id, uint64_t per_second)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * per_second + (uint64_t)ts.tv_nsec / (1000000000u / per_second);
}

uint64_t tau_clock_mono_ms(void)
{
	return read_clock(CLOCK_MONOTONIC, 1000u);
}

uint64_t tau_clock_mono_us(void)
{
	return read_clock(CLOCK_MONOTONIC, 1000000u);
}

uint64_t tau_clock_wall_ms(void)
{
	return read_clock(CLOCK_REALTIME, 1000u);
}

uint64_t tau_clock_wall_us(void)
{
	return read_clock(CLOCK_REALTIME, 1000000u);
}

void tau_clock_sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
	                      .tv_nsec = (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int tau_rfc3339(char buf[TAU_RFC3339_LEN], time_t t)
{
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0)
		return tau_error_set(TAU_EINVAL, "time %lld is outside RFC 3339", (long long)t);
	if (strftime(buf, TAU_RFC3339_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm) != TAU_RFC3339_LEN - 1)
		return tau_error_set(TAU_EINVAL, "time %lld is outside RFC 3339", (long long)t);
	return 0;
}
