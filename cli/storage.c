/*
 * storage.c - `tau storage check --driver NAME [--selector SEL]`: is a CSI
 * driver registered on every eligible node, and usable there?
 *
 * The one idea: registration is what the kubelet wrote into each node's
 * CSINode object (the same evidence as `kubectl get csinode NODE`), read
 * with libtau's client.  Eligible nodes are the Ready, schedulable nodes
 * matching --selector (default: every node labelled tau.azure.com/gpu-class).
 * A node without a CSINode object, or whose CSINode lacks the driver, fails
 * the check (exit 1); no eligible node at all fails it too.
 *
 * The Flex rule of the reference: TauGrid does not support relying on the
 * AKS-managed CSI addons on Flex or other externally registered nodes (any
 * node that is not an AKS agent-pool node).  On such a node the check reads
 * the pods there and decides who deployed the driver exactly as the node
 * agent does (libtau's tau/node_kind.h and tau/csi.h: node kind, pod
 * labels and arguments); a driver that is the AKS-managed addon fails the
 * check, naming the node.
 *
 * Registration is not liveness: a CSINode entry can outlive its driver.  With
 * an aggregator (--aggregator or TAU_AGGREGATOR) the check also reads each
 * registered node's agent's live CSI Identity Probe (GetNode's inventory): a
 * driver not answering fails the check naming node and driver; a node whose
 * agent cannot tell is printed as unknown, never passed silently.
 */
#include "workspace.h"

#include "globalopts.h"
#include "output.h"
#include "inventory.h"

#include "tau/csi.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/node_kind.h"
#include "tau/nodefacts.h"

#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const tau_kube_resource res_csidrivers = {"storage.k8s.io", "v1", "csidrivers", false};

#define DEFAULT_SELECTOR "tau.azure.com/gpu-class"
#define STORAGE_COLS     5

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
		const char *n = tau_json_str(d, "name");

		if (n != NULL && strcmp(n, driver) == 0)
			return true;
	}
	return false;
}

bool tau_cli_csi_addon_unsupported(char *msg, size_t cap, const char *node, const char *node_kind,
                                   const char *managed_by, const char *driver)
{
	if (managed_by == NULL || strcmp(managed_by, "AKSAddon") != 0 ||
	    (node_kind != NULL && strcmp(node_kind, "AgentPool") == 0))
		return false;
	snprintf(msg, cap,
	         "node %s (%s) relies on the AKS-managed addon for %s: TauGrid does not support "
	         "relying on managed addons on Flex or other externally registered nodes; a "
	         "deployment-managed driver is required there",
	         node, node_kind != NULL ? node_kind : "kind unknown", driver);
	return true;
}

static bool csinode_knows(void *csinode, const char *driver)
{
	return csinode != NULL && csinode_has(csinode, driver);
}

/*
 * Who deployed `driver` on this node and what kind of node it is, read as the node agent reads
 * them (Node, CSINode, the pods on the node).  Pods are listed only where it matters: on a node
 * that is not an AKS agent-pool node.  *kind and *managed_by get static names.
 * Returns 0, or <0 when the pods cannot be listed or read (error set).
 */
static int driver_origin(tau_kube_client *client, const cJSON *node, const char *name,
                         const cJSON *csinode, const char *driver, const char **kind,
                         const char **managed_by)
{
	tau_node_kind k = tau_node_kind_of(node);
	tau_kube_list_options lo = {0};
	tau_csi_origin *origins = NULL;
	const tau_csi_origin *o;
	size_t n = 0;
	cJSON *pods = NULL;
	char field[300];
	int rc;

	*kind = tau_node_kind_name(k);
	*managed_by = NULL;
	if (k == TAU_NODE_KIND_AGENT_POOL)
		return 0;
	snprintf(field, sizeof(field), "spec.nodeName=%s", name);
	lo.field_selector = field;
	rc = tau_kube_list_all(&pods, client, &tau_kube_res_pods, NULL, &lo);
	if (rc == 0)
		rc = tau_csi_origins_from_pods(&origins, &n, pods, name, csinode_knows,
		                               (void *)(uintptr_t)csinode, NULL, NULL);
	if (rc == 0) {
		o = tau_csi_origins_find(origins, n, driver);
		*managed_by = tau_csi_managed_by_name(o != NULL ? o->managed_by
		                                                : TAU_CSI_MANAGED_UNKNOWN);
	}
	tau_csi_origins_free(origins, n);
	cJSON_Delete(pods);
	return rc;
}

