/*
 * snapshot.c - deep copies of the pool for readers outside the state lock.
 *
 * The one idea: a reader never holds a pointer into the live store.  The
 * copy is made once, under the lock, and everything in it is owned by the
 * snapshot, so the budget controller can take its time over it while
 * reports and Node events keep changing the live pool.
 */
#include "snapshot.h"

#include "tau/error.h"

#include <stdlib.h>
#include <string.h>

void tau_pool_snapshot_free(tau_pool_snapshot *snap)
{
	if (snap == NULL)
		return;
	free(snap->invalid_reason);
	for (size_t i = 0; i < snap->n_flavors; i++) {
		tau_pool_snapshot_flavor *f = &snap->flavors[i];

		for (size_t r = 0; r < f->n_resources; r++)
			free(f->resources[r].name);
		free(f->resources);
		free(f->name);
	}
	free(snap->flavors);
	for (size_t i = 0; i < snap->n_nodes; i++)
		tau_node_facts_clear(&snap->nodes[i]);
	free(snap->nodes);
	free(snap);
}

static int copy_flavors(tau_pool_snapshot *snap, const tau_pool *pool)
{
	size_t n = tau_pool_flavor_count(pool);

	if (n == 0)
		return 0;
	snap->flavors = calloc(n, sizeof(*snap->flavors));
	if (snap->flavors == NULL)
		return -TAU_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const tau_pool_flavor *src = tau_pool_flavor_at(pool, i);
		tau_pool_snapshot_flavor *dst = &snap->flavors[i];

		snap->n_flavors = i + 1;
		dst->name = strdup(src->name);
		dst->nodes = src->nodes;
		if (dst->name == NULL)
			return -TAU_ENOMEM;
		if (src->n_resources == 0)
			continue;
		dst->resources = calloc(src->n_resources, sizeof(*dst->resources));
		if (dst->resources == NULL)
			return -TAU_ENOMEM;
		for (size_t r = 0; r < src->n_resources; r++) {
			dst->n_resources = r + 1;
			dst->resources[r].value = src->resources[r].total;
			dst->resources[r].name = strdup(src->resources[r].name);
			if (dst->resources[r].name == NULL)
				return -TAU_ENOMEM;
		}
	}
	return 0;
}

static int copy_nodes(tau_pool_snapshot *snap, const tau_nodestore *store)
{
	size_t counted = 0, n = tau_nodestore_count(store);

	for (size_t i = 0; i < snap->n_flavors; i++)
		counted += snap->flavors[i].nodes;
	if (counted == 0)
		return 0;
	snap->nodes = calloc(counted, sizeof(*snap->nodes));
	if (snap->nodes == NULL)
		return -TAU_ENOMEM;
	for (size_t i = 0; i < n && snap->n_nodes < counted; i++) {
		tau_node_status st;

		if (tau_nodestore_at(store, i, &st) < 0 || st.source == TAU_NODE_SOURCE_NONE ||
		    st.facts == NULL || !st.counted)
			continue;
		if (tau_node_facts_copy(&snap->nodes[snap->n_nodes], st.facts) < 0)
			return -TAU_ENOMEM;
		snap->n_nodes++;
	}
	return 0;
}

int tau_pool_snapshot_build(tau_pool_snapshot **out, const tau_nodestore *store)
{
	const tau_pool *pool = tau_nodestore_pool(store);
	const char *why = tau_pool_invalid_reason(pool);
	tau_pool_snapshot *snap = calloc(1, sizeof(*snap));

	if (snap == NULL)
		goto oom;
	snap->established = tau_nodestore_established(store);
	snap->valid = why == NULL;
	snap->generation = tau_pool_generation(pool);
	snap->missing_nodes = tau_nodestore_missing(store, NULL, 0);
	if ((why != NULL && (snap->invalid_reason = strdup(why)) == NULL) ||
	    copy_flavors(snap, pool) < 0 || copy_nodes(snap, store) < 0)
		goto oom;
	*out = snap;
	return 0;
oom:
	tau_pool_snapshot_free(snap);
	return tau_error_set(TAU_ENOMEM, "out of memory taking a pool snapshot");
}
