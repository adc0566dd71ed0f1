/*
 * workspace.c - `tau workspace list|status NAME|check NAME`.
 *
 * The one idea: the command reads TauWorkspaces straight from the
 * Kubernetes API with libtau's client (the controller's status is the
 * answer; the CLI never recomputes it), and everything it prints is made by
 * pure printers that take the JSON, so formats are unit-tested from canned
 * objects.  `check` exits 1 unless the phase is Ready for the current
 * generation; usage and input errors exit 2 (docs/cli.md).
 *
 * `check --data-pvc PVC --aggregator ADDR` also asks the aggregator whether
 * the PVC's CSI driver is registered on every node that counts in the pool
 * (the nodes the workspace's queue draws from).  The driver is read from
 * Kubernetes (bound PV, else StorageClass provisioner); the verdict is made
 * by a pure function over the GetNode answers, so it is unit tested.
 */
#include "workspace.h"

#include "globalopts.h"
#include "output.h"
#include "inventory.h"

#include "tau/csi.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/kube.h"
#include "tau/names.h"
#include "tau/node_kind.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
static const tau_kube_resource res_pvcs = {"", "v1", "persistentvolumeclaims", true};
static const tau_kube_resource res_storageclasses = {"storage.k8s.io", "v1", "storageclasses",
                                                     false};
static const tau_kube_resource res_pvs = {"", "v1", "persistentvolumes", false};
static const tau_kube_resource res_cqs = {"kueue.x-k8s.io", "v1beta2", "clusterqueues", false};
static const tau_kube_resource res_flavors = {"kueue.x-k8s.io", "v1beta2", "resourceflavors",
                                              false};

#define CSI_TIMEOUT_MS 10000

#define NONE "<none>"

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

/* The document `doc` (taken, freed here) as JSON or YAML on `out`. */
static int print_doc(FILE *out, cJSON *doc, tau_cli_format fmt)
{
	int rc = doc != NULL ? tau_cli_doc_print(out, doc, fmt)
	                     : tau_error_set(TAU_ENOMEM, "out of memory");

	cJSON_Delete(doc);
	return rc;
}

/*
 * The cells of a four-column table: the `heads` row, then per element of `items` (`n` of them)
 * the strings at `paths`.  *rows counts the rows; NULL when out of memory.
 */
static const char **table_cells(size_t *rows, const cJSON *items, size_t n,
                                const char *const heads[4], const char *const paths[4])
{
	const char **cells = calloc((n + 1) * 4, sizeof(*cells));
	const cJSON *it;
	size_t r = 1;

	if (cells == NULL)
		return NULL;
	for (size_t k = 0; k < 4; k++)
		cells[k] = heads[k];
	cJSON_ArrayForEach(it, items)
	{
		for (size_t k = 0; k < 4; k++)
			cells[r * 4 + k] = tau_json_str(it, paths[k]);
		r++;
	}
	*rows = r;
	return cells;
}

int tau_cli_ws_print_list(FILE *out, const cJSON *list, tau_cli_format fmt)
{
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items"), *it;
	size_t n = 0, r = 1;
	const char **cells;

	if (!cJSON_IsArray(items))
		return tau_error_set(TAU_EINVAL, "workspace list: no items");
	if (fmt != TAU_CLI_TABLE) {
		cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "items");

		cJSON_ArrayForEach(it, items)
		{
			cJSON *w = cJSON_CreateObject();

			add_str(w, "name", tau_json_str(it, "metadata.name"));
			add_str(w, "phase", tau_json_str(it, "status.phase"));
			add_str(w, "namespace",
			        tau_json_str(it, "status.target.resolvedNamespace"));
			add_str(w, "queue", tau_json_str(it, "status.queue.localQueue"));
			add_str(w, "clusterQueue", tau_json_str(it, "status.queue.clusterQueue"));
			cJSON_AddItemToArray(arr, w);
		}
		return print_doc(out, doc, fmt);
	}
	n = (size_t)cJSON_GetArraySize(items);
	if (n == 0) {
		fprintf(out, "No workspaces found.\n");
		return 0;
	}
	cells = table_cells(&r, items, n,
	                    (const char *const[4]){"NAME", "PHASE", "NAMESPACE", "QUEUE"},
	                    (const char *const[4]){"metadata.name", "status.phase",
	                                           "status.target.resolvedNamespace",
	                                           "status.queue.localQueue"});
	if (cells == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	tau_cli_print_table(out, cells, r, 4);
	free(cells);
	return 0;
}

