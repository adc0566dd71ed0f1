/*
 * fuzz_clusterqueue.c - libFuzzer target for the readers of Kueue
 * ClusterQueues, status.flavorsReservation included.
 *
 * The first byte picks whether the input replaces the world's ClusterQueue
 * of workspace "aurora" (capacity team), of "vision" (explicit team), or
 * comes beside them (kube_world.h); the rest goes through the bounded JSON
 * parser.  The object goes to the quota readers (tau_budget_groups_read,
 * tau_budget_reservations_read: what an explicit team may not reduce below),
 * to the controller's update of that queue (tau_budget_merge, which must
 * agree with ours afterwards), and with the world to tau_budget_decide
 * (world_check).  A broken property aborts.
 */
#include "kube_world.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"tau-ws-aurora", "tau-ws-vision"};
	static const char *const fields[] = {"nominalQuota", "borrowingLimit", "lendingLimit"};
	const world *w = world_get();
	const cJSON *ours;
	cJSON *cq = NULL;
	world_view v;
	tau_budget_cells cells = {0};
	unsigned slot;

	if (size == 0)
		return 0;
	slot = data[0] % 3;
	if (tau_json_parse(&cq, (const char *)data + 1, size - 1, 1u << 20) < 0)
		return 0;
	ours = world_find(w->cqs, w->n_cqs, names[slot % 2]);
	if (ours == NULL)
		world_fail("fuzz_clusterqueue", "the world lacks a ClusterQueue");
	for (size_t f = 0; f < 3; f++) {
		(void)tau_budget_groups_read(&cells, cq, fields[f]);
		tau_budget_cells_clear(&cells);
	}
	if (tau_budget_reservations_read(&cells, cq) == 0)
		for (size_t i = 0; i < cells.n; i++)
			if (cells.items[i].flavor == NULL || cells.items[i].resource == NULL)
				world_fail("fuzz_clusterqueue", "a reservation cell without names");
	tau_budget_cells_clear(&cells);
	world_check_merge("fuzz_clusterqueue", ours, cq);
	world_view_of(&v, w);
	if (slot < 2) {
		for (size_t i = 0; i < v.in.api.n_cluster_queues; i++)
			if (v.cqs[i] == ours)
				v.cqs[i] = cq;
	} else {
		v.cqs[v.in.api.n_cluster_queues++] = cq;
	}
	world_check("fuzz_clusterqueue", &v.in);
	cJSON_Delete(cq);
	return 0;
}
