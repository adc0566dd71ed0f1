/*
 * fuzz_messages.c - libFuzzer target for the wire decoding of every inventory and query message.
 *
 * The first byte picks the message type (modulo the table below, which lists every message of
 * inventory.proto and query.proto; map entries are covered through their maps); the rest goes
 * to tau_rpc_message_decode exactly as the rpc layer hands a received message to a handler
 * (size cap, protobuf-c unpack, UTF-8 check of every string).  A message that decodes must pass
 * the UTF-8 check again and re-encode to the bytes of a message that decodes to the same size.
 */
#include "tau/rpc.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ProtobufCMessageDescriptor *const MESSAGES[] = {
        &tau__inventory__v1__node_status__descriptor,
        &tau__inventory__v1__list_nodes_request__descriptor,
        &tau__inventory__v1__list_nodes_response__descriptor,
        &tau__inventory__v1__get_node_request__descriptor,
        &tau__inventory__v1__get_node_response__descriptor,
        &tau__inventory__v1__flavor__descriptor,
        &tau__inventory__v1__pool__descriptor,
        &tau__inventory__v1__get_pool_request__descriptor,
        &tau__inventory__v1__watch_pool_request__descriptor,
        &tau__inventory__v1__explain_node_request__descriptor,
        &tau__inventory__v1__rule__descriptor,
        &tau__inventory__v1__explain_node_response__descriptor,
        &tau__inventory__v1__condition__descriptor,
        &tau__inventory__v1__workspace_summary__descriptor,
        &tau__inventory__v1__list_workspaces_request__descriptor,
        &tau__inventory__v1__list_workspaces_response__descriptor,
        &tau__inventory__v1__get_workspace_request__descriptor,
        &tau__inventory__v1__resource_quantity__descriptor,
        &tau__inventory__v1__csi_driver__descriptor,
        &tau__inventory__v1__local_devices__descriptor,
        &tau__inventory__v1__node_inventory__descriptor,
        &tau__inventory__v1__heartbeat__descriptor,
        &tau__inventory__v1__stopping__descriptor,
        &tau__inventory__v1__agent_report__descriptor,
        &tau__inventory__v1__report_ack__descriptor,
};

#define N_MESSAGES (sizeof(MESSAGES) / sizeof(MESSAGES[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *desc;
	ProtobufCMessage *msg = NULL, *again = NULL;
	uint8_t *packed;
	size_t len;

	if (size == 0)
		return 0;
	desc = MESSAGES[data[0] % N_MESSAGES];
	if (tau_rpc_message_decode(&msg, desc, data + 1, size - 1, TAU_RPC_DEFAULT_MAX_MESSAGE) < 0)
		return 0;
	len = protobuf_c_message_get_packed_size(msg);
	if (tau_rpc_message_check_utf8(msg) != 0 || len > TAU_RPC_DEFAULT_MAX_MESSAGE) {
		fprintf(stderr, "fuzz_messages: %s breaks its own checks\n", desc->name);
		abort();
	}
	packed = malloc(len + 1);
	if (packed == NULL)
		abort();
	protobuf_c_message_pack(msg, packed);
	if (tau_rpc_message_decode(&again, desc, packed, len, TAU_RPC_DEFAULT_MAX_MESSAGE) < 0 ||
	    protobuf_c_message_get_packed_size(again) != len) {
		fprintf(stderr, "fuzz_messages: %s does not survive a re-encode\n", desc->name);
		abort();
	}
	tau_rpc_message_free(again);
	free(packed);
	tau_rpc_message_free(msg);
	return 0;
}
