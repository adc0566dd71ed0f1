/*
 * rpc_server.c - gRPC server over the C core: registered methods, per-call state machines.
 *
 * One completion queue (CQ), pumped by opts.cq_threads threads (one by default). Every
 * operation we start carries a tag (struct tau_rpc_tag: a function pointer) embedded in the object
 * it belongs to; the CQ thread calls it with the completion's success bit. Each call owns four tags
 * (close, recv, send, status), because the core allows only one operation of each kind in flight
 * per call, and counts its batches in flight. The call is finished with the core (on_done,
 * grpc_call_unref) only when the close has been seen AND that count is zero: tags can complete in
 * any order, and freeing on the first "final-looking" event is a use-after-free.
 *
 * Threads: the per-call mutex guards the send queue and flags, so other threads may send and
 * finish (the core allows grpc_call_start_batch from any thread). Handler callbacks are called
 * without the mutex held so they can send.
 *
 * Shutdown (the order that drains cleanly): grpc_server_shutdown_and_notify, wait up to the
 * grace period, grpc_server_cancel_all_calls, wait for the shutdown tag and for every call and
 * armed request to come back, grpc_server_destroy, CQ shutdown, join the thread, CQ destroy.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tau/rpc.h"

#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/hmap.h"

#include "rpc_internal.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define DEFAULT_SEND_QUEUE     1024
#define DEFAULT_KEEPALIVE_MS   30000
#define DEFAULT_KA_TIMEOUT_MS  10000
#define DEFAULT_MIN_PING_MS    5000
#define DEFAULT_WINDOW_BYTES   65536
#define DEFAULT_REQUESTS_ARMED 4
#define MAX_METADATA           64
/*
 * A client whose deadline passes cancels the stream itself, and its RST_STREAM can beat the
 * server's own timer (the server's deadline starts when the headers arrive). So a cancel this
 * close to the deadline counts as the deadline: a tenth of the call's time, 50 ms .. 1 s.
 */
#define DEADLINE_SLACK_MIN_MS 50
#define DEADLINE_SLACK_MAX_MS 1000

struct method_entry {
	tau_rpc_method m;
	char *path;
	void *handle; /* from grpc_server_register_method */
};

/* One armed grpc_server_request_(registered_)call. NULL method: the catch-all. */
struct request_slot {
	struct tau_rpc_tag tag;
	tau_rpc_server *srv;
	struct method_entry *method;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
	grpc_call_details details;
};

/* A call to an unknown method: answered UNIMPLEMENTED in one batch, then dropped. */
struct unimplemented_call {
	struct tau_rpc_tag tag;
	tau_rpc_server *srv;
	grpc_call *call;
	grpc_slice details;
	int cancelled;
};

struct md_pair {
	const char *key;
	const char *value;
};

/* A call's request headers, copied in one allocation: the pairs, then their strings. */
struct md_block {
	size_t n;
	struct md_pair pairs[];
};

struct tau_rpc_call {
	struct tau_rpc_tag close_tag;
	struct tau_rpc_tag recv_tag;
	struct tau_rpc_tag send_tag;
	struct tau_rpc_tag status_tag;
	tau_rpc_server *srv;
	struct method_entry *method;
	grpc_call *call;
	pthread_mutex_t mu;
	atomic_int refs;

	int pending; /* batches in flight */
	bool closed; /* RECV_CLOSE_ON_SERVER completed */
	atomic_bool cancelled;
	bool finish_wanted; /* finish called; status goes out after the queue */
	bool status_started;
	bool send_busy;
	bool reading_stopped;
	int close_cancelled; /* written by the core */

	tau_rpc_send_ring sendq; /* packed messages waiting to be sent */
	bool newest_replaceable; /* sendq's newest came from tau_rpc_call_send_latest */
	size_t q_max;
	grpc_byte_buffer *sending;
	grpc_byte_buffer *recv_buf;

	tau_rpc_code finish_code;
	grpc_slice status_details;
	bool have_details;

	_Atomic(struct md_block *) md; /* NULL when none or after tau_rpc_call_drop_metadata */
	char *peer_identity;
	char *peer_cn;
	char *peer_address;   /* and, after its NUL, the address without its port */
	const char *peer_key; /* identity, else the address without its port (not owned) */
	bool peer_counted;    /* holds one of its peer's max_calls_per_peer slots */
	bool peer_tls;
	bool has_deadline;
	int32_t deadline_slack_ms; /* a tenth of the call's whole deadline, clamped */
	gpr_timespec deadline;     /* GPR_CLOCK_MONOTONIC */
	void *user;
};

struct tau_rpc_server {
	tau_rpc_server_opts opts;
	grpc_server *server;
	grpc_completion_queue *cq;
	pthread_t thread;
	bool thread_started;
	pthread_t extra[TAU_RPC_MAX_CQ_THREADS - 1]; /* opts.cq_threads - 1 more pumps */
	int n_extra;
	bool started;
	bool listening;
	bool shut;
	struct method_entry **methods;
	size_t n_methods;

	pthread_mutex_t mu;
	pthread_cond_t cond;
	size_t live_calls;
	size_t live_slots; /* armed requests + unimplemented answers in flight */
	bool shutdown_notified;
	bool shutting_down;
	struct tau_rpc_tag shutdown_tag;
	tau_hmap peers; /* struct peer_calls by key, with max_calls_per_peer (under mu) */
	tau_rpc_server_stats stats; /* under mu */
	uint64_t refused_logged_ms; /* under mu: when a refused message was last logged */
	uint64_t refused_unlogged;  /* under mu: refusals since that line */
	atomic_uint_least64_t sends_coalesced; /* tau_rpc_call_send_latest replacements */
};

/* Calls open from one peer. */
struct peer_calls {
	tau_hmap_node node;
	int calls;
	char key[];
};

/* ---- small helpers ------------------------------------------------------------------------ */

static char *dup_slice(grpc_slice s)
{
	size_t n = GRPC_SLICE_LENGTH(s);
	char *p = malloc(n + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, GRPC_SLICE_START_PTR(s), n);
	p[n] = '\0';
	return p;
}

