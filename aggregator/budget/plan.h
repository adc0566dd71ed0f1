/*
 * budget/plan.h - the pool snapshot and the Cohort plan of the team capacity budget
 * (docs/budget.md, rules P1-P6): per GPU class the exact sum of each resource, copied from
 * the inventory (snapshot.c), and the Cohort's shape and quotas built from it (plan.c).
 * Pure: no I/O, no globals.
 */
#ifndef TAU_AGGREGATOR_BUDGET_PLAN_H
#define TAU_AGGREGATOR_BUDGET_PLAN_H

#include "inventory/pool.h"

#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Kueue's limits on one resource group (docs/budget.md: 64 resources, 64 flavors). */
#define TAU_BUDGET_MAX_RESOURCES 64
#define TAU_BUDGET_MAX_FLAVORS   64

/* ------------------------------------------------------------------------------------------ */
/* Pool snapshot (snapshot.c)                                                                  */

/** One summed resource of a class. */
typedef struct tau_budget_resource {
	char *name;         /**< resource name, e.g. "nvidia.com/gpu" */
	tau_quantity total; /**< the exact sum over the class's counted nodes */
} tau_budget_resource;

/** A GPU class and its resources, sorted by name. */
typedef struct tau_budget_class {
	char *name; /**< the tau.azure.com/gpu-class value */
	tau_budget_resource *resources;
	size_t n_resources;
	size_t cap_resources; /**< private */
} tau_budget_class;

/** Plain data copied from the inventory pool: classes sorted by name.  Read-only for users. */
typedef struct tau_budget_pool {
	tau_budget_class *classes;
	size_t n_classes;
	size_t cap_classes; /**< private */
} tau_budget_pool;

/**
 * Create an empty snapshot.
 * @param out  receives it (free with tau_budget_pool_free).
 * @return 0 or -TAU_ENOMEM.
 */
int tau_budget_pool_new(tau_budget_pool **out);

/** Free a snapshot; NULL is a no-op. */
void tau_budget_pool_free(tau_budget_pool *pool);

/**
 * Add a class with no resources yet (kept sorted).  Adding one that is
 * there already is a no-op.
 * @return 0; -TAU_EINVAL for a NULL or empty name; -TAU_ENOMEM.
 */
int tau_budget_pool_add_class(tau_budget_pool *pool, const char *gpu_class);

/**
 * Set the total of `resource` in `gpu_class` (the class is added when
 * missing; both stay sorted).  The quantity is copied with its format.
 * @return 0; -TAU_EINVAL for NULL/empty names, a negative quantity, or a
 *         resource that is already set for that class; -TAU_ENOMEM.
 */
int tau_budget_pool_set(tau_budget_pool *pool, const char *gpu_class, const char *resource,
                        const tau_quantity *total);

/**
 * Copy the inventory pool's flavors and sums (each sum in the notation
 * tau_pool_sum_format prints, so the copy does not depend on event order).
 * Call it under the lock that guards `inventory`.
 * @param out  receives a new snapshot; untouched on failure.
 * @return 0, -TAU_ENOMEM, or an error of tau_budget_pool_set.
 */
int tau_budget_pool_from_inventory(tau_budget_pool **out, const tau_pool *inventory);

/* ------------------------------------------------------------------------------------------ */
/* Plan: the shape and quotas of the Cohort (plan.c)                                           */

/** One flavor of the plan. */
typedef struct tau_budget_flavor {
	char *name;      /**< the ResourceFlavor name */
	char *gpu_class; /**< its class; NULL for a retained flavor whose class is unknown */
	bool retained;   /**< not in the pool any more: kept in the Cohort at 0 (P6) */
} tau_budget_flavor;

/** The plan.  Read-only for users. */
typedef struct tau_budget_plan {
	char **resources; /**< coveredResources, sorted by name */
	size_t n_resources;
	tau_budget_flavor *flavors; /**< sorted by name */
	size_t n_flavors;
	/** quota[f * n_resources + r]: the pool sum of resources[r] in flavors[f]; zero when
	 * absent. */
	tau_quantity *quota;
} tau_budget_plan;

/**
 * Plan the Cohort: coveredResources = the sorted union of the pool's
 * resource names and those `observed_cohort` covers; flavors = the sorted
 * union of "taugrid-gpu-<class>" for every pool class and the flavors
 * `observed_cohort` lists; every quota the exact pool sum (zero where the
 * class lacks the resource, and for retained flavors).
 *
 * The class of a retained flavor comes from the label
 * tau.azure.com/gpu-class of the same-named TauGrid ResourceFlavor among
 * `observed_flavors`, the one this cluster owns (cluster_uid) first, else
 * one an earlier TauCluster wrote (a reinstall); else from the name itself
 * when it is the plain name of a class and does not end like a cleaned-up
 * name ("-<8 hex>", whose class cannot be read back); else it stays NULL
 * (the controller then cannot re-create that ResourceFlavor, and keeps it).
 *
 * @param out               receives a new plan (tau_budget_plan_free); untouched on failure.
 * @param pool              the snapshot; must not be NULL.
 * @param observed_cohort   the team Cohort as read back, ONLY when it is ours
 *                          (tau_budget_ownership said OWNED); NULL when absent
 *                          or not ours.  Borrowed.
 * @param observed_flavors  ResourceFlavors as read back (may be NULL when n is 0).
 * @param n_observed_flavors  their count.
 * @param cluster_uid       the TauCluster UID that owns our ResourceFlavors (may be NULL:
 *                          then only flavors of earlier TauClusters are read).
 * @return 0;
 *         -TAU_ERANGE over Kueue's limits (more than TAU_BUDGET_MAX_RESOURCES
 *          covered resources or TAU_BUDGET_MAX_FLAVORS flavors), or a quota
 *          that does not fit the int64 Kueue counts in (milli-units for cpu);
 *         -TAU_EINVAL for a resource name Kueue refuses (not a qualified
 *          name), two classes mapping to one flavor name, a negative quota,
 *          or an observed flavor name that is not a DNS-1123 subdomain;
 *         -TAU_ETYPE for an observed Cohort whose resourceGroups cannot be read;
 *         -TAU_ENOMEM.  Every error has a message naming the cause.
 */
int tau_budget_plan_build(tau_budget_plan **out, const tau_budget_pool *pool,
                          const cJSON *observed_cohort, const cJSON *const *observed_flavors,
                          size_t n_observed_flavors, const char *cluster_uid);

/** Free a plan; NULL is a no-op. */
void tau_budget_plan_free(tau_budget_plan *plan);

/** Lends the quota of flavor f, resource r (both in range). */
const tau_quantity *tau_budget_plan_quota(const tau_budget_plan *plan, size_t f, size_t r);

/**
 * Remove flavor f (in range) from the plan, keeping the others in order: a flavor whose
 * ResourceFlavor we may not write (another owner's object under our name) cannot be proven
 * to reach only the pool's nodes, and while a ClusterQueue of ours names it Kueue's
 * resource-in-use finalizer would keep its owner from deleting it.
 */
void tau_budget_plan_drop_flavor(tau_budget_plan *plan, size_t f);

#endif /* TAU_AGGREGATOR_BUDGET_PLAN_H */
