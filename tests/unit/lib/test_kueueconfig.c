/*
 * test_kueueconfig.c - reading Kueue's manager Configuration: the fixture ConfigMap's document
 * (tests/fixtures/dra), both API versions, JSON, absent parts, and every refusal with its text.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tau/error.h"
#include "tau/file.h"
#include "tau/kueueconfig.h"

static tau_kueue_config *parse_ok(const char *doc)
{
	tau_kueue_config *cfg = NULL;
	int rc = tau_kueue_config_parse(&cfg, doc, strlen(doc));

	if (rc != 0)
		fail_msg("parse failed: %s", tau_error_last()->msg);
	assert_non_null(cfg);
	return cfg;
}

static void expect_refused(const char *doc, const char *msg)
{
	tau_kueue_config *cfg = (tau_kueue_config *)0x1;

	assert_int_equal(tau_kueue_config_parse(&cfg, doc, strlen(doc)), -TAU_EINVAL);
	assert_ptr_equal(cfg, (tau_kueue_config *)0x1); /* untouched */
	if (strstr(tau_error_last()->msg, msg) == NULL)
		fail_msg("error \"%s\" does not contain \"%s\"", tau_error_last()->msg, msg);
}

/* The ConfigMap of tests/fixtures/dra, read as the aggregator reads it: the key's string. */
static void fixture_configmap(void **state)
{
	char *json = NULL;
	size_t len = 0;
	cJSON *cm;
	const cJSON *data, *doc;
	tau_kueue_config *cfg;
	const tau_kueue_dra_mapping *m;

	(void)state;
	assert_int_equal(tau_file_read(&json, &len,
	                               TAU_SOURCE_DIR
	                               "/tests/fixtures/dra/configmap-kueue-manager-config.json",
	                               1 << 20, "fixture"),
	                 0);
	cm = cJSON_ParseWithLength(json, len);
	assert_non_null(cm);
	data = cJSON_GetObjectItemCaseSensitive(cm, "data");
	doc = cJSON_GetObjectItemCaseSensitive(data, "controller_manager_config.yaml");
	assert_true(cJSON_IsString(doc));
	cfg = parse_ok(doc->valuestring);
	assert_int_equal(cfg->dra_gate, 1);
	assert_int_equal(cfg->n_mappings, 1);
	assert_string_equal(cfg->mappings[0].name, "nvidia.com/gpu");
	assert_int_equal(cfg->mappings[0].n_device_classes, 1);
	assert_string_equal(cfg->mappings[0].device_classes[0], "gpu.nvidia.com");
	m = tau_kueue_config_mapping_for(cfg, "gpu.nvidia.com");
	assert_ptr_equal(m, &cfg->mappings[0]);
	assert_null(tau_kueue_config_mapping_for(cfg, "mig.nvidia.com"));
	tau_kueue_config_free(cfg);
	cJSON_Delete(cm);
	free(json);
}

static void several_mappings_and_json(void **state)
{
	tau_kueue_config *cfg;

	(void)state;
	cfg = parse_ok(
	        "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
	        "kind: Configuration\n"
	        "featureGates: {DynamicResourceAllocation: false, TopologyAwareScheduling: true}\n"
	        "resources:\n"
	        "  excludeResourcePrefixes: [example.com/]\n"
	        "  deviceClassMappings:\n"
	        "  - name: example.com/gpu\n"
	        "    deviceClassNames: [gpu.example.com, big-gpu.example.com]\n"
	        "  - name: 'example.com/nic'\n"
	        "    deviceClassNames:\n"
	        "    - nic.example.com\n");
	assert_int_equal(cfg->dra_gate, 0);
	assert_int_equal(cfg->n_mappings, 2);
	assert_string_equal(tau_kueue_config_mapping_for(cfg, "big-gpu.example.com")->name,
	                    "example.com/gpu");
	assert_string_equal(tau_kueue_config_mapping_for(cfg, "nic.example.com")->name,
	                    "example.com/nic");
	tau_kueue_config_free(cfg);
	/* JSON is YAML; a Configuration without DRA parts is empty, the gate unset */
	cfg = parse_ok(
	        "{\"apiVersion\":\"config.kueue.x-k8s.io/v1beta2\",\"kind\":\"Configuration\","
	        "\"resources\":{\"deviceClassMappings\":[{\"name\":\"a/b\","
	        "\"deviceClassNames\":[\"c\"]}]}}");
	assert_int_equal(cfg->dra_gate, -1);
	assert_string_equal(cfg->mappings[0].name, "a/b");
	tau_kueue_config_free(cfg);
	cfg = parse_ok("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
	               "resources:\n  deviceClassMappings: []\n");
	assert_int_equal(cfg->n_mappings, 0);
	assert_int_equal(cfg->dra_gate, -1);
	assert_null(tau_kueue_config_mapping_for(cfg, "gpu.nvidia.com"));
	tau_kueue_config_free(cfg);
	cfg = parse_ok("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n");
	assert_int_equal(cfg->n_mappings, 0);
	tau_kueue_config_free(cfg);
}

