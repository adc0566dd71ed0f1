/*
 * Unit tests of aggregator/inventory/truthrules.c: the agent.* explain rules from a node's
 * facts and its agent's node-local facts: each passes on a healthy node, fails with the figures
 * and the sick GPU, port or driver named, and is unknown (never failed) on what the agent could
 * not read or without an agent.
 */
#include "inventory/nodetruth.h"
#include "inventory/truthrules.h"
#include "truth_fixture.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A Ready node advertising `gpus` nvidia.com/gpu and, when rdma is set, rdma/ib 2. */
static tau_node_facts facts(int gpus, bool rdma, const char *extra_label)
{
	char json[768];
	cJSON *root = NULL;
	tau_node_facts f = {0};

	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"n\",\"labels\":{\"kubernetes.io/os\":\"linux\"%s}},"
	         "\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"%d\"%s},"
	         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	         extra_label != NULL ? extra_label : "", gpus, rdma ? ",\"rdma/ib\":\"2\"" : "");
	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_node_facts_from_json(&f, root), 0);
	cJSON_Delete(root);
	return f;
}

static tau_nodetruth *decode(truth_fixture *fx)
{
	tau_nodetruth *t = NULL;

	assert_int_equal(tau_nodetruth_decode(&t, &fx->inv), 0);
	return t;
}

static void expect(const tau_truth_rule *r, bool pass, bool unknown, const char *detail)
{
	if (r->pass != pass || r->unknown != unknown || strstr(r->detail, detail) == NULL)
		fail_msg("%s: pass %d unknown %d \"%s\"; want pass %d unknown %d and \"%s\"",
		         r->name, r->pass, r->unknown, r->detail, pass, unknown, detail);
}

static void test_healthy_node_passes(void **state)
{
	truth_fixture *fx = truth_fixture_node("n", 8, 2);
	tau_node_facts f = facts(8, true, NULL);
	tau_nodetruth *t = decode(fx);
	tau_truth_rule r[TAU_TRUTH_RULE_COUNT];

	(void)state;
	fx->csi[0].in_csi_node = true;
	tau_nodetruth_free(t);
	t = decode(fx);
	tau_truth_rules(r, &f, t);
	assert_string_equal(r[0].name, "agent.gpu-health");
	assert_string_equal(tau_truth_rule_name(TAU_TRUTH_RULE_POD_RESOURCES),
	                    "agent.pod-resources");
	assert_null(tau_truth_rule_name(TAU_TRUTH_RULE_COUNT));
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], true, false,
	       "Node advertises 8 nvidia.com/gpu GPUs; the agent sees 8 healthy (NVML)");
	expect(&r[TAU_TRUTH_RULE_RDMA_PORTS], true, false,
	       "Node advertises rdma/ib 2; 2 of 2 ports active");
	expect(&r[TAU_TRUTH_RULE_CSI_PROBE], true, false,
	       "1 registered CSI driver answers Probe ready");
	expect(&r[TAU_TRUTH_RULE_POD_RESOURCES], true, false,
	       "kubelet pod-resources answered: 8 GPU devices, 2 in use, 6 free");
	assert_null(strstr(r[TAU_TRUTH_RULE_POD_RESOURCES].detail, "DRA"));
	tau_nodetruth_free(t);
	/* DRA devices claims hold are said apart from the device-plugin GPUs */
	truth_fixture_dra_held(fx, "gpu.nvidia.com", "n", "gpu-0");
	t = decode(fx);
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_POD_RESOURCES], true, false,
	       "kubelet pod-resources answered: 8 GPU devices, 2 in use, 6 free; 1 DRA devices "
	       "held by ResourceClaims");
	tau_nodetruth_free(t);
	fx->ld.dra_devices_dropped = 3;
	t = decode(fx);
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_POD_RESOURCES], true, false,
	       "; 1 DRA devices held by ResourceClaims and more the agent could not list");
	tau_nodetruth_free(t);
	tau_node_facts_clear(&f);
	free(fx);
}

static void test_sick_node_fails_naming_what(void **state)
{
	truth_fixture *fx = truth_fixture_node("n", 8, 0);
	tau_node_facts f = facts(8, true, NULL);
	tau_truth_rule r[TAU_TRUTH_RULE_COUNT];
	tau_nodetruth *t;

	(void)state;
	truth_fixture_gpu_unhealthy(fx, 3, "row remap pending: the GPU needs a reset");
	truth_fixture_ports_down(fx);
	fx->csi[0].in_csi_node = true;
	fx->csi[0].probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE;
	fx->csi[0].probe_error = TRUTH_S("Probe answered ready=false");
	fx->ld.pod_resources_probed = false;
	fx->ld.pod_resources_allocatable_known = false;
	fx->ld.n_pod_devices = 0;
	fx->ld.pod_resources_note = TRUTH_S("kubelet pod-resources socket does not exist");
	t = decode(fx);
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], false, false,
	       "Node advertises 8 nvidia.com/gpu GPUs; the agent sees 7 healthy (NVML); GPU 3 "
	       "(GPU-3): row remap pending: the GPU needs a reset");
	expect(&r[TAU_TRUTH_RULE_RDMA_PORTS], false, false,
	       "Node advertises rdma/ib 2; 0 of 2 ports active; mlx5_0 port 1 not active (state "
	       "1)");
	expect(&r[TAU_TRUTH_RULE_CSI_PROBE], false, false,
	       "disk.csi.azure.com registered in CSINode but not answering Probe: Probe answered "
	       "ready=false");
	expect(&r[TAU_TRUTH_RULE_POD_RESOURCES], false, false,
	       "kubelet pod-resources unreachable: kubelet pod-resources socket does not exist");
	tau_nodetruth_free(t);
	tau_node_facts_clear(&f);
	free(fx);
}

