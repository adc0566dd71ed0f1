/*
 * Unit tests of lib/rpc: a real server and client on loopback in one process.
 *
 * The test service uses the real wire contract: QueryService/GetNode (unary), WatchPool
 * (server streaming) and InventoryService/Report (bidi). Handlers record what they saw under
 * one mutex and signal one condition variable; tests wait for conditions, never sleep.
 */
#include "tau/error.h"

#include "grpc/health/v1/health.pb-c.h"
#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"
#include "tau/rpc_client.h"
#include "tau/rpc_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define GET_NODE   "/tau.inventory.v1.QueryService/GetNode"
#define WATCH_POOL "/tau.inventory.v1.QueryService/WatchPool"
#define REPORT     "/tau.inventory.v1.InventoryService/Report"
#define TOKEN      "s3cret-token"
#define POOL_MSGS  5

/* Error-checking, so teardown can release it when a failed assertion (cmocka longjmps) left it
 * held by the test's thread: otherwise the server thread blocks on it and the test hangs. */
static pthread_mutex_t mu = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* What the server saw; guarded by mu. */
static struct {
	int ends[3]; /* by tau_rpc_end */
	int reports;
	int half_closes;
	int started;
	char token[64];
	char dropped_token[64]; /* report_start with drop_md: the token before the drop */
	int md_gone;            /* report_start/report_message with drop_md: no header after it */
} srv_seen;

/* What client streams saw; guarded by mu. */
struct stream_seen {
	int connected;
	int messages;
	uint64_t last_seq;
	int closed;
	tau_rpc_status status;
	int retry_in;
	int out_of_order; /* acks whose seq is not the previous ack's + 1 */
	uint64_t got[8];  /* the first acks' seqs */
};

/* The bound on every wait and on every call expected to succeed: generous, since a passing
 * test returns as soon as its condition holds, and a loaded machine (the sanitizer tree beside
 * other suites) can take seconds for what takes milliseconds when idle. */
#define WAIT_MS 30000

#define WAIT_UNTIL(expr, ms)                                                                       \
	do {                                                                                       \
		struct timespec dl_ = deadline_in(ms);                                             \
		bool ok_;                                                                          \
		pthread_mutex_lock(&mu);                                                           \
		while (!(expr)) {                                                                  \
			/* Short slices: some conditions (server counters) signal no one. */       \
			struct timespec slice_ = deadline_in(20);                                  \
			if (timespec_after(&slice_, &dl_))                                         \
				break;                                                             \
			pthread_cond_timedwait(&cv, &mu, &slice_);                                 \
		}                                                                                  \
		ok_ = (expr);                                                                      \
		pthread_mutex_unlock(&mu);                                                         \
		if (!ok_)                                                                          \
			fail_msg("timed out waiting for %s", #expr);                               \
	} while (0)

static struct timespec deadline_in(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static bool timespec_after(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

static void bump(int *counter)
{
	pthread_mutex_lock(&mu);
	(*counter)++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void reset_seen(void)
{
	pthread_mutex_lock(&mu);
	memset(&srv_seen, 0, sizeof(srv_seen));
	pthread_mutex_unlock(&mu);
}

/* cmocka's asserts longjmp: never use them on the server's thread. */
static void handler_failed(const char *what, const char *why)
{
	fprintf(stderr, "handler: %s failed: %s\n", what, why);
	abort();
}

/* ---- test service ------------------------------------------------------------------------- */

/* The server's port, for reply_later to see when the server stops accepting; guarded by mu. */
static int delayed_port;

/* True once nothing listens on 127.0.0.1:port any more (the server began its shutdown). */
static bool port_refuses(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool refused;

	if (fd < 0)
		handler_failed("socket", strerror(errno));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	refused = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == ECONNREFUSED;
	close(fd);
	return refused;
}

static void *reply_later(void *arg)
{
	tau_rpc_call *call = arg;
	Tau__Inventory__V1__GetNodeResponse resp = TAU__INVENTORY__V1__GET_NODE_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus st = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	struct timespec slice = {0, 5 * 1000000L};
	int port, waited_ms = 0;

	/* The point is a reply from another thread while shutdown waits for it: reply once the
	 * server has closed its listener, i.e. tau_rpc_server_shutdown is under way. */
	pthread_mutex_lock(&mu);
	port = delayed_port;
	pthread_mutex_unlock(&mu);
	while (!port_refuses(port)) {
		if (waited_ms >= WAIT_MS)
			handler_failed("reply_later",
			               "the server did not start shutting down in time");
		nanosleep(&slice, NULL);
		waited_ms += 5;
	}
	st.name = (char *)"delayed";
	resp.status = &st;
	tau_rpc_call_reply(call, &resp.base);
	tau_rpc_call_unref(call);
	return NULL;
}

static void get_node_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__GetNodeRequest *req = (Tau__Inventory__V1__GetNodeRequest *)msg;
	Tau__Inventory__V1__GetNodeResponse resp = TAU__INVENTORY__V1__GET_NODE_RESPONSE__INIT;
	Tau__Inventory__V1__NodeStatus st = TAU__INVENTORY__V1__NODE_STATUS__INIT;
	const char *token = tau_rpc_call_bearer_token(call);

	(void)ud;
	pthread_mutex_lock(&mu);
	snprintf(srv_seen.token, sizeof(srv_seen.token), "%s", token ? token : "");
	srv_seen.started++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (strcmp(req->name, "slow") == 0) {
		/* Never answered: the deadline or a shutdown ends it. */
	} else if (strcmp(req->name, "delayed") == 0) {
		pthread_t t;

		tau_rpc_call_ref(call);
		pthread_create(&t, NULL, reply_later, call);
		pthread_detach(t);
	} else if (strcmp(req->name, "missing") == 0) {
		tau_rpc_call_finish(call, TAU_RPC_NOT_FOUND, "no node missing");
	} else {
		st.name = req->name;
		st.counted = true;
		st.last_heard_unix_ms = tau_rpc_call_ms_left(call);
		resp.status = &st;
		tau_rpc_call_reply(call, &resp.base);
	}
	tau_rpc_message_free(msg);
}

static int get_node_start(tau_rpc_call *call, void *ud)
{
	const char *token = tau_rpc_call_bearer_token(call);

	(void)ud;
	if (token != NULL && strcmp(token, "wrong") == 0) {
		tau_rpc_call_finish(call, TAU_RPC_UNAUTHENTICATED, "bad token");
		return 1;
	}
	return 0;
}

static void on_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	(void)call;
	(void)ud;
	bump(&srv_seen.ends[end]);
}

static void watch_pool_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	Tau__Inventory__V1__Pool pool = TAU__INVENTORY__V1__POOL__INIT;

	(void)ud;
	tau_rpc_message_free(msg);
	pool.established = true;
	for (int i = 1; i <= POOL_MSGS; i++) {
		pool.generation = (uint64_t)i;
		if (tau_rpc_call_send(call, &pool.base) != 0)
			handler_failed("pool send", tau_error_last()->msg);
	}
	tau_rpc_call_finish(call, TAU_RPC_OK, NULL);
}

/* test_drop_metadata: report_start takes the token, then drops the call's headers. */
static atomic_bool drop_md;

static bool md_gone(tau_rpc_call *call)
{
	return tau_rpc_call_bearer_token(call) == NULL &&
	       tau_rpc_call_metadata(call, "authorization") == NULL &&
	       tau_rpc_call_metadata(call, "user-agent") == NULL;
}

/*
 * test_send_latest's scripts, by report seq (one handler run, so on the single CQ thread the
 * first ack is in flight and the later ones queue behind it):
 *   ACK_BURST: acks 1..ACK_BURST by tau_rpc_call_send_latest (more than the queue holds);
 *   ACK_MIXED: latest 1, latest 2, plain 3, latest 4, latest 5.
 */
#define ACK_BURST 2000
#define ACK_MIXED 7
static bool ack_scripts;

static void send_ack(tau_rpc_call *call, uint64_t seq, bool latest)
{
	Tau__Inventory__V1__ReportAck ack = TAU__INVENTORY__V1__REPORT_ACK__INIT;

	ack.seq = seq;
	ack.heartbeat_interval_seconds = 10;
	ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK;
	if ((latest ? tau_rpc_call_send_latest(call, &ack.base)
	            : tau_rpc_call_send(call, &ack.base)) != 0)
		handler_failed("ack send", tau_error_last()->msg);
}

static void report_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	uint64_t seq = ((Tau__Inventory__V1__AgentReport *)msg)->seq;

	(void)ud;
	tau_rpc_message_free(msg);
	if (atomic_load(&drop_md) && md_gone(call))
		bump(&srv_seen.md_gone);
	/* Counted before it is acked: a client that has its ack may look at the count. */
	bump(&srv_seen.reports);
	if (ack_scripts && seq == ACK_BURST) {
		for (uint64_t i = 1; i <= ACK_BURST; i++)
			send_ack(call, i, true);
	} else if (ack_scripts && seq == ACK_MIXED) {
		for (uint64_t i = 1; i <= 5; i++)
			send_ack(call, i, i != 3);
	} else {
		send_ack(call, seq, false);
	}
}

