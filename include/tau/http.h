/*
 * tau/http.h - the daemons' HTTP endpoints: /healthz (and /livez), /readyz, /metrics.
 *
 * One small server on libmicrohttpd, on a thread of its own, used by the node agent and the
 * aggregator alike.  It only ever answers GET and HEAD of those paths: request bodies are
 * not read, connections are capped and time out, since anything on the network can reach
 * the port.  Every answer comes from a callback that copies what it needs, so a slow scraper
 * never holds the daemon's state.
 *
 *   /healthz, /livez  200 "ok"            or 503 "<reason>"       (healthz callback; none: 200)
 *   /readyz           200 "ready: <why>"  or 503 "not ready: <why>" (readyz callback; none: 404)
 *   /metrics          200 Prometheus text exposition 0.0.4        (metrics callback; none: 404)
 */
#ifndef TAU_HTTP_H
#define TAU_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/** A running server. */
typedef struct tau_http_server tau_http_server;

/** A probe: true when healthy; `reason` (cap bytes) says why or why not, NUL-terminated. */
typedef bool (*tau_http_probe_fn)(void *ud, char *reason, size_t cap);

/** Render the metrics: gives *out (free()).  @return 0, or < 0 (answered 500). */
typedef int (*tau_http_metrics_fn)(void *ud, char **out);

/** What to serve; zero-initialise. */
typedef struct tau_http_server_opts {
	const char *listen;          /**< "HOST:PORT", ":PORT" or "[V6]:PORT"; port 0 picks one */
	tau_http_probe_fn healthz;   /**< NULL: always healthy */
	tau_http_probe_fn readyz;    /**< NULL: no /readyz */
	tau_http_metrics_fn metrics; /**< NULL: no /metrics */
	void *ud;                    /**< given to the callbacks */
	unsigned max_connections;    /**< 0: 16 */
	unsigned timeout_s;          /**< idle connection timeout; 0: 10 */
	size_t thread_stack_bytes;   /**< 0: the system's default */
} tau_http_server_opts;

/**
 * Start serving.  Callbacks run on the server's thread.
 * @param port_out  receives the bound port (may be NULL)
 * @return 0; -TAU_EINVAL (listen address, or a host that does not resolve); -TAU_EIO
 *         (cannot bind); -TAU_ENOMEM.
 */
int tau_http_server_start(tau_http_server **out, const tau_http_server_opts *opts, int *port_out);

/** Stop serving (waits for the thread) and free.  NULL is a no-op. */
void tau_http_server_stop(tau_http_server *s);

#endif /* TAU_HTTP_H */
