/*
 * desired.c - the desired Kueue objects of the capacity budget (desired.h): a GPU class's
 * ResourceFlavor confined to the pool's nodes, the team's root Cohort (optionally zeroed,
 * P5) and a workspace's ClusterQueue, each built from the plan with our labels and owner
 * annotation.
 */
#include "desired.h"

#include "helpers.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* apiVersion, kind, metadata{name, labels{managed-by, keys...}, annotations{ann: uid}}. */
static cJSON *new_object(const char *kind, const char *name, const char *const *labels,
                         size_t n_labels, const char *ann_key, const char *ann_value)
{
	cJSON *obj = cJSON_CreateObject();
	cJSON *meta = NULL, *lab = NULL, *ann = NULL;

	if (obj == NULL ||
	    cJSON_AddStringToObject(obj, "apiVersion", TAU_BUDGET_KUEUE_API_VERSION) == NULL ||
	    cJSON_AddStringToObject(obj, "kind", kind) == NULL ||
	    (meta = cJSON_AddObjectToObject(obj, "metadata")) == NULL ||
	    cJSON_AddStringToObject(meta, "name", name) == NULL ||
	    (lab = cJSON_AddObjectToObject(meta, "labels")) == NULL ||
	    cJSON_AddStringToObject(lab, TAU_BUDGET_LABEL_MANAGED_BY, TAU_BUDGET_MANAGED_BY) ==
	            NULL ||
	    (ann = cJSON_AddObjectToObject(meta, "annotations")) == NULL ||
	    cJSON_AddStringToObject(ann, ann_key, ann_value) == NULL)
		goto fail;
	for (size_t i = 0; i + 1 < n_labels; i += 2)
		if (cJSON_AddStringToObject(lab, labels[i], labels[i + 1]) == NULL)
			goto fail;
	return obj;
fail:
	cJSON_Delete(obj);
	return NULL;
}

static int check_label_value(const char *v, const char *what)
{
	if (v == NULL || v[0] == '\0')
		return tau_error_set(TAU_EINVAL, "%s: Required value", what);
	if (tau_names_check_label_value(v) < 0)
		return tau_error_wrap("%s: Invalid value", what);
	return 0;
}

/* Whether a selector key is one the flavor sets itself (the class and the OS). */
static bool flavor_own_key(const char *key)
{
	return strcmp(key, TAU_BUDGET_LABEL_GPU_CLASS) == 0 ||
	       strcmp(key, TAU_BUDGET_LABEL_OS) == 0;
}

int tau_budget_flavor_selector_check(const cJSON *selector)
{
	const cJSON *e;
	size_t n = 2;

	if (selector == NULL || cJSON_IsNull(selector))
		return 0;
	if (!cJSON_IsObject(selector))
		return tau_error_set(TAU_EINVAL,
		                     "spec.nodes.selector: not a map of label keys to values, so "
		                     "no ResourceFlavor can confine pods to the selected nodes");
	cJSON_ArrayForEach(e, selector)
	{
		if (!cJSON_IsString(e) || tau_names_check_label_key(e->string) < 0 ||
		    (e->valuestring[0] != '\0' && tau_names_check_label_value(e->valuestring) < 0))
			return tau_error_set(
			        TAU_EINVAL,
			        "spec.nodes.selector[%.200s]: not a label key with a "
			        "label value, so no ResourceFlavor can confine pods to "
			        "the selected nodes",
			        e->string);
		if (!flavor_own_key(e->string))
			n++;
	}
	if (n > TAU_BUDGET_MAX_NODE_LABELS)
		return tau_error_set(
		        TAU_ERANGE,
		        "spec.nodes.selector has %zu labels besides %s and %s; a Kueue "
		        "ResourceFlavor holds at most %d nodeLabels, so TauGrid's flavors could "
		        "not "
		        "confine pods to the selected nodes: select the pool with at most %d "
		        "labels",
		        n - 2, TAU_BUDGET_LABEL_GPU_CLASS, TAU_BUDGET_LABEL_OS,
		        TAU_BUDGET_MAX_NODE_LABELS, TAU_BUDGET_MAX_NODE_LABELS - 2);
	return 0;
}

