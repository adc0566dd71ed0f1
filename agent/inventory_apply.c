/*
 * inventory_apply.c - what the CSINode, the pods on the node and the host probe add to the
 * inventory the Node started.
 *
 * The one idea: each of these inputs speaks of CSI drivers or devices the node holds, and
 * is merged into the inventory's driver table and device facts by name.  Who deployed a CSI
 * driver is read from the labels and args of its node pod by libtau's rules
 * (tau/csi.h) that `tau storage check` shares; unmarked pods give "Unknown" rather
 * than a guess.
 */
#include "inventory.h"
#include "inventory_internal.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdlib.h>
#include <string.h>

int tau_agent_inventory_apply_csinode(tau_agent_inventory *inv, const cJSON *csinode)
{
	const cJSON *drivers = NULL, *owners = NULL;
	const cJSON *d;
	const char *name = NULL;
	int rc;

	if (inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory");
	for (size_t i = 0; i < inv->n_csi_drivers; i++)
		inv->csi_drivers[i].in_csinode = false;
	if (csinode == NULL)
		return 0;
	if (!cJSON_IsObject(csinode)) {
		rc = tau_agent_inventory_add_problem(
		        inv, "CSINode is not a JSON object; CSI registration unknown");
		return rc < 0 ? rc : tau_error_set(TAU_EINVAL, "CSINode is not a JSON object");
	}
	if (tau_json_get_string(&name, csinode, "metadata.name") == 0 && inv->node_name != NULL &&
	    strcmp(name, inv->node_name) != 0) {
		rc = tau_agent_inventory_add_problem(
		        inv, "CSINode %.200s is not this node's (%s); ignored", name,
		        inv->node_name);
		return rc < 0 ? rc : tau_error_set(TAU_EINVAL, "CSINode of another node");
	}
	/* kubelet makes the Node its owner; another uid means a CSINode left from an old Node. */
	if (inv->node_uid != NULL &&
	    tau_json_get_array(&owners, csinode, "metadata.ownerReferences") == 0) {
		const cJSON *o;

		cJSON_ArrayForEach(o, owners)
		{
			const char *kind = NULL, *uid = NULL;

			if (tau_json_get_string(&kind, o, "kind") == 0 &&
			    strcmp(kind, "Node") == 0 && tau_json_get_string(&uid, o, "uid") == 0 &&
			    strcmp(uid, inv->node_uid) != 0) {
				rc = tau_agent_inventory_add_problem(
				        inv,
				        "CSINode is owned by Node uid %.64s, not this node's uid "
				        "%s",
				        uid, inv->node_uid);
				if (rc < 0)
					return rc;
			}
		}
	}
	rc = tau_json_get_array(&drivers, csinode, "spec.drivers");
	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc < 0) {
		rc = tau_agent_inventory_add_problem(
		        inv, "CSINode spec.drivers is not an array; CSI registration unknown");
		return rc < 0 ? rc : tau_error_set(TAU_EINVAL, "CSINode spec.drivers malformed");
	}
	cJSON_ArrayForEach(d, drivers)
	{
		const char *dname = NULL;
		tau_agent_csi_driver *entry = NULL;

		if (tau_json_get_string(&dname, d, "name") < 0 || dname[0] == '\0') {
			rc = tau_agent_inventory_add_problem(
			        inv, "CSINode lists a driver without a name; skipped");
			if (rc < 0)
				return rc;
			continue;
		}
		rc = tau_agent_inventory_driver_get(inv, dname, &entry);
		if (rc == -TAU_ETOOBIG)
			continue;
		if (rc < 0)
			return rc;
		entry->in_csinode = true;
	}
	return 0;
}

/* ----------------------------------------------------------------- pods */

static bool driver_known(void *ctx, const char *driver)
{
	return tau_agent_inventory_find_driver(ctx, driver) != NULL;
}

static int add_problem_text(void *ctx, const char *text)
{
	tau_agent_inventory *inv = ctx;

	return tau_agent_problem_add_text(&inv->problems, text);
}

