/*
 * test_workspace_status.c - TauWorkspace conditions, phase, the status
 * object's shape, lastTransitionTime preservation and the write-skipping
 * comparison.
 */
#include "workspace/status.h"

#include "workspace/drain.h"

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

#define NOW    "2024-06-01T12:00:00Z"
#define BEFORE "2024-05-01T08:00:00Z"

static const tau_ws_spec rbac_spec = {
        .name = "alpha",
        .uid = "u-1",
        .generation = 4,
        .authz = TAU_WS_AUTHZ_WORKSPACE_RBAC,
        .subject_kind = "Group",
        .subject_name = "g-1",
        .role = "researcher",
        .team = "research",
        .has_workload_identity = true,
        .wi_service_account = "alpha-workload",
        .wi_client_id = "c-1",
};

static const tau_ws_spec wide_spec = {
        .name = "beta",
        .generation = 1,
        .authz = TAU_WS_AUTHZ_CLUSTER_WIDE,
};

static const tau_ws_ns_result ns_ok = {.namespace_name = "ml-alpha", .resolved = true};

/* A pass that found everything in order. */
static tau_ws_status_input healthy(void)
{
	tau_ws_status_input in = {
	        .spec = &rbac_spec,
	        .workspace = "alpha",
	        .generation = 4,
	        .now = NOW,
	        .ns = &ns_ok,
	        .local_queue = "alpha",
	        .cluster_queue = "tau-ws-alpha",
	};
	return in;
}

/* ------------------------------------------------------------------------------------------ */
/* Phase                                                                                       */

