/*
 * workspace.c - `tau workspace list|status NAME|check NAME`.
 *
 * The one idea: the command reads TauWorkspaces straight from the
 * Kubernetes API with libtau's client (the controller's status is the
 * answer; the CLI never recomputes it), and everything it prints is made by
 * pure printers that take the JSON, so formats are unit-tested from canned
 * objects.  `check` exits 1 unless the phase is Ready for the current
 * generation; usage and input errors exit 2 (DESIGN.md §3).
 */
#include "workspace.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
static const tau_kube_resource res_pvcs = {"", "v1", "persistentvolumeclaims", true};
static const tau_kube_resource res_storageclasses = {"storage.k8s.io", "v1", "storageclasses",
                                                     false};

#define NONE "<none>"

static const char *jstr(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (obj == NULL || tau_json_get_string(&s, obj, path) != 0)
		return NULL;
	return s;
}

void tau_cli_print_table(FILE *out, const char *const *cells, size_t n_rows, size_t n_cols)
{
	size_t width[16] = {0};

	if (n_cols > 16)
		n_cols = 16;
	for (size_t r = 0; r < n_rows; r++)
		for (size_t c = 0; c < n_cols; c++) {
			const char *s =
			        cells[r * n_cols + c] != NULL ? cells[r * n_cols + c] : NONE;
			size_t l = strlen(s);

			if (l > width[c])
				width[c] = l;
		}
	for (size_t r = 0; r < n_rows; r++) {
		for (size_t c = 0; c < n_cols; c++) {
			const char *s =
			        cells[r * n_cols + c] != NULL ? cells[r * n_cols + c] : NONE;

			if (c + 1 == n_cols)
				fprintf(out, "%s\n", s);
			else
				fprintf(out, "%-*s   ", (int)width[c], s);
		}
	}
}

static void add_str(cJSON *o, const char *k, const char *v)
{
	if (v != NULL)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static int print_json(FILE *out, cJSON *doc)
{
	char *s = doc != NULL ? cJSON_Print(doc) : NULL;

	cJSON_Delete(doc);
	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	fprintf(out, "%s\n", s);
	free(s);
	return 0;
}

int tau_cli_ws_print_list(FILE *out, const cJSON *list, tau_cli_format fmt)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items"), *it;
	size_t n = 0, r = 1;
	const char **cells;

	if (!cJSON_IsArray(items))
		return tau_error_set(TAU_EINVAL, "workspace list: no items");
	if (fmt == TAU_CLI_JSON) {
		cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "items");

		cJSON_ArrayForEach(it, items)
		{
			cJSON *w = cJSON_CreateObject();

			add_str(w, "name", jstr(it, "metadata.name"));
			add_str(w, "phase", jstr(it, "status.phase"));
			add_str(w, "namespace", jstr(it, "status.target.resolvedNamespace"));
			add_str(w, "queue", jstr(it, "status.queue.localQueue"));
			add_str(w, "clusterQueue", jstr(it, "status.queue.clusterQueue"));
			cJSON_AddItemToArray(arr, w);
		}
		return print_json(out, doc);
	}
	n = (size_t)cJSON_GetArraySize(items);
	if (n == 0) {
		fprintf(out, "No workspaces found.\n");
		return 0;
	}
	cells = calloc((n + 1) * 4, sizeof(*cells));
	if (cells == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cells[0] = "NAME";
	cells[1] = "PHASE";
	cells[2] = "NAMESPACE";
	cells[3] = "QUEUE";
	cJSON_ArrayForEach(it, items)
	{
		cells[r * 4 + 0] = jstr(it, "metadata.name");
		cells[r * 4 + 1] = jstr(it, "status.phase");
		cells[r * 4 + 2] = jstr(it, "status.target.resolvedNamespace");
		cells[r * 4 + 3] = jstr(it, "status.queue.localQueue");
		r++;
	}
	tau_cli_print_table(out, cells, r, 4);
	free(cells);
	return 0;
}

bool tau_cli_ws_ready(const cJSON *ws)
{
	int64_t gen = 0, obs = -1;
	const char *phase = jstr(ws, "status.phase");

	tau_json_get_int(&gen, ws, "metadata.generation");
	if (tau_json_get_int(&obs, ws, "status.observedGeneration") != 0)
		return false;
	return phase != NULL && strcmp(phase, "Ready") == 0 && gen == obs;
}

