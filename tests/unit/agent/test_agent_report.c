/*
 * Unit tests of agent/report.c: inventory -> NodeInventory (every field),
 * UTF-8 repair, and the report session (sequence numbers, full inventory
 * first, send on digest change only, heartbeats at the acked interval,
 * RESEND_FULL, the ack watchdog).
 */
#include "report.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *load_fixture(const char *name)
{
	char path[1024];
	FILE *f;
	char *buf;
	long len;
	cJSON *obj;

	snprintf(path, sizeof(path), "%s/tests/fixtures/kube/%s", TAU_SOURCE_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	obj = cJSON_Parse(buf);
	free(buf);
	assert_non_null(obj);
	return obj;
}

static const char *label_of(const Tau__Inventory__V1__NodeInventory *m, const char *key)
{
	for (size_t i = 0; i < m->n_labels; i++)
		if (strcmp(m->labels[i]->key, key) == 0)
			return m->labels[i]->value;
	return NULL;
}

static const Tau__Inventory__V1__CsiDriver *driver_of(const Tau__Inventory__V1__NodeInventory *m,
                                                      const char *name)
{
	for (size_t i = 0; i < m->n_csi_drivers; i++)
		if (strcmp(m->csi_drivers[i]->name, name) == 0)
			return m->csi_drivers[i];
	return NULL;
}

/* The ND H100 fixture with its CSINode and a host probe with 8 GPUs, 8/8 RDMA ports. */
static void nd_inventory(tau_agent_inventory *inv, bool nvml)
{
	cJSON *node = load_fixture("node-nd-h100-v5.json");
	cJSON *csinode = load_fixture("csinode-nd-h100-v5.json");
	tau_agent_host_probe probe;

	tau_agent_inventory_init(inv);
	assert_int_equal(tau_agent_inventory_from_node(inv, node), 0);
	assert_int_equal(tau_agent_inventory_apply_csinode(inv, csinode), 0);
	tau_agent_host_probe_init(&probe);
	probe.sockets = calloc(2, sizeof(*probe.sockets));
	probe.sockets[0].driver = strdup("disk.csi.azure.com");
	probe.sockets[0].state = TAU_AGENT_SOCKET_PRESENT;
	probe.sockets[1].driver = strdup("file.csi.azure.com");
	probe.sockets[1].state = TAU_AGENT_SOCKET_ABSENT;
	probe.n_sockets = 2;
	probe.gpu_device_nodes = 8;
	probe.nvml_probed = nvml;
	probe.nvml_gpus = nvml ? 8 : -1;
	probe.nvml_healthy = nvml ? 7 : -1;
	if (!nvml)
		probe.nvml_note = strdup("NVML disabled");
	if (nvml) {
		/* One GPU described: lost, so its facts are unknown. */
		probe.nvml.probed = true;
		probe.nvml.count = 8;
		probe.nvml.driver_version = strdup("550.54.15");
		probe.nvml.cuda_version = 12040;
		probe.nvml.missing_symbols[0] = "nvmlDeviceGetMigMode";
		probe.nvml.n_missing = 1;
		probe.nvml.gpus = calloc(1, sizeof(*probe.nvml.gpus));
		probe.nvml.gpus[0].index = 3;
		probe.nvml.gpus[0].lost = 1;
		probe.nvml.gpus[0].remap_pending = probe.nvml.gpus[0].remap_failure = -1;
		probe.nvml.gpus[0].retired_pending = probe.nvml.gpus[0].mig_mode = -1;
		probe.nvml.gpus[0].remapped_correctable = -1;
		probe.nvml.gpus[0].remapped_uncorrectable = 2;
		probe.nvml.gpus[0].retired_pages_sbe = probe.nvml.gpus[0].retired_pages_dbe = -1;
		probe.nvml.gpus[0].reason = strdup("fell off the bus (NVML: GPU is lost)");
		probe.nvml.n_gpus = 1;
	}
	probe.rdma_ports_total = 8;
	probe.rdma_ports_up = 6;
	{
		char dev0[] = "mlx5_0", dev1[] = "mlx5_1", one[] = "1";
		char rate[] = "400 Gb/sec (4X NDR)", layer[] = "InfiniBand";
		tau_agent_rdma_port ports[2] = {
		        {.device = dev0,
		         .port = one,
		         .state = 4,
		         .phys_state = 5,
		         .rate = rate,
		         .rate_mbps = 400000,
		         .link_layer = layer,
		         .link_downed = 3},
		        {.device = dev1,
		         .port = one,
		         .state = -1,
		         .phys_state = -1,
		         .rate_mbps = -1,
		         .link_downed = -1},
		};

		assert_int_equal(tau_agent_rdma_ports_copy(&probe.rdma_ports, ports, 2), 0);
		probe.n_rdma_ports = 2;
	}
	/* The live CSI check of Azure Disk (its socket is present). */
	probe.csi_live = calloc(1, sizeof(*probe.csi_live));
	probe.csi_live[0].driver = strdup("disk.csi.azure.com");
	probe.csi_live[0].endpoint = strdup("/var/lib/kubelet/plugins/disk.csi.azure.com/csi.sock");
	probe.csi_live[0].ready = 0;
	probe.csi_live[0].plugin_name = strdup("disk.csi.azure.com");
	probe.csi_live[0].vendor_version = strdup("v1.29.9");
	probe.csi_live[0].error = strdup("Probe answered ready=false");
	probe.n_csi_live = 1;
	/* Pod-resources: one GPU held, one free. */
	probe.podres.probed = probe.podres.allocatable_known = true;
	probe.podres.devices = calloc(2, sizeof(*probe.podres.devices));
	probe.podres.devices[0].resource = strdup("nvidia.com/gpu");
	probe.podres.devices[0].id = strdup("GPU-a");
	probe.podres.devices[0].numa_node = 0;
	probe.podres.devices[0].allocatable = true;
	probe.podres.devices[0].pod_namespace = strdup("ml");
	probe.podres.devices[0].pod_name = strdup("train-0");
	probe.podres.devices[0].container = strdup("main");
	probe.podres.devices[1].resource = strdup("nvidia.com/gpu");
	probe.podres.devices[1].id = strdup("GPU-b");
	probe.podres.devices[1].numa_node = -1;
	probe.podres.n_devices = 2;
	/* A DRA device a claim holds, and one that could not be listed. */
	probe.podres.dra = calloc(1, sizeof(*probe.podres.dra));
	probe.podres.dra[0].driver = strdup("gpu.nvidia.com");
	probe.podres.dra[0].pool = strdup("nd-h100-0");
	probe.podres.dra[0].device = strdup("gpu-3");
	probe.podres.dra[0].claim_namespace = strdup("ml");
	probe.podres.dra[0].claim_name = strdup("train-0-gpus");
	probe.podres.dra[0].pod_namespace = strdup("ml");
	probe.podres.dra[0].pod_name = strdup("train-0");
	probe.podres.dra[0].container = strdup("main");
	probe.podres.n_dra = 1;
	probe.podres.n_dra_dropped = 1;
	assert_int_equal(tau_agent_inventory_apply_host(inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_check_consistency(inv), 0);
	tau_agent_host_probe_free(&probe);
	cJSON_Delete(node);
	cJSON_Delete(csinode);
}

static void test_proto_every_field(void **state)
{
	tau_agent_inventory inv;
	Tau__Inventory__V1__NodeInventory *m = NULL;
	const Tau__Inventory__V1__CsiDriver *d;
	char digest[65];
	uint8_t *wire;
	size_t len;
	Tau__Inventory__V1__NodeInventory *back;

	(void)state;
	nd_inventory(&inv, true);
	assert_int_equal(tau_agent_inventory_digest(digest, &inv), 0);
	assert_int_equal(tau_agent_inventory_to_proto(&m, &inv, digest, 1767225600123, "9.9.9"), 0);

	assert_string_equal(m->node_name, "aks-ndh100-35817294-vmss000000");
	assert_string_equal(m->node_uid, "3f2a6c1e-9b7d-4e5a-8c21-7d9e0b4f6a11");
	assert_string_equal(m->gpu_class, "h100-ib");
	assert_int_equal(m->n_labels, inv.n_labels);
	assert_string_equal(label_of(m, "kubernetes.azure.com/agentpool"), "ndh100");
	assert_string_equal(label_of(m, "node-role.kubernetes.io/agent"), "");
	/* allocatable: sorted by name, canonical quantities */
	assert_int_equal(m->n_allocatable, 8);
	assert_string_equal(m->allocatable[0]->name, "cpu");
	assert_string_equal(m->allocatable[0]->quantity, "94940m");
	for (size_t i = 1; i < m->n_allocatable; i++)
		assert_true(strcmp(m->allocatable[i - 1]->name, m->allocatable[i]->name) < 0);
	assert_true(m->ready);
	assert_true(m->schedulable);
	assert_false(m->deleting);
	assert_string_equal(m->os, "linux");
	assert_int_equal(m->kind, TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL);
	assert_non_null(strstr(m->provider_id, "azure:///subscriptions/"));
	/* CSI drivers */
	assert_int_equal(m->n_csi_drivers, 2);
	d = driver_of(m, "disk.csi.azure.com");
	assert_non_null(d);
	assert_true(d->in_csi_node);
	assert_true(d->socket_present);
	assert_int_equal(d->managed_by, TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_UNKNOWN);
	assert_true(d->supported);
	assert_string_equal(d->detail, "");
	d = driver_of(m, "file.csi.azure.com");
	assert_non_null(d);
	assert_false(d->socket_present);
	assert_non_null(strstr(d->detail, "socket is missing"));
	/* devices */
	assert_non_null(m->devices);
	assert_true(m->devices->gpus_probed);
	assert_int_equal(m->devices->gpus_present, 8);
	assert_int_equal(m->devices->gpus_healthy, 7);
	assert_int_equal(m->devices->rdma_ports_total, 8);
	assert_int_equal(m->devices->rdma_ports_up, 6);
	/* CSI live check: Azure Disk probed (not ready), Azure File not (no socket). */
	assert_int_equal(m->n_csi_drivers, 2);
	assert_string_equal(m->csi_drivers[0]->name, "disk.csi.azure.com");
	assert_true(m->csi_drivers[0]->probed);
	assert_int_equal(m->csi_drivers[0]->probe_ready,
	                 TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE);
	assert_string_equal(m->csi_drivers[0]->endpoint,
	                    "/var/lib/kubelet/plugins/disk.csi.azure.com/csi.sock");
	assert_string_equal(m->csi_drivers[0]->vendor_version, "v1.29.9");
	assert_string_equal(m->csi_drivers[0]->probe_error, "Probe answered ready=false");
	assert_false(m->csi_drivers[1]->probed);
	assert_int_equal(m->csi_drivers[1]->probe_ready,
	                 TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN);
	assert_string_equal(m->csi_drivers[1]->endpoint, "");
	/* Pod-resources devices; a free device has empty holder fields. */
	assert_true(m->devices->pod_resources_probed);
	assert_true(m->devices->pod_resources_allocatable_known);
	assert_string_equal(m->devices->pod_resources_note, "");
	assert_int_equal(m->devices->n_pod_devices, 2);
	assert_string_equal(m->devices->pod_devices[0]->resource_name, "nvidia.com/gpu");
	assert_string_equal(m->devices->pod_devices[0]->device_id, "GPU-a");
	assert_int_equal(m->devices->pod_devices[0]->numa_node, 0);
	assert_true(m->devices->pod_devices[0]->allocatable);
	assert_string_equal(m->devices->pod_devices[0]->pod_namespace, "ml");
	assert_string_equal(m->devices->pod_devices[0]->pod_name, "train-0");
	assert_string_equal(m->devices->pod_devices[0]->container_name, "main");
	assert_int_equal(m->devices->pod_devices[1]->numa_node, -1);
	assert_false(m->devices->pod_devices[1]->allocatable);
	assert_string_equal(m->devices->pod_devices[1]->pod_name, "");
	/* DRA devices held through claims. */
	assert_true(m->devices->dra_devices_read);
	assert_int_equal(m->devices->dra_devices_dropped, 1);
	assert_int_equal(m->devices->n_dra_devices, 1);
	assert_string_equal(m->devices->dra_devices[0]->driver_name, "gpu.nvidia.com");
	assert_string_equal(m->devices->dra_devices[0]->pool_name, "nd-h100-0");
	assert_string_equal(m->devices->dra_devices[0]->device_name, "gpu-3");
	assert_string_equal(m->devices->dra_devices[0]->claim_namespace, "ml");
	assert_string_equal(m->devices->dra_devices[0]->claim_name, "train-0-gpus");
	assert_string_equal(m->devices->dra_devices[0]->pod_namespace, "ml");
	assert_string_equal(m->devices->dra_devices[0]->pod_name, "train-0");
	assert_string_equal(m->devices->dra_devices[0]->container_name, "main");
	/* NVML facts: versions, missing symbols, each GPU with unknowns as UNKNOWN / -1. */
	assert_string_equal(m->devices->driver_version, "550.54.15");
	assert_string_equal(m->devices->cuda_version, "12.4");
	assert_string_equal(m->devices->gpus_not_probed_reason, "");
	assert_int_equal(m->devices->n_nvml_missing_symbols, 1);
	assert_string_equal(m->devices->nvml_missing_symbols[0], "nvmlDeviceGetMigMode");
	assert_int_equal(m->devices->n_gpus, 1);
	assert_int_equal(m->devices->gpus[0]->index, 3);
	assert_false(m->devices->gpus[0]->healthy);
	assert_string_equal(m->devices->gpus[0]->uuid, "");
	assert_string_equal(m->devices->gpus[0]->reason, "fell off the bus (NVML: GPU is lost)");
	assert_int_equal(m->devices->gpus[0]->lost, TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE);
	assert_int_equal(m->devices->gpus[0]->remap_pending,
	                 TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN);
	assert_int_equal(m->devices->gpus[0]->remapped_rows_correctable, -1);
	assert_int_equal(m->devices->gpus[0]->remapped_rows_uncorrectable, 2);
	assert_int_equal(m->devices->gpus[0]->mig_enabled,
	                 TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN);
	/* Port details; unknowns travel as 0 / "" (link_downed as -1). */
	assert_int_equal(m->devices->n_rdma_ports, 2);
	assert_string_equal(m->devices->rdma_ports[0]->device, "mlx5_0");
	assert_string_equal(m->devices->rdma_ports[0]->port, "1");
	assert_int_equal(m->devices->rdma_ports[0]->state, 4);
	assert_int_equal(m->devices->rdma_ports[0]->phys_state, 5);
	assert_string_equal(m->devices->rdma_ports[0]->rate, "400 Gb/sec (4X NDR)");
	assert_int_equal(m->devices->rdma_ports[0]->rate_mbps, 400000);
	assert_string_equal(m->devices->rdma_ports[0]->link_layer, "InfiniBand");
	assert_int_equal(m->devices->rdma_ports[0]->link_downed, 3);
	assert_int_equal(m->devices->rdma_ports[1]->state, 0);
	assert_int_equal(m->devices->rdma_ports[1]->phys_state, 0);
	assert_string_equal(m->devices->rdma_ports[1]->rate, "");
	assert_int_equal(m->devices->rdma_ports[1]->rate_mbps, 0);
	assert_string_equal(m->devices->rdma_ports[1]->link_layer, "");
	assert_int_equal(m->devices->rdma_ports[1]->link_downed, -1);
	/* problems: same list, same order */
	assert_int_equal(m->n_problems, inv.problems.n);
	assert_true(m->n_problems >= 2); /* file socket missing, rdma/ib > ports up, 1 unhealthy */
	for (size_t i = 0; i < m->n_problems; i++)
		assert_string_equal(m->problems[i], inv.problems.items[i]);
	assert_string_equal(m->resource_version, "48213377");
	assert_int_equal(m->observed_unix_ms, 1767225600123);
	assert_string_equal(m->agent_version, "9.9.9");
	assert_string_equal(m->digest, digest);

	/* Packs and unpacks to the same content. */
	len = tau__inventory__v1__node_inventory__get_packed_size(m);
	wire = malloc(len);
	assert_non_null(wire);
	tau__inventory__v1__node_inventory__pack(m, wire);
	back = tau__inventory__v1__node_inventory__unpack(NULL, len, wire);
	assert_non_null(back);
	assert_string_equal(back->digest, digest);
	assert_int_equal(back->n_labels, m->n_labels);
	tau__inventory__v1__node_inventory__free_unpacked(back, NULL);
	free(wire);

	tau_agent_node_inventory_free(m);
	tau_agent_inventory_free(&inv);
}

static void test_proto_unknowns(void **state)
{
	tau_agent_inventory inv;
	Tau__Inventory__V1__NodeInventory *m = NULL;

	(void)state;
	/* Nothing known: no Node, no probe. */
	tau_agent_inventory_init(&inv);
	assert_int_equal(tau_agent_inventory_add_problem(&inv, "Node n1 does not exist"), 0);
	assert_int_equal(tau_agent_inventory_to_proto(&m, &inv, "", 0, "v"), 0);
	assert_string_equal(m->node_name, "");
	assert_string_equal(m->node_uid, "");
	assert_string_equal(m->gpu_class, "");
	assert_string_equal(m->os, "");
	assert_string_equal(m->provider_id, "");
	assert_string_equal(m->resource_version, "");
	assert_false(m->ready);
	assert_false(m->schedulable);
	assert_false(m->deleting);
	assert_int_equal(m->kind, TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_UNSPECIFIED);
	assert_int_equal(m->n_labels, 0);
	assert_int_equal(m->n_allocatable, 0);
	assert_int_equal(m->n_csi_drivers, 0);
	assert_false(m->devices->gpus_probed);
	assert_int_equal(m->devices->gpus_present, 0);
	assert_int_equal(m->devices->rdma_ports_total, 0);
	assert_int_equal(m->n_problems, 1);
	tau_agent_node_inventory_free(m);
	tau_agent_inventory_free(&inv);

	/* Without NVML, GPUs present come from the device nodes; healthy stays 0. */
	nd_inventory(&inv, false);
	assert_int_equal(tau_agent_inventory_to_proto(&m, &inv, "d", 0, "v"), 0);
	assert_false(m->devices->gpus_probed);
	assert_int_equal(m->devices->gpus_present, 8);
	assert_int_equal(m->devices->gpus_healthy, 0);
	tau_agent_node_inventory_free(m);
	tau_agent_inventory_free(&inv);
}

static void test_utf8_dup(void **state)
{
	char *s;

	(void)state;
	s = tau_agent_utf8_dup("plain é ✓ 𝄞");
	assert_string_equal(s, "plain é ✓ 𝄞");
	free(s);
	s = tau_agent_utf8_dup("bad \xff\xfe end \xc3");
	assert_string_equal(s, "bad ?? end ?");
	free(s);
	s = tau_agent_utf8_dup("surrogate \xed\xa0\x80 overlong \xc0\xaf");
	assert_string_equal(s, "surrogate ??? overlong ??");
	free(s);
	s = tau_agent_utf8_dup(NULL);
	assert_string_equal(s, "");
	free(s);
}

/* ------------------------------------------------------------- session */

#define OK     TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK
#define RESEND TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_RESEND_FULL
#define REJECT TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_REJECTED

static void test_session_full_first_and_on_change(void **state)
{
	tau_agent_session s;

	(void)state;
	tau_agent_session_init(&s);
	assert_int_equal(s.heartbeat_s, TAU_AGENT_DEFAULT_HEARTBEAT_S);
	/* Not connected: nothing, whatever the digest. */
	assert_int_equal(tau_agent_session_next(&s, 0, "aaa"), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_wait_ms(&s, 0), -1);

	tau_agent_session_connected(&s, 1000);
	/* No inventory built yet: wait, and no heartbeat either. */
	assert_int_equal(tau_agent_session_next(&s, 1000, NULL), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_next(&s, 999999, ""), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_next(&s, 1000, "aaa"), TAU_AGENT_ACTION_INVENTORY);
	assert_int_equal(tau_agent_session_next_seq(&s), 1);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_INVENTORY, "aaa", 1000);
	/* Same digest: nothing; a new one: an inventory with the next seq. */
	assert_int_equal(tau_agent_session_next(&s, 1001, "aaa"), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_next(&s, 1001, "bbb"), TAU_AGENT_ACTION_INVENTORY);
	assert_int_equal(tau_agent_session_next_seq(&s), 2);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_INVENTORY, "bbb", 1001);
	assert_int_equal(tau_agent_session_ack(&s, 2, 0, OK, 1002), TAU_AGENT_ACK_OK);

	/* Reconnect: seq restarts at 1 and the full inventory is due even if unchanged. */
	tau_agent_session_closed(&s);
	assert_int_equal(tau_agent_session_next(&s, 2000, "bbb"), TAU_AGENT_ACTION_NONE);
	tau_agent_session_connected(&s, 3000);
	assert_int_equal(tau_agent_session_next(&s, 3000, "bbb"), TAU_AGENT_ACTION_INVENTORY);
	assert_int_equal(tau_agent_session_next_seq(&s), 1);
}

