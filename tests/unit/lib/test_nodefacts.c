/* Unit tests of the Node parser shared by the agent and the aggregator. */
#include "tau/error.h"
#include "tau/json.h"
#include "tau/nodefacts.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *load_fixture(const char *name)
{
	char path[1024];
	char *buf;
	long len;
	FILE *f;
	cJSON *root = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/kube/%s", TAU_SOURCE_DIR, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	assert_int_equal(tau_json_parse(&root, buf, (size_t)len, 0), 0);
	free(buf);
	return root;
}

static cJSON *parse(const char *text)
{
	cJSON *root = NULL;

	assert_int_equal(tau_json_parse(&root, text, strlen(text), 0), 0);
	return root;
}

static void assert_alloc(const tau_node_facts *f, size_t i, const char *name, const char *qty)
{
	char buf[TAU_QUANTITY_STR_MAX];

	assert_true(i < f->n_allocatable);
	assert_string_equal(f->allocatable[i].name, name);
	assert_int_equal(tau_quantity_format(buf, sizeof(buf), &f->allocatable[i].value), 0);
	assert_string_equal(buf, qty);
}

static void test_nd_h100_fixture(void **state)
{
	cJSON *node = load_fixture("node-nd-h100-v5.json");
	tau_node_facts f = {0};

	(void)state;
	assert_int_equal(tau_node_facts_from_json(&f, node), 0);
	assert_string_equal(f.name, "aks-ndh100-35817294-vmss000000");
	assert_string_equal(f.gpu_class, "h100-ib");
	assert_string_equal(f.os, "linux");
	assert_non_null(f.provider_id);
	assert_true(strncmp(f.provider_id, "azure:///subscriptions/", 23) == 0);
	assert_true(f.ready);
	assert_true(f.schedulable);
	assert_false(f.deleting);
	/* every allocatable entry, sorted, canonical strings unchanged */
	assert_int_equal(f.n_allocatable, 8);
	assert_alloc(&f, 0, "cpu", "94940m");
	assert_alloc(&f, 1, "ephemeral-storage", "119703055367");
	assert_alloc(&f, 2, "hugepages-1Gi", "0");
	assert_alloc(&f, 3, "hugepages-2Mi", "0");
	assert_alloc(&f, 4, "memory", "1977700032Ki");
	assert_alloc(&f, 5, "nvidia.com/gpu", "8");
	assert_alloc(&f, 6, "pods", "110");
	assert_alloc(&f, 7, "rdma/ib", "8");
	for (size_t i = 1; i < f.n_labels; i++)
		assert_true(strcmp(f.label_keys[i - 1], f.label_keys[i]) < 0);
	tau_node_facts_clear(&f);
	cJSON_Delete(node);
}

static void test_cordoned_mig_and_flex_fixtures(void **state)
{
	cJSON *mig = load_fixture("node-nc-a100-v4-mig.json");
	cJSON *flex = load_fixture("node-flex-h100.json");
	tau_node_facts f = {0}, copy = {0};
	tau_quantity saved;

	(void)state;
	assert_int_equal(tau_node_facts_from_json(&f, mig), 0);
	assert_string_equal(f.gpu_class, "a100-mig");
	assert_false(f.schedulable);
	assert_true(f.ready);
	assert_alloc(&f, 4, "memory", "227205812Ki");
	assert_alloc(&f, 5, "nvidia.com/mig-1g.10gb", "7");
	tau_node_facts_clear(&f);

	assert_int_equal(tau_node_facts_from_json(&f, flex), 0);
	assert_string_equal(f.gpu_class, "h100-flex");
	assert_null(f.provider_id);
	assert_string_equal(tau_node_facts_label(&f, "kubernetes.azure.com/nodepool-type"),
	                    "FlexNodes");
	assert_int_equal(tau_node_facts_copy(&copy, &f), 0);
	assert_true(tau_node_facts_equal(&copy, &f));
	copy.ready = !copy.ready;
	assert_false(tau_node_facts_equal(&copy, &f));
	copy.ready = !copy.ready;
	copy.label_values[0][0] ^= 1;
	assert_false(tau_node_facts_equal(&copy, &f));
	copy.label_values[0][0] ^= 1;
	saved = copy.allocatable[0].value;
	assert_int_equal(tau_quantity_parse_str(&copy.allocatable[0].value, "123457"), 0);
	assert_false(tau_node_facts_equal(&copy, &f));
	copy.allocatable[0].value = saved;
	free(copy.provider_id);
	copy.provider_id = strdup("azure:///x");
	assert_false(tau_node_facts_equal(&copy, &f));
	free(copy.provider_id);
	copy.provider_id = NULL;
	assert_true(tau_node_facts_equal(&copy, &f));
	tau_node_facts_clear(&f);
	assert_string_equal(copy.name, "edge-gpu-01");
	assert_alloc(&copy, 8, "rdma/rdma_shared_device_a", "63");
	tau_node_facts_clear(&copy);
	tau_node_facts_clear(NULL);
	cJSON_Delete(mig);
	cJSON_Delete(flex);
}

