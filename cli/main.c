/*
 * tau - the taugrid command line.  Subcommands (workspace, inventory,
 * storage) arrive with their issues; the global contract of DESIGN.md §3
 * (exit codes 0 ok, 1 check failed, 2 usage or input error) holds already.
 */
#include "tau/log.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("Usage: tau [global options] COMMAND ...\n"
	      "\n"
	      "Commands:\n"
	      "  workspace list|status NAME|check NAME   TauWorkspace state\n"
	      "  inventory nodes|pool|explain NODE       GPU inventory from the aggregator\n"
	      "  storage check --driver NAME             CSI registration on eligible nodes\n"
	      "\n"
	      "Global options:\n"
	      "  --kubeconfig FILE  --context NAME  --system-namespace NS  -o table|json\n"
	      "  --help             show this help\n"
	      "  --version          print the version\n"
	      "\n"
	      "Exit codes: 0 success, 1 check failed, 2 usage or input error.\n",
	      out);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"version", no_argument, NULL, 'V'},
	        {NULL, 0, NULL, 0},
	};
	int c;

	tau_log_init_from_env();
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("tau %s\n", TAU_VERSION_STRING);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	fprintf(stderr, "tau: unknown command \"%s\" (see tau --help)\n", argv[optind]);
	return 2;
}
