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

/* Facts of a Linux node with `gpus` GPUs (class NULL: a CPU node). */
static tau_node_facts facts(const char *name, const char *cls, int gpus, bool ready)
{
	char json[1024];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(
	        json, sizeof(json),
	        "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\"%s%s%s}},"
	        "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%d\",\"cpu\":\"96\"},"
	        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
	        name, cls ? ",\"tau.azure.com/gpu-class\":\"" : "", cls ? cls : "", cls ? "\"" : "",
	        gpus, ready ? "True" : "False");
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_node_facts_from_json(&f, root), 0);
	cJSON_Delete(root);
	return f;
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

	assert_int_equal(tau_nodestore_report(s, &f, now), 0);
	tau_node_facts_clear(&f);
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
	/* the agent's view wins over the API's */
	assert_int_equal(gpus_in(s, "h100"), 12);
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
	/* it reports later: its own view replaces the API's, no longer missing */
	report(s, "g2", "h100", 6, 70000);
	assert_int_equal(gpus_in(s, "h100"), 14);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_gate_opens_when_every_gpu_node_reported),
	        cmocka_unit_test(test_partial_reports_do_not_establish),
	        cmocka_unit_test(test_stale_agent_keeps_report_deleted_node_leaves),
	        cmocka_unit_test(test_report_before_node_counts_once_node_appears),
	        cmocka_unit_test(test_invalid_report_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
