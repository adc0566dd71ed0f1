/*
 * Unit tests of the agent inventory: Node / CSINode / pod JSON -> inventory
 * for the fixtures in tests/fixtures/kube (expected values read off those
 * files by hand), node-kind table, consistency checks against host probes,
 * caps, malformed input, the stable JSON form and the digest.
 */
#include "hostprobe.h"
#include "inventory.h"

#include "tau/error.h"
#include "tau/json.h"

#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#define ND_NAME  "aks-ndh100-35817294-vmss000000"
#define ND_UID   "3f2a6c1e-9b7d-4e5a-8c21-7d9e0b4f6a11"
#define NC_NAME  "aks-nca100-41729305-vmss000002"
#define FLEX_UID "e7f8a9b0-c1d2-4e3f-a4b5-c6d7e8f9a0b1"

/* -------------------------------------------------------------- helpers */

static cJSON *parse_text(const char *text)
{
	cJSON *root = NULL;

	assert_int_equal(tau_json_parse(&root, text, strlen(text), 0), 0);
	return root;
}

static cJSON *load_fixture(const char *name)
{
	char path[1024];
	char *buf;
	long len;
	cJSON *root;
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/fixtures/kube/%s", TAU_SOURCE_DIR, name);
	f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open %s: %s", path, strerror(errno));
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	buf = malloc((size_t)len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	root = NULL;
	assert_int_equal(tau_json_parse(&root, buf, (size_t)len, 0), 0);
	free(buf);
	return root;
}

/* Build an inventory from a Node fixture and, optionally, its CSINode fixture. */
static void inventory_from_fixtures(tau_agent_inventory *inv, const char *node_file,
                                    const char *csinode_file)
{
	cJSON *node = load_fixture(node_file);

	tau_agent_inventory_init(inv);
	assert_int_equal(tau_agent_inventory_from_node(inv, node), 0);
	cJSON_Delete(node);
	if (csinode_file != NULL) {
		cJSON *csinode = load_fixture(csinode_file);

		assert_int_equal(tau_agent_inventory_apply_csinode(inv, csinode), 0);
		cJSON_Delete(csinode);
	}
}

/* Compact JSON of the whole inventory (member NULL) or one top-level member. */
static char *json_of(const tau_agent_inventory *inv, const char *member)
{
	cJSON *root = NULL;
	char *text = NULL;

	assert_int_equal(tau_agent_inventory_to_json(&root, inv), 0);
	if (member != NULL) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, member);

		assert_non_null(m);
		text = cJSON_PrintUnformatted(m);
	} else {
		text = cJSON_PrintUnformatted(root);
	}
	cJSON_Delete(root);
	assert_non_null(text);
	return text;
}

static void assert_json(const tau_agent_inventory *inv, const char *member, const char *want)
{
	char *got = json_of(inv, member);

	if (strcmp(got, want) != 0)
		fail_msg("JSON %s differs\n got: %s\nwant: %s", member ? member : "(all)", got,
		         want);
	free(got);
}

static bool has_problem(const tau_agent_inventory *inv, const char *text)
{
	for (size_t i = 0; i < inv->problems.n; i++)
		if (strcmp(inv->problems.items[i], text) == 0)
			return true;
	return false;
}

static void dump_problems(const tau_agent_inventory *inv)
{
	for (size_t i = 0; i < inv->problems.n; i++)
		print_message("problem: %s\n", inv->problems.items[i]);
}

static void assert_problems(const tau_agent_inventory *inv, size_t n)
{
	if (inv->problems.n != n) {
		dump_problems(inv);
		fail_msg("%zu problems, want %zu", inv->problems.n, n);
	}
}

static void probe_add_socket(tau_agent_host_probe *p, const char *driver,
                             tau_agent_socket_state state)
{
	tau_agent_driver_socket *grown =
	        realloc(p->sockets, (p->n_sockets + 1) * sizeof(*p->sockets));

	assert_non_null(grown);
	p->sockets = grown;
	p->sockets[p->n_sockets].driver = strdup(driver);
	assert_non_null(p->sockets[p->n_sockets].driver);
	p->sockets[p->n_sockets].state = state;
	p->n_sockets++;
}

/* A hand-made probe: device counts as given, NVML off. */
static void fake_probe(tau_agent_host_probe *p, int64_t dev_nodes, int64_t rdma_total,
                       int64_t rdma_up)
{
	tau_agent_host_probe_init(p);
	p->gpu_device_nodes = dev_nodes;
	p->rdma_ports_total = rdma_total;
	p->rdma_ports_up = rdma_up;
	p->nvml_note = strdup("NVML disabled by TAU_AGENT_NVML=off");
	assert_non_null(p->nvml_note);
}

static const char *const ND_LABELS =
        "{\"agentpool\":\"ndh100\",\"beta.kubernetes.io/arch\":\"amd64\","
        "\"beta.kubernetes.io/instance-type\":\"Standard_ND96isr_H100_v5\","
        "\"beta.kubernetes.io/os\":\"linux\","
        "\"failure-domain.beta.kubernetes.io/region\":\"eastus\","
        "\"failure-domain.beta.kubernetes.io/zone\":\"0\","
        "\"feature.node.kubernetes.io/pci-10de.present\":\"true\","
        "\"feature.node.kubernetes.io/pci-15b3.present\":\"true\","
        "\"kubernetes.azure.com/accelerator\":\"nvidia\","
        "\"kubernetes.azure.com/agentpool\":\"ndh100\","
        "\"kubernetes.azure.com/cluster\":\"MC_rg-tau-gpu_aks-tau_eastus\","
        "\"kubernetes.azure.com/mode\":\"user\","
        "\"kubernetes.azure.com/node-image-version\":\"AKSUbuntu-2204gen2containerd-202510.03."
        "1\","
        "\"kubernetes.azure.com/nodepool-type\":\"VirtualMachineScaleSets\","
        "\"kubernetes.azure.com/os-sku\":\"Ubuntu\",\"kubernetes.azure.com/role\":\"agent\","
        "\"kubernetes.azure.com/storageprofile\":\"managed\","
        "\"kubernetes.azure.com/storagetier\":\"Premium_LRS\",\"kubernetes.io/arch\":\"amd64\","
        "\"kubernetes.io/hostname\":\"aks-ndh100-35817294-vmss000000\","
        "\"kubernetes.io/os\":\"linux\",\"kubernetes.io/role\":\"agent\","
        "\"node-role.kubernetes.io/agent\":\"\","
        "\"node.kubernetes.io/instance-type\":\"Standard_ND96isr_H100_v5\","
        "\"nvidia.com/gpu.compute.major\":\"9\",\"nvidia.com/gpu.compute.minor\":\"0\","
        "\"nvidia.com/gpu.count\":\"8\",\"nvidia.com/gpu.family\":\"hopper\","
        "\"nvidia.com/gpu.memory\":\"81559\","
        "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\","
        "\"tau.azure.com/gpu-class\":\"h100-ib\",\"topology.disk.csi.azure.com/zone\":\"\","
        "\"topology.kubernetes.io/region\":\"eastus\",\"topology.kubernetes.io/zone\":\"0\"}";

static int setup_nvml_off(void **state)
{
	(void)state;
	return setenv(TAU_AGENT_NVML_ENV, "off", 1);
}

/* --------------------------------------------------------------- fixtures */

static void test_nd_h100_node(void **state)
{
	tau_agent_inventory inv;

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	assert_string_equal(inv.node_name, ND_NAME);
	assert_string_equal(inv.node_uid, ND_UID);
	assert_string_equal(inv.resource_version, "48213377");
	assert_string_equal(inv.provider_id,
	                    "azure:///subscriptions/0b6f2c44-7d1e-4a3b-9c55-2f1e8d7a6b90/"
	                    "resourceGroups/mc_rg-tau-gpu_aks-tau_eastus/providers/"
	                    "Microsoft.Compute/virtualMachineScaleSets/aks-ndh100-35817294-vmss/"
	                    "virtualMachines/0");
	assert_string_equal(inv.gpu_class, "h100-ib");
	assert_string_equal(inv.os, "linux");
	assert_int_equal(inv.kind, TAU_NODE_KIND_AGENT_POOL);
	assert_int_equal(inv.ready, TAU_AGENT_TRUE);
	assert_int_equal(inv.schedulable, TAU_AGENT_TRUE);
	assert_int_equal(inv.deleting, TAU_AGENT_FALSE);
	assert_int_equal(inv.n_labels, 34);
	assert_string_equal(tau_agent_inventory_label(&inv, "topology.disk.csi.azure.com/zone"),
	                    "");
	assert_null(tau_agent_inventory_label(&inv, "kubernetes.azure.com/managed"));
	assert_json(&inv, "labels", ND_LABELS);
	assert_json(&inv, "allocatable",
	            "{\"cpu\":\"94940m\",\"ephemeral-storage\":\"119703055367\","
	            "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"1977700032Ki\","
	            "\"nvidia.com/gpu\":\"8\",\"pods\":\"110\",\"rdma/ib\":\"8\"}");
	assert_string_equal(tau_agent_inventory_allocatable(&inv, "rdma/ib"), "8");
	assert_problems(&inv, 0);
	/* Before any CSINode or host probe: no drivers, devices unknown. */
	assert_json(&inv, "csiDrivers", "[]");
	assert_json(&inv, "devices",
	            "{\"gpus\":{\"present\":null,\"healthy\":null,\"probed\":false,"
	            "\"deviceNodes\":null,\"notProbedReason\":\"host not "
	            "probed\",\"driverVersion\":null,\"cudaVersion\":null,\"nvmlMissingSymbols\":[]"
	            ",\"devices\":[]},"
	            "\"rdmaPorts\":{\"total\":null,\"up\":null,\"ports\":[]},\"podResources\":{"
	            "\"probed\":false,\"allocatableKnown\":false,\"note\":\"host not "
	            "probed\",\"devices\":[],"
	            "\"dropped\":0,\"draDevices\":[],\"draDropped\":0}}");
	tau_agent_inventory_free(&inv);
}

