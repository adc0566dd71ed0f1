/*
 * Unit tests of local token verification (inventory/jwt.h): keys made here with OpenSSL, tokens
 * signed here, one check broken at a time.  Each refusal must name its cause.
 */
#include "inventory/jwt.h"

#include "tau/error.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define AGENT  "system:serviceaccount:tau-system:tau-node-agent"
#define ISSUER "https://kubernetes.default.svc.cluster.local"
#define NOW    1800000000LL

static EVP_PKEY *rsa_key, *ec_key, *other_rsa;

static void b64url(char *out, const unsigned char *in, size_t n)
{
	static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = a[(v >> 18) & 63];
		out[o++] = a[(v >> 12) & 63];
		if (i + 1 < n)
			out[o++] = a[(v >> 6) & 63];
		if (i + 2 < n)
			out[o++] = a[v & 63];
	}
	out[o] = '\0';
}

static void b64url_str(char *out, const char *s)
{
	b64url(out, (const unsigned char *)s, strlen(s));
}

/* The JWK of `k` with `kid`, as JSON text. */
static void jwk_of(char *out, size_t cap, EVP_PKEY *k, const char *kid)
{
	unsigned char buf[600];
	char a[900], b[900];

	if (EVP_PKEY_is_a(k, "RSA")) {
		BIGNUM *n = NULL, *e = NULL;

		assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_N, &n));
		assert_true(EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_RSA_E, &e));
		b64url(a, buf, (size_t)BN_bn2bin(n, buf));
		b64url(b, buf, (size_t)BN_bn2bin(e, buf));
		snprintf(out, cap,
		         "{\"use\":\"sig\",\"kty\":\"RSA\",\"kid\":\"%s\",\"alg\":\"RS256\","
		         "\"n\":\"%s\",\"e\":\"%s\"}",
		         kid, a, b);
		BN_free(n);
		BN_free(e);
	} else {
		unsigned char pub[65];
		size_t len = 0;

		assert_true(EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pub,
		                                            sizeof(pub), &len));
		assert_int_equal(len, 65);
		b64url(a, pub + 1, 32);
		b64url(b, pub + 33, 32);
		snprintf(out, cap,
		         "{\"use\":\"sig\",\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\","
		         "\"x\":\"%s\",\"y\":\"%s\"}",
		         kid, a, b);
	}
}

static tau_jwks *keys_from(const char *json)
{
	cJSON *doc = cJSON_Parse(json);
	tau_jwks *k = NULL;

	assert_non_null(doc);
	assert_int_equal(tau_jwks_parse(&k, doc, NULL), 0);
	cJSON_Delete(doc);
	return k;
}

static tau_jwks *both_keys(void)
{
	char a[2048], b[2048], doc[4200];

	jwk_of(a, sizeof(a), rsa_key, "rsa-1");
	jwk_of(b, sizeof(b), ec_key, "ec-1");
	snprintf(doc, sizeof(doc), "{\"keys\":[%s,%s]}", a, b);
	return keys_from(doc);
}

/* header.claims signed by `k` (RS256 or ES256 by its type); sign NULL: no signing. */
static char *token_with(const char *header, const char *claims, EVP_PKEY *k)
{
	char *out = malloc(20000);
	unsigned char sig[600], der[100];
	size_t sig_len = sizeof(sig);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t hl;

	b64url_str(out, header);
	hl = strlen(out);
	out[hl] = '.';
	b64url_str(out + hl + 1, claims);
	if (k != NULL) {
		assert_int_equal(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k), 1);
		if (EVP_PKEY_is_a(k, "EC")) {
			size_t dl = sizeof(der);
			const unsigned char *p = der;
			ECDSA_SIG *es;
			const BIGNUM *r, *s;

			assert_int_equal(
			        EVP_DigestSign(md, der, &dl, (unsigned char *)out, strlen(out)), 1);
			es = d2i_ECDSA_SIG(NULL, &p, (long)dl);
			ECDSA_SIG_get0(es, &r, &s);
			BN_bn2binpad(r, sig, 32);
			BN_bn2binpad(s, sig + 32, 32);
			ECDSA_SIG_free(es);
			sig_len = 64;
		} else {
			assert_int_equal(EVP_DigestSign(md, sig, &sig_len, (unsigned char *)out,
			                                strlen(out)),
			                 1);
		}
		strcat(out, ".");
		b64url(out + strlen(out), sig, sig_len);
	} else {
		strcat(out, ".c2ln");
	}
	EVP_MD_CTX_free(md);
	return out;
}

