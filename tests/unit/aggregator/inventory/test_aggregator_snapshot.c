/* Unit tests of the inventory's read API: pool snapshots for the budget controller. */
#include "budget/controller.h"
#include "dra_fixture.h"
#include "inventory/drastore.h"
#include "inventory/service.h"
#include "inventory/snapshot.h"
#include "inventory/truthrules.h"
#include "truth_fixture.h"
#include "truth_store.h"
#include "tau/error.h"
#include "tau/json.h"

#include <pthread.h>
#include <time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A Ready Linux node of class `cls` with `gpus` GPUs and label pool=`pool`. */
static void api(tau_nodestore *s, const char *name, const char *cls, int gpus, const char *pool)
{
	char json[1024];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\","
	         "\"tau.azure.com/gpu-class\":\"%s\",\"pool\":\"%s\"}},"
	         "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%d\",\"cpu\":\"1500m\"},"
	         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	         name, cls, pool, gpus);
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_node_facts_from_json(&f, root), 0);
	cJSON_Delete(root);
	assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
	tau_node_facts_clear(&f);
}

static tau_nodestore *store_with_nodes(void)
{
	tau_nodestore *s = NULL;

	/* a grace period of 0: nodes count from their Node object at the first tick */
	assert_int_equal(tau_nodestore_new(&s, 0, 0), 0);
	api(s, "b-node", "h100", 8, "research");
	api(s, "a-node", "h100", 4, "batch");
	api(s, "c-node", "a100", 2, "research");
	tau_nodestore_api_synced(s);
	tau_nodestore_tick(s, 1);
	assert_true(tau_nodestore_established(s));
	return s;
}

static void snapshot_holds_flavors_and_counted_nodes(void **state)
{
	tau_nodestore *s = store_with_nodes();
	tau_pool_snapshot *snap = NULL;
	int64_t v;

	(void)state;
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_true(snap->established);
	assert_true(snap->valid);
	assert_null(snap->invalid_reason);
	assert_int_equal(snap->n_flavors, 2);
	assert_string_equal(snap->flavors[0].name, "a100");
	assert_string_equal(snap->flavors[1].name, "h100");
	assert_int_equal(snap->flavors[1].nodes, 2);
	assert_int_equal(snap->flavors[1].n_resources, 2);
	assert_string_equal(snap->flavors[1].resources[0].name, "cpu");
	assert_int_equal(tau_quantity_milli_value(&v, &snap->flavors[1].resources[0].value), 0);
	assert_int_equal(v, 3000);
	assert_string_equal(snap->flavors[1].resources[1].name, "nvidia.com/gpu");
	assert_int_equal(tau_quantity_value(&v, &snap->flavors[1].resources[1].value), 0);
	assert_int_equal(v, 12);
	/* counted nodes by name, with their labels */
	assert_int_equal(snap->n_nodes, 3);
	assert_string_equal(snap->nodes[0].name, "a-node");
	assert_string_equal(snap->nodes[1].name, "b-node");
	assert_string_equal(snap->nodes[2].name, "c-node");
	assert_string_equal(tau_node_facts_label(&snap->nodes[0], "pool"), "batch");
	/* the snapshot is a copy: the store may change or go */
	tau_nodestore_free(s);
	assert_string_equal(snap->nodes[1].gpu_class, "h100");
	/* each node's labels are its own, in key order, packed one node after the other */
	for (size_t i = 0; i < snap->n_nodes; i++) {
		const tau_node_facts *f = &snap->nodes[i];

		assert_true(f->n_labels >= 2);
		assert_string_equal(tau_node_facts_label(f, "kubernetes.io/os"), "linux");
		assert_string_equal(f->os, "linux");
		for (size_t l = 1; l < f->n_labels; l++)
			assert_true(strcmp(f->label_keys[l - 1], f->label_keys[l]) < 0);
		assert_true(f->ready && f->schedulable && !f->deleting);
		assert_null(f->allocatable); /* the flavors hold the sums */
	}
	assert_string_equal(tau_node_facts_label(&snap->nodes[1], "pool"), "research");
	assert_string_equal(tau_node_facts_label(&snap->nodes[2], "pool"), "research");
	tau_pool_snapshot_free(snap);
}

