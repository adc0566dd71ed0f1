/*
 * metrics.c - Prometheus text rendering of the aggregator's metrics.
 *
 * Counters end in _total, every family has HELP and TYPE, label values are
 * escaped (backslash, quote, newline) because flavor and resource names come
 * from node labels and agents.  Quantities print exactly whenever they fit
 * in thousandths, so a dashboard sum matches `tau inventory pool`.
 */
#include "metrics.h"

#include "tau/error.h"
#include "tau/prom.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A family of three samples per flavor, labelled flavor and state (`gpus`: which array). */
static void flavor_states(tau_buf *b, const tau_metrics *m, const char *name, const char *help,
                          const char *const states[3], bool gpus)
{
	tau_prom_family(b, name, "gauge", help);
	for (size_t i = 0; i < m->n_flavors; i++) {
		const tau_metrics_flavor *f = &m->flavors[i];

		for (int k = 0; k < 3; k++) {
			tau_buf_printf(b, "%s{flavor=\"", name);
			tau_prom_label_value(b, f->name);
			tau_buf_printf(b, "\",state=\"%s\"} %llu\n", states[k],
			               (unsigned long long)(gpus ? f->gpus[k] : f->node_states[k]));
		}
	}
}

/* Free now per flavor (GetCapacity's figures): GPUs by state, nodes by state. */
static void free_now(tau_buf *b, const tau_metrics *m)
{
	static const char *const gpu_states[3] = {"healthy", "in_use", "free"};
	static const char *const node_states[3] = {"unknown", "degraded", "whole_free"};

	flavor_states(b, m, "tau_aggregator_free_now_gpus",
	              "GPUs on counted nodes whose node truth is known, per flavor: healthy, "
	              "in_use, free (GetCapacity; unknown nodes never count as free).",
	              gpu_states, true);
	flavor_states(b, m, "tau_aggregator_free_now_nodes",
	              "Counted nodes per flavor: unknown (no known node truth), degraded, "
	              "whole_free (every GPU healthy and free).",
	              node_states, false);
}

/* Where a sample's value is kept in tau_metrics: a uint64_t, or a bool rendered 0/1. */
#define U64(field)                                                                                 \
	{                                                                                          \
		offsetof(tau_metrics, field), false                                                \
	}
#define FLAG(field)                                                                                \
	{                                                                                          \
		offsetof(tau_metrics, field), true                                                 \
	}

#define METRIC_VALUES_MAX 5 /* label values of one family */

typedef struct metric_value {
	size_t at;
	bool flag;
} metric_value;

/*
 * One family: with `label` NULL a single unlabelled sample (values[0]), else one sample per
 * label value in `label_values`.  The tables list the families in the order /metrics shows
 * them.
 */
typedef struct metric_family {
	const char *name, *type, *help, *label;
	const char *label_values[METRIC_VALUES_MAX];
	metric_value values[METRIC_VALUES_MAX];
} metric_family;

static const metric_family nodes_families[] = {
        {"tau_aggregator_agents_connected",
         "gauge",
         "Agent Report streams open and bound to a node.",
         NULL,
         {NULL},
         {U64(agents_connected)}},
        {"tau_aggregator_nodes",
         "gauge",
         "Node records (from the Node watch or agents).",
         NULL,
         {NULL},
         {U64(nodes_known)}},
        {"tau_aggregator_nodes_stale",
         "gauge",
         "Nodes whose agent reported but is disconnected or silent for 3 heartbeats.",
         NULL,
         {NULL},
         {U64(nodes_stale)}},
        {"tau_aggregator_nodes_counted",
         "gauge",
         "Nodes counted in the pool.",
         NULL,
         {NULL},
         {U64(nodes_counted)}},
        {"tau_aggregator_nodes_agent_mismatch",
         "gauge",
         "Nodes whose agent's report differs from the Node object (the Node counts).",
         NULL,
         {NULL},
         {U64(nodes_mismatch)}},
        {"tau_aggregator_dra_devices",
         "gauge",
         "DRA devices counted on nodes under a quota resource (complete pools, usable "
         "classes, once each); a resource a node also advertises in allocatable "
         "counts from allocatable instead.",
         NULL,
         {NULL},
         {U64(dra_devices)}},
        {"tau_aggregator_dra_pools_incomplete",
         "gauge",
         "DRA pools (driver and pool name) of which nothing counts: not every slice "
         "of their newest generation is seen.",
         NULL,
         {NULL},
         {U64(dra_pools_incomplete)}},
        {"tau_aggregator_dra_classes_unusable",
         "gauge",
         "DeviceClasses that count nothing: a selector outside the CEL subset, or "
         "Kueue maps them under two names.",
         NULL,
         {NULL},
         {U64(dra_classes_unusable)}},
};

