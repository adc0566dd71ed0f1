/*
 * jwt.c - JWKS parsing and local verification of projected ServiceAccount tokens (jwt.h).
 *
 * Keys are OpenSSL public keys built from the JWK's parameters (RSA n/e, P-256 x/y); the
 * signature covers the token's first two segments exactly as sent.  Each check that fails
 * says which, so a refusal in a log names its cause.
 */
#include "jwt.h"

#include "tau/base64.h"
#include "tau/error.h"
#include "tau/json.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_MAX   1024 /* decoded header bytes */
#define CLAIMS_MAX   8192 /* decoded claims bytes */
#define SIG_MAX      1024 /* decoded signature bytes (RSA-8192) */
#define KID_MAX      128
#define RSA_MIN_BITS 2048

typedef enum key_kind { KEY_RSA, KEY_EC } key_kind;

typedef struct jwk {
	char kid[KID_MAX];
	key_kind kind;
	EVP_PKEY *pkey;
} jwk;

struct tau_jwks {
	size_t n;
	jwk keys[TAU_JWKS_MAX_KEYS];
};

long tau_jwt_b64url_decode(unsigned char *buf, size_t cap, const char *p, const char *end)
{
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;

	if (p == end || (size_t)(end - p) / 4 * 3 + 3 > cap)
		return -1;
	for (; p < end && *p != '='; p++) {
		int v = tau_base64_value((unsigned char)*p, true);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[n++] = (unsigned char)(acc >> bits);
		}
	}
	for (; p < end; p++)
		if (*p != '=')
			return -1;
	if (bits >= 6)
		return -1; /* one character left over: not a whole byte */
	return (long)n;
}

/* ---- JWKS ---- */

/* Decode a JWK member into buf; -1 when absent, not a string or not base64url. */
static long member_bytes(unsigned char *buf, size_t cap, const cJSON *k, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(k, name);

	if (!cJSON_IsString(v))
		return -1;
	return tau_jwt_b64url_decode(buf, cap, v->valuestring,
	                             v->valuestring + strlen(v->valuestring));
}

static EVP_PKEY *pkey_from(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
	EVP_PKEY_CTX *ctx = params != NULL ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
	EVP_PKEY *pkey = NULL;

	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		pkey = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pkey;
}

static int rsa_key(EVP_PKEY **out, const cJSON *k, const char *kid)
{
	unsigned char n[1024], e[16];
	long ln = member_bytes(n, sizeof(n), k, "n"), le = member_bytes(e, sizeof(e), k, "e");
	OSSL_PARAM_BLD *bld;
	BIGNUM *bn = NULL, *be = NULL;
	size_t skip = 0;

	if (ln <= 0 || le <= 0)
		return tau_error_set(TAU_EINVAL, "JWKS key %s: RSA n or e missing or not base64url",
		                     kid);
	while (skip < (size_t)ln && n[skip] == 0)
		skip++;
	if (((size_t)ln - skip) * 8 < RSA_MIN_BITS)
		return tau_error_set(TAU_EINVAL,
		                     "JWKS key %s: RSA modulus of %zu bits (at least %d)", kid,
		                     ((size_t)ln - skip) * 8, RSA_MIN_BITS);
	bld = OSSL_PARAM_BLD_new();
	bn = BN_bin2bn(n, (int)ln, NULL);
	be = BN_bin2bn(e, (int)le, NULL);
	*out = NULL;
	if (bld != NULL && bn != NULL && be != NULL &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
		*out = pkey_from("RSA", bld);
	BN_free(bn);
	BN_free(be);
	OSSL_PARAM_BLD_free(bld);
	return *out != NULL ? 0 : tau_error_set(TAU_EINVAL, "JWKS key %s: not an RSA key", kid);
}

static int ec_key(EVP_PKEY **out, const cJSON *k, const char *kid)
{
	unsigned char pub[1 + 64], x[40], y[40];
	long lx = member_bytes(x, sizeof(x), k, "x"), ly = member_bytes(y, sizeof(y), k, "y");
	OSSL_PARAM_BLD *bld;
	EVP_PKEY_CTX *check;
	int ok = 0;

	if (lx != 32 || ly != 32)
		return tau_error_set(TAU_EINVAL,
		                     "JWKS key %s: P-256 x and y must be 32 bytes of base64url",
		                     kid);
	pub[0] = 0x04; /* uncompressed point */
	memcpy(pub + 1, x, 32);
	memcpy(pub + 33, y, 32);
	bld = OSSL_PARAM_BLD_new();
	*out = NULL;
	if (bld != NULL &&
	    OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) &&
	    OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, sizeof(pub)))
		*out = pkey_from("EC", bld);
	OSSL_PARAM_BLD_free(bld);
	check = *out != NULL ? EVP_PKEY_CTX_new_from_pkey(NULL, *out, NULL) : NULL;
	ok = check != NULL && EVP_PKEY_public_check(check) == 1;
	EVP_PKEY_CTX_free(check);
	if (!ok) {
		EVP_PKEY_free(*out);
		*out = NULL;
		return tau_error_set(TAU_EINVAL, "JWKS key %s: not a point on P-256", kid);
	}
	return 0;
}

