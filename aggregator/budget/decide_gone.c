/*
 * decide_gone.c - the TauCluster is gone or being deleted: each automatic Cohort follows the
 * deletionPolicy recorded on it (Retain: kept at 0; DeleteManaged: its queues go as they
 * drain, then the Cohort, then our ResourceFlavors nothing names any more).  Explicit teams'
 * objects are never touched here.
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

/* Does Cohort or ClusterQueue `obj` name ResourceFlavor `flavor` in its resourceGroups? */
static bool names_flavor(const cJSON *obj, const char *flavor)
{
	const cJSON *g, *f;

	cJSON_ArrayForEach(g, tau_json_find(obj, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			if (tau_str_eq_both_set(tau_json_str(f, "name"), flavor))
				return true;
		}
	}
	return false;
}

/* The first Cohort or ClusterQueue (any owner) naming `flavor`, as "<Kind> <name>", or NULL. */
static const char *flavor_user(const tau_budget_observed *in, const char *flavor, char *buf,
                               size_t len)
{
	for (size_t i = 0; i < in->api.n_cluster_queues; i++)
		if (names_flavor(in->api.cluster_queues[i], flavor)) {
			tau_str_printf(buf, len, "ClusterQueue %s",
			               tau_json_str(in->api.cluster_queues[i], "metadata.name"));
			return buf;
		}
	for (size_t i = 0; i < in->api.n_cohorts; i++)
		if (names_flavor(in->api.cohorts[i], flavor)) {
			tau_str_printf(buf, len, "Cohort %s",
			               tau_json_str(in->api.cohorts[i], "metadata.name"));
			return buf;
		}
	return NULL;
}

/*
 * DeleteManaged, no TauCluster: each ResourceFlavor of ours that recorded that policy is deleted
 * once no Cohort or ClusterQueue (ours, an explicit team's or anyone's) names it, so our queues
 * and Cohorts have drained and gone first and Kueue's resource-in-use finalizer never holds
 * it; one still named is kept and said (`held`), never deleted into Terminating.
 */
static void delete_managed_flavors(ctx *c, cJSON *left, char *held, size_t len)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_flavors; i++) {
		const cJSON *rf = in->api.flavors[i];
		const char *name = tau_json_str(rf, "metadata.name");
		const char *uid = tau_json_annotation(rf, TAU_BUDGET_ANNOTATION_CLUSTER_UID);
		char user[TAU_BUDGET_NAME_BUF + 32];

		if (name == NULL || uid == NULL || uid[0] == '\0' ||
		    tau_json_label(rf, TAU_BUDGET_LABEL_GPU_CLASS) == NULL ||
		    tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, uid, NULL, 0) !=
		            TAU_BUDGET_OWNED ||
		    !tau_str_eq_both_set(
		            tau_json_annotation(rf, TAU_BUDGET_ANNOTATION_DELETION_POLICY),
		            TAU_BUDGET_POLICY_DELETE))
			continue;
		if (tau_json_find(rf, "metadata.deletionTimestamp") != NULL) {
			if (flavor_user(in, name, user, sizeof(user)) != NULL)
				tau_budget_append(
				        held, len,
				        "ResourceFlavor %s is terminating: Kueue's resource-in-use "
				        "finalizer holds it while %s names it",
				        name, user);
			tau_budget_managed_add(left, "ResourceFlavor", name);
			continue;
		}
		if (flavor_user(in, name, user, sizeof(user)) != NULL) {
			tau_budget_append(held, len, "ResourceFlavor %s is kept while %s names it",
			                  name, user);
			tau_budget_managed_add(left, "ResourceFlavor", name);
			continue;
		}
		tau_budget_add_write(
		        c->b, TAU_BUDGET_RESOURCE_FLAVOR, name, true, false, NULL,
		        tau_json_str(rf, "metadata.uid"),
		        tau_budget_fmt(
		                "TauCluster cluster is gone (deletionPolicy DeleteManaged) and no "
		                "Cohort or ClusterQueue names the flavor"));
	}
}

