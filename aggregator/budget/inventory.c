/*
 * inventory.c - the budget's view of the inventory: a pool snapshot
 * (inventory/snapshot.h, the inventory's public read API) turned into the
 * plain data the decision reads.
 */
#include "controller.h"

#include "inventory/snapshot.h"

#include "tau/error.h"

#include <stdlib.h>
#include <string.h>

static cJSON *labels_of(const tau_node_facts *n)
{
	cJSON *labels = cJSON_CreateObject();

	for (size_t i = 0; labels != NULL && i < n->n_labels; i++)
		if (cJSON_AddStringToObject(labels, n->label_keys[i], n->label_values[i]) == NULL) {
			cJSON_Delete(labels);
			return NULL;
		}
	return labels;
}

int tau_budget_inventory_from_snapshot(tau_budget_inventory *out, const tau_pool_snapshot *snap)
{
	tau_budget_inventory inv = {0};
	int rc;

	if (out == NULL || snap == NULL)
		return tau_error_set(TAU_EINVAL, "budget inventory: missing snapshot");
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
	inv.store = cJSON_CreateArray();
	inv.nodes = calloc(snap->n_nodes + 1, sizeof(*inv.nodes));
	if (inv.store == NULL || inv.nodes == NULL)
		goto oom;
	for (size_t i = 0; i < snap->n_nodes; i++) {
		cJSON *entry = cJSON_CreateObject(), *labels, *name;

		if (entry == NULL)
			goto oom;
		cJSON_AddItemToArray(inv.store, entry);
		name = cJSON_AddStringToObject(entry, "name", snap->nodes[i].name);
		labels = labels_of(&snap->nodes[i]);
		if (name == NULL || labels == NULL) {
			cJSON_Delete(labels);
			goto oom;
		}
		cJSON_AddItemToObject(entry, "labels", labels);
		inv.nodes[i].name = name->valuestring;
		inv.nodes[i].labels = labels;
		inv.n_nodes++;
	}
	*out = inv;
	return 0;
oom:
	rc = tau_error_set(TAU_ENOMEM, "budget inventory: out of memory");
fail:
	tau_budget_inventory_clear(&inv);
	return rc;
}
