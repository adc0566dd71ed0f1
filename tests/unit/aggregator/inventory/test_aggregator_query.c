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
	assert_int_equal(p->flavors[0]->node_count, 2);
	assert_int_equal(p->missing_count, 1);
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
	assert_int_equal(p->flavors[0]->node_count, 1);
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

/* `n` Ready h100 nodes named node-00000...; every third is cordoned-free but not ready. */
static tau_nodestore *big_store(size_t n)
{
	tau_nodestore *s = NULL;

	assert_int_equal(tau_nodestore_new(&s, 0, 1), 0);
	for (size_t i = 0; i < n; i++) {
		char name[32];
		tau_node_facts f;

		snprintf(name, sizeof(name), "node-%05zu", i);
		f = facts(name, "h100", "2", i % 3 != 0);
		assert_int_equal(tau_nodestore_api_upsert(s, &f), 0);
		tau_node_facts_clear(&f);
	}
	tau_nodestore_api_synced(s);
	tau_nodestore_tick(s, 2); /* the gate opens on time: every node is missing its agent */
	return s;
}

/* Follow every page; returns how many nodes were listed, checking order and no repeats. */
static size_t list_pages(const tau_nodestore *s, uint32_t page_size, bool counted_only,
                         size_t *pages)
{
	Tau__Inventory__V1__ListNodesRequest req = TAU__INVENTORY__V1__LIST_NODES_REQUEST__INIT;
	tau_query_opts o = {.now_ms = 10, .stale_after_ms = 90000};
	char token[64] = "", last[64] = "";
	size_t total = 0;

	*pages = 0;
	req.page_size = page_size;
	req.counted_only = counted_only;
	do {
		Tau__Inventory__V1__ListNodesResponse *resp = NULL;

		req.page_token = token;
		assert_int_equal(tau_query_list_nodes(&resp, s, &req, &o), 0);
		assert_true(resp->n_nodes <= (page_size == 0 ? TAU_QUERY_PAGE_DEFAULT
		                              : page_size > TAU_QUERY_PAGE_MAX ? TAU_QUERY_PAGE_MAX
		                                                               : page_size));
		assert_true(protobuf_c_message_get_packed_size(&resp->base) < 1024 * 1024);
		for (size_t i = 0; i < resp->n_nodes; i++) {
			assert_true(strcmp(resp->nodes[i]->name, last) > 0);
			snprintf(last, sizeof(last), "%s", resp->nodes[i]->name);
			assert_true(!counted_only || resp->nodes[i]->counted);
		}
		total += resp->n_nodes;
		(*pages)++;
		snprintf(token, sizeof(token), "%s",
		         resp->next_page_token != NULL ? resp->next_page_token : "");
		protobuf_c_message_free_unpacked(&resp->base, NULL);
	} while (token[0] != '\0');
	return total;
}

static void list_nodes_pages(void **state)
{
	tau_nodestore *s = big_store(2500);
	Tau__Inventory__V1__ListNodesRequest req = TAU__INVENTORY__V1__LIST_NODES_REQUEST__INIT;
	Tau__Inventory__V1__ListNodesResponse *resp = NULL;
	tau_query_opts o = {.now_ms = 10, .stale_after_ms = 90000};
	size_t pages;

	(void)state;
	assert_int_equal(list_pages(s, 0, false, &pages), 2500);
	assert_int_equal(pages, 5);
	assert_int_equal(list_pages(s, 700, false, &pages), 2500);
	assert_int_equal(pages, 4);
	assert_int_equal(list_pages(s, 5000, false, &pages), 2500); /* capped at 1000 */
	assert_int_equal(pages, 3);
	assert_int_equal(list_pages(s, 1, false, &pages), 2500);
	/* counted only: 1666 of them are Ready */
	assert_int_equal(list_pages(s, 0, true, &pages), 1666);
	/* a token naming a node that is gone still continues after it */
	req.page_token = (char *)"node-00099x";
	req.page_size = 1;
	assert_int_equal(tau_query_list_nodes(&resp, s, &req, &o), 0);
	assert_string_equal(resp->nodes[0]->name, "node-00100");
	assert_string_equal(resp->next_page_token, "node-00100");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	/* the last page has no token */
	req.page_token = (char *)"node-02498";
	assert_int_equal(tau_query_list_nodes(&resp, s, &req, &o), 0);
	assert_int_equal(resp->n_nodes, 1);
	assert_string_equal(resp->next_page_token, "");
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	/* a malformed token is the caller's error */
	req.page_token = (char *)"Not a Name!";
	assert_int_equal(tau_query_list_nodes(&resp, s, &req, &o), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "invalid page_token"));
	tau_nodestore_free(s);
}

/* GetPool/WatchPool: the message does not grow with the number of nodes. */
static void pool_size_independent_of_nodes(void **state)
{
	size_t sizes[2];
	const size_t counts[2] = {300, 6000};

	(void)state;
	for (int k = 0; k < 2; k++) {
		tau_nodestore *s = big_store(counts[k]);
		Tau__Inventory__V1__Pool *p = NULL;

		assert_int_equal(tau_query_pool(&p, s), 0);
		assert_int_equal(p->missing_count, counts[k]);
		assert_int_equal(p->n_missing_nodes, TAU_QUERY_POOL_MISSING_MAX);
		assert_string_equal(p->missing_nodes[0], "node-00000");
		assert_int_equal(p->flavors[0]->node_count, counts[k] - (counts[k] + 2) / 3);
		/* the sums' digits and the counts' varints differ by a few bytes, not per node */
		sizes[k] = protobuf_c_message_get_packed_size(&p->base);
		protobuf_c_message_free_unpacked(&p->base, NULL);
		tau_nodestore_free(s);
	}
	assert_true(sizes[1] < sizes[0] + 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(explain_rules),
	        cmocka_unit_test(list_and_status),
	        cmocka_unit_test(pool_message),
	        cmocka_unit_test(get_node_inventory),
	        cmocka_unit_test(list_nodes_pages),
	        cmocka_unit_test(pool_size_independent_of_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
