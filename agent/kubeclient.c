/*
 * kubeclient.c - the Kubernetes client of tau-node-agent, for both modes.
 *
 * The one idea: one place turns the agent's flags into a client: the kubeconfig and context
 * (or in-cluster), the agent's user agent, and for --once kubectl's --request-timeout.
 */
#include "agent.h"

#include "tau/error.h"
#include "tau/log.h"

#include <stdlib.h>
#include <string.h>

#ifndef TAU_VERSION_STRING
#define TAU_VERSION_STRING "0.0.0"
#endif

int tau_agent_kube_client_new(tau_kube_client **out, const tau_agent_config *cfg)
{
	tau_kube_config_options ko;
	tau_kube_config *kcfg = NULL;
	int rc;

	memset(&ko, 0, sizeof(ko));
	ko.kubeconfig = cfg->kubeconfig;
	ko.context = cfg->context;
	rc = tau_kube_config_load(&kcfg, &ko);
	if (rc < 0) {
		tau_log_error("cannot load the Kubernetes configuration", "error",
		              tau_error_last()->msg, NULL);
		return rc;
	}
	/* --once is a one-shot command: kubectl's --request-timeout (0, the default: no limit on
	 * a request, but an API that cannot be reached fails at once, without retries). */
	if (cfg->once)
		tau_kube_config_set_request_timeout(kcfg, (uint64_t)cfg->request_timeout_ms);
	free(kcfg->user_agent);
	kcfg->user_agent = strdup("tau-node-agent/" TAU_VERSION_STRING);
	if (kcfg->user_agent == NULL) {
		/* NULL would silently send the library's user agent instead of ours. */
		tau_kube_config_free(kcfg);
		rc = tau_error_set(TAU_ENOMEM, "out of memory setting the user agent");
		tau_log_error("cannot make the Kubernetes client", "error", tau_error_last()->msg,
		              NULL);
		return rc;
	}
	rc = tau_kube_client_new(out, kcfg);
	if (rc < 0)
		tau_log_error("cannot make the Kubernetes client", "error", tau_error_last()->msg,
		              NULL);
	tau_kube_config_free(kcfg);
	return rc;
}
