/*
 * nodefacts.c - parse the decision-relevant fields of a Node object.
 *
 * The one idea: everything read from the API is validated here, once, with
 * an error naming the field, so the pool and the agent only ever see names
 * and quantities that Kubernetes itself would accept.  Labels and resources
 * are kept sorted so comparisons and digests do not depend on JSON order.
 */
#include "tau/nodefacts.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdlib.h>
#include <string.h>

void tau_node_facts_clear(tau_node_facts *f)
{
	if (f == NULL)
		return;
	tau_free_many(f->name, f->uid, f->resource_version, f->os, f->gpu_class, f->provider_id);
	for (size_t i = 0; i < f->n_labels; i++) {
		free(f->label_keys[i]);
		free(f->label_values[i]);
	}
	free(f->label_keys);
	free(f->label_values);
	for (size_t i = 0; i < f->n_allocatable; i++)
		free(f->allocatable[i].name);
	free(f->allocatable);
	memset(f, 0, sizeof(*f));
}

const char *tau_node_facts_label(const tau_node_facts *f, const char *key)
{
	for (size_t i = 0; i < f->n_labels; i++) {
		if (strcmp(f->label_keys[i], key) == 0)
			return f->label_values[i];
	}
	return NULL;
}

static int dup_opt(char **dst, const char *src)
{
	if (src == NULL)
		return 0;
	*dst = strdup(src);
	return *dst == NULL ? tau_error_set(TAU_ENOMEM, "out of memory") : 0;
}

/* Optional string field: absent is fine, a wrong type is not. */
static int opt_string(char **dst, const cJSON *root, const char *path)
{
	const char *s = NULL;
	int rc = tau_json_get_string(&s, root, path);

	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	return dup_opt(dst, s);
}

typedef struct kv {
	const char *key;
	const cJSON *item;
} kv;

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const kv *)a)->key, ((const kv *)b)->key);
}

/*
 * Collect the members of the object at `path` in `node`, sorted by key; *out is malloc'd. An
 * absent object is an empty one (*n == 0).
 */
static int sorted_members(kv **out, size_t *n, const cJSON *node, const char *path, size_t max)
{
	const cJSON *obj = NULL;
	size_t count = 0, i = 0;
	kv *arr;
	int rc = tau_json_get_object(&obj, node, path);

	*n = 0;
	*out = NULL;
	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc < 0)
		return rc;
	for (const cJSON *it = obj->child; it != NULL; it = it->next)
		count++;
	if (count > max)
		return tau_error_set(TAU_ETOOBIG, "%s: %zu entries exceed the limit of %zu", path,
		                     count, max);
	*n = count;
	if (count == 0)
		return 0;
	arr = calloc(count, sizeof(*arr));
	if (arr == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (const cJSON *it = obj->child; it != NULL; it = it->next)
		arr[i++] = (kv){it->string, it};
	qsort(arr, count, sizeof(*arr), kv_cmp);
	for (i = 1; i < count; i++) {
		if (strcmp(arr[i - 1].key, arr[i].key) == 0) {
			rc = tau_error_set(TAU_EINVAL, "%s: key \"%s\" appears twice", path,
			                   arr[i].key);

			free(arr);
			return rc;
		}
	}
	*out = arr;
	return 0;
}

/* Reads the n (> 0) sorted members of one object into f. */
typedef int (*members_fn)(tau_node_facts *f, const kv *arr, size_t n);

/* The members of the object at path (at most cap of them), sorted, handed to fn. */
static int read_sorted(tau_node_facts *f, const cJSON *node, const char *path, size_t cap,
                       members_fn fn)
{
	kv *arr = NULL;
	size_t n = 0;
	int rc = sorted_members(&arr, &n, node, path, cap);

	if (rc == 0 && n > 0)
		rc = fn(f, arr, n);
	free(arr);
	return rc;
}