/*
 * DeleteManaged once no TauCluster exists: the queues applied to automatic Cohort `co` go, each
 * held (stopPolicy Hold) while its work drains; true when none is applied any more, so the
 * Cohort itself may go.
 */
static bool delete_managed_queues(ctx *c, const char *cohort, char *held, size_t held_len)
{
	const tau_budget_observed *in = c->in;
	bool applied = false;
	char why[MSG_MAX];

	tau_str_printf(
	        why, sizeof(why),
	        "TauCluster cluster is gone (deletionPolicy DeleteManaged): the queue is deleted "
	        "once its admitted and reserving work has drained, then Cohort %s",
	        cohort);
	for (size_t i = 0; i < in->api.n_cluster_queues; i++) {
		const cJSON *cq = in->api.cluster_queues[i];
		const char *name = tau_json_str(cq, "metadata.name");
		const char *w = tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE);
		cJSON *body = NULL;

		if (!tau_str_eq_both_set(tau_json_str(cq, "spec.cohortName"), cohort) ||
		    name == NULL)
			continue;
		applied = true;
		if (tau_json_find(cq, "metadata.deletionTimestamp") != NULL) {
			tau_budget_append(held, held_len, "ClusterQueue %s is terminating", name);
			continue; /* going: waited for */
		}
		if (w == NULL || !tau_budget_is_managed(cq) ||
		    tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_WORKSPACE_UID) == NULL) {
			tau_budget_append(
			        held, held_len,
			        "ClusterQueue %s, not TauGrid's, is applied to Cohort %s (never "
			        "touched: remove it through its owner)",
			        name, cohort);
			continue;
		}
		if (!tau_budget_queue_has_work(cq)) {
			tau_budget_add_write(
			        c->b, TAU_BUDGET_CLUSTER_QUEUE, name, true, false, NULL,
			        tau_json_str(cq, "metadata.uid"),
			        tau_budget_fmt("TauCluster cluster is gone (deletionPolicy "
			                       "DeleteManaged) and "
			                       "the queue holds no work"));
			continue;
		}
		tau_budget_note_held(
		        c, tau_budget_find_named(in->api.workspaces, in->api.n_workspaces, w), why);
		tau_budget_append(
		        held, held_len,
		        "ClusterQueue %s is held (stopPolicy Hold) until its admitted and "
		        "reserving "
		        "work drains",
		        name);
		if (tau_str_eq_both_set(tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_HELD), why) &&
		    tau_str_eq_both_set(tau_json_str(cq, "spec.stopPolicy"), "Hold"))
			continue;
		if (tau_budget_hold_body(&body, cq, why) < 0) {
			c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
			return false;
		}
		tau_budget_add_write(
		        c->b, TAU_BUDGET_CLUSTER_QUEUE, name, false, false, body, NULL,
		        tau_budget_fmt("held (stopPolicy Hold) instead of deleted: %s", why));
	}
	return !applied;
}

