/*
 * fuzz_report.c - libFuzzer target for the wire decoder of agent reports.
 *
 * Any bytes go to tau_rpc_message_decode as an AgentReport, exactly as the
 * aggregator receives them (size cap, protobuf-c unpack, UTF-8 check of
 * every string).  A message that decodes must pass the UTF-8 check again
 * and re-encode to at most the cap.
 */
#include "tau/rpc.h"

#include "tau/inventory/v1/inventory.pb-c.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ProtobufCMessage *msg = NULL;

	if (tau_rpc_message_decode(&msg, &tau__inventory__v1__agent_report__descriptor, data, size,
	                           TAU_RPC_DEFAULT_MAX_MESSAGE) < 0)
		return 0;
	if (tau_rpc_message_check_utf8(msg) != 0 ||
	    protobuf_c_message_get_packed_size(msg) > TAU_RPC_DEFAULT_MAX_MESSAGE) {
		fprintf(stderr, "fuzz_report: decoded message breaks its own checks\n");
		abort();
	}
	tau_rpc_message_free(msg);
	return 0;
}
