/*
 * kube_watch.c - informers against kube-sim.  The main test keeps writing
 * while kube-sim closes watches, fails lists and watches with 500/503/429
 * and compacts its watch cache (410); once the faults stop, the informer's
 * cache and a mirror built only from its add/update/delete callbacks must
 * both equal a fresh list.  Also: label and field selectors and several
 * informers on one loop.  Needs KUBE_SIM_KUBECONFIG.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_e2e.h"
#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/log.h"

/* ---- a mirror maintained only from callbacks ---- */

typedef struct mirror {
	pthread_mutex_t lock;
	cJSON *map; /* key -> resourceVersion */
	int anomalies, adds, updates, deletes;
} mirror;

static void obj_key(char *buf, size_t cap, const cJSON *o)
{
	const char *ns = NULL, *name = NULL;

	tau_json_get_string(&name, o, "metadata.name");
	if (tau_json_get_string(&ns, o, "metadata.namespace") == 0 && ns[0])
		snprintf(buf, cap, "%s/%s", ns, name ? name : "?");
	else
		snprintf(buf, cap, "%s", name ? name : "?");
}

static const char *obj_rv(const cJSON *o)
{
	const char *rv = "";

	tau_json_get_string(&rv, o, "metadata.resourceVersion");
	return rv;
}

static void m_add(void *arg, const cJSON *o)
{
	mirror *m = arg;
	char key[300];

	obj_key(key, sizeof(key), o);
	pthread_mutex_lock(&m->lock);
	if (cJSON_GetObjectItemCaseSensitive(m->map, key))
		m->anomalies++;
	cJSON_DeleteItemFromObjectCaseSensitive(m->map, key);
	cJSON_AddStringToObject(m->map, key, obj_rv(o));
	m->adds++;
	pthread_mutex_unlock(&m->lock);
}

static void m_update(void *arg, const cJSON *old, const cJSON *o)
{
	mirror *m = arg;
	char key[300], okey[300];
	const cJSON *cur;

	obj_key(key, sizeof(key), o);
	obj_key(okey, sizeof(okey), old);
	pthread_mutex_lock(&m->lock);
	cur = cJSON_GetObjectItemCaseSensitive(m->map, key);
	if (strcmp(key, okey) != 0 || cur == NULL || strcmp(cur->valuestring, obj_rv(old)) != 0)
		m->anomalies++;
	cJSON_DeleteItemFromObjectCaseSensitive(m->map, key);
	cJSON_AddStringToObject(m->map, key, obj_rv(o));
	m->updates++;
	pthread_mutex_unlock(&m->lock);
}

static void m_delete(void *arg, const cJSON *o)
{
	mirror *m = arg;
	char key[300];

	obj_key(key, sizeof(key), o);
	pthread_mutex_lock(&m->lock);
	if (cJSON_GetObjectItemCaseSensitive(m->map, key) == NULL)
		m->anomalies++;
	cJSON_DeleteItemFromObjectCaseSensitive(m->map, key);
	m->deletes++;
	pthread_mutex_unlock(&m->lock);
}

static void mirror_init(mirror *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
	m->map = cJSON_CreateObject();
}

static void mirror_free(mirror *m)
{
	cJSON_Delete(m->map);
	pthread_mutex_destroy(&m->lock);
}

/* key -> rv of a list of objects. */
static cJSON *key_rv_map(const cJSON *items)
{
	cJSON *map = cJSON_CreateObject();
	const cJSON *it;

	cJSON_ArrayForEach(it, items)
	{
		char key[300];

		obj_key(key, sizeof(key), it);
		cJSON_AddStringToObject(map, key, obj_rv(it));
	}
	return map;
}

typedef struct convergence {
	tau_kube_client *client;
	tau_kube_informer *inf;
	mirror *m;
	const char *ns;
	const char *label_selector;
	char why[600];
} convergence;

