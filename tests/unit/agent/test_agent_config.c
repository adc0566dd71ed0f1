/*
 * Unit tests of agent/config.c: flags, their environment variables, the
 * precedence of flags over the environment, and usage errors.
 */
#include "config.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* A fake environment: NULL-terminated name/value pairs. */
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
		"tau-node-agent", __VA_ARGS__, NULL                                                \
	}

/* argc is counted from the NULL-terminated argv. */
static int parse(tau_agent_config *cfg, const char **argv, const char *const *env)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	fake_env = env;
	/* getopt permutes nothing here (POSIX order); the cast only drops const. */
	return tau_agent_config_parse(cfg, argc, (char **)argv, env_fn);
}

static void test_flags(void **state)
{
	tau_agent_config cfg;
	const char **argv =
	        ARGV("--node-name", "n1", "--aggregator", "agg.tau-system:50051", "--kubeconfig",
	             "/k", "--context", "c1", "--host-root", "/host", "--token-file", "/t",
	             "--ca-file", "/ca.pem", "--http-listen", ":9102", "--probe-interval", "15",
	             "--log-level", "debug", "--log-format", "json");

	(void)state;
	assert_int_equal(parse(&cfg, argv, NULL), 0);
	assert_string_equal(cfg.node_name, "n1");
	assert_string_equal(cfg.aggregator, "agg.tau-system:50051");
	assert_string_equal(cfg.kubeconfig, "/k");
	assert_string_equal(cfg.context, "c1");
	assert_string_equal(cfg.host_root, "/host");
	assert_string_equal(cfg.token_file, "/t");
	assert_string_equal(cfg.ca_file, "/ca.pem");
	assert_false(cfg.insecure);
	assert_false(cfg.once);
	assert_string_equal(cfg.http_listen, ":9102");
	assert_int_equal(cfg.probe_interval_s, 15);
	assert_int_equal(cfg.log_level, TAU_LOG_DEBUG);
	assert_int_equal(cfg.log_format, TAU_LOG_FORMAT_JSON);
	assert_false(cfg.node_conditions); /* off unless asked for */
	assert_int_equal(parse(&cfg,
	                       ARGV("--node-name", "n1", "--aggregator", "a:1", "--insecure",
	                            "--node-conditions"),
	                       NULL),
	                 0);
	assert_true(cfg.node_conditions);
}

static void test_env_and_precedence(void **state)
{
	static const char *const env[] = {"NODE_NAME",
	                                  "env-node",
	                                  "TAU_AGGREGATOR",
	                                  "10.0.0.1:50051",
	                                  "TAU_HOST_ROOT",
	                                  "/envroot",
	                                  "TAU_TOKEN_FILE",
	                                  "/var/run/tok",
	                                  "TAU_INSECURE",
	                                  "true",
	                                  "TAU_HTTP_LISTEN",
	                                  "0.0.0.0:8080",
	                                  "TAU_LOG_LEVEL",
	                                  "warn",
	                                  "TAU_LOG_FORMAT",
	                                  "json",
	                                  "TAU_CONTEXT",
	                                  "ctx",
	                                  "TAU_PROBE_INTERVAL",
	                                  "120",
	                                  "TAU_NODE_CONDITIONS",
	                                  "1",
	                                  NULL};
	tau_agent_config cfg;
	const char **argv = ARGV("--node-name", "flag-node", "--log-level", "error");

	(void)state;
	/* Environment alone is a complete configuration. */
	assert_int_equal(parse(&cfg, (const char *[]){"tau-node-agent", NULL}, env), 0);
	assert_string_equal(cfg.node_name, "env-node");
	assert_string_equal(cfg.aggregator, "10.0.0.1:50051");
	assert_string_equal(cfg.host_root, "/envroot");
	assert_string_equal(cfg.token_file, "/var/run/tok");
	assert_true(cfg.insecure);
	assert_string_equal(cfg.http_listen, "0.0.0.0:8080");
	assert_string_equal(cfg.context, "ctx");
	assert_int_equal(cfg.probe_interval_s, 120);
	assert_true(cfg.node_conditions);
	assert_int_equal(cfg.log_level, TAU_LOG_WARN);
	assert_int_equal(cfg.log_format, TAU_LOG_FORMAT_JSON);
	assert_null(cfg.kubeconfig); /* KUBECONFIG is left to the kube client */

	/* Flags win over the environment. */
	assert_int_equal(parse(&cfg, argv, env), 0);
	assert_string_equal(cfg.node_name, "flag-node");
	assert_int_equal(cfg.log_level, TAU_LOG_ERROR);
	assert_string_equal(cfg.aggregator, "10.0.0.1:50051");
}

