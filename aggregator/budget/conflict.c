/*
 * conflict.c - P4 conflict detection for the automatic team budget.
 *
 * The one idea: overlap is decided by what objects do, not by what they are
 * called.  A ResourceFlavor conflicts when its nodeLabels select a counted
 * pool node, whatever its name; a queue conflicts when it holds reservations
 * or quota on a flavor of the pool.  Ownership (managed-by plus the owner
 * UID) separates our objects from everybody else's.  Nothing here decides
 * what to write: the caller zeroes the budget while the list is not empty.
 */
#include "conflict.h"

#include "budget/desired.h"
#include "budget/names.h"
#include "helpers.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"
#include "tau/array.h"
#include "tau/mem.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reason_codes[] = {
        [TAU_BUDGET_CONFLICT_FLAVOR_SELECTS_POOL] = "ForeignFlavorSelectsPool",
        [TAU_BUDGET_CONFLICT_EXTERNAL_RESERVATION] = "ExternalReservation",
        [TAU_BUDGET_CONFLICT_EXTERNAL_QUOTA] = "ExternalQuota",
        [TAU_BUDGET_CONFLICT_FOREIGN_MEMBER] = "ForeignTeamCohortMember",
        [TAU_BUDGET_CONFLICT_LEGACY_DISCOVERY] = "LegacyGPUDiscovery",
        [TAU_BUDGET_CONFLICT_EXPLICIT_QUOTA] = "ExplicitQuota",
        [TAU_BUDGET_CONFLICT_TEAM_NOT_FOUND] = "CapacityTeamNotFound",
};

const char *tau_budget_conflict_reason_code(tau_budget_conflict_reason reason)
{
	return tau_str_enum_name(reason_codes, TAU_N_ELEMENTS(reason_codes), (int)reason,
	                         "Unknown");
}

void tau_budget_conflicts_free(tau_budget_conflicts *list)
{
	if (list == NULL)
		return;
	for (size_t i = 0; i < list->n; i++)
		tau_free_many(list->items[i].name, list->items[i].message);
	tau_free_many(list->items, list);
}