static void test_session_heartbeat_interval_from_ack(void **state)
{
	tau_agent_session s;

	(void)state;
	tau_agent_session_init(&s);
	tau_agent_session_connected(&s, 0);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_INVENTORY, "d1", 0);
	/* Default 30 s until an ack says otherwise. */
	assert_int_equal(tau_agent_session_wait_ms(&s, 0), 30000);
	assert_int_equal(tau_agent_session_next(&s, 29999, "d1"), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_ack(&s, 1, 5, OK, 100), TAU_AGENT_ACK_OK);
	assert_int_equal(s.heartbeat_s, 5);
	assert_int_equal(tau_agent_session_wait_ms(&s, 100), 4900);
	assert_int_equal(tau_agent_session_next(&s, 4999, "d1"), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_next(&s, 5000, "d1"), TAU_AGENT_ACTION_HEARTBEAT);
	assert_int_equal(tau_agent_session_next_seq(&s), 2);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 5000);
	/* A heartbeat keeps the inventory digest it vouches for. */
	assert_string_equal(s.sent_digest, "d1");
	assert_int_equal(tau_agent_session_next(&s, 5001, "d1"), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_wait_ms(&s, 5001), 4999);
	/* An interval of 0 is ignored; a huge one is clamped. */
	assert_int_equal(tau_agent_session_ack(&s, 2, 0, OK, 5002), TAU_AGENT_ACK_OK);
	assert_int_equal(s.heartbeat_s, 5);
	assert_int_equal(tau_agent_session_ack(&s, 2, 999999, OK, 5002), TAU_AGENT_ACK_OK);
	assert_int_equal(s.heartbeat_s, TAU_AGENT_MAX_HEARTBEAT_S);
	/* The interval survives a reconnect. */
	tau_agent_session_closed(&s);
	tau_agent_session_connected(&s, 9000);
	assert_int_equal(s.heartbeat_s, TAU_AGENT_MAX_HEARTBEAT_S);
}

