/*
 * dra_class.c - DeviceClasses, Kueue's deviceClassMappings, and which quota resource a class
 * counts under (dra_class.h).
 *
 * The one idea: the pool must count a DRA device under the same name Kueue
 * charges a workload for it, so Kueue's own configuration is read first and
 * the class's extendedResourceName second; when both name the class
 * differently, Kueue's wins and explain says so.
 */
#include "dra_class.h"
#include "dra_slice.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tau_dra_class_clear(tau_dra_class *cls)
{
	if (cls == NULL)
		return;
	for (size_t i = 0; i < cls->n_selectors; i++)
		tau_dra_cel_free(cls->selectors[i]);
	tau_free_many(cls->selectors, cls->name, cls->extended_resource_name, cls->unusable);
	memset(cls, 0, sizeof(*cls));
}

static int read_class(tau_dra_class *c, const cJSON *obj)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	const cJSON *sels = cJSON_GetObjectItemCaseSensitive(spec, "selectors");
	const cJSON *ern = cJSON_GetObjectItemCaseSensitive(spec, "extendedResourceName");
	size_t n;

	if (!cJSON_IsObject(spec))
		return tau_error_set(TAU_EINVAL, "spec: Required value");
	if (ern != NULL && !cJSON_IsNull(ern)) {
		if (!cJSON_IsString(ern) || tau_names_check_label_key(ern->valuestring) < 0 ||
		    strchr(ern->valuestring, '/') == NULL)
			return tau_error_set(TAU_EINVAL,
			                     "spec.extendedResourceName: Invalid value: "
			                     "must be a valid extended resource name");
		c->extended_resource_name = strdup(ern->valuestring);
		if (c->extended_resource_name == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory reading a DeviceClass");
	}
	if (tau_dra_spec_list(&n, sels, "spec.selectors", TAU_DRA_CLASS_MAX_SELECTORS) < 0)
		return -tau_error_last()->code;
	if (n == 0)
		return 0;
	c->selectors = calloc(n, sizeof(*c->selectors));
	if (c->selectors == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading a DeviceClass");
	c->n_selectors = n;
	for (size_t i = 0; i < n; i++) {
		const char *expr = tau_json_str(cJSON_GetArrayItem(sels, (int)i), "cel.expression");
		int rc;

		if (expr == NULL)
			return tau_error_set(TAU_EINVAL,
			                     "spec.selectors[%zu].cel.expression: Required "
			                     "value",
			                     i);
		rc = tau_dra_cel_compile(&c->selectors[i], expr);
		if (rc == -TAU_ENOMEM)
			return rc;
		if (rc < 0 && c->unusable == NULL) {
			size_t len = strlen(tau_error_last()->msg) + 64;

			c->unusable = malloc(len);
			if (c->unusable == NULL)
				return tau_error_set(TAU_ENOMEM,
				                     "out of memory reading a DeviceClass");
			snprintf(c->unusable, len, "spec.selectors[%zu]: %s", i,
			         tau_error_last()->msg);
		}
	}
	return 0;
}

int tau_dra_class_from_json(tau_dra_class *out, const cJSON *obj)
{
	const char *name = tau_json_str(obj, "metadata.name");
	int rc;

	memset(out, 0, sizeof(*out));
	if (name == NULL || tau_names_check_dns1123_subdomain(name) < 0)
		return tau_error_set(TAU_EINVAL, "DeviceClass: metadata.name: must be a DNS "
		                                 "subdomain");
	out->name = strdup(name);
	rc = out->name != NULL ? read_class(out, obj)
	                       : tau_error_set(TAU_ENOMEM, "out of memory reading a DeviceClass");
	if (rc < 0) {
		tau_error_wrap("DeviceClass %s", name);
		tau_dra_class_clear(out);
	}
	return rc;
}

void tau_dra_mappings_free(tau_kueue_dra_mapping *mappings, size_t n)
{
	if (mappings == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < mappings[i].n_device_classes; j++)
			free(mappings[i].device_classes[j]);
		free(mappings[i].device_classes);
		free(mappings[i].name);
	}
	free(mappings);
}

tau_dra_via tau_dra_class_resource(const char **resource, const tau_dra_class *cls,
                                   const tau_kueue_dra_mapping *mappings, size_t n_mappings,
                                   char *note, size_t note_cap)
{
	const char *kueue = NULL;

	*resource = NULL;
	tau_str_printf(note, note_cap, "%s", "");
	for (size_t i = 0; i < n_mappings; i++)
		for (size_t j = 0; j < mappings[i].n_device_classes; j++) {
			if (strcmp(mappings[i].device_classes[j], cls->name) != 0)
				continue;
			if (kueue != NULL && strcmp(kueue, mappings[i].name) != 0) {
				tau_str_printf(
				        note, note_cap,
				        "class %s: Kueue's deviceClassMappings name it under %s "
				        "and %s; "
				        "it counts nothing until one is removed",
				        cls->name, kueue, mappings[i].name);
				return TAU_DRA_VIA_CONFLICT;
			}
			kueue = mappings[i].name;
		}
	if (kueue != NULL) {
		if (cls->extended_resource_name != NULL &&
		    strcmp(cls->extended_resource_name, kueue) != 0)
			tau_str_printf(
			        note, note_cap,
			        "class %s: counted as %s, Kueue's deviceClassMappings, not as its "
			        "extendedResourceName %s",
			        cls->name, kueue, cls->extended_resource_name);
		*resource = kueue;
		return TAU_DRA_VIA_KUEUE;
	}
	if (cls->extended_resource_name != NULL) {
		*resource = cls->extended_resource_name;
		return TAU_DRA_VIA_EXTENDED;
	}
	tau_str_printf(
	        note, note_cap,
	        "class %s: no extendedResourceName and not in Kueue's deviceClassMappings: its "
	        "devices count under no quota resource",
	        cls->name);
	return TAU_DRA_VIA_NONE;
}