static int report_start(tau_rpc_call *call, void *ud)
{
	(void)ud;
	if (atomic_load(&drop_md)) {
		const char *token = tau_rpc_call_bearer_token(call);
		const char *ua = tau_rpc_call_metadata(call, "user-agent");

		pthread_mutex_lock(&mu);
		snprintf(srv_seen.dropped_token, sizeof(srv_seen.dropped_token), "%s",
		         token != NULL && ua != NULL ? token : "");
		pthread_mutex_unlock(&mu);
		tau_rpc_call_drop_metadata(call);
		tau_rpc_call_drop_metadata(call); /* idempotent */
		if (md_gone(call))
			bump(&srv_seen.md_gone);
	}
	bump(&srv_seen.started);
	return 0;
}

static void report_half_close(tau_rpc_call *call, void *ud)
{
	(void)ud;
	bump(&srv_seen.half_closes);
	tau_rpc_call_finish(call, TAU_RPC_OK, NULL);
}

struct fixture {
	tau_rpc_server *srv;
	tau_rpc_health *health;
	tau_rpc_channel *ch;
	int port;
	char target[64];
};

static int fixture_cq_threads; /* 0: the default (one) */

static int start_server(struct fixture *f, int port)
{
	const tau_rpc_method methods[] = {
	        {.path = GET_NODE,
	         .kind = TAU_RPC_UNARY,
	         .request = &tau__inventory__v1__get_node_request__descriptor,
	         .response = &tau__inventory__v1__get_node_response__descriptor,
	         .on_start = get_node_start,
	         .on_message = get_node_message,
	         .on_done = on_done},
	        {.path = WATCH_POOL,
	         .kind = TAU_RPC_SERVER_STREAM,
	         .request = &tau__inventory__v1__watch_pool_request__descriptor,
	         .response = &tau__inventory__v1__pool__descriptor,
	         .on_message = watch_pool_message,
	         .on_done = on_done},
	        {.path = REPORT,
	         .kind = TAU_RPC_BIDI,
	         .request = &tau__inventory__v1__agent_report__descriptor,
	         .response = &tau__inventory__v1__report_ack__descriptor,
	         .on_start = report_start,
	         .on_message = report_message,
	         .on_half_close = report_half_close,
	         .on_done = on_done},
	};
	char addr[64];
	tau_rpc_server_opts so = {.cq_threads = fixture_cq_threads};

	if (tau_rpc_server_new(&f->srv, &so) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (tau_rpc_server_add_method(f->srv, &methods[i]) < 0)
			return -1;
	if (f->health == NULL && tau_rpc_health_new(&f->health) < 0)
		return -1;
	if (tau_rpc_health_register(f->health, f->srv) < 0)
		return -1;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	if (tau_rpc_server_listen(f->srv, addr, NULL, &f->port) < 0)
		return -1;
	snprintf(f->target, sizeof(f->target), "127.0.0.1:%d", f->port);
	return tau_rpc_server_start(f->srv);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	tau_rpc_channel_opts copts = {0};

	reset_seen();
	if (f == NULL || start_server(f, 0) < 0)
		return -1;
	copts.target = f->target;
	if (tau_rpc_channel_new(&f->ch, &copts) < 0)
		return -1;
	*state = f;
	return 0;
}

/* The same server pumped by four completion-queue threads. */
static int setup_threads(void **state)
{
	fixture_cq_threads = 4;
	return setup(state);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	(void)pthread_mutex_unlock(&mu); /* EPERM unless a failed assertion left it held here */
	tau_rpc_channel_free(f->ch);
	tau_rpc_server_free(f->srv);
	tau_rpc_health_free(f->health);
	free(f);
	fixture_cq_threads = 0;
	return 0;
}

/* ---- stream callbacks --------------------------------------------------------------------- */

static void s_connected(tau_rpc_stream *s, void *ud)
{
	struct stream_seen *seen = ud;

	(void)s;
	bump(&seen->connected);
}

static void s_message(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud)
{
	struct stream_seen *seen = ud;

	(void)s;
	pthread_mutex_lock(&mu);
	if (msg->descriptor == &tau__inventory__v1__report_ack__descriptor) {
		uint64_t seq = ((Tau__Inventory__V1__ReportAck *)msg)->seq;

		if (seq != seen->last_seq + 1)
			seen->out_of_order++;
		if (seen->messages < 8)
			seen->got[seen->messages] = seq;
		seen->last_seq = seq;
	} else if (msg->descriptor == &tau__inventory__v1__pool__descriptor)
		seen->last_seq = ((Tau__Inventory__V1__Pool *)msg)->generation;
	else if (msg->descriptor == &grpc__health__v1__health_check_response__descriptor)
		seen->last_seq = ((Grpc__Health__V1__HealthCheckResponse *)msg)->status;
	seen->messages++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	tau_rpc_message_free(msg);
}

static void s_closed(tau_rpc_stream *s, const tau_rpc_status *st, int retry_in, void *ud)
{
	struct stream_seen *seen = ud;

	(void)s;
	pthread_mutex_lock(&mu);
	seen->status = *st;
	seen->retry_in = retry_in;
	seen->closed++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static tau_rpc_stream_opts report_opts(struct stream_seen *seen)
{
	tau_rpc_stream_opts o = {0};

	o.path = REPORT;
	o.response = &tau__inventory__v1__report_ack__descriptor;
	o.on_connected = s_connected;
	o.on_message = s_message;
	o.on_closed = s_closed;
	o.ud = seen;
	return o;
}

static int send_report(tau_rpc_stream *s, uint64_t seq)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;

	rep.seq = seq;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT;
	rep.heartbeat = &hb;
	hb.sent_unix_ms = 1;
	hb.digest = (char *)"d1";
	return tau_rpc_stream_send(s, &rep.base);
}

/* ---- message tests ------------------------------------------------------------------------ */

static void test_utf8(void **state)
{
	(void)state;
	assert_true(tau_rpc_utf8_valid("plain", 5));
	assert_true(tau_rpc_utf8_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9));
	assert_false(tau_rpc_utf8_valid("\xc3\x28", 2));         /* bad continuation */
	assert_false(tau_rpc_utf8_valid("\xc0\xaf", 2));         /* overlong */
	assert_false(tau_rpc_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
	assert_false(tau_rpc_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
	assert_false(tau_rpc_utf8_valid("\xe2\x82", 2));         /* truncated */
	assert_false(tau_rpc_utf8_valid("\xff", 1));
}

static void test_check_utf8_nested(void **state)
{
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	Tau__Inventory__V1__NodeInventory__LabelsEntry label =
	        TAU__INVENTORY__V1__NODE_INVENTORY__LABELS_ENTRY__INIT;
	Tau__Inventory__V1__NodeInventory__LabelsEntry *labels[1] = {&label};
	char *problems[2] = {(char *)"fine", (char *)"bad \xff"};

	(void)state;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep.inventory = &inv;
	inv.node_name = (char *)"n1";
	label.key = (char *)"k";
	label.value = (char *)"v\xc3\x28";
	inv.n_labels = 1;
	inv.labels = labels;
	assert_int_equal(tau_rpc_message_check_utf8(&rep.base), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "value"));
	label.value = (char *)"v";
	assert_int_equal(tau_rpc_message_check_utf8(&rep.base), 0);
	inv.n_problems = 2;
	inv.problems = problems;
	assert_int_equal(tau_rpc_message_check_utf8(&rep.base), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "problems"));
	/* A oneof member that is not selected is not looked at. */
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY__NOT_SET;
	assert_int_equal(tau_rpc_message_check_utf8(&rep.base), 0);
}

