/* Unit tests of `tau inventory` rendering: the stable JSON shapes and the aligned tables. */
#include "cli.h"
#include "inventory.h"
#include "table.h"

#include "tau/error.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct pool_fixture {
	Tau__Inventory__V1__Pool pool;
	Tau__Inventory__V1__Flavor fl[2], *flp[2];
	Tau__Inventory__V1__Flavor__ResourcesEntry re[3], *rep0[2], *rep1[1];
	char *missing[1];
} pool_fixture;

static void build_pool(pool_fixture *f)
{
	memset(f, 0, sizeof(*f));
	tau__inventory__v1__pool__init(&f->pool);
	for (int i = 0; i < 2; i++) {
		tau__inventory__v1__flavor__init(&f->fl[i]);
		f->flp[i] = &f->fl[i];
	}
	for (int i = 0; i < 3; i++)
		tau__inventory__v1__flavor__resources_entry__init(&f->re[i]);
	f->re[0].key = (char *)"cpu";
	f->re[0].value = (char *)"189880m";
	f->re[1].key = (char *)"nvidia.com/gpu";
	f->re[1].value = (char *)"16";
	f->re[2].key = (char *)"nvidia.com/gpu";
	f->re[2].value = (char *)"8";
	f->rep0[0] = &f->re[0];
	f->rep0[1] = &f->re[1];
	f->rep1[0] = &f->re[2];
	f->fl[0].name = (char *)"h100";
	f->fl[0].node_count = 2;
	f->fl[0].n_resources = 2;
	f->fl[0].resources = f->rep0;
	f->fl[1].name = (char *)"a100-long-name";
	f->fl[1].node_count = 1;
	f->fl[1].n_resources = 1;
	f->fl[1].resources = f->rep1;
	f->missing[0] = (char *)"d";
	f->pool.established = false;
	f->pool.valid = false;
	f->pool.invalid_reason = (char *)"spec.nodes.selector: bad value";
	f->pool.n_missing_nodes = 1;
	f->pool.missing_count = 70; /* the aggregator names the first 64 only */
	f->pool.missing_nodes = f->missing;
	f->pool.n_flavors = 2;
	f->pool.flavors = f->flp;
}

static void pool_json(void **state)
{
	pool_fixture f;
	char *out = NULL;
	cJSON *doc, *item;

	(void)state;
	build_pool(&f);
	assert_int_equal(tau_cli_render_pool(&out, &f.pool, NULL, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	assert_non_null(doc);
	/* Documented keys, in order. */
	item = doc->child;
	assert_string_equal(item->string, "established");
	assert_true(cJSON_IsFalse(item));
	item = item->next;
	assert_string_equal(item->string, "valid");
	assert_true(cJSON_IsFalse(item));
	item = item->next;
	assert_string_equal(item->string, "invalidReason");
	assert_string_equal(item->valuestring, "spec.nodes.selector: bad value");
	item = item->next;
	assert_string_equal(item->string, "missingNodes");
	assert_string_equal(cJSON_GetArrayItem(item, 0)->valuestring, "d");
	item = item->next;
	assert_string_equal(item->string, "missingCount");
	assert_int_equal(item->valueint, 70);
	item = item->next;
	assert_string_equal(item->string, "flavors");
	assert_null(item->next);
	item = cJSON_GetArrayItem(item, 0);
	assert_string_equal(cJSON_GetObjectItem(item, "name")->valuestring, "h100");
	assert_int_equal(cJSON_GetObjectItem(item, "nodes")->valueint, 2);
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(item, "resources"), "cpu")->valuestring,
	        "189880m");
	cJSON_Delete(doc);
	free(out);
}

