/*
 * inventory.c - turn this node's Kubernetes objects and host probe into the
 * inventory tau-node-agent reports.
 *
 * The one idea: an inventory is a pure function of its inputs (Node, CSINode,
 * pods on the node, host probe).  Nothing here keeps history, so the agent
 * rebuilds it on every change and sends it when the digest differs.  Input
 * is never trusted: each field that cannot be read becomes unknown (NULL,
 * -1, TAU_AGENT_UNKNOWN -> JSON null) and a problem says why, and every list
 * that grows from input has a cap.  Missing is never reported as zero.
 *
 * Decisions worth knowing (see docs/agent-inventory-json.md):
 *  - Quantities are re-emitted in canonical form (tau_quantity_format), so
 *    "1024Mi" in a Node becomes "1Gi", as the API server would print it.
 *  - Who deployed a CSI driver is read from the labels and args of its node
 *    pod, and the node kind from its labels, by libtau's rules (tau/csiorigin.h,
 *    tau/nodekind.h) that `tau storage check` shares; unmarked pods give
 *    "Unknown" rather than a guess.
 *  - The digest hashes the JSON form minus resourceVersion, which changes on
 *    every status heartbeat without changing anything we report.
 */
#include "inventory.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_MIG_STRATEGY  "nvidia.com/mig.strategy"
#define LABEL_GPU_REPLICAS  "nvidia.com/gpu.replicas"
#define RESOURCE_MIG_PREFIX "nvidia.com/mig-"
#define RESOURCE_RDMA_IB    "rdma/ib"
#define DRIVER_AZURE_DISK   "disk.csi.azure.com"

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

static void free_kvs(tau_agent_kv *kvs, size_t n)
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
	free(inv->node_name);
	free(inv->node_uid);
	free(inv->resource_version);
	free(inv->provider_id);
	free(inv->gpu_class);
	free(inv->os);
	free_kvs(inv->labels, inv->n_labels);
	free_kvs(inv->allocatable, inv->n_allocatable);
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
static int copy_bounded(char **out, const char *s)
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

/*
 * Read an optional string at path into *dst.  Absent is fine (stays NULL);
 * a wrong type or an oversized value is a problem.  Returns 0 or -TAU_ENOMEM.
 */
static int take_string(tau_agent_inventory *inv, const cJSON *root, const char *what,
                       const char *path, char **dst)
{
	const char *s = NULL;
	int rc = tau_json_get_string(&s, root, path);

	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc < 0)
		return tau_agent_inventory_add_problem(inv, "%s %s is not a string; unknown", what,
		                                       path);
	rc = copy_bounded(dst, s);
	if (rc == -TAU_ETOOBIG)
		return tau_agent_inventory_add_problem(inv,
		                                       "%s %s is longer than %d bytes; unknown",
		                                       what, path, TAU_AGENT_MAX_STRING);
	return rc;
}

