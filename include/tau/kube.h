/*
 * tau/kube.h - a small Kubernetes REST client: configuration, typed API
 * errors, rate limiting and retries, and the verbs (get, list, create,
 * update, update of /status, patch, delete) plus a TokenReview helper.
 *
 * Objects travel as cJSON trees; the client never interprets them beyond
 * metadata.  Calls here block the calling thread (a worker); watches and
 * informers run on a shared event loop instead (tau/kube_informer.h).
 *
 * Every call returns 0 or a negative TAU_E* code.  When the server answered
 * with an HTTP error the decoded Status is kept per thread and read with
 * tau_kube_api_error_last(); its http_code is 0 after a transport failure.
 * Code mapping: 404 -> TAU_ENOTFOUND, 409 -> TAU_ECONFLICT, 401/403 ->
 * TAU_EPERM, 400/422 -> TAU_EINVAL, 413 -> TAU_ETOOBIG, 429/503 ->
 * TAU_EAGAIN, 504 -> TAU_ETIMEOUT, 410 and other codes -> TAU_EIO.
 */
#ifndef TAU_KUBE_H
#define TAU_KUBE_H

#include "tau/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* ------------------------------------------------------------------ */
/* Resources                                                           */

/** Where a kind lives: group ("" for core), version, plural, scope. */
typedef struct tau_kube_resource {
	const char *group;   /**< "" or NULL for the core group */
	const char *version; /**< "v1" */
	const char *plural;  /**< "nodes" */
	bool namespaced;     /**< false for cluster-scoped kinds */
} tau_kube_resource;

extern const tau_kube_resource tau_kube_res_nodes;
extern const tau_kube_resource tau_kube_res_namespaces;
extern const tau_kube_resource tau_kube_res_pods;
extern const tau_kube_resource tau_kube_res_configmaps;
extern const tau_kube_resource tau_kube_res_leases;
extern const tau_kube_resource tau_kube_res_crds;
extern const tau_kube_resource tau_kube_res_tokenreviews;
extern const tau_kube_resource tau_kube_res_subjectaccessreviews;
extern const tau_kube_resource tau_kube_res_csinodes;

/**
 * Build the URL path of a collection, object or subresource, e.g.
 * "/apis/coordination.k8s.io/v1/namespaces/ns/leases/x/status".
 *
 * @param out  receives a new string (free()); untouched on failure
 * @param ns   namespace, NULL/"" for all namespaces or cluster scope
 * @param name object name or NULL for the collection
 * @param sub  subresource ("status") or NULL
 * @return 0, -TAU_EINVAL (segment empty, "." or "..", or holding '/', '?', '#', '%'
 *         or a control byte; a namespace for a cluster-scoped kind), -TAU_ENOMEM.
 */
int tau_kube_path(char **out, const tau_kube_resource *res, const char *ns, const char *name,
                  const char *sub);

/* ------------------------------------------------------------------ */
/* API errors                                                          */

/** The decoded failure of one request. */
typedef struct tau_kube_api_error {
	int http_code;             /**< HTTP status; 0 = transport error (no answer) */
	char reason[64];           /**< Status.reason, or derived from the code */
	char message[512];         /**< Status.message, or the text body */
	int retry_after_s;         /**< Retry-After / details.retryAfterSeconds; -1 none */
	char continue_token[1024]; /**< metadata.continue of a 410 list Status, "" none */
} tau_kube_api_error;

/**
 * Decode an error response (a metav1.Status, or plain text from API priority
 * and fairness or a proxy) into `out`.  Parser only, no I/O.
 *
 * @param method             request method; picks AlreadyExists vs Conflict for 409
 * @param retry_after_header Retry-After seconds from the header, -1 if absent
 * @return the TAU_E* code the caller should return (negative).
 */
int tau_kube_api_error_decode(tau_kube_api_error *out, int http_code, const char *body, size_t len,
                              const char *method, int retry_after_header);

/** The negative TAU_E* code for an HTTP status (see the table at the top). */
int tau_kube_api_error_code(int http_code);

/**
 * Lends this thread's last API error (never NULL); http_code 0 means the
 * last failure was not an HTTP error response.
 */
const tau_kube_api_error *tau_kube_api_error_last(void);

/**
 * True when `e` is of `reason` ("NotFound", "Conflict", "Expired", ...):
 * the reason matches, or the reason is empty and the code is the one that
 * reason implies (client-go's rule).  "Expired" also accepts "Gone".
 */
bool tau_kube_api_error_is(const tau_kube_api_error *e, const char *reason);

/* ------------------------------------------------------------------ */
/* Configuration                                                       */

