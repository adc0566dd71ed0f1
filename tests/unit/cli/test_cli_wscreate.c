/*
 * test_cli_wscreate.c - `tau workspace create`'s pure parts: the object with
 * the reference's defaults and with every flag, each refusal the CRD or the
 * controller would make, the created-by mark, the --wait verdict and the
 * first failing condition, and the YAML writer's quoting (a string that a
 * YAML reader would take for a bool, a number or null is quoted); and
 * `tau workspace delete`'s listing of what holds the drain.
 */
#include "workspace.h"

#include "tau/drain.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *parse(const char *s)
{
	char *t = strdup(s);
	cJSON *o = NULL;

	assert_non_null(t);
	for (char *p = t; *p != '\0'; p++)
		if (*p == '\'')
			*p = '"';
	assert_int_equal(tau_json_parse(&o, t, strlen(t), 0), 0);
	free(t);
	return o;
}

static void assert_json(const cJSON *doc, const char *want)
{
	cJSON *w = parse(want);

	if (!cJSON_Compare(doc, w, true)) {
		char *got = cJSON_PrintUnformatted(doc);

		fail_msg("got %s\nwant %s", got, want);
	}
	cJSON_Delete(w);
}

static void test_defaults(void **state)
{
	tau_cli_ws_spec s = {.name = "alpha",
	                     .system_namespace = "tau-system",
	                     .principal = "alpha-researchers",
	                     .subject = "grp"};
	char err[512] = "";
	cJSON *o = tau_cli_ws_build(&s, err, sizeof(err));

	(void)state;
	assert_non_null(o);
	assert_json(o, "{'apiVersion':'tau.azure.com/v1alpha1','kind':'TauWorkspace',"
	               "'metadata':{'name':'alpha','namespace':'tau-system',"
	               "'annotations':{'tau.azure.com/created-by':'tau'}},"
	               "'spec':{'authorization':{'mode':'workspace-rbac'},"
	               "'principalRef':{'provider':'entra','name':'alpha-researchers'},"
	               "'kubernetesSubject':{'kind':'Group','name':'grp'},'role':'researcher',"
	               "'target':{'namespace':'alpha'}}}");
	assert_true(tau_cli_ws_created_by_tau(o));
	cJSON_Delete(o);
}

static void test_every_flag(void **state)
{
	tau_cli_ws_spec s = {.name = "g",
	                     .system_namespace = "ml-platform",
	                     .namespace = "ml-g",
	                     .team = "research",
	                     .authorization = "workspace-rbac",
	                     .principal_provider = "github",
	                     .principal = "org/team",
	                     .subject_kind = "ServiceAccount",
	                     .subject = "runner",
	                     .queue = "g.q",
	                     .wi_service_account = "g-wl",
	                     .client_id = "cid",
	                     .create_namespace = true,
	                     .adopt = true};
	char err[512] = "";
	cJSON *o = tau_cli_ws_build(&s, err, sizeof(err));

	(void)state;
	assert_non_null(o);
	assert_json(tau_json_find(o, "spec"),
	            "{'authorization':{'mode':'workspace-rbac'},"
	            "'principalRef':{'provider':'github','name':'org/team'},"
	            "'kubernetesSubject':{'kind':'ServiceAccount','name':'runner'},"
	            "'role':'researcher','target':{'namespace':'ml-g','createNamespace':true,"
	            "'adopt':true},'queue':'g.q','teamRef':{'name':'research'},"
	            "'workloadIdentity':{'serviceAccountName':'g-wl','clientId':'cid'}}");
	cJSON_Delete(o);
	s = (tau_cli_ws_spec){
	        .name = "c", .system_namespace = "tau-system", .authorization = "cluster-wide"};
	o = tau_cli_ws_build(&s, err, sizeof(err));
	assert_non_null(o);
	assert_json(tau_json_find(o, "spec"),
	            "{'authorization':{'mode':'cluster-wide'},'target':{'namespace':'c'}}");
	cJSON_Delete(o);
}

static void refused(tau_cli_ws_spec s, const char *want)
{
	char err[512] = "";
	cJSON *o = tau_cli_ws_build(&s, err, sizeof(err));

	if (o != NULL)
		fail_msg("accepted, want refusal: %s", want);
	if (strstr(err, want) == NULL)
		fail_msg("refusal \"%s\" lacks \"%s\"", err, want);
}

