/*
 * test_workspace_desired.c - TauWorkspace spec reading, desired owned
 * objects, drift on owned fields only, ownership, and the v0 rule.
 */
#include "workspace/desired.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The chart's sample workspace, plus server-set metadata. */
static const char sample[] =
        "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauWorkspace\","
        "\"metadata\":{\"name\":\"alpha\",\"namespace\":\"tau-system\",\"uid\":\"u-1\","
        "\"generation\":3,\"creationTimestamp\":\"2024-05-01T10:00:00Z\"},"
        "\"spec\":{\"authorization\":{\"mode\":\"workspace-rbac\"},"
        "\"principalRef\":{\"provider\":\"entra\",\"name\":\"alpha-researchers\"},"
        "\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g-1\"},\"role\":\"researcher\","
        "\"target\":{\"namespace\":\"ml-alpha\",\"createNamespace\":true},\"queue\":\"alpha\","
        "\"teamRef\":{\"name\":\"research\"},"
        "\"workloadIdentity\":{\"serviceAccountName\":\"alpha-workload\",\"clientId\":\"c-1\","
        "\"tenantId\":\"t-1\"}}}";

static cJSON *parse(const char *text)
{
	cJSON *j = NULL;

	assert_int_equal(tau_json_parse(&j, text, strlen(text), 0), 0);
	return j;
}

static char *print(const cJSON *j)
{
	char *s = NULL;

	assert_int_equal(tau_json_print(&s, j), 0);
	return s;
}

static void assert_json(const cJSON *j, const char *want)
{
	char *got = print(j);

	if (strcmp(got, want) != 0)
		fail_msg("got  %s\nwant %s", got, want);
	free(got);
}

/* ------------------------------------------------------------------------------------------ */
/* Spec                                                                                        */

typedef struct spec_case {
	const char *spec; /* the "spec" member's JSON */
	int rc;
	const char *msg_has;
} spec_case;

static const spec_case spec_cases[] = {
        {"{\"kubernetesSubject\":{\"kind\":\"User\",\"name\":\"a@b\"},\"role\":\"researcher\"}", 0,
         NULL},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"}}", 0, NULL},
        {"{\"kubernetesSubject\":{\"kind\":\"ServiceAccount\",\"name\":\"bot\"},"
         "\"role\":\"tau-researcher-v1\"}",
         0, NULL},
        {"{\"authorization\":{\"mode\":\"cluster-wide\"}}", 0, NULL},
        {"{\"authorization\":{\"mode\":\"cluster-wide\"},\"role\":\"researcher\"}", -TAU_EINVAL,
         "cluster-wide authorization must leave"},
        {"{\"authorization\":{\"mode\":\"cluster-wide\"},\"principalRef\":{\"name\":\"x\"}}",
         -TAU_EINVAL, "principalRef"},
        {"{\"authorization\":{\"mode\":\"everyone\"}}", -TAU_EINVAL,
         "spec.authorization.mode: Unsupported value: \"everyone\""},
        {"{}", -TAU_EINVAL, "spec.kubernetesSubject: Required value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"\"}}", -TAU_EINVAL,
         "spec.kubernetesSubject: Required value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Robot\",\"name\":\"r\"}}", -TAU_EINVAL,
         "spec.kubernetesSubject.kind: Unsupported value: \"Robot\""},
        {"{\"kubernetesSubject\":{\"kind\":\"ServiceAccount\",\"name\":\"Bot\"}}", -TAU_EINVAL,
         "spec.kubernetesSubject.name: Invalid value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},\"role\":\"admin\"}",
         -TAU_EINVAL, "spec.role: Unsupported value: \"admin\""},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},\"queue\":\"Q\"}", -TAU_EINVAL,
         "spec.queue: Invalid value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},\"queue\":7}", -TAU_ETYPE,
         "spec.queue: must be a string"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},"
         "\"teamRef\":{\"name\":\"Research\"}}",
         -TAU_EINVAL, "spec.teamRef.name: Invalid value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},"
         "\"target\":{\"createNamespace\":\"yes\"}}",
         -TAU_ETYPE, "spec.target.createNamespace: must be a boolean"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},"
         "\"workloadIdentity\":{\"clientId\":\"c\"}}",
         -TAU_EINVAL, "serviceAccountName: Required value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},"
         "\"workloadIdentity\":{\"serviceAccountName\":\"sa\",\"clientId\":\"\"}}",
         -TAU_EINVAL, "clientId: Required value"},
        {"{\"kubernetesSubject\":{\"kind\":\"Group\",\"name\":\"g\"},"
         "\"workloadIdentity\":{\"serviceAccountName\":\"s_a\",\"clientId\":\"c\"}}",
         -TAU_EINVAL, "serviceAccountName: Invalid value"},
};

