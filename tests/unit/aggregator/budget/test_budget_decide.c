/* Unit tests of budget/decide.c: one reconcile of the team budget, rule by rule. */
#include "budget/decide.h"
#include "budget/explicit.h"

#include "tau/conditions.h"
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
	cJSON *extra[16];
	size_t n_extra;
	const cJSON *teams[4], *wss[2], *flavors[4], *cohorts[4], *cqs[4];
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
	f->in.api.teams = f->teams;
	f->in.api.n_teams = 1;
	f->in.api.workspaces = f->wss;
	f->in.api.n_workspaces = 1;
	f->in.api.flavors = f->flavors;
	f->in.api.cohorts = f->cohorts;
	f->in.api.cluster_queues = f->cqs;
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
	assert_true(f->n_extra < 16);
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
		if (w->kind == TAU_BUDGET_TEAM) { /* its finalizers, as the API would keep them */
			cJSON *meta = cJSON_GetObjectItem(f->team, "metadata");

			cJSON_DeleteItemFromObject(meta, "finalizers");
			cJSON_AddItemToObject(
			        meta, "finalizers",
			        cJSON_Duplicate(tau_json_find(w->body, "metadata.finalizers"),
			                        true));
			continue;
		}
		obj = cJSON_Duplicate(w->body, true);
		cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "uid", "k-uid");
		switch (w->kind) {
		case TAU_BUDGET_RESOURCE_FLAVOR:
			arr = f->flavors;
			n = &f->in.api.n_flavors;
			break;
		case TAU_BUDGET_COHORT:
			arr = f->cohorts;
			n = &f->in.api.n_cohorts;
			break;
		default:
			arr = f->cqs;
			n = &f->in.api.n_cluster_queues;
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

/* The new .status the decision writes for `obj`, NULL when none. */
static const cJSON *status_of(const fixture *f, const cJSON *obj)
{
	for (size_t i = 0; i < f->d->n_statuses; i++)
		if (f->d->statuses[i].object == obj)
			return f->d->statuses[i].status;
	return NULL;
}

/* Store the decision's status for `obj` in it, as the API would (nothing when none). */
static void apply_status(fixture *f, cJSON *obj)
{
	const cJSON *st = status_of(f, obj);

	if (st == NULL)
		return;
	cJSON_DeleteItemFromObject(obj, "status");
	assert_true(cJSON_AddItemToObject(obj, "status", cJSON_Duplicate(st, true)));
}

/* Events about `obj` (any reason when reason is NULL); the last one in *last. */
static size_t events_about(const fixture *f, const cJSON *obj, const char *reason,
                           const tau_budget_event **last)
{
	size_t n = 0;

	for (size_t i = 0; i < f->d->n_events; i++)
		if (f->d->events[i].object == obj &&
		    (reason == NULL || strcmp(f->d->events[i].reason, reason) == 0)) {
			n++;
			if (last != NULL)
				*last = &f->d->events[i];
		}
	return n;
}

static void test_applied_writes_flavors_cohort_queue(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co;

	decide(f);
	assert_string_equal(f->d->state, "BudgetApplied");
	assert_int_equal(f->d->n_writes, 5);
	/* Order: flavors, the Cohort, the workspace queue, then the team's cleanup finalizer
	 * (it has a workspace, so deleting it waits for that). */
	assert_string_equal(f->d->writes[0].name, "taugrid-gpu-a100");
	assert_string_equal(f->d->writes[1].name, "taugrid-gpu-h100");
	assert_string_equal(f->d->writes[2].name, "tau-team-research");
	assert_string_equal(f->d->writes[3].name, "tau-ws-alpha");
	assert_string_equal(f->d->writes[4].name, "research");
	assert_int_equal(f->d->writes[4].kind, TAU_BUDGET_TEAM);
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

/* The TauCluster's condition `type` in the decision's status, NULL when none. */
static const cJSON *cluster_condition(const fixture *f, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(status_of(f, f->cluster), "conditions"))
	{
		if (strcmp(cJSON_GetObjectItem(c, "type")->valuestring, type) == 0)
			return c;
	}
	return NULL;
}

static const char *cond_field(const cJSON *c, const char *field)
{
	return cJSON_GetObjectItem(c, field)->valuestring;
}

/* Decide, then the TauCluster condition `type`, which must have `status` and `reason`: its
 * message. */
static const char *decided_condition(fixture *f, const char *type, const char *status,
                                     const char *reason)
{
	const cJSON *c;

	decide(f);
	c = cluster_condition(f, type);
	assert_non_null(c);
	assert_string_equal(cond_field(c, "status"), status);
	assert_string_equal(cond_field(c, "reason"), reason);
	return cond_field(c, "message");
}

/* NodeTruthAgrees: Unknown without agents, True when all agree, False naming the first
 * disagreeing nodes with their rule and detail; the budget's writes never change with it. */
static void test_node_truth_condition(void **state)
{
	fixture *f = *state;
	tau_budget_truth t = {0};
	const cJSON *c;
	size_t writes;

	f->in.truth = NULL;
	decided_condition(f, "NodeTruthAgrees", "Unknown", "NoAgentReports");
	writes = f->d->n_writes;

	t.reporting = 2;
	f->in.truth = &t;
	assert_non_null(strstr(decided_condition(f, "NodeTruthAgrees", "True", "Agrees"),
	                       "2 of 3 counted nodes"));

	t.reporting = 6;
	t.disagreeing = 4;
	t.n_nodes = 3;
	t.nodes[0] = (tau_budget_truth_node){"gpu-a", "agent.gpu-health",
	                                     "Node advertises 8 nvidia.com/gpu GPUs; the agent "
	                                     "sees 7 healthy (NVML)",
	                                     1};
	t.nodes[1] = (tau_budget_truth_node){"gpu-b", "agent.rdma-ports", "1 of 8 ports active", 0};
	t.nodes[2] = (tau_budget_truth_node){"gpu-c", "agent.csi-probe", "not answering", 0};
	decide(f);
	assert_int_equal(f->d->n_writes, writes);
	assert_string_equal(f->d->state, "BudgetApplied");
	c = cluster_condition(f, "NodeTruthAgrees");
	assert_string_equal(cond_field(c, "status"), "False");
	assert_string_equal(cond_field(c, "reason"), "Disagrees");
	assert_string_equal(
	        cond_field(c, "message"),
	        "4 of 6 counted nodes reporting node-local facts disagree with what their Node "
	        "advertises (they still count: the budget follows the Node objects): gpu-a: "
	        "agent.gpu-health: Node advertises 8 nvidia.com/gpu GPUs; the agent sees 7 healthy "
	        "(NVML) (and 1 more rule); gpu-b: agent.rdma-ports: 1 of 8 ports active; gpu-c: "
	        "agent.csi-probe: not answering; and 1 more node (tau inventory explain NODE)");
	apply_status(f, f->cluster);

	/* Back to agreeing: True again, a new transition time. */
	t.disagreeing = 0;
	t.n_nodes = 0;
	decide(f);
	c = cluster_condition(f, "NodeTruthAgrees");
	assert_string_equal(cond_field(c, "status"), "True");
	f->in.truth = NULL;
}

/*
 * DRAClassesUsable: Unknown before the inventory is read; True (NoMappedClasses) when no class
 * maps to a quota resource, True (Usable) when every mapped class counts; False naming each
 * unusable class with its reason and how many more; False when Kueue's configuration cannot
 * be read.  The budget's writes never change with it.
 */
static void test_dra_classes_condition(void **state)
{
	fixture *f = *state;
	tau_budget_dra d = {0};
	size_t writes;

	f->in.dra = NULL;
	decided_condition(f, "DRAClassesUsable", "Unknown", "NotObserved");
	writes = f->d->n_writes;
	f->in.dra = &d;
	decided_condition(f, "DRAClassesUsable", "True", "NoMappedClasses");
	d.mapped = 1;
	assert_string_equal(decided_condition(f, "DRAClassesUsable", "True", "Usable"),
	                    "1 DeviceClass maps to a quota resource; every one is usable");

	d.mapped = 7;
	d.unusable = 5;
	d.n_classes = 4;
	d.classes[0] = (tau_budget_dra_class){
	        "any-gpu", "class any-gpu: spec.selectors[0]: selector \"device.driver == 'a' || "
	                   "device.driver == 'b'\" is outside the CEL subset the pool evaluates: "
	                   "disjunction (||) is not read at offset 21"};
	d.classes[1] = (tau_budget_dra_class){"b", "class b: why b"};
	d.classes[2] = (tau_budget_dra_class){"c", "class c: why c"};
	d.classes[3] = (tau_budget_dra_class){"d", "class d: why d"};
	assert_string_equal(
	        decided_condition(f, "DRAClassesUsable", "False", "UnusableDeviceClass"),
	        "5 of 7 DeviceClasses that map to a quota resource count nothing (their devices "
	        "are left out of the pool): class any-gpu: spec.selectors[0]: selector "
	        "\"device.driver == 'a' || device.driver == 'b'\" is outside the CEL subset the "
	        "pool evaluates: disjunction (||) is not read at offset 21; class b: why b; "
	        "class c: why c; class d: why d; and 1 more");
	assert_int_equal(f->d->n_writes, writes);
	assert_string_equal(f->d->state, "BudgetApplied");
	apply_status(f, f->cluster);

	d.kueue_error = "ConfigMap kueue-system/kueue-manager-config key "
	                "controller_manager_config.yaml: not a Configuration";
	assert_string_equal(
	        decided_condition(f, "DRAClassesUsable", "False", "KueueConfigUnreadable"),
	        "Kueue's configuration cannot be read, so no DeviceClass counts until it is "
	        "fixed: ConfigMap kueue-system/kueue-manager-config key "
	        "controller_manager_config.yaml: not a Configuration");

	/* Usable again: True, and the budget still writes nothing for it. */
	d = (tau_budget_dra){.mapped = 2};
	assert_string_equal(decided_condition(f, "DRAClassesUsable", "True", "Usable"),
	                    "2 DeviceClasses map to a quota resource; every one is usable");
	assert_int_equal(f->d->n_writes, writes);
	f->in.dra = NULL;
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
	f->flavors[f->in.api.n_flavors++] =
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

	f->cohorts[f->in.api.n_cohorts++] =
	        keep(f, parse("{\"kind\":\"Cohort\",\"metadata\":{\"name\":\"tau-team-research\","
	                      "\"uid\":\"x\"},\"spec\":{}}"));
	decide(f);
	assert_string_equal(f->d->state, "OwnershipConflict");
	assert_null(find_write(f, "tau-team-research"));
	assert_null(find_write(f, "tau-ws-alpha"));
	/* It blocks what it names (and the queues that would borrow from it), not our flavors. */
	assert_non_null(find_write(f, "taugrid-gpu-h100"));
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

	f->wss[f->in.api.n_workspaces++] = keep(f, blocked);
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
	f->in.api.n_workspaces = 0;
	decide(f);
	/* The workspace's queue goes first: its workspace no longer exists. */
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_true(w->remove);
	/* The Cohort stays (at 0) while a ClusterQueue is still applied to it. */
	assert_true(find_write(f, "tau-team-research") == NULL ||
	            !find_write(f, "tau-team-research")->remove);
	f->in.api.n_cluster_queues = 0;
	decide(f);
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_true(w->remove);
	assert_string_equal(w->uid, "k-uid");
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

	f->in.api.n_teams = 0;
	decide(f);
	assert_string_equal(reason_of(f, f->cluster, "ConflictDetected"), "ConflictDetected");
	assert_null(find_write(f, "tau-team-research"));
}

/* A team beside the capacity team is an explicit team (explicit.c): an empty quota and no
 * workspaces hold nothing, so no Cohort and no cleanup finalizer (issue 24: deleting such a
 * team never waits for the aggregator); with a quota it gets the finalizer (E9, E10). */
static void test_explicit_team_beside_the_capacity_team(void **state)
{
	fixture *f = *state;
	cJSON *other =
	        parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"vision\","
	              "\"namespace\":\"tau-system\",\"uid\":\"v\"},\"spec\":{\"quota\":[]}}");
	const tau_budget_write *w;

	f->teams[f->in.api.n_teams++] = keep(f, other);
	decide(f);
	assert_string_equal(reason_of(f, other, "QuotaReady"), "QuotaApplied");
	assert_null(find_write(f, "tau-team-vision"));
	assert_null(find_write(f, "vision"));
	cJSON_ReplaceItemInObject(
	        cJSON_GetObjectItemCaseSensitive(other, "spec"), "quota",
	        parse("[{\"flavor\":\"taugrid-gpu-h100\",\"resource\":\"nvidia.com/gpu\","
	              "\"nominalQuota\":\"0\"}]"));
	decide(f);
	w = find_write(f, "vision");
	assert_non_null(w);
	assert_int_equal(w->kind, TAU_BUDGET_TEAM);
	assert_string_equal(
	        cJSON_GetArrayItem(tau_json_find(w->body, "metadata.finalizers"), 0)->valuestring,
	        "tau.azure.com/team-cleanup");
	/* The capacity team's budget is decided as before. */
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "BudgetApplied");
}