static void test_phase_table(void **state)
{
	static const struct {
		tau_ws_cond_status rbac, queue, drift;
		const char *phase;
	} rows[] = {
	        {TAU_WS_TRUE, TAU_WS_TRUE, TAU_WS_FALSE, "Ready"},
	        {TAU_WS_TRUE, TAU_WS_TRUE, TAU_WS_UNKNOWN, "Ready"}, /* "not True" */
	        {TAU_WS_TRUE, TAU_WS_TRUE, TAU_WS_TRUE, "Degraded"},
	        {TAU_WS_FALSE, TAU_WS_TRUE, TAU_WS_FALSE, "Pending"},
	        {TAU_WS_TRUE, TAU_WS_FALSE, TAU_WS_FALSE, "Pending"},
	        {TAU_WS_UNKNOWN, TAU_WS_TRUE, TAU_WS_FALSE, "Pending"},
	        {TAU_WS_TRUE, TAU_WS_UNKNOWN, TAU_WS_FALSE, "Pending"},
	        {TAU_WS_FALSE, TAU_WS_FALSE, TAU_WS_UNKNOWN, "Pending"},
	        {TAU_WS_FALSE, TAU_WS_FALSE, TAU_WS_TRUE, "Degraded"},
	        {TAU_WS_FALSE, TAU_WS_TRUE, TAU_WS_TRUE, "Degraded"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(rows); i++)
		assert_string_equal(tau_ws_status_phase(rows[i].rbac, rows[i].queue, rows[i].drift),
		                    rows[i].phase);
	assert_string_equal(tau_ws_status_cond_name(TAU_WS_TRUE), "True");
	assert_string_equal(tau_ws_status_cond_name(TAU_WS_FALSE), "False");
	assert_string_equal(tau_ws_status_cond_name(TAU_WS_UNKNOWN), "Unknown");
}

/* ------------------------------------------------------------------------------------------ */
/* Conditions                                                                                  */

typedef void (*setup_fn)(tau_ws_status_input *in);

typedef struct expect {
	tau_ws_cond_status status;
	const char *reason;
	const char *msg_has; /* NULL: not checked */
} expect;

typedef struct cond_case {
	const char *rule;
	setup_fn setup;
	expect e[TAU_WS_N_CONDITIONS];
	const char *phase;
} cond_case;

static void s_none(tau_ws_status_input *in)
{
	(void)in;
}

static tau_ws_refusal invalid_spec, blocked;
static tau_ws_ns_result ns_not_allowed, ns_owned_by_other;

static void s_invalid_spec(tau_ws_status_input *in)
{
	tau_ws_namespace_refuse(&invalid_spec, "InvalidSpec", false,
	                        "spec.role: Unsupported value: \"admin\"");
	in->refusal = &invalid_spec;
	in->spec = NULL;
	in->ns = NULL;
}

static void s_v0_blocked(tau_ws_status_input *in)
{
	tau_ws_namespace_refuse(&blocked, "BlockedByActiveWorkspace", true,
	                        "v0 activates one workspace at a time: workspace zeta is active");
	in->refusal = &blocked;
}

static void s_not_allowed(tau_ws_status_input *in)
{
	memset(&ns_not_allowed, 0, sizeof(ns_not_allowed));
	snprintf(ns_not_allowed.namespace_name, sizeof(ns_not_allowed.namespace_name), "ml-alpha");
	tau_ws_namespace_refuse(
	        &ns_not_allowed.refusal, "NamespaceNotAllowed", true,
	        "namespace ml-alpha is not on the operator namespace allowlist yet");
	in->ns = &ns_not_allowed;
}

static void s_owned_by_other_no_wi(tau_ws_status_input *in)
{
	static tau_ws_spec no_wi;

	no_wi = rbac_spec;
	no_wi.has_workload_identity = false;
	memset(&ns_owned_by_other, 0, sizeof(ns_owned_by_other));
	tau_ws_namespace_refuse(&ns_owned_by_other.refusal, "NamespaceOwnedByOtherWorkspace", true,
	                        "namespace ml-alpha is owned by workspace beta");
	in->ns = &ns_owned_by_other;
	in->spec = &no_wi;
}

static void s_cluster_wide(tau_ws_status_input *in)
{
	in->spec = &wide_spec;
	in->rolebinding.state = TAU_WS_OBJ_MISSING; /* ignored */
}

static void s_rb_missing(tau_ws_status_input *in)
{
	in->rolebinding.state = TAU_WS_OBJ_MISSING;
}

static void s_rb_mismatch(tau_ws_status_input *in)
{
	in->rolebinding.state = TAU_WS_OBJ_MISMATCH;
	in->rolebinding.detail = "roleRef.name is \"admin\", want \"tau-researcher\"";
}

static void s_rb_not_owned(tau_ws_status_input *in)
{
	in->rolebinding.state = TAU_WS_OBJ_NOT_OWNED;
	in->rolebinding.detail = "label tau.azure.com/workspace is \"beta\", not \"alpha\"";
}

static void s_rb_error(tau_ws_status_input *in)
{
	in->rolebinding.state = TAU_WS_OBJ_ERROR;
	in->rolebinding.detail = "forbidden: cannot create rolebindings";
}

static void s_revocation(tau_ws_status_input *in)
{
	in->revocation_pending = true;
	in->revocation_detail = "ServiceAccount ml-alpha/old-wi is terminating";
}

static void s_lq_missing(tau_ws_status_input *in)
{
	in->lq.state = TAU_WS_OBJ_MISSING;
}

static void s_lq_mismatch(tau_ws_status_input *in)
{
	in->lq.state = TAU_WS_OBJ_MISMATCH;
	in->lq.detail = "it points at ClusterQueue legacy (spec.clusterQueue is immutable)";
}

static void s_lq_not_owned(tau_ws_status_input *in)
{
	in->lq.state = TAU_WS_OBJ_NOT_OWNED;
}

static void s_lq_error(tau_ws_status_input *in)
{
	in->lq.state = TAU_WS_OBJ_ERROR;
	in->lq.detail = "the server could not find the requested resource";
}

static void s_cq_missing(tau_ws_status_input *in)
{
	in->cq.state = TAU_WS_OBJ_MISSING;
}

static void s_cq_error(tau_ws_status_input *in)
{
	in->cq.state = TAU_WS_OBJ_ERROR;
	in->cq.detail = "timeout";
}

static void s_no_wi(tau_ws_status_input *in)
{
	in->spec = &wide_spec;
}

static void s_sa_missing(tau_ws_status_input *in)
{
	in->sa.state = TAU_WS_OBJ_MISSING;
}

static void s_sa_mismatch(tau_ws_status_input *in)
{
	in->sa.state = TAU_WS_OBJ_MISMATCH;
	in->sa.detail = "client-id is \"c-9\", want \"c-1\"";
}

static void s_sa_not_owned(tau_ws_status_input *in)
{
	in->sa.state = TAU_WS_OBJ_NOT_OWNED;
}

static void s_sa_error(tau_ws_status_input *in)
{
	in->sa.state = TAU_WS_OBJ_ERROR;
}

static const tau_ws_drift_item fixed[] = {
        {"LocalQueue ml-alpha/alpha", "spec.clusterQueue is \"x\", want \"tau-ws-alpha\"", true},
};
static const tau_ws_drift_item open_and_fixed[] = {
        {"LocalQueue ml-alpha/alpha", "spec.clusterQueue is \"x\"", true},
        {"RoleBinding ml-alpha/tau-workspace-alpha", "roleRef.name is \"admin\"", false},
        {"ServiceAccount ml-alpha/a", "client-id", false},
        {"Namespace ml-alpha", "labels", false},
        {"ServiceAccount ml-alpha/b", "tenant-id", false},
        {"ServiceAccount ml-alpha/c", "tenant-id", false},
};

static void s_drift_fixed(tau_ws_status_input *in)
{
	in->drift = fixed;
	in->n_drift = ARRAY_LEN(fixed);
}

static void s_drift_open(tau_ws_status_input *in)
{
	in->drift = open_and_fixed;
	in->n_drift = ARRAY_LEN(open_and_fixed);
}

static void s_drift_open_and_pending(tau_ws_status_input *in)
{
	s_drift_open(in);
	in->lq.state = TAU_WS_OBJ_MISSING;
}

#define OK_RBAC                                                                                    \
	{                                                                                          \
		TAU_WS_TRUE, "RoleBindingReady",                                                   \
		        "RoleBinding ml-alpha/tau-workspace-alpha binds Group \"g-1\" to "         \
		        "ClusterRole tau-researcher"                                               \
	}
#define OK_QUEUE                                                                                   \
	{                                                                                          \
		TAU_WS_TRUE, "LocalQueueReady",                                                    \
		        "LocalQueue ml-alpha/alpha submits to ClusterQueue tau-ws-alpha"           \
	}
#define OK_WI                                                                                      \
	{                                                                                          \
		TAU_WS_TRUE, "ServiceAccountReady", "ServiceAccount ml-alpha/alpha-workload"       \
	}
#define NO_WI                                                                                      \
	{                                                                                          \
		TAU_WS_TRUE, "NotConfigured", "spec.workloadIdentity is unset"                     \
	}
#define NO_DRIFT                                                                                   \
	{                                                                                          \
		TAU_WS_FALSE, "NoDrift", NULL                                                      \
	}
#define NOT_EVAL                                                                                   \
	{                                                                                          \
		TAU_WS_UNKNOWN, "NotEvaluated", NULL                                               \
	}

static const cond_case cond_cases[] = {
        {"everything in order", s_none, {OK_RBAC, OK_QUEUE, OK_WI, NO_DRIFT}, "Ready"},
        {"invalid spec refuses everything",
         s_invalid_spec,
         {{TAU_WS_FALSE, "InvalidSpec", "spec.role"},
          {TAU_WS_FALSE, "InvalidSpec", "spec.role"},
          NO_WI,
          NOT_EVAL},
         "Pending"},
        {"v0 blocked",
         s_v0_blocked,
         {{TAU_WS_FALSE, "BlockedByActiveWorkspace", "workspace zeta is active"},
          {TAU_WS_FALSE, "BlockedByActiveWorkspace", "workspace zeta is active"},
          {TAU_WS_FALSE, "BlockedByActiveWorkspace", NULL},
          NOT_EVAL},
         "Pending"},
        {"namespace not allowed yet: QueueReady and RBACReady False",
         s_not_allowed,
         {{TAU_WS_FALSE, "NamespaceNotAllowed", "not on the operator"},
          {TAU_WS_FALSE, "NamespaceNotAllowed", "not on the operator"},
          {TAU_WS_FALSE, "NamespaceNotAllowed", NULL},
          NOT_EVAL},
         "Pending"},
        {"namespace owned by another workspace",
         s_owned_by_other_no_wi,
         {{TAU_WS_FALSE, "NamespaceOwnedByOtherWorkspace", "workspace beta"},
          {TAU_WS_FALSE, "NamespaceOwnedByOtherWorkspace", "workspace beta"},
          NO_WI,
          NOT_EVAL},
         "Pending"},
        {"cluster-wide needs no binding",
         s_cluster_wide,
         {{TAU_WS_TRUE, "ClusterWideAuthorization", "no RoleBinding is written"},
          OK_QUEUE,
          NO_WI,
          NO_DRIFT},
         "Ready"},
        {"RoleBinding missing",
         s_rb_missing,
         {{TAU_WS_FALSE, "RoleBindingMissing",
           "RoleBinding ml-alpha/tau-workspace-alpha does not exist yet"},
          OK_QUEUE,
          OK_WI,
          NO_DRIFT},
         "Pending"},
        {"RoleBinding differs",
         s_rb_mismatch,
         {{TAU_WS_FALSE, "RoleBindingMismatch", "roleRef.name is \"admin\""},
          OK_QUEUE,
          OK_WI,
          NO_DRIFT},
         "Pending"},
        {"RoleBinding not ours",
         s_rb_not_owned,
         {{TAU_WS_FALSE, "RoleBindingNotOwned", "left alone"}, OK_QUEUE, OK_WI, NO_DRIFT},
         "Pending"},
        {"RoleBinding API error",
         s_rb_error,
         {{TAU_WS_FALSE, "RoleBindingError", "forbidden"}, OK_QUEUE, OK_WI, NO_DRIFT},
         "Pending"},
        {"identity revocation pending withholds access",
         s_revocation,
         {{TAU_WS_FALSE, "IdentityRevocationPending", "old-wi is terminating"},
          OK_QUEUE,
          OK_WI,
          NO_DRIFT},
         "Pending"},
        {"LocalQueue missing",
         s_lq_missing,
         {OK_RBAC,
          {TAU_WS_FALSE, "LocalQueueMissing", "LocalQueue ml-alpha/alpha does not exist"},
          OK_WI,
          NO_DRIFT},
         "Pending"},
        {"LocalQueue points elsewhere",
         s_lq_mismatch,
         {OK_RBAC,
          {TAU_WS_FALSE, "LocalQueueMismatch",
           "does not submit to ClusterQueue tau-ws-alpha: it points at ClusterQueue legacy"},
          OK_WI,
          NO_DRIFT},
         "Pending"},
        {"LocalQueue not ours",
         s_lq_not_owned,
         {OK_RBAC, {TAU_WS_FALSE, "LocalQueueNotOwned", "left alone"}, OK_WI, NO_DRIFT},
         "Pending"},
        {"LocalQueue API error",
         s_lq_error,
         {OK_RBAC, {TAU_WS_FALSE, "LocalQueueError", "could not find"}, OK_WI, NO_DRIFT},
         "Pending"},
        {"ClusterQueue missing",
         s_cq_missing,
         {OK_RBAC,
          {TAU_WS_FALSE, "ClusterQueueNotFound",
           "ClusterQueue tau-ws-alpha, which LocalQueue ml-alpha/alpha submits to, does not "
           "exist"},
          OK_WI,
          NO_DRIFT},
         "Pending"},
        {"ClusterQueue unreadable",
         s_cq_error,
         {OK_RBAC, {TAU_WS_FALSE, "ClusterQueueError", "timeout"}, OK_WI, NO_DRIFT},
         "Pending"},
        {"workloadIdentity unset is not a failure",
         s_no_wi,
         {{TAU_WS_TRUE, "ClusterWideAuthorization", NULL}, OK_QUEUE, NO_WI, NO_DRIFT},
         "Ready"},
        {"ServiceAccount missing does not gate the phase",
         s_sa_missing,
         {OK_RBAC,
          OK_QUEUE,
          {TAU_WS_FALSE, "ServiceAccountMissing", "alpha-workload does not exist yet"},
          NO_DRIFT},
         "Ready"},
        {"ServiceAccount annotations differ",
         s_sa_mismatch,
         {OK_RBAC, OK_QUEUE, {TAU_WS_FALSE, "ServiceAccountMismatch", "c-9"}, NO_DRIFT},
         "Ready"},
        {"ServiceAccount not ours",
         s_sa_not_owned,
         {OK_RBAC, OK_QUEUE, {TAU_WS_FALSE, "ServiceAccountNotOwned", NULL}, NO_DRIFT},
         "Ready"},
        {"ServiceAccount API error",
         s_sa_error,
         {OK_RBAC, OK_QUEUE, {TAU_WS_FALSE, "ServiceAccountError", NULL}, NO_DRIFT},
         "Ready"},
        {"corrected drift is reported but not Degraded",
         s_drift_fixed,
         {OK_RBAC,
          OK_QUEUE,
          OK_WI,
          {TAU_WS_FALSE, "DriftCorrected", "LocalQueue ml-alpha/alpha (spec."}},
         "Ready"},
        {"drift that could not be corrected: Degraded, objects named",
         s_drift_open,
         {OK_RBAC,
          OK_QUEUE,
          OK_WI,
          {TAU_WS_TRUE, "ObjectDrifted",
           "RoleBinding ml-alpha/tau-workspace-alpha (roleRef.name is \"admin\"); "
           "ServiceAccount ml-alpha/a (client-id); Namespace ml-alpha (labels); and 2 more"}},
         "Degraded"},
        {"drift wins over Pending",
         s_drift_open_and_pending,
         {OK_RBAC,
          {TAU_WS_FALSE, "LocalQueueMissing", NULL},
          OK_WI,
          {TAU_WS_TRUE, "ObjectDrifted", NULL}},
         "Degraded"},
};

static void test_conditions_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cond_cases); i++) {
		const cond_case *c = &cond_cases[i];
		tau_ws_status_input in = healthy();
		tau_ws_condition got[TAU_WS_N_CONDITIONS];
		cJSON *st = NULL;
		const char *phase = NULL;

		c->setup(&in);
		print_message("conditions: %s\n", c->rule);
		assert_int_equal(tau_ws_status_conditions(got, &in), 0);
		for (size_t k = 0; k < TAU_WS_N_CONDITIONS; k++) {
			if (got[k].status != c->e[k].status ||
			    strcmp(got[k].reason, c->e[k].reason) != 0)
				fail_msg("%s: %s is %s/%s, want %s/%s (%s)", c->rule, got[k].type,
				         tau_ws_status_cond_name(got[k].status), got[k].reason,
				         tau_ws_status_cond_name(c->e[k].status), c->e[k].reason,
				         got[k].message);
			if (c->e[k].msg_has != NULL &&
			    strstr(got[k].message, c->e[k].msg_has) == NULL)
				fail_msg("%s: %s message \"%s\" lacks \"%s\"", c->rule, got[k].type,
				         got[k].message, c->e[k].msg_has);
			assert_true(got[k].message[0] != '\0');
		}
		assert_string_equal(got[TAU_WS_RBAC].type, "RBACReady");
		assert_string_equal(got[TAU_WS_QUEUE].type, "QueueReady");
		assert_string_equal(got[TAU_WS_WI].type, "WorkloadIdentityReady");
		assert_string_equal(got[TAU_WS_DRIFT].type, "DriftDetected");
		assert_int_equal(tau_ws_status_build(&st, &in), 0);
		assert_int_equal(tau_json_get_string(&phase, st, "phase"), 0);
		assert_string_equal(phase, c->phase);
		cJSON_Delete(st);
	}
}

