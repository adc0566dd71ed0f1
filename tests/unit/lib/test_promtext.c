/*
 * test_promtext.c - the Prometheus text pieces: HELP/TYPE lines, escaped label
 * values, quantities as exact sample values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tau/promtext.h"

static void test_family_and_scalar(void **state)
{
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	tau_prom_scalar(&b, "tau_x_total", "counter", "Things done.", 42);
	assert_int_equal(tau_buf_error(&b), 0);
	assert_string_equal(b.p, "# HELP tau_x_total Things done.\n# TYPE tau_x_total counter\n"
	                         "tau_x_total 42\n");
	tau_buf_free(&b);
}

static void test_label_value_escaped(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	        {"", ""},
	        {"nvidia.com/gpu", "nvidia.com/gpu"},
	        {"a\"b", "a\\\"b"},
	        {"back\\slash", "back\\\\slash"},
	        {"two\nlines", "two\\nlines"},
	        {"\"\\\n", "\\\"\\\\\\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tau_buf b = TAU_BUF_INIT(0);

		tau_buf_append_str(&b, "<");
		tau_prom_label_value(&b, cases[i].in);
		tau_buf_append_str(&b, ">");
		assert_int_equal(tau_buf_error(&b), 0);
		assert_true(strncmp(b.p, "<", 1) == 0);
		b.p[b.len - 1] = '\0';
		assert_string_equal(b.p + 1, cases[i].want);
		tau_buf_free(&b);
	}
}

static void test_labelled_sample(void **state)
{
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	tau_prom_labelled(&b, "tau_x_total", "code", "OK", 7);
	tau_prom_labelled(&b, "tau_x_nodes", "flavor", "h\"100\n", UINT64_MAX);
	assert_int_equal(tau_buf_error(&b), 0);
	assert_string_equal(b.p, "tau_x_total{code=\"OK\"} 7\n"
	                         "tau_x_nodes{flavor=\"h\\\"100\\n\"} 18446744073709551615\n");
	tau_buf_free(&b);
}

static void test_quantity_values(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	        {"8", "8"},
	        {"94940m", "94.94"},
	        {"1500m", "1.5"},
	        {"1001m", "1.001"},
	        {"1886Gi", "2025077080064"},
	        {"-500m", "-0.5"},
	        {"0", "0"},
	        {"10E", "10e18"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tau_quantity q;
		char out[64];

		assert_int_equal(tau_quantity_parse_str(&q, cases[i].in), 0);
		assert_int_equal(tau_prom_quantity_value(out, sizeof(out), &q), 0);
		assert_string_equal(out, cases[i].want);
	}
	{
		tau_quantity q;
		char tiny[2];

		assert_int_equal(tau_quantity_parse_str(&q, "123"), 0);
		assert_true(tau_prom_quantity_value(tiny, sizeof(tiny), &q) < 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_family_and_scalar),
	        cmocka_unit_test(test_label_value_escaped),
	        cmocka_unit_test(test_labelled_sample),
	        cmocka_unit_test(test_quantity_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
