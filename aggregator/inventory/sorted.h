/*
 * sorted.h - binary search in arrays of records kept sorted by name.
 *
 * The pool's flavors and sums and the node store's records are arrays of
 * structs whose first member is `char *name`, kept sorted so listing is in
 * order for free; this is the one lookup they share.
 */
#ifndef TAU_AGGREGATOR_SORTED_H
#define TAU_AGGREGATOR_SORTED_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/**
 * Find `name` in `n` records of `size` bytes at `base`, each starting with a
 * `char *name` member, sorted by strcmp.  Returns its index (*found true) or
 * the index where it would be inserted (*found false).
 */
static inline size_t tau_sorted_index(const void *base, size_t n, size_t size, const char *name,
                                      bool *found)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *key = *(char *const *)(const void *)((const char *)base + mid * size);
		int c = strcmp(key, name);

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

#endif /* TAU_AGGREGATOR_SORTED_H */
