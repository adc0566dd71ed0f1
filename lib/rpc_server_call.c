/*
 * rpc_server_call.c - one server call's state machine: start, send, receive, finish.
 *
 * Each call owns four tags (close, recv, send, status), because the core allows only one
 * operation of each kind in flight per call, and counts its batches in flight. The call is
 * finished with the core (on_done, grpc_call_unref) only when the close has been seen AND that
 * count is zero: tags can complete in any order, and freeing on the first "final-looking" event
 * is a use-after-free.
 *
 * Threads: the per-call mutex guards the send queue and flags, so other threads may send and
 * finish (the core allows grpc_call_start_batch from any thread). Handler callbacks are called
 * without the mutex held so they can send.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tau/clock.h"

#include "rpc_server_internal.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/mem.h"
#include "tau/rpc_server.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>

#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/*
 * A client whose deadline passes cancels the stream itself, and its RST_STREAM can beat the
 * server's own timer (the server's deadline starts when the headers arrive). So a cancel this
 * close to the deadline counts as the deadline: a tenth of the call's time, 50 ms .. 1 s.
 */
#define DEADLINE_SLACK_MIN_MS 50
#define DEADLINE_SLACK_MAX_MS 1000

/* Decode a received buffer; returns 0 or a gRPC status code with detail in tau_error_last. */
static tau_rpc_code decode_buffer(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
                                  grpc_byte_buffer *bb, size_t max)
{
	grpc_byte_buffer_reader reader;
	grpc_slice all, *first = NULL;
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
	/* A message in one slice (a small one, the usual case) is decoded where it lies. */
	if (grpc_byte_buffer_reader_peek(&reader, &first) && GRPC_SLICE_LENGTH(*first) == len) {
		rc = tau_rpc_message_decode(out, desc, GRPC_SLICE_START_PTR(*first), len, max);
		grpc_byte_buffer_reader_destroy(&reader);
	} else {
		grpc_byte_buffer_reader_destroy(&reader);
		if (!grpc_byte_buffer_reader_init(&reader, bb)) {
			tau_error_set(TAU_EINVAL, "cannot read message (bad compression?)");
			return TAU_RPC_INVALID_ARGUMENT;
		}
		all = grpc_byte_buffer_reader_readall(&reader);
		grpc_byte_buffer_reader_destroy(&reader);
		rc = tau_rpc_message_decode(out, desc, GRPC_SLICE_START_PTR(all),
		                            GRPC_SLICE_LENGTH(all), max);
		grpc_slice_unref(all);
	}
	if (rc == -TAU_EINTERNAL)
		return TAU_RPC_INTERNAL;
	if (rc == -TAU_ETOOBIG)
		return TAU_RPC_RESOURCE_EXHAUSTED;
	if (rc == -TAU_ENOMEM)
		return TAU_RPC_RESOURCE_EXHAUSTED;
	if (rc < 0)
		return TAU_RPC_INVALID_ARGUMENT;
	return TAU_RPC_OK;
}

/* ---- call lifetime ------------------------------------------------------------------------ */

static void call_free(tau_rpc_call *c)
{
	tau_rpc_ring_free(&c->sendq);
	tau_free_many(atomic_load(&c->md), c->peer_identity, c->peer_cn, c->peer_address);
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
	tau_rpc_server_call_gone(srv, c);
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
	return tau_rpc_ring_sends_pending(&c->mu, &c->sendq, &c->send_busy);
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
	uint64_t now = tau_clock_mono_ms(), n;
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

/* ---- a new call ------------------------------------------------------------------------- */

void tau_rpc_server_call_start(struct request_slot *slot)
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
	rc = tau_rpc_call_copy_metadata(c, &slot->md, srv->opts.max_metadata_bytes);
	grpc_metadata_array_destroy(&slot->md);
	grpc_metadata_array_init(&slot->md);
	tau_rpc_call_copy_peer(c);

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
	if (!tau_rpc_server_peer_take(srv, c)) {
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

/* ---- call accessors ----------------------------------------------------------------------- */

const char *tau_rpc_call_method(const tau_rpc_call *call)
{
	return call->method->path;
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