static int kv_cmp(const void *a, const void *b)
{
	const tau_agent_kv *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static const tau_agent_kv *kv_find(const tau_agent_kv *kvs, size_t n, const char *key)
{
	tau_agent_kv probe = {.key = (char *)(uintptr_t)key, .value = NULL};

	if (n == 0 || key == NULL)
		return NULL;
	return bsearch(&probe, kvs, n, sizeof(*kvs), kv_cmp);
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

/* ------------------------------------------------------------------ Node */

/*
 * Read metadata.labels (what == "label") or status.allocatable (what ==
 * "allocatable") into a sorted array.  Values of allocatable are quantities,
 * re-emitted canonically.
 */
static int take_map(tau_agent_inventory *inv, const cJSON *node, const char *path, const char *what,
                    size_t cap, tau_agent_kv **out, size_t *n_out)
{
	bool quantities = strcmp(what, "allocatable") == 0;
	const cJSON *map = NULL;
	const cJSON *item;
	tau_agent_kv *kvs = NULL;
	size_t n = 0, dropped = 0;
	int size, rc;

	rc = tau_json_get_object(&map, node, path);
	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc < 0)
		return tau_agent_inventory_add_problem(inv, "Node %s is not an object; %s unknown",
		                                       path, what);
	size = cJSON_GetArraySize(map);
	if (size <= 0)
		return 0;
	kvs = calloc((size_t)size < cap ? (size_t)size : cap, sizeof(*kvs));
	if (kvs == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading %s", path);

	cJSON_ArrayForEach(item, map)
	{
		const char *key = item->string;
		char canonical[TAU_QUANTITY_STR_MAX];
		const char *value = NULL;
		bool duplicate = false;

		if (key == NULL)
			continue;
		if (strnlen(key, TAU_AGENT_MAX_STRING + 1) > TAU_AGENT_MAX_STRING) {
			rc = tau_agent_inventory_add_problem(
			        inv, "%s key \"%.64s...\" is longer than %d bytes; dropped", what,
			        key, TAU_AGENT_MAX_STRING);
			if (rc < 0)
				goto fail;
			continue;
		}
		for (size_t i = 0; i < n && !duplicate; i++)
			duplicate = strcmp(kvs[i].key, key) == 0;
		if (duplicate) {
			rc = tau_agent_inventory_add_problem(
			        inv, "%s %s appears more than once; the first is kept", what, key);
			if (rc < 0)
				goto fail;
			continue;
		}
		if (n == cap) {
			dropped++;
			continue;
		}
		if (!quantities) {
			if (!cJSON_IsString(item) || item->valuestring == NULL) {
				rc = tau_agent_inventory_add_problem(
				        inv, "label %s is not a string; dropped", key);
				if (rc < 0)
					goto fail;
				continue;
			}
			value = item->valuestring;
		} else {
			tau_quantity q;
			int qrc;

			if (cJSON_IsString(item) && item->valuestring != NULL) {
				qrc = tau_quantity_parse(
				        &q, item->valuestring,
				        strnlen(item->valuestring, TAU_AGENT_MAX_STRING + 1));
			} else if (cJSON_IsNumber(item)) {
				/* Quantity.UnmarshalJSON accepts a bare number. */
				char *raw = cJSON_PrintUnformatted(item);

				if (raw == NULL) {
					rc = tau_error_set(TAU_ENOMEM, "out of memory");
					goto fail;
				}
				qrc = tau_quantity_parse_json_value(&q, raw, strlen(raw));
				free(raw);
			} else {
				qrc = tau_error_set(TAU_EINVAL, "neither a string nor a number");
			}
			if (qrc == 0)
				qrc = tau_quantity_format(canonical, sizeof(canonical), &q);
			if (qrc < 0) {
				rc = tau_agent_inventory_add_problem(
				        inv, "allocatable %s is not a valid quantity (%s); dropped",
				        key, tau_error_last()->msg);
				if (rc < 0)
					goto fail;
				continue;
			}
			value = canonical;
		}
		rc = copy_bounded(&kvs[n].key, key);
		if (rc == 0) {
			rc = copy_bounded(&kvs[n].value, value);
			if (rc < 0) {
				free(kvs[n].key);
				kvs[n].key = NULL;
			}
		}
		if (rc == -TAU_ETOOBIG) {
			rc = tau_agent_inventory_add_problem(
			        inv, "%s %s has a value longer than %d bytes; dropped", what, key,
			        TAU_AGENT_MAX_STRING);
			if (rc < 0)
				goto fail;
			continue;
		}
		if (rc < 0)
			goto fail;
		n++;
	}
	if (dropped > 0) {
		rc = tau_agent_inventory_add_problem(
		        inv, "Node has %zu %s entries, more than %zu; %zu dropped", n + dropped,
		        what, cap, dropped);
		if (rc < 0)
			goto fail;
	}
	if (n > 1)
		qsort(kvs, n, sizeof(*kvs), kv_cmp);
	if (n == 0) {
		free(kvs);
		kvs = NULL;
	}
	*out = kvs;
	*n_out = n;
	return 0;
fail:
	free_kvs(kvs, n);
	return rc;
}

static int take_ready(tau_agent_inventory *inv, const cJSON *node)
{
	const cJSON *conds = NULL;
	const cJSON *c;
	int rc = tau_json_get_array(&conds, node, "status.conditions");

	if (rc == -TAU_ETYPE)
		return tau_agent_inventory_add_problem(
		        inv, "Node status.conditions is not an array; readiness unknown");
	if (rc == 0) {
		cJSON_ArrayForEach(c, conds)
		{
			const char *type = NULL, *status = NULL, *reason = NULL;

			if (tau_json_get_string(&type, c, "type") < 0 || strcmp(type, "Ready") != 0)
				continue;
			if (tau_json_get_string(&status, c, "status") == 0) {
				if (strcmp(status, "True") == 0) {
					inv->ready = TAU_AGENT_TRUE;
					return 0;
				}
				if (strcmp(status, "False") == 0) {
					inv->ready = TAU_AGENT_FALSE;
					return 0;
				}
			}
			(void)tau_json_get_string(&reason, c, "reason");
			return tau_agent_inventory_add_problem(
			        inv, "Node Ready condition is \"%.32s\"%s%.64s; readiness unknown",
			        status != NULL ? status : "(none)",
			        reason != NULL ? ", reason " : "", reason != NULL ? reason : "");
		}
	}
	return tau_agent_inventory_add_problem(inv,
	                                       "Node has no Ready condition; readiness unknown");
}

static int take_schedulable(tau_agent_inventory *inv, const cJSON *node)
{
	bool unschedulable = false;
	int rc = tau_json_get_bool(&unschedulable, node, "spec.unschedulable");

	if (rc == -TAU_ENOTFOUND) {
		inv->schedulable = TAU_AGENT_TRUE;
		return 0;
	}
	if (rc < 0)
		return tau_agent_inventory_add_problem(
		        inv, "Node spec.unschedulable is not a boolean; schedulable unknown");
	inv->schedulable = unschedulable ? TAU_AGENT_FALSE : TAU_AGENT_TRUE;
	return 0;
}

static int take_deleting(tau_agent_inventory *inv, const cJSON *node)
{
	const cJSON *taints = NULL;
	const cJSON *t;
	const char *ts = NULL;
	int rc = tau_json_get_string(&ts, node, "metadata.deletionTimestamp");

	if (rc == 0) {
		inv->deleting = TAU_AGENT_TRUE;
	} else if (rc == -TAU_ENOTFOUND) {
		inv->deleting = TAU_AGENT_FALSE;
	} else {
		rc = tau_agent_inventory_add_problem(
		        inv, "Node metadata.deletionTimestamp is not a string; deleting "
		             "unknown");
		if (rc < 0)
			return rc;
	}
	/* The Flex agent taints a node it is about to remove before deleting it. */
	if (tau_json_get_array(&taints, node, "spec.taints") == 0) {
		cJSON_ArrayForEach(t, taints)
		{
			const char *key = NULL;

			if (tau_json_get_string(&key, t, "key") == 0 &&
			    strcmp(key, TAU_AGENT_TAINT_FLEX_DELETING) == 0)
				inv->deleting = TAU_AGENT_TRUE;
		}
	}
	return 0;
}

static int copy_label(tau_agent_inventory *inv, const char *key, char **dst)
{
	const char *v = tau_agent_inventory_label(inv, key);

	return v != NULL ? copy_bounded(dst, v) : 0;
}

/* Deletes every member of obj whose name is not in keep (NULL-terminated). */
static void keep_only(cJSON *obj, const char *const *keep)
{
	cJSON *m, *next;

	if (!cJSON_IsObject(obj))
		return;
	for (m = obj->child; m != NULL; m = next) {
		size_t i;

		next = m->next;
		for (i = 0; keep[i] != NULL; i++)
			if (m->string != NULL && strcmp(m->string, keep[i]) == 0)
				break;
		if (keep[i] == NULL)
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, m));
	}
}

