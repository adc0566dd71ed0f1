/*
 * workspace/status.h - TauWorkspace conditions, phase and the status object.
 *
 * The reconcile loop records what each step found (namespace resolution,
 * RoleBinding, LocalQueue, ClusterQueue, ServiceAccount, drift) in a
 * tau_ws_status_input; this module turns that into the four conditions
 * (RBACReady, QueueReady, WorkloadIdentityReady, DriftDetected), the phase,
 * and the `status` JSON in the CRD's shape, keeping lastTransitionTime from
 * the previous status while a condition's status stays the same.
 * tau_ws_status_changed tells the loop whether /status needs a write.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_STATUS_H
#define TAU_AGGREGATOR_WORKSPACE_STATUS_H

#include "desired.h"
#include "namespace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Condition types. */
#define TAU_WS_COND_RBAC_READY  "RBACReady"
#define TAU_WS_COND_QUEUE_READY "QueueReady"
#define TAU_WS_COND_WI_READY    "WorkloadIdentityReady"
#define TAU_WS_COND_DRIFT       "DriftDetected"

/* Reasons of the Events about writes (the condition Events take the conditions' reasons). */
#define TAU_WS_EVENT_CREATED   "ObjectCreated"
#define TAU_WS_EVENT_RESTORED  "ObjectRestored"
#define TAU_WS_EVENT_CORRECTED "ObjectCorrected"
#define TAU_WS_EVENT_DELETED   "ObjectDeleted"

/* Phases. */
#define TAU_WS_PHASE_PENDING  "Pending"
#define TAU_WS_PHASE_READY    "Ready"
#define TAU_WS_PHASE_DEGRADED "Degraded"

/* Condition reasons of this module (namespace and spec reasons come from the refusal). */
#define TAU_WS_REASON_CLUSTER_WIDE          "ClusterWideAuthorization"
#define TAU_WS_REASON_ROLEBINDING_READY     "RoleBindingReady"
#define TAU_WS_REASON_ROLEBINDING_MISSING   "RoleBindingMissing"
#define TAU_WS_REASON_ROLEBINDING_MISMATCH  "RoleBindingMismatch"
#define TAU_WS_REASON_ROLEBINDING_NOT_OWNED "RoleBindingNotOwned"
#define TAU_WS_REASON_ROLEBINDING_ERROR     "RoleBindingError"
#define TAU_WS_REASON_REVOCATION_PENDING    "IdentityRevocationPending"
#define TAU_WS_REASON_LQ_READY              "LocalQueueReady"
#define TAU_WS_REASON_LQ_MISSING            "LocalQueueMissing"
#define TAU_WS_REASON_LQ_MISMATCH           "LocalQueueMismatch"
#define TAU_WS_REASON_LQ_NOT_OWNED          "LocalQueueNotOwned"
#define TAU_WS_REASON_LQ_ERROR              "LocalQueueError"
#define TAU_WS_REASON_CQ_NOT_FOUND          "ClusterQueueNotFound"
#define TAU_WS_REASON_CQ_ERROR              "ClusterQueueError"
#define TAU_WS_REASON_WI_NOT_CONFIGURED     "NotConfigured"
#define TAU_WS_REASON_SA_READY              "ServiceAccountReady"
#define TAU_WS_REASON_SA_MISSING            "ServiceAccountMissing"
#define TAU_WS_REASON_SA_MISMATCH           "ServiceAccountMismatch"
#define TAU_WS_REASON_SA_NOT_OWNED          "ServiceAccountNotOwned"
#define TAU_WS_REASON_SA_ERROR              "ServiceAccountError"
#define TAU_WS_REASON_NO_DRIFT              "NoDrift"
#define TAU_WS_REASON_DRIFT_CORRECTED       "DriftCorrected"
#define TAU_WS_REASON_OBJECT_DRIFTED        "ObjectDrifted"
#define TAU_WS_REASON_NOT_EVALUATED         "NotEvaluated"

/** What a step found about one object. */
typedef enum tau_ws_obj_state {
	TAU_WS_OBJ_OK = 0,    /**< present and as desired (after any write this pass) */
	TAU_WS_OBJ_MISSING,   /**< absent (create pending or failed with a retryable error) */
	TAU_WS_OBJ_MISMATCH,  /**< present, differs in a field we own, not corrected */
	TAU_WS_OBJ_NOT_OWNED, /**< present but its ownership labels/UID name someone else */
	TAU_WS_OBJ_ERROR      /**< the API call failed */
} tau_ws_obj_state;

/** A step's finding.  detail (borrowed, may be NULL): what differs, why not owned, the error. */
typedef struct tau_ws_obj_check {
	tau_ws_obj_state state;
	const char *detail;
} tau_ws_obj_check;

/** One object found changed out of band (from tau_ws_desired_drifted).  Strings borrowed. */
typedef struct tau_ws_drift_item {
	const char *object; /**< "RoleBinding ml-alpha/tau-workspace-alpha" */
	const char *what;   /**< the first difference */
	bool corrected;     /**< the loop wrote the desired state back successfully */
} tau_ws_drift_item;

