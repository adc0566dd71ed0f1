/*
 * rpc_server_internal.h - what the files of the gRPC server (lib/rpc_server*.c) share; not
 * installed, not API.
 *
 * The server and its registered methods (rpc_server.c), the request slots the core hands new
 * calls through (rpc_server_slots.c), one call's state machine (rpc_server_call.c) and what a
 * call knows of its peer (rpc_server_peer.c).
 */
#ifndef TAU_RPC_SERVER_INTERNAL_H
#define TAU_RPC_SERVER_INTERNAL_H

#include "rpc_internal.h"
#include "tau/hmap.h"
#include "tau/rpc_server.h"

#include <grpc/grpc.h>
#include <grpc/support/time.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct method_entry {
	tau_rpc_method m;
	char *path;
	void *handle; /* from grpc_server_register_method */
};

/* One armed grpc_server_request_(registered_)call. NULL method: the catch-all. */
struct request_slot {
	struct tau_rpc_tag tag;
	tau_rpc_server *srv;
	struct method_entry *method;
	grpc_call *call;
	gpr_timespec deadline;
	grpc_metadata_array md;
	grpc_byte_buffer *payload;
	grpc_call_details details;
};

/* A call to an unknown method: answered UNIMPLEMENTED in one batch, then dropped. */
struct unimplemented_call {
	struct tau_rpc_tag tag;
	tau_rpc_server *srv;
	grpc_call *call;
	grpc_slice details;
	int cancelled;
};

struct md_pair {
	const char *key;
	const char *value;
};

/* A call's request headers, copied in one allocation: the pairs, then their strings. */
struct md_block {
	size_t n;
	struct md_pair pairs[];
};

struct tau_rpc_call {
	struct tau_rpc_tag close_tag;
	struct tau_rpc_tag recv_tag;
	struct tau_rpc_tag send_tag;
	struct tau_rpc_tag status_tag;
	tau_rpc_server *srv;
	struct method_entry *method;
	grpc_call *call;
	pthread_mutex_t mu;
	atomic_int refs;

	int pending; /* batches in flight */
	bool closed; /* RECV_CLOSE_ON_SERVER completed */
	atomic_bool cancelled;
	bool finish_wanted; /* finish called; status goes out after the queue */
	bool status_started;
	bool send_busy;
	bool reading_stopped;
	int close_cancelled; /* written by the core */

	tau_rpc_send_ring sendq; /* packed messages waiting to be sent */
	bool newest_replaceable; /* sendq's newest came from tau_rpc_call_send_latest */
	size_t q_max;
	grpc_byte_buffer *sending;
	grpc_byte_buffer *recv_buf;

	tau_rpc_code finish_code;
	grpc_slice status_details;
	bool have_details;

	_Atomic(struct md_block *) md; /* NULL when none or after tau_rpc_call_drop_metadata */
	char *peer_identity;
	char *peer_cn;
	char *peer_address;   /* and, after its NUL, the address without its port */
	const char *peer_key; /* identity, else the address without its port (not owned) */
	bool peer_counted;    /* holds one of its peer's max_calls_per_peer slots */
	bool peer_tls;
	bool has_deadline;
	int32_t deadline_slack_ms; /* a tenth of the call's whole deadline, clamped */
	gpr_timespec deadline;     /* GPR_CLOCK_MONOTONIC */
	void *user;
};

struct tau_rpc_server {
	tau_rpc_server_opts opts;
	grpc_server *server;
	grpc_completion_queue *cq;
	pthread_t thread;
	bool thread_started;
	pthread_t extra[TAU_RPC_MAX_CQ_THREADS - 1]; /* opts.cq_threads - 1 more pumps */
	int n_extra;
	bool started;
	bool listening;
	bool shut;
	struct method_entry **methods;
	size_t n_methods;

	pthread_mutex_t mu;
	pthread_cond_t cond;
	size_t live_calls;
	size_t live_slots; /* armed requests + unimplemented answers in flight */
	bool shutdown_notified;
	bool shutting_down;
	struct tau_rpc_tag shutdown_tag;
	tau_hmap peers; /* struct peer_calls by key, with max_calls_per_peer (under mu) */
	tau_rpc_server_stats stats; /* under mu */
	uint64_t refused_logged_ms; /* under mu: when a refused message was last logged */
	uint64_t refused_unlogged;  /* under mu: refusals since that line */
	atomic_uint_least64_t sends_coalesced; /* tau_rpc_call_send_latest replacements */
};

/* Calls open from one peer. */
struct peer_calls {
	tau_hmap_node node;
	int calls;
	char key[];
};

/* ---- rpc_server.c: the server's counts of what is open ---- */

/** Take one of the peer's call slots. Returns false when the peer is at the cap. */
bool tau_rpc_server_peer_take(tau_rpc_server *srv, tau_rpc_call *c);

/** A call is over for the core: give back its peer slot and wake a waiting shutdown. */
void tau_rpc_server_call_gone(tau_rpc_server *srv, tau_rpc_call *c);

/** A request slot or an UNIMPLEMENTED answer is gone: wake a waiting shutdown. */
void tau_rpc_server_slot_gone(tau_rpc_server *srv);

/* ---- rpc_server_slots.c ---- */

/**
 * Arm a new request slot for `me` (NULL: the catch-all of unknown methods).
 * @return 0, -TAU_ENOMEM, -TAU_EIO (the core refused: shutdown).
 */
int tau_rpc_server_slot_new(tau_rpc_server *srv, struct method_entry *me);

/* ---- rpc_server_call.c ---- */

/** Start the call the core matched to `slot` (taking it from the slot) and run its handler. */
void tau_rpc_server_call_start(struct request_slot *slot);

/* ---- rpc_server_peer.c ---- */

/** Copy the call's peer address, TLS identity and common name, and set its peer key. */
void tau_rpc_call_copy_peer(tau_rpc_call *c);

/**
 * Copy the request headers into the call, in one allocation.
 * @return 0, -TAU_ETOOBIG (more than 64 entries, or over `max_bytes`), -TAU_ENOMEM.
 */
int tau_rpc_call_copy_metadata(tau_rpc_call *c, const grpc_metadata_array *md, size_t max_bytes);

#endif /* TAU_RPC_SERVER_INTERNAL_H */
