/*
 * test_cli_globalopts.c - the options every `tau` command group shares
 * (cli/globalopts.c): the getopt rows and the take function, before and after
 * a command's own options, what the options before the command carry over,
 * and a bad --request-timeout refused with its message.
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

/*
 * Parse argv as a group does: the shared rows (with --system-namespace when `sysns`), one
 * option of its own.  @return 0, the take function's -1, or -2 for an option nobody took.
 */
static int parse(tau_cli_globals *gl, const tau_cli_globals *before, bool sysns, int argc,
                 char **argv, int *own, int *help)
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
	int c, taken;

	tau_cli_opts_begin(gl, before);
	while ((c = getopt_long(argc, argv, "h", sysns ? with_ns : without_ns, NULL)) != -1) {
		if ((taken = tau_cli_global_option(gl, c, optarg, "tau test")) < 0)
			return -1;
		if (taken > 0)
			continue;
		if (c == 'h')
			(*help)++;
		else if (c == 256)
			(*own)++;
		else
			return -2;
	}
	return 0;
}

static void test_rows_and_take(void **state)
{
	char a0[] = "group", a1[] = "--context", a2[] = "ctx", a3[] = "--own",
	     a4[] = "--kubeconfig=/k", a5[] = "--request-timeout", a6[] = "2s",
	     a7[] = "--system-namespace", a8[] = "sys", a9[] = "-h";
	char *argv[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, NULL};
	tau_cli_globals gl;
	int own = 0, help = 0;

	(void)state;
	assert_int_equal(parse(&gl, NULL, true, 10, argv, &own, &help), 0);
	assert_string_equal(gl.context, "ctx");
	assert_string_equal(gl.kubeconfig, "/k");
	assert_string_equal(gl.system_namespace, "sys");
	assert_true(gl.request_timeout_set);
	assert_int_equal(gl.request_timeout_ms, 2000);
	assert_int_equal(own, 1);  /* the group's own option is left to it */
	assert_int_equal(help, 1); /* and -h too */
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
	int own = 0, help = 0;

	(void)state;
	assert_int_equal(parse(&gl, &before, false, 3, argv, &own, &help), 0);
	assert_string_equal(gl.context, "after"); /* after the command wins */
	assert_string_equal(gl.kubeconfig, "/before");
	assert_string_equal(gl.token, "t");
	assert_int_equal(gl.request_timeout_ms, 5);
	/* Nothing before the command: all unset. */
	assert_int_equal(parse(&gl, NULL, false, 1, argv, &own, &help), 0);
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
	int own = 0, help = 0;

	(void)state;
	assert_int_equal(parse(&gl, NULL, true, 3, bad_timeout, &own, &help), -1);
	assert_non_null(strstr(tau_error_last()->msg, "--request-timeout soon"));
	assert_false(gl.request_timeout_set);
	/* A group without the --system-namespace row does not take it. */
	assert_int_equal(parse(&gl, NULL, false, 3, no_sysns, &own, &help), -2);
	assert_null(gl.system_namespace);
	/* A value missing: getopt's '?', taken by nobody. */
	assert_int_equal(parse(&gl, NULL, false, 2, no_value, &own, &help), -2);
	/* Not a shared option: not taken, nothing changed. */
	assert_int_equal(tau_cli_global_option(&gl, 'o', "json", "tau test"), 0);
	assert_int_equal(tau_cli_global_option(&gl, 'h', NULL, "tau test"), 0);
	assert_null(gl.context);
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
