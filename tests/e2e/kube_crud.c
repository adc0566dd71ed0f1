/*
 * kube_crud.c - the REST client against kube-sim: CRUD on built-ins and a
 * CRD, conflicts and preconditions, patches, paging, typed errors, retries
 * for 429/5xx, the client-side limiter, token-file rotation after a 401,
 * body caps and TokenReview.  Needs KUBE_SIM_KUBECONFIG; TokenReview also
 * needs KUBE_SIM_SA_TOKEN (a token kube-sim knows, with pod/node extras).
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kube_e2e.h"
#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"

static const tau_kube_resource widgets = {"test.tau.dev", "v1", "widgets", true};

static const char *str_at(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (tau_json_get_string(&s, obj, path) < 0)
		return NULL;
	return s;
}

static void expect_api_error(int rc, int code, int http, const char *reason)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (rc != code || e->http_code != http || !tau_kube_api_error_is(e, reason))
		fail_msg("want %d/%d/%s, got rc %d http %d reason %s: %s", code, http, reason, rc,
		         e->http_code, e->reason, tau_error_last()->msg);
}

static void test_configmap_crud(void **state)
{
	tau_kube_client *c = e2e_client(-1, 3);
	cJSON *cm =
	        e2e_json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{"
	                 "\"name\":\"crud\",\"labels\":{\"app\":\"e2e\"}},\"data\":{\"a\":\"1\"}}");
	cJSON *created = NULL, *got = NULL, *updated = NULL, *patched = NULL, *stale;
	char uid[128], patch[512];
	tau_kube_delete_options del = {.grace_period_seconds = -1};

	(void)state;
	assert_int_equal(e2e_namespace(c, "crud"), 0);
	assert_int_equal(tau_kube_create(&created, c, &tau_kube_res_configmaps, "crud", cm), 0);
	assert_string_equal(str_at(created, "metadata.namespace"), "crud");
	assert_non_null(str_at(created, "metadata.uid"));
	snprintf(uid, sizeof(uid), "%s", str_at(created, "metadata.uid"));
	/* Creating it again: 409 AlreadyExists. */
	expect_api_error(tau_kube_create(NULL, c, &tau_kube_res_configmaps, "crud", cm),
	                 -TAU_ECONFLICT, 409, "AlreadyExists");
	assert_int_equal(tau_kube_get(&got, c, &tau_kube_res_configmaps, "crud", "crud"), 0);
	assert_string_equal(str_at(got, "data.a"), "1");

	/* Update with the current resourceVersion succeeds... */
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(got, "data"), "a", cJSON_CreateString("2"));
	stale = cJSON_Duplicate(got, 1);
	assert_int_equal(tau_kube_update(&updated, c, &tau_kube_res_configmaps, NULL, got), 0);
	assert_string_equal(str_at(updated, "data.a"), "2");
	assert_string_not_equal(str_at(updated, "metadata.resourceVersion"),
	                        str_at(got, "metadata.resourceVersion"));
	/* ...and a second one with the now stale version is a Conflict. */
	expect_api_error(tau_kube_update(NULL, c, &tau_kube_res_configmaps, NULL, stale),
	                 -TAU_ECONFLICT, 409, "Conflict");

	/* Merge patch, then a JSON patch guarded by a test on the resourceVersion. */
	assert_int_equal(tau_kube_patch(&patched, c, &tau_kube_res_configmaps, "crud", "crud", NULL,
	                                TAU_KUBE_PATCH_MERGE,
	                                "{\"data\":{\"b\":\"x\",\"a\":null}}"),
	                 0);
	assert_string_equal(str_at(patched, "data.b"), "x");
	assert_null(str_at(patched, "data.a"));
	expect_api_error(tau_kube_patch(NULL, c, &tau_kube_res_configmaps, "crud", "crud", NULL,
	                                TAU_KUBE_PATCH_JSON,
	                                "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\","
	                                "\"value\":\"1\"},{\"op\":\"add\",\"path\":\"/data/c\","
	                                "\"value\":\"y\"}]"),
	                 -TAU_EINVAL, 422, "Invalid");
	snprintf(patch, sizeof(patch),
	         "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"%s\"},"
	         "{\"op\":\"add\",\"path\":\"/data/c\",\"value\":\"y\"}]",
	         str_at(patched, "metadata.resourceVersion"));
	cJSON_Delete(updated);
	updated = NULL;
	assert_int_equal(tau_kube_patch(&updated, c, &tau_kube_res_configmaps, "crud", "crud", NULL,
	                                TAU_KUBE_PATCH_JSON, patch),
	                 0);
	assert_string_equal(str_at(updated, "data.c"), "y");

	/* Delete with preconditions: a wrong uid or RV is a Conflict. */
	del.uid = "00000000-0000-0000-0000-000000000000";
	expect_api_error(tau_kube_delete(NULL, c, &tau_kube_res_configmaps, "crud", "crud", &del),
	                 -TAU_ECONFLICT, 409, "Conflict");
	del.uid = uid;
	del.resource_version = "1";
	expect_api_error(tau_kube_delete(NULL, c, &tau_kube_res_configmaps, "crud", "crud", &del),
	                 -TAU_ECONFLICT, 409, "Conflict");
	del.resource_version = str_at(updated, "metadata.resourceVersion");
	del.propagation_policy = "Background";
	del.grace_period_seconds = 0;
	assert_int_equal(tau_kube_delete(NULL, c, &tau_kube_res_configmaps, "crud", "crud", &del),
	                 0);
	expect_api_error(tau_kube_get(NULL, c, &tau_kube_res_configmaps, "crud", "crud"),
	                 -TAU_ENOTFOUND, 404, "NotFound");
	assert_non_null(strstr(tau_kube_api_error_last()->message, "not found"));
	/* Missing namespace on create: 404. */
	expect_api_error(tau_kube_create(NULL, c, &tau_kube_res_configmaps, "no-such-ns", cm),
	                 -TAU_ENOTFOUND, 404, "NotFound");
	cJSON_Delete(cm);
	cJSON_Delete(created);
	cJSON_Delete(got);
	cJSON_Delete(stale);
	cJSON_Delete(updated);
	cJSON_Delete(patched);
	tau_kube_client_free(c);
}