/* The capacity team carries the cleanup finalizer only while it has workspaces: without any,
 * one it has is removed (its deletion never waits for the aggregator). */
static void test_capacity_team_finalizer_removed(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;

	cJSON_AddItemToObject(cJSON_GetObjectItem(f->team, "metadata"), "finalizers",
	                      cJSON_Parse("[\"other/keep\",\"tau.azure.com/team-cleanup\"]"));
	decide(f);
	assert_null(find_write(f, "research")); /* workspace alpha: kept */
	f->in.api.n_workspaces = 0;
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

	f->cohorts[f->in.api.n_cohorts++] = keep(f, co);
	f->cqs[f->in.api.n_cluster_queues++] = keep(f, cq);
	decide(f);
	assert_null(find_write(f, "tau-team-gone")); /* still used by a queue */
	f->in.api.n_cluster_queues = 0;
	decide(f);
	w = find_write(f, "tau-team-gone");
	assert_non_null(w);
	assert_true(w->remove);
	assert_string_equal(w->uid, "co-gone");
}

/*
 * An explicit team's Events come with a change of its state only: a Warning named after the
 * reason when it becomes Degraded or is Degraded for another reason, QuotaRestored when it is
 * Ready again, nothing on a pass that changes nothing.
 */
static void test_explicit_team_events_on_change_only(void **state)
{
	fixture *f = *state;
	cJSON *team = parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"vision\","
	                    "\"namespace\":\"tau-system\",\"uid\":\"v\",\"generation\":1},"
	                    "\"spec\":{\"quota\":[{\"flavor\":\"platform-a\",\"resource\":"
	                    "\"nvidia.com/gpu\",\"nominalQuota\":\"4\"}]}}");
	const tau_budget_event *e = NULL;

	f->teams[f->in.api.n_teams++] = keep(f, team);
	decide(f);
	assert_string_equal(reason_of(f, team, "QuotaReady"), "FlavorNotReady");
	assert_int_equal(events_about(f, team, NULL, &e), 1);
	assert_string_equal(e->reason, "FlavorNotReady");
	assert_string_equal(e->type, "Warning");
	assert_string_equal(e->message, "ResourceFlavor \"platform-a\" named in the quota of team "
	                                "\"vision\" does not exist");
	/* The same state on the next passes: no Event (nor status write). */
	apply_status(f, team);
	decide(f);
	assert_int_equal(events_about(f, team, NULL, NULL), 0);
	assert_null(status_of(f, team));
	/* The platform creates the flavor: Ready again. */
	f->flavors[f->in.api.n_flavors++] =
	        keep(f, parse("{\"kind\":\"ResourceFlavor\",\"metadata\":{\"name\":"
	                      "\"platform-a\"},\"spec\":{}}"));
	decide(f);
	assert_string_equal(reason_of(f, team, "QuotaReady"), "QuotaApplied");
	assert_int_equal(events_about(f, team, NULL, &e), 1);
	assert_string_equal(e->reason, "QuotaRestored");
	assert_string_equal(e->type, "Normal");
	apply_status(f, team);
	decide(f);
	assert_int_equal(events_about(f, team, NULL, NULL), 0);
	/* Degraded, then Degraded for another reason: one Event each. */
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(tau_json_find(team, "spec.quota"), 0),
	                          "nominalQuota", cJSON_CreateString("-1"));
	decide(f);
	assert_string_equal(reason_of(f, team, "QuotaReady"), "QuotaInvalid");
	assert_int_equal(events_about(f, team, "QuotaInvalid", NULL), 1);
	apply_status(f, team);
	decide(f);
	assert_int_equal(events_about(f, team, NULL, NULL), 0);
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(tau_json_find(team, "spec.quota"), 0),
	                          "nominalQuota", cJSON_CreateString("4"));
	cJSON_ReplaceItemInObject(cJSON_GetArrayItem(tau_json_find(team, "spec.quota"), 0),
	                          "flavor", cJSON_CreateString("platform-b"));
	decide(f);
	assert_int_equal(events_about(f, team, NULL, &e), 1);
	assert_string_equal(e->reason, "FlavorNotReady");
	/* Being deleted with nothing left to wait for is Pending (cleaning up): no Event. */
	apply_status(f, team);
	cJSON_AddStringToObject(cJSON_GetObjectItem(team, "metadata"), "deletionTimestamp", NOW);
	cJSON_AddItemToObject(cJSON_GetObjectItem(team, "metadata"), "finalizers",
	                      cJSON_Parse("[\"tau.azure.com/team-cleanup\"]"));
	decide(f);
	assert_string_equal(reason_of(f, team, "QuotaReady"), "DeletionBlocked");
	assert_int_equal(events_about(f, team, NULL, NULL), 0);
}

