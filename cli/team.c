/*
 * team.c - `tau team list` and `tau team status NAME`.
 *
 * The one idea: the command reads what the aggregator's budget controller
 * wrote (docs/budget.md) straight from the Kubernetes API - the TauTeam's
 * status, its root Cohort `tau-team-<team>`, the ClusterQueues drawing from
 * it, the TauCluster `cluster` - and never recomputes the budget.  Pure
 * functions turn those objects into one JSON document (the stable interface,
 * docs/cli.md); the table form is printed from that document.  Quantities
 * go through libtau's exact parser and canonical printer, never a double.
 *
 * Exit codes (docs/cli.md): status exits 0 when the team is Ready for its
 * current generation, 1 when not (or the API cannot answer), 2 for usage and
 * input errors: an invalid team name (refused before any request) or a team
 * that does not exist.
 */
#include "team.h"

#include "globalopts.h"
#include "output.h"
#include "inventory.h"
#include "workspace.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/names.h"
#include "tau/quantity.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_teams = {"tau.azure.com", "v1alpha1", "teams", true};
static const tau_kube_resource res_team_workspaces = {"tau.azure.com", "v1alpha1", "workspaces",
                                                      true};
static const tau_kube_resource res_cohorts = {"kueue.x-k8s.io", "v1beta2", "cohorts", false};
static const tau_kube_resource res_cqs = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", false};

#define COHORT_PREFIX  "tau-team-"
#define CQ_PREFIX      "tau-ws-"
#define FLAVOR_PREFIX  "taugrid-gpu-"
#define LABEL_TEAM     "tau.azure.com/team"
#define LABEL_WS       "tau.azure.com/workspace"
#define LABEL_MANAGED  "app.kubernetes.io/managed-by"
#define MANAGED_BY     "taugrid"
#define NONE           "<none>"
#define NAME_BUF       (TAU_NAMES_DNS1123_SUBDOMAIN_MAX + 1)
#define COND_QUOTA     "QuotaReady"
#define SRC_DISCOVERED "discoveredCapacity"
#define SRC_SPEC_QUOTA "spec.quota"
#define NO_AGGREGATOR  "no aggregator named " TAU_CLI_AGGREGATOR_HINT

/* ------------------------------------------------------------------------------------------ */
/* Small readers and writers                                                                   */

