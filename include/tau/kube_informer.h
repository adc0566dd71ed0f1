/*
 * tau/kube_informer.h - list+watch informers sharing one curl-multi event loop.
 *
 * A tau_kube_loop owns one curl multi handle; any number of informers
 * attach to it, so a daemon watches many resources with one thread.  Each
 * informer follows client-go's reflector: list (paged) and keep a local
 * cache keyed by "namespace/name" ("name" for cluster-scoped kinds), then
 * watch from the list's resourceVersion with bookmarks; a clean end of
 * stream re-watches from the last resourceVersion seen; 410 Expired (as an
 * HTTP status or an ERROR event), an oversized event line or an
 * undecodable event relists, and a relist delivers deletes for objects
 * that vanished meanwhile; other failures back off (800 ms doubling to
 * 30 s, jittered) and retry.
 *
 * Threads: handlers run on the loop thread, without informer locks held,
 * and must not free the informer or loop.  The cache read functions
 * (get, snapshot, count, has_synced) are safe from any thread.
 */
#ifndef TAU_KUBE_INFORMER_H
#define TAU_KUBE_INFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "tau/kube.h"

typedef struct tau_kube_loop tau_kube_loop;
typedef struct tau_kube_informer tau_kube_informer;

/**
 * A loop for `client` (borrowed; must outlive the loop).
 * @return 0, -TAU_ENOMEM, -TAU_EIO (curl multi init failed).
 */
int tau_kube_loop_new(tau_kube_loop **out, tau_kube_client *client);

/** Free the loop; every informer must have been freed first.  NULL is a no-op. */
void tau_kube_loop_free(tau_kube_loop *loop);

/**
 * Join the loop's thread if it runs, free every informer still in the loop (their
 * owners' pointers are then dangling), then free the loop: an owner's teardown in
 * one call.  NULL is a no-op.
 */
void tau_kube_loop_free_all(tau_kube_loop *loop);

/**
 * Run the loop on the calling thread until tau_kube_loop_stop.
 * @return 0 after a stop, -TAU_EIO on a curl multi failure.
 */
int tau_kube_loop_run(tau_kube_loop *loop);

/** Run for at most `ms` milliseconds (or until stopped); for tests and tools. */
int tau_kube_loop_run_for(tau_kube_loop *loop, uint64_t ms);

/**
 * How many times the loop has woken from its wait (a socket, a due time, curl's
 * timer or a wakeup from another thread).  An idle loop does not wake: there is
 * no periodic tick.  Callable from any thread.
 */
uint64_t tau_kube_loop_wakeups(tau_kube_loop *loop);

/** Ask a running loop to return; callable from any thread or a handler. */
void tau_kube_loop_stop(tau_kube_loop *loop);

/** Run the loop on a new thread.  @return 0 or -TAU_EIO. */
int tau_kube_loop_start_thread(tau_kube_loop *loop);

/** Stop the loop thread started above and wait for it.  No-op if none. */
void tau_kube_loop_join(tau_kube_loop *loop);

/** Event handlers; any may be NULL.  Objects are lent for the call only. */
typedef struct tau_kube_handlers {
	void (*on_add)(void *arg, const cJSON *obj);
	void (*on_update)(void *arg, const cJSON *old_obj, const cJSON *new_obj);
	void (*on_delete)(void *arg, const cJSON *last_obj);
	void *arg;
} tau_kube_handlers;

/** Informer options; zeroed fields take the defaults in brackets. */
typedef struct tau_kube_informer_options {
	const char *namespace;      /**< NULL = all namespaces / cluster scope */
	const char *label_selector; /**< NULL = everything */
	const char *field_selector;
	int64_t page_size;           /**< list page size [500] */
	int64_t watch_timeout_min_s; /**< watch timeoutSeconds drawn from [min, max) [300] */
	int64_t watch_timeout_max_s; /**< [600] */
	uint64_t backoff_initial_ms; /**< [800] */
	uint64_t backoff_cap_ms;     /**< [30000] */
	uint64_t backoff_reset_ms;   /**< quiet time that resets the backoff [120000] */
	/**
	 * Optional: prune an object in place before it is cached and handed to the
	 * handlers (called with the handlers' `arg`); it must keep metadata.name,
	 * metadata.namespace and metadata.resourceVersion.  Lets a controller that
	 * reads a few fields of many objects cache only those.
	 */
	void (*transform)(void *arg, cJSON *obj);
	/**
	 * Optional: called on the loop thread (with the handlers' `arg`) after every
	 * complete list, the first of which makes has_synced true.  An empty list
	 * delivers no add, so this is how an owner learns it has seen everything.
	 */
	void (*on_synced)(void *arg);
	/**
	 * A list answered 404 (the kind is not served: an API group the cluster does not
	 * have, such as resource.k8s.io/v1 before Kubernetes 1.34) counts as a complete,
	 * empty list: the cache empties (deletes delivered), has_synced turns true, on_synced
	 * runs, and the list is tried again on the backoff schedule instead of being watched,
	 * so a kind served later is picked up.  Off by default: a 404 backs off unsynced.
	 */
	bool not_served_is_empty;
} tau_kube_informer_options;

