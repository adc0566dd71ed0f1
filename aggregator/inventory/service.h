/*
 * service.h - the aggregator's shared state and its gRPC services:
 * InventoryService.Report (authenticated agent streams) and the inventory
 * queries of QueryService (ListNodes, GetNode, GetPool, WatchPool,
 * ExplainNode) plus ListWorkspaces and GetWorkspace, which read the
 * workspace controller's cache where one runs (the leader).
 *
 * One state (node store, pool, streams, pool watchers) is guarded by one
 * mutex; every update costs O(one node), the pool snapshot is rebuilt at
 * most once per coalescing window.  Threads that touch it: the rpc CQ
 * thread (reports, queries), the auth workers (TokenReview, then the reports
 * that waited for it), the kube loop (Node and TauCluster events) and the
 * publisher (sync-gate timer, coalesced WatchPool pushes).
 */
#ifndef TAU_AGGREGATOR_SERVICE_H
#define TAU_AGGREGATOR_SERVICE_H

#include "auth.h"
#include "drawatch.h"
#include "keys.h"
#include "query_auth.h"
#include "workspace/summary.h"

#include "tau/kueueconfig.h"
#include "tau/rpc_server.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct tau_inventory tau_inventory;

/** Settings; zero takes the default in brackets. */
typedef struct tau_inventory_config {
	const char *agent_user;    /**< "system:serviceaccount:NS:NAME" (required) */
	tau_auth_review_fn review; /**< TokenReview (required) */
	void *review_ud;
	int heartbeat_interval_s; /**< told to agents in every ack [30] */
	int64_t sync_timeout_ms;  /**< initial sync timeout of the gate [60000] */
	int auth_threads;         /**< TokenReview workers [4] */
	int64_t review_ttl_ms;    /**< cache time of a review whose token has no exp [300000] */
	int64_t negative_ttl_ms;  /**< cache time of a refused token [10000] */
	int coalesce_ms;          /**< WatchPool coalescing window [20] */
	size_t auth_cache_max;    /**< cached reviews [65536] */
	size_t max_pool_watchers; /**< open WatchPool streams; more are RESOURCE_EXHAUSTED [1024] */
	/** Report token reviews queued or running at once; more are RESOURCE_EXHAUSTED [256] */
	size_t max_pending_reviews;
	/** ... of those, from one peer (TLS identity, else host); more are RESOURCE_EXHAUSTED [8]
	 */
	size_t max_reviews_per_peer;
	/** The issuer's keys (borrowed, outlives the state): a Report token they verify is
	 * admitted at once and confirmed by a TokenReview afterwards.  NULL: every stream waits
	 * for its review. */
	tau_auth_keys *keys;
	/** Locally admitted streams waiting for their confirming review; past it a stream waits
	 * for its review before admission [65536] */
	size_t max_pending_confirms;
	/** Guards QueryService (borrowed, outlives the state); NULL: anonymous queries. */
	tau_query_auth *query_auth;
} tau_inventory_config;

/** Create the state.  @return 0, -TAU_EINVAL (config), -TAU_ENOMEM. */
int tau_inventory_new(tau_inventory **out, const tau_inventory_config *cfg);

/**
 * Register Report and the inventory queries on `srv` (before it starts); /metrics then also
 * reports the server's own refusals (tau_rpc_server_stats_get).
 */
int tau_inventory_register(tau_inventory *a, tau_rpc_server *srv);

/** Start the auth workers and the publisher.  @return 0 or -TAU_EIO. */
int tau_inventory_start(tau_inventory *a);

/** Stop the threads (after the rpc server has shut down).  Idempotent. */
void tau_inventory_stop(tau_inventory *a);

/** Stop and free; NULL is a no-op. */
void tau_inventory_free(tau_inventory *a);

/* ---- what the kube side tells the state (thread-safe) ---- */

/** A Node was added or changed (the object is lent; only tau_node_facts are kept). */
void tau_inventory_node_upsert(tau_inventory *a, const cJSON *node);
/** A Node was deleted. */
void tau_inventory_node_delete(tau_inventory *a, const cJSON *node);
/** The Node watch delivered its initial list. */
void tau_inventory_nodes_synced(tau_inventory *a);
/**
 * The TauCluster `cluster` changed (NULL: it does not exist).  Its
 * spec.nodes.selector (equality map) filters the pool; absent: every node.
 */
void tau_inventory_cluster(tau_inventory *a, const cJSON *cluster);
/**
 * A ResourceSlice or DeviceClass appeared, changed or (`deleted`) went away (lent; the API's
 * JSON).  The DRA store keeps it (one the API would refuse is logged and counts nothing) and
 * every node is recounted with it.
 */
void tau_inventory_dra_object(tau_inventory *a, tau_inventory_dra_kind kind, const cJSON *obj,
                              bool deleted);
/**
 * Kueue's Configuration now stands as `cfg` (lent; NULL: none), or cannot be read (`error`
 * set): then no DRA device counts until it can (fail closed).
 */
void tau_inventory_dra_kueue(tau_inventory *a, const tau_kueue_config *cfg, const char *error);
/**
 * Tell the state how to ask whether the Node watch has delivered its initial
 * list; the publisher's tick asks until it has (then calls
 * tau_inventory_nodes_synced itself).  `probe` must be cheap and thread-safe.
 */
void tau_inventory_set_sync_probe(tau_inventory *a, bool (*probe)(void *ud), void *ud);
/**
 * Answer ListWorkspaces/GetWorkspace from `ctl`'s cache (borrowed), or
 * UNAVAILABLE when NULL (a follower, or no controller configured).  Set it
 * to NULL before freeing the controller: this waits for queries reading it.
 */
void tau_inventory_set_workspaces(tau_inventory *a, tau_ws_controller *ctl);
/** This replica leads (or no longer does). */
void tau_inventory_set_leader(tau_inventory *a, bool leader);

/* ---- state for the HTTP side (thread-safe) ---- */

/** True once the sync gate opened. */
bool tau_inventory_established(tau_inventory *a);
/** Render /metrics.  @param out receives a malloc'd string.  @return 0 or -TAU_ENOMEM. */
int tau_inventory_metrics(tau_inventory *a, char **out);

#endif /* TAU_AGGREGATOR_SERVICE_H */
