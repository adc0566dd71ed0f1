/*
 * dra_slice.c - reading ResourceSlices and deciding which pools are complete (dra_slice.h).
 *
 * The one idea: a pool is judged on all of its slices together, never slice
 * by slice.  Slices are sorted by (driver, pool, generation), so each pool is
 * one run, its highest generation the run's tail; completeness is a count of
 * that tail against resourceSliceCount.  A malformed slice is refused when it
 * is read (the API server would have refused it too), so it can neither add
 * devices nor make a pool look complete.
 */
#include "dra_slice.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/str.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void value_clear(tau_dra_value *v)
{
	tau_free_many(v->name, v->text);
}

static void device_clear(tau_dra_device *d)
{
	for (size_t i = 0; i < d->n_attributes; i++)
		value_clear(&d->attributes[i]);
	for (size_t i = 0; i < d->n_capacity; i++)
		value_clear(&d->capacity[i]);
	tau_free_many(d->attributes, d->capacity, d->name, d->node_name, d->counter_set);
	memset(d, 0, sizeof(*d));
}

void tau_dra_slice_clear(tau_dra_slice *slice)
{
	if (slice == NULL)
		return;
	for (size_t i = 0; i < slice->n_devices; i++)
		device_clear(&slice->devices[i]);
	tau_free_many(slice->devices, slice->name, slice->driver, slice->pool, slice->node_name);
	memset(slice, 0, sizeof(*slice));
}