#define GOOD_CLAIMS                                                                                \
	"{\"aud\":[\"taugrid\"],\"exp\":1800003600,\"iat\":1800000000,\"nbf\":1800000000,"         \
	"\"iss\":\"" ISSUER "\",\"kubernetes.io\":{\"namespace\":\"tau-system\","                  \
	"\"node\":{\"name\":\"gpu-1\"},\"pod\":{\"name\":\"agent-x\"},"                            \
	"\"serviceaccount\":{\"name\":\"tau-node-agent\"}},\"sub\":\"" AGENT "\"}"

static const tau_jwt_expect expect = {
        .issuer = ISSUER, .audience = "taugrid", .user = AGENT, .now_s = NOW};

static tau_jwt_result check(const tau_jwks *k, const char *token, char *msg, size_t cap)
{
	tau_jwt_claims c;

	return tau_jwt_verify(&c, msg, cap, k, token, &expect);
}

static int setup(void **state)
{
	(void)state;
	rsa_key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	other_rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	ec_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	return rsa_key != NULL && ec_key != NULL && other_rsa != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	EVP_PKEY_free(rsa_key);
	EVP_PKEY_free(other_rsa);
	EVP_PKEY_free(ec_key);
	return 0;
}

static void valid_rs256_and_es256(void **state)
{
	tau_jwks *k = both_keys();
	char *rs = token_with("{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", GOOD_CLAIMS, rsa_key);
	char *es = token_with("{\"alg\":\"ES256\",\"kid\":\"ec-1\",\"typ\":\"JWT\"}", GOOD_CLAIMS,
	                      ec_key);
	tau_jwt_claims c;
	char msg[256];

	(void)state;
	assert_int_equal(tau_jwks_count(k), 2);
	memset(&c, 0, sizeof(c));
	assert_int_equal(tau_jwt_verify(&c, msg, sizeof(msg), k, rs, &expect), TAU_JWT_OK);
	assert_string_equal(c.node, "gpu-1");
	assert_string_equal(c.pod, "agent-x");
	assert_int_equal(c.exp_s, 1800003600);
	memset(&c, 0, sizeof(c));
	assert_int_equal(tau_jwt_verify(&c, msg, sizeof(msg), k, es, &expect), TAU_JWT_OK);
	assert_string_equal(c.node, "gpu-1");
	free(rs);
	free(es);
	tau_jwks_free(k);
}

