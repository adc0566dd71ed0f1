/*
 * fuzz_jwt_expiry.c - libFuzzer target for the aggregator's JWT expiry reader.
 *
 * Any bytes, as a bearer token an agent (or anyone reaching the gRPC port) sends, go to
 * tau_auth_token_expiry (aggregator/inventory/auth.c), which base64url-decodes the payload
 * into a fixed buffer and parses it as JSON before any TokenReview.  It must either find no
 * expiry or return one in its documented range, and never read or write out of bounds.  The
 * same bytes go to tau_auth_token_subject (the early refusal of another user's JWT).
 */
#include "inventory/auth.h"

#include "tau/error.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *token = malloc(size + 1);
	int64_t exp_s = -1;
	char sub[64];
	int rc;

	if (token == NULL)
		return 0;
	memcpy(token, data, size);
	token[size] = '\0';
	rc = tau_auth_token_expiry(&exp_s, token);
	if (rc == 0 && (exp_s <= 0 || exp_s >= 1000000000000000LL)) {
		fprintf(stderr, "fuzz_jwt_expiry: expiry %lld out of range\n", (long long)exp_s);
		abort();
	}
	if (rc != 0 && rc != -TAU_ENOTFOUND) {
		fprintf(stderr, "fuzz_jwt_expiry: undocumented return %d\n", rc);
		abort();
	}
	/* The subject reader shares the decoder; its answer must fit and be NUL-terminated. */
	rc = tau_auth_token_subject(sub, sizeof(sub), token);
	if ((rc != 0 && rc != -TAU_ENOTFOUND) || (rc == 0 && strlen(sub) >= sizeof(sub))) {
		fprintf(stderr, "fuzz_jwt_expiry: subject reader returned %d\n", rc);
		abort();
	}
	free(token);
	return 0;
}
