/*
 * workspace/drain.h - may a TauWorkspace's old namespace be cleaned up yet, and in
 * what order identity and access change while it drains.
 *
 * On deletion or retargeting, unfinished work that still routes through the
 * workspace's LocalQueue keeps the routing objects alive (reference,
 * "Workspace readiness and recovery").  tau_ws_drain_decide says whether
 * cleanup may proceed and names what blocks it; tau_ws_drain_plan turns
 * that plus the identity state into an ordered list of steps for the
 * reconcile loop, so the obsolete ServiceAccount is always revoked before
 * the researcher is granted access to the old namespace.  No I/O.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_DRAIN_H
#define TAU_AGGREGATOR_WORKSPACE_DRAIN_H

#include "namespace.h"

#include "tau/drain.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The sources and their rules are libtau's (tau/drain.h), shared with `tau workspace delete`;
 * these names are the controller's for them. */
#define TAU_WS_LABEL_QUEUE_NAME    TAU_DRAIN_LABEL_QUEUE_NAME
#define TAU_WS_LABEL_KUEUE_MANAGED TAU_DRAIN_LABEL_KUEUE_MANAGED

/* Reasons of this module. */
#define TAU_WS_REASON_DRAIN_PENDING    "DrainPending"          /**< retryable */
#define TAU_WS_REASON_DISCOVERY_FAILED "SourceDiscoveryFailed" /**< retryable */

typedef tau_drain_kind tau_ws_source_kind;
#define TAU_WS_SRC_WORKLOAD   TAU_DRAIN_WORKLOAD
#define TAU_WS_SRC_JOB        TAU_DRAIN_JOB
#define TAU_WS_SRC_RAYJOB     TAU_DRAIN_RAYJOB
#define TAU_WS_SRC_RAYSERVICE TAU_DRAIN_RAYSERVICE
#define TAU_WS_SRC_DEPLOYMENT TAU_DRAIN_DEPLOYMENT
#define TAU_WS_SRC_KINDS      TAU_DRAIN_KINDS

/** How listing one kind went. */
typedef enum tau_ws_api_state {
	TAU_WS_API_LISTED = 0, /**< listed; the sources below are all of them */
	TAU_WS_API_ABSENT,     /**< the API is not served (tolerated for the optional kinds) */
	TAU_WS_API_UNREADABLE  /**< the list failed: blocks cleanup until it can be read */
} tau_ws_api_state;

typedef tau_drain_source tau_ws_source;

/**
 * Read a source from its Kubernetes JSON.  Strings are lent from obj.
 * @return 0; -TAU_EINVAL (no metadata.name, kind out of range); -TAU_ETYPE.
 */
int tau_ws_drain_source_from_json(tau_ws_source *out, tau_ws_source_kind kind, const cJSON *obj);

/** Inputs of the drain decision.  All pointers borrowed. */
typedef struct tau_ws_drain_input {
	const char *namespace_name; /**< the namespace being left */
	/** LocalQueue names that route into the workspace there (retained queues). */
	const char *const *queues;
	size_t n_queues;
	const tau_ws_source *sources;
	size_t n_sources;
	tau_ws_api_state api[TAU_WS_SRC_KINDS];
	const char *api_error[TAU_WS_SRC_KINDS]; /**< detail for UNREADABLE, may be NULL */
} tau_ws_drain_input;

/** The drain decision. */
typedef struct tau_ws_drain_decision {
	bool may_cleanup;
	size_t n_blocking; /**< sources that hold the route */
	/** reason NULL when may_cleanup; DrainPending or SourceDiscoveryFailed otherwise. */
	tau_ws_refusal refusal;
} tau_ws_drain_decision;

/** True if this source finished and no longer holds its route (RayService/Deployment never). */
bool tau_ws_drain_source_finished(const tau_ws_source *src);

/**
 * Decide whether cleanup of the old namespace's routing objects may
 * proceed.  A source holds the route when its queue (for a Deployment also
 * the pod template's queue label with managed "true") is one of the
 * queues and it has not finished: Workloads until Finished, Jobs until
 * Complete or Failed, RayJobs until jobDeploymentStatus is Complete or
 * Failed, RayServices and Deployments while they exist.  An absent
 * Workload, RayJob or RayService API is tolerated; an absent Job or
 * Deployment API, and any unreadable list, blocks.
 *
 * @return 0, or -TAU_EINVAL on NULL arguments.
 */
int tau_ws_drain_decide(tau_ws_drain_decision *out, const tau_ws_drain_input *in);

/* ------------------------------------------------------------------------------------------ */
/* The ordered plan for the old namespace                                                      */

