/*
 * test_workqueue.c - work queue semantics: deduplication, one worker per
 * key, delayed adds, per-key exponential backoff plus the overall bucket,
 * forget, shutdown and draining, and a multi-threaded exclusivity check.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/workqueue.h"

static tau_workqueue *new_queue(double qps)
{
	tau_workqueue_options o = {.qps = qps};
	tau_workqueue *q = NULL;

	assert_int_equal(tau_workqueue_new(&q, &o), 0);
	return q;
}

static char *take(tau_workqueue *q)
{
	char *k = NULL;

	assert_int_equal(tau_workqueue_get(q, &k, 1000), 0);
	return k;
}

static void test_dedup_and_fifo(void **state)
{
	tau_workqueue *q = new_queue(-1);
	char *k;

	(void)state;
	assert_int_equal(tau_workqueue_add(q, "ns/a"), 0);
	assert_int_equal(tau_workqueue_add(q, "ns/b"), 0);
	assert_int_equal(tau_workqueue_add(q, "ns/a"), 0);
	assert_int_equal(tau_workqueue_len(q), 2);
	k = take(q);
	assert_string_equal(k, "ns/a");
	tau_workqueue_done(q, k);
	free(k);
	k = take(q);
	assert_string_equal(k, "ns/b");
	tau_workqueue_done(q, k);
	free(k);
	assert_int_equal(tau_workqueue_len(q), 0);
	assert_int_equal(tau_workqueue_get(q, &k, 10), -TAU_ETIMEOUT);
	assert_int_equal(tau_workqueue_add(q, ""), -TAU_EINVAL);
	tau_workqueue_free(q);
}

/* adds count keys queued (not duplicates), retries the rate-limited adds; the time a key
 * waited lands in the queue-latency histogram when a worker takes it. */
static void test_stats_and_queue_latency(void **state)
{
	tau_workqueue_options o = {.qps = -1, .base_delay_ms = 60000}; /* the retry stays delayed */
	tau_workqueue *q = NULL;
	const tau_prom_histogram *lat;
	tau_workqueue_stats st;
	uint64_t slow;
	char *k;

	(void)state;
	assert_int_equal(tau_workqueue_new(&q, &o), 0);
	lat = tau_workqueue_queue_latency(q);
	assert_int_equal(tau_workqueue_add(q, "ns/a"), 0);
	assert_int_equal(tau_workqueue_add(q, "ns/a"), 0);
	assert_int_equal(tau_workqueue_add(q, "ns/b"), 0);
	tau_workqueue_stats_get(q, &st);
	assert_int_equal(st.adds, 2);
	assert_int_equal(st.retries, 0);
	assert_int_equal(st.depth, 2);
	assert_int_equal(tau_prom_histogram_count(lat), 0);
	tau_clock_sleep_ms(30);
	k = take(q);
	assert_string_equal(k, "ns/a");
	assert_int_equal(tau_prom_histogram_count(lat), 1);
	/* It waited at least 30 ms: nothing in the buckets up to 25 ms. */
	slow = atomic_load(&lat->in_bucket[0]) + atomic_load(&lat->in_bucket[1]) +
	       atomic_load(&lat->in_bucket[2]) + atomic_load(&lat->in_bucket[3]) +
	       atomic_load(&lat->in_bucket[4]);
	assert_int_equal(slow, 0);
	assert_true(atomic_load(&lat->sum_us) >= 30000);
	assert_int_equal(tau_workqueue_add_rate_limited(q, k), 0);
	tau_workqueue_done(q, k);
	free(k);
	tau_workqueue_stats_get(q, &st);
	assert_int_equal(st.retries, 1);
	assert_int_equal(st.depth, 1);
	assert_int_equal(st.delayed, 1);
	free(take(q) /* ns/b */);
	tau_workqueue_free(q);
}

static void test_not_twice_while_processing(void **state)
{
	tau_workqueue *q = new_queue(-1);
	char *k, *k2 = NULL;

	(void)state;
	tau_workqueue_add(q, "x");
	k = take(q);
	/* Added again while a worker has it: held back, not handed out. */
	tau_workqueue_add(q, "x");
	tau_workqueue_add(q, "x");
	assert_int_equal(tau_workqueue_len(q), 0);
	assert_int_equal(tau_workqueue_get(q, &k2, 20), -TAU_ETIMEOUT);
	tau_workqueue_done(q, k);
	free(k);
	/* Now it is queued once. */
	assert_int_equal(tau_workqueue_len(q), 1);
	k = take(q);
	assert_string_equal(k, "x");
	tau_workqueue_done(q, k);
	free(k);
	assert_int_equal(tau_workqueue_len(q), 0);
	tau_workqueue_free(q);
}

static void test_item_backoff_and_forget(void **state)
{
	tau_workqueue *q = new_queue(-1); /* bucket off: per-key only */
	uint64_t want = 5;

	(void)state;
	for (int i = 0; i < 18; i++, want *= 2)
		assert_int_equal(tau_workqueue_when(q, "k"), want);
	/* 5 ms * 2^18 > 1000 s: capped. */
	assert_int_equal(tau_workqueue_when(q, "k"), 1000000);
	assert_int_equal(tau_workqueue_when(q, "k"), 1000000);
	assert_int_equal(tau_workqueue_requeues(q, "k"), 20);
	/* Another key has its own count. */
	assert_int_equal(tau_workqueue_when(q, "other"), 5);
	tau_workqueue_forget(q, "k");
	assert_int_equal(tau_workqueue_requeues(q, "k"), 0);
	assert_int_equal(tau_workqueue_when(q, "k"), 5);
	tau_workqueue_free(q);
}

