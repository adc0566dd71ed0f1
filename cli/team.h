/*
 * team.h - `tau team list` and `tau team status NAME`: the pure assembly and
 * printing functions behind them, so the documents and tables are unit-tested
 * from canned objects (docs/cli.md, "tau team").
 *
 * The JSON document is the model: the table form is printed from it, so both
 * forms always say the same.  Every quantity in a document is the canonical
 * Kubernetes form made by libtau (tau_quantity_format), never a float.
 */
#ifndef TAU_CLI_TEAM_H
#define TAU_CLI_TEAM_H

#include "cli.h"

#include "tau/inventory/v1/query.pb-c.h"

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* tau_cli_team, the entry point, is declared in cli.h. */

/** What `tau team status` reads, borrowed; any of them but `team` may be NULL (absent). */
typedef struct tau_cli_team_input {
	const cJSON *team;       /**< the TauTeam */
	const cJSON *cluster;    /**< the TauCluster `cluster` */
	const cJSON *cohort;     /**< the team's Cohort (status.cohort, else tau-team-<team>) */
	const cJSON *queues;     /**< a ClusterQueueList ({"items": [...]}), all of them */
	const cJSON *workspaces; /**< a TauWorkspaceList of the system namespace */
	/** The part of the aggregator's pool that comes through DRA devices, per GPU class
	 * (tau_cli_team_pool_dra); NULL when no aggregator was asked or it did not answer. */
	const cJSON *dra;
	const char *aggregator; /**< the aggregator asked for `dra`; NULL when none was */
	const char *dra_error;  /**< why `dra` is NULL although an aggregator was asked */
} tau_cli_team_input;

/**
 * The DRA part of an aggregator's pool (GetPool's Flavor.dra_resources) as
 * {"<gpu class>": {"<resource>": "<quantity>"}}, every class of the pool ({} when nothing of
 * it comes through DRA).
 * @return a new object (cJSON_Delete), or NULL with tau_error_last() set (-TAU_ENOMEM).
 */
cJSON *tau_cli_team_pool_dra(const Tau__Inventory__V1__Pool *pool);

/**
 * "capacity" when the TauCluster's spec.queues.capacityTeamRef.name names `team`, else
 * "explicit" (also when there is no TauCluster).
 */
const char *tau_cli_team_mode(const cJSON *team, const cJSON *cluster);

/** The verdict: status.phase is Ready and status.observedGeneration is metadata.generation. */
bool tau_cli_team_ready(const cJSON *team);

/**
 * The `list` document: {"items": [{"name", "mode", "phase", "cohort", "workspaces": count,
 * "reason", "ready"}]}, one item per TauTeam of `teams` (a TauTeamList), counting the
 * TauWorkspaces of `workspaces` (may be NULL) whose spec.teamRef.name is the team.
 * @return a new object (cJSON_Delete), or NULL with tau_error_last() set: -TAU_EINVAL when
 *         `teams` has no items array, -TAU_ENOMEM.
 */
cJSON *tau_cli_team_list_doc(const cJSON *teams, const cJSON *cluster, const cJSON *workspaces);

/**
 * The `status` document (docs/cli.md): name, mode, phase, ready, generations, the Cohort,
 * `budget` (Cohort nominalQuota beside the pool: discoveredCapacity of the TauCluster for the
 * capacity team, spec.quota for an explicit one, which also gets `guarantees`, `applied` and
 * `reserved` per flavor and resource), `queues` (each workspace ClusterQueue's reservation and
 * borrowing), conditions and warnings.  A capacity team's document also says `dra` (checked,
 * aggregator, reason) and, when in->dra is given, each budget row's `viaDra`: the part of the
 * pool that DRA devices give (null for a flavor the aggregator's pool does not name).
 * @return a new object (cJSON_Delete), or NULL with tau_error_last() set: -TAU_EINVAL when
 *         the team has no metadata.name, -TAU_ENOMEM.
 */
cJSON *tau_cli_team_status_doc(const tau_cli_team_input *in);

/** Print a list document as a NAME MODE PHASE COHORT WORKSPACES REASON table, or as JSON. */
int tau_cli_team_print_list(FILE *out, const cJSON *doc, tau_cli_format fmt);

/** Print a status document as blocks and tables, or as JSON. */
int tau_cli_team_print_status(FILE *out, const cJSON *doc, tau_cli_format fmt);

#endif /* TAU_CLI_TEAM_H */
