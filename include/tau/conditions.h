/*
 * tau/conditions.h - Kubernetes status conditions (metav1.Condition) built
 * level-triggered.
 *
 * A controller computes every condition from what it observed and hands the
 * previous `status.conditions` in only so that lastTransitionTime survives
 * while a condition's status stays the same.  Two passes over the same world
 * then give byte-identical conditions, and tau_conditions_equal lets the
 * controller skip a status write that would change nothing:
 *
 *   cJSON *conds = cJSON_CreateArray();
 *   tau_conditions_set(conds, previous, "QuotaReady", "True", "BudgetApplied",
 *                      "the Cohort holds the pool", generation, now);
 */
#ifndef TAU_CONDITIONS_H
#define TAU_CONDITIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cjson/cJSON.h>

/**
 * Append the condition `type` to the array `conds` (replacing one of that
 * type already there).  lastTransitionTime is the previous condition's when
 * `previous` (the old status.conditions array, may be NULL) holds `type`
 * with the same status, else `now`.
 *
 * @param status      "True", "False" or "Unknown".
 * @param reason      CamelCase reason (required by the API: non-empty).
 * @param message     human-readable; NULL means "".
 * @param generation  observedGeneration written into the condition; negative: none
 *                    (a Node's conditions, v1.NodeCondition, have no such field).
 * @param now         RFC 3339 timestamp (tau_rfc3339, tau/clock.h).
 * @return 0; -TAU_EINVAL for a missing type/status/reason/now or a status
 *         outside the three; -TAU_ENOMEM.
 */
int tau_conditions_set(cJSON *conds, const cJSON *previous, const char *type, const char *status,
                       const char *reason, const char *message, int64_t generation,
                       const char *now);

/** Lends the condition of `type` in a conditions array, NULL when absent. */
const cJSON *tau_conditions_find(const cJSON *conds, const char *type);

/**
 * Whether two conditions arrays say the same: the same types, and for each
 * the same status, reason, message and observedGeneration.
 * lastTransitionTime and order are ignored.  NULL equals an empty array.
 */
bool tau_conditions_equal(const cJSON *a, const cJSON *b);

#endif /* TAU_CONDITIONS_H */