int tau_dra_spec_list(size_t *n, const cJSON *list, const char *field, size_t max)
{
	*n = 0;
	if (list == NULL || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return tau_error_set(TAU_EINVAL, "%s: must be a list", field);
	*n = (size_t)cJSON_GetArraySize(list);
	if (*n > max)
		return tau_error_set(TAU_ETOOBIG, "%s: Too many: %zu: must have at most %zu items",
		                     field, *n, max);
	return 0;
}

static int dup_into(char **out, const char *s)
{
	*out = strdup(s);
	return *out != NULL ? 0
	                    : tau_error_set(TAU_ENOMEM, "out of memory reading a ResourceSlice");
}

/* A C identifier of at most 32 bytes (the API's rule for attribute names). */
static bool is_c_identifier(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* "identifier" or "domain/identifier"; the full name into *out, with the driver's domain. */
static int qualified_name(char **out, const char *name, const char *driver)
{
	const char *slash = strchr(name, '/');
	char domain[64];
	size_t n;

	if (slash == NULL) {
		if (!is_c_identifier(name))
			return tau_error_set(TAU_EINVAL,
			                     "%s: must be a C identifier of at most 32 "
			                     "bytes, optionally after a domain and /",
			                     name);
		n = strlen(driver) + 1 + strlen(name) + 1;
		*out = malloc(n);
		if (*out == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory reading a ResourceSlice");
		snprintf(*out, n, "%s/%s", driver, name);
		return 0;
	}
	if ((size_t)(slash - name) >= sizeof(domain) || slash == name)
		return tau_error_set(TAU_EINVAL, "%s: the domain must be 1 to 63 bytes", name);
	memcpy(domain, name, (size_t)(slash - name));
	domain[slash - name] = '\0';
	if (tau_names_check_dns1123_subdomain(domain) < 0 || !is_c_identifier(slash + 1))
		return tau_error_set(TAU_EINVAL,
		                     "%s: must be a DNS subdomain, /, and a C identifier "
		                     "of at most 32 bytes",
		                     name);
	return dup_into(out, name);
}

static int by_value_name(const void *a, const void *b)
{
	return strcmp(((const tau_dra_value *)a)->name, ((const tau_dra_value *)b)->name);
}

/* Read device.attributes (attrs) or device.capacity into a sorted array. */
static int read_values(tau_dra_value **out, size_t *n_out, const cJSON *map, const char *driver,
                       bool capacity)
{
	const char *field = capacity ? "capacity" : "attributes";
	size_t n = 0, count;
	tau_dra_value *vals;
	const cJSON *it;

	if (map == NULL || cJSON_IsNull(map))
		return 0;
	if (!cJSON_IsObject(map))
		return tau_error_set(TAU_EINVAL, "%s: must be an object", field);
	count = (size_t)cJSON_GetArraySize(map);
	if (count > TAU_DRA_DEVICE_MAX_NAMES)
		return tau_error_set(TAU_ETOOBIG, "%s: more than %d entries", field,
		                     TAU_DRA_DEVICE_MAX_NAMES);
	if (count == 0)
		return 0;
	vals = calloc(count, sizeof(*vals));
	if (vals == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading a ResourceSlice");
	cJSON_ArrayForEach(it, map)
	{
		tau_dra_value *v = &vals[n];
		int rc = qualified_name(&v->name, it->string, driver);

		if (rc < 0)
			goto fail;
		n++;
		if (!cJSON_IsObject(it)) {
			tau_error_set(TAU_EINVAL, "must be an object");
			goto fail;
		}
		if (capacity) {
			const cJSON *q = cJSON_GetObjectItemCaseSensitive(it, "value");

			v->kind = TAU_DRA_VALUE_QUANTITY;
			if (!cJSON_IsString(q)) {
				tau_error_set(TAU_EINVAL, "value: Required value");
				goto fail;
			}
			if (tau_quantity_parse_str(&v->quantity, q->valuestring) < 0 ||
			    tau_quantity_sign(&v->quantity) < 0) {
				if (tau_quantity_sign(&v->quantity) < 0)
					tau_error_set(TAU_EINVAL, "value: must not be negative");
				goto fail;
			}
		} else {
			const cJSON *s = cJSON_GetObjectItemCaseSensitive(it, "string");
			const cJSON *ver = cJSON_GetObjectItemCaseSensitive(it, "version");
			const cJSON *i = cJSON_GetObjectItemCaseSensitive(it, "int");
			const cJSON *b = cJSON_GetObjectItemCaseSensitive(it, "bool");
			int set = (s != NULL) + (ver != NULL) + (i != NULL) + (b != NULL);
			const cJSON *text = s != NULL ? s : ver;

			if (set != 1) {
				tau_error_set(TAU_EINVAL,
				              "exactly one of int, bool, string or version "
				              "must be set");
				goto fail;
			}
			if (text != NULL) {
				v->kind = s != NULL ? TAU_DRA_VALUE_STRING : TAU_DRA_VALUE_VERSION;
				if (!cJSON_IsString(text) ||
				    strlen(text->valuestring) > TAU_DRA_ATTRIBUTE_STRING_MAX) {
					tau_error_set(TAU_EINVAL,
					              "%s: must be a string of at most %d bytes",
					              s != NULL ? "string" : "version",
					              TAU_DRA_ATTRIBUTE_STRING_MAX);
					goto fail;
				}
				if (dup_into(&v->text, text->valuestring) < 0)
					goto fail;
			} else if (i != NULL) {
				v->kind = TAU_DRA_VALUE_INT;
				if (tau_json_get_int(&v->integer, it, "int") < 0) {
					tau_error_set(TAU_EINVAL, "int: must be an int64");
					goto fail;
				}
			} else {
				v->kind = TAU_DRA_VALUE_BOOL;
				if (!cJSON_IsBool(b)) {
					tau_error_set(TAU_EINVAL, "bool: must be true or false");
					goto fail;
				}
				v->boolean = cJSON_IsTrue(b);
			}
		}
	}
	qsort(vals, n, sizeof(*vals), by_value_name);
	for (size_t k = 1; k < n; k++)
		if (strcmp(vals[k - 1].name, vals[k].name) == 0) {
			tau_error_set(TAU_EINVAL, "%s: %s given twice", field, vals[k].name);
			goto fail;
		}
	*out = vals;
	*n_out = n;
	return 0;
fail:
	tau_error_wrap("%s[%s]", field, it != NULL && it->string != NULL ? it->string : "?");
	for (size_t k = 0; k < n; k++)
		value_clear(&vals[k]);
	free(vals);
	return -tau_error_last()->code;
}

static int read_device(tau_dra_device *d, const cJSON *obj, const char *driver, bool per_device,
                       size_t *n_names)
{
	const char *name = tau_json_str(obj, "name");
	const cJSON *counters = cJSON_GetObjectItemCaseSensitive(obj, "consumesCounters");

	if (!cJSON_IsObject(obj))
		return tau_error_set(TAU_EINVAL, "must be an object");
	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "name: Required value");
	if (tau_names_check_dns1123_label(name) < 0)
		return tau_error_wrap("name: Invalid value");
	if (dup_into(&d->name, name) < 0 ||
	    read_values(&d->attributes, &d->n_attributes,
	                cJSON_GetObjectItemCaseSensitive(obj, "attributes"), driver, false) < 0 ||
	    read_values(&d->capacity, &d->n_capacity,
	                cJSON_GetObjectItemCaseSensitive(obj, "capacity"), driver, true) < 0)
		return -tau_error_last()->code;
	*n_names = d->n_attributes + d->n_capacity;
	if (*n_names > TAU_DRA_DEVICE_MAX_NAMES)
		return tau_error_set(TAU_ETOOBIG, "attributes and capacity: more than %d together",
		                     TAU_DRA_DEVICE_MAX_NAMES);
	if (counters != NULL && !cJSON_IsNull(counters)) {
		const cJSON *first =
		        cJSON_IsArray(counters) ? cJSON_GetArrayItem(counters, 0) : NULL;
		const char *set = tau_json_str(first, "counterSet");

		if (!cJSON_IsArray(counters) || (first != NULL && set == NULL))
			return tau_error_set(TAU_EINVAL, "consumesCounters: each entry names its "
			                                 "counterSet");
		if (set != NULL && dup_into(&d->counter_set, set) < 0)
			return -TAU_ENOMEM;
	}
	if (per_device) {
		const char *node = tau_json_str(obj, "nodeName");
		int set = (cJSON_GetObjectItemCaseSensitive(obj, "nodeName") != NULL) +
		          (cJSON_GetObjectItemCaseSensitive(obj, "nodeSelector") != NULL) +
		          (cJSON_GetObjectItemCaseSensitive(obj, "allNodes") != NULL);

		if (set != 1)
			return tau_error_set(TAU_EINVAL,
			                     "exactly one of `nodeName`, `nodeSelector`, "
			                     "`allNodes` is required with "
			                     "perDeviceNodeSelection");

		if (node != NULL) {
			if (tau_names_check_dns1123_subdomain(node) < 0)
				return tau_error_wrap("nodeName: Invalid value");
			if (dup_into(&d->node_name, node) < 0)
				return -TAU_ENOMEM;
		}
	}
	return 0;
}

static int by_device_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int read_scope(tau_dra_slice *s, const cJSON *spec)
{
	const cJSON *node = cJSON_GetObjectItemCaseSensitive(spec, "nodeName");
	const cJSON *sel = cJSON_GetObjectItemCaseSensitive(spec, "nodeSelector");
	const cJSON *all = cJSON_GetObjectItemCaseSensitive(spec, "allNodes");
	const cJSON *per = cJSON_GetObjectItemCaseSensitive(spec, "perDeviceNodeSelection");
	int set = 0;

	if (node != NULL && !cJSON_IsNull(node))
		set++;
	if (sel != NULL && !cJSON_IsNull(sel))
		set++;
	if (all != NULL && !cJSON_IsNull(all))
		set++;
	if (per != NULL && !cJSON_IsNull(per))
		set++;
	if (set == 0)
		return tau_error_set(TAU_EINVAL, "spec: Required value: exactly one of `nodeName`, "
		                                 "`nodeSelector`, `allNodes`, "
		                                 "`perDeviceNodeSelection` is required");
	if (set > 1)
		return tau_error_set(TAU_EINVAL,
		                     "spec: Invalid value: exactly one of `nodeName`, "
		                     "`nodeSelector`, `allNodes`, "
		                     "`perDeviceNodeSelection` is required, but multiple "
		                     "fields are set");
	if (node != NULL && !cJSON_IsNull(node)) {
		if (!cJSON_IsString(node) || node->valuestring[0] == '\0')
			return tau_error_set(TAU_EINVAL, "spec.nodeName: must be a node name");
		if (tau_names_check_dns1123_subdomain(node->valuestring) < 0)
			return tau_error_wrap("spec.nodeName: Invalid value");
		s->scope = TAU_DRA_SCOPE_NODE;
		return dup_into(&s->node_name, node->valuestring);
	}
	if (all != NULL && !cJSON_IsNull(all)) {
		if (!cJSON_IsTrue(all))
			return tau_error_set(TAU_EINVAL,
			                     "spec.allNodes: Invalid value: must be true");
		s->scope = TAU_DRA_SCOPE_ALL_NODES;
	} else if (per != NULL && !cJSON_IsNull(per)) {
		if (!cJSON_IsTrue(per))
			return tau_error_set(TAU_EINVAL,
			                     "spec.perDeviceNodeSelection: Invalid value: "
			                     "must be true");
		s->scope = TAU_DRA_SCOPE_PER_DEVICE;
	} else {
		if (!cJSON_IsObject(sel))
			return tau_error_set(TAU_EINVAL, "spec.nodeSelector: must be an object");
		s->scope = TAU_DRA_SCOPE_SELECTOR;
	}
	return 0;
}

static int read_slice(tau_dra_slice *s, const cJSON *obj)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	const cJSON *devices = cJSON_GetObjectItemCaseSensitive(spec, "devices");
	const char *driver = tau_json_str(spec, "driver");
	const char *pool = tau_json_str(spec, "pool.name");
	const char **names = NULL;
	size_t n;
	int rc;

	if (!cJSON_IsObject(spec))
		return tau_error_set(TAU_EINVAL, "spec: Required value");
	if (driver == NULL || driver[0] == '\0')
		return tau_error_set(TAU_EINVAL, "spec.driver: Required value");
	if (strlen(driver) > 63 || tau_names_check_dns1123_subdomain(driver) < 0)
		return tau_error_set(TAU_EINVAL, "spec.driver: Invalid value: must be a DNS "
		                                 "subdomain of at most 63 lower-case bytes");
	if (pool == NULL || pool[0] == '\0')
		return tau_error_set(TAU_EINVAL, "spec.pool.name: Required value");
	if (strlen(pool) > 253)
		return tau_error_set(TAU_EINVAL, "spec.pool.name: Too long: at most 253 bytes");
	if (tau_json_get_int(&s->generation, spec, "pool.generation") < 0)
		return tau_error_set(TAU_EINVAL, "spec.pool.generation: Required value (an int64)");
	if (s->generation < 0)
		return tau_error_set(TAU_EINVAL, "spec.pool.generation: Invalid value: must be "
		                                 "greater than or equal to zero");
	if (tau_json_get_int(&s->slice_count, spec, "pool.resourceSliceCount") < 0)
		return tau_error_set(TAU_EINVAL, "spec.pool.resourceSliceCount: Required value (an "
		                                 "int64)");
	if (s->slice_count <= 0)
		return tau_error_set(TAU_EINVAL,
		                     "spec.pool.resourceSliceCount: Invalid value: must "
		                     "be greater than zero");
	if (dup_into(&s->driver, driver) < 0 || dup_into(&s->pool, pool) < 0 ||
	    read_scope(s, spec) < 0)
		return -tau_error_last()->code;
	if (tau_dra_spec_list(&n, devices, "spec.devices", TAU_DRA_SLICE_MAX_DEVICES) < 0)
		return -tau_error_last()->code;
	if (n == 0)
		return 0;
	s->devices = calloc(n, sizeof(*s->devices));
	names = calloc(n, sizeof(*names));
	if (s->devices == NULL || names == NULL) {
		free(names);
		return tau_error_set(TAU_ENOMEM, "out of memory reading a ResourceSlice");
	}
	for (size_t i = 0; i < n; i++) {
		size_t n_names = 0;

		s->n_devices = i + 1;
		rc = read_device(&s->devices[i], cJSON_GetArrayItem(devices, (int)i), s->driver,
		                 s->scope == TAU_DRA_SCOPE_PER_DEVICE, &n_names);
		if (rc < 0) {
			free(names);
			return tau_error_wrap("spec.devices[%zu]", i);
		}
		names[i] = s->devices[i].name;
	}
	qsort(names, n, sizeof(*names), by_device_name);
	for (size_t i = 1; i < n; i++)
		if (strcmp(names[i - 1], names[i]) == 0) {
			rc = tau_error_set(TAU_EINVAL, "spec.devices: Duplicate value: \"%s\"",
			                   names[i]);
			free(names);
			return rc;
		}
	free(names);
	return 0;
}

int tau_dra_slice_from_json(tau_dra_slice *out, const cJSON *obj)
{
	const char *name = tau_json_str(obj, "metadata.name");
	int rc;

	memset(out, 0, sizeof(*out));
	if (name == NULL || tau_names_check_dns1123_subdomain(name) < 0)
		return tau_error_set(TAU_EINVAL, "ResourceSlice: metadata.name: must be a DNS "
		                                 "subdomain");
	rc = dup_into(&out->name, name);
	if (rc == 0)
		rc = read_slice(out, obj);
	if (rc < 0) {
		tau_error_wrap("ResourceSlice %s", name);
		tau_dra_slice_clear(out);
	}
	return rc;
}

tau_dra_device_view tau_dra_device_view_of(const tau_dra_slice *s, const tau_dra_device *d)
{
	tau_dra_device_view v = {
	        .driver = s->driver,
	        .attributes = d->attributes,
	        .n_attributes = d->n_attributes,
	        .capacity = d->capacity,
	        .n_capacity = d->n_capacity,
	};

	return v;
}

static int by_pool_then_generation(const void *a, const void *b)
{
	const tau_dra_slice *x = *(const tau_dra_slice *const *)a;
	const tau_dra_slice *y = *(const tau_dra_slice *const *)b;
	int c = strcmp(x->driver, y->driver);

	if (c == 0)
		c = strcmp(x->pool, y->pool);
	if (c == 0)
		c = (x->generation > y->generation) - (x->generation < y->generation);
	return c;
}

/* Whether the slices sorted[lo..hi) publish a device name twice; names the first one. */
static int duplicate_device(const tau_dra_slice *const *sorted, size_t lo, size_t hi,
                            const char **dup)
{
	size_t n = 0, k = 0;
	const char **names;

	*dup = NULL;
	for (size_t i = lo; i < hi; i++)
		n += sorted[i]->n_devices;
	if (n < 2)
		return 0;
	names = malloc(n * sizeof(*names));
	if (names == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory assessing DRA pools");
	for (size_t i = lo; i < hi; i++)
		for (size_t j = 0; j < sorted[i]->n_devices; j++)
			names[k++] = sorted[i]->devices[j].name;
	qsort(names, n, sizeof(*names), by_device_name);
	for (size_t i = 1; i < n && *dup == NULL; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			*dup = names[i];
	free(names);
	return 0;
}

static void judge(tau_dra_pool_state *p, const tau_dra_slice *const *sorted, size_t lo, size_t hi,
                  const char *dup)
{
	p->complete = false;
	p->expected = sorted[lo]->slice_count;
	for (size_t i = lo; i < hi; i++)
		if (sorted[i]->slice_count != p->expected) {
			tau_str_printf(
			        p->reason, sizeof(p->reason),
			        "pool %s of driver %s: slices of generation %lld disagree on "
			        "resourceSliceCount (%lld and %lld)",
			        p->pool, p->driver, (long long)p->generation,
			        (long long)p->expected, (long long)sorted[i]->slice_count);
			p->expected = 0;
			return;
		}
	if ((int64_t)p->seen != p->expected) {
		tau_str_printf(p->reason, sizeof(p->reason),
		               "pool %s of driver %s: %zu of %lld slices of generation %lld seen%s",
		               p->pool, p->driver, p->seen, (long long)p->expected,
		               (long long)p->generation,
		               p->older > 0 ? " (an update in flight)" : "");
		return;
	}
	if (dup != NULL) {
		tau_str_printf(
		        p->reason, sizeof(p->reason),
		        "pool %s of driver %s: device %s is published by two slices of generation "
		        "%lld",
		        p->pool, p->driver, dup, (long long)p->generation);
		return;
	}
	p->complete = true;
	p->reason[0] = '\0';
}

int tau_dra_pools_assess(tau_dra_pool_state **out, size_t *n_out, const tau_dra_slice *slices,
                         size_t n_slices)
{
	const tau_dra_slice **sorted = NULL;
	tau_dra_pool_state *pools = NULL;
	size_t n = 0;
	int rc = -TAU_ENOMEM;

	*out = NULL;
	*n_out = 0;
	if (n_slices == 0)
		return 0;
	sorted = malloc(n_slices * sizeof(*sorted));
	pools = calloc(n_slices, sizeof(*pools));
	if (sorted == NULL || pools == NULL) {
		tau_error_set(TAU_ENOMEM, "out of memory assessing DRA pools");
		goto out;
	}
	for (size_t i = 0; i < n_slices; i++)
		sorted[i] = &slices[i];
	qsort(sorted, n_slices, sizeof(*sorted), by_pool_then_generation);
	for (size_t lo = 0; lo < n_slices;) {
		size_t hi = lo + 1, top;
		tau_dra_pool_state *p = &pools[n++];
		const char *dup = NULL;

		while (hi < n_slices && strcmp(sorted[hi]->driver, sorted[lo]->driver) == 0 &&
		       strcmp(sorted[hi]->pool, sorted[lo]->pool) == 0)
			hi++;
		top = hi - 1;
		while (top > lo && sorted[top - 1]->generation == sorted[hi - 1]->generation)
			top--;
		p->driver = sorted[lo]->driver;
		p->pool = sorted[lo]->pool;
		p->generation = sorted[hi - 1]->generation;
		p->seen = hi - top;
		p->older = top - lo;
		if (duplicate_device(sorted, top, hi, &dup) < 0)
			goto out;
		judge(p, sorted, top, hi, dup);
		lo = hi;
	}
	*out = pools;
	*n_out = n;
	pools = NULL;
	rc = 0;
out:
	free(sorted);
	free(pools);
	return rc;
}

const tau_dra_pool_state *tau_dra_pool_find(const tau_dra_pool_state *pools, size_t n,
                                            const char *driver, const char *pool)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(pools[mid].driver, driver);

		if (c == 0)
			c = strcmp(pools[mid].pool, pool);
		if (c == 0)
			return &pools[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
