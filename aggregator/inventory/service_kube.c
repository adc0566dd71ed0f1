/*
 * service_kube.c - what the kube side tells the state: Node and TauCluster events, the DRA
 * objects the DRA watch hands over (the DRA sink), the sync probe, the workspace controller
 * and leadership.  Each takes the state mutex only to update the store and mark the pool
 * dirty; logs are written after it is let go.
 */
#include "service_internal.h"

#include "drastore.h"
#include "nodestore.h"

#include "tau/error.h"
#include "tau/log.h"
#include "tau/names.h"
#include "tau/nodefacts.h"
#include "tau/selector.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>

/* ---- kube side ---- */

void tau_inventory_node_upsert(tau_inventory *a, const cJSON *node)
{
	tau_node_facts facts = {0};
	char mismatch[TAU_NODE_MISMATCH_MAX];
	int rc = tau_node_facts_from_json(&facts, node);

	if (rc < 0) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(node, "metadata"), "name");
		char reason[TAU_ERROR_MSG_MAX];

		snprintf(reason, sizeof(reason), "%s", tau_error_last()->msg);
		tau_log_warn("node does not count: its Node object is unreadable", "node",
		             cJSON_IsString(name) ? name->valuestring : "?", "reason", reason,
		             NULL);
		/* Fail closed: whatever it counted with before no longer holds. */
		if (cJSON_IsString(name) &&
		    tau_names_check_dns1123_subdomain(name->valuestring) == 0) {
			pthread_mutex_lock(&a->mu);
			(void)tau_nodestore_api_unreadable(a->store, name->valuestring, reason);
			tau_inventory_mark_dirty_locked(a);
			pthread_mutex_unlock(&a->mu);
		}
		return;
	}
	pthread_mutex_lock(&a->mu);
	rc = tau_nodestore_api_upsert(a->store, &facts);
	mismatch[0] = '\0';
	(void)tau_nodestore_take_mismatch(a->store, facts.name, mismatch, sizeof(mismatch));
	tau_inventory_mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	if (rc < 0)
		tau_log_warn("node ignored", "node", facts.name, "reason", tau_error_last()->msg,
		             NULL);
	tau_inventory_log_mismatch(facts.name, mismatch);
	tau_node_facts_clear(&facts);
}

void tau_inventory_node_delete(tau_inventory *a, const cJSON *node)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(node, "metadata"), "name");

	if (!cJSON_IsString(name))
		return;
	pthread_mutex_lock(&a->mu);
	if (tau_nodestore_api_delete(a->store, name->valuestring) == 0)
		tau_inventory_mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	tau_log_info("node deleted", "node", name->valuestring, NULL);
}

/* ---- DRA objects (drawatch.h feeds these; docs/budget.md, "How DRA devices count") ---- */

static const char *object_name(const cJSON *obj)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name");

	return cJSON_IsString(name) ? name->valuestring : NULL;
}

/*
 * Recount the nodes with the store as it now is (a->mu held); logs a failure.  `classes`: a
 * DeviceClass or Kueue's configuration changed, so subscribers (the TauCluster's
 * DRAClassesUsable) hear of it even when no count moves (a class that selects nothing yet).
 */
static void dra_recount_locked(tau_inventory *a, bool classes)
{
	if (tau_nodestore_set_dra(a->store, a->dra) < 0)
		tau_log_error("nodes not recounted with their DRA devices", "reason",
		              tau_error_last()->msg, NULL);
	if (classes)
		a->notify_pending = true;
	tau_inventory_mark_dirty_locked(a);
}

void tau_inventory_dra_object(tau_inventory *a, tau_inventory_dra_kind kind, const cJSON *obj,
                              bool deleted)
{
	const char *what = kind == TAU_INVENTORY_DRA_SLICE ? "ResourceSlice" : "DeviceClass";
	const char *name = object_name(obj);
	char reason[TAU_ERROR_MSG_MAX];
	int rc;

	if (deleted && name == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	if (kind == TAU_INVENTORY_DRA_SLICE)
		rc = deleted ? tau_dra_store_slice_delete(a->dra, name)
		             : tau_dra_store_slice_upsert(a->dra, obj);
	else
		rc = deleted ? tau_dra_store_class_delete(a->dra, name)
		             : tau_dra_store_class_upsert(a->dra, obj);
	reason[0] = '\0';
	if (rc < 0 && rc != -TAU_ENOTFOUND)
		snprintf(reason, sizeof(reason), "%s", tau_error_last()->msg);
	/* A refused object replaced the old one by nothing: the nodes follow either way. */
	dra_recount_locked(a, kind == TAU_INVENTORY_DRA_CLASS);
	pthread_mutex_unlock(&a->mu);
	if (reason[0] != '\0')
		tau_log_warn("DRA object does not count", "kind", what, "name",
		             name != NULL ? name : "?", "reason", reason, NULL);
}

void tau_inventory_dra_kueue(tau_inventory *a, const tau_kueue_config *cfg, const char *error)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_dra_store_set_mappings(a->dra, cfg != NULL ? cfg->mappings : NULL,
	                                cfg != NULL ? cfg->n_mappings : 0, error);
	dra_recount_locked(a, true);
	pthread_mutex_unlock(&a->mu);
	if (rc < 0)
		tau_log_error("Kueue deviceClassMappings not applied", "reason",
		              tau_error_last()->msg, NULL);
	else if (error != NULL)
		tau_log_warn(
		        "Kueue's configuration is unreadable: no DRA device counts until it is "
		        "fixed",
		        "reason", error, NULL);
}