static void test_conditions_bad_input(void **state)
{
	tau_ws_condition got[TAU_WS_N_CONDITIONS];
	tau_ws_status_input in = healthy();
	cJSON *st = (cJSON *)&in;

	(void)state;
	in.ns = NULL;
	assert_int_equal(tau_ws_status_conditions(got, &in), -TAU_EINVAL);
	assert_int_equal(tau_ws_status_build(&st, &in), -TAU_EINVAL);
	assert_ptr_equal(st, (cJSON *)&in);
	in = healthy();
	in.now = NULL;
	assert_int_equal(tau_ws_status_build(&st, &in), -TAU_EINVAL);
	assert_int_equal(tau_ws_status_conditions(got, NULL), -TAU_EINVAL);
}

/* ------------------------------------------------------------------------------------------ */
/* Status object                                                                               */

static char *print(const cJSON *j)
{
	char *s = NULL;

	assert_int_equal(tau_json_print(&s, j), 0);
	return s;
}

static void test_status_shape(void **state)
{
	tau_ws_status_input in = healthy();
	cJSON *st = NULL;
	char *s;

	(void)state;
	in.cluster_queue_uid = "cq-uid";
	assert_int_equal(tau_ws_status_build(&st, &in), 0);
	s = print(st);
	assert_string_equal(
	        s, "{\"phase\":\"Ready\",\"observedGeneration\":4,"
	           "\"target\":{\"resolvedNamespace\":\"ml-alpha\"},"
	           "\"queue\":{\"localQueue\":\"alpha\",\"clusterQueue\":\"tau-ws-alpha\","
	           "\"clusterQueueUID\":\"cq-uid\"},\"conditions\":["
	           "{\"type\":\"RBACReady\",\"status\":\"True\",\"reason\":\"RoleBindingReady\","
	           "\"message\":\"RoleBinding ml-alpha/tau-workspace-alpha binds Group \\\"g-1\\\" "
	           "to ClusterRole tau-researcher\",\"lastTransitionTime\":\"" NOW "\","
	           "\"observedGeneration\":4},"
	           "{\"type\":\"QueueReady\",\"status\":\"True\",\"reason\":\"LocalQueueReady\","
	           "\"message\":\"LocalQueue ml-alpha/alpha submits to ClusterQueue tau-ws-alpha\","
	           "\"lastTransitionTime\":\"" NOW "\",\"observedGeneration\":4},"
	           "{\"type\":\"WorkloadIdentityReady\",\"status\":\"True\","
	           "\"reason\":\"ServiceAccountReady\",\"message\":\"ServiceAccount "
	           "ml-alpha/alpha-workload is annotated with azure.workload.identity/client-id "
	           "c-1\",\"lastTransitionTime\":\"" NOW "\",\"observedGeneration\":4},"
	           "{\"type\":\"DriftDetected\",\"status\":\"False\",\"reason\":\"NoDrift\","
	           "\"message\":\"owned objects match the desired state\","
	           "\"lastTransitionTime\":\"" NOW "\",\"observedGeneration\":4}]}");
	free(s);
	cJSON_Delete(st);
}