static void bad_signatures_and_algorithms(void **state)
{
	tau_jwks *k = both_keys();
	struct {
		const char *header;
		EVP_PKEY *key;
		tau_jwt_result want;
		const char *msg;
	} rows[] = {
	        /* signed by a key that is not the one its kid names */
	        {"{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", NULL, TAU_JWT_INVALID,
	         "signature does not verify with key rsa-1"},
	        {"{\"alg\":\"none\",\"kid\":\"rsa-1\"}", NULL, TAU_JWT_INVALID,
	         "algorithm none is not RS256 or ES256"},
	        {"{\"alg\":\"HS256\",\"kid\":\"rsa-1\"}", NULL, TAU_JWT_INVALID,
	         "algorithm HS256 is not RS256 or ES256"},
	        {"{\"kid\":\"rsa-1\"}", NULL, TAU_JWT_INVALID, "algorithm (none) is not"},
	        {"{\"alg\":\"ES256\",\"kid\":\"rsa-1\"}", NULL, TAU_JWT_INVALID,
	         "algorithm ES256 does not match key rsa-1"},
	        {"{\"alg\":\"RS256\"}", NULL, TAU_JWT_INVALID, "header names no key (kid)"},
	        {"{\"alg\":\"RS256\",\"kid\":\"gone\"}", NULL, TAU_JWT_UNKNOWN_KEY,
	         "key gone is not in the issuer's key set"},
	        {"{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"crit\":[\"b64\"]}", NULL, TAU_JWT_INVALID,
	         "critical header"},
	        {"{\"alg\":\"RS256\",\"kid\":\"rsa-1\",\"typ\":\"JOSE\"}", NULL, TAU_JWT_INVALID,
	         "typ is not JWT"},
	};
	char msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *t = token_with(rows[i].header, GOOD_CLAIMS, i == 0 ? other_rsa : NULL);

		assert_int_equal(check(k, t, msg, sizeof(msg)), rows[i].want);
		if (strstr(msg, rows[i].msg) == NULL)
			fail_msg("row %zu: %s, want %s", i, msg, rows[i].msg);
		free(t);
	}
	/* A valid signature moved onto other claims. */
	{
		char *good =
		        token_with("{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", GOOD_CLAIMS, rsa_key);
		char *other = token_with("{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}",
		                         "{\"sub\":\"" AGENT "\"}", NULL);
		char *sig = strrchr(good, '.');

		strcpy(strrchr(other, '.'), sig);
		assert_int_equal(check(k, other, msg, sizeof(msg)), TAU_JWT_INVALID);
		assert_non_null(strstr(msg, "signature does not verify"));
		/* ... and a signature one byte short */
		good[strlen(good) - 3] = '\0';
		assert_int_equal(check(k, good, msg, sizeof(msg)), TAU_JWT_INVALID);
		free(good);
		free(other);
	}
	tau_jwks_free(k);
}

static void claims(void **state)
{
	tau_jwks *k = both_keys();
	struct {
		const char *claims;
		const char *msg;
	} rows[] = {
	        {"{\"aud\":[\"taugrid\"],\"exp\":1800003600,\"iss\":\"https://"
	         "other\",\"sub\":\"" AGENT "\"}",
	         "issuer https://other is not " ISSUER},
	        {"{\"aud\":[\"vault\"],\"exp\":1800003600,\"iss\":\"" ISSUER "\"}",
	         "audience taugrid is not among"},
	        {"{\"aud\":\"taugrid\",\"iss\":\"" ISSUER "\"}", "no exp claim"},
	        {"{\"aud\":\"taugrid\",\"exp\":1799999900,\"iss\":\"" ISSUER "\"}",
	         "expired 100 s ago"},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"nbf\":1800000600,\"iss\":\"" ISSUER
	         "\"}",
	         "not valid for another 600 s"},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"nbf\":\"soon\",\"iss\":\"" ISSUER "\"}",
	         "nbf claim is not a time"},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"iss\":\"" ISSUER
	         "\",\"sub\":\"system:serviceaccount:default:x\"}",
	         "subject system:serviceaccount:default:x is not " AGENT},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"iss\":\"" ISSUER "\",\"sub\":\"" AGENT
	         "\",\"kubernetes.io\":{\"namespace\":\"default\",\"serviceaccount\":{\"name\":"
	         "\"tau-node-agent\"}}}",
	         "kubernetes.io namespace and serviceaccount do not name"},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"iss\":\"" ISSUER "\",\"sub\":\"" AGENT
	         "\",\"kubernetes.io\":{\"namespace\":\"tau-system\",\"serviceaccount\":{\"name\":"
	         "\"tau-node-agent\"},\"pod\":{\"name\":\"p\"}}}",
	         "not bound to a node (kubernetes.io.node.name)"},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"iss\":\"" ISSUER "\",\"sub\":\"" AGENT
	         "\",\"kubernetes.io\":{\"namespace\":\"tau-system\",\"serviceaccount\":{\"name\":"
	         "\"tau-node-agent\"},\"node\":{\"name\":\"n\"}}}",
	         "not bound to a pod (kubernetes.io.pod.name)"},
	        {"{\"aud\":\"taugrid\",\"exp\":1800003600,\"iss\":\"" ISSUER "\",\"sub\":\"" AGENT
	         "\",\"kubernetes.io\":{\"namespace\":\"tau-system\",\"serviceaccount\":{\"name\":"
	         "\"tau-node-agent\"},\"node\":{\"name\":\"\"},\"pod\":{\"name\":\"p\"}}}",
	         "not bound to a node"},
	        {"[1,2]", "claims are not base64url JSON"},
	        {"{\"aud\":", "claims are not base64url JSON"},
	};
	char msg[256];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *t =
		        token_with("{\"alg\":\"ES256\",\"kid\":\"ec-1\"}", rows[i].claims, ec_key);

		assert_int_equal(check(k, t, msg, sizeof(msg)), TAU_JWT_INVALID);
		if (strstr(msg, rows[i].msg) == NULL)
			fail_msg("row %zu: %s, want %s", i, msg, rows[i].msg);
		free(t);
	}
	/* Inside the 60 s leeway, exp just past still passes. */
	{
		tau_jwt_expect late = expect;
		tau_jwt_claims c;
		char *t = token_with("{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", GOOD_CLAIMS, rsa_key);

		late.now_s = 1800003600 + 30;
		assert_int_equal(tau_jwt_verify(&c, msg, sizeof(msg), k, t, &late), TAU_JWT_OK);
		late.now_s = 1800003600 + 60;
		assert_int_equal(tau_jwt_verify(&c, msg, sizeof(msg), k, t, &late),
		                 TAU_JWT_INVALID);
		free(t);
	}
	tau_jwks_free(k);
}

