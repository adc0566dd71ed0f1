/*
 * cells.c - quantities keyed by (flavor, resource), the exact arithmetic of explicit-quota
 * teams (cells.h).
 *
 * The one idea: a quota is a sorted set of cells, and every step of an explicit team's
 * decision (remainder, applied allocation, new maximum, what a migration needs) is cell-wise
 * addition, subtraction or comparison on tau_quantity, so nothing is rounded and no cell is
 * confused with another.  spec.quota lists and Kueue resourceGroups are read into cells here.
 */
#include "cells.h"

#include "desired.h"
#include "helpers.h"

#include "inventory/sorted.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/str.h"
#include "tau/array.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tau_budget_quantity_text(char *buf, size_t len, const tau_quantity *q)
{
	if (tau_quantity_format(buf, len, q) < 0)
		snprintf(buf, len, "?");
}

void tau_budget_cells_clear(tau_budget_cells *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n; i++)
		tau_free_many(c->items[i].flavor, c->items[i].resource);
	free(c->items);
	memset(c, 0, sizeof(*c));
}

void tau_budget_cells_clear_each(tau_budget_cells *const *sets, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tau_budget_cells_clear(sets[i]);
}

/* A cell's place among cells sorted by flavor, then resource. */
struct cell_key {
	const char *flavor, *resource;
};

static int cell_cmp(const void *elem, const void *key)
{
	const tau_budget_cell *a = elem;
	const struct cell_key *k = key;
	int c = strcmp(a->flavor, k->flavor);

	return c != 0 ? c : strcmp(a->resource, k->resource);
}

/* Index of the cell, or where it would go (*found false). */
static size_t cell_find(const tau_budget_cells *c, const char *flavor, const char *resource,
                        bool *found)
{
	const struct cell_key key = {flavor, resource};

	return tau_sorted_search(c->items, c->n, sizeof(*c->items), cell_cmp, &key, found);
}

int tau_budget_cells_add(tau_budget_cells *c, const char *flavor, const char *resource,
                         const tau_quantity *q)
{
	bool found;
	size_t at;
	tau_budget_cell *cell;

	if (c == NULL || flavor == NULL || resource == NULL || q == NULL || flavor[0] == '\0' ||
	    resource[0] == '\0')
		return tau_error_set(TAU_EINVAL,
		                     "explicit quota: a cell needs flavor and resource");
	at = cell_find(c, flavor, resource, &found);
	if (found)
		return tau_quantity_add(&c->items[at].q, &c->items[at].q, q);
	if (tau_array_grow((void **)&c->items, &c->cap, c->n + 1, sizeof(*c->items)) < 0)
		return -TAU_ENOMEM;
	memmove(&c->items[at + 1], &c->items[at], (c->n - at) * sizeof(*c->items));
	cell = &c->items[at];
	cell->flavor = strdup(flavor);
	cell->resource = strdup(resource);
	cell->q = *q;
	c->n++;
	if (cell->flavor == NULL || cell->resource == NULL)
		return tau_budget_nomem();
	return 0;
}

tau_quantity tau_budget_cells_get(const tau_budget_cells *c, const char *flavor,
                                  const char *resource)
{
	bool found = false;
	size_t at = c != NULL && flavor != NULL && resource != NULL
	                    ? cell_find(c, flavor, resource, &found)
	                    : 0;

	return found ? c->items[at].q : tau_quantity_zero();
}

int tau_budget_cells_merge(tau_budget_cells *dst, const tau_budget_cells *src, int sign)
{
	for (size_t i = 0; i < src->n; i++) {
		tau_quantity q = src->items[i].q, z = tau_quantity_zero();
		int rc;

		if (sign < 0 && (rc = tau_quantity_sub(&q, &z, &src->items[i].q)) < 0)
			return rc;
		if ((rc = tau_budget_cells_add(dst, src->items[i].flavor, src->items[i].resource,
		                               &q)) < 0)
			return rc;
	}
	return 0;
}

