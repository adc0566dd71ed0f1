/*
 * drawatch.c - DeviceClass, ResourceSlice and Kueue-configuration informers for the DRA pool.
 *
 * A GPU node whose driver uses Dynamic Resource Allocation shows no GPUs in its allocatable;
 * its devices are in ResourceSlices, and the quota resource they count under comes from a
 * DeviceClass's extendedResourceName or from Kueue's deviceClassMappings (docs/budget.md,
 * "Dynamic Resource Allocation: facts").  This file only reads: handlers translate informer
 * events into sink calls on the kube loop thread, and the pool decides.
 *
 * The one idea: the Kueue ConfigMap is parsed here, once per change, so the sink sees a
 * Configuration (or why there is none) and never YAML; a ConfigMap that cannot be read is
 * reported as an error, never as "no mappings", so the pool can fail closed.
 */
#include "drawatch.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/mem.h"

#include <stdlib.h>
#include <string.h>

const tau_kube_resource tau_inventory_res_deviceclasses = {.group = "resource.k8s.io",
                                                           .version = "v1",
                                                           .plural = "deviceclasses",
                                                           .namespaced = false};
const tau_kube_resource tau_inventory_res_resourceslices = {.group = "resource.k8s.io",
                                                            .version = "v1",
                                                            .plural = "resourceslices",
                                                            .namespaced = false};

/* An informer of DRA objects: its watch, and which kind it lists. */
typedef struct dra_informer {
	struct tau_inventory_dra_watch *w;
	tau_inventory_dra_kind kind;
} dra_informer;

/* The watch's informers, in the order they start (freed in the reverse order). */
enum { CLASSES, SLICES, KUEUE, N_INFORMERS };

struct tau_inventory_dra_watch {
	tau_inventory_dra_sink sink;
	dra_informer slices_of, classes_of; /* the informers' handler arguments */
	char *kueue_namespace;
	char *kueue_configmap;
	tau_kube_informer *informers[N_INFORMERS];
};

/* Informers cache what this leaves: the spec and the identity, not the write history. */
static void prune(void *arg, cJSON *obj)
{
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");

	(void)arg;
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "managedFields");
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "annotations");
}

static void dra_hand(const dra_informer *d, const cJSON *obj, bool deleted)
{
	if (d->w->sink.object)
		d->w->sink.object(d->w->sink.arg, d->kind, obj, deleted);
}

static void dra_add(void *arg, const cJSON *obj)
{
	dra_hand(arg, obj, false);
}

static void dra_update(void *arg, const cJSON *old_obj, const cJSON *new_obj)
{
	(void)old_obj;
	dra_hand(arg, new_obj, false);
}

static void dra_delete(void *arg, const cJSON *obj)
{
	dra_hand(arg, obj, true);
}

/* Hand the sink the Configuration `cm` holds (NULL: no ConfigMap). */
static void kueue_report(tau_inventory_dra_watch *w, const cJSON *cm)
{
	const char *doc =
	        cm ? tau_json_member_str(tau_json_find(cm, "data"), TAU_INVENTORY_KUEUE_CONFIG_KEY)
	           : NULL;
	tau_kueue_config *cfg = NULL;
	char error[1024];

	if (w->sink.kueue_config == NULL)
		return;
	if (cm != NULL && doc == NULL &&
	    cJSON_GetObjectItemCaseSensitive(tau_json_find(cm, "data"),
	                                     TAU_INVENTORY_KUEUE_CONFIG_KEY) != NULL) {
		snprintf(error, sizeof(error), "ConfigMap %.63s/%.253s: %s is not a string",
		         w->kueue_namespace, w->kueue_configmap, TAU_INVENTORY_KUEUE_CONFIG_KEY);
		goto refused;
	}
	if (doc == NULL) {
		w->sink.kueue_config(w->sink.arg, NULL, NULL);
		return;
	}
	if (tau_kueue_config_parse(&cfg, doc, strlen(doc)) < 0) {
		snprintf(error, sizeof(error), "ConfigMap %.63s/%.253s key %s: %.512s",
		         w->kueue_namespace, w->kueue_configmap, TAU_INVENTORY_KUEUE_CONFIG_KEY,
		         tau_error_last()->msg);
		goto refused;
	}
	w->sink.kueue_config(w->sink.arg, cfg, NULL);
	tau_kueue_config_free(cfg);
	return;
refused:
	tau_log_warn("kueue configuration unreadable: DRA classes mapped by Kueue count nothing",
	             "error", error, NULL);
	w->sink.kueue_config(w->sink.arg, NULL, error);
}

static void kueue_add(void *arg, const cJSON *obj)
{
	kueue_report(arg, obj);
}