static void test_decode(void **state)
{
	Tau__Inventory__V1__GetNodeRequest req = TAU__INVENTORY__V1__GET_NODE_REQUEST__INIT;
	uint8_t buf[64];
	size_t n;
	ProtobufCMessage *msg = NULL;
	const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	const uint8_t bad_utf8[] = {0x0a, 0x02, 0xc3, 0x28};
	/* Field number 0 with its tag in two bytes (fuzz_messages found protobuf-c keeps it). */
	const uint8_t field_zero[] = {0x80, 0x00, 0x08};

	(void)state;
	req.name = (char *)"n1";
	n = protobuf_c_message_pack(&req.base, buf);
	assert_int_equal(tau_rpc_message_decode(&msg,
	                                        &tau__inventory__v1__get_node_request__descriptor,
	                                        buf, n, 1024),
	                 0);
	assert_string_equal(((Tau__Inventory__V1__GetNodeRequest *)msg)->name, "n1");
	tau_rpc_message_free(msg);
	assert_int_equal(tau_rpc_message_decode(&msg,
	                                        &tau__inventory__v1__get_node_request__descriptor,
	                                        buf, n, 2),
	                 -TAU_ETOOBIG);
	assert_int_equal(tau_rpc_message_decode(&msg,
	                                        &tau__inventory__v1__get_node_request__descriptor,
	                                        junk, sizeof(junk), 1024),
	                 -TAU_EINVAL);
	assert_int_equal(tau_rpc_message_decode(&msg,
	                                        &tau__inventory__v1__get_node_request__descriptor,
	                                        bad_utf8, sizeof(bad_utf8), 1024),
	                 -TAU_EINVAL);
	assert_int_equal(tau_rpc_message_decode(&msg,
	                                        &tau__inventory__v1__list_nodes_request__descriptor,
	                                        field_zero, sizeof(field_zero), 1024),
	                 -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "field number 0"));
	assert_string_equal(tau_rpc_code_name(TAU_RPC_UNAVAILABLE), "UNAVAILABLE");
	assert_string_equal(tau_rpc_code_name(99), "UNKNOWN_CODE");
}

/*
 * A decoded message is one arena: an inventory of many small labels needs more room than its
 * first block (sized from the wire length), so further blocks are taken; everything reads back,
 * the wire bytes are kept, and every way out (success, malformed, bad UTF-8 deep inside after
 * hundreds of allocations) frees all of it (the ASan tree's leak check fails otherwise).
 */