/* Decode a received buffer; returns 0 or a gRPC status code with detail in tau_error_last. */
static tau_rpc_code decode_buffer(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
                                  grpc_byte_buffer *bb, size_t max)
{
	grpc_byte_buffer_reader reader;
	grpc_slice all;
	size_t len = grpc_byte_buffer_length(bb);
	int rc;

	/* The core enforces the cap already; this keeps it true whatever the core does. */
	if (len > max) {
		tau_error_set(TAU_ETOOBIG, "message of %zu bytes exceeds the cap of %zu", len, max);
		return TAU_RPC_RESOURCE_EXHAUSTED;
	}
	if (!grpc_byte_buffer_reader_init(&reader, bb)) {
		tau_error_set(TAU_EINVAL, "cannot read message (bad compression?)");
		return TAU_RPC_INVALID_ARGUMENT;
	}
	all = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	rc = tau_rpc_message_decode(out, desc, GRPC_SLICE_START_PTR(all), GRPC_SLICE_LENGTH(all),
	                            max);
	grpc_slice_unref(all);
	if (rc == -TAU_ETOOBIG)
		return TAU_RPC_RESOURCE_EXHAUSTED;
	if (rc == -TAU_ENOMEM)
		return TAU_RPC_RESOURCE_EXHAUSTED;
	if (rc < 0)
		return TAU_RPC_INVALID_ARGUMENT;
	return TAU_RPC_OK;
}

/* Take one of the peer's call slots. Returns false when the peer is at the cap. */
static bool peer_take(tau_rpc_server *srv, tau_rpc_call *c)
{
	tau_hmap_node *n;
	struct peer_calls *p;
	bool ok = true;

	if (srv->opts.max_calls_per_peer <= 0 || c->peer_key == NULL)
		return true;
	pthread_mutex_lock(&srv->mu);
	n = tau_hmap_get(&srv->peers, c->peer_key);
	p = n != NULL ? TAU_HMAP_ENTRY(n, struct peer_calls, node) : NULL;
	if (p == NULL) {
		size_t len = strlen(c->peer_key);

		p = calloc(1, sizeof(*p) + len + 1);
		if (p != NULL) {
			memcpy(p->key, c->peer_key, len + 1);
			tau_hmap_insert(&srv->peers, &p->node, p->key);
		}
	}
	if (p == NULL) {
		ok = true; /* out of memory: the peer goes uncounted rather than refused */
	} else if (p->calls >= srv->opts.max_calls_per_peer) {
		srv->stats.refused_peer_cap++;
		ok = false;
	} else {
		p->calls++;
		c->peer_counted = true;
	}
	pthread_mutex_unlock(&srv->mu);
	return ok;
}

static void server_call_gone(tau_rpc_server *srv, tau_rpc_call *c)
{
	pthread_mutex_lock(&srv->mu);
	if (c->peer_counted) {
		tau_hmap_node *n = tau_hmap_get(&srv->peers, c->peer_key);

		if (n != NULL) {
			struct peer_calls *p = TAU_HMAP_ENTRY(n, struct peer_calls, node);

			if (--p->calls <= 0) {
				tau_hmap_remove(&srv->peers, &p->node);
				free(p);
			}
		}
		c->peer_counted = false;
	}
	srv->live_calls--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->mu);
}

static void server_slot_gone(tau_rpc_server *srv)
{
	pthread_mutex_lock(&srv->mu);
	srv->live_slots--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->mu);
}

/* ---- call lifetime ------------------------------------------------------------------------ */

static void call_free(tau_rpc_call *c)
{
	tau_rpc_ring_free(&c->sendq);
	free(atomic_load(&c->md));
	free(c->peer_identity);
	free(c->peer_cn);
	free(c->peer_address);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

tau_rpc_call *tau_rpc_call_ref(tau_rpc_call *call)
{
	atomic_fetch_add(&call->refs, 1);
	return call;
}

void tau_rpc_call_unref(tau_rpc_call *call)
{
	if (call != NULL && atomic_fetch_sub(&call->refs, 1) == 1)
		call_free(call);
}

static void drop_queue_locked(tau_rpc_call *c)
{
	tau_rpc_ring_clear(&c->sendq);
	c->newest_replaceable = false;
}

static tau_rpc_end end_reason(tau_rpc_call *c)
{
	gpr_timespec now;

	if (!atomic_load(&c->cancelled))
		return TAU_RPC_END_FINISHED;
	if (!c->has_deadline)
		return TAU_RPC_END_CANCELLED;
	now = gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
	                   gpr_time_from_millis(c->deadline_slack_ms, GPR_TIMESPAN));
	return gpr_time_cmp(now, c->deadline) >= 0 ? TAU_RPC_END_DEADLINE : TAU_RPC_END_CANCELLED;
}

/*
 * Called with c->mu held after a completion; releases it. When the call is over for the core,
 * tells the handler and drops the layer's reference.
 */
static void maybe_done_unlock(tau_rpc_call *c)
{
	bool done = c->closed && c->pending == 0 && c->call != NULL;
	grpc_call *gcall = c->call;
	tau_rpc_server *srv = c->srv;

	if (done)
		c->call = NULL;
	pthread_mutex_unlock(&c->mu);
	if (!done)
		return;
	if (c->method->m.on_done != NULL)
		c->method->m.on_done(c, end_reason(c), c->method->m.ud);
	grpc_call_unref(gcall);
	server_call_gone(srv, c);
	tau_rpc_call_unref(c);
}

/* ---- sending ------------------------------------------------------------------------------ */

static void start_status_locked(tau_rpc_call *c)
{
	grpc_op op;
	grpc_call_error err;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	op.data.send_status_from_server.trailing_metadata_count = 0;
	op.data.send_status_from_server.status = (grpc_status_code)c->finish_code;
	op.data.send_status_from_server.status_details =
	        c->have_details ? &c->status_details : NULL;
	c->status_started = true;
	err = grpc_call_start_batch(c->call, &op, 1, &c->status_tag, NULL);
	if (err == GRPC_CALL_OK)
		c->pending++;
	else
		grpc_call_cancel(c->call, NULL);
}

static void start_send_locked(tau_rpc_call *c)
{
	grpc_op op;

	if (c->send_busy || c->sendq.len == 0 || c->closed)
		return;
	c->sending = tau_rpc_ring_pop(&c->sendq);
	if (c->sendq.len == 0)
		c->newest_replaceable = false; /* it is in flight now */
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_SEND_MESSAGE;
	op.data.send_message.send_message = c->sending;
	if (grpc_call_start_batch(c->call, &op, 1, &c->send_tag, NULL) != GRPC_CALL_OK) {
		grpc_byte_buffer_destroy(c->sending);
		c->sending = NULL;
		grpc_call_cancel(c->call, NULL);
		return;
	}
	c->send_busy = true;
	c->pending++;
}

