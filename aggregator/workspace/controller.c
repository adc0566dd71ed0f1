/*
 * wscontroller.c - the TauWorkspace reconcile loop.
 *
 * The one idea: every pass recomputes the whole answer from what is
 * observed now.  Informer events only say "look at workspace X again"; the
 * worker then reads the workspace live (so its own writes are never read
 * back stale), takes the TauCluster, Namespace and ClusterQueue views from
 * the informer caches, reads each owned object live, and hands all of it to
 * the pure modules: wsnamespace decides the namespace, wsdesired the
 * objects and drift, wsdrain the order of cleanup, wsstatus the status.
 * Writes happen only where the desired object differs, /status is written
 * only when tau_ws_status_changed says so, and each write is logged once
 * with the object and the reason.
 *
 * Memory of the namespace a workspace used lives in the API, not here:
 * status.target.resolvedNamespace names it.  When the resolution moves
 * elsewhere (retarget) or the workspace is deleted, that namespace is the
 * "old" one and wsdrain's plan runs against it; while the plan waits the
 * status keeps naming the old namespace, so a restart resumes the drain.
 *
 * Threads: the caller's kube loop runs the informers and their handlers
 * (which only queue keys); one worker thread reconciles; an optional
 * watcher thread follows the allowlist file with inotify on its folder (a
 * ConfigMap update swaps a symlink there).  The allowlist is the only state
 * shared between them and is guarded by a mutex.
 */
#include "controller.h"

#include "desired.h"
#include "drain.h"
#include "status.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/selector.h"
#include "tau/workqueue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------------------ */
/* Resources                                                                                   */

static const tau_kube_resource res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
static const tau_kube_resource res_clusters = {"tau.azure.com", "v1alpha1", "clusters", false};
static const tau_kube_resource res_rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                   "rolebindings", true};
static const tau_kube_resource res_serviceaccounts = {"", "v1", "serviceaccounts", true};
static const tau_kube_resource res_localqueues = {"kueue.x-k8s.io", "v1beta2", "localqueues", true};
static const tau_kube_resource res_clusterqueues = {"kueue.x-k8s.io", "v1beta2", "clusterqueues",
                                                    false};
/* Sources that hold a route during a drain, indexed by tau_ws_source_kind. */
static const tau_kube_resource res_sources[TAU_WS_SRC_KINDS] = {
        [TAU_WS_SRC_WORKLOAD] = {"kueue.x-k8s.io", "v1beta2", "workloads", true},
        [TAU_WS_SRC_JOB] = {"batch", "v1", "jobs", true},
        [TAU_WS_SRC_RAYJOB] = {"ray.io", "v1", "rayjobs", true},
        [TAU_WS_SRC_RAYSERVICE] = {"ray.io", "v1", "rayservices", true},
        [TAU_WS_SRC_DEPLOYMENT] = {"apps", "v1", "deployments", true},
};

#define OWNED_SELECTOR TAU_WS_LABEL_MANAGED_BY "=" TAU_WS_MANAGED_BY
#define MAP_FILE_MAX   (1024u * 1024u)

enum { INF_WORKSPACES = 0, INF_CLUSTER, INF_NAMESPACES, INF_CQ, INF_RB, INF_LQ, INF_SA, INF_N };

struct tau_ws_controller {
	tau_kube_client *client;
	tau_kube_loop *loop;
	char *system_namespace;
	bool ns_mode_set;
	bool multiple_workspaces; /* feature gate: lifts the v0 block */
	tau_ws_ns_mode ns_mode;
	char *allowlist_file;
	tau_selector *allowlist_selector; /* from the flag */
	cJSON *map;                       /* from the map file; NULL when none */
	char *researcher_role;
	uint64_t resync_ms, drain_poll_ms;

	tau_kube_informer *inf[INF_N];
	tau_workqueue *queue;

	pthread_mutex_t lock; /* guards file_allowlist */
	tau_ws_allowlist *file_allowlist;

	pthread_t worker, watcher;
	bool worker_running, watcher_running;
	int stop_fd; /* eventfd waking the watcher */
	atomic_bool stopping;
	atomic_uint_fast64_t passes;
};

/* ------------------------------------------------------------------------------------------ */
/* Small helpers                                                                               */

static const char *jstr(const cJSON *obj, const char *path)
{
	const char *s = NULL;

	if (obj == NULL || tau_json_get_string(&s, obj, path) != 0)
		return NULL;
	return s;
}