static void test_decode_arena(void **state)
{
	enum { N = 600 };
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__NodeInventory inv = TAU__INVENTORY__V1__NODE_INVENTORY__INIT;
	Tau__Inventory__V1__NodeInventory__LabelsEntry l[N], *lp[N];
	char keys[N][16];
	const Tau__Inventory__V1__NodeInventory *got;
	ProtobufCMessage *msg = NULL;
	const uint8_t *wire;
	uint8_t *buf;
	size_t n, wire_len;

	(void)state;
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		tau__inventory__v1__node_inventory__labels_entry__init(&l[i]);
		l[i].key = keys[i];
		l[i].value = (char *)"v";
		lp[i] = &l[i];
	}
	inv.node_name = (char *)"n1";
	inv.n_labels = N;
	inv.labels = lp;
	rep.seq = 7;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY;
	rep.inventory = &inv;
	n = protobuf_c_message_get_packed_size(&rep.base);
	buf = malloc(n + 16);
	assert_non_null(buf);
	protobuf_c_message_pack(&rep.base, buf);
	assert_int_equal(tau_rpc_message_decode(&msg, &tau__inventory__v1__agent_report__descriptor,
	                                        buf, n, TAU_RPC_DEFAULT_MAX_MESSAGE),
	                 0);
	got = ((Tau__Inventory__V1__AgentReport *)msg)->inventory;
	assert_int_equal(((Tau__Inventory__V1__AgentReport *)msg)->seq, 7);
	assert_string_equal(got->node_name, "n1");
	assert_int_equal(got->n_labels, N);
	for (int i = 0; i < N; i++) {
		assert_string_equal(got->labels[i]->key, keys[i]);
		assert_string_equal(got->labels[i]->value, "v");
	}
	wire = tau_rpc_message_wire(msg, &wire_len);
	assert_int_equal(wire_len, n);
	assert_memory_equal(wire, buf, n);
	tau_rpc_message_free(msg);
	/* Cut short after most labels: malformed, after hundreds of allocations. */
	msg = NULL;
	assert_int_equal(tau_rpc_message_decode(&msg, &tau__inventory__v1__agent_report__descriptor,
	                                        buf, n - 3, TAU_RPC_DEFAULT_MAX_MESSAGE),
	                 -TAU_EINVAL);
	assert_null(msg);
	/* The last label's value is not UTF-8: refused once everything is decoded. */
	l[N - 1].value = (char *)"\xc3\x28";
	n = protobuf_c_message_get_packed_size(&rep.base);
	protobuf_c_message_pack(&rep.base, buf);
	assert_int_equal(tau_rpc_message_decode(&msg, &tau__inventory__v1__agent_report__descriptor,
	                                        buf, n, TAU_RPC_DEFAULT_MAX_MESSAGE),
	                 -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "UTF-8"));
	assert_null(msg);
	/* An empty message decodes too (no bytes to keep). */
	assert_int_equal(tau_rpc_message_decode(&msg, &tau__inventory__v1__agent_report__descriptor,
	                                        buf, 0, TAU_RPC_DEFAULT_MAX_MESSAGE),
	                 0);
	assert_int_equal(((Tau__Inventory__V1__AgentReport *)msg)->seq, 0);
	(void)tau_rpc_message_wire(msg, &wire_len);
	assert_int_equal(wire_len, 0);
	tau_rpc_message_free(msg);
	tau_rpc_message_free(NULL);
	free(buf);
}

/* ---- call tests --------------------------------------------------------------------------- */

static int get_node(tau_rpc_channel *ch, const char *name, int timeout_ms, tau_rpc_status *st,
                    char *got, size_t got_len)
{
	Tau__Inventory__V1__GetNodeRequest req = TAU__INVENTORY__V1__GET_NODE_REQUEST__INIT;
	ProtobufCMessage *out = NULL;
	int rc;

	req.name = (char *)name;
	rc = tau_rpc_unary(&out, ch, GET_NODE, &req.base,
	                   &tau__inventory__v1__get_node_response__descriptor, timeout_ms, st);
	if (rc == 0) {
		Tau__Inventory__V1__GetNodeResponse *resp =
		        (Tau__Inventory__V1__GetNodeResponse *)out;

		if (got != NULL)
			snprintf(got, got_len, "%s", resp->status ? resp->status->name : "");
		tau_rpc_message_free(out);
	}
	return rc;
}

static void test_unary(void **state)
{
	struct fixture *f = *state;
	tau_rpc_status st;
	char got[64];

	assert_int_equal(tau_rpc_channel_set_bearer_token(f->ch, TOKEN), 0);
	assert_int_equal(get_node(f->ch, "node-1", WAIT_MS, &st, got, sizeof(got)), 0);
	assert_int_equal(st.code, TAU_RPC_OK);
	assert_string_equal(got, "node-1");
	pthread_mutex_lock(&mu);
	assert_string_equal(srv_seen.token, TOKEN);
	pthread_mutex_unlock(&mu);
	/* A handler's own status comes through with its message. */
	assert_int_equal(get_node(f->ch, "missing", WAIT_MS, &st, NULL, 0), -TAU_ENOTFOUND);
	assert_int_equal(st.code, TAU_RPC_NOT_FOUND);
	assert_string_equal(st.message, "no node missing");
	/* on_start can reject. */
	assert_int_equal(tau_rpc_channel_set_bearer_token(f->ch, "wrong"), 0);
	assert_int_equal(get_node(f->ch, "node-1", WAIT_MS, &st, NULL, 0), -TAU_EPERM);
	assert_int_equal(st.code, TAU_RPC_UNAUTHENTICATED);
	assert_int_equal(tau_rpc_channel_set_bearer_token(f->ch, "bad\nvalue"), -TAU_EINVAL);
	assert_int_equal(tau_rpc_channel_set_bearer_token(f->ch, NULL), 0);
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_FINISHED] == 3, WAIT_MS);
	/* Many sequential calls: slots are re-armed. */
	for (int i = 0; i < 50; i++)
		assert_int_equal(get_node(f->ch, "again", WAIT_MS, &st, NULL, 0), 0);
}

static void test_server_stream(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	Tau__Inventory__V1__WatchPoolRequest req = TAU__INVENTORY__V1__WATCH_POOL_REQUEST__INIT;
	tau_rpc_stream_opts o = {0};
	tau_rpc_stream *s = NULL;

	o.path = WATCH_POOL;
	o.response = &tau__inventory__v1__pool__descriptor;
	o.request = &req.base;
	o.on_connected = s_connected;
	o.on_message = s_message;
	o.on_closed = s_closed;
	o.ud = &seen;
	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.closed == 1, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.connected, 1);
	assert_int_equal(seen.messages, POOL_MSGS);
	assert_int_equal(seen.last_seq, POOL_MSGS);
	assert_int_equal(seen.status.code, TAU_RPC_OK);
	assert_int_equal(seen.retry_in, -1);
	pthread_mutex_unlock(&mu);
	tau_rpc_stream_free(s);
}