int tau_cli_csi_check_nodes(cJSON *doc, tau_kube_client *client, const cJSON *items,
                            const char *driver, const char *cmd)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
	cJSON *problems = cJSON_GetObjectItemCaseSensitive(doc, "problems");
	const cJSON *n;

	if (arr == NULL)
		arr = cJSON_AddArrayToObject(doc, "nodes");
	if (problems == NULL)
		problems = cJSON_AddArrayToObject(doc, "problems");
	if (arr == NULL || problems == NULL) {
		fprintf(stderr, "%s: out of memory\n", cmd);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(n, items)
	{
		const char *name = tau_json_str(n, "metadata.name"), *kind = NULL, *mb = NULL;
		cJSON *csinode = NULL, *o;
		const cJSON *seen;
		char why[512];
		bool has, unsupported = false, dup = false;

		if (name == NULL || !node_eligible(n))
			continue;
		cJSON_ArrayForEach(seen, arr) dup =
		        dup || strcmp(tau_json_str(seen, "name"), name) == 0;
		if (dup)
			continue; /* matched by two selectors (two flavors) */
		if (tau_kube_get(&csinode, client, &tau_kube_res_csinodes, NULL, name) != 0)
			csinode = NULL;
		has = csinode != NULL && csinode_has(csinode, driver);
		if (driver_origin(client, n, name, csinode, driver, &kind, &mb) < 0) {
			const tau_kube_api_error *e = tau_kube_api_error_last();

			fprintf(stderr, "%s: node %s: cannot tell who deployed %s there: %s\n", cmd,
			        name, driver,
			        e->http_code != 0 ? e->message : tau_error_last()->msg);
			cJSON_Delete(csinode);
			return -TAU_EIO;
		}
		cJSON_Delete(csinode);
		if (has &&
		    tau_cli_csi_addon_unsupported(why, sizeof(why), name, kind, mb, driver)) {
			unsupported = true;
			cJSON_AddItemToArray(problems, cJSON_CreateString(why));
		}
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddBoolToObject(o, "registered", has);
		cJSON_AddItemToObject(o, "nodeKind",
		                      kind != NULL ? cJSON_CreateString(kind) : cJSON_CreateNull());
		cJSON_AddItemToObject(o, "managedBy",
		                      mb != NULL ? cJSON_CreateString(mb) : cJSON_CreateNull());
		cJSON_AddBoolToObject(o, "supported", !unsupported);
		cJSON_AddItemToArray(arr, o);
	}
	return 0;
}

bool tau_cli_csi_finish(cJSON *doc)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "nodes"), *n;
	size_t eligible = 0, missing = 0, unsupported = 0;
	bool ok;

	if (cJSON_GetObjectItemCaseSensitive(doc, "problems") == NULL)
		cJSON_AddArrayToObject(doc, "problems");
	cJSON_ArrayForEach(n, arr)
	{
		eligible++;
		missing += !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "registered"));
		unsupported += !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "supported"));
	}
	ok = eligible > 0 && missing == 0 && unsupported == 0 && tau_cli_csi_probe_count(doc) == 0;
	cJSON_AddNumberToObject(doc, "eligible", (double)eligible);
	cJSON_AddNumberToObject(doc, "missing", (double)missing);
	cJSON_AddNumberToObject(doc, "unsupported", (double)unsupported);
	cJSON_AddBoolToObject(doc, "ok", ok);
	return ok;
}