static void test_nd_h100_csinode(void **state)
{
	tau_agent_inventory inv;

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", "csinode-nd-h100-v5.json");
	assert_int_equal(inv.n_csi_drivers, 2);
	assert_json(&inv, "csiDrivers",
	            "[{\"name\":\"disk.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":null},"
	            "{\"name\":\"file.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":null}]");
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 0);

	/* A missing CSINode clears the marks (no driver registered). */
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, NULL), 0);
	assert_false(tau_agent_inventory_find_driver(&inv, "disk.csi.azure.com")->in_csinode);
	tau_agent_inventory_free(&inv);
}

static void test_nc_a100_mig_cordoned(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;

	(void)state;
	inventory_from_fixtures(&inv, "node-nc-a100-v4-mig.json", "csinode-nc-a100-v4-mig.json");
	assert_string_equal(inv.node_name, NC_NAME);
	assert_string_equal(inv.gpu_class, "a100-mig");
	assert_int_equal(inv.kind, TAU_NODE_KIND_AGENT_POOL);
	assert_int_equal(inv.ready, TAU_AGENT_TRUE);
	assert_int_equal(inv.schedulable, TAU_AGENT_FALSE);
	assert_int_equal(inv.deleting, TAU_AGENT_FALSE);
	assert_int_equal(inv.n_labels, 35);
	assert_json(&inv, "allocatable",
	            "{\"cpu\":\"23660m\",\"ephemeral-storage\":\"119703055367\","
	            "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"227205812Ki\","
	            "\"nvidia.com/mig-1g.10gb\":\"7\",\"pods\":\"110\"}");
	assert_null(tau_agent_inventory_allocatable(&inv, "nvidia.com/gpu"));
	/* Drivers sorted by name, whatever the CSINode's registration order. */
	assert_json(&inv, "csiDrivers",
	            "[{\"name\":\"blob.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":null},"
	            "{\"name\":\"disk.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":null},"
	            "{\"name\":\"file.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":null}]");

	/* One A100 in MIG mode, sockets present, no InfiniBand: nothing to report. */
	fake_probe(&probe, 1, 0, 0);
	probe_add_socket(&probe, "blob.csi.azure.com", TAU_AGENT_SOCKET_PRESENT);
	probe_add_socket(&probe, "disk.csi.azure.com", TAU_AGENT_SOCKET_PRESENT);
	probe_add_socket(&probe, "file.csi.azure.com", TAU_AGENT_SOCKET_PRESENT);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 0);
	assert_json(
	        &inv, "devices",
	        "{\"gpus\":{\"present\":1,\"healthy\":null,\"probed\":false,"
	        "\"deviceNodes\":1,\"notProbedReason\":\"NVML disabled by "
	        "TAU_AGENT_NVML=off\",\"driverVersion\":null,\"cudaVersion\":null,"
	        "\"nvmlMissingSymbols\":[],\"devices\":[]},\"rdmaPorts\":{\"total\":0,\"up\":0,"
	        "\"ports\":[]},\"podResources\":{\"probed\":false,\"allocatableKnown\":false,"
	        "\"note\":null,\"devices\":[],\"dropped\":0,\"draDevices\":[],\"draDropped\":0}}");
	tau_agent_host_probe_free(&probe);
	tau_agent_inventory_free(&inv);
}

/* The Flex node's pods: the AKS disk add-on landed here, NFS came by Helm. */
static const char FLEX_PODS[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"items\":["
        "{\"metadata\":{\"name\":\"csi-azuredisk-node-7xk2p\",\"namespace\":\"kube-system\","
        "\"labels\":{\"app\":\"csi-azuredisk-node\","
        "\"kubernetes.azure.com/managedby\":\"aks\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\","
        "\"name\":\"csi-azuredisk-node\"}]},"
        "\"spec\":{\"nodeName\":\"edge-gpu-01\",\"containers\":["
        "{\"name\":\"node-driver-registrar\",\"args\":[\"--csi-address=$(ADDRESS)\","
        "\"--kubelet-registration-path=$(DRIVER_REG_SOCK_PATH)\",\"--v=2\"],"
        "\"env\":[{\"name\":\"ADDRESS\",\"value\":\"/csi/csi.sock\"},"
        "{\"name\":\"DRIVER_REG_SOCK_PATH\","
        "\"value\":\"/var/lib/kubelet/plugins/disk.csi.azure.com/csi.sock\"}]},"
        "{\"name\":\"azuredisk\",\"args\":[\"--v=5\",\"--endpoint=$(CSI_ENDPOINT)\"]}]},"
        "\"status\":{\"phase\":\"Running\"}},"
        "{\"metadata\":{\"name\":\"csi-nfs-node-abcde\",\"namespace\":\"kube-system\","
        "\"labels\":{\"app\":\"csi-nfs-node\",\"app.kubernetes.io/managed-by\":\"Helm\","
        "\"helm.sh/chart\":\"csi-driver-nfs-v4.11.0\"},"
        "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"csi-nfs-node\"}]},"
        "\"spec\":{\"nodeName\":\"edge-gpu-01\",\"containers\":["
        "{\"name\":\"node-driver-registrar\",\"args\":[\"--csi-address=/csi/csi.sock\","
        "\"--kubelet-registration-path=/var/lib/kubelet/plugins/csi-nfsplugin/csi.sock\"]},"
        "{\"name\":\"nfs\",\"args\":[\"--nodeid=$(NODE_ID)\","
        "\"--drivername=nfs.csi.k8s.io\"]}]},"
        "\"status\":{\"phase\":\"Running\"}},"
        "{\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset-q8wzt\","
        "\"labels\":{\"app\":\"nvidia-device-plugin-daemonset\"},"
        "\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"nvidia-device-plugin\"}]},"
        "\"spec\":{\"nodeName\":\"edge-gpu-01\",\"containers\":[{\"name\":\"plugin\","
        "\"args\":[\"--fail-on-init-error=false\"]}]},\"status\":{\"phase\":\"Running\"}}"
        "]}";

static void test_flex_node_full_json(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	cJSON *pods = parse_text(FLEX_PODS);

	(void)state;
	inventory_from_fixtures(&inv, "node-flex-h100.json", "csinode-flex-h100.json");
	assert_int_equal(inv.kind, TAU_NODE_KIND_FLEX);
	assert_null(inv.provider_id);
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	cJSON_Delete(pods);

	fake_probe(&probe, 8, 8, 8);
	probe_add_socket(&probe, "disk.csi.azure.com", TAU_AGENT_SOCKET_ABSENT);
	probe_add_socket(&probe, "nfs.csi.k8s.io", TAU_AGENT_SOCKET_PRESENT);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);

	assert_json(
	        &inv, NULL,
	        "{\"nodeName\":\"edge-gpu-01\",\"nodeUID\":\"" FLEX_UID "\","
	        "\"resourceVersion\":\"48211930\",\"providerID\":null,\"gpuClass\":\"h100-flex\","
	        "\"os\":\"linux\",\"kind\":\"Flex\",\"ready\":true,\"schedulable\":true,"
	        "\"deleting\":false,"
	        "\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\",\"beta.kubernetes.io/os\":"
	        "\"linux\",\"feature.node.kubernetes.io/pci-10de.present\":\"true\","
	        "\"feature.node.kubernetes.io/pci-15b3.present\":\"true\","
	        "\"kubernetes.azure.com/agentpool\":\"flexgpu\","
	        "\"kubernetes.azure.com/managed\":\"false\",\"kubernetes.azure.com/mode\":\"user\","
	        "\"kubernetes.azure.com/nodepool-type\":\"FlexNodes\","
	        "\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/hostname\":\"edge-gpu-01\","
	        "\"kubernetes.io/os\":\"linux\",\"net.unbounded-cloud.io/site\":\"flex-site\","
	        "\"nvidia.com/gpu.compute.major\":\"9\",\"nvidia.com/gpu.compute.minor\":\"0\","
	        "\"nvidia.com/gpu.count\":\"8\",\"nvidia.com/gpu.family\":\"hopper\","
	        "\"nvidia.com/gpu.memory\":\"81559\","
	        "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\","
	        "\"pool-generation\":\"initial\",\"tau.azure.com/gpu-class\":\"h100-flex\"},"
	        "\"allocatable\":{\"cpu\":\"126500m\",\"ephemeral-storage\":\"3454538474Ki\","
	        "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\",\"memory\":\"2105082040Ki\","
	        "\"nvidia.com/gpu\":\"8\",\"nvidia.com/hostdev\":\"8\",\"pods\":\"110\","
	        "\"rdma/rdma_shared_device_a\":\"63\"},"
	        "\"csiDrivers\":[{\"name\":\"disk.csi.azure.com\",\"inCSINode\":false,"
	        "\"socketPresent\":false,\"managedBy\":\"AKSAddon\",\"supported\":false,\"probe\":"
	        "null},"
	        "{\"name\":\"nfs.csi.k8s.io\",\"inCSINode\":true,\"socketPresent\":true,"
	        "\"managedBy\":\"Deployment\",\"supported\":true,\"probe\":null}],"
	        "\"devices\":{\"gpus\":{\"present\":8,\"healthy\":null,\"probed\":false,"
	        "\"deviceNodes\":8,\"notProbedReason\":\"NVML disabled by "
	        "TAU_AGENT_NVML=off\",\"driverVersion\":null,\"cudaVersion\":null,"
	        "\"nvmlMissingSymbols\":[],\"devices\":[]},"
	        "\"rdmaPorts\":{\"total\":8,\"up\":8,\"ports\":[]},\"podResources\":{\"probed\":"
	        "false,\"allocatableKnown\":false,\"note\":null,\"devices\":[],\"dropped\":0,"
	        "\"draDevices\":[],\"draDropped\":0}},"
	        "\"problems\":[\"CSI driver disk.csi.azure.com has a node pod here but kubelet "
	        "has not registered it (not in CSINode)\",\"CSI driver disk.csi.azure.com is not "
	        "supported on a Flex node (provided by the AKS add-on)\"]}");
	tau_agent_inventory_free(&inv);
}

