/*
 * tau-kube-demo - list the cluster's nodes with libtau's Kubernetes client.
 *
 *   tau-kube-demo [--kubeconfig FILE] [--context NAME] [--selector LABELS]
 *                 [--watch SECONDS]
 *
 * Configuration is found as kubectl finds it (--kubeconfig, KUBECONFIG,
 * in-cluster, ~/.kube/config).  Prints NAME, READY and the kubelet version
 * of every node (paged list, 500 per page).  With --watch, keeps an
 * informer running for that many seconds and prints each change.
 * Exit status: 0 success, 1 the API call failed, 2 usage or configuration error.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/log.h"

static const char *ready_of(const cJSON *node)
{
	const cJSON *conds = NULL, *c;

	if (tau_json_get_array(&conds, node, "status.conditions") < 0)
		return "Unknown";
	cJSON_ArrayForEach(c, conds)
	{
		const char *type = NULL, *status = NULL;

		if (tau_json_get_string(&type, c, "type") == 0 && strcmp(type, "Ready") == 0 &&
		    tau_json_get_string(&status, c, "status") == 0)
			return strcmp(status, "True") == 0 ? "Ready" : "NotReady";
	}
	return "Unknown";
}

static void print_node(const char *prefix, const cJSON *node)
{
	const char *name = "?", *ver = "";

	tau_json_get_string(&name, node, "metadata.name");
	if (tau_json_get_string(&ver, node, "status.nodeInfo.kubeletVersion") < 0)
		ver = "";
	printf("%s%-40s %-9s %s\n", prefix, name, ready_of(node), ver);
}

static void on_add(void *arg, const cJSON *obj)
{
	(void)arg;
	print_node("ADDED    ", obj);
	fflush(stdout);
}

static void on_update(void *arg, const cJSON *old_obj, const cJSON *obj)
{
	(void)arg;
	(void)old_obj;
	print_node("MODIFIED ", obj);
	fflush(stdout);
}

static void on_delete(void *arg, const cJSON *obj)
{
	(void)arg;
	print_node("DELETED  ", obj);
	fflush(stdout);
}

static int usage(void)
{
	fprintf(stderr, "usage: tau-kube-demo [--kubeconfig FILE] [--context NAME] "
	                "[--selector LABELS] [--watch SECONDS]\n");
	return 2;
}

int main(int argc, char **argv)
{
	tau_kube_config_options opts = {0};
	tau_kube_list_options lo = {.limit = 500};
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	cJSON *list = NULL;
	const cJSON *items = NULL, *it;
	long watch_s = 0;
	int rc = 2;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage();
			return 0;
		}
		if (i + 1 >= argc)
			return usage();
		if (strcmp(argv[i], "--kubeconfig") == 0)
			opts.kubeconfig = argv[++i];
		else if (strcmp(argv[i], "--context") == 0)
			opts.context = argv[++i];
		else if (strcmp(argv[i], "--selector") == 0 || strcmp(argv[i], "-l") == 0)
			lo.label_selector = argv[++i];
		else if (strcmp(argv[i], "--watch") == 0)
			watch_s = strtol(argv[++i], NULL, 10);
		else
			return usage();
	}
	tau_log_init_from_env();
	if (tau_kube_config_load(&cfg, &opts) < 0 || tau_kube_client_new(&c, cfg) < 0) {
		fprintf(stderr, "tau-kube-demo: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = 1;
	if (tau_kube_list_all(&list, c, &tau_kube_res_nodes, NULL, &lo) < 0) {
		fprintf(stderr, "tau-kube-demo: listing nodes: %s\n", tau_error_last()->msg);
		goto out;
	}
	printf("%-40s %-9s %s\n", "NAME", "READY", "VERSION");
	if (tau_json_get_array(&items, list, "items") == 0)
		cJSON_ArrayForEach(it, items) print_node("", it);
	fflush(stdout);
	if (watch_s > 0) {
		tau_kube_informer_options io = {.label_selector = lo.label_selector};
		tau_kube_handlers h = {on_add, on_update, on_delete, NULL};
		tau_kube_loop *loop = NULL;
		tau_kube_informer *inf = NULL;

		if (tau_kube_loop_new(&loop, c) < 0 ||
		    tau_kube_informer_new(&inf, loop, &tau_kube_res_nodes, &io, &h) < 0) {
			fprintf(stderr, "tau-kube-demo: %s\n", tau_error_last()->msg);
			tau_kube_loop_free(loop);
			goto out;
		}
		tau_kube_informer_start(inf);
		tau_kube_loop_run_for(loop, (uint64_t)watch_s * 1000u);
		tau_kube_informer_free(inf);
		tau_kube_loop_free(loop);
	}
	rc = 0;
out:
	cJSON_Delete(list);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
	return rc;
}
