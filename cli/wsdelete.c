/*
 * wsdelete.c - `tau workspace delete NAME [--wait]`: delete a TauWorkspace
 * and show what its drain waits for.
 *
 * The aggregator's finalizer (tau.azure.com/workspace-cleanup) keeps a
 * deleted workspace while unfinished work still routes through its
 * LocalQueues (docs/api.md).  The CLI reads the same objects the controller
 * reads - the workspace's LocalQueues in its namespace (ownership labels) and
 * the Jobs, RayJobs, RayServices, Deployments and Workloads there - and
 * applies the same rules (libtau tau/drain.h) to name what holds it.  The
 * listing is made by a pure function over the lists (tau_cli_ws_drain_holders)
 * so it is unit tested.
 */
#include "globalopts.h"
#include "wait.h"
#include "workspace.h"

#include "tau/drain.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/parse.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
static const tau_kube_resource res_localqueues = {"kueue.x-k8s.io", "v1beta2", "localqueues", true};

#define FINALIZER       "tau.azure.com/workspace-cleanup"
#define POLL_MS         500
#define DEFAULT_TIMEOUT (10 * 60 * 1000)
#define MAX_QUEUES      64

cJSON *tau_cli_ws_drain_holders(const char *ns, const char *const *queues, size_t n_queues,
                                const cJSON *const lists[], const char *const errors[])
{
	cJSON *out = cJSON_CreateArray();
	const cJSON *it;
	char d[600];

	if (out == NULL)
		return NULL;
	for (int k = 0; k < TAU_DRAIN_KINDS; k++) {
		if (errors != NULL && errors[k] != NULL) {
			snprintf(d, sizeof(d), "%s in %s cannot be listed: %s",
			         tau_drain_kind_plural((tau_drain_kind)k), ns, errors[k]);
			cJSON_AddItemToArray(out, cJSON_CreateString(d));
			continue;
		}
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(lists[k], "items"))
		{
			tau_drain_source s;

			if (tau_drain_source_from_json(&s, (tau_drain_kind)k, it) != 0 ||
			    !tau_drain_source_routed(&s, queues, n_queues) ||
			    tau_drain_source_finished(&s))
				continue;
			tau_drain_describe(d, sizeof(d), ns, &s);
			cJSON_AddItemToArray(out, cJSON_CreateString(d));
		}
	}
	return out;
}

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

/* What holds NAME's drain in namespace ns now: a new array of descriptions, or NULL. */
static cJSON *read_holders(tau_kube_client *c, const char *name, const char *ns)
{
	tau_kube_list_options lo = {0};
	cJSON *lqs = NULL, *lists[TAU_DRAIN_KINDS] = {0}, *out = NULL;
	const char *queues[MAX_QUEUES], *errors[TAU_DRAIN_KINDS] = {0};
	char sel[400], errbuf[TAU_DRAIN_KINDS][300];
	size_t nq = 0;
	const cJSON *it;
	int rc;

	snprintf(sel, sizeof(sel),
	         "app.kubernetes.io/managed-by=taugrid,tau.azure.com/workspace=%s", name);
	lo.label_selector = sel;
	rc = tau_kube_list_all(&lqs, c, &res_localqueues, ns, &lo);
	if (rc != 0) {
		lqs = NULL;
		/* No Kueue or no namespace: nothing can route through the workspace.  Any other
		 * failure: say so rather than claim the drain waits for nothing. */
		if (rc != -TAU_ENOTFOUND) {
			char d[600];

			out = cJSON_CreateArray();
			snprintf(d, sizeof(d), "LocalQueues in %s cannot be listed: %s", ns,
			         tau_cli_api_message());
			cJSON_AddItemToArray(out, cJSON_CreateString(d));
			return out;
		}
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(lqs, "items"))
	{
		if (nq < MAX_QUEUES && tau_cli_str(it, "metadata.name") != NULL)
			queues[nq++] = tau_cli_str(it, "metadata.name");
	}
	for (int k = 0; k < TAU_DRAIN_KINDS && nq > 0; k++) {
		rc = tau_kube_list_all(&lists[k], c, &tau_drain_resources[k], ns, NULL);

		if (rc == -TAU_ENOTFOUND && tau_drain_absent_tolerated((tau_drain_kind)k)) {
			lists[k] = NULL;
		} else if (rc != 0) {
			snprintf(errbuf[k], sizeof(errbuf[k]), "%s", tau_cli_api_message());
			errors[k] = errbuf[k];
			lists[k] = NULL;
		}
	}
	out = tau_cli_ws_drain_holders(ns, queues, nq, (const cJSON *const *)lists, errors);
	for (int k = 0; k < TAU_DRAIN_KINDS; k++)
		cJSON_Delete(lists[k]);
	cJSON_Delete(lqs);
	return out;
}

