/* Unit tests of the capacity pool: rules P1-P3 and incremental = recompute. */
#include "inventory/pool.h"
#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A node under construction for the tests. */
typedef struct test_node {
	const char *name;
	char *keys[8];
	char *values[8];
	size_t n_labels;
	tau_node_resource res[8];
	size_t n_res;
	bool ready, schedulable, deleting;
} test_node;

static void add_label(test_node *n, const char *k, const char *v)
{
	n->keys[n->n_labels] = (char *)k;
	n->values[n->n_labels] = (char *)v;
	n->n_labels++;
}

static void add_res(test_node *n, const char *name, const char *qty)
{
	assert_int_equal(tau_quantity_parse_str(&n->res[n->n_res].value, qty), 0);
	n->res[n->n_res].name = (char *)name;
	n->n_res++;
}

static test_node gpu_node(const char *name, const char *cls)
{
	test_node n = {.name = name, .ready = true, .schedulable = true};

	add_label(&n, "kubernetes.io/os", "linux");
	if (cls != NULL)
		add_label(&n, TAU_GPU_CLASS_LABEL, cls);
	add_res(&n, "nvidia.com/gpu", "8");
	add_res(&n, "cpu", "94940m");
	add_res(&n, "memory", "1980106432Ki");
	return n;
}

/* Borrowed facts over the test node's storage (the pool copies them). */
static tau_node_facts view(test_node *t)
{
	tau_node_facts v = {
	        .name = (char *)t->name,
	        .label_keys = t->keys,
	        .label_values = t->values,
	        .n_labels = t->n_labels,
	        .ready = t->ready,
	        .schedulable = t->schedulable,
	        .deleting = t->deleting,
	        .allocatable = t->res,
	        .n_allocatable = t->n_res,
	};

	for (size_t i = 0; i < t->n_labels; i++) {
		if (strcmp(t->keys[i], "kubernetes.io/os") == 0)
			v.os = t->values[i];
	}
	return v;
}

static void upsert(tau_pool *p, test_node *t)
{
	tau_node_facts v = view(t);

	assert_int_equal(tau_pool_upsert_node(p, &v), 0);
}

/* The pool rendered as "flavor(nodes):name=qty,...;" for exact comparison. */
static char *render(const tau_pool *p)
{
	static char buf[8192];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < tau_pool_flavor_count(p); i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(p, i);

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s(%zu):", f->name,
		                        f->nodes);
		for (size_t r = 0; r < f->n_resources; r++) {
			char q[TAU_QUANTITY_STR_MAX];

			assert_int_equal(tau_pool_sum_format(q, sizeof(q), &f->resources[r]), 0);
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s=%s,",
			                        f->resources[r].name, q);
		}
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, ";");
	}
	return buf;
}

static void test_counts_ready_linux_gpu_nodes(void **state)
{
	tau_pool *p = NULL;
	test_node a = gpu_node("a", "h100"), b = gpu_node("b", "h100"), c = gpu_node("c", "a100");

	(void)state;
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &a);
	upsert(p, &b);
	upsert(p, &c);
	assert_string_equal(render(p),
	                    "a100(1):cpu=94940m,memory=1980106432Ki,nvidia.com/gpu=8,;"
	                    "h100(2):cpu=189880m,memory=3960212864Ki,nvidia.com/gpu=16,;");
	tau_pool_free(p);
}

