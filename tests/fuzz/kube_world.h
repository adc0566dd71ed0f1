/*
 * kube_world.h - the cluster the Kubernetes object fuzz targets put their
 * input into (fuzz_taucluster.c, fuzz_tauteam.c, fuzz_tauworkspace.c,
 * fuzz_resourceflavor.c, fuzz_cohort.c, fuzz_clusterqueue.c).
 *
 * A TauCluster whose capacity team is "research", an explicit-quota team
 * "ml" (on an administrator's flavor outside the pool), a workspace of
 * each, and the ResourceFlavors, Cohorts and
 * ClusterQueues the aggregator itself writes for that pool: built by running
 * tau_budget_decide and feeding its writes back in until nothing is left to
 * write, as the API server would.  A target swaps one object for its input
 * and decides again; world_check asserts what must hold of any decision.
 * Only for the fuzz targets (static inline functions, included once per target).
 */
#ifndef TAU_FUZZ_KUBE_WORLD_H
#define TAU_FUZZ_KUBE_WORLD_H

#include "budget/decide.h"
#include "budget/explicit.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORLD_MAX 8

typedef struct world {
	tau_budget_pool *pool;
	cJSON *cluster;
	cJSON *teams[WORLD_MAX], *wss[WORLD_MAX], *flavors[WORLD_MAX], *cohorts[WORLD_MAX],
	        *cqs[WORLD_MAX];
	size_t n_teams, n_wss, n_flavors, n_cohorts, n_cqs;
} world;

static inline void world_fail(const char *target, const char *what)
{
	fprintf(stderr, "%s: %s (%s)\n", target, what, tau_error_last()->msg);
	abort();
}

static inline cJSON *world_parse(const char *s)
{
	cJSON *j = NULL;

	if (tau_json_parse(&j, s, strlen(s), 0) < 0)
		world_fail("kube_world", "a fixed object does not parse");
	return j;
}

/* The observed state over `w`, with `n` pointers arrays the caller keeps alive. */
typedef struct world_view {
	const cJSON *teams[WORLD_MAX + 1], *wss[WORLD_MAX + 1], *flavors[WORLD_MAX + 1],
	        *cohorts[WORLD_MAX + 1], *cqs[WORLD_MAX + 1];
	tau_budget_observed in;
} world_view;

static inline void world_view_of(world_view *v, const world *w)
{
	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < w->n_teams; i++)
		v->teams[i] = w->teams[i];
	for (size_t i = 0; i < w->n_wss; i++)
		v->wss[i] = w->wss[i];
	for (size_t i = 0; i < w->n_flavors; i++)
		v->flavors[i] = w->flavors[i];
	for (size_t i = 0; i < w->n_cohorts; i++)
		v->cohorts[i] = w->cohorts[i];
	for (size_t i = 0; i < w->n_cqs; i++)
		v->cqs[i] = w->cqs[i];
	v->in.established = true;
	v->in.ever_established = true;
	v->in.pool = w->pool;
	v->in.nodes_observed = 3;
	v->in.nodes_counted = 3;
	v->in.cluster = w->cluster;
	v->in.api.teams = v->teams;
	v->in.api.n_teams = w->n_teams;
	v->in.api.workspaces = v->wss;
	v->in.api.n_workspaces = w->n_wss;
	v->in.api.flavors = v->flavors;
	v->in.api.n_flavors = w->n_flavors;
	v->in.api.cohorts = v->cohorts;
	v->in.api.n_cohorts = w->n_cohorts;
	v->in.api.cluster_queues = v->cqs;
	v->in.api.n_cluster_queues = w->n_cqs;
	v->in.multiple_workspaces = true;
	v->in.system_namespace = "tau-system";
	v->in.now = "2026-12-02T18:00:00Z";
}

/* Put a write's body into the world as the API server would (a uid, replacing the old one). */
static inline void world_apply(world *w, const tau_budget_write *wr)
{
	cJSON **arr;
	size_t *n;
	cJSON *obj;

	switch (wr->kind) {
	case TAU_BUDGET_RESOURCE_FLAVOR:
		arr = w->flavors;
		n = &w->n_flavors;
		break;
	case TAU_BUDGET_COHORT:
		arr = w->cohorts;
		n = &w->n_cohorts;
		break;
	case TAU_BUDGET_CLUSTER_QUEUE:
		arr = w->cqs;
		n = &w->n_cqs;
		break;
	default:
		arr = w->teams;
		n = &w->n_teams;
		break;
	}
	for (size_t i = 0; i < *n; i++) {
		if (strcmp(tau_json_str(arr[i], "metadata.name"), wr->name) != 0)
			continue;
		cJSON_Delete(arr[i]);
		arr[i] = arr[--*n];
		break;
	}
	if (wr->remove)
		return;
	obj = cJSON_Duplicate(wr->body, 1);
	if (obj == NULL || *n >= WORLD_MAX)
		world_fail("kube_world", "cannot apply a write");
	if (tau_json_find(obj, "metadata.uid") == NULL) {
		char uid[64];

		snprintf(uid, sizeof(uid), "uid-%s", wr->name);
		cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "uid",
		                        uid);
	}
	arr[(*n)++] = obj;
}

