/*
 * cli.h - what the `tau` subcommands share: global options, exit codes and
 * the entry point of each command group.  cli/main.c dispatches on a table
 * of these; each group lives in its own file (inventory.c, workspace.c,
 * storage.c).  How the groups reach the aggregator (--aggregator, --ca-file,
 * --insecure, TAU_AGGREGATOR) is aggregator.h's.
 */
#ifndef TAU_CLI_CLI_H
#define TAU_CLI_CLI_H

#include "tau/json.h"
#include "tau/kube.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/** Exit codes (docs/cli.md). */
#define TAU_CLI_OK     0 /**< success */
#define TAU_CLI_FAILED 1 /**< a check failed, or the answer could not be obtained */
#define TAU_CLI_USAGE  2 /**< usage or input error */

/** Output format of -o, shared by every command group (output.h). */
typedef enum tau_cli_format { TAU_CLI_TABLE = 0, TAU_CLI_JSON, TAU_CLI_YAML } tau_cli_format;

/** The TauCluster singleton's name and where TauGrid installs by default. */
#define TAU_CLI_CLUSTER_NAME             "cluster"
#define TAU_CLI_DEFAULT_SYSTEM_NAMESPACE "tau-system"
/** Room for a namespace name (and a too-long one, so it is refused rather than cut). */
#define TAU_CLI_NS_BUF 256

/** Options given before the command (NULL: not given). */
typedef struct tau_cli_globals {
	const char *kubeconfig;
	const char *context;
	const char *system_namespace;
	const char *token; /**< --token: bearer token for the aggregator, else the kubeconfig's */
	bool request_timeout_set;   /**< --request-timeout was given */
	int64_t request_timeout_ms; /**< its value; 0 = no limit */
} tau_cli_globals;

/** A command group: `tau NAME ...`.  `run` gets argv starting at NAME. */
typedef struct tau_cli_command {
	const char *name;
	const char *usage; /**< one line for `tau --help`: verbs and what the group is for */
	int (*run)(int argc, char **argv, const tau_cli_globals *g);
} tau_cli_command;

/** `tau inventory nodes|pool|explain NODE ...` (cli/inventory.c). */
int tau_cli_inventory(int argc, char **argv, const tau_cli_globals *g);

/** `tau workspace list|status NAME|check NAME ...` (cli/workspace.c). */
int tau_cli_workspace(int argc, char **argv, const tau_cli_globals *g);

/** `tau team list|status NAME ...` (cli/team.c). */
int tau_cli_team(int argc, char **argv, const tau_cli_globals *g);

/** `tau cluster install|uninstall|status ...` (cli/cluster.c). */
int tau_cli_cluster(int argc, char **argv, const tau_cli_globals *g);

/** `tau completion bash` (cli/completion.c). */
int tau_cli_completion(int argc, char **argv, const tau_cli_globals *g);

/** `tau storage check --driver NAME [--selector SEL]` (cli/storage.c). */
int tau_cli_storage(int argc, char **argv, const tau_cli_globals *g);

/* Shared by the command groups (cli/session.c). */

/** TauCluster (cluster-scoped, one object named TAU_CLI_CLUSTER_NAME). */
extern const tau_kube_resource tau_cli_res_clusters;

/** The largest --request-timeout: a day. */
#define TAU_CLI_REQUEST_TIMEOUT_MAX_MS INT64_C(86400000)

/**
 * Parse kubectl's --request-timeout into g: a duration (`1s`, `2m`, `3h`, `500ms`, bare
 * seconds), 0 meaning no limit, at most TAU_CLI_REQUEST_TIMEOUT_MAX_MS.
 * @return 0, or -TAU_EINVAL ("--request-timeout X: reason") leaving g untouched.
 */
int tau_cli_request_timeout_parse(tau_cli_globals *g, const char *value);

/**
 * The deadline in ms of one aggregator call: --request-timeout when given (0: none, which
 * lib/rpc spells as the largest int), else `default_ms`.
 */
int tau_cli_rpc_timeout_ms(const tau_cli_globals *g, int default_ms);

/**
 * Load the kubeconfig (g's --kubeconfig, --context) and make a client whose requests follow
 * g's --request-timeout (tau_kube_config_set_request_timeout; not given = 0, kubectl's
 * default: no limit on a request, but a connection that cannot be made fails at once, or
 * after the connect timeout, without retries).  0 or <0 (error set).
 */
int tau_cli_connect(tau_kube_client **out, const tau_cli_globals *g);

/**
 * The system namespace: `explicit_ns` when given, else `cluster`'s (a TauCluster, may be NULL)
 * status.systemNamespace when set, else TAU_CLI_DEFAULT_SYSTEM_NAMESPACE.  Pure.
 */
const char *tau_cli_system_namespace_pick(const char *explicit_ns, const cJSON *cluster);

/**
 * tau_cli_system_namespace_pick with TauCluster `cluster` read through `c` (only when no
 * explicit namespace is given; an unreadable TauCluster counts as absent).  Copies the
 * answer into buf and returns buf.
 */
const char *tau_cli_system_namespace(char *buf, size_t cap, tau_kube_client *c,
                                     const char *explicit_ns);

/**
 * Refuse a NAME that cannot be a TauWorkspace (a DNS-1123 label) before any request: prints
 * "<cmd>: invalid workspace name: <why>" on stderr.  @return 0, or -TAU_EINVAL.
 */
int tau_cli_workspace_name_check(const char *cmd, const char *name);

/** The string at dotted `path` in obj, or NULL (absent, not a string, obj NULL). */
const char *tau_cli_str(const cJSON *obj, const char *path);

/** The API server's message for the last failed request, else the last libtau error. */
const char *tau_cli_api_message(void);

#endif /* TAU_CLI_CLI_H */
