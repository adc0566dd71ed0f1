/*
 * snapshot.h - the inventory's public read API: what the budget controller
 * (and any other in-process reader) takes the pool from.
 *
 * A snapshot is a deep copy of the pool at one instant, taken under the
 * aggregator's state lock and owned by the caller afterwards, so it can be
 * read on any thread for as long as needed:
 *
 *   tau_pool_snapshot *snap;
 *   if (tau_inventory_pool_snapshot(agg, &snap) == 0) {
 *           if (!snap->established)  -> wait, write nothing (P5: never shrink early)
 *           else if (!snap->valid)   -> zero the budget, condition says snap->invalid_reason
 *           else                     -> budget = snap->flavors; P4 checks use snap->nodes
 *           tau_pool_snapshot_free(snap);
 *   }
 *
 * Change notification: tau_inventory_pool_subscribe registers a callback that the
 * aggregator's publisher thread calls, with no lock held, after any change
 * of what a snapshot holds (the counted nodes, their labels or allocatable,
 * established, valid, a counted node's agent.* verdicts in `truth`, and any change of the
 * DeviceClasses or Kueue's configuration, which `dra` summarises).  Changes are coalesced
 * (one call per publisher window, 20 ms by default), so the callback says "take a new snapshot",
 * not what changed; it must be quick (e.g. wake the caller's loop).
 */
#ifndef TAU_AGGREGATOR_SNAPSHOT_H
#define TAU_AGGREGATOR_SNAPSHOT_H

#include "nodestore.h"

#include "tau/nodefacts.h"
#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One GPU class of the pool: the exact sums over its counted nodes. */
typedef struct tau_pool_snapshot_flavor {
	char *name;                   /**< the GPU class */
	size_t nodes;                 /**< counted nodes in it */
	tau_node_resource *resources; /**< resource -> exact sum, sorted by name */
	size_t n_resources;
} tau_pool_snapshot_flavor;

/** Most disagreeing nodes a truth summary names (the first ones, in name order). */
#define TAU_POOL_TRUTH_EXAMPLES 3

/** A counted node whose agent disagrees with its Node: its first failing agent.* rule. */
typedef struct tau_pool_truth_example {
	char node[254];          /**< the node's name */
	const char *rule;        /**< static, "agent.gpu-health" (truthrules.h) */
	unsigned int more_rules; /**< further failing rules of the same node */
	char detail[384];        /**< what the rule says (tau_truth_rule.detail) */
} tau_pool_truth_example;

/**
 * Node truth against the Node objects over the counted nodes (truthrules.h): what the
 * TauCluster condition NodeTruthAgrees says.  A rule the agent could not tell is not a
 * disagreement.
 */
typedef struct tau_pool_truth_summary {
	size_t reporting;   /**< counted nodes whose agent sent node-local facts */
	size_t disagreeing; /**< of them, with at least one failing agent.* rule */
	size_t n_examples;  /**< <= TAU_POOL_TRUTH_EXAMPLES */
	tau_pool_truth_example examples[TAU_POOL_TRUTH_EXAMPLES];
} tau_pool_truth_summary;

/** Most unusable DeviceClasses a DRA summary names (the first ones, in name order). */
#define TAU_POOL_DRA_EXAMPLES 4

/** A DeviceClass that maps to a quota resource and counts nothing: why. */
typedef struct tau_pool_dra_class_example {
	char name[254];    /**< the class */
	char reason[1024]; /**< "class NAME: spec.selectors[0]: ..." (quotes the expression) */
} tau_pool_dra_class_example;

/**
 * The DeviceClasses the pool counts DRA devices through (dra.h, docs/budget.md "How DRA
 * devices count"): what the TauCluster condition DRAClassesUsable says.  Only classes that map
 * to a quota resource (Kueue's deviceClassMappings or spec.extendedResourceName) are counted;
 * a class mapping to nothing counts nothing by design.
 */