/*
 * A workspace that leaves an explicit team keeps no QuotaReady from it: removed when it is
 * linked to no explicit team (no teamRef, or the capacity team), the new team's when it moves
 * to another explicit team, even before it has a queue there; its other conditions are kept.
 */
static void test_workspace_leaving_explicit_team(void **state)
{
	fixture *f = *state;
	cJSON *vision = parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"vision\","
	                      "\"namespace\":\"tau-system\",\"uid\":\"v\"},"
	                      "\"spec\":{\"quota\":[]}}");
	cJSON *cv = parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"cv\","
	                  "\"namespace\":\"tau-system\",\"uid\":\"cv\"},"
	                  "\"spec\":{\"quota\":[{\"flavor\":\"nope\",\"resource\":\"cpu\","
	                  "\"nominalQuota\":\"1\"}]}}");
	cJSON *ws = parse("{\"kind\":\"TauWorkspace\",\"metadata\":{\"name\":\"beta\","
	                  "\"namespace\":\"tau-system\",\"uid\":\"b-uid\",\"generation\":1},"
	                  "\"spec\":{\"teamRef\":{\"name\":\"vision\"}},"
	                  "\"status\":{\"target\":{\"resolvedNamespace\":\"beta\"},"
	                  "\"conditions\":[{\"type\":\"QueueReady\",\"status\":\"True\","
	                  "\"reason\":\"Ready\",\"message\":\"\"}]}}");
	cJSON *spec = cJSON_GetObjectItem(ws, "spec");
	const cJSON *st;

	f->teams[f->in.api.n_teams++] = keep(f, vision);
	f->teams[f->in.api.n_teams++] = keep(f, cv);
	f->wss[f->in.api.n_workspaces++] = keep(f, ws);
	decide(f);
	assert_string_equal(reason_of(f, ws, "QuotaReady"), "QuotaApplied");
	apply_status(f, ws);
	decide(f);
	assert_null(status_of(f, ws)); /* steady */

	/* teamRef removed: QuotaReady goes, QueueReady and the target stay. */
	cJSON_DeleteItemFromObject(spec, "teamRef");
	decide(f);
	st = status_of(f, ws);
	assert_non_null(st);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(st, "conditions")), 1);
	assert_string_equal(
	        tau_json_str(cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), 0), "type"),
	        "QueueReady");
	assert_string_equal(tau_json_str(st, "target.resolvedNamespace"), "beta");
	apply_status(f, ws);
	decide(f);
	assert_null(status_of(f, ws)); /* removed once */

	/* Back in vision, then moved to the capacity team: removed likewise. */
	cJSON_AddItemToObject(spec, "teamRef", cJSON_Parse("{\"name\":\"vision\"}"));
	decide(f);
	apply_status(f, ws);
	assert_non_null(tau_conditions_find(tau_json_find(ws, "status.conditions"), "QuotaReady"));
	cJSON_ReplaceItemInObject(spec, "teamRef", cJSON_Parse("{\"name\":\"research\"}"));
	decide(f);
	assert_non_null(status_of(f, ws));
	assert_null(reason_of(f, ws, "QuotaReady"));
	apply_status(f, ws);

	/* Moved to a Degraded explicit team before it has a namespace: that team's state. */
	cJSON_ReplaceItemInObject(spec, "teamRef", cJSON_Parse("{\"name\":\"vision\"}"));
	decide(f);
	apply_status(f, ws);
	cJSON_ReplaceItemInObject(spec, "teamRef", cJSON_Parse("{\"name\":\"cv\"}"));
	cJSON_DeleteItemFromObject((cJSON *)tau_json_find(ws, "status.target"),
	                           "resolvedNamespace");
	decide(f);
	assert_string_equal(reason_of(f, ws, "QuotaReady"), "FlavorNotReady");
	st = status_of(f, ws);
	assert_string_equal(tau_json_str(tau_conditions_find(cJSON_GetObjectItem(st, "conditions"),
	                                                     "QuotaReady"),
	                                 "message"),
	                    "team \"cv\" is not Ready: ResourceFlavor \"nope\" named in the quota "
	                    "of team \"cv\" does not exist");
}

