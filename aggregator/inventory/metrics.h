/*
 * metrics.h - the aggregator's Prometheus metrics: a plain snapshot struct
 * filled under the state lock, rendered to the text exposition format
 * (version 0.0.4) outside it.  Rendering is pure, so it is unit tested.
 */
#ifndef TAU_AGGREGATOR_METRICS_H
#define TAU_AGGREGATOR_METRICS_H

#include "truthrules.h"

#include "tau/prom.h"
#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** One summed resource of one flavor; `value` is a Prometheus number. */
typedef struct tau_metrics_resource {
	const char *flavor;
	const char *resource;
	char value[48];
} tau_metrics_resource;

/** One flavor of the pool, with its free-now figures (capacity.h, tau_capacity_class). */
typedef struct tau_metrics_flavor {
	const char *name;
	uint64_t nodes;
	/** GPUs on its counted nodes with known node truth: healthy, in use, free now. */
	uint64_t gpus[3];
	/** Its counted nodes: without known figures, degraded, with every GPU free. */
	uint64_t node_states[3];
} tau_metrics_flavor;

/** Everything /metrics shows.  Strings are lent for the render call. */
typedef struct tau_metrics {
	uint64_t agents_connected; /**< Report streams bound to a node now */
	uint64_t nodes_known;      /**< node records */
	uint64_t nodes_stale;      /**< reported, agent gone or silent */
	uint64_t nodes_counted;    /**< nodes in the pool */
	uint64_t nodes_mismatch;   /**< agent report differs from the Node object */
	/** Nodes failing each agent.* rule (truthrules.h, by tau_truth_rule_id): where the
	 * node's agent sees less than the Node advertises. */
	uint64_t node_truth_failing[TAU_TRUTH_RULE_COUNT];
	uint64_t reports_inventory, reports_heartbeat, reports_stopping; /**< counters */
	uint64_t reports_rejected;                                       /**< acks REJECTED */
	/** Inventories recognised as unchanged by their fingerprint (of the inventory ones). */
	uint64_t reports_unchanged;
	uint64_t reports_resend_full;    /**< acks RESEND_FULL */
	uint64_t auth_unauthenticated;   /**< streams refused UNAUTHENTICATED */
	uint64_t auth_permission_denied; /**< streams refused PERMISSION_DENIED */
	uint64_t auth_unavailable;       /**< streams refused because TokenReview failed */
	uint64_t token_reviews;          /**< TokenReviews sent (cache misses) */
	uint64_t auth_overloaded;        /**< streams refused RESOURCE_EXHAUSTED (review caps) */
	uint64_t tokens_not_jwt;         /**< Report tokens refused unreviewed: not a JWT */
	uint64_t tokens_not_agent;       /**< ... their claims are not the agent's */
	uint64_t token_reviews_pending;  /**< Report reviews queued or running now */
	uint64_t ended_unauthenticated;  /**< Report streams ended before their review */
	/** Local verification: admitted; left to the review (unknown key, invalid, queue full) */
	uint64_t local_admitted, local_unknown_key, local_invalid, local_queue_full;
	/** Confirming reviews of locally admitted streams: confirmed, refused, failed; queued */
	uint64_t confirmed, confirm_refused, confirm_failed, confirms_pending;
	uint64_t keys_fetched, keys_fetch_failed, keys_held; /**< the issuer's key set */
	uint64_t grpc_refused_per_peer; /**< calls refused over --max-streams-per-peer */
	uint64_t grpc_refused_metadata; /**< calls refused for oversized request headers */
	uint64_t pool_watchers;         /**< open WatchPool calls */
	uint64_t pool_watchers_refused; /**< WatchPool calls refused over the cap */
	/** QueryService decisions by outcome (query_auth.h); all 0 with anonymous queries. */
	uint64_t query_allowed, query_unauthenticated, query_denied, query_unavailable;
	uint64_t query_overloaded; /**< refused RESOURCE_EXHAUSTED (review queue full) */
	uint64_t query_reviews;    /**< TokenReview + SubjectAccessReview pairs (cache misses) */
	uint64_t query_reviews_pending; /**< reviews waiting for a worker now */
	/** Latency of Report TokenReviews, and of query review pairs (NULL: anonymous queries). */
	const tau_prom_histogram *report_review_latency, *query_review_latency;
	/** DRA (docs/budget.md, "How DRA devices count"): devices counted, pools of which
	 * nothing counts, classes that count nothing because they are unusable */
	uint64_t dra_devices, dra_pools_incomplete, dra_classes_unusable;
	bool established;
	bool valid; /**< every input the pool depends on is usable */
	uint64_t missing_nodes;
	uint64_t pool_generation;
	bool leader;
	const tau_metrics_flavor *flavors;
	size_t n_flavors;
	const tau_metrics_resource *resources;
	size_t n_resources;
} tau_metrics;

/**
 * Render `m` as Prometheus text.  @param out receives a malloc'd NUL-terminated
 * string (free()).  @return 0 or -TAU_ENOMEM.
 */
int tau_metrics_render(char **out, const tau_metrics *m);

#endif /* TAU_AGGREGATOR_METRICS_H */
