/*
 * metrics.h - what tau-node-agent counts, and its Prometheus text (/metrics).
 *
 * The event loop writes the counters below with relaxed atomics; the HTTP server, on its own
 * thread, only reads them, so a slow scraper never touches the loop.
 */
#ifndef TAU_AGENT_METRICS_H
#define TAU_AGENT_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** What the agent exposes; zero-initialise. */
typedef struct tau_agent_metrics {
	atomic_uint_fast64_t inventories_sent; /**< NodeInventory reports sent */
	atomic_uint_fast64_t heartbeats_sent;  /**< Heartbeat reports sent */
	atomic_uint_fast64_t stopping_sent;    /**< Stopping reports sent */
	atomic_uint_fast64_t connects;         /**< streams that came up */
	atomic_uint_fast64_t reconnects;       /**< streams that came up after the first */
	atomic_uint_fast64_t inventory_builds; /**< inventories rebuilt (changed or not) */
	atomic_uint_fast64_t host_probes;      /**< host probes run */
	atomic_int_fast64_t last_report_ms;    /**< wall clock of the last report sent; 0 never */
	atomic_uint_fast64_t problems;         /**< problems in the current inventory */
	atomic_uint_fast64_t condition_patches_ok;     /**< Node condition patches accepted */
	atomic_uint_fast64_t condition_patches_failed; /**< Node condition patches refused/failed */
	atomic_bool connected;                         /**< a stream is up */
	atomic_bool node_synced;                       /**< the Node informer has listed */
} tau_agent_metrics;

/**
 * Format the Prometheus text exposition of `m` into buf (NUL-terminated).
 * @return the length written, or -TAU_ETOOBIG when cap is too small.
 */
int tau_agent_metrics_format(char *buf, size_t cap, const tau_agent_metrics *m);

#endif /* TAU_AGENT_METRICS_H */
