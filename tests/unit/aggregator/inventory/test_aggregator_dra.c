/* Unit tests of DRA counting (inventory/dra.h, dra_slice.h, dra_class.h): slices read as the
 * API validates them, pool completeness and generations in flight, class -> quota resource
 * mapping (extendedResourceName, Kueue's deviceClassMappings), unusable classes, counting once
 * (overlaps, partitionable devices, allocatable), and malformed objects. */
#include "inventory/dra.h"
#include "tau/error.h"
#include "tau/file.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NV "gpu.nvidia.com"

static const char *const gpu_class =
        "{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.nvidia.com' && "
        "device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}],"
        "\"extendedResourceName\":\"nvidia.com/gpu\"}}";

static const char *const mig_class =
        "{\"metadata\":{\"name\":\"mig.nvidia.com\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.nvidia.com' && "
        "device.attributes['gpu.nvidia.com'].type == 'mig'\"}}],"
        "\"extendedResourceName\":\"nvidia.com/mig-1g.10gb\"}}";

static cJSON *parse(const char *text)
{
	cJSON *j = NULL;

	if (tau_json_parse(&j, text, strlen(text), 0) != 0)
		fail_msg("test JSON does not parse: %s", tau_error_last()->msg);
	return j;
}

/* Devices "gpu-0".."gpu-<n-1>" of `type` as JSON list items (no brackets). */
static void devices_json(char *out, size_t cap, int first, int n, const char *type,
                         const char *counter_set)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = first; i < first + n; i++) {
		char counters[128] = "";

		if (counter_set != NULL)
			snprintf(counters, sizeof(counters),
			         ",\"consumesCounters\":[{\"counterSet\":\"%s\",\"counters\":{}}]",
			         counter_set);
		len += (size_t)snprintf(
		        out + len, cap - len,
		        "%s{\"name\":\"%s-%d\",\"attributes\":{\"type\":{\"string\":"
		        "\"%s\"},\"productName\":{\"string\":\"NVIDIA H100 80GB "
		        "HBM3\"}},\"capacity\":{\"memory\":{\"value\":\"81559Mi\"}}%s}",
		        i > first ? "," : "", type, i, type, counters);
		assert_true(len < cap);
	}
}

static void slice_of(tau_dra_slice *out, const char *name, const char *pool, long gen, long count,
                     const char *node, const char *devices)
{
	char text[16384];
	cJSON *j;

	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"driver\":\"" NV "\",\"nodeName\":"
	         "\"%s\",\"pool\":{\"name\":\"%s\",\"generation\":%ld,\"resourceSliceCount\":%ld},"
	         "\"devices\":[%s]}}",
	         name, node, pool, gen, count, devices);
	j = parse(text);
	if (tau_dra_slice_from_json(out, j) != 0)
		fail_msg("slice %s: %s", name, tau_error_last()->msg);
	cJSON_Delete(j);
}

static void gpus_slice(tau_dra_slice *out, const char *name, const char *node, int first, int n,
                       long gen, long count)
{
	char devs[12000];

	devices_json(devs, sizeof(devs), first, n, "gpu", NULL);
	slice_of(out, name, node, gen, count, node, devs);
}

static void class_of(tau_dra_class *out, const char *text)
{
	cJSON *j = parse(text);

	if (tau_dra_class_from_json(out, j) != 0)
		fail_msg("class: %s", tau_error_last()->msg);
	cJSON_Delete(j);
}

/* "resource=count,..." of a node in the view, "" when it has none, "-" when absent. */
static const char *counts(const tau_dra_view *v, const char *node)
{
	static char buf[512];
	const tau_dra_node *n = tau_dra_view_node(v, node);
	size_t len = 0;

	if (n == NULL)
		return "-";
	buf[0] = '\0';
	for (size_t i = 0; i < n->n_resources; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s=%u", i > 0 ? "," : "",
		                        n->resources[i].name, n->resources[i].devices);
	return buf;
}

/* The first note of `rule` on `node`, or NULL. */
static const char *node_note(const tau_dra_view *v, const char *node, const char *rule)
{
	const tau_dra_node *n = tau_dra_view_node(v, node);

	for (size_t i = 0; n != NULL && i < n->n_notes; i++)
		if (strcmp(n->notes[i].rule, rule) == 0)
			return n->notes[i].detail;
	return NULL;
}

