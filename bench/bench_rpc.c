/*
 * bench_rpc - throughput and memory of the gRPC transport.
 *
 * 1. bare:    one bidi stream written straight against the C core (no protobuf, no lib/rpc):
 *             300-byte messages, one 8-byte ack each, one send in flight. The denominator for
 *             every later ingest figure.
 * 2. lib/rpc: the same stream through tau_rpc (server handler acks every AgentReport, client
 *             tau_rpc_stream with up to --window reports unacked), ~300-byte NodeInventory
 *             reports encoded and validated on both sides.
 * 3. idle:    server VmRSS before and after --streams idle Report streams, each on its own
 *             connection (one node per connection, as in production). The server runs in a
 *             child process (this program re-executed) so only its memory is counted.
 * Server and client share the machine; pin with taskset for stable figures.
 * Usage: bench_rpc [--messages N] [--window W] [--streams S] [--skip-idle]
 */
#include "tau/clock.h"
#include "tau/error.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/rpc_client.h"
#include "tau/rpc_server.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define BARE_PATH  "/bench.Bare/Stream"
#define REPORT     "/tau.inventory.v1.InventoryService/Report"
#define BARE_BYTES 300

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_rpc: %s: %s\n", what, tau_error_last()->msg);
	exit(1);
}

/* ---- 1. bare C core ----------------------------------------------------------------------- */

static char tag_new, tag_read, tag_write, tag_close, tag_status, tag_shutdown, tag_start;

struct bare_server {
	grpc_server *srv;
	grpc_completion_queue *cq;
	void *method;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	int cancelled;
	grpc_byte_buffer *recv;
	grpc_byte_buffer *send;
	bool write_busy;
	bool ack_pending;
	uint64_t ack_seq;
	int port;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool shutdown_done;
};

static uint64_t buffer_seq(grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader r;
	grpc_slice s;
	uint64_t seq = 0;

	grpc_byte_buffer_reader_init(&r, bb);
	s = grpc_byte_buffer_reader_readall(&r);
	grpc_byte_buffer_reader_destroy(&r);
	if (GRPC_SLICE_LENGTH(s) >= sizeof(seq))
		memcpy(&seq, GRPC_SLICE_START_PTR(s), sizeof(seq));
	grpc_slice_unref(s);
	return seq;
}

static grpc_byte_buffer *seq_buffer(uint64_t seq, size_t len)
{
	grpc_slice s = grpc_slice_malloc(len);
	grpc_byte_buffer *bb;

	memset(GRPC_SLICE_START_PTR(s), 'x', len);
	memcpy(GRPC_SLICE_START_PTR(s), &seq, sizeof(seq));
	bb = grpc_raw_byte_buffer_create(&s, 1);
	grpc_slice_unref(s);
	return bb;
}

static void bare_op(grpc_call *call, grpc_op_type type, void *arg, void *tag)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = type;
	if (type == GRPC_OP_RECV_MESSAGE)
		op.data.recv_message.recv_message = arg;
	else if (type == GRPC_OP_SEND_MESSAGE)
		op.data.send_message.send_message = arg;
	if (grpc_call_start_batch(call, &op, 1, tag, NULL) != GRPC_CALL_OK) {
		fprintf(stderr, "bench_rpc: start_batch failed\n");
		exit(1);
	}
}

static void bare_server_ack(struct bare_server *b)
{
	b->send = seq_buffer(b->ack_seq, sizeof(uint64_t));
	b->write_busy = true;
	b->ack_pending = false;
	bare_op(b->call, GRPC_OP_SEND_MESSAGE, b->send, &tag_write);
}