static void on_send_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_call *c = CONTAINER_OF(t, tau_rpc_call, send_tag);

	pthread_mutex_lock(&c->mu);
	c->pending--;
	c->send_busy = false;
	grpc_byte_buffer_destroy(c->sending);
	c->sending = NULL;
	if (!ok)
		drop_queue_locked(c);
	else
		start_send_locked(c);
	if (!c->send_busy && c->sendq.len == 0 && c->finish_wanted && !c->status_started &&
	    !c->closed)
		start_status_locked(c);
	maybe_done_unlock(c);
}

static void on_status_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_call *c = CONTAINER_OF(t, tau_rpc_call, status_tag);

	(void)ok;
	pthread_mutex_lock(&c->mu);
	c->pending--;
	if (c->have_details) {
		grpc_slice_unref(c->status_details);
		c->have_details = false;
	}
	maybe_done_unlock(c);
}

static int call_send(tau_rpc_call *c, const ProtobufCMessage *msg, bool latest)
{
	grpc_byte_buffer *bb = NULL;
	int rc;

	if (c->method->m.response != NULL && msg->descriptor != c->method->m.response)
		return tau_error_set(TAU_EINVAL, "%s: sends %s, got %s", c->method->path,
		                     c->method->m.response->name, msg->descriptor->name);
	rc = tau_rpc_pack_message(&bb, msg, c->srv->opts.max_message_bytes);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&c->mu);
	if (c->closed || c->call == NULL || c->finish_wanted) {
		rc = tau_error_set(TAU_EIO, "%s: call is finished or cancelled", c->method->path);
		goto out;
	}
	if (latest && c->newest_replaceable) {
		/* The one it supersedes has not left: it goes, this takes its place. */
		grpc_byte_buffer **slot = tau_rpc_ring_newest(&c->sendq);
		grpc_byte_buffer *old = *slot;

		*slot = bb;
		bb = old;
		atomic_fetch_add(&c->srv->sends_coalesced, 1);
		rc = 0;
		goto out;
	}
	if (c->sendq.len >= c->q_max) {
		rc = tau_error_set(TAU_EAGAIN, "%s: send queue full (%zu messages)",
		                   c->method->path, c->sendq.len);
		goto out;
	}
	rc = tau_rpc_ring_push(&c->sendq, bb);
	if (rc < 0)
		goto out;
	bb = NULL;
	c->newest_replaceable = latest;
	start_send_locked(c);
	rc = 0;
out:
	pthread_mutex_unlock(&c->mu);
	if (bb != NULL)
		grpc_byte_buffer_destroy(bb);
	return rc;
}

int tau_rpc_call_send(tau_rpc_call *c, const ProtobufCMessage *msg)
{
	return call_send(c, msg, false);
}

int tau_rpc_call_send_latest(tau_rpc_call *c, const ProtobufCMessage *msg)
{
	return call_send(c, msg, true);
}

int tau_rpc_call_finish(tau_rpc_call *c, tau_rpc_code code, const char *message)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (c->finish_wanted || c->closed || c->call == NULL) {
		rc = tau_error_set(TAU_EIO, "%s: call is already finished or cancelled",
		                   c->method->path);
		goto out;
	}
	c->finish_wanted = true;
	c->finish_code = code;
	if (message != NULL && message[0] != '\0') {
		/* Status details must be UTF-8 for other languages' clients too. */
		if (tau_rpc_utf8_valid(message, strlen(message)))
			c->status_details = grpc_slice_from_copied_string(message);
		else
			c->status_details =
			        grpc_slice_from_copied_string("(invalid UTF-8 message)");
		c->have_details = true;
	}
	if (!c->send_busy && c->sendq.len == 0)
		start_status_locked(c);
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int tau_rpc_call_reply(tau_rpc_call *c, const ProtobufCMessage *msg)
{
	int rc = tau_rpc_call_send(c, msg);

	if (rc < 0) {
		/* Do not leave the client waiting for an answer that will never come. */
		tau_error last = *tau_error_last();

		tau_rpc_call_finish(c, TAU_RPC_INTERNAL, "server could not send its response");
		tau_error_set(last.code, "%s", last.msg);
		return rc;
	}
	return tau_rpc_call_finish(c, TAU_RPC_OK, NULL);
}

size_t tau_rpc_call_send_queue_len(tau_rpc_call *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->sendq.len + (c->send_busy ? 1 : 0);
	pthread_mutex_unlock(&c->mu);
	return n;
}

bool tau_rpc_call_is_cancelled(tau_rpc_call *c)
{
	return atomic_load(&c->cancelled);
}

/* ---- receiving ---------------------------------------------------------------------------- */

static void post_recv_locked(tau_rpc_call *c)
{
	grpc_op op;

	if (c->reading_stopped || c->closed || c->finish_wanted)
		return;
	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &c->recv_buf;
	if (grpc_call_start_batch(c->call, &op, 1, &c->recv_tag, NULL) == GRPC_CALL_OK)
		c->pending++;
	else
		c->reading_stopped = true;
}

/*
 * A message refused before any handler saw it (malformed, too large, bad UTF-8) is logged
 * with its method, peer and reason, at most once a second per server: a flood of bad
 * messages must not flood the log; the line says how many refusals it stands for.
 */
static void log_refused(tau_rpc_call *c, tau_rpc_code code, const char *why)
{
	tau_rpc_server *srv = c->srv;
	uint64_t now = tau_backoff_now_ms(), n;
	char count[24];

	pthread_mutex_lock(&srv->mu);
	srv->refused_unlogged++;
	if (srv->refused_logged_ms != 0 && now - srv->refused_logged_ms < 1000) {
		pthread_mutex_unlock(&srv->mu);
		return;
	}
	srv->refused_logged_ms = now;
	n = srv->refused_unlogged;
	srv->refused_unlogged = 0;
	pthread_mutex_unlock(&srv->mu);
	snprintf(count, sizeof(count), "%llu", (unsigned long long)n);
	tau_log_warn("request message refused", "method", c->method->path, "peer",
	             c->peer_address != NULL ? c->peer_address : "unknown", "code",
	             tau_rpc_code_name(code), "reason", why, "refused_since_last_line", count,
	             NULL);
}

