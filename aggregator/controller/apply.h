/*
 * controller/apply.h - write the objects a controller owns, and only those.
 *
 * Ownership is two labels and an annotation on every object a controller
 * writes: a managed-by label with the controller's value, an owner label
 * naming the owner (e.g. the workspace), and an owner-UID annotation so an
 * object left by a deleted owner of the same name is not taken for ours.
 *
 *  - tau_apply_ensure makes a desired object exist: create when absent;
 *    otherwise, when it is ours and differs on the fields we own, merge those
 *    fields into what is observed and update (re-reading and retrying on 409),
 *    or, when the difference is in an immutable field, delete (UID
 *    precondition) and create.  Nothing is written when nothing differs.
 *  - tau_apply_delete_owned deletes an object only after checking ownership,
 *    with a UID precondition, so an object replaced meanwhile is left alone.
 *  - tau_apply_prune deletes every owned object of a kind that the desired
 *    state no longer names (level-triggered cleanup).
 *
 * These block on the API (worker thread).  They do not log: the result says
 * what happened and the caller logs once with its own context.
 */
#ifndef TAU_AGGREGATOR_CONTROLLER_APPLY_H
#define TAU_AGGREGATOR_CONTROLLER_APPLY_H

#include "tau/kube.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Longest detail text of a result. */
#define TAU_APPLY_DETAIL_MAX 512

/** Who owns an object.  Strings borrowed. */
typedef struct tau_apply_owner {
	const char *managed_by_label; /**< e.g. "app.kubernetes.io/managed-by" (required) */
	const char *managed_by;       /**< e.g. "taugrid" (required) */
	const char *owner_label;      /**< e.g. "tau.azure.com/workspace"; NULL = managed-by only */
	const char *owner;            /**< the owner label's value */
	const char *uid_annotation;   /**< e.g. "tau.azure.com/workspace-uid"; NULL = none */
	/** The owner's UID.  Checked by deletes (always, when set); updates check it only
	 *  with check_uid_on_update, since an object labelled for a re-created owner of
	 *  the same name is taken over and its annotation corrected. */
	const char *uid;
	bool check_uid_on_update;
} tau_apply_owner;

/**
 * Compare owned fields: set *differs and describe the first difference in
 * `what` ("spec.clusterQueue is \"a\", want \"b\"").  @return 0 or < 0.
 */
typedef int (*tau_apply_diff_fn)(bool *differs, char *what, size_t what_len, const cJSON *desired,
                                 const cJSON *observed);

/** How one kind is compared and written. */
typedef struct tau_apply_kind {
	const tau_kube_resource *res; /**< required */
	/** NULL = tau_apply_diff_default. */
	tau_apply_diff_fn diff;
	/** Optional: true when the difference cannot be updated in place (an immutable
	 *  field such as a RoleBinding's roleRef): the object is replaced. */
	bool (*must_replace)(const cJSON *desired, const cJSON *observed, const char *what);
	/** Annotation keys we own that are removed when the desired object lacks them. */
	const char *const *owned_annotations;
	size_t n_owned_annotations;
} tau_apply_kind;

typedef enum tau_apply_outcome {
	TAU_APPLY_UNCHANGED = 0, /**< exists, ours, nothing differs */
	TAU_APPLY_CREATED,       /**< was absent, created */
	TAU_APPLY_UPDATED,       /**< owned fields corrected in place */
	TAU_APPLY_REPLACED,      /**< deleted (UID precondition) and created */
	TAU_APPLY_NOT_OWNED,     /**< exists but not ours: left alone (detail says why) */
	TAU_APPLY_DELETED,       /**< delete sent */
	TAU_APPLY_DELETING,      /**< already being deleted (finalizers pending) */
	TAU_APPLY_ABSENT         /**< nothing to delete */
} tau_apply_outcome;

