/*
 * Unit tests of agent/nodeconditions.c: the Node conditions of --node-conditions from an
 * inventory (TauGPUHealthy from NVML, TauNetworkReady from the RDMA ports), lastTransitionTime
 * kept while a status stays, "published" ignoring times, bounded messages, and the strategic
 * merge patch body.
 */
#include "nodeconditions.h"

#include "tau/conditions.h"
#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define T0 "2026-12-03T10:00:00Z"
#define T1 "2026-12-03T11:00:00Z"

/* An inventory whose NVML sees `n` GPUs (`sick` of them, from index 0, with a pending remap)
 * and whose `ports` RDMA ports are ACTIVE except the first `down`. */
static void make_inventory(tau_agent_inventory *inv, unsigned n, unsigned sick, unsigned ports,
                           unsigned down)
{
	tau_agent_inventory_init(inv);
	inv->devices.nvml_probed = true;
	inv->devices.nvml.probed = true;
	inv->devices.nvml.count = n;
	inv->devices.nvml.n_gpus = n;
	inv->devices.nvml.gpus = calloc(n ? n : 1, sizeof(tau_agent_gpu));
	assert_non_null(inv->devices.nvml.gpus);
	for (unsigned i = 0; i < n; i++) {
		tau_agent_gpu *g = &inv->devices.nvml.gpus[i];
		char uuid[32];

		snprintf(uuid, sizeof(uuid), "GPU-%08u", i);
		g->index = i;
		g->uuid = strdup(uuid);
		g->healthy = i >= sick;
		g->reason = i < sick ? strdup("row remap pending: the GPU needs a reset") : NULL;
	}
	inv->devices.rdma_ports_total = ports;
	inv->devices.rdma_ports_up = ports - down;
	inv->devices.n_rdma_ports = ports;
	inv->devices.rdma_ports = calloc(ports ? ports : 1, sizeof(tau_agent_rdma_port));
	assert_non_null(inv->devices.rdma_ports);
	for (unsigned i = 0; i < ports; i++) {
		tau_agent_rdma_port *p = &inv->devices.rdma_ports[i];
		char dev[16];

		snprintf(dev, sizeof(dev), "mlx5_%u", i);
		p->device = strdup(dev);
		p->port = strdup("1");
		p->state = i < down ? 1 : 4;
		p->phys_state = i < down ? 3 : 5;
	}
}

