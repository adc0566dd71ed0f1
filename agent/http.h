/*
 * http.h - /healthz and /metrics of tau-node-agent, on libtau's HTTP server.
 *
 * The server thread only reads the counters the event loop writes (metrics.h).
 */
#ifndef TAU_AGENT_HTTP_H
#define TAU_AGENT_HTTP_H

#include "metrics.h"

#include "tau/http.h"

/**
 * Serve on `addr` ([HOST]:PORT; port 0 picks one) on a thread of its own.
 * `m` is borrowed and must outlive the server; stop with tau_http_server_stop.
 * @param port_out  receives the bound port (may be NULL)
 * @return 0, -TAU_EINVAL (address), -TAU_EIO (cannot bind).
 */
int tau_agent_http_start(tau_http_server **out, const char *addr, tau_agent_metrics *m,
                         int *port_out);

#endif /* TAU_AGENT_HTTP_H */
