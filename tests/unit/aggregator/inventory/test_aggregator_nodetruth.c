/*
 * Unit tests of node truth: decoding an inventory's node-local facts (devices and holders,
 * NVML health, RDMA ports, CSI probes, DRA devices claims hold), its bad input, the store keeping
 * it per node, and the NodeTruth that ListNodes and GetNode return.
 */
#include "inventory/nodetruth.h"
#include "inventory/query.h"
#include "inventory/truthrules.h"
#include "truth_fixture.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef truth_fixture fixture;

/* An 8-GPU node, GPU-0 and GPU-1 held, GPU-3 unhealthy per NVML (row remap pending). */
static fixture *node8(void)
{
	fixture *f = truth_fixture_node("gpu-1", 8, 2);

	truth_fixture_gpu_unhealthy(f, 3, "row remap pending: the GPU needs a reset");
	return f;
}

static void decode_counts_and_health(void **state)
{
	fixture *f = node8();
	tau_nodetruth *t = NULL;
	char line[512];

	(void)state;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_true(t->gpu.known);
	assert_int_equal(t->gpu.devices, 8); /* rdma/ib devices are not GPUs */
	assert_int_equal(t->gpu.healthy, 7); /* GPU-3: NVML says row remap pending */
	assert_int_equal(t->gpu.in_use, 2);
	assert_int_equal(t->gpu.free, 5);
	assert_int_equal(t->n_devices, 10);
	assert_false(t->devices[3].healthy);
	assert_string_equal(t->devices[3].reason, "row remap pending: the GPU needs a reset");
	assert_string_equal(t->devices[0].pod_name, "train");
	assert_null(t->devices[2].pod_name);
	/* the devices of one resource share its name */
	assert_ptr_equal(t->devices[0].resource, t->devices[7].resource);
	assert_int_equal(t->health, TAU_TRUTH_HEALTH_DEGRADED);
	assert_int_equal(t->n_problems, 1);
	assert_true(tau_nodetruth_problem(t, 0, line, sizeof(line)));
	assert_non_null(strstr(line, "GPU 3 (GPU-3) unhealthy: row remap pending"));
	assert_false(tau_nodetruth_problem(t, 1, line, sizeof(line)));
	assert_true(tau_nodetruth_has_active_port(t));
	assert_string_equal(tau_nodetruth_health_name(t->health), "degraded");
	/* The figure docs/PERFORMANCE.md gives: an 8-GPU node with 2 IB ports and a driver. */
	printf("node truth of an 8-GPU node: %zu bytes\n", t->bytes);
	assert_true(t->bytes < 4096);
	tau_nodetruth_free(t);

	/* A port down, a driver not answering, a device kubelet dropped: three more problems. */
	f->port[1].state = 1;
	f->ld.rdma_ports_up = 1;
	f->csi[0].probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN;
	f->csi[0].probe_error = TRUTH_S("deadline exceeded");
	f->dev[5].allocatable = false;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_int_equal(t->n_problems, 4);
	assert_int_equal(t->gpu.healthy, 6);
	assert_int_equal(t->gpu.free, 4);
	assert_true(tau_nodetruth_problem(t, 1, line, sizeof(line)));
	assert_non_null(strstr(line, "GPU-5: kubelet no longer lists it as allocatable"));
	assert_true(tau_nodetruth_problem(t, 2, line, sizeof(line)));
	assert_non_null(strstr(line, "RDMA port mlx5_1/1 is not ACTIVE (state 1"));
	assert_true(tau_nodetruth_problem(t, 3, line, sizeof(line)));
	assert_string_equal(line, "CSI driver disk.csi.azure.com: Probe did not answer: deadline "
	                          "exceeded");
	tau_nodetruth_free(t);
	free(f);
}

