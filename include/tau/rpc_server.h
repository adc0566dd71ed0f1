/*
 * tau/rpc_server.h - the gRPC server of libtau: methods, listening ports, one call's handle
 * (send, finish, its peer and headers), and the grpc.health.v1 service.
 *
 * Threads: a server runs completion-queue (CQ) threads; every server callback runs on one and
 * must not block. tau_rpc_call_send/finish/reply may be called from any thread (hold a
 * reference with tau_rpc_call_ref to keep the handle past on_done).
 */
#ifndef TAU_RPC_SERVER_H
#define TAU_RPC_SERVER_H

#include "tau/rpc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

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
	 * tau_rpc_message_free, whole: see tau_rpc_message_decode; a handler may hold it past
	 * this call, e.g. while the caller is authenticated). Unary and server-streaming methods
	 * get exactly one; streaming
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

#endif /* TAU_RPC_SERVER_H */
