/*
 * reconcile.c - one TauWorkspace reconcile pass, one function per phase.
 *
 * The one idea: every pass recomputes the whole answer from what is
 * observed now.  Informer events only say "look at workspace X again"; the
 * pass then reads the workspace live (so its own writes are never read back
 * stale), takes the TauCluster, Namespace and ClusterQueue views from the
 * informer caches, reads each owned object live (controller/apply.h), and
 * hands all of it to the pure modules: namespace decides the namespace,
 * desired the objects and drift, drain the order of cleanup, status the
 * status.  Writes happen only where the desired object differs, /status is
 * written only when tau_ws_status_changed says so, and each write is logged
 * once with the object and the reason.  Every owned object the desired state
 * no longer contains is deleted (ownership and UID preconditions): a binding
 * left by workspace-rbac when the spec says cluster-wide, a LocalQueue of a
 * former queue name once nothing routes through it, an obsolete
 * ServiceAccount.
 *
 * Memory of the namespace a workspace used lives in the API, not here:
 * status.target.resolvedNamespace names it.  When the resolution moves
 * elsewhere (retarget) or the workspace is deleted, that namespace is the
 * "old" one and drain's plan runs against it; while the plan waits the
 * status keeps naming the old namespace, so a restart resumes the drain.
 */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OWNED_SELECTOR TAU_WS_LABEL_MANAGED_BY "=" TAU_WS_MANAGED_BY

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

