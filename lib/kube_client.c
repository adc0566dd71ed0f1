/*
 * kube_client.c - the API client object and how it prepares a request.
 *
 * A client owns a copy of its configuration, the client-side token bucket
 * (qps, burst), the cached service-account token (re-read when due or after
 * a 401), a pool of curl easy handles so connections are reused and the
 * client can be shared between threads, and its request counters and
 * metrics.  tau_kube_client_prepare sets a curl handle up for one request:
 * URL, TLS, credentials, headers, timeouts.  The retry loop that sends it
 * is kube_request.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/clock.h"
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/sync.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_MAX 8

struct tau_kube_client {
	tau_kube_config *cfg;
	pthread_mutex_t lock; /* guards everything below */
	tau_backoff_bucket bucket;
	char *token; /* cached token-file contents */
	uint64_t token_read_ms;
	bool token_valid;
	tau_kube_client_stats stats;
	tau_kube_request_metrics metrics;
	CURL *pool[POOL_MAX];
	size_t n_pool;
};

int tau_kube_client_new(tau_kube_client **out, const tau_kube_config *cfg)
{
	tau_kube_client *c;
	int rc;

	if (cfg == NULL || cfg->server == NULL || cfg->server[0] == '\0')
		return tau_error_set(TAU_EINVAL, "kube client: no server URL");
	if (strncmp(cfg->server, "https://", 8) != 0 && strncmp(cfg->server, "http://", 7) != 0)
		return tau_error_set(TAU_EINVAL, "kube client: server %.200s is not an http(s) URL",
		                     cfg->server);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return tau_error_set(TAU_EIO, "curl_global_init failed");
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	rc = tau_kube_config_dup(&c->cfg, cfg);
	if (rc < 0) {
		free(c);
		return rc;
	}
	pthread_mutex_init(&c->lock, NULL);
	tau_kube_request_metrics_init(&c->metrics);
	tau_backoff_bucket_init(&c->bucket, cfg->qps, cfg->burst, tau_clock_mono_ms());
	*out = c;
	return 0;
}

void tau_kube_client_free(tau_kube_client *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n_pool; i++)
		curl_easy_cleanup(c->pool[i]);
	pthread_mutex_destroy(&c->lock);
	tau_kube_request_metrics_destroy(&c->metrics);
	free(c->token);
	tau_kube_config_free(c->cfg);
	free(c);
}

const tau_kube_config *tau_kube_client_config(const tau_kube_client *c)
{
	return c->cfg;
}

void tau_kube_client_stats_get(const tau_kube_client *c, tau_kube_client_stats *out)
{
	tau_locked_copy((pthread_mutex_t *)&c->lock, out, &c->stats, sizeof(*out));
}

tau_kube_request_metrics *tau_kube_client_request_metrics(tau_kube_client *c)
{
	return &c->metrics;
}

void tau_kube_client_metrics_write(tau_buf *b, const char *prefix, tau_kube_client *const *clients,
                                   const char *const *names, size_t n)
{
	tau_kube_request_metrics *ms[8] = {0};
	tau_kube_client_stats st[8];
	char family[128];

	if (n > sizeof(ms) / sizeof(ms[0]))
		n = sizeof(ms) / sizeof(ms[0]);
	/* Each client's counters read once, so both families below tell of the same moment. */
	for (size_t i = 0; i < n; i++) {
		ms[i] = &clients[i]->metrics;
		tau_kube_client_stats_get(clients[i], &st[i]);
	}
	tau_kube_request_metrics_write(b, prefix, ms, names, n);
	snprintf(family, sizeof(family), "%s_kube_request_retries_total", prefix);
	tau_prom_family(
	        b, family, "counter",
	        "Kubernetes API requests that were retries (429, 5xx, transport errors), by "
	        "client.");
	for (size_t i = 0; i < n; i++)
		tau_prom_labelled(b, family, "client", names[i], st[i].retries);
	snprintf(family, sizeof(family), "%s_kube_throttle_wait_seconds_total", prefix);
	tau_prom_family(
	        b, family, "counter",
	        "Time requests were held by the client-side rate limiter (qps and burst), by "
	        "client.");
	for (size_t i = 0; i < n; i++) {
		tau_buf_printf(b, "%s{client=\"", family);
		tau_prom_label_value(b, names[i]);
		tau_buf_printf(b, "\"} %" PRIu64 ".%03" PRIu64 "\n", st[i].throttled_ms / 1000u,
		               st[i].throttled_ms % 1000u);
	}
}

uint64_t tau_kube_client_reserve(tau_kube_client *c)
{
	uint64_t wait;

	pthread_mutex_lock(&c->lock);
	wait = tau_backoff_bucket_reserve(&c->bucket, tau_clock_mono_ms());
	c->stats.throttled_ms += wait;
	pthread_mutex_unlock(&c->lock);
	return wait;
}

