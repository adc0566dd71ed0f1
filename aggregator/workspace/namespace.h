/*
 * workspace/namespace.h - the one function that decides a TauWorkspace's namespace
 * (docs/workspaces.md), the operator allowlist, and the
 * ownership labels every workspace-owned object carries.
 *
 * Everything here is pure: the caller hands in what it observed (the
 * namespace's labels, the other workspaces' claims, the allowlist) and gets a
 * decision back.  A refusal is a result, not an error: it carries the
 * condition reason, a message naming the object and the cause, and whether
 * it is retryable (a precondition elsewhere that may clear by itself) or
 * permanent (the TauWorkspace spec or the TauCluster configuration has to
 * change).
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_NAMESPACE_H
#define TAU_AGGREGATOR_WORKSPACE_NAMESPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/** Ownership label: who manages the object.  Our value is TAU_WS_MANAGED_BY. */
#define TAU_WS_LABEL_MANAGED_BY "app.kubernetes.io/managed-by"
/** The value of TAU_WS_LABEL_MANAGED_BY on everything the aggregator writes. */
#define TAU_WS_MANAGED_BY "taugrid"
/** Ownership label: the TauWorkspace (metadata.name) an object belongs to. */
#define TAU_WS_LABEL_WORKSPACE "tau.azure.com/workspace"
/** Annotation holding the owning TauWorkspace's metadata.uid. */
#define TAU_WS_ANNOTATION_OWNER_UID "tau.azure.com/workspace-uid"
/** Finalizer on TauWorkspace objects. */
#define TAU_WS_FINALIZER "tau.azure.com/workspace-cleanup"

/** Longest condition message we produce, including the NUL. */
#define TAU_WS_MESSAGE_MAX 1024
/** Room for a namespace name (DNS-1123 label, 63 bytes) and its NUL. */
#define TAU_WS_NAMESPACE_BUF 64

/* Refusal reasons of namespace resolution (condition reasons, CamelCase). */
#define TAU_WS_REASON_INVALID_WORKSPACE_NAME   "InvalidWorkspaceName"           /**< permanent */
#define TAU_WS_REASON_WORKSPACE_NOT_MAPPED     "WorkspaceNotMapped"             /**< permanent */
#define TAU_WS_REASON_NAMESPACE_MAP_MISMATCH   "NamespaceMapMismatch"           /**< permanent */
#define TAU_WS_REASON_INVALID_NAMESPACE_NAME   "InvalidNamespaceName"           /**< permanent */
#define TAU_WS_REASON_NAMESPACE_RESERVED       "NamespaceReserved"              /**< permanent */
#define TAU_WS_REASON_NAMESPACE_NOT_ALLOWED    "NamespaceNotAllowed"            /**< retryable */
#define TAU_WS_REASON_NAMESPACE_CLAIMED        "NamespaceClaimed"               /**< retryable */
#define TAU_WS_REASON_NAMESPACE_OWNED_BY_OTHER "NamespaceOwnedByOtherWorkspace" /**< retryable */
#define TAU_WS_REASON_NAMESPACE_NOT_OWNED      "NamespaceNotOwned"              /**< permanent */
#define TAU_WS_REASON_NAMESPACE_NOT_FOUND      "NamespaceNotFound"              /**< retryable */
#define TAU_WS_REASON_NAMESPACE_TERMINATING    "NamespaceTerminating"           /**< retryable */

/** TauCluster spec.workspaces.namespaceMode. */
typedef enum tau_ws_ns_mode {
	TAU_WS_NS_MANAGED = 0, /**< the aggregator may create (and later delete) owned namespaces */
	TAU_WS_NS_OPERATOR     /**< namespaces are pre-provisioned and must be on the allowlist */
} tau_ws_ns_mode;

/**
 * Why something was refused.  `reason` is NULL when nothing was refused;
 * otherwise it points at a static CamelCase string (one of TAU_WS_REASON_*
 * of this or another ws* header) and `message` names the object and cause.
 */
typedef struct tau_ws_refusal {
	const char *reason;
	char message[TAU_WS_MESSAGE_MAX];
	bool retryable; /**< true: a precondition elsewhere; false: spec/config must change */
} tau_ws_refusal;

/**
 * Fill `r` with a refusal (message printf-style, truncated to fit).  A
 * helper for every ws* module; `reason` must be a static string.
 */
void tau_ws_namespace_refuse(tau_ws_refusal *r, const char *reason, bool retryable, const char *fmt,
                             ...) __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------------------------------ */
