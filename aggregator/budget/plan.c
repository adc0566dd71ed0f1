/*
 * plan.c - the Cohort plan (plan.h): sorted coveredResources x sorted flavors with exact
 * quotas, checked against Kueue's limits.
 *
 * The one idea: everything the controller writes derives from one plan, so the Cohort and
 * every workspace ClusterQueue always have the same shape, which Kueue requires for a
 * ClusterQueue to borrow from its Cohort; and the plan only ever grows from what was written
 * before (retained flavors and resources stay at 0, P6), so shrinking never drops a flavor
 * that running work still holds.
 */
#include "plan.h"

#include "desired.h"

#include "inventory/sorted.h"

#include "helpers.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void flavor_clear(tau_budget_flavor *f)
{
	tau_free_many(f->name, f->gpu_class);
}

/* Free a plan's resource names and flavors (both arrays and what they hold). */
static void names_free(char **resources, size_t n_resources, tau_budget_flavor *flavors,
                       size_t n_flavors)
{
	for (size_t i = 0; i < n_resources; i++)
		free(resources[i]);
	for (size_t i = 0; i < n_flavors; i++)
		flavor_clear(&flavors[i]);
	tau_free_many(resources, flavors);
}

void tau_budget_plan_free(tau_budget_plan *plan)
{
	if (plan == NULL)
		return;
	names_free(plan->resources, plan->n_resources, plan->flavors, plan->n_flavors);
	tau_free_many(plan->quota, plan);
}

const tau_quantity *tau_budget_plan_quota(const tau_budget_plan *plan, size_t f, size_t r)
{
	return &plan->quota[f * plan->n_resources + r];
}

void tau_budget_plan_drop_flavor(tau_budget_plan *plan, size_t f)
{
	size_t nr = plan->n_resources, after = plan->n_flavors - f - 1;

	flavor_clear(&plan->flavors[f]);
	memmove(&plan->flavors[f], &plan->flavors[f + 1], after * sizeof(*plan->flavors));
	memmove(&plan->quota[f * nr], &plan->quota[(f + 1) * nr],
	        after * nr * sizeof(*plan->quota));
	plan->n_flavors--;
}

/* Sorted set of strings while the plan is built. */
typedef struct strset {
	char **items;
	size_t n, cap;
} strset;

static int strset_add(strset *s, const char *v)
{
	void *rec;

	return tau_budget_sorted_add(&rec, (void **)&s->items, &s->n, &s->cap, sizeof(*s->items),
	                             v);
}

typedef struct flavor_list {
	tau_budget_flavor *items;
	size_t n, cap;
} flavor_list;

/* Insert a flavor; 1 when added, 0 when the name was there, <0 on error. */
static int flavor_add(flavor_list *l, const char *name, const char *gpu_class, bool retained)
{
	char *class_copy = NULL;
	tau_budget_flavor *f;
	void *rec;
	int rc;

	if (gpu_class != NULL && (class_copy = strdup(gpu_class)) == NULL)
		return tau_budget_nomem();
	rc = tau_budget_sorted_add(&rec, (void **)&l->items, &l->n, &l->cap, sizeof(*l->items),
	                           name);
	if (rc <= 0) {
		free(class_copy);
		return rc;
	}
	f = rec;
	f->gpu_class = class_copy;
	f->retained = retained;
	return 1;
}

/* Add what the Cohort we already wrote covers and lists. */
static int plan_observed(strset *res, flavor_list *fl, const cJSON *cohort)
{
	const cJSON *groups = tau_json_find(cohort, "spec.resourceGroups");
	const cJSON *g, *v, *f;
	int rc;

	if (groups == NULL || cJSON_IsNull(groups))
		return 0;
	if (!cJSON_IsArray(groups))
		return tau_error_set(TAU_ETYPE,
		                     "observed Cohort: spec.resourceGroups is not a list");
	cJSON_ArrayForEach(g, groups)
	{
		const cJSON *covered = cJSON_GetObjectItemCaseSensitive(g, "coveredResources");
		const cJSON *flavors = cJSON_GetObjectItemCaseSensitive(g, "flavors");

		if (!cJSON_IsArray(covered) || !cJSON_IsArray(flavors))
			return tau_error_set(TAU_ETYPE, "observed Cohort: a resource group lacks "
			                                "coveredResources or flavors lists");
		cJSON_ArrayForEach(v, covered)
		{
			if (!cJSON_IsString(v))
				return tau_error_set(
				        TAU_ETYPE,
				        "observed Cohort: coveredResources holds a non-string");
			if ((rc = strset_add(res, v->valuestring)) < 0)
				return rc;
		}
		cJSON_ArrayForEach(f, flavors)
		{
			const char *name = tau_json_member_str(f, "name");

			if (name == NULL)
				return tau_error_set(
				        TAU_ETYPE, "observed Cohort: a flavor has no string name");
			if (tau_names_check_dns1123_subdomain(name) < 0)
				return tau_error_wrap(
				        "observed Cohort: flavor name: Invalid value");
			if ((rc = flavor_add(fl, name, NULL, true)) < 0)
				return rc;
		}
	}
	return 0;
}

