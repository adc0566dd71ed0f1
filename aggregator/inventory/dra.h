/*
 * dra.h - which DRA devices count, per node and under which quota resource (docs/budget.md,
 * "How DRA devices count"; DESIGN P9).
 *
 * A view is built from every DeviceClass, every ResourceSlice and Kueue's
 * deviceClassMappings at once and answers, per node name, how many devices
 * count under each quota resource, with the notes explain shows (`dra.*`
 * rules).  The rules:
 *   - only node-local devices count (slice nodeName, or a device's own nodeName
 *     under perDeviceNodeSelection); nodeSelector / allNodes slices count nowhere;
 *   - only complete pools count (dra_slice.h); an incomplete one counts nothing;
 *   - a device counts under the quota resource of the classes that select it
 *     (dra_class.h); an unusable or unmapped class selects nothing;
 *   - a device counts once: selected by classes that map to different
 *     resources, it counts under the first such class by name, and the others
 *     are reported as an overlap;
 *   - partitionable devices (consumesCounters) count whole: all devices that draw
 *     on one counter set are one device (a GPU and its MIG partitions count 1);
 *   - a resource the node also advertises in status.allocatable counts from
 *     allocatable only (tau_dra_counts_beside); the DRA devices are reported.
 * The view lends strings from the classes, slices and mappings it was built
 * from: keep them alive and unchanged while it is used.
 */
#ifndef TAU_AGGREGATOR_DRA_H
#define TAU_AGGREGATOR_DRA_H

#include "dra_class.h"
#include "dra_slice.h"

#include "tau/nodefacts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Explain rule names (stable). */
#define TAU_DRA_RULE_POOL_COMPLETE "dra.pool-complete"
#define TAU_DRA_RULE_SELECTOR      "dra.selector"
#define TAU_DRA_RULE_OVERLAP       "dra.overlap"
#define TAU_DRA_RULE_PARTITIONABLE "dra.partitionable"
#define TAU_DRA_RULE_NODE_LOCAL    "dra.node-local"
#define TAU_DRA_RULE_ALLOCATABLE   "dra.allocatable-overlap"
#define TAU_DRA_RULE_CLASS         "dra.class"

/** Notes kept per node at most; the count of the rest is kept. */
#define TAU_DRA_MAX_NOTES 32

/** Devices of one node counted under one quota resource. */
typedef struct tau_dra_resource {
	const char *name; /**< lent from a class or mapping */
	uint32_t devices;
} tau_dra_resource;

/** Something explain says about DRA (on a node, or cluster-wide). */
typedef struct tau_dra_note {
	const char *rule; /**< a TAU_DRA_RULE_* */
	char *detail;     /**< owned */
} tau_dra_note;

/**
 * A device that is part of a counted unit of a node: the unit is the device itself, or every
 * device that draws on one shared counter set (a GPU and its partitions), and counts once
 * under `resource`.  Free-now figures read which units a ResourceClaim holds through it.
 */
typedef struct tau_dra_member {
	const char *driver; /**< lent from the slices */
	const char *pool;
	const char *device;
	const char *resource; /**< the quota resource its unit counts under */
	uint32_t unit;        /**< the unit, 0..tau_dra_node.n_units-1 */
} tau_dra_member;

/** What counts on one node.  Read-only. */
typedef struct tau_dra_node {
	const char *name;
	tau_dra_resource *resources; /**< sorted by name */
	size_t n_resources;
	tau_dra_member *members; /**< sorted by (driver, pool, device), each device once */
	size_t n_members;
	uint32_t n_units; /**< units counted on the node, all resources (their devices summed) */
	tau_dra_note *notes;
	size_t n_notes;
	size_t notes_dropped; /**< beyond TAU_DRA_MAX_NOTES */
} tau_dra_node;

/** One class as the pool uses it.  Read-only. */
typedef struct tau_dra_class_state {
	const tau_dra_class *cls;
	const char *resource; /**< NULL when it counts nothing */
	tau_dra_via via;
	char note[320]; /**< see tau_dra_class_resource; the unusable reason when unusable */
	bool unusable;  /**< selectors outside the subset, or Kueue maps it twice */
} tau_dra_class_state;

typedef struct tau_dra_view tau_dra_view;

/**
 * Build the view.  Inputs are lent (see the file comment).
 * @return 0 or -TAU_ENOMEM.
 */
int tau_dra_view_build(tau_dra_view **out, const tau_dra_class *classes, size_t n_classes,
                       const tau_dra_slice *slices, size_t n_slices,
                       const tau_kueue_dra_mapping *mappings, size_t n_mappings);

/** Free a view; NULL is a no-op. */
void tau_dra_view_free(tau_dra_view *view);

/** Lends what counts on node `name`, or NULL when no slice names it. */
const tau_dra_node *tau_dra_view_node(const tau_dra_view *view, const char *name);

/** The member (driver, pool, device) of node `n`'s counted units, or NULL. */
const tau_dra_member *tau_dra_node_member(const tau_dra_node *n, const char *driver,
                                          const char *pool, const char *device);

/** Nodes with DRA devices or notes, sorted by name. */
size_t tau_dra_view_node_count(const tau_dra_view *view);
const tau_dra_node *tau_dra_view_node_at(const tau_dra_view *view, size_t i);

/** Classes sorted by name. */
size_t tau_dra_view_class_count(const tau_dra_view *view);
const tau_dra_class_state *tau_dra_view_class_at(const tau_dra_view *view, size_t i);

/** Pools sorted by (driver, pool). */
size_t tau_dra_view_pool_count(const tau_dra_view *view);
const tau_dra_pool_state *tau_dra_view_pool_at(const tau_dra_view *view, size_t i);

/** Notes not about one node (slices that are not node-local). */
size_t tau_dra_view_note_count(const tau_dra_view *view);
const tau_dra_note *tau_dra_view_note_at(const tau_dra_view *view, size_t i);

/** Totals of a view, for metrics. */
typedef struct tau_dra_totals {
	uint64_t devices; /**< devices counted on nodes, all resources (before allocatable) */
	uint64_t pools_incomplete; /**< pools of which nothing counts */
	uint64_t classes_unusable; /**< classes outside the CEL subset or mapped twice by Kueue */
} tau_dra_totals;

/** The totals of `view`; all zero for NULL. */
tau_dra_totals tau_dra_view_totals(const tau_dra_view *view);

/**
 * Whether DRA resource `r` counts beside node `facts`' allocatable: false when allocatable
 * already holds a non-zero amount of it (the allocatable figure counts, never both).
 * @param why  receives the reason when false; may be NULL
 */
bool tau_dra_counts_beside(const tau_dra_resource *r, const tau_node_facts *facts, char *why,
                           size_t why_cap);

/**
 * The facts the pool counts for a node with DRA devices: a copy of `node` whose allocatable
 * also lists each resource of `dra` (whole devices, DecimalSI), except those that
 * tau_dra_counts_beside refuses (allocatable already counts them).  `out` must be zeroed.
 * @param left_out  receives how many DRA resources were left out that way; may be NULL
 * @return 0, -TAU_ETOOBIG (more than TAU_NODE_MAX_RESOURCES together), -TAU_ENOMEM;
 *         `out` is left zeroed on failure.
 */
int tau_dra_merge_facts(tau_node_facts *out, const tau_node_facts *node, const tau_dra_node *dra,
                        size_t *left_out);

#endif /* TAU_AGGREGATOR_DRA_H */
