/*
 * Unit tests of string equality (both NULL meanings), formatting into an optional buffer
 * and enum names from a table.
 */
#include "tau/str.h"

#include "tau/mem.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void test_eq_or_both_null(void **state)
{
	char a[] = "gpu", b[] = "gpu";

	(void)state;
	assert_true(tau_str_eq_or_both_null(a, b)); /* same text, different storage */
	assert_true(tau_str_eq_or_both_null(NULL, NULL));
	assert_false(tau_str_eq_or_both_null(NULL, ""));
	assert_false(tau_str_eq_or_both_null("", NULL));
	assert_false(tau_str_eq_or_both_null("gpu", "gpus"));
	assert_true(tau_str_eq_or_both_null("", ""));
}

static void test_eq_both_set(void **state)
{
	char a[] = "gpu", b[] = "gpu";

	(void)state;
	assert_true(tau_str_eq_both_set(a, b));
	assert_false(tau_str_eq_both_set(NULL, NULL)); /* two NULLs differ */
	assert_false(tau_str_eq_both_set(NULL, ""));
	assert_false(tau_str_eq_both_set("", NULL));
	assert_false(tau_str_eq_both_set("gpu", "gpus"));
	assert_true(tau_str_eq_both_set("", ""));
}

static void test_printf(void **state)
{
	char buf[8] = "unset";

	(void)state;
	tau_str_printf(buf, sizeof(buf), "node %s: %d", "n1", 42);
	assert_string_equal(buf, "node n1"); /* truncated to cap - 1 */
	tau_str_printf(buf, 0, "ignored");
	assert_string_equal(buf, "node n1");
	tau_str_printf(NULL, 16, "nowhere %d", 1); /* no buffer: nothing, no crash */
	tau_str_printf(buf, sizeof(buf), "%s", "");
	assert_string_equal(buf, "");
}

enum colour { RED, GREEN, BLUE, N_COLOURS };

static void test_enum_name(void **state)
{
	static const char *const names[] = {[RED] = "Red", [BLUE] = "Blue"};

	(void)state;
	assert_string_equal(tau_str_enum_name(names, TAU_N_ELEMENTS(names), RED, "?"), "Red");
	assert_string_equal(tau_str_enum_name(names, TAU_N_ELEMENTS(names), BLUE, "?"), "Blue");
	/* a hole in the table, a value past its end and a negative value: the fallback */
	assert_string_equal(tau_str_enum_name(names, TAU_N_ELEMENTS(names), GREEN, "?"), "?");
	assert_string_equal(tau_str_enum_name(names, TAU_N_ELEMENTS(names), N_COLOURS, "?"), "?");
	assert_string_equal(tau_str_enum_name(names, TAU_N_ELEMENTS(names), -1, "?"), "?");
	assert_null(tau_str_enum_name(names, TAU_N_ELEMENTS(names), 7, NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_eq_or_both_null),
	        cmocka_unit_test(test_eq_both_set),
	        cmocka_unit_test(test_printf),
	        cmocka_unit_test(test_enum_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
