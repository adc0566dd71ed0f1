/*
 * inventory_prune.c - what the agent's informers keep of each object.
 *
 * The one idea: the informers cache only the members the inventory's readers use, so a
 * node with many pods costs little memory; everything else is deleted as objects arrive.
 */
#include "inventory.h"

#include "tau/str.h"

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
			if (tau_str_eq_both_set(m->string, keep[i]))
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
