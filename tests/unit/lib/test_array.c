/* Unit tests of array growth: doubling from 8, no-op when room exists, failures leave the array. */
#include "tau/array.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

static void test_grows_by_doubling_from_eight(void **state)
{
	int *items = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(tau_array_grow((void **)&items, &cap, 0, sizeof(*items)), 0);
	assert_null(items); /* nothing needed: nothing allocated */
	assert_int_equal(cap, 0);
	assert_int_equal(tau_array_grow((void **)&items, &cap, 1, sizeof(*items)), 0);
	assert_non_null(items);
	assert_int_equal(cap, 8);
	for (int i = 0; i < 8; i++)
		items[i] = i;
	assert_int_equal(tau_array_grow((void **)&items, &cap, 9, sizeof(*items)), 0);
	assert_int_equal(cap, 16);
	assert_int_equal(items[7], 7); /* kept across the move */
	assert_int_equal(tau_array_grow((void **)&items, &cap, 100, sizeof(*items)), 0);
	assert_int_equal(cap, 128);
	items[99] = 99;
	free(items);
}

static void test_room_enough_changes_nothing(void **state)
{
	char *items = malloc(5);
	char *before = items;
	size_t cap = 5;

	(void)state;
	assert_non_null(items);
	assert_int_equal(tau_array_grow((void **)&items, &cap, 5, 1), 0);
	assert_ptr_equal(items, before);
	assert_int_equal(cap, 5);
	free(items);
}

static void test_failure_leaves_array_untouched(void **state)
{
	int *items = NULL;
	int *before;
	size_t cap = 0;

	(void)state;
	assert_int_equal(tau_array_grow((void **)&items, &cap, 3, sizeof(*items)), 0);
	items[2] = 42;
	before = items;
	tau_error_clear();
	/* More bytes than the address space: refused before any allocation. */
	assert_int_equal(tau_array_grow((void **)&items, &cap, SIZE_MAX / 2, sizeof(*items)),
	                 -TAU_ENOMEM);
	assert_int_equal(tau_error_last()->code, TAU_ENOMEM);
	assert_string_equal(tau_error_last()->msg, "out of memory");
	assert_ptr_equal(items, before);
	assert_int_equal(cap, 8);
	assert_int_equal(items[2], 42);
	/* A count whose doubling would overflow size_t itself. */
	assert_int_equal(tau_array_grow((void **)&items, &cap, SIZE_MAX, 1), -TAU_ENOMEM);
	assert_ptr_equal(items, before);
	assert_int_equal(cap, 8);
	free(items);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_grows_by_doubling_from_eight),
	        cmocka_unit_test(test_room_enough_changes_nothing),
	        cmocka_unit_test(test_failure_leaves_array_untouched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
