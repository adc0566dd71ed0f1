/*
 * Unit tests of tau_locked_copy: the bytes arrive, and the copy waits for a
 * writer that holds the lock, so it never sees a half-written block.
 */
#include "tau/sync.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* A block a writer fills under its lock: all fields equal when consistent. */
typedef struct triple {
	uint64_t a, b, c;
} triple;

typedef struct block {
	pthread_mutex_t mu;
	triple v;
} block;

static void test_copies(void **state)
{
	block src = {.mu = PTHREAD_MUTEX_INITIALIZER, .v = {1, 2, 3}};
	triple three = {0};
	size_t n = 0, len = 42;

	(void)state;
	tau_locked_copy(&src.mu, &three, &src.v, sizeof(three));
	assert_int_equal(three.a, 1);
	assert_int_equal(three.c, 3);
	tau_locked_copy(&src.mu, &n, &len, sizeof(n));
	assert_int_equal(n, 42);
	/* the lock is free again afterwards */
	assert_int_equal(pthread_mutex_trylock(&src.mu), 0);
	pthread_mutex_unlock(&src.mu);
}

static void *writer(void *arg)
{
	block *b = arg;

	for (uint64_t i = 1; i <= 20000; i++) {
		pthread_mutex_lock(&b->mu);
		b->v.a = i;
		b->v.b = i;
		b->v.c = i;
		pthread_mutex_unlock(&b->mu);
	}
	return NULL;
}

static void test_never_half_written(void **state)
{
	block b = {.mu = PTHREAD_MUTEX_INITIALIZER};
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, writer, &b), 0);
	for (int i = 0; i < 20000; i++) {
		triple v;

		tau_locked_copy(&b.mu, &v, &b.v, sizeof(v));
		assert_true(v.a == v.b && v.b == v.c);
	}
	pthread_join(t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_copies),
	        cmocka_unit_test(test_never_half_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
