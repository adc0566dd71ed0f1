/*
 * http.h - the aggregator's plain HTTP endpoints, served by libtau's HTTP server
 * (tau/http.h): /healthz and /livez (the process serves), /readyz (the readiness
 * callback says so), /metrics (Prometheus text from tau_inventory_metrics).
 */
#ifndef TAU_AGGREGATOR_HTTP_H
#define TAU_AGGREGATOR_HTTP_H

#include "service.h"

#include "tau/buf.h"

#include <stdbool.h>

typedef struct tau_agg_http tau_agg_http;

/** Readiness: true when ready, with a short reason either way. */
typedef bool (*tau_agg_ready_fn)(void *ud, char *reason, size_t cap);

/** More metric families for /metrics, appended after the inventory's.  @return 0 or < 0. */
typedef int (*tau_agg_metrics_fn)(void *ud, tau_buf *out);

/**
 * Listen on `addr` ("HOST:PORT", "[V6]:PORT", ":PORT"; port 0 picks one) and
 * serve on an internal thread.  `more_metrics` (may be NULL) adds families to /metrics.  `port_out`
 * (may be NULL) gets the bound port.
 * @return 0, -TAU_EINVAL (address), -TAU_EIO (cannot listen).
 */
int tau_agg_http_start(tau_agg_http **out, const char *addr, tau_inventory *agg,
                       tau_agg_ready_fn ready, void *ready_ud, tau_agg_metrics_fn more_metrics,
                       void *more_ud, int *port_out);

/** Stop serving and free; NULL is a no-op. */
void tau_agg_http_stop(tau_agg_http *h);

#endif /* TAU_AGGREGATOR_HTTP_H */
