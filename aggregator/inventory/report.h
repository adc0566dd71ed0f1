/*
 * report.h - what the aggregator accepts from an agent's Report stream: the
 * validation and conversion of a NodeInventory into tau_node_facts, and the
 * per-stream sequence rules of docs/protocol.md.  Pure functions, no I/O.
 */
#ifndef TAU_AGGREGATOR_REPORT_H
#define TAU_AGGREGATOR_REPORT_H

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/nodefacts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Domain limits on one inventory, inside lib/rpc's 1 MiB message cap. */
#define TAU_REPORT_MAX_LABELS    512  /**< labels per node (the agent sends at most 512) */
#define TAU_REPORT_MAX_RESOURCES 256  /**< allocatable entries per node */
#define TAU_REPORT_MAX_CSI       64   /**< CSI drivers per node */
#define TAU_REPORT_MAX_PROBLEMS  65   /**< problems per node (64 + "N more") */
#define TAU_REPORT_MAX_TEXT      1024 /**< bytes of one free-text string (problem, detail) */
#define TAU_REPORT_MAX_ID        253  /**< bytes of an identifier (uid, versions, digest) */

/**
 * Validate an inventory and convert it into facts.  Checks: node name a
 * DNS-1123 subdomain; gpu_class equal to the tau.azure.com/gpu-class label;
 * labels valid and listed once; resource names qualified names listed once;
 * quantities parse and are not negative; every count and string within the
 * limits above.
 * @param out  zeroed facts; filled on success (tau_node_facts_clear), left
 *             zeroed on failure
 * @return 0; -TAU_EINVAL or -TAU_ETOOBIG naming the first bad field; -TAU_ENOMEM.
 */
int tau_report_to_facts(tau_node_facts *out, const Tau__Inventory__V1__NodeInventory *inv);

/** Facts whose strings are borrowed from an inventory message (no copies). */
typedef struct tau_report_view {
	tau_node_facts facts; /**< read-only; valid while the inventory lives */
	void *block;          /**< the facts' arrays, one allocation */
} tau_report_view;

/**
 * tau_report_to_facts without copying a string: the same checks, the same errors, the facts'
 * strings point into inv (which must outlive the view). For the ingest path, where the store
 * copies only facts that changed.
 * @return as tau_report_to_facts; on failure the view is left zeroed.
 */
int tau_report_view_facts(tau_report_view *out, const Tau__Inventory__V1__NodeInventory *inv);

/** Release a view's arrays (the strings were never its own). */
void tau_report_view_clear(tau_report_view *v);

/*
 * The node store keeps each agent's last inventory for GetNode.  Its labels and allocatable
 * repeat the agent's facts the store holds anyway (tau_node_status.agent_facts), so the kept
 * copy leaves out what those facts give back exactly, in the agent's order, and GetNode puts
 * it back.  The agent's facts change only with its next report, which replaces the copy.
 */
#define TAU_REPORT_ELIDED_LABELS      0x1u /**< labels were sent in the facts' (sorted) order */
#define TAU_REPORT_ELIDED_ALLOCATABLE 0x2u /**< allocatable likewise, quantities canonical */

/**
 * Which parts of `inv` the facts converted from it (tau_report_view_facts) give back field for
 * field: a TAU_REPORT_ELIDED_* mask.  A part sent in another order, or a quantity not written
 * canonically, is kept.
 */
unsigned tau_report_inventory_elidable(const Tau__Inventory__V1__NodeInventory *inv,
                                       const tau_node_facts *facts);

/** A shallow copy of `inv` without the parts in `elided` (borrows everything), to pack. */
void tau_report_inventory_kept(Tau__Inventory__V1__NodeInventory *out,
                               const Tau__Inventory__V1__NodeInventory *inv, unsigned elided);

/**
 * Put the parts in `elided` back into an unpacked kept copy, from the agent's facts.  What is
 * added is allocated as protobuf_c_message_free_unpacked(.., NULL) frees it.
 * @return 0 or -TAU_ENOMEM (inv is then still whole, less the parts not put back).
 */
int tau_report_inventory_restore(Tau__Inventory__V1__NodeInventory *inv,
                                 const tau_node_facts *facts, unsigned elided);

/**
 * A keyed 64-bit fingerprint of the inventory in an AgentReport as received (`wire`, `len`: the
 * report's bytes, tau_rpc_message_wire): SipHash-2-4 of every byte of the inventory's fields
 * but observed_unix_ms and digest, so two inventories with equal fingerprints decode to the
 * same facts, node truth and labels whatever their digests say (the digest is the agent's word
 * and decides nothing here). The key is drawn from the kernel once per process, so an agent
 * cannot craft two inventories that collide. Returns 0, meaning "none", when the bytes do not
 * decide alone: not exactly one inventory field and no other body, a group, a malformed
 * field, a digest over TAU_REPORT_MAX_ID, or no random key.
 */
uint64_t tau_report_fingerprint(const uint8_t *wire, size_t len);

/** Sequence state of one Report stream. */
typedef struct tau_report_seq {
	uint64_t last;  /**< highest seq accepted, 0 before the first */
	bool have_full; /**< an inventory was accepted on this stream */
} tau_report_seq;

/** What to do with one report, before looking at its content. */
typedef enum tau_report_action {
	TAU_REPORT_PROCESS = 0, /**< process it, then tau_report_seq_accept */
	TAU_REPORT_DUPLICATE,   /**< already seen: ack OK, do nothing */
	TAU_REPORT_NEED_FULL,   /**< ack RESEND_FULL, do not advance */
	TAU_REPORT_INVALID_SEQ  /**< seq 0 or no body: ack REJECTED */
} tau_report_action;

/**
 * Classify report `seq` with body `body` (the oneof case) against the stream state.
 * Heartbeats before the first inventory, and heartbeats after a gap, need a full
 * inventory; an inventory is complete on its own and is processed after a gap.
 */
tau_report_action tau_report_seq_classify(const tau_report_seq *st, uint64_t seq,
                                          Tau__Inventory__V1__AgentReport__BodyCase body);

/** Record that report `seq` with `body` was processed and accepted. */
void tau_report_seq_accept(tau_report_seq *st, uint64_t seq,
                           Tau__Inventory__V1__AgentReport__BodyCase body);

/**
 * Whether the OK ack of report `seq` (classified `act`, then accepted into `st`) covers every
 * ack sent before it on the stream, so it may replace an OK ack still waiting to be written
 * (tau_rpc_call_send_latest): only when `seq` is the highest accepted. The ack of a duplicate,
 * a replay or a Stopping below `last` is queued as it is: replacing the waiting ack would drop
 * a higher seq the agent then never sees acknowledged.
 */
bool tau_report_ack_supersedes(const tau_report_seq *st, uint64_t seq, tau_report_action act);

#endif /* TAU_AGGREGATOR_REPORT_H */
