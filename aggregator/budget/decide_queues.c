/*
 * decide_queues.c - workspace ClusterQueues no workspace wants any more: deleted once their
 * workspace is gone and they hold no work, held (stopPolicy Hold) until then, so a
 * misconfiguration never deletes a queue with running work (issue 24, finding 4).
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

bool tau_budget_queue_has_work(const cJSON *cq)
{
	int64_t admitted = 0, reserving = 0;
	const cJSON *f, *r;

	if ((tau_json_get_int(&admitted, cq, "status.admittedWorkloads") == 0 && admitted != 0) ||
	    (tau_json_get_int(&reserving, cq, "status.reservingWorkloads") == 0 && reserving != 0))
		return true;
	cJSON_ArrayForEach(f, tau_json_find(cq, "status.flavorsReservation"))
	{
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
		{
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "total");
			tau_quantity q;

			if (t == NULL || cJSON_IsNull(t))
				continue;
			if (tau_budget_quantity_of(&q, t) < 0 || !tau_quantity_is_zero(&q)) {
				tau_error_clear();
				return true;
			}
		}
	}
	return false;
}

/*
 * Does a workspace of the team get no ClusterQueue now because of a misconfiguration its owner
 * fixes?  Then `buf` says which and how; false when it is not one of the team's or nothing is
 * wrong with it.
 */
static bool misconfigured(char *buf, size_t len, const ctx *c, const cJSON *ws)
{
	const char *name = tau_json_str(ws, "metadata.name");
	const char *ns = tau_json_str(ws, "status.target.resolvedNamespace");
	const cJSON *queue_ready =
	        tau_conditions_find(tau_json_find(ws, "status.conditions"), "QueueReady");

	if (ws == NULL || c->effective == NULL ||
	    !tau_str_eq_both_set(tau_budget_team_of(ws), c->effective))
		return false;
	if (tau_json_find(ws, "spec.quota") != NULL) {
		tau_str_printf(
		        buf, len,
		        "TauWorkspace %s of capacity team %s sets spec.quota (workspaces of the "
		        "capacity team share the pool): remove spec.quota",
		        name, c->effective);
	} else if (!c->in->multiple_workspaces &&
	           tau_str_eq_both_set(tau_json_str(queue_ready, "reason"),
	                               "BlockedByActiveWorkspace")) {
		/* v0 is one active workspace in the cluster (a blocked one loses its resolved
		 * namespace too): its QueueReady names the active one. */
		const char *which = tau_json_str(queue_ready, "message");

		tau_str_printf(
		        buf, len,
		        "TauWorkspace %s is blocked by the one-active-workspace rule (%s): delete "
		        "the active workspace or enable the MultipleWorkspaces feature gate",
		        name,
		        which != NULL && which[0] != '\0' ? which : "another workspace is active");
	} else if (ns == NULL || ns[0] == '\0' ||
	           tau_budget_workspace_namespace(ws, c->in->multiple_workspaces) == NULL) {
		tau_str_printf(
		        buf, len,
		        "TauWorkspace %s has no resolved namespace: fix what its Ready condition "
		        "names (namespaceMap, namespace allowlist or a namespace taken by another "
		        "workspace)",
		        name);
	} else {
		return false;
	}
	return true;
}

void tau_budget_note_held(ctx *c, const cJSON *ws, const char *why)
{
	for (size_t i = 0; i < c->in->api.n_workspaces && c->ws_held != NULL; i++)
		if (c->in->api.workspaces[i] == ws && c->ws_held[i] == NULL &&
		    (c->ws_held[i] = strdup(why)) == NULL)
			c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
}

void tau_budget_orphan_queues(ctx *c, const char *const *wanted, size_t n_wanted)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_cluster_queues; i++) {
		const cJSON *cq = in->api.cluster_queues[i];
		const char *name = tau_json_str(cq, "metadata.name");
		const char *w = tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE);
		const char *ann = tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_WORKSPACE_UID);
		const cJSON *ws;
		char why[MSG_MAX];
		bool keep = false, mistake;

		if (!tau_budget_is_managed(cq) ||
		    tau_json_label(cq, TAU_BUDGET_LABEL_TEAM) == NULL || w == NULL || ann == NULL ||
		    name == NULL || tau_json_find(cq, "metadata.deletionTimestamp") != NULL)
			continue;
		for (size_t j = 0; j < n_wanted && !keep; j++)
			keep = tau_str_eq_both_set(wanted[j], name);
		for (size_t j = 0; j < c->n_explicit_wanted && !keep; j++)
			keep = tau_str_eq_both_set(c->explicit_wanted[j], name);
		ws = tau_budget_find_named(in->api.workspaces, in->api.n_workspaces, w);
		if (keep ||
		    (ws != NULL && !tau_str_eq_both_set(tau_json_str(ws, "metadata.uid"), ann)))
			continue;
		mistake = misconfigured(why, sizeof(why), c, ws);
		if (!mistake && !tau_budget_queue_has_work(cq)) {
			if (c->writes_allowed)
				tau_budget_add_write(
				        c->b, TAU_BUDGET_CLUSTER_QUEUE, name, true, false, NULL,
				        tau_json_str(cq, "metadata.uid"),
				        tau_budget_fmt(
				                ws == NULL
				                        ? "workspace %s no longer exists and the "
				                          "queue holds no work"
				                        : "workspace %s no longer takes part in "
				                          "the "
				                          "team budget and the queue holds no work",
				                w));
			continue;
		}
		if (!mistake)
			tau_str_printf(
			        why, sizeof(why),
			        ws == NULL
			                ? "TauWorkspace %s no longer exists: its queue is deleted "
			                  "once its admitted and reserving work has drained"
			                : "TauWorkspace %s no longer takes part in the team "
			                  "budget: "
			                  "its queue is deleted once its admitted and reserving "
			                  "work has drained",
			        w);
		if (!c->writes_allowed)
			continue; /* Observe, or not established yet: nothing is held */
		if (ws != NULL)
			tau_budget_note_held(c, ws, why);
		if (!(tau_str_eq_both_set(tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_HELD),
		                          why) &&
		      tau_str_eq_both_set(tau_json_str(cq, "spec.stopPolicy"), "Hold"))) {
			cJSON *body = NULL;

			if (tau_budget_hold_body(&body, cq, why) < 0) {
				c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
				return;
			}
			tau_budget_add_write(
			        c->b, TAU_BUDGET_CLUSTER_QUEUE, name, false, false, body, NULL,
			        tau_budget_fmt("held (stopPolicy Hold) instead of deleted: %s",
			                       why));
		}
	}
}