/* Another controller's condition (the budget's QuotaReady) survives a rebuild unchanged, so
 * the two writers never undo each other; ours are rebuilt. */
static void test_status_keeps_foreign_conditions(void **state)
{
	tau_ws_status_input in = healthy();
	cJSON *prev = cJSON_Parse(
	        "{\"conditions\":[{\"type\":\"QuotaReady\",\"status\":\"False\","
	        "\"reason\":\"ReductionBlocked\",\"message\":\"refusing\","
	        "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\",\"observedGeneration\":3},"
	        "{\"type\":\"QueueReady\",\"status\":\"False\",\"reason\":\"Old\","
	        "\"message\":\"old\"}]}");
	cJSON *st = NULL, *again = NULL;
	const cJSON *c;

	(void)state;
	assert_non_null(prev);
	in.previous = prev;
	assert_int_equal(tau_ws_status_build(&st, &in), 0);
	assert_int_equal(cJSON_GetArraySize(tau_json_find(st, "conditions")), 5);
	c = cJSON_GetArrayItem(tau_json_find(st, "conditions"), 4);
	assert_true(
	        cJSON_Compare(c, cJSON_GetArrayItem(tau_json_find(prev, "conditions"), 0), true));
	c = cJSON_GetArrayItem(tau_json_find(st, "conditions"), 1);
	assert_string_equal(cJSON_GetObjectItem(c, "reason")->valuestring, "LocalQueueReady");
	/* Steady: the rebuilt status compared with itself changes nothing. */
	in.previous = st;
	assert_int_equal(tau_ws_status_build(&again, &in), 0);
	assert_false(tau_ws_status_changed(again, st));
	cJSON_Delete(again);
	cJSON_Delete(st);
	cJSON_Delete(prev);
}