static void test_flex_azure_disk_unsupported_even_self_deployed(void **state)
{
	tau_agent_inventory inv;
	cJSON *csinode =
	        parse_text("{\"metadata\":{\"name\":\"edge-gpu-01\"},\"spec\":{\"drivers\":["
	                   "{\"name\":\"disk.csi.azure.com\",\"nodeID\":\"edge-gpu-01\"},"
	                   "{\"name\":\"file.csi.azure.com\",\"nodeID\":\"edge-gpu-01\"}]}}");
	cJSON *pods =
	        parse_text("[{\"metadata\":{\"name\":\"csi-azurefile-node-1\",\"labels\":{\"app\":"
	                   "\"csi-azurefile-node\",\"app.kubernetes.io/managed-by\":\"Helm\"},"
	                   "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	                   "\"spec\":{\"nodeName\":\"edge-gpu-01\"}},"
	                   "{\"metadata\":{\"name\":\"csi-azuredisk-node-1\",\"labels\":{\"app\":"
	                   "\"csi-azuredisk-node\",\"app.kubernetes.io/managed-by\":\"Helm\"},"
	                   "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	                   "\"spec\":{\"nodeName\":\"edge-gpu-01\"}}]");

	(void)state;
	inventory_from_fixtures(&inv, "node-flex-h100.json", NULL);
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, csinode), 0);
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	assert_json(&inv, "csiDrivers",
	            "[{\"name\":\"disk.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Deployment\",\"supported\":false,\"probe\":null},"
	            "{\"name\":\"file.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Deployment\",\"supported\":true,\"probe\":null}]");
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 1);
	assert_string_equal(inv.problems.items[0],
	                    "CSI driver disk.csi.azure.com is not supported on a Flex node (Azure "
	                    "managed disks attach only to Azure VMs)");
	cJSON_Delete(csinode);
	cJSON_Delete(pods);
	tau_agent_inventory_free(&inv);
}

static void test_flex_deleting_taint(void **state)
{
	tau_agent_inventory inv;
	cJSON *node = parse_text(
	        "{\"metadata\":{\"name\":\"edge-1\",\"uid\":\"u1\",\"labels\":{"
	        "\"kubernetes.azure.com/nodepool-type\":\"FlexNodes\"}},"
	        "\"spec\":{\"taints\":[{\"key\":\"kubernetes.azure.com/flex-node-deleting\","
	        "\"value\":\"true\",\"effect\":\"NoSchedule\"}]},"
	        "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}");

	(void)state;
	tau_agent_inventory_init(&inv);
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	assert_int_equal(inv.kind, TAU_NODE_KIND_FLEX);
	assert_null(inv.os);
	assert_int_equal(inv.deleting, TAU_AGENT_TRUE);
	assert_int_equal(inv.ready, TAU_AGENT_FALSE);
	assert_int_equal(inv.schedulable, TAU_AGENT_TRUE);
	assert_problems(&inv, 0);
	cJSON_Delete(node);

	node = parse_text("{\"metadata\":{\"name\":\"n\",\"uid\":\"u\","
	                  "\"deletionTimestamp\":\"2026-09-30T11:00:00Z\"},"
	                  "\"status\":{\"nodeInfo\":{\"operatingSystem\":\"linux\"},"
	                  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"Unknown\","
	                  "\"reason\":\"NodeStatusUnknown\"}]}}");
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	assert_string_equal(inv.os, "linux");
	assert_int_equal(inv.deleting, TAU_AGENT_TRUE);
	assert_int_equal(inv.ready, TAU_AGENT_UNKNOWN);
	assert_true(has_problem(&inv, "Node Ready condition is \"Unknown\", reason "
	                              "NodeStatusUnknown; readiness unknown"));
	cJSON_Delete(node);
	tau_agent_inventory_free(&inv);
}

/* ------------------------------------------------------------------ prune */

/* Inventory JSON from node, csinode (may be NULL) and pods (may be NULL), each first pruned
 * when prune is set (the objects are consumed). */
static char *inventory_text(cJSON *node, cJSON *csinode, cJSON *pods, bool prune)
{
	tau_agent_inventory inv;
	char *text;

	if (prune) {
		tau_agent_inventory_prune(node, TAU_AGENT_OBJECT_NODE);
		tau_agent_inventory_prune(csinode, TAU_AGENT_OBJECT_CSINODE);
		if (pods != NULL)
			for (cJSON *p = cJSON_GetObjectItem(pods, "items")->child; p; p = p->next)
				tau_agent_inventory_prune(p, TAU_AGENT_OBJECT_POD);
	}
	tau_agent_inventory_init(&inv);
	(void)tau_agent_inventory_from_node(&inv, node);
	if (csinode != NULL)
		assert_int_equal(tau_agent_inventory_apply_csinode(&inv, csinode), 0);
	if (pods != NULL)
		assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	text = json_of(&inv, NULL);
	tau_agent_inventory_free(&inv);
	cJSON_Delete(node);
	cJSON_Delete(csinode);
	cJSON_Delete(pods);
	return text;
}

static void assert_prune_keeps_inventory(cJSON *node, cJSON *csinode, cJSON *pods)
{
	char *full = inventory_text(cJSON_Duplicate(node, true),
	                            csinode ? cJSON_Duplicate(csinode, true) : NULL,
	                            pods ? cJSON_Duplicate(pods, true) : NULL, false);
	char *pruned = inventory_text(node, csinode, pods, true);

	assert_string_equal(pruned, full);
	free(full);
	free(pruned);
}

/* Every fixture, and a Node and pods with every field a reader looks at plus the bulk a real
 * cluster adds (managedFields, annotations, images, volumes, container specs): the inventory
 * from the pruned objects is the inventory from the whole ones, and the bulk is gone. */
static void test_prune_keeps_inventory(void **state)
{
	static const char *const fixtures[][2] = {
	        {"node-nd-h100-v5.json", "csinode-nd-h100-v5.json"},
	        {"node-nc-a100-v4-mig.json", "csinode-nc-a100-v4-mig.json"},
	        {"node-flex-h100.json", "csinode-flex-h100.json"},
	};
	static const char BULKY_NODE[] =
	        "{\"metadata\":{\"name\":\"edge-gpu-01\",\"uid\":\"u1\",\"resourceVersion\":\"7\","
	        "\"deletionTimestamp\":\"2026-01-01T00:00:00Z\",\"labels\":{\"kubernetes.io/os\":"
	        "\"linux\",\"tau.azure.com/gpu-class\":\"h100\"},\"annotations\":{\"a\":\"b\"},"
	        "\"managedFields\":[{\"manager\":\"kubelet\",\"fieldsV1\":{\"f:status\":{}}}]},"
	        "\"spec\":{\"providerID\":\"azure:///"
	        "x\",\"unschedulable\":true,\"podCIDR\":\"10.0.0.0/24\","
	        "\"taints\":[{\"key\":\"kubernetes.azure.com/flex-node-deleting\",\"effect\":"
	        "\"NoSchedule\"}]},"
	        "\"status\":{\"allocatable\":{\"nvidia.com/"
	        "gpu\":\"8\"},\"capacity\":{\"cpu\":\"96\"},"
	        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
	        "\"KubeletNotReady\","
	        "\"message\":\"m\",\"lastHeartbeatTime\":\"2026-01-01T00:00:00Z\"}],"
	        "\"nodeInfo\":{\"operatingSystem\":\"linux\",\"kernelVersion\":\"6.1\"},"
	        "\"images\":[{\"names\":[\"mcr.microsoft.com/a:1\"],\"sizeBytes\":1}],"
	        "\"volumesInUse\":[\"v\"],\"addresses\":[{\"type\":\"Hostname\",\"address\":\"h\"}]"
	        "}}";
	static const char BULKY_PODS[] =
	        "{\"items\":[{\"metadata\":{\"name\":\"csi-azuredisk-node-7xk2p\",\"namespace\":"
	        "\"kube-system\",\"annotations\":{\"x\":\"y\"},\"managedFields\":[{}],"
	        "\"labels\":{\"app\":\"csi-azuredisk-node\",\"kubernetes.azure.com/managedby\":"
	        "\"aks\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":\"d\"}]},"
	        "\"spec\":{\"nodeName\":\"edge-gpu-01\",\"volumes\":[{\"name\":\"v\"}],"
	        "\"containers\":[{\"name\":\"node-driver-registrar\",\"image\":\"i\","
	        "\"args\":[\"--kubelet-registration-path=$(P)\",\"--user-agent-suffix=AKS\"],"
	        "\"env\":[{\"name\":\"P\",\"value\":\"/var/lib/kubelet/plugins/disk.csi.azure.com/"
	        "csi.sock\"}],\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/csi\"}]}]},"
	        "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.5\",\"containerStatuses\":[{}"
	        "]}},"
	        "{\"metadata\":{\"name\":\"done\",\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	        "\"spec\":{\"nodeName\":\"edge-gpu-01\",\"containers\":[{\"name\":\"c\","
	        "\"command\":"
	        "[\"/nfsplugin\",\"--drivername=nfs.csi.k8s.io\"]}]},\"status\":{\"phase\":"
	        "\"Succeeded\"}},"
	        "{\"metadata\":{\"name\":\"elsewhere\"},\"spec\":{\"nodeName\":\"other\"}}]}";
	cJSON *node, *pods, *pod;
	char *text;

	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		assert_prune_keeps_inventory(load_fixture(fixtures[i][0]),
		                             load_fixture(fixtures[i][1]), parse_text(FLEX_PODS));
	assert_prune_keeps_inventory(parse_text(BULKY_NODE), NULL, parse_text(BULKY_PODS));

	node = parse_text(BULKY_NODE);
	tau_agent_inventory_prune(node, TAU_AGENT_OBJECT_NODE);
	text = cJSON_PrintUnformatted(node);
	assert_null(strstr(text, "managedFields"));
	assert_null(strstr(text, "annotations"));
	assert_null(strstr(text, "images"));
	assert_null(strstr(text, "kernelVersion"));
	assert_non_null(strstr(text, "\"resourceVersion\":\"7\""));
	free(text);
	cJSON_Delete(node);
	pods = parse_text(BULKY_PODS);
	pod = cJSON_GetObjectItem(pods, "items")->child;
	tau_agent_inventory_prune(pod, TAU_AGENT_OBJECT_POD);
	text = cJSON_PrintUnformatted(pod);
	assert_null(strstr(text, "volume"));
	assert_null(strstr(text, "podIP"));
	assert_null(strstr(text, "\"image\""));
	assert_non_null(strstr(text, "\"namespace\":\"kube-system\""));
	free(text);
	cJSON_Delete(pods);
	tau_agent_inventory_prune(NULL, TAU_AGENT_OBJECT_POD); /* no-op */
}

