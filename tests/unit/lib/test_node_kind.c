/*
 * test_node_kind.c - the node-kind rules (tau/node_kind.h) that the node agent
 * and `tau storage check` share: a table of label and providerID signals, and
 * the same rules read from Node objects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tau/json.h"
#include "tau/node_kind.h"

static void test_kind_table(void **state)
{
	static const char *const vmss =
	        "azure:///subscriptions/0b6f2c44-7d1e-4a3b-9c55-2f1e8d7a6b90/resourceGroups/"
	        "mc_rg_aks_eastus/providers/Microsoft.Compute/virtualMachineScaleSets/"
	        "aks-np-1-vmss/"
	        "virtualMachines/0";
	static const struct {
		tau_node_kind_signals s;
		tau_node_kind want;
	} cases[] = {
	        /* nodepool-type, managed, agentpool, type, providerID */
	        {{"FlexNodes", "false", "flexgpu", NULL, NULL}, TAU_NODE_KIND_FLEX},
	        {{"FlexNodes", NULL, NULL, NULL, NULL}, TAU_NODE_KIND_FLEX},
	        {{"FlexNodes", "false", "flexgpu", NULL, vmss}, TAU_NODE_KIND_FLEX},
	        {{NULL, "false", "flexgpu", NULL, NULL}, TAU_NODE_KIND_FLEX},
	        {{NULL, "false", NULL, NULL, "kind://docker/kind/kind-worker"}, TAU_NODE_KIND_FLEX},
	        {{NULL, "false", NULL, NULL,
	          "azure:///subscriptions/s/resourceGroups/g/providers/Microsoft.HybridCompute/"
	          "machines/m1"},
	         TAU_NODE_KIND_FLEX},
	        {{NULL, "false", NULL, "virtual-kubelet", NULL}, TAU_NODE_KIND_OTHER},
	        {{NULL, "false", "aci", "virtual-kubelet", vmss}, TAU_NODE_KIND_OTHER},
	        {{NULL, "false", NULL, NULL, vmss}, TAU_NODE_KIND_OTHER},
	        {{"VirtualMachineScaleSets", NULL, "ndh100", NULL, vmss}, TAU_NODE_KIND_AGENT_POOL},
	        {{"VirtualMachines", NULL, "np", NULL, NULL}, TAU_NODE_KIND_AGENT_POOL},
	        {{NULL, "true", "np", NULL, NULL}, TAU_NODE_KIND_AGENT_POOL},
	        {{NULL, NULL, NULL, NULL, vmss}, TAU_NODE_KIND_AGENT_POOL},
	        {{NULL, NULL, NULL, NULL,
	          "azure:///subscriptions/s/resourcegroups/g/providers/microsoft.compute/"
	          "virtualmachines/vm1"},
	         TAU_NODE_KIND_AGENT_POOL},
	        {{NULL, NULL, "np", "virtual-kubelet", NULL}, TAU_NODE_KIND_OTHER},
	        {{NULL, NULL, NULL, NULL, "aws:///us-east-1a/i-0123456789"}, TAU_NODE_KIND_OTHER},
	        {{"VirtualMachineScaleSets", NULL, NULL, NULL, NULL}, TAU_NODE_KIND_OTHER},
	        {{NULL, NULL, NULL, NULL, NULL}, TAU_NODE_KIND_OTHER},
	        {{"flexnodes", NULL, NULL, NULL, NULL}, TAU_NODE_KIND_OTHER},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tau_node_kind got = tau_node_kind_classify(&cases[i].s);

		if (got != cases[i].want)
			fail_msg("case %zu: got %s, want %s", i, tau_node_kind_name(got),
			         tau_node_kind_name(cases[i].want));
	}
	assert_int_equal(tau_node_kind_classify(NULL), TAU_NODE_KIND_OTHER);
	assert_string_equal(tau_node_kind_name(TAU_NODE_KIND_AGENT_POOL), "AgentPool");
	assert_string_equal(tau_node_kind_name(TAU_NODE_KIND_FLEX), "Flex");
	assert_string_equal(tau_node_kind_name(TAU_NODE_KIND_OTHER), "Other");
	assert_null(tau_node_kind_name(TAU_NODE_KIND_UNKNOWN));
	assert_false(tau_node_provider_id_is_azure_compute(NULL));
	assert_false(tau_node_provider_id_is_azure_compute(""));
	assert_false(tau_node_provider_id_is_azure_compute("azure:///subscriptions/s"));
	assert_false(tau_node_provider_id_is_azure_compute(
	        "azure:///subscriptions/s/providers/Microsoft.Compute/resourceGroups/g"));
	assert_true(tau_node_provider_id_is_azure_compute(vmss));
}

static tau_node_kind kind_of_text(const char *text)
{
	cJSON *node = NULL;
	tau_node_kind k;

	assert_int_equal(tau_json_parse(&node, text, strlen(text), 0), 0);
	k = tau_node_kind_of(node);
	cJSON_Delete(node);
	return k;
}

static void test_kind_of_node(void **state)
{
	(void)state;
	assert_int_equal(kind_of_text("{\"metadata\":{\"name\":\"aks-nd-1\",\"labels\":{"
	                              "\"kubernetes.azure.com/agentpool\":\"nd\"}}}"),
	                 TAU_NODE_KIND_AGENT_POOL);
	assert_int_equal(kind_of_text("{\"metadata\":{\"name\":\"vm\"},\"spec\":{\"providerID\":"
	                              "\"azure:///subscriptions/s/resourceGroups/g/providers/"
	                              "Microsoft.Compute/virtualMachines/vm\"}}"),
	                 TAU_NODE_KIND_AGENT_POOL);
	assert_int_equal(kind_of_text("{\"metadata\":{\"name\":\"edge\",\"labels\":{"
	                              "\"kubernetes.azure.com/nodepool-type\":\"FlexNodes\"}}}"),
	                 TAU_NODE_KIND_FLEX);
	assert_int_equal(kind_of_text("{\"metadata\":{\"name\":\"edge\",\"labels\":{"
	                              "\"kubernetes.azure.com/managed\":\"false\"}},"
	                              "\"spec\":{\"providerID\":\"kind://docker/k/w\"}}"),
	                 TAU_NODE_KIND_FLEX);
	assert_int_equal(kind_of_text("{\"metadata\":{\"name\":\"vk\",\"labels\":{"
	                              "\"kubernetes.azure.com/agentpool\":\"aci\","
	                              "\"type\":\"virtual-kubelet\"}}}"),
	                 TAU_NODE_KIND_OTHER);
	/* Labels that are not strings are not signals; a bad shape is no crash. */
	assert_int_equal(kind_of_text("{\"metadata\":{\"name\":\"n\",\"labels\":{"
	                              "\"kubernetes.azure.com/nodepool-type\":7}}}"),
	                 TAU_NODE_KIND_OTHER);
	assert_int_equal(kind_of_text("{\"metadata\":{\"labels\":[]},\"spec\":{\"providerID\":1}}"),
	                 TAU_NODE_KIND_OTHER);
	assert_int_equal(kind_of_text("[]"), TAU_NODE_KIND_UNKNOWN);
	assert_int_equal(tau_node_kind_of(NULL), TAU_NODE_KIND_UNKNOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_kind_table),
	        cmocka_unit_test(test_kind_of_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
