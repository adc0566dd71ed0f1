/*
 * tau/backoff.h - jittered exponential backoff and a token bucket.
 *
 * Both are plain values advanced by the caller with an explicit clock and
 * an explicit random number, so their arithmetic can be unit-tested
 * without sleeping; tau_clock_mono_ms() (tau/clock.h) and tau_backoff_rand()
 * supply the real clock and randomness.  Neither locks: callers that share one across
 * threads hold their own mutex.
 */
#ifndef TAU_BACKOFF_H
#define TAU_BACKOFF_H

#include <stdint.h>

/** Exponential backoff: initial, initial*factor, ... capped, each plus up to jitter*base. */
typedef struct tau_backoff {
	uint64_t initial_ms;     /**< first delay */
	uint64_t cap_ms;         /**< no delay is longer than this, jitter included */
	double factor;           /**< growth per step, >= 1 */
	double jitter;           /**< 0 = none; 1.0 = delay in [base, 2*base) */
	uint64_t reset_after_ms; /**< a quiet gap this long restarts at initial; 0 = never */
	uint64_t base_ms;        /**< base of the next delay; 0 = not started */
	uint64_t last_ms;        /**< clock of the last step */
} tau_backoff;

/** Set up `b`; factor < 1 is treated as 1. */
void tau_backoff_init(tau_backoff *b, uint64_t initial_ms, uint64_t cap_ms, double factor,
                      double jitter);

/**
 * The next delay in ms, advancing the sequence.
 * @param now_ms  the caller's monotonic clock (for reset_after_ms)
 * @param u       a random number in [0,1) for the jitter
 */
uint64_t tau_backoff_next(tau_backoff *b, uint64_t now_ms, double u);

/** Start again from initial_ms. */
void tau_backoff_reset(tau_backoff *b);

/** Token bucket: `rate` tokens per second, at most `burst` saved up. */
typedef struct tau_backoff_bucket {
	double rate;      /**< tokens per second; <= 0 means unlimited */
	double burst;     /**< capacity */
	double tokens;    /**< may go negative: outstanding reservations */
	uint64_t last_ms; /**< clock of the last refill */
} tau_backoff_bucket;

/** A full bucket at `now_ms`.  qps <= 0 disables limiting; burst 0 is treated as 1. */
void tau_backoff_bucket_init(tau_backoff_bucket *tb, double qps, unsigned burst, uint64_t now_ms);

/**
 * Take one token at `now_ms` and return how many ms the caller must wait
 * before using it (0 when one was available).  Reservations queue up, as
 * golang.org/x/time/rate's Reserve does.
 */
uint64_t tau_backoff_bucket_reserve(tau_backoff_bucket *tb, uint64_t now_ms);

/** A thread-safe uniform random number in [0,1). */
double tau_backoff_rand(void);

#endif /* TAU_BACKOFF_H */