static void *bare_server_thread(void *arg)
{
	struct bare_server *b = arg;
	bool reading = true;

	for (;;) {
		grpc_event ev =
		        grpc_completion_queue_next(b->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.tag == &tag_new) {
			grpc_op ops[2];

			if (!ev.success)
				continue;
			memset(ops, 0, sizeof(ops));
			ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
			ops[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
			ops[1].data.recv_close_on_server.cancelled = &b->cancelled;
			grpc_call_start_batch(b->call, ops, 2, &tag_close, NULL);
			bare_op(b->call, GRPC_OP_RECV_MESSAGE, &b->recv, &tag_read);
		} else if (ev.tag == &tag_read) {
			if (!ev.success || b->recv == NULL) {
				grpc_op op;
				grpc_slice details = grpc_empty_slice();

				reading = false;
				memset(&op, 0, sizeof(op));
				op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
				op.data.send_status_from_server.status = GRPC_STATUS_OK;
				op.data.send_status_from_server.status_details = &details;
				grpc_call_start_batch(b->call, &op, 1, &tag_status, NULL);
				continue;
			}
			b->ack_seq = buffer_seq(b->recv);
			b->ack_pending = true;
			grpc_byte_buffer_destroy(b->recv);
			b->recv = NULL;
			if (!b->write_busy)
				bare_server_ack(b);
			bare_op(b->call, GRPC_OP_RECV_MESSAGE, &b->recv, &tag_read);
		} else if (ev.tag == &tag_write) {
			grpc_byte_buffer_destroy(b->send);
			b->write_busy = false;
			if (b->ack_pending && reading && ev.success)
				bare_server_ack(b);
		} else if (ev.tag == &tag_close) {
			grpc_call_unref(b->call);
			b->call = NULL;
		} else if (ev.tag == &tag_shutdown) {
			pthread_mutex_lock(&b->mu);
			b->shutdown_done = true;
			pthread_cond_broadcast(&b->cond);
			pthread_mutex_unlock(&b->mu);
		}
		/* tag_status: nothing to do */
	}
	return NULL;
}

static double bench_bare(uint64_t n)
{
	struct bare_server b = {0};
	pthread_t thread;
	grpc_completion_queue *cq;
	grpc_channel_credentials *creds;
	grpc_channel *ch;
	grpc_call *call;
	grpc_metadata_array init_md, trail_md;
	grpc_status_code status;
	grpc_slice details;
	grpc_byte_buffer *recv = NULL, *send = NULL;
	grpc_server_credentials *screds;
	grpc_op ops[2];
	uint64_t sent = 0, acked = 0;
	bool closing = false, done = false, send_busy = false;
	double t0, t1;

	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cond, NULL);
	grpc_init();
	b.srv = grpc_server_create(NULL, NULL);
	b.cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(b.srv, b.cq, NULL);
	b.method = grpc_server_register_method(b.srv, BARE_PATH, NULL, GRPC_SRM_PAYLOAD_NONE, 0);
	screds = grpc_insecure_server_credentials_create();
	b.port = grpc_server_add_http2_port(b.srv, "127.0.0.1:0", screds);
	grpc_server_credentials_release(screds);
	grpc_server_start(b.srv);
	grpc_metadata_array_init(&b.md);
	grpc_server_request_registered_call(b.srv, b.method, &b.call, &b.deadline, &b.md, NULL,
	                                    b.cq, b.cq, &tag_new);
	pthread_create(&thread, NULL, bare_server_thread, &b);

	{
		char target[64];

		snprintf(target, sizeof(target), "127.0.0.1:%d", b.port);
		creds = grpc_insecure_credentials_create();
		ch = grpc_channel_create(target, creds, NULL);
		grpc_channel_credentials_release(creds);
	}
	cq = grpc_completion_queue_create_for_next(NULL);
	call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq,
	                                grpc_slice_from_static_string(BARE_PATH), NULL,
	                                gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	grpc_metadata_array_init(&init_md);
	grpc_metadata_array_init(&trail_md);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[1].data.recv_initial_metadata.recv_initial_metadata = &init_md;
	grpc_call_start_batch(call, ops, 2, &tag_start, NULL);
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[0].data.recv_status_on_client.trailing_metadata = &trail_md;
	ops[0].data.recv_status_on_client.status = &status;
	ops[0].data.recv_status_on_client.status_details = &details;
	grpc_call_start_batch(call, ops, 1, &tag_status, NULL);
	bare_op(call, GRPC_OP_RECV_MESSAGE, &recv, &tag_read);

	t0 = ((double)tau_clock_mono_us() / 1e6);
	send = seq_buffer(++sent, BARE_BYTES);
	send_busy = true;
	bare_op(call, GRPC_OP_SEND_MESSAGE, send, &tag_write);
	t1 = t0;
	while (!done) {
		grpc_event ev =
		        grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.tag == &tag_write) {
			grpc_byte_buffer_destroy(send);
			send_busy = false;
			if (sent < n) {
				send = seq_buffer(++sent, BARE_BYTES);
				send_busy = true;
				bare_op(call, GRPC_OP_SEND_MESSAGE, send, &tag_write);
			}
		} else if (ev.tag == &tag_read) {
			if (recv == NULL)
				continue;
			acked = buffer_seq(recv);
			grpc_byte_buffer_destroy(recv);
			recv = NULL;
			if (acked >= n && !closing) {
				t1 = ((double)tau_clock_mono_us() / 1e6);
				closing = true;
				bare_op(call, GRPC_OP_SEND_CLOSE_FROM_CLIENT, NULL, &tag_close);
			}
			bare_op(call, GRPC_OP_RECV_MESSAGE, &recv, &tag_read);
		} else if (ev.tag == &tag_status) {
			done = true;
		}
	}
	(void)send_busy;
	/* Drain: the last recv comes back with NULL once the status is in. */
	grpc_call_cancel(call, NULL);
	grpc_call_unref(call);
	grpc_slice_unref(details);
	grpc_metadata_array_destroy(&init_md);
	grpc_metadata_array_destroy(&trail_md);
	grpc_channel_destroy(ch);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
	       GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	grpc_server_shutdown_and_notify(b.srv, b.cq, &tag_shutdown);
	grpc_server_cancel_all_calls(b.srv);
	/* The server thread sees the shutdown tag. */
	pthread_mutex_lock(&b.mu);
	while (!b.shutdown_done)
		pthread_cond_wait(&b.cond, &b.mu);
	pthread_mutex_unlock(&b.mu);
	grpc_server_destroy(b.srv);
	grpc_completion_queue_shutdown(b.cq);
	pthread_join(thread, NULL);
	grpc_completion_queue_destroy(b.cq);
	grpc_metadata_array_destroy(&b.md);
	grpc_shutdown();
	return (double)n / (t1 - t0);
}

