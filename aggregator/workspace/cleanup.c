/*
 * cleanup.c - draining and cleaning a namespace the workspace no longer
 * uses (it moved elsewhere, or the workspace is being deleted), and a
 * LocalQueue of a former queue name.
 *
 * The one idea: routing objects go only after the work routed through them
 * is done.  What is observed (our objects there, the Workloads, Jobs,
 * RayJobs, RayServices and Deployments routing through our queues) goes to
 * the pure drain module, whose ordered plan runs here step by step; a plan
 * that waits makes the pass come back after drain_poll_ms, and the status
 * keeps naming the old namespace so a restart resumes the drain.
 */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
			snprintf(r->api_error[k], sizeof(r->api_error[k]), "%s",
			         tau_ws_last_error());
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

void tau_ws_old_view_free(ws_old_view *v)
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
	return tau_ws_same(tau_ws_label(ns_obj, "labels", TAU_WS_LABEL_MANAGED_BY),
	                   TAU_WS_MANAGED_BY) &&
	       tau_ws_same(tau_ws_label(ns_obj, "labels", TAU_WS_LABEL_WORKSPACE), ws);
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
	tau_ws_old_view_free(p->old);
	p->old = v;
	snprintf(v->binding_name, sizeof(v->binding_name), "%s%s", TAU_WS_ROLEBINDING_PREFIX,
	         p->name);
	if ((rc = tau_ws_pass_list_owned(&v->rbs, p, &tau_ws_res_rolebindings, old)) != 0 ||
	    (rc = tau_ws_pass_list_owned(&v->lqs, p, &tau_ws_res_localqueues, old)) != 0 ||
	    (rc = tau_ws_pass_list_owned(&v->sas, p, &tau_ws_res_serviceaccounts, old)) != 0)
		return tau_error_wrap("listing owned objects in %s", old);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v->rbs, "items"))
	{
		if (tau_ws_same(tau_ws_str(it, "metadata.name"), v->binding_name))
			v->in.binding_present = true;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v->lqs, "items"))
	{
		if (v->n_lq < TAU_WS_PLAN_MAX)
			v->lq_names[v->n_lq++] = tau_ws_str(it, "metadata.name");
	}
	it = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v->sas, "items"), 0);
	if (it != NULL) {
		v->in.sa_name = tau_ws_str(it, "metadata.name");
		v->in.sa_client_id =
		        tau_ws_label(it, "annotations", TAU_WS_ANNOTATION_WI_CLIENT_ID);
		v->in.sa_terminating = tau_ws_str(it, "metadata.deletionTimestamp") != NULL;
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
		const char *on = tau_ws_str(it, "metadata.name");

		if (on != NULL && strcmp(on, p->name) != 0 &&
		    tau_ws_same(tau_ws_str(it, "status.target.resolvedNamespace"), old))
			v->in.namespace_shared = true;
	}
	v->in.drain = &v->routes.decision;
	return tau_ws_drain_plan(&v->plan, &v->in);
}

bool tau_ws_has_finalizer(const cJSON *ws)
{
	return tau_apply_has_finalizer(ws, TAU_WS_FINALIZER);
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
		tau_ws_pass_ensure(p, &tau_ws_res_rolebindings, rb, true, &chk);
		p->n_drift = 0; /* the old namespace's binding is not drift */
	}
	cJSON_Delete(rb);
	return rc;
}

/* The steps that delete one object of the old namespace: its resource and the reason logged. */
static const struct plain_delete {
	const tau_kube_resource *res;
	const char *why;
} plain_deletes[] = {
        [TAU_WS_STEP_REMOVE_RESEARCHER_BINDING] = {&tau_ws_res_rolebindings,
                                                   "researcher access withdrawn from the "
                                                   "namespace left"},
        [TAU_WS_STEP_DELETE_LOCAL_QUEUE] = {&tau_ws_res_localqueues,
                                            "drained: routing removed from the namespace left"},
        [TAU_WS_STEP_DELETE_SERVICE_ACCOUNT] = {&tau_ws_res_serviceaccounts,
                                                "drained: workload identity removed from the "
                                                "namespace left"},
};

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
			rc = tau_ws_pass_delete(p, &tau_ws_res_serviceaccounts, s->namespace_name,
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
		case TAU_WS_STEP_DELETE_LOCAL_QUEUE:
		case TAU_WS_STEP_DELETE_SERVICE_ACCOUNT:
			rc = tau_ws_pass_delete(p, plain_deletes[s->kind].res, s->namespace_name,
			                        s->name, plain_deletes[s->kind].why);
			break;
		case TAU_WS_STEP_GRANT_RESEARCHER_BINDING:
			rc = grant_binding(p, s->namespace_name);
			break;
		case TAU_WS_STEP_WAIT_REVOCATION:
		case TAU_WS_STEP_WAIT_DRAIN:
			tau_log_info("workspace cleanup waits", "workspace", p->name, "namespace",
			             v->in.namespace_name, "reason", v->plan.message, NULL);
			tau_ws_pass_requeue(p, p->ctl->drain_poll_ms);
			return 0;
		case TAU_WS_STEP_DELETE_NAMESPACE:
			if (p->cfg.mode == TAU_WS_NS_MANAGED)
				rc = tau_ws_pass_delete(p, &tau_kube_res_namespaces, NULL,
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
			             s->namespace_name, "error", tau_ws_last_error(), NULL);
			return rc;
		}
	}
	*complete = v->plan.completes && !p->revocation_pending;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Phases                                                                                      */

int tau_ws_phase_deletion(ws_pass *p)
{
	bool complete = false;
	int rc;

	if (tau_ws_str(p->ws, "metadata.deletionTimestamp") == NULL)
		return WS_NEXT;
	if (!tau_ws_has_finalizer(p->ws))
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

/* LocalQueues we own here under another name (a former spec.queue) go once drained. */
void tau_ws_prune_stale_queues(ws_pass *p, const char *lq_name)
{
	cJSON *lqs = NULL;
	const char *stale[TAU_WS_PLAN_MAX];
	size_t n = 0;
	const cJSON *it;
	ws_routes *r;

	if (tau_ws_pass_list_owned(&lqs, p, &tau_ws_res_localqueues, p->nsr.namespace_name) != 0) {
		tau_ws_pass_requeue(p, 5000);
		return;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(lqs, "items"))
	{
		const char *name = tau_ws_str(it, "metadata.name");

		if (name != NULL && !tau_ws_same(name, lq_name) && n < TAU_WS_PLAN_MAX)
			stale[n++] = name;
	}
	if (n == 0 || (r = calloc(1, sizeof(*r))) == NULL) {
		cJSON_Delete(lqs);
		return;
	}
	if (routes_observe(r, p, p->nsr.namespace_name, stale, n) == 0 && r->decision.may_cleanup) {
		for (size_t i = 0; i < n; i++)
			if (tau_ws_pass_delete(
			            p, &tau_ws_res_localqueues, p->nsr.namespace_name, stale[i],
			            "drained: the workspace's queue has another name now") != 0)
				tau_ws_pass_requeue(p, 5000);
	} else {
		tau_log_info("workspace former queue waits for its work to finish", "workspace",
		             p->name, "namespace", p->nsr.namespace_name, "reason",
		             r->decision.refusal.message, NULL);
		tau_ws_pass_requeue(p, p->ctl->drain_poll_ms);
	}
	routes_clear(r);
	free(r);
	cJSON_Delete(lqs);
}
