/*
 * nodeconditions.c - Node conditions from node-local truth (see nodeconditions.h).
 *
 * The one idea: a condition is a pure function of the inventory, and "changed" means its
 * status, reason or message changed, never its times; so the agent patches its Node only
 * when the node's health moved, and a restarted agent that finds its own conditions already
 * there writes nothing.  Messages name the sick GPU or port, as an operator reading
 * `kubectl describe node` needs, and are bounded (a peer-sized list must not grow the Node).
 */
#include "nodeconditions.h"

#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A bounded message: appends stop at the cap, which then ends in "...". */
typedef struct message {
	char text[TAU_AGENT_COND_MESSAGE_MAX];
	size_t len;
	bool truncated;
} message;

static void msg_add(message *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void msg_add(message *m, const char *fmt, ...)
{
	size_t room = sizeof(m->text) - m->len;
	va_list ap;
	int n;

	if (m->truncated)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->text + m->len, room, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < room) {
		m->len += (size_t)n;
		return;
	}
	m->truncated = true;
	m->len = sizeof(m->text) - 1;
	memcpy(m->text + sizeof(m->text) - 4, "...", 4);
}

static const char *port_state_name(int state)
{
	switch (state) {
	case 1:
		return "DOWN";
	case 2:
		return "INIT";
	case 3:
		return "ARMED";
	case 4:
		return "ACTIVE";
	case 5:
		return "ACTIVE_DEFER";
	default:
		return "unknown";
	}
}

static bool port_up(const tau_agent_rdma_port *p)
{
	return p->state == 4 || p->state == 5;
}