/* One row per P1 exclusion: the node is known but adds nothing. */
static void test_rules_table(void **state)
{
	static const struct {
		const char *why;
		int rule;
	} rows[] = {
	        {"windows", TAU_POOL_RULE_LINUX},         {"no-class", TAU_POOL_RULE_GPU_CLASS},
	        {"notready", TAU_POOL_RULE_READY},        {"cordoned", TAU_POOL_RULE_SCHEDULABLE},
	        {"deleting", TAU_POOL_RULE_NOT_DELETING}, {"selector", TAU_POOL_RULE_SELECTOR},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tau_pool *p = NULL;
		tau_selector *sel = NULL;
		tau_pool_rule rules[TAU_POOL_RULE_COUNT];
		test_node n = gpu_node("n", strcmp(rows[i].why, "no-class") == 0 ? NULL : "h100");

		assert_int_equal(tau_pool_new(&p), 0);
		if (strcmp(rows[i].why, "windows") == 0)
			n.values[0] = (char *)"windows";
		n.ready = strcmp(rows[i].why, "notready") != 0;
		n.schedulable = strcmp(rows[i].why, "cordoned") != 0;
		n.deleting = strcmp(rows[i].why, "deleting") == 0;
		if (strcmp(rows[i].why, "selector") == 0) {
			assert_int_equal(tau_selector_parse(&sel, "pool=research"), 0);
			assert_int_equal(tau_pool_set_selector(p, sel), 0);
		}
		upsert(p, &n);
		assert_int_equal(tau_pool_node_count(p), 1);
		assert_int_equal(tau_pool_flavor_count(p), 0);
		assert_int_equal(tau_pool_explain(p, "n", rules), 0);
		for (int r = 0; r < TAU_POOL_RULE_COUNT; r++)
			assert_int_equal(rules[r].pass, r != rows[i].rule);
		assert_true(strlen(rules[rows[i].rule].detail) > 0);
		tau_pool_free(p);
	}
}

static void test_selector_change_recomputes(void **state)
{
	tau_pool *p = NULL;
	tau_selector *sel = NULL;
	test_node a = gpu_node("a", "h100"), b = gpu_node("b", "h100");

	(void)state;
	add_label(&a, "pool", "research");
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &a);
	upsert(p, &b);
	assert_string_equal(render(p),
	                    "h100(2):cpu=189880m,memory=3960212864Ki,nvidia.com/gpu=16,;");
	assert_int_equal(tau_selector_parse(&sel, "pool in (research)"), 0);
	assert_int_equal(tau_pool_set_selector(p, sel), 0);
	assert_string_equal(render(p), "h100(1):cpu=94940m,memory=1980106432Ki,nvidia.com/gpu=8,;");
	assert_int_equal(tau_pool_set_selector(p, NULL), 0);
	assert_int_equal(tau_pool_flavor_at(p, 0)->nodes, 2);
	tau_pool_free(p);
}

/* The selector the pool already applies (a TauCluster status update) recomputes nothing. */
static void test_same_selector_changes_nothing(void **state)
{
	tau_pool *p = NULL;
	tau_selector *sel = NULL;
	test_node a = gpu_node("a", "h100"), b = gpu_node("b", "h100");
	uint64_t gen;

	(void)state;
	add_label(&a, "pool", "research");
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &a);
	upsert(p, &b);
	gen = tau_pool_generation(p);
	assert_int_equal(tau_pool_set_selector(p, NULL), 0); /* none, as before */
	assert_int_equal(tau_pool_generation(p), gen);
	assert_int_equal(tau_selector_parse(&sel, "pool=research"), 0);
	assert_int_equal(tau_pool_set_selector(p, sel), 0);
	assert_true(tau_pool_generation(p) != gen);
	gen = tau_pool_generation(p);
	assert_int_equal(tau_selector_parse(&sel, "pool=research"), 0);
	assert_int_equal(tau_pool_set_selector(p, sel), 0);
	assert_int_equal(tau_pool_generation(p), gen);
	assert_string_equal(render(p), "h100(1):cpu=94940m,memory=1980106432Ki,nvidia.com/gpu=8,;");
	/* another selector, even one that selects the same nodes, is recomputed */
	assert_int_equal(tau_selector_parse(&sel, "pool in (research)"), 0);
	assert_int_equal(tau_pool_set_selector(p, sel), 0);
	assert_true(tau_pool_generation(p) != gen);
	assert_string_equal(render(p), "h100(1):cpu=94940m,memory=1980106432Ki,nvidia.com/gpu=8,;");
	/* the same failure again changes nothing; another reason, or a usable selector, does */
	assert_int_equal(tau_pool_set_selector_error(p, "spec.nodes.selector: bad"), 0);
	gen = tau_pool_generation(p);
	assert_int_equal(tau_pool_set_selector_error(p, "spec.nodes.selector: bad"), 0);
	assert_int_equal(tau_pool_generation(p), gen);
	assert_int_equal(tau_pool_set_selector_error(p, "spec.nodes.selector: worse"), 0);
	assert_string_equal(tau_pool_invalid_reason(p), "spec.nodes.selector: worse");
	assert_true(tau_pool_generation(p) != gen);
	assert_int_equal(tau_pool_set_selector(p, NULL), 0);
	assert_null(tau_pool_invalid_reason(p));
	assert_int_equal(tau_pool_flavor_at(p, 0)->nodes, 2);
	tau_pool_free(p);
}

