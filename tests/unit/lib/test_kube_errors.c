/*
 * test_kube_errors.c - decoding API errors (Status objects and plain text),
 * reason checks, URL paths, list/watch query encoding with selectors, and
 * TokenReview decoding.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"

static void test_status_not_found(void **state)
{
	static const char body[] =
	        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	        "\"message\":\"leases.coordination.k8s.io \\\"ctl\\\" not found\",\"reason\":"
	        "\"NotFound\",\"details\":{\"name\":\"ctl\",\"group\":\"coordination.k8s.io\","
	        "\"kind\":\"leases\"},\"code\":404}";
	tau_kube_api_error e;

	(void)state;
	assert_int_equal(tau_kube_api_error_decode(&e, 404, body, strlen(body), "GET", -1),
	                 -TAU_ENOTFOUND);
	assert_int_equal(e.http_code, 404);
	assert_string_equal(e.reason, "NotFound");
	assert_string_equal(e.message, "leases.coordination.k8s.io \"ctl\" not found");
	assert_int_equal(e.retry_after_s, -1);
	assert_true(tau_kube_api_error_is(&e, "NotFound"));
	assert_false(tau_kube_api_error_is(&e, "Conflict"));
}

static void test_plain_text_429(void **state)
{
	static const char body[] = "Too many requests, please try again later.\n";
	tau_kube_api_error e;

	(void)state;
	assert_int_equal(tau_kube_api_error_decode(&e, 429, body, strlen(body), "PATCH", 3),
	                 -TAU_EAGAIN);
	assert_string_equal(e.reason, "TooManyRequests");
	assert_string_equal(e.message, "Too many requests, please try again later.");
	assert_int_equal(e.retry_after_s, 3);
	assert_true(tau_kube_api_error_is(&e, "TooManyRequests"));
}

static void test_code_derived_reasons(void **state)
{
	tau_kube_api_error e;

	(void)state;
	assert_int_equal(tau_kube_api_error_decode(&e, 409, "<html>x</html>", 14, "POST", -1),
	                 -TAU_ECONFLICT);
	assert_string_equal(e.reason, "AlreadyExists");
	assert_string_equal(e.message, "<html>x</html>");
	assert_int_equal(tau_kube_api_error_decode(&e, 409, NULL, 0, "PUT", -1), -TAU_ECONFLICT);
	assert_string_equal(e.reason, "Conflict");
	assert_string_equal(e.message, "the server responded with status 409");
	assert_int_equal(tau_kube_api_error_decode(&e, 422, "", 0, "PUT", -1), -TAU_EINVAL);
	assert_string_equal(e.reason, "Invalid");
	assert_int_equal(tau_kube_api_error_decode(&e, 500, "boom", 4, "GET", -1), -TAU_EIO);
	assert_string_equal(e.reason, "InternalError");
	assert_int_equal(tau_kube_api_error_decode(&e, 503, "", 0, "GET", -1), -TAU_EAGAIN);
	assert_string_equal(e.reason, "ServiceUnavailable");
	assert_int_equal(tau_kube_api_error_decode(&e, 401, "", 0, "GET", -1), -TAU_EPERM);
	assert_int_equal(tau_kube_api_error_decode(&e, 403, "", 0, "GET", -1), -TAU_EPERM);
	assert_int_equal(tau_kube_api_error_decode(&e, 504, "", 0, "GET", -1), -TAU_ETIMEOUT);
	assert_int_equal(tau_kube_api_error_decode(&e, 413, "", 0, "GET", -1), -TAU_ETOOBIG);
	assert_int_equal(tau_kube_api_error_decode(&e, 418, "", 0, "GET", -1), -TAU_EIO);
	/* Control characters in a text body are neutralised. */
	assert_int_equal(tau_kube_api_error_decode(&e, 502, "bad\x1b[31m gateway", 17, "GET", -1),
	                 -TAU_EIO);
	assert_null(strchr(e.message, '\x1b'));
}

static void test_is_rules(void **state)
{
	tau_kube_api_error e = {.http_code = 404, .retry_after_s = -1};

	(void)state;
	/* Empty reason: the code decides. */
	assert_true(tau_kube_api_error_is(&e, "NotFound"));
	assert_false(tau_kube_api_error_is(&e, "Conflict"));
	/* Gone is accepted as Expired. */
	strcpy(e.reason, "Gone");
	e.http_code = 410;
	assert_true(tau_kube_api_error_is(&e, "Expired"));
	/* Reason wins over code. */
	strcpy(e.reason, "AlreadyExists");
	e.http_code = 409;
	assert_false(tau_kube_api_error_is(&e, "Conflict"));
	assert_true(tau_kube_api_error_is(&e, "AlreadyExists"));
}

