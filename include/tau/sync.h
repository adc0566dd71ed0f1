/*
 * tau/sync.h - reading a value that another thread writes, under the mutex
 * that guards it, in one statement.
 *
 * A getter that hands out a counter or a stats block copies it with its lock
 * held:
 *
 *   size_t n;
 *
 *   tau_locked_copy(&q->lock, &n, &q->heap_len, sizeof(n));
 *   return n;
 */
#ifndef TAU_SYNC_H
#define TAU_SYNC_H

#include <pthread.h>
#include <stddef.h>

/** Copy n bytes from src to dst (which must not overlap) with mu locked. */
void tau_locked_copy(pthread_mutex_t *mu, void *dst, const void *src, size_t n);

#endif /* TAU_SYNC_H */
