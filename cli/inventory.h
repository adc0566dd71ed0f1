/*
 * inventory.h - rendering of `tau inventory` answers, apart from the I/O so
 * it can be unit tested.  Every function gives a new string (free()).
 *
 * The JSON of `pool` is a stable interface (docs/cli.md):
 *   {"established": bool, "missingNodes": [names],
 *    "flavors": [{"name": class, "nodes": count, "resources": {name: quantity}}]}
 */
#ifndef TAU_CLI_INVENTORY_H
#define TAU_CLI_INVENTORY_H

#include "aggregator.h"
#include "cli.h"

#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc.h"

#include <stdbool.h>

#include <cjson/cJSON.h>

/** QueryService method paths: QUERY "ListNodes" and so on. */
#define TAU_CLI_QUERY "/tau.inventory.v1.QueryService/"

/**
 * The pool, and beside it the free-now figures per class when `cap` is not NULL (JSON key
 * "freeNow"; the table adds a second table).  @return 0 or -TAU_ENOMEM.
 */
int tau_cli_render_pool(char **out, const Tau__Inventory__V1__Pool *pool,
                        const Tau__Inventory__V1__GetCapacityResponse *cap, tau_cli_format fmt);
/** @return 0 or -TAU_ENOMEM. */
int tau_cli_render_fit(char **out, const Tau__Inventory__V1__FitResponse *fit, tau_cli_format fmt);
/** @return 0 or -TAU_ENOMEM. */
int tau_cli_render_nodes(char **out, const Tau__Inventory__V1__ListNodesResponse *nodes,
                         tau_cli_format fmt);
int tau_cli_render_explain(char **out, const Tau__Inventory__V1__ExplainNodeResponse *ex,
                           tau_cli_format fmt);

/*
 * The CSI verdict of `tau workspace check --data-pvc PVC --aggregator ADDR` (cli/workspace.c),
 * declared here because it reads inventory answers.
 */

/**
 * Decide which CSI driver serves a PVC (`pvc`), from its bound PersistentVolume (`pv`, NULL
 * when unbound or unreadable) and its StorageClass (`sc`, NULL when unnamed or unreadable):
 * the PV's spec.csi.driver when bound, otherwise the class's provisioner unless that is an
 * in-tree "kubernetes.io/" one.
 * @return the driver name (lent from `pv` or `sc`), or NULL with *why (static text) saying
 *         why it cannot be told.
 */
const char *tau_cli_ws_csi_driver(const cJSON *pvc, const cJSON *pv, const cJSON *sc,
                                  const char **why);

/**
 * The CSI report for `driver` over the eligible (counted) nodes, one GetNode answer each
 * (a node without an inventory has not registered anything).  A node passes when its agent
 * lists the driver with in_csi_node and socket_present both true and the node does not rely
 * on the AKS-managed addon for it while not being an AKS agent-pool node (the Flex rule,
 * tau_cli_csi_addon_unsupported).  Gives a new object {"driver", "nodes": [{"name",
 * "inCSINode", "socketPresent", "nodeKind", "managedBy", "supported", and where the agent
 * lists it in CSINode "probe" and "probeDetail" (tau_cli_csi_probe_verdict)}], "problems":
 * [text], "eligible": count, "missing": count, "unsupported": count, "probeFailed": count,
 * "probeUnknown": count, "ok"} (the counts as in `tau storage check`); ok is false when a node
 * misses the driver, relies on an unsupported addon, does not answer Probe, or none is
 * eligible.  An unknown probe does not fail it but is printed (never a silent pass).
 * @return the object (cJSON_Delete), or NULL when out of memory.
 */
cJSON *tau_cli_ws_csi_report(const char *driver,
                             const Tau__Inventory__V1__GetNodeResponse *const *nodes,
                             size_t n_nodes);

/**
 * The live CSI check of `driver` on `node` from the aggregator's GetNode answer `r` (NULL: the
 * aggregator does not know the node): the agent's CSI Identity Probe (docs/agent.md).
 * @return TAU_CLI_PROBE_READY (answers Probe ready); TAU_CLI_PROBE_NOT_READY (registered in
 *         CSINode but its registration socket is missing, or Probe answered not ready or not at
 *         all); TAU_CLI_PROBE_UNKNOWN (no agent data, a stale report, the agent does not see it
 *         registered yet, or made no live check).  `detail` says which, naming node and driver.
 */
const char *tau_cli_csi_probe_verdict(char *detail, size_t cap, const char *node,
                                      const char *driver,
                                      const Tau__Inventory__V1__GetNodeResponse *r);

/** Print a report of tau_cli_ws_csi_report as NODE REGISTERED SOCKET PROBE and a verdict. */
void tau_cli_ws_print_csi(FILE *out, const cJSON *csi);

#endif /* TAU_CLI_INVENTORY_H */
