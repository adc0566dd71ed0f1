/*
 * compare.c - what exists against what the plan wants (desired.h): the owned-field
 * comparison, the merge that makes a PUT body, and the body that holds a ClusterQueue.
 *
 * The one idea: only our fields count, and quantities by value, because Kueue rewrites
 * quantity text and fills in defaults on read-back; a write keeps everything else it read.
 */
#include "desired.h"

#include "helpers.h"

#include "controller/apply.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tau_budget_quantity_of(tau_quantity *out, const cJSON *v)
{
	char *text;
	int rc;

	if (cJSON_IsString(v))
		return tau_quantity_parse_str(out, v->valuestring);
	if (!cJSON_IsNumber(v))
		return tau_error_set(TAU_ETYPE, "a quantity must be a string or a number");
	text = cJSON_PrintUnformatted(v);
	if (text == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory printing a quantity");
	rc = tau_quantity_parse_json_value(out, text, strlen(text));
	free(text);
	return rc;
}

/* Describe a JSON value for a message: absent, or its compact text. */
static void describe(char *buf, size_t len, const cJSON *v)
{
	char *text;

	if (v == NULL) {
		snprintf(buf, len, "absent");
		return;
	}
	text = cJSON_PrintUnformatted(v);
	snprintf(buf, len, "%.120s", text != NULL ? text : "?");
	free(text);
}

/* Every key of want (a JSON map) has the same string value in have. */
static bool map_subset(const cJSON *want, const cJSON *have, const char *path, char *what,
                       size_t what_len)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, want)
	{
		const char *got = tau_json_member_str(have, item->string);

		if (cJSON_IsString(item) && !tau_str_eq_both_set(got, item->valuestring)) {
			tau_str_printf(what, what_len, "%s[%s] is %s%.120s%s, want \"%.120s\"",
			               path, item->string, got != NULL ? "\"" : "",
			               got != NULL ? got : "absent", got != NULL ? "\"" : "",
			               item->valuestring);
			return false;
		}
	}
	return true;
}

/* Two string maps hold exactly the same keys and values (absent equals {}). */
static bool map_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                      size_t what_len)
{
	const cJSON *item, *all = cJSON_IsObject(have) ? have : NULL;

	if (!map_subset(want, have, path, what, what_len))
		return false;
	cJSON_ArrayForEach(item, all)
	{
		if (tau_json_member_str(want, item->string) == NULL) {
			tau_str_printf(what, what_len, "%s has %s, which we do not set", path,
			               item->string);
			return false;
		}
	}
	return true;
}

/* Size of a JSON list, with absent/null/[] all 0; -1 when present but not a list. */
static int list_size(const cJSON *v)
{
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return -1;
	return cJSON_GetArraySize(v);
}

/* Say that path holds `have` where `want` (text as the message shows it) was wanted; false. */
static bool not_as_wanted(char *what, size_t what_len, const char *path, const cJSON *have,
                          const char *want)
{
	char d[130];

	describe(d, sizeof(d), have);
	tau_str_printf(what, what_len, "%s is %s, want %s", path, d, want);
	return false;
}

static bool quantity_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                           size_t what_len)
{
	tau_quantity a, b;

	if ((want == NULL || cJSON_IsNull(want)) && (have == NULL || cJSON_IsNull(have)))
		return true;
	if (want != NULL && have != NULL && tau_budget_quantity_of(&a, want) == 0 &&
	    tau_budget_quantity_of(&b, have) == 0 && tau_quantity_cmp(&a, &b) == 0)
		return true;
	tau_error_clear();
	return not_as_wanted(what, what_len, path, have,
	                     cJSON_IsString(want) ? want->valuestring : "absent");
}

static bool strings_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                          size_t what_len)
{
	char w[130];

	if (cJSON_IsString(want) && cJSON_IsString(have) &&
	    strcmp(want->valuestring, have->valuestring) == 0)
		return true;
	snprintf(w, sizeof(w), "\"%.120s\"", cJSON_IsString(want) ? want->valuestring : "");
	return not_as_wanted(what, what_len, path, have, w);
}

