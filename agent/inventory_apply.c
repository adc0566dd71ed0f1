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
#include "tau/mem.h"

#include <stdlib.h>
#include <string.h>

/*
 * The entry of driver `name` for an answer about it: *d, or NULL when the table is full or
 * the name too long (a problem is recorded and the answer dropped).  @return 0 or -TAU_ENOMEM.
 */
static int driver_entry(tau_agent_csi_driver **d, tau_agent_inventory *inv, const char *name)
{
	int rc = tau_agent_inventory_driver_get(inv, name, d);

	if (rc == -TAU_ETOOBIG) {
		*d = NULL;
		return 0;
	}
	return rc;
}

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
		if ((rc = driver_entry(&entry, inv, dname)) < 0)
			return rc;
		if (entry != NULL)
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

		rc = driver_entry(&d, inv, origins[i].name);
		if (rc == 0 && d != NULL) {
			d->has_node_pod = true;
			d->managed_by = origins[i].managed_by;
		}
	}
	tau_csi_origins_free(origins, n);
	return rc;
}

/* ------------------------------------------------------------------ host */

/* CsiDriver.socket of each registration socket state the host probe found. */
static const tau_agent_tristate socket_present[] = {
        [TAU_AGENT_SOCKET_UNKNOWN] = TAU_AGENT_UNKNOWN,
        [TAU_AGENT_SOCKET_ABSENT] = TAU_AGENT_FALSE,
        [TAU_AGENT_SOCKET_PRESENT] = TAU_AGENT_TRUE,
};

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

		if ((rc = driver_entry(&d, inv, probe->sockets[i].driver)) < 0)
			return rc;
		if (d != NULL && (size_t)probe->sockets[i].state < TAU_N_ELEMENTS(socket_present))
			d->socket = socket_present[probe->sockets[i].state];
	}
	for (size_t i = 0; i < probe->n_csi_live; i++) {
		tau_agent_csi_driver *d = NULL;

		if ((rc = driver_entry(&d, inv, probe->csi_live[i].driver)) < 0)
			return rc;
		if (d == NULL)
			continue;
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
