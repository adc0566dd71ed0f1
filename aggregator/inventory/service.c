/*
 * service.c - the inventory service's life cycle: create the state with its defaults, start
 * the auth workers and the pool publisher, stop them, free the state; plus the two small
 * thing every part of the service uses (logging once per peer).
 *
 * The state and how its parts share it: service_internal.h.  The parts: the Report stream
 * (service_report.c), the review queue and auth workers (service_review.c), the pool
 * publisher and its subscribers (service_pool.c), the gRPC methods (service_query.c), what the
 * kube side tells the state (service_kube.c), and /metrics (service_metrics.c).
 */
#include "service_internal.h"

#include "drastore.h"
#include "nodestore.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/hmap.h"
#include "tau/rpc_server.h"
#include "tau/thread.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PEER_LOG_MAX 4096

/* ---- logging once per peer ---- */

/* True the first time `key` is seen (bounded: the set is forgotten when full). */
bool tau_inventory_first_time(tau_inventory *a, const char *key)
{
	bool first = true;

	pthread_mutex_lock(&a->peers_mu);
	for (size_t i = 0; i < a->n_peers; i++) {
		if (strcmp(a->peers[i], key) == 0) {
			first = false;
			break;
		}
	}
	if (first) {
		if (a->n_peers == PEER_LOG_MAX) {
			for (size_t i = 0; i < a->n_peers; i++)
				free(a->peers[i]);
			a->n_peers = 0;
		}
		a->peers[a->n_peers] = strdup(key);
		if (a->peers[a->n_peers] != NULL)
			a->n_peers++;
	}
	pthread_mutex_unlock(&a->peers_mu);
	return first;
}

/* The peer's address without its port: one agent reconnecting is one peer. */
void tau_inventory_peer_host(char *out, size_t cap, const char *peer)
{
	const char *colon = peer != NULL ? strrchr(peer, ':') : NULL;
	size_t n = colon != NULL ? (size_t)(colon - peer) : (peer != NULL ? strlen(peer) : 0);

	if (n >= cap)
		n = cap - 1;
	memcpy(out, peer != NULL ? peer : "", n);
	out[n] = '\0';
}

/* ---- lifecycle ---- */

int tau_inventory_new(tau_inventory **out, const tau_inventory_config *cfg)
{
	tau_inventory *a;
	int rc;

	if (cfg->agent_user == NULL || cfg->review == NULL)
		return tau_error_set(TAU_EINVAL, "aggregator config needs agent_user and review");
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	a->cfg = *cfg;
	if (a->cfg.heartbeat_interval_s <= 0)
		a->cfg.heartbeat_interval_s = 30;
	if (a->cfg.sync_timeout_ms <= 0)
		a->cfg.sync_timeout_ms = 60000;
	if (a->cfg.auth_threads <= 0)
		a->cfg.auth_threads = 4;
	if (a->cfg.review_ttl_ms <= 0)
		a->cfg.review_ttl_ms = 300000;
	if (a->cfg.negative_ttl_ms <= 0)
		a->cfg.negative_ttl_ms = 10000;
	if (a->cfg.coalesce_ms < 0)
		a->cfg.coalesce_ms = 0;
	else if (a->cfg.coalesce_ms == 0)
		a->cfg.coalesce_ms = 20;
	if (a->cfg.auth_cache_max == 0)
		a->cfg.auth_cache_max = 65536;
	if (a->cfg.max_pool_watchers == 0)
		a->cfg.max_pool_watchers = 1024;
	if (a->cfg.max_pending_reviews == 0)
		a->cfg.max_pending_reviews = 256;
	if (a->cfg.max_reviews_per_peer == 0)
		a->cfg.max_reviews_per_peer = 8;
	if (a->cfg.max_pending_confirms == 0)
		a->cfg.max_pending_confirms = 65536;
	a->agent_user = strdup(cfg->agent_user);
	a->peers = calloc(PEER_LOG_MAX, sizeof(*a->peers));
	if (a->agent_user == NULL || a->peers == NULL || tau_hmap_init(&a->bindings, 1024) < 0 ||
	    tau_hmap_init(&a->review_peers, 256) < 0) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto fail;
	}
	a->sync_deadline_ms = tau_clock_wall_ms() + a->cfg.sync_timeout_ms;
	if ((rc = tau_nodestore_new(&a->store, tau_clock_wall_ms(), a->cfg.sync_timeout_ms)) < 0 ||
	    (rc = tau_dra_store_new(&a->dra)) < 0 ||
	    (rc = tau_auth_cache_new(&a->cache, a->cfg.auth_cache_max)) < 0)
		goto fail;
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->jobs_mu, NULL);
	pthread_mutex_init(&a->peers_mu, NULL);
	pthread_mutex_init(&a->ws_mu, NULL);
	pthread_mutex_init(&a->subs_mu, NULL);
	a->notified_valid = true;
	pthread_cond_init(&a->jobs_cond, NULL);
	tau_thread_cond_init_monotonic(&a->cond);
	a->dirty = true;
	*out = a;
	return 0;
