/*
 * kube_internal.h - helpers shared by lib/kube*.c; not installed, not API.
 *
 * The pieces of the client (kube_client.c) that the request loop (kube_request.c) and the
 * event loop (kube_informer.c) use to set up their curl handles: URL, TLS, auth header, the
 * client-side rate limiter and the handle pool; the JSON request the verbs and reviews share;
 * the per-thread API error (kube_errors.c); the request metrics (kube_metrics.c).
 */
#ifndef TAU_KUBE_INTERNAL_H
#define TAU_KUBE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

#include "tau/buf.h"
#include "tau/file.h"
#include "tau/kube.h"
#include "tau/prom.h"

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

/** Count a request on the client's stats; `retry`: it repeats an earlier attempt. */
void tau_kube_client_count_request(tau_kube_client *c, bool retry);

/** A curl handle from the client's pool (a new one when it is empty); NULL on ENOMEM. */
CURL *tau_kube_client_handle_take(tau_kube_client *c);

/** Reset `h` and keep it in the client's pool for reuse (cleaned up when the pool is full). */
void tau_kube_client_handle_give(tau_kube_client *c, CURL *h);

/**
 * Run `method` on `path`?`query` with an optional JSON (or `ctype`) body and the client's
 * retry count (kube_request.c).  @param out receives the parsed answer (may be NULL).
 */
int tau_kube_request_json(cJSON **out, tau_kube_client *c, const char *method, const char *path,
                          const char *query, const char *body, const char *ctype);

/** Store `e` as this thread's last API error. */
void tau_kube_api_error_store(const tau_kube_api_error *e);

/** Clear this thread's last API error (transport failures). */
void tau_kube_api_error_reset(void);

/* ---- request metrics (kube_metrics.c) ---- */

/** The verbs counted: the HTTP method, an informer's list and watch apart from a GET. */
typedef enum tau_kube_verb {
	TAU_KUBE_VERB_GET = 0,
	TAU_KUBE_VERB_LIST,
	TAU_KUBE_VERB_WATCH,
	TAU_KUBE_VERB_POST,
	TAU_KUBE_VERB_PUT,
	TAU_KUBE_VERB_PATCH,
	TAU_KUBE_VERB_DELETE,
	TAU_KUBE_VERBS
} tau_kube_verb;

/** Distinct HTTP codes counted per verb; more land in "other". */
#define TAU_KUBE_METRICS_CODES 8

typedef struct tau_kube_code_count {
	long code; /* 0: no HTTP answer (transport error, timeout) */
	uint64_t n;
} tau_kube_code_count;

/** A client's request metrics (fixed size). */
typedef struct tau_kube_request_metrics {
	pthread_mutex_t lock; /* guards codes and other */
	tau_kube_code_count codes[TAU_KUBE_VERBS][TAU_KUBE_METRICS_CODES];
	uint64_t other[TAU_KUBE_VERBS];
	tau_prom_histogram latency[TAU_KUBE_VERBS];
} tau_kube_request_metrics;

/** The verb of an HTTP method the client sends ("GET", "POST", ...). */
tau_kube_verb tau_kube_verb_of(const char *method);

void tau_kube_request_metrics_init(tau_kube_request_metrics *m);
void tau_kube_request_metrics_destroy(tau_kube_request_metrics *m);

/** Count one request that ended with `code` (0: no answer); `timed`: observe `us`. */
void tau_kube_request_metrics_record(tau_kube_request_metrics *m, tau_kube_verb verb, long code,
                                     uint64_t us, bool timed);

/** The client's metrics (kube_client.c). */
tau_kube_request_metrics *tau_kube_client_request_metrics(tau_kube_client *c);

/** Write PREFIX_kube_requests_total and PREFIX_kube_request_duration_seconds of `n` clients. */
void tau_kube_request_metrics_write(tau_buf *b, const char *prefix,
                                    tau_kube_request_metrics *const *ms, const char *const *names,
                                    size_t n);

#endif /* TAU_KUBE_INTERNAL_H */
