/*
 * rpc_client.c - gRPC client over the C core: channels, blocking unary calls, streams that
 * reconnect.
 *
 * Unary calls use a private pluck completion queue each, so any thread may block in one.
 * Streams share their channel's completion queue, pumped by one thread that the first stream
 * starts. That thread is also the stream timer: the C core has no alarm, so the loop's wait
 * deadline is the earliest pending reconnect. A stream "attempt" is one grpc_call; when its
 * status has come back and no batch is in flight, the call is dropped, the owner is told, and
 * (with reconnect) the next attempt is scheduled after a jittered exponential backoff that
 * resets once the server has sent a message. Sends go through a bounded per-attempt queue
 * because the core allows one send in flight per call.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tau/clock.h"

#include "tau/error.h"
#include "tau/mem.h"
#include "tau/rpc_client.h"
#include "tau/sync.h"

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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS      30000
#define DEFAULT_KEEPALIVE_MS    30000
#define DEFAULT_KA_TIMEOUT_MS   10000
#define DEFAULT_RECONNECT_MIN   200
#define DEFAULT_RECONNECT_MAX   10000
#define DEFAULT_BACKOFF_INITIAL 500
#define DEFAULT_BACKOFF_MAX     30000
#define DEFAULT_SEND_QUEUE      1024
#define BACKOFF_MULTIPLIER      1.6
#define BACKOFF_JITTER          0.2

struct tau_rpc_channel {
	grpc_channel *channel;
	size_t max_message;
	pthread_mutex_t mu;      /* streams, cq thread; taken before a stream's mutex */
	pthread_mutex_t auth_mu; /* auth_value only; innermost */
	char *auth_value;        /* "Bearer <token>" or NULL */
	grpc_completion_queue *cq;
	pthread_t thread;
	bool thread_started;
	tau_rpc_stream *streams;
	/*
	 * Streams with a reconnect scheduled (retry_at_ms != 0). The CQ thread walks the stream
	 * list for due reconnects only when this is non-zero: a walk per completion made the
	 * thread O(streams) per message (10,000 streams on a channel: the client was the limit).
	 */
	atomic_int retries;
};

struct tau_rpc_stream {
	struct tau_rpc_tag start_tag;
	struct tau_rpc_tag recv_tag;
	struct tau_rpc_tag send_tag;
	struct tau_rpc_tag close_send_tag;
	struct tau_rpc_tag status_tag;
	tau_rpc_channel *ch;
	tau_rpc_stream_opts o;
	char *path;
	char *auth_value; /* "Bearer <opts.bearer_token>", or NULL: the channel's */
	uint8_t *request;
	size_t request_len;
	bool has_request;

	pthread_mutex_t mu;
	pthread_cond_t cond;
	grpc_call *call; /* current attempt, NULL between attempts */
	int pending;
	bool connected;
	bool ever_connected; /* some attempt reached the server: wait_for_ready applies */
	bool status_seen;
	bool freeing;
	bool in_callback;
	bool send_busy;
	bool half_close_wanted;
	bool half_close_sent;
	tau_rpc_send_ring sendq;
	grpc_byte_buffer *sending;
	grpc_byte_buffer *recv_buf;
	grpc_metadata_array init_md;
	grpc_metadata_array trail_md;
	grpc_status_code st;
	grpc_slice details;
	tau_rpc_status local_status; /* set when we end an attempt ourselves */
	bool have_local_status;
	int attempt;
	int64_t retry_at_ms; /* 0: no attempt scheduled */
	uint64_t rng;
	tau_rpc_stream *next;
};

/* ---- helpers ------------------------------------------------------------------------------ */

static gpr_timespec ms_from_now(int64_t ms)
{
	return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static grpc_byte_buffer *bytes_to_buffer(const uint8_t *data, size_t len)
{
	grpc_slice slice = grpc_slice_from_copied_buffer((const char *)data, len);
	grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);

	grpc_slice_unref(slice);
	return bb;
}

/* Copy a buffer's bytes out. Returns 0 or -TAU_ENOMEM / -TAU_EINVAL. */
static int buffer_to_bytes(uint8_t **out, size_t *out_len, grpc_byte_buffer *bb)
{
	grpc_byte_buffer_reader reader;
	grpc_slice all;
	size_t n;
	uint8_t *p;

	if (!grpc_byte_buffer_reader_init(&reader, bb))
		return tau_error_set(TAU_EINVAL, "cannot read response");
	all = grpc_byte_buffer_reader_readall(&reader);
	grpc_byte_buffer_reader_destroy(&reader);
	n = GRPC_SLICE_LENGTH(all);
	p = malloc(n ? n : 1);
	if (p == NULL) {
		grpc_slice_unref(all);
		return tau_error_set(TAU_ENOMEM, "response of %zu bytes", n);
	}
	memcpy(p, GRPC_SLICE_START_PTR(all), n);
	grpc_slice_unref(all);
	*out = p;
	*out_len = n;
	return 0;
}

