/*
 * service_pool.c - the pool publisher and its subscribers.
 *
 * WatchPool pushes are coalesced: changes only mark the pool dirty, and the publisher thread
 * rebuilds it once per window, publishing only when the packed content (without generation
 * and time) differs from the last published one.  Its periodic tick also runs the sync gate,
 * and subscribers (snapshot.h: the budget controller) hear of a change after it, with no lock
 * held.
 */
#include "service_internal.h"

#include "nodestore.h"
#include "query.h"
#include "snapshot.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/rpc_server.h"
#include "tau/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WATCH_QUEUE_MAX 4 /* a watcher further behind gets the newest pool later */

void tau_inventory_mark_dirty_locked(tau_inventory *a)
{
	if (!a->dirty) {
		a->dirty = true;
		pthread_cond_signal(&a->cond);
	}
}

/* ---- pool snapshot and watchers (state mutex held) ---- */

void tau_inventory_send_to_watchers_locked(tau_inventory *a)
{
	for (size_t i = 0; i < a->n_watchers; i++) {
		watcher *w = &a->watchers[i];

		if (a->pool_msg == NULL || w->sent_generation == a->pool_gen)
			continue;
		if (tau_rpc_call_send_queue_len(w->call) >= WATCH_QUEUE_MAX)
			continue; /* behind: the publisher's tick retries with the newest pool */
		if (tau_rpc_call_send(w->call, &a->pool_msg->base) == 0)
			w->sent_generation = a->pool_gen;
	}
}

static void rebuild_pool_locked(tau_inventory *a)
{
	Tau__Inventory__V1__Pool *p = NULL;
	uint8_t *key;
	size_t len;
	uint64_t t0 = tau_clock_mono_us(), t1;

	if (tau_query_pool(&p, a->store) < 0)
		return; /* stays dirty: retried on the next tick */
	a->dirty = false;
	len = protobuf_c_message_get_packed_size(&p->base);
	key = malloc(len > 0 ? len : 1);
	if (key == NULL) {
		protobuf_c_message_free_unpacked(&p->base, NULL);
		a->dirty = true;
		return;
	}
	protobuf_c_message_pack(&p->base, key);
	t1 = tau_clock_mono_us();
	a->build_us = (int64_t)(t1 - t0);
	a->built_us = t1;
	if (a->pool_msg != NULL && len == a->pool_key_len && memcmp(key, a->pool_key, len) == 0) {
		free(key);
		protobuf_c_message_free_unpacked(&p->base, NULL);
		return;
	}
	free(a->pool_key);
	a->pool_key = key;
	a->pool_key_len = len;
	p->generation = ++a->pool_gen;
	p->computed_unix_ms = tau_clock_wall_ms();
	if (a->pool_msg != NULL)
		protobuf_c_message_free_unpacked(&a->pool_msg->base, NULL);
	a->pool_msg = p;
	if (p->established)
		tau_log_debug("pool published", NULL);
	tau_inventory_send_to_watchers_locked(a);
}

void tau_inventory_ensure_pool_locked(tau_inventory *a)
{
	if (a->dirty || a->pool_msg == NULL)
		rebuild_pool_locked(a);
}

static void tick_locked(tau_inventory *a)
{
	uint64_t gen = tau_pool_generation(tau_nodestore_pool(a->store));

	if (!a->nodes_synced && a->sync_probe != NULL && a->sync_probe(a->sync_probe_ud)) {
		a->nodes_synced = true;
		tau_nodestore_api_synced(a->store);
		tau_log_info("Node and TauCluster watches synced", NULL);
	} else if (!a->nodes_synced && !a->warned_unsynced &&
	           (int64_t)tau_clock_wall_ms() >= a->sync_deadline_ms) {
		a->warned_unsynced = true;
		tau_log_warn("pool not established: the Node or TauCluster list has not been read "
		             "yet (is the TauCluster CRD installed? can the aggregator list both?)",
		             NULL);
	}
	tau_nodestore_tick(a->store, tau_clock_wall_ms());
	if (!a->told_established && tau_nodestore_established(a->store)) {
		size_t missing = tau_nodestore_missing(a->store, NULL, 0);
		char count[32];

		snprintf(count, sizeof(count), "%zu", missing);
		tau_log_info("pool established", "missing_nodes", count, NULL);
		if (missing > 0) {
			const char *names[16];
			size_t n = tau_nodestore_missing(a->store, names, 16);

			for (size_t i = 0; i < n && i < 16; i++)
				tau_log_warn(
				        "node counted from its Node object: agent never reported",
				        "node", names[i], NULL);
		}
		a->told_established = true;
		a->dirty = true;
	}
	if (gen != tau_pool_generation(tau_nodestore_pool(a->store)))
		a->dirty = true;
}