static void test_spec_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(spec_cases); i++) {
		char text[2048];
		cJSON *obj;
		tau_ws_spec s = {.name = "untouched"};
		int rc;

		snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"ws\"},\"spec\":%s}",
		         spec_cases[i].spec);
		obj = parse(text);
		rc = tau_ws_desired_spec_from_json(&s, obj);
		print_message("spec %s -> %d %s\n", spec_cases[i].spec, rc,
		              rc < 0 ? tau_error_last()->msg : "");
		assert_int_equal(rc, spec_cases[i].rc);
		if (rc < 0) {
			assert_string_equal(s.name, "untouched");
			assert_non_null(strstr(tau_error_last()->msg, spec_cases[i].msg_has));
		} else {
			assert_string_equal(s.name, "ws");
		}
		cJSON_Delete(obj);
	}
}

static void test_spec_sample(void **state)
{
	cJSON *obj = parse(sample);
	cJSON *noname = parse("{\"spec\":{}}");
	cJSON *badname = parse("{\"metadata\":{\"name\":\"Alpha\"},\"spec\":{}}");
	tau_ws_spec s;

	(void)state;
	assert_int_equal(tau_ws_desired_spec_from_json(&s, obj), 0);
	assert_string_equal(s.name, "alpha");
	assert_string_equal(s.uid, "u-1");
	assert_int_equal(s.generation, 3);
	assert_int_equal(s.authz, TAU_WS_AUTHZ_WORKSPACE_RBAC);
	assert_string_equal(s.target_namespace, "ml-alpha");
	assert_true(s.create_namespace);
	assert_false(s.adopt);
	assert_string_equal(s.team, "research");
	assert_true(s.has_workload_identity);
	assert_string_equal(s.wi_tenant_id, "t-1");
	assert_null(s.deletion_timestamp);
	assert_int_equal(tau_ws_desired_spec_from_json(&s, noname), -TAU_EINVAL);
	assert_int_equal(tau_ws_desired_spec_from_json(&s, badname), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "metadata.name: Invalid value"));
	assert_int_equal(tau_ws_desired_spec_from_json(&s, NULL), -TAU_EINVAL);
	cJSON_Delete(obj);
	cJSON_Delete(noname);
	cJSON_Delete(badname);
}

static void test_roles_and_queue_names(void **state)
{
	tau_ws_spec s = {.name = "alpha"};
	char cq[64];

	(void)state;
	assert_string_equal(tau_ws_desired_cluster_role(NULL), "tau-researcher");
	assert_string_equal(tau_ws_desired_cluster_role("researcher"), "tau-researcher");
	assert_string_equal(tau_ws_desired_cluster_role("tau-researcher-v1"), "tau-researcher");
	assert_null(tau_ws_desired_cluster_role("cluster-admin"));
	/* LocalQueue: spec.queue, else the TauCluster default, else jobqueue. */
	assert_string_equal(tau_ws_desired_local_queue_name(&s, NULL), "jobqueue");
	assert_string_equal(tau_ws_desired_local_queue_name(&s, "batch"), "batch");
	s.queue = "alpha-q";
	assert_string_equal(tau_ws_desired_local_queue_name(&s, "batch"), "alpha-q");
	/* ClusterQueue: same name without teamRef, tau-ws-<workspace> with it. */
	assert_int_equal(tau_ws_desired_cluster_queue_name(cq, sizeof(cq), &s, "batch"), 0);
	assert_string_equal(cq, "alpha-q");
	s.team = "research";
	assert_int_equal(tau_ws_desired_cluster_queue_name(cq, sizeof(cq), &s, "batch"), 0);
	assert_string_equal(cq, "tau-ws-alpha");
	assert_int_equal(tau_ws_desired_cluster_queue_name(cq, 5, &s, NULL), -TAU_ERANGE);
}