static inline void world_set_pool(tau_budget_pool *pool, const char *cls, const char *res,
                                  const char *q)
{
	tau_quantity v;

	if (tau_quantity_parse_str(&v, q) < 0 || tau_budget_pool_set(pool, cls, res, &v) < 0)
		world_fail("kube_world", "cannot build the pool");
}

/* The capacity team's and the explicit team's workspaces, and the converged Kueue objects. */
static inline void world_init(world *w)
{
	memset(w, 0, sizeof(*w));
	if (tau_budget_pool_new(&w->pool) < 0)
		world_fail("kube_world", "out of memory");
	/* Two classes of the tests/fixtures/kube nodes. */
	world_set_pool(w->pool, "h100-ib", "nvidia.com/gpu", "16");
	world_set_pool(w->pool, "h100-ib", "rdma/ib", "16");
	world_set_pool(w->pool, "h100-ib", "cpu", "189880m");
	world_set_pool(w->pool, "a100-mig", "nvidia.com/mig-1g.10gb", "7");
	w->cluster = world_parse(
	        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauCluster\","
	        "\"metadata\":{\"name\":\"cluster\",\"uid\":\"c-uid\",\"generation\":2},"
	        "\"spec\":{\"managementMode\":\"Reconcile\",\"deletionPolicy\":\"Retain\","
	        "\"nodes\":{\"selector\":{\"kubernetes.azure.com/mode\":\"user\"}},"
	        "\"queues\":{\"capacityTeamRef\":{\"name\":\"research\"}},"
	        "\"workspaces\":{\"namespaceMode\":\"Managed\"},"
	        "\"workspaceDefaults\":{\"defaultQueue\":\"default\"}}}");
	w->teams[w->n_teams++] =
	        world_parse("{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauTeam\","
	                    "\"metadata\":{\"name\":\"research\",\"namespace\":\"tau-system\","
	                    "\"uid\":\"t-uid\","
	                    "\"generation\":1},\"spec\":{}}");
	w->teams[w->n_teams++] = world_parse(
	        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauTeam\","
	        "\"metadata\":{\"name\":\"ml\",\"namespace\":\"tau-system\",\"uid\":\"t2-uid\","
	        "\"generation\":3,\"finalizers\":[\"tau.azure.com/team-cleanup\"]},"
	        "\"spec\":{\"quota\":[{\"flavor\":\"cpu-spot\",\"resource\":\"cpu\","
	        "\"nominalQuota\":\"48\",\"borrowingLimit\":\"16\",\"lendingLimit\":\"8\"},"
	        "{\"flavor\":\"cpu-spot\",\"resource\":\"memory\",\"nominalQuota\":\"192Gi\"}]}}");
	w->wss[w->n_wss++] = world_parse(
	        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauWorkspace\","
	        "\"metadata\":{\"name\":\"aurora\",\"namespace\":\"tau-system\",\"uid\":\"w-uid\","
	        "\"generation\":4,\"creationTimestamp\":\"2026-12-01T10:00:00Z\"},"
	        "\"spec\":{\"teamRef\":{\"name\":\"research\"},"
	        "\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"aurora-researchers\"},"
	        "\"role\":\"tau-researcher-v1\",\"target\":{\"namespace\":\"aurora\","
	        "\"createNamespace\":true},\"queue\":\"aurora\"},"
	        "\"status\":{\"phase\":\"Ready\",\"observedGeneration\":4,"
	        "\"target\":{\"resolvedNamespace\":\"aurora\"},"
	        "\"queue\":{\"localQueue\":\"aurora\",\"clusterQueue\":\"tau-ws-aurora\"}}}");
	w->wss[w->n_wss++] = world_parse(
	        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauWorkspace\","
	        "\"metadata\":{\"name\":\"vision\",\"namespace\":\"tau-system\",\"uid\":\"w2-uid\","
	        "\"generation\":1,\"creationTimestamp\":\"2026-12-01T11:00:00Z\"},"
	        "\"spec\":{\"teamRef\":{\"name\":\"ml\"},\"quota\":[{\"flavor\":"
	        "\"cpu-spot\",\"resource\":\"cpu\",\"nominalQuota\":\"16\","
	        "\"borrowingLimit\":\"8\"}]},"
	        "\"status\":{\"target\":{\"resolvedNamespace\":\"vision\"}}}");
	/* A flavor the administrator made, outside the pool, for the explicit team. */
	w->flavors[w->n_flavors++] = world_parse(
	        "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ResourceFlavor\","
	        "\"metadata\":{\"name\":\"cpu-spot\",\"uid\":\"f-uid\"},"
	        "\"spec\":{\"nodeLabels\":{\"kubernetes.azure.com/scalesetpriority\":\"spot\"}}}");
	/* Converge: decide, apply the writes, until there is nothing to write. */
	for (int round = 0; round < 8; round++) {
		world_view v;
		tau_budget_decision *d = NULL;
		size_t writes;

		world_view_of(&v, w);
		if (tau_budget_decide(&d, &v.in) < 0)
			world_fail("kube_world", "the fixed world cannot be decided");
		writes = d->n_writes;
		for (size_t i = 0; i < d->n_writes; i++)
			if (d->writes[i].kind != TAU_BUDGET_TEAM)
				world_apply(w, &d->writes[i]);
			else
				writes--;
		tau_budget_decision_free(d);
		if (writes == 0)
			return;
	}
	world_fail("kube_world", "the fixed world does not converge");
}