/* Replace the observed Cohort named like `w` with what the write made of it. */
static void observe_cohort_write(fixture *f, const tau_budget_write *w)
{
	cJSON *obj = cJSON_Duplicate(w->body, true);

	cJSON_AddStringToObject(cJSON_GetObjectItem(obj, "metadata"), "uid", "k-uid");
	for (size_t i = 0; i < f->in.api.n_cohorts; i++)
		if (strcmp(tau_json_str(f->cohorts[i], "metadata.name"), w->name) == 0) {
			f->cohorts[i] = keep(f, obj);
			return;
		}
	assert_true(f->in.api.n_cohorts < 4);
	f->cohorts[f->in.api.n_cohorts++] = keep(f, obj);
}

/* The nominalQuota a write gives flavor/resource, "" when it names neither. */
static const char *written_quota(const tau_budget_write *w, const char *flavor, const char *res)
{
	const cJSON *fl, *r;

	cJSON_ArrayForEach(
	        fl,
	        tau_json_find(cJSON_GetArrayItem(tau_json_find(w->body, "spec.resourceGroups"), 0),
	                      "flavors"))
	{
		if (strcmp(tau_json_str(fl, "name"), flavor) != 0)
			continue;
		cJSON_ArrayForEach(r, cJSON_GetObjectItem(fl, "resources"))
		{
			if (strcmp(tau_json_str(r, "name"), res) == 0)
				return tau_json_str(r, "nominalQuota");
		}
	}
	return "";
}

/*
 * Finding 2 of issue 24, one ledger per pass: while a capacity team is configured its budget
 * claims the whole pool, zeroed or not, so an explicit team never takes a pool flavor (no
 * ratchet while the automatic budget is zeroed) and the pass that restores the automatic
 * budget never also writes an explicit share of it.
 */
static void test_one_ledger_explicit_refused_on_pool_flavors(void **state)
{
	fixture *f = *state;
	cJSON *ml = parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"ml\","
	                  "\"namespace\":\"tau-system\",\"uid\":\"ml-uid\",\"generation\":1,"
	                  "\"finalizers\":[\"tau.azure.com/team-cleanup\"]},"
	                  "\"spec\":{\"quota\":[{\"flavor\":\"taugrid-gpu-h100\",\"resource\":"
	                  "\"nvidia.com/gpu\",\"nominalQuota\":\"16\"}]}}");
	const char *refusal =
	        "flavor taugrid-gpu-h100 is in the automatic pool of capacity team \"research\" "
	        "(TauCluster spec.queues.capacityTeamRef), which holds all of its discovered "
	        "capacity 16 for resource nvidia.com/gpu even while its budget is zeroed; team "
	        "\"ml\" keeps its applied allocation: quote a flavor outside the pool";
	const tau_budget_write *co;

	decide(f);
	apply_writes(f);
	/* The automatic budget is zeroed (a bad selector), then team ml asks for the pool. */
	f->in.pool_problem = "spec.nodes.selector: not a map of label keys to values";
	decide(f);
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	assert_string_equal(written_quota(co, "taugrid-gpu-h100", "nvidia.com/gpu"), "0");
	observe_cohort_write(f, co);
	f->teams[f->in.api.n_teams++] = keep(f, ml);
	decide(f);
	assert_null(find_write(f, "tau-team-research"));
	assert_string_equal(reason_of(f, ml, "QuotaReady"), "CapacityExceeded");
	assert_string_equal(
	        tau_json_str(cJSON_GetArrayItem(tau_json_find(status_of(f, ml), "conditions"), 0),
	                     "message"),
	        refusal);
	co = find_write(f, "tau-team-ml");
	assert_true(co == NULL ||
	            strcmp(written_quota(co, "taugrid-gpu-h100", "nvidia.com/gpu"), "0") == 0);
	if (co != NULL)
		observe_cohort_write(f, co);
	apply_status(f, ml);
	/* One apply fixes the selector: the automatic budget comes back, ml still gets nothing. */
	f->in.pool_problem = NULL;
	decide(f);
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	assert_string_equal(written_quota(co, "taugrid-gpu-h100", "nvidia.com/gpu"), "16");
	co = find_write(f, "tau-team-ml");
	assert_true(co == NULL ||
	            strcmp(written_quota(co, "taugrid-gpu-h100", "nvidia.com/gpu"), "0") == 0);
	assert_string_equal(f->d->state, "BudgetApplied");
	/* Still CapacityExceeded (its status may now name the Cohort it got), no Event. */
	assert_true(status_of(f, ml) == NULL ||
	            strcmp(reason_of(f, ml, "QuotaReady"), "CapacityExceeded") == 0);
	assert_int_equal(events_about(f, ml, NULL, NULL), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Issue 24: the budget never freezes above the pool                                          */

static const tau_budget_event *event_of(const fixture *f, const char *reason)
{
	for (size_t i = 0; i < f->d->n_events; i++)
		if (strcmp(f->d->events[i].reason, reason) == 0)
			return &f->d->events[i];
	return NULL;
}

/* The status message of condition `type` the decision writes for `obj`. */
static const char *message_of(const fixture *f, const cJSON *obj, const char *type)
{
	const cJSON *st = status_of(f, obj);

	return tau_json_str(tau_conditions_find(cJSON_GetObjectItem(st, "conditions"), type),
	                    "message");
}

/* `helm uninstall && helm install`: every object of ours records the old TauCluster and team
 * UIDs.  They carry our labels and their recorded owners are gone: adopted, with an Event. */
static void test_reinstall_adopts_our_objects(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;

	decide(f);
	apply_writes(f);
	/* The new TauCluster and TauTeam (same names, new UIDs). */
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->cluster, "metadata"), "uid",
	                          cJSON_CreateString("c-uid-2"));
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->team, "metadata"), "uid",
	                          cJSON_CreateString("t-uid-2"));
	decide(f);
	assert_string_equal(f->d->state, "BudgetApplied");
	assert_string_equal(reason_of(f, f->cluster, "ConflictDetected"), "NoConflict");
	w = find_write(f, "taugrid-gpu-h100");
	assert_non_null(w);
	assert_false(w->create);
	assert_string_equal(tau_json_annotation(w->body, "tau.azure.com/cluster-uid"), "c-uid-2");
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_string_equal(tau_json_annotation(w->body, "tau.azure.com/team-uid"), "t-uid-2");
	assert_string_equal(quota_text(w->body, 1, 1), "16");
	assert_non_null(event_of(f, "Adopted"));
	assert_non_null(strstr(event_of(f, "Adopted")->message,
	                       "carries TauGrid's labels but its owner (tau.azure.com/cluster-uid "
	                       "c-uid) no longer exists: adopted by TauCluster cluster (UID "
	                       "c-uid-2)"));
	/* Once adopted, a steady state. */
	f->in.api.n_flavors = f->in.api.n_cohorts = f->in.api.n_cluster_queues = 0;
	decide(f);
	apply_writes(f);
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
}

