/* Unit tests of tau_base64_value: both alphabets' values, and what each refuses. */
#include "tau/base64.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <cmocka.h>

static void test_standard_alphabet(void **state)
{
	static const char alphabet[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	(void)state;
	for (int i = 0; i < 64; i++) {
		assert_int_equal(tau_base64_value((unsigned char)alphabet[i], false), i);
		assert_int_equal(tau_base64_value((unsigned char)alphabet[i], true), i);
	}
}

static void test_url_alphabet_only_when_asked(void **state)
{
	(void)state;
	assert_int_equal(tau_base64_value('-', true), 62);
	assert_int_equal(tau_base64_value('_', true), 63);
	assert_int_equal(tau_base64_value('-', false), -1);
	assert_int_equal(tau_base64_value('_', false), -1);
}

static void test_refused(void **state)
{
	static const char refused[] = "= .\n\t@[`{~";

	(void)state;
	for (size_t i = 0; refused[i] != '\0'; i++) {
		assert_int_equal(tau_base64_value((unsigned char)refused[i], false), -1);
		assert_int_equal(tau_base64_value((unsigned char)refused[i], true), -1);
	}
	assert_int_equal(tau_base64_value(0xc3, true), -1);
	assert_int_equal(tau_base64_value(0, true), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_standard_alphabet),
	        cmocka_unit_test(test_url_alphabet_only_when_asked),
	        cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