static void pool_table(void **state)
{
	pool_fixture f;
	char *out = NULL;

	(void)state;
	build_pool(&f);
	assert_int_equal(tau_cli_render_pool(&out, &f.pool, NULL, TAU_CLI_TABLE), 0);
	assert_string_equal(out, "FLAVOR           NODES   RESOURCE         ALLOCATABLE\n"
	                         "h100             2       cpu              189880m\n"
	                         "h100             2       nvidia.com/gpu   16\n"
	                         "a100-long-name   1       nvidia.com/gpu   8\n"
	                         "\n"
	                         "Established: no (budgets are not shrunk yet)\n"
	                         "Valid: no, nothing counts (budget zeroed): spec.nodes.selector: "
	                         "bad value\n"
	                         "Missing nodes: d, ... (70 in all)\n");
	free(out);
}

/*
 * Part of a sum through DRA: a VIA-DRA column ("-" where none) and JSON draResources per
 * flavor ({} where none); without DRA the table keeps its four columns (pool_table).
 */
static void pool_via_dra(void **state)
{
	pool_fixture f;
	Tau__Inventory__V1__Flavor__DraResourcesEntry
	        d = TAU__INVENTORY__V1__FLAVOR__DRA_RESOURCES_ENTRY__INIT,
	        *dp[1] = {&d};
	char *out = NULL;
	cJSON *doc, *fl;

	(void)state;
	build_pool(&f);
	d.key = (char *)"nvidia.com/gpu";
	d.value = (char *)"8";
	f.fl[0].n_dra_resources = 1;
	f.fl[0].dra_resources = dp;
	assert_int_equal(tau_cli_render_pool(&out, &f.pool, NULL, TAU_CLI_TABLE), 0);
	assert_non_null(strstr(out,
	                       "FLAVOR           NODES   RESOURCE         ALLOCATABLE   VIA-DRA\n"
	                       "h100             2       cpu              189880m       -\n"
	                       "h100             2       nvidia.com/gpu   16            8\n"
	                       "a100-long-name   1       nvidia.com/gpu   8             -\n"
	                       "\n"
	                       "Established: no"));
	free(out);
	assert_int_equal(tau_cli_render_pool(&out, &f.pool, NULL, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	fl = cJSON_GetObjectItem(doc, "flavors");
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(fl, 0), "draResources"),
	                            "nvidia.com/gpu")
	                ->valuestring,
	        "8");
	assert_non_null(cJSON_GetObjectItem(cJSON_GetArrayItem(fl, 1), "draResources"));
	assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(fl, 1), "draResources")->child);
	cJSON_Delete(doc);
	free(out);
}

/* Beside the pool: the free-now figures per class (GetCapacity), table and JSON "freeNow". */
static void pool_with_free_now(void **state)
{
	pool_fixture f;
	Tau__Inventory__V1__GetCapacityResponse cap =
	        TAU__INVENTORY__V1__GET_CAPACITY_RESPONSE__INIT;
	Tau__Inventory__V1__ClassCapacity c = TAU__INVENTORY__V1__CLASS_CAPACITY__INIT,
	                                  *cp[1] = {&c};
	char *out = NULL;
	cJSON *doc, *o;

	(void)state;
	build_pool(&f);
	c.gpu_class = (char *)"h100";
	c.nodes = 2;
	c.nodes_known = 1;
	c.nodes_unknown = 1;
	c.gpus_healthy = 7;
	c.gpus_in_use = 2;
	c.gpus_free = 5;
	c.nodes_degraded = 1;
	cap.n_classes = 1;
	cap.classes = cp;
	assert_int_equal(tau_cli_render_pool(&out, &f.pool, &cap, TAU_CLI_TABLE), 0);
	assert_non_null(strstr(out,
	                       "Missing nodes: d, ... (70 in all)\n"
	                       "\n"
	                       "Free now (node truth; unknown nodes never count as free):\n"
	                       "GPU-CLASS   NODES   KNOWN   UNKNOWN   DEGRADED   HEALTHY   IN-USE"
	                       "   FREE   WHOLE-NODES-FREE\n"
	                       "h100        2       1       1         1          7         2    "
	                       "    5      0\n"));
	free(out);
	assert_int_equal(tau_cli_render_pool(&out, &f.pool, &cap, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "freeNow"), 0);
	assert_string_equal(cJSON_GetObjectItem(o, "gpuClass")->valuestring, "h100");
	assert_int_equal(cJSON_GetObjectItem(o, "gpusFree")->valueint, 5);
	assert_int_equal(cJSON_GetObjectItem(o, "nodesUnknown")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(o, "wholeNodesFree")->valueint, 0);
	cJSON_Delete(doc);
	free(out);
}

