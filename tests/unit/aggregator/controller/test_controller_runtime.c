/*
 * test_controller_runtime.c - the shared controller runtime against the fake
 * API server (real client, informers and work queue): the synced gate,
 * per-object, label and single keys, coalescing of an event storm, triggers
 * from another thread, periodic resync, requeue-after, conflict and failure
 * retries, start and stop of the worker, cache reads from reconcile, and
 * refused options.
 */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controller/runtime.h"
#include "fake_kube.h"

#include "tau/buf.h"
#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"

static const tau_kube_resource res_widgets = {"test.tau", "v1", "widgets", true};
static const tau_kube_resource res_gadgets = {"test.tau", "v1", "gadgets", false};

#define MAX_LOG 512

/* What reconcile saw; guarded by mu, cond signalled on every call. */
typedef struct rec {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	char keys[MAX_LOG][64];
	uint64_t at_ms[MAX_LOG];
	size_t n;
	int script[8]; /* return codes for the first calls */
	size_t n_script;
	uint64_t requeue_first_ms;
	tau_kube_informer *cache; /* read in reconcile when set */
	bool cache_hit[MAX_LOG];
	int synced_calls;
} rec;

typedef struct env {
	fake_kube *fk;
	tau_kube_client *client;
	tau_kube_loop *loop;
	tau_controller *ctl;
	rec r;
} env;

static int reconcile(void *arg, tau_controller *ctl, const char *key, tau_controller_result *res)
{
	rec *r = arg;
	int rc = 0;
	bool hit = false;

	(void)ctl;
	if (r->cache != NULL) {
		cJSON *obj = NULL;

		hit = tau_kube_informer_get(&obj, r->cache, NULL, key) == 0;
		cJSON_Delete(obj);
	}
	pthread_mutex_lock(&r->mu);
	if (r->n < MAX_LOG) {
		snprintf(r->keys[r->n], sizeof(r->keys[0]), "%s", key);
		r->at_ms[r->n] = tau_clock_mono_ms();
		r->cache_hit[r->n] = hit;
	}
	if (r->n < r->n_script)
		rc = r->script[r->n];
	if (r->n == 0)
		res->requeue_after_ms = r->requeue_first_ms;
	r->n++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	if (rc == -TAU_ECONFLICT)
		return tau_error_set(TAU_ECONFLICT, "scripted conflict");
	if (rc != 0)
		return tau_error_set(-rc, "scripted failure");
	return 0;
}

static void on_synced(void *arg, tau_controller *ctl)
{
	rec *r = arg;

	(void)ctl;
	pthread_mutex_lock(&r->mu);
	r->synced_calls++;
	pthread_mutex_unlock(&r->mu);
}

static size_t calls(rec *r)
{
	size_t n;

	pthread_mutex_lock(&r->mu);
	n = r->n;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Wait until reconcile ran at least `n` times.  @return the count reached. */
static size_t wait_calls(rec *r, size_t n, uint64_t timeout_ms)
{
	uint64_t end = tau_clock_mono_ms() + timeout_ms;
	size_t got;

	pthread_mutex_lock(&r->mu);
	while (r->n < n && tau_clock_mono_ms() < end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&r->cond, &r->mu, &ts);
	}
	got = r->n;
	pthread_mutex_unlock(&r->mu);
	return got;
}

/* Count of calls for `key`. */
static size_t calls_for(rec *r, const char *key)
{
	size_t n = 0;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n && i < MAX_LOG; i++)
		if (strcmp(r->keys[i], key) == 0)
			n++;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static void wait_key(rec *r, const char *key, size_t n, uint64_t timeout_ms)
{
	uint64_t end = tau_clock_mono_ms() + timeout_ms;

	while (calls_for(r, key) < n && tau_clock_mono_ms() < end)
		wait_calls(r, calls(r) + 1, 50);
	assert_true(calls_for(r, key) >= n);
}