/** Everything needed to reach and authenticate to one API server. */
typedef struct tau_kube_config {
	char *server;          /**< "https://host:port" (no trailing slash) */
	char *tls_server_name; /**< SNI / verification name override, or NULL */
	bool insecure_skip_tls_verify;
	char *ca_file;          /**< path the CA came from (messages), or NULL */
	unsigned char *ca_data; /**< PEM bytes, or NULL for the system store */
	size_t ca_len;
	char *cert_file; /**< client certificate path, or NULL */
	unsigned char *cert_data;
	size_t cert_len;
	char *key_file; /**< client key path, or NULL */
	unsigned char *key_data;
	size_t key_len;
	char *token;      /**< static bearer token, or NULL */
	char *token_file; /**< bearer token file, re-read every minute and after a 401 */
	char *username;   /**< basic auth (kubeconfig users.user.username), or NULL */
	char *password;
	char *namespace;             /**< default namespace ("default" if none given) */
	char *context;               /**< kubeconfig context used; NULL for in-cluster */
	char *user_agent;            /**< NULL = "libtau" */
	double qps;                  /**< client-side rate limit; <= 0 disables (default 20) */
	unsigned burst;              /**< bucket size (default 30) */
	int max_retries;             /**< retries for 429 and idempotent 5xx (default 10) */
	uint64_t retry_initial_ms;   /**< backoff when no Retry-After (default 200) */
	uint64_t retry_cap_ms;       /**< cap for that backoff (default 10000) */
	uint64_t retry_after_cap_ms; /**< cap for a server's Retry-After (default 60000) */
	uint64_t timeout_ms; /**< whole-request timeout for non-watch calls (default 30000) */
	uint64_t connect_timeout_ms; /**< default 10000; covers the TLS handshake too */
	bool no_transport_retry;     /**< a request that got no answer is final (default false) */
	size_t body_cap;             /**< largest accepted response body (default 64 MiB) */
	size_t watch_line_cap;       /**< largest accepted watch event line (default 4 MiB) */
	uint64_t token_reread_ms;    /**< token file refresh period (default 60000) */
} tau_kube_config;

/** Default in-cluster service-account directory. */
#define TAU_KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/** A zeroed config with the defaults above filled in.  @return 0 or -TAU_ENOMEM. */
int tau_kube_config_new(tau_kube_config **out);

/** Deep copy.  @return 0 or -TAU_ENOMEM. */
int tau_kube_config_dup(tau_kube_config **out, const tau_kube_config *cfg);

/** Free a config and everything it owns; NULL is a no-op. */
void tau_kube_config_free(tau_kube_config *cfg);

/**
 * kubectl's --request-timeout for one-shot programs (tau, tau-node-agent --once): `ms` > 0
 * gives up on each request after `ms`, connecting included, in one attempt (no retries at
 * all); 0 puts no limit on a request as a whole.  Either way a request that got no answer
 * (connection refused or reset, timed out) is not retried, so a closed port fails at once,
 * and connecting (TLS handshake included) stays bounded by connect_timeout_ms.  Answers
 * 429/5xx are still retried as configured when `ms` is 0.
 */
void tau_kube_config_set_request_timeout(tau_kube_config *cfg, uint64_t ms);

/**
 * In-cluster configuration: server from KUBERNETES_SERVICE_HOST/PORT
 * (IPv6 bracketed), token file, CA and namespace from `sa_dir` (NULL =
 * env TAU_KUBE_SA_DIR if set, else TAU_KUBE_SA_DIR); namespace from
 * POD_NAMESPACE, then the namespace file, then "default".
 * @return 0, -TAU_ENOTFOUND (not in a cluster: the env vars are unset),
 *         -TAU_EIO (token or CA unreadable), -TAU_ENOMEM.
 */
int tau_kube_config_in_cluster(tau_kube_config **out, const char *sa_dir);

/** How a program wants its configuration found. */
typedef struct tau_kube_config_options {
	const char *kubeconfig; /**< --kubeconfig; NULL = $KUBECONFIG, then ~/.kube/config */
	const char *context;    /**< --context; NULL = current-context */
	const char *sa_dir;     /**< in-cluster directory override (tests) */
} tau_kube_config_options;

/**
 * Find the configuration like kubectl: an explicit kubeconfig file; else
 * $KUBECONFIG (colon-separated, first-wins merge); else in-cluster when
 * KUBERNETES_SERVICE_HOST is set; else ~/.kube/config.  Referenced files
 * (CA, certificate, key) are read now, so an unreadable one is reported here.
 * @return 0, -TAU_ENOTFOUND (no config, or the context does not exist),
 *         -TAU_EINVAL (malformed kubeconfig), -TAU_EIO (file unreadable), -TAU_ENOMEM.
 */
int tau_kube_config_load(tau_kube_config **out, const tau_kube_config_options *opts);