static const char *field(const cJSON *conds, const char *type, const char *name)
{
	const cJSON *c = tau_conditions_find(conds, type);
	const cJSON *v;

	assert_non_null(c);
	v = cJSON_GetObjectItemCaseSensitive(c, name);
	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static cJSON *build(const tau_agent_inventory *inv, const cJSON *current, const char *now)
{
	cJSON *out = NULL;

	assert_int_equal(tau_agent_node_conditions_build(&out, inv, current, now), 0);
	assert_non_null(out);
	return out;
}

static void test_healthy_node(void **state)
{
	tau_agent_inventory inv;
	cJSON *c;

	(void)state;
	make_inventory(&inv, 8, 0, 8, 0);
	c = build(&inv, NULL, T0);
	assert_int_equal(cJSON_GetArraySize(c), 2);
	assert_string_equal(field(c, "TauGPUHealthy", "status"), "True");
	assert_string_equal(field(c, "TauGPUHealthy", "reason"), "GPUsHealthy");
	assert_string_equal(field(c, "TauGPUHealthy", "message"), "8 of 8 GPUs healthy (NVML)");
	assert_string_equal(field(c, "TauGPUHealthy", "lastTransitionTime"), T0);
	assert_string_equal(field(c, "TauGPUHealthy", "lastHeartbeatTime"), T0);
	assert_null(cJSON_GetObjectItemCaseSensitive(tau_conditions_find(c, "TauGPUHealthy"),
	                                             "observedGeneration"));
	assert_string_equal(field(c, "TauNetworkReady", "status"), "True");
	assert_string_equal(field(c, "TauNetworkReady", "reason"), "RDMAPortsActive");
	assert_string_equal(field(c, "TauNetworkReady", "message"), "8 of 8 RDMA ports active");
	cJSON_Delete(c);
	tau_agent_inventory_free(&inv);
}

static void test_sick_gpu_and_port_down_are_named(void **state)
{
	tau_agent_inventory inv;
	cJSON *c;

	(void)state;
	make_inventory(&inv, 8, 1, 8, 1);
	c = build(&inv, NULL, T0);
	assert_string_equal(field(c, "TauGPUHealthy", "status"), "False");
	assert_string_equal(field(c, "TauGPUHealthy", "reason"), "GPUUnhealthy");
	assert_string_equal(field(c, "TauGPUHealthy", "message"),
	                    "1 of 8 GPUs unhealthy: GPU 0 (GPU-00000000): row remap pending: the "
	                    "GPU needs a reset");
	assert_string_equal(field(c, "TauNetworkReady", "status"), "False");
	assert_string_equal(field(c, "TauNetworkReady", "reason"), "RDMAPortDown");
	assert_string_equal(field(c, "TauNetworkReady", "message"),
	                    "1 of 8 RDMA ports not active: mlx5_0 port 1 state 1: DOWN");
	cJSON_Delete(c);
	tau_agent_inventory_free(&inv);
}

static void test_unknowns(void **state)
{
	tau_agent_inventory inv;
	cJSON *c;

	(void)state;
	tau_agent_inventory_init(&inv); /* nothing probed: NVML off, ports unknown */
	inv.devices.nvml_note = strdup("NVML disabled by TAU_AGENT_NVML=off");
	c = build(&inv, NULL, T0);
	assert_string_equal(field(c, "TauGPUHealthy", "status"), "Unknown");
	assert_string_equal(field(c, "TauGPUHealthy", "reason"), "NVMLUnavailable");
	assert_string_equal(field(c, "TauGPUHealthy", "message"),
	                    "NVML not probed: NVML disabled by TAU_AGENT_NVML=off");
	assert_string_equal(field(c, "TauNetworkReady", "status"), "Unknown");
	assert_string_equal(field(c, "TauNetworkReady", "reason"), "RDMAPortsUnreadable");
	cJSON_Delete(c);
	tau_agent_inventory_free(&inv);

	make_inventory(&inv, 0, 0, 0, 0);
	c = build(&inv, NULL, T0);
	assert_string_equal(field(c, "TauGPUHealthy", "status"), "False");
	assert_string_equal(field(c, "TauGPUHealthy", "reason"), "NoGPUs");
	assert_string_equal(field(c, "TauNetworkReady", "status"), "Unknown");
	assert_string_equal(field(c, "TauNetworkReady", "reason"), "NoRDMAPorts");
	cJSON_Delete(c);
	tau_agent_inventory_free(&inv);
}

static void test_transition_time_and_published(void **state)
{
	tau_agent_inventory inv;
	cJSON *first, *again, *sick, *node;

	(void)state;
	make_inventory(&inv, 8, 0, 8, 0);
	first = build(&inv, NULL, T0);
	/* The Node holds them, with kubelet's Ready beside: nothing to publish. */
	node = cJSON_Parse(
	        "[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\"}]");
	assert_non_null(node);
	assert_false(tau_agent_node_conditions_published(first, node));
	assert_false(tau_agent_node_conditions_published(first, NULL));
	for (cJSON *c = first->child; c != NULL; c = c->next)
		cJSON_AddItemToArray(node, cJSON_Duplicate(c, true));
	again = build(&inv, node, T1);
	assert_true(tau_agent_node_conditions_published(again, node)); /* times ignored */
	assert_string_equal(field(again, "TauGPUHealthy", "lastTransitionTime"), T0);
	assert_string_equal(field(again, "TauGPUHealthy", "lastHeartbeatTime"), T1);
	tau_agent_inventory_free(&inv);

	/* A GPU turns sick: that condition transitions now, the other keeps its time. */
	make_inventory(&inv, 8, 2, 8, 0);
	sick = build(&inv, node, T1);
	assert_false(tau_agent_node_conditions_published(sick, node));
	assert_string_equal(field(sick, "TauGPUHealthy", "lastTransitionTime"), T1);
	assert_string_equal(field(sick, "TauNetworkReady", "lastTransitionTime"), T0);
	cJSON_Delete(first);
	cJSON_Delete(again);
	cJSON_Delete(sick);
	cJSON_Delete(node);
	tau_agent_inventory_free(&inv);
}

static void test_message_is_bounded(void **state)
{
	tau_agent_inventory inv;
	const char *msg;
	cJSON *c;

	(void)state;
	make_inventory(&inv, 64, 64, 64, 64);
	c = build(&inv, NULL, T0);
	msg = field(c, "TauGPUHealthy", "message");
	assert_int_equal(strlen(msg), TAU_AGENT_COND_MESSAGE_MAX - 1);
	assert_string_equal(msg + strlen(msg) - 3, "...");
	assert_true(strncmp(msg, "64 of 64 GPUs unhealthy: GPU 0 (GPU-00000000)", 44) == 0);
	msg = field(c, "TauNetworkReady", "message");
	assert_true(strlen(msg) < TAU_AGENT_COND_MESSAGE_MAX);
	cJSON_Delete(c);
	tau_agent_inventory_free(&inv);
}

static void test_patch_body(void **state)
{
	tau_agent_inventory inv;
	cJSON *c, *parsed;
	char *patch = NULL;
	const cJSON *conds;

	(void)state;
	make_inventory(&inv, 2, 0, 1, 0);
	c = build(&inv, NULL, T0);
	assert_int_equal(tau_agent_node_conditions_patch(&patch, c), 0);
	parsed = cJSON_Parse(patch);
	assert_non_null(parsed);
	assert_int_equal(cJSON_GetArraySize(parsed), 1); /* only status */
	conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(parsed, "status"),
	                                         "conditions");
	assert_true(cJSON_IsArray(conds));
	assert_true(tau_agent_node_conditions_published(c, conds));
	assert_string_equal(field(conds, "TauNetworkReady", "message"), "1 of 1 RDMA ports active");
	free(patch);
	cJSON_Delete(parsed);
	cJSON_Delete(c);
	tau_agent_inventory_free(&inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_healthy_node),
	        cmocka_unit_test(test_sick_gpu_and_port_down_are_named),
	        cmocka_unit_test(test_unknowns),
	        cmocka_unit_test(test_transition_time_and_published),
	        cmocka_unit_test(test_message_is_bounded),
	        cmocka_unit_test(test_patch_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