static const metric_family streams_families[] = {
        {"tau_aggregator_reports_total",
         "counter",
         "Agent reports processed, by kind (duplicates not counted).",
         "kind",
         {"inventory", "heartbeat", "stopping"},
         {U64(reports_inventory), U64(reports_heartbeat), U64(reports_stopping)}},
        {"tau_aggregator_reports_unchanged_total",
         "counter",
         "Inventories recognised as the one their stream sent before but for digest and time, "
         "stored as a heartbeat is (counted in reports_total too).",
         NULL,
         {NULL},
         {U64(reports_unchanged)}},
        {"tau_aggregator_reports_rejected_total",
         "counter",
         "Reports answered ACK_STATUS_REJECTED (invalid content).",
         NULL,
         {NULL},
         {U64(reports_rejected)}},
        {"tau_aggregator_reports_resend_full_total",
         "counter",
         "Reports answered ACK_STATUS_RESEND_FULL.",
         NULL,
         {NULL},
         {U64(reports_resend_full)}},
        {"tau_aggregator_auth_failures_total",
         "counter",
         "Report streams refused, by gRPC status.",
         "code",
         {"UNAUTHENTICATED", "PERMISSION_DENIED", "UNAVAILABLE", "RESOURCE_EXHAUSTED"},
         {U64(auth_unauthenticated), U64(auth_permission_denied), U64(auth_unavailable),
          U64(auth_overloaded)}},
        {"tau_aggregator_token_reviews_total",
         "counter",
         "TokenReviews sent to the API server (review cache misses).",
         NULL,
         {NULL},
         {U64(token_reviews)}},
        {"tau_aggregator_token_reviews_pending",
         "gauge",
         "Report token reviews queued or running (capped by --max-pending-reviews, and "
         "per peer by --max-reviews-per-peer).",
         NULL,
         {NULL},
         {U64(token_reviews_pending)}},
        {"tau_aggregator_tokens_refused_unreviewed_total",
         "counter",
         "Report tokens refused before any TokenReview, by reason.",
         "reason",
         {"not_jwt", "claims"},
         {U64(tokens_not_jwt), U64(tokens_not_agent)}},
        {"tau_aggregator_streams_ended_unauthenticated_total",
         "counter",
         "Report streams cancelled or lost before their token review finished.",
         NULL,
         {NULL},
         {U64(ended_unauthenticated)}},
        {"tau_aggregator_auth_local_total",
         "counter",
         "Report tokens checked against the issuer's keys: admitted at once, or left "
         "to wait for their TokenReview (unknown_key, invalid, queue_full).",
         "result",
         {"admitted", "unknown_key", "invalid", "queue_full"},
         {U64(local_admitted), U64(local_unknown_key), U64(local_invalid), U64(local_queue_full)}},
        {"tau_aggregator_auth_confirm_total",
         "counter",
         "Confirming TokenReviews of locally admitted streams, by outcome (refused "
         "and failed close the stream).",
         "result",
         {"confirmed", "refused", "failed"},
         {U64(confirmed), U64(confirm_refused), U64(confirm_failed)}},
        {"tau_aggregator_auth_confirms_pending",
         "gauge",
         "Locally admitted streams whose confirming TokenReview is queued or running.",
         NULL,
         {NULL},
         {U64(confirms_pending)}},
        {"tau_aggregator_auth_keys_fetches_total",
         "counter",
         "Fetches of the service-account issuer's keys (/openid/v1/jwks), by result.",
         "result",
         {"ok", "error"},
         {U64(keys_fetched), U64(keys_fetch_failed)}},
        {"tau_aggregator_auth_keys",
         "gauge",
         "Keys of the service-account issuer held for local token checks.",
         NULL,
         {NULL},
         {U64(keys_held)}},
        {"tau_aggregator_grpc_refused_total",
         "counter",
         "gRPC calls refused RESOURCE_EXHAUSTED before any handler ran, by reason.",
         "reason",
         {"streams_per_peer", "metadata_size"},
         {U64(grpc_refused_per_peer), U64(grpc_refused_metadata)}},
        {"tau_aggregator_pool_watchers",
         "gauge",
         "Open WatchPool streams.",
         NULL,
         {NULL},
         {U64(pool_watchers)}},
        {"tau_aggregator_pool_watchers_refused_total",
         "counter",
         "WatchPool calls refused RESOURCE_EXHAUSTED (--max-pool-watchers reached).",
         NULL,
         {NULL},
         {U64(pool_watchers_refused)}},
        {"tau_aggregator_query_auth_total",
         "counter",
         "QueryService calls by authentication/authorization outcome.",
         "code",
         {"OK", "UNAUTHENTICATED", "PERMISSION_DENIED", "UNAVAILABLE", "RESOURCE_EXHAUSTED"},
         {U64(query_allowed), U64(query_unauthenticated), U64(query_denied), U64(query_unavailable),
          U64(query_overloaded)}},
        {"tau_aggregator_query_reviews_total",
         "counter",
         "TokenReview and SubjectAccessReview pairs sent for queries (cache misses).",
         NULL,
         {NULL},
         {U64(query_reviews)}},
        {"tau_aggregator_query_reviews_pending",
         "gauge",
         "Query token reviews waiting for a worker (capped by --max-pending-reviews).",
         NULL,
         {NULL},
         {U64(query_reviews_pending)}},
};

