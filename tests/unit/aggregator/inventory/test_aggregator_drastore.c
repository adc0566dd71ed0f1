/* Unit tests of the DRA store (inventory/drastore.h) and of merging a node's DRA devices into
 * the facts the pool counts (tau_dra_merge_facts): classes changed or deleted, Kueue's mapping
 * changed or unreadable, refused objects, and a DRA-only node counted exactly by the pool. */
#include "dra_fixture.h"
#include "inventory/drastore.h"
#include "inventory/nodestore.h"
#include "inventory/pool.h"
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

static cJSON *parse(const char *text)
{
	cJSON *j = NULL;

	if (tau_json_parse(&j, text, strlen(text), 0) != 0)
		fail_msg("test JSON: %s", tau_error_last()->msg);
	return j;
}

static int put_class(tau_dra_store *s, const char *attr, const char *value)
{
	cJSON *j = dra_fixture_gpu_class(attr, value);
	int rc = tau_dra_store_class_upsert(s, j);

	cJSON_Delete(j);
	return rc;
}

/* A slice of `n` GPUs on `node`; `gen` < 0 writes a negative generation (refused). */
static int put_slice(tau_dra_store *s, const char *node, int n, long gen)
{
	cJSON *j = dra_fixture_gpu_slice(node, n, gen);
	int rc = tau_dra_store_slice_upsert(s, j);

	cJSON_Delete(j);
	return rc;
}

/* "resource=count" of `node` in the store's view, "-" when it has nothing. */
static const char *counted(tau_dra_store *s, const char *node)
{
	static char buf[256];
	const tau_dra_view *v = NULL;
	const tau_dra_node *n;
	size_t len = 0;

	assert_int_equal(tau_dra_store_view(s, &v), 0);
	n = tau_dra_view_node(v, node);
	if (n == NULL || n->n_resources == 0)
		return "-";
	buf[0] = '\0';
	for (size_t i = 0; i < n->n_resources; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s=%u", i > 0 ? "," : "",
		                        n->resources[i].name, n->resources[i].devices);
	return buf;
}

static void test_class_changed_or_deleted(void **state)
{
	tau_dra_store *s = NULL;
	uint64_t g;

	(void)state;
	assert_int_equal(tau_dra_store_new(&s), 0);
	assert_int_equal(put_slice(s, "n1", 8, 1), 0);
	assert_string_equal(counted(s, "n1"), "-"); /* no class yet */
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_string_equal(counted(s, "n1"), "nvidia.com/gpu=8");
	/* the class now selects MIG devices only: the GPUs no longer count */
	g = tau_dra_store_generation(s);
	assert_int_equal(put_class(s, "type", "mig"), 0);
	assert_true(tau_dra_store_generation(s) > g);
	assert_string_equal(counted(s, "n1"), "-");
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_string_equal(counted(s, "n1"), "nvidia.com/gpu=8");
	/* deleted: nothing */
	assert_int_equal(tau_dra_store_class_delete(s, "gpu.nvidia.com"), 0);
	assert_string_equal(counted(s, "n1"), "-");
	assert_int_equal(tau_dra_store_class_delete(s, "gpu.nvidia.com"), -TAU_ENOTFOUND);
	/* the slice replaced by a smaller one, then deleted */
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(put_slice(s, "n1", 4, 2), 0);
	assert_string_equal(counted(s, "n1"), "nvidia.com/gpu=4");
	assert_int_equal(tau_dra_store_slice_delete(s, "n1-gpu"), 0);
	assert_string_equal(counted(s, "n1"), "-");
	tau_dra_store_free(s);
}

