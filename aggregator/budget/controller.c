/*
 * controller.c - the budget controller on the shared runtime: gather what is
 * observed, decide (decide.c), carry the decision out.
 *
 * The one idea: a pass never keeps state of its own between runs except
 * whether the inventory was ever established in this process (P5: a new
 * leader writes nothing before its own inventory is established) and the
 * last summary it logged (so a steady cluster logs nothing).
 */
#include "controller.h"

#include "decide.h"
#include "helpers.h"
#include "metrics.h"

#include "controller/events.h"
#include "controller/runtime.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY                 "budget"
#define DEFAULT_COALESCE_MS 200u
/* Successive passes that write are at least this far apart: a storm of node events makes
 * at most one Cohort write a second, while a single change still lands after coalesce_ms. */
#define MIN_WRITE_INTERVAL_MS 1000u

static const tau_kube_resource res_clusters = {"tau.azure.com", "v1alpha1", "clusters", false};
static const tau_kube_resource res_teams = {"tau.azure.com", "v1alpha1", "teams", true};
static const tau_kube_resource res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
static const tau_kube_resource res_flavors = {"kueue.x-k8s.io", "v1beta2", "resourceflavors",
                                              false};
static const tau_kube_resource res_cohorts = {"kueue.x-k8s.io", "v1beta2", "cohorts", false};
static const tau_kube_resource res_cluster_queues = {"kueue.x-k8s.io", "v1beta2", "clusterqueues",
                                                     false};

/* The informers, the TauCluster's first, then the lists of tau_budget_objects in its order. */
enum { W_CLUSTERS, W_TEAMS, W_WORKSPACES, W_FLAVORS, W_COHORTS, W_CLUSTER_QUEUES, N_WATCHES };
#define N_LISTS (N_WATCHES - W_TEAMS)

static const struct {
	const tau_kube_resource *res;
	bool in_system_namespace; /* TauTeams and TauWorkspaces; the others are cluster-scoped */
} WATCHES[N_WATCHES] = {
        [W_CLUSTERS] = {&res_clusters, false},    [W_TEAMS] = {&res_teams, true},
        [W_WORKSPACES] = {&res_workspaces, true}, [W_FLAVORS] = {&res_flavors, false},
        [W_COHORTS] = {&res_cohorts, false},      [W_CLUSTER_QUEUES] = {&res_cluster_queues, false},
};

struct tau_budget_controller {
	tau_controller *ctl;
	tau_kube_informer *informers[N_WATCHES];
	char *system_namespace;
	bool multiple_workspaces;
	tau_budget_inventory_fn inventory;
	void *inventory_arg;
	atomic_bool ever_established;
	char *last_summary;     /* worker thread only */
	bool wrote;             /* worker thread only: a pass wrote in this process */
	uint64_t last_write_ms; /* worker thread only: monotonic time of the last pass that wrote */
	pthread_mutex_t lock;
	tau_budget_stats stats;
};

static const tau_kube_resource *resource_of(tau_budget_kind kind)
{
	switch (kind) {
	case TAU_BUDGET_RESOURCE_FLAVOR:
		return &res_flavors;
	case TAU_BUDGET_COHORT:
		return &res_cohorts;
	case TAU_BUDGET_CLUSTER_QUEUE:
		return &res_cluster_queues;
	case TAU_BUDGET_TEAM:
		return &res_teams;
	}
	return NULL;
}

/* Pointers to the items of a JSON array (borrowed).  *n = count. */
static const cJSON **items_of(const cJSON *arr, size_t *n)
{
	const cJSON **v, *it;
	size_t i = 0;

	*n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
	v = calloc(*n + 1, sizeof(*v));
	if (v == NULL)
		return NULL;
	cJSON_ArrayForEach(it, arr)
	{
		v[i++] = it;
	}
	return v;
}

/* ------------------------------------------------------------------------------------------ */
/* Carrying a decision out                                                                     */

