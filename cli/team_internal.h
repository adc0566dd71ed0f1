/*
 * team_internal.h - what the files of `tau team` share (not the command's
 * interface: that is team.h): the names TauGrid gives the team's objects,
 * and the small readers and writers every team document is made with
 * (team_doc.c).  team.c runs the command, team_doc.c builds the pieces and
 * the list, team_budget.c the budget rows, team_status.c the status view.
 */
#ifndef TAU_CLI_TEAM_INTERNAL_H
#define TAU_CLI_TEAM_INTERNAL_H

#include "aggregator.h"
#include "team.h"

#include "tau/names.h"
#include "tau/quantity.h"
#include "tau/str.h"

#include <stdbool.h>
#include <stdio.h>

#define TAU_CLI_TEAM_COHORT_PREFIX "tau-team-"
#define TAU_CLI_TEAM_CQ_PREFIX     "tau-ws-"
#define TAU_CLI_TEAM_FLAVOR_PREFIX "taugrid-gpu-"
#define TAU_CLI_TEAM_LABEL_TEAM    "tau.azure.com/team"
#define TAU_CLI_TEAM_LABEL_WS      "tau.azure.com/workspace"
#define TAU_CLI_TEAM_LABEL_MANAGED "app.kubernetes.io/managed-by"
#define TAU_CLI_TEAM_MANAGED_BY    "taugrid"
#define TAU_CLI_TEAM_NONE          "<none>"
#define TAU_CLI_TEAM_NAME_BUF      (TAU_NAMES_DNS1123_SUBDOMAIN_MAX + 1)
#define TAU_CLI_TEAM_COND_QUOTA    "QuotaReady"
/** The document's poolSource: where the pool beside the budget comes from. */
#define TAU_CLI_TEAM_SRC_DISCOVERED "discoveredCapacity"
#define TAU_CLI_TEAM_SRC_SPEC_QUOTA "spec.quota"

/** s, or "<none>" when NULL. */
const char *tau_cli_team_or_none(const char *s);

/** Add a string member, or null when v is NULL. */
void tau_cli_team_put(cJSON *o, const char *key, const char *v);

/** Add the integer at `path` of src, or null when it is absent or not an exact integer. */
void tau_cli_team_put_int(cJSON *o, const char *key, const cJSON *src, const char *path);

/** Append a message to doc's "warnings" array. */
void tau_cli_team_warn(cJSON *doc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Parse a quantity given as a string or a bare JSON number.  @return 0, or <0 (error set). */
int tau_cli_team_quantity_of(tau_quantity *q, const cJSON *v);

/**
 * Add the canonical form of the quantity `v` (a string, or a bare JSON number as
 * Quantity.UnmarshalJSON takes it) as member `key`: null when absent; null and a warning
 * naming `where` when it is not a valid quantity.
 */
void tau_cli_team_put_quantity(cJSON *o, const char *key, const cJSON *v, cJSON *doc,
                               const char *where);

/** The "items" array of a list, or NULL. */
const cJSON *tau_cli_team_items_of(const cJSON *list);

/** The team's Cohort: status.cohort as the aggregator wrote it, else tau-team-<team>. */
void tau_cli_team_cohort_name(char buf[TAU_CLI_TEAM_NAME_BUF], const cJSON *team, const char *name);

/** The condition of `type` in obj's status.conditions, or NULL. */
const cJSON *tau_cli_team_condition(const cJSON *obj, const char *type);

/**
 * Print the objects of `arr` as a table, one column per key (a string, a number, or
 * "<none>"), under "heading:"; an empty array prints "label:" and "<none>" aligned with the
 * status block.  @return 0, or -TAU_ENOMEM.
 */
int tau_cli_team_print_objects(FILE *out, const char *label, const char *heading, const cJSON *arr,
                               const char *const *headers, const char *const *keys, size_t n_cols);

/**
 * The status document's "poolSource", "dra" (a capacity team) and "budget" rows: the Cohort's
 * nominalQuota beside the pool, an explicit team's sums (team_budget.c).
 * @return 0, or -TAU_ENOMEM.
 */
int tau_cli_team_add_budget(cJSON *doc, const tau_cli_team_input *in, bool capacity,
                            const char *team, const char *cohort_name);

#endif /* TAU_CLI_TEAM_INTERNAL_H */