static void unknown_is_not_free(void **state)
{
	fixture *f = node8();
	tau_nodetruth *t = NULL;

	(void)state;
	/* kubelet did not answer: no GPU figure is known, and nothing is called wrong */
	f->ld.pod_resources_probed = false;
	f->ld.pod_resources_allocatable_known = false;
	f->ld.pod_resources_note = TRUTH_S("kubelet pod-resources socket missing");
	f->ld.n_pod_devices = 0;
	f->ld.gpus_probed = false;
	f->ld.gpus_not_probed_reason = TRUTH_S("libnvidia-ml.so.1 not found");
	f->ld.n_gpus = 0;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(t->gpu.known);
	assert_int_equal(t->gpu.free, 0);
	assert_int_equal(t->health, TAU_TRUTH_HEALTH_UNKNOWN);
	assert_string_equal(t->pod_resources_note, "kubelet pod-resources socket missing");
	assert_string_equal(t->gpus_not_probed_reason, "libnvidia-ml.so.1 not found");
	tau_nodetruth_free(t);
	/* List answered but not GetAllocatableResources: held devices only, still unknown */
	f->ld.pod_resources_probed = true;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(t->gpu.known);
	assert_int_equal(t->health, TAU_TRUTH_HEALTH_OK);
	tau_nodetruth_free(t);
	/* An inventory without devices at all decodes to an empty, unknown truth */
	f->inv.devices = NULL;
	f->inv.n_csi_drivers = 0;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(t->gpu.known);
	assert_int_equal(t->n_devices, 0);
	assert_int_equal(t->health, TAU_TRUTH_HEALTH_UNKNOWN);
	tau_nodetruth_free(t);
	free(f);
}

/*
 * What every reader sees of a node whose inventory says nothing node-local: what the block
 * the decoder allocated for it before (all zero, every figure unknown) said, verdicts included.
 */
static void assert_says_nothing(const tau_nodetruth *t)
{
	bool failed[TAU_TRUTH_RULE_COUNT], was_failed[TAU_TRUTH_RULE_COUNT];
	tau_truth_rule rules[TAU_TRUTH_RULE_COUNT], was_rules[TAU_TRUTH_RULE_COUNT];
	char line[64] = "";
	tau_node_facts nf = truth_fixture_facts("gpu-1", "h100", 8);
	tau_nodetruth *was = calloc(1, sizeof(*was));

	assert_non_null(was);
	assert_memory_equal(t, was, sizeof(*was));

	assert_false(t->pod_resources_known || t->allocatable_known || t->dra_known ||
	             t->gpus_probed || t->gpu.known);
	assert_int_equal(t->n_devices + t->n_dra + t->n_gpus + t->n_ports + t->n_csi, 0);
	assert_null(t->pod_resources_note);
	assert_null(t->gpus_not_probed_reason);
	assert_null(t->driver_version);
	assert_int_equal(t->gpu.devices + t->gpu.free + t->gpu.in_use + t->gpu.healthy, 0);
	assert_int_equal(t->gpus_present + t->rdma_ports_total + t->rdma_ports_up, 0);
	assert_int_equal(t->health, TAU_TRUTH_HEALTH_UNKNOWN);
	assert_int_equal(t->n_problems, 0);
	assert_false(tau_nodetruth_problem(t, 0, line, sizeof(line)));
	assert_false(tau_nodetruth_has_active_port(t));
	assert_int_equal(tau_truth_rules_failing(&nf, t, failed),
	                 tau_truth_rules_failing(&nf, was, was_failed));
	assert_memory_equal(failed, was_failed, sizeof(failed));
	assert_int_equal(tau_truth_rules_fingerprint(&nf, t),
	                 tau_truth_rules_fingerprint(&nf, was));
	tau_truth_rules(rules, &nf, t);
	tau_truth_rules(was_rules, &nf, was);
	for (int i = 0; i < TAU_TRUTH_RULE_COUNT; i++) {
		assert_int_equal(rules[i].pass, was_rules[i].pass);
		assert_int_equal(rules[i].unknown, was_rules[i].unknown);
		assert_string_equal(rules[i].detail, was_rules[i].detail);
	}
	free(was);
	tau_node_facts_clear(&nf);
}

