/*
 * controller/runtime.h - the runtime every aggregator controller shares.
 *
 * A controller is a reconcile function over string keys.  The runtime owns
 * the plumbing around it: informers (list+watch caches on the caller's kube
 * loop) whose events become keys, one work queue that deduplicates them, one
 * worker thread that calls reconcile, a periodic resync, the synced gate (no
 * reconcile before every informer has listed once; learnt through the
 * informers' on_synced callbacks, never by polling) and a start and stop of
 * the worker that follows leadership.  Informers run on every replica, so a
 * follower can answer reads from its caches; only the worker writes.
 *
 * Two shapes are built in:
 *  - per-object keys (the workspace controller): each watch says how an event
 *    maps to keys (the object's name, namespace/name, a label's value, every
 *    key, or a function of the caller), and resync enqueues every object of
 *    the watch marked `primary`;
 *  - a single key (the team budget controller): `single_key` makes every
 *    event, every trigger and every resync enqueue that one key.
 * With `coalesce_ms` an event enqueues its key that many milliseconds later
 * (an earlier pending time wins), so a storm of events makes one reconcile.
 *
 * Example: a controller of one key over two cluster-scoped kinds, triggered
 * also from another thread.
 *
 *     static int reconcile(void *arg, tau_controller *ctl, const char *key, tau_controller_result
 * *res)
 *     {
 *             struct team_ctl *t = arg;
 *             cJSON *cqs = NULL;
 *             int rc = tau_kube_informer_snapshot(&cqs, t->cq_informer);  // the cache
 *             ...                  // compute, then write with tau_apply_ensure (apply.h)
 *             res->requeue_after_ms = 0;                        // or: come back sooner
 *             return rc;           // -TAU_ECONFLICT: retried soon; other < 0: backoff
 *     }
 *
 *     tau_controller_options o = {.name = "team-budget", .client = client, .loop = loop,
 *                          .single_key = "team", .coalesce_ms = 200,
 *                          .reconcile = reconcile, .arg = t};
 *     tau_controller_watch_opts w = {.res = &res_clusterqueues};
 *     tau_controller_new(&ctl, &o);
 *     tau_controller_watch(&t->cq_informer, ctl, &w);         // before
 * tau_controller_start_informers w.res = &res_cohorts; tau_controller_watch(&t->cohort_informer,
 * ctl, &w); tau_controller_start_informers(ctl);                    // every replica: caches fill
 *     ...                                              // the caller runs the kube loop
 *     tau_controller_start_worker(ctl);                       // on becoming leader
 *     tau_controller_trigger(ctl, NULL);                      // any thread: "look again"
 *     tau_controller_stop_worker(ctl);                        // on losing leadership
 *     tau_controller_free(ctl);                               // with the kube loop stopped
 *
 * Threads: informer handlers (which only enqueue) run on the kube loop
 * thread; reconcile runs on the worker thread, one key at a time; every other
 * function here is thread-safe except tau_controller_watch (before the informers
 * start) and tau_controller_free.  Reconcile may read the informer caches
 * (tau_kube_informer_get/_snapshot are thread-safe) and call the API through
 * tau_controller_client.
 */
#ifndef TAU_AGGREGATOR_CONTROLLER_RUNTIME_H
#define TAU_AGGREGATOR_CONTROLLER_RUNTIME_H

#include "tau/buf.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct tau_controller tau_controller;

/** Default period of the resync (every key reconciled at least this often). */
#define TAU_CONTROLLER_DEFAULT_RESYNC_MS (5u * 60u * 1000u)
/** resync_ms value that turns the periodic resync off. */
#define TAU_CONTROLLER_RESYNC_NEVER UINT64_MAX

/** What a reconcile asks of the runtime besides its return code. */
typedef struct tau_controller_result {
	/** > 0: reconcile this key again after this many ms (sooner than the resync). */
	uint64_t requeue_after_ms;
} tau_controller_result;

