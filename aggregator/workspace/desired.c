/*
 * desired.c - desired objects of a TauWorkspace, drift, ownership, and
 * the v0 single-active-workspace rule.
 *
 * The one idea: we own a short, explicit list of fields per object (our
 * labels and annotations, RoleBinding subjects and roleRef, LocalQueue
 * spec.clusterQueue) and compare nothing else, so API-server defaults,
 * finalizers, status and other controllers' metadata never look like drift
 * and never cause a write.  Every object carries the same ownership labels
 * and the owner UID annotation; nothing without them is updated or deleted.
 */
#include "desired.h"

#include "controller/apply.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdio.h>
#include <string.h>

#define RBAC_GROUP "rbac.authorization.k8s.io"

/* ------------------------------------------------------------------------------------------ */
/* Reading the spec                                                                            */

/* The result of reading an optional member: absent is fine, another type is named. */
static int optional(int rc, const char *path, const char *type)
{
	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc < 0)
		return tau_error_set(TAU_ETYPE, "%s: must be %s", path, type);
	return 0;
}

/* Optional string at path: NULL when absent or null, -TAU_ETYPE when not a string. */
static int opt_string(const char **out, const cJSON *obj, const char *path)
{
	*out = NULL;
	return optional(tau_json_get_string(out, obj, path), path, "a string");
}

static int opt_bool(bool *out, const cJSON *obj, const char *path)
{
	*out = false;
	return optional(tau_json_get_bool(out, obj, path), path, "a boolean");
}

static bool present(const cJSON *obj, const char *path)
{
	const cJSON *v = tau_json_find(obj, path);

	return v != NULL && !cJSON_IsNull(v);
}

static int check_name(int (*check)(const char *), const char *value, const char *path)
{
	if (value == NULL)
		return 0;
	if (check(value) < 0)
		return tau_error_wrap("%s: Invalid value", path);
	return 0;
}

