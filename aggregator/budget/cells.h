/*
 * budget/cells.h - quantities keyed by (flavor, resource), "cells": the exact arithmetic
 * explicit-quota teams compute with (docs/budget.md "Explicit-quota teams").  Pure.
 */
#ifndef TAU_AGGREGATOR_BUDGET_CELLS_H
#define TAU_AGGREGATOR_BUDGET_CELLS_H

#include "tau/mem.h"
#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct tau_budget_cell {
	char *flavor;
	char *resource;
	tau_quantity q;
} tau_budget_cell;

/** Sorted by flavor, then resource.  Zero-initialise; free with tau_budget_cells_clear. */
typedef struct tau_budget_cells {
	tau_budget_cell *items;
	size_t n;
	size_t cap; /**< private */
} tau_budget_cells;

void tau_budget_cells_clear(tau_budget_cells *c);

/** tau_budget_cells_clear each of the n sets (NULL entries are fine). */
void tau_budget_cells_clear_each(tau_budget_cells *const *sets, size_t n);

/** Clear every argument (pointers to cell sets), the way tau_free_many frees. */
#define tau_budget_cells_clear_many(...)                                                           \
	tau_budget_cells_clear_each((tau_budget_cells *const[]){__VA_ARGS__},                      \
	                            TAU_N_ELEMENTS(((tau_budget_cells *const[]){__VA_ARGS__})))

/**
 * Add q to the cell (flavor, resource), creating it at q when absent.
 * @return 0; -TAU_EINVAL (NULL/empty names); -TAU_ERANGE (overflow); -TAU_ENOMEM.
 */
int tau_budget_cells_add(tau_budget_cells *c, const char *flavor, const char *resource,
                         const tau_quantity *q);

/** The cell's quantity; zero when absent. */
tau_quantity tau_budget_cells_get(const tau_budget_cells *c, const char *flavor,
                                  const char *resource);

/**
 * Add every cell of `src`, negated when `sign` is negative, into `dst`.
 * @return 0; -TAU_ERANGE (overflow); -TAU_ENOMEM.
 */
int tau_budget_cells_merge(tau_budget_cells *dst, const tau_budget_cells *src, int sign);

/** Give `dst` every cell of `shape` (at zero when new).  @return as tau_budget_cells_add. */
int tau_budget_cells_cover(tau_budget_cells *dst, const tau_budget_cells *shape);

/** Is a cell of `a` above the same cell of `b`?  The first such index of `a` in *at. */
bool tau_budget_cells_first_above(const tau_budget_cells *a, const tau_budget_cells *b, size_t *at);

/** The quantity's text, "?" when it cannot be written. */
void tau_budget_quantity_text(char *buf, size_t len, const tau_quantity *q);

/**
 * Parse a spec.quota list ([{flavor, resource, nominalQuota, borrowingLimit?,
 * lendingLimit?}]) into three cell sets; omitted limits are recorded as 0
 * (E2).  JSON null or absent gives empty sets (E10: zero, never unlimited).
 *
 * @param owner  names the object in messages, e.g. "TauTeam \"ml\"".
 * @param err    receives the cause on failure.
 * @return 0; -TAU_EINVAL for a list that is not one, an entry without
 *         flavor, resource or nominalQuota, a quantity that does not parse or
 *         is negative, or a (flavor, resource) listed twice; -TAU_ENOMEM.
 *         The cell sets hold what was read so far on failure.
 */
int tau_budget_quota_parse(tau_budget_cells *nominal, tau_budget_cells *borrowing,
                           tau_budget_cells *lending, const cJSON *quota, const char *owner,
                           char *err, size_t err_len);

/**
 * Read `field` ("nominalQuota", "borrowingLimit", "lendingLimit") of every
 * flavor and resource of a Cohort's or ClusterQueue's spec.resourceGroups
 * (absent fields are skipped).  @return 0; -TAU_EINVAL (unparsable); -TAU_ENOMEM.
 */
int tau_budget_groups_read(tau_budget_cells *out, const cJSON *obj, const char *field);

/** A ClusterQueue's status.flavorsReservation totals.  @return as tau_budget_groups_read. */
int tau_budget_reservations_read(tau_budget_cells *out, const cJSON *cq);

/**
 * The remainder (E1): team − guarantees, for every cell of either.
 * @param err  on -TAU_ERANGE: "workspace guarantees G exceed team quota Q for
 *             flavor F resource R" (the first cell, in order).
 * @return 0; -TAU_ERANGE (a guarantee above the team's quota: E3); -TAU_ENOMEM.
 */
int tau_budget_remainder(tau_budget_cells *out, const tau_budget_cells *team,
                         const tau_budget_cells *guarantees, char *err, size_t err_len);

/**
 * The applied allocation of the team whose Cohort is `cohort` (E4): that
 * Cohort's nominalQuota plus the nominalQuota of every TauGrid-managed
 * ClusterQueue whose spec.cohortName is `cohort`, as written.
 * @return 0; -TAU_EINVAL (a quantity does not parse); -TAU_ENOMEM.
 */
int tau_budget_applied(tau_budget_cells *out, const char *cohort, const cJSON *const *cohorts,
                       size_t n_cohorts, const cJSON *const *cqs, size_t n_cqs);

/** New maximum of a ClusterQueue (E5): nominal + borrowingLimit per cell. */
int tau_budget_new_maximum(tau_budget_cells *out, const tau_budget_cells *nominal,
                           const tau_budget_cells *borrowing);

#endif /* TAU_AGGREGATOR_BUDGET_CELLS_H */