int tau_jwks_parse(tau_jwks **out, const cJSON *doc, size_t *skipped)
{
	const cJSON *keys =
	        cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "keys") : NULL;
	const cJSON *k;
	tau_jwks *set;
	size_t skip = 0;
	int rc = 0;

	if (!cJSON_IsArray(keys))
		return tau_error_set(TAU_EINVAL, "JWKS is not an object with a keys array");
	set = calloc(1, sizeof(*set));
	if (set == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(k, keys)
	{
		const cJSON *kty = cJSON_GetObjectItemCaseSensitive(k, "kty");
		const cJSON *kid = cJSON_GetObjectItemCaseSensitive(k, "kid");
		const cJSON *use = cJSON_GetObjectItemCaseSensitive(k, "use");
		const cJSON *crv = cJSON_GetObjectItemCaseSensitive(k, "crv");
		const cJSON *alg = cJSON_GetObjectItemCaseSensitive(k, "alg");
		bool rsa = cJSON_IsString(kty) && strcmp(kty->valuestring, "RSA") == 0;
		bool ec = cJSON_IsString(kty) && strcmp(kty->valuestring, "EC") == 0 &&
		          cJSON_IsString(crv) && strcmp(crv->valuestring, "P-256") == 0;
		jwk *j;

		if (!cJSON_IsObject(k) || (!rsa && !ec) || !cJSON_IsString(kid) ||
		    kid->valuestring[0] == '\0' || strlen(kid->valuestring) >= KID_MAX ||
		    (use != NULL &&
		     (!cJSON_IsString(use) || strcmp(use->valuestring, "sig") != 0)) ||
		    (alg != NULL && (!cJSON_IsString(alg) ||
		                     strcmp(alg->valuestring, rsa ? "RS256" : "ES256") != 0)) ||
		    set->n == TAU_JWKS_MAX_KEYS) {
			skip++;
			continue;
		}
		j = &set->keys[set->n];
		snprintf(j->kid, sizeof(j->kid), "%s", kid->valuestring);
		j->kind = rsa ? KEY_RSA : KEY_EC;
		rc = rsa ? rsa_key(&j->pkey, k, j->kid) : ec_key(&j->pkey, k, j->kid);
		if (rc < 0)
			break;
		set->n++;
	}
	if (rc == 0 && set->n == 0)
		rc = tau_error_set(TAU_EINVAL,
		                   "JWKS holds no usable key (%zu skipped: only RSA and P-256 EC "
		                   "signing keys with a kid are used)",
		                   skip);
	if (rc < 0) {
		tau_jwks_free(set);
		return rc;
	}
	if (skipped != NULL)
		*skipped = skip;
	*out = set;
	return 0;
}

void tau_jwks_free(tau_jwks *k)
{
	if (k == NULL)
		return;
	for (size_t i = 0; i < k->n; i++)
		EVP_PKEY_free(k->keys[i].pkey);
	free(k);
}

size_t tau_jwks_count(const tau_jwks *k)
{
	return k != NULL ? k->n : 0;
}

/* ---- verification ---- */

static const jwk *find_key(const tau_jwks *keys, const char *kid)
{
	for (size_t i = 0; keys != NULL && i < keys->n; i++)
		if (strcmp(keys->keys[i].kid, kid) == 0)
			return &keys->keys[i];
	return NULL;
}

/* A JSON object from one base64url segment, or NULL. */
static cJSON *segment_object(const char *p, const char *end, size_t cap)
{
	unsigned char *buf = malloc(cap);
	long n = buf != NULL ? tau_jwt_b64url_decode(buf, cap, p, end) : -1;
	cJSON *obj = NULL;

	if (n > 0 && tau_json_parse(&obj, (const char *)buf, (size_t)n, cap) == 0 &&
	    !cJSON_IsObject(obj)) {
		cJSON_Delete(obj);
		obj = NULL;
	}
	free(buf);
	return n > 0 ? obj : NULL;
}

