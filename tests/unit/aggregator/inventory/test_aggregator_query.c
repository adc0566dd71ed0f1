/* Unit tests of the QueryService answers built from the node store (rules, lists, pool). */
#include "inventory/query.h"
#include "inventory/report.h"
#include "truth_fixture.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"

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

/* A sick GPU the agent reports fails agent.gpu-health; the node still counts (the contract). */
static void explain_node_truth_never_changes_counting(void **state)
{
	truth_fixture *fx = truth_fixture_node("gpu-1", 8, 0);
	tau_node_facts nf = truth_fixture_facts("gpu-1", "h100", 8);
	Tau__Inventory__V1__ExplainNodeResponse *ex = NULL;
	tau_nodestore *s = NULL;
	tau_nodetruth *t = NULL;

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &nf), 0);
	assert_int_equal(tau_nodestore_report(s, &nf, 1000), 0);
	tau_nodestore_api_synced(s);
	/* Before any node-local facts: every agent.* rule unknown. */
	assert_int_equal(tau_query_explain(&ex, s, "gpu-1"), 0);
	assert_int_equal(ex->n_node_truth, 4);
	assert_true(ex->node_truth[0]->unknown && ex->node_truth[0]->pass);
	protobuf_c_message_free_unpacked(&ex->base, NULL);
	truth_fixture_gpu_unhealthy(fx, 3, "row remap pending: the GPU needs a reset");
	assert_int_equal(tau_nodetruth_decode(&t, &fx->inv), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "gpu-1", t), 0);
	assert_int_equal(tau_query_explain(&ex, s, "gpu-1"), 0);
	assert_true(ex->counted);
	assert_string_equal(ex->flavor, "h100");
	for (size_t i = 0; i < ex->n_rules; i++)
		assert_true(ex->rules[i]->pass && !ex->rules[i]->unknown);
	assert_string_equal(ex->node_truth[0]->name, "agent.gpu-health");
	assert_false(ex->node_truth[0]->pass);
	assert_false(ex->node_truth[0]->unknown);
	assert_non_null(strstr(ex->node_truth[0]->detail, "the agent sees 7 healthy (NVML)"));
	assert_string_equal(ex->node_truth[3]->name, "agent.pod-resources");
	assert_true(ex->node_truth[3]->pass);
	protobuf_c_message_free_unpacked(&ex->base, NULL);
	tau_nodestore_free(s);
	tau_node_facts_clear(&nf);
	free(fx);
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
	assert_int_equal(tau_nodestore_set_inventory(s, "a", buf, len, 0, 0), 0);
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

/*
 * Inventories as an agent sends them, built from the Node fixtures (tests/fixtures/kube): the
 * labels and allocatable in the fixture's order (reversed when `reverse`), quantities canonical
 * as the agent writes them, or as the Node writes them when `raw`.  Everything lives in `m`.
 */
typedef struct inv_msg {
	Tau__Inventory__V1__NodeInventory inv;
	Tau__Inventory__V1__NodeInventory__LabelsEntry labels[64], *label_ptrs[64];
	Tau__Inventory__V1__ResourceQuantity res[32], *res_ptrs[32];
	char qty[32][TAU_QUANTITY_STR_MAX];
	char *problem;
	cJSON *root;
	tau_node_facts nf; /* the Node's facts: the agent reads the same Node */
} inv_msg;

static cJSON *load_node(const char *file)
{
	char path[1024], *text;
	cJSON *root = NULL;
	FILE *fp;
	long n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/kube/%s", TAU_SOURCE_DIR, file);
	fp = fopen(path, "rb");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	rewind(fp);
	text = malloc((size_t)n);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	assert_int_equal(tau_json_parse(&root, text, (size_t)n, 0), 0);
	free(text);
	return root;
}

