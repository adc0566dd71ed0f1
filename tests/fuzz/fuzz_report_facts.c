/*
 * fuzz_report_facts.c - libFuzzer target for the aggregator's reading of an agent's inventory.
 *
 * Any bytes are decoded as an AgentReport exactly as the aggregator receives them; an
 * inventory body then goes through tau_report_to_facts (aggregator/inventory/report.c), the
 * validation every peer's report passes before it can touch the pool.  Accepted facts must
 * keep the promises of report.h (a name, labels sorted and within the cap, the GPU class
 * equal to its label); refused ones must come back zeroed with a message.
 */
#include "inventory/report.h"

#include "tau/error.h"
#include "tau/rpc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *why)
{
	fprintf(stderr, "fuzz_report_facts: %s\n", why);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ProtobufCMessage *msg = NULL;
	Tau__Inventory__V1__AgentReport *rep;
	tau_node_facts facts;

	if (tau_rpc_message_decode(&msg, &tau__inventory__v1__agent_report__descriptor, data, size,
	                           TAU_RPC_DEFAULT_MAX_MESSAGE) < 0)
		return 0;
	rep = (Tau__Inventory__V1__AgentReport *)msg;
	if (rep->body_case != TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY ||
	    rep->inventory == NULL) {
		tau_rpc_message_free(msg);
		return 0;
	}
	memset(&facts, 0, sizeof(facts));
	if (tau_report_to_facts(&facts, rep->inventory) < 0) {
		if (facts.name != NULL || facts.n_labels != 0 || facts.n_allocatable != 0)
			broken("refused facts are not left zeroed");
		if (tau_error_last()->msg[0] == '\0')
			broken("refused without a message");
	} else {
		if (facts.name == NULL || facts.name[0] == '\0')
			broken("accepted facts without a name");
		if (facts.n_labels > TAU_REPORT_MAX_LABELS ||
		    facts.n_allocatable > TAU_REPORT_MAX_RESOURCES)
			broken("accepted facts over the caps");
		for (size_t i = 1; i < facts.n_labels; i++)
			if (strcmp(facts.label_keys[i - 1], facts.label_keys[i]) >= 0)
				broken("labels not sorted and unique");
		if (facts.gpu_class != NULL) {
			bool found = false;

			for (size_t i = 0; i < facts.n_labels; i++)
				if (strcmp(facts.label_keys[i], TAU_GPU_CLASS_LABEL) == 0 &&
				    strcmp(facts.label_values[i], facts.gpu_class) == 0)
					found = true;
			if (!found)
				broken("GPU class differs from its label");
		}
		tau_node_facts_clear(&facts);
	}
	tau_rpc_message_free(msg);
	return 0;
}