/* The budget keeps the snapshot: its nodes are the snapshot's facts, nothing copied per node. */
static void budget_inventory_keeps_the_snapshot(void **state)
{
	tau_nodestore *s = store_with_nodes();
	tau_pool_snapshot *snap = NULL;
	tau_budget_inventory inv = {0};

	(void)state;
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	tau_nodestore_free(s);
	assert_int_equal(tau_budget_inventory_from_snapshot(&inv, snap), 0);
	assert_true(inv.established);
	assert_null(inv.problem);
	assert_ptr_equal(inv.snapshot, snap);
	assert_int_equal(inv.n_nodes, 3);
	assert_int_equal(inv.pool->n_classes, 2);
	for (size_t i = 0; i < inv.n_nodes; i++) {
		assert_null(inv.nodes[i].name);
		assert_null(inv.nodes[i].labels);
		assert_ptr_equal(inv.nodes[i].facts, &snap->nodes[i]);
	}
	assert_string_equal(inv.nodes[0].facts->name, "a-node");
	assert_string_equal(tau_node_facts_label(inv.nodes[2].facts, "pool"), "research");
	tau_budget_inventory_clear(&inv); /* frees the snapshot too (ASan: no leak, no double) */
	assert_null(inv.snapshot);
	/* a missing snapshot is refused */
	assert_int_equal(tau_budget_inventory_from_snapshot(&inv, NULL), -TAU_EINVAL);
}

/* Node `name` of class h100 with 8 GPUs; with `f` its agent reports f's node truth. */
static void truth_node(tau_nodestore *s, const char *name, truth_fixture *f, bool ready)
{
	truth_store_node(s, name, "h100", f, ready);
}

static truth_fixture *sick(const char *name, size_t gpu)
{
	truth_fixture *f = truth_fixture_node(name, 8, 0);

	truth_fixture_gpu_unhealthy(f, gpu, "row remap pending");
	return f;
}

/*
 * The NodeTruthAgrees summary: counted nodes with node truth only (n4 is not Ready, n5 has no
 * agent), the disagreeing ones counted, the first three named with their first failing rule;
 * the budget's inventory hands it on.
 */
static void snapshot_summarises_node_truth(void **state)
{
	tau_nodestore *s = NULL;
	tau_pool_snapshot *snap = NULL;
	tau_budget_inventory inv = {0};

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 0), 0);
	truth_node(s, "n1", truth_fixture_node("n1", 8, 2), true);
	truth_node(s, "n2", sick("n2", 3), true);
	truth_node(s, "n3", sick("n3", 1), true);
	truth_node(s, "n4", sick("n4", 1), false);
	truth_node(s, "n5", NULL, true);
	truth_node(s, "n6", sick("n6", 0), true);
	truth_node(s, "n7", sick("n7", 7), true);
	tau_nodestore_api_synced(s);
	tau_nodestore_tick(s, 1);
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_int_equal(snap->n_nodes, 6);
	assert_int_equal(snap->truth.reporting, 5);
	assert_int_equal(snap->truth.disagreeing, 4);
	assert_int_equal(snap->truth.n_examples, 3);
	assert_string_equal(snap->truth.examples[0].node, "n2");
	assert_string_equal(snap->truth.examples[0].rule, "agent.gpu-health");
	assert_int_equal(snap->truth.examples[0].more_rules, 0);
	assert_non_null(strstr(snap->truth.examples[0].detail, "the agent sees 7 healthy"));
	assert_non_null(strstr(snap->truth.examples[0].detail, "GPU 3"));
	assert_string_equal(snap->truth.examples[1].node, "n3");
	assert_string_equal(snap->truth.examples[2].node, "n6");
	assert_int_equal(tau_budget_inventory_from_snapshot(&inv, snap), 0);
	assert_int_equal(inv.truth.reporting, 5);
	assert_int_equal(inv.truth.disagreeing, 4);
	assert_int_equal(inv.truth.n_nodes, 3);
	assert_string_equal(inv.truth.nodes[2].node, "n6");
	assert_string_equal(inv.truth.nodes[2].rule, "agent.gpu-health");
	assert_non_null(strstr(inv.truth.nodes[2].detail, "GPU 0"));
	tau_budget_inventory_clear(&inv);

	/* The store keeps each node's verdicts and follows its Node: n2 now advertises the 7
	 * GPUs its agent sees healthy, so it agrees; n3's agent reports every GPU healthy. */
	{
		tau_node_facts seven = truth_fixture_facts("n2", "h100", 7);
		tau_node_status st;

		assert_int_equal(tau_nodestore_get(s, "n2", &st), 0);
		assert_int_equal(st.truth_failed, 1u << TAU_TRUTH_RULE_GPU_HEALTH);
		assert_int_equal(tau_nodestore_api_upsert(s, &seven), 0);
		tau_node_facts_clear(&seven);
		assert_int_equal(tau_nodestore_get(s, "n2", &st), 0);
		assert_int_equal(st.truth_failed, 0);
		truth_node(s, "n3", truth_fixture_node("n3", 8, 0), true);
	}
	snap = NULL;
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_int_equal(snap->truth.reporting, 5);
	assert_int_equal(snap->truth.disagreeing, 2);
	assert_string_equal(snap->truth.examples[0].node, "n6");
	assert_string_equal(snap->truth.examples[1].node, "n7");
	tau_pool_snapshot_free(snap);
	tau_nodestore_free(s);
}

