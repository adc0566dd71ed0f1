/*
 * test_cli_workspace.c - `tau workspace` output from canned JSON: table
 * alignment, JSON shape, the check verdict (exit code), usage errors, and the
 * CSI verdict of `check --data-pvc --aggregator` from canned GetNode answers, and the Flex
 * rule both CSI checks share.
 */
#include "workspace.h"

#include "inventory.h"

#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include <cmocka.h>

static cJSON *parse(const char *s)
{
	cJSON *o = NULL;

	assert_int_equal(tau_json_parse(&o, s, strlen(s), 0), 0);
	return o;
}

/* Run a printer into a memory stream; returns the text (free()). */
static char *capture(int (*fn)(FILE *, const cJSON *, tau_cli_format), const cJSON *obj,
                     tau_cli_format fmt, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*rc = fn(f, obj, fmt);
	fclose(f);
	return buf;
}

#define WS_READY                                                                                   \
	"{\"metadata\":{\"name\":\"alpha\",\"namespace\":\"tau-system\",\"generation\":3},"        \
	"\"status\":{\"phase\":\"Ready\",\"observedGeneration\":3,"                                \
	"\"target\":{\"resolvedNamespace\":\"ml-alpha\"},"                                         \
	"\"queue\":{\"localQueue\":\"alpha\",\"clusterQueue\":\"alpha\"},"                         \
	"\"conditions\":[{\"type\":\"RBACReady\",\"status\":\"True\",\"reason\":"                  \
	"\"RoleBindingReady\",\"message\":\"ok\"},{\"type\":\"QueueReady\",\"status\":\"True\","   \
	"\"reason\":\"LocalQueueReady\",\"message\":\"ok\"}]}}"

static void test_list_table_alignment(void **state)
{
	(void)state;
	cJSON *list =
	        parse("{\"items\":[" WS_READY ",{\"metadata\":{\"name\":\"a-much-longer-name\"},"
	              "\"status\":{\"phase\":\"Pending\"}}]}");
	int rc;
	char *out = capture(tau_cli_ws_print_list, list, TAU_CLI_TABLE, &rc);

	assert_int_equal(rc, 0);
	assert_string_equal(out, "NAME                 PHASE     NAMESPACE   QUEUE\n"
	                         "alpha                Ready     ml-alpha    alpha\n"
	                         "a-much-longer-name   Pending   <none>      <none>\n");
	free(out);
	cJSON_Delete(list);
}

static void test_list_json_and_empty(void **state)
{
	(void)state;
	cJSON *list = parse("{\"items\":[" WS_READY "]}"), *doc = NULL,
	      *empty = parse("{\"items\":[]}");
	int rc;
	char *out = capture(tau_cli_ws_print_list, list, TAU_CLI_JSON, &rc);

	assert_int_equal(rc, 0);
	assert_int_equal(tau_json_parse(&doc, out, strlen(out), 0), 0);
	assert_string_equal(
	        tau_json_find(cJSON_GetArrayItem(tau_json_find(doc, "items"), 0), "namespace")
	                ->valuestring,
	        "ml-alpha");
	free(out);
	cJSON_Delete(doc);
	out = capture(tau_cli_ws_print_list, empty, TAU_CLI_TABLE, &rc);
	assert_string_equal(out, "No workspaces found.\n");
	free(out);
	out = capture(tau_cli_ws_print_list, list, TAU_CLI_TABLE, &rc);
	free(out);
	cJSON_Delete(list);
	cJSON_Delete(empty);
}

static void test_status_table_and_json(void **state)
{
	(void)state;
	cJSON *ws = parse(WS_READY), *doc = NULL;
	int rc;
	char *out = capture(tau_cli_ws_print_status, ws, TAU_CLI_TABLE, &rc);

	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "Phase:               Ready\n"));
	assert_non_null(strstr(out, "Namespace:           ml-alpha\n"));
	assert_non_null(strstr(out, "TYPE         STATUS   REASON             MESSAGE\n"));
	assert_non_null(strstr(out, "QueueReady   True     LocalQueueReady    ok\n"));
	free(out);
	out = capture(tau_cli_ws_print_status, ws, TAU_CLI_JSON, &rc);
	assert_int_equal(tau_json_parse(&doc, out, strlen(out), 0), 0);
	assert_string_equal(tau_json_find(doc, "phase")->valuestring, "Ready");
	assert_true(cJSON_IsTrue(tau_json_find(doc, "ready")));
	assert_int_equal(cJSON_GetArraySize(tau_json_find(doc, "conditions")), 2);
	free(out);
	cJSON_Delete(doc);
	cJSON_Delete(ws);
}