static int read_labels(tau_node_facts *f, const kv *arr, size_t n)
{
	int rc;

	f->label_keys = calloc(n, sizeof(char *));
	f->label_values = calloc(n, sizeof(char *));
	if (f->label_keys == NULL || f->label_values == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!cJSON_IsString(arr[i].item))
			return tau_error_set(TAU_EINVAL, "metadata.labels[%s]: expected a string",
			                     arr[i].key);
		if ((rc = tau_names_check_label_key(arr[i].key)) < 0 ||
		    (rc = tau_names_check_label_value(arr[i].item->valuestring)) < 0) {
			tau_error_wrap("metadata.labels[%s]", arr[i].key);
			return rc;
		}
		f->label_keys[i] = strdup(arr[i].key);
		f->label_values[i] = strdup(arr[i].item->valuestring);
		f->n_labels = i + 1;
		if (f->label_keys[i] == NULL || f->label_values[i] == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	return 0;
}

static int read_allocatable(tau_node_facts *f, const kv *arr, size_t n)
{
	int rc;

	f->allocatable = calloc(n, sizeof(*f->allocatable));
	if (f->allocatable == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const cJSON *v = arr[i].item;
		tau_node_resource *r = &f->allocatable[i];

		if (tau_names_check_label_key(arr[i].key) < 0)
			return tau_error_wrap("status.allocatable: resource name \"%s\"",
			                      arr[i].key);
		if (!cJSON_IsString(v))
			return tau_error_set(TAU_EINVAL,
			                     "status.allocatable[%s]: expected a string",
			                     arr[i].key);
		rc = tau_quantity_parse_str(&r->value, v->valuestring);
		if (rc < 0) {
			tau_error_wrap("status.allocatable[%s]", arr[i].key);
			return rc;
		}
		if (tau_quantity_sign(&r->value) < 0)
			return tau_error_set(TAU_EINVAL,
			                     "status.allocatable[%s]: negative quantity \"%s\"",
			                     arr[i].key, v->valuestring);
		r->name = strdup(arr[i].key);
		f->n_allocatable = i + 1;
		if (r->name == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	return 0;
}

static bool ready_condition(const cJSON *node)
{
	const cJSON *conds = NULL;
	const cJSON *c;

	if (tau_json_get_array(&conds, node, "status.conditions") < 0)
		return false;
	cJSON_ArrayForEach(c, conds)
	{
		const char *type = NULL, *status = NULL;

		if (tau_json_get_string(&type, c, "type") == 0 && strcmp(type, "Ready") == 0)
			return tau_json_get_string(&status, c, "status") == 0 &&
			       strcmp(status, "True") == 0;
	}
	return false;
}

int tau_node_facts_from_json(tau_node_facts *out, const cJSON *node)
{
	tau_node_facts f = {0};
	const char *name = NULL;
	bool unsched = false;
	int rc;

	if (!cJSON_IsObject(node))
		return tau_error_set(TAU_EINVAL, "Node: expected a JSON object");
	rc = tau_json_get_string(&name, node, "metadata.name");
	if (rc < 0)
		return tau_error_wrap("Node");
	rc = tau_names_check_dns1123_subdomain(name);
	if (rc < 0)
		return tau_error_wrap("Node metadata.name");
	if ((rc = dup_opt(&f.name, name)) < 0 ||
	    (rc = opt_string(&f.uid, node, "metadata.uid")) < 0 ||
	    (rc = opt_string(&f.resource_version, node, "metadata.resourceVersion")) < 0 ||
	    (rc = opt_string(&f.provider_id, node, "spec.providerID")) < 0)
		goto fail;
	if ((rc = read_sorted(&f, node, "metadata.labels", TAU_NODE_MAX_LABELS, read_labels)) < 0 ||
	    (rc = read_sorted(&f, node, "status.allocatable", TAU_NODE_MAX_RESOURCES,
	                      read_allocatable)) < 0)
		goto fail;
	if ((rc = dup_opt(&f.gpu_class, tau_node_facts_label(&f, TAU_GPU_CLASS_LABEL))) < 0 ||
	    (rc = dup_opt(&f.os, tau_node_facts_label(&f, "kubernetes.io/os"))) < 0)
		goto fail;
	if (f.os == NULL && (rc = opt_string(&f.os, node, "status.nodeInfo.operatingSystem")) < 0)
		goto fail;
	rc = tau_json_get_bool(&unsched, node, "spec.unschedulable");
	if (rc < 0 && rc != -TAU_ENOTFOUND)
		goto fail;
	f.schedulable = !unsched;
	f.deleting = tau_json_find(node, "metadata.deletionTimestamp") != NULL &&
	             !cJSON_IsNull(tau_json_find(node, "metadata.deletionTimestamp"));
	f.ready = ready_condition(node);
	*out = f;
	return 0;
fail:
	if (f.name != NULL)
		tau_error_wrap("Node %s", f.name);
	tau_node_facts_clear(&f);
	return rc;
}

int tau_node_facts_validate(const tau_node_facts *f)
{
	if (f->name == NULL || tau_names_check_dns1123_subdomain(f->name) < 0)
		return tau_error_wrap("node name");
	if (f->n_labels > TAU_NODE_MAX_LABELS)
		return tau_error_set(TAU_ETOOBIG, "node %s: %zu labels exceed the limit of %d",
		                     f->name, f->n_labels, TAU_NODE_MAX_LABELS);
	if (f->n_allocatable > TAU_NODE_MAX_RESOURCES)
		return tau_error_set(TAU_ETOOBIG, "node %s: %zu resources exceed the limit of %d",
		                     f->name, f->n_allocatable, TAU_NODE_MAX_RESOURCES);
	for (size_t i = 0; i < f->n_labels; i++) {
		if (f->label_keys[i] == NULL || f->label_values[i] == NULL)
			return tau_error_set(TAU_EINVAL, "node %s: label %zu is incomplete",
			                     f->name, i);
		if (tau_names_check_label_key(f->label_keys[i]) < 0 ||
		    tau_names_check_label_value(f->label_values[i]) < 0)
			return tau_error_wrap("node %s: label %s", f->name, f->label_keys[i]);
	}
	for (size_t i = 0; i < f->n_allocatable; i++) {
		const tau_node_resource *r = &f->allocatable[i];

		if (r->name == NULL || tau_names_check_label_key(r->name) < 0)
			return tau_error_set(TAU_EINVAL, "node %s: invalid resource name \"%s\"",
			                     f->name, r->name != NULL ? r->name : "");
		if (tau_quantity_sign(&r->value) < 0)
			return tau_error_set(TAU_EINVAL,
			                     "node %s: resource %s has a negative quantity",
			                     f->name, r->name);
		for (size_t j = 0; j < i; j++) {
			if (strcmp(f->allocatable[j].name, r->name) == 0)
				return tau_error_set(TAU_EINVAL,
				                     "node %s: resource %s listed twice", f->name,
				                     r->name);
		}
	}
	return 0;
}

/* Keep only the members of `obj` named in `keep` (NULL-terminated). */
static void keep_only(cJSON *obj, const char *const *keep)
{
	cJSON *it;

	if (!cJSON_IsObject(obj))
		return;
	it = obj->child;
	while (it != NULL) {
		cJSON *next = it->next;
		bool wanted = false;

		for (size_t i = 0; keep[i] != NULL && !wanted; i++)
			wanted = it->string != NULL && strcmp(it->string, keep[i]) == 0;
		if (!wanted)
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, it));
		it = next;
	}
}

void tau_node_facts_prune(cJSON *node)
{
	static const char *const top[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
	static const char *const meta[] = {"name",   "namespace",         "uid", "resourceVersion",
	                                   "labels", "deletionTimestamp", NULL};
	static const char *const spec[] = {"unschedulable", "providerID", NULL};
	static const char *const status[] = {"allocatable", "conditions", "nodeInfo", NULL};
	static const char *const node_info[] = {"operatingSystem", NULL};
	static const char *const condition[] = {"type", "status", NULL};
	cJSON *conds;

	keep_only(node, top);
	keep_only(cJSON_GetObjectItemCaseSensitive(node, "metadata"), meta);
	keep_only(cJSON_GetObjectItemCaseSensitive(node, "spec"), spec);
	keep_only(cJSON_GetObjectItemCaseSensitive(node, "status"), status);
	keep_only(tau_json_find(node, "status.nodeInfo") != NULL
	                  ? cJSON_GetObjectItemCaseSensitive(
	                            cJSON_GetObjectItemCaseSensitive(node, "status"), "nodeInfo")
	                  : NULL,
	          node_info);
	conds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(node, "status"),
	                                         "conditions");
	if (cJSON_IsArray(conds)) {
		cJSON *c = conds->child;

		/* Only Ready decides anything. */
		while (c != NULL) {
			cJSON *next = c->next;
			const char *type = NULL;

			if (tau_json_get_string(&type, c, "type") < 0 || strcmp(type, "Ready") != 0)
				cJSON_Delete(cJSON_DetachItemViaPointer(conds, c));
			else
				keep_only(c, condition);
			c = next;
		}
	}
}

static int dup_array(char ***dst, char *const *src, size_t n)
{
	if (n == 0)
		return 0;
	*dst = calloc(n, sizeof(char *));
	if (*dst == NULL)
		return -TAU_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		(*dst)[i] = strdup(src[i]);
		if ((*dst)[i] == NULL)
			return -TAU_ENOMEM;
	}
	return 0;
}

