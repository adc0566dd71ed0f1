/*
 * Unit tests of aggregator/options.c: defaults, flags, their environment twins, the flag
 * winning over the environment, and usage errors (what main turns into exit 2).
 */
#include "options.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const char *const *fake_env;

static const char *env_fn(const char *name)
{
	for (size_t i = 0; fake_env != NULL && fake_env[i] != NULL; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

#define ARGV(...)                                                                                  \
	(const char *[])                                                                           \
	{                                                                                          \
		"tau-aggregator", __VA_ARGS__, NULL                                                \
	}
#define LISTEN "--grpc-listen", ":0", "--http-listen", "127.0.0.1:0"

static int parse(tau_agg_options *o, const char **argv, const char *const *env)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	fake_env = env;
	return tau_agg_options_parse(o, argc, (char **)argv, env_fn);
}

static void expect_error(const char **argv, const char *const *env, const char *msg)
{
	tau_agg_options o;

	if (parse(&o, argv, env) != -TAU_EINVAL)
		fail_msg("accepted; wanted \"%s\"", msg);
	if (strcmp(tau_error_last()->msg, msg) != 0)
		fail_msg("message \"%s\", wanted \"%s\"", tau_error_last()->msg, msg);
}

static void test_defaults(void **state)
{
	tau_agg_options o;

	(void)state;
	assert_int_equal(parse(&o, ARGV(LISTEN), NULL), 0);
	assert_string_equal(o.grpc_listen, ":0");
	assert_string_equal(o.http_listen, "127.0.0.1:0");
	assert_string_equal(o.system_namespace, "tau-system");
	assert_string_equal(o.token_audience, "taugrid");
	assert_string_equal(o.agent_sa, "tau-system:tau-node-agent");
	assert_int_equal(o.sync_timeout_ms, 60000);
	assert_int_equal(o.heartbeat_ms, 30000);
	assert_int_equal(o.budget_coalesce_ms, 200);
	assert_int_equal(o.budget_resync_ms, 300000);
	assert_false(o.leader_elect);
	assert_false(o.no_workspace_controller);
	assert_false(o.log_level_set);
	assert_false(o.log_format_set);
	assert_false(o.gates.multiple_workspaces);
	assert_int_equal(o.namespace_mode, TAU_AGG_NS_MODE_FROM_CLUSTER);
	assert_null(o.tls_cert);
	assert_null(o.kubeconfig);
	assert_null(o.researcher_role);
	assert_false(o.allow_anonymous_queries);
	assert_int_equal(o.max_pending_reviews, 4096);
	assert_int_equal(o.review_qps, 400);
	assert_int_equal(o.review_burst, 100);
	assert_int_equal(o.review_workers, 8);
	assert_int_equal(o.grpc_threads, 2);
	assert_int_equal(o.max_pool_watchers, 1024);
	assert_int_equal(o.max_concurrent_streams, 1000);
}

static void test_query_auth_options(void **state)
{
	static const char *const env[] = {"TAU_ALLOW_ANONYMOUS_QUERIES", "true",
	                                  "TAU_MAX_PENDING_REVIEWS", "7", NULL};
	static const char *const env_bad[] = {"TAU_ALLOW_ANONYMOUS_QUERIES", "sometimes", NULL};
	tau_agg_options o;

	(void)state;
	assert_int_equal(
	        parse(&o, ARGV(LISTEN, "--allow-anonymous-queries", "--max-pending-reviews", "3"),
	              NULL),
	        0);
	assert_true(o.allow_anonymous_queries);
	assert_int_equal(o.max_pending_reviews, 3);
	assert_int_equal(parse(&o, ARGV(LISTEN), env), 0);
	assert_true(o.allow_anonymous_queries);
	assert_int_equal(o.max_pending_reviews, 7);
	assert_int_equal(parse(&o, ARGV(LISTEN, "--max-pending-reviews", "9"), env), 0);
	assert_int_equal(o.max_pending_reviews, 9);
	expect_error(ARGV(LISTEN), env_bad,
	             "TAU_ALLOW_ANONYMOUS_QUERIES sometimes: expected true or false");
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--max-pending-reviews", "0"), NULL), 0);
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--max-pending-reviews", "x"), NULL), 0);
	assert_non_null(strstr(tau_error_last()->msg, "--max-pending-reviews"));
	assert_int_equal(
	        parse(&o,
	              ARGV(LISTEN, "--max-pool-watchers", "2", "--max-concurrent-streams", "50"),
	              NULL),
	        0);
	assert_int_equal(o.max_pool_watchers, 2);
	assert_int_equal(o.max_concurrent_streams, 50);
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--max-pool-watchers", "-1"), NULL), 0);
}

static void test_review_budget_options(void **state)
{
	static const char *const env[] = {
	        "TAU_REVIEW_QPS", "50", "TAU_REVIEW_BURST", "5", "TAU_REVIEW_WORKERS", "2", NULL};
	tau_agg_options o;

	(void)state;
	assert_int_equal(parse(&o,
	                       ARGV(LISTEN, "--review-qps", "1000", "--review-burst", "10",
	                            "--review-workers", "16"),
	                       NULL),
	                 0);
	assert_int_equal(o.review_qps, 1000);
	assert_int_equal(o.review_burst, 10);
	assert_int_equal(o.review_workers, 16);
	assert_int_equal(parse(&o, ARGV(LISTEN), env), 0);
	assert_int_equal(o.review_qps, 50);
	assert_int_equal(o.review_burst, 5);
	assert_int_equal(o.review_workers, 2);
	/* The flag wins over its environment twin. */
	assert_int_equal(parse(&o, ARGV(LISTEN, "--review-qps", "7"), env), 0);
	assert_int_equal(o.review_qps, 7);
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--review-qps", "0"), NULL), 0);
	assert_non_null(strstr(tau_error_last()->msg, "--review-qps"));
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--review-burst", "x"), NULL), 0);
	assert_non_null(strstr(tau_error_last()->msg, "--review-burst"));
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--review-workers", "65"), NULL), 0);
	assert_non_null(strstr(tau_error_last()->msg, "--review-workers"));
}

static void test_grpc_threads(void **state)
{
	static const char *const env[] = {"TAU_GRPC_THREADS", "4", NULL};
	tau_agg_options o;

	(void)state;
	assert_int_equal(parse(&o, ARGV(LISTEN, "--grpc-threads", "1"), NULL), 0);
	assert_int_equal(o.grpc_threads, 1);
	assert_int_equal(parse(&o, ARGV(LISTEN), env), 0);
	assert_int_equal(o.grpc_threads, 4);
	assert_int_equal(parse(&o, ARGV(LISTEN, "--grpc-threads", "3"), env), 0);
	assert_int_equal(o.grpc_threads, 3);
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--grpc-threads", "0"), NULL), 0);
	assert_non_null(strstr(tau_error_last()->msg, "--grpc-threads"));
	assert_int_not_equal(parse(&o, ARGV(LISTEN, "--grpc-threads", "9"), NULL), 0);
	assert_non_null(strstr(tau_error_last()->msg, "--grpc-threads"));
}

static void test_flags(void **state)
{
	tau_agg_options o;

	(void)state;
	assert_int_equal(
	        parse(&o,
	              ARGV(LISTEN, "--kubeconfig", "/k", "--context", "c", "--system-namespace",
	                   "ns", "--leader-elect", "--tls-cert", "/c", "--tls-key", "/k2",
	                   "--token-audience", "aud", "--agent-service-account", "a:b",
	                   "--initial-sync-timeout", "2m", "--heartbeat-interval", "1.5s",
	                   "--log-level", "debug", "--log-format", "json", "--namespace-mode",
	                   "operator", "--allowlist-selector", "x=y", "--allowlist-file", "/al",
	                   "--namespace-map-file", "/map", "--researcher-role", "r",
	                   "--no-workspace-controller", "--budget-coalesce", "50ms",
	                   "--budget-resync", "1h", "--feature-gates", "MultipleWorkspaces=true"),
	              NULL),
	        0);
	assert_string_equal(o.kubeconfig, "/k");
	assert_string_equal(o.context, "c");
	assert_string_equal(o.system_namespace, "ns");
	assert_true(o.leader_elect);
	assert_string_equal(o.tls_cert, "/c");
	assert_string_equal(o.tls_key, "/k2");
	assert_string_equal(o.token_audience, "aud");
	assert_string_equal(o.agent_sa, "a:b");
	assert_int_equal(o.sync_timeout_ms, 120000);
	assert_int_equal(o.heartbeat_ms, 1500);
	assert_true(o.log_level_set);
	assert_int_equal(o.log_level, TAU_LOG_DEBUG);
	assert_int_equal(o.log_format, TAU_LOG_FORMAT_JSON);
	assert_int_equal(o.namespace_mode, TAU_AGG_NS_MODE_OPERATOR);
	assert_string_equal(o.allowlist_selector, "x=y");
	assert_string_equal(o.allowlist_file, "/al");
	assert_string_equal(o.namespace_map_file, "/map");
	assert_string_equal(o.researcher_role, "r");
	assert_true(o.no_workspace_controller);
	assert_int_equal(o.budget_coalesce_ms, 50);
	assert_int_equal(o.budget_resync_ms, 3600000);
	assert_true(o.gates.multiple_workspaces);
}

static void test_environment(void **state)
{
	static const char *const env[] = {"TAU_GRPC_LISTEN",
	                                  ":1",
	                                  "TAU_HTTP_LISTEN",
	                                  ":2",
	                                  "TAU_CONTEXT",
	                                  "ec",
	                                  "TAU_SYSTEM_NAMESPACE",
	                                  "", /* empty counts as unset */
	                                  "TAU_LEADER_ELECT",
	                                  "true",
	                                  "TAU_WORKSPACE_CONTROLLER",
	                                  "0",
	                                  "TAU_INITIAL_SYNC_TIMEOUT",
	                                  "500ms",
	                                  "TAU_HEARTBEAT_INTERVAL",
	                                  "10",
	                                  "TAU_LOG_LEVEL",
	                                  "warn",
	                                  "TAU_LOG_FORMAT",
	                                  "json",
	                                  "TAU_NAMESPACE_MODE",
	                                  "Managed",
	                                  "TAU_BUDGET_COALESCE",
	                                  "1s",
	                                  "TAU_BUDGET_RESYNC",
	                                  "10m",
	                                  "TAU_FEATURE_GATES",
	                                  "MultipleWorkspaces=true",
	                                  NULL};
	tau_agg_options o;

	(void)state;
	assert_int_equal(parse(&o, ARGV("--context", "flag"), env), 0);
	assert_string_equal(o.grpc_listen, ":1");
	assert_string_equal(o.http_listen, ":2");
	assert_string_equal(o.context, "flag"); /* the flag wins */
	assert_string_equal(o.system_namespace, "tau-system");
	assert_true(o.leader_elect);
	assert_true(o.no_workspace_controller);
	assert_int_equal(o.sync_timeout_ms, 500);
	assert_int_equal(o.heartbeat_ms, 10000);
	assert_int_equal(o.log_level, TAU_LOG_WARN);
	assert_true(o.log_format_set);
	assert_int_equal(o.log_format, TAU_LOG_FORMAT_JSON);
	assert_int_equal(o.namespace_mode, TAU_AGG_NS_MODE_MANAGED);
	assert_int_equal(o.budget_coalesce_ms, 1000);
	assert_int_equal(o.budget_resync_ms, 600000);
	assert_true(o.gates.multiple_workspaces);
	/* A flag's duration wins over its twin, even one that would be refused. */
	{
		static const char *const bad[] = {"TAU_HEARTBEAT_INTERVAL", "nan", NULL};

		assert_int_equal(parse(&o, ARGV(LISTEN, "--heartbeat-interval", "5s"), bad), 0);
		assert_int_equal(o.heartbeat_ms, 5000);
	}
}

static void test_help_and_version(void **state)
{
	tau_agg_options o;

	(void)state;
	/* Nothing else is required or checked. */
	assert_int_equal(parse(&o, ARGV("--help"), NULL), 0);
	assert_true(o.help);
	assert_int_equal(parse(&o, ARGV("--version", "--heartbeat-interval", "nan"), NULL), 0);
	assert_true(o.version);
}

static void test_bad_durations(void **state)
{
	static const char *const env_nan[] = {"TAU_HEARTBEAT_INTERVAL", "nan", NULL};
	static const char *const env_resync[] = {"TAU_BUDGET_RESYNC", "0s", NULL};

	(void)state;
	expect_error(ARGV(LISTEN, "--heartbeat-interval", "nan"), NULL,
	             "--heartbeat-interval nan: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	expect_error(ARGV(LISTEN), env_nan,
	             "TAU_HEARTBEAT_INTERVAL nan: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	expect_error(ARGV(LISTEN, "--initial-sync-timeout", "1e300"), NULL,
	             "--initial-sync-timeout 1e300: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	expect_error(ARGV(LISTEN, "--initial-sync-timeout", "99999999999999999999h"), NULL,
	             "--initial-sync-timeout 99999999999999999999h: out of range (0s..24h)");
	expect_error(ARGV(LISTEN, "--initial-sync-timeout", "-1s"), NULL,
	             "--initial-sync-timeout -1s: must not be negative");
	expect_error(ARGV(LISTEN, "--heartbeat-interval", "500ms"), NULL,
	             "--heartbeat-interval 500ms: out of range (1s..1h)");
	expect_error(ARGV(LISTEN, "--heartbeat-interval", "30sec"), NULL,
	             "--heartbeat-interval 30sec: not a duration (e.g. 500ms, 60s, 2m, 1h30m)");
	expect_error(ARGV(LISTEN, "--budget-coalesce", "2m"), NULL,
	             "--budget-coalesce 2m: out of range (0s..1m)");
	expect_error(ARGV(LISTEN), env_resync, "TAU_BUDGET_RESYNC 0s: out of range (1s..24h)");
}

static void test_bad_values(void **state)
{
	static const char *const env_bool[] = {"TAU_LEADER_ELECT", "maybe", NULL};
	static const char *const env_ws[] = {"TAU_WORKSPACE_CONTROLLER", "nope", NULL};
	static const char *const env_level[] = {"TAU_LOG_LEVEL", "loud", NULL};
	static const char *const env_format[] = {"TAU_LOG_FORMAT", "xml", NULL};

	(void)state;
	expect_error(ARGV("--http-listen", ":1"), NULL,
	             "--grpc-listen and --http-listen are required");
	expect_error(ARGV("--grpc-listen", ":1", "--http-listen", "9102"), NULL,
	             "--http-listen: listen address 9102: expected HOST:PORT or :PORT");
	expect_error(ARGV("--grpc-listen", "x:y:z", "--http-listen", ":1"), NULL,
	             "--grpc-listen: listen address x:y:z: put an IPv6 address in brackets");
	expect_error(ARGV(LISTEN, "--tls-cert", "/c"), NULL,
	             "--tls-cert and --tls-key go together");
	expect_error(ARGV(LISTEN, "--namespace-mode", "shared"), NULL,
	             "--namespace-mode is Managed or Operator, not \"shared\"");
	expect_error(ARGV(LISTEN), env_bool, "TAU_LEADER_ELECT maybe: expected true or false");
	expect_error(ARGV(LISTEN), env_ws, "TAU_WORKSPACE_CONTROLLER nope: expected true or false");
	expect_error(ARGV(LISTEN), env_level,
	             "TAU_LOG_LEVEL loud: expected debug, info, warn or error");
	expect_error(ARGV(LISTEN), env_format, "TAU_LOG_FORMAT xml: expected logfmt or json");
	expect_error(ARGV(LISTEN, "--log-format", "text"), NULL,
	             "--log-format text: expected logfmt or json");
	expect_error(ARGV(LISTEN, "--frobnicate"), NULL, "unknown option --frobnicate");
	expect_error(ARGV(LISTEN, "--context"), NULL, "--context needs a value");
	expect_error(ARGV(LISTEN, "extra"), NULL, "unexpected argument \"extra\"");
}

static void test_feature_gates(void **state)
{
	tau_agg_feature_gates g = {0};

	(void)state;
	assert_int_equal(
	        tau_agg_feature_gates_parse(&g, "--feature-gates", "MultipleWorkspaces=true"), 0);
	assert_true(g.multiple_workspaces);
	assert_int_equal(
	        tau_agg_feature_gates_parse(&g, "--feature-gates", "MultipleWorkspaces=FALSE"), 0);
	assert_false(g.multiple_workspaces);
	assert_int_equal(tau_agg_feature_gates_parse(&g, "--feature-gates", ""), 0);
	expect_error(ARGV(LISTEN, "--feature-gates", "Frobnicate=true"), NULL,
	             "--feature-gates Frobnicate=true: unknown feature gate Frobnicate (known: "
	             "MultipleWorkspaces)");
	expect_error(ARGV(LISTEN, "--feature-gates", "MultipleWorkspaces"), NULL,
	             "--feature-gates MultipleWorkspaces: missing =true or =false after "
	             "\"MultipleWorkspaces\"");
	expect_error(ARGV(LISTEN, "--feature-gates", "MultipleWorkspaces=maybe"), NULL,
	             "--feature-gates MultipleWorkspaces=maybe: MultipleWorkspaces=maybe: expected "
	             "true or false");
	expect_error(ARGV(LISTEN, "--feature-gates", "MultipleWorkspaces=true,=true"), NULL,
	             "--feature-gates MultipleWorkspaces=true,=true: expected Name=true|false, not "
	             "\"=true\"");
	/* A refused list changes nothing. */
	g.multiple_workspaces = false;
	assert_int_equal(tau_agg_feature_gates_parse(&g, "TAU_FEATURE_GATES",
	                                             "MultipleWorkspaces=true,Nope=true"),
	                 -TAU_EINVAL);
	assert_false(g.multiple_workspaces);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults),
	        cmocka_unit_test(test_flags),
	        cmocka_unit_test(test_environment),
	        cmocka_unit_test(test_help_and_version),
	        cmocka_unit_test(test_bad_durations),
	        cmocka_unit_test(test_bad_values),
	        cmocka_unit_test(test_feature_gates),
	        cmocka_unit_test(test_query_auth_options),
	        cmocka_unit_test(test_review_budget_options),
	        cmocka_unit_test(test_grpc_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