/* ------------------------------------------------------------------------------------------ */
/* Desired objects                                                                             */

#define META(kind_api, kind, name, ns_part)                                                        \
	"{\"apiVersion\":\"" kind_api "\",\"kind\":\"" kind "\",\"metadata\":{\"name\":\"" name    \
	"\"," ns_part "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","                  \
	"\"tau.azure.com/workspace\":\"alpha\"},\"annotations\":{\"tau.azure.com/workspace-uid\":" \
	"\"u-1\""

static void test_desired_objects(void **state)
{
	cJSON *obj = parse(sample);
	tau_ws_spec s;
	tau_ws_ns_result ns = {
	        .namespace_name = "ml-alpha", .resolved = true, .create = true, .owned = true};
	cJSON *o = NULL;

	(void)state;
	assert_int_equal(tau_ws_desired_spec_from_json(&s, obj), 0);

	assert_int_equal(tau_ws_desired_namespace(&o, &s, &ns), 0);
	assert_json(o, META("v1", "Namespace", "ml-alpha", "") "}}}");
	cJSON_Delete(o);

	assert_int_equal(tau_ws_desired_rolebinding(&o, &s, "ml-alpha"), 0);
	assert_json(
	        o,
	        META("rbac.authorization.k8s.io/v1", "RoleBinding", "tau-workspace-alpha",
	             "\"namespace\":\"ml-alpha\",") "}},"
	                                            "\"subjects\":[{\"kind\":\"Group\",\"name\":"
	                                            "\"g-1\","
	                                            "\"apiGroup\":\"rbac.authorization.k8s.io\"}],"
	                                            "\"roleRef\":{\"apiGroup\":\"rbac."
	                                            "authorization.k8s.io\","
	                                            "\"kind\":\"ClusterRole\",\"name\":\"tau-"
	                                            "researcher\"}}");
	cJSON_Delete(o);

	assert_int_equal(tau_ws_desired_local_queue(&o, &s, "ml-alpha", "jobqueue"), 0);
	assert_json(o, META("kueue.x-k8s.io/v1beta2", "LocalQueue", "alpha",
	                    "\"namespace\":\"ml-alpha\",") "}},"
	                                                   "\"spec\":{\"clusterQueue\":\"tau-ws-"
	                                                   "alpha\"}}");
	cJSON_Delete(o);

	assert_int_equal(tau_ws_desired_service_account(&o, &s, "ml-alpha"), 0);
	assert_json(o, META("v1", "ServiceAccount", "alpha-workload",
	                    "\"namespace\":\"ml-alpha\",") ",\"azure.workload.identity/"
	                                                   "client-id\":\"c-1\","
	                                                   "\"azure.workload.identity/"
	                                                   "tenant-id\":\"t-1\"}}}");
	cJSON_Delete(o);
	cJSON_Delete(obj);
}

