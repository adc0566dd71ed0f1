/*
 * jwt.h - checking a projected ServiceAccount token locally.
 *
 * The API server signs each projected token (a JWT) with a key it publishes as a JSON Web Key
 * Set (`/openid/v1/jwks`, named by `/.well-known/openid-configuration`).  With that set the
 * aggregator can check an agent's token itself: the signature (RS256 or ES256 only), the
 * issuer, the audience, `exp`/`nbf`, the ServiceAccount (`sub` and the `kubernetes.io` claim)
 * and the node and pod the token is bound to.  A token that passes is admitted at once and
 * still confirmed by a TokenReview later (service_review.c); one that does not pass is never
 * admitted on its claims: it waits for its TokenReview, as it did before local checks existed.
 *
 * Everything is fail closed: any parse error, unknown algorithm, missing claim or oversized
 * part is a "no".  Pure functions over the token and the key set, so unit tests cover them.
 */
#ifndef TAU_AGGREGATOR_JWT_H
#define TAU_AGGREGATOR_JWT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The longest token checked locally (a real one is about 1 KiB). */
#define TAU_JWT_MAX_BYTES 16384
/** Keys kept from one JWKS; more are ignored (a real set has one or two). */
#define TAU_JWKS_MAX_KEYS 16
/** Seconds of clock skew allowed on `exp` and `nbf` (the API server allows 60 s too). */
#define TAU_JWT_LEEWAY_S 60

/**
 * Decode base64url (the standard alphabet's `+` and `/` and trailing `=` are read too) of
 * [p, end) into `buf`.  @return the length, or -1 (an invalid character, or over `cap`).
 */
long tau_jwt_b64url_decode(unsigned char *buf, size_t cap, const char *p, const char *end);

/** A parsed key set: RSA and P-256 EC keys by `kid`. */
typedef struct tau_jwks tau_jwks;

/**
 * Read a JWKS document (`{"keys": [...]}`).  Keys of another type or curve, for another use
 * than `sig`, or without a `kid` are skipped (and counted in *skipped when not NULL); a key
 * whose own fields are malformed (bad base64url, an RSA modulus under 2048 bits, a point not
 * on the curve) fails the whole set.
 * @return 0 (a set with at least one key), -TAU_EINVAL (message set), -TAU_ENOMEM.
 */
int tau_jwks_parse(tau_jwks **out, const cJSON *doc, size_t *skipped);
void tau_jwks_free(tau_jwks *k);
/** Keys held. */
size_t tau_jwks_count(const tau_jwks *k);

/** What a token must say. */
typedef struct tau_jwt_expect {
	const char *issuer;   /**< `iss`, from the discovery document */
	const char *audience; /**< one of `aud` */
	const char *user;     /**< `sub`: "system:serviceaccount:NS:NAME" */
	int64_t now_s;        /**< seconds since the epoch */
} tau_jwt_expect;

/** What a verified token says. */
typedef struct tau_jwt_claims {
	char node[254]; /**< kubernetes.io.node.name */
	char pod[254];  /**< kubernetes.io.pod.name */
	int64_t exp_s;
} tau_jwt_claims;

typedef enum tau_jwt_result {
	TAU_JWT_OK = 0,      /**< verified: every check passed */
	TAU_JWT_UNKNOWN_KEY, /**< well formed, but its `kid` is not in the set (refetch it) */
	TAU_JWT_INVALID,     /**< anything else (msg says what) */
} tau_jwt_result;

/**
 * Check `token` against `keys` and `e`.  Fills `out` only on TAU_JWT_OK and `msg` (cut to
 * `cap`) otherwise.
 */
tau_jwt_result tau_jwt_verify(tau_jwt_claims *out, char *msg, size_t cap, const tau_jwks *keys,
                              const char *token, const tau_jwt_expect *e);

#endif /* TAU_AGGREGATOR_JWT_H */
