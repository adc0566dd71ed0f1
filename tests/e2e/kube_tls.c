/*
 * kube_tls.c - the client over TLS against `kube-sim --tls --authz rbac`:
 * the CA from a file or inline data, a client certificate (CN/O = user and
 * groups) from files or inline data, a wrong CA refused, and an informer
 * over the same TLS settings.  The driver writes the kubeconfigs:
 *   KUBE_SIM_TLS_FILES  client cert/key and CA as (relative) file paths
 *   KUBE_SIM_TLS_DATA   the same inline as *-data
 *   KUBE_SIM_TLS_NOCA   no CA at all (system store: must fail to verify)
 *   KUBE_SIM_TLS_ANON   CA but no credentials (anonymous: RBAC forbids)
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

#include "kube_e2e.h"
#include "tau/error.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"

static tau_kube_client *client_for(const char *env)
{
	tau_kube_config_options o = {.kubeconfig = getenv(env)};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;

	if (o.kubeconfig == NULL)
		fail_msg("%s is not set: run this program from tests/e2e/test_kube_client.py", env);
	if (tau_kube_config_load(&cfg, &o) < 0)
		fail_msg("%s: %s", env, tau_error_last()->msg);
	cfg->max_retries = 0;
	assert_int_equal(tau_kube_client_new(&c, cfg), 0);
	tau_kube_config_free(cfg);
	return c;
}

static void check_cert_client(const char *env)
{
	tau_kube_client *c = client_for(env);
	cJSON *l = NULL;

	if (tau_kube_list(&l, c, &tau_kube_res_namespaces, NULL, NULL) < 0)
		fail_msg("%s: %s", env, tau_error_last()->msg);
	assert_non_null(cJSON_GetObjectItem(l, "items"));
	cJSON_Delete(l);
	tau_kube_client_free(c);
}

static void test_client_cert_files(void **state)
{
	(void)state;
	check_cert_client("KUBE_SIM_TLS_FILES");
}

static void test_client_cert_data(void **state)
{
	(void)state;
	check_cert_client("KUBE_SIM_TLS_DATA");
}

static void test_unknown_ca_refused(void **state)
{
	tau_kube_client *c = client_for("KUBE_SIM_TLS_NOCA");

	(void)state;
	assert_int_equal(tau_kube_list(NULL, c, &tau_kube_res_namespaces, NULL, NULL), -TAU_EIO);
	assert_int_equal(tau_kube_api_error_last()->http_code, 0);
	assert_non_null(strstr(tau_error_last()->msg, "certificate"));
	tau_kube_client_free(c);
}

static void test_anonymous_forbidden(void **state)
{
	tau_kube_client *c = client_for("KUBE_SIM_TLS_ANON");

	(void)state;
	assert_int_equal(tau_kube_list(NULL, c, &tau_kube_res_namespaces, NULL, NULL), -TAU_EPERM);
	assert_int_equal(tau_kube_api_error_last()->http_code, 403);
	assert_true(tau_kube_api_error_is(tau_kube_api_error_last(), "Forbidden"));
	tau_kube_client_free(c);
}

static bool synced(void *arg)
{
	return tau_kube_informer_has_synced(arg);
}

static void test_informer_over_tls(void **state)
{
	tau_kube_client *c = client_for("KUBE_SIM_TLS_DATA");
	tau_kube_loop *loop = NULL;
	tau_kube_informer *inf = NULL;
	cJSON *ns = NULL;

	(void)state;
	assert_int_equal(tau_kube_loop_new(&loop, c), 0);
	assert_int_equal(tau_kube_informer_new(&inf, loop, &tau_kube_res_namespaces, NULL, NULL),
	                 0);
	tau_kube_informer_start(inf);
	assert_int_equal(tau_kube_loop_start_thread(loop), 0);
	assert_true(e2e_wait(synced, inf, 30000));
	assert_int_equal(tau_kube_informer_get(&ns, inf, NULL, "default"), 0);
	cJSON_Delete(ns);
	tau_kube_loop_join(loop);
	tau_kube_informer_free(inf);
	tau_kube_loop_free(loop);
	tau_kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_client_cert_files),
	        cmocka_unit_test(test_client_cert_data),
	        cmocka_unit_test(test_unknown_ca_refused),
	        cmocka_unit_test(test_anonymous_forbidden),
	        cmocka_unit_test(test_informer_over_tls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