/**
 * Make an informer for `res` on `loop` (both borrowed).  It does nothing
 * until tau_kube_informer_start.  The option strings are copied.
 * @return 0, -TAU_EINVAL (namespace given for a cluster-scoped kind), -TAU_ENOMEM.
 */
int tau_kube_informer_new(tau_kube_informer **out, tau_kube_loop *loop,
                          const tau_kube_resource *res, const tau_kube_informer_options *opts,
                          const tau_kube_handlers *handlers);

/** Begin listing and watching (takes effect on the loop thread).  Thread-safe. */
void tau_kube_informer_start(tau_kube_informer *inf);

/**
 * Detach and free an informer.  Call with the loop not running (or from
 * the loop thread outside a handler).  NULL is a no-op.
 */
void tau_kube_informer_free(tau_kube_informer *inf);

/** True once the first full list has been applied to the cache. */
bool tau_kube_informer_has_synced(tau_kube_informer *inf);

/** Objects in the cache. */
size_t tau_kube_informer_count(tau_kube_informer *inf);

/**
 * Copy one cached object.  @param ns NULL for cluster scope.
 * @param out receives a deep copy (cJSON_Delete); untouched on failure
 * @return 0, -TAU_ENOTFOUND, -TAU_ENOMEM.
 */
int tau_kube_informer_get(cJSON **out, tau_kube_informer *inf, const char *ns, const char *name);

/**
 * Copy the whole cache as a JSON array of objects, sorted by key.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_kube_informer_snapshot(cJSON **out, tau_kube_informer *inf);

/** The resourceVersion the informer has caught up to ("" before the first list). */
void tau_kube_informer_last_rv(tau_kube_informer *inf, char *buf, size_t cap);

/** Counters (tests, metrics, the benchmark). */
typedef struct tau_kube_informer_stats {
	uint64_t lists; /**< complete lists (initial + relists) */
	uint64_t list_pages;
	uint64_t watches; /**< watch requests started */
	uint64_t events;  /**< watch events applied (bookmarks excluded) */
	uint64_t bookmarks;
	uint64_t expired;           /**< 410s seen */
	uint64_t failures;          /**< failed list/watch requests */
	uint64_t synthetic_deletes; /**< deletes delivered by relists */
} tau_kube_informer_stats;

/** Copy the counters. */
void tau_kube_informer_stats_get(tau_kube_informer *inf, tau_kube_informer_stats *out);

/* ------------------------------------------------------------------ */
/* Watch framing (used by the informers; public so it can be fuzzed)   */

/** The type of one watch event. */
typedef enum tau_kube_watch_type {
	TAU_KUBE_WATCH_ADDED = 0,
	TAU_KUBE_WATCH_MODIFIED,
	TAU_KUBE_WATCH_DELETED,
	TAU_KUBE_WATCH_BOOKMARK,
	TAU_KUBE_WATCH_ERROR,
	TAU_KUBE_WATCH_OTHER /**< a type this client does not know: ignored */
} tau_kube_watch_type;

/** One decoded watch event. */
typedef struct tau_kube_watch_event {
	tau_kube_watch_type type;
	cJSON *object;            /**< the event's object (owned: cJSON_Delete); never NULL */
	tau_kube_api_error error; /**< TAU_KUBE_WATCH_ERROR: the Status decoded; else zero */
} tau_kube_watch_event;

/**
 * Split a watch response body into its lines (the API server writes one
 * JSON event and a '\n' per event, in chunks that may end anywhere).
 * Calls `fn` for each complete line, in order, without its '\n'.
 * @return the bytes consumed: everything through the last '\n'; the rest
 *         is an incomplete line for the caller to keep until more arrives.
 */
size_t tau_kube_watch_split(const char *buf, size_t len,
                            void (*fn)(void *arg, const char *line, size_t len), void *arg);

/**
 * Decode one watch line, {"type": T, "object": {...}}; trailing spaces and
 * '\r' are ignored.
 * @param out  filled on 0 (free out->object); zeroed otherwise.
 * @return 0; 1 for a blank line (nothing to do); -TAU_EINVAL, -TAU_ETYPE,
 *         -TAU_ENOTFOUND or -TAU_ETOOBIG for a line that is not an event
 *         (the informer relists then); -TAU_ENOMEM.
 */
int tau_kube_watch_decode(tau_kube_watch_event *out, const char *line, size_t len);

#endif /* TAU_KUBE_INFORMER_H */
