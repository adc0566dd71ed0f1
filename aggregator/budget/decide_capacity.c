/*
 * decide_capacity.c - the capacity team's budget in one pass (P1-P6): its state, then its
 * ResourceFlavors, Cohort and workspace ClusterQueues.
 *
 * The one idea: the state of the capacity team is decided first, in a fixed order of causes
 * (never established, owner conflicts, P4 conflicts, pool not valid, limits), so one root
 * cause shows one reason; every write then follows from that state and the plan.  Observe mode
 * reports how the live objects differ instead of writing.
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

/* The nominalQuota of flavor `flavor`, resource `resource` in Cohort `co`, or NULL. */
static const cJSON *cohort_cell(const cJSON *co, const char *flavor, const char *resource)
{
	const cJSON *g, *f, *r;

	cJSON_ArrayForEach(g, tau_json_find(co, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			if (!tau_str_eq_both_set(tau_json_str(f, "name"), flavor))
				continue;
			cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
			{
				if (tau_str_eq_both_set(tau_json_str(r, "name"), resource))
					return cJSON_GetObjectItemCaseSensitive(r, "nominalQuota");
			}
		}
	}
	return NULL;
}

bool tau_budget_cohort_cells_drift(char *buf, size_t len, const cJSON *desired, const cJSON *live,
                                   bool to_zero)
{
	const cJSON *g, *f, *r;
	size_t used = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(g, tau_json_find(desired, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
			{
				const char *flavor = tau_json_str(f, "name"),
				           *res = tau_json_str(r, "name");
				const cJSON *have = cohort_cell(live, flavor, res);
				tau_quantity want, got = tau_quantity_zero();
				char w[64], l[64];

				if (flavor == NULL || res == NULL ||
				    tau_budget_quantity_of(&want, cJSON_GetObjectItemCaseSensitive(
				                                          r, "nominalQuota")) < 0 ||
				    (have != NULL && tau_budget_quantity_of(&got, have) < 0))
					return false;
				if (to_zero)
					want = tau_quantity_zero();
				if (have != NULL && tau_quantity_cmp(&want, &got) == 0)
					continue;
				tau_quantity_format(w, sizeof(w), &want);
				tau_quantity_format(l, sizeof(l), &got);
				tau_str_printf(buf + used, len - used, "%s%s/%s holds %s, want %s",
				               used > 0 ? "; " : "", flavor, res,
				               have != NULL ? l : "nothing", w);
				used += strlen(buf + used);
			}
		}
	}
	return true;
}

/* The capacity team's state, before any write is planned. */
static void decide_state(team_state *s, ctx *c, const cJSON *team, int plan_rc,
                         const char *plan_error, const char *owner_problem, const char *cohort,
                         const char *conflicts, const char *read_problem)
{
	const tau_budget_observed *in = c->in;

	if (!in->ever_established) {
		tau_budget_set_state(
		        s, TAU_BUDGET_REASON_WAITING, "False", "Pending",
		        "the inventory was not established yet (%zu of the labelled nodes "
		        "counted so far); nothing is written before it is",
		        in->nodes_counted);
	} else if (owner_problem != NULL && owner_problem[0] != '\0') {
		tau_budget_set_state(
		        s, TAU_BUDGET_REASON_OWNERSHIP, "False", "Degraded",
		        "%s; it is never changed or adopted: remove it through its owner",
		        owner_problem);
	} else if (conflicts[0] != '\0') {
		tau_budget_set_state(
		        s, TAU_BUDGET_REASON_CONFLICT, "False", "Degraded",
		        "root quota is 0 until these conflicts are removed through their owners: "
		        "%s",
		        conflicts);
		s->zeroed = true;
	} else if (read_problem != NULL) {
		tau_budget_set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		                     "root quota is 0: %s", read_problem);
		s->zeroed = true;
	} else if (in->pool_problem != NULL) {
		tau_budget_set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		                     "root quota is 0: the pool cannot be validated: %s",
		                     in->pool_problem);
		s->zeroed = true;
	} else if (!in->established) {
		tau_budget_set_state(
		        s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		        "root quota is 0: the inventory is no longer established (%zu of %zu "
		        "labelled nodes counted)",
		        in->nodes_counted, in->nodes_observed);
		s->zeroed = true;
	} else if (plan_rc == -TAU_ERANGE) {
		tau_budget_set_state(s, TAU_BUDGET_REASON_LIMITS, "False", "Degraded",
		                     "%s; no partial budget is written and the root quota is 0",
		                     plan_error);
		s->zeroed = true;
	} else if (plan_rc < 0) {
		tau_budget_set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		                     "root quota is 0: the budget cannot be planned: %s",
		                     plan_error);
		s->zeroed = true;
	} else {
		tau_budget_set_state(s, TAU_BUDGET_REASON_APPLIED, "True", "Ready",
		                     "Cohort %s holds the pool of %zu counted nodes", cohort,
		                     in->nodes_counted);
	}
	s->write_cohort = c->writes_allowed && team != NULL &&
	                  !tau_str_eq_both_set(s->reason, TAU_BUDGET_REASON_OWNERSHIP);
	s->write_queues =
	        s->write_cohort && !tau_str_eq_both_set(s->reason, TAU_BUDGET_REASON_LIMITS);
}