static void nodes_json_and_table(void **state)
{
	Tau__Inventory__V1__ListNodesResponse resp = TAU__INVENTORY__V1__LIST_NODES_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus n = TAU__INVENTORY__V1__NODE_STATUS__INIT, *np[1] = {&n};
	Tau__Inventory__V1__ResourceQuantity g = TAU__INVENTORY__V1__RESOURCE_QUANTITY__INIT,
	                                     *gp[1] = {&g};
	char *reasons[1] = {(char *)"P1.ready: Ready condition is not True"};
	char *out = NULL;
	cJSON *doc, *o;

	(void)state;
	g.name = (char *)"nvidia.com/gpu";
	g.quantity = (char *)"8";
	n.name = (char *)"gpu-1";
	n.gpu_class = (char *)"h100";
	n.counted = false;
	n.n_reasons = 1;
	n.reasons = reasons;
	n.connected = true;
	n.stale = false;
	n.n_allocatable = 1;
	n.allocatable = gp;
	n.last_heard_unix_ms = 1700000000000;
	resp.n_nodes = 1;
	resp.nodes = np;
	assert_int_equal(tau_cli_render_nodes(&out, &resp, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	o = cJSON_GetArrayItem(doc, 0);
	assert_string_equal(cJSON_GetObjectItem(o, "name")->valuestring, "gpu-1");
	assert_string_equal(cJSON_GetObjectItem(o, "gpuClass")->valuestring, "h100");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "counted")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "connected")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "stale")));
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "reasons"), 0)->valuestring,
	                    reasons[0]);
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(o, "allocatable"), "nvidia.com/gpu")
	                ->valuestring,
	        "8");
	cJSON_Delete(doc);
	free(out);
	assert_int_equal(tau_cli_render_nodes(&out, &resp, TAU_CLI_TABLE), 0);
	assert_string_equal(out,
	                    "NAME    GPU-CLASS   COUNTED   CONNECTED   STALE   GPUS   HEALTH    "
	                    "FREE      REASON\n"
	                    "gpu-1   h100        no        yes         no      8      unknown   "
	                    "unknown   P1.ready: Ready condition is not True\n");
	free(out);
}