/* A DeviceClass `name` mapped by extendedResourceName `ern` (NULL: none) selecting with `cel`. */
static void dra_class(tau_dra_store *d, const char *name, const char *ern, const char *cel)
{
	char json[1024];
	cJSON *root = NULL;

	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"%s\"},\"spec\":{%s%s%s\"selectors\":[{\"cel\":{"
	         "\"expression\":\"%s\"}}]}}",
	         name, ern != NULL ? "\"extendedResourceName\":\"" : "", ern != NULL ? ern : "",
	         ern != NULL ? "\"," : "", cel);
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_dra_store_class_upsert(d, root), 0);
	cJSON_Delete(root);
}

/*
 * The DRAClassesUsable summary: classes that map to a quota resource, the unusable ones among
 * them named with the reason quoting the expression and offset (a class that maps to nothing
 * is left out, however it selects); Kueue's configuration unreadable; the budget's inventory
 * hands it on.
 */
static void snapshot_summarises_dra_classes(void **state)
{
	tau_nodestore *s = store_with_nodes();
	tau_dra_store *d = NULL;
	tau_pool_snapshot *snap = NULL;
	tau_budget_inventory inv = {0};
	cJSON *gpu = dra_fixture_gpu_class("type", "gpu");

	(void)state;
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_int_equal(snap->dra.mapped, 0); /* no DRA store: nothing to say */
	assert_string_equal(snap->dra.kueue_error, "");
	tau_pool_snapshot_free(snap);
	assert_int_equal(tau_dra_store_new(&d), 0);
	assert_int_equal(tau_dra_store_class_upsert(d, gpu), 0);
	dra_class(d, "any-gpu", "example.com/gpu", "device.driver == 'a' || device.driver == 'b'");
	dra_class(d, "nic", NULL, "device.driver.startsWith('nic')");
	assert_int_equal(tau_nodestore_set_dra(s, d), 0);
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_int_equal(snap->dra.mapped, 2);
	assert_int_equal(snap->dra.unusable, 1);
	assert_int_equal(snap->dra.n_examples, 1);
	assert_string_equal(snap->dra.examples[0].name, "any-gpu");
	assert_string_equal(snap->dra.examples[0].reason,
	                    "class any-gpu: spec.selectors[0]: selector \"device.driver == 'a' || "
	                    "device.driver == 'b'\" is outside the CEL subset the pool "
	                    "evaluates: disjunction (||) is not read at offset 21");
	assert_int_equal(tau_budget_inventory_from_snapshot(&inv, snap), 0);
	assert_int_equal(inv.dra.mapped, 2);
	assert_int_equal(inv.dra.unusable, 1);
	assert_int_equal(inv.dra.n_classes, 1);
	assert_string_equal(inv.dra.classes[0].name, "any-gpu");
	assert_ptr_equal(inv.dra.classes[0].reason, snap->dra.examples[0].reason);
	assert_null(inv.dra.kueue_error);
	tau_budget_inventory_clear(&inv);
	/* Kueue's configuration unreadable: no class counts, and the summary says why */
	assert_int_equal(tau_dra_store_set_mappings(d, NULL, 0, "key x: not YAML"), 0);
	assert_int_equal(tau_nodestore_set_dra(s, d), 0);
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_string_equal(snap->dra.kueue_error, "key x: not YAML");
	assert_int_equal(snap->dra.mapped, 0);
	assert_int_equal(tau_budget_inventory_from_snapshot(&inv, snap), 0);
	assert_string_equal(inv.dra.kueue_error, "key x: not YAML");
	tau_budget_inventory_clear(&inv);
	tau_nodestore_free(s);
	tau_dra_store_free(d);
	cJSON_Delete(gpu);
}

static void snapshot_of_an_invalid_pool(void **state)
{
	tau_nodestore *s = store_with_nodes();
	tau_pool_snapshot *snap = NULL;
	tau_selector *sel = NULL;
	uint64_t gen;

	(void)state;
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	gen = snap->generation;
	tau_pool_snapshot_free(snap);
	assert_int_equal(tau_nodestore_set_selector_error(s, "spec.nodes.selector: bad"), 0);
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_true(snap->established);
	assert_false(snap->valid);
	assert_string_equal(snap->invalid_reason, "spec.nodes.selector: bad");
	assert_int_equal(snap->n_flavors, 0);
	assert_int_equal(snap->n_nodes, 0);
	assert_true(snap->generation != gen);
	tau_pool_snapshot_free(snap);
	/* a usable selector: valid again, only matching nodes */
	assert_int_equal(tau_selector_parse(&sel, "pool=research"), 0);
	assert_int_equal(tau_nodestore_set_selector(s, sel), 0);
	assert_int_equal(tau_pool_snapshot_build(&snap, s), 0);
	assert_true(snap->valid);
	assert_int_equal(snap->n_nodes, 2);
	assert_string_equal(snap->nodes[0].name, "b-node");
	tau_pool_snapshot_free(snap);
	tau_pool_snapshot_free(NULL);
	tau_nodestore_free(s);
}

