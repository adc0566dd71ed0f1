/*
 * kubewatch.h - the aggregator's view of the Kubernetes API: a Node informer
 * and a TauCluster (`cluster`, tau.azure.com/v1alpha1) informer on one
 * shared kube loop thread, feeding the aggregator state.
 */
#ifndef TAU_AGGREGATOR_KUBEWATCH_H
#define TAU_AGGREGATOR_KUBEWATCH_H

#include "service.h"

#include "tau/kube.h"

typedef struct tau_inventory_kube tau_inventory_kube;

/** The TauCluster kind. */
extern const tau_kube_resource tau_inventory_res_clusters;

/**
 * Start watching Nodes, the TauCluster and the DRA objects (drawatch.h; Kueue's ConfigMap
 * in `kueue_namespace`, NULL: kueue-system) for `agg` with `client` (all borrowed; they must
 * outlive the watcher).  @return 0, -TAU_ENOMEM, -TAU_EIO.
 */
int tau_inventory_kube_start(tau_inventory_kube **out, tau_kube_client *client, tau_inventory *agg,
                             const char *kueue_namespace);

/** Stop the loop thread and free; NULL is a no-op. */
void tau_inventory_kube_stop(tau_inventory_kube *k);

#endif /* TAU_AGGREGATOR_KUBEWATCH_H */