static void keep_only_in(cJSON *obj, const char *member, const char *const *keep)
{
	keep_only(cJSON_GetObjectItemCaseSensitive(obj, member), keep);
}

/*
 * What the readers use, by object (the same paths as take_string, take_map, take_ready,
 * take_schedulable, take_deleting, apply_csinode, tau_node_kind_of and tau_csi_origins_*).
 * A reader that starts using another member adds it here; the equality test catches a miss
 * for every fixture.
 */
static const char *const KEEP_TOP[] = {"apiVersion", "kind", "metadata", "spec", "status", NULL};
static const char *const KEEP_METADATA[] = {"name",
                                            "namespace",
                                            "uid",
                                            "resourceVersion",
                                            "labels",
                                            "ownerReferences",
                                            "deletionTimestamp",
                                            NULL};
static const char *const KEEP_NODE_SPEC[] = {"providerID", "unschedulable", "taints", NULL};
static const char *const KEEP_NODE_STATUS[] = {"allocatable", "conditions", "nodeInfo", NULL};
static const char *const KEEP_NODE_INFO[] = {"operatingSystem", NULL};
static const char *const KEEP_POD_SPEC[] = {"nodeName", "containers", NULL};
static const char *const KEEP_POD_STATUS[] = {"phase", NULL};
static const char *const KEEP_CONTAINER[] = {"name", "command", "args", "env", NULL};

