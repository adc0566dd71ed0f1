/*
 * pem.c - PEM certificate bundle check (tau/pem.h), with OpenSSL's PEM reader.
 */
#include "tau/pem.h"

#include "tau/error.h"

#include <limits.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

int tau_pem_check_certificates(const char *pem, size_t len, const char *what)
{
	BIO *bio;
	X509 *cert;
	int n = 0;
	unsigned long err;

	if (pem == NULL || len == 0)
		return tau_error_set(TAU_EINVAL, "%s: empty, expected PEM certificates", what);
	if (len > INT_MAX)
		return tau_error_set(TAU_EINVAL, "%s: too large", what);
	bio = BIO_new_mem_buf(pem, (int)len);
	if (bio == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	ERR_clear_error();
	while ((cert = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
		X509_free(cert);
		n++;
	}
	/* The loop ends at the end of the text (PEM_R_NO_START_LINE) or at a broken block. */
	err = ERR_peek_last_error();
	BIO_free(bio);
	ERR_clear_error();
	if (err != 0 &&
	    !(ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE))
		return tau_error_set(TAU_EINVAL, "%s: a PEM block is not a valid certificate",
		                     what);
	if (n == 0)
		return tau_error_set(TAU_EINVAL,
		                     "%s: no PEM certificate in it (expected "
		                     "-----BEGIN CERTIFICATE-----)",
		                     what);
	return n;
}
