/* Unit tests of the intrusive string-keyed hash map: insert, get, remove, growth, walking. */
#include "tau/hmap.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct item {
	int value;
	tau_hmap_node node;
	char name[16];
} item;

#define N 5000

static void test_map(void **state)
{
	static item items[N];
	static bool seen[N];
	tau_hmap m;
	tau_hmap_iter it;
	tau_hmap_node *n;
	size_t count = 0;

	(void)state;
	assert_int_equal(tau_hmap_init(&m, 3), 0);
	assert_int_equal(m.n_buckets, 4);
	assert_null(tau_hmap_get(&m, "absent"));
	for (int i = 0; i < N; i++) {
		items[i].value = i;
		snprintf(items[i].name, sizeof(items[i].name), "node-%d", i);
		tau_hmap_insert(&m, &items[i].node, items[i].name);
	}
	assert_int_equal(m.len, N);
	assert_true(m.n_buckets >= N); /* grew from 4 */
	for (int i = 0; i < N; i++) {
		char key[16];

		snprintf(key, sizeof(key), "node-%d", i);
		n = tau_hmap_get(&m, key);
		assert_non_null(n);
		assert_int_equal(TAU_HMAP_ENTRY(n, item, node)->value, i);
	}
	/* Walk, removing every odd entry on the way. */
	tau_hmap_iter_init(&it, &m);
	while ((n = tau_hmap_iter_next(&it)) != NULL) {
		item *e = TAU_HMAP_ENTRY(n, item, node);

		assert_false(seen[e->value]);
		seen[e->value] = true;
		count++;
		if (e->value % 2 == 1)
			tau_hmap_remove(&m, n);
	}
	assert_int_equal(count, N);
	assert_int_equal(m.len, N / 2);
	assert_null(tau_hmap_get(&m, "node-7"));
	assert_non_null(tau_hmap_get(&m, "node-8"));
	/* A removed entry can come back. */
	tau_hmap_insert(&m, &items[7].node, items[7].name);
	assert_ptr_equal(tau_hmap_get(&m, "node-7"), &items[7].node);
	tau_hmap_destroy(&m);
	assert_null(m.buckets);
}

static void test_empty_walk_and_hash(void **state)
{
	tau_hmap m;
	tau_hmap_iter it;

	(void)state;
	assert_int_equal(tau_hmap_init(&m, 0), 0);
	assert_int_equal(m.n_buckets, 64);
	tau_hmap_iter_init(&it, &m);
	assert_null(tau_hmap_iter_next(&it));
	assert_null(tau_hmap_iter_next(&it));
	tau_hmap_destroy(&m);
	/* FNV-1a 64 reference values. */
	assert_true(tau_hmap_hash("") == 0xcbf29ce484222325ULL);
	assert_true(tau_hmap_hash("a") == 0xaf63dc4c8601ec8cULL);
}

typedef struct {
	char name[16];
	tau_hmap_node node; /* not first: destroy_free must step back to the allocation */
} owned;

static void test_destroy_free_frees_every_entry(void **state)
{
	tau_hmap m;

	(void)state;
	assert_int_equal(tau_hmap_init(&m, 4), 0);
	for (int i = 0; i < 20; i++) {
		owned *o = calloc(1, sizeof(*o));

		assert_non_null(o);
		snprintf(o->name, sizeof(o->name), "key-%d", i);
		tau_hmap_insert(&m, &o->node, o->name);
	}
	assert_int_equal(m.len, 20);
	/* leaks or a bad pointer would fail the ASan build, which runs every unit test */
	tau_hmap_destroy_free(&m, offsetof(owned, node));
	assert_null(m.buckets);
	assert_int_equal(m.len, 0);
	assert_int_equal(tau_hmap_init(&m, 0), 0);
	tau_hmap_destroy_free(&m, offsetof(owned, node));
	assert_null(m.buckets);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_map),
	        cmocka_unit_test(test_empty_walk_and_hash),
	        cmocka_unit_test(test_destroy_free_frees_every_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
