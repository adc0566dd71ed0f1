/* Unit tests of the node store and its sync gate. */
#include "inventory/nodestore.h"
#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/*
 * Facts of a Linux node with `gpus` GPUs (class NULL: a CPU node) whose Ready
 * condition has status `ready` ("True", "Unknown", ...), cordoned or not.
 */
static tau_node_facts node_facts(const char *name, const char *cls, int gpus, const char *ready,
                                 bool cordoned)
{
	char json[1024];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(
	        json, sizeof(json),
	        "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\"%s%s%s}},"
	        "\"spec\":{\"unschedulable\":%s},"
	        "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%d\",\"cpu\":\"96\"},"
	        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
	        name, cls ? ",\"tau.azure.com/gpu-class\":\"" : "", cls ? cls : "", cls ? "\"" : "",
	        cordoned ? "true" : "false", gpus, ready);
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_node_facts_from_json(&f, root), 0);
	cJSON_Delete(root);
	return f;
}

static tau_node_facts facts(const char *name, const char *cls, int gpus, bool ready)
{
	return node_facts(name, cls, gpus, ready ? "True" : "False", false);
}

static void api_update(tau_nodestore *s, const char *name, int gpus, const char *ready,
                       bool cordoned)
{
	tau_node_facts f = node_facts(name, "h100", gpus, ready, cordoned);

	assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
	tau_node_facts_clear(&f);
}

static void api(tau_nodestore *s, const char *name, const char *cls, int gpus)
{
	tau_node_facts f = facts(name, cls, gpus, true);

	assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
	tau_node_facts_clear(&f);
}

static void report(tau_nodestore *s, const char *name, const char *cls, int gpus, int64_t now)
{
	tau_node_facts f = facts(name, cls, gpus, true);
	int rc = tau_nodestore_report(s, &f, now);

	assert_true(rc == 0 || rc == 1); /* 1: the same facts again */
	tau_node_facts_clear(&f);
}

/* A store where h100 nodes g1 and g2 (8 GPUs each) are known, reported, established. */
static tau_nodestore *two_reported_nodes(void)
{
	tau_nodestore *s = NULL;

	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	api(s, "g1", "h100", 8);
	api(s, "g2", "h100", 8);
	tau_nodestore_api_synced(s);
	report(s, "g1", "h100", 8, 1);
	report(s, "g2", "h100", 8, 1);
	assert_true(tau_nodestore_established(s));
	return s;
}

/* GPUs counted in flavor `cls`, or -1 when the flavor is absent. */
static long gpus_in(const tau_nodestore *s, const char *cls)
{
	const tau_pool *p = tau_nodestore_pool(s);

	for (size_t i = 0; i < tau_pool_flavor_count(p); i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(p, i);

		if (strcmp(f->name, cls) != 0)
			continue;
		for (size_t r = 0; r < f->n_resources; r++) {
			int64_t v = 0;

			if (strcmp(f->resources[r].name, "nvidia.com/gpu") == 0) {
				assert_int_equal(tau_quantity_value(&v, &f->resources[r].total), 0);
				return (long)v;
			}
		}
	}
	return -1;
}

static void test_gate_opens_when_every_gpu_node_reported(void **state)
{
	tau_nodestore *s = NULL;
	const char *missing[4];

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	api(s, "g1", "h100", 8);
	api(s, "g2", "h100", 8);
	api(s, "cpu1", NULL, 0);
	assert_false(tau_nodestore_established(s));
	report(s, "g1", "h100", 8, 10);
	/* the Node watch has not synced: not established even if all reported */
	report(s, "g2", "h100", 4, 10);
	assert_false(tau_nodestore_established(s));
	tau_nodestore_api_synced(s);
	assert_true(tau_nodestore_established(s));
	assert_int_equal(tau_nodestore_missing(s, missing, 4), 0);
	/* the Node object is the authority: g2's agent says 4, its Node 8, 8 count */
	assert_int_equal(gpus_in(s, "h100"), 16);
	assert_int_equal(tau_nodestore_mismatch_count(s), 1);
	tau_nodestore_free(s);
}