/* The names of the flavors in the first resource group of a Cohort or ClusterQueue. */
static void flavor_names(char *buf, size_t len, const cJSON *obj)
{
	const cJSON *fl;

	buf[0] = '\0';
	cJSON_ArrayForEach(
	        fl, tau_json_find(cJSON_GetArrayItem(tau_json_find(obj, "spec.resourceGroups"), 0),
	                          "flavors"))
	{
		size_t used = strlen(buf);

		snprintf(buf + used, len - used, "%s%s", used > 0 ? "," : "",
		         cJSON_GetObjectItem(fl, "name")->valuestring);
	}
}

/* An object naming a live owner, or without our labels, is never adopted; a foreign flavor
 * under our name blocks only its flavor, left out of the Cohort and the queues (so Kueue's
 * resource-in-use finalizer lets its owner delete it), and the rest of the pool is applied. */
static void test_foreign_flavor_under_our_name_blocks_only_it(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co, *cq;
	char names[256];

	size_t h100 = 0;

	decide(f);
	apply_writes(f); /* the Cohort and alpha's queue list both flavors */
	while (strcmp(tau_json_str(f->flavors[h100], "metadata.name"), "taugrid-gpu-h100") != 0)
		h100++;
	f->flavors[h100] = keep(f, parse("{\"kind\":\"ResourceFlavor\",\"metadata\":{\"name\":"
	                                 "\"taugrid-gpu-h100\",\"uid\":\"x\"},\"spec\":{"
	                                 "\"nodeLabels\":{\"pool\":\"elsewhere\"}}}"));
	decide(f);
	assert_string_equal(f->d->state, "OwnershipConflict");
	assert_null(find_write(f, "taugrid-gpu-h100"));
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	flavor_names(names, sizeof(names), co->body);
	assert_string_equal(names, "taugrid-gpu-a100");       /* h100 left out */
	assert_string_equal(quota_text(co->body, 0, 1), "8"); /* a100 applied */
	cq = find_write(f, "tau-ws-alpha");
	assert_non_null(cq);
	flavor_names(names, sizeof(names), cq->body);
	assert_string_equal(names, "taugrid-gpu-a100");
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "ResourceFlavor taugrid-gpu-h100 exists but is not ours: label "
	                       "app.kubernetes.io/managed-by is absent: not managed by TauGrid; "
	                       "it is never changed or adopted: its flavor is left out of Cohort "
	                       "tau-team-research and its ClusterQueues (the rest of the pool is "
	                       "applied), so no queue of ours keeps its owner from deleting it"));
	/* Steady: once written, the next pass writes neither again. */
	f->in.api.n_cohorts = f->in.api.n_cluster_queues = 0;
	apply_writes(f);
	decide(f);
	assert_null(find_write(f, "tau-team-research"));
	assert_null(find_write(f, "tau-ws-alpha"));
	/* Our labels but a live owner's UID (the current TauCluster's is ours, so: legacy, no
	 * UID): not adopted either. */
	f->flavors[h100] = keep(f, parse("{\"kind\":\"ResourceFlavor\",\"metadata\":{\"name\":"
	                                 "\"taugrid-gpu-h100\",\"uid\":\"x\",\"labels\":{"
	                                 "\"app.kubernetes.io/managed-by\":\"taugrid\","
	                                 "\"tau.azure.com/gpu-class\":\"h100\"}},\"spec\":{}}"));
	decide(f);
	assert_string_equal(f->d->state, "OwnershipConflict");
	assert_null(find_write(f, "taugrid-gpu-h100"));
	assert_null(event_of(f, "Adopted"));
}

/* A Cohort of ours naming a live team other than the capacity team is not adopted. */
static void test_cohort_of_a_live_owner_is_not_adopted(void **state)
{
	fixture *f = *state;

	f->teams[f->in.api.n_teams++] =
	        keep(f, parse("{\"kind\":\"TauTeam\",\"metadata\":{\"name\":"
	                      "\"other\",\"namespace\":\"tau-system\","
	                      "\"uid\":\"o-uid\"},\"spec\":{}}"));
	f->cohorts[f->in.api.n_cohorts++] = keep(
	        f, parse("{\"kind\":\"Cohort\",\"metadata\":{\"name\":\"tau-team-research\","
	                 "\"uid\":\"k\",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	                 "\"tau.azure.com/team\":\"research\"},\"annotations\":{"
	                 "\"tau.azure.com/team-uid\":\"o-uid\"}},\"spec\":{}}"));
	decide(f);
	assert_string_equal(f->d->state, "OwnershipConflict");
	assert_null(find_write(f, "tau-team-research"));
	assert_null(event_of(f, "Adopted"));
}

/* The capacity team deleted without its finalizer: its Cohort is zeroed, not frozen. */
static void test_missing_team_zeroes_its_cohort(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co;

	decide(f);
	apply_writes(f);
	f->in.api.n_teams = 0;
	decide(f);
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	assert_false(co->remove);
	assert_string_equal(quota_text(co->body, 0, 1), "0");
	assert_string_equal(quota_text(co->body, 1, 1), "0");
	assert_string_equal(tau_json_annotation(co->body, "tau.azure.com/team-uid"), "t-uid");
	assert_string_equal(reason_of(f, f->cluster, "BudgetReady"), "ConflictDetected");
}

/* Deleting the capacity team while it has workspaces waits (finalizer), the budget keeps
 * following the pool; without workspaces its queues go, then its Cohort and finalizer. */