static void test_list_paging(void **state)
{
	tau_kube_client *c = e2e_client(-1, 3);
	tau_kube_list_options lo = {.limit = 7, .label_selector = "page=yes"};
	cJSON *page = NULL, *all = NULL;
	const char *cont = NULL, *rv1;

	(void)state;
	assert_int_equal(e2e_namespace(c, "paging"), 0);
	for (int i = 0; i < 23; i++) {
		cJSON *cm =
		        e2e_json("{\"metadata\":{\"name\":\"p%02d\",\"labels\":{\"page\":\"%s\"}},"
		                 "\"data\":{}}",
		                 i, i < 20 ? "yes" : "no");
		int rc = tau_kube_create(NULL, c, &tau_kube_res_configmaps, "paging", cm);

		cJSON_Delete(cm);
		assert_true(rc == 0 || rc == -TAU_ECONFLICT);
	}
	assert_int_equal(tau_kube_list(&page, c, &tau_kube_res_configmaps, "paging", &lo), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(page, "items")), 7);
	assert_int_equal(tau_json_get_string(&cont, page, "metadata.continue"), 0);
	rv1 = str_at(page, "metadata.resourceVersion");
	assert_non_null(rv1);
	assert_int_equal(tau_kube_list_all(&all, c, &tau_kube_res_configmaps, "paging", &lo), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(all, "items")), 20);
	assert_null(str_at(all, "metadata.continue"));
	cJSON_Delete(all);
	all = NULL;
	/* A field selector, and the whole namespace in one page. */
	lo.label_selector = NULL;
	lo.field_selector = "metadata.name=p03";
	assert_int_equal(tau_kube_list_all(&all, c, &tau_kube_res_configmaps, "paging", &lo), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(all, "items")), 1);
	cJSON_Delete(all);
	all = NULL;
	/* A bad selector is a 400 BadRequest. */
	lo.field_selector = "metadata.nope=x";
	expect_api_error(tau_kube_list(&all, c, &tau_kube_res_configmaps, "paging", &lo),
	                 -TAU_EINVAL, 400, "BadRequest");
	cJSON_Delete(page);
	tau_kube_client_free(c);
}

static bool crd_served(void *arg)
{
	cJSON *l = NULL;
	int rc = tau_kube_list(&l, arg, &widgets, "crud", NULL);

	cJSON_Delete(l);
	return rc == 0;
}