/* Decode and hand over one request; on a bad message finish the call. Runs unlocked. */
static bool deliver(tau_rpc_call *c, grpc_byte_buffer *bb)
{
	ProtobufCMessage *msg = NULL;
	tau_rpc_code code =
	        decode_buffer(&msg, c->method->m.request, bb, c->srv->opts.max_message_bytes);

	if (code != TAU_RPC_OK) {
		char why[sizeof(tau_error_last()->msg)];

		memcpy(why, tau_error_last()->msg, sizeof(why));
		why[sizeof(why) - 1] = '\0';
		log_refused(c, code, why);
		tau_rpc_call_finish(c, code, why);
		return false;
	}
	c->method->m.on_message(c, msg, c->method->m.ud);
	return true;
}

static void on_recv_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_call *c = CONTAINER_OF(t, tau_rpc_call, recv_tag);
	grpc_byte_buffer *bb;

	pthread_mutex_lock(&c->mu);
	c->pending--;
	bb = c->recv_buf;
	c->recv_buf = NULL;
	if (!ok || bb == NULL) {
		bool half_close = ok && !c->closed && !c->finish_wanted;

		c->reading_stopped = true;
		if (bb != NULL)
			grpc_byte_buffer_destroy(bb);
		/* Keep a reference across the unlocked callback: with several CQ threads the
		 * status completion may otherwise finish and free the call meanwhile. */
		c->pending++;
		pthread_mutex_unlock(&c->mu);
		if (half_close && c->method->m.on_half_close != NULL)
			c->method->m.on_half_close(c, c->method->m.ud);
		pthread_mutex_lock(&c->mu);
		c->pending--;
		maybe_done_unlock(c);
		return;
	}
	/* Keep a reference across the unlocked section: a recv is in flight no more. */
	c->pending++;
	pthread_mutex_unlock(&c->mu);
	if (!deliver(c, bb)) {
		pthread_mutex_lock(&c->mu);
		c->reading_stopped = true;
	} else {
		pthread_mutex_lock(&c->mu);
	}
	grpc_byte_buffer_destroy(bb);
	c->pending--;
	post_recv_locked(c);
	maybe_done_unlock(c);
}

static void on_close_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_call *c = CONTAINER_OF(t, tau_rpc_call, close_tag);

	pthread_mutex_lock(&c->mu);
	c->pending--;
	c->closed = true;
	if (!ok || c->close_cancelled)
		atomic_store(&c->cancelled, true);
	if (atomic_load(&c->cancelled))
		drop_queue_locked(c);
	maybe_done_unlock(c);
}

/* ---- new calls ---------------------------------------------------------------------------- */

static int arm_slot(struct request_slot *slot);

static void copy_auth(tau_rpc_call *c, grpc_auth_context *ctx);

static void copy_peer(tau_rpc_call *c)
{
	grpc_auth_context *ctx = grpc_call_auth_context(c->call);
	char *peer = grpc_call_get_peer(c->call);

	if (peer != NULL) {
		/* "ipv4:10.0.0.7:43242", "ipv6:[::1]:43242": one host, whatever its ports. The
		 * host goes after the address's NUL, in the same allocation. */
		size_t len = strlen(peer);
		const char *colon = strrchr(peer, ':');
		size_t n =
		        colon != NULL && colon > strchr(peer, ':') ? (size_t)(colon - peer) : len;

		c->peer_address = malloc(len + 1 + n + 1);
		if (c->peer_address != NULL) {
			memcpy(c->peer_address, peer, len + 1);
			memcpy(c->peer_address + len + 1, peer, n);
			c->peer_address[len + 1 + n] = '\0';
		}
		gpr_free(peer);
	}
	if (ctx != NULL)
		copy_auth(c, ctx);
	if (c->peer_identity != NULL)
		c->peer_key = c->peer_identity;
	else if (c->peer_address != NULL)
		c->peer_key = c->peer_address + strlen(c->peer_address) + 1;
}

static void copy_auth(tau_rpc_call *c, grpc_auth_context *ctx)
{
	{
		grpc_auth_property_iterator it =
		        grpc_auth_context_find_properties_by_name(ctx, "transport_security_type");
		const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);

		c->peer_tls = p != NULL && p->value_length == 3 && memcmp(p->value, "ssl", 3) == 0;
	}
	if (grpc_auth_context_peer_is_authenticated(ctx)) {
		grpc_auth_property_iterator it = grpc_auth_context_peer_identity(ctx);
		const grpc_auth_property *p = grpc_auth_property_iterator_next(&it);

		if (p != NULL)
			c->peer_identity = strndup(p->value, p->value_length);
		it = grpc_auth_context_find_properties_by_name(ctx, "x509_common_name");
		p = grpc_auth_property_iterator_next(&it);
		if (p != NULL)
			c->peer_cn = strndup(p->value, p->value_length);
	}
	grpc_auth_context_release(ctx);
}

static int copy_metadata(tau_rpc_call *c, const grpc_metadata_array *md, size_t max_bytes)
{
	size_t total = 0;
	struct md_block *b;
	char *p;

	if (md->count == 0)
		return 0;
	if (md->count > MAX_METADATA)
		return tau_error_set(TAU_ETOOBIG, "%zu metadata entries (cap %d)", md->count,
		                     MAX_METADATA);
	for (size_t i = 0; i < md->count; i++) {
		total += GRPC_SLICE_LENGTH(md->metadata[i].key) +
		         GRPC_SLICE_LENGTH(md->metadata[i].value);
		if (total > max_bytes)
			return tau_error_set(TAU_ETOOBIG,
			                     "request metadata over %zu bytes (a bearer token may "
			                     "have up to 16 KiB)",
			                     max_bytes);
	}
	/* One allocation: the block, its pairs, then each key and value with its NUL. */
	b = malloc(sizeof(*b) + md->count * sizeof(b->pairs[0]) + total + 2 * md->count);
	if (b == NULL)
		return tau_error_set(TAU_ENOMEM, "metadata");
	b->n = md->count;
	p = (char *)&b->pairs[md->count];
	for (size_t i = 0; i < md->count; i++) {
		const grpc_slice *kv[2] = {&md->metadata[i].key, &md->metadata[i].value};

		for (int j = 0; j < 2; j++) {
			size_t n = GRPC_SLICE_LENGTH(*kv[j]);

			memcpy(p, GRPC_SLICE_START_PTR(*kv[j]), n);
			p[n] = '\0';
			if (j == 0)
				b->pairs[i].key = p;
			else
				b->pairs[i].value = p;
			p += n + 1;
		}
	}
	atomic_store(&c->md, b);
	return 0;
}