static void test_bidi_10000(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;
	const int n = 10000;

	o.max_send_queue = (size_t)n;
	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.connected == 1, WAIT_MS);
	assert_true(tau_rpc_stream_is_connected(s));
	for (int i = 1; i <= n; i++)
		assert_int_equal(send_report(s, (uint64_t)i), 0);
	WAIT_UNTIL(seen.messages == n, 60000);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.last_seq, n);
	assert_int_equal(srv_seen.reports, n);
	pthread_mutex_unlock(&mu);
	assert_int_equal(tau_rpc_stream_close_send(s), 0);
	WAIT_UNTIL(seen.closed == 1, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.status.code, TAU_RPC_OK);
	assert_int_equal(srv_seen.half_closes, 1);
	pthread_mutex_unlock(&mu);
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_FINISHED] == 1, WAIT_MS);
	/* After the end, sends are refused (no attempt open, no reconnect). */
	assert_int_equal(send_report(s, 1), -TAU_EAGAIN);
	tau_rpc_stream_free(s);
}

/*
 * tau_rpc_call_drop_metadata: the headers (bearer token included) are readable in on_start,
 * gone after the drop (NULL for every key, in on_start and in every later callback, on either
 * CQ thread of four), and the stream goes on: reports acked in order, half-close, OK.
 */
static void test_drop_metadata(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;
	const int n = 50;

	atomic_store(&drop_md, true);
	assert_int_equal(tau_rpc_channel_set_bearer_token(f->ch, TOKEN), 0);
	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.connected == 1, WAIT_MS);
	WAIT_UNTIL(srv_seen.started == 1, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_string_equal(srv_seen.dropped_token, TOKEN);
	assert_int_equal(srv_seen.md_gone, 1);
	pthread_mutex_unlock(&mu);
	for (int i = 1; i <= n; i++)
		assert_int_equal(send_report(s, (uint64_t)i), 0);
	WAIT_UNTIL(seen.messages == n, 30000);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.last_seq, n);
	assert_int_equal(seen.out_of_order, 0);
	assert_int_equal(srv_seen.reports, n);
	assert_int_equal(srv_seen.md_gone, 1 + n);
	pthread_mutex_unlock(&mu);
	assert_int_equal(tau_rpc_stream_close_send(s), 0);
	WAIT_UNTIL(seen.closed == 1, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.status.code, TAU_RPC_OK);
	pthread_mutex_unlock(&mu);
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_FINISHED] == 1, WAIT_MS);
	tau_rpc_stream_free(s);
	atomic_store(&drop_md, false);
}

/*
 * tau_rpc_call_send_latest: while an ack is in flight, later ones replace each other in the
 * queue, so the client gets the first and the newest, never a full queue (backpressure stays
 * for plain sends), and a plain send is neither replaced nor passed.
 */
static void test_send_latest(void **state)
{
	struct fixture *f = *state;
	struct stream_seen a = {0}, b = {0};
	tau_rpc_stream_opts oa = report_opts(&a), ob = report_opts(&b);
	tau_rpc_stream *sa = NULL, *sb = NULL;
	tau_rpc_server_stats st;

	ack_scripts = true;
	assert_int_equal(tau_rpc_stream_open(&sa, f->ch, &oa), 0);
	WAIT_UNTIL(a.connected == 1, WAIT_MS);
	assert_int_equal(send_report(sa, ACK_BURST), 0);
	WAIT_UNTIL(a.last_seq == ACK_BURST, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(a.messages, 2);
	assert_int_equal(a.got[0], 1);
	assert_int_equal(a.got[1], ACK_BURST);
	pthread_mutex_unlock(&mu);
	tau_rpc_server_stats_get(f->srv, &st);
	assert_int_equal(st.sends_coalesced, ACK_BURST - 2);

	assert_int_equal(tau_rpc_stream_open(&sb, f->ch, &ob), 0);
	WAIT_UNTIL(b.connected == 1, WAIT_MS);
	assert_int_equal(send_report(sb, ACK_MIXED), 0);
	WAIT_UNTIL(b.last_seq == 5, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(b.messages, 4);
	assert_int_equal(b.got[0], 1);
	assert_int_equal(b.got[1], 2);
	assert_int_equal(b.got[2], 3);
	assert_int_equal(b.got[3], 5);
	pthread_mutex_unlock(&mu);
	tau_rpc_server_stats_get(f->srv, &st);
	assert_int_equal(st.sends_coalesced, ACK_BURST - 2 + 1);

	/* Once the queue has drained, the next ack goes out on its own. */
	assert_int_equal(send_report(sb, 9), 0);
	WAIT_UNTIL(b.last_seq == 9, WAIT_MS);
	ack_scripts = false;
	tau_rpc_stream_free(sa);
	tau_rpc_stream_free(sb);
}

/*
 * Several CQ threads: streams are served concurrently, yet each stream's acks come back in
 * order and complete (one call's completions never run its handler twice at once), and the
 * server shuts down with every thread joined (teardown).
 */
static void test_cq_threads(void **state)
{
	struct fixture *f = *state;
	enum { STREAMS = 8, REPORTS = 1000 };
	struct stream_seen seen[STREAMS];
	tau_rpc_stream *s[STREAMS];

	memset(seen, 0, sizeof(seen));
	for (int k = 0; k < STREAMS; k++) {
		tau_rpc_stream_opts o = report_opts(&seen[k]);

		o.max_send_queue = REPORTS;
		assert_int_equal(tau_rpc_stream_open(&s[k], f->ch, &o), 0);
	}
	for (int k = 0; k < STREAMS; k++)
		WAIT_UNTIL(seen[k].connected == 1, WAIT_MS);
	for (int i = 1; i <= REPORTS; i++)
		for (int k = 0; k < STREAMS; k++)
			assert_int_equal(send_report(s[k], (uint64_t)i), 0);
	for (int k = 0; k < STREAMS; k++) {
		WAIT_UNTIL(seen[k].messages == REPORTS, 60000);
		pthread_mutex_lock(&mu);
		assert_int_equal(seen[k].last_seq, REPORTS);
		assert_int_equal(seen[k].out_of_order, 0);
		pthread_mutex_unlock(&mu);
		assert_int_equal(tau_rpc_stream_close_send(s[k]), 0);
	}
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_FINISHED] == STREAMS, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(srv_seen.reports, STREAMS * REPORTS);
	pthread_mutex_unlock(&mu);
	for (int k = 0; k < STREAMS; k++)
		tau_rpc_stream_free(s[k]);
}

static void test_deadline(void **state)
{
	struct fixture *f = *state;
	tau_rpc_status st;

	/* Connect first, so the deadline measures the call and not the TCP handshake. */
	assert_int_equal(get_node(f->ch, "warm-up", WAIT_MS, &st, NULL, 0), 0);
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_FINISHED] == 1, WAIT_MS);
	assert_int_equal(get_node(f->ch, "slow", 500, &st, NULL, 0), -TAU_ETIMEOUT);
	assert_int_equal(st.code, TAU_RPC_DEADLINE_EXCEEDED);
	/* The handler is told it was the deadline, not a cancel. */
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_DEADLINE] == 1, WAIT_MS);
	assert_int_equal(srv_seen.ends[TAU_RPC_END_CANCELLED], 0);
	WAIT_UNTIL(tau_rpc_server_live_calls(f->srv) == 0, WAIT_MS);
}