/** What the loop does for one step. */
typedef enum tau_ws_step_kind {
	TAU_WS_STEP_REVOKE_SERVICE_ACCOUNT = 0, /**< delete the obsolete SA (UID precondition) */
	TAU_WS_STEP_REMOVE_RESEARCHER_BINDING,  /**< delete our researcher RoleBinding */
	TAU_WS_STEP_GRANT_RESEARCHER_BINDING,   /**< create or repair the current binding */
	TAU_WS_STEP_WAIT_REVOCATION, /**< no call: the obsolete SA is terminating; requeue */
	TAU_WS_STEP_WAIT_DRAIN,      /**< no call: sources hold the route (plan message); requeue */
	TAU_WS_STEP_DELETE_LOCAL_QUEUE,     /**< routing object, after the drain */
	TAU_WS_STEP_DELETE_SERVICE_ACCOUNT, /**< the retained, unchanged SA, after the drain */
	TAU_WS_STEP_DELETE_NAMESPACE,  /**< deletion: an owned, unshared namespace (Managed mode) */
	TAU_WS_STEP_RELEASE_NAMESPACE, /**< retarget: strip our ownership labels, keep the namespace
	                                */
	TAU_WS_STEP_REMOVE_FINALIZER   /**< deletion only: the last step */
} tau_ws_step_kind;

/**
 * When a step runs, relative to this plan's REVOKE step: ALWAYS; REVOKED
 * only if the revoke confirmed the ServiceAccount gone (the delete
 * succeeded and a read answers NotFound); NOT_REVOKED only if it did not
 * (the delete failed, or the account lingers behind a finalizer).
 */
typedef enum tau_ws_step_when {
	TAU_WS_WHEN_ALWAYS = 0,
	TAU_WS_WHEN_REVOKED,
	TAU_WS_WHEN_NOT_REVOKED
} tau_ws_step_when;

/** One step.  Strings lent from the plan input. */
typedef struct tau_ws_step {
	tau_ws_step_kind kind;
	tau_ws_step_when when;
	const char *namespace_name;
	const char *name; /**< object name (NULL for the finalizer and wait steps) */
} tau_ws_step;

/** Most steps in a plan; bounds the LocalQueues it can delete. */
#define TAU_WS_PLAN_MAX 24

/** The plan: execute steps in order (see tau_ws_drain_plan for the contract). */
typedef struct tau_ws_plan {
	tau_ws_step steps[TAU_WS_PLAN_MAX];
	size_t n;
	/** True when, if every step succeeds, the old namespace is fully cleaned up. */
	bool completes;
	char message[TAU_WS_MESSAGE_MAX]; /**< what the plan does or waits for */
} tau_ws_plan;

/** What the loop observed in the namespace being left.  Strings borrowed. */
typedef struct tau_ws_old_ns_input {
	const char *namespace_name;
	bool deleting; /**< the TauWorkspace is being deleted (else: retargeting) */
	/** Current spec wants a researcher binding (workspace-rbac), cluster-wide: false. */
	bool binding_wanted;
	const char *binding_name;        /**< "tau-workspace-<ws>" */
	bool binding_present;            /**< our researcher RoleBinding exists there */
	const char *sa_name;             /**< our workload-identity SA there, NULL if none */
	const char *sa_client_id;        /**< its client-id annotation */
	bool sa_terminating;             /**< it has a deletionTimestamp */
	bool wi_wanted;                  /**< current spec.workloadIdentity set */
	const char *wi_sa_name;          /**< current serviceAccountName */
	const char *wi_client_id;        /**< current clientId */
	const char *const *local_queues; /**< our LocalQueues there */
	size_t n_local_queues;
	bool namespace_owned;  /**< Managed mode, ownership labels name this workspace */
	bool namespace_shared; /**< another workspace still resolves to it */
	const tau_ws_drain_decision *drain;
} tau_ws_old_ns_input;

/**
 * True when the ServiceAccount in the old namespace is obsolete: it exists
 * and workloadIdentity was removed or its name or client ID changed.
 */
bool tau_ws_drain_identity_changed(const tau_ws_old_ns_input *in);

/**
 * Plan the old namespace.  Contract for the loop: run the steps in order,
 * skipping those whose `when` does not match the outcome of this plan's
 * REVOKE step; a failed REVOKE is an outcome (NOT_REVOKED steps then run),
 * any other failed call ends the pass.  Rules:
 *   - an obsolete ServiceAccount is revoked first, even during the drain;
 *     the researcher binding is (re)granted only once revocation is
 *     confirmed, and removed while it is not (failed or terminating);
 *   - an unchanged ServiceAccount is kept until the drain completes;
 *   - while the drain waits, the current researcher keeps (or regains) the
 *     binding in the old namespace to inspect or cancel the remaining work;
 *     cluster-wide authorization never creates one;
 *   - after the drain (and confirmed revocation): LocalQueues, the
 *     ServiceAccount, the binding, then an owned unshared namespace is
 *     deleted (workspace deletion) or released by stripping our ownership
 *     labels (retarget: the namespace may still hold data), and on deletion
 *     the finalizer goes last.
 *
 * @return 0; -TAU_EINVAL on NULL input or drain; -TAU_ETOOBIG when the
 *         LocalQueues do not fit TAU_WS_PLAN_MAX.
 */
int tau_ws_drain_plan(tau_ws_plan *out, const tau_ws_old_ns_input *in);

/** A stable name for a step kind ("revoke-service-account"). */
const char *tau_ws_drain_step_name(tau_ws_step_kind kind);

#endif /* TAU_AGGREGATOR_WORKSPACE_DRAIN_H */