/* ------------------------------------------------------------------- pods */

static void test_pods_managed_by(void **state)
{
	tau_agent_inventory inv;
	cJSON *pods = parse_text(
	        "{\"items\":["
	        /* AKS add-on by its addon-manager label; driver from the app label. */
	        "{\"metadata\":{\"name\":\"csi-azuredisk-node-abc\",\"labels\":{\"app\":"
	        "\"csi-azuredisk-node\",\"addonmanager.kubernetes.io/mode\":\"Reconcile\"},"
	        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	        "\"spec\":{\"nodeName\":\"" ND_NAME "\",\"containers\":[{\"name\":\"x\"}]}},"
	        /* Upstream kubectl manifest, told by its user agent suffix (two-arg form). */
	        "{\"metadata\":{\"name\":\"csi-azurefile-node-def\",\"labels\":{\"app\":"
	        "\"csi-azurefile-node\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	        "\"spec\":{\"nodeName\":\"" ND_NAME "\",\"containers\":[{\"name\":\"azurefile\","
	        "\"args\":[\"--user-agent-suffix\",\"OSS-kubectl\"]}]}},"
	        /* No marks at all: Unknown; a driver only seen here is added. */
	        "{\"metadata\":{\"name\":\"csi-blob-node-ghi\",\"labels\":{\"app\":"
	        "\"csi-blob-node\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	        "\"spec\":{\"nodeName\":\"" ND_NAME "\"}},"
	        /* A controller (not a DaemonSet pod) with Helm labels: ignored. */
	        "{\"metadata\":{\"name\":\"csi-azuredisk-controller-1\",\"labels\":{"
	        "\"app.kubernetes.io/managed-by\":\"Helm\"},"
	        "\"ownerReferences\":[{\"kind\":\"ReplicaSet\"}]},"
	        "\"spec\":{\"nodeName\":\"" ND_NAME "\",\"containers\":[{\"name\":\"c\","
	        "\"args\":[\"--drivername=disk.csi.azure.com\"]}]}},"
	        /* A finished pod: ignored. */
	        "{\"metadata\":{\"name\":\"csi-azuredisk-node-old\",\"labels\":{\"app\":"
	        "\"csi-azuredisk-node\",\"helm.sh/chart\":\"x\"},"
	        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	        "\"spec\":{\"nodeName\":\"" ND_NAME "\"},\"status\":{\"phase\":\"Succeeded\"}},"
	        /* Another node's pod: ignored with a problem. */
	        "{\"metadata\":{\"name\":\"stray\",\"labels\":{\"app\":\"csi-azuredisk-node\","
	        "\"helm.sh/chart\":\"x\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},"
	        "\"spec\":{\"nodeName\":\"aks-other-1\"}},"
	        /* Registration dirs: domain-form taken, other unknown dirs not. */
	        "{\"metadata\":{\"name\":\"foo-node\",\"labels\":{"
	        "\"app.kubernetes.io/managed-by\":\"kustomize\"}},"
	        "\"spec\":{\"nodeName\":\"" ND_NAME "\",\"containers\":[{\"name\":\"r\","
	        "\"args\":[\"--kubelet-registration-path=/var/lib/kubelet/plugins/"
	        "foo.example.com/csi.sock\"]},{\"name\":\"r2\",\"command\":[\"registrar\","
	        "\"--kubelet-registration-path\",\"/var/lib/kubelet/plugins/csi-bar/"
	        "csi.sock\"]}]}},"
	        "\"not a pod\""
	        "]}");

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", "csinode-nd-h100-v5.json");
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	assert_json(&inv, "csiDrivers",
	            "[{\"name\":\"blob.csi.azure.com\",\"inCSINode\":false,\"socketPresent\":null,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":null},"
	            "{\"name\":\"disk.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"AKSAddon\",\"supported\":true,\"probe\":null},"
	            "{\"name\":\"file.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":null,"
	            "\"managedBy\":\"Deployment\",\"supported\":true,\"probe\":null},"
	            "{\"name\":\"foo.example.com\",\"inCSINode\":false,\"socketPresent\":null,"
	            "\"managedBy\":\"Deployment\",\"supported\":true,\"probe\":null}]");
	assert_problems(&inv, 1);
	assert_string_equal(inv.problems.items[0],
	                    "pod stray runs on node aks-other-1, not on " ND_NAME "; ignored");

	/* Applying again gives the same answer; an empty list resets it. */
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	assert_int_equal(tau_agent_inventory_find_driver(&inv, "disk.csi.azure.com")->managed_by,
	                 TAU_CSI_MANAGED_AKS_ADDON);
	assert_problems(&inv, 1);
	cJSON_Delete(pods);
	pods = parse_text("{\"kind\":\"PodList\",\"items\":[]}");
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	assert_int_equal(tau_agent_inventory_find_driver(&inv, "disk.csi.azure.com")->managed_by,
	                 TAU_CSI_MANAGED_UNKNOWN);
	assert_false(tau_agent_inventory_find_driver(&inv, "blob.csi.azure.com")->has_node_pod);
	cJSON_Delete(pods);

	/* Malformed lists are problems, not crashes. */
	pods = parse_text("\"pods\"");
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), -TAU_EINVAL);
	assert_true(has_problem(&inv, "pod list is malformed; who deployed the CSI drivers is "
	                              "unknown"));
	cJSON_Delete(pods);
	pods = parse_text("{\"items\":{}}");
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), -TAU_EINVAL);
	cJSON_Delete(pods);
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, NULL), 0);
	tau_agent_inventory_free(&inv);
}

static void test_pods_disagree(void **state)
{
	tau_agent_inventory inv;
	cJSON *pods = parse_text(
	        "[{\"metadata\":{\"name\":\"nfs-a\",\"labels\":{\"helm.sh/chart\":\"nfs\"},"
	        "\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},\"spec\":{\"nodeName\":"
	        "\"" ND_NAME "\",\"containers\":[{\"args\":[\"--drivername=nfs.csi.k8s.io\"]}]}},"
	        "{\"metadata\":{\"name\":\"nfs-b\",\"labels\":{\"kubernetes.io/cluster-service\":"
	        "\"true\"},\"ownerReferences\":[{\"kind\":\"DaemonSet\"}]},\"spec\":{\"nodeName\":"
	        "\"" ND_NAME "\",\"containers\":[{\"args\":[\"--driver-name\","
	        "\"nfs.csi.k8s.io\"]}]}},"
	        "{\"metadata\":{\"name\":\"both\",\"labels\":{\"helm.sh/chart\":\"x\","
	        "\"kubernetes.azure.com/managedby\":\"aks\"},\"ownerReferences\":[{\"kind\":"
	        "\"DaemonSet\"}]},\"spec\":{\"nodeName\":\"" ND_NAME "\",\"containers\":[{\"args\":"
	        "[\"--drivername=x.example.com\",\"--user-agent-suffix=AKS\"]}]}}]");

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	assert_int_equal(tau_agent_inventory_apply_pods(&inv, pods), 0);
	assert_int_equal(tau_agent_inventory_find_driver(&inv, "nfs.csi.k8s.io")->managed_by,
	                 TAU_CSI_MANAGED_UNKNOWN);
	assert_int_equal(tau_agent_inventory_find_driver(&inv, "x.example.com")->managed_by,
	                 TAU_CSI_MANAGED_UNKNOWN);
	assert_problems(&inv, 2);
	assert_string_equal(inv.problems.items[0],
	                    "pod both carries both AKS add-on and self-deployment marks; who "
	                    "deployed it is unknown");
	assert_string_equal(inv.problems.items[1],
	                    "CSI driver nfs.csi.k8s.io: pod nfs-b is the AKS add-on but pod nfs-a "
	                    "is self-deployed; who deployed it is unknown");
	cJSON_Delete(pods);
	tau_agent_inventory_free(&inv);
}

/* --------------------------------------------------------------- CSINode */

