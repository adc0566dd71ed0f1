/*
 * options.h - command line and environment of tau-aggregator.
 *
 * Every flag has an environment twin (the flag wins when both are set; an
 * empty variable counts as unset).  Parsing is separate from I/O: the
 * environment comes in through a lookup function so tests can feed a fake
 * one, nothing here opens a file or a socket, and every value is checked
 * here (durations and their ranges, booleans, listen address, namespace
 * mode, feature gates), so main() only wires.  A usage error means exit 2
 * (docs/aggregator.md).
 */
#ifndef TAU_AGG_OPTIONS_H
#define TAU_AGG_OPTIONS_H

#include "tau/env.h"
#include "tau/log.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/** Ranges of the durations, in milliseconds. */
#define TAU_AGG_SYNC_TIMEOUT_MAX_MS    (24LL * 3600 * 1000)
#define TAU_AGG_HEARTBEAT_MIN_MS       1000LL
#define TAU_AGG_HEARTBEAT_MAX_MS       (3600LL * 1000)
#define TAU_AGG_BUDGET_COALESCE_MAX_MS (60LL * 1000)
#define TAU_AGG_BUDGET_RESYNC_MIN_MS   1000LL
#define TAU_AGG_BUDGET_RESYNC_MAX_MS   (24LL * 3600 * 1000)
#define TAU_AGG_REVIEW_WORKERS_MAX     64

/** --namespace-mode: the workspace namespaces' mode, or the TauCluster's when unset. */
typedef enum tau_agg_ns_mode {
	TAU_AGG_NS_MODE_FROM_CLUSTER = 0, /**< not set: TauCluster spec.workspaces.namespaceMode */
	TAU_AGG_NS_MODE_MANAGED,
	TAU_AGG_NS_MODE_OPERATOR
} tau_agg_ns_mode;

/** --feature-gates: every known gate, false unless turned on. */
typedef struct tau_agg_feature_gates {
	bool multiple_workspaces; /**< MultipleWorkspaces */
} tau_agg_feature_gates;

/** What the aggregator was asked to do.  Strings are lent from argv or the environment. */
typedef struct tau_agg_options {
	const char *kubeconfig;       /**< --kubeconfig; NULL: $KUBECONFIG, in-cluster */
	const char *context;          /**< --context / TAU_CONTEXT */
	const char *grpc_listen;      /**< --grpc-listen / TAU_GRPC_LISTEN (required) */
	const char *http_listen;      /**< --http-listen / TAU_HTTP_LISTEN (required, HOST:PORT) */
	const char *system_namespace; /**< --system-namespace / TAU_SYSTEM_NAMESPACE; tau-system */
	/** --kueue-config-namespace / TAU_KUEUE_CONFIG_NAMESPACE; kueue-system */
	const char *kueue_namespace;
	bool leader_elect;          /**< --leader-elect / TAU_LEADER_ELECT */
	const char *tls_cert;       /**< --tls-cert / TAU_TLS_CERT (with tls_key) */
	const char *tls_key;        /**< --tls-key / TAU_TLS_KEY (with tls_cert) */
	const char *token_audience; /**< --token-audience / TAU_TOKEN_AUDIENCE; taugrid */
	const char *agent_sa; /**< --agent-service-account / TAU_AGENT_SERVICE_ACCOUNT; NS:NAME */
	int64_t sync_timeout_ms; /**< --initial-sync-timeout / TAU_INITIAL_SYNC_TIMEOUT; 60s */
	int64_t heartbeat_ms;    /**< --heartbeat-interval / TAU_HEARTBEAT_INTERVAL; 30s */
	bool log_level_set;      /**< --log-level / TAU_LOG_LEVEL given */
	bool log_format_set;     /**< --log-format / TAU_LOG_FORMAT given */
	/** --allow-anonymous-queries / TAU_ALLOW_ANONYMOUS_QUERIES: no query authentication */
	bool allow_anonymous_queries;
	/** --no-local-token-verification / TAU_NO_LOCAL_TOKEN_VERIFICATION: agents wait for their
	 * TokenReview (default: admitted on a locally verified token, confirmed afterwards) */
	bool no_local_token_verification;
	int max_pending_reviews; /**< --max-pending-reviews / TAU_MAX_PENDING_REVIEWS; 4096 */
	int max_pool_watchers;   /**< --max-pool-watchers / TAU_MAX_POOL_WATCHERS; 1024 */
	/** --max-concurrent-streams / TAU_MAX_CONCURRENT_STREAMS: HTTP/2 streams per connection;
	 * 1000 */
	int max_concurrent_streams;
	int max_reviews_per_peer; /**< --max-reviews-per-peer / TAU_MAX_REVIEWS_PER_PEER; 8 */
	int max_streams_per_peer; /**< --max-streams-per-peer / TAU_MAX_STREAMS_PER_PEER; 256 */
	int review_qps;           /**< --review-qps / TAU_REVIEW_QPS: the reviews' budget; 400 */
	int review_burst;         /**< --review-burst / TAU_REVIEW_BURST; 100 */
	int review_workers;       /**< --review-workers / TAU_REVIEW_WORKERS; 8 */
	int grpc_threads;         /**< --grpc-threads / TAU_GRPC_THREADS: CQ threads; 2 */
	tau_log_level log_level;
	tau_log_format log_format;
	/* workspace controller */
	tau_agg_ns_mode namespace_mode; /**< --namespace-mode / TAU_NAMESPACE_MODE */
	const char *allowlist_selector; /**< --allowlist-selector / TAU_ALLOWLIST_SELECTOR */
	const char *allowlist_file;     /**< --allowlist-file / TAU_ALLOWLIST_FILE */
	const char *namespace_map_file; /**< --namespace-map-file / TAU_NAMESPACE_MAP_FILE */
	const char *researcher_role;    /**< --researcher-role / TAU_RESEARCHER_ROLE */
	bool no_workspace_controller; /**< --no-workspace-controller / TAU_WORKSPACE_CONTROLLER=0 */
	/* budget controller */
	int64_t budget_coalesce_ms;  /**< --budget-coalesce / TAU_BUDGET_COALESCE; 200ms */
	int64_t budget_resync_ms;    /**< --budget-resync / TAU_BUDGET_RESYNC; 5m */
	tau_agg_feature_gates gates; /**< --feature-gates / TAU_FEATURE_GATES */
	bool help;                   /**< --help: print usage, exit 0 */
	bool version;                /**< --version: print the version, exit 0 */
} tau_agg_options;

/**
 * Fill `o` with the defaults, then the environment (through `env`; NULL means getenv), then
 * argv, and check every value.  Does not print.  Resets getopt's state, so it may be called
 * repeatedly.
 * @return 0 (with o->help or o->version set nothing else is checked); -TAU_EINVAL for a usage
 *         error, tau_error_last() saying what in words fit for "tau-aggregator: <message>"
 *         (the caller exits 2); o is then partial.
 */
int tau_agg_options_parse(tau_agg_options *o, int argc, char **argv, tau_env_fn env);

/**
 * Parse a --feature-gates list "Name=bool[,Name=bool...]" into `gates` (gates not named keep
 * their value).  Known: MultipleWorkspaces.
 * @return 0, or -TAU_EINVAL naming the entry (unknown gate, missing or bad value).
 */
int tau_agg_feature_gates_parse(tau_agg_feature_gates *gates, const char *what, const char *text);

/** Print the usage text. */
void tau_agg_options_usage(FILE *out);

#endif /* TAU_AGG_OPTIONS_H */