static void test_session_acks(void **state)
{
	tau_agent_session s;

	(void)state;
	tau_agent_session_init(&s);
	/* Acks while disconnected or for unsent seqs are ignored. */
	assert_int_equal(tau_agent_session_ack(&s, 1, 1, OK, 0), TAU_AGENT_ACK_IGNORED);
	tau_agent_session_connected(&s, 0);
	assert_int_equal(tau_agent_session_ack(&s, 1, 1, OK, 0), TAU_AGENT_ACK_IGNORED);
	assert_int_equal(tau_agent_session_ack(&s, 0, 1, OK, 0), TAU_AGENT_ACK_IGNORED);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_INVENTORY, "d1", 0);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 10);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 20);
	assert_int_equal(tau_agent_session_ack(&s, 4, 1, OK, 30), TAU_AGENT_ACK_IGNORED);
	/* Cumulative: acking 3 covers 1 and 2; an older ack after it changes nothing. */
	assert_int_equal(tau_agent_session_ack(&s, 3, 1, OK, 30), TAU_AGENT_ACK_OK);
	assert_int_equal(s.last_acked, 3);
	assert_int_equal(s.unacked_since_ms, 0);
	assert_int_equal(tau_agent_session_ack(&s, 1, 1, OK, 31), TAU_AGENT_ACK_OK);
	assert_int_equal(s.last_acked, 3);
	/* RESEND_FULL: the next report is the full inventory although nothing changed. */
	assert_int_equal(tau_agent_session_ack(&s, 3, 1, RESEND, 40), TAU_AGENT_ACK_RESEND);
	assert_int_equal(tau_agent_session_next(&s, 41, "d1"), TAU_AGENT_ACTION_INVENTORY);
	assert_int_equal(tau_agent_session_next_seq(&s), 4);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_INVENTORY, "d1", 41);
	assert_int_equal(tau_agent_session_next(&s, 42, "d1"), TAU_AGENT_ACTION_NONE);
	/* REJECTED is reported, and does not force a resend of the same content. */
	assert_int_equal(tau_agent_session_ack(&s, 4, 1, REJECT, 50), TAU_AGENT_ACK_REJECTED);
	assert_int_equal(tau_agent_session_next(&s, 51, "d1"), TAU_AGENT_ACTION_NONE);
}

