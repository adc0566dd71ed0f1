/*
 * node_kind.c - the node-kind rules (tau/node_kind.h): AKS agent pool, Flex or
 * other, from a few labels and the provider ID.
 */
#include "tau/node_kind.h"

#include "tau/json.h"
#include "tau/mem.h"
#include "tau/str.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

const char *tau_node_kind_name(tau_node_kind kind)
{
	static const char *const names[] = {
	        [TAU_NODE_KIND_AGENT_POOL] = "AgentPool",
	        [TAU_NODE_KIND_FLEX] = "Flex",
	        [TAU_NODE_KIND_OTHER] = "Other",
	};

	return tau_str_enum_name(names, TAU_N_ELEMENTS(names), (int)kind, NULL);
}

/* Case-insensitive search for needle in hay; returns the match or NULL. */
static const char *find_nocase(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay != '\0'; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return hay;
	return NULL;
}

bool tau_node_provider_id_is_azure_compute(const char *provider_id)
{
	static const char prefix[] = "azure:///subscriptions/";
	const char *rg;

	if (provider_id == NULL || strncasecmp(provider_id, prefix, sizeof(prefix) - 1) != 0)
		return false;
	rg = find_nocase(provider_id + sizeof(prefix) - 1, "/resourceGroups/");
	if (rg == NULL)
		return false;
	return find_nocase(rg, "/providers/Microsoft.Compute/") != NULL;
}

tau_node_kind tau_node_kind_classify(const tau_node_kind_signals *s)
{
	bool virtual_node, unmanaged, azure_vm;

	if (s == NULL)
		return TAU_NODE_KIND_OTHER;
	if (s->nodepool_type != NULL && strcmp(s->nodepool_type, "FlexNodes") == 0)
		return TAU_NODE_KIND_FLEX;
	virtual_node = s->virtual_type != NULL && strcmp(s->virtual_type, "virtual-kubelet") == 0;
	unmanaged = s->managed != NULL && strcmp(s->managed, "false") == 0;
	azure_vm = tau_node_provider_id_is_azure_compute(s->provider_id);
	if (unmanaged && !virtual_node && !azure_vm)
		return TAU_NODE_KIND_FLEX;
	if (!unmanaged && !virtual_node && (s->agentpool != NULL || azure_vm))
		return TAU_NODE_KIND_AGENT_POOL;
	return TAU_NODE_KIND_OTHER;
}

tau_node_kind tau_node_kind_of(const cJSON *node)
{
	const cJSON *labels;
	tau_node_kind_signals s = {0};

	if (!cJSON_IsObject(node))
		return TAU_NODE_KIND_UNKNOWN;
	labels = tau_json_find(node, "metadata.labels");
	if (cJSON_IsObject(labels)) {
		s.nodepool_type = tau_json_member_str(labels, TAU_NODE_LABEL_NODEPOOL_TYPE);
		s.managed = tau_json_member_str(labels, TAU_NODE_LABEL_MANAGED);
		s.agentpool = tau_json_member_str(labels, TAU_NODE_LABEL_AGENTPOOL);
		s.virtual_type = tau_json_member_str(labels, TAU_NODE_LABEL_VIRTUAL_TYPE);
	}
	(void)tau_json_get_string(&s.provider_id, node, "spec.providerID");
	return tau_node_kind_classify(&s);
}
