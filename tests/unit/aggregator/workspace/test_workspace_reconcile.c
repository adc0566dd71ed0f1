/*
 * test_workspace_reconcile.c - each reconcile phase of the workspace
 * controller against the fake API server (real client, informers, apply):
 * finalizer, invalid spec, v0, namespace (Managed), access (binding written,
 * then removed when the spec switches to cluster-wide, a foreign binding
 * left alone), queue (a former queue's LocalQueue pruned), identity (an
 * obsolete ServiceAccount revoked), status (written once), deletion (cleanup
 * and finalizer), allowlist from a TauCluster file and the conflict of two
 * allowlist sources.  Wire strings (reasons, condition types) are literals.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_kube.h"
#include "workspace/internal.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"

#define WAIT_MS 5000

typedef struct env {
	fake_kube *fk;
	tau_kube_client *client;
	tau_kube_loop *loop;
	tau_ws_controller *wc;
	char dir[64];
} env;

static const tau_kube_resource *res_ws = &tau_ws_res_workspaces;

static void env_up_opts(env *e, tau_ws_controller_opts *o)
{
	memset(e, 0, sizeof(*e));
	assert_int_equal(fake_kube_start(&e->fk), 0);
	assert_int_equal(fake_kube_client(&e->client, e->fk), 0);
	assert_int_equal(tau_kube_loop_new(&e->loop, e->client), 0);
	o->client = e->client;
	o->loop = e->loop;
	o->system_namespace = "tau-system";
	o->drain_poll_ms = 100;
	assert_int_equal(tau_ws_controller_new(&e->wc, o), 0);
	assert_int_equal(tau_ws_controller_start_informers(e->wc), 0);
	assert_int_equal(tau_kube_loop_start_thread(e->loop), 0);
	assert_int_equal(tau_ws_controller_wait_synced(e->wc, WAIT_MS), 0);
}

static void env_up(env *e)
{
	tau_ws_controller_opts o = {0};

	env_up_opts(e, &o);
}

static void env_down(env *e)
{
	tau_kube_loop_join(e->loop);
	tau_ws_controller_free(e->wc);
	tau_kube_loop_free(e->loop);
	tau_kube_client_free(e->client);
	fake_kube_stop(e->fk);
}

static const char *str(const cJSON *o, const char *path)
{
	const char *s = NULL;

	return tau_json_get_string(&s, o, path) == 0 ? s : NULL;
}

/* Wait until informer `i` caches ns/name at the store's resourceVersion (or both lack it). */
static void sync_cache(env *e, int i, const tau_kube_resource *res, const char *ns,
                       const char *name)
{
	uint64_t end = tau_clock_mono_ms() + WAIT_MS;
	struct timespec ts = {0, 5 * 1000 * 1000};

	for (;;) {
		cJSON *want = fake_kube_get(e->fk, res, ns, name), *have = NULL;
		bool same;

		tau_kube_informer_get(&have, e->wc->inf[i], ns, name);
		same = (want == NULL && have == NULL) ||
		       (want != NULL && have != NULL &&
		        strcmp(str(want, "metadata.resourceVersion"),
		               str(have, "metadata.resourceVersion")) == 0);
		cJSON_Delete(want);
		cJSON_Delete(have);
		if (same)
			return;
		assert_true(tau_clock_mono_ms() < end);
		nanosleep(&ts, NULL);
	}
}

static void seed_ws(env *e, const char *name, const char *spec)
{
	char json[2048];

	snprintf(json, sizeof(json),
	         "{\"apiVersion\":\"tau.azure.com/v1alpha1\",\"kind\":\"TauWorkspace\","
	         "\"metadata\":{\"name\":\"%s\",\"namespace\":\"tau-system\"},\"spec\":%s}",
	         name, spec);
	assert_int_equal(fake_kube_seed(e->fk, res_ws, json), 0);
	sync_cache(e, WS_INF_WORKSPACES, res_ws, "tau-system", name);
}

#define RBAC_SPEC(ns, queue)                                                                       \
	"{\"authorization\":{\"mode\":\"workspace-rbac\"},\"kubernetesSubject\":{\"kind\":"        \
	"\"Group\","                                                                               \
	"\"name\":\"researchers\"},\"role\":\"researcher\",\"target\":{\"namespace\":\"" ns        \
	"\",\"createNamespace\":true},\"queue\":\"" queue "\"}"

#define WIDE_SPEC(ns, queue)                                                                       \
	"{\"authorization\":{\"mode\":\"cluster-wide\"},\"target\":{\"namespace\":\"" ns           \
	"\",\"createNamespace\":true},\"queue\":\"" queue "\"}"