/* HEALTH and FREE come from node truth; FREE is "unknown" (JSON null) unless known and live. */
static void nodes_health_and_free(void **state)
{
	Tau__Inventory__V1__ListNodesResponse resp = TAU__INVENTORY__V1__LIST_NODES_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus a = TAU__INVENTORY__V1__NODE_STATUS__INIT,
	                               b = TAU__INVENTORY__V1__NODE_STATUS__INIT, *np[2] = {&a, &b};
	Tau__Inventory__V1__NodeTruth ta = TAU__INVENTORY__V1__NODE_TRUTH__INIT,
	                              tb = TAU__INVENTORY__V1__NODE_TRUTH__INIT;
	char *problems[1] = {(char *)"GPU 3 (GPU-3) unhealthy: row remap pending"};
	char *out = NULL;
	cJSON *doc, *o;

	(void)state;
	a.name = (char *)"a";
	a.gpu_class = (char *)"h100";
	a.counted = true;
	a.connected = true;
	a.truth = &ta;
	ta.health = TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_DEGRADED;
	ta.gpus_known = true;
	ta.gpus_healthy = 7;
	ta.gpus_in_use = 2;
	ta.gpus_free = 5;
	ta.n_problems = 1;
	ta.problems = problems;
	ta.problem_count = 1;
	b.name = (char *)"b";
	b.gpu_class = (char *)"h100";
	b.counted = true;
	b.stale = true; /* its figures are the last heard: not free now */
	b.truth = &tb;
	tb.health = TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_OK;
	tb.gpus_known = true;
	tb.gpus_free = 8;
	resp.n_nodes = 2;
	resp.nodes = np;
	assert_int_equal(tau_cli_render_nodes(&out, &resp, TAU_CLI_TABLE), 0);
	assert_string_equal(out,
	                    "NAME   GPU-CLASS   COUNTED   CONNECTED   STALE   GPUS   HEALTH     "
	                    "FREE      REASON\n"
	                    "a      h100        yes       yes         no      0      degraded   "
	                    "5         GPU 3 (GPU-3) unhealthy: row remap pending\n"
	                    "b      h100        yes       no          yes     0      ok         "
	                    "unknown\n");
	free(out);
	assert_int_equal(tau_cli_render_nodes(&out, &resp, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	o = cJSON_GetArrayItem(doc, 0);
	assert_string_equal(cJSON_GetObjectItem(o, "health")->valuestring, "degraded");
	assert_int_equal(cJSON_GetObjectItem(o, "gpusFree")->valueint, 5);
	assert_int_equal(cJSON_GetObjectItem(o, "gpusInUse")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(o, "gpusHealthy")->valueint, 7);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "problems"), 0)->valuestring,
	                    problems[0]);
	o = cJSON_GetArrayItem(doc, 1);
	assert_string_equal(cJSON_GetObjectItem(o, "health")->valuestring, "ok");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "gpusFree")));
	cJSON_Delete(doc);
	free(out);
}

/* A node whose GPUs count through DRA: GPUS says so, JSON draResources lists them. */
static void nodes_dra_gpus(void **state)
{
	Tau__Inventory__V1__ListNodesResponse resp = TAU__INVENTORY__V1__LIST_NODES_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus n = TAU__INVENTORY__V1__NODE_STATUS__INIT, *np[1] = {&n};
	Tau__Inventory__V1__NodeTruth t = TAU__INVENTORY__V1__NODE_TRUTH__INIT;
	Tau__Inventory__V1__ResourceQuantity g = TAU__INVENTORY__V1__RESOURCE_QUANTITY__INIT,
	                                     *gp[1] = {&g};
	char *out = NULL;
	cJSON *doc, *o;

	(void)state;
	g.name = (char *)"nvidia.com/gpu";
	g.quantity = (char *)"8";
	n.name = (char *)"dra-0";
	n.gpu_class = (char *)"h100";
	n.counted = true;
	n.connected = true;
	n.n_dra_resources = 1;
	n.dra_resources = gp;
	n.truth = &t;
	t.health = TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_OK;
	t.gpus_known = true;
	t.gpus_through_dra = true;
	t.gpu_devices = t.gpus_healthy = 8;
	t.gpus_in_use = 2;
	t.gpus_free = 6;
	resp.n_nodes = 1;
	resp.nodes = np;
	assert_int_equal(tau_cli_render_nodes(&out, &resp, TAU_CLI_TABLE), 0);
	assert_string_equal(out,
	                    "NAME    GPU-CLASS   COUNTED   CONNECTED   STALE   GPUS      HEALTH   "
	                    "FREE   REASON\n"
	                    "dra-0   h100        yes       yes         no      8 (DRA)   ok       "
	                    "6\n");
	free(out);
	assert_int_equal(tau_cli_render_nodes(&out, &resp, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	o = cJSON_GetArrayItem(doc, 0);
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(o, "draResources"), "nvidia.com/gpu")
	                ->valuestring,
	        "8");
	assert_null(cJSON_GetObjectItem(o, "allocatable")->child);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "gpusThroughDra")));
	assert_int_equal(cJSON_GetObjectItem(o, "gpusFree")->valueint, 6);
	cJSON_Delete(doc);
	free(out);
}