/* The "name" members of two objects are equal (path names the objects). */
static bool name_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                       size_t what_len)
{
	char p[256];

	tau_str_printf(p, sizeof(p), "%s.name", path);
	return strings_equal(cJSON_GetObjectItemCaseSensitive(want, "name"),
	                     cJSON_GetObjectItemCaseSensitive(have, "name"), p, what, what_len);
}

static bool list_len_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                           size_t what_len)
{
	int nw = list_size(want), nh = list_size(have);

	if (nw == nh && nh >= 0)
		return true;
	if (nh < 0)
		tau_str_printf(what, what_len, "%s is not a list", path);
	else
		tau_str_printf(what, what_len, "%s has %d entries, want %d", path, nh, nw);
	return false;
}

static bool resource_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                           size_t what_len)
{
	static const char *const limits[] = {"nominalQuota", "borrowingLimit", "lendingLimit"};
	char p[256];

	if (!name_equal(want, have, path, what, what_len))
		return false;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		tau_str_printf(p, sizeof(p), "%s.%s", path, limits[i]);
		if (!quantity_equal(cJSON_GetObjectItemCaseSensitive(want, limits[i]),
		                    cJSON_GetObjectItemCaseSensitive(have, limits[i]), p, what,
		                    what_len))
			return false;
	}
	return true;
}

/* Compares one entry of a list (path names it); false with `what` set when it differs. */
typedef bool (*entry_equal_fn)(const cJSON *want, const cJSON *have, const char *path, char *what,
                               size_t what_len);

/* Two lists of the same length whose entries are equal by `eq`, in order. */
static bool lists_equal(const cJSON *want, const cJSON *have, const char *path, entry_equal_fn eq,
                        char *what, size_t what_len)
{
	char p[256];

	if (!list_len_equal(want, have, path, what, what_len))
		return false;
	for (int i = 0; i < list_size(want); i++) {
		tau_str_printf(p, sizeof(p), "%s[%d]", path, i);
		if (!eq(cJSON_GetArrayItem(want, i), cJSON_GetArrayItem(have, i), p, what,
		        what_len))
			return false;
	}
	return true;
}

static bool flavor_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                         size_t what_len)
{
	char p[256];

	if (!name_equal(want, have, path, what, what_len))
		return false;
	tau_str_printf(p, sizeof(p), "%s.resources", path);
	return lists_equal(cJSON_GetObjectItemCaseSensitive(want, "resources"),
	                   cJSON_GetObjectItemCaseSensitive(have, "resources"), p, resource_equal,
	                   what, what_len);
}

static bool group_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                        size_t what_len)
{
	char p[256];

	tau_str_printf(p, sizeof(p), "%s.coveredResources", path);
	if (!lists_equal(cJSON_GetObjectItemCaseSensitive(want, "coveredResources"),
	                 cJSON_GetObjectItemCaseSensitive(have, "coveredResources"), p,
	                 strings_equal, what, what_len))
		return false;
	tau_str_printf(p, sizeof(p), "%s.flavors", path);
	return lists_equal(cJSON_GetObjectItemCaseSensitive(want, "flavors"),
	                   cJSON_GetObjectItemCaseSensitive(have, "flavors"), p, flavor_equal, what,
	                   what_len);
}

static bool selector_equal(const cJSON *want, const cJSON *have, char *what, size_t what_len)
{
	const cJSON *we = tau_json_find(want, "matchExpressions");
	const cJSON *he = tau_json_find(have, "matchExpressions");

	if (have == NULL || cJSON_IsNull(have)) {
		tau_str_printf(what, what_len, "spec.namespaceSelector is absent");
		return false;
	}
	if (!map_equal(tau_json_find(want, "matchLabels"), tau_json_find(have, "matchLabels"),
	               "spec.namespaceSelector.matchLabels", what, what_len))
		return false;
	if (list_size(we) == 0 && list_size(he) == 0)
		return true;
	if (we != NULL && he != NULL && cJSON_Compare(we, he, true))
		return true;
	tau_str_printf(what, what_len, "spec.namespaceSelector.matchExpressions differ");
	return false;
}

typedef enum kind_id { KIND_UNKNOWN = -1, KIND_RF, KIND_COHORT, KIND_CQ } kind_id;

