/*
 * drawatch.h - the aggregator's reading of Dynamic Resource Allocation objects: DeviceClass
 * and ResourceSlice informers (resource.k8s.io/v1) and one on the ConfigMap holding Kueue's
 * manager Configuration, on a kube loop, handed to a sink (the DRA pool) as they change.
 */
#ifndef TAU_AGGREGATOR_DRAWATCH_H
#define TAU_AGGREGATOR_DRAWATCH_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/kueueconfig.h"

/** The kinds (cluster-scoped). */
extern const tau_kube_resource tau_inventory_res_deviceclasses;
extern const tau_kube_resource tau_inventory_res_resourceslices;

/** Where the Kueue manager reads its Configuration (Kueue's release manifests). */
#define TAU_INVENTORY_KUEUE_CONFIG_NAMESPACE "kueue-system"
#define TAU_INVENTORY_KUEUE_CONFIG_NAME      "kueue-manager-config"
#define TAU_INVENTORY_KUEUE_CONFIG_KEY       "controller_manager_config.yaml"

/** Which DRA object the sink is handed. */
typedef enum tau_inventory_dra_kind {
	TAU_INVENTORY_DRA_SLICE,
	TAU_INVENTORY_DRA_CLASS
} tau_inventory_dra_kind;

/**
 * Where the watch hands what it reads.  Every callback runs on the kube loop thread; objects
 * and configurations are lent for the call.  Any callback may be NULL.
 */
typedef struct tau_inventory_dra_sink {
	void *arg;
	/**
	 * A ResourceSlice or DeviceClass (`kind`) appeared or changed, or (`deleted`) went away;
	 * pruned: no managedFields or annotations.
	 */
	void (*object)(void *arg, tau_inventory_dra_kind kind, const cJSON *obj, bool deleted);
	/**
	 * Kueue's Configuration as it now stands: `cfg` set when it was read; `cfg` NULL and
	 * `error` NULL when there is no such ConfigMap or key (Kueue runs on its defaults: no
	 * mappings); `cfg` NULL and `error` set when it cannot be read (the DRA pool must fail
	 * closed on mappings it cannot know).  Called after every change of the ConfigMap and
	 * once when its first list completes.
	 */
	void (*kueue_config)(void *arg, const tau_kueue_config *cfg, const char *error);
} tau_inventory_dra_sink;

/** Where Kueue's ConfigMap is; zeroed fields take the TAU_INVENTORY_KUEUE_CONFIG_* defaults. */
typedef struct tau_inventory_dra_watch_options {
	const char *kueue_namespace;
	const char *kueue_configmap;
} tau_inventory_dra_watch_options;

typedef struct tau_inventory_dra_watch tau_inventory_dra_watch;

/**
 * Make the three informers on `loop` (borrowed; started by the caller) feeding `sink`
 * (copied).  They do nothing until tau_inventory_dra_watch_start.  A cluster that does not serve
 * resource.k8s.io/v1 (before Kubernetes 1.34) has no DRA objects: its 404 counts as an empty
 * list, retried on the backoff schedule (tau_kube_informer_options.not_served_is_empty).
 * @return 0, -TAU_ENOMEM, -TAU_EINVAL.
 */
int tau_inventory_dra_watch_new(tau_inventory_dra_watch **out, tau_kube_loop *loop,
                                const tau_inventory_dra_watch_options *opts,
                                const tau_inventory_dra_sink *sink);

/** Begin listing and watching.  Thread-safe. */
void tau_inventory_dra_watch_start(tau_inventory_dra_watch *w);

/** True once all three lists have completed once (safe from any thread). */
bool tau_inventory_dra_watch_synced(tau_inventory_dra_watch *w);

/** Free the informers; call with the loop not running.  NULL is a no-op. */
void tau_inventory_dra_watch_free(tau_inventory_dra_watch *w);

#endif /* TAU_AGGREGATOR_DRAWATCH_H */