static void test_csinode_checks(void **state)
{
	tau_agent_inventory inv;
	cJSON *other = load_fixture("csinode-nc-a100-v4-mig.json");
	cJSON *mine = load_fixture("csinode-nd-h100-v5.json");
	cJSON *owner;
	cJSON *bad;

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, other), -TAU_EINVAL);
	assert_int_equal(inv.n_csi_drivers, 0);
	assert_true(
	        has_problem(&inv, "CSINode " NC_NAME " is not this node's (" ND_NAME "); ignored"));

	/* Owned by a Node with another uid: a leftover from a deleted node of the same name. */
	owner = cJSON_GetArrayItem(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(mine, "metadata"), "ownerReferences"), 0);
	cJSON_ReplaceItemInObject(owner, "uid", cJSON_CreateString("0000-old"));
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, mine), 0);
	assert_int_equal(inv.n_csi_drivers, 2);
	assert_true(has_problem(&inv, "CSINode is owned by Node uid 0000-old, not this node's uid "
	                              "" ND_UID));

	bad = parse_text("{\"metadata\":{\"name\":\"" ND_NAME "\"},\"spec\":{\"drivers\":7}}");
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, bad), -TAU_EINVAL);
	assert_true(has_problem(&inv, "CSINode spec.drivers is not an array; CSI registration "
	                              "unknown"));
	cJSON_Delete(bad);
	bad = parse_text("{\"spec\":{\"drivers\":[{\"nodeID\":\"x\"},{\"name\":\"\"},5,"
	                 "{\"name\":\"ok.example.com\"}]}}");
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, bad), 0);
	assert_true(has_problem(&inv, "CSINode lists a driver without a name; skipped"));
	assert_true(tau_agent_inventory_find_driver(&inv, "ok.example.com")->in_csinode);
	assert_false(tau_agent_inventory_find_driver(&inv, "disk.csi.azure.com")->in_csinode);
	cJSON_Delete(bad);
	bad = parse_text("[]");
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, bad), -TAU_EINVAL);
	cJSON_Delete(bad);
	cJSON_Delete(other);
	cJSON_Delete(mine);
	tau_agent_inventory_free(&inv);
}

/* ----------------------------------------------------------- consistency */

static void test_consistency_mismatches(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", "csinode-nd-h100-v5.json");
	fake_probe(&probe, 7, 8, 6);
	free(probe.nvml_note);
	probe.nvml_note = NULL;
	probe.nvml_probed = true;
	probe.nvml_gpus = 8;
	probe.nvml_healthy = 6;
	probe_add_socket(&probe, "disk.csi.azure.com", TAU_AGENT_SOCKET_PRESENT);
	probe_add_socket(&probe, "file.csi.azure.com", TAU_AGENT_SOCKET_ABSENT);
	probe_add_socket(&probe, "x.example.com", TAU_AGENT_SOCKET_PRESENT);
	assert_int_equal(tau_agent_problem_add(&probe.problems, "cannot read %s", "somewhere"), 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	/* Idempotent. */
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);

	assert_problems(&inv, 6);
	assert_string_equal(inv.problems.items[0], "cannot read somewhere");
	assert_string_equal(inv.problems.items[1],
	                    "CSI driver file.csi.azure.com is registered in CSINode but "
	                    "/var/lib/kubelet/plugins_registry/file.csi.azure.com-reg.sock is "
	                    "missing (driver pod gone?)");
	assert_string_equal(inv.problems.items[2],
	                    "CSI driver x.example.com has a registration socket but is not in "
	                    "CSINode (registration failed?)");
	assert_string_equal(inv.problems.items[3], "allocatable nvidia.com/gpu is 8 but 7 NVIDIA "
	                                           "device nodes are present under /dev");
	assert_string_equal(inv.problems.items[4], "NVML: 2 of 8 GPUs failed the health read");
	assert_string_equal(inv.problems.items[5],
	                    "allocatable rdma/ib is 8 but only 6 RDMA ports are up");
	assert_json(
	        &inv, "devices",
	        "{\"gpus\":{\"present\":8,\"healthy\":6,\"probed\":true,\"deviceNodes\":7,"
	        "\"notProbedReason\":null,\"driverVersion\":null,\"cudaVersion\":null,"
	        "\"nvmlMissingSymbols\":[],\"devices\":[]},\"rdmaPorts\":{\"total\":8,\"up\":6,"
	        "\"ports\":[]},\"podResources\":{\"probed\":false,\"allocatableKnown\":false,"
	        "\"note\":null,\"devices\":[],\"dropped\":0,\"draDevices\":[],\"draDropped\":0}}");
	tau_agent_inventory_free(&inv);
}

static void test_consistency_nvml_and_rdma_down(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	fake_probe(&probe, -1, 8, 0);
	probe.nvml_probed = true;
	probe.nvml_gpus = 4;
	probe.nvml_healthy = 4;
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 2);
	assert_string_equal(inv.problems.items[0],
	                    "allocatable nvidia.com/gpu is 8 but NVML reports 4 GPUs");
	assert_string_equal(inv.problems.items[1],
	                    "allocatable rdma/ib is 8 but no RDMA port is up (8 found)");
	tau_agent_inventory_free(&inv);
}

static void test_consistency_gpu_labels(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	cJSON *node;

	(void)state;
	tau_agent_inventory_init(&inv);

	/* GPUs on the host but nothing advertised: device plugin missing. */
	node = parse_text("{\"metadata\":{\"name\":\"n\",\"uid\":\"u\"},\"status\":{\"conditions\":"
	                  "[{\"type\":\"Ready\",\"status\":\"True\"}],\"allocatable\":{\"cpu\":"
	                  "\"8\",\"rdma/shared_ib\":\"63\"}}}");
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	cJSON_Delete(node);
	fake_probe(&probe, 2, 2, 1);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 1);
	assert_string_equal(inv.problems.items[0],
	                    "2 NVIDIA GPUs are present locally but the node advertises no "
	                    "nvidia.com/gpu or MIG resource (is the device plugin running?)");

	/* Time-slicing: 8 GPUs x 4 replicas = 32. */
	node = parse_text("{\"metadata\":{\"name\":\"n\",\"uid\":\"u\",\"labels\":{"
	                  "\"nvidia.com/gpu.replicas\":\"4\"}},\"status\":{\"conditions\":"
	                  "[{\"type\":\"Ready\",\"status\":\"True\"}],\"allocatable\":{"
	                  "\"nvidia.com/gpu\":\"32\"}}}");
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	cJSON_Delete(node);
	fake_probe(&probe, 8, 0, 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 0);
	tau_agent_host_probe_free(&probe);
	fake_probe(&probe, 7, 0, 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 1);
	assert_string_equal(inv.problems.items[0],
	                    "allocatable nvidia.com/gpu is 32 but 7 NVIDIA device nodes are "
	                    "present under /dev (times nvidia.com/gpu.replicas)");

	/* MIG "single": nvidia.com/gpu counts slices; no comparison with GPUs. */
	node = parse_text("{\"metadata\":{\"name\":\"n\",\"uid\":\"u\",\"labels\":{"
	                  "\"nvidia.com/mig.strategy\":\"single\"}},\"status\":{\"conditions\":"
	                  "[{\"type\":\"Ready\",\"status\":\"True\"}],\"allocatable\":{"
	                  "\"nvidia.com/gpu\":\"56\"}}}");
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	cJSON_Delete(node);
	fake_probe(&probe, 8, 0, 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 0);
	tau_agent_inventory_free(&inv);
}

/* -------------------------------------------- integration over a fake host */

#include "fake_host.h"

static void test_nd_h100_with_fake_host(void **state)
{
	char root[] = "/tmp/tau-inventory-XXXXXX";
	const char *names[TAU_AGENT_MAX_CSI_DRIVERS];
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	char rel[256], reg[128], ep[128], config[64];
	char *argv[] = {(char *)TAU_BINARY_DIR "/fakes/bin/fake_csi_driver",
	                (char *)"--registration",
	                reg,
	                (char *)"--endpoint",
	                ep,
	                (char *)"--advertise",
	                (char *)"/var/lib/kubelet/plugins/disk.csi.azure.com/csi.sock",
	                (char *)"--config",
	                config,
	                NULL};
	pid_t csi;

	(void)state;
	assert_non_null(mkdtemp(root));
	make_dirs(root, "var/lib/kubelet/plugins_registry");
	make_dirs(root, "var/lib/kubelet/plugins/disk.csi.azure.com");
	/* Azure Disk's registrar and driver answer; Azure File's socket outlived its registrar. */
	snprintf(reg, sizeof(reg),
	         "%s/var/lib/kubelet/plugins_registry/disk.csi.azure.com-reg.sock", root);
	snprintf(ep, sizeof(ep), "%s/var/lib/kubelet/plugins/disk.csi.azure.com/csi.sock", root);
	snprintf(config, sizeof(config), "%s/csi.json", root);
	write_file(root, "csi.json",
	           "{\"name\": \"disk.csi.azure.com\", \"vendorVersion\": \"v1.29.9\"}");
	csi = start_fake(argv);
	make_socket(root, "var/lib/kubelet/plugins_registry/file.csi.azure.com-reg.sock");
	make_dirs(root, "dev");
	write_file(root, "dev/nvidiactl", "");
	for (int i = 0; i < 8; i++) {
		snprintf(rel, sizeof(rel), "dev/nvidia%d", i);
		write_file(root, rel, "");
		snprintf(rel, sizeof(rel), "sys/class/infiniband/mlx5_%d/ports/1", i);
		make_dirs(root, rel);
		snprintf(rel, sizeof(rel), "sys/class/infiniband/mlx5_%d/ports/1/state", i);
		write_file(root, rel, "4: ACTIVE\n");
		snprintf(rel, sizeof(rel), "sys/class/infiniband/mlx5_%d/ports/1/rate", i);
		write_file(root, rel, "400 Gb/sec (4X NDR)\n");
	}

	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", "csinode-nd-h100-v5.json");
	for (size_t i = 0; i < inv.n_csi_drivers; i++)
		names[i] = inv.csi_drivers[i].name;
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, names, inv.n_csi_drivers), 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_problems(&inv, 0);
	assert_json(&inv, "csiDrivers",
	            "[{\"name\":\"disk.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":true,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":{\"ready\":true,"
	            "\"endpoint\":\"/var/lib/kubelet/plugins/disk.csi.azure.com/csi.sock\","
	            "\"pluginName\":\"disk.csi.azure.com\",\"vendorVersion\":\"v1.29.9\","
	            "\"error\":null}},"
	            "{\"name\":\"file.csi.azure.com\",\"inCSINode\":true,\"socketPresent\":true,"
	            "\"managedBy\":\"Unknown\",\"supported\":true,\"probe\":{\"ready\":null,"
	            "\"endpoint\":null,\"pluginName\":null,\"vendorVersion\":null,\"error\":"
	            "\"registration GetInfo: UNAVAILABLE (nothing answers on the socket)\"}}]");
	{
		/* Each port described, in device order, with what its files say. */
		char want[4096];
		size_t len = (size_t)snprintf(
		        want, sizeof(want),
		        "{\"gpus\":{\"present\":8,\"healthy\":null,\"probed\":false,"
		        "\"deviceNodes\":8,\"notProbedReason\":\"NVML disabled by "
		        "TAU_AGENT_NVML=off\",\"driverVersion\":null,\"cudaVersion\":null,"
		        "\"nvmlMissingSymbols\":[],\"devices\":[]},\"rdmaPorts\":{\"total\":8,"
		        "\"up\":8,\"ports\":[");

		for (int i = 0; i < 8; i++)
			len += (size_t)snprintf(
			        want + len, sizeof(want) - len,
			        "%s{\"device\":\"mlx5_%d\",\"port\":\"1\",\"state\":4,"
			        "\"physState\":null,\"rate\":\"400 Gb/sec (4X NDR)\","
			        "\"rateMbps\":400000,\"linkLayer\":null,"
			        "\"linkDowned\":null}",
			        i > 0 ? "," : "", i);
		snprintf(want + len, sizeof(want) - len,
		         "]},\"podResources\":{\"probed\":false,\"allocatableKnown\":false,"
		         "\"note\":\"kubelet pod-resources not reachable: "
		         "/var/lib/kubelet/pod-resources/kubelet.sock does not "
		         "exist\",\"devices\":[],\"dropped\":0,\"draDevices\":[],\"draDropped\":0}"
		         "}");
		assert_json(&inv, "devices", want);
	}
	stop_fake(csi);
	tau_agent_inventory_free(&inv);
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ----------------------------------------------------------- bad input */