/* ---- 2 and 3. through lib/rpc ------------------------------------------------------------- */

static void server_report(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__AgentReport *rep = (Tau__Inventory__V1__AgentReport *)msg;
	Tau__Inventory__V1__ReportAck ack = TAU__INVENTORY__V1__REPORT_ACK__INIT;

	(void)ud;
	ack.seq = rep->seq;
	ack.heartbeat_interval_seconds = 15;
	ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK;
	tau_rpc_call_send(call, &ack.base);
	tau_rpc_message_free(msg);
}

static void server_half_close(tau_rpc_call *call, void *ud)
{
	(void)ud;
	tau_rpc_call_finish(call, TAU_RPC_OK, NULL);
}

static tau_rpc_server *start_report_server(int *port)
{
	tau_rpc_server *srv = NULL;
	tau_rpc_method m = {
	        .path = REPORT,
	        .kind = TAU_RPC_BIDI,
	        .request = &tau__inventory__v1__agent_report__descriptor,
	        .response = &tau__inventory__v1__report_ack__descriptor,
	        .on_message = server_report,
	        .on_half_close = server_half_close,
	};
	tau_rpc_server_opts opts = {0};

	opts.max_send_queue = 100000;
	if (tau_rpc_server_new(&srv, &opts) < 0 || tau_rpc_server_add_method(srv, &m) < 0 ||
	    tau_rpc_server_listen(srv, "127.0.0.1:0", NULL, port) < 0 ||
	    tau_rpc_server_start(srv) < 0)
		die("server");
	return srv;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uint64_t acked_seq;
static int connected_streams;
static int acked_streams;

static void c_connected(tau_rpc_stream *s, void *ud)
{
	(void)s;
	(void)ud;
	pthread_mutex_lock(&mu);
	connected_streams++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void c_message(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud)
{
	(void)s;
	(void)ud;
	pthread_mutex_lock(&mu);
	acked_seq = ((Tau__Inventory__V1__ReportAck *)msg)->seq;
	acked_streams++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	tau_rpc_message_free(msg);
}

/* A NodeInventory report of about 300 bytes encoded. */
static size_t make_report(Tau__Inventory__V1__AgentReport *rep,
                          Tau__Inventory__V1__NodeInventory *inv,
                          Tau__Inventory__V1__ResourceQuantity *rq,
                          Tau__Inventory__V1__ResourceQuantity **rqp,
                          Tau__Inventory__V1__NodeInventory__LabelsEntry *le,
                          Tau__Inventory__V1__NodeInventory__LabelsEntry **lep)
{
	static const char *const res[][2] = {{"cpu", "96"},
	                                     {"memory", "1857304Mi"},
	                                     {"nvidia.com/gpu", "8"},
	                                     {"rdma/ib", "8"},
	                                     {"ephemeral-storage", "2796032Mi"}};
	static const char *const labels[][2] = {{"tau.azure.com/gpu-class", "h100"},
	                                        {"kubernetes.azure.com/agentpool", "gpupool1"},
	                                        {"kubernetes.io/os", "linux"}};

	tau__inventory__v1__agent_report__init(rep);
	tau__inventory__v1__node_inventory__init(inv);
	for (size_t i = 0; i < 5; i++) {
		tau__inventory__v1__resource_quantity__init(&rq[i]);
		rq[i].name = (char *)res[i][0];
		rq[i].quantity = (char *)res[i][1];
		rqp[i] = &rq[i];
	}
	for (size_t i = 0; i < 3; i++) {
		tau__inventory__v1__node_inventory__labels_entry__init(&le[i]);
		le[i].key = (char *)labels[i][0];
		le[i].value = (char *)labels[i][1];
		lep[i] = &le[i];
	}
	inv->node_name = (char *)"aks-gpupool1-vmss000042";
	inv->node_uid = (char *)"0b6f7c1e-1111-2222-3333-444455556666";
	inv->gpu_class = (char *)"h100";
	inv->n_labels = 3;
	inv->labels = lep;
	inv->n_allocatable = 5;
	inv->allocatable = rqp;
	inv->ready = true;
	inv->schedulable = true;
	inv->os = (char *)"linux";
	inv->kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL;
	inv->resource_version = (char *)"123456789";
	inv->observed_unix_ms = 1700000000000;
	inv->agent_version = (char *)"0.1.0";
	inv->digest = (char *)"3f2a9c";
	rep->body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep->inventory = inv;
	rep->seq = 1000000;
	return protobuf_c_message_get_packed_size(&rep->base);
}

static double bench_lib(uint64_t n, uint64_t window, size_t *msg_bytes)
{
	int port = 0;
	tau_rpc_server *srv = start_report_server(&port);
	tau_rpc_channel *ch = NULL;
	tau_rpc_channel_opts copts = {0};
	tau_rpc_stream *s = NULL;
	tau_rpc_stream_opts so = {0};
	char target[64];
	Tau__Inventory__V1__AgentReport rep;
	Tau__Inventory__V1__NodeInventory inv;
	Tau__Inventory__V1__ResourceQuantity rq[5], *rqp[5];
	Tau__Inventory__V1__NodeInventory__LabelsEntry le[3], *lep[3];
	double t0, t1;

	*msg_bytes = make_report(&rep, &inv, rq, rqp, le, lep);
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	copts.target = target;
	so.path = REPORT;
	so.response = &tau__inventory__v1__report_ack__descriptor;
	so.max_send_queue = (size_t)window + 16;
	so.on_connected = c_connected;
	so.on_message = c_message;
	acked_seq = 0;
	connected_streams = 0;
	if (tau_rpc_channel_new(&ch, &copts) < 0 || tau_rpc_stream_open(&s, ch, &so) < 0)
		die("client");
	pthread_mutex_lock(&mu);
	while (connected_streams == 0)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	t0 = ((double)tau_clock_mono_us() / 1e6);
	for (uint64_t seq = 1; seq <= n; seq++) {
		pthread_mutex_lock(&mu);
		while (seq - acked_seq > window)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		rep.seq = seq;
		if (tau_rpc_stream_send(s, &rep.base) < 0)
			die("send");
	}
	pthread_mutex_lock(&mu);
	while (acked_seq < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	t1 = ((double)tau_clock_mono_us() / 1e6);
	tau_rpc_stream_free(s);
	tau_rpc_channel_free(ch);
	tau_rpc_server_free(srv);
	return (double)n / (t1 - t0);
}

/* Child: serve Report and answer each line on stdin with this process's VmRSS. */
static int serve_idle(void)
{
	int port = 0;
	tau_rpc_server *srv = start_report_server(&port);
	char line[64];

	printf("port %d\n", port);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		if (strncmp(line, "rss", 3) == 0) {
			printf("rss %ld calls %zu\n", rss_kib(), tau_rpc_server_live_calls(srv));
			fflush(stdout);
		}
	}
	tau_rpc_server_free(srv);
	return 0;
}

static void bench_idle(int streams)
{
	int to_child[2], from_child[2];
	pid_t pid;
	FILE *in, *out;
	char line[128];
	int port = 0;
	long base = 0, loaded = 0;
	size_t calls = 0;
	tau_rpc_channel **chs = calloc((size_t)streams, sizeof(*chs));
	tau_rpc_stream **ss = calloc((size_t)streams, sizeof(*ss));
	char target[64];
	Tau__Inventory__V1__AgentReport rep;
	Tau__Inventory__V1__NodeInventory inv;
	Tau__Inventory__V1__ResourceQuantity rq[5], *rqp[5];
	Tau__Inventory__V1__NodeInventory__LabelsEntry le[3], *lep[3];
	double t0;

	if (chs == NULL || ss == NULL || pipe(to_child) < 0 || pipe(from_child) < 0)
		exit(1);
	pid = fork();
	if (pid == 0) {
		/* No grpc in this process yet: exec a fresh copy for the server. */
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		close(to_child[1]);
		close(from_child[0]);
		execl("/proc/self/exe", "bench_rpc", "--serve-idle", (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	out = fdopen(to_child[1], "w");
	in = fdopen(from_child[0], "r");
	if (fgets(line, sizeof(line), in) == NULL || sscanf(line, "port %d", &port) != 1)
		exit(1);
	fprintf(out, "rss\n");
	fflush(out);
	if (fgets(line, sizeof(line), in) == NULL || sscanf(line, "rss %ld", &base) != 1)
		exit(1);

	make_report(&rep, &inv, rq, rqp, le, lep);
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	acked_streams = 0;
	connected_streams = 0;
	t0 = ((double)tau_clock_mono_us() / 1e6);
	for (int i = 0; i < streams; i++) {
		tau_rpc_channel_opts copts = {0};
		tau_rpc_stream_opts so = {0};

		copts.target = target;
		copts.own_connection = true;
		/* A burst of 1000 connects can overflow the listen backlog: retry those. */
		so.reconnect = true;
		so.backoff_initial_ms = 100;
		so.backoff_max_ms = 1000;
		so.path = REPORT;
		so.response = &tau__inventory__v1__report_ack__descriptor;
		so.on_connected = c_connected;
		so.on_message = c_message;
		if (tau_rpc_channel_new(&chs[i], &copts) < 0 ||
		    tau_rpc_stream_open(&ss[i], chs[i], &so) < 0)
			die("idle client");
	}
	pthread_mutex_lock(&mu);
	while (connected_streams < streams)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < streams; i++) {
		rep.seq = 1;
		if (tau_rpc_stream_send(ss[i], &rep.base) < 0)
			die("idle send");
	}
	pthread_mutex_lock(&mu);
	while (acked_streams < streams)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	fprintf(out, "rss\n");
	fflush(out);
	if (fgets(line, sizeof(line), in) == NULL ||
	    sscanf(line, "rss %ld calls %zu", &loaded, &calls) != 2)
		exit(1);
	printf("idle: %d Report streams (one connection each, one ~300 B report acked), set up in "
	       "%.2f s\n",
	       streams, ((double)tau_clock_mono_us() / 1e6) - t0);
	printf("idle: server VmRSS %.1f MiB -> %.1f MiB with %zu live calls: %.1f KiB per stream\n",
	       (double)base / 1024.0, (double)loaded / 1024.0, calls,
	       (double)(loaded - base) / (double)streams);
	printf("idle: client (this process) VmRSS %.1f MiB\n", (double)rss_kib() / 1024.0);
	for (int i = 0; i < streams; i++) {
		tau_rpc_stream_free(ss[i]);
		tau_rpc_channel_free(chs[i]);
	}
	fclose(out);
	fclose(in);
	waitpid(pid, NULL, 0);
	free(chs);
	free(ss);
}

int main(int argc, char **argv)
{
	uint64_t n = 200000;
	uint64_t window = 1000;
	int streams = 1000;
	bool idle = true;
	size_t bytes = 0;
	double bare, lib;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--serve-idle") == 0)
			return serve_idle();
		if (strcmp(argv[i], "--skip-idle") == 0)
			idle = false;
		else if (strcmp(argv[i], "--messages") == 0 && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc)
			window = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--streams") == 0 && i + 1 < argc)
			streams = atoi(argv[++i]);
		else {
			fprintf(stderr,
			        "usage: bench_rpc [--messages N] [--window W] [--streams S] "
			        "[--skip-idle]\n");
			return 2;
		}
	}
	if (n < 1 || window < 1 || streams < 1)
		return 2;
	{
		/* One socket per idle stream on each side. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	printf("bench_rpc: grpc core %s, %llu messages per stream run\n", grpc_version_string(),
	       (unsigned long long)n);
	bare = bench_bare(n);
	printf("bare:    C-core bidi stream, %d B messages, 8 B ack each: %.0f msg/s\n", BARE_BYTES,
	       bare);
	lib = bench_lib(n, window, &bytes);
	printf("lib/rpc: Report stream, %zu B NodeInventory reports, ReportAck each, window %llu: "
	       "%.0f msg/s (%.0f%% of bare)\n",
	       bytes, (unsigned long long)window, lib, 100.0 * lib / bare);
	if (idle)
		bench_idle(streams);
	return 0;
}