static int add(cJSON *conds, const cJSON *current, const char *type, const char *status,
               const char *reason, const char *msg, const char *now)
{
	cJSON *c;

	if (tau_conditions_set(conds, current, type, status, reason, msg, -1, now) < 0)
		return -TAU_ENOMEM;
	c = (cJSON *)tau_conditions_find(conds, type);
	if (c == NULL || cJSON_AddStringToObject(c, "lastHeartbeatTime", now) == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	return 0;
}

static int gpu_condition(cJSON *conds, const tau_agent_inventory *inv, const cJSON *current,
                         const char *now)
{
	const tau_agent_devices *d = &inv->devices;
	const char *status = "True", *reason = "GPUsHealthy";
	message m = {.len = 0};
	int64_t sick = 0;

	if (!d->nvml_probed) {
		status = "Unknown";
		reason = "NVMLUnavailable";
		msg_add(&m, "NVML not probed: %s",
		        d->nvml_note != NULL ? d->nvml_note : "no reason given");
	} else if (d->nvml.count == 0) {
		status = "False";
		reason = "NoGPUs";
		msg_add(&m, "NVML answered but sees no GPU");
	} else {
		for (size_t i = 0; i < d->nvml.n_gpus; i++)
			sick += d->nvml.gpus[i].healthy ? 0 : 1;
		if (sick > 0) {
			status = "False";
			reason = "GPUUnhealthy";
			msg_add(&m, "%lld of %u GPUs unhealthy:", (long long)sick, d->nvml.count);
			for (size_t i = 0; i < d->nvml.n_gpus; i++) {
				const tau_agent_gpu *g = &d->nvml.gpus[i];

				if (g->healthy)
					continue;
				msg_add(&m, " GPU %u (%s): %s;", g->index,
				        g->uuid != NULL ? g->uuid : "UUID unknown",
				        g->reason != NULL ? g->reason : "unhealthy");
			}
			if (!m.truncated && m.len > 0 && m.text[m.len - 1] == ';')
				m.text[--m.len] = '\0';
		} else {
			msg_add(&m, "%u of %u GPUs healthy (NVML)", d->nvml.count, d->nvml.count);
		}
	}
	return add(conds, current, TAU_AGENT_COND_GPU_HEALTHY, status, reason, m.text, now);
}

static int network_condition(cJSON *conds, const tau_agent_inventory *inv, const cJSON *current,
                             const char *now)
{
	const tau_agent_devices *d = &inv->devices;
	const char *status = "True", *reason = "RDMAPortsActive";
	message m = {.len = 0};

	if (d->rdma_ports_total < 0 || d->rdma_ports_up < 0) {
		status = "Unknown";
		reason = "RDMAPortsUnreadable";
		msg_add(&m, "the InfiniBand/RoCE ports under /sys/class/infiniband could not be "
		            "read (the agent's inventory problems say why)");
	} else if (d->rdma_ports_total == 0) {
		status = "Unknown";
		reason = "NoRDMAPorts";
		msg_add(&m, "no InfiniBand/RoCE port on this node");
	} else if (d->rdma_ports_up < d->rdma_ports_total) {
		status = "False";
		reason = "RDMAPortDown";
		msg_add(&m, "%lld of %lld RDMA ports not active:",
		        (long long)(d->rdma_ports_total - d->rdma_ports_up),
		        (long long)d->rdma_ports_total);
		for (size_t i = 0; i < d->n_rdma_ports; i++) {
			const tau_agent_rdma_port *p = &d->rdma_ports[i];

			if (port_up(p))
				continue;
			msg_add(&m, " %s port %s state %d: %s;", p->device, p->port, p->state,
			        port_state_name(p->state));
		}
		if (!m.truncated && m.len > 0 && m.text[m.len - 1] == ';')
			m.text[--m.len] = '\0';
	} else {
		msg_add(&m, "%lld of %lld RDMA ports active", (long long)d->rdma_ports_up,
		        (long long)d->rdma_ports_total);
	}
	return add(conds, current, TAU_AGENT_COND_NETWORK_READY, status, reason, m.text, now);
}

int tau_agent_node_conditions_build(cJSON **out, const tau_agent_inventory *inv,
                                    const cJSON *current, const char *now)
{
	cJSON *conds = cJSON_CreateArray();

	if (conds == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	if (!cJSON_IsArray(current))
		current = NULL;
	if (gpu_condition(conds, inv, current, now) < 0 ||
	    network_condition(conds, inv, current, now) < 0) {
		cJSON_Delete(conds);
		return tau_error_set(TAU_ENOMEM, "out of memory building the Node conditions");
	}
	*out = conds;
	return 0;
}

static bool same_string(const cJSON *a, const cJSON *b, const char *field)
{
	const char *x = NULL, *y = NULL;

	if (tau_json_get_string(&x, a, field) < 0)
		x = "";
	if (tau_json_get_string(&y, b, field) < 0)
		y = "";
	return strcmp(x, y) == 0;
}

bool tau_agent_node_conditions_published(const cJSON *desired, const cJSON *current)
{
	const cJSON *want;

	cJSON_ArrayForEach(want, desired)
	{
		const char *type = NULL;
		const cJSON *have;

		if (tau_json_get_string(&type, want, "type") < 0)
			continue;
		have = cJSON_IsArray(current) ? tau_conditions_find(current, type) : NULL;
		if (have == NULL || !same_string(want, have, "status") ||
		    !same_string(want, have, "reason") || !same_string(want, have, "message"))
			return false;
	}
	return true;
}

int tau_agent_node_conditions_patch(char **out, const cJSON *desired)
{
	cJSON *patch = cJSON_CreateObject(), *status, *copy;
	char *text = NULL;
	int rc;

	copy = cJSON_Duplicate(desired, true);
	status = patch != NULL ? cJSON_AddObjectToObject(patch, "status") : NULL;
	if (status == NULL || copy == NULL || !cJSON_AddItemToObject(status, "conditions", copy)) {
		cJSON_Delete(copy);
		cJSON_Delete(patch);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	rc = tau_json_print(&text, patch);
	cJSON_Delete(patch);
	if (rc < 0)
		return rc;
	*out = text;
	return 0;
}