static void test_not_an_object(void **state)
{
	static const char want[] =
	        "{\"nodeName\":null,\"nodeUID\":null,\"resourceVersion\":null,"
	        "\"providerID\":null,\"gpuClass\":null,\"os\":null,\"kind\":null,\"ready\":null,"
	        "\"schedulable\":null,\"deleting\":null,\"labels\":{},\"allocatable\":{},"
	        "\"csiDrivers\":[],\"devices\":{\"gpus\":{\"present\":null,\"healthy\":null,"
	        "\"probed\":false,\"deviceNodes\":null,\"notProbedReason\":\"host not "
	        "probed\",\"driverVersion\":null,\"cudaVersion\":null,\"nvmlMissingSymbols\":[],"
	        "\"devices\":[]},"
	        "\"rdmaPorts\":{\"total\":null,\"up\":null,\"ports\":[]},\"podResources\":{"
	        "\"probed\":false,\"allocatableKnown\":false,\"note\":\"host not "
	        "probed\",\"devices\":[],"
	        "\"dropped\":0,\"draDevices\":[],\"draDropped\":0}},"
	        "\"problems\":[\"Node is not a JSON object; nothing about the node is known\"]}";
	tau_agent_inventory inv;
	cJSON *arr = parse_text("[1,2]");
	cJSON *bad = NULL;
	const char *text = "{\"metadata\": {\"name\": \"n1\"";

	(void)state;
	tau_agent_inventory_init(&inv);
	assert_int_equal(tau_agent_inventory_from_node(&inv, NULL), -TAU_EINVAL);
	assert_json(&inv, NULL, want);
	assert_int_equal(tau_agent_inventory_from_node(&inv, arr), -TAU_EINVAL);
	assert_json(&inv, NULL, want);
	/* Truncated JSON never becomes a tree; the caller reports the node as unreadable. */
	assert_int_equal(tau_json_parse(&bad, text, strlen(text), 0), -TAU_EINVAL);
	assert_int_equal(tau_agent_inventory_from_node(&inv, bad), -TAU_EINVAL);
	assert_json(&inv, NULL, want);
	cJSON_Delete(arr);

	/* No name: everything else is still read. */
	arr = parse_text("{\"metadata\":{\"uid\":\"u\",\"labels\":{\"kubernetes.io/os\":"
	                 "\"linux\"}}}");
	assert_int_equal(tau_agent_inventory_from_node(&inv, arr), -TAU_EINVAL);
	assert_string_equal(inv.os, "linux");
	assert_true(has_problem(&inv, "Node has no metadata.name; cannot tell which node this "
	                              "is"));
	cJSON_Delete(arr);
	tau_agent_inventory_free(&inv);
}

static void test_malformed_fields(void **state)
{
	tau_agent_inventory inv;
	cJSON *node =
	        parse_text("{\"metadata\":{\"name\":\"n1\",\"uid\":7,\"deletionTimestamp\":true,"
	                   "\"labels\":{\"a\":5,\"b\":\"x\",\"b\":\"y\"}},"
	                   "\"spec\":{\"unschedulable\":\"yes\",\"providerID\":[\"x\"]},"
	                   "\"status\":{\"conditions\":\"bad\",\"allocatable\":{\"cpu\":\"abc\","
	                   "\"memory\":\"1024Mi\",\"pods\":110,\"nvidia.com/gpu\":\"2.5\",\"x\":{},"
	                   "\"ephemeral-storage\":\"1931347.6875Mi\"}}}");
	const char *p;

	(void)state;
	tau_agent_inventory_init(&inv);
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	assert_string_equal(inv.node_name, "n1");
	assert_null(inv.node_uid);
	assert_null(inv.provider_id);
	assert_int_equal(inv.ready, TAU_AGENT_UNKNOWN);
	assert_int_equal(inv.schedulable, TAU_AGENT_UNKNOWN);
	assert_int_equal(inv.deleting, TAU_AGENT_UNKNOWN);
	assert_int_equal(inv.kind, TAU_NODE_KIND_OTHER);
	assert_json(&inv, "labels", "{\"b\":\"x\"}");
	/* Canonical quantity strings, exactly as the API server would print them. */
	assert_json(&inv, "allocatable",
	            "{\"ephemeral-storage\":\"1977700032Ki\",\"memory\":\"1Gi\","
	            "\"nvidia.com/gpu\":\"2500m\",\"pods\":\"110\"}");

	assert_problems(&inv, 10);
	assert_string_equal(inv.problems.items[0], "Node metadata.uid is not a string; unknown");
	assert_string_equal(inv.problems.items[1], "Node spec.providerID is not a string; unknown");
	assert_string_equal(inv.problems.items[2], "label a is not a string; dropped");
	assert_string_equal(inv.problems.items[3],
	                    "label b appears more than once; the first is kept");
	p = inv.problems.items[4];
	assert_true(strncmp(p, "allocatable cpu is not a valid quantity (", 41) == 0);
	assert_string_equal(p + strlen(p) - 10, "); dropped");
	assert_string_equal(inv.problems.items[5],
	                    "allocatable x is not a valid quantity (neither a string nor a "
	                    "number); dropped");
	assert_string_equal(inv.problems.items[6],
	                    "Node status.conditions is not an array; readiness unknown");
	assert_string_equal(inv.problems.items[7],
	                    "Node spec.unschedulable is not a boolean; schedulable unknown");
	assert_string_equal(inv.problems.items[8],
	                    "Node metadata.deletionTimestamp is not a string; deleting unknown");
	assert_string_equal(inv.problems.items[9], "Node has no metadata.uid");
	cJSON_Delete(node);
	tau_agent_inventory_free(&inv);
}

static void test_caps(void **state)
{
	tau_agent_inventory inv;
	cJSON *node = cJSON_CreateObject();
	cJSON *meta = cJSON_AddObjectToObject(node, "metadata");
	cJSON *labels, *status, *alloc;
	char key[64];
	char *long_value;

	(void)state;
	cJSON_AddStringToObject(meta, "name", "n");
	cJSON_AddStringToObject(meta, "uid", "u");
	labels = cJSON_AddObjectToObject(meta, "labels");
	for (int i = 0; i < 600; i++) {
		snprintf(key, sizeof(key), "example.com/l%03d", i);
		cJSON_AddStringToObject(labels, key, "v");
	}
	status = cJSON_AddObjectToObject(node, "status");
	cJSON_AddItemToObject(status, "conditions",
	                      cJSON_Parse("[{\"type\":\"Ready\",\"status\":\"True\"}]"));
	alloc = cJSON_AddObjectToObject(status, "allocatable");
	for (int i = 0; i < 300; i++) {
		snprintf(key, sizeof(key), "example.com/r%03d", i);
		cJSON_AddStringToObject(alloc, key, "1");
	}

	tau_agent_inventory_init(&inv);
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	assert_int_equal(inv.n_labels, TAU_AGENT_MAX_LABELS);
	assert_int_equal(inv.n_allocatable, TAU_AGENT_MAX_ALLOCATABLE);
	assert_string_equal(inv.labels[511].key, "example.com/l511");
	assert_problems(&inv, 2);
	assert_string_equal(inv.problems.items[0],
	                    "Node has 600 label entries, more than 512; 88 dropped");
	assert_string_equal(inv.problems.items[1],
	                    "Node has 300 allocatable entries, more than 256; 44 dropped");
	cJSON_Delete(node);

	/* 70 bad quantities: the problem list stops at its cap and says so. */
	node = cJSON_CreateObject();
	meta = cJSON_AddObjectToObject(node, "metadata");
	cJSON_AddStringToObject(meta, "name", "n");
	cJSON_AddStringToObject(meta, "uid", "u");
	long_value = malloc(TAU_AGENT_MAX_STRING + 2);
	assert_non_null(long_value);
	memset(long_value, 'v', TAU_AGENT_MAX_STRING + 1);
	long_value[TAU_AGENT_MAX_STRING + 1] = '\0';
	labels = cJSON_AddObjectToObject(meta, "labels");
	cJSON_AddStringToObject(labels, "long", long_value);
	free(long_value);
	status = cJSON_AddObjectToObject(node, "status");
	cJSON_AddItemToObject(status, "conditions",
	                      cJSON_Parse("[{\"type\":\"Ready\",\"status\":\"True\"}]"));
	alloc = cJSON_AddObjectToObject(status, "allocatable");
	for (int i = 0; i < 70; i++) {
		snprintf(key, sizeof(key), "example.com/r%03d", i);
		cJSON_AddStringToObject(alloc, key, "1K");
	}
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	assert_int_equal(inv.n_labels, 0);
	assert_int_equal(inv.n_allocatable, 0);
	assert_int_equal(inv.problems.n, TAU_AGENT_MAX_PROBLEMS);
	assert_string_equal(inv.problems.items[0],
	                    "label long has a value longer than 1024 bytes; dropped");
	assert_string_equal(inv.problems.items[63], "8 more problems not shown");
	cJSON_Delete(node);
	tau_agent_inventory_free(&inv);
}

