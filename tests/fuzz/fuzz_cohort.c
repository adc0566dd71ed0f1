/*
 * fuzz_cohort.c - libFuzzer target for the readers of Kueue Cohorts.
 *
 * The first byte picks whether the input replaces the world's Cohort of the
 * capacity team ("tau-team-research"), of the explicit team ("tau-team-ml"),
 * or comes beside them (kube_world.h); the rest goes through the bounded
 * JSON parser.  The object goes to the quota readers
 * (tau_budget_groups_read of nominalQuota, borrowingLimit, lendingLimit;
 * tau_budget_applied), to the controller's update of that Cohort
 * (tau_budget_merge, which must agree with ours afterwards), and with the
 * world to tau_budget_decide (world_check).  A broken property aborts.
 */
#include "kube_world.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"tau-team-research", "tau-team-ml"};
	static const char *const fields[] = {"nominalQuota", "borrowingLimit", "lendingLimit"};
	const world *w = world_get();
	const cJSON *ours, *cohorts[WORLD_MAX + 1], *cqs[WORLD_MAX];
	cJSON *cohort = NULL;
	world_view v;
	unsigned slot;

	if (size == 0)
		return 0;
	slot = data[0] % 3;
	if (tau_json_parse(&cohort, (const char *)data + 1, size - 1, 1u << 20) < 0)
		return 0;
	ours = world_find(w->cohorts, w->n_cohorts, names[slot % 2]);
	if (ours == NULL)
		world_fail("fuzz_cohort", "the world lacks a Cohort");
	for (size_t f = 0; f < 3; f++) {
		tau_budget_cells cells = {0};

		(void)tau_budget_groups_read(&cells, cohort, fields[f]);
		tau_budget_cells_clear(&cells);
	}
	world_check_merge("fuzz_cohort", ours, cohort);
	world_view_of(&v, w);
	if (slot < 2) {
		for (size_t i = 0; i < v.in.api.n_cohorts; i++)
			if (v.cohorts[i] == ours)
				v.cohorts[i] = cohort;
	} else {
		v.cohorts[v.in.api.n_cohorts++] = cohort;
	}
	for (size_t i = 0; i < v.in.api.n_cohorts; i++)
		cohorts[i] = v.cohorts[i];
	for (size_t i = 0; i < v.in.api.n_cluster_queues; i++)
		cqs[i] = v.cqs[i];
	for (size_t t = 0; t < 2; t++) {
		tau_budget_cells applied = {0};

		(void)tau_budget_applied(&applied, names[t], cohorts, v.in.api.n_cohorts, cqs,
		                         v.in.api.n_cluster_queues);
		tau_budget_cells_clear(&applied);
	}
	world_check("fuzz_cohort", &v.in);
	cJSON_Delete(cohort);
	return 0;
}