static void test_slice_reads_like_the_api(void **state)
{
	tau_dra_slice s = {0};

	(void)state;
	gpus_slice(&s, "n1-gpu", "n1", 0, 2, 3, 1);
	assert_string_equal(s.driver, NV);
	assert_string_equal(s.pool, "n1");
	assert_int_equal(s.scope, TAU_DRA_SCOPE_NODE);
	assert_string_equal(s.node_name, "n1");
	assert_int_equal(s.generation, 3);
	assert_int_equal(s.n_devices, 2);
	/* names without a domain take the driver's, sorted as CEL looks them up */
	assert_int_equal(s.devices[1].n_attributes, 2);
	assert_string_equal(s.devices[1].attributes[0].name, NV "/productName");
	assert_string_equal(s.devices[1].attributes[1].name, NV "/type");
	assert_string_equal(s.devices[1].capacity[0].name, NV "/memory");
	assert_null(s.devices[1].counter_set);
	tau_dra_slice_clear(&s);
}

/* A slice the API server refuses is refused here too, naming the field; nothing is kept. */
static void refused_slice(const char *spec, const char *why)
{
	char text[8192];
	tau_dra_slice s = {0};
	cJSON *j;
	int rc;

	snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"bad\"},\"spec\":%s}", spec);
	j = parse(text);
	rc = tau_dra_slice_from_json(&s, j);
	cJSON_Delete(j);
	if (rc >= 0)
		fail_msg("%s: accepted", spec);
	if (strstr(tau_error_last()->msg, why) == NULL ||
	    strstr(tau_error_last()->msg, "ResourceSlice bad") == NULL)
		fail_msg("%s: message %s lacks %s", spec, tau_error_last()->msg, why);
	assert_null(s.driver);
	assert_null(s.devices);
	assert_int_equal(s.n_devices, 0);
}

#define POOL "\"pool\":{\"name\":\"p\",\"generation\":1,\"resourceSliceCount\":1}"
#define DRV  "\"driver\":\"" NV "\""

static void test_malformed_slices_are_refused(void **state)
{
	char many[32768];
	size_t len = 0;

	(void)state;
	refused_slice("{" POOL ",\"nodeName\":\"n\"}", "spec.driver: Required value");
	refused_slice("{\"driver\":\"GPU.nvidia.com\"," POOL ",\"nodeName\":\"n\"}",
	              "spec.driver: Invalid value");
	refused_slice("{" DRV ",\"nodeName\":\"n\"}", "spec.pool.name: Required value");
	refused_slice("{" DRV ",\"pool\":{\"name\":\"p\",\"generation\":-1,"
	              "\"resourceSliceCount\":1},\"nodeName\":\"n\"}",
	              "must be greater than or equal to zero");
	refused_slice("{" DRV ",\"pool\":{\"name\":\"p\",\"generation\":1,"
	              "\"resourceSliceCount\":0},\"nodeName\":\"n\"}",
	              "must be greater than zero");
	refused_slice("{" DRV ",\"pool\":{\"name\":\"p\",\"resourceSliceCount\":1},"
	              "\"nodeName\":\"n\"}",
	              "spec.pool.generation: Required value");
	refused_slice("{" DRV "," POOL "}",
	              "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
	              "`perDeviceNodeSelection` is required");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"allNodes\":true}",
	              "but multiple fields are set");
	refused_slice("{" DRV "," POOL ",\"allNodes\":false}", "spec.allNodes: Invalid value");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"N_1\"}", "spec.nodeName: Invalid value");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{\"name\":\"a\"},"
	              "{\"name\":\"a\"}]}",
	              "spec.devices: Duplicate value: \"a\"");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{}]}",
	              "spec.devices[0]: name: Required value");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{\"name\":\"a\","
	              "\"attributes\":{\"t\":{\"string\":\"x\",\"int\":1}}}]}",
	              "attributes[t]: exactly one of int, bool, string or version");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{\"name\":\"a\","
	              "\"attributes\":{\"9t\":{\"int\":1}}}]}",
	              "must be a C identifier");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{\"name\":\"a\","
	              "\"attributes\":{\"t\":{\"string\":\"0123456789012345678901234567890123456789"
	              "01234567890123456789012345\"}}}]}",
	              "at most 64 bytes");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{\"name\":\"a\","
	              "\"capacity\":{\"memory\":{\"value\":\"-1Gi\"}}}]}",
	              "capacity[memory]: value: must not be negative");
	refused_slice("{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[{\"name\":\"a\","
	              "\"capacity\":{\"memory\":{\"value\":\"lots\"}}}]}",
	              "capacity[memory]");
	len = (size_t)snprintf(many, sizeof(many),
	                       "{" DRV "," POOL ",\"nodeName\":\"n\",\"devices\":[");
	for (int i = 0; i < 129; i++)
		len += (size_t)snprintf(many + len, sizeof(many) - len, "%s{\"name\":\"d%d\"}",
		                        i > 0 ? "," : "", i);
	snprintf(many + len, sizeof(many) - len, "]}");
	refused_slice(many, "must have at most 128 items");
}