static char *xstrdup(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

static void now_rfc3339(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The message of the last API error or libtau error on this thread. */
/* Equal strings, NULL equal only to NULL. */
static bool same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static const char *last_error_text(void)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (e->http_code != 0 && e->message[0] != '\0')
		return e->message;
	return tau_error_last()->msg;
}

static void enqueue(tau_ws_controller *ctl, const char *name)
{
	if (name != NULL && name[0] != '\0')
		tau_workqueue_add(ctl->queue, name);
}

static void enqueue_all(tau_ws_controller *ctl)
{
	cJSON *all = NULL, *it;

	if (tau_kube_informer_snapshot(&all, ctl->inf[INF_WORKSPACES]) != 0)
		return;
	cJSON_ArrayForEach(it, all) enqueue(ctl, jstr(it, "metadata.name"));
	cJSON_Delete(all);
}

/* ------------------------------------------------------------------------------------------ */
/* Event handlers (kube loop thread): only queue keys                                          */

static void ws_add(void *arg, const cJSON *obj)
{
	enqueue(arg, jstr(obj, "metadata.name"));
}
static void ws_update(void *arg, const cJSON *o, const cJSON *n)
{
	(void)o;
	enqueue(arg, jstr(n, "metadata.name"));
}
static void ws_delete(void *arg, const cJSON *obj)
{
	(void)obj;
	/* v0 promotion and namespace claims depend on the set of workspaces. */
	enqueue_all(arg);
}
static void all_add(void *arg, const cJSON *obj)
{
	(void)obj;
	enqueue_all(arg);
}
static void all_update(void *arg, const cJSON *o, const cJSON *n)
{
	(void)o;
	(void)n;
	enqueue_all(arg);
}

/* tau_json_get_string splits paths on '.', so label keys with dots need a direct lookup. */
static const char *label_of(const cJSON *obj, const char *section, const char *key)
{
	const cJSON *md = obj != NULL ? cJSON_GetObjectItemCaseSensitive(obj, "metadata") : NULL;
	const cJSON *m = md != NULL ? cJSON_GetObjectItemCaseSensitive(md, section) : NULL;
	const cJSON *v = m != NULL ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void owned_add_fixed(void *arg, const cJSON *obj)
{
	enqueue(arg, label_of(obj, "labels", TAU_WS_LABEL_WORKSPACE));
}
static void owned_update_fixed(void *arg, const cJSON *o, const cJSON *n)
{
	enqueue(arg, label_of(o, "labels", TAU_WS_LABEL_WORKSPACE));
	enqueue(arg, label_of(n, "labels", TAU_WS_LABEL_WORKSPACE));
}

/* ------------------------------------------------------------------------------------------ */
/* Configuration of one pass: flags first, then the TauCluster                                 */

typedef struct ws_config {
	tau_ws_ns_mode mode;
	bool map_set;
	tau_ws_ns_map_entry *map;
	size_t n_map;
	bool allow_shared;
	const char *default_queue; /* lent from cluster */
	tau_ws_allowlist *allowlist;
	cJSON *cluster;    /* TauCluster copy, NULL if absent */
	cJSON *namespaces; /* snapshot, for the selector source */
} ws_config;

static void config_clear(ws_config *c)
{
	free(c->map);
	tau_ws_allowlist_free(c->allowlist);
	cJSON_Delete(c->cluster);
	cJSON_Delete(c->namespaces);
	memset(c, 0, sizeof(*c));
}

static int map_entries(ws_config *c, const cJSON *map)
{
	size_t n = (size_t)cJSON_GetArraySize(map), i = 0;
	const cJSON *it;

	c->map_set = true;
	if (n == 0)
		return 0;
	c->map = calloc(n, sizeof(*c->map));
	if (c->map == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, map)
	{
		if (!cJSON_IsString(it) || it->string == NULL)
			continue;
		c->map[i].workspace = it->string;
		c->map[i].namespace_name = it->valuestring;
		i++;
	}
	c->n_map = i;
	return 0;
}

static int selector_allowlist(ws_config *c, const tau_selector *sel)
{
	const char **names = NULL;
	size_t n = 0;
	const cJSON *it;
	int rc;

	names = calloc((size_t)cJSON_GetArraySize(c->namespaces) + 1, sizeof(*names));
	if (names == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, c->namespaces)
	{
		const cJSON *md = cJSON_GetObjectItemCaseSensitive(it, "metadata");
		const char *name = jstr(it, "metadata.name");

		if (name != NULL &&
		    tau_selector_matches(sel, cJSON_GetObjectItemCaseSensitive(md, "labels")))
			names[n++] = name;
	}
	rc = tau_ws_allowlist_from_names(&c->allowlist, names, n);
	free(names);
	return rc;
}

static int config_load(ws_config *c, tau_ws_controller *ctl)
{
	const cJSON *spec_ws = NULL, *map = NULL, *sel_json = NULL;
	const char *mode;
	tau_selector *sel = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	if (tau_kube_informer_get(&c->cluster, ctl->inf[INF_CLUSTER], NULL, "cluster") != 0)
		c->cluster = NULL;
	if (c->cluster != NULL)
		tau_json_get_object(&spec_ws, c->cluster, "spec.workspaces");
	mode = spec_ws != NULL ? jstr(spec_ws, "namespaceMode") : NULL;
	if (ctl->ns_mode_set)
		c->mode = ctl->ns_mode;
	else
		c->mode = mode != NULL && strcmp(mode, "Operator") == 0 ? TAU_WS_NS_OPERATOR
		                                                        : TAU_WS_NS_MANAGED;
	if (spec_ws != NULL) {
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(spec_ws, "allowSharedNamespaces");

		c->allow_shared = cJSON_IsTrue(b);
		map = cJSON_GetObjectItemCaseSensitive(spec_ws, "namespaceMap");
		sel_json = tau_json_find(spec_ws, "namespaceAllowlist.selector");
	}
	c->default_queue =
	        c->cluster != NULL ? jstr(c->cluster, "spec.workspaceDefaults.defaultQueue") : NULL;
	if (ctl->map != NULL)
		map = ctl->map;
	if (cJSON_IsObject(map) && (rc = map_entries(c, map)) != 0)
		return rc;

	if (c->mode != TAU_WS_NS_OPERATOR)
		return 0;
	if (ctl->allowlist_file != NULL) {
		tau_ws_allowlist *copy = NULL;
		const char **names;
		size_t n;

		pthread_mutex_lock(&ctl->lock);
		n = tau_ws_allowlist_count(ctl->file_allowlist);
		names = calloc(n + 1, sizeof(*names));
		if (names != NULL) {
			for (size_t i = 0; i < n; i++)
				names[i] = tau_ws_allowlist_name(ctl->file_allowlist, i);
			rc = tau_ws_allowlist_from_names(&copy, names, n);
		} else {
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
		}
		pthread_mutex_unlock(&ctl->lock);
		free(names);
		if (rc != 0)
			return rc;
		c->allowlist = copy;
		return 0;
	}
	if ((rc = tau_kube_informer_snapshot(&c->namespaces, ctl->inf[INF_NAMESPACES])) != 0)
		return rc;
	if (ctl->allowlist_selector != NULL)
		return selector_allowlist(c, ctl->allowlist_selector);
	if (sel_json != NULL) {
		if ((rc = tau_selector_from_json(&sel, sel_json)) != 0)
			return rc;
		rc = selector_allowlist(c, sel);
		tau_selector_free(sel);
		return rc;
	}
	return 0; /* Operator mode with no source: nothing is allowed (fail closed). */
}

/* ------------------------------------------------------------------------------------------ */
/* One reconcile pass                                                                          */

#define PASS_TEXTS 16

typedef struct ws_pass {
	tau_ws_controller *ctl;
	const char *name;
	cJSON *ws;           /* live copy of the workspace */
	tau_ws_spec spec;    /* lent from ws */
	const cJSON *status; /* ws.status */
	char texts[PASS_TEXTS][TAU_WS_MESSAGE_MAX];
	size_t n_texts;
	tau_ws_drift_item drift[8];
	size_t n_drift;
	uint64_t requeue_ms; /* > 0: come back sooner than the resync */
} ws_pass;

static char *pass_text(ws_pass *p)
{
	char *t = p->texts[p->n_texts < PASS_TEXTS ? p->n_texts : PASS_TEXTS - 1];

	if (p->n_texts < PASS_TEXTS)
		p->n_texts++;
	t[0] = '\0';
	return t;
}

static void requeue_soon(ws_pass *p, uint64_t ms)
{
	if (p->requeue_ms == 0 || ms < p->requeue_ms)
		p->requeue_ms = ms;
}

/* The previous status's condition `type`: its status string, or NULL. */
static const char *prev_condition(const ws_pass *p, const char *type)
{
	const cJSON *conds = p->status != NULL ? tau_json_find(p->status, "conditions") : NULL;
	const cJSON *c;

	cJSON_ArrayForEach(c, conds)
	{
		const char *t = jstr(c, "type");

		if (t != NULL && strcmp(t, type) == 0)
			return jstr(c, "status");
	}
	return NULL;
}

static void describe(char *buf, size_t len, const cJSON *obj)
{
	const char *kind = jstr(obj, "kind"), *ns = jstr(obj, "metadata.namespace");

	snprintf(buf, len, "%s %s%s%s", kind != NULL ? kind : "object", ns != NULL ? ns : "",
	         ns != NULL ? "/" : "", jstr(obj, "metadata.name"));
}

static void add_drift(ws_pass *p, const char *object, const char *what, bool corrected)
{
	char *o, *w;

	if (p->n_drift >= sizeof(p->drift) / sizeof(p->drift[0]))
		return;
	o = pass_text(p);
	w = pass_text(p);
	snprintf(o, TAU_WS_MESSAGE_MAX, "%s", object);
	snprintf(w, TAU_WS_MESSAGE_MAX, "%s", what);
	p->drift[p->n_drift++] = (tau_ws_drift_item){o, w, corrected};
}

/* Copy what we own from `desired` onto `obs` (labels, annotations, kind fields). */
static int merge_owned(cJSON *obs, const cJSON *desired)
{
	const char *kind = jstr(desired, "kind");
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obs, "metadata");
	const cJSON *dmd = cJSON_GetObjectItemCaseSensitive(desired, "metadata");
	static const char *const sections[] = {"labels", "annotations"};
	const cJSON *it;

	if (md == NULL || dmd == NULL)
		return tau_error_set(TAU_EINVAL, "object without metadata");
	for (size_t s = 0; s < 2; s++) {
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(dmd, sections[s]);
		cJSON *have = cJSON_GetObjectItemCaseSensitive(md, sections[s]);

		if (want == NULL)
			continue;
		if (!cJSON_IsObject(have)) {
			cJSON_DeleteItemFromObjectCaseSensitive(md, sections[s]);
			have = cJSON_AddObjectToObject(md, sections[s]);
			if (have == NULL)
				return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		cJSON_ArrayForEach(it, want)
		{
			cJSON *dup = cJSON_Duplicate(it, true);

			if (dup == NULL)
				return tau_error_set(TAU_ENOMEM, "out of memory");
			cJSON_DeleteItemFromObjectCaseSensitive(have, it->string);
			cJSON_AddItemToObject(have, it->string, dup);
		}
		if (s == 1 && kind != NULL && strcmp(kind, "ServiceAccount") == 0 &&
		    cJSON_GetObjectItemCaseSensitive(want, TAU_WS_ANNOTATION_WI_TENANT_ID) == NULL)
			cJSON_DeleteItemFromObjectCaseSensitive(have,
			                                        TAU_WS_ANNOTATION_WI_TENANT_ID);
	}
	cJSON_ArrayForEach(it, desired)
	{
		cJSON *dup;

		if (strcmp(it->string, "apiVersion") == 0 || strcmp(it->string, "kind") == 0 ||
		    strcmp(it->string, "metadata") == 0)
			continue;
		if (strcmp(it->string, "spec") == 0 && cJSON_IsObject(it)) {
			cJSON *have = cJSON_GetObjectItemCaseSensitive(obs, "spec");
			const cJSON *f;

			if (!cJSON_IsObject(have)) {
				cJSON_DeleteItemFromObjectCaseSensitive(obs, "spec");
				have = cJSON_AddObjectToObject(obs, "spec");
			}
			if (have == NULL)
				return tau_error_set(TAU_ENOMEM, "out of memory");
			cJSON_ArrayForEach(f, it)
			{
				if ((dup = cJSON_Duplicate(f, true)) == NULL)
					return tau_error_set(TAU_ENOMEM, "out of memory");
				cJSON_DeleteItemFromObjectCaseSensitive(have, f->string);
				cJSON_AddItemToObject(have, f->string, dup);
			}
			continue;
		}
		if ((dup = cJSON_Duplicate(it, true)) == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		cJSON_DeleteItemFromObjectCaseSensitive(obs, it->string);
		cJSON_AddItemToObject(obs, it->string, dup);
	}
	return 0;
}

/*
 * Make the object `desired` exist as desired.  `was_ready` says the
 * previous status found it in place: a create then restores a deletion
 * done out of band and is reported as drift.
 */
static void ensure(ws_pass *p, const tau_kube_resource *res, const cJSON *desired, bool was_ready,
                   tau_ws_obj_check *check)
{
	tau_ws_controller *ctl = p->ctl;
	const char *ns = res->namespaced ? jstr(desired, "metadata.namespace") : NULL;
	const char *name = jstr(desired, "metadata.name");
	char object[TAU_WS_MESSAGE_MAX / 2], *detail = pass_text(p);
	cJSON *obs = NULL, *created = NULL;
	bool drifted = false, is_rb;
	int rc;

	describe(object, sizeof(object), desired);
	is_rb = strcmp(res->plural, "rolebindings") == 0;
	rc = tau_kube_get(&obs, ctl->client, res, ns, name);
	if (rc == -TAU_ENOTFOUND) {
		rc = tau_kube_create(&created, ctl->client, res, ns, desired);
		cJSON_Delete(created);
		if (rc == 0) {
			tau_log_info(was_ready ? "workspace object restored"
			                       : "workspace object created",
			             "workspace", p->name, "object", object, "reason",
			             was_ready ? "deleted out of band" : "missing", NULL);
			if (was_ready)
				add_drift(p, object, "it was deleted", true);
			*check = (tau_ws_obj_check){TAU_WS_OBJ_OK, NULL};
			return;
		}
		if (rc != -TAU_ECONFLICT) { /* 409 on create is AlreadyExists: read it below */
			snprintf(detail, TAU_WS_MESSAGE_MAX, "create failed: %s",
			         last_error_text());
			tau_log_warn("workspace object create failed", "workspace", p->name,
			             "object", object, "error", detail, NULL);
			*check = (tau_ws_obj_check){
			        rc == -TAU_EPERM ? TAU_WS_OBJ_ERROR : TAU_WS_OBJ_MISSING, detail};
			if (rc == -TAU_EPERM)
				check->state = TAU_WS_OBJ_ERROR;
			requeue_soon(p, 5000);
			return;
		}
		rc = tau_kube_get(&obs, ctl->client, res, ns, name);
	}
	if (rc != 0) {
		snprintf(detail, TAU_WS_MESSAGE_MAX, "read failed: %s", last_error_text());
		*check = (tau_ws_obj_check){TAU_WS_OBJ_ERROR, detail};
		requeue_soon(p, 5000);
		return;
	}
	if (!tau_ws_owned(obs, p->name, NULL, detail, TAU_WS_MESSAGE_MAX)) {
		*check = (tau_ws_obj_check){TAU_WS_OBJ_NOT_OWNED, detail};
		goto out;
	}
	if (tau_ws_drifted(&drifted, detail, TAU_WS_MESSAGE_MAX, desired, obs) != 0 || !drifted) {
		*check = (tau_ws_obj_check){TAU_WS_OBJ_OK, NULL};
		goto out;
	}
	/*
	 * Immutable fields cannot be updated in place: a RoleBinding's roleRef, and a
	 * LocalQueue's spec.clusterQueue (Kueue's CEL rule self == oldSelf).  Replace
	 * the object instead, with a UID precondition so only what we read goes.
	 */
	if ((is_rb && strncmp(detail, "roleRef", 7) == 0) ||
	    (strcmp(res->plural, "localqueues") == 0 &&
	     !same_str(jstr(desired, "spec.clusterQueue"), jstr(obs, "spec.clusterQueue")))) {
		tau_kube_delete_options d = {.uid = jstr(obs, "metadata.uid"),
		                             .grace_period_seconds = -1};

		rc = tau_kube_delete(NULL, ctl->client, res, ns, name, &d);
		if (rc == 0 || rc == -TAU_ENOTFOUND)
			rc = tau_kube_create(&created, ctl->client, res, ns, desired);
		cJSON_Delete(created);
	} else {
		cJSON *upd = cJSON_Duplicate(obs, true);

		rc = upd != NULL ? merge_owned(upd, desired) : -TAU_ENOMEM;
		if (rc == 0)
			rc = tau_kube_update(&created, ctl->client, res, ns, upd);
		cJSON_Delete(upd);
		cJSON_Delete(created);
	}
	if (rc == 0) {
		tau_log_info("workspace object corrected", "workspace", p->name, "object", object,
		             "reason", detail, NULL);
		add_drift(p, object, detail, true);
		*check = (tau_ws_obj_check){TAU_WS_OBJ_OK, NULL};
	} else {
		char text[TAU_WS_MESSAGE_MAX], *why;

		/* Composed apart: pass_text may hand back detail's own buffer. */
		snprintf(text, sizeof(text), "%s (correction failed: %s)", detail,
		         last_error_text());
		why = pass_text(p);
		memcpy(why, text, sizeof(text));
		tau_log_warn("workspace object drifted, correction failed", "workspace", p->name,
		             "object", object, "reason", why, NULL);
		add_drift(p, object, why, false);
		*check = (tau_ws_obj_check){TAU_WS_OBJ_MISMATCH, why};
		requeue_soon(p, 5000);
	}
out:
	cJSON_Delete(obs);
}

/*
 * Delete an object we own: ownership labels and owner UID must match and the
 * delete carries a UID precondition.  @return 0 (deleted or absent),
 * -TAU_EPERM when not ours (left alone, reported), or the API error.
 */
static int delete_owned(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *name,
                        const char *why)
{
	tau_ws_controller *ctl = p->ctl;
	cJSON *obs = NULL;
	char reason[TAU_WS_MESSAGE_MAX / 2], object[300];
	int rc;

	snprintf(object, sizeof(object), "%s %s%s%s", res->plural, ns != NULL ? ns : "",
	         ns != NULL ? "/" : "", name);
	rc = tau_kube_get(&obs, ctl->client, res, ns, name);
	if (rc == -TAU_ENOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	if (!tau_ws_owned(obs, p->name, p->spec.uid, reason, sizeof(reason))) {
		tau_log_warn("workspace cleanup left an object alone", "workspace", p->name,
		             "object", object, "reason", reason, NULL);
		cJSON_Delete(obs);
		return tau_error_set(TAU_EPERM, "%s is not owned: %s", object, reason);
	}
	if (jstr(obs, "metadata.deletionTimestamp") == NULL) {
		tau_kube_delete_options d = {.uid = jstr(obs, "metadata.uid"),
		                             .grace_period_seconds = -1,
		                             .propagation_policy = "Background"};

		rc = tau_kube_delete(NULL, ctl->client, res, ns, name, &d);
		if (rc == -TAU_ENOTFOUND)
			rc = 0;
		if (rc == 0)
			tau_log_info("workspace object deleted", "workspace", p->name, "object",
			             object, "reason", why, NULL);
	}
	cJSON_Delete(obs);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The old namespace: drain and cleanup plan                                                   */

typedef struct old_ns_view {
	cJSON *rbs, *lqs, *sas;
	cJSON *sources[TAU_WS_SRC_KINDS];
	const char *lq_names[TAU_WS_PLAN_MAX];
	size_t n_lq;
	tau_ws_source src[512];
	size_t n_src;
	char api_error[TAU_WS_SRC_KINDS][TAU_WS_MESSAGE_MAX];
	tau_ws_drain_input drain_in;
	tau_ws_drain_decision drain;
	tau_ws_old_ns_input in;
	tau_ws_plan plan;
} old_ns_view;

static void old_ns_view_clear(old_ns_view *v)
{
	cJSON_Delete(v->rbs);
	cJSON_Delete(v->lqs);
	cJSON_Delete(v->sas);
	for (size_t k = 0; k < TAU_WS_SRC_KINDS; k++)
		cJSON_Delete(v->sources[k]);
}

static int list_ours(cJSON **out, ws_pass *p, const tau_kube_resource *res, const char *ns)
{
	char sel[400];
	tau_kube_list_options o = {0};

	snprintf(sel, sizeof(sel), "%s,%s=%s", OWNED_SELECTOR, TAU_WS_LABEL_WORKSPACE, p->name);
	o.label_selector = sel;
	return tau_kube_list_all(out, p->ctl->client, res, ns, &o);
}

static bool ns_is_owned(const cJSON *ns_obj, const char *ws)
{
	const char *mb = label_of(ns_obj, "labels", TAU_WS_LABEL_MANAGED_BY);
	const char *w = label_of(ns_obj, "labels", TAU_WS_LABEL_WORKSPACE);

	return mb != NULL && w != NULL && strcmp(mb, TAU_WS_MANAGED_BY) == 0 && strcmp(w, ws) == 0;
}

/* Build the plan for namespace `old`.  @return 0 or an API error (pass ends). */
static int old_ns_observe(old_ns_view *v, ws_pass *p, const ws_config *cfg, const char *old,
                          bool deleting, const cJSON *others)
{
	tau_ws_controller *ctl = p->ctl;
	char rb_name[300];
	const cJSON *it, *items;
	cJSON *ns_obj = NULL;
	int rc;

	memset(v, 0, sizeof(*v));
	snprintf(rb_name, sizeof(rb_name), "%s%s", TAU_WS_ROLEBINDING_PREFIX, p->name);
	if ((rc = list_ours(&v->rbs, p, &res_rolebindings, old)) != 0 ||
	    (rc = list_ours(&v->lqs, p, &res_localqueues, old)) != 0 ||
	    (rc = list_ours(&v->sas, p, &res_serviceaccounts, old)) != 0)
		return tau_error_wrap("listing owned objects in %s", old);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v->rbs, "items"))
	{
		const char *n = jstr(it, "metadata.name");

		if (n != NULL && strcmp(n, rb_name) == 0)
			v->in.binding_present = true;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(v->lqs, "items"))
	{
		if (v->n_lq < TAU_WS_PLAN_MAX)
			v->lq_names[v->n_lq++] = jstr(it, "metadata.name");
	}
	it = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(v->sas, "items"), 0);
	if (it != NULL) {
		v->in.sa_name = jstr(it, "metadata.name");
		v->in.sa_client_id = label_of(it, "annotations", TAU_WS_ANNOTATION_WI_CLIENT_ID);
		v->in.sa_terminating = jstr(it, "metadata.deletionTimestamp") != NULL;
	}

	/* Sources that route through our queues there. */
	for (size_t k = 0; k < TAU_WS_SRC_KINDS; k++) {
		tau_kube_list_options o = {0};

		if (v->n_lq == 0) {
			v->drain_in.api[k] = TAU_WS_API_LISTED;
			continue;
		}
		rc = tau_kube_list_all(&v->sources[k], ctl->client, &res_sources[k], old, &o);
		if (rc == -TAU_ENOTFOUND) {
			v->drain_in.api[k] = TAU_WS_API_ABSENT;
			continue;
		}
		if (rc != 0) {
			v->drain_in.api[k] = TAU_WS_API_UNREADABLE;
			snprintf(v->api_error[k], sizeof(v->api_error[k]), "%s", last_error_text());
			v->drain_in.api_error[k] = v->api_error[k];
			continue;
		}
		v->drain_in.api[k] = TAU_WS_API_LISTED;
		items = cJSON_GetObjectItemCaseSensitive(v->sources[k], "items");
		cJSON_ArrayForEach(it, items)
		{
			if (v->n_src >= sizeof(v->src) / sizeof(v->src[0]))
				break;
			if (tau_ws_source_from_json(&v->src[v->n_src], (tau_ws_source_kind)k, it) ==
			    0)
				v->n_src++;
		}
	}
	v->drain_in.namespace_name = old;
	v->drain_in.queues = v->lq_names;
	v->drain_in.n_queues = v->n_lq;
	v->drain_in.sources = v->src;
	v->drain_in.n_sources = v->n_src;
	if ((rc = tau_ws_drain_decide(&v->drain, &v->drain_in)) != 0)
		return rc;

	v->in.namespace_name = old;
	v->in.deleting = deleting;
	v->in.binding_wanted = p->spec.name != NULL && p->spec.authz == TAU_WS_AUTHZ_WORKSPACE_RBAC;
	v->in.binding_name = pass_text(p);
	snprintf((char *)v->in.binding_name, TAU_WS_MESSAGE_MAX, "%s", rb_name);
	v->in.wi_wanted = p->spec.has_workload_identity;
	v->in.wi_sa_name = p->spec.wi_service_account;
	v->in.wi_client_id = p->spec.wi_client_id;
	v->in.local_queues = v->lq_names;
	v->in.n_local_queues = v->n_lq;
	if (tau_kube_informer_get(&ns_obj, ctl->inf[INF_NAMESPACES], NULL, old) == 0) {
		v->in.namespace_owned =
		        cfg->mode == TAU_WS_NS_MANAGED && ns_is_owned(ns_obj, p->name);
		cJSON_Delete(ns_obj);
	}
	cJSON_ArrayForEach(it, others)
	{
		const char *on = jstr(it, "metadata.name");
		const char *rn = jstr(it, "status.target.resolvedNamespace");

		if (on != NULL && strcmp(on, p->name) != 0 && rn != NULL && strcmp(rn, old) == 0)
			v->in.namespace_shared = true;
	}
	v->in.drain = &v->drain;
	return tau_ws_old_ns_plan(&v->plan, &v->in);
}

static int remove_finalizer(ws_pass *p)
{
	cJSON *fin =
	        tau_json_find(p->ws, "metadata.finalizers") != NULL
	                ? cJSON_GetObjectItemCaseSensitive(
	                          cJSON_GetObjectItemCaseSensitive(p->ws, "metadata"), "finalizers")
	                : NULL;
	cJSON *out = NULL;
	int i = 0, rc;
	bool found = false;
	const cJSON *it;

	cJSON_ArrayForEach(it, fin)
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, TAU_WS_FINALIZER) == 0) {
			found = true;
			break;
		}
		i++;
	}
	if (!found)
		return 0;
	cJSON_DeleteItemFromArray(fin, i);
	rc = tau_kube_update(&out, p->ctl->client, &res_workspaces, p->ctl->system_namespace,
	                     p->ws);
	cJSON_Delete(out);
	if (rc == 0)
		tau_log_info("workspace finalizer removed", "workspace", p->name, "reason",
		             "cleanup complete", NULL);
	return rc;
}

