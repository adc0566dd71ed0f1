/*
 * inventory_check.c - the inventory's consistency checks.
 *
 * The one idea: compare what Kubernetes says with what the host probe saw (GPUs advertised
 * against device nodes and NVML, RDMA resources against ports up, CSI registration against
 * sockets and node pods) and add a problem for each mismatch; nothing is corrected.
 */
#include "inventory.h"
#include "inventory_internal.h"

#include "tau/error.h"
#include "tau/quantity.h"
#include "tau/str.h"

#include <string.h>

#define LABEL_MIG_STRATEGY  "nvidia.com/mig.strategy"
#define LABEL_GPU_REPLICAS  "nvidia.com/gpu.replicas"
#define RESOURCE_MIG_PREFIX "nvidia.com/mig-"
#define RESOURCE_RDMA_IB    "rdma/ib"

/* Integer value of a canonical quantity (rounded up), or -1 when absent/unreadable. */
static int64_t quantity_int(const char *text)
{
	tau_quantity q;
	int64_t v = -1;

	if (text == NULL || tau_quantity_parse_str(&q, text) < 0 || tau_quantity_value(&v, &q) < 0)
		return -1;
	return v;
}

static int check_gpus(tau_agent_inventory *inv)
{
	const tau_agent_devices *dev = &inv->devices;
	const char *advertised = tau_agent_inventory_allocatable(inv, TAU_AGENT_RESOURCE_GPU);
	const char *strategy = tau_agent_inventory_label(inv, LABEL_MIG_STRATEGY);
	int64_t gpus = quantity_int(advertised);
	int64_t replicas = quantity_int(tau_agent_inventory_label(inv, LABEL_GPU_REPLICAS));
	bool mig = false;
	int rc;

	/* Time-slicing replicas are small; a wild label must not overflow the product. */
	if (replicas < 1 || replicas > 1024)
		replicas = 1;
	for (size_t i = 0; i < inv->n_allocatable; i++)
		if (strncmp(inv->allocatable[i].key, RESOURCE_MIG_PREFIX,
		            strlen(RESOURCE_MIG_PREFIX)) == 0 &&
		    quantity_int(inv->allocatable[i].value) > 0)
			mig = true;

	if (advertised != NULL && gpus >= 0) {
		/* Under MIG "single", nvidia.com/gpu counts MIG slices, not GPUs. */
		if (tau_str_eq_both_set(strategy, "single"))
			goto health;
		if (dev->gpu_device_nodes >= 0 && gpus != dev->gpu_device_nodes * replicas) {
			rc = tau_agent_inventory_add_problem(
			        inv,
			        "allocatable nvidia.com/gpu is %s but %lld NVIDIA device nodes "
			        "are present under /dev%s",
			        advertised, (long long)dev->gpu_device_nodes,
			        replicas > 1 ? " (times nvidia.com/gpu.replicas)" : "");
			if (rc < 0)
				return rc;
		}
		if (dev->nvml_probed && gpus != dev->nvml_gpus * replicas) {
			rc = tau_agent_inventory_add_problem(
			        inv,
			        "allocatable nvidia.com/gpu is %s but NVML reports %lld GPUs%s",
			        advertised, (long long)dev->nvml_gpus,
			        replicas > 1 ? " (times nvidia.com/gpu.replicas)" : "");
			if (rc < 0)
				return rc;
		}
	} else if (!mig) {
		int64_t local = dev->nvml_probed ? dev->nvml_gpus : dev->gpu_device_nodes;

		if (local > 0) {
			rc = tau_agent_inventory_add_problem(
			        inv,
			        "%lld NVIDIA GPUs are present locally but the node advertises no "
			        "nvidia.com/gpu or MIG resource (is the device plugin running?)",
			        (long long)local);
			if (rc < 0)
				return rc;
		}
	}
health:
	if (dev->nvml_probed && dev->nvml_healthy >= 0 && dev->nvml_healthy < dev->nvml_gpus) {
		rc = tau_agent_inventory_add_problem(
		        inv, "NVML: %lld of %lld GPUs failed the health read",
		        (long long)(dev->nvml_gpus - dev->nvml_healthy), (long long)dev->nvml_gpus);
		if (rc < 0)
			return rc;
	}
	/* Each sick GPU by name, so explain can say which one and what to do. */
	for (size_t i = 0; dev->nvml_probed && i < dev->nvml.n_gpus; i++) {
		const tau_agent_gpu *g = &dev->nvml.gpus[i];

		if (g->healthy)
			continue;
		rc = tau_agent_inventory_add_problem(
		        inv, "NVML: GPU %u (%s) is unhealthy: %s", g->index,
		        g->uuid != NULL ? g->uuid : "UUID unknown",
		        g->reason != NULL ? g->reason : "no reason given");
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int check_rdma(tau_agent_inventory *inv)
{
	const tau_agent_devices *dev = &inv->devices;
	int rc;

	if (dev->rdma_ports_up < 0)
		return 0;
	for (size_t i = 0; i < inv->n_allocatable; i++) {
		const tau_agent_kv *kv = &inv->allocatable[i];
		int64_t v;

		if (strncmp(kv->key, "rdma/", 5) != 0)
			continue;
		v = quantity_int(kv->value);
		if (v <= 0)
			continue;
		if (dev->rdma_ports_up == 0) {
			rc = tau_agent_inventory_add_problem(
			        inv, "allocatable %s is %s but no RDMA port is up (%lld found)",
			        kv->key, kv->value, (long long)dev->rdma_ports_total);
		} else if (strcmp(kv->key, RESOURCE_RDMA_IB) == 0 && v > dev->rdma_ports_up) {
			/* rdma/ib is one per InfiniBand VF/NIC; shared-device names count pod
			 * slots. */
			rc = tau_agent_inventory_add_problem(
			        inv, "allocatable %s is %s but only %lld RDMA ports are up",
			        kv->key, kv->value, (long long)dev->rdma_ports_up);
		} else {
			rc = 0;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int check_drivers(tau_agent_inventory *inv)
{
	int rc = 0;

	for (size_t i = 0; i < inv->n_csi_drivers && rc == 0; i++) {
		const tau_agent_csi_driver *d = &inv->csi_drivers[i];

		if (d->in_csinode && d->socket == TAU_AGENT_FALSE)
			rc = tau_agent_inventory_add_problem(
			        inv,
			        "CSI driver %s is registered in CSINode but %s/%s-reg.sock is "
			        "missing (driver pod gone?)",
			        d->name, TAU_AGENT_PLUGIN_REGISTRY, d->name);
		else if (!d->in_csinode && d->socket == TAU_AGENT_TRUE)
			rc = tau_agent_inventory_add_problem(
			        inv,
			        "CSI driver %s has a registration socket but is not in CSINode "
			        "(registration failed?)",
			        d->name);
		else if (!d->in_csinode && d->has_node_pod)
			rc = tau_agent_inventory_add_problem(
			        inv,
			        "CSI driver %s has a node pod here but kubelet has not "
			        "registered it (not in CSINode)",
			        d->name);
		if (rc == 0 && !tau_agent_csi_driver_supported(inv, d))
			rc = tau_agent_inventory_add_problem(
			        inv, "CSI driver %s is not supported on a Flex node (%s)", d->name,
			        d->managed_by == TAU_CSI_MANAGED_AKS_ADDON
			                ? "provided by the AKS add-on"
			                : "Azure managed disks attach only to Azure VMs");
	}
	return rc;
}

int tau_agent_inventory_check_consistency(tau_agent_inventory *inv)
{
	int rc;

	if (inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory");
	rc = check_drivers(inv);
	if (rc == 0 && inv->devices.host_probed) {
		rc = check_gpus(inv);
		if (rc == 0)
			rc = check_rdma(inv);
	}
	return rc;
}
