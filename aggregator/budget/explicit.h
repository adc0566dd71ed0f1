/*
 * budget/explicit.h - explicit-quota teams (docs/budget.md "Explicit-quota
 * teams", rules E1-E10 of docs/api.md): a TauTeam whose spec.quota is split
 * into workspace guarantees (ClusterQueue nominal quota) and a remainder (the
 * team's root Cohort), checked against the discovered capacity, never
 * reduced below active reservations.
 *
 * Pure: inputs are the observed objects, outputs the desired objects, the
 * refusals and the team's state.  decide.c turns them into writes and
 * statuses.  Quantities are exact (tau_quantity), keyed by flavor and
 * resource ("cells", budget/cells.h).
 */
#ifndef TAU_AGGREGATOR_BUDGET_EXPLICIT_H
#define TAU_AGGREGATOR_BUDGET_EXPLICIT_H

#include "budget/cells.h"
#include "budget/desired.h"
#include "budget/objects.h"

#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* QuotaReady reasons of an explicit team (docs/budget.md). */
#define TAU_BUDGET_REASON_QUOTA_APPLIED     "QuotaApplied"
#define TAU_BUDGET_REASON_QUOTA_INVALID     "QuotaInvalid"
#define TAU_BUDGET_REASON_CAPACITY          "CapacityExceeded"
#define TAU_BUDGET_REASON_FLAVOR_NOT_READY  "FlavorNotReady"
#define TAU_BUDGET_REASON_DELETION_BLOCKED  "DeletionBlocked"
#define TAU_BUDGET_REASON_REDUCTION_BLOCKED "ReductionBlocked"
#define TAU_BUDGET_REASON_MIGRATION_BLOCKED "MigrationBlocked"
#define TAU_BUDGET_REASON_TEAM_NOT_READY    "TeamNotReady"

/**
 * Event of an explicit team that is Ready again after being Degraded.  Becoming Degraded is a
 * Warning Event whose reason is the QuotaReady reason (docs/budget.md).
 */
#define TAU_BUDGET_EVENT_QUOTA_RESTORED "QuotaRestored"

/** The finalizer on TauTeams (E9). */
#define TAU_BUDGET_TEAM_FINALIZER "tau.azure.com/team-cleanup"
/** Does the TauTeam carry TAU_BUDGET_TEAM_FINALIZER? */
bool tau_budget_has_team_finalizer(const cJSON *team);
/** Label that marks an explicit team's Cohort (never retired as an automatic budget, P7). */
#define TAU_BUDGET_LABEL_QUOTA_MODE    "tau.azure.com/quota-mode"
#define TAU_BUDGET_QUOTA_MODE_EXPLICIT "explicit"

/**
 * The namespace a workspace's ClusterQueue selects: its resolved namespace
 * (status.target.resolvedNamespace), or NULL when it gets no queue (not
 * resolved yet, not a DNS-1123 label, or blocked by the v0 rule unless `multiple`).
 */
const char *tau_budget_workspace_namespace(const cJSON *ws, bool multiple);

/** Everything the decision for one team looks at.  All borrowed. */
typedef struct tau_budget_explicit_input {
	const cJSON *team;               /**< the TauTeam (not the capacity team) */
	const tau_budget_pool *capacity; /**< the discovered pool; NULL: not established */
	/**
	 * The team whose automatic budget claims the whole pool in this pass (the capacity team
	 * named by capacityTeamRef, or the previous one that may not leave yet, P7); NULL: none.
	 * While set, no explicit team grows on a pool flavor, whatever that team's Cohort holds
	 * now (zeroed or not): one ledger per pass, so the two budgets never overlap.
	 */
	const char *pool_claimed_by;
	const char *cluster_uid; /**< owner of our ResourceFlavors */
	/**
	 * Every TauTeam (a Cohort of ours recording a team UID none of them has, the team created
	 * again under its name, is adopted, not another owner's: issue 24), TauWorkspace and
	 * Kueue object.
	 */
	tau_budget_objects api;
	bool multiple_workspaces; /**< feature gate: else blocked v0 workspaces get no queue */
} tau_budget_explicit_input;

/** A workspace ClusterQueue of the team (or leaving it). */
typedef struct tau_budget_explicit_queue {
	const cJSON *workspace; /**< borrowed TauWorkspace */
	char name[TAU_BUDGET_NAME_BUF];
	const cJSON *observed; /**< borrowed; NULL when absent */
	cJSON *desired;        /**< to write (create or merge); NULL: no write */
	const char *reason;    /**< refusal reason; NULL when none */
	char *refusal;         /**< refusal message (condition on the workspace and the team) */
} tau_budget_explicit_queue;

/** The decision for one explicit team. */
typedef struct tau_budget_explicit_team {
	const char *reason; /**< QuotaReady reason (static) */
	const char *status; /**< "True", "False" */
	const char *phase;  /**< Ready, Degraded, Pending */
	char *message;
	char cohort[TAU_BUDGET_NAME_BUF];
	const cJSON *owned_cohort;         /**< the observed Cohort when ours (cohortUID) */
	cJSON *desired_cohort;             /**< to write; NULL: no write */
	bool delete_cohort;                /**< E9: remove the owned Cohort */
	bool add_finalizer;                /**< E9 */
	bool remove_finalizer;             /**< E9 */
	tau_budget_explicit_queue *queues; /**< every queue the team keeps (desired or not) */
	size_t n_queues;
	char *summary; /**< one line for the log */
} tau_budget_explicit_team;

/**
 * Decide one explicit team (E1-E10).
 * @param out  receives a new decision (tau_budget_explicit_team_free); untouched on failure.
 * @return 0; -TAU_EINVAL (missing input); -TAU_ENOMEM.  Invalid quotas and
 *         refusals are decisions, not errors.
 */
int tau_budget_explicit_decide(tau_budget_explicit_team **out, const tau_budget_explicit_input *in);

/** Free a decision; NULL is a no-op. */
void tau_budget_explicit_team_free(tau_budget_explicit_team *t);

#endif /* TAU_AGGREGATOR_BUDGET_EXPLICIT_H */