static void fit_table_and_json(void **state)
{
	Tau__Inventory__V1__FitResponse fit = TAU__INVENTORY__V1__FIT_RESPONSE__INIT;
	Tau__Inventory__V1__FitPlacement p1 = TAU__INVENTORY__V1__FIT_PLACEMENT__INIT,
	                                 p2 = TAU__INVENTORY__V1__FIT_PLACEMENT__INIT,
	                                 *pp[2] = {&p1, &p2};
	char *unknown[1] = {(char *)"d"};
	char *out = NULL;
	cJSON *doc;

	(void)state;
	fit.fits = true;
	fit.reason = (char *)"13 GPUs of class h100 fit now on 2 nodes";
	fit.n_placement = 2;
	fit.placement = pp;
	p1.node = (char *)"b";
	p1.gpus = 8;
	p1.gpus_free = 8;
	p2.node = (char *)"a";
	p2.gpus = 5;
	p2.gpus_free = 5;
	fit.nodes = 4;
	fit.candidates = 3;
	fit.candidate_gpus = 17;
	fit.unknown_count = 1;
	fit.n_unknown_nodes = 1;
	fit.unknown_nodes = unknown;
	assert_int_equal(tau_cli_render_fit(&out, &fit, TAU_CLI_TABLE), 0);
	assert_string_equal(out, "NODE   GPUS   FREE-NOW\n"
	                         "b      8      8\n"
	                         "a      5      5\n"
	                         "\n"
	                         "Fits: yes: 13 GPUs of class h100 fit now on 2 nodes\n"
	                         "Unknown nodes: d\n");
	free(out);
	assert_int_equal(tau_cli_render_fit(&out, &fit, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "fits")));
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "placement"), 1),
	                            "node")
	                ->valuestring,
	        "a");
	assert_int_equal(cJSON_GetObjectItem(doc, "candidateGpus")->valueint, 17);
	assert_int_equal(cJSON_GetObjectItem(doc, "unknownCount")->valueint, 1);
	cJSON_Delete(doc);
	free(out);
	/* does not fit: no table, the verdict only */
	fit.fits = false;
	fit.n_placement = 0;
	fit.reason =
	        (char *)"18 GPUs of class h100 do not fit now: 17 can be had on 3 of 4 counted "
	                "nodes";
	fit.unknown_count = 0;
	fit.n_unknown_nodes = 0;
	assert_int_equal(tau_cli_render_fit(&out, &fit, TAU_CLI_TABLE), 0);
	assert_string_equal(out,
	                    "Fits: no: 18 GPUs of class h100 do not fit now: 17 can be had on 3 "
	                    "of 4 counted nodes\nUnknown nodes: none\n");
	free(out);
}

static void explain(void **state)
{
	Tau__Inventory__V1__ExplainNodeResponse ex =
	        TAU__INVENTORY__V1__EXPLAIN_NODE_RESPONSE__INIT;
	Tau__Inventory__V1__Rule r1 = TAU__INVENTORY__V1__RULE__INIT,
	                         r2 = TAU__INVENTORY__V1__RULE__INIT;
	Tau__Inventory__V1__Rule *rules[2] = {&r1, &r2};
	char *out = NULL;
	cJSON *doc, *r;

	(void)state;
	r1.name = (char *)"P1.linux";
	r1.pass = true;
	r1.detail = (char *)"os is linux";
	r2.name = (char *)"P1.ready";
	r2.pass = false;
	r2.detail = (char *)"Ready condition is not True";
	ex.name = (char *)"gpu-1";
	ex.counted = false;
	ex.n_rules = 2;
	ex.rules = rules;
	assert_int_equal(tau_cli_render_explain(&out, &ex, TAU_CLI_TABLE), 0);
	assert_string_equal(out, "RULE       RESULT   DETAIL\n"
	                         "P1.linux   pass     os is linux\n"
	                         "P1.ready   FAIL     Ready condition is not True\n"
	                         "\nNode gpu-1 does not count.\n");
	free(out);
	assert_int_equal(tau_cli_render_explain(&out, &ex, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(doc, "counted")));
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "rules"), 1);
	assert_string_equal(cJSON_GetObjectItem(r, "name")->valuestring, "P1.ready");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r, "pass")));
	cJSON_Delete(doc);
	free(out);
}