static bool converged(void *arg)
{
	convergence *cv = arg;
	tau_kube_list_options lo = {.label_selector = cv->label_selector};
	cJSON *list = NULL, *snap = NULL, *want = NULL, *have = NULL;
	bool ok = false;

	if (!tau_kube_informer_has_synced(cv->inf)) {
		snprintf(cv->why, sizeof(cv->why), "not synced");
		return false;
	}
	if (tau_kube_list_all(&list, cv->client, &tau_kube_res_configmaps, cv->ns, &lo) < 0 ||
	    tau_kube_informer_snapshot(&snap, cv->inf) < 0) {
		snprintf(cv->why, sizeof(cv->why), "list failed: %s", tau_error_last()->msg);
		goto out;
	}
	want = key_rv_map(cJSON_GetObjectItem(list, "items"));
	have = key_rv_map(snap);
	if (!cJSON_Compare(want, have, 1)) {
		snprintf(cv->why, sizeof(cv->why), "cache differs: %d vs %d objects",
		         cJSON_GetArraySize(want), cJSON_GetArraySize(have));
		goto out;
	}
	if (cv->m) {
		pthread_mutex_lock(&cv->m->lock);
		ok = cJSON_Compare(want, cv->m->map, 1);
		pthread_mutex_unlock(&cv->m->lock);
		if (!ok) {
			snprintf(cv->why, sizeof(cv->why), "callback mirror differs");
			goto out;
		}
	}
	ok = true;
out:
	cJSON_Delete(list);
	cJSON_Delete(snap);
	cJSON_Delete(want);
	cJSON_Delete(have);
	return ok;
}

/* ---- the writer ---- */

typedef struct writer {
	tau_kube_client *client;
	const char *ns;
	atomic_bool stop;
	atomic_int ops;
	pthread_t th;
} writer;

static void *writer_main(void *arg)
{
	writer *w = arg;
	unsigned seed = 42;

	while (!atomic_load(&w->stop)) {
		int n = (int)(rand_r(&seed) % 40), op = (int)(rand_r(&seed) % 3);
		char name[32], patch[128];

		snprintf(name, sizeof(name), "w%02d", n);
		if (op == 0) {
			cJSON *cm = e2e_json("{\"metadata\":{\"name\":\"%s\",\"labels\":{\"set\":"
			                     "\"main\"}},\"data\":{\"v\":\"0\"}}",
			                     name);

			tau_kube_create(NULL, w->client, &tau_kube_res_configmaps, w->ns, cm);
			cJSON_Delete(cm);
		} else if (op == 1) {
			snprintf(patch, sizeof(patch), "{\"data\":{\"v\":\"%d\"}}", rand_r(&seed));
			tau_kube_patch(NULL, w->client, &tau_kube_res_configmaps, w->ns, name, NULL,
			               TAU_KUBE_PATCH_MERGE, patch);
		} else {
			tau_kube_delete(NULL, w->client, &tau_kube_res_configmaps, w->ns, name,
			                NULL);
		}
		atomic_fetch_add(&w->ops, 1);
		tau_clock_sleep_ms(5);
	}
	return NULL;
}

static bool synced(void *arg)
{
	return tau_kube_informer_has_synced(arg);
}

/* ---- waiting for the informer and the writer to make progress ---- */

typedef struct progress {
	tau_kube_informer *inf;
	writer *w;
	tau_kube_informer_stats min; /* every counter must reach at least this */
	int min_ops;                 /* and the writer at least this many operations */
} progress;

static bool progressed(void *arg)
{
	progress *p = arg;
	tau_kube_informer_stats st;

	tau_kube_informer_stats_get(p->inf, &st);
	return st.lists >= p->min.lists && st.watches >= p->min.watches &&
	       st.expired >= p->min.expired && st.failures >= p->min.failures &&
	       st.synthetic_deletes >= p->min.synthetic_deletes &&
	       atomic_load(&p->w->ops) >= p->min_ops;
}

/*
 * Wait until the informer's counters have grown by at least `more` since now and the writer
 * has made `more_ops` more writes (so the phase interleaves writes with what the informer does).
 */