/* One whole pass through the runtime's reconcile function. */
static int reconcile(env *e, const char *name)
{
	tau_controller_result res = {0};

	return tau_ws_reconcile(e->wc, NULL, name, &res);
}

static const cJSON *condition(const cJSON *ws, const char *type)
{
	const cJSON *c;

	cJSON_ArrayForEach(c, tau_json_find(ws, "status.conditions"))
	{
		if (strcmp(str(c, "type"), type) == 0)
			return c;
	}
	return NULL;
}

static void assert_condition(env *e, const char *name, const char *type, const char *status,
                             const char *reason)
{
	cJSON *ws = fake_kube_get(e->fk, res_ws, "tau-system", name);
	const cJSON *c = condition(ws, type);

	assert_non_null(c);
	assert_string_equal(str(c, "status"), status);
	assert_string_equal(str(c, "reason"), reason);
	cJSON_Delete(ws);
}

static const tau_kube_resource *res_rb = &tau_ws_res_rolebindings;
static const tau_kube_resource *res_lq = &tau_ws_res_localqueues;
static const tau_kube_resource *res_sa = &tau_ws_res_serviceaccounts;

static bool exists(env *e, const tau_kube_resource *res, const char *ns, const char *name)
{
	cJSON *o = fake_kube_get(e->fk, res, ns, name);
	bool found = o != NULL;

	cJSON_Delete(o);
	return found;
}

/* ---- tests ---- */

static void test_finalizer_phase(void **state)
{
	env e;
	ws_pass p;
	cJSON *ws;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_non_null(p.ws);
	assert_true(p.spec_ok);
	assert_int_equal(tau_ws_phase_deletion(&p), WS_NEXT);
	assert_int_equal(tau_ws_phase_finalizer(&p), WS_NEXT);
	tau_ws_pass_end(&p);
	ws = fake_kube_get(e.fk, res_ws, "tau-system", "alpha");
	assert_string_equal(
	        cJSON_GetArrayItem(tau_json_find(ws, "metadata.finalizers"), 0)->valuestring,
	        "tau.azure.com/workspace-cleanup");
	cJSON_Delete(ws);
	env_down(&e);
}

/* A spec the CRD might let through (an older CRD) is refused with InvalidSpec. */
static void test_invalid_spec_stops_at_finalizer(void **state)
{
	env e;
	ws_pass p;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha",
	        "{\"authorization\":{\"mode\":\"workspace-rbac\"},\"target\":{\"namespace\":"
	        "\"ml-alpha\"},\"workloadIdentity\":{\"serviceAccountName\":\"Bad_Name\","
	        "\"clientId\":\"x\"}}");
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_false(p.spec_ok);
	assert_int_equal(tau_ws_phase_finalizer(&p), WS_STOP);
	tau_ws_pass_end(&p);
	assert_condition(&e, "alpha", "RBACReady", "False", "InvalidSpec");
	assert_int_equal(fake_kube_count(e.fk, &tau_kube_res_namespaces), 0);
	env_down(&e);
}

static void test_v0_phase_blocks_the_younger(void **state)
{
	env e;
	ws_pass p;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	seed_ws(&e, "beta", RBAC_SPEC("ml-beta", "beta"));
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "beta"), 0);
	assert_int_equal(tau_ws_phase_v0(&p), WS_STOP);
	tau_ws_pass_end(&p);
	assert_condition(&e, "beta", "QueueReady", "False", "BlockedByActiveWorkspace");
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_int_equal(tau_ws_phase_v0(&p), WS_NEXT);
	tau_ws_pass_end(&p);
	env_down(&e);
}

static void test_namespace_phase_creates_owned_namespace(void **state)
{
	env e;
	ws_pass p;
	cJSON *ns;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_int_equal(tau_ws_phase_namespace(&p), WS_NEXT);
	assert_true(p.nsr.resolved);
	assert_string_equal(p.nsr.namespace_name, "ml-alpha");
	tau_ws_pass_end(&p);
	ns = fake_kube_get(e.fk, &tau_kube_res_namespaces, NULL, "ml-alpha");
	assert_non_null(ns);
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(tau_json_find(ns, "metadata.labels"),
	                                                     "app.kubernetes.io/managed-by")
	                            ->valuestring,
	                    "taugrid");
	assert_string_equal(cJSON_GetObjectItemCaseSensitive(tau_json_find(ns, "metadata.labels"),
	                                                     "tau.azure.com/workspace")
	                            ->valuestring,
	                    "alpha");
	cJSON_Delete(ns);
	env_down(&e);
}

