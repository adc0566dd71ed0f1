/*
 * kube_internal.h - helpers shared by lib/kube*.c; not installed, not API.
 *
 * The pieces of the client that the event loop (kube_informer.c) reuses to set up its own
 * curl handles: URL, TLS, auth header and the client-side rate limiter.
 */
#ifndef TAU_KUBE_INTERNAL_H
#define TAU_KUBE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "tau/buf.h"
#include "tau/file.h"
#include "tau/kube.h"

/** strdup that tolerates NULL (returns NULL for NULL). */
char *tau_kube_strdup(const char *s);

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
