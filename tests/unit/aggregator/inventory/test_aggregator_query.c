/* Unit tests of the QueryService answers built from the node store (rules, lists, pool). */
#include "inventory/query.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static tau_node_facts facts(const char *name, const char *cls, const char *cpu, bool ready)
{
	char json[1024];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(
	        json, sizeof(json),
	        "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"kubernetes.io/os\":\"linux\"%s%s%s}},"
	        "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"nvidia.com/gpu\":\"8\"},"
	        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
	        name, cls ? ",\"tau.azure.com/gpu-class\":\"" : "", cls ? cls : "", cls ? "\"" : "",
	        cpu, ready ? "True" : "False");
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_node_facts_from_json(&f, root), 0);
	cJSON_Delete(root);
	return f;
}

/* b and a report (h100), c is not ready (h100), d never reports (a100), cpu has no class. */
static tau_nodestore *store(void)
{
	tau_nodestore *s = NULL;
	static const struct {
		const char *name, *cls, *cpu;
		bool ready, report;
	} nodes[] = {
	        {"b", "h100", "1500m", true, true}, {"a", "h100", "2", true, true},
	        {"c", "h100", "4", false, true},    {"d", "a100", "8", true, false},
	        {"cpu", NULL, "16", true, false},
	};

	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		tau_node_facts f = facts(nodes[i].name, nodes[i].cls, nodes[i].cpu, nodes[i].ready);

		assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
		if (nodes[i].report)
			assert_int_equal(tau_nodestore_report(s, &f, 1000), 0);
		tau_node_facts_clear(&f);
	}
	tau_nodestore_api_synced(s);
	return s;
}

static void explain_rules(void **state)
{
	tau_nodestore *s = store();
	Tau__Inventory__V1__ExplainNodeResponse *ex = NULL;
	static const char *const names[] = {"api.node",        "P1.linux",       "P1.gpu-class",
	                                    "P1.selector",     "P1.ready",       "P1.schedulable",
	                                    "P1.not-deleting", "P2.kueue-int64", "P2.flavor-sum",
	                                    "agent.reported"};

	(void)state;
	assert_int_equal(tau_query_explain(&ex, s, "c"), 0);
	assert_false(ex->counted);
	assert_string_equal(ex->flavor, "");
	assert_int_equal(ex->n_rules, TAU_QUERY_RULE_COUNT);
	for (size_t i = 0; i < ex->n_rules; i++) {
		assert_string_equal(ex->rules[i]->name, names[i]);
		assert_int_equal(ex->rules[i]->pass, strcmp(names[i], "P1.ready") != 0);
	}
	protobuf_c_message_free_unpacked(&ex->base, NULL);
	assert_int_equal(tau_query_explain(&ex, s, "a"), 0);
	assert_true(ex->counted);
	assert_string_equal(ex->flavor, "h100");
	protobuf_c_message_free_unpacked(&ex->base, NULL);
	/* d: everything passes but its agent has not reported. */
	assert_int_equal(tau_query_explain(&ex, s, "d"), 0);
	assert_false(ex->counted);
	assert_false(ex->rules[TAU_QUERY_RULE_COUNT - 1]->pass);
	protobuf_c_message_free_unpacked(&ex->base, NULL);
	assert_int_equal(tau_query_explain(&ex, s, "nope"), -TAU_ENOTFOUND);
	tau_nodestore_free(s);
}

