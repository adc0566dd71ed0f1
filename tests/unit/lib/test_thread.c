/* Unit tests of tau/thread.h: N workers start, wait on a monotonic deadline, and stop on the flag.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/thread.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;
	int ran, timeouts;
} shared;

static void shared_init(shared *s)
{
	pthread_mutex_init(&s->mu, NULL);
	tau_thread_cond_init_monotonic(&s->cond);
	s->stop = false;
	s->ran = s->timeouts = 0;
}

static void shared_destroy(shared *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
}

/* Waits in 10 ms monotonic slices until the flag is raised. */
static void *worker(void *arg)
{
	shared *s = arg;

	pthread_mutex_lock(&s->mu);
	s->ran++;
	while (!s->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 10 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		if (pthread_cond_timedwait(&s->cond, &s->mu, &ts) != 0)
			s->timeouts++;
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void test_start_n_then_stop_join(void **state)
{
	shared s;
	pthread_t *threads = NULL;
	int started = 0;

	(void)state;
	shared_init(&s);
	assert_int_equal(tau_thread_start_n(&threads, 4, &started, worker, &s, "a test worker"), 0);
	assert_non_null(threads);
	assert_int_equal(started, 4);
	tau_thread_stop_join(&s.mu, &s.cond, &s.stop, threads, started);
	assert_true(s.stop);
	assert_int_equal(s.ran, 4);
	free(threads);
	shared_destroy(&s);
}

static void test_monotonic_deadline_times_out(void **state)
{
	shared s;
	struct timespec ts;
	int rc;

	(void)state;
	shared_init(&s);
	/* a deadline in monotonic time that is already past returns at once */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&s.mu);
	rc = pthread_cond_timedwait(&s.cond, &s.mu, &ts);
	pthread_mutex_unlock(&s.mu);
	assert_int_not_equal(rc, 0);
	shared_destroy(&s);
}

static void test_deadline_ms(void **state)
{
	struct timespec before, ts, after;

	(void)state;
	clock_gettime(CLOCK_MONOTONIC, &before);
	tau_thread_deadline_ms(&ts, CLOCK_MONOTONIC, 1999);
	clock_gettime(CLOCK_MONOTONIC, &after);
	assert_true(ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000L);
	/* 1.999 s after a time between before and after */
	{
		int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		int64_t lo = (int64_t)before.tv_sec * 1000000000 + before.tv_nsec + 1999000000;
		int64_t hi = (int64_t)after.tv_sec * 1000000000 + after.tv_nsec + 1999000000;

		assert_true(t >= lo && t <= hi);
	}
}

static void test_raise_without_threads(void **state)
{
	shared s;

	(void)state;
	shared_init(&s);
	tau_thread_raise(&s.mu, &s.cond, &s.stop);
	assert_true(s.stop);
	tau_thread_stop_join(&s.mu, &s.cond, &s.stop, NULL, 0);
	assert_true(s.stop);
	shared_destroy(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_start_n_then_stop_join),
	        cmocka_unit_test(test_monotonic_deadline_times_out),
	        cmocka_unit_test(test_deadline_ms),
	        cmocka_unit_test(test_raise_without_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
