/*
 * bench_swarm - N node agents against the aggregator's Report and WatchPool handlers.
 *
 * The server is this program re-executed (--serve) in a child process, so its memory is the
 * aggregator's alone: the real handler code of aggregator/inventory/service.c (validation, the node
 * store, the pool, the sync gate, coalesced WatchPool), with a stub TokenReview (token
 * "node:<name>" is the agent ServiceAccount bound to <name>; reviews are cached as in
 * production, so this costs one call per agent) and N Nodes fed to the store as the Node
 * informer would (no kube-sim: the figure is the aggregator's, not the API server's).
 *
 * The parent plays N agents as N Report streams over --channels connections:
 *   1. connect: every agent opens its stream and sends its full inventory (seq 1); time until
 *      every ack is in and the pool is established; server RSS then.
 *   2. ingest: each agent sends --reports further inventories (its cpu alternates, so every
 *      report changes the pool), one outstanding per agent; reports/s acked. Compare with
 *      bench_rpc's bare-stream figure (printed by `bench/rpc --skip-idle`).
 *   3. latency: on a quiet system, one agent changes its inventory; time until WatchPool
 *      pushes the new pool (includes the 20 ms coalescing window), --samples times.
 * Usage: bench_swarm [--agents N] [--channels C] [--reports R] [--samples S]
 */
#include "inventory/service.h"

#include "tau/error.h"
#include "tau/log.h"
#include "tau/rpc.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"

#include <cjson/cJSON.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPORT "/tau.inventory.v1.InventoryService/Report"
#define WATCH  "/tau.inventory.v1.QueryService/WatchPool"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_swarm: %s: %s\n", what, tau_error_last()->msg);
	exit(1);
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

static int stub_review(void *ud, const char *token, tau_auth_review *out)
{
	(void)ud;
	memset(out, 0, sizeof(*out));
	if (strncmp(token, "node:", 5) != 0) {
		snprintf(out->error, sizeof(out->error), "unknown token");
		return 0;
	}
	out->authenticated = true;
	snprintf(out->username, sizeof(out->username),
	         "system:serviceaccount:tau-system:tau-node-agent");
	snprintf(out->node_name, sizeof(out->node_name), "%s", token + 5);
	return 0;
}

