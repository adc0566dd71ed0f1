/*
 * nodeconditions.h - the Node conditions tau-node-agent publishes (--node-conditions).
 *
 * node-problem-detector style: what only the node knows becomes conditions on its own Node
 * object (TauGPUHealthy from NVML, TauNetworkReady from the InfiniBand/RoCE ports), so the
 * cluster's own remediation (cordon, drain, taint) can act on them and the capacity pool
 * follows the Node.  The budget itself never reads node truth.
 *
 * Pure: the conditions are computed from an inventory and the Node's current
 * status.conditions (level-triggered: the same inputs give the same conditions, and
 * lastTransitionTime moves only when a status does); the agent's loop decides when to patch.
 */
#ifndef TAU_AGENT_NODECONDITIONS_H
#define TAU_AGENT_NODECONDITIONS_H

#include "inventory.h"

#include <stdbool.h>

#include <cjson/cJSON.h>

/** Condition types this agent owns on its Node. */
#define TAU_AGENT_COND_GPU_HEALTHY   "TauGPUHealthy"
#define TAU_AGENT_COND_NETWORK_READY "TauNetworkReady"

/** Longest condition message written (bytes, NUL included); longer lists end in "...". */
#define TAU_AGENT_COND_MESSAGE_MAX 1024

/**
 * The conditions the agent owns, as v1.NodeCondition objects (type, status, reason, message,
 * lastHeartbeatTime, lastTransitionTime), in a fixed order:
 *
 *   TauGPUHealthy    True GPUsHealthy: every GPU NVML sees is healthy; False GPUUnhealthy
 *                    (which GPUs and why), False NoGPUs (NVML answered, no GPU); Unknown
 *                    NVMLUnavailable (not loaded, disabled or hung: the probe's note).
 *   TauNetworkReady  True RDMAPortsActive: every port ACTIVE; False RDMAPortDown (which
 *                    ports, their state); Unknown NoRDMAPorts, Unknown RDMAPortsUnreadable.
 *
 * @param current  the Node's status.conditions (lent; NULL: none): a condition whose status
 *                 is unchanged keeps its lastTransitionTime
 * @param now      RFC 3339 time (tau_rfc3339, tau/clock.h) for new transitions and the heartbeat
 * @param out      receives a new array (cJSON_Delete); untouched on failure
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_node_conditions_build(cJSON **out, const tau_agent_inventory *inv,
                                    const cJSON *current, const char *now);

/**
 * Whether `current` (a Node's status.conditions, NULL: none) already says what `desired`
 * says: every desired type present with the same status, reason and message.  Times are
 * ignored, so an unchanged node is never patched again.
 */
bool tau_agent_node_conditions_published(const cJSON *desired, const cJSON *current);

/**
 * The strategic merge patch for nodes/<name>/status that sets `desired`:
 * {"status":{"conditions":[...]}}.  Conditions merge by type, so other writers' conditions
 * (kubelet's Ready, node-problem-detector's) are left alone.
 * @param out  receives a new string (free); untouched on failure
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_node_conditions_patch(char **out, const cJSON *desired);

#endif /* TAU_AGENT_NODECONDITIONS_H */
