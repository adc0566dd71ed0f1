/*
 * test_workspace_drain.c - the drain decision per kind of work and per
 * discovery state, reading sources from JSON, and the ordered plan for the
 * old namespace (identity revoked before access is granted).
 */
#include "workspace/drain.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const queues[] = {"alpha", "alpha-old"};

#define WL(n, q, fin)                                                                              \
	{                                                                                          \
		TAU_WS_SRC_WORKLOAD, (n), (q), NULL, NULL, (fin), NULL                             \
	}
#define JOB(n, q, fin)                                                                             \
	{                                                                                          \
		TAU_WS_SRC_JOB, (n), (q), NULL, NULL, (fin), NULL                                  \
	}
#define RJ(n, q, st)                                                                               \
	{                                                                                          \
		TAU_WS_SRC_RAYJOB, (n), (q), NULL, NULL, false, (st)                               \
	}
#define RS(n, q)                                                                                   \
	{                                                                                          \
		TAU_WS_SRC_RAYSERVICE, (n), (q), NULL, NULL, false, NULL                           \
	}
#define DEP(n, q, tq, m)                                                                           \
	{                                                                                          \
		TAU_WS_SRC_DEPLOYMENT, (n), (q), (tq), (m), false, NULL                            \
	}

enum { L = TAU_WS_API_LISTED, A = TAU_WS_API_ABSENT, U = TAU_WS_API_UNREADABLE };

typedef struct drain_case {
	const char *rule;
	tau_ws_source src[4];
	size_t n;
	int api[TAU_WS_SRC_KINDS]; /* Workload, Job, RayJob, RayService, Deployment */
	bool may;
	size_t blocking;
	const char *reason;
	const char *msg_has;
} drain_case;

static const drain_case drain_cases[] = {
        {"nothing left: cleanup proceeds", {{0}}, 0, {L, L, L, L, L}, true, 0, NULL, NULL},
        {"unfinished Workload on a retained queue blocks",
         {WL("wl-1", "alpha", false)},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "Workload ml-alpha/wl-1 (unfinished)"},
        {"finished Workload does not block",
         {WL("wl-1", "alpha", true)},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"Workload on someone else's queue does not block",
         {WL("wl-1", "other", false)},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"every retained queue counts",
         {WL("wl-1", "alpha-old", false)},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         NULL},
        {"submitted Job without a Workload yet blocks",
         {JOB("train", "alpha", false)},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "Job ml-alpha/train"},
        {"completed or failed Job does not block",
         {JOB("train", "alpha", true)},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"Job without a queue label does not block",
         {JOB("train", NULL, false)},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"RayJob Running blocks",
         {RJ("rj", "alpha", "Running")},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "RayJob ml-alpha/rj (jobDeploymentStatus Running)"},
        {"RayJob with a failed driver awaiting retry blocks",
         {RJ("rj", "alpha", "Retrying")},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "Retrying"},
        {"RayJob not started yet blocks",
         {RJ("rj", "alpha", NULL)},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "jobDeploymentStatus unset"},
        {"RayJob Complete does not block",
         {RJ("rj", "alpha", "Complete")},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"RayJob Failed does not block",
         {RJ("rj", "alpha", "Failed")},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"RayService always blocks, even if its Workload finished",
         {RS("serve", "alpha"), WL("serve-wl", "alpha", true)},
         2,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "RayService ml-alpha/serve (no terminal state: delete it)"},
        {"managed Deployment found by its pod template",
         {DEP("web", NULL, "alpha", "true")},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         "Deployment ml-alpha/web (no terminal state: delete it)"},
        {"Deployment labelled itself blocks",
         {DEP("web", "alpha", NULL, NULL)},
         1,
         {L, L, L, L, L},
         false,
         1,
         "DrainPending",
         NULL},
        {"template queue without the managed label is not Kueue's",
         {DEP("web", NULL, "alpha", NULL)},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"managed template on another queue",
         {DEP("web", NULL, "other", "true")},
         1,
         {L, L, L, L, L},
         true,
         0,
         NULL,
         NULL},
        {"RayJob API absent is skipped", {{0}}, 0, {L, L, A, L, L}, true, 0, NULL, NULL},
        {"RayService API absent is tolerated on its own",
         {RJ("rj", "alpha", "Running")},
         1,
         {L, L, L, A, L},
         false,
         1,
         "DrainPending",
         "RayJob"},
        {"Kueue API absent is tolerated", {{0}}, 0, {A, L, L, L, L}, true, 0, NULL, NULL},
        {"RayJobs unreadable block",
         {{0}},
         0,
         {L, L, U, L, L},
         false,
         0,
         "SourceDiscoveryFailed",
         "until RayJobs can be listed: forbidden"},
        {"RayServices unreadable block",
         {{0}},
         0,
         {L, L, L, U, L},
         false,
         0,
         "SourceDiscoveryFailed",
         "RayServices"},
        {"Deployments unreadable block",
         {{0}},
         0,
         {L, L, L, L, U},
         false,
         0,
         "SourceDiscoveryFailed",
         "Deployments"},
        {"Jobs unreadable block",
         {{0}},
         0,
         {L, U, L, L, L},
         false,
         0,
         "SourceDiscoveryFailed",
         "Jobs"},
        {"Workloads unreadable block",
         {{0}},
         0,
         {U, L, L, L, L},
         false,
         0,
         "SourceDiscoveryFailed",
         "Workloads"},
        {"a core API reported absent blocks",
         {{0}},
         0,
         {L, L, L, L, A},
         false,
         0,
         "SourceDiscoveryFailed",
         "the API is not served"},
        {"many blockers are counted and summarised",
         {JOB("j1", "alpha", false), JOB("j2", "alpha", false), RS("s1", "alpha"),
          DEP("d1", "alpha", NULL, NULL)},
         4,
         {L, L, L, L, L},
         false,
         4,
         "DrainPending",
         "waits for 4 sources"},
};

