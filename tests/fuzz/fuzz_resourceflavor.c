/*
 * fuzz_resourceflavor.c - libFuzzer target for the readers of Kueue
 * ResourceFlavors.
 *
 * The first byte picks whether the input replaces the world's own flavor
 * "taugrid-gpu-h100-ib" (kube_world.h) or comes beside it; the rest goes
 * through the bounded JSON parser.  The object goes to the ownership check
 * (tau_budget_ownership_of), to the controller's update of our flavor
 * (tau_budget_merge, which must agree with the desired flavor afterwards),
 * and with the world to tau_budget_decide (world_check; the P4 conflict
 * rules read foreign flavors' nodeLabels).  A broken property aborts.
 */
#include "kube_world.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const world *w = world_get();
	const cJSON *ours = world_find(w->flavors, w->n_flavors, "taugrid-gpu-h100-ib");
	cJSON *flavor = NULL;
	world_view v;
	char why[512];

	if (ours == NULL)
		world_fail("fuzz_resourceflavor", "the world has no flavor");
	if (size == 0)
		return 0;
	if (tau_json_parse(&flavor, (const char *)data + 1, size - 1, 1u << 20) < 0)
		return 0;
	(void)tau_budget_ownership_of(flavor, TAU_BUDGET_RESOURCE_FLAVOR, "c-uid", why,
	                              sizeof(why));
	world_check_merge("fuzz_resourceflavor", ours, flavor);
	world_view_of(&v, w);
	if (data[0] & 1) {
		for (size_t i = 0; i < v.in.api.n_flavors; i++)
			if (v.flavors[i] == ours)
				v.flavors[i] = flavor;
	} else {
		v.flavors[v.in.api.n_flavors++] = flavor;
	}
	world_check("fuzz_resourceflavor", &v.in);
	cJSON_Delete(flavor);
	return 0;
}