/*
 * Run the plan's steps in order (wsdrain.h contract).  @return 0 when the
 * pass may continue; sets *complete when every step ran; an API error ends
 * the pass.
 */
static int run_plan(ws_pass *p, old_ns_view *v, const ws_config *cfg, bool *complete,
                    bool *revocation_pending)
{
	tau_ws_controller *ctl = p->ctl;
	bool revoked = false, have_revoke = false;
	int rc = 0;

	*complete = false;
	*revocation_pending = false;
	for (size_t i = 0; i < v->plan.n; i++) {
		const tau_ws_step *s = &v->plan.steps[i];

		if (s->when == TAU_WS_WHEN_REVOKED && !(have_revoke && revoked))
			continue;
		if (s->when == TAU_WS_WHEN_NOT_REVOKED && !(have_revoke && !revoked))
			continue;
		switch (s->kind) {
		case TAU_WS_STEP_REVOKE_SERVICE_ACCOUNT: {
			cJSON *left = NULL;

			have_revoke = true;
			rc = delete_owned(p, &res_serviceaccounts, s->namespace_name, s->name,
			                  "obsolete workload identity");
			if (rc == 0) {
				rc = tau_kube_get(&left, ctl->client, &res_serviceaccounts,
				                  s->namespace_name, s->name);
				cJSON_Delete(left);
				revoked = rc == -TAU_ENOTFOUND;
			}
			if (!revoked)
				*revocation_pending = true;
			rc = 0; /* a failed revoke is an outcome */
			break;
		}
		case TAU_WS_STEP_REMOVE_RESEARCHER_BINDING:
			rc = delete_owned(p, &res_rolebindings, s->namespace_name, s->name,
			                  "researcher access withdrawn from the namespace left");
			break;
		case TAU_WS_STEP_GRANT_RESEARCHER_BINDING: {
			cJSON *rb = NULL;
			tau_ws_obj_check chk;

			if (p->spec.name == NULL)
				break;
			rc = tau_ws_desired_rolebinding(&rb, &p->spec, s->namespace_name);
			if (rc == 0 && rb != NULL) {
				if (ctl->researcher_role != NULL)
					cJSON_ReplaceItemInObject(
					        cJSON_GetObjectItemCaseSensitive(rb, "roleRef"),
					        "name", cJSON_CreateString(ctl->researcher_role));
				ensure(p, &res_rolebindings, rb, true, &chk);
				p->n_drift = 0; /* the old namespace's binding is not drift */
			}
			cJSON_Delete(rb);
			break;
		}
		case TAU_WS_STEP_WAIT_REVOCATION:
		case TAU_WS_STEP_WAIT_DRAIN:
			tau_log_info("workspace cleanup waits", "workspace", p->name, "namespace",
			             v->in.namespace_name, "reason", v->plan.message, NULL);
			requeue_soon(p, ctl->drain_poll_ms);
			return 0;
		case TAU_WS_STEP_DELETE_LOCAL_QUEUE:
			rc = delete_owned(p, &res_localqueues, s->namespace_name, s->name,
			                  "drained: routing removed from the namespace left");
			break;
		case TAU_WS_STEP_DELETE_SERVICE_ACCOUNT:
			rc = delete_owned(
			        p, &res_serviceaccounts, s->namespace_name, s->name,
			        "drained: workload identity removed from the namespace left");
			break;
		case TAU_WS_STEP_DELETE_NAMESPACE:
			if (cfg->mode == TAU_WS_NS_MANAGED)
				rc = delete_owned(p, &tau_kube_res_namespaces, NULL,
				                  s->namespace_name, "workspace deleted");
			break;
		case TAU_WS_STEP_RELEASE_NAMESPACE: {
			char patch[512];
			cJSON *out = NULL;

			snprintf(patch, sizeof(patch),
			         "{\"metadata\":{\"labels\":{\"%s\":null,\"%s\":null},"
			         "\"annotations\":{\"%s\":null}}}",
			         TAU_WS_LABEL_MANAGED_BY, TAU_WS_LABEL_WORKSPACE,
			         TAU_WS_ANNOTATION_OWNER_UID);
			rc = tau_kube_patch(&out, ctl->client, &tau_kube_res_namespaces, NULL,
			                    s->namespace_name, NULL, TAU_KUBE_PATCH_MERGE, patch);
			cJSON_Delete(out);
			if (rc == 0)
				tau_log_info("workspace namespace released", "workspace", p->name,
				             "namespace", s->namespace_name, "reason",
				             "retargeted: ownership labels removed, namespace kept",
				             NULL);
			break;
		}
		case TAU_WS_STEP_REMOVE_FINALIZER:
			rc = remove_finalizer(p);
			break;
		}
		if (rc == -TAU_EPERM && s->kind != TAU_WS_STEP_REMOVE_FINALIZER)
			rc = 0; /* not ours: left alone and reported, cleanup goes on */
		if (rc != 0) {
			tau_log_warn("workspace cleanup step failed", "workspace", p->name, "step",
			             tau_ws_step_name(s->kind), "namespace", s->namespace_name,
			             "error", last_error_text(), NULL);
			return rc;
		}
	}
	*complete = v->plan.completes && !*revocation_pending;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The pass                                                                                    */

static int write_status(ws_pass *p, const tau_ws_status_input *sin)
{
	cJSON *st = NULL, *copy = NULL, *out = NULL;
	int rc;

	if ((rc = tau_ws_status_build(&st, sin)) != 0)
		return rc;
	if (!tau_ws_status_changed(st, p->status)) {
		cJSON_Delete(st);
		return 0;
	}
	copy = cJSON_Duplicate(p->ws, true);
	if (copy == NULL) {
		cJSON_Delete(st);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(copy, "status");
	cJSON_AddItemToObject(copy, "status", st);
	rc = tau_kube_update_status(&out, p->ctl->client, &res_workspaces, p->ctl->system_namespace,
	                            copy);
	if (rc == 0) {
		const char *phase = jstr(st, "phase");
		const cJSON *c;
		char reasons[TAU_WS_MESSAGE_MAX] = "";
		size_t used = 0;

		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(st, "conditions"))
		{
			int n = snprintf(reasons + used, sizeof(reasons) - used, "%s%s=%s/%s",
			                 used ? " " : "", jstr(c, "type"), jstr(c, "status"),
			                 jstr(c, "reason"));
			if (n < 0 || (size_t)n >= sizeof(reasons) - used)
				break;
			used += (size_t)n;
		}
		tau_log_info("workspace status", "workspace", p->name, "phase", phase, "conditions",
		             reasons, NULL);
	} else {
		tau_log_warn("workspace status write failed", "workspace", p->name, "error",
		             last_error_text(), NULL);
	}
	cJSON_Delete(out);
	cJSON_Delete(copy);
	return rc;
}

static bool has_finalizer(const cJSON *ws)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, tau_json_find(ws, "metadata.finalizers"))
	{
		if (cJSON_IsString(it) && strcmp(it->valuestring, TAU_WS_FINALIZER) == 0)
			return true;
	}
	return false;
}

