/*
 * rpc_server_slots.c - how the server receives new calls: armed request slots.
 *
 * The core hands a new call to a request the server armed beforehand. Each registered method
 * keeps opts.requests_per_method slots armed (unary and server-streaming ones with the request
 * message read ahead), plus a catch-all slot for unknown methods, answered UNIMPLEMENTED in one
 * batch. A matched slot starts the call (rpc_server_call.c) and is armed again at once; at
 * shutdown the core returns every slot unmatched and it is freed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "rpc_server_internal.h"
#include "tau/error.h"
#include "tau/rpc_server.h"

#include <grpc/byte_buffer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int arm_slot(struct request_slot *slot);

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

static void on_unimplemented_done(struct tau_rpc_tag *t, bool ok)
{
	struct unimplemented_call *u = CONTAINER_OF(t, struct unimplemented_call, tag);
	tau_rpc_server *srv = u->srv;

	(void)ok;
	grpc_slice_unref(u->details);
	grpc_call_unref(u->call);
	free(u);
	tau_rpc_server_slot_gone(srv);
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
	tau_rpc_server_slot_gone(srv);
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
		tau_rpc_server_call_start(slot);
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

int tau_rpc_server_slot_new(tau_rpc_server *srv, struct method_entry *me)
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