/* Plan the Cohort; on a planning error, a zeroed plan of what was written before. */
static int plan_budget(tau_budget_plan **plan, int *plan_rc, char *err, size_t err_len,
                       const tau_budget_observed *in, const cJSON *cohort, const char *cluster_uid)
{
	tau_budget_pool *empty = NULL;
	int rc;

	*plan = NULL;
	*plan_rc = tau_budget_plan_build(plan, in->pool, cohort, in->api.flavors, in->api.n_flavors,
	                                 cluster_uid);
	if (*plan_rc == 0)
		return 0;
	if (*plan_rc == -TAU_ENOMEM)
		return *plan_rc;
	tau_str_printf(err, err_len, "%s", tau_error_last()->msg);
	rc = tau_budget_pool_new(&empty);
	if (rc < 0)
		return rc;
	rc = tau_budget_plan_build(plan, empty, cohort, in->api.flavors, in->api.n_flavors,
	                           cluster_uid);
	tau_budget_pool_free(empty);
	if (rc == -TAU_ENOMEM)
		return rc;
	if (rc < 0)
		*plan = NULL; /* nothing safe to write */
	return 0;
}

/*
 * P4: the conflicts as one message ("" when none).  An object whose fields
 * cannot be read fills `unreadable` instead (the pool cannot be validated).
 */
