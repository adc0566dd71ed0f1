/*
 * tau - the taugrid command line.
 *
 * main() parses the global options and hands the rest of argv to one entry
 * of a command table; each command group parses its own options.  Adding a
 * group (workspace, storage) is one table row and one file.  Exit codes per
 * docs/cli.md: 0 success, 1 check failed, 2 usage or input error.
 */
#include "cli.h"
#include "globalopts.h"

#include "tau/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tau_cli_command commands[] = {
        {"cluster", "install|status|uninstall: the umbrella chart and its readiness gate",
         tau_cli_cluster},
        {"workspace", "list|status|check|create|delete: TauWorkspaces", tau_cli_workspace},
        {"team", "list|status: TauTeam budget, pool and queues", tau_cli_team},
        {"inventory", "nodes|pool|explain NODE|fit: GPU inventory and fit from the aggregator",
         tau_cli_inventory},
        {"storage", "check --driver NAME: CSI registration on eligible nodes", tau_cli_storage},
        {"completion", "bash: print the bash completion script", tau_cli_completion},
};

static void usage(FILE *out)
{
	fputs("Usage: tau [global options] COMMAND ...\n\nCommands:\n", out);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].usage);
	fputs("\n"
	      "Global options:\n"
	      "  --kubeconfig FILE  --context NAME\n"
	      "  --system-namespace NS\n"
	      "                     where TauWorkspaces and TauTeams live (default: the\n"
	      "                     installed one, TauCluster status.systemNamespace, else\n"
	      "                     tau-system)\n"
	      "  --token TOKEN      bearer token for the aggregator (default: the kubeconfig\n"
	      "                     context's token)\n"
	      "  --request-timeout D\n"
	      "                     give up on each API or aggregator request after D (1s,\n"
	      "                     2m, 3h); 0 (the default for the API) means no limit\n"
	      "  --help             show this help\n"
	      "  --version          print the version\n"
	      "\n"
	      "Run `tau COMMAND --help` for a command's options.\n"
	      "Exit codes: 0 success, 1 check failed, 2 usage or input error.\n",
	      out);
}

/* tau_cli_optspec.take: --version, the one option that ends the parse. */
static int version(void *ctx, int c, const char *arg)
{
	(void)ctx;
	(void)c;
	(void)arg;
	printf("tau %s\n", TAU_VERSION_STRING);
	return TAU_CLI_OK;
}

int main(int argc, char **argv)
{
	enum { O_VERSION = 256, O_TOKEN };
	static const struct option opts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{"version", no_argument,
	                                                                 NULL, O_VERSION},
	        {"token", required_argument, NULL, O_TOKEN},
	        {NULL, 0, NULL, 0},
	};
	/* "+": stop at the command; its options belong to it. */
	static const tau_cli_optspec optspec = {"tau", "+", opts, usage, .take = version};
	tau_cli_opts o;
	const tau_cli_keep keep[] = {{O_TOKEN, .arg = &o.gl.token}, {0}};
	int exit_code;

	tau_log_init_from_env();
	if ((exit_code = tau_cli_parse(&o, NULL, argc, argv, &optspec, keep, NULL)) >= 0)
		return exit_code;
	if (optind >= argc) {
		usage(stderr);
		return TAU_CLI_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[optind], commands[i].name) == 0) {
			int sub_argc = argc - optind;
			char **sub_argv = argv + optind;

			optind = 0; /* glibc: re-initialise getopt for the command's own argv */
			return commands[i].run(sub_argc, sub_argv, &o.gl);
		}
	}
	fprintf(stderr, "tau: unknown command \"%s\" (see tau --help)\n", argv[optind]);
	return TAU_CLI_USAGE;
}