static void test_crd(void **state)
{
	tau_kube_client *c = e2e_client(-1, 3);
	cJSON *crd = e2e_json(
	        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
	        "\"metadata\":{\"name\":\"widgets.test.tau.dev\"},\"spec\":{\"group\":\"test.tau."
	        "dev\","
	        "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":"
	        "\"widget\","
	        "\"kind\":\"Widget\",\"listKind\":\"WidgetList\"},\"versions\":[{\"name\":\"v1\","
	        "\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},\"schema\":{"
	        "\"openAPIV3Schema\":{\"type\":\"object\","
	        "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}");
	cJSON *w = e2e_json("{\"apiVersion\":\"test.tau.dev/v1\",\"kind\":\"Widget\",\"metadata\":{"
	                    "\"name\":\"w1\",\"labels\":{\"tier\":\"gold\"}},\"spec\":{\"size\":1},"
	                    "\"status\":{\"phase\":\"Ignored\"}}");
	cJSON *created = NULL, *st = NULL, *upd = NULL, *del = NULL, *list = NULL;
	int64_t gen = 0;
	int rc;

	(void)state;
	assert_int_equal(e2e_namespace(c, "crud"), 0);
	rc = tau_kube_create(NULL, c, &tau_kube_res_crds, NULL, crd);
	assert_true(rc == 0 || rc == -TAU_ECONFLICT);
	assert_true(e2e_wait(crd_served, c, 20000));
	assert_int_equal(tau_kube_create(&created, c, &widgets, "crud", w), 0);
	/* Status subresource: status on create is dropped, generation starts at 1. */
	assert_null(cJSON_GetObjectItem(created, "status"));
	assert_int_equal(tau_json_get_int(&gen, created, "metadata.generation"), 0);
	assert_int_equal(gen, 1);
	/* Update without a resourceVersion is refused for CRs. */
	expect_api_error(tau_kube_update(NULL, c, &widgets, "crud", w), -TAU_EINVAL, 422,
	                 "Invalid");
	/* /status takes only .status. */
	cJSON_AddItemToObject(created, "status", e2e_json("{\"phase\":\"Ready\"}"));
	cJSON_ReplaceItemInObject(created, "spec", e2e_json("{\"size\":99}"));
	assert_int_equal(tau_kube_update_status(&st, c, &widgets, NULL, created), 0);
	assert_string_equal(str_at(st, "status.phase"), "Ready");
	assert_int_equal(tau_json_get_int(&gen, st, "spec.size"), 0);
	assert_int_equal(gen, 1);
	/* Main-resource update: spec changes, status kept, generation bumped. */
	cJSON_ReplaceItemInObject(st, "spec", e2e_json("{\"size\":2}"));
	cJSON_ReplaceItemInObject(st, "status", e2e_json("{\"phase\":\"Hacked\"}"));
	assert_int_equal(tau_kube_update(&upd, c, &widgets, NULL, st), 0);
	assert_string_equal(str_at(upd, "status.phase"), "Ready");
	assert_int_equal(tau_json_get_int(&gen, upd, "metadata.generation"), 0);
	assert_int_equal(gen, 2);
	/* The stale copy conflicts. */
	expect_api_error(tau_kube_update(NULL, c, &widgets, NULL, st), -TAU_ECONFLICT, 409,
	                 "Conflict");
	/* Merge patch on /status. */
	cJSON_Delete(upd);
	upd = NULL;
	assert_int_equal(tau_kube_patch(&upd, c, &widgets, "crud", "w1", "status",
	                                TAU_KUBE_PATCH_MERGE, "{\"status\":{\"observed\":2}}"),
	                 0);
	assert_string_equal(str_at(upd, "status.phase"), "Ready");
	/* Strategic merge patch is not for CRs: 415. */
	expect_api_error(tau_kube_patch(NULL, c, &widgets, "crud", "w1", NULL,
	                                TAU_KUBE_PATCH_STRATEGIC, "{\"spec\":{\"size\":3}}"),
	                 -TAU_EIO, 415, "UnsupportedMediaType");
	/* Label selector on the CR list. */
	{
		tau_kube_list_options lo = {.label_selector = "tier in (gold,silver)"};

		assert_int_equal(tau_kube_list_all(&list, c, &widgets, "crud", &lo), 0);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 1);
	}
	/* Deleting a CR answers with a Success Status. */
	assert_int_equal(tau_kube_delete(&del, c, &widgets, "crud", "w1", NULL), 0);
	assert_string_equal(str_at(del, "kind"), "Status");
	assert_string_equal(str_at(del, "status"), "Success");
	expect_api_error(tau_kube_get(NULL, c, &widgets, "crud", "w1"), -TAU_ENOTFOUND, 404,
	                 "NotFound");
	cJSON_Delete(crd);
	cJSON_Delete(w);
	cJSON_Delete(created);
	cJSON_Delete(st);
	cJSON_Delete(upd);
	cJSON_Delete(del);
	cJSON_Delete(list);
	tau_kube_client_free(c);
}

