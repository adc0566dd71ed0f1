/*
 * pool.h - the capacity pool per GPU class (docs/aggregator.md and docs/budget.md, rules P1-P3).
 *
 * The pool refers to the facts of every known node and holds the exact sum,
 * per GPU-class flavor, of the allocatable resources of the nodes that count.
 * Updating one node costs O(that node's resources plus its flavor's
 * resources), never O(cluster).  The node store lends the pool its own copy of
 * each node's facts (tau_pool_upsert_node_lent), so a node's facts are held
 * once; tau_pool_upsert_node copies them for callers that keep none.
 */
#ifndef TAU_AGGREGATOR_POOL_H
#define TAU_AGGREGATOR_POOL_H

#include "tau/nodefacts.h"
#include "tau/quantity.h"
#include "tau/selector.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The rules of P1, in the order ExplainNode reports them. */
typedef enum tau_pool_rule_id {
	TAU_POOL_RULE_LINUX = 0,
	TAU_POOL_RULE_GPU_CLASS,
	TAU_POOL_RULE_SELECTOR,
	TAU_POOL_RULE_READY,
	TAU_POOL_RULE_SCHEDULABLE,
	TAU_POOL_RULE_NOT_DELETING,
	/* P2: what the pool sums must fit the budget it becomes */
	TAU_POOL_RULE_KUEUE_RANGE, /**< every allocatable quantity fits Kueue's int64 */
	TAU_POOL_RULE_FLAVOR_SUM,  /**< adding it keeps its flavor's sums within int64 */
	TAU_POOL_RULE_COUNT
} tau_pool_rule_id;

/** The first rule of P2 (ExplainNode names rules before it "P1.", from it "P2."). */
#define TAU_POOL_RULE_FIRST_P2 TAU_POOL_RULE_KUEUE_RANGE

/** The outcome of one rule for one node. */
typedef struct tau_pool_rule {
	const char *name; /**< stable id, e.g. "linux", "gpu-class" */
	bool pass;
	char detail[320]; /**< why, in words */
} tau_pool_rule;

/** A summed resource of a flavor.  Fields are read-only for callers. */
typedef struct tau_pool_sum {
	char *name;
	tau_quantity total;
	uint32_t contributors; /**< counted nodes that advertise it */
	uint32_t n_binary;     /**< ... of which wrote it in BinarySI (non-zero values) */
	uint32_t n_decimal;    /**< ... DecimalSI */
	uint32_t n_exponent;   /**< ... DecimalExponent */
} tau_pool_sum;

/** A GPU-class flavor and its sums, resources sorted by name.  Read-only. */
typedef struct tau_pool_flavor {
	char *name;
	size_t nodes;    /**< counted nodes */
	size_t left_out; /**< eligible nodes left out so that every sum fits Kueue's int64 */
	tau_pool_sum *resources;
	size_t n_resources;
	size_t cap_resources;
} tau_pool_flavor;

typedef struct tau_pool tau_pool;

/** One stored node, as a handle (opaque); valid while the node is stored. */
typedef struct tau_pool_node tau_pool_node;

/** Create an empty pool that counts every node (no selector). @return 0 or -TAU_ENOMEM. */
int tau_pool_new(tau_pool **out);

/** Free the pool; NULL is a no-op. */
void tau_pool_free(tau_pool *pool);

/**
 * Replace the TauCluster node selector and recompute the whole pool; the
 * pool is valid again.  Takes ownership of `sel`; NULL means every node matches.
 * A selector the pool already applies (the same canonical string, or NULL
 * again) changes nothing, the generation included.
 */
int tau_pool_set_selector(tau_pool *pool, tau_selector *sel);

/**
 * The TauCluster's node selector is unusable (e.g. a value the CRD accepts
 * but a label selector cannot hold): fail closed.  No node matches, the
 * selector rule of every node says `reason`, and the pool is invalid
 * (tau_pool_invalid_reason) until tau_pool_set_selector is called.  The
 * same reason again changes nothing.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_pool_set_selector_error(tau_pool *pool, const char *reason);

/**
 * Why the pool cannot be trusted now (an input it depends on is unusable),
 * or NULL when it is valid.  Lends the text; valid until the next change.
 */
const char *tau_pool_invalid_reason(const tau_pool *pool);

/**
 * Add or replace a node's facts (copied).  Validates them first
 * (tau_node_facts_validate): invalid facts are refused and nothing changes.
 * @return 0, -TAU_EINVAL, -TAU_ENOMEM, -TAU_ERANGE (a sum would overflow; nothing changes).
 */
int tau_pool_upsert_node(tau_pool *pool, const tau_node_facts *node);

/**
 * Add or replace a node's facts without copying them: the pool keeps `node`
 * (lent) until the node is upserted again, removed, or the pool freed, and the
 * caller must neither change nor free it until then.  On replacement the old
 * facts are read during the call (to take their contribution out), so the
 * caller frees them only after it returns.  Validates like tau_pool_upsert_node.
 * @param handle  if not NULL, receives the node's entry (see tau_pool_node_is_counted),
 *                valid until the node is removed; the same entry on every upsert
 * @return 0, -TAU_EINVAL, -TAU_ENOMEM, -TAU_ERANGE.
 */
int tau_pool_upsert_node_lent(tau_pool *pool, const tau_node_facts *node,
                              const tau_pool_node **handle);

/** Whether the node of `handle` counts now (O(1), no lookup); false for NULL. */
bool tau_pool_node_is_counted(const tau_pool_node *handle);

/** Forget a node.  @return 0 or -TAU_ENOTFOUND. */
int tau_pool_remove_node(tau_pool *pool, const char *name);

/**
 * Evaluate P1 for a node against the pool's selector.
 * @param rules  receives TAU_POOL_RULE_COUNT entries
 * @return true when the node counts
 */
bool tau_pool_evaluate(const tau_pool *pool, const tau_node_facts *node,
                       tau_pool_rule rules[TAU_POOL_RULE_COUNT]);

/**
 * Explain a stored node.  @return 1 if it counts, 0 if not, -TAU_ENOTFOUND.
 */
int tau_pool_explain(const tau_pool *pool, const char *name,
                     tau_pool_rule rules[TAU_POOL_RULE_COUNT]);

/**
 * Whether a stored node counts now, without re-evaluating the rules.
 * @return 1 if it counts, 0 if not, -TAU_ENOTFOUND.
 */
int tau_pool_node_counted(const tau_pool *pool, const char *name);

/** Number of nodes known to the pool (counted or not). */
size_t tau_pool_node_count(const tau_pool *pool);

/** Number of flavors with at least one counted node. */
size_t tau_pool_flavor_count(const tau_pool *pool);

/** Lends flavor `i` (sorted by name); valid until the next change. */
const tau_pool_flavor *tau_pool_flavor_at(const tau_pool *pool, size_t i);

/** A counter bumped on every change of the pool's sums or flavors. */
uint64_t tau_pool_generation(const tau_pool *pool);

/**
 * Canonical string of a sum.  The sum's format does not depend on the order
 * nodes arrived in: BinarySI when every non-zero contribution was BinarySI,
 * DecimalExponent when every one was, DecimalSI otherwise.
 * @return 0 or -TAU_ETOOBIG.
 */
int tau_pool_sum_format(char *buf, size_t cap, const tau_pool_sum *sum);

#endif /* TAU_AGGREGATOR_POOL_H */
