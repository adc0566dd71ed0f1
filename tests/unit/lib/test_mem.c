/* Unit tests of tau_free_many: every argument freed, NULLs allowed, one argument works. */
#include "tau/mem.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_frees_every_argument(void **state)
{
	char *a = strdup("a"), *b = malloc(100), *c = strdup("c");

	(void)state;
	/* leaks would fail the ASan build, which runs every unit test */
	tau_free_many(a, NULL, b, c, NULL);
	tau_free_many(NULL);
	tau_free_many(strdup("single"));
}

static void test_n_elements(void **state)
{
	static const int five[5] = {0};
	static const char *const two[] = {"x", "y"};

	(void)state;
	assert_int_equal(TAU_N_ELEMENTS(five), 5);
	assert_int_equal(TAU_N_ELEMENTS(two), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_frees_every_argument),
	        cmocka_unit_test(test_n_elements),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
