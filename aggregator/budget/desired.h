/*
 * budget/desired.h - what the team capacity budget should look like in Kueue, and whether
 * what exists still matches (docs/budget.md, rules P1-P8).  Pure (inputs in, cJSON out; no
 * I/O, no globals), built on the plan (budget/plan.h):
 *
 *   - the desired objects built from the plan (desired.c): ResourceFlavor, the team's root
 *     Cohort, each workspace's ClusterQueue;
 *   - the owned-fields comparison with what was read back, the merge that makes a PUT body
 *     and the body that holds a ClusterQueue (compare.c);
 *   - the ownership check that guards every write (ownership.c).
 */
#ifndef TAU_AGGREGATOR_BUDGET_DESIRED_H
#define TAU_AGGREGATOR_BUDGET_DESIRED_H

#include "budget/names.h"
#include "budget/plan.h"

#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------------------------------ */
/* Desired objects (desired.c)                                                                 */

/** Most nodeLabels a Kueue ResourceFlavor holds (CRD maxProperties). */
#define TAU_BUDGET_MAX_NODE_LABELS 8

/**
 * Whether our flavors can carry the TauCluster's spec.nodes.selector (a map of label keys to
 * values; NULL or JSON null: none) in their nodeLabels: every entry a label key with a label
 * value, and at most TAU_BUDGET_MAX_NODE_LABELS labels with the class and the OS.  The
 * selector's own gpu-class and OS keys are the flavor's (they add nothing).
 *
 * @return 0; -TAU_EINVAL (not a map, a bad key or value); -TAU_ERANGE (too many labels for
 *         Kueue).  The message says why the flavor cannot confine pods to the pool.
 */
int tau_budget_flavor_selector_check(const cJSON *selector);

/**
 * The desired ResourceFlavor of a GPU class: name tau_budget_flavor_name,
 * spec.nodeLabels {tau.azure.com/gpu-class: class, kubernetes.io/os: linux}
 * plus every entry of the pool's node selector (so Kueue confines admitted pods to the nodes
 * the pool counts), labels managed-by taugrid and tau.azure.com/gpu-class, annotation
 * tau.azure.com/cluster-uid.
 *
 * @param out          receives a new object (cJSON_Delete); untouched on failure.
 * @param gpu_class    the class (a label value).
 * @param cluster_uid  the TauCluster's UID; must not be empty.
 * @param selector     TauCluster spec.nodes.selector; NULL or JSON null: none.
 * @return 0; -TAU_EINVAL (empty UID, class not a label value, a selector
 *         tau_budget_flavor_selector_check refuses); -TAU_ERANGE (too many labels);
 *         -TAU_ENOMEM.
 */
int tau_budget_desired_flavor(cJSON **out, const char *gpu_class, const char *cluster_uid,
                              const cJSON *selector);

/**
 * The desired root Cohort "tau-team-<team>" of the plan: one resourceGroup
 * with the plan's coveredResources and flavors, each flavor listing every
 * covered resource in that order with nominalQuota the canonical quantity
 * string; no parentName, no borrowingLimit or lendingLimit.  `zeroed` (P5)
 * writes "0" everywhere but keeps the shape.  A plan without resources or
 * flavors gives "resourceGroups": [] (Kueue needs at least one of each in a
 * group).  Labels managed-by taugrid and tau.azure.com/team; annotation
 * tau.azure.com/team-uid.
 *
 * @return 0; -TAU_EINVAL (missing input, team not a label value); -TAU_ENOMEM.
 */
int tau_budget_desired_cohort(cJSON **out, const tau_budget_plan *plan, const char *team,
                              const char *team_uid, bool zeroed);

/**
 * The desired ClusterQueue "tau-ws-<workspace>": cohortName the team's
 * Cohort, the plan's coveredResources and flavors with every nominalQuota
 * "0" and no borrowingLimit, namespaceSelector {matchLabels:
 * {kubernetes.io/metadata.name: namespace}}; labels managed-by,
 * tau.azure.com/team and tau.azure.com/workspace; annotation
 * tau.azure.com/workspace-uid.
 *
 * @param ns  the workspace's resolved namespace (a DNS-1123 label).
 * @return 0; -TAU_EINVAL (missing input, invalid namespace or label value); -TAU_ENOMEM.
 */
int tau_budget_desired_cluster_queue(cJSON **out, const tau_budget_plan *plan, const char *team,
                                     const char *workspace, const char *workspace_uid,
                                     const char *ns);

/* ------------------------------------------------------------------------------------------ */
/* Comparison and merge (compare.c), ownership (ownership.c)                                   */