static void test_ready_verdict(void **state)
{
	(void)state;
	cJSON *ready = parse(WS_READY);
	cJSON *stale = parse("{\"metadata\":{\"name\":\"a\",\"generation\":4},"
	                     "\"status\":{\"phase\":\"Ready\",\"observedGeneration\":3}}");
	cJSON *pending = parse("{\"metadata\":{\"name\":\"a\",\"generation\":1},"
	                       "\"status\":{\"phase\":\"Pending\",\"observedGeneration\":1}}");
	cJSON *none = parse("{\"metadata\":{\"name\":\"a\",\"generation\":1}}");

	assert_true(tau_cli_ws_ready(ready));
	assert_false(tau_cli_ws_ready(stale));
	assert_false(tau_cli_ws_ready(pending));
	assert_false(tau_cli_ws_ready(none));
	cJSON_Delete(ready);
	cJSON_Delete(stale);
	cJSON_Delete(pending);
	cJSON_Delete(none);
}

static void test_csi_driver_from_pv_or_class(void **state)
{
	(void)state;
	cJSON *pvc = parse("{\"spec\":{\"storageClassName\":\"azureblob\"}}");
	cJSON *noclass = parse("{\"spec\":{\"storageClassName\":\"\"}}");
	cJSON *csi_sc = parse("{\"metadata\":{\"name\":\"azureblob\"},"
	                      "\"provisioner\":\"blob.csi.azure.com\"}");
	cJSON *intree_sc = parse("{\"provisioner\":\"kubernetes.io/azure-disk\"}");
	cJSON *bare_sc = parse("{\"metadata\":{\"name\":\"x\"}}");
	cJSON *csi_pv = parse("{\"spec\":{\"csi\":{\"driver\":\"disk.csi.azure.com\"}}}");
	cJSON *nfs_pv = parse("{\"spec\":{\"nfs\":{\"server\":\"s\",\"path\":\"/\"}}}");
	const char *why = NULL;

	assert_string_equal(tau_cli_ws_csi_driver(pvc, NULL, csi_sc, &why), "blob.csi.azure.com");
	/* The bound PV wins over the class: it is what gets mounted. */
	assert_string_equal(tau_cli_ws_csi_driver(pvc, csi_pv, csi_sc, &why), "disk.csi.azure.com");
	assert_null(tau_cli_ws_csi_driver(pvc, nfs_pv, csi_sc, &why));
	assert_non_null(strstr(why, "not a CSI volume"));
	assert_null(tau_cli_ws_csi_driver(pvc, NULL, intree_sc, &why));
	assert_non_null(strstr(why, "in-tree"));
	assert_null(tau_cli_ws_csi_driver(pvc, NULL, NULL, &why));
	assert_non_null(strstr(why, "could not be read"));
	assert_null(tau_cli_ws_csi_driver(pvc, NULL, bare_sc, &why));
	assert_non_null(strstr(why, "no provisioner"));
	assert_null(tau_cli_ws_csi_driver(noclass, NULL, NULL, &why));
	assert_non_null(strstr(why, "no storage class"));
	cJSON_Delete(pvc);
	cJSON_Delete(noclass);
	cJSON_Delete(csi_sc);
	cJSON_Delete(intree_sc);
	cJSON_Delete(bare_sc);
	cJSON_Delete(csi_pv);
	cJSON_Delete(nfs_pv);
}

/* Canned GetNode answers: gpu-a registered, gpu-b without socket, gpu-c other driver only,
 * gpu-d never reported. */
typedef struct csi_fixture {
	Tau__Inventory__V1__CsiDriver blob_ok, blob_nosock, disk;
	Tau__Inventory__V1__CsiDriver *a_drv[2], *b_drv[1], *c_drv[1];
	Tau__Inventory__V1__NodeInventory inv[3];
	Tau__Inventory__V1__NodeStatus st[4];
	Tau__Inventory__V1__GetNodeResponse resp[4];
	const Tau__Inventory__V1__GetNodeResponse *nodes[4];
} csi_fixture;