static void env_up(env *e, tau_controller_options *o)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->r.mu, NULL);
	pthread_cond_init(&e->r.cond, NULL);
	assert_int_equal(fake_kube_start(&e->fk), 0);
	assert_int_equal(fake_kube_client(&e->client, e->fk), 0);
	assert_int_equal(tau_kube_loop_new(&e->loop, e->client), 0);
	o->name = "test";
	o->client = e->client;
	o->loop = e->loop;
	o->reconcile = reconcile;
	o->arg = &e->r;
	o->on_synced = on_synced;
	assert_int_equal(tau_controller_new(&e->ctl, o), 0);
}

static void env_run(env *e)
{
	assert_int_equal(tau_kube_loop_start_thread(e->loop), 0);
}

static void env_down(env *e)
{
	tau_controller_stop_worker(e->ctl);
	tau_kube_loop_join(e->loop);
	tau_controller_free(e->ctl);
	tau_kube_loop_free(e->loop);
	tau_kube_client_free(e->client);
	fake_kube_stop(e->fk);
	pthread_cond_destroy(&e->r.cond);
	pthread_mutex_destroy(&e->r.mu);
}

static void seed_widget(env *e, const char *ns, const char *name, const char *owner)
{
	char json[512];

	snprintf(
	        json, sizeof(json),
	        "{\"apiVersion\":\"test.tau/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"%s\","
	        "\"namespace\":\"%s\",\"labels\":{\"owner\":\"%s\"}},\"spec\":{\"n\":1}}",
	        name, ns, owner);
	assert_int_equal(fake_kube_seed(e->fk, &res_widgets, json), 0);
}

static void seed_gadget(env *e, const char *name)
{
	char json[256];

	snprintf(json, sizeof(json),
	         "{\"apiVersion\":\"test.tau/"
	         "v1\",\"kind\":\"Gadget\",\"metadata\":{\"name\":\"%s\"},"
	         "\"spec\":{\"n\":1}}",
	         name);
	assert_int_equal(fake_kube_seed(e->fk, &res_gadgets, json), 0);
}

/* ---- tests ---- */

/* No reconcile before every informer listed once; on_synced opens the gate at once. */
static void test_synced_gate(void **state)
{
	tau_controller_options o = {.resync_ms = TAU_CONTROLLER_RESYNC_NEVER};
	tau_controller_watch_opts wg = {.res = &res_gadgets, .primary = true};
	tau_controller_watch_opts ww = {
	        .res = &res_widgets, .keys = TAU_CONTROLLER_KEYS_LABEL, .label = "owner"};
	env e;

	(void)state;
	env_up(&e, &o);
	seed_gadget(&e, "g1");
	seed_widget(&e, "ns1", "w1", "g1");
	fake_kube_hold_lists(e.fk, &res_widgets, true);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &wg), 0);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &ww), 0);
	env_run(&e);
	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	assert_true(tau_controller_worker_running(e.ctl));

	/* The gadgets list completes, the widgets list is held: the gate stays shut. */
	assert_int_equal(tau_controller_wait_synced(e.ctl, 400), -TAU_ETIMEOUT);
	assert_non_null(strstr(tau_error_last()->msg, "widgets"));
	assert_null(strstr(tau_error_last()->msg, "gadgets"));
	assert_false(tau_controller_synced(e.ctl));
	assert_int_equal(calls(&e.r), 0);
	assert_int_equal(e.r.synced_calls, 0);

	fake_kube_hold_lists(e.fk, &res_widgets, false);
	assert_int_equal(tau_controller_wait_synced(e.ctl, 5000), 0);
	assert_true(tau_controller_synced(e.ctl));
	wait_key(&e.r, "g1", 1, 5000);
	pthread_mutex_lock(&e.r.mu);
	assert_int_equal(e.r.synced_calls, 1);
	pthread_mutex_unlock(&e.r.mu);
	env_down(&e);
}

