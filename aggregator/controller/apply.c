/*
 * apply.c - ensure, merge, delete and prune of owned objects.
 *
 * The one idea: never write what we did not read and check.  Every write is
 * preceded by a live GET (not the informer cache: the cache may lag our own
 * previous write), an ownership check on what came back, and a comparison on
 * the fields we own; updates carry the resourceVersion read (a 409 means
 * someone wrote in between: read again), deletes a UID precondition (a 409
 * means the object was replaced: it is not the one we checked).
 */
#define _POSIX_C_SOURCE 200809L
#include "apply.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPDATE_TRIES 3

/* metadata.<section>[key] as a string; keys hold dots, so no path lookup. */
static const char *meta_str(const cJSON *obj, const char *section, const char *key)
{
	const cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(md, section);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void quoted(char *buf, size_t len, const char *v)
{
	if (v == NULL)
		snprintf(buf, len, "absent");
	else
		snprintf(buf, len, "\"%.200s\"", v);
}

/* The API's message for the last failure on this thread, else the libtau error. */
static const char *last_error_text(void)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (e->http_code != 0 && e->message[0] != '\0')
		return e->message;
	return tau_error_last()->msg;
}

const char *tau_apply_outcome_name(tau_apply_outcome o)
{
	static const char *const names[] = {
	        [TAU_APPLY_UNCHANGED] = "unchanged", [TAU_APPLY_CREATED] = "created",
	        [TAU_APPLY_UPDATED] = "updated",     [TAU_APPLY_REPLACED] = "replaced",
	        [TAU_APPLY_NOT_OWNED] = "not-owned", [TAU_APPLY_DELETED] = "deleted",
	        [TAU_APPLY_DELETING] = "deleting",   [TAU_APPLY_ABSENT] = "absent",
	};

	return tau_str_enum_name(names, TAU_N_ELEMENTS(names), (int)o, "unknown");
}

/* ------------------------------------------------------------------------------------------ */
/* Ownership                                                                                   */

bool tau_apply_has_finalizer(const cJSON *obj, const char *finalizer)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, tau_json_find(obj, "metadata.finalizers"))
	{
		if (cJSON_IsString(f) && strcmp(f->valuestring, finalizer) == 0)
			return true;
	}
	return false;
}

