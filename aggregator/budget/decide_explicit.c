/*
 * decide_explicit.c - carrying out the explicit-quota teams' decisions (explicit.c, E1-E10)
 * in the budget's pass: their writes in order, their TauTeam and workspace statuses and
 * Events, and the leftovers of explicit teams that are gone.
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

/*
 * The QuotaReady condition of a workspace linked to explicit team `team` (E5-E8 refusals), its
 * other conditions kept.  `q` is its queue in the decision, NULL when it gets none (no resolved
 * namespace yet, or the team's inputs could not be read): then it says only that the team is
 * not Ready, and has no QuotaReady while the team is, since no queue holds anything for it.
 */
static void workspace_status(builder *b, const tau_budget_observed *in, const char *team,
                             const tau_budget_explicit_team *x, const cJSON *ws,
                             const tau_budget_explicit_queue *q)
{
	char msg[MSG_MAX];

	if (q != NULL && q->refusal != NULL) {
		tau_budget_ws_quota_ready(b, in, ws, "False", q->reason, q->refusal);
	} else if (tau_str_eq_both_set(x->status, "True") && q != NULL) {
		tau_budget_ws_quota_ready(b, in, ws, "True", TAU_BUDGET_REASON_QUOTA_APPLIED,
		                          "its ClusterQueue holds the workspace's guarantee");
	} else if (tau_str_eq_both_set(x->status, "True")) {
		tau_budget_ws_quota_ready(b, in, ws, "", NULL, NULL);
	} else {
		tau_str_printf(msg, sizeof(msg), "team \"%s\" is not Ready: %s", team, x->message);
		tau_budget_ws_quota_ready(b, in, ws, "False", x->reason, msg);
	}
}

/*
 * Events of an explicit team, only when its state changes: a Warning named after the reason
 * when it becomes Degraded (or Degraded for another reason), a Normal QuotaRestored when a
 * Degraded team is Ready again.  Pending states (waiting for the inventory after a restart,
 * cleaning up a deleted team) make none.
 */
static void explicit_events(builder *b, const cJSON *team, const team_state *s)
{
	const cJSON *old = tau_conditions_find(tau_budget_conditions_of(team), "QuotaReady");
	const char *old_phase = tau_json_str(team, "status.phase");
	bool was_degraded = tau_str_eq_both_set(old_phase, "Degraded");

	if (tau_str_eq_both_set(s->phase, "Degraded") &&
	    (!was_degraded || !tau_str_eq_both_set(tau_json_str(old, "reason"), s->reason)))
		tau_budget_add_event(b, team, "Warning", s->reason, s->message);
	else if (tau_str_eq_both_set(s->status, "True") && was_degraded)
		tau_budget_add_event(b, team, "Normal", TAU_BUDGET_EVENT_QUOTA_RESTORED,
		                     s->message);
}

/* Carry out one explicit team's decision: writes in order, then its status. */
static void explicit_apply(ctx *c, const cJSON *team, tau_budget_explicit_team *x, cJSON *managed)
{
	const tau_budget_observed *in = c->in;
	builder *b = c->b;
	const char *uid = tau_json_str(team, "metadata.uid"),
	           *name = tau_json_str(team, "metadata.name");
	char problem[MSG_MAX] = "";
	team_state s = {0};
	bool w = c->writes_allowed,
	     has_cohort = x->desired_cohort != NULL || x->owned_cohort != NULL;
	adopter by_team = {in, c->cluster_uid, team};

	if (w && x->add_finalizer)
		tau_budget_team_finalizer(
		        b, team, true,
		        tau_budget_fmt(
		                "finalizer %s added: deleting team %s waits for its workspace "
		                "queues",
		                TAU_BUDGET_TEAM_FINALIZER, tau_json_str(team, "metadata.name")));
	for (size_t i = 0; i < x->n_queues; i++) {
		tau_budget_explicit_queue *q = &x->queues[i];

		if (q->desired == NULL)
			continue;
		tau_budget_managed_add(managed, "ClusterQueue", q->name);
		tau_budget_ensure(b, TAU_BUDGET_CLUSTER_QUEUE, q->desired, q->observed,
		                  tau_json_str(q->workspace, "metadata.uid"), w, problem,
		                  sizeof(problem), &by_team);
		q->desired = NULL; /* tau_budget_ensure took it */
	}
	if (x->desired_cohort != NULL) {
		tau_budget_managed_add(managed, "Cohort", x->cohort);
		tau_budget_ensure(
		        b, TAU_BUDGET_COHORT, x->desired_cohort,
		        tau_budget_find_named(in->api.cohorts, in->api.n_cohorts, x->cohort), uid,
		        w, problem, sizeof(problem), &by_team);
		x->desired_cohort = NULL;
	}
	if (w && x->delete_cohort && x->owned_cohort != NULL)
		tau_budget_add_write(
		        b, TAU_BUDGET_COHORT, x->cohort, true, false, NULL,
		        tau_json_str(x->owned_cohort, "metadata.uid"),
		        tau_budget_fmt("team %s is being deleted and no ClusterQueue is applied "
		                       "to its Cohort",
		                       tau_json_str(team, "metadata.name")));
	if (w && x->remove_finalizer)
		tau_budget_team_finalizer(
		        b, team, false,
		        tau_budget_fmt(
		                "finalizer %s removed: no ClusterQueue is applied to team %s's "
		                "Cohort",
		                TAU_BUDGET_TEAM_FINALIZER, tau_json_str(team, "metadata.name")));
	tau_budget_set_state(&s, x->reason, x->status, x->phase, "%s", x->message);
	if (!c->reconcile) {
		char would[MSG_MAX];

		tau_str_printf(would, sizeof(would), "%s: %s", s.reason, s.message);
		tau_budget_set_state(&s, TAU_BUDGET_REASON_OBSERVE_ONLY, "Unknown", "Pending",
		                     "managementMode is Observe: nothing is written (%s)", would);
	}
	for (size_t i = 0; i < in->api.n_workspaces; i++) {
		const cJSON *ws = in->api.workspaces[i];
		const tau_budget_explicit_queue *q = NULL;

		if (!tau_str_eq_both_set(tau_budget_team_of(ws), name) ||
		    tau_json_str(ws, "metadata.name") == NULL)
			continue;
		c->ws_linked[i] = true;
		for (size_t k = 0; k < x->n_queues && q == NULL; k++)
			if (x->queues[k].workspace == ws)
				q = &x->queues[k];
		workspace_status(b, in, name, x, ws, q);
	}
	tau_budget_team_status(
	        b, in, team, &s, has_cohort ? x->cohort : NULL,
	        x->owned_cohort != NULL ? tau_json_str(x->owned_cohort, "metadata.uid") : NULL);
	explicit_events(b, team, &s);
}

