/*
 * http.c - /healthz, /readyz and /metrics over libmicrohttpd (tau/http.h).
 *
 * MHD runs its own polling thread and calls handle() there; every answer is computed by a
 * callback into a buffer that MHD copies or frees, so no request keeps the daemon's state.
 * "localhost" binds 127.0.0.1 (not whatever the resolver lists first); other host names
 * resolve once, at start.
 */
#include "tau/http.h"

#include "tau/error.h"
#include "tau/parse.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define DEFAULT_MAX_CONNECTIONS 16
#define DEFAULT_TIMEOUT_S       10
#define METRICS_TYPE            "text/plain; version=0.0.4; charset=utf-8"

struct tau_http_server {
	struct MHD_Daemon *daemon;
	tau_http_server_opts o;
};

/* Queue `body` (len bytes); with `owned` MHD frees it, otherwise it is copied. */
static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int code, const char *type,
                             char *body, size_t len, bool owned)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
	        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
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

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int code, const char *text)
{
	return reply(conn, code, "text/plain", (char *)text, strlen(text), false);
}

static enum MHD_Result probe(struct MHD_Connection *conn, const tau_http_server *s,
                             tau_http_probe_fn fn, bool ready_words)
{
	char reason[256], text[300];
	bool ok;

	reason[0] = '\0';
	ok = fn(s->o.ud, reason, sizeof(reason));
	reason[sizeof(reason) - 1] = '\0';
	if (ready_words)
		snprintf(text, sizeof(text), "%s: %s\n", ok ? "ready" : "not ready", reason);
	else
		snprintf(text, sizeof(text), "%s\n", ok ? "ok" : reason);
	return reply_text(conn, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **req_cls)
{
	tau_http_server *s = cls;

	(void)version;
	(void)upload_data;
	(void)req_cls;
	if (*upload_size != 0) {
		*upload_size = 0; /* bodies are not read: every endpoint is a GET */
		return MHD_YES;
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/livez") == 0) {
		if (s->o.healthz == NULL)
			return reply_text(conn, MHD_HTTP_OK, "ok\n");
		return probe(conn, s, s->o.healthz, false);
	}
	if (strcmp(url, "/readyz") == 0 && s->o.readyz != NULL)
		return probe(conn, s, s->o.readyz, true);
	if (strcmp(url, "/metrics") == 0 && s->o.metrics != NULL) {
		char *body = NULL;

		if (s->o.metrics(s->o.ud, &body) < 0 || body == NULL)
			return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
			                  "metrics unavailable\n");
		return reply(conn, MHD_HTTP_OK, METRICS_TYPE, body, strlen(body), true);
	}
	return reply_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* The socket address of a parsed listen address.  @return 0 or -TAU_EINVAL. */
static int listen_sockaddr(struct sockaddr_storage *ss, bool *v6, const char *host, int port,
                           const char *addr)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	char ps[8];

	memset(ss, 0, sizeof(*ss));
	*v6 = false;
	if (host[0] == '\0' || strcmp(host, "localhost") == 0) {
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(host[0] == '\0' ? INADDR_ANY : INADDR_LOOPBACK);
		in->sin_port = htons((uint16_t)port);
		return 0;
	}
	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(host, ps, &hints, &res) != 0 || res == NULL)
		return tau_error_set(TAU_EINVAL, "listen address %s: cannot resolve host %s", addr,
		                     host);
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*v6 = res->ai_family == AF_INET6;
	freeaddrinfo(res);
	return 0;
}

int tau_http_server_start(tau_http_server **out, const tau_http_server_opts *opts, int *port_out)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
	struct sockaddr_storage ss;
	tau_http_server *s;
	char host[256];
	bool v6;
	int port, rc;

	if (opts == NULL || opts->listen == NULL)
		return tau_error_set(TAU_EINVAL, "no HTTP listen address");
	if ((rc = tau_parse_listen(host, sizeof(host), &port, opts->listen)) < 0 ||
	    (rc = listen_sockaddr(&ss, &v6, host, port, opts->listen)) < 0)
		return rc;
	if (v6)
		flags |= MHD_USE_IPv6;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	s->o = *opts;
	s->o.listen = NULL; /* not kept: the caller's string may go */
	if (s->o.max_connections == 0)
		s->o.max_connections = DEFAULT_MAX_CONNECTIONS;
	if (s->o.timeout_s == 0)
		s->o.timeout_s = DEFAULT_TIMEOUT_S;
	if (s->o.thread_stack_bytes != 0)
		s->daemon = MHD_start_daemon(
		        flags, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
		        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections,
		        MHD_OPTION_CONNECTION_TIMEOUT, s->o.timeout_s, MHD_OPTION_THREAD_STACK_SIZE,
		        s->o.thread_stack_bytes, MHD_OPTION_END);
	else
		s->daemon = MHD_start_daemon(
		        flags, (uint16_t)port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
		        (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT, s->o.max_connections,
		        MHD_OPTION_CONNECTION_TIMEOUT, s->o.timeout_s, MHD_OPTION_END);
	if (s->daemon == NULL) {
		free(s);
		return tau_error_set(TAU_EIO, "cannot serve HTTP on %s (address in use?)",
		                     opts->listen);
	}
	if (port_out != NULL) {
		const union MHD_DaemonInfo *info =
		        MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);

		*port_out = info != NULL ? (int)info->port : port;
	}
	*out = s;
	return 0;
}

void tau_http_server_stop(tau_http_server *s)
{
	if (s == NULL)
		return;
	MHD_stop_daemon(s->daemon);
	free(s);
}
