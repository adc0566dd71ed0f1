/*
 * test_csi.c - who deployed each CSI driver on a node (tau/csi.h),
 * the rules the node agent and `tau storage check` share: which pods serve
 * which drivers, the add-on and self-deployment marks, disagreement, caps
 * and malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tau/csi.h"
#include "tau/error.h"
#include "tau/json.h"

#define NODE "aks-nd-1"

typedef struct problems {
	char text[80][512];
	size_t n;
	int fail_with; /* returned by the callback when not 0 */
} problems;

static int collect(void *ctx, const char *text)
{
	problems *p = ctx;

	if (p->fail_with != 0)
		return p->fail_with;
	if (p->n < 80)
		snprintf(p->text[p->n++], sizeof(p->text[0]), "%s", text);
	return 0;
}

static bool knows_csi_bar(void *ctx, const char *driver)
{
	(void)ctx;
	return strcmp(driver, "csi-bar") == 0;
}

static cJSON *parse_text(const char *text)
{
	cJSON *j = NULL;

	assert_int_equal(tau_json_parse(&j, text, strlen(text), 0), 0);
	return j;
}

static tau_csi_managed_by managed(const tau_csi_origin *o, size_t n, const char *name)
{
	const tau_csi_origin *e = tau_csi_origins_find(o, n, name);

	if (e == NULL)
		fail_msg("driver %s not found", name);
	return e->managed_by;
}

static const char PODS[] =
        "{\"items\":["
        /* AKS add-on by its addon-manager label; driver from the app label. */
        "{\"metadata\":{\"name\":\"disk-node\",\"labels\":{\"app\":\"csi-azuredisk-node\","
        "\"addonmanager.kubernetes.io/mode\":\"Reconcile\"},"
        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
        "\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"x\"}]}},"
        /* Upstream manifest, told by its user agent suffix (two-arg form). */
        "{\"metadata\":{\"name\":\"file-node\",\"labels\":{\"app\":\"csi-azurefile-node\"},"
        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
        "\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"f\","
        "\"args\":[\"--user-agent-suffix\",\"OSS-kubectl\"]}]}},"
        /* No marks: Unknown. */
        "{\"metadata\":{\"name\":\"blob-node\",\"labels\":{\"app\":\"csi-blob-node\"},"
        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},\"spec\":{\"nodeName\":\"" NODE "\"}},"
        /* A controller (not a DaemonSet pod) naming a driver: not a node pod. */
        "{\"metadata\":{\"name\":\"ctrl\",\"labels\":{\"helm.sh/chart\":\"x\"},"
        "\"ownerReferences\":[{\"kind\":\"ReplicaSet\"}]},"
        "\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"c\","
        "\"args\":[\"--drivername=ctrl.example.com\"]}]}},"
        /* A finished pod, an unscheduled pod: ignored. */
        "{\"metadata\":{\"name\":\"old\",\"labels\":{\"app\":\"csi-azuredisk-node\","
        "\"helm.sh/chart\":\"x\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
        "\"spec\":{\"nodeName\":\"" NODE "\"},\"status\":{\"phase\":\"Failed\"}},"
        "{\"metadata\":{\"name\":\"pending\",\"labels\":{\"app\":\"csi-azuredisk-node\","
        "\"helm.sh/chart\":\"x\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]}},"
        /* Another node's pod: ignored with a problem. */
        "{\"metadata\":{\"name\":\"stray\",\"labels\":{\"app\":\"csi-azuredisk-node\","
        "\"helm.sh/chart\":\"x\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
        "\"spec\":{\"nodeName\":\"aks-other-1\"}},"
        /* Registration dirs ($(VAR) expanded): domain form taken, csi-bar only when known. */
        "{\"metadata\":{\"name\":\"reg\",\"labels\":{"
        "\"app.kubernetes.io/managed-by\":\"kustomize\"}},"
        "\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"r\","
        "\"env\":[{\"name\":\"D\",\"value\":\"foo.example.com\"}],"
        "\"args\":[\"--kubelet-registration-path=/var/lib/kubelet/plugins/$(D)/csi.sock\"]},"
        "{\"name\":\"r2\",\"command\":[\"registrar\",\"--kubelet-registration-path\","
        "\"/var/lib/kubelet/plugins/csi-bar/csi.sock\"]}]}},"
        "\"not a pod\""
        "]}";

