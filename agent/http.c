/*
 * http.c - the agent's /healthz and /metrics, served by libtau's HTTP server (tau/http.h).
 *
 * The one idea: the server thread only reads atomics the event loop writes,
 * so serving never takes a lock the loop holds.  Health is "the Node
 * informer has listed": before that the agent knows nothing worth
 * reporting and kubelet should not count the pod ready.  Connections are
 * capped (16) and time out (10 s), since anything on the node network can reach the port.
 */
#include "http.h"

#include "tau/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HTTP_MAX_CONNECTIONS 16
#define HTTP_TIMEOUT_S       10
#define METRICS_BUF          4096

int tau_agent_metrics_format(char *buf, size_t cap, const tau_agent_metrics *m)
{
	int64_t last_ms = atomic_load_explicit(&m->last_report_ms, memory_order_relaxed);
	int n;

#define LOAD(f) ((unsigned long long)atomic_load_explicit(&m->f, memory_order_relaxed))
	n = snprintf(
	        buf, cap,
	        "# HELP tau_agent_reports_sent_total Reports sent to the aggregator, by kind.\n"
	        "# TYPE tau_agent_reports_sent_total counter\n"
	        "tau_agent_reports_sent_total{kind=\"inventory\"} %llu\n"
	        "tau_agent_reports_sent_total{kind=\"heartbeat\"} %llu\n"
	        "tau_agent_reports_sent_total{kind=\"stopping\"} %llu\n"
	        "# HELP tau_agent_connects_total Report streams that came up.\n"
	        "# TYPE tau_agent_connects_total counter\n"
	        "tau_agent_connects_total %llu\n"
	        "# HELP tau_agent_reconnects_total Report streams that came up again after "
	        "the first.\n"
	        "# TYPE tau_agent_reconnects_total counter\n"
	        "tau_agent_reconnects_total %llu\n"
	        "# HELP tau_agent_last_report_timestamp_seconds When the last report was "
	        "sent (0: never).\n"
	        "# TYPE tau_agent_last_report_timestamp_seconds gauge\n"
	        "tau_agent_last_report_timestamp_seconds %lld.%03lld\n"
	        "# HELP tau_agent_problems Problems listed in the current inventory.\n"
	        "# TYPE tau_agent_problems gauge\n"
	        "tau_agent_problems %llu\n"
	        "# HELP tau_agent_connected 1 while a report stream to the aggregator is up.\n"
	        "# TYPE tau_agent_connected gauge\n"
	        "tau_agent_connected %d\n"
	        "# HELP tau_agent_node_synced 1 once the Node informer has listed.\n"
	        "# TYPE tau_agent_node_synced gauge\n"
	        "tau_agent_node_synced %d\n"
	        "# HELP tau_agent_inventory_builds_total Inventories rebuilt after a change "
	        "signal.\n"
	        "# TYPE tau_agent_inventory_builds_total counter\n"
	        "tau_agent_inventory_builds_total %llu\n"
	        "# HELP tau_agent_host_probes_total Host probes run.\n"
	        "# TYPE tau_agent_host_probes_total counter\n"
	        "tau_agent_host_probes_total %llu\n"
	        "# HELP tau_agent_node_condition_patches_total Patches of this node's "
	        "status.conditions (--node-conditions), by result.\n"
	        "# TYPE tau_agent_node_condition_patches_total counter\n"
	        "tau_agent_node_condition_patches_total{result=\"ok\"} %llu\n"
	        "tau_agent_node_condition_patches_total{result=\"error\"} %llu\n",
	        LOAD(inventories_sent), LOAD(heartbeats_sent), LOAD(stopping_sent), LOAD(connects),
	        LOAD(reconnects), (long long)(last_ms / 1000), (long long)(last_ms % 1000),
	        LOAD(problems), atomic_load_explicit(&m->connected, memory_order_relaxed) ? 1 : 0,
	        atomic_load_explicit(&m->node_synced, memory_order_relaxed) ? 1 : 0,
	        LOAD(inventory_builds), LOAD(host_probes), LOAD(condition_patches_ok),
	        LOAD(condition_patches_failed));
#undef LOAD
	if (n < 0 || (size_t)n >= cap)
		return tau_error_set(TAU_ETOOBIG, "metrics buffer too small");
	return n;
}

static bool healthz(void *ud, char *reason, size_t cap)
{
	const tau_agent_metrics *m = ud;

	if (atomic_load_explicit(&m->node_synced, memory_order_relaxed))
		return true;
	snprintf(reason, cap, "node informer not synced");
	return false;
}

static int metrics(void *ud, char **out)
{
	char *buf = malloc(METRICS_BUF);
	int n;

	if (buf == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	n = tau_agent_metrics_format(buf, METRICS_BUF, ud);
	if (n < 0) {
		free(buf);
		return n;
	}
	*out = buf;
	return 0;
}

int tau_agent_http_start(tau_http_server **out, const char *addr, tau_agent_metrics *m,
                         int *port_out)
{
	tau_http_server_opts o = {
	        .listen = addr,
	        .healthz = healthz,
	        .metrics = metrics,
	        .ud = m,
	        .max_connections = HTTP_MAX_CONNECTIONS,
	        .timeout_s = HTTP_TIMEOUT_S,
	        .thread_stack_bytes = 256 * 1024,
	};

	return tau_http_server_start(out, &o, port_out);
}
