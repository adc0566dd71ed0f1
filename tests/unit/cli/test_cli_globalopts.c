/*
 * test_cli_globalopts.c - the options every `tau` command group shares
 * (cli/globalopts.c): the getopt rows and tau_cli_parse, which takes them
 * beside a command's own options, what the options before the command carry
 * over, a bad --request-timeout refused with its message, an unknown option,
 * and what a group hands it: kept values, -o and the aggregator options.
 */
#include "globalopts.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int usages_out, usages_err;

static void usage(FILE *out)
{
	if (out == stdout)
		usages_out++;
	else
		usages_err++;
}

/* tau_cli_optspec.take: counts the group's own option in *(int *)ctx. */
static int take_own(void *ctx, int c, const char *arg)
{
	(void)arg;
	assert_int_equal(c, 256); /* only the group's own option comes here */
	(*(int *)ctx)++;
	return -1;
}

/*
 * Parse argv as a group does: the shared rows (with --system-namespace when `sysns`), one
 * option of its own.  @return -1 when the options are done, else the exit code.
 */
static int parse(tau_cli_globals *gl, const tau_cli_globals *before, bool sysns, int argc,
                 char **argv, int *own)
{
	static const struct option with_ns[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{"own", no_argument, NULL,
	                                                                 256},
	        {NULL, 0, NULL, 0},
	};
	static const struct option without_ns[] = {
	        TAU_CLI_GLOBAL_LONGOPTS{"own", no_argument, NULL, 256},
	        {NULL, 0, NULL, 0},
	};
	const tau_cli_optspec spec = {"tau test", "h", sysns ? with_ns : without_ns, usage,
	                              .take = take_own};
	tau_cli_opts o;
	int exit_code = tau_cli_parse(&o, before, argc, argv, &spec, NULL, own);

	*gl = o.gl;
	return exit_code;
}

static void test_rows_and_take(void **state)
{
	char a0[] = "group", a1[] = "--context", a2[] = "ctx", a3[] = "--own",
	     a4[] = "--kubeconfig=/k", a5[] = "--request-timeout", a6[] = "2s",
	     a7[] = "--system-namespace", a8[] = "sys", a9[] = "-h";
	char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, NULL};
	tau_cli_globals gl;
	int own = 0;

	(void)state;
	usages_out = usages_err = 0;
	assert_int_equal(parse(&gl, NULL, true, 9, argv, &own), -1);
	assert_string_equal(gl.context, "ctx");
	assert_string_equal(gl.kubeconfig, "/k");
	assert_string_equal(gl.system_namespace, "sys");
	assert_true(gl.request_timeout_set);
	assert_int_equal(gl.request_timeout_ms, 2000);
	assert_int_equal(own, 1); /* the group's own option is left to it */
	/* -h: the usage on stdout, exit 0, before anything after it */
	assert_int_equal(parse(&gl, NULL, true, 10, argv, &own), TAU_CLI_OK);
	assert_int_equal(usages_out, 1);
	assert_int_equal(usages_err, 0);
}

static void test_before_the_command_carries_over(void **state)
{
	char a0[] = "group", a1[] = "--context", a2[] = "after";
	char *argv[] = {a0, a1, a2, NULL};
	const tau_cli_globals before = {.kubeconfig = "/before",
	                                .context = "before",
	                                .token = "t",
	                                .request_timeout_set = true,
	                                .request_timeout_ms = 5};
	tau_cli_globals gl;
	int own = 0;

	(void)state;
	assert_int_equal(parse(&gl, &before, false, 3, argv, &own), -1);
	assert_string_equal(gl.context, "after"); /* after the command wins */
	assert_string_equal(gl.kubeconfig, "/before");
	assert_string_equal(gl.token, "t");
	assert_int_equal(gl.request_timeout_ms, 5);
	/* Nothing before the command: all unset. */
	assert_int_equal(parse(&gl, NULL, false, 1, argv, &own), -1);
	assert_null(gl.context);
	assert_false(gl.request_timeout_set);
}