/* Operator allowlist                                                                          */

/** Largest allowlist file accepted, in bytes. */
#define TAU_WS_ALLOWLIST_MAX_BYTES (1024u * 1024u)
/** Most names in one allowlist (after duplicates collapse). */
#define TAU_WS_ALLOWLIST_MAX_NAMES 10000u

/** An immutable, sorted set of namespace names. */
typedef struct tau_ws_allowlist tau_ws_allowlist;

/**
 * Parse an allowlist file: one JSON array of namespace names, e.g.
 * `["ml-alpha", "ml-beta"]`.  Every element must be a string holding a
 * DNS-1123 label; duplicates collapse; `[]` is a valid, empty list.  Any
 * bad element fails the whole file (the message names its index), so a
 * half-understood list is never applied.
 *
 * The caller keeps its previous list when this fails (a ConfigMap update
 * that does not parse must not empty the allowlist), and starts with an
 * empty list when the first load fails, as the mapping spec requires.
 *
 * @param out  receives the new list (free with tau_ws_namespace_allowlist_free);
 *             untouched on failure.
 * @param buf  the file's bytes (need not be NUL-terminated).
 * @param len  their length.
 * @return 0; -TAU_ETOOBIG over TAU_WS_ALLOWLIST_MAX_BYTES or _MAX_NAMES (or
 *         JSON nested too deep); -TAU_EINVAL for malformed JSON, a
 *         non-array document or an invalid name; -TAU_ETYPE for an element
 *         that is not a string; -TAU_ENOMEM.
 */
int tau_ws_namespace_allowlist_parse(tau_ws_allowlist **out, const char *buf, size_t len);

/**
 * Build an allowlist from names (the label-selector source: the names of
 * the namespaces that currently match).  Same checks and caps as parsing.
 *
 * @param out    receives the new list; untouched on failure.
 * @param names  n NUL-terminated names (may be NULL when n == 0), borrowed.
 * @return 0, -TAU_EINVAL, -TAU_ETOOBIG or -TAU_ENOMEM.
 */
int tau_ws_namespace_allowlist_from_names(tau_ws_allowlist **out, const char *const *names,
                                          size_t n);

/** True if `ns` is on the list.  A NULL list is empty. */
bool tau_ws_namespace_allowlist_contains(const tau_ws_allowlist *list, const char *ns);

/** Number of names on the list (0 for NULL). */
size_t tau_ws_namespace_allowlist_count(const tau_ws_allowlist *list);

/** The i-th name in sorted order; lends it (valid while the list lives).  i < count. */
const char *tau_ws_namespace_allowlist_name(const tau_ws_allowlist *list, size_t i);

/** Free a list; NULL is a no-op. */
void tau_ws_namespace_allowlist_free(tau_ws_allowlist *list);

/* ------------------------------------------------------------------------------------------ */
/* Resolution                                                                                  */

/** One entry of TauCluster spec.workspaces.namespaceMap.  Strings are borrowed. */
typedef struct tau_ws_ns_map_entry {
	const char *workspace;
	const char *namespace_name;
} tau_ws_ns_map_entry;

/**
 * Another existing TauWorkspace (deleting ones included: they hold their
 * namespace until drained).  Strings are borrowed.
 */
typedef struct tau_ws_claim {
	const char *workspace;      /**< its metadata.name */
	const char *namespace_name; /**< its candidate (tau_ws_namespace_candidate); NULL if none */
	const char *creation_timestamp; /**< RFC 3339; NULL sorts as newest */
	bool established;               /**< its status.target.resolvedNamespace names it */
} tau_ws_claim;

/** What the namespace informer shows for the candidate namespace.  Strings borrowed. */
typedef struct tau_ws_ns_observed {
	bool exists;
	bool terminating;       /**< metadata.deletionTimestamp set */
	const char *managed_by; /**< TAU_WS_LABEL_MANAGED_BY value, NULL if absent */
	const char *workspace;  /**< TAU_WS_LABEL_WORKSPACE value, NULL if absent */
} tau_ws_ns_observed;