static void inv_from_node(inv_msg *m, const char *file, bool reverse, bool raw)
{
	const cJSON *labels, *alloc, *it;
	size_t nl = 0, na = 0;

	memset(m, 0, sizeof(*m));
	m->root = load_node(file);
	tau__inventory__v1__node_inventory__init(&m->inv);
	m->inv.node_name =
	        cJSON_GetObjectItem(cJSON_GetObjectItem(m->root, "metadata"), "name")->valuestring;
	assert_int_equal(tau_node_facts_from_json(&m->nf, m->root), 0);
	m->inv.node_uid = m->nf.uid;
	m->inv.resource_version = m->nf.resource_version;
	m->inv.provider_id = m->nf.provider_id;
	m->inv.os = m->nf.os;
	m->inv.ready = m->nf.ready;
	m->inv.schedulable = m->nf.schedulable;
	m->inv.deleting = m->nf.deleting;
	m->inv.agent_version = (char *)"1.2.3";
	m->inv.digest = (char *)"d1";
	labels = cJSON_GetObjectItem(cJSON_GetObjectItem(m->root, "metadata"), "labels");
	alloc = cJSON_GetObjectItem(cJSON_GetObjectItem(m->root, "status"), "allocatable");
	cJSON_ArrayForEach(it, labels)
	{
		assert_true(nl < 64);
		tau__inventory__v1__node_inventory__labels_entry__init(&m->labels[nl]);
		m->labels[nl].key = it->string;
		m->labels[nl].value = it->valuestring;
		nl++;
	}
	cJSON_ArrayForEach(it, alloc)
	{
		tau_quantity q;

		assert_true(na < 32);
		tau__inventory__v1__resource_quantity__init(&m->res[na]);
		m->res[na].name = it->string;
		assert_int_equal(tau_quantity_parse_str(&q, it->valuestring), 0);
		assert_int_equal(tau_quantity_format(m->qty[na], sizeof(m->qty[na]), &q), 0);
		m->res[na].quantity = raw ? it->valuestring : m->qty[na];
		na++;
	}
	for (size_t i = 0; i < nl; i++)
		m->label_ptrs[i] = &m->labels[reverse ? nl - 1 - i : i];
	for (size_t i = 0; i < na; i++)
		m->res_ptrs[i] = &m->res[reverse ? na - 1 - i : i];
	m->inv.gpu_class = m->nf.gpu_class;
	m->inv.labels = m->label_ptrs;
	m->inv.n_labels = nl;
	m->inv.allocatable = m->res_ptrs;
	m->inv.n_allocatable = na;
	m->problem = (char *)"gpu 3: xid 79";
	m->inv.problems = &m->problem;
	m->inv.n_problems = 1;
}

/* The Node object of a fixture, as the Node watch gives it. */
static tau_node_facts node_facts(const inv_msg *m)
{
	tau_node_facts f = {0};

	assert_int_equal(tau_node_facts_from_json(&f, m->root), 0);
	return f;
}

/* What the aggregator's Report handler does with an accepted inventory (service_report.c). */
static unsigned ingest(tau_nodestore *s, const Tau__Inventory__V1__NodeInventory *inv, int64_t now)
{
	tau_report_view view;
	Tau__Inventory__V1__NodeInventory kept;
	unsigned elided;
	uint8_t *bytes;
	size_t len;

	assert_int_equal(tau_report_view_facts(&view, inv), 0);
	assert_true(tau_nodestore_report(s, &view.facts, now) >= 0);
	elided = tau_report_inventory_elidable(inv, &view.facts);
	tau_report_inventory_kept(&kept, inv, elided);
	len = protobuf_c_message_get_packed_size(&kept.base);
	bytes = malloc(len + 1);
	assert_non_null(bytes);
	assert_int_equal(protobuf_c_message_pack(&kept.base, bytes), len);
	assert_int_equal(
	        tau_nodestore_set_inventory(s, inv->node_name, bytes, len, (uint8_t)elided, 0), 0);
	free(bytes);
	tau_report_view_clear(&view);
	return elided;
}

/* GetNode's inventory packs to the same bytes as `want`: equal field for field, in order. */
static void assert_get_node_returns(tau_nodestore *s, const Tau__Inventory__V1__NodeInventory *want)
{
	Tau__Inventory__V1__GetNodeResponse *resp = NULL;
	tau_query_opts o = {.now_ms = 2000, .stale_after_ms = 90000};
	size_t wl = protobuf_c_message_get_packed_size(&want->base), gl;
	uint8_t *w = malloc(wl + 1), *g;

	assert_int_equal(tau_query_get_node(&resp, s, want->node_name, &o), 0);
	assert_non_null(resp->inventory);
	assert_int_equal(resp->inventory->n_labels, want->n_labels);
	assert_int_equal(resp->inventory->n_allocatable, want->n_allocatable);
	for (size_t i = 0; i < want->n_labels; i++) {
		assert_string_equal(resp->inventory->labels[i]->key, want->labels[i]->key);
		assert_string_equal(resp->inventory->labels[i]->value, want->labels[i]->value);
	}
	for (size_t i = 0; i < want->n_allocatable; i++) {
		assert_string_equal(resp->inventory->allocatable[i]->name,
		                    want->allocatable[i]->name);
		assert_string_equal(resp->inventory->allocatable[i]->quantity,
		                    want->allocatable[i]->quantity);
	}
	gl = protobuf_c_message_get_packed_size(&resp->inventory->base);
	assert_int_equal(gl, wl);
	g = malloc(gl + 1);
	assert_non_null(w);
	assert_non_null(g);
	protobuf_c_message_pack(&want->base, w);
	protobuf_c_message_pack(&resp->inventory->base, g);
	assert_memory_equal(g, w, wl);
	free(w);
	free(g);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
}

static size_t kept_len(const tau_nodestore *s, const char *name)
{
	tau_node_status st;

	assert_int_equal(tau_nodestore_get(s, name, &st), 0);
	return st.inventory_len;
}

static void inv_msg_free(inv_msg *m)
{
	tau_node_facts_clear(&m->nf);
	cJSON_Delete(m->root);
	free(m);
}

