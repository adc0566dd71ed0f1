/*
 * budget/helpers.h - the small helpers every part of the team budget uses, in one place:
 * the out-of-memory error, finding an observed object by name, our managed-by label, an
 * object's generation, a formatted copy, a bounded "a; b; c" message and the insert into a
 * sorted array of named records.  Private to
 * aggregator/budget/.
 */
#ifndef TAU_AGGREGATOR_BUDGET_HELPERS_H
#define TAU_AGGREGATOR_BUDGET_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/** Set the tau error "team budget: out of memory" and return -TAU_ENOMEM. */
int tau_budget_nomem(void);

/** The first of `objs` whose metadata.name is `name`; NULL when none (or `name` is NULL). */
const cJSON *tau_budget_find_named(const cJSON *const *objs, size_t n, const char *name);

/** Does `obj` carry our managed-by label (app.kubernetes.io/managed-by: taugrid)? */
bool tau_budget_is_managed(const cJSON *obj);

/** metadata.generation of `obj`; 0 when absent or not a number. */
int64_t tau_budget_generation(const cJSON *obj);

/** A new string (free) formatted as printf does; NULL when out of memory. */
char *tau_budget_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/**
 * Append "; <text>" (or "<text>" when buf is empty) to the NUL-terminated buf of `len` bytes,
 * truncating, never overflowing.
 */
void tau_budget_append(char *buf, size_t len, const char *f, ...)
        __attribute__((format(printf, 3, 4)));

/**
 * Find or insert `name` in the array (*items, *n, *cap) of `size`-byte records kept sorted
 * by their first member, `char *name` (inventory/sorted.h): a new record holds a copy of name
 * and zeroes elsewhere.  *rec receives the record, found or new.
 * @return 1 when inserted, 0 when it was there, -TAU_ENOMEM (nothing changed).
 */
int tau_budget_sorted_add(void **rec, void **items, size_t *n, size_t *cap, size_t size,
                          const char *name);

#endif /* TAU_AGGREGATOR_BUDGET_HELPERS_H */
