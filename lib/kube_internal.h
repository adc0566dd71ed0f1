/*
 * kube_internal.h - helpers shared by lib/kube*.c; not installed, not API.
 *
 * A capped growable buffer, bounded file reading, and the pieces of the
 * client that the event loop (kube_informer.c) reuses to set up its own
 * curl handles: URL, TLS, auth header and the client-side rate limiter.
 */
#ifndef TAU_KUBE_INTERNAL_H
#define TAU_KUBE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "tau/kube.h"

/** A growable byte buffer that refuses to grow past `max` (always NUL-terminated). */
typedef struct tau_kube_buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max;
} tau_kube_buf;

/** Append; @return 0, -TAU_ETOOBIG (would pass max), -TAU_ENOMEM. */
int tau_kube_buf_append(tau_kube_buf *b, const void *data, size_t n);
/** Append formatted text; same returns. */
int tau_kube_buf_printf(tau_kube_buf *b, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/** Drop the first n bytes. */
void tau_kube_buf_consume(tau_kube_buf *b, size_t n);
/** Release the storage. */
void tau_kube_buf_free(tau_kube_buf *b);

/** strdup that tolerates NULL (returns NULL for NULL). */
char *tau_kube_strdup(const char *s);

/**
 * Read a whole file of at most `cap` bytes into a new NUL-terminated buffer.
 * @return 0, -TAU_EIO (message: "<what> <path>: <strerror>"), -TAU_ETOOBIG, -TAU_ENOMEM.
 */
int tau_kube_read_file(char **out, size_t *len, const char *path, size_t cap, const char *what);

/** "server" + path + "?" + query in a new string; NULL on ENOMEM. */
char *tau_kube_client_url(const tau_kube_client *c, const char *path, const char *query);

/**
 * Set TLS, auth, user agent, timeouts and method on `h` for a request.
 * `*headers` receives a list to free with curl_slist_free_all after the
 * transfer.  timeout_ms 0 = no overall timeout (watches).
 * @return 0, -TAU_EIO (token file unreadable), -TAU_ENOMEM.
 */
int tau_kube_client_prepare(tau_kube_client *c, CURL *h, const char *method, const char *url,
                            const char *content_type, struct curl_slist **headers,
                            uint64_t timeout_ms);

/** Take a token from the client's limiter; @return ms to wait before sending. */
uint64_t tau_kube_client_reserve(tau_kube_client *c);

/** Forget the cached token so the next request re-reads the token file (after a 401). */
void tau_kube_client_token_invalidate(tau_kube_client *c);

/** Count a request on the client's stats. */
void tau_kube_client_count_request(tau_kube_client *c);

/** Store `e` as this thread's last API error. */
void tau_kube_api_error_store(const tau_kube_api_error *e);

/** Clear this thread's last API error (transport failures). */
void tau_kube_api_error_reset(void);

#endif /* TAU_KUBE_INTERNAL_H */