static int serve(int agents)
{
	tau_agg_config cfg = {.agent_user = "system:serviceaccount:tau-system:tau-node-agent",
	                      .review = stub_review,
	                      .sync_timeout_ms = 3600000};
	tau_agg *agg = NULL;
	tau_rpc_server *srv = NULL;
	tau_rpc_server_opts opts = {.requests_per_method = 64};
	int port = 0, sig;
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	tau_log_set_level(TAU_LOG_WARN);
	if (tau_agg_new(&agg, &cfg) < 0 || tau_rpc_server_new(&srv, &opts) < 0 ||
	    tau_agg_register(agg, srv) < 0 ||
	    tau_rpc_server_listen(srv, "127.0.0.1:0", NULL, &port) < 0 || tau_agg_start(agg) < 0 ||
	    tau_rpc_server_start(srv) < 0)
		die("server");
	/* The Node informer's part: every node known from the API, then synced. */
	for (int i = 0; i < agents; i++) {
		char name[32], json[1024];
		cJSON *node;

		node_name(name, sizeof(name), i);
		snprintf(
		        json, sizeof(json),
		        "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%d\",\"resourceVersion\":\"1\","
		        "\"labels\":{\"kubernetes.io/os\":\"linux\",\"kubernetes.io/"
		        "hostname\":\"%s\","
		        "\"tau.azure.com/gpu-class\":\"h100-%d\",\"kubernetes.azure.com/"
		        "agentpool\":"
		        "\"gpu\",\"node.kubernetes.io/"
		        "instance-type\":\"Standard_ND96isr_H100_v5\"}},"
		        "\"status\":{\"allocatable\":{\"cpu\":\"94940m\",\"memory\":"
		        "\"1977700032Ki\","
		        "\"nvidia.com/gpu\":\"8\",\"rdma/ib\":\"8\",\"pods\":\"110\","
		        "\"ephemeral-storage\":\"119703055367\"},"
		        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		        name, i, name, i % 4);
		node = cJSON_Parse(json);
		tau_agg_node_upsert(agg, node);
		cJSON_Delete(node);
	}
	tau_agg_nodes_synced(agg);
	printf("port %d\n", port);
	fflush(stdout);
	/* SIGUSR1: give freed memory back, so the parent's RSS reading shows what is live. */
	while (sigwait(&sigs, &sig) == 0 && sig == SIGUSR1) {
		malloc_trim(0);
		printf("trimmed\n");
		fflush(stdout);
	}
	tau_rpc_server_shutdown(srv, 1000);
	tau_agg_stop(agg);
	tau_rpc_server_free(srv);
	tau_agg_free(agg);
	return 0;
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

/* ---- agents (parent) ----------------------------------------------------------------------- */

typedef struct agent {
	int index;
	tau_rpc_stream *stream;
	uint64_t seq;   /* last sent */
	uint64_t acked; /* last acked */
	int left;       /* reports still to send in phase 2 */
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
	const char *rq[6] = {
	        variant & 1 ? "94941m" : "94940m", "119703055367", "1977700032Ki", "8", "110", "8"};
	char cls[32], cpu[32], digest[32];
	const char *lk[5] = {"kubernetes.azure.com/agentpool", "kubernetes.io/hostname",
	                     "kubernetes.io/os", "node.kubernetes.io/instance-type",
	                     "tau.azure.com/gpu-class"};
	const char *lv[5] = {"gpu", a->name, "linux", "Standard_ND96isr_H100_v5", cls};

	snprintf(cls, sizeof(cls), "h100-%d", a->index % 4);
	if (variant >= 2) { /* latency probe: a cpu value never seen before */
		snprintf(cpu, sizeof(cpu), "%dm", 100000 + variant);
		rq[0] = cpu;
	}
	snprintf(digest, sizeof(digest), "d%d", variant);
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
	inv.node_uid = (char *)"0b6f7c1e-1111-2222-3333-444455556666";
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
	if (ack->seq == 1)
		atomic_fetch_add(&connected, 1);
	atomic_fetch_add(&acks_total, 1);
	if (phase2 && a->left > 0) {
		a->left--;
		send_inventory(a, (int)(a->seq & 1));
	}
	tau_rpc_message_free(msg);
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
	w->at = now_s();
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	tau_rpc_message_free(msg);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n_agents = 10000, n_channels = 8, reports = 20, samples = 20;
	int pipefd[2], port = 0;
	pid_t child;
	FILE *from_child;
	char target[64], line[64];
	tau_rpc_channel **chans;
	agent *agents;
	tau_rpc_channel *wch = NULL;
	tau_rpc_stream *wstream = NULL;
	watch_state w = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	Tau__Inventory__V1__WatchPoolRequest wreq = TAU__INVENTORY__V1__WATCH_POOL_REQUEST__INIT;
	double t0, t_conn, t_ingest, *lat;
	long rss_empty, rss_conn, rss_after;
	uint64_t base;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--serve") == 0 && i + 1 < argc)
			return serve(atoi(argv[i + 1]));
		if (strcmp(argv[i], "--agents") == 0 && i + 1 < argc)
			n_agents = atoi(argv[++i]);
		else if (strcmp(argv[i], "--channels") == 0 && i + 1 < argc)
			n_channels = atoi(argv[++i]);
		else if (strcmp(argv[i], "--reports") == 0 && i + 1 < argc)
			reports = atoi(argv[++i]);
		else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
			samples = atoi(argv[++i]);
		else {
			fprintf(stderr,
			        "usage: bench_swarm [--agents N] [--channels C] [--reports R] "
			        "[--samples S]\n");
			return 2;
		}
	}
	if (n_agents < 1 || n_channels < 1 || reports < 0 || samples < 0)
		return 2;
	raise_nofile();
	if (pipe(pipefd) != 0)
		return 1;
	child = fork();
	if (child == 0) {
		char n[16];

		dup2(pipefd[1], 1);
		close(pipefd[0]);
		snprintf(n, sizeof(n), "%d", n_agents);
		execl("/proc/self/exe", argv[0], "--serve", n, (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	from_child = fdopen(pipefd[0], "r");
	if (from_child == NULL || fgets(line, sizeof(line), from_child) == NULL ||
	    sscanf(line, "port %d", &port) != 1) {
		fprintf(stderr, "bench_swarm: server did not start\n");
		return 1;
	}
	rss_empty = child_rss_kib(child);
	snprintf(target, sizeof(target), "127.0.0.1:%d", port);
	printf("bench_swarm: %d agents over %d channels, %d reports each; server pid %d\n",
	       n_agents, n_channels, reports, (int)child);
	printf("server RSS with %d Nodes known from the API, no agent: %.1f MiB\n", n_agents,
	       (double)rss_empty / 1024);

	/* WatchPool first, to see when the pool is established. */
	{
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
	for (int c = 0; c < n_channels; c++) {
		tau_rpc_channel_opts co = {.target = target, .own_connection = true};

		if (tau_rpc_channel_new(&chans[c], &co) < 0)
			die("channel");
	}

	/* 1. connect */
	t0 = now_s();
	for (int i = 0; i < n_agents; i++) {
		agent *a = &agents[i];
		char token[64];
		tau_rpc_channel *ch = chans[i % n_channels];
		tau_rpc_stream_opts so = {.path = REPORT,
		                          .response = &tau__inventory__v1__report_ack__descriptor,
		                          .on_message = on_ack,
		                          .ud = a};

		a->index = i;
		node_name(a->name, sizeof(a->name), i);
		/* Tokens are per node; a channel's token applies to the streams opened after it. */
		snprintf(token, sizeof(token), "node:%s", a->name);
		tau_rpc_channel_set_bearer_token(ch, token);
		if (tau_rpc_stream_open(&a->stream, ch, &so) < 0)
			die("stream");
		send_inventory(a, 0);
	}
	while (atomic_load(&connected) < n_agents) {
		if (now_s() - t0 > 300) {
			fprintf(stderr, "bench_swarm: only %d of %d agents acked\n",
			        (int)atomic_load(&connected), n_agents);
			return 1;
		}
		usleep(10000); /* a benchmark driver; the product code never polls */
	}
	pthread_mutex_lock(&w.mu);
	while (!w.established) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 30;
		if (pthread_cond_timedwait(&w.cond, &w.mu, &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&w.mu);
	t_conn = now_s() - t0;
	rss_conn = child_rss_kib(child);
	printf("connect: %d streams authenticated, first inventory acked, pool %s: %.2f s "
	       "(%.0f agents/s)\n",
	       n_agents, w.established ? "established" : "NOT established", t_conn,
	       n_agents / t_conn);
	printf("server RSS at %d nodes reported and connected: %.1f MiB (%.1f KiB per node over "
	       "the empty store)\n",
	       n_agents, (double)rss_conn / 1024, (double)(rss_conn - rss_empty) / n_agents);

	/* 2. ingest */
	base = atomic_load(&acks_total);
	for (int i = 0; i < n_agents; i++)
		agents[i].left = reports > 0 ? reports - 1 : 0;
	phase2 = 1;
	t0 = now_s();
	if (reports > 0) {
		for (int i = 0; i < n_agents; i++)
			send_inventory(&agents[i], 1);
		while (atomic_load(&acks_total) - base < (uint64_t)n_agents * (uint64_t)reports) {
			if (now_s() - t0 > 600) {
				fprintf(stderr, "bench_swarm: ingest stalled\n");
				return 1;
			}
			usleep(5000);
		}
	}
	t_ingest = now_s() - t0;
	phase2 = 0;
	rss_after = child_rss_kib(child);
	if (reports > 0)
		printf("ingest: %llu full inventories (%d agents x %d) in %.2f s: %.0f reports/s; "
		       "non-OK acks %llu\n",
		       (unsigned long long)n_agents * (unsigned long long)reports, n_agents,
		       reports, t_ingest, (double)n_agents * reports / t_ingest,
		       (unsigned long long)atomic_load(&acks_bad));
	printf("server RSS after ingest: %.1f MiB\n", (double)rss_after / 1024);

	/* 3. WatchPool latency on a quiet system */
	for (int s = 0; s < samples; s++) {
		agent *a = &agents[(s * 7919) % n_agents];
		uint64_t gen;
		double sent;

		usleep(300000); /* a quiet system between probes (benchmark pacing only) */
		pthread_mutex_lock(&w.mu);
		gen = w.generation;
		pthread_mutex_unlock(&w.mu);
		sent = now_s();
		send_inventory(a, 2 + s);
		pthread_mutex_lock(&w.mu);
		while (w.generation == gen) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 10;
			if (pthread_cond_timedwait(&w.cond, &w.mu, &ts) != 0)
				break;
		}
		lat[s] = (w.at - sent) * 1000;
		pthread_mutex_unlock(&w.mu);
	}
	if (samples > 0) {
		qsort(lat, (size_t)samples, sizeof(*lat), cmp_double);
		printf("WatchPool latency, report sent -> new pool received (20 ms coalescing "
		       "window included): min %.1f ms, median %.1f ms, max %.1f ms\n",
		       lat[0], lat[samples / 2], lat[samples - 1]);
	}

	/* 4. every agent gone: the store keeps every node (stale), gRPC's per-stream state goes. */
	for (int i = 0; i < n_agents; i++)
		tau_rpc_stream_free(agents[i].stream);
	usleep(500000); /* let the server see the cancellations (benchmark pacing only) */
	kill(child, SIGUSR1);
	if (fgets(line, sizeof(line), from_child) != NULL)
		printf("server RSS with %d stale nodes, no stream open (after malloc_trim): %.1f "
		       "MiB\n",
		       n_agents, (double)child_rss_kib(child) / 1024);
	tau_rpc_stream_free(wstream);
	for (int c = 0; c < n_channels; c++)
		tau_rpc_channel_free(chans[c]);
	tau_rpc_channel_free(wch);
	kill(child, SIGTERM);
	waitpid(child, NULL, 0);
	free(chans);
	free(agents);
	free(lat);
	return 0;
}