static void test_retries(void **state)
{
	tau_kube_client *c = e2e_client(-1, 4);
	tau_kube_client_stats s0, s1;
	cJSON *cm = e2e_json("{\"metadata\":{\"name\":\"retry\"},\"data\":{}}");
	uint64_t t0;
	int rc;

	(void)state;
	assert_int_equal(e2e_namespace(c, "retry"), 0);
	rc = tau_kube_create(NULL, c, &tau_kube_res_configmaps, "retry", cm);
	assert_true(rc == 0 || rc == -TAU_ECONFLICT);
	/* 429 with Retry-After: 1 (plain-text body), twice: retried, ~2 s. */
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"get\",\"resource\":"
	                            "\"configmaps\",\"status\":429,\"count\":2}]}"),
	                 0);
	tau_kube_client_stats_get(c, &s0);
	t0 = tau_clock_mono_ms();
	assert_int_equal(tau_kube_get(NULL, c, &tau_kube_res_configmaps, "retry", "retry"), 0);
	assert_true(tau_clock_mono_ms() - t0 >= 1900);
	tau_kube_client_stats_get(c, &s1);
	assert_int_equal(s1.retries - s0.retries, 2);
	/* 500 on an idempotent GET: retried with backoff. */
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"get\",\"resource\":"
	                            "\"configmaps\",\"status\":500,\"count\":2}]}"),
	                 0);
	assert_int_equal(tau_kube_get(NULL, c, &tau_kube_res_configmaps, "retry", "retry"), 0);
	/* 500 on POST is not retried; the typed error says why. */
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"create\",\"resource\":"
	                            "\"configmaps\",\"status\":500,\"count\":1}]}"),
	                 0);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cm, "metadata"), "name",
	                          cJSON_CreateString("retry2"));
	expect_api_error(tau_kube_create(NULL, c, &tau_kube_res_configmaps, "retry", cm), -TAU_EIO,
	                 500, "InternalError");
	/* 429 on POST is retried (the server did not process it). */
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"create\",\"resource\":"
	                            "\"configmaps\",\"status\":429,\"count\":1,"
	                            "\"retryAfter\":0}]}"),
	                 0);
	rc = tau_kube_create(NULL, c, &tau_kube_res_configmaps, "retry", cm);
	if (rc != 0 && rc != -TAU_ECONFLICT)
		fail_msg("create after 429: %s", tau_error_last()->msg);
	/* Retries run out: 503 six times > 4 retries. */
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"get\",\"resource\":"
	                            "\"configmaps\",\"status\":503,\"count\":6}]}"),
	                 0);
	expect_api_error(tau_kube_get(NULL, c, &tau_kube_res_configmaps, "retry", "retry"),
	                 -TAU_EAGAIN, 503, "ServiceUnavailable");
	assert_int_equal(e2e_faults(c, "DELETE", NULL), 0);
	cJSON_Delete(cm);
	tau_kube_client_free(c);
}

static void test_rate_limiter(void **state)
{
	tau_kube_config_options opts = {.kubeconfig = getenv("KUBE_SIM_KUBECONFIG")};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_kube_client_stats s;
	uint64_t t0;

	(void)state;
	assert_int_equal(tau_kube_config_load(&cfg, &opts), 0);
	cfg->qps = 4;
	cfg->burst = 2;
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	t0 = tau_clock_mono_ms();
	/* burst 2 then 4 qps: 8 requests need >= 1.5 s whatever the server's speed. */
	for (int i = 0; i < 8; i++)
		assert_int_equal(tau_kube_get(NULL, c, &tau_kube_res_namespaces, NULL, "default"),
		                 0);
	assert_true(tau_clock_mono_ms() - t0 >= 1500);
	tau_kube_client_stats_get(c, &s);
	assert_true(s.throttled_ms > 0);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
}

/* One GET; true once the client has read its token file `want_reads` times. */
typedef struct token_reads {
	tau_kube_client *c;
	uint64_t want_reads;
} token_reads;

static bool token_reread(void *arg)
{
	token_reads *tr = arg;
	tau_kube_client_stats s;

	assert_int_equal(tau_kube_get(NULL, tr->c, &tau_kube_res_namespaces, NULL, "default"), 0);
	tau_kube_client_stats_get(tr->c, &s);
	return s.token_reads >= tr->want_reads;
}