static void start_call(struct request_slot *slot)
{
	tau_rpc_server *srv = slot->srv;
	struct method_entry *me = slot->method;
	grpc_byte_buffer *payload = slot->payload;
	tau_rpc_call *c = calloc(1, sizeof(*c));
	grpc_op ops[2];
	int rc;

	slot->payload = NULL;
	if (c == NULL) {
		/* Nothing we can say to the client without memory; drop the call. */
		grpc_call_cancel_with_status(slot->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
		                             "server out of memory", NULL);
		grpc_call_unref(slot->call);
		slot->call = NULL;
		grpc_metadata_array_destroy(&slot->md);
		grpc_metadata_array_init(&slot->md);
		if (payload)
			grpc_byte_buffer_destroy(payload);
		return;
	}
	c->close_tag.fn = on_close_done;
	c->recv_tag.fn = on_recv_done;
	c->send_tag.fn = on_send_done;
	c->status_tag.fn = on_status_done;
	c->srv = srv;
	c->method = me;
	c->call = slot->call;
	slot->call = NULL;
	pthread_mutex_init(&c->mu, NULL);
	atomic_init(&c->refs, 1);
	atomic_init(&c->cancelled, false);
	c->q_max = srv->opts.max_send_queue;
	atomic_init(&c->md, NULL);
	if (gpr_time_cmp(slot->deadline, gpr_inf_future(slot->deadline.clock_type)) != 0) {
		int64_t slack;

		c->has_deadline = true;
		c->deadline = gpr_convert_clock_type(slot->deadline, GPR_CLOCK_MONOTONIC);
		/* How late a cancel may come and still count as the deadline (end_reason). */
		slack = gpr_time_to_millis(
		                gpr_time_sub(c->deadline, gpr_now(GPR_CLOCK_MONOTONIC))) /
		        10;
		if (slack < DEADLINE_SLACK_MIN_MS)
			slack = DEADLINE_SLACK_MIN_MS;
		if (slack > DEADLINE_SLACK_MAX_MS)
			slack = DEADLINE_SLACK_MAX_MS;
		c->deadline_slack_ms = (int32_t)slack;
	}
	rc = copy_metadata(c, &slot->md, srv->opts.max_metadata_bytes);
	grpc_metadata_array_destroy(&slot->md);
	grpc_metadata_array_init(&slot->md);
	copy_peer(c);

	pthread_mutex_lock(&srv->mu);
	srv->live_calls++;
	pthread_mutex_unlock(&srv->mu);

	/* Headers now, and learn about the end of the call (cancel included) whenever it comes. */
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[1].data.recv_close_on_server.cancelled = &c->close_cancelled;
	pthread_mutex_lock(&c->mu);
	if (grpc_call_start_batch(c->call, ops, 2, &c->close_tag, NULL) != GRPC_CALL_OK) {
		/* Cannot happen on a fresh call; treat as cancelled. */
		c->closed = true;
		atomic_store(&c->cancelled, true);
		pthread_mutex_unlock(&c->mu);
		if (payload)
			grpc_byte_buffer_destroy(payload);
		pthread_mutex_lock(&c->mu);
		maybe_done_unlock(c);
		return;
	}
	c->pending++;
	/* Hold a pending count while the handler runs unlocked, so the call cannot end under it. */
	c->pending++;
	pthread_mutex_unlock(&c->mu);

	if (rc < 0) {
		/* Too many or too large headers: this stream only; the connection goes on. */
		if (rc == -TAU_ETOOBIG) {
			pthread_mutex_lock(&srv->mu);
			srv->stats.refused_metadata++;
			pthread_mutex_unlock(&srv->mu);
		}
		tau_rpc_call_finish(c,
		                    rc == -TAU_ENOMEM || rc == -TAU_ETOOBIG
		                            ? TAU_RPC_RESOURCE_EXHAUSTED
		                            : TAU_RPC_INVALID_ARGUMENT,
		                    tau_error_last()->msg);
		goto unpend;
	}
	if (!peer_take(srv, c)) {
		char msg[256];

		snprintf(msg, sizeof(msg), "too many calls open from %.160s (at most %d per peer)",
		         c->peer_key, srv->opts.max_calls_per_peer);
		tau_rpc_call_finish(c, TAU_RPC_RESOURCE_EXHAUSTED, msg);
		goto unpend;
	}
	if (me->m.on_start != NULL) {
		int verdict = me->m.on_start(c, me->m.ud);

		if (verdict != 0) {
			if (verdict < 0 || verdict > TAU_RPC_UNAUTHENTICATED)
				verdict = TAU_RPC_PERMISSION_DENIED;
			/* A no-op when the handler has finished the call itself. */
			tau_rpc_call_finish(c, (tau_rpc_code)verdict, "rejected");
			goto unpend;
		}
	}
	if (me->m.kind == TAU_RPC_UNARY || me->m.kind == TAU_RPC_SERVER_STREAM) {
		if (payload == NULL)
			tau_rpc_call_finish(c, TAU_RPC_INVALID_ARGUMENT, "missing request message");
		else
			deliver(c, payload);
	} else {
		pthread_mutex_lock(&c->mu);
		post_recv_locked(c);
		pthread_mutex_unlock(&c->mu);
	}
unpend:
	if (payload)
		grpc_byte_buffer_destroy(payload);
	pthread_mutex_lock(&c->mu);
	c->pending--;
	maybe_done_unlock(c);
}

static void on_unimplemented_done(struct tau_rpc_tag *t, bool ok)
{
	struct unimplemented_call *u = CONTAINER_OF(t, struct unimplemented_call, tag);
	tau_rpc_server *srv = u->srv;

	(void)ok;
	grpc_slice_unref(u->details);
	grpc_call_unref(u->call);
	free(u);
	server_slot_gone(srv);
}

static void answer_unimplemented(struct request_slot *slot)
{
	tau_rpc_server *srv = slot->srv;
	struct unimplemented_call *u = calloc(1, sizeof(*u));
	grpc_op ops[3];
	char msg[256];
	char *method = dup_slice(slot->details.method);

	snprintf(msg, sizeof(msg), "unknown method %.200s", method ? method : "?");
	free(method);
	if (u == NULL) {
		grpc_call_cancel_with_status(slot->call, GRPC_STATUS_UNIMPLEMENTED,
		                             "unknown method", NULL);
		grpc_call_unref(slot->call);
		slot->call = NULL;
		return;
	}
	u->tag.fn = on_unimplemented_done;
	u->srv = srv;
	u->call = slot->call;
	slot->call = NULL;
	u->details = grpc_slice_from_copied_string(
	        tau_rpc_utf8_valid(msg, strlen(msg)) ? msg : "unknown method");
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[1].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
	ops[1].data.send_status_from_server.status = GRPC_STATUS_UNIMPLEMENTED;
	ops[1].data.send_status_from_server.status_details = &u->details;
	ops[2].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
	ops[2].data.recv_close_on_server.cancelled = &u->cancelled;
	pthread_mutex_lock(&srv->mu);
	srv->live_slots++;
	pthread_mutex_unlock(&srv->mu);
	if (grpc_call_start_batch(u->call, ops, 3, &u->tag, NULL) != GRPC_CALL_OK)
		on_unimplemented_done(&u->tag, false);
}