static void test_refusals(void **state)
{
	char a0[] = "group", a1[] = "--request-timeout", a2[] = "soon", a3[] = "--system-namespace",
	     a4[] = "x", a5[] = "--context";
	char *bad_timeout[] = {a0, a1, a2, NULL};
	char *no_sysns[] = {a0, a3, a4, NULL};
	char *no_value[] = {a0, a5, NULL};
	tau_cli_globals gl;
	int own = 0;

	(void)state;
	usages_out = usages_err = 0;
	/* A bad value: its message only (no usage), exit 2. */
	assert_int_equal(parse(&gl, NULL, true, 3, bad_timeout, &own), TAU_CLI_USAGE);
	assert_non_null(strstr(tau_error_last()->msg, "--request-timeout soon"));
	assert_false(gl.request_timeout_set);
	assert_int_equal(usages_err, 0);
	/* A group without the --system-namespace row does not take it: unknown, with the usage. */
	assert_int_equal(parse(&gl, NULL, false, 3, no_sysns, &own), TAU_CLI_USAGE);
	assert_null(gl.system_namespace);
	assert_int_equal(usages_err, 1);
	/* A value missing: the same. */
	assert_int_equal(parse(&gl, NULL, false, 2, no_value, &own), TAU_CLI_USAGE);
	assert_null(gl.context);
	assert_int_equal(usages_err, 2);
	assert_int_equal(usages_out, 0);
}

/* What a group hands the parse: kept values and flags, -o, the aggregator options. */
static void test_keep_output_aggregator(void **state)
{
	enum { O_NAME = 256, O_FLAG };
	static const struct option rows[] = {
	        TAU_CLI_GLOBAL_LONGOPTS{"output", required_argument, NULL, 'o'},
	        {"name", required_argument, NULL, O_NAME},
	        {"flag", no_argument, NULL, O_FLAG},
	        TAU_CLI_AGGREGATOR_LONGOPTS{NULL, 0, NULL, 0},
	};
	const tau_cli_optspec spec = {"tau test", "ho:", rows, usage, .take = NULL};
	const tau_cli_optspec wide = {"tau test", "ho:", rows, usage, .wide_is_table = true};
	char a0[] = "group", a1[] = "--name", a2[] = "n", a3[] = "--flag", a4[] = "-o",
	     a5[] = "json", a6[] = "--aggregator", a7[] = "a:1", a8[] = "--insecure", a9[] = "wide",
	     a10[] = "-owide";
	char *all[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, NULL};
	char *o_wide[] = {a0, a4, a9, NULL};
	char *o_kept[] = {a0, a10, NULL};
	const char *name = NULL, *output = NULL;
	bool flag = false;
	const tau_cli_keep keep[] = {{O_NAME, .arg = &name}, {O_FLAG, .flag = &flag}, {0}};
	const tau_cli_keep keep_o[] = {{'o', .arg = &output}, {0}};
	tau_cli_opts o;

	(void)state;
	usages_out = usages_err = 0;
	assert_int_equal(tau_cli_parse(&o, NULL, 9, all, &spec, keep, NULL), -1);
	assert_string_equal(name, "n");
	assert_true(flag);
	assert_int_equal(o.fmt, TAU_CLI_JSON);
	assert_string_equal(o.agg.addr, "a:1");
	assert_true(o.agg.insecure);
	assert_null(o.agg.ca_file);
	/* -o wide: a usage error unless the group takes it as table. */
	assert_int_equal(tau_cli_parse(&o, NULL, 3, o_wide, &spec, NULL, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_parse(&o, NULL, 3, o_wide, &wide, NULL, NULL), -1);
	assert_int_equal(o.fmt, TAU_CLI_TABLE);
	/* A group that keeps -o itself gets its value as it is. */
	assert_int_equal(tau_cli_parse(&o, NULL, 2, o_kept, &spec, keep_o, NULL), -1);
	assert_string_equal(output, "wide");
	assert_int_equal(usages_err + usages_out, 0); /* a bad -o has its message only */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rows_and_take),
	        cmocka_unit_test(test_before_the_command_carries_over),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_keep_output_aggregator),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
