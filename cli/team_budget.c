/*
 * team_budget.c - the budget rows of `tau team status`: the team's Cohort
 * nominalQuota beside its pool, per flavor and resource.
 *
 * The one idea: the rows are the union of what the Cohort holds and what the
 * pool holds (the TauCluster's discoveredCapacity for the capacity team,
 * spec.quota for an explicit one), matched by flavor with the taugrid-gpu-
 * prefix optional, sorted; an explicit team's rows also sum its workspaces'
 * guarantees, the allocation applied to Kueue and what is reserved of it, by
 * the aggregator's definitions (docs/budget.md E4, E5); a capacity team's
 * rows say the part of the pool DRA devices give when an aggregator answered.
 */
#include "team_internal.h"

#include "tau/array.h"
#include "tau/error.h"
#include "tau/json.h"

#include <stdlib.h>
#include <string.h>

#define NO_AGGREGATOR "no aggregator named " TAU_CLI_AGGREGATOR_HINT

/* ------------------------------------------------------------------------------------------ */
/* status: the budget beside the pool                                                          */

/* A sum over several objects (explicit teams); `bad` when a term did not parse (warned). */
typedef struct row_sum {
	tau_quantity q;
	bool bad;
} row_sum;

typedef struct budget_row {
	const char *flavor;   /* borrowed from the inputs */
	const char *resource; /* borrowed */
	const cJSON *budget;  /* Cohort nominalQuota, or NULL */
	const cJSON *pool;    /* discoveredCapacity / spec.quota value, or NULL */
	/* Explicit teams only: */
	row_sum guarantees; /* the team's workspaces' spec.quota nominalQuota */
	row_sum applied;    /* the Cohort's and its TauGrid ClusterQueues' nominalQuota */
	row_sum reserved;   /* those ClusterQueues' status.flavorsReservation totals */
} budget_row;

typedef struct budget_rows {
	budget_row *v;
	size_t n, cap;
} budget_rows;

static budget_row *row_find(budget_rows *rows, const char *flavor, const char *resource)
{
	for (size_t i = 0; i < rows->n; i++)
		if (tau_str_eq_both_set(rows->v[i].flavor, flavor) &&
		    tau_str_eq_both_set(rows->v[i].resource, resource))
			return &rows->v[i];
	return NULL;
}

static budget_row *row_add(budget_rows *rows, const char *flavor, const char *resource)
{
	budget_row *r = row_find(rows, flavor, resource);

	if (r != NULL)
		return r;
	if (tau_array_grow((void **)&rows->v, &rows->cap, rows->n + 1, sizeof(*rows->v)) < 0)
		return NULL;
	r = &rows->v[rows->n++];
	memset(r, 0, sizeof(*r));
	r->flavor = flavor;
	r->resource = resource;
	r->guarantees.q = r->applied.q = r->reserved.q = tau_quantity_zero();
	return r;
}

static int row_cmp(const void *a, const void *b)
{
	const budget_row *x = a, *y = b;
	int c = strcmp(x->flavor, y->flavor);

	return c != 0 ? c : strcmp(x->resource, y->resource);
}

/*
 * The Cohort flavor a pool entry's flavor stands for: the same name, else
 * taugrid-gpu-<flavor> when the Cohort holds that (discoveredCapacity may name the GPU
 * class), else the name itself.
 */
static const char *cohort_flavor(const budget_rows *rows, const char *flavor)
{
	size_t plen = strlen(TAU_CLI_TEAM_FLAVOR_PREFIX);

	for (size_t i = 0; i < rows->n; i++)
		if (tau_str_eq_both_set(rows->v[i].flavor, flavor))
			return rows->v[i].flavor;
	for (size_t i = 0; i < rows->n; i++)
		if (strncmp(rows->v[i].flavor, TAU_CLI_TEAM_FLAVOR_PREFIX, plen) == 0 &&
		    strcmp(rows->v[i].flavor + plen, flavor) == 0)
			return rows->v[i].flavor;
	return flavor;
}

static int collect_budget(budget_rows *rows, const cJSON *cohort, const cJSON *pool,
                          const char *value_key)
{
	const cJSON *rg, *fl, *res, *p;

	cJSON_ArrayForEach(rg, tau_json_find(cohort, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(rg, "flavors"))
		{
			const char *flavor = tau_json_str(fl, "name");

			cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
			{
				const char *rname = tau_json_str(res, "name");
				budget_row *r;

				if (flavor == NULL || rname == NULL)
					continue;
				if ((r = row_add(rows, flavor, rname)) == NULL)
					return -TAU_ENOMEM;
				r->budget = cJSON_GetObjectItemCaseSensitive(res, "nominalQuota");
			}
		}
	}
	cJSON_ArrayForEach(p, pool)
	{
		const char *flavor = tau_json_str(p, "flavor"),
		           *rname = tau_json_str(p, "resource");
		budget_row *r;

		if (flavor == NULL || rname == NULL)
			continue;
		if ((r = row_add(rows, cohort_flavor(rows, flavor), rname)) == NULL)
			return -TAU_ENOMEM;
		r->pool = cJSON_GetObjectItemCaseSensitive(p, value_key);
	}
	return 0;
}