static const char *jstr(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (obj == NULL || tau_json_get_string(&s, obj, path) != 0)
		return NULL;
	return s;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static const char *label_of(const cJSON *obj, const char *section, const char *key)
{
	const cJSON *md = obj != NULL ? cJSON_GetObjectItemCaseSensitive(obj, "metadata") : NULL;
	const cJSON *m = md != NULL ? cJSON_GetObjectItemCaseSensitive(md, section) : NULL;
	const cJSON *v = m != NULL ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The message of the last API error or libtau error on this thread. */
static const char *last_error_text(void)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (e->http_code != 0 && e->message[0] != '\0')
		return e->message;
	return tau_error_last()->msg;
}

static char *pass_text(ws_pass *p)
{
	char *t = p->texts[p->n_texts < WS_PASS_TEXTS ? p->n_texts : WS_PASS_TEXTS - 1];

	if (p->n_texts < WS_PASS_TEXTS)
		p->n_texts++;
	t[0] = '\0';
	return t;
}

static void requeue_soon(ws_pass *p, uint64_t ms)
{
	if (p->requeue_ms == 0 || ms < p->requeue_ms)
		p->requeue_ms = ms;
}

/* The previous status's condition `type`: its field `field`, or NULL. */
static const char *prev_condition(const ws_pass *p, const char *type, const char *field)
{
	const cJSON *conds = p->status != NULL ? tau_json_find(p->status, "conditions") : NULL;
	const cJSON *c;

	cJSON_ArrayForEach(c, conds)
	{
		if (same_str(jstr(c, "type"), type))
			return jstr(c, field);
	}
	return NULL;
}

static bool was_true(const ws_pass *p, const char *type)
{
	return same_str(prev_condition(p, type, "status"), "True");
}

static void describe(char *buf, size_t len, const tau_kube_resource *res, const char *ns,
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
	o = pass_text(p);
	w = pass_text(p);
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
	const char *kind = jstr(desired, "kind");

	if (same_str(kind, "RoleBinding"))
		return strncmp(what, "roleRef", 7) == 0;
	if (same_str(kind, "LocalQueue"))
		return !same_str(jstr(desired, "spec.clusterQueue"),
		                 jstr(observed, "spec.clusterQueue"));
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
static void ensure(ws_pass *p, const tau_kube_resource *res, const cJSON *desired, bool was_ready,
                   tau_ws_obj_check *check)
{
	tau_apply_kind k = kind_of(res);
	tau_apply_owner owner = tau_ws_owner(p->name, p->spec.uid);
	tau_apply_result r;
	char object[TAU_WS_MESSAGE_MAX / 2], *detail = pass_text(p);
	int rc;

	describe(object, sizeof(object), res,
	         res->namespaced ? jstr(desired, "metadata.namespace") : NULL,
	         jstr(desired, "metadata.name"));
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
		requeue_soon(p, 5000);
		return;
	}
	switch (r.outcome) {
	case TAU_APPLY_CREATED:
		tau_log_info(was_ready ? "workspace object restored" : "workspace object created",
		             "workspace", p->name, "object", object, "reason",
		             was_ready ? "deleted out of band" : "missing", NULL);
		if (was_ready)
			add_drift(p, object, "it was deleted", true);
		break;
	case TAU_APPLY_UPDATED:
	case TAU_APPLY_REPLACED:
		tau_log_info("workspace object corrected", "workspace", p->name, "object", object,
		             "reason", detail, "how", tau_apply_outcome_name(r.outcome), NULL);
		add_drift(p, object, detail, true);
		break;
	case TAU_APPLY_NOT_OWNED:
		*check = (tau_ws_obj_check){TAU_WS_OBJ_NOT_OWNED, detail};
		break;
	default:
		break;
	}
}

/*
 * Delete an object we own (labels and owner UID checked, UID precondition).
 * @return 0 (deleted, going or absent), -TAU_EPERM when not ours (left
 * alone, logged), or the API error.
 */
static int delete_owned(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *name,
                        const char *why)
{
	tau_apply_owner owner = tau_ws_owner(p->name, p->spec.uid);
	tau_apply_result r;
	char object[300];
	int rc;

	describe(object, sizeof(object), res, ns, name);
	rc = tau_apply_delete_owned(&r, p->ctl->client, res, ns, name, &owner);
	if (rc == -TAU_EPERM)
		tau_log_warn("workspace cleanup left an object alone", "workspace", p->name,
		             "object", object, "reason", r.detail, NULL);
	else if (rc == 0 && r.outcome == TAU_APPLY_DELETED)
		tau_log_info("workspace object deleted", "workspace", p->name, "object", object,
		             "reason", why, NULL);
	return rc;
}

typedef struct prune_ctx {
	ws_pass *p;
	const tau_kube_resource *res;
	const char *why;
	char failed[TAU_WS_MESSAGE_MAX]; /* the last object that could not go, and why */
} prune_ctx;

static void on_pruned(void *arg, const char *ns, const char *name, const tau_apply_result *r,
                      int rc)
{
	prune_ctx *c = arg;
	char object[300];

	describe(object, sizeof(object), c->res, ns, name);
	if (rc == 0 && r->outcome == TAU_APPLY_DELETED)
		tau_log_info("workspace object deleted", "workspace", c->p->name, "object", object,
		             "reason", c->why, NULL);
	else if (rc != 0)
		snprintf(c->failed, sizeof(c->failed), "%s/%s: %s", ns != NULL ? ns : "", name,
		         r->detail[0] != '\0' ? r->detail : last_error_text());
	if (rc == -TAU_EPERM)
		tau_log_warn("workspace cleanup left an object alone", "workspace", c->p->name,
		             "object", object, "reason", r->detail, NULL);
}

/* Delete every owned object of `res` in `ns` except `keep` (may be NULL).  @return as prune. */
static int prune(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *keep,
                 const char *why, prune_ctx *ctx)
{
	tau_apply_owner owner = tau_ws_owner(p->name, p->spec.uid);
	const char *keep_list[1] = {keep};

	*ctx = (prune_ctx){.p = p, .res = res, .why = why};
	return tau_apply_prune(NULL, p->ctl->client, res, ns, &owner, keep_list, keep != NULL,
	                       on_pruned, ctx);
}

static int list_ours(cJSON **out, ws_pass *p, const tau_kube_resource *res, const char *ns)
{
	char sel[400];
	tau_kube_list_options o = {0};

	snprintf(sel, sizeof(sel), "%s,%s=%s", OWNED_SELECTOR, TAU_WS_LABEL_WORKSPACE, p->name);
	o.label_selector = sel;
	return tau_kube_list_all(out, p->ctl->client, res, ns, &o);
}

/* ------------------------------------------------------------------------------------------ */
/* Routes: which of `queues` in `ns` still carry work                                          */

typedef struct ws_routes {
	cJSON *sources[TAU_WS_SRC_KINDS];
	tau_ws_source src[512];
	size_t n_src;
	char api_error[TAU_WS_SRC_KINDS][TAU_WS_MESSAGE_MAX];
	tau_ws_drain_input in;
	tau_ws_drain_decision decision;
} ws_routes;

static void routes_clear(ws_routes *r)
{
	for (size_t k = 0; k < TAU_WS_SRC_KINDS; k++)
		cJSON_Delete(r->sources[k]);
}

static int routes_observe(ws_routes *r, ws_pass *p, const char *ns, const char **queues, size_t n)
{
	const cJSON *it;
	int rc;

	for (size_t k = 0; k < TAU_WS_SRC_KINDS; k++) {
		tau_kube_list_options o = {0};

		if (n == 0) {
			r->in.api[k] = TAU_WS_API_LISTED;
			continue;
		}
		rc = tau_kube_list_all(&r->sources[k], p->ctl->client, &tau_ws_res_sources[k], ns,
		                       &o);
		if (rc == -TAU_ENOTFOUND) {
			r->in.api[k] = TAU_WS_API_ABSENT;
			continue;
		}
		if (rc != 0) {
			r->in.api[k] = TAU_WS_API_UNREADABLE;
			snprintf(r->api_error[k], sizeof(r->api_error[k]), "%s", last_error_text());
			r->in.api_error[k] = r->api_error[k];
			continue;
		}
		r->in.api[k] = TAU_WS_API_LISTED;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(r->sources[k], "items"))
		{
			if (r->n_src >= sizeof(r->src) / sizeof(r->src[0]))
				break;
			if (tau_ws_drain_source_from_json(&r->src[r->n_src], (tau_ws_source_kind)k,
			                                  it) == 0)
				r->n_src++;
		}
	}
	r->in.namespace_name = ns;
	r->in.queues = queues;
	r->in.n_queues = n;
	r->in.sources = r->src;
	r->in.n_sources = r->n_src;
	return tau_ws_drain_decide(&r->decision, &r->in);
}

/* ------------------------------------------------------------------------------------------ */
/* The old namespace: drain and cleanup plan                                                   */

