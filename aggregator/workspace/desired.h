/*
 * workspace/desired.h - what a TauWorkspace should own, as Kubernetes JSON, and
 * whether what exists still matches.
 *
 * From a parsed workspace and its resolved namespace this builds the
 * Namespace (Managed mode), the researcher RoleBinding, the Kueue LocalQueue
 * and the workload-identity ServiceAccount.  tau_ws_desired_drifted compares only
 * the fields the aggregator sets, so server defaults, status and other
 * controllers' labels never count as drift.  The v0 rule (one active
 * workspace) lives here too.  No I/O.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_DESIRED_H
#define TAU_AGGREGATOR_WORKSPACE_DESIRED_H

#include "namespace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/** The researcher ClusterRole both spec.role values bind. */
#define TAU_WS_RESEARCHER_CLUSTER_ROLE "tau-researcher"
/** RoleBinding name prefix: "tau-workspace-<workspace>". */
#define TAU_WS_ROLEBINDING_PREFIX "tau-workspace-"
/** ClusterQueue name prefix of team-linked workspaces: "tau-ws-<workspace>". */
#define TAU_WS_CLUSTER_QUEUE_PREFIX "tau-ws-"
/** LocalQueue name when neither spec.queue nor the TauCluster default is set. */
#define TAU_WS_DEFAULT_QUEUE "jobqueue"
/** Kueue API version written (docs/workspaces.md: v1beta1 is deprecated). */
#define TAU_WS_KUEUE_API_VERSION "kueue.x-k8s.io/v1beta2"
/** Azure Workload Identity ServiceAccount annotations. */
#define TAU_WS_ANNOTATION_WI_CLIENT_ID "azure.workload.identity/client-id"
#define TAU_WS_ANNOTATION_WI_TENANT_ID "azure.workload.identity/tenant-id"

/** Reasons of this module. */
#define TAU_WS_REASON_INVALID_SPEC      "InvalidSpec"              /**< permanent */
#define TAU_WS_REASON_BLOCKED_BY_ACTIVE "BlockedByActiveWorkspace" /**< retryable (v0) */

/** spec.authorization.mode. */
typedef enum tau_ws_authz_mode {
	TAU_WS_AUTHZ_WORKSPACE_RBAC = 0, /**< default: bind kubernetesSubject in the namespace */
	TAU_WS_AUTHZ_CLUSTER_WIDE        /**< opt-out: no researcher binding */
} tau_ws_authz_mode;

/**
 * The fields of a TauWorkspace the controller reads.  Every string is lent
 * from the JSON object it was read from and is valid while that lives;
 * absent optional fields are NULL.
 */
typedef struct tau_ws_spec {
	const char *name;               /**< metadata.name */
	const char *uid;                /**< metadata.uid (NULL before creation) */
	const char *creation_timestamp; /**< metadata.creationTimestamp */
	const char *deletion_timestamp; /**< metadata.deletionTimestamp */
	int64_t generation;             /**< metadata.generation (0 if absent) */
	tau_ws_authz_mode authz;
	const char *subject_kind; /**< spec.kubernetesSubject.kind: User | Group | ServiceAccount */
	const char *subject_name;
	const char *role;             /**< spec.role (researcher | tau-researcher-v1) */
	const char *target_namespace; /**< spec.target.namespace */
	bool create_namespace;
	bool adopt;
	const char *queue; /**< spec.queue */
	const char *team;  /**< spec.teamRef.name */
	bool has_workload_identity;
	const char *wi_service_account; /**< spec.workloadIdentity.serviceAccountName */
	const char *wi_client_id;
	const char *wi_tenant_id; /**< optional */
} tau_ws_spec;

/**
 * Read and check a TauWorkspace object.  Checks what the CRD also checks
 * (a server without the schema, or an older CRD, must not get us to write
 * bad objects): name a DNS-1123 label; authorization.mode; workspace-rbac
 * needs kubernetesSubject (kind User|Group|ServiceAccount, non-empty name, a
 * DNS-1123 subdomain for ServiceAccount) and a known role, cluster-wide
 * forbids them; queue a label value and subdomain; teamRef.name and
 * serviceAccountName valid names; clientId non-empty.
 *
 * @param out  filled on success (strings lent from obj); untouched on failure.
 * @param obj  the TauWorkspace JSON, borrowed.
 * @return 0; -TAU_EINVAL or -TAU_ETYPE with a message naming the field.
 */
int tau_ws_desired_spec_from_json(tau_ws_spec *out, const cJSON *obj);

/**
 * The ClusterRole a spec.role binds: "tau-researcher" for "researcher",
 * "tau-researcher-v1" and unset (NULL); NULL for anything else.
 */
const char *tau_ws_desired_cluster_role(const char *role);

/**
 * Effective LocalQueue name: spec.queue, else the TauCluster default
 * (default_queue), else TAU_WS_DEFAULT_QUEUE.  Lends one of its inputs or
 * the constant.
 */
const char *tau_ws_desired_local_queue_name(const tau_ws_spec *ws, const char *default_queue);

/**
 * ClusterQueue the LocalQueue points at: "tau-ws-<workspace>" for a
 * team-linked workspace (spec.teamRef set), otherwise the LocalQueue's own
 * name (the external-queue convention).
 *
 * @param out  buffer of `len` bytes.
 * @return 0, or -TAU_ERANGE when the name does not fit.
 */
