/*
 * mem.c - releasing several allocations in one statement (tau_free_many).
 */
#include "tau/mem.h"

#include <stdlib.h>

void tau_free_each(void *const *ptrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ptrs[i]);
}