static void test_desired_variants(void **state)
{
	cJSON *obj = parse(
	        "{\"metadata\":{\"name\":\"beta\",\"uid\":\"u-2\"},\"spec\":{\"authorization\":{"
	        "\"mode\":\"cluster-wide\"},\"target\":{\"namespace\":\"ml-beta\"}}}");
	cJSON *sa_obj = parse("{\"metadata\":{\"name\":\"gamma\"},\"spec\":{\"kubernetesSubject\":"
	                      "{\"kind\":\"ServiceAccount\",\"name\":\"bot\"},\"workloadIdentity\":"
	                      "{\"serviceAccountName\":\"wi\",\"clientId\":\"c\"}}}");
	tau_ws_spec s;
	tau_ws_ns_result used = {.namespace_name = "ml-beta", .resolved = true};
	tau_ws_ns_result refused = {.namespace_name = "ml-beta"};
	cJSON *o = (cJSON *)obj;

	(void)state;
	assert_int_equal(tau_ws_desired_spec_from_json(&s, obj), 0);
	/* Pre-provisioned, not owned: no Namespace object. */
	assert_int_equal(tau_ws_desired_namespace(&o, &s, &used), 0);
	assert_null(o);
	assert_int_equal(tau_ws_desired_namespace(&o, &s, &refused), -TAU_EINVAL);
	/* Cluster-wide: no researcher binding. */
	o = obj;
	assert_int_equal(tau_ws_desired_rolebinding(&o, &s, "ml-beta"), 0);
	assert_null(o);
	/* No workloadIdentity: no ServiceAccount. */
	o = obj;
	assert_int_equal(tau_ws_desired_service_account(&o, &s, "ml-beta"), 0);
	assert_null(o);
	/* No teamRef: the LocalQueue points at the ClusterQueue of the same name. */
	assert_int_equal(tau_ws_desired_local_queue(&o, &s, "ml-beta", NULL), 0);
	assert_json(cJSON_GetObjectItem(o, "spec"), "{\"clusterQueue\":\"jobqueue\"}");
	cJSON_Delete(o);

	/* A ServiceAccount subject carries its namespace and no apiGroup; no tenant. */
	assert_int_equal(tau_ws_desired_spec_from_json(&s, sa_obj), 0);
	assert_int_equal(tau_ws_desired_rolebinding(&o, &s, "gamma"), 0);
	assert_json(cJSON_GetObjectItem(o, "subjects"),
	            "[{\"kind\":\"ServiceAccount\",\"name\":\"bot\",\"namespace\":\"gamma\"}]");
	cJSON_Delete(o);
	assert_int_equal(tau_ws_desired_service_account(&o, &s, "gamma"), 0);
	assert_null(tau_json_find(o, "metadata.annotations.tau.azure.com/workspace-uid"));
	assert_json(tau_json_find(o, "metadata.annotations"),
	            "{\"azure.workload.identity/client-id\":\"c\"}");
	cJSON_Delete(o);
	cJSON_Delete(obj);
	cJSON_Delete(sa_obj);
}

/* ------------------------------------------------------------------------------------------ */
/* Drift                                                                                       */

typedef enum { OBJ_NS, OBJ_RB, OBJ_LQ, OBJ_SA } obj_kind;

typedef void (*mutate_fn)(cJSON *observed);

static cJSON *labels_of(cJSON *o)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "labels");
}

static cJSON *annotations_of(cJSON *o)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), "annotations");
}

static void m_none(cJSON *o)
{
	(void)o;
}

/* What an API server adds on read: never drift. */
static void m_server_fields(cJSON *o)
{
	cJSON *meta = cJSON_GetObjectItem(o, "metadata");
	cJSON *spec = cJSON_GetObjectItem(o, "spec");

	cJSON_AddStringToObject(meta, "uid", "srv-uid");
	cJSON_AddStringToObject(meta, "resourceVersion", "42");
	cJSON_AddStringToObject(meta, "creationTimestamp", "2024-05-01T10:00:00Z");
	cJSON_AddItemToObject(meta, "managedFields", cJSON_CreateArray());
	cJSON_AddItemToObject(meta, "finalizers", cJSON_CreateArray());
	cJSON_AddStringToObject(labels_of(o), "kubernetes.io/metadata.name", "ml-alpha");
	cJSON_AddStringToObject(annotations_of(o), "kubectl.kubernetes.io/last-applied", "{}");
	if (spec != NULL)
		cJSON_AddStringToObject(spec, "stopPolicy", "None");
	cJSON_AddItemToObject(o, "status", cJSON_CreateObject());
}

static void m_workspace_label(cJSON *o)
{
	cJSON_ReplaceItemInObject(labels_of(o), "tau.azure.com/workspace",
	                          cJSON_CreateString("beta"));
}

