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

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
	char *p;
	size_t len, cap;
	bool failed;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap * 2 + (size_t)n;
			char *grown = realloc(b->p, cap);

			if (grown == NULL) {
				b->failed = true;
				return;
			}
			b->p = grown;
			b->cap = cap;
		}
	}
}

/* A label value with \, " and newline escaped. */
static void put_label(buf *b, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\')
			put(b, "\\\\");
		else if (*v == '"')
			put(b, "\\\"");
		else if (*v == '\n')
			put(b, "\\n");
		else
			put(b, "%c", *v);
	}
}

static void family(buf *b, const char *name, const char *type, const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	family(b, name, type, help);
	put(b, "%s %" PRIu64 "\n", name, v);
}

int tau_metrics_render(char **out, const tau_metrics *m)
{
	buf b = {.cap = 4096};

	b.p = malloc(b.cap);
	if (b.p == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory rendering metrics");
	b.p[0] = '\0';
	scalar(&b, "tau_aggregator_agents_connected", "gauge",
	       "Agent Report streams open and bound to a node.", m->agents_connected);
	scalar(&b, "tau_aggregator_nodes", "gauge", "Node records (from the Node watch or agents).",
	       m->nodes_known);
	scalar(&b, "tau_aggregator_nodes_stale", "gauge",
	       "Nodes whose agent reported but is disconnected or silent for 3 heartbeats.",
	       m->nodes_stale);
	scalar(&b, "tau_aggregator_nodes_counted", "gauge", "Nodes counted in the pool.",
	       m->nodes_counted);
	scalar(&b, "tau_aggregator_nodes_agent_mismatch", "gauge",
	       "Nodes whose agent's report differs from the Node object (the Node counts).",
	       m->nodes_mismatch);
	family(&b, "tau_aggregator_reports_total", "counter",
	       "Agent reports processed, by kind (duplicates not counted).");
	put(&b, "tau_aggregator_reports_total{kind=\"inventory\"} %" PRIu64 "\n",
	    m->reports_inventory);
	put(&b, "tau_aggregator_reports_total{kind=\"heartbeat\"} %" PRIu64 "\n",
	    m->reports_heartbeat);
	put(&b, "tau_aggregator_reports_total{kind=\"stopping\"} %" PRIu64 "\n",
	    m->reports_stopping);
	scalar(&b, "tau_aggregator_reports_rejected_total", "counter",
	       "Reports answered ACK_STATUS_REJECTED (invalid content).", m->reports_rejected);
	scalar(&b, "tau_aggregator_reports_resend_full_total", "counter",
	       "Reports answered ACK_STATUS_RESEND_FULL.", m->reports_resend_full);
	family(&b, "tau_aggregator_auth_failures_total", "counter",
	       "Report streams refused, by gRPC status.");
	put(&b, "tau_aggregator_auth_failures_total{code=\"UNAUTHENTICATED\"} %" PRIu64 "\n",
	    m->auth_unauthenticated);
	put(&b, "tau_aggregator_auth_failures_total{code=\"PERMISSION_DENIED\"} %" PRIu64 "\n",
	    m->auth_permission_denied);
	put(&b, "tau_aggregator_auth_failures_total{code=\"UNAVAILABLE\"} %" PRIu64 "\n",
	    m->auth_unavailable);
	put(&b, "tau_aggregator_auth_failures_total{code=\"RESOURCE_EXHAUSTED\"} %" PRIu64 "\n",
	    m->auth_overloaded);
	scalar(&b, "tau_aggregator_token_reviews_total", "counter",
	       "TokenReviews sent to the API server (review cache misses).", m->token_reviews);
	scalar(&b, "tau_aggregator_token_reviews_pending", "gauge",
	       "Report token reviews queued or running (capped by --max-pending-reviews, and "
	       "per peer by --max-reviews-per-peer).",
	       m->token_reviews_pending);
	family(&b, "tau_aggregator_tokens_refused_unreviewed_total", "counter",
	       "Report tokens refused before any TokenReview, by reason.");
	put(&b, "tau_aggregator_tokens_refused_unreviewed_total{reason=\"not_jwt\"} %" PRIu64 "\n",
	    m->tokens_not_jwt);
	put(&b, "tau_aggregator_tokens_refused_unreviewed_total{reason=\"claims\"} %" PRIu64 "\n",
	    m->tokens_not_agent);
	scalar(&b, "tau_aggregator_streams_ended_unauthenticated_total", "counter",
	       "Report streams cancelled or lost before their token review finished.",
	       m->ended_unauthenticated);
	family(&b, "tau_aggregator_grpc_refused_total", "counter",
	       "gRPC calls refused RESOURCE_EXHAUSTED before any handler ran, by reason.");
	put(&b, "tau_aggregator_grpc_refused_total{reason=\"streams_per_peer\"} %" PRIu64 "\n",
	    m->grpc_refused_per_peer);
	put(&b, "tau_aggregator_grpc_refused_total{reason=\"metadata_size\"} %" PRIu64 "\n",
	    m->grpc_refused_metadata);
	scalar(&b, "tau_aggregator_pool_watchers", "gauge", "Open WatchPool streams.",
	       m->pool_watchers);
	scalar(&b, "tau_aggregator_pool_watchers_refused_total", "counter",
	       "WatchPool calls refused RESOURCE_EXHAUSTED (--max-pool-watchers reached).",
	       m->pool_watchers_refused);
	family(&b, "tau_aggregator_query_auth_total", "counter",
	       "QueryService calls by authentication/authorization outcome.");
	put(&b, "tau_aggregator_query_auth_total{code=\"OK\"} %" PRIu64 "\n", m->query_allowed);
	put(&b, "tau_aggregator_query_auth_total{code=\"UNAUTHENTICATED\"} %" PRIu64 "\n",
	    m->query_unauthenticated);
	put(&b, "tau_aggregator_query_auth_total{code=\"PERMISSION_DENIED\"} %" PRIu64 "\n",
	    m->query_denied);
	put(&b, "tau_aggregator_query_auth_total{code=\"UNAVAILABLE\"} %" PRIu64 "\n",
	    m->query_unavailable);
	put(&b, "tau_aggregator_query_auth_total{code=\"RESOURCE_EXHAUSTED\"} %" PRIu64 "\n",
	    m->query_overloaded);
	scalar(&b, "tau_aggregator_query_reviews_total", "counter",
	       "TokenReview and SubjectAccessReview pairs sent for queries (cache misses).",
	       m->query_reviews);
	scalar(&b, "tau_aggregator_query_reviews_pending", "gauge",
	       "Query token reviews waiting for a worker (capped by --max-pending-reviews).",
	       m->query_reviews_pending);
	scalar(&b, "tau_aggregator_pool_established", "gauge",
	       "1 once the sync gate opened (every GPU node reported or the timeout passed).",
	       m->established ? 1 : 0);
	scalar(&b, "tau_aggregator_pool_valid", "gauge",
	       "1 while every input the pool depends on is usable (0: nothing counts; see "
	       "GetPool.invalid_reason).",
	       m->valid ? 1 : 0);
	scalar(&b, "tau_aggregator_pool_missing_nodes", "gauge",
	       "GPU nodes known from the API whose agent has not reported.", m->missing_nodes);
	scalar(&b, "tau_aggregator_pool_generation", "counter",
	       "Generation of the published pool (one per change).", m->pool_generation);
	scalar(&b, "tau_aggregator_leader", "gauge", "1 while this replica holds the leader Lease.",
	       m->leader ? 1 : 0);
	family(&b, "tau_aggregator_pool_flavor_nodes", "gauge", "Nodes counted per flavor.");
	for (size_t i = 0; i < m->n_flavors; i++) {
		put(&b, "tau_aggregator_pool_flavor_nodes{flavor=\"");
		put_label(&b, m->flavors[i].name);
		put(&b, "\"} %" PRIu64 "\n", m->flavors[i].nodes);
	}
	family(&b, "tau_aggregator_pool_resource", "gauge",
	       "Sum of allocatable per flavor and resource, in the resource's base unit.");
	for (size_t i = 0; i < m->n_resources; i++) {
		put(&b, "tau_aggregator_pool_resource{flavor=\"");
		put_label(&b, m->resources[i].flavor);
		put(&b, "\",resource=\"");
		put_label(&b, m->resources[i].resource);
		put(&b, "\"} %s\n", m->resources[i].value);
	}
	if (b.failed) {
		free(b.p);
		return tau_error_set(TAU_ENOMEM, "out of memory rendering metrics");
	}
	*out = b.p;
	return 0;
}

int tau_metrics_quantity_value(char *buf_out, size_t cap, const tau_quantity *q)
{
	int64_t milli;
	int n;

	if (tau_quantity_milli_value(&milli, q) == 0) {
		int64_t whole = milli / 1000, frac = milli % 1000;

		if (frac < 0)
			frac = -frac;
		if (frac == 0)
			n = snprintf(buf_out, cap, "%" PRId64, whole);
		else if (frac % 100 == 0)
			n = snprintf(buf_out, cap, "%s%" PRId64 ".%" PRId64,
			             milli < 0 && whole == 0 ? "-" : "", whole, frac / 100);
		else if (frac % 10 == 0)
			n = snprintf(buf_out, cap, "%s%" PRId64 ".%02" PRId64,
			             milli < 0 && whole == 0 ? "-" : "", whole, frac / 10);
		else
			n = snprintf(buf_out, cap, "%s%" PRId64 ".%03" PRId64,
			             milli < 0 && whole == 0 ? "-" : "", whole, frac);
	} else {
		char text[TAU_QUANTITY_STR_MAX];
		tau_quantity d = *q;

		/* Too large for thousandths: print via the exponent form, which Prometheus parses.
		 */
		tau_quantity_set_format(&d, TAU_QUANTITY_DECIMAL_EXPONENT);
		if (tau_quantity_format(text, sizeof(text), &d) < 0)
			return tau_error_set(TAU_ETOOBIG, "quantity does not print");
		n = snprintf(buf_out, cap, "%s", text);
	}
	if (n < 0 || (size_t)n >= cap)
		return tau_error_set(TAU_ETOOBIG, "metric value does not fit");
	return 0;
}