static void csi_fixture_init(csi_fixture *f)
{
	static const char *const names[] = {"gpu-a", "gpu-b", "gpu-c", "gpu-d"};
	static const Tau__Inventory__V1__CsiDriver drv0 = TAU__INVENTORY__V1__CSI_DRIVER__INIT;
	static const Tau__Inventory__V1__NodeInventory inv0 =
	        TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	static const Tau__Inventory__V1__NodeStatus st0 = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	static const Tau__Inventory__V1__GetNodeResponse resp0 =
	        TAU__INVENTORY__V1__GET_NODE_RESPONSE__INIT;

	f->blob_ok = drv0;
	f->blob_ok.name = (char *)"blob.csi.azure.com";
	f->blob_ok.in_csi_node = true;
	f->blob_ok.socket_present = true;
	f->blob_ok.probed = true;
	f->blob_ok.probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE;
	f->blob_nosock = f->blob_ok;
	f->blob_nosock.socket_present = false;
	f->disk = f->blob_ok;
	f->disk.name = (char *)"disk.csi.azure.com";
	f->a_drv[0] = &f->blob_ok;
	f->a_drv[1] = &f->disk;
	f->b_drv[0] = &f->blob_nosock;
	f->c_drv[0] = &f->disk;
	for (size_t i = 0; i < 4; i++) {
		f->st[i] = st0;
		f->st[i].name = (char *)names[i];
		f->st[i].counted = true;
		f->resp[i] = resp0;
		f->resp[i].status = &f->st[i];
		if (i < 3) {
			f->inv[i] = inv0;
			f->inv[i].node_name = (char *)names[i];
			f->resp[i].inventory = &f->inv[i];
		}
		f->nodes[i] = &f->resp[i];
	}
	f->inv[0].n_csi_drivers = 2;
	f->inv[0].csi_drivers = f->a_drv;
	f->inv[1].n_csi_drivers = 1;
	f->inv[1].csi_drivers = f->b_drv;
	f->inv[2].n_csi_drivers = 1;
	f->inv[2].csi_drivers = f->c_drv;
}

static char *print_csi(const cJSON *rep)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	tau_cli_ws_print_csi(f, rep);
	fclose(f);
	return buf;
}

static void test_csi_report_names_missing_nodes(void **state)
{
	(void)state;
	csi_fixture f;
	cJSON *rep, *n;
	char *text, *s;

	csi_fixture_init(&f);
	rep = tau_cli_ws_csi_report("blob.csi.azure.com", f.nodes, 4);
	assert_non_null(rep);
	assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(rep, "driver")),
	                    "blob.csi.azure.com");
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "eligible")), 4);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "missing")), 3);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	n = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "nodes"), 1);
	s = cJSON_PrintUnformatted(n);
	assert_string_equal(s, "{\"name\":\"gpu-b\",\"inCSINode\":true,\"socketPresent\":false,"
	                       "\"nodeKind\":null,\"managedBy\":\"Unknown\",\"supported\":true,"
	                       "\"probe\":\"notReady\",\"probeDetail\":\"node gpu-b: "
	                       "blob.csi.azure.com registered in CSINode but not answering Probe: "
	                       "its registration socket is missing\"}");
	free(s);
	text = print_csi(rep);
	assert_non_null(strstr(text, "NODE    REGISTERED   SOCKET   PROBE\n"
	                             "gpu-a   yes          yes      ready\n"
	                             "gpu-b   yes          no       notReady\n"
	                             "gpu-c   no           no       -\n"
	                             "gpu-d   no           no       -\n"));
	assert_non_null(strstr(text,
	                       "CSI driver blob.csi.azure.com: node gpu-b: blob.csi.azure.com "
	                       "registered in CSINode but not answering Probe: its "
	                       "registration socket is missing\n"));
	assert_non_null(strstr(text, "missing on 3 of 4 eligible nodes: gpu-b gpu-c gpu-d\n"));
	free(text);
	cJSON_Delete(rep);

	/* The other driver is everywhere it is listed; gpu-b and gpu-d still lack it. */
	rep = tau_cli_ws_csi_report("disk.csi.azure.com", f.nodes, 4);
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "missing")), 2);
	text = print_csi(rep);
	assert_non_null(strstr(text, "missing on 2 of 4 eligible nodes: gpu-b gpu-d\n"));
	free(text);
	cJSON_Delete(rep);
}

static void test_csi_report_ok_and_empty(void **state)
{
	(void)state;
	csi_fixture f;
	cJSON *rep;
	char *text;

	csi_fixture_init(&f);
	rep = tau_cli_ws_csi_report("blob.csi.azure.com", f.nodes, 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(rep, "missing")), 0);
	text = print_csi(rep);
	assert_non_null(strstr(text, "registered on all 1 eligible nodes\n"));
	free(text);
	cJSON_Delete(rep);

	/* No eligible node: nowhere to run, so the check fails. */
	rep = tau_cli_ws_csi_report("blob.csi.azure.com", f.nodes, 0);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	text = print_csi(rep);
	assert_non_null(strstr(text, "no eligible nodes"));
	free(text);
	cJSON_Delete(rep);
}