bool tau_cli_ws_ready(const cJSON *ws)
{
	int64_t gen = 0, obs = -1;
	const char *phase = tau_json_str(ws, "status.phase");

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

	add_str(doc, "name", tau_json_str(ws, "metadata.name"));
	add_str(doc, "systemNamespace", tau_json_str(ws, "metadata.namespace"));
	add_str(doc, "phase", tau_json_str(ws, "status.phase"));
	tau_json_get_int(&gen, ws, "metadata.generation");
	cJSON_AddNumberToObject(doc, "generation", (double)gen);
	if (tau_json_get_int(&obs, ws, "status.observedGeneration") == 0)
		cJSON_AddNumberToObject(doc, "observedGeneration", (double)obs);
	else
		cJSON_AddNullToObject(doc, "observedGeneration");
	add_str(doc, "namespace", tau_json_str(ws, "status.target.resolvedNamespace"));
	q = cJSON_AddObjectToObject(doc, "queue");
	add_str(q, "localQueue", tau_json_str(ws, "status.queue.localQueue"));
	add_str(q, "clusterQueue", tau_json_str(ws, "status.queue.clusterQueue"));
	cJSON_AddBoolToObject(doc, "deleting",
	                      tau_json_str(ws, "metadata.deletionTimestamp") != NULL);
	cJSON_AddBoolToObject(doc, "ready", tau_cli_ws_ready(ws));
	conds = cJSON_AddArrayToObject(doc, "conditions");
	cJSON_ArrayForEach(c, tau_json_find(ws, "status.conditions"))
	{
		cJSON *o = cJSON_CreateObject();

		add_str(o, "type", tau_json_str(c, "type"));
		add_str(o, "status", tau_json_str(c, "status"));
		add_str(o, "reason", tau_json_str(c, "reason"));
		add_str(o, "message", tau_json_str(c, "message"));
		add_str(o, "lastTransitionTime", tau_json_str(c, "lastTransitionTime"));
		cJSON_AddItemToArray(conds, o);
	}
	return doc;
}

static void print_conditions(FILE *out, const cJSON *ws)
{
	const cJSON *conds = tau_json_find(ws, "status.conditions");
	size_t n = (size_t)cJSON_GetArraySize(conds), r = 1;
	const char **cells;

	if (n == 0) {
		fprintf(out, "Conditions:  %s\n", NONE);
		return;
	}
	cells = table_cells(&r, conds, n,
	                    (const char *const[4]){"TYPE", "STATUS", "REASON", "MESSAGE"},
	                    (const char *const[4]){"type", "status", "reason", "message"});
	if (cells == NULL)
		return;
	fprintf(out, "Conditions:\n");
	tau_cli_print_table(out, cells, r, 4);
	free(cells);
}