void tau_agent_inventory_prune(cJSON *obj, tau_agent_object_kind kind)
{
	cJSON *c;

	if (!cJSON_IsObject(obj))
		return;
	keep_only(obj, KEEP_TOP);
	keep_only_in(obj, "metadata", KEEP_METADATA);
	switch (kind) {
	case TAU_AGENT_OBJECT_NODE:
		keep_only_in(obj, "spec", KEEP_NODE_SPEC);
		keep_only_in(obj, "status", KEEP_NODE_STATUS);
		keep_only_in(cJSON_GetObjectItemCaseSensitive(obj, "status"), "nodeInfo",
		             KEEP_NODE_INFO);
		break;
	case TAU_AGENT_OBJECT_CSINODE:
		cJSON_DeleteItemFromObjectCaseSensitive(obj, "status");
		break;
	case TAU_AGENT_OBJECT_POD:
		keep_only_in(obj, "spec", KEEP_POD_SPEC);
		keep_only_in(obj, "status", KEEP_POD_STATUS);
		c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "spec"),
		                                     "containers");
		if (cJSON_IsArray(c))
			for (c = c->child; c != NULL; c = c->next)
				keep_only(c, KEEP_CONTAINER);
		break;
	}
}

int tau_agent_inventory_from_node(tau_agent_inventory *inv, const cJSON *node)
{
	tau_node_kind_signals signals;
	int rc;

	if (inv == NULL)
		return tau_error_set(TAU_EINVAL, "no inventory");
	tau_agent_inventory_free(inv);
	if (!cJSON_IsObject(node)) {
		rc = tau_agent_inventory_add_problem(
		        inv, "Node is not a JSON object; nothing about the node is known");
		if (rc < 0)
			return rc;
		return tau_error_set(TAU_EINVAL, "Node is not a JSON object");
	}
	if ((rc = take_string(inv, node, "Node", "metadata.name", &inv->node_name)) < 0 ||
	    (rc = take_string(inv, node, "Node", "metadata.uid", &inv->node_uid)) < 0 ||
	    (rc = take_string(inv, node, "Node", "metadata.resourceVersion",
	                      &inv->resource_version)) < 0 ||
	    (rc = take_string(inv, node, "Node", "spec.providerID", &inv->provider_id)) < 0)
		return rc;
	rc = take_map(inv, node, "metadata.labels", "label", TAU_AGENT_MAX_LABELS, &inv->labels,
	              &inv->n_labels);
	if (rc < 0)
		return rc;
	rc = take_map(inv, node, "status.allocatable", "allocatable", TAU_AGENT_MAX_ALLOCATABLE,
	              &inv->allocatable, &inv->n_allocatable);
	if (rc < 0)
		return rc;
	if ((rc = copy_label(inv, TAU_AGENT_LABEL_GPU_CLASS, &inv->gpu_class)) < 0 ||
	    (rc = copy_label(inv, TAU_AGENT_LABEL_OS, &inv->os)) < 0)
		return rc;
	/* Same fallback as the aggregator's Node reader (tau/nodefacts.h). */
	if (inv->os == NULL &&
	    (rc = take_string(inv, node, "Node", "status.nodeInfo.operatingSystem", &inv->os)) < 0)
		return rc;
	if ((rc = take_ready(inv, node)) < 0 || (rc = take_schedulable(inv, node)) < 0 ||
	    (rc = take_deleting(inv, node)) < 0)
		return rc;

	signals.nodepool_type = tau_agent_inventory_label(inv, TAU_NODE_LABEL_NODEPOOL_TYPE);
	signals.managed = tau_agent_inventory_label(inv, TAU_NODE_LABEL_MANAGED);
	signals.agentpool = tau_agent_inventory_label(inv, TAU_NODE_LABEL_AGENTPOOL);
	signals.virtual_type = tau_agent_inventory_label(inv, TAU_NODE_LABEL_VIRTUAL_TYPE);
	signals.provider_id = inv->provider_id;
	inv->kind = tau_node_kind_classify(&signals);

	if (inv->node_uid == NULL &&
	    (rc = tau_agent_inventory_add_problem(inv, "Node has no metadata.uid")) < 0)
		return rc;
	if (inv->node_name == NULL) {
		rc = tau_agent_inventory_add_problem(
		        inv, "Node has no metadata.name; cannot tell which node this is");
		if (rc < 0)
			return rc;
		return tau_error_set(TAU_EINVAL, "Node has no metadata.name");
	}
	return 0;
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
static int driver_get(tau_agent_inventory *inv, const char *name, tau_agent_csi_driver **out)
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
	rc = copy_bounded(&copy, name);
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
		rc = driver_get(inv, dname, &entry);
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

		rc = driver_get(inv, origins[i].name, &d);
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
		rc = copy_bounded(&inv->devices.nvml_note, probe->nvml_note);
		if (rc == -TAU_ENOMEM)
			return rc;
	}
	for (size_t i = 0; i < probe->n_sockets; i++) {
		tau_agent_csi_driver *d = NULL;

		rc = driver_get(inv, probe->sockets[i].driver, &d);
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

		rc = driver_get(inv, probe->csi_live[i].driver, &d);
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

/* ------------------------------------------------------------ consistency */

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
		if (strategy != NULL && strcmp(strategy, "single") == 0)
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

/* ------------------------------------------------------------------ JSON */

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

static bool add_drivers(cJSON *obj, const tau_agent_inventory *inv)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, "csiDrivers");

	if (arr == NULL)
		return false;
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		const tau_agent_csi_driver *d = &inv->csi_drivers[i];
		cJSON *e = cJSON_CreateObject();

		if (e == NULL)
			return false;
		cJSON_AddItemToArray(arr, e);
		if (cJSON_AddStringToObject(e, "name", d->name) == NULL ||
		    cJSON_AddBoolToObject(e, "inCSINode", d->in_csinode) == NULL ||
		    !add_tristate(e, "socketPresent", d->socket) ||
		    cJSON_AddStringToObject(e, "managedBy",
		                            tau_csi_managed_by_name(d->managed_by)) == NULL ||
		    cJSON_AddBoolToObject(e, "supported", tau_agent_csi_driver_supported(inv, d)) ==
		            NULL ||
		    !add_csi_live(e, d->live))
			return false;
	}
	return true;
}

