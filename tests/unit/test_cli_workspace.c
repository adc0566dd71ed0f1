/*
 * test_cli_workspace.c - `tau workspace` output from canned JSON: table
 * alignment, JSON shape, the check verdict (exit code), usage errors.
 */
#include "workspace.h"

#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *parse(const char *s)
{
	cJSON *o = NULL;

	assert_int_equal(tau_json_parse(&o, s, strlen(s), 0), 0);
	return o;
}

/* Run a printer into a memory stream; returns the text (free()). */
static char *capture(int (*fn)(FILE *, const cJSON *, tau_cli_format), const cJSON *obj,
                     tau_cli_format fmt, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*rc = fn(f, obj, fmt);
	fclose(f);
	return buf;
}

#define WS_READY                                                                                   \
	"{\"metadata\":{\"name\":\"alpha\",\"namespace\":\"tau-system\",\"generation\":3},"        \
	"\"status\":{\"phase\":\"Ready\",\"observedGeneration\":3,"                                \
	"\"target\":{\"resolvedNamespace\":\"ml-alpha\"},"                                         \
	"\"queue\":{\"localQueue\":\"alpha\",\"clusterQueue\":\"alpha\"},"                         \
	"\"conditions\":[{\"type\":\"RBACReady\",\"status\":\"True\",\"reason\":"                  \
	"\"RoleBindingReady\",\"message\":\"ok\"},{\"type\":\"QueueReady\",\"status\":\"True\","   \
	"\"reason\":\"LocalQueueReady\",\"message\":\"ok\"}]}}"

static void test_list_table_alignment(void **state)
{
	(void)state;
	cJSON *list =
	        parse("{\"items\":[" WS_READY ",{\"metadata\":{\"name\":\"a-much-longer-name\"},"
	              "\"status\":{\"phase\":\"Pending\"}}]}");
	int rc;
	char *out = capture(tau_cli_ws_print_list, list, TAU_CLI_TABLE, &rc);

	assert_int_equal(rc, 0);
	assert_string_equal(out, "NAME                 PHASE     NAMESPACE   QUEUE\n"
	                         "alpha                Ready     ml-alpha    alpha\n"
	                         "a-much-longer-name   Pending   <none>      <none>\n");
	free(out);
	cJSON_Delete(list);
}

static void test_list_json_and_empty(void **state)
{
	(void)state;
	cJSON *list = parse("{\"items\":[" WS_READY "]}"), *doc = NULL,
	      *empty = parse("{\"items\":[]}");
	int rc;
	char *out = capture(tau_cli_ws_print_list, list, TAU_CLI_JSON, &rc);

	assert_int_equal(rc, 0);
	assert_int_equal(tau_json_parse(&doc, out, strlen(out), 0), 0);
	assert_string_equal(
	        tau_json_find(cJSON_GetArrayItem(tau_json_find(doc, "items"), 0), "namespace")
	                ->valuestring,
	        "ml-alpha");
	free(out);
	cJSON_Delete(doc);
	out = capture(tau_cli_ws_print_list, empty, TAU_CLI_TABLE, &rc);
	assert_string_equal(out, "No workspaces found.\n");
	free(out);
	out = capture(tau_cli_ws_print_list, list, TAU_CLI_TABLE, &rc);
	free(out);
	cJSON_Delete(list);
	cJSON_Delete(empty);
}

static void test_status_table_and_json(void **state)
{
	(void)state;
	cJSON *ws = parse(WS_READY), *doc = NULL;
	int rc;
	char *out = capture(tau_cli_ws_print_status, ws, TAU_CLI_TABLE, &rc);

	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "Phase:               Ready\n"));
	assert_non_null(strstr(out, "Namespace:           ml-alpha\n"));
	assert_non_null(strstr(out, "TYPE         STATUS   REASON             MESSAGE\n"));
	assert_non_null(strstr(out, "QueueReady   True     LocalQueueReady    ok\n"));
	free(out);
	out = capture(tau_cli_ws_print_status, ws, TAU_CLI_JSON, &rc);
	assert_int_equal(tau_json_parse(&doc, out, strlen(out), 0), 0);
	assert_string_equal(tau_json_find(doc, "phase")->valuestring, "Ready");
	assert_true(cJSON_IsTrue(tau_json_find(doc, "ready")));
	assert_int_equal(cJSON_GetArraySize(tau_json_find(doc, "conditions")), 2);
	free(out);
	cJSON_Delete(doc);
	cJSON_Delete(ws);
}

static void test_ready_verdict(void **state)
{
	(void)state;
	cJSON *ready = parse(WS_READY);
	cJSON *stale = parse("{\"metadata\":{\"name\":\"a\",\"generation\":4},"
	                     "\"status\":{\"phase\":\"Ready\",\"observedGeneration\":3}}");
	cJSON *pending = parse("{\"metadata\":{\"name\":\"a\",\"generation\":1},"
	                       "\"status\":{\"phase\":\"Pending\",\"observedGeneration\":1}}");
	cJSON *none = parse("{\"metadata\":{\"name\":\"a\",\"generation\":1}}");

	assert_true(tau_cli_ws_ready(ready));
	assert_false(tau_cli_ws_ready(stale));
	assert_false(tau_cli_ws_ready(pending));
	assert_false(tau_cli_ws_ready(none));
	cJSON_Delete(ready);
	cJSON_Delete(stale);
	cJSON_Delete(pending);
	cJSON_Delete(none);
}

static void test_usage_errors_exit_2(void **state)
{
	(void)state;
	char a0[] = "workspace", a1[] = "bogus", a2[] = "check", a3[] = "-o", a4[] = "yaml";
	char *v1[] = {a0, a1, NULL};
	char *v2[] = {a0, a2, NULL};
	char *v3[] = {a0, a2, a3, a4, NULL};
	char s0[] = "storage", s1[] = "check";
	char *v4[] = {s0, s1, NULL};

	assert_int_equal(tau_cli_workspace(2, v1, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(2, v2, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(4, v3, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_storage(2, v4, NULL), TAU_CLI_USAGE); /* --driver missing */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_list_table_alignment),
	        cmocka_unit_test(test_list_json_and_empty),
	        cmocka_unit_test(test_status_table_and_json),
	        cmocka_unit_test(test_ready_verdict),
	        cmocka_unit_test(test_usage_errors_exit_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