void tau_cli_csi_print(FILE *out, const cJSON *doc, const char *none)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "nodes"), *n;
	const char *driver = tau_json_str(doc, "driver");
	size_t rows = 1, eligible = (size_t)cJSON_GetArraySize(arr), missing = 0;
	const char **cells = calloc((eligible + 1) * STORAGE_COLS, sizeof(*cells));
	static const char *const heads[STORAGE_COLS] = {"NODE", "REGISTERED", "KIND", "MANAGED-BY",
	                                                "PROBE"};
	const cJSON *live = cJSON_GetObjectItemCaseSensitive(doc, "liveProbe");
	/* The PROBE column only when an aggregator was asked. */
	int cols = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(live, "checked"))
	                   ? STORAGE_COLS
	                   : STORAGE_COLS - 1;

	if (cells == NULL)
		return;
	memcpy(cells, heads, sizeof(heads));
	cJSON_ArrayForEach(n, arr)
	{
		bool has = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "registered"));
		const char *kind = tau_json_str(n, "nodeKind"), *mb = tau_json_str(n, "managedBy");
		const char *probe = tau_json_str(n, "probe");

		missing += !has;
		cells[rows * cols] = tau_json_str(n, "name");
		cells[rows * cols + 1] = has ? "yes" : "no";
		cells[rows * cols + 2] = kind != NULL ? kind : "Unknown";
		cells[rows * cols + 3] = mb != NULL ? mb : "-";
		if (cols == STORAGE_COLS)
			cells[rows * cols + 4] = probe != NULL ? probe : "-";
		rows++;
	}
	if (rows > 1)
		tau_cli_print_table(out, cells, rows, (size_t)cols);
	free(cells);
	if (eligible > 0)
		tau_cli_csi_print_probe(out, doc);
	if (eligible == 0)
		fprintf(out, "%s\n", none);
	else if (missing == 0 &&
	         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "problems")) == 0)
		fprintf(out, "%s is registered on all %zu eligible nodes%s\n", driver, eligible,
		        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "ok"))
		                ? ""
		                : ", but not answering Probe on every one");
	else if (missing > 0)
		fprintf(out, "%s is missing on %zu of %zu eligible nodes\n", driver, missing,
		        eligible);
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "problems"))
	{
		if (cJSON_IsString(n))
			fprintf(out, "%s\n", n->valuestring);
	}
}

int tau_cli_csi_live_probe(cJSON *doc, const char *driver, const tau_cli_aggregator_opts *a,
                           const tau_cli_globals *g)
{
	cJSON *live = cJSON_CreateObject(), *n;
	tau_rpc_channel *ch = NULL;
	const char *target = NULL;
	char why[1024] = "";
	bool reachable = true;

	if (live == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_DeleteItemFromObjectCaseSensitive(doc, "liveProbe");
	cJSON_AddItemToObject(doc, "liveProbe", live);
	if (tau_cli_aggregator_addr(a) == NULL) {
		cJSON_AddBoolToObject(live, "checked", false);
		cJSON_AddStringToObject(live, "reason",
		                        "no aggregator to ask for the agents' CSI Identity "
		                        "Probe " TAU_CLI_AGGREGATOR_HINT);
		return 0;
	}
	if (tau_cli_aggregator_channel(&ch, &target, a, g) < 0) {
		fprintf(stderr, "tau storage check: %s\n", tau_error_last()->msg);
		return -TAU_EINVAL;
	}
	cJSON_AddBoolToObject(live, "checked", true);
	cJSON_AddStringToObject(live, "aggregator", target);
	cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(doc, "nodes"))
	{
		Tau__Inventory__V1__GetNodeRequest req = TAU__INVENTORY__V1__GET_NODE_REQUEST__INIT;
		ProtobufCMessage *resp = NULL;
		tau_rpc_status status = {0};
		const char *name = tau_json_str(n, "name"), *v;
		char detail[1400];

		if (name == NULL ||
		    !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "registered")))
			continue;
		if (!reachable) {
			snprintf(detail, sizeof(detail),
			         "node %s: the live Probe of %s is unknown: %s", name, driver, why);
			v = TAU_CLI_PROBE_UNKNOWN;
		} else {
			req.name = (char *)name;
			if (tau_rpc_unary(&resp, ch, TAU_CLI_QUERY "GetNode", &req.base,
			                  &tau__inventory__v1__get_node_response__descriptor,
			                  tau_cli_rpc_timeout_ms(g, 10000), &status) < 0 &&
			    status.code != TAU_RPC_NOT_FOUND) {
				/* The aggregator cannot answer: every probe is unknown, said once.
				 */
				snprintf(why, sizeof(why),
				         "aggregator %.200s cannot answer GetNode: %s: %.600s",
				         target, tau_rpc_code_name(status.code),
				         status.message[0] ? status.message
				                           : tau_error_last()->msg);
				cJSON_AddStringToObject(live, "reason", why);
				reachable = false;
				snprintf(detail, sizeof(detail),
				         "node %s: the live Probe of %s is unknown: %s", name,
				         driver, why);
				v = TAU_CLI_PROBE_UNKNOWN;
			} else {
				v = tau_cli_csi_probe_verdict(
				        detail, sizeof(detail), name, driver,
				        (const Tau__Inventory__V1__GetNodeResponse *)resp);
			}
		}
		tau_rpc_message_free(resp);
		cJSON_DeleteItemFromObjectCaseSensitive(n, "probe");
		cJSON_DeleteItemFromObjectCaseSensitive(n, "probeDetail");
		cJSON_AddStringToObject(n, "probe", v);
		cJSON_AddStringToObject(n, "probeDetail", detail);
	}
	tau_rpc_channel_free(ch);
	return 0;
}