typedef struct tau_pool_dra_summary {
	size_t mapped;     /**< classes that map to a quota resource */
	size_t unusable;   /**< of them, counting nothing: selector outside the CEL subset, or
	                        Kueue maps them under two names */
	size_t n_examples; /**< <= TAU_POOL_DRA_EXAMPLES */
	tau_pool_dra_class_example examples[TAU_POOL_DRA_EXAMPLES];
	/** Kueue's configuration cannot be read (no class counts until it can); "" when it can. */
	char kueue_error[1024];
} tau_pool_dra_summary;

/** The pool at one instant; everything is owned by the snapshot. */
typedef struct tau_pool_snapshot {
	/** The sync gate opened: the pool may be trusted and budgets may shrink.  Never goes back.
	 */
	bool established;
	/**
	 * Every input the pool depends on is usable.  False (fail closed) when one
	 * is not (e.g. an unusable TauCluster spec.nodes.selector): then nothing
	 * counts and the budget must be zero (rule P5).
	 */
	bool valid;
	/** Why the pool is not valid (e.g. "spec.nodes.selector: ..."); NULL when valid. */
	char *invalid_reason;
	/** Bumped by every change of the counted nodes or sums (not comparable across restarts). */
	uint64_t generation;
	/** GPU nodes whose agent has not reported (they count from their Node after the timeout).
	 */
	size_t missing_nodes;
	/** Flavors with at least one counted node, sorted by name. */
	tau_pool_snapshot_flavor *flavors;
	size_t n_flavors;
	/**
	 * The counted nodes, sorted by name: of the Node object's facts, the name,
	 * os, gpu_class, labels (sorted by key) and the ready, schedulable and
	 * deleting flags; allocatable, uid, resource_version and provider_id are
	 * not copied (the flavors hold the sums).  Their strings live in the
	 * arenas below: read them, never tau_node_facts_clear them.
	 */
	tau_node_facts *nodes;
	size_t n_nodes;
	char *node_strings; /**< private: every string of `nodes` */
	/** The counted nodes' agents against their Nodes (the NodeTruthAgrees condition). */
	tau_pool_truth_summary truth;
	/** The DeviceClasses' usability (the DRAClassesUsable condition). */
	tau_pool_dra_summary dra;
	char **node_labels; /**< private: every label_keys and label_values array of `nodes` */
} tau_pool_snapshot;

/**
 * Build a snapshot of `store`'s pool (the caller holds whatever guards the
 * store).  @return 0 or -TAU_ENOMEM (*out untouched).
 */
int tau_pool_snapshot_build(tau_pool_snapshot **out, const tau_nodestore *store);

/** Free a snapshot; NULL is a no-op. */
void tau_pool_snapshot_free(tau_pool_snapshot *snap);

typedef struct tau_inventory tau_inventory;

/**
 * The aggregator's pool now, as a snapshot the caller owns.  Thread-safe.
 * O(counted nodes): take one per notification, not per read.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_inventory_pool_snapshot(tau_inventory *agg, tau_pool_snapshot **out);

/** Called after the pool changed (see the file comment); `ud` as registered. */
typedef void (*tau_pool_changed_fn)(void *ud);

/**
 * Call `fn(ud)` after every change of the pool, from the aggregator's
 * publisher thread with no lock held, until unsubscribed.  Also called once
 * soon after subscribing, so a reader starts from a fresh snapshot.
 * @return 0, -TAU_ENOMEM, -TAU_ETOOBIG (more than 16 subscribers).
 */
int tau_inventory_pool_subscribe(tau_inventory *agg, tau_pool_changed_fn fn, void *ud);

/**
 * Remove a subscription (same fn and ud).  On return no call to it is
 * running or will start, so `ud` may be freed.  Must not be called from the
 * callback itself.  @return 0 or -TAU_ENOTFOUND.
 */
int tau_inventory_pool_unsubscribe(tau_inventory *agg, tau_pool_changed_fn fn, void *ud);

#endif /* TAU_AGGREGATOR_SNAPSHOT_H */