static void test_status_refused_omits_target(void **state)
{
	tau_ws_status_input in = healthy();
	cJSON *st = NULL;

	(void)state;
	s_not_allowed(&in);
	assert_int_equal(tau_ws_status_build(&st, &in), 0);
	assert_null(tau_json_find(st, "target"));
	assert_null(tau_json_find(st, "queue"));
	cJSON_Delete(st);
	/* A retained namespace (retarget draining) is reported as given. */
	in = healthy();
	in.resolved_namespace = "ml-old";
	assert_int_equal(tau_ws_status_build(&st, &in), 0);
	assert_string_equal(cJSON_GetStringValue(tau_json_find(st, "target.resolvedNamespace")),
	                    "ml-old");
	cJSON_Delete(st);
}

static const char *ltt(const cJSON *st, size_t idx)
{
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), (int)idx);

	return cJSON_GetStringValue(cJSON_GetObjectItem(c, "lastTransitionTime"));
}

static void test_transitions_preserve_time(void **state)
{
	tau_ws_status_input in = healthy();
	cJSON *first = NULL, *second = NULL, *third = NULL;

	(void)state;
	/* First pass: LocalQueue missing. Everything stamped BEFORE. */
	in.now = BEFORE;
	in.lq.state = TAU_WS_OBJ_MISSING;
	assert_int_equal(tau_ws_status_build(&first, &in), 0);
	for (size_t i = 0; i < TAU_WS_N_CONDITIONS; i++)
		assert_string_equal(ltt(first, i), BEFORE);

	/* Second pass: the LocalQueue exists.  Only QueueReady changed status. */
	in = healthy();
	in.previous = first;
	assert_int_equal(tau_ws_status_build(&second, &in), 0);
	assert_string_equal(ltt(second, TAU_WS_RBAC), BEFORE);
	assert_string_equal(ltt(second, TAU_WS_QUEUE), NOW);
	assert_string_equal(ltt(second, TAU_WS_WI), BEFORE);
	assert_string_equal(ltt(second, TAU_WS_DRIFT), BEFORE);
	assert_true(tau_ws_status_changed(second, first));

	/* Reason and message change without a status change keep the time too. */
	in = healthy();
	in.previous = second;
	in.now = "2024-07-01T00:00:00Z";
	in.drift = fixed;
	in.n_drift = 1;
	assert_int_equal(tau_ws_status_build(&third, &in), 0);
	assert_string_equal(ltt(third, TAU_WS_DRIFT), BEFORE);
	assert_string_equal(ltt(third, TAU_WS_QUEUE), NOW);
	assert_true(tau_ws_status_changed(third, second));
	cJSON_Delete(first);
	cJSON_Delete(second);
	cJSON_Delete(third);
}

