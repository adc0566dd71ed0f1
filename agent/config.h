/*
 * config.h - command line and environment of tau-node-agent.
 *
 * Every flag has an environment variable (listed in usage and docs/agent.md);
 * the environment is read first and flags override it.  Parsing is separate
 * from I/O: the environment comes in through a lookup function so tests can
 * feed a fake one, and nothing here opens a file or a socket.
 */
#ifndef TAU_AGENT_CONFIG_H
#define TAU_AGENT_CONFIG_H

#include "tau/env.h"
#include "tau/log.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/** Default seconds between periodic re-probes of the host (GPUs, RDMA, sockets). */
#define TAU_AGENT_DEFAULT_PROBE_INTERVAL_S 60
/** Largest accepted --probe-interval (one day). */
#define TAU_AGENT_MAX_PROBE_INTERVAL_S 86400
/** Longest --request-timeout: one hour. */
#define TAU_AGENT_MAX_REQUEST_TIMEOUT_MS (3600LL * 1000)

/** What the agent was asked to do.  Strings are lent from argv or the environment. */
typedef struct tau_agent_config {
	const char *node_name;   /**< --node-name / NODE_NAME */
	const char *aggregator;  /**< --aggregator / TAU_AGGREGATOR: HOST:PORT or unix:PATH */
	const char *kubeconfig;  /**< --kubeconfig; NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
	const char *context;     /**< --context / TAU_CONTEXT; NULL: current-context */
	const char *host_root;   /**< --host-root / TAU_HOST_ROOT; default "/" */
	const char *token_file;  /**< --token-file / TAU_TOKEN_FILE; NULL: no bearer token */
	const char *ca_file;     /**< --ca-file / TAU_CA_FILE */
	bool insecure;           /**< --insecure / TAU_INSECURE: plaintext gRPC */
	bool once;               /**< --once / TAU_ONCE: probe, print, exit */
	const char *output;      /**< -o / TAU_OUTPUT; only "json" */
	const char *http_listen; /**< --http-listen / TAU_HTTP_LISTEN: [HOST]:PORT, NULL: off */
	int probe_interval_s;    /**< --probe-interval / TAU_PROBE_INTERVAL */
	/** --request-timeout / TAU_REQUEST_TIMEOUT (--once only): 0 keeps the client's defaults */
	int64_t request_timeout_ms;
	bool request_timeout_set;
	/** --node-conditions / TAU_NODE_CONDITIONS: patch TauGPUHealthy, TauNetworkReady */
	bool node_conditions;
	tau_log_level log_level;   /**< --log-level / TAU_LOG_LEVEL */
	tau_log_format log_format; /**< --log-format / TAU_LOG_FORMAT */
	bool help;                 /**< --help: print usage, exit 0 */
	bool version;              /**< --version: print the version, exit 0 */
} tau_agent_config;

/**
 * Fill `cfg` from the environment (through `env`; NULL means getenv) and then
 * from argv.  Does not print.  Resets getopt's state, so it may be called
 * repeatedly.
 * @return 0; -TAU_EINVAL for a usage error (tau_error_last() says what, in
 *         words fit for "tau-node-agent: <message>"); cfg is then partial.
 */
int tau_agent_config_parse(tau_agent_config *cfg, int argc, char **argv, tau_env_fn env);

/** Print the usage text. */
void tau_agent_config_usage(FILE *out);

#endif /* TAU_AGENT_CONFIG_H */
