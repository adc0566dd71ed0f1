/*
 * kube.c - the blocking Kubernetes REST client.
 *
 * One idea: every verb is a tau_kube_request run by one loop that knows
 * the retry rules (429 for any verb, 5xx and transport errors for
 * idempotent verbs, Retry-After honoured and capped, else jittered
 * backoff), the client-side token bucket, and the 401 rule (drop the cached
 * token, re-read the token file, retry once).  Failures are decoded into a
 * per-thread tau_kube_api_error so callers can branch on reason/code.
 *
 * curl easy handles are pooled per client so connections are reused
 * across calls; each call takes a handle from the pool for its duration,
 * which keeps the client safe to share between worker threads.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/kube.h"

#include "kube_internal.h"
#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kubeconfig.h"
#include "tau/log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

const tau_kube_resource tau_kube_res_nodes = {"", "v1", "nodes", false};
const tau_kube_resource tau_kube_res_csinodes = {"storage.k8s.io", "v1", "csinodes", false};
const tau_kube_resource tau_kube_res_namespaces = {"", "v1", "namespaces", false};
const tau_kube_resource tau_kube_res_pods = {"", "v1", "pods", true};
const tau_kube_resource tau_kube_res_configmaps = {"", "v1", "configmaps", true};
const tau_kube_resource tau_kube_res_leases = {"coordination.k8s.io", "v1", "leases", true};
const tau_kube_resource tau_kube_res_crds = {"apiextensions.k8s.io", "v1",
                                             "customresourcedefinitions", false};
const tau_kube_resource tau_kube_res_tokenreviews = {"authentication.k8s.io", "v1", "tokenreviews",
                                                     false};
const tau_kube_resource tau_kube_res_subjectaccessreviews = {"authorization.k8s.io", "v1",
                                                             "subjectaccessreviews", false};

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

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

char *tau_kube_strdup(const char *s)
{
	size_t n;
	char *d;

	if (s == NULL)
		return NULL;
	n = strlen(s) + 1;
	d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* ------------------------------------------------------------------ */
/* API errors                                                          */

static _Thread_local tau_kube_api_error last_api_error = {.retry_after_s = -1};

void tau_kube_api_error_store(const tau_kube_api_error *e)
{
	last_api_error = *e;
}

void tau_kube_api_error_reset(void)
{
	memset(&last_api_error, 0, sizeof(last_api_error));
	last_api_error.retry_after_s = -1;
}

const tau_kube_api_error *tau_kube_api_error_last(void)
{
	return &last_api_error;
}

int tau_kube_api_error_code(int http_code)
{
	switch (http_code) {
	case 400:
	case 422:
		return -TAU_EINVAL;
	case 401:
	case 403:
		return -TAU_EPERM;
	case 404:
		return -TAU_ENOTFOUND;
	case 409:
		return -TAU_ECONFLICT;
	case 413:
		return -TAU_ETOOBIG;
	case 429:
	case 503:
		return -TAU_EAGAIN;
	case 504:
		return -TAU_ETIMEOUT;
	default:
		return -TAU_EIO;
	}
}

static const struct {
	const char *reason;
	int code;
} reason_codes[] = {
        {"BadRequest", 400},    {"Unauthorized", 401},          {"Forbidden", 403},
        {"NotFound", 404},      {"MethodNotAllowed", 405},      {"NotAcceptable", 406},
        {"Conflict", 409},      {"AlreadyExists", 409},         {"Expired", 410},
        {"Gone", 410},          {"RequestEntityTooLarge", 413}, {"UnsupportedMediaType", 415},
        {"Invalid", 422},       {"TooManyRequests", 429},       {"InternalError", 500},
        {"ServerTimeout", 500}, {"ServiceUnavailable", 503},    {"Timeout", 504},
};

static const char *reason_for_code(int code, const char *method)
{
	if (code == 409)
		return method && strcmp(method, "POST") == 0 ? "AlreadyExists" : "Conflict";
	for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++)
		if (reason_codes[i].code == code && strcmp(reason_codes[i].reason, "Gone") != 0 &&
		    strcmp(reason_codes[i].reason, "ServerTimeout") != 0)
			return reason_codes[i].reason;
	return code >= 500 ? "InternalError" : "Unknown";
}

bool tau_kube_api_error_is(const tau_kube_api_error *e, const char *reason)
{
	if (e == NULL || reason == NULL)
		return false;
	if (e->reason[0] != '\0') {
		if (strcmp(e->reason, reason) == 0)
			return true;
		return strcmp(reason, "Expired") == 0 && strcmp(e->reason, "Gone") == 0;
	}
	for (size_t i = 0; i < sizeof(reason_codes) / sizeof(reason_codes[0]); i++)
		if (strcmp(reason_codes[i].reason, reason) == 0)
			return reason_codes[i].code == e->http_code;
	return false;
}