static void test_expired_continue_and_retry_after(void **state)
{
	static const char body[] =
	        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{\"continue\":\"tok2\"},"
	        "\"status\":\"Failure\",\"message\":\"The provided continue parameter is too old\","
	        "\"reason\":\"Expired\",\"code\":410}";
	static const char timeout[] =
	        "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Too large resource "
	        "version: 9, current: 5\",\"reason\":\"Timeout\",\"details\":{\"causes\":[{"
	        "\"reason\":\"ResourceVersionTooLarge\"}],\"retryAfterSeconds\":1},\"code\":504}";
	tau_kube_api_error e;

	(void)state;
	assert_int_equal(tau_kube_api_error_decode(&e, 410, body, strlen(body), "GET", -1),
	                 -TAU_EIO);
	assert_true(tau_kube_api_error_is(&e, "Expired"));
	assert_string_equal(e.continue_token, "tok2");
	assert_int_equal(tau_kube_api_error_decode(&e, 504, timeout, strlen(timeout), "GET", -1),
	                 -TAU_ETIMEOUT);
	assert_int_equal(e.retry_after_s, 1);
	/* The header wins over details. */
	assert_int_equal(tau_kube_api_error_decode(&e, 504, timeout, strlen(timeout), "GET", 7),
	                 -TAU_ETIMEOUT);
	assert_int_equal(e.retry_after_s, 7);
	/* A watch ERROR event object has no HTTP status: the code comes from the body. */
	assert_int_equal(tau_kube_api_error_decode(&e, 0, body, strlen(body), "GET", -1), -TAU_EIO);
	assert_int_equal(e.http_code, 410);
}

static void expect_path(const tau_kube_resource *res, const char *ns, const char *name,
                        const char *sub, const char *want)
{
	char *p = NULL;

	assert_int_equal(tau_kube_path(&p, res, ns, name, sub), 0);
	assert_string_equal(p, want);
	free(p);
}

static void test_paths(void **state)
{
	static const tau_kube_resource tw = {"tau.azure.com", "v1alpha1", "workspaces", true};
	char *p = NULL;

	(void)state;
	expect_path(&tau_kube_res_nodes, NULL, NULL, NULL, "/api/v1/nodes");
	expect_path(&tau_kube_res_nodes, NULL, "n1", NULL, "/api/v1/nodes/n1");
	expect_path(&tau_kube_res_pods, "default", NULL, NULL, "/api/v1/namespaces/default/pods");
	expect_path(&tau_kube_res_pods, NULL, NULL, NULL, "/api/v1/pods");
	expect_path(&tau_kube_res_leases, "tau-system", "ctl", NULL,
	            "/apis/coordination.k8s.io/v1/namespaces/tau-system/leases/ctl");
	expect_path(&tw, "tau-system", "ws", "status",
	            "/apis/tau.azure.com/v1alpha1/namespaces/tau-system/workspaces/ws/status");
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_nodes, "ns", "n1", NULL), -TAU_EINVAL);
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_pods, "a/b", "x", NULL), -TAU_EINVAL);
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_pods, "a", "..", NULL), -TAU_EINVAL);
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_pods, "a", "x?y", NULL), -TAU_EINVAL);
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_pods, "a", "x y", NULL), -TAU_EINVAL);
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_pods, "a", "", NULL), -TAU_EINVAL);
	assert_int_equal(tau_kube_path(&p, &tau_kube_res_pods, "a", NULL, "status"), -TAU_EINVAL);
	assert_null(p);
}

static void expect_query(const tau_kube_list_options *o, const char *want)
{
	char *q = NULL;

	assert_int_equal(tau_kube_list_query(&q, o), 0);
	assert_string_equal(q, want);
	free(q);
}

static void test_selector_query(void **state)
{
	tau_kube_list_options o = {0};

	(void)state;
	expect_query(NULL, "");
	expect_query(&o, "");
	o.label_selector = "app=web,tier in (a,b)";
	expect_query(&o, "labelSelector=app%3Dweb%2Ctier%20in%20%28a%2Cb%29");
	o.label_selector = "!canary,tau.azure.com/gpu-class notin (h100-ib),x!=y";
	expect_query(&o, "labelSelector=%21canary%2Ctau.azure.com%2Fgpu-class%20notin%20%28h100-"
	                 "ib%29%2Cx%21%3Dy");
	o.label_selector = NULL;
	o.field_selector = "metadata.name=n1,spec.unschedulable!=true";
	o.limit = 500;
	o.continue_token = "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==";
	expect_query(&o, "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%3D%3D&fieldSelector=metadata."
	                 "name%3Dn1%2Cspec.unschedulable%21%3Dtrue&limit=500");
	memset(&o, 0, sizeof(o));
	o.watch = true;
	o.allow_bookmarks = true;
	o.resource_version = "105";
	o.timeout_seconds = 547;
	o.label_selector = "a=b";
	expect_query(&o, "allowWatchBookmarks=true&labelSelector=a%3Db&resourceVersion=105&"
	                 "timeoutSeconds=547&watch=true");
	/* An empty resourceVersion is sent (it means "most recent"); match only with a value. */
	memset(&o, 0, sizeof(o));
	o.resource_version = "0";
	o.resource_version_match = "NotOlderThan";
	expect_query(&o, "resourceVersion=0&resourceVersionMatch=NotOlderThan");
	/* Non-ASCII bytes are percent-encoded. */
	memset(&o, 0, sizeof(o));
	o.label_selector = "k=\xc3\xa9";
	expect_query(&o, "labelSelector=k%3D%C3%A9");
}

