/*
 * rpc_server.c - gRPC server over the C core: its methods, completion queue and shutdown.
 *
 * One completion queue (CQ), pumped by opts.cq_threads threads (one by default). Every
 * operation started carries a tag (struct tau_rpc_tag: a function pointer) embedded in the object
 * it belongs to; the CQ thread calls it with the completion's success bit. Each registered method
 * keeps requests_per_method request slots armed (rpc_server_slots.c); a matched call runs its
 * state machine (rpc_server_call.c). This file also keeps the counts shutdown waits on: live
 * calls, armed slots, and the calls open per peer (max_calls_per_peer).
 *
 * Shutdown (the order that drains cleanly): grpc_server_shutdown_and_notify, wait up to the
 * grace period, grpc_server_cancel_all_calls, wait for the shutdown tag and for every call and
 * armed request to come back, grpc_server_destroy, CQ shutdown, join the thread, CQ destroy.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rpc_server_internal.h"
#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/rpc_server.h"
#include "tau/sync.h"
#include "tau/thread.h"

#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define DEFAULT_SEND_QUEUE     1024
#define DEFAULT_KEEPALIVE_MS   30000
#define DEFAULT_KA_TIMEOUT_MS  10000
#define DEFAULT_MIN_PING_MS    5000
#define DEFAULT_WINDOW_BYTES   65536
#define DEFAULT_REQUESTS_ARMED 4

/* ---- what is open: calls, armed slots, calls per peer ------------------------------------ */

/* Take one of the peer's call slots. Returns false when the peer is at the cap. */
bool tau_rpc_server_peer_take(tau_rpc_server *srv, tau_rpc_call *c)
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

void tau_rpc_server_call_gone(tau_rpc_server *srv, tau_rpc_call *c)
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

void tau_rpc_server_slot_gone(tau_rpc_server *srv)
{
	pthread_mutex_lock(&srv->mu);
	srv->live_slots--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->mu);
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
			rc = tau_rpc_server_slot_new(srv, srv->methods[i]);
			if (rc < 0)
				return rc;
		}
	}
	rc = tau_rpc_server_slot_new(srv, NULL);
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
	tau_thread_deadline_ms(&ts, CLOCK_REALTIME, timeout_ms);
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
	tau_hmap_destroy_free(&srv->peers, offsetof(struct peer_calls, node));
	pthread_mutex_destroy(&srv->mu);
	pthread_cond_destroy(&srv->cond);
	free(srv);
	grpc_shutdown();
}

size_t tau_rpc_server_live_calls(tau_rpc_server *srv)
{
	size_t n;

	tau_locked_copy(&srv->mu, &n, &srv->live_calls, sizeof(n));
	return n;
}

void tau_rpc_server_stats_get(tau_rpc_server *srv, tau_rpc_server_stats *out)
{
	tau_locked_copy(&srv->mu, out, &srv->stats, sizeof(*out));
	out->sends_coalesced = atomic_load(&srv->sends_coalesced);
}