static void test_states(void **state)
{
	cJSON *n = parse(
	        "{\"metadata\":{\"name\":\"n1\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
	        "\"status\":{\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"True\"},"
	        "{\"type\":\"Ready\",\"status\":\"Unknown\"}],"
	        "\"nodeInfo\":{\"operatingSystem\":\"windows\"}}}");
	tau_node_facts f = {0};

	(void)state;
	assert_int_equal(tau_node_facts_from_json(&f, n), 0);
	assert_true(f.deleting);
	assert_false(f.ready);
	assert_true(f.schedulable);
	assert_null(f.gpu_class);
	assert_string_equal(f.os, "windows");
	assert_int_equal(f.n_allocatable, 0);
	tau_node_facts_clear(&f);
	cJSON_Delete(n);
}

/* Every malformed Node is refused with a message naming the field; out stays zeroed. */
static void test_malformed(void **state)
{
	static const struct {
		const char *json;
		int code;
		const char *needle;
	} rows[] = {
	        {"[]", -TAU_EINVAL, "object"},
	        {"{}", -TAU_ENOTFOUND, "metadata.name"},
	        {"{\"metadata\":{\"name\":5}}", -TAU_ETYPE, "metadata.name"},
	        {"{\"metadata\":{\"name\":\"Bad_Name\"}}", -TAU_EINVAL, "Bad_Name"},
	        {"{\"metadata\":{\"name\":\"n\",\"labels\":[]}}", -TAU_ETYPE, "metadata.labels"},
	        {"{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":1}}}", -TAU_EINVAL, "labels[a]"},
	        {"{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"bad value\"}}}", -TAU_EINVAL,
	         "labels[a]"},
	        {"{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"x\",\"a\":\"y\"}}}",
	         -TAU_EINVAL, "twice"},
	        {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"cpu\":\"1.1.1\"}}}",
	         -TAU_EINVAL, "allocatable[cpu]"},
	        {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"cpu\":4}}}",
	         -TAU_EINVAL, "allocatable[cpu]"},
	        {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"cpu\":\"-4\"}}}",
	         -TAU_EINVAL, "negative"},
	        {"{\"metadata\":{\"name\":\"n\"},\"status\":{\"allocatable\":{\"bad "
	         "name!\":\"4\"}}}",
	         -TAU_EINVAL, "bad name!"},
	        {"{\"metadata\":{\"name\":\"n\"},\"spec\":{\"unschedulable\":\"yes\"}}", -TAU_ETYPE,
	         "spec.unschedulable"},
	        {"{\"metadata\":{\"name\":\"n\",\"uid\":7}}", -TAU_ETYPE, "metadata.uid"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		cJSON *n = parse(rows[i].json);
		tau_node_facts f = {0};

		assert_int_equal(tau_node_facts_from_json(&f, n), rows[i].code);
		assert_non_null(strstr(tau_error_last()->msg, rows[i].needle));
		assert_null(f.name);
		assert_int_equal(f.n_labels, 0);
		cJSON_Delete(n);
	}
}

static void test_too_many_labels(void **state)
{
	cJSON *n = parse("{\"metadata\":{\"name\":\"n\",\"labels\":{}}}");
	cJSON *labels = cJSON_GetObjectItem(cJSON_GetObjectItem(n, "metadata"), "labels");
	tau_node_facts f = {0};

	(void)state;
	for (int i = 0; i <= TAU_NODE_MAX_LABELS; i++) {
		char key[32];

		snprintf(key, sizeof(key), "k%d", i);
		cJSON_AddStringToObject(labels, key, "v");
	}
	assert_int_equal(tau_node_facts_from_json(&f, n), -TAU_ETOOBIG);
	cJSON_Delete(n);
}

/* Pruning keeps exactly what the parser reads: same facts, much smaller object. */
static void test_prune_keeps_facts(void **state)
{
	static const char *const names[] = {"node-nd-h100-v5.json", "node-nc-a100-v4-mig.json",
	                                    "node-flex-h100.json"};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		cJSON *node = load_fixture(names[i]);
		tau_node_facts a = {0}, b = {0};
		char *before = cJSON_PrintUnformatted(node);
		char *after;

		assert_int_equal(tau_node_facts_from_json(&a, node), 0);
		tau_node_facts_prune(node);
		after = cJSON_PrintUnformatted(node);
		assert_true(strlen(after) < strlen(before));
		assert_null(tau_json_find(node, "metadata.annotations"));
		assert_null(tau_json_find(node, "status.images"));
		assert_int_equal(tau_node_facts_from_json(&b, node), 0);
		assert_string_equal(a.name, b.name);
		assert_string_equal(a.resource_version, b.resource_version);
		assert_string_equal(a.os, b.os);
		assert_int_equal(a.ready, b.ready);
		assert_int_equal(a.schedulable, b.schedulable);
		assert_int_equal(a.deleting, b.deleting);
		assert_int_equal(a.n_labels, b.n_labels);
		assert_int_equal(a.n_allocatable, b.n_allocatable);
		for (size_t r = 0; r < a.n_allocatable; r++)
			assert_int_equal(
			        tau_quantity_cmp(&a.allocatable[r].value, &b.allocatable[r].value),
			        0);
		assert_true((a.provider_id == NULL) == (b.provider_id == NULL));
		tau_node_facts_clear(&a);
		tau_node_facts_clear(&b);
		free(before);
		free(after);
		cJSON_Delete(node);
	}
	tau_node_facts_prune(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_nd_h100_fixture),
	        cmocka_unit_test(test_cordoned_mig_and_flex_fixtures),
	        cmocka_unit_test(test_states),
	        cmocka_unit_test(test_malformed),
	        cmocka_unit_test(test_too_many_labels),
	        cmocka_unit_test(test_prune_keeps_facts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
