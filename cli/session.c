/*
 * session.c - what every `tau` command that talks to Kubernetes does first:
 * load the kubeconfig (--kubeconfig, --context), make a client, and decide
 * the TauGrid system namespace.
 *
 * The system namespace is, in this order: the explicit --system-namespace,
 * the namespace the aggregator recorded in TauCluster `cluster`
 * status.systemNamespace (docs/api.md), then tau-system.  An install into a
 * custom namespace is so found without flags.  The choice is a pure function
 * (tau_cli_system_namespace_pick) so it is unit tested; the lookup reads one
 * object and falls back when it cannot (no TauCluster yet, no permission),
 * saying so in the debug log.
 *
 * --request-timeout (kubectl's name and meaning) is parsed here and applied to both
 * kinds of connection: the API client (tau_cli_connect) and aggregator calls
 * (tau_cli_rpc_timeout_ms).
 */
#include "cli.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/names.h"
#include "tau/parse.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

const tau_kube_resource tau_cli_res_clusters = {"tau.azure.com", "v1alpha1", "clusters", false};

const char *tau_cli_system_namespace_pick(const char *explicit_ns, const cJSON *cluster)
{
	const char *ns = NULL;

	if (explicit_ns != NULL && explicit_ns[0] != '\0')
		return explicit_ns;
	if (cluster != NULL && tau_json_get_string(&ns, cluster, "status.systemNamespace") == 0 &&
	    ns[0] != '\0')
		return ns;
	return TAU_CLI_DEFAULT_SYSTEM_NAMESPACE;
}

const char *tau_cli_system_namespace(char *buf, size_t cap, tau_kube_client *c,
                                     const char *explicit_ns)
{
	cJSON *cluster = NULL;
	const char *ns;

	if (explicit_ns == NULL || explicit_ns[0] == '\0') {
		int rc = tau_kube_get(&cluster, c, &tau_cli_res_clusters, NULL,
		                      TAU_CLI_CLUSTER_NAME);

		if (rc != 0) {
			tau_log_debug("TauCluster not readable, system namespace defaults",
			              "cluster", TAU_CLI_CLUSTER_NAME, "error",
			              tau_cli_api_message(), "namespace",
			              TAU_CLI_DEFAULT_SYSTEM_NAMESPACE, NULL);
			cluster = NULL;
		}
	}
	ns = tau_cli_system_namespace_pick(explicit_ns, cluster);
	snprintf(buf, cap, "%s", ns);
	cJSON_Delete(cluster);
	return buf;
}

int tau_cli_request_timeout_parse(tau_cli_globals *g, const char *value)
{
	int64_t ms = 0;
	int rc = tau_parse_duration_ms(&ms, "--request-timeout", value, 0,
	                               TAU_CLI_REQUEST_TIMEOUT_MAX_MS);

	if (rc < 0)
		return rc;
	g->request_timeout_ms = ms;
	g->request_timeout_set = true;
	return 0;
}

int tau_cli_rpc_timeout_ms(const tau_cli_globals *g, int default_ms)
{
	if (g == NULL || !g->request_timeout_set)
		return default_ms;
	return g->request_timeout_ms == 0 ? INT_MAX : (int)g->request_timeout_ms;
}

int tau_cli_connect(tau_kube_client **out, const tau_cli_globals *g)
{
	tau_kube_config_options o = {g != NULL ? g->kubeconfig : NULL,
	                             g != NULL ? g->context : NULL, NULL};
	tau_kube_config *cfg = NULL;
	int rc;

	*out = NULL;
	if ((rc = tau_kube_config_load(&cfg, &o)) != 0)
		return rc;
	tau_kube_config_set_request_timeout(
	        cfg, g != NULL && g->request_timeout_set ? (uint64_t)g->request_timeout_ms : 0);
	rc = tau_kube_client_new(out, cfg);
	tau_kube_config_free(cfg);
	return rc;
}

const char *tau_cli_api_message(void)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	return e->http_code != 0 && e->message[0] != '\0' ? e->message : tau_error_last()->msg;
}

int tau_cli_workspace_name_check(const char *cmd, const char *name)
{
	int rc = tau_names_check_dns1123_label(name);

	if (rc < 0)
		fprintf(stderr, "%s: invalid workspace name: %s\n", cmd, tau_error_last()->msg);
	return rc;
}

const char *tau_cli_str(const cJSON *obj, const char *path)
{
	return tau_json_str(obj, path);
}