/* The agent.* rules come after the verdict, in a table of their own. */
static void explain_node_truth(void **state)
{
	Tau__Inventory__V1__ExplainNodeResponse ex =
	        TAU__INVENTORY__V1__EXPLAIN_NODE_RESPONSE__INIT;
	Tau__Inventory__V1__Rule r1 = TAU__INVENTORY__V1__RULE__INIT,
	                         t1 = TAU__INVENTORY__V1__RULE__INIT,
	                         t2 = TAU__INVENTORY__V1__RULE__INIT;
	Tau__Inventory__V1__Rule *rules[1] = {&r1}, *truth[2] = {&t1, &t2};
	char *out = NULL;
	cJSON *doc, *r;

	(void)state;
	r1.name = (char *)"P1.ready";
	r1.pass = true;
	r1.detail = (char *)"Ready";
	t1.name = (char *)"agent.gpu-health";
	t1.detail = (char *)"7 healthy";
	t2.name = (char *)"agent.csi-probe";
	t2.pass = true;
	t2.unknown = true;
	t2.detail = (char *)"not checked";
	ex.name = (char *)"gpu-1";
	ex.counted = true;
	ex.flavor = (char *)"h100";
	ex.n_rules = 1;
	ex.rules = rules;
	ex.n_node_truth = 2;
	ex.node_truth = truth;
	assert_int_equal(tau_cli_render_explain(&out, &ex, TAU_CLI_TABLE), 0);
	assert_string_equal(out, "RULE       RESULT   DETAIL\n"
	                         "P1.ready   pass     Ready\n"
	                         "\nNode gpu-1 counts in flavor h100.\n"
	                         "\nWhat the node's agent sees (never changes whether it counts):\n"
	                         "NODE TRUTH         RESULT    DETAIL\n"
	                         "agent.gpu-health   WARN      7 healthy\n"
	                         "agent.csi-probe    unknown   not checked\n");
	free(out);
	assert_int_equal(tau_cli_render_explain(&out, &ex, TAU_CLI_JSON), 0);
	doc = cJSON_Parse(out);
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "nodeTruth"), 1);
	assert_string_equal(cJSON_GetObjectItem(r, "name")->valuestring, "agent.csi-probe");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "unknown")));
	cJSON_Delete(doc);
	free(out);
}

static void table_alignment(void **state)
{
	static const char *const hdr[] = {"A", "LONGER"};
	static const char *const row1[] = {"wide-cell", ""};
	static const char *const row2[] = {NULL, "x"};
	tau_table *t = NULL;
	char *out = NULL;

	(void)state;
	assert_int_equal(tau_table_new(&t, 2, hdr), 0);
	assert_int_equal(tau_table_add(t, row1), 0);
	assert_int_equal(tau_table_add(t, row2), 0);
	assert_int_equal(tau_table_render(&out, t), 0);
	/* No trailing blanks, columns aligned. */
	assert_string_equal(out, "A           LONGER\nwide-cell\n            x\n");
	free(out);
	tau_table_free(t);
}