static void test_usage_errors_exit_2(void **state)
{
	(void)state;
	char a0[] = "workspace", a1[] = "bogus", a2[] = "check", a3[] = "-o", a4[] = "xml";
	char *v1[] = {a0, a1, NULL};
	char *v2[] = {a0, a2, NULL};
	char *v3[] = {a0, a2, a3, a4, NULL};
	char s0[] = "storage", s1[] = "check";
	char *v4[] = {s0, s1, NULL};

	assert_int_equal(tau_cli_workspace(2, v1, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(2, v2, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(4, v3, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_storage(2, v4, NULL), TAU_CLI_USAGE); /* --driver missing */
}

static void test_csi_usage_errors_exit_2(void **state)
{
	(void)state;
	char a0[] = "workspace", a1[] = "check", a2[] = "alpha", a3[] = "--aggregator",
	     a4[] = "127.0.0.1:1", a5[] = "--data-pvc", a6[] = "data", a7[] = "--insecure",
	     a8[] = "--ca-file", a9[] = "/nonexistent", l1[] = "list";
	char *no_pvc[] = {a0, a1, a2, a3, a4, NULL};
	char *both[] = {a0, a1, a2, a5, a6, a3, a4, a7, a8, a9, NULL};
	char *no_agg[] = {a0, a1, a2, a5, a6, a7, NULL};
	char *on_list[] = {a0, l1, a3, a4, NULL};

	assert_int_equal(tau_cli_workspace(5, no_pvc, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(10, both, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(6, no_agg, NULL), TAU_CLI_USAGE);
	assert_int_equal(tau_cli_workspace(4, on_list, NULL), TAU_CLI_USAGE);
	{
		char s0[] = "storage", s1[] = "check", s2[] = "--driver",
		     s3[] = "blob.csi.azure.com";
		char *st_both[] = {s0, s2, s3, a3, a4, a7, a8, a9, s1, NULL};

		/* tau storage check: --ca-file and --insecure exclude each other. */
		assert_int_equal(tau_cli_storage(9, st_both, NULL), TAU_CLI_USAGE);
		/* An empty --aggregator is refused before any request (exit 2), even with
		 * TAU_AGGREGATOR set; the kubeconfig names an API server that is not there, so
		 * getting as far as a request would exit 1. */
		char e[] = "", kc[] = "--kubeconfig", kcf[] = "/tmp/test_cli_ws_kubeconfig.XXXXXX";
		char *st_empty[] = {s0, s2, s3, kc, kcf, a3, e, s1, NULL};
		char *ws_empty[] = {a0, a1, a2, kc, kcf, a5, a6, a3, e, NULL};
		char *st_none[] = {s0, s2, s3, kc, kcf, s1, NULL};
		int fd = mkstemp(kcf);
		static const char kubeconfig[] = "apiVersion: v1\n"
		                                 "kind: Config\n"
		                                 "clusters:\n"
		                                 "- name: c\n"
		                                 "  cluster:\n"
		                                 "    server: https://127.0.0.1:1\n"
		                                 "users:\n"
		                                 "- name: u\n"
		                                 "  user:\n"
		                                 "    token: t\n"
		                                 "contexts:\n"
		                                 "- name: x\n"
		                                 "  context: {cluster: c, user: u}\n"
		                                 "current-context: x\n";

		assert_true(fd >= 0);
		assert_int_equal(write(fd, kubeconfig, sizeof(kubeconfig) - 1),
		                 (ssize_t)(sizeof(kubeconfig) - 1));
		close(fd);
		unsetenv("TAU_AGGREGATOR");
		assert_int_equal(tau_cli_storage(6, st_none, NULL),
		                 TAU_CLI_FAILED); /* got as far */
		assert_int_equal(tau_cli_storage(8, st_empty, NULL), TAU_CLI_USAGE);
		assert_int_equal(tau_cli_workspace(9, ws_empty, NULL), TAU_CLI_USAGE);
		setenv("TAU_AGGREGATOR", "127.0.0.1:1", 1);
		assert_int_equal(tau_cli_storage(8, st_empty, NULL), TAU_CLI_USAGE);
		unsetenv("TAU_AGGREGATOR");
		unlink(kcf);
	}
}

/* ---- the Flex rule: TauGrid does not support relying on the AKS-managed CSI addons on Flex or
 * other externally registered nodes.  tau_cli_csi_addon_unsupported decides it (shared by
 * `tau storage check` and `tau workspace check --data-pvc --aggregator`); the messages are
 * pinned with literals: they are what an operator reads. ---- */

#define BLOB "blob.csi.azure.com"

static void test_rule(void **state)
{
	char msg[512];

	(void)state;
	/* On AKS agent-pool nodes the addon is supported and expected. */
	assert_false(tau_cli_csi_addon_unsupported(msg, sizeof(msg), "aks-1", "AgentPool",
	                                           "AKSAddon", BLOB));
	/* A deployment-managed driver is fine anywhere; unknown provenance is not the addon. */
	assert_false(tau_cli_csi_addon_unsupported(msg, sizeof(msg), "flex-1", "Flex", "Deployment",
	                                           BLOB));
	assert_false(
	        tau_cli_csi_addon_unsupported(msg, sizeof(msg), "flex-1", "Flex", "Unknown", BLOB));
	assert_false(tau_cli_csi_addon_unsupported(msg, sizeof(msg), "flex-1", "Flex", NULL, BLOB));

	assert_true(tau_cli_csi_addon_unsupported(msg, sizeof(msg), "edge-gpu-01", "Flex",
	                                          "AKSAddon", BLOB));
	assert_string_equal(msg, "node edge-gpu-01 (Flex) relies on the AKS-managed addon for "
	                         "blob.csi.azure.com: TauGrid does not support relying on managed "
	                         "addons on Flex or other externally registered nodes; a "
	                         "deployment-managed driver is required there");
	/* Other externally registered nodes, and nodes whose kind the agent could not tell. */
	assert_true(tau_cli_csi_addon_unsupported(msg, sizeof(msg), "metal-7", "Other", "AKSAddon",
	                                          BLOB));
	assert_non_null(strstr(msg, "node metal-7 (Other) relies on the AKS-managed addon"));
	assert_true(tau_cli_csi_addon_unsupported(msg, sizeof(msg), "n-9", NULL, "AKSAddon", BLOB));
	assert_non_null(strstr(msg, "node n-9 (kind unknown) relies on the AKS-managed addon"));
}

/* GetNode answers: an agent-pool node and a Flex node, both with the driver registered. */
typedef struct flex_fixture {
	Tau__Inventory__V1__CsiDriver pool_drv, flex_drv;
	Tau__Inventory__V1__CsiDriver *pool_drvs[1], *flex_drvs[1];
	Tau__Inventory__V1__NodeInventory inv[2];
	Tau__Inventory__V1__NodeStatus st[2];
	Tau__Inventory__V1__GetNodeResponse resp[2];
	const Tau__Inventory__V1__GetNodeResponse *nodes[2];
} flex_fixture;

static void flex_fixture_init(flex_fixture *f, Tau__Inventory__V1__CsiManagedBy flex_managed_by)
{
	static const char *const names[] = {"aks-ndh100-0", "edge-gpu-01"};
	static const Tau__Inventory__V1__CsiDriver drv0 = TAU__INVENTORY__V1__CSI_DRIVER__INIT;
	static const Tau__Inventory__V1__NodeInventory inv0 =
	        TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	static const Tau__Inventory__V1__NodeStatus st0 = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	static const Tau__Inventory__V1__GetNodeResponse resp0 =
	        TAU__INVENTORY__V1__GET_NODE_RESPONSE__INIT;

	f->pool_drv = drv0;
	f->pool_drv.name = (char *)BLOB;
	f->pool_drv.in_csi_node = true;
	f->pool_drv.socket_present = true;
	f->pool_drv.managed_by = TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_AKS_ADDON;
	f->pool_drv.probed = true;
	f->pool_drv.probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE;
	f->flex_drv = f->pool_drv;
	f->flex_drv.managed_by = flex_managed_by;
	f->pool_drvs[0] = &f->pool_drv;
	f->flex_drvs[0] = &f->flex_drv;
	for (size_t i = 0; i < 2; i++) {
		f->st[i] = st0;
		f->st[i].name = (char *)names[i];
		f->st[i].counted = true;
		f->inv[i] = inv0;
		f->inv[i].node_name = (char *)names[i];
		f->inv[i].n_csi_drivers = 1;
		f->resp[i] = resp0;
		f->resp[i].status = &f->st[i];
		f->resp[i].inventory = &f->inv[i];
		f->nodes[i] = &f->resp[i];
	}
	f->inv[0].kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL;
	f->inv[0].csi_drivers = f->pool_drvs;
	f->inv[1].kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_FLEX;
	f->inv[1].csi_drivers = f->flex_drvs;
}

static int number(const cJSON *o, const char *key)
{
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static void test_report_fails_addon_on_flex_node(void **state)
{
	flex_fixture f;
	cJSON *rep;
	char *text, *s;

	(void)state;
	flex_fixture_init(&f, TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_AKS_ADDON);
	rep = tau_cli_ws_csi_report(BLOB, f.nodes, 2);
	assert_non_null(rep);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	assert_int_equal(number(rep, "eligible"), 2);
	assert_int_equal(number(rep, "missing"), 0);
	assert_int_equal(number(rep, "unsupported"), 1);
	s = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "nodes"), 0));
	assert_string_equal(s, "{\"name\":\"aks-ndh100-0\",\"inCSINode\":true,"
	                       "\"socketPresent\":true,\"nodeKind\":\"AgentPool\","
	                       "\"managedBy\":\"AKSAddon\",\"supported\":true,\"probe\":\"ready\","
	                       "\"probeDetail\":\"node aks-ndh100-0: blob.csi.azure.com answers "
	                       "Probe ready\"}");
	free(s);
	s = cJSON_PrintUnformatted(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "nodes"), 1));
	assert_string_equal(s, "{\"name\":\"edge-gpu-01\",\"inCSINode\":true,"
	                       "\"socketPresent\":true,\"nodeKind\":\"Flex\","
	                       "\"managedBy\":\"AKSAddon\",\"supported\":false,\"probe\":\"ready\","
	                       "\"probeDetail\":\"node edge-gpu-01: blob.csi.azure.com answers "
	                       "Probe ready\"}");
	free(s);
	text = print_csi(rep);
	assert_null(strstr(text, "registered on all"));
	assert_non_null(strstr(text,
	                       "CSI driver blob.csi.azure.com: node edge-gpu-01 (Flex) relies "
	                       "on the AKS-managed addon for blob.csi.azure.com: TauGrid does "
	                       "not support relying on managed addons on Flex or other "
	                       "externally registered nodes; a deployment-managed driver is "
	                       "required there\n"));
	assert_null(strstr(text, "node aks-ndh100-0"));
	free(text);
	cJSON_Delete(rep);
}

static void test_report_passes_deployment_on_flex_node(void **state)
{
	flex_fixture f;
	cJSON *rep;
	char *text;

	(void)state;
	flex_fixture_init(&f, TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_DEPLOYMENT);
	rep = tau_cli_ws_csi_report(BLOB, f.nodes, 2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	assert_int_equal(number(rep, "unsupported"), 0);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "problems")), 0);
	text = print_csi(rep);
	assert_non_null(strstr(text, "CSI driver blob.csi.azure.com: registered on all 2 eligible "
	                             "nodes\n"));
	free(text);
	cJSON_Delete(rep);
}

