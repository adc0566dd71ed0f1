/*
 * decide_status.c - what the budget reports: the QuotaReady/BudgetReady state of a team, the
 * status of each TauTeam, TauWorkspace and the TauCluster (with its InventoryEstablished,
 * NodeSelectorValid, ConflictDetected, NodeTruthAgrees and DRAClassesUsable conditions), and
 * the Events that follow a change of state.  A status is written only when it differs.
 */
#include "decide_internal.h"

#include "tau/buf.h"
#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tau_budget_set_state(team_state *s, const char *reason, const char *status, const char *phase,
                          const char *f, ...)
{
	va_list ap;

	s->reason = reason;
	s->status = status;
	s->phase = phase;
	va_start(ap, f);
	vsnprintf(s->message, sizeof(s->message), f, ap);
	va_end(ap);
}

static bool is_zeroing(const char *reason)
{
	return tau_str_eq_both_set(reason, TAU_BUDGET_REASON_ZEROED) ||
	       tau_str_eq_both_set(reason, TAU_BUDGET_REASON_CONFLICT);
}

cJSON *tau_budget_conditions_of(const cJSON *obj)
{
	return (cJSON *)tau_json_find(obj, "status.conditions");
}

/* Index of the condition of `type` in the array conds, -1 when absent. */
static int condition_index(const cJSON *conds, const char *type)
{
	const cJSON *c;
	int i = 0;

	if (!cJSON_IsArray(conds))
		return -1;
	cJSON_ArrayForEach(c, conds)
	{
		if (tau_str_eq_both_set(tau_json_str(c, "type"), type))
			return i;
		i++;
	}
	return -1;
}

/* Whether the new status differs from obj's .status on the fields we write. */
static bool status_differs(const cJSON *obj, const cJSON *st, const char *const *fields)
{
	const cJSON *old = tau_json_find(obj, "status");

	if (!cJSON_IsObject(old))
		return true;
	for (size_t i = 0; fields[i] != NULL; i++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, fields[i]);
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(old, fields[i]);

		if (a == NULL && b == NULL)
			continue;
		if (a == NULL || b == NULL || !cJSON_Compare(a, b, true))
			return true;
	}
	return !tau_conditions_equal(cJSON_GetObjectItemCaseSensitive(st, "conditions"),
	                             cJSON_GetObjectItemCaseSensitive(old, "conditions"));
}

static const char *const TEAM_FIELDS[] = {"phase", "observedGeneration", "cohort", "cohortUID",
                                          NULL};

static const char *const CLUSTER_FIELDS[] = {
        "phase", "observedGeneration", "discoveredCapacity", "managedResources", "systemNamespace",
        NULL};