fail:
	tau_nodestore_free(a->store);
	tau_dra_store_free(a->dra);
	free(a->agent_user);
	tau_hmap_destroy(&a->bindings);
	tau_hmap_destroy(&a->review_peers);
	free(a->peers);
	free(a);
	return rc;
}

int tau_inventory_start(tau_inventory *a)
{
	int rc = tau_thread_start_n(&a->workers, a->cfg.auth_threads, &a->n_workers,
	                            tau_inventory_auth_worker, a, "auth worker");

	if (rc < 0) {
		tau_inventory_stop(a);
		return rc;
	}
	if (pthread_create(&a->publisher, NULL, tau_inventory_publisher, a) != 0) {
		tau_inventory_stop(a);
		return tau_error_set(TAU_EIO, "cannot start pool publisher");
	}
	a->started = true;
	return 0;
}

void tau_inventory_stop(tau_inventory *a)
{
	tau_thread_stop_join(&a->jobs_mu, &a->jobs_cond, &a->jobs_stop, a->workers, a->n_workers);
	a->n_workers = 0;
	free(a->workers);
	a->workers = NULL;
	/* Jobs never taken: the rpc server is down, their calls are over. */
	pthread_mutex_lock(&a->jobs_mu);
	for (stream *s; (s = tau_inventory_next_job(a)) != NULL;) {
		tau_inventory_review_peer_release(a, s->rpeer);
		tau_inventory_stream_unref(s);
	}
	pthread_mutex_unlock(&a->jobs_mu);
	if (a->started) {
		tau_thread_stop_join(&a->mu, &a->cond, &a->stop, &a->publisher, 1);
		a->started = false;
	}
}

void tau_inventory_free(tau_inventory *a)
{
	if (a == NULL)
		return;
	tau_inventory_stop(a);
	for (size_t i = 0; i < a->n_watchers; i++)
		tau_rpc_call_unref(a->watchers[i].call);
	free(a->watchers);
	tau_hmap_destroy_free(&a->bindings, offsetof(binding, hnode));
	tau_hmap_destroy(&a->review_peers); /* empty: every review released its peer */
	for (size_t i = 0; i < a->n_peers; i++)
		free(a->peers[i]);
	free(a->peers);
	if (a->pool_msg != NULL)
		protobuf_c_message_free_unpacked(&a->pool_msg->base, NULL);
	free(a->pool_key);
	tau_nodestore_free(a->store);
	tau_dra_store_free(a->dra);
	tau_auth_cache_free(a->cache);
	free(a->agent_user);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->jobs_mu);
	pthread_mutex_destroy(&a->peers_mu);
	pthread_mutex_destroy(&a->ws_mu);
	pthread_mutex_destroy(&a->subs_mu);
	pthread_cond_destroy(&a->cond);
	pthread_cond_destroy(&a->jobs_cond);
	free(a);
}