static int add_finalizer(ws_pass *p)
{
	cJSON *copy = cJSON_Duplicate(p->ws, true), *md, *fin, *out = NULL;
	int rc;

	if (copy == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	md = cJSON_GetObjectItemCaseSensitive(copy, "metadata");
	fin = cJSON_GetObjectItemCaseSensitive(md, "finalizers");
	if (!cJSON_IsArray(fin)) {
		cJSON_DeleteItemFromObjectCaseSensitive(md, "finalizers");
		fin = cJSON_AddArrayToObject(md, "finalizers");
	}
	if (fin == NULL || !cJSON_AddItemToArray(fin, cJSON_CreateString(TAU_WS_FINALIZER))) {
		cJSON_Delete(copy);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	rc = tau_kube_update(&out, p->ctl->client, &res_workspaces, p->ctl->system_namespace, copy);
	if (rc == 0) {
		tau_log_info("workspace finalizer added", "workspace", p->name, "finalizer",
		             TAU_WS_FINALIZER, NULL);
		/* Continue the pass on the object as written (fresh resourceVersion). */
		cJSON_Delete(p->ws);
		p->ws = out;
		out = NULL;
		p->status = cJSON_GetObjectItemCaseSensitive(p->ws, "status");
		rc = tau_ws_spec_from_json(&p->spec, p->ws) == 0 ? 0 : 1;
	}
	cJSON_Delete(out);
	cJSON_Delete(copy);
	return rc;
}

/* The other workspaces' claims, with strings lent from `all`. */
static int build_claims(tau_ws_claim **out, size_t *n, const cJSON *all, const char *self,
                        const ws_config *cfg, const char *sysns)
{
	tau_ws_claim *claims = calloc((size_t)cJSON_GetArraySize(all) + 1, sizeof(*claims));
	const cJSON *it;

	if (claims == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	*n = 0;
	cJSON_ArrayForEach(it, all)
	{
		const char *name = jstr(it, "metadata.name"), *cand = NULL, *rn;
		tau_ws_ns_input ci = {0};
		tau_ws_refusal why;

		if (name == NULL || strcmp(name, self) == 0)
			continue;
		ci.workspace = name;
		ci.target_namespace = jstr(it, "spec.target.namespace");
		ci.system_namespace = sysns;
		ci.map_set = cfg->map_set;
		ci.map = cfg->map;
		ci.n_map = cfg->n_map;
		if (tau_ws_ns_candidate(&cand, &why, &ci) != 0)
			cand = NULL;
		rn = jstr(it, "status.target.resolvedNamespace");
		claims[*n] = (tau_ws_claim){name, cand, jstr(it, "metadata.creationTimestamp"),
		                            cand != NULL && rn != NULL && strcmp(rn, cand) == 0};
		(*n)++;
	}
	*out = claims;
	return 0;
}

static int reconcile(tau_ws_controller *ctl, const char *name, uint64_t *requeue_ms)
{
	ws_pass *p = calloc(1, sizeof(*p));
	ws_config cfg = {0};
	cJSON *all = NULL, *rb = NULL, *lq = NULL, *sa = NULL, *nsd = NULL, *ns_obj = NULL;
	cJSON *sas = NULL;
	tau_ws_claim *claims = NULL;
	size_t n_claims = 0;
	tau_ws_v0_entry *v0 = NULL;
	old_ns_view *old = NULL;
	tau_ws_status_input sin = {0};
	tau_ws_refusal refusal = {0};
	tau_ws_ns_result nsr;
	tau_ws_ns_observed observed;
	char now[40], cq_name[300];
	const char *prev_ns, *lq_name;
	bool spec_ok, complete = false, revocation_pending = false;
	int rc = -1;

	if (p == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	p->ctl = ctl;
	p->name = name;
	now_rfc3339(now, sizeof(now));
	rc = tau_kube_get(&p->ws, ctl->client, &res_workspaces, ctl->system_namespace, name);
	if (rc == -TAU_ENOTFOUND) {
		rc = 0; /* gone: nothing to do */
		goto out;
	}
	if (rc != 0)
		goto out;
	p->status = cJSON_GetObjectItemCaseSensitive(p->ws, "status");
	spec_ok = tau_ws_spec_from_json(&p->spec, p->ws) == 0;
	if (!spec_ok)
		tau_ws_refuse(&refusal, TAU_WS_REASON_INVALID_SPEC, false, "workspace %s: %s", name,
		              tau_error_last()->msg);
	if ((rc = config_load(&cfg, ctl)) != 0)
		goto out;
	if ((rc = tau_kube_informer_snapshot(&all, ctl->inf[INF_WORKSPACES])) != 0)
		goto out;
	prev_ns = jstr(p->status, "target.resolvedNamespace");
	old = calloc(1, sizeof(*old));
	if (old == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto out;
	}

	/* Deletion: drain and clean the namespace it used, then drop the finalizer. */
	if (jstr(p->ws, "metadata.deletionTimestamp") != NULL) {
		if (!has_finalizer(p->ws))
			goto out;
		if (prev_ns == NULL) {
			rc = remove_finalizer(p);
			goto out;
		}
		if (!spec_ok)
			memset(&p->spec, 0, sizeof(p->spec));
		if ((rc = old_ns_observe(old, p, &cfg, prev_ns, true, all)) != 0)
			goto out;
		rc = run_plan(p, old, &cfg, &complete, &revocation_pending);
		goto out;
	}

	if (!has_finalizer(p->ws)) {
		if ((rc = add_finalizer(p)) < 0)
			goto out;
		spec_ok = rc == 0 && spec_ok;
		rc = 0;
	}
	sin.workspace = name;
	sin.now = now;
	sin.previous = p->status;
	if (spec_ok) {
		sin.spec = &p->spec;
		sin.generation = p->spec.generation;
	} else {
		tau_json_get_int(&sin.generation, p->ws, "metadata.generation");
		sin.refusal = &refusal;
		rc = write_status(p, &sin);
		goto out;
	}

	/* v0: one active workspace, unless the MultipleWorkspaces gate lifts it. */
	if (!ctl->multiple_workspaces) {
		size_t n = (size_t)cJSON_GetArraySize(all), self = n, i = 0;
		const cJSON *it;

		v0 = calloc(n + 1, sizeof(*v0));
		if (v0 == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
			goto out;
		}
		cJSON_ArrayForEach(it, all)
		{
			v0[i].name = jstr(it, "metadata.name");
			v0[i].creation_timestamp = jstr(it, "metadata.creationTimestamp");
			v0[i].deletion_timestamp = jstr(it, "metadata.deletionTimestamp");
			if (v0[i].name != NULL && strcmp(v0[i].name, name) == 0)
				self = i;
			i++;
		}
		if (self == n) { /* the cache lags the live read: count ourselves in */
			v0[n].name = name;
			v0[n].creation_timestamp = p->spec.creation_timestamp;
			self = n++;
		}
		if ((rc = tau_ws_v0_decide(&refusal, v0, n, self)) != 0)
			goto out;
		if (refusal.reason != NULL) {
			sin.refusal = &refusal;
			rc = write_status(p, &sin);
			requeue_soon(p, ctl->resync_ms);
			goto out;
		}
	}

	/* The namespace: the one resolution function. */
	if ((rc = build_claims(&claims, &n_claims, all, name, &cfg, ctl->system_namespace)) != 0)
		goto out;
	{
		tau_ws_ns_input in = {0};
		const char *cand = NULL;
		tau_ws_refusal why;

		in.workspace = name;
		in.creation_timestamp = p->spec.creation_timestamp;
		in.target_namespace = p->spec.target_namespace;
		in.create_namespace = p->spec.create_namespace;
		in.adopt = p->spec.adopt;
		in.system_namespace = ctl->system_namespace;
		in.mode = cfg.mode;
		in.allowlist = cfg.allowlist;
		in.map_set = cfg.map_set;
		in.map = cfg.map;
		in.n_map = cfg.n_map;
		in.allow_shared = cfg.allow_shared;
		in.claims = claims;
		in.n_claims = n_claims;
		if (tau_ws_ns_candidate(&cand, &why, &in) == 0) {
			in.established = prev_ns != NULL && strcmp(prev_ns, cand) == 0;
			if (tau_kube_informer_get(&ns_obj, ctl->inf[INF_NAMESPACES], NULL, cand) ==
			            0 &&
			    tau_ws_ns_observe(&observed, ns_obj) == 0)
				in.observed = &observed;
		}
		if ((rc = tau_ws_ns_resolve(&nsr, &in)) != 0)
			goto out;
	}
	sin.ns = &nsr;
	lq_name = tau_ws_local_queue_name(&p->spec, cfg.default_queue);
	if ((rc = tau_ws_cluster_queue_name(cq_name, sizeof(cq_name), &p->spec,
	                                    cfg.default_queue)) != 0)
		goto out;
	sin.local_queue = lq_name;
	sin.cluster_queue = cq_name;
	if (!nsr.resolved) {
		/* Refused: nothing is written; keep naming the namespace still holding our objects.
		 */
		sin.resolved_namespace = prev_ns;
		rc = write_status(p, &sin);
		if (nsr.refusal.retryable)
			requeue_soon(p, 30000);
		goto out;
	}

	/* The namespace itself (Managed mode). */
	if ((rc = tau_ws_desired_namespace(&nsd, &p->spec, &nsr)) != 0)
		goto out;
	if (nsd != NULL) {
		tau_ws_obj_check chk;

		ensure(p, &tau_kube_res_namespaces, nsd, false, &chk);
		p->n_drift = 0; /* labels added on adoption are not drift */
		if (chk.state != TAU_WS_OBJ_OK) {
			tau_log_warn("workspace namespace not ready", "workspace", name,
			             "namespace", nsr.namespace_name, "error", chk.detail, NULL);
			rc = 0;
			requeue_soon(p, 2000);
			goto out;
		}
	}

	/* Retarget: the old namespace drains while the new one is set up. */
	if (prev_ns != NULL && strcmp(prev_ns, nsr.namespace_name) != 0) {
		if ((rc = old_ns_observe(old, p, &cfg, prev_ns, false, all)) != 0)
			goto out;
		if ((rc = run_plan(p, old, &cfg, &complete, &revocation_pending)) != 0)
			goto out;
		if (!complete) {
			sin.resolved_namespace = prev_ns;
			tau_log_info("workspace retarget draining", "workspace", name, "from",
			             prev_ns, "to", nsr.namespace_name, "reason",
			             old->drain.refusal.reason != NULL ? old->drain.refusal.message
			                                               : old->plan.message,
			             NULL);
		}
		p->n_drift = 0;
	}

	/* An obsolete workload-identity ServiceAccount here goes before access is granted. */
	if ((rc = list_ours(&sas, p, &res_serviceaccounts, nsr.namespace_name)) == 0) {
		const cJSON *it;

		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(sas, "items"))
		{
			const char *sn = jstr(it, "metadata.name");

			if (sn == NULL || (p->spec.has_workload_identity &&
			                   strcmp(sn, p->spec.wi_service_account) == 0))
				continue;
			if (delete_owned(p, &res_serviceaccounts, nsr.namespace_name, sn,
			                 "obsolete workload identity") != 0) {
				revocation_pending = true;
				sin.revocation_detail = pass_text(p);
				snprintf((char *)sin.revocation_detail, TAU_WS_MESSAGE_MAX,
				         "ServiceAccount %s/%s: %s", nsr.namespace_name, sn,
				         last_error_text());
			}
		}
	}
	rc = 0;
	sin.revocation_pending = revocation_pending;

	/* RoleBinding. */
	if ((rc = tau_ws_desired_rolebinding(&rb, &p->spec, nsr.namespace_name)) != 0)
		goto out;
	if (rb != NULL && ctl->researcher_role != NULL)
		cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(rb, "roleRef"), "name",
		                          cJSON_CreateString(ctl->researcher_role));
	if (rb != NULL && revocation_pending) {
		char rbn[300];

		snprintf(rbn, sizeof(rbn), "%s%s", TAU_WS_ROLEBINDING_PREFIX, name);
		delete_owned(p, &res_rolebindings, nsr.namespace_name, rbn,
		             "identity revocation pending");
	} else if (rb != NULL) {
		const char *was = prev_condition(p, TAU_WS_COND_RBAC_READY);

		ensure(p, &res_rolebindings, rb, was != NULL && strcmp(was, "True") == 0,
		       &sin.rolebinding);
	}

	/* LocalQueue, then its ClusterQueue. */
	if ((rc = tau_ws_desired_local_queue(&lq, &p->spec, nsr.namespace_name,
	                                     cfg.default_queue)) != 0)
		goto out;
	{
		const char *was = prev_condition(p, TAU_WS_COND_QUEUE_READY);
		const char *lq_reason = NULL;
		const cJSON *c;

		const cJSON *conds =
		        p->status != NULL ? tau_json_find(p->status, "conditions") : NULL;

		cJSON_ArrayForEach(c, conds)
		{
			if (jstr(c, "type") != NULL &&
			    strcmp(jstr(c, "type"), TAU_WS_COND_QUEUE_READY) == 0)
				lq_reason = jstr(c, "reason");
		}
		/* The LocalQueue existed when QueueReady was True or only the CQ was missing. */
		ensure(p, &res_localqueues, lq,
		       (was != NULL && strcmp(was, "True") == 0) ||
		               (lq_reason != NULL &&
		                (strcmp(lq_reason, TAU_WS_REASON_CQ_NOT_FOUND) == 0 ||
		                 strcmp(lq_reason, TAU_WS_REASON_CQ_ERROR) == 0)),
		       &sin.lq);
	}
	{
		cJSON *cq = NULL;

		if (!tau_kube_informer_has_synced(ctl->inf[INF_CQ])) {
			sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_ERROR,
			                            "the ClusterQueue list has not been read yet"};
			requeue_soon(p, 2000);
		} else if (tau_kube_informer_get(&cq, ctl->inf[INF_CQ], NULL, cq_name) == 0) {
			sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_OK, NULL};
		} else {
			sin.cq = (tau_ws_obj_check){TAU_WS_OBJ_MISSING, NULL};
		}
		cJSON_Delete(cq);
	}

	/* ServiceAccount. */
	if ((rc = tau_ws_desired_service_account(&sa, &p->spec, nsr.namespace_name)) != 0)
		goto out;
	if (sa != NULL) {
		const char *was = prev_condition(p, TAU_WS_COND_WI_READY);

		ensure(p, &res_serviceaccounts, sa, was != NULL && strcmp(was, "True") == 0,
		       &sin.sa);
	}

	sin.drift = p->drift;
	sin.n_drift = p->n_drift;
	rc = write_status(p, &sin);
	if (p->n_drift > 0)
		requeue_soon(p, 2000); /* settle DriftCorrected into NoDrift once stable */
out:
	*requeue_ms = p->requeue_ms;
	cJSON_Delete(sas);
	cJSON_Delete(rb);
	cJSON_Delete(lq);
	cJSON_Delete(sa);
	cJSON_Delete(nsd);
	cJSON_Delete(ns_obj);
	free(claims);
	free(v0);
	if (old != NULL)
		old_ns_view_clear(old);
	free(old);
	cJSON_Delete(all);
	config_clear(&cfg);
	cJSON_Delete(p->ws);
	free(p);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Worker                                                                                      */

static bool all_synced(tau_ws_controller *ctl)
{
	for (size_t i = 0; i < INF_N; i++)
		if (ctl->inf[i] != NULL && !tau_kube_informer_has_synced(ctl->inf[i]))
			return false;
	return true;
}

static void *worker_main(void *arg)
{
	tau_ws_controller *ctl = arg;

	for (;;) {
		char *key = NULL;
		uint64_t requeue = 0;
		int rc = tau_workqueue_get(ctl->queue, &key, -1);

		if (rc == -TAU_EAGAIN)
			break;
		if (rc != 0)
			continue;
		if (!all_synced(ctl)) {
			tau_workqueue_done(ctl->queue, key);
			tau_workqueue_add_after(ctl->queue, key, 200);
			free(key);
			continue;
		}
		tau_error_clear();
		rc = reconcile(ctl, key, &requeue);
		atomic_fetch_add(&ctl->passes, 1);
		tau_workqueue_done(ctl->queue, key);
		if (rc != 0) {
			tau_log_warn("workspace reconcile failed", "workspace", key, "error",
			             last_error_text(), "code", tau_error_name(rc), NULL);
			tau_workqueue_add_rate_limited(ctl->queue, key);
		} else {
			tau_workqueue_forget(ctl->queue, key);
			tau_workqueue_add_after(ctl->queue, key,
			                        requeue != 0 ? requeue : ctl->resync_ms);
		}
		free(key);
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* The allowlist file                                                                          */

static void allowlist_reload(tau_ws_controller *ctl, bool first)
{
	tau_ws_allowlist *list = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = fopen(ctl->allowlist_file, "re");
	int rc = -1;

	if (f != NULL) {
		buf = malloc(TAU_WS_ALLOWLIST_MAX_BYTES + 1);
		if (buf != NULL)
			len = fread(buf, 1, TAU_WS_ALLOWLIST_MAX_BYTES + 1, f);
		fclose(f);
		if (buf == NULL)
			rc = tau_error_set(TAU_ENOMEM, "out of memory");
		else
			rc = tau_ws_allowlist_parse(&list, buf, len);
	} else {
		rc = tau_error_set(TAU_EIO, "cannot open %s: %s", ctl->allowlist_file,
		                   strerror(errno));
	}
	free(buf);
	if (rc != 0) {
		tau_log_warn(first ? "namespace allowlist unreadable; starting empty"
		                   : "namespace allowlist reload failed; keeping the previous list",
		             "file", ctl->allowlist_file, "error", tau_error_last()->msg, NULL);
		return;
	}
	pthread_mutex_lock(&ctl->lock);
	tau_ws_allowlist_free(ctl->file_allowlist);
	ctl->file_allowlist = list;
	pthread_mutex_unlock(&ctl->lock);
	{
		char count[32];

		snprintf(count, sizeof(count), "%zu", tau_ws_allowlist_count(list));
		tau_log_info("namespace allowlist loaded", "file", ctl->allowlist_file,
		             "namespaces", count, NULL);
	}
	if (!first)
		enqueue_all(ctl);
}

static void *watcher_main(void *arg)
{
	tau_ws_controller *ctl = arg;
	char dir[PATH_MAX];
	char *slash;
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	snprintf(dir, sizeof(dir), "%s", ctl->allowlist_file);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (fd < 0 || inotify_add_watch(fd, dir,
	                                IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE |
	                                        IN_MODIFY | IN_ATTRIB) < 0) {
		tau_log_error("namespace allowlist: cannot watch folder", "folder", dir, "error",
		              strerror(errno), NULL);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (!atomic_load(&ctl->stopping)) {
		struct pollfd pfd[2] = {{fd, POLLIN, 0}, {ctl->stop_fd, POLLIN, 0}};
		char ev[4096];

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents != 0)
			break;
		while (read(fd, ev, sizeof(ev)) > 0) {
		}
		allowlist_reload(ctl, false);
	}
	close(fd);
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Lifecycle                                                                                   */

int tau_ws_map_parse(cJSON **out, const char *buf, size_t len)
{
	cJSON *map = NULL;
	const cJSON *it;
	int rc;

	if ((rc = tau_json_parse(&map, buf, len, MAP_FILE_MAX)) != 0)
		return tau_error_wrap("namespace map");
	if (!cJSON_IsObject(map)) {
		cJSON_Delete(map);
		return tau_error_set(TAU_EINVAL, "namespace map: not a JSON object");
	}
	cJSON_ArrayForEach(it, map)
	{
		if (!cJSON_IsString(it)) {
			rc = tau_error_set(TAU_EINVAL, "namespace map: entry %s is not a string",
			                   it->string);
			cJSON_Delete(map);
			return rc;
		}
	}
	*out = map;
	return 0;
}

static int load_map_file(cJSON **out, const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t len;
	int rc;

	if (f == NULL)
		return tau_error_set(TAU_EINVAL, "namespace map %s: %s", path, strerror(errno));
	buf = malloc(MAP_FILE_MAX + 1);
	if (buf == NULL) {
		fclose(f);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	len = fread(buf, 1, MAP_FILE_MAX + 1, f);
	fclose(f);
	rc = tau_ws_map_parse(out, buf, len);
	free(buf);
	return rc;
}

int tau_ws_controller_new(tau_ws_controller **out, const tau_ws_controller_opts *opts)
{
	tau_ws_controller *ctl = NULL;
	tau_kube_handlers ws_h, owned_h, all_h;
	tau_kube_informer_options o;
	int rc = -TAU_ENOMEM;

	if (opts == NULL || opts->client == NULL || opts->loop == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "workspace controller: client and loop are required");
	if (opts->allowlist_selector != NULL && opts->allowlist_file != NULL)
		return tau_error_set(TAU_EINVAL, "workspace controller: set either an allowlist "
		                                 "selector or an allowlist file, not both");
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	pthread_mutex_init(&ctl->lock, NULL);
	ctl->stop_fd = -1;
	ctl->client = opts->client;
	ctl->loop = opts->loop;
	ctl->system_namespace =
	        strdup(opts->system_namespace != NULL ? opts->system_namespace
	                                              : TAU_WS_DEFAULT_SYSTEM_NAMESPACE);
	ctl->ns_mode_set = opts->ns_mode_set;
	ctl->multiple_workspaces = opts->multiple_workspaces;
	ctl->ns_mode = opts->ns_mode;
	ctl->allowlist_file = xstrdup(opts->allowlist_file);
	ctl->researcher_role = xstrdup(opts->researcher_cluster_role);
	ctl->resync_ms = opts->resync_ms != 0 ? opts->resync_ms : TAU_WS_DEFAULT_RESYNC_MS;
	ctl->drain_poll_ms = opts->drain_poll_ms != 0 ? opts->drain_poll_ms : 2000;
	if (ctl->system_namespace == NULL ||
	    (opts->allowlist_file != NULL && ctl->allowlist_file == NULL) ||
	    (opts->researcher_cluster_role != NULL && ctl->researcher_role == NULL))
		goto fail;
	if (opts->allowlist_selector != NULL &&
	    (rc = tau_selector_parse(&ctl->allowlist_selector, opts->allowlist_selector)) != 0) {
		tau_error_wrap("namespace allowlist selector");
		goto fail;
	}
	if (opts->namespace_map_file != NULL &&
	    (rc = load_map_file(&ctl->map, opts->namespace_map_file)) != 0)
		goto fail;
	if ((rc = tau_workqueue_new(&ctl->queue, NULL)) != 0)
		goto fail;

	ws_h = (tau_kube_handlers){
	        .on_add = ws_add, .on_update = ws_update, .on_delete = ws_delete, .arg = ctl};
	owned_h = (tau_kube_handlers){.on_add = owned_add_fixed,
	                              .on_update = owned_update_fixed,
	                              .on_delete = owned_add_fixed,
	                              .arg = ctl};
	all_h = (tau_kube_handlers){
	        .on_add = all_add, .on_update = all_update, .on_delete = all_add, .arg = ctl};

	memset(&o, 0, sizeof(o));
	o.namespace = ctl->system_namespace;
	if ((rc = tau_kube_informer_new(&ctl->inf[INF_WORKSPACES], ctl->loop, &res_workspaces, &o,
	                                &ws_h)) != 0)
		goto fail;
	memset(&o, 0, sizeof(o));
	o.field_selector = "metadata.name=cluster";
	if ((rc = tau_kube_informer_new(&ctl->inf[INF_CLUSTER], ctl->loop, &res_clusters, &o,
	                                &all_h)) != 0)
		goto fail;
	memset(&o, 0, sizeof(o));
	if ((rc = tau_kube_informer_new(&ctl->inf[INF_NAMESPACES], ctl->loop,
	                                &tau_kube_res_namespaces, &o, &all_h)) != 0 ||
	    (rc = tau_kube_informer_new(&ctl->inf[INF_CQ], ctl->loop, &res_clusterqueues, &o,
	                                &all_h)) != 0)
		goto fail;
	o.label_selector = OWNED_SELECTOR;
	if ((rc = tau_kube_informer_new(&ctl->inf[INF_RB], ctl->loop, &res_rolebindings, &o,
	                                &owned_h)) != 0 ||
	    (rc = tau_kube_informer_new(&ctl->inf[INF_LQ], ctl->loop, &res_localqueues, &o,
	                                &owned_h)) != 0 ||
	    (rc = tau_kube_informer_new(&ctl->inf[INF_SA], ctl->loop, &res_serviceaccounts, &o,
	                                &owned_h)) != 0)
		goto fail;
	*out = ctl;
	return 0;
fail:
	if (rc == -TAU_ENOMEM)
		tau_error_set(TAU_ENOMEM, "out of memory");
	tau_ws_controller_free(ctl);
	return rc;
}

int tau_ws_controller_start(tau_ws_controller *ctl)
{
	if (ctl->allowlist_file != NULL) {
		allowlist_reload(ctl, true);
		ctl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (ctl->stop_fd < 0 || pthread_create(&ctl->watcher, NULL, watcher_main, ctl) != 0)
			return tau_error_set(TAU_EIO, "cannot start the allowlist watcher");
		ctl->watcher_running = true;
	}
	for (size_t i = 0; i < INF_N; i++)
		tau_kube_informer_start(ctl->inf[i]);
	if (pthread_create(&ctl->worker, NULL, worker_main, ctl) != 0)
		return tau_error_set(TAU_EIO, "cannot start the workspace worker");
	ctl->worker_running = true;
	return 0;
}

void tau_ws_controller_stop(tau_ws_controller *ctl)
{
	if (ctl == NULL)
		return;
	atomic_store(&ctl->stopping, true);
	if (ctl->watcher_running) {
		uint64_t one = 1;

		if (write(ctl->stop_fd, &one, sizeof(one)) < 0)
			tau_log_debug("allowlist watcher wake-up failed", NULL);
		pthread_join(ctl->watcher, NULL);
		ctl->watcher_running = false;
	}
	if (ctl->worker_running) {
		tau_workqueue_shutdown(ctl->queue);
		pthread_join(ctl->worker, NULL);
		ctl->worker_running = false;
	}
}

void tau_ws_controller_free(tau_ws_controller *ctl)
{
	if (ctl == NULL)
		return;
	tau_ws_controller_stop(ctl);
	for (size_t i = 0; i < INF_N; i++)
		tau_kube_informer_free(ctl->inf[i]);
	tau_workqueue_free(ctl->queue);
	if (ctl->stop_fd >= 0)
		close(ctl->stop_fd);
	tau_ws_allowlist_free(ctl->file_allowlist);
	tau_selector_free(ctl->allowlist_selector);
	cJSON_Delete(ctl->map);
	free(ctl->system_namespace);
	free(ctl->allowlist_file);
	free(ctl->researcher_role);
	pthread_mutex_destroy(&ctl->lock);
	free(ctl);
}

bool tau_ws_controller_synced(tau_ws_controller *ctl)
{
	return all_synced(ctl);
}

uint64_t tau_ws_controller_passes(tau_ws_controller *ctl)
{
	return atomic_load(&ctl->passes);
}

/* ------------------------------------------------------------------------------------------ */
/* Read API                                                                                    */

void tau_ws_summary_clear(tau_ws_summary *s)
{
	if (s == NULL)
		return;
	free(s->name);
	free(s->phase);
	free(s->namespace_name);
	free(s->local_queue);
	free(s->cluster_queue);
	for (size_t i = 0; i < s->n_conditions; i++) {
		free(s->conditions[i].type);
		free(s->conditions[i].status);
		free(s->conditions[i].reason);
		free(s->conditions[i].message);
	}
	free(s->conditions);
	memset(s, 0, sizeof(*s));
}

void tau_ws_summaries_free(tau_ws_summary *s, size_t n)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		tau_ws_summary_clear(&s[i]);
	free(s);
}

static bool dup_ok(char **dst, const char *src)
{
	*dst = xstrdup(src);
	return src == NULL || *dst != NULL;
}

int tau_ws_summary_from_json(tau_ws_summary *out, const cJSON *obj)
{
	tau_ws_summary s = {0};
	const cJSON *conds, *c;
	bool ok;

	if (jstr(obj, "metadata.name") == NULL)
		return tau_error_set(TAU_EINVAL, "workspace without metadata.name");
	tau_json_get_int(&s.generation, obj, "metadata.generation");
	tau_json_get_int(&s.observed_generation, obj, "status.observedGeneration");
	s.deleting = jstr(obj, "metadata.deletionTimestamp") != NULL;
	ok = dup_ok(&s.name, jstr(obj, "metadata.name")) &&
	     dup_ok(&s.phase, jstr(obj, "status.phase")) &&
	     dup_ok(&s.namespace_name, jstr(obj, "status.target.resolvedNamespace")) &&
	     dup_ok(&s.local_queue, jstr(obj, "status.queue.localQueue")) &&
	     dup_ok(&s.cluster_queue, jstr(obj, "status.queue.clusterQueue"));
	conds = tau_json_find(obj, "status.conditions");
	if (ok && cJSON_IsArray(conds) && cJSON_GetArraySize(conds) > 0) {
		s.conditions = calloc((size_t)cJSON_GetArraySize(conds), sizeof(*s.conditions));
		ok = s.conditions != NULL;
		cJSON_ArrayForEach(c, conds)
		{
			tau_ws_summary_condition *sc;

			if (!ok)
				break;
			sc = &s.conditions[s.n_conditions++];
			ok = dup_ok(&sc->type, jstr(c, "type")) &&
			     dup_ok(&sc->status, jstr(c, "status")) &&
			     dup_ok(&sc->reason, jstr(c, "reason")) &&
			     dup_ok(&sc->message, jstr(c, "message"));
		}
	}
	if (!ok) {
		tau_ws_summary_clear(&s);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

int tau_ws_controller_list(tau_ws_summary **out, size_t *n, tau_ws_controller *ctl)
{
	cJSON *all = NULL;
	tau_ws_summary *arr = NULL;
	size_t count = 0, cap;
	const cJSON *it;
	int rc;

	if ((rc = tau_kube_informer_snapshot(&all, ctl->inf[INF_WORKSPACES])) != 0)
		return rc;
	cap = (size_t)cJSON_GetArraySize(all);
	if (cap > 0 && (arr = calloc(cap, sizeof(*arr))) == NULL) {
		cJSON_Delete(all);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	/* The snapshot is sorted by key, and the key is the name in one namespace. */
	cJSON_ArrayForEach(it, all)
	{
		if (tau_ws_summary_from_json(&arr[count], it) == 0)
			count++;
		else if (tau_error_last()->code == TAU_ENOMEM) {
			tau_ws_summaries_free(arr, count);
			cJSON_Delete(all);
			return -TAU_ENOMEM;
		}
	}
	cJSON_Delete(all);
	if (count == 0) {
		free(arr);
		arr = NULL;
	}
	*out = arr;
	*n = count;
	return 0;
}

int tau_ws_controller_get(tau_ws_summary *out, tau_ws_controller *ctl, const char *name)
{
	cJSON *obj = NULL;
	int rc;

	if ((rc = tau_kube_informer_get(&obj, ctl->inf[INF_WORKSPACES], ctl->system_namespace,
	                                name)) != 0)
		return rc;
	rc = tau_ws_summary_from_json(out, obj);
	cJSON_Delete(obj);
	return rc;
}
