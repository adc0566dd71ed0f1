/*
 * test_kube_backoff.c - the arithmetic of the jittered backoff (reflector
 * and REST retries) and the token bucket (client QPS/burst limiter).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tau/backoff.h"

static void test_reflector_sequence(void **state)
{
	/* client-go reflector: 800 ms doubling, capped at 30 s. */
	static const uint64_t want[] = {800, 1600, 3200, 6400, 12800, 25600, 30000, 30000};
	tau_backoff b;

	(void)state;
	tau_backoff_init(&b, 800, 30000, 2.0, 1.0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(tau_backoff_next(&b, 0, 0.0), want[i]);
	tau_backoff_reset(&b);
	assert_int_equal(tau_backoff_next(&b, 0, 0.0), 800);
}

static void test_jitter_bounds(void **state)
{
	tau_backoff b;

	(void)state;
	tau_backoff_init(&b, 800, 30000, 2.0, 1.0);
	/* u = 0.5 adds half the base. */
	assert_int_equal(tau_backoff_next(&b, 0, 0.5), 1200);
	assert_int_equal(tau_backoff_next(&b, 0, 0.5), 2400);
	/* u near 1 stays below 2x base. */
	assert_true(tau_backoff_next(&b, 0, 0.9999) < 6400);
	/* Jitter never pushes past the cap. */
	for (int i = 0; i < 10; i++)
		assert_true(tau_backoff_next(&b, 0, 0.99) <= 30000);
	/* Out-of-range u is clamped. */
	assert_int_equal(tau_backoff_next(&b, 0, -3.0), 30000);
	/* Random numbers are in [0,1). */
	for (int i = 0; i < 1000; i++) {
		double u = tau_backoff_rand();

		assert_true(u >= 0.0 && u < 1.0);
	}
}

static void test_reset_after_quiet(void **state)
{
	tau_backoff b;

	(void)state;
	tau_backoff_init(&b, 100, 10000, 2.0, 0.0);
	b.reset_after_ms = 120000;
	assert_int_equal(tau_backoff_next(&b, 1000, 0.0), 100);
	assert_int_equal(tau_backoff_next(&b, 2000, 0.0), 200);
	assert_int_equal(tau_backoff_next(&b, 3000, 0.0), 400);
	/* Two minutes later without trouble: start over. */
	assert_int_equal(tau_backoff_next(&b, 3000 + 120000, 0.0), 100);
	assert_int_equal(tau_backoff_next(&b, 3000 + 120001, 0.0), 200);
}

static void test_workqueue_style_no_jitter(void **state)
{
	tau_backoff b;
	uint64_t d = 0;

	(void)state;
	/* 5 ms x 2^n capped at 1000 s: the cap is reached after 18 steps. */
	tau_backoff_init(&b, 5, 1000000, 2.0, 0.0);
	for (int i = 0; i < 18; i++)
		d = tau_backoff_next(&b, 0, 0.7);
	assert_int_equal(d, 655360);
	assert_int_equal(tau_backoff_next(&b, 0, 0.7), 1000000);
}

static void test_bucket_burst_then_rate(void **state)
{
	tau_backoff_bucket tb;

	(void)state;
	tau_backoff_bucket_init(&tb, 10.0, 3, 1000);
	/* The burst is free. */
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 1000), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 1000), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 1000), 0);
	/* Then one token per 100 ms, reservations queue up. */
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 1000), 100);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 1000), 200);
	/* 250 ms later: 2.5 tokens refilled, 2 owed -> 0.5 left -> next waits 50 ms. */
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 1250), 50);
	/* A long idle refills only up to the burst. */
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 100000), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 100000), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 100000), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 100000), 100);
}

static void test_bucket_disabled_and_fractional(void **state)
{
	tau_backoff_bucket tb;

	(void)state;
	tau_backoff_bucket_init(&tb, -1.0, 0, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(tau_backoff_bucket_reserve(&tb, 0), 0);
	/* 3 qps, burst 1: waits of 334 ms (rounded up), then 667. */
	tau_backoff_bucket_init(&tb, 3.0, 1, 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 0), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 0), 334);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 0), 667);
	/* Default client-go style 5 qps / burst 10. */
	tau_backoff_bucket_init(&tb, 5.0, 10, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(tau_backoff_bucket_reserve(&tb, 0), 0);
	assert_int_equal(tau_backoff_bucket_reserve(&tb, 0), 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_reflector_sequence),
	        cmocka_unit_test(test_jitter_bounds),
	        cmocka_unit_test(test_reset_after_quiet),
	        cmocka_unit_test(test_workqueue_style_no_jitter),
	        cmocka_unit_test(test_bucket_burst_then_rate),
	        cmocka_unit_test(test_bucket_disabled_and_fractional),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