static cJSON *status_doc(const cJSON *ws)
{
	cJSON *doc = cJSON_CreateObject(), *q, *conds;
	const cJSON *c;
	int64_t gen = 0, obs = 0;

	add_str(doc, "name", jstr(ws, "metadata.name"));
	add_str(doc, "systemNamespace", jstr(ws, "metadata.namespace"));
	add_str(doc, "phase", jstr(ws, "status.phase"));
	tau_json_get_int(&gen, ws, "metadata.generation");
	cJSON_AddNumberToObject(doc, "generation", (double)gen);
	if (tau_json_get_int(&obs, ws, "status.observedGeneration") == 0)
		cJSON_AddNumberToObject(doc, "observedGeneration", (double)obs);
	else
		cJSON_AddNullToObject(doc, "observedGeneration");
	add_str(doc, "namespace", jstr(ws, "status.target.resolvedNamespace"));
	q = cJSON_AddObjectToObject(doc, "queue");
	add_str(q, "localQueue", jstr(ws, "status.queue.localQueue"));
	add_str(q, "clusterQueue", jstr(ws, "status.queue.clusterQueue"));
	cJSON_AddBoolToObject(doc, "deleting", jstr(ws, "metadata.deletionTimestamp") != NULL);
	cJSON_AddBoolToObject(doc, "ready", tau_cli_ws_ready(ws));
	conds = cJSON_AddArrayToObject(doc, "conditions");
	cJSON_ArrayForEach(c, tau_json_find(ws, "status.conditions"))
	{
		cJSON *o = cJSON_CreateObject();

		add_str(o, "type", jstr(c, "type"));
		add_str(o, "status", jstr(c, "status"));
		add_str(o, "reason", jstr(c, "reason"));
		add_str(o, "message", jstr(c, "message"));
		add_str(o, "lastTransitionTime", jstr(c, "lastTransitionTime"));
		cJSON_AddItemToArray(conds, o);
	}
	return doc;
}

static void print_conditions(FILE *out, const cJSON *ws)
{
	const cJSON *conds = tau_json_find(ws, "status.conditions"), *c;
	size_t n = (size_t)cJSON_GetArraySize(conds), r = 1;
	const char **cells;

	if (n == 0) {
		fprintf(out, "Conditions:  %s\n", NONE);
		return;
	}
	cells = calloc((n + 1) * 4, sizeof(*cells));
	if (cells == NULL)
		return;
	cells[0] = "TYPE";
	cells[1] = "STATUS";
	cells[2] = "REASON";
	cells[3] = "MESSAGE";
	cJSON_ArrayForEach(c, conds)
	{
		cells[r * 4 + 0] = jstr(c, "type");
		cells[r * 4 + 1] = jstr(c, "status");
		cells[r * 4 + 2] = jstr(c, "reason");
		cells[r * 4 + 3] = jstr(c, "message");
		r++;
	}
	fprintf(out, "Conditions:\n");
	tau_cli_print_table(out, cells, r, 4);
	free(cells);
}

int tau_cli_ws_print_status(FILE *out, const cJSON *ws, tau_cli_format fmt)
{
	int64_t gen = 0, obs = 0;
	const char *v = jstr(ws, "metadata.name");

	if (v == NULL)
		return tau_error_set(TAU_EINVAL, "not a workspace: no metadata.name");
	if (fmt == TAU_CLI_JSON)
		return print_json(out, status_doc(ws));
	tau_json_get_int(&gen, ws, "metadata.generation");
	fprintf(out, "Name:                %s\n", v);
	v = jstr(ws, "metadata.namespace");
	fprintf(out, "System namespace:    %s\n", v != NULL ? v : NONE);
	v = jstr(ws, "status.phase");
	fprintf(out, "Phase:               %s%s\n", v != NULL ? v : NONE,
	        jstr(ws, "metadata.deletionTimestamp") != NULL ? " (deleting)" : "");
	if (tau_json_get_int(&obs, ws, "status.observedGeneration") == 0)
		fprintf(out, "Generation:          %lld (observed %lld)\n", (long long)gen,
		        (long long)obs);
	else
		fprintf(out, "Generation:          %lld (not observed yet)\n", (long long)gen);
	v = jstr(ws, "status.target.resolvedNamespace");
	fprintf(out, "Namespace:           %s\n", v != NULL ? v : NONE);
	v = jstr(ws, "status.queue.localQueue");
	fprintf(out, "LocalQueue:          %s\n", v != NULL ? v : NONE);
	v = jstr(ws, "status.queue.clusterQueue");
	fprintf(out, "ClusterQueue:        %s\n", v != NULL ? v : NONE);
	print_conditions(out, ws);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

static int connect_client(tau_kube_client **out, const tau_cli_globals *g)
{
	tau_kube_config_options o = {g != NULL ? g->kubeconfig : NULL,
	                             g != NULL ? g->context : NULL, NULL};
	tau_kube_config *cfg = NULL;
	int rc;

	if ((rc = tau_kube_config_load(&cfg, &o)) != 0)
		return rc;
	rc = tau_kube_client_new(out, cfg);
	tau_kube_config_free(cfg);
	return rc;
}

static const char *api_message(void)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	return e->http_code != 0 && e->message[0] != '\0' ? e->message : tau_error_last()->msg;
}