/* Name keys from the primary watch; label keys from an owned kind (old and new owner). */
static void test_object_and_label_keys(void **state)
{
	tau_controller_options o = {.resync_ms = TAU_CONTROLLER_RESYNC_NEVER};
	tau_controller_watch_opts wg = {.res = &res_gadgets, .primary = true};
	tau_controller_watch_opts ww = {
	        .res = &res_widgets, .keys = TAU_CONTROLLER_KEYS_LABEL, .label = "owner"};
	env e;
	size_t g1, g2;

	(void)state;
	env_up(&e, &o);
	seed_gadget(&e, "g1");
	seed_gadget(&e, "g2");
	seed_widget(&e, "ns1", "w1", "g1");
	assert_int_equal(tau_controller_watch(&e.r.cache, e.ctl, &wg), 0);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &ww), 0);
	env_run(&e);
	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	wait_key(&e.r, "g1", 1, 5000);
	wait_key(&e.r, "g2", 1, 5000);
	/* The reconcile read its key's object from the cache. */
	pthread_mutex_lock(&e.r.mu);
	for (size_t i = 0; i < e.r.n; i++)
		assert_true(e.r.cache_hit[i]);
	pthread_mutex_unlock(&e.r.mu);

	/* A widget moving from g1 to g2 concerns both. */
	g1 = calls_for(&e.r, "g1");
	g2 = calls_for(&e.r, "g2");
	assert_int_equal(fake_kube_patch(e.fk, &res_widgets, "ns1", "w1",
	                                 "{\"metadata\":{\"labels\":{\"owner\":\"g2\"}}}"),
	                 0);
	wait_key(&e.r, "g1", g1 + 1, 5000);
	wait_key(&e.r, "g2", g2 + 1, 5000);

	/* An update of g2 itself enqueues g2 only. */
	g1 = calls_for(&e.r, "g1");
	g2 = calls_for(&e.r, "g2");
	assert_int_equal(fake_kube_patch(e.fk, &res_gadgets, NULL, "g2", "{\"spec\":{\"n\":2}}"),
	                 0);
	wait_key(&e.r, "g2", g2 + 1, 5000);
	assert_int_equal(calls_for(&e.r, "g1"), g1);
	env_down(&e);
}

/* A storm of events on several kinds makes one reconcile of the single key.  The window
 * (1.5 s) is long against the time the 40 events take to arrive, even on a loaded machine. */
static void test_single_key_coalesces(void **state)
{
	tau_controller_options o = {.single_key = "team",
	                            .coalesce_ms = 1500,
	                            .resync_ms = TAU_CONTROLLER_RESYNC_NEVER};
	tau_controller_watch_opts wg = {.res = &res_gadgets};
	tau_controller_watch_opts ww = {.res = &res_widgets, .namespace = "ns1"};
	env e;
	uint64_t t0;
	size_t before;

	(void)state;
	env_up(&e, &o);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &wg), 0);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &ww), 0);
	env_run(&e);
	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	/* Empty caches still give the one key one pass once synced. */
	assert_int_equal(wait_calls(&e.r, 1, 5000), 1);
	assert_string_equal(e.r.keys[0], "team");

	before = calls(&e.r);
	t0 = tau_clock_mono_ms();
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "g%d", i);
		seed_gadget(&e, name);
		snprintf(name, sizeof(name), "w%d", i);
		seed_widget(&e, "ns1", name, "x");
	}
	assert_int_equal(wait_calls(&e.r, before + 1, 5000), before + 1);
	pthread_mutex_lock(&e.r.mu);
	/* Not before the coalescing delay of the first event. */
	assert_true(e.r.at_ms[before] >= t0 + 1500 - 5);
	pthread_mutex_unlock(&e.r.mu);
	/* And no second pass for the same storm (events were all in before the first). */
	assert_int_equal(wait_calls(&e.r, before + 2, 900), before + 1);
	env_down(&e);
}

static void *trigger_main(void *arg)
{
	tau_controller *ctl = arg;

	for (int i = 0; i < 10; i++)
		tau_controller_trigger(ctl, NULL);
	return NULL;
}

