/*
 * test_workspace_controller.c - the controller's pure pieces: workspace
 * summaries for the query service, the namespace map file, option checks.
 * The reconcile loop itself is exercised against kube-sim by
 * tests/e2e/test_workspace.py.
 */
#include "workspace/controller.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_summary(void **state)
{
	(void)state;
	const char *s = "{\"metadata\":{\"name\":\"alpha\",\"generation\":2,"
	                "\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"},"
	                "\"status\":{\"phase\":\"Ready\",\"observedGeneration\":2,"
	                "\"target\":{\"resolvedNamespace\":\"ml-alpha\"},"
	                "\"queue\":{\"localQueue\":\"q\",\"clusterQueue\":\"cq\"},"
	                "\"conditions\":[{\"type\":\"RBACReady\",\"status\":\"True\","
	                "\"reason\":\"RoleBindingReady\",\"message\":\"m\"}]}}";
	cJSON *o = NULL;
	tau_ws_summary sum;

	assert_int_equal(tau_json_parse(&o, s, strlen(s), 0), 0);
	assert_int_equal(tau_ws_summary_from_json(&sum, o), 0);
	assert_string_equal(sum.name, "alpha");
	assert_string_equal(sum.phase, "Ready");
	assert_string_equal(sum.namespace_name, "ml-alpha");
	assert_string_equal(sum.local_queue, "q");
	assert_string_equal(sum.cluster_queue, "cq");
	assert_int_equal(sum.generation, 2);
	assert_int_equal(sum.observed_generation, 2);
	assert_true(sum.deleting);
	assert_int_equal(sum.n_conditions, 1);
	assert_string_equal(sum.conditions[0].reason, "RoleBindingReady");
	tau_ws_summary_clear(&sum);
	cJSON_Delete(o);

	assert_int_equal(tau_json_parse(&o, "{\"metadata\":{}}", 15, 0), 0);
	assert_int_equal(tau_ws_summary_from_json(&sum, o), -TAU_EINVAL);
	cJSON_Delete(o);
	assert_int_equal(tau_json_parse(&o, "{\"metadata\":{\"name\":\"b\"}}", 25, 0), 0);
	assert_int_equal(tau_ws_summary_from_json(&sum, o), 0);
	assert_null(sum.phase);
	assert_int_equal(sum.n_conditions, 0);
	tau_ws_summary_clear(&sum);
	cJSON_Delete(o);
}

static void test_map_parse(void **state)
{
	(void)state;
	cJSON *m = NULL;
	const char *good = "{\"alpha\":\"team-a\",\"beta\":\"team-b\"}";

	assert_int_equal(tau_ws_map_parse(&m, good, strlen(good)), 0);
	assert_string_equal(cJSON_GetObjectItem(m, "beta")->valuestring, "team-b");
	cJSON_Delete(m);
	m = NULL;
	assert_int_equal(tau_ws_map_parse(&m, "[\"a\"]", 5), -TAU_EINVAL);
	assert_int_equal(tau_ws_map_parse(&m, "{\"a\":1}", 7), -TAU_EINVAL);
	assert_true(tau_ws_map_parse(&m, "{", 1) < 0);
	assert_null(m);
}

static void test_options_checked(void **state)
{
	(void)state;
	tau_ws_controller *ctl = NULL;
	tau_ws_controller_opts o = {0};

	assert_int_equal(tau_ws_controller_new(&ctl, NULL), -TAU_EINVAL);
	assert_int_equal(tau_ws_controller_new(&ctl, &o), -TAU_EINVAL);
	o.client = (tau_kube_client *)&o; /* never dereferenced: rejected before use */
	o.loop = (tau_kube_loop *)&o;
	o.allowlist_selector = "a=b";
	o.allowlist_file = "/tmp/x.json";
	assert_int_equal(tau_ws_controller_new(&ctl, &o), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "not both"));
	assert_null(ctl);
	tau_ws_controller_free(NULL);
	tau_ws_summaries_free(NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_summary),
	        cmocka_unit_test(test_map_parse),
	        cmocka_unit_test(test_options_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
