/*
 * inventory_json.c - the inventory's JSON form (docs/agent-inventory-json.md) and its digest.
 *
 * The one idea: one rendering serves --once, the report's digest and the tests.  The digest
 * hashes the JSON form minus resourceVersion, which changes on every status heartbeat
 * without changing anything we report.
 */
#include "inventory.h"

#include "tau/error.h"
#include "tau/json.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool add_string_or_null(cJSON *obj, const char *key, const char *value)
{
	return (value != NULL ? cJSON_AddStringToObject(obj, key, value)
	                      : cJSON_AddNullToObject(obj, key)) != NULL;
}

static bool add_tristate(cJSON *obj, const char *key, tau_agent_tristate v)
{
	if (v == TAU_AGENT_UNKNOWN)
		return cJSON_AddNullToObject(obj, key) != NULL;
	return cJSON_AddBoolToObject(obj, key, v == TAU_AGENT_TRUE) != NULL;
}

static bool add_count(cJSON *obj, const char *key, int64_t v)
{
	if (v < 0)
		return cJSON_AddNullToObject(obj, key) != NULL;
	return cJSON_AddNumberToObject(obj, key, (double)v) != NULL;
}

static bool add_kvs(cJSON *obj, const char *key, const tau_agent_kv *kvs, size_t n)
{
	cJSON *map = cJSON_AddObjectToObject(obj, key);

	if (map == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		if (cJSON_AddStringToObject(map, kvs[i].key, kvs[i].value) == NULL)
			return false;
	return true;
}

/* -1 / 0 / 1 as null / false / true. */
static bool add_flag(cJSON *obj, const char *key, int v)
{
	if (v < 0)
		return cJSON_AddNullToObject(obj, key) != NULL;
	return cJSON_AddBoolToObject(obj, key, v != 0) != NULL;
}

/* Fills one array element from its item; false when out of memory. */
typedef bool (*fill_fn)(cJSON *e, const void *item, const void *ctx);

/* key: an array with one object per item (`n` items of `size` bytes), each filled by fill. */
static bool add_objects(cJSON *obj, const char *key, const void *items, size_t n, size_t size,
                        fill_fn fill, const void *ctx)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, key);

	if (arr == NULL)
		return false;
	for (size_t i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();

		if (e == NULL)
			return false;
		cJSON_AddItemToArray(arr, e);
		if (!fill(e, (const char *)items + i * size, ctx))
			return false;
	}
	return true;
}

/* "probe": the live check of a driver, or null when it was not made (no socket). */
static bool add_csi_live(cJSON *obj, const tau_agent_csi_live *l)
{
	cJSON *p;

	if (l == NULL)
		return cJSON_AddNullToObject(obj, "probe") != NULL;
	p = cJSON_AddObjectToObject(obj, "probe");
	return p != NULL && add_flag(p, "ready", l->ready) &&
	       add_string_or_null(p, "endpoint", l->endpoint) &&
	       add_string_or_null(p, "pluginName", l->plugin_name) &&
	       add_string_or_null(p, "vendorVersion", l->vendor_version) &&
	       add_string_or_null(p, "error", l->error);
}

static bool fill_driver(cJSON *e, const void *item, const void *ctx)
{
	const tau_agent_csi_driver *d = item;

	return cJSON_AddStringToObject(e, "name", d->name) != NULL &&
	       cJSON_AddBoolToObject(e, "inCSINode", d->in_csinode) != NULL &&
	       add_tristate(e, "socketPresent", d->socket) &&
	       cJSON_AddStringToObject(e, "managedBy", tau_csi_managed_by_name(d->managed_by)) !=
	               NULL &&
	       cJSON_AddBoolToObject(e, "supported", tau_agent_csi_driver_supported(ctx, d)) !=
	               NULL &&
	       add_csi_live(e, d->live);
}

/* "12.4" from NVML's 12040; NULL-safe buffer of 16. */
static const char *cuda_text(char buf[16], int v)
{
	if (v <= 0)
		return NULL;
	snprintf(buf, 16, "%d.%d", v / 1000, (v % 1000) / 10);
	return buf;
}

/* key: {k1: v1, k2: v2}, each a count (negative: null). */
static bool add_count_pair(cJSON *obj, const char *key, const char *k1, int64_t v1, const char *k2,
                           int64_t v2)
{
	cJSON *o = cJSON_AddObjectToObject(obj, key);

	return o != NULL && add_count(o, k1, v1) && add_count(o, k2, v2);
}