static const metric_family pool_families[] = {
        {"tau_aggregator_pool_established",
         "gauge",
         "1 once the sync gate opened (every GPU node reported or the timeout passed).",
         NULL,
         {NULL},
         {FLAG(established)}},
        {"tau_aggregator_pool_valid",
         "gauge",
         "1 while every input the pool depends on is usable (0: nothing counts; see "
         "GetPool.invalid_reason).",
         NULL,
         {NULL},
         {FLAG(valid)}},
        {"tau_aggregator_pool_missing_nodes",
         "gauge",
         "GPU nodes known from the API whose agent has not reported.",
         NULL,
         {NULL},
         {U64(missing_nodes)}},
        {"tau_aggregator_pool_generation_total",
         "counter",
         "Changes of the published pool (its generation).",
         NULL,
         {NULL},
         {U64(pool_generation)}},
        {"tau_aggregator_leader",
         "gauge",
         "1 while this replica holds the leader Lease.",
         NULL,
         {NULL},
         {FLAG(leader)}},
};

static uint64_t metric_value_of(const tau_metrics *m, metric_value v)
{
	const char *at = (const char *)m + v.at;
	uint64_t n;
	bool flag;

	if (v.flag) {
		memcpy(&flag, at, sizeof(flag));
		return flag ? 1 : 0;
	}
	memcpy(&n, at, sizeof(n));
	return n;
}

