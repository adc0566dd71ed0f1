/*
 * decide_writes.c - the decision under construction: appending writes, statuses and Events,
 * and the one rule every object write follows (tau_budget_ensure: create what is absent,
 * update what is ours and differs, adopt what is ours but orphaned, report what is not ours).
 */
#include "decide_internal.h"

#include "tau/buf.h"
#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/str.h"
#include "tau/array.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tau_budget_add_write(builder *b, tau_budget_kind kind, const char *name, bool remove,
                          bool create, cJSON *body, const char *uid, char *why)
{
	tau_budget_write *w;

	if (b->rc < 0 || tau_array_grow((void **)&b->d->writes, &b->cap_writes, b->d->n_writes + 1,
	                                sizeof(*b->d->writes))) {
		cJSON_Delete(body);
		free(why);
		if (b->rc == 0)
			b->rc = tau_budget_nomem();
		return;
	}
	w = &b->d->writes[b->d->n_writes];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->name = strdup(name);
	w->remove = remove;
	w->create = create;
	w->body = body;
	w->uid = uid != NULL ? strdup(uid) : NULL;
	w->why = why;
	b->d->n_writes++;
	if (w->name == NULL || why == NULL || (uid != NULL && w->uid == NULL))
		b->rc = tau_budget_nomem();
}

void tau_budget_add_status(builder *b, const cJSON *object, cJSON *status)
{
	if (b->rc < 0 || status == NULL ||
	    tau_array_grow((void **)&b->d->statuses, &b->cap_statuses, b->d->n_statuses + 1,
	                   sizeof(*b->d->statuses))) {
		cJSON_Delete(status);
		if (b->rc == 0)
			b->rc = tau_budget_nomem();
		return;
	}
	b->d->statuses[b->d->n_statuses].object = object;
	b->d->statuses[b->d->n_statuses].status = status;
	b->d->n_statuses++;
}

void tau_budget_add_event(builder *b, const cJSON *object, const char *type, const char *reason,
                          const char *message)
{
	tau_budget_event *e;

	if (b->rc < 0 || object == NULL)
		return;
	if (tau_array_grow((void **)&b->d->events, &b->cap_events, b->d->n_events + 1,
	                   sizeof(*b->d->events))) {
		b->rc = tau_budget_nomem();
		return;
	}
	e = &b->d->events[b->d->n_events];
	e->object = object;
	e->type = type;
	e->reason = reason;
	e->on_write = false;
	e->message = strdup(message);
	b->d->n_events++;
	if (e->message == NULL)
		b->rc = tau_budget_nomem();
}

void tau_budget_decision_free(tau_budget_decision *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->n_writes; i++) {
		cJSON_Delete(d->writes[i].body);
		tau_free_many(d->writes[i].name, d->writes[i].uid, d->writes[i].why);
	}
	for (size_t i = 0; i < d->n_statuses; i++)
		cJSON_Delete(d->statuses[i].status);
	for (size_t i = 0; i < d->n_events; i++)
		free(d->events[i].message);
	tau_free_many(d->writes, d->statuses, d->events, d->summary, d);
}

int tau_budget_managed_add(cJSON *arr, const char *kind, const char *name)
{
	cJSON *e = cJSON_CreateObject();

	if (e == NULL || cJSON_AddStringToObject(e, "kind", kind) == NULL ||
	    cJSON_AddStringToObject(e, "name", name) == NULL) {
		cJSON_Delete(e);
		return tau_budget_nomem();
	}
	cJSON_AddItemToArray(arr, e);
	return 0;
}

/* Does any of `objs` have metadata.uid `uid`? */
static bool uid_alive(const cJSON *const *objs, size_t n, const char *uid)
{
	for (size_t i = 0; i < n; i++)
		if (tau_str_eq_both_set(tau_json_str(objs[i], "metadata.uid"), uid))
			return true;
	return false;
}

