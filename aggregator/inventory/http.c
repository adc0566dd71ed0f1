/*
 * http.c - the aggregator's /healthz, /readyz and /metrics on libtau's HTTP server.
 *
 * The server thread asks tau_inventory_metrics (which copies under the aggregator's lock) and the
 * readiness callback; nothing here keeps state of its own.  Up to 64 connections, 30 s idle
 * timeout: Prometheus and the kubelet are the only expected clients.
 */
#include "http.h"

#include "tau/error.h"
#include "tau/http.h"

#include <stdlib.h>

struct tau_agg_http {
	tau_http_server *server;
	tau_inventory *agg;
	tau_agg_ready_fn ready;
	void *ready_ud;
	tau_agg_metrics_fn more;
	void *more_ud;
};

static bool readyz(void *ud, char *reason, size_t cap)
{
	tau_agg_http *h = ud;

	return h->ready(h->ready_ud, reason, cap);
}

static int metrics(void *ud, char **out)
{
	tau_agg_http *h = ud;
	tau_buf b = TAU_BUF_INIT(0);
	char *inventory = NULL;
	int rc = tau_inventory_metrics(h->agg, &inventory);

	if (rc < 0 || h->more == NULL) {
		*out = inventory;
		return rc;
	}
	tau_buf_append_str(&b, inventory);
	free(inventory);
	if ((rc = h->more(h->more_ud, &b)) == 0 && (rc = tau_buf_error(&b)) == 0 &&
	    (*out = tau_buf_take(&b, NULL)) == NULL)
		rc = tau_error_set(TAU_ENOMEM, "out of memory rendering metrics");
	tau_buf_free(&b);
	return rc;
}

int tau_agg_http_start(tau_agg_http **out, const char *addr, tau_inventory *agg,
                       tau_agg_ready_fn ready, void *ready_ud, tau_agg_metrics_fn more_metrics,
                       void *more_ud, int *port_out)
{
	tau_http_server_opts o = {.listen = addr,
	                          .readyz = readyz,
	                          .metrics = metrics,
	                          .max_connections = 64,
	                          .timeout_s = 30};
	tau_agg_http *h = calloc(1, sizeof(*h));
	int rc;

	if (h == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	h->agg = agg;
	h->ready = ready;
	h->ready_ud = ready_ud;
	h->more = more_metrics;
	h->more_ud = more_ud;
	o.ud = h;
	rc = tau_http_server_start(&h->server, &o, port_out);
	if (rc < 0) {
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

void tau_agg_http_stop(tau_agg_http *h)
{
	if (h == NULL)
		return;
	tau_http_server_stop(h->server);
	free(h);
}