static bool signature_ok(const jwk *k, const char *input, size_t input_len,
                         const unsigned char *sig, size_t sig_len)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char der[80];
	const unsigned char *s = sig;
	size_t len = sig_len;
	bool ok = false;

	if (md == NULL)
		return false;
	if (k->kind == KEY_EC) {
		/* JWS ES256 is r || s, 32 bytes each; OpenSSL wants the DER ECDSA-Sig-Value. */
		ECDSA_SIG *es = sig_len == 64 ? ECDSA_SIG_new() : NULL;
		BIGNUM *r = es != NULL ? BN_bin2bn(sig, 32, NULL) : NULL;
		BIGNUM *ss = es != NULL ? BN_bin2bn(sig + 32, 32, NULL) : NULL;
		unsigned char *p = der;
		int n;

		if (es == NULL || r == NULL || ss == NULL || !ECDSA_SIG_set0(es, r, ss)) {
			BN_free(r);
			BN_free(ss);
			ECDSA_SIG_free(es);
			EVP_MD_CTX_free(md);
			return false;
		}
		n = i2d_ECDSA_SIG(es, NULL);
		if (n > 0 && (size_t)n <= sizeof(der))
			n = i2d_ECDSA_SIG(es, &p);
		ECDSA_SIG_free(es);
		if (n <= 0 || (size_t)n > sizeof(der)) {
			EVP_MD_CTX_free(md);
			return false;
		}
		s = der;
		len = (size_t)n;
	} else if (sig_len != (size_t)EVP_PKEY_get_size(k->pkey)) {
		EVP_MD_CTX_free(md);
		return false;
	}
	ok = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k->pkey) == 1 &&
	     EVP_DigestVerify(md, s, len, (const unsigned char *)input, input_len) == 1;
	EVP_MD_CTX_free(md);
	return ok;
}

static bool aud_has(const cJSON *aud, const char *want)
{
	const cJSON *a;

	if (cJSON_IsString(aud))
		return strcmp(aud->valuestring, want) == 0;
	if (!cJSON_IsArray(aud))
		return false;
	cJSON_ArrayForEach(a, aud)
	{
		if (cJSON_IsString(a) && strcmp(a->valuestring, want) == 0)
			return true;
	}
	return false;
}

/* A whole number of seconds in a sane range, into *out. */
static bool seconds(const cJSON *v, int64_t *out)
{
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e12)
		return false;
	*out = (int64_t)v->valuedouble;
	return true;
}

/* The string `o`.`a`.`b` (b NULL: `o`.`a`) when it is a non-empty string under `max` bytes. */
static const char *claim_string(const cJSON *o, const char *a, const char *b, size_t max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b != NULL)
		v = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, b) : NULL;
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0' || strlen(v->valuestring) >= max)
		return NULL;
	return v->valuestring;
}

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		snprintf(msg, cap, __VA_ARGS__);                                                   \
		res = TAU_JWT_INVALID;                                                             \
		goto out;                                                                          \
	} while (0)

/* The claims checks, after the signature held. */
static tau_jwt_result check_claims(tau_jwt_claims *out, char *msg, size_t cap, const cJSON *c,
                                   const tau_jwt_expect *e)
{
	static const char prefix[] = "system:serviceaccount:";
	tau_jwt_result res = TAU_JWT_OK;
	const cJSON *k8s = cJSON_GetObjectItemCaseSensitive(c, "kubernetes.io");
	const char *iss = claim_string(c, "iss", NULL, 1024),
	           *sub = claim_string(c, "sub", NULL, 512);
	const char *ns, *sa, *node, *pod, *colon;
	int64_t exp = 0, nbf = 0;
	size_t lp = strlen(prefix);

	if (iss == NULL || e->issuer == NULL || strcmp(iss, e->issuer) != 0)
		FAIL("issuer %.200s is not %.200s", iss != NULL ? iss : "(none)",
		     e->issuer != NULL ? e->issuer : "(unknown)");
	if (!aud_has(cJSON_GetObjectItemCaseSensitive(c, "aud"), e->audience))
		FAIL("audience %.200s is not among the token's", e->audience);
	if (!seconds(cJSON_GetObjectItemCaseSensitive(c, "exp"), &exp))
		FAIL("no exp claim");
	if (exp + TAU_JWT_LEEWAY_S <= e->now_s)
		FAIL("expired %lld s ago", (long long)(e->now_s - exp));
	if (cJSON_GetObjectItemCaseSensitive(c, "nbf") != NULL) {
		if (!seconds(cJSON_GetObjectItemCaseSensitive(c, "nbf"), &nbf))
			FAIL("nbf claim is not a time");
		if (nbf > e->now_s + TAU_JWT_LEEWAY_S)
			FAIL("not valid for another %lld s (nbf)", (long long)(nbf - e->now_s));
	}
	if (sub == NULL || strcmp(sub, e->user) != 0)
		FAIL("subject %.200s is not %.200s", sub != NULL ? sub : "(none)", e->user);
	ns = claim_string(k8s, "namespace", NULL, 254);
	sa = cJSON_IsObject(k8s) ? claim_string(k8s, "serviceaccount", "name", 254) : NULL;
	colon = strncmp(e->user, prefix, lp) == 0 ? strchr(e->user + lp, ':') : NULL;
	if (ns == NULL || sa == NULL || colon == NULL ||
	    strlen(ns) != (size_t)(colon - e->user - lp) ||
	    strncmp(ns, e->user + lp, strlen(ns)) != 0 || strcmp(sa, colon + 1) != 0)
		FAIL("kubernetes.io namespace and serviceaccount do not name %.200s", e->user);
	node = cJSON_IsObject(k8s) ? claim_string(k8s, "node", "name", sizeof(out->node)) : NULL;
	pod = cJSON_IsObject(k8s) ? claim_string(k8s, "pod", "name", sizeof(out->pod)) : NULL;
	if (node == NULL || pod == NULL)
		FAIL("not bound to a %s (kubernetes.io.%s.name)", node == NULL ? "node" : "pod",
		     node == NULL ? "node" : "pod");
	snprintf(out->node, sizeof(out->node), "%s", node);
	snprintf(out->pod, sizeof(out->pod), "%s", pod);
	out->exp_s = exp;
out:
	return res;
}

