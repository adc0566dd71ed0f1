/*
 * globalopts.c - the one home of the options every `tau` command group takes.
 *
 * The one idea: kubectl lets --context, --kubeconfig and --request-timeout
 * stand before or after the command, and so does tau; main.c and every group
 * parse with the same getopt rows (globalopts.h) through tau_cli_parse, which
 * also answers --help, refusals, -o and the aggregator options, and keeps a
 * group's plain values where its `keep` rows say, so a spelling or a message
 * is changed in one place and a group says only what its own options mean.
 * What an option means for a group (a --system-namespace that is the install
 * namespace for `tau cluster`) stays in the group's rows.
 */
#include "globalopts.h"

#include "output.h"
#include "tau/error.h"

#include <stdio.h>

/* Take one option of a group's parse.  @return -1 to go on, else the exit code. */
static int take_option(tau_cli_opts *o, int c, char **argv, const tau_cli_optspec *spec,
                       const tau_cli_keep *keep, void *ctx)
{
	switch (c) {
	case 'h':
		spec->usage(stdout);
		return TAU_CLI_OK;
	case TAU_CLI_OPT_CONTEXT:
		o->gl.context = optarg;
		return -1;
	case TAU_CLI_OPT_KUBECONFIG:
		o->gl.kubeconfig = optarg;
		return -1;
	case TAU_CLI_OPT_SYSTEM_NAMESPACE:
		o->gl.system_namespace = optarg;
		return -1;
	case TAU_CLI_OPT_REQUEST_TIMEOUT:
		if (tau_cli_request_timeout_parse(&o->gl, optarg) < 0) {
			fprintf(stderr, "%s: %s\n", spec->cmd, tau_error_last()->msg);
			return TAU_CLI_USAGE;
		}
		return -1;
	case '?':
	case ':':
		fprintf(stderr, "%s: unknown option or missing value: %s\n", spec->cmd,
		        optind > 0 ? argv[optind - 1] : "?");
		spec->usage(stderr);
		return TAU_CLI_USAGE;
	}
	for (; keep != NULL && keep->code != 0; keep++) {
		if (keep->code != c)
			continue;
		if (keep->arg != NULL)
			*keep->arg = optarg;
		else
			*keep->flag = true;
		return -1;
	}
	if (c == 'o')
		return tau_cli_output_parse(&o->fmt, optarg, spec->wide_is_table, spec->cmd) < 0
		               ? TAU_CLI_USAGE
		               : -1;
	if (tau_cli_aggregator_option(&o->agg, c, optarg) || spec->take == NULL)
		return -1;
	return spec->take(ctx, c, optarg);
}

int tau_cli_parse(tau_cli_opts *o, const tau_cli_globals *g, int argc, char **argv,
                  const tau_cli_optspec *spec, const tau_cli_keep *keep, void *ctx)
{
	int c, exit_code = -1;

	*o = (tau_cli_opts){.gl = g != NULL ? *g : (tau_cli_globals){0}, .fmt = TAU_CLI_TABLE};
	optind = 0;
	opterr = 0;
	while (exit_code < 0 &&
	       (c = getopt_long(argc, argv, spec->optstring, spec->longopts, NULL)) != -1)
		exit_code = take_option(o, c, argv, spec, keep, ctx);
	return exit_code;
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

int tau_cli_check_connect(tau_kube_client **client, const tau_cli_opts *o, const char *group,
                          const char *verb)
{
	if (tau_cli_aggregator_check(&o->agg) < 0) {
		fprintf(stderr, "%s %s: %s\n", group, verb, tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	if (tau_cli_connect(client, &o->gl) != 0) {
		fprintf(stderr, "%s: %s\n", group, tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	return 0;
}