static void test_unknown_is_not_failure(void **state)
{
	truth_fixture *fx = truth_fixture_node("n", 8, 0);
	tau_node_facts f = facts(8, false, NULL);
	tau_truth_rule r[TAU_TRUTH_RULE_COUNT];
	tau_nodetruth *t;

	(void)state;
	/* No agent: every rule unknown. */
	tau_truth_rules(r, &f, NULL);
	for (int i = 0; i < TAU_TRUTH_RULE_COUNT; i++)
		expect(&r[i], true, true, "not checked: no agent inventory with node-local facts");
	/* NVML not probed: pod-resources' allocatable devices stand in for it. */
	fx->ld.gpus_probed = false;
	fx->ld.n_gpus = 0;
	fx->ld.gpus_not_probed_reason = TRUTH_S("NVML disabled by TAU_AGENT_NVML=off");
	fx->dev[5].allocatable = false;
	t = decode(fx);
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], false, false,
	       "the agent sees 7 healthy (kubelet pod-resources)");
	expect(&r[TAU_TRUTH_RULE_RDMA_PORTS], true, false, "Node advertises no rdma/* resource");
	expect(&r[TAU_TRUTH_RULE_CSI_PROBE], true, false, "no CSI driver registered in CSINode");
	tau_nodetruth_free(t);
	/* Neither source: unknown, not sick. */
	fx->ld.pod_resources_probed = false;
	fx->ld.pod_resources_allocatable_known = false;
	fx->ld.n_pod_devices = 0;
	t = decode(fx);
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], true, true,
	       "not checked: NVML not probed (NVML disabled by TAU_AGENT_NVML=off)");
	tau_nodetruth_free(t);
	tau_node_facts_clear(&f);
	free(fx);
}

static void test_sharing_labels(void **state)
{
	truth_fixture *fx = truth_fixture_node("n", 2, 0);
	tau_node_facts f = facts(8, false, ",\"nvidia.com/gpu.replicas\":\"4\"");
	tau_truth_rule r[TAU_TRUTH_RULE_COUNT];
	tau_nodetruth *t = decode(fx);

	(void)state;
	/* Time-sliced: 8 advertised are 2 GPUs shown 4 times each. */
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], true, false,
	       "Node advertises 2 nvidia.com/gpu GPUs; the agent sees 2 healthy");
	tau_node_facts_clear(&f);
	f = facts(14, false, ",\"nvidia.com/mig.strategy\":\"single\"");
	tau_truth_rules(r, &f, t);
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], true, true, "MIG strategy single");
	tau_node_facts_clear(&f);
	/* Nothing advertised: nothing to disagree with. */
	tau_truth_rules(r, NULL, t);
	expect(&r[TAU_TRUTH_RULE_GPU_HEALTH], true, false, "Node advertises no nvidia.com/gpu");
	tau_nodetruth_free(t);
	free(fx);
}

/* The fingerprint: 0 while every rule passes or is unknown; changes with what a rule says. */
static void test_fingerprint_follows_the_verdicts(void **state)
{
	truth_fixture *ok = truth_fixture_node("n", 8, 0), *sick3 = truth_fixture_node("n", 8, 0),
	              *sick5 = truth_fixture_node("n", 8, 0);
	tau_node_facts f = facts(8, false, NULL);
	tau_nodetruth *t_ok, *t3, *t5;
	uint64_t h3, h5;

	(void)state;
	truth_fixture_gpu_unhealthy(sick3, 3, "row remap pending");
	truth_fixture_gpu_unhealthy(sick5, 5, "row remap pending");
	t_ok = decode(ok);
	t3 = decode(sick3);
	t5 = decode(sick5);
	assert_int_equal(tau_truth_rules_fingerprint(&f, t_ok), 0);
	assert_int_equal(tau_truth_rules_fingerprint(&f, NULL), 0);
	h3 = tau_truth_rules_fingerprint(&f, t3);
	h5 = tau_truth_rules_fingerprint(&f, t5);
	assert_int_not_equal(h3, 0);
	assert_int_not_equal(h5, 0);
	assert_int_not_equal(h3, h5);
	assert_int_equal(tau_truth_rules_fingerprint(&f, t3), h3);
	/* The verdicts alone agree with the full rules. */
	{
		bool failed[TAU_TRUTH_RULE_COUNT];

		assert_int_equal(tau_truth_rules_failing(&f, t_ok, failed), 0);
		assert_false(failed[TAU_TRUTH_RULE_GPU_HEALTH]);
		assert_int_equal(tau_truth_rules_failing(&f, t3, failed), 1);
		assert_true(failed[TAU_TRUTH_RULE_GPU_HEALTH]);
		assert_false(failed[TAU_TRUTH_RULE_POD_RESOURCES]);
		assert_int_equal(tau_truth_rules_failing(&f, NULL, NULL), 0);
	}
	tau_nodetruth_free(t_ok);
	tau_nodetruth_free(t3);
	tau_nodetruth_free(t5);
	tau_node_facts_clear(&f);
	free(ok);
	free(sick3);
	free(sick5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_healthy_node_passes),
	        cmocka_unit_test(test_sick_node_fails_naming_what),
	        cmocka_unit_test(test_unknown_is_not_failure),
	        cmocka_unit_test(test_sharing_labels),
	        cmocka_unit_test(test_fingerprint_follows_the_verdicts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