static void empty_inventory_shares_one_block(void **state)
{
	fixture *f = node8();
	tau_nodetruth *t = NULL, *t2 = NULL;
	tau_nodestore *s = NULL;
	tau_node_facts a = truth_fixture_facts("gpu-1", "h100", 8),
	               b = truth_fixture_facts("gpu-2", "h100", 8);
	tau_node_status st;

	(void)state;
	/* no LocalDevices and no CSI driver: the shared block, no allocation of its own */
	f->inv.devices = NULL;
	f->inv.n_csi_drivers = 0;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_int_equal(tau_nodetruth_decode(&t2, &f->inv), 0);
	assert_true(tau_nodetruth_is_shared(t));
	assert_ptr_equal(t, t2);
	assert_int_equal(t->bytes, 0);
	assert_says_nothing(t);
	/* LocalDevices present but every field unset: the same */
	tau__inventory__v1__local_devices__init(&f->ld);
	f->inv.devices = &f->ld;
	assert_int_equal(tau_nodetruth_decode(&t2, &f->inv), 0);
	assert_ptr_equal(t2, t);
	/* both kept by a store, counted as no bytes; the record's deletion frees nothing */
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &a), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &b), 0);
	assert_int_equal(tau_nodestore_report(s, &a, 1000), 0);
	assert_int_equal(tau_nodestore_report(s, &b, 1000), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "gpu-1", t), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "gpu-2", t2), 0);
	assert_int_equal(tau_nodestore_get(s, "gpu-1", &st), 0);
	assert_ptr_equal(st.truth, t);
	/* kubelet's pod-resources unknown on a node whose Node has GPUs: that rule fails, as
	 * it did with a block of its own (assert_says_nothing) */
	assert_int_equal(st.truth_failed, 1u << TAU_TRUTH_RULE_POD_RESOURCES);
	assert_int_equal(tau_nodestore_truth_bytes(s), 0);
	assert_int_equal(tau_nodestore_api_delete(s, "gpu-1"), 0);
	tau_nodestore_free(s);
	tau_nodetruth_free(t); /* a no-op, however often */
	assert_says_nothing(t);

	/* any one fact of its own: a block of its own, with that fact */
	f->ld.gpus_present = 2;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(tau_nodetruth_is_shared(t));
	assert_int_equal(t->gpus_present, 2);
	assert_true(t->bytes > 0);
	tau_nodetruth_free(t);
	f->ld.gpus_present = 0;
	f->ld.dra_devices_dropped = 1;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(tau_nodetruth_is_shared(t));
	assert_int_equal(t->dra_dropped, 1);
	tau_nodetruth_free(t);
	f->ld.dra_devices_dropped = 0;
	f->ld.pod_resources_probed = true; /* List answered, nothing held: OK, not unknown */
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(tau_nodetruth_is_shared(t));
	assert_int_equal(t->health, TAU_TRUTH_HEALTH_OK);
	tau_nodetruth_free(t);
	f->ld.pod_resources_probed = false;
	f->ld.cuda_version = TRUTH_S("12.4");
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(tau_nodetruth_is_shared(t));
	assert_string_equal(t->cuda_version, "12.4");
	tau_nodetruth_free(t);
	f->ld.cuda_version = NULL;
	f->inv.n_csi_drivers = 1; /* one CSI driver: a list */
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(tau_nodetruth_is_shared(t));
	assert_int_equal(t->n_csi, 1);
	tau_nodetruth_free(t);
	tau_node_facts_clear(&a);
	tau_node_facts_clear(&b);
	free(f);
}

/* Decoding `f` fails with `code` and a message containing `want`; out stays untouched. */
static void assert_refused(fixture *f, int code, const char *want)
{
	tau_nodetruth *t = (tau_nodetruth *)(void *)f; /* a sentinel: must stay as it is */

	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), -code);
	assert_ptr_equal(t, f);
	if (strstr(tau_error_last()->msg, want) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", tau_error_last()->msg, want);
}

