/*
 * tau/rpc.h - gRPC transport of libtau: a server, a client and grpc.health.v1.
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
 * Returns 0 and gives *out (free with tau_rpc_message_free); -TAU_ETOOBIG over the cap;
 * -TAU_EINVAL for malformed protobuf or invalid UTF-8 (the message names the field);
 * -TAU_ENOMEM.
 */
int tau_rpc_message_decode(ProtobufCMessage **out, const ProtobufCMessageDescriptor *desc,
                           const uint8_t *data, size_t len, size_t max_len);

/**
 * Check every string field of `msg`, recursively, for valid UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF). Returns 0 or -TAU_EINVAL naming the first bad field.
 */
int tau_rpc_message_check_utf8(const ProtobufCMessage *msg);

/** Free a message returned by this module (NULL is a no-op). */
void tau_rpc_message_free(ProtobufCMessage *msg);

/** True when `len` bytes at `s` are valid UTF-8. */
bool tau_rpc_utf8_valid(const char *s, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Server                                                                                     */

typedef struct tau_rpc_server tau_rpc_server;
typedef struct tau_rpc_call tau_rpc_call;

/** The streaming shape of a method (protobuf-c descriptors do not record it). */
typedef enum tau_rpc_kind {
	TAU_RPC_UNARY = 0,         /**< one request, one response */
	TAU_RPC_SERVER_STREAM = 1, /**< one request, a stream of responses */
	TAU_RPC_CLIENT_STREAM = 2, /**< a stream of requests, one response */
	TAU_RPC_BIDI = 3           /**< streams both ways */
} tau_rpc_kind;

/** How a server call ended, as told to on_done. */
typedef enum tau_rpc_end {
	TAU_RPC_END_FINISHED = 0, /**< the status was sent and the client received it */
	TAU_RPC_END_CANCELLED =
	        1,               /**< client cancel, connection lost, keepalive failure, shutdown */
	TAU_RPC_END_DEADLINE = 2 /**< the client's deadline passed */
} tau_rpc_end;

/**
 * One method a server serves. All callbacks run on the server's CQ thread, one at a time per
 * call, and must not block.
 */
typedef struct tau_rpc_method {
	/** Full path, "/tau.inventory.v1.InventoryService/Report"; copied. */
	const char *path;
	tau_rpc_kind kind;
	/** Type of the request messages (required). */
	const ProtobufCMessageDescriptor *request;
	/** Type of the response messages; when set, sends of another type fail -TAU_EINVAL. */
	const ProtobufCMessageDescriptor *response;
	/**
	 * Optional: runs first, before any message. Return 0 to accept. To reject, either call
	 * tau_rpc_call_finish (e.g. UNAUTHENTICATED) and return non-zero, or return a non-zero
	 * tau_rpc_code and the layer finishes the call with it. No on_message follows a reject.
	 */
	int (*on_start)(tau_rpc_call *call, void *ud);
	/**
	 * A decoded, validated request. `msg` is given to the handler (free it with
	 * tau_rpc_message_free). Unary and server-streaming methods get exactly one; streaming
	 * requests get one per message, the next only after this returns.
	 */
	void (*on_message)(tau_rpc_call *call, ProtobufCMessage *msg, void *ud);
	/** Optional: the client half-closed its side of a client-streaming or bidi call. */
	void (*on_half_close)(tau_rpc_call *call, void *ud);
	/**
	 * Optional: the call is over; runs exactly once, last. After it returns the call handle is
	 * freed unless the handler holds a reference (tau_rpc_call_ref).
	 */
	void (*on_done)(tau_rpc_call *call, tau_rpc_end end, void *ud);
	/** Passed to every callback. */
	void *ud;
} tau_rpc_method;

/** Server settings; zero means the default named on each field. */
typedef struct tau_rpc_server_opts {
	/** Cap on one received message, checked by the core before decoding; 1 MiB. */
	size_t max_message_bytes;
	/**
	 * Cap on one call's request metadata (keys + values); TAU_RPC_DEFAULT_MAX_METADATA.
	 * The core's own limit is set well above it (TAU_RPC_CORE_METADATA_MIN).
	 */
	size_t max_metadata_bytes;
	/**
	 * Calls open at once from one peer (its verified TLS identity, else its address without
	 * the port); more are ended RESOURCE_EXHAUSTED before any handler runs. 0: no cap.
	 */
	int max_calls_per_peer;
	/** Messages queued per call before tau_rpc_call_send fails -TAU_EAGAIN; 1024. */
	size_t max_send_queue;
	/** Ping an idle connection after this long; 30000 ms. */
	int keepalive_time_ms;
	/** Close the connection if a ping is not answered in time; 10000 ms. */
	int keepalive_timeout_ms;
	/** Shortest ping interval accepted from clients without GOAWAY; 5000 ms. */
	int min_client_ping_interval_ms;
	/**
	 * HTTP/2 per-stream receive window (flow control) in bytes; 65536. BDP probing is off so
	 * the window cannot grow: this bounds what one stream can make the server buffer.
	 */
	int stream_window_bytes;
	/** HTTP/2 max concurrent streams per connection; 0 = the core's default (unlimited). */
	int max_concurrent_streams;
	/** Requests kept armed per method, so bursts of new calls need no round trip; 4. */
	int requests_per_method;
	/**
	 * Threads pumping the completion queue, 1 .. TAU_RPC_MAX_CQ_THREADS; 1. With more than
	 * one, handlers of different calls run concurrently (one call's callbacks never overlap).
	 */
	int cq_threads;
} tau_rpc_server_opts;

/** The most completion-queue threads a server runs. */
#define TAU_RPC_MAX_CQ_THREADS 8

/** TLS settings of a listening port. PEM strings are copied. */
typedef struct tau_rpc_server_tls {
	const char *cert_pem;      /**< server certificate chain (required) */
	const char *key_pem;       /**< its private key (required) */
	const char *client_ca_pem; /**< CA that signs client certs; NULL: none requested */
	bool require_client_cert;  /**< reject clients without a cert signed by client_ca_pem */
} tau_rpc_server_tls;

/**
 * Create a server (not yet listening). `opts` may be NULL for defaults.
 * Returns 0 and gives *out (free with tau_rpc_server_free); -TAU_ENOMEM.
 */
int tau_rpc_server_new(tau_rpc_server **out, const tau_rpc_server_opts *opts);

/**
 * Register a method; only before tau_rpc_server_start. The struct is copied.
 * Returns 0; -TAU_EINVAL for a bad path, a missing callback or a duplicate; -TAU_ENOMEM.
 */
int tau_rpc_server_add_method(tau_rpc_server *srv, const tau_rpc_method *method);

/**
 * Listen on `addr` ("0.0.0.0:50051", "127.0.0.1:0", "unix:/path"); plaintext when `tls` is
 * NULL. Only before tau_rpc_server_start. Every method is served on every port.
 * `port_out` (may be NULL) receives the bound port (useful with port 0).
 * Returns 0; -TAU_EIO when the address cannot be bound; -TAU_EINVAL for bad TLS settings.
 */
int tau_rpc_server_listen(tau_rpc_server *srv, const char *addr, const tau_rpc_server_tls *tls,
                          int *port_out);

/** Start serving and start the CQ thread. Returns 0; -TAU_EINVAL if not listening; -TAU_EIO. */
int tau_rpc_server_start(tau_rpc_server *srv);

/**
 * Stop accepting calls, let in-flight calls finish for up to `grace_ms`, then cancel the rest,
 * wait for every on_done, and stop the CQ thread. Blocks; idempotent; never from a callback.
 */
void tau_rpc_server_shutdown(tau_rpc_server *srv, int grace_ms);

/** Shut down (grace 0) if needed and free. NULL is a no-op. */
void tau_rpc_server_free(tau_rpc_server *srv);

/** Number of calls started and not yet done (for tests and metrics). Thread-safe. */
size_t tau_rpc_server_live_calls(tau_rpc_server *srv);

/** Calls the layer refused before any handler ran (counts since start). */
typedef struct tau_rpc_server_stats {
	uint64_t refused_peer_cap; /**< over max_calls_per_peer */
	uint64_t refused_metadata; /**< request metadata over max_metadata_bytes or 64 entries */
	uint64_t sends_coalesced;  /**< queued messages superseded by tau_rpc_call_send_latest */
} tau_rpc_server_stats;

/** Fill `out` with the server's counters. Thread-safe. */
void tau_rpc_server_stats_get(tau_rpc_server *srv, tau_rpc_server_stats *out);

/**
 * The key a server counts a call's peer by: its verified TLS identity when it has one, else
 * its address without the port ("ipv4:10.0.0.7"). Lends; valid as long as the handle.
 */
const char *tau_rpc_call_peer_key(const tau_rpc_call *call);

/**
 * Queue a message on a call: it is packed now (so `msg` may be freed on return) and sent when
 * the sends before it are done. Thread-safe.
 * Returns 0; -TAU_EAGAIN when the send queue is full; -TAU_EIO when the call is finished,
 * finishing or cancelled; -TAU_EINVAL for a message of the wrong type or with invalid UTF-8;
 * -TAU_ETOOBIG when it packs larger than the server's max message size; -TAU_ENOMEM.
 */
int tau_rpc_call_send(tau_rpc_call *call, const ProtobufCMessage *msg);

/**
 * tau_rpc_call_send for a message that supersedes the one sent before it this way (a cumulative
 * acknowledgement): when that one still waits in the send queue, behind a send in flight, msg
 * takes its place instead of queueing behind it, so a burst costs one write for its newest
 * message. Messages queued by tau_rpc_call_send are never replaced, and nothing is reordered.
 * Returns as tau_rpc_call_send.
 */
int tau_rpc_call_send_latest(tau_rpc_call *call, const ProtobufCMessage *msg);

/**
 * End the call with `code` and `message` (NULL for none), after every queued message. Only the
 * first finish counts. Thread-safe. Returns 0; -TAU_EIO if already finished or cancelled.
 */
int tau_rpc_call_finish(tau_rpc_call *call, tau_rpc_code code, const char *message);

/** Send `msg` then finish with OK: the whole answer of a unary call. Thread-safe. */
int tau_rpc_call_reply(tau_rpc_call *call, const ProtobufCMessage *msg);

/** Messages queued and not yet sent on this call. Thread-safe. */
size_t tau_rpc_call_send_queue_len(tau_rpc_call *call);

/** True once the call was cancelled (by the client, a deadline, or shutdown). Thread-safe. */
bool tau_rpc_call_is_cancelled(tau_rpc_call *call);

/**
 * Take a reference so the handle stays valid after on_done (e.g. for another thread that
 * sends). Returns `call`. Thread-safe.
 */
tau_rpc_call *tau_rpc_call_ref(tau_rpc_call *call);

/** Drop a reference taken with tau_rpc_call_ref. Thread-safe. NULL is a no-op. */
void tau_rpc_call_unref(tau_rpc_call *call);

/** The method path. Lends; valid as long as the handle. */
const char *tau_rpc_call_method(const tau_rpc_call *call);

/**
 * First value of request metadata `key` (lower-case, e.g. "authorization"); NULL if absent or
 * binary, and NULL for every key once tau_rpc_call_drop_metadata was called. Lends; valid as
 * long as the handle or until tau_rpc_call_drop_metadata, whichever comes first.
 */
const char *tau_rpc_call_metadata(const tau_rpc_call *call, const char *key);

/**
 * Free the call's copy of its request metadata (every header, the bearer token included) once
 * the handler has taken what it needs, typically at the end of on_start of a long-lived
 * stream, so that the copy does not live as long as the call. Afterwards tau_rpc_call_metadata
 * and tau_rpc_call_bearer_token return NULL for every key; the call itself goes on unchanged
 * (peer, method, deadline and sends are not affected). Thread-safe and idempotent; strings
 * lent before it must not be used after it.
 */
void tau_rpc_call_drop_metadata(tau_rpc_call *call);

/**
 * The token of an "authorization: Bearer <token>" header; NULL if absent or after
 * tau_rpc_call_drop_metadata. Lends (as tau_rpc_call_metadata).
 */
const char *tau_rpc_call_bearer_token(const tau_rpc_call *call);

/**
 * The TLS identity of an authenticated peer (client certificate): its subject alternative name
 * when it has one, else its common name. NULL on plaintext or without a verified client cert.
 * Lends.
 */
const char *tau_rpc_call_peer_identity(const tau_rpc_call *call);

/** The verified client certificate's common name; NULL if none. Lends. */
const char *tau_rpc_call_peer_common_name(const tau_rpc_call *call);

/** True when the call arrived over TLS (with or without a client cert). */
bool tau_rpc_call_peer_is_tls(const tau_rpc_call *call);

/** The peer's address, e.g. "ipv4:127.0.0.1:43242" (not authenticated). Lends. */
const char *tau_rpc_call_peer_address(const tau_rpc_call *call);

/** Milliseconds until the client's deadline (0 if passed); -1 when the call has none. */
int64_t tau_rpc_call_ms_left(const tau_rpc_call *call);

/** Attach the handler's per-call state. */
void tau_rpc_call_set_user(tau_rpc_call *call, void *user);

/** The per-call state set with tau_rpc_call_set_user; NULL if none. */
void *tau_rpc_call_user(const tau_rpc_call *call);

/* ------------------------------------------------------------------------------------------ */
/* grpc.health.v1.Health                                                                      */

typedef struct tau_rpc_health tau_rpc_health;

/** Serving status; values of grpc.health.v1.HealthCheckResponse.ServingStatus. */
typedef enum tau_rpc_health_status {
	TAU_RPC_HEALTH_UNKNOWN = 0,
	TAU_RPC_HEALTH_SERVING = 1,
	TAU_RPC_HEALTH_NOT_SERVING = 2
} tau_rpc_health_status;

/**
 * Create the health service state. The overall service "" starts SERVING.
 * Returns 0 and gives *out; -TAU_ENOMEM.
 */
int tau_rpc_health_new(tau_rpc_health **out);

/**
 * Register /grpc.health.v1.Health/Check and /Watch on `srv` (before tau_rpc_server_start).
 * Health calls need no token: Kubernetes grpc probes send none. `h` must outlive `srv`.
 * Returns 0 or the error of tau_rpc_server_add_method.
 */
int tau_rpc_health_register(tau_rpc_health *h, tau_rpc_server *srv);

/**
 * Set the status of `service` ("" is the server as a whole; at most 64 services) and notify
 * every Watch on it. Thread-safe. Returns 0; -TAU_EINVAL; -TAU_ETOOBIG; -TAU_ENOMEM.
 */
int tau_rpc_health_set(tau_rpc_health *h, const char *service, tau_rpc_health_status status);

/** Set every known service NOT_SERVING (call before shutting the server down). Thread-safe. */
void tau_rpc_health_set_all_not_serving(tau_rpc_health *h);

/** Free; only after the server it was registered on is freed. NULL is a no-op. */
void tau_rpc_health_free(tau_rpc_health *h);

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

#endif /* TAU_RPC_H */
