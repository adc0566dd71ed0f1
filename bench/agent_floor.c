/*
 * agent_floor.c - the floor bench/agent_rss.py measures tau-node-agent against.
 *
 * The least a program can do and still be a node agent on the wire: one
 * insecure channel to the aggregator, one InventoryService.Report stream,
 * and a Heartbeat every interval, each ack read.  Nothing else: no
 * Kubernetes client, no host probe, no health server.  It links only the
 * gRPC core, so its RSS and CPU are what gRPC itself costs for one idle
 * stream; the agent's figures are reported as a ratio to it.
 *
 *     agent-floor HOST:PORT HEARTBEAT_SECONDS [KEEPALIVE_MS]
 *
 * With KEEPALIVE_MS the channel pings an idle connection as the agent's does
 * (lib/rpc_client.c: keepalive time, a 10 s ping timeout, pings without data
 * allowed), so the floor pays for the same liveness policy.
 *
 * Built by bench/agent_rss.py itself (cc + pkg-config grpc), not by CMake,
 * so `make bench` never runs it on its own.
 */
#include <grpc/byte_buffer.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_START = 1, TAG_SEND, TAG_RECV, TAG_STATUS };

/* AgentReport{seq: seq, heartbeat: {}}: field 1 varint, field 3 empty message. */
static grpc_byte_buffer *heartbeat(unsigned long long seq)
{
	unsigned char b[16];
	size_t n = 0;
	grpc_slice s;
	grpc_byte_buffer *bb;

	b[n++] = 0x08;
	do {
		b[n++] = (unsigned char)((seq & 0x7f) | (seq > 0x7f ? 0x80 : 0));
		seq >>= 7;
	} while (seq);
	b[n++] = 0x1a;
	b[n++] = 0x00;
	s = grpc_slice_from_copied_buffer((const char *)b, n);
	bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

static int run_batch(grpc_call *call, grpc_completion_queue *cq, grpc_op *ops, size_t n, long tag)
{
	grpc_event ev;

	if (grpc_call_start_batch(call, ops, n, (void *)tag, NULL) != GRPC_CALL_OK)
		return -1;
	ev = grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
	return ev.type == GRPC_OP_COMPLETE && ev.success ? 0 : -1;
}

int main(int argc, char **argv)
{
	grpc_metadata_array initial;
	grpc_channel_credentials *creds;
	grpc_completion_queue *cq;
	grpc_channel *ch;
	grpc_call *call;
	grpc_slice method;
	grpc_arg arg[3];
	grpc_channel_args args = {0, arg};
	unsigned long long seq = 0;
	int hb;

	if ((argc != 3 && argc != 4) || (hb = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: agent-floor HOST:PORT HEARTBEAT_SECONDS [KEEPALIVE_MS]\n");
		return 2;
	}
	if (argc == 4) {
		arg[0].type = arg[1].type = arg[2].type = GRPC_ARG_INTEGER;
		arg[0].key = (char *)GRPC_ARG_KEEPALIVE_TIME_MS;
		arg[0].value.integer = atoi(argv[3]);
		arg[1].key = (char *)GRPC_ARG_KEEPALIVE_TIMEOUT_MS;
		arg[1].value.integer = 10000;
		arg[2].key = (char *)GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA;
		arg[2].value.integer = 0;
		args.num_args = 3;
	}
	grpc_init();
	creds = grpc_insecure_credentials_create();
	ch = grpc_channel_create(argv[1], creds, &args);
	grpc_channel_credentials_release(creds);
	cq = grpc_completion_queue_create_for_next(NULL);
	method = grpc_slice_from_static_string("/tau.inventory.v1.InventoryService/Report");
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
	                                gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	grpc_metadata_array_init(&initial);
	{
		grpc_op ops[2];

		memset(ops, 0, sizeof(ops));
		ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
		ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
		ops[1].data.recv_initial_metadata.recv_initial_metadata = &initial;
		if (run_batch(call, cq, ops, 2, TAG_START) != 0) {
			fprintf(stderr, "agent-floor: stream did not start\n");
			return 1;
		}
	}
	for (;;) {
		grpc_byte_buffer *out = heartbeat(++seq), *in = NULL;
		grpc_op op;

		memset(&op, 0, sizeof(op));
		op.op = GRPC_OP_SEND_MESSAGE;
		op.data.send_message.send_message = out;
		if (run_batch(call, cq, &op, 1, TAG_SEND) != 0)
			break;
		grpc_byte_buffer_destroy(out);
		memset(&op, 0, sizeof(op));
		op.op = GRPC_OP_RECV_MESSAGE;
		op.data.recv_message.recv_message = &in;
		if (run_batch(call, cq, &op, 1, TAG_RECV) != 0 || in == NULL)
			break;
		grpc_byte_buffer_destroy(in);
		/* Idle until the next heartbeat: a deadline on the queue, nothing else. */
		grpc_completion_queue_next(cq,
		                           gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
		                                        gpr_time_from_seconds(hb, GPR_TIMESPAN)),
		                           NULL);
	}
	fprintf(stderr, "agent-floor: stream ended\n");
	return 1;
}