/* Rendering appends into a capped buffer: wide cells align, an oversized table is refused. */
static void table_wide_and_capped(void **state)
{
	static const char *const hdr[] = {"A", "B"};
	const char *row[2];
	size_t big = TAU_TABLE_MAX_BYTES;
	char *wide = malloc(big + 1), *out = NULL;
	tau_table *t = NULL;

	(void)state;
	assert_non_null(wide);
	memset(wide, 'w', 100);
	wide[100] = '\0';
	row[0] = wide;
	row[1] = "x";
	assert_int_equal(tau_table_new(&t, 2, hdr), 0);
	assert_int_equal(tau_table_add(t, row), 0);
	assert_int_equal(tau_table_render(&out, t), 0);
	assert_int_equal(strlen(out), 2 * 105);
	assert_int_equal(strncmp(out, "A   ", 4), 0);
	assert_int_equal(out[103], 'B');
	assert_int_equal(out[2 * 105 - 2], 'x');
	free(out);
	out = NULL;
	tau_table_free(t);

	memset(wide, 'w', big);
	wide[big] = '\0';
	assert_int_equal(tau_table_new(&t, 2, hdr), 0);
	assert_int_equal(tau_table_add(t, row), 0);
	assert_int_equal(tau_table_render(&out, t), -TAU_ETOOBIG);
	assert_string_equal(tau_error_last()->msg, "table larger than 268435456 bytes");
	assert_null(out);
	tau_table_free(t);
	free(wide);
}

/* Run `tau inventory ARGS...` with stderr captured into err. */
static int run_inventory(char *err, size_t cap, const char **argv)
{
	tau_cli_globals g = {0};
	FILE *tmp = tmpfile();
	int saved = dup(2), argc = 0, rc;
	size_t n;

	assert_non_null(tmp);
	while (argv[argc] != NULL)
		argc++;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	optind = 0;
	rc = tau_cli_inventory(argc, (char **)argv, &g);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, cap - 1, tmp);
	err[n] = '\0';
	fclose(tmp);
	return rc;
}

/* --timeout used to be atoi(optarg) * 1000: junk, overflow and negatives are usage errors now. */
static void timeout_refused(void **state)
{
	static const struct {
		const char *value, *msg;
	} bad[] = {
	        {"1e300",
	         "tau inventory: --timeout 1e300: not a duration (e.g. 500ms, 60s, 2m, 1h30m)\n"},
	        {"nan",
	         "tau inventory: --timeout nan: not a duration (e.g. 500ms, 60s, 2m, 1h30m)\n"},
	        {"3000000", "tau inventory: --timeout 3000000: out of range (1ms..1h)\n"},
	        {"-5", "tau inventory: --timeout -5: must not be negative\n"},
	        {"0", "tau inventory: --timeout 0: out of range (1ms..1h)\n"},
	        {"5x",
	         "tau inventory: --timeout 5x: not a duration (e.g. 500ms, 60s, 2m, 1h30m)\n"},
	};
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = {"inventory",  "--aggregator", "127.0.0.1:1", "--timeout",
		                      bad[i].value, "pool",         NULL};

		assert_int_equal(run_inventory(err, sizeof(err), argv), TAU_CLI_USAGE);
		assert_string_equal(err, bad[i].msg);
	}
	{
		/* A sane value gets as far as the (absent) aggregator. */
		const char *argv[] = {"inventory", "--aggregator", "127.0.0.1:1", "--timeout",
		                      "0.5",       "pool",         NULL};

		assert_int_equal(run_inventory(err, sizeof(err), argv), TAU_CLI_FAILED);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(pool_json),
	        cmocka_unit_test(pool_table),
	        cmocka_unit_test(pool_via_dra),
	        cmocka_unit_test(pool_with_free_now),
	        cmocka_unit_test(nodes_json_and_table),
	        cmocka_unit_test(nodes_health_and_free),
	        cmocka_unit_test(nodes_dra_gpus),
	        cmocka_unit_test(fit_table_and_json),
	        cmocka_unit_test(explain),
	        cmocka_unit_test(explain_node_truth),
	        cmocka_unit_test(table_alignment),
	        cmocka_unit_test(table_wide_and_capped),
	        cmocka_unit_test(timeout_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