static void storage_usage(FILE *out)
{
	fputs("Usage: tau storage check --driver NAME [--selector SEL] [--aggregator ADDR\n"
	      "                         [--ca-file F | --insecure]] [-o table|json|yaml]\n"
	      "  Checks that the CSI driver is registered (CSINode) on every Ready, schedulable\n"
	      "  node matching SEL (default: nodes labelled " DEFAULT_SELECTOR "), and that no\n"
	      "  Flex or other externally registered node relies on the AKS-managed addon for it\n"
	      "  (a deployment-managed driver is required there). With an aggregator (ADDR, or\n"
	      "  env TAU_AGGREGATOR) it also asks each node's agent's live CSI Identity Probe: a\n"
	      "  driver registered but not answering fails the check; a node without agent data\n"
	      "  is reported as unknown.\n",
	      out);
}

int tau_cli_storage(int argc, char **argv, const tau_cli_globals *g)
{
	enum { O_DRIVER = 256, O_SEL };
	static const struct option lopts[] = {
	        TAU_CLI_GLOBAL_LONGOPTS{"output", required_argument, NULL, 'o'},
	        {"driver", required_argument, NULL, O_DRIVER},
	        {"selector", required_argument, NULL, O_SEL},
	        TAU_CLI_AGGREGATOR_LONGOPTS{NULL, 0, NULL, 0},
	};
	static const tau_cli_optspec optspec = {"tau storage", "ho:", lopts, storage_usage,
	                                        .take = NULL};
	const char *driver = NULL, *sel = DEFAULT_SELECTOR;
	const tau_cli_keep keep[] = {{O_DRIVER, .arg = &driver}, {O_SEL, .arg = &sel}, {0}};
	tau_cli_opts o;
	tau_kube_client *client = NULL;
	tau_kube_list_options lo = {0};
	cJSON *nodes = NULL, *doc = NULL, *drv = NULL;
	char none[300];
	bool ok;
	int exit_code, rc = TAU_CLI_USAGE;

	if ((exit_code = tau_cli_parse(&o, g, argc, argv, &optspec, keep, NULL)) >= 0)
		return exit_code;
	if (optind + 1 != argc || strcmp(argv[optind], "check") != 0 || driver == NULL ||
	    driver[0] == '\0') {
		storage_usage(stderr);
		return TAU_CLI_USAGE;
	}
	if (tau_cli_check_connect(&client, &o, "tau storage", "check") != 0)
		goto out;
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
	if (tau_cli_csi_check_nodes(doc, client, cJSON_GetObjectItem(nodes, "items"), driver,
	                            "tau storage check") < 0)
		goto out;
	if (tau_cli_csi_live_probe(doc, driver, &o.agg, &o.gl) < 0) {
		rc = TAU_CLI_USAGE;
		goto out;
	}
	ok = tau_cli_csi_finish(doc);
	if (o.fmt != TAU_CLI_TABLE) {
		if (tau_cli_doc_print(stdout, doc, o.fmt) < 0) {
			fprintf(stderr, "tau storage check: %s\n", tau_error_last()->msg);
			rc = TAU_CLI_FAILED;
			goto out;
		}
	} else {
		snprintf(none, sizeof(none), "no eligible node matches %s", sel);
		tau_cli_csi_print(stdout, doc, none);
	}
	rc = ok ? TAU_CLI_OK : TAU_CLI_FAILED;
out:
	cJSON_Delete(drv);
	cJSON_Delete(doc);
	cJSON_Delete(nodes);
	tau_kube_client_free(client);
	return rc;
}
