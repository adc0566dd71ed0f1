/*
 * tau/error.h - error codes and the thread-local last error of libtau.
 *
 * Every libtau function that can fail returns 0 on success or a negative
 * TAU_E* code.  The detail (a human-readable message naming the input and
 * the reason) is stored in a per-thread slot that the caller reads with
 * tau_error_last() where it handles the failure.
 */
#ifndef TAU_ERROR_H
#define TAU_ERROR_H

#include <stddef.h>

/** Error codes.  Functions return the negated value (e.g. -TAU_EINVAL). */
typedef enum tau_error_code {
	TAU_OK = 0,
	TAU_EINVAL = 1,    /**< malformed or out-of-contract input */
	TAU_ENOMEM = 2,    /**< allocation failed */
	TAU_ERANGE = 3,    /**< value does not fit the requested representation */
	TAU_ENOTFOUND = 4, /**< the named thing does not exist */
	TAU_ETOOBIG = 5,   /**< input exceeds a hard size cap */
	TAU_EIO = 6,       /**< an operating-system or transport error */
	TAU_ETYPE = 7,     /**< a value has the wrong type (e.g. JSON) */
	TAU_ECONFLICT = 8, /**< state changed underneath (optimistic concurrency) */
	TAU_ETIMEOUT = 9,  /**< a deadline passed */
	TAU_EPERM = 10,    /**< not authenticated or not allowed */
	TAU_EAGAIN = 11,   /**< retry later */
	TAU_EINTERNAL = 12 /**< a bug: an invariant did not hold */
} tau_error_code;

/** Maximum length of a stored error message, including the NUL. */
#define TAU_ERROR_MSG_MAX 512

/** The last error recorded on this thread. */
typedef struct tau_error {
	int code;                    /**< positive tau_error_code, 0 if none */
	char msg[TAU_ERROR_MSG_MAX]; /**< NUL-terminated message, "" if none */
} tau_error;

/**
 * Record an error for this thread and return -code, so callers can write
 * `return tau_error_set(TAU_EINVAL, "bad %s", x);`.  The message is
 * truncated to TAU_ERROR_MSG_MAX - 1 bytes.  `code` is positive.
 */
int tau_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * Prefix the current message with more context ("parsing node n1: ...")
 * keeping the code; returns -code of the current error.
 */
int tau_error_wrap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Lends this thread's last error; never NULL.  Valid until the next set. */
const tau_error *tau_error_last(void);

/** Forget this thread's last error. */
void tau_error_clear(void);

/** A short constant name for a code ("EINVAL"); accepts positive or negative. */
const char *tau_error_name(int code);

#endif /* TAU_ERROR_H */