tau_jwt_result tau_jwt_verify(tau_jwt_claims *out, char *msg, size_t cap, const tau_jwks *keys,
                              const char *token, const tau_jwt_expect *e)
{
	size_t len = token != NULL ? strnlen(token, TAU_JWT_MAX_BYTES + 1) : 0;
	const char *p1 = token != NULL ? memchr(token, '.', len) : NULL;
	const char *p2 = p1 != NULL ? memchr(p1 + 1, '.', len - (size_t)(p1 + 1 - token)) : NULL;
	const char *end = token + len;
	cJSON *header = NULL, *claims = NULL;
	unsigned char sig[SIG_MAX];
	long sig_len;
	const cJSON *alg, *kid, *typ, *crit;
	const jwk *k;
	tau_jwt_claims got;
	tau_jwt_result res = TAU_JWT_OK;

	msg[0] = '\0';
	if (len > TAU_JWT_MAX_BYTES)
		FAIL("token longer than %d bytes", TAU_JWT_MAX_BYTES);
	if (p2 == NULL || memchr(p2 + 1, '.', (size_t)(end - p2 - 1)) != NULL)
		FAIL("not a JWS compact token (three dot-separated parts)");
	header = segment_object(token, p1, HEADER_MAX);
	if (header == NULL)
		FAIL("header is not base64url JSON");
	alg = cJSON_GetObjectItemCaseSensitive(header, "alg");
	kid = cJSON_GetObjectItemCaseSensitive(header, "kid");
	typ = cJSON_GetObjectItemCaseSensitive(header, "typ");
	crit = cJSON_GetObjectItemCaseSensitive(header, "crit");
	if (!cJSON_IsString(alg) ||
	    (strcmp(alg->valuestring, "RS256") != 0 && strcmp(alg->valuestring, "ES256") != 0))
		FAIL("algorithm %.40s is not RS256 or ES256",
		     cJSON_IsString(alg) ? alg->valuestring : "(none)");
	if (typ != NULL && (!cJSON_IsString(typ) || strcmp(typ->valuestring, "JWT") != 0))
		FAIL("typ is not JWT");
	if (crit != NULL)
		FAIL("critical header parameters are not understood");
	if (!cJSON_IsString(kid) || kid->valuestring[0] == '\0')
		FAIL("header names no key (kid)");
	k = find_key(keys, kid->valuestring);
	if (k == NULL) {
		snprintf(msg, cap, "key %.100s is not in the issuer's key set", kid->valuestring);
		res = TAU_JWT_UNKNOWN_KEY;
		goto out;
	}
	if ((k->kind == KEY_RSA) != (strcmp(alg->valuestring, "RS256") == 0))
		FAIL("algorithm %s does not match key %.100s", alg->valuestring, k->kid);
	sig_len = tau_jwt_b64url_decode(sig, sizeof(sig), p2 + 1, end);
	if (sig_len <= 0)
		FAIL("signature is not base64url");
	if (!signature_ok(k, token, (size_t)(p2 - token), sig, (size_t)sig_len))
		FAIL("signature does not verify with key %.100s", k->kid);
	claims = segment_object(p1 + 1, p2, CLAIMS_MAX);
	if (claims == NULL)
		FAIL("claims are not base64url JSON");
	memset(&got, 0, sizeof(got));
	res = check_claims(&got, msg, cap, claims, e);
	if (res == TAU_JWT_OK)
		*out = got;
out:
	cJSON_Delete(header);
	cJSON_Delete(claims);
	return res;
}