static void free_slot(struct request_slot *slot)
{
	tau_rpc_server *srv = slot->srv;

	if (slot->call != NULL)
		grpc_call_unref(slot->call);
	if (slot->payload != NULL)
		grpc_byte_buffer_destroy(slot->payload);
	grpc_metadata_array_destroy(&slot->md);
	grpc_call_details_destroy(&slot->details);
	free(slot);
	server_slot_gone(srv);
}

static void on_request_done(struct tau_rpc_tag *t, bool ok)
{
	struct request_slot *slot = CONTAINER_OF(t, struct request_slot, tag);

	if (!ok) {
		/* The server is shutting down: this request will never be matched. */
		free_slot(slot);
		return;
	}
	if (slot->method == NULL) {
		answer_unimplemented(slot);
		grpc_call_details_destroy(&slot->details);
		grpc_call_details_init(&slot->details);
		grpc_metadata_array_destroy(&slot->md);
		grpc_metadata_array_init(&slot->md);
	} else {
		start_call(slot);
	}
	/* Re-arm the same slot; a failure (shutdown under way) retires it. */
	if (arm_slot(slot) < 0)
		free_slot(slot);
}

/* Post the slot's request. Returns 0, or -TAU_EIO when the core refused (shutdown). */
static int arm_slot(struct request_slot *slot)
{
	tau_rpc_server *srv = slot->srv;
	grpc_call_error err;

	slot->call = NULL;
	slot->payload = NULL;
	if (slot->method == NULL) {
		err = grpc_server_request_call(srv->server, &slot->call, &slot->details, &slot->md,
		                               srv->cq, srv->cq, &slot->tag);
	} else {
		bool preread = slot->method->m.kind == TAU_RPC_UNARY ||
		               slot->method->m.kind == TAU_RPC_SERVER_STREAM;

		err = grpc_server_request_registered_call(
		        srv->server, slot->method->handle, &slot->call, &slot->deadline, &slot->md,
		        preread ? &slot->payload : NULL, srv->cq, srv->cq, &slot->tag);
	}
	if (err != GRPC_CALL_OK)
		return tau_error_set(TAU_EIO, "request_call: error %d", (int)err);
	return 0;
}

static int new_slot(tau_rpc_server *srv, struct method_entry *me)
{
	struct request_slot *slot = calloc(1, sizeof(*slot));

	if (slot == NULL)
		return tau_error_set(TAU_ENOMEM, "request slot");
	slot->tag.fn = on_request_done;
	slot->srv = srv;
	slot->method = me;
	grpc_metadata_array_init(&slot->md);
	grpc_call_details_init(&slot->details);
	pthread_mutex_lock(&srv->mu);
	srv->live_slots++;
	pthread_mutex_unlock(&srv->mu);
	if (arm_slot(slot) < 0) {
		free_slot(slot);
		return -TAU_EIO;
	}
	return 0;
}

/* ---- server ------------------------------------------------------------------------------- */

static void on_shutdown_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_server *srv = CONTAINER_OF(t, tau_rpc_server, shutdown_tag);

	(void)ok;
	pthread_mutex_lock(&srv->mu);
	srv->shutdown_notified = true;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->mu);
}

static void *cq_thread(void *arg)
{
	tau_rpc_server *srv = arg;

	for (;;) {
		grpc_event ev = grpc_completion_queue_next(
		        srv->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
		struct tau_rpc_tag *t;

		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type != GRPC_OP_COMPLETE)
			continue;
		t = ev.tag;
		t->fn(t, ev.success != 0);
	}
	return NULL;
}

size_t tau_rpc_server_channel_args(grpc_arg *args, tau_rpc_server_opts *o)
{
	size_t n = 0;

	if (o->max_message_bytes == 0)
		o->max_message_bytes = TAU_RPC_DEFAULT_MAX_MESSAGE;
	if (o->max_message_bytes > (size_t)INT32_MAX)
		o->max_message_bytes = (size_t)INT32_MAX;
	if (o->max_send_queue == 0)
		o->max_send_queue = DEFAULT_SEND_QUEUE;
	if (o->max_metadata_bytes == 0)
		o->max_metadata_bytes = TAU_RPC_DEFAULT_MAX_METADATA;
	if (o->max_metadata_bytes > (size_t)INT32_MAX / 4)
		o->max_metadata_bytes = (size_t)INT32_MAX / 4;
	if (o->max_calls_per_peer < 0)
		o->max_calls_per_peer = 0;
	if (o->keepalive_time_ms <= 0)
		o->keepalive_time_ms = DEFAULT_KEEPALIVE_MS;
	if (o->keepalive_timeout_ms <= 0)
		o->keepalive_timeout_ms = DEFAULT_KA_TIMEOUT_MS;
	if (o->min_client_ping_interval_ms <= 0)
		o->min_client_ping_interval_ms = DEFAULT_MIN_PING_MS;
	if (o->stream_window_bytes <= 0)
		o->stream_window_bytes = DEFAULT_WINDOW_BYTES;
	if (o->requests_per_method <= 0)
		o->requests_per_method = DEFAULT_REQUESTS_ARMED;
	if (o->cq_threads <= 0)
		o->cq_threads = 1;
	if (o->cq_threads > TAU_RPC_MAX_CQ_THREADS)
		o->cq_threads = TAU_RPC_MAX_CQ_THREADS;
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
	                    (int)o->max_message_bytes);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
	                    (int)o->max_message_bytes);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_KEEPALIVE_TIME_MS, o->keepalive_time_ms);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_KEEPALIVE_TIMEOUT_MS, o->keepalive_timeout_ms);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
	                    o->min_client_ping_interval_ms);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
	/* Without BDP probing the receive window stays at the lookahead: bounded memory. */
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_HTTP2_BDP_PROBE, 0);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
	                    o->stream_window_bytes);
	/*
	 * grpc 1.51 stops decoding a header block over its limit, losing the connection's HPACK
	 * state (every stream on it ends): keep that limit far above ours, which refuses one
	 * stream and leaves the connection alone.
	 */
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_METADATA_SIZE,
	                    (int)(o->max_metadata_bytes * 2 > TAU_RPC_CORE_METADATA_MIN
	                                  ? o->max_metadata_bytes * 2
	                                  : TAU_RPC_CORE_METADATA_MIN));
	if (o->max_concurrent_streams > 0)
		tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_CONCURRENT_STREAMS,
		                    o->max_concurrent_streams);
	return n;
}

