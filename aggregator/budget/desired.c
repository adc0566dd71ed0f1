/*
 * desired.c - the budget's pool snapshot, Cohort plan, desired Kueue
 * objects, owned-field comparison, merge and ownership.
 *
 * The one idea: everything the controller writes derives from one plan
 * (sorted resources x sorted flavors, exact quotas), so the Cohort and every
 * workspace ClusterQueue always have the same shape, which Kueue requires
 * for a ClusterQueue to borrow from its Cohort; and the plan only ever
 * grows from what was written before (retained flavors and resources stay at
 * 0, P6), so shrinking never drops a flavor that running work still holds.
 * Comparison looks at our fields only and at quantities by value, because
 * Kueue rewrites quantity text and fills in defaults on read-back.
 */
#include "desired.h"
#include "helpers.h"

#include "inventory/sorted.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

const char *tau_budget_kind_name(tau_budget_kind kind)
{
	switch (kind) {
	case TAU_BUDGET_RESOURCE_FLAVOR:
		return "ResourceFlavor";
	case TAU_BUDGET_COHORT:
		return "Cohort";
	case TAU_BUDGET_CLUSTER_QUEUE:
		return "ClusterQueue";
	case TAU_BUDGET_TEAM:
		return "TauTeam";
	}
	return "?";
}

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

/* ------------------------------------------------------------------------------------------ */
/* Pool snapshot                                                                               */

int tau_budget_pool_new(tau_budget_pool **out)
{
	tau_budget_pool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return tau_budget_nomem();
	*out = p;
	return 0;
}

void tau_budget_pool_free(tau_budget_pool *pool)
{
	if (pool == NULL)
		return;
	for (size_t i = 0; i < pool->n_classes; i++) {
		tau_budget_class *c = &pool->classes[i];

		for (size_t j = 0; j < c->n_resources; j++)
			free(c->resources[j].name);
		free(c->resources);
		free(c->name);
	}
	free(pool->classes);
	free(pool);
}

/* Find or insert the class; *cls receives it. */
static int pool_class(tau_budget_class **cls, tau_budget_pool *pool, const char *gpu_class)
{
	bool found = false;
	size_t i;
	char *name;

	if (pool == NULL || gpu_class == NULL || gpu_class[0] == '\0')
		return tau_error_set(TAU_EINVAL, "pool snapshot: empty GPU class");
	i = tau_sorted_index(pool->classes, pool->n_classes, sizeof(*pool->classes), gpu_class,
	                     &found);
	if (!found) {
		if (tau_budget_grow((void **)&pool->classes, &pool->cap_classes,
		                    pool->n_classes + 1, sizeof(*pool->classes)) ||
		    (name = strdup(gpu_class)) == NULL)
			return tau_budget_nomem();
		memmove(&pool->classes[i + 1], &pool->classes[i],
		        (pool->n_classes - i) * sizeof(*pool->classes));
		memset(&pool->classes[i], 0, sizeof(pool->classes[i]));
		pool->classes[i].name = name;
		pool->n_classes++;
	}
	*cls = &pool->classes[i];
	return 0;
}

int tau_budget_pool_add_class(tau_budget_pool *pool, const char *gpu_class)
{
	tau_budget_class *c;

	return pool_class(&c, pool, gpu_class);
}

int tau_budget_pool_set(tau_budget_pool *pool, const char *gpu_class, const char *resource,
                        const tau_quantity *total)
{
	tau_budget_class *c = NULL;
	bool found = false;
	size_t i;
	char *name;
	int rc;

	if (resource == NULL || resource[0] == '\0' || total == NULL)
		return tau_error_set(TAU_EINVAL, "pool snapshot: empty resource name or quantity");
	if (tau_quantity_sign(total) < 0)
		return tau_error_set(TAU_EINVAL, "pool snapshot: class %s resource %s is negative",
		                     gpu_class != NULL ? gpu_class : "", resource);
	if ((rc = pool_class(&c, pool, gpu_class)) < 0)
		return rc;
	i = tau_sorted_index(c->resources, c->n_resources, sizeof(*c->resources), resource, &found);
	if (found)
		return tau_error_set(TAU_EINVAL, "pool snapshot: class %s resource %s set twice",
		                     gpu_class, resource);
	if (tau_budget_grow((void **)&c->resources, &c->cap_resources, c->n_resources + 1,
	                    sizeof(*c->resources)) ||
	    (name = strdup(resource)) == NULL)
		return tau_budget_nomem();
	memmove(&c->resources[i + 1], &c->resources[i],
	        (c->n_resources - i) * sizeof(*c->resources));
	c->resources[i].name = name;
	c->resources[i].total = *total;
	c->n_resources++;
	return 0;
}