static void m_no_labels(cJSON *o)
{
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(o, "metadata"), "labels");
}

static void m_uid_annotation(cJSON *o)
{
	cJSON_ReplaceItemInObject(annotations_of(o), "tau.azure.com/workspace-uid",
	                          cJSON_CreateString("u-old"));
}

static void m_role(cJSON *o)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "roleRef"), "name",
	                          cJSON_CreateString("admin"));
}

static void m_subject_added(cJSON *o)
{
	cJSON *s = cJSON_CreateObject();

	cJSON_AddStringToObject(s, "kind", "User");
	cJSON_AddStringToObject(s, "name", "mallory");
	cJSON_AddItemToArray(cJSON_GetObjectItem(o, "subjects"), s);
}

static void m_subject_renamed(cJSON *o)
{
	cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "subjects"), 0);

	cJSON_ReplaceItemInObject(s, "name", cJSON_CreateString("g-2"));
}

/* The API server omits/defaults apiGroup for a Group subject: not drift. */
static void m_subject_group_defaulted(cJSON *o)
{
	cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "subjects"), 0);

	cJSON_DeleteItemFromObject(s, "apiGroup");
}

static void m_cluster_queue(cJSON *o)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(o, "spec"), "clusterQueue",
	                          cJSON_CreateString("other-cq"));
}

static void m_client_id(cJSON *o)
{
	cJSON_ReplaceItemInObject(annotations_of(o), "azure.workload.identity/client-id",
	                          cJSON_CreateString("c-9"));
}

static void m_tenant_removed(cJSON *o)
{
	cJSON_DeleteItemFromObject(annotations_of(o), "azure.workload.identity/tenant-id");
}

typedef struct drift_case {
	const char *rule;
	obj_kind kind;
	bool no_tenant; /* desired without tenantId */
	mutate_fn mutate;
	bool drifted;
	const char *what_has;
} drift_case;

static const drift_case drift_cases[] = {
        {"identical namespace", OBJ_NS, false, m_none, false, NULL},
        {"server fields on a namespace", OBJ_NS, false, m_server_fields, false, NULL},
        {"namespace workspace label changed", OBJ_NS, false, m_workspace_label, true,
         "metadata.labels[\"tau.azure.com/workspace\"] is \"beta\", want \"alpha\""},
        {"namespace labels removed", OBJ_NS, false, m_no_labels, true, "is absent, want"},
        {"owner UID annotation changed", OBJ_NS, false, m_uid_annotation, true,
         "tau.azure.com/workspace-uid"},
        {"server fields on a RoleBinding", OBJ_RB, false, m_server_fields, false, NULL},
        {"roleRef changed", OBJ_RB, false, m_role, true,
         "roleRef.name is \"admin\", want \"tau-researcher\""},
        {"subject added", OBJ_RB, false, m_subject_added, true, "subjects has 2 entries"},
        {"subject renamed", OBJ_RB, false, m_subject_renamed, true, "subjects lacks Group"},
        {"defaulted subject apiGroup", OBJ_RB, false, m_subject_group_defaulted, false, NULL},
        {"server fields on a LocalQueue", OBJ_LQ, false, m_server_fields, false, NULL},
        {"LocalQueue clusterQueue changed", OBJ_LQ, false, m_cluster_queue, true,
         "spec.clusterQueue is \"other-cq\", want \"tau-ws-alpha\""},
        {"server fields on a ServiceAccount", OBJ_SA, false, m_server_fields, false, NULL},
        {"ServiceAccount client ID changed", OBJ_SA, false, m_client_id, true,
         "azure.workload.identity/client-id"},
        {"ServiceAccount tenant ID removed", OBJ_SA, false, m_tenant_removed, true,
         "tenant-id\"] is absent"},
        {"stale tenant ID we no longer want", OBJ_SA, true, m_none, true,
         "tenant-id\"] is set, want it absent"},
};

