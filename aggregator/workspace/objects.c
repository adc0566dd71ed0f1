/*
 * objects.c - what every phase of a workspace pass uses to read and write
 * the objects the workspace owns.
 *
 * The one idea: a phase says what it wants (an object to exist as desired,
 * an object or every unwanted one of a kind to go) and these functions do it
 * through controller/apply.h with the workspace's ownership, log each write
 * once with the object and the reason, and record what the status needs to
 * say (an object check, a drift item, a time to come back).
 */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OWNED_SELECTOR TAU_WS_LABEL_MANAGED_BY "=" TAU_WS_MANAGED_BY

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

const char *tau_ws_str(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (obj == NULL || tau_json_get_string(&s, obj, path) != 0)
		return NULL;
	return s;
}

bool tau_ws_same(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

const char *tau_ws_label(const cJSON *obj, const char *section, const char *key)
{
	const cJSON *md = obj != NULL ? cJSON_GetObjectItemCaseSensitive(obj, "metadata") : NULL;
	const cJSON *m = md != NULL ? cJSON_GetObjectItemCaseSensitive(md, section) : NULL;
	const cJSON *v = m != NULL ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The message of the last API error or libtau error on this thread. */
const char *tau_ws_last_error(void)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (e->http_code != 0 && e->message[0] != '\0')
		return e->message;
	return tau_error_last()->msg;
}

char *tau_ws_pass_text(ws_pass *p)
{
	char *t = p->texts[p->n_texts < WS_PASS_TEXTS ? p->n_texts : WS_PASS_TEXTS - 1];

	if (p->n_texts < WS_PASS_TEXTS)
		p->n_texts++;
	t[0] = '\0';
	return t;
}

void tau_ws_pass_requeue(ws_pass *p, uint64_t ms)
{
	if (p->requeue_ms == 0 || ms < p->requeue_ms)
		p->requeue_ms = ms;
}

/* The previous status's condition `type`: its field `field`, or NULL. */
const char *tau_ws_pass_condition(const ws_pass *p, const char *type, const char *field)
{
	const cJSON *conds = p->status != NULL ? tau_json_find(p->status, "conditions") : NULL;
	const cJSON *c;

	cJSON_ArrayForEach(c, conds)
	{
		if (tau_ws_same(tau_ws_str(c, "type"), type))
			return tau_ws_str(c, field);
	}
	return NULL;
}

bool tau_ws_pass_was_true(const ws_pass *p, const char *type)
{
	return tau_ws_same(tau_ws_pass_condition(p, type, "status"), "True");
}

void tau_ws_describe(char *buf, size_t len, const tau_kube_resource *res, const char *ns,
                     const char *name)
{
	snprintf(buf, len, "%s %s%s%s", res->plural, ns != NULL ? ns : "", ns != NULL ? "/" : "",
	         name != NULL ? name : "");
}

static void add_drift(ws_pass *p, const char *object, const char *what, bool corrected)
{
	char *o, *w;

	if (p->n_drift >= sizeof(p->drift) / sizeof(p->drift[0]))
		return;
	o = tau_ws_pass_text(p);
	w = tau_ws_pass_text(p);
	snprintf(o, TAU_WS_MESSAGE_MAX, "%s", object);
	snprintf(w, TAU_WS_MESSAGE_MAX, "%s", what);
	p->drift[p->n_drift++] = (tau_ws_drift_item){o, w, corrected};
}

tau_apply_owner tau_ws_owner(const char *name, const char *uid)
{
	return (tau_apply_owner){.managed_by_label = TAU_WS_LABEL_MANAGED_BY,
	                         .managed_by = TAU_WS_MANAGED_BY,
	                         .owner_label = TAU_WS_LABEL_WORKSPACE,
	                         .owner = name,
	                         .uid_annotation = TAU_WS_ANNOTATION_OWNER_UID,
	                         .uid = uid};
}

/* ------------------------------------------------------------------------------------------ */
/* Writing owned objects                                                                       */

/* Immutable fields: a RoleBinding's roleRef; a LocalQueue's spec.clusterQueue (Kueue's CEL
 * rule self == oldSelf).  Such a difference replaces the object. */
static bool must_replace(const cJSON *desired, const cJSON *observed, const char *what)
{
	const char *kind = tau_ws_str(desired, "kind");

	if (tau_ws_same(kind, "RoleBinding"))
		return strncmp(what, "roleRef", 7) == 0;
	if (tau_ws_same(kind, "LocalQueue"))
		return !tau_ws_same(tau_ws_str(desired, "spec.clusterQueue"),
		                    tau_ws_str(observed, "spec.clusterQueue"));
	return false;
}

static const char *const sa_owned_annotations[] = {TAU_WS_ANNOTATION_WI_TENANT_ID};

static tau_apply_kind kind_of(const tau_kube_resource *res)
{
	tau_apply_kind k = {
	        .res = res, .diff = tau_ws_desired_drifted, .must_replace = must_replace};

	if (res == &tau_ws_res_serviceaccounts) {
		k.owned_annotations = sa_owned_annotations;
		k.n_owned_annotations = 1;
	}
	return k;
}

/*
 * Make `desired` exist as desired.  `was_ready` says the previous status
 * found it in place: a create then restores a deletion done out of band and
 * is reported as drift.
 */
void tau_ws_pass_ensure(ws_pass *p, const tau_kube_resource *res, const cJSON *desired,
                        bool was_ready, tau_ws_obj_check *check)
{
	tau_apply_kind k = kind_of(res);
	tau_apply_owner owner = tau_ws_owner(p->name, p->spec.uid);
	tau_apply_result r;
	char object[TAU_WS_MESSAGE_MAX / 2], *detail = tau_ws_pass_text(p);
	int rc;

	tau_ws_describe(object, sizeof(object), res,
	                res->namespaced ? tau_ws_str(desired, "metadata.namespace") : NULL,
	                tau_ws_str(desired, "metadata.name"));
	rc = tau_apply_ensure(&r, p->ctl->client, &k, desired, &owner);
	snprintf(detail, TAU_WS_MESSAGE_MAX, "%s", r.detail);
	*check = (tau_ws_obj_check){TAU_WS_OBJ_OK, NULL};
	if (rc != 0) {
		tau_log_warn("workspace object write failed", "workspace", p->name, "object",
		             object, "error", detail, NULL);
		if (strncmp(detail, "create failed", 13) == 0)
			check->state = rc == -TAU_EPERM ? TAU_WS_OBJ_ERROR : TAU_WS_OBJ_MISSING;
		else if (strncmp(detail, "read failed", 11) == 0)
			check->state = TAU_WS_OBJ_ERROR;
		else
			check->state = TAU_WS_OBJ_MISMATCH;
		check->detail = detail;
		if (check->state == TAU_WS_OBJ_MISMATCH)
			add_drift(p, object, detail, false);
		tau_ws_pass_requeue(p, 5000);
		return;
	}
	switch (r.outcome) {
	case TAU_APPLY_CREATED: {
		char msg[TAU_WS_MESSAGE_MAX];

		tau_log_info(was_ready ? "workspace object restored" : "workspace object created",
		             "workspace", p->name, "object", object, "reason",
		             was_ready ? "deleted out of band" : "missing", NULL);
		snprintf(msg, sizeof(msg), "%s %s", object,
		         was_ready ? "restored: it was deleted out of band" : "created");
		tau_ws_pass_event(p, was_ready ? TAU_EVENT_WARNING : TAU_EVENT_NORMAL,
		                  was_ready ? TAU_WS_EVENT_RESTORED : TAU_WS_EVENT_CREATED, msg);
		if (was_ready)
			add_drift(p, object, "it was deleted", true);
		break;
	}
	case TAU_APPLY_UPDATED:
	case TAU_APPLY_REPLACED: {
		char msg[TAU_WS_MESSAGE_MAX];

		tau_log_info("workspace object corrected", "workspace", p->name, "object", object,
		             "reason", detail, "how", tau_apply_outcome_name(r.outcome), NULL);
		snprintf(msg, sizeof(msg), "%s corrected (%s): %s", object,
		         tau_apply_outcome_name(r.outcome), detail);
		tau_ws_pass_event(p, TAU_EVENT_WARNING, TAU_WS_EVENT_CORRECTED, msg);
		add_drift(p, object, detail, true);
		break;
	}
	case TAU_APPLY_NOT_OWNED:
		*check = (tau_ws_obj_check){TAU_WS_OBJ_NOT_OWNED, detail};
		break;
	default:
		break;
	}
}

static void deleted_event(ws_pass *p, const char *object, const char *why)
{
	char msg[TAU_WS_MESSAGE_MAX];

	tau_log_info("workspace object deleted", "workspace", p->name, "object", object, "reason",
	             why, NULL);
	snprintf(msg, sizeof(msg), "%s deleted: %s", object, why);
	tau_ws_pass_event(p, TAU_EVENT_NORMAL, TAU_WS_EVENT_DELETED, msg);
}

/*
 * Delete an object we own (labels and owner UID checked, UID precondition).
 * @return 0 (deleted, going or absent), -TAU_EPERM when not ours (left
 * alone, logged), or the API error.
 */
int tau_ws_pass_delete(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *name,
                       const char *why)
{
	tau_apply_owner owner = tau_ws_owner(p->name, p->spec.uid);
	tau_apply_result r;
	char object[300];
	int rc;

	tau_ws_describe(object, sizeof(object), res, ns, name);
	rc = tau_apply_delete_owned(&r, p->ctl->client, res, ns, name, &owner);
	if (rc == -TAU_EPERM)
		tau_log_warn("workspace cleanup left an object alone", "workspace", p->name,
		             "object", object, "reason", r.detail, NULL);
	else if (rc == 0 && r.outcome == TAU_APPLY_DELETED)
		deleted_event(p, object, why);
	return rc;
}

static void on_pruned(void *arg, const char *ns, const char *name, const tau_apply_result *r,
                      int rc)
{
	ws_prune_ctx *c = arg;
	char object[300];

	tau_ws_describe(object, sizeof(object), c->res, ns, name);
	if (rc == 0 && r->outcome == TAU_APPLY_DELETED)
		deleted_event(c->p, object, c->why);
	else if (rc != 0)
		snprintf(c->failed, sizeof(c->failed), "%s/%s: %s", ns != NULL ? ns : "", name,
		         r->detail[0] != '\0' ? r->detail : tau_ws_last_error());
	if (rc == -TAU_EPERM)
		tau_log_warn("workspace cleanup left an object alone", "workspace", c->p->name,
		             "object", object, "reason", r->detail, NULL);
}

/* Delete every owned object of `res` in `ns` except `keep` (may be NULL).  @return as prune. */
int tau_ws_pass_prune(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *keep,
                      const char *why, ws_prune_ctx *ctx)
{
	tau_apply_owner owner = tau_ws_owner(p->name, p->spec.uid);
	const char *keep_list[1] = {keep};

	*ctx = (ws_prune_ctx){.p = p, .res = res, .why = why};
	return tau_apply_prune(NULL, p->ctl->client, res, ns, &owner, keep_list, keep != NULL,
	                       on_pruned, ctx);
}

int tau_ws_pass_list_owned(cJSON **out, ws_pass *p, const tau_kube_resource *res, const char *ns)
{
	char sel[400];
	tau_kube_list_options o = {0};

	snprintf(sel, sizeof(sel), "%s,%s=%s", OWNED_SELECTOR, TAU_WS_LABEL_WORKSPACE, p->name);
	o.label_selector = sel;
	return tau_kube_list_all(out, p->ctl->client, res, ns, &o);
}

/* ------------------------------------------------------------------------------------------ */