static void test_csi_driver_cap(void **state)
{
	tau_agent_inventory inv;
	cJSON *csinode = cJSON_CreateObject();
	cJSON *drivers =
	        cJSON_AddArrayToObject(cJSON_AddObjectToObject(csinode, "spec"), "drivers");
	char name[64];

	(void)state;
	for (int i = 0; i < 70; i++) {
		cJSON *d = cJSON_CreateObject();

		snprintf(name, sizeof(name), "d%02d.example.com", i);
		cJSON_AddStringToObject(d, "name", name);
		cJSON_AddItemToArray(drivers, d);
	}
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, csinode), 0);
	assert_int_equal(inv.n_csi_drivers, TAU_AGENT_MAX_CSI_DRIVERS);
	assert_int_equal(inv.problems.n, 6);
	assert_string_equal(inv.problems.items[0], "more than 64 CSI drivers; d64.example.com "
	                                           "dropped");
	cJSON_Delete(csinode);
	tau_agent_inventory_free(&inv);
}

/* ---------------------------------------------------------------- digest */

static void digest_of(char out[65], cJSON *node)
{
	tau_agent_inventory inv;

	tau_agent_inventory_init(&inv);
	assert_int_equal(tau_agent_inventory_from_node(&inv, node), 0);
	assert_int_equal(tau_agent_inventory_digest(out, &inv), 0);
	tau_agent_inventory_free(&inv);
}

static void set_string(cJSON *node, const char *object_path, const char *key, const char *value)
{
	cJSON *obj = (cJSON *)tau_json_find(node, object_path);

	assert_non_null(obj);
	if (cJSON_GetObjectItemCaseSensitive(obj, key) != NULL)
		cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(value));
	else
		cJSON_AddStringToObject(obj, key, value);
}

static void test_digest(void **state)
{
	cJSON *node = load_fixture("node-nd-h100-v5.json");
	cJSON *shuffled = load_fixture("node-nd-h100-v5.json");
	cJSON *labels = (cJSON *)tau_json_find(shuffled, "metadata.labels");
	cJSON *reversed = cJSON_CreateObject();
	char base[65], other[65];
	cJSON *item;

	(void)state;
	digest_of(base, node);
	assert_int_equal(strlen(base), 64);
	assert_int_equal(strspn(base, "0123456789abcdef"), 64);

	/* Same content, labels in reverse order: same digest. */
	while ((item = labels->child) != NULL) {
		cJSON_DetachItemViaPointer(labels, item);
		/* Prepend (object members are a list; the key stays on the item). */
		assert_true(cJSON_InsertItemInArray(reversed, 0, item));
	}
	cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItem(shuffled, "metadata"), "labels",
	                                       reversed);
	assert_string_equal(tau_json_find(shuffled, "metadata.labels")->child->string,
	                    "topology.kubernetes.io/zone");
	digest_of(other, shuffled);
	assert_string_equal(base, other);

	/* Same value in another notation (1977700032Ki = 1931347.6875Mi): same digest. */
	set_string(shuffled, "status.allocatable", "memory", "1931347.6875Mi");
	digest_of(other, shuffled);
	assert_string_equal(base, other);

	/* resourceVersion alone is not content. */
	set_string(shuffled, "metadata", "resourceVersion", "48213999");
	digest_of(other, shuffled);
	assert_string_equal(base, other);

	/* Any content change: another digest. */
	set_string(shuffled, "metadata.labels", "tau.azure.com/gpu-class", "h100-ib2");
	digest_of(other, shuffled);
	assert_string_not_equal(base, other);
	set_string(shuffled, "metadata.labels", "tau.azure.com/gpu-class", "h100-ib");
	digest_of(other, shuffled);
	assert_string_equal(base, other);

	set_string(shuffled, "status.allocatable", "cpu", "94941m");
	digest_of(other, shuffled);
	assert_string_not_equal(base, other);
	set_string(shuffled, "status.allocatable", "cpu", "94940m");

	set_string(shuffled, "metadata.labels", "new", "");
	digest_of(other, shuffled);
	assert_string_not_equal(base, other);
	cJSON_DeleteItemFromObjectCaseSensitive((cJSON *)tau_json_find(shuffled, "metadata.labels"),
	                                        "new");
	digest_of(other, shuffled);
	assert_string_equal(base, other);

	cJSON_AddBoolToObject(cJSON_GetObjectItem(shuffled, "spec"), "unschedulable", 1);
	digest_of(other, shuffled);
	assert_string_not_equal(base, other);

	cJSON_Delete(node);
	cJSON_Delete(shuffled);
}

static void test_digest_sees_drivers_devices_problems(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	char d0[65], d1[65], d2[65], d3[65];
	cJSON *csinode = load_fixture("csinode-nd-h100-v5.json");

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	assert_int_equal(tau_agent_inventory_digest(d0, &inv), 0);
	assert_int_equal(tau_agent_inventory_apply_csinode(&inv, csinode), 0);
	cJSON_Delete(csinode);
	assert_int_equal(tau_agent_inventory_digest(d1, &inv), 0);
	assert_string_not_equal(d0, d1);
	fake_probe(&probe, 8, 8, 8);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	tau_agent_host_probe_free(&probe);
	assert_int_equal(tau_agent_inventory_digest(d2, &inv), 0);
	assert_string_not_equal(d1, d2);
	assert_int_equal(tau_agent_inventory_add_problem(&inv, "something %d", 1), 0);
	assert_int_equal(tau_agent_inventory_digest(d3, &inv), 0);
	assert_string_not_equal(d2, d3);
	tau_agent_inventory_free(&inv);
	tau_agent_inventory_free(NULL);
}

/*
 * NVML facts through the real dlopen path, from our fake libnvidia-ml.so.1
 * (tests/fakes/nvml): versions, each GPU, a sick GPU named in problems, and the digest
 * moving when a GPU turns unhealthy.
 */
static void test_nvml_facts_from_fake_library(void **state)
{
	char root[] = "/tmp/tau-inv-nvml-XXXXXX";
	char config[sizeof(root) + 16];
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	char d0[65], d1[65];

	(void)state;
	assert_non_null(mkdtemp(root));
	make_dirs(root, "dev");
	snprintf(config, sizeof(config), "%s/nvml.conf", root);
	write_file(root, "nvml.conf",
	           "driver 550.54.15\ncuda 12040\n"
	           "gpu uuid=GPU-aaaa model=NVIDIA_H100_80GB_HBM3\n"
	           "gpu uuid=GPU-bbbb model=NVIDIA_H100_80GB_HBM3\n");
	assert_int_equal(setenv("TAU_FAKE_NVML_CONFIG", config, 1), 0);
	assert_int_equal(
	        setenv(TAU_AGENT_NVML_ENV, TAU_BINARY_DIR "/fakes/nvml-full/libnvidia-ml.so.1", 1),
	        0);

	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_true(probe.nvml_probed);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d0, &inv), 0);
	assert_json(
	        &inv, "devices",
	        "{\"gpus\":{\"present\":2,\"healthy\":2,\"probed\":true,\"deviceNodes\":0,"
	        "\"notProbedReason\":null,\"driverVersion\":\"550.54.15\",\"cudaVersion\":"
	        "\"12.4\",\"nvmlMissingSymbols\":[],\"devices\":["
	        "{\"index\":0,\"uuid\":\"GPU-aaaa\",\"name\":\"NVIDIA H100 80GB HBM3\","
	        "\"healthy\":true,\"reason\":null,\"lost\":false,\"remapPending\":false,"
	        "\"remapFailure\":false,\"remappedRows\":{\"correctable\":0,"
	        "\"uncorrectable\":0},\"retiredPages\":{\"singleBitEcc\":0,"
	        "\"doubleBitEcc\":0},\"retirePending\":false,\"migEnabled\":false,\"migDevices\":"
	        "null,\"migProfiles\":null,"
	        "\"nvlinkLinks\":{"
	        "\"active\":null,\"down\":null},"
	        "\"criticalXids\":{\"count\":0,\"last\":null}},"
	        "{\"index\":1,\"uuid\":\"GPU-bbbb\",\"name\":\"NVIDIA H100 80GB HBM3\","
	        "\"healthy\":true,\"reason\":null,\"lost\":false,\"remapPending\":false,"
	        "\"remapFailure\":false,\"remappedRows\":{\"correctable\":0,"
	        "\"uncorrectable\":0},\"retiredPages\":{\"singleBitEcc\":0,"
	        "\"doubleBitEcc\":0},\"retirePending\":false,\"migEnabled\":false,\"migDevices\":"
	        "null,\"migProfiles\":null,"
	        "\"nvlinkLinks\":{"
	        "\"active\":null,\"down\":null},"
	        "\"criticalXids\":{\"count\":0,\"last\":null}}]},"
	        "\"rdmaPorts\":{\"total\":0,\"up\":0,\"ports\":[]},\"podResources\":{\"probed\":"
	        "false,\"allocatableKnown\":false,\"note\":\"kubelet pod-resources not reachable: "
	        "/var/lib/kubelet/pod-resources/kubelet.sock does not "
	        "exist\",\"devices\":[],\"dropped\":0,\"draDevices\":[],\"draDropped\":0}}");

	/* GPU 1's rows now wait to be remapped: unhealthy, named in problems, a new digest. */
	write_file(root, "nvml.conf",
	           "driver 550.54.15\ncuda 12040\n"
	           "gpu uuid=GPU-aaaa model=NVIDIA_H100_80GB_HBM3\n"
	           "gpu uuid=GPU-bbbb model=NVIDIA_H100_80GB_HBM3 remap_pending=1 unc=1\n");
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	tau_agent_inventory_free(&inv);
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_check_consistency(&inv), 0);
	assert_int_equal(tau_agent_inventory_digest(d1, &inv), 0);
	assert_string_not_equal(d0, d1);
	assert_int_equal(inv.devices.nvml_healthy, 1);
	assert_true(tau_agent_problem_list_has(
	        &inv.problems, "NVML: GPU 1 (GPU-bbbb) is unhealthy: row remap pending: the GPU "
	                       "needs a reset"));
	assert_true(tau_agent_problem_list_has(&inv.problems,
	                                       "NVML: 1 of 2 GPUs failed the health read"));

	tau_agent_host_probe_free(&probe);
	tau_agent_inventory_free(&inv);
	assert_int_equal(setenv(TAU_AGENT_NVML_ENV, "off", 1), 0);
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Kubelet's pod-resources through the fake kubelet: devices and holders, and the digest moving
 * when a pod takes a GPU. */
