/*
 * http.c - /healthz and /metrics over libmicrohttpd.
 *
 * The one idea: the server thread only reads atomics the event loop writes,
 * so serving never takes a lock the loop holds.  Health is "the Node
 * informer has listed": before that the agent knows nothing worth
 * reporting and kubelet should not count the pod ready.  Connections are
 * capped and time out, since anything on the node network can reach the port.
 */
#include "http.h"

#include "config.h"
#include "tau/error.h"
#include "tau/parse.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HTTP_MAX_CONNECTIONS 16
#define HTTP_TIMEOUT_S       10
#define METRICS_BUF          4096

struct tau_agent_http {
	struct MHD_Daemon *daemon;
	tau_agent_metrics *m;
};

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
	        "tau_agent_host_probes_total %llu\n",
	        LOAD(inventories_sent), LOAD(heartbeats_sent), LOAD(stopping_sent), LOAD(connects),
	        LOAD(reconnects), (long long)(last_ms / 1000), (long long)(last_ms % 1000),
	        LOAD(problems), atomic_load_explicit(&m->connected, memory_order_relaxed) ? 1 : 0,
	        atomic_load_explicit(&m->node_synced, memory_order_relaxed) ? 1 : 0,
	        LOAD(inventory_builds), LOAD(host_probes));
#undef LOAD
	if (n < 0 || (size_t)n >= cap)
		return tau_error_set(TAU_ETOOBIG, "metrics buffer too small");
	return n;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int code, const char *type,
                             const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
	tau_agent_http *h = cls;
	char buf[METRICS_BUF];
	int n;

	(void)version;
	(void)upload_data;
	(void)req_cls;
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* bodies are ignored */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
		             "method not allowed\n", 19);
	if (strcmp(url, "/healthz") == 0) {
		if (atomic_load_explicit(&h->m->node_synced, memory_order_relaxed))
			return reply(conn, MHD_HTTP_OK, "text/plain", "ok\n", 3);
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
		             "node informer not synced\n", 25);
	}
	if (strcmp(url, "/metrics") == 0) {
		n = tau_agent_metrics_format(buf, sizeof(buf), h->m);
		if (n < 0)
			return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", "error\n",
			             6);
		return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", buf, (size_t)n);
	}
	return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", 10);
}

int tau_agent_http_start(tau_agent_http **out, const char *addr, tau_agent_metrics *m,
                         int *port_out)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	const union MHD_DaemonInfo *info;
	tau_agent_http *h;
	char host[256];
	int port = 0;
	int rc;

	rc = tau_parse_listen(host, sizeof(host), &port, addr);
	if (rc < 0)
		return rc;
	memset(&ss, 0, sizeof(ss));
	if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0) {
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_ANY);
		sin->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		flags |= MHD_USE_IPv6;
	} else if (strcmp(host, "localhost") == 0) {
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin->sin_port = htons((uint16_t)port);
	} else {
		return tau_error_set(TAU_EINVAL, "--http-listen %s: host must be an IP address",
		                     addr);
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	h->m = m;
	h->daemon =
	        MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
	                         (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
	                         (unsigned int)HTTP_MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
	                         (unsigned int)HTTP_TIMEOUT_S, MHD_OPTION_THREAD_STACK_SIZE,
	                         (size_t)(256 * 1024), MHD_OPTION_END);
	if (h->daemon == NULL) {
		free(h);
		return tau_error_set(TAU_EIO, "cannot serve HTTP on %s (address in use?)", addr);
	}
	info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (port_out != NULL)
		*port_out = info != NULL ? info->port : port;
	*out = h;
	return 0;
}

void tau_agent_http_stop(tau_agent_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->daemon);
	free(h);
}