/* Issue 12 item 2: an unusable selector fails closed (nothing counts) and says why. */
static void test_unusable_selector_counts_nothing(void **state)
{
	tau_pool *p = NULL;
	tau_selector *sel = NULL;
	tau_pool_rule rules[TAU_POOL_RULE_COUNT];
	test_node a = gpu_node("a", "h100"), b = gpu_node("b", "h100");

	(void)state;
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &a);
	assert_null(tau_pool_invalid_reason(p));
	assert_int_equal(tau_pool_set_selector_error(p, "spec.nodes.selector: bad value"), 0);
	assert_string_equal(tau_pool_invalid_reason(p), "spec.nodes.selector: bad value");
	assert_int_equal(tau_pool_flavor_count(p), 0);
	assert_int_equal(tau_pool_explain(p, "a", rules), 0);
	assert_false(rules[TAU_POOL_RULE_SELECTOR].pass);
	assert_string_equal(rules[TAU_POOL_RULE_SELECTOR].detail,
	                    "the TauCluster node selector is unusable, so no node counts: "
	                    "spec.nodes.selector: bad value");
	/* a node arriving meanwhile does not count either */
	upsert(p, &b);
	assert_int_equal(tau_pool_flavor_count(p), 0);
	/* a usable selector makes the pool valid again */
	assert_int_equal(tau_selector_parse(&sel, ""), 0);
	assert_int_equal(tau_pool_set_selector(p, sel), 0);
	assert_null(tau_pool_invalid_reason(p));
	assert_int_equal(tau_pool_flavor_at(p, 0)->nodes, 2);
	tau_pool_free(p);
}

/* P2: missing resources are zero; mixed notations sum exactly. */
static void test_missing_resources_and_mixed_formats(void **state)
{
	tau_pool *p = NULL;
	test_node a = {.name = "a", .ready = true, .schedulable = true};
	test_node b = {.name = "b", .ready = true, .schedulable = true};

	(void)state;
	add_label(&a, "kubernetes.io/os", "linux");
	add_label(&a, TAU_GPU_CLASS_LABEL, "x");
	add_label(&b, "kubernetes.io/os", "linux");
	add_label(&b, TAU_GPU_CLASS_LABEL, "x");
	add_res(&a, "ephemeral-storage", "119703055367");
	add_res(&b, "ephemeral-storage", "129886128Ki");
	add_res(&a, "rdma/ib", "8");
	add_res(&a, "cpu", "1.5");
	add_res(&b, "cpu", "500m");
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &a);
	upsert(p, &b);
	/* 119703055367 + 129886128*1024 = 252706450439, DecimalSI since formats differ */
	assert_string_equal(render(p), "x(2):cpu=2,ephemeral-storage=252706450439,rdma/ib=8,;");
	tau_pool_free(p);
}