int tau_budget_pool_from_inventory(tau_budget_pool **out, const tau_pool *inventory)
{
	tau_budget_pool *p = NULL;
	char text[TAU_QUANTITY_STR_MAX];
	tau_quantity q;
	int rc;

	if (out == NULL || inventory == NULL)
		return tau_error_set(TAU_EINVAL, "pool snapshot: no inventory pool");
	if ((rc = tau_budget_pool_new(&p)) < 0)
		return rc;
	for (size_t i = 0; i < tau_pool_flavor_count(inventory); i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(inventory, i);

		if ((rc = tau_budget_pool_add_class(p, f->name)) < 0)
			goto fail;
		for (size_t j = 0; j < f->n_resources; j++) {
			/* Through the text so the notation is the pool's order-free one. */
			if ((rc = tau_pool_sum_format(text, sizeof(text), &f->resources[j])) < 0 ||
			    (rc = tau_quantity_parse_str(&q, text)) < 0 ||
			    (rc = tau_budget_pool_set(p, f->name, f->resources[j].name, &q)) < 0)
				goto fail;
		}
	}
	*out = p;
	return 0;
fail:
	tau_budget_pool_free(p);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Plan                                                                                        */

void tau_budget_plan_free(tau_budget_plan *plan)
{
	if (plan == NULL)
		return;
	for (size_t i = 0; i < plan->n_resources; i++)
		free(plan->resources[i]);
	for (size_t i = 0; i < plan->n_flavors; i++) {
		free(plan->flavors[i].name);
		free(plan->flavors[i].gpu_class);
	}
	free(plan->resources);
	free(plan->flavors);
	free(plan->quota);
	free(plan);
}

const tau_quantity *tau_budget_plan_quota(const tau_budget_plan *plan, size_t f, size_t r)
{
	return &plan->quota[f * plan->n_resources + r];
}

void tau_budget_plan_drop_flavor(tau_budget_plan *plan, size_t f)
{
	size_t nr = plan->n_resources, after = plan->n_flavors - f - 1;

	free(plan->flavors[f].name);
	free(plan->flavors[f].gpu_class);
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
	bool found = false;
	size_t i = tau_sorted_index(s->items, s->n, sizeof(*s->items), v, &found);
	char *copy;

	if (found)
		return 0;
	if (tau_budget_grow((void **)&s->items, &s->cap, s->n + 1, sizeof(*s->items)) ||
	    (copy = strdup(v)) == NULL)
		return tau_budget_nomem();
	memmove(&s->items[i + 1], &s->items[i], (s->n - i) * sizeof(*s->items));
	s->items[i] = copy;
	s->n++;
	return 1;
}

typedef struct flavor_list {
	tau_budget_flavor *items;
	size_t n, cap;
} flavor_list;

/* Insert a flavor; 1 when added, 0 when the name was there, <0 on error. */
static int flavor_add(flavor_list *l, const char *name, const char *gpu_class, bool retained)
{
	bool found = false;
	size_t i = tau_sorted_index(l->items, l->n, sizeof(*l->items), name, &found);
	tau_budget_flavor f = {0};

	if (found)
		return 0;
	if (tau_budget_grow((void **)&l->items, &l->cap, l->n + 1, sizeof(*l->items)))
		return tau_budget_nomem();
	f.name = strdup(name);
	f.gpu_class = gpu_class != NULL ? strdup(gpu_class) : NULL;
	f.retained = retained;
	if (f.name == NULL || (gpu_class != NULL && f.gpu_class == NULL)) {
		free(f.name);
		free(f.gpu_class);
		return tau_budget_nomem();
	}
	memmove(&l->items[i + 1], &l->items[i], (l->n - i) * sizeof(*l->items));
	l->items[i] = f;
	l->n++;
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

		if (!tau_budget_streq(tau_json_str(rf, "metadata.name"), f->name) ||
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
	if (res.n > TAU_BUDGET_MAX_RESOURCES) {
		rc = tau_error_set(TAU_ERANGE,
		                   "the budget covers %zu resources; a Kueue resource group "
		                   "covers at most %d",
		                   res.n, TAU_BUDGET_MAX_RESOURCES);
		goto out;
	}
	if (fl.n > TAU_BUDGET_MAX_FLAVORS) {
		rc = tau_error_set(TAU_ERANGE,
		                   "the budget has %zu flavors; a Kueue resource group holds at "
		                   "most %d",
		                   fl.n, TAU_BUDGET_MAX_FLAVORS);
		goto out;
	}
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
	for (size_t i = 0; i < res.n; i++)
		free(res.items[i]);
	free(res.items);
	for (size_t i = 0; i < fl.n; i++) {
		free(fl.items[i].name);
		free(fl.items[i].gpu_class);
	}
	free(fl.items);
	tau_budget_plan_free(plan);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Desired objects                                                                             */

/* apiVersion, kind, metadata{name, labels{managed-by, keys...}, annotations{ann: uid}}. */
static cJSON *new_object(const char *kind, const char *name, const char *const *labels,
                         size_t n_labels, const char *ann_key, const char *ann_value)
{
	cJSON *obj = cJSON_CreateObject();
	cJSON *meta = NULL, *lab = NULL, *ann = NULL;

	if (obj == NULL ||
	    cJSON_AddStringToObject(obj, "apiVersion", TAU_BUDGET_KUEUE_API_VERSION) == NULL ||
	    cJSON_AddStringToObject(obj, "kind", kind) == NULL ||
	    (meta = cJSON_AddObjectToObject(obj, "metadata")) == NULL ||
	    cJSON_AddStringToObject(meta, "name", name) == NULL ||
	    (lab = cJSON_AddObjectToObject(meta, "labels")) == NULL ||
	    cJSON_AddStringToObject(lab, TAU_BUDGET_LABEL_MANAGED_BY, TAU_BUDGET_MANAGED_BY) ==
	            NULL ||
	    (ann = cJSON_AddObjectToObject(meta, "annotations")) == NULL ||
	    cJSON_AddStringToObject(ann, ann_key, ann_value) == NULL)
		goto fail;
	for (size_t i = 0; i + 1 < n_labels; i += 2)
		if (cJSON_AddStringToObject(lab, labels[i], labels[i + 1]) == NULL)
			goto fail;
	return obj;
fail:
	cJSON_Delete(obj);
	return NULL;
}

static int check_label_value(const char *v, const char *what)
{
	if (v == NULL || v[0] == '\0')
		return tau_error_set(TAU_EINVAL, "%s: Required value", what);
	if (tau_names_check_label_value(v) < 0)
		return tau_error_wrap("%s: Invalid value", what);
	return 0;
}

/* Whether a selector key is one the flavor sets itself (the class and the OS). */
static bool flavor_own_key(const char *key)
{
	return strcmp(key, TAU_BUDGET_LABEL_GPU_CLASS) == 0 ||
	       strcmp(key, TAU_BUDGET_LABEL_OS) == 0;
}

int tau_budget_flavor_selector_check(const cJSON *selector)
{
	const cJSON *e;
	size_t n = 2;

	if (selector == NULL || cJSON_IsNull(selector))
		return 0;
	if (!cJSON_IsObject(selector))
		return tau_error_set(TAU_EINVAL,
		                     "spec.nodes.selector: not a map of label keys to values, so "
		                     "no ResourceFlavor can confine pods to the selected nodes");
	cJSON_ArrayForEach(e, selector)
	{
		if (!cJSON_IsString(e) || tau_names_check_label_key(e->string) < 0 ||
		    (e->valuestring[0] != '\0' && tau_names_check_label_value(e->valuestring) < 0))
			return tau_error_set(
			        TAU_EINVAL,
			        "spec.nodes.selector[%.200s]: not a label key with a "
			        "label value, so no ResourceFlavor can confine pods to "
			        "the selected nodes",
			        e->string);
		if (!flavor_own_key(e->string))
			n++;
	}
	if (n > TAU_BUDGET_MAX_NODE_LABELS)
		return tau_error_set(
		        TAU_ERANGE,
		        "spec.nodes.selector has %zu labels besides %s and %s; a Kueue "
		        "ResourceFlavor holds at most %d nodeLabels, so TauGrid's flavors could "
		        "not "
		        "confine pods to the selected nodes: select the pool with at most %d "
		        "labels",
		        n - 2, TAU_BUDGET_LABEL_GPU_CLASS, TAU_BUDGET_LABEL_OS,
		        TAU_BUDGET_MAX_NODE_LABELS, TAU_BUDGET_MAX_NODE_LABELS - 2);
	return 0;
}

int tau_budget_desired_flavor(cJSON **out, const char *gpu_class, const char *cluster_uid,
                              const cJSON *selector)
{
	char name[TAU_BUDGET_NAME_BUF];
	const char *labels[] = {TAU_BUDGET_LABEL_GPU_CLASS, gpu_class};
	cJSON *obj, *spec, *nl;
	const cJSON *e;
	int rc;

	if (out == NULL || cluster_uid == NULL || cluster_uid[0] == '\0')
		return tau_error_set(TAU_EINVAL, "desired ResourceFlavor: no TauCluster UID");
	if ((rc = check_label_value(gpu_class, "GPU class")) < 0 ||
	    (rc = tau_budget_flavor_name(name, sizeof(name), gpu_class)) < 0 ||
	    (rc = tau_budget_flavor_selector_check(selector)) < 0)
		return rc;
	obj = new_object("ResourceFlavor", name, labels, 2, TAU_BUDGET_ANNOTATION_CLUSTER_UID,
	                 cluster_uid);
	if (obj == NULL || (spec = cJSON_AddObjectToObject(obj, "spec")) == NULL ||
	    (nl = cJSON_AddObjectToObject(spec, "nodeLabels")) == NULL ||
	    cJSON_AddStringToObject(nl, TAU_BUDGET_LABEL_GPU_CLASS, gpu_class) == NULL ||
	    cJSON_AddStringToObject(nl, TAU_BUDGET_LABEL_OS, "linux") == NULL) {
		cJSON_Delete(obj);
		return tau_budget_nomem();
	}
	/* The pool's node selector, so Kueue puts admitted pods only on nodes we counted. */
	if (!cJSON_IsObject(selector))
		selector = NULL;
	cJSON_ArrayForEach(e, selector)
	{
		if (!flavor_own_key(e->string) &&
		    cJSON_AddStringToObject(nl, e->string, e->valuestring) == NULL) {
			cJSON_Delete(obj);
			return tau_budget_nomem();
		}
	}
	*out = obj;
	return 0;
}

/* spec.resourceGroups of the plan: the plan's quotas, or "0" everywhere. */
static cJSON *resource_groups(const tau_budget_plan *plan, bool zero)
{
	cJSON *groups = cJSON_CreateArray(), *g, *covered, *flavors;
	char text[TAU_QUANTITY_STR_MAX];

	if (groups == NULL || plan->n_resources == 0 || plan->n_flavors == 0)
		return groups;
	if ((g = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(groups, g))
		goto fail_g;
	if ((covered = cJSON_AddArrayToObject(g, "coveredResources")) == NULL ||
	    (flavors = cJSON_AddArrayToObject(g, "flavors")) == NULL)
		goto fail;
	for (size_t r = 0; r < plan->n_resources; r++) {
		cJSON *s = cJSON_CreateString(plan->resources[r]);

		if (s == NULL || !cJSON_AddItemToArray(covered, s))
			goto fail;
	}
	for (size_t f = 0; f < plan->n_flavors; f++) {
		cJSON *fo = cJSON_CreateObject(), *rs;

		if (fo == NULL || !cJSON_AddItemToArray(flavors, fo))
			goto fail;
		if (cJSON_AddStringToObject(fo, "name", plan->flavors[f].name) == NULL ||
		    (rs = cJSON_AddArrayToObject(fo, "resources")) == NULL)
			goto fail;
		for (size_t r = 0; r < plan->n_resources; r++) {
			cJSON *ro = cJSON_CreateObject();

			if (ro == NULL || !cJSON_AddItemToArray(rs, ro))
				goto fail;
			if (zero)
				snprintf(text, sizeof(text), "0");
			else if (tau_quantity_format(text, sizeof(text),
			                             tau_budget_plan_quota(plan, f, r)) < 0)
				goto fail;
			if (cJSON_AddStringToObject(ro, "name", plan->resources[r]) == NULL ||
			    cJSON_AddStringToObject(ro, "nominalQuota", text) == NULL)
				goto fail;
		}
	}
	return groups;
fail_g:
	cJSON_Delete(g);
fail:
	cJSON_Delete(groups);
	return NULL;
}

int tau_budget_desired_cohort(cJSON **out, const tau_budget_plan *plan, const char *team,
                              const char *team_uid, bool zeroed)
{
	char name[TAU_BUDGET_NAME_BUF];
	const char *labels[] = {TAU_BUDGET_LABEL_TEAM, team};
	cJSON *obj, *spec, *groups;
	int rc;

	if (out == NULL || plan == NULL || team_uid == NULL || team_uid[0] == '\0')
		return tau_error_set(TAU_EINVAL, "desired Cohort: missing plan or TauTeam UID");
	if ((rc = check_label_value(team, "team")) < 0 ||
	    (rc = tau_budget_cohort_name(name, sizeof(name), team)) < 0)
		return rc;
	obj = new_object("Cohort", name, labels, 2, TAU_BUDGET_ANNOTATION_TEAM_UID, team_uid);
	if (obj == NULL || (spec = cJSON_AddObjectToObject(obj, "spec")) == NULL ||
	    (groups = resource_groups(plan, zeroed)) == NULL) {
		cJSON_Delete(obj);
		return tau_budget_nomem();
	}
	cJSON_AddItemToObject(spec, "resourceGroups", groups);
	*out = obj;
	return 0;
}

int tau_budget_desired_cluster_queue(cJSON **out, const tau_budget_plan *plan, const char *team,
                                     const char *workspace, const char *workspace_uid,
                                     const char *ns)
{
	char name[TAU_BUDGET_NAME_BUF], cohort[TAU_BUDGET_NAME_BUF];
	const char *labels[] = {TAU_BUDGET_LABEL_TEAM, team, TAU_BUDGET_LABEL_WORKSPACE, workspace};
	cJSON *obj, *spec, *groups = NULL, *sel, *ml;
	int rc;

	if (out == NULL || plan == NULL || workspace_uid == NULL || workspace_uid[0] == '\0' ||
	    ns == NULL)
		return tau_error_set(TAU_EINVAL, "desired ClusterQueue: missing plan, TauWorkspace "
		                                 "UID or namespace");
	if ((rc = check_label_value(team, "team")) < 0 ||
	    (rc = check_label_value(workspace, "workspace")) < 0)
		return rc;
	if (tau_names_check_dns1123_label(ns) < 0)
		return tau_error_wrap("desired ClusterQueue: namespace: Invalid value");
	if ((rc = tau_budget_cluster_queue_name(name, sizeof(name), workspace)) < 0 ||
	    (rc = tau_budget_cohort_name(cohort, sizeof(cohort), team)) < 0)
		return rc;
	obj = new_object("ClusterQueue", name, labels, 4, TAU_BUDGET_ANNOTATION_WORKSPACE_UID,
	                 workspace_uid);
	if (obj == NULL || (spec = cJSON_AddObjectToObject(obj, "spec")) == NULL ||
	    cJSON_AddStringToObject(spec, "cohortName", cohort) == NULL ||
	    (sel = cJSON_AddObjectToObject(spec, "namespaceSelector")) == NULL ||
	    (ml = cJSON_AddObjectToObject(sel, "matchLabels")) == NULL ||
	    cJSON_AddStringToObject(ml, TAU_BUDGET_LABEL_NAMESPACE_NAME, ns) == NULL ||
	    (groups = resource_groups(plan, true)) == NULL) {
		cJSON_Delete(obj);
		return tau_budget_nomem();
	}
	cJSON_AddItemToObject(spec, "resourceGroups", groups);
	*out = obj;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison                                                                                  */

/* Every key of want (a JSON map) has the same string value in have. */
static bool map_subset(const cJSON *want, const cJSON *have, const char *path, char *what,
                       size_t what_len)
{
	const cJSON *item;

	cJSON_ArrayForEach(item, want)
	{
		const char *got = tau_json_member_str(have, item->string);

		if (cJSON_IsString(item) && !tau_budget_streq(got, item->valuestring)) {
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

static bool quantity_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                           size_t what_len)
{
	tau_quantity a, b;
	char d[130];

	if ((want == NULL || cJSON_IsNull(want)) && (have == NULL || cJSON_IsNull(have)))
		return true;
	if (want != NULL && have != NULL && tau_budget_quantity_of(&a, want) == 0 &&
	    tau_budget_quantity_of(&b, have) == 0 && tau_quantity_cmp(&a, &b) == 0)
		return true;
	tau_error_clear();
	describe(d, sizeof(d), have);
	tau_str_printf(what, what_len, "%s is %s, want %s", path, d,
	               cJSON_IsString(want) ? want->valuestring : "absent");
	return false;
}

static bool strings_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                          size_t what_len)
{
	char d[130];

	if (cJSON_IsString(want) && cJSON_IsString(have) &&
	    strcmp(want->valuestring, have->valuestring) == 0)
		return true;
	describe(d, sizeof(d), have);
	tau_str_printf(what, what_len, "%s is %s, want \"%.120s\"", path, d,
	               cJSON_IsString(want) ? want->valuestring : "");
	return false;
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

	tau_str_printf(p, sizeof(p), "%s.name", path);
	if (!strings_equal(cJSON_GetObjectItemCaseSensitive(want, "name"),
	                   cJSON_GetObjectItemCaseSensitive(have, "name"), p, what, what_len))
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

static bool flavor_equal(const cJSON *want, const cJSON *have, const char *path, char *what,
                         size_t what_len)
{
	const cJSON *wr = cJSON_GetObjectItemCaseSensitive(want, "resources");
	const cJSON *hr = cJSON_GetObjectItemCaseSensitive(have, "resources");
	char p[256];

	tau_str_printf(p, sizeof(p), "%s.name", path);
	if (!strings_equal(cJSON_GetObjectItemCaseSensitive(want, "name"),
	                   cJSON_GetObjectItemCaseSensitive(have, "name"), p, what, what_len))
		return false;
	tau_str_printf(p, sizeof(p), "%s.resources", path);
	if (!list_len_equal(wr, hr, p, what, what_len))
		return false;
	for (int i = 0; i < list_size(wr); i++) {
		tau_str_printf(p, sizeof(p), "%s.resources[%d]", path, i);
		if (!resource_equal(cJSON_GetArrayItem(wr, i), cJSON_GetArrayItem(hr, i), p, what,
		                    what_len))
			return false;
	}
	return true;
}

static bool groups_equal(const cJSON *want, const cJSON *have, char *what, size_t what_len)
{
	char p[256];

	if (!list_len_equal(want, have, "spec.resourceGroups", what, what_len))
		return false;
	for (int g = 0; g < list_size(want); g++) {
		const cJSON *wg = cJSON_GetArrayItem(want, g), *hg = cJSON_GetArrayItem(have, g);
		const cJSON *wc = cJSON_GetObjectItemCaseSensitive(wg, "coveredResources");
		const cJSON *hc = cJSON_GetObjectItemCaseSensitive(hg, "coveredResources");
		const cJSON *wf = cJSON_GetObjectItemCaseSensitive(wg, "flavors");
		const cJSON *hf = cJSON_GetObjectItemCaseSensitive(hg, "flavors");

		tau_str_printf(p, sizeof(p), "spec.resourceGroups[%d].coveredResources", g);
		if (!list_len_equal(wc, hc, p, what, what_len))
			return false;
		for (int i = 0; i < list_size(wc); i++) {
			tau_str_printf(p, sizeof(p), "spec.resourceGroups[%d].coveredResources[%d]",
			               g, i);
			if (!strings_equal(cJSON_GetArrayItem(wc, i), cJSON_GetArrayItem(hc, i), p,
			                   what, what_len))
				return false;
		}
		tau_str_printf(p, sizeof(p), "spec.resourceGroups[%d].flavors", g);
		if (!list_len_equal(wf, hf, p, what, what_len))
			return false;
		for (int i = 0; i < list_size(wf); i++) {
			tau_str_printf(p, sizeof(p), "spec.resourceGroups[%d].flavors[%d]", g, i);
			if (!flavor_equal(cJSON_GetArrayItem(wf, i), cJSON_GetArrayItem(hf, i), p,
			                  what, what_len))
				return false;
		}
	}
	return true;
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

	if (tau_budget_streq(k, "ResourceFlavor"))
		return KIND_RF;
	if (tau_budget_streq(k, "Cohort"))
		return KIND_COHORT;
	if (tau_budget_streq(k, "ClusterQueue"))
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
		    !(cJSON_IsString(parent) && parent->valuestring[0] == '\0')) {
			char d[130];

			describe(d, sizeof(d), parent);
			tau_str_printf(what, what_len, "spec.parentName is %s, want absent", d);
			eq = false;
		}
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
		eq = groups_equal(tau_json_find(desired, "spec.resourceGroups"),
		                  tau_json_find(observed, "spec.resourceGroups"), what, what_len);
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

/* ------------------------------------------------------------------------------------------ */
/* Merge                                                                                       */

/* The object member `key` of obj, replaced by a new {} when absent or not an object. */
static cJSON *object_member(cJSON *obj, const char *key)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsObject(v))
		return v;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	return cJSON_AddObjectToObject(obj, key);
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
	have = object_member(meta, map + strlen("metadata."));
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
	    (meta = object_member(body, "metadata")) == NULL ||
	    !merge_map(meta, desired, "metadata.labels") ||
	    !merge_map(meta, desired, "metadata.annotations") ||
	    (spec = object_member(body, "spec")) == NULL)
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
	if ((meta = object_member(body, "metadata")) == NULL ||
	    (ann = object_member(meta, "annotations")) == NULL ||
	    (spec = object_member(body, "spec")) == NULL) {
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

/* ------------------------------------------------------------------------------------------ */
/* Ownership                                                                                   */

const char *tau_budget_owner_annotation(tau_budget_kind kind)
{
	switch (kind) {
	case TAU_BUDGET_RESOURCE_FLAVOR:
		return TAU_BUDGET_ANNOTATION_CLUSTER_UID;
	case TAU_BUDGET_COHORT:
		return TAU_BUDGET_ANNOTATION_TEAM_UID;
	case TAU_BUDGET_CLUSTER_QUEUE:
	case TAU_BUDGET_TEAM:
		return TAU_BUDGET_ANNOTATION_WORKSPACE_UID;
	}
	return TAU_BUDGET_ANNOTATION_WORKSPACE_UID;
}

const char *tau_budget_ownership_name(tau_budget_ownership ownership)
{
	switch (ownership) {
	case TAU_BUDGET_OWNED:
		return "Owned";
	case TAU_BUDGET_OTHER_OWNER:
		return "OtherOwner";
	case TAU_BUDGET_LEGACY_OWNER:
		return "LegacyOwner";
	case TAU_BUDGET_FOREIGN:
		return "Foreign";
	}
	return "Foreign";
}

tau_budget_ownership tau_budget_ownership_of(const cJSON *observed, tau_budget_kind kind,
                                             const char *expected_uid, char *why, size_t why_len)
{
	const char *key = tau_budget_owner_annotation(kind);
	const char *mb = tau_json_label(observed, TAU_BUDGET_LABEL_MANAGED_BY);
	const char *uid = tau_json_annotation(observed, key);

	tau_str_printf(why, why_len, "%s", "");
	if (!tau_budget_streq(mb, TAU_BUDGET_MANAGED_BY)) {
		if (mb == NULL)
			tau_str_printf(why, why_len, "label %s is absent: not managed by TauGrid",
			               TAU_BUDGET_LABEL_MANAGED_BY);
		else
			tau_str_printf(why, why_len, "label %s is \"%.100s\", not \"%s\"",
			               TAU_BUDGET_LABEL_MANAGED_BY, mb, TAU_BUDGET_MANAGED_BY);
		return TAU_BUDGET_FOREIGN;
	}
	if (uid == NULL) {
		tau_str_printf(
		        why, why_len,
		        "legacy ownership metadata: labelled %s=%s but no %s annotation, so its "
		        "owner "
		        "cannot be proven",
		        TAU_BUDGET_LABEL_MANAGED_BY, TAU_BUDGET_MANAGED_BY, key);
		return TAU_BUDGET_LEGACY_OWNER;
	}
	if (expected_uid == NULL || expected_uid[0] == '\0' || strcmp(uid, expected_uid) != 0) {
		tau_str_printf(why, why_len,
		               "annotation %s is \"%.100s\", not \"%.100s\": another owner", key,
		               uid, expected_uid != NULL ? expected_uid : "");
		return TAU_BUDGET_OTHER_OWNER;
	}
	return TAU_BUDGET_OWNED;
}