static void bad_input_refused(void **state)
{
	fixture *f = node8();
	char long_id[TAU_NODETRUTH_MAX_ID + 2];

	(void)state;
	/* oversized: more devices than any agent sends */
	for (size_t i = 10; i < TRUTH_FIXTURE_MAX_DEV; i++) {
		tau__inventory__v1__pod_device__init(&f->dev[i]);
		snprintf(f->ids[i], sizeof(f->ids[i]), "x%03zu", i);
		f->dev[i].resource_name = TRUTH_S("vendor.example/x");
		f->dev[i].device_id = f->ids[i];
		f->devp[i] = &f->dev[i];
	}
	f->ld.n_pod_devices = TAU_NODETRUTH_MAX_DEVICES + 1;
	assert_refused(f, TAU_ETOOBIG, "pod_devices: 257 entries over the limit of 256");
	f->ld.n_pod_devices = 10;
	/* a device listed twice, or out of the protocol's order */
	f->dev[1].device_id = TRUTH_S("GPU-0");
	assert_refused(f, TAU_EINVAL, "pod_devices[1]: nvidia.com/gpu GPU-0 is listed twice");
	f->dev[1].device_id = TRUTH_S("GPU-9");
	assert_refused(f, TAU_EINVAL, "pod_devices[2]: nvidia.com/gpu GPU-2 is out of order");
	f->dev[1].device_id = f->ids[1];
	/* a holder without a namespace, a device without an ID, a NUMA node out of range */
	f->dev[2].pod_name = TRUTH_S("p");
	assert_refused(f, TAU_EINVAL, "pod_devices[2]: pod p has no namespace");
	f->dev[2].pod_name = TRUTH_S("");
	f->dev[0].device_id = TRUTH_S("");
	assert_refused(f, TAU_EINVAL, "pod_devices[0]: resource_name and device_id are required");
	f->dev[0].device_id = f->ids[0];
	f->dev[4].numa_node = 5000;
	assert_refused(f, TAU_EINVAL, "numa_node 5000 out of -1..1023");
	f->dev[4].numa_node = 0;
	/* an ID longer than any Kubernetes name */
	memset(long_id, 'a', sizeof(long_id) - 1);
	long_id[sizeof(long_id) - 1] = '\0';
	f->gpu[2].uuid = long_id;
	assert_refused(f, TAU_ETOOBIG, "gpus.uuid[2]: 254 bytes over the limit of 253");
	f->gpu[2].uuid = f->ids[2];
	/* a port state no kernel writes */
	f->port[0].state = 9;
	assert_refused(f, TAU_EINVAL, "rdma_ports[0]: state 9 / phys_state 5 out of range");
	f->port[0].state = 4;
	f->ld.n_gpus = TAU_NODETRUTH_MAX_GPUS + 1;
	assert_refused(f, TAU_ETOOBIG, "gpus: 65 entries over the limit of 64");
	f->ld.n_gpus = 8;
	/* and once repaired it decodes */
	{
		tau_nodetruth *t = NULL;

		assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
		tau_nodetruth_free(t);
	}
	free(f);
}

#define NV "gpu.nvidia.com"

/* DRA devices claims hold: decoded in order, known only from an agent that read them whole. */
static void dra_devices_decoded(void **state)
{
	fixture *f = truth_fixture_node("dra-0", 0, 0);
	tau_nodetruth *t = NULL;

	(void)state;
	/* an agent that predates dra_devices: DRA devices in use are unknown */
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(t->dra_known);
	assert_int_equal(t->n_dra, 0);
	tau_nodetruth_free(t);
	truth_fixture_dra_held(f, "dra.net", "dra-0", "eth1");
	truth_fixture_dra_held(f, NV, "dra-0", "gpu-0");
	truth_fixture_dra_held(f, NV, "dra-0", "gpu-1");
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_true(t->dra_known);
	assert_int_equal(t->n_dra, 3);
	assert_string_equal(t->dra[1].driver, NV);
	assert_string_equal(t->dra[1].pool, "dra-0");
	assert_string_equal(t->dra[1].device, "gpu-0");
	assert_string_equal(t->dra[1].claim_name, "claim");
	assert_string_equal(t->dra[1].pod_name, "infer");
	assert_string_equal(t->dra[1].container, "main");
	/* devices of one driver share its name */
	assert_ptr_equal(t->dra[1].driver, t->dra[2].driver);
	/* DRA devices are not device-plugin GPUs */
	assert_int_equal(t->gpu.devices, 0);
	tau_nodetruth_free(t);
	/* devices the agent could not list, or List not answering: unknown again */
	f->ld.dra_devices_dropped = 1;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(t->dra_known);
	assert_int_equal(t->dra_dropped, 1);
	tau_nodetruth_free(t);
	f->ld.dra_devices_dropped = 0;
	f->ld.pod_resources_probed = false;
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_false(t->dra_known);
	tau_nodetruth_free(t);
	free(f);
}

