/*
 * agent.c - the event loop of tau-node-agent, and --once.
 *
 * The one idea: one thread decides everything.  Three helpers feed it and
 * never decide anything themselves: the kube loop thread (informers on the
 * agent's own Node, its CSINode and the pods on the node) and the rpc CQ
 * thread (the Report stream) only set a flag or queue an event and write an
 * eventfd; the plugin registry arrives as an inotify fd.  The main thread
 * polls those fds plus a signalfd, with a timeout equal to the next timer
 * (heartbeat, ack watchdog, periodic re-probe), so it is idle between events.
 *
 * After anything changes the inventory is rebuilt from scratch
 * (level-triggered) and its digest compared with the last one; the report
 * session (report.h) then decides whether a new report goes out.  The host
 * probe is cached and rerun only when the registry changed, the periodic
 * timer fired, or the set of CSI driver names changed, because NVML init
 * is slow on real GPU hosts and Node status updates are frequent; a pod
 * event on the node re-asks only kubelet's pod-resources (two local calls).
 *
 * With --node-conditions every rebuild also compares the conditions the agent owns
 * (nodeconditions.h) with the Node in the informer's cache and patches nodes/<name>/status
 * only when a status, reason or message differs; a refused patch is logged once and retried
 * with a growing delay, and never stops the agent.
 */
#include "agent.h"

#include "http.h"
#include "nodeconditions.h"
#include "report.h"
#include "stream.h"

#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/log.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#ifndef TAU_VERSION_STRING
#define TAU_VERSION_STRING "0.0.0"
#endif

/* How long to wait for CSINode and pods to list before reporting without them. */
#define SYNC_GRACE_MS 10000
/* While an informer has not listed yet, re-check this often after the grace period
 * (before it, each informer's on_synced wakes the loop). */
#define SYNC_CHECK_SLOW_MS 5000
/* SIGTERM: how long to wait for the server to close the stream after Stopping. */
#define STOP_WAIT_MS 1200
/* Most reports sent in one loop turn (a RESEND_FULL loop must not spin). */
#define MAX_SENDS_PER_TURN 4
/* --node-conditions: one patch attempt, no retries inside it (it runs on the event loop);
 * after a failure the next attempt waits 5 s, doubling up to 5 min. */
#define CONDITIONS_TIMEOUT_MS   3000
#define CONDITIONS_RETRY_MS     5000
#define CONDITIONS_RETRY_MAX_MS 300000

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------ building */