static void test_client_cancel(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;

	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.connected == 1 && srv_seen.started == 1, WAIT_MS);
	assert_int_equal(send_report(s, 1), 0);
	WAIT_UNTIL(seen.messages == 1, WAIT_MS);
	tau_rpc_stream_free(s);
	/* Freeing cancels: the owner hears the end, the server handler sees a cancel. */
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.closed, 1);
	assert_int_equal(seen.status.code, TAU_RPC_CANCELLED);
	assert_int_equal(seen.retry_in, -1);
	pthread_mutex_unlock(&mu);
	WAIT_UNTIL(srv_seen.ends[TAU_RPC_END_CANCELLED] == 1, WAIT_MS);
}

static void test_oversized(void **state)
{
	struct fixture *f = *state;
	size_t len = TAU_RPC_DEFAULT_MAX_MESSAGE + 16;
	uint8_t *big = calloc(1, len);
	uint8_t *out = NULL;
	size_t out_len = 0;
	tau_rpc_status st;
	tau_rpc_channel *ch2 = NULL;
	tau_rpc_channel_opts copts = {0};

	assert_non_null(big);
	/* A channel allowed to send big messages, so the server is the one refusing. */
	copts.target = f->target;
	copts.max_message_bytes = 4 * TAU_RPC_DEFAULT_MAX_MESSAGE;
	assert_int_equal(tau_rpc_channel_new(&ch2, &copts), 0);
	/* One string field of just over 1 MiB: valid protobuf, too big. */
	big[0] = 0x0a;
	big[1] = 0x80 | (uint8_t)((len - 5) & 0x7f);
	big[2] = 0x80 | (uint8_t)(((len - 5) >> 7) & 0x7f);
	big[3] = 0x80 | (uint8_t)(((len - 5) >> 14) & 0x7f);
	big[4] = (uint8_t)((len - 5) >> 21);
	memset(big + 5, 'a', len - 5);
	assert_int_equal(tau_rpc_unary_raw(&out, &out_len, ch2, GET_NODE, big, len, WAIT_MS, &st),
	                 -TAU_ETOOBIG);
	assert_int_equal(st.code, TAU_RPC_RESOURCE_EXHAUSTED);
	/* The default client cap refuses before sending. */
	{
		Tau__Inventory__V1__GetNodeRequest req = TAU__INVENTORY__V1__GET_NODE_REQUEST__INIT;
		ProtobufCMessage *resp = NULL;

		big[len - 1] = '\0';
		req.name = (char *)big + 5;
		assert_int_equal(tau_rpc_unary(&resp, f->ch, GET_NODE, &req.base,
		                               &tau__inventory__v1__get_node_response__descriptor,
		                               5000, &st),
		                 -TAU_ETOOBIG);
		assert_int_equal(st.code, TAU_RPC_RESOURCE_EXHAUSTED);
	}
	tau_rpc_channel_free(ch2);
	free(big);
	/* The server still serves. */
	assert_int_equal(get_node(f->ch, "after", WAIT_MS, &st, NULL, 0), 0);
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
	uint8_t *out = NULL;
	size_t out_len = 0;
	tau_rpc_status st;
	char got[32];

	assert_int_equal(tau_rpc_unary_raw(&out, &out_len, f->ch, GET_NODE, junk, sizeof(junk),
	                                   WAIT_MS, &st),
	                 -TAU_EINVAL);
	assert_int_equal(st.code, TAU_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.message, "malformed"));
	assert_int_equal(get_node(f->ch, "still-here", WAIT_MS, &st, got, sizeof(got)), 0);
	assert_string_equal(got, "still-here");
}

static void test_malformed_in_stream(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;
	Tau__Inventory__V1__AgentReport rep = TAU__INVENTORY__V1__AGENT_REPORT__INIT;
	Tau__Inventory__V1__Stopping stop = TAU__INVENTORY__V1__STOPPING__INIT;

	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.connected == 1, WAIT_MS);
	/* The client refuses to send invalid UTF-8 itself. */
	rep.seq = 1;
	rep.body_case = TAU__INVENTORY__V1__AGENT_REPORT__BODY_STOPPING;
	rep.stopping = &stop;
	stop.reason = (char *)"\xc3\x28";
	assert_int_equal(tau_rpc_stream_send(s, &rep.base), -TAU_EINVAL);
	tau_rpc_stream_free(s);
}

static void test_invalid_utf8(void **state)
{
	struct fixture *f = *state;
	const uint8_t bad[] = {0x0a, 0x03, 'n', 0xc3, 0x28};
	uint8_t *out = NULL;
	size_t out_len = 0;
	tau_rpc_status st;

	assert_int_equal(
	        tau_rpc_unary_raw(&out, &out_len, f->ch, GET_NODE, bad, sizeof(bad), WAIT_MS, &st),
	        -TAU_EINVAL);
	assert_int_equal(st.code, TAU_RPC_INVALID_ARGUMENT);
	assert_non_null(strstr(st.message, "UTF-8"));
	assert_int_equal(get_node(f->ch, "ok", WAIT_MS, &st, NULL, 0), 0);
}

static void test_unknown_method(void **state)
{
	struct fixture *f = *state;
	const uint8_t empty[1] = {0};
	uint8_t *out = NULL;
	size_t out_len = 0;
	tau_rpc_status st;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tau_rpc_unary_raw(&out, &out_len, f->ch,
		                                   "/tau.inventory.v1.QueryService/Nope", empty, 0,
		                                   20000, &st),
		                 -TAU_EIO);
		assert_int_equal(st.code, TAU_RPC_UNIMPLEMENTED);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Answered at once, not by the 20 s deadline. */
	assert_true(t1.tv_sec - t0.tv_sec < 5);
}