static void test_capacity_team_deletion_waits_then_cleans_up(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;
	tau_budget_pool *smaller = NULL;

	decide(f);
	apply_writes(f);
	assert_true(tau_budget_has_team_finalizer(f->team));
	cJSON_AddStringToObject(cJSON_GetObjectItem(f->team, "metadata"), "deletionTimestamp", NOW);
	assert_int_equal(tau_budget_pool_new(&smaller), 0);
	set_res(smaller, "h100", "nvidia.com/gpu", "8");
	f->in.pool = smaller;
	decide(f);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "DeletionBlocked");
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "team research is being deleted but its workspaces (alpha) still "
	                       "use its budget: delete them or move them to another team"));
	assert_string_equal(quota_text(find_write(f, "tau-team-research")->body, 1, 1), "8");
	assert_null(find_write(f, "research")); /* the finalizer stays */
	/* The workspace goes; its queue (no work) is deleted; the Cohort waits for it. */
	f->in.api.n_workspaces = 0;
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_true(w->remove);
	assert_null(find_write(f, "tau-team-research"));
	assert_null(find_write(f, "research"));
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "Cohort tau-team-research goes once no ClusterQueue is applied"));
	/* The queue is gone: the Cohort is deleted and the finalizer removed, in that order. */
	f->in.api.n_cluster_queues = 0;
	decide(f);
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_true(w->remove);
	w = find_write(f, "research");
	assert_non_null(w);
	assert_false(tau_budget_has_team_finalizer(w->body));
	assert_true(w > find_write(f, "tau-team-research"));
	tau_budget_decision_free(f->d);
	f->d = NULL;
	tau_budget_pool_free(smaller);
}

static cJSON *with_work(const cJSON *cq)
{
	cJSON *o = cJSON_Duplicate(cq, true);

	cJSON_AddItemToObject(o, "status",
	                      parse("{\"admittedWorkloads\":2,"
	                            "\"reservingWorkloads\":0}"));
	return o;
}

/* Finding 4: spec.quota on a workspace of the capacity team holds its queue (never deleted);
 * removing the mistake releases it as it was. */
static void test_misconfigured_workspace_holds_its_queue(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;
	const cJSON *held;
	const char *msg;

	decide(f);
	apply_writes(f);
	f->cqs[0] = keep(f, with_work(f->cqs[0]));
	cJSON_AddItemToObject(cJSON_GetObjectItem(f->ws, "spec"), "quota", parse("[]"));
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_false(w->remove);
	assert_string_equal(tau_json_str(w->body, "spec.stopPolicy"), "Hold");
	assert_non_null(strstr(tau_json_annotation(w->body, "tau.azure.com/held"),
	                       "TauWorkspace alpha of capacity team research sets spec.quota"));
	assert_null(tau_json_find(w->body, "status"));
	assert_string_equal(reason_of(f, f->ws, "QuotaReady"), "QueueHeld");
	msg = message_of(f, f->ws, "QuotaReady");
	assert_non_null(strstr(msg, "its ClusterQueue is held (stopPolicy Hold"));
	assert_non_null(strstr(msg, "remove spec.quota"));
	/* Held: the next pass writes nothing more to it. */
	held = keep(f, cJSON_Duplicate(w->body, true));
	f->cqs[0] = keep(f, with_work(held));
	apply_status(f, f->ws);
	decide(f);
	assert_null(find_write(f, "tau-ws-alpha"));
	/* Also without work: a misconfiguration never deletes it. */
	f->cqs[0] = held;
	decide(f);
	assert_null(find_write(f, "tau-ws-alpha"));
	/* Undone: released (stopPolicy and annotation gone). */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(f->ws, "spec"), "quota");
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_null(tau_json_find(w->body, "spec.stopPolicy"));
	assert_null(tau_json_annotation(w->body, "tau.azure.com/held"));
	assert_null(reason_of(f, f->ws, "QuotaReady"));
}

/* The other misconfigurations hold the queue too, each naming its fix. */
static void test_misconfiguration_messages(void **state)
{
	static const struct {
		const char *status, *held;
		bool multiple;
	} rows[] = {
	        {"{\"target\":{}}",
	         "TauWorkspace alpha has no resolved namespace: fix what its Ready condition names "
	         "(namespaceMap, namespace allowlist or a namespace taken by another workspace)",
	         true},
	        {"{\"target\":{\"resolvedNamespace\":\"alpha\"},\"conditions\":[{\"type\":"
	         "\"QueueReady\",\"status\":\"False\",\"reason\":\"BlockedByActiveWorkspace\","
	         "\"message\":\"v0 activates one workspace at a time: workspace zeta (created "
	         "2026-01-01T00:00:00Z) is active; this workspace is blocked until zeta is "
	         "removed\"}]}",
	         "TauWorkspace alpha is blocked by the one-active-workspace rule (v0 activates one "
	         "workspace at a time: workspace zeta (created 2026-01-01T00:00:00Z) is active; "
	         "this workspace is blocked until zeta is removed): delete the active workspace "
	         "or enable the MultipleWorkspaces feature gate",
	         false},
	        /* As the workspace controller leaves a v0-blocked workspace: no resolved
	         * namespace either, and the v0 rule is what to fix. */
	        {"{\"target\":{},\"conditions\":[{\"type\":"
	         "\"QueueReady\",\"status\":\"False\",\"reason\":\"BlockedByActiveWorkspace\"}]}",
	         "TauWorkspace alpha is blocked by the one-active-workspace rule (another "
	         "workspace is active): delete the active workspace or enable the "
	         "MultipleWorkspaces feature gate",
	         false},
	};
	fixture *f = *state;

	decide(f);
	apply_writes(f);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const tau_budget_write *w;

		cJSON_ReplaceItemInObject(f->ws, "status", parse(rows[i].status));
		f->in.multiple_workspaces = rows[i].multiple;
		decide(f);
		w = find_write(f, "tau-ws-alpha");
		assert_non_null(w);
		assert_false(w->remove);
		assert_string_equal(tau_json_str(w->body, "spec.stopPolicy"), "Hold");
		assert_string_equal(tau_json_annotation(w->body, "tau.azure.com/held"),
		                    rows[i].held);
		assert_string_equal(reason_of(f, f->ws, "QuotaReady"), "QueueHeld");
	}
}

/* A queue whose workspace is gone is deleted only once its work has drained. */
static void test_queue_of_a_deleted_workspace_drains_first(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;

	decide(f);
	apply_writes(f);
	f->cqs[0] = keep(f, with_work(f->cqs[0]));
	f->in.api.n_workspaces = 0;
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_false(w->remove);
	assert_string_equal(tau_json_str(w->body, "spec.stopPolicy"), "Hold");
	f->cqs[0] = keep(f, cJSON_Duplicate(w->body, true)); /* drained: no status */
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_true(w->remove);
}

/* The TauCluster gone or being deleted (deletionPolicy Retain): the automatic Cohort is kept,
 * bounded at 0, and its team says why; explicit Cohorts and everything else are untouched. */
