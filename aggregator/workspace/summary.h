/*
 * workspace/summary.h - what the rest of the aggregator may know of the
 * workspace controller: workspace summaries read from its informer cache.
 *
 * This is the only workspace header aggregator/inventory/ includes.  The
 * cache is filled on every replica (informers run whether or not this
 * replica leads), so followers answer ListWorkspaces and GetWorkspace too.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_SUMMARY_H
#define TAU_AGGREGATOR_WORKSPACE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct tau_ws_controller tau_ws_controller;

/** One condition of a summary. */
typedef struct tau_ws_summary_condition {
	char *type, *status, *reason, *message;
	/** lastTransitionTime in ms since the epoch; 0 when absent or unparseable. */
	int64_t last_transition_unix_ms;
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
 * Summarise a TauWorkspace object (pure).
 * @return 0, -TAU_EINVAL (no metadata.name), -TAU_ENOMEM.  out untouched on failure.
 */
int tau_ws_summary_from_json(tau_ws_summary *out, const cJSON *obj);

/** Free what a summary owns (not the struct itself). */
void tau_ws_summary_clear(tau_ws_summary *s);

/** Free an array from tau_ws_controller_list; NULL is a no-op. */
void tau_ws_summaries_free(tau_ws_summary *s, size_t n);

/** True once every informer of the controller has listed once (any replica). */
bool tau_ws_controller_synced(tau_ws_controller *ctl);

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

#endif /* TAU_AGGREGATOR_WORKSPACE_SUMMARY_H */
