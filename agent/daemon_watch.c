/*
 * daemon_watch.c - the informers that feed tau-node-agent's event loop.
 *
 * The one idea: the kube loop thread decides nothing.  Its handlers only set a flag (an
 * object changed; a pod changed, so ask kubelet's pod-resources again) and write the loop's
 * eventfd; the loop copies what it needs from the caches when it rebuilds.  Each informer
 * keeps only what the inventory reads (tau_agent_inventory_prune).
 */
#include "daemon.h"

#include "tau/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void wake_loop(tau_agent_daemon *a)
{
	uint64_t one = 1;

	if (write(a->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		return; /* nothing better to do on the kube thread */
}

static void on_kube_synced(void *arg)
{
	wake_loop(arg);
}

static void on_kube_add(void *arg, const cJSON *obj)
{
	tau_agent_daemon *a = arg;

	(void)obj;
	atomic_store(&a->kube_dirty, true);
	wake_loop(a);
}

static void on_kube_update(void *arg, const cJSON *old_obj, const cJSON *new_obj)
{
	(void)old_obj;
	on_kube_add(arg, new_obj);
}

static void on_kube_delete(void *arg, const cJSON *last_obj)
{
	on_kube_add(arg, last_obj);
}

/* A pod on this node came, changed or went: its devices may have too. */
static void on_pod_add(void *arg, const cJSON *obj)
{
	tau_agent_daemon *a = arg;

	atomic_store(&a->pods_dirty, true);
	on_kube_add(arg, obj);
}

static void on_pod_update(void *arg, const cJSON *old_obj, const cJSON *new_obj)
{
	(void)old_obj;
	on_pod_add(arg, new_obj);
}

static void on_pod_delete(void *arg, const cJSON *last_obj)
{
	on_pod_add(arg, last_obj);
}

/* The informers cache only what the inventory reads (tau_agent_inventory_prune). */
static void prune_node(void *arg, cJSON *obj)
{
	(void)arg;
	tau_agent_inventory_prune(obj, TAU_AGENT_OBJECT_NODE);
}

static void prune_csinode(void *arg, cJSON *obj)
{
	(void)arg;
	tau_agent_inventory_prune(obj, TAU_AGENT_OBJECT_CSINODE);
}

static void prune_pod(void *arg, cJSON *obj)
{
	(void)arg;
	tau_agent_inventory_prune(obj, TAU_AGENT_OBJECT_POD);
}

static int start_informer(tau_kube_informer **out, tau_agent_daemon *a,
                          const tau_kube_resource *res, const char *field_selector,
                          void (*prune)(void *, cJSON *))
{
	tau_kube_informer_options io;
	tau_kube_handlers h;
	int rc;

	memset(&io, 0, sizeof(io));
	io.field_selector = field_selector;
	io.transform = prune;
	io.on_synced = on_kube_synced;
	memset(&h, 0, sizeof(h));
	h.on_add = res == &tau_kube_res_pods ? on_pod_add : on_kube_add;
	h.on_update = res == &tau_kube_res_pods ? on_pod_update : on_kube_update;
	h.on_delete = res == &tau_kube_res_pods ? on_pod_delete : on_kube_delete;
	h.arg = a;
	rc = tau_kube_informer_new(out, a->loop, res, &io, &h);
	if (rc < 0)
		return rc;
	tau_kube_informer_start(*out);
	return 0;
}

cJSON *tau_agent_daemon_cached(tau_kube_informer *inf, const char *name, const char *what,
                               char *problem, size_t cap, const char **problem_out)
{
	cJSON *obj = NULL;
	int rc;

	*problem_out = NULL;
	if (!tau_kube_informer_has_synced(inf)) {
		snprintf(problem, cap, "%s %s not listed from the API yet", what, name);
		*problem_out = problem;
		return NULL;
	}
	rc = tau_kube_informer_get(&obj, inf, NULL, name);
	if (rc == -TAU_ENOTFOUND) {
		snprintf(problem, cap, "%s %s does not exist", what, name);
		*problem_out = problem;
		return NULL;
	}
	if (rc < 0) {
		snprintf(problem, cap, "cannot copy %s %s: %.300s", what, name,
		         tau_error_last()->msg);
		*problem_out = problem;
		return NULL;
	}
	return obj;
}

int tau_agent_daemon_watch(tau_agent_daemon *a)
{
	char field[300];
	int rc;

	snprintf(field, sizeof(field), "metadata.name=%s", a->cfg->node_name);
	if ((rc = start_informer(&a->node_inf, a, &tau_kube_res_nodes, field, prune_node)) < 0 ||
	    (rc = start_informer(&a->csinode_inf, a, &tau_kube_res_csinodes, field,
	                         prune_csinode)) < 0)
		return rc;
	snprintf(field, sizeof(field), "spec.nodeName=%s", a->cfg->node_name);
	return start_informer(&a->pods_inf, a, &tau_kube_res_pods, field, prune_pod);
}