/** Everything the status depends on.  All pointers borrowed. */
typedef struct tau_ws_status_input {
	const tau_ws_spec *spec; /**< may be NULL only together with `refusal` (invalid spec) */
	const char *workspace;   /**< metadata.name (used when spec is NULL) */
	int64_t generation;      /**< metadata.generation */
	const char *now;         /**< RFC 3339 time for conditions whose status changes */
	const cJSON *previous;   /**< the object's current .status, NULL if none */
	/** Refuses everything before namespace resolution: InvalidSpec, BlockedByActiveWorkspace.
	 *  NULL (or reason NULL) when none. */
	const tau_ws_refusal *refusal;
	const tau_ws_ns_result *ns; /**< namespace resolution; NULL only with `refusal` */
	/** status.target.resolvedNamespace override (the retained namespace while a retarget
	 *  drains); NULL: ns->namespace_name when resolved, else omitted. */
	const char *resolved_namespace;
	tau_ws_obj_check
	        rolebinding;     /**< cluster-wide: only ERROR counts (a stale binding stayed) */
	bool revocation_pending; /**< obsolete identity not yet confirmed revoked */
	const char *revocation_detail; /**< e.g. "ServiceAccount ml-alpha/old is terminating" */
	const char *local_queue;       /**< effective LocalQueue name */
	const char *cluster_queue;     /**< ClusterQueue it should point at */
	const char *cluster_queue_uid; /**< when taugrid owns it; NULL otherwise */
	tau_ws_obj_check lq;           /**< the LocalQueue */
	tau_ws_obj_check cq;           /**< OK: exists; MISSING; ERROR */
	tau_ws_obj_check sa;           /**< ignored when workloadIdentity is unset */
	const tau_ws_drift_item *drift;
	size_t n_drift;
} tau_ws_status_input;

/** Condition status. */
typedef enum tau_ws_cond_status {
	TAU_WS_FALSE = 0,
	TAU_WS_TRUE,
	TAU_WS_UNKNOWN
} tau_ws_cond_status;

/** Index of each condition in tau_ws_status_conditions. */
enum { TAU_WS_RBAC = 0, TAU_WS_QUEUE, TAU_WS_WI, TAU_WS_DRIFT, TAU_WS_N_CONDITIONS };

/** One computed condition (reason static; message owned here). */
typedef struct tau_ws_condition {
	const char *type;
	tau_ws_cond_status status;
	const char *reason;
	char message[TAU_WS_MESSAGE_MAX];
} tau_ws_condition;

/**
 * Compute the four conditions, indexed TAU_WS_RBAC .. TAU_WS_DRIFT.
 * WorkloadIdentityReady is True/NotConfigured when spec.workloadIdentity is
 * unset; DriftDetected is Unknown/NotEvaluated while the namespace is not
 * resolved or the workspace is refused.
 *
 * @return 0, or -TAU_EINVAL when the input lacks spec/ns without a refusal.
 */
int tau_ws_status_conditions(tau_ws_condition out[TAU_WS_N_CONDITIONS],
                             const tau_ws_status_input *in);

/**
 * The phase: Ready when RBACReady and QueueReady are True and DriftDetected
 * is not True; Degraded when DriftDetected is True; Pending otherwise.
 * WorkloadIdentityReady never counts.  Returns a static string.
 */
const char *tau_ws_status_phase(tau_ws_cond_status rbac, tau_ws_cond_status queue,
                                tau_ws_cond_status drift);

/** "True", "False" or "Unknown". */
const char *tau_ws_status_cond_name(tau_ws_cond_status s);

/**
 * Build the whole `status` object: phase, observedGeneration,
 * target.resolvedNamespace, queue{localQueue, clusterQueue[, clusterQueueUID]},
 * conditions[] (type, status, reason, message, lastTransitionTime,
 * observedGeneration).  lastTransitionTime comes from in->previous when
 * that condition's status is unchanged, else in->now.  Conditions of other
 * types in in->previous (another controller's, e.g. the budget's QuotaReady)
 * are copied unchanged, so two writers never undo each other.
 *
 * @param out  receives a new object (cJSON_Delete); untouched on failure.
 * @return 0, -TAU_EINVAL (see tau_ws_status_conditions; or now is NULL), -TAU_ENOMEM.
 */
int tau_ws_status_build(cJSON **out, const tau_ws_status_input *in);

/**
 * Whether writing `desired` would change `current` (the object's .status,
 * NULL if none): compares phase, observedGeneration, target, queue and each
 * condition's status, reason, message and observedGeneration, by type,
 * ignoring lastTransitionTime.  A condition type present on one side only
 * is a change.
 */
bool tau_ws_status_changed(const cJSON *desired, const cJSON *current);

#endif /* TAU_AGGREGATOR_WORKSPACE_STATUS_H */
