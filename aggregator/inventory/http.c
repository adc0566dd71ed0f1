/*
 * http.c - /healthz, /readyz and /metrics over libmicrohttpd.
 *
 * MHD runs its own polling thread; every answer is computed from the
 * aggregator state under its lock (tau_agg_metrics) or from the readiness
 * callback, then copied into the response, so no request ever holds state.
 */
#include "http.h"

#include "tau/error.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct tau_agg_http {
	struct MHD_Daemon *daemon;
	tau_agg *agg;
	tau_agg_ready_fn ready;
	void *ready_ud;
};

int tau_agg_split_hostport(char *host, size_t cap, int *port, const char *addr)
{
	const char *colon;
	size_t hlen;
	char *end;
	long p;

	if (addr == NULL || addr[0] == '\0')
		return tau_error_set(TAU_EINVAL, "empty listen address");
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');

		if (close == NULL || close[1] != ':')
			return tau_error_set(TAU_EINVAL, "listen address %s: want [V6]:PORT", addr);
		hlen = (size_t)(close - addr - 1);
		addr++;
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (colon == NULL)
			return tau_error_set(TAU_EINVAL, "listen address %s: want HOST:PORT", addr);
		hlen = (size_t)(colon - addr);
	}
	if (hlen >= cap)
		return tau_error_set(TAU_EINVAL, "listen address %s: host too long", addr);
	p = strtol(colon + 1, &end, 10);
	if (colon[1] == '\0' || *end != '\0' || p < 0 || p > 65535)
		return tau_error_set(TAU_EINVAL, "listen address %s: bad port", addr);
	memcpy(host, addr, hlen);
	host[hlen] = '\0';
	*port = (int)p;
	return 0;
}

/* Queue `body`; with `owned` MHD frees it, otherwise it is copied (MHD's API is not const). */
static enum MHD_Result respond_buf(struct MHD_Connection *conn, unsigned int code, const char *type,
                                   char *body, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	        strlen(body), body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (r == NULL) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned int code, const char *type,
                               const char *text)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", text);
	return respond_buf(conn, code, type, buf, false);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **req_cls)
{
	tau_agg_http *h = cls;
	char reason[256], text[300];

	(void)version;
	(void)upload_data;
	(void)req_cls;
	if (*upload_size != 0) {
		*upload_size = 0; /* bodies are not read: every endpoint is a GET */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
		               "method not allowed\n");
	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0)
		return respond(conn, MHD_HTTP_OK, "text/plain", "ok\n");
	if (strcmp(url, "/readyz") == 0) {
		bool ok = h->ready(h->ready_ud, reason, sizeof(reason));

		snprintf(text, sizeof(text), "%s: %s\n", ok ? "ready" : "not ready", reason);
		return respond(conn, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
		               text);
	}
	if (strcmp(url, "/metrics") == 0) {
		char *body = NULL;

		if (tau_agg_metrics(h->agg, &body) < 0)
			return respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
			               "metrics unavailable\n");
		return respond_buf(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8",
		                   body, true);
	}
	return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n");
}

int tau_agg_http_start(tau_agg_http **out, const char *addr, tau_agg *agg, tau_agg_ready_fn ready,
                       void *ready_ud, int *port_out)
{
	char host[256];
	int port;
	struct sockaddr_storage ss;
	socklen_t sl = 0;
	tau_agg_http *h;
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	int rc = tau_agg_split_hostport(host, sizeof(host), &port, addr);

	if (rc < 0)
		return rc;
	memset(&ss, 0, sizeof(ss));
	if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		in->sin_port = htons((uint16_t)port);
		sl = sizeof(*in);
	} else {
		struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
		struct addrinfo *res = NULL;
		char ps[8];

		snprintf(ps, sizeof(ps), "%d", port);
		if (getaddrinfo(host, ps, &hints, &res) != 0 || res == NULL)
			return tau_error_set(TAU_EINVAL, "listen address %s: cannot resolve host",
			                     addr);
		memcpy(&ss, res->ai_addr, res->ai_addrlen);
		sl = (socklen_t)res->ai_addrlen;
		if (res->ai_family == AF_INET6)
			flags |= MHD_USE_IPv6;
		freeaddrinfo(res);
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	h->agg = agg;
	h->ready = ready;
	h->ready_ud = ready_ud;
	h->daemon = MHD_start_daemon(
	        flags, (uint16_t)port, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR,
	        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64,
	        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
	(void)sl;
	if (h->daemon == NULL) {
		free(h);
		return tau_error_set(TAU_EIO, "cannot listen on %s for HTTP", addr);
	}
	if (port_out != NULL) {
		const union MHD_DaemonInfo *info =
		        MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);

		*port_out = info != NULL ? (int)info->port : port;
	}
	*out = h;
	return 0;
}

void tau_agg_http_stop(tau_agg_http *h)
{
	if (h == NULL)
		return;
	MHD_stop_daemon(h->daemon);
	free(h);
}