static void test_drain_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(drain_cases); i++) {
		const drain_case *c = &drain_cases[i];
		tau_ws_drain_input in = {.namespace_name = "ml-alpha",
		                         .queues = queues,
		                         .n_queues = ARRAY_LEN(queues),
		                         .sources = c->src,
		                         .n_sources = c->n};
		tau_ws_drain_decision d;

		for (int k = 0; k < TAU_WS_SRC_KINDS; k++) {
			in.api[k] = (tau_ws_api_state)c->api[k];
			if (c->api[k] == U)
				in.api_error[k] = "forbidden";
		}
		print_message("drain: %s\n", c->rule);
		assert_int_equal(tau_ws_drain_decide(&d, &in), 0);
		assert_int_equal(d.may_cleanup, c->may);
		assert_int_equal(d.n_blocking, c->blocking);
		if (c->may) {
			assert_null(d.refusal.reason);
			continue;
		}
		assert_string_equal(d.refusal.reason, c->reason);
		assert_true(d.refusal.retryable);
		if (c->msg_has != NULL && strstr(d.refusal.message, c->msg_has) == NULL)
			fail_msg("%s: \"%s\" lacks \"%s\"", c->rule, d.refusal.message, c->msg_has);
	}
}

static void test_drain_summary_caps(void **state)
{
	tau_ws_source many[12];
	tau_ws_drain_input in = {.namespace_name = "ml-alpha",
	                         .queues = queues,
	                         .n_queues = 1,
	                         .sources = many,
	                         .n_sources = ARRAY_LEN(many)};
	tau_ws_drain_decision d;
	char names[12][8];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(many); i++) {
		snprintf(names[i], sizeof(names[i]), "j%zu", i);
		many[i] = (tau_ws_source)JOB(names[i], "alpha", false);
	}
	assert_int_equal(tau_ws_drain_decide(&d, &in), 0);
	assert_int_equal(d.n_blocking, 12);
	assert_non_null(strstr(d.refusal.message, "Job ml-alpha/j3 (unfinished); and 8 more"));
	assert_null(strstr(d.refusal.message, "j4 "));
	assert_int_equal(tau_ws_drain_decide(&d, NULL), -TAU_EINVAL);
}

/* ------------------------------------------------------------------------------------------ */
/* Sources from JSON                                                                           */

typedef struct json_case {
	tau_ws_source_kind kind;
	const char *json;
	int rc;
	const char *queue;
	bool finished; /* tau_ws_drain_source_finished */
} json_case;

