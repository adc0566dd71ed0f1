/*
 * bench_swarm - N node agents against the aggregator's Report and WatchPool handlers, and
 * (--compare-bare) against a bare gRPC server on the same streams, in the same run.
 *
 * The server is this program re-executed (--serve) in a child process, so its memory is the
 * aggregator's alone: the real handler code of aggregator/inventory/service_*.c (validation, the
 * node store, the pool, the sync gate, coalesced WatchPool), with a stub TokenReview (token
 * AGENT_JWT "<name>" is the agent ServiceAccount bound to <name>: JWT-shaped, with the agent's
 * sub, as the aggregator wants before it reviews; the node name is its signature segment; reviews
 * are cached as in production, so this costs one call per agent) and N Nodes fed to the store as
 * the Node informer would (no kube-sim: the figure is the aggregator's, not the API server's). With
 * --compare-bare a second child (--serve-bare) is the floor: the C core with lib/rpc_server.c's
 * channel arguments, reading each report's bytes and acking it, no more.
 *
 * The parent plays N agents as N Report streams over --channels connections:
 *   1. connect: every agent opens its stream and sends its full inventory (seq 1); time until
 *      every ack is in and the pool is established; server RSS then.
 *   2. ingest: each agent sends --reports further full inventories (the digest alternates;
 *      the facts match the Node, as a healthy agent's do), one outstanding per agent;
 *      reports/s acked.
 *   3. latency (aggregator only): on a quiet system, a Node update in the server (SIGUSR2);
 *      time until WatchPool pushes the new pool (includes the 20 ms coalescing window).
 *   4. every stream closed: once the server's live calls (tau_rpc_server_live_calls) are
 *      down to the WatchPool stream, server RSS after malloc_trim.
 * With --compare-bare, aggregator and bare runs alternate --rounds times, the best ingest of
 * each is kept and the last line reads "ratio R (aggregator X reports/s, bare Y reports/s)".
 * Usage: bench_swarm [--agents N] [--channels C] [--reports R] [--samples S]
 *                    [--server-threads T] [--compare-bare [--rounds K]]
 * --server-threads: completion-queue threads of both servers (tau_rpc_server_opts.cq_threads);
 * 2, tau-aggregator's default (--grpc-threads).
 */
#include "inventory/service.h"

#include "../lib/rpc_internal.h"
#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc_client.h"
#include "tau/rpc_server.h"

#include <cjson/cJSON.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPORT "/tau.inventory.v1.InventoryService/Report"
#define WATCH  "/tau.inventory.v1.QueryService/WatchPool"

/* Requests armed per method, in both servers. */
#define SERVER_REQUESTS_ARMED 64

/* How long a server waits, after the parent closed every agent's stream, for their calls to end. */
#define CALLS_GONE_TIMEOUT_S 30
/* Calls the parent keeps open on the aggregator to the end: its WatchPool stream. */
#define CALLS_KEPT 1

static void die(const char *what)
{
	fprintf(stderr, "bench_swarm: %s: %s\n", what, tau_error_last()->msg);
	exit(1);
}

/*
 * SIGUSR1 in a server: the parent has closed every agent's stream. Waits (polling every 10 ms,
 * at most CALLS_GONE_TIMEOUT_S) until the server's live calls are down to the `keep` the parent
 * still holds, gives freed memory back and answers "trimmed <live calls>", so the parent's RSS
 * reading shows what is live once the server has seen the cancellations.
 */
static void trim_when_calls_gone(size_t (*live)(void *), void *ud, size_t keep)
{
	double deadline = ((double)tau_clock_mono_us() / 1e6) + CALLS_GONE_TIMEOUT_S;
	size_t n;

	while ((n = live(ud)) > keep && ((double)tau_clock_mono_us() / 1e6) < deadline)
		usleep(10000); /* the poll step of a bounded wait */
	malloc_trim(0);
	printf("trimmed %zu\n", n);
	fflush(stdout);
}