static void fill_status(tau_rpc_status *st, grpc_status_code code, grpc_slice details)
{
	size_t n = GRPC_SLICE_LENGTH(details);

	st->code = (tau_rpc_code)code;
	if (n >= sizeof(st->message))
		n = sizeof(st->message) - 1;
	memcpy(st->message, GRPC_SLICE_START_PTR(details), n);
	st->message[n] = '\0';
}

static int status_to_error(const tau_rpc_status *st, const char *path)
{
	int code;

	switch (st->code) {
	case TAU_RPC_OK:
		return 0;
	case TAU_RPC_DEADLINE_EXCEEDED:
		code = TAU_ETIMEOUT;
		break;
	case TAU_RPC_UNAUTHENTICATED:
	case TAU_RPC_PERMISSION_DENIED:
		code = TAU_EPERM;
		break;
	case TAU_RPC_NOT_FOUND:
		code = TAU_ENOTFOUND;
		break;
	case TAU_RPC_INVALID_ARGUMENT:
		code = TAU_EINVAL;
		break;
	case TAU_RPC_RESOURCE_EXHAUSTED:
		code = TAU_ETOOBIG;
		break;
	case TAU_RPC_UNAVAILABLE:
		code = TAU_EAGAIN;
		break;
	default:
		code = TAU_EIO;
		break;
	}
	return tau_error_set(code, "%s: %s: %s", path, tau_rpc_code_name((int)st->code),
	                     st->message);
}

/* The authorization entry for a call, if a token is set: *value must be unref'd by caller. */
static size_t auth_metadata(tau_rpc_channel *ch, grpc_metadata *md)
{
	size_t n = 0;

	pthread_mutex_lock(&ch->auth_mu);
	if (ch->auth_value != NULL) {
		memset(md, 0, sizeof(*md));
		md->key = grpc_slice_from_static_string("authorization");
		md->value = grpc_slice_from_copied_string(ch->auth_value);
		n = 1;
	}
	pthread_mutex_unlock(&ch->auth_mu);
	return n;
}

/* ---- channel ------------------------------------------------------------------------------ */

int tau_rpc_channel_new(tau_rpc_channel **out, const tau_rpc_channel_opts *opts)
{
	tau_rpc_channel *ch;
	grpc_channel_credentials *creds;
	grpc_arg args[12];
	grpc_channel_args cargs;
	size_t n = 0;
	size_t max;
	int reconnect_min;

	if (opts == NULL || opts->target == NULL || opts->target[0] == '\0')
		return tau_error_set(TAU_EINVAL, "channel needs a target");
	if ((opts->cert_pem == NULL) != (opts->key_pem == NULL))
		return tau_error_set(TAU_EINVAL, "%s: client certificate and key go together",
		                     opts->target);
	if (opts->cert_pem != NULL && opts->ca_pem == NULL)
		return tau_error_set(TAU_EINVAL, "%s: a client certificate needs TLS (ca_pem)",
		                     opts->target);
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return tau_error_set(TAU_ENOMEM, "channel");
	max = opts->max_message_bytes ? opts->max_message_bytes : TAU_RPC_DEFAULT_MAX_MESSAGE;
	if (max > (size_t)INT32_MAX)
		max = (size_t)INT32_MAX;
	ch->max_message = max;
	reconnect_min = opts->reconnect_min_ms > 0 ? opts->reconnect_min_ms : DEFAULT_RECONNECT_MIN;
	pthread_mutex_init(&ch->mu, NULL);
	pthread_mutex_init(&ch->auth_mu, NULL);
	grpc_init();

	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, (int)max);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, (int)max);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_KEEPALIVE_TIME_MS,
	                    opts->keepalive_time_ms > 0 ? opts->keepalive_time_ms
	                                                : DEFAULT_KEEPALIVE_MS);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
	                    opts->keepalive_timeout_ms > 0 ? opts->keepalive_timeout_ms
	                                                   : DEFAULT_KA_TIMEOUT_MS);
	/* Keep pinging idle long-lived streams: that is how a dead aggregator is noticed. */
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, reconnect_min);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, reconnect_min);
	tau_rpc_set_arg_int(&args[n++], GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
	                    opts->reconnect_max_ms > 0 ? opts->reconnect_max_ms
	                                               : DEFAULT_RECONNECT_MAX);
	if (opts->own_connection)
		tau_rpc_set_arg_int(&args[n++], GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
	if (opts->server_name_override != NULL) {
		args[n].type = GRPC_ARG_STRING;
		args[n].key = (char *)GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
		args[n].value.string = (char *)opts->server_name_override;
		n++;
	}
	cargs.num_args = n;
	cargs.args = args;

	if (opts->ca_pem != NULL) {
		grpc_ssl_pem_key_cert_pair pair = {opts->key_pem, opts->cert_pem};

		creds = grpc_ssl_credentials_create(
		        opts->ca_pem, opts->cert_pem != NULL ? &pair : NULL, NULL, NULL);
	} else {
		creds = grpc_insecure_credentials_create();
	}
	if (creds == NULL) {
		tau_rpc_channel_free(ch);
		return tau_error_set(TAU_EINVAL, "%s: cannot create credentials", opts->target);
	}
	ch->channel = grpc_channel_create(opts->target, creds, &cargs);
	grpc_channel_credentials_release(creds);
	if (ch->channel == NULL) {
		tau_rpc_channel_free(ch);
		return tau_error_set(TAU_EINVAL, "%s: cannot create channel", opts->target);
	}
	*out = ch;
	return 0;
}

