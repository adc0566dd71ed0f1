/*
 * test_controller_events.c - Events a controller records, against the fake API server: an
 * Event names its object (kind, name, namespace, uid) in the object's namespace; condition
 * Events come only for our conditions whose status or reason moved (a pass that changed
 * nothing records none), Warning or Normal as the controller says; a failed create is
 * dropped, never fatal.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/events.h"
#include "fake_kube.h"

#include "tau/json.h"
#include "tau/log.h"

static const tau_kube_resource res_events = {"", "v1", "events", true};

static const char workspace_json[] =
        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauWorkspace\","
        "\"metadata\":{\"name\":\"alpha\",\"namespace\":\"tau-system\",\"uid\":\"u-1\"}}";

typedef struct env {
	fake_kube *fk;
	tau_kube_client *client;
	cJSON *ws;
} env;

static int setup(void **state)
{
	env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	assert_int_equal(fake_kube_start(&e->fk), 0);
	assert_int_equal(fake_kube_client(&e->client, e->fk), 0);
	e->ws = cJSON_Parse(workspace_json);
	assert_non_null(e->ws);
	tau_log_set_level(TAU_LOG_OFF);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	env *e = *state;

	cJSON_Delete(e->ws);
	tau_kube_client_free(e->client);
	fake_kube_stop(e->fk);
	free(e);
	return 0;
}

static bool warn_if(const char *type, const char *status)
{
	return strcmp(type, "DriftDetected") == 0 ? strcmp(status, "True") == 0
	                                          : strcmp(status, "False") == 0;
}

static void test_event_names_its_object(void **state)
{
	env *e = *state;
	cJSON *ev;

	tau_controller_record_event(e->client, "workspace", e->ws, TAU_EVENT_NORMAL,
	                            "ObjectCreated",
	                            "RoleBinding ml-alpha/tau-researchers created");
	assert_int_equal(fake_kube_count(e->fk, &res_events), 1);
	/* generateName "alpha." and the fake server's counter */
	ev = fake_kube_get(e->fk, &res_events, "tau-system", "alpha.00001");
	assert_non_null(ev);
	assert_string_equal(tau_json_str(ev, "involvedObject.kind"), "TauWorkspace");
	assert_string_equal(tau_json_str(ev, "involvedObject.name"), "alpha");
	assert_string_equal(tau_json_str(ev, "involvedObject.namespace"), "tau-system");
	assert_string_equal(tau_json_str(ev, "involvedObject.uid"), "u-1");
	assert_string_equal(tau_json_str(ev, "involvedObject.apiVersion"),
	                    "tau.azure.com/v1alpha1");
	assert_string_equal(tau_json_str(ev, "type"), "Normal");
	assert_string_equal(tau_json_str(ev, "reason"), "ObjectCreated");
	assert_string_equal(tau_json_str(ev, "message"),
	                    "RoleBinding ml-alpha/tau-researchers created");
	assert_string_equal(tau_json_str(ev, "source.component"), "tau-aggregator");
	cJSON_Delete(ev);
}

/* The Event `name` in tau-system has this type, reason and message. */
static void expect_event(env *e, const char *name, const char *type, const char *reason,
                         const char *message)
{
	cJSON *ev = fake_kube_get(e->fk, &res_events, "tau-system", name);

	assert_non_null(ev);
	assert_string_equal(tau_json_str(ev, "type"), type);
	assert_string_equal(tau_json_str(ev, "reason"), reason);
	assert_string_equal(tau_json_str(ev, "message"), message);
	cJSON_Delete(ev);
}

static void test_condition_events_only_for_changes(void **state)
{
	static const char *const types[] = {"RBACReady", "QueueReady", "DriftDetected", NULL};
	env *e = *state;
	cJSON *before = cJSON_Parse(
	        "[{\"type\":\"RBACReady\",\"status\":\"True\",\"reason\":\"RoleBindingReady\"},"
	        "{\"type\":\"QueueReady\",\"status\":\"False\",\"reason\":\"ClusterQueueNotFound\"}"
	        ","
	        "{\"type\":\"DriftDetected\",\"status\":\"False\",\"reason\":\"NoDrift\"}]");
	cJSON *now = cJSON_Parse(
	        "[{\"type\":\"RBACReady\",\"status\":\"True\",\"reason\":\"RoleBindingReady\","
	        "\"message\":\"same\"},"
	        "{\"type\":\"QueueReady\",\"status\":\"True\",\"reason\":\"LocalQueueReady\","
	        "\"message\":\"LocalQueue ml-alpha/default points at tau-ws-alpha\"},"
	        "{\"type\":\"DriftDetected\",\"status\":\"True\",\"reason\":\"DriftCorrected\","
	        "\"message\":\"RoleBinding corrected\"},"
	        "{\"type\":\"QuotaReady\",\"status\":\"False\",\"reason\":\"NotOurs\"}]");
	assert_non_null(before);
	assert_non_null(now);
	/* QueueReady moved (Normal, it is True now) and DriftDetected moved (Warning); RBACReady
	 * did not; QuotaReady is another controller's. */
	assert_int_equal(tau_controller_record_condition_events(e->client, "workspace", e->ws,
	                                                        before, now, types, warn_if),
	                 2);
	assert_int_equal(fake_kube_count(e->fk, &res_events), 2);
	expect_event(e, "alpha.00001", "Normal", "LocalQueueReady",
	             "LocalQueue ml-alpha/default points at tau-ws-alpha");
	expect_event(e, "alpha.00002", "Warning", "DriftCorrected", "RoleBinding corrected");
	/* The same conditions again (the next pass, a resync): nothing new. */
	assert_int_equal(tau_controller_record_condition_events(e->client, "workspace", e->ws, now,
	                                                        now, types, warn_if),
	                 0);
	/* No status before: every one of ours is news, a condition without words too. */
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetArrayItem(now, 0), "message");
	assert_int_equal(tau_controller_record_condition_events(e->client, "workspace", e->ws, NULL,
	                                                        now, types, warn_if),
	                 3);
	assert_int_equal(fake_kube_count(e->fk, &res_events), 5);
	expect_event(e, "alpha.00003", "Normal", "RoleBindingReady",
	             "RBACReady is True (RoleBindingReady)");
	cJSON_Delete(before);
	cJSON_Delete(now);
}

static void test_failure_is_dropped(void **state)
{
	env *e = *state;

	fake_kube_fail(e->fk, "POST", &res_events, 500, 1);
	tau_controller_record_event(e->client, "workspace", e->ws, TAU_EVENT_WARNING,
	                            "ObjectRestored", "restored");
	assert_int_equal(fake_kube_count(e->fk, &res_events), 0);
	/* One try only: the failed Event is not retried behind the caller's back. */
	assert_int_equal(fake_kube_requests(e->fk, "POST", &res_events), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_event_names_its_object, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_condition_events_only_for_changes, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(test_failure_is_dropped, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
