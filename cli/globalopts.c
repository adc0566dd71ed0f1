/*
 * globalopts.c - the one home of the options every `tau` command group takes.
 *
 * The one idea: kubectl lets --context, --kubeconfig and --request-timeout
 * stand before or after the command, and so does tau; main.c and every group
 * parse them with the same getopt rows (globalopts.h) and this one take
 * function, so a spelling or a message is changed in one place.  What an
 * option means for a group (a --system-namespace that is the install
 * namespace for `tau cluster`) stays in the group, which sees the code first.
 */
#include "globalopts.h"

#include "tau/error.h"

#include <stdio.h>

void tau_cli_opts_begin(tau_cli_globals *gl, const tau_cli_globals *g)
{
	*gl = g != NULL ? *g : (tau_cli_globals){0};
	optind = 0;
	opterr = 0;
}

int tau_cli_global_option(tau_cli_globals *gl, int c, const char *arg, const char *cmd)
{
	switch (c) {
	case TAU_CLI_OPT_CONTEXT:
		gl->context = arg;
		return 1;
	case TAU_CLI_OPT_KUBECONFIG:
		gl->kubeconfig = arg;
		return 1;
	case TAU_CLI_OPT_SYSTEM_NAMESPACE:
		gl->system_namespace = arg;
		return 1;
	case TAU_CLI_OPT_REQUEST_TIMEOUT:
		if (tau_cli_request_timeout_parse(gl, arg) < 0) {
			fprintf(stderr, "%s: %s\n", cmd, tau_error_last()->msg);
			return -1;
		}
		return 1;
	default:
		return 0;
	}
}

void tau_cli_unknown_option(const char *cmd, char *const *argv)
{
	fprintf(stderr, "%s: unknown option or missing value: %s\n", cmd,
	        optind > 0 ? argv[optind - 1] : "?");
}