static int add(tau_budget_conflicts *list, tau_budget_conflict_reason reason, const char *kind,
               const char *name, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int add(tau_budget_conflicts *list, tau_budget_conflict_reason reason, const char *kind,
               const char *name, const char *fmt, ...)
{
	tau_budget_conflict c = {reason, tau_budget_conflict_reason_code(reason), kind, NULL, NULL};
	va_list ap;
	int n;

	if (tau_array_grow((void **)&list->items, &list->cap, list->n + 1, sizeof(*list->items)) <
	    0)
		return -TAU_ENOMEM;
	va_start(ap, fmt);
	n = vasprintf(&c.message, fmt, ap);
	va_end(ap);
	c.name = strdup(name);
	if (n < 0 || c.name == NULL) {
		if (n >= 0)
			free(c.message);
		free(c.name);
		return tau_budget_nomem();
	}
	list->items[list->n++] = c;
	return 0;
}

static bool in_list(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* A list member that may be absent or null; -TAU_ETYPE when present but not a list. */
static int opt_list(const cJSON **out, const cJSON *obj, const char *path, const char *kind,
                    const char *name)
{
	const cJSON *v = tau_json_find(obj, path);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return tau_error_set(TAU_ETYPE, "%s %s: %s is not a list", kind, name, path);
	*out = v;
	return 0;
}

static const char *node_name(const tau_budget_node *node)
{
	if (node->name != NULL)
		return node->name;
	return node->facts != NULL && node->facts->name != NULL ? node->facts->name : "";
}

/* Does a node carry every one of the RF's nodeLabels? */
static bool node_selected(const tau_budget_node *node, const cJSON *rf_labels)
{
	const cJSON *l;

	cJSON_ArrayForEach(l, rf_labels)
	{
		const char *have =
		        node->labels != NULL  ? tau_json_member_str(node->labels, l->string)
		        : node->facts != NULL ? tau_node_facts_label(node->facts, l->string)
		                              : NULL;

		if (have == NULL || strcmp(have, l->valuestring) != 0)
			return false;
	}
	return true;
}

/* (a): foreign flavors that select pool nodes; their names are appended to *pool_flavors. */
static int check_flavors(tau_budget_conflicts *list, const tau_budget_conflict_input *in,
                         const char ***pool_flavors, size_t *n_pool)
{
	for (size_t i = 0; i < in->n_flavors; i++) {
		const cJSON *rf = in->flavors[i], *labels, *l;
		const char *name = tau_json_str(rf, "metadata.name"), *first = NULL, **grown;
		char why[256];
		size_t matched = 0;
		int rc;

		if (name == NULL)
			return tau_error_set(TAU_ETYPE, "a ResourceFlavor has no metadata.name");
		if (tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, in->cluster_uid, why,
		                            sizeof(why)) == TAU_BUDGET_OWNED)
			continue;
		labels = tau_json_find(rf, "spec.nodeLabels");
		if (labels != NULL && cJSON_IsNull(labels))
			labels = NULL;
		if (labels != NULL && !cJSON_IsObject(labels))
			return tau_error_set(
			        TAU_ETYPE, "ResourceFlavor %s: spec.nodeLabels is not a map", name);
		cJSON_ArrayForEach(l, labels)
		{
			if (!cJSON_IsString(l))
				return tau_error_set(
				        TAU_ETYPE,
				        "ResourceFlavor %s: spec.nodeLabels[%s] is not a string",
				        name, l->string);
		}
		for (size_t n = 0; n < in->n_nodes; n++) {
			if (!node_selected(&in->nodes[n], labels))
				continue;
			matched++;
			if (first == NULL || strcmp(node_name(&in->nodes[n]), first) < 0)
				first = node_name(&in->nodes[n]);
		}
		if (matched == 0)
			continue;
		if (labels == NULL || labels->child == NULL)
			rc = add(
			        list, TAU_BUDGET_CONFLICT_FLAVOR_SELECTS_POOL, "ResourceFlavor",
			        name,
			        "ResourceFlavor %s (%s) has no nodeLabels, so Kueue may place what "
			        "it admits on any node, the %zu GPU pool node%s (e.g. %s) "
			        "included: "
			        "the pool's cpu, memory and GPUs are the team budget, and quota on "
			        "this flavor, even for cpu only, admits work onto them outside it; "
			        "give %s nodeLabels that only non-pool nodes carry (a label your "
			        "CPU nodes have and the GPU nodes lack), or delete it if no "
			        "ClusterQueue uses it",
			        name, why, matched, matched == 1 ? "" : "s", first, name);
		else
			rc = add(list, TAU_BUDGET_CONFLICT_FLAVOR_SELECTS_POOL, "ResourceFlavor",
			         name,
			         "ResourceFlavor %s is not this TauCluster's (%s) and its "
			         "nodeLabels %s %zu "
			         "pool node%s, e.g. %s: a second budget for the same nodes; remove "
			         "it or "
			         "narrow its nodeLabels through its owner",
			         name, why, labels == NULL ? "(none) select all" : "select",
			         matched, matched == 1 ? "" : "s", first);
		if (rc < 0)
			return rc;
		grown = realloc(*pool_flavors, (*n_pool + 1) * sizeof(**pool_flavors));
		if (grown == NULL)
			return tau_budget_nomem();
		grown[(*n_pool)++] = name;
		*pool_flavors = grown;
	}
	return 0;
}

/*
 * The first pool flavor and resource in `flavors` (a list of {name, resources[]}) whose
 * `field` is non-zero; *flavor NULL when none.
 */
static int first_nonzero(const char **flavor, const char **resource, const cJSON **value,
                         const cJSON *flavors, const char *field, const char *const *pool,
                         size_t n_pool, const char *kind, const char *name)
{
	const cJSON *f, *r;

	*flavor = NULL;
	cJSON_ArrayForEach(f, flavors)
	{
		const char *fname = tau_json_member_str(f, "name");
		const cJSON *resources = cJSON_GetObjectItemCaseSensitive(f, "resources");

		if (fname == NULL)
			return tau_error_set(TAU_ETYPE, "%s %s: a flavor has no name", kind, name);
		if (!in_list(pool, n_pool, fname) || resources == NULL || cJSON_IsNull(resources))
			continue;
		if (!cJSON_IsArray(resources))
			return tau_error_set(TAU_ETYPE, "%s %s: flavor %s: resources is not a list",
			                     kind, name, fname);
		cJSON_ArrayForEach(r, resources)
		{
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, field);
			tau_quantity q;

			if (v == NULL || cJSON_IsNull(v))
				continue;
			if (tau_budget_quantity_of(&q, v) < 0)
				return tau_error_wrap("%s %s: flavor %s: %s", kind, name, fname,
				                      field);
			if (!tau_quantity_is_zero(&q)) {
				*flavor = fname;
				*resource = tau_json_member_str(r, "name");
				*value = v;
				return 0;
			}
		}
	}
	return 0;
}

