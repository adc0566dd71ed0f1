/* Unit tests of budget/decide.c: one reconcile of the team budget, rule by rule. */
#include "budget/decide.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NOW "2026-12-02T18:00:00Z"

static const char *CLUSTER =
        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauCluster\","
        "\"metadata\":{\"name\":\"cluster\",\"uid\":\"c-uid\",\"generation\":2},"
        "\"spec\":{\"managementMode\":\"Reconcile\","
        "\"queues\":{\"capacityTeamRef\":{\"name\":\"research\"}}}}";
static const char *TEAM =
        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauTeam\","
        "\"metadata\":{\"name\":\"research\",\"namespace\":\"tau-system\",\"uid\":\"t-uid\","
        "\"generation\":1},\"spec\":{}}";
static const char *WS =
        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauWorkspace\","
        "\"metadata\":{\"name\":\"alpha\",\"namespace\":\"tau-system\",\"uid\":\"w-uid\"},"
        "\"spec\":{\"teamRef\":{\"name\":\"research\"}},"
        "\"status\":{\"target\":{\"resolvedNamespace\":\"alpha\"}}}";

typedef struct fixture {
	cJSON *cluster, *team, *ws;
	cJSON *extra[8];
	size_t n_extra;
	const cJSON *teams[2], *wss[2], *flavors[4], *cohorts[4], *cqs[4];
	tau_budget_pool *pool;
	tau_budget_observed in;
	tau_budget_decision *d;
} fixture;

static cJSON *parse(const char *s)
{
	cJSON *j = cJSON_Parse(s);

	assert_non_null(j);
	return j;
}

static void set_res(tau_budget_pool *pool, const char *cls, const char *res, const char *q)
{
	tau_quantity v;

	assert_int_equal(tau_quantity_parse_str(&v, q), 0);
	assert_int_equal(tau_budget_pool_set(pool, cls, res, &v), 0);
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->cluster = parse(CLUSTER);
	f->team = parse(TEAM);
	f->ws = parse(WS);
	assert_int_equal(tau_budget_pool_new(&f->pool), 0);
	set_res(f->pool, "h100", "nvidia.com/gpu", "16");
	set_res(f->pool, "h100", "cpu", "192");
	set_res(f->pool, "a100", "nvidia.com/gpu", "8");
	f->teams[0] = f->team;
	f->wss[0] = f->ws;
	f->in.established = true;
	f->in.ever_established = true;
	f->in.pool = f->pool;
	f->in.nodes_counted = 3;
	f->in.nodes_observed = 3;
	f->in.cluster = f->cluster;
	f->in.teams = f->teams;
	f->in.n_teams = 1;
	f->in.workspaces = f->wss;
	f->in.n_workspaces = 1;
	f->in.flavors = f->flavors;
	f->in.cohorts = f->cohorts;
	f->in.cluster_queues = f->cqs;
	f->in.now = NOW;
	f->in.system_namespace = "tau-system";
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;

	cJSON_Delete(f->cluster);
	cJSON_Delete(f->team);
	cJSON_Delete(f->ws);
	for (size_t i = 0; i < f->n_extra; i++)
		cJSON_Delete(f->extra[i]);
	tau_budget_pool_free(f->pool);
	tau_budget_decision_free(f->d);
	free(f);
	return 0;
}

/* Keep `obj` alive for the fixture's lifetime. */
static const cJSON *keep(fixture *f, cJSON *obj)
{
	assert_true(f->n_extra < 8);
	f->extra[f->n_extra++] = obj;
	return obj;
}

static void decide(fixture *f)
{
	tau_budget_decision_free(f->d);
	f->d = NULL;
	assert_int_equal(tau_budget_decide(&f->d, &f->in), 0);
}