static void test_retained_budget_is_zeroed(void **state)
{
	fixture *f = *state;
	const tau_budget_write *co;

	decide(f);
	apply_writes(f);
	f->in.cluster = NULL;
	decide(f);
	co = find_write(f, "tau-team-research");
	assert_non_null(co);
	assert_false(co->remove);
	assert_string_equal(quota_text(co->body, 0, 1), "0");
	assert_string_equal(quota_text(co->body, 1, 0), "0");
	assert_string_equal(quota_text(co->body, 1, 1), "0");
	assert_string_equal(tau_json_annotation(co->body, "tau.azure.com/team-uid"), "t-uid");
	assert_int_equal(f->d->n_writes, 1);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "BudgetZeroed");
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "TauCluster cluster does not exist (deletionPolicy Retain): Cohort "
	                       "tau-team-research is kept at 0"));
	assert_true(has_event(f, "BudgetZeroed"));
	/* Being deleted: the same. */
	cJSON_AddStringToObject(cJSON_GetObjectItem(f->cluster, "metadata"), "deletionTimestamp",
	                        NOW);
	f->in.cluster = f->cluster;
	decide(f);
	assert_non_null(find_write(f, "tau-team-research"));
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"), "is being deleted"));
}

/* deletionPolicy DeleteManaged, recorded on the Cohort: once the TauCluster is gone its queues
 * go as their work drains (held meanwhile), then the Cohort; at 0 until then. */
static void test_delete_managed_drains_then_deletes(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;
	const cJSON *drained;

	cJSON_AddStringToObject(cJSON_GetObjectItem(f->cluster, "spec"), "deletionPolicy",
	                        "DeleteManaged");
	decide(f);
	assert_string_equal(tau_json_annotation(find_write(f, "tau-team-research")->body,
	                                        "tau.azure.com/deletion-policy"),
	                    "DeleteManaged");
	assert_string_equal(tau_json_annotation(find_write(f, "taugrid-gpu-h100")->body,
	                                        "tau.azure.com/deletion-policy"),
	                    "DeleteManaged");
	apply_writes(f);
	f->cqs[0] = keep(f, with_work(f->cqs[0]));
	/* Held by another finalizer (foreground deletion): the TauCluster says what is held. */
	cJSON_AddStringToObject(cJSON_GetObjectItem(f->cluster, "metadata"), "deletionTimestamp",
	                        "2026-01-01T00:00:00Z");
	decide(f);
	assert_string_equal(reason_of(f, f->cluster, "BudgetReady"), "BudgetZeroed");
	assert_string_equal(
	        message_of(f, f->cluster, "BudgetReady"),
	        "root quota is 0: TauCluster cluster is being deleted (deletionPolicy "
	        "DeleteManaged): ClusterQueue tau-ws-alpha is held (stopPolicy Hold) until its "
	        "admitted and reserving work drains; Cohort tau-team-research is at 0 and goes "
	        "once no ClusterQueue is applied to it; ResourceFlavor taugrid-gpu-a100 is kept "
	        "while ClusterQueue tau-ws-alpha names it; ResourceFlavor taugrid-gpu-h100 is "
	        "kept while ClusterQueue tau-ws-alpha names it");
	f->in.cluster = NULL;
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_false(w->remove);
	assert_string_equal(tau_json_str(w->body, "spec.stopPolicy"), "Hold");
	assert_non_null(strstr(tau_json_annotation(w->body, "tau.azure.com/held"),
	                       "deletionPolicy DeleteManaged"));
	assert_string_equal(quota_text(find_write(f, "tau-team-research")->body, 1, 1), "0");
	assert_false(find_write(f, "tau-team-research")->remove);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "BudgetZeroed");
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "(deletionPolicy DeleteManaged): the team's ClusterQueues are "
	                       "deleted as their work drains, then Cohort tau-team-research"));
	assert_string_equal(reason_of(f, f->ws, "QuotaReady"), "QueueHeld");
	/* Drained: the queue goes; the Cohort waits until it is gone. */
	drained = keep(f, cJSON_Duplicate(w->body, true));
	f->cqs[0] = drained;
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_true(w->remove);
	assert_true(find_write(f, "tau-team-research") == NULL ||
	            !find_write(f, "tau-team-research")->remove);
	f->in.api.n_cluster_queues = 0;
	decide(f);
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_true(w->remove);
	assert_null(find_write(f, "taugrid-gpu-h100")); /* not while the Cohort names it */
	/* The Cohort gone: our flavors go, except one a foreign queue still names (Kueue's
	 * resource-in-use finalizer would hold it Terminating): kept and said. */
	f->in.api.n_cohorts = 0;
	f->cqs[0] = keep(f, parse("{\"metadata\":{\"name\":\"other-cq\",\"uid\":\"o-1\"},"
	                          "\"spec\":{\"resourceGroups\":[{\"coveredResources\":["
	                          "\"nvidia.com/gpu\"],\"flavors\":[{\"name\":"
	                          "\"taugrid-gpu-h100\",\"resources\":[{\"name\":"
	                          "\"nvidia.com/gpu\",\"nominalQuota\":\"0\"}]}]}]}}"));
	f->in.api.n_cluster_queues = 1;
	decide(f);
	w = find_write(f, "taugrid-gpu-a100");
	assert_non_null(w);
	assert_true(w->remove);
	assert_string_equal(w->uid, "k-uid");
	assert_null(find_write(f, "taugrid-gpu-h100"));
	assert_non_null(strstr(f->d->summary, "ResourceFlavor taugrid-gpu-h100 is kept while "
	                                      "ClusterQueue other-cq names it"));
	f->in.api.n_cluster_queues = 0;
	decide(f);
	assert_true(find_write(f, "taugrid-gpu-h100") != NULL &&
	            find_write(f, "taugrid-gpu-h100")->remove);
}

/* Retain keeps our flavors, even once nothing names them. */
static void test_retain_keeps_flavors(void **state)
{
	fixture *f = *state;

	decide(f);
	apply_writes(f);
	f->in.cluster = NULL;
	f->in.api.n_cluster_queues = 0;
	f->in.api.n_cohorts = 0;
	decide(f);
	assert_null(find_write(f, "taugrid-gpu-h100"));
	assert_null(find_write(f, "taugrid-gpu-a100"));
}

