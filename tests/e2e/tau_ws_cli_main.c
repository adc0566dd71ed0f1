/*
 * tau_ws_cli_main.c - a test-only `tau` for the workspace and storage
 * commands until cli/main.c dispatches them: global options, then
 * `workspace ...` or `storage ...`.
 */
#include "workspace.h"

#include "tau/log.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	enum { O_KUBECONFIG = 256, O_CONTEXT, O_NS };
	static const struct option opts[] = {
	        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	        {"context", required_argument, NULL, O_CONTEXT},
	        {"system-namespace", required_argument, NULL, O_NS},
	        {NULL, 0, NULL, 0},
	};
	tau_cli_globals g = {0};
	int c;

	tau_log_init_from_env();
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case O_KUBECONFIG:
			g.kubeconfig = optarg;
			break;
		case O_CONTEXT:
			g.context = optarg;
			break;
		case O_NS:
			g.system_namespace = optarg;
			break;
		default:
			return TAU_CLI_USAGE;
		}
	}
	if (optind >= argc) {
		fputs("usage: tau_ws_cli [globals] workspace|storage ...\n", stderr);
		return TAU_CLI_USAGE;
	}
	if (strcmp(argv[optind], "workspace") == 0)
		return tau_cli_workspace(argc - optind, argv + optind, &g);
	if (strcmp(argv[optind], "storage") == 0)
		return tau_cli_storage(argc - optind, argv + optind, &g);
	fprintf(stderr, "tau_ws_cli: unknown command %s\n", argv[optind]);
	return TAU_CLI_USAGE;
}