static void test_invalid_input_changes_nothing(void **state)
{
	tau_pool *p = NULL;
	test_node a = gpu_node("a", "h100");
	test_node bad;
	tau_node_facts v;
	char before[8192];

	(void)state;
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &a);
	snprintf(before, sizeof(before), "%s", render(p));

	bad = gpu_node("Bad_Name", "h100");
	v = view(&bad);
	assert_int_equal(tau_pool_upsert_node(p, &v), -TAU_EINVAL);
	bad = gpu_node("a", "h100");
	assert_int_equal(tau_quantity_parse_str(&bad.res[0].value, "-8"), 0);
	v = view(&bad);
	assert_int_equal(tau_pool_upsert_node(p, &v), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "negative"));
	bad = gpu_node("a", "h100");
	bad.res[1].name = (char *)"nvidia.com/gpu"; /* duplicate */
	v = view(&bad);
	assert_int_equal(tau_pool_upsert_node(p, &v), -TAU_EINVAL);
	bad = gpu_node("a", "bad value!");
	v = view(&bad);
	assert_int_equal(tau_pool_upsert_node(p, &v), -TAU_EINVAL);
	assert_string_equal(render(p), before);
	assert_int_equal(tau_pool_remove_node(p, "nope"), -TAU_ENOTFOUND);
	tau_pool_free(p);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#define PROP_NODES 24

/* A heap copy of the test node's facts, for the pool to borrow. */
static tau_node_facts *lent_copy(test_node *t)
{
	tau_node_facts v = view(t), *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(tau_node_facts_copy(f, &v), 0);
	return f;
}

static void lent_free(tau_node_facts *f)
{
	if (f != NULL)
		tau_node_facts_clear(f);
	free(f);
}

/*
 * Property: after any random sequence of add/change/remove events, the
 * incremental pool equals a pool built fresh from the surviving nodes, in any
 * insertion order, and equals its own full recomputation (a selector change
 * re-evaluates every node).  Checked both for a pool that copies the facts
 * and for one that borrows them (as the node store lends its own).
 */
static void test_incremental_equals_recompute(void **state)
{
	static const char *const classes[] = {"h100", "a100", "l40"};
	/* The last ones are absurd: beyond int64 alone, or summing beyond it in a flavor. */
	static const char *const quantities[] = {"8", "1Gi", "512Mi", "1500m", "2",  "3e3", "1k",
	                                         "0", "7Ki", "100m",  "1e999", "4E", "6E",  "3E"};
	static const char *const resources[] = {"nvidia.com/gpu", "memory", "cpu", "rdma/ib",
	                                        "pods"};
	char names[PROP_NODES][16];

	(void)state;
	for (int i = 0; i < PROP_NODES; i++)
		snprintf(names[i], sizeof(names[i]), "node-%d", i);
	for (int round = 0; round < 200; round++) {
		tau_pool *inc = NULL, *fresh = NULL, *lent = NULL;
		test_node nodes[PROP_NODES];
		tau_node_facts *held[PROP_NODES] = {NULL};
		const tau_pool_node *handle[PROP_NODES] = {NULL};
		bool present[PROP_NODES] = {false};
		char expect[8192];

		assert_int_equal(tau_pool_new(&inc), 0);
		assert_int_equal(tau_pool_new(&lent), 0);
		for (int step = 0; step < 300; step++) {
			int i = (int)(rnd() % PROP_NODES);
			tau_node_facts *f;

			if (rnd() % 5 == 0) {
				if (present[i]) {
					assert_int_equal(tau_pool_remove_node(inc, names[i]), 0);
					assert_int_equal(tau_pool_remove_node(lent, names[i]), 0);
				}
				lent_free(held[i]);
				held[i] = NULL;
				present[i] = false;
				continue;
			}
			memset(&nodes[i], 0, sizeof(nodes[i]));
			nodes[i].name = names[i];
			nodes[i].ready = rnd() % 6 != 0;
			nodes[i].schedulable = rnd() % 6 != 0;
			nodes[i].deleting = rnd() % 10 == 0;
			add_label(&nodes[i], "kubernetes.io/os", rnd() % 12 ? "linux" : "windows");
			if (rnd() % 8)
				add_label(&nodes[i], TAU_GPU_CLASS_LABEL, classes[rnd() % 3]);
			for (size_t r = 0; r < 5; r++) {
				if (rnd() % 4 == 0)
					continue;
				add_res(&nodes[i], resources[r],
				        quantities[rnd() % (round % 2 ? 14 : 10)]);
			}
			upsert(inc, &nodes[i]);
			/* Borrowed: the old facts are freed only after the pool let go of them. */
			f = lent_copy(&nodes[i]);
			assert_int_equal(tau_pool_upsert_node_lent(lent, f, &handle[i]), 0);
			lent_free(held[i]);
			held[i] = f;
			present[i] = true;
		}
		snprintf(expect, sizeof(expect), "%s", render(inc));
		assert_string_equal(render(lent), expect);
		for (int i = 0; i < PROP_NODES; i++) {
			if (present[i])
				assert_int_equal(tau_pool_node_is_counted(handle[i]),
				                 tau_pool_node_counted(inc, names[i]) == 1);
		}
		/* Rebuild in reverse order. */
		assert_int_equal(tau_pool_new(&fresh), 0);
		for (int i = PROP_NODES - 1; i >= 0; i--) {
			if (present[i])
				upsert(fresh, &nodes[i]);
		}
		assert_string_equal(render(fresh), expect);
		/* Full recomputation of the borrowing pool. */
		assert_int_equal(tau_pool_set_selector(lent, NULL), 0);
		assert_string_equal(render(lent), expect);
		tau_pool_free(fresh);
		tau_pool_free(inc);
		tau_pool_free(lent);
		for (int i = 0; i < PROP_NODES; i++)
			lent_free(held[i]);
	}
}

