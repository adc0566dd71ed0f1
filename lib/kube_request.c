/*
 * kube_request.c - one API request, retried by the client's rules.
 *
 * Every verb is a tau_kube_request run by this loop.  It waits for the
 * client-side token bucket, retries 429 for any verb and 5xx and transport
 * errors for idempotent verbs (Retry-After honoured and capped, else
 * jittered backoff), and on a 401 drops the cached token, re-reads the
 * token file and tries once more.  A failure is decoded into this thread's
 * tau_kube_api_error (kube_errors.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/clock.h"
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- one transfer ---- */

typedef struct transfer {
	tau_buf body;
	int retry_after; /* seconds, -1 none */
	bool too_big;
} transfer;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
	transfer *t = arg;
	size_t n = size * nmemb;

	if (tau_buf_append(&t->body, ptr, n) < 0) {
		t->too_big = true;
		return 0;
	}
	return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *arg)
{
	transfer *t = arg;
	size_t n = size * nmemb;

	if (n > 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
		char val[32];
		size_t vl = n - 12 < sizeof(val) - 1 ? n - 12 : sizeof(val) - 1;
		char *end = NULL;
		long v;

		memcpy(val, ptr + 12, vl);
		val[vl] = '\0';
		errno = 0;
		v = strtol(val, &end, 10);
		/* Only integer seconds, as client-go; an HTTP-date is ignored. */
		if (errno == 0 && end != val && v >= 0 && v < 86400) {
			while (*end == ' ' || *end == '\r' || *end == '\n')
				end++;
			if (*end == '\0')
				t->retry_after = (int)v;
		}
	}
	return n;
}

static bool is_idempotent(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "PUT") == 0 ||
	       strcmp(method, "DELETE") == 0 || strcmp(method, "HEAD") == 0;
}