/* Feed every create/update of the decision back in as observed objects (as the API would). */
static void apply_writes(fixture *f)
{
	for (size_t i = 0; i < f->d->n_writes; i++) {
		const tau_budget_write *w = &f->d->writes[i];
		cJSON *obj;
		const cJSON **arr;
		size_t *n;

		assert_false(w->remove);
		obj = cJSON_Duplicate(w->body, true);
		cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "uid", "k-uid");
		switch (w->kind) {
		case TAU_BUDGET_RESOURCE_FLAVOR:
			arr = f->flavors;
			n = &f->in.n_flavors;
			break;
		case TAU_BUDGET_COHORT:
			arr = f->cohorts;
			n = &f->in.n_cohorts;
			break;
		default:
			arr = f->cqs;
			n = &f->in.n_cluster_queues;
			break;
		}
		assert_true(*n < 4);
		arr[(*n)++] = keep(f, obj);
	}
}

static const tau_budget_write *find_write(const fixture *f, const char *name)
{
	for (size_t i = 0; i < f->d->n_writes; i++)
		if (strcmp(f->d->writes[i].name, name) == 0)
			return &f->d->writes[i];
	return NULL;
}

static const char *quota_text(const cJSON *cohort, int flavor, int res)
{
	const cJSON *fl = cJSON_GetArrayItem(
	        tau_json_find(cJSON_GetArrayItem(tau_json_find(cohort, "spec.resourceGroups"), 0),
	                      "flavors"),
	        flavor);
	const cJSON *r = cJSON_GetArrayItem(cJSON_GetObjectItem(fl, "resources"), res);

	return cJSON_GetObjectItem(r, "nominalQuota")->valuestring;
}

/* The team's QuotaReady reason in the decision's status for `obj`. */
static const char *reason_of(const fixture *f, const cJSON *obj, const char *type)
{
	for (size_t i = 0; i < f->d->n_statuses; i++) {
		const cJSON *c;

		if (f->d->statuses[i].object != obj)
			continue;
		cJSON_ArrayForEach(c, cJSON_GetObjectItem(f->d->statuses[i].status, "conditions"))
		{
			if (strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type) == 0)
				return cJSON_GetObjectItem(c, "reason")->valuestring;
		}
	}
	return NULL;
}

static bool has_event(const fixture *f, const char *reason)
{
	for (size_t i = 0; i < f->d->n_events; i++)
		if (strcmp(f->d->events[i].reason, reason) == 0)
			return true;
	return false;
}

static void test_applied_writes_flavors_cohort_queue(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co;

	decide(f);
	assert_string_equal(f->d->state, "BudgetApplied");
	assert_int_equal(f->d->n_writes, 4);
	/* Order: flavors, the Cohort, then the workspace queue. */
	assert_string_equal(f->d->writes[0].name, "taugrid-gpu-a100");
	assert_string_equal(f->d->writes[1].name, "taugrid-gpu-h100");
	assert_string_equal(f->d->writes[2].name, "tau-team-research");
	assert_string_equal(f->d->writes[3].name, "tau-ws-alpha");
	co = find_write(f, "tau-team-research");
	assert_true(co->create);
	/* coveredResources [cpu, nvidia.com/gpu]; flavors [a100, h100]. */
	assert_string_equal(quota_text(co->body, 0, 0), "0");
	assert_string_equal(quota_text(co->body, 0, 1), "8");
	assert_string_equal(quota_text(co->body, 1, 0), "192");
	assert_string_equal(quota_text(co->body, 1, 1), "16");
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "BudgetApplied");
	assert_string_equal(reason_of(f, f->cluster, "BudgetReady"), "BudgetApplied");
	for (size_t i = 0; i < f->d->n_statuses; i++)
		if (f->d->statuses[i].object == f->cluster)
			assert_string_equal(
			        cJSON_GetObjectItem(f->d->statuses[i].status, "systemNamespace")
			                ->valuestring,
			        "tau-system");
}

static void test_steady_state_writes_nothing(void **state)
{
	fixture *f = *state;

	decide(f);
	apply_writes(f);
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
}