/*
 * An explicit Cohort whose team is gone without its finalizer (removed by hand) is ours by its
 * annotation; once no ClusterQueue is applied to it, it is deleted, as E9 would have.
 */
static void explicit_leftovers(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_cohorts && c->writes_allowed; i++) {
		const cJSON *co = in->api.cohorts[i];
		const char *t = tau_json_label(co, TAU_BUDGET_LABEL_TEAM),
		           *name = tau_json_str(co, "metadata.name");
		bool applied = false;

		if (t == NULL || name == NULL ||
		    !tau_str_eq_both_set(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
		                         TAU_BUDGET_QUOTA_MODE_EXPLICIT) ||
		    tau_budget_find_named(in->api.teams, in->api.n_teams, t) != NULL ||
		    tau_json_find(co, "metadata.deletionTimestamp") != NULL ||
		    tau_budget_ownership_of(co, TAU_BUDGET_COHORT,
		                            tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID),
		                            NULL, 0) != TAU_BUDGET_OWNED)
			continue;
		for (size_t k = 0; k < in->api.n_cluster_queues && !applied; k++)
			applied = tau_str_eq_both_set(
			        tau_json_str(in->api.cluster_queues[k], "spec.cohortName"), name);
		if (!applied)
			tau_budget_add_write(
			        c->b, TAU_BUDGET_COHORT, name, true, false, NULL,
			        tau_json_str(co, "metadata.uid"),
			        tau_budget_fmt("team %s no longer exists and no ClusterQueue is "
			                       "applied to "
			                       "its "
			                       "explicit Cohort",
			                       t));
	}
}

void tau_budget_decide_explicit_teams(ctx *c, cJSON *managed)
{
	const tau_budget_observed *in = c->in;
	tau_budget_explicit_input xi = {0};

	c->explicit_wanted = calloc(in->api.n_cluster_queues + 1, sizeof(*c->explicit_wanted));
	c->ws_linked = calloc(in->api.n_workspaces + 1, sizeof(*c->ws_linked));
	if (c->explicit_wanted == NULL || c->ws_linked == NULL) {
		c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
		return;
	}
	xi.capacity = in->ever_established ? in->pool : NULL;
	xi.pool_claimed_by = c->blocked_team != NULL ? c->blocked_team : c->capacity;
	xi.api = in->api;
	xi.cluster_uid = c->cluster_uid;
	xi.multiple_workspaces = in->multiple_workspaces;
	for (size_t i = 0; i < in->api.n_teams && c->b->rc == 0; i++) {
		const cJSON *t = in->api.teams[i];
		const char *name = tau_json_str(t, "metadata.name");
		tau_budget_explicit_team *x = NULL;
		int rc;

		if (name == NULL || tau_str_eq_both_set(name, c->effective) ||
		    tau_str_eq_both_set(name, c->capacity))
			continue;
		/* No uid (not from an API server): nothing can be owned by it; skip, never fail. */
		if (tau_json_str(t, "metadata.uid") == NULL ||
		    tau_json_str(t, "metadata.uid")[0] == '\0')
			continue;
		xi.team = t;
		if ((rc = tau_budget_explicit_decide(&x, &xi)) < 0) {
			c->b->rc = rc;
			break;
		}
		for (size_t q = 0; q < x->n_queues; q++)
			if (x->queues[q].observed != NULL &&
			    c->n_explicit_wanted < in->api.n_cluster_queues)
				c->explicit_wanted[c->n_explicit_wanted++] =
				        tau_json_str(x->queues[q].observed, "metadata.name");
		explicit_apply(c, t, x, managed);
		{
			char *sum = tau_budget_fmt(
			        "%s%s%s", c->explicit_summary != NULL ? c->explicit_summary : "",
			        c->explicit_summary != NULL ? "; " : "", x->summary);

			free(c->explicit_summary);
			c->explicit_summary = sum;
		}
		tau_budget_explicit_team_free(x);
	}
	explicit_leftovers(c);
}

void tau_budget_workspaces_unlinked(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_workspaces && c->b->rc == 0; i++)
		if (c->ws_held != NULL && c->ws_held[i] != NULL)
			tau_budget_workspace_held(c->b, in, in->api.workspaces[i], c->ws_held[i]);
		else if (c->ws_linked != NULL && !c->ws_linked[i])
			tau_budget_workspace_unlinked(c->b, in->api.workspaces[i]);
}
