/*
 * agent_floor.c - the floor bench/agent_rss.py measures tau-node-agent against.
 *
 * The least a program can do and still be a node agent on the wire: one
 * channel to the aggregator, one InventoryService.Report stream, and a
 * Heartbeat every interval, each ack read.  Nothing else: no Kubernetes
 * client, no host probe, no health server.  It links only the gRPC core, so
 * its RSS and CPU are what gRPC itself costs for one idle stream; the
 * agent's figures are reported as a ratio to it.
 *
 *     agent-floor HOST:PORT HEARTBEAT_SECONDS [KEEPALIVE_MS [CA_FILE]]
 *
 * The channel is the agent's channel (lib/rpc_client.c as agent/stream.c
 * opens it): the same arguments (message caps, reconnect backoff, keepalive
 * time, a 10 s ping timeout, pings without data allowed) and the same
 * credentials: plaintext, as the agent with --insecure (the chart's default,
 * tls.enabled=false), or with CA_FILE TLS verified against that CA, as the
 * agent with --ca-file.  KEEPALIVE_MS (default 30000, lib/rpc_client.c's)
 * sets the ping interval, so the floor pays for the same liveness policy.
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
enum { NARGS = 8 };

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

/* The whole of a PEM file, NUL-terminated; exits on failure (a bench tool). */
static char *read_pem(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = f ? malloc(65536) : NULL;
	size_t n = buf ? fread(buf, 1, 65535, f) : 0;

	if (f == NULL || buf == NULL || n == 0) {
		fprintf(stderr, "agent-floor: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	buf[n] = '\0';
	return buf;
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
	grpc_arg arg[NARGS];
	grpc_channel_args args = {NARGS, arg};
	unsigned long long seq = 0;
	int hb;

	if (argc < 3 || argc > 5 || (hb = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: agent-floor HOST:PORT HEARTBEAT_SECONDS [KEEPALIVE_MS "
		                "[CA_FILE]]\n");
		return 2;
	}
	/* The arguments lib/rpc_client.c gives the agent's channel, in the same order. */
	for (size_t i = 0; i < NARGS; i++)
		arg[i].type = GRPC_ARG_INTEGER;
	arg[0].key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
	arg[0].value.integer = 1024 * 1024; /* TAU_RPC_DEFAULT_MAX_MESSAGE */
	arg[1].key = (char *)GRPC_ARG_MAX_SEND_MESSAGE_LENGTH;
	arg[1].value.integer = 1024 * 1024;
	arg[2].key = (char *)GRPC_ARG_KEEPALIVE_TIME_MS;
	arg[2].value.integer = argc >= 4 ? atoi(argv[3]) : 30000;
	arg[3].key = (char *)GRPC_ARG_KEEPALIVE_TIMEOUT_MS;
	arg[3].value.integer = 10000;
	arg[4].key = (char *)GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA;
	arg[4].value.integer = 0;
	arg[5].key = (char *)GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
	arg[5].value.integer = 200;
	arg[6].key = (char *)GRPC_ARG_MIN_RECONNECT_BACKOFF_MS;
	arg[6].value.integer = 200;
	arg[7].key = (char *)GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
	arg[7].value.integer = 5000; /* TAU_AGENT_RECONNECT_MAX_MS */
	grpc_init();
	if (argc == 5) /* lib/rpc_client.c: grpc_ssl_credentials_create(ca, no client cert) */
		creds = grpc_ssl_credentials_create(read_pem(argv[4]), NULL, NULL, NULL);
	else
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