void tau_budget_team_status(builder *b, const tau_budget_observed *in, const cJSON *team,
                            const team_state *s, const char *cohort, const char *cohort_uid)
{
	cJSON *st = cJSON_CreateObject(), *conds = cJSON_CreateArray();
	int64_t gen = tau_budget_generation(team);

	if (st == NULL || conds == NULL || cJSON_AddStringToObject(st, "phase", s->phase) == NULL ||
	    cJSON_AddNumberToObject(st, "observedGeneration", (double)gen) == NULL ||
	    (cohort != NULL && cJSON_AddStringToObject(st, "cohort", cohort) == NULL) ||
	    (cohort_uid != NULL && cJSON_AddStringToObject(st, "cohortUID", cohort_uid) == NULL)) {
		cJSON_Delete(st);
		cJSON_Delete(conds);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	cJSON_AddItemToObject(st, "conditions", conds);
	if (tau_conditions_set(conds, tau_budget_conditions_of(team), "QuotaReady", s->status,
	                       s->reason, s->message, gen, in->now) < 0) {
		cJSON_Delete(st);
		b->rc = b->rc < 0 ? b->rc : -TAU_ENOMEM;
		return;
	}
	if (status_differs(team, st, TEAM_FIELDS))
		tau_budget_add_status(b, team, st);
	else
		cJSON_Delete(st);
}

/* The capacity per flavor and resource, as the pool sums it. */
static int discovered_capacity(cJSON *arr, const tau_budget_pool *pool)
{
	char fname[TAU_BUDGET_NAME_BUF], q[TAU_QUANTITY_STR_MAX];

	for (size_t i = 0; i < pool->n_classes; i++) {
		const tau_budget_class *c = &pool->classes[i];

		if (tau_budget_flavor_name(fname, sizeof(fname), c->name) < 0)
			continue; /* reported by the plan */
		for (size_t j = 0; j < c->n_resources; j++) {
			cJSON *e = cJSON_CreateObject();

			if (e == NULL ||
			    tau_quantity_format(q, sizeof(q), &c->resources[j].total) < 0 ||
			    cJSON_AddStringToObject(e, "flavor", fname) == NULL ||
			    cJSON_AddStringToObject(e, "resource", c->resources[j].name) == NULL ||
			    cJSON_AddStringToObject(e, "capacity", q) == NULL) {
				cJSON_Delete(e);
				return tau_budget_nomem();
			}
			cJSON_AddItemToArray(arr, e);
		}
	}
	return 0;
}

void tau_budget_state_events(builder *b, const cJSON *obj, const char *cond_type,
                             const team_state *s)
{
	const cJSON *old = tau_conditions_find(tau_budget_conditions_of(obj), cond_type);
	const char *old_reason = old != NULL ? tau_json_str(old, "reason") : NULL;

	if (is_zeroing(s->reason) && !is_zeroing(old_reason))
		tau_budget_add_event(b, obj, "Warning", "BudgetZeroed", s->message);
	else if (tau_str_eq_both_set(s->reason, TAU_BUDGET_REASON_APPLIED) &&
	         is_zeroing(old_reason))
		tau_budget_add_event(b, obj, "Normal", "BudgetRestored", s->message);
	if (tau_str_eq_both_set(s->reason, TAU_BUDGET_REASON_LEAVE_BLOCKED) &&
	    !tau_str_eq_both_set(old_reason, TAU_BUDGET_REASON_LEAVE_BLOCKED))
		tau_budget_add_event(b, obj, "Warning", "LeaveRefused", s->message);
}

void tau_budget_conflict_events(builder *b, const cJSON *obj, bool now, const char *message)
{
	const cJSON *old = tau_conditions_find(tau_budget_conditions_of(obj), "ConflictDetected");
	bool was = old != NULL && tau_str_eq_both_set(tau_json_str(old, "status"), "True");
	const char *old_msg = old != NULL ? tau_json_str(old, "message") : NULL;

	if (now && (!was || !tau_str_eq_both_set(old_msg, message)))
		tau_budget_add_event(b, obj, "Warning", "ConflictDetected", message);
	else if (!now && was)
		tau_budget_add_event(b, obj, "Normal", "ConflictCleared",
		                     "no conflicting budget remains");
}

/*
 * NodeTruthAgrees: whether the counted nodes' agents see what their Nodes advertise
 * (inventory/truthrules.h, docs/agent.md).  True when every counted node that reports node
 * truth agrees; False naming how many disagree and the first few with their first failing
 * rule and what it says; Unknown when no counted node's agent reports.  It never changes the
 * budget: the pool follows the Node objects (the contract), and a remediation reaches it
 * through Node conditions and cordons.
 */
static int node_truth_condition(cJSON *conds, const cJSON *prev, const tau_budget_observed *in,
                                int64_t gen)
{
	const tau_budget_truth *t = in->truth;
	tau_buf msg = TAU_BUF_INIT(8192);
	char *text;
	int rc;

	if (t == NULL || t->reporting == 0)
		return tau_conditions_set(conds, prev, "NodeTruthAgrees", "Unknown",
		                          "NoAgentReports",
		                          "no counted node's agent reports node-local facts "
		                          "(tau-node-agent not running there, or not reported yet)",
		                          gen, in->now);
	if (t->disagreeing == 0) {
		tau_buf_printf(
		        &msg,
		        "the agents of %zu of %zu counted nodes report node-local facts; none "
		        "disagrees with what its Node advertises",
		        t->reporting, in->nodes_counted);
	} else {
		tau_buf_printf(&msg,
		               "%zu of %zu counted nodes reporting node-local facts disagree with "
		               "what their Node advertises (they still count: the budget follows "
		               "the Node objects):",
		               t->disagreeing, t->reporting);
		for (size_t i = 0; i < t->n_nodes; i++) {
			const tau_budget_truth_node *n = &t->nodes[i];

			tau_buf_printf(&msg, "%s %s: %s: %s", i > 0 ? ";" : "",
			               n->node != NULL ? n->node : "?",
			               n->rule != NULL ? n->rule : "?",
			               n->detail != NULL ? n->detail : "");
			if (n->more_rules > 0)
				tau_buf_printf(&msg, " (and %u more rule%s)", n->more_rules,
				               n->more_rules == 1 ? "" : "s");
		}
		if (t->disagreeing > t->n_nodes)
			tau_buf_printf(&msg, "; and %zu more node%s", t->disagreeing - t->n_nodes,
			               t->disagreeing - t->n_nodes == 1 ? "" : "s");
		tau_buf_printf(&msg, " (tau inventory explain NODE)");
	}
	if ((rc = tau_buf_error(&msg)) < 0) {
		tau_buf_free(&msg);
		return rc;
	}
	text = tau_buf_take(&msg, NULL);
	rc = tau_conditions_set(conds, prev, "NodeTruthAgrees",
	                        t->disagreeing == 0 ? "True" : "False",
	                        t->disagreeing == 0 ? "Agrees" : "Disagrees", text, gen, in->now);
	free(text);
	return rc;
}

/*
 * DRAClassesUsable: whether every DeviceClass that maps to a quota resource (Kueue's
 * deviceClassMappings or its extendedResourceName) can count its devices (docs/budget.md,
 * "How DRA devices count").  False naming each unusable class with its reason, which quotes
 * the refused CEL expression and offset (or Kueue's two names for it), and False when
 * Kueue's configuration cannot be read (then no class counts); True otherwise, with its own
 * reason when no class maps to anything.  Like NodeTruthAgrees it changes no write: the pool
 * already leaves those devices out (fail closed).
 */
static int dra_classes_condition(cJSON *conds, const cJSON *prev, const tau_budget_observed *in,
                                 int64_t gen)
{
	const tau_budget_dra *d = in->dra;
	tau_buf msg = TAU_BUF_INIT(8192);
	const char *status = "True", *reason = "Usable";
	char *text;
	int rc;

	if (d == NULL)
		return tau_conditions_set(conds, prev, "DRAClassesUsable", "Unknown", "NotObserved",
		                          "the inventory's DeviceClasses have not been read yet",
		                          gen, in->now);
	if (d->kueue_error != NULL) {
		status = "False";
		reason = "KueueConfigUnreadable";
		tau_buf_printf(&msg,
		               "Kueue's configuration cannot be read, so no DeviceClass counts "
		               "until it is fixed: %s",
		               d->kueue_error);
	} else if (d->unusable > 0) {
		status = "False";
		reason = "UnusableDeviceClass";
		tau_buf_printf(&msg,
		               "%zu of %zu DeviceClasses that map to a quota resource count "
		               "nothing (their devices are left out of the pool):",
		               d->unusable, d->mapped);
		for (size_t i = 0; i < d->n_classes; i++)
			tau_buf_printf(&msg, "%s %s", i > 0 ? ";" : "",
			               d->classes[i].reason != NULL ? d->classes[i].reason : "?");
		if (d->unusable > d->n_classes)
			tau_buf_printf(&msg, "; and %zu more", d->unusable - d->n_classes);
	} else if (d->mapped == 0) {
		reason = "NoMappedClasses";
		tau_buf_printf(&msg,
		               "no DeviceClass maps to a quota resource (extendedResourceName "
		               "or Kueue's deviceClassMappings): no DRA device counts");
	} else {
		tau_buf_printf(&msg,
		               "%zu DeviceClass%s map%s to a quota resource; every one is usable",
		               d->mapped, d->mapped == 1 ? "" : "es", d->mapped == 1 ? "s" : "");
	}
	if ((rc = tau_buf_error(&msg)) < 0) {
		tau_buf_free(&msg);
		return rc;
	}
	text = tau_buf_take(&msg, NULL);
	rc = tau_conditions_set(conds, prev, "DRAClassesUsable", status, reason, text, gen,
	                        in->now);
	free(text);
	return rc;
}

void tau_budget_cluster_status(ctx *c, const team_state *s, const cJSON *managed, bool conflict,
                               const char *conflict_msg)
{
	const tau_budget_observed *in = c->in;
	const cJSON *cl = in->cluster;
	const cJSON *old = tau_json_find(cl, "status");
	cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	cJSON *conds = cJSON_CreateArray(), *cap = cJSON_CreateArray();
	cJSON *prev = tau_budget_conditions_of(cl);
	int64_t gen = tau_budget_generation(cl);
	bool no_team = c->capacity == NULL && c->effective == NULL && !c->retiring;
	const char *phase = no_team ? (in->established ? "Ready" : "Pending") : s->phase;
	const char *selector_problem = in->pool_problem != NULL         ? in->pool_problem
	                               : c->selector_problem[0] != '\0' ? c->selector_problem
	                                                                : NULL;
	builder *b = c->b;
	int rc = 0;

	if (st == NULL || conds == NULL || cap == NULL) {
		cJSON_Delete(st);
		cJSON_Delete(conds);
		cJSON_Delete(cap);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(st, "phase");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "observedGeneration");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "discoveredCapacity");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "managedResources");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "systemNamespace");
	if (in->system_namespace != NULL)
		cJSON_AddStringToObject(st, "systemNamespace", in->system_namespace);
	cJSON_AddStringToObject(st, "phase", phase);
	cJSON_AddNumberToObject(st, "observedGeneration", (double)gen);
	cJSON_AddItemToObject(st, "discoveredCapacity", cap);
	cJSON_AddItemToObject(st, "managedResources", cJSON_Duplicate(managed, true));
	cJSON_AddItemToObject(st, "conditions", conds);
	if (in->ever_established)
		rc = discovered_capacity(cap, in->pool);
	if (rc == 0)
		rc = tau_conditions_set(
		        conds, prev, "InventoryEstablished", in->established ? "True" : "False",
		        in->established ? "Established" : "WaitingForNodes",
		        in->established
		                ? "the sync gate is open: every GPU node's agent reported, or "
		                  "the initial sync timeout passed and nodes without one "
		                  "count from their Node objects (tau inventory pool lists "
		                  "them as missing)"
		                : "the inventory's sync gate is not open",
		        gen, in->now);
	if (rc == 0)
		rc = tau_conditions_set(conds, prev, "NodeSelectorValid",
		                        selector_problem == NULL ? "True" : "False",
		                        selector_problem == NULL ? "Valid" : "Invalid",
		                        selector_problem != NULL ? selector_problem : "", gen,
		                        in->now);
	if (rc == 0 && no_team)
		rc = tau_conditions_set(
		        conds, prev, "BudgetReady", "False", TAU_BUDGET_REASON_NO_TEAM,
		        "spec.queues.capacityTeamRef is not set: explicit quotas and "
		        "external queues apply",
		        gen, in->now);
	else if (rc == 0)
		rc = tau_conditions_set(conds, prev, "BudgetReady", s->status, s->reason,
		                        s->message, gen, in->now);
	if (rc == 0)
		rc = tau_conditions_set(conds, prev, "ConflictDetected",
		                        conflict ? "True" : "False",
		                        conflict ? "ConflictDetected" : "NoConflict",
		                        conflict ? conflict_msg : "", gen, in->now);
	if (rc == 0)
		rc = node_truth_condition(conds, prev, in, gen);
	if (rc == 0)
		rc = dra_classes_condition(conds, prev, in, gen);
	if (rc < 0) {
		cJSON_Delete(st);
		b->rc = b->rc < 0 ? b->rc : rc;
		return;
	}
	if (!no_team)
		tau_budget_state_events(b, cl, "BudgetReady", s);
	tau_budget_conflict_events(b, cl, conflict, conflict_msg);
	if (status_differs(cl, st, CLUSTER_FIELDS))
		tau_budget_add_status(b, cl, st);
	else
		cJSON_Delete(st);
}