static int find_conflicts(char *buf, size_t len, char *unreadable, size_t unreadable_len, ctx *c,
                          const cJSON *team, const tau_budget_plan *plan)
{
	const tau_budget_observed *in = c->in;
	tau_budget_conflict_input ci = {0};
	tau_budget_conflicts *list = NULL;
	tau_budget_workspace *ws = NULL;
	const char **own = NULL;
	char(*names)[TAU_BUDGET_NAME_BUF] = NULL;
	size_t n_own = 0, n_ws = 0;
	int rc;

	buf[0] = '\0';
	ws = calloc(in->api.n_workspaces + 1, sizeof(*ws));
	own = calloc((plan != NULL ? plan->n_flavors : 0) + in->pool->n_classes + 1, sizeof(*own));
	names = calloc(in->pool->n_classes + 1, sizeof(*names));
	if (ws == NULL || own == NULL || names == NULL) {
		rc = tau_budget_nomem();
		goto out;
	}
	for (size_t f = 0; plan != NULL && f < plan->n_flavors; f++)
		own[n_own++] = plan->flavors[f].name;
	for (size_t i = 0; plan == NULL && i < in->pool->n_classes; i++)
		if (tau_budget_flavor_name(names[i], sizeof(names[i]), in->pool->classes[i].name) ==
		    0)
			own[n_own++] = names[i];
	for (size_t i = 0; i < in->api.n_workspaces; i++) {
		const cJSON *w = in->api.workspaces[i];

		if (!tau_str_eq_both_set(tau_budget_team_of(w), c->effective))
			continue;
		ws[n_ws].name = tau_json_str(w, "metadata.name");
		ws[n_ws].uid = tau_json_str(w, "metadata.uid");
		ws[n_ws].quota = tau_json_find(w, "spec.quota");
		n_ws++;
	}
	ci.nodes = in->nodes;
	ci.n_nodes = in->n_nodes;
	ci.own_flavors = own;
	ci.n_own_flavors = n_own;
	ci.cluster_uid = c->cluster_uid;
	ci.flavors = in->api.flavors;
	ci.n_flavors = in->api.n_flavors;
	ci.cluster_queues = in->api.cluster_queues;
	ci.n_cluster_queues = in->api.n_cluster_queues;
	ci.cohorts = in->api.cohorts;
	ci.n_cohorts = in->api.n_cohorts;
	ci.team = c->effective;
	ci.team_exists = team != NULL;
	ci.team_uid = tau_json_str(team, "metadata.uid");
	ci.team_quota = tau_json_find(team, "spec.quota");
	ci.workspaces = ws;
	ci.n_workspaces = n_ws;
	rc = tau_budget_conflicts_find(&list, &ci);
	if (rc == -TAU_ETYPE || rc == -TAU_EINVAL) {
		tau_str_printf(unreadable, unreadable_len, "%s", tau_error_last()->msg);
		rc = 0;
	} else if (rc == 0) {
		tau_budget_conflicts_summary(buf, len, list);
	}
out:
	tau_budget_conflicts_free(list);
	free(ws);
	free(own);
	free(names);
	return rc;
}

/*
 * What Observe mode reports instead of writing: how the live Cohort differs from the one the
 * pool makes (every quota cell that differs, with the live and the desired value; else the
 * first owned field that differs), or that it matches.
 */
static void observe_drift(char *buf, size_t len, const cJSON *desired, const cJSON *live,
                          const char *cohort)
{
	char what[MSG_MAX] = "";
	bool equal = false;

	if (desired == NULL)
		tau_str_printf(buf, len, "no budget can be computed for Cohort %s", cohort);
	else if (live == NULL)
		tau_str_printf(buf, len, "Cohort %s does not exist, the pool would create it",
		               cohort);
	else if (tau_budget_owned_equal(&equal, what, sizeof(what), desired, live) < 0)
		tau_str_printf(buf, len, "the live Cohort %s cannot be compared with the pool",
		               cohort);
	else if (equal)
		tau_str_printf(buf, len, "the live Cohort %s matches the pool", cohort);
	else if (tau_budget_cohort_cells_drift(what, sizeof(what), desired, live, false) &&
	         what[0] != '\0')
		tau_str_printf(buf, len, "the live Cohort %s does not follow the pool: %s", cohort,
		               what);
	else if (tau_budget_owned_equal(&equal, what, sizeof(what), desired, live) == 0)
		tau_str_printf(buf, len, "the live Cohort %s does not follow the pool: %s", cohort,
		               what);
	else
		tau_str_printf(buf, len, "the live Cohort %s cannot be compared with the pool",
		               cohort);
}