/* "Bearer <token>" into *out (malloc'd), checked to be a legal header value. */
static int bearer_value(char **out, const char *token)
{
	size_t n = strlen(token) + sizeof("Bearer ");
	char *value = malloc(n);
	grpc_slice probe;

	if (value == NULL)
		return tau_error_set(TAU_ENOMEM, "bearer token");
	snprintf(value, n, "Bearer %s", token);
	probe = grpc_slice_from_static_string(value);
	if (!grpc_header_nonbin_value_is_legal(probe) || token[0] == '\0') {
		free(value);
		return tau_error_set(TAU_EINVAL, "bearer token is not a legal header value");
	}
	*out = value;
	return 0;
}

int tau_rpc_channel_set_bearer_token(tau_rpc_channel *ch, const char *token)
{
	char *value = NULL;

	if (token != NULL) {
		int rc = bearer_value(&value, token);

		if (rc < 0)
			return rc;
	}
	pthread_mutex_lock(&ch->auth_mu);
	free(ch->auth_value);
	ch->auth_value = value;
	pthread_mutex_unlock(&ch->auth_mu);
	return 0;
}

int tau_rpc_channel_free(tau_rpc_channel *ch)
{
	bool busy;

	if (ch == NULL)
		return 0;
	/* Checked in every build: freeing under live streams is a use-after-free on the CQ thread.
	 */
	pthread_mutex_lock(&ch->mu);
	busy = ch->streams != NULL;
	pthread_mutex_unlock(&ch->mu);
	if (busy)
		return tau_error_set(
		        TAU_EINVAL,
		        "tau_rpc_channel_free: the channel still has streams; free them "
		        "first (the channel is left as it was)");
	if (ch->cq != NULL) {
		grpc_completion_queue_shutdown(ch->cq);
		if (ch->thread_started)
			pthread_join(ch->thread, NULL);
		grpc_completion_queue_destroy(ch->cq);
	}
	if (ch->channel != NULL)
		grpc_channel_destroy(ch->channel);
	free(ch->auth_value);
	pthread_mutex_destroy(&ch->mu);
	pthread_mutex_destroy(&ch->auth_mu);
	free(ch);
	grpc_shutdown();
	return 0;
}

/* ---- unary -------------------------------------------------------------------------------- */

