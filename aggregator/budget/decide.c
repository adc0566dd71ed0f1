/*
 * decide.c - one reconcile of the team budget (docs/budget.md): tau_budget_decide, the order
 * of its pass, and the teams around the capacity team.
 *
 * The one idea: from the observed world alone, say which Kueue objects to write or remove,
 * what each TauTeam and the TauCluster should report, and which Events tell the story.  The
 * pass runs in a fixed order: the previous capacity teams leaving (P7), the explicit-quota
 * teams (decide_explicit.c), the capacity team (decide_capacity.c) or, with no TauCluster,
 * its deletionPolicy (decide_gone.c); then the other teams' states, the capacity team's
 * finalizer and the workspaces no team decided.  Events, for either kind of team, come from
 * comparing the new state with the observed condition (decide_status.c), so they follow
 * changes, never passes.
 */
#include "decide.h"

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

const char *tau_budget_team_of(const cJSON *ws)
{
	return tau_json_str(ws, "spec.teamRef.name");
}

void tau_budget_team_workspaces(char *buf, size_t len, size_t *n, const tau_budget_observed *in,
                                const char *team)
{
	size_t named = 0, used = 0;

	*n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < in->api.n_workspaces; i++) {
		const char *name = tau_json_str(in->api.workspaces[i], "metadata.name");

		if (!tau_str_eq_both_set(tau_budget_team_of(in->api.workspaces[i]), team) ||
		    name == NULL)
			continue;
		(*n)++;
		if (named < NAMED_MAX && used < len) {
			int k = snprintf(buf + used, len - used, "%s%s", named > 0 ? ", " : "",
			                 name);

			if (k > 0)
				used += (size_t)k;
			named++;
		}
	}
	if (*n > named && used < len)
		snprintf(buf + used, len - used, " and %zu more", *n - named);
}

/* P7: owned automatic Cohorts of teams that are no longer the capacity team. */
static void previous_teams(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_cohorts; i++) {
		const cJSON *co = in->api.cohorts[i];
		const char *t = tau_json_label(co, TAU_BUDGET_LABEL_TEAM),
		           *name = tau_json_str(co, "metadata.name");
		const cJSON *team;
		const char *uid;
		const char *applied = NULL;
		size_t n = 0;
		char ws[MSG_MAX];
		int rc;

		if (!tau_budget_is_managed(co) || t == NULL || name == NULL ||
		    tau_str_eq_both_set(t, c->capacity))
			continue;
		team = tau_budget_find_named(in->api.teams, in->api.n_teams, t);
		/* A deleted team still owns what carries its annotation. */
		uid = team != NULL ? tau_json_str(team, "metadata.uid")
		                   : tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID);
		if (tau_budget_ownership_of(co, TAU_BUDGET_COHORT, uid, NULL, 0) !=
		    TAU_BUDGET_OWNED)
			continue;
		if ((team != NULL && tau_json_find(team, "spec.quota") != NULL) ||
		    tau_str_eq_both_set(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
		                        TAU_BUDGET_QUOTA_MODE_EXPLICIT))
			continue; /* an explicit-quota team's Cohort */
		tau_budget_team_workspaces(ws, sizeof(ws), &n, in, t);
		if (n > 0) {
			if (c->blocked_team == NULL) {
				c->blocked_team = t;
				tau_str_printf(c->blocked_ws, sizeof(c->blocked_ws), "%s", ws);
			}
			continue;
		}
		c->retiring = true;
		if (!c->reconcile) {
			size_t used = strlen(c->retire_drift);
			char cells[MSG_MAX];

			if (!tau_budget_cohort_cells_drift(cells, sizeof(cells), co, co, true))
				tau_str_printf(cells, sizeof(cells), "its quota cannot be read");
			tau_str_printf(
			        c->retire_drift + used, sizeof(c->retire_drift) - used,
			        "%sCohort %s of previous capacity team %s is not removed%s%s",
			        used > 0 ? "; " : "", name, t, cells[0] != '\0' ? ": " : "", cells);
		}
		if (tau_budget_cohort_applied(in, name, &applied)) {
			/*
			 * A held queue (its workspace gone, its work still running) is still
			 * applied to it: the Cohort stays, at 0, until it has drained and gone, and
			 * the next capacity team waits (effective NULL) so no two budgets cover
			 * that work.
			 */
			tau_budget_append(
			        c->retire_wait, sizeof(c->retire_wait),
			        "Cohort %s goes once ClusterQueue %s, still applied to it, has "
			        "drained",
			        name, applied);
			if (c->writes_allowed &&
			    (rc = tau_budget_zero_cohort(
			             c->b, in, co, t, uid,
			             tau_json_annotation(
			                     co, TAU_BUDGET_ANNOTATION_DELETION_POLICY))) < 0)
				c->b->rc = c->b->rc < 0 ? c->b->rc : rc;
			continue;
		}
		if (c->writes_allowed)
			tau_budget_add_write(
			        c->b, TAU_BUDGET_COHORT, name, true, false, NULL,
			        tau_json_str(co, "metadata.uid"),
			        tau_budget_fmt("team %s is no longer the capacity team and has "
			                       "no workspaces: "
			                       "its automatic budget goes before another team "
			                       "takes the pool",
			                       t));
	}
	c->effective = c->blocked_team != NULL ? c->blocked_team : c->retiring ? NULL : c->capacity;
}