static void test_pool_complete_only_with_every_slice_of_its_newest_generation(void **state)
{
	tau_dra_slice s[5] = {{0}};
	tau_dra_pool_state *p = NULL;
	size_t n = 0;

	(void)state;
	/* pool "n1" published as two slices of generation 1 */
	gpus_slice(&s[0], "n1-a", "n1", 0, 4, 1, 2);
	assert_int_equal(tau_dra_pools_assess(&p, &n, s, 1), 0);
	assert_int_equal(n, 1);
	assert_false(p[0].complete);
	assert_string_equal(p[0].reason, "pool n1 of driver " NV ": 1 of 2 slices of generation 1 "
	                                 "seen");
	free(p);
	gpus_slice(&s[1], "n1-b", "n1", 4, 4, 1, 2);
	assert_int_equal(tau_dra_pools_assess(&p, &n, s, 2), 0);
	assert_true(p[0].complete);
	assert_int_equal(p[0].seen, 2);
	assert_string_equal(p[0].reason, "");
	free(p);
	/* the driver starts generation 2: one new slice seen, the old ones still there */
	gpus_slice(&s[2], "n1-c", "n1", 0, 8, 2, 2);
	assert_int_equal(tau_dra_pools_assess(&p, &n, s, 3), 0);
	assert_false(p[0].complete);
	assert_int_equal(p[0].generation, 2);
	assert_int_equal(p[0].older, 2);
	assert_non_null(strstr(p[0].reason, "1 of 2 slices of generation 2 seen (an update in "
	                                    "flight)"));
	free(p);
	/* generation 2 whole (devices moved between its slices): complete, old ones ignored */
	tau_dra_slice_clear(&s[2]);
	gpus_slice(&s[2], "n1-c", "n1", 0, 6, 2, 2);
	gpus_slice(&s[3], "n1-d", "n1", 6, 2, 2, 2);
	assert_int_equal(tau_dra_pools_assess(&p, &n, s, 4), 0);
	assert_true(p[0].complete);
	assert_int_equal(p[0].seen, 2);
	free(p);
	/* slices of one generation that disagree on the count */
	gpus_slice(&s[4], "n1-e", "n1", 8, 1, 2, 3);
	assert_int_equal(tau_dra_pools_assess(&p, &n, s, 5), 0);
	assert_false(p[0].complete);
	assert_non_null(strstr(p[0].reason, "disagree on resourceSliceCount"));
	free(p);
	/* a device published twice in one generation */
	tau_dra_slice_clear(&s[3]);
	gpus_slice(&s[3], "n1-d", "n1", 5, 3, 2, 2);
	assert_int_equal(tau_dra_pools_assess(&p, &n, s, 4), 0);
	assert_false(p[0].complete);
	assert_non_null(strstr(p[0].reason, "device gpu-5 is published by two slices"));
	free(p);
	for (size_t i = 0; i < 5; i++)
		tau_dra_slice_clear(&s[i]);
}

/* Kueue's resources.deviceClassMappings as the DRA watch reads them (lent strings). */
static char *gpu_and_mig[] = {(char *)"gpu.nvidia.com", (char *)"mig.nvidia.com"};
static tau_kueue_dra_mapping kueue_gpus[] = {
        {.name = (char *)"example.com/gpus", .device_classes = gpu_and_mig, .n_device_classes = 2},
};