static void test_missing_driver_counts_once(void **state)
{
	flex_fixture f;
	cJSON *rep;

	(void)state;
	/* Not registered on the Flex node: it is missing, not also unsupported. */
	flex_fixture_init(&f, TAU__INVENTORY__V1__CSI_MANAGED_BY__CSI_MANAGED_BY_AKS_ADDON);
	f.flex_drv.in_csi_node = false;
	rep = tau_cli_ws_csi_report(BLOB, f.nodes, 2);
	assert_int_equal(number(rep, "missing"), 1);
	assert_int_equal(number(rep, "unsupported"), 0);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	cJSON_Delete(rep);
}

/*
 * The live check (issue 25): registered and socket present is not enough; the agent's CSI
 * Identity Probe decides.  Not answering fails naming node and driver; no agent data, a stale
 * report or no live check is unknown: printed, never a silent pass.
 */
static void test_csi_report_live_probe(void **state)
{
	csi_fixture f;
	cJSON *rep;
	char *text, detail[512];
	const char *v;

	(void)state;
	csi_fixture_init(&f);
	/* gpu-a's blob driver registered and socket present, but Probe timed out. */
	f.blob_ok.probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN;
	f.blob_ok.probe_error = (char *)"Probe: DEADLINE_EXCEEDED after 2000 ms";
	rep = tau_cli_ws_csi_report("blob.csi.azure.com", f.nodes, 1);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(rep, "ok")));
	assert_int_equal(number(rep, "missing"), 0);
	assert_int_equal(number(rep, "probeFailed"), 1);
	text = print_csi(rep);
	assert_non_null(strstr(text,
	                       "CSI driver blob.csi.azure.com: node gpu-a: blob.csi.azure.com "
	                       "registered in CSINode but not answering Probe: Probe: "
	                       "DEADLINE_EXCEEDED after 2000 ms\n"));
	assert_null(strstr(text, "registered on all"));
	free(text);
	cJSON_Delete(rep);

	/* Probe answered not ready. */
	f.blob_ok.probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE;
	f.blob_ok.probe_error = NULL;
	v = tau_cli_csi_probe_verdict(detail, sizeof(detail), "gpu-a", "blob.csi.azure.com",
	                              f.nodes[0]);
	assert_string_equal(v, "notReady");
	assert_string_equal(detail, "node gpu-a: blob.csi.azure.com registered in CSINode but not "
	                            "answering Probe: Probe answered not ready");

	/* An agent without the live check: unknown, printed, not failed. */
	f.blob_ok.probed = false;
	rep = tau_cli_ws_csi_report("blob.csi.azure.com", f.nodes, 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rep, "ok")));
	assert_int_equal(number(rep, "probeUnknown"), 1);
	text = print_csi(rep);
	assert_non_null(strstr(text, "live Probe unknown on 1 of 1 nodes: gpu-a (no agent answer: "
	                             "not counted as passing)\n"));
	free(text);
	cJSON_Delete(rep);

	/* A stale report, no inventory, no answer for the node at all: unknown. */
	f.blob_ok.probed = true;
	f.blob_ok.probe_ready = TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE;
	f.st[0].stale = true;
	v = tau_cli_csi_probe_verdict(detail, sizeof(detail), "gpu-a", "blob.csi.azure.com",
	                              f.nodes[0]);
	assert_string_equal(v, "unknown");
	assert_non_null(strstr(detail, "node gpu-a: its agent's last report is stale"));
	v = tau_cli_csi_probe_verdict(detail, sizeof(detail), "gpu-d", "blob.csi.azure.com",
	                              f.nodes[3]);
	assert_string_equal(v, "unknown");
	assert_string_equal(detail, "node gpu-d: no agent data: the live Probe of "
	                            "blob.csi.azure.com is unknown");
	v = tau_cli_csi_probe_verdict(detail, sizeof(detail), "gpu-x", "blob.csi.azure.com", NULL);
	assert_string_equal(v, "unknown");
	/* The agent does not list it in CSINode (its view may lag the API's). */
	v = tau_cli_csi_probe_verdict(detail, sizeof(detail), "gpu-c", "blob.csi.azure.com",
	                              f.nodes[2]);
	assert_string_equal(v, "unknown");
	f.st[0].stale = false;
	v = tau_cli_csi_probe_verdict(detail, sizeof(detail), "gpu-a", "blob.csi.azure.com",
	                              f.nodes[0]);
	assert_string_equal(v, "ready");
}