static void test_refused_objects_count_nothing(void **state)
{
	tau_dra_store *s = NULL;
	cJSON *j;

	(void)state;
	assert_int_equal(tau_dra_store_new(&s), 0);
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(put_slice(s, "n1", 8, 1), 0);
	assert_string_equal(counted(s, "n1"), "nvidia.com/gpu=8");
	/* a version of the slice the API would refuse replaces it by nothing */
	assert_int_equal(put_slice(s, "n1", 8, -1), -TAU_EINVAL);
	assert_string_equal(counted(s, "n1"), "-");
	assert_int_equal(tau_dra_store_refused_count(s), 1);
	assert_string_equal(tau_dra_store_refused_at(s, 0),
	                    "ResourceSlice n1-gpu: spec.pool.generation: Invalid value: must be "
	                    "greater than or equal to zero");
	/* good again: counted, the refusal forgotten */
	assert_int_equal(put_slice(s, "n1", 8, 2), 0);
	assert_string_equal(counted(s, "n1"), "nvidia.com/gpu=8");
	assert_int_equal(tau_dra_store_refused_count(s), 0);
	/* a class that does not read is dropped too */
	j = parse("{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"extendedResourceName\":"
	          "\"gpu\"}}");
	assert_int_equal(tau_dra_store_class_upsert(s, j), -TAU_EINVAL);
	cJSON_Delete(j);
	assert_string_equal(counted(s, "n1"), "-");
	assert_non_null(strstr(tau_dra_store_refused_at(s, 0), "DeviceClass gpu.nvidia.com: "
	                                                       "spec.extendedResourceName"));
	tau_dra_store_free(s);
}

static void test_kueue_mapping_changed_or_unreadable(void **state)
{
	tau_dra_store *s = NULL;
	char *classes[] = {(char *)"gpu.nvidia.com"};
	tau_kueue_dra_mapping m[] = {{.name = (char *)"example.com/gpu",
	                              .device_classes = classes,
	                              .n_device_classes = 1}};

	(void)state;
	assert_int_equal(tau_dra_store_new(&s), 0);
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(put_slice(s, "n1", 8, 1), 0);
	assert_int_equal(tau_dra_store_set_mappings(s, m, 1, NULL), 0);
	assert_string_equal(counted(s, "n1"), "example.com/gpu=8");
	/* unreadable: no class counts (the name Kueue charges is unknown) */
	assert_int_equal(tau_dra_store_set_mappings(s, NULL, 0, "invalid YAML at line 3"), 0);
	assert_string_equal(counted(s, "n1"), "-");
	assert_string_equal(tau_dra_store_kueue_error(s), "invalid YAML at line 3");
	/* no mappings: the class's extendedResourceName */
	assert_int_equal(tau_dra_store_set_mappings(s, NULL, 0, NULL), 0);
	assert_null(tau_dra_store_kueue_error(s));
	assert_string_equal(counted(s, "n1"), "nvidia.com/gpu=8");
	tau_dra_store_free(s);
}

static void test_dra_only_node_counted_exactly_by_the_pool(void **state)
{
	tau_dra_store *s = NULL;
	const tau_dra_view *v = NULL;
	char *keys[] = {(char *)"kubernetes.io/os", (char *)TAU_GPU_CLASS_LABEL};
	char *values[] = {(char *)"linux", (char *)"h100"};
	tau_node_resource res[2];
	tau_node_facts node = {.name = (char *)"n1",
	                       .os = (char *)"linux",
	                       .gpu_class = (char *)"h100",
	                       .label_keys = keys,
	                       .label_values = values,
	                       .n_labels = 2,
	                       .ready = true,
	                       .schedulable = true,
	                       .allocatable = res,
	                       .n_allocatable = 2};
	tau_node_facts merged = {0};
	tau_pool *pool = NULL;
	const tau_pool_flavor *f;
	char buf[64];
	size_t left_out = 9;

	(void)state;
	res[0].name = (char *)"cpu";
	res[1].name = (char *)"nvidia.com/gpu"; /* written as 0, as a node without the plugin */
	assert_int_equal(tau_quantity_parse_str(&res[0].value, "94940m"), 0);
	assert_int_equal(tau_quantity_parse_str(&res[1].value, "0"), 0);
	assert_int_equal(tau_dra_store_new(&s), 0);
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(put_slice(s, "n1", 8, 1), 0);
	assert_int_equal(tau_dra_store_view(s, &v), 0);
	assert_int_equal(tau_dra_merge_facts(&merged, &node, tau_dra_view_node(v, "n1"), &left_out),
	                 0);
	assert_int_equal(left_out, 0);
	assert_int_equal(merged.n_allocatable, 2);
	assert_string_equal(merged.allocatable[1].name, "nvidia.com/gpu");
	assert_int_equal(tau_node_facts_validate(&merged), 0);
	/* the pool sums it like any allocatable resource */
	assert_int_equal(tau_pool_new(&pool), 0);
	assert_int_equal(tau_pool_upsert_node(pool, &merged), 0);
	assert_int_equal(tau_pool_flavor_count(pool), 1);
	f = tau_pool_flavor_at(pool, 0);
	assert_string_equal(f->name, "h100");
	assert_int_equal(f->n_resources, 2);
	assert_string_equal(f->resources[1].name, "nvidia.com/gpu");
	assert_int_equal(tau_pool_sum_format(buf, sizeof(buf), &f->resources[1]), 0);
	assert_string_equal(buf, "8");
	tau_pool_free(pool);
	tau_node_facts_clear(&merged);
	/* a node that advertises the GPUs itself: allocatable counts, DRA is left out */
	assert_int_equal(tau_quantity_parse_str(&res[1].value, "4"), 0);
	assert_int_equal(tau_dra_merge_facts(&merged, &node, tau_dra_view_node(v, "n1"), &left_out),
	                 0);
	assert_int_equal(left_out, 1);
	assert_int_equal(merged.n_allocatable, 2);
	assert_int_equal(tau_quantity_format(buf, sizeof(buf), &merged.allocatable[1].value), 0);
	assert_string_equal(buf, "4");
	tau_node_facts_clear(&merged);
	/* no DRA devices: a plain copy */
	assert_int_equal(tau_dra_merge_facts(&merged, &node, NULL, NULL), 0);
	assert_true(tau_node_facts_equal(&merged, &node));
	tau_node_facts_clear(&merged);
	tau_dra_store_free(s);
}