int tau_budget_desired_flavor(cJSON **out, const char *gpu_class, const char *cluster_uid,
                              const cJSON *selector)
{
	char name[TAU_BUDGET_NAME_BUF];
	const char *labels[] = {TAU_BUDGET_LABEL_GPU_CLASS, gpu_class};
	cJSON *obj, *spec, *nl;
	const cJSON *e;
	int rc;

	if (out == NULL || cluster_uid == NULL || cluster_uid[0] == '\0')
		return tau_error_set(TAU_EINVAL, "desired ResourceFlavor: no TauCluster UID");
	if ((rc = check_label_value(gpu_class, "GPU class")) < 0 ||
	    (rc = tau_budget_flavor_name(name, sizeof(name), gpu_class)) < 0 ||
	    (rc = tau_budget_flavor_selector_check(selector)) < 0)
		return rc;
	obj = new_object("ResourceFlavor", name, labels, 2, TAU_BUDGET_ANNOTATION_CLUSTER_UID,
	                 cluster_uid);
	if (obj == NULL || (spec = cJSON_AddObjectToObject(obj, "spec")) == NULL ||
	    (nl = cJSON_AddObjectToObject(spec, "nodeLabels")) == NULL ||
	    cJSON_AddStringToObject(nl, TAU_BUDGET_LABEL_GPU_CLASS, gpu_class) == NULL ||
	    cJSON_AddStringToObject(nl, TAU_BUDGET_LABEL_OS, "linux") == NULL) {
		cJSON_Delete(obj);
		return tau_budget_nomem();
	}
	/* The pool's node selector, so Kueue puts admitted pods only on nodes we counted. */
	if (!cJSON_IsObject(selector))
		selector = NULL;
	cJSON_ArrayForEach(e, selector)
	{
		if (!flavor_own_key(e->string) &&
		    cJSON_AddStringToObject(nl, e->string, e->valuestring) == NULL) {
			cJSON_Delete(obj);
			return tau_budget_nomem();
		}
	}
	*out = obj;
	return 0;
}

/* spec.resourceGroups of the plan: the plan's quotas, or "0" everywhere. */
static cJSON *resource_groups(const tau_budget_plan *plan, bool zero)
{
	cJSON *groups = cJSON_CreateArray(), *g, *covered, *flavors;
	char text[TAU_QUANTITY_STR_MAX];

	if (groups == NULL || plan->n_resources == 0 || plan->n_flavors == 0)
		return groups;
	if ((g = cJSON_CreateObject()) == NULL || !cJSON_AddItemToArray(groups, g))
		goto fail_g;
	if ((covered = cJSON_AddArrayToObject(g, "coveredResources")) == NULL ||
	    (flavors = cJSON_AddArrayToObject(g, "flavors")) == NULL)
		goto fail;
	for (size_t r = 0; r < plan->n_resources; r++) {
		cJSON *s = cJSON_CreateString(plan->resources[r]);

		if (s == NULL || !cJSON_AddItemToArray(covered, s))
			goto fail;
	}
	for (size_t f = 0; f < plan->n_flavors; f++) {
		cJSON *fo = cJSON_CreateObject(), *rs;

		if (fo == NULL || !cJSON_AddItemToArray(flavors, fo))
			goto fail;
		if (cJSON_AddStringToObject(fo, "name", plan->flavors[f].name) == NULL ||
		    (rs = cJSON_AddArrayToObject(fo, "resources")) == NULL)
			goto fail;
		for (size_t r = 0; r < plan->n_resources; r++) {
			cJSON *ro = cJSON_CreateObject();

			if (ro == NULL || !cJSON_AddItemToArray(rs, ro))
				goto fail;
			if (zero)
				snprintf(text, sizeof(text), "0");
			else if (tau_quantity_format(text, sizeof(text),
			                             tau_budget_plan_quota(plan, f, r)) < 0)
				goto fail;
			if (cJSON_AddStringToObject(ro, "name", plan->resources[r]) == NULL ||
			    cJSON_AddStringToObject(ro, "nominalQuota", text) == NULL)
				goto fail;
		}
	}
	return groups;
fail_g:
	cJSON_Delete(g);
fail:
	cJSON_Delete(groups);
	return NULL;
}