/* ------------------------------------------------------------------ */
/* Client                                                              */

typedef struct tau_kube_client tau_kube_client;

/**
 * A client for `cfg` (copied).  Thread-safe: several threads may call
 * verbs on one client at once.
 * @return 0, -TAU_EINVAL (no server), -TAU_ENOMEM, -TAU_EIO (curl init).
 */
int tau_kube_client_new(tau_kube_client **out, const tau_kube_config *cfg);

/** Free the client; NULL is a no-op.  No call may be in flight. */
void tau_kube_client_free(tau_kube_client *c);

/** Lends the client's configuration. */
const tau_kube_config *tau_kube_client_config(const tau_kube_client *c);

/** Counters since the client was made (tests, metrics). */
typedef struct tau_kube_client_stats {
	uint64_t requests;     /**< HTTP requests sent, retries included */
	uint64_t retries;      /**< of which retries */
	uint64_t throttled_ms; /**< total wait imposed by the client-side limiter */
	uint64_t token_reads;  /**< times the token file was read */
} tau_kube_client_stats;

/** Copy the counters into `out`. */
void tau_kube_client_stats_get(const tau_kube_client *c, tau_kube_client_stats *out);

/**
 * Write the request metrics of `n` clients (at most 8) as Prometheus text:
 * PREFIX_kube_requests_total{client,verb,code} (counter) and
 * PREFIX_kube_request_duration_seconds{client,verb} (histogram; watches untimed),
 * PREFIX_kube_request_retries_total{client} and PREFIX_kube_throttle_wait_seconds_total{client}
 * (counters, from tau_kube_client_stats).
 * `names[i]` labels `clients[i]`; verbs are GET, LIST, WATCH (informers), POST, PUT,
 * PATCH, DELETE; code is the HTTP code, "<error>" when none came.  Thread-safe.
 */
void tau_kube_client_metrics_write(tau_buf *b, const char *prefix, tau_kube_client *const *clients,
                                   const char *const *names, size_t n);

/** A raw request; the verbs below are built on it. */
typedef struct tau_kube_request {
	const char *method; /**< "GET", "POST", ... */
	const char *path;   /**< already-escaped path, e.g. from tau_kube_path */
	const char *query;  /**< "a=b&c=d" already encoded, or NULL */
	const char *body;   /**< request body or NULL */
	size_t body_len;
	const char *content_type; /**< NULL = application/json when a body is present */
	uint64_t timeout_ms;      /**< 0 = the config's timeout_ms */
	int max_retries;          /**< -1 = the config's; 0 = never retry */
} tau_kube_request;

/**
 * Send a request, retrying 429 (any verb) and 5xx/transport errors (GET,
 * PUT, DELETE only) with the server's Retry-After or a jittered backoff;
 * re-reads the token file and retries once after a 401.
 * @param out  receives the parsed JSON body of a 2xx answer (NULL allowed:
 *             the body is dropped); untouched on failure
 * @return 0 or a negative code (see the file comment); -TAU_ETOOBIG when the
 *         body exceeds body_cap; -TAU_EIO for a transport error.
 */
int tau_kube_client_request(cJSON **out, tau_kube_client *c, const tau_kube_request *req);

/* ------------------------------------------------------------------ */
/* Verbs                                                               */

/** Options of list and watch requests; zeroed = unset. */
typedef struct tau_kube_list_options {
	const char *label_selector;         /**< e.g. "app=web,tier in (a,b)" */
	const char *field_selector;         /**< e.g. "metadata.name=n1" */
	const char *resource_version;       /**< NULL = unset */
	const char *resource_version_match; /**< "NotOlderThan" / "Exact" */
	const char *continue_token;
	int64_t limit;           /**< 0 = unset */
	int64_t timeout_seconds; /**< 0 = unset */
	bool watch;
	bool allow_bookmarks;
} tau_kube_list_options;

/**
 * Encode list/watch options as a query string ("labelSelector=app%3Dweb&limit=500"),
 * percent-encoding every byte outside [A-Za-z0-9-._~].  Parameters are in a
 * fixed order.  @param out receives a new string ("" when nothing is set).
 * @return 0 or -TAU_ENOMEM.
 */
int tau_kube_list_query(char **out, const tau_kube_list_options *opts);

/** GET one object; `ns` NULL for cluster scope.  @param out receives the object. */
int tau_kube_get(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                 const char *name);

/** GET one page of a collection (`ns` NULL = all namespaces).  @param out receives the List. */
int tau_kube_list(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                  const tau_kube_list_options *opts);

/**
 * GET a whole collection, page by page (opts->limit, default 500), into one
 * List whose items are all pages' items and whose metadata.resourceVersion
 * is the snapshot's.  If a continue token expires (410), falls back to one
 * unpaged list, as client-go's pager does.
 */
