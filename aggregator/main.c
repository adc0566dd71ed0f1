/*
 * tau-aggregator - authenticates agents, keeps the inventory and pool, and
 * reconciles workspaces.  Its services arrive with the aggregator issues;
 * this entry point already fixes the command-line contract of DESIGN.md §3.
 */
#include "tau/log.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("Usage: tau-aggregator --grpc-listen ADDR --http-listen ADDR [options]\n"
	      "\n"
	      "Keep the GPU inventory and capacity pool of the cluster and reconcile workspaces.\n"
	      "\n"
	      "Options:\n"
	      "  --kubeconfig FILE         kubeconfig (default: in-cluster config)\n"
	      "  --grpc-listen ADDR        gRPC listen address for agents and queries\n"
	      "  --http-listen ADDR        HTTP listen address for /healthz, /readyz, /metrics\n"
	      "  --system-namespace NS     namespace of TauWorkspaces (default tau-system)\n"
	      "  --leader-elect            elect one active replica with a Lease\n"
	      "  --tls-cert F --tls-key F  serve gRPC over TLS\n"
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
			printf("tau-aggregator %s\n", TAU_VERSION_STRING);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	fputs("tau-aggregator: serving is not implemented in this build\n", stderr);
	return 2;
}
