/*
 * rpc_common.c - the pieces the rpc client and server share (rpc_internal.h): packing a
 * checked message, the send ring, channel and server arguments.
 */
#include "rpc_internal.h"

#include "tau/error.h"
#include "tau/rpc.h"

#include <stdlib.h>

int tau_rpc_ring_push(tau_rpc_send_ring *r, grpc_byte_buffer *bb)
{
	if (r->len == r->cap) {
		size_t ncap = r->cap != 0 ? r->cap * 2 : 8;
		grpc_byte_buffer **nq = calloc(ncap, sizeof(*nq));

		if (nq == NULL)
			return tau_error_set(TAU_ENOMEM, "send queue");
		for (size_t i = 0; i < r->len; i++)
			nq[i] = r->items[(r->head + i) % r->cap];
		free(r->items);
		r->items = nq;
		r->cap = ncap;
		r->head = 0;
	}
	r->items[(r->head + r->len) % r->cap] = bb;
	r->len++;
	return 0;
}

grpc_byte_buffer **tau_rpc_ring_newest(tau_rpc_send_ring *r)
{
	return r->len == 0 ? NULL : &r->items[(r->head + r->len - 1) % r->cap];
}

grpc_byte_buffer *tau_rpc_ring_pop(tau_rpc_send_ring *r)
{
	grpc_byte_buffer *bb;

	if (r->len == 0)
		return NULL;
	bb = r->items[r->head];
	r->head = (r->head + 1) % r->cap;
	r->len--;
	return bb;
}

void tau_rpc_ring_clear(tau_rpc_send_ring *r)
{
	grpc_byte_buffer *bb;

	while ((bb = tau_rpc_ring_pop(r)) != NULL)
		grpc_byte_buffer_destroy(bb);
}

void tau_rpc_ring_free(tau_rpc_send_ring *r)
{
	tau_rpc_ring_clear(r);
	free(r->items);
	r->items = NULL;
	r->cap = r->head = 0;
}

int tau_rpc_pack_message(grpc_byte_buffer **out, const ProtobufCMessage *msg, size_t max)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	grpc_slice slice;
	int rc = tau_rpc_message_check_utf8(msg);

	if (rc < 0)
		return rc;
	if (len > max)
		return tau_error_set(TAU_ETOOBIG, "%s: %zu bytes exceeds the message cap %zu",
		                     msg->descriptor->name, len, max);
	slice = grpc_slice_malloc(len);
	protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(slice));
	*out = grpc_raw_byte_buffer_create(&slice, 1);
	grpc_slice_unref(slice);
	return 0;
}

void tau_rpc_set_arg_int(grpc_arg *a, const char *key, int value)
{
	a->type = GRPC_ARG_INTEGER;
	a->key = (char *)key;
	a->value.integer = value;
}

size_t tau_rpc_ring_sends_pending(pthread_mutex_t *mu, const tau_rpc_send_ring *r, const bool *busy)
{
	size_t n;

	pthread_mutex_lock(mu);
	n = r->len + (*busy ? 1 : 0);
	pthread_mutex_unlock(mu);
	return n;
}
