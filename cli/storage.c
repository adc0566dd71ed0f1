/*
 * storage.c - `tau storage check --driver NAME [--selector SEL]`: is a CSI
 * driver registered on every eligible node?
 *
 * The one idea: registration is what the kubelet wrote into each node's
 * CSINode object (the same evidence as `kubectl get csinode NODE`), read
 * with libtau's client.  Eligible nodes are the Ready, schedulable nodes
 * matching --selector (default: every node labelled tau.azure.com/gpu-class).
 * A node without a CSINode object, or whose CSINode lacks the driver, fails
 * the check (exit 1); no eligible node at all fails it too.
 */
#include "workspace.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/nodefacts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_csidrivers = {"storage.k8s.io", "v1", "csidrivers", false};

#define DEFAULT_SELECTOR "tau.azure.com/gpu-class"

static const char *jstr(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (obj == NULL || tau_json_get_string(&s, obj, path) != 0)
		return NULL;
	return s;
}

/* Ready, schedulable, not being deleted: read by the one Node parser of libtau. */
static bool node_eligible(const cJSON *node)
{
	tau_node_facts f = {0};
	bool ok;

	if (tau_node_facts_from_json(&f, node) < 0)
		return false;
	ok = f.ready && f.schedulable && !f.deleting;
	tau_node_facts_clear(&f);
	return ok;
}

static bool csinode_has(const cJSON *csinode, const char *driver)
{
	const cJSON *d;

	cJSON_ArrayForEach(d, tau_json_find(csinode, "spec.drivers"))
	{
		const char *n = jstr(d, "name");

		if (n != NULL && strcmp(n, driver) == 0)
			return true;
	}
	return false;
}

static void storage_usage(FILE *out)
{
	fputs("Usage: tau storage check --driver NAME [--selector SEL] [-o table|json]\n"
	      "  Checks that the CSI driver is registered (CSINode) on every Ready, schedulable\n"
	      "  node matching SEL (default: nodes labelled " DEFAULT_SELECTOR ").\n",
	      out);
}

int tau_cli_storage(int argc, char **argv, const tau_cli_globals *g)
{
	enum { O_CONTEXT = 256, O_KUBECONFIG, O_DRIVER, O_SEL };
	static const struct option lopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"output", required_argument, NULL, 'o'},
	        {"context", required_argument, NULL, O_CONTEXT},
	        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	        {"driver", required_argument, NULL, O_DRIVER},
	        {"selector", required_argument, NULL, O_SEL},
	        {NULL, 0, NULL, 0},
	};
	tau_cli_globals gl = {0};
	tau_kube_config_options co = {0};
	tau_kube_config *cfg = NULL;
	tau_kube_client *client = NULL;
	tau_kube_list_options lo = {0};
	const char *driver = NULL, *sel = DEFAULT_SELECTOR;
	cJSON *nodes = NULL, *doc = NULL, *arr, *drv = NULL;
	const cJSON *n;
	const char **cells = NULL;
	size_t rows = 1, eligible = 0, missing = 0;
	bool json = false;
	int c, rc = TAU_CLI_USAGE;

	if (g != NULL)
		gl = *g;
	optind = 0; /* 0: glibc re-initialises (permuting again after main's "+" parse) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			storage_usage(stdout);
			return TAU_CLI_OK;
		case 'o':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0) {
				fprintf(stderr, "tau storage: -o must be table or json\n");
				return TAU_CLI_USAGE;
			}
			json = strcmp(optarg, "json") == 0;
			break;
		case O_CONTEXT:
			gl.context = optarg;
			break;
		case O_KUBECONFIG:
			gl.kubeconfig = optarg;
			break;
		case O_DRIVER:
			driver = optarg;
			break;
		case O_SEL:
			sel = optarg;
			break;
		default:
			storage_usage(stderr);
			return TAU_CLI_USAGE;
		}
	}
	if (optind + 1 != argc || strcmp(argv[optind], "check") != 0 || driver == NULL ||
	    driver[0] == '\0') {
		storage_usage(stderr);
		return TAU_CLI_USAGE;
	}
	co.kubeconfig = gl.kubeconfig;
	co.context = gl.context;
	if (tau_kube_config_load(&cfg, &co) != 0 || tau_kube_client_new(&client, cfg) != 0) {
		fprintf(stderr, "tau storage: %s\n", tau_error_last()->msg);
		goto out;
	}
	rc = TAU_CLI_FAILED;
	lo.label_selector = sel;
	if (tau_kube_list_all(&nodes, client, &tau_kube_res_nodes, NULL, &lo) != 0) {
		const tau_kube_api_error *e = tau_kube_api_error_last();

		fprintf(stderr, "tau storage check: listing nodes: %s\n",
		        e->http_code != 0 ? e->message : tau_error_last()->msg);
		if (e->http_code == 400)
			rc = TAU_CLI_USAGE;
		goto out;
	}
	doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "driver", driver);
	cJSON_AddStringToObject(doc, "selector", sel);
	cJSON_AddBoolToObject(doc, "csiDriverObject",
	                      tau_kube_get(&drv, client, &res_csidrivers, NULL, driver) == 0);
	arr = cJSON_AddArrayToObject(doc, "nodes");
	cells = calloc(((size_t)cJSON_GetArraySize(cJSON_GetObjectItem(nodes, "items")) + 1) * 2,
	               sizeof(*cells));
	if (cells == NULL)
		goto out;
	cells[0] = "NODE";
	cells[1] = "REGISTERED";
	cJSON_ArrayForEach(n, cJSON_GetObjectItem(nodes, "items"))
	{
		const char *name = jstr(n, "metadata.name");
		cJSON *csinode = NULL, *o;
		bool has;

		if (name == NULL || !node_eligible(n))
			continue;
		eligible++;
		has = tau_kube_get(&csinode, client, &tau_kube_res_csinodes, NULL, name) == 0 &&
		      csinode_has(csinode, driver);
		cJSON_Delete(csinode);
		if (!has)
			missing++;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddBoolToObject(o, "registered", has);
		cJSON_AddItemToArray(arr, o);
		cells[rows * 2] = name;
		cells[rows * 2 + 1] = has ? "yes" : "no";
		rows++;
	}
	cJSON_AddNumberToObject(doc, "eligible", (double)eligible);
	cJSON_AddNumberToObject(doc, "missing", (double)missing);
	cJSON_AddBoolToObject(doc, "ok", eligible > 0 && missing == 0);
	if (json) {
		char *s = cJSON_Print(doc);

		if (s != NULL)
			printf("%s\n", s);
		free(s);
	} else {
		if (rows > 1)
			tau_cli_print_table(stdout, cells, rows, 2);
		if (eligible == 0)
			printf("no eligible node matches %s\n", sel);
		else if (missing == 0)
			printf("%s is registered on all %zu eligible nodes\n", driver, eligible);
		else
			printf("%s is missing on %zu of %zu eligible nodes\n", driver, missing,
			       eligible);
	}
	rc = eligible > 0 && missing == 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
out:
	free(cells);
	cJSON_Delete(drv);
	cJSON_Delete(doc);
	cJSON_Delete(nodes);
	tau_kube_client_free(client);
	tau_kube_config_free(cfg);
	return rc;
}