/*
 * Add the quantity v (member `field` of an entry) to the sum `which` of row (flavor,
 * resource); a term that does not parse is warned about as "<what> flavor F resource R
 * <field>: why" and makes the sum unknown.
 */
static int sum_add(budget_rows *rows, size_t which, const char *what, const char *flavor,
                   const char *resource, const cJSON *entry, const char *field, cJSON *doc)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(entry, field);
	budget_row *r;
	row_sum *sum;
	tau_quantity q;

	if (flavor == NULL || resource == NULL || v == NULL)
		return 0;
	if ((r = row_add(rows, flavor, resource)) == NULL)
		return -TAU_ENOMEM;
	sum = which == 0 ? &r->guarantees : which == 1 ? &r->applied : &r->reserved;
	if (tau_cli_team_quantity_of(&q, v) != 0) {
		if (tau_error_last()->code == TAU_ENOMEM)
			return -TAU_ENOMEM;
		tau_cli_team_warn(doc, "%s flavor %s resource %s %s: %s", what, flavor, resource,
		                  field, tau_error_last()->msg);
		sum->bad = true;
	} else if (tau_quantity_add(&sum->q, &sum->q, &q) != 0) {
		tau_cli_team_warn(doc,
		                  "%s flavor %s resource %s %s: the sum does not fit a quantity",
		                  what, flavor, resource, field);
		sum->bad = true;
	}
	return 0;
}

/* Add every flavor and resource `field` of obj's spec.resourceGroups to the sum `which`. */
static int sum_groups(budget_rows *rows, size_t which, const cJSON *obj, const char *field,
                      cJSON *doc)
{
	const cJSON *rg, *fl, *res;
	char what[600];
	int rc;

	snprintf(what, sizeof(what), "%s %s", tau_cli_team_or_none(tau_json_str(obj, "kind")),
	         tau_cli_team_or_none(tau_json_str(obj, "metadata.name")));
	cJSON_ArrayForEach(rg, tau_json_find(obj, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(rg, "flavors"))
		{
			cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
			{
				if ((rc = sum_add(rows, which, what, tau_json_str(fl, "name"),
				                  tau_json_str(res, "name"), res, field, doc)) < 0)
					return rc;
			}
		}
	}
	return 0;
}

/*
 * An explicit team's sums: the guarantees of the TauWorkspaces whose teamRef is the team; the
 * applied allocation, its Cohort's nominalQuota plus that of every TauGrid ClusterQueue
 * (managed-by taugrid) whose spec.cohortName is the Cohort, as written; the reserved total of
 * those queues (status.flavorsReservation).  The same definitions as the aggregator's (E4, E5).
 */
static int collect_explicit(budget_rows *rows, const tau_cli_team_input *in, const char *team,
                            const char *cohort_name, cJSON *doc)
{
	const cJSON *w, *e, *q, *fl, *res;
	char what[600];
	int rc;

	cJSON_ArrayForEach(w, tau_cli_team_items_of(in->workspaces))
	{
		if (!tau_str_eq_both_set(tau_json_str(w, "spec.teamRef.name"), team))
			continue;
		snprintf(what, sizeof(what), "TauWorkspace %s spec.quota",
		         tau_cli_team_or_none(tau_json_str(w, "metadata.name")));
		cJSON_ArrayForEach(e, tau_json_find(w, "spec.quota"))
		{
			if ((rc = sum_add(rows, 0, what, tau_json_str(e, "flavor"),
			                  tau_json_str(e, "resource"), e, "nominalQuota", doc)) < 0)
				return rc;
		}
	}
	if (in->cohort != NULL && (rc = sum_groups(rows, 1, in->cohort, "nominalQuota", doc)) < 0)
		return rc;
	cJSON_ArrayForEach(q, tau_cli_team_items_of(in->queues))
	{
		if (!tau_str_eq_both_set(tau_json_label(q, TAU_CLI_TEAM_LABEL_MANAGED),
		                         TAU_CLI_TEAM_MANAGED_BY) ||
		    !tau_str_eq_both_set(tau_json_str(q, "spec.cohortName"), cohort_name))
			continue;
		if ((rc = sum_groups(rows, 1, q, "nominalQuota", doc)) < 0)
			return rc;
		snprintf(what, sizeof(what), "ClusterQueue %s",
		         tau_cli_team_or_none(tau_json_str(q, "metadata.name")));
		cJSON_ArrayForEach(fl, tau_json_find(q, "status.flavorsReservation"))
		{
			cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
			{
				if ((rc = sum_add(rows, 2, what, tau_json_str(fl, "name"),
				                  tau_json_str(res, "name"), res, "total", doc)) <
				    0)
					return rc;
			}
		}
	}
	return 0;
}

static void put_sum(cJSON *o, const char *key, const row_sum *sum)
{
	char canon[TAU_QUANTITY_STR_MAX];

	if (sum->bad || tau_quantity_format(canon, sizeof(canon), &sum->q) != 0)
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddStringToObject(o, key, canon);
}

