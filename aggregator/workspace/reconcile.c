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
 * status.target.resolvedNamespace names it; cleanup.c drains and cleans it
 * when the resolution moves elsewhere or the workspace is deleted.  Object
 * writes go through objects.c.
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
	p->prev_ns = tau_ws_str(p->status, "target.resolvedNamespace");
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
	tau_ws_old_view_free(p->old);
	cJSON_Delete(p->all);
	tau_ws_config_clear(&p->cfg);
	cJSON_Delete(p->ws);
	memset(p, 0, sizeof(*p));
}

/* A condition worth a Warning: drift found, or one of the Ready conditions False. */
static bool warning_condition(const char *type, const char *status)
{
	if (strcmp(type, TAU_WS_COND_DRIFT) == 0)
		return strcmp(status, "True") == 0;
	return strcmp(status, "False") == 0;
}

void tau_ws_pass_event(ws_pass *p, const char *type, const char *reason, const char *message)
{
	if (p->ws == NULL)
		return; /* the workspace is gone: nothing to attach the Event to */
	tau_controller_record_event(p->ctl->client, "workspace", p->ws, type, reason, message);
}

static int write_status(ws_pass *p)
{
	static const char *const our_types[] = {TAU_WS_COND_RBAC_READY, TAU_WS_COND_QUEUE_READY,
	                                        TAU_WS_COND_WI_READY, TAU_WS_COND_DRIFT, NULL};
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
			                 used ? " " : "", tau_ws_str(c, "type"),
			                 tau_ws_str(c, "status"), tau_ws_str(c, "reason"));
			if (n < 0 || (size_t)n >= sizeof(reasons) - used)
				break;
			used += (size_t)n;
		}
		tau_log_info("workspace status", "workspace", p->name, "phase",
		             tau_ws_str(st, "phase"), "conditions", reasons, NULL);
		/* Only now that the status says it: one Event per condition that moved. */
		tau_controller_record_condition_events(
		        p->ctl->client, "workspace", p->ws,
		        p->status != NULL
		                ? cJSON_GetObjectItemCaseSensitive(p->status, "conditions")
		                : NULL,
		        cJSON_GetObjectItemCaseSensitive(st, "conditions"), our_types,
		        warning_condition);
	} else {
		tau_log_warn("workspace status write failed", "workspace", p->name, "error",
		             tau_ws_last_error(), NULL);
	}
	cJSON_Delete(out);
	cJSON_Delete(copy);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Phases                                                                                      */

int tau_ws_phase_finalizer(ws_pass *p)
{
	cJSON *copy, *md, *fin, *out = NULL;
	int rc;

	if (!tau_ws_has_finalizer(p->ws)) {
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
		v0[i].name = tau_ws_str(it, "metadata.name");
		v0[i].creation_timestamp = tau_ws_str(it, "metadata.creationTimestamp");
		v0[i].deletion_timestamp = tau_ws_str(it, "metadata.deletionTimestamp");
		if (tau_ws_same(v0[i].name, p->name))
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
		const char *name = tau_ws_str(it, "metadata.name"), *cand = NULL;
		tau_ws_ns_input ci = {0};
		tau_ws_refusal why;

		if (name == NULL || strcmp(name, p->name) == 0)
			continue;
		ci.workspace = name;
		ci.target_namespace = tau_ws_str(it, "spec.target.namespace");
		ci.system_namespace = p->ctl->system_namespace;
		ci.map_set = p->cfg.map_set;
		ci.map = p->cfg.map;
		ci.n_map = p->cfg.n_map;
		if (tau_ws_namespace_candidate(&cand, &why, &ci) != 0)
			cand = NULL;
		claims[*n] = (tau_ws_claim){
		        name, cand, tau_ws_str(it, "metadata.creationTimestamp"),
		        cand != NULL &&
		                tau_ws_same(tau_ws_str(it, "status.target.resolvedNamespace"),
		                            cand)};
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
		tau_ws_pass_requeue(p, 30000);
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
		in.established = tau_ws_same(p->prev_ns, cand);
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
			tau_ws_pass_requeue(p, 30000);
		rc = rc < 0 ? rc : WS_STOP;
		goto out;
	}
	/* The namespace itself (Managed mode). */
	if ((rc = tau_ws_desired_namespace(&nsd, &p->spec, &p->nsr)) != 0)
		goto out;
	rc = WS_NEXT;
	if (nsd != NULL) {
		tau_ws_obj_check chk;

		tau_ws_pass_ensure(p, &tau_kube_res_namespaces, nsd, false, &chk);
		p->n_drift = 0; /* labels added on adoption are not drift */
		if (chk.state != TAU_WS_OBJ_OK) {
			tau_log_warn("workspace namespace not ready", "workspace", p->name,
			             "namespace", p->nsr.namespace_name, "error", chk.detail, NULL);
			tau_ws_pass_requeue(p, 2000);
			rc = WS_STOP;
		}
	}
out:
	cJSON_Delete(ns_obj);
	cJSON_Delete(nsd);
	return rc;
}