/* A restart never publishes a smaller pool: until the gate opens, nothing is established. */
static void test_partial_reports_do_not_establish(void **state)
{
	tau_nodestore *s = NULL;
	const char *missing[4];

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 1000, 60000), 0);
	api(s, "g1", "h100", 8);
	api(s, "g2", "h100", 8);
	tau_nodestore_api_synced(s);
	report(s, "g1", "h100", 8, 2000);
	tau_nodestore_tick(s, 60999);
	assert_false(tau_nodestore_established(s));
	assert_int_equal(tau_nodestore_missing(s, missing, 4), 1);
	assert_string_equal(missing[0], "g2");
	/* grace period over: the silent node counts with its API allocatable */
	tau_nodestore_tick(s, 61000);
	assert_true(tau_nodestore_established(s));
	assert_int_equal(gpus_in(s, "h100"), 16);
	assert_int_equal(tau_nodestore_missing(s, missing, 4), 1);
	/* it reports later: no longer missing; the Node's 8 still count, not its 6 */
	report(s, "g2", "h100", 6, 70000);
	assert_int_equal(gpus_in(s, "h100"), 16);
	assert_int_equal(tau_nodestore_missing(s, missing, 4), 0);
	tau_nodestore_free(s);
}

static void test_stale_agent_keeps_report_deleted_node_leaves(void **state)
{
	tau_nodestore *s = NULL;
	tau_node_status st;

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 1), 0);
	api(s, "g1", "h100", 8);
	api(s, "g2", "a100", 1);
	tau_nodestore_api_synced(s);
	report(s, "g1", "h100", 8, 5);
	report(s, "g2", "a100", 1, 5);
	tau_nodestore_set_connected(s, "g1", false, 6);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_true(st.stale);
	assert_false(st.connected);
	assert_int_equal(st.source, TAU_NODE_SOURCE_AGENT);
	assert_int_equal(gpus_in(s, "h100"), 8);
	assert_int_equal(tau_nodestore_heartbeat(s, "g1", 7), 0);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_false(st.stale);
	assert_int_equal(st.last_heard_ms, 7);

	assert_int_equal(tau_nodestore_api_delete(s, "g2"), 0);
	assert_int_equal(gpus_in(s, "a100"), -1);
	assert_int_equal(tau_nodestore_get(s, "g2", &st), -TAU_ENOTFOUND);
	assert_int_equal(tau_nodestore_api_delete(s, "g2"), -TAU_ENOTFOUND);
	assert_int_equal(tau_nodestore_count(s), 1);
	tau_nodestore_free(s);
}

static void test_report_before_node_counts_once_node_appears(void **state)
{
	tau_nodestore *s = NULL;
	tau_node_status st;

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 1000), 0);
	report(s, "g1", "h100", 8, 1);
	assert_int_equal(gpus_in(s, "h100"), -1);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_false(st.api_known);
	api(s, "g1", "h100", 8);
	assert_int_equal(gpus_in(s, "h100"), 8);
	tau_nodestore_free(s);
}

static void test_invalid_report_changes_nothing(void **state)
{
	tau_nodestore *s = NULL;
	tau_node_facts bad = facts("g1", "h100", 3, true);
	tau_node_status st;

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 1000), 0);
	api(s, "g1", "h100", 8);
	report(s, "g1", "h100", 8, 1);
	assert_int_equal(tau_quantity_parse_str(&bad.allocatable[1].value, "-3"), 0);
	assert_int_equal(tau_nodestore_report(s, &bad, 2), -TAU_EINVAL);
	assert_int_equal(gpus_in(s, "h100"), 8);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_int_equal(st.last_heard_ms, 1);
	tau_node_facts_clear(&bad);
	tau_nodestore_free(s);
}

