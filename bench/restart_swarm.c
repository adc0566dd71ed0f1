/*
 * restart_swarm - N node agents, as N Report streams over C connections, against an EXTERNAL
 * tau-aggregator (bench/restart.py drives it).
 *
 * Each agent is one stream with its own bearer token (its node's ServiceAccount token, read
 * from --agents-file: one "NODE TOKEN" line per agent) that sends its node's full inventory
 * (seq 1) on every (re)connect, a Heartbeat when it has sent nothing for the interval of the
 * latest ack, and reconnects as tau-node-agent does (docs/protocol.md, "Agent side": the
 * stream's jittered backoff, 500 ms growing x1.6 to 30 s, +-20 %; wait-for-ready once it has
 * reached the server; the connection retried from 200 ms to 5 s). Nothing here is the
 * agent's code: the figure is the aggregator's, so the agents are as cheap as can be.
 *
 * Every --every-ms it prints one line "live L acked A closed X t T": L agents whose current
 * stream has its first inventory acked OK, A acks in all, X stream ends in all, T seconds since
 * start. It runs until stdin reaches EOF (the driver closes it) or SIGTERM.
 *
 * Usage: restart_swarm --target HOST:PORT --agents-file FILE [--channels C] [--ca FILE]
 *                      [--every-ms MS]
 */
#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/rpc_client.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define REPORT "/tau.inventory.v1.InventoryService/Report"

typedef struct agent {
	tau_rpc_stream *stream;
	pthread_mutex_t mu; /* seq, live, last_send_ms, digest */
	uint64_t seq;
	bool live;
	int64_t last_send_ms;
	int heartbeat_s;
	char name[254];
	char *token;
} agent;

static atomic_int live_count;
static atomic_uint_fast64_t acks, closes;

static void die(const char *what)
{
	fprintf(stderr, "restart_swarm: %s: %s\n", what, tau_error_last()->msg);
	exit(1);
}

/* The node's inventory as bench/restart.py seeds its Node (class h100, 8 GPUs). a->mu held. */
static void send_inventory_locked(agent *a)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	Tau__Inventory__V1__NodeInventory__LabelsEntry l[3], *lp[3];
	Tau__Inventory__V1__ResourceQuantity r[4], *rp[4];
	static const char *const rn[4] = {"cpu", "memory", "nvidia.com/gpu", "pods"};
	static const char *const rq[4] = {"96", "1800Gi", "8", "110"};
	const char *lk[3] = {"kubernetes.io/hostname", "kubernetes.io/os",
	                     "tau.azure.com/gpu-class"};
	const char *lv[3] = {a->name, "linux", "h100"};

	for (int i = 0; i < 3; i++) {
		tau__inventory__v1__node_inventory__labels_entry__init(&l[i]);
		l[i].key = (char *)lk[i];
		l[i].value = (char *)lv[i];
		lp[i] = &l[i];
	}
	for (int i = 0; i < 4; i++) {
		tau__inventory__v1__resource_quantity__init(&r[i]);
		r[i].name = (char *)rn[i];
		r[i].quantity = (char *)rq[i];
		rp[i] = &r[i];
	}
	inv.node_name = a->name;
	inv.gpu_class = (char *)"h100";
	inv.n_labels = 3;
	inv.labels = lp;
	inv.n_allocatable = 4;
	inv.allocatable = rp;
	inv.ready = true;
	inv.schedulable = true;
	inv.os = (char *)"linux";
	inv.kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL;
	inv.agent_version = (char *)"restart-swarm";
	inv.digest = (char *)"d0";
	rep.seq = ++a->seq;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep.inventory = &inv;
	a->last_send_ms = (int64_t)tau_clock_mono_ms();
	(void)tau_rpc_stream_send(a->stream, &rep.base); /* a lost stream reconnects */
}

static void send_heartbeat_locked(agent *a)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;

	hb.digest = (char *)"d0";
	rep.seq = ++a->seq;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT;
	rep.heartbeat = &hb;
	a->last_send_ms = (int64_t)tau_clock_mono_ms();
	(void)tau_rpc_stream_send(a->stream, &rep.base);
}

static void on_ack(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud)
{
	agent *a = ud;
	Tau__Inventory__V1__ReportAck *ack = (Tau__Inventory__V1__ReportAck *)msg;

	(void)s;
	atomic_fetch_add(&acks, 1);
	pthread_mutex_lock(&a->mu);
	if (ack->heartbeat_interval_seconds > 0)
		a->heartbeat_s = (int)ack->heartbeat_interval_seconds;
	if (ack->status == TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK && !a->live) {
		a->live = true;
		atomic_fetch_add(&live_count, 1);
	} else if (ack->status == TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_RESEND_FULL) {
		send_inventory_locked(a);
	}
	pthread_mutex_unlock(&a->mu);
	tau_rpc_message_free(msg);
}

static void on_closed(tau_rpc_stream *s, const tau_rpc_status *st, int retry_ms, void *ud)
{
	agent *a = ud;

	(void)s;
	(void)st;
	(void)retry_ms;
	atomic_fetch_add(&closes, 1);
	pthread_mutex_lock(&a->mu);
	if (a->live) {
		a->live = false;
		atomic_fetch_sub(&live_count, 1);
	}
	pthread_mutex_unlock(&a->mu);
}