static void list_and_status(void **state)
{
	tau_nodestore *s = store();
	Tau__Inventory__V1__ListNodesResponse *resp = NULL;
	Tau__Inventory__V1__ListNodesRequest req = TAU__INVENTORY__V1__LIST_NODES_REQUEST__INIT;
	tau_query_opts o = {.now_ms = 2000, .stale_after_ms = 90000};

	(void)state;
	assert_int_equal(tau_query_list_nodes(&resp, s, NULL, &o), 0);
	assert_int_equal(resp->n_nodes, 5);
	assert_string_equal(resp->nodes[0]->name, "a"); /* sorted */
	assert_true(resp->nodes[0]->counted);
	assert_int_equal(resp->nodes[0]->n_reasons, 0);
	assert_true(resp->nodes[0]->connected);
	assert_int_equal(resp->nodes[0]->last_heard_unix_ms, 1000);
	assert_string_equal(resp->nodes[0]->allocatable[0]->name, "cpu");
	assert_string_equal(resp->nodes[0]->allocatable[0]->quantity, "2");
	assert_string_equal(resp->nodes[2]->name, "c");
	assert_int_equal(resp->nodes[2]->n_reasons, 1);
	assert_string_equal(resp->nodes[2]->reasons[0], "P1.ready: Ready condition is not True");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	req.gpu_class = (char *)"h100";
	req.counted_only = true;
	assert_int_equal(tau_query_list_nodes(&resp, s, &req, &o), 0);
	assert_int_equal(resp->n_nodes, 2);
	assert_string_equal(resp->nodes[1]->name, "b");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	/* A connected agent silent past the limit is stale; a disconnected one at once. */
	o.now_ms = 1000 + 90001;
	assert_int_equal(tau_query_list_nodes(&resp, s, &req, &o), 0);
	assert_true(resp->nodes[0]->stale && resp->nodes[0]->counted);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	tau_nodestore_free(s);
}

static void pool_message(void **state)
{
	tau_nodestore *s = store();
	Tau__Inventory__V1__Pool *p = NULL;

	(void)state;
	assert_int_equal(tau_query_pool(&p, s), 0);
	assert_false(p->established); /* d has not reported */
	assert_int_equal(p->n_missing_nodes, 1);
	assert_string_equal(p->missing_nodes[0], "d");
	assert_int_equal(p->n_flavors, 1);
	assert_string_equal(p->flavors[0]->name, "h100");
	assert_int_equal(p->flavors[0]->n_nodes, 2);
	assert_string_equal(p->flavors[0]->nodes[0], "a");
	assert_string_equal(p->flavors[0]->nodes[1], "b");
	assert_string_equal(p->flavors[0]->resources[0]->key, "cpu");
	assert_string_equal(p->flavors[0]->resources[0]->value, "3500m");
	assert_string_equal(p->flavors[0]->resources[1]->value, "16");
	protobuf_c_message_free_unpacked(&p->base, NULL);
	/* The grace period passes: d counts with its Node's allocatable, still named missing. */
	tau_nodestore_tick(s, 60001);
	assert_int_equal(tau_query_pool(&p, s), 0);
	assert_true(p->established);
	assert_int_equal(p->n_missing_nodes, 1);
	assert_int_equal(p->n_flavors, 2);
	assert_string_equal(p->flavors[0]->name, "a100");
	assert_string_equal(p->flavors[0]->nodes[0], "d");
	protobuf_c_message_free_unpacked(&p->base, NULL);
	tau_nodestore_free(s);
}

static void get_node_inventory(void **state)
{
	tau_nodestore *s = store();
	Tau__Inventory__V1__GetNodeResponse *resp = NULL;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	tau_query_opts o = {.now_ms = 2000, .stale_after_ms = 90000};
	uint8_t buf[256];
	size_t len;

	(void)state;
	inv.node_name = (char *)"a";
	inv.agent_version = (char *)"1.2.3";
	len = tau__inventory__v1__node_inventory__pack(&inv, buf);
	assert_int_equal(tau_nodestore_set_inventory(s, "a", buf, len), 0);
	assert_int_equal(tau_query_get_node(&resp, s, "a", &o), 0);
	assert_non_null(resp->inventory);
	assert_string_equal(resp->inventory->agent_version, "1.2.3");
	assert_string_equal(resp->status->name, "a");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	assert_int_equal(tau_query_get_node(&resp, s, "b", &o), 0);
	assert_null(resp->inventory);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	assert_int_equal(tau_query_get_node(&resp, s, "zz", &o), -TAU_ENOTFOUND);
	tau_nodestore_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(explain_rules),
	        cmocka_unit_test(list_and_status),
	        cmocka_unit_test(pool_message),
	        cmocka_unit_test(get_node_inventory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
