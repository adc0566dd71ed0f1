/*
 * controller.c - the workspace controller's wiring: options, informers on
 * the shared runtime, start and stop.
 *
 * The one idea: this file only says which objects concern which workspace;
 * the runtime (controller/runtime.h) turns events into keys and runs
 * tau_ws_reconcile (reconcile.c) on its worker.  TauWorkspace events concern
 * that workspace (a delete concerns all: v0 promotion and namespace claims
 * depend on the set); TauCluster, Namespace and ClusterQueue events concern
 * all; an owned RoleBinding, LocalQueue or ServiceAccount concerns the
 * workspace its label names.
 *
 * Threads: the caller's kube loop runs the informers (every replica); the
 * runtime's worker reconciles (leader only); the allowlist file watcher
 * triggers every workspace when the file changes.
 */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/mem.h"

#include <stdlib.h>
#include <string.h>

const tau_kube_resource tau_ws_res_workspaces = {"tau.azure.com", "v1alpha1", "workspaces", true};
const tau_kube_resource tau_ws_res_clusters = {"tau.azure.com", "v1alpha1", "clusters", false};
const tau_kube_resource tau_ws_res_rolebindings = {"rbac.authorization.k8s.io", "v1",
                                                   "rolebindings", true};
const tau_kube_resource tau_ws_res_serviceaccounts = {"", "v1", "serviceaccounts", true};
const tau_kube_resource tau_ws_res_localqueues = {"kueue.x-k8s.io", "v1beta2", "localqueues", true};
const tau_kube_resource tau_ws_res_clusterqueues = {"kueue.x-k8s.io", "v1beta2", "clusterqueues",
                                                    false};

#define OWNED_SELECTOR TAU_WS_LABEL_MANAGED_BY "=" TAU_WS_MANAGED_BY