int tau_rpc_server_new(tau_rpc_server **out, const tau_rpc_server_opts *opts)
{
	tau_rpc_server *srv = calloc(1, sizeof(*srv));
	grpc_arg args[TAU_RPC_SERVER_MAX_ARGS];
	grpc_channel_args cargs;

	if (srv == NULL)
		return tau_error_set(TAU_ENOMEM, "rpc server");
	if (opts != NULL)
		srv->opts = *opts;
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->cond, NULL);
	atomic_init(&srv->sends_coalesced, 0);
	srv->shutdown_tag.fn = on_shutdown_done;
	if (tau_hmap_init(&srv->peers, 64) < 0) {
		pthread_mutex_destroy(&srv->mu);
		pthread_cond_destroy(&srv->cond);
		free(srv);
		return tau_error_set(TAU_ENOMEM, "rpc server");
	}

	grpc_init();
	cargs.num_args = tau_rpc_server_channel_args(args, &srv->opts);
	cargs.args = args;
	srv->server = grpc_server_create(&cargs, NULL);
	srv->cq = grpc_completion_queue_create_for_next(NULL);
	if (srv->server == NULL || srv->cq == NULL) {
		tau_rpc_server_free(srv);
		return tau_error_set(TAU_ENOMEM, "grpc server");
	}
	grpc_server_register_completion_queue(srv->server, srv->cq, NULL);
	*out = srv;
	return 0;
}

int tau_rpc_server_add_method(tau_rpc_server *srv, const tau_rpc_method *method)
{
	struct method_entry *me;
	struct method_entry **grown;
	grpc_server_register_method_payload_handling payload;

	if (srv->started)
		return tau_error_set(TAU_EINVAL, "methods must be added before start");
	if (method->path == NULL || method->path[0] != '/' || strchr(method->path + 1, '/') == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "method path \"%s\" is not /package.Service/Method",
		                     method->path ? method->path : "(null)");
	if (method->request == NULL || method->on_message == NULL)
		return tau_error_set(TAU_EINVAL, "%s: request type and on_message are required",
		                     method->path);
	for (size_t i = 0; i < srv->n_methods; i++)
		if (strcmp(srv->methods[i]->path, method->path) == 0)
			return tau_error_set(TAU_EINVAL, "%s registered twice", method->path);
	me = calloc(1, sizeof(*me));
	grown = realloc(srv->methods, (srv->n_methods + 1) * sizeof(*grown));
	if (me == NULL || grown == NULL) {
		free(me);
		if (grown != NULL)
			srv->methods = grown;
		return tau_error_set(TAU_ENOMEM, "method %s", method->path);
	}
	srv->methods = grown;
	me->m = *method;
	me->path = strdup(method->path);
	if (me->path == NULL) {
		free(me);
		return tau_error_set(TAU_ENOMEM, "method %s", method->path);
	}
	me->m.path = me->path;
	payload = (method->kind == TAU_RPC_UNARY || method->kind == TAU_RPC_SERVER_STREAM)
	                  ? GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER
	                  : GRPC_SRM_PAYLOAD_NONE;
	me->handle = grpc_server_register_method(srv->server, me->path, NULL, payload, 0);
	if (me->handle == NULL) {
		free(me->path);
		free(me);
		return tau_error_set(TAU_EINVAL, "grpc refused method %s", method->path);
	}
	srv->methods[srv->n_methods++] = me;
	return 0;
}

int tau_rpc_server_listen(tau_rpc_server *srv, const char *addr, const tau_rpc_server_tls *tls,
                          int *port_out)
{
	grpc_server_credentials *creds;
	int port;

	if (srv->started)
		return tau_error_set(TAU_EINVAL, "listen must come before start");
	if (tls == NULL) {
		creds = grpc_insecure_server_credentials_create();
	} else {
		grpc_ssl_pem_key_cert_pair pair;

		if (tls->cert_pem == NULL || tls->key_pem == NULL)
			return tau_error_set(TAU_EINVAL, "%s: TLS needs a certificate and a key",
			                     addr);
		if (tls->require_client_cert && tls->client_ca_pem == NULL)
			return tau_error_set(TAU_EINVAL,
			                     "%s: client certs required but no client CA", addr);
		pair.private_key = tls->key_pem;
		pair.cert_chain = tls->cert_pem;
		creds = grpc_ssl_server_credentials_create_ex(
		        tls->client_ca_pem, &pair, 1,
		        tls->client_ca_pem == NULL ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
		        : tls->require_client_cert
		                ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
		                : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY,
		        NULL);
	}
	if (creds == NULL)
		return tau_error_set(TAU_EINVAL, "%s: cannot create credentials", addr);
	port = grpc_server_add_http2_port(srv->server, addr, creds);
	grpc_server_credentials_release(creds);
	if (port == 0)
		return tau_error_set(TAU_EIO, "cannot listen on %s", addr);
	srv->listening = true;
	if (port_out != NULL)
		*port_out = port;
	return 0;
}

int tau_rpc_server_start(tau_rpc_server *srv)
{
	int rc;

	if (srv->started)
		return tau_error_set(TAU_EINVAL, "server already started");
	if (!srv->listening)
		return tau_error_set(TAU_EINVAL, "server is not listening anywhere");
	grpc_server_start(srv->server);
	srv->started = true;
	/* Arm before the thread runs: nothing can complete sooner than it starts pumping. */
	for (size_t i = 0; i < srv->n_methods; i++) {
		for (int k = 0; k < srv->opts.requests_per_method; k++) {
			rc = new_slot(srv, srv->methods[i]);
			if (rc < 0)
				return rc;
		}
	}
	rc = new_slot(srv, NULL);
	if (rc < 0)
		return rc;
	if (pthread_create(&srv->thread, NULL, cq_thread, srv) != 0)
		return tau_error_set(TAU_EIO, "cannot start the rpc thread: %s", strerror(errno));
	srv->thread_started = true;
	while (srv->n_extra < srv->opts.cq_threads - 1) {
		if (pthread_create(&srv->extra[srv->n_extra], NULL, cq_thread, srv) != 0)
			return tau_error_set(TAU_EIO, "cannot start rpc thread %d: %s",
			                     srv->n_extra + 2, strerror(errno));
		srv->n_extra++;
	}
	return 0;
}