/**
 * Reconcile one key (worker thread).  Return 0 when done (the key's failure
 * count is reset); -TAU_ECONFLICT when a write lost a race (retried soon,
 * logged at info); any other negative code is a failure: logged with the
 * thread error and retried with a per-key exponential backoff.
 */
typedef int (*tau_controller_reconcile_fn)(void *arg, tau_controller *ctl, const char *key,
                                           tau_controller_result *res);

/** Controller options.  Strings are copied. */
typedef struct tau_controller_options {
	const char *name;        /**< for logs ("workspace", "team-budget"); required */
	tau_kube_client *client; /**< borrowed; lent to reconcile by tau_controller_client */
	tau_kube_loop *loop;     /**< borrowed; informers attach to it; the caller runs it */
	tau_controller_reconcile_fn reconcile; /**< required */
	void *arg;                             /**< passed to reconcile and the watch callbacks */
	/** Non-NULL: the only key; every event, trigger and resync enqueues it. */
	const char *single_key;
	/** > 0: events and triggers enqueue after this delay (a storm makes one pass). */
	uint64_t coalesce_ms;
	/** 0 = TAU_CONTROLLER_DEFAULT_RESYNC_MS; TAU_CONTROLLER_RESYNC_NEVER = no periodic resync.
	 */
	uint64_t resync_ms;
	/** Optional: called once (loop thread) when every informer has listed once. */
	void (*on_synced)(void *arg, tau_controller *ctl);
} tau_controller_options;

/** Event kinds handed to a custom key function. */
typedef enum tau_controller_event {
	TAU_CONTROLLER_ADDED = 0,
	TAU_CONTROLLER_UPDATED,
	TAU_CONTROLLER_DELETED
} tau_controller_event;

/** How a watch's events become keys (ignored with single_key). */
typedef enum tau_controller_keys {
	TAU_CONTROLLER_KEYS_NAME = 0, /**< metadata.name */
	TAU_CONTROLLER_KEYS_NS_NAME,  /**< "namespace/name" ("name" when cluster-scoped) */
	TAU_CONTROLLER_KEYS_LABEL,    /**< the value of label `label` (old and new object) */
	TAU_CONTROLLER_KEYS_ALL,      /**< every key of the primary watch (its cache) */
	TAU_CONTROLLER_KEYS_CUSTOM    /**< keys_fn decides, calling tau_controller_enqueue_event */
} tau_controller_keys;

/** One informer of a controller. */
typedef struct tau_controller_watch_opts {
	const tau_kube_resource *res; /**< required; borrowed (must outlive the controller) */
	const char *namespace;        /**< NULL = all namespaces / cluster scope */
	const char *label_selector;
	const char *field_selector;
	tau_controller_keys keys;
	const char *label; /**< TAU_CONTROLLER_KEYS_LABEL */
	/** TAU_CONTROLLER_KEYS_CUSTOM: `old_obj` is NULL except for updates. */
	void (*keys_fn)(void *arg, tau_controller *ctl, tau_controller_event ev,
	                const cJSON *old_obj, const cJSON *obj);
	/** Resync (and KEYS_ALL) enqueue every object of this watch: "namespace/name" with
	 *  NS_NAME keys, else the name (NAME or CUSTOM).  At most one watch is primary. */
	bool primary;
	/** Optional pruning of cached objects (tau_kube_informer_options.transform). */
	void (*transform)(void *arg, cJSON *obj);
} tau_controller_watch_opts;

/** Counters (tests, metrics). */
typedef struct tau_controller_stats {
	uint64_t reconciles; /**< reconcile calls that returned (counted with their outcome) */
	uint64_t failures;   /**< of which returned an error other than a conflict */
	uint64_t conflicts;  /**< of which returned -TAU_ECONFLICT */
	uint64_t resyncs;    /**< resync rounds (periodic, at the gate, and triggers of all) */
	uint64_t enqueue_failures; /**< keys the queue refused (out of memory); resync heals */
} tau_controller_stats;

