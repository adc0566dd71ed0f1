/*
 * rpc_test_client - the C side of the interoperability tests: streams AgentReports to a
 * server (the Python one in tests/e2e/test_rpc_interop.py) through lib/rpc's client.
 *
 * Usage: rpc_test_client --target HOST:PORT [--ca F [--cert F --key F] [--server-name N]]
 *        [--token T] [--count N | --hold | --flood N]
 * It calls Health/Check and GetPool, then opens Report (with reconnect) and sends a full
 * inventory as seq 1 on every (re)connect. --count N (default 1000): sends heartbeats up to
 * seq N, waits for N acks, sends Stopping, half-closes, and exits 0 when the server closes with
 * OK. --hold: keeps the stream until SIGTERM. Progress lines on stdout: "health N",
 * "pool flavors=N", "connected K", "acked SEQ" (hold mode), "acks N", "closed CODE".
 * --flood N: nothing else; opens N Report streams, stream i with its own token "T<i>" (so each
 * costs its own token review; a JWT stays a JWT, the digits land in its signature), 500 per
 * connection, sends nothing, prints "flood settled" once every stream has its headers or has
 * ended, and at SIGTERM "flood open=N" and "flood closed CODE=N" per status code, then exits 0.
 */
#include "tau/error.h"
#include "tau/file.h"

#include "grpc/health/v1/health.pb-c.h"
#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc_client.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Test certificates are a few KiB; anything near this is a wrong path. */
#define PEM_MAX_BYTES (1u << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connects;
static uint64_t acks;
static int closed;
static tau_rpc_status last_status;
static bool hold;

static int send_inventory(tau_rpc_stream *s)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	Tau__Inventory__V1__ResourceQuantity gpu = TAU__INVENTORY__V1__RESOURCE_QUANTITY__INIT;
	Tau__Inventory__V1__ResourceQuantity *res[1] = {&gpu};
	Tau__Inventory__V1__LocalDevices dev = TAU__INVENTORY__V1__LOCAL_DEVICES__INIT;

	gpu.name = (char *)"nvidia.com/gpu";
	gpu.quantity = (char *)"8";
	inv.node_name = (char *)"gpu-node-1";
	inv.node_uid = (char *)"uid-1";
	inv.gpu_class = (char *)"h100";
	inv.n_allocatable = 1;
	inv.allocatable = res;
	inv.ready = true;
	inv.schedulable = true;
	inv.os = (char *)"linux";
	inv.kind = TAU__INVENTORY__V1__NODE_KIND__NODE_KIND_AGENT_POOL;
	dev.gpus_present = 8;
	dev.gpus_healthy = 8;
	dev.gpus_probed = true;
	inv.devices = &dev;
	inv.agent_version = (char *)"0.1.0";
	inv.digest = (char *)"d-1";
	rep.seq = 1;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep.inventory = &inv;
	return tau_rpc_stream_send(s, &rep.base);
}