static void test_class_maps_the_way_kueue_counts(void **state)
{
	tau_dra_class gpu = {0}, plain = {0};
	const char *res = NULL;
	char note[320];

	(void)state;
	class_of(&gpu, gpu_class);
	class_of(&plain, "{\"metadata\":{\"name\":\"nic\"},\"spec\":{}}");
	assert_null(gpu.unusable);
	/* no Kueue mapping: the class's extendedResourceName */
	assert_int_equal(tau_dra_class_resource(&res, &gpu, NULL, 0, note, sizeof(note)),
	                 TAU_DRA_VIA_EXTENDED);
	assert_string_equal(res, "nvidia.com/gpu");
	assert_string_equal(note, "");
	/* Kueue's mapping wins, and explain says it overrides */
	assert_int_equal(tau_dra_class_resource(&res, &gpu, kueue_gpus, 1, note, sizeof(note)),
	                 TAU_DRA_VIA_KUEUE);
	assert_string_equal(res, "example.com/gpus");
	assert_string_equal(note, "class gpu.nvidia.com: counted as example.com/gpus, Kueue's "
	                          "deviceClassMappings, not as its extendedResourceName "
	                          "nvidia.com/gpu");
	/* neither: counts nothing */
	assert_int_equal(tau_dra_class_resource(&res, &plain, kueue_gpus, 1, note, sizeof(note)),
	                 TAU_DRA_VIA_NONE);
	assert_null(res);
	assert_non_null(strstr(note, "its devices count under no quota resource"));
	/* two mappings claim the class under different names: unusable */
	{
		static char *gpu_only[] = {(char *)"gpu.nvidia.com"};
		tau_kueue_dra_mapping two[] = {
		        {.name = (char *)"a.com/x",
		         .device_classes = gpu_only,
		         .n_device_classes = 1},
		        {.name = (char *)"a.com/y",
		         .device_classes = gpu_only,
		         .n_device_classes = 1},
		};

		assert_int_equal(tau_dra_class_resource(&res, &gpu, two, 2, note, sizeof(note)),
		                 TAU_DRA_VIA_CONFLICT);
		assert_null(res);
		assert_non_null(strstr(note, "under a.com/x and a.com/y"));
	}
	tau_dra_class_clear(&gpu);
	tau_dra_class_clear(&plain);
}

static void test_malformed_and_unusable_classes(void **state)
{
	tau_dra_class c = {0};
	cJSON *j;

	(void)state;
	j = parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"extendedResourceName\":\"gpu\"}}");
	assert_int_equal(tau_dra_class_from_json(&c, j), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "DeviceClass x: spec.extendedResourceName: "
	                                              "Invalid value"));
	assert_null(c.name);
	cJSON_Delete(j);
	j = parse("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"selectors\":[{\"cel\":{}}]}}");
	assert_int_equal(tau_dra_class_from_json(&c, j), -TAU_EINVAL);
	assert_non_null(
	        strstr(tau_error_last()->msg, "spec.selectors[0].cel.expression: Required"));
	cJSON_Delete(j);
	j = parse("{\"metadata\":{\"name\":\"X\"},\"spec\":{}}");
	assert_int_equal(tau_dra_class_from_json(&c, j), -TAU_EINVAL);
	cJSON_Delete(j);
	/* a selector outside the subset: the class is read, unusable, the expression quoted */
	class_of(&c,
	         "{\"metadata\":{\"name\":\"any-gpu\"},\"spec\":{\"extendedResourceName\":"
	         "\"nvidia.com/gpu\",\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
	         "'gpu.nvidia.com'\"}},{\"cel\":{\"expression\":\"device.driver == 'a' || "
	         "device.driver == 'b'\"}}]}}");
	assert_non_null(c.unusable);
	assert_string_equal(
	        c.unusable,
	        "spec.selectors[1]: selector \"device.driver == 'a' || device.driver == "
	        "'b'\" is outside the CEL subset the pool evaluates: disjunction (||) "
	        "is not read at offset 21");
	tau_dra_class_clear(&c);
}

static void test_dra_only_node_counts_exactly(void **state)
{
	tau_dra_class cls[1] = {{0}};
	tau_dra_slice s[2] = {{0}};
	tau_dra_view *v = NULL;

	(void)state;
	class_of(&cls[0], gpu_class);
	gpus_slice(&s[0], "n1-gpu", "n1", 0, 8, 1, 1);
	gpus_slice(&s[1], "n2-gpu", "n2", 0, 4, 5, 1);
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 2, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "nvidia.com/gpu=8");
	assert_string_equal(counts(v, "n2"), "nvidia.com/gpu=4");
	assert_string_equal(counts(v, "n3"), "-");
	assert_int_equal(tau_dra_view_node(v, "n1")->n_notes, 0);
	assert_int_equal(tau_dra_view_class_count(v), 1);
	assert_false(tau_dra_view_class_at(v, 0)->unusable);
	assert_int_equal(tau_dra_view_class_at(v, 0)->via, TAU_DRA_VIA_EXTENDED);
	tau_dra_view_free(v);
	for (size_t i = 0; i < 2; i++)
		tau_dra_slice_clear(&s[i]);
	tau_dra_class_clear(&cls[0]);
}

