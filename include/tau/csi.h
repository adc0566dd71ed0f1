/*
 * tau/csi.h - who deployed the CSI drivers on a node: the AKS-managed
 * add-on, or the cluster's own deployment (Helm, kubectl manifests), read
 * from the labels and arguments of the node pods that serve each driver.
 *
 * The node agent reports it for its own node (docs/agent-inventory-json.md)
 * and `tau storage check` applies the Flex rule with it; both decide with
 * these rules.
 */
#ifndef TAU_CSI_H
#define TAU_CSI_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Caps on what a pod list can make us look at or hold. */
#define TAU_CSI_MAX_DRIVERS        64   /**< drivers kept; more are dropped with a problem */
#define TAU_CSI_MAX_PODS           2048 /**< pods looked at */
#define TAU_CSI_MAX_POD_CONTAINERS 64   /**< containers looked at per pod */
#define TAU_CSI_MAX_CONTAINER_ARGS 256  /**< arguments looked at per command or args list */
#define TAU_CSI_MAX_NAME           1024 /**< longest driver name or argument read (bytes) */

/** Who deployed a CSI driver's node pod. */
typedef enum tau_csi_managed_by {
	TAU_CSI_MANAGED_UNKNOWN = 0, /**< no node pod found, or no telling sign ("Unknown") */
	TAU_CSI_MANAGED_AKS_ADDON,   /**< the AKS-managed add-on ("AKSAddon") */
	TAU_CSI_MANAGED_DEPLOYMENT   /**< self-deployed: Helm, kubectl manifests ("Deployment") */
} tau_csi_managed_by;

/** "AKSAddon", "Deployment", "Unknown". */
const char *tau_csi_managed_by_name(tau_csi_managed_by managed_by);

/** One driver a node pod serves, and who deployed it. */
typedef struct tau_csi_origin {
	char *name; /**< owned */
	tau_csi_managed_by managed_by;
} tau_csi_origin;

/** Is this driver already known to the caller (e.g. registered in CSINode)? */
typedef bool (*tau_csi_known_fn)(void *ctx, const char *driver);

/** Take one problem text; return 0, or <0 (e.g. -TAU_ENOMEM) to stop with that code. */
typedef int (*tau_csi_problem_fn)(void *ctx, const char *text);

/**
 * Decide who deployed each CSI driver served on node `node_name`, from the
 * pods there (a PodList object with "items", or a bare array of pods; pods of
 * other nodes, with a problem, unscheduled pods, and Succeeded or Failed pods
 * are skipped).  A pod serves a driver when:
 *  - a container passes --kubelet-registration-path=.../plugins/<dir>/...
 *    ($(VAR) expanded from the container env) and <dir> is known (`known`, or
 *    served by an earlier pod) or has the domain-name form CSI requires
 *    ("csi-nfsplugin" is not);
 *  - a DaemonSet pod passes --drivername or --driver-name=<driver>;
 *  - a DaemonSet pod is labelled app=csi-azuredisk-node, csi-azurefile-node
 *    or csi-blob-node (disk, file, blob.csi.azure.com).
 * The pod is AKSAddon when it carries kubernetes.azure.com/managedby=aks,
 * addonmanager.kubernetes.io/mode, kubernetes.io/cluster-service=true or
 * app.kubernetes.io/managed-by=aks, or an arg --user-agent-suffix=AKS;
 * Deployment when it carries another app.kubernetes.io/managed-by or
 * helm.sh/chart, or --user-agent-suffix=OSS-*; otherwise Unknown.  A pod with
 * both marks, and pods that disagree about a driver, leave it Unknown with a
 * problem.
 *
 * @param out, n_out  receive the served drivers in the order first seen (free
 *                    with tau_csi_origins_free); NULL and 0 when none
 * @param node_name   the node (NULL: every scheduled pod counts)
 * @param known       may be NULL; @param problem may be NULL (problems dropped)
 * @return 0; -TAU_EINVAL when pod_list is neither a list object nor an array
 *         (no problem is reported for it); -TAU_ENOMEM; or what `problem` returned.
 */
int tau_csi_origins_from_pods(tau_csi_origin **out, size_t *n_out, const cJSON *pod_list,
                              const char *node_name, tau_csi_known_fn known, void *known_ctx,
                              tau_csi_problem_fn problem, void *problem_ctx);

/** Lends the entry for a driver, or NULL. */
const tau_csi_origin *tau_csi_origins_find(const tau_csi_origin *origins, size_t n,
                                           const char *name);

/** Free what tau_csi_origins_from_pods returned.  NULL is a no-op. */
void tau_csi_origins_free(tau_csi_origin *origins, size_t n);

#endif /* TAU_CSI_H */