int tau_budget_decide_cluster_gone(ctx *c)
{
	const tau_budget_observed *in = c->in;
	const char *gone = in->cluster == NULL ? "does not exist" : "is being deleted";
	cJSON *left = cJSON_CreateArray(); /* what is still ours, for a deleting TauCluster */
	char held[MSG_MAX] = "";
	size_t n = 0;
	int rc = left == NULL ? tau_budget_nomem() : 0;

	for (size_t i = 0; rc == 0 && i < in->api.n_cohorts; i++) {
		const cJSON *co = in->api.cohorts[i];
		const char *t = tau_json_label(co, TAU_BUDGET_LABEL_TEAM),
		           *uid = tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID),
		           *name = tau_json_str(co, "metadata.name");
		const cJSON *team =
		        t != NULL ? tau_budget_find_named(in->api.teams, in->api.n_teams, t) : NULL;
		bool del = tau_str_eq_both_set(
		        tau_json_annotation(co, TAU_BUDGET_ANNOTATION_DELETION_POLICY),
		        TAU_BUDGET_POLICY_DELETE);
		team_state s = {0};

		if (t == NULL || name == NULL ||
		    tau_json_find(co, "metadata.deletionTimestamp") != NULL ||
		    tau_str_eq_both_set(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
		                        TAU_BUDGET_QUOTA_MODE_EXPLICIT) ||
		    tau_budget_ownership_of(co, TAU_BUDGET_COHORT, uid, NULL, 0) !=
		            TAU_BUDGET_OWNED)
			continue;
		n++;
		if (del && delete_managed_queues(c, name, held, sizeof(held))) {
			tau_budget_add_write(c->b, TAU_BUDGET_COHORT, name, true, false, NULL,
			                     tau_json_str(co, "metadata.uid"),
			                     tau_budget_fmt("TauCluster cluster %s (deletionPolicy "
			                                    "DeleteManaged) and no "
			                                    "ClusterQueue is applied to the Cohort",
			                                    gone));
		} else {
			rc = tau_budget_zero_cohort(c->b, in, co, t, uid,
			                            del ? TAU_BUDGET_POLICY_DELETE
			                                : TAU_BUDGET_POLICY_RETAIN);
			if (rc < 0)
				break;
			tau_budget_managed_add(left, "Cohort", name);
			if (del)
				tau_budget_append(
				        held, sizeof(held),
				        "Cohort %s is at 0 and goes once no ClusterQueue is "
				        "applied "
				        "to it",
				        name);
			else
				tau_budget_append(held, sizeof(held),
				                  "Cohort %s is kept at 0 (deletionPolicy Retain)",
				                  name);
		}
		if (team == NULL || !tau_str_eq_both_set(tau_json_str(team, "metadata.uid"), uid))
			continue;
		if (del)
			tau_budget_set_state(
			        &s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
			        "root quota is 0: TauCluster cluster %s (deletionPolicy "
			        "DeleteManaged): the team's ClusterQueues are deleted as their "
			        "work "
			        "drains, then Cohort %s",
			        gone, name);
		else
			tau_budget_set_state(
			        &s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
			        "root quota is 0: TauCluster cluster %s (deletionPolicy Retain): "
			        "Cohort %s is kept at 0 until a TauCluster names this team again",
			        gone, name);
		tau_budget_team_status(c->b, in, team, &s, name, tau_json_str(co, "metadata.uid"));
		tau_budget_state_events(c->b, team, "QuotaReady", &s);
	}
	if (rc == 0)
		delete_managed_flavors(c, left, held, sizeof(held));
	for (size_t i = 0; rc == 0 && i < in->api.n_workspaces; i++)
		if (c->ws_held[i] != NULL)
			tau_budget_workspace_held(c->b, in, in->api.workspaces[i], c->ws_held[i]);
	if (rc == 0 && in->cluster != NULL) {
		/* Held by another finalizer (foreground deletion): it still says what happens. */
		const char *policy = tau_json_str(in->cluster, "spec.deletionPolicy");
		team_state s = {0};

		c->capacity = tau_json_str(in->cluster, "spec.queues.capacityTeamRef.name");
		c->capacity = c->capacity != NULL ? c->capacity : "";
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		        "root quota is 0: TauCluster cluster is being deleted (deletionPolicy "
		        "%s): %s",
		        tau_str_eq_both_set(policy, TAU_BUDGET_POLICY_DELETE)
		                ? TAU_BUDGET_POLICY_DELETE
		                : TAU_BUDGET_POLICY_RETAIN,
		        held[0] != '\0' ? held : "nothing of TauGrid's is left to remove");
		tau_budget_cluster_status(c, &s, left, false, "");
	}
	cJSON_Delete(left);
	c->b->d->summary =
	        tau_budget_fmt("TauCluster cluster %s: %zu automatic Cohorts kept at 0 or "
	                       "removed by their deletionPolicy%s%s",
	                       gone, n, held[0] != '\0' ? ": " : "", held);
	if (c->b->d->summary == NULL && rc == 0)
		rc = tau_budget_nomem();
	return rc;
}
