/* Unit tests of the Prometheus text rendering of the aggregator's metrics. */
#include "inventory/metrics.h"

#include "tau/error.h"
#include "tau/prom.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void contains(const char *text, const char *needle)
{
	if (strstr(text, needle) == NULL)
		fail_msg("metrics lack \"%s\":\n%s", needle, text);
}

static void renders_families(void **state)
{
	tau_metrics_flavor fl[1] = {{"h100", 2, {15, 2, 13}, {1, 1, 1}}};
	tau_metrics_resource res[3] = {{"h100", "nvidia.com/gpu", "16"},
	                               {"we\"ird\\fl\nv", "cpu", "189.88"},
	                               {"h100", "memory", "2025164832768"}};
	tau_prom_histogram reviews = {0};
	tau_metrics m = {.agents_connected = 2,
	                 .nodes_known = 3,
	                 .nodes_stale = 1,
	                 .nodes_counted = 2,
	                 .dra_devices = 8,
	                 .dra_pools_incomplete = 1,
	                 .reports_inventory = 5,
	                 .reports_heartbeat = 7,
	                 .reports_unchanged = 2,
	                 .auth_unauthenticated = 4,
	                 .auth_permission_denied = 3,
	                 .established = true,
	                 .pool_generation = 9,
	                 .flavors = fl,
	                 .n_flavors = 1,
	                 .resources = res,
	                 .n_resources = 3,
	                 .report_review_latency = &reviews,
	                 .node_truth_failing = {2, 1, 0, 3}};
	char *text = NULL;

	(void)state;
	tau_prom_histogram_observe(&reviews, 120000);
	assert_int_equal(tau_metrics_render(&text, &m), 0);
	contains(text, "# TYPE tau_aggregator_agents_connected gauge\n"
	               "tau_aggregator_agents_connected 2\n");
	contains(text, "# TYPE tau_aggregator_reports_total counter\n");
	contains(text, "tau_aggregator_reports_total{kind=\"inventory\"} 5\n");
	contains(text, "tau_aggregator_reports_total{kind=\"heartbeat\"} 7\n");
	contains(text, "# TYPE tau_aggregator_reports_unchanged_total counter\n");
	contains(text, "tau_aggregator_reports_unchanged_total 2\n");
	contains(text, "tau_aggregator_auth_failures_total{code=\"UNAUTHENTICATED\"} 4\n");
	contains(text, "tau_aggregator_auth_failures_total{code=\"PERMISSION_DENIED\"} 3\n");
	contains(text, "tau_aggregator_nodes_stale 1\n");
	contains(text, "# TYPE tau_aggregator_dra_devices gauge\ntau_aggregator_dra_devices 8\n");
	contains(text, "tau_aggregator_dra_pools_incomplete 1\n");
	contains(text, "tau_aggregator_dra_classes_unusable 0\n");
	contains(text, "# TYPE tau_aggregator_node_truth_disagreements gauge\n"
	               "tau_aggregator_node_truth_disagreements{rule=\"agent.gpu-health\"} 2\n"
	               "tau_aggregator_node_truth_disagreements{rule=\"agent.rdma-ports\"} 1\n"
	               "tau_aggregator_node_truth_disagreements{rule=\"agent.csi-probe\"} 0\n"
	               "tau_aggregator_node_truth_disagreements{rule=\"agent.pod-resources\"} 3\n");
	contains(text, "tau_aggregator_pool_established 1\n");
	contains(text, "tau_aggregator_pool_valid 0\n");
	contains(text, "tau_aggregator_pool_flavor_nodes{flavor=\"h100\"} 2\n");
	/* Free now per flavor, beside the pool (GetCapacity's figures). */
	contains(text, "# TYPE tau_aggregator_free_now_gpus gauge\n"
	               "tau_aggregator_free_now_gpus{flavor=\"h100\",state=\"healthy\"} 15\n"
	               "tau_aggregator_free_now_gpus{flavor=\"h100\",state=\"in_use\"} 2\n"
	               "tau_aggregator_free_now_gpus{flavor=\"h100\",state=\"free\"} 13\n");
	contains(text, "tau_aggregator_free_now_nodes{flavor=\"h100\",state=\"unknown\"} 1\n"
	               "tau_aggregator_free_now_nodes{flavor=\"h100\",state=\"degraded\"} 1\n"
	               "tau_aggregator_free_now_nodes{flavor=\"h100\",state=\"whole_free\"} 1\n");
	/* One unit per family: GPUs are a count, cpu is in cores, memory in bytes. */
	contains(text, "# TYPE tau_aggregator_pool_allocatable gauge\n"
	               "tau_aggregator_pool_allocatable{flavor=\"h100\",resource=\"nvidia.com/"
	               "gpu\"} 16\n");
	contains(text, "# TYPE tau_aggregator_pool_allocatable_bytes gauge\n"
	               "tau_aggregator_pool_allocatable_bytes{flavor=\"h100\",resource=\"memory\"} "
	               "2025164832768\n");
	/* Label values are escaped. */
	contains(text, "tau_aggregator_pool_allocatable_cores{flavor=\"we\\\"ird\\\\fl\\nv\","
	               "resource=\"cpu\"} 189.88\n");
	contains(text, "# TYPE tau_aggregator_pool_generation_total counter\n"
	               "tau_aggregator_pool_generation_total 9\n");
	/* A review was timed: its histogram has one observation, in the 0.25 s bucket. */
	contains(text, "# TYPE tau_aggregator_token_review_duration_seconds histogram\n");
	contains(text, "tau_aggregator_token_review_duration_seconds_bucket{kind=\"report\","
	               "le=\"0.1\"} 0\n");
	contains(text, "tau_aggregator_token_review_duration_seconds_bucket{kind=\"report\","
	               "le=\"0.25\"} 1\n");
	contains(text, "tau_aggregator_token_review_duration_seconds_count{kind=\"report\"} 1\n");
	if (strstr(text, "kind=\"query\"") != NULL)
		fail_msg("a query review series without query authentication");
	/* Every line is a comment or "name[{labels}] value". */
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		if (line[0] != '#' && strchr(line, ' ') == NULL)
			fail_msg("bad line \"%s\"", line);
	}
	free(text);
}

static void quantity_values(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
	        {"8", "8"},
	        {"94940m", "94.94"},
	        {"1500m", "1.5"},
	        {"1Gi", "1073741824"},
	        {"1977700032Ki", "2025164832768"},
	        {"0", "0"},
	        {"1m", "0.001"},
	        {"120m", "0.12"},
	        {"1e30", "1e30"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tau_quantity q;
		char buf[64];

		assert_int_equal(tau_quantity_parse_str(&q, cases[i].in), 0);
		assert_int_equal(tau_prom_quantity_value(buf, sizeof(buf), &q), 0);
		assert_string_equal(buf, cases[i].out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(renders_families),
	        cmocka_unit_test(quantity_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