int tau_rpc_unary_raw(uint8_t **out, size_t *out_len, tau_rpc_channel *ch, const char *path,
                      const uint8_t *request, size_t len, int timeout_ms, tau_rpc_status *status)
{
	grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
	grpc_slice method = grpc_slice_from_copied_string(path);
	grpc_call *call;
	grpc_metadata md[1];
	size_t n_md;
	grpc_op ops[6];
	grpc_metadata_array init_md, trail_md;
	grpc_byte_buffer *send_bb = NULL;
	grpc_byte_buffer *recv_bb = NULL;
	grpc_status_code code = GRPC_STATUS_UNKNOWN;
	grpc_slice details = grpc_empty_slice();
	const char *error_string = NULL;
	tau_rpc_status local;
	grpc_event ev;
	int rc;

	if (status == NULL)
		status = &local;
	memset(status, 0, sizeof(*status));
	if (timeout_ms <= 0)
		timeout_ms = DEFAULT_TIMEOUT_MS;
	call = grpc_channel_create_call(ch->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method,
	                                NULL, ms_from_now(timeout_ms), NULL);
	grpc_slice_unref(method);
	grpc_metadata_array_init(&init_md);
	grpc_metadata_array_init(&trail_md);
	send_bb = bytes_to_buffer(request, len);
	n_md = auth_metadata(ch, md);

	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = n_md;
	ops[0].data.send_initial_metadata.metadata = n_md ? md : NULL;
	ops[1].op = GRPC_OP_SEND_MESSAGE;
	ops[1].data.send_message.send_message = send_bb;
	ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[3].data.recv_initial_metadata.recv_initial_metadata = &init_md;
	ops[4].op = GRPC_OP_RECV_MESSAGE;
	ops[4].data.recv_message.recv_message = &recv_bb;
	ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[5].data.recv_status_on_client.trailing_metadata = &trail_md;
	ops[5].data.recv_status_on_client.status = &code;
	ops[5].data.recv_status_on_client.status_details = &details;
	ops[5].data.recv_status_on_client.error_string = &error_string;
	if (grpc_call_start_batch(call, ops, 6, call, NULL) != GRPC_CALL_OK) {
		status->code = TAU_RPC_INTERNAL;
		snprintf(status->message, sizeof(status->message), "cannot start call");
		rc = tau_error_set(TAU_EINTERNAL, "%s: cannot start call", path);
		if (n_md)
			grpc_slice_unref(md[0].value);
		goto out;
	}
	if (n_md)
		grpc_slice_unref(md[0].value);
	ev = grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
	(void)ev;
	fill_status(status, code, details);
	if (code != GRPC_STATUS_OK) {
		rc = status_to_error(status, path);
		goto out;
	}
	if (recv_bb == NULL) {
		status->code = TAU_RPC_INTERNAL;
		snprintf(status->message, sizeof(status->message), "server sent no response");
		rc = tau_error_set(TAU_EIO, "%s: server sent no response", path);
		goto out;
	}
	rc = buffer_to_bytes(out, out_len, recv_bb);
out:
	if (error_string != NULL)
		gpr_free((void *)error_string);
	grpc_slice_unref(details);
	if (recv_bb != NULL)
		grpc_byte_buffer_destroy(recv_bb);
	grpc_byte_buffer_destroy(send_bb);
	grpc_metadata_array_destroy(&init_md);
	grpc_metadata_array_destroy(&trail_md);
	grpc_call_unref(call);
	grpc_completion_queue_shutdown(cq);
	while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
	               .type != GRPC_QUEUE_SHUTDOWN)
		;
	grpc_completion_queue_destroy(cq);
	return rc;
}

int tau_rpc_unary(ProtobufCMessage **out, tau_rpc_channel *ch, const char *path,
                  const ProtobufCMessage *request, const ProtobufCMessageDescriptor *response,
                  int timeout_ms, tau_rpc_status *status)
{
	size_t len = protobuf_c_message_get_packed_size(request);
	uint8_t *req = NULL;
	uint8_t *resp = NULL;
	size_t resp_len = 0;
	ProtobufCMessage *msg = NULL;
	int rc = tau_rpc_message_check_utf8(request);

	if (status != NULL)
		memset(status, 0, sizeof(*status));
	if (rc < 0)
		goto fail_local;
	if (len > ch->max_message) {
		rc = tau_error_set(TAU_ETOOBIG, "%s: request of %zu bytes exceeds the cap %zu",
		                   path, len, ch->max_message);
		goto fail_local;
	}
	req = malloc(len ? len : 1);
	if (req == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "request");
		goto fail_local;
	}
	protobuf_c_message_pack(request, req);
	rc = tau_rpc_unary_raw(&resp, &resp_len, ch, path, req, len, timeout_ms, status);
	free(req);
	if (rc < 0)
		return rc;
	rc = tau_rpc_message_decode(&msg, response, resp, resp_len, ch->max_message);
	free(resp);
	if (rc < 0) {
		if (status != NULL) {
			status->code = TAU_RPC_INTERNAL;
			snprintf(status->message, sizeof(status->message), "%.250s",
			         tau_error_last()->msg);
		}
		return rc;
	}
	*out = msg;
	return 0;
fail_local:
	if (status != NULL) {
		status->code =
		        rc == -TAU_ETOOBIG ? TAU_RPC_RESOURCE_EXHAUSTED : TAU_RPC_INVALID_ARGUMENT;
		snprintf(status->message, sizeof(status->message), "%.250s", tau_error_last()->msg);
	}
	return rc;
}

/* ---- streams ------------------------------------------------------------------------------ */