static void await_progress(tau_kube_informer *inf, writer *w, tau_kube_informer_stats more,
                           int more_ops, const char *what)
{
	progress p = {.inf = inf, .w = w};
	tau_kube_informer_stats st;

	tau_kube_informer_stats_get(inf, &p.min);
	p.min.lists += more.lists;
	p.min.watches += more.watches;
	p.min.expired += more.expired;
	p.min.failures += more.failures;
	p.min.synthetic_deletes += more.synthetic_deletes;
	p.min_ops = atomic_load(&w->ops) + more_ops;
	if (e2e_wait(progressed, &p, 60000))
		return;
	tau_kube_informer_stats_get(inf, &st);
	fail_msg("%s: not within 60 s (lists %llu/%llu watches %llu/%llu expired %llu/%llu "
	         "failures %llu/%llu synthetic deletes %llu/%llu writer ops %d/%d)",
	         what, (unsigned long long)st.lists, (unsigned long long)p.min.lists,
	         (unsigned long long)st.watches, (unsigned long long)p.min.watches,
	         (unsigned long long)st.expired, (unsigned long long)p.min.expired,
	         (unsigned long long)st.failures, (unsigned long long)p.min.failures,
	         (unsigned long long)st.synthetic_deletes,
	         (unsigned long long)p.min.synthetic_deletes, atomic_load(&w->ops), p.min_ops);
}

