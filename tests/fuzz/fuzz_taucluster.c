/*
 * fuzz_taucluster.c - libFuzzer target for the readers of the TauCluster.
 *
 * Any bytes go through the bounded JSON parser; whatever parses is the
 * TauCluster of the fixed world (kube_world.h) and goes to the budget's
 * decision (tau_budget_decide: managementMode, capacityTeamRef, metadata.uid)
 * and to the inventory's node selector (tau_inventory_cluster, which must fail
 * closed on anything it cannot read).  world_check asserts what holds of
 * any decision.  A broken property aborts.
 */
#include "kube_world.h"

#include "inventory/service.h"

#include "tau/log.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int no_review(void *ud, const char *token, tau_auth_review *out)
{
	(void)ud;
	(void)token;
	(void)out;
	return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static tau_inventory *agg;
	cJSON *cluster = NULL;
	world_view v;

	if (agg == NULL) {
		tau_inventory_config cfg = {
		        .agent_user = "system:serviceaccount:tau-system:tau-node-agent",
		        .review = no_review};

		tau_log_set_level(TAU_LOG_OFF);
		if (tau_inventory_new(&agg, &cfg) < 0)
			world_fail("fuzz_taucluster", "cannot make the aggregator state");
	}
	if (tau_json_parse(&cluster, (const char *)data, size, 1u << 20) < 0)
		return 0;
	world_view_of(&v, world_get());
	v.in.cluster = cluster;
	world_check("fuzz_taucluster", &v.in);
	tau_inventory_cluster(agg, cluster);
	cJSON_Delete(cluster);
	return 0;
}