static void test_generation_in_flight_counts_nothing(void **state)
{
	tau_dra_class cls[1] = {{0}};
	tau_dra_slice s[3] = {{0}};
	tau_dra_view *v = NULL;

	(void)state;
	class_of(&cls[0], gpu_class);
	gpus_slice(&s[0], "n1-a", "n1", 0, 4, 1, 2);
	gpus_slice(&s[1], "n1-b", "n1", 4, 4, 1, 2);
	gpus_slice(&s[2], "n1-c", "n1", 0, 8, 2, 2);
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 3, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "");
	assert_string_equal(node_note(v, "n1", TAU_DRA_RULE_POOL_COMPLETE),
	                    "pool n1 of driver " NV ": 1 of 2 slices of generation 2 seen (an "
	                    "update in flight): its devices do not count");
	tau_dra_view_free(v);
	/* the old generation alone is whole: it counts */
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 2, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "nvidia.com/gpu=8");
	tau_dra_view_free(v);
	for (size_t i = 0; i < 3; i++)
		tau_dra_slice_clear(&s[i]);
	tau_dra_class_clear(&cls[0]);
}

static void test_unusable_class_counts_nothing(void **state)
{
	tau_dra_class cls[1] = {{0}};
	tau_dra_slice s[1] = {{0}};
	tau_dra_view *v = NULL;
	const tau_dra_class_state *st;

	(void)state;
	class_of(&cls[0], "{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{"
	                  "\"extendedResourceName\":\"nvidia.com/gpu\",\"selectors\":[{\"cel\":{"
	                  "\"expression\":\"device.attributes['gpu.nvidia.com'].productName."
	                  "startsWith('NVIDIA')\"}}]}}");
	gpus_slice(&s[0], "n1-gpu", "n1", 0, 8, 1, 1);
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 1, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "-");
	st = tau_dra_view_class_at(v, 0);
	assert_true(st->unusable);
	assert_null(st->resource);
	assert_non_null(strstr(st->note, "class gpu.nvidia.com: spec.selectors[0]: selector "
	                                 "\"device.attributes['gpu.nvidia.com'].productName."
	                                 "startsWith('NVIDIA')\" is outside the CEL subset"));
	tau_dra_view_free(v);
	tau_dra_slice_clear(&s[0]);
	tau_dra_class_clear(&cls[0]);
}

static void test_device_counts_once(void **state)
{
	tau_dra_class cls[2] = {{0}};
	tau_dra_slice s[1] = {{0}};
	tau_dra_view *v = NULL;

	(void)state;
	/* two classes select every H100: one maps to nvidia.com/gpu, "h100" to example.com/h100 */
	class_of(&cls[0], gpu_class);
	class_of(&cls[1], "{\"metadata\":{\"name\":\"h100\"},\"spec\":{\"extendedResourceName\":"
	                  "\"example.com/h100\",\"selectors\":[{\"cel\":{\"expression\":"
	                  "\"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 "
	                  "80GB HBM3'\"}}]}}");
	gpus_slice(&s[0], "n1-gpu", "n1", 0, 2, 1, 1);
	assert_int_equal(tau_dra_view_build(&v, cls, 2, s, 1, NULL, 0), 0);
	/* counted once, under the first class by name ("gpu.nvidia.com" < "h100") */
	assert_string_equal(counts(v, "n1"), "nvidia.com/gpu=2");
	assert_string_equal(node_note(v, "n1", TAU_DRA_RULE_OVERLAP),
	                    "device gpu-0 of pool n1 (driver " NV ") is selected by class "
	                    "gpu.nvidia.com (nvidia.com/gpu) and class h100 (example.com/h100): "
	                    "counted once, as nvidia.com/gpu");
	assert_int_equal(tau_dra_view_node(v, "n1")->n_notes, 2);
	tau_dra_view_free(v);
	/* both classes under one name (Kueue maps both): once, and no overlap to report */
	{
		static char *both_classes[] = {(char *)"gpu.nvidia.com", (char *)"h100"};
		tau_kueue_dra_mapping both[] = {{.name = (char *)"nvidia.com/gpu",
		                                 .device_classes = both_classes,
		                                 .n_device_classes = 2}};

		assert_int_equal(tau_dra_view_build(&v, cls, 2, s, 1, both, 1), 0);
		assert_string_equal(counts(v, "n1"), "nvidia.com/gpu=2");
		assert_null(node_note(v, "n1", TAU_DRA_RULE_OVERLAP));
		tau_dra_view_free(v);
	}
	tau_dra_slice_clear(&s[0]);
	tau_dra_class_clear(&cls[0]);
	tau_dra_class_clear(&cls[1]);
}

