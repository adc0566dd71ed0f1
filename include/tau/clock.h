/*
 * tau/clock.h - the two clocks libtau reads, under names that say which.
 *
 * Monotonic time (tau_clock_mono_*) measures durations and deadlines and never
 * jumps; wall time (tau_clock_wall_*) is the date, for stamps other programs
 * read, and may jump when the system clock is set.  tau_rfc3339 writes a wall
 * time the way Kubernetes writes metav1.Time.
 */
#ifndef TAU_CLOCK_H
#define TAU_CLOCK_H

#include <stdint.h>
#include <time.h>

/** CLOCK_MONOTONIC in milliseconds. */
uint64_t tau_clock_mono_ms(void);

/** CLOCK_MONOTONIC in microseconds (durations a histogram observes). */
uint64_t tau_clock_mono_us(void);

/** CLOCK_REALTIME in milliseconds since the epoch. */
uint64_t tau_clock_wall_ms(void);

/** CLOCK_REALTIME in microseconds since the epoch (for MicroTime stamps). */
uint64_t tau_clock_wall_us(void);

/** Block the calling thread for `ms`, resuming after signals (for blocking APIs only). */
void tau_clock_sleep_ms(uint64_t ms);

/** Bytes of an RFC 3339 UTC timestamp with seconds, NUL included ("2026-12-02T17:51:11Z"). */
#define TAU_RFC3339_LEN 21

/**
 * Format `t` as RFC 3339 UTC with second precision, as Kubernetes writes
 * metav1.Time.  @return 0, or -TAU_EINVAL when the time cannot be represented.
 */
int tau_rfc3339(char buf[TAU_RFC3339_LEN], time_t t);

#endif /* TAU_CLOCK_H */