/* Does `suffix` end in "-" and TAU_BUDGET_NAME_HASH_HEX lowercase hex digits (a cleaned name)? */
static bool hashed_suffix(const char *suffix)
{
	size_t n = strlen(suffix);

	if (n < TAU_BUDGET_NAME_HASH_HEX + 2 || suffix[n - TAU_BUDGET_NAME_HASH_HEX - 1] != '-')
		return false;
	for (size_t i = n - TAU_BUDGET_NAME_HASH_HEX; i < n; i++)
		if (!((suffix[i] >= '0' && suffix[i] <= '9') ||
		      (suffix[i] >= 'a' && suffix[i] <= 'f')))
			return false;
	return true;
}

/*
 * The class of a retained flavor: the gpu-class label of a TauGrid ResourceFlavor of that name
 * whose class maps back to the name, this TauCluster's first, else one an earlier TauCluster
 * wrote (a reinstall: a label read is no write); else the plain name, unless the name ends like
 * a cleaned one ("-<8 hex>"): that class cannot be read back from the name, so it stays unknown
 * and the flavor is kept at 0 without a ResourceFlavor write.
 */
static int retained_class(tau_budget_flavor *f, const cJSON *const *rfs, size_t n_rfs,
                          const char *cluster_uid)
{
	char name[TAU_BUDGET_NAME_BUF];
	const char *cls = NULL, *plain;
	size_t plen = strlen(TAU_BUDGET_FLAVOR_PREFIX);

	for (size_t k = 0; k < 2 * n_rfs && cls == NULL; k++) {
		const cJSON *rf = rfs[k % n_rfs];
		const char *c;

		if (!tau_str_eq_both_set(tau_json_str(rf, "metadata.name"), f->name) ||
		    !tau_budget_is_managed(rf) ||
		    (k < n_rfs &&
		     tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, cluster_uid, NULL,
		                             0) != TAU_BUDGET_OWNED))
			continue;
		c = tau_json_label(rf, TAU_BUDGET_LABEL_GPU_CLASS);
		if (c != NULL && tau_budget_flavor_name(name, sizeof(name), c) == 0 &&
		    strcmp(name, f->name) == 0)
			cls = c;
	}
	plain = strncmp(f->name, TAU_BUDGET_FLAVOR_PREFIX, plen) == 0 ? f->name + plen : NULL;
	if (cls == NULL && plain != NULL && !hashed_suffix(plain) &&
	    tau_budget_flavor_name(name, sizeof(name), plain) == 0 && strcmp(name, f->name) == 0)
		cls = plain;
	tau_error_clear();
	if (cls != NULL && (f->gpu_class = strdup(cls)) == NULL)
		return tau_budget_nomem();
	return 0;
}

/* Kueue counts cpu in milli-units and everything else in base units, in an int64. */
static int check_kueue_int64(const char *flavor, const char *resource, const tau_quantity *q)
{
	char text[TAU_QUANTITY_STR_MAX];
	int64_t v;
	bool cpu = strcmp(resource, "cpu") == 0;

	if ((cpu ? tau_quantity_milli_value(&v, q) : tau_quantity_value(&v, q)) == 0)
		return 0;
	tau_quantity_format(text, sizeof(text), q);
	return tau_error_set(TAU_ERANGE,
	                     "flavor %s resource %s: the pool sum %s does not fit the int64 %s "
	                     "Kueue counts in (it would saturate); the inventory should have "
	                     "excluded the nodes that advertise such values",
	                     flavor, resource, text, cpu ? "milli-units" : "base units");
}