static int do_write(tau_budget_controller *b, const tau_budget_write *w)
{
	tau_kube_client *c = tau_controller_client(b->ctl);
	const tau_kube_resource *res = resource_of(w->kind);
	const char *verb = w->remove ? "deleted" : w->create ? "created" : "updated";
	/* Kueue objects are cluster-scoped; a TauTeam lives in the system namespace. */
	const char *ns = w->kind == TAU_BUDGET_TEAM ? b->system_namespace : NULL;
	int rc;

	if (w->remove) {
		tau_kube_delete_options o = {.uid = w->uid,
		                             .propagation_policy = "Background",
		                             .grace_period_seconds = -1};

		rc = tau_kube_delete(NULL, c, res, ns, w->name, &o);
		if (rc == -TAU_ENOTFOUND)
			rc = 0;
	} else if (w->create) {
		rc = tau_kube_create(NULL, c, res, ns, w->body); /* 409: the cache was behind */
	} else {
		rc = tau_kube_update(NULL, c, res, ns, w->body);
		if (rc == -TAU_ENOTFOUND)
			rc = -TAU_ECONFLICT;
	}
	if (rc == 0) {
		tau_log_info("budget object written", "kind", tau_budget_kind_name(w->kind), "name",
		             w->name, "action", verb, "why", w->why, NULL);
		pthread_mutex_lock(&b->lock);
		b->stats.writes++;
		pthread_mutex_unlock(&b->lock);
	} else if (rc != -TAU_ECONFLICT) {
		tau_log_warn("budget write failed", "kind", tau_budget_kind_name(w->kind), "name",
		             w->name, "action", verb, "error", tau_error_last()->msg, NULL);
	}
	return rc;
}

static const tau_kube_resource *resource_of_object(const cJSON *obj)
{
	const char *kind = tau_json_str(obj, "kind");

	if (kind != NULL && strcmp(kind, "TauTeam") == 0)
		return &res_teams;
	if (kind != NULL && strcmp(kind, "TauWorkspace") == 0)
		return &res_workspaces; /* QuotaReady of an explicit team's workspace */
	return &res_clusters;
}

