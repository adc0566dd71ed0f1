/*
 * workspace.h - `tau workspace list|status NAME|check NAME` and
 * `tau storage check`: entry points and the pure printers they use, so the
 * output formats are unit-tested from canned JSON.
 */
#ifndef TAU_CLI_WORKSPACE_H
#define TAU_CLI_WORKSPACE_H

#include "aggregator.h"
#include "cli.h"

#include <stdbool.h>
#include <stdint.h>
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

/** The live CSI check's verdicts ("probe" of a node in a checked doc). */
#define TAU_CLI_PROBE_READY     "ready"
#define TAU_CLI_PROBE_NOT_READY "notReady"
#define TAU_CLI_PROBE_UNKNOWN   "unknown"

/**
 * Count the nodes of doc's "nodes" whose "probe" is notReady and unknown into doc's
 * "probeFailed" and "probeUnknown" (replacing them).  @return the notReady count.
 */
int tau_cli_csi_probe_count(cJSON *doc);

/**
 * Print what the live check found: "not checked" with the reason when doc's "liveProbe" says
 * so; each node not answering Probe (its probeDetail); the nodes whose probe is unknown.
 */
void tau_cli_csi_print_probe(FILE *out, const cJSON *doc);

/**
 * The live side of a CSI check (`tau storage check --aggregator ADDR`): for each node of doc's
 * "nodes" registered in CSINode, ask the aggregator for it (GetNode) and set its "probe" and
 * "probeDetail" (tau_cli_csi_probe_verdict); doc's "liveProbe" says {"checked", "aggregator",
 * "reason"}.  Without an aggregator named (tau_cli_aggregator_addr of `a`, which may be NULL:
 * env TAU_AGGREGATOR only) nothing is asked and
 * liveProbe says why; an aggregator that cannot answer makes every probe unknown, with its
 * error.  @return 0, or -TAU_EINVAL for bad channel options (a usage error; said on stderr).
 */
int tau_cli_csi_live_probe(cJSON *doc, const char *driver, const tau_cli_aggregator_opts *a,
                           const tau_cli_globals *g);

/** Add "eligible", "missing", "unsupported", the probe counts and "ok" to a checked doc (ok
 * also needs no node not answering Probe); @return ok. */
bool tau_cli_csi_finish(cJSON *doc);

/** Print a finished doc: NODE REGISTERED KIND MANAGED-BY, the verdict, each problem;
 * `none` is the line printed when no node is eligible. */
void tau_cli_csi_print(FILE *out, const cJSON *doc, const char *none);

/* ------------------------------------------------------------------------------------------ */
/* tau workspace create|delete (cli/wscreate.c, cli/wsdelete.c)                                */

/** The annotation that marks a TauWorkspace written by `tau workspace create`. */
#define TAU_CLI_CREATED_BY     "tau.azure.com/created-by"
#define TAU_CLI_CREATED_BY_TAU "tau"

/** The flags of `tau workspace create`; NULL / false = not given (the defaults apply). */
typedef struct tau_cli_ws_spec {
	const char *name;
	const char *system_namespace; /**< required: where the TauWorkspace lives */
	const char *namespace;        /**< default: name */
	const char *team;
	const char *authorization;      /**< default workspace-rbac */
	const char *principal_provider; /**< default entra (workspace-rbac only) */
	const char *principal;
	const char *subject_kind; /**< default Group (workspace-rbac only) */
	const char *subject;
	const char *queue;
	const char *wi_service_account;
	const char *client_id;
	bool create_namespace;
	bool adopt;
} tau_cli_ws_spec;

/**
 * The TauWorkspace `create` writes, with the reference's defaults and the created-by
 * annotation, or NULL with `err` saying what the CRD or the controller would refuse (the
 * name, the namespaces, the enums, workspace-rbac needing a principal and a subject,
 * cluster-wide refusing them, lengths and patterns, the workload identity pair).  Pure.
 */
cJSON *tau_cli_ws_build(const tau_cli_ws_spec *s, char *err, size_t cap);

/** True when `ws` carries TAU_CLI_CREATED_BY = TAU_CLI_CREATED_BY_TAU. */
bool tau_cli_ws_created_by_tau(const cJSON *ws);

/** The first condition that keeps `ws` from Ready (DriftDetected True, any other not True). */
const cJSON *tau_cli_ws_first_failing(const cJSON *ws);

/** --wait's verdict on one read: 1 Ready for its generation, -1 Degraded for its generation or
 * being deleted, 0 keep waiting. */
int tau_cli_ws_wait_verdict(const cJSON *ws);

/** Follow NAME until Ready (TAU_CLI_OK) or failed / timed out (TAU_CLI_FAILED), printing the
 * phase and each condition as it changes. */
struct tau_kube_client;
int tau_cli_ws_follow(struct tau_kube_client *c, const char *sysns, const char *name,
                      int64_t timeout_ms);

/** `tau workspace create NAME ...`; argv starts at "create". */
int tau_cli_ws_create(int argc, char **argv, const tau_cli_globals *g);

/**
 * What holds a deleted workspace's drain in namespace `ns`: an array of descriptions ("Job
 * NS/NAME (unfinished)", ...) of the sources among `lists` (each kind's List, NULL when the
 * API is absent; indexed by tau_drain_kind) that route through `queues` and have not
 * finished, plus "<Kinds> in NS cannot be listed: ..." for each kind with an error (which
 * the controller also waits on).  Pure; NULL when out of memory.
 */
cJSON *tau_cli_ws_drain_holders(const char *ns, const char *const *queues, size_t n_queues,
                                const cJSON *const lists[], const char *const errors[]);

/** `tau workspace delete NAME [--wait]`; argv starts at "delete". */
int tau_cli_ws_delete(int argc, char **argv, const tau_cli_globals *g);

/** One aligned table: rows of n_cols strings (NULL prints "<none>"); row 0 is the header. */
void tau_cli_print_table(FILE *out, const char *const *cells, size_t n_rows, size_t n_cols);

#endif /* TAU_CLI_WORKSPACE_H */
