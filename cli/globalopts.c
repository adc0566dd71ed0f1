/*
 * globalopts.c - the one home of the options every `tau` command group takes.
 *
 * The one idea: kubectl lets --context, --kubeconfig and --request-timeout
 * stand before or after the command, and so does tau; main.c and every group
 * parse with the same getopt rows (globalopts.h) through tau_cli_getopt, which
 * also answers --help and refusals, so a spelling or a message is changed in
 * one place and a group's loop holds only its own options.  What an
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

int tau_cli_getopt(tau_cli_globals *gl, int *exit_code, int argc, char **argv,
                   const tau_cli_optspec *spec)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, spec->optstring, spec->longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			spec->usage(stdout);
			*exit_code = TAU_CLI_OK;
			return TAU_CLI_OPT_EXIT;
		case TAU_CLI_OPT_CONTEXT:
			gl->context = optarg;
			break;
		case TAU_CLI_OPT_KUBECONFIG:
			gl->kubeconfig = optarg;
			break;
		case TAU_CLI_OPT_SYSTEM_NAMESPACE:
			gl->system_namespace = optarg;
			break;
		case TAU_CLI_OPT_REQUEST_TIMEOUT:
			if (tau_cli_request_timeout_parse(gl, optarg) < 0) {
				fprintf(stderr, "%s: %s\n", spec->cmd, tau_error_last()->msg);
				*exit_code = TAU_CLI_USAGE;
				return TAU_CLI_OPT_EXIT;
			}
			break;
		case '?':
		case ':':
			fprintf(stderr, "%s: unknown option or missing value: %s\n", spec->cmd,
			        optind > 0 ? argv[optind - 1] : "?");
			spec->usage(stderr);
			*exit_code = TAU_CLI_USAGE;
			return TAU_CLI_OPT_EXIT;
		default:
			return c;
		}
	}
	return -1;
}

int tau_cli_one_workspace_name(const char **name, int argc, char **argv, const char *cmd)
{
	if (optind + 1 != argc) {
		fprintf(stderr, "%s: %s\n", cmd,
		        optind >= argc ? "NAME is required" : "one NAME only");
		return -1;
	}
	*name = argv[optind];
	return tau_cli_workspace_name_check(cmd, *name) < 0 ? -1 : 0;
}