/* Copy text into a fixed field, replacing control bytes and trimming whitespace. */
static void copy_text(char *dst, size_t cap, const char *src, size_t len)
{
	size_t o = 0;

	while (len > 0 && isspace((unsigned char)*src)) {
		src++;
		len--;
	}
	while (len > 0 && isspace((unsigned char)src[len - 1]))
		len--;
	for (size_t i = 0; i < len && o + 1 < cap; i++) {
		unsigned char ch = (unsigned char)src[i];

		dst[o++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
	}
	dst[o] = '\0';
}

int tau_kube_api_error_decode(tau_kube_api_error *out, int http_code, const char *body, size_t len,
                              const char *method, int retry_after_header)
{
	cJSON *root = NULL;
	const char *s;
	int64_t n;

	memset(out, 0, sizeof(*out));
	out->http_code = http_code;
	out->retry_after_s = retry_after_header;
	if (body != NULL && len > 0 && tau_json_parse(&root, body, len, 0) == 0 &&
	    cJSON_IsObject(root) && tau_json_get_string(&s, root, "kind") == 0 &&
	    strcmp(s, "Status") == 0) {
		if (tau_json_get_string(&s, root, "reason") == 0)
			copy_text(out->reason, sizeof(out->reason), s, strlen(s));
		if (tau_json_get_string(&s, root, "message") == 0)
			copy_text(out->message, sizeof(out->message), s, strlen(s));
		if (tau_json_get_int(&n, root, "code") == 0 && n >= 100 && n <= 599 &&
		    http_code == 0)
			out->http_code = (int)n;
		if (out->retry_after_s < 0 &&
		    tau_json_get_int(&n, root, "details.retryAfterSeconds") == 0 && n >= 0 &&
		    n < 86400)
			out->retry_after_s = (int)n;
		if (tau_json_get_string(&s, root, "metadata.continue") == 0)
			copy_text(out->continue_token, sizeof(out->continue_token), s, strlen(s));
	} else if (body != NULL && len > 0) {
		/* Plain text (API priority and fairness 429, proxies): keep the first line. */
		const char *nl = memchr(body, '\n', len);
		size_t first = nl ? (size_t)(nl - body) : len;

		if (first == 0)
			first = len;
		copy_text(out->message, sizeof(out->message), body, first);
	}
	tau_error_clear();
	cJSON_Delete(root);
	if (out->reason[0] == '\0')
		snprintf(out->reason, sizeof(out->reason), "%s",
		         reason_for_code(out->http_code, method));
	if (out->message[0] == '\0')
		snprintf(out->message, sizeof(out->message), "the server responded with status %d",
		         out->http_code);
	return tau_kube_api_error_code(out->http_code);
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */

int tau_kube_config_new(tau_kube_config **out)
{
	tau_kube_config *cfg = calloc(1, sizeof(*cfg));

	if (cfg == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cfg->namespace = tau_kube_strdup("default");
	if (cfg->namespace == NULL) {
		free(cfg);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cfg->qps = 20.0;
	cfg->burst = 30;
	cfg->max_retries = 10;
	cfg->retry_initial_ms = 200;
	cfg->retry_cap_ms = 10000;
	cfg->retry_after_cap_ms = 60000;
	cfg->timeout_ms = 30000;
	cfg->connect_timeout_ms = 10000;
	cfg->body_cap = 64u * 1024u * 1024u;
	cfg->watch_line_cap = 4u * 1024u * 1024u;
	cfg->token_reread_ms = 60000;
	*out = cfg;
	return 0;
}

void tau_kube_config_set_request_timeout(tau_kube_config *cfg, uint64_t ms)
{
	cfg->timeout_ms = ms; /* 0: curl waits as long as the server takes */
	if (ms > 0) {
		if (cfg->connect_timeout_ms == 0 || cfg->connect_timeout_ms > ms)
			cfg->connect_timeout_ms = ms;
		cfg->max_retries = 0;
	}
	cfg->no_transport_retry = true;
}

void tau_kube_config_free(tau_kube_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->server);
	free(cfg->tls_server_name);
	free(cfg->ca_file);
	free(cfg->ca_data);
	free(cfg->cert_file);
	free(cfg->cert_data);
	free(cfg->key_file);
	free(cfg->key_data);
	free(cfg->token);
	free(cfg->token_file);
	free(cfg->username);
	free(cfg->password);
	free(cfg->namespace);
	free(cfg->context);
	free(cfg->user_agent);
	free(cfg);
}

static int dup_bytes(unsigned char **dst, const unsigned char *src, size_t len)
{
	if (src == NULL) {
		*dst = NULL;
		return 0;
	}
	*dst = malloc(len + 1);
	if (*dst == NULL)
		return -1;
	memcpy(*dst, src, len);
	(*dst)[len] = '\0';
	return 0;
}

int tau_kube_config_dup(tau_kube_config **out, const tau_kube_config *cfg)
{
	tau_kube_config *d = malloc(sizeof(*d));
	bool bad = false;

	if (d == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	*d = *cfg;
#define DUPS(f)                                                                                    \
	do {                                                                                       \
		d->f = tau_kube_strdup(cfg->f);                                                    \
		bad |= (cfg->f != NULL && d->f == NULL);                                           \
	} while (0)
	DUPS(server);
	DUPS(tls_server_name);
	DUPS(ca_file);
	DUPS(cert_file);
	DUPS(key_file);
	DUPS(token);
	DUPS(token_file);
	DUPS(username);
	DUPS(password);
	DUPS(namespace);
	DUPS(context);
	DUPS(user_agent);
#undef DUPS
	bad |= dup_bytes(&d->ca_data, cfg->ca_data, cfg->ca_len) < 0;
	bad |= dup_bytes(&d->cert_data, cfg->cert_data, cfg->cert_len) < 0;
	bad |= dup_bytes(&d->key_data, cfg->key_data, cfg->key_len) < 0;
	if (bad) {
		tau_kube_config_free(d);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	*out = d;
	return 0;
}

static char *join_path(const char *dir, const char *file)
{
	size_t n = strlen(dir) + strlen(file) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, file);
	return p;
}

int tau_kube_config_in_cluster(tau_kube_config **out, const char *sa_dir)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	const char *pod_ns = getenv("POD_NAMESPACE");
	tau_kube_config *cfg = NULL;
	char *ns_path = NULL, *ns_text = NULL;
	size_t ns_len = 0;
	int rc;

	if (host == NULL || host[0] == '\0' || port == NULL || port[0] == '\0')
		return tau_error_set(
		        TAU_ENOTFOUND,
		        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST "
		        "and KUBERNETES_SERVICE_PORT must be defined");
	if (sa_dir == NULL)
		sa_dir = getenv("TAU_KUBE_SA_DIR");
	if (sa_dir == NULL || sa_dir[0] == '\0')
		sa_dir = TAU_KUBE_SA_DIR;
	rc = tau_kube_config_new(&cfg);
	if (rc < 0)
		return rc;
	{
		/* Tests may point at plain http with TAU_KUBE_SCHEME=http. */
		const char *scheme = getenv("TAU_KUBE_SCHEME");
		bool v6 = strchr(host, ':') != NULL;
		size_t n = strlen(host) + strlen(port) + 16;

		if (scheme == NULL || strcmp(scheme, "http") != 0)
			scheme = "https";
		cfg->server = malloc(n);
		if (cfg->server == NULL)
			goto nomem;
		snprintf(cfg->server, n, "%s://%s%s%s:%s", scheme, v6 ? "[" : "", host,
		         v6 ? "]" : "", port);
	}
	cfg->token_file = join_path(sa_dir, "token");
	cfg->ca_file = join_path(sa_dir, "ca.crt");
	ns_path = join_path(sa_dir, "namespace");
	if (cfg->token_file == NULL || cfg->ca_file == NULL || ns_path == NULL)
		goto nomem;
	if (access(cfg->ca_file, F_OK) != 0) {
		/* No CA file: fall back to the system store (client-go only logs too). */
		free(cfg->ca_file);
		cfg->ca_file = NULL;
	}
	free(cfg->namespace);
	cfg->namespace = NULL;
	if (pod_ns != NULL && pod_ns[0] != '\0') {
		cfg->namespace = tau_kube_strdup(pod_ns);
	} else if (tau_file_read(&ns_text, &ns_len, ns_path, 4096, "namespace file") == 0) {
		size_t a = 0, b = ns_len;

		while (a < b && isspace((unsigned char)ns_text[a]))
			a++;
		while (b > a && isspace((unsigned char)ns_text[b - 1]))
			b--;
		ns_text[b] = '\0';
		if (b > a)
			cfg->namespace = tau_kube_strdup(ns_text + a);
	}
	tau_error_clear();
	if (cfg->namespace == NULL)
		cfg->namespace = tau_kube_strdup("default");
	if (cfg->namespace == NULL)
		goto nomem;
	rc = tau_kube_config_read_files(cfg);
	if (rc < 0)
		goto out;
	*out = cfg;
	cfg = NULL;
	rc = 0;
	goto out;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	free(ns_path);
	free(ns_text);
	tau_kube_config_free(cfg);
	return rc;
}

/* Load and merge a colon-separated list of kubeconfig files (empty entries skipped). */
static int load_kubeconfig_list(tau_kubeconfig **out, const char *list, bool explicit_file)
{
	tau_kubeconfig *merged = NULL;
	char *copy = tau_kube_strdup(list), *save = NULL;
	int rc = 0, loaded = 0;

	if (copy == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (char *p = explicit_file ? copy : strtok_r(copy, ":", &save); p != NULL;
	     p = explicit_file ? NULL : strtok_r(NULL, ":", &save)) {
		tau_kubeconfig *one = NULL;

		if (p[0] == '\0')
			continue;
		/* kubectl skips missing files in KUBECONFIG but not an explicit --kubeconfig. */
		if (!explicit_file && access(p, F_OK) != 0)
			continue;
		rc = tau_kubeconfig_load_file(&one, p);
		if (rc < 0)
			break;
		loaded++;
		if (merged == NULL) {
			merged = one;
		} else {
			rc = tau_kubeconfig_merge(merged, one);
			tau_kubeconfig_free(one);
			if (rc < 0)
				break;
		}
	}
	free(copy);
	if (rc == 0 && loaded == 0)
		rc = tau_error_set(TAU_ENOTFOUND, "no kubeconfig file found in KUBECONFIG=%.400s",
		                   list);
	if (rc < 0) {
		tau_kubeconfig_free(merged);
		return rc;
	}
	*out = merged;
	return 0;
}

int tau_kube_config_load(tau_kube_config **out, const tau_kube_config_options *opts)
{
	tau_kube_config_options none = {0};
	tau_kubeconfig *kc = NULL;
	tau_kube_config *cfg = NULL;
	const char *env = getenv("KUBECONFIG");
	char *home_path = NULL;
	int rc;

	if (opts == NULL)
		opts = &none;
	if (opts->kubeconfig != NULL && opts->kubeconfig[0] != '\0') {
		rc = load_kubeconfig_list(&kc, opts->kubeconfig, true);
	} else if (env != NULL && env[0] != '\0') {
		rc = load_kubeconfig_list(&kc, env, false);
	} else if (getenv("KUBERNETES_SERVICE_HOST") != NULL && opts->context == NULL) {
		return tau_kube_config_in_cluster(out, opts->sa_dir);
	} else {
		const char *home = getenv("HOME");

		if (home == NULL || home[0] == '\0')
			return tau_error_set(TAU_ENOTFOUND,
			                     "no kubeconfig: --kubeconfig, KUBECONFIG and HOME are "
			                     "unset and not running in a cluster");
		home_path = join_path(home, ".kube/config");
		if (home_path == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		rc = load_kubeconfig_list(&kc, home_path, true);
	}
	if (rc < 0)
		goto out;
	rc = tau_kubeconfig_resolve(&cfg, kc, opts->context);
	if (rc < 0)
		goto out;
	rc = tau_kube_config_read_files(cfg);
	if (rc < 0) {
		tau_error_wrap("context \"%s\"", cfg->context ? cfg->context : "");
		goto out;
	}
	*out = cfg;
	cfg = NULL;
out:
	free(home_path);
	tau_kubeconfig_free(kc);
	tau_kube_config_free(cfg);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Client                                                              */

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
	tau_backoff_bucket_init(&c->bucket, cfg->qps, cfg->burst, tau_backoff_now_ms());
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
	pthread_mutex_lock((pthread_mutex_t *)&c->lock);
	*out = c->stats;
	pthread_mutex_unlock((pthread_mutex_t *)&c->lock);
}

tau_kube_request_metrics *tau_kube_client_request_metrics(tau_kube_client *c)
{
	return &c->metrics;
}

void tau_kube_client_metrics_write(tau_buf *b, const char *prefix, tau_kube_client *const *clients,
                                   const char *const *names, size_t n)
{
	tau_kube_request_metrics *ms[8] = {0};
	char family[128];

	if (n > sizeof(ms) / sizeof(ms[0]))
		n = sizeof(ms) / sizeof(ms[0]);
	for (size_t i = 0; i < n; i++)
		ms[i] = &clients[i]->metrics;
	tau_kube_request_metrics_write(b, prefix, ms, names, n);
	snprintf(family, sizeof(family), "%s_kube_request_retries_total", prefix);
	tau_prom_family(
	        b, family, "counter",
	        "Kubernetes API requests that were retries (429, 5xx, transport errors), by "
	        "client.");
	for (size_t i = 0; i < n; i++) {
		tau_kube_client_stats st;

		tau_kube_client_stats_get(clients[i], &st);
		tau_prom_labelled(b, family, "client", names[i], st.retries);
	}
	snprintf(family, sizeof(family), "%s_kube_throttle_wait_seconds_total", prefix);
	tau_prom_family(
	        b, family, "counter",
	        "Time requests were held by the client-side rate limiter (qps and burst), by "
	        "client.");
	for (size_t i = 0; i < n; i++) {
		tau_kube_client_stats st;

		tau_kube_client_stats_get(clients[i], &st);
		tau_buf_printf(b, "%s{client=\"", family);
		tau_prom_label_value(b, names[i]);
		tau_buf_printf(b, "\"} %" PRIu64 ".%03" PRIu64 "\n", st.throttled_ms / 1000u,
		               st.throttled_ms % 1000u);
	}
}

uint64_t tau_kube_client_reserve(tau_kube_client *c)
{
	uint64_t wait;

	pthread_mutex_lock(&c->lock);
	wait = tau_backoff_bucket_reserve(&c->bucket, tau_backoff_now_ms());
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

void tau_kube_client_count_request(tau_kube_client *c)
{
	pthread_mutex_lock(&c->lock);
	c->stats.requests++;
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
		uint64_t now = tau_backoff_now_ms();

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

static CURL *pool_take(tau_kube_client *c)
{
	CURL *h = NULL;

	pthread_mutex_lock(&c->lock);
	if (c->n_pool > 0)
		h = c->pool[--c->n_pool];
	pthread_mutex_unlock(&c->lock);
	return h ? h : curl_easy_init();
}

static void pool_give(tau_kube_client *c, CURL *h)
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

static bool is_idempotent(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "PUT") == 0 ||
	       strcmp(method, "DELETE") == 0 || strcmp(method, "HEAD") == 0;
}

int tau_kube_client_request(cJSON **out, tau_kube_client *c, const tau_kube_request *req)
{
	const tau_kube_config *cfg = c->cfg;
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
	h = pool_take(c);
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
			tau_backoff_sleep_ms(wait);
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
		pthread_mutex_lock(&c->lock);
		c->stats.requests++;
		if (attempt > 0)
			c->stats.retries++;
		pthread_mutex_unlock(&c->lock);
		sent_us = tau_backoff_now_us();
		cc = curl_easy_perform(h);
		curl_slist_free_all(headers);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		tau_kube_request_metrics_record(&c->metrics, tau_kube_verb_of(method), code,
		                                tau_backoff_now_us() - sent_us, true);
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
			delay = tau_backoff_next(&bo, tau_backoff_now_ms(), tau_backoff_rand());
		tau_log_debug("kube: retrying request", "method", method, "path", req->path,
		              "error", tau_error_last()->msg, NULL);
		tau_backoff_sleep_ms(delay);
	}
	if (h != NULL && poisoned) {
		curl_easy_cleanup(h);
		h = NULL;
	}
	if (h != NULL)
		pool_give(c, h);
	free(url);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Paths and queries                                                   */

static int check_segment(const char *what, const char *s)
{
	if (s == NULL || s[0] == '\0')
		return tau_error_set(TAU_EINVAL, "empty %s", what);
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return tau_error_set(TAU_EINVAL, "%s may not be \"%s\"", what, s);
	if (strlen(s) > 253 && strcmp(what, "name") != 0)
		return tau_error_set(TAU_EINVAL, "%s is longer than 253 bytes", what);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p == '/' || *p == '?' || *p == '#' || *p == '%' || *p < 0x21 || *p == 0x7f)
			return tau_error_set(TAU_EINVAL,
			                     "%s \"%.100s\" holds a forbidden character", what, s);
	return 0;
}

int tau_kube_path(char **out, const tau_kube_resource *res, const char *ns, const char *name,
                  const char *sub)
{
	tau_buf b = {.max = 4096};
	int rc;
	bool core = res->group == NULL || res->group[0] == '\0';

	if ((rc = check_segment("version", res->version)) < 0 ||
	    (rc = check_segment("resource", res->plural)) < 0 ||
	    (!core && (rc = check_segment("group", res->group)) < 0))
		return rc;
	if (ns != NULL && ns[0] != '\0') {
		if (!res->namespaced)
			return tau_error_set(TAU_EINVAL,
			                     "%s are cluster-scoped; no namespace allowed",
			                     res->plural);
		if ((rc = check_segment("namespace", ns)) < 0)
			return rc;
	}
	if (name != NULL && (rc = check_segment("name", name)) < 0)
		return rc;
	if (sub != NULL && (rc = check_segment("subresource", sub)) < 0)
		return rc;
	if (sub != NULL && name == NULL)
		return tau_error_set(TAU_EINVAL, "a subresource needs an object name");
	if (core)
		rc = tau_buf_printf(&b, "/api/%s", res->version);
	else
		rc = tau_buf_printf(&b, "/apis/%s/%s", res->group, res->version);
	if (rc == 0 && ns != NULL && ns[0] != '\0')
		rc = tau_buf_printf(&b, "/namespaces/%s", ns);
	if (rc == 0)
		rc = tau_buf_printf(&b, "/%s", res->plural);
	if (rc == 0 && name != NULL)
		rc = tau_buf_printf(&b, "/%s", name);
	if (rc == 0 && sub != NULL)
		rc = tau_buf_printf(&b, "/%s", sub);
	if (rc < 0) {
		tau_buf_free(&b);
		return rc == -TAU_ETOOBIG ? tau_error_set(TAU_EINVAL, "path too long") : rc;
	}
	*out = b.p;
	return 0;
}

static int add_param(tau_buf *b, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc;

	rc = tau_buf_printf(b, "%s%s=", b->len ? "&" : "", key);
	for (const unsigned char *p = (const unsigned char *)value; rc == 0 && *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			rc = tau_buf_append(b, p, 1);
		} else {
			char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			rc = tau_buf_append(b, enc, 3);
		}
	}
	return rc;
}

int tau_kube_list_query(char **out, const tau_kube_list_options *o)
{
	tau_buf b = {0};
	char num[32];
	int rc = 0;

	if (o != NULL) {
		if (rc == 0 && o->allow_bookmarks)
			rc = add_param(&b, "allowWatchBookmarks", "true");
		if (rc == 0 && o->continue_token && o->continue_token[0])
			rc = add_param(&b, "continue", o->continue_token);
		if (rc == 0 && o->field_selector && o->field_selector[0])
			rc = add_param(&b, "fieldSelector", o->field_selector);
		if (rc == 0 && o->label_selector && o->label_selector[0])
			rc = add_param(&b, "labelSelector", o->label_selector);
		if (rc == 0 && o->limit > 0) {
			snprintf(num, sizeof(num), "%lld", (long long)o->limit);
			rc = add_param(&b, "limit", num);
		}
		if (rc == 0 && o->resource_version)
			rc = add_param(&b, "resourceVersion", o->resource_version);
		if (rc == 0 && o->resource_version_match && o->resource_version_match[0])
			rc = add_param(&b, "resourceVersionMatch", o->resource_version_match);
		if (rc == 0 && o->timeout_seconds > 0) {
			snprintf(num, sizeof(num), "%lld", (long long)o->timeout_seconds);
			rc = add_param(&b, "timeoutSeconds", num);
		}
		if (rc == 0 && o->watch)
			rc = add_param(&b, "watch", "true");
	}
	if (rc == 0 && b.p == NULL)
		rc = tau_buf_append(&b, "", 0);
	if (rc < 0) {
		tau_buf_free(&b);
		return rc;
	}
	*out = b.p;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Verbs                                                               */

static int do_json(cJSON **out, tau_kube_client *c, const char *method, const char *path,
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

int tau_kube_get(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                 const char *name)
{
	char *path = NULL;
	int rc;

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "get: no name");
	rc = tau_kube_path(&path, res, ns, name, NULL);
	if (rc == 0)
		rc = do_json(out, c, "GET", path, NULL, NULL, NULL);
	free(path);
	return rc;
}

int tau_kube_list(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                  const tau_kube_list_options *opts)
{
	char *path = NULL, *query = NULL;
	int rc;

	if (opts != NULL && opts->watch)
		return tau_error_set(TAU_EINVAL, "list: use an informer to watch");
	rc = tau_kube_path(&path, res, ns, NULL, NULL);
	if (rc == 0)
		rc = tau_kube_list_query(&query, opts);
	if (rc == 0)
		rc = do_json(out, c, "GET", path, query, NULL, NULL);
	free(path);
	free(query);
	return rc;
}

int tau_kube_list_all(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                      const tau_kube_list_options *opts)
{
	tau_kube_list_options o = {0};
	cJSON *acc = NULL, *page = NULL, *items;
	char *cont = NULL;
	int rc;

	if (opts)
		o = *opts;
	if (o.limit <= 0)
		o.limit = 500;
	for (;;) {
		const char *next = NULL;
		cJSON *page_items;

		o.continue_token = cont;
		if (cont)
			o.resource_version = NULL; /* forbidden together with continue */
		rc = tau_kube_list(&page, c, res, ns, &o);
		if (rc < 0 && cont != NULL &&
		    tau_kube_api_error_is(tau_kube_api_error_last(), "Expired")) {
			/* Token expired mid-way: one unpaged list, as client-go's pager. */
			cJSON_Delete(acc);
			acc = NULL;
			free(cont);
			cont = NULL;
			o.limit = 0;
			o.resource_version = opts ? opts->resource_version : NULL;
			rc = tau_kube_list(&page, c, res, ns, &o);
		}
		if (rc < 0)
			goto out;
		page_items = cJSON_GetObjectItemCaseSensitive(page, "items");
		if (page_items != NULL && !cJSON_IsArray(page_items) && !cJSON_IsNull(page_items)) {
			rc = tau_error_set(TAU_ETYPE, "list %s: items is not an array",
			                   res->plural);
			goto out;
		}
		if (acc == NULL) {
			acc = page;
			page = NULL;
			items = cJSON_GetObjectItemCaseSensitive(acc, "items");
			if (!cJSON_IsArray(items)) {
				cJSON_DeleteItemFromObjectCaseSensitive(acc, "items");
				items = cJSON_AddArrayToObject(acc, "items");
				if (items == NULL) {
					rc = tau_error_set(TAU_ENOMEM, "out of memory");
					goto out;
				}
			}
		} else {
			items = cJSON_GetObjectItemCaseSensitive(acc, "items");
			while (page_items && page_items->child) {
				cJSON *it =
				        cJSON_DetachItemViaPointer(page_items, page_items->child);

				cJSON_AddItemToArray(items, it);
			}
		}
		free(cont);
		cont = NULL;
		if (tau_json_get_string(&next, page ? page : acc, "metadata.continue") == 0 &&
		    next[0] != '\0' && o.limit > 0) {
			cont = tau_kube_strdup(next);
			if (cont == NULL) {
				rc = tau_error_set(TAU_ENOMEM, "out of memory");
				goto out;
			}
		}
		cJSON_Delete(page);
		page = NULL;
		if (cont == NULL)
			break;
	}
	{
		cJSON *md = cJSON_GetObjectItemCaseSensitive(acc, "metadata");

		if (cJSON_IsObject(md)) {
			cJSON_DeleteItemFromObjectCaseSensitive(md, "continue");
			cJSON_DeleteItemFromObjectCaseSensitive(md, "remainingItemCount");
		}
	}
	tau_error_clear();
	*out = acc;
	acc = NULL;
	rc = 0;
out:
	free(cont);
	cJSON_Delete(page);
	cJSON_Delete(acc);
	return rc;
}

/* Namespace and name of `obj` for a write; `ns` overrides metadata.namespace. */
static int object_target(const char **ns_out, const char **name_out, tau_kube_client *c,
                         const tau_kube_resource *res, const char *ns, const cJSON *obj,
                         bool need_name)
{
	const char *name = NULL, *ons = NULL;

	if (!cJSON_IsObject(obj))
		return tau_error_set(TAU_EINVAL, "%s: the object is not a JSON object",
		                     res->plural);
	if (tau_json_get_string(&name, obj, "metadata.name") < 0)
		name = NULL;
	if (need_name && (name == NULL || name[0] == '\0'))
		return tau_error_set(TAU_EINVAL, "%s: the object has no metadata.name",
		                     res->plural);
	if (res->namespaced) {
		if (ns == NULL || ns[0] == '\0') {
			if (tau_json_get_string(&ons, obj, "metadata.namespace") == 0 && ons[0])
				ns = ons;
			else
				ns = c->cfg->namespace;
		}
	} else {
		ns = NULL;
	}
	tau_error_clear();
	*ns_out = ns;
	*name_out = name;
	return 0;
}

static int write_object(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                        const char *ns, const cJSON *obj, const char *method, const char *sub)
{
	const char *name = NULL;
	char *path = NULL, *body = NULL;
	bool create = strcmp(method, "POST") == 0;
	int rc;

	rc = object_target(&ns, &name, c, res, ns, obj, !create);
	if (rc == 0)
		rc = tau_kube_path(&path, res, ns, create ? NULL : name, sub);
	if (rc == 0)
		rc = tau_json_print(&body, obj);
	if (rc == 0)
		rc = do_json(out, c, method, path, NULL, body, "application/json");
	free(path);
	free(body);
	return rc;
}

int tau_kube_create(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const cJSON *obj)
{
	return write_object(out, c, res, ns, obj, "POST", NULL);
}

int tau_kube_update(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const cJSON *obj)
{
	return write_object(out, c, res, ns, obj, "PUT", NULL);
}

int tau_kube_update_status(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                           const char *ns, const cJSON *obj)
{
	return write_object(out, c, res, ns, obj, "PUT", "status");
}

int tau_kube_patch(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                   const char *name, const char *sub, tau_kube_patch_type type, const char *patch)
{
	static const char *const ctypes[] = {
	        [TAU_KUBE_PATCH_MERGE] = "application/merge-patch+json",
	        [TAU_KUBE_PATCH_JSON] = "application/json-patch+json",
	        [TAU_KUBE_PATCH_STRATEGIC] = "application/strategic-merge-patch+json",
	};
	char *path = NULL;
	int rc;

	if (name == NULL || patch == NULL)
		return tau_error_set(TAU_EINVAL, "patch: no name or no patch");
	if ((unsigned)type > TAU_KUBE_PATCH_STRATEGIC)
		return tau_error_set(TAU_EINVAL, "patch: unknown patch type %d", (int)type);
	if (res->namespaced && (ns == NULL || ns[0] == '\0'))
		ns = c->cfg->namespace;
	rc = tau_kube_path(&path, res, res->namespaced ? ns : NULL, name, sub);
	if (rc == 0)
		rc = do_json(out, c, "PATCH", path, NULL, patch, ctypes[type]);
	free(path);
	return rc;
}

int tau_kube_delete(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const char *name, const tau_kube_delete_options *opts)
{
	cJSON *body = NULL;
	char *path = NULL, *text = NULL;
	int rc;

	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "delete: no name");
	if (res->namespaced && (ns == NULL || ns[0] == '\0'))
		ns = c->cfg->namespace;
	rc = tau_kube_path(&path, res, res->namespaced ? ns : NULL, name, NULL);
	if (rc < 0)
		return rc;
	body = cJSON_CreateObject();
	if (body == NULL || !cJSON_AddStringToObject(body, "kind", "DeleteOptions") ||
	    !cJSON_AddStringToObject(body, "apiVersion", "v1"))
		goto nomem;
	if (opts != NULL) {
		if (opts->propagation_policy &&
		    !cJSON_AddStringToObject(body, "propagationPolicy", opts->propagation_policy))
			goto nomem;
		if (opts->grace_period_seconds >= 0 &&
		    !cJSON_AddNumberToObject(body, "gracePeriodSeconds",
		                             (double)opts->grace_period_seconds))
			goto nomem;
		if (opts->uid || opts->resource_version) {
			cJSON *pre = cJSON_AddObjectToObject(body, "preconditions");

			if (pre == NULL ||
			    (opts->uid && !cJSON_AddStringToObject(pre, "uid", opts->uid)) ||
			    (opts->resource_version &&
			     !cJSON_AddStringToObject(pre, "resourceVersion",
			                              opts->resource_version)))
				goto nomem;
		}
	}
	rc = tau_json_print(&text, body);
	if (rc == 0)
		rc = do_json(out, c, "DELETE", path, NULL, text, "application/json");
	goto out;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	cJSON_Delete(body);
	free(text);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ */
/* TokenReview                                                         */

void tau_kube_token_review_free(tau_kube_token_review *r)
{
	if (r == NULL)
		return;
	free(r->username);
	free(r->uid);
	for (size_t i = 0; i < r->n_groups; i++)
		free(r->groups[i]);
	free(r->groups);
	for (size_t i = 0; i < r->n_extra; i++) {
		free(r->extra[i].key);
		for (size_t j = 0; j < r->extra[i].n_values; j++)
			free(r->extra[i].values[j]);
		free(r->extra[i].values);
	}
	free(r->extra);
	for (size_t i = 0; i < r->n_audiences; i++)
		free(r->audiences[i]);
	free(r->audiences);
	free(r->error);
	free(r);
}

/* Copy a JSON array of strings (NULL/absent = empty). */
static int string_array(char ***out, size_t *n, const cJSON *arr, const char *what)
{
	size_t count = 0, i = 0;
	const cJSON *it;
	char **v;

	*out = NULL;
	*n = 0;
	if (arr == NULL || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return tau_error_set(TAU_EINVAL, "TokenReview: %s is not an array", what);
	cJSON_ArrayForEach(it, arr)
	{
		if (!cJSON_IsString(it))
			return tau_error_set(TAU_EINVAL, "TokenReview: %s holds a non-string",
			                     what);
		count++;
	}
	if (count == 0)
		return 0;
	v = calloc(count, sizeof(*v));
	if (v == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, arr)
	{
		v[i] = tau_kube_strdup(it->valuestring);
		if (v[i++] == NULL) {
			for (size_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
	}
	*out = v;
	*n = count;
	return 0;
}

int tau_kube_token_review_decode(tau_kube_token_review **out, const cJSON *review)
{
	const cJSON *status = NULL, *user, *extra, *it;
	tau_kube_token_review *r;
	const char *s;
	bool b;
	int rc;

	if (tau_json_get_object(&status, review, "status") < 0)
		return tau_error_set(TAU_EINVAL, "TokenReview: no status in the response");
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	rc = tau_json_get_bool(&b, status, "authenticated");
	if (rc == -TAU_ETYPE) {
		rc = tau_error_set(TAU_EINVAL,
		                   "TokenReview: status.authenticated is not a boolean");
		goto fail;
	}
	r->authenticated = rc == 0 && b;
	if (tau_json_get_string(&s, status, "error") == 0 && s[0] != '\0' &&
	    (r->error = tau_kube_strdup(s)) == NULL)
		goto nomem;
	user = cJSON_GetObjectItemCaseSensitive(status, "user");
	if (cJSON_IsObject(user)) {
		if (tau_json_get_string(&s, user, "username") == 0 &&
		    (r->username = tau_kube_strdup(s)) == NULL)
			goto nomem;
		if (tau_json_get_string(&s, user, "uid") == 0 &&
		    (r->uid = tau_kube_strdup(s)) == NULL)
			goto nomem;
		rc = string_array(&r->groups, &r->n_groups,
		                  cJSON_GetObjectItemCaseSensitive(user, "groups"), "user.groups");
		if (rc < 0)
			goto fail;
		extra = cJSON_GetObjectItemCaseSensitive(user, "extra");
		if (cJSON_IsObject(extra)) {
			size_t count = (size_t)cJSON_GetArraySize(extra), i = 0;

			r->extra = count ? calloc(count, sizeof(*r->extra)) : NULL;
			if (count && r->extra == NULL)
				goto nomem;
			cJSON_ArrayForEach(it, extra)
			{
				tau_kube_extra *e = &r->extra[i++];

				r->n_extra = i;
				e->key = tau_kube_strdup(it->string);
				if (e->key == NULL)
					goto nomem;
				rc = string_array(&e->values, &e->n_values, it, "user.extra");
				if (rc < 0)
					goto fail;
				if (e->n_values > 0 &&
				    strcmp(e->key, "authentication.kubernetes.io/pod-name") == 0)
					r->pod_name = e->values[0];
				if (e->n_values > 0 &&
				    strcmp(e->key, "authentication.kubernetes.io/node-name") == 0)
					r->node_name = e->values[0];
			}
		}
	}
	rc = string_array(&r->audiences, &r->n_audiences,
	                  cJSON_GetObjectItemCaseSensitive(status, "audiences"),
	                  "status.audiences");
	if (rc < 0)
		goto fail;
	if (!r->authenticated) {
		/* Only trust identity fields of an authenticated review. */
		free(r->username);
		r->username = NULL;
	}
	tau_error_clear();
	*out = r;
	return 0;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
fail:
	tau_kube_token_review_free(r);
	return rc;
}

int tau_kube_token_review_submit(tau_kube_token_review **out, tau_kube_client *c, const char *token,
                                 const char *const *audiences, size_t n_audiences)
{
	cJSON *req = NULL, *resp = NULL, *spec, *aud;
	tau_kube_token_review *r = NULL;
	char *path = NULL, *body = NULL;
	int rc;

	if (token == NULL || token[0] == '\0')
		return tau_error_set(TAU_EINVAL, "TokenReview: empty token");
	req = cJSON_CreateObject();
	if (req == NULL ||
	    !cJSON_AddStringToObject(req, "apiVersion", "authentication.k8s.io/v1") ||
	    !cJSON_AddStringToObject(req, "kind", "TokenReview") ||
	    (spec = cJSON_AddObjectToObject(req, "spec")) == NULL ||
	    !cJSON_AddStringToObject(spec, "token", token))
		goto nomem;
	if (n_audiences > 0) {
		aud = cJSON_AddArrayToObject(spec, "audiences");
		if (aud == NULL)
			goto nomem;
		for (size_t i = 0; i < n_audiences; i++) {
			cJSON *s = cJSON_CreateString(audiences[i]);

			if (s == NULL)
				goto nomem;
			cJSON_AddItemToArray(aud, s);
		}
	}
	rc = tau_kube_path(&path, &tau_kube_res_tokenreviews, NULL, NULL, NULL);
	if (rc == 0)
		rc = tau_json_print(&body, req);
	if (rc == 0)
		rc = do_json(&resp, c, "POST", path, NULL, body, "application/json");
	if (rc == 0)
		rc = tau_kube_token_review_decode(&r, resp);
	if (rc < 0)
		goto out;
	if (r->authenticated && n_audiences > 0) {
		bool match = false;

		for (size_t i = 0; i < r->n_audiences && !match; i++)
			for (size_t j = 0; j < n_audiences && !match; j++)
				match = strcmp(r->audiences[i], audiences[j]) == 0;
		if (!match) {
			r->authenticated = false;
			if (r->error == NULL)
				r->error = tau_kube_strdup("token is not valid for the requested "
				                           "audiences");
		}
	}
	*out = r;
	r = NULL;
	goto out;
nomem:
	rc = tau_error_set(TAU_ENOMEM, "out of memory");
out:
	if (body)
		memset(body, 0, strlen(body));
	free(body);
	free(path);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	tau_kube_token_review_free(r);
	return rc;
}

/* ------------------------------------------------------------------ */
/* SubjectAccessReview                                                 */

/* spec.user/uid/groups/extra of a SubjectAccessReview, from a TokenReview's user. */
static int sar_user(cJSON *spec, const tau_kube_token_review *user)
{
	cJSON *groups, *extra;

	if (!cJSON_AddStringToObject(spec, "user", user->username))
		return -1;
	if (user->uid != NULL && !cJSON_AddStringToObject(spec, "uid", user->uid))
		return -1;
	if ((groups = cJSON_AddArrayToObject(spec, "groups")) == NULL)
		return -1;
	for (size_t i = 0; i < user->n_groups; i++) {
		cJSON *g = cJSON_CreateString(user->groups[i]);

		if (g == NULL)
			return -1;
		cJSON_AddItemToArray(groups, g);
	}
	if (user->n_extra == 0)
		return 0;
	if ((extra = cJSON_AddObjectToObject(spec, "extra")) == NULL)
		return -1;
	for (size_t i = 0; i < user->n_extra; i++) {
		cJSON *vals = cJSON_AddArrayToObject(extra, user->extra[i].key);

		if (vals == NULL)
			return -1;
		for (size_t j = 0; j < user->extra[i].n_values; j++) {
			cJSON *v = cJSON_CreateString(user->extra[i].values[j]);

			if (v == NULL)
				return -1;
			cJSON_AddItemToArray(vals, v);
		}
	}
	return 0;
}

int tau_kube_subject_access_review(bool *allowed, char *reason, size_t cap, tau_kube_client *c,
                                   const tau_kube_token_review *user, const char *verb,
                                   const char *group, const char *resource)
{
	cJSON *req = NULL, *resp = NULL, *spec, *attrs;
	char *path = NULL, *body = NULL;
	const char *s;
	bool b = false;
	int rc;

	*allowed = false;
	if (cap > 0)
		reason[0] = '\0';
	if (user == NULL || !user->authenticated || user->username == NULL)
		return tau_error_set(TAU_EINVAL, "SubjectAccessReview: no authenticated user");
	req = cJSON_CreateObject();
	if (req == NULL || !cJSON_AddStringToObject(req, "apiVersion", "authorization.k8s.io/v1") ||
	    !cJSON_AddStringToObject(req, "kind", "SubjectAccessReview") ||
	    (spec = cJSON_AddObjectToObject(req, "spec")) == NULL || sar_user(spec, user) < 0 ||
	    (attrs = cJSON_AddObjectToObject(spec, "resourceAttributes")) == NULL ||
	    !cJSON_AddStringToObject(attrs, "verb", verb) ||
	    !cJSON_AddStringToObject(attrs, "group", group) ||
	    !cJSON_AddStringToObject(attrs, "resource", resource)) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}
	rc = tau_kube_path(&path, &tau_kube_res_subjectaccessreviews, NULL, NULL, NULL);
	if (rc == 0)
		rc = tau_json_print(&body, req);
	if (rc == 0)
		rc = do_json(&resp, c, "POST", path, NULL, body, "application/json");
	if (rc < 0)
		goto out;
	rc = tau_json_get_bool(&b, resp, "status.allowed");
	if (rc == -TAU_ETYPE) {
		rc = tau_error_set(TAU_EINVAL,
		                   "SubjectAccessReview: status.allowed is not a boolean");
		goto out;
	}
	rc = 0;
	*allowed = b;
	if (tau_json_get_string(&s, resp, "status.reason") == 0 && cap > 0)
		snprintf(reason, cap, "%s", s);
	else if (tau_json_get_string(&s, resp, "status.evaluationError") == 0 && cap > 0)
		snprintf(reason, cap, "%s", s);
out:
	free(body);
	free(path);
	cJSON_Delete(req);
	cJSON_Delete(resp);
	return rc;
}