static void test_session_ack_watchdog(void **state)
{
	tau_agent_session s;

	(void)state;
	tau_agent_session_init(&s);
	tau_agent_session_connected(&s, 0);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_INVENTORY, "d1", 0);
	assert_int_equal(tau_agent_session_ack(&s, 1, 10, OK, 5), TAU_AGENT_ACK_OK);
	/* Heartbeats go unanswered from t=10 s: reconnect after 3 intervals (30 s). */
	assert_int_equal(tau_agent_session_next(&s, 10000, "d1"), TAU_AGENT_ACTION_HEARTBEAT);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 10000);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 20000);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 30000);
	assert_int_equal(tau_agent_session_next(&s, 39999, "d1"), TAU_AGENT_ACTION_NONE);
	assert_int_equal(tau_agent_session_wait_ms(&s, 39999), 1);
	assert_int_equal(tau_agent_session_next(&s, 40000, "d1"), TAU_AGENT_ACTION_RECONNECT);
	/* A late ack of something restarts the window (heartbeat is due meanwhile). */
	assert_int_equal(tau_agent_session_ack(&s, 2, 10, OK, 40000), TAU_AGENT_ACK_OK);
	assert_int_equal(s.unacked_since_ms, 40000);
	assert_int_equal(tau_agent_session_next(&s, 40001, "d1"), TAU_AGENT_ACTION_HEARTBEAT);
	tau_agent_session_sent(&s, TAU_AGENT_ACTION_HEARTBEAT, NULL, 40001);
	assert_int_equal(tau_agent_session_wait_ms(&s, 40001), 10000);
	assert_int_equal(tau_agent_session_next(&s, 69999, "d1"), TAU_AGENT_ACTION_HEARTBEAT);
	assert_int_equal(tau_agent_session_next(&s, 70000, "d1"), TAU_AGENT_ACTION_RECONNECT);
	/* All acked: no watchdog. */
	assert_int_equal(tau_agent_session_ack(&s, 5, 10, OK, 70000), TAU_AGENT_ACK_OK);
	assert_int_equal(s.unacked_since_ms, 0);
	assert_int_equal(tau_agent_session_next(&s, 70000, "d1"), TAU_AGENT_ACTION_HEARTBEAT);
}