static const json_case json_cases[] = {
        {TAU_WS_SRC_WORKLOAD,
         "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"queueName\":\"alpha\"},\"status\":"
         "{\"conditions\":[{\"type\":\"Admitted\",\"status\":\"True\"}]}}",
         0, "alpha", false},
        {TAU_WS_SRC_WORKLOAD,
         "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"queueName\":\"alpha\"},\"status\":"
         "{\"conditions\":[{\"type\":\"Finished\",\"status\":\"True\",\"reason\":\"Succeeded\"}"
         "]}}",
         0, "alpha", true},
        {TAU_WS_SRC_WORKLOAD,
         "{\"metadata\":{\"name\":\"w\"},\"status\":{\"conditions\":[{\"type\":\"Finished\","
         "\"status\":\"False\"}]}}",
         0, NULL, false},
        {TAU_WS_SRC_WORKLOAD, "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"queueName\":1}}",
         -TAU_ETYPE, NULL, false},
        {TAU_WS_SRC_JOB,
         "{\"metadata\":{\"name\":\"j\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"alpha\"}},"
         "\"status\":{\"conditions\":[{\"type\":\"Failed\",\"status\":\"True\"}]}}",
         0, "alpha", true},
        {TAU_WS_SRC_JOB,
         "{\"metadata\":{\"name\":\"j\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"alpha\"}},"
         "\"status\":{\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}",
         0, "alpha", true},
        {TAU_WS_SRC_JOB,
         "{\"metadata\":{\"name\":\"j\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"alpha\"}},"
         "\"status\":{\"conditions\":[{\"type\":\"Suspended\",\"status\":\"True\"}]}}",
         0, "alpha", false},
        {TAU_WS_SRC_RAYJOB,
         "{\"metadata\":{\"name\":\"r\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"alpha\"}},"
         "\"status\":{\"jobDeploymentStatus\":\"Complete\",\"jobStatus\":\"SUCCEEDED\"}}",
         0, "alpha", true},
        {TAU_WS_SRC_RAYJOB, "{\"metadata\":{\"name\":\"r\"},\"status\":{\"jobStatus\":\"FAILED\"}}",
         0, NULL, false},
        {TAU_WS_SRC_RAYSERVICE,
         "{\"metadata\":{\"name\":\"s\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"alpha\"}}}", 0,
         "alpha", false},
        {TAU_WS_SRC_DEPLOYMENT,
         "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":0,\"template\":{\"metadata\":{"
         "\"labels\":{\"kueue.x-k8s.io/queue-name\":\"alpha\",\"kueue.x-k8s.io/managed\":"
         "\"true\"}}}}}",
         0, NULL, false},
        {TAU_WS_SRC_JOB, "{\"metadata\":{}}", -TAU_EINVAL, NULL, false},
        {TAU_WS_SRC_JOB, "{\"metadata\":{\"name\":5}}", -TAU_ETYPE, NULL, false},
};