/* A node of class h100 with the given GPU and cpu quantities (cpu NULL: none). */
static test_node sized_node(const char *name, const char *gpus, const char *cpu)
{
	test_node n = {.name = name, .ready = true, .schedulable = true};

	add_label(&n, "kubernetes.io/os", "linux");
	add_label(&n, TAU_GPU_CLASS_LABEL, "h100");
	if (cpu != NULL)
		add_res(&n, "cpu", cpu);
	add_res(&n, "nvidia.com/gpu", gpus);
	return n;
}

/* Issue 12 item 5: an absurd node does not count, whatever the order; its class is unaffected. */
static void test_absurd_quantity_does_not_poison_its_class(void **state)
{
	static const char *const absurd[] = {"1e999", "100E", "9223372036854775808"};

	(void)state;
	for (size_t k = 0; k < sizeof(absurd) / sizeof(absurd[0]); k++) {
		for (int order = 0; order < 2; order++) {
			tau_pool *p = NULL;
			tau_pool_rule rules[TAU_POOL_RULE_COUNT];
			test_node bad = sized_node("absurd", absurd[k], NULL);
			test_node good = sized_node("sane", "8", NULL);
			char want[160];

			assert_int_equal(tau_pool_new(&p), 0);
			upsert(p, order ? &good : &bad);
			upsert(p, order ? &bad : &good);
			assert_string_equal(render(p), "h100(1):nvidia.com/gpu=8,;");
			assert_int_equal(tau_pool_node_counted(p, "sane"), 1);
			assert_int_equal(tau_pool_explain(p, "absurd", rules), 0);
			assert_false(rules[TAU_POOL_RULE_KUEUE_RANGE].pass);
			snprintf(
			        want, sizeof(want),
			        "allocatable nvidia.com/gpu %s is more than Kueue can count (int64 "
			        "units)",
			        absurd[k]);
			assert_string_equal(rules[TAU_POOL_RULE_KUEUE_RANGE].detail, want);
			assert_true(rules[TAU_POOL_RULE_FLAVOR_SUM].pass);
			tau_pool_free(p);
		}
	}
}

