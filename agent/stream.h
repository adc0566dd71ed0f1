/*
 * stream.h - the agent's Report stream to the aggregator, seen from the event loop.
 *
 * Wraps a lib/rpc channel and reconnecting stream.  The rpc callbacks run on
 * the channel's completion-queue thread; they only copy what happened into a
 * bounded queue and wake the event loop through an fd, so nothing the loop
 * does (probing, building reports) ever waits on the network, and nothing on
 * the CQ thread waits on the loop.
 */
#ifndef TAU_AGENT_STREAM_H
#define TAU_AGENT_STREAM_H

#include "tau/inventory/v1/inventory.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Largest token file read (projected ServiceAccount tokens are ~1 KiB). */
#define TAU_AGENT_TOKEN_MAX 16384
/** Largest CA bundle read. */
#define TAU_AGENT_CA_MAX (1024 * 1024)
/** Events queued for the loop before older OK acks are merged / new ones dropped. */
#define TAU_AGENT_STREAM_QUEUE_MAX 1024

/** The Report method path. */
#define TAU_AGENT_REPORT_PATH "/tau.inventory.v1.InventoryService/Report"

typedef enum tau_agent_stream_event_type {
	TAU_AGENT_EV_CONNECTED = 1, /**< response headers arrived: a new stream is up */
	TAU_AGENT_EV_ACK,           /**< a ReportAck */
	TAU_AGENT_EV_CLOSED         /**< the attempt ended; retry_ms < 0: no retry */
} tau_agent_stream_event_type;

/** One thing that happened on the stream. */
typedef struct tau_agent_stream_event {
	tau_agent_stream_event_type type;
	uint64_t seq;        /**< ACK: acked seq */
	uint32_t interval_s; /**< ACK: heartbeat_interval_seconds */
	int status;          /**< ACK: AckStatus; CLOSED: gRPC status code */
	int retry_ms;        /**< CLOSED: next attempt in, -1 none */
	bool token_error;    /**< CLOSED: the token file could not be re-read (old one kept) */
	char message[256];   /**< ACK message / CLOSED status details / token error */
} tau_agent_stream_event;

/**
 * Longest wait between two connection attempts while the aggregator cannot be reached (the
 * channel's reconnect backoff: 200 ms growing x1.6, jittered).  It bounds how long an agent
 * stays away once a Ready replica is back behind the Service after a failover; at 10,000 agents
 * it costs at most 2,000 refused connections a second while none is.
 */
#define TAU_AGENT_RECONNECT_MAX_MS 5000

/** How to reach the aggregator. */
typedef struct tau_agent_stream_opts {
	const char *target;     /**< HOST:PORT (required) */
	const char *ca_file;    /**< PEM CA bundle; NULL: plaintext */
	const char *token_file; /**< bearer token file; NULL: none */
	int wake_fd;            /**< written (8 bytes, eventfd style) after each queued event */
	int backoff_initial_ms; /**< 0: lib/rpc default (500 ms) */
	int backoff_max_ms;     /**< 0: lib/rpc default (30 s) */
} tau_agent_stream_opts;

typedef struct tau_agent_stream tau_agent_stream;

/**
 * Read a token file: at most TAU_AGENT_TOKEN_MAX bytes, surrounding
 * whitespace trimmed, must not be empty.
 * @param out receives a new string (free()); untouched on failure
 * @return 0, -TAU_EIO (unreadable), -TAU_EINVAL (empty), -TAU_ETOOBIG, -TAU_ENOMEM.
 */
int tau_agent_read_token(char **out, const char *path);

/**
 * Make the channel (reads the CA file and the token now) and open the stream;
 * its first attempt starts at once, later ones after lib/rpc's backoff.
 * @return 0; -TAU_EIO (CA or token unreadable, channel); -TAU_EINVAL; -TAU_ENOMEM.
 */
int tau_agent_stream_open(tau_agent_stream **out, const tau_agent_stream_opts *opts);

/**
 * Pop the oldest queued event.  @return true when one was copied into `ev`.
 * Thread-safe.
 */
bool tau_agent_stream_poll(tau_agent_stream *s, tau_agent_stream_event *ev);

/**
 * Queue a report on the current attempt.
 * @return 0; -TAU_EAGAIN not connected (a CLOSED event follows); others from lib/rpc.
 */
int tau_agent_stream_send(tau_agent_stream *s, const Tau__Inventory__V1__AgentReport *report);

/** Half-close after the queued reports (shutdown).  @return 0 or -TAU_EAGAIN. */
int tau_agent_stream_close_send(tau_agent_stream *s);

/**
 * Drop the current attempt and start a new one now (ack watchdog).  The old
 * attempt's CLOSED event is queued before the new one's events.
 * @return 0 or an error of tau_rpc_stream_open.
 */
int tau_agent_stream_restart(tau_agent_stream *s);

/** Cancel the stream and free everything.  Never from an rpc callback.  NULL: no-op. */
void tau_agent_stream_free(tau_agent_stream *s);

#endif /* TAU_AGENT_STREAM_H */
