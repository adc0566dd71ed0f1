/*
 * test_prom.c - the Prometheus text pieces: HELP/TYPE lines, escaped label
 * values, quantities as exact sample values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tau/prom.h"

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

static void test_sample_with_labels(void **state)
{
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	tau_prom_sample(&b, "tau_r_total",
	                (const char *const[]){"verb", "GET", "code", "4\"04", NULL}, 3);
	tau_prom_sample(&b, "tau_s", NULL, 1);
	assert_int_equal(tau_buf_error(&b), 0);
	assert_string_equal(b.p, "tau_r_total{verb=\"GET\",code=\"4\\\"04\"} 3\ntau_s 1\n");
	tau_buf_free(&b);
}

static void test_resource_units(void **state)
{
	(void)state;
	assert_int_equal(tau_prom_resource_unit("cpu"), TAU_PROM_UNIT_CORES);
	assert_int_equal(tau_prom_resource_unit("memory"), TAU_PROM_UNIT_BYTES);
	assert_int_equal(tau_prom_resource_unit("ephemeral-storage"), TAU_PROM_UNIT_BYTES);
	assert_int_equal(tau_prom_resource_unit("hugepages-2Mi"), TAU_PROM_UNIT_BYTES);
	assert_int_equal(tau_prom_resource_unit("nvidia.com/gpu"), TAU_PROM_UNIT_COUNT);
	assert_int_equal(tau_prom_resource_unit("pods"), TAU_PROM_UNIT_COUNT);
	assert_int_equal(tau_prom_resource_unit("cpus"), TAU_PROM_UNIT_COUNT);
	assert_string_equal(tau_prom_unit_suffix(TAU_PROM_UNIT_CORES), "_cores");
	assert_string_equal(tau_prom_unit_suffix(TAU_PROM_UNIT_BYTES), "_bytes");
	assert_string_equal(tau_prom_unit_suffix(TAU_PROM_UNIT_COUNT), "");
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

static void test_histogram_buckets(void **state)
{
	tau_prom_histogram h = {0};
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	tau_prom_histogram_observe(&h, 0);        /* le 0.001 */
	tau_prom_histogram_observe(&h, 1000);     /* on the bound: le 0.001 */
	tau_prom_histogram_observe(&h, 1001);     /* le 0.0025 */
	tau_prom_histogram_observe(&h, 750000);   /* le 1 */
	tau_prom_histogram_observe(&h, 61000000); /* only +Inf */
	assert_int_equal(tau_prom_histogram_count(&h), 5);
	tau_prom_histogram_write(&b, "tau_x_seconds",
	                         (const char *const[]){"controller", "w\"s", NULL}, &h);
	assert_int_equal(tau_buf_error(&b), 0);
	assert_string_equal(b.p, "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.001\"} 2\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.0025\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.005\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.01\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.025\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.05\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.1\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.25\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"0.5\"} 3\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"1\"} 4\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"2.5\"} 4\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"5\"} 4\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"10\"} 4\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"30\"} 4\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"60\"} 4\n"
	                         "tau_x_seconds_bucket{controller=\"w\\\"s\",le=\"+Inf\"} 5\n"
	                         "tau_x_seconds_sum{controller=\"w\\\"s\"} 61.752001\n"
	                         "tau_x_seconds_count{controller=\"w\\\"s\"} 5\n");
	tau_buf_free(&b);
}

static void test_histogram_unlabelled_empty(void **state)
{
	tau_prom_histogram h = {0};
	tau_buf b = TAU_BUF_INIT(0);

	(void)state;
	tau_prom_histogram_write(&b, "tau_y_seconds", NULL, &h);
	assert_int_equal(tau_buf_error(&b), 0);
	assert_non_null(strstr(b.p, "tau_y_seconds_bucket{le=\"0.001\"} 0\n"));
	assert_non_null(strstr(b.p, "tau_y_seconds_bucket{le=\"+Inf\"} 0\n"
	                            "tau_y_seconds_sum 0.000000\n"
	                            "tau_y_seconds_count 0\n"));
	tau_buf_free(&b);
}

static void *observer(void *arg)
{
	tau_prom_histogram *h = arg;

	for (uint64_t i = 0; i < 200000; i++)
		tau_prom_histogram_observe(h, (i * 7919u) % 70000000u);
	return NULL;
}

/* Written while another thread observes: buckets never decrease and +Inf equals _count. */
static void test_histogram_consistent_while_observed(void **state)
{
	tau_prom_histogram h = {0};
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, observer, &h), 0);
	for (int round = 0; round < 200; round++) {
		tau_buf b = TAU_BUF_INIT(0);
		uint64_t prev = 0, v = 0, inf = 0, count = 0;
		const char *p;

		tau_prom_histogram_write(&b, "tau_z_seconds", NULL, &h);
		assert_int_equal(tau_buf_error(&b), 0);
		for (p = b.p; (p = strstr(p, "_bucket{le=\"")) != NULL; p++) {
			const char *close = strstr(p, "\"} ");

			assert_non_null(close);
			assert_int_equal(sscanf(close + 3, "%" SCNu64, &v), 1);
			assert_true(v >= prev);
			prev = v;
			if (strncmp(p + 12, "+Inf", 4) == 0)
				inf = v;
		}
		p = strstr(b.p, "tau_z_seconds_count ");
		assert_non_null(p);
		assert_int_equal(sscanf(p + 20, "%" SCNu64, &count), 1);
		assert_int_equal(inf, count);
		tau_buf_free(&b);
	}
	pthread_join(t, NULL);
	assert_int_equal(tau_prom_histogram_count(&h), 200000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_family_and_scalar),
	        cmocka_unit_test(test_label_value_escaped),
	        cmocka_unit_test(test_labelled_sample),
	        cmocka_unit_test(test_quantity_values),
	        cmocka_unit_test(test_sample_with_labels),
	        cmocka_unit_test(test_resource_units),
	        cmocka_unit_test(test_histogram_buckets),
	        cmocka_unit_test(test_histogram_unlabelled_empty),
	        cmocka_unit_test(test_histogram_consistent_while_observed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
