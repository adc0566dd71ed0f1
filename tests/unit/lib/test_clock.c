/* Unit tests of the monotonic and wall clocks, the sleep, and RFC 3339 stamps. */
#include "tau/clock.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

static void test_mono_units_agree_and_never_go_back(void **state)
{
	uint64_t ms0 = tau_clock_mono_ms(), us = tau_clock_mono_us(), ms1 = tau_clock_mono_ms();

	(void)state;
	assert_true(ms1 >= ms0);
	assert_true(us / 1000 >= ms0);
	assert_true(us / 1000 <= ms1);
}

static void test_wall_is_the_date(void **state)
{
	uint64_t before = (uint64_t)time(NULL);
	uint64_t ms = tau_clock_wall_ms(), us = tau_clock_wall_us();
	uint64_t after = (uint64_t)time(NULL);

	(void)state;
	assert_true(ms / 1000 >= before && ms / 1000 <= after);
	assert_true(us / 1000000 >= before && us / 1000000 <= after);
	assert_true(us / 1000 >= ms);
}

static void test_sleep_waits_at_least_its_time(void **state)
{
	uint64_t t0 = tau_clock_mono_us();

	(void)state;
	tau_clock_sleep_ms(20);
	assert_true(tau_clock_mono_us() - t0 >= 20000);
	t0 = tau_clock_mono_us();
	tau_clock_sleep_ms(0); /* returns at once */
	assert_true(tau_clock_mono_us() - t0 < 1000000);
}

static void test_rfc3339(void **state)
{
	char buf[TAU_RFC3339_LEN];

	(void)state;
	assert_int_equal(tau_rfc3339(buf, 0), 0);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	assert_int_equal(tau_rfc3339(buf, 1796233871), 0);
	assert_string_equal(buf, "2026-12-02T17:51:11Z");
	/* Year 10000 does not fit four digits: refused with a message. */
	assert_int_equal(tau_rfc3339(buf, (time_t)253402300800LL), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "time 253402300800 is outside RFC 3339");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_mono_units_agree_and_never_go_back),
	        cmocka_unit_test(test_wall_is_the_date),
	        cmocka_unit_test(test_sleep_waits_at_least_its_time),
	        cmocka_unit_test(test_rfc3339),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