static void test_nothing_before_established(void **state)
{
	fixture *f = *state;

	f->in.established = false;
	f->in.ever_established = false;
	decide(f);
	assert_string_equal(f->d->state, "WaitingForInventory");
	assert_int_equal(f->d->n_writes, 0);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "WaitingForInventory");
}

/* A restarted aggregator: an earlier process established the inventory and wrote the status;
 * this one's inventory is not established yet, so it writes nothing, status included. */
static void test_restart_keeps_established_status(void **state)
{
	fixture *f = *state;

	decide(f);
	assert_true(f->d->n_statuses > 0);
	cJSON_AddItemToObject(
	        f->cluster, "status",
	        parse("{\"phase\":\"Ready\",\"conditions\":[{\"type\":\"InventoryEstablished\","
	              "\"status\":\"True\",\"reason\":\"Established\"}]}"));
	f->in.established = false;
	f->in.ever_established = false;
	decide(f);
	assert_string_equal(f->d->state, "WaitingForInventory");
	assert_int_equal(f->d->n_writes, 0);
	assert_int_equal(f->d->n_statuses, 0);
	assert_int_equal(f->d->n_events, 0);
	assert_non_null(strstr(f->d->summary, "kept until this process's is established"));
	/* A status that says the inventory was never established is brought up to date. */
	cJSON_ReplaceItemInObject(
	        f->cluster, "status",
	        parse("{\"conditions\":[{\"type\":\"InventoryEstablished\",\"status\":\"False\","
	              "\"reason\":\"WaitingForNodes\"}]}"));
	decide(f);
	assert_true(f->d->n_statuses > 0);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "WaitingForInventory");
}

static void test_pool_problem_zeroes(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co;

	decide(f);
	apply_writes(f);
	f->in.pool_problem = "TauCluster spec.nodes.selector is unusable";
	decide(f);
	assert_string_equal(f->d->state, "BudgetZeroed");
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	assert_false(co->create);
	assert_string_equal(quota_text(co->body, 1, 1), "0");
	assert_string_equal(quota_text(co->body, 0, 1), "0");
	assert_true(has_event(f, "BudgetZeroed"));
}

static void test_gate_closed_again_zeroes(void **state)
{
	fixture *f = *state;

	f->in.established = false; /* ever_established stays true */
	decide(f);
	assert_string_equal(f->d->state, "BudgetZeroed");
	assert_string_equal(quota_text(find_write(f, "tau-team-research")->body, 1, 1), "0");
}

static void test_foreign_flavor_conflict_zeroes(void **state)
{
	fixture *f = *state;
	cJSON *labels = parse("{\"tau.azure.com/gpu-class\":\"h100\"}");
	tau_budget_node node = {.name = "gpu-1", .labels = labels};

	keep(f, labels);
	f->flavors[f->in.n_flavors++] =
	        keep(f, parse("{\"kind\":\"ResourceFlavor\",\"metadata\":{\"name\":\"gpu\"},"
	                      "\"spec\":{\"nodeLabels\":{\"tau.azure.com/gpu-class\":\"h100\"}}}"));
	f->in.nodes = &node;
	f->in.n_nodes = 1;
	decide(f);
	assert_string_equal(f->d->state, "ConflictDetected");
	assert_string_equal(quota_text(find_write(f, "tau-team-research")->body, 1, 1), "0");
	assert_null(find_write(f, "gpu")); /* never rewritten */
	assert_string_equal(reason_of(f, f->cluster, "ConflictDetected"), "ConflictDetected");
	assert_true(has_event(f, "ConflictDetected"));
}

static void test_foreign_cohort_with_our_name(void **state)
{
	fixture *f = *state;

	f->cohorts[f->in.n_cohorts++] =
	        keep(f, parse("{\"kind\":\"Cohort\",\"metadata\":{\"name\":\"tau-team-research\","
	                      "\"uid\":\"x\"},\"spec\":{}}"));
	decide(f);
	assert_string_equal(f->d->state, "OwnershipConflict");
	assert_null(find_write(f, "tau-team-research"));
	assert_null(find_write(f, "tau-ws-alpha"));
}