int tau_cli_ws_print_status(FILE *out, const cJSON *ws, tau_cli_format fmt)
{
	int64_t gen = 0, obs = 0;
	const char *v = tau_json_str(ws, "metadata.name");

	if (v == NULL)
		return tau_error_set(TAU_EINVAL, "not a workspace: no metadata.name");
	if (fmt != TAU_CLI_TABLE)
		return print_doc(out, status_doc(ws), fmt);
	tau_json_get_int(&gen, ws, "metadata.generation");
	fprintf(out, "Name:                %s\n", v);
	v = tau_json_str(ws, "metadata.namespace");
	fprintf(out, "System namespace:    %s\n", v != NULL ? v : NONE);
	v = tau_json_str(ws, "status.phase");
	fprintf(out, "Phase:               %s%s\n", v != NULL ? v : NONE,
	        tau_json_str(ws, "metadata.deletionTimestamp") != NULL ? " (deleting)" : "");
	if (tau_json_get_int(&obs, ws, "status.observedGeneration") == 0)
		fprintf(out, "Generation:          %lld (observed %lld)\n", (long long)gen,
		        (long long)obs);
	else
		fprintf(out, "Generation:          %lld (not observed yet)\n", (long long)gen);
	v = tau_json_str(ws, "status.target.resolvedNamespace");
	fprintf(out, "Namespace:           %s\n", v != NULL ? v : NONE);
	v = tau_json_str(ws, "status.queue.localQueue");
	fprintf(out, "LocalQueue:          %s\n", v != NULL ? v : NONE);
	v = tau_json_str(ws, "status.queue.clusterQueue");
	fprintf(out, "ClusterQueue:        %s\n", v != NULL ? v : NONE);
	print_conditions(out, ws);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The CSI verdict of check --data-pvc --aggregator                                            */

const char *tau_cli_ws_csi_driver(const cJSON *pvc, const cJSON *pv, const cJSON *sc,
                                  const char **why)
{
	const char *cls = tau_json_str(pvc, "spec.storageClassName"), *prov;

	if (pv != NULL) {
		const char *d = tau_json_str(pv, "spec.csi.driver");

		if (d != NULL && d[0] != '\0')
			return d;
		*why = "its PersistentVolume is not a CSI volume (no spec.csi.driver)";
		return NULL;
	}
	if (cls == NULL || cls[0] == '\0') {
		*why = "it names no storage class and is not bound to a CSI volume";
		return NULL;
	}
	if (sc == NULL) {
		*why = "its storage class could not be read";
		return NULL;
	}
	prov = tau_json_str(sc, "provisioner");
	if (prov == NULL || prov[0] == '\0') {
		*why = "its storage class has no provisioner";
		return NULL;
	}
	if (strncmp(prov, "kubernetes.io/", strlen("kubernetes.io/")) == 0) {
		*why = "its storage class's provisioner is in-tree, not a CSI driver";
		return NULL;
	}
	return prov;
}

static const Tau__Inventory__V1__CsiDriver *find_csi(const Tau__Inventory__V1__NodeInventory *inv,
                                                     const char *driver)
{
	if (inv == NULL)
		return NULL;
	for (size_t i = 0; i < inv->n_csi_drivers; i++)
		if (inv->csi_drivers[i]->name != NULL &&
		    strcmp(inv->csi_drivers[i]->name, driver) == 0)
			return inv->csi_drivers[i];
	return NULL;
}

/* The names of what the agent reported (libtau's tau/node_kind.h, tau/csi.h), as
 * `tau storage check` shows them. */
static const char *node_kind_name(Tau__Inventory__V1__NodeKind kind)
{
	static const tau_node_kind kinds[] = {
	        [TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL] = TAU_NODE_KIND_AGENT_POOL,
	        [TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_FLEX] = TAU_NODE_KIND_FLEX,
	        [TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_OTHER] = TAU_NODE_KIND_OTHER,
	};

	return tau_node_kind_name((size_t)kind < TAU_N_ELEMENTS(kinds) ? kinds[kind]
	                                                               : TAU_NODE_KIND_UNKNOWN);
}

static const char *managed_by_name(Tau__Inventory__V1__CsiManagedBy managed_by)
{
	static const tau_csi_managed_by managers[] = {
	        [TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_AKS_ADDON] =
	                TAU_CSI_MANAGED_AKS_ADDON,
	        [TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_DEPLOYMENT] =
	                TAU_CSI_MANAGED_DEPLOYMENT,
	};

	return tau_csi_managed_by_name((size_t)managed_by < TAU_N_ELEMENTS(managers)
	                                       ? managers[managed_by]
	                                       : TAU_CSI_MANAGED_UNKNOWN);
}

const char *tau_cli_csi_probe_verdict(char *detail, size_t cap, const char *node,
                                      const char *driver,
                                      const Tau__Inventory__V1__GetNodeResponse *r)
{
	const Tau__Inventory__V1__CsiDriver *d = r != NULL ? find_csi(r->inventory, driver) : NULL;
	/* The first step that holds gives the verdict; its text names the driver between
	 * `before` and `after`. */
	const struct {
		bool holds;
		const char *before, *after, *verdict;
	} steps[] = {
	        {r == NULL || r->inventory == NULL, "no agent data: the live Probe of ",
	         " is unknown", TAU_CLI_PROBE_UNKNOWN},
	        {r != NULL && r->status != NULL && r->status->stale,
	         "its agent's last report is stale: the live Probe of ", " is unknown",
	         TAU_CLI_PROBE_UNKNOWN},
	        {d == NULL || !d->in_csi_node, "the agent does not see ",
	         " registered (yet): the live Probe is unknown", TAU_CLI_PROBE_UNKNOWN},
	        {d != NULL && !d->socket_present, "",
	         " registered in CSINode but not answering Probe: its registration socket is "
	         "missing",
	         TAU_CLI_PROBE_NOT_READY},
	        {d != NULL && !d->probed, "the agent made no live check of ",
	         " (an agent without the CSI probe): unknown", TAU_CLI_PROBE_UNKNOWN},
	        {d != NULL && d->probe_ready == TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE, "",
	         " answers Probe ready", TAU_CLI_PROBE_READY},
	};

	for (size_t i = 0; i < TAU_N_ELEMENTS(steps); i++) {
		if (steps[i].holds) {
			snprintf(detail, cap, "node %s: %s%s%s", node, steps[i].before, driver,
			         steps[i].after);
			return steps[i].verdict;
		}
	}
	snprintf(detail, cap, "node %s: %s registered in CSINode but not answering Probe: %s", node,
	         driver,
	         d->probe_error != NULL && d->probe_error[0] != '\0' ? d->probe_error
	         : d->probe_ready == TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE
	                 ? "Probe answered not ready"
	                 : "no answer");
	return TAU_CLI_PROBE_NOT_READY;
}

int tau_cli_csi_probe_count(cJSON *doc)
{
	const cJSON *n;
	size_t failed = 0, unknown = 0;

	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "nodes"))
	{
		const char *p = tau_json_str(n, "probe");

		failed += p != NULL && strcmp(p, TAU_CLI_PROBE_NOT_READY) == 0;
		unknown += p != NULL && strcmp(p, TAU_CLI_PROBE_UNKNOWN) == 0;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "probeFailed");
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "probeUnknown");
	cJSON_AddNumberToObject(doc, "probeFailed", (double)failed);
	cJSON_AddNumberToObject(doc, "probeUnknown", (double)unknown);
	return (int)failed;
}

