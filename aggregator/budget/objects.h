/*
 * budget/objects.h - the objects one pass of the team budget reads: every TauTeam,
 * TauWorkspace, ResourceFlavor, Cohort and ClusterQueue, borrowed as the controller's informer
 * caches hold them.  The capacity budget (decide.h) and each explicit team (explicit.h) read
 * the same set.
 */
#ifndef TAU_AGGREGATOR_BUDGET_OBJECTS_H
#define TAU_AGGREGATOR_BUDGET_OBJECTS_H

#include <stddef.h>

#include <cjson/cJSON.h>

/** Arrays of borrowed objects with their counts (an array may be NULL when its count is 0). */
typedef struct tau_budget_objects {
	const cJSON *const *teams;
	size_t n_teams;
	const cJSON *const *workspaces;
	size_t n_workspaces;
	const cJSON *const *flavors;
	size_t n_flavors;
	const cJSON *const *cohorts;
	size_t n_cohorts;
	const cJSON *const *cluster_queues;
	size_t n_cluster_queues;
} tau_budget_objects;

#endif /* TAU_AGGREGATOR_BUDGET_OBJECTS_H */