int tau_ws_desired_cluster_queue_name(char *out, size_t len, const tau_ws_spec *ws,
                                      const char *default_queue);

/**
 * The desired Namespace: only in Managed mode when the resolution says the
 * namespace is created or owned (ns->create, ns->adopt or ns->owned), with
 * both ownership labels and the owner UID annotation.
 *
 * @param out  receives a new object (caller frees with cJSON_Delete), or
 *             NULL when no Namespace is wanted; untouched on failure.
 * @return 0, -TAU_EINVAL (ns not resolved), -TAU_ENOMEM.
 */
int tau_ws_desired_namespace(cJSON **out, const tau_ws_spec *ws, const tau_ws_ns_result *ns);

/**
 * The desired researcher RoleBinding "tau-workspace-<ws>" in `ns`: the
 * subject (User/Group with apiGroup rbac.authorization.k8s.io;
 * ServiceAccount with the namespace), roleRef ClusterRole tau-researcher,
 * ownership labels and the owner UID annotation.
 *
 * @param out  a new object, or NULL for cluster-wide authorization.
 * @return 0, -TAU_EINVAL (unknown role or subject kind), -TAU_ENOMEM.
 */
int tau_ws_desired_rolebinding(cJSON **out, const tau_ws_spec *ws, const char *ns);

/**
 * The desired LocalQueue (kueue.x-k8s.io/v1beta2) in `ns`, named by
 * tau_ws_desired_local_queue_name, spec.clusterQueue by tau_ws_desired_cluster_queue_name.
 *
 * @param out  a new object (always wanted).
 * @return 0, -TAU_ERANGE, -TAU_ENOMEM.
 */
int tau_ws_desired_local_queue(cJSON **out, const tau_ws_spec *ws, const char *ns,
                               const char *default_queue);

/**
 * The desired workload-identity ServiceAccount in `ns`, annotated with the
 * client ID (and tenant ID when set).  The `azure.workload.identity/use`
 * label belongs on pods, not on the ServiceAccount, so it is not set.
 *
 * @param out  a new object, or NULL when spec.workloadIdentity is unset.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_ws_desired_service_account(cJSON **out, const tau_ws_spec *ws, const char *ns);

/**
 * Compare an observed object with the desired one on the fields we own:
 * our labels and annotations (other keys ignored; for a ServiceAccount a
 * tenant-id annotation we did not ask for also counts), and per kind
 * RoleBinding subjects and roleRef, LocalQueue spec.clusterQueue.  Server
 * fields (uid, resourceVersion, status, managedFields, defaults) are
 * ignored.
 *
 * @param out       true when they differ.
 * @param what      receives the first difference ("roleRef.name is \"admin\",
 *                  want \"tau-researcher\""), "" when none; may be NULL.
 * @param what_len  size of `what`.
 * @param desired   from a tau_ws_desired_* function.
 * @param observed  the object read back.
 * @return 0; -TAU_EINVAL when either is NULL or desired has no kind.
 */
int tau_ws_desired_drifted(bool *out, char *what, size_t what_len, const cJSON *desired,
                           const cJSON *observed);

/**
 * May the aggregator touch this existing object?  Only when its ownership
 * labels name `workspace` (managed-by taugrid and the workspace label).
 * With `uid` non-NULL (use it for deletes, which also carry a UID
 * precondition) the owner UID annotation must be present and equal too;
 * with NULL (updates of an object labelled for a re-created workspace of
 * the same name) it is not checked.  Anything else is left alone and
 * reported.
 *
 * @param why      receives the cause when not owned ("label tau.azure.com/workspace
 *                 is \"beta\", not \"alpha\""), "" when owned; may be NULL.
 * @return true when owned.
 */
bool tau_ws_desired_owned(const cJSON *observed, const char *workspace, const char *uid, char *why,
                          size_t why_len);

/* ------------------------------------------------------------------------------------------ */
/* v0: one active workspace                                                                    */

/** A TauWorkspace as the v0 rule sees it.  Strings borrowed. */
typedef struct tau_ws_v0_entry {
	const char *name;
	const char *creation_timestamp;
	const char *deletion_timestamp; /**< NULL or "" when not being deleted */
} tau_ws_v0_entry;

/**
 * Pick the active workspace: the oldest existing one (creation time, ties
 * by name).  One being deleted stays active while it drains: the reference
 * blocks the others "until the active workspace is removed", i.e. gone from
 * the API, so two workspaces never route work at the same time.
 *
 * @param active  receives the index of the active entry; untouched when n == 0.
 * @return 0, or -TAU_ENOTFOUND when n == 0.
 */
int tau_ws_desired_v0_active(size_t *active, const tau_ws_v0_entry *all, size_t n);

/**
 * Decide for entry `self`: refusal->reason NULL when it is the active one,
 * else BlockedByActiveWorkspace (retryable) with a message naming the
 * active workspace.
 *
 * @return 0, or -TAU_EINVAL when self >= n.
 */
int tau_ws_desired_v0_decide(tau_ws_refusal *refusal, const tau_ws_v0_entry *all, size_t n,
                             size_t self);

#endif /* TAU_AGGREGATOR_WORKSPACE_DESIRED_H */
