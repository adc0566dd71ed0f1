/*
 * tau/nodefacts.h - the facts about a Kubernetes Node that taugrid decides on.
 *
 * Both the node agent (about its own Node) and the aggregator (about every
 * Node, as the fallback when an agent has not reported) read the same few
 * fields of a Node object; this module is the one parser for them.
 */
#ifndef TAU_NODEFACTS_H
#define TAU_NODEFACTS_H

#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Hard bounds on what one Node may carry into taugrid. */
#define TAU_NODE_MAX_LABELS    1024
#define TAU_NODE_MAX_RESOURCES 512

/** One allocatable resource: name and exact amount. */
typedef struct tau_node_resource {
	char *name;
	tau_quantity value;
} tau_node_resource;

/** Facts of one Node; every string is owned. */
typedef struct tau_node_facts {
	char *name;
	char *uid;
	char *resource_version;
	char *os;          /**< label kubernetes.io/os, or status.nodeInfo.operatingSystem */
	char *gpu_class;   /**< label tau.azure.com/gpu-class, NULL when absent */
	char *provider_id; /**< spec.providerID, NULL when absent */
	char **label_keys; /**< sorted by key */
	char **label_values;
	size_t n_labels;
	bool ready;                     /**< condition Ready is "True" */
	bool schedulable;               /**< !spec.unschedulable */
	bool deleting;                  /**< metadata.deletionTimestamp is set */
	tau_node_resource *allocatable; /**< status.allocatable, sorted by name */
	size_t n_allocatable;
} tau_node_facts;

/** The label naming a node's GPU class. */
#define TAU_GPU_CLASS_LABEL "tau.azure.com/gpu-class"

/**
 * Read a Node object (as JSON from the API).  `out` must be zeroed or freed
 * before; on failure it is left zeroed.  Labels and resources are validated
 * (names, quantities); the first bad one is named in the error.
 * @return 0, -TAU_EINVAL (malformed; message says which field), -TAU_ETOOBIG
 *         (more labels or resources than the bounds), -TAU_ENOMEM.
 */
int tau_node_facts_from_json(tau_node_facts *out, const cJSON *node);

/**
 * Check facts built from another source (an agent report): the name is a
 * DNS-1123 subdomain, labels are valid keys and values, resource names are
 * qualified names listed once, quantities are not negative, bounds hold.
 * @return 0 or -TAU_EINVAL / -TAU_ETOOBIG naming the first bad field.
 */
int tau_node_facts_validate(const tau_node_facts *facts);

/**
 * Prune a Node object in place to the fields tau_node_facts_from_json reads
 * (plus metadata.namespace/resourceVersion for caches), for an informer's
 * transform hook: a cached Node then costs a few hundred bytes instead of
 * kilobytes.  Facts read from the pruned object equal those of the original.
 */
void tau_node_facts_prune(cJSON *node);

/** Deep copy.  @return 0 or -TAU_ENOMEM (dst left zeroed). */
int tau_node_facts_copy(tau_node_facts *dst, const tau_node_facts *src);

/**
 * True when `a` and `b` hold the same facts, field by field (strings by value, NULL equal only
 * to NULL; quantities in the same value and format).  Cheaper than a copy: the aggregator uses
 * it to recognise a report that changes nothing.
 */
bool tau_node_facts_equal(const tau_node_facts *a, const tau_node_facts *b);

/** Release everything `facts` owns and zero it; NULL is a no-op. */
void tau_node_facts_clear(tau_node_facts *facts);

/** Lends the value of label `key`, or NULL. */
const char *tau_node_facts_label(const tau_node_facts *facts, const char *key);

#endif /* TAU_NODEFACTS_H */