static void test_health(void **state)
{
	struct fixture *f = *state;
	Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
	ProtobufCMessage *out = NULL;
	tau_rpc_status st;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = {0};
	tau_rpc_stream *s = NULL;

	req.service = (char *)"";
	assert_int_equal(tau_rpc_unary(&out, f->ch, "/grpc.health.v1.Health/Check", &req.base,
	                               &grpc__health__v1__health_check_response__descriptor,
	                               WAIT_MS, &st),
	                 0);
	assert_int_equal(((Grpc__Health__V1__HealthCheckResponse *)out)->status,
	                 TAU_RPC_HEALTH_SERVING);
	tau_rpc_message_free(out);
	req.service = (char *)"tau.inventory.v1.InventoryService";
	assert_int_equal(tau_rpc_unary(&out, f->ch, "/grpc.health.v1.Health/Check", &req.base,
	                               &grpc__health__v1__health_check_response__descriptor,
	                               WAIT_MS, &st),
	                 -TAU_ENOTFOUND);
	/* Watch: unknown first, then every change. */
	o.path = (char *)"/grpc.health.v1.Health/Watch";
	o.response = &grpc__health__v1__health_check_response__descriptor;
	o.request = &req.base;
	o.on_message = s_message;
	o.on_closed = s_closed;
	o.ud = &seen;
	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.messages == 1, WAIT_MS);
	assert_int_equal(seen.last_seq, 3); /* SERVICE_UNKNOWN */
	assert_int_equal(tau_rpc_health_set(f->health, req.service, TAU_RPC_HEALTH_SERVING), 0);
	WAIT_UNTIL(seen.messages == 2 && seen.last_seq == TAU_RPC_HEALTH_SERVING, WAIT_MS);
	assert_int_equal(tau_rpc_health_set(f->health, req.service, TAU_RPC_HEALTH_SERVING), 0);
	assert_int_equal(tau_rpc_health_set(f->health, req.service, TAU_RPC_HEALTH_NOT_SERVING), 0);
	WAIT_UNTIL(seen.messages == 3 && seen.last_seq == TAU_RPC_HEALTH_NOT_SERVING, WAIT_MS);
	assert_int_equal(tau_rpc_unary(&out, f->ch, "/grpc.health.v1.Health/Check", &req.base,
	                               &grpc__health__v1__health_check_response__descriptor,
	                               WAIT_MS, &st),
	                 0);
	assert_int_equal(((Grpc__Health__V1__HealthCheckResponse *)out)->status,
	                 TAU_RPC_HEALTH_NOT_SERVING);
	tau_rpc_message_free(out);
	tau_rpc_stream_free(s);
	/* The watcher left the list when its call ended; setting again is safe. */
	WAIT_UNTIL(tau_rpc_server_live_calls(f->srv) == 0, WAIT_MS);
	assert_int_equal(tau_rpc_health_set(f->health, req.service, TAU_RPC_HEALTH_SERVING), 0);
}

struct unary_thread_arg {
	tau_rpc_channel *ch;
	const char *name;
	int rc;
	tau_rpc_status st;
};

static void *unary_thread(void *arg)
{
	struct unary_thread_arg *a = arg;

	a->rc = get_node(a->ch, a->name, 30000, &a->st, NULL, 0);
	return NULL;
}

static void test_shutdown_in_flight(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen[3];
	tau_rpc_stream *s[3];
	struct unary_thread_arg slow = {f->ch, "slow", 0, {0, ""}};
	struct unary_thread_arg delayed = {f->ch, "delayed", 0, {0, ""}};
	pthread_t t_slow, t_delayed;
	struct timespec t0, t1;

	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < 3; i++) {
		tau_rpc_stream_opts o = report_opts(&seen[i]);

		assert_int_equal(tau_rpc_stream_open(&s[i], f->ch, &o), 0);
	}
	WAIT_UNTIL(srv_seen.started == 3, WAIT_MS);
	pthread_mutex_lock(&mu);
	delayed_port = f->port;
	pthread_mutex_unlock(&mu);
	pthread_create(&t_slow, NULL, unary_thread, &slow);
	pthread_create(&t_delayed, NULL, unary_thread, &delayed);
	WAIT_UNTIL(srv_seen.started == 5, WAIT_MS);
	assert_int_equal(tau_rpc_server_live_calls(f->srv), 5);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The delayed reply lands inside the grace period (5 s: room for a loaded machine); the
	 * rest is cancelled after it, long before the slow call's own 30 s deadline. */
	tau_rpc_server_shutdown(f->srv, 5000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 20);
	assert_int_equal(tau_rpc_server_live_calls(f->srv), 0);
	pthread_join(t_slow, NULL);
	pthread_join(t_delayed, NULL);
	assert_int_equal(delayed.rc, 0);
	assert_int_not_equal(slow.rc, 0);
	pthread_mutex_lock(&mu);
	assert_int_equal(srv_seen.ends[TAU_RPC_END_CANCELLED], 4);
	assert_int_equal(srv_seen.ends[TAU_RPC_END_FINISHED], 1);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < 3; i++) {
		WAIT_UNTIL(seen[i].closed == 1, WAIT_MS);
		assert_int_not_equal(seen[i].status.code, TAU_RPC_OK);
		tau_rpc_stream_free(s[i]);
	}
}