static void malformed_tokens(void **state)
{
	tau_jwks *k = both_keys();
	char *big = malloc(TAU_JWT_MAX_BYTES + 10), msg[256];
	const char *rows[][2] = {
	        {"", "not a JWS compact token"},
	        {"abc", "not a JWS compact token"},
	        {"a.b", "not a JWS compact token"},
	        {"a.b.c.d", "not a JWS compact token"},
	        {"!!!.e30.c2ln", "header is not base64url JSON"},
	        {"e30.e30.c2ln", "algorithm (none)"},              /* {} */
	        {"WzFd.e30.c2ln", "header is not base64url JSON"}, /* [1] */
	        {"eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIn0.e30.!!", "signature is not base64url"},
	        {"eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIn0.e30.", "signature is not base64url"},
	        {"eyJhbGciOiJSUzI1NiIsImtpZCI6InJzYS0xIn0.e30.A", "signature is not base64url"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(check(k, rows[i][0], msg, sizeof(msg)), TAU_JWT_INVALID);
		if (strstr(msg, rows[i][1]) == NULL)
			fail_msg("row %zu (%s): %s, want %s", i, rows[i][0], msg, rows[i][1]);
	}
	memset(big, 'A', TAU_JWT_MAX_BYTES + 5);
	big[10] = '.';
	big[20] = '.';
	big[TAU_JWT_MAX_BYTES + 5] = '\0';
	assert_int_equal(check(k, big, msg, sizeof(msg)), TAU_JWT_INVALID);
	assert_non_null(strstr(msg, "token longer than 16384 bytes"));
	/* No key set at all: nothing is known. */
	{
		char *t = token_with("{\"alg\":\"RS256\",\"kid\":\"rsa-1\"}", GOOD_CLAIMS, rsa_key);

		assert_int_equal(check(NULL, t, msg, sizeof(msg)), TAU_JWT_UNKNOWN_KEY);
		free(t);
	}
	free(big);
	tau_jwks_free(k);
}

static void jwks_parse(void **state)
{
	char rsa[2048], doc[4096], small[2048];
	EVP_PKEY *weak = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	const char *bad[][2] = {
	        {"[]", "not an object with a keys array"},
	        {"{\"keys\":{}}", "not an object with a keys array"},
	        {"{\"keys\":[]}", "no usable key (0 skipped"},
	        {"{\"keys\":[{\"kty\":\"oct\",\"kid\":\"h\",\"k\":\"c2VjcmV0\"}]}", "1 skipped"},
	        {"{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r\",\"n\":\"!!\",\"e\":\"AQAB\"}]}",
	         "JWKS key r: RSA n or e missing or not base64url"},
	        {"{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e\",\"x\":\"AAAA\","
	         "\"y\":\"AAAA\"}]}",
	         "JWKS key e: P-256 x and y must be 32 bytes"},
	        {"{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e\","
	         "\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\","
	         "\"y\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\"}]}",
	         "JWKS key e: not a point on P-256"},
	        {"{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-384\",\"kid\":\"e\",\"x\":\"AA\","
	         "\"y\":\"AA\"}]}",
	         "1 skipped"},
	};
	size_t skipped = 99;
	tau_jwks *k = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *d = cJSON_Parse(bad[i][0]);

		assert_int_equal(tau_jwks_parse(&k, d, NULL), -TAU_EINVAL);
		if (strstr(tau_error_last()->msg, bad[i][1]) == NULL)
			fail_msg("row %zu: %s, want %s", i, tau_error_last()->msg, bad[i][1]);
		cJSON_Delete(d);
	}
	/* A weak RSA key fails the set; keys for encryption, of another alg or without kid are
	 * skipped beside a good one. */
	jwk_of(small, sizeof(small), weak, "weak");
	snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", small);
	{
		cJSON *d = cJSON_Parse(doc);

		assert_int_equal(tau_jwks_parse(&k, d, NULL), -TAU_EINVAL);
		assert_non_null(strstr(tau_error_last()->msg, "RSA modulus of 1024 bits"));
		cJSON_Delete(d);
	}
	jwk_of(rsa, sizeof(rsa), rsa_key, "rsa-1");
	snprintf(doc, sizeof(doc),
	         "{\"keys\":[{\"kty\":\"RSA\",\"use\":\"enc\",\"kid\":\"x\"},"
	         "{\"kty\":\"RSA\",\"alg\":\"RS512\",\"kid\":\"y\"},{\"kty\":\"RSA\"},%s]}",
	         rsa);
	{
		cJSON *d = cJSON_Parse(doc);

		assert_int_equal(tau_jwks_parse(&k, d, &skipped), 0);
		assert_int_equal(skipped, 3);
		assert_int_equal(tau_jwks_count(k), 1);
		tau_jwks_free(k);
		cJSON_Delete(d);
	}
	EVP_PKEY_free(weak);
}

static void b64url_decode(void **state)
{
	unsigned char buf[16];
	const char *s = "aGk";

	(void)state;
	assert_int_equal(tau_jwt_b64url_decode(buf, sizeof(buf), s, s + 3), 2);
	assert_memory_equal(buf, "hi", 2);
	s = "aGk=";
	assert_int_equal(tau_jwt_b64url_decode(buf, sizeof(buf), s, s + 4), 2);
	s = "aG=k";
	assert_int_equal(tau_jwt_b64url_decode(buf, sizeof(buf), s, s + 4), -1);
	s = "a";
	assert_int_equal(tau_jwt_b64url_decode(buf, sizeof(buf), s, s + 1), -1);
	s = "AAAAAAAAAAAAAAAAAAAAAAAA";
	assert_int_equal(tau_jwt_b64url_decode(buf, sizeof(buf), s, s + 24), -1); /* over cap */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(valid_rs256_and_es256),
	        cmocka_unit_test(bad_signatures_and_algorithms),
	        cmocka_unit_test(claims),
	        cmocka_unit_test(malformed_tokens),
	        cmocka_unit_test(jwks_parse),
	        cmocka_unit_test(b64url_decode),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