static void wait_until_locked(tau_rpc_server *srv, bool (*cond)(tau_rpc_server *), int timeout_ms)
{
	struct timespec ts;

	if (timeout_ms < 0) {
		while (!cond(srv))
			pthread_cond_wait(&srv->cond, &srv->mu);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (!cond(srv))
		if (pthread_cond_timedwait(&srv->cond, &srv->mu, &ts) != 0)
			break;
}

static bool drained(tau_rpc_server *srv)
{
	return srv->shutdown_notified && srv->live_calls == 0;
}

static bool all_gone(tau_rpc_server *srv)
{
	return srv->shutdown_notified && srv->live_calls == 0 && srv->live_slots == 0;
}

void tau_rpc_server_shutdown(tau_rpc_server *srv, int grace_ms)
{
	if (srv == NULL || srv->shut)
		return;
	srv->shut = true;
	if (srv->server != NULL && srv->cq != NULL) {
		if (!srv->started) {
			/* Never started: shutdown still has to run for destroy to be legal. */
			grpc_server_start(srv->server);
			srv->started = true;
		}
		if (!srv->thread_started && pthread_create(&srv->thread, NULL, cq_thread, srv) == 0)
			srv->thread_started = true;
		grpc_server_shutdown_and_notify(srv->server, srv->cq, &srv->shutdown_tag);
		pthread_mutex_lock(&srv->mu);
		if (grace_ms > 0)
			wait_until_locked(srv, drained, grace_ms);
		pthread_mutex_unlock(&srv->mu);
		/* Open streams (Report, Watch) never end on their own. */
		grpc_server_cancel_all_calls(srv->server);
		pthread_mutex_lock(&srv->mu);
		wait_until_locked(srv, all_gone, -1);
		pthread_mutex_unlock(&srv->mu);
		grpc_server_destroy(srv->server);
		srv->server = NULL;
	}
	if (srv->cq != NULL) {
		grpc_completion_queue_shutdown(srv->cq);
		for (; srv->n_extra > 0; srv->n_extra--)
			pthread_join(srv->extra[srv->n_extra - 1], NULL);
		if (srv->thread_started)
			pthread_join(srv->thread, NULL);
		else
			while (grpc_completion_queue_next(srv->cq,
			                                  gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
			               .type != GRPC_QUEUE_SHUTDOWN)
				;
		srv->thread_started = false;
		grpc_completion_queue_destroy(srv->cq);
		srv->cq = NULL;
	}
}

void tau_rpc_server_free(tau_rpc_server *srv)
{
	if (srv == NULL)
		return;
	tau_rpc_server_shutdown(srv, 0);
	if (srv->server != NULL)
		grpc_server_destroy(srv->server);
	for (size_t i = 0; i < srv->n_methods; i++) {
		free(srv->methods[i]->path);
		free(srv->methods[i]);
	}
	free(srv->methods);
	{
		tau_hmap_iter it;
		tau_hmap_node *n;

		tau_hmap_iter_init(&it, &srv->peers);
		while ((n = tau_hmap_iter_next(&it)) != NULL)
			free(TAU_HMAP_ENTRY(n, struct peer_calls, node));
		tau_hmap_destroy(&srv->peers);
	}
	pthread_mutex_destroy(&srv->mu);
	pthread_cond_destroy(&srv->cond);
	free(srv);
	grpc_shutdown();
}

size_t tau_rpc_server_live_calls(tau_rpc_server *srv)
{
	size_t n;

	pthread_mutex_lock(&srv->mu);
	n = srv->live_calls;
	pthread_mutex_unlock(&srv->mu);
	return n;
}

void tau_rpc_server_stats_get(tau_rpc_server *srv, tau_rpc_server_stats *out)
{
	pthread_mutex_lock(&srv->mu);
	*out = srv->stats;
	pthread_mutex_unlock(&srv->mu);
	out->sends_coalesced = atomic_load(&srv->sends_coalesced);
}

/* ---- call accessors ----------------------------------------------------------------------- */

const char *tau_rpc_call_peer_key(const tau_rpc_call *call)
{
	return call->peer_key;
}

const char *tau_rpc_call_method(const tau_rpc_call *call)
{
	return call->method->path;
}

const char *tau_rpc_call_metadata(const tau_rpc_call *call, const char *key)
{
	size_t klen = strlen(key);
	const struct md_block *b = atomic_load(&((tau_rpc_call *)call)->md);

	if (b == NULL || (klen > 4 && strcmp(key + klen - 4, "-bin") == 0))
		return NULL;
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->pairs[i].key, key) == 0)
			return b->pairs[i].value;
	return NULL;
}

void tau_rpc_call_drop_metadata(tau_rpc_call *call)
{
	free(atomic_exchange(&call->md, NULL));
}

const char *tau_rpc_call_bearer_token(const tau_rpc_call *call)
{
	const char *v = tau_rpc_call_metadata(call, "authorization");

	if (v == NULL || strncasecmp(v, "Bearer ", 7) != 0)
		return NULL;
	v += 7;
	while (*v == ' ')
		v++;
	return *v ? v : NULL;
}

const char *tau_rpc_call_peer_identity(const tau_rpc_call *call)
{
	return call->peer_identity;
}

const char *tau_rpc_call_peer_common_name(const tau_rpc_call *call)
{
	return call->peer_cn;
}

bool tau_rpc_call_peer_is_tls(const tau_rpc_call *call)
{
	return call->peer_tls;
}

const char *tau_rpc_call_peer_address(const tau_rpc_call *call)
{
	return call->peer_address;
}

int64_t tau_rpc_call_ms_left(const tau_rpc_call *call)
{
	gpr_timespec left;
	int64_t ms;

	if (!call->has_deadline)
		return -1;
	left = gpr_time_sub(call->deadline, gpr_now(GPR_CLOCK_MONOTONIC));
	ms = (int64_t)left.tv_sec * 1000 + left.tv_nsec / 1000000;
	return ms > 0 ? ms : 0;
}

void tau_rpc_call_set_user(tau_rpc_call *call, void *user)
{
	call->user = user;
}

void *tau_rpc_call_user(const tau_rpc_call *call)
{
	return call->user;
}
