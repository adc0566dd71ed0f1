/*
 * service_metrics.c - what the HTTP side reads from the state: whether the sync gate opened,
 * and /metrics (tau_inventory_metrics) gathered from the node store, the pool, the counters of the
 * Report streams and reviews, the issuer's keys, the rpc server and the query guard, then
 * rendered by metrics.c.
 */
#include "service_internal.h"

#include "capacity.h"
#include "drastore.h"
#include "keys.h"
#include "metrics.h"
#include "nodestore.h"
#include "query_auth.h"
#include "query.h"
#include "truthrules.h"

#include "tau/error.h"
#include "tau/prom.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

bool tau_inventory_established(tau_inventory *a)
{
	bool e;

	pthread_mutex_lock(&a->mu);
	e = tau_nodestore_established(a->store);
	pthread_mutex_unlock(&a->mu);
	return e;
}

int tau_inventory_metrics(tau_inventory *a, char **out)
{
	tau_metrics m = {0};
	tau_metrics_flavor *flavors = NULL;
	tau_metrics_resource *resources = NULL;
	size_t n_res = 0, cap_res = 0;
	tau_query_opts o = tau_inventory_query_opts(a);
	const tau_pool *pool;
	int rc = -TAU_ENOMEM;

	pthread_mutex_lock(&a->mu);
	pool = tau_nodestore_pool(a->store);
	m.nodes_known = tau_nodestore_count(a->store);
	for (size_t i = 0; i < m.nodes_known; i++) {
		tau_node_status st;

		if (tau_nodestore_at(a->store, i, &st) < 0)
			continue;
		m.nodes_stale += tau_query_is_stale(&st, &o) ? 1 : 0;
		m.nodes_counted += st.counted ? 1 : 0;
		/* The verdicts the store keeps with each record: no rule runs for a scrape. */
		for (int r = 0; r < TAU_TRUTH_RULE_COUNT; r++)
			m.node_truth_failing[r] += (st.truth_failed >> r) & 1u;
	}
	m.nodes_mismatch = tau_nodestore_mismatch_count(a->store);
	{
		tau_dra_totals dra = tau_dra_view_totals(tau_nodestore_dra_view(a->store));

		m.dra_devices = dra.devices;
		m.dra_pools_incomplete = dra.pools_incomplete;
		m.dra_classes_unusable = dra.classes_unusable;
	}
	m.agents_connected = a->bindings.len;
	m.pool_watchers = a->n_watchers;
	m.established = tau_nodestore_established(a->store);
	m.valid = tau_pool_invalid_reason(pool) == NULL;
	m.missing_nodes = tau_nodestore_missing(a->store, NULL, 0);
	m.pool_generation = a->pool_gen;
	m.leader = a->leader;
	m.n_flavors = tau_pool_flavor_count(pool);
	flavors = calloc(m.n_flavors + 1, sizeof(*flavors));
	if (flavors == NULL)
		goto unlock;
	for (size_t i = 0; i < m.n_flavors; i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(pool, i);

		tau_class_capacity now;

		flavors[i].name = f->name;
		flavors[i].nodes = f->nodes;
		if (tau_capacity_class(&now, a->store, i, &o) == 0) {
			flavors[i].gpus[0] = now.gpus_healthy;
			flavors[i].gpus[1] = now.gpus_in_use;
			flavors[i].gpus[2] = now.gpus_free;
			flavors[i].node_states[0] = now.nodes_unknown;
			flavors[i].node_states[1] = now.nodes_degraded;
			flavors[i].node_states[2] = now.whole_nodes_free;
		}
		for (size_t r = 0; r < f->n_resources; r++) {
			if (n_res == cap_res) {
				size_t cap = cap_res ? cap_res * 2 : 32;
				tau_metrics_resource *g = realloc(resources, cap * sizeof(*g));

				if (g == NULL)
					goto unlock;
				resources = g;
				cap_res = cap;
			}
			resources[n_res].flavor = f->name;
			resources[n_res].resource = f->resources[r].name;
			if (tau_prom_quantity_value(resources[n_res].value,
			                            sizeof(resources[n_res].value),
			                            &f->resources[r].total) < 0)
				snprintf(resources[n_res].value, sizeof(resources[n_res].value),
				         "NaN");
			n_res++;
		}
	}
	m.flavors = flavors;
	m.resources = resources;
	m.n_resources = n_res;
	m.reports_inventory = atomic_load(&a->reports_inventory);
	m.reports_unchanged = atomic_load(&a->reports_same);
	m.reports_heartbeat = atomic_load(&a->reports_heartbeat);
	m.reports_stopping = atomic_load(&a->reports_stopping);
	m.reports_rejected = atomic_load(&a->reports_rejected);
	m.reports_resend_full = atomic_load(&a->reports_resend);
	m.auth_unauthenticated = atomic_load(&a->auth_unauth);
	m.auth_permission_denied = atomic_load(&a->auth_denied);
	m.auth_unavailable = atomic_load(&a->auth_unavail);
	m.token_reviews = atomic_load(&a->token_reviews);
	m.auth_overloaded = atomic_load(&a->auth_overloaded);
	m.tokens_not_jwt = atomic_load(&a->tokens_not_jwt);
	m.tokens_not_agent = atomic_load(&a->tokens_not_agent);
	m.ended_unauthenticated = atomic_load(&a->ended_unauthenticated);
	m.local_admitted = atomic_load(&a->local_admitted);
	m.local_unknown_key = atomic_load(&a->local_unknown_key);
	m.local_invalid = atomic_load(&a->local_invalid);
	m.local_queue_full = atomic_load(&a->local_queue_full);
	m.confirmed = atomic_load(&a->confirmed);
	m.confirm_refused = atomic_load(&a->confirm_refused);
	m.confirm_failed = atomic_load(&a->confirm_failed);
	{
		tau_auth_keys_stats ks;

		tau_auth_keys_stats_get(a->cfg.keys, &ks);
		m.keys_fetched = ks.fetched;
		m.keys_fetch_failed = ks.fetch_failed;
		m.keys_held = ks.keys;
	}
	pthread_mutex_lock(&a->jobs_mu);
	m.token_reviews_pending = a->reviews_pending;
	m.confirms_pending = a->confirms_pending;
	pthread_mutex_unlock(&a->jobs_mu);
	if (a->srv != NULL) {
		tau_rpc_server_stats st;

		tau_rpc_server_stats_get(a->srv, &st);
		m.grpc_refused_per_peer = st.refused_peer_cap;
		m.grpc_refused_metadata = st.refused_metadata;
	}
	{
		tau_query_auth_counts qc;

		m.pool_watchers_refused = atomic_load(&a->watchers_refused);
		tau_query_auth_counts_get(a->cfg.query_auth, &qc);
		m.query_allowed = qc.allowed;
		m.query_unauthenticated = qc.unauthenticated;
		m.query_denied = qc.denied;
		m.query_unavailable = qc.unavailable;
		m.query_overloaded = qc.overloaded;
		m.query_reviews = qc.reviews;
		m.query_reviews_pending = qc.pending;
		m.query_review_latency = tau_query_auth_review_latency(a->cfg.query_auth);
	}
	m.report_review_latency = &a->review_latency;
	/* Names are lent from the pool: render before letting go of the lock. */
	rc = tau_metrics_render(out, &m);
unlock:
	pthread_mutex_unlock(&a->mu);
	free(flavors);
	free(resources);
	return rc;
}