static void test_kueue_mapping_change_renames_the_count(void **state)
{
	tau_dra_class cls[1] = {{0}};
	tau_dra_slice s[1] = {{0}};
	tau_dra_view *v = NULL;

	(void)state;
	class_of(&cls[0], gpu_class);
	gpus_slice(&s[0], "n1-gpu", "n1", 0, 8, 1, 1);
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 1, kueue_gpus, 1), 0);
	assert_string_equal(counts(v, "n1"), "example.com/gpus=8");
	assert_int_equal(tau_dra_view_class_at(v, 0)->via, TAU_DRA_VIA_KUEUE);
	tau_dra_view_free(v);
	/* the mapping removed: back to the class's extendedResourceName */
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 1, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "nvidia.com/gpu=8");
	tau_dra_view_free(v);
	/* the class deleted: nothing counts */
	assert_int_equal(tau_dra_view_build(&v, NULL, 0, s, 1, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "-");
	tau_dra_view_free(v);
	tau_dra_slice_clear(&s[0]);
	tau_dra_class_clear(&cls[0]);
}

static void test_partitionable_devices_count_whole(void **state)
{
	tau_dra_class cls[2] = {{0}};
	tau_dra_slice s[1] = {{0}};
	tau_dra_view *v = NULL;
	char devs[12000], migs[8000];

	(void)state;
	class_of(&cls[0], gpu_class);
	class_of(&cls[1], mig_class);
	/* GPU 0 and three MIG partitions of it draw on counter set gpu-0-counters; GPU 1 is whole
	 */
	devices_json(devs, sizeof(devs), 0, 1, "gpu", "gpu-0-counters");
	devices_json(migs, sizeof(migs), 0, 3, "mig", "gpu-0-counters");
	strcat(devs, ",");
	strcat(devs, migs);
	devices_json(migs, sizeof(migs), 1, 1, "gpu", NULL);
	strcat(devs, ",");
	strcat(devs, migs);
	slice_of(&s[0], "n1-gpu", "n1", 1, 1, "n1", devs);
	assert_string_equal(s[0].devices[0].counter_set, "gpu-0-counters");
	assert_int_equal(tau_dra_view_build(&v, cls, 2, s, 1, NULL, 0), 0);
	/* GPU 0 with its partitions is one device, under the first class by name */
	assert_string_equal(counts(v, "n1"), "nvidia.com/gpu=2");
	assert_string_equal(node_note(v, "n1", TAU_DRA_RULE_PARTITIONABLE),
	                    "devices of pool n1 (driver " NV ") that share counter set "
	                    "gpu-0-counters count as one nvidia.com/gpu");
	assert_non_null(strstr(node_note(v, "n1", TAU_DRA_RULE_OVERLAP),
	                       "counter set gpu-0-counters of pool n1"));
	/* a claim on any device of a unit holds the unit: GPU 0 and its partitions are one */
	{
		const tau_dra_node *n = tau_dra_view_node(v, "n1");
		const tau_dra_member *g0 = tau_dra_node_member(n, NV, "n1", "gpu-0");
		const tau_dra_member *m2 = tau_dra_node_member(n, NV, "n1", "mig-2");
		const tau_dra_member *g1 = tau_dra_node_member(n, NV, "n1", "gpu-1");

		assert_int_equal(n->n_units, 2);
		assert_int_equal(n->n_members, 5);
		assert_non_null(g0);
		assert_non_null(m2);
		assert_non_null(g1);
		assert_int_equal(g0->unit, m2->unit);
		assert_int_not_equal(g0->unit, g1->unit);
		assert_string_equal(m2->resource, "nvidia.com/gpu");
		assert_null(tau_dra_node_member(n, NV, "n1", "gpu-9"));
		assert_null(tau_dra_node_member(n, NV, "n2", "gpu-0"));
		assert_null(tau_dra_node_member(n, "other.example.com", "n1", "gpu-0"));
	}
	tau_dra_view_free(v);
	/* only the MIG class: the partitioned GPU counts as one MIG device, not three */
	assert_int_equal(tau_dra_view_build(&v, &cls[1], 1, s, 1, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "nvidia.com/mig-1g.10gb=1");
	{
		/* GPU 0 itself is selected by no class, yet a claim on it holds the counter set */
		const tau_dra_node *n = tau_dra_view_node(v, "n1");
		const tau_dra_member *g0 = tau_dra_node_member(n, NV, "n1", "gpu-0");

		assert_int_equal(n->n_units, 1);
		assert_int_equal(n->n_members, 4);
		assert_non_null(g0);
		assert_string_equal(g0->resource, "nvidia.com/mig-1g.10gb");
		assert_null(tau_dra_node_member(n, NV, "n1", "gpu-1"));
	}
	tau_dra_view_free(v);
	tau_dra_slice_clear(&s[0]);
	tau_dra_class_clear(&cls[0]);
	tau_dra_class_clear(&cls[1]);
}

static void test_only_node_local_devices_count(void **state)
{
	tau_dra_class cls[1] = {{0}};
	tau_dra_slice s[2] = {{0}};
	tau_dra_view *v = NULL;
	cJSON *j;

	(void)state;
	class_of(&cls[0], gpu_class);
	j = parse("{\"metadata\":{\"name\":\"shared\"},\"spec\":{" DRV ",\"allNodes\":true," POOL
	          ",\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"type\":{\"string\":\"gpu\"}}"
	          "}]}}");
	assert_int_equal(tau_dra_slice_from_json(&s[0], j), 0);
	cJSON_Delete(j);
	j = parse("{\"metadata\":{\"name\":\"per\"},\"spec\":{" DRV
	          ",\"perDeviceNodeSelection\":true,"
	          "\"pool\":{\"name\":\"q\",\"generation\":0,\"resourceSliceCount\":1},"
	          "\"devices\":[{\"name\":\"gpu-0\",\"nodeName\":\"n7\",\"attributes\":{\"type\":{"
	          "\"string\":\"gpu\"}}},{\"name\":\"gpu-1\",\"allNodes\":true,\"attributes\":{"
	          "\"type\":{\"string\":\"gpu\"}}}]}}");
	assert_int_equal(tau_dra_slice_from_json(&s[1], j), 0);
	cJSON_Delete(j);
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 2, NULL, 0), 0);
	assert_string_equal(counts(v, "n7"), "nvidia.com/gpu=1");
	assert_int_equal(tau_dra_view_node_count(v), 1);
	assert_int_equal(tau_dra_view_note_count(v), 2);
	assert_string_equal(tau_dra_view_note_at(v, 0)->rule, TAU_DRA_RULE_NODE_LOCAL);
	assert_non_null(strstr(tau_dra_view_note_at(v, 0)->detail,
	                       "slice shared (pool p, driver " NV "): 1 devices reachable from all "
	                       "nodes count on no node"));
	assert_non_null(strstr(tau_dra_view_note_at(v, 1)->detail,
	                       "device gpu-1 of slice per (pool q, driver " NV ") is not bound"));
	tau_dra_view_free(v);
	for (size_t i = 0; i < 2; i++)
		tau_dra_slice_clear(&s[i]);
	tau_dra_class_clear(&cls[0]);
}