static void on_connected(tau_rpc_stream *s, void *ud)
{
	agent *a = ud;

	pthread_mutex_lock(&a->mu);
	a->stream = s; /* the first attempt may connect before tau_rpc_stream_open returns */
	a->seq = 0;    /* a new stream starts again at 1 */
	send_inventory_locked(a);
	pthread_mutex_unlock(&a->mu);
}

static int load_agents(agent **out, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[8192], name[254];
	size_t n = 0, cap = 1024;
	agent *v = calloc(cap, sizeof(*v));

	if (f == NULL || v == NULL) {
		fprintf(stderr, "restart_swarm: cannot read %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *tok = malloc(sizeof(line));

		if (tok == NULL || sscanf(line, "%253s %8191s", name, tok) != 2) {
			free(tok);
			continue;
		}
		if (n == cap) {
			cap *= 2;
			v = realloc(v, cap * sizeof(*v));
			if (v == NULL)
				exit(1);
			memset(v + n, 0, (cap - n) * sizeof(*v));
		}
		snprintf(v[n].name, sizeof(v[n].name), "%s", name);
		v[n].token = tok;
		pthread_mutex_init(&v[n].mu, NULL);
		v[n].heartbeat_s = 30;
		n++;
	}
	fclose(f);
	*out = v;
	return (int)n;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);

	if (f == NULL || buf == NULL) {
		fprintf(stderr, "restart_swarm: cannot read %s\n", path);
		exit(1);
	}
	(void)fread(buf, 1, (1 << 16) - 1, f);
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	const char *target = NULL, *file = NULL, *ca_path = NULL;
	int channels = 64, every_ms = 250, n;
	char *ca = NULL;
	agent *agents = NULL;
	tau_rpc_channel **chans;
	struct rlimit rl;
	int64_t t0 = (int64_t)tau_clock_mono_ms();

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(argv[i], "--target") == 0 && v != NULL)
			target = argv[++i];
		else if (strcmp(argv[i], "--agents-file") == 0 && v != NULL)
			file = argv[++i];
		else if (strcmp(argv[i], "--ca") == 0 && v != NULL)
			ca_path = argv[++i];
		else if (strcmp(argv[i], "--channels") == 0 && v != NULL)
			channels = atoi(argv[++i]);
		else if (strcmp(argv[i], "--every-ms") == 0 && v != NULL)
			every_ms = atoi(argv[++i]);
		else {
			fprintf(stderr,
			        "usage: restart_swarm --target HOST:PORT --agents-file FILE "
			        "[--channels C] [--ca FILE] [--every-ms MS]\n");
			return 2;
		}
	}
	if (target == NULL || file == NULL || channels < 1 || every_ms < 10) {
		fprintf(stderr, "restart_swarm: --target and --agents-file are required\n");
		return 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	tau_log_set_level(TAU_LOG_ERROR);
	if (ca_path != NULL)
		ca = read_file(ca_path);
	n = load_agents(&agents, file);
	if (n == 0) {
		fprintf(stderr, "restart_swarm: no agents in %s\n", file);
		return 2;
	}
	chans = calloc((size_t)channels, sizeof(*chans));
	if (chans == NULL)
		return 1;
	for (int c = 0; c < channels; c++) {
		/* As agent/stream.c: the connection retried from 200 ms up to 5 s. */
		tau_rpc_channel_opts co = {.target = target,
		                           .ca_pem = ca,
		                           .reconnect_max_ms = 5000,
		                           .own_connection = true};

		if (tau_rpc_channel_new(&chans[c], &co) < 0)
			die("channel");
	}
	for (int i = 0; i < n; i++) {
		agent *a = &agents[i];
		tau_rpc_stream_opts so = {.path = REPORT,
		                          .response = &tau__inventory__v1__report_ack__descriptor,
		                          .bearer_token = a->token,
		                          .reconnect = true,
		                          .wait_for_ready = true,
		                          .on_message = on_ack,
		                          .on_connected = on_connected,
		                          .on_closed = on_closed,
		                          .ud = a};
		tau_rpc_stream *s = NULL;

		if (tau_rpc_stream_open(&s, chans[i % channels], &so) < 0)
			die("stream");
		/* on_connected may have run already (it sets a->stream too). */
		pthread_mutex_lock(&a->mu);
		if (a->stream == NULL)
			a->stream = s;
		pthread_mutex_unlock(&a->mu);
	}
	printf("started %d agents over %d connections\n", n, channels);
	fflush(stdout);
	for (;;) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		int64_t now;

		if (poll(&p, 1, every_ms) > 0) {
			char buf[256];

			if (read(0, buf, sizeof(buf)) <= 0)
				break;
		}
		now = (int64_t)tau_clock_mono_ms();
		for (int i = 0; i < n; i++) {
			agent *a = &agents[i];

			pthread_mutex_lock(&a->mu);
			if (a->live && now - a->last_send_ms >= (int64_t)a->heartbeat_s * 1000)
				send_heartbeat_locked(a);
			pthread_mutex_unlock(&a->mu);
		}
		printf("live %d acked %llu closed %llu t %.3f\n", (int)atomic_load(&live_count),
		       (unsigned long long)atomic_load(&acks),
		       (unsigned long long)atomic_load(&closes), (double)(now - t0) / 1000);
		fflush(stdout);
	}
	/* The driver has its figures: no orderly goodbye of 10,000 streams. */
	_exit(0);
}
