/*
 * budget/decide.h - one reconcile of the team capacity budget, as a pure
 * function from everything observed to everything to do (docs/budget.md).
 *
 * The controller (budget/controller.c) gathers the inputs from its informer
 * caches and the inventory, calls tau_budget_decide, then carries out the
 * decision: the writes in order (ResourceFlavors, the Cohort, the workspace
 * ClusterQueues, then removals), the status of the TauCluster and of each
 * TauTeam that changed, and the Events.  Nothing here reads a clock, a cache
 * or the network, so every rule (P1-P8) is a table test.
 */
#ifndef TAU_AGGREGATOR_BUDGET_DECIDE_H
#define TAU_AGGREGATOR_BUDGET_DECIDE_H

#include "budget/conflict.h"
#include "budget/desired.h"
#include "budget/objects.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* QuotaReady / BudgetReady reasons (docs/budget.md). */
#define TAU_BUDGET_REASON_APPLIED       "BudgetApplied"
#define TAU_BUDGET_REASON_WAITING       "WaitingForInventory"
#define TAU_BUDGET_REASON_ZEROED        "BudgetZeroed"
#define TAU_BUDGET_REASON_CONFLICT      "ConflictDetected"
#define TAU_BUDGET_REASON_LIMITS        "LimitsExceeded"
#define TAU_BUDGET_REASON_OWNERSHIP     "OwnershipConflict"
#define TAU_BUDGET_REASON_LEAVE_BLOCKED "LeaveBlocked"
#define TAU_BUDGET_REASON_OBSERVE_ONLY  "ObserveOnly"
#define TAU_BUDGET_REASON_NO_TEAM       "NoCapacityTeam"
/** TauCluster spec.deletionPolicy values (docs/api.md). */
#define TAU_BUDGET_POLICY_RETAIN "Retain"
#define TAU_BUDGET_POLICY_DELETE "DeleteManaged"
/** A workspace's QuotaReady while its ClusterQueue is held instead of deleted. */
#define TAU_BUDGET_REASON_QUEUE_HELD "QueueHeld"

/** Most disagreeing nodes the NodeTruthAgrees condition names. */
#define TAU_BUDGET_TRUTH_NODES 3

/** A counted node whose agent disagrees with its Node: its first failing agent.* rule. */
typedef struct tau_budget_truth_node {
	const char *node;
	const char *rule;        /**< "agent.gpu-health" */
	const char *detail;      /**< what the rule says */
	unsigned int more_rules; /**< further failing rules of the node */
} tau_budget_truth_node;

/** The counted nodes' agents against their Nodes (TauCluster NodeTruthAgrees). */
typedef struct tau_budget_truth {
	size_t reporting;   /**< counted nodes whose agent reports node-local facts */
	size_t disagreeing; /**< of them, with a failing agent.* rule */
	size_t n_nodes;     /**< the first few disagreeing, in name order */
	tau_budget_truth_node nodes[TAU_BUDGET_TRUTH_NODES];
} tau_budget_truth;

/** Most unusable DeviceClasses the DRAClassesUsable condition names. */
#define TAU_BUDGET_DRA_CLASSES 4

/** A DeviceClass that maps to a quota resource and counts nothing. */
typedef struct tau_budget_dra_class {
	const char *name;
	const char *reason; /**< "class NAME: spec.selectors[0]: ..." (quotes the expression) */
} tau_budget_dra_class;

/** The DeviceClasses DRA devices count through (TauCluster DRAClassesUsable). */
typedef struct tau_budget_dra {
	size_t mapped;    /**< classes that map to a quota resource */
	size_t unusable;  /**< of them, counting nothing */
	size_t n_classes; /**< the first few unusable, in name order */
	tau_budget_dra_class classes[TAU_BUDGET_DRA_CLASSES];
	const char *kueue_error; /**< Kueue's configuration cannot be read; NULL when it can */
} tau_budget_dra;

