/*
 * array.c - amortised growth of a plain C array, with the overflow and
 * out-of-memory checks in one place.
 */
#include "tau/array.h"

#include "tau/error.h"

#include <stdint.h>
#include <stdlib.h>

int tau_array_grow(void **items, size_t *cap, size_t need, size_t elem_size)
{
	size_t ncap = *cap < 8 ? 8 : *cap;
	void *p;

	if (need <= *cap)
		return 0;
	if (elem_size == 0)
		elem_size = 1;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem_size)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	p = realloc(*items, ncap * elem_size);
	if (p == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	*items = p;
	*cap = ncap;
	return 0;
}