/* Issue 12 item 3: switching to cluster-wide removes the binding written before. */
static void test_access_phase_mode_switch_deletes_binding(void **state)
{
	env e;
	ws_pass p;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_true(exists(&e, res_rb, "ml-alpha", "tau-workspace-alpha"));
	assert_condition(&e, "alpha", "RBACReady", "True", "RoleBindingReady");
	/* Someone else's binding in the namespace, labelled as another workspace's. */
	assert_int_equal(
	        fake_kube_seed(e.fk, res_rb,
	                       "{\"metadata\":{\"name\":\"theirs\",\"namespace\":\"ml-alpha\","
	                       "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	                       "\"tau.azure.com/workspace\":\"other\"}},\"roleRef\":{"
	                       "\"kind\":\"ClusterRole\",\"name\":\"view\"}}"),
	        0);

	assert_int_equal(fake_kube_patch(e.fk, res_ws, "tau-system", "alpha",
	                                 "{\"spec\":" WIDE_SPEC("ml-alpha", "alpha") "}"),
	                 0);
	assert_int_equal(fake_kube_patch(e.fk, res_ws, "tau-system", "alpha",
	                                 "{\"spec\":{\"kubernetesSubject\":null,\"role\":null}}"),
	                 0);
	sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_true(p.spec_ok);
	assert_int_equal(p.spec.authz, TAU_WS_AUTHZ_CLUSTER_WIDE);
	assert_int_equal(tau_ws_phase_namespace(&p), WS_NEXT);
	assert_int_equal(tau_ws_phase_access(&p), WS_NEXT);
	assert_int_equal(tau_ws_phase_status(&p), WS_STOP);
	tau_ws_pass_end(&p);
	assert_false(exists(&e, res_rb, "ml-alpha", "tau-workspace-alpha"));
	assert_true(exists(&e, res_rb, "ml-alpha", "theirs"));
	assert_condition(&e, "alpha", "RBACReady", "True", "ClusterWideAuthorization");
	env_down(&e);
}

/* A binding that cannot be removed keeps RBACReady False: access the spec no longer grants. */
static void test_access_phase_failed_removal_is_reported(void **state)
{
	env e;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_int_equal(fake_kube_patch(e.fk, res_ws, "tau-system", "alpha",
	                                 "{\"spec\":{\"authorization\":{\"mode\":\"cluster-wide\"},"
	                                 "\"kubernetesSubject\":null,\"role\":null}}"),
	                 0);
	sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
	fake_kube_fail(e.fk, "DELETE", res_rb, 403, 1);
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_true(exists(&e, res_rb, "ml-alpha", "tau-workspace-alpha"));
	assert_condition(&e, "alpha", "RBACReady", "False", "RoleBindingError");
	sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_false(exists(&e, res_rb, "ml-alpha", "tau-workspace-alpha"));
	assert_condition(&e, "alpha", "RBACReady", "True", "ClusterWideAuthorization");
	env_down(&e);
}

/* A former queue name's LocalQueue goes once nothing routes through it. */
static void test_queue_phase_prunes_former_queue(void **state)
{
	env e;
	ws_pass p;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_true(exists(&e, res_lq, "ml-alpha", "alpha"));
	assert_int_equal(fake_kube_patch(e.fk, res_ws, "tau-system", "alpha",
	                                 "{\"spec\":{\"queue\":\"alpha2\"}}"),
	                 0);
	sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
	/* A Workload still queued on the old queue holds it. */
	assert_int_equal(
	        fake_kube_seed(e.fk, &tau_ws_res_sources[TAU_WS_SRC_WORKLOAD],
	                       "{\"metadata\":{\"name\":\"w1\",\"namespace\":\"ml-alpha\"},"
	                       "\"spec\":{\"queueName\":\"alpha\"}}"),
	        0);
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_int_equal(tau_ws_phase_namespace(&p), WS_NEXT);
	assert_int_equal(tau_ws_phase_queue(&p), WS_NEXT);
	assert_true(p.requeue_ms > 0);
	tau_ws_pass_end(&p);
	assert_true(exists(&e, res_lq, "ml-alpha", "alpha2"));
	assert_true(exists(&e, res_lq, "ml-alpha", "alpha"));

	assert_int_equal(
	        fake_kube_delete(e.fk, &tau_ws_res_sources[TAU_WS_SRC_WORKLOAD], "ml-alpha", "w1"),
	        0);
	assert_int_equal(tau_ws_pass_begin(&p, e.wc, "alpha"), 0);
	assert_int_equal(tau_ws_phase_namespace(&p), WS_NEXT);
	assert_int_equal(tau_ws_phase_queue(&p), WS_NEXT);
	tau_ws_pass_end(&p);
	assert_false(exists(&e, res_lq, "ml-alpha", "alpha"));
	assert_true(exists(&e, res_lq, "ml-alpha", "alpha2"));
	env_down(&e);
}

