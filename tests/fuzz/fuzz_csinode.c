/*
 * fuzz_csinode.c - libFuzzer target for the node agent's CSINode reader
 * (agent/inventory.h: tau_agent_inventory_apply_csinode).
 *
 * Any bytes go through the bounded JSON parser; whatever parses is applied
 * as the CSINode of a fixed GPU node (the name and uid of the seeds), then
 * the inventory is checked, serialised, digested and converted to the
 * NodeInventory the agent sends.  Checked: that message passes the wire's
 * own UTF-8 check and fits the message cap; applying the same CSINode again
 * marks the same drivers; a refused CSINode marks none.  A broken property
 * aborts.
 */
#include "inventory.h"
#include "report.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/rpc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The Node the seeds belong to (tests/fixtures/kube/node-nd-h100-v5.json, cut down). */
static const char NODE[] =
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{"
        "\"name\":\"aks-ndh100-35817294-vmss000000\","
        "\"uid\":\"3f2a6c1e-9b7d-4e5a-8c21-7d9e0b4f6a11\",\"resourceVersion\":\"48201377\","
        "\"labels\":{\"kubernetes.azure.com/agentpool\":\"ndh100\","
        "\"kubernetes.io/os\":\"linux\",\"tau.azure.com/gpu-class\":\"h100-ib\"}},"
        "\"spec\":{\"providerID\":\"azure:///subscriptions/0/resourceGroups/mc_rg_c_eastus/"
        "providers/Microsoft.Compute/virtualMachineScaleSets/aks-ndh100-35817294-vmss/"
        "virtualMachines/0\"},"
        "\"status\":{\"allocatable\":{\"cpu\":\"94940m\",\"nvidia.com/gpu\":\"8\","
        "\"rdma/ib\":\"8\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}";

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_csinode: %s (%s)\n", what, tau_error_last()->msg);
	abort();
}

/* The drivers marked in CSINode, as one string. */
static void marks(char *out, size_t cap, const tau_agent_inventory *inv)
{
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < inv->n_csi_drivers && o < cap; i++)
		if (inv->csi_drivers[i].in_csinode)
			o += (size_t)snprintf(out + o, cap - o, "%s\n", inv->csi_drivers[i].name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static cJSON *node;
	cJSON *csinode = NULL, *json = NULL;
	tau_agent_inventory inv;
	Tau__Inventory__V1__NodeInventory *msg = NULL;
	char digest[65], first[8192], second[8192];
	int rc;

	if (node == NULL && tau_json_parse(&node, NODE, sizeof(NODE) - 1, 0) < 0)
		fail("the fixed Node does not parse");
	if (tau_json_parse(&csinode, (const char *)data, size, 1u << 20) < 0)
		return 0;
	tau_agent_inventory_init(&inv);
	if (tau_agent_inventory_from_node(&inv, node) < 0)
		fail("the fixed Node is refused");
	rc = tau_agent_inventory_apply_csinode(&inv, csinode);
	if (rc == -TAU_ENOMEM)
		fail("out of memory");
	marks(first, sizeof(first), &inv);
	if (rc < 0 && first[0] != '\0')
		fail("a refused CSINode marked drivers");
	if (tau_agent_inventory_apply_csinode(&inv, csinode) != rc)
		fail("the same CSINode read twice gave another answer");
	marks(second, sizeof(second), &inv);
	if (strcmp(first, second) != 0)
		fail("the same CSINode read twice marked other drivers");
	if (tau_agent_inventory_apply_pods(&inv, NULL) < 0 ||
	    tau_agent_inventory_check_consistency(&inv) < 0)
		fail("pods or consistency failed");
	if (tau_agent_inventory_to_json(&json, &inv) < 0 ||
	    tau_agent_inventory_digest(digest, &inv) < 0)
		fail("the inventory does not serialise");
	if (tau_agent_inventory_to_proto(&msg, &inv, digest, 1, "fuzz") < 0)
		fail("the inventory does not convert");
	if (tau_rpc_message_check_utf8(&msg->base) != 0)
		fail("the NodeInventory is not valid UTF-8");
	if (protobuf_c_message_get_packed_size(&msg->base) > TAU_RPC_DEFAULT_MAX_MESSAGE)
		fail("the NodeInventory passes the message cap");
	tau_agent_node_inventory_free(msg);
	cJSON_Delete(json);
	tau_agent_inventory_free(&inv);
	cJSON_Delete(csinode);
	return 0;
}