/*
 * The part of flavor `flavor`'s `resource` that comes through DRA, from the aggregator's
 * {class: {resource: quantity}}: the flavor names the class itself or is taugrid-gpu-<class>
 * ("0" when the class has none of it); NULL when no class of the pool matches.
 */
static const char *via_dra(const cJSON *dra, const char *flavor, const char *resource)
{
	size_t plen = strlen(TAU_CLI_TEAM_FLAVOR_PREFIX);
	const cJSON *cls;

	cJSON_ArrayForEach(cls, dra)
	{
		const char *q;

		if (cls->string == NULL ||
		    (!tau_str_eq_both_set(cls->string, flavor) &&
		     !(strncmp(flavor, TAU_CLI_TEAM_FLAVOR_PREFIX, plen) == 0 &&
		       tau_str_eq_both_set(cls->string, flavor + plen))))
			continue;
		/* not tau_json_str: a resource name holds dots, which it reads as a path */
		q = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cls, resource));
		return q != NULL ? q : "0";
	}
	return NULL;
}

/* A capacity team's "dra": whether the aggregator was asked for the DRA part of the pool. */
static void add_dra(cJSON *doc, const tau_cli_team_input *in)
{
	cJSON *o = cJSON_AddObjectToObject(doc, "dra");

	cJSON_AddBoolToObject(o, "checked", in->dra != NULL);
	tau_cli_team_put(o, "aggregator", in->aggregator);
	tau_cli_team_put(o, "reason",
	                 in->dra != NULL ? NULL
	                 : in->aggregator != NULL
	                         ? (in->dra_error != NULL ? in->dra_error : "no answer")
	                         : NO_AGGREGATOR);
	if (in->dra == NULL && in->aggregator != NULL)
		tau_cli_team_warn(
		        doc,
		        "aggregator %s: GetPool failed: %s; the part of the pool that comes "
		        "through DRA is unknown",
		        in->aggregator, in->dra_error != NULL ? in->dra_error : "no answer");
}

cJSON *tau_cli_team_pool_dra(const Tau__Inventory__V1__Pool *pool)
{
	cJSON *out = cJSON_CreateObject();

	for (size_t i = 0; out != NULL && i < pool->n_flavors; i++) {
		const Tau__Inventory__V1__Flavor *f = pool->flavors[i];
		cJSON *cls = cJSON_AddObjectToObject(out, f->name);

		for (size_t r = 0; cls != NULL && r < f->n_dra_resources; r++)
			if (cJSON_AddStringToObject(cls, f->dra_resources[r]->key,
			                            f->dra_resources[r]->value) == NULL)
				cls = NULL;
		if (cls == NULL) {
			cJSON_Delete(out);
			out = NULL;
		}
	}
	if (out == NULL)
		tau_error_set(TAU_ENOMEM, "out of memory");
	return out;
}

int tau_cli_team_add_budget(cJSON *doc, const tau_cli_team_input *in, bool capacity,
                            const char *team, const char *cohort_name)
{
	const cJSON *pool = capacity ? tau_json_find(in->cluster, "status.discoveredCapacity")
	                             : tau_json_find(in->team, "spec.quota");
	const char *value_key = capacity ? "capacity" : "nominalQuota";
	budget_rows rows = {0};
	char where[1024];
	cJSON *arr;

	tau_cli_team_put(doc, "poolSource",
	                 capacity ? TAU_CLI_TEAM_SRC_DISCOVERED : TAU_CLI_TEAM_SRC_SPEC_QUOTA);
	if (capacity)
		add_dra(doc, in);
	arr = cJSON_AddArrayToObject(doc, "budget");
	if (collect_budget(&rows, in->cohort, pool, value_key) != 0 ||
	    (!capacity && collect_explicit(&rows, in, team, cohort_name, doc) != 0)) {
		free(rows.v);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	if (rows.n > 1)
		qsort(rows.v, rows.n, sizeof(*rows.v), row_cmp);
	for (size_t i = 0; i < rows.n; i++) {
		const budget_row *r = &rows.v[i];
		cJSON *o = cJSON_CreateObject();

		tau_cli_team_put(o, "flavor", r->flavor);
		tau_cli_team_put(o, "resource", r->resource);
		snprintf(where, sizeof(where), "Cohort %s flavor %s resource %s nominalQuota",
		         cohort_name, r->flavor, r->resource);
		tau_cli_team_put_quantity(o, "budget", r->budget, doc, where);
		snprintf(where, sizeof(where), "%s flavor %s resource %s",
		         capacity ? "TauCluster " TAU_CLI_CLUSTER_NAME " status.discoveredCapacity"
		                  : "TauTeam spec.quota",
		         r->flavor, r->resource);
		tau_cli_team_put_quantity(o, "pool", r->pool, doc, where);
		if (capacity && in->dra != NULL)
			tau_cli_team_put(o, "viaDra", via_dra(in->dra, r->flavor, r->resource));
		if (!capacity) {
			put_sum(o, "guarantees", &r->guarantees);
			put_sum(o, "applied", &r->applied);
			put_sum(o, "reserved", &r->reserved);
		}
		cJSON_AddItemToArray(arr, o);
	}
	free(rows.v);
	return 0;
}