/* "12.4" from NVML's 12040; NULL-safe buffer of 16. */
static const char *cuda_text(char buf[16], int v)
{
	if (v <= 0)
		return NULL;
	snprintf(buf, 16, "%d.%d", v / 1000, (v % 1000) / 10);
	return buf;
}

static bool add_gpu(cJSON *arr, const tau_agent_gpu *g)
{
	cJSON *e = cJSON_CreateObject(), *rows, *pages, *links, *xid;

	if (e == NULL)
		return false;
	cJSON_AddItemToArray(arr, e);
	if (!add_count(e, "index", g->index) || !add_string_or_null(e, "uuid", g->uuid) ||
	    !add_string_or_null(e, "name", g->name) ||
	    cJSON_AddBoolToObject(e, "healthy", g->healthy) == NULL ||
	    !add_string_or_null(e, "reason", g->reason) || !add_flag(e, "lost", g->lost) ||
	    !add_flag(e, "remapPending", g->remap_pending) ||
	    !add_flag(e, "remapFailure", g->remap_failure) ||
	    (rows = cJSON_AddObjectToObject(e, "remappedRows")) == NULL ||
	    !add_count(rows, "correctable", g->remapped_correctable) ||
	    !add_count(rows, "uncorrectable", g->remapped_uncorrectable) ||
	    (pages = cJSON_AddObjectToObject(e, "retiredPages")) == NULL ||
	    !add_count(pages, "singleBitEcc", g->retired_pages_sbe) ||
	    !add_count(pages, "doubleBitEcc", g->retired_pages_dbe) ||
	    !add_flag(e, "retirePending", g->retired_pending) ||
	    !add_flag(e, "migEnabled", g->mig_mode) ||
	    !add_count(e, "migDevices", g->mig_devices) ||
	    !add_string_or_null(e, "migProfiles", g->mig_profiles) ||
	    (links = cJSON_AddObjectToObject(e, "nvlinkLinks")) == NULL ||
	    !add_count(links, "active", g->nvlink_active) ||
	    !add_count(links, "down", g->nvlink_down) ||
	    (xid = cJSON_AddObjectToObject(e, "criticalXids")) == NULL ||
	    !add_count(xid, "count", g->xid_critical) ||
	    !add_count(xid, "last", g->last_xid > 0 ? (int64_t)g->last_xid : -1))
		return false;
	return true;
}

