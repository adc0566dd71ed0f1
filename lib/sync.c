/*
 * sync.c - copying a value out from under the mutex that guards it
 * (tau/sync.h).
 */
#include "tau/sync.h"

#include <string.h>

void tau_locked_copy(pthread_mutex_t *mu, void *dst, const void *src, size_t n)
{
	pthread_mutex_lock(mu);
	memcpy(dst, src, n);
	pthread_mutex_unlock(mu);
}
