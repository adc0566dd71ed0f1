/*
 * thread.c - monotonic condition variables, starting N threads, raising a stop
 * flag and joining.
 *
 * The one idea: the lock-flag-broadcast-join sequence that stops a module's
 * threads is written once, so every owner stops its threads the same way.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/thread.h"

#include "tau/error.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

void tau_thread_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
}

void tau_thread_deadline_ms(struct timespec *ts, clockid_t clock, int64_t ms)
{
	clock_gettime(clock, ts);
	ts->tv_sec += (time_t)(ms / 1000);
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

void tau_thread_raise(pthread_mutex_t *mu, pthread_cond_t *cond, bool *flag)
{
	pthread_mutex_lock(mu);
	*flag = true;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(mu);
}

void tau_thread_stop_join(pthread_mutex_t *mu, pthread_cond_t *cond, bool *flag,
                          const pthread_t *threads, int n)
{
	tau_thread_raise(mu, cond, flag);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
}

int tau_thread_start_n(pthread_t **threads, int n, int *started, void *(*fn)(void *), void *arg,
                       const char *what)
{
	*threads = calloc((size_t)n, sizeof(**threads));
	if (*threads == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		if (pthread_create(&(*threads)[i], NULL, fn, arg) != 0)
			return tau_error_set(TAU_EIO, "cannot start %s", what);
		(*started)++;
	}
	return 0;
}