int tau_ws_phase_identity(ws_pass *p)
{
	const char *keep = p->spec.has_workload_identity ? p->spec.wi_service_account : NULL;
	ws_prune_ctx ctx;

	/* Obsolete workload-identity ServiceAccounts here go before access is granted. */
	if (tau_ws_pass_prune(p, &tau_ws_res_serviceaccounts, p->nsr.namespace_name, keep,
	                      "obsolete workload identity", &ctx) != 0 ||
	    ctx.failed[0] != '\0') {
		char *detail = tau_ws_pass_text(p);

		p->revocation_pending = true;
		snprintf(detail, TAU_WS_MESSAGE_MAX, "ServiceAccount %.900s",
		         ctx.failed[0] != '\0' ? ctx.failed : tau_ws_last_error());
		p->sin.revocation_detail = detail;
	}
	p->sin.revocation_pending = p->revocation_pending;
	return WS_NEXT;
}

int tau_ws_phase_access(ws_pass *p)
{
	cJSON *rb = NULL;
	char rbn[300];
	ws_prune_ctx ctx;
	int rc;

	if ((rc = tau_ws_desired_rolebinding(&rb, &p->spec, p->nsr.namespace_name)) != 0)
		return rc;
	snprintf(rbn, sizeof(rbn), "%s%s", TAU_WS_ROLEBINDING_PREFIX, p->name);
	if (rb == NULL || p->revocation_pending) {
		/* No binding wanted (cluster-wide), or none allowed yet: every binding we own
		 * here goes, including one written while the spec said workspace-rbac. */
		rc = tau_ws_pass_prune(p, &tau_ws_res_rolebindings, p->nsr.namespace_name, NULL,
		                       rb == NULL
		                               ? "cluster-wide authorization: no researcher binding"
		                               : "identity revocation pending",
		                       &ctx);
		if (rc != 0 || ctx.failed[0] != '\0') {
			char *detail = tau_ws_pass_text(p);

			snprintf(detail, TAU_WS_MESSAGE_MAX, "removing RoleBinding %.900s failed",
			         ctx.failed[0] != '\0' ? ctx.failed : tau_ws_last_error());
			p->sin.rolebinding = (tau_ws_obj_check){TAU_WS_OBJ_ERROR, detail};
			tau_ws_pass_requeue(p, 5000);
		}
		cJSON_Delete(rb);
		return WS_NEXT;
	}
	if (p->ctl->researcher_role != NULL)
		cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(rb, "roleRef"), "name",
		                          cJSON_CreateString(p->ctl->researcher_role));
	tau_ws_pass_ensure(p, &tau_ws_res_rolebindings, rb,
	                   tau_ws_pass_was_true(p, TAU_WS_COND_RBAC_READY), &p->sin.rolebinding);
	/* Bindings of another name we own here are not wanted either. */
	if (tau_ws_pass_prune(p, &tau_ws_res_rolebindings, p->nsr.namespace_name, rbn,
	                      "not part of the workspace's access", &ctx) != 0)
		tau_ws_pass_requeue(p, 5000);
	cJSON_Delete(rb);
	return WS_NEXT;
}

int tau_ws_phase_queue(ws_pass *p)
{
	const char *lq_reason = tau_ws_pass_condition(p, TAU_WS_COND_QUEUE_READY, "reason");
	cJSON *lq = NULL, *cq = NULL;
	int rc;

	if ((rc = tau_ws_desired_local_queue(&lq, &p->spec, p->nsr.namespace_name,
	                                     p->cfg.default_queue)) != 0)
		return rc;
	/* The LocalQueue existed when QueueReady was True or only the ClusterQueue was missing. */
	tau_ws_pass_ensure(p, &tau_ws_res_localqueues, lq,
	                   tau_ws_pass_was_true(p, TAU_WS_COND_QUEUE_READY) ||
	                           tau_ws_same(lq_reason, TAU_WS_REASON_CQ_NOT_FOUND) ||
	                           tau_ws_same(lq_reason, TAU_WS_REASON_CQ_ERROR),
	                   &p->sin.lq);
	tau_ws_prune_stale_queues(p, tau_ws_str(lq, "metadata.name"));
	cJSON_Delete(lq);
	if (!tau_kube_informer_has_synced(p->ctl->inf[WS_INF_CQ])) {
		p->sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_ERROR,
		                               "the ClusterQueue list has not been read yet"};
		tau_ws_pass_requeue(p, 2000);
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
		tau_ws_pass_ensure(p, &tau_ws_res_serviceaccounts, sa,
		                   tau_ws_pass_was_true(p, TAU_WS_COND_WI_READY), &p->sin.sa);
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
		tau_ws_pass_requeue(p, 2000); /* settle DriftCorrected into NoDrift once stable */
	return rc < 0 ? rc : WS_STOP;
}

int tau_ws_reconcile(void *arg, tau_controller *ctl, const char *key, tau_controller_result *res)
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