/* A `tau storage check` doc as the Kubernetes side leaves it: two registered nodes. */
static cJSON *storage_doc(void)
{
	cJSON *doc = NULL;
	const char *json = "{\"driver\":\"blob.csi.azure.com\",\"nodes\":["
	                   "{\"name\":\"gpu-a\",\"registered\":true,\"nodeKind\":\"AgentPool\","
	                   "\"managedBy\":\"Deployment\",\"supported\":true},"
	                   "{\"name\":\"gpu-b\",\"registered\":true,\"nodeKind\":\"AgentPool\","
	                   "\"managedBy\":\"Deployment\",\"supported\":true}],\"problems\":[]}";

	assert_int_equal(tau_json_parse(&doc, json, strlen(json), 0), 0);
	return doc;
}

/* The same, as after an aggregator was asked (probes set by the test). */
static cJSON *checked_doc(void)
{
	cJSON *doc = storage_doc();

	cJSON_AddBoolToObject(cJSON_AddObjectToObject(doc, "liveProbe"), "checked", true);
	return doc;
}

static char *print_storage(const cJSON *doc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	tau_cli_csi_print(f, doc, "none");
	fclose(f);
	return buf;
}

static void set_probe(cJSON *doc, int i, const char *probe, const char *detail)
{
	cJSON *n = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "nodes"), i);

	cJSON_AddStringToObject(n, "probe", probe);
	cJSON_AddStringToObject(n, "probeDetail", detail);
}