struct ws_old_view {
	cJSON *rbs, *lqs, *sas;
	const char *lq_names[TAU_WS_PLAN_MAX];
	size_t n_lq;
	ws_routes routes;
	tau_ws_old_ns_input in;
	tau_ws_plan plan;
	char binding_name[300];
};

static void old_view_clear(ws_old_view *v)
{
	if (v == NULL)
		return;
	cJSON_Delete(v->rbs);
	cJSON_Delete(v->lqs);
	cJSON_Delete(v->sas);
	routes_clear(&v->routes);
	free(v);
}

static bool ns_is_owned(const cJSON *ns_obj, const char *ws)
{
	return same_str(label_of(ns_obj, "labels", TAU_WS_LABEL_MANAGED_BY), TAU_WS_MANAGED_BY) &&
	       same_str(label_of(ns_obj, "labels", TAU_WS_LABEL_WORKSPACE), ws);
}

/* Build the plan for namespace `old`.  @return 0 or an API error (pass ends). */
static int old_ns_observe(ws_pass *p, const char *old, bool deleting)
{
	ws_old_view *v = calloc(1, sizeof(*v));
	const cJSON *it;
	cJSON *ns_obj = NULL;
	int rc;

	if (v == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	old_view_clear(p->old);
	p->old = v;
	snprintf(v->binding_name, sizeof(v->binding_name), "%s%s", TAU_WS_ROLEBINDING_PREFIX,
	         p->name);
	if ((rc = list_ours(&v->rbs, p, &tau_ws_res_rolebindings, old)) != 0 ||
	    (rc = list_ours(&v->lqs, p, &tau_ws_res_localqueues, old)) != 0 ||
	    (rc = list_ours(&v->sas, p, &tau_ws_res_serviceaccounts, old)) != 0)
		return tau_error_wrap("listing owned objects in %s", old);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v->rbs, "items"))
	{
		if (same_str(jstr(it, "metadata.name"), v->binding_name))
			v->in.binding_present = true;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v->lqs, "items"))
	{
		if (v->n_lq < TAU_WS_PLAN_MAX)
			v->lq_names[v->n_lq++] = jstr(it, "metadata.name");
	}
	it = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v->sas, "items"), 0);
	if (it != NULL) {
		v->in.sa_name = jstr(it, "metadata.name");
		v->in.sa_client_id = label_of(it, "annotations", TAU_WS_ANNOTATION_WI_CLIENT_ID);
		v->in.sa_terminating = jstr(it, "metadata.deletionTimestamp") != NULL;
	}
	if ((rc = routes_observe(&v->routes, p, old, v->lq_names, v->n_lq)) != 0)
		return rc;

	v->in.namespace_name = old;
	v->in.deleting = deleting;
	v->in.binding_wanted = p->spec.name != NULL && p->spec.authz == TAU_WS_AUTHZ_WORKSPACE_RBAC;
	v->in.binding_name = v->binding_name;
	v->in.wi_wanted = p->spec.has_workload_identity;
	v->in.wi_sa_name = p->spec.wi_service_account;
	v->in.wi_client_id = p->spec.wi_client_id;
	v->in.local_queues = v->lq_names;
	v->in.n_local_queues = v->n_lq;
	if (tau_kube_informer_get(&ns_obj, p->ctl->inf[WS_INF_NAMESPACES], NULL, old) == 0) {
		v->in.namespace_owned =
		        p->cfg.mode == TAU_WS_NS_MANAGED && ns_is_owned(ns_obj, p->name);
		cJSON_Delete(ns_obj);
	}
	cJSON_ArrayForEach(it, p->all)
	{
		const char *on = jstr(it, "metadata.name");

		if (on != NULL && strcmp(on, p->name) != 0 &&
		    same_str(jstr(it, "status.target.resolvedNamespace"), old))
			v->in.namespace_shared = true;
	}
	v->in.drain = &v->routes.decision;
	return tau_ws_drain_plan(&v->plan, &v->in);
}

static bool has_finalizer(const cJSON *ws)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, tau_json_find(ws, "metadata.finalizers"))
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, TAU_WS_FINALIZER) == 0)
			return true;
	}
	return false;
}

static int remove_finalizer(ws_pass *p)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(p->ws, "metadata");
	cJSON *fin = cJSON_GetObjectItemCaseSensitive(md, "finalizers");
	cJSON *out = NULL;
	const cJSON *it;
	int i = 0, rc;

	cJSON_ArrayForEach(it, fin)
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, TAU_WS_FINALIZER) == 0)
			break;
		i++;
	}
	if (it == NULL)
		return 0;
	cJSON_DeleteItemFromArray(fin, i);
	rc = tau_kube_update(&out, p->ctl->client, &tau_ws_res_workspaces, p->ctl->system_namespace,
	                     p->ws);
	cJSON_Delete(out);
	if (rc == 0)
		tau_log_info("workspace finalizer removed", "workspace", p->name, "reason",
		             "cleanup complete", NULL);
	return rc;
}

static int grant_binding(ws_pass *p, const char *ns)
{
	cJSON *rb = NULL;
	tau_ws_obj_check chk;
	int rc;

	if (p->spec.name == NULL)
		return 0;
	rc = tau_ws_desired_rolebinding(&rb, &p->spec, ns);
	if (rc == 0 && rb != NULL) {
		if (p->ctl->researcher_role != NULL)
			cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(rb, "roleRef"),
			                          "name",
			                          cJSON_CreateString(p->ctl->researcher_role));
		ensure(p, &tau_ws_res_rolebindings, rb, true, &chk);
		p->n_drift = 0; /* the old namespace's binding is not drift */
	}
	cJSON_Delete(rb);
	return rc;
}

