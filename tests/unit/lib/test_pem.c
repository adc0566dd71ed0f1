/* Unit tests of lib/pem.c: CA bundles checked before they reach gRPC. */
#include "tau/pem.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A self-signed test certificate (CN=tau-pem-test), made for this test. */
static const char CERT[] = "-----BEGIN CERTIFICATE-----\n"
                           "MIIBhTCCASugAwIBAgIUf8Nzp3jlrB+onI3zNcF3ZOx68DgwCgYIKoZIzj0EAwIw\n"
                           "FzEVMBMGA1UEAwwMdGF1LXBlbS10ZXN0MCAXDTI2MTIwMjE5NDI1NFoYDzIxMjYx\n"
                           "MTA4MTk0MjU0WjAXMRUwEwYDVQQDDAx0YXUtcGVtLXRlc3QwWTATBgcqhkjOPQIB\n"
                           "BggqhkjOPQMBBwNCAASCoOvw0P6mYiSwVa0n0DhJ8mp89s6pglDC2V0l1q5qfQiZ\n"
                           "LYGjx1flQeOoQ5LRuZFBiWxdpn1RxFVHG16h21TQo1MwUTAdBgNVHQ4EFgQUY63T\n"
                           "Ke5Yo+NfIE8SbhoiSqZGv7YwHwYDVR0jBBgwFoAUY63TKe5Yo+NfIE8SbhoiSqZG\n"
                           "v7YwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAoudBkX+zsp2uw\n"
                           "bEEl/VkzcrRs8Idjjty5XR/dSkxRHgIhAJYHv49ia0G5vH+gpcsGWmLq1BkJmKx7\n"
                           "SMZwq8CYL+mp\n"
                           "-----END CERTIFICATE-----\n";

static int check(const char *pem)
{
	return tau_pem_check_certificates(pem, strlen(pem), "--ca-file ca.pem");
}

static void valid_bundles(void **state)
{
	char two[sizeof(CERT) * 2 + 32];

	(void)state;
	assert_int_equal(check(CERT), 1);
	snprintf(two, sizeof(two), "# comment\n%s\n%s", CERT, CERT);
	assert_int_equal(check(two), 2);
}

static void refused_bundles(void **state)
{
	char broken[sizeof(CERT)];

	(void)state;
	assert_int_equal(check("not a certificate\n"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "--ca-file ca.pem: no PEM certificate in it (expected "
	                    "-----BEGIN CERTIFICATE-----)");
	assert_int_equal(tau_pem_check_certificates("", 0, "--ca-file ca.pem"), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "--ca-file ca.pem: empty, expected PEM certificates");
	/* A certificate block whose base64 body is damaged. */
	memcpy(broken, CERT, sizeof(CERT));
	broken[80] = broken[80] == 'A' ? 'B' : 'A';
	broken[81] = '*';
	assert_int_equal(check(broken), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "--ca-file ca.pem: "));
	/* A private key is not a CA. */
	assert_int_equal(check("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
	                 -TAU_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(valid_bundles),
	        cmocka_unit_test(refused_bundles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
