/*
 * inventory.c - the node inventory tau-node-agent reports, as an object: init, free,
 * problems, lookups, and its table of CSI drivers.
 *
 * The one idea: an inventory is a pure function of its inputs (Node, CSINode, pods on the
 * node, host probe), rebuilt from scratch on every change (inventory.h gives the order of
 * the readers).  Nothing keeps history.  Input is never trusted: each field that cannot be
 * read becomes unknown (NULL, -1, TAU_AGENT_UNKNOWN -> JSON null) and a problem says why,
 * and every list that grows from input has a cap.  Missing is never reported as zero.
 * The readers live beside it: inventory_node.c (the Node), inventory_apply.c (CSINode,
 * pods, host probe), inventory_check.c (consistency), inventory_json.c (JSON and digest),
 * inventory_prune.c (what the informers keep).
 */
#include "inventory.h"
#include "inventory_internal.h"

#include "tau/error.h"
#include "tau/mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DRIVER_AZURE_DISK "disk.csi.azure.com"

/* ------------------------------------------------------- init, free, problems */

void tau_agent_inventory_init(tau_agent_inventory *inv)
{
	memset(inv, 0, sizeof(*inv));
	inv->kind = TAU_NODE_KIND_UNKNOWN;
	inv->ready = TAU_AGENT_UNKNOWN;
	inv->schedulable = TAU_AGENT_UNKNOWN;
	inv->deleting = TAU_AGENT_UNKNOWN;
	inv->devices.gpu_device_nodes = -1;
	inv->devices.nvml_gpus = -1;
	inv->devices.nvml_healthy = -1;
	inv->devices.rdma_ports_total = -1;
	inv->devices.rdma_ports_up = -1;
	tau_agent_nvml_init(&inv->devices.nvml);
	tau_agent_podres_init(&inv->devices.podres);
}

void tau_agent_kvs_free(tau_agent_kv *kvs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kvs[i].key);
		free(kvs[i].value);
	}
	free(kvs);
}

void tau_agent_inventory_free(tau_agent_inventory *inv)
{
	if (inv == NULL)
		return;
	tau_free_many(inv->node_name, inv->node_uid, inv->resource_version, inv->provider_id,
	              inv->gpu_class, inv->os);
	tau_agent_kvs_free(inv->labels, inv->n_labels);
	tau_agent_kvs_free(inv->allocatable, inv->n_allocatable);
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		free(inv->csi_drivers[i].name);
		tau_agent_csi_live_free(inv->csi_drivers[i].live, 1);
	}
	free(inv->csi_drivers);
	free(inv->devices.nvml_note);
	tau_agent_nvml_free(&inv->devices.nvml);
	tau_agent_podres_free(&inv->devices.podres);
	tau_agent_rdma_ports_free(inv->devices.rdma_ports, inv->devices.n_rdma_ports);
	tau_agent_problem_list_free(&inv->problems);
	tau_agent_inventory_init(inv);
}

int tau_agent_inventory_add_problem(tau_agent_inventory *inv, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = tau_agent_problem_addv(&inv->problems, fmt, ap);
	va_end(ap);
	return rc;
}