int tau_ws_desired_spec_from_json(tau_ws_spec *out, const cJSON *obj)
{
	tau_ws_spec s;
	const char *mode = NULL;
	int rc;

	memset(&s, 0, sizeof(s));
	if (out == NULL || obj == NULL || !cJSON_IsObject(obj))
		return tau_error_set(TAU_EINVAL, "TauWorkspace: not a JSON object");
	if ((rc = opt_string(&s.name, obj, "metadata.name")) < 0 ||
	    (rc = opt_string(&s.uid, obj, "metadata.uid")) < 0 ||
	    (rc = opt_string(&s.creation_timestamp, obj, "metadata.creationTimestamp")) < 0 ||
	    (rc = opt_string(&s.deletion_timestamp, obj, "metadata.deletionTimestamp")) < 0 ||
	    (rc = opt_string(&mode, obj, "spec.authorization.mode")) < 0 ||
	    (rc = opt_string(&s.subject_kind, obj, "spec.kubernetesSubject.kind")) < 0 ||
	    (rc = opt_string(&s.subject_name, obj, "spec.kubernetesSubject.name")) < 0 ||
	    (rc = opt_string(&s.role, obj, "spec.role")) < 0 ||
	    (rc = opt_string(&s.target_namespace, obj, "spec.target.namespace")) < 0 ||
	    (rc = opt_bool(&s.create_namespace, obj, "spec.target.createNamespace")) < 0 ||
	    (rc = opt_bool(&s.adopt, obj, "spec.target.adopt")) < 0 ||
	    (rc = opt_string(&s.queue, obj, "spec.queue")) < 0 ||
	    (rc = opt_string(&s.team, obj, "spec.teamRef.name")) < 0 ||
	    (rc = opt_string(&s.wi_service_account, obj,
	                     "spec.workloadIdentity.serviceAccountName")) < 0 ||
	    (rc = opt_string(&s.wi_client_id, obj, "spec.workloadIdentity.clientId")) < 0 ||
	    (rc = opt_string(&s.wi_tenant_id, obj, "spec.workloadIdentity.tenantId")) < 0)
		return rc;
	rc = tau_json_get_int(&s.generation, obj, "metadata.generation");
	if (rc < 0 && rc != -TAU_ENOTFOUND)
		return tau_error_set(TAU_ETYPE, "metadata.generation: must be an integer");
	if (s.name == NULL)
		return tau_error_set(TAU_EINVAL, "metadata.name: Required value");
	if ((rc = check_name(tau_names_check_dns1123_label, s.name, "metadata.name")) < 0)
		return rc;

	if (mode == NULL || strcmp(mode, "workspace-rbac") == 0) {
		s.authz = TAU_WS_AUTHZ_WORKSPACE_RBAC;
	} else if (strcmp(mode, "cluster-wide") == 0) {
		s.authz = TAU_WS_AUTHZ_CLUSTER_WIDE;
	} else {
		return tau_error_set(
		        TAU_EINVAL,
		        "spec.authorization.mode: Unsupported value: \"%s\": supported "
		        "values: \"workspace-rbac\", \"cluster-wide\"",
		        mode);
	}
	if (s.authz == TAU_WS_AUTHZ_CLUSTER_WIDE) {
		if (present(obj, "spec.kubernetesSubject") || present(obj, "spec.role") ||
		    present(obj, "spec.principalRef"))
			return tau_error_set(
			        TAU_EINVAL,
			        "spec: cluster-wide authorization must leave principalRef, "
			        "kubernetesSubject and role unset");
	} else {
		if (s.subject_kind == NULL || s.subject_name == NULL || s.subject_name[0] == '\0')
			return tau_error_set(
			        TAU_EINVAL,
			        "spec.kubernetesSubject: Required value: workspace-rbac "
			        "authorization binds kubernetesSubject (kind and name)");
		if (strcmp(s.subject_kind, "User") != 0 && strcmp(s.subject_kind, "Group") != 0 &&
		    strcmp(s.subject_kind, "ServiceAccount") != 0)
			return tau_error_set(
			        TAU_EINVAL,
			        "spec.kubernetesSubject.kind: Unsupported value: \"%s\": "
			        "supported values: \"User\", \"Group\", \"ServiceAccount\"",
			        s.subject_kind);
		if (strcmp(s.subject_kind, "ServiceAccount") == 0 &&
		    (rc = check_name(tau_names_check_dns1123_subdomain, s.subject_name,
		                     "spec.kubernetesSubject.name")) < 0)
			return rc;
		if (tau_ws_desired_cluster_role(s.role) == NULL)
			return tau_error_set(
			        TAU_EINVAL,
			        "spec.role: Unsupported value: \"%s\": supported values: "
			        "\"researcher\", \"tau-researcher-v1\"",
			        s.role);
	}
	if (s.target_namespace != NULL && s.target_namespace[0] == '\0')
		s.target_namespace = NULL;
	if (s.queue != NULL) {
		if ((rc = check_name(tau_names_check_label_value, s.queue, "spec.queue")) < 0 ||
		    (rc = check_name(tau_names_check_dns1123_subdomain, s.queue, "spec.queue")) < 0)
			return rc;
	}
	if ((rc = check_name(tau_names_check_dns1123_label, s.team, "spec.teamRef.name")) < 0)
		return rc;
	s.has_workload_identity = present(obj, "spec.workloadIdentity");
	if (s.has_workload_identity) {
		if (s.wi_service_account == NULL)
			return tau_error_set(TAU_EINVAL,
			                     "spec.workloadIdentity.serviceAccountName: "
			                     "Required value");
		if ((rc = check_name(tau_names_check_dns1123_subdomain, s.wi_service_account,
		                     "spec.workloadIdentity.serviceAccountName")) < 0)
			return rc;
		if (s.wi_client_id == NULL || s.wi_client_id[0] == '\0')
			return tau_error_set(TAU_EINVAL,
			                     "spec.workloadIdentity.clientId: Required value");
		if (s.wi_tenant_id != NULL && s.wi_tenant_id[0] == '\0')
			s.wi_tenant_id = NULL;
	}
	*out = s;
	return 0;
}

const char *tau_ws_desired_cluster_role(const char *role)
{
	if (role == NULL || strcmp(role, "researcher") == 0 ||
	    strcmp(role, "tau-researcher-v1") == 0)
		return TAU_WS_RESEARCHER_CLUSTER_ROLE;
	return NULL;
}