int tau_budget_cells_cover(tau_budget_cells *dst, const tau_budget_cells *shape)
{
	tau_quantity z = tau_quantity_zero();

	for (size_t i = 0; i < shape->n; i++) {
		int rc = tau_budget_cells_add(dst, shape->items[i].flavor, shape->items[i].resource,
		                              &z);

		if (rc < 0)
			return rc;
	}
	return 0;
}

static int quantity_of(tau_quantity *q, const cJSON *v, const char *owner, const char *what,
                       char *err, size_t err_len)
{
	char *text;

	if (tau_budget_quantity_of(q, v) == 0 && tau_quantity_sign(q) >= 0)
		return 0;
	tau_error_clear();
	text = cJSON_PrintUnformatted(v);
	snprintf(err, err_len, "%s: %s %s is not a non-negative quantity", owner, what,
	         text != NULL ? text : "?");
	free(text);
	return tau_error_set(TAU_EINVAL, "%s", err);
}

int tau_budget_quota_parse(tau_budget_cells *nominal, tau_budget_cells *borrowing,
                           tau_budget_cells *lending, const cJSON *quota, const char *owner,
                           char *err, size_t err_len)
{
	const cJSON *e;
	size_t i = 0;

	if (err_len > 0)
		err[0] = '\0';
	if (quota == NULL || cJSON_IsNull(quota))
		return 0;
	if (!cJSON_IsArray(quota)) {
		snprintf(err, err_len, "%s: spec.quota is not a list", owner);
		return tau_error_set(TAU_EINVAL, "%s", err);
	}
	cJSON_ArrayForEach(e, quota)
	{
		const char *flavor = tau_json_str(e, "flavor"),
		           *resource = tau_json_str(e, "resource");
		const char *keys[] = {"nominalQuota", "borrowingLimit", "lendingLimit"};
		tau_budget_cells *dst[] = {nominal, borrowing, lending};
		char what[128];
		bool found = false;
		int rc;

		if (flavor == NULL || flavor[0] == '\0' || resource == NULL ||
		    resource[0] == '\0' ||
		    cJSON_GetObjectItemCaseSensitive(e, "nominalQuota") == NULL) {
			snprintf(err, err_len,
			         "%s: spec.quota[%zu] needs flavor, resource and nominalQuota",
			         owner, i);
			return tau_error_set(TAU_EINVAL, "%s", err);
		}
		(void)cell_find(nominal, flavor, resource, &found);
		if (found) {
			snprintf(err, err_len, "%s: spec.quota lists flavor %s resource %s twice",
			         owner, flavor, resource);
			return tau_error_set(TAU_EINVAL, "%s", err);
		}
		for (size_t k = 0; k < 3; k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, keys[k]);
			tau_quantity q = tau_quantity_zero();

			snprintf(what, sizeof(what), "spec.quota[%zu].%s", i, keys[k]);
			if (v != NULL && !cJSON_IsNull(v) &&
			    (rc = quantity_of(&q, v, owner, what, err, err_len)) < 0)
				return rc;
			if (dst[k] != NULL &&
			    (rc = tau_budget_cells_add(dst[k], flavor, resource, &q)) < 0)
				return rc;
		}
		i++;
	}
	return 0;
}

/* Visit list[].name + list[].resources[].name / field of a flavors list. */
static int flavors_read(tau_budget_cells *out, const cJSON *flavors, const char *field,
                        const char *owner)
{
	const cJSON *f, *r;
	char err[256];

	cJSON_ArrayForEach(f, flavors)
	{
		const char *fname = tau_json_str(f, "name");

		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
		{
			const char *rname = tau_json_str(r, "name");
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, field);
			tau_quantity q;
			int rc;

			if (fname == NULL || rname == NULL || v == NULL || cJSON_IsNull(v))
				continue;
			if ((rc = quantity_of(&q, v, owner, field, err, sizeof(err))) < 0 ||
			    (rc = tau_budget_cells_add(out, fname, rname, &q)) < 0)
				return rc;
		}
	}
	return 0;
}