static uint64_t next_random(tau_rpc_stream *s)
{
	/* xorshift64: jitter only, not security. */
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static int next_backoff_ms(tau_rpc_stream *s)
{
	double delay = s->o.backoff_initial_ms;
	double r;

	for (int i = 0; i < s->attempt && delay < s->o.backoff_max_ms; i++)
		delay *= BACKOFF_MULTIPLIER;
	if (delay > s->o.backoff_max_ms)
		delay = s->o.backoff_max_ms;
	if (s->attempt < 64)
		s->attempt++;
	r = (double)(next_random(s) % 1000001) / 1000000.0; /* [0, 1] */
	delay *= 1.0 - BACKOFF_JITTER + 2.0 * BACKOFF_JITTER * r;
	if (delay > s->o.backoff_max_ms)
		delay = s->o.backoff_max_ms;
	return delay < 1 ? 1 : (int)delay;
}

/* With s->mu held: schedule (at > 0) or cancel (0) the next attempt, keeping ch->retries. */
static void set_retry_locked(tau_rpc_stream *s, int64_t at)
{
	if (s->retry_at_ms == 0 && at != 0)
		atomic_fetch_add(&s->ch->retries, 1);
	else if (s->retry_at_ms != 0 && at == 0)
		atomic_fetch_sub(&s->ch->retries, 1);
	s->retry_at_ms = at;
}

static void drop_queue_locked(tau_rpc_stream *s)
{
	tau_rpc_ring_clear(&s->sendq);
}

static int enqueue_locked(tau_rpc_stream *s, grpc_byte_buffer *bb)
{
	if (s->sendq.len >= s->o.max_send_queue)
		return tau_error_set(TAU_EAGAIN, "%s: send queue full (%zu messages)", s->path,
		                     s->sendq.len);
	return tau_rpc_ring_push(&s->sendq, bb);
}

static void pump_send_locked(tau_rpc_stream *s)
{
	grpc_op op;

	if (s->call == NULL || s->send_busy || s->status_seen)
		return;
	memset(&op, 0, sizeof(op));
	if (s->sendq.len > 0) {
		s->sending = tau_rpc_ring_pop(&s->sendq);
		op.op = GRPC_OP_SEND_MESSAGE;
		op.data.send_message.send_message = s->sending;
		if (grpc_call_start_batch(s->call, &op, 1, &s->send_tag, NULL) != GRPC_CALL_OK) {
			grpc_byte_buffer_destroy(s->sending);
			s->sending = NULL;
			grpc_call_cancel(s->call, NULL);
			return;
		}
		s->send_busy = true;
		s->pending++;
	} else if (s->half_close_wanted && !s->half_close_sent) {
		op.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
		s->half_close_sent = true;
		if (grpc_call_start_batch(s->call, &op, 1, &s->close_send_tag, NULL) ==
		    GRPC_CALL_OK)
			s->pending++;
	}
}

static void post_recv_locked(tau_rpc_stream *s)
{
	grpc_op op;

	memset(&op, 0, sizeof(op));
	op.op = GRPC_OP_RECV_MESSAGE;
	op.data.recv_message.recv_message = &s->recv_buf;
	if (grpc_call_start_batch(s->call, &op, 1, &s->recv_tag, NULL) == GRPC_CALL_OK)
		s->pending++;
}

/* Run a callback with the mutex released; tau_rpc_stream_free waits for in_callback. */
#define UNLOCKED_CALLBACK(s, expr)                                                                 \
	do {                                                                                       \
		(s)->in_callback = true;                                                           \
		pthread_mutex_unlock(&(s)->mu);                                                    \
		expr;                                                                              \
		pthread_mutex_lock(&(s)->mu);                                                      \
		(s)->in_callback = false;                                                          \
		pthread_cond_broadcast(&(s)->cond);                                                \
	} while (0)

/* With s->mu held: end the attempt if it is over; releases the mutex. */
static void maybe_end_unlock(tau_rpc_stream *s)
{
	tau_rpc_status st;
	int retry = -1;
	grpc_call *call = s->call;

	if (call == NULL || !s->status_seen || s->pending > 0) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	if (s->have_local_status)
		st = s->local_status;
	else
		fill_status(&st, s->st, s->details);
	s->have_local_status = false;
	grpc_slice_unref(s->details);
	s->details = grpc_empty_slice();
	grpc_metadata_array_destroy(&s->init_md);
	grpc_metadata_array_init(&s->init_md);
	grpc_metadata_array_destroy(&s->trail_md);
	grpc_metadata_array_init(&s->trail_md);
	drop_queue_locked(s);
	s->connected = false;
	grpc_call_unref(call);
	s->call = NULL;
	if (s->o.reconnect && !s->freeing) {
		retry = next_backoff_ms(s);
		set_retry_locked(s, (int64_t)tau_clock_mono_ms() + retry);
	}
	/* Keep the stream alive for free() until the owner has heard. */
	s->in_callback = true;
	pthread_mutex_unlock(&s->mu);
	if (s->o.on_closed != NULL)
		s->o.on_closed(s, &st, retry, s->o.ud);
	pthread_mutex_lock(&s->mu);
	s->in_callback = false;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

static void on_start_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_stream *s = CONTAINER_OF(t, tau_rpc_stream, start_tag);

	pthread_mutex_lock(&s->mu);
	s->pending--;
	if (ok && !s->status_seen) {
		s->connected = true;
		s->ever_connected = true;
		post_recv_locked(s);
		if (s->o.on_connected != NULL)
			UNLOCKED_CALLBACK(s, s->o.on_connected(s, s->o.ud));
	}
	maybe_end_unlock(s);
}

static void on_recv_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_stream *s = CONTAINER_OF(t, tau_rpc_stream, recv_tag);
	grpc_byte_buffer *bb;
	uint8_t *bytes = NULL;
	size_t len = 0;
	ProtobufCMessage *msg = NULL;

	pthread_mutex_lock(&s->mu);
	bb = s->recv_buf;
	s->recv_buf = NULL;
	if (!ok || bb == NULL) {
		if (bb != NULL)
			grpc_byte_buffer_destroy(bb);
		s->pending--;
		maybe_end_unlock(s);
		return;
	}
	/* The recv stays counted as pending while we decode and call out. */
	s->attempt = 0;
	if (buffer_to_bytes(&bytes, &len, bb) < 0 ||
	    tau_rpc_message_decode(&msg, s->o.response, bytes, len, s->ch->max_message) < 0) {
		if (!s->have_local_status) {
			s->local_status.code = TAU_RPC_INTERNAL;
			snprintf(s->local_status.message, sizeof(s->local_status.message),
			         "bad message from server: %.200s", tau_error_last()->msg);
			s->have_local_status = true;
		}
		grpc_call_cancel(s->call, NULL);
	} else {
		if (s->o.on_message != NULL)
			UNLOCKED_CALLBACK(s, s->o.on_message(s, msg, s->o.ud));
		else
			tau_rpc_message_free(msg);
		if (!s->status_seen)
			post_recv_locked(s);
	}
	free(bytes);
	grpc_byte_buffer_destroy(bb);
	s->pending--;
	maybe_end_unlock(s);
}