/* Kueue's limit of `max` resources or flavors in one resource group. */
static int kueue_limit(size_t n, int max, const char *verb, const char *what, const char *holds)
{
	if (n <= (size_t)max)
		return 0;
	return tau_error_set(TAU_ERANGE,
	                     "the budget %s %zu %s; a Kueue resource group %s at most %d", verb, n,
	                     what, holds, max);
}

int tau_budget_plan_build(tau_budget_plan **out, const tau_budget_pool *pool,
                          const cJSON *observed_cohort, const cJSON *const *observed_flavors,
                          size_t n_observed_flavors, const char *cluster_uid)
{
	strset res = {0};
	flavor_list fl = {0};
	tau_budget_plan *plan = NULL;
	char fname[TAU_BUDGET_NAME_BUF];
	int rc;

	if (out == NULL || pool == NULL || (observed_flavors == NULL && n_observed_flavors > 0))
		return tau_error_set(TAU_EINVAL, "Cohort plan: missing input");
	for (size_t i = 0; i < pool->n_classes; i++) {
		const tau_budget_class *c = &pool->classes[i];

		if ((rc = tau_budget_flavor_name(fname, sizeof(fname), c->name)) < 0)
			goto out;
		rc = flavor_add(&fl, fname, c->name, false);
		if (rc < 0)
			goto out;
		if (rc == 0) {
			bool found = false;
			size_t at =
			        tau_sorted_index(fl.items, fl.n, sizeof(*fl.items), fname, &found);

			rc = tau_error_set(
			        TAU_EINVAL,
			        "GPU classes %s and %s map to one ResourceFlavor name %s; "
			        "rename one class",
			        fl.items[at].gpu_class, c->name, fname);
			goto out;
		}
		for (size_t j = 0; j < c->n_resources; j++)
			if ((rc = strset_add(&res, c->resources[j].name)) < 0)
				goto out;
	}
	if (observed_cohort != NULL && (rc = plan_observed(&res, &fl, observed_cohort)) < 0)
		goto out;
	for (size_t i = 0; i < res.n; i++)
		if ((rc = tau_names_check_label_key(res.items[i])) < 0) {
			tau_error_wrap(
			        "resource name: Invalid value (Kueue accepts qualified names "
			        "only)");
			goto out;
		}
	if ((rc = kueue_limit(res.n, TAU_BUDGET_MAX_RESOURCES, "covers", "resources", "covers")) <
	            0 ||
	    (rc = kueue_limit(fl.n, TAU_BUDGET_MAX_FLAVORS, "has", "flavors", "holds")) < 0)
		goto out;
	plan = calloc(1, sizeof(*plan));
	if (plan == NULL || (res.n > 0 && fl.n > 0 &&
	                     (plan->quota = calloc(res.n * fl.n, sizeof(*plan->quota))) == NULL)) {
		rc = tau_budget_nomem();
		goto out;
	}
	plan->resources = res.items;
	plan->n_resources = res.n;
	plan->flavors = fl.items;
	plan->n_flavors = fl.n;
	res = (strset){0};
	fl = (flavor_list){0};
	for (size_t f = 0; f < plan->n_flavors; f++) {
		tau_budget_flavor *fv = &plan->flavors[f];
		const tau_budget_class *c = NULL;

		if (fv->retained) {
			if ((rc = retained_class(fv, observed_flavors, n_observed_flavors,
			                         cluster_uid)) < 0)
				goto out;
			continue;
		}
		for (size_t i = 0; i < pool->n_classes && c == NULL; i++)
			if (strcmp(pool->classes[i].name, fv->gpu_class) == 0)
				c = &pool->classes[i];
		for (size_t j = 0; c != NULL && j < c->n_resources; j++) {
			bool found = false;
			size_t r = tau_sorted_index(plan->resources, plan->n_resources,
			                            sizeof(*plan->resources), c->resources[j].name,
			                            &found);

			if ((rc = check_kueue_int64(fv->name, c->resources[j].name,
			                            &c->resources[j].total)) < 0)
				goto out;
			plan->quota[f * plan->n_resources + r] = c->resources[j].total;
		}
	}
	*out = plan;
	plan = NULL;
	rc = 0;
out:
	names_free(res.items, res.n, fl.items, fl.n);
	tau_budget_plan_free(plan);
	return rc;
}