static void test_refusals(void **state)
{
	tau_cli_ws_spec ok = {
	        .name = "a", .system_namespace = "tau-system", .principal = "p", .subject = "s"};
	tau_cli_ws_spec s;
	char longs[600];

	(void)state;
	s = ok, s.name = "A";
	refused(s, "workspace name: \"A\"");
	s = ok, s.name = "a.b";
	refused(s, "workspace name");
	s = ok, s.namespace = "default";
	refused(s, "default and kube-* namespaces cannot host a workspace");
	s = ok, s.namespace = "kube-public";
	refused(s, "default and kube-*");
	s = ok, s.namespace = "tau-system";
	refused(s, "it is the TauGrid system namespace");
	s = ok, s.name = "tau-system";
	refused(s, "it is the TauGrid system namespace");
	s = ok, s.authorization = "none";
	refused(s, "--authorization none: must be workspace-rbac or cluster-wide");
	s = ok, s.principal_provider = "okta";
	refused(s, "must be entra or github");
	s = ok, s.subject_kind = "Robot";
	refused(s, "must be Group, User or ServiceAccount");
	s = ok, s.principal = NULL;
	refused(s, "needs --principal");
	s = ok, s.subject = NULL;
	refused(s, "needs --principal");
	s = ok, s.authorization = "cluster-wide";
	refused(s, "cluster-wide must leave");
	memset(longs, 'x', sizeof(longs) - 1);
	longs[sizeof(longs) - 1] = '\0';
	s = ok, s.subject = longs;
	refused(s, "--subject: must be 1 to 512");
	longs[300] = '\0';
	s = ok, s.principal = longs;
	refused(s, "--principal: must be 1 to 256");
	s = ok, s.principal = "";
	refused(s, "--principal: must be 1 to 256");
	s = ok, s.subject_kind = "ServiceAccount", s.subject = "Bad_SA";
	refused(s, "--subject (a ServiceAccount in the workspace namespace)");
	s = ok, s.queue = "q-";
	refused(s, "--queue q-");
	s = ok, s.queue = "Q";
	refused(s, "--queue Q");
	s = ok, s.team = "Team";
	refused(s, "--team");
	s = ok, s.wi_service_account = "sa";
	refused(s, "go together");
	s = ok, s.client_id = "c";
	refused(s, "go together");
	s = ok, s.wi_service_account = "Bad", s.client_id = "c";
	refused(s, "--workload-identity-sa");
	longs[129] = '\0';
	s = ok, s.wi_service_account = "sa", s.client_id = longs;
	refused(s, "--client-id: must be 1 to 128");
	s = ok, s.system_namespace = NULL;
	refused(s, "required");
}

static void test_queue_pattern(void **state)
{
	tau_cli_ws_spec s = {
	        .name = "a", .system_namespace = "tau-system", .authorization = "cluster-wide"};
	const char *good[] = {"a", "a.b", "a--b", "a..b", "0"};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cJSON *o;

		s.queue = good[i];
		o = tau_cli_ws_build(&s, err, sizeof(err));
		if (o == NULL)
			fail_msg("queue %s refused: %s", good[i], err);
		cJSON_Delete(o);
	}
}

static void test_created_by(void **state)
{
	cJSON *mine = parse("{'metadata':{'annotations':{'tau.azure.com/created-by':'tau'}}}");
	cJSON *other = parse("{'metadata':{'annotations':{'tau.azure.com/created-by':'helm'}}}");
	cJSON *none = parse("{'metadata':{}}");

	(void)state;
	assert_true(tau_cli_ws_created_by_tau(mine));
	assert_false(tau_cli_ws_created_by_tau(other));
	assert_false(tau_cli_ws_created_by_tau(none));
	cJSON_Delete(mine);
	cJSON_Delete(other);
	cJSON_Delete(none);
}