static void test_report_bodies(void **state)
{
	Tau__Inventory__V1__AgentReport r;
	Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;
	Tau__Inventory__V1__Stopping st = TAU__INVENTORY__V1__STOPPING__INIT;
	Tau__Inventory__V1__AgentReport *back;
	uint8_t buf[256];
	size_t len;

	(void)state;
	hb.digest = (char *)"abc";
	hb.sent_unix_ms = 42;
	tau_agent_report_init_heartbeat(&r, 7, &hb);
	len = tau__inventory__v1__agent_report__pack(&r, buf);
	back = tau__inventory__v1__agent_report__unpack(NULL, len, buf);
	assert_non_null(back);
	assert_int_equal(back->seq, 7);
	assert_int_equal(back->body_case, TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT);
	assert_string_equal(back->heartbeat->digest, "abc");
	tau__inventory__v1__agent_report__free_unpacked(back, NULL);

	st.reason = (char *)"SIGTERM";
	tau_agent_report_init_stopping(&r, 8, &st);
	len = tau__inventory__v1__agent_report__pack(&r, buf);
	back = tau__inventory__v1__agent_report__unpack(NULL, len, buf);
	assert_non_null(back);
	assert_int_equal(back->body_case, TAU__INVENTORY__V1__AGENT_REPORT__BODY_STOPPING);
	assert_string_equal(back->stopping->reason, "SIGTERM");
	tau__inventory__v1__agent_report__free_unpacked(back, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_proto_every_field),
	        cmocka_unit_test(test_proto_unknowns),
	        cmocka_unit_test(test_utf8_dup),
	        cmocka_unit_test(test_session_full_first_and_on_change),
	        cmocka_unit_test(test_session_heartbeat_interval_from_ack),
	        cmocka_unit_test(test_session_acks),
	        cmocka_unit_test(test_session_ack_watchdog),
	        cmocka_unit_test(test_report_bodies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
