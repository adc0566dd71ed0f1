/*
 * tau/rpc_client.h - the gRPC client of libtau: channels, blocking unary calls and
 * reconnecting streams.
 *
 * A channel runs its own CQ thread for streams (started with the first stream); unary calls
 * block the calling thread only.
 */
#ifndef TAU_RPC_CLIENT_H
#define TAU_RPC_CLIENT_H

#include "tau/rpc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* ------------------------------------------------------------------------------------------ */
/* Client                                                                                     */

typedef struct tau_rpc_channel tau_rpc_channel;
typedef struct tau_rpc_stream tau_rpc_stream;

/** Channel settings; zero means the default named on each field. */
typedef struct tau_rpc_channel_opts {
	/** "host:port", "dns:///name:port", "unix:/path" (required). */
	const char *target;
	/** CA bundle that signs the server certificate; NULL for plaintext. */
	const char *ca_pem;
	/** Optional client certificate chain and key (mTLS); both or neither. */
	const char *cert_pem;
	const char *key_pem;
	/** Expected server name when it differs from the target host (e.g. connecting by IP). */
	const char *server_name_override;
	/** Cap on one received and one sent message; 1 MiB. */
	size_t max_message_bytes;
	/** Ping after this long without traffic; 30000 ms (the server accepts >= 5000). */
	int keepalive_time_ms;
	/** Drop the connection when a ping is unanswered this long; 10000 ms. */
	int keepalive_timeout_ms;
	/** The channel's own reconnect backoff after a lost connection; 200 ms .. 10000 ms. */
	int reconnect_min_ms;
	int reconnect_max_ms;
	/** Use a TCP connection of its own instead of sharing one with same-args channels. */
	bool own_connection;
} tau_rpc_channel_opts;

/**
 * Create a channel. Connecting is lazy (first call). Returns 0 and gives *out (free with
 * tau_rpc_channel_free); -TAU_EINVAL for missing target or half a client cert; -TAU_ENOMEM.
 */
int tau_rpc_channel_new(tau_rpc_channel **out, const tau_rpc_channel_opts *opts);

/**
 * Set (or clear with NULL) the bearer token sent as "authorization: Bearer <token>" on every
 * later call and stream attempt. Copied; thread-safe (a rotated token applies at reconnect).
 * Returns 0; -TAU_EINVAL for a token that is not a legal header value; -TAU_ENOMEM.
 */
int tau_rpc_channel_set_bearer_token(tau_rpc_channel *ch, const char *token);

/**
 * Free the channel. Every stream on it must be freed first. NULL is a no-op.
 * @return 0; -TAU_EINVAL when streams are still open (nothing is freed: a use-after-free
 *         refused in every build).
 */
int tau_rpc_channel_free(tau_rpc_channel *ch);

/**
 * Blocking unary call with a deadline of `timeout_ms` (<= 0: 30 s). Safe from any thread.
 * On success returns 0 and gives *out (free with tau_rpc_message_free). Otherwise returns the
 * status mapped to an error (-TAU_ETIMEOUT deadline, -TAU_EPERM unauthenticated/denied,
 * -TAU_ENOTFOUND, -TAU_EINVAL invalid argument or a bad response, -TAU_ETOOBIG, -TAU_EAGAIN
 * unavailable, -TAU_EIO any other) and fills `status` (may be NULL) with the code and message.
 */
int tau_rpc_unary(ProtobufCMessage **out, tau_rpc_channel *ch, const char *path,
                  const ProtobufCMessage *request, const ProtobufCMessageDescriptor *response,
                  int timeout_ms, tau_rpc_status *status);

/**
 * tau_rpc_unary with raw bytes both ways (tests, fuzzing, proxies): sends `len` bytes as the
 * request, gives the response bytes in *out / *out_len (free with free()). Same returns.
 */
int tau_rpc_unary_raw(uint8_t **out, size_t *out_len, tau_rpc_channel *ch, const char *path,
                      const uint8_t *request, size_t len, int timeout_ms, tau_rpc_status *status);

/**
 * A client stream (bidi, or server-streaming with a fixed request). With `reconnect` it is
 * reopened after every end, with jittered exponential backoff, until freed; the owner is told
 * on_connected each time, and should then send what the new stream needs (for Report: a full
 * inventory). Callbacks run on the channel's CQ thread, one at a time, and must not block.
 */