static size_t server_live_calls(void *srv)
{
	return tau_rpc_server_live_calls(srv);
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void node_name(char *buf, size_t cap, int i)
{
	snprintf(buf, cap, "aks-gpu-%05d", i);
}

/* ---- server (child) ------------------------------------------------------------------------ */

/* {"alg":"RS256"} . {"sub":"system:serviceaccount:tau-system:tau-node-agent"} . */
#define AGENT_JWT                                                                                  \
	"eyJhbGciOiJSUzI1NiJ9."                                                                    \
	"eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGF1LXN5c3RlbTp0YXUtbm9kZS1hZ2"                   \
	"VudCJ9."

static int stub_review(void *ud, const char *token, tau_auth_review *out)
{
	(void)ud;
	memset(out, 0, sizeof(*out));
	if (strncmp(token, AGENT_JWT, strlen(AGENT_JWT)) != 0) {
		snprintf(out->error, sizeof(out->error), "unknown token");
		return 0;
	}
	out->authenticated = true;
	snprintf(out->username, sizeof(out->username),
	         "system:serviceaccount:tau-system:tau-node-agent");
	snprintf(out->node_name, sizeof(out->node_name), "%s", token + strlen(AGENT_JWT));
	return 0;
}

/* Node i as the Node informer delivers it, with the given cpu allocatable. */
static void upsert_node(tau_inventory *agg, int i, const char *cpu)
{
	char name[32], json[1024];
	cJSON *node;

	node_name(name, sizeof(name), i);
	snprintf(json, sizeof(json),
	         "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%d\",\"resourceVersion\":\"1\","
	         "\"labels\":{\"kubernetes.io/os\":\"linux\",\"kubernetes.io/hostname\":\"%s\","
	         "\"tau.azure.com/gpu-class\":\"h100-%d\",\"kubernetes.azure.com/agentpool\":"
	         "\"gpu\",\"node.kubernetes.io/instance-type\":\"Standard_ND96isr_H100_v5\"}},"
	         "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"1977700032Ki\","
	         "\"nvidia.com/gpu\":\"8\",\"rdma/ib\":\"8\",\"pods\":\"110\","
	         "\"ephemeral-storage\":\"119703055367\"},"
	         "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	         name, i, name, i % 4, cpu);
	node = cJSON_Parse(json);
	tau_inventory_node_upsert(agg, node);
	cJSON_Delete(node);
}

/* --server-threads: CQ threads of both servers; the aggregator's default (--grpc-threads) */
static int server_threads = 2;

static int serve(int agents)
{
	tau_inventory_config cfg = {.agent_user = "system:serviceaccount:tau-system:tau-node-agent",
	                            .review = stub_review,
	                            .sync_timeout_ms = 3600000,
	                            /* every agent comes from this one host at once */
	                            .max_pending_reviews = (size_t)agents + 16,
	                            .max_reviews_per_peer = (size_t)agents + 16};
	tau_inventory *agg = NULL;
	tau_rpc_server *srv = NULL;
	tau_rpc_server_opts opts = {.requests_per_method = SERVER_REQUESTS_ARMED,
	                            .cq_threads = server_threads};
	int port = 0, sig, probes = 0;
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	tau_log_set_level(TAU_LOG_WARN);
	if (tau_inventory_new(&agg, &cfg) < 0 || tau_rpc_server_new(&srv, &opts) < 0 ||
	    tau_inventory_register(agg, srv) < 0 ||
	    tau_rpc_server_listen(srv, "127.0.0.1:0", NULL, &port) < 0 ||
	    tau_inventory_start(agg) < 0 || tau_rpc_server_start(srv) < 0)
		die("server");
	/* The Node informer's part: every node known from the API, then synced. */
	for (int i = 0; i < agents; i++)
		upsert_node(agg, i, "94940m");
	tau_inventory_nodes_synced(agg);
	printf("port %d\n", port);
	fflush(stdout);
	/*
	 * SIGUSR1: every agent's stream is closed (the parent keeps its WatchPool stream).
	 * SIGUSR2: a Node update as the informer would deliver it (node 0's cpu allocatable
	 * changes), the latency probe: the Node is the authority, so only a Node change moves the
	 * pool.
	 */
	while (sigwait(&sigs, &sig) == 0 && sig != SIGTERM) {
		if (sig == SIGUSR2) {
			char cpu[32];

			/* The agent of node 0 now differs from its Node: expected, not news. */
			tau_log_set_level(TAU_LOG_ERROR);
			snprintf(cpu, sizeof(cpu), "%dm", 100000 + ++probes);
			upsert_node(agg, 0, cpu);
			continue;
		}
		trim_when_calls_gone(server_live_calls, srv, CALLS_KEPT);
	}
	tau_rpc_server_shutdown(srv, 1000);
	tau_inventory_stop(agg);
	tau_rpc_server_free(srv);
	tau_inventory_free(agg);
	return 0;
}

/* ---- bare server (child, --compare-bare) ---------------------------------------------------- */

/*
 * The floor: a C-core server with lib/rpc_server.c's channel arguments and the same number of
 * armed requests that only reads each report's bytes (enough to find its seq) and acks it with
 * a ReportAck. Acks are cumulative (docs/protocol.md), so while an ack is being written only
 * the newest seq waits. No protobuf decode, no handler, no store.
 */
typedef struct bare_call {
	struct tau_rpc_tag close_tag, recv_tag, send_tag, status_tag;
	pthread_mutex_t mu; /* one call's completions may run on different CQ threads */
	grpc_call *call;
	grpc_byte_buffer *recv, *sending;
	int pending, cancelled;
	bool closed, send_busy, status_sent;
	uint64_t ack_wanted, ack_sent;
} bare_call;

typedef struct bare_slot {
	struct tau_rpc_tag tag;
	grpc_server *server;
	void *method;
	grpc_completion_queue *cq;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
} bare_slot;

/* Calls the bare server has taken and not yet freed. */
static atomic_size_t bare_live;

static size_t bare_live_calls(void *ud)
{
	(void)ud;
	return atomic_load(&bare_live);
}

/* Releases c->mu; frees the call once it is closed and nothing is in flight. */
static void bare_maybe_done(bare_call *c)
{
	if (!c->closed || c->pending > 0) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	pthread_mutex_unlock(&c->mu);
	if (c->sending != NULL)
		grpc_byte_buffer_destroy(c->sending);
	grpc_call_unref(c->call);
	pthread_mutex_destroy(&c->mu);
	free(c);
	atomic_fetch_sub(&bare_live, 1);
}

static void bare_batch(bare_call *c, grpc_op *ops, size_t n, struct tau_rpc_tag *tag)
{
	if (grpc_call_start_batch(c->call, ops, n, tag, NULL) == GRPC_CALL_OK)
		c->pending++;
	else
		grpc_call_cancel(c->call, NULL);
}

static void bare_send_ack(bare_call *c)
{
	Tau__Inventory__V1__ReportAck ack = TAU__INVENTORY__V1__REPORT_ACK__INIT;
	uint8_t buf[64];
	grpc_slice slice;
	grpc_op op;

	if (c->send_busy || c->closed || c->ack_wanted == c->ack_sent)
		return;
	ack.seq = c->ack_wanted;
	ack.heartbeat_interval_seconds = 30;
	ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK;
	slice = grpc_slice_from_copied_buffer((const char *)buf,
	                                      tau__inventory__v1__report_ack__pack(&ack, buf));
	c->sending = grpc_raw_byte_buffer_create(&slice, 1);
	grpc_slice_unref(slice);
	c->ack_sent = c->ack_wanted;
	c->send_busy = true;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = c->sending;
	bare_batch(c, &op, 1, &c->send_tag);
}

static void bare_post_recv(bare_call *c)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->recv;
	bare_batch(c, &op, 1, &c->recv_tag);
}

/* AgentReport.seq is field 1, a varint; 0 when absent. */
static uint64_t report_seq(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	if (n < 2 || p[0] != 0x08)
		return 0;
	for (size_t i = 1, shift = 0; i < n && shift < 64; i++, shift += 7) {
		v |= (uint64_t)(p[i] & 0x7f) << shift;
		if ((p[i] & 0x80) == 0)
			break;
	}
	return v;
}

static void bare_on_recv(struct tau_rpc_tag *t, bool ok)
{
	bare_call *c = CONTAINER_OF(t, bare_call, recv_tag);
	grpc_byte_buffer_reader reader;
	grpc_slice all;

	pthread_mutex_lock(&c->mu);
	c->pending--;
	if (!ok || c->recv == NULL) {
		if (ok && !c->closed && !c->status_sent) { /* half-close: finish OK */
			grpc_op op;

			memset(&op, 0, sizeof(op));
			op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
			op.data.send_status_from_server.status = GRPC_STATUS_OK;
			c->status_sent = true;
			bare_batch(c, &op, 1, &c->status_tag);
		}
		bare_maybe_done(c);
		return;
	}
	if (grpc_byte_buffer_reader_init(&reader, c->recv)) {
		all = grpc_byte_buffer_reader_readall(&reader);
		grpc_byte_buffer_reader_destroy(&reader);
		c->ack_wanted = report_seq(GRPC_SLICE_START_PTR(all), GRPC_SLICE_LENGTH(all));
		grpc_slice_unref(all);
	}
	grpc_byte_buffer_destroy(c->recv);
	c->recv = NULL;
	bare_send_ack(c);
	if (!c->closed)
		bare_post_recv(c);
	bare_maybe_done(c);
}

static void bare_on_send(struct tau_rpc_tag *t, bool ok)
{
	bare_call *c = CONTAINER_OF(t, bare_call, send_tag);

	pthread_mutex_lock(&c->mu);
	c->pending--;
	grpc_byte_buffer_destroy(c->sending);
	c->sending = NULL;
	c->send_busy = false;
	if (ok)
		bare_send_ack(c);
	bare_maybe_done(c);
}

static void bare_on_close(struct tau_rpc_tag *t, bool ok)
{
	bare_call *c = CONTAINER_OF(t, bare_call, close_tag);

	(void)ok;
	pthread_mutex_lock(&c->mu);
	c->pending--;
	c->closed = true;
	bare_maybe_done(c);
}

static void bare_on_status(struct tau_rpc_tag *t, bool ok)
{
	bare_call *c = CONTAINER_OF(t, bare_call, status_tag);

	(void)ok;
	pthread_mutex_lock(&c->mu);
	c->pending--;
	bare_maybe_done(c);
}

static void bare_arm(bare_slot *slot)
{
	slot->call = NULL;
	if (grpc_server_request_registered_call(slot->server, slot->method, &slot->call,
	                                        &slot->deadline, &slot->md, NULL, slot->cq,
	                                        slot->cq, &slot->tag) != GRPC_CALL_OK) {
		grpc_metadata_array_destroy(&slot->md);
		free(slot);
	}
}

static void bare_on_request(struct tau_rpc_tag *t, bool ok)
{
	bare_slot *slot = CONTAINER_OF(t, bare_slot, tag);
	bare_call *c;
	grpc_op ops[2];

	if (!ok) {
		grpc_metadata_array_destroy(&slot->md);
		free(slot);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		exit(1);
	atomic_fetch_add(&bare_live, 1);
	c->close_tag.fn = bare_on_close;
	c->recv_tag.fn = bare_on_recv;
	c->send_tag.fn = bare_on_send;
	c->status_tag.fn = bare_on_status;
	c->call = slot->call;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_lock(&c->mu);
	/* As lib/rpc: headers now, and the close whenever it comes. */
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[1].data.recv_close_on_server.cancelled = &c->cancelled;
	bare_batch(c, ops, 2, &c->close_tag);
	bare_post_recv(c);
	pthread_mutex_unlock(&c->mu);
	grpc_metadata_array_destroy(&slot->md);
	grpc_metadata_array_init(&slot->md);
	bare_arm(slot);
}

static void *bare_cq_thread(void *arg)
{
	grpc_completion_queue *cq = arg;

	for (;;) {
		grpc_event ev =
		        grpc_completion_queue_next(cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE) {
			struct tau_rpc_tag *t = ev.tag;

			t->fn(t, ev.success != 0);
		}
	}
	return NULL;
}

static int serve_bare(void)
{
	tau_rpc_server_opts opts = {.requests_per_method = SERVER_REQUESTS_ARMED,
	                            .cq_threads = server_threads};
	grpc_arg args[TAU_RPC_SERVER_MAX_ARGS];
	grpc_channel_args cargs = {.args = args};
	grpc_server *server;
	grpc_server_credentials *creds;
	grpc_completion_queue *cq;
	void *method;
	pthread_t thread;
	int port, sig;

	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	grpc_init();
	cargs.num_args = tau_rpc_server_channel_args(args, &opts);
	server = grpc_server_create(&cargs, NULL);
	cq = grpc_completion_queue_create_for_next(NULL);
	grpc_server_register_completion_queue(server, cq, NULL);
	method = grpc_server_register_method(server, REPORT, NULL, GRPC_SRM_PAYLOAD_NONE, 0);
	creds = grpc_insecure_server_credentials_create();
	port = grpc_server_add_http2_port(server, "127.0.0.1:0", creds);
	grpc_server_credentials_release(creds);
	if (port == 0 || method == NULL) {
		fprintf(stderr, "bench_swarm: bare server did not start\n");
		return 1;
	}
	grpc_server_start(server);
	for (int i = 0; i < opts.requests_per_method; i++) {
		bare_slot *slot = calloc(1, sizeof(*slot));

		if (slot == NULL)
			return 1;
		slot->tag.fn = bare_on_request;
		slot->server = server;
		slot->method = method;
		slot->cq = cq;
		grpc_metadata_array_init(&slot->md);
		bare_arm(slot);
	}
	for (int i = 0; i < opts.cq_threads; i++)
		pthread_create(&thread, NULL, bare_cq_thread, cq);
	printf("port %d\n", port);
	fflush(stdout);
	while (sigwait(&sigs, &sig) == 0 && sig == SIGUSR1)
		trim_when_calls_gone(bare_live_calls, NULL, 0);
	/* The parent has its figures; the process ends without a drain. */
	_exit(0);
}

static long child_rss_kib(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* CPU seconds (user + system) the child has used. */
static double child_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p != NULL ? strrchr(buf, ')') : NULL;
	/* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt ut st
	 */
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- agents (parent) ----------------------------------------------------------------------- */

typedef struct agent {
	int index;
	tau_rpc_stream *stream;
	uint64_t seq;   /* last sent */
	uint64_t acked; /* last acked */
	int left;       /* reports still to send in phase 2 */
	bool counted;   /* its first inventory was acked */
	char name[32];
} agent;

static atomic_uint_fast64_t acks_total, acks_bad;
static atomic_int connected;
static int phase2;

static void send_inventory(agent *a, int variant)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	Tau__Inventory__V1__NodeInventory__LabelsEntry l[5], *lp[5];
	Tau__Inventory__V1__ResourceQuantity r[6], *rp[6];
	static const char *const rn[6] = {
	        "cpu", "ephemeral-storage", "memory", "nvidia.com/gpu", "pods", "rdma/ib"};
	const char *rq[6] = {"94940m", "119703055367", "1977700032Ki", "8", "110", "8"};
	char cls[32], digest[32], uid[32];
	const char *lk[5] = {"kubernetes.azure.com/agentpool", "kubernetes.io/hostname",
	                     "kubernetes.io/os", "node.kubernetes.io/instance-type",
	                     "tau.azure.com/gpu-class"};
	const char *lv[5] = {"gpu", a->name, "linux", "Standard_ND96isr_H100_v5", cls};

	snprintf(cls, sizeof(cls), "h100-%d", a->index % 4);
	snprintf(digest, sizeof(digest), "d%d", variant);
	snprintf(uid, sizeof(uid), "u-%d", a->index); /* its Node's, as a real agent reads it */
	for (int i = 0; i < 5; i++) {
		tau__inventory__v1__node_inventory__labels_entry__init(&l[i]);
		l[i].key = (char *)lk[i];
		l[i].value = (char *)lv[i];
		lp[i] = &l[i];
	}
	for (int i = 0; i < 6; i++) {
		tau__inventory__v1__resource_quantity__init(&r[i]);
		r[i].name = (char *)rn[i];
		r[i].quantity = (char *)rq[i];
		rp[i] = &r[i];
	}
	inv.node_name = a->name;
	inv.node_uid = uid;
	inv.resource_version = (char *)"1";
	inv.gpu_class = cls;
	inv.n_labels = 5;
	inv.labels = lp;
	inv.n_allocatable = 6;
	inv.allocatable = rp;
	inv.ready = true;
	inv.schedulable = true;
	inv.os = (char *)"linux";
	inv.kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL;
	inv.agent_version = (char *)"bench";
	inv.digest = digest;
	rep.seq = ++a->seq;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep.inventory = &inv;
	if (tau_rpc_stream_send(a->stream, &rep.base) < 0)
		die("send");
}

static void on_ack(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud)
{
	agent *a = ud;
	Tau__Inventory__V1__ReportAck *ack = (Tau__Inventory__V1__ReportAck *)msg;

	(void)s;
	if (ack->status != TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK)
		atomic_fetch_add(&acks_bad, 1);
	a->acked = ack->seq;
	if (ack->seq == 1 && !a->counted) {
		a->counted = true;
		atomic_fetch_add(&connected, 1);
	}
	atomic_fetch_add(&acks_total, 1);
	if (phase2 && a->left > 0) {
		a->left--;
		send_inventory(a, (int)(a->seq & 1));
	}
	tau_rpc_message_free(msg);
}

static atomic_int closes;

/*
 * A stream that ends is reported (the first few), not hidden; it reconnects as a real agent's
 * does (a thousand connections opened at once can time out on a loaded machine) and sends its
 * first inventory again from on_connected. An ingest report lost with the stream stalls the
 * run, which then says so.
 */
static void on_closed(tau_rpc_stream *s, const tau_rpc_status *st, int retry_ms, void *ud)
{
	agent *a = ud;

	(void)s;
	if (st->code != TAU_RPC_CANCELLED && atomic_fetch_add(&closes, 1) < 3)
		fprintf(stderr, "bench_swarm: stream of %s ended (%s: %s); again in %d ms\n",
		        a->name, tau_rpc_code_name((int)st->code), st->message, retry_ms);
}

static void on_connected(tau_rpc_stream *s, void *ud)
{
	agent *a = ud;

	a->stream = s; /* the first attempt may connect before tau_rpc_stream_open returns */
	a->seq = 0;    /* a new stream starts again at 1 */
	send_inventory(a, 0);
}

typedef struct watch_state {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	uint64_t generation;
	bool established;
	double at;
} watch_state;

static void on_pool(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud)
{
	watch_state *w = ud;
	Tau__Inventory__V1__Pool *p = (Tau__Inventory__V1__Pool *)msg;

	(void)s;
	pthread_mutex_lock(&w->mu);
	w->generation = p->generation;
	w->established = p->established;
	w->at = ((double)tau_clock_mono_us() / 1e6);
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	tau_rpc_message_free(msg);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

typedef struct run_result {
	double connect_s;
	double ingest_rps;
	double cpu_us_per_report; /* the server's CPU during ingest over the reports acked */
	long rss_empty, rss_conn, rss_after, rss_closed; /* KiB */
} run_result;

/*
 * One run against a fresh server child: the aggregator's handlers, or (bare) the floor. The
 * bare server has no WatchPool, so it has no pool to wait for and no latency phase.
 */
static int run(bool bare, int n_agents, int n_channels, int reports, int samples, run_result *r)
{
	const char *who = bare ? "bare" : "aggregator";
	int pipefd[2], port = 0;
	pid_t child;
	FILE *from_child;
	char target[64], line[64];
	size_t live;
	tau_rpc_channel **chans;
	agent *agents;
	tau_rpc_channel *wch = NULL;
	tau_rpc_stream *wstream = NULL;
	watch_state w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	Tau__Inventory__V1__WatchPoolRequest wreq = TAU__INVENTORY__V1__WATCH_POOL_REQUEST__INIT;
	double t0, t_conn, t_ingest, *lat, cpu_srv, cpu_cli;
	uint64_t base;

	memset(r, 0, sizeof(*r));
	atomic_store(&acks_total, 0);
	atomic_store(&acks_bad, 0);
	atomic_store(&connected, 0);
	atomic_store(&closes, 0);
	phase2 = 0;
	if (pipe(pipefd) != 0)
		return 1;
	child = fork();
	if (child == 0) {
		char n[16], t[16];

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphaned server if the parent dies */
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		snprintf(n, sizeof(n), "%d", n_agents);
		snprintf(t, sizeof(t), "%d", server_threads);
		if (bare)
			execl("/proc/self/exe", "bench_swarm", "--server-threads", t,
			      "--serve-bare", (char *)NULL);
		else
			execl("/proc/self/exe", "bench_swarm", "--server-threads", t, "--serve", n,
			      (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	from_child = fdopen(pipefd[0], "r");
	if (from_child == NULL || fgets(line, sizeof(line), from_child) == NULL ||
	    sscanf(line, "port %d", &port) != 1) {
		fprintf(stderr, "bench_swarm: %s server did not start\n", who);
		return 1;
	}
	r->rss_empty = child_rss_kib(child);
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	printf("[%s] %d agents over %d channels, %d reports each; server pid %d\n", who, n_agents,
	       n_channels, reports, (int)child);
	printf("[%s] server RSS before any agent%s: %.1f MiB\n", who,
	       bare ? "" : " (every Node known from the API)", (double)r->rss_empty / 1024);

	/* WatchPool first, to see when the pool is established. */
	if (!bare) {
		tau_rpc_channel_opts co = {.target = target, .own_connection = true};
		tau_rpc_stream_opts so = {.path = WATCH,
		                          .response = &tau__inventory__v1__pool__descriptor,
		                          .request = &wreq.base,
		                          .on_message = on_pool,
		                          .ud = &w};

		if (tau_rpc_channel_new(&wch, &co) < 0 ||
		    tau_rpc_stream_open(&wstream, wch, &so) < 0)
			die("watch");
	}
	chans = calloc((size_t)n_channels, sizeof(*chans));
	agents = calloc((size_t)n_agents, sizeof(*agents));
	lat = calloc((size_t)samples + 1, sizeof(*lat));
	if (chans == NULL || agents == NULL || lat == NULL)
		return 1;
	for (int c = 0; c < n_channels; c++) {
		tau_rpc_channel_opts co = {.target = target, .own_connection = true};

		if (tau_rpc_channel_new(&chans[c], &co) < 0)
			die("channel");
	}

	/* 1. connect */
	t0 = ((double)tau_clock_mono_us() / 1e6);
	for (int i = 0; i < n_agents; i++) {
		agent *a = &agents[i];
		char token[192];
		tau_rpc_channel *ch = chans[i % n_channels];
		tau_rpc_stream_opts so = {.path = REPORT,
		                          .response = &tau__inventory__v1__report_ack__descriptor,
		                          .on_message = on_ack,
		                          .on_connected = on_connected,
		                          .on_closed = on_closed,
		                          .reconnect = true,
		                          .ud = a};

		a->index = i;
		node_name(a->name, sizeof(a->name), i);
		/* Tokens are per node: each stream sends its own on every attempt. */
		snprintf(token, sizeof(token), AGENT_JWT "%s", a->name);
		so.bearer_token = token;
		if (tau_rpc_stream_open(&a->stream, ch, &so) < 0)
			die("stream");
	}
	while (atomic_load(&connected) < n_agents) {
		if (((double)tau_clock_mono_us() / 1e6) - t0 > 300) {
			fprintf(stderr, "bench_swarm: [%s] only %d of %d agents acked\n", who,
			        (int)atomic_load(&connected), n_agents);
			return 1;
		}
		usleep(10000); /* a benchmark driver; the product code never polls */
	}
	pthread_mutex_lock(&w.mu);
	while (!bare && !w.established) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 30;
		if (pthread_cond_timedwait(&w.cond, &w.mu, &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&w.mu);
	t_conn = ((double)tau_clock_mono_us() / 1e6) - t0;
	r->connect_s = t_conn;
	r->rss_conn = child_rss_kib(child);
	printf("[%s] connect: %d streams opened, first inventory acked%s: %.2f s (%.0f agents/s)\n",
	       who, n_agents,
	       bare            ? ""
	       : w.established ? ", pool established"
	                       : ", pool NOT established",
	       t_conn, n_agents / t_conn);
	printf("[%s] server RSS with %d agents connected: %.1f MiB (%.1f KiB per agent over the "
	       "start)\n",
	       who, n_agents, (double)r->rss_conn / 1024,
	       (double)(r->rss_conn - r->rss_empty) / n_agents);

	/* 2. ingest */
	base = atomic_load(&acks_total);
	for (int i = 0; i < n_agents; i++)
		agents[i].left = reports > 0 ? reports - 1 : 0;
	phase2 = 1;
	cpu_srv = child_cpu_s(child);
	cpu_cli = self_cpu_s();
	t0 = ((double)tau_clock_mono_us() / 1e6);
	if (reports > 0) {
		for (int i = 0; i < n_agents; i++)
			send_inventory(&agents[i], 1);
		while (atomic_load(&acks_total) - base < (uint64_t)n_agents * (uint64_t)reports) {
			if (((double)tau_clock_mono_us() / 1e6) - t0 > 600) {
				fprintf(stderr, "bench_swarm: [%s] ingest stalled\n", who);
				return 1;
			}
			usleep(2000);
		}
	}
	t_ingest = ((double)tau_clock_mono_us() / 1e6) - t0;
	cpu_srv = child_cpu_s(child) - cpu_srv;
	cpu_cli = self_cpu_s() - cpu_cli;
	phase2 = 0;
	r->rss_after = child_rss_kib(child);
	if (reports > 0) {
		r->ingest_rps = (double)n_agents * reports / t_ingest;
		printf("[%s] ingest: %llu full inventories (%d agents x %d) in %.2f s: %.0f "
		       "reports/s; non-OK acks %llu\n",
		       who, (unsigned long long)n_agents * (unsigned long long)reports, n_agents,
		       reports, t_ingest, r->ingest_rps,
		       (unsigned long long)atomic_load(&acks_bad));
		r->cpu_us_per_report = 1e6 * cpu_srv / ((double)n_agents * reports);
		printf("[%s] ingest CPU: server %.2f s (%.0f %% of a core), load generator %.2f s "
		       "(%.0f %%)\n",
		       who, cpu_srv, 100 * cpu_srv / t_ingest, cpu_cli, 100 * cpu_cli / t_ingest);
	}
	printf("[%s] server RSS after ingest: %.1f MiB\n", who, (double)r->rss_after / 1024);

	/* 3. WatchPool latency on a quiet system: a Node update in the server -> pool pushed. */
	for (int s = 0; !bare && s < samples; s++) {
		uint64_t gen;
		double sent;

		usleep(300000); /* a quiet system between probes (benchmark pacing only) */
		pthread_mutex_lock(&w.mu);
		gen = w.generation;
		pthread_mutex_unlock(&w.mu);
		sent = ((double)tau_clock_mono_us() / 1e6);
		kill(child, SIGUSR2);
		pthread_mutex_lock(&w.mu);
		while (w.generation == gen) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 10;
			if (pthread_cond_timedwait(&w.cond, &w.mu, &ts) != 0)
				break;
		}
		lat[s] = w.generation == gen ? -1 : (w.at - sent) * 1000;
		pthread_mutex_unlock(&w.mu);
	}
	if (!bare && samples > 0) {
		qsort(lat, (size_t)samples, sizeof(*lat), cmp_double);
		printf("[%s] WatchPool latency, Node update -> new pool received (20 ms coalescing "
		       "window included; -1: none within 10 s): min %.1f ms, median %.1f ms, max "
		       "%.1f ms\n",
		       who, lat[0], lat[samples / 2], lat[samples - 1]);
	}

	/* 4. every agent gone: the store keeps every node (stale), gRPC's per-stream state goes. */
	for (int i = 0; i < n_agents; i++)
		tau_rpc_stream_free(agents[i].stream);
	kill(child, SIGUSR1); /* answered once the server's calls are gone, or after its wait */
	if (fgets(line, sizeof(line), from_child) == NULL ||
	    sscanf(line, "trimmed %zu", &live) != 1) {
		fprintf(stderr, "bench_swarm: [%s] no answer from the server to SIGUSR1\n", who);
		return 1;
	}
	if (live > (bare ? 0 : CALLS_KEPT)) {
		fprintf(stderr,
		        "bench_swarm: [%s] %zu calls still live on the server %d s after the "
		        "agents' streams were closed (waited for %d)\n",
		        who, live, CALLS_GONE_TIMEOUT_S, bare ? 0 : CALLS_KEPT);
		return 1;
	}
	r->rss_closed = child_rss_kib(child);
	printf("[%s] server RSS, every stream closed%s (after malloc_trim): %.1f MiB\n", who,
	       bare ? "" : ", every node kept (stale)", (double)r->rss_closed / 1024);
	if (wstream != NULL)
		tau_rpc_stream_free(wstream);
	for (int c = 0; c < n_channels; c++)
		tau_rpc_channel_free(chans[c]);
	tau_rpc_channel_free(wch);
	kill(child, SIGTERM);
	waitpid(child, NULL, 0);
	fclose(from_child);
	free(chans);
	free(agents);
	free(lat);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int n_agents = 10000, n_channels = 64, reports = 20, samples = 20, rounds = 1;
	bool compare = false;
	run_result agg = {0}, bare = {0};

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--server-threads") == 0 && i + 1 < argc) {
			server_threads = atoi(argv[++i]);
			continue;
		}
		if (strcmp(argv[i], "--serve") == 0 && i + 1 < argc)
			return serve(atoi(argv[i + 1]));
		if (strcmp(argv[i], "--serve-bare") == 0)
			return serve_bare();
		if (strcmp(argv[i], "--agents") == 0 && i + 1 < argc)
			n_agents = atoi(argv[++i]);
		else if (strcmp(argv[i], "--channels") == 0 && i + 1 < argc)
			n_channels = atoi(argv[++i]);
		else if (strcmp(argv[i], "--reports") == 0 && i + 1 < argc)
			reports = atoi(argv[++i]);
		else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
			samples = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--compare-bare") == 0)
			compare = true;
		else {
			fprintf(stderr,
			        "usage: bench_swarm [--agents N] [--channels C] [--reports R] "
			        "[--samples S] [--server-threads T] [--compare-bare [--rounds "
			        "K]]\n");
			return 2;
		}
	}
	if (n_agents < 1 || n_channels < 1 || reports < 0 || samples < 0 || rounds < 1 ||
	    server_threads < 1 || server_threads > TAU_RPC_MAX_CQ_THREADS)
		return 2;
	if (compare && reports < 1) {
		fprintf(stderr, "bench_swarm: --compare-bare needs --reports >= 1\n");
		return 2;
	}
	raise_nofile();
	/* Rounds alternate aggregator and bare, so both see the same machine; best of each. */
	for (int k = 0; k < (compare ? rounds : 1); k++) {
		run_result a, b;

		if (run(false, n_agents, n_channels, reports, samples, &a) != 0)
			return 1;
		if (a.ingest_rps > agg.ingest_rps)
			agg = a;
		if (!compare)
			continue;
		if (run(true, n_agents, n_channels, reports, 0, &b) != 0)
			return 1;
		if (b.ingest_rps > bare.ingest_rps)
			bare = b;
	}
	if (compare) {
		printf("memory with %d agents connected: aggregator %.1f MiB, bare %.1f MiB (+%.1f "
		       "MiB)\n",
		       n_agents, (double)agg.rss_conn / 1024, (double)bare.rss_conn / 1024,
		       (double)(agg.rss_conn - bare.rss_conn) / 1024);
		/* When the load generator is the limit, CPU per report still compares the servers.
		 */
		printf("server CPU per report: aggregator %.1f us, bare %.1f us (bare/aggregator "
		       "%.2f)\n",
		       agg.cpu_us_per_report, bare.cpu_us_per_report,
		       bare.cpu_us_per_report / agg.cpu_us_per_report);
		printf("ratio %.2f (aggregator %.0f reports/s, bare %.0f reports/s)\n",
		       agg.ingest_rps / bare.ingest_rps, agg.ingest_rps, bare.ingest_rps);
	}
	return 0;
}