/* ---- through the aggregator state: thread-safe snapshot and change callback ---- */

typedef struct watch {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int calls;
	tau_inventory *agg;
	bool last_valid; /* what a snapshot taken in the callback said */
	size_t last_nodes;
} watch;

static void on_change(void *ud)
{
	watch *w = ud;
	tau_pool_snapshot *snap = NULL;

	/* The callback runs without the state lock: taking a snapshot here must work. */
	assert_int_equal(tau_inventory_pool_snapshot(w->agg, &snap), 0);
	pthread_mutex_lock(&w->mu);
	w->calls++;
	w->last_valid = snap->valid;
	w->last_nodes = snap->n_nodes;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	tau_pool_snapshot_free(snap);
}

/* Wait (at most 10 s) until a callback saw `valid` with `nodes` counted nodes. */
static void wait_for_news(watch *w, bool valid, size_t nodes)
{
	struct timespec deadline;
	bool seen;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	pthread_mutex_lock(&w->mu);
	while (!(w->calls > 0 && w->last_valid == valid && w->last_nodes == nodes) &&
	       pthread_cond_timedwait(&w->cond, &w->mu, &deadline) == 0)
		;
	seen = w->calls > 0 && w->last_valid == valid && w->last_nodes == nodes;
	pthread_mutex_unlock(&w->mu);
	assert_true(seen);
}

static int no_review(void *ud, const char *token, tau_auth_review *out)
{
	(void)ud;
	(void)token;
	(void)out;
	return tau_error_set(TAU_EIO, "not in this test");
}

static void agg_node(tau_inventory *a, const char *name)
{
	char json[512];
	cJSON *root = NULL;

	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\","
	         "\"tau.azure.com/gpu-class\":\"h100\"}},"
	         "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"},"
	         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	         name);
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	tau_inventory_node_upsert(a, root);
	cJSON_Delete(root);
}

static void aggregator_notifies_subscribers(void **state)
{
	tau_inventory_config cfg = {.agent_user = "system:serviceaccount:tau-system:agent",
	                            .review = no_review,
	                            .sync_timeout_ms = 1,
	                            .auth_threads = 1};
	watch w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	const char *bad = "{\"spec\":{\"nodes\":{\"selector\":{\"pool\":\"not a label value\"}}}}";
	cJSON *cluster = NULL;

	(void)state;
	assert_int_equal(tau_inventory_new(&w.agg, &cfg), 0);
	assert_int_equal(tau_inventory_start(w.agg), 0);
	assert_int_equal(tau_inventory_pool_subscribe(w.agg, on_change, &w), 0);
	agg_node(w.agg, "n1");
	agg_node(w.agg, "n2");
	tau_inventory_nodes_synced(w.agg);
	wait_for_news(&w, true, 2);
	/* an unusable selector: the callback hears of it, and the snapshot says why */
	assert_int_equal(tau_json_parse(&cluster, bad, strlen(bad), 0), 0);
	tau_inventory_cluster(w.agg, cluster);
	wait_for_news(&w, false, 0);
	{
		tau_pool_snapshot *snap = NULL;

		assert_int_equal(tau_inventory_pool_snapshot(w.agg, &snap), 0);
		assert_non_null(strstr(snap->invalid_reason, "spec.nodes.selector"));
		tau_pool_snapshot_free(snap);
	}
	tau_inventory_cluster(w.agg, NULL);
	wait_for_news(&w, true, 2);
	assert_int_equal(tau_inventory_pool_unsubscribe(w.agg, on_change, &w), 0);
	assert_int_equal(tau_inventory_pool_unsubscribe(w.agg, on_change, &w), -TAU_ENOTFOUND);
	cJSON_Delete(cluster);
	tau_inventory_free(w.agg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(snapshot_holds_flavors_and_counted_nodes),
	        cmocka_unit_test(snapshot_of_an_invalid_pool),
	        cmocka_unit_test(snapshot_summarises_node_truth),
	        cmocka_unit_test(snapshot_summarises_dra_classes),
	        cmocka_unit_test(budget_inventory_keeps_the_snapshot),
	        cmocka_unit_test(aggregator_notifies_subscribers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