void tau_budget_ws_quota_ready(builder *b, const tau_budget_observed *in, const cJSON *ws,
                               const char *status, const char *reason, const char *msg)
{
	const cJSON *old = tau_json_find(ws, "status");
	const cJSON *prev = tau_json_find(ws, "status.conditions");
	cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	cJSON *conds = cJSON_IsArray(prev) ? cJSON_Duplicate(prev, true) : cJSON_CreateArray();
	int rc = 0;

	if (st == NULL || conds == NULL) {
		cJSON_Delete(st);
		cJSON_Delete(conds);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	if (status[0] == '\0')
		cJSON_DeleteItemFromArray(conds, condition_index(conds, "QuotaReady"));
	else
		rc = tau_conditions_set(conds, prev, "QuotaReady", status, reason, msg,
		                        tau_budget_generation(ws), in->now);
	if (rc < 0 || tau_conditions_equal(conds, prev)) {
		if (rc < 0)
			b->rc = b->rc < 0 ? b->rc : rc;
		cJSON_Delete(st);
		cJSON_Delete(conds);
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
	cJSON_AddItemToObject(st, "conditions", conds);
	tau_budget_add_status(b, ws, st);
}

void tau_budget_workspace_unlinked(builder *b, const cJSON *ws)
{
	const cJSON *prev = tau_json_find(ws, "status.conditions");
	int at = condition_index(prev, "QuotaReady");
	cJSON *st;

	if (at < 0)
		return;
	st = cJSON_Duplicate(tau_json_find(ws, "status"), true);
	if (st == NULL) {
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(st, "conditions"), at);
	tau_budget_add_status(b, ws, st);
}

void tau_budget_workspace_held(builder *b, const tau_budget_observed *in, const cJSON *ws,
                               const char *why)
{
	char msg[MSG_MAX];

	tau_str_printf(
	        msg, sizeof(msg),
	        "its ClusterQueue is held (stopPolicy Hold: nothing new is admitted, admitted "
	        "work runs to completion) instead of deleted: %s",
	        why);
	tau_budget_ws_quota_ready(b, in, ws, "False", TAU_BUDGET_REASON_QUEUE_HELD, msg);
}