static void on_send_done(struct tau_rpc_tag *t, bool ok)
{
	tau_rpc_stream *s = CONTAINER_OF(t, tau_rpc_stream, send_tag);

	pthread_mutex_lock(&s->mu);
	s->pending--;
	s->send_busy = false;
	grpc_byte_buffer_destroy(s->sending);
	s->sending = NULL;
	if (ok)
		pump_send_locked(s);
	else
		drop_queue_locked(s);
	maybe_end_unlock(s);
}

/* A batch that only needs counting off ended (with its status when `status`). */
static void count_done(tau_rpc_stream *s, bool status)
{
	pthread_mutex_lock(&s->mu);
	s->pending--;
	if (status)
		s->status_seen = true;
	maybe_end_unlock(s);
}

static void on_close_send_done(struct tau_rpc_tag *t, bool ok)
{
	(void)ok;
	count_done(CONTAINER_OF(t, tau_rpc_stream, close_send_tag), false);
}

static void on_status_done(struct tau_rpc_tag *t, bool ok)
{
	(void)ok;
	count_done(CONTAINER_OF(t, tau_rpc_stream, status_tag), true);
}

/* With s->mu held and no call: start one attempt. Returns 0 or -TAU_EIO. */
static int start_attempt_locked(tau_rpc_stream *s)
{
	grpc_slice method = grpc_slice_from_copied_string(s->path);
	gpr_timespec deadline = s->o.deadline_ms > 0 ? ms_from_now(s->o.deadline_ms)
	                                             : gpr_inf_future(GPR_CLOCK_MONOTONIC);
	grpc_metadata md[1];
	size_t n_md;
	grpc_op ops[2];
	grpc_op status_op;
	grpc_call_error err;

	set_retry_locked(s, 0);
	s->call = grpc_channel_create_call(s->ch->channel, NULL, GRPC_PROPAGATE_DEFAULTS, s->ch->cq,
	                                   method, NULL, deadline, NULL);
	grpc_slice_unref(method);
	if (s->call == NULL)
		return tau_error_set(TAU_EIO, "%s: cannot create call", s->path);
	s->connected = false;
	s->status_seen = false;
	s->send_busy = false;
	s->half_close_wanted = false;
	s->half_close_sent = false;
	s->have_local_status = false;
	s->st = GRPC_STATUS_UNKNOWN;

	if (s->auth_value != NULL) {
		memset(md, 0, sizeof(md[0]));
		md[0].key = grpc_slice_from_static_string("authorization");
		md[0].value = grpc_slice_from_copied_string(s->auth_value);
		n_md = 1;
	} else {
		n_md = auth_metadata(s->ch, md);
	}
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
	ops[0].data.send_initial_metadata.count = n_md;
	ops[0].data.send_initial_metadata.metadata = n_md ? md : NULL;
	if (s->o.wait_for_ready && s->ever_connected)
		ops[0].flags = GRPC_INITIAL_METADATA_WAIT_FOR_READY |
		               GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
	ops[1].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[1].data.recv_initial_metadata.recv_initial_metadata = &s->init_md;
	err = grpc_call_start_batch(s->call, ops, 2, &s->start_tag, NULL);
	if (n_md)
		grpc_slice_unref(md[0].value);
	if (err == GRPC_CALL_OK)
		s->pending++;

	memset(&status_op, 0, sizeof(status_op));
	status_op.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	status_op.data.recv_status_on_client.trailing_metadata = &s->trail_md;
	status_op.data.recv_status_on_client.status = &s->st;
	status_op.data.recv_status_on_client.status_details = &s->details;
	if (grpc_call_start_batch(s->call, &status_op, 1, &s->status_tag, NULL) == GRPC_CALL_OK) {
		s->pending++;
	} else {
		/* Cannot happen on a fresh call; end the attempt through the normal path. */
		s->status_seen = true;
		s->st = GRPC_STATUS_INTERNAL;
	}
	if (err != GRPC_CALL_OK)
		grpc_call_cancel(s->call, NULL);
	if (s->has_request) {
		if (enqueue_locked(s, bytes_to_buffer(s->request, s->request_len)) == 0)
			s->half_close_wanted = true;
		pump_send_locked(s);
	}
	return 0;
}

