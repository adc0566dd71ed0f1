/*
 * tau/thread.h - the steps every module that owns threads repeats: a condition
 * variable timed on the monotonic clock, starting N workers, and raising a flag
 * under a lock to wake and then join them.
 */
#ifndef TAU_THREAD_H
#define TAU_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/** Initialise `cond` so that pthread_cond_timedwait deadlines are CLOCK_MONOTONIC times. */
void tau_thread_cond_init_monotonic(pthread_cond_t *cond);

/**
 * `ms` from now on `clock` into `*ts`: the absolute deadline pthread_cond_timedwait
 * takes (CLOCK_MONOTONIC for a condition from tau_thread_cond_init_monotonic,
 * CLOCK_REALTIME for one with default attributes).
 */
void tau_thread_deadline_ms(struct timespec *ts, clockid_t clock, int64_t ms);

/** Under `mu`: set `*flag` to true and wake every waiter on `cond`. */
void tau_thread_raise(pthread_mutex_t *mu, pthread_cond_t *cond, bool *flag);

/**
 * tau_thread_raise(mu, cond, flag), then join the `n` threads of `threads`
 * (the flag is how they learn to return).
 */
void tau_thread_stop_join(pthread_mutex_t *mu, pthread_cond_t *cond, bool *flag,
                          const pthread_t *threads, int n);

/**
 * Allocate `*threads` for `n` threads and start each running fn(arg), counting
 * those started in `*started`.  @return 0; -TAU_ENOMEM ("out of memory") when
 * the array cannot be had; -TAU_EIO ("cannot start <what>") at the first thread
 * that cannot start: the caller then stops the `*started` already running and
 * frees `*threads`.
 */
int tau_thread_start_n(pthread_t **threads, int n, int *started, void *(*fn)(void *), void *arg,
                       const char *what);

#endif /* TAU_THREAD_H */