static bool has_finalizer(const cJSON *ws)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, tau_json_find(ws, "metadata.finalizers"))
	{
		if (cJSON_IsString(f) && strcmp(f->valuestring, FINALIZER) == 0)
			return true;
	}
	return false;
}

static void print_holders(const cJSON *holders)
{
	const cJSON *h;

	if (cJSON_GetArraySize(holders) == 0) {
		fprintf(stdout, "  the drain waits for nothing: the aggregator is cleaning up\n");
		return;
	}
	fprintf(stdout, "  the drain waits for %d unfinished source%s routed through its queue:\n",
	        cJSON_GetArraySize(holders), cJSON_GetArraySize(holders) == 1 ? "" : "s");
	cJSON_ArrayForEach(h, holders)
	{
		fprintf(stdout, "    %s\n", h->valuestring);
	}
}

/* tau workspace delete: what one look needs and keeps. */
typedef struct ws_drain {
	tau_kube_client *c;
	const char *sysns, *name, *ns; /* ns: the workspace's namespace, where its drain is */
	bool wait;
	char *shown; /* the holders last printed (JSON) */
} ws_drain;

/*
 * One GET: print what holds the workspace when it changed.  >0 gone (or, without --wait,
 * shown once), <0 the API failed, 0 still held.
 */
static int drain_look(void *arg)
{
	ws_drain *d = arg;
	cJSON *ws = NULL, *holders;
	char *now;
	int gr = tau_kube_get(&ws, d->c, &res_workspaces, d->sysns, d->name), rc = 0;

	if (gr == -TAU_ENOTFOUND) {
		fprintf(stdout, "workspace %s/%s deleted\n", d->sysns, d->name);
		return 1;
	}
	if (gr != 0) {
		fprintf(stderr, "tau workspace delete: reading %s/%s: %s\n", d->sysns, d->name,
		        tau_cli_api_message());
		return -1;
	}
	if (!has_finalizer(ws)) {
		/* Nothing holds it any more; the API server removes it shortly. */
		cJSON_Delete(ws);
		return d->wait ? 0 : 1;
	}
	cJSON_Delete(ws);
	holders = read_holders(d->c, d->name, d->ns);
	now = holders != NULL ? cJSON_PrintUnformatted(holders) : NULL;
	if (now != NULL && (d->shown == NULL || strcmp(now, d->shown) != 0)) {
		fprintf(stdout, "workspace %s: finalizer %s holds it (namespace %s)\n", d->name,
		        FINALIZER, d->ns);
		print_holders(holders);
		fflush(stdout);
		free(d->shown);
		d->shown = now;
		now = NULL;
	}
	free(now);
	cJSON_Delete(holders);
	if (!d->wait) {
		fprintf(stdout, "run `tau workspace delete %s --wait` to follow it\n", d->name);
		rc = 1;
	}
	return rc;
}

