/*
 * nodestore.h - one record per node: what the API says, what the agent said,
 * whether the agent is connected, and the sync gate over all of them.
 *
 * The record's lifetime follows the Node object: a deleted Node removes it,
 * a disconnected agent leaves its last report in place, marked stale.  The
 * Node object is the authority for everything the pool decides on (Ready,
 * unschedulable, deletion, allocatable, labels): a node counts with the
 * Node's facts, and the agent's report only opens the gate for it and adds
 * what only the node sees.  A difference between the agent's view and the
 * Node's is recorded (tau_node_status.mismatch), never counted.  The
 * gate keeps "not heard from yet" from ever reading as "has nothing": the
 * pool is established only once every GPU node known from the Node watch
 * has reported, or the grace period has passed (then the silent nodes count
 * with the allocatable the API shows for them, and are named as missing).
 */
#ifndef TAU_AGGREGATOR_NODESTORE_H
#define TAU_AGGREGATOR_NODESTORE_H

#include "drastore.h"
#include "nodetruth.h"
#include "pool.h"
#include "tau/nodefacts.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tau_nodestore tau_nodestore;

/** Where the facts a node counts with came from. */
/**
 * Why a node is in the pool's input.  Either way the pool counts the Node
 * object's facts; the source says what let the node in.
 */
typedef enum tau_node_source {
	TAU_NODE_SOURCE_NONE = 0, /**< not in the pool's input (yet) */
	TAU_NODE_SOURCE_AGENT,    /**< its agent has reported */
	TAU_NODE_SOURCE_API       /**< its agent never reported; the grace period is over */
} tau_node_source;

/** Room for the description of an agent/Node mismatch, NUL included. */
#define TAU_NODE_MISMATCH_MAX 192

/** A read-only view of one record. */
typedef struct tau_node_status {
	const char *name;
	bool api_known;        /**< a Node object exists */
	const char *api_error; /**< the Node exists but could not be read (why), else NULL */
	const char *mismatch;  /**< how the agent's report differs from the Node, else NULL */
	bool gpu_node;         /**< the Node carries the gpu-class label */
	bool reported;         /**< an agent report has been accepted since start */
	bool connected;        /**< the agent's stream is open now */
	bool stale;            /**< reported, but the stream is closed */
	int64_t last_heard_ms; /**< time of the last report or heartbeat, 0 if never */
	tau_node_source source;
	bool counted; /**< the pool counts it now (tau_pool_node_counted, without a lookup) */
	const tau_node_facts *facts; /**< the Node's facts; the agent's when there is no Node */
	/** What the agent last reported (== facts while it agrees with its Node); NULL if never.
	 * It changes only with the agent's next report, never with a Node update. */
	const tau_node_facts *agent_facts;
	const uint8_t *inventory; /**< the agent's last inventory, opaque bytes; NULL if none */
	size_t inventory_len;
	uint8_t inventory_elided; /**< the mask given with it (tau_nodestore_set_inventory) */
	/** What only the node knows, decoded from the agent's last inventory (nodetruth.h);
	 * NULL if no agent reported.  Lent: valid until the next change of the store. */
	const tau_nodetruth *truth;
	/** The agent.* rules `truth` fails against `facts` (truthrules.h): bit 1 << rule id;
	 * 0 without truth.  Kept with the record, updated when either changes. */
	uint8_t truth_failed;
} tau_node_status;

/**
 * Create a store.  `now_ms` starts the grace period of `sync_timeout_ms`.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_nodestore_new(tau_nodestore **out, int64_t now_ms, int64_t sync_timeout_ms);

/** Free; NULL is a no-op. */
void tau_nodestore_free(tau_nodestore *store);

/**
 * The pool computed from the records.  Lends it.  The pool borrows each
 * record's Node facts (tau_pool_upsert_node_lent): they are held once.
 */
const tau_pool *tau_nodestore_pool(const tau_nodestore *store);

/** Replace the TauCluster node selector (ownership moves; NULL: all nodes). */
int tau_nodestore_set_selector(tau_nodestore *store, tau_selector *sel);

/** The TauCluster's node selector is unusable: nothing counts (tau_pool_set_selector_error). */
int tau_nodestore_set_selector_error(tau_nodestore *store, const char *reason);

/**
 * Count the DRA devices of `dra` (lent, kept; NULL: none) with each node's allocatable
 * (docs/budget.md, "How DRA devices count"), and recount the nodes whose DRA devices
 * changed.  Call it again after every change of `dra` so every node follows it; a node
 * that changes meanwhile is counted with `dra` as it is then.
 * @return 0 or the first error of a recount (-TAU_ENOMEM, -TAU_ETOOBIG, -TAU_ERANGE).
 */
int tau_nodestore_set_dra(tau_nodestore *store, tau_dra_store *dra);

/**
 * The DRA view the nodes were last counted with (see tau_nodestore_set_dra), or NULL when
 * there is none.  Lends it: valid until the DRA store or this store changes.
 */
const tau_dra_view *tau_nodestore_dra_view(const tau_nodestore *store);

/** Why Kueue's configuration cannot be read (tau_dra_store_kueue_error), or NULL. */
const char *tau_nodestore_dra_kueue_error(const tau_nodestore *store);

/** A Node was added or changed in the API (facts copied). */
int tau_nodestore_api_upsert(tau_nodestore *store, const tau_node_facts *facts);

/**
 * A Node exists but could not be read (e.g. a quantity out of range): it
 * stops counting, whatever it or its agent said before, and `reason` is
 * kept for queries until a readable version arrives.  @return 0, -TAU_ENOMEM.
 */
int tau_nodestore_api_unreadable(tau_nodestore *store, const char *name, const char *reason);