/* Issue 12 item 1: an agent that died does not keep its node in the pool. */
static void test_node_follows_api_after_agent_died(void **state)
{
	static const struct {
		const char *ready;
		bool cordoned;
		const char *failed_rule;
	} cases[] = {{"Unknown", false, "ready"}, {"True", true, "schedulable"}};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		tau_nodestore *s = two_reported_nodes();
		tau_node_status st;
		tau_pool_rule rules[TAU_POOL_RULE_COUNT];

		assert_int_equal(gpus_in(s, "h100"), 16);
		/* g1's agent is killed: its stream closes, nothing more comes from it */
		tau_nodestore_set_connected(s, "g1", false, 2);
		/* the API then marks g1 not ready (kubelet gone) or cordons it */
		api_update(s, "g1", 8, cases[c].ready, cases[c].cordoned);
		assert_int_equal(gpus_in(s, "h100"), 8);
		assert_int_equal(tau_pool_node_counted(tau_nodestore_pool(s), "g1"), 0);
		assert_int_equal(tau_pool_explain(tau_nodestore_pool(s), "g1", rules), 0);
		for (int i = 0; i < TAU_POOL_RULE_COUNT; i++) {
			if (strcmp(rules[i].name, cases[c].failed_rule) == 0)
				assert_false(rules[i].pass);
		}
		assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
		assert_true(st.stale);
		/* what queries show is the Node's view, not the dead agent's */
		assert_int_equal(st.facts->schedulable, !cases[c].cordoned);
		/* the Node recovers: it counts again without its agent */
		api_update(s, "g1", 8, "True", false);
		assert_int_equal(gpus_in(s, "h100"), 16);
		tau_nodestore_free(s);
	}
}

/* A difference between agent and Node is recorded and told once, never counted. */
static void test_mismatch_reported_not_trusted(void **state)
{
	tau_nodestore *s = NULL;
	tau_node_status st;
	char buf[TAU_NODE_MISMATCH_MAX];

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	api(s, "g1", "h100", 8);
	tau_nodestore_api_synced(s);
	report(s, "g1", "h100", 16, 1);
	assert_int_equal(gpus_in(s, "h100"), 8);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_non_null(st.mismatch);
	assert_string_equal(st.mismatch,
	                    "allocatable nvidia.com/gpu: agent reports 16, the Node says 8");
	assert_int_equal(tau_nodestore_mismatch_count(s), 1);
	assert_true(tau_nodestore_take_mismatch(s, "g1", buf, sizeof(buf)));
	assert_string_equal(buf, st.mismatch);
	/* the same difference again is no news */
	report(s, "g1", "h100", 16, 2);
	assert_false(tau_nodestore_take_mismatch(s, "g1", buf, sizeof(buf)));
	/* the Node goes not ready: a different difference (the agent still says ready) */
	api_update(s, "g1", 16, "False", false);
	assert_int_equal(gpus_in(s, "h100"), -1);
	assert_true(tau_nodestore_take_mismatch(s, "g1", buf, sizeof(buf)));
	assert_string_equal(buf, "ready/schedulable/deleting: agent reports true/true/false, the "
	                         "Node says false/true/false");
	/* both agree again */
	api_update(s, "g1", 16, "True", false);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_null(st.mismatch);
	assert_int_equal(tau_nodestore_mismatch_count(s), 0);
	assert_int_equal(gpus_in(s, "h100"), 16);
	/* a deleted node takes its mismatch with it */
	report(s, "g1", "h100", 1, 3);
	assert_int_equal(tau_nodestore_mismatch_count(s), 1);
	assert_int_equal(tau_nodestore_api_delete(s, "g1"), 0);
	assert_int_equal(tau_nodestore_mismatch_count(s), 0);
	tau_nodestore_free(s);
}

/* A report changes no sum, so it does not bump the pool's generation (no budget churn). */
static void test_report_leaves_the_pool_unchanged(void **state)
{
	tau_nodestore *s = two_reported_nodes();
	uint64_t gen = tau_pool_generation(tau_nodestore_pool(s));

	(void)state;
	report(s, "g1", "h100", 8, 5);
	report(s, "g1", "h100", 4, 6); /* differs from the Node: reported, not counted */
	assert_int_equal(tau_pool_generation(tau_nodestore_pool(s)), gen);
	assert_int_equal(gpus_in(s, "h100"), 16);
	api(s, "g1", "h100", 4);
	assert_true(tau_pool_generation(tau_nodestore_pool(s)) != gen);
	assert_int_equal(gpus_in(s, "h100"), 12);
	tau_nodestore_free(s);
}