static void test_exact_cache_under_faults(void **state)
{
	tau_kube_client *c = e2e_client(-1, 5);
	tau_kube_client *wc = e2e_client(-1, 5);
	tau_kube_informer_options io = {.namespace = "watch",
	                                .label_selector = "set=main",
	                                .page_size = 7,
	                                .watch_timeout_min_s = 4,
	                                .watch_timeout_max_s = 8,
	                                .backoff_initial_ms = 100,
	                                .backoff_cap_ms = 2000};
	mirror m;
	tau_kube_handlers h = {m_add, m_update, m_delete, &m};
	tau_kube_loop *loop = NULL;
	tau_kube_informer *inf = NULL;
	tau_kube_informer_stats st;
	writer w = {.client = wc, .ns = "watch"};
	convergence cv = {.client = c, .ns = "watch", .label_selector = "set=main", .m = &m};

	(void)state;
	mirror_init(&m);
	assert_int_equal(e2e_faults(c, "DELETE", NULL), 0);
	assert_int_equal(e2e_namespace(c, "watch"), 0);
	for (int i = 0; i < 40; i += 2) {
		cJSON *cm =
		        e2e_json("{\"metadata\":{\"name\":\"w%02d\",\"labels\":{\"set\":\"main\"}},"
		                 "\"data\":{}}",
		                 i);

		tau_kube_create(NULL, c, &tau_kube_res_configmaps, "watch", cm);
		cJSON_Delete(cm);
	}
	for (int i = 0; i < 6; i++) {
		cJSON *cm = e2e_json("{\"metadata\":{\"name\":\"doomed%d\",\"labels\":{\"set\":"
		                     "\"main\"}},\"data\":{}}",
		                     i);

		int rc = tau_kube_create(NULL, c, &tau_kube_res_configmaps, "watch", cm);

		assert_true(rc == 0 || rc == -TAU_ECONFLICT);
		cJSON_Delete(cm);
	}
	assert_int_equal(tau_kube_loop_new(&loop, c), 0);
	assert_int_equal(tau_kube_informer_new(&inf, loop, &tau_kube_res_configmaps, &io, &h), 0);
	cv.inf = inf;
	tau_kube_informer_start(inf);
	assert_int_equal(tau_kube_loop_start_thread(loop), 0);
	assert_true(e2e_wait(synced, inf, 30000));
	if (!e2e_wait(converged, &cv, 30000))
		fail_msg("initial sync: %s", cv.why);

	pthread_create(&w.th, NULL, writer_main, &w);
	/* 1: watches closed under the informer, repeatedly; each time it watches again while
	 * the writer goes on. */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(e2e_faults(c, "POST", "{\"closeWatches\":true}"), 0);
		await_progress(inf, &w, (tau_kube_informer_stats){.watches = 1}, 10,
		               "a new watch after closeWatches");
	}
	/* 2: lists and watches fail with 500, 503 and 429 some of the time. */
	assert_int_equal(
	        e2e_faults(c, "PUT",
	                   "{\"rules\":[{\"verb\":\"watch\",\"resource\":\"configmaps\","
	                   "\"status\":500,\"rate\":0.5},{\"verb\":\"list\",\"resource\":"
	                   "\"configmaps\",\"status\":503,\"rate\":0.3},{\"verb\":\"list,"
	                   "watch\",\"resource\":\"configmaps\",\"status\":429,\"count\":3,"
	                   "\"retryAfter\":1}],\"closeWatches\":true}"),
	        0);
	/* At least the three 429s fail (list or watch), and a watch starts again regardless. */
	await_progress(inf, &w, (tau_kube_informer_stats){.failures = 3, .watches = 1}, 10,
	               "failed requests under 500/503/429");
	assert_int_equal(e2e_faults(c, "POST", "{\"closeWatches\":true}"), 0);
	await_progress(inf, &w, (tau_kube_informer_stats){.watches = 1}, 10,
	               "a new watch after closeWatches under faults");
	/* 3: no watch can start; objects vanish meanwhile; then the watch cache is compacted,
	 * so the informer's next watch gets 410 and it must relist. */
	assert_int_equal(e2e_faults(c, "PUT",
	                            "{\"rules\":[{\"verb\":\"watch\",\"resource\":\"configmaps\","
	                            "\"status\":503}],\"closeWatches\":true}"),
	                 0);
	for (int i = 0; i < 6; i++) {
		char name[32];

		snprintf(name, sizeof(name), "doomed%d", i);
		assert_int_equal(
		        tau_kube_delete(NULL, c, &tau_kube_res_configmaps, "watch", name, NULL), 0);
	}
	/* The informer keeps trying to watch and is refused: it cannot have seen the deletes. */
	await_progress(inf, &w, (tau_kube_informer_stats){.failures = 2}, 10,
	               "refused watches after the deletes");
	assert_int_equal(e2e_faults(c, "POST", "{\"compact\":true}"), 0);
	await_progress(inf, &w, (tau_kube_informer_stats){.failures = 1}, 0,
	               "a refused watch after the compaction");
	assert_int_equal(e2e_faults(c, "DELETE", NULL), 0);
	/* Its next watch is too old (410): it relists, and the relist delivers the deletes. */
	await_progress(inf, &w, (tau_kube_informer_stats){.expired = 1, .synthetic_deletes = 6}, 10,
	               "a 410 and a relist that delivers the deletes");
	/* 4: quiet. */
	atomic_store(&w.stop, true);
	pthread_join(w.th, NULL);
	if (!e2e_wait(converged, &cv, 60000))
		fail_msg("after faults: %s", cv.why);
	tau_kube_informer_stats_get(inf, &st);
	fprintf(stderr,
	        "informer: lists %llu pages %llu watches %llu events %llu bookmarks %llu "
	        "expired %llu failures %llu synthetic deletes %llu; writer ops %d; "
	        "callbacks add %d update %d delete %d\n",
	        (unsigned long long)st.lists, (unsigned long long)st.list_pages,
	        (unsigned long long)st.watches, (unsigned long long)st.events,
	        (unsigned long long)st.bookmarks, (unsigned long long)st.expired,
	        (unsigned long long)st.failures, (unsigned long long)st.synthetic_deletes,
	        atomic_load(&w.ops), m.adds, m.updates, m.deletes);
	assert_int_equal(m.anomalies, 0);
	assert_true(st.lists >= 2);
	assert_true(st.expired >= 1);
	assert_true(st.failures >= 1);
	assert_true(st.synthetic_deletes >= 6);
	assert_true(st.watches >= 5);
	tau_kube_loop_join(loop);
	tau_kube_informer_free(inf);
	tau_kube_loop_free(loop);
	mirror_free(&m);
	tau_kube_client_free(c);
	tau_kube_client_free(wc);
}

typedef struct count_wait {
	tau_kube_informer *inf;
	size_t want;
} count_wait;

static bool count_is(void *arg)
{
	count_wait *cw = arg;

	return tau_kube_informer_has_synced(cw->inf) &&
	       tau_kube_informer_count(cw->inf) == cw->want;
}