/* (b) quota: non-zero nominalQuota on a pool flavor in spec.resourceGroups. */
static int check_quota(tau_budget_conflicts *list, const cJSON *obj, const char *kind,
                       const char *name, const char *const *pool, size_t n_pool)
{
	const cJSON *groups, *g;
	const char *team, *ws;
	int rc;

	if ((rc = opt_list(&groups, obj, "spec.resourceGroups", kind, name)) < 0)
		return rc;
	cJSON_ArrayForEach(g, groups)
	{
		const char *flavor, *resource = NULL;
		const cJSON *v = NULL, *flavors = cJSON_GetObjectItemCaseSensitive(g, "flavors");
		char *text;

		if (flavors != NULL && !cJSON_IsArray(flavors))
			return tau_error_set(TAU_ETYPE,
			                     "%s %s: resourceGroups[].flavors is not a list", kind,
			                     name);
		if ((rc = first_nonzero(&flavor, &resource, &v, flavors, "nominalQuota", pool,
		                        n_pool, kind, name)) < 0)
			return rc;
		if (flavor == NULL)
			continue;
		text = cJSON_PrintUnformatted(v);
		team = tau_json_label(obj, TAU_BUDGET_LABEL_TEAM);
		ws = tau_json_label(obj, TAU_BUDGET_LABEL_WORKSPACE);
		if (!tau_budget_is_managed(obj) || team == NULL)
			rc = add(list, TAU_BUDGET_CONFLICT_EXTERNAL_QUOTA, kind, name,
			         "%s %s is not TauGrid's and has nominalQuota %s of %s on pool "
			         "flavor %s: an overlapping budget; remove it through its owner",
			         kind, name, text != NULL ? text : "?",
			         resource != NULL ? resource : "?", flavor);
		else if (ws == NULL)
			rc = add(list, TAU_BUDGET_CONFLICT_EXTERNAL_QUOTA, kind, name,
			         "%s %s is the budget of explicit-quota team %s and has "
			         "nominalQuota "
			         "%s of %s on pool flavor %s, which the capacity team's Cohort "
			         "already "
			         "holds: the same nodes would be budgeted twice; remove flavor %s "
			         "from "
			         "TauTeam %s spec.quota",
			         kind, name, team, text != NULL ? text : "?",
			         resource != NULL ? resource : "?", flavor, flavor, team);
		else
			rc = add(list, TAU_BUDGET_CONFLICT_EXTERNAL_QUOTA, kind, name,
			         "%s %s is the queue of workspace %s of explicit-quota team %s and "
			         "has "
			         "nominalQuota %s of %s on pool flavor %s, which the capacity "
			         "team's "
			         "Cohort already holds: the same nodes would be budgeted twice; "
			         "remove "
			         "flavor %s from TauWorkspace %s and TauTeam %s spec.quota",
			         kind, name, ws, team, text != NULL ? text : "?",
			         resource != NULL ? resource : "?", flavor, flavor, ws, team);
		free(text);
		return rc;
	}
	return 0;
}

