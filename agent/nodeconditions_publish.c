/*
 * nodeconditions_publish.c - writing the agent's Node conditions to the API (--node-conditions).
 *
 * The one idea: patch nodes/<name>/status only when a condition the agent owns differs from
 * the Node in the informer's cache, one bounded attempt at a time from the event loop; a
 * refused patch is logged once per distinct error and retried with a growing delay, and never
 * stops the agent.  What the conditions say is nodeconditions.c's.
 */
#include "nodeconditions_publish.h"

#include "nodeconditions.h"

#include "tau/clock.h"
#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One patch attempt, no retries inside it (it runs on the event loop); after a failure the
 * next attempt waits 5 s, doubling up to 5 min. */
#define CONDITIONS_TIMEOUT_MS   3000
#define CONDITIONS_RETRY_MS     5000
#define CONDITIONS_RETRY_MAX_MS 300000

void tau_agent_conditions_publisher_free(tau_agent_conditions_publisher *p)
{
	cJSON_Delete(p->written);
	free(p->error);
	memset(p, 0, sizeof(*p));
}

/* PATCH nodes/<name>/status, bounded: one attempt of at most CONDITIONS_TIMEOUT_MS. */
static int patch_node_status(tau_kube_client *kc, const char *node_name, const char *patch)
{
	tau_kube_request rq;
	char *path = NULL;
	int rc;

	rc = tau_kube_path(&path, &tau_kube_res_nodes, NULL, node_name, "status");
	if (rc < 0)
		return rc;
	memset(&rq, 0, sizeof(rq));
	rq.method = "PATCH";
	rq.path = path;
	rq.body = patch;
	rq.body_len = strlen(patch);
	rq.content_type = "application/strategic-merge-patch+json";
	rq.timeout_ms = CONDITIONS_TIMEOUT_MS;
	rq.max_retries = 0;
	rc = tau_kube_client_request(NULL, kc, &rq);
	free(path);
	return rc;
}

static const char *cond_summary(char *buf, size_t cap, const cJSON *conds, const char *type)
{
	const cJSON *c = tau_conditions_find(conds, type);
	const char *status = "?", *reason = "?";

	(void)tau_json_get_string(&status, c, "status");
	(void)tau_json_get_string(&reason, c, "reason");
	snprintf(buf, cap, "%s/%s", status, reason);
	return buf;
}

static void conditions_failed(tau_agent_conditions_publisher *p, const char *node_name,
                              tau_agent_metrics *m, int rc)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();
	char error[700], retry[24];
	int64_t delay;

	atomic_fetch_add(&m->condition_patches_failed, 1);
	if (e->http_code != 0)
		snprintf(error, sizeof(error), "HTTP %d %s: %.500s", e->http_code, e->reason,
		         e->message);
	else
		snprintf(error, sizeof(error), "%.600s", tau_error_last()->msg);
	delay = p->backoff_ms == 0 ? CONDITIONS_RETRY_MS : p->backoff_ms * 2;
	if (delay > CONDITIONS_RETRY_MAX_MS)
		delay = CONDITIONS_RETRY_MAX_MS;
	p->backoff_ms = delay;
	p->retry_ms = (int64_t)tau_clock_mono_ms() + delay;
	snprintf(retry, sizeof(retry), "%lld", (long long)delay);
	if (tau_str_eq_both_set(p->error, error)) {
		tau_log_debug("cannot publish the node conditions", "node", node_name, "error",
		              error, "retry_in_ms", retry, NULL);
		return;
	}
	free(p->error);
	p->error = strdup(error);
	if (rc == -TAU_EPERM)
		tau_log_error("cannot publish the node conditions: the agent may not patch "
		              "nodes/status (chart value nodeConditions.enabled grants it); the "
		              "agent keeps reporting and retries",
		              "node", node_name, "error", error, "retry_in_ms", retry, NULL);
	else
		tau_log_error("cannot publish the node conditions; the agent keeps reporting and "
		              "retries",
		              "node", node_name, "error", error, "retry_in_ms", retry, NULL);
}

void tau_agent_conditions_publish(tau_agent_conditions_publisher *p, tau_kube_client *kc,
                                  const char *node_name, tau_agent_metrics *m,
                                  const tau_agent_inventory *inv, const cJSON *node)
{
	const cJSON *current = NULL;
	const char *rv = "";
	char now[TAU_RFC3339_LEN], gpu[96], net[96];
	cJSON *desired = NULL;
	char *patch = NULL;
	int rc;

	if (node == NULL)
		return;
	if (p->retry_ms != 0 && (int64_t)tau_clock_mono_ms() < p->retry_ms)
		return;
	(void)tau_json_get_array(&current, node, "status.conditions");
	(void)tau_json_get_string(&rv, node, "metadata.resourceVersion");
	if (tau_rfc3339(now, time(NULL)) < 0 ||
	    tau_agent_node_conditions_build(&desired, inv, current, now) < 0) {
		tau_log_error("cannot build the node conditions", "node", node_name, "error",
		              tau_error_last()->msg, NULL);
		return;
	}
	if (tau_agent_node_conditions_published(desired, current) ||
	    (p->written != NULL && strcmp(rv, p->rv) == 0 &&
	     tau_agent_node_conditions_published(desired, p->written))) {
		p->retry_ms = 0;
		goto out;
	}
	rc = tau_agent_node_conditions_patch(&patch, desired);
	if (rc == 0)
		rc = patch_node_status(kc, node_name, patch);
	if (rc < 0) {
		conditions_failed(p, node_name, m, rc);
		goto out;
	}
	atomic_fetch_add(&m->condition_patches_ok, 1);
	tau_log_info("node conditions published", "node", node_name, "gpu_healthy",
	             cond_summary(gpu, sizeof(gpu), desired, TAU_AGENT_COND_GPU_HEALTHY),
	             "network_ready",
	             cond_summary(net, sizeof(net), desired, TAU_AGENT_COND_NETWORK_READY), NULL);
	cJSON_Delete(p->written);
	p->written = desired;
	desired = NULL;
	snprintf(p->rv, sizeof(p->rv), "%s", rv);
	p->retry_ms = 0;
	p->backoff_ms = 0;
	free(p->error);
	p->error = NULL;
out:
	free(patch);
	cJSON_Delete(desired);
}