typedef struct tau_rpc_stream_opts {
	/** Full method path (required); copied. */
	const char *path;
	/** Type of the messages the server sends (required). */
	const ProtobufCMessageDescriptor *response;
	/**
	 * For server-streaming methods: the request, sent (then half-closed) on every attempt;
	 * packed at open, so it may be freed after. NULL for bidi and client streaming.
	 */
	const ProtobufCMessage *request;
	/**
	 * This stream's own bearer token, sent instead of the channel's (tests, proxies that
	 * multiplex callers); copied. NULL: the channel's token, if any.
	 */
	const char *bearer_token;
	/** Reopen after each end of the stream until freed. */
	bool reconnect;
	/** First reconnect delay; 500 ms. Delays grow x1.6 per failed attempt, +-20% jitter. */
	int backoff_initial_ms;
	/** Longest reconnect delay; 30000 ms. */
	int backoff_max_ms;
	/** Deadline of each attempt; 0: none (long-lived streams). */
	int deadline_ms;
	/**
	 * gRPC wait-for-ready on every attempt after one has reached the server: while the channel
	 * cannot connect, such an attempt waits for it instead of failing at once with UNAVAILABLE,
	 * and goes out the moment a connection is up. Reconnecting is then paced by the channel's
	 * own backoff (tau_rpc_channel_opts.reconnect_min_ms/max_ms) alone, not by both backoffs
	 * at once (a stream retry that lands while the channel is between two connection attempts
	 * fails and grows the stream's backoff too). Until the first connection, attempts fail
	 * fast as without it, so a wrong address or certificate shows in every attempt's status.
	 * The stream's backoff still paces attempts the server itself ended.
	 */
	bool wait_for_ready;
	/** Messages queued before tau_rpc_stream_send fails -TAU_EAGAIN; 1024. */
	size_t max_send_queue;
	/** The server answered the stream's headers: (re)connected. Optional. */
	void (*on_connected)(tau_rpc_stream *s, void *ud);
	/** A message from the server; given to the callee (tau_rpc_message_free). Optional. */
	void (*on_message)(tau_rpc_stream *s, ProtobufCMessage *msg, void *ud);
	/**
	 * One attempt ended with `status`; the next starts in `retry_in_ms`, or -1 when there is
	 * none (no reconnect, or the stream is being freed). Queued sends were dropped. Optional.
	 */
	void (*on_closed)(tau_rpc_stream *s, const tau_rpc_status *status, int retry_in_ms,
	                  void *ud);
	void *ud;
} tau_rpc_stream_opts;

/**
 * Open a stream on `ch` and start its first attempt now.
 * Returns 0 and gives *out (free with tau_rpc_stream_free); -TAU_EINVAL; -TAU_ENOMEM; -TAU_EIO.
 */
int tau_rpc_stream_open(tau_rpc_stream **out, tau_rpc_channel *ch, const tau_rpc_stream_opts *opts);

/**
 * Queue a message on the current attempt (packed now). Thread-safe, also from callbacks.
 * Returns 0; -TAU_EAGAIN when no attempt is open (backing off) or the queue is full;
 * -TAU_EIO after half-close; -TAU_EINVAL invalid UTF-8; -TAU_ETOOBIG; -TAU_ENOMEM.
 */
int tau_rpc_stream_send(tau_rpc_stream *s, const ProtobufCMessage *msg);

/** Half-close the current attempt after the queued messages. Thread-safe. */
int tau_rpc_stream_close_send(tau_rpc_stream *s);

/** True between on_connected and the end of that attempt. Thread-safe. */
bool tau_rpc_stream_is_connected(tau_rpc_stream *s);

/** Messages queued and not yet sent on the current attempt. Thread-safe. */
size_t tau_rpc_stream_send_queue_len(tau_rpc_stream *s);

/**
 * Cancel the stream, wait for its last callback (on_closed with retry -1 may run meanwhile, on
 * the CQ thread) and free it. Never from one of the stream's channel callbacks. NULL: no-op.
 * @return 0; -TAU_EINVAL when called from a callback of the stream's channel (that would wait
 *         for itself; the stream is left open, checked in every build).
 */
int tau_rpc_stream_free(tau_rpc_stream *s);

#endif /* TAU_RPC_CLIENT_H */
