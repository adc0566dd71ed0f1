/*
 * workspace.h - `tau workspace list|status NAME|check NAME` and
 * `tau storage check`: entry points and the pure printers they use, so the
 * output formats are unit-tested from canned JSON.
 */
#ifndef TAU_CLI_WORKSPACE_H
#define TAU_CLI_WORKSPACE_H

#include "cli.h"

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* tau_cli_workspace and tau_cli_storage, the entry points, are declared in cli.h. */

/**
 * Print a TauWorkspaceList (`items`) as NAME PHASE NAMESPACE QUEUE columns
 * (kubectl alignment, "<none>" for unset) or as {"items":[...]}.
 * @return 0, or -TAU_EINVAL when `list` has no items array.
 */
int tau_cli_ws_print_list(FILE *out, const cJSON *list, tau_cli_format fmt);

/** Print one TauWorkspace: the workspace block and a conditions table, or JSON. */
int tau_cli_ws_print_status(FILE *out, const cJSON *ws, tau_cli_format fmt);

/**
 * The check verdict: true when status.phase is Ready and
 * status.observedGeneration equals metadata.generation.
 */
bool tau_cli_ws_ready(const cJSON *ws);

/**
 * The Flex rule of the reference: TauGrid does not support relying on the AKS-managed CSI
 * addons on Flex or other externally registered nodes, i.e. on any node that is not an AKS
 * agent-pool node.  `node_kind` and `managed_by` are the agent's names ("AgentPool", "Flex",
 * "Other", NULL when unknown; "AKSAddon", "Deployment", "Unknown").
 * @return true when `node` relies on the addon for `driver` where it is not supported; `msg`
 *         then names the node and says that a deployment-managed driver is required there.
 */
bool tau_cli_csi_addon_unsupported(char *msg, size_t cap, const char *node, const char *node_kind,
                                   const char *managed_by, const char *driver);

/**
 * The Kubernetes side of a CSI check (`tau storage check`, `tau workspace check --data-pvc`
 * without --aggregator).  For each eligible node among `items` (Node objects: Ready,
 * schedulable, not deleting; a name already in doc's "nodes" is skipped) it reads the CSINode
 * and, on a node that is not an AKS agent-pool node, the pods there, and appends {"name",
 * "registered", "nodeKind", "managedBy", "supported"} to doc's "nodes" and any Flex-rule
 * message to doc's "problems" (both made when absent).  `cmd` prefixes errors on stderr.
 * @return 0, or <0 when a node's pods cannot be listed (fail closed) or out of memory.
 */
struct tau_kube_client;
int tau_cli_csi_check_nodes(cJSON *doc, struct tau_kube_client *client, const cJSON *items,
                            const char *driver, const char *cmd);

/** Add "eligible", "missing", "unsupported" and "ok" to a checked doc; @return ok. */
bool tau_cli_csi_finish(cJSON *doc);

/** Print a finished doc: NODE REGISTERED KIND MANAGED-BY, the verdict, each problem;
 * `none` is the line printed when no node is eligible. */
void tau_cli_csi_print(FILE *out, const cJSON *doc, const char *none);

/** One aligned table: rows of n_cols strings (NULL prints "<none>"); row 0 is the header. */
void tau_cli_print_table(FILE *out, const char *const *cells, size_t n_rows, size_t n_cols);

#endif /* TAU_CLI_WORKSPACE_H */