static void test_observe_writes_nothing(void **state)
{
	fixture *f = *state;

	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->cluster, "spec"), "managementMode",
	                          cJSON_CreateString("Observe"));
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "ObserveOnly");
	assert_non_null(reason_of(f, f->cluster, "BudgetReady"));
}

static void test_v0_block_gets_no_queue_unless_gate(void **state)
{
	fixture *f = *state;
	cJSON *blocked = parse(
	        "{\"kind\":\"TauWorkspace\",\"metadata\":{\"name\":\"beta\",\"namespace\":"
	        "\"tau-system\",\"uid\":\"b-uid\"},\"spec\":{\"teamRef\":{\"name\":\"research\"}},"
	        "\"status\":{\"target\":{\"resolvedNamespace\":\"beta\"},\"conditions\":[{\"type\":"
	        "\"QueueReady\",\"status\":\"False\",\"reason\":\"BlockedByActiveWorkspace\"}]}}");

	f->wss[f->in.n_workspaces++] = keep(f, blocked);
	decide(f);
	assert_null(find_write(f, "tau-ws-beta"));
	f->in.multiple_workspaces = true;
	decide(f);
	assert_non_null(find_write(f, "tau-ws-beta"));
}

static void test_leave_blocked_keeps_budget(void **state)
{
	fixture *f = *state;

	decide(f);
	apply_writes(f);
	/* capacityTeamRef removed while workspace alpha remains. */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(f->cluster, "spec"), "queues");
	decide(f);
	assert_string_equal(f->d->state, "LeaveBlocked");
	assert_int_equal(f->d->n_writes, 0); /* the budget is kept as it is */
	assert_true(has_event(f, "LeaveRefused"));
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "LeaveBlocked");
}

static void test_leave_after_workspaces_removed_deletes_cohort(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;

	decide(f);
	apply_writes(f);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(f->cluster, "spec"), "queues");
	f->in.n_workspaces = 0;
	decide(f);
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_true(w->remove);
	assert_string_equal(w->uid, "k-uid");
	/* The workspace's queue goes too: its workspace no longer exists. */
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_true(w->remove);
}

static void test_shrink_and_retained_flavor(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co;
	tau_budget_pool *smaller = NULL;

	decide(f);
	apply_writes(f);
	assert_int_equal(tau_budget_pool_new(&smaller), 0);
	set_res(smaller, "h100", "nvidia.com/gpu", "8"); /* a100 gone, h100 halved, cpu gone */
	f->in.pool = smaller;
	decide(f);
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	assert_string_equal(quota_text(co->body, 0, 0), "0"); /* a100 cpu */
	assert_string_equal(quota_text(co->body, 0, 1), "0"); /* a100 gpu: retained at 0 */
	assert_string_equal(quota_text(co->body, 1, 0), "0"); /* h100 cpu: retained at 0 */
	assert_string_equal(quota_text(co->body, 1, 1), "8");
	assert_null(find_write(f, "taugrid-gpu-a100")); /* its flavor stays untouched */
	tau_budget_decision_free(f->d);
	f->d = NULL;
	tau_budget_pool_free(smaller);
}

static void test_missing_team_is_a_conflict(void **state)
{
	fixture *f = *state;

	f->in.n_teams = 0;
	decide(f);
	assert_string_equal(reason_of(f, f->cluster, "ConflictDetected"), "ConflictDetected");
	assert_null(find_write(f, "tau-team-research"));
}

/* A team beside the capacity team is an explicit team (explicit.c): an empty quota and no
 * workspaces hold nothing, so no Cohort; it gets its cleanup finalizer (E9, E10). */