static void test_origins(void **state)
{
	cJSON *pods = parse_text(PODS);
	problems p = {0};
	tau_csi_origin *o = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tau_csi_origins_from_pods(&o, &n, pods, NODE, NULL, NULL, collect, &p), 0);
	assert_int_equal(n, 4);
	assert_string_equal(o[0].name, "disk.csi.azure.com"); /* order first seen */
	assert_int_equal(managed(o, n, "disk.csi.azure.com"), TAU_CSI_MANAGED_AKS_ADDON);
	assert_int_equal(managed(o, n, "file.csi.azure.com"), TAU_CSI_MANAGED_DEPLOYMENT);
	assert_int_equal(managed(o, n, "blob.csi.azure.com"), TAU_CSI_MANAGED_UNKNOWN);
	assert_int_equal(managed(o, n, "foo.example.com"), TAU_CSI_MANAGED_DEPLOYMENT);
	assert_null(tau_csi_origins_find(o, n, "ctrl.example.com"));
	assert_null(tau_csi_origins_find(o, n, "csi-bar"));
	assert_int_equal(p.n, 1);
	assert_string_equal(p.text[0],
	                    "pod stray runs on node aks-other-1, not on " NODE "; ignored");
	tau_csi_origins_free(o, n);

	/* A registration directory the caller knows counts; no problem callback is fine. */
	assert_int_equal(
	        tau_csi_origins_from_pods(&o, &n, pods, NODE, knows_csi_bar, NULL, NULL, NULL), 0);
	assert_int_equal(n, 5);
	assert_int_equal(managed(o, n, "csi-bar"), TAU_CSI_MANAGED_DEPLOYMENT);
	tau_csi_origins_free(o, n);

	/* Without a node name every scheduled pod counts: the stray one disagrees. */
	p.n = 0;
	assert_int_equal(tau_csi_origins_from_pods(&o, &n, pods, NULL, NULL, NULL, collect, &p), 0);
	assert_int_equal(managed(o, n, "disk.csi.azure.com"), TAU_CSI_MANAGED_UNKNOWN);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.text[0], "CSI driver disk.csi.azure.com: pod disk-node is the AKS "
	                               "add-on but pod stray is self-deployed; who deployed it "
	                               "is unknown");
	tau_csi_origins_free(o, n);

	/* A failing problem callback stops the read with its code. */
	p.fail_with = -TAU_ENOMEM;
	o = (tau_csi_origin *)&p; /* must be reset */
	assert_int_equal(tau_csi_origins_from_pods(&o, &n, pods, NODE, NULL, NULL, collect, &p),
	                 -TAU_ENOMEM);
	assert_null(o);
	assert_int_equal(n, 0);
	cJSON_Delete(pods);
}