void tau_inventory_set_sync_probe(tau_inventory *a, bool (*probe)(void *ud), void *ud)
{
	pthread_mutex_lock(&a->mu);
	a->sync_probe = probe;
	a->sync_probe_ud = ud;
	pthread_mutex_unlock(&a->mu);
}

void tau_inventory_nodes_synced(tau_inventory *a)
{
	pthread_mutex_lock(&a->mu);
	a->nodes_synced = true;
	tau_nodestore_api_synced(a->store);
	a->dirty = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->mu);
}

/*
 * Read the node selector of a TauCluster: 0 with *out (NULL: every node), or
 * -1 with `why` filled when it is present but unusable.
 */
static int cluster_selector(tau_selector **out, char *why, size_t cap, const cJSON *cluster)
{
	const cJSON *spec, *nodes, *sel_map;
	cJSON *ls;
	int rc;

	*out = NULL;
	if (cluster == NULL)
		return 0;
	spec = cJSON_GetObjectItemCaseSensitive(cluster, "spec");
	nodes = cJSON_GetObjectItemCaseSensitive(spec, "nodes");
	sel_map = cJSON_GetObjectItemCaseSensitive(nodes, "selector");
	if ((spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec)) ||
	    (nodes != NULL && !cJSON_IsNull(nodes) && !cJSON_IsObject(nodes))) {
		snprintf(why, cap, "spec.nodes: not an object");
		return -1;
	}
	if (sel_map == NULL || cJSON_IsNull(sel_map))
		return 0;
	if (!cJSON_IsObject(sel_map)) {
		snprintf(why, cap, "spec.nodes.selector: not a map of label keys to values");
		return -1;
	}
	ls = cJSON_CreateObject();
	if (ls == NULL || !cJSON_AddItemToObject(ls, "matchLabels", cJSON_Duplicate(sel_map, 1))) {
		cJSON_Delete(ls);
		snprintf(why, cap, "out of memory reading spec.nodes.selector");
		return -1;
	}
	rc = tau_selector_from_json(out, ls);
	cJSON_Delete(ls);
	if (rc < 0) {
		snprintf(why, cap, "spec.nodes.selector: %.400s", tau_error_last()->msg);
		return -1;
	}
	return 0;
}

void tau_inventory_cluster(tau_inventory *a, const cJSON *cluster)
{
	tau_selector *sel = NULL;
	char why[TAU_ERROR_MSG_MAX];
	bool usable = cluster_selector(&sel, why, sizeof(why), cluster) == 0;
	const char *shown = sel != NULL ? "set" : "none (every node)";
	uint64_t gen;
	bool changed;
	int rc;

	pthread_mutex_lock(&a->mu);
	gen = tau_pool_generation(tau_nodestore_pool(a->store));
	/* Fail closed: an unusable selector counts nothing, never "every node". */
	rc = usable ? tau_nodestore_set_selector(a->store, sel)
	            : tau_nodestore_set_selector_error(a->store, why);
	/* Most TauCluster events are its status (the budget's own writes): the same selector. */
	changed = rc < 0 || gen != tau_pool_generation(tau_nodestore_pool(a->store));
	if (changed)
		tau_inventory_mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	if (!changed)
		return;
	if (rc < 0)
		tau_log_error("TauCluster node selector not applied", "reason",
		              tau_error_last()->msg, NULL);
	else if (!usable)
		tau_log_warn("TauCluster node selector unusable: no node counts until it is fixed",
		             "reason", why, NULL);
	else
		tau_log_info("TauCluster node selector", "selector", shown, NULL);
}

void tau_inventory_set_workspaces(tau_inventory *a, tau_ws_controller *ctl)
{
	pthread_mutex_lock(&a->ws_mu);
	a->workspaces = ctl;
	pthread_mutex_unlock(&a->ws_mu);
}

void tau_inventory_set_leader(tau_inventory *a, bool leader)
{
	pthread_mutex_lock(&a->mu);
	a->leader = leader;
	pthread_mutex_unlock(&a->mu);
}