/* The same facts again from a connected agent refresh liveness only; after a disconnect they
 * are a fresh report. */
static void test_repeated_report_only_refreshes_liveness(void **state)
{
	tau_nodestore *s = two_reported_nodes();
	tau_node_facts f = facts("g1", "h100", 8, true);
	tau_node_status st;

	(void)state;
	assert_int_equal(tau_nodestore_report(s, &f, 7), 1);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_int_equal(st.last_heard_ms, 7);
	tau_nodestore_set_connected(s, "g1", false, 8);
	assert_int_equal(tau_nodestore_report(s, &f, 9), 0);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_true(st.connected);
	assert_int_equal(st.last_heard_ms, 9);
	tau_node_facts_clear(&f);
	f = facts("g1", "h100", 4, true);
	assert_int_equal(tau_nodestore_report(s, &f, 10), 0);
	assert_int_equal(tau_nodestore_report(s, &f, 11), 1);
	assert_int_equal(gpus_in(s, "h100"), 16);
	tau_node_facts_clear(&f);
	tau_nodestore_free(s);
}

/*
 * An inventory recognised by its fingerprint refreshes liveness and the kept bytes only, and
 * only while the record still holds what that fingerprint stood for: not after other facts
 * were reported, nor with another mask, nor once the agent disconnected or the Node went.
 */
static void test_report_same_only_for_what_the_fingerprint_stood_for(void **state)
{
	tau_nodestore *s = two_reported_nodes();
	tau_node_facts f = facts("g1", "h100", 8, true);
	tau_node_status st;
	const uint8_t first[] = {1, 2, 3}, again[] = {1, 2, 4}, longer[] = {1, 2, 3, 4, 5};

	(void)state;
	/* No fingerprint kept yet: the full path. */
	assert_int_equal(tau_nodestore_report_same(s, "g1", 42, again, sizeof(again), 0, 5), 0);
	assert_int_equal(tau_nodestore_report(s, &f, 6), 1);
	assert_int_equal(tau_nodestore_set_inventory(s, "g1", first, sizeof(first), 1, 42), 0);
	/* Fingerprint 0 is none, another one or another mask is not this inventory. */
	assert_int_equal(tau_nodestore_report_same(s, "g1", 0, again, sizeof(again), 1, 7), 0);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 43, again, sizeof(again), 1, 7), 0);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 42, again, sizeof(again), 0, 7), 0);
	assert_int_equal(tau_nodestore_report_same(s, "nope", 42, again, sizeof(again), 1, 7), 0);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_int_equal(st.last_heard_ms, 6);
	assert_memory_equal(st.inventory, first, sizeof(first));
	/* The same one: liveness and the kept bytes (same size, then another size). */
	assert_int_equal(tau_nodestore_report_same(s, "g1", 42, again, sizeof(again), 1, 8), 1);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_int_equal(st.last_heard_ms, 8);
	assert_memory_equal(st.inventory, again, sizeof(again));
	assert_int_equal(tau_nodestore_report_same(s, "g1", 42, longer, sizeof(longer), 1, 9), 1);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_int_equal(st.inventory_len, sizeof(longer));
	assert_int_equal(st.inventory_elided, 1);
	assert_memory_equal(st.inventory, longer, sizeof(longer));
	assert_int_equal(tau_nodestore_report_same(s, "g1", 42, again, sizeof(again), 1, 10), 1);
	/* Other facts reported: the fingerprint no longer stands for what is held, even before
	 * the new inventory is kept (and a failed keep leaves none). */
	tau_node_facts_clear(&f);
	f = facts("g1", "h100", 4, true);
	assert_int_equal(tau_nodestore_report(s, &f, 11), 0);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 42, again, sizeof(again), 1, 12), 0);
	assert_int_equal(gpus_in(s, "h100"), 16); /* the Node counts, not the agent */
	assert_int_equal(tau_nodestore_set_inventory(s, "g1", first, sizeof(first), 1, 44), 0);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 44, again, sizeof(again), 1, 13), 1);
	/* The same facts again keep it (rc 1 of tau_nodestore_report changes nothing). */
	assert_int_equal(tau_nodestore_report(s, &f, 14), 1);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 44, again, sizeof(again), 1, 15), 1);
	/* Disconnected: the next stream takes the full path. */
	tau_nodestore_set_connected(s, "g1", false, 16);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 44, again, sizeof(again), 1, 17), 0);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_false(st.connected);
	assert_int_not_equal(st.last_heard_ms, 17);
	/* Reconnected with its inventory kept anew, then the Node deleted: gone with it. */
	assert_int_equal(tau_nodestore_report(s, &f, 18), 0);
	assert_int_equal(tau_nodestore_set_inventory(s, "g1", first, sizeof(first), 1, 44), 0);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 44, again, sizeof(again), 1, 19), 1);
	assert_int_equal(tau_nodestore_api_delete(s, "g1"), 0);
	assert_int_equal(tau_nodestore_report_same(s, "g1", 44, again, sizeof(again), 1, 20), 0);
	tau_node_facts_clear(&f);
	tau_nodestore_free(s);
}

