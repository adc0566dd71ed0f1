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
#define METRICS_BUF          4096 /* the text is about 1.9 KiB */

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