/** Everything resolution looks at.  All pointers are borrowed. */
typedef struct tau_ws_ns_input {
	const char *workspace;          /**< metadata.name of this TauWorkspace */
	const char *creation_timestamp; /**< its metadata.creationTimestamp (RFC 3339) */
	bool established; /**< its status.target.resolvedNamespace equals the candidate */
	const char *target_namespace; /**< spec.target.namespace; NULL or "" means the default */
	bool create_namespace;        /**< spec.target.createNamespace */
	bool adopt;                   /**< spec.target.adopt */
	const char *system_namespace; /**< the TauGrid system namespace (tau-system) */
	tau_ws_ns_mode mode;
	const tau_ws_allowlist *allowlist; /**< Operator mode; NULL is an empty list */
	bool map_set; /**< spec.workspaces.namespaceMap is configured (even if empty) */
	const tau_ws_ns_map_entry *map;
	size_t n_map;
	bool allow_shared; /**< spec.workspaces.allowSharedNamespaces */
	/** The candidate namespace as observed; NULL means it does not exist. */
	const tau_ws_ns_observed *observed;
	const tau_ws_claim *claims; /**< every OTHER existing TauWorkspace */
	size_t n_claims;
} tau_ws_ns_input;

/** The decision. */
typedef struct tau_ws_ns_result {
	/** The resolved namespace; when refused, the candidate if one was found, else "". */
	char namespace_name[TAU_WS_NAMESPACE_BUF];
	bool resolved;
	/** Managed mode: the namespace is absent and must be created with ownership labels. */
	bool create;
	/** Managed mode: the namespace exists unlabelled and spec.target.adopt allows taking
	 *  ownership: the loop adds the ownership labels. */
	bool adopt;
	/** Managed mode: the ownership labels name (or will name) this workspace, so taugrid
	 *  may later strip or delete the namespace.  Never true in Operator mode. */
	bool owned;
	/** Another existing workspace resolves to the same namespace (sharing allowed). */
	bool shared;
	tau_ws_refusal refusal; /**< refusal.reason is NULL when resolved */
} tau_ws_ns_result;

/**
 * The candidate namespace from the spec and the map alone (no observed
 * state): the map's value when a map is set, else spec.target.namespace,
 * else the workspace name; then DNS-1123 label and reserved-name checks.
 * Use it to build the claims of other workspaces, so that every path
 * computes namespaces the same way.
 *
 * @param out  receives the name, lent from `in` (a map value, the target or
 *             the workspace name); untouched on refusal.
 * @param why  filled with the refusal (reason and message) when there is no
 *             valid candidate; reason NULL otherwise.
 * @param in   only workspace, target_namespace, system_namespace, map_set,
 *             map and n_map are read.
 * @return 0, or -TAU_EINVAL when refused (the thread error holds the message too).
 */
int tau_ws_namespace_candidate(const char **out, tau_ws_refusal *why, const tau_ws_ns_input *in);

/**
 * Decide the namespace for everything the workspace owns (RBAC, LocalQueue,
 * ServiceAccount, routing metadata).  Checks, in order: workspace name,
 * explicit map, namespace name, reserved names (system namespace, kube-*,
 * default), Operator allowlist, claims of other workspaces (sharing), the
 * observed namespace's ownership labels, terminating, existence.
 *
 * @param out  receives the decision (always written).
 * @param in   the inputs; in->workspace and in->system_namespace non-NULL.
 * @return 0 (a refusal is a result: out->resolved false), or -TAU_EINVAL
 *         when in, workspace or system_namespace is NULL.
 */
int tau_ws_namespace_resolve(tau_ws_ns_result *out, const tau_ws_ns_input *in);

/**
 * Read a Namespace object's existence, deletion and ownership labels.
 * Strings are lent from `ns` (valid while it lives).  ns NULL (or JSON
 * null) means the namespace does not exist.
 *
 * @return 0; -TAU_ETYPE when metadata or a label has the wrong JSON type.
 */
int tau_ws_namespace_observe(tau_ws_ns_observed *out, const cJSON *ns);

/**
 * Order two objects by age: negative when (ts_a, name_a) is older than
 * (ts_b, name_b).  Timestamps are RFC 3339 (Kubernetes writes
 * "2024-05-01T10:00:00Z"; offsets and fractions are accepted); a missing or
 * unparseable one sorts after every valid one.  Ties go by name (strcmp).
 */
int tau_ws_namespace_compare_age(const char *ts_a, const char *name_a, const char *ts_b,
                                 const char *name_b);

/**
 * An RFC 3339 time (fraction and offset accepted) as milliseconds since the
 * epoch.  @return 0, or -TAU_EINVAL (NULL or not RFC 3339; *out untouched).
 */
int tau_ws_namespace_time_ms(int64_t *out, const char *rfc3339);

#endif /* TAU_AGGREGATOR_WORKSPACE_NAMESPACE_H */
