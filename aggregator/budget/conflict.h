/*
 * budget/conflict.h - P4: what stands in the way of the automatic team
 * budget (docs/budget.md).
 *
 * One pure function looks at the pool's counted nodes and the Kueue and
 * TauGrid objects the controller observed, and lists every conflict: a
 * foreign ResourceFlavor that selects pool nodes, a foreign ClusterQueue or
 * Cohort holding reservations or quota on pool flavors, legacy GPU
 * discovery, explicit quotas in capacity mode, a missing capacity team.  It
 * only reports (the controller zeroes the budget and sets conditions); it
 * never divides the pool or rewrites anybody's objects.
 */
#ifndef TAU_AGGREGATOR_BUDGET_CONFLICT_H
#define TAU_AGGREGATOR_BUDGET_CONFLICT_H

#include "tau/nodefacts.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Reason codes, in the order conflicts are listed. */
typedef enum tau_budget_conflict_reason {
	/** (a) a ResourceFlavor we do not own whose nodeLabels select counted pool nodes */
	TAU_BUDGET_CONFLICT_FLAVOR_SELECTS_POOL = 0,
	/** (b) a ClusterQueue we do not own with reservations on a pool flavor */
	TAU_BUDGET_CONFLICT_EXTERNAL_RESERVATION,
	/** (b) a ClusterQueue or Cohort we do not own with non-zero nominalQuota on a pool flavor
	 */
	TAU_BUDGET_CONFLICT_EXTERNAL_QUOTA,
	/** a ClusterQueue or Cohort we do not own that joins the team Cohort (borrows its budget)
	 */
	TAU_BUDGET_CONFLICT_FOREIGN_MEMBER,
	/** (c) a ClusterQueue labelled tau.azure.com/discover-gpu-flavors=true */
	TAU_BUDGET_CONFLICT_LEGACY_DISCOVERY,
	/** (d) spec.quota on the capacity team or one of its workspaces */
	TAU_BUDGET_CONFLICT_EXPLICIT_QUOTA,
	/** (e) capacityTeamRef names a TauTeam that does not exist */
	TAU_BUDGET_CONFLICT_TEAM_NOT_FOUND,
} tau_budget_conflict_reason;

/**
 * A counted pool node and its labels, given either as JSON (metadata.labels)
 * or as the inventory's facts (when `labels` is NULL).  Borrowed.
 */
typedef struct tau_budget_node {
	const char *name;            /**< NULL: facts->name */
	const cJSON *labels;         /**< metadata.labels, or NULL to use facts */
	const tau_node_facts *facts; /**< used when labels is NULL; NULL too: no labels */
} tau_budget_node;

/** A workspace of the capacity team (include those being deleted).  Borrowed. */
typedef struct tau_budget_workspace {
	const char *name;
	const char *uid;    /**< metadata.uid: owner of its ClusterQueue */
	const cJSON *quota; /**< spec.quota; NULL (or JSON null) when absent */
} tau_budget_workspace;

/** Everything the check looks at.  All borrowed; arrays may be NULL when their count is 0. */
typedef struct tau_budget_conflict_input {
	const tau_budget_node *nodes; /**< the counted pool nodes */
	size_t n_nodes;
	const char *const
	        *own_flavors; /**< our desired flavor names (plan flavors, retained too) */
	size_t n_own_flavors;
	const char *cluster_uid;     /**< TauCluster UID: owner of our ResourceFlavors */
	const cJSON *const *flavors; /**< observed ResourceFlavors */
	size_t n_flavors;
	const cJSON *const *cluster_queues; /**< observed ClusterQueues, spec and status */
	size_t n_cluster_queues;
	const cJSON *const *cohorts; /**< observed Cohorts */
	size_t n_cohorts;
	const char *team;        /**< TauCluster spec.queues.capacityTeamRef.name */
	bool team_exists;        /**< whether that TauTeam exists */
	const char *team_uid;    /**< its metadata.uid (NULL when it does not exist) */
	const cJSON *team_quota; /**< its spec.quota; NULL (or JSON null) when absent */
	const tau_budget_workspace *workspaces; /**< the team's workspaces */
	size_t n_workspaces;
} tau_budget_conflict_input;

/** One conflict. */
typedef struct tau_budget_conflict {
	tau_budget_conflict_reason reason;
	const char *reason_code; /**< CamelCase condition reason, e.g. "ForeignFlavorSelectsPool" */
	const char *kind;        /**< kind of the offending object, e.g. "ResourceFlavor" */
	char *name;              /**< its name */
	char *message;           /**< a sentence naming the objects involved */
} tau_budget_conflict;

/** The conflicts found, sorted by reason, then kind, then name.  Read-only. */
typedef struct tau_budget_conflicts {
	tau_budget_conflict *items;
	size_t n;
	size_t cap; /**< private */
} tau_budget_conflicts;

/**
 * Find every conflict (P4).
 *
 * Ownership follows tau_budget_ownership_of: a ResourceFlavor is ours when
 * owned with cluster_uid; the Cohort "tau-team-<team>" when owned with
 * team_uid; a ClusterQueue "tau-ws-<ws>" when owned with that workspace's
 * uid, or when it carries this team's full workspace-queue metadata (team and
 * workspace labels, workspace-UID annotation) and the team has no workspace
 * <ws>: the queue of a workspace that just left, removed by the controller.  Pool flavors are
 * own_flavors plus the ResourceFlavors of (a).  An RF with no nodeLabels selects every node.
 *
 * @param out  receives the list (possibly empty; tau_budget_conflicts_free);
 *             untouched on failure.
 * @param in   the inputs.
 * @return 0; -TAU_EINVAL (NULL input or arrays, or a quantity that does not
 *         parse); -TAU_ETYPE for an observed object whose fields cannot be
 *         read.  The message names the object; the controller treats either
 *         as a pool that cannot be validated (P5).  -TAU_ENOMEM.
 */
int tau_budget_conflicts_find(tau_budget_conflicts **out, const tau_budget_conflict_input *in);

/** Free a list; NULL is a no-op. */
void tau_budget_conflicts_free(tau_budget_conflicts *list);

/**
 * One line for a condition message: "" for none, the message of a single
 * conflict, or "N conflicts: <first message>; <second>; ..." shortened to fit.
 *
 * @param buf  receives the NUL-terminated text (truncated to len).
 */
void tau_budget_conflicts_summary(char *buf, size_t len, const tau_budget_conflicts *list);

/** The CamelCase reason code of a reason. */
const char *tau_budget_conflict_reason_code(tau_budget_conflict_reason reason);

#endif /* TAU_AGGREGATOR_BUDGET_CONFLICT_H */