int tau_kube_client_request(cJSON **out, tau_kube_client *c, const tau_kube_request *req)
{
	const tau_kube_config *cfg = tau_kube_client_config(c);
	const char *method = req->method ? req->method : "GET";
	int max_retries = req->max_retries >= 0 ? req->max_retries : cfg->max_retries;
	uint64_t timeout = req->timeout_ms ? req->timeout_ms : cfg->timeout_ms;
	const char *ctype = req->content_type;
	bool idempotent = is_idempotent(method), reauthed = false;
	/* After an error answer to a request with a body, a sloppy server or proxy may
	 * not have drained that body: drop the handle and its connections. */
	bool poisoned = false;
	char errbuf[CURL_ERROR_SIZE];
	tau_backoff bo;
	char *url = NULL;
	CURL *h = NULL;
	int rc = -1;

	if (req->body != NULL && ctype == NULL)
		ctype = "application/json";
	url = tau_kube_client_url(c, req->path, req->query);
	if (url == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	h = tau_kube_client_handle_take(c);
	if (h == NULL) {
		free(url);
		return tau_error_set(TAU_ENOMEM, "curl_easy_init failed");
	}
	tau_backoff_init(&bo, cfg->retry_initial_ms, cfg->retry_cap_ms, 2.0, 1.0);
	for (int attempt = 0;; attempt++) {
		struct curl_slist *headers = NULL;
		transfer t = {.body = {.max = cfg->body_cap}, .retry_after = -1};
		uint64_t wait, delay = 0, sent_us;
		CURLcode cc;
		long code = 0;
		bool retry = false;

		wait = tau_kube_client_reserve(c);
		if (wait)
			tau_clock_sleep_ms(wait);
		if (poisoned) {
			curl_easy_cleanup(h);
			h = curl_easy_init();
			poisoned = false;
			if (h == NULL) {
				rc = tau_error_set(TAU_ENOMEM, "curl_easy_init failed");
				break;
			}
		}
		curl_easy_reset(h);
		rc = tau_kube_client_prepare(c, h, method, url, ctype, &headers, timeout);
		if (rc < 0)
			break;
		errbuf[0] = '\0';
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
		if (req->body != NULL) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
		}
		tau_kube_client_count_request(c, attempt > 0);
		sent_us = tau_clock_mono_us();
		cc = curl_easy_perform(h);
		curl_slist_free_all(headers);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		tau_kube_request_metrics_record(tau_kube_client_request_metrics(c),
		                                tau_kube_verb_of(method), code,
		                                tau_clock_mono_us() - sent_us, true);
		if (cc != CURLE_OK) {
			tau_kube_api_error_reset();
			if (t.too_big) {
				rc = tau_error_set(TAU_ETOOBIG,
				                   "%s %s: response body larger than %zu bytes",
				                   method, req->path, cfg->body_cap);
			} else if (cc == CURLE_OPERATION_TIMEDOUT) {
				rc = tau_error_set(TAU_ETIMEOUT, "%s %s: %s", method, req->path,
				                   errbuf[0] ? errbuf : curl_easy_strerror(cc));
				retry = idempotent && !cfg->no_transport_retry;
			} else {
				rc = tau_error_set(TAU_EIO, "%s %s: %s", method, req->path,
				                   errbuf[0] ? errbuf : curl_easy_strerror(cc));
				/* Refused connections never reached the server: safe for any verb.
				 */
				retry = !cfg->no_transport_retry &&
				        (idempotent || cc == CURLE_COULDNT_CONNECT);
			}
		} else if (code >= 200 && code < 300) {
			cJSON *doc = NULL;

			rc = 0;
			if (out != NULL) {
				rc = tau_json_parse(&doc, t.body.p ? t.body.p : "", t.body.len,
				                    cfg->body_cap);
				if (rc < 0)
					tau_error_wrap("%s %s: decoding the response", method,
					               req->path);
				else
					*out = doc;
			}
			tau_buf_free(&t.body);
			break;
		} else if (code == 401 && cfg->token_file != NULL && !reauthed) {
			/* Bound tokens rotate: re-read the file and try once more. */
			reauthed = true;
			poisoned = req->body != NULL;
			tau_kube_client_token_invalidate(c);
			tau_buf_free(&t.body);
			attempt--;
			continue;
		} else {
			tau_kube_api_error e;

			rc = tau_kube_api_error_decode(&e, (int)code, t.body.p, t.body.len, method,
			                               t.retry_after);
			tau_kube_api_error_store(&e);
			tau_error_set(-rc, "%s %s: %d %s: %s", method, req->path, e.http_code,
			              e.reason, e.message);
			retry = code == 429 || (code >= 500 && idempotent);
			if (e.retry_after_s >= 0) {
				delay = (uint64_t)e.retry_after_s * 1000u;
				if (delay > cfg->retry_after_cap_ms)
					delay = cfg->retry_after_cap_ms;
			}
		}
		tau_buf_free(&t.body);
		poisoned = cc != CURLE_OK || req->body != NULL;
		if (!retry || attempt >= max_retries)
			break;
		if (delay == 0)
			delay = tau_backoff_next(&bo, tau_clock_mono_ms(), tau_backoff_rand());
		tau_log_debug("kube: retrying request", "method", method, "path", req->path,
		              "error", tau_error_last()->msg, NULL);
		tau_clock_sleep_ms(delay);
	}
	if (h != NULL && poisoned) {
		curl_easy_cleanup(h);
		h = NULL;
	}
	if (h != NULL)
		tau_kube_client_handle_give(c, h);
	free(url);
	return rc;
}

int tau_kube_request_json(cJSON **out, tau_kube_client *c, const char *method, const char *path,
                          const char *query, const char *body, const char *ctype)
{
	tau_kube_request req = {.method = method,
	                        .path = path,
	                        .query = query,
	                        .body = body,
	                        .body_len = body ? strlen(body) : 0,
	                        .content_type = ctype,
	                        .max_retries = -1};

	return tau_kube_client_request(out, c, &req);
}