/**
 * Do observed and desired agree on every field we own?  Our labels and
 * annotations (keys of desired's; other keys ignored); per kind (desired's
 * "kind"): Cohort spec.resourceGroups and the absence of spec.parentName,
 * ClusterQueue spec.cohortName, spec.resourceGroups and
 * spec.namespaceSelector, ResourceFlavor spec.nodeLabels.  Quantities are
 * compared by value ("12", 12 and "12000m" agree; an unparsable one
 * differs); an empty resourceGroups list equals an absent one.  Kueue's
 * defaults, finalizers, status and any other field are ignored.
 *
 * @param out       true when equal.
 * @param what      receives the first difference, e.g. "spec.resourceGroups[0]
 *                  .flavors[1].resources[2].nominalQuota is \"8\", want \"16\"",
 *                  "" when equal; may be NULL.
 * @param what_len  size of `what`.
 * @return 0; -TAU_EINVAL when either is NULL or desired's kind is not one of ours.
 */
int tau_budget_owned_equal(bool *out, char *what, size_t what_len, const cJSON *desired,
                           const cJSON *observed);

/**
 * tau_budget_owned_equal with the result inverted (*differs), in the shape
 * of the controller runtime's tau_apply_diff_fn, so it can be a kind's
 * `diff` callback.
 */
int tau_budget_diff(bool *differs, char *what, size_t what_len, const cJSON *desired,
                    const cJSON *observed);

/**
 * The PUT body: a copy of `observed` (resourceVersion, finalizers, other
 * labels and annotations, admissionChecksStrategy, ... kept) with our
 * labels, annotations and owned spec fields taken from `desired`, and
 * apiVersion/kind set to desired's.  A Cohort's parentName is removed.
 *
 * @param out  receives a new object; untouched on failure.
 * @return 0; -TAU_EINVAL (NULL input, unknown kind, observed not an object); -TAU_ENOMEM.
 */
int tau_budget_merge(cJSON **out, const cJSON *observed, const cJSON *desired);

/**
 * The PUT body that holds a ClusterQueue instead of deleting it: a copy of `observed` (status
 * dropped) with spec.stopPolicy "Hold" (Kueue admits nothing new; admitted work runs to
 * completion) and the annotation tau.azure.com/held = `why`.  A desired ClusterQueue without
 * that annotation releases it: tau_budget_owned_equal reports the hold as a difference and
 * tau_budget_merge removes both the annotation and the stopPolicy.
 *
 * @return 0; -TAU_EINVAL (NULL input); -TAU_ENOMEM.
 */
int tau_budget_hold_body(cJSON **out, const cJSON *observed, const char *why);

/** Is `cq` held by TauGrid (annotation tau.azure.com/held present)? */
bool tau_budget_is_held(const cJSON *cq);

/**
 * Read a quantity from JSON by value, as Kubernetes' int-or-string
 * Quantity: a string ("12000m") or a bare number (12).
 * @return 0; -TAU_ETYPE for another JSON type; a tau_quantity_parse error.
 */
int tau_budget_quantity_of(tau_quantity *out, const cJSON *v);

/** Kinds this module writes. */
typedef enum tau_budget_kind {
	TAU_BUDGET_RESOURCE_FLAVOR = 0, /**< owner UID: the TauCluster's */
	TAU_BUDGET_COHORT,              /**< owner UID: the TauTeam's */
	TAU_BUDGET_CLUSTER_QUEUE,       /**< owner UID: the TauWorkspace's */
	TAU_BUDGET_TEAM /**< a TauTeam metadata update (its finalizer, E9); not an owned kind */
} tau_budget_kind;

/** "ResourceFlavor", "Cohort", "ClusterQueue", "TauTeam" ("?" for anything else). */
const char *tau_budget_kind_name(tau_budget_kind kind);

/** Ownership of an existing object. */
typedef enum tau_budget_ownership {
	TAU_BUDGET_OWNED = 0,    /**< managed-by taugrid and our owner UID: we may change it */
	TAU_BUDGET_OTHER_OWNER,  /**< managed-by taugrid, owner-UID annotation names another UID */
	TAU_BUDGET_LEGACY_OWNER, /**< managed-by taugrid but no owner-UID annotation */
	TAU_BUDGET_FOREIGN       /**< not managed by taugrid */
} tau_budget_ownership;

/**
 * Classify an existing object: ours only when the managed-by label is
 * "taugrid" AND the kind's owner-UID annotation equals `expected_uid`.
 * Anything else must never be changed or deleted, only reported.
 *
 * @param why           receives the cause when not owned ("annotation
 *                      tau.azure.com/team-uid is \"u-2\", not \"u-1\""), ""
 *                      when owned; may be NULL.
 * @param expected_uid  the owner's UID; NULL or "" never matches.
 * @return the classification (NULL observed: TAU_BUDGET_FOREIGN).
 */
tau_budget_ownership tau_budget_ownership_of(const cJSON *observed, tau_budget_kind kind,
                                             const char *expected_uid, char *why, size_t why_len);

/** The owner-UID annotation key of a kind. */
const char *tau_budget_owner_annotation(tau_budget_kind kind);

/** A short stable name of an ownership result ("Owned", "OtherOwner", "LegacyOwner", "Foreign"). */
const char *tau_budget_ownership_name(tau_budget_ownership ownership);

#endif /* TAU_AGGREGATOR_BUDGET_DESIRED_H */