static void test_token_file_rotation(void **state)
{
	tau_kube_config_options opts = {.kubeconfig = getenv("KUBE_SIM_KUBECONFIG")};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_kube_client_stats s;
	char path[] = "/tmp/tau-e2e-token-XXXXXX", *admin;
	token_reads tr = {.want_reads = 4};
	uint64_t read_at;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(tau_kube_config_load(&cfg, &opts), 0);
	assert_non_null(cfg->token);
	admin = cfg->token;
	cfg->token = NULL;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "bogus\n", 6), 6);
	close(fd);
	cfg->token_file = strdup(path);
	cfg->max_retries = 0;
	cfg->token_reread_ms = 1500;
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	tr.c = c;
	/* A wrong token: 401, re-read (still wrong), 401 again. */
	expect_api_error(tau_kube_get(NULL, c, &tau_kube_res_namespaces, NULL, "default"),
	                 -TAU_EPERM, 401, "Unauthorized");
	/* The kubelet rotates the file: the cached token is stale, the 401 makes us re-read. */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", admin);
	fclose(f);
	read_at = tau_clock_mono_ms(); /* the third read happens during this GET, not before */
	assert_int_equal(tau_kube_get(NULL, c, &tau_kube_res_namespaces, NULL, "default"), 0);
	tau_kube_client_stats_get(c, &s);
	assert_int_equal(s.token_reads, 3);
	/* Now cached: no more reads... */
	assert_int_equal(tau_kube_get(NULL, c, &tau_kube_res_namespaces, NULL, "default"), 0);
	tau_kube_client_stats_get(c, &s);
	assert_int_equal(s.token_reads, 3);
	/* ...until the re-read period (a minute by default, 1.5 s here) has passed: requests
	 * until the fourth read, which must not come before the period is over. */
	assert_true(e2e_wait(token_reread, &tr, 10000));
	assert_true(tau_clock_mono_ms() - read_at >= 1500);
	tau_kube_client_stats_get(c, &s);
	assert_int_equal(s.token_reads, 4);
	unlink(path);
	free(admin);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
}

static void test_body_cap(void **state)
{
	tau_kube_config_options opts = {.kubeconfig = getenv("KUBE_SIM_KUBECONFIG")};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	cJSON *l = NULL;

	(void)state;
	assert_int_equal(tau_kube_config_load(&cfg, &opts), 0);
	cfg->body_cap = 256;
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	assert_int_equal(tau_kube_list(&l, c, &tau_kube_res_namespaces, NULL, NULL), -TAU_ETOOBIG);
	assert_null(l);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
}

static void test_token_review(void **state)
{
	const char *sa = getenv("KUBE_SIM_SA_TOKEN");
	const char *aud[] = {"https://kubernetes.default.svc.cluster.local"};
	const char *wrong_aud[] = {"https://elsewhere"};
	tau_kube_client *c;
	tau_kube_token_review *r = NULL;

	(void)state;
	if (sa == NULL)
		fail_msg("KUBE_SIM_SA_TOKEN is not set: run this program from "
		         "tests/e2e/test_kube_client.py");
	c = e2e_client(-1, 3);
	assert_int_equal(tau_kube_token_review_submit(&r, c, sa, aud, 1), 0);
	assert_true(r->authenticated);
	assert_string_equal(r->username, "system:serviceaccount:tau-system:tau-agent");
	assert_true(r->n_groups >= 2);
	assert_string_equal(r->groups[0], "system:serviceaccounts");
	assert_non_null(r->pod_name);
	assert_string_equal(r->pod_name, "tau-agent-7d9f");
	assert_string_equal(r->node_name, "node-a");
	assert_int_equal(r->n_audiences, 1);
	assert_string_equal(r->audiences[0], aud[0]);
	tau_kube_token_review_free(r);
	r = NULL;
	/* Audience mismatch: not authenticated. */
	assert_int_equal(tau_kube_token_review_submit(&r, c, sa, wrong_aud, 1), 0);
	assert_false(r->authenticated);
	assert_non_null(r->error);
	tau_kube_token_review_free(r);
	r = NULL;
	/* A bad token. */
	assert_int_equal(tau_kube_token_review_submit(&r, c, "not-a-token", NULL, 0), 0);
	assert_false(r->authenticated);
	assert_null(r->username);
	assert_non_null(strstr(r->error, "invalid bearer token"));
	tau_kube_token_review_free(r);
	tau_kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_configmap_crud),
	        cmocka_unit_test(test_list_paging),
	        cmocka_unit_test(test_crd),
	        cmocka_unit_test(test_retries),
	        cmocka_unit_test(test_rate_limiter),
	        cmocka_unit_test(test_token_file_rotation),
	        cmocka_unit_test(test_body_cap),
	        cmocka_unit_test(test_token_review),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