static void test_source_from_json(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(json_cases); i++) {
		const json_case *c = &json_cases[i];
		cJSON *obj = cJSON_Parse(c->json);
		tau_ws_source s;

		assert_non_null(obj);
		assert_int_equal(tau_ws_drain_source_from_json(&s, c->kind, obj), c->rc);
		if (c->rc == 0) {
			if (c->queue == NULL)
				assert_null(s.queue);
			else
				assert_string_equal(s.queue, c->queue);
			assert_int_equal(tau_ws_drain_source_finished(&s), c->finished);
		}
		cJSON_Delete(obj);
	}
	{
		cJSON *d = cJSON_Parse(json_cases[10].json);
		tau_ws_source s;

		assert_int_equal(tau_ws_drain_source_from_json(&s, TAU_WS_SRC_DEPLOYMENT, d), 0);
		assert_string_equal(s.template_queue, "alpha");
		assert_string_equal(s.template_managed, "true");
		assert_int_equal(tau_ws_drain_source_from_json(&s, TAU_WS_SRC_KINDS, d),
		                 -TAU_EINVAL);
		cJSON_Delete(d);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Plan                                                                                        */

typedef struct step_want {
	tau_ws_step_kind kind;
	tau_ws_step_when when;
	const char *name;
} step_want;

#define S(k, w, n)                                                                                 \
	{                                                                                          \
		TAU_WS_STEP_##k, TAU_WS_WHEN_##w, (n)                                              \
	}

typedef struct plan_case {
	const char *rule;
	bool deleting, binding_wanted, binding_present;
	const char *sa, *sa_client;
	bool sa_terminating;
	bool wi_wanted;
	const char *wi_sa, *wi_client;
	size_t n_lq;
	bool owned, shared;
	bool drained;
	step_want steps[12];
	size_t n_steps;
	bool completes;
	const char *msg_has;
} plan_case;

static const char *const lqs[] = {"alpha", "alpha-old"};

static const plan_case plan_cases[] = {
        {"drain pending, identity unchanged: keep SA, researcher keeps access",
         .binding_wanted = true, .binding_present = true, .sa = "wi", .sa_client = "c1",
         .wi_wanted = true, .wi_sa = "wi", .wi_client = "c1", .n_lq = 1,
         .steps = {S(GRANT_RESEARCHER_BINDING, ALWAYS, "tau-workspace-alpha"),
                   S(WAIT_DRAIN, ALWAYS, NULL)},
         .n_steps = 2, .msg_has = "Job ml-alpha/train"},
        {"client ID changed during the drain: revoke first, then grant", .binding_wanted = true,
         .binding_present = true, .sa = "wi", .sa_client = "c1", .wi_wanted = true, .wi_sa = "wi",
         .wi_client = "c2", .n_lq = 1,
         .steps = {S(REVOKE_SERVICE_ACCOUNT, ALWAYS, "wi"),
                   S(REMOVE_RESEARCHER_BINDING, NOT_REVOKED, "tau-workspace-alpha"),
                   S(GRANT_RESEARCHER_BINDING, REVOKED, "tau-workspace-alpha"),
                   S(WAIT_DRAIN, ALWAYS, NULL)},
         .n_steps = 4, .msg_has = "revoked first"},
        {"ServiceAccount renamed: the old one is obsolete", .binding_wanted = true, .sa = "wi-old",
         .sa_client = "c1", .wi_wanted = true, .wi_sa = "wi-new", .wi_client = "c1", .n_lq = 1,
         .steps = {S(REVOKE_SERVICE_ACCOUNT, ALWAYS, "wi-old"),
                   S(GRANT_RESEARCHER_BINDING, REVOKED, "tau-workspace-alpha"),
                   S(WAIT_DRAIN, ALWAYS, NULL)},
         .n_steps = 3},
        {"workloadIdentity removed: revoke", .binding_wanted = true, .binding_present = true,
         .sa = "wi", .sa_client = "c1", .n_lq = 1,
         .steps = {S(REVOKE_SERVICE_ACCOUNT, ALWAYS, "wi"),
                   S(REMOVE_RESEARCHER_BINDING, NOT_REVOKED, "tau-workspace-alpha"),
                   S(GRANT_RESEARCHER_BINDING, REVOKED, "tau-workspace-alpha"),
                   S(WAIT_DRAIN, ALWAYS, NULL)},
         .n_steps = 4},
        {"revocation stuck behind a finalizer: access withheld", .binding_wanted = true,
         .binding_present = true, .sa = "wi", .sa_client = "c1", .sa_terminating = true,
         .wi_wanted = true, .wi_sa = "wi", .wi_client = "c2", .n_lq = 1, .drained = true,
         .steps = {S(REMOVE_RESEARCHER_BINDING, ALWAYS, "tau-workspace-alpha"),
                   S(WAIT_REVOCATION, ALWAYS, "wi")},
         .n_steps = 2, .msg_has = "withheld until its revocation is confirmed"},
        {"revocation stuck, binding already gone: just wait", .binding_wanted = true, .sa = "wi",
         .sa_client = "c1", .sa_terminating = true, .n_lq = 1,
         .steps = {S(WAIT_REVOCATION, ALWAYS, "wi")}, .n_steps = 1},
        {"cluster-wide never grants; a leftover binding goes", .binding_present = true, .n_lq = 1,
         .steps = {S(REMOVE_RESEARCHER_BINDING, ALWAYS, "tau-workspace-alpha"),
                   S(WAIT_DRAIN, ALWAYS, NULL)},
         .n_steps = 2},
        {"cluster-wide while draining: nothing to grant", .n_lq = 1,
         .steps = {S(WAIT_DRAIN, ALWAYS, NULL)}, .n_steps = 1},
        {"retarget drained: routing, SA, binding, release the owned namespace",
         .binding_wanted = true, .binding_present = true, .sa = "wi", .sa_client = "c1",
         .wi_wanted = true, .wi_sa = "wi", .wi_client = "c1", .n_lq = 2, .owned = true,
         .drained = true,
         .steps = {S(DELETE_LOCAL_QUEUE, ALWAYS, "alpha"),
                   S(DELETE_LOCAL_QUEUE, ALWAYS, "alpha-old"),
                   S(DELETE_SERVICE_ACCOUNT, ALWAYS, "wi"),
                   S(REMOVE_RESEARCHER_BINDING, ALWAYS, "tau-workspace-alpha"),
                   S(RELEASE_NAMESPACE, ALWAYS, "ml-alpha")},
         .n_steps = 5, .completes = true},
        {"deletion drained: delete the owned namespace, then the finalizer", .deleting = true,
         .binding_wanted = true, .binding_present = true, .n_lq = 1, .owned = true, .drained = true,
         .steps = {S(DELETE_LOCAL_QUEUE, ALWAYS, "alpha"),
                   S(REMOVE_RESEARCHER_BINDING, ALWAYS, "tau-workspace-alpha"),
                   S(DELETE_NAMESPACE, ALWAYS, "ml-alpha"), S(REMOVE_FINALIZER, ALWAYS, NULL)},
         .n_steps = 4, .completes = true},
        {"deletion drained, namespace not ours or shared: kept", .deleting = true, .n_lq = 1,
         .owned = true, .shared = true, .drained = true,
         .steps = {S(DELETE_LOCAL_QUEUE, ALWAYS, "alpha"), S(REMOVE_FINALIZER, ALWAYS, NULL)},
         .n_steps = 2, .completes = true},
        {"deletion drained with an obsolete identity: cleanup only after revocation",
         .deleting = true, .binding_wanted = true, .binding_present = true, .sa = "wi",
         .sa_client = "c1", .wi_wanted = true, .wi_sa = "wi", .wi_client = "c2", .n_lq = 1,
         .drained = true,
         .steps = {S(REVOKE_SERVICE_ACCOUNT, ALWAYS, "wi"), S(DELETE_LOCAL_QUEUE, REVOKED, "alpha"),
                   S(REMOVE_RESEARCHER_BINDING, ALWAYS, "tau-workspace-alpha"),
                   S(REMOVE_FINALIZER, REVOKED, NULL)},
         .n_steps = 4, .completes = true},
};

static void test_plan_table(void **state)
{
	tau_ws_drain_decision pending = {.may_cleanup = false, .n_blocking = 1};
	tau_ws_drain_decision drained = {.may_cleanup = true};

	(void)state;
	tau_ws_namespace_refuse(
	        &pending.refusal, "DrainPending", true,
	        "cleanup of namespace ml-alpha waits for 1 source: Job ml-alpha/train");
	for (size_t i = 0; i < ARRAY_LEN(plan_cases); i++) {
		const plan_case *c = &plan_cases[i];
		tau_ws_old_ns_input in = {.namespace_name = "ml-alpha",
		                          .deleting = c->deleting,
		                          .binding_wanted = c->binding_wanted,
		                          .binding_name = "tau-workspace-alpha",
		                          .binding_present = c->binding_present,
		                          .sa_name = c->sa,
		                          .sa_client_id = c->sa_client,
		                          .sa_terminating = c->sa_terminating,
		                          .wi_wanted = c->wi_wanted,
		                          .wi_sa_name = c->wi_sa,
		                          .wi_client_id = c->wi_client,
		                          .local_queues = lqs,
		                          .n_local_queues = c->n_lq,
		                          .namespace_owned = c->owned,
		                          .namespace_shared = c->shared,
		                          .drain = c->drained ? &drained : &pending};
		tau_ws_plan p;

		print_message("plan: %s\n", c->rule);
		assert_int_equal(tau_ws_drain_plan(&p, &in), 0);
		for (size_t k = 0; k < p.n; k++)
			print_message("  %zu %s when=%d %s\n", k,
			              tau_ws_drain_step_name(p.steps[k].kind), p.steps[k].when,
			              p.steps[k].name ? p.steps[k].name : "-");
		assert_int_equal(p.n, c->n_steps);
		for (size_t k = 0; k < p.n; k++) {
			assert_int_equal(p.steps[k].kind, c->steps[k].kind);
			assert_int_equal(p.steps[k].when, c->steps[k].when);
			if (c->steps[k].name == NULL)
				assert_null(p.steps[k].name);
			else
				assert_string_equal(p.steps[k].name, c->steps[k].name);
		}
		assert_int_equal(p.completes, c->completes);
		if (c->msg_has != NULL && strstr(p.message, c->msg_has) == NULL)
			fail_msg("%s: \"%s\" lacks \"%s\"", c->rule, p.message, c->msg_has);
	}
}

/* The invariant, over every plan: no grant runs unless a confirmed revocation preceded it. */
static void test_never_grant_before_revoke(void **state)
{
	tau_ws_drain_decision states[2] = {{.may_cleanup = false}, {.may_cleanup = true}};

	(void)state;
	for (unsigned bits = 0; bits < 256; bits++) {
		tau_ws_old_ns_input in = {
		        .namespace_name = "ml",
		        .deleting = bits & 1,
		        .binding_wanted = (bits >> 1) & 1,
		        .binding_name = "tau-workspace-a",
		        .binding_present = (bits >> 2) & 1,
		        .sa_name = ((bits >> 3) & 1) ? "wi" : NULL,
		        .sa_client_id = "c1",
		        .sa_terminating = (bits >> 4) & 1,
		        .wi_wanted = (bits >> 5) & 1,
		        .wi_sa_name = "wi",
		        .wi_client_id = ((bits >> 6) & 1) ? "c2" : "c1",
		        .local_queues = lqs,
		        .n_local_queues = 1,
		        .namespace_owned = true,
		        .drain = &states[(bits >> 7) & 1],
		};
		bool changed = tau_ws_drain_identity_changed(&in);
		bool revoke_seen = false;
		tau_ws_plan p;

		assert_int_equal(tau_ws_drain_plan(&p, &in), 0);
		for (size_t k = 0; k < p.n; k++) {
			const tau_ws_step *s = &p.steps[k];

			if (s->kind == TAU_WS_STEP_REVOKE_SERVICE_ACCOUNT)
				revoke_seen = true;
			if (s->kind == TAU_WS_STEP_GRANT_RESEARCHER_BINDING && changed) {
				assert_true(revoke_seen);
				assert_int_equal(s->when, TAU_WS_WHEN_REVOKED);
			}
			if (s->kind == TAU_WS_STEP_REMOVE_FINALIZER && changed)
				assert_int_equal(s->when, TAU_WS_WHEN_REVOKED);
			/* Cluster-wide never creates a researcher binding. */
			if (!in.binding_wanted)
				assert_int_not_equal(s->kind, TAU_WS_STEP_GRANT_RESEARCHER_BINDING);
		}
		if (changed && in.sa_terminating)
			assert_false(p.completes);
	}
}

static void test_plan_bad_input(void **state)
{
	const char *many[TAU_WS_PLAN_MAX];
	tau_ws_drain_decision drained = {.may_cleanup = true};
	tau_ws_old_ns_input in = {.namespace_name = "ml", .drain = &drained};
	tau_ws_plan p;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(many); i++)
		many[i] = "q";
	in.local_queues = many;
	in.n_local_queues = ARRAY_LEN(many);
	assert_int_equal(tau_ws_drain_plan(&p, &in), -TAU_ETOOBIG);
	in.drain = NULL;
	assert_int_equal(tau_ws_drain_plan(&p, &in), -TAU_EINVAL);
	assert_string_equal(tau_ws_drain_step_name(TAU_WS_STEP_REVOKE_SERVICE_ACCOUNT),
	                    "revoke-service-account");
	assert_string_equal(tau_ws_drain_step_name(TAU_WS_STEP_REMOVE_FINALIZER),
	                    "remove-finalizer");
	assert_string_equal(tau_ws_drain_step_name((tau_ws_step_kind)99), "unknown");
	assert_false(tau_ws_drain_identity_changed(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_drain_table),
	        cmocka_unit_test(test_drain_summary_caps),
	        cmocka_unit_test(test_source_from_json),
	        cmocka_unit_test(test_plan_table),
	        cmocka_unit_test(test_never_grant_before_revoke),
	        cmocka_unit_test(test_plan_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