static void kueue_update(void *arg, const cJSON *old_obj, const cJSON *new_obj)
{
	(void)old_obj;
	kueue_report(arg, new_obj);
}

static void kueue_delete(void *arg, const cJSON *obj)
{
	(void)obj;
	kueue_report(arg, NULL);
}

/* A complete list with nothing in it delivers no add: say "no ConfigMap" then. */
static void kueue_synced(void *arg)
{
	tau_inventory_dra_watch *w = arg;

	if (tau_kube_informer_count(w->informers[KUEUE]) == 0)
		kueue_report(w, NULL);
}

static char *dup_or(const char *s, const char *dflt)
{
	const char *v = (s != NULL && s[0] != '\0') ? s : dflt;
	size_t n = strlen(v) + 1;
	char *d = malloc(n);

	if (d != NULL)
		memcpy(d, v, n);
	return d;
}

int tau_inventory_dra_watch_new(tau_inventory_dra_watch **out, tau_kube_loop *loop,
                                const tau_inventory_dra_watch_options *opts,
                                const tau_inventory_dra_sink *sink)
{
	tau_inventory_dra_watch *w = calloc(1, sizeof(*w));
	tau_kube_handlers sh = {
	        .on_add = dra_add, .on_update = dra_update, .on_delete = dra_delete};
	tau_kube_handlers ch = sh;
	tau_kube_handlers kh = {
	        .on_add = kueue_add, .on_update = kueue_update, .on_delete = kueue_delete};
	tau_kube_informer_options dra = {.transform = prune, .not_served_is_empty = true};
	tau_kube_informer_options ko = {.transform = prune, .on_synced = kueue_synced};
	char selector[300];
	int rc;

	if (w == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	if (sink != NULL)
		w->sink = *sink;
	w->kueue_namespace =
	        dup_or(opts ? opts->kueue_namespace : NULL, TAU_INVENTORY_KUEUE_CONFIG_NAMESPACE);
	w->kueue_configmap =
	        dup_or(opts ? opts->kueue_configmap : NULL, TAU_INVENTORY_KUEUE_CONFIG_NAME);
	if (w->kueue_namespace == NULL || w->kueue_configmap == NULL) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto fail;
	}
	if (strlen(w->kueue_configmap) > 253) {
		rc = tau_error_set(TAU_EINVAL, "Kueue ConfigMap name longer than 253 characters");
		goto fail;
	}
	/*
	 * Not only a filter: the chart grants list and watch on this one name (ClusterRole rule
	 * with resourceNames), and the API server authorizes a list or watch against
	 * resourceNames only when its fieldSelector requires metadata.name exactly (apiserver
	 * endpoints/request/requestinfo.go takes the request's name from it; Kubernetes RBAC
	 * docs, "Referring to resources").  A namespace that does not exist lists empty.
	 */
	snprintf(selector, sizeof(selector), "metadata.name=%s", w->kueue_configmap);
	ko.namespace = w->kueue_namespace;
	ko.field_selector = selector;
	w->slices_of = (dra_informer){w, TAU_INVENTORY_DRA_SLICE};
	w->classes_of = (dra_informer){w, TAU_INVENTORY_DRA_CLASS};
	sh.arg = &w->slices_of;
	ch.arg = &w->classes_of;
	kh.arg = w;
	if ((rc = tau_kube_informer_new(&w->informers[SLICES], loop,
	                                &tau_inventory_res_resourceslices, &dra, &sh)) < 0 ||
	    (rc = tau_kube_informer_new(&w->informers[CLASSES], loop,
	                                &tau_inventory_res_deviceclasses, &dra, &ch)) < 0 ||
	    (rc = tau_kube_informer_new(&w->informers[KUEUE], loop, &tau_kube_res_configmaps, &ko,
	                                &kh)) < 0)
		goto fail;
	*out = w;
	return 0;
fail:
	tau_inventory_dra_watch_free(w);
	return rc;
}

void tau_inventory_dra_watch_start(tau_inventory_dra_watch *w)
{
	for (size_t i = 0; i < N_INFORMERS; i++)
		tau_kube_informer_start(w->informers[i]);
}

bool tau_inventory_dra_watch_synced(tau_inventory_dra_watch *w)
{
	if (w == NULL)
		return false;
	for (size_t i = 0; i < N_INFORMERS; i++)
		if (!tau_kube_informer_has_synced(w->informers[i]))
			return false;
	return true;
}

void tau_inventory_dra_watch_free(tau_inventory_dra_watch *w)
{
	if (w == NULL)
		return;
	for (size_t i = N_INFORMERS; i-- > 0;)
		tau_kube_informer_free(w->informers[i]);
	tau_free_many(w->kueue_namespace, w->kueue_configmap);
	free(w);
}