/* (b) reservations: non-zero status.flavorsReservation total on a pool flavor. */
static int check_reservations(tau_budget_conflicts *list, const cJSON *cq, const char *name,
                              const char *const *pool, size_t n_pool)
{
	const cJSON *res, *v = NULL;
	const char *flavor, *resource = NULL;
	char *text;
	int rc;

	if ((rc = opt_list(&res, cq, "status.flavorsReservation", "ClusterQueue", name)) < 0 ||
	    (rc = first_nonzero(&flavor, &resource, &v, res, "total", pool, n_pool, "ClusterQueue",
	                        name)) < 0)
		return rc;
	if (flavor == NULL)
		return 0;
	text = cJSON_PrintUnformatted(v);
	rc = add(list, TAU_BUDGET_CONFLICT_EXTERNAL_RESERVATION, "ClusterQueue", name,
	         "ClusterQueue %s is not TauGrid's and holds reservations on pool flavor %s "
	         "(%s %s): external work already counts against the same nodes; drain it or "
	         "move it off the pool flavors",
	         name, flavor, resource != NULL ? resource : "?", text != NULL ? text : "?");
	free(text);
	return rc;
}

static bool present(const cJSON *v)
{
	return v != NULL && !cJSON_IsNull(v);
}

/*
 * Is this ClusterQueue one of the team's workspace queues, owned by that workspace?  A queue
 * that carries the full ownership metadata of a workspace queue of this team (managed-by, team,
 * workspace label and workspace-UID annotation) while the team has no workspace of that name is
 * ours too: the queue of a workspace just deleted (or moved to another team), which the
 * controller removes in the same pass (decide.c, orphan queues), or one already being deleted
 * and waiting for Kueue's finalizer.  Taking it for a foreign member would zero the whole
 * budget (P5) each time a workspace goes.
 */
static bool own_cluster_queue(const cJSON *cq, const char *name,
                              const tau_budget_conflict_input *in)
{
	char cqname[TAU_BUDGET_NAME_BUF];
	const char *team, *wsname, *wsuid;

	for (size_t w = 0; w < in->n_workspaces; w++) {
		const tau_budget_workspace *ws = &in->workspaces[w];

		if (ws->name == NULL ||
		    tau_budget_cluster_queue_name(cqname, sizeof(cqname), ws->name) < 0 ||
		    strcmp(cqname, name) != 0)
			continue;
		if (tau_budget_ownership_of(cq, TAU_BUDGET_CLUSTER_QUEUE, ws->uid, NULL, 0) ==
		    TAU_BUDGET_OWNED)
			return true;
		break; /* re-created workspace: ours when it carries the full metadata (adopted) */
	}
	team = tau_json_label(cq, TAU_BUDGET_LABEL_TEAM);
	wsname = tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE);
	wsuid = tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_WORKSPACE_UID);
	return tau_budget_is_managed(cq) && team != NULL && in->team != NULL &&
	       strcmp(team, in->team) == 0 && wsname != NULL && wsuid != NULL && wsuid[0] != '\0' &&
	       tau_budget_cluster_queue_name(cqname, sizeof(cqname), wsname) == 0 &&
	       strcmp(cqname, name) == 0;
}

/*
 * A foreign member of the team Cohort: `obj` (not `whose`) names `cohort` in spec.<field>, so
 * `who` would borrow the team budget.
 */
static int check_member(tau_budget_conflicts *list, const cJSON *obj, const char *kind,
                        const char *name, const char *whose, const char *field, const char *cohort,
                        const char *who)
{
	const char *member = tau_json_member_str(tau_json_find(obj, "spec"), field);

	if (member == NULL || strcmp(member, cohort) != 0)
		return 0;
	return add(list, TAU_BUDGET_CONFLICT_FOREIGN_MEMBER, kind, name,
	           "%s %s is not %s but its %s is %s: %s would borrow the team budget; remove it "
	           "or change its %s through its owner",
	           kind, name, whose, field, cohort, who, field);
}

