/*
 * ws_controller_main.c - run the TauWorkspace controller alone, apart from
 * tau-aggregator (which runs it on its leader), for the controller's e2e tests.
 *
 * One kube loop thread runs the informers; the controller's worker does the
 * writes; main waits for SIGINT/SIGTERM with sigwait, so no polling.
 * Prints "ready" on stdout once every informer has synced; exits 1 with the
 * watches that never synced when that takes more than 60 s.
 */
#include "workspace/controller.h"

#include "tau/error.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/log.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
	fputs("Usage: ws_controller [--kubeconfig F] [--context C] [--system-namespace NS]\n"
	      "         [--namespace-mode Managed|Operator] [--allowlist-selector SEL |\n"
	      "          --allowlist-file F] [--namespace-map-file F] [--researcher-role R]\n"
	      "         [--resync-seconds N] [--drain-poll-ms N]\n",
	      out);
}

int main(int argc, char **argv)
{
	enum {
		O_KUBECONFIG = 256,
		O_CONTEXT,
		O_NS,
		O_MODE,
		O_SEL,
		O_FILE,
		O_MAP,
		O_ROLE,
		O_RESYNC,
		O_DRAIN
	};
	static const struct option lopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	        {"context", required_argument, NULL, O_CONTEXT},
	        {"system-namespace", required_argument, NULL, O_NS},
	        {"namespace-mode", required_argument, NULL, O_MODE},
	        {"allowlist-selector", required_argument, NULL, O_SEL},
	        {"allowlist-file", required_argument, NULL, O_FILE},
	        {"namespace-map-file", required_argument, NULL, O_MAP},
	        {"researcher-role", required_argument, NULL, O_ROLE},
	        {"resync-seconds", required_argument, NULL, O_RESYNC},
	        {"drain-poll-ms", required_argument, NULL, O_DRAIN},
	        {NULL, 0, NULL, 0},
	};
	tau_kube_config_options copts = {0};
	tau_ws_controller_opts opts = {0};
	tau_kube_config *cfg = NULL;
	tau_kube_client *client = NULL;
	tau_kube_loop *loop = NULL;
	tau_ws_controller *ctl = NULL;
	sigset_t set;
	int c, sig = 0, rc = 2;

	tau_log_init_from_env();
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case O_KUBECONFIG:
			copts.kubeconfig = optarg;
			break;
		case O_CONTEXT:
			copts.context = optarg;
			break;
		case O_NS:
			opts.system_namespace = optarg;
			break;
		case O_MODE:
			opts.ns_mode_set = true;
			if (strcmp(optarg, "Managed") == 0 || strcmp(optarg, "managed") == 0)
				opts.ns_mode = TAU_WS_NS_MANAGED;
			else if (strcmp(optarg, "Operator") == 0 || strcmp(optarg, "operator") == 0)
				opts.ns_mode = TAU_WS_NS_OPERATOR;
			else {
				fprintf(stderr, "--namespace-mode: Managed or Operator\n");
				return 2;
			}
			break;
		case O_SEL:
			opts.allowlist_selector = optarg;
			break;
		case O_FILE:
			opts.allowlist_file = optarg;
			break;
		case O_MAP:
			opts.namespace_map_file = optarg;
			break;
		case O_ROLE:
			opts.researcher_cluster_role = optarg;
			break;
		case O_RESYNC:
			opts.resync_ms = strtoull(optarg, NULL, 10) * 1000u;
			break;
		case O_DRAIN:
			opts.drain_poll_ms = strtoull(optarg, NULL, 10);
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	/* Signals are taken by sigwait below; block them before any thread starts. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (tau_kube_config_load(&cfg, &copts) != 0 || tau_kube_client_new(&client, cfg) != 0 ||
	    tau_kube_loop_new(&loop, client) != 0) {
		fprintf(stderr, "ws_controller: %s\n", tau_error_last()->msg);
		goto out;
	}
	opts.client = client;
	opts.loop = loop;
	if (tau_ws_controller_new(&ctl, &opts) != 0) {
		fprintf(stderr, "ws_controller: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = 1;
	if (tau_ws_controller_start(ctl) != 0 || tau_kube_loop_start_thread(loop) != 0) {
		fprintf(stderr, "ws_controller: %s\n", tau_error_last()->msg);
		goto out;
	}
	tau_log_info("workspace controller started", NULL);
	/* "ready" only once every informer has listed: a driver that sees no "ready"
	 * (the process exits 1 instead) knows the caches never synced, and why. */
	if (tau_ws_controller_wait_synced(ctl, 60000) != 0) {
		fprintf(stderr, "ws_controller: %s\n", tau_error_last()->msg);
		tau_ws_controller_stop(ctl);
		tau_kube_loop_join(loop);
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	tau_log_info("workspace controller stopping", NULL);
	tau_ws_controller_stop(ctl);
	tau_kube_loop_join(loop);
	rc = 0;
out:
	tau_ws_controller_free(ctl);
	tau_kube_loop_free(loop);
	tau_kube_client_free(client);
	tau_kube_config_free(cfg);
	return rc;
}