static void refusals(void **state)
{
	(void)state;
	expect_refused("", "the document is not a map");
	expect_refused("- a\n- b\n", "the document is not a map");
	expect_refused("key: [unclosed\n", "invalid YAML at line");
	expect_refused("apiVersion: v1\nkind: ConfigMap\n", "kind must be Configuration");
	expect_refused("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Configuration\n",
	               "apiVersion must be config.kueue.x-k8s.io/v1beta1 or");
#define HEAD "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
	expect_refused(HEAD "featureGates: [DynamicResourceAllocation]\n",
	               "featureGates must be a map");
	expect_refused(HEAD "featureGates: {DynamicResourceAllocation: \"true\"}\n",
	               "featureGates.DynamicResourceAllocation must be true or false");
	expect_refused(HEAD "featureGates: {DynamicResourceAllocation: yes}\n",
	               "featureGates.DynamicResourceAllocation must be true or false");
	expect_refused(HEAD "resources: [a]\n", "resources must be a map");
	expect_refused(HEAD "resources: {deviceClassMappings: {name: a}}\n",
	               "resources.deviceClassMappings must be a list");
	expect_refused(HEAD "resources: {deviceClassMappings: [a]}\n",
	               "resources.deviceClassMappings[0] must be a map");
	expect_refused(HEAD "resources: {deviceClassMappings: [{deviceClassNames: [c]}]}\n",
	               "resources.deviceClassMappings[0].name must be a string");
	expect_refused(HEAD
	               "resources: {deviceClassMappings: [{name: '', deviceClassNames: [c]}]}\n",
	               "resources.deviceClassMappings[0].name must not be empty");
	expect_refused(HEAD "resources: {deviceClassMappings: [{name: a/b, deviceClassNames: [c]},"
	                    " {name: x/y}]}\n",
	               "resources.deviceClassMappings[1].deviceClassNames must list at least one "
	               "DeviceClass");
	expect_refused(HEAD
	               "resources: {deviceClassMappings: [{name: a/b, deviceClassNames: []}]}\n",
	               "resources.deviceClassMappings[0].deviceClassNames must list at least one");
	expect_refused(HEAD
	               "resources: {deviceClassMappings: [{name: a/b, deviceClassNames: [[c]]}]}\n",
	               "resources.deviceClassMappings[0].deviceClassNames[0] must be a string");
	expect_refused(
	        HEAD "resources: {deviceClassMappings: [{name: a/b, deviceClassNames: [c]},"
	             " {name: x/y, deviceClassNames: [d, c]}]}\n",
	        "DeviceClass c is listed twice in resources.deviceClassMappings (a/b and x/y)");
	expect_refused(
	        HEAD "resources: {deviceClassMappings: [{name: a/b, deviceClassNames: [c, c]}]}\n",
	        "DeviceClass c is listed twice in resources.deviceClassMappings (a/b and a/b)");
#undef HEAD
}

static void limits(void **state)
{
	static const char head[] =
	        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
	        "resources:\n  deviceClassMappings:\n";
	size_t cap = sizeof(head) + (TAU_KUEUE_DRA_MAPPINGS_MAX + 1) * 64;
	char *doc = malloc(cap);
	size_t off;
	tau_kueue_config *cfg = NULL;

	(void)state;
	assert_non_null(doc);
	off = (size_t)snprintf(doc, cap, "%s", head);
	for (unsigned i = 0; i <= TAU_KUEUE_DRA_MAPPINGS_MAX; i++)
		off += (size_t)snprintf(doc + off, cap - off,
		                        "  - {name: r/%u, deviceClassNames: [c%u]}\n", i, i);
	expect_refused(doc, "resources.deviceClassMappings has 257 entries, more than 256");
	/* exactly the limit is read */
	off = strlen(head);
	for (unsigned i = 0; i < TAU_KUEUE_DRA_MAPPINGS_MAX; i++)
		off += (size_t)snprintf(doc + off, cap - off,
		                        "  - {name: r/%u, deviceClassNames: [c%u]}\n", i, i);
	doc[off] = '\0';
	cfg = parse_ok(doc);
	assert_int_equal(cfg->n_mappings, TAU_KUEUE_DRA_MAPPINGS_MAX);
	assert_string_equal(tau_kueue_config_mapping_for(cfg, "c255")->name, "r/255");
	tau_kueue_config_free(cfg);
	cfg = NULL;
	assert_int_equal(tau_kueue_config_parse(&cfg, doc, TAU_KUEUE_CONFIG_MAX_BYTES + 1),
	                 -TAU_ETOOBIG);
	assert_null(cfg);
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(fixture_configmap),
	        cmocka_unit_test(several_mappings_and_json),
	        cmocka_unit_test(refusals),
	        cmocka_unit_test(limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