/* Copy s if it is at most TAU_AGENT_MAX_STRING bytes. */
int tau_agent_copy_bounded(char **out, const char *s)
{
	size_t len = strnlen(s, TAU_AGENT_MAX_STRING + 1);
	char *c;

	if (len > TAU_AGENT_MAX_STRING)
		return tau_error_set(TAU_ETOOBIG, "longer than %d bytes", TAU_AGENT_MAX_STRING);
	c = malloc(len + 1);
	if (c == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory copying a string");
	memcpy(c, s, len);
	c[len] = '\0';
	*out = c;
	return 0;
}

int tau_agent_kv_cmp(const void *a, const void *b)
{
	const tau_agent_kv *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static const tau_agent_kv *kv_find(const tau_agent_kv *kvs, size_t n, const char *key)
{
	tau_agent_kv probe = {.key = (char *)(uintptr_t)key, .value = NULL};

	if (n == 0 || key == NULL)
		return NULL;
	return bsearch(&probe, kvs, n, sizeof(*kvs), tau_agent_kv_cmp);
}

const char *tau_agent_inventory_label(const tau_agent_inventory *inv, const char *key)
{
	const tau_agent_kv *kv = kv_find(inv->labels, inv->n_labels, key);

	return kv != NULL ? kv->value : NULL;
}

const char *tau_agent_inventory_allocatable(const tau_agent_inventory *inv, const char *name)
{
	const tau_agent_kv *kv = kv_find(inv->allocatable, inv->n_allocatable, name);

	return kv != NULL ? kv->value : NULL;
}

/* ------------------------------------------------------------ CSI drivers */

const tau_agent_csi_driver *tau_agent_inventory_find_driver(const tau_agent_inventory *inv,
                                                            const char *name)
{
	for (size_t i = 0; i < inv->n_csi_drivers; i++)
		if (strcmp(inv->csi_drivers[i].name, name) == 0)
			return &inv->csi_drivers[i];
	return NULL;
}

/*
 * Find or add (sorted by name) the entry for a driver.  Returns 0, or
 * -TAU_ETOOBIG (a problem is recorded) / -TAU_ENOMEM.
 */
int tau_agent_inventory_driver_get(tau_agent_inventory *inv, const char *name,
                                   tau_agent_csi_driver **out)
{
	size_t pos = 0;
	char *copy = NULL;
	int rc;

	while (pos < inv->n_csi_drivers) {
		int c = strcmp(inv->csi_drivers[pos].name, name);

		if (c == 0) {
			*out = &inv->csi_drivers[pos];
			return 0;
		}
		if (c > 0)
			break;
		pos++;
	}
	if (inv->n_csi_drivers == TAU_AGENT_MAX_CSI_DRIVERS) {
		rc = tau_agent_inventory_add_problem(inv,
		                                     "more than %d CSI drivers; %.200s dropped",
		                                     TAU_AGENT_MAX_CSI_DRIVERS, name);
		return rc < 0 ? rc : -TAU_ETOOBIG;
	}
	rc = tau_agent_copy_bounded(&copy, name);
	if (rc == -TAU_ETOOBIG) {
		rc = tau_agent_inventory_add_problem(
		        inv, "CSI driver name \"%.64s...\" is too long; dropped", name);
		return rc < 0 ? rc : -TAU_ETOOBIG;
	}
	if (rc < 0)
		return rc;
	if (inv->csi_drivers == NULL) {
		inv->csi_drivers = calloc(TAU_AGENT_MAX_CSI_DRIVERS, sizeof(*inv->csi_drivers));
		if (inv->csi_drivers == NULL) {
			free(copy);
			return tau_error_set(TAU_ENOMEM, "out of memory for CSI drivers");
		}
	}
	memmove(&inv->csi_drivers[pos + 1], &inv->csi_drivers[pos],
	        (inv->n_csi_drivers - pos) * sizeof(*inv->csi_drivers));
	memset(&inv->csi_drivers[pos], 0, sizeof(*inv->csi_drivers));
	inv->csi_drivers[pos].name = copy;
	inv->csi_drivers[pos].socket = TAU_AGENT_UNKNOWN;
	inv->csi_drivers[pos].managed_by = TAU_CSI_MANAGED_UNKNOWN;
	inv->n_csi_drivers++;
	*out = &inv->csi_drivers[pos];
	return 0;
}

bool tau_agent_csi_driver_supported(const tau_agent_inventory *inv,
                                    const tau_agent_csi_driver *driver)
{
	if (inv == NULL || driver == NULL || inv->kind != TAU_NODE_KIND_FLEX)
		return true;
	if (driver->managed_by == TAU_CSI_MANAGED_AKS_ADDON)
		return false;
	return strcmp(driver->name, DRIVER_AZURE_DISK) != 0;
}
