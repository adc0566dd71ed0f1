/*
 * rpc_internal.h - what lib/rpc_client.c and lib/rpc_server*.c share; not installed, not API.
 *
 * Both sides drive the gRPC C core the same way: every operation started carries a tag (a
 * function pointer embedded in the object it belongs to, found again with CONTAINER_OF), a
 * message is packed after its strings are checked for UTF-8 and its size against the cap, and
 * because the core allows one send in flight per call, later sends wait in a ring.
 */
#ifndef TAU_RPC_INTERNAL_H
#define TAU_RPC_INTERNAL_H

#include <grpc/byte_buffer.h>
#include "tau/rpc_server.h"
#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/** A completion-queue tag: the CQ thread calls fn(tag, ok) when the operation completes. */
struct tau_rpc_tag {
	void (*fn)(struct tau_rpc_tag *t, bool ok);
};

/** The object that embeds `member` at `ptr`. */
#define CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/** Packed messages waiting for their turn to be sent; zero-initialise. */
typedef struct tau_rpc_send_ring {
	grpc_byte_buffer **items;
	size_t head, len, cap;
} tau_rpc_send_ring;

/** Append, taking ownership of bb on success. @return 0 or -TAU_ENOMEM ("send queue"). */
int tau_rpc_ring_push(tau_rpc_send_ring *r, grpc_byte_buffer *bb);

/** The newest waiting buffer's slot (to replace it), or NULL when empty. */
grpc_byte_buffer **tau_rpc_ring_newest(tau_rpc_send_ring *r);

/** The oldest buffer (the caller owns it), or NULL when empty. */
grpc_byte_buffer *tau_rpc_ring_pop(tau_rpc_send_ring *r);

/** Destroy every waiting buffer; the storage stays. */
void tau_rpc_ring_clear(tau_rpc_send_ring *r);

/** Destroy every waiting buffer and the storage. */
void tau_rpc_ring_free(tau_rpc_send_ring *r);

/**
 * Sends not yet completed, read under `mu`: those waiting in r and the one in flight when
 * *busy (a call's or a client stream's send queue).
 */
size_t tau_rpc_ring_sends_pending(pthread_mutex_t *mu, const tau_rpc_send_ring *r,
                                  const bool *busy);

/**
 * Pack msg into a new byte buffer after checking its strings are UTF-8 and its size is at most
 * max bytes.  @return 0, -TAU_EINVAL (bad UTF-8), -TAU_ETOOBIG ("<type>: N bytes exceeds the
 * message cap MAX").
 */
int tau_rpc_pack_message(grpc_byte_buffer **out, const ProtobufCMessage *msg, size_t max);

/** The most arguments tau_rpc_server_channel_args fills. */
#define TAU_RPC_SERVER_MAX_ARGS 14

/**
 * The server's channel arguments for opts (keepalive, ping policy, window, message caps), after
 * filling opts' unset fields with their defaults. Shared with bench/swarm's bare server, so the
 * floor it measures runs under the same transport settings. @return the number of args written.
 */
size_t tau_rpc_server_channel_args(grpc_arg *args, tau_rpc_server_opts *opts);

/** Fill a channel or server argument with an integer value. */
void tau_rpc_set_arg_int(grpc_arg *a, const char *key, int value);

#endif /* TAU_RPC_INTERNAL_H */