/* "resource=sum,..." of the pool's only flavor, "" when it has none. */
static const char *pool_sums(const tau_pool *pool)
{
	static char buf[256];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < tau_pool_flavor_count(pool); i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(pool, i);

		for (size_t j = 0; j < f->n_resources; j++) {
			char q[64];

			assert_int_equal(tau_pool_sum_format(q, sizeof(q), &f->resources[j]), 0);
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s/%s=%s",
			                        len > 0 ? "," : "", f->name, f->resources[j].name,
			                        q);
		}
	}
	return buf;
}

static void test_node_store_counts_dra_devices(void **state)
{
	tau_nodestore *ns = NULL;
	tau_dra_store *s = NULL;
	char *keys[] = {(char *)"kubernetes.io/os", (char *)TAU_GPU_CLASS_LABEL};
	char *values[] = {(char *)"linux", (char *)"h100"};
	tau_node_resource res[1];
	tau_node_facts node = {.name = (char *)"n1",
	                       .os = (char *)"linux",
	                       .gpu_class = (char *)"h100",
	                       .label_keys = keys,
	                       .label_values = values,
	                       .n_labels = 2,
	                       .ready = true,
	                       .schedulable = true,
	                       .allocatable = res,
	                       .n_allocatable = 1};

	(void)state;
	res[0].name = (char *)"cpu";
	assert_int_equal(tau_quantity_parse_str(&res[0].value, "96"), 0);
	assert_int_equal(tau_nodestore_new(&ns, 0, 0), 0);
	assert_int_equal(tau_dra_store_new(&s), 0);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	tau_nodestore_api_synced(ns);
	tau_nodestore_tick(ns, 1); /* no agents in this test: count from the API */
	assert_int_equal(tau_nodestore_api_upsert(ns, &node), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "h100/cpu=96");
	/* the driver publishes 8 GPUs and the class appears: the pool has them */
	assert_int_equal(put_slice(s, "n1", 8, 1), 0);
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "h100/cpu=96,h100/nvidia.com/gpu=8");
	/* a Node update keeps them */
	assert_int_equal(tau_quantity_parse_str(&res[0].value, "95"), 0);
	assert_int_equal(tau_nodestore_api_upsert(ns, &node), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "h100/cpu=95,h100/nvidia.com/gpu=8");
	/* a generation in flight: nothing of the pool counts */
	{
		char text[1024];
		cJSON *j;

		snprintf(text, sizeof(text),
		         "{\"metadata\":{\"name\":\"n1-gpu-2\"},\"spec\":{\"driver\":"
		         "\"gpu.nvidia.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\","
		         "\"generation\":2,\"resourceSliceCount\":2},\"devices\":[]}}");
		j = parse(text);
		assert_int_equal(tau_dra_store_slice_upsert(s, j), 0);
		cJSON_Delete(j);
	}
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "h100/cpu=95");
	assert_int_equal(tau_dra_store_slice_delete(s, "n1-gpu-2"), 0);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "h100/cpu=95,h100/nvidia.com/gpu=8");
	/* the class deleted: gone again */
	assert_int_equal(tau_dra_store_class_delete(s, "gpu.nvidia.com"), 0);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "h100/cpu=95");
	/* the node leaves while it has DRA devices: nothing stays behind */
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_int_equal(tau_nodestore_api_delete(ns, "n1"), 0);
	assert_string_equal(pool_sums(tau_nodestore_pool(ns)), "");
	tau_nodestore_free(ns);
	tau_dra_store_free(s);
}

