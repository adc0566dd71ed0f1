/*
 * wscontroller.h - the TauWorkspace reconcile loop (the I/O side of
 * wsnamespace/wsdesired/wsstatus/wsdrain).
 *
 * Informers on the caller's kube loop watch TauWorkspaces in the system
 * namespace, the TauCluster `cluster`, Namespaces, ClusterQueues and the
 * objects the aggregator owns (RoleBindings, LocalQueues, ServiceAccounts
 * carrying app.kubernetes.io/managed-by=taugrid); every event queues the
 * workspace names it concerns, and one worker thread reconciles them,
 * level-triggered.  A read API lends the query service workspace summaries
 * from the informer cache.
 */
#ifndef TAU_AGGREGATOR_WSCONTROLLER_H
#define TAU_AGGREGATOR_WSCONTROLLER_H

#include "namespace.h"

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
	 *  Both set is an error.  Neither: TauCluster's namespaceAllowlist.selector. */
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

typedef struct tau_ws_controller tau_ws_controller;

/**
 * Make a controller and its informers (not started).
 * @return 0; -TAU_EINVAL (no client/loop, both allowlist sources, a bad
 *         selector, an unreadable or malformed map file); -TAU_ENOMEM.
 *         The thread error names the cause.
 */
int tau_ws_controller_new(tau_ws_controller **out, const tau_ws_controller_opts *opts);

/**
 * Start the informers, the worker thread and (with an allowlist file) the
 * file watcher.  The caller runs the kube loop.
 * @return 0, -TAU_EIO (thread or inotify failure).
 */
int tau_ws_controller_start(tau_ws_controller *ctl);

/** Stop the worker and watcher and wait for them.  Idempotent. */
void tau_ws_controller_stop(tau_ws_controller *ctl);

/** Free the controller (stops it first).  Call with the kube loop not running.  NULL: no-op. */
void tau_ws_controller_free(tau_ws_controller *ctl);

/** True once every informer has synced. */
bool tau_ws_controller_synced(tau_ws_controller *ctl);

/** Reconcile passes run so far (tests). */
uint64_t tau_ws_controller_passes(tau_ws_controller *ctl);

/** One condition of a summary. */
typedef struct tau_ws_summary_condition {
	char *type, *status, *reason, *message;
} tau_ws_summary_condition;

/** What the query service shows for a workspace.  Every string is owned (may be NULL). */
typedef struct tau_ws_summary {
	char *name;
	char *phase;          /**< status.phase; NULL before the first status */
	char *namespace_name; /**< status.target.resolvedNamespace */
	char *local_queue;    /**< status.queue.localQueue */
	char *cluster_queue;  /**< status.queue.clusterQueue */
	int64_t generation;
	int64_t observed_generation;
	bool deleting;
	tau_ws_summary_condition *conditions;
	size_t n_conditions;
} tau_ws_summary;

/**
 * Summarise a TauWorkspace object (pure; used by the read API).
 * @return 0, -TAU_EINVAL (no metadata.name), -TAU_ENOMEM.  out untouched on failure.
 */
int tau_ws_summary_from_json(tau_ws_summary *out, const cJSON *obj);

/** Free what a summary owns (not the struct itself). */
void tau_ws_summary_clear(tau_ws_summary *s);

/** Free an array from tau_ws_controller_list; NULL is a no-op. */
void tau_ws_summaries_free(tau_ws_summary *s, size_t n);

/**
 * Every workspace in the cache, sorted by name.  Thread-safe.
 * @param out  receives a new array (tau_ws_summaries_free), NULL when n is 0.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_ws_controller_list(tau_ws_summary **out, size_t *n, tau_ws_controller *ctl);

/**
 * One workspace from the cache.  Thread-safe.
 * @param out  filled (tau_ws_summary_clear); untouched on failure.
 * @return 0, -TAU_ENOTFOUND, -TAU_ENOMEM.
 */
int tau_ws_controller_get(tau_ws_summary *out, tau_ws_controller *ctl, const char *name);

/**
 * Parse a namespace map file: one JSON object of workspace -> namespace
 * strings (pure).  @param out receives the object (cJSON_Delete).
 * @return 0, -TAU_EINVAL (not an object, a non-string or invalid value), -TAU_ETOOBIG.
 */
int tau_ws_map_parse(cJSON **out, const char *buf, size_t len);

#endif /* TAU_AGGREGATOR_WSCONTROLLER_H */