/* A Node that can no longer be read stops counting (fail closed) and says why. */
static void test_unreadable_node_stops_counting(void **state)
{
	tau_nodestore *s = two_reported_nodes();
	tau_node_status st;

	(void)state;
	assert_int_equal(gpus_in(s, "h100"), 16);
	assert_int_equal(tau_nodestore_api_unreadable(s, "g1", "status.allocatable[cpu]: bad"), 0);
	assert_int_equal(gpus_in(s, "h100"), 8);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_string_equal(st.api_error, "status.allocatable[cpu]: bad");
	assert_int_equal(st.source, TAU_NODE_SOURCE_NONE);
	api(s, "g1", "h100", 8);
	assert_int_equal(tau_nodestore_get(s, "g1", &st), 0);
	assert_null(st.api_error);
	assert_int_equal(gpus_in(s, "h100"), 16);
	tau_nodestore_free(s);
}

/* ---- property: the store's incremental pool equals a full recomputation ---- */

/* An h100 Node `name` with labels hostname (its name), os linux and pool `pool`. */
static tau_node_facts pooled_facts(const char *name, const char *pool)
{
	char json[1024];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\","
	         "\"kubernetes.io/hostname\":\"%s\",\"pool\":\"%s\","
	         "\"tau.azure.com/gpu-class\":\"h100\"}},"
	         "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\",\"cpu\":\"96\"},"
	         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	         name, name, pool);
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_node_facts_from_json(&f, root), 0);
	cJSON_Delete(root);
	return f;
}

static void api_pool(tau_nodestore *s, const char *name, const char *pool)
{
	tau_node_facts f = pooled_facts(name, pool);

	assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
	tau_node_facts_clear(&f);
}

static void report_pool(tau_nodestore *s, const char *name, const char *pool)
{
	tau_node_facts f = pooled_facts(name, pool);

	assert_int_equal(tau_nodestore_report(s, &f, 1), 0);
	tau_node_facts_clear(&f);
}

/* The index of label `key` in `f`, which has it. */
static size_t label_at(const tau_node_facts *f, const char *key)
{
	for (size_t i = 0; i < f->n_labels; i++)
		if (strcmp(f->label_keys[i], key) == 0)
			return i;
	fail_msg("no label %s", key);
	return 0;
}

/*
 * Label keys and values and resource names are held once across nodes (and across a node's
 * Node and agent facts), a hostname label is the node's name, and a string goes with the
 * last facts naming it, so churn leaves nothing behind.
 */
