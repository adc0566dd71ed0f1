/*
 * budget/explicit_objects.h - an explicit-quota team's desired Cohort and workspace
 * ClusterQueues from its cells (explicit_objects.c).  Private to aggregator/budget/.
 */
#ifndef TAU_AGGREGATOR_BUDGET_EXPLICIT_OBJECTS_H
#define TAU_AGGREGATOR_BUDGET_EXPLICIT_OBJECTS_H

#include "budget/cells.h"

#include <cjson/cJSON.h>

/**
 * The team's Cohort: the `shape` grid with `quota` per cell (zero where absent), labelled
 * tau.azure.com/quota-mode: explicit.
 * @return 0; an error of tau_budget_desired_cohort; -TAU_ENOMEM.
 */
int tau_budget_explicit_cohort(cJSON **out, const char *team, const char *uid,
                               const tau_budget_cells *shape, const tau_budget_cells *quota);

/**
 * E2: workspace `ws`'s ClusterQueue (desired.c's, on the `shape` grid) with nominalQuota,
 * borrowingLimit and lendingLimit per cell from the three cell sets.
 * @return 0; an error of tau_budget_desired_cluster_queue; -TAU_ERANGE; -TAU_ENOMEM.
 */
int tau_budget_explicit_cluster_queue(cJSON **out, const char *team, const cJSON *ws,
                                      const char *ns, const tau_budget_cells *shape,
                                      const tau_budget_cells *nominal,
                                      const tau_budget_cells *borrowing,
                                      const tau_budget_cells *lending);

#endif /* TAU_AGGREGATOR_BUDGET_EXPLICIT_OBJECTS_H */
