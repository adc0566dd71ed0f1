/*
 * auth.h - who may report for which node.
 *
 * An agent authenticates with its projected ServiceAccount token; the
 * aggregator asks the API server (TokenReview, with its audience) who the
 * token belongs to, then decides: the user must be the agent ServiceAccount
 * and the token must be bound to the node the report names.  Reviews are
 * cached by a hash of the token for the token's lifetime (its JWT `exp`), or
 * a bounded TTL when the token does not say.
 */
#ifndef TAU_AGGREGATOR_AUTH_H
#define TAU_AGGREGATOR_AUTH_H

#include "tau/rpc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Extra key that binds a ServiceAccount token to a node. */
#define TAU_AUTH_NODE_EXTRA "authentication.kubernetes.io/node-name"

/** The outcome of one TokenReview, reduced to what the decision needs. */
typedef struct tau_auth_review {
	bool authenticated;
	char username[256];  /**< "" unless authenticated */
	char node_name[254]; /**< the node-name extra, "" when absent */
	char error[256];     /**< why not authenticated, "" if none */
} tau_auth_review;

/**
 * Review one token.  Returns 0 with *out filled (authenticated or not), or a
 * negative TAU_E* code when the API could not be asked (then the agent is
 * told UNAVAILABLE and retries).  Called from auth worker threads.
 */
typedef int (*tau_auth_review_fn)(void *ud, const char *token, tau_auth_review *out);

/**
 * Fill `out` from a TokenReview's answer (NULL strings count as "").  A user or node name
 * that does not fit its field is never cut, because a cut name could equal the expected
 * one: the review becomes unauthenticated, `error` saying which name was too long.  The
 * error text, only ever shown, is cut to fit.
 * @return 0; -TAU_EINVAL (review refused as described, message set).
 */
int tau_auth_review_set(tau_auth_review *out, bool authenticated, const char *username,
                        const char *node_name, const char *error);

/**
 * Build the ServiceAccount user name from "NS:NAME" into `out`
 * ("system:serviceaccount:NS:NAME").  @return 0 or -TAU_EINVAL.
 */
int tau_auth_sa_user(char *out, size_t cap, const char *ns_name);

/**
 * Decide whether a reviewed token may open a Report stream (who, not which
 * node).  `token_present` false: no bearer token.  `expired`: the token's own
 * `exp` has passed.  Fills `msg` with the reason.
 * @return TAU_RPC_OK, TAU_RPC_UNAUTHENTICATED (no, bad, expired, wrong
 *         audience) or TAU_RPC_PERMISSION_DENIED (a valid token of another user,
 *         or one not bound to a node).
 */
tau_rpc_code tau_auth_decide_user(char *msg, size_t cap, bool token_present, bool expired,
                                  const tau_auth_review *review, const char *expected_user);

/**
 * Decide whether a stream whose token is bound to node `bound` (the review's
 * node_name) may report for `node`.
 * @return TAU_RPC_OK or TAU_RPC_PERMISSION_DENIED (msg says why).
 */
tau_rpc_code tau_auth_decide_node(char *msg, size_t cap, const char *bound, const char *node);

/**
 * Read the `exp` claim (seconds since the epoch) of a JWT without verifying it
 * (the API server verifies; this only bounds how long a review is cached).
 * @return 0, -TAU_ENOTFOUND (not a JWT, or no numeric exp).
 */
int tau_auth_token_expiry(int64_t *exp_s, const char *token);

/**
 * Read the `sub` claim of a JWT without verifying it, into `out` (cut to `cap`).  Only ever
 * used to refuse a token early: a token whose own claims name another user than the agent
 * ServiceAccount cannot pass the TokenReview, so it costs no API request.
 * @return 0, -TAU_ENOTFOUND (not a JWT, or no string sub).
 */
int tau_auth_token_subject(char *out, size_t cap, const char *token);

/**
 * Refuse, before any TokenReview, a Report token that cannot be the agent ServiceAccount's:
 * one that is not a JWT (three base64url segments, the first a JSON object header), or whose
 * unverified claims are not those of `expected_user` ("system:serviceaccount:NS:NAME"): `sub`
 * must be it, and a `kubernetes.io` claim, when present, must name the same namespace and
 * ServiceAccount. Nothing here trusts the token (the review does); it only spares the API
 * server reviews that cannot succeed. Fills `msg`.
 * @return TAU_RPC_OK (worth a review); TAU_RPC_UNAUTHENTICATED (not a JWT, no `sub`, or
 *         claims that contradict each other); TAU_RPC_PERMISSION_DENIED (`sub` names another
 *         user: the answer a review would give).
 */
tau_rpc_code tau_auth_token_precheck(char *msg, size_t cap, const char *token,
                                     const char *expected_user);

/** SHA-256 of the token as 64 lower-case hex digits plus NUL. */
void tau_auth_token_hash(char out[65], const char *token);

/**
 * A bounded cache of reviews keyed by token hash (kept as its 32 raw bytes; a key that is
 * not 64 hex digits is hashed to 32 bytes), each user name held once for all the entries
 * naming it and freed with the last.  Thread-safe.
 */
typedef struct tau_auth_cache tau_auth_cache;

/** @param max_entries  cap (oldest-expiring dropped beyond it) @return 0 or -TAU_ENOMEM */
int tau_auth_cache_new(tau_auth_cache **out, size_t max_entries);
void tau_auth_cache_free(tau_auth_cache *c);

/** Look up a review still valid at `now_ms`.  @return true and fills *out when found. */
bool tau_auth_cache_get(tau_auth_cache *c, const char *hash, int64_t now_ms, tau_auth_review *out);

/** Keep `review` until `expires_ms`. */
void tau_auth_cache_put(tau_auth_cache *c, const char *hash, const tau_auth_review *review,
                        int64_t expires_ms, int64_t now_ms);

/** Entries now (tests, metrics). */
size_t tau_auth_cache_size(tau_auth_cache *c);

/** Distinct user names the entries hold now (tests). */
size_t tau_auth_cache_users(tau_auth_cache *c);

#endif /* TAU_AGGREGATOR_AUTH_H */
