/*
 * test_budget_metrics.c - the budget's /metrics families from a TauCluster, Cohorts and
 * ClusterQueues: condition gauges, nominal quota and reservations summed exactly per team,
 * flavor and resource, objects TauGrid does not manage ignored, bad quantities left out.
 */
#include "budget/metrics.h"

#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char cluster_json[] =
        "{\"metadata\":{\"name\":\"cluster\"},\"status\":{\"conditions\":["
        "{\"type\":\"BudgetReady\",\"status\":\"False\",\"reason\":\"BudgetZeroed\"},"
        "{\"type\":\"ConflictDetected\",\"status\":\"True\",\"reason\":\"ConflictDetected\"}]}}";

#define MANAGED "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"}"

static const char cohorts_json[] =
        "[{\"metadata\":{\"name\":\"tau-team-research\"," MANAGED "},"
        "\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"cpu\",\"nvidia.com/gpu\"],"
        "\"flavors\":[{\"name\":\"taugrid-gpu-h100\",\"resources\":["
        "{\"name\":\"cpu\",\"nominalQuota\":\"191500m\"},"
        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"16\"}]}]}]}},"
        /* not ours: no managed-by label */
        "{\"metadata\":{\"name\":\"tau-team-other\"},\"spec\":{\"resourceGroups\":[{"
        "\"flavors\":[{\"name\":\"f\",\"resources\":[{\"name\":\"cpu\",\"nominalQuota\":\"1\"}]}]}"
        "]}}]";

static const char queues_json[] =
        "[{\"metadata\":{\"name\":\"tau-ws-a\"," MANAGED "},\"spec\":{\"cohortName\":"
        "\"tau-team-research\"},\"status\":{\"flavorsReservation\":[{\"name\":"
        "\"taugrid-gpu-h100\",\"resources\":[{\"name\":\"nvidia.com/gpu\",\"total\":\"3\"},"
        "{\"name\":\"cpu\",\"total\":\"500m\"}]}]}},"
        "{\"metadata\":{\"name\":\"tau-ws-b\"," MANAGED "},\"spec\":{\"cohortName\":"
        "\"tau-team-research\"},\"status\":{\"flavorsReservation\":[{\"name\":"
        "\"taugrid-gpu-h100\",\"resources\":[{\"name\":\"nvidia.com/gpu\",\"total\":\"2\"},"
        "{\"name\":\"cpu\",\"total\":\"not-a-quantity\"}]}]}},"
        /* a queue in a Cohort that is not a team's */
        "{\"metadata\":{\"name\":\"tau-ws-c\"," MANAGED "},\"spec\":{\"cohortName\":\"x\"},"
        "\"status\":{\"flavorsReservation\":[{\"name\":\"taugrid-gpu-h100\",\"resources\":["
        "{\"name\":\"nvidia.com/gpu\",\"total\":\"7\"}]}]}}]";

static char *render(const char *cluster, const char *cohorts, const char *queues,
                    const tau_budget_stats *st)
{
	cJSON *cl = cluster ? cJSON_Parse(cluster) : NULL;
	cJSON *co = cohorts ? cJSON_Parse(cohorts) : NULL;
	cJSON *q = queues ? cJSON_Parse(queues) : NULL;
	tau_buf b = TAU_BUF_INIT(0);
	char *out;

	assert_int_equal(tau_budget_metrics_render(&b, cl, co, q, st), 0);
	out = tau_buf_take(&b, NULL);
	assert_non_null(out);
	tau_buf_free(&b);
	cJSON_Delete(cl);
	cJSON_Delete(co);
	cJSON_Delete(q);
	return out;
}

static void test_sums_and_conditions(void **state)
{
	tau_budget_stats st = {.passes = 7, .writes = 3, .status_writes = 2, .zeroed = 1};
	char *out = render(cluster_json, cohorts_json, queues_json, &st);

	(void)state;
	assert_non_null(strstr(out, "\ntau_budget_ready 0\n"));
	assert_non_null(strstr(out, "\ntau_budget_zeroed 1\n"));
	assert_non_null(strstr(out, "\ntau_budget_conflict 1\n"));
	assert_non_null(strstr(out, "tau_budget_nominal_quota_cores{team=\"research\","
	                            "flavor=\"taugrid-gpu-h100\",resource=\"cpu\"} 191.5\n"));
	assert_non_null(strstr(out,
	                       "tau_budget_nominal_quota{team=\"research\","
	                       "flavor=\"taugrid-gpu-h100\",resource=\"nvidia.com/gpu\"} 16\n"));
	assert_null(strstr(out, "team=\"other\""));
	/* 3 + 2 GPUs reserved; tau-ws-c is in no team's Cohort. */
	assert_non_null(strstr(out,
	                       "tau_budget_reserved{team=\"research\","
	                       "flavor=\"taugrid-gpu-h100\",resource=\"nvidia.com/gpu\"} 5\n"));
	/* One cpu term does not parse: no sample rather than a wrong one. */
	assert_null(strstr(out, "tau_budget_reserved_cores{team=\"research\","
	                        "flavor=\"taugrid-gpu-h100\",resource=\"cpu\"}"));
	/* GPUs are a count, never in the cores family. */
	assert_null(strstr(out, "tau_budget_nominal_quota_cores{team=\"research\","
	                        "flavor=\"taugrid-gpu-h100\",resource=\"nvidia.com/gpu\"}"));
	assert_non_null(strstr(out, "\ntau_budget_passes_total 7\n"));
	assert_non_null(strstr(out, "\ntau_budget_writes_total 3\n"));
	assert_non_null(strstr(out, "\ntau_budget_status_writes_total 2\n"));
	free(out);
}

static void test_nothing_observed(void **state)
{
	tau_budget_stats st = {0};
	char *out = render(NULL, NULL, NULL, &st);
	static const char *const families[] = {
	        "tau_budget_ready",          "tau_budget_zeroed",
	        "tau_budget_conflict",       "tau_budget_nominal_quota",
	        "tau_budget_reserved",       "tau_budget_nominal_quota_cores",
	        "tau_budget_reserved_cores", "tau_budget_nominal_quota_bytes",
	        "tau_budget_reserved_bytes", "tau_budget_passes_total",
	        "tau_budget_writes_total",   "tau_budget_status_writes_total",
	};

	(void)state;
	/* Every family is there (HELP and TYPE), so alerts and dashboards always find it. */
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		char want[128];

		snprintf(want, sizeof(want), "# TYPE %s ", families[i]);
		assert_non_null(strstr(out, want));
	}
	assert_non_null(strstr(out, "\ntau_budget_ready 0\n"));
	assert_null(strstr(out, "tau_budget_nominal_quota{"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sums_and_conditions),
	        cmocka_unit_test(test_nothing_observed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