/* Report the PVC: existence, phase, storage class and its CSI provisioner.  Returns ok. */
static bool check_pvc(FILE *out, cJSON *doc, tau_kube_client *c, const char *ns, const char *pvc)
{
	cJSON *obj = NULL, *sc = NULL, *rep = cJSON_CreateObject();
	const char *cls = NULL, *phase = NULL, *prov = NULL;
	bool ok = false;
	int rc;

	add_str(rep, "name", pvc);
	add_str(rep, "namespace", ns);
	if (ns == NULL) {
		add_str(rep, "error", "the workspace has no resolved namespace");
		fprintf(out, "PVC %s: the workspace has no resolved namespace yet\n", pvc);
		goto done;
	}
	rc = tau_kube_get(&obj, c, &res_pvcs, ns, pvc);
	if (rc != 0) {
		add_str(rep, "error", api_message());
		fprintf(out, "PVC %s/%s: %s\n", ns, pvc,
		        rc == -TAU_ENOTFOUND ? "not found" : api_message());
		goto done;
	}
	cls = jstr(obj, "spec.storageClassName");
	phase = jstr(obj, "status.phase");
	add_str(rep, "phase", phase);
	add_str(rep, "storageClass", cls);
	if (cls != NULL && tau_kube_get(&sc, c, &res_storageclasses, NULL, cls) == 0)
		prov = jstr(sc, "provisioner");
	add_str(rep, "provisioner", prov);
	fprintf(out, "PVC %s/%s: phase %s, storage class %s, CSI provisioner %s\n", ns, pvc,
	        phase != NULL ? phase : NONE, cls != NULL ? cls : NONE,
	        prov != NULL ? prov : "unknown (storage class not readable)");
	ok = phase != NULL && strcmp(phase, "Bound") == 0;
	if (!ok)
		fprintf(out, "PVC %s/%s is not Bound\n", ns, pvc);
	else
		fprintf(out, "Bound proves existence only: run a mount/read/write canary with the "
		             "workload's profile\n");
done:
	cJSON_AddBoolToObject(rep, "ok", ok);
	cJSON_AddItemToObject(doc, "pvc", rep);
	cJSON_Delete(obj);
	cJSON_Delete(sc);
	return ok;
}

static void ws_usage(FILE *out)
{
	fputs("Usage: tau workspace list [-o table|json]\n"
	      "       tau workspace status NAME [-o table|json]\n"
	      "       tau workspace check NAME [--data-pvc PVC] [--aggregator ADDR] "
	      "[-o table|json]\n"
	      "Options: --context C  --system-namespace NS  --kubeconfig F\n"
	      "Exit codes: 0 success, 1 not Ready (check) or API failure, 2 usage error.\n",
	      out);
}

