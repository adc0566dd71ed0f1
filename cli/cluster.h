/*
 * cluster.h - `tau cluster install|uninstall|status`: the umbrella chart with
 * the project's helm, and the readiness gate (cli/cluster.c).  The gate's
 * verdicts are pure functions over the objects read, so they are unit tested.
 */
#ifndef TAU_CLI_CLUSTER_H
#define TAU_CLI_CLUSTER_H

#include "cli.h"

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include <cjson/cJSON.h>

/** The CRDs the umbrella installs (crds/), in the order the gate checks them. */
extern const char *const tau_cli_crd_names[3];

/** Step 1: every CRD (NULL = not found) Established=True.  msg says which is not. */
bool tau_cli_gate_crds(char *msg, size_t cap, const cJSON *const crds[3]);

/**
 * Step 2: the aggregator Deployment (NULL = not found) has an available replica
 * (status.availableReplicas >= 1 or condition Available=True) and the Lease (NULL = none)
 * has a holder whose renewTime + leaseDurationSeconds is after `now`.
 */
bool tau_cli_gate_aggregator(char *msg, size_t cap, const char *ns, const cJSON *deploy,
                             const cJSON *lease, time_t now);

/**
 * Step 3: the inventory is established: TauCluster (NULL = not found) condition
 * InventoryEstablished True for its generation.  msg gives the reason otherwise.
 */
bool tau_cli_gate_inventory(char *msg, size_t cap, const cJSON *cluster);

/**
 * Step 3 with --aggregator: the aggregator's GetPool.  True only when the pool is established
 * and no GPU node's agent is missing (`missing_count` 0): a pool established by the initial sync
 * timeout counts the nodes from their Node objects while their agents are refused or absent, and
 * the gate says so, naming the first `n_names` of them.  Appends to msg.
 */
bool tau_cli_gate_pool(char *msg, size_t cap, bool established, uint32_t missing_count,
                       char *const *names, size_t n_names);

/**
 * Step 4: the TauCluster's conditions, observed for its generation: NodeSelectorValid True,
 * ConflictDetected not True, BudgetReady True or False only for NoCapacityTeam (no capacity
 * team is a valid configuration).  msg names the first failing condition.
 */
bool tau_cli_gate_conditions(char *msg, size_t cap, const cJSON *cluster);

#endif /* TAU_CLI_CLUSTER_H */
