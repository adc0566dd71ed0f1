/* Unit tests of the UTF-8 character length at a position. */
#include "tau/utf8.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void test_sequence(void **state)
{
	(void)state;
	assert_int_equal(tau_utf8_sequence("a", 1), 1);
	assert_int_equal(tau_utf8_sequence("ab", 2), 1); /* only the first character */
	assert_int_equal(tau_utf8_sequence("\xc3\xa9", 2), 2);
	assert_int_equal(tau_utf8_sequence("\xe2\x82\xac", 3), 3);
	assert_int_equal(tau_utf8_sequence("\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(tau_utf8_sequence("\xc3\xa9", 1), 0);     /* cut short */
	assert_int_equal(tau_utf8_sequence("\xff", 1), 0);         /* starts nothing */
	assert_int_equal(tau_utf8_sequence("\x80", 1), 0);         /* a lone continuation */
	assert_int_equal(tau_utf8_sequence("\xc0\x80", 2), 0);     /* overlong NUL */
	assert_int_equal(tau_utf8_sequence("\xed\xa0\x80", 3), 0); /* surrogate */
	assert_int_equal(tau_utf8_sequence("a", 0), 0);            /* nothing to look at */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sequence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