/* tau storage check with the live probe: a driver not answering fails naming node and driver;
 * unknown is printed; without an aggregator the output says the probe was not checked. */
static void test_storage_check_live_probe(void **state)
{
	cJSON *doc = storage_doc(), *live;
	char *text;

	(void)state;
	/* No aggregator named anywhere: not checked, said so, the registration verdict stands. */
	unsetenv("TAU_AGGREGATOR");
	assert_int_equal(tau_cli_csi_live_probe(doc, "blob.csi.azure.com", NULL, NULL), 0);
	live = cJSON_GetObjectItem(doc, "liveProbe");
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(live, "checked")));
	assert_true(tau_cli_csi_finish(doc));
	text = print_storage(doc);
	assert_non_null(strstr(text, "NODE    REGISTERED   KIND        MANAGED-BY\n"));
	assert_non_null(strstr(text, "CSI driver blob.csi.azure.com: live Probe not checked: no "
	                             "aggregator to ask for the agents' CSI Identity Probe (give "
	                             "--aggregator ADDR or set TAU_AGGREGATOR)\n"));
	assert_non_null(strstr(text, "blob.csi.azure.com is registered on all 2 eligible nodes\n"));
	free(text);
	cJSON_Delete(doc);

	/* Checked: gpu-a ready, gpu-b not answering: the check fails naming gpu-b. */
	doc = checked_doc();
	set_probe(doc, 0, "ready", "node gpu-a: blob.csi.azure.com answers Probe ready");
	set_probe(doc, 1, "notReady",
	          "node gpu-b: blob.csi.azure.com registered in CSINode but not answering Probe: "
	          "no answer");
	assert_false(tau_cli_csi_finish(doc));
	assert_int_equal(number(doc, "probeFailed"), 1);
	assert_int_equal(number(doc, "missing"), 0);
	text = print_storage(doc);
	assert_non_null(strstr(text, "NODE    REGISTERED   KIND        MANAGED-BY   PROBE\n"
	                             "gpu-a   yes          AgentPool   Deployment   ready\n"
	                             "gpu-b   yes          AgentPool   Deployment   notReady\n"));
	assert_non_null(strstr(text,
	                       "CSI driver blob.csi.azure.com: node gpu-b: blob.csi.azure.com "
	                       "registered in CSINode but not answering Probe: no answer\n"));
	assert_non_null(strstr(text, "registered on all 2 eligible nodes, but not answering Probe "
	                             "on every one\n"));
	free(text);
	cJSON_Delete(doc);

	/* Unknown (no agent data): passes the registration check but is printed. */
	doc = checked_doc();
	set_probe(doc, 0, "ready", "ok");
	set_probe(doc, 1, "unknown", "node gpu-b: no agent data");
	assert_true(tau_cli_csi_finish(doc));
	assert_int_equal(number(doc, "probeUnknown"), 1);
	text = print_storage(doc);
	assert_non_null(strstr(text, "live Probe unknown on 1 of 2 nodes: gpu-b (no agent answer: "
	                             "not counted as passing)\n"));
	free(text);
	cJSON_Delete(doc);

	/* An aggregator that cannot be reached: every probe unknown, with the reason. */
	doc = storage_doc();
	{
		const tau_cli_aggregator_opts unreachable = {"127.0.0.1:1", NULL, true};

		assert_int_equal(
		        tau_cli_csi_live_probe(doc, "blob.csi.azure.com", &unreachable, NULL), 0);
	}
	live = cJSON_GetObjectItem(doc, "liveProbe");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(live, "checked")));
	assert_non_null(
	        strstr(tau_json_str(live, "reason"), "aggregator 127.0.0.1:1 cannot answer"));
	assert_true(tau_cli_csi_finish(doc));
	assert_int_equal(number(doc, "probeUnknown"), 2);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_list_table_alignment),
	        cmocka_unit_test(test_list_json_and_empty),
	        cmocka_unit_test(test_status_table_and_json),
	        cmocka_unit_test(test_ready_verdict),
	        cmocka_unit_test(test_csi_driver_from_pv_or_class),
	        cmocka_unit_test(test_csi_report_names_missing_nodes),
	        cmocka_unit_test(test_csi_report_ok_and_empty),
	        cmocka_unit_test(test_csi_report_live_probe),
	        cmocka_unit_test(test_storage_check_live_probe),
	        cmocka_unit_test(test_usage_errors_exit_2),
	        cmocka_unit_test(test_csi_usage_errors_exit_2),
	        cmocka_unit_test(test_rule),
	        cmocka_unit_test(test_report_fails_addon_on_flex_node),
	        cmocka_unit_test(test_report_passes_deployment_on_flex_node),
	        cmocka_unit_test(test_missing_driver_counts_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