void tau_cli_csi_print_probe(FILE *out, const cJSON *doc)
{
	const cJSON *live = cJSON_GetObjectItemCaseSensitive(doc, "liveProbe"), *n;
	const char *driver = tau_json_str(doc, "driver");
	size_t unknown = 0, checked = 0;

	driver = driver != NULL ? driver : NONE;
	if (live != NULL && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(live, "checked"))) {
		fprintf(out, "CSI driver %s: live Probe not checked: %s\n", driver,
		        tau_json_str(live, "reason") != NULL ? tau_json_str(live, "reason") : NONE);
		return;
	}
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "nodes"))
	{
		const char *p = tau_json_str(n, "probe");

		if (p == NULL)
			continue;
		checked++;
		if (strcmp(p, TAU_CLI_PROBE_NOT_READY) == 0)
			fprintf(out, "CSI driver %s: %s\n", driver, tau_json_str(n, "probeDetail"));
		unknown += strcmp(p, TAU_CLI_PROBE_UNKNOWN) == 0;
	}
	if (unknown == 0)
		return;
	fprintf(out, "CSI driver %s: live Probe unknown on %zu of %zu nodes:", driver, unknown,
	        checked);
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "nodes"))
	{
		const char *p = tau_json_str(n, "probe");

		if (p != NULL && strcmp(p, TAU_CLI_PROBE_UNKNOWN) == 0)
			fprintf(out, " %s", tau_json_str(n, "name"));
	}
	fprintf(out, " (no agent answer: not counted as passing)\n");
}

cJSON *tau_cli_ws_csi_report(const char *driver,
                             const Tau__Inventory__V1__GetNodeResponse *const *nodes,
                             size_t n_nodes)
{
	cJSON *rep = cJSON_CreateObject(), *arr, *problems;
	size_t n_missing = 0, n_unsupported = 0, n_probe_failed;

	if (rep == NULL)
		return NULL;
	add_str(rep, "driver", driver);
	arr = cJSON_AddArrayToObject(rep, "nodes");
	problems = cJSON_AddArrayToObject(rep, "problems");
	if (arr == NULL || problems == NULL) {
		cJSON_Delete(rep);
		return NULL;
	}
	for (size_t i = 0; i < n_nodes; i++) {
		const Tau__Inventory__V1__GetNodeResponse *r = nodes[i];
		const Tau__Inventory__V1__CsiDriver *d = find_csi(r->inventory, driver);
		const char *name = r->status != NULL      ? r->status->name
		                   : r->inventory != NULL ? r->inventory->node_name
		                                          : "";
		bool in_csinode = d != NULL && d->in_csi_node,
		     socket = d != NULL && d->socket_present, unsupported = false;
		const char *kind = r->inventory != NULL ? node_kind_name(r->inventory->kind) : NULL,
		           *mb = managed_by_name(d != NULL ? d->managed_by : 0);
		cJSON *o = cJSON_CreateObject();
		char why[512];

		add_str(o, "name", name);
		cJSON_AddBoolToObject(o, "inCSINode", in_csinode);
		cJSON_AddBoolToObject(o, "socketPresent", socket);
		if (!in_csinode || !socket) {
			n_missing++;
		} else if (tau_cli_csi_addon_unsupported(why, sizeof(why), name, kind, mb,
		                                         driver)) {
			unsupported = true;
			n_unsupported++;
			cJSON_AddItemToArray(problems, cJSON_CreateString(why));
		}
		add_str(o, "nodeKind", kind);
		add_str(o, "managedBy", mb);
		cJSON_AddBoolToObject(o, "supported", !unsupported);
		if (in_csinode) {
			/* The live check: registered and answering Identity Probe. */
			char detail[768];
			const char *v =
			        tau_cli_csi_probe_verdict(detail, sizeof(detail), name, driver, r);

			add_str(o, "probe", v);
			add_str(o, "probeDetail", detail);
		}
		cJSON_AddItemToArray(arr, o);
	}
	/* The same counts as `tau storage check`. */
	cJSON_AddNumberToObject(rep, "eligible", (double)n_nodes);
	cJSON_AddNumberToObject(rep, "missing", (double)n_missing);
	cJSON_AddNumberToObject(rep, "unsupported", (double)n_unsupported);
	n_probe_failed = (size_t)tau_cli_csi_probe_count(rep);
	cJSON_AddBoolToObject(rep, "ok",
	                      n_nodes > 0 && n_missing == 0 && n_unsupported == 0 &&
	                              n_probe_failed == 0);
	return rep;
}

static bool csi_node_ok(const cJSON *n)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "inCSINode")) &&
	       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "socketPresent"));
}

