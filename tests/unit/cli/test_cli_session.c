/*
 * test_cli_session.c - the system namespace every `tau` command uses: an
 * explicit --system-namespace wins, then TauCluster status.systemNamespace,
 * then tau-system (an absent TauCluster, an absent or empty field); and
 * --request-timeout, kubectl's name and meaning, for the API and the aggregator.
 */
#include "cli.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static cJSON *cluster(const char *json)
{
	cJSON *o = NULL;

	assert_int_equal(tau_json_parse(&o, json, strlen(json), 0), 0);
	return o;
}

static void test_explicit_wins(void **state)
{
	cJSON *c = cluster("{\"status\":{\"systemNamespace\":\"ml-platform\"}}");

	(void)state;
	assert_string_equal(tau_cli_system_namespace_pick("other", c), "other");
	assert_string_equal(tau_cli_system_namespace_pick("other", NULL), "other");
	cJSON_Delete(c);
}

static void test_recorded_namespace(void **state)
{
	cJSON *c = cluster("{\"status\":{\"systemNamespace\":\"ml-platform\"}}");

	(void)state;
	assert_string_equal(tau_cli_system_namespace_pick(NULL, c), "ml-platform");
	/* An empty flag is not a choice. */
	assert_string_equal(tau_cli_system_namespace_pick("", c), "ml-platform");
	cJSON_Delete(c);
}

static void test_default(void **state)
{
	cJSON *none = cluster("{\"status\":{\"phase\":\"Ready\"}}");
	cJSON *empty = cluster("{\"status\":{\"systemNamespace\":\"\"}}");
	cJSON *wrong = cluster("{\"status\":{\"systemNamespace\":7}}");

	(void)state;
	assert_string_equal(tau_cli_system_namespace_pick(NULL, NULL), "tau-system");
	assert_string_equal(tau_cli_system_namespace_pick(NULL, none), "tau-system");
	assert_string_equal(tau_cli_system_namespace_pick(NULL, empty), "tau-system");
	assert_string_equal(tau_cli_system_namespace_pick(NULL, wrong), "tau-system");
	cJSON_Delete(none);
	cJSON_Delete(empty);
	cJSON_Delete(wrong);
}

static void test_request_timeout_parse(void **state)
{
	static const struct {
		const char *text;
		int64_t ms;
	} good[] = {{"0", 0},       {"1s", 1000},  {"2m", 120000},   {"3h", 10800000},
	            {"500ms", 500}, {"1.5", 1500}, {"24h", 86400000}};
	static const struct {
		const char *text, *why;
	} bad[] = {{"soon", "not a duration"},
	           {"-1s", "must not be negative"},
	           {"25h", "out of range"},
	           {"", "empty"},
	           {"1e3", "not a duration"}};

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		tau_cli_globals g = {0};

		assert_int_equal(tau_cli_request_timeout_parse(&g, good[i].text), 0);
		assert_true(g.request_timeout_set);
		assert_int_equal(g.request_timeout_ms, good[i].ms);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		tau_cli_globals g = {0};

		assert_int_equal(tau_cli_request_timeout_parse(&g, bad[i].text), -TAU_EINVAL);
		assert_false(g.request_timeout_set);
		assert_non_null(strstr(tau_error_last()->msg, "--request-timeout"));
		assert_non_null(strstr(tau_error_last()->msg, bad[i].why));
	}
}

static void test_rpc_timeout(void **state)
{
	tau_cli_globals g = {0};

	(void)state;
	/* Not given: the command's own default. */
	assert_int_equal(tau_cli_rpc_timeout_ms(NULL, 10000), 10000);
	assert_int_equal(tau_cli_rpc_timeout_ms(&g, 10000), 10000);
	assert_int_equal(tau_cli_request_timeout_parse(&g, "1s"), 0);
	assert_int_equal(tau_cli_rpc_timeout_ms(&g, 10000), 1000);
	/* 0: no deadline, which lib/rpc spells as the largest int (<= 0 would mean 30 s). */
	assert_int_equal(tau_cli_request_timeout_parse(&g, "0"), 0);
	assert_int_equal(tau_cli_rpc_timeout_ms(&g, 10000), INT_MAX);
}

/* The API client side: libtau's one helper, as tau_cli_connect applies it. */
static void test_kube_request_timeout(void **state)
{
	tau_kube_config *cfg = NULL;

	(void)state;
	assert_int_equal(tau_kube_config_new(&cfg), 0);
	assert_false(cfg->no_transport_retry);
	tau_kube_config_set_request_timeout(cfg, 0);
	assert_int_equal(cfg->timeout_ms, 0);             /* no limit on a request */
	assert_int_equal(cfg->connect_timeout_ms, 10000); /* but connecting is bounded */
	assert_int_equal(cfg->max_retries, 10);           /* 429/5xx still retried */
	assert_true(cfg->no_transport_retry);             /* a closed port fails at once */
	tau_kube_config_set_request_timeout(cfg, 1500);
	assert_int_equal(cfg->timeout_ms, 1500);
	assert_int_equal(cfg->connect_timeout_ms, 1500);
	assert_int_equal(cfg->max_retries, 0);
	tau_kube_config_set_request_timeout(cfg, 60000);
	assert_int_equal(cfg->connect_timeout_ms, 1500); /* never raised */
	tau_kube_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_explicit_wins), cmocka_unit_test(test_recorded_namespace),
	        cmocka_unit_test(test_default),       cmocka_unit_test(test_request_timeout_parse),
	        cmocka_unit_test(test_rpc_timeout),   cmocka_unit_test(test_kube_request_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
