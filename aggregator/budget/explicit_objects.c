/*
 * explicit_objects.c - the Kueue objects of an explicit-quota team built from its cells
 * (explicit_objects.h): the team's Cohort holding the remainder and each workspace's
 * ClusterQueue holding its guarantee, both on the same flavor x resource grid.
 *
 * The one idea: the cells become a plan (desired.h) over their full grid, so desired.c builds
 * the objects exactly as for the capacity team, and only the quota fields differ.
 */
#include "explicit_objects.h"

#include "explicit.h"
#include "helpers.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdlib.h>
#include <string.h>

/* A plan (desired.h) of the shape's full flavor x resource grid, quotas from `q`. */
static int plan_of(tau_budget_plan **out, const tau_budget_cells *shape, const tau_budget_cells *q)
{
	tau_budget_plan *p = calloc(1, sizeof(*p));
	size_t nf = 0, nr = 0;

	if (p == NULL)
		return tau_budget_nomem();
	p->resources = calloc(shape->n + 1, sizeof(*p->resources));
	p->flavors = calloc(shape->n + 1, sizeof(*p->flavors));
	if (p->resources == NULL || p->flavors == NULL)
		goto oom;
	for (size_t i = 0; i < shape->n; i++) {
		const char *f = shape->items[i].flavor, *r = shape->items[i].resource;
		bool have_r = false;
		size_t at;

		if (nf == 0 || strcmp(p->flavors[nf - 1].name, f) != 0)
			if ((p->flavors[nf++].name = strdup(f)) == NULL)
				goto oom;
		for (at = 0; at < nr && !have_r; at++)
			have_r = strcmp(p->resources[at], r) == 0;
		if (have_r)
			continue;
		for (at = 0; at < nr && strcmp(p->resources[at], r) < 0; at++)
			;
		memmove(&p->resources[at + 1], &p->resources[at], (nr - at) * sizeof(char *));
		nr++;
		if ((p->resources[at] = strdup(r)) == NULL)
			goto oom;
	}
	p->n_flavors = nf;
	p->n_resources = nr;
	p->quota = calloc(nf * nr + 1, sizeof(*p->quota));
	if (p->quota == NULL)
		goto oom;
	for (size_t f = 0; f < nf; f++)
		for (size_t r = 0; r < nr; r++)
			p->quota[f * nr + r] =
			        tau_budget_cells_get(q, p->flavors[f].name, p->resources[r]);
	*out = p;
	return 0;
oom:
	p->n_flavors = nf;
	p->n_resources = nr;
	tau_budget_plan_free(p);
	return tau_budget_nomem();
}

static int set_qty(cJSON *obj, const char *key, const tau_quantity *q)
{
	char text[TAU_QUANTITY_STR_MAX];

	if (tau_quantity_format(text, sizeof(text), q) < 0)
		return tau_error_set(TAU_ERANGE, "explicit quota: quantity cannot be written");
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	return cJSON_AddStringToObject(obj, key, text) != NULL ? 0 : tau_budget_nomem();
}

static int add_label(cJSON *obj, const char *key, const char *value)
{
	cJSON *labels = (cJSON *)tau_json_find(obj, "metadata.labels");

	if (!cJSON_IsObject(labels) || cJSON_AddStringToObject(labels, key, value) == NULL)
		return tau_budget_nomem();
	return 0;
}

int tau_budget_explicit_cohort(cJSON **out, const char *team, const char *uid,
                               const tau_budget_cells *shape, const tau_budget_cells *quota)
{
	tau_budget_plan *plan = NULL;
	int rc = plan_of(&plan, shape, quota);

	if (rc == 0)
		rc = tau_budget_desired_cohort(out, plan, team, uid, false);
	if (rc == 0 &&
	    (rc = add_label(*out, TAU_BUDGET_LABEL_QUOTA_MODE, TAU_BUDGET_QUOTA_MODE_EXPLICIT)) < 0)
		cJSON_Delete(*out);
	tau_budget_plan_free(plan);
	return rc;
}

int tau_budget_explicit_cluster_queue(cJSON **out, const char *team, const cJSON *ws,
                                      const char *ns, const tau_budget_cells *shape,
                                      const tau_budget_cells *nominal,
                                      const tau_budget_cells *borrowing,
                                      const tau_budget_cells *lending)
{
	tau_budget_plan *plan = NULL;
	cJSON *g, *f, *r;
	int rc = plan_of(&plan, shape, nominal);

	if (rc == 0)
		rc = tau_budget_desired_cluster_queue(out, plan, team,
		                                      tau_json_str(ws, "metadata.name"),
		                                      tau_json_str(ws, "metadata.uid"), ns);
	tau_budget_plan_free(plan);
	if (rc < 0)
		return rc;
	cJSON_ArrayForEach(g, (cJSON *)tau_json_find(*out, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			const char *fname = tau_json_str(f, "name");

			cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
			{
				const char *rname = tau_json_str(r, "name");
				tau_quantity n = tau_budget_cells_get(nominal, fname, rname),
				             b = tau_budget_cells_get(borrowing, fname, rname),
				             l = tau_budget_cells_get(lending, fname, rname);

				if ((rc = set_qty(r, "nominalQuota", &n)) < 0 ||
				    (rc = set_qty(r, "borrowingLimit", &b)) < 0 ||
				    (rc = set_qty(r, "lendingLimit", &l)) < 0) {
					cJSON_Delete(*out);
					*out = NULL;
					return rc;
				}
			}
		}
	}
	return 0;
}