static void test_token_review_decode(void **state)
{
	static const char ok[] =
	        "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
	        "\"status\":{\"authenticated\":true,\"user\":{\"username\":"
	        "\"system:serviceaccount:tau-system:tau-agent\",\"uid\":\"u-1\",\"groups\":["
	        "\"system:serviceaccounts\",\"system:serviceaccounts:tau-system\","
	        "\"system:authenticated\"],\"extra\":{\"authentication.kubernetes.io/pod-name\":["
	        "\"tau-agent-7d9f\"],\"authentication.kubernetes.io/node-name\":[\"node-a\"]}},"
	        "\"audiences\":[\"https://kubernetes.default.svc.cluster.local\"]}}";
	static const char bad[] = "{\"status\":{\"user\":{},\"error\":\"[invalid bearer token, "
	                          "service account token has expired]\"}}";
	static const char wrong[] = "{\"status\":{\"authenticated\":\"yes\"}}";
	tau_kube_token_review *r = NULL;
	cJSON *doc = NULL;

	(void)state;
	assert_int_equal(tau_json_parse(&doc, ok, strlen(ok), 0), 0);
	assert_int_equal(tau_kube_token_review_decode(&r, doc), 0);
	cJSON_Delete(doc);
	assert_true(r->authenticated);
	assert_string_equal(r->username, "system:serviceaccount:tau-system:tau-agent");
	assert_string_equal(r->uid, "u-1");
	assert_int_equal(r->n_groups, 3);
	assert_string_equal(r->groups[2], "system:authenticated");
	assert_int_equal(r->n_extra, 2);
	assert_string_equal(r->pod_name, "tau-agent-7d9f");
	assert_string_equal(r->node_name, "node-a");
	assert_int_equal(r->n_audiences, 1);
	assert_null(r->error);
	tau_kube_token_review_free(r);
	r = NULL;

	assert_int_equal(tau_json_parse(&doc, bad, strlen(bad), 0), 0);
	assert_int_equal(tau_kube_token_review_decode(&r, doc), 0);
	cJSON_Delete(doc);
	assert_false(r->authenticated);
	assert_null(r->username);
	assert_non_null(strstr(r->error, "expired"));
	tau_kube_token_review_free(r);
	r = NULL;

	assert_int_equal(tau_json_parse(&doc, wrong, strlen(wrong), 0), 0);
	assert_int_equal(tau_kube_token_review_decode(&r, doc), -TAU_EINVAL);
	cJSON_Delete(doc);
	assert_int_equal(tau_json_parse(&doc, "{}", 2, 0), 0);
	assert_int_equal(tau_kube_token_review_decode(&r, doc), -TAU_EINVAL);
	cJSON_Delete(doc);
	assert_null(r);
}

static void test_client_config_checks(void **state)
{
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;

	(void)state;
	assert_int_equal(tau_kube_config_new(&cfg), 0);
	assert_int_equal(tau_kube_client_new(&c, cfg), -TAU_EINVAL);
	cfg->server = strdup("ftp://x");
	assert_int_equal(tau_kube_client_new(&c, cfg), -TAU_EINVAL);
	free(cfg->server);
	cfg->server = strdup("http://127.0.0.1:1");
	cfg->max_retries = 0;
	cfg->connect_timeout_ms = 2000;
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	/* Nothing listens on port 1: a transport error, no API error. */
	{
		cJSON *out = NULL;

		assert_int_equal(tau_kube_get(&out, c, &tau_kube_res_nodes, NULL, "n1"), -TAU_EIO);
		assert_int_equal(tau_kube_api_error_last()->http_code, 0);
		assert_null(out);
	}
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_status_not_found),
	        cmocka_unit_test(test_plain_text_429),
	        cmocka_unit_test(test_code_derived_reasons),
	        cmocka_unit_test(test_is_rules),
	        cmocka_unit_test(test_expired_continue_and_retry_after),
	        cmocka_unit_test(test_paths),
	        cmocka_unit_test(test_selector_query),
	        cmocka_unit_test(test_token_review_decode),
	        cmocka_unit_test(test_client_config_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