static void *stream_thread(void *arg)
{
	tau_rpc_channel *ch = arg;

	for (;;) {
		int64_t next = 0;
		int64_t now;
		gpr_timespec deadline;
		grpc_event ev;

		if (atomic_load(&ch->retries) > 0) {
			pthread_mutex_lock(&ch->mu);
			for (tau_rpc_stream *s = ch->streams; s != NULL; s = s->next) {
				pthread_mutex_lock(&s->mu);
				if (s->retry_at_ms != 0 && (next == 0 || s->retry_at_ms < next))
					next = s->retry_at_ms;
				pthread_mutex_unlock(&s->mu);
			}
			pthread_mutex_unlock(&ch->mu);
		}
		now = (int64_t)tau_clock_mono_ms();
		deadline = next == 0 ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
		                     : ms_from_now(next > now ? next - now : 0);
		ev = grpc_completion_queue_next(ch->cq, deadline, NULL);
		if (ev.type == GRPC_QUEUE_SHUTDOWN)
			break;
		if (ev.type == GRPC_OP_COMPLETE) {
			struct tau_rpc_tag *t = ev.tag;

			t->fn(t, ev.success != 0);
		}
		/*
		 * Reconnects that are due. One scheduled while handling this event lies at least a
		 * backoff ahead; the next turn of the loop computes its deadline.
		 */
		now = (int64_t)tau_clock_mono_ms();
		if (next == 0 || next > now)
			continue;
		pthread_mutex_lock(&ch->mu);
		for (tau_rpc_stream *s = ch->streams; s != NULL; s = s->next) {
			pthread_mutex_lock(&s->mu);
			if (s->retry_at_ms != 0 && s->retry_at_ms <= now && !s->freeing &&
			    s->call == NULL && start_attempt_locked(s) < 0)
				set_retry_locked(s, now + s->o.backoff_max_ms);
			pthread_mutex_unlock(&s->mu);
		}
		pthread_mutex_unlock(&ch->mu);
	}
	return NULL;
}

/* The last of a stream, once nothing else holds it: its strings, its lock and itself. */
static void stream_release(tau_rpc_stream *s)
{
	tau_free_many(s->path, s->auth_value, s->request);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	free(s);
}