/* The workload-identity ServiceAccount no longer named is revoked. */
static void test_identity_phase_revokes_obsolete_account(void **state)
{
	env e;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha",
	        "{\"authorization\":{\"mode\":\"workspace-rbac\"},\"kubernetesSubject\":{\"kind\":"
	        "\"Group\",\"name\":\"r\"},\"role\":\"researcher\",\"target\":{\"namespace\":"
	        "\"ml-alpha\",\"createNamespace\":true},\"queue\":\"alpha\",\"workloadIdentity\":{"
	        "\"serviceAccountName\":\"wl-old\",\"clientId\":\"c1\"}}");
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_true(exists(&e, res_sa, "ml-alpha", "wl-old"));
	assert_int_equal(fake_kube_patch(e.fk, res_ws, "tau-system", "alpha",
	                                 "{\"spec\":{\"workloadIdentity\":{\"serviceAccountName\":"
	                                 "\"wl-new\"}}}"),
	                 0);
	sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_false(exists(&e, res_sa, "ml-alpha", "wl-old"));
	assert_true(exists(&e, res_sa, "ml-alpha", "wl-new"));
	assert_condition(&e, "alpha", "WorkloadIdentityReady", "True", "ServiceAccountReady");
	env_down(&e);
}

/* Status is written when it changes and not again for the same world. */
static void test_status_phase_writes_once(void **state)
{
	env e;
	uint64_t puts;
	cJSON *ws;

	(void)state;
	env_up(&e);
	assert_int_equal(fake_kube_seed(e.fk, &tau_ws_res_clusterqueues,
	                                "{\"metadata\":{\"name\":\"alpha\"},\"spec\":{}}"),
	                 0);
	sync_cache(&e, WS_INF_CQ, &tau_ws_res_clusterqueues, NULL, "alpha");
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(reconcile(&e, "alpha"), 0);
	ws = fake_kube_get(e.fk, res_ws, "tau-system", "alpha");
	assert_string_equal(str(ws, "status.phase"), "Ready");
	assert_string_equal(str(ws, "status.target.resolvedNamespace"), "ml-alpha");
	cJSON_Delete(ws);
	assert_condition(&e, "alpha", "QueueReady", "True", "LocalQueueReady");
	sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
	puts = fake_kube_requests(e.fk, "PUT", res_ws);
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_int_equal(fake_kube_requests(e.fk, "PUT", res_ws), puts);
	assert_int_equal(fake_kube_requests(e.fk, "PUT", res_rb), 0);
	env_down(&e);
}

