/*
 * fuzz_tauworkspace.c - libFuzzer target for the readers of TauWorkspaces.
 *
 * The first byte picks where the input goes in the fixed world
 * (kube_world.h): in place of workspace "aurora" (capacity team), of
 * "vision" (explicit team), or beside them; the rest goes through the
 * bounded JSON parser.  The object goes to every reader of a workspace:
 * the workspace controller's spec check (tau_ws_desired_spec_from_json) and,
 * when it passes, the namespace resolution and the objects it would own,
 * each of which must then build; the query service's summary
 * (tau_ws_summary_from_json); the budget's view (tau_budget_workspace_namespace,
 * tau_budget_decide with world_check).  A broken property aborts.
 */
#include "kube_world.h"

#include "workspace/desired.h"
#include "workspace/summary.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	world_fail("fuzz_tauworkspace", what);
}

/* A spec that passed the check must give a namespace decision and the objects it owns. */
static void owned_objects(const tau_ws_spec *spec)
{
	tau_ws_ns_input in = {
	        .workspace = spec->name,
	        .creation_timestamp = spec->creation_timestamp,
	        .target_namespace = spec->target_namespace,
	        .create_namespace = spec->create_namespace,
	        .adopt = spec->adopt,
	        .system_namespace = "tau-system",
	        .mode = TAU_WS_NS_MANAGED,
	};
	tau_ws_ns_result ns;
	cJSON *obj = NULL;
	char cq[300];
	bool drifted = true;

	if (tau_ws_namespace_resolve(&ns, &in) < 0)
		fail("namespace resolution failed on a valid spec");
	if (!ns.resolved) {
		if (ns.refusal.reason == NULL)
			fail("an unresolved namespace without a reason");
		return;
	}
	if (memchr(ns.namespace_name, '\0', sizeof(ns.namespace_name)) == NULL)
		fail("the namespace name is not terminated");
	if (tau_ws_desired_namespace(&obj, spec, &ns) == -TAU_EINVAL)
		fail("no Namespace for a resolved namespace");
	cJSON_Delete(obj);
	obj = NULL;
	if (tau_ws_desired_rolebinding(&obj, spec, ns.namespace_name) == -TAU_EINVAL)
		fail("no RoleBinding for a valid spec");
	if (obj != NULL && (tau_ws_desired_drifted(&drifted, NULL, 0, obj, obj) < 0 || drifted))
		fail("the desired RoleBinding drifts from itself");
	cJSON_Delete(obj);
	obj = NULL;
	if (tau_ws_desired_cluster_queue_name(cq, sizeof(cq), spec, "default") == 0 &&
	    tau_ws_desired_local_queue(&obj, spec, ns.namespace_name, "default") == 0) {
		drifted = true;
		if (tau_ws_desired_drifted(&drifted, NULL, 0, obj, obj) < 0 || drifted)
			fail("the desired LocalQueue drifts from itself");
		if (!tau_ws_desired_owned(obj, spec->name, NULL, NULL, 0))
			fail("the desired LocalQueue is not its own workspace's");
	}
	cJSON_Delete(obj);
	obj = NULL;
	if (tau_ws_desired_service_account(&obj, spec, ns.namespace_name) == 0 && obj != NULL) {
		drifted = true;
		if (tau_ws_desired_drifted(&drifted, NULL, 0, obj, obj) < 0 || drifted)
			fail("the desired ServiceAccount drifts from itself");
	}
	cJSON_Delete(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const world *w = world_get();
	cJSON *ws = NULL;
	world_view v;
	tau_ws_spec spec;
	tau_ws_summary sum;
	unsigned slot;

	if (size == 0)
		return 0;
	slot = data[0] % 3;
	if (tau_json_parse(&ws, (const char *)data + 1, size - 1, 1u << 20) < 0)
		return 0;
	if (tau_ws_desired_spec_from_json(&spec, ws) == 0) {
		if (spec.name == NULL || spec.name[0] == '\0')
			fail("a valid spec without a name");
		owned_objects(&spec);
	}
	memset(&sum, 0, sizeof(sum));
	if (tau_ws_summary_from_json(&sum, ws) == 0) {
		if (sum.name == NULL)
			fail("a summary without a name");
		tau_ws_summary_clear(&sum);
	}
	(void)tau_budget_workspace_namespace(ws, true);
	(void)tau_budget_workspace_namespace(ws, false);
	world_view_of(&v, w);
	if (slot < 2)
		v.wss[slot] = ws;
	else
		v.wss[v.in.api.n_workspaces++] = ws;
	world_check("fuzz_tauworkspace", &v.in);
	cJSON_Delete(ws);
	return 0;
}