int tau_kube_list_all(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                      const tau_kube_list_options *opts);

/** POST `obj`.  `ns` NULL takes metadata.namespace.  @param out receives the created object. */
int tau_kube_create(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const cJSON *obj);

/**
 * PUT `obj` to its name (metadata.name, metadata.namespace unless `ns` is
 * given).  A stale metadata.resourceVersion gives -TAU_ECONFLICT.
 */
int tau_kube_update(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const cJSON *obj);

/** PUT `obj` to its /status subresource; same rules as tau_kube_update. */
int tau_kube_update_status(cJSON **out, tau_kube_client *c, const tau_kube_resource *res,
                           const char *ns, const cJSON *obj);

/** Patch kinds. */
typedef enum tau_kube_patch_type {
	TAU_KUBE_PATCH_MERGE = 0, /**< application/merge-patch+json (RFC 7386) */
	TAU_KUBE_PATCH_JSON,      /**< application/json-patch+json (RFC 6902) */
	TAU_KUBE_PATCH_STRATEGIC  /**< strategic merge patch (built-in kinds only) */
} tau_kube_patch_type;

/** PATCH `name` (or its subresource `sub`, e.g. "status") with `patch` text. */
int tau_kube_patch(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                   const char *name, const char *sub, tau_kube_patch_type type, const char *patch);

/** DeleteOptions; zeroed = server defaults. */
typedef struct tau_kube_delete_options {
	const char *uid;                /**< precondition, or NULL */
	const char *resource_version;   /**< precondition, or NULL */
	const char *propagation_policy; /**< "Background", "Foreground", "Orphan" or NULL */
	int64_t grace_period_seconds;   /**< < 0 = unset (use -1) */
} tau_kube_delete_options;

/**
 * DELETE `name`.  A failed precondition gives -TAU_ECONFLICT.
 * @param out  receives what the server returned (the object, or a Success Status); may be NULL
 * @param opts may be NULL
 */
int tau_kube_delete(cJSON **out, tau_kube_client *c, const tau_kube_resource *res, const char *ns,
                    const char *name, const tau_kube_delete_options *opts);

/* ------------------------------------------------------------------ */
/* TokenReview                                                         */

/** One `extra` entry of a reviewed user. */
typedef struct tau_kube_extra {
	char *key;
	char **values;
	size_t n_values;
} tau_kube_extra;

/** The outcome of a TokenReview. */
typedef struct tau_kube_token_review {
	bool authenticated;
	char *username; /**< NULL unless authenticated */
	char *uid;
	char **groups;
	size_t n_groups;
	tau_kube_extra *extra;
	size_t n_extra;
	const char *pod_name; /**< lends extra "authentication.kubernetes.io/pod-name"[0] or NULL */
	const char *node_name; /**< lends extra ".../node-name"[0] or NULL */
	char **audiences;      /**< status.audiences */
	size_t n_audiences;
	char *error; /**< status.error, or NULL */
} tau_kube_token_review;

/**
 * Decode a TokenReview object's status.  Parser only.
 * @return 0, -TAU_EINVAL (no status or wrong types), -TAU_ENOMEM.
 */
int tau_kube_token_review_decode(tau_kube_token_review **out, const cJSON *review);

/**
 * POST a TokenReview for `token` with optional `audiences`; a rejected token
 * is success with authenticated false and `error` set.  When audiences were
 * requested and the token is authenticated, status.audiences must name at
 * least one of them or authenticated is reset to false.
 */
int tau_kube_token_review_submit(tau_kube_token_review **out, tau_kube_client *c, const char *token,
                                 const char *const *audiences, size_t n_audiences);

/** Free a review; NULL is a no-op. */
void tau_kube_token_review_free(tau_kube_token_review *r);

/* ------------------------------------------------------------------ */
/* SubjectAccessReview                                                 */

/**
 * POST a SubjectAccessReview: may the user of the authenticated review `user`
 * (name, uid, groups, extra) `verb` the cluster-scoped `resource` of API
 * `group`?  *allowed is true only when the API server said status.allowed.
 * `reason` (cap bytes) gets status.reason or status.evaluationError, "" when none.
 * @return 0; -TAU_EINVAL (no authenticated user, or a malformed answer); the
 *         errors of a request (-TAU_EIO, -TAU_EPERM, ...), -TAU_ENOMEM.
 */
int tau_kube_subject_access_review(bool *allowed, char *reason, size_t cap, tau_kube_client *c,
                                   const tau_kube_token_review *user, const char *verb,
                                   const char *group, const char *resource);

#endif /* TAU_KUBE_H */