bool tau_node_facts_equal(const tau_node_facts *a, const tau_node_facts *b)
{
	if (a->ready != b->ready || a->schedulable != b->schedulable ||
	    a->deleting != b->deleting || a->n_labels != b->n_labels ||
	    a->n_allocatable != b->n_allocatable || !tau_str_eq_or_both_null(a->name, b->name) ||
	    !tau_str_eq_or_both_null(a->uid, b->uid) ||
	    !tau_str_eq_or_both_null(a->resource_version, b->resource_version) ||
	    !tau_str_eq_or_both_null(a->os, b->os) ||
	    !tau_str_eq_or_both_null(a->gpu_class, b->gpu_class) ||
	    !tau_str_eq_or_both_null(a->provider_id, b->provider_id))
		return false;
	for (size_t i = 0; i < a->n_labels; i++) {
		if (!tau_str_eq_or_both_null(a->label_keys[i], b->label_keys[i]) ||
		    !tau_str_eq_or_both_null(a->label_values[i], b->label_values[i]))
			return false;
	}
	for (size_t i = 0; i < a->n_allocatable; i++) {
		/* Equal values in the same format are equal bytes (tau/quantity.h). */
		if (!tau_str_eq_or_both_null(a->allocatable[i].name, b->allocatable[i].name) ||
		    memcmp(&a->allocatable[i].value, &b->allocatable[i].value,
		           sizeof(a->allocatable[i].value)) != 0)
			return false;
	}
	return true;
}