/* "name:pass|FAIL:detail" of each dra.* rule ExplainNode gives for `node`, one per line. */
static const char *explain_dra(const tau_nodestore *ns, const char *node, bool *counted)
{
	static char buf[2048];
	Tau__Inventory__V1__ExplainNodeResponse *resp = NULL;
	size_t len = 0;

	assert_int_equal(tau_query_explain(&resp, ns, node), 0);
	*counted = resp->counted;
	buf[0] = '\0';
	for (size_t i = 0; i < resp->n_rules; i++)
		if (strncmp(resp->rules[i]->name, "dra.", 4) == 0)
			len += (size_t)snprintf(
			        buf + len, sizeof(buf) - len, "%s:%s:%s\n", resp->rules[i]->name,
			        resp->rules[i]->pass ? "pass" : "FAIL", resp->rules[i]->detail);
	protobuf_c_message_free_unpacked(&resp->base, NULL);
	return buf;
}

static void test_explain_says_what_dra_counts(void **state)
{
	tau_nodestore *ns = NULL;
	tau_dra_store *s = NULL;
	char *keys[] = {(char *)"kubernetes.io/os", (char *)TAU_GPU_CLASS_LABEL};
	char *values[] = {(char *)"linux", (char *)"h100"};
	tau_node_resource res[1];
	tau_node_facts node = {.name = (char *)"n1",
	                       .os = (char *)"linux",
	                       .gpu_class = (char *)"h100",
	                       .label_keys = keys,
	                       .label_values = values,
	                       .n_labels = 2,
	                       .ready = true,
	                       .schedulable = true,
	                       .allocatable = res,
	                       .n_allocatable = 1};
	bool counted = false;
	cJSON *j;

	(void)state;
	res[0].name = (char *)"cpu";
	assert_int_equal(tau_quantity_parse_str(&res[0].value, "96"), 0);
	assert_int_equal(tau_nodestore_new(&ns, 0, 0), 0);
	assert_int_equal(tau_dra_store_new(&s), 0);
	tau_nodestore_api_synced(ns);
	tau_nodestore_tick(ns, 1);
	assert_int_equal(tau_nodestore_api_upsert(ns, &node), 0);
	/* no DRA store: no dra.* rule */
	assert_string_equal(explain_dra(ns, "n1", &counted), "");
	assert_true(counted);
	assert_int_equal(put_slice(s, "n1", 8, 1), 0);
	assert_int_equal(put_class(s, "type", "gpu"), 0);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_string_equal(explain_dra(ns, "n1", &counted), "dra.devices:pass:8 nvidia.com/gpu\n");
	/* a generation in flight: the devices are out, the node still counts */
	j = parse("{\"metadata\":{\"name\":\"n1-gpu-2\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
	          "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":2,"
	          "\"resourceSliceCount\":2},\"devices\":[{\"name\":\"gpu-0\"}]}}");
	assert_int_equal(tau_dra_store_slice_upsert(s, j), 0);
	cJSON_Delete(j);
	assert_int_equal(tau_nodestore_set_dra(ns, s), 0);
	assert_string_equal(
	        explain_dra(ns, "n1", &counted),
	        "dra.devices:pass:no DRA device of this node counts\n"
	        "dra.pool-complete:FAIL:pool n1 of driver gpu.nvidia.com: 1 of 2 slices "
	        "of generation 2 seen (an update in flight): its devices do not count\n");
	assert_true(counted);
	tau_nodestore_free(ns);
	tau_dra_store_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_class_changed_or_deleted),
	        cmocka_unit_test(test_refused_objects_count_nothing),
	        cmocka_unit_test(test_kueue_mapping_changed_or_unreadable),
	        cmocka_unit_test(test_dra_only_node_counted_exactly_by_the_pool),
	        cmocka_unit_test(test_node_store_counts_dra_devices),
	        cmocka_unit_test(test_explain_says_what_dra_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
