/*
 * Unit tests of the workspace answers of QueryService: a TauWorkspace as the
 * controller summarises it -> WorkspaceSummary / ListWorkspacesResponse,
 * including a workspace with no status yet and a round trip through the wire.
 */
#include "inventory/query.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char READY_WS[] =
        "{\"metadata\":{\"name\":\"alpha\",\"namespace\":\"tau-system\",\"generation\":3},"
        "\"spec\":{\"queue\":{\"clusterQueue\":\"cq-a\"}},"
        "\"status\":{\"phase\":\"Ready\",\"observedGeneration\":3,"
        "\"target\":{\"resolvedNamespace\":\"ml-alpha\"},"
        "\"queue\":{\"localQueue\":\"alpha\",\"clusterQueue\":\"cq-a\"},"
        "\"conditions\":["
        "{\"type\":\"RBACReady\",\"status\":\"True\",\"reason\":\"Bound\",\"message\":\"ok\","
        "\"lastTransitionTime\":\"2024-05-01T10:00:00Z\"},"
        "{\"type\":\"QueueReady\",\"status\":\"False\",\"reason\":\"ClusterQueueMissing\"}]}}";

static const char NEW_WS[] = "{\"metadata\":{\"name\":\"beta\",\"namespace\":\"tau-system\"}}";

static tau_ws_summary summary(const char *json)
{
	cJSON *root = NULL;
	tau_ws_summary s = {0};

	assert_int_equal(tau_json_parse(&root, json, strlen(json), 0), 0);
	assert_int_equal(tau_ws_summary_from_json(&s, root), 0);
	cJSON_Delete(root);
	return s;
}

static void ready_workspace(void **state)
{
	tau_ws_summary s = summary(READY_WS);
	Tau__Inventory__V1__WorkspaceSummary *ws = NULL;

	(void)state;
	assert_int_equal(tau_query_workspace(&ws, &s), 0);
	assert_string_equal(ws->name, "alpha");
	assert_string_equal(ws->phase, "Ready");
	assert_string_equal(ws->namespace_, "ml-alpha");
	assert_string_equal(ws->queue, "alpha"); /* the LocalQueue, not the ClusterQueue */
	assert_int_equal(ws->n_conditions, 2);
	assert_string_equal(ws->conditions[0]->type, "RBACReady");
	assert_string_equal(ws->conditions[0]->status, "True");
	assert_string_equal(ws->conditions[0]->reason, "Bound");
	assert_string_equal(ws->conditions[0]->message, "ok");
	/* 2024-05-01T10:00:00Z */
	assert_int_equal(ws->conditions[0]->last_transition_unix_ms, 1714557600000LL);
	assert_int_equal(ws->conditions[1]->last_transition_unix_ms, 0); /* absent */
	assert_string_equal(ws->conditions[1]->type, "QueueReady");
	assert_string_equal(ws->conditions[1]->status, "False");
	assert_string_equal(ws->conditions[1]->message, ""); /* absent -> empty */
	protobuf_c_message_free_unpacked(&ws->base, NULL);
	tau_ws_summary_clear(&s);
}

static void workspace_without_status(void **state)
{
	tau_ws_summary s = summary(NEW_WS);
	Tau__Inventory__V1__WorkspaceSummary *ws = NULL;

	(void)state;
	assert_int_equal(tau_query_workspace(&ws, &s), 0);
	assert_string_equal(ws->name, "beta");
	assert_string_equal(ws->phase, "");
	assert_string_equal(ws->namespace_, "");
	assert_string_equal(ws->queue, "");
	assert_int_equal(ws->n_conditions, 0);
	assert_null(ws->conditions);
	protobuf_c_message_free_unpacked(&ws->base, NULL);
	tau_ws_summary_clear(&s);
}

static void list_round_trip(void **state)
{
	tau_ws_summary s[2] = {summary(READY_WS), summary(NEW_WS)};
	Tau__Inventory__V1__ListWorkspacesResponse *resp = NULL, *back;
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(tau_query_list_workspaces(&resp, s, 2), 0);
	assert_int_equal(resp->n_workspaces, 2);
	assert_string_equal(resp->workspaces[0]->name, "alpha");
	assert_string_equal(resp->workspaces[1]->name, "beta");
	len = tau__inventory__v1__list_workspaces_response__get_packed_size(resp);
	buf = malloc(len);
	assert_non_null(buf);
	tau__inventory__v1__list_workspaces_response__pack(resp, buf);
	back = tau__inventory__v1__list_workspaces_response__unpack(NULL, len, buf);
	assert_non_null(back);
	assert_int_equal(back->n_workspaces, 2);
	assert_string_equal(back->workspaces[0]->namespace_, "ml-alpha");
	assert_string_equal(back->workspaces[0]->conditions[1]->reason, "ClusterQueueMissing");
	tau__inventory__v1__list_workspaces_response__free_unpacked(back, NULL);
	free(buf);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	tau_ws_summary_clear(&s[0]);
	tau_ws_summary_clear(&s[1]);
}

static void empty_list(void **state)
{
	Tau__Inventory__V1__ListWorkspacesResponse *resp = NULL;

	(void)state;
	assert_int_equal(tau_query_list_workspaces(&resp, NULL, 0), 0);
	assert_int_equal(resp->n_workspaces, 0);
	assert_null(resp->workspaces);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(ready_workspace),
	        cmocka_unit_test(workspace_without_status),
	        cmocka_unit_test(list_round_trip),
	        cmocka_unit_test(empty_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