bool tau_budget_cohort_applied(const tau_budget_observed *in, const char *cohort,
                               const char **first)
{
	for (size_t i = 0; i < in->api.n_cluster_queues; i++)
		if (tau_str_eq_both_set(tau_json_str(in->api.cluster_queues[i], "spec.cohortName"),
		                        cohort)) {
			*first = tau_json_str(in->api.cluster_queues[i], "metadata.name");
			return true;
		}
	return false;
}

/* Teams other than the one whose budget is kept. */
static void other_teams(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_teams; i++) {
		const cJSON *t = in->api.teams[i];
		const char *name = tau_json_str(t, "metadata.name");
		team_state s = {0};

		if (name == NULL || tau_str_eq_both_set(name, c->effective) ||
		    !tau_str_eq_both_set(name, c->capacity))
			continue; /* the kept budget, or an explicit team
			             (tau_budget_decide_explicit_teams) */
		tau_budget_set_state(&s, TAU_BUDGET_REASON_LEAVE_BLOCKED, "False", "Pending",
		                     c->blocked_team != NULL ? "waiting for team %s to leave: it "
		                                               "still has workspaces (%s)"
		                                             : "waiting for the previous capacity "
		                                               "team's budget%s%s to be "
		                                               "removed",
		                     c->blocked_team != NULL ? c->blocked_team : "",
		                     c->blocked_team != NULL ? c->blocked_ws : "");
		tau_budget_team_status(c->b, in, t, &s, NULL, NULL);
	}
}

/*
 * The capacity team's cleanup finalizer: held while it has workspaces (deleting it then waits,
 * DeletionBlocked, and its budget keeps following the pool) and, once it is being deleted,
 * until its queues and Cohort are gone; a team without workspaces carries none, so deleting it
 * never waits for the aggregator.  The team the pool waits for (capacityTeamRef moved to it
 * while the previous one leaves) follows the same rule on its workspaces.
 */
static void capacity_finalizers(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->api.n_teams && c->writes_allowed; i++) {
		const cJSON *t = in->api.teams[i];
		const char *name = tau_json_str(t, "metadata.name");
		bool has = tau_budget_has_team_finalizer(t), want, deleting;
		char ws[MSG_MAX];
		size_t n = 0;

		if (!tau_str_eq_both_set(name, c->effective) &&
		    !tau_str_eq_both_set(name, c->capacity))
			continue;
		deleting = tau_json_find(t, "metadata.deletionTimestamp") != NULL;
		tau_budget_team_workspaces(ws, sizeof(ws), &n, in, name);
		want = deleting ? tau_str_eq_both_set(name, c->effective) && c->cleanup_pending
		                : n > 0;
		if (want && !has && !deleting)
			tau_budget_team_finalizer(
			        c->b, t, true,
			        tau_budget_fmt(
			                "finalizer %s added: capacity team %s has workspaces (%s), "
			                "so deleting it waits for them",
			                TAU_BUDGET_TEAM_FINALIZER, name, ws));
		else if (!want && has)
			tau_budget_team_finalizer(
			        c->b, t, false,
			        tau_budget_fmt(
			                deleting ? "finalizer %s removed: capacity team %s is "
			                           "cleaned up"
			                         : "finalizer %s removed: capacity team %s has no "
			                           "workspaces, so its deletion does not wait",
			                TAU_BUDGET_TEAM_FINALIZER, name));
	}
}

/* Did a process whose inventory was established write the TauCluster's status last? */
static bool established_before(const cJSON *cluster)
{
	const cJSON *c =
	        tau_conditions_find(tau_budget_conditions_of(cluster), "InventoryEstablished");

	return tau_str_eq_both_set(tau_json_str(c, "status"), "True");
}

/*
 * A restarted (or newly elected) aggregator whose own inventory is not established yet
 * writes nothing (P5), and that includes status: the budget in the Cohort is still the one
 * an established inventory wrote, so the TauTeam and TauCluster keep saying so (Ready, the
 * discovered capacity) instead of flapping to Pending and an empty capacity on every
 * restart.  Statuses and Events wait until this process's inventory is established.
 */