static cJSON *build(obj_kind k, const tau_ws_spec *s)
{
	tau_ws_ns_result ns = {.namespace_name = "ml-alpha", .resolved = true, .owned = true};
	cJSON *o = NULL;

	switch (k) {
	case OBJ_NS:
		assert_int_equal(tau_ws_desired_namespace(&o, s, &ns), 0);
		break;
	case OBJ_RB:
		assert_int_equal(tau_ws_desired_rolebinding(&o, s, "ml-alpha"), 0);
		break;
	case OBJ_LQ:
		assert_int_equal(tau_ws_desired_local_queue(&o, s, "ml-alpha", NULL), 0);
		break;
	default:
		assert_int_equal(tau_ws_desired_service_account(&o, s, "ml-alpha"), 0);
		break;
	}
	assert_non_null(o);
	return o;
}

static void test_drift_table(void **state)
{
	cJSON *obj = parse(sample);
	tau_ws_spec s;

	(void)state;
	assert_int_equal(tau_ws_desired_spec_from_json(&s, obj), 0);
	for (size_t i = 0; i < ARRAY_LEN(drift_cases); i++) {
		const drift_case *c = &drift_cases[i];
		tau_ws_spec sd = s;
		cJSON *observed = build(c->kind, &s);
		cJSON *desired;
		char what[256];
		bool d = !c->drifted;

		if (c->no_tenant)
			sd.wi_tenant_id = NULL;
		desired = build(c->kind, &sd);
		c->mutate(observed);
		print_message("drift: %s\n", c->rule);
		assert_int_equal(tau_ws_desired_drifted(&d, what, sizeof(what), desired, observed),
		                 0);
		assert_int_equal(d, c->drifted);
		if (c->drifted) {
			if (strstr(what, c->what_has) == NULL)
				fail_msg("%s: what \"%s\" lacks \"%s\"", c->rule, what,
				         c->what_has);
		} else {
			assert_string_equal(what, "");
		}
		cJSON_Delete(observed);
		cJSON_Delete(desired);
	}
	cJSON_Delete(obj);
}

static void test_drift_bad_input(void **state)
{
	cJSON *nokind = parse("{\"metadata\":{}}");
	bool d;

	(void)state;
	assert_int_equal(tau_ws_desired_drifted(&d, NULL, 0, nokind, nokind), -TAU_EINVAL);
	assert_int_equal(tau_ws_desired_drifted(&d, NULL, 0, NULL, nokind), -TAU_EINVAL);
	cJSON_Delete(nokind);
}

/* ------------------------------------------------------------------------------------------ */
/* Ownership                                                                                   */

typedef struct owned_case {
	const char *metadata;
	const char *uid;
	bool owned;
	const char *why_has;
} owned_case;

static const owned_case owned_cases[] = {
        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"
         "workspace\":\"alpha\"},\"annotations\":{\"tau.azure.com/workspace-uid\":\"u-1\"}}",
         "u-1", true, NULL},
        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"
         "workspace\":\"alpha\"}}",
         NULL, true, NULL},
        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"
         "workspace\":\"alpha\"},\"annotations\":{\"tau.azure.com/workspace-uid\":\"u-0\"}}",
         "u-1", false, "annotation tau.azure.com/workspace-uid is \"u-0\", not \"u-1\""},
        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"
         "workspace\":\"alpha\"}}",
         "u-1", false, "is absent"},
        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"
         "workspace\":\"beta\"}}",
         NULL, false, "label tau.azure.com/workspace is \"beta\", not \"alpha\""},
        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"helm\",\"tau.azure.com/"
         "workspace\":\"alpha\"}}",
         NULL, false, "label app.kubernetes.io/managed-by is \"helm\""},
        {"{}", NULL, false, "is absent"},
};

