/*
 * metrics.c - the budget's metrics, rendered from the TauCluster's conditions, the Cohorts
 * TauGrid manages and the reservations of the ClusterQueues in them.
 *
 * Quantities are summed exactly (tau_quantity) and printed in the resource's base unit, one
 * family per unit (_cores, _bytes, a count) like tau_aggregator_pool_allocatable*, so budget,
 * reservations and pool compare directly.
 * A quantity that does not parse is left out of its sum and the sample is not printed,
 * rather than printing a wrong number.
 */
#include "metrics.h"

#include "budget/decide.h"
#include "budget/names.h"
#include "helpers.h"

#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/prom.h"
#include "tau/quantity.h"
#include "tau/array.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One (team, flavor, resource) sum; a small list, searched linearly (64 x 64 at most per
 * team by Kueue's limits, and only at scrape time). */
typedef struct sample {
	const char *team, *flavor, *resource; /* borrowed from the JSON */
	tau_quantity sum;
	bool bad; /* a term did not parse: the sample is not printed */
} sample;

typedef struct samples {
	sample *v;
	size_t n, cap;
	bool oom;
} samples;

static sample *find_or_add(samples *s, const char *team, const char *flavor, const char *resource)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].team, team) == 0 && strcmp(s->v[i].flavor, flavor) == 0 &&
		    strcmp(s->v[i].resource, resource) == 0)
			return &s->v[i];
	if (tau_array_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v)) < 0) {
		s->oom = true;
		return NULL;
	}
	memset(&s->v[s->n], 0, sizeof(s->v[0]));
	s->v[s->n].team = team;
	s->v[s->n].flavor = flavor;
	s->v[s->n].resource = resource;
	(void)tau_quantity_parse_str(&s->v[s->n].sum, "0");
	return &s->v[s->n++];
}

static void add_term(samples *s, const char *team, const char *flavor, const char *resource,
                     const cJSON *value)
{
	sample *x = find_or_add(s, team, flavor, resource);
	tau_quantity q;

	if (x == NULL || x->bad)
		return;
	if (!cJSON_IsString(value) || tau_quantity_parse_str(&q, value->valuestring) < 0 ||
	    tau_quantity_add(&x->sum, &x->sum, &q) < 0)
		x->bad = true;
}

/* The team a Cohort name of ours stands for ("tau-team-<team>"), or NULL. */
static const char *team_of_cohort(const char *cohort)
{
	size_t n = strlen(TAU_BUDGET_COHORT_PREFIX);

	if (cohort == NULL || strncmp(cohort, TAU_BUDGET_COHORT_PREFIX, n) != 0 ||
	    cohort[n] == '\0')
		return NULL;
	return cohort + n;
}

/* The team of one of our objects whose Cohort name is at `path`, or NULL. */
static const char *managed_team(const cJSON *obj, const char *path)
{
	return tau_budget_is_managed(obj) ? team_of_cohort(tau_json_str(obj, path)) : NULL;
}

/* Every flavors[].resources[].<field> of `flavors` into `s` under `team`. */
static void add_flavors(samples *s, const char *team, const cJSON *flavors, const char *field)
{
	const cJSON *f, *r;

	cJSON_ArrayForEach(f, flavors)
	{
		const char *flavor = NULL;

		if (tau_json_get_string(&flavor, f, "name") < 0)
			continue;
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
		{
			const char *name = NULL;

			if (tau_json_get_string(&name, r, "name") == 0)
				add_term(s, team, flavor, name,
				         cJSON_GetObjectItemCaseSensitive(r, field));
		}
	}
}

static void nominal_of_cohorts(samples *s, const cJSON *cohorts)
{
	const cJSON *c, *g;

	cJSON_ArrayForEach(c, cohorts)
	{
		const char *team = managed_team(c, "metadata.name");

		if (team == NULL)
			continue;
		cJSON_ArrayForEach(g, tau_json_find(c, "spec.resourceGroups"))
		{
			add_flavors(s, team, cJSON_GetObjectItemCaseSensitive(g, "flavors"),
			            "nominalQuota");
		}
	}
}

static void reserved_of_queues(samples *s, const cJSON *queues)
{
	const cJSON *q;

	cJSON_ArrayForEach(q, queues)
	{
		const char *team = managed_team(q, "spec.cohortName");

		if (team == NULL)
			continue;
		add_flavors(s, team, tau_json_find(q, "status.flavorsReservation"), "total");
	}
}

