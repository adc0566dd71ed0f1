/*
 * keys.h - the service-account issuer's public keys, kept fresh, for local token checks.
 *
 * A thread fetches the issuer (`/.well-known/openid-configuration`) and its key set
 * (`/openid/v1/jwks`) through the caller's fetch function: at start, every 5 minutes, after a
 * failure (backoff 1 s doubling to 30 s) and when a token names a key the set does not hold
 * (a rotation), at most once every 10 s.  Verification reads the set under a read lock, so the
 * gRPC threads check tokens in parallel.  Until a set is held every check answers
 * TAU_JWT_UNKNOWN_KEY: the stream then waits for its TokenReview (fail closed).
 */
#ifndef TAU_AGGREGATOR_KEYS_H
#define TAU_AGGREGATOR_KEYS_H

#include "jwt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * Fetch the issuer and its keys.  @return 0 with *issuer (malloc'd) and *keys, or a negative
 * TAU_E* code with the message set.  Called from the keys thread only.
 */
typedef int (*tau_auth_keys_fetch_fn)(void *ud, char **issuer, tau_jwks **keys);

typedef struct tau_auth_keys tau_auth_keys;

/** Counters for /metrics. */
typedef struct tau_auth_keys_stats {
	uint64_t fetched, fetch_failed; /**< key set fetches that succeeded / failed */
	uint64_t keys;                  /**< keys held now (0 until the first fetch) */
} tau_auth_keys_stats;

/**
 * @param audience  the `aud` a token must carry (--token-audience)
 * @param user      the agent ServiceAccount user ("system:serviceaccount:NS:NAME")
 * @return 0, -TAU_EINVAL, -TAU_ENOMEM
 */
int tau_auth_keys_new(tau_auth_keys **out, tau_auth_keys_fetch_fn fetch, void *ud,
                      const char *audience, const char *user);
/** Start the thread (its first fetch runs at once).  @return 0 or -TAU_EIO. */
int tau_auth_keys_start(tau_auth_keys *k);
/** Stop the thread and free; NULL is a no-op. */
void tau_auth_keys_free(tau_auth_keys *k);

/**
 * Check `token` (jwt.h) with the keys held, now.  An unknown key asks the thread for a
 * refetch.  Thread-safe.
 */
tau_jwt_result tau_auth_keys_verify(tau_auth_keys *k, const char *token, tau_jwt_claims *out,
                                    char *msg, size_t cap);

void tau_auth_keys_stats_get(tau_auth_keys *k, tau_auth_keys_stats *out);

#endif /* TAU_AGGREGATOR_KEYS_H */