static kind_id kind_of(const cJSON *obj)
{
	const char *k = tau_json_member_str(obj, "kind");

	if (tau_str_eq_both_set(k, "ResourceFlavor"))
		return KIND_RF;
	if (tau_str_eq_both_set(k, "Cohort"))
		return KIND_COHORT;
	if (tau_str_eq_both_set(k, "ClusterQueue"))
		return KIND_CQ;
	return KIND_UNKNOWN;
}

int tau_budget_owned_equal(bool *out, char *what, size_t what_len, const cJSON *desired,
                           const cJSON *observed)
{
	kind_id kind;
	const cJSON *parent;
	bool eq;

	if (out == NULL || desired == NULL || observed == NULL)
		return tau_error_set(TAU_EINVAL, "owned-fields comparison: missing object");
	kind = kind_of(desired);
	if (kind == KIND_UNKNOWN)
		return tau_error_set(TAU_EINVAL, "owned-fields comparison: desired kind is not "
		                                 "ResourceFlavor, Cohort or ClusterQueue");
	tau_str_printf(what, what_len, "%s", "");
	eq = map_subset(tau_json_find(desired, "metadata.labels"),
	                tau_json_find(observed, "metadata.labels"), "metadata.labels", what,
	                what_len) &&
	     map_subset(tau_json_find(desired, "metadata.annotations"),
	                tau_json_find(observed, "metadata.annotations"), "metadata.annotations",
	                what, what_len);
	if (eq && kind == KIND_RF)
		eq = map_equal(tau_json_find(desired, "spec.nodeLabels"),
		               tau_json_find(observed, "spec.nodeLabels"), "spec.nodeLabels", what,
		               what_len);
	if (eq && kind == KIND_COHORT) {
		parent = tau_json_find(observed, "spec.parentName");
		if (parent != NULL && !cJSON_IsNull(parent) &&
		    !(cJSON_IsString(parent) && parent->valuestring[0] == '\0'))
			eq = not_as_wanted(what, what_len, "spec.parentName", parent, "absent");
	}
	if (eq && kind == KIND_CQ)
		eq = strings_equal(tau_json_find(desired, "spec.cohortName"),
		                   tau_json_find(observed, "spec.cohortName"), "spec.cohortName",
		                   what, what_len) &&
		     selector_equal(tau_json_find(desired, "spec.namespaceSelector"),
		                    tau_json_find(observed, "spec.namespaceSelector"), what,
		                    what_len);
	if (eq && kind == KIND_CQ && tau_budget_is_held(observed) &&
	    tau_json_annotation(desired, TAU_BUDGET_ANNOTATION_HELD) == NULL) {
		tau_str_printf(what, what_len, "the queue is held (%s %.200s), want it released",
		               TAU_BUDGET_ANNOTATION_HELD,
		               tau_json_annotation(observed, TAU_BUDGET_ANNOTATION_HELD));
		eq = false;
	}
	if (eq && kind != KIND_RF)
		eq = lists_equal(tau_json_find(desired, "spec.resourceGroups"),
		                 tau_json_find(observed, "spec.resourceGroups"),
		                 "spec.resourceGroups", group_equal, what, what_len);
	*out = eq;
	return 0;
}

int tau_budget_diff(bool *differs, char *what, size_t what_len, const cJSON *desired,
                    const cJSON *observed)
{
	bool equal = false;
	int rc = tau_budget_owned_equal(&equal, what, what_len, desired, observed);

	if (rc == 0 && differs != NULL)
		*differs = !equal;
	return rc;
}

/* obj[key] = copy of value, in place when present (value NULL: the key is removed). */
static bool put_copy(cJSON *obj, const char *key, const cJSON *value)
{
	cJSON *copy;

	if (value == NULL) {
		cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
		return true;
	}
	copy = cJSON_Duplicate(value, true);
	if (copy == NULL)
		return false;
	if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
		return cJSON_ReplaceItemInObjectCaseSensitive(obj, key, copy) ||
		       (cJSON_Delete(copy), false);
	if (!cJSON_AddItemToObject(obj, key, copy)) {
		cJSON_Delete(copy);
		return false;
	}
	return true;
}