static bool same(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const char *or_none(const char *s)
{
	return s != NULL ? s : NONE;
}

/* Add a string member, or null when v is NULL. */
static void put(cJSON *o, const char *key, const char *v)
{
	cJSON_AddItemToObject(o, key, v != NULL ? cJSON_CreateString(v) : cJSON_CreateNull());
}

/* Add the integer at `path` of src, or null when it is absent or not an exact integer. */
static void put_int(cJSON *o, const char *key, const cJSON *src, const char *path)
{
	int64_t v = 0;

	if (src != NULL && tau_json_get_int(&v, src, path) == 0)
		cJSON_AddNumberToObject(o, key, (double)v);
	else
		cJSON_AddNullToObject(o, key);
}

static void warn(cJSON *doc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(cJSON *doc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(doc, "warnings"),
	                     cJSON_CreateString(msg));
}

/*
 * Add the canonical form of the quantity `v` (a string, or a bare JSON number as
 * Quantity.UnmarshalJSON takes it) as member `key`: null when absent; null and a warning
 * naming `where` when it is not a valid quantity.
 */
/* Parse a quantity given as a string or a bare JSON number.  @return 0, or <0 (error set). */
static int quantity_of(tau_quantity *q, const cJSON *v)
{
	int rc;

	if (cJSON_IsString(v)) {
		rc = tau_quantity_parse_str(q, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		char *raw = cJSON_PrintUnformatted(v);

		rc = raw != NULL ? tau_quantity_parse_json_value(q, raw, strlen(raw))
		                 : tau_error_set(TAU_ENOMEM, "out of memory");
		free(raw);
	} else {
		rc = tau_error_set(TAU_ETYPE, "neither a string nor a number");
	}
	return rc;
}

static void put_quantity(cJSON *o, const char *key, const cJSON *v, cJSON *doc, const char *where)
{
	char canon[TAU_QUANTITY_STR_MAX];
	tau_quantity q;
	int rc;

	if (v == NULL || cJSON_IsNull(v)) {
		cJSON_AddNullToObject(o, key);
		return;
	}
	rc = quantity_of(&q, v);
	if (rc == 0)
		rc = tau_quantity_format(canon, sizeof(canon), &q);
	if (rc != 0) {
		warn(doc, "%s: %s", where, tau_error_last()->msg);
		cJSON_AddNullToObject(o, key);
		return;
	}
	cJSON_AddStringToObject(o, key, canon);
}

static const cJSON *items_of(const cJSON *list)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");

	return cJSON_IsArray(items) ? items : NULL;
}

/* The team's Cohort: status.cohort as the aggregator wrote it, else tau-team-<team>. */
static void cohort_name_of(char buf[NAME_BUF], const cJSON *team, const char *name)
{
	const char *sc = tau_json_str(team, "status.cohort");

	snprintf(buf, NAME_BUF, "%s%s", sc != NULL ? "" : COHORT_PREFIX, sc != NULL ? sc : name);
}

static const cJSON *condition(const cJSON *obj, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(obj, "status.conditions"))
	{
		if (same(tau_json_str(c, "type"), type))
			return c;
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Verdicts                                                                                    */

const char *tau_cli_team_mode(const cJSON *team, const cJSON *cluster)
{
	return same(tau_json_str(cluster, "spec.queues.capacityTeamRef.name"),
	            tau_json_str(team, "metadata.name"))
	               ? "capacity"
	               : "explicit";
}

bool tau_cli_team_ready(const cJSON *team)
{
	int64_t gen = 0, obs = -1;

	tau_json_get_int(&gen, team, "metadata.generation");
	if (team == NULL || tau_json_get_int(&obs, team, "status.observedGeneration") != 0)
		return false;
	return same(tau_json_str(team, "status.phase"), "Ready") && gen == obs;
}

static size_t count_workspaces(const cJSON *workspaces, const char *team)
{
	const cJSON *w;
	size_t n = 0;

	cJSON_ArrayForEach(w, items_of(workspaces))
	{
		n += same(tau_json_str(w, "spec.teamRef.name"), team);
	}
	return n;
}

/* ------------------------------------------------------------------------------------------ */
/* list                                                                                        */

cJSON *tau_cli_team_list_doc(const cJSON *teams, const cJSON *cluster, const cJSON *workspaces)
{
	const cJSON *items = items_of(teams), *t;
	cJSON *doc, *arr;

	if (items == NULL) {
		tau_error_set(TAU_EINVAL, "team list: no items");
		return NULL;
	}
	doc = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(doc, "items");
	if (arr == NULL) {
		cJSON_Delete(doc);
		tau_error_set(TAU_ENOMEM, "out of memory");
		return NULL;
	}
	cJSON_ArrayForEach(t, items)
	{
		const char *name = tau_json_str(t, "metadata.name");
		cJSON *o = cJSON_CreateObject();

		put(o, "name", name);
		put(o, "mode", tau_cli_team_mode(t, cluster));
		put(o, "phase", tau_json_str(t, "status.phase"));
		put(o, "cohort", tau_json_str(t, "status.cohort"));
		cJSON_AddNumberToObject(o, "workspaces",
		                        name != NULL ? (double)count_workspaces(workspaces, name)
		                                     : 0);
		put(o, "reason", tau_json_str(condition(t, COND_QUOTA), "reason"));
		cJSON_AddBoolToObject(o, "ready", tau_cli_team_ready(t));
		cJSON_AddItemToArray(arr, o);
	}
	return doc;
}

/*
 * Print the objects of `arr` as a table, one column per key (a string, a number, or
 * "<none>"), under "heading:"; an empty array prints "label:" and "<none>" aligned with the
 * status block.
 */
static int print_objects(FILE *out, const char *label, const char *heading, const cJSON *arr,
                         const char *const *headers, const char *const *keys, size_t n_cols)
{
	size_t n = (size_t)cJSON_GetArraySize(arr), r = 1;
	const char **cells;
	char(*nums)[24];
	const cJSON *it;

	if (n == 0) {
		fprintf(out, "%s:%*s%s\n", label, (int)(20 - strlen(label)), "", NONE);
		return 0;
	}
	cells = calloc((n + 1) * n_cols, sizeof(*cells));
	nums = calloc((n + 1) * n_cols, sizeof(*nums));
	if (cells == NULL || nums == NULL) {
		free(cells);
		free(nums);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	for (size_t c = 0; c < n_cols; c++)
		cells[c] = headers[c];
	cJSON_ArrayForEach(it, arr)
	{
		for (size_t c = 0; c < n_cols; c++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(it, keys[c]);
			size_t k = r * n_cols + c;

			int64_t num = 0;

			if (tau_json_get_int(&num, it, keys[c]) == 0) {
				snprintf(nums[k], sizeof(nums[k]), "%lld", (long long)num);
				cells[k] = nums[k];
			} else {
				cells[k] = cJSON_IsString(v) ? v->valuestring : NULL;
			}
		}
		r++;
	}
	if (heading != NULL)
		fprintf(out, "%s:\n", heading);
	tau_cli_print_table(out, cells, r, n_cols);
	free(cells);
	free(nums);
	return 0;
}

int tau_cli_team_print_list(FILE *out, const cJSON *doc, tau_cli_format fmt)
{
	static const char *const headers[] = {"NAME",   "MODE",       "PHASE",
	                                      "COHORT", "WORKSPACES", "REASON"};
	static const char *const keys[] = {"name",   "mode",       "phase",
	                                   "cohort", "workspaces", "reason"};
	const cJSON *items = items_of(doc);

	if (items == NULL)
		return tau_error_set(TAU_EINVAL, "team list: no items");
	if (fmt != TAU_CLI_TABLE)
		return tau_cli_doc_print(out, doc, fmt);
	if (cJSON_GetArraySize(items) == 0) {
		fprintf(out, "No teams found.\n");
		return 0;
	}
	return print_objects(out, "Teams", NULL, items, headers, keys, 6);
}

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
		if (same(rows->v[i].flavor, flavor) && same(rows->v[i].resource, resource))
			return &rows->v[i];
	return NULL;
}

static budget_row *row_add(budget_rows *rows, const char *flavor, const char *resource)
{
	budget_row *r = row_find(rows, flavor, resource);

	if (r != NULL)
		return r;
	if (rows->n == rows->cap) {
		size_t cap = rows->cap != 0 ? rows->cap * 2 : 16;
		budget_row *v = realloc(rows->v, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		rows->v = v;
		rows->cap = cap;
	}
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
	size_t plen = strlen(FLAVOR_PREFIX);

	for (size_t i = 0; i < rows->n; i++)
		if (same(rows->v[i].flavor, flavor))
			return rows->v[i].flavor;
	for (size_t i = 0; i < rows->n; i++)
		if (strncmp(rows->v[i].flavor, FLAVOR_PREFIX, plen) == 0 &&
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

/* Add the quantity v to the sum `which` of row (flavor, resource); warn naming `where`. */
static int sum_add(budget_rows *rows, size_t which, const char *flavor, const char *resource,
                   const cJSON *v, cJSON *doc, const char *where)
{
	budget_row *r;
	row_sum *sum;
	tau_quantity q;

	if (flavor == NULL || resource == NULL || v == NULL)
		return 0;
	if ((r = row_add(rows, flavor, resource)) == NULL)
		return -TAU_ENOMEM;
	sum = which == 0 ? &r->guarantees : which == 1 ? &r->applied : &r->reserved;
	if (quantity_of(&q, v) != 0) {
		if (tau_error_last()->code == TAU_ENOMEM)
			return -TAU_ENOMEM;
		warn(doc, "%s: %s", where, tau_error_last()->msg);
		sum->bad = true;
	} else if (tau_quantity_add(&sum->q, &sum->q, &q) != 0) {
		warn(doc, "%s: the sum does not fit a quantity", where);
		sum->bad = true;
	}
	return 0;
}

/* Add every flavor and resource `field` of obj's spec.resourceGroups to the sum `which`. */
static int sum_groups(budget_rows *rows, size_t which, const cJSON *obj, const char *field,
                      cJSON *doc)
{
	const cJSON *rg, *fl, *res;
	char where[1024];
	int rc;

	cJSON_ArrayForEach(rg, tau_json_find(obj, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(rg, "flavors"))
		{
			cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
			{
				snprintf(where, sizeof(where), "%s %s flavor %s resource %s %s",
				         or_none(tau_json_str(obj, "kind")),
				         or_none(tau_json_str(obj, "metadata.name")),
				         or_none(tau_json_str(fl, "name")),
				         or_none(tau_json_str(res, "name")), field);
				if ((rc = sum_add(rows, which, tau_json_str(fl, "name"),
				                  tau_json_str(res, "name"),
				                  cJSON_GetObjectItemCaseSensitive(res, field), doc,
				                  where)) < 0)
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
	char where[1024];
	int rc;

	cJSON_ArrayForEach(w, items_of(in->workspaces))
	{
		if (!same(tau_json_str(w, "spec.teamRef.name"), team))
			continue;
		cJSON_ArrayForEach(e, tau_json_find(w, "spec.quota"))
		{
			snprintf(where, sizeof(where),
			         "TauWorkspace %s spec.quota flavor %s resource %s nominalQuota",
			         or_none(tau_json_str(w, "metadata.name")),
			         or_none(tau_json_str(e, "flavor")),
			         or_none(tau_json_str(e, "resource")));
			if ((rc = sum_add(rows, 0, tau_json_str(e, "flavor"),
			                  tau_json_str(e, "resource"),
			                  cJSON_GetObjectItemCaseSensitive(e, "nominalQuota"), doc,
			                  where)) < 0)
				return rc;
		}
	}
	if (in->cohort != NULL && (rc = sum_groups(rows, 1, in->cohort, "nominalQuota", doc)) < 0)
		return rc;
	cJSON_ArrayForEach(q, items_of(in->queues))
	{
		if (!same(tau_json_label(q, LABEL_MANAGED), MANAGED_BY) ||
		    !same(tau_json_str(q, "spec.cohortName"), cohort_name))
			continue;
		if ((rc = sum_groups(rows, 1, q, "nominalQuota", doc)) < 0)
			return rc;
		cJSON_ArrayForEach(fl, tau_json_find(q, "status.flavorsReservation"))
		{
			cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
			{
				snprintf(where, sizeof(where),
				         "ClusterQueue %s flavor %s resource %s total",
				         or_none(tau_json_str(q, "metadata.name")),
				         or_none(tau_json_str(fl, "name")),
				         or_none(tau_json_str(res, "name")));
				if ((rc = sum_add(rows, 2, tau_json_str(fl, "name"),
				                  tau_json_str(res, "name"),
				                  cJSON_GetObjectItemCaseSensitive(res, "total"),
				                  doc, where)) < 0)
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
	size_t plen = strlen(FLAVOR_PREFIX);
	const cJSON *cls;

	cJSON_ArrayForEach(cls, dra)
	{
		const char *q;

		if (cls->string == NULL ||
		    (!same(cls->string, flavor) && !(strncmp(flavor, FLAVOR_PREFIX, plen) == 0 &&
		                                     same(cls->string, flavor + plen))))
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
	put(o, "aggregator", in->aggregator);
	put(o, "reason",
	    in->dra != NULL          ? NULL
	    : in->aggregator != NULL ? (in->dra_error != NULL ? in->dra_error : "no answer")
	                             : NO_AGGREGATOR);
	if (in->dra == NULL && in->aggregator != NULL)
		warn(doc,
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

static int add_budget(cJSON *doc, const tau_cli_team_input *in, bool capacity, const char *team,
                      const char *cohort_name)
{
	const cJSON *pool = capacity ? tau_json_find(in->cluster, "status.discoveredCapacity")
	                             : tau_json_find(in->team, "spec.quota");
	const char *value_key = capacity ? "capacity" : "nominalQuota";
	budget_rows rows = {0};
	char where[1024];
	cJSON *arr;

	put(doc, "poolSource", capacity ? SRC_DISCOVERED : SRC_SPEC_QUOTA);
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

		put(o, "flavor", r->flavor);
		put(o, "resource", r->resource);
		snprintf(where, sizeof(where), "Cohort %s flavor %s resource %s nominalQuota",
		         cohort_name, r->flavor, r->resource);
		put_quantity(o, "budget", r->budget, doc, where);
		snprintf(where, sizeof(where), "%s flavor %s resource %s",
		         capacity ? "TauCluster " TAU_CLI_CLUSTER_NAME " status.discoveredCapacity"
		                  : "TauTeam spec.quota",
		         r->flavor, r->resource);
		put_quantity(o, "pool", r->pool, doc, where);
		if (capacity && in->dra != NULL)
			put(o, "viaDra", via_dra(in->dra, r->flavor, r->resource));
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

/* ------------------------------------------------------------------------------------------ */
/* status: the queues drawing from the budget                                                  */

static cJSON *queue_entry(cJSON *doc, const char *ws, const char *cq_name, const cJSON *cq)
{
	cJSON *o = cJSON_CreateObject(), *resv;
	const cJSON *fl, *res;
	char where[1024];

	put(o, "workspace", ws);
	put(o, "clusterQueue", cq != NULL ? tau_json_str(cq, "metadata.name") : cq_name);
	cJSON_AddBoolToObject(o, "found", cq != NULL);
	put(o, "cohort", tau_json_str(cq, "spec.cohortName"));
	put_int(o, "admittedWorkloads", cq, "status.admittedWorkloads");
	put_int(o, "reservingWorkloads", cq, "status.reservingWorkloads");
	put_int(o, "pendingWorkloads", cq, "status.pendingWorkloads");
	resv = cJSON_AddArrayToObject(o, "reservations");
	cJSON_ArrayForEach(fl, tau_json_find(cq, "status.flavorsReservation"))
	{
		const char *flavor = tau_json_str(fl, "name");

		cJSON_ArrayForEach(res, cJSON_GetObjectItemCaseSensitive(fl, "resources"))
		{
			cJSON *r = cJSON_CreateObject();
			const char *rname = tau_json_str(res, "name");

			put(r, "flavor", flavor);
			put(r, "resource", rname);
			for (size_t k = 0; k < 2; k++) {
				const char *field = k == 0 ? "total" : "borrowed";

				snprintf(where, sizeof(where),
				         "ClusterQueue %s flavor %s resource %s %s",
				         tau_json_str(cq, "metadata.name"), or_none(flavor),
				         or_none(rname), field);
				put_quantity(r, field, cJSON_GetObjectItemCaseSensitive(res, field),
				             doc, where);
			}
			cJSON_AddItemToArray(resv, r);
		}
	}
	return o;
}

/*
 * One entry per TauWorkspace of the team (its ClusterQueue: the one labelled with the
 * workspace, else tau-ws-<workspace>; found false when there is none), then every other
 * ClusterQueue labelled with the team or naming the team's Cohort in spec.cohortName.
 */
static int add_queues(cJSON *doc, const tau_cli_team_input *in, const char *team,
                      const char *cohort_name)
{
	const cJSON *qitems = items_of(in->queues), *w, *q;
	size_t nq = (size_t)cJSON_GetArraySize(qitems), i;
	cJSON *arr = cJSON_AddArrayToObject(doc, "queues");
	bool *used = calloc(nq + 1, sizeof(*used));

	if (used == NULL || arr == NULL) {
		free(used);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(w, items_of(in->workspaces))
	{
		const char *ws = tau_json_str(w, "metadata.name");
		const cJSON *match = NULL;
		char cq_name[NAME_BUF];

		if (ws == NULL || !same(tau_json_str(w, "spec.teamRef.name"), team))
			continue;
		snprintf(cq_name, sizeof(cq_name), CQ_PREFIX "%s", ws);
		i = 0;
		cJSON_ArrayForEach(q, qitems)
		{
			bool labelled = same(tau_json_label(q, LABEL_WS), ws) &&
			                same(tau_json_label(q, LABEL_TEAM), team);

			if (!used[i] &&
			    (labelled || same(tau_json_str(q, "metadata.name"), cq_name))) {
				used[i] = true;
				match = q;
				break;
			}
			i++;
		}
		cJSON_AddItemToArray(arr, queue_entry(doc, ws, cq_name, match));
	}
	i = 0;
	cJSON_ArrayForEach(q, qitems)
	{
		if (!used[i] && (same(tau_json_label(q, LABEL_TEAM), team) ||
		                 same(tau_json_str(q, "spec.cohortName"), cohort_name)))
			cJSON_AddItemToArray(
			        arr, queue_entry(doc, tau_json_label(q, LABEL_WS), NULL, q));
		i++;
	}
	free(used);
	return 0;
}

/* The team's conditions, each with exactly these string fields (null when unset). */
static void add_conditions(cJSON *doc, const cJSON *team)
{
	static const char *const fields[] = {"type", "status", "reason", "message",
	                                     "lastTransitionTime"};
	cJSON *arr = cJSON_AddArrayToObject(doc, "conditions");
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(team, "status.conditions"))
	{
		cJSON *o = cJSON_CreateObject();

		for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++)
			put(o, fields[k], tau_json_str(c, fields[k]));
		cJSON_AddItemToArray(arr, o);
	}
}

cJSON *tau_cli_team_status_doc(const tau_cli_team_input *in)
{
	const char *name = tau_json_str(in->team, "metadata.name"), *uid, *found_uid;
	char cohort_name[NAME_BUF];
	bool capacity;
	cJSON *doc, *co;

	if (name == NULL) {
		tau_error_set(TAU_EINVAL, "not a team: no metadata.name");
		return NULL;
	}
	cohort_name_of(cohort_name, in->team, name);
	capacity = strcmp(tau_cli_team_mode(in->team, in->cluster), "capacity") == 0;
	if ((doc = cJSON_CreateObject()) == NULL ||
	    cJSON_AddArrayToObject(doc, "warnings") == NULL) {
		cJSON_Delete(doc);
		tau_error_set(TAU_ENOMEM, "out of memory");
		return NULL;
	}
	put(doc, "name", name);
	put(doc, "systemNamespace", tau_json_str(in->team, "metadata.namespace"));
	put(doc, "mode", capacity ? "capacity" : "explicit");
	put(doc, "phase", tau_json_str(in->team, "status.phase"));
	cJSON_AddBoolToObject(doc, "ready", tau_cli_team_ready(in->team));
	put_int(doc, "generation", in->team, "metadata.generation");
	put_int(doc, "observedGeneration", in->team, "status.observedGeneration");
	put(doc, "reason", tau_json_str(condition(in->team, COND_QUOTA), "reason"));
	co = cJSON_AddObjectToObject(doc, "cohort");
	put(co, "name", cohort_name);
	uid = tau_json_str(in->team, "status.cohortUID");
	put(co, "uid", uid);
	cJSON_AddBoolToObject(co, "found", in->cohort != NULL);
	found_uid = tau_json_str(in->cohort, "metadata.uid");
	if (in->cohort == NULL)
		warn(doc, "Cohort %s does not exist", cohort_name);
	else if (uid != NULL && found_uid != NULL && strcmp(uid, found_uid) != 0)
		warn(doc, "Cohort %s has UID %s, not status.cohortUID %s (recreated since?)",
		     cohort_name, found_uid, uid);
	if (add_budget(doc, in, capacity, name, cohort_name) != 0 ||
	    add_queues(doc, in, name, cohort_name) != 0) {
		cJSON_Delete(doc);
		return NULL;
	}
	add_conditions(doc, in->team);
	/* "warnings" last in the printed document, so readers meet the facts first. */
	cJSON_AddItemToObject(doc, "warnings", cJSON_DetachItemFromObject(doc, "warnings"));
	return doc;
}

/* ------------------------------------------------------------------------------------------ */
/* status: printing                                                                            */

static int print_budget(FILE *out, const cJSON *doc)
{
	static const char *const headers[] = {"FLAVOR", "RESOURCE", "BUDGET", "POOL", "VIA-DRA"};
	static const char *const keys[] = {"flavor", "resource", "budget", "pool", "viaDra"};
	/* An explicit team: its quota, what its workspaces are guaranteed, the Cohort's rest,
	 * what Kueue holds now and what is reserved of it. */
	static const char *const x_headers[] = {"FLAVOR", "RESOURCE", "QUOTA",   "GUARANTEES",
	                                        "BUDGET", "APPLIED",  "RESERVED"};
	static const char *const x_keys[] = {"flavor", "resource", "pool",    "guarantees",
	                                     "budget", "applied",  "reserved"};
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "budget");

	if (same(tau_json_str(doc, "poolSource"), SRC_SPEC_QUOTA))
		return print_objects(out, "Budget",
		                     "Budget (QUOTA: spec.quota; GUARANTEES: workspace spec.quota; "
		                     "BUDGET: Cohort nominalQuota; APPLIED: Cohort and workspace "
		                     "queues; RESERVED: their reservations)",
		                     rows, x_headers, x_keys, 7);
	if (cJSON_IsTrue(tau_json_find(doc, "dra.checked")))
		return print_objects(
		        out, "Budget",
		        "Budget (Cohort nominalQuota) beside the pool (TauCluster "
		        "discoveredCapacity; VIA-DRA: the part of it DRA devices give, "
		        "from the aggregator)",
		        rows, headers, keys, 5);
	return print_objects(out, "Budget",
	                     "Budget (Cohort nominalQuota) beside the pool (TauCluster "
	                     "discoveredCapacity)",
	                     rows, headers, keys, 4);
}

/* One row per reservation of each queue (one row for a queue without any), then the table. */
static int print_queues(FILE *out, const cJSON *doc)
{
	static const char *const headers[] = {"WORKSPACE", "CLUSTERQUEUE", "ADMITTED", "PENDING",
	                                      "FLAVOR",    "RESOURCE",     "RESERVED", "BORROWED"};
	static const char *const keys[] = {
	        "workspace", "clusterQueue", "admittedWorkloads", "pendingWorkloads", "flavor",
	        "resource",  "total",        "borrowed"};
	cJSON *rows = cJSON_CreateArray();
	const cJSON *q;
	int rc;

	cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(doc, "queues"))
	{
		const cJSON *resv = cJSON_GetObjectItemCaseSensitive(q, "reservations");
		bool found = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "found"));
		size_t k = 0, n = (size_t)cJSON_GetArraySize(resv);

		do {
			cJSON *row = cJSON_Duplicate(cJSON_GetArrayItem(resv, (int)k), true);

			if (row == NULL) /* no reservation: "-" for a queue, "<none>" for none */
				row = cJSON_CreateObject();
			put(row, "workspace", tau_json_str(q, "workspace"));
			put(row, "clusterQueue",
			    found ? tau_json_str(q, "clusterQueue") : "<not found>");
			for (size_t c = 2; c < 4; c++)
				cJSON_AddItemToObject(
				        row, keys[c],
				        cJSON_Duplicate(
				                cJSON_GetObjectItemCaseSensitive(q, keys[c]),
				                true));
			for (size_t c = 4; n == 0 && found && c < 8; c++)
				put(row, keys[c], "-");
			cJSON_AddItemToArray(rows, row);
		} while (++k < n);
	}
	rc = print_objects(out, "Queues", "Queues (ClusterQueue reservations and borrowing)", rows,
	                   headers, keys, 8);
	cJSON_Delete(rows);
	return rc;
}

int tau_cli_team_print_status(FILE *out, const cJSON *doc, tau_cli_format fmt)
{
	const char *name = tau_json_str(doc, "name"), *phase = tau_json_str(doc, "phase");
	const cJSON *co = cJSON_GetObjectItemCaseSensitive(doc, "cohort"), *w;
	int64_t gen = 0, obs = 0;

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "team status: no name");
	if (fmt != TAU_CLI_TABLE)
		return tau_cli_doc_print(out, doc, fmt);
	tau_json_get_int(&gen, doc, "generation");
	fprintf(out, "Name:                %s\n", name);
	fprintf(out, "System namespace:    %s\n", or_none(tau_json_str(doc, "systemNamespace")));
	fprintf(out, "Mode:                %s\n", or_none(tau_json_str(doc, "mode")));
	fprintf(out, "Phase:               %s\n", or_none(phase));
	if (tau_json_get_int(&obs, doc, "observedGeneration") == 0)
		fprintf(out, "Generation:          %lld (observed %lld)\n", (long long)gen,
		        (long long)obs);
	else
		fprintf(out, "Generation:          %lld (not observed yet)\n", (long long)gen);
	fprintf(out, "Cohort:              %s%s\n", or_none(tau_json_str(co, "name")),
	        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(co, "found")) ? "" : " (not found)");
	static const char *const cond_headers[] = {"TYPE", "STATUS", "REASON", "MESSAGE"};
	static const char *const cond_keys[] = {"type", "status", "reason", "message"};

	if (print_budget(out, doc) != 0 || print_queues(out, doc) != 0 ||
	    print_objects(out, "Conditions", "Conditions",
	                  cJSON_GetObjectItemCaseSensitive(doc, "conditions"), cond_headers,
	                  cond_keys, 4) != 0)
		return -TAU_ENOMEM;
	cJSON_ArrayForEach(w, cJSON_GetObjectItemCaseSensitive(doc, "warnings"))
	{
		if (cJSON_IsString(w))
			fprintf(out, "Warning: %s\n", w->valuestring);
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

/* GET or LIST what may be absent: 0 with *out NULL on 404; <0 (message printed) otherwise. */
static int read_optional(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                         const char *ns, const char *name, const char *verb)
{
	int rc = name != NULL ? tau_kube_get(out, c, res, ns, name)
	                      : tau_kube_list_all(out, c, res, ns, NULL);

	if (rc == -TAU_ENOTFOUND) {
		*out = NULL;
		return 0;
	}
	if (rc != 0)
		fprintf(stderr, "tau team %s: reading %s%s%s: %s\n", verb, res->plural,
		        name != NULL ? " " : "", name != NULL ? name : "", tau_cli_api_message());
	return rc;
}

static void team_usage(FILE *out)
{
	fputs("Usage: tau team list [-o table|json|yaml]\n"
	      "       tau team status NAME [--aggregator ADDR [--ca-file F | --insecure]]\n"
	      "                            [-o table|json|yaml]\n"
	      "Options: --context C  --system-namespace NS  --kubeconfig F  --request-timeout D\n"
	      "status shows the team's Cohort budget per flavor and resource beside the pool\n"
	      "(capacity team) or, for an explicit team, beside its spec.quota, its workspaces'\n"
	      "guarantees, the applied allocation and the reserved total; each workspace\n"
	      "ClusterQueue's reservation and borrowing, and the team's conditions. With\n"
	      "--aggregator a capacity team's budget also shows VIA-DRA: the part of the pool\n"
	      "that DRA devices give (the aggregator's GetPool).\n"
	      "Exit codes: 0 success (status: the team is Ready), 1 not Ready or API failure,\n"
	      "2 usage error, invalid team name, or no such team.\n",
	      out);
}

/* Parse argv; fills *verb, *name, *fmt, *gl, *agg.  @return -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, const char **verb, const char **name,
                      tau_cli_format *fmt, tau_cli_globals *gl, tau_cli_aggregator_opts *agg)
{
	static const struct option lopts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{
	                "output", required_argument, NULL, 'o'},
	        TAU_CLI_AGGREGATOR_LONGOPTS{NULL, 0, NULL, 0},
	};
	int c, taken;

	while ((c = getopt_long(argc, argv, "ho:", lopts, NULL)) != -1) {
		if ((taken = tau_cli_global_option(gl, c, optarg, "tau team")) != 0) {
			if (taken < 0)
				return TAU_CLI_USAGE;
		} else if (c == 'h') {
			team_usage(stdout);
			return TAU_CLI_OK;
		} else if (c == 'o') {
			if (tau_cli_output_parse(fmt, optarg, false, "tau team") < 0)
				return TAU_CLI_USAGE;
		} else if (!tau_cli_aggregator_option(agg, c, optarg)) {
			tau_cli_unknown_option("tau team", argv);
			team_usage(stderr);
			return TAU_CLI_USAGE;
		}
	}
	if (optind >= argc) {
		team_usage(stderr);
		return TAU_CLI_USAGE;
	}
	*verb = argv[optind++];
	if (strcmp(*verb, "list") != 0 && strcmp(*verb, "status") != 0) {
		fprintf(stderr, "tau team: unknown command %s\n", *verb);
		team_usage(stderr);
		return TAU_CLI_USAGE;
	}
	if (strcmp(*verb, "status") == 0) {
		if (optind >= argc) {
			fprintf(stderr, "tau team status: NAME is required\n");
			return TAU_CLI_USAGE;
		}
		*name = argv[optind++];
		/* A TauTeam name is a DNS-1123 label (its CRD says so): refuse before any request.
		 */
		if (tau_names_check_dns1123_label(*name) != 0) {
			fprintf(stderr, "tau team status: invalid team name: %s\n",
			        tau_error_last()->msg);
			return TAU_CLI_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "tau team %s: unexpected argument %s\n", *verb, argv[optind]);
		return TAU_CLI_USAGE;
	}
	if (tau_cli_aggregator_given(agg) && strcmp(*verb, "status") != 0) {
		fprintf(stderr,
		        "tau team %s: --aggregator, --ca-file and --insecure are for status\n",
		        *verb);
		return TAU_CLI_USAGE;
	}
	if (tau_cli_aggregator_check(agg) < 0) {
		fprintf(stderr, "tau team status: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	return -1;
}

/*
 * The DRA part of the aggregator's pool into in->dra (owned by *dra), or in->dra_error; nothing
 * without an aggregator named by --aggregator or, as for every tau command, TAU_AGGREGATOR
 * (status stays an API command unless one is named).
 */
static void read_dra(tau_cli_team_input *in, cJSON **dra, char *why, size_t cap,
                     const tau_cli_aggregator_opts *agg, const tau_cli_globals *g)
{
	Tau__Inventory__V1__GetPoolRequest req = TAU__INVENTORY__V1__GET_POOL_REQUEST__INIT;
	const char *target = NULL;
	ProtobufCMessage *resp = NULL;
	tau_rpc_status st = {0};
	tau_rpc_channel *ch = NULL;
	const char *addr = tau_cli_aggregator_addr(agg);

	if (addr == NULL)
		return;
	in->aggregator = addr;
	if (tau_cli_aggregator_channel(&ch, &target, agg, g) < 0 ||
	    tau_rpc_unary(&resp, ch, TAU_CLI_QUERY "GetPool", &req.base,
	                  &tau__inventory__v1__pool__descriptor, tau_cli_rpc_timeout_ms(g, 10000),
	                  &st) < 0) {
		snprintf(why, cap, "%s%s%.600s", st.code != 0 ? tau_rpc_code_name(st.code) : "",
		         st.code != 0 ? ": " : "",
		         st.message[0] ? st.message : tau_error_last()->msg);
		in->dra_error = why;
	} else if ((*dra = tau_cli_team_pool_dra((const Tau__Inventory__V1__Pool *)resp)) == NULL) {
		snprintf(why, cap, "%s", tau_error_last()->msg);
		in->dra_error = why;
	}
	in->dra = *dra;
	tau_rpc_message_free(resp);
	tau_rpc_channel_free(ch);
}

static int run_list(tau_kube_client *client, const char *sysns, tau_cli_format fmt)
{
	cJSON *teams = NULL, *cluster = NULL, *wss = NULL, *doc = NULL;
	int rc = TAU_CLI_FAILED;

	if (tau_kube_list_all(&teams, client, &res_teams, sysns, NULL) != 0) {
		fprintf(stderr, "tau team list: %s\n", tau_cli_api_message());
		goto out;
	}
	if (read_optional(&cluster, client, &tau_cli_res_clusters, NULL, TAU_CLI_CLUSTER_NAME,
	                  "list") != 0 ||
	    read_optional(&wss, client, &res_team_workspaces, sysns, NULL, "list") != 0)
		goto out;
	doc = tau_cli_team_list_doc(teams, cluster, wss);
	if (doc == NULL || tau_cli_team_print_list(stdout, doc, fmt) != 0) {
		fprintf(stderr, "tau team list: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = TAU_CLI_OK;
out:
	cJSON_Delete(doc);
	cJSON_Delete(teams);
	cJSON_Delete(cluster);
	cJSON_Delete(wss);
	return rc;
}

static int run_status(tau_kube_client *client, const char *sysns, const char *name,
                      tau_cli_format fmt, const tau_cli_aggregator_opts *agg,
                      const tau_cli_globals *g)
{
	cJSON *team = NULL, *cluster = NULL, *cohort = NULL, *cqs = NULL, *wss = NULL, *doc = NULL;
	cJSON *dra = NULL;
	char cohort_name[NAME_BUF], why[800];
	int rc;

	rc = tau_kube_get(&team, client, &res_teams, sysns, name);
	if (rc == -TAU_ENOTFOUND) {
		fprintf(stderr, "tau team status: team %s/%s not found: %s\n", sysns, name,
		        tau_cli_api_message());
		return TAU_CLI_USAGE;
	}
	if (rc != 0) {
		fprintf(stderr, "tau team status: team %s/%s: %s\n", sysns, name,
		        tau_cli_api_message());
		return TAU_CLI_FAILED;
	}
	rc = TAU_CLI_FAILED;
	cohort_name_of(cohort_name, team, name);
	if (read_optional(&cluster, client, &tau_cli_res_clusters, NULL, TAU_CLI_CLUSTER_NAME,
	                  "status") != 0 ||
	    read_optional(&cohort, client, &res_cohorts, NULL, cohort_name, "status") != 0 ||
	    read_optional(&cqs, client, &res_cqs, NULL, NULL, "status") != 0 ||
	    read_optional(&wss, client, &res_team_workspaces, sysns, NULL, "status") != 0)
		goto out;
	{
		tau_cli_team_input in = {team, cluster, cohort, cqs, wss, NULL, NULL, NULL};

		/* The DRA part of the pool is the capacity team's only (its pool is the cluster's).
		 */
		if (strcmp(tau_cli_team_mode(team, cluster), "capacity") == 0)
			read_dra(&in, &dra, why, sizeof(why), agg, g);
		doc = tau_cli_team_status_doc(&in);
	}
	if (doc == NULL || tau_cli_team_print_status(stdout, doc, fmt) != 0) {
		fprintf(stderr, "tau team status: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = tau_cli_team_ready(team) ? TAU_CLI_OK : TAU_CLI_FAILED;
out:
	cJSON_Delete(doc);
	cJSON_Delete(dra);
	cJSON_Delete(team);
	cJSON_Delete(cluster);
	cJSON_Delete(cohort);
	cJSON_Delete(cqs);
	cJSON_Delete(wss);
	return rc;
}

int tau_cli_team(int argc, char **argv, const tau_cli_globals *g)
{
	tau_cli_format fmt = TAU_CLI_TABLE;
	const char *verb = NULL, *name = NULL, *sysns;
	char sysns_buf[TAU_CLI_NS_BUF];
	tau_kube_client *client = NULL;
	tau_cli_globals gl = {0};
	tau_cli_aggregator_opts agg = {0};
	int rc;

	tau_cli_opts_begin(&gl, g);
	if ((rc = parse_args(argc, argv, &verb, &name, &fmt, &gl, &agg)) >= 0)
		return rc;
	if (tau_cli_connect(&client, &gl) != 0) {
		fprintf(stderr, "tau team: %s\n", tau_error_last()->msg);
		tau_kube_client_free(client);
		return TAU_CLI_USAGE;
	}
	sysns = tau_cli_system_namespace(sysns_buf, sizeof(sysns_buf), client, gl.system_namespace);
	rc = strcmp(verb, "list") == 0 ? run_list(client, sysns, fmt)
	                               : run_status(client, sysns, name, fmt, &agg, &gl);
	tau_kube_client_free(client);
	return rc;
}
