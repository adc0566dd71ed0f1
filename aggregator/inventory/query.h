/*
 * query.h - QueryService answers built from the node store: node status,
 * node list, rule explanation and the pool, as protobuf-c messages.
 *
 * Every message returned here is allocated with malloc and freed with
 * protobuf_c_message_free_unpacked(msg, NULL), never tau_rpc_message_free (that one frees
 * only what tau_rpc_message_decode gave: a decoded message is one arena).
 * The caller holds whatever lock guards the store.
 */
#ifndef TAU_AGGREGATOR_QUERY_H
#define TAU_AGGREGATOR_QUERY_H

#include "nodestore.h"
#include "workspace/summary.h"

#include "tau/inventory/v1/query.pb-c.h"

#include <stdint.h>

/** Names of the rules ExplainNode adds around the pool's P1 rules. */
#define TAU_QUERY_RULE_API   "api.node"
#define TAU_QUERY_RULE_AGENT "agent.reported"
/** Rules per explanation: api.node, the P1 rules, agent.reported. */
#define TAU_QUERY_RULE_COUNT (TAU_POOL_RULE_COUNT + 2)

/** ListNodes pages: default and largest number of nodes, and the byte budget of one page. */
#define TAU_QUERY_PAGE_DEFAULT 500
#define TAU_QUERY_PAGE_MAX     1000
#define TAU_QUERY_PAGE_BYTES   (768 * 1024)
/** Most missing node names a Pool carries (missing_count has the total). */
#define TAU_QUERY_POOL_MISSING_MAX 64

/** How queries judge liveness. */
typedef struct tau_query_opts {
	int64_t now_ms;
	int64_t stale_after_ms; /**< a connected agent silent this long is stale */
} tau_query_opts;

/** One rule as ExplainNode reports it. */
typedef struct tau_query_rule {
	char name[32];
	bool pass;
	char detail[384];
} tau_query_rule;

/**
 * Evaluate every rule for the record `st`.  @return true when the node counts now.
 */
bool tau_query_rules(const tau_nodestore *store, const tau_node_status *st,
                     tau_query_rule rules[TAU_QUERY_RULE_COUNT]);

/** True when the record is stale at opts->now_ms. */
bool tau_query_is_stale(const tau_node_status *st, const tau_query_opts *opts);

/** The status of one record.  @return 0 or -TAU_ENOMEM. */
int tau_query_node_status(Tau__Inventory__V1__NodeStatus **out, const tau_nodestore *store,
                          const tau_node_status *st, const tau_query_opts *opts);

/**
 * One page of ListNodes, filtered by `req` (may be NULL): at most
 * req->page_size nodes (0: TAU_QUERY_PAGE_DEFAULT, capped at
 * TAU_QUERY_PAGE_MAX) and about TAU_QUERY_PAGE_BYTES, after req->page_token.
 * next_page_token is set when more records follow.  O(log n + page).
 * @return 0, -TAU_EINVAL (malformed page_token), -TAU_ENOMEM.
 */
int tau_query_list_nodes(Tau__Inventory__V1__ListNodesResponse **out, const tau_nodestore *store,
                         const Tau__Inventory__V1__ListNodesRequest *req,
                         const tau_query_opts *opts);

/**
 * GetNode: status plus the last inventory (unpacked from the record's bytes).
 * @return 0, -TAU_ENOTFOUND, -TAU_ENOMEM.
 */
int tau_query_get_node(Tau__Inventory__V1__GetNodeResponse **out, const tau_nodestore *store,
                       const char *name, const tau_query_opts *opts);

/** ExplainNode.  @return 0, -TAU_ENOTFOUND, -TAU_ENOMEM. */
int tau_query_explain(Tau__Inventory__V1__ExplainNodeResponse **out, const tau_nodestore *store,
                      const char *name);

/**
 * The pool now (generation and computed time left 0 for the caller to set).
 * @return 0 or -TAU_ENOMEM.
 */
int tau_query_pool(Tau__Inventory__V1__Pool **out, const tau_nodestore *store);

/**
 * GetCapacity: the free-now figures of every GPU class of the pool (capacity.h);
 * computed_unix_ms left 0 for the caller to set.  O(classes x nodes).
 * @return 0 or -TAU_ENOMEM.
 */
int tau_query_capacity(Tau__Inventory__V1__GetCapacityResponse **out, const tau_nodestore *store,
                       const tau_query_opts *opts);

/**
 * Fit (capacity.h's tau_capacity_fit as a message).
 * @return 0, -TAU_EINVAL or -TAU_ENOTFOUND (bad request: the message names the field),
 *         -TAU_ENOMEM.
 */
int tau_query_fit(Tau__Inventory__V1__FitResponse **out, const tau_nodestore *store,
                  const Tau__Inventory__V1__FitRequest *req, const tau_query_opts *opts);

/**
 * WorkspaceSummary for one controller summary (pure).  Unset strings become
 * ""; queue is the LocalQueue; last_transition_unix_ms stays 0 (the summary
 * does not carry it).
 * @return 0 or -TAU_ENOMEM.  out untouched on failure.
 */
int tau_query_workspace(Tau__Inventory__V1__WorkspaceSummary **out, const tau_ws_summary *s);

/**
 * ListWorkspaces for `n` summaries (in the given order; the controller sorts
 * them by name).  @return 0 or -TAU_ENOMEM.  out untouched on failure.
 */
int tau_query_list_workspaces(Tau__Inventory__V1__ListWorkspacesResponse **out,
                              const tau_ws_summary *s, size_t n);

#endif /* TAU_AGGREGATOR_QUERY_H */