/** What a call did. */
typedef struct tau_apply_result {
	tau_apply_outcome outcome;
	/** UPDATED/REPLACED: the difference corrected; NOT_OWNED: why; on failure:
	 *  "create failed: <API message>" and the like. */
	char detail[TAU_APPLY_DETAIL_MAX];
} tau_apply_result;

/**
 * May we touch `obs`?  True when managed-by and the owner label match and,
 * when `uid` is given, the owner-UID annotation equals it.
 * @param why  receives the cause when not ("label tau.azure.com/workspace is
 *             \"beta\", not \"alpha\""), "" when owned; may be NULL.
 */
bool tau_apply_owned(const cJSON *obs, const tau_apply_owner *owner, const char *uid, char *why,
                     size_t why_len);

/** Does obj's metadata.finalizers list `finalizer`? */
bool tau_apply_has_finalizer(const cJSON *obj, const char *finalizer);

/**
 * The default comparison: every label and annotation of `desired` must have
 * the same value in `observed` (other keys ignored), and every top-level
 * field other than apiVersion, kind, metadata and status must be equal:
 * `spec` key by key (fields the server defaults are ignored), the rest whole.
 */
int tau_apply_diff_default(bool *differs, char *what, size_t what_len, const cJSON *desired,
                           const cJSON *observed);

/**
 * Copy what we own from `desired` onto `obs` in place: labels and annotations
 * key by key, owned annotations absent from desired removed, `spec` key by
 * key, other top-level fields (not apiVersion/kind/metadata/status) whole.
 * @return 0, -TAU_EINVAL (no metadata), -TAU_ENOMEM.
 */
int tau_apply_merge_owned(cJSON *obs, const cJSON *desired, const tau_apply_kind *kind);

/**
 * obj[key] as an object, for building a write body: the member when it is one, else a new {}
 * in its place (absent or of another type).  NULL when out of memory.
 */
cJSON *tau_apply_object_member(cJSON *obj, const char *key);

/**
 * Make `desired` exist as desired (see the file comment).  Namespace and name
 * come from desired.metadata.  A 409 on update re-reads and retries (3 tries).
 * @return 0 with out->outcome (NOT_OWNED is a success: nothing written);
 *         the API error code otherwise, with out->detail naming the step.
 */
int tau_apply_ensure(tau_apply_result *out, tau_kube_client *c, const tau_apply_kind *kind,
                     const cJSON *desired, const tau_apply_owner *owner);

/**
 * Delete `name` when it is ours (owner->uid, when set, must match the
 * annotation), with a UID precondition and background propagation.
 * @return 0 (DELETED, DELETING or ABSENT), -TAU_EPERM (not ours: out->detail
 *         says why; left alone), -TAU_ECONFLICT (replaced meanwhile), or the
 *         API error.
 */
int tau_apply_delete_owned(tau_apply_result *out, tau_kube_client *c, const tau_kube_resource *res,
                           const char *ns, const char *name, const tau_apply_owner *owner);

/** Called by tau_apply_prune for each object it acted on (or left alone). */
typedef void (*tau_apply_prune_fn)(void *arg, const char *ns, const char *name,
                                   const tau_apply_result *r, int rc);

/**
 * Delete every object of `res` in `ns` (NULL = all namespaces / cluster
 * scope) labelled as owned by `owner` whose name is not in `keep`.  Each
 * goes through tau_apply_delete_owned; `report` (may be NULL) hears of each.
 * @param deleted  receives how many deletes were sent; may be NULL.
 * @return 0 when every unwanted object is gone or going (objects not ours
 *         are reported and skipped), else the first error.
 */
int tau_apply_prune(size_t *deleted, tau_kube_client *c, const tau_kube_resource *res,
                    const char *ns, const tau_apply_owner *owner, const char *const *keep,
                    size_t n_keep, tau_apply_prune_fn report, void *arg);

/** The outcome's name ("created", "not-owned", ...). */
const char *tau_apply_outcome_name(tau_apply_outcome o);

#endif /* TAU_AGGREGATOR_CONTROLLER_APPLY_H */