bool tau_budget_orphaned(const tau_budget_observed *in, const char *cluster_uid,
                         tau_budget_kind kind, const cJSON *obs)
{
	const char *name = tau_json_str(obs, "metadata.name");
	const char *uid = tau_json_annotation(obs, tau_budget_owner_annotation(kind));
	char want[TAU_BUDGET_NAME_BUF];
	const char *label;
	int rc = -1;

	if (name == NULL || uid == NULL || uid[0] == '\0' || !tau_budget_is_managed(obs))
		return false;
	switch (kind) {
	case TAU_BUDGET_RESOURCE_FLAVOR:
		label = tau_json_label(obs, TAU_BUDGET_LABEL_GPU_CLASS);
		if (label != NULL)
			rc = tau_budget_flavor_name(want, sizeof(want), label);
		tau_error_clear();
		return rc == 0 && tau_str_eq_both_set(want, name) && cluster_uid != NULL &&
		       !tau_str_eq_both_set(uid, cluster_uid);
	case TAU_BUDGET_COHORT:
		label = tau_json_label(obs, TAU_BUDGET_LABEL_TEAM);
		if (label != NULL)
			rc = tau_budget_cohort_name(want, sizeof(want), label);
		tau_error_clear();
		return rc == 0 && tau_str_eq_both_set(want, name) &&
		       !uid_alive(in->api.teams, in->api.n_teams, uid);
	case TAU_BUDGET_CLUSTER_QUEUE:
		label = tau_json_label(obs, TAU_BUDGET_LABEL_WORKSPACE);
		if (label != NULL && tau_json_label(obs, TAU_BUDGET_LABEL_TEAM) != NULL)
			rc = tau_budget_cluster_queue_name(want, sizeof(want), label);
		tau_error_clear();
		return rc == 0 && tau_str_eq_both_set(want, name) &&
		       !uid_alive(in->api.workspaces, in->api.n_workspaces, uid);
	case TAU_BUDGET_TEAM:
		break;
	}
	return false;
}

bool tau_budget_ensure(builder *b, tau_budget_kind kind, cJSON *desired, const cJSON *observed,
                       const char *owner_uid, bool allowed, char *problem, size_t problem_len,
                       const adopter *adopt)
{
	const char *name = tau_json_str(desired, "metadata.name");
	char why[512];
	bool equal = false;
	cJSON *body = NULL;

	if (observed == NULL) {
		if (allowed)
			tau_budget_add_write(b, kind, name, false, true, desired, NULL,
			                     tau_budget_fmt("%s %s does not exist",
			                                    tau_budget_kind_name(kind), name));
		else
			cJSON_Delete(desired);
		return true;
	}
	if (tau_budget_ownership_of(observed, kind, owner_uid, why, sizeof(why)) !=
	    TAU_BUDGET_OWNED) {
		const char *was = tau_json_annotation(observed, tau_budget_owner_annotation(kind));

		if (adopt == NULL ||
		    !tau_budget_orphaned(adopt->in, adopt->cluster_uid, kind, observed)) {
			tau_str_printf(problem, problem_len, "%s %s exists but is not ours: %s",
			               tau_budget_kind_name(kind), name, why);
			cJSON_Delete(desired);
			return false;
		}
		if (allowed) {
			char msg[MSG_MAX];

			tau_str_printf(
			        msg, sizeof(msg),
			        "%s %s carries TauGrid's labels but its owner (%s %s) no longer "
			        "exists: adopted by %s %s (UID %s)",
			        tau_budget_kind_name(kind), name, tau_budget_owner_annotation(kind),
			        was, tau_json_str(adopt->by, "kind"),
			        tau_json_str(adopt->by, "metadata.name"), owner_uid);
			if (tau_budget_merge(&body, observed, desired) < 0) {
				b->rc = b->rc < 0 ? b->rc : -TAU_ENOMEM;
			} else {
				tau_budget_add_write(b, kind, name, false, false, body, NULL,
				                     tau_budget_fmt("%s", msg));
				tau_budget_add_event(b, adopt->by, "Normal", "Adopted", msg);
				if (b->rc == 0)
					b->d->events[b->d->n_events - 1].on_write = true;
			}
		}
		cJSON_Delete(desired);
		return true;
	}
	if (tau_budget_owned_equal(&equal, why, sizeof(why), desired, observed) < 0) {
		b->rc = b->rc < 0 ? b->rc : -TAU_EINVAL;
		cJSON_Delete(desired);
		return true;
	}
	if (!equal && allowed) {
		if (tau_budget_merge(&body, observed, desired) < 0)
			b->rc = b->rc < 0 ? b->rc : -TAU_ENOMEM;
		else
			tau_budget_add_write(b, kind, name, false, false, body, NULL,
			                     tau_budget_fmt("%s", why));
	}
	cJSON_Delete(desired);
	return true;
}