const char *tau_ws_desired_local_queue_name(const tau_ws_spec *ws, const char *default_queue)
{
	if (ws != NULL && ws->queue != NULL && ws->queue[0] != '\0')
		return ws->queue;
	if (default_queue != NULL && default_queue[0] != '\0')
		return default_queue;
	return TAU_WS_DEFAULT_QUEUE;
}

int tau_ws_desired_cluster_queue_name(char *out, size_t len, const tau_ws_spec *ws,
                                      const char *default_queue)
{
	int n;

	if (ws != NULL && ws->team != NULL)
		n = snprintf(out, len, "%s%s", TAU_WS_CLUSTER_QUEUE_PREFIX, ws->name);
	else
		n = snprintf(out, len, "%s", tau_ws_desired_local_queue_name(ws, default_queue));
	if (n < 0 || (size_t)n >= len)
		return tau_error_set(TAU_ERANGE, "ClusterQueue name does not fit %zu bytes", len);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Building objects                                                                            */

/* A new object with apiVersion, kind and metadata{name, namespace, labels, annotations}. */
static cJSON *new_object(const char *api_version, const char *kind, const char *name,
                         const char *ns, const tau_ws_spec *ws)
{
	cJSON *obj = cJSON_CreateObject();
	cJSON *meta = NULL, *labels = NULL, *ann = NULL;

	if (obj == NULL)
		return NULL;
	if (cJSON_AddStringToObject(obj, "apiVersion", api_version) == NULL ||
	    cJSON_AddStringToObject(obj, "kind", kind) == NULL ||
	    (meta = cJSON_AddObjectToObject(obj, "metadata")) == NULL ||
	    cJSON_AddStringToObject(meta, "name", name) == NULL ||
	    (ns != NULL && cJSON_AddStringToObject(meta, "namespace", ns) == NULL) ||
	    (labels = cJSON_AddObjectToObject(meta, "labels")) == NULL ||
	    cJSON_AddStringToObject(labels, TAU_WS_LABEL_MANAGED_BY, TAU_WS_MANAGED_BY) == NULL ||
	    cJSON_AddStringToObject(labels, TAU_WS_LABEL_WORKSPACE, ws->name) == NULL ||
	    (ann = cJSON_AddObjectToObject(meta, "annotations")) == NULL ||
	    (ws->uid != NULL &&
	     cJSON_AddStringToObject(ann, TAU_WS_ANNOTATION_OWNER_UID, ws->uid) == NULL)) {
		cJSON_Delete(obj);
		return NULL;
	}
	return obj;
}

static int nomem(const char *what)
{
	return tau_error_set(TAU_ENOMEM, "out of memory building %s", what);
}

int tau_ws_desired_namespace(cJSON **out, const tau_ws_spec *ws, const tau_ws_ns_result *ns)
{
	cJSON *obj;

	if (out == NULL || ws == NULL || ns == NULL || !ns->resolved)
		return tau_error_set(TAU_EINVAL, "desired Namespace: namespace not resolved");
	if (!(ns->create || ns->adopt || ns->owned)) {
		*out = NULL;
		return 0;
	}
	obj = new_object("v1", "Namespace", ns->namespace_name, NULL, ws);
	if (obj == NULL)
		return nomem("Namespace");
	*out = obj;
	return 0;
}

int tau_ws_desired_rolebinding(cJSON **out, const tau_ws_spec *ws, const char *ns)
{
	char name[TAU_NAMES_DNS1123_SUBDOMAIN_MAX + 1];
	const char *role;
	cJSON *obj = NULL, *subjects, *subject, *ref;
	int rc = -1;

	if (out == NULL || ws == NULL || ns == NULL)
		return tau_error_set(TAU_EINVAL, "desired RoleBinding: missing input");
	if (ws->authz == TAU_WS_AUTHZ_CLUSTER_WIDE) {
		*out = NULL;
		return 0;
	}
	role = tau_ws_desired_cluster_role(ws->role);
	if (role == NULL || ws->subject_kind == NULL || ws->subject_name == NULL)
		return tau_error_set(TAU_EINVAL, "desired RoleBinding: no subject or unknown role");
	snprintf(name, sizeof(name), "%s%s", TAU_WS_ROLEBINDING_PREFIX, ws->name);
	obj = new_object(RBAC_GROUP "/v1", "RoleBinding", name, ns, ws);
	if (obj == NULL)
		goto oom;
	subjects = cJSON_AddArrayToObject(obj, "subjects");
	subject = cJSON_CreateObject();
	if (subjects == NULL || subject == NULL) {
		cJSON_Delete(subject);
		goto oom;
	}
	cJSON_AddItemToArray(subjects, subject);
	if (cJSON_AddStringToObject(subject, "kind", ws->subject_kind) == NULL ||
	    cJSON_AddStringToObject(subject, "name", ws->subject_name) == NULL)
		goto oom;
	if (strcmp(ws->subject_kind, "ServiceAccount") == 0) {
		if (cJSON_AddStringToObject(subject, "namespace", ns) == NULL)
			goto oom;
	} else if (cJSON_AddStringToObject(subject, "apiGroup", RBAC_GROUP) == NULL) {
		goto oom;
	}
	ref = cJSON_AddObjectToObject(obj, "roleRef");
	if (ref == NULL || cJSON_AddStringToObject(ref, "apiGroup", RBAC_GROUP) == NULL ||
	    cJSON_AddStringToObject(ref, "kind", "ClusterRole") == NULL ||
	    cJSON_AddStringToObject(ref, "name", role) == NULL)
		goto oom;
	*out = obj;
	obj = NULL;
	rc = 0;
	goto out;
oom:
	rc = nomem("RoleBinding");
out:
	cJSON_Delete(obj);
	return rc;
}

int tau_ws_desired_local_queue(cJSON **out, const tau_ws_spec *ws, const char *ns,
                               const char *default_queue)
{
	char cq[TAU_NAMES_DNS1123_SUBDOMAIN_MAX + 1];
	cJSON *obj, *spec;
	int rc;

	if (out == NULL || ws == NULL || ns == NULL)
		return tau_error_set(TAU_EINVAL, "desired LocalQueue: missing input");
	rc = tau_ws_desired_cluster_queue_name(cq, sizeof(cq), ws, default_queue);
	if (rc < 0)
		return rc;
	obj = new_object(TAU_WS_KUEUE_API_VERSION, "LocalQueue",
	                 tau_ws_desired_local_queue_name(ws, default_queue), ns, ws);
	if (obj == NULL)
		return nomem("LocalQueue");
	spec = cJSON_AddObjectToObject(obj, "spec");
	if (spec == NULL || cJSON_AddStringToObject(spec, "clusterQueue", cq) == NULL) {
		cJSON_Delete(obj);
		return nomem("LocalQueue");
	}
	*out = obj;
	return 0;
}

int tau_ws_desired_service_account(cJSON **out, const tau_ws_spec *ws, const char *ns)
{
	cJSON *obj, *ann;

	if (out == NULL || ws == NULL || ns == NULL)
		return tau_error_set(TAU_EINVAL, "desired ServiceAccount: missing input");
	if (!ws->has_workload_identity) {
		*out = NULL;
		return 0;
	}
	obj = new_object("v1", "ServiceAccount", ws->wi_service_account, ns, ws);
	if (obj == NULL)
		return nomem("ServiceAccount");
	ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
	                                       "annotations");
	if (cJSON_AddStringToObject(ann, TAU_WS_ANNOTATION_WI_CLIENT_ID, ws->wi_client_id) ==
	            NULL ||
	    (ws->wi_tenant_id != NULL &&
	     cJSON_AddStringToObject(ann, TAU_WS_ANNOTATION_WI_TENANT_ID, ws->wi_tenant_id) ==
	             NULL)) {
		cJSON_Delete(obj);
		return nomem("ServiceAccount");
	}
	*out = obj;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Drift and ownership                                                                         */

/* Describe a value for a message: "absent" or the quoted string. */
static void describe(char *buf, size_t len, const char *v)
{
	if (v == NULL)
		snprintf(buf, len, "absent");
	else
		snprintf(buf, len, "\"%.200s\"", v);
}

/* Every key of desired.metadata.<map> must have the same value in observed. */
static bool map_drifted(const cJSON *desired, const cJSON *observed, const char *map, char *what,
                        size_t what_len)
{
	char path[32];
	const cJSON *want = NULL, *have = NULL, *item;

	snprintf(path, sizeof(path), "metadata.%s", map);
	if (tau_json_get_object(&want, desired, path) < 0)
		return false;
	if (tau_json_get_object(&have, observed, path) < 0)
		have = NULL;
	cJSON_ArrayForEach(item, want)
	{
		const cJSON *got =
		        have != NULL ? cJSON_GetObjectItemCaseSensitive(have, item->string) : NULL;
		const char *gv = cJSON_IsString(got) ? got->valuestring : NULL;
		char d[210];

		if (!cJSON_IsString(item) || tau_str_eq_or_both_null(gv, item->valuestring))
			continue;
		describe(d, sizeof(d), gv);
		tau_str_printf(what, what_len, "metadata.%s[\"%s\"] is %s, want \"%.200s\"", map,
		               item->string, d, item->valuestring);
		return true;
	}
	return false;
}

/* An annotation we own: present in observed while absent from desired is drift. */
static bool owned_key_extra(const cJSON *desired, const cJSON *observed, const char *key,
                            char *what, size_t what_len)
{
	const cJSON *want = tau_json_find(desired, "metadata.annotations");
	const cJSON *have = tau_json_find(observed, "metadata.annotations");
	const cJSON *got;

	if (want != NULL && cJSON_GetObjectItemCaseSensitive(want, key) != NULL)
		return false;
	got = have != NULL ? cJSON_GetObjectItemCaseSensitive(have, key) : NULL;
	if (got == NULL || cJSON_IsNull(got))
		return false;
	tau_str_printf(what, what_len, "metadata.annotations[\"%s\"] is set, want it absent", key);
	return true;
}

static bool field_drifted(const cJSON *desired, const cJSON *observed, const char *path, char *what,
                          size_t what_len)
{
	const char *want = tau_json_str(desired, path);
	const char *have = tau_json_str(observed, path);
	char d[210];

	if (tau_str_eq_or_both_null(want, have))
		return false;
	describe(d, sizeof(d), have);
	tau_str_printf(what, what_len, "%s is %s, want \"%.200s\"", path, d,
	               want != NULL ? want : "");
	return true;
}

/* A subject's apiGroup as the API server defaults it. */
static const char *subject_group(const cJSON *s)
{
	const char *g = tau_json_str(s, "apiGroup");
	const char *kind = tau_json_str(s, "kind");

	if (g != NULL && g[0] != '\0')
		return g;
	if (kind != NULL && (strcmp(kind, "User") == 0 || strcmp(kind, "Group") == 0))
		return RBAC_GROUP;
	return "";
}

static const char *or_empty(const char *s)
{
	return s != NULL ? s : "";
}

static bool subject_equal(const cJSON *a, const cJSON *b)
{
	return tau_str_eq_or_both_null(tau_json_str(a, "kind"), tau_json_str(b, "kind")) &&
	       tau_str_eq_or_both_null(tau_json_str(a, "name"), tau_json_str(b, "name")) &&
	       strcmp(or_empty(tau_json_str(a, "namespace")),
	              or_empty(tau_json_str(b, "namespace"))) == 0 &&
	       strcmp(subject_group(a), subject_group(b)) == 0;
}

static bool subjects_drifted(const cJSON *desired, const cJSON *observed, char *what,
                             size_t what_len)
{
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(desired, "subjects");
	const cJSON *have = cJSON_GetObjectItemCaseSensitive(observed, "subjects");
	const cJSON *w, *h;
	int nw = cJSON_IsArray(want) ? cJSON_GetArraySize(want) : 0;
	int nh = cJSON_IsArray(have) ? cJSON_GetArraySize(have) : 0;

	if (nw != nh) {
		tau_str_printf(what, what_len, "subjects has %d entries, want %d", nh, nw);
		return true;
	}
	cJSON_ArrayForEach(w, want)
	{
		bool found = false;

		cJSON_ArrayForEach(h, have)
		{
			if (subject_equal(w, h)) {
				found = true;
				break;
			}
		}
		if (!found) {
			tau_str_printf(what, what_len, "subjects lacks %s \"%.200s\"",
			               or_empty(tau_json_str(w, "kind")),
			               or_empty(tau_json_str(w, "name")));
			return true;
		}
	}
	return false;
}

int tau_ws_desired_drifted(bool *out, char *what, size_t what_len, const cJSON *desired,
                           const cJSON *observed)
{
	const char *kind;
	bool d = false;

	if (out == NULL || desired == NULL || observed == NULL)
		return tau_error_set(TAU_EINVAL, "drift check: missing object");
	kind = tau_json_str(desired, "kind");
	if (kind == NULL)
		return tau_error_set(TAU_EINVAL, "drift check: desired object has no kind");
	tau_str_printf(what, what_len, "%s", "");
	d = map_drifted(desired, observed, "labels", what, what_len) ||
	    map_drifted(desired, observed, "annotations", what, what_len);
	if (!d && strcmp(kind, "ServiceAccount") == 0)
		d = owned_key_extra(desired, observed, TAU_WS_ANNOTATION_WI_TENANT_ID, what,
		                    what_len) ||
		    owned_key_extra(desired, observed, TAU_WS_ANNOTATION_WI_CLIENT_ID, what,
		                    what_len);
	if (!d && strcmp(kind, "RoleBinding") == 0)
		d = field_drifted(desired, observed, "roleRef.apiGroup", what, what_len) ||
		    field_drifted(desired, observed, "roleRef.kind", what, what_len) ||
		    field_drifted(desired, observed, "roleRef.name", what, what_len) ||
		    subjects_drifted(desired, observed, what, what_len);
	if (!d && strcmp(kind, "LocalQueue") == 0)
		d = field_drifted(desired, observed, "spec.clusterQueue", what, what_len);
	*out = d;
	return 0;
}

bool tau_ws_desired_owned(const cJSON *observed, const char *workspace, const char *uid, char *why,
                          size_t why_len)
{
	tau_apply_owner owner = {.managed_by_label = TAU_WS_LABEL_MANAGED_BY,
	                         .managed_by = TAU_WS_MANAGED_BY,
	                         .owner_label = TAU_WS_LABEL_WORKSPACE,
	                         .owner = workspace,
	                         .uid_annotation = TAU_WS_ANNOTATION_OWNER_UID,
	                         .uid = uid};

	return tau_apply_owned(observed, &owner, uid, why, why_len);
}

/* ------------------------------------------------------------------------------------------ */
/* v0                                                                                          */

int tau_ws_desired_v0_active(size_t *active, const tau_ws_v0_entry *all, size_t n)
{
	size_t best = 0;

	if (active == NULL || all == NULL || n == 0)
		return tau_error_set(TAU_ENOTFOUND, "v0: no workspaces");
	for (size_t i = 1; i < n; i++)
		if (tau_ws_namespace_compare_age(all[i].creation_timestamp, all[i].name,
		                                 all[best].creation_timestamp, all[best].name) < 0)
			best = i;
	*active = best;
	return 0;
}

int tau_ws_desired_v0_decide(tau_ws_refusal *refusal, const tau_ws_v0_entry *all, size_t n,
                             size_t self)
{
	const tau_ws_v0_entry *a;
	size_t active = 0;
	int rc;

	if (refusal == NULL || all == NULL || self >= n)
		return tau_error_set(TAU_EINVAL, "v0: workspace index %zu out of range", self);
	memset(refusal, 0, sizeof(*refusal));
	rc = tau_ws_desired_v0_active(&active, all, n);
	if (rc < 0)
		return rc;
	if (active == self)
		return 0;
	a = &all[active];
	if (a->deletion_timestamp != NULL && a->deletion_timestamp[0] != '\0')
		tau_ws_namespace_refuse(
		        refusal, TAU_WS_REASON_BLOCKED_BY_ACTIVE, true,
		        "v0 activates one workspace at a time: workspace %s is active and "
		        "being deleted; this workspace is blocked until %s is removed",
		        a->name, a->name);
	else
		tau_ws_namespace_refuse(
		        refusal, TAU_WS_REASON_BLOCKED_BY_ACTIVE, true,
		        "v0 activates one workspace at a time: workspace %s (created %s) is "
		        "active; this workspace is blocked until %s is removed",
		        a->name, a->creation_timestamp != NULL ? a->creation_timestamp : "?",
		        a->name);
	return 0;
}