/** A Node was deleted: its record goes, whatever the agent said.  -TAU_ENOTFOUND if unknown. */
int tau_nodestore_api_delete(tau_nodestore *store, const char *name);

/** The Node watch has delivered its initial list. */
void tau_nodestore_api_synced(tau_nodestore *store);

/**
 * Accept an authenticated agent's report for its node (facts validated and
 * copied).  Invalid facts are refused (-TAU_EINVAL) and nothing changes.
 * @return 0 when stored, 1 when the node is connected and already holds these
 *         exact facts (only its liveness is refreshed: the pool cannot have
 *         changed), or a negative error.
 */
int tau_nodestore_report(tau_nodestore *store, const tau_node_facts *facts, int64_t now_ms);

/**
 * Keep the agent's last inventory as opaque bytes (e.g. the packed protobuf) with
 * the record, for queries; copied, replacing the previous one.  The bytes live
 * and die with the record.  Call it right after the tau_nodestore_report that
 * accepted this inventory's facts (and before its tau_nodestore_set_truth):
 * `elided` (opaque to the store, 0 for none) says which parts were left out
 * because agent_facts gives them back, and those facts stay until the next
 * report.  `fingerprint` (0: none) stands for the inventory as received, of which
 * the facts, these bytes and the truth set next were all made
 * (tau_nodestore_report_same).  On failure the previous copy is dropped too (it may
 * lean on facts that report replaced), and the fingerprint with it.
 * @return 0, -TAU_ENOTFOUND, -TAU_ETOOBIG (over 4 GiB), -TAU_ENOMEM.
 */
int tau_nodestore_set_inventory(tau_nodestore *store, const char *name, const uint8_t *bytes,
                                size_t len, uint8_t elided, uint64_t fingerprint);

/**
 * The node's agent sent, on its connected stream, the very inventory whose
 * `fingerprint` the record keeps (tau_nodestore_set_inventory; tau_report_fingerprint:
 * equal but for its digest and observation time): its facts and node truth were
 * validated and stored from the same bytes, so only its liveness is refreshed and
 * the kept bytes are replaced by `bytes` (packed with the same `elided` mask, so a
 * query sees the new digest and time).  A new report of other facts clears the
 * fingerprint (tau_nodestore_report), so this never stands for facts replaced since.
 * @return 1 when done; 0 when the record is not connected and reported or does not
 *         keep that fingerprint and mask (nothing changed: take the full path);
 *         -TAU_ENOMEM (the kept copy and its fingerprint are dropped).
 */
int tau_nodestore_report_same(tau_nodestore *store, const char *name, uint64_t fingerprint,
                              const uint8_t *bytes, size_t len, uint8_t elided, int64_t now_ms);

/**
 * Keep the node-local facts decoded from the agent's last inventory
 * (tau_nodetruth_decode) with the record, replacing the previous ones.  Call
 * it right after the tau_nodestore_report that accepted the inventory.
 * Ownership of `truth` moves to the store, also on failure (it is freed).
 * @return 0 or -TAU_ENOTFOUND.
 */
int tau_nodestore_set_truth(tau_nodestore *store, const char *name, tau_nodetruth *truth);

/** Bytes the records' node truth takes in all (tau_nodetruth.bytes summed). */
size_t tau_nodestore_truth_bytes(const tau_nodestore *store);

/**
 * Distinct strings the records' facts hold once across nodes: label keys and values
 * and resource names (a label value equal to the node's name is its name, not counted).
 * A string goes when the last facts naming it do.
 */
size_t tau_nodestore_shared_strings(const tau_nodestore *store);

/** A heartbeat from a node's agent.  -TAU_ENOTFOUND if it never reported. */
int tau_nodestore_heartbeat(tau_nodestore *store, const char *name, int64_t now_ms);

/** The agent's stream opened or closed. */
void tau_nodestore_set_connected(tau_nodestore *store, const char *name, bool connected,
                                 int64_t now_ms);

/** Advance time: opens the gate once the grace period has passed. */
void tau_nodestore_tick(tau_nodestore *store, int64_t now_ms);

/** True once the pool may be published and budgets may shrink.  Never goes back. */
bool tau_nodestore_established(const tau_nodestore *store);

/** Number of records. */
size_t tau_nodestore_count(const tau_nodestore *store);

/** Number of records whose agent's report differs from their Node object. */
size_t tau_nodestore_mismatch_count(const tau_nodestore *store);

/**
 * News for the log: when node `name`'s agent/Node difference appeared or
 * changed since the last call, copy its description into buf and return
 * true (once per change); otherwise false and buf untouched.
 */
bool tau_nodestore_take_mismatch(tau_nodestore *store, const char *name, char *buf, size_t cap);

/**
 * Status of record `i` in name order (0 <= i < count).  Lends; valid until
 * the next change.  @return 0 or -TAU_ENOTFOUND.
 */
int tau_nodestore_at(const tau_nodestore *store, size_t i, tau_node_status *out);

/** Index of the first record whose name sorts after `name` (count when none). */
size_t tau_nodestore_index_after(const tau_nodestore *store, const char *name);

/** Status by name.  @return 0 or -TAU_ENOTFOUND. */
int tau_nodestore_get(const tau_nodestore *store, const char *name, tau_node_status *out);

/**
 * GPU nodes known from the API that have not reported, in name order.
 * Fills up to `cap` lent names; returns how many there are in all.  The count
 * is kept as records change: O(1) with cap 0 or none missing.
 */
size_t tau_nodestore_missing(const tau_nodestore *store, const char **names, size_t cap);

#endif /* TAU_AGGREGATOR_NODESTORE_H */