static uint64_t fake_now;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static void test_overall_bucket(void **state)
{
	tau_workqueue_options o = {.qps = 10, .burst = 3, .now_ms = fake_clock};
	tau_workqueue *q = NULL;

	(void)state;
	fake_now = 5000;
	assert_int_equal(tau_workqueue_new(&q, &o), 0);
	/* The burst lets three distinct keys through at their item delay. */
	assert_int_equal(tau_workqueue_when(q, "a"), 5);
	assert_int_equal(tau_workqueue_when(q, "b"), 5);
	assert_int_equal(tau_workqueue_when(q, "c"), 5);
	/* Then the bucket dominates: 100 ms, 200 ms. */
	assert_int_equal(tau_workqueue_when(q, "d"), 100);
	assert_int_equal(tau_workqueue_when(q, "e"), 200);
	/* After a while the per-key delay dominates again. */
	fake_now += 100000;
	for (int i = 0; i < 10; i++)
		tau_workqueue_when(q, "a");
	fake_now += 100000;
	assert_int_equal(tau_workqueue_when(q, "a"), 5u << 11);
	tau_workqueue_free(q);
}

static void test_add_after_and_rate_limited(void **state)
{
	tau_workqueue *q = new_queue(-1);
	uint64_t t0;
	char *k;

	(void)state;
	t0 = tau_clock_mono_ms();
	assert_int_equal(tau_workqueue_add_after(q, "late", 300), 0);
	assert_int_equal(tau_workqueue_add_after(q, "soon", 50), 0);
	/* An earlier time for a waiting key wins; a later one is ignored. */
	assert_int_equal(tau_workqueue_add_after(q, "late", 100), 0);
	assert_int_equal(tau_workqueue_add_after(q, "late", 5000), 0);
	assert_int_equal(tau_workqueue_delayed(q), 2);
	assert_int_equal(tau_workqueue_len(q), 0);
	k = take(q);
	assert_string_equal(k, "soon");
	assert_true(tau_clock_mono_ms() - t0 >= 50);
	tau_workqueue_done(q, k);
	free(k);
	k = take(q);
	assert_string_equal(k, "late");
	assert_true(tau_clock_mono_ms() - t0 >= 100);
	assert_true(tau_clock_mono_ms() - t0 < 4000);
	tau_workqueue_done(q, k);
	free(k);
	/* Rate-limited adds come back after 5, 10, 20 ms. */
	for (int i = 0; i < 3; i++) {
		t0 = tau_clock_mono_ms();
		assert_int_equal(tau_workqueue_add_rate_limited(q, "r"), 0);
		k = take(q);
		assert_true(tau_clock_mono_ms() - t0 >= (5u << i));
		tau_workqueue_done(q, k);
		free(k);
	}
	assert_int_equal(tau_workqueue_requeues(q, "r"), 3);
	tau_workqueue_free(q);
}

static void test_shutdown_drains(void **state)
{
	tau_workqueue *q = new_queue(-1);
	char *k;

	(void)state;
	tau_workqueue_add(q, "a");
	tau_workqueue_shutdown(q);
	assert_int_equal(tau_workqueue_add(q, "b"), -TAU_EAGAIN);
	k = take(q);
	assert_string_equal(k, "a");
	tau_workqueue_done(q, k);
	free(k);
	assert_int_equal(tau_workqueue_get(q, &k, -1), -TAU_EAGAIN);
	tau_workqueue_free(q);
}

/* ---- many workers: a key is never processed by two at once ---- */

#define N_KEYS    16
#define N_WORKERS 4

static atomic_int busy[N_KEYS];
static atomic_int violations;
static atomic_int processed;

static void *worker(void *arg)
{
	tau_workqueue *q = arg;
	char *k;

	while (tau_workqueue_get(q, &k, -1) == 0) {
		int idx = atoi(k + 1);

		if (atomic_fetch_add(&busy[idx], 1) != 0)
			atomic_fetch_add(&violations, 1);
		/* Re-adding our own key while busy must not hand it to another worker. */
		tau_workqueue_add(q, k);
		for (volatile int spin = 0; spin < 2000; spin++)
			;
		atomic_fetch_sub(&busy[idx], 1);
		atomic_fetch_add(&processed, 1);
		tau_workqueue_done(q, k);
		free(k);
		if (atomic_load(&processed) > 4000)
			tau_workqueue_shutdown(q);
	}
	return NULL;
}

static void *wake_on_shutdown(void *arg)
{
	return worker(arg);
}

static void test_concurrent_exclusive(void **state)
{
	tau_workqueue *q = new_queue(-1);
	pthread_t th[N_WORKERS];

	(void)state;
	for (int i = 0; i < N_KEYS; i++) {
		char key[16];

		snprintf(key, sizeof(key), "k%d", i);
		tau_workqueue_add(q, key);
	}
	for (int i = 0; i < N_WORKERS; i++)
		pthread_create(&th[i], NULL, i ? worker : wake_on_shutdown, q);
	for (int i = 0; i < N_WORKERS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&violations), 0);
	assert_true(atomic_load(&processed) > 4000);
	tau_workqueue_free(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_dedup_and_fifo),
	        cmocka_unit_test(test_stats_and_queue_latency),
	        cmocka_unit_test(test_not_twice_while_processing),
	        cmocka_unit_test(test_item_backoff_and_forget),
	        cmocka_unit_test(test_overall_bucket),
	        cmocka_unit_test(test_add_after_and_rate_limited),
	        cmocka_unit_test(test_shutdown_drains),
	        cmocka_unit_test(test_concurrent_exclusive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