/* Another thread triggers the single key; the ten triggers coalesce into one pass. */
static void test_trigger_from_thread(void **state)
{
	tau_controller_options o = {
	        .single_key = "team", .coalesce_ms = 200, .resync_ms = TAU_CONTROLLER_RESYNC_NEVER};
	tau_controller_watch_opts wg = {.res = &res_gadgets};
	pthread_t t;
	env e;

	(void)state;
	env_up(&e, &o);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &wg), 0);
	env_run(&e);
	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	assert_int_equal(wait_calls(&e.r, 1, 5000), 1);
	assert_int_equal(pthread_create(&t, NULL, trigger_main, e.ctl), 0);
	pthread_join(t, NULL);
	assert_int_equal(wait_calls(&e.r, 2, 5000), 2);
	assert_int_equal(wait_calls(&e.r, 3, 600), 2);
	/* A named trigger enqueues that key. */
	assert_int_equal(tau_controller_trigger(e.ctl, "other"), 0);
	wait_key(&e.r, "other", 1, 5000);
	env_down(&e);
}

/* With no event at all, the periodic resync reconciles every primary key again. */
static void test_periodic_resync(void **state)
{
	tau_controller_options o = {.resync_ms = 150};
	tau_controller_watch_opts wg = {.res = &res_gadgets, .primary = true};
	tau_controller_stats st;
	env e;

	(void)state;
	env_up(&e, &o);
	seed_gadget(&e, "a");
	seed_gadget(&e, "b");
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &wg), 0);
	env_run(&e);
	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	wait_key(&e.r, "a", 3, 5000);
	wait_key(&e.r, "b", 3, 5000);
	tau_controller_stats_get(e.ctl, &st);
	assert_true(st.resyncs >= 2);
	assert_int_equal(st.failures, 0);
	env_down(&e);
}

/* requeue_after, a conflict (retried soon) and failures (retried with backoff). */
static void test_requeue_conflict_failure(void **state)
{
	tau_controller_options o = {.resync_ms = TAU_CONTROLLER_RESYNC_NEVER};
	tau_controller_watch_opts wg = {.res = &res_gadgets, .primary = true};
	tau_controller_stats st;
	env e;

	(void)state;
	env_up(&e, &o);
	e.r.requeue_first_ms = 100;
	e.r.script[0] = 0;              /* asks to come back in 100 ms */
	e.r.script[1] = -TAU_ECONFLICT; /* a lost race */
	e.r.script[2] = -TAU_EIO;       /* a failure */
	e.r.script[3] = -TAU_EIO;       /* another */
	e.r.script[4] = 0;
	e.r.n_script = 5;
	seed_gadget(&e, "a");
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &wg), 0);
	env_run(&e);
	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	assert_int_equal(wait_calls(&e.r, 5, 5000), 5);
	pthread_mutex_lock(&e.r.mu);
	assert_true(e.r.at_ms[1] >= e.r.at_ms[0] + 100 - 5);
	pthread_mutex_unlock(&e.r.mu);
	/* The counters move once reconcile has returned. */
	assert_int_equal(wait_calls(&e.r, 6, 300), 5);
	tau_controller_stats_get(e.ctl, &st);
	assert_int_equal(st.conflicts, 1);
	assert_int_equal(st.failures, 2);
	assert_int_equal(st.reconciles, 5);
	{
		/* The same counts on /metrics, every pass timed, the three retries counted. */
		tau_buf b = TAU_BUF_INIT(0);
		tau_controller *one[1] = {e.ctl};

		tau_controller_metrics_write(&b, one, 1);
		assert_int_equal(tau_buf_error(&b), 0);
		assert_non_null(
		        strstr(b.p, "\ntau_controller_reconcile_total{controller=\"test\"} 5\n"));
		assert_non_null(strstr(
		        b.p, "\ntau_controller_reconcile_errors_total{controller=\"test\"} 2\n"));
		assert_non_null(strstr(
		        b.p,
		        "\ntau_controller_reconcile_conflicts_total{controller=\"test\"} 1\n"));
		assert_non_null(strstr(b.p, "# TYPE tau_controller_reconcile_duration_seconds "
		                            "histogram\n"));
		assert_non_null(strstr(b.p, "\ntau_controller_reconcile_duration_seconds_count{"
		                            "controller=\"test\"} 5\n"));
		assert_non_null(strstr(b.p, "\ntau_workqueue_retries_total{name=\"test\"} 3\n"));
		assert_non_null(strstr(b.p, "\ntau_workqueue_depth{name=\"test\"} 0\n"));
		/* Every pass was taken from the queue: five waits measured. */
		assert_non_null(strstr(b.p, "\ntau_workqueue_queue_duration_seconds_count{"
		                            "name=\"test\"} 5\n"));
		tau_buf_free(&b);
	}
	env_down(&e);
}

