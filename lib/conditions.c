/*
 * conditions.c - metav1.Condition lists computed from scratch each pass; the
 * previous list contributes only lastTransitionTime.
 */
#include "tau/conditions.h"

#include "tau/error.h"
#include "tau/json.h"

#include <string.h>

const cJSON *tau_conditions_find(const cJSON *conds, const char *type)
{
	const cJSON *c;

	if (!cJSON_IsArray(conds) || type == NULL)
		return NULL;
	cJSON_ArrayForEach(c, conds)
	{
		const char *t = NULL;

		if (tau_json_get_string(&t, c, "type") == 0 && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

static bool valid_status(const char *s)
{
	return s != NULL &&
	       (strcmp(s, "True") == 0 || strcmp(s, "False") == 0 || strcmp(s, "Unknown") == 0);
}

int tau_conditions_set(cJSON *conds, const cJSON *previous, const char *type, const char *status,
                       const char *reason, const char *message, int64_t generation, const char *now)
{
	const cJSON *old = tau_conditions_find(previous, type);
	const char *old_status = NULL, *ltt = now;
	cJSON *c, *item;
	int idx = 0;

	if (!cJSON_IsArray(conds) || type == NULL || type[0] == '\0' || reason == NULL ||
	    reason[0] == '\0' || now == NULL || !valid_status(status))
		return tau_error_set(TAU_EINVAL, "condition %s: missing or invalid field",
		                     type != NULL ? type : "(null)");
	if (old != NULL && tau_json_get_string(&old_status, old, "status") == 0 &&
	    strcmp(old_status, status) == 0) {
		const char *t = NULL;

		if (tau_json_get_string(&t, old, "lastTransitionTime") == 0 && t[0] != '\0')
			ltt = t;
	}
	c = cJSON_CreateObject();
	if (c == NULL || cJSON_AddStringToObject(c, "type", type) == NULL ||
	    cJSON_AddStringToObject(c, "status", status) == NULL ||
	    cJSON_AddStringToObject(c, "reason", reason) == NULL ||
	    cJSON_AddStringToObject(c, "message", message != NULL ? message : "") == NULL ||
	    cJSON_AddStringToObject(c, "lastTransitionTime", ltt) == NULL ||
	    (generation >= 0 &&
	     cJSON_AddNumberToObject(c, "observedGeneration", (double)generation) == NULL)) {
		cJSON_Delete(c);
		return tau_error_set(TAU_ENOMEM, "condition %s: out of memory", type);
	}
	cJSON_ArrayForEach(item, conds)
	{
		const char *t = NULL;

		if (tau_json_get_string(&t, item, "type") == 0 && strcmp(t, type) == 0) {
			cJSON_ReplaceItemInArray(conds, idx, c);
			return 0;
		}
		idx++;
	}
	cJSON_AddItemToArray(conds, c);
	return 0;
}

static bool same_field(const cJSON *a, const cJSON *b, const char *field)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(a, field);
	const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, field);

	if (x == NULL || y == NULL)
		return x == y;
	return cJSON_Compare(x, y, true);
}

static size_t count(const cJSON *conds)
{
	return cJSON_IsArray(conds) ? (size_t)cJSON_GetArraySize(conds) : 0;
}

bool tau_conditions_equal(const cJSON *a, const cJSON *b)
{
	const cJSON *c;

	if (count(a) != count(b))
		return false;
	if (count(a) == 0)
		return true;
	cJSON_ArrayForEach(c, a)
	{
		const char *type = NULL;
		const cJSON *other;

		if (tau_json_get_string(&type, c, "type") < 0)
			return false;
		other = tau_conditions_find(b, type);
		if (other == NULL || !same_field(c, other, "status") ||
		    !same_field(c, other, "reason") || !same_field(c, other, "message") ||
		    !same_field(c, other, "observedGeneration"))
			return false;
	}
	return true;
}
