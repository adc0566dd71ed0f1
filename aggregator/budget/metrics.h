/*
 * budget/metrics.h - the budget's Prometheus metrics (docs/aggregator.md, Metrics).
 *
 * Rendered at scrape time from what the controller's informers hold, so every replica
 * answers (a follower's caches are as fresh as the leader's) and nothing is kept between
 * scrapes.  Rendering is pure and unit tested; controller.c copies the caches and calls it.
 */
#ifndef TAU_AGGREGATOR_BUDGET_METRICS_H
#define TAU_AGGREGATOR_BUDGET_METRICS_H

#include "budget/controller.h"

#include "tau/buf.h"
#include "tau/json.h"

/**
 * Append the budget's metric families to `b`:
 * tau_budget_ready, tau_budget_zeroed and tau_budget_conflict (from the TauCluster's
 * BudgetReady and ConflictDetected conditions), tau_budget_nominal_quota* and
 * tau_budget_reserved* (_cores, _bytes, counts) per team, flavor and resource (from the Cohorts
 * TauGrid manages and the reservations of the ClusterQueues in them), and the controller's
 * counters.
 *
 * @param cluster  the TauCluster "cluster" (NULL when absent)
 * @param cohorts  JSON array of Cohorts; @param queues JSON array of ClusterQueues (may be NULL)
 * @return 0, -TAU_ENOMEM, or the buffer's error.
 */
int tau_budget_metrics_render(tau_buf *b, const cJSON *cluster, const cJSON *cohorts,
                              const cJSON *queues, const tau_budget_stats *st);

#endif /* TAU_AGGREGATOR_BUDGET_METRICS_H */
