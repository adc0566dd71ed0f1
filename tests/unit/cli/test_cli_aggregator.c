/*
 * test_cli_aggregator.c - the aggregator options every `tau` command that asks
 * the aggregator shares (cli/aggregator.c): --aggregator, --ca-file and
 * --insecure taken from getopt_long, refused with one set of messages, and
 * resolved against env TAU_AGGREGATOR; the channel's default address.
 */
#include "aggregator.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Parse argv with the shared table rows beside one option of the command's own. */
static int parse(tau_cli_aggregator_opts *a, int argc, char **argv, int *own)
{
	static const struct option opts[] = {
	        TAU_CLI_AGGREGATOR_LONGOPTS{"own", no_argument, NULL, 256},
	        {NULL, 0, NULL, 0},
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (tau_cli_aggregator_option(a, c, optarg))
			continue;
		if (c != 256)
			return -1;
		(*own)++;
	}
	return 0;
}

static void test_option_table(void **state)
{
	char a0[] = "x", a1[] = "--aggregator", a2[] = "agg:50051", a3[] = "--own",
	     a4[] = "--ca-file", a5[] = "ca.pem", a6[] = "--insecure", a7[] = "--unknown";
	char *all[] = {a0, a1, a2, a3, a4, a5, a6, NULL};
	char *bad[] = {a0, a7, NULL};
	tau_cli_aggregator_opts a = {0};
	int own = 0;

	(void)state;
	assert_false(tau_cli_aggregator_given(&a));
	assert_false(tau_cli_aggregator_given(NULL));
	assert_int_equal(parse(&a, 7, all, &own), 0);
	assert_string_equal(a.addr, "agg:50051");
	assert_string_equal(a.ca_file, "ca.pem");
	assert_true(a.insecure);
	assert_int_equal(own, 1); /* the command's own option is left to it */
	assert_true(tau_cli_aggregator_given(&a));
	a = (tau_cli_aggregator_opts){0};
	assert_int_equal(parse(&a, 2, bad, &own), -1);
	assert_false(tau_cli_aggregator_given(&a));
	/* Not one of the three: not taken. */
	assert_false(tau_cli_aggregator_option(&a, 'o', "json"));
	assert_false(tau_cli_aggregator_given(&a));
	/* Each alone counts as given. */
	assert_true(tau_cli_aggregator_given(&(tau_cli_aggregator_opts){NULL, NULL, true}));
	assert_true(tau_cli_aggregator_given(&(tau_cli_aggregator_opts){NULL, "f", false}));
	assert_true(tau_cli_aggregator_given(&(tau_cli_aggregator_opts){"", NULL, false}));
}

static void test_check_messages(void **state)
{
	const tau_cli_aggregator_opts empty = {"", NULL, false}, both = {"a:1", "ca.pem", true},
	                              tls = {"a:1", "ca.pem", false}, plain = {NULL, NULL, true};

	(void)state;
	assert_int_equal(tau_cli_aggregator_check(NULL), 0);
	assert_int_equal(tau_cli_aggregator_check(&tls), 0);
	assert_int_equal(tau_cli_aggregator_check(&plain), 0);
	assert_int_equal(tau_cli_aggregator_check(&empty), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--aggregator is empty");
	assert_int_equal(tau_cli_aggregator_check(&both), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--ca-file and --insecure exclude each other");
}

static void test_addr_resolution(void **state)
{
	const tau_cli_aggregator_opts flag = {"flag:1", NULL, false}, none = {0};

	(void)state;
	unsetenv("TAU_AGGREGATOR");
	assert_null(tau_cli_aggregator_addr(NULL));
	assert_null(tau_cli_aggregator_addr(&none));
	assert_string_equal(tau_cli_aggregator_addr(&flag), "flag:1");
	setenv("TAU_AGGREGATOR", "", 1); /* set but empty: none named */
	assert_null(tau_cli_aggregator_addr(&none));
	setenv("TAU_AGGREGATOR", "env:2", 1);
	assert_string_equal(tau_cli_aggregator_addr(&none), "env:2");
	assert_string_equal(tau_cli_aggregator_addr(NULL), "env:2");
	assert_string_equal(tau_cli_aggregator_addr(&flag), "flag:1"); /* the flag wins */
	unsetenv("TAU_AGGREGATOR");
}

static void test_channel(void **state)
{
	const tau_cli_aggregator_opts empty = {"", NULL, false}, both = {"a:1", "ca.pem", true},
	                              missing_ca = {"a:1", "/nonexistent/ca.pem", false};
	const tau_cli_globals g = {.token = "t0ken"}; /* no kubeconfig read */
	tau_rpc_channel *ch = NULL;
	const char *target = NULL;

	(void)state;
	unsetenv("TAU_AGGREGATOR");
	/* Refused before anything else, with the check's messages. */
	assert_int_equal(tau_cli_aggregator_channel(&ch, &target, &empty, &g), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--aggregator is empty");
	assert_int_equal(tau_cli_aggregator_channel(&ch, &target, &both, &g), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, "--ca-file and --insecure exclude each other");
	assert_true(tau_cli_aggregator_channel(&ch, &target, &missing_ca, &g) < 0);
	assert_non_null(strstr(tau_error_last()->msg, "--ca-file"));
	assert_null(ch);
	/* None named: the default address (tau inventory's); env next; the flag first. */
	assert_int_equal(tau_cli_aggregator_channel(&ch, &target, NULL, &g), 0);
	assert_string_equal(target, TAU_CLI_DEFAULT_AGGREGATOR);
	tau_rpc_channel_free(ch);
	setenv("TAU_AGGREGATOR", "127.0.0.1:2", 1);
	assert_int_equal(tau_cli_aggregator_channel(&ch, &target, NULL, &g), 0);
	assert_string_equal(target, "127.0.0.1:2");
	tau_rpc_channel_free(ch);
	{
		const tau_cli_aggregator_opts flag = {"127.0.0.1:3", NULL, true};

		assert_int_equal(tau_cli_aggregator_channel(&ch, &target, &flag, &g), 0);
		assert_string_equal(target, "127.0.0.1:3");
		tau_rpc_channel_free(ch);
	}
	unsetenv("TAU_AGGREGATOR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_option_table),
	        cmocka_unit_test(test_check_messages),
	        cmocka_unit_test(test_addr_resolution),
	        cmocka_unit_test(test_channel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