static void on_connected(tau_rpc_stream *s, void *ud)
{
	(void)ud;
	/* A new stream starts with a full inventory at seq 1 (docs/protocol.md). */
	if (send_inventory(s) < 0)
		fprintf(stderr, "rpc_test_client: %s\n", tau_error_last()->msg);
	pthread_mutex_lock(&mu);
	connects++;
	acks = 0;
	printf("connected %d\n", connects);
	fflush(stdout);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void on_message(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__ReportAck *ack = (Tau__Inventory__V1__ReportAck *)msg;

	(void)s;
	(void)ud;
	pthread_mutex_lock(&mu);
	if (ack->status == TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK)
		acks++;
	if (hold) {
		printf("acked %llu\n", (unsigned long long)ack->seq);
		fflush(stdout);
	}
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	tau_rpc_message_free(msg);
}

static void on_closed(tau_rpc_stream *s, const tau_rpc_status *st, int retry_in, void *ud)
{
	(void)s;
	(void)ud;
	pthread_mutex_lock(&mu);
	closed++;
	last_status = *st;
	if (hold) {
		printf("closed %s retry %d\n", tau_rpc_code_name((int)st->code), retry_in);
		fflush(stdout);
	}
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static bool wait_for(bool (*cond)(void *), void *arg, int ms)
{
	struct timespec dl;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000;
	pthread_mutex_lock(&mu);
	while (!(ok = cond(arg)))
		if (pthread_cond_timedwait(&cv, &mu, &dl) == ETIMEDOUT)
			break;
	ok = cond(arg);
	pthread_mutex_unlock(&mu);
	return ok;
}

static bool is_connected(void *arg)
{
	(void)arg;
	return connects > 0;
}

static bool all_acked(void *arg)
{
	return acks >= *(uint64_t *)arg;
}

static bool is_closed(void *arg)
{
	(void)arg;
	return closed > 0;
}

#define FLOOD_PER_CONNECTION 500

static int flood_connected, flood_closed, flood_codes[TAU_RPC_UNAUTHENTICATED + 1];

static void flood_on_connected(tau_rpc_stream *s, void *ud)
{
	(void)s;
	(void)ud;
	pthread_mutex_lock(&mu);
	flood_connected++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void flood_on_closed(tau_rpc_stream *s, const tau_rpc_status *st, int retry_in, void *ud)
{
	(void)s;
	(void)retry_in;
	(void)ud;
	pthread_mutex_lock(&mu);
	if (retry_in >= 0 || st->code > TAU_RPC_UNAUTHENTICATED) {
		pthread_mutex_unlock(&mu);
		return;
	}
	flood_closed++;
	flood_codes[st->code]++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static bool flood_settled(void *arg)
{
	int n = *(int *)arg, closed_early = 0;

	for (int c = 0; c <= TAU_RPC_UNAUTHENTICATED; c++)
		closed_early += flood_codes[c];
	return flood_connected + closed_early >= n;
}

/* --flood: N streams with distinct tokens, held until SIGTERM. */
static int flood(const tau_rpc_channel_opts *base, const char *token, int n, sigset_t *sigs)
{
	int n_ch = (n + FLOOD_PER_CONNECTION - 1) / FLOOD_PER_CONNECTION, sig = 0, rc = 1;
	tau_rpc_channel **chs = calloc((size_t)n_ch, sizeof(*chs));
	tau_rpc_stream **ss = calloc((size_t)n, sizeof(*ss));
	char *tok = malloc(strlen(token) + 16);

	if (chs == NULL || ss == NULL || tok == NULL) {
		tau_error_set(TAU_ENOMEM, "flood");
		goto out;
	}
	for (int c = 0; c < n_ch; c++) {
		tau_rpc_channel_opts o = *base;

		o.own_connection = true;
		if (tau_rpc_channel_new(&chs[c], &o) < 0)
			goto out;
	}
	for (int i = 0; i < n; i++) {
		tau_rpc_stream_opts so = {0};

		sprintf(tok, "%s%d", token, i);
		so.path = "/tau.inventory.v1.InventoryService/Report";
		so.response = &tau__inventory__v1__report_ack__descriptor;
		so.bearer_token = tok;
		so.on_connected = flood_on_connected;
		so.on_closed = flood_on_closed;
		if (tau_rpc_stream_open(&ss[i], chs[i / FLOOD_PER_CONNECTION], &so) < 0)
			goto out;
	}
	if (!wait_for(flood_settled, &n, 120000)) {
		tau_error_set(TAU_ETIMEOUT, "flood: only %d streams connected", flood_connected);
		goto out;
	}
	printf("flood settled\n");
	fflush(stdout);
	sigwait(sigs, &sig);
	pthread_mutex_lock(&mu);
	printf("flood open=%d\n", n - flood_closed);
	for (int c = 0; c <= TAU_RPC_UNAUTHENTICATED; c++)
		if (flood_codes[c] > 0)
			printf("flood closed %s=%d\n", tau_rpc_code_name(c), flood_codes[c]);
	pthread_mutex_unlock(&mu);
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "rpc_test_client: %s\n", tau_error_last()->msg);
	fflush(stdout);
	for (int i = 0; ss != NULL && i < n; i++)
		tau_rpc_stream_free(ss[i]);
	for (int c = 0; chs != NULL && c < n_ch; c++)
		tau_rpc_channel_free(chs[c]);
	free(ss);
	free(chs);
	free(tok);
	return rc;
}

int main(int argc, char **argv)
{
	tau_rpc_channel_opts copts = {0};
	const char *ca = NULL, *cert = NULL, *key = NULL, *token = NULL;
	char *ca_pem = NULL, *cert_pem = NULL, *key_pem = NULL;
	uint64_t count = 1000;
	tau_rpc_channel *ch = NULL;
	tau_rpc_stream *s = NULL;
	tau_rpc_stream_opts so = {0};
	Grpc__Health__V1__HealthCheckRequest hreq = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	Tau__Inventory__V1__GetPoolRequest preq = TAU__INVENTORY__V1__GET_POOL_REQUEST__INIT;
	ProtobufCMessage *out = NULL;
	tau_rpc_status st;
	sigset_t sigs;
	int rc = 1, flood_n = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : "";

		if (strcmp(a, "--hold") == 0) {
			hold = true;
			continue;
		}
		if (strcmp(a, "--target") == 0)
			copts.target = v;
		else if (strcmp(a, "--ca") == 0)
			ca = v;
		else if (strcmp(a, "--cert") == 0)
			cert = v;
		else if (strcmp(a, "--key") == 0)
			key = v;
		else if (strcmp(a, "--server-name") == 0)
			copts.server_name_override = v;
		else if (strcmp(a, "--token") == 0)
			token = v;
		else if (strcmp(a, "--count") == 0)
			count = strtoull(v, NULL, 10);
		else if (strcmp(a, "--flood") == 0)
			flood_n = atoi(v);
		else {
			fprintf(stderr, "rpc_test_client: unknown option %s\n", a);
			return 2;
		}
		i++;
	}
	if (copts.target == NULL || count < 1) {
		fprintf(stderr, "rpc_test_client: --target is required\n");
		return 2;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	if ((ca != NULL && tau_file_read(&ca_pem, NULL, ca, PEM_MAX_BYTES, "--ca") < 0) ||
	    (cert != NULL && tau_file_read(&cert_pem, NULL, cert, PEM_MAX_BYTES, "--cert") < 0) ||
	    (key != NULL && tau_file_read(&key_pem, NULL, key, PEM_MAX_BYTES, "--key") < 0)) {
		fprintf(stderr, "rpc_test_client: %s\n", tau_error_last()->msg);
		free(ca_pem);
		free(cert_pem);
		return 2;
	}
	copts.ca_pem = ca_pem;
	copts.cert_pem = cert_pem;
	copts.key_pem = key_pem;
	if (flood_n > 0) {
		rc = flood(&copts, token != NULL ? token : "", flood_n, &sigs);
		free(ca_pem);
		free(cert_pem);
		free(key_pem);
		return rc;
	}
	if (tau_rpc_channel_new(&ch, &copts) < 0 ||
	    (token != NULL && tau_rpc_channel_set_bearer_token(ch, token) < 0))
		goto out;

	hreq.service = (char *)"";
	if (tau_rpc_unary(&out, ch, "/grpc.health.v1.Health/Check", &hreq.base,
	                  &grpc__health__v1__health_check_response__descriptor, 10000, &st) < 0)
		goto out;
	printf("health %d\n", ((Grpc__Health__V1__HealthCheckResponse *)out)->status);
	tau_rpc_message_free(out);
	if (tau_rpc_unary(&out, ch, "/tau.inventory.v1.QueryService/GetPool", &preq.base,
	                  &tau__inventory__v1__pool__descriptor, 10000, &st) < 0)
		goto out;
	printf("pool flavors=%zu\n", ((Tau__Inventory__V1__Pool *)out)->n_flavors);
	fflush(stdout);
	tau_rpc_message_free(out);

	so.path = "/tau.inventory.v1.InventoryService/Report";
	so.response = &tau__inventory__v1__report_ack__descriptor;
	so.reconnect = hold; /* --count ends with one clean stream */
	so.backoff_initial_ms = 100;
	so.backoff_max_ms = 1000;
	so.max_send_queue = (size_t)count + 16;
	so.on_connected = on_connected;
	so.on_message = on_message;
	so.on_closed = on_closed;
	if (tau_rpc_stream_open(&s, ch, &so) < 0)
		goto out;
	if (hold) {
		int sig = 0;

		sigwait(&sigs, &sig);
		rc = 0;
		goto out;
	}
	if (!wait_for(is_connected, NULL, 10000)) {
		tau_error_set(TAU_ETIMEOUT, "not connected");
		goto out;
	}
	for (uint64_t seq = 2; seq <= count; seq++) {
		Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
		Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;

		hb.sent_unix_ms = (int64_t)time(NULL) * 1000;
		hb.digest = (char *)"d-1";
		rep.seq = seq;
		rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT;
		rep.heartbeat = &hb;
		if (tau_rpc_stream_send(s, &rep.base) < 0)
			goto out;
	}
	if (!wait_for(all_acked, &count, 60000)) {
		tau_error_set(TAU_ETIMEOUT, "only %llu of %llu acks", (unsigned long long)acks,
		              (unsigned long long)count);
		goto out;
	}
	printf("acks %llu\n", (unsigned long long)acks);
	{
		Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
		Tau__Inventory__V1__Stopping stop = TAU__INVENTORY__V1__STOPPING__INIT;

		stop.reason = (char *)"test done";
		rep.seq = count + 1;
		rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_STOPPING;
		rep.stopping = &stop;
		if (tau_rpc_stream_send(s, &rep.base) < 0 || tau_rpc_stream_close_send(s) < 0)
			goto out;
	}
	if (!wait_for(is_closed, NULL, 10000)) {
		tau_error_set(TAU_ETIMEOUT, "stream did not close");
		goto out;
	}
	printf("closed %s\n", tau_rpc_code_name((int)last_status.code));
	rc = last_status.code == TAU_RPC_OK ? 0 : 1;
out:
	if (rc != 0)
		fprintf(stderr, "rpc_test_client: %s\n", tau_error_last()->msg);
	fflush(stdout);
	tau_rpc_stream_free(s);
	tau_rpc_channel_free(ch);
	free((char *)copts.ca_pem);
	free((char *)copts.cert_pem);
	free((char *)copts.key_pem);
	return rc;
}