static void test_conflicts(void **state)
{
	cJSON *pods = parse_text(
	        "[{\"metadata\":{\"name\":\"nfs-a\",\"labels\":{\"helm.sh/chart\":\"nfs\"},"
	        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},\"spec\":{\"nodeName\":\"" NODE
	        "\",\"containers\":[{\"args\":[\"--drivername=nfs.csi.k8s.io\"]}]}},"
	        "{\"metadata\":{\"name\":\"nfs-b\",\"labels\":{\"kubernetes.io/cluster-service\":"
	        "\"true\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},\"spec\":{\"nodeName\":"
	        "\"" NODE "\",\"containers\":[{\"args\":[\"--driver-name\",\"nfs.csi.k8s.io\"]}]}},"
	        "{\"metadata\":{\"name\":\"both\",\"labels\":{\"helm.sh/chart\":\"x\","
	        "\"kubernetes.azure.com/managedby\":\"aks\"},\"ownerReferences\":[{\"kind\":"
	        "\"DaemonSet\"}]},\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":[{\"args\":"
	        "[\"--drivername=x.example.com\",\"--user-agent-suffix=AKS\"]}]}}]");
	problems p = {0};
	tau_csi_origin *o = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tau_csi_origins_from_pods(&o, &n, pods, NODE, NULL, NULL, collect, &p), 0);
	assert_int_equal(n, 2);
	assert_int_equal(managed(o, n, "nfs.csi.k8s.io"), TAU_CSI_MANAGED_UNKNOWN);
	assert_int_equal(managed(o, n, "x.example.com"), TAU_CSI_MANAGED_UNKNOWN);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.text[0], "pod both carries both AKS add-on and self-deployment "
	                               "marks; who deployed it is unknown");
	assert_string_equal(p.text[1], "CSI driver nfs.csi.k8s.io: pod nfs-b is the AKS add-on but "
	                               "pod nfs-a is self-deployed; who deployed it is unknown");
	tau_csi_origins_free(o, n);
	cJSON_Delete(pods);
}

static void test_driver_cap(void **state)
{
	cJSON *pods = cJSON_CreateArray();
	problems p = {0};
	tau_csi_origin *o = NULL;
	size_t n = 0;
	char buf[512];

	(void)state;
	for (int i = 0; i < 70; i++) {
		cJSON *pod;

		snprintf(buf, sizeof(buf),
		         "{\"metadata\":{\"name\":\"p%02d\",\"ownerReferences\":[{\"kind\":"
		         "\"DaemonSet\"}]},\"spec\":{\"nodeName\":\"" NODE "\",\"containers\":"
		         "[{\"args\":[\"--drivername=d%02d.example.com\"]}]}}",
		         i, i);
		pod = parse_text(buf);
		cJSON_AddItemToArray(pods, pod);
	}
	assert_int_equal(tau_csi_origins_from_pods(&o, &n, pods, NODE, NULL, NULL, collect, &p), 0);
	assert_int_equal(n, TAU_CSI_MAX_DRIVERS);
	assert_int_equal(p.n, 6);
	assert_string_equal(p.text[0], "more than 64 CSI drivers; d64.example.com dropped");
	tau_csi_origins_free(o, n);
	cJSON_Delete(pods);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {"\"pods\"", "{\"items\":{}}", "7", "null"};
	problems p = {0};
	tau_csi_origin *o = NULL;
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *j = parse_text(bad[i]);

		assert_int_equal(
		        tau_csi_origins_from_pods(&o, &n, j, NODE, NULL, NULL, collect, &p),
		        -TAU_EINVAL);
		assert_string_equal(tau_error_last()->msg, "pod list is malformed");
		cJSON_Delete(j);
	}
	assert_int_equal(tau_csi_origins_from_pods(&o, &n, NULL, NODE, NULL, NULL, collect, &p),
	                 -TAU_EINVAL);
	assert_int_equal(p.n, 0);
	/* A list object without items, or an empty list: no drivers. */
	{
		cJSON *j = parse_text("{\"kind\":\"PodList\"}");

		assert_int_equal(
		        tau_csi_origins_from_pods(&o, &n, j, NODE, NULL, NULL, collect, &p), 0);
		assert_null(o);
		assert_int_equal(n, 0);
		cJSON_Delete(j);
	}
	assert_int_equal(tau_csi_origins_from_pods(NULL, &n, NULL, NODE, NULL, NULL, NULL, NULL),
	                 -TAU_EINVAL);
	tau_csi_origins_free(NULL, 3);
	assert_string_equal(tau_csi_managed_by_name(TAU_CSI_MANAGED_AKS_ADDON), "AKSAddon");
	assert_string_equal(tau_csi_managed_by_name(TAU_CSI_MANAGED_DEPLOYMENT), "Deployment");
	assert_string_equal(tau_csi_managed_by_name(TAU_CSI_MANAGED_UNKNOWN), "Unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_origins),
	        cmocka_unit_test(test_conflicts),
	        cmocka_unit_test(test_driver_cap),
	        cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