static void test_previous_without_time(void **state)
{
	cJSON *prev = cJSON_Parse("{\"conditions\":[{\"type\":\"RBACReady\",\"status\":\"True\"},"
	                          "{\"type\":\"QueueReady\",\"status\":\"True\","
	                          "\"lastTransitionTime\":\"\"}, 7]}");
	tau_ws_status_input in = healthy();
	cJSON *st = NULL;

	(void)state;
	in.previous = prev;
	assert_int_equal(tau_ws_status_build(&st, &in), 0);
	assert_string_equal(ltt(st, TAU_WS_RBAC), NOW);
	assert_string_equal(ltt(st, TAU_WS_QUEUE), NOW);
	cJSON_Delete(st);
	cJSON_Delete(prev);
}

/* ------------------------------------------------------------------------------------------ */
/* Write skipping                                                                              */

typedef void (*edit_fn)(cJSON *current);

static cJSON *cond(cJSON *st, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(st, "conditions"), i);
}

static void e_none(cJSON *c)
{
	(void)c;
}

static void e_ltt(cJSON *c)
{
	cJSON_ReplaceItemInObject(cond(c, 0), "lastTransitionTime",
	                          cJSON_CreateString("1999-01-01T00:00:00Z"));
}

static void e_order(cJSON *c)
{
	cJSON *arr = cJSON_GetObjectItem(c, "conditions");
	cJSON *first = cJSON_DetachItemFromArray(arr, 0);

	cJSON_AddItemToArray(arr, first);
}

