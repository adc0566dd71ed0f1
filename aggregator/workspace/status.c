/*
 * status.c - conditions, phase and status object of a TauWorkspace.
 *
 * The one idea: the status is a pure function of what the reconcile pass
 * found plus the previous status, and the previous status contributes only
 * lastTransitionTime (kept while a condition's status is unchanged).  So a
 * pass that finds the same world produces byte-for-byte the same status, and
 * tau_ws_status_changed lets the loop skip the write.  Each condition is
 * decided by the first cause in a fixed order (refusal, namespace, then the
 * object itself), so one root cause shows one reason.
 */
#include "status.h"

#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Most drift items named in one message before "and N more". */
#define DRIFT_NAMED_MAX 3

static void set(tau_ws_condition *c, tau_ws_cond_status status, const char *reason, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

static void set(tau_ws_condition *c, tau_ws_cond_status status, const char *reason, const char *fmt,
                ...)
{
	va_list ap;

	c->status = status;
	c->reason = reason;
	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
}

static const char *detail_or(const tau_ws_obj_check *chk, const char *fallback)
{
	return chk->detail != NULL && chk->detail[0] != '\0' ? chk->detail : fallback;
}

const char *tau_ws_status_cond_name(tau_ws_cond_status s)
{
	static const char *const names[] = {[TAU_WS_FALSE] = "False", [TAU_WS_TRUE] = "True"};

	return tau_str_enum_name(names, TAU_N_ELEMENTS(names), (int)s, "Unknown");
}

const char *tau_ws_status_phase(tau_ws_cond_status rbac, tau_ws_cond_status queue,
                                tau_ws_cond_status drift)
{
	if (drift == TAU_WS_TRUE)
		return TAU_WS_PHASE_DEGRADED;
	if (rbac == TAU_WS_TRUE && queue == TAU_WS_TRUE)
		return TAU_WS_PHASE_READY;
	return TAU_WS_PHASE_PENDING;
}

/* The reasons of one object's condition when it is not as desired, and the default detail
 * of a mismatch. */
typedef struct obj_reasons {
	const char *missing, *mismatch, *not_owned, *error;
	const char *mismatch_detail;
} obj_reasons;

/*
 * The condition of an object the workspace owns that is missing, differs ("<obj> <differs>:
 * <detail>"), is not ours or could not be read; false (nothing set) when it is as desired.
 */
static bool obj_not_ready(tau_ws_condition *c, const tau_ws_obj_check *chk, const char *obj,
                          const char *differs, const char *ws_name, const obj_reasons *r)
{
	switch (chk->state) {
	case TAU_WS_OBJ_OK:
		return false;
	case TAU_WS_OBJ_MISSING:
		set(c, TAU_WS_FALSE, r->missing, "%s does not exist yet: %s", obj,
		    detail_or(chk, "it will be created"));
		break;
	case TAU_WS_OBJ_MISMATCH:
		set(c, TAU_WS_FALSE, r->mismatch, "%s %s: %s", obj, differs,
		    detail_or(chk, r->mismatch_detail));
		break;
	case TAU_WS_OBJ_NOT_OWNED:
		set(c, TAU_WS_FALSE, r->not_owned,
		    "%s exists but is not owned by workspace %s (%s); it is left alone", obj,
		    ws_name, detail_or(chk, "ownership labels do not match"));
		break;
	default:
		set(c, TAU_WS_FALSE, r->error, "%s: %s", obj, detail_or(chk, "API error"));
		break;
	}
	return true;
}

static void rbac_condition(tau_ws_condition *c, const tau_ws_status_input *in, const char *ns)
{
	static const obj_reasons rb_reasons = {
	        TAU_WS_REASON_ROLEBINDING_MISSING,   TAU_WS_REASON_ROLEBINDING_MISMATCH,
	        TAU_WS_REASON_ROLEBINDING_NOT_OWNED, TAU_WS_REASON_ROLEBINDING_ERROR,
	        "subjects or roleRef differ",
	};
	const tau_ws_spec *ws = in->spec;
	char rb[TAU_WS_NAMESPACE_BUF + 80];

	if (ws->authz == TAU_WS_AUTHZ_CLUSTER_WIDE && in->rolebinding.state == TAU_WS_OBJ_ERROR) {
		/* A binding from workspace-rbac days could not be removed: access stays. */
		set(c, TAU_WS_FALSE, TAU_WS_REASON_ROLEBINDING_ERROR,
		    "cluster-wide authorization, but a researcher RoleBinding written before "
		    "still grants access in namespace %s: %s",
		    ns, in->rolebinding.detail != NULL ? in->rolebinding.detail : "unknown error");
		return;
	}
	if (ws->authz == TAU_WS_AUTHZ_CLUSTER_WIDE) {
		set(c, TAU_WS_TRUE, TAU_WS_REASON_CLUSTER_WIDE,
		    "cluster-wide authorization: the platform grants researcher access to "
		    "namespace "
		    "%s; no RoleBinding is written",
		    ns);
		return;
	}
	if (in->revocation_pending) {
		set(c, TAU_WS_FALSE, TAU_WS_REASON_REVOCATION_PENDING,
		    "researcher access to namespace %s is withheld until the obsolete workload "
		    "identity is confirmed revoked: %s",
		    ns,
		    in->revocation_detail != NULL ? in->revocation_detail
		                                  : "revocation not confirmed yet");
		return;
	}
	snprintf(rb, sizeof(rb), "RoleBinding %s/%s%s", ns, TAU_WS_ROLEBINDING_PREFIX, ws->name);
	if (!obj_not_ready(c, &in->rolebinding, rb, "differs from the desired binding", ws->name,
	                   &rb_reasons))
		set(c, TAU_WS_TRUE, TAU_WS_REASON_ROLEBINDING_READY,
		    "%s binds %s \"%s\" to ClusterRole %s", rb,
		    ws->subject_kind != NULL ? ws->subject_kind : "subject",
		    ws->subject_name != NULL ? ws->subject_name : "",
		    TAU_WS_RESEARCHER_CLUSTER_ROLE);
}

static void queue_condition(tau_ws_condition *c, const tau_ws_status_input *in, const char *ns)
{
	const char *lqn = in->local_queue != NULL ? in->local_queue : "?";
	const char *cqn = in->cluster_queue != NULL ? in->cluster_queue : "?";
	static const obj_reasons lq_reasons = {
	        TAU_WS_REASON_LQ_MISSING, TAU_WS_REASON_LQ_MISMATCH,   TAU_WS_REASON_LQ_NOT_OWNED,
	        TAU_WS_REASON_LQ_ERROR,   "spec.clusterQueue differs",
	};
	char lq[TAU_WS_NAMESPACE_BUF + 300], differs[TAU_WS_NAMESPACE_BUF + 300];

	snprintf(lq, sizeof(lq), "LocalQueue %s/%s", ns, lqn);
	snprintf(differs, sizeof(differs), "does not submit to ClusterQueue %s", cqn);
	if (obj_not_ready(c, &in->lq, lq, differs, in->spec->name, &lq_reasons))
		return;
	switch (in->cq.state) {
	case TAU_WS_OBJ_OK:
		set(c, TAU_WS_TRUE, TAU_WS_REASON_LQ_READY, "%s submits to ClusterQueue %s", lq,
		    cqn);
		break;
	case TAU_WS_OBJ_ERROR:
		set(c, TAU_WS_FALSE, TAU_WS_REASON_CQ_ERROR, "ClusterQueue %s: %s", cqn,
		    detail_or(&in->cq, "API error"));
		break;
	default:
		set(c, TAU_WS_FALSE, TAU_WS_REASON_CQ_NOT_FOUND,
		    "ClusterQueue %s, which %s submits to, does not exist%s%s", cqn, lq,
		    in->cq.detail != NULL ? ": " : "", in->cq.detail != NULL ? in->cq.detail : "");
		break;
	}
}

static void wi_condition(tau_ws_condition *c, const tau_ws_status_input *in, const char *ns)
{
	static const obj_reasons sa_reasons = {
	        TAU_WS_REASON_SA_MISSING, TAU_WS_REASON_SA_MISMATCH,     TAU_WS_REASON_SA_NOT_OWNED,
	        TAU_WS_REASON_SA_ERROR,   "client or tenant ID differs",
	};
	const tau_ws_spec *ws = in->spec;
	char sa[TAU_WS_NAMESPACE_BUF + 300];

	snprintf(sa, sizeof(sa), "ServiceAccount %s/%s", ns, ws->wi_service_account);
	if (!obj_not_ready(c, &in->sa, sa, "workload identity annotations differ", ws->name,
	                   &sa_reasons))
		set(c, TAU_WS_TRUE, TAU_WS_REASON_SA_READY, "%s is annotated with %s %s", sa,
		    TAU_WS_ANNOTATION_WI_CLIENT_ID, ws->wi_client_id);
}

/* Append "Kind ns/name: what" items, at most DRIFT_NAMED_MAX, then "and N more". */
static void drift_list(char *buf, size_t len, const tau_ws_status_input *in, bool corrected)
{
	size_t used = strlen(buf), named = 0, total = 0;

	for (size_t i = 0; i < in->n_drift; i++) {
		const tau_ws_drift_item *d = &in->drift[i];

		if (d->corrected != corrected)
			continue;
		total++;
		if (named == DRIFT_NAMED_MAX || used >= len)
			continue;
		int n = snprintf(buf + used, len - used, "%s%s (%s)", named > 0 ? "; " : "",
		                 d->object != NULL ? d->object : "object",
		                 d->what != NULL && d->what[0] != '\0' ? d->what : "changed");
		if (n > 0)
			used += (size_t)n < len - used ? (size_t)n : len - used - 1;
		named++;
	}
	if (total > named && used < len)
		snprintf(buf + used, len - used, "; and %zu more", total - named);
}

static void drift_condition(tau_ws_condition *c, const tau_ws_status_input *in)
{
	bool any_open = false, any_fixed = false;

	for (size_t i = 0; i < in->n_drift; i++) {
		if (in->drift[i].corrected)
			any_fixed = true;
		else
			any_open = true;
	}
	if (any_open) {
		set(c, TAU_WS_TRUE, TAU_WS_REASON_OBJECT_DRIFTED,
		    "owned objects were changed out of band and could not be corrected: ");
		drift_list(c->message, sizeof(c->message), in, false);
	} else if (any_fixed) {
		set(c, TAU_WS_FALSE, TAU_WS_REASON_DRIFT_CORRECTED,
		    "out-of-band changes were corrected: ");
		drift_list(c->message, sizeof(c->message), in, true);
	} else {
		set(c, TAU_WS_FALSE, TAU_WS_REASON_NO_DRIFT,
		    "owned objects match the desired state");
	}
}

int tau_ws_status_conditions(tau_ws_condition out[TAU_WS_N_CONDITIONS],
                             const tau_ws_status_input *in)
{
	const tau_ws_refusal *why = NULL;
	const char *ns;
	bool wi_configured;

	if (out == NULL || in == NULL)
		return tau_error_set(TAU_EINVAL, "workspace status: missing input");
	memset(out, 0, sizeof(tau_ws_condition) * TAU_WS_N_CONDITIONS);
	out[TAU_WS_RBAC].type = TAU_WS_COND_RBAC_READY;
	out[TAU_WS_QUEUE].type = TAU_WS_COND_QUEUE_READY;
	out[TAU_WS_WI].type = TAU_WS_COND_WI_READY;
	out[TAU_WS_DRIFT].type = TAU_WS_COND_DRIFT;

	if (in->refusal != NULL && in->refusal->reason != NULL)
		why = in->refusal;
	else if (in->spec == NULL || in->ns == NULL)
		return tau_error_set(TAU_EINVAL, "workspace status: no spec or namespace result");
	else if (!in->ns->resolved)
		why = &in->ns->refusal;
	wi_configured = in->spec != NULL && in->spec->has_workload_identity;

	if (why != NULL) {
		const char *reason = why->reason != NULL ? why->reason : TAU_WS_REASON_INVALID_SPEC;

		set(&out[TAU_WS_RBAC], TAU_WS_FALSE, reason, "%s", why->message);
		set(&out[TAU_WS_QUEUE], TAU_WS_FALSE, reason, "%s", why->message);
		if (wi_configured)
			set(&out[TAU_WS_WI], TAU_WS_FALSE, reason, "%s", why->message);
		else
			set(&out[TAU_WS_WI], TAU_WS_TRUE, TAU_WS_REASON_WI_NOT_CONFIGURED,
			    "spec.workloadIdentity is unset; workloads run without Azure Workload "
			    "Identity");
		set(&out[TAU_WS_DRIFT], TAU_WS_UNKNOWN, TAU_WS_REASON_NOT_EVALUATED,
		    "drift is not evaluated while the workspace is not reconciled: %s",
		    why->reason != NULL ? why->reason : "refused");
		return 0;
	}
	ns = in->ns->namespace_name;
	rbac_condition(&out[TAU_WS_RBAC], in, ns);
	queue_condition(&out[TAU_WS_QUEUE], in, ns);
	if (wi_configured)
		wi_condition(&out[TAU_WS_WI], in, ns);
	else
		set(&out[TAU_WS_WI], TAU_WS_TRUE, TAU_WS_REASON_WI_NOT_CONFIGURED,
		    "spec.workloadIdentity is unset; workloads run without Azure Workload "
		    "Identity");
	drift_condition(&out[TAU_WS_DRIFT], in);
	return 0;
}

static const char *transition_time(const cJSON *previous, const tau_ws_condition *c,
                                   const char *now)
{
	const cJSON *old = tau_conditions_find(
	        cJSON_GetObjectItemCaseSensitive(previous, "conditions"), c->type);
	const char *st = NULL, *ltt = NULL;

	if (old != NULL && tau_json_get_string(&st, old, "status") == 0 &&
	    strcmp(st, tau_ws_status_cond_name(c->status)) == 0 &&
	    tau_json_get_string(&ltt, old, "lastTransitionTime") == 0 && ltt[0] != '\0')
		return ltt;
	return now;
}

int tau_ws_status_build(cJSON **out, const tau_ws_status_input *in)
{
	tau_ws_condition conds[TAU_WS_N_CONDITIONS];
	const char *resolved = NULL;
	const cJSON *prev = NULL, *pc;
	cJSON *st = NULL, *obj, *arr;
	int rc;

	if (out == NULL || in == NULL || in->now == NULL)
		return tau_error_set(TAU_EINVAL, "workspace status: missing input or time");
	rc = tau_ws_status_conditions(conds, in);
	if (rc < 0)
		return rc;
	st = cJSON_CreateObject();
	if (st == NULL)
		goto oom;
	if (cJSON_AddStringToObject(st, "phase",
	                            tau_ws_status_phase(conds[TAU_WS_RBAC].status,
	                                                conds[TAU_WS_QUEUE].status,
	                                                conds[TAU_WS_DRIFT].status)) == NULL ||
	    cJSON_AddNumberToObject(st, "observedGeneration", (double)in->generation) == NULL)
		goto oom;
	if (in->resolved_namespace != NULL)
		resolved = in->resolved_namespace;
	else if (in->ns != NULL && in->ns->resolved)
		resolved = in->ns->namespace_name;
	if (resolved != NULL) {
		obj = cJSON_AddObjectToObject(st, "target");
		if (obj == NULL ||
		    cJSON_AddStringToObject(obj, "resolvedNamespace", resolved) == NULL)
			goto oom;
	}
	if (resolved != NULL && (in->local_queue != NULL || in->cluster_queue != NULL)) {
		obj = cJSON_AddObjectToObject(st, "queue");
		if (obj == NULL ||
		    (in->local_queue != NULL &&
		     cJSON_AddStringToObject(obj, "localQueue", in->local_queue) == NULL) ||
		    (in->cluster_queue != NULL &&
		     cJSON_AddStringToObject(obj, "clusterQueue", in->cluster_queue) == NULL) ||
		    (in->cluster_queue_uid != NULL &&
		     cJSON_AddStringToObject(obj, "clusterQueueUID", in->cluster_queue_uid) ==
		             NULL))
			goto oom;
	}
	arr = cJSON_AddArrayToObject(st, "conditions");
	if (arr == NULL)
		goto oom;
	for (size_t i = 0; i < TAU_WS_N_CONDITIONS; i++) {
		cJSON *c = cJSON_CreateObject();

		if (c == NULL)
			goto oom;
		cJSON_AddItemToArray(arr, c);
		if (cJSON_AddStringToObject(c, "type", conds[i].type) == NULL ||
		    cJSON_AddStringToObject(c, "status",
		                            tau_ws_status_cond_name(conds[i].status)) == NULL ||
		    cJSON_AddStringToObject(c, "reason", conds[i].reason) == NULL ||
		    cJSON_AddStringToObject(c, "message", conds[i].message) == NULL ||
		    cJSON_AddStringToObject(c, "lastTransitionTime",
		                            transition_time(in->previous, &conds[i], in->now)) ==
		            NULL ||
		    cJSON_AddNumberToObject(c, "observedGeneration", (double)in->generation) ==
		            NULL)
			goto oom;
	}
	/* Conditions another controller owns (the budget's QuotaReady) are kept as they are. */
	if (in->previous != NULL && tau_json_get_array(&prev, in->previous, "conditions") == 0)
		cJSON_ArrayForEach(pc, prev)
		{
			const char *type = NULL;
			bool own = false;

			if (tau_json_get_string(&type, pc, "type") < 0)
				continue;
			for (size_t i = 0; i < TAU_WS_N_CONDITIONS && !own; i++)
				own = strcmp(type, conds[i].type) == 0;
			if (!own && !cJSON_AddItemToArray(arr, cJSON_Duplicate(pc, true)))
				goto oom;
		}
	*out = st;
	return 0;
oom:
	cJSON_Delete(st);
	return tau_error_set(TAU_ENOMEM, "out of memory building workspace status");
}

/* Equal optional strings at path (absent == absent). */
static bool same_string(const cJSON *a, const cJSON *b, const char *path)
{
	const char *x = NULL, *y = NULL;
	int ra = tau_json_get_string(&x, a, path);
	int rb = tau_json_get_string(&y, b, path);

	if (ra < 0 || rb < 0)
		return ra == rb;
	return strcmp(x, y) == 0;
}

static bool same_int(const cJSON *a, const cJSON *b, const char *path)
{
	int64_t x = 0, y = 0;
	int ra = tau_json_get_int(&x, a, path);
	int rb = tau_json_get_int(&y, b, path);

	if (ra < 0 || rb < 0)
		return ra == rb;
	return x == y;
}

static int count_conditions(const cJSON *status)
{
	const cJSON *conds = NULL;

	if (tau_json_get_array(&conds, status, "conditions") < 0)
		return 0;
	return cJSON_GetArraySize(conds);
}

bool tau_ws_status_changed(const cJSON *desired, const cJSON *current)
{
	static const char *const fields[] = {"phase", "target.resolvedNamespace",
	                                     "queue.localQueue", "queue.clusterQueue",
	                                     "queue.clusterQueueUID"};
	const cJSON *conds = NULL, *c;

	if (desired == NULL)
		return false;
	if (current == NULL || !cJSON_IsObject(current))
		return true;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!same_string(desired, current, fields[i]))
			return true;
	if (!same_int(desired, current, "observedGeneration"))
		return true;
	if (count_conditions(desired) != count_conditions(current))
		return true;
	if (tau_json_get_array(&conds, desired, "conditions") < 0)
		return false;
	cJSON_ArrayForEach(c, conds)
	{
		const char *type = NULL;
		const cJSON *old;

		if (tau_json_get_string(&type, c, "type") < 0)
			continue;
		old = tau_conditions_find(cJSON_GetObjectItemCaseSensitive(current, "conditions"),
		                          type);
		if (old == NULL || !same_string(c, old, "status") ||
		    !same_string(c, old, "reason") || !same_string(c, old, "message") ||
		    !same_int(c, old, "observedGeneration"))
			return true;
	}
	return false;
}
