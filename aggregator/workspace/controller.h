/*
 * workspace/controller.h - the TauWorkspace controller (the I/O side of the
 * pure modules namespace, desired, drain and status), built on the shared
 * controller runtime (controller/runtime.h).
 *
 * Informers on the caller's kube loop watch TauWorkspaces in the system
 * namespace, the TauCluster `cluster`, Namespaces, ClusterQueues and the
 * objects the aggregator owns (RoleBindings, LocalQueues, ServiceAccounts
 * carrying app.kubernetes.io/managed-by=taugrid); every event queues the
 * workspace names it concerns, and the runtime's worker reconciles them,
 * level-triggered, only on the leader.  The informers run on every replica,
 * so summary.h answers reads everywhere.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_CONTROLLER_H
#define TAU_AGGREGATOR_WORKSPACE_CONTROLLER_H

#include "controller/runtime.h"
#include "workspace/namespace.h"
#include "workspace/summary.h"

#include "tau/kube.h"
#include "tau/kube_informer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/** Default system namespace. */
#define TAU_WS_DEFAULT_SYSTEM_NAMESPACE "tau-system"
/** Default resync period: every workspace is reconciled at least this often. */
#define TAU_WS_DEFAULT_RESYNC_MS (5u * 60u * 1000u)
/** Reason on every Operator-mode workspace while two allowlist sources are set. */
#define TAU_WS_REASON_ALLOWLIST_CONFLICT "AllowlistSourceConflict"

/** Controller options.  Strings are copied by tau_ws_controller_new. */
typedef struct tau_ws_controller_opts {
	tau_kube_client *client;      /**< borrowed; used by the worker for every write */
	tau_kube_loop *loop;          /**< borrowed; informers attach to it; caller runs it */
	const char *system_namespace; /**< NULL = TAU_WS_DEFAULT_SYSTEM_NAMESPACE */
	/** true: ns_mode decides (a flag); false: TauCluster spec.workspaces.namespaceMode. */
	bool ns_mode_set;
	tau_ws_ns_mode ns_mode;
	/** Operator allowlist source: a namespace label selector (followed live) ... */
	const char *allowlist_selector;
	/** ... or a file holding a JSON array of names, reloaded when its folder changes.
	 *  Both set is an error.  Neither: TauCluster's namespaceAllowlist (selector or
	 *  file, followed the same way); a flag and a TauCluster source at once is refused
	 *  with the AllowlistSourceConflict reason on every Operator-mode workspace. */
	const char *allowlist_file;
	/** A JSON object {"workspace": "namespace"}; overrides TauCluster's namespaceMap. */
	const char *namespace_map_file;
	/** ClusterRole bound for researchers; NULL = tau-researcher. */
	const char *researcher_cluster_role;
	uint64_t resync_ms;     /**< 0 = TAU_WS_DEFAULT_RESYNC_MS */
	uint64_t drain_poll_ms; /**< requeue while draining; 0 = 2000 */
	/** Feature gate MultipleWorkspaces (Alpha): no v0 block, every workspace may be active. */
	bool multiple_workspaces;
} tau_ws_controller_opts;

/**
 * Make a controller and its informers (not started).
 * @return 0; -TAU_EINVAL (no client/loop, both allowlist sources, a bad
 *         selector, an unreadable or malformed map file); -TAU_ENOMEM.
 *         The thread error names the cause.
 */
int tau_ws_controller_new(tau_ws_controller **out, const tau_ws_controller_opts *opts);

/**
 * Start the informers (every replica: the read API answers from them) and,
 * with an allowlist file flag, the file watcher.  The caller runs the kube
 * loop.  Idempotent.  @return 0, -TAU_EIO (watcher thread failure).
 */
int tau_ws_controller_start_informers(tau_ws_controller *ctl);

/**
 * Start reconciling (the leader): starts the informers if needed and the
 * worker, which waits for the caches to sync.  @return 0, -TAU_EIO.
 */
int tau_ws_controller_start(tau_ws_controller *ctl);

/** Stop reconciling and wait for a pass in progress.  Idempotent. */
void tau_ws_controller_stop(tau_ws_controller *ctl);

/** Free the controller (stops it first).  Call with the kube loop not running.  NULL: no-op. */
void tau_ws_controller_free(tau_ws_controller *ctl);

/**
 * Wait until every informer has listed once, at most `timeout_ms`.
 * @return 0 or -TAU_ETIMEOUT (the thread error names what is missing).
 */
int tau_ws_controller_wait_synced(tau_ws_controller *ctl, uint64_t timeout_ms);

/** Reconcile passes run so far (tests). */
uint64_t tau_ws_controller_passes(tau_ws_controller *ctl);

/** The runtime the controller runs on (lent), for its metrics (tau_controller_metrics_write). */
tau_controller *tau_ws_controller_runtime(tau_ws_controller *ctl);

/**
 * Parse a namespace map file: one JSON object of workspace -> namespace
 * strings (pure).  @param out receives the object (cJSON_Delete).
 * @return 0, -TAU_EINVAL (not an object, a non-string or invalid value), -TAU_ETOOBIG.
 */
int tau_ws_map_parse(cJSON **out, const char *buf, size_t len);

#endif /* TAU_AGGREGATOR_WORKSPACE_CONTROLLER_H */