/* One family per unit (base_cores, base_bytes, base), each sample in its resource's. */
static void render_samples(tau_buf *b, const char *base, const char *help, const samples *s)
{
	static const char *const unit_words[TAU_PROM_UNITS] = {
	        "cpu, in cores", "memory, storage and hugepages, in bytes",
	        "counted resources (GPUs, RDMA devices, pods)"};

	for (int u = 0; u < TAU_PROM_UNITS; u++) {
		char name[64], text[256];

		snprintf(name, sizeof(name), "%s%s", base, tau_prom_unit_suffix((tau_prom_unit)u));
		snprintf(text, sizeof(text), "%s: %s.", help, unit_words[u]);
		tau_prom_family(b, name, "gauge", text);
		for (size_t i = 0; i < s->n; i++) {
			char value[64];

			if (s->v[i].bad ||
			    tau_prom_resource_unit(s->v[i].resource) != (tau_prom_unit)u ||
			    tau_prom_quantity_value(value, sizeof(value), &s->v[i].sum) < 0)
				continue;
			tau_buf_printf(b, "%s{team=\"", name);
			tau_prom_label_value(b, s->v[i].team);
			tau_buf_append_str(b, "\",flavor=\"");
			tau_prom_label_value(b, s->v[i].flavor);
			tau_buf_append_str(b, "\",resource=\"");
			tau_prom_label_value(b, s->v[i].resource);
			tau_buf_printf(b, "\"} %s\n", value);
		}
	}
}

static const cJSON *condition(const cJSON *cluster, const char *type)
{
	return cluster == NULL
	               ? NULL
	               : tau_conditions_find(tau_json_find(cluster, "status.conditions"), type);
}

static bool condition_is(const cJSON *c, const char *field, const char *want)
{
	const char *v = NULL;

	return c != NULL && tau_json_get_string(&v, c, field) == 0 && strcmp(v, want) == 0;
}

int tau_budget_metrics_render(tau_buf *b, const cJSON *cluster, const cJSON *cohorts,
                              const cJSON *queues, const tau_budget_stats *st)
{
	const cJSON *ready = condition(cluster, "BudgetReady");
	samples nominal = {0}, reserved = {0};
	int rc = 0;

	tau_prom_scalar(b, "tau_budget_ready", "gauge",
	                "1 while the TauCluster's BudgetReady condition is True.",
	                condition_is(ready, "status", "True"));
	tau_prom_scalar(b, "tau_budget_zeroed", "gauge",
	                "1 while the capacity team's budget is zeroed (BudgetReady reason "
	                "BudgetZeroed: the established pool cannot be validated).",
	                condition_is(ready, "reason", TAU_BUDGET_REASON_ZEROED));
	tau_prom_scalar(b, "tau_budget_conflict", "gauge",
	                "1 while the TauCluster's ConflictDetected condition is True.",
	                condition_is(condition(cluster, "ConflictDetected"), "status", "True"));
	nominal_of_cohorts(&nominal, cohorts);
	reserved_of_queues(&reserved, queues);
	if (nominal.oom || reserved.oom)
		rc = tau_error_set(TAU_ENOMEM, "out of memory rendering the budget's metrics");
	render_samples(b, "tau_budget_nominal_quota",
	               "nominalQuota of each team Cohort TauGrid manages, per flavor and resource",
	               &nominal);
	render_samples(b, "tau_budget_reserved",
	               "Quota reserved by workloads in the ClusterQueues of each team Cohort "
	               "(status.flavorsReservation totals)",
	               &reserved);
	tau_prom_scalar(b, "tau_budget_passes_total", "counter",
	                "Budget reconcile passes (on the leader).", st->passes);
	tau_prom_scalar(b, "tau_budget_writes_total", "counter",
	                "Kueue objects the budget created, updated or deleted.", st->writes);
	tau_prom_scalar(b, "tau_budget_status_writes_total", "counter",
	                "TauTeam and TauCluster status updates the budget made.",
	                st->status_writes);
	free(nominal.v);
	free(reserved.v);
	return rc < 0 ? rc : tau_buf_error(b);
}