static void render_families(tau_buf *b, const tau_metrics *m, const metric_family *fams, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const metric_family *f = &fams[i];

		if (f->label == NULL) {
			tau_prom_scalar(b, f->name, f->type, f->help,
			                metric_value_of(m, f->values[0]));
			continue;
		}
		tau_prom_family(b, f->name, f->type, f->help);
		for (size_t k = 0; k < METRIC_VALUES_MAX && f->label_values[k] != NULL; k++)
			tau_prom_labelled(b, f->name, f->label, f->label_values[k],
			                  metric_value_of(m, f->values[k]));
	}
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

int tau_metrics_render(char **out, const tau_metrics *m)
{
	tau_buf b = TAU_BUF_INIT(0);

	render_families(&b, m, nodes_families, N_OF(nodes_families));
	tau_prom_family(&b, "tau_aggregator_node_truth_disagreements", "gauge",
	                "Nodes whose own agent sees less than the Node advertises, by agent.* "
	                "explain rule (the Node still counts).");
	for (int i = 0; i < TAU_TRUTH_RULE_COUNT; i++)
		tau_prom_labelled(&b, "tau_aggregator_node_truth_disagreements", "rule",
		                  tau_truth_rule_name((tau_truth_rule_id)i),
		                  m->node_truth_failing[i]);
	render_families(&b, m, streams_families, N_OF(streams_families));
	tau_prom_family(&b, "tau_aggregator_token_review_duration_seconds", "histogram",
	                "Time a review took: a Report token's TokenReview (kind=report), a "
	                "query's TokenReview and SubjectAccessReview (kind=query).");
	if (m->report_review_latency != NULL)
		tau_prom_histogram_write(&b, "tau_aggregator_token_review_duration_seconds",
		                         (const char *const[]){"kind", "report", NULL},
		                         m->report_review_latency);
	if (m->query_review_latency != NULL)
		tau_prom_histogram_write(&b, "tau_aggregator_token_review_duration_seconds",
		                         (const char *const[]){"kind", "query", NULL},
		                         m->query_review_latency);
	render_families(&b, m, pool_families, N_OF(pool_families));
	tau_prom_family(&b, "tau_aggregator_pool_flavor_nodes", "gauge",
	                "Nodes counted per flavor.");
	for (size_t i = 0; i < m->n_flavors; i++) {
		tau_prom_labelled(&b, "tau_aggregator_pool_flavor_nodes", "flavor",
		                  m->flavors[i].name, m->flavors[i].nodes);
	}
	free_now(&b, m);
	for (int u = 0; u < TAU_PROM_UNITS; u++) {
		static const char *const help[TAU_PROM_UNITS] = {
		        "Sum of allocatable cpu per flavor, in cores.",
		        "Sum of allocatable memory, storage and hugepages per flavor and resource, "
		        "in "
		        "bytes.",
		        "Sum of allocatable counted resources (GPUs, RDMA devices, pods) per "
		        "flavor and "
		        "resource."};
		char name[64];

		snprintf(name, sizeof(name), "tau_aggregator_pool_allocatable%s",
		         tau_prom_unit_suffix((tau_prom_unit)u));
		tau_prom_family(&b, name, "gauge", help[u]);
		for (size_t i = 0; i < m->n_resources; i++) {
			if (tau_prom_resource_unit(m->resources[i].resource) != (tau_prom_unit)u)
				continue;
			tau_buf_printf(&b, "%s{flavor=\"", name);
			tau_prom_label_value(&b, m->resources[i].flavor);
			tau_buf_printf(&b, "\",resource=\"");
			tau_prom_label_value(&b, m->resources[i].resource);
			tau_buf_printf(&b, "\"} %s\n", m->resources[i].value);
		}
	}
	if (tau_buf_error(&b) < 0 || (*out = tau_buf_take(&b, NULL)) == NULL) {
		tau_buf_free(&b);
		return tau_error_set(TAU_ENOMEM, "out of memory rendering metrics");
	}
	return 0;
}
