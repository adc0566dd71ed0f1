/*
 * test_cli_cluster.c - the readiness gate's verdicts from canned objects:
 * CRDs Established, the aggregator available with a live leader Lease, the
 * inventory established, and the TauCluster's conditions (no capacity team
 * is fine, a conflict or an unobserved generation is not).
 */
#include "cluster.h"

#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *parse(const char *s)
{
	char *t = strdup(s);
	cJSON *o = NULL;

	assert_non_null(t);
	for (char *p = t; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	assert_int_equal(tau_json_parse(&o, t, strlen(t), 0), 0);
	free(t);
	return o;
}

#define EST "{'status':{'conditions':[{'type':'Established','status':'True'}]}}"

static void test_crds(void **state)
{
	cJSON *ok = parse(EST), *no = parse("{'status':{'conditions':[{'type':'Established',"
	                                    "'status':'False'}]}}");
	const cJSON *all[3] = {ok, ok, ok}, *missing[3] = {ok, NULL, ok},
	            *pending[3] = {ok, ok, no};
	char msg[512];

	(void)state;
	assert_true(tau_cli_gate_crds(msg, sizeof(msg), all));
	assert_false(tau_cli_gate_crds(msg, sizeof(msg), missing));
	assert_string_equal(msg, "CRD teams.tau.azure.com not found");
	assert_false(tau_cli_gate_crds(msg, sizeof(msg), pending));
	assert_string_equal(msg, "CRD workspaces.tau.azure.com is not Established yet");
	cJSON_Delete(ok);
	cJSON_Delete(no);
}

static void test_aggregator(void **state)
{
	cJSON *dep = parse("{'status':{'availableReplicas':2}}");
	cJSON *none = parse("{'status':{'replicas':2}}");
	cJSON *cond = parse("{'status':{'conditions':[{'type':'Available','status':'True'}]}}");
	cJSON *lease = parse("{'spec':{'holderIdentity':'pod-a','leaseDurationSeconds':15,"
	                     "'renewTime':'2026-12-02T18:00:00.000000Z'}}");
	cJSON *free_lease = parse("{'spec':{'leaseDurationSeconds':15}}");
	time_t at = 1796234400; /* 2026-12-02T18:00:00Z */
	char msg[512];

	(void)state;
	assert_true(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", dep, lease, at + 10));
	assert_string_equal(msg, "Deployment ns/tau-aggregator available (2), leader pod-a");
	assert_true(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", cond, lease, at));
	assert_false(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", dep, lease, at + 16));
	assert_non_null(strstr(msg, "no leader: Lease ns/tau-aggregator held by pod-a has lapsed"));
	assert_false(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", none, lease, at));
	assert_string_equal(msg, "Deployment ns/tau-aggregator has no available replica");
	assert_false(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", NULL, lease, at));
	assert_non_null(strstr(msg, "Deployment ns/tau-aggregator not found"));
	assert_false(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", dep, free_lease, at));
	assert_string_equal(msg, "no leader: Lease ns/tau-aggregator has no holder");
	assert_false(tau_cli_gate_aggregator(msg, sizeof(msg), "ns", dep, NULL, at));
	assert_string_equal(msg, "no leader: Lease ns/tau-aggregator not found");
	cJSON_Delete(dep);
	cJSON_Delete(none);
	cJSON_Delete(cond);
	cJSON_Delete(lease);
	cJSON_Delete(free_lease);
}

static void test_inventory_and_conditions(void **state)
{
	cJSON *ready =
	        parse("{'metadata':{'generation':3},'status':{'observedGeneration':3,'conditions':["
	              "{'type':'InventoryEstablished','status':'True','reason':'Established',"
	              "'message':'every labelled node reported'},"
	              "{'type':'NodeSelectorValid','status':'True'},"
	              "{'type':'BudgetReady','status':'False','reason':'NoCapacityTeam'},"
	              "{'type':'ConflictDetected','status':'False'},"
	              "{'type':'NodeTruthAgrees','status':'False','reason':'Disagrees',"
	              "'message':'1 of 2 counted nodes'}]}}");
	cJSON *waiting =
	        parse("{'metadata':{'generation':1},'status':{'observedGeneration':1,'conditions':["
	              "{'type':'InventoryEstablished','status':'False','reason':'WaitingForNodes',"
	              "'message':'the sync gate is not open'},"
	              "{'type':'ConflictDetected','status':'True','reason':'ConflictDetected',"
	              "'message':'two budgets'}]}}");
	cJSON *stale = parse("{'metadata':{'generation':2},'status':{'observedGeneration':1}}");
	cJSON *budget = parse("{'metadata':{'generation':1},'status':{'observedGeneration':1,"
	                      "'conditions':[{'type':'BudgetReady','status':'False','reason':"
	                      "'PoolNotEstablished','message':'m'}]}}");
	char msg[512];

	(void)state;
	assert_true(tau_cli_gate_inventory(msg, sizeof(msg), ready));
	assert_true(tau_cli_gate_conditions(msg, sizeof(msg), ready));
	assert_string_equal(msg, "InventoryEstablished=True, NodeSelectorValid=True, "
	                         "BudgetReady=False, ConflictDetected=False, "
	                         "NodeTruthAgrees=False");
	assert_false(tau_cli_gate_inventory(msg, sizeof(msg), waiting));
	assert_string_equal(
	        msg, "InventoryEstablished=False WaitingForNodes: the sync gate is not open");
	assert_false(tau_cli_gate_conditions(msg, sizeof(msg), waiting));
	assert_string_equal(
	        msg, "InventoryEstablished=False WaitingForNodes: the sync gate is not open");
	assert_false(tau_cli_gate_inventory(msg, sizeof(msg), stale));
	assert_non_null(strstr(msg, "status not written for generation 2 yet"));
	assert_false(tau_cli_gate_inventory(msg, sizeof(msg), NULL));
	assert_string_equal(msg, "TauCluster cluster not found");
	assert_false(tau_cli_gate_conditions(msg, sizeof(msg), budget));
	assert_string_equal(msg, "BudgetReady=False PoolNotEstablished: m");
	cJSON_Delete(ready);
	cJSON_Delete(waiting);
	cJSON_Delete(stale);
	cJSON_Delete(budget);
}

static void test_pool_gate_needs_every_agent(void **state)
{
	char *names[2] = {(char *)"gpu-a", (char *)"gpu-b"};
	char msg[256];

	(void)state;
	strcpy(msg, "m");
	assert_true(tau_cli_gate_pool(msg, sizeof(msg), true, 0, NULL, 0));
	assert_string_equal(msg, "m");
	/* established by the sync timeout with agents refused or absent: not ready, named */
	assert_false(tau_cli_gate_pool(msg, sizeof(msg), true, 3, names, 2));
	assert_string_equal(msg, "m; established by the initial sync timeout, but 3 GPU nodes' "
	                         "agent never reported (counted from the Node object; see tau "
	                         "inventory explain NODE): gpu-a gpu-b");
	strcpy(msg, "m");
	assert_false(tau_cli_gate_pool(msg, sizeof(msg), false, 1, names, 1));
	assert_string_equal(msg, "m; waiting for 1 node: gpu-a");
	/* a short buffer is cut, never overrun */
	strcpy(msg, "m");
	assert_false(tau_cli_gate_pool(msg, 12, false, 2, names, 2));
	assert_int_equal(strlen(msg), 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_crds),
	        cmocka_unit_test(test_aggregator),
	        cmocka_unit_test(test_inventory_and_conditions),
	        cmocka_unit_test(test_pool_gate_needs_every_agent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