static void test_wait_verdict(void **state)
{
	cJSON *ready = parse("{'metadata':{'generation':2},'status':{'phase':'Ready',"
	                     "'observedGeneration':2}}");
	cJSON *stale = parse("{'metadata':{'generation':3},'status':{'phase':'Ready',"
	                     "'observedGeneration':2}}");
	cJSON *degraded = parse(
	        "{'metadata':{'generation':1},'status':{'phase':'Degraded','observedGeneration':1,"
	        "'conditions':[{'type':'WorkloadIdentityReady','status':'True'},"
	        "{'type':'DriftDetected','status':'False'},"
	        "{'type':'QueueReady','status':'False','reason':'QueueMissing'},"
	        "{'type':'RBACReady','status':'False','reason':'Later'}]}}");
	cJSON *old_degraded = parse("{'metadata':{'generation':2},'status':{'phase':'Degraded',"
	                            "'observedGeneration':1}}");
	cJSON *drift = parse("{'status':{'conditions':[{'type':'RBACReady','status':'True'},"
	                     "{'type':'DriftDetected','status':'True','reason':'Drift'}]}}");
	cJSON *deleting = parse("{'metadata':{'generation':1,'deletionTimestamp':'x'},"
	                        "'status':{'phase':'Ready','observedGeneration':1}}");
	cJSON *fresh = parse("{'metadata':{'generation':1}}");

	(void)state;
	assert_int_equal(tau_cli_ws_wait_verdict(ready), 1);
	assert_int_equal(tau_cli_ws_wait_verdict(stale), 0);
	assert_int_equal(tau_cli_ws_wait_verdict(fresh), 0);
	assert_int_equal(tau_cli_ws_wait_verdict(degraded), -1);
	assert_int_equal(tau_cli_ws_wait_verdict(old_degraded), 0);
	assert_int_equal(tau_cli_ws_wait_verdict(deleting), -1);
	assert_string_equal(
	        cJSON_GetObjectItem(tau_cli_ws_first_failing(degraded), "reason")->valuestring,
	        "QueueMissing");
	assert_string_equal(
	        cJSON_GetObjectItem(tau_cli_ws_first_failing(drift), "reason")->valuestring,
	        "Drift");
	assert_null(tau_cli_ws_first_failing(ready));
	cJSON_Delete(ready);
	cJSON_Delete(stale);
	cJSON_Delete(degraded);
	cJSON_Delete(old_degraded);
	cJSON_Delete(drift);
	cJSON_Delete(deleting);
	cJSON_Delete(fresh);
}

static void test_drain_holders(void **state)
{
	cJSON *wl = parse("{'items':[{'metadata':{'name':'w1'},'spec':{'queueName':'q'}},"
	                  "{'metadata':{'name':'w2'},'spec':{'queueName':'q'},'status':{"
	                  "'conditions':[{'type':'Finished','status':'True'}]}}]}");
	cJSON *jobs =
	        parse("{'items':[{'metadata':{'name':'train','labels':{"
	              "'kueue.x-k8s.io/queue-name':'q'}}},"
	              "{'metadata':{'name':'done','labels':{'kueue.x-k8s.io/queue-name':'q'}},"
	              "'status':{'conditions':[{'type':'Failed','status':'True'}]}},"
	              "{'metadata':{'name':'other','labels':{"
	              "'kueue.x-k8s.io/queue-name':'x'}}}]}");
	cJSON *rayjobs = parse("{'items':[{'metadata':{'name':'rj','labels':{"
	                       "'kueue.x-k8s.io/queue-name':'q'}},'status':{"
	                       "'jobDeploymentStatus':'Running'}}]}");
	cJSON *deps = parse("{'items':[{'metadata':{'name':'serve'},'spec':{'template':{"
	                    "'metadata':{'labels':{'kueue.x-k8s.io/queue-name':'q',"
	                    "'kueue.x-k8s.io/managed':'true'}}}}},"
	                    "{'metadata':{'name':'plain'},'spec':{'template':{}}}]}");
	const cJSON *lists[TAU_DRAIN_KINDS] = {wl, jobs, rayjobs, NULL, deps};
	const char *errors[TAU_DRAIN_KINDS] = {NULL, NULL, NULL, "forbidden", NULL};
	const char *queues[] = {"q"};
	cJSON *h = tau_cli_ws_drain_holders("ml", queues, 1, lists, errors);

	(void)state;
	assert_json(h, "['Workload ml/w1 (unfinished)','Job ml/train (unfinished)',"
	               "'RayJob ml/rj (jobDeploymentStatus Running)',"
	               "'RayServices in ml cannot be listed: forbidden',"
	               "'Deployment ml/serve (no terminal state: delete it)']");
	cJSON_Delete(h);
	/* No queue of the workspace there: nothing is routed through it. */
	h = tau_cli_ws_drain_holders("ml", NULL, 0, lists, NULL);
	assert_json(h, "[]");
	cJSON_Delete(h);
	cJSON_Delete(wl);
	cJSON_Delete(jobs);
	cJSON_Delete(rayjobs);
	cJSON_Delete(deps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_every_flag),
	        cmocka_unit_test(test_refusals),      cmocka_unit_test(test_queue_pattern),
	        cmocka_unit_test(test_created_by),    cmocka_unit_test(test_wait_verdict),
	        cmocka_unit_test(test_drain_holders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