static int check_queues(tau_budget_conflicts *list, const tau_budget_conflict_input *in,
                        const char *cohort, const char *const *pool, size_t n_pool)
{
	int rc;

	for (size_t i = 0; i < in->n_cluster_queues; i++) {
		const cJSON *cq = in->cluster_queues[i];
		const char *name = tau_json_str(cq, "metadata.name"), *legacy;
		char whose[TAU_BUDGET_NAME_BUF + 48];

		if (name == NULL)
			return tau_error_set(TAU_ETYPE, "a ClusterQueue has no metadata.name");
		legacy = tau_json_member_str(tau_json_find(cq, "metadata.labels"),
		                             TAU_BUDGET_LABEL_DISCOVER_GPU_FLAVORS);
		if (legacy != NULL && strcmp(legacy, "true") == 0 &&
		    (rc = add(
		             list, TAU_BUDGET_CONFLICT_LEGACY_DISCOVERY, "ClusterQueue", name,
		             "ClusterQueue %s is labelled %s=true: legacy GPU discovery cannot run "
		             "alongside the automatic team budget; remove the label or the queue",
		             name, TAU_BUDGET_LABEL_DISCOVER_GPU_FLAVORS)) < 0)
			return rc;
		if (own_cluster_queue(cq, name, in))
			continue;
		if ((rc = check_reservations(list, cq, name, pool, n_pool)) < 0 ||
		    (rc = check_quota(list, cq, "ClusterQueue", name, pool, n_pool)) < 0)
			return rc;
		snprintf(whose, sizeof(whose), "a TauGrid workspace queue of team %s", in->team);
		if ((rc = check_member(list, cq, "ClusterQueue", name, whose, "cohortName", cohort,
		                       "it")) < 0)
			return rc;
	}
	for (size_t i = 0; i < in->n_cohorts; i++) {
		const cJSON *co = in->cohorts[i];
		const char *name = tau_json_str(co, "metadata.name");

		if (name == NULL)
			return tau_error_set(TAU_ETYPE, "a Cohort has no metadata.name");
		/* The team's own Cohort: ours, or ours to adopt (our labels naming this team, a
		 * re-created one); another owner's under that name is decide.c's ownership
		 * conflict, never a second budget here. */
		if (strcmp(name, cohort) == 0 &&
		    (tau_budget_ownership_of(co, TAU_BUDGET_COHORT, in->team_uid, NULL, 0) ==
		             TAU_BUDGET_OWNED ||
		     (tau_json_member_str(tau_json_find(co, "metadata.labels"),
		                          TAU_BUDGET_LABEL_TEAM) != NULL &&
		      strcmp(tau_json_member_str(tau_json_find(co, "metadata.labels"),
		                                 TAU_BUDGET_LABEL_TEAM),
		             in->team) == 0 &&
		      tau_budget_ownership_of(co, TAU_BUDGET_COHORT, in->team_uid, NULL, 0) ==
		              TAU_BUDGET_OTHER_OWNER)))
			continue;
		if ((rc = check_quota(list, co, "Cohort", name, pool, n_pool)) < 0)
			return rc;
		if ((rc = check_member(list, co, "Cohort", name, "TauGrid's", "parentName", cohort,
		                       "its queues")) < 0)
			return rc;
	}
	return 0;
}