/* What NVML said beyond the counts: versions, symbols it lacks, each GPU. */
static bool add_nvml(cJSON *gpus, const tau_agent_nvml *n)
{
	cJSON *missing, *list;
	char cuda[16];

	if (!add_string_or_null(gpus, "driverVersion", n->driver_version) ||
	    !add_string_or_null(gpus, "cudaVersion", cuda_text(cuda, n->cuda_version)) ||
	    (missing = cJSON_AddArrayToObject(gpus, "nvmlMissingSymbols")) == NULL ||
	    (list = cJSON_AddArrayToObject(gpus, "devices")) == NULL)
		return false;
	for (size_t i = 0; i < n->n_missing; i++) {
		cJSON *s = cJSON_CreateString(n->missing_symbols[i]);

		if (s == NULL)
			return false;
		cJSON_AddItemToArray(missing, s);
	}
	for (size_t i = 0; i < n->n_gpus; i++)
		if (!add_gpu(list, &n->gpus[i]))
			return false;
	return true;
}

static bool add_rdma_ports(cJSON *obj, const tau_agent_devices *dev)
{
	cJSON *arr = cJSON_AddArrayToObject(obj, "ports");

	if (arr == NULL)
		return false;
	for (size_t i = 0; i < dev->n_rdma_ports; i++) {
		const tau_agent_rdma_port *p = &dev->rdma_ports[i];
		cJSON *e = cJSON_CreateObject();

		if (e == NULL)
			return false;
		cJSON_AddItemToArray(arr, e);
		if (!add_string_or_null(e, "device", p->device) ||
		    !add_string_or_null(e, "port", p->port) || !add_count(e, "state", p->state) ||
		    !add_count(e, "physState", p->phys_state) ||
		    !add_string_or_null(e, "rate", p->rate) ||
		    !add_count(e, "rateMbps", p->rate_mbps) ||
		    !add_string_or_null(e, "linkLayer", p->link_layer) ||
		    !add_count(e, "linkDowned", p->link_downed))
			return false;
	}
	return true;
}