static void test_facts_share_strings_across_nodes(void **state)
{
	tau_nodestore *s = NULL;
	tau_node_status a, b;
	size_t host, pool;
	char name[16];

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	api_pool(s, "g1", "gpu");
	api_pool(s, "g2", "gpu");
	/* keys hostname, os, pool, gpu-class; values linux, gpu, h100; cpu, nvidia.com/gpu */
	assert_int_equal(tau_nodestore_shared_strings(s), 9);
	assert_int_equal(tau_nodestore_get(s, "g1", &a), 0);
	assert_int_equal(tau_nodestore_get(s, "g2", &b), 0);
	assert_int_equal(a.facts->n_labels, 4);
	for (size_t i = 0; i < a.facts->n_labels; i++)
		assert_ptr_equal(a.facts->label_keys[i], b.facts->label_keys[i]);
	for (size_t i = 0; i < a.facts->n_allocatable; i++)
		assert_ptr_equal(a.facts->allocatable[i].name, b.facts->allocatable[i].name);
	host = label_at(a.facts, "kubernetes.io/hostname");
	pool = label_at(a.facts, "pool");
	assert_ptr_equal(a.facts->label_values[host], a.facts->name);
	assert_string_equal(b.facts->label_values[host], "g2");
	assert_ptr_equal(a.facts->label_values[pool], b.facts->label_values[pool]);
	assert_string_equal(a.facts->label_values[pool], "gpu");
	assert_string_equal(a.facts->label_values[label_at(a.facts, "kubernetes.io/os")], "linux");
	assert_string_equal(a.facts->allocatable[0].name, "cpu");

	/* an agent that differs holds its own facts, with the same strings where they agree */
	report_pool(s, "g1", "spot");
	assert_int_equal(tau_nodestore_shared_strings(s), 10);
	assert_int_equal(tau_nodestore_get(s, "g1", &a), 0);
	assert_ptr_not_equal(a.agent_facts, a.facts);
	assert_ptr_equal(a.agent_facts->label_keys[pool], a.facts->label_keys[pool]);
	assert_string_equal(a.agent_facts->label_values[pool], "spot");
	assert_ptr_equal(a.agent_facts->label_values[host], a.agent_facts->name);
	report_pool(s, "g1", "gpu"); /* agreeing again: one copy, "spot" is let go */
	assert_int_equal(tau_nodestore_get(s, "g1", &a), 0);
	assert_ptr_equal(a.agent_facts, a.facts);
	assert_int_equal(tau_nodestore_shared_strings(s), 9);

	/* a value goes with the last node naming it */
	api_pool(s, "g1", "gpu2");
	assert_int_equal(tau_nodestore_shared_strings(s), 10);
	api_pool(s, "g2", "gpu2");
	/* g1's agent facts, its last report, still name "gpu" until it reports again */
	assert_int_equal(tau_nodestore_shared_strings(s), 10);
	report_pool(s, "g1", "gpu2");
	assert_int_equal(tau_nodestore_shared_strings(s), 9);
	/* churn: a thousand values, one at a time, hold one at a time */
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "v%d", i);
		api_pool(s, "g2", name);
		report_pool(s, "g2", name);
		assert_int_equal(tau_nodestore_shared_strings(s), 10);
	}
	assert_int_equal(tau_nodestore_api_delete(s, "g1"), 0);
	assert_int_equal(tau_nodestore_shared_strings(s), 9); /* gpu2 went with g1 */
	assert_int_equal(tau_nodestore_api_delete(s, "g2"), 0);
	assert_int_equal(tau_nodestore_shared_strings(s), 0);
	tau_nodestore_free(s);
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The pool as "flavor(nodes):name=qty,...;" for exact comparison. */
static void render_pool(const tau_pool *p, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < tau_pool_flavor_count(p); i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(p, i);

		len += (size_t)snprintf(buf + len, cap - len, "%s(%zu):", f->name, f->nodes);
		for (size_t r = 0; r < f->n_resources; r++) {
			char q[TAU_QUANTITY_STR_MAX];

			assert_int_equal(tau_pool_sum_format(q, sizeof(q), &f->resources[r]), 0);
			len += (size_t)snprintf(buf + len, cap - len, "%s=%s,",
			                        f->resources[r].name, q);
		}
		len += (size_t)snprintf(buf + len, cap - len, ";");
		assert_true(len < cap);
	}
}

/*
 * Check everything the store keeps incrementally against a recount: the pool
 * (against a pool built from scratch, with copies, from the records that are
 * in its input), the missing and mismatch counts, and `counted`.
 */
