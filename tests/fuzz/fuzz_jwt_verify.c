/*
 * fuzz_jwt_verify.c - libFuzzer target for local token verification (inventory/jwt.h).
 *
 * Any bytes, as a bearer token, go to tau_jwt_verify against a fixed key set (one P-256 key,
 * kid "k"): it must answer one of its three results with a NUL-terminated message, never
 * TAU_JWT_OK (nobody here holds the private key), and never read or write out of bounds.  The
 * same bytes, parsed as JSON, go to tau_jwks_parse as a key set the API server might answer.
 */
#include "inventory/jwt.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char jwks_text[] =
        "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"k\",\"use\":\"sig\","
        "\"x\":\"kINHDOIyewopZeNZdXpkAIIoLtZOc-tTEGsiKcVKHF4\","
        "\"y\":\"3UYtQnoJxf-9GXUAcmZ-V-q3_92tpLN0GWYh3ELUV1U\"}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static tau_jwks *keys;
	tau_jwt_expect e = {.issuer = "https://kubernetes.default.svc.cluster.local",
	                    .audience = "taugrid",
	                    .user = "system:serviceaccount:tau-system:tau-node-agent",
	                    .now_s = 1800000000};
	char *token = malloc(size + 1), msg[128];
	tau_jwt_claims c;
	tau_jwt_result r;
	cJSON *doc = NULL;

	if (token == NULL)
		return 0;
	if (keys == NULL) {
		cJSON *d = cJSON_Parse(jwks_text);

		if (d == NULL || tau_jwks_parse(&keys, d, NULL) != 0) {
			fprintf(stderr, "fuzz_jwt_verify: the fixed key set does not parse\n");
			abort();
		}
		cJSON_Delete(d);
	}
	memcpy(token, data, size);
	token[size] = '\0';
	r = tau_jwt_verify(&c, msg, sizeof(msg), keys, token, &e);
	if ((r != TAU_JWT_UNKNOWN_KEY && r != TAU_JWT_INVALID) || strlen(msg) >= sizeof(msg) ||
	    msg[0] == '\0') {
		fprintf(stderr, "fuzz_jwt_verify: result %d, message \"%s\"\n", (int)r, msg);
		abort();
	}
	if (tau_json_parse(&doc, (const char *)data, size, 65536) == 0) {
		tau_jwks *k = NULL;
		int rc = tau_jwks_parse(&k, doc, NULL);

		if ((rc == 0) != (k != NULL) ||
		    (rc != 0 && rc != -TAU_EINVAL && rc != -TAU_ENOMEM) ||
		    (rc == 0 &&
		     (tau_jwks_count(k) == 0 || tau_jwks_count(k) > TAU_JWKS_MAX_KEYS))) {
			fprintf(stderr, "fuzz_jwt_verify: tau_jwks_parse returned %d\n", rc);
			abort();
		}
		tau_jwks_free(k);
		cJSON_Delete(doc);
	}
	free(token);
	return 0;
}