static void test_selectors_shared_loop(void **state)
{
	tau_kube_client *c = e2e_client(-1, 5);
	tau_kube_informer_options red_o = {.namespace = "sel", .label_selector = "color=red"};
	tau_kube_informer_options one_o = {.namespace = "sel",
	                                   .field_selector = "metadata.name=c1"};
	tau_kube_informer_options all_o = {0};
	tau_kube_loop *loop = NULL;
	tau_kube_informer *red = NULL, *one = NULL, *nss = NULL;
	count_wait cw;
	cJSON *got = NULL;

	(void)state;
	assert_int_equal(e2e_faults(c, "DELETE", NULL), 0);
	assert_int_equal(e2e_namespace(c, "sel"), 0);
	for (int i = 0; i < 6; i++) {
		cJSON *cm =
		        e2e_json("{\"metadata\":{\"name\":\"c%d\",\"labels\":{\"color\":\"%s\"}}}",
		                 i, i % 2 ? "red" : "blue");

		char name[16], patch[128];

		tau_kube_create(NULL, c, &tau_kube_res_configmaps, "sel", cm);
		cJSON_Delete(cm);
		/* Reruns against the same kube-sim: reset the label. */
		snprintf(name, sizeof(name), "c%d", i);
		snprintf(patch, sizeof(patch), "{\"metadata\":{\"labels\":{\"color\":\"%s\"}}}",
		         i % 2 ? "red" : "blue");
		assert_int_equal(tau_kube_patch(NULL, c, &tau_kube_res_configmaps, "sel", name,
		                                NULL, TAU_KUBE_PATCH_MERGE, patch),
		                 0);
	}
	assert_int_equal(tau_kube_loop_new(&loop, c), 0);
	assert_int_equal(tau_kube_informer_new(&red, loop, &tau_kube_res_configmaps, &red_o, NULL),
	                 0);
	assert_int_equal(tau_kube_informer_new(&one, loop, &tau_kube_res_configmaps, &one_o, NULL),
	                 0);
	assert_int_equal(tau_kube_informer_new(&nss, loop, &tau_kube_res_namespaces, &all_o, NULL),
	                 0);
	/* A namespace on a cluster-scoped kind is refused. */
	{
		tau_kube_informer *bad = NULL;
		tau_kube_informer_options bo = {.namespace = "x"};

		assert_int_equal(tau_kube_informer_new(&bad, loop, &tau_kube_res_nodes, &bo, NULL),
		                 -TAU_EINVAL);
	}
	tau_kube_informer_start(red);
	tau_kube_informer_start(one);
	tau_kube_informer_start(nss);
	assert_int_equal(tau_kube_loop_start_thread(loop), 0);
	cw.inf = red;
	cw.want = 3;
	assert_true(e2e_wait(count_is, &cw, 30000));
	cw.inf = one;
	cw.want = 1;
	assert_true(e2e_wait(count_is, &cw, 30000));
	assert_true(e2e_wait(synced, nss, 30000));
	assert_int_equal(tau_kube_informer_get(&got, nss, NULL, "sel"), 0);
	cJSON_Delete(got);
	got = NULL;
	assert_int_equal(tau_kube_informer_get(&got, red, "sel", "c1"), 0);
	cJSON_Delete(got);
	got = NULL;
	assert_int_equal(tau_kube_informer_get(&got, red, "sel", "c0"), -TAU_ENOTFOUND);
	/* Relabel c1 blue: it leaves the red informer, stays in the by-name one. */
	assert_int_equal(tau_kube_patch(NULL, c, &tau_kube_res_configmaps, "sel", "c1", NULL,
	                                TAU_KUBE_PATCH_MERGE,
	                                "{\"metadata\":{\"labels\":{\"color\":\"blue\"}}}"),
	                 0);
	cw.inf = red;
	cw.want = 2;
	assert_true(e2e_wait(count_is, &cw, 30000));
	cw.inf = one;
	cw.want = 1;
	assert_true(e2e_wait(count_is, &cw, 30000));
	tau_kube_loop_join(loop);
	tau_kube_informer_free(red);
	tau_kube_informer_free(one);
	tau_kube_informer_free(nss);
	tau_kube_loop_free(loop);
	tau_kube_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_selectors_shared_loop),
	        cmocka_unit_test(test_exact_cache_under_faults),
	};

	tau_log_init_from_env();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
