/*
 * fuzz_localqueue.c - libFuzzer target for the workspace controller's
 * readers of Kueue LocalQueues and of what routes through them (Workloads).
 *
 * Any bytes go through the bounded JSON parser; whatever parses is the
 * observed LocalQueue of workspace "aurora" (kube_world.h).  It goes to the
 * ownership check (tau_ws_desired_owned), the drift check against the
 * desired LocalQueue (tau_ws_desired_drifted) and, when it drifted but can
 * be updated in place, the update (tau_apply_merge_owned), after which it
 * must no longer drift, or the controller would write it on every pass
 * (asked of objects without repeated keys, as kube_world.h explains).
 * The same object read as a Workload goes to the drain rules
 * (tau_drain_source_from_json).  A broken property aborts.
 */
#include "kube_world.h"

#include "controller/apply.h"
#include "workspace/desired.h"

#include "tau/drain.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	world_fail("fuzz_localqueue", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cJSON *desired;
	static tau_ws_spec spec;
	const world *w = world_get();
	tau_kube_resource lq_res = {"kueue.x-k8s.io", "v1beta2", "localqueues", true};
	tau_apply_kind kind = {.res = &lq_res, .diff = tau_ws_desired_drifted};
	cJSON *lq = NULL, *merged;
	bool drifted = false;
	char what[512];
	tau_drain_source src;
	const char *queues[] = {"aurora"};

	if (desired == NULL) {
		if (tau_ws_desired_spec_from_json(&spec, w->wss[0]) < 0 ||
		    tau_ws_desired_local_queue(&desired, &spec, "aurora", "default") < 0)
			fail("no desired LocalQueue for the world's workspace");
	}
	if (tau_json_parse(&lq, (const char *)data, size, 1u << 20) < 0)
		return 0;
	(void)tau_ws_desired_owned(lq, spec.name, spec.uid, what, sizeof(what));
	(void)tau_ws_desired_owned(lq, spec.name, NULL, what, sizeof(what));
	if (!world_duplicate_keys(lq) &&
	    tau_ws_desired_drifted(&drifted, what, sizeof(what), desired, lq) == 0 && drifted &&
	    cJSON_IsObject(lq) &&
	    strcmp(tau_json_str(desired, "spec.clusterQueue"),
	           tau_json_str(lq, "spec.clusterQueue") ? tau_json_str(lq, "spec.clusterQueue")
	                                                 : "") == 0) {
		merged = cJSON_Duplicate(lq, 1);
		if (merged == NULL)
			fail("out of memory");
		if (tau_apply_merge_owned(merged, desired, &kind) == 0) {
			drifted = true;
			if (tau_ws_desired_drifted(&drifted, what, sizeof(what), desired, merged) <
			            0 ||
			    drifted) {
				fprintf(stderr,
				        "fuzz_localqueue: the updated LocalQueue still drifts: "
				        "%s\n",
				        what);
				abort();
			}
		}
		cJSON_Delete(merged);
	}
	if (tau_drain_source_from_json(&src, TAU_DRAIN_WORKLOAD, lq) == 0) {
		if (src.name == NULL)
			fail("a Workload without a name");
		(void)tau_drain_source_finished(&src);
		(void)tau_drain_source_routed(&src, queues, 1);
	}
	cJSON_Delete(lq);
	return 0;
}
