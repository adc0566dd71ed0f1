/*
 * budget/names.h - the published names and ownership metadata of the
 * objects the team capacity budget writes (docs/budget.md).
 *
 * ResourceFlavor "taugrid-gpu-<class>", Cohort "tau-team-<team>",
 * ClusterQueue "tau-ws-<workspace>".  A name that would not be a valid
 * DNS-1123 subdomain (a GPU class label value may hold uppercase, '_' and
 * '.', and any input may be too long) is made valid and gets a stable
 * "-<8 hex>" suffix, the start of the SHA-256 of the original input, so two
 * inputs that clean up alike still get different names, and the name of an
 * input never changes between versions.  No I/O.
 */
#ifndef TAU_AGGREGATOR_BUDGET_NAMES_H
#define TAU_AGGREGATOR_BUDGET_NAMES_H

#include <stddef.h>

/** Kueue API version written (docs/budget.md; v1beta1 is deprecated). */
#define TAU_BUDGET_KUEUE_API_VERSION "kueue.x-k8s.io/v1beta2"

/** Name prefixes (the published TauGrid names). */
#define TAU_BUDGET_FLAVOR_PREFIX        "taugrid-gpu-"
#define TAU_BUDGET_COHORT_PREFIX        "tau-team-"
#define TAU_BUDGET_CLUSTER_QUEUE_PREFIX "tau-ws-"

/** Longest object name (a DNS-1123 subdomain). */
#define TAU_BUDGET_NAME_MAX 253
/** A buffer that holds any name this module builds, NUL included. */
#define TAU_BUDGET_NAME_BUF (TAU_BUDGET_NAME_MAX + 1)
/** Hex digits of the SHA-256 suffix of a cleaned-up name. */
#define TAU_BUDGET_NAME_HASH_HEX 8

/* Ownership metadata: the same keys and values as the workspace controller's. */
/** Ownership label: who manages the object; ours is TAU_BUDGET_MANAGED_BY. */
#define TAU_BUDGET_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
/** The value of TAU_BUDGET_LABEL_MANAGED_BY on everything TauGrid writes. */
#define TAU_BUDGET_MANAGED_BY "taugrid"
/** Label naming the workspace of a ClusterQueue. */
#define TAU_BUDGET_LABEL_WORKSPACE "tau.azure.com/workspace"
/** Label naming the team of a Cohort or ClusterQueue. */
#define TAU_BUDGET_LABEL_TEAM "tau.azure.com/team"
/** The node label that puts a node in a GPU class; also labels our ResourceFlavors. */
#define TAU_BUDGET_LABEL_GPU_CLASS "tau.azure.com/gpu-class"
/** Node OS label; our flavors select Linux nodes only (P1). */
#define TAU_BUDGET_LABEL_OS "kubernetes.io/os"
/** The namespace's own name label, which ClusterQueue namespaceSelectors match. */
#define TAU_BUDGET_LABEL_NAMESPACE_NAME "kubernetes.io/metadata.name"
/** Legacy GPU discovery marks its ClusterQueues with this label set to "true". */
#define TAU_BUDGET_LABEL_DISCOVER_GPU_FLAVORS "tau.azure.com/discover-gpu-flavors"
/** Owner-UID annotations: TauCluster (ResourceFlavor), TauTeam (Cohort), TauWorkspace (CQ). */
#define TAU_BUDGET_ANNOTATION_CLUSTER_UID   "tau.azure.com/cluster-uid"
#define TAU_BUDGET_ANNOTATION_TEAM_UID      "tau.azure.com/team-uid"
#define TAU_BUDGET_ANNOTATION_WORKSPACE_UID "tau.azure.com/workspace-uid"
/** The TauCluster deletionPolicy an automatic Cohort was written under (Retain, DeleteManaged):
 * what happens to it once no TauCluster exists. */
#define TAU_BUDGET_ANNOTATION_DELETION_POLICY "tau.azure.com/deletion-policy"
/** Why TauGrid holds a ClusterQueue (spec.stopPolicy Hold) instead of deleting it. */
#define TAU_BUDGET_ANNOTATION_HELD "tau.azure.com/held"

/**
 * Build `prefix` + `input` as a DNS-1123 subdomain.  When the plain name is
 * valid it is the result.  Otherwise the input is lowercased, every byte
 * that may not stand where it is becomes '-', it is shortened so that the
 * whole name fits TAU_BUDGET_NAME_MAX, and "-" plus the first
 * TAU_BUDGET_NAME_HASH_HEX hex digits of SHA-256(input) is appended.
 *
 * @param out     buffer of `len` bytes; TAU_BUDGET_NAME_BUF always suffices.
 * @param prefix  a valid name prefix ending in '-' (one of the above).
 * @param input   the class, team or workspace name; must not be empty.
 * @return 0; -TAU_EINVAL for an empty or NULL input or prefix; -TAU_ERANGE
 *         when `len` is too small (out untouched on failure).
 */
int tau_budget_name(char *out, size_t len, const char *prefix, const char *input);

/** The ResourceFlavor of a GPU class: tau_budget_name(TAU_BUDGET_FLAVOR_PREFIX, gpu_class). */
int tau_budget_flavor_name(char *out, size_t len, const char *gpu_class);

/** The team's root Cohort: tau_budget_name(TAU_BUDGET_COHORT_PREFIX, team). */
int tau_budget_cohort_name(char *out, size_t len, const char *team);

/** A workspace's ClusterQueue: tau_budget_name(TAU_BUDGET_CLUSTER_QUEUE_PREFIX, workspace). */
int tau_budget_cluster_queue_name(char *out, size_t len, const char *workspace);

#endif /* TAU_AGGREGATOR_BUDGET_NAMES_H */