static void keep_established_status(tau_budget_decision *d)
{
	char *sum;

	for (size_t i = 0; i < d->n_statuses; i++)
		cJSON_Delete(d->statuses[i].status);
	for (size_t i = 0; i < d->n_events; i++)
		free(d->events[i].message);
	d->n_statuses = 0;
	d->n_events = 0;
	sum = tau_budget_fmt(
	        "%s; the statuses written by an established inventory are kept until this "
	        "process's is established",
	        d->summary != NULL ? d->summary : "");
	free(d->summary);
	d->summary = sum;
}

int tau_budget_decide(tau_budget_decision **out, const tau_budget_observed *in)
{
	builder b = {0};
	ctx c = {0};
	cJSON *managed = NULL;
	team_state none = {0};
	int rc;

	if (out == NULL || in == NULL || in->pool == NULL || in->now == NULL)
		return tau_error_set(TAU_EINVAL, "budget decision: missing input");
	b.d = calloc(1, sizeof(*b.d));
	managed = cJSON_CreateArray();
	if (b.d == NULL || managed == NULL) {
		free(b.d);
		cJSON_Delete(managed);
		return tau_budget_nomem();
	}
	b.d->state = TAU_BUDGET_REASON_NO_TEAM;
	c.in = in;
	c.b = &b;
	c.ws_held = calloc(in->api.n_workspaces + 1, sizeof(*c.ws_held));
	if (c.ws_held == NULL) {
		b.rc = tau_budget_nomem();
		goto done;
	}
	if (in->cluster == NULL ||
	    tau_json_find(in->cluster, "metadata.deletionTimestamp") != NULL) {
		if (!in->ever_established) { /* P5: nothing is written before the inventory is */
			b.d->summary = tau_budget_fmt(
			        "TauCluster cluster %s: waiting for the inventory",
			        in->cluster == NULL ? "does not exist" : "is being deleted");
			goto done;
		}
		rc = tau_budget_decide_cluster_gone(&c);
		if (rc < 0 && b.rc == 0)
			b.rc = rc;
		goto done;
	}
	c.reconcile =
	        tau_str_eq_both_set(tau_json_str(in->cluster, "spec.managementMode"), "Reconcile");
	c.writes_allowed = c.reconcile && in->ever_established;
	c.capacity = tau_json_str(in->cluster, "spec.queues.capacityTeamRef.name");
	if (c.capacity != NULL && c.capacity[0] == '\0')
		c.capacity = NULL;
	c.cluster_uid = tau_json_str(in->cluster, "metadata.uid");
	if (c.cluster_uid != NULL && c.cluster_uid[0] == '\0')
		c.cluster_uid = NULL; /* no owner: we own no ResourceFlavor (never an error) */
	c.selector = tau_json_find(in->cluster, "spec.nodes.selector");
	if (tau_budget_flavor_selector_check(c.selector) < 0)
		tau_str_printf(c.selector_problem, sizeof(c.selector_problem), "%s",
		               tau_error_last()->msg);
	previous_teams(&c);
	tau_budget_decide_explicit_teams(&c, managed);
	if (c.effective != NULL || c.capacity != NULL || c.retiring) {
		rc = tau_budget_decide_capacity_team(&c, managed);
		if (rc < 0 && b.rc == 0)
			b.rc = rc;
	} else {
		tau_budget_set_state(&none, TAU_BUDGET_REASON_NO_TEAM, "False", "Ready",
		                     "no capacity team");
		tau_budget_orphan_queues(&c, NULL, 0);
		tau_budget_cluster_status(&c, &none, managed, false, "");
		b.d->summary = tau_budget_fmt("no capacity team: %zu workspace queues to remove",
		                              b.d->n_writes);
	}
	other_teams(&c);
	capacity_finalizers(&c);
	tau_budget_workspaces_unlinked(&c);
	if (c.explicit_summary != NULL && b.d->summary != NULL) {
		char *sum = tau_budget_fmt("%s; %s", b.d->summary, c.explicit_summary);

		free(b.d->summary);
		b.d->summary = sum;
	}
	if (!in->ever_established && established_before(in->cluster))
		keep_established_status(b.d);
done:
	for (size_t i = 0; c.ws_held != NULL && i < in->api.n_workspaces; i++)
		free(c.ws_held[i]);
	free(c.ws_held);
	free(c.explicit_wanted);
	free(c.ws_linked);
	free(c.explicit_summary);
	cJSON_Delete(managed);
	if (b.rc < 0) {
		tau_budget_decision_free(b.d);
		return b.rc;
	}
	*out = b.d;
	return 0;
}