static void test_selector_error_is_reported_not_counted(void **state)
{
	tau_dra_class cls[1] = {{0}};
	tau_dra_slice s[1] = {{0}};
	tau_dra_view *v = NULL;

	(void)state;
	class_of(&cls[0],
	         "{\"metadata\":{\"name\":\"by-model\"},\"spec\":{\"extendedResourceName\":"
	         "\"example.com/gpu\",\"selectors\":[{\"cel\":{\"expression\":"
	         "\"device.attributes['gpu.nvidia.com'].model == 'H100'\"}}]}}");
	gpus_slice(&s[0], "n1-gpu", "n1", 0, 1, 1, 1);
	assert_int_equal(tau_dra_view_build(&v, cls, 1, s, 1, NULL, 0), 0);
	assert_string_equal(counts(v, "n1"), "");
	assert_string_equal(node_note(v, "n1", TAU_DRA_RULE_SELECTOR),
	                    "device gpu-0 of pool n1 (driver " NV "): class by-model: no such key: "
	                    "attribute gpu.nvidia.com/model: not counted under it");
	tau_dra_view_free(v);
	tau_dra_slice_clear(&s[0]);
	tau_dra_class_clear(&cls[0]);
}

static void test_allocatable_counts_never_both(void **state)
{
	tau_node_resource res[1];
	tau_node_facts facts = {.name = (char *)"n1", .allocatable = res, .n_allocatable = 1};
	tau_dra_resource r = {.name = "nvidia.com/gpu", .devices = 8};
	char why[320];

	(void)state;
	res[0].name = (char *)"nvidia.com/gpu";
	assert_int_equal(tau_quantity_parse_str(&res[0].value, "0"), 0);
	assert_true(tau_dra_counts_beside(&r, &facts, why, sizeof(why)));
	assert_int_equal(tau_quantity_parse_str(&res[0].value, "8"), 0);
	assert_false(tau_dra_counts_beside(&r, &facts, why, sizeof(why)));
	assert_string_equal(why, "node n1 advertises 8 nvidia.com/gpu in allocatable and 8 DRA "
	                         "devices map to it: allocatable counts, the DRA devices do not");
	r.name = "example.com/other";
	assert_true(tau_dra_counts_beside(&r, &facts, NULL, 0));
}