int tau_budget_decide_capacity_team(ctx *c, cJSON *managed)
{
	const tau_budget_observed *in = c->in;
	builder *b = c->b;
	const cJSON *team =
	        c->effective != NULL
	                ? tau_budget_find_named(in->api.teams, in->api.n_teams, c->effective)
	                : NULL;
	const char *team_uid = tau_json_str(team, "metadata.uid");

	if (team_uid == NULL || team_uid[0] == '\0') {
		team = NULL; /* no uid (not from an API server): it can own nothing, as if absent */
		team_uid = NULL;
	}
	char cohort_name[TAU_BUDGET_NAME_BUF] = "", problem[MSG_MAX] = "", err[MSG_MAX] = "";
	char conflict_msg[MSG_MAX], read_problem[MSG_MAX] = "", rf_problem[MSG_MAX] = "";
	char scratch[MSG_MAX] = "", drift[MSG_MAX] = "", team_ws[MSG_MAX] = "";
	char flavor_drift[MSG_MAX] = "";
	const cJSON *cohort = NULL, *owned_cohort = NULL, *orphan_cohort = NULL;
	const cJSON **rfs = NULL;
	const char **wanted = NULL, *applied_cq = NULL, *cohort_uid = NULL;
	size_t n_wanted = 0, n_rfs = 0, n_foreign = 0, n_team_ws = 0;
	adopter by_team = {in, c->cluster_uid, team},
	        by_cluster = {in, c->cluster_uid, in->cluster};
	bool deleting = team != NULL && tau_json_find(team, "metadata.deletionTimestamp") != NULL;
	bool cleanup = false;
	tau_budget_plan *plan = NULL;
	team_state s = {0};
	int plan_rc = 0, rc;

	if (c->effective != NULL) {
		rc = tau_budget_cohort_name(cohort_name, sizeof(cohort_name), c->effective);
		if (rc < 0)
			return rc;
		cohort = tau_budget_find_named(in->api.cohorts, in->api.n_cohorts, cohort_name);
		if (cohort != NULL) {
			char why[512];

			if (tau_budget_ownership_of(cohort, TAU_BUDGET_COHORT, team_uid, why,
			                            sizeof(why)) == TAU_BUDGET_OWNED)
				owned_cohort = cohort;
			else if (tau_budget_orphaned(in, c->cluster_uid, TAU_BUDGET_COHORT, cohort))
				orphan_cohort =
				        cohort; /* adopted by the team; zeroed while it is gone */
			else if (team != NULL)
				tau_str_printf(problem, sizeof(problem),
				               "Cohort %s exists but is not ours: %s", cohort_name,
				               why);
		}
		tau_budget_team_workspaces(team_ws, sizeof(team_ws), &n_team_ws, in, c->effective);
	}
	/* A capacity team being deleted with no workspace left is cleaned up, not budgeted. */
	cleanup = deleting && n_team_ws == 0;
	rc = plan_budget(&plan, &plan_rc, err, sizeof(err), in,
	                 owned_cohort != NULL ? owned_cohort : orphan_cohort, c->cluster_uid);
	if (rc < 0)
		return rc;

	/*
	 * Flavors: an object of another owner under our name is never written and blocks only
	 * its flavor, left out of the Cohort and the queues (the nodes it selects are not proven
	 * to be the pool's, and while a ClusterQueue of ours names it Kueue's resource-in-use
	 * finalizer keeps its owner from deleting it); ours whose recorded TauCluster is gone (a
	 * reinstall) is adopted.
	 */
	rfs = calloc(in->api.n_flavors + 1, sizeof(*rfs));
	if (rfs == NULL) {
		tau_budget_plan_free(plan);
		return tau_budget_nomem();
	}
	for (size_t i = 0; i < in->api.n_flavors; i++)
		if (!tau_budget_orphaned(in, c->cluster_uid, TAU_BUDGET_RESOURCE_FLAVOR,
		                         in->api.flavors[i]))
			rfs[n_rfs++] = in->api.flavors[i];
	for (size_t f = 0; plan != NULL && f < plan->n_flavors;) {
		const cJSON *rf = tau_budget_find_named(in->api.flavors, in->api.n_flavors,
		                                        plan->flavors[f].name);
		char why[512];

		if (rf == NULL ||
		    tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, c->cluster_uid, why,
		                            sizeof(why)) == TAU_BUDGET_OWNED ||
		    tau_budget_orphaned(in, c->cluster_uid, TAU_BUDGET_RESOURCE_FLAVOR, rf)) {
			f++;
			continue;
		}
		if (n_foreign++ == 0)
			tau_str_printf(rf_problem, sizeof(rf_problem),
			               "ResourceFlavor %s exists but is not ours: %s",
			               plan->flavors[f].name, why);
		tau_budget_plan_drop_flavor(plan, f);
	}
	if (n_foreign > 1)
		tau_str_printf(rf_problem + strlen(rf_problem),
		               sizeof(rf_problem) - strlen(rf_problem), " (and %zu more flavors)",
		               n_foreign - 1);
	{
		tau_budget_observed filtered = *in;

		filtered.api.flavors = rfs;
		filtered.api.n_flavors = n_rfs;
		c->in = &filtered; /* adopted flavors are ours: no P4 conflict */
		rc = find_conflicts(conflict_msg, sizeof(conflict_msg), read_problem,
		                    sizeof(read_problem), c, team, plan);
		c->in = in;
	}
	free(rfs);
	if (rc < 0) {
		tau_budget_plan_free(plan);
		return rc;
	}
	decide_state(&s, c, team, plan_rc, err, problem, cohort_name, conflict_msg,
	             read_problem[0] != '\0'          ? read_problem
	             : in->read_problem != NULL       ? in->read_problem
	             : c->selector_problem[0] != '\0' ? c->selector_problem
	                                              : NULL);
	if (rf_problem[0] != '\0' && tau_str_eq_both_set(s.reason, TAU_BUDGET_REASON_APPLIED)) {
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_OWNERSHIP, "False", "Degraded",
		        "%s; it is never changed or adopted: its flavor is left out of Cohort %s "
		        "and its ClusterQueues (the rest of the pool is applied), so no queue of "
		        "ours keeps its owner from deleting it",
		        rf_problem, cohort_name);
	} else if (rf_problem[0] != '\0' &&
	           !tau_str_eq_both_set(s.reason, TAU_BUDGET_REASON_OWNERSHIP)) {
		char keep[MSG_MAX];

		tau_str_printf(keep, sizeof(keep), "%s", s.message);
		tau_str_printf(s.message, sizeof(s.message), "%s; also %s", keep, rf_problem);
	}
	/* Our own Cohort is written even while its team is gone (zeroed), never another's. */
	s.write_cohort = c->writes_allowed && (team != NULL || orphan_cohort != NULL) &&
	                 problem[0] == '\0' && !cleanup;
	s.write_queues = s.write_cohort && team != NULL &&
	                 !tau_str_eq_both_set(s.reason, TAU_BUDGET_REASON_LIMITS);

	/* ResourceFlavors, then the Cohort. */
	for (size_t f = 0; plan != NULL && f < plan->n_flavors; f++) {
		cJSON *rf = NULL;

		if (plan->flavors[f].gpu_class == NULL || c->cluster_uid == NULL ||
		    c->selector_problem[0] != '\0')
			continue; /* a flavor we cannot confine to the pool is left as it is */
		if ((rc = tau_budget_desired_flavor(&rf, plan->flavors[f].gpu_class, c->cluster_uid,
		                                    c->selector)) < 0) {
			b->rc = b->rc < 0 ? b->rc : rc;
			break;
		}
		if ((rc = tau_budget_record_policy(
		             rf, tau_json_str(in->cluster, "spec.deletionPolicy"))) < 0) {
			cJSON_Delete(rf);
			b->rc = b->rc < 0 ? b->rc : rc;
			break;
		}
		tau_budget_managed_add(managed, "ResourceFlavor", plan->flavors[f].name);
		if (!c->reconcile) {
			/* Observe: a flavor not rewritten (a new node selector) says so too. */
			const cJSON *live = tau_budget_find_named(
			        in->api.flavors, in->api.n_flavors, plan->flavors[f].name);
			char what[MSG_MAX] = "";
			bool same = false;

			if (live != NULL &&
			    tau_budget_owned_equal(&same, what, sizeof(what), rf, live) == 0 &&
			    !same)
				tau_budget_append(flavor_drift, sizeof(flavor_drift),
				                  "ResourceFlavor %s does not follow the pool: %s",
				                  plan->flavors[f].name, what);
		}
		/* Another owner's Cohort under our name blocks the Cohort, not our flavors. */
		tau_budget_ensure(b, TAU_BUDGET_RESOURCE_FLAVOR, rf,
		                  tau_budget_find_named(in->api.flavors, in->api.n_flavors,
		                                        plan->flavors[f].name),
		                  c->cluster_uid,
		                  c->writes_allowed && !cleanup &&
		                          (team != NULL || orphan_cohort != NULL),
		                  scratch, sizeof(scratch), &by_cluster);
	}
	if (plan != NULL && c->effective != NULL && (team != NULL || orphan_cohort != NULL)) {
		const char *uid = team != NULL
		                          ? team_uid
		                          : tau_json_annotation(orphan_cohort,
		                                                TAU_BUDGET_ANNOTATION_TEAM_UID);
		cJSON *co = NULL;

		if ((rc = tau_budget_desired_cohort(&co, plan, c->effective, uid,
		                                    s.zeroed || team == NULL)) < 0 ||
		    (rc = tau_budget_record_policy(
		             co, tau_json_str(in->cluster, "spec.deletionPolicy"))) < 0) {
			cJSON_Delete(co);
			b->rc = b->rc < 0 ? b->rc : rc;
		} else {
			if (!c->reconcile)
				observe_drift(drift, sizeof(drift), co, cohort, cohort_name);
			tau_budget_managed_add(managed, "Cohort", cohort_name);
			tau_budget_ensure(b, TAU_BUDGET_COHORT, co, cohort, uid, s.write_cohort,
			                  scratch, sizeof(scratch), team != NULL ? &by_team : NULL);
		}
	} else if (!c->reconcile) {
		observe_drift(drift, sizeof(drift), NULL, cohort, cohort_name);
	}

	/* Workspace ClusterQueues. */
	wanted = calloc(in->api.n_workspaces + 1, sizeof(*wanted));
	if (wanted == NULL) {
		tau_budget_plan_free(plan);
		return tau_budget_nomem();
	}
	for (size_t i = 0; c->effective != NULL && i < in->api.n_workspaces; i++) {
		const cJSON *ws = in->api.workspaces[i];
		const char *wname = tau_json_str(ws, "metadata.name"), *ns;
		char cq_name[TAU_BUDGET_NAME_BUF], ws_problem[MSG_MAX] = "";
		cJSON *cq = NULL;

		if (!tau_str_eq_both_set(tau_budget_team_of(ws), c->effective) || wname == NULL ||
		    tau_json_str(ws, "metadata.uid") == NULL ||
		    tau_json_str(ws, "metadata.uid")[0] == '\0' ||
		    (ns = tau_budget_workspace_namespace(ws, in->multiple_workspaces)) == NULL ||
		    tau_json_find(ws, "spec.quota") != NULL ||
		    tau_budget_cluster_queue_name(cq_name, sizeof(cq_name), wname) < 0)
			continue;
		/* The queue is wanted even when it cannot be written now: never an orphan. */
		wanted[n_wanted] =
		        tau_json_str(tau_budget_find_named(in->api.cluster_queues,
		                                           in->api.n_cluster_queues, cq_name),
		                     "metadata.name");
		if (wanted[n_wanted] != NULL)
			n_wanted++;
		if (plan == NULL || team == NULL)
			continue;
		if ((rc = tau_budget_desired_cluster_queue(&cq, plan, c->effective, wname,
		                                           tau_json_str(ws, "metadata.uid"), ns)) <
		    0) {
			b->rc = b->rc < 0 ? b->rc : rc;
			break;
		}
		tau_budget_managed_add(managed, "ClusterQueue", cq_name);
		if (!tau_budget_ensure(b, TAU_BUDGET_CLUSTER_QUEUE, cq,
		                       tau_budget_find_named(in->api.cluster_queues,
		                                             in->api.n_cluster_queues, cq_name),
		                       tau_json_str(ws, "metadata.uid"), s.write_queues, ws_problem,
		                       sizeof(ws_problem), &by_team) &&
		    tau_str_eq_both_set(s.reason, TAU_BUDGET_REASON_APPLIED)) {
			tau_budget_set_state(
			        &s, TAU_BUDGET_REASON_OWNERSHIP, "False", "Degraded",
			        "%s; it is never changed or adopted: remove it through its owner",
			        ws_problem);
		}
	}
	tau_budget_orphan_queues(c, wanted, n_wanted);
	free(wanted);

	/* A capacity team being deleted (its finalizer, decide.c's capacity_finalizers, holds it).
	 */
	if (deleting && !cleanup) {
		char keep[MSG_MAX];

		tau_str_printf(keep, sizeof(keep), "%s", s.message);
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Degraded",
		        "team %s is being deleted but its workspaces (%s) still use its budget: "
		        "delete them or move them to another team; until then finalizer %s "
		        "holds the team and the budget keeps following the pool (%s)",
		        c->effective, team_ws, TAU_BUDGET_TEAM_FINALIZER, keep);
		c->cleanup_pending = true;
	} else if (cleanup && tau_budget_cohort_applied(in, cohort_name, &applied_cq)) {
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Pending",
		        "team %s is being deleted: Cohort %s goes once no ClusterQueue is applied "
		        "to it (ClusterQueue %s is, held until its work drains)",
		        c->effective, cohort_name, applied_cq);
		c->cleanup_pending = true;
	} else if (cleanup) {
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Pending",
		        "team %s is being deleted and no ClusterQueue is applied to Cohort %s: "
		        "cleaning up",
		        c->effective, cohort_name);
		if (c->writes_allowed && owned_cohort != NULL)
			tau_budget_add_write(
			        b, TAU_BUDGET_COHORT, cohort_name, true, false, NULL,
			        tau_json_str(owned_cohort, "metadata.uid"),
			        tau_budget_fmt("team %s is being deleted and no ClusterQueue is "
			                       "applied to "
			                       "its "
			                       "Cohort",
			                       c->effective));
	}

	/* Leaving the mode, then Observe, override what the team is told. */
	if (c->blocked_team != NULL) {
		char keep[MSG_MAX];

		tau_str_printf(keep, sizeof(keep), "%s", s.message);
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_LEAVE_BLOCKED, "False", "Degraded",
		        "spec.queues.capacityTeamRef %s%s, but team %s still has workspaces (%s): "
		        "drain and delete them first; the budget is kept (%s)",
		        c->capacity != NULL ? "now names " : "was removed",
		        c->capacity != NULL ? c->capacity : "", c->blocked_team, c->blocked_ws,
		        keep);
	}
	if (c->effective == NULL) {
		/* The previous capacity team's budget goes first (P7). */
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_LEAVE_BLOCKED, "False", "Pending",
		        "removing the previous capacity team's budget before team %s takes the "
		        "pool%s%s%s",
		        c->capacity != NULL ? c->capacity : "(none)",
		        c->retire_wait[0] != '\0' ? " (" : "", c->retire_wait,
		        c->retire_wait[0] != '\0' ? ")" : "");
		tau_str_printf(drift, sizeof(drift), "%s", c->retire_drift);
	} else if (c->retire_drift[0] != '\0') {
		size_t used = strlen(drift);

		tau_str_printf(drift + used, sizeof(drift) - used, "; %s", c->retire_drift);
	}
	if (!c->reconcile) {
		char would[MSG_MAX];

		if (flavor_drift[0] != '\0')
			tau_budget_append(drift, sizeof(drift), "%s", flavor_drift);

		tau_str_printf(would, sizeof(would), "%s: %s", s.reason, s.message);
		tau_budget_set_state(
		        &s, TAU_BUDGET_REASON_OBSERVE_ONLY, "Unknown", "Pending",
		        "managementMode is Observe: nothing is written; %s (would be %s)", drift,
		        would);
	}
	b->d->state = s.reason;
	b->d->summary =
	        tau_budget_fmt("team %s: %s: %s", c->effective != NULL ? c->effective : "(none)",
	                       s.reason, s.message);
	cohort_uid = owned_cohort != NULL ? tau_json_str(owned_cohort, "metadata.uid") : NULL;
	if (team != NULL) {
		tau_budget_team_status(b, in, team, &s, cohort_name, cohort_uid);
		tau_budget_state_events(b, team, "QuotaReady", &s);
		tau_budget_conflict_events(b, team, conflict_msg[0] != '\0', conflict_msg);
	}
	tau_budget_cluster_status(c, &s, managed, conflict_msg[0] != '\0', conflict_msg);
	tau_budget_plan_free(plan);
	return 0;
}