int tau_agent_inventory_apply_pods(tau_agent_inventory *inv, const cJSON *pod_list)
{
	tau_csi_origin *origins = NULL;
	size_t n = 0;
	int rc;

	if (inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory");
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		inv->csi_drivers[i].has_node_pod = false;
		inv->csi_drivers[i].managed_by = TAU_CSI_MANAGED_UNKNOWN;
	}
	if (pod_list == NULL)
		return 0;
	rc = tau_csi_origins_from_pods(&origins, &n, pod_list, inv->node_name, driver_known, inv,
	                               add_problem_text, inv);
	if (rc == -TAU_EINVAL) {
		rc = tau_agent_inventory_add_problem(
		        inv, "pod list is malformed; who deployed the CSI drivers is unknown");
		return rc < 0 ? rc : tau_error_set(TAU_EINVAL, "pod list is malformed");
	}
	for (size_t i = 0; rc == 0 && i < n; i++) {
		tau_agent_csi_driver *d = NULL;

		rc = tau_agent_inventory_driver_get(inv, origins[i].name, &d);
		if (rc == -TAU_ETOOBIG) {
			rc = 0;
			continue;
		}
		if (rc == 0) {
			d->has_node_pod = true;
			d->managed_by = origins[i].managed_by;
		}
	}
	tau_csi_origins_free(origins, n);
	return rc;
}

/* ------------------------------------------------------------------ host */

int tau_agent_inventory_apply_host(tau_agent_inventory *inv, const tau_agent_host_probe *probe)
{
	int rc;

	if (inv == NULL || probe == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory or probe");
	free(inv->devices.nvml_note);
	inv->devices.nvml_note = NULL;
	inv->devices.host_probed = true;
	inv->devices.gpu_device_nodes = probe->gpu_device_nodes;
	inv->devices.nvml_probed = probe->nvml_probed;
	inv->devices.nvml_gpus = probe->nvml_probed ? probe->nvml_gpus : -1;
	inv->devices.nvml_healthy = probe->nvml_probed ? probe->nvml_healthy : -1;
	inv->devices.rdma_ports_total = probe->rdma_ports_total;
	inv->devices.rdma_ports_up = probe->rdma_ports_up;
	rc = tau_agent_nvml_copy(&inv->devices.nvml, &probe->nvml);
	if (rc == 0)
		rc = tau_agent_podres_copy(&inv->devices.podres, &probe->podres);
	if (rc < 0)
		return rc;
	tau_agent_rdma_ports_free(inv->devices.rdma_ports, inv->devices.n_rdma_ports);
	inv->devices.rdma_ports = NULL;
	inv->devices.n_rdma_ports = 0;
	rc = tau_agent_rdma_ports_copy(&inv->devices.rdma_ports, probe->rdma_ports,
	                               probe->n_rdma_ports);
	if (rc < 0)
		return rc;
	inv->devices.n_rdma_ports = probe->n_rdma_ports;
	if (probe->nvml_note != NULL) {
		rc = tau_agent_copy_bounded(&inv->devices.nvml_note, probe->nvml_note);
		if (rc == -TAU_ENOMEM)
			return rc;
	}
	for (size_t i = 0; i < probe->n_sockets; i++) {
		tau_agent_csi_driver *d = NULL;

		rc = tau_agent_inventory_driver_get(inv, probe->sockets[i].driver, &d);
		if (rc == -TAU_ETOOBIG)
			continue;
		if (rc < 0)
			return rc;
		switch (probe->sockets[i].state) {
		case TAU_AGENT_SOCKET_PRESENT:
			d->socket = TAU_AGENT_TRUE;
			break;
		case TAU_AGENT_SOCKET_ABSENT:
			d->socket = TAU_AGENT_FALSE;
			break;
		case TAU_AGENT_SOCKET_UNKNOWN:
			d->socket = TAU_AGENT_UNKNOWN;
			break;
		}
	}
	for (size_t i = 0; i < probe->n_csi_live; i++) {
		tau_agent_csi_driver *d = NULL;

		rc = tau_agent_inventory_driver_get(inv, probe->csi_live[i].driver, &d);
		if (rc == -TAU_ETOOBIG)
			continue;
		if (rc < 0)
			return rc;
		tau_agent_csi_live_free(d->live, 1);
		d->live = NULL;
		rc = tau_agent_csi_live_copy(&d->live, &probe->csi_live[i], 1);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < probe->problems.n; i++) {
		rc = tau_agent_problem_add_text(&inv->problems, probe->problems.items[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}