/* An object of tests/fixtures/dra (NVIDIA's GPU DRA driver's shapes, see its SOURCE.md). */
static cJSON *fixture(const char *file)
{
	char path[512], *text = NULL;
	size_t len = 0;
	cJSON *j = NULL;

	snprintf(path, sizeof(path), "%s/tests/fixtures/dra/%s", TAU_SOURCE_DIR, file);
	if (tau_file_read(&text, &len, path, 1u << 20, "fixture") != 0)
		fail_msg("%s: %s", path, tau_error_last()->msg);
	if (tau_json_parse(&j, text, len, 0) != 0)
		fail_msg("%s: %s", path, tau_error_last()->msg);
	free(text);
	return j;
}

static void test_driver_fixtures_count_exactly(void **state)
{
	static const char *const class_files[] = {"deviceclass-gpu.nvidia.com.json",
	                                          "deviceclass-mig.nvidia.com.json"};
	static const char *const slice_files[] = {"resourceslice-h100-complete.json",
	                                          "resourceslice-h100-inflight.json"};
	tau_dra_class cls[2] = {{0}};
	tau_dra_slice s[2] = {{0}};
	tau_dra_view *v = NULL;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		cJSON *c = fixture(class_files[i]), *sl = fixture(slice_files[i]);

		assert_int_equal(tau_dra_class_from_json(&cls[i], c), 0);
		assert_int_equal(tau_dra_slice_from_json(&s[i], sl), 0);
		cJSON_Delete(c);
		cJSON_Delete(sl);
	}
	assert_null(cls[0].unusable);
	assert_null(cls[1].unusable);
	assert_int_equal(tau_dra_view_build(&v, cls, 2, s, 2, NULL, 0), 0);
	/* node 0: its complete pool's eight GPUs; the MIG class (no extendedResourceName, no
	 * Kueue mapping) counts nothing */
	assert_string_equal(counts(v, "aks-ndh100dra-20914731-vmss000000"), "nvidia.com/gpu=8");
	assert_int_equal(tau_dra_view_class_at(v, 1)->via, TAU_DRA_VIA_NONE);
	/* node 1: generation 2 of 2 slices, one seen: nothing */
	assert_string_equal(counts(v, "aks-ndh100dra-20914731-vmss000001"), "");
	assert_non_null(strstr(
	        node_note(v, "aks-ndh100dra-20914731-vmss000001", TAU_DRA_RULE_POOL_COMPLETE),
	        "1 of 2 slices of generation 2 seen"));
	{
		tau_dra_totals t = tau_dra_view_totals(v);

		assert_int_equal(t.devices, 8);
		assert_int_equal(t.pools_incomplete, 1);
		assert_int_equal(t.classes_unusable, 0);
	}
	tau_dra_view_free(v);
	for (size_t i = 0; i < 2; i++) {
		tau_dra_slice_clear(&s[i]);
		tau_dra_class_clear(&cls[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_slice_reads_like_the_api),
	        cmocka_unit_test(test_malformed_slices_are_refused),
	        cmocka_unit_test(test_pool_complete_only_with_every_slice_of_its_newest_generation),
	        cmocka_unit_test(test_class_maps_the_way_kueue_counts),
	        cmocka_unit_test(test_malformed_and_unusable_classes),
	        cmocka_unit_test(test_dra_only_node_counts_exactly),
	        cmocka_unit_test(test_generation_in_flight_counts_nothing),
	        cmocka_unit_test(test_unusable_class_counts_nothing),
	        cmocka_unit_test(test_device_counts_once),
	        cmocka_unit_test(test_kueue_mapping_change_renames_the_count),
	        cmocka_unit_test(test_partitionable_devices_count_whole),
	        cmocka_unit_test(test_only_node_local_devices_count),
	        cmocka_unit_test(test_selector_error_is_reported_not_counted),
	        cmocka_unit_test(test_allocatable_counts_never_both),
	        cmocka_unit_test(test_driver_fixtures_count_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