static void test_owned_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(owned_cases); i++) {
		char text[1024];
		char why[256];
		cJSON *o;

		snprintf(text, sizeof(text), "{\"metadata\":%s}", owned_cases[i].metadata);
		o = parse(text);
		assert_int_equal(
		        tau_ws_desired_owned(o, "alpha", owned_cases[i].uid, why, sizeof(why)),
		        owned_cases[i].owned);
		if (owned_cases[i].why_has != NULL && strstr(why, owned_cases[i].why_has) == NULL)
			fail_msg("why \"%s\" lacks \"%s\"", why, owned_cases[i].why_has);
		cJSON_Delete(o);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* v0                                                                                          */

typedef struct v0_case {
	const char *rule;
	tau_ws_v0_entry all[4];
	size_t n;
	size_t active;
	const char *msg_has; /* message for the entries that are blocked */
} v0_case;

static const v0_case v0_cases[] = {
        {"one workspace is active", {{"alpha", "2024-05-01T10:00:00Z", NULL}}, 1, 0, NULL},
        {"the oldest is active, the newer is blocked naming it",
         {{"beta", "2024-05-02T10:00:00Z", NULL}, {"alpha", "2024-05-01T10:00:00Z", NULL}},
         2,
         1,
         "workspace alpha (created 2024-05-01T10:00:00Z) is active"},
        {"same creation time: the name decides",
         {{"b", "2024-05-01T10:00:00Z", NULL}, {"a", "2024-05-01T10:00:00Z", NULL}},
         2,
         1,
         "workspace a"},
        {"a deleting active workspace blocks until removed",
         {{"alpha", "2024-05-01T10:00:00Z", "2024-06-01T00:00:00Z"},
          {"beta", "2024-05-02T10:00:00Z", NULL}},
         2,
         0,
         "being deleted; this workspace is blocked until alpha is removed"},
        {"promotion: once the active one is gone, the next oldest is active",
         {{"gamma", "2024-05-03T10:00:00Z", NULL}, {"beta", "2024-05-02T10:00:00Z", NULL}},
         2,
         1,
         "workspace beta"},
        {"a newer deleting workspace never becomes active",
         {{"alpha", "2024-05-01T10:00:00Z", NULL},
          {"beta", "2024-05-02T10:00:00Z", "2024-06-01T00:00:00Z"}},
         2,
         0,
         "workspace alpha"},
        {"no creation timestamp sorts last",
         {{"aaa", NULL, NULL}, {"zzz", "2024-05-01T10:00:00Z", NULL}},
         2,
         1,
         "workspace zzz"},
};

static void test_v0_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(v0_cases); i++) {
		const v0_case *c = &v0_cases[i];
		size_t active = 99;

		print_message("v0: %s\n", c->rule);
		assert_int_equal(tau_ws_desired_v0_active(&active, c->all, c->n), 0);
		assert_int_equal(active, c->active);
		for (size_t j = 0; j < c->n; j++) {
			tau_ws_refusal r;

			assert_int_equal(tau_ws_desired_v0_decide(&r, c->all, c->n, j), 0);
			if (j == c->active) {
				assert_null(r.reason);
				continue;
			}
			assert_string_equal(r.reason, "BlockedByActiveWorkspace");
			assert_true(r.retryable);
			if (strstr(r.message, c->msg_has) == NULL)
				fail_msg("%s: \"%s\" lacks \"%s\"", c->rule, r.message, c->msg_has);
		}
	}
}

static void test_v0_bad_input(void **state)
{
	tau_ws_v0_entry one = {"a", NULL, NULL};
	tau_ws_refusal r;
	size_t active = 7;

	(void)state;
	assert_int_equal(tau_ws_desired_v0_active(&active, NULL, 0), -TAU_ENOTFOUND);
	assert_int_equal(active, 7);
	assert_int_equal(tau_ws_desired_v0_decide(&r, &one, 1, 1), -TAU_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_spec_table),
	        cmocka_unit_test(test_spec_sample),
	        cmocka_unit_test(test_roles_and_queue_names),
	        cmocka_unit_test(test_desired_objects),
	        cmocka_unit_test(test_desired_variants),
	        cmocka_unit_test(test_drift_table),
	        cmocka_unit_test(test_drift_bad_input),
	        cmocka_unit_test(test_owned_table),
	        cmocka_unit_test(test_v0_table),
	        cmocka_unit_test(test_v0_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