int tau_budget_zero_cohort(builder *b, const tau_budget_observed *in, const cJSON *co,
                           const char *team, const char *uid, const char *policy)
{
	tau_budget_pool *empty = NULL;
	tau_budget_plan *plan = NULL;
	cJSON *want = NULL;
	char scratch[MSG_MAX];
	int rc = tau_budget_pool_new(&empty);

	if (rc < 0)
		return rc;
	rc = tau_budget_plan_build(&plan, empty, co, in->api.flavors, in->api.n_flavors, NULL);
	tau_budget_pool_free(empty);
	if (rc == -TAU_ENOMEM)
		return rc;
	if (rc < 0) {
		tau_error_clear();
		return 0;
	}
	rc = tau_budget_desired_cohort(&want, plan, team, uid, true);
	tau_budget_plan_free(plan);
	if (rc == 0)
		rc = tau_budget_record_policy(want, policy);
	if (rc < 0) {
		cJSON_Delete(want);
		return rc;
	}
	tau_budget_ensure(b, TAU_BUDGET_COHORT, want, co, uid, true, scratch, sizeof(scratch),
	                  NULL);
	return 0;
}

int tau_budget_record_policy(cJSON *obj, const char *policy)
{
	cJSON *ann = (cJSON *)tau_json_find(obj, "metadata.annotations");

	if (!tau_str_eq_both_set(policy, TAU_BUDGET_POLICY_DELETE))
		policy = TAU_BUDGET_POLICY_RETAIN;
	if (!cJSON_IsObject(ann) ||
	    cJSON_AddStringToObject(ann, TAU_BUDGET_ANNOTATION_DELETION_POLICY, policy) == NULL)
		return tau_budget_nomem();
	return 0;
}

void tau_budget_team_finalizer(builder *b, const cJSON *team, bool add, char *why)
{
	cJSON *body = cJSON_Duplicate(team, true), *meta, *fins, *f, *keep;
	const char *name = tau_json_str(team, "metadata.name");

	if (body == NULL || (keep = cJSON_CreateArray()) == NULL) {
		cJSON_Delete(body);
		free(why);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	meta = cJSON_GetObjectItemCaseSensitive(body, "metadata");
	fins = cJSON_GetObjectItemCaseSensitive(meta, "finalizers");
	cJSON_ArrayForEach(f, fins)
	{
		if (!cJSON_IsString(f) || strcmp(f->valuestring, TAU_BUDGET_TEAM_FINALIZER) != 0)
			cJSON_AddItemToArray(keep, cJSON_Duplicate(f, true));
	}
	if (add)
		cJSON_AddItemToArray(keep, cJSON_CreateString(TAU_BUDGET_TEAM_FINALIZER));
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "finalizers");
	cJSON_AddItemToObject(meta, "finalizers", keep);
	cJSON_DeleteItemFromObjectCaseSensitive(body, "status");
	tau_budget_add_write(b, TAU_BUDGET_TEAM, name, false, false, body, NULL, why);
}
