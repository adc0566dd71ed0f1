/*
 * report.h - what tau-node-agent puts on the wire (tau.inventory.v1) and when.
 *
 * Two parts, both free of I/O so they can be unit-tested:
 *  - conversion of a tau_agent_inventory into a protobuf-c NodeInventory;
 *  - the per-stream report session of docs/protocol.md: sequence numbers,
 *    "full inventory first", "send again only when the digest changed",
 *    heartbeats at the interval of the latest ReportAck, RESEND_FULL, and the
 *    ack watchdog (no ack for 3 heartbeat intervals: reconnect).
 */
#ifndef TAU_AGENT_REPORT_H
#define TAU_AGENT_REPORT_H

#include "inventory.h"

#include "tau/inventory/v1/inventory.pb-c.h"

#include <stdbool.h>
#include <stdint.h>

/** Heartbeat interval used until the first ReportAck says otherwise (seconds). */
#define TAU_AGENT_DEFAULT_HEARTBEAT_S 30
/** Acks may be missing for this many heartbeat intervals before the stream is dropped. */
#define TAU_AGENT_ACK_TIMEOUT_INTERVALS 3
/** Largest heartbeat interval adopted from an ack (one hour); larger values are clamped. */
#define TAU_AGENT_MAX_HEARTBEAT_S 3600

/**
 * Convert an inventory to a NodeInventory message.  Unknown strings become "",
 * unknown booleans false and unknown counts 0 (the problems say why, and
 * gpus_probed=false marks GPU counts as "not probed").  Every string is made
 * valid UTF-8 (invalid bytes become '?'), as the wire requires.
 *
 * @param out          receives a new message; free with tau_agent_node_inventory_free
 * @param digest       the inventory's digest (tau_agent_inventory_digest), copied
 * @param observed_ms  when the inventory was built, ms since the epoch
 * @param version      agent version string
 * @return 0 or -TAU_ENOMEM (out untouched).
 */
int tau_agent_inventory_to_proto(Tau__Inventory__V1__NodeInventory **out,
                                 const tau_agent_inventory *inv, const char *digest,
                                 int64_t observed_ms, const char *version);

/** Free a message made by tau_agent_inventory_to_proto.  NULL is a no-op. */
void tau_agent_node_inventory_free(Tau__Inventory__V1__NodeInventory *msg);

/**
 * Copy `s` with every invalid UTF-8 sequence replaced by '?'.
 * @return a new string (free()), or NULL when out of memory; NULL in gives "".
 */
char *tau_agent_utf8_dup(const char *s);

/** What the session wants done next. */
typedef enum tau_agent_action {
	TAU_AGENT_ACTION_NONE = 0,  /**< nothing due now */
	TAU_AGENT_ACTION_INVENTORY, /**< send the current inventory */
	TAU_AGENT_ACTION_HEARTBEAT, /**< send a heartbeat */
	TAU_AGENT_ACTION_RECONNECT  /**< acks stopped: drop the stream and reconnect */
} tau_agent_action;

/** Outcome of one ack, for the caller to log. */
typedef enum tau_agent_ack_result {
	TAU_AGENT_ACK_OK = 0,   /**< accepted */
	TAU_AGENT_ACK_RESEND,   /**< the aggregator wants a full inventory next */
	TAU_AGENT_ACK_REJECTED, /**< the aggregator rejected the report */
	TAU_AGENT_ACK_IGNORED   /**< not connected, or acks a seq never sent */
} tau_agent_ack_result;

/** Report state of the current stream; plain data, times in ms (monotonic). */
typedef struct tau_agent_session {
	bool connected;
	uint64_t last_seq;        /**< seq of the last report sent on this stream; 0: none */
	uint64_t last_acked;      /**< highest seq acked on this stream */
	bool need_full;           /**< the next report must be a full inventory */
	char sent_digest[65];     /**< digest of the last inventory sent on this stream, "" none */
	uint32_t heartbeat_s;     /**< adopted from the latest ack (kept across reconnects) */
	int64_t last_send_ms;     /**< when the last report was sent */
	int64_t unacked_since_ms; /**< start of the ack watchdog window; 0 when all acked */
} tau_agent_session;

/** A disconnected session with the default heartbeat. */
void tau_agent_session_init(tau_agent_session *s);

/** A new stream is up: sequence restarts, a full inventory is due. */
void tau_agent_session_connected(tau_agent_session *s, int64_t now_ms);

/** The stream ended; nothing is sent until the next connect. */
void tau_agent_session_closed(tau_agent_session *s);

/**
 * Apply a ReportAck (seq, heartbeat interval, tau.inventory.v1 AckStatus value).
 * Acks are cumulative.  A positive interval is adopted (clamped to
 * TAU_AGENT_MAX_HEARTBEAT_S).  RESEND_FULL makes the next report a full inventory.
 */
tau_agent_ack_result tau_agent_session_ack(tau_agent_session *s, uint64_t seq, uint32_t interval_s,
                                           int status, int64_t now_ms);

/**
 * Decide what is due now, given the digest of the current inventory (NULL or
 * "" when none has been built yet): a full inventory right after connect, on
 * RESEND_FULL or when the digest differs from the last one sent; a heartbeat
 * when nothing was sent for a heartbeat interval; RECONNECT when reports have
 * gone unacked for TAU_AGENT_ACK_TIMEOUT_INTERVALS intervals.
 */
tau_agent_action tau_agent_session_next(const tau_agent_session *s, int64_t now_ms,
                                        const char *digest);

/** The seq the next report must carry. */
uint64_t tau_agent_session_next_seq(const tau_agent_session *s);

/**
 * Record that a report was sent with tau_agent_session_next_seq().  For an
 * inventory, `digest` is its digest (a heartbeat carries the last one sent).
 */
void tau_agent_session_sent(tau_agent_session *s, tau_agent_action what, const char *digest,
                            int64_t now_ms);

/**
 * Milliseconds from now until the session has something timed to do
 * (heartbeat or ack watchdog); -1 when nothing is scheduled (disconnected
 * or nothing sent yet); 0 when it is due now.
 */
int64_t tau_agent_session_wait_ms(const tau_agent_session *s, int64_t now_ms);

/**
 * Build an AgentReport around a body.  Only the pointers are stored: `body`
 * must outlive `report` (the usual pattern is all on the caller's stack).
 */
void tau_agent_report_init_inventory(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                                     Tau__Inventory__V1__NodeInventory *inv);
void tau_agent_report_init_heartbeat(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                                     Tau__Inventory__V1__Heartbeat *hb);
void tau_agent_report_init_stopping(Tau__Inventory__V1__AgentReport *report, uint64_t seq,
                                    Tau__Inventory__V1__Stopping *stopping);

#endif /* TAU_AGENT_REPORT_H */