static void test_explicit_team_beside_the_capacity_team(void **state)
{
	fixture *f = *state;
	cJSON *other =
	        parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"vision\","
	              "\"namespace\":\"tau-system\",\"uid\":\"v\"},\"spec\":{\"quota\":[]}}");
	const tau_budget_write *w;

	f->teams[f->in.n_teams++] = keep(f, other);
	decide(f);
	assert_string_equal(reason_of(f, other, "QuotaReady"), "QuotaApplied");
	assert_null(find_write(f, "tau-team-vision"));
	w = find_write(f, "vision");
	assert_non_null(w);
	assert_int_equal(w->kind, TAU_BUDGET_TEAM);
	assert_string_equal(
	        cJSON_GetArrayItem(tau_json_find(w->body, "metadata.finalizers"), 0)->valuestring,
	        "tau.azure.com/team-cleanup");
	/* The capacity team's budget is decided as before. */
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "BudgetApplied");
}

/* The capacity team carries no cleanup finalizer: one left from an explicit past is removed. */
static void test_capacity_team_finalizer_removed(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;

	cJSON_AddItemToObject(cJSON_GetObjectItem(f->team, "metadata"), "finalizers",
	                      cJSON_Parse("[\"other/keep\",\"tau.azure.com/team-cleanup\"]"));
	decide(f);
	w = find_write(f, "research");
	assert_non_null(w);
	assert_int_equal(w->kind, TAU_BUDGET_TEAM);
	assert_int_equal(cJSON_GetArraySize(tau_json_find(w->body, "metadata.finalizers")), 1);
	assert_string_equal(
	        cJSON_GetArrayItem(tau_json_find(w->body, "metadata.finalizers"), 0)->valuestring,
	        "other/keep");
	assert_null(tau_json_find(w->body, "status"));
}

/* An explicit Cohort whose team is gone (finalizer bypassed) is removed once no queue uses it. */
static void test_explicit_leftover_cohort_removed(void **state)
{
	fixture *f = *state;
	cJSON *co = parse("{\"kind\":\"Cohort\",\"metadata\":{\"name\":\"tau-team-gone\","
	                  "\"uid\":\"co-gone\",\"labels\":{\"app.kubernetes.io/managed-by\":"
	                  "\"taugrid\",\"tau.azure.com/team\":\"gone\","
	                  "\"tau.azure.com/quota-mode\":\"explicit\"},\"annotations\":{"
	                  "\"tau.azure.com/team-uid\":\"g-uid\"}},\"spec\":{}}");
	cJSON *cq = parse("{\"kind\":\"ClusterQueue\",\"metadata\":{\"name\":\"x\"},"
	                  "\"spec\":{\"cohortName\":\"tau-team-gone\"}}");
	const tau_budget_write *w;

	f->cohorts[f->in.n_cohorts++] = keep(f, co);
	f->cqs[f->in.n_cluster_queues++] = keep(f, cq);
	decide(f);
	assert_null(find_write(f, "tau-team-gone")); /* still used by a queue */
	f->in.n_cluster_queues = 0;
	decide(f);
	w = find_write(f, "tau-team-gone");
	assert_non_null(w);
	assert_true(w->remove);
	assert_string_equal(w->uid, "co-gone");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_applied_writes_flavors_cohort_queue),
	        T(test_steady_state_writes_nothing),
	        T(test_nothing_before_established),
	        T(test_restart_keeps_established_status),
	        T(test_pool_problem_zeroes),
	        T(test_gate_closed_again_zeroes),
	        T(test_foreign_flavor_conflict_zeroes),
	        T(test_foreign_cohort_with_our_name),
	        T(test_observe_writes_nothing),
	        T(test_v0_block_gets_no_queue_unless_gate),
	        T(test_leave_blocked_keeps_budget),
	        T(test_leave_after_workspaces_removed_deletes_cohort),
	        T(test_shrink_and_retained_flavor),
	        T(test_missing_team_is_a_conflict),
	        T(test_explicit_team_beside_the_capacity_team),
	        T(test_capacity_team_finalizer_removed),
	        T(test_explicit_leftover_cohort_removed),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
