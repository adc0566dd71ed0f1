/*
 * helpers.c - the team budget's small shared helpers (helpers.h): one copy of what decide,
 * explicit, desired, conflict and metrics each used to define for themselves.
 */
#include "helpers.h"

#include "names.h"

#include "inventory/sorted.h"

#include "tau/array.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tau_budget_nomem(void)
{
	return tau_error_set(TAU_ENOMEM, "team budget: out of memory");
}

const cJSON *tau_budget_find_named(const cJSON *const *objs, size_t n, const char *name)
{
	for (size_t i = 0; i < n && name != NULL; i++)
		if (tau_str_eq_both_set(tau_json_str(objs[i], "metadata.name"), name))
			return objs[i];
	return NULL;
}

bool tau_budget_is_managed(const cJSON *obj)
{
	return tau_str_eq_both_set(tau_json_label(obj, TAU_BUDGET_LABEL_MANAGED_BY),
	                           TAU_BUDGET_MANAGED_BY);
}

int64_t tau_budget_generation(const cJSON *obj)
{
	int64_t g = 0;

	return tau_json_get_int(&g, obj, "metadata.generation") == 0 ? g : 0;
}

char *tau_budget_fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

void tau_budget_append(char *buf, size_t len, const char *f, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used > 0 && used + 2 < len) {
		memcpy(buf + used, "; ", 3);
		used += 2;
	}
	if (used >= len)
		return;
	va_start(ap, f);
	vsnprintf(buf + used, len - used, f, ap);
	va_end(ap);
}

int tau_budget_sorted_add(void **rec, void **items, size_t *n, size_t *cap, size_t size,
                          const char *name)
{
	int rc = tau_sorted_add(rec, items, n, cap, size, name);

	return rc < 0 ? tau_budget_nomem() : rc;
}