static void e_message(cJSON *c)
{
	cJSON_ReplaceItemInObject(cond(c, 1), "message", cJSON_CreateString("old words"));
}

static void e_reason(cJSON *c)
{
	cJSON_ReplaceItemInObject(cond(c, 2), "reason", cJSON_CreateString("Old"));
}

static void e_status(cJSON *c)
{
	cJSON_ReplaceItemInObject(cond(c, 3), "status", cJSON_CreateString("Unknown"));
}

static void e_cond_generation(cJSON *c)
{
	cJSON_ReplaceItemInObject(cond(c, 0), "observedGeneration", cJSON_CreateNumber(3));
}

static void e_generation(cJSON *c)
{
	cJSON_ReplaceItemInObject(c, "observedGeneration", cJSON_CreateNumber(3));
}

static void e_phase(cJSON *c)
{
	cJSON_ReplaceItemInObject(c, "phase", cJSON_CreateString("Pending"));
}

static void e_namespace(cJSON *c)
{
	cJSON_DeleteItemFromObject(c, "target");
}

static void e_queue(cJSON *c)
{
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(c, "queue"), "clusterQueue",
	                          cJSON_CreateString("x"));
}

static void e_extra_condition(cJSON *c)
{
	cJSON *x = cJSON_CreateObject();

	cJSON_AddStringToObject(x, "type", "StorageReady");
	cJSON_AddStringToObject(x, "status", "True");
	cJSON_AddItemToArray(cJSON_GetObjectItem(c, "conditions"), x);
}

static void e_missing_condition(cJSON *c)
{
	cJSON_DeleteItemFromArray(cJSON_GetObjectItem(c, "conditions"), 3);
}

static void e_unknown_field(cJSON *c)
{
	cJSON_AddStringToObject(c, "somethingElse", "kept by the server");
}