/**
 * Make a controller (no informer yet, nothing running).
 * @return 0, -TAU_EINVAL (no name, client, loop or reconcile), -TAU_ENOMEM.
 */
int tau_controller_new(tau_controller **out, const tau_controller_options *opts);

/**
 * Add an informer.  Only before tau_controller_start_informers.
 * @param inf  receives the informer (owned by the controller) for cache reads; may be NULL.
 * @return 0, -TAU_EINVAL (no resource, a second primary, KEYS_LABEL without a
 *         label, KEYS_CUSTOM without keys_fn, KEYS_ALL without a primary
 *         watch added first, already started), -TAU_ENOMEM.
 */
int tau_controller_watch(tau_kube_informer **inf, tau_controller *ctl,
                         const tau_controller_watch_opts *w);

/** Start listing and watching (every replica).  Idempotent. */
void tau_controller_start_informers(tau_controller *ctl);

/**
 * Start the worker (on becoming leader): it waits for the synced gate, then
 * resyncs every key once and reconciles.  Starting informers too if needed.
 * @return 0 (also when already running), -TAU_EIO (thread creation failed).
 */
int tau_controller_start_worker(tau_controller *ctl);

/**
 * Stop the worker (on losing leadership, or before free): waits for a
 * reconcile in progress, leaves queued keys queued (informers keep running
 * and a later start resyncs).  Idempotent.
 */
void tau_controller_stop_worker(tau_controller *ctl);

/** True while the worker runs. */
bool tau_controller_worker_running(tau_controller *ctl);

/** Stop and free; call with the kube loop not running.  NULL is a no-op. */
void tau_controller_free(tau_controller *ctl);

/** True once every informer has completed its first list. */
bool tau_controller_synced(tau_controller *ctl);

/**
 * Wait until synced, at most `timeout_ms`.
 * @return 0, -TAU_ETIMEOUT (the thread error names the watches not synced).
 */
int tau_controller_wait_synced(tau_controller *ctl, uint64_t timeout_ms);

/**
 * Queue `key` now.  @return 0, -TAU_EINVAL (empty or too long), -TAU_ENOMEM;
 * a failure is also counted and logged (the resync heals it).
 */
int tau_controller_enqueue(tau_controller *ctl, const char *key);

/** Queue `key` after `delay_ms` (an earlier pending time wins).  Returns as tau_controller_enqueue.
 */
int tau_controller_enqueue_after(tau_controller *ctl, const char *key, uint64_t delay_ms);

/** Queue `key` as an event does: after coalesce_ms.  For custom key functions. */
int tau_controller_enqueue_event(tau_controller *ctl, const char *key);

/**
 * Say "look again" from any thread (e.g. the inventory pool changed):
 * `key`, or with NULL the single key / every key of the primary watch,
 * each after coalesce_ms.  @return 0 or the first enqueue error.
 */
int tau_controller_trigger(tau_controller *ctl, const char *key);

/** The client reconcile writes with (lent). */
tau_kube_client *tau_controller_client(tau_controller *ctl);

/** The controller's name (lent). */
const char *tau_controller_name(const tau_controller *ctl);

/** Copy the counters. */
void tau_controller_stats_get(tau_controller *ctl, tau_controller_stats *out);

/**
 * Append the metrics of `n` controllers as Prometheus text (docs/aggregator.md):
 * tau_controller_reconcile_total, _errors_total, _conflicts_total, tau_controller_resyncs_total,
 * tau_controller_enqueue_failures_total and tau_controller_reconcile_duration_seconds by
 * `controller`; tau_workqueue_depth, _delayed, _adds_total, _retries_total and
 * tau_workqueue_queue_duration_seconds by `name` (the controller's).  Any thread; the
 * controllers must stay alive for the call.  Failures stick in `b`.
 */
void tau_controller_metrics_write(tau_buf *b, tau_controller *const *ctls, size_t n);

#endif /* TAU_AGGREGATOR_CONTROLLER_RUNTIME_H */
