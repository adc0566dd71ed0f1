/*
 * kubewatch.c - Node and TauCluster informers feeding the aggregator state.
 *
 * Handlers run on the kube loop thread and only translate events: a Node
 * becomes tau_node_facts inside tau_inventory_node_upsert, the TauCluster becomes
 * a node selector.  The Node informer's cache holds pruned objects only
 * (tau_node_facts_prune as its transform), so whole Nodes are never kept.  Whether
 * the Node and TauCluster lists have been applied is asked by the state's own periodic tick
 * (tau_inventory_set_sync_probe), so no extra timer thread is needed here.  The DRA watch
 * (drawatch.h: DeviceClasses, ResourceSlices, Kueue's ConfigMap) runs on the same loop and
 * hands its objects to the state's DRA store.
 */
#include "kubewatch.h"

#include "drawatch.h"

#include "tau/error.h"
#include "tau/kube_informer.h"
#include "tau/log.h"
#include "tau/nodefacts.h"

#include <stdlib.h>

const tau_kube_resource tau_inventory_res_clusters = {
        .group = "tau.azure.com", .version = "v1alpha1", .plural = "clusters", .namespaced = false};

/* What an informer's events are applied as: the Nodes or the TauCluster. */
typedef struct feed {
	struct tau_inventory_kube *k;
	void (*apply)(tau_inventory *agg, const cJSON *obj, bool deleted);
} feed;

struct tau_inventory_kube {
	tau_inventory *agg;
	feed nodes_feed, clusters_feed; /* the informers' handler arguments */
	tau_kube_loop *loop;
	tau_kube_informer *nodes;
	tau_kube_informer *clusters;
	tau_inventory_dra_watch *dra;
	bool running;
};

static void apply_node(tau_inventory *agg, const cJSON *obj, bool deleted)
{
	if (deleted)
		tau_inventory_node_delete(agg, obj);
	else
		tau_inventory_node_upsert(agg, obj);
}

/* The TauCluster deleted: no selector. */
static void apply_cluster(tau_inventory *agg, const cJSON *obj, bool deleted)
{
	tau_inventory_cluster(agg, deleted ? NULL : obj);
}

static void on_add(void *arg, const cJSON *obj)
{
	const feed *f = arg;

	f->apply(f->k->agg, obj, false);
}

static void on_update(void *arg, const cJSON *old_obj, const cJSON *new_obj)
{
	(void)old_obj;
	on_add(arg, new_obj);
}

static void on_delete(void *arg, const cJSON *obj)
{
	const feed *f = arg;

	f->apply(f->k->agg, obj, true);
}

static void dra_object(void *arg, tau_inventory_dra_kind kind, const cJSON *obj, bool deleted)
{
	tau_inventory_dra_object(((tau_inventory_kube *)arg)->agg, kind, obj, deleted);
}

static void kueue_config(void *arg, const tau_kueue_config *cfg, const char *error)
{
	tau_inventory_dra_kueue(((tau_inventory_kube *)arg)->agg, cfg, error);
}

/* The informer caches what this leaves: a few hundred bytes per Node, not kilobytes. */
static void prune_node(void *arg, cJSON *obj)
{
	(void)arg;
	tau_node_facts_prune(obj);
}

/*
 * The pool depends on both lists: every Node, and the TauCluster whose
 * selector filters them.  Counting before the TauCluster is known would
 * count every node for a moment, so the gate waits for both; and for the
 * DRA lists, else a DRA-only node would count 0 GPUs before they arrive.  A
 * list refused (403: RBAC missing) never syncs: the pool stays not
 * established rather than counting an empty kind.
 */
static bool inputs_synced(void *ud)
{
	tau_inventory_kube *k = ud;

	return tau_kube_informer_has_synced(k->nodes) &&
	       tau_kube_informer_has_synced(k->clusters) && tau_inventory_dra_watch_synced(k->dra);
}

int tau_inventory_kube_start(tau_inventory_kube **out, tau_kube_client *client, tau_inventory *agg,
                             const char *kueue_namespace)
{
	tau_inventory_kube *k = calloc(1, sizeof(*k));
	tau_kube_handlers nh = {.on_add = on_add, .on_update = on_update, .on_delete = on_delete};
	tau_kube_handlers ch = nh;
	tau_kube_informer_options nopts = {.transform = prune_node};
	tau_kube_informer_options copts = {.field_selector = "metadata.name=cluster"};
	tau_inventory_dra_watch_options dopts = {.kueue_namespace = kueue_namespace};
	tau_inventory_dra_sink sink = {.object = dra_object, .kueue_config = kueue_config};
	int rc;

	if (k == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	k->agg = agg;
	k->nodes_feed = (feed){k, apply_node};
	k->clusters_feed = (feed){k, apply_cluster};
	nh.arg = &k->nodes_feed;
	ch.arg = &k->clusters_feed;
	sink.arg = k;
	if ((rc = tau_kube_loop_new(&k->loop, client)) < 0 ||
	    (rc = tau_kube_informer_new(&k->nodes, k->loop, &tau_kube_res_nodes, &nopts, &nh)) <
	            0 ||
	    (rc = tau_kube_informer_new(&k->clusters, k->loop, &tau_inventory_res_clusters, &copts,
	                                &ch)) < 0 ||
	    (rc = tau_inventory_dra_watch_new(&k->dra, k->loop, &dopts, &sink)) < 0)
		goto fail;
	tau_inventory_set_sync_probe(agg, inputs_synced, k);
	tau_kube_informer_start(k->nodes);
	tau_kube_informer_start(k->clusters);
	tau_inventory_dra_watch_start(k->dra);
	if ((rc = tau_kube_loop_start_thread(k->loop)) < 0)
		goto fail;
	k->running = true;
	*out = k;
	return 0;
fail:
	tau_inventory_set_sync_probe(agg, NULL, NULL);
	tau_inventory_dra_watch_free(k->dra);
	tau_kube_loop_free_all(k->loop);
	free(k);
	return rc;
}

void tau_inventory_kube_stop(tau_inventory_kube *k)
{
	if (k == NULL)
		return;
	tau_inventory_set_sync_probe(k->agg, NULL, NULL);
	if (k->running)
		tau_kube_loop_join(k->loop);
	tau_inventory_dra_watch_free(k->dra);
	tau_kube_loop_free_all(k->loop);
	free(k);
}