static void check_against_recount(const tau_nodestore *s)
{
	static char want[16384], got[16384];
	tau_pool *fresh = NULL;
	size_t missing = 0, mismatch = 0, n = tau_nodestore_count(s);

	assert_int_equal(tau_pool_new(&fresh), 0);
	for (size_t i = 0; i < n; i++) {
		tau_node_status st;

		assert_int_equal(tau_nodestore_at(s, i, &st), 0);
		missing += st.gpu_node && !st.reported ? 1 : 0;
		mismatch += st.mismatch != NULL ? 1 : 0;
		if (st.source != TAU_NODE_SOURCE_NONE)
			assert_int_equal(tau_pool_upsert_node(fresh, st.facts), 0);
	}
	for (size_t i = 0; i < n; i++) {
		tau_node_status st;

		assert_int_equal(tau_nodestore_at(s, i, &st), 0);
		assert_int_equal(st.counted, st.source != TAU_NODE_SOURCE_NONE &&
		                                     tau_pool_node_counted(fresh, st.name) == 1);
	}
	render_pool(fresh, want, sizeof(want));
	render_pool(tau_nodestore_pool(s), got, sizeof(got));
	assert_string_equal(got, want);
	assert_int_equal(tau_nodestore_missing(s, NULL, 0), missing);
	assert_int_equal(tau_nodestore_mismatch_count(s), mismatch);
	tau_pool_free(fresh);
}

#define PROP_NODES 16

static void test_incremental_pool_equals_recount(void **state)
{
	static const char *const classes[] = {"h100", "a100", NULL};
	static const char *const readiness[] = {"True", "True", "True", "False", "Unknown"};

	(void)state;
	for (int round = 0; round < 60; round++) {
		tau_nodestore *s = NULL;
		int64_t now = 0;

		assert_int_equal(tau_nodestore_new(&s, 0, 500), 0);
		for (int step = 0; step < 250; step++) {
			char name[16];
			int k = (int)(rnd() % 100);
			const char *cls = classes[rnd() % 3];
			int gpus = (int)(rnd() % 3) * 4;
			tau_node_facts f;

			snprintf(name, sizeof(name), "n%02d", (int)(rnd() % PROP_NODES));
			now += 10;
			if (k < 35) { /* the Node is added or changes */
				f = node_facts(name, cls, gpus, readiness[rnd() % 5],
				               rnd() % 6 == 0);
				assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
				tau_node_facts_clear(&f);
			} else if (k < 65) { /* its agent reports, mostly what the Node says */
				tau_node_status st;

				if (rnd() % 3 != 0 && tau_nodestore_get(s, name, &st) == 0 &&
				    st.api_known && st.api_error == NULL) {
					assert_int_equal(tau_node_facts_copy(&f, st.facts), 0);
				} else {
					f = node_facts(name, cls, gpus, "True", false);
				}
				assert_true(tau_nodestore_report(s, &f, now) >= 0);
				tau_node_facts_clear(&f);
			} else if (k < 75) {
				(void)tau_nodestore_api_delete(s, name);
			} else if (k < 82) {
				assert_int_equal(
				        tau_nodestore_api_unreadable(s, name, "bad quantity"), 0);
			} else if (k < 92) {
				tau_nodestore_set_connected(s, name, rnd() % 2 == 0, now);
			} else if (k < 96) {
				tau_nodestore_api_synced(s);
			} else {
				tau_nodestore_tick(s, now);
			}
			check_against_recount(s);
		}
		tau_nodestore_free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_gate_opens_when_every_gpu_node_reported),
	        cmocka_unit_test(test_partial_reports_do_not_establish),
	        cmocka_unit_test(test_stale_agent_keeps_report_deleted_node_leaves),
	        cmocka_unit_test(test_report_before_node_counts_once_node_appears),
	        cmocka_unit_test(test_invalid_report_changes_nothing),
	        cmocka_unit_test(test_node_follows_api_after_agent_died),
	        cmocka_unit_test(test_mismatch_reported_not_trusted),
	        cmocka_unit_test(test_unreadable_node_stops_counting),
	        cmocka_unit_test(test_report_leaves_the_pool_unchanged),
	        cmocka_unit_test(test_repeated_report_only_refreshes_liveness),
	        cmocka_unit_test(test_report_same_only_for_what_the_fingerprint_stood_for),
	        cmocka_unit_test(test_incremental_pool_equals_recount),
	        cmocka_unit_test(test_facts_share_strings_across_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
