/*
 * budget/controller.h - the team capacity budget controller (docs/budget.md).
 *
 * One key ("budget"), reconciled on the elected leader only, on the shared
 * controller runtime (controller/runtime.h): informers on the TauCluster,
 * TauTeams and TauWorkspaces of the system namespace and on Kueue's
 * ResourceFlavors, Cohorts and ClusterQueues; every event of theirs, every
 * pool change (tau_budget_controller_trigger) and a periodic resync make one
 * coalesced pass, which reads the caches and the inventory, decides
 * (budget/decide.h) and carries the decision out.
 *
 * The inventory is reached through a callback so this folder does not know
 * the inventory's internals; main.c wires it.
 */
#ifndef TAU_AGGREGATOR_BUDGET_CONTROLLER_H
#define TAU_AGGREGATOR_BUDGET_CONTROLLER_H

#include "budget/conflict.h"
#include "controller/runtime.h"
#include "budget/decide.h"
#include "budget/desired.h"

#include "tau/buf.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tau_pool_snapshot tau_pool_snapshot;

/** What the inventory tells the budget, copied out under its lock. */
typedef struct tau_budget_inventory {
	bool established; /**< the sync gate is open */
	char *problem;    /**< why the pool cannot be validated now (malloc'd); NULL when valid */
	tau_budget_pool *pool;  /**< the flavors and their sums (owned) */
	tau_budget_node *nodes; /**< counted nodes: the snapshot's facts (names, labels) */
	size_t n_nodes;
	size_t nodes_observed;       /**< labelled nodes known, counted or not */
	tau_pool_snapshot *snapshot; /**< owns what `nodes` point at (freed with the inventory) */
	tau_budget_truth truth;      /**< its strings point into `snapshot` */
	tau_budget_dra dra;          /**< its strings point into `snapshot` */
} tau_budget_inventory;

/** Free what a snapshot holds and zero it. */
void tau_budget_inventory_clear(tau_budget_inventory *inv);

/**
 * Take what the budget needs from an inventory snapshot (inventory/snapshot.h), keeping the
 * snapshot for the nodes' names and labels (no copy per node: one runs every pass).  Takes
 * ownership of `snap` (freed on failure as well).
 * @return 0, -TAU_EINVAL, -TAU_ENOMEM (out untouched on failure).
 */
int tau_budget_inventory_from_snapshot(tau_budget_inventory *out, tau_pool_snapshot *snap);

/**
 * Fill `out` (zeroed by the caller) from the inventory.  Thread-safe.
 * @return 0 or a negative error (the pass then zeroes an established budget).
 */
typedef int (*tau_budget_inventory_fn)(void *arg, tau_budget_inventory *out);

typedef struct tau_budget_controller tau_budget_controller;

/** Options.  Strings are copied. */
typedef struct tau_budget_controller_config {
	tau_kube_client *client;           /**< borrowed */
	tau_kube_loop *loop;               /**< borrowed; informers attach to it */
	const char *system_namespace;      /**< where TauTeams and TauWorkspaces live */
	uint64_t coalesce_ms;              /**< 0 = 200 */
	uint64_t resync_ms;                /**< 0 = 5 min */
	bool multiple_workspaces;          /**< feature gate MultipleWorkspaces */
	tau_budget_inventory_fn inventory; /**< required */
	void *inventory_arg;
} tau_budget_controller_config;

/**
 * Make the controller and its informers (not started).
 * @return 0, -TAU_EINVAL (missing client, loop, namespace or inventory), -TAU_ENOMEM.
 */
int tau_budget_controller_new(tau_budget_controller **out, const tau_budget_controller_config *cfg);

/** Start the informers (every replica).  Idempotent. */
void tau_budget_controller_start_informers(tau_budget_controller *b);

/** Leadership gained: start reconciling.  @return 0 or -TAU_EIO. */
int tau_budget_controller_start(tau_budget_controller *b);

/** Leadership lost: stop reconciling (a pass in progress finishes).  Idempotent. */
void tau_budget_controller_stop(tau_budget_controller *b);

/** "Look again" from any thread (the pool changed).  Coalesced. */
void tau_budget_controller_trigger(tau_budget_controller *b);

/** Counters for /metrics and tests. */
typedef struct tau_budget_stats {
	uint64_t passes;        /**< reconcile passes */
	uint64_t writes;        /**< Kueue objects created, updated or deleted */
	uint64_t status_writes; /**< TauTeam / TauCluster status updates */
	uint64_t zeroed;        /**< 1 while the capacity team's budget is zeroed */
} tau_budget_stats;

/** Copy the counters. */
void tau_budget_controller_stats(tau_budget_controller *b, tau_budget_stats *out);

/** The runtime the controller runs on (lent), for its metrics (tau_controller_metrics_write). */
tau_controller *tau_budget_controller_runtime(tau_budget_controller *b);

/**
 * Append the budget's metrics (budget/metrics.h) from the controller's caches to `out`.
 * `b` may be NULL (no controller): the families are rendered with zero values.
 * Thread-safe.  @return 0 or a negative error.
 */
int tau_budget_controller_metrics(tau_budget_controller *b, tau_buf *out);

/** Free; call with the kube loop stopped.  NULL is a no-op. */
void tau_budget_controller_free(tau_budget_controller *b);

#endif /* TAU_AGGREGATOR_BUDGET_CONTROLLER_H */
