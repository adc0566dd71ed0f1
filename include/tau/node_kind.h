/*
 * tau/node_kind.h - what kind of node a Kubernetes Node is: an AKS agent-pool
 * VM, an AKS Flex node, or anything else (a virtual node, another cloud).
 *
 * The node agent reports the kind of its own node (docs/agent-inventory-json.md)
 * and `tau storage check` applies the Flex rule to every eligible node; both
 * decide with these rules, read from the same labels and spec.providerID.
 */
#ifndef TAU_NODE_KIND_H
#define TAU_NODE_KIND_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/** The labels the kind is read from. */
#define TAU_NODE_LABEL_NODEPOOL_TYPE "kubernetes.azure.com/nodepool-type"
#define TAU_NODE_LABEL_MANAGED       "kubernetes.azure.com/managed"
#define TAU_NODE_LABEL_AGENTPOOL     "kubernetes.azure.com/agentpool"
#define TAU_NODE_LABEL_VIRTUAL_TYPE  "type"

/** What kind of node this is. */
typedef enum tau_node_kind {
	TAU_NODE_KIND_UNKNOWN = 0, /**< no readable Node (JSON null) */
	TAU_NODE_KIND_AGENT_POOL,  /**< an AKS agent-pool VM ("AgentPool") */
	TAU_NODE_KIND_FLEX,        /**< an AKS Flex node ("Flex") */
	TAU_NODE_KIND_OTHER        /**< anything else, e.g. a virtual node ("Other") */
} tau_node_kind;

/** Signals used to classify a node; any may be NULL (absent). */
typedef struct tau_node_kind_signals {
	const char *nodepool_type; /**< label kubernetes.azure.com/nodepool-type */
	const char *managed;       /**< label kubernetes.azure.com/managed */
	const char *agentpool;     /**< label kubernetes.azure.com/agentpool */
	const char *virtual_type;  /**< label type (virtual-kubelet on ACI virtual nodes) */
	const char *provider_id;   /**< spec.providerID */
} tau_node_kind_signals;

/**
 * Classify a node:
 *  - Flex when nodepool-type is "FlexNodes"; or when managed is "false", the
 *    node is not a virtual node (type != "virtual-kubelet") and providerID is
 *    not an Azure compute ID;
 *  - AgentPool when not Flex, managed is not "false", not a virtual node, and
 *    it has an agentpool label or an Azure compute providerID;
 *  - Other otherwise (also for NULL).  Never returns TAU_NODE_KIND_UNKNOWN.
 */
tau_node_kind tau_node_kind_classify(const tau_node_kind_signals *signals);

/**
 * Classify a Node object (as the API returns it) from its string labels and
 * spec.providerID.  TAU_NODE_KIND_UNKNOWN when node is not a JSON object.
 */
tau_node_kind tau_node_kind_of(const cJSON *node);

/**
 * True when provider_id names an Azure compute resource
 * ("azure:///subscriptions/<s>/resourceGroups/<g>/providers/Microsoft.Compute/..."),
 * matched case-insensitively like Azure resource IDs.
 */
bool tau_node_provider_id_is_azure_compute(const char *provider_id);

/** "AgentPool", "Flex", "Other"; NULL for UNKNOWN. */
const char *tau_node_kind_name(tau_node_kind kind);

#endif /* TAU_NODE_KIND_H */