int tau_budget_groups_read(tau_budget_cells *out, const cJSON *obj, const char *field)
{
	const cJSON *g;
	const char *name = tau_json_str(obj, "metadata.name");
	int rc;

	if (out == NULL || field == NULL)
		return tau_error_set(TAU_EINVAL, "explicit quota: missing input");
	cJSON_ArrayForEach(g, tau_json_find(obj, "spec.resourceGroups"))
	{
		if ((rc = flavors_read(out, cJSON_GetObjectItemCaseSensitive(g, "flavors"), field,
		                       name != NULL ? name : "?")) < 0)
			return rc;
	}
	return 0;
}

int tau_budget_reservations_read(tau_budget_cells *out, const cJSON *cq)
{
	const char *name = tau_json_str(cq, "metadata.name");

	if (out == NULL)
		return tau_error_set(TAU_EINVAL, "explicit quota: missing input");
	return flavors_read(out, tau_json_find(cq, "status.flavorsReservation"), "total",
	                    name != NULL ? name : "?");
}

int tau_budget_remainder(tau_budget_cells *out, const tau_budget_cells *team,
                         const tau_budget_cells *guarantees, char *err, size_t err_len)
{
	int rc;

	if (err_len > 0)
		err[0] = '\0';
	if ((rc = tau_budget_cells_merge(out, team, 1)) < 0 ||
	    (rc = tau_budget_cells_merge(out, guarantees, -1)) < 0)
		return rc;
	for (size_t i = 0; i < out->n; i++) {
		if (tau_quantity_sign(&out->items[i].q) < 0) {
			tau_quantity g = tau_budget_cells_get(guarantees, out->items[i].flavor,
			                                      out->items[i].resource),
			             t = tau_budget_cells_get(team, out->items[i].flavor,
			                                      out->items[i].resource);
			char gs[TAU_QUANTITY_STR_MAX], ts[TAU_QUANTITY_STR_MAX];

			tau_budget_quantity_text(gs, sizeof(gs), &g);
			tau_budget_quantity_text(ts, sizeof(ts), &t);
			snprintf(err, err_len,
			         "workspace guarantees %s exceed team quota %s for flavor %s "
			         "resource %s",
			         gs, ts, out->items[i].flavor, out->items[i].resource);
			return tau_error_set(TAU_ERANGE, "%s", err);
		}
	}
	return 0;
}

int tau_budget_applied(tau_budget_cells *out, const char *cohort, const cJSON *const *cohorts,
                       size_t n_cohorts, const cJSON *const *cqs, size_t n_cqs)
{
	int rc;

	if (out == NULL || cohort == NULL)
		return tau_error_set(TAU_EINVAL, "explicit quota: missing input");
	for (size_t i = 0; i < n_cohorts; i++)
		if (tau_str_eq_both_set(tau_json_str(cohorts[i], "metadata.name"), cohort) &&
		    (rc = tau_budget_groups_read(out, cohorts[i], "nominalQuota")) < 0)
			return rc;
	for (size_t i = 0; i < n_cqs; i++)
		if (tau_budget_is_managed(cqs[i]) &&
		    tau_str_eq_both_set(tau_json_str(cqs[i], "spec.cohortName"), cohort) &&
		    (rc = tau_budget_groups_read(out, cqs[i], "nominalQuota")) < 0)
			return rc;
	return 0;
}

int tau_budget_new_maximum(tau_budget_cells *out, const tau_budget_cells *nominal,
                           const tau_budget_cells *borrowing)
{
	int rc;

	if (out == NULL || nominal == NULL || borrowing == NULL)
		return tau_error_set(TAU_EINVAL, "explicit quota: missing input");
	if ((rc = tau_budget_cells_merge(out, nominal, 1)) < 0 ||
	    (rc = tau_budget_cells_merge(out, borrowing, 1)) < 0)
		return rc;
	return 0;
}

bool tau_budget_cells_first_above(const tau_budget_cells *a, const tau_budget_cells *b, size_t *at)
{
	for (size_t i = 0; i < a->n; i++) {
		tau_quantity v = tau_budget_cells_get(b, a->items[i].flavor, a->items[i].resource);

		if (tau_quantity_cmp(&a->items[i].q, &v) > 0) {
			*at = i;
			return true;
		}
	}
	return false;
}