/* cpu counts in milli-units: 9223372036854775.807 is the most Kueue can hold. */
static void test_cpu_counts_in_milli_units(void **state)
{
	tau_pool *p = NULL;
	tau_pool_rule rules[TAU_POOL_RULE_COUNT];
	test_node edge = sized_node("edge", "1", "9223372036854775807m");
	test_node over = sized_node("over", "1", "9223372036854776");

	(void)state;
	assert_int_equal(tau_pool_new(&p), 0);
	upsert(p, &edge);
	upsert(p, &over);
	assert_int_equal(tau_pool_node_counted(p, "edge"), 1);
	assert_int_equal(tau_pool_explain(p, "over", rules), 0);
	assert_string_equal(rules[TAU_POOL_RULE_KUEUE_RANGE].detail,
	                    "allocatable cpu 9223372036854776 is more than Kueue can count (int64 "
	                    "milli-units)");
	tau_pool_free(p);
}

/*
 * A flavor's sum never goes beyond int64: in name order each node that would
 * take it beyond is left out, and the others still count; order never matters.
 */
static void test_flavor_sum_stays_within_int64(void **state)
{
	static const int orders[][3] = {{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {2, 0, 1}};
	tau_pool_rule rules[TAU_POOL_RULE_COUNT];

	(void)state;
	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		tau_pool *p = NULL;
		test_node n[3] = {sized_node("a", "4E", NULL), sized_node("b", "6E", NULL),
		                  sized_node("c", "1E", NULL)};

		assert_int_equal(tau_pool_new(&p), 0);
		for (int i = 0; i < 3; i++)
			upsert(p, &n[orders[o][i]]);
		/* a fits, b would make 10E (> 9.22E): left out; c fits after a: 5E */
		assert_string_equal(render(p), "h100(2):nvidia.com/gpu=5E,;");
		assert_int_equal(tau_pool_flavor_at(p, 0)->left_out, 1);
		assert_int_equal(tau_pool_explain(p, "b", rules), 0);
		assert_true(rules[TAU_POOL_RULE_KUEUE_RANGE].pass);
		assert_false(rules[TAU_POOL_RULE_FLAVOR_SUM].pass);
		assert_string_equal(
		        rules[TAU_POOL_RULE_FLAVOR_SUM].detail,
		        "counting it would take flavor h100's nvidia.com/gpu beyond what "
		        "Kueue can count (int64); a flavor's nodes count in name order and "
		        "this one does not fit");
		/* a goes: b fits now (6E + 1E) */
		assert_int_equal(tau_pool_remove_node(p, "a"), 0);
		assert_string_equal(render(p), "h100(2):nvidia.com/gpu=7E,;");
		assert_int_equal(tau_pool_flavor_at(p, 0)->left_out, 0);
		/* a comes back: by name it is first, so b is left out again */
		upsert(p, &n[0]);
		assert_string_equal(render(p), "h100(2):nvidia.com/gpu=5E,;");
		/* b shrinks: everything fits */
		n[1] = sized_node("b", "1E", NULL);
		upsert(p, &n[1]);
		assert_string_equal(render(p), "h100(3):nvidia.com/gpu=6E,;");
		assert_int_equal(tau_pool_flavor_at(p, 0)->left_out, 0);
		tau_pool_free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_counts_ready_linux_gpu_nodes),
	        cmocka_unit_test(test_rules_table),
	        cmocka_unit_test(test_selector_change_recomputes),
	        cmocka_unit_test(test_same_selector_changes_nothing),
	        cmocka_unit_test(test_unusable_selector_counts_nothing),
	        cmocka_unit_test(test_missing_resources_and_mixed_formats),
	        cmocka_unit_test(test_invalid_input_changes_nothing),
	        cmocka_unit_test(test_incremental_equals_recompute),
	        cmocka_unit_test(test_absurd_quantity_does_not_poison_its_class),
	        cmocka_unit_test(test_cpu_counts_in_milli_units),
	        cmocka_unit_test(test_flavor_sum_stays_within_int64),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