/* True (and the news marked as told) when subscribers must hear of a pool change. */
static bool take_pool_news_locked(tau_inventory *a)
{
	const tau_pool *pool = tau_nodestore_pool(a->store);
	uint64_t gen = tau_pool_generation(pool);
	bool established = tau_nodestore_established(a->store);
	bool valid = tau_pool_invalid_reason(pool) == NULL;

	if (!a->notify_pending && gen == a->notified_gen &&
	    established == a->notified_established && valid == a->notified_valid)
		return false;
	a->notify_pending = false;
	a->notified_gen = gen;
	a->notified_established = established;
	a->notified_valid = valid;
	return true;
}

/* Call every subscriber; no state lock held (they take snapshots). */
static void notify_subscribers(tau_inventory *a)
{
	pthread_mutex_lock(&a->subs_mu);
	for (size_t i = 0; i < a->n_subs; i++)
		a->sub_fn[i](a->sub_ud[i]);
	pthread_mutex_unlock(&a->subs_mu);
}

int tau_inventory_pool_subscribe(tau_inventory *a, tau_pool_changed_fn fn, void *ud)
{
	pthread_mutex_lock(&a->subs_mu);
	if (a->n_subs == SUBSCRIBERS_MAX) {
		pthread_mutex_unlock(&a->subs_mu);
		return tau_error_set(TAU_ETOOBIG, "more than %d pool subscribers", SUBSCRIBERS_MAX);
	}
	a->sub_fn[a->n_subs] = fn;
	a->sub_ud[a->n_subs] = ud;
	a->n_subs++;
	pthread_mutex_unlock(&a->subs_mu);
	pthread_mutex_lock(&a->mu);
	a->notify_pending = true;
	tau_inventory_mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	return 0;
}

int tau_inventory_pool_unsubscribe(tau_inventory *a, tau_pool_changed_fn fn, void *ud)
{
	int rc = tau_error_set(TAU_ENOTFOUND, "no such pool subscriber");

	pthread_mutex_lock(&a->subs_mu);
	for (size_t i = 0; i < a->n_subs; i++) {
		if (a->sub_fn[i] == fn && a->sub_ud[i] == ud) {
			memmove(&a->sub_fn[i], &a->sub_fn[i + 1],
			        (a->n_subs - i - 1) * sizeof(a->sub_fn[0]));
			memmove(&a->sub_ud[i], &a->sub_ud[i + 1],
			        (a->n_subs - i - 1) * sizeof(a->sub_ud[0]));
			a->n_subs--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&a->subs_mu);
	return rc;
}

int tau_inventory_pool_snapshot(tau_inventory *a, tau_pool_snapshot **out)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_pool_snapshot_build(out, a->store);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

void *tau_inventory_publisher(void *arg)
{
	tau_inventory *a = arg;

	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		struct timespec deadline;

		/* The periodic tick (sync-gate timer, watchers that were behind), or a change. */
		tau_thread_deadline_ms(&deadline, CLOCK_MONOTONIC, 250);
		while (!a->stop && !a->dirty &&
		       pthread_cond_timedwait(&a->cond, &a->mu, &deadline) != ETIMEDOUT)
			;
		if (a->dirty && a->cfg.coalesce_ms > 0) {
			/*
			 * Coalescing window: changes arriving in it ride along.  A rebuild is
			 * O(nodes) under the lock, so under churn (the last rebuild was within
			 * the stretched window) the window stretches to ten times its cost (at
			 * most 1 s): rebuilding then takes <= 10% of the time.  A change on a
			 * quiet system still goes out after the plain window.
			 */
			int64_t window = a->build_us / 100;
			int64_t since_ms = (int64_t)((tau_clock_mono_us() - a->built_us) / 1000);

			if (since_ms > window)
				window = a->cfg.coalesce_ms;
			if (window < a->cfg.coalesce_ms)
				window = a->cfg.coalesce_ms;
			if (window > 1000)
				window = 1000;
			tau_thread_deadline_ms(&deadline, CLOCK_MONOTONIC, window);
			while (!a->stop &&
			       pthread_cond_timedwait(&a->cond, &a->mu, &deadline) != ETIMEDOUT)
				;
		}
		if (a->stop)
			break;
		tick_locked(a);
		if (a->dirty)
			rebuild_pool_locked(a);
		tau_inventory_send_to_watchers_locked(a);
		if (take_pool_news_locked(a)) {
			pthread_mutex_unlock(&a->mu);
			notify_subscribers(a);
			pthread_mutex_lock(&a->mu);
		}
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}