/*
 * Run the plan's steps in order (drain.h contract).  @return 0 when the
 * pass may continue; sets *complete when every step ran; an API error ends
 * the pass.
 */
static int run_plan(ws_pass *p, bool *complete)
{
	ws_old_view *v = p->old;
	bool revoked = false, have_revoke = false;
	int rc = 0;

	*complete = false;
	for (size_t i = 0; i < v->plan.n; i++) {
		const tau_ws_step *s = &v->plan.steps[i];

		if (s->when == TAU_WS_WHEN_REVOKED && !(have_revoke && revoked))
			continue;
		if (s->when == TAU_WS_WHEN_NOT_REVOKED && !(have_revoke && !revoked))
			continue;
		switch (s->kind) {
		case TAU_WS_STEP_REVOKE_SERVICE_ACCOUNT: {
			cJSON *left = NULL;

			have_revoke = true;
			rc = delete_owned(p, &tau_ws_res_serviceaccounts, s->namespace_name,
			                  s->name, "obsolete workload identity");
			if (rc == 0) {
				rc = tau_kube_get(&left, p->ctl->client,
				                  &tau_ws_res_serviceaccounts, s->namespace_name,
				                  s->name);
				cJSON_Delete(left);
				revoked = rc == -TAU_ENOTFOUND;
			}
			if (!revoked)
				p->revocation_pending = true;
			rc = 0; /* a failed revoke is an outcome */
			break;
		}
		case TAU_WS_STEP_REMOVE_RESEARCHER_BINDING:
			rc = delete_owned(p, &tau_ws_res_rolebindings, s->namespace_name, s->name,
			                  "researcher access withdrawn from the namespace left");
			break;
		case TAU_WS_STEP_GRANT_RESEARCHER_BINDING:
			rc = grant_binding(p, s->namespace_name);
			break;
		case TAU_WS_STEP_WAIT_REVOCATION:
		case TAU_WS_STEP_WAIT_DRAIN:
			tau_log_info("workspace cleanup waits", "workspace", p->name, "namespace",
			             v->in.namespace_name, "reason", v->plan.message, NULL);
			requeue_soon(p, p->ctl->drain_poll_ms);
			return 0;
		case TAU_WS_STEP_DELETE_LOCAL_QUEUE:
			rc = delete_owned(p, &tau_ws_res_localqueues, s->namespace_name, s->name,
			                  "drained: routing removed from the namespace left");
			break;
		case TAU_WS_STEP_DELETE_SERVICE_ACCOUNT:
			rc = delete_owned(
			        p, &tau_ws_res_serviceaccounts, s->namespace_name, s->name,
			        "drained: workload identity removed from the namespace left");
			break;
		case TAU_WS_STEP_DELETE_NAMESPACE:
			if (p->cfg.mode == TAU_WS_NS_MANAGED)
				rc = delete_owned(p, &tau_kube_res_namespaces, NULL,
				                  s->namespace_name, "workspace deleted");
			break;
		case TAU_WS_STEP_RELEASE_NAMESPACE: {
			char patch[512];
			cJSON *out = NULL;

			snprintf(patch, sizeof(patch),
			         "{\"metadata\":{\"labels\":{\"%s\":null,\"%s\":null},"
			         "\"annotations\":{\"%s\":null}}}",
			         TAU_WS_LABEL_MANAGED_BY, TAU_WS_LABEL_WORKSPACE,
			         TAU_WS_ANNOTATION_OWNER_UID);
			rc = tau_kube_patch(&out, p->ctl->client, &tau_kube_res_namespaces, NULL,
			                    s->namespace_name, NULL, TAU_KUBE_PATCH_MERGE, patch);
			cJSON_Delete(out);
			if (rc == 0)
				tau_log_info("workspace namespace released", "workspace", p->name,
				             "namespace", s->namespace_name, "reason",
				             "retargeted: ownership labels removed, namespace kept",
				             NULL);
			break;
		}
		case TAU_WS_STEP_REMOVE_FINALIZER:
			rc = remove_finalizer(p);
			break;
		}
		if (rc == -TAU_EPERM && s->kind != TAU_WS_STEP_REMOVE_FINALIZER)
			rc = 0; /* not ours: left alone and reported, cleanup goes on */
		if (rc != 0) {
			tau_log_warn("workspace cleanup step failed", "workspace", p->name, "step",
			             tau_ws_drain_step_name(s->kind), "namespace",
			             s->namespace_name, "error", last_error_text(), NULL);
			return rc;
		}
	}
	*complete = v->plan.completes && !p->revocation_pending;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Pass                                                                                        */

static void now_rfc3339(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int tau_ws_pass_begin(ws_pass *p, tau_ws_controller *ctl, const char *name)
{
	int rc;

	memset(p, 0, sizeof(*p));
	p->ctl = ctl;
	p->name = name;
	now_rfc3339(p->now, sizeof(p->now));
	rc = tau_kube_get(&p->ws, ctl->client, &tau_ws_res_workspaces, ctl->system_namespace, name);
	if (rc == -TAU_ENOTFOUND)
		return 0; /* gone: nothing to do */
	if (rc != 0)
		return tau_error_wrap("reading workspace %s", name);
	p->status = cJSON_GetObjectItemCaseSensitive(p->ws, "status");
	p->spec_ok = tau_ws_desired_spec_from_json(&p->spec, p->ws) == 0;
	if (!p->spec_ok)
		tau_ws_namespace_refuse(&p->refusal, TAU_WS_REASON_INVALID_SPEC, false,
		                        "workspace %s: %s", name, tau_error_last()->msg);
	if ((rc = tau_ws_config_load(&p->cfg, ctl)) != 0)
		return rc;
	if ((rc = tau_kube_informer_snapshot(&p->all, ctl->inf[WS_INF_WORKSPACES])) != 0)
		return rc;
	p->prev_ns = jstr(p->status, "target.resolvedNamespace");
	p->sin.workspace = name;
	p->sin.now = p->now;
	p->sin.previous = p->status;
	if (p->spec_ok) {
		p->sin.spec = &p->spec;
		p->sin.generation = p->spec.generation;
	} else {
		tau_json_get_int(&p->sin.generation, p->ws, "metadata.generation");
	}
	return 0;
}

void tau_ws_pass_end(ws_pass *p)
{
	old_view_clear(p->old);
	cJSON_Delete(p->all);
	tau_ws_config_clear(&p->cfg);
	cJSON_Delete(p->ws);
	memset(p, 0, sizeof(*p));
}

static int write_status(ws_pass *p)
{
	cJSON *st = NULL, *copy = NULL, *out = NULL;
	int rc;

	if ((rc = tau_ws_status_build(&st, &p->sin)) != 0)
		return rc;
	if (!tau_ws_status_changed(st, p->status)) {
		cJSON_Delete(st);
		return 0;
	}
	copy = cJSON_Duplicate(p->ws, true);
	if (copy == NULL) {
		cJSON_Delete(st);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "status");
	cJSON_AddItemToObject(copy, "status", st);
	rc = tau_kube_update_status(&out, p->ctl->client, &tau_ws_res_workspaces,
	                            p->ctl->system_namespace, copy);
	if (rc == 0) {
		const cJSON *c;
		char reasons[TAU_WS_MESSAGE_MAX] = "";
		size_t used = 0;

		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
		{
			int n = snprintf(reasons + used, sizeof(reasons) - used, "%s%s=%s/%s",
			                 used ? " " : "", jstr(c, "type"), jstr(c, "status"),
			                 jstr(c, "reason"));
			if (n < 0 || (size_t)n >= sizeof(reasons) - used)
				break;
			used += (size_t)n;
		}
		tau_log_info("workspace status", "workspace", p->name, "phase", jstr(st, "phase"),
		             "conditions", reasons, NULL);
	} else {
		tau_log_warn("workspace status write failed", "workspace", p->name, "error",
		             last_error_text(), NULL);
	}
	cJSON_Delete(out);
	cJSON_Delete(copy);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Phases                                                                                      */

int tau_ws_phase_deletion(ws_pass *p)
{
	bool complete = false;
	int rc;

	if (jstr(p->ws, "metadata.deletionTimestamp") == NULL)
		return WS_NEXT;
	if (!has_finalizer(p->ws))
		return WS_STOP;
	if (p->prev_ns == NULL) {
		rc = remove_finalizer(p);
		return rc != 0 ? rc : WS_STOP;
	}
	if (!p->spec_ok)
		memset(&p->spec, 0, sizeof(p->spec));
	if ((rc = old_ns_observe(p, p->prev_ns, true)) != 0)
		return rc;
	rc = run_plan(p, &complete);
	return rc != 0 ? rc : WS_STOP;
}

int tau_ws_phase_finalizer(ws_pass *p)
{
	cJSON *copy, *md, *fin, *out = NULL;
	int rc;

	if (!has_finalizer(p->ws)) {
		copy = cJSON_Duplicate(p->ws, true);
		if (copy == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		md = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
		fin = cJSON_GetObjectItemCaseSensitive(md, "finalizers");
		if (!cJSON_IsArray(fin)) {
			cJSON_DeleteItemFromObjectCaseSensitive(md, "finalizers");
			fin = cJSON_AddArrayToObject(md, "finalizers");
		}
		if (fin == NULL ||
		    !cJSON_AddItemToArray(fin, cJSON_CreateString(TAU_WS_FINALIZER))) {
			cJSON_Delete(copy);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		rc = tau_kube_update(&out, p->ctl->client, &tau_ws_res_workspaces,
		                     p->ctl->system_namespace, copy);
		cJSON_Delete(copy);
		if (rc != 0) {
			cJSON_Delete(out);
			return rc;
		}
		tau_log_info("workspace finalizer added", "workspace", p->name, "finalizer",
		             TAU_WS_FINALIZER, NULL);
		/* Continue on the object as written (fresh resourceVersion). */
		cJSON_Delete(p->ws);
		p->ws = out;
		p->status = cJSON_GetObjectItemCaseSensitive(p->ws, "status");
		p->sin.previous = p->status;
		if (p->spec_ok && tau_ws_desired_spec_from_json(&p->spec, p->ws) != 0)
			p->spec_ok = false;
	}
	if (p->spec_ok)
		return WS_NEXT;
	p->sin.spec = NULL;
	p->sin.refusal = &p->refusal;
	rc = tau_ws_phase_status(p);
	return rc < 0 ? rc : WS_STOP;
}

int tau_ws_phase_v0(ws_pass *p)
{
	size_t n = (size_t)cJSON_GetArraySize(p->all), self = n, i = 0;
	tau_ws_v0_entry *v0;
	const cJSON *it;
	int rc;

	if (p->ctl->multiple_workspaces)
		return WS_NEXT; /* the MultipleWorkspaces gate lifts the v0 block */
	v0 = calloc(n + 1, sizeof(*v0));
	if (v0 == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, p->all)
	{
		v0[i].name = jstr(it, "metadata.name");
		v0[i].creation_timestamp = jstr(it, "metadata.creationTimestamp");
		v0[i].deletion_timestamp = jstr(it, "metadata.deletionTimestamp");
		if (same_str(v0[i].name, p->name))
			self = i;
		i++;
	}
	if (self == n) { /* the cache lags the live read: count ourselves in */
		v0[n].name = p->name;
		v0[n].creation_timestamp = p->spec.creation_timestamp;
		self = n++;
	}
	rc = tau_ws_desired_v0_decide(&p->refusal, v0, n, self);
	free(v0);
	if (rc != 0)
		return rc;
	if (p->refusal.reason == NULL)
		return WS_NEXT;
	p->sin.refusal = &p->refusal;
	rc = tau_ws_phase_status(p);
	return rc < 0 ? rc : WS_STOP;
}

/* The other workspaces' claims, with strings lent from p->all. */
static int build_claims(tau_ws_claim **out, size_t *n, const ws_pass *p)
{
	tau_ws_claim *claims = calloc((size_t)cJSON_GetArraySize(p->all) + 1, sizeof(*claims));
	const cJSON *it;

	if (claims == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	*n = 0;
	cJSON_ArrayForEach(it, p->all)
	{
		const char *name = jstr(it, "metadata.name"), *cand = NULL;
		tau_ws_ns_input ci = {0};
		tau_ws_refusal why;

		if (name == NULL || strcmp(name, p->name) == 0)
			continue;
		ci.workspace = name;
		ci.target_namespace = jstr(it, "spec.target.namespace");
		ci.system_namespace = p->ctl->system_namespace;
		ci.map_set = p->cfg.map_set;
		ci.map = p->cfg.map;
		ci.n_map = p->cfg.n_map;
		if (tau_ws_namespace_candidate(&cand, &why, &ci) != 0)
			cand = NULL;
		claims[*n] = (tau_ws_claim){
		        name, cand, jstr(it, "metadata.creationTimestamp"),
		        cand != NULL &&
		                same_str(jstr(it, "status.target.resolvedNamespace"), cand)};
		(*n)++;
	}
	*out = claims;
	return 0;
}

int tau_ws_phase_namespace(ws_pass *p)
{
	tau_ws_ns_input in = {0};
	tau_ws_claim *claims = NULL;
	size_t n_claims = 0;
	const char *cand = NULL;
	tau_ws_refusal why;
	cJSON *ns_obj = NULL, *nsd = NULL;
	int rc;

	if (p->cfg.mode == TAU_WS_NS_OPERATOR && p->cfg.conflict[0] != '\0') {
		/* Contradicting allowlist sources: nothing is written until one goes. */
		tau_ws_namespace_refuse(&p->refusal, TAU_WS_REASON_ALLOWLIST_CONFLICT, true, "%s",
		                        p->cfg.conflict);
		p->sin.refusal = &p->refusal;
		p->sin.resolved_namespace = p->prev_ns;
		tau_log_warn("workspace refused", "workspace", p->name, "reason", p->cfg.conflict,
		             NULL);
		rc = tau_ws_phase_status(p);
		requeue_soon(p, 30000);
		return rc < 0 ? rc : WS_STOP;
	}
	if ((rc = build_claims(&claims, &n_claims, p)) != 0)
		return rc;
	in.workspace = p->name;
	in.creation_timestamp = p->spec.creation_timestamp;
	in.target_namespace = p->spec.target_namespace;
	in.create_namespace = p->spec.create_namespace;
	in.adopt = p->spec.adopt;
	in.system_namespace = p->ctl->system_namespace;
	in.mode = p->cfg.mode;
	in.allowlist = p->cfg.allowlist;
	in.map_set = p->cfg.map_set;
	in.map = p->cfg.map;
	in.n_map = p->cfg.n_map;
	in.allow_shared = p->cfg.allow_shared;
	in.claims = claims;
	in.n_claims = n_claims;
	if (tau_ws_namespace_candidate(&cand, &why, &in) == 0) {
		in.established = same_str(p->prev_ns, cand);
		if (tau_kube_informer_get(&ns_obj, p->ctl->inf[WS_INF_NAMESPACES], NULL, cand) ==
		            0 &&
		    tau_ws_namespace_observe(&p->observed, ns_obj) == 0)
			in.observed = &p->observed;
	}
	rc = tau_ws_namespace_resolve(&p->nsr, &in);
	free(claims);
	if (rc != 0)
		goto out;
	p->sin.ns = &p->nsr;
	p->sin.local_queue = tau_ws_desired_local_queue_name(&p->spec, p->cfg.default_queue);
	if ((rc = tau_ws_desired_cluster_queue_name(p->cq_name, sizeof(p->cq_name), &p->spec,
	                                            p->cfg.default_queue)) != 0)
		goto out;
	p->sin.cluster_queue = p->cq_name;
	if (!p->nsr.resolved) {
		/* Refused: nothing is written; keep naming the namespace still holding our objects.
		 */
		p->sin.resolved_namespace = p->prev_ns;
		rc = tau_ws_phase_status(p);
		if (p->nsr.refusal.retryable)
			requeue_soon(p, 30000);
		rc = rc < 0 ? rc : WS_STOP;
		goto out;
	}
	/* The namespace itself (Managed mode). */
	if ((rc = tau_ws_desired_namespace(&nsd, &p->spec, &p->nsr)) != 0)
		goto out;
	rc = WS_NEXT;
	if (nsd != NULL) {
		tau_ws_obj_check chk;

		ensure(p, &tau_kube_res_namespaces, nsd, false, &chk);
		p->n_drift = 0; /* labels added on adoption are not drift */
		if (chk.state != TAU_WS_OBJ_OK) {
			tau_log_warn("workspace namespace not ready", "workspace", p->name,
			             "namespace", p->nsr.namespace_name, "error", chk.detail, NULL);
			requeue_soon(p, 2000);
			rc = WS_STOP;
		}
	}
out:
	cJSON_Delete(ns_obj);
	cJSON_Delete(nsd);
	return rc;
}

int tau_ws_phase_retarget(ws_pass *p)
{
	bool complete = false;
	int rc;

	if (p->prev_ns == NULL || strcmp(p->prev_ns, p->nsr.namespace_name) == 0)
		return WS_NEXT;
	if ((rc = old_ns_observe(p, p->prev_ns, false)) != 0 || (rc = run_plan(p, &complete)) != 0)
		return rc;
	if (!complete) {
		p->sin.resolved_namespace = p->prev_ns;
		tau_log_info("workspace retarget draining", "workspace", p->name, "from",
		             p->prev_ns, "to", p->nsr.namespace_name, "reason",
		             p->old->routes.decision.refusal.reason != NULL
		                     ? p->old->routes.decision.refusal.message
		                     : p->old->plan.message,
		             NULL);
	}
	p->n_drift = 0;
	return WS_NEXT;
}

int tau_ws_phase_identity(ws_pass *p)
{
	const char *keep = p->spec.has_workload_identity ? p->spec.wi_service_account : NULL;
	prune_ctx ctx;

	/* Obsolete workload-identity ServiceAccounts here go before access is granted. */
	if (prune(p, &tau_ws_res_serviceaccounts, p->nsr.namespace_name, keep,
	          "obsolete workload identity", &ctx) != 0 ||
	    ctx.failed[0] != '\0') {
		char *detail = pass_text(p);

		p->revocation_pending = true;
		snprintf(detail, TAU_WS_MESSAGE_MAX, "ServiceAccount %.900s",
		         ctx.failed[0] != '\0' ? ctx.failed : last_error_text());
		p->sin.revocation_detail = detail;
	}
	p->sin.revocation_pending = p->revocation_pending;
	return WS_NEXT;
}

int tau_ws_phase_access(ws_pass *p)
{
	cJSON *rb = NULL;
	char rbn[300];
	prune_ctx ctx;
	int rc;

	if ((rc = tau_ws_desired_rolebinding(&rb, &p->spec, p->nsr.namespace_name)) != 0)
		return rc;
	snprintf(rbn, sizeof(rbn), "%s%s", TAU_WS_ROLEBINDING_PREFIX, p->name);
	if (rb == NULL || p->revocation_pending) {
		/* No binding wanted (cluster-wide), or none allowed yet: every binding we own
		 * here goes, including one written while the spec said workspace-rbac. */
		rc = prune(p, &tau_ws_res_rolebindings, p->nsr.namespace_name, NULL,
		           rb == NULL ? "cluster-wide authorization: no researcher binding"
		                      : "identity revocation pending",
		           &ctx);
		if (rc != 0 || ctx.failed[0] != '\0') {
			char *detail = pass_text(p);

			snprintf(detail, TAU_WS_MESSAGE_MAX, "removing RoleBinding %.900s failed",
			         ctx.failed[0] != '\0' ? ctx.failed : last_error_text());
			p->sin.rolebinding = (tau_ws_obj_check){TAU_WS_OBJ_ERROR, detail};
			requeue_soon(p, 5000);
		}
		cJSON_Delete(rb);
		return WS_NEXT;
	}
	if (p->ctl->researcher_role != NULL)
		cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(rb, "roleRef"), "name",
		                          cJSON_CreateString(p->ctl->researcher_role));
	ensure(p, &tau_ws_res_rolebindings, rb, was_true(p, TAU_WS_COND_RBAC_READY),
	       &p->sin.rolebinding);
	/* Bindings of another name we own here are not wanted either. */
	if (prune(p, &tau_ws_res_rolebindings, p->nsr.namespace_name, rbn,
	          "not part of the workspace's access", &ctx) != 0)
		requeue_soon(p, 5000);
	cJSON_Delete(rb);
	return WS_NEXT;
}

/* LocalQueues we own here under another name (a former spec.queue) go once drained. */
static void prune_stale_queues(ws_pass *p, const char *lq_name)
{
	cJSON *lqs = NULL;
	const char *stale[TAU_WS_PLAN_MAX];
	size_t n = 0;
	const cJSON *it;
	ws_routes *r;

	if (list_ours(&lqs, p, &tau_ws_res_localqueues, p->nsr.namespace_name) != 0) {
		requeue_soon(p, 5000);
		return;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(lqs, "items"))
	{
		const char *name = jstr(it, "metadata.name");

		if (name != NULL && !same_str(name, lq_name) && n < TAU_WS_PLAN_MAX)
			stale[n++] = name;
	}
	if (n == 0 || (r = calloc(1, sizeof(*r))) == NULL) {
		cJSON_Delete(lqs);
		return;
	}
	if (routes_observe(r, p, p->nsr.namespace_name, stale, n) == 0 && r->decision.may_cleanup) {
		for (size_t i = 0; i < n; i++)
			if (delete_owned(
			            p, &tau_ws_res_localqueues, p->nsr.namespace_name, stale[i],
			            "drained: the workspace's queue has another name now") != 0)
				requeue_soon(p, 5000);
	} else {
		tau_log_info("workspace former queue waits for its work to finish", "workspace",
		             p->name, "namespace", p->nsr.namespace_name, "reason",
		             r->decision.refusal.message, NULL);
		requeue_soon(p, p->ctl->drain_poll_ms);
	}
	routes_clear(r);
	free(r);
	cJSON_Delete(lqs);
}

int tau_ws_phase_queue(ws_pass *p)
{
	const char *lq_reason = prev_condition(p, TAU_WS_COND_QUEUE_READY, "reason");
	cJSON *lq = NULL, *cq = NULL;
	int rc;

	if ((rc = tau_ws_desired_local_queue(&lq, &p->spec, p->nsr.namespace_name,
	                                     p->cfg.default_queue)) != 0)
		return rc;
	/* The LocalQueue existed when QueueReady was True or only the ClusterQueue was missing. */
	ensure(p, &tau_ws_res_localqueues, lq,
	       was_true(p, TAU_WS_COND_QUEUE_READY) ||
	               same_str(lq_reason, TAU_WS_REASON_CQ_NOT_FOUND) ||
	               same_str(lq_reason, TAU_WS_REASON_CQ_ERROR),
	       &p->sin.lq);
	prune_stale_queues(p, jstr(lq, "metadata.name"));
	cJSON_Delete(lq);
	if (!tau_kube_informer_has_synced(p->ctl->inf[WS_INF_CQ])) {
		p->sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_ERROR,
		                               "the ClusterQueue list has not been read yet"};
		requeue_soon(p, 2000);
	} else if (tau_kube_informer_get(&cq, p->ctl->inf[WS_INF_CQ], NULL, p->cq_name) == 0) {
		p->sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_OK, NULL};
	} else {
		p->sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_MISSING, NULL};
	}
	cJSON_Delete(cq);
	return WS_NEXT;
}

int tau_ws_phase_workload_identity(ws_pass *p)
{
	cJSON *sa = NULL;
	int rc;

	if ((rc = tau_ws_desired_service_account(&sa, &p->spec, p->nsr.namespace_name)) != 0)
		return rc;
	if (sa != NULL)
		ensure(p, &tau_ws_res_serviceaccounts, sa, was_true(p, TAU_WS_COND_WI_READY),
		       &p->sin.sa);
	cJSON_Delete(sa);
	return WS_NEXT;
}

int tau_ws_phase_status(ws_pass *p)
{
	int rc;

	p->sin.drift = p->drift;
	p->sin.n_drift = p->n_drift;
	rc = write_status(p);
	if (rc == 0 && p->n_drift > 0)
		requeue_soon(p, 2000); /* settle DriftCorrected into NoDrift once stable */
	return rc < 0 ? rc : WS_STOP;
}

int tau_ws_reconcile(void *arg, tau_ctl *ctl, const char *key, tau_ctl_result *res)
{
	static int (*const phases[])(ws_pass *) = {
	        tau_ws_phase_deletion,  tau_ws_phase_finalizer, tau_ws_phase_v0,
	        tau_ws_phase_namespace, tau_ws_phase_retarget,  tau_ws_phase_identity,
	        tau_ws_phase_access,    tau_ws_phase_queue,     tau_ws_phase_workload_identity,
	        tau_ws_phase_status,
	};
	tau_ws_controller *wc = arg;
	ws_pass *p = malloc(sizeof(*p));
	int rc;

	(void)ctl;
	if (p == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	rc = tau_ws_pass_begin(p, wc, key);
	for (size_t i = 0; rc == 0 && p->ws != NULL && i < sizeof(phases) / sizeof(phases[0]);
	     i++) {
		rc = phases[i](p);
		if (rc == WS_STOP) {
			rc = 0;
			break;
		}
	}
	atomic_fetch_add(&wc->passes, 1);
	res->requeue_after_ms = p->requeue_ms;
	tau_ws_pass_end(p);
	free(p);
	return rc;
}