/** What one reconcile sees.  Everything is borrowed. */
typedef struct tau_budget_observed {
	/* The inventory. */
	bool established;         /**< the pool's sync gate is open now */
	bool ever_established;    /**< it was open at least once in this process */
	const char *pool_problem; /**< why the pool cannot be validated now; NULL when valid */
	const tau_budget_pool *pool;
	size_t nodes_observed; /**< labelled nodes the inventory knows */
	size_t nodes_counted;  /**< of those, counted in the pool */
	/** Node truth against the Nodes; NULL: not known (NodeTruthAgrees Unknown). */
	const tau_budget_truth *truth;
	/** The DeviceClasses' usability; NULL: not known (DRAClassesUsable Unknown). */
	const tau_budget_dra *dra;
	/* The counted pool nodes, for P4's flavor overlap check. */
	const tau_budget_node *nodes;
	size_t n_nodes;
	/** An error reading flavors, queues or teams (an informer not synced, ...). */
	const char *read_problem;
	/* The API (borrowed objects as the caches hold them). */
	const cJSON *cluster;     /**< the TauCluster "cluster"; NULL when absent */
	tau_budget_objects api;   /**< TauTeams, TauWorkspaces and the Kueue objects */
	bool multiple_workspaces; /**< feature gate MultipleWorkspaces */
	/** Where this aggregator runs (TauCluster status.systemNamespace, for `tau`); may be NULL.
	 */
	const char *system_namespace;
	const char *now; /**< RFC 3339, for condition transition times */
} tau_budget_observed;

/** One write to the API, in the order given. */
typedef struct tau_budget_write {
	tau_budget_kind kind;
	char *name;
	bool remove; /**< delete, with `uid` as precondition */
	bool create; /**< create `body`; else update (PUT) `body` */
	cJSON *body; /**< NULL for a removal */
	char *uid;   /**< removal precondition */
	char *why;   /**< for the log: what differed, or why it goes */
} tau_budget_write;

/** A status to write (only when it differs from the observed one). */
typedef struct tau_budget_status {
	const cJSON
	        *object; /**< the TauTeam, TauWorkspace or TauCluster it belongs to (borrowed) */
	cJSON *status;   /**< the whole new .status */
} tau_budget_status;

/** A Kubernetes Event to record. */
typedef struct tau_budget_event {
	const cJSON *object; /**< regarding (borrowed from input) */
	const char *type;    /**< "Normal" or "Warning" */
	const char *reason;  /**< BudgetZeroed, BudgetRestored, ConflictDetected, ConflictCleared,
	                        LeaveRefused; for an explicit team its Degraded QuotaReady reason
	                        or QuotaRestored */
	char *message;
	/** Recorded once the writes succeeded, before the statuses: it reports a write (Adopted)
	 * that a pass retried from fresh state does not repeat. */
	bool on_write;
} tau_budget_event;

/** Everything one reconcile decided. */
typedef struct tau_budget_decision {
	tau_budget_write *writes;
	size_t n_writes;
	tau_budget_status *statuses;
	size_t n_statuses;
	tau_budget_event *events;
	size_t n_events;
	const char *state; /**< the capacity team's QuotaReady reason (static) */
	char *summary;     /**< one line for the log */
} tau_budget_decision;

/**
 * Decide one reconcile (docs/budget.md, rules P1-P8).
 *
 * @param out  receives a new decision (tau_budget_decision_free); untouched on failure.
 * @return 0; -TAU_EINVAL (missing input); -TAU_ENOMEM.  A budget that cannot
 *         be planned is not an error: it is a decision with a condition.
 */
int tau_budget_decide(tau_budget_decision **out, const tau_budget_observed *in);

/** Free a decision; NULL is a no-op. */
void tau_budget_decision_free(tau_budget_decision *d);

#endif /* TAU_AGGREGATOR_BUDGET_DECIDE_H */