int tau_budget_desired_cohort(cJSON **out, const tau_budget_plan *plan, const char *team,
                              const char *team_uid, bool zeroed)
{
	char name[TAU_BUDGET_NAME_BUF];
	const char *labels[] = {TAU_BUDGET_LABEL_TEAM, team};
	cJSON *obj, *spec, *groups;
	int rc;

	if (out == NULL || plan == NULL || team_uid == NULL || team_uid[0] == '\0')
		return tau_error_set(TAU_EINVAL, "desired Cohort: missing plan or TauTeam UID");
	if ((rc = check_label_value(team, "team")) < 0 ||
	    (rc = tau_budget_cohort_name(name, sizeof(name), team)) < 0)
		return rc;
	obj = new_object("Cohort", name, labels, 2, TAU_BUDGET_ANNOTATION_TEAM_UID, team_uid);
	if (obj == NULL || (spec = cJSON_AddObjectToObject(obj, "spec")) == NULL ||
	    (groups = resource_groups(plan, zeroed)) == NULL) {
		cJSON_Delete(obj);
		return tau_budget_nomem();
	}
	cJSON_AddItemToObject(spec, "resourceGroups", groups);
	*out = obj;
	return 0;
}

int tau_budget_desired_cluster_queue(cJSON **out, const tau_budget_plan *plan, const char *team,
                                     const char *workspace, const char *workspace_uid,
                                     const char *ns)
{
	char name[TAU_BUDGET_NAME_BUF], cohort[TAU_BUDGET_NAME_BUF];
	const char *labels[] = {TAU_BUDGET_LABEL_TEAM, team, TAU_BUDGET_LABEL_WORKSPACE, workspace};
	cJSON *obj, *spec, *groups = NULL, *sel, *ml;
	int rc;

	if (out == NULL || plan == NULL || workspace_uid == NULL || workspace_uid[0] == '\0' ||
	    ns == NULL)
		return tau_error_set(TAU_EINVAL, "desired ClusterQueue: missing plan, TauWorkspace "
		                                 "UID or namespace");
	if ((rc = check_label_value(team, "team")) < 0 ||
	    (rc = check_label_value(workspace, "workspace")) < 0)
		return rc;
	if (tau_names_check_dns1123_label(ns) < 0)
		return tau_error_wrap("desired ClusterQueue: namespace: Invalid value");
	if ((rc = tau_budget_cluster_queue_name(name, sizeof(name), workspace)) < 0 ||
	    (rc = tau_budget_cohort_name(cohort, sizeof(cohort), team)) < 0)
		return rc;
	obj = new_object("ClusterQueue", name, labels, 4, TAU_BUDGET_ANNOTATION_WORKSPACE_UID,
	                 workspace_uid);
	if (obj == NULL || (spec = cJSON_AddObjectToObject(obj, "spec")) == NULL ||
	    cJSON_AddStringToObject(spec, "cohortName", cohort) == NULL ||
	    (sel = cJSON_AddObjectToObject(spec, "namespaceSelector")) == NULL ||
	    (ml = cJSON_AddObjectToObject(sel, "matchLabels")) == NULL ||
	    cJSON_AddStringToObject(ml, TAU_BUDGET_LABEL_NAMESPACE_NAME, ns) == NULL ||
	    (groups = resource_groups(plan, true)) == NULL) {
		cJSON_Delete(obj);
		return tau_budget_nomem();
	}
	cJSON_AddItemToObject(spec, "resourceGroups", groups);
	*out = obj;
	return 0;
}