void tau_cli_ws_print_csi(FILE *out, const cJSON *csi)
{
	const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(csi, "nodes"), *n;
	const cJSON *problems = cJSON_GetObjectItemCaseSensitive(csi, "problems");
	const char *driver = tau_json_str(csi, "driver");
	size_t rows = (size_t)cJSON_GetArraySize(nodes), r = 1, n_missing = 0;
	const char **cells;
	static const char *const heads[] = {"NODE", "REGISTERED", "SOCKET", "PROBE"};

	driver = driver != NULL ? driver : NONE;
	if (rows == 0) {
		fprintf(out, "CSI driver %s: no eligible nodes (no node counts in the pool)\n",
		        driver);
		return;
	}
	cells = calloc((rows + 1) * 4, sizeof(*cells));
	if (cells == NULL)
		return;
	memcpy(cells, heads, sizeof(heads));
	cJSON_ArrayForEach(n, nodes)
	{
		const char *probe = tau_json_str(n, "probe");

		cells[r * 4 + 0] = tau_json_str(n, "name");
		cells[r * 4 + 1] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "inCSINode"))
		                           ? "yes"
		                           : "no";
		cells[r * 4 + 2] =
		        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "socketPresent")) ? "yes"
		                                                                           : "no";
		cells[r * 4 + 3] = probe != NULL ? probe : "-";
		n_missing += !csi_node_ok(n);
		r++;
	}
	tau_cli_print_table(out, cells, r, 4);
	free(cells);
	tau_cli_csi_print_probe(out, csi);
	if (n_missing == 0 && cJSON_GetArraySize(problems) == 0 &&
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(csi, "ok"))) {
		fprintf(out, "CSI driver %s: registered on all %zu eligible nodes\n", driver, rows);
		return;
	}
	if (n_missing > 0) {
		fprintf(out, "CSI driver %s: missing on %zu of %zu eligible nodes:", driver,
		        n_missing, rows);
		cJSON_ArrayForEach(n, nodes)
		{
			if (!csi_node_ok(n))
				fprintf(out, " %s",
				        tau_json_str(n, "name") != NULL ? tau_json_str(n, "name")
				                                        : NONE);
		}
		fprintf(out, "\n");
	}
	/* The Flex rule: each node relying on the AKS-managed addon where it is unsupported. */
	cJSON_ArrayForEach(n, problems)
	{
		if (cJSON_IsString(n))
			fprintf(out, "CSI driver %s: %s\n", driver, n->valuestring);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* I/O                                                                                         */

/*
 * Report the PVC: existence, phase, storage class and its CSI provisioner.  Returns ok.
 * *driver gets the CSI driver serving it (new string) or stays NULL with *why set.
 */
static bool check_pvc(FILE *out, cJSON *doc, tau_kube_client *c, const char *ns, const char *pvc,
                      char **driver, const char **why)
{
	cJSON *obj = NULL, *sc = NULL, *pv = NULL, *rep = cJSON_CreateObject();
	const char *cls = NULL, *phase = NULL, *prov = NULL, *vol = NULL, *drv;
	bool ok = false;
	int rc;

	*why = "the PVC could not be read";
	add_str(rep, "name", pvc);
	add_str(rep, "namespace", ns);
	if (ns == NULL) {
		add_str(rep, "error", "the workspace has no resolved namespace");
		fprintf(out, "PVC %s: the workspace has no resolved namespace yet\n", pvc);
		goto done;
	}
	rc = tau_kube_get(&obj, c, &res_pvcs, ns, pvc);
	if (rc != 0) {
		add_str(rep, "error", tau_cli_api_message());
		fprintf(out, "PVC %s/%s: %s\n", ns, pvc,
		        rc == -TAU_ENOTFOUND ? "not found" : tau_cli_api_message());
		goto done;
	}
	cls = tau_json_str(obj, "spec.storageClassName");
	phase = tau_json_str(obj, "status.phase");
	vol = tau_json_str(obj, "spec.volumeName");
	add_str(rep, "phase", phase);
	add_str(rep, "storageClass", cls);
	if (cls != NULL && cls[0] != '\0' &&
	    tau_kube_get(&sc, c, &res_storageclasses, NULL, cls) == 0)
		prov = tau_json_str(sc, "provisioner");
	/* A bound PV names the driver that actually mounts the volume. */
	if (vol != NULL && vol[0] != '\0' && tau_kube_get(&pv, c, &res_pvs, NULL, vol) != 0)
		pv = NULL;
	add_str(rep, "provisioner", prov);
	drv = tau_cli_ws_csi_driver(obj, pv, sc, why);
	add_str(rep, "csiDriver", drv);
	if (drv != NULL && (*driver = strdup(drv)) == NULL)
		*why = "out of memory";
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
	cJSON_Delete(pv);
	return ok;
}

/*
 * Ask the aggregator for the counted nodes and each one's inventory, and report whether
 * `driver` is registered on all of them.  Returns TAU_CLI_OK, TAU_CLI_FAILED (a node lacks
 * the driver, or the aggregator could not answer) or TAU_CLI_USAGE (bad channel options).
 */
static int check_csi(FILE *out, cJSON *doc, const char *driver, const tau_cli_aggregator_opts *agg,
                     const tau_cli_globals *g)
{
	Tau__Inventory__V1__ListNodesRequest lreq = TAU__INVENTORY__V1__LIST_NODES_REQUEST__INIT;
	const Tau__Inventory__V1__GetNodeResponse **got = NULL;
	Tau__Inventory__V1__ListNodesResponse *list = NULL;
	ProtobufCMessage *resp = NULL, **held = NULL;
	tau_rpc_status status = {0};
	tau_rpc_channel *ch = NULL;
	const char *target = NULL, *what = "ListNodes";
	size_t n_got = 0;
	cJSON *rep = NULL;
	char err[1024];
	int rc = TAU_CLI_FAILED;

	if (tau_cli_aggregator_channel(&ch, &target, agg, g) < 0) {
		fprintf(stderr, "tau workspace check: %s\n", tau_error_last()->msg);
		snprintf(err, sizeof(err), "%s", tau_error_last()->msg);
		rc = TAU_CLI_USAGE;
		goto failed;
	}
	lreq.gpu_class = (char *)"";
	lreq.counted_only = true; /* eligible: the nodes in the pool the queue draws from */
	if (tau_rpc_unary(&resp, ch, TAU_CLI_QUERY "ListNodes", &lreq.base,
	                  &tau__inventory__v1__list_nodes_response__descriptor,
	                  tau_cli_rpc_timeout_ms(g, CSI_TIMEOUT_MS), &status) < 0)
		goto rpc_failed;
	list = (Tau__Inventory__V1__ListNodesResponse *)resp;
	resp = NULL;
	got = calloc(list->n_nodes + 1, sizeof(*got));
	held = calloc(list->n_nodes + 1, sizeof(*held));
	if (got == NULL || held == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	what = "GetNode";
	for (size_t i = 0; i < list->n_nodes; i++) {
		Tau__Inventory__V1__GetNodeRequest greq =
		        TAU__INVENTORY__V1__GET_NODE_REQUEST__INIT;

		greq.name = list->nodes[i]->name;
		if (tau_rpc_unary(&resp, ch, TAU_CLI_QUERY "GetNode", &greq.base,
		                  &tau__inventory__v1__get_node_response__descriptor,
		                  tau_cli_rpc_timeout_ms(g, CSI_TIMEOUT_MS), &status) < 0) {
			if (status.code == TAU_RPC_NOT_FOUND)
				continue; /* gone since ListNodes: no longer eligible */
			goto rpc_failed;
		}
		held[n_got] = resp;
		got[n_got++] = (const Tau__Inventory__V1__GetNodeResponse *)resp;
		resp = NULL;
	}
	rep = tau_cli_ws_csi_report(driver, got, n_got);
	if (rep == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	tau_cli_ws_print_csi(out, rep);
	rc = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(rep, "ok")) ? TAU_CLI_OK
	                                                               : TAU_CLI_FAILED;
	cJSON_AddItemToObject(doc, "csi", rep);
	rep = NULL;
	goto out;
rpc_failed:
	snprintf(err, sizeof(err), "aggregator %.200s cannot answer %s: %s: %.600s", target, what,
	         tau_rpc_code_name(status.code),
	         status.message[0] ? status.message : tau_error_last()->msg);
	fprintf(stderr, "tau workspace check: CSI registration of %s unknown: %s\n", driver, err);
failed:
	rep = cJSON_CreateObject();
	add_str(rep, "driver", driver);
	add_str(rep, "error", err);
	cJSON_AddBoolToObject(rep, "ok", false);
	cJSON_AddItemToObject(doc, "csi", rep);
	rep = NULL;
out:
	for (size_t i = 0; i < n_got; i++)
		tau_rpc_message_free(held[i]);
	free(held);
	free(got);
	tau_rpc_message_free(resp);
	tau_rpc_message_free(list != NULL ? &list->base : NULL);
	tau_rpc_channel_free(ch);
	return rc;
}

/*
 * The nodes the workspace's queue can place work on, from Kubernetes: those its ClusterQueue's
 * flavors select (ResourceFlavor spec.nodeLabels; a flavor without labels selects every node),
 * Ready, schedulable and not deleting.  Checks `driver` on them as `tau storage check` does
 * (registration and the Flex rule).  Returns TAU_CLI_OK or TAU_CLI_FAILED.
 */
static int check_csi_kube(FILE *out, cJSON *doc, tau_kube_client *c, const cJSON *ws,
                          const char *driver, const tau_cli_globals *g)
{
	const char *cq_name = tau_json_str(ws, "status.queue.clusterQueue"), *err = NULL;
	cJSON *rep = cJSON_CreateObject(), *cq = NULL;
	const cJSON *rg, *fl;
	char none[300];
	bool ok = false;

	if (rep == NULL)
		return TAU_CLI_FAILED;
	add_str(rep, "driver", driver);
	add_str(rep, "clusterQueue", cq_name);
	cJSON_AddItemToObject(doc, "csi", rep);
	if (cq_name == NULL) {
		err = "the workspace's status names no ClusterQueue yet, so its eligible nodes "
		      "cannot be told";
		goto failed;
	}
	if (tau_kube_get(&cq, c, &res_cqs, NULL, cq_name) != 0) {
		err = tau_cli_api_message();
		goto failed;
	}
	cJSON_ArrayForEach(rg, tau_json_find(cq, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(rg, "flavors"))
		{
			tau_kube_list_options lo = {0};
			cJSON *rf = NULL, *nodes = NULL;
			const cJSON *l;
			char sel[2048] = "";
			size_t used = 0;
			int rc;

			if (tau_json_str(fl, "name") == NULL ||
			    tau_kube_get(&rf, c, &res_flavors, NULL, tau_json_str(fl, "name")) !=
			            0) {
				err = tau_json_str(fl, "name") == NULL
				              ? "a flavor of the ClusterQueue has no name"
				              : tau_cli_api_message();
				goto failed;
			}
			cJSON_ArrayForEach(l, tau_json_find(rf, "spec.nodeLabels"))
			{
				int n = snprintf(sel + used, sizeof(sel) - used, "%s%s=%s",
				                 used > 0 ? "," : "", l->string,
				                 cJSON_IsString(l) ? l->valuestring : "");

				if (n < 0 || (size_t)n >= sizeof(sel) - used) {
					cJSON_Delete(rf);
					err = "a ResourceFlavor's nodeLabels are too long to "
					      "select by";
					goto failed;
				}
				used += (size_t)n;
			}
			cJSON_Delete(rf);
			lo.label_selector = used > 0 ? sel : NULL;
			rc = tau_kube_list_all(&nodes, c, &tau_kube_res_nodes, NULL, &lo);
			if (rc == 0)
				rc = tau_cli_csi_check_nodes(rep, c,
				                             cJSON_GetObjectItem(nodes, "items"),
				                             driver, "tau workspace check");
			cJSON_Delete(nodes);
			if (rc < 0) {
				err = tau_cli_api_message();
				goto failed;
			}
		}
	}
	/* The live Probe through TAU_AGGREGATOR when set; otherwise said not checked. */
	if (tau_cli_csi_live_probe(rep, driver, NULL, g) < 0) {
		err = tau_error_last()->msg;
		goto failed;
	}
	ok = tau_cli_csi_finish(rep);
	snprintf(none, sizeof(none), "no node is eligible for ClusterQueue %s", cq_name);
	tau_cli_csi_print(out, rep, none);
	cJSON_Delete(cq);
	return ok ? TAU_CLI_OK : TAU_CLI_FAILED;
failed:
	fprintf(out,
	        "CSI driver %s: the nodes ClusterQueue %s can place work on cannot be read: %s\n",
	        driver, cq_name != NULL ? cq_name : NONE, err);
	add_str(rep, "error", err);
	cJSON_AddBoolToObject(rep, "ok", false);
	cJSON_Delete(cq);
	return TAU_CLI_FAILED;
}

static void ws_usage(FILE *out)
{
	fputs("Usage: tau workspace list [-o table|json|yaml]\n"
	      "       tau workspace create NAME [...]   (tau workspace create --help)\n"
	      "       tau workspace delete NAME [--wait [--timeout D]]\n"
	      "       tau workspace status NAME [-o table|json|yaml]\n"
	      "       tau workspace check NAME [--data-pvc PVC [--aggregator ADDR "
	      "[--ca-file F | --insecure]]] [-o table|json|yaml]\n"
	      "Options: --context C  --system-namespace NS  --kubeconfig F\n"
	      "With --aggregator, check also requires the PVC's CSI driver to be registered\n"
	      "on every node that counts in the pool (ADDR defaults to env TAU_AGGREGATOR),\n"
	      "and not to be the AKS-managed addon on a Flex or other externally registered\n"
	      "node (a deployment-managed driver is required there). Without --aggregator the\n"
	      "same is checked from Kubernetes (CSINode, pods) on the nodes the workspace's\n"
	      "ClusterQueue can place work on. With an aggregator (--aggregator, or env\n"
	      "TAU_AGGREGATOR without it) the agents' live CSI Identity Probe must answer ready\n"
	      "on each node where the driver is registered; a node without agent data is\n"
	      "reported as unknown.\n"
	      "Exit codes: 0 success, 1 not Ready, PVC or CSI check failed, or API failure,\n"
	      "2 usage error.\n",
	      out);
}

int tau_cli_workspace(int argc, char **argv, const tau_cli_globals *g)
{
	enum { O_PVC = 256 };
	static const struct option lopts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS TAU_CLI_SYSTEM_NAMESPACE_LONGOPT{
	                "output", required_argument, NULL, 'o'},
	        {"data-pvc", required_argument, NULL, O_PVC},
	        TAU_CLI_AGGREGATOR_LONGOPTS{NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau workspace", "ho:", lopts, ws_usage,
	                                        .wide_is_table = true};
	const char *verb, *name = NULL, *pvc = NULL, *sysns;
	const tau_cli_keep keep[] = {{O_PVC, .arg = &pvc}, {0}};
	tau_cli_opts o;
	char sysns_buf[TAU_CLI_NS_BUF];
	tau_kube_client *client = NULL;
	cJSON *obj = NULL;
	char *driver = NULL;
	int exit_code, rc = TAU_CLI_USAGE;

	/* create and delete have their own options: the verb comes first there. */
	if (argc > 1 && strcmp(argv[1], "create") == 0)
		return tau_cli_ws_create(argc - 1, argv + 1, g);
	if (argc > 1 && strcmp(argv[1], "delete") == 0)
		return tau_cli_ws_delete(argc - 1, argv + 1, g);
	/* argv[0] is "workspace"; options may follow the verb and the name. */
	if ((exit_code = tau_cli_parse(&o, g, argc, argv, &optspec, keep, NULL)) >= 0)
		return exit_code;
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
	if (name != NULL) {
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "tau workspace %s", verb);
		if (tau_cli_workspace_name_check(cmd, name) < 0)
			return TAU_CLI_USAGE;
	}
	if ((pvc != NULL || tau_cli_aggregator_given(&o.agg)) && strcmp(verb, "check") != 0) {
		fprintf(stderr, "tau workspace: --data-pvc, --aggregator, --ca-file and --insecure "
		                "belong to check\n");
		return TAU_CLI_USAGE;
	}
	if ((o.agg.ca_file != NULL || o.agg.insecure) && o.agg.addr == NULL) {
		fprintf(stderr,
		        "tau workspace check: --ca-file and --insecure need --aggregator\n");
		return TAU_CLI_USAGE;
	}
	if (o.agg.addr != NULL && pvc == NULL) {
		fprintf(stderr, "tau workspace check: --aggregator checks the CSI driver of "
		                "--data-pvc PVC; give one\n");
		return TAU_CLI_USAGE;
	}
	if (tau_cli_check_connect(&client, &o, "tau workspace", "check") != 0)
		return TAU_CLI_USAGE;
	sysns = tau_cli_system_namespace(sysns_buf, sizeof(sysns_buf), client,
	                                 o.gl.system_namespace);
	rc = TAU_CLI_FAILED;
	if (strcmp(verb, "list") == 0) {
		if (tau_kube_list_all(&obj, client, &res_workspaces, sysns, NULL) != 0) {
			fprintf(stderr, "tau workspace list: %s\n", tau_cli_api_message());
			goto out;
		}
		rc = tau_cli_ws_print_list(stdout, obj, o.fmt) == 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
		goto out;
	}
	if (tau_kube_get(&obj, client, &res_workspaces, sysns, name) != 0) {
		if (o.fmt != TAU_CLI_TABLE && strcmp(verb, "check") == 0) {
			cJSON *doc = cJSON_CreateObject();

			add_str(doc, "name", name);
			cJSON_AddBoolToObject(doc, "ready", false);
			add_str(doc, "error", tau_cli_api_message());
			print_doc(stdout, doc, o.fmt);
		}
		fprintf(stderr, "tau workspace %s: workspace %s/%s: %s\n", verb, sysns, name,
		        tau_cli_api_message());
		goto out;
	}
	if (strcmp(verb, "status") == 0) {
		rc = tau_cli_ws_print_status(stdout, obj, o.fmt) == 0 ? TAU_CLI_OK : TAU_CLI_FAILED;
		goto out;
	}
	{
		/* check */
		cJSON *doc = status_doc(obj);
		bool ready = tau_cli_ws_ready(obj), pvc_ok = true;
		const char *why = NULL;
		int csi_rc = TAU_CLI_OK;
		FILE *human = o.fmt != TAU_CLI_TABLE ? stderr : stdout;
		const cJSON *cnd;

		if (o.fmt == TAU_CLI_TABLE) {
			const char *phase = tau_json_str(obj, "status.phase");

			fprintf(stdout, "workspace %s: %s\n", name,
			        ready ? "Ready" : (phase != NULL ? phase : "no status yet"));
			cJSON_ArrayForEach(cnd, tau_json_find(obj, "status.conditions"))
			{
				const char *st = tau_json_str(cnd, "status"),
				           *ty = tau_json_str(cnd, "type");
				bool bad = ty != NULL && st != NULL &&
				           ((strcmp(ty, "DriftDetected") == 0 &&
				             strcmp(st, "True") == 0) ||
				            (strcmp(ty, "DriftDetected") != 0 &&
				             strcmp(st, "True") != 0));

				if (bad)
					fprintf(stdout, "  %s=%s %s: %s\n", ty, st,
					        tau_json_str(cnd, "reason"),
					        tau_json_str(cnd, "message"));
			}
			if (!ready && tau_json_str(obj, "status.phase") != NULL &&
			    strcmp(tau_json_str(obj, "status.phase"), "Ready") == 0)
				fprintf(stdout, "  status is for an older generation; wait for the "
				                "controller\n");
		}
		if (pvc != NULL)
			pvc_ok = check_pvc(human, doc, client,
			                   tau_json_str(obj, "status.target.resolvedNamespace"),
			                   pvc, &driver, &why);
		if (o.agg.addr != NULL && driver == NULL) {
			cJSON *rep = cJSON_CreateObject();

			/* --aggregator needs --data-pvc (checked above): pvc and why are set. */
			fprintf(human, "CSI driver of PVC %s cannot be told: %s\n",
			        pvc != NULL ? pvc : NONE, why != NULL ? why : NONE);
			add_str(rep, "driver", NULL);
			add_str(rep, "error", why);
			cJSON_AddBoolToObject(rep, "ok", false);
			cJSON_AddItemToObject(doc, "csi", rep);
			csi_rc = TAU_CLI_FAILED;
		} else if (o.agg.addr != NULL) {
			csi_rc = check_csi(human, doc, driver, &o.agg, &o.gl);
		} else if (driver != NULL) {
			csi_rc = check_csi_kube(human, doc, client, obj, driver, &o.gl);
		}
		if (o.fmt != TAU_CLI_TABLE)
			print_doc(stdout, doc, o.fmt);
		else
			cJSON_Delete(doc);
		if (csi_rc == TAU_CLI_USAGE)
			rc = TAU_CLI_USAGE;
		else
			rc = ready && pvc_ok && csi_rc == TAU_CLI_OK ? TAU_CLI_OK : TAU_CLI_FAILED;
	}
out:
	free(driver);
	cJSON_Delete(obj);
	tau_kube_client_free(client);
	return rc;
}