/* Observe writes nothing and says how the live Cohort differs from the pool. */
static void test_observe_reports_drift(void **state)
{
	fixture *f = *state;
	tau_budget_pool *smaller = NULL;
	const char *msg;

	decide(f);
	apply_writes(f);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->cluster, "spec"), "managementMode",
	                          cJSON_CreateString("Observe"));
	assert_int_equal(tau_budget_pool_new(&smaller), 0);
	set_res(smaller, "h100", "nvidia.com/gpu", "8");
	set_res(smaller, "h100", "cpu", "192");
	set_res(smaller, "a100", "nvidia.com/gpu", "8");
	f->in.pool = smaller;
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
	msg = message_of(f, f->team, "QuotaReady");
	/* Every cell that differs, with the live value and the pool's (the model test reads it). */
	assert_string_equal(msg, "managementMode is Observe: nothing is written; the live Cohort "
	                         "tau-team-research does not follow the pool: "
	                         "taugrid-gpu-h100/nvidia.com/gpu holds 16, want 8 (would be "
	                         "BudgetApplied: Cohort tau-team-research holds the pool of 3 "
	                         "counted nodes)");
	assert_string_equal(message_of(f, f->cluster, "BudgetReady"), msg);
	f->in.pool = f->pool;
	decide(f);
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "the live Cohort tau-team-research matches the pool"));
	/* A node selector set in Observe: our flavors are not rewritten, and that is said. */
	cJSON_AddItemToObject(cJSON_GetObjectItem(f->cluster, "spec"), "nodes",
	                      parse("{\"selector\":{\"pool\":\"a\"}}"));
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
	assert_non_null(strstr(message_of(f, f->cluster, "BudgetReady"),
	                       "ResourceFlavor taugrid-gpu-h100 does not follow the pool: "));
	tau_budget_decision_free(f->d);
	f->d = NULL;
	tau_budget_pool_free(smaller);
}

/* Observe while the team may not leave (P7): the drift is still said, not only LeaveBlocked. */
static void test_observe_reports_drift_while_leave_blocked(void **state)
{
	fixture *f = *state;
	tau_budget_pool *smaller = NULL;

	decide(f);
	apply_writes(f);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->cluster, "spec"), "managementMode",
	                          cJSON_CreateString("Observe"));
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(f->cluster, "spec"), "queues");
	assert_int_equal(tau_budget_pool_new(&smaller), 0);
	set_res(smaller, "h100", "nvidia.com/gpu", "8");
	set_res(smaller, "h100", "cpu", "192");
	set_res(smaller, "a100", "nvidia.com/gpu", "8");
	f->in.pool = smaller;
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
	assert_string_equal(reason_of(f, f->team, "QuotaReady"), "ObserveOnly");
	assert_non_null(strstr(message_of(f, f->team, "QuotaReady"),
	                       "tau-team-research does not follow the pool: "
	                       "taugrid-gpu-h100/nvidia.com/gpu holds 16, want 8 (would be "
	                       "LeaveBlocked: spec.queues.capacityTeamRef was removed"));
	tau_budget_decision_free(f->d);
	f->d = NULL;
	tau_budget_pool_free(smaller);
}

/* Observe after capacityTeamRef is removed from a team without workspaces: its Cohort, which
 * Reconcile would delete, is said to be kept, with every cell it still holds. */
static void test_observe_reports_a_retiring_cohort(void **state)
{
	fixture *f = *state;
	const char *msg;

	decide(f);
	apply_writes(f);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->cluster, "spec"), "managementMode",
	                          cJSON_CreateString("Observe"));
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(f->cluster, "spec"), "queues");
	f->in.api.n_workspaces = 0;
	decide(f);
	assert_int_equal(f->d->n_writes, 0);
	msg = message_of(f, f->cluster, "BudgetReady");
	assert_non_null(msg);
	assert_non_null(strstr(msg, "managementMode is Observe: nothing is written; Cohort "
	                            "tau-team-research of previous capacity team research is not "
	                            "removed: "));
	assert_non_null(strstr(msg, "taugrid-gpu-h100/nvidia.com/gpu holds 16, want 0"));
	assert_non_null(strstr(msg, "(would be LeaveBlocked: removing the previous capacity "
	                            "team's budget"));
}

/*
 * capacityTeamRef moved from research to ml while research's deleted workspace still has
 * admitted work in its (held) queue: research's Cohort is zeroed but kept while that queue is
 * applied to it, and ml gets no budget until it is gone, so the two never cover the same GPUs.
 */
static void test_moved_capacity_waits_for_held_queues(void **state)
{
	fixture *f = *state;
	const tau_budget_write *w;

	decide(f);
	apply_writes(f);
	f->teams[1] = keep(f, parse("{\"metadata\":{\"name\":\"ml\",\"uid\":\"ml-uid\"},"
	                            "\"spec\":{}}"));
	f->in.api.n_teams = 2;
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(f->cluster, "spec"), "queues",
	                          parse("{\"capacityTeamRef\":{\"name\":\"ml\"}}"));
	f->cqs[0] = keep(f, with_work(f->cqs[0]));
	f->in.api.n_workspaces = 0;
	decide(f);
	w = find_write(f, "tau-ws-alpha");
	assert_non_null(w);
	assert_false(w->remove);
	assert_string_equal(tau_json_str(w->body, "spec.stopPolicy"), "Hold");
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_false(w->remove);
	assert_string_equal(quota_text(w->body, 1, 1), "0");
	assert_null(find_write(f, "tau-team-ml"));
	assert_non_null(strstr(f->d->summary, "Cohort tau-team-research goes once ClusterQueue "
	                                      "tau-ws-alpha, still applied to it, has drained"));
	/* Drained and gone: the Cohort goes; only then does ml take the pool. */
	f->in.api.n_cluster_queues = 0;
	decide(f);
	w = find_write(f, "tau-team-research");
	assert_non_null(w);
	assert_true(w->remove);
	assert_null(find_write(f, "tau-team-ml"));
	f->in.api.n_cohorts = 0;
	decide(f);
	assert_non_null(find_write(f, "tau-team-ml"));
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	        T(test_applied_writes_flavors_cohort_queue),
	        T(test_steady_state_writes_nothing),
	        T(test_node_truth_condition),
	        T(test_dra_classes_condition),
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
	        T(test_moved_capacity_waits_for_held_queues),
	        T(test_shrink_and_retained_flavor),
	        T(test_missing_team_is_a_conflict),
	        T(test_explicit_team_beside_the_capacity_team),
	        T(test_capacity_team_finalizer_removed),
	        T(test_explicit_leftover_cohort_removed),
	        T(test_explicit_team_events_on_change_only),
	        T(test_workspace_leaving_explicit_team),
	        T(test_one_ledger_explicit_refused_on_pool_flavors),
	        T(test_reinstall_adopts_our_objects),
	        T(test_foreign_flavor_under_our_name_blocks_only_it),
	        T(test_cohort_of_a_live_owner_is_not_adopted),
	        T(test_missing_team_zeroes_its_cohort),
	        T(test_capacity_team_deletion_waits_then_cleans_up),
	        T(test_misconfigured_workspace_holds_its_queue),
	        T(test_misconfiguration_messages),
	        T(test_queue_of_a_deleted_workspace_drains_first),
	        T(test_observe_reports_drift),
	        T(test_observe_reports_drift_while_leave_blocked),
	        T(test_observe_reports_a_retiring_cohort),
	        T(test_retained_budget_is_zeroed),
	        T(test_delete_managed_drains_then_deletes),
	        T(test_retain_keeps_flavors),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