static void dra_bad_input_refused(void **state)
{
	fixture *f = truth_fixture_node("dra-0", 0, 0);
	char long_name[TAU_NODETRUTH_MAX_ID + 2], name[16];

	(void)state;
	truth_fixture_dra_held(f, NV, "dra-0", "gpu-0");
	truth_fixture_dra_held(f, NV, "dra-0", "gpu-1");
	/* listed twice, out of order */
	f->dra[1].device_name = TRUTH_S("gpu-0");
	assert_refused(f, TAU_EINVAL, "dra_devices[1]: " NV "/dra-0/gpu-0 is listed twice");
	f->dra[1].device_name = TRUTH_S("gpu-");
	assert_refused(f, TAU_EINVAL, "dra_devices[1]: " NV "/dra-0/gpu- is out of order");
	f->dra[1].device_name = f->dra_names[1];
	/* a device without a pool */
	f->dra[0].pool_name = TRUTH_S("");
	assert_refused(f, TAU_EINVAL,
	               "dra_devices[0]: driver_name, pool_name and device_name are required");
	f->dra[0].pool_name = TRUTH_S("dra-0");
	/* a name longer than any Kubernetes name */
	memset(long_name, 'c', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	f->dra[1].claim_name = long_name;
	assert_refused(f, TAU_ETOOBIG,
	               "dra_devices.claim_name[1]: 254 bytes over the limit of 253");
	f->dra[1].claim_name = TRUTH_S("claim");
	/* more than any agent sends */
	f->ld.n_dra_devices = 0;
	for (size_t i = 0; i <= TAU_NODETRUTH_MAX_DRA; i++) {
		snprintf(name, sizeof(name), "d%03zu", i);
		truth_fixture_dra_held(f, NV, "dra-0", name);
	}
	assert_refused(f, TAU_ETOOBIG, "dra_devices: 257 entries over the limit of 256");
	f->ld.n_dra_devices = TAU_NODETRUTH_MAX_DRA;
	{
		tau_nodetruth *t = NULL;

		assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
		assert_int_equal(t->n_dra, TAU_NODETRUTH_MAX_DRA);
		assert_true(t->dra_known);
		tau_nodetruth_free(t);
	}
	free(f);
}

static void store_keeps_truth_per_node(void **state)
{
	fixture *f = node8();
	tau_nodestore *s = NULL;
	tau_nodetruth *t = NULL, *t2 = NULL;
	tau_node_facts nf = truth_fixture_facts("gpu-1", "h100", 8);
	tau_node_status st;
	size_t one;

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &nf), 0);
	assert_int_equal(tau_nodestore_get(s, "gpu-1", &st), 0);
	assert_null(st.truth); /* no agent report yet */
	/* an unknown node: refused, and the block given is freed (ASan checks) */
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "nope", t), -TAU_ENOTFOUND);
	assert_int_equal(tau_nodestore_truth_bytes(s), 0);
	assert_int_equal(tau_nodestore_report(s, &nf, 1000), 0);
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "gpu-1", t), 0);
	assert_int_equal(tau_nodestore_get(s, "gpu-1", &st), 0);
	assert_ptr_equal(st.truth, t);
	assert_int_equal(st.truth->gpu.free, 5);
	one = tau_nodestore_truth_bytes(s);
	assert_int_equal(one, t->bytes);
	/* a new inventory replaces it (the old block is freed) */
	f->dev[2].pod_namespace = TRUTH_S("ml");
	f->dev[2].pod_name = TRUTH_S("eval");
	assert_int_equal(tau_nodetruth_decode(&t2, &f->inv), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "gpu-1", t2), 0);
	assert_int_equal(tau_nodestore_get(s, "gpu-1", &st), 0);
	assert_int_equal(st.truth->gpu.in_use, 3);
	assert_int_equal(st.truth->gpu.free, 4);
	assert_int_equal(tau_nodestore_truth_bytes(s), t2->bytes);
	/* the Node's deletion takes it with the record */
	assert_int_equal(tau_nodestore_api_delete(s, "gpu-1"), 0);
	assert_int_equal(tau_nodestore_truth_bytes(s), 0);
	tau_nodestore_free(s);
	tau_node_facts_clear(&nf);
	free(f);
}

