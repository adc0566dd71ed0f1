/*
 * metrics.c - tau-node-agent's Prometheus text, on libtau's exposition pieces (tau/prom.h).
 *
 * The one idea: one read of each counter the event loop writes, rendered as the families
 * docs/agent.md lists ("Health and metrics"), always all of them (a report never sent is 0,
 * not absent).
 */
#include "metrics.h"

#include "tau/buf.h"
#include "tau/error.h"
#include "tau/prom.h"

#include <stdlib.h>
#include <string.h>

#define LOAD(f) ((uint64_t)atomic_load_explicit(&m->f, memory_order_relaxed))

/* A counter family with one label: HELP, TYPE, then a sample per value. */
static void counter_by(tau_buf *b, const char *name, const char *help, const char *label,
                       const char *const *values, const uint64_t *counts, size_t n)
{
	tau_prom_family(b, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		tau_prom_labelled(b, name, label, values[i], counts[i]);
}

static void write_families(tau_buf *b, const tau_agent_metrics *m)
{
	static const char *const kinds[] = {"inventory", "heartbeat", "stopping"};
	static const char *const results[] = {"ok", "error"};
	int64_t last_ms = atomic_load_explicit(&m->last_report_ms, memory_order_relaxed);
	const uint64_t sent[] = {LOAD(inventories_sent), LOAD(heartbeats_sent),
	                         LOAD(stopping_sent)};
	const uint64_t patches[] = {LOAD(condition_patches_ok), LOAD(condition_patches_failed)};

	counter_by(b, "tau_agent_reports_sent_total", "Reports sent to the aggregator, by kind.",
	           "kind", kinds, sent, 3);
	tau_prom_scalar(b, "tau_agent_connects_total", "counter", "Report streams that came up.",
	                LOAD(connects));
	tau_prom_scalar(b, "tau_agent_reconnects_total", "counter",
	                "Report streams that came up again after the first.", LOAD(reconnects));
	tau_prom_family(b, "tau_agent_last_report_timestamp_seconds", "gauge",
	                "When the last report was sent (0: never).");
	tau_buf_printf(b, "tau_agent_last_report_timestamp_seconds %lld.%03lld\n",
	               (long long)(last_ms / 1000), (long long)(last_ms % 1000));
	tau_prom_scalar(b, "tau_agent_problems", "gauge",
	                "Problems listed in the current inventory.", LOAD(problems));
	tau_prom_scalar(b, "tau_agent_connected", "gauge",
	                "1 while a report stream to the aggregator is up.",
	                LOAD(connected) ? 1 : 0);
	tau_prom_scalar(b, "tau_agent_node_synced", "gauge", "1 once the Node informer has listed.",
	                LOAD(node_synced) ? 1 : 0);
	tau_prom_scalar(b, "tau_agent_inventory_builds_total", "counter",
	                "Inventories rebuilt after a change signal.", LOAD(inventory_builds));
	tau_prom_scalar(b, "tau_agent_host_probes_total", "counter", "Host probes run.",
	                LOAD(host_probes));
	counter_by(b, "tau_agent_node_condition_patches_total",
	           "Patches of this node's status.conditions (--node-conditions), by result.",
	           "result", results, patches, 2);
}

#undef LOAD

int tau_agent_metrics_format(char *buf, size_t cap, const tau_agent_metrics *m)
{
	tau_buf b = TAU_BUF_INIT(cap > 1 ? cap - 1 : 1); /* the NUL is not counted */
	int rc;

	if (cap > 1)
		write_families(&b, m);
	rc = cap > 1 ? tau_buf_error(&b) : -TAU_ETOOBIG;
	if (rc == -TAU_ETOOBIG)
		rc = tau_error_set(TAU_ETOOBIG, "metrics buffer too small");
	if (rc == 0) {
		memcpy(buf, b.p, b.len + 1);
		rc = (int)b.len;
	}
	tau_buf_free(&b);
	return rc;
}