static bool merge_map(cJSON *meta, const cJSON *desired, const char *map)
{
	const cJSON *want = tau_json_find(desired, map), *item;
	cJSON *have;

	if (!cJSON_IsObject(want))
		return true;
	have = tau_apply_object_member(meta, map + strlen("metadata."));
	if (have == NULL)
		return false;
	cJSON_ArrayForEach(item, want)
	{
		if (!put_copy(have, item->string, item))
			return false;
	}
	return true;
}

int tau_budget_merge(cJSON **out, const cJSON *observed, const cJSON *desired)
{
	static const char *const rf_fields[] = {"nodeLabels"};
	static const char *const cohort_fields[] = {"resourceGroups"};
	static const char *const cq_fields[] = {"cohortName", "resourceGroups",
	                                        "namespaceSelector"};
	const char *const *fields;
	size_t n_fields;
	kind_id kind;
	cJSON *body = NULL, *meta, *spec;
	const cJSON *dspec;

	if (out == NULL || observed == NULL || desired == NULL || !cJSON_IsObject(observed))
		return tau_error_set(TAU_EINVAL, "merge: missing object");
	kind = kind_of(desired);
	switch (kind) {
	case KIND_RF:
		fields = rf_fields, n_fields = 1;
		break;
	case KIND_COHORT:
		fields = cohort_fields, n_fields = 1;
		break;
	case KIND_CQ:
		fields = cq_fields, n_fields = 3;
		break;
	default:
		return tau_error_set(TAU_EINVAL, "merge: desired kind is not ResourceFlavor, "
		                                 "Cohort or ClusterQueue");
	}
	dspec = cJSON_GetObjectItemCaseSensitive(desired, "spec");
	body = cJSON_Duplicate(observed, true);
	if (body == NULL ||
	    !put_copy(body, "apiVersion", cJSON_GetObjectItem(desired, "apiVersion")) ||
	    !put_copy(body, "kind", cJSON_GetObjectItem(desired, "kind")) ||
	    (meta = tau_apply_object_member(body, "metadata")) == NULL ||
	    !merge_map(meta, desired, "metadata.labels") ||
	    !merge_map(meta, desired, "metadata.annotations") ||
	    (spec = tau_apply_object_member(body, "spec")) == NULL)
		goto oom;
	for (size_t i = 0; i < n_fields; i++)
		if (!put_copy(spec, fields[i], cJSON_GetObjectItemCaseSensitive(dspec, fields[i])))
			goto oom;
	if (kind == KIND_COHORT)
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "parentName");
	if (kind == KIND_CQ && tau_budget_is_held(observed) &&
	    tau_json_annotation(desired, TAU_BUDGET_ANNOTATION_HELD) == NULL) {
		/* Released: our hold goes, and with it the stopPolicy it set. */
		cJSON_DeleteItemFromObjectCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(meta, "annotations"),
		        TAU_BUDGET_ANNOTATION_HELD);
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "stopPolicy");
	}
	*out = body;
	return 0;
oom:
	cJSON_Delete(body);
	return tau_budget_nomem();
}

bool tau_budget_is_held(const cJSON *cq)
{
	return tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_HELD) != NULL;
}

int tau_budget_hold_body(cJSON **out, const cJSON *observed, const char *why)
{
	cJSON *body, *meta, *ann, *spec;

	if (out == NULL || observed == NULL || why == NULL || !cJSON_IsObject(observed))
		return tau_error_set(TAU_EINVAL, "hold: missing object");
	body = cJSON_Duplicate(observed, true);
	if (body == NULL)
		return tau_budget_nomem();
	cJSON_DeleteItemFromObjectCaseSensitive(body, "status");
	if ((meta = tau_apply_object_member(body, "metadata")) == NULL ||
	    (ann = tau_apply_object_member(meta, "annotations")) == NULL ||
	    (spec = tau_apply_object_member(body, "spec")) == NULL) {
		cJSON_Delete(body);
		return tau_budget_nomem();
	}
	cJSON_DeleteItemFromObjectCaseSensitive(ann, TAU_BUDGET_ANNOTATION_HELD);
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "stopPolicy");
	if (cJSON_AddStringToObject(ann, TAU_BUDGET_ANNOTATION_HELD, why) == NULL ||
	    cJSON_AddStringToObject(spec, "stopPolicy", "Hold") == NULL) {
		cJSON_Delete(body);
		return tau_budget_nomem();
	}
	*out = body;
	return 0;
}
