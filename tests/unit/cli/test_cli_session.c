/*
 * test_cli_session.c - the system namespace every `tau` command uses: an
 * explicit --system-namespace wins, then TauCluster status.systemNamespace,
 * then tau-system (an absent TauCluster, an absent or empty field).
 */
#include "cli.h"

#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_explicit_wins),
	        cmocka_unit_test(test_recorded_namespace),
	        cmocka_unit_test(test_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