static char *xstrdup(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

/* TauWorkspace events: the workspace itself; a delete concerns every workspace. */
static void workspace_keys(void *arg, tau_controller *ctl, tau_controller_event ev,
                           const cJSON *old_obj, const cJSON *obj)
{
	const char *name = NULL;

	(void)arg;
	(void)old_obj;
	if (ev == TAU_CONTROLLER_DELETED) {
		tau_controller_trigger(ctl, NULL);
		return;
	}
	if (tau_json_get_string(&name, obj, "metadata.name") == 0)
		tau_controller_enqueue_event(ctl, name);
}

static void allowlist_changed(void *arg)
{
	tau_ws_controller *wc = arg;

	tau_controller_trigger(wc->ctl, NULL);
}

int tau_ws_controller_new(tau_ws_controller **out, const tau_ws_controller_opts *opts)
{
	tau_ws_controller *wc = NULL;
	tau_controller_options co = {0};
	int rc = -TAU_ENOMEM;

	if (opts == NULL || opts->client == NULL || opts->loop == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "workspace controller: client and loop are required");
	if (opts->allowlist_selector != NULL && opts->allowlist_file != NULL)
		return tau_error_set(TAU_EINVAL, "workspace controller: set either an allowlist "
		                                 "selector or an allowlist file, not both");
	wc = calloc(1, sizeof(*wc));
	if (wc == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	wc->client = opts->client;
	wc->system_namespace =
	        strdup(opts->system_namespace != NULL ? opts->system_namespace
	                                              : TAU_WS_DEFAULT_SYSTEM_NAMESPACE);
	wc->ns_mode_set = opts->ns_mode_set;
	wc->multiple_workspaces = opts->multiple_workspaces;
	wc->ns_mode = opts->ns_mode;
	wc->flag_allowlist_file = xstrdup(opts->allowlist_file);
	wc->researcher_role = xstrdup(opts->researcher_cluster_role);
	wc->drain_poll_ms = opts->drain_poll_ms != 0 ? opts->drain_poll_ms : 2000;
	if (wc->system_namespace == NULL ||
	    (opts->allowlist_file != NULL && wc->flag_allowlist_file == NULL) ||
	    (opts->researcher_cluster_role != NULL && wc->researcher_role == NULL))
		goto fail;
	if (opts->allowlist_selector != NULL &&
	    (rc = tau_selector_parse(&wc->allowlist_selector, opts->allowlist_selector)) != 0) {
		tau_error_wrap("namespace allowlist selector");
		goto fail;
	}
	if (opts->namespace_map_file != NULL &&
	    (rc = tau_ws_map_load(&wc->map, opts->namespace_map_file)) != 0)
		goto fail;
	if ((rc = tau_ws_allowlist_file_new(&wc->allowlist_file, allowlist_changed, wc)) != 0)
		goto fail;

	co.name = "workspace";
	co.client = opts->client;
	co.loop = opts->loop;
	co.reconcile = tau_ws_reconcile;
	co.arg = wc;
	co.resync_ms = opts->resync_ms != 0 ? opts->resync_ms : TAU_WS_DEFAULT_RESYNC_MS;
	if ((rc = tau_controller_new(&wc->ctl, &co)) != 0)
		goto fail;
	{
		const tau_controller_watch_opts watches[WS_INF_N] = {
		        [WS_INF_WORKSPACES] = {.res = &tau_ws_res_workspaces,
		                               .namespace = wc->system_namespace,
		                               .keys = TAU_CONTROLLER_KEYS_CUSTOM,
		                               .keys_fn = workspace_keys,
		                               .primary = true},
		        [WS_INF_CLUSTER] = {.res = &tau_ws_res_clusters,
		                            .field_selector = "metadata.name=cluster",
		                            .keys = TAU_CONTROLLER_KEYS_ALL},
		        [WS_INF_NAMESPACES] = {.res = &tau_kube_res_namespaces,
		                               .keys = TAU_CONTROLLER_KEYS_ALL},
		        [WS_INF_CQ] = {.res = &tau_ws_res_clusterqueues,
		                       .keys = TAU_CONTROLLER_KEYS_ALL},
		        [WS_INF_RB] = {.res = &tau_ws_res_rolebindings,
		                       .label_selector = OWNED_SELECTOR,
		                       .keys = TAU_CONTROLLER_KEYS_LABEL,
		                       .label = TAU_WS_LABEL_WORKSPACE},
		        [WS_INF_LQ] = {.res = &tau_ws_res_localqueues,
		                       .label_selector = OWNED_SELECTOR,
		                       .keys = TAU_CONTROLLER_KEYS_LABEL,
		                       .label = TAU_WS_LABEL_WORKSPACE},
		        [WS_INF_SA] = {.res = &tau_ws_res_serviceaccounts,
		                       .label_selector = OWNED_SELECTOR,
		                       .keys = TAU_CONTROLLER_KEYS_LABEL,
		                       .label = TAU_WS_LABEL_WORKSPACE},
		};

		for (size_t i = 0; i < WS_INF_N; i++)
			if ((rc = tau_controller_watch(&wc->inf[i], wc->ctl, &watches[i])) != 0)
				goto fail;
	}
	*out = wc;
	return 0;
fail:
	if (rc == -TAU_ENOMEM)
		tau_error_set(TAU_ENOMEM, "out of memory");
	tau_ws_controller_free(wc);
	return rc;
}

int tau_ws_controller_start_informers(tau_ws_controller *wc)
{
	tau_controller_start_informers(wc->ctl);
	return 0;
}

int tau_ws_controller_start(tau_ws_controller *wc)
{
	/* A flag file is followed from the start, so a bad file is reported at once. */
	if (wc->flag_allowlist_file != NULL &&
	    tau_ws_allowlist_file_follow(wc->allowlist_file, wc->flag_allowlist_file) != 0)
		return tau_error_set(TAU_EIO, "cannot start the allowlist watcher");
	return tau_controller_start_worker(wc->ctl);
}

void tau_ws_controller_stop(tau_ws_controller *wc)
{
	if (wc != NULL && wc->ctl != NULL)
		tau_controller_stop_worker(wc->ctl);
}

void tau_ws_controller_free(tau_ws_controller *wc)
{
	if (wc == NULL)
		return;
	tau_ws_controller_stop(wc);
	tau_controller_free(wc->ctl);
	tau_ws_allowlist_file_free(wc->allowlist_file);
	tau_selector_free(wc->allowlist_selector);
	cJSON_Delete(wc->map);
	tau_free_many(wc->system_namespace, wc->flag_allowlist_file, wc->researcher_role);
	free(wc);
}

bool tau_ws_controller_synced(tau_ws_controller *wc)
{
	return tau_controller_synced(wc->ctl);
}

int tau_ws_controller_wait_synced(tau_ws_controller *wc, uint64_t timeout_ms)
{
	return tau_controller_wait_synced(wc->ctl, timeout_ms);
}

uint64_t tau_ws_controller_passes(tau_ws_controller *wc)
{
	return atomic_load(&wc->passes);
}

tau_controller *tau_ws_controller_runtime(tau_ws_controller *wc)
{
	return wc->ctl;
}
