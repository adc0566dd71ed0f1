/*
 * sorted.h - binary search and insert in arrays of records kept sorted.
 *
 * The pool's flavors and sums and the node store's records are arrays of
 * structs whose first member is `char *name`, kept sorted so listing is in
 * order for free; this is the one lookup (and insert) they share.
 */
#ifndef TAU_AGGREGATOR_SORTED_H
#define TAU_AGGREGATOR_SORTED_H

#include "tau/array.h"
#include "tau/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/** Order of the record at `elem` against `key`, as strcmp. */
typedef int (*tau_sorted_cmp)(const void *elem, const void *key);

/**
 * Find `key` in `n` records of `size` bytes at `base`, sorted by `cmp`.
 * Returns its index (*found true) or the index where it would be inserted
 * (*found false).
 */
static inline size_t tau_sorted_search(const void *base, size_t n, size_t size, tau_sorted_cmp cmp,
                                       const void *key, bool *found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp((const char *)base + mid * size, key);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* A record starting with `char *name` against a name. */
static inline int tau_sorted_name_cmp(const void *elem, const void *key)
{
	return strcmp(*(char *const *)elem, (const char *)key);
}

/**
 * Find `name` in `n` records of `size` bytes at `base`, each starting with a
 * `char *name` member, sorted by strcmp.  Returns its index (*found true) or
 * the index where it would be inserted (*found false).
 */
static inline size_t tau_sorted_index(const void *base, size_t n, size_t size, const char *name,
                                      bool *found)
{
	return tau_sorted_search(base, n, size, tau_sorted_name_cmp, name, found);
}

/**
 * Find or insert `name` in the array (*items, *n, *cap) of `size`-byte records
 * sorted by their first member, `char *name`: *rec points at the record; a new
 * one is zeroed but for its own copy of name.
 * @return 1 when inserted, 0 when found, or -TAU_ENOMEM (tau error "out of
 *         memory") with the array unchanged.
 */
static inline int tau_sorted_add(void **rec, void **items, size_t *n, size_t *cap, size_t size,
                                 const char *name)
{
	bool found = false;
	size_t at = tau_sorted_index(*items, *n, size, name, &found);
	char *copy, *slot;

	if (found) {
		*rec = (char *)*items + at * size;
		return 0;
	}
	if ((copy = strdup(name)) == NULL || tau_array_grow(items, cap, *n + 1, size) < 0) {
		free(copy);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	slot = (char *)*items + at * size;
	memmove(slot + size, slot, (*n - at) * size);
	memset(slot, 0, size);
	memcpy(slot, &copy, sizeof(copy));
	(*n)++;
	*rec = slot;
	return 1;
}

#endif /* TAU_AGGREGATOR_SORTED_H */