static int do_status(tau_budget_controller *b, const tau_budget_status *s)
{
	cJSON *obj = cJSON_Duplicate(s->object, true), *st;
	int rc;

	if (obj == NULL || (st = cJSON_Duplicate(s->status, true)) == NULL) {
		cJSON_Delete(obj);
		return tau_error_set(TAU_ENOMEM, "budget status: out of memory");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
	cJSON_AddItemToObject(obj, "status", st);
	rc = tau_kube_update_status(NULL, tau_controller_client(b->ctl), resource_of_object(obj),
	                            tau_json_str(obj, "metadata.namespace"), obj);
	if (rc == -TAU_ENOTFOUND)
		rc = 0; /* deleted meanwhile: nothing to report on */
	if (rc == 0) {
		pthread_mutex_lock(&b->lock);
		b->stats.status_writes++;
		pthread_mutex_unlock(&b->lock);
	} else if (rc != -TAU_ECONFLICT) {
		tau_log_warn("budget status write failed", "kind", tau_json_str(obj, "kind"),
		             "name", tau_json_str(obj, "metadata.name"), "error",
		             tau_error_last()->msg, NULL);
	}
	cJSON_Delete(obj);
	return rc;
}

/* An Event of the decision (controller/events.h: best effort, logged). */
static void do_event(tau_budget_controller *b, const tau_budget_event *e)
{
	tau_controller_record_event(tau_controller_client(b->ctl), "team-budget", e->object,
	                            e->type, e->reason, e->message);
}

/* ------------------------------------------------------------------------------------------ */
/* One pass                                                                                    */

/* What one pass read: the TauCluster, each list as copied from its cache and its items. */
typedef struct gathered {
	cJSON *cluster;
	cJSON *lists[N_LISTS];
	const cJSON **items[N_LISTS];
	tau_budget_inventory inv;
} gathered;

static void gathered_free(gathered *g)
{
	cJSON_Delete(g->cluster);
	for (size_t i = 0; i < N_LISTS; i++) {
		cJSON_Delete(g->lists[i]);
		free(g->items[i]);
	}
	tau_budget_inventory_clear(&g->inv);
}

static int gather(tau_budget_controller *b, gathered *g, tau_budget_observed *o, char *problem,
                  size_t problem_len)
{
	/* Where each list goes in the pass's objects, in the order of WATCHES from W_TEAMS. */
	const cJSON *const **arrays[N_LISTS] = {&o->api.teams, &o->api.workspaces, &o->api.flavors,
	                                        &o->api.cohorts, &o->api.cluster_queues};
	size_t *counts[N_LISTS] = {&o->api.n_teams, &o->api.n_workspaces, &o->api.n_flavors,
	                           &o->api.n_cohorts, &o->api.n_cluster_queues};
	int rc;

	rc = b->inventory(b->inventory_arg, &g->inv);
	if (rc < 0) {
		snprintf(problem, problem_len, "reading the inventory failed: %s",
		         tau_error_last()->msg);
		tau_budget_inventory_clear(&g->inv);
	}
	if (g->inv.pool == NULL && (rc = tau_budget_pool_new(&g->inv.pool)) < 0)
		return rc;
	rc = tau_kube_informer_get(&g->cluster, b->informers[W_CLUSTERS], NULL, "cluster");
	if (rc < 0 && rc != -TAU_ENOTFOUND)
		return rc;
	for (size_t i = 0; i < N_LISTS; i++) {
		if ((rc = tau_kube_informer_snapshot(&g->lists[i], b->informers[W_TEAMS + i])) < 0)
			return rc;
		if ((g->items[i] = items_of(g->lists[i], counts[i])) == NULL)
			return tau_budget_nomem();
		*arrays[i] = g->items[i];
	}
	if (g->inv.established)
		atomic_store(&b->ever_established, true);
	o->established = g->inv.established && problem[0] == '\0';
	o->ever_established = atomic_load(&b->ever_established);
	o->pool_problem = g->inv.problem;
	o->pool = g->inv.pool;
	o->nodes = g->inv.nodes;
	o->n_nodes = g->inv.n_nodes;
	o->nodes_observed = g->inv.nodes_observed;
	o->nodes_counted = g->inv.n_nodes;
	o->truth = g->inv.snapshot != NULL ? &g->inv.truth : NULL;
	o->dra = g->inv.snapshot != NULL ? &g->inv.dra : NULL;
	o->read_problem = problem[0] != '\0' ? problem : NULL;
	o->cluster = g->cluster;
	o->multiple_workspaces = b->multiple_workspaces;
	o->system_namespace = b->system_namespace;
	return 0;
}

static int reconcile(void *arg, tau_controller *ctl, const char *key, tau_controller_result *res)
{
	tau_budget_controller *b = arg;
	tau_budget_observed o = {0};
	tau_budget_decision *d = NULL;
	gathered g = {0};
	char now[TAU_RFC3339_LEN], problem[1024] = "";
	uint64_t mono;
	int rc, first = 0;

	(void)ctl;
	(void)key;
	if ((rc = tau_rfc3339(now, time(NULL))) < 0)
		return rc;
	o.now = now;
	rc = gather(b, &g, &o, problem, sizeof(problem));
	if (rc == 0)
		rc = tau_budget_decide(&d, &o);
	if (rc < 0) {
		gathered_free(&g);
		return rc;
	}
	/* A pass that would write soon after the last one waits for its turn (decided again then).
	 */
	mono = tau_clock_mono_ms();
	if ((d->n_writes > 0 || d->n_statuses > 0) && b->wrote &&
	    mono - b->last_write_ms < MIN_WRITE_INTERVAL_MS) {
		res->requeue_after_ms = MIN_WRITE_INTERVAL_MS - (mono - b->last_write_ms);
		tau_budget_decision_free(d);
		gathered_free(&g);
		return 0;
	}
	if (d->n_writes > 0 || d->n_statuses > 0) {
		b->wrote = true;
		b->last_write_ms = mono;
	}
	/* Writes in order; a conflict stops the pass (the next one starts from fresh state). */
	for (size_t i = 0; i < d->n_writes && first == 0; i++)
		first = do_write(b, &d->writes[i]);
	for (size_t i = 0; i < d->n_events && first == 0; i++)
		if (d->events[i].on_write)
			do_event(b, &d->events[i]);
	for (size_t i = 0; i < d->n_statuses && first == 0; i++)
		first = do_status(b, &d->statuses[i]);
	if (first == 0)
		for (size_t i = 0; i < d->n_events; i++)
			if (!d->events[i].on_write)
				do_event(b, &d->events[i]);
	if (d->summary != NULL &&
	    (b->last_summary == NULL || strcmp(b->last_summary, d->summary) != 0)) {
		tau_log_info("budget reconciled", "state", d->state, "summary", d->summary, NULL);
		free(b->last_summary);
		b->last_summary = strdup(d->summary);
	}
	pthread_mutex_lock(&b->lock);
	b->stats.passes++;
	b->stats.zeroed = strcmp(d->state, TAU_BUDGET_REASON_ZEROED) == 0 ||
	                  strcmp(d->state, TAU_BUDGET_REASON_CONFLICT) == 0;
	pthread_mutex_unlock(&b->lock);
	tau_budget_decision_free(d);
	gathered_free(&g);
	return first;
}

/* ------------------------------------------------------------------------------------------ */
/* Life cycle                                                                                  */

int tau_budget_controller_new(tau_budget_controller **out, const tau_budget_controller_config *cfg)
{
	tau_budget_controller *b;
	tau_controller_options o = {0};
	tau_controller_watch_opts w = {0};
	int rc;

	if (out == NULL || cfg == NULL || cfg->client == NULL || cfg->loop == NULL ||
	    cfg->system_namespace == NULL || cfg->inventory == NULL)
		return tau_error_set(TAU_EINVAL, "budget controller: missing configuration");
	b = calloc(1, sizeof(*b));
	if (b == NULL || (b->system_namespace = strdup(cfg->system_namespace)) == NULL) {
		free(b);
		return tau_error_set(TAU_ENOMEM, "budget controller: out of memory");
	}
	pthread_mutex_init(&b->lock, NULL);
	atomic_init(&b->ever_established, false);
	b->multiple_workspaces = cfg->multiple_workspaces;
	b->inventory = cfg->inventory;
	b->inventory_arg = cfg->inventory_arg;
	o.name = "team-budget";
	o.client = cfg->client;
	o.loop = cfg->loop;
	o.reconcile = reconcile;
	o.arg = b;
	o.single_key = KEY;
	o.coalesce_ms = cfg->coalesce_ms != 0 ? cfg->coalesce_ms : DEFAULT_COALESCE_MS;
	o.resync_ms = cfg->resync_ms;
	rc = tau_controller_new(&b->ctl, &o);
	if (rc < 0)
		goto fail;
	for (size_t i = 0; i < N_WATCHES; i++) {
		w.res = WATCHES[i].res;
		w.namespace = WATCHES[i].in_system_namespace ? b->system_namespace : NULL;
		if ((rc = tau_controller_watch(&b->informers[i], b->ctl, &w)) < 0)
			goto fail;
	}
	*out = b;
	return 0;
fail:
	tau_budget_controller_free(b);
	return rc;
}

void tau_budget_controller_start_informers(tau_budget_controller *b)
{
	tau_controller_start_informers(b->ctl);
}

int tau_budget_controller_start(tau_budget_controller *b)
{
	return tau_controller_start_worker(b->ctl);
}

void tau_budget_controller_stop(tau_budget_controller *b)
{
	if (b != NULL)
		tau_controller_stop_worker(b->ctl);
}

void tau_budget_controller_trigger(tau_budget_controller *b)
{
	if (b != NULL)
		(void)tau_controller_trigger(b->ctl,
		                             NULL); /* a failure is counted; the resync heals */
}

tau_controller *tau_budget_controller_runtime(tau_budget_controller *b)
{
	return b->ctl;
}

void tau_budget_controller_stats(tau_budget_controller *b, tau_budget_stats *out)
{
	pthread_mutex_lock(&b->lock);
	*out = b->stats;
	pthread_mutex_unlock(&b->lock);
}

int tau_budget_controller_metrics(tau_budget_controller *b, tau_buf *out)
{
	cJSON *cluster = NULL, *cohorts = NULL, *queues = NULL;
	tau_budget_stats st = {0};
	int rc = 0;

	if (b != NULL) {
		/* Absent TauCluster: no conditions, so ready/zeroed/conflict read 0. */
		if (tau_kube_informer_get(&cluster, b->informers[W_CLUSTERS], NULL, "cluster") ==
		            -TAU_ENOMEM ||
		    tau_kube_informer_snapshot(&cohorts, b->informers[W_COHORTS]) < 0 ||
		    tau_kube_informer_snapshot(&queues, b->informers[W_CLUSTER_QUEUES]) < 0)
			rc = tau_error_set(TAU_ENOMEM, "out of memory copying the budget's caches");
		tau_budget_controller_stats(b, &st);
	}
	if (rc == 0)
		rc = tau_budget_metrics_render(out, cluster, cohorts, queues, &st);
	cJSON_Delete(cluster);
	cJSON_Delete(cohorts);
	cJSON_Delete(queues);
	return rc;
}

void tau_budget_controller_free(tau_budget_controller *b)
{
	if (b == NULL)
		return;
	tau_controller_free(b->ctl);
	tau_free_many(b->system_namespace, b->last_summary);
	pthread_mutex_destroy(&b->lock);
	free(b);
}