static void test_defaults_and_once(void **state)
{
	static const char *const env[] = {"NODE_NAME", "n", "TAU_ONCE", "1", NULL};
	tau_agent_config cfg;

	(void)state;
	assert_int_equal(parse(&cfg, ARGV("--node-name", "n", "--once", "-o", "json"), NULL), 0);
	assert_true(cfg.once);
	assert_string_equal(cfg.output, "json");
	assert_string_equal(cfg.host_root, "/");
	assert_int_equal(cfg.probe_interval_s, TAU_AGENT_DEFAULT_PROBE_INTERVAL_S);
	assert_int_equal(cfg.log_level, TAU_LOG_INFO);
	assert_null(cfg.aggregator); /* not needed for --once */
	assert_int_equal(cfg.request_timeout_ms, 0);
	assert_false(cfg.request_timeout_set);
	assert_int_equal(
	        parse(&cfg, ARGV("--node-name", "n", "--once", "--request-timeout", "1.5s"), NULL),
	        0);
	assert_int_equal(cfg.request_timeout_ms, 1500);
	assert_int_equal(
	        parse(&cfg, ARGV("--node-name", "n", "--once", "--request-timeout", "0"), NULL), 0);
	assert_int_equal(cfg.request_timeout_ms, 0);
	assert_true(cfg.request_timeout_set);
	assert_int_equal(parse(&cfg, ARGV("--output=json"), env), 0);
	assert_true(cfg.once);
	/* --help and --version need nothing else. */
	assert_int_equal(parse(&cfg, ARGV("--help"), NULL), 0);
	assert_true(cfg.help);
	assert_int_equal(parse(&cfg, ARGV("--version"), NULL), 0);
	assert_true(cfg.version);
	/* A scheme target is passed to gRPC as is. */
	assert_int_equal(
	        parse(&cfg,
	              ARGV("--node-name", "n", "--aggregator", "unix:/run/agg.sock", "--insecure"),
	              NULL),
	        0);
}

static void expect_usage_error(const char **argv, const char *const *env, const char *text)
{
	tau_agent_config cfg;

	assert_int_equal(parse(&cfg, argv, env), -TAU_EINVAL);
	if (strstr(tau_error_last()->msg, text) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"", tau_error_last()->msg, text);
}

static void test_usage_errors(void **state)
{
	static const char *const bad_bool[] = {"NODE_NAME", "n", "TAU_INSECURE", "maybe", NULL};
	static const char *const both[] = {"TAU_CA_FILE", "/ca", "TAU_INSECURE", "1", NULL};
	static const char *const bad_level[] = {"TAU_LOG_LEVEL", "loud", NULL};
	static const char *const bad_conditions[] = {"TAU_NODE_CONDITIONS", "often", NULL};

	(void)state;
	expect_usage_error((const char *[]){"tau-node-agent", NULL}, NULL, "--node-name");
	expect_usage_error(ARGV("--node-name", "n"), NULL, "--aggregator");
	expect_usage_error(ARGV("--node-name", "n", "--aggregator", "a:1"), NULL, "--ca-file");
	expect_usage_error(ARGV("--node-name", "n", "--aggregator", "a:1", "--insecure",
	                        "--request-timeout", "2s"),
	                   NULL, "--request-timeout only applies to --once");
	expect_usage_error(ARGV("--node-name", "n", "--once", "--request-timeout", "2h"), NULL,
	                   "--request-timeout");
	expect_usage_error(ARGV("--node-name", "n", "--aggregator", "a:1"), both, "exclude");
	expect_usage_error(ARGV("--node-name", "n", "--aggregator", "a", "--insecure"), NULL,
	                   "HOST:PORT");
	expect_usage_error(ARGV("--node-name", "n", "--aggregator", "a:0", "--insecure"), NULL,
	                   "HOST:PORT");
	expect_usage_error(ARGV("--node-name", "n", "--aggregator", "a:99999", "--insecure"), NULL,
	                   "HOST:PORT");
	expect_usage_error(ARGV("--once"), bad_bool, "TAU_INSECURE");
	expect_usage_error(ARGV("--node-name", "n", "--once", "-o", "yaml"), NULL, "json");
	expect_usage_error(ARGV("--node-name", "n", "-o", "json", "--insecure"), NULL, "--once");
	expect_usage_error(ARGV("--frobnicate"), NULL, "unknown option --frobnicate");
	expect_usage_error(ARGV("-x"), NULL, "unknown option -x");
	expect_usage_error(ARGV("--node-name"), NULL, "needs a value");
	expect_usage_error(ARGV("--node-name", "n", "--once", "extra"), NULL, "unexpected");
	expect_usage_error(ARGV("--log-level", "loud"), NULL, "--log-level");
	expect_usage_error(ARGV("--node-name", "n"), bad_level, "TAU_LOG_LEVEL");
	expect_usage_error(ARGV("--node-name", "n"), bad_conditions, "TAU_NODE_CONDITIONS");
	expect_usage_error(ARGV("--node-name", "n", "--once", "--node-conditions"), NULL,
	                   "--node-conditions (TAU_NODE_CONDITIONS) does not apply to --once");
	expect_usage_error(ARGV("--node-name", "n", "--once", "--probe-interval", "0"), NULL,
	                   "--probe-interval");
	expect_usage_error(ARGV("--node-name", "n", "--once", "--http-listen", "9102"), NULL,
	                   "--http-listen");
	expect_usage_error(ARGV("--node-name", "n", "--once", "--host-root", ""), NULL,
	                   "--host-root");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_flags),
	        cmocka_unit_test(test_env_and_precedence),
	        cmocka_unit_test(test_defaults_and_once),
	        cmocka_unit_test(test_usage_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
