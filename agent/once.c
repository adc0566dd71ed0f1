/*
 * once.c - tau-node-agent --once -o json: read, probe, print, exit.
 *
 * The one idea: one pass of the daemon's build without the daemon.  The Node, CSINode and the
 * pods on the node are read with one request each (a failure becomes a problem in the
 * inventory, not an abort), the host is probed, and the inventory JSON is printed.
 */
#include "agent.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void api_problem(char *buf, size_t cap, const char *what, const char *name, int rc)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (rc == -TAU_ENOTFOUND)
		snprintf(buf, cap, "%s %s does not exist", what, name);
	else if (e->http_code != 0)
		snprintf(buf, cap, "cannot read %s %s: HTTP %d %s: %.300s", what, name,
		         e->http_code, e->reason, e->message);
	else
		snprintf(buf, cap, "cannot read %s %s: %.400s", what, name, tau_error_last()->msg);
}

int tau_agent_once(const tau_agent_config *cfg, FILE *out)
{
	tau_kube_client *kc = NULL;
	cJSON *node = NULL, *csinode = NULL, *pods = NULL, *json = NULL;
	char node_problem[512], csinode_problem[512], pods_problem[512], field[300];
	tau_agent_inventory inv;
	tau_agent_probe_cache cache;
	tau_agent_inputs in;
	tau_kube_list_options lo;
	char *text = NULL;
	int exit_code = 2;
	int rc;

	tau_agent_inventory_init(&inv);
	memset(&cache, 0, sizeof(cache));
	memset(&in, 0, sizeof(in));
	if (tau_agent_kube_client_new(&kc, cfg) < 0)
		goto out;
	exit_code = 1;

	rc = tau_kube_get(&node, kc, &tau_kube_res_nodes, NULL, cfg->node_name);
	if (rc < 0) {
		api_problem(node_problem, sizeof(node_problem), "Node", cfg->node_name, rc);
		tau_log_error("cannot read the Node", "node", cfg->node_name, "error", node_problem,
		              NULL);
		in.node_problem = node_problem;
	}
	in.node = node;
	rc = tau_kube_get(&csinode, kc, &tau_kube_res_csinodes, NULL, cfg->node_name);
	if (rc < 0) {
		api_problem(csinode_problem, sizeof(csinode_problem), "CSINode", cfg->node_name,
		            rc);
		in.csinode_problem = csinode_problem;
	}
	in.csinode = csinode;
	memset(&lo, 0, sizeof(lo));
	snprintf(field, sizeof(field), "spec.nodeName=%s", cfg->node_name);
	lo.field_selector = field;
	rc = tau_kube_list_all(&pods, kc, &tau_kube_res_pods, NULL, &lo);
	if (rc < 0) {
		api_problem(pods_problem, sizeof(pods_problem), "pods on node", cfg->node_name, rc);
		in.pods_problem = pods_problem;
	}
	in.pods = pods;

	rc = tau_agent_build(&inv, &in, cfg->host_root, &cache, true, NULL);
	if (rc == 0)
		rc = tau_agent_inventory_to_json(&json, &inv);
	/* Host files (sysfs) may hold any bytes: print only valid UTF-8. */
	if (rc == 0 && (rc = tau_json_fix_utf8(json)) > 0)
		rc = 0;
	if (rc == 0 && (text = cJSON_Print(json)) == NULL)
		rc = -TAU_ENOMEM;
	if (rc < 0) {
		tau_log_error("cannot build the inventory", "error", tau_error_last()->msg, NULL);
		goto out;
	}
	fprintf(out, "%s\n", text);
	fflush(out);
	exit_code = node != NULL ? 0 : 1;
out:
	free(text);
	cJSON_Delete(json);
	cJSON_Delete(node);
	cJSON_Delete(csinode);
	cJSON_Delete(pods);
	tau_agent_inventory_free(&inv);
	tau_agent_probe_cache_free(&cache);
	tau_kube_client_free(kc);
	return exit_code;
}
