/* Unit tests of tau_env_get: it reads the process environment, NULL when unset. */
#define _POSIX_C_SOURCE 200809L
#include "tau/env.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

static void test_reads_the_environment(void **state)
{
	tau_env_fn env = tau_env_get;

	(void)state;
	assert_int_equal(setenv("TAU_TEST_ENV_VALUE", "42", 1), 0);
	assert_string_equal(env("TAU_TEST_ENV_VALUE"), "42");
	assert_int_equal(setenv("TAU_TEST_ENV_VALUE", "", 1), 0);
	assert_string_equal(env("TAU_TEST_ENV_VALUE"), "");
	assert_int_equal(unsetenv("TAU_TEST_ENV_VALUE"), 0);
	assert_null(env("TAU_TEST_ENV_VALUE"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_reads_the_environment),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