static void test_pod_resources_from_fake_kubelet(void **state)
{
	char root[] = "/tmp/tau-inv-pr-XXXXXX";
	char sock[96], config[96], tmp[96];
	char *argv[] = {(char *)TAU_BINARY_DIR "/fakes/bin/fake_kubelet",
	                (char *)"--socket",
	                sock,
	                (char *)"--config",
	                config,
	                NULL};
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	char d0[65], d1[65];
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(root));
	make_dirs(root, "dev");
	make_dirs(root, "var/lib/kubelet/pod-resources");
	snprintf(sock, sizeof(sock), "%s/var/lib/kubelet/pod-resources/kubelet.sock", root);
	snprintf(config, sizeof(config), "%s/kubelet.json", root);
	snprintf(tmp, sizeof(tmp), "%s/kubelet.json.tmp", root);
	write_file(root, "kubelet.json",
	           "{\"allocatable\": [{\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-a\","
	           " \"GPU-b\"], \"numa\": 1}]}");
	pid = start_fake(argv);

	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	tau_agent_host_probe_init(&probe);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d0, &inv), 0);
	assert_json(&inv, "devices",
	            "{\"gpus\":{\"present\":0,\"healthy\":null,\"probed\":false,\"deviceNodes\":0,"
	            "\"notProbedReason\":\"NVML disabled by TAU_AGENT_NVML=off\",\"driverVersion\":"
	            "null,\"cudaVersion\":null,\"nvmlMissingSymbols\":[],\"devices\":[]},"
	            "\"rdmaPorts\":{\"total\":0,\"up\":0,\"ports\":[]},\"podResources\":{"
	            "\"probed\":true,\"allocatableKnown\":true,\"note\":null,\"devices\":["
	            "{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-a\",\"numaNode\":1,"
	            "\"allocatable\":true,\"pod\":null},"
	            "{\"resource\":\"nvidia.com/gpu\",\"id\":\"GPU-b\",\"numaNode\":1,"
	            "\"allocatable\":true,\"pod\":null}],\"dropped\":0,\"draDevices\":[],"
	            "\"draDropped\":0}}");

	write_file(
	        root, "kubelet.json.tmp",
	        "{\"allocatable\": [{\"resource\": \"nvidia.com/gpu\", \"ids\": [\"GPU-a\","
	        " \"GPU-b\"], \"numa\": 1}], \"pods\": [{\"namespace\": \"ml\", \"name\":"
	        " \"train-0\", \"containers\": [{\"name\": \"main\", \"devices\": [{\"resource\":"
	        " \"nvidia.com/gpu\", \"ids\": [\"GPU-b\"]}]}]}]}");
	assert_int_equal(rename(tmp, config), 0);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d1, &inv), 0);
	assert_string_not_equal(d0, d1);
	assert_int_equal(inv.devices.podres.n_devices, 2);
	assert_string_equal(inv.devices.podres.devices[1].pod_name, "train-0");
	assert_string_equal(inv.devices.podres.devices[1].container, "main");

	/* A ResourceClaim's DRA device: in the JSON form, and the digest moves. */
	write_file(root, "kubelet.json.tmp",
	           "{\"pods\": [{\"namespace\": \"ml\", \"name\": \"train-1\", \"containers\":"
	           " [{\"name\": \"main\", \"dynamic\": [{\"claimNamespace\": \"ml\","
	           " \"claimName\": \"gpus\", \"devices\": [{\"driver\": \"gpu.nvidia.com\","
	           " \"pool\": \"nd-h100-0\", \"device\": \"gpu-0\"}]}]}]}]}");
	assert_int_equal(rename(tmp, config), 0);
	assert_int_equal(tau_agent_probe_host(&probe, root, NULL, 0), 0);
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d0, &inv), 0);
	assert_string_not_equal(d0, d1);
	assert_json(&inv, "devices",
	            "{\"gpus\":{\"present\":0,\"healthy\":null,\"probed\":false,\"deviceNodes\":0,"
	            "\"notProbedReason\":\"NVML disabled by TAU_AGENT_NVML=off\",\"driverVersion\":"
	            "null,\"cudaVersion\":null,\"nvmlMissingSymbols\":[],\"devices\":[]},"
	            "\"rdmaPorts\":{\"total\":0,\"up\":0,\"ports\":[]},\"podResources\":{"
	            "\"probed\":true,\"allocatableKnown\":true,\"note\":null,\"devices\":[],"
	            "\"dropped\":0,\"draDevices\":[{\"driver\":\"gpu.nvidia.com\",\"pool\":"
	            "\"nd-h100-0\",\"device\":\"gpu-0\",\"claim\":{\"namespace\":\"ml\","
	            "\"name\":\"gpus\"},\"pod\":{\"namespace\":\"ml\",\"name\":\"train-1\","
	            "\"container\":\"main\"}}],\"draDropped\":0}}");

	stop_fake(pid);
	tau_agent_host_probe_free(&probe);
	tau_agent_inventory_free(&inv);
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* One port going down, or its link_downed counter moving, is a change to send. */
static void test_digest_sees_rdma_port_details(void **state)
{
	tau_agent_inventory inv;
	tau_agent_host_probe probe;
	char device[] = "mlx5_0", number[] = "1", rate[] = "400 Gb/sec (4X NDR)",
	     layer[] = "InfiniBand";
	tau_agent_rdma_port port = {.device = device,
	                            .port = number,
	                            .state = 4,
	                            .phys_state = 5,
	                            .rate = rate,
	                            .rate_mbps = 400000,
	                            .link_layer = layer,
	                            .link_downed = 0};
	char d0[65], d1[65], d2[65];

	(void)state;
	inventory_from_fixtures(&inv, "node-nd-h100-v5.json", NULL);
	fake_probe(&probe, 8, 1, 1);
	assert_int_equal(tau_agent_rdma_ports_copy(&probe.rdma_ports, &port, 1), 0);
	probe.n_rdma_ports = 1;
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d0, &inv), 0);
	probe.rdma_ports[0].state = 1;
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d1, &inv), 0);
	assert_string_not_equal(d0, d1);
	probe.rdma_ports[0].link_downed = 1;
	assert_int_equal(tau_agent_inventory_apply_host(&inv, &probe), 0);
	assert_int_equal(tau_agent_inventory_digest(d2, &inv), 0);
	assert_string_not_equal(d1, d2);
	assert_int_equal(inv.devices.n_rdma_ports, 1);
	assert_int_equal(inv.devices.rdma_ports[0].link_downed, 1);
	tau_agent_host_probe_free(&probe);
	tau_agent_inventory_free(&inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_digest_sees_rdma_port_details),
	        cmocka_unit_test(test_nvml_facts_from_fake_library),
	        cmocka_unit_test(test_pod_resources_from_fake_kubelet),
	        cmocka_unit_test(test_nd_h100_node),
	        cmocka_unit_test(test_nd_h100_csinode),
	        cmocka_unit_test(test_nc_a100_mig_cordoned),
	        cmocka_unit_test(test_flex_node_full_json),
	        cmocka_unit_test(test_flex_azure_disk_unsupported_even_self_deployed),
	        cmocka_unit_test(test_flex_deleting_taint),
	        cmocka_unit_test(test_pods_managed_by),
	        cmocka_unit_test(test_pods_disagree),
	        cmocka_unit_test(test_csinode_checks),
	        cmocka_unit_test(test_consistency_mismatches),
	        cmocka_unit_test(test_consistency_nvml_and_rdma_down),
	        cmocka_unit_test(test_consistency_gpu_labels),
	        cmocka_unit_test(test_nd_h100_with_fake_host),
	        cmocka_unit_test(test_not_an_object),
	        cmocka_unit_test(test_malformed_fields),
	        cmocka_unit_test(test_caps),
	        cmocka_unit_test(test_csi_driver_cap),
	        cmocka_unit_test(test_digest),
	        cmocka_unit_test(test_prune_keeps_inventory),
	        cmocka_unit_test(test_digest_sees_drivers_devices_problems),
	};

	return cmocka_run_group_tests(tests, setup_nvml_off, NULL);
}