static void test_reconnect(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;
	int port = f->port;

	o.reconnect = true;
	o.backoff_initial_ms = 50;
	o.backoff_max_ms = 200;
	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(seen.connected == 1, WAIT_MS);
	assert_int_equal(send_report(s, 1), 0);
	WAIT_UNTIL(seen.messages == 1, WAIT_MS);
	/* The server goes away: the stream ends and a retry is scheduled. */
	tau_rpc_server_free(f->srv);
	f->srv = NULL;
	WAIT_UNTIL(seen.closed >= 1, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_true(seen.retry_in > 0 && seen.retry_in <= 200);
	pthread_mutex_unlock(&mu);
	/* A new server on the same port: the stream comes back by itself. */
	assert_int_equal(start_server(f, port), 0);
	WAIT_UNTIL(seen.connected == 2, WAIT_MS);
	assert_int_equal(send_report(s, 1), 0);
	WAIT_UNTIL(seen.messages == 2, WAIT_MS);
	tau_rpc_stream_free(s);
}

static void test_dead_server_never_connects(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;
	int port = f->port;
	tau_rpc_channel *ch = NULL;
	tau_rpc_channel_opts copts = {0};

	/* Take the server away, then dial its port: attempts fail, none looks connected. */
	tau_rpc_server_free(f->srv);
	f->srv = NULL;
	copts.target = f->target;
	assert_int_equal(tau_rpc_channel_new(&ch, &copts), 0);
	o.reconnect = true;
	o.wait_for_ready = true; /* no effect before a first connection: attempts still fail */
	o.backoff_initial_ms = 20;
	o.backoff_max_ms = 50;
	assert_int_equal(tau_rpc_stream_open(&s, ch, &o), 0);
	WAIT_UNTIL(seen.closed >= 3, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.connected, 0);
	assert_int_equal(seen.status.code, TAU_RPC_UNAVAILABLE);
	pthread_mutex_unlock(&mu);
	tau_rpc_stream_free(s);
	tau_rpc_channel_free(ch);
	assert_int_equal(start_server(f, port), 0);
}

/* wait_for_ready: once connected, a lost server makes the next attempt wait for the channel
 * instead of failing again and again, and it goes out once a server listens; before any
 * connection attempts fail fast, so a dead address keeps showing in their status. */
static void test_wait_for_ready(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;
	int port = f->port;
	tau_rpc_channel *ch = NULL;
	tau_rpc_channel_opts copts = {0};

	copts.target = f->target;
	copts.reconnect_max_ms = 300;
	assert_int_equal(tau_rpc_channel_new(&ch, &copts), 0);
	o.reconnect = true;
	o.wait_for_ready = true;
	o.backoff_initial_ms = 20;
	o.backoff_max_ms = 20;
	assert_int_equal(tau_rpc_stream_open(&s, ch, &o), 0);
	WAIT_UNTIL(seen.connected == 1, WAIT_MS);
	tau_rpc_server_free(f->srv);
	f->srv = NULL;
	WAIT_UNTIL(seen.closed == 1, WAIT_MS);
	/* An observation window, not a wait: without wait_for_ready the refused connection would
	 * end an attempt every 20 ms or so (test_dead_server_never_connects). */
	usleep(500 * 1000);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.closed, 1);
	assert_int_equal(seen.connected, 1);
	pthread_mutex_unlock(&mu);
	assert_int_equal(start_server(f, port), 0);
	WAIT_UNTIL(seen.connected == 2, WAIT_MS);
	assert_int_equal(send_report(s, 1), 0);
	WAIT_UNTIL(seen.messages == 1, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(seen.closed, 1);
	pthread_mutex_unlock(&mu);
	tau_rpc_stream_free(s);
	tau_rpc_channel_free(ch);
}

static void test_bad_setup(void **state)
{
	tau_rpc_server *srv = NULL;
	tau_rpc_method m = {0};
	tau_rpc_channel *ch = NULL;
	tau_rpc_channel_opts copts = {0};
	int port = 0;

	(void)state;
	assert_int_equal(tau_rpc_server_new(&srv, NULL), 0);
	m.path = (char *)"no-slash";
	m.request = &tau__inventory__v1__get_node_request__descriptor;
	m.on_message = get_node_message;
	assert_int_equal(tau_rpc_server_add_method(srv, &m), -TAU_EINVAL);
	m.path = GET_NODE;
	assert_int_equal(tau_rpc_server_add_method(srv, &m), 0);
	assert_int_equal(tau_rpc_server_add_method(srv, &m), -TAU_EINVAL);
	assert_int_equal(tau_rpc_server_start(srv), -TAU_EINVAL);
	assert_int_equal(tau_rpc_server_listen(srv, "256.1.1.1:1", NULL, &port), -TAU_EIO);
	tau_rpc_server_free(srv);
	assert_int_equal(tau_rpc_channel_new(&ch, &copts), -TAU_EINVAL);
	copts.target = (char *)"127.0.0.1:1";
	copts.cert_pem = (char *)"x";
	assert_int_equal(tau_rpc_channel_new(&ch, &copts), -TAU_EINVAL);
}

/* What a stream callback that tries to free its own stream got back; guarded by mu. */
static struct {
	int rc;
	char msg[TAU_ERROR_MSG_MAX];
	bool done;
} self_free;

static void s_connected_frees_itself(tau_rpc_stream *s, void *ud)
{
	int rc = tau_rpc_stream_free(s);

	(void)ud;
	pthread_mutex_lock(&mu);
	self_free.rc = rc;
	snprintf(self_free.msg, sizeof(self_free.msg), "%s", tau_error_last()->msg);
	self_free.done = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* Freeing a stream from its own callback would wait for itself: refused in every build. */
static void test_free_from_callback_refused(void **state)
{
	struct fixture *f = *state;
	struct stream_seen seen = {0};
	tau_rpc_stream_opts o = report_opts(&seen);
	tau_rpc_stream *s = NULL;

	o.on_connected = s_connected_frees_itself;
	memset(&self_free, 0, sizeof(self_free));
	assert_int_equal(tau_rpc_stream_open(&s, f->ch, &o), 0);
	WAIT_UNTIL(self_free.done, WAIT_MS);
	pthread_mutex_lock(&mu);
	assert_int_equal(self_free.rc, -TAU_EINVAL);
	assert_string_equal(self_free.msg,
	                    REPORT ": tau_rpc_stream_free from a callback of the stream's channel "
	                           "would deadlock; the stream is left open");
	pthread_mutex_unlock(&mu);
	/* The stream still works, and a channel with a live stream is not freed under it. */
	assert_int_equal(send_report(s, 1), 0);
	WAIT_UNTIL(seen.messages == 1, WAIT_MS);
	assert_int_equal(tau_rpc_channel_free(f->ch), -TAU_EINVAL);
	assert_int_equal(tau_rpc_stream_free(s), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_utf8),
	        cmocka_unit_test(test_check_utf8_nested),
	        cmocka_unit_test(test_decode),
	        cmocka_unit_test(test_decode_arena),
	        cmocka_unit_test(test_bad_setup),
	        cmocka_unit_test_setup_teardown(test_unary, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_server_stream, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bidi_10000, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_send_latest, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_drop_metadata, setup_threads, teardown),
	        cmocka_unit_test_setup_teardown(test_cq_threads, setup_threads, teardown),
	        cmocka_unit_test_setup_teardown(test_deadline, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_client_cancel, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_malformed_in_stream, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_invalid_utf8, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_unknown_method, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_health, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_shutdown_in_flight, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_reconnect, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_dead_server_never_connects, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_wait_for_ready, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_free_from_callback_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