int tau_rpc_stream_open(tau_rpc_stream **out, tau_rpc_channel *ch, const tau_rpc_stream_opts *opts)
{
	tau_rpc_stream *s;
	int rc;

	if (opts == NULL || opts->path == NULL || opts->path[0] != '/' || opts->response == NULL)
		return tau_error_set(TAU_EINVAL, "stream needs a path and a response type");
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return tau_error_set(TAU_ENOMEM, "stream");
	s->start_tag.fn = on_start_done;
	s->recv_tag.fn = on_recv_done;
	s->send_tag.fn = on_send_done;
	s->close_send_tag.fn = on_close_send_done;
	s->status_tag.fn = on_status_done;
	s->ch = ch;
	s->o = *opts;
	if (s->o.backoff_initial_ms <= 0)
		s->o.backoff_initial_ms = DEFAULT_BACKOFF_INITIAL;
	if (s->o.backoff_max_ms <= 0)
		s->o.backoff_max_ms = DEFAULT_BACKOFF_MAX;
	if (s->o.backoff_max_ms < s->o.backoff_initial_ms)
		s->o.backoff_max_ms = s->o.backoff_initial_ms;
	if (s->o.max_send_queue == 0)
		s->o.max_send_queue = DEFAULT_SEND_QUEUE;
	s->rng = (uint64_t)(uintptr_t)s ^ (uint64_t)(int64_t)tau_clock_mono_ms() ^
	         0x9E3779B97F4A7C15ull;
	if (s->rng == 0)
		s->rng = 1;
	s->details = grpc_empty_slice();
	grpc_metadata_array_init(&s->init_md);
	grpc_metadata_array_init(&s->trail_md);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->path = strdup(opts->path);
	if (s->path == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "stream");
		goto fail;
	}
	s->o.path = s->path;
	if (opts->bearer_token != NULL) {
		rc = bearer_value(&s->auth_value, opts->bearer_token);
		if (rc < 0)
			goto fail;
		s->o.bearer_token = NULL;
	}
	if (opts->request != NULL) {
		grpc_byte_buffer *bb = NULL;

		rc = tau_rpc_pack_message(&bb, opts->request, ch->max_message);
		if (rc < 0)
			goto fail;
		rc = buffer_to_bytes(&s->request, &s->request_len, bb);
		grpc_byte_buffer_destroy(bb);
		if (rc < 0)
			goto fail;
		s->has_request = true;
	}

	pthread_mutex_lock(&ch->mu);
	if (ch->cq == NULL) {
		ch->cq = grpc_completion_queue_create_for_next(NULL);
		if (pthread_create(&ch->thread, NULL, stream_thread, ch) != 0) {
			pthread_mutex_unlock(&ch->mu);
			rc = tau_error_set(TAU_EIO, "cannot start the stream thread: %s",
			                   strerror(errno));
			goto fail;
		}
		ch->thread_started = true;
	}
	s->next = ch->streams;
	ch->streams = s;
	pthread_mutex_lock(&s->mu);
	rc = start_attempt_locked(s);
	if (rc < 0 && s->o.reconnect) {
		set_retry_locked(s, (int64_t)tau_clock_mono_ms() + next_backoff_ms(s));
		rc = 0;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_unlock(&ch->mu);
	if (rc < 0) {
		tau_rpc_stream_free(s);
		return rc;
	}
	*out = s;
	return 0;
fail:
	stream_release(s);
	return rc;
}

int tau_rpc_stream_send(tau_rpc_stream *s, const ProtobufCMessage *msg)
{
	grpc_byte_buffer *bb = NULL;
	int rc = tau_rpc_pack_message(&bb, msg, s->ch->max_message);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->mu);
	if (s->call == NULL || s->status_seen) {
		rc = tau_error_set(TAU_EAGAIN, "%s: not connected", s->path);
	} else if (s->half_close_wanted) {
		rc = tau_error_set(TAU_EIO, "%s: sending side is closed", s->path);
	} else {
		rc = enqueue_locked(s, bb);
		if (rc == 0) {
			bb = NULL;
			pump_send_locked(s);
		}
	}
	pthread_mutex_unlock(&s->mu);
	if (bb != NULL)
		grpc_byte_buffer_destroy(bb);
	return rc;
}

int tau_rpc_stream_close_send(tau_rpc_stream *s)
{
	int rc = 0;

	pthread_mutex_lock(&s->mu);
	if (s->call == NULL)
		rc = tau_error_set(TAU_EAGAIN, "%s: not connected", s->path);
	else {
		s->half_close_wanted = true;
		pump_send_locked(s);
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

bool tau_rpc_stream_is_connected(tau_rpc_stream *s)
{
	bool c;

	tau_locked_copy(&s->mu, &c, &s->connected, sizeof(c));
	return c;
}

size_t tau_rpc_stream_send_queue_len(tau_rpc_stream *s)
{
	return tau_rpc_ring_sends_pending(&s->mu, &s->sendq, &s->send_busy);
}

int tau_rpc_stream_free(tau_rpc_stream *s)
{
	tau_rpc_channel *ch;

	if (s == NULL)
		return 0;
	ch = s->ch;
	pthread_mutex_lock(&ch->mu);
	/*
	 * From a callback, the wait below would wait for this very thread: a deadlock. Checked in
	 * every build (callbacks run without ch->mu, so taking it here is safe).
	 */
	if (ch->thread_started && pthread_equal(ch->thread, pthread_self())) {
		pthread_mutex_unlock(&ch->mu);
		return tau_error_set(
		        TAU_EINVAL,
		        "%s: tau_rpc_stream_free from a callback of the stream's channel "
		        "would deadlock; the stream is left open",
		        s->path);
	}
	for (tau_rpc_stream **pp = &ch->streams; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&ch->mu);
	pthread_mutex_lock(&s->mu);
	s->freeing = true;
	set_retry_locked(s, 0);
	if (s->call != NULL)
		grpc_call_cancel(s->call, NULL);
	while (s->call != NULL || s->in_callback)
		pthread_cond_wait(&s->cond, &s->mu);
	pthread_mutex_unlock(&s->mu);
	tau_rpc_ring_free(&s->sendq);
	grpc_slice_unref(s->details);
	grpc_metadata_array_destroy(&s->init_md);
	grpc_metadata_array_destroy(&s->trail_md);
	stream_release(s);
	return 0;
}
