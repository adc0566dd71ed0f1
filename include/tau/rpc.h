/*
 * tau/rpc.h - what the gRPC server and client of libtau share: status codes, message caps,
 * the final status of a call, and decoding and checking messages.  The server is
 * tau/rpc_server.h, the client tau/rpc_client.h; both include this header.
 *
 * A thin layer over the gRPC C core (libgrpc) and protobuf-c. Application code sees protobuf-c
 * messages, call handles and callbacks; it never builds a grpc_op. The core rules the layer
 * enforces: one send in flight per call (each call has a bounded send queue), a 1 MiB default
 * cap on received messages, UTF-8 validation of every received string field, UNIMPLEMENTED for
 * unknown methods, and a shutdown order that drains calls before anything is destroyed.
 *
 * Threads: a server runs one completion-queue (CQ) thread; every server callback runs on it and
 * must not block. tau_rpc_call_send/finish/reply may be called from any thread (hold a reference
 * with tau_rpc_call_ref to keep the handle past on_done). A channel runs its own CQ thread for
 * streams (started with the first stream); unary calls block the calling thread only.
 */
#ifndef TAU_RPC_H
#define TAU_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/** gRPC status codes; the values are those of grpc_status_code. */
typedef enum tau_rpc_code {
	TAU_RPC_OK = 0,
	TAU_RPC_CANCELLED = 1,
	TAU_RPC_UNKNOWN = 2,
	TAU_RPC_INVALID_ARGUMENT = 3,
	TAU_RPC_DEADLINE_EXCEEDED = 4,
	TAU_RPC_NOT_FOUND = 5,
	TAU_RPC_ALREADY_EXISTS = 6,
	TAU_RPC_PERMISSION_DENIED = 7,
	TAU_RPC_RESOURCE_EXHAUSTED = 8,
	TAU_RPC_FAILED_PRECONDITION = 9,
	TAU_RPC_ABORTED = 10,
	TAU_RPC_OUT_OF_RANGE = 11,
	TAU_RPC_UNIMPLEMENTED = 12,
	TAU_RPC_INTERNAL = 13,
	TAU_RPC_UNAVAILABLE = 14,
	TAU_RPC_DATA_LOSS = 15,
	TAU_RPC_UNAUTHENTICATED = 16
} tau_rpc_code;

/** Default cap on one received (and sent) message: 1 MiB. */
#define TAU_RPC_DEFAULT_MAX_MESSAGE (1024u * 1024u)
/**
 * Default cap on one call's request metadata, keys and values together: 20 KiB, so a 16 KiB
 * bearer token fits with the usual headers. Over it the call alone ends RESOURCE_EXHAUSTED.
 */
#define TAU_RPC_DEFAULT_MAX_METADATA (20u * 1024u)
/**
 * The gRPC core's own limit on request headers (GRPC_ARG_MAX_METADATA_SIZE): at least 128 KiB,
 * twice the layer's cap when that is larger. Headers between the layer's cap and this one are
 * refused on their own stream; beyond it grpc 1.51 refuses the stream RESOURCE_EXHAUSTED but
 * stops decoding the header block, so its HPACK state is lost and the connection (every stream
 * on it) ends UNAVAILABLE: only the offending client's own connection.
 */
#define TAU_RPC_CORE_METADATA_MIN (128u * 1024u)
/** Longest status message kept in a tau_rpc_status, including the NUL. */
#define TAU_RPC_STATUS_MSG_MAX 256

/** The final status of a call as the client saw it. */
typedef struct tau_rpc_status {
	tau_rpc_code code;                    /**< gRPC status code */
	char message[TAU_RPC_STATUS_MSG_MAX]; /**< status details, truncated, "" if none */
} tau_rpc_status;

/** Short constant name of a status code ("UNAVAILABLE"); "UNKNOWN_CODE" if out of range. */
const char *tau_rpc_code_name(int code);

/* ------------------------------------------------------------------------------------------ */
/* Messages                                                                                   */

/**
 * Decode `len` bytes as a message of type `desc`: the bytes are rejected before decoding when
 * longer than `max_len`, then unpacked, then every string field (nested, repeated, map and oneof
 * ones included) is checked for valid UTF-8. Pure function (no I/O), so fuzzable.
 * The message, its strings, arrays and sub-messages are one arena, freed only all at once by
 * tau_rpc_message_free: never free or keep a part of it on its own (no
 * protobuf_c_message_free_unpacked, no taking a string), and copy what must outlive it.
 * Returns 0 and gives *out (free with tau_rpc_message_free); -TAU_ETOOBIG over the cap;
 * -TAU_EINVAL for malformed protobuf or invalid UTF-8 (the message names the field);
 * -TAU_ENOMEM.
 */
int tau_rpc_message_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
                           const uint8_t *data, size_t len, size_t max_len);

/**
 * The bytes a message from tau_rpc_message_decode (a handler's request, a client's response)
 * was decoded from, `*len` of them; they live as long as the message.
 */
const uint8_t *tau_rpc_message_wire(const ProtobufCMessage *msg, size_t *len);

/**
 * Check every string field of `msg`, recursively, for valid UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF). Returns 0 or -TAU_EINVAL naming the first bad field.
 */
int tau_rpc_message_check_utf8(const ProtobufCMessage *msg);

/**
 * Free a message returned by tau_rpc_message_decode (every message the server's handlers and
 * the client's callers are given), all of it at once. NULL is a no-op. A message built another
 * way must not be given here (it aborts: the arena's header is not there).
 */
void tau_rpc_message_free(ProtobufCMessage *msg);

/** True when `len` bytes at `s` are valid UTF-8. */
bool tau_rpc_utf8_valid(const char *s, size_t len);

#endif /* TAU_RPC_H */
