/*
 * inventory.c - the budget's view of the inventory: a pool snapshot
 * (inventory/snapshot.h, the inventory's public read API) turned into the
 * plain data the decision reads.  The snapshot is kept, not copied again: the counted
 * nodes' names and labels are read from its facts.
 */
#include "controller.h"

#include "inventory/snapshot.h"

#include "tau/error.h"
#include "tau/mem.h"

#include <stdlib.h>
#include <string.h>

void tau_budget_inventory_clear(tau_budget_inventory *inv)
{
	if (inv == NULL)
		return;
	tau_free_many(inv->problem, inv->nodes);
	tau_budget_pool_free(inv->pool);
	tau_pool_snapshot_free(inv->snapshot);
	memset(inv, 0, sizeof(*inv));
}

_Static_assert(TAU_BUDGET_DRA_CLASSES == TAU_POOL_DRA_EXAMPLES,
               "the condition names every class the snapshot keeps");

/* The DeviceClasses' usability, lending the snapshot's strings. */
static void inventory_dra(tau_budget_dra *out, const tau_pool_dra_summary *sum)
{
	out->mapped = sum->mapped;
	out->unusable = sum->unusable;
	out->kueue_error = sum->kueue_error[0] != '\0' ? sum->kueue_error : NULL;
	for (size_t i = 0; i < sum->n_examples && i < TAU_BUDGET_DRA_CLASSES; i++) {
		out->classes[i] = (tau_budget_dra_class){.name = sum->examples[i].name,
		                                         .reason = sum->examples[i].reason};
		out->n_classes = i + 1;
	}
}

int tau_budget_inventory_from_snapshot(tau_budget_inventory *out, tau_pool_snapshot *snap)
{
	tau_budget_inventory inv = {0};
	int rc;

	if (out == NULL || snap == NULL) {
		tau_pool_snapshot_free(snap);
		return tau_error_set(TAU_EINVAL, "budget inventory: missing snapshot");
	}
	inv.snapshot = snap;
	inv.established = snap->established;
	inv.nodes_observed = snap->n_nodes + snap->missing_nodes;
	if (!snap->valid &&
	    (inv.problem = strdup(snap->invalid_reason != NULL ? snap->invalid_reason
	                                                       : "the pool is not valid")) == NULL)
		goto oom;
	if ((rc = tau_budget_pool_new(&inv.pool)) < 0)
		goto fail;
	for (size_t f = 0; f < snap->n_flavors; f++) {
		const tau_pool_snapshot_flavor *fl = &snap->flavors[f];

		if ((rc = tau_budget_pool_add_class(inv.pool, fl->name)) < 0)
			goto fail;
		for (size_t r = 0; r < fl->n_resources; r++)
			if ((rc = tau_budget_pool_set(inv.pool, fl->name, fl->resources[r].name,
			                              &fl->resources[r].value)) < 0)
				goto fail;
	}
	inv.nodes = calloc(snap->n_nodes + 1, sizeof(*inv.nodes));
	if (inv.nodes == NULL)
		goto oom;
	/* The conflict check reads names and labels from the facts (tau_budget_node.facts). */
	for (size_t i = 0; i < snap->n_nodes; i++)
		inv.nodes[i].facts = &snap->nodes[i];
	inv.n_nodes = snap->n_nodes;
	inv.truth.reporting = snap->truth.reporting;
	inv.truth.disagreeing = snap->truth.disagreeing;
	for (size_t i = 0; i < snap->truth.n_examples && i < TAU_BUDGET_TRUTH_NODES; i++) {
		const tau_pool_truth_example *ex = &snap->truth.examples[i];

		inv.truth.nodes[i] = (tau_budget_truth_node){.node = ex->node,
		                                             .rule = ex->rule,
		                                             .detail = ex->detail,
		                                             .more_rules = ex->more_rules};
		inv.truth.n_nodes = i + 1;
	}
	inventory_dra(&inv.dra, &snap->dra);
	*out = inv;
	return 0;
oom:
	rc = tau_error_set(TAU_ENOMEM, "budget inventory: out of memory");
fail:
	tau_budget_inventory_clear(&inv);
	return rc;
}