static void test_status_changed_table(void **state)
{
	static const struct {
		const char *rule;
		edit_fn edit;
		bool changed;
	} rows[] = {
	        {"identical", e_none, false},
	        {"lastTransitionTime churn only", e_ltt, false},
	        {"conditions in another order", e_order, false},
	        {"a field we do not own", e_unknown_field, false},
	        {"message", e_message, true},
	        {"reason", e_reason, true},
	        {"status", e_status, true},
	        {"condition observedGeneration", e_cond_generation, true},
	        {"observedGeneration", e_generation, true},
	        {"phase", e_phase, true},
	        {"resolved namespace", e_namespace, true},
	        {"queue", e_queue, true},
	        {"a condition we do not write", e_extra_condition, true},
	        {"a condition missing", e_missing_condition, true},
	};
	tau_ws_status_input in = healthy();
	cJSON *desired = NULL;

	(void)state;
	assert_int_equal(tau_ws_status_build(&desired, &in), 0);
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		cJSON *current = cJSON_Duplicate(desired, 1);

		rows[i].edit(current);
		if (tau_ws_status_changed(desired, current) != rows[i].changed)
			fail_msg("%s: changed should be %d", rows[i].rule, rows[i].changed);
		cJSON_Delete(current);
	}
	assert_true(tau_ws_status_changed(desired, NULL));
	assert_false(tau_ws_status_changed(NULL, desired));
	cJSON_Delete(desired);
}

/* A pass over an unchanged world rebuilds an identical status: no write. */
static void test_idempotent(void **state)
{
	tau_ws_status_input in = healthy();
	cJSON *a = NULL, *b = NULL;
	char *sa, *sb;

	(void)state;
	in.now = BEFORE;
	assert_int_equal(tau_ws_status_build(&a, &in), 0);
	in.previous = a;
	in.now = NOW;
	assert_int_equal(tau_ws_status_build(&b, &in), 0);
	sa = print(a);
	sb = print(b);
	assert_string_equal(sa, sb);
	assert_false(tau_ws_status_changed(b, a));
	free(sa);
	free(sb);
	cJSON_Delete(a);
	cJSON_Delete(b);
}

/* docs/workspaces.md lists every reason string the ws* modules produce. */
static void test_docs_list_every_reason(void **state)
{
	static const char *const reasons[] = {
	        "InvalidSpec",
	        "BlockedByActiveWorkspace",
	        "ClusterWideAuthorization",
	        "RoleBindingReady",
	        "RoleBindingMissing",
	        "RoleBindingMismatch",
	        "RoleBindingNotOwned",
	        "RoleBindingError",
	        "IdentityRevocationPending",
	        "LocalQueueReady",
	        "LocalQueueMissing",
	        "LocalQueueMismatch",
	        "LocalQueueNotOwned",
	        "LocalQueueError",
	        "ClusterQueueNotFound",
	        "ClusterQueueError",
	        "NotConfigured",
	        "ServiceAccountReady",
	        "ServiceAccountMissing",
	        "ServiceAccountMismatch",
	        "ServiceAccountNotOwned",
	        "ServiceAccountError",
	        "NoDrift",
	        "DriftCorrected",
	        "ObjectDrifted",
	        "NotEvaluated",
	        "DrainPending",
	        "SourceDiscoveryFailed",
	};
	char path[4096];
	FILE *f;
	char *doc;
	long len;

	(void)state;
#ifdef TAU_SOURCE_DIR
	snprintf(path, sizeof(path), "%s/docs/workspaces.md", TAU_SOURCE_DIR);
#else
	snprintf(path, sizeof(path), "docs/workspaces.md");
#endif
	f = fopen(path, "rb");
	if (f == NULL) {
		print_message("skip doc check: %s not found\n", path);
		return;
	}
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	doc = calloc(1, (size_t)len + 1);
	assert_non_null(doc);
	assert_int_equal(fread(doc, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	for (size_t r = 0; r < ARRAY_LEN(reasons); r++) {
		char quoted[80];

		snprintf(quoted, sizeof(quoted), "`%s`", reasons[r]);
		if (strstr(doc, quoted) == NULL)
			fail_msg("docs/workspaces.md does not list %s", reasons[r]);
	}
	free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_phase_table),
	        cmocka_unit_test(test_conditions_table),
	        cmocka_unit_test(test_conditions_bad_input),
	        cmocka_unit_test(test_status_shape),
	        cmocka_unit_test(test_status_keeps_foreign_conditions),
	        cmocka_unit_test(test_status_refused_omits_target),
	        cmocka_unit_test(test_transitions_preserve_time),
	        cmocka_unit_test(test_previous_without_time),
	        cmocka_unit_test(test_status_changed_table),
	        cmocka_unit_test(test_idempotent),
	        cmocka_unit_test(test_docs_list_every_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