/* A stopped worker reconciles nothing; a restarted one resyncs everything. */
static void test_start_stop(void **state)
{
	tau_controller_options o = {.resync_ms = TAU_CONTROLLER_RESYNC_NEVER};
	tau_controller_watch_opts wg = {.res = &res_gadgets, .primary = true};
	env e;
	size_t n;

	(void)state;
	env_up(&e, &o);
	seed_gadget(&e, "a");
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &wg), 0);
	tau_controller_start_informers(e.ctl); /* a follower: caches only */
	env_run(&e);
	assert_int_equal(tau_controller_wait_synced(e.ctl, 5000), 0);
	assert_false(tau_controller_worker_running(e.ctl));
	assert_int_equal(wait_calls(&e.r, 1, 300), 0);

	assert_int_equal(tau_controller_start_worker(e.ctl), 0); /* became leader */
	assert_int_equal(tau_controller_start_worker(e.ctl), 0); /* idempotent */
	wait_key(&e.r, "a", 1, 5000);
	tau_controller_stop_worker(e.ctl); /* lost leadership */
	tau_controller_stop_worker(e.ctl);
	assert_false(tau_controller_worker_running(e.ctl));
	n = calls(&e.r);
	seed_gadget(&e, "b");
	assert_int_equal(fake_kube_patch(e.fk, &res_gadgets, NULL, "a", "{\"spec\":{\"n\":3}}"), 0);
	assert_int_equal(wait_calls(&e.r, n + 1, 400), n);

	assert_int_equal(tau_controller_start_worker(e.ctl), 0);
	wait_key(&e.r, "b", 1, 5000);
	wait_key(&e.r, "a", 2, 5000);
	env_down(&e);
}

/* Refused options say what is wrong. */
static void test_refused_options(void **state)
{
	tau_controller_options o = {0};
	tau_controller_watch_opts w = {.res = &res_gadgets, .primary = true};
	tau_controller *ctl = NULL;
	env e;

	(void)state;
	assert_int_equal(tau_controller_new(&ctl, &o), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "required"));
	env_up(&e, &o);
	assert_int_equal(
	        tau_controller_watch(NULL, e.ctl,
	                             &(tau_controller_watch_opts){.res = &res_widgets,
	                                                          .keys = TAU_CONTROLLER_KEYS_ALL}),
	        -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "primary"));
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &w), 0);
	assert_int_equal(tau_controller_watch(NULL, e.ctl, &w), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "second primary"));
	assert_int_equal(tau_controller_watch(
	                         NULL, e.ctl,
	                         &(tau_controller_watch_opts){.res = &res_widgets,
	                                                      .keys = TAU_CONTROLLER_KEYS_LABEL}),
	                 -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "label"));
	assert_int_equal(tau_controller_watch(
	                         NULL, e.ctl,
	                         &(tau_controller_watch_opts){.res = &res_widgets,
	                                                      .keys = TAU_CONTROLLER_KEYS_CUSTOM}),
	                 -TAU_EINVAL);
	assert_int_equal(tau_controller_enqueue(e.ctl, ""), -TAU_EINVAL);
	tau_controller_start_informers(e.ctl);
	assert_int_equal(tau_controller_watch(NULL, e.ctl,
	                                      &(tau_controller_watch_opts){.res = &res_widgets}),
	                 -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "before start"));
	env_run(&e);
	env_down(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_synced_gate),
	        cmocka_unit_test(test_object_and_label_keys),
	        cmocka_unit_test(test_single_key_coalesces),
	        cmocka_unit_test(test_trigger_from_thread),
	        cmocka_unit_test(test_periodic_resync),
	        cmocka_unit_test(test_requeue_conflict_failure),
	        cmocka_unit_test(test_start_stop),
	        cmocka_unit_test(test_refused_options),
	};

	tau_log_set_level(TAU_LOG_WARN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
