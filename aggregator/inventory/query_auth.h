/*
 * query_auth.h - who may query the aggregator: authentication and authorization
 * of QueryService calls delegated to the API server.
 *
 * Every guarded call must carry "authorization: Bearer <token>".  The token
 * is reviewed (TokenReview, the API server's own audiences) and the user it
 * names is authorized with a SubjectAccessReview: verb `get`, API group
 * tau.azure.com, resource `inventory` (node and pool queries) or
 * `workspaces` (workspace queries).  Both steps run on worker threads, never
 * on the rpc CQ thread; the call's request waits, held, until the decision.
 * Decisions are cached briefly by a hash of (resource, token), never past the
 * token's own `exp`.  Reviews waiting for a worker are capped: beyond the cap
 * a call is refused RESOURCE_EXHAUSTED at once, before any API request.
 */
#ifndef TAU_AGGREGATOR_QUERY_AUTH_H
#define TAU_AGGREGATOR_QUERY_AUTH_H

#include "auth.h"

#include "tau/prom.h"
#include "tau/rpc_server.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The API group and verb every query is authorized against. */
#define TAU_QUERY_AUTH_GROUP "tau.azure.com"
#define TAU_QUERY_AUTH_VERB  "get"

/**
 * Review `token` and authorize its user for `resource`, filling `out`:
 * authenticated false (error says why) when the token is not valid;
 * authenticated with `error` set when the user may not `get` the resource;
 * authenticated with error "" when allowed.  Returns 0, or a negative TAU_E*
 * code when the API server could not be asked (the caller answers UNAVAILABLE).
 * Called from worker threads.
 */
typedef int (*tau_query_auth_review_fn)(void *ud, const char *token, const char *resource,
                                        tau_auth_review *out);

/** Settings; zero takes the default in brackets. */
typedef struct tau_query_auth_config {
	tau_query_auth_review_fn review; /**< required */
	void *review_ud;
	int threads;        /**< review workers [2] */
	size_t max_pending; /**< reviews waiting for a worker before RESOURCE_EXHAUSTED [256] */
	int64_t ttl_ms;     /**< cache time of a decision, allowed or not [10000] */
	size_t cache_max;   /**< cached decisions [16384] */
} tau_query_auth_config;

typedef struct tau_query_auth tau_query_auth;

/** Counters for /metrics. */
typedef struct tau_query_auth_counts {
	uint64_t allowed, unauthenticated, denied, unavailable, overloaded, reviews;
	size_t pending;
} tau_query_auth_counts;

/** How long each review pair took (lent, lives as long as `q`); NULL when `q` is NULL. */
const tau_prom_histogram *tau_query_auth_review_latency(const tau_query_auth *q);

/**
 * The status a decision gives: TAU_RPC_OK, TAU_RPC_UNAUTHENTICATED (no token, or
 * `review` not authenticated) or TAU_RPC_PERMISSION_DENIED (authenticated, not
 * allowed).  `msg` says why in words a caller can act on.  Pure.
 */
tau_rpc_code tau_query_auth_decide(char *msg, size_t cap, bool token_present,
                                   const tau_auth_review *review, const char *resource);

/** Create and start the workers.  @return 0, -TAU_EINVAL, -TAU_ENOMEM, -TAU_EIO. */
int tau_query_auth_new(tau_query_auth **out, const tau_query_auth_config *cfg);

/**
 * Stop the workers (after the rpc server is shut down: no call is left) and
 * free.  NULL is a no-op.
 */
void tau_query_auth_free(tau_query_auth *q);

/**
 * Guard `m` (before it is registered): its on_start, on_message and on_done
 * are wrapped so that on_message runs only once the caller is allowed
 * `resource`, on the CQ thread (cached decision) or a worker thread (after a
 * review); the guard owns the call's user pointer (tau_rpc_call_set_user), so
 * the wrapped handlers must not use it.  Unary and server-streaming methods only.
 * @return 0, -TAU_EINVAL (other kinds), -TAU_ENOMEM.
 */
int tau_query_auth_guard(tau_query_auth *q, tau_rpc_method *m, const char *resource);

/** Snapshot of the counters.  Thread-safe. */
void tau_query_auth_counts_get(tau_query_auth *q, tau_query_auth_counts *out);

#endif /* TAU_AGGREGATOR_QUERY_AUTH_H */