void tau_agent_probe_cache_free(tau_agent_probe_cache *cache)
{
	if (cache == NULL)
		return;
	tau_agent_host_probe_free(&cache->probe);
	for (size_t i = 0; i < cache->n_names; i++)
		free(cache->names[i]);
	free(cache->names);
	cache->names = NULL;
	cache->n_names = 0;
	cache->valid = false;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

#define SOCKET_SUFFIX     "-reg.sock"
#define SOCKET_SUFFIX_LEN (sizeof(SOCKET_SUFFIX) - 1)

int tau_agent_registry_socket_names(char ***out, size_t *n, const char *host_root)
{
	char dir[PATH_MAX];
	char **names;
	size_t count = 0;
	struct dirent *de;
	DIR *d;
	int len;

	*out = NULL;
	*n = 0;
	if (host_root == NULL || host_root[0] == '\0')
		host_root = "/";
	len = snprintf(dir, sizeof(dir), "%s%s%s", host_root,
	               host_root[strlen(host_root) - 1] == '/' ? "" : "/",
	               &TAU_AGENT_PLUGIN_REGISTRY[1]);
	if (len < 0 || (size_t)len >= sizeof(dir))
		return 0;
	names = calloc(TAU_AGENT_PROBE_MAX_DRIVERS, sizeof(*names));
	if (names == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	d = opendir(dir);
	if (d == NULL) {
		free(names);
		return 0;
	}
	while ((de = readdir(d)) != NULL && count < TAU_AGENT_PROBE_MAX_DRIVERS) {
		size_t l = strlen(de->d_name);

		if (l <= SOCKET_SUFFIX_LEN || de->d_name[0] == '.' ||
		    strcmp(de->d_name + l - SOCKET_SUFFIX_LEN, SOCKET_SUFFIX) != 0)
			continue;
		names[count] = strndup(de->d_name, l - SOCKET_SUFFIX_LEN);
		if (names[count] == NULL) {
			closedir(d);
			free_names(names, count);
			return tau_error_set(TAU_ENOMEM, "out of memory");
		}
		count++;
	}
	closedir(d);
	*out = names;
	*n = count;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Inventory drivers plus registry sockets, sorted, without duplicates. */
static int probe_names(char ***out, size_t *n, const tau_agent_inventory *inv,
                       const char *host_root)
{
	char **sockets = NULL, **names;
	size_t n_sockets = 0, count = 0, total;
	int rc;

	rc = tau_agent_registry_socket_names(&sockets, &n_sockets, host_root);
	if (rc < 0)
		return rc;
	total = inv->n_csi_drivers + n_sockets;
	names = calloc(total ? total : 1, sizeof(*names));
	if (names == NULL) {
		free_names(sockets, n_sockets);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < inv->n_csi_drivers; i++) {
		names[count] = strdup(inv->csi_drivers[i].name);
		if (names[count] == NULL)
			goto nomem;
		count++;
	}
	for (size_t i = 0; i < n_sockets; i++) {
		names[count++] = sockets[i];
		sockets[i] = NULL;
	}
	free_names(sockets, n_sockets);
	sockets = NULL;
	qsort(names, count, sizeof(*names), name_cmp);
	for (size_t i = 1; i < count;) {
		if (strcmp(names[i], names[i - 1]) == 0) {
			free(names[i]);
			memmove(&names[i], &names[i + 1], (count - i - 1) * sizeof(*names));
			count--;
		} else {
			i++;
		}
	}
	*out = names;
	*n = count;
	return 0;
nomem:
	free_names(names, count);
	free_names(sockets, n_sockets);
	return tau_error_set(TAU_ENOMEM, "out of memory");
}

static bool same_names(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

int tau_agent_build(tau_agent_inventory *inv, const tau_agent_inputs *in, const char *host_root,
                    tau_agent_probe_cache *cache, bool reprobe, bool *probed)
{
	char **names = NULL;
	size_t n_names = 0;
	int rc;

	if (probed != NULL)
		*probed = false;
	if (in->node != NULL) {
		rc = tau_agent_inventory_from_node(inv, in->node);
	} else {
		tau_agent_inventory_free(inv);
		rc = tau_agent_inventory_add_problem(
		        inv, "%s", in->node_problem != NULL ? in->node_problem : "Node unknown");
	}
	if (rc == -TAU_ENOMEM)
		return rc;
	if (in->csinode_problem != NULL &&
	    tau_agent_inventory_add_problem(inv, "%s", in->csinode_problem) < 0)
		return -TAU_ENOMEM;
	if (tau_agent_inventory_apply_csinode(inv, in->csinode) == -TAU_ENOMEM)
		return -TAU_ENOMEM;
	if (in->pods_problem != NULL) {
		if (tau_agent_inventory_add_problem(inv, "%s", in->pods_problem) < 0)
			return -TAU_ENOMEM;
	} else if (in->pods != NULL &&
	           tau_agent_inventory_apply_pods(inv, in->pods) == -TAU_ENOMEM) {
		return -TAU_ENOMEM;
	}

	rc = probe_names(&names, &n_names, inv, host_root);
	if (rc < 0)
		return rc;
	if (reprobe || !cache->valid || !same_names(names, n_names, cache->names, cache->n_names)) {
		tau_agent_probe_cache_free(cache);
		tau_agent_host_probe_init(&cache->probe);
		rc = tau_agent_probe_host(&cache->probe, host_root, (const char *const *)names,
		                          n_names);
		if (rc < 0) {
			free_names(names, n_names);
			tau_agent_probe_cache_free(cache);
			return rc;
		}
		cache->names = names;
		cache->n_names = n_names;
		cache->valid = true;
		names = NULL;
		if (probed != NULL)
			*probed = true;
	} else {
		free_names(names, n_names);
	}
	rc = tau_agent_inventory_apply_host(inv, &cache->probe);
	if (rc < 0)
		return rc;
	return tau_agent_inventory_check_consistency(inv);
}

/* ---------------------------------------------------------------- once */

static int load_client(tau_kube_client **out, const tau_agent_config *cfg)
{
	tau_kube_config_options ko;
	tau_kube_config *kcfg = NULL;
	int rc;

	memset(&ko, 0, sizeof(ko));
	ko.kubeconfig = cfg->kubeconfig;
	ko.context = cfg->context;
	rc = tau_kube_config_load(&kcfg, &ko);
	if (rc < 0) {
		tau_log_error("cannot load the Kubernetes configuration", "error",
		              tau_error_last()->msg, NULL);
		return rc;
	}
	/* --once is a one-shot command: kubectl's --request-timeout (0, the default: no limit on
	 * a request, but an API that cannot be reached fails at once, without retries). */
	if (cfg->once)
		tau_kube_config_set_request_timeout(kcfg, (uint64_t)cfg->request_timeout_ms);
	free(kcfg->user_agent);
	kcfg->user_agent = strdup("tau-node-agent/" TAU_VERSION_STRING);
	if (kcfg->user_agent == NULL) {
		/* NULL would silently send the library's user agent instead of ours. */
		tau_kube_config_free(kcfg);
		rc = tau_error_set(TAU_ENOMEM, "out of memory setting the user agent");
		tau_log_error("cannot make the Kubernetes client", "error", tau_error_last()->msg,
		              NULL);
		return rc;
	}
	rc = tau_kube_client_new(out, kcfg);
	if (rc < 0)
		tau_log_error("cannot make the Kubernetes client", "error", tau_error_last()->msg,
		              NULL);
	tau_kube_config_free(kcfg);
	return rc;
}

static void api_problem(char *buf, size_t cap, const char *what, const char *name, int rc)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();

	if (rc == -TAU_ENOTFOUND)
		snprintf(buf, cap, "%s %s does not exist", what, name);
	else if (e->http_code != 0)
		snprintf(buf, cap, "cannot read %s %s: HTTP %d %s: %.300s", what, name,
		         e->http_code, e->reason, e->message);
	else
		snprintf(buf, cap, "cannot read %s %s: %.400s", what, name, tau_error_last()->msg);
}

int tau_agent_once(const tau_agent_config *cfg, FILE *out)
{
	tau_kube_client *kc = NULL;
	cJSON *node = NULL, *csinode = NULL, *pods = NULL, *json = NULL;
	char node_problem[512], csinode_problem[512], pods_problem[512], field[300];
	tau_agent_inventory inv;
	tau_agent_probe_cache cache;
	tau_agent_inputs in;
	tau_kube_list_options lo;
	char *text = NULL;
	int exit_code = 2;
	int rc;

	tau_agent_inventory_init(&inv);
	memset(&cache, 0, sizeof(cache));
	memset(&in, 0, sizeof(in));
	if (load_client(&kc, cfg) < 0)
		goto out;
	exit_code = 1;

	rc = tau_kube_get(&node, kc, &tau_kube_res_nodes, NULL, cfg->node_name);
	if (rc < 0) {
		api_problem(node_problem, sizeof(node_problem), "Node", cfg->node_name, rc);
		tau_log_error("cannot read the Node", "node", cfg->node_name, "error", node_problem,
		              NULL);
		in.node_problem = node_problem;
	}
	in.node = node;
	rc = tau_kube_get(&csinode, kc, &tau_kube_res_csinodes, NULL, cfg->node_name);
	if (rc < 0) {
		api_problem(csinode_problem, sizeof(csinode_problem), "CSINode", cfg->node_name,
		            rc);
		in.csinode_problem = csinode_problem;
	}
	in.csinode = csinode;
	memset(&lo, 0, sizeof(lo));
	snprintf(field, sizeof(field), "spec.nodeName=%s", cfg->node_name);
	lo.field_selector = field;
	rc = tau_kube_list_all(&pods, kc, &tau_kube_res_pods, NULL, &lo);
	if (rc < 0) {
		api_problem(pods_problem, sizeof(pods_problem), "pods on node", cfg->node_name, rc);
		in.pods_problem = pods_problem;
	}
	in.pods = pods;

	rc = tau_agent_build(&inv, &in, cfg->host_root, &cache, true, NULL);
	if (rc == 0)
		rc = tau_agent_inventory_to_json(&json, &inv);
	/* Host files (sysfs) may hold any bytes: print only valid UTF-8. */
	if (rc == 0 && (rc = tau_json_fix_utf8(json)) > 0)
		rc = 0;
	if (rc == 0 && (text = cJSON_Print(json)) == NULL)
		rc = -TAU_ENOMEM;
	if (rc < 0) {
		tau_log_error("cannot build the inventory", "error", tau_error_last()->msg, NULL);
		goto out;
	}
	fprintf(out, "%s\n", text);
	fflush(out);
	exit_code = node != NULL ? 0 : 1;
out:
	free(text);
	cJSON_Delete(json);
	cJSON_Delete(node);
	cJSON_Delete(csinode);
	cJSON_Delete(pods);
	tau_agent_inventory_free(&inv);
	tau_agent_probe_cache_free(&cache);
	tau_kube_client_free(kc);
	return exit_code;
}

/* ---------------------------------------------------------------- daemon */

typedef struct agent {
	bool config_error; /* setup failed on the configuration (kubeconfig, CA, listen): exit 2 */
	const tau_agent_config *cfg;
	tau_kube_client *kc;
	tau_kube_loop *loop;
	bool loop_started;
	tau_kube_informer *node_inf, *csinode_inf, *pods_inf;
	tau_agent_registry_watch *regw;
	tau_agent_stream *stream;
	tau_http_server *http;
	tau_agent_metrics metrics;
	tau_agent_session session;
	int sig_fd;
	int wake_fd;
	atomic_bool kube_dirty;
	atomic_bool pods_dirty; /* a pod on the node changed: ask kubelet's pod-resources again */

	int64_t start_ms;
	int64_t next_probe_ms;
	bool host_dirty;
	bool synced_all; /* all three informers listed */
	bool built;      /* an inventory exists */
	tau_agent_inventory inv;
	char digest[65];
	tau_agent_problem_list logged; /* the problems last logged, to log each once */
	int64_t observed_ms;           /* wall clock of the build that produced `digest` */
	char failed_digest[65];
	tau_agent_probe_cache cache;

	/* --node-conditions */
	cJSON *cond_written;     /* the conditions of the last accepted patch */
	char cond_rv[64];        /* the cached Node's resourceVersion when they were written */
	int64_t cond_retry_ms;   /* after a failure, not before this (monotonic); 0: none due */
	int64_t cond_backoff_ms; /* the last delay */
	char *cond_error;        /* the failure last logged (each distinct one is logged once) */

	bool stopping;
	int64_t stop_deadline_ms;
	bool stop_closed;
} agent;

static void wake_loop(agent *a)
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
	agent *a = arg;

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
	agent *a = arg;

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

static int start_informer(tau_kube_informer **out, agent *a, const tau_kube_resource *res,
                          const char *field_selector, void (*prune)(void *, cJSON *))
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

/* Copy of one object from an informer cache; NULL with a problem text when absent. */
static cJSON *cached_object(tau_kube_informer *inf, const char *name, const char *what,
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

/* PATCH nodes/<name>/status, bounded: one attempt of at most CONDITIONS_TIMEOUT_MS. */
static int patch_node_status(agent *a, const char *patch)
{
	tau_kube_request rq;
	char *path = NULL;
	int rc;

	rc = tau_kube_path(&path, &tau_kube_res_nodes, NULL, a->cfg->node_name, "status");
	if (rc < 0)
		return rc;
	memset(&rq, 0, sizeof(rq));
	rq.method = "PATCH";
	rq.path = path;
	rq.body = patch;
	rq.body_len = strlen(patch);
	rq.content_type = "application/strategic-merge-patch+json";
	rq.timeout_ms = CONDITIONS_TIMEOUT_MS;
	rq.max_retries = 0;
	rc = tau_kube_client_request(NULL, a->kc, &rq);
	free(path);
	return rc;
}

static const char *cond_summary(char *buf, size_t cap, const cJSON *conds, const char *type)
{
	const cJSON *c = tau_conditions_find(conds, type);
	const char *status = "?", *reason = "?";

	(void)tau_json_get_string(&status, c, "status");
	(void)tau_json_get_string(&reason, c, "reason");
	snprintf(buf, cap, "%s/%s", status, reason);
	return buf;
}

static void conditions_failed(agent *a, int rc)
{
	const tau_kube_api_error *e = tau_kube_api_error_last();
	char error[700], retry[24];
	int64_t delay;

	atomic_fetch_add(&a->metrics.condition_patches_failed, 1);
	if (e->http_code != 0)
		snprintf(error, sizeof(error), "HTTP %d %s: %.500s", e->http_code, e->reason,
		         e->message);
	else
		snprintf(error, sizeof(error), "%.600s", tau_error_last()->msg);
	delay = a->cond_backoff_ms == 0 ? CONDITIONS_RETRY_MS : a->cond_backoff_ms * 2;
	if (delay > CONDITIONS_RETRY_MAX_MS)
		delay = CONDITIONS_RETRY_MAX_MS;
	a->cond_backoff_ms = delay;
	a->cond_retry_ms = mono_ms() + delay;
	snprintf(retry, sizeof(retry), "%lld", (long long)delay);
	if (a->cond_error != NULL && strcmp(a->cond_error, error) == 0) {
		tau_log_debug("cannot publish the node conditions", "node", a->cfg->node_name,
		              "error", error, "retry_in_ms", retry, NULL);
		return;
	}
	free(a->cond_error);
	a->cond_error = strdup(error);
	if (rc == -TAU_EPERM)
		tau_log_error("cannot publish the node conditions: the agent may not patch "
		              "nodes/status (chart value nodeConditions.enabled grants it); the "
		              "agent keeps reporting and retries",
		              "node", a->cfg->node_name, "error", error, "retry_in_ms", retry,
		              NULL);
	else
		tau_log_error("cannot publish the node conditions; the agent keeps reporting and "
		              "retries",
		              "node", a->cfg->node_name, "error", error, "retry_in_ms", retry,
		              NULL);
}

/*
 * --node-conditions: publish what differs between the conditions the agent owns and the Node
 * as the informer has it.  Right after a write the cache may still hold the Node from before
 * it; while its resourceVersion has not moved, the written conditions stand in for it.
 */
static void sync_node_conditions(agent *a, const cJSON *node)
{
	const cJSON *current = NULL;
	const char *rv = "";
	char now[TAU_RFC3339_LEN], gpu[96], net[96];
	cJSON *desired = NULL;
	char *patch = NULL;
	int rc;

	if (!a->cfg->node_conditions || node == NULL)
		return;
	if (a->cond_retry_ms != 0 && mono_ms() < a->cond_retry_ms)
		return;
	(void)tau_json_get_array(&current, node, "status.conditions");
	(void)tau_json_get_string(&rv, node, "metadata.resourceVersion");
	if (tau_rfc3339(now, time(NULL)) < 0 ||
	    tau_agent_node_conditions_build(&desired, &a->inv, current, now) < 0) {
		tau_log_error("cannot build the node conditions", "node", a->cfg->node_name,
		              "error", tau_error_last()->msg, NULL);
		return;
	}
	if (tau_agent_node_conditions_published(desired, current) ||
	    (a->cond_written != NULL && strcmp(rv, a->cond_rv) == 0 &&
	     tau_agent_node_conditions_published(desired, a->cond_written))) {
		a->cond_retry_ms = 0;
		goto out;
	}
	rc = tau_agent_node_conditions_patch(&patch, desired);
	if (rc == 0)
		rc = patch_node_status(a, patch);
	if (rc < 0) {
		conditions_failed(a, rc);
		goto out;
	}
	atomic_fetch_add(&a->metrics.condition_patches_ok, 1);
	tau_log_info("node conditions published", "node", a->cfg->node_name, "gpu_healthy",
	             cond_summary(gpu, sizeof(gpu), desired, TAU_AGENT_COND_GPU_HEALTHY),
	             "network_ready",
	             cond_summary(net, sizeof(net), desired, TAU_AGENT_COND_NETWORK_READY), NULL);
	cJSON_Delete(a->cond_written);
	a->cond_written = desired;
	desired = NULL;
	snprintf(a->cond_rv, sizeof(a->cond_rv), "%s", rv);
	a->cond_retry_ms = 0;
	a->cond_backoff_ms = 0;
	free(a->cond_error);
	a->cond_error = NULL;
out:
	free(patch);
	cJSON_Delete(desired);
}

static void rebuild(agent *a)
{
	char node_problem[512], csinode_problem[512], pods_problem[512];
	cJSON *node, *csinode, *pods = NULL;
	tau_agent_inputs in;
	bool reprobe = a->host_dirty;
	bool probed = false;
	char digest[65];
	int rc;

	atomic_store(&a->kube_dirty, false);
	a->host_dirty = false;
	memset(&in, 0, sizeof(in));
	node = cached_object(a->node_inf, a->cfg->node_name, "Node", node_problem,
	                     sizeof(node_problem), &in.node_problem);
	csinode = cached_object(a->csinode_inf, a->cfg->node_name, "CSINode", csinode_problem,
	                        sizeof(csinode_problem), &in.csinode_problem);
	in.node = node;
	in.csinode = csinode;
	if (!tau_kube_informer_has_synced(a->pods_inf)) {
		snprintf(pods_problem, sizeof(pods_problem),
		         "pods on node %s not listed from the API yet", a->cfg->node_name);
		in.pods_problem = pods_problem;
	} else if (tau_kube_informer_snapshot(&pods, a->pods_inf) < 0) {
		snprintf(pods_problem, sizeof(pods_problem), "cannot copy the pods on node %s",
		         a->cfg->node_name);
		in.pods_problem = pods_problem;
	}
	in.pods = pods;

	/*
	 * A pod change between host probes: only kubelet's pod-resources is asked again (two
	 * local calls, deadline-bounded), so a pod taking a device is reported at once rather
	 * than at the next --probe-interval; NVML and the CSI drivers wait for their probe.
	 */
	if (atomic_exchange(&a->pods_dirty, false) && !reprobe && a->cache.valid &&
	    tau_agent_podres_probe(&a->cache.probe.podres, a->cfg->host_root,
	                           TAU_AGENT_PODRESOURCES_TIMEOUT_MS) < 0)
		reprobe = true; /* out of memory: the full probe below starts afresh */
	rc = tau_agent_build(&a->inv, &in, a->cfg->host_root, &a->cache, reprobe, &probed);
	if (rc == 0)
		rc = tau_agent_inventory_digest(digest, &a->inv);
	if (rc == 0)
		sync_node_conditions(a, node);
	cJSON_Delete(node);
	cJSON_Delete(csinode);
	cJSON_Delete(pods);
	atomic_fetch_add(&a->metrics.inventory_builds, 1);
	if (probed)
		atomic_fetch_add(&a->metrics.host_probes, 1);
	if (rc < 0) {
		/* Out of memory: keep the last good digest; the next change retries. */
		tau_log_error("cannot build the inventory", "node", a->cfg->node_name, "error",
		              tau_error_last()->msg, NULL);
		a->host_dirty = a->host_dirty || reprobe;
		return;
	}
	atomic_store(&a->metrics.problems, (uint_fast64_t)a->inv.problems.n);
	if (a->built && strcmp(digest, a->digest) == 0)
		return;
	/* Log each problem once, when it appears (it stays in every report), and once when it
	 * goes: a new digest for another reason does not repeat the problems that stayed. */
	for (size_t i = 0; i < a->inv.problems.n; i++)
		if (!tau_agent_problem_list_has(&a->logged, a->inv.problems.items[i]))
			tau_log_warn("inventory problem", "node", a->cfg->node_name, "problem",
			             a->inv.problems.items[i], NULL);
	for (size_t i = 0; i < a->logged.n; i++)
		if (!tau_agent_problem_list_has(&a->inv.problems, a->logged.items[i]))
			tau_log_info("inventory problem resolved", "node", a->cfg->node_name,
			             "problem", a->logged.items[i], NULL);
	(void)tau_agent_problem_list_copy(&a->logged, &a->inv.problems); /* short: re-logged */
	memcpy(a->digest, digest, sizeof(a->digest));
	a->observed_ms = wall_ms();
	a->built = true;
	tau_log_info("inventory changed", "node", a->cfg->node_name, "digest", a->digest,
	             "resource_version", a->inv.resource_version, NULL);
}

static void note_sent(agent *a, tau_agent_action what, const char *digest, int64_t now)
{
	tau_agent_session_sent(&a->session, what, digest, now);
	atomic_store(&a->metrics.last_report_ms, wall_ms());
}

static int send_inventory(agent *a, int64_t now)
{
	Tau__Inventory__V1__NodeInventory *msg = NULL;
	Tau__Inventory__V1__AgentReport report;
	uint64_t seq = tau_agent_session_next_seq(&a->session);
	char seqbuf[24];
	int rc;

	rc = tau_agent_inventory_to_proto(&msg, &a->inv, a->digest, a->observed_ms,
	                                  TAU_VERSION_STRING);
	if (rc < 0)
		return rc;
	tau_agent_report_init_inventory(&report, seq, msg);
	rc = tau_agent_stream_send(a->stream, &report);
	tau_agent_node_inventory_free(msg);
	if (rc < 0)
		return rc;
	note_sent(a, TAU_AGENT_ACTION_INVENTORY, a->digest, now);
	atomic_fetch_add(&a->metrics.inventories_sent, 1);
	snprintf(seqbuf, sizeof(seqbuf), "%" PRIu64, seq);
	tau_log_info("inventory sent", "node", a->cfg->node_name, "seq", seqbuf, "digest",
	             a->digest, NULL);
	return 0;
}

static int send_heartbeat(agent *a, int64_t now)
{
	Tau__Inventory__V1__Heartbeat hb = TAU__INVENTORY__V1__HEARTBEAT__INIT;
	Tau__Inventory__V1__AgentReport report;
	char seqbuf[24];
	int rc;

	hb.sent_unix_ms = wall_ms();
	hb.digest = a->session.sent_digest;
	tau_agent_report_init_heartbeat(&report, tau_agent_session_next_seq(&a->session), &hb);
	rc = tau_agent_stream_send(a->stream, &report);
	if (rc < 0)
		return rc;
	snprintf(seqbuf, sizeof(seqbuf), "%" PRIu64, report.seq);
	note_sent(a, TAU_AGENT_ACTION_HEARTBEAT, NULL, now);
	atomic_fetch_add(&a->metrics.heartbeats_sent, 1);
	tau_log_debug("heartbeat sent", "seq", seqbuf, NULL);
	return 0;
}

/* Ask the session what is due and do it, a bounded number of times. */
static void drive_session(agent *a)
{
	for (int i = 0; i < MAX_SENDS_PER_TURN && !a->stopping; i++) {
		int64_t now = mono_ms();
		tau_agent_action act =
		        tau_agent_session_next(&a->session, now, a->built ? a->digest : NULL);
		int rc = 0;

		if (act == TAU_AGENT_ACTION_INVENTORY && strcmp(a->digest, a->failed_digest) == 0)
			act = TAU_AGENT_ACTION_NONE; /* already failed to send this one */
		switch (act) {
		case TAU_AGENT_ACTION_NONE:
			return;
		case TAU_AGENT_ACTION_INVENTORY:
			rc = send_inventory(a, now);
			if (rc < 0 && rc != -TAU_EAGAIN) {
				tau_log_error("cannot send the inventory", "node",
				              a->cfg->node_name, "error", tau_error_last()->msg,
				              NULL);
				memcpy(a->failed_digest, a->digest, sizeof(a->failed_digest));
			}
			break;
		case TAU_AGENT_ACTION_HEARTBEAT:
			rc = send_heartbeat(a, now);
			break;
		case TAU_AGENT_ACTION_RECONNECT: {
			char secs[24];

			snprintf(secs, sizeof(secs), "%u",
			         a->session.heartbeat_s * TAU_AGENT_ACK_TIMEOUT_INTERVALS);
			tau_log_warn("no ack from the aggregator; reconnecting", "waited_s", secs,
			             NULL);
			tau_agent_session_closed(&a->session);
			atomic_store(&a->metrics.connected, false);
			if (tau_agent_stream_restart(a->stream) < 0)
				tau_log_error("cannot reopen the stream", "error",
				              tau_error_last()->msg, NULL);
			return;
		}
		}
		if (rc < 0)
			return; /* -TAU_EAGAIN: the stream just ended; its CLOSED event follows */
	}
}

static void handle_stream_events(agent *a)
{
	tau_agent_stream_event ev;

	while (tau_agent_stream_poll(a->stream, &ev)) {
		char b1[24], b2[24];

		switch (ev.type) {
		case TAU_AGENT_EV_CONNECTED:
			if (a->stopping)
				break;
			tau_agent_session_connected(&a->session, mono_ms());
			a->failed_digest[0] = '\0';
			if (atomic_fetch_add(&a->metrics.connects, 1) > 0)
				atomic_fetch_add(&a->metrics.reconnects, 1);
			atomic_store(&a->metrics.connected, true);
			tau_log_info("connected to the aggregator", "aggregator",
			             a->cfg->aggregator, NULL);
			break;
		case TAU_AGENT_EV_ACK: {
			tau_agent_ack_result r = tau_agent_session_ack(
			        &a->session, ev.seq, ev.interval_s, ev.status, mono_ms());

			snprintf(b1, sizeof(b1), "%" PRIu64, ev.seq);
			if (r == TAU_AGENT_ACK_REJECTED)
				tau_log_warn("aggregator rejected a report", "seq", b1, "reason",
				             ev.message, NULL);
			else if (r == TAU_AGENT_ACK_RESEND)
				tau_log_info("aggregator asked for the full inventory", "seq", b1,
				             "reason", ev.message, NULL);
			else if (r == TAU_AGENT_ACK_IGNORED)
				tau_log_debug("ack ignored", "seq", b1, NULL);
			break;
		}
		case TAU_AGENT_EV_CLOSED:
			snprintf(b1, sizeof(b1), "%d", ev.status);
			snprintf(b2, sizeof(b2), "%d", ev.retry_ms);
			if (ev.token_error)
				tau_log_error(
				        "cannot re-read the token file; keeping the old token",
				        "error", ev.message, NULL);
			else if (a->stopping)
				tau_log_info("stream closed", "code", b1, "message", ev.message,
				             NULL);
			else
				tau_log_warn("stream to the aggregator ended", "aggregator",
				             a->cfg->aggregator, "code", b1, "message", ev.message,
				             "retry_in_ms", b2, NULL);
			tau_agent_session_closed(&a->session);
			atomic_store(&a->metrics.connected, false);
			if (a->stopping)
				a->stop_closed = true;
			break;
		}
	}
}

static void begin_stop(agent *a, const char *reason)
{
	Tau__Inventory__V1__Stopping st = TAU__INVENTORY__V1__STOPPING__INIT;
	Tau__Inventory__V1__AgentReport report;
	char sig[32];

	snprintf(sig, sizeof(sig), "%s", reason);
	a->stopping = true;
	a->stop_deadline_ms = mono_ms() + STOP_WAIT_MS;
	tau_log_info("stopping", "reason", reason, NULL);
	if (a->stream == NULL || !a->session.connected) {
		a->stop_closed = true;
		return;
	}
	st.reason = sig;
	tau_agent_report_init_stopping(&report, tau_agent_session_next_seq(&a->session), &st);
	if (tau_agent_stream_send(a->stream, &report) < 0 ||
	    tau_agent_stream_close_send(a->stream) < 0) {
		a->stop_closed = true;
		return;
	}
	note_sent(a, TAU_AGENT_ACTION_NONE, NULL, mono_ms());
	atomic_fetch_add(&a->metrics.stopping_sent, 1);
}

static bool informers_synced(agent *a)
{
	bool node = tau_kube_informer_has_synced(a->node_inf);

	atomic_store(&a->metrics.node_synced, node);
	return node && tau_kube_informer_has_synced(a->csinode_inf) &&
	       tau_kube_informer_has_synced(a->pods_inf);
}

/* Poll timeout: the earliest timer, or -1. */
static int next_timeout(agent *a, int64_t now)
{
	int64_t t = a->next_probe_ms - now;
	int64_t s = tau_agent_session_wait_ms(&a->session, now);

	if (s >= 0 && s < t)
		t = s;
	if (!a->synced_all) {
		int64_t c = now - a->start_ms < SYNC_GRACE_MS ? a->start_ms + SYNC_GRACE_MS - now
		                                              : SYNC_CHECK_SLOW_MS;

		if (c < t)
			t = c;
	}
	if (a->cond_retry_ms != 0 && a->cond_retry_ms - now < t)
		t = a->cond_retry_ms - now;
	if (a->stopping && a->stop_deadline_ms - now < t)
		t = a->stop_deadline_ms - now;
	if (t < 0)
		t = 0;
	if (t > INT_MAX)
		t = INT_MAX;
	return (int)t;
}

static int setup(agent *a)
{
	char field[300];
	tau_agent_stream_opts so;
	int rc;

	rc = load_client(&a->kc, a->cfg);
	if (rc < 0) {
		a->config_error = rc != -TAU_ENOMEM;
		return rc;
	}
	rc = tau_kube_loop_new(&a->loop, a->kc);
	if (rc < 0)
		goto fail;
	snprintf(field, sizeof(field), "metadata.name=%s", a->cfg->node_name);
	if ((rc = start_informer(&a->node_inf, a, &tau_kube_res_nodes, field, prune_node)) < 0 ||
	    (rc = start_informer(&a->csinode_inf, a, &tau_kube_res_csinodes, field,
	                         prune_csinode)) < 0)
		goto fail;
	snprintf(field, sizeof(field), "spec.nodeName=%s", a->cfg->node_name);
	if ((rc = start_informer(&a->pods_inf, a, &tau_kube_res_pods, field, prune_pod)) < 0)
		goto fail;
	rc = tau_kube_loop_start_thread(a->loop);
	if (rc < 0)
		goto fail;
	a->loop_started = true;

	rc = tau_agent_registry_watch_open(&a->regw, a->cfg->host_root);
	if (rc < 0) {
		/* Not fatal: the periodic re-probe still notices sockets, only later. */
		tau_log_warn("cannot watch the plugin registry; relying on the periodic probe",
		             "error", tau_error_last()->msg, NULL);
		a->regw = NULL;
	}

	memset(&so, 0, sizeof(so));
	so.target = a->cfg->aggregator;
	so.ca_file = a->cfg->insecure ? NULL : a->cfg->ca_file;
	so.token_file = a->cfg->token_file;
	so.wake_fd = a->wake_fd;
	rc = tau_agent_stream_open(&a->stream, &so);
	if (rc < 0) {
		/* An unreadable CA or token file, a CA without a certificate. */
		a->config_error = rc == -TAU_EINVAL || rc == -TAU_EIO || rc == -TAU_ETOOBIG;
		tau_log_error("cannot open the stream to the aggregator", "aggregator",
		              a->cfg->aggregator, "error", tau_error_last()->msg, NULL);
		return rc;
	}
	if (a->cfg->http_listen != NULL) {
		int port = 0;
		char portbuf[16];

		rc = tau_agent_http_start(&a->http, a->cfg->http_listen, &a->metrics, &port);
		if (rc < 0) {
			a->config_error = rc != -TAU_ENOMEM;
			tau_log_error("cannot serve HTTP", "listen", a->cfg->http_listen, "error",
			              tau_error_last()->msg, NULL);
			return rc;
		}
		snprintf(portbuf, sizeof(portbuf), "%d", port);
		tau_log_info("serving /healthz and /metrics", "listen", a->cfg->http_listen, "port",
		             portbuf, NULL);
	}
	return 0;
fail:
	tau_log_error("cannot start the Kubernetes watches", "error", tau_error_last()->msg, NULL);
	return rc;
}

static void teardown(agent *a)
{
	tau_http_server_stop(a->http);
	tau_agent_stream_free(a->stream);
	if (a->loop_started)
		tau_kube_loop_join(a->loop);
	tau_kube_informer_free(a->node_inf);
	tau_kube_informer_free(a->csinode_inf);
	tau_kube_informer_free(a->pods_inf);
	tau_kube_loop_free(a->loop);
	tau_kube_client_free(a->kc);
	tau_agent_registry_watch_free(a->regw);
	tau_agent_inventory_free(&a->inv);
	tau_agent_problem_list_free(&a->logged);
	tau_agent_probe_cache_free(&a->cache);
	cJSON_Delete(a->cond_written);
	free(a->cond_error);
	if (a->sig_fd >= 0)
		close(a->sig_fd);
	if (a->wake_fd >= 0)
		close(a->wake_fd);
}

static void read_fd(int fd, void *buf, size_t len)
{
	while (read(fd, buf, len) < 0 && errno == EINTR)
		;
}

int tau_agent_run(const tau_agent_config *cfg)
{
	agent *a;
	sigset_t mask;
	int exit_code = 1;

	a = calloc(1, sizeof(*a));
	if (a == NULL) {
		tau_log_error("out of memory", NULL);
		return 1;
	}
	a->cfg = cfg;
	a->sig_fd = -1;
	a->wake_fd = -1;
	tau_agent_inventory_init(&a->inv);
	tau_agent_session_init(&a->session);

	/* Block before any thread starts, so only the signalfd sees these. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	a->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	a->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (a->sig_fd < 0 || a->wake_fd < 0) {
		tau_log_error("cannot create the event loop fds", "error", strerror(errno), NULL);
		goto out;
	}
	a->start_ms = mono_ms();
	a->next_probe_ms = a->start_ms + (int64_t)cfg->probe_interval_s * 1000;
	a->host_dirty = true;
	tau_log_info("tau-node-agent starting", "version", TAU_VERSION_STRING, "node",
	             cfg->node_name, "aggregator", cfg->aggregator, "host_root", cfg->host_root,
	             "node_conditions", cfg->node_conditions ? "on" : "off", NULL);
	if (setup(a) < 0) {
		if (a->config_error)
			exit_code = 2;
		goto out;
	}

	for (;;) {
		struct pollfd pfd[3];
		nfds_t n = 2;
		int64_t now = mono_ms();
		int ready;

		if (a->stopping && (a->stop_closed || now >= a->stop_deadline_ms))
			break;
		pfd[0].fd = a->sig_fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = a->wake_fd;
		pfd[1].events = POLLIN;
		if (a->regw != NULL && !a->stopping) {
			pfd[2].fd = tau_agent_registry_watch_fd(a->regw);
			pfd[2].events = POLLIN;
			n = 3;
		}
		ready = poll(pfd, n, next_timeout(a, now));
		if (ready < 0 && errno != EINTR) {
			tau_log_error("poll failed", "error", strerror(errno), NULL);
			goto out;
		}
		if (ready > 0 && (pfd[0].revents & POLLIN)) {
			struct signalfd_siginfo si;

			read_fd(a->sig_fd, &si, sizeof(si));
			if (!a->stopping)
				begin_stop(a, si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
		}
		if (ready > 0 && (pfd[1].revents & POLLIN)) {
			uint64_t v;

			read_fd(a->wake_fd, &v, sizeof(v));
		}
		handle_stream_events(a);
		if (a->stopping)
			continue;
		if (n == 3 && (pfd[2].revents & POLLIN)) {
			int r = tau_agent_registry_watch_drain(a->regw);

			if (r < 0)
				tau_log_warn("plugin registry watch failed", "error",
				             tau_error_last()->msg, NULL);
			if (r != 0)
				a->host_dirty = true;
		}
		now = mono_ms();
		if (now >= a->next_probe_ms) {
			a->host_dirty = true;
			a->next_probe_ms = now + (int64_t)cfg->probe_interval_s * 1000;
		}
		if (a->cond_retry_ms != 0 && now >= a->cond_retry_ms)
			atomic_store(&a->kube_dirty, true); /* retry the node conditions */
		if (!a->synced_all) {
			bool all = informers_synced(a);

			if (all || (now - a->start_ms >= SYNC_GRACE_MS &&
			            tau_kube_informer_has_synced(a->node_inf))) {
				/* Newly synced: rebuild even if no object arrived (empty lists). */
				if (all)
					a->synced_all = true;
				if (all || !a->built)
					atomic_store(&a->kube_dirty, true);
			}
		}
		if ((atomic_load(&a->kube_dirty) || a->host_dirty) &&
		    tau_kube_informer_has_synced(a->node_inf) &&
		    (a->synced_all || now - a->start_ms >= SYNC_GRACE_MS))
			rebuild(a);
		drive_session(a);
	}
	exit_code = 0;
out:
	teardown(a);
	free(a);
	return exit_code;
}