static bool fill_gpu(cJSON *e, const void *item, const void *ctx)
{
	const tau_agent_gpu *g = item;

	(void)ctx;
	return add_count(e, "index", g->index) && add_string_or_null(e, "uuid", g->uuid) &&
	       add_string_or_null(e, "name", g->name) &&
	       cJSON_AddBoolToObject(e, "healthy", g->healthy) != NULL &&
	       add_string_or_null(e, "reason", g->reason) && add_flag(e, "lost", g->lost) &&
	       add_flag(e, "remapPending", g->remap_pending) &&
	       add_flag(e, "remapFailure", g->remap_failure) &&
	       add_count_pair(e, "remappedRows", "correctable", g->remapped_correctable,
	                      "uncorrectable", g->remapped_uncorrectable) &&
	       add_count_pair(e, "retiredPages", "singleBitEcc", g->retired_pages_sbe,
	                      "doubleBitEcc", g->retired_pages_dbe) &&
	       add_flag(e, "retirePending", g->retired_pending) &&
	       add_flag(e, "migEnabled", g->mig_mode) &&
	       add_count(e, "migDevices", g->mig_devices) &&
	       add_string_or_null(e, "migProfiles", g->mig_profiles) &&
	       add_count_pair(e, "nvlinkLinks", "active", g->nvlink_active, "down",
	                      g->nvlink_down) &&
	       add_count_pair(e, "criticalXids", "count", g->xid_critical, "last",
	                      g->last_xid > 0 ? (int64_t)g->last_xid : -1);
}

/* What NVML said beyond the counts: versions, symbols it lacks, each GPU. */
static bool add_nvml(cJSON *gpus, const tau_agent_nvml *n)
{
	cJSON *missing;
	char cuda[16];

	if (!add_string_or_null(gpus, "driverVersion", n->driver_version) ||
	    !add_string_or_null(gpus, "cudaVersion", cuda_text(cuda, n->cuda_version)) ||
	    (missing = cJSON_AddArrayToObject(gpus, "nvmlMissingSymbols")) == NULL)
		return false;
	for (size_t i = 0; i < n->n_missing; i++) {
		cJSON *s = cJSON_CreateString(n->missing_symbols[i]);

		if (s == NULL)
			return false;
		cJSON_AddItemToArray(missing, s);
	}
	return add_objects(gpus, "devices", n->gpus, n->n_gpus, sizeof(*n->gpus), fill_gpu, NULL);
}

static bool fill_rdma_port(cJSON *e, const void *item, const void *ctx)
{
	const tau_agent_rdma_port *p = item;

	(void)ctx;
	return add_string_or_null(e, "device", p->device) &&
	       add_string_or_null(e, "port", p->port) && add_count(e, "state", p->state) &&
	       add_count(e, "physState", p->phys_state) && add_string_or_null(e, "rate", p->rate) &&
	       add_count(e, "rateMbps", p->rate_mbps) &&
	       add_string_or_null(e, "linkLayer", p->link_layer) &&
	       add_count(e, "linkDowned", p->link_downed);
}

/* key: {"namespace", "name"[, "container"]}: who holds a device, or the claim it is in. */
static bool add_ref(cJSON *e, const char *key, const char *ns, const char *name,
                    const char *container, bool with_container)
{
	cJSON *o = cJSON_AddObjectToObject(e, key);

	return o != NULL && add_string_or_null(o, "namespace", ns) &&
	       add_string_or_null(o, "name", name) &&
	       (!with_container || add_string_or_null(o, "container", container));
}

/* One of the DRA devices ResourceClaims hold (podResources.draDevices). */
static bool fill_dra_device(cJSON *e, const void *item, const void *ctx)
{
	const tau_agent_dra_device *d = item;

	(void)ctx;
	return add_string_or_null(e, "driver", d->driver) &&
	       add_string_or_null(e, "pool", d->pool) &&
	       add_string_or_null(e, "device", d->device) &&
	       add_ref(e, "claim", d->claim_namespace, d->claim_name, NULL, false) &&
	       add_ref(e, "pod", d->pod_namespace, d->pod_name, d->container, true);
}

static bool fill_pod_device(cJSON *e, const void *item, const void *ctx)
{
	const tau_agent_pod_device *d = item;

	(void)ctx;
	if (!add_string_or_null(e, "resource", d->resource) ||
	    !add_string_or_null(e, "id", d->id) || !add_count(e, "numaNode", d->numa_node) ||
	    cJSON_AddBoolToObject(e, "allocatable", d->allocatable) == NULL)
		return false;
	if (d->pod_name == NULL)
		return cJSON_AddNullToObject(e, "pod") != NULL;
	return add_ref(e, "pod", d->pod_namespace, d->pod_name, d->container, true);
}

static bool add_pod_resources(cJSON *obj, const tau_agent_devices *dev)
{
	const tau_agent_podres *r = &dev->podres;
	cJSON *pr = cJSON_AddObjectToObject(obj, "podResources");
	const char *note = r->note;

	if (!dev->host_probed)
		note = "host not probed";
	return pr != NULL && cJSON_AddBoolToObject(pr, "probed", r->probed) != NULL &&
	       cJSON_AddBoolToObject(pr, "allocatableKnown", r->allocatable_known) != NULL &&
	       add_string_or_null(pr, "note", note) &&
	       add_objects(pr, "devices", r->devices, r->n_devices, sizeof(*r->devices),
	                   fill_pod_device, NULL) &&
	       add_count(pr, "dropped", (int64_t)r->n_dropped) &&
	       add_objects(pr, "draDevices", r->dra, r->n_dra, sizeof(*r->dra), fill_dra_device,
	                   NULL) &&
	       add_count(pr, "draDropped", (int64_t)r->n_dra_dropped);
}

