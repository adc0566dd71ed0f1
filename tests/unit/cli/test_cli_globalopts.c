/*
 * test_cli_globalopts.c - the options every `tau` command group shares
 * (cli/globalopts.c): the getopt rows and tau_cli_getopt, which takes them
 * beside a command's own options, what the options before the command carry
 * over, a bad --request-timeout refused with its message, an unknown option.
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
	const tau_cli_optspec spec = {"tau test", "h", sysns ? with_ns : without_ns, usage};
	int c, exit_code = -5;

	tau_cli_opts_begin(gl, before);
	while ((c = tau_cli_getopt(gl, &exit_code, argc, argv, &spec)) != -1) {
		if (c == TAU_CLI_OPT_EXIT)
			return exit_code;
		assert_int_equal(c, 256); /* only the group's own option comes back */
		(*own)++;
	}
	return -1;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rows_and_take),
	        cmocka_unit_test(test_before_the_command_carries_over),
	        cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