bool tau_apply_owned(const cJSON *obs, const tau_apply_owner *owner, const char *uid, char *why,
                     size_t why_len)
{
	const char *mb = meta_str(obs, "labels", owner->managed_by_label);
	char d[210];

	tau_str_printf(why, why_len, "%s", "");
	if (!tau_str_eq_or_both_null(mb, owner->managed_by)) {
		quoted(d, sizeof(d), mb);
		tau_str_printf(why, why_len, "label %s is %s, not \"%s\"", owner->managed_by_label,
		               d, owner->managed_by);
		return false;
	}
	if (owner->owner_label != NULL) {
		const char *o = meta_str(obs, "labels", owner->owner_label);

		if (owner->owner == NULL || !tau_str_eq_or_both_null(o, owner->owner)) {
			quoted(d, sizeof(d), o);
			tau_str_printf(why, why_len, "label %s is %s, not \"%s\"",
			               owner->owner_label, d,
			               owner->owner != NULL ? owner->owner : "");
			return false;
		}
	}
	if (uid != NULL && owner->uid_annotation != NULL) {
		const char *u = meta_str(obs, "annotations", owner->uid_annotation);

		if (!tau_str_eq_or_both_null(u, uid)) {
			quoted(d, sizeof(d), u);
			tau_str_printf(why, why_len, "annotation %s is %s, not \"%s\"",
			               owner->uid_annotation, d, uid);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------------------------------------ */
/* Comparison and merge                                                                        */

static bool top_level_skipped(const char *key)
{
	return strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
	       strcmp(key, "metadata") == 0 || strcmp(key, "status") == 0;
}

/* Every key of desired.metadata.<section> has the same string value in observed. */
static bool section_differs(const cJSON *desired, const cJSON *observed, const char *section,
                            char *what, size_t what_len)
{
	const cJSON *want = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(desired, "metadata"), section);
	const cJSON *it;

	cJSON_ArrayForEach(it, want)
	{
		const char *have = meta_str(observed, section, it->string);
		char d[210];

		if (!cJSON_IsString(it) || tau_str_eq_or_both_null(have, it->valuestring))
			continue;
		quoted(d, sizeof(d), have);
		tau_str_printf(what, what_len, "metadata.%s[\"%s\"] is %s, want \"%.200s\"",
		               section, it->string, d, it->valuestring);
		return true;
	}
	return false;
}

static void value_text(char *buf, size_t len, const cJSON *v)
{
	char *s = v != NULL ? cJSON_PrintUnformatted(v) : NULL;

	snprintf(buf, len, "%.200s", s != NULL ? s : "absent");
	free(s);
}

static bool field_differs(const char *path, const cJSON *want, const cJSON *have, char *what,
                          size_t what_len)
{
	char w[210], h[210];

	if (have != NULL && cJSON_Compare(want, have, true))
		return false;
	value_text(w, sizeof(w), want);
	value_text(h, sizeof(h), have);
	tau_str_printf(what, what_len, "%s is %s, want %s", path, h, w);
	return true;
}

int tau_apply_diff_default(bool *differs, char *what, size_t what_len, const cJSON *desired,
                           const cJSON *observed)
{
	const cJSON *it;

	if (differs == NULL || desired == NULL || observed == NULL)
		return tau_error_set(TAU_EINVAL, "apply: comparison without objects");
	tau_str_printf(what, what_len, "%s", "");
	*differs = section_differs(desired, observed, "labels", what, what_len) ||
	           section_differs(desired, observed, "annotations", what, what_len);
	cJSON_ArrayForEach(it, desired)
	{
		const cJSON *have = cJSON_GetObjectItemCaseSensitive(observed, it->string);

		if (*differs)
			break;
		if (top_level_skipped(it->string))
			continue;
		if (strcmp(it->string, "spec") == 0 && cJSON_IsObject(it)) {
			const cJSON *f;

			cJSON_ArrayForEach(f, it)
			{
				char path[128];

				snprintf(path, sizeof(path), "spec.%.100s", f->string);
				if (field_differs(path, f,
				                  cJSON_GetObjectItemCaseSensitive(have, f->string),
				                  what, what_len)) {
					*differs = true;
					break;
				}
			}
			continue;
		}
		*differs = field_differs(it->string, it, have, what, what_len);
	}
	return 0;
}

/* Replace obj[key] with a copy of `v`.  @return 0 or -TAU_ENOMEM. */
static int put_copy(cJSON *obj, const char *key, const cJSON *v)
{
	cJSON *dup = cJSON_Duplicate(v, true);

	if (dup == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	if (!cJSON_AddItemToObject(obj, key, dup)) {
		cJSON_Delete(dup);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	return 0;
}

cJSON *tau_apply_object_member(cJSON *obj, const char *key)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsObject(m))
		return m;
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	return cJSON_AddObjectToObject(obj, key);
}

int tau_apply_merge_owned(cJSON *obs, const cJSON *desired, const tau_apply_kind *kind)
{
	static const char *const sections[] = {"labels", "annotations"};
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obs, "metadata");
	const cJSON *dmd = cJSON_GetObjectItemCaseSensitive(desired, "metadata");
	const cJSON *it;
	int rc;

	if (!cJSON_IsObject(md) || !cJSON_IsObject(dmd))
		return tau_error_set(TAU_EINVAL, "apply: object without metadata");
	for (size_t s = 0; s < 2; s++) {
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(dmd, sections[s]);
		cJSON *have;

		if (want == NULL && s == 0)
			continue;
		if ((have = tau_apply_object_member(md, sections[s])) == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		cJSON_ArrayForEach(it, want)
		{
			if ((rc = put_copy(have, it->string, it)) != 0)
				return rc;
		}
		for (size_t i = 0; s == 1 && kind != NULL && i < kind->n_owned_annotations; i++)
			if (cJSON_GetObjectItemCaseSensitive(want, kind->owned_annotations[i]) ==
			    NULL)
				cJSON_DeleteItemFromObjectCaseSensitive(have,
				                                        kind->owned_annotations[i]);
	}
	cJSON_ArrayForEach(it, desired)
	{
		if (top_level_skipped(it->string))
			continue;
		if (strcmp(it->string, "spec") == 0 && cJSON_IsObject(it)) {
			cJSON *have = tau_apply_object_member(obs, "spec");
			const cJSON *f;

			if (have == NULL)
				return tau_error_set(TAU_ENOMEM, "out of memory");
			cJSON_ArrayForEach(f, it)
			{
				if ((rc = put_copy(have, f->string, f)) != 0)
					return rc;
			}
			continue;
		}
		if ((rc = put_copy(obs, it->string, it)) != 0)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Ensure                                                                                      */

static int diff_of(const tau_apply_kind *kind, bool *differs, char *what, size_t len,
                   const cJSON *desired, const cJSON *obs)
{
	tau_apply_diff_fn fn = kind->diff != NULL ? kind->diff : tau_apply_diff_default;

	return fn(differs, what, len, desired, obs);
}

/* Create `desired`; *exists set on 409 AlreadyExists. */
static int create(tau_apply_result *out, tau_kube_client *c, const tau_apply_kind *kind,
                  const char *ns, const cJSON *desired, bool *exists)
{
	cJSON *created = NULL;
	int rc = tau_kube_create(&created, c, kind->res, ns, desired);

	cJSON_Delete(created);
	*exists = rc == -TAU_ECONFLICT;
	if (rc != 0 && !*exists)
		tau_str_printf(out->detail, sizeof(out->detail), "create failed: %s",
		               last_error_text());
	return rc;
}

/* Delete what we read (UID precondition) and create the desired object. */
static int replace(tau_apply_result *out, tau_kube_client *c, const tau_apply_kind *kind,
                   const char *ns, const char *name, const cJSON *obs, const cJSON *desired)
{
	tau_kube_delete_options d = {.uid = tau_json_str(obs, "metadata.uid"),
	                             .grace_period_seconds = -1};
	bool exists;
	int rc = tau_kube_delete(NULL, c, kind->res, ns, name, &d);

	if (rc != 0 && rc != -TAU_ENOTFOUND) {
		char diff[TAU_APPLY_DETAIL_MAX];

		memcpy(diff, out->detail, sizeof(diff));
		tau_str_printf(out->detail, sizeof(out->detail),
		               "%.300s (replace: delete failed: %s)", diff, last_error_text());
		return rc;
	}
	/* With finalizers the old object lingers: the create answers 409 until it is gone. */
	return create(out, c, kind, ns, desired, &exists);
}

int tau_apply_ensure(tau_apply_result *out, tau_kube_client *c, const tau_apply_kind *kind,
                     const cJSON *desired, const tau_apply_owner *owner)
{
	const char *ns = kind->res->namespaced ? tau_json_str(desired, "metadata.namespace") : NULL;
	const char *name = tau_json_str(desired, "metadata.name");
	char what[TAU_APPLY_DETAIL_MAX] = "";
	cJSON *obs = NULL;
	bool exists = false, differs = false;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (name == NULL)
		return tau_error_set(TAU_EINVAL, "apply: desired %s has no metadata.name",
		                     kind->res->plural);
	for (int attempt = 0; attempt < UPDATE_TRIES; attempt++) {
		cJSON *upd = NULL, *written = NULL;

		cJSON_Delete(obs);
		obs = NULL;
		rc = tau_kube_get(&obs, c, kind->res, ns, name);
		if (rc == -TAU_ENOTFOUND) {
			rc = create(out, c, kind, ns, desired, &exists);
			if (rc == 0) {
				out->outcome = TAU_APPLY_CREATED;
				goto out;
			}
			if (exists)
				continue; /* created meanwhile: read it and compare */
			goto out;
		}
		if (rc != 0) {
			tau_str_printf(out->detail, sizeof(out->detail), "read failed: %s",
			               last_error_text());
			goto out;
		}
		if (!tau_apply_owned(obs, owner, owner->check_uid_on_update ? owner->uid : NULL,
		                     out->detail, sizeof(out->detail))) {
			out->outcome = TAU_APPLY_NOT_OWNED;
			goto out;
		}
		if ((rc = diff_of(kind, &differs, what, sizeof(what), desired, obs)) != 0)
			goto out;
		if (!differs) {
			out->outcome = TAU_APPLY_UNCHANGED;
			goto out;
		}
		snprintf(out->detail, sizeof(out->detail), "%s", what);
		if (kind->must_replace != NULL && kind->must_replace(desired, obs, what)) {
			rc = replace(out, c, kind, ns, name, obs, desired);
			if (rc == 0)
				out->outcome = TAU_APPLY_REPLACED;
			goto out;
		}
		upd = cJSON_Duplicate(obs, true);
		rc = upd != NULL ? tau_apply_merge_owned(upd, desired, kind)
		                 : tau_error_set(TAU_ENOMEM, "out of memory");
		if (rc == 0)
			rc = tau_kube_update(&written, c, kind->res, ns, upd);
		cJSON_Delete(upd);
		cJSON_Delete(written);
		if (rc == 0) {
			out->outcome = TAU_APPLY_UPDATED;
			goto out;
		}
		if (rc != -TAU_ECONFLICT)
			break;
		/* Someone wrote between our read and our update: read again. */
	}
	if (rc != 0)
		tau_str_printf(out->detail, sizeof(out->detail), "%.300s (update failed: %s)", what,
		               last_error_text());
out:
	cJSON_Delete(obs);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Delete and prune                                                                            */

int tau_apply_delete_owned(tau_apply_result *out, tau_kube_client *c, const tau_kube_resource *res,
                           const char *ns, const char *name, const tau_apply_owner *owner)
{
	tau_kube_delete_options d = {.grace_period_seconds = -1,
	                             .propagation_policy = "Background"};
	cJSON *obs = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = tau_kube_get(&obs, c, res, res->namespaced ? ns : NULL, name);
	if (rc == -TAU_ENOTFOUND) {
		out->outcome = TAU_APPLY_ABSENT;
		return 0;
	}
	if (rc != 0) {
		tau_str_printf(out->detail, sizeof(out->detail), "read failed: %s",
		               last_error_text());
		return rc;
	}
	if (!tau_apply_owned(obs, owner, owner->uid, out->detail, sizeof(out->detail))) {
		out->outcome = TAU_APPLY_NOT_OWNED;
		rc = tau_error_set(TAU_EPERM, "%s %s%s%s is not owned: %s", res->plural,
		                   ns != NULL ? ns : "", ns != NULL ? "/" : "", name, out->detail);
		goto out;
	}
	if (tau_json_str(obs, "metadata.deletionTimestamp") != NULL) {
		out->outcome = TAU_APPLY_DELETING;
		goto out;
	}
	d.uid = tau_json_str(obs, "metadata.uid");
	rc = tau_kube_delete(NULL, c, res, res->namespaced ? ns : NULL, name, &d);
	if (rc == 0) {
		out->outcome = TAU_APPLY_DELETED;
	} else if (rc == -TAU_ENOTFOUND) {
		out->outcome = TAU_APPLY_ABSENT;
		rc = 0;
	} else {
		tau_str_printf(out->detail, sizeof(out->detail), "delete failed: %s",
		               last_error_text());
	}
out:
	cJSON_Delete(obs);
	return rc;
}

static bool kept(const char *name, const char *const *keep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (keep[i] != NULL && strcmp(keep[i], name) == 0)
			return true;
	return false;
}

int tau_apply_prune(size_t *deleted, tau_kube_client *c, const tau_kube_resource *res,
                    const char *ns, const tau_apply_owner *owner, const char *const *keep,
                    size_t n_keep, tau_apply_prune_fn report, void *arg)
{
	tau_kube_list_options lo = {0};
	char sel[768];
	cJSON *list = NULL;
	const cJSON *it;
	size_t n = 0;
	int rc, first = 0, w;

	w = owner->owner_label != NULL
	            ? snprintf(sel, sizeof(sel), "%s=%s,%s=%s", owner->managed_by_label,
	                       owner->managed_by, owner->owner_label,
	                       owner->owner != NULL ? owner->owner : "")
	            : snprintf(sel, sizeof(sel), "%s=%s", owner->managed_by_label,
	                       owner->managed_by);
	if (w < 0 || (size_t)w >= sizeof(sel))
		return tau_error_set(TAU_ERANGE, "apply: ownership selector too long");
	lo.label_selector = sel;
	if ((rc = tau_kube_list_all(&list, c, res, res->namespaced ? ns : NULL, &lo)) != 0)
		return tau_error_wrap("listing owned %s", res->plural);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items"))
	{
		const char *name = tau_json_str(it, "metadata.name");
		const char *ons = tau_json_str(it, "metadata.namespace");
		tau_apply_result r;

		if (name == NULL || kept(name, keep, n_keep))
			continue;
		rc = tau_apply_delete_owned(&r, c, res, ons, name, owner);
		if (rc == 0 && r.outcome == TAU_APPLY_DELETED)
			n++;
		if (report != NULL)
			report(arg, ons, name, &r, rc);
		if (rc != 0 && rc != -TAU_EPERM && first == 0)
			first = rc;
	}
	cJSON_Delete(list);
	if (deleted != NULL)
		*deleted = n;
	return first;
}
