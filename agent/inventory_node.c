/*
 * inventory_node.c - what the inventory reads from this node's Node object.
 *
 * The one idea: the Node's name, uid, labels, allocatable, readiness, schedulability and
 * deletion, each read defensively: a field that cannot be read is unknown with a problem
 * saying why.  Quantities are re-emitted in canonical form (tau_quantity_format), so
 * "1024Mi" in a Node becomes "1Gi", as the API server would print it; the node kind comes
 * from its labels by libtau's rules (tau/node_kind.h) that `tau storage check` shares.
 */
#include "inventory.h"
#include "inventory_internal.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"

#include <stdlib.h>
#include <string.h>

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
	rc = tau_agent_copy_bounded(dst, s);
	if (rc == -TAU_ETOOBIG)
		return tau_agent_inventory_add_problem(inv,
		                                       "%s %s is longer than %d bytes; unknown",
		                                       what, path, TAU_AGENT_MAX_STRING);
	return rc;
}

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
		rc = tau_agent_copy_bounded(&kvs[n].key, key);
		if (rc == 0) {
			rc = tau_agent_copy_bounded(&kvs[n].value, value);
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
		qsort(kvs, n, sizeof(*kvs), tau_agent_kv_cmp);
	if (n == 0) {
		free(kvs);
		kvs = NULL;
	}
	*out = kvs;
	*n_out = n;
	return 0;
fail:
	tau_agent_kvs_free(kvs, n);
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

	return v != NULL ? tau_agent_copy_bounded(dst, v) : 0;
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