void tau_kube_client_token_invalidate(tau_kube_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->token_valid = false;
	pthread_mutex_unlock(&c->lock);
}

void tau_kube_client_count_request(tau_kube_client *c, bool retry)
{
	pthread_mutex_lock(&c->lock);
	c->stats.requests++;
	if (retry)
		c->stats.retries++;
	pthread_mutex_unlock(&c->lock);
}

/* Build "Authorization: Bearer <token>" (re-reading the token file when due), or "" for none. */
static int auth_header(tau_kube_client *c, tau_buf *hdr)
{
	int rc = 0;

	if (c->cfg->token != NULL && c->cfg->token[0] != '\0')
		return tau_buf_printf(hdr, "Authorization: Bearer %s", c->cfg->token);
	if (c->cfg->token_file == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	{
		uint64_t now = tau_clock_mono_ms();

		if (!c->token_valid || c->token == NULL ||
		    now - c->token_read_ms >= c->cfg->token_reread_ms) {
			char *text = NULL;
			size_t len = 0;

			rc = tau_file_read(&text, &len, c->cfg->token_file, 64u * 1024u,
			                   "token file");
			if (rc == 0) {
				while (len > 0 && isspace((unsigned char)text[len - 1]))
					text[--len] = '\0';
				free(c->token);
				c->token = text;
				c->token_read_ms = now;
				c->token_valid = true;
				c->stats.token_reads++;
			} else if (c->token != NULL) {
				/* Keep using the old token; the file may be mid-rotation. */
				tau_log_debug("kube: token file re-read failed", "error",
				              tau_error_last()->msg, NULL);
				rc = 0;
			}
		}
		if (rc == 0 && c->token != NULL && c->token[0] != '\0')
			rc = tau_buf_printf(hdr, "Authorization: Bearer %s", c->token);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

char *tau_kube_client_url(const tau_kube_client *c, const char *path, const char *query)
{
	tau_buf b = {0};

	if (tau_buf_printf(&b, "%s%s%s%s", c->cfg->server, path, query && query[0] ? "?" : "",
	                   query ? query : "") < 0) {
		tau_buf_free(&b);
		return NULL;
	}
	return b.p;
}

int tau_kube_client_prepare(tau_kube_client *c, CURL *h, const char *method, const char *url,
                            const char *content_type, struct curl_slist **headers,
                            uint64_t timeout_ms)
{
	const tau_kube_config *cfg = c->cfg;
	struct curl_slist *list = NULL, *tmp;
	tau_buf auth = {0};
	int rc;

	*headers = NULL;
	rc = auth_header(c, &auth);
	if (rc < 0)
		return rc;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, cfg->user_agent ? cfg->user_agent : "libtau");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (strcmp(method, "GET") == 0)
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (cfg->insecure_skip_tls_verify) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (cfg->ca_data != NULL) {
		struct curl_blob blob = {cfg->ca_data, cfg->ca_len, CURL_BLOB_COPY};

		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
	}
	if (cfg->cert_data != NULL && cfg->key_data != NULL) {
		struct curl_blob cert = {cfg->cert_data, cfg->cert_len, CURL_BLOB_COPY};
		struct curl_blob key = {cfg->key_data, cfg->key_len, CURL_BLOB_COPY};

		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (cfg->username != NULL && cfg->password != NULL && auth.len == 0) {
		curl_easy_setopt(h, CURLOPT_USERNAME, cfg->username);
		curl_easy_setopt(h, CURLOPT_PASSWORD, cfg->password);
	}
	tmp = curl_slist_append(list, "Accept: application/json");
	if (tmp)
		list = tmp;
	tmp = tmp ? curl_slist_append(list, "Expect:") : NULL;
	if (tmp)
		list = tmp;
	if (tmp && content_type) {
		char ct[128];

		snprintf(ct, sizeof(ct), "Content-Type: %s", content_type);
		tmp = curl_slist_append(list, ct);
		if (tmp)
			list = tmp;
	}
	if (tmp && auth.len) {
		tmp = curl_slist_append(list, auth.p);
		if (tmp)
			list = tmp;
	}
	/* Wipe the token copy before freeing it. */
	if (auth.p)
		memset(auth.p, 0, auth.cap);
	tau_buf_free(&auth);
	if (tmp == NULL) {
		curl_slist_free_all(list);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
	*headers = list;
	return 0;
}

CURL *tau_kube_client_handle_take(tau_kube_client *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->lock);
	if (c->n_pool > 0)
		h = c->pool[--c->n_pool];
	pthread_mutex_unlock(&c->lock);
	return h ? h : curl_easy_init();
}

void tau_kube_client_handle_give(tau_kube_client *c, CURL *h)
{
	curl_easy_reset(h);
	pthread_mutex_lock(&c->lock);
	if (c->n_pool < POOL_MAX) {
		c->pool[c->n_pool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	if (h)
		curl_easy_cleanup(h);
}
