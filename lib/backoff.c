/*
 * backoff.c - jittered exponential backoff and a token bucket.
 *
 * The one idea: both are pure arithmetic over a caller-supplied clock and
 * random number, so tests check the sequences exactly; only tau_backoff_rand
 * at the bottom touches entropy (the clocks are tau/clock.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/backoff.h"

#include "tau/clock.h"

#include <math.h>
#include <stdint.h>
#include <sys/random.h>

void tau_backoff_init(tau_backoff *b, uint64_t initial_ms, uint64_t cap_ms, double factor,
                      double jitter)
{
	b->initial_ms = initial_ms;
	b->cap_ms = cap_ms < initial_ms ? initial_ms : cap_ms;
	b->factor = factor < 1.0 ? 1.0 : factor;
	b->jitter = jitter < 0.0 ? 0.0 : jitter;
	b->reset_after_ms = 0;
	b->base_ms = 0;
	b->last_ms = 0;
}

void tau_backoff_reset(tau_backoff *b)
{
	b->base_ms = 0;
}

uint64_t tau_backoff_next(tau_backoff *b, uint64_t now_ms, double u)
{
	uint64_t base;
	double d;

	if (b->reset_after_ms && b->base_ms && now_ms >= b->last_ms &&
	    now_ms - b->last_ms >= b->reset_after_ms)
		b->base_ms = 0;
	b->last_ms = now_ms;
	base = b->base_ms ? b->base_ms : b->initial_ms;
	if (u < 0.0)
		u = 0.0;
	if (u >= 1.0)
		u = 0.999999;
	d = (double)base + u * b->jitter * (double)base;
	/* Next base: grow, capped; computed in double so it cannot overflow. */
	{
		double next = (double)base * b->factor;
		b->base_ms = next >= (double)b->cap_ms ? b->cap_ms : (uint64_t)next;
		if (b->base_ms == 0)
			b->base_ms = 1;
	}
	if (d >= (double)b->cap_ms)
		return b->cap_ms;
	return (uint64_t)d;
}

void tau_backoff_bucket_init(tau_backoff_bucket *tb, double qps, unsigned burst, uint64_t now_ms)
{
	tb->rate = qps;
	tb->burst = burst ? (double)burst : 1.0;
	tb->tokens = tb->burst;
	tb->last_ms = now_ms;
}

uint64_t tau_backoff_bucket_reserve(tau_backoff_bucket *tb, uint64_t now_ms)
{
	double wait;

	if (tb->rate <= 0.0)
		return 0;
	if (now_ms > tb->last_ms) {
		tb->tokens += (double)(now_ms - tb->last_ms) * tb->rate / 1000.0;
		if (tb->tokens > tb->burst)
			tb->tokens = tb->burst;
		tb->last_ms = now_ms;
	}
	tb->tokens -= 1.0;
	if (tb->tokens >= 0.0)
		return 0;
	wait = -tb->tokens * 1000.0 / tb->rate;
	return (uint64_t)ceil(wait - 1e-9);
}

double tau_backoff_rand(void)
{
	/* xorshift64* per thread, seeded once from the kernel. */
	static _Thread_local uint64_t state;

	if (state == 0) {
		if (getrandom(&state, sizeof(state), 0) != (ssize_t)sizeof(state) || state == 0)
			state = (uint64_t)tau_clock_wall_us() | 1u;
	}
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return (double)((state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}
