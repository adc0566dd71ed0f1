/* Unit tests of tau_prog_help_version: --help wins, --version answers, neither goes on. */
#include "tau/prog.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

static int usage_calls;
static FILE *usage_out;

static void usage(FILE *out)
{
	usage_calls++;
	usage_out = out;
}

static void test_help_prints_usage_on_stdout(void **state)
{
	(void)state;
	usage_calls = 0;
	assert_int_equal(tau_prog_help_version("tau-test", true, true, usage), 0);
	assert_int_equal(usage_calls, 1);
	assert_ptr_equal(usage_out, stdout);
}

static void test_version_answers_without_usage(void **state)
{
	(void)state;
	usage_calls = 0;
	assert_int_equal(tau_prog_help_version("tau-test", false, true, usage), 0);
	assert_int_equal(usage_calls, 0);
}

static void test_neither_goes_on(void **state)
{
	(void)state;
	usage_calls = 0;
	assert_int_equal(tau_prog_help_version("tau-test", false, false, usage), -1);
	assert_int_equal(usage_calls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_help_prints_usage_on_stdout),
	        cmocka_unit_test(test_version_answers_without_usage),
	        cmocka_unit_test(test_neither_goes_on),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
