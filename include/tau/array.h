/*
 * tau/array.h - growing a plain C array (items, count, capacity) in place.
 *
 *   if (tau_array_grow((void **)&v->items, &v->cap, v->n + 1, sizeof(*v->items)) < 0)
 *           return -TAU_ENOMEM;
 *   v->items[v->n++] = x;
 */
#ifndef TAU_ARRAY_H
#define TAU_ARRAY_H

#include <stddef.h>

/**
 * Make room for `need` elements of `elem_size` bytes in *items (capacity *cap):
 * nothing when *cap already holds them, else the capacity doubles (at least 8)
 * until it does.  New slots are not initialised.
 * @return 0, or -TAU_ENOMEM with the tau error set ("out of memory") when the
 *         size overflows or the allocation fails; *items and *cap are then untouched.
 */
int tau_array_grow(void **items, size_t *cap, size_t need, size_t elem_size);

#endif /* TAU_ARRAY_H */
