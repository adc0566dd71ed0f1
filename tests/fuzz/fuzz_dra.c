/*
 * fuzz_dra.c - libFuzzer target for the DRA readers of API objects (inventory/dra*.h).
 *
 * The first byte picks the reader, the rest is its input: 0 a DeviceClass selector expression
 * (compiled, then evaluated against a fixed H100 device), 1 a ResourceSlice, 2 a DeviceClass
 * (both JSON).  Beyond "no crash, no leak" it checks what the headers promise: a refused input
 * leaves the out value untouched (NULL or zeroed) and says why; an accepted slice or class
 * goes through the whole counting (tau_dra_view_build) with NVIDIA's GPU class or an H100
 * slice beside it, and every count it gives is at most the slice's device count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "inventory/dra.h"
#include "tau/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char gpu_class[] =
        "{\"metadata\":{\"name\":\"gpu.nvidia.com\"},\"spec\":{\"selectors\":[{\"cel\":{"
        "\"expression\":\"device.driver == 'gpu.nvidia.com' && "
        "device.attributes['gpu.nvidia.com'].type == 'gpu'\"}}],"
        "\"extendedResourceName\":\"nvidia.com/gpu\"}}";

static const char h100_slice[] =
        "{\"metadata\":{\"name\":\"n1-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\","
        "\"nodeName\":\"n1\",\"pool\":{\"name\":\"n1\",\"generation\":0,"
        "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"type\":"
        "{\"string\":\"gpu\"},\"index\":{\"int\":0},\"shared\":{\"bool\":false}},\"capacity\":"
        "{\"memory\":{\"value\":\"81559Mi\"}}}]}}";

static void check_view(const tau_dra_class *cls, const tau_dra_slice *slice)
{
	tau_dra_view *v = NULL;

	if (tau_dra_view_build(&v, cls, 1, slice, 1, NULL, 0) != 0)
		return; /* out of memory only */
	for (size_t i = 0; i < tau_dra_view_node_count(v); i++) {
		const tau_dra_node *n = tau_dra_view_node_at(v, i);

		for (size_t j = 0; j < n->n_resources; j++)
			if (n->resources[j].devices == 0 ||
			    n->resources[j].devices > slice->n_devices)
				abort();
	}
	tau_dra_view_free(v);
}

static void check_expression(const char *text)
{
	tau_dra_cel *cel = NULL;
	tau_dra_value attrs[1] = {{.name = (char *)"gpu.nvidia.com/type",
	                           .kind = TAU_DRA_VALUE_STRING,
	                           .text = (char *)"gpu"}};
	tau_dra_value caps[1] = {
	        {.name = (char *)"gpu.nvidia.com/memory", .kind = TAU_DRA_VALUE_QUANTITY}};
	tau_dra_device_view d = {.driver = "gpu.nvidia.com",
	                         .attributes = attrs,
	                         .n_attributes = 1,
	                         .capacity = caps,
	                         .n_capacity = 1};
	bool v = false;

	if (tau_quantity_parse_str(&caps[0].quantity, "81559Mi") != 0)
		abort();
	if (tau_dra_cel_compile(&cel, text) != 0) {
		if (cel != NULL || tau_error_last()->msg[0] == '\0')
			abort();
		return;
	}
	if (tau_dra_cel_eval(&v, cel, &d) != 0 && tau_error_last()->msg[0] == '\0')
		abort();
	tau_dra_cel_free(cel);
}

static cJSON *parse_fixed(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	if (j == NULL)
		abort();
	return j;
}

static void check_object(const char *text, bool slice_input)
{
	cJSON *js = cJSON_Parse(text);
	cJSON *other = NULL;
	tau_dra_slice slice = {0};
	tau_dra_class cls = {0};
	int rc;

	if (js == NULL)
		return;
	if (slice_input) {
		rc = tau_dra_slice_from_json(&slice, js);
		if (rc != 0 && (slice.name != NULL || slice.devices != NULL))
			abort();
		other = parse_fixed(gpu_class);
		if (rc == 0 && tau_dra_class_from_json(&cls, other) != 0)
			abort();
	} else {
		rc = tau_dra_class_from_json(&cls, js);
		if (rc != 0 && (cls.name != NULL || cls.selectors != NULL))
			abort();
		other = parse_fixed(h100_slice);
		if (rc == 0 && tau_dra_slice_from_json(&slice, other) != 0)
			abort();
	}
	if (rc != 0 && tau_error_last()->msg[0] == '\0')
		abort();
	if (rc == 0)
		check_view(&cls, &slice);
	tau_dra_slice_clear(&slice);
	tau_dra_class_clear(&cls);
	cJSON_Delete(other);
	cJSON_Delete(js);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1 || size > 64 * 1024)
		return 0;
	text = malloc(size);
	if (text == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		check_expression(text);
		break;
	case 1:
		check_object(text, true);
		break;
	default:
		check_object(text, false);
		break;
	}
	free(text);
	return 0;
}