int tau_cli_workspace(int argc, char **argv, const tau_cli_globals *g)
{
	enum { O_CONTEXT = 256, O_NS, O_KUBECONFIG, O_PVC, O_AGG };
	static const struct option lopts[] = {
	        {"help", no_argument, NULL, 'h'},
	        {"output", required_argument, NULL, 'o'},
	        {"context", required_argument, NULL, O_CONTEXT},
	        {"system-namespace", required_argument, NULL, O_NS},
	        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
	        {"data-pvc", required_argument, NULL, O_PVC},
	        {"aggregator", required_argument, NULL, O_AGG},
	        {NULL, 0, NULL, 0},
	};
	tau_cli_globals gl = {0};
	tau_cli_format fmt = TAU_CLI_TABLE;
	const char *verb, *name = NULL, *pvc = NULL, *agg = NULL, *sysns;
	tau_kube_client *client = NULL;
	cJSON *obj = NULL;
	int c, rc = TAU_CLI_USAGE;

	if (g != NULL)
		gl = *g;
	optind = 0; /* 0: glibc re-initialises (permuting again after main's "+" parse) */
	opterr = 0;
	/* argv[0] is "workspace"; options may follow the verb and the name. */
	while ((c = getopt_long(argc, argv, "ho:", lopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			ws_usage(stdout);
			return TAU_CLI_OK;
		case 'o':
			if (strcmp(optarg, "json") == 0)
				fmt = TAU_CLI_JSON;
			else if (strcmp(optarg, "table") == 0 || strcmp(optarg, "wide") == 0)
				fmt = TAU_CLI_TABLE;
			else {
				fprintf(stderr, "tau workspace: -o must be table or json\n");
				return TAU_CLI_USAGE;
			}
			break;
		case O_CONTEXT:
			gl.context = optarg;
			break;
		case O_NS:
			gl.system_namespace = optarg;
			break;
		case O_KUBECONFIG:
			gl.kubeconfig = optarg;
			break;
		case O_PVC:
			pvc = optarg;
			break;
		case O_AGG:
			agg = optarg;
			break;
		default:
			fprintf(stderr, "tau workspace: unknown option %s\n", argv[optind - 1]);
			ws_usage(stderr);
			return TAU_CLI_USAGE;
		}
	}
	if (optind >= argc) {
		ws_usage(stderr);
		return TAU_CLI_USAGE;
	}
	verb = argv[optind++];
	if (strcmp(verb, "list") != 0 && strcmp(verb, "status") != 0 &&
	    strcmp(verb, "check") != 0) {
		fprintf(stderr, "tau workspace: unknown command %s\n", verb);
		ws_usage(stderr);
		return TAU_CLI_USAGE;
	}
	if (strcmp(verb, "list") != 0) {
		if (optind >= argc) {
			fprintf(stderr, "tau workspace %s: NAME is required\n", verb);
			return TAU_CLI_USAGE;
		}
		name = argv[optind++];
	}
	if (optind != argc) {
		fprintf(stderr, "tau workspace %s: unexpected argument %s\n", verb, argv[optind]);
		return TAU_CLI_USAGE;
	}
	if ((pvc != NULL || agg != NULL) && strcmp(verb, "check") != 0) {
		fprintf(stderr, "tau workspace: --data-pvc and --aggregator belong to check\n");
		return TAU_CLI_USAGE;
	}
	sysns = gl.system_namespace != NULL ? gl.system_namespace : "tau-system";
	if (connect_client(&client, &gl) != 0) {
		fprintf(stderr, "tau workspace: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	rc = TAU_CLI_FAILED;
	if (strcmp(verb, "list") == 0) {
		if (tau_kube_list_all(&obj, client, &res_workspaces, sysns, NULL) != 0) {
			fprintf(stderr, "tau workspace list: %s\n", api_message());
			goto out;
		}
		rc = tau_cli_ws_print_list(stdout, obj, fmt) == 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
		goto out;
	}
	if (tau_kube_get(&obj, client, &res_workspaces, sysns, name) != 0) {
		if (fmt == TAU_CLI_JSON && strcmp(verb, "check") == 0) {
			cJSON *doc = cJSON_CreateObject();

			add_str(doc, "name", name);
			cJSON_AddBoolToObject(doc, "ready", false);
			add_str(doc, "error", api_message());
			print_json(stdout, doc);
		}
		fprintf(stderr, "tau workspace %s: workspace %s/%s: %s\n", verb, sysns, name,
		        api_message());
		goto out;
	}
	if (strcmp(verb, "status") == 0) {
		rc = tau_cli_ws_print_status(stdout, obj, fmt) == 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
		goto out;
	}
	{
		/* check */
		cJSON *doc = status_doc(obj);
		bool ready = tau_cli_ws_ready(obj), pvc_ok = true;
		FILE *human = fmt == TAU_CLI_JSON ? stderr : stdout;
		const cJSON *cnd;

		if (fmt != TAU_CLI_JSON) {
			const char *phase = jstr(obj, "status.phase");

			fprintf(stdout, "workspace %s: %s\n", name,
			        ready ? "Ready" : (phase != NULL ? phase : "no status yet"));
			cJSON_ArrayForEach(cnd, tau_json_find(obj, "status.conditions"))
			{
				const char *st = jstr(cnd, "status"), *ty = jstr(cnd, "type");
				bool bad = ty != NULL && st != NULL &&
				           ((strcmp(ty, "DriftDetected") == 0 &&
				             strcmp(st, "True") == 0) ||
				            (strcmp(ty, "DriftDetected") != 0 &&
				             strcmp(st, "True") != 0));

				if (bad)
					fprintf(stdout, "  %s=%s %s: %s\n", ty, st,
					        jstr(cnd, "reason"), jstr(cnd, "message"));
			}
			if (!ready && jstr(obj, "status.phase") != NULL &&
			    strcmp(jstr(obj, "status.phase"), "Ready") == 0)
				fprintf(stdout, "  status is for an older generation; wait for the "
				                "controller\n");
		}
		if (pvc != NULL)
			pvc_ok = check_pvc(human, doc, client,
			                   jstr(obj, "status.target.resolvedNamespace"), pvc);
		if (agg != NULL) {
			fprintf(human,
			        "CSI registration via aggregator %s: inventory unavailable "
			        "(this build does not query the inventory; use `tau storage "
			        "check --driver NAME`)\n",
			        agg);
			add_str(doc, "csi", "inventory unavailable");
		}
		if (fmt == TAU_CLI_JSON)
			print_json(stdout, doc);
		else
			cJSON_Delete(doc);
		rc = ready && pvc_ok ? TAU_CLI_OK : TAU_CLI_FAILED;
	}
out:
	cJSON_Delete(obj);
	tau_kube_client_free(client);
	return rc;
}