static bool add_devices(cJSON *obj, const tau_agent_inventory *inv)
{
	const tau_agent_devices *dev = &inv->devices;
	cJSON *devices = cJSON_AddObjectToObject(obj, "devices");
	cJSON *gpus, *rdma;
	const char *reason = NULL;
	int64_t present = dev->nvml_probed ? dev->nvml_gpus : dev->gpu_device_nodes;

	if (devices == NULL || (gpus = cJSON_AddObjectToObject(devices, "gpus")) == NULL)
		return false;
	if (!dev->host_probed)
		reason = "host not probed";
	else if (!dev->nvml_probed)
		reason = dev->nvml_note != NULL ? dev->nvml_note : "NVML not probed";
	if (!add_count(gpus, "present", present) ||
	    !add_count(gpus, "healthy", dev->nvml_probed ? dev->nvml_healthy : -1) ||
	    cJSON_AddBoolToObject(gpus, "probed", dev->nvml_probed) == NULL ||
	    !add_count(gpus, "deviceNodes", dev->gpu_device_nodes) ||
	    !add_string_or_null(gpus, "notProbedReason", reason) || !add_nvml(gpus, &dev->nvml))
		return false;
	rdma = cJSON_AddObjectToObject(devices, "rdmaPorts");
	return rdma != NULL && add_count(rdma, "total", dev->rdma_ports_total) &&
	       add_count(rdma, "up", dev->rdma_ports_up) &&
	       add_objects(rdma, "ports", dev->rdma_ports, dev->n_rdma_ports,
	                   sizeof(*dev->rdma_ports), fill_rdma_port, NULL) &&
	       add_pod_resources(devices, dev);
}

int tau_agent_inventory_to_json(cJSON **out, const tau_agent_inventory *inv)
{
	cJSON *root, *problems;
	bool ok;

	if (out == NULL || inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory or output");
	root = cJSON_CreateObject();
	if (root == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory building inventory JSON");
	ok = add_string_or_null(root, "nodeName", inv->node_name) &&
	     add_string_or_null(root, "nodeUID", inv->node_uid) &&
	     add_string_or_null(root, "resourceVersion", inv->resource_version) &&
	     add_string_or_null(root, "providerID", inv->provider_id) &&
	     add_string_or_null(root, "gpuClass", inv->gpu_class) &&
	     add_string_or_null(root, "os", inv->os) &&
	     add_string_or_null(root, "kind", tau_node_kind_name(inv->kind)) &&
	     add_tristate(root, "ready", inv->ready) &&
	     add_tristate(root, "schedulable", inv->schedulable) &&
	     add_tristate(root, "deleting", inv->deleting) &&
	     add_kvs(root, "labels", inv->labels, inv->n_labels) &&
	     add_kvs(root, "allocatable", inv->allocatable, inv->n_allocatable) &&
	     add_objects(root, "csiDrivers", inv->csi_drivers, inv->n_csi_drivers,
	                 sizeof(*inv->csi_drivers), fill_driver, inv) &&
	     add_devices(root, inv);
	if (ok) {
		problems = cJSON_AddArrayToObject(root, "problems");
		ok = problems != NULL;
		for (size_t i = 0; ok && i < inv->problems.n; i++) {
			cJSON *s = cJSON_CreateString(inv->problems.items[i]);

			ok = s != NULL;
			if (ok)
				cJSON_AddItemToArray(problems, s);
		}
	}
	if (!ok) {
		cJSON_Delete(root);
		return tau_error_set(TAU_ENOMEM, "out of memory building inventory JSON");
	}
	*out = root;
	return 0;
}

int tau_agent_inventory_digest(char out[65], const tau_agent_inventory *inv)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	cJSON *json = NULL;
	char *text = NULL;
	int rc;

	if (out == NULL || inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory or output");
	rc = tau_agent_inventory_to_json(&json, inv);
	if (rc < 0)
		return rc;
	cJSON_DeleteItemFromObjectCaseSensitive(json, "resourceVersion");
	rc = tau_json_print(&text, json);
	cJSON_Delete(json);
	if (rc < 0)
		return rc;
	if (EVP_Digest(text, strlen(text), md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32) {
		free(text);
		return tau_error_set(TAU_EINTERNAL, "SHA-256 of the inventory failed");
	}
	free(text);
	for (unsigned int i = 0; i < md_len; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 0xf];
	}
	out[64] = '\0';
	return 0;
}