/* Deletion: the namespace it owned and everything in it go, then the finalizer. */
static void test_deletion_phase_cleans_up(void **state)
{
	env e;

	(void)state;
	env_up(&e);
	seed_ws(&e, "alpha", RBAC_SPEC("ml-alpha", "alpha"));
	assert_int_equal(reconcile(&e, "alpha"), 0);
	sync_cache(&e, WS_INF_NAMESPACES, &tau_kube_res_namespaces, NULL, "ml-alpha");
	assert_int_equal(fake_kube_delete(e.fk, res_ws, "tau-system", "alpha"), 0);
	assert_true(exists(&e, res_ws, "tau-system", "alpha")); /* the finalizer holds it */
	for (int i = 0; i < 5 && exists(&e, res_ws, "tau-system", "alpha"); i++) {
		sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
		assert_int_equal(reconcile(&e, "alpha"), 0);
	}
	assert_false(exists(&e, res_ws, "tau-system", "alpha"));
	assert_false(exists(&e, res_rb, "ml-alpha", "tau-workspace-alpha"));
	assert_false(exists(&e, res_lq, "ml-alpha", "alpha"));
	assert_false(exists(&e, &tau_kube_res_namespaces, NULL, "ml-alpha"));
	env_down(&e);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Issue 12 item 4: TauCluster's namespaceAllowlist.file is followed like the flag. */
static void test_allowlist_file_from_taucluster(void **state)
{
	char dir[] = "/tmp/ws-allow-XXXXXX", path[128], cluster[512];
	env e;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/allow.json", dir);
	write_file(path, "[\"ml-alpha\"]");
	env_up(&e);
	snprintf(cluster, sizeof(cluster),
	         "{\"metadata\":{\"name\":\"cluster\"},\"spec\":{\"workspaces\":{\"namespaceMode\":"
	         "\"Operator\",\"namespaceAllowlist\":{\"file\":\"%s\"}}}}",
	         path);
	assert_int_equal(fake_kube_seed(e.fk, &tau_ws_res_clusters, cluster), 0);
	sync_cache(&e, WS_INF_CLUSTER, &tau_ws_res_clusters, NULL, "cluster");
	assert_int_equal(fake_kube_seed(e.fk, &tau_kube_res_namespaces,
	                                "{\"metadata\":{\"name\":\"ml-alpha\"}}"),
	                 0);
	sync_cache(&e, WS_INF_NAMESPACES, &tau_kube_res_namespaces, NULL, "ml-alpha");
	seed_ws(&e, "alpha",
	        "{\"authorization\":{\"mode\":\"cluster-wide\"},\"target\":{\"namespace\":"
	        "\"ml-alpha\"},\"queue\":\"alpha\"}");
	assert_int_equal(reconcile(&e, "alpha"), 0);
	assert_true(exists(&e, res_lq, "ml-alpha", "alpha"));

	/* The file changes: the namespace is no longer allowed. */
	write_file(path, "[\"ml-other\"]");
	{
		uint64_t end = tau_clock_mono_ms() + WAIT_MS;
		struct timespec ts = {0, 10 * 1000 * 1000};
		cJSON *ws = NULL;
		const cJSON *c = NULL;

		for (;;) {
			sync_cache(&e, WS_INF_WORKSPACES, res_ws, "tau-system", "alpha");
			assert_int_equal(reconcile(&e, "alpha"), 0);
			cJSON_Delete(ws);
			ws = fake_kube_get(e.fk, res_ws, "tau-system", "alpha");
			c = condition(ws, "QueueReady");
			if (c != NULL && strcmp(str(c, "reason"), "NamespaceNotAllowed") == 0)
				break;
			assert_true(tau_clock_mono_ms() < end);
			nanosleep(&ts, NULL);
		}
		assert_string_equal(str(c, "status"), "False");
		cJSON_Delete(ws);
	}
	env_down(&e);
	unlink(path);
	rmdir(dir);
}

/* A flag and a TauCluster allowlist at once: every Operator-mode workspace is refused. */
static void test_allowlist_two_sources_refused(void **state)
{
	tau_ws_controller_opts o = {.allowlist_selector = "team=a"};
	env e;
	cJSON *ws;
	const cJSON *c;

	(void)state;
	env_up_opts(&e, &o);
	assert_int_equal(
	        fake_kube_seed(e.fk, &tau_ws_res_clusters,
	                       "{\"metadata\":{\"name\":\"cluster\"},\"spec\":{\"workspaces\":"
	                       "{\"namespaceMode\":\"Operator\",\"namespaceAllowlist\":{"
	                       "\"file\":\"/nonexistent/allow.json\"}}}}"),
	        0);
	sync_cache(&e, WS_INF_CLUSTER, &tau_ws_res_clusters, NULL, "cluster");
	seed_ws(&e, "alpha",
	        "{\"authorization\":{\"mode\":\"cluster-wide\"},\"target\":{\"namespace\":"
	        "\"ml-alpha\"},\"queue\":\"alpha\"}");
	assert_int_equal(reconcile(&e, "alpha"), 0);
	ws = fake_kube_get(e.fk, res_ws, "tau-system", "alpha");
	c = condition(ws, "QueueReady");
	assert_non_null(c);
	assert_string_equal(str(c, "status"), "False");
	assert_string_equal(str(c, "reason"), "AllowlistSourceConflict");
	assert_non_null(strstr(str(c, "message"), "--allowlist-selector"));
	assert_non_null(strstr(str(c, "message"), "namespaceAllowlist.file"));
	cJSON_Delete(ws);
	assert_int_equal(fake_kube_count(e.fk, res_lq), 0);
	env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_finalizer_phase),
	        cmocka_unit_test(test_invalid_spec_stops_at_finalizer),
	        cmocka_unit_test(test_v0_phase_blocks_the_younger),
	        cmocka_unit_test(test_namespace_phase_creates_owned_namespace),
	        cmocka_unit_test(test_access_phase_mode_switch_deletes_binding),
	        cmocka_unit_test(test_access_phase_failed_removal_is_reported),
	        cmocka_unit_test(test_queue_phase_prunes_former_queue),
	        cmocka_unit_test(test_identity_phase_revokes_obsolete_account),
	        cmocka_unit_test(test_status_phase_writes_once),
	        cmocka_unit_test(test_deletion_phase_cleans_up),
	        cmocka_unit_test(test_allowlist_file_from_taucluster),
	        cmocka_unit_test(test_allowlist_two_sources_refused),
	};

	tau_log_set_level(TAU_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