static void delete_usage(FILE *out)
{
	fputs("Usage: tau workspace delete NAME [--wait [--timeout D]] [--system-namespace NS]\n"
	      "Deletes TauWorkspace NAME. While the aggregator's finalizer\n"
	      "(" FINALIZER ") holds it, prints what the drain waits for:\n"
	      "unfinished Jobs, RayJobs and Workloads, and RayServices and Kueue-managed\n"
	      "Deployments, routed through the workspace's LocalQueues. --wait follows it\n"
	      "until it is gone (timeout 10m), printing each change.\n"
	      "Exit codes: 0 deleted (gone with --wait), 1 not found, still held at the\n"
	      "timeout or API failure, 2 usage error.\n",
	      out);
}

int tau_cli_ws_delete(int argc, char **argv, const tau_cli_globals *g)
{
	enum { O_WAIT = 256, O_TIMEOUT };
	static const struct option lopts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{"wait", no_argument, NULL,
	                                                                 O_WAIT},
	        {"timeout", required_argument, NULL, O_TIMEOUT},
	        {NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau workspace delete", "h", lopts, delete_usage,
	                                        .take = NULL};
	const char *name, *timeout = NULL;
	bool wait = false;
	const tau_cli_keep keep[] = {{O_WAIT, .flag = &wait}, {O_TIMEOUT, .arg = &timeout}, {0}};
	tau_cli_opts o;
	int64_t timeout_ms = DEFAULT_TIMEOUT;
	tau_kube_client *client = NULL;
	char sysns[TAU_CLI_NS_BUF], ns[TAU_CLI_NS_BUF];
	cJSON *ws = NULL;
	int exit_code, rc = TAU_CLI_FAILED, gr;

	if ((exit_code = tau_cli_parse(&o, g, argc, argv, &optspec, keep, NULL)) >= 0)
		return exit_code;
	if (tau_cli_one_workspace_name(&name, argc, argv, "tau workspace delete") < 0)
		return TAU_CLI_USAGE;
	if (tau_cli_wait_timeout(&timeout_ms, &o.gl, wait, timeout, "tau workspace delete") < 0)
		return TAU_CLI_USAGE;
	if (tau_cli_connect(&client, &o.gl) != 0) {
		fprintf(stderr, "tau workspace delete: %s\n", tau_error_last()->msg);
		return TAU_CLI_USAGE;
	}
	tau_cli_system_namespace(sysns, sizeof(sysns), client, o.gl.system_namespace);
	gr = tau_kube_get(&ws, client, &res_workspaces, sysns, name);
	if (gr != 0) {
		fprintf(stderr, "tau workspace delete: workspace %s/%s: %s\n", sysns, name,
		        gr == -TAU_ENOTFOUND ? "not found" : tau_cli_api_message());
		goto out;
	}
	{
		const char *t = tau_cli_str(ws, "status.target.resolvedNamespace");

		if (t == NULL)
			t = tau_cli_str(ws, "spec.target.namespace");
		snprintf(ns, sizeof(ns), "%s", t != NULL ? t : name);
	}
	if (tau_cli_str(ws, "metadata.deletionTimestamp") == NULL) {
		gr = tau_kube_delete(NULL, client, &res_workspaces, sysns, name, NULL);
		if (gr != 0 && gr != -TAU_ENOTFOUND) {
			fprintf(stderr, "tau workspace delete: deleting %s/%s: %s\n", sysns, name,
			        tau_cli_api_message());
			goto out;
		}
		fprintf(stdout, "workspace %s/%s: deletion requested\n", sysns, name);
	} else {
		fprintf(stdout, "workspace %s/%s: already being deleted\n", sysns, name);
	}
	{
		ws_drain d = {client, sysns, name, ns, wait, NULL};
		int v = tau_cli_wait(drain_look, NULL, &d, wait ? timeout_ms : 0, POLL_MS);

		if (v == 0)
			fprintf(stdout, "workspace %s: still held after %lld s\n", name,
			        (long long)(timeout_ms / 1000));
		rc = v > 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
		free(d.shown);
	}
out:
	cJSON_Delete(ws);
	tau_kube_client_free(client);
	return rc;
}