/* The world, built once per process (it never changes: targets swap pointers in a view). */
static inline const world *world_get(void)
{
	static world w;
	static int built;

	if (!built) {
		world_init(&w);
		built = 1;
	}
	return &w;
}

/*
 * What must hold of every decision: it exists; every write names an object of its kind
 * and (unless a removal) has a body of that kind and name that is equal to itself on the
 * fields we own, or the controller would write it forever; every status is an object; the
 * summary and every event message print.
 */
static inline void world_check(const char *target, const tau_budget_observed *in)
{
	tau_budget_decision *d = NULL;
	int rc = tau_budget_decide(&d, in);

	if (rc == -TAU_ENOMEM)
		return;
	if (rc < 0 || d == NULL || d->summary == NULL || d->state == NULL)
		world_fail(target, "no decision");
	for (size_t i = 0; i < d->n_writes; i++) {
		const tau_budget_write *wr = &d->writes[i];
		bool equal = false;
		char what[512];

		if (wr->name == NULL || wr->name[0] == '\0')
			world_fail(target, "a write without a name");
		if (wr->remove) {
			if (wr->body != NULL)
				world_fail(target, "a removal with a body");
			continue;
		}
		if (!cJSON_IsObject(wr->body) ||
		    strcmp(tau_json_str(wr->body, "metadata.name")
		                   ? tau_json_str(wr->body, "metadata.name")
		                   : "",
		           wr->name) != 0)
			world_fail(target, "a write whose body does not name it");
		if (wr->kind == TAU_BUDGET_TEAM)
			continue;
		if (strcmp(tau_json_str(wr->body, "kind") ? tau_json_str(wr->body, "kind") : "",
		           tau_budget_kind_name(wr->kind)) != 0)
			world_fail(target, "a write whose body is of another kind");
		if (tau_budget_owned_equal(&equal, what, sizeof(what), wr->body, wr->body) < 0 ||
		    !equal) {
			fprintf(stderr, "%s: %s %s differs from itself: %s\n", target,
			        tau_budget_kind_name(wr->kind), wr->name, what);
			abort();
		}
	}
	for (size_t i = 0; i < d->n_statuses; i++)
		if (!cJSON_IsObject(d->statuses[i].status) || d->statuses[i].object == NULL)
			world_fail(target, "a status that is not an object");
	for (size_t i = 0; i < d->n_events; i++)
		if (d->events[i].message == NULL || d->events[i].reason == NULL)
			world_fail(target, "an event without a message");
	tau_budget_decision_free(d);
}

/* True when some object below `item` names a member twice (cJSON keeps both). */
static inline bool world_duplicate_keys(const cJSON *item)
{
	for (const cJSON *it = item; it != NULL; it = it->next) {
		if (cJSON_IsObject(it))
			for (const cJSON *a = it->child; a != NULL; a = a->next)
				for (const cJSON *b = a->next; b != NULL; b = b->next)
					if (a->string != NULL && b->string != NULL &&
					    strcmp(a->string, b->string) == 0)
						return true;
		if ((cJSON_IsObject(it) || cJSON_IsArray(it)) && world_duplicate_keys(it->child))
			return true;
	}
	return false;
}

/*
 * The controller's update of an owned object: merge(observed, desired) must agree with
 * desired on every owned field, or it would be written again on every pass.  Not asked of
 * an object that names a member twice: cJSON keeps both and the merge replaces one, but
 * the API server's encoder never repeats a key, so no informer ever holds such an object.
 */
static inline void world_check_merge(const char *target, const cJSON *desired,
                                     const cJSON *observed)
{
	cJSON *merged = NULL;
	bool equal = false;
	char what[512];
	int rc;

	if (world_duplicate_keys(observed))
		return;
	rc = tau_budget_merge(&merged, observed, desired);
	if (rc == -TAU_ENOMEM || (rc == -TAU_EINVAL && !cJSON_IsObject(observed)))
		return;
	if (rc < 0)
		world_fail(target, "merge refused an object");
	if (tau_budget_owned_equal(&equal, what, sizeof(what), desired, merged) < 0 || !equal) {
		fprintf(stderr, "%s: the merged %s still differs: %s\n", target,
		        tau_json_str(desired, "kind"), what);
		abort();
	}
	cJSON_Delete(merged);
}

/* The world's object of an array with this name, or NULL. */
static inline const cJSON *world_find(cJSON *const *arr, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(tau_json_str(arr[i], "metadata.name"), name) == 0)
			return arr[i];
	return NULL;
}

#endif /* TAU_FUZZ_KUBE_WORLD_H */