int tau_node_facts_copy(tau_node_facts *dst, const tau_node_facts *src)
{
	tau_node_facts f = {0};

	f.ready = src->ready;
	f.schedulable = src->schedulable;
	f.deleting = src->deleting;
	if (dup_opt(&f.name, src->name) < 0 || dup_opt(&f.uid, src->uid) < 0 ||
	    dup_opt(&f.resource_version, src->resource_version) < 0 ||
	    dup_opt(&f.os, src->os) < 0 || dup_opt(&f.gpu_class, src->gpu_class) < 0 ||
	    dup_opt(&f.provider_id, src->provider_id) < 0)
		goto fail;
	f.n_labels = src->n_labels;
	if (dup_array(&f.label_keys, src->label_keys, src->n_labels) < 0 ||
	    dup_array(&f.label_values, src->label_values, src->n_labels) < 0)
		goto fail;
	if (src->n_allocatable > 0) {
		f.allocatable = calloc(src->n_allocatable, sizeof(*f.allocatable));
		if (f.allocatable == NULL)
			goto fail;
		f.n_allocatable = src->n_allocatable;
		for (size_t i = 0; i < src->n_allocatable; i++) {
			f.allocatable[i].value = src->allocatable[i].value;
			f.allocatable[i].name = strdup(src->allocatable[i].name);
			if (f.allocatable[i].name == NULL)
				goto fail;
		}
	}
	*dst = f;
	return 0;
fail:
	tau_node_facts_clear(&f);
	return tau_error_set(TAU_ENOMEM, "out of memory copying node facts");
}