static void queries_return_truth(void **state)
{
	fixture *f = node8();
	tau_nodestore *s = NULL;
	tau_nodetruth *t = NULL;
	tau_node_facts nf = truth_fixture_facts("gpu-1", "h100", 8),
	               other = truth_fixture_facts("gpu-2", "h100", 8);
	tau_query_opts o = {.now_ms = 2000, .stale_after_ms = 60000};
	Tau__Inventory__V1__ListNodesResponse *list = NULL;
	Tau__Inventory__V1__GetNodeResponse *get = NULL;
	const Tau__Inventory__V1__NodeTruth *nt;

	(void)state;
	assert_int_equal(tau_nodestore_new(&s, 0, 60000), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &nf), 0);
	assert_int_equal(tau_nodestore_api_upsert(s, &other), 0);
	assert_int_equal(tau_nodestore_report(s, &nf, 1000), 0);
	assert_int_equal(tau_nodetruth_decode(&t, &f->inv), 0);
	assert_int_equal(tau_nodestore_set_truth(s, "gpu-1", t), 0);

	assert_int_equal(tau_query_list_nodes(&list, s, NULL, &o), 0);
	assert_int_equal(list->n_nodes, 2);
	nt = list->nodes[0]->truth;
	assert_non_null(nt);
	assert_int_equal(nt->health, TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_DEGRADED);
	assert_true(nt->gpus_known);
	assert_int_equal(nt->gpu_devices, 8);
	assert_int_equal(nt->gpus_healthy, 7);
	assert_int_equal(nt->gpus_in_use, 2);
	assert_int_equal(nt->gpus_free, 5);
	assert_int_equal(nt->problem_count, 1);
	assert_int_equal(nt->n_problems, 1);
	assert_int_equal(nt->rdma_ports_active, 2);
	assert_int_equal(nt->n_csi, 1);
	assert_int_equal(nt->csi[0]->ready, TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE);
	assert_string_equal(nt->driver_version, "550.54.15");
	assert_int_equal(nt->n_devices, 0); /* ListNodes pages stay small */
	assert_null(list->nodes[1]->truth); /* gpu-2: no agent report */
	protobuf_c_message_free_unpacked(&list->base, NULL);

	assert_int_equal(tau_query_get_node(&get, s, "gpu-1", &o), 0);
	nt = get->status->truth;
	assert_non_null(nt);
	assert_int_equal(nt->n_devices, 10);
	assert_string_equal(nt->devices[0]->pod_name, "train");
	assert_string_equal(nt->devices[0]->container_name, "main");
	assert_false(nt->devices[3]->healthy);
	assert_string_equal(nt->devices[3]->reason, "row remap pending: the GPU needs a reset");
	assert_string_equal(nt->devices[9]->resource_name, "rdma/ib");
	assert_int_equal(nt->devices[9]->numa_node, -1);
	protobuf_c_message_free_unpacked(&get->base, NULL);

	tau_nodestore_free(s);
	tau_node_facts_clear(&nf);
	tau_node_facts_clear(&other);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(decode_counts_and_health),
	        cmocka_unit_test(unknown_is_not_free),
	        cmocka_unit_test(empty_inventory_shares_one_block),
	        cmocka_unit_test(bad_input_refused),
	        cmocka_unit_test(dra_devices_decoded),
	        cmocka_unit_test(dra_bad_input_refused),
	        cmocka_unit_test(store_keeps_truth_per_node),
	        cmocka_unit_test(queries_return_truth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
