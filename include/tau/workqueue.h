/*
 * tau/workqueue.h - a controller work queue of string keys ("ns/name").
 *
 * The semantics of client-go's rate-limited work queue:
 *  - a key added while already queued is stored once (deduplicated);
 *  - a key being processed is never handed to a second worker: adding it
 *    marks it dirty and it is queued again when the first worker calls
 *    tau_workqueue_done;
 *  - tau_workqueue_add_rate_limited delays a key by the larger of a per-key
 *    exponential backoff (base * 2^failures, capped) and an overall token
 *    bucket; tau_workqueue_forget resets the key's failures.
 * All functions are thread-safe.  Delayed keys need no extra thread: the
 * workers blocked in tau_workqueue_get wake when the earliest one is due.
 */
#ifndef TAU_WORKQUEUE_H
#define TAU_WORKQUEUE_H

#include "tau/prom.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tau_workqueue tau_workqueue;

/** Rate limits; zeroed fields take the controller-runtime defaults. */
typedef struct tau_workqueue_options {
	uint64_t base_delay_ms; /**< first per-key retry delay (default 5 ms) */
	uint64_t max_delay_ms;  /**< per-key cap (default 1000 s) */
	double qps;             /**< overall bucket rate (default 10; < 0 disables) */
	unsigned burst;         /**< overall bucket size (default 100) */
	/** Test clock in ms; NULL = CLOCK_MONOTONIC.  Only rate arithmetic uses it. */
	uint64_t (*now_ms)(void *arg);
	void *clock_arg;
} tau_workqueue_options;

/** Longest key accepted, in bytes. */
#define TAU_WORKQUEUE_KEY_MAX 1024

/** Make a queue.  @param opts may be NULL.  @return 0 or -TAU_ENOMEM. */
int tau_workqueue_new(tau_workqueue **out, const tau_workqueue_options *opts);

/** Free a queue; NULL is a no-op.  No thread may be using it. */
void tau_workqueue_free(tau_workqueue *q);

/**
 * Queue `key` now (no-op if already queued).
 * @return 0, -TAU_EINVAL (empty or longer than TAU_WORKQUEUE_KEY_MAX),
 *         -TAU_EAGAIN (shutting down), -TAU_ENOMEM.
 */
int tau_workqueue_add(tau_workqueue *q, const char *key);

/** Queue `key` after `delay_ms` (an earlier pending time wins).  Returns as tau_workqueue_add. */
int tau_workqueue_add_after(tau_workqueue *q, const char *key, uint64_t delay_ms);

/** Queue `key` after tau_workqueue_when(q, key).  Returns as tau_workqueue_add. */
int tau_workqueue_add_rate_limited(tau_workqueue *q, const char *key);

/**
 * The rate-limited delay for `key` in ms, counting one more failure:
 * max(base * 2^(failures before), capped at max_delay; the bucket's wait).
 * Returns 0 when the key cannot be recorded (out of memory).
 */
uint64_t tau_workqueue_when(tau_workqueue *q, const char *key);

/** Reset the failures of `key` (call after a successful reconcile). */
void tau_workqueue_forget(tau_workqueue *q, const char *key);

/** Number of failures recorded for `key`. */
unsigned tau_workqueue_requeues(tau_workqueue *q, const char *key);

/**
 * Take the next key, waiting up to `timeout_ms` (< 0 = forever).  The
 * key is marked processing until tau_workqueue_done.
 * @param out  receives a copy of the key (free()); untouched on failure
 * @return 0, -TAU_ETIMEOUT, -TAU_EAGAIN (shut down and drained), -TAU_ENOMEM.
 */
int tau_workqueue_get(tau_workqueue *q, char **out, int64_t timeout_ms);

/** Finish processing `key`; queues it again if it was added meanwhile. */
void tau_workqueue_done(tau_workqueue *q, const char *key);

/** Refuse new keys and wake every waiting worker; queued keys still drain. */
void tau_workqueue_shutdown(tau_workqueue *q);

/** Keys queued and ready now (not counting delayed or processing ones). */
size_t tau_workqueue_len(tau_workqueue *q);

/** Keys waiting for a delay to pass. */
size_t tau_workqueue_delayed(tau_workqueue *q);

/** Counters and gauges of a queue (metrics). */
typedef struct tau_workqueue_stats {
	uint64_t adds;    /**< times a key was queued (adding a key still waiting adds nothing) */
	uint64_t retries; /**< tau_workqueue_add_rate_limited calls */
	size_t depth;     /**< keys queued and ready now (tau_workqueue_len) */
	size_t delayed;   /**< keys waiting for a delay (tau_workqueue_delayed) */
} tau_workqueue_stats;

/** Copy the counters and gauges into `out`. */
void tau_workqueue_stats_get(tau_workqueue *q, tau_workqueue_stats *out);

/**
 * How long keys waited between being queued (or, when delayed, their time coming) and
 * a worker taking them.  Lent; lives as long as `q`; thread-safe to write out.
 */
const tau_prom_histogram *tau_workqueue_queue_latency(const tau_workqueue *q);

#endif /* TAU_WORKQUEUE_H */