static int check_team(tau_budget_conflicts *list, const tau_budget_conflict_input *in)
{
	int rc;

	if (!in->team_exists)
		return add(
		        list, TAU_BUDGET_CONFLICT_TEAM_NOT_FOUND, "TauTeam", in->team,
		        "TauCluster capacityTeamRef names TauTeam %s, which does not exist; create "
		        "it or change capacityTeamRef",
		        in->team);
	if (present(in->team_quota) &&
	    (rc = add(list, TAU_BUDGET_CONFLICT_EXPLICIT_QUOTA, "TauTeam", in->team,
	              "TauTeam %s is the capacity team but sets spec.quota: the automatic budget "
	              "is the pool; remove spec.quota",
	              in->team)) < 0)
		return rc;
	for (size_t w = 0; w < in->n_workspaces; w++) {
		const tau_budget_workspace *ws = &in->workspaces[w];

		if (present(ws->quota) &&
		    (rc = add(list, TAU_BUDGET_CONFLICT_EXPLICIT_QUOTA, "TauWorkspace",
		              ws->name != NULL ? ws->name : "",
		              "TauWorkspace %s of capacity team %s sets spec.quota: workspaces of "
		              "the "
		              "capacity team share the pool; remove spec.quota",
		              ws->name != NULL ? ws->name : "", in->team)) < 0)
			return rc;
	}
	return 0;
}

static int conflict_order(const void *a, const void *b)
{
	const tau_budget_conflict *x = a, *y = b;
	int c;

	if (x->reason != y->reason)
		return x->reason < y->reason ? -1 : 1;
	if ((c = strcmp(x->kind, y->kind)) != 0)
		return c;
	if ((c = strcmp(x->name, y->name)) != 0)
		return c;
	return strcmp(x->message, y->message);
}

int tau_budget_conflicts_find(tau_budget_conflicts **out, const tau_budget_conflict_input *in)
{
	tau_budget_conflicts *list = NULL;
	const char **pool = NULL;
	size_t n_pool = 0;
	char cohort[TAU_BUDGET_NAME_BUF];
	int rc;

	if (out == NULL || in == NULL || in->team == NULL ||
	    (in->nodes == NULL && in->n_nodes > 0) ||
	    (in->own_flavors == NULL && in->n_own_flavors > 0) ||
	    (in->flavors == NULL && in->n_flavors > 0) ||
	    (in->cluster_queues == NULL && in->n_cluster_queues > 0) ||
	    (in->cohorts == NULL && in->n_cohorts > 0) ||
	    (in->workspaces == NULL && in->n_workspaces > 0))
		return tau_error_set(TAU_EINVAL, "conflict check: missing input");
	if ((rc = tau_budget_cohort_name(cohort, sizeof(cohort), in->team)) < 0)
		return rc;
	list = calloc(1, sizeof(*list));
	if (list == NULL ||
	    (in->n_own_flavors > 0 && (pool = malloc(in->n_own_flavors * sizeof(*pool))) == NULL)) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory listing conflicts");
		goto out;
	}
	for (size_t i = 0; i < in->n_own_flavors; i++)
		pool[n_pool++] = in->own_flavors[i];
	if ((rc = check_flavors(list, in, &pool, &n_pool)) < 0 ||
	    (rc = check_queues(list, in, cohort, pool, n_pool)) < 0 ||
	    (rc = check_team(list, in)) < 0)
		goto out;
	if (list->n > 1)
		qsort(list->items, list->n, sizeof(*list->items), conflict_order);
	*out = list;
	list = NULL;
	rc = 0;
out:
	free(pool);
	tau_budget_conflicts_free(list);
	return rc;
}

void tau_budget_conflicts_summary(char *buf, size_t len, const tau_budget_conflicts *list)
{
	size_t used;

	if (buf == NULL || len == 0)
		return;
	buf[0] = '\0';
	if (list == NULL || list->n == 0)
		return;
	if (list->n == 1) {
		snprintf(buf, len, "%s", list->items[0].message);
		return;
	}
	snprintf(buf, len, "%zu conflicts: ", list->n);
	for (size_t i = 0; i < list->n; i++) {
		used = strlen(buf);
		if (used + 1 >= len)
			break;
		snprintf(buf + used, len - used, "%s%s", i > 0 ? "; " : "", list->items[i].message);
	}
}