static void get_node_inventory_as_sent(void **state)
{
	static const char *files[] = {"node-nd-h100-v5.json", "node-nc-a100-v4-mig.json",
	                              "node-flex-h100.json"};

	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		/* 0: sorted, canonical (all left out); 1: reversed; 2: the Node's own quantity text
		 */
		for (int shape = 0; shape < 3; shape++) {
			tau_nodestore *s = NULL;
			inv_msg *m = malloc(sizeof(*m));
			tau_node_facts node;
			unsigned elided;

			assert_non_null(m);
			inv_from_node(m, files[i], shape == 1, shape == 2);
			node = node_facts(m);
			assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
			assert_int_equal(tau_nodestore_api_upsert(s, &node), 0);
			elided = ingest(s, &m->inv, 1000);
			if (shape == 0) {
				assert_int_equal(elided, TAU_REPORT_ELIDED_LABELS |
				                                 TAU_REPORT_ELIDED_ALLOCATABLE);
				assert_true(kept_len(s, m->inv.node_name) + 200 <
				            protobuf_c_message_get_packed_size(&m->inv.base));
				/* the agent agrees with its Node: one copy of the facts serves both
				 */
				{
					tau_node_status st;

					assert_int_equal(
					        tau_nodestore_get(s, m->inv.node_name, &st), 0);
					assert_ptr_equal(st.agent_facts, st.facts);
					assert_null(st.mismatch);
				}
			} else if (shape == 1) {
				assert_int_equal(elided, 0);
			}
			assert_get_node_returns(s, &m->inv);
			/* A repeat with a new digest takes the store's no-copy path. */
			m->inv.digest = (char *)"d2";
			(void)ingest(s, &m->inv, 1100);
			assert_get_node_returns(s, &m->inv);

			/* The Node changes (a label, a quantity) without a new report: GetNode
			 * still answers what the agent sent last. */
			tau_node_facts_clear(&node);
			node = node_facts(m);
			free(node.label_values[0]);
			node.label_values[0] = strdup("relabelled");
			assert_non_null(node.label_values[0]);
			assert_int_equal(tau_quantity_parse_str(&node.allocatable[0].value, "1"),
			                 0);
			assert_int_equal(tau_nodestore_api_upsert(s, &node), 0);
			assert_int_equal(tau_nodestore_mismatch_count(s), 1);
			assert_get_node_returns(s, &m->inv);
			/* unreadable, then readable again: the agent's answer stays */
			assert_int_equal(tau_nodestore_api_unreadable(s, m->inv.node_name, "bad"),
			                 0);
			assert_get_node_returns(s, &m->inv);
			assert_int_equal(tau_nodestore_api_upsert(s, &node), 0);
			assert_get_node_returns(s, &m->inv);

			/* The agent catches up: its new report is what GetNode answers. */
			m->labels[0].value = (char *)"relabelled";
			(void)ingest(s, &m->inv, 1200);
			assert_get_node_returns(s, &m->inv);

			tau_node_facts_clear(&node);
			tau_nodestore_free(s);
			inv_msg_free(m);
		}
	}
}

/* An agent whose labels differ from its Node's (one more, one changed) gets its own back. */
static void get_node_inventory_labels_differ(void **state)
{
	tau_nodestore *s = NULL;
	inv_msg *m = malloc(sizeof(*m));
	tau_node_facts node;
	size_t n;

	(void)state;
	assert_non_null(m);
	inv_from_node(m, "node-nd-h100-v5.json", false, false);
	node = node_facts(m);
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &node), 0);
	n = m->inv.n_labels;
	assert_true(n < 64);
	tau__inventory__v1__node_inventory__labels_entry__init(&m->labels[n]);
	m->labels[n].key = (char *)"zz.example.com/only-the-agent";
	m->labels[n].value = (char *)"yes";
	m->label_ptrs[n] = &m->labels[n];
	m->inv.n_labels = n + 1;
	m->labels[1].value = (char *)"agent-view";
	(void)ingest(s, &m->inv, 1000);
	assert_int_equal(tau_nodestore_mismatch_count(s), 0); /* labels are not compared */
	assert_get_node_returns(s, &m->inv);
	/* the Node then takes the agent's labels: the facts are shared, the answer the same */
	tau_node_facts_clear(&node);
	{
		tau_report_view v;

		assert_int_equal(tau_report_view_facts(&v, &m->inv), 0);
		assert_int_equal(tau_nodestore_api_upsert(s, &v.facts), 0);
		tau_report_view_clear(&v);
	}
	assert_get_node_returns(s, &m->inv);
	tau_nodestore_free(s);
	inv_msg_free(m);
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
	        cmocka_unit_test(explain_node_truth_never_changes_counting),
	        cmocka_unit_test(list_and_status),
	        cmocka_unit_test(pool_message),
	        cmocka_unit_test(get_node_inventory),
	        cmocka_unit_test(get_node_inventory_as_sent),
	        cmocka_unit_test(get_node_inventory_labels_differ),
	        cmocka_unit_test(list_nodes_pages),
	        cmocka_unit_test(pool_size_independent_of_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