/* The DRA devices ResourceClaims hold (podResources.draDevices, draDropped). */
static bool add_dra_devices(cJSON *pr, const tau_agent_podres *r)
{
	cJSON *list = cJSON_AddArrayToObject(pr, "draDevices");

	if (list == NULL || !add_count(pr, "draDropped", (int64_t)r->n_dra_dropped))
		return false;
	for (size_t i = 0; i < r->n_dra; i++) {
		const tau_agent_dra_device *d = &r->dra[i];
		cJSON *e = cJSON_CreateObject(), *claim, *pod;

		if (e == NULL)
			return false;
		cJSON_AddItemToArray(list, e);
		if (!add_string_or_null(e, "driver", d->driver) ||
		    !add_string_or_null(e, "pool", d->pool) ||
		    !add_string_or_null(e, "device", d->device) ||
		    (claim = cJSON_AddObjectToObject(e, "claim")) == NULL ||
		    !add_string_or_null(claim, "namespace", d->claim_namespace) ||
		    !add_string_or_null(claim, "name", d->claim_name) ||
		    (pod = cJSON_AddObjectToObject(e, "pod")) == NULL ||
		    !add_string_or_null(pod, "namespace", d->pod_namespace) ||
		    !add_string_or_null(pod, "name", d->pod_name) ||
		    !add_string_or_null(pod, "container", d->container))
			return false;
	}
	return true;
}

static bool add_pod_resources(cJSON *obj, const tau_agent_devices *dev)
{
	const tau_agent_podres *r = &dev->podres;
	cJSON *pr = cJSON_AddObjectToObject(obj, "podResources"), *list;
	const char *note = r->note;

	if (!dev->host_probed)
		note = "host not probed";
	if (pr == NULL || cJSON_AddBoolToObject(pr, "probed", r->probed) == NULL ||
	    cJSON_AddBoolToObject(pr, "allocatableKnown", r->allocatable_known) == NULL ||
	    !add_string_or_null(pr, "note", note) ||
	    (list = cJSON_AddArrayToObject(pr, "devices")) == NULL ||
	    !add_count(pr, "dropped", (int64_t)r->n_dropped))
		return false;
	for (size_t i = 0; i < r->n_devices; i++) {
		const tau_agent_pod_device *d = &r->devices[i];
		cJSON *e = cJSON_CreateObject(), *pod;

		if (e == NULL)
			return false;
		cJSON_AddItemToArray(list, e);
		if (!add_string_or_null(e, "resource", d->resource) ||
		    !add_string_or_null(e, "id", d->id) ||
		    !add_count(e, "numaNode", d->numa_node) ||
		    cJSON_AddBoolToObject(e, "allocatable", d->allocatable) == NULL)
			return false;
		if (d->pod_name == NULL) {
			if (cJSON_AddNullToObject(e, "pod") == NULL)
				return false;
			continue;
		}
		if ((pod = cJSON_AddObjectToObject(e, "pod")) == NULL ||
		    !add_string_or_null(pod, "namespace", d->pod_namespace) ||
		    !add_string_or_null(pod, "name", d->pod_name) ||
		    !add_string_or_null(pod, "container", d->container))
			return false;
	}
	return add_dra_devices(pr, r);
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
	       add_count(rdma, "up", dev->rdma_ports_up) && add_rdma_ports(rdma, dev) &&
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
	     add_drivers(root, inv) && add_devices(root, inv);
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
