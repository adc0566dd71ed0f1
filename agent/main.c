/*
 * tau-node-agent - probes its own GPU node and streams inventory to the
 * aggregator.  The probing and streaming arrive with the node agent issue;
 * this entry point already fixes the command-line contract of DESIGN.md §3.
 */
#include "tau/log.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("Usage: tau-node-agent --node-name NAME --aggregator HOST:PORT [options]\n"
	      "\n"
	      "Probe this GPU node and stream its inventory to the tau-aggregator.\n"
	      "\n"
	      "Options:\n"
	      "  --node-name NAME       the node this agent runs on (env NODE_NAME)\n"
	      "  --aggregator HOST:PORT aggregator gRPC address (env TAU_AGGREGATOR)\n"
	      "  --kubeconfig FILE      kubeconfig (default: in-cluster config)\n"
	      "  --host-root DIR        prefix for host paths probed (default /)\n"
	      "  --token-file FILE      projected ServiceAccount token presented to the "
	      "aggregator\n"
	      "  --log-level LEVEL      debug|info|warn|error (env TAU_LOG_LEVEL)\n"
	      "  --help                 show this help\n"
	      "  --version              print the version\n",
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
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("tau-node-agent %s\n", TAU_VERSION_STRING);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	fputs("tau-node-agent: probing and streaming are not implemented in this build\n", stderr);
	return 2;
}
