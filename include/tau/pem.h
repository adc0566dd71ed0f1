/*
 * tau/pem.h - checks of PEM text before it reaches a TLS library.
 *
 * gRPC's core reads a CA bundle only when a channel first connects, and a bundle without a
 * certificate then fails with core log lines and an unrelated "empty address list".  A program
 * that reads a CA file checks it here first, so the operator gets one line naming the file.
 */
#ifndef TAU_PEM_H
#define TAU_PEM_H

#include <stddef.h>

/**
 * Check that `pem` (NUL-terminated, `len` bytes) holds at least one X.509 certificate and
 * nothing that fails to parse as one.  `what` names the source in the message ("--ca-file
 * /etc/ca.pem").
 * @return the number of certificates (> 0), or -TAU_EINVAL "<what>: <reason>".
 */
int tau_pem_check_certificates(const char *pem, size_t len, const char *what);

#endif /* TAU_PEM_H */
