/*
 * runtime.c - informers -> keys -> work queue -> one worker thread.
 *
 * The one idea: the work queue is the only channel between the threads.
 * Informer handlers (kube loop thread) and triggers (any thread) only add
 * keys; the worker takes one key at a time and calls reconcile.  The queue
 * lives as long as the controller, across leadership changes, so keys that
 * arrive while following simply wait (deduplicated) and a new leader resyncs
 * everything anyway.  The worker blocks in the queue until the next resync is
 * due; stopping it adds a wake key that cannot be an object key, so nothing
 * polls.  The synced gate is a counter of watches whose first list completed,
 * moved by the informers' on_synced callbacks under `mu`, with a condition
 * variable the worker (and tau_controller_wait_synced) sleep on.
 */
#define _POSIX_C_SOURCE 200809L
#include "runtime.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/mem.h"
#include "tau/prom.h"
#include "tau/thread.h"
#include "tau/workqueue.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A key no Kubernetes object can have (a control byte): wakes the worker to stop. */
#define WAKE_KEY "\001stop"

typedef struct ctl_watch {
	tau_controller *ctl;
	tau_controller_watch_opts w; /* strings below are owned copies */
	char *label;
	tau_kube_informer *inf;
	bool synced; /* guarded by ctl->mu */
} ctl_watch;

struct tau_controller {
	char *name;
	char *single_key;
	tau_kube_client *client;
	tau_kube_loop *loop;
	tau_controller_reconcile_fn reconcile;
	void *arg;
	uint64_t coalesce_ms, resync_ms;
	void (*on_synced)(void *arg, tau_controller *ctl);

	ctl_watch **watches;
	size_t n_watches;
	ctl_watch *primary;
	tau_workqueue *queue;

	pthread_mutex_t mu; /* guards the fields below */
	pthread_cond_t cond;
	size_t n_synced;
	bool informers_started;
	bool worker_running; /* a worker thread exists (joinable) */
	bool stopping;       /* the worker should return */
	pthread_t worker;

	atomic_uint_fast64_t reconciles, failures, conflicts, resyncs, enqueue_failures;
	tau_prom_histogram reconcile_latency;
};

/* ------------------------------------------------------------------------------------------ */
/* Keys                                                                                        */

static int add_key(tau_controller *ctl, const char *key, uint64_t delay_ms)
{
	int rc;

	if (key == NULL || key[0] == '\0')
		return tau_error_set(TAU_EINVAL, "controller %s: empty key", ctl->name);
	rc = tau_workqueue_add_after(ctl->queue, key, delay_ms);
	/* A shut-down queue is the controller being freed: nothing to heal. */
	if (rc != 0 && rc != -TAU_EAGAIN) {
		atomic_fetch_add(&ctl->enqueue_failures, 1);
		tau_log_error("controller could not queue a key; the next resync retries it",
		              "controller", ctl->name, "key", key, "error", tau_error_last()->msg,
		              NULL);
	}
	return rc;
}

int tau_controller_enqueue(tau_controller *ctl, const char *key)
{
	return add_key(ctl, key, 0);
}

int tau_controller_enqueue_after(tau_controller *ctl, const char *key, uint64_t delay_ms)
{
	return add_key(ctl, key, delay_ms);
}

int tau_controller_enqueue_event(tau_controller *ctl, const char *key)
{
	return add_key(ctl, key, ctl->coalesce_ms);
}

/* The key of `obj` by a NAME or NS_NAME rule, into buf; NULL when it has no name. */
static const char *object_key(char *buf, size_t cap, const ctl_watch *cw, const cJSON *obj)
{
	const char *name = tau_json_str(obj, "metadata.name"),
	           *ns = tau_json_str(obj, "metadata.namespace");
	int n;

	if (name == NULL)
		return NULL;
	if (cw->w.keys != TAU_CONTROLLER_KEYS_NS_NAME || ns == NULL || ns[0] == '\0')
		return name;
	n = snprintf(buf, cap, "%s/%s", ns, name);
	return n > 0 && (size_t)n < cap ? buf : NULL;
}

/* Every key of the primary watch (or the single key), after `delay_ms`. */
static int enqueue_all(tau_controller *ctl, uint64_t delay_ms)
{
	cJSON *all = NULL;
	const cJSON *it;
	char buf[TAU_WORKQUEUE_KEY_MAX + 1];
	int rc = 0, r;

	atomic_fetch_add(&ctl->resyncs, 1);
	if (ctl->single_key != NULL)
		return add_key(ctl, ctl->single_key, delay_ms);
	if (ctl->primary == NULL)
		return 0;
	if ((rc = tau_kube_informer_snapshot(&all, ctl->primary->inf)) != 0) {
		atomic_fetch_add(&ctl->enqueue_failures, 1);
		tau_log_error("controller resync could not read its cache", "controller", ctl->name,
		              "error", tau_error_last()->msg, NULL);
		return rc;
	}
	cJSON_ArrayForEach(it, all)
	{
		const char *key = object_key(buf, sizeof(buf), ctl->primary, it);

		if (key != NULL && (r = add_key(ctl, key, delay_ms)) != 0 && rc == 0)
			rc = r;
	}
	cJSON_Delete(all);
	return rc;
}

int tau_controller_trigger(tau_controller *ctl, const char *key)
{
	if (key != NULL)
		return add_key(ctl, key, ctl->coalesce_ms);
	return enqueue_all(ctl, ctl->coalesce_ms);
}

/* One informer event (kube loop thread). */
static void on_event(ctl_watch *cw, tau_controller_event ev, const cJSON *old_obj, const cJSON *obj)
{
	tau_controller *ctl = cw->ctl;
	char buf[TAU_WORKQUEUE_KEY_MAX + 1];
	const char *key;

	if (ctl->single_key != NULL) {
		add_key(ctl, ctl->single_key, ctl->coalesce_ms);
		return;
	}
	switch (cw->w.keys) {
	case TAU_CONTROLLER_KEYS_NAME:
	case TAU_CONTROLLER_KEYS_NS_NAME:
		if ((key = object_key(buf, sizeof(buf), cw, obj)) != NULL)
			add_key(ctl, key, ctl->coalesce_ms);
		break;
	case TAU_CONTROLLER_KEYS_LABEL:
		/* A label moved from one owner to another concerns both. */
		if (old_obj != NULL && (key = tau_json_label(old_obj, cw->label)) != NULL)
			add_key(ctl, key, ctl->coalesce_ms);
		if ((key = tau_json_label(obj, cw->label)) != NULL)
			add_key(ctl, key, ctl->coalesce_ms);
		break;
	case TAU_CONTROLLER_KEYS_ALL:
		enqueue_all(ctl, ctl->coalesce_ms);
		break;
	case TAU_CONTROLLER_KEYS_CUSTOM:
		cw->w.keys_fn(ctl->arg, ctl, ev, old_obj, obj);
		break;
	}
}

static void h_add(void *arg, const cJSON *obj)
{
	on_event(arg, TAU_CONTROLLER_ADDED, NULL, obj);
}

static void h_update(void *arg, const cJSON *old_obj, const cJSON *obj)
{
	on_event(arg, TAU_CONTROLLER_UPDATED, old_obj, obj);
}

static void h_delete(void *arg, const cJSON *obj)
{
	on_event(arg, TAU_CONTROLLER_DELETED, NULL, obj);
}

static void h_transform(void *arg, cJSON *obj)
{
	ctl_watch *cw = arg;

	cw->w.transform(cw->ctl->arg, obj);
}

/* Loop thread, after each complete list; only the first per watch moves the gate. */
static void h_synced(void *arg)
{
	ctl_watch *cw = arg;
	tau_controller *ctl = cw->ctl;
	bool all = false;

	pthread_mutex_lock(&ctl->mu);
	if (cw->synced) {
		pthread_mutex_unlock(&ctl->mu);
		return;
	}
	cw->synced = true;
	all = ctl->n_synced + 1 == ctl->n_watches;
	if (!all)
		ctl->n_synced++;
	pthread_mutex_unlock(&ctl->mu);
	if (all) {
		/* The owner hears of it before the gate opens: before the first reconcile.
		 * Only the loop thread moves the gate, so the count cannot move meanwhile. */
		tau_log_info("controller caches synced", "controller", ctl->name, NULL);
		if (ctl->on_synced != NULL)
			ctl->on_synced(ctl->arg, ctl);
		pthread_mutex_lock(&ctl->mu);
		ctl->n_synced++;
		pthread_cond_broadcast(&ctl->cond);
		pthread_mutex_unlock(&ctl->mu);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Worker                                                                                      */

/* A flag of ctl read under its lock. */
static bool flag_locked(tau_controller *ctl, const bool *flag)
{
	bool v;

	pthread_mutex_lock(&ctl->mu);
	v = *flag;
	pthread_mutex_unlock(&ctl->mu);
	return v;
}

static bool should_stop(tau_controller *ctl)
{
	return flag_locked(ctl, &ctl->stopping);
}

/* Sleep until every watch synced or a stop.  @return false on stop. */
static bool wait_gate(tau_controller *ctl)
{
	bool ok;

	pthread_mutex_lock(&ctl->mu);
	while (!ctl->stopping && ctl->n_synced < ctl->n_watches)
		pthread_cond_wait(&ctl->cond, &ctl->mu);
	ok = !ctl->stopping;
	pthread_mutex_unlock(&ctl->mu);
	return ok;
}

static void process(tau_controller *ctl, const char *key)
{
	tau_controller_result res = {0};
	uint64_t started_us = tau_clock_mono_us();
	int rc;

	tau_error_clear();
	rc = ctl->reconcile(ctl->arg, ctl, key, &res);
	/* Counted once it ended, so a scrape sees the pass's outcome with its count. */
	tau_prom_histogram_observe(&ctl->reconcile_latency, tau_clock_mono_us() - started_us);
	atomic_fetch_add(&ctl->reconciles, 1);
	if (rc == -TAU_ECONFLICT) {
		atomic_fetch_add(&ctl->conflicts, 1);
		tau_log_info("controller write lost a race; retrying", "controller", ctl->name,
		             "key", key, "error", tau_error_last()->msg, NULL);
		tau_workqueue_add_rate_limited(ctl->queue, key);
	} else if (rc != 0) {
		char n[24];

		atomic_fetch_add(&ctl->failures, 1);
		snprintf(n, sizeof(n), "%u", tau_workqueue_requeues(ctl->queue, key) + 1);
		tau_log_warn("controller reconcile failed; retrying with backoff", "controller",
		             ctl->name, "key", key, "code", tau_error_name(rc), "error",
		             tau_error_last()->msg, "failures", n, NULL);
		if (tau_workqueue_add_rate_limited(ctl->queue, key) != 0) {
			atomic_fetch_add(&ctl->enqueue_failures, 1);
			tau_log_error(
			        "controller could not requeue a key; the next resync retries it",
			        "controller", ctl->name, "key", key, NULL);
		}
	} else {
		tau_workqueue_forget(ctl->queue, key);
		if (res.requeue_after_ms > 0)
			add_key(ctl, key, res.requeue_after_ms);
	}
}

static void *worker_main(void *arg)
{
	tau_controller *ctl = arg;
	uint64_t next_resync;

	if (!wait_gate(ctl))
		return NULL;
	enqueue_all(ctl, 0); /* a new leader looks at everything once */
	next_resync = ctl->resync_ms == TAU_CONTROLLER_RESYNC_NEVER
	                      ? UINT64_MAX
	                      : tau_clock_mono_ms() + ctl->resync_ms;
	for (;;) {
		uint64_t now = tau_clock_mono_ms();
		int64_t wait = next_resync == UINT64_MAX ? -1
		               : next_resync > now       ? (int64_t)(next_resync - now)
		                                         : 0;
		char *key = NULL;
		int rc;

		if (next_resync != UINT64_MAX && now >= next_resync) {
			enqueue_all(ctl, 0);
			next_resync = now + ctl->resync_ms;
			continue;
		}
		rc = tau_workqueue_get(ctl->queue, &key, wait);
		if (rc == -TAU_ETIMEOUT)
			continue;
		if (rc == -TAU_EAGAIN)
			break; /* the queue was shut down (free) */
		if (rc != 0)
			continue; /* out of memory copying a key: it stays queued */
		if (strcmp(key, WAKE_KEY) == 0) {
			tau_workqueue_done(ctl->queue, key);
			free(key);
			if (should_stop(ctl))
				break;
			continue;
		}
		if (should_stop(ctl)) {
			/* Not leading any more: leave the key for the next leader term. */
			tau_workqueue_done(ctl->queue, key);
			tau_workqueue_add(ctl->queue, key);
			free(key);
			break;
		}
		process(ctl, key);
		tau_workqueue_done(ctl->queue, key);
		free(key);
	}
	return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Lifecycle                                                                                   */

int tau_controller_new(tau_controller **out, const tau_controller_options *opts)
{
	tau_controller *ctl;
	int rc;

	if (opts == NULL || opts->name == NULL || opts->client == NULL || opts->loop == NULL ||
	    opts->reconcile == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "controller: name, client, loop and reconcile are required");
	if (opts->single_key != NULL &&
	    (opts->single_key[0] == '\0' || strlen(opts->single_key) > TAU_WORKQUEUE_KEY_MAX))
		return tau_error_set(TAU_EINVAL, "controller %s: single key empty or too long",
		                     opts->name);
	ctl = calloc(1, sizeof(*ctl));
	if (ctl == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	pthread_mutex_init(&ctl->mu, NULL);
	pthread_cond_init(&ctl->cond, NULL);
	ctl->client = opts->client;
	ctl->loop = opts->loop;
	ctl->reconcile = opts->reconcile;
	ctl->arg = opts->arg;
	ctl->coalesce_ms = opts->coalesce_ms;
	ctl->resync_ms = opts->resync_ms != 0 ? opts->resync_ms : TAU_CONTROLLER_DEFAULT_RESYNC_MS;
	ctl->on_synced = opts->on_synced;
	ctl->name = strdup(opts->name);
	ctl->single_key = opts->single_key != NULL ? strdup(opts->single_key) : NULL;
	if (ctl->name == NULL || (opts->single_key != NULL && ctl->single_key == NULL)) {
		tau_controller_free(ctl);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	if ((rc = tau_workqueue_new(&ctl->queue, NULL)) != 0) {
		tau_controller_free(ctl);
		return rc;
	}
	*out = ctl;
	return 0;
}

int tau_controller_watch(tau_kube_informer **inf, tau_controller *ctl,
                         const tau_controller_watch_opts *w)
{
	tau_kube_informer_options io = {0};
	tau_kube_handlers h;
	ctl_watch *cw, **grown;
	int rc;

	if (flag_locked(ctl, &ctl->informers_started))
		return tau_error_set(TAU_EINVAL, "controller %s: watches are added before start",
		                     ctl->name);
	if (w == NULL || w->res == NULL)
		return tau_error_set(TAU_EINVAL, "controller %s: watch without a resource",
		                     ctl->name);
	if (w->primary && ctl->primary != NULL)
		return tau_error_set(TAU_EINVAL, "controller %s: a second primary watch (%s)",
		                     ctl->name, w->res->plural);
	if (w->primary &&
	    (w->keys == TAU_CONTROLLER_KEYS_LABEL || w->keys == TAU_CONTROLLER_KEYS_ALL))
		return tau_error_set(
		        TAU_EINVAL,
		        "controller %s: the primary watch %s cannot have LABEL or ALL keys",
		        ctl->name, w->res->plural);
	if (w->keys == TAU_CONTROLLER_KEYS_LABEL && (w->label == NULL || w->label[0] == '\0'))
		return tau_error_set(TAU_EINVAL, "controller %s: label keys without a label (%s)",
		                     ctl->name, w->res->plural);
	if (w->keys == TAU_CONTROLLER_KEYS_CUSTOM && w->keys_fn == NULL)
		return tau_error_set(TAU_EINVAL,
		                     "controller %s: custom keys without a function (%s)",
		                     ctl->name, w->res->plural);
	if (w->keys == TAU_CONTROLLER_KEYS_ALL && ctl->primary == NULL && ctl->single_key == NULL)
		return tau_error_set(
		        TAU_EINVAL, "controller %s: ALL keys need a primary watch added first (%s)",
		        ctl->name, w->res->plural);
	cw = calloc(1, sizeof(*cw));
	grown = realloc(ctl->watches, (ctl->n_watches + 1) * sizeof(*grown));
	if (grown != NULL)
		ctl->watches = grown;
	if (cw == NULL || grown == NULL) {
		free(cw);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cw->ctl = ctl;
	cw->w = *w;
	if (w->label != NULL && (cw->label = strdup(w->label)) == NULL) {
		free(cw);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	cw->w.label = cw->label;
	io.namespace = w->namespace;
	io.label_selector = w->label_selector;
	io.field_selector = w->field_selector;
	io.on_synced = h_synced;
	io.transform = w->transform != NULL ? h_transform : NULL;
	h = (tau_kube_handlers){h_add, h_update, h_delete, cw};
	if ((rc = tau_kube_informer_new(&cw->inf, ctl->loop, w->res, &io, &h)) != 0) {
		free(cw->label);
		free(cw);
		return tau_error_wrap("controller %s: informer for %s", ctl->name, w->res->plural);
	}
	ctl->watches[ctl->n_watches++] = cw;
	if (w->primary)
		ctl->primary = cw;
	if (inf != NULL)
		*inf = cw->inf;
	return 0;
}

void tau_controller_start_informers(tau_controller *ctl)
{
	bool start;

	pthread_mutex_lock(&ctl->mu);
	start = !ctl->informers_started;
	ctl->informers_started = true;
	pthread_mutex_unlock(&ctl->mu);
	if (!start)
		return;
	for (size_t i = 0; i < ctl->n_watches; i++)
		tau_kube_informer_start(ctl->watches[i]->inf);
}

int tau_controller_start_worker(tau_controller *ctl)
{
	int rc = 0;

	tau_controller_start_informers(ctl);
	pthread_mutex_lock(&ctl->mu);
	if (!ctl->worker_running) {
		ctl->stopping = false;
		if (pthread_create(&ctl->worker, NULL, worker_main, ctl) != 0)
			rc = tau_error_set(TAU_EIO, "controller %s: cannot start the worker thread",
			                   ctl->name);
		else
			ctl->worker_running = true;
	}
	pthread_mutex_unlock(&ctl->mu);
	if (rc == 0)
		tau_log_info("controller worker started", "controller", ctl->name, NULL);
	return rc;
}

void tau_controller_stop_worker(tau_controller *ctl)
{
	bool join;

	if (ctl == NULL)
		return;
	pthread_mutex_lock(&ctl->mu);
	join = ctl->worker_running;
	ctl->stopping = true;
	pthread_cond_broadcast(&ctl->cond);
	pthread_mutex_unlock(&ctl->mu);
	if (!join)
		return;
	/* Wakes a worker blocked in the queue; if the add fails the queue is shut down,
	 * which wakes it too. */
	if (tau_workqueue_add(ctl->queue, WAKE_KEY) != 0)
		tau_workqueue_shutdown(ctl->queue);
	pthread_join(ctl->worker, NULL);
	pthread_mutex_lock(&ctl->mu);
	ctl->worker_running = false;
	pthread_mutex_unlock(&ctl->mu);
	tau_log_info("controller worker stopped", "controller", ctl->name, NULL);
}

bool tau_controller_worker_running(tau_controller *ctl)
{
	return flag_locked(ctl, &ctl->worker_running);
}

void tau_controller_free(tau_controller *ctl)
{
	if (ctl == NULL)
		return;
	tau_controller_stop_worker(ctl);
	for (size_t i = 0; i < ctl->n_watches; i++) {
		tau_kube_informer_free(ctl->watches[i]->inf);
		tau_free_many(ctl->watches[i]->label, ctl->watches[i]);
	}
	tau_workqueue_free(ctl->queue);
	tau_free_many(ctl->watches, ctl->name, ctl->single_key);
	pthread_cond_destroy(&ctl->cond);
	pthread_mutex_destroy(&ctl->mu);
	free(ctl);
}

bool tau_controller_synced(tau_controller *ctl)
{
	bool s;

	pthread_mutex_lock(&ctl->mu);
	s = ctl->n_synced == ctl->n_watches;
	pthread_mutex_unlock(&ctl->mu);
	return s;
}

int tau_controller_wait_synced(tau_controller *ctl, uint64_t timeout_ms)
{
	struct timespec ts;
	char missing[512] = "";
	size_t used = 0;
	int rc = 0;

	tau_thread_deadline_ms(&ts, CLOCK_REALTIME, (int64_t)timeout_ms);
	pthread_mutex_lock(&ctl->mu);
	while (ctl->n_synced < ctl->n_watches && rc == 0)
		rc = pthread_cond_timedwait(&ctl->cond, &ctl->mu, &ts);
	if (ctl->n_synced < ctl->n_watches) {
		for (size_t i = 0; i < ctl->n_watches; i++) {
			int n;

			if (ctl->watches[i]->synced)
				continue;
			n = snprintf(missing + used, sizeof(missing) - used, "%s%s",
			             used ? ", " : "", ctl->watches[i]->w.res->plural);
			if (n < 0 || (size_t)n >= sizeof(missing) - used)
				break;
			used += (size_t)n;
		}
		rc = -1;
	} else {
		rc = 0;
	}
	pthread_mutex_unlock(&ctl->mu);
	if (rc != 0)
		return tau_error_set(TAU_ETIMEOUT, "controller %s: not synced after %llu ms: %s",
		                     ctl->name, (unsigned long long)timeout_ms, missing);
	return 0;
}

tau_kube_client *tau_controller_client(tau_controller *ctl)
{
	return ctl->client;
}

const char *tau_controller_name(const tau_controller *ctl)
{
	return ctl->name;
}

void tau_controller_stats_get(tau_controller *ctl, tau_controller_stats *out)
{
	out->reconciles = atomic_load(&ctl->reconciles);
	out->failures = atomic_load(&ctl->failures);
	out->conflicts = atomic_load(&ctl->conflicts);
	out->resyncs = atomic_load(&ctl->resyncs);
	out->enqueue_failures = atomic_load(&ctl->enqueue_failures);
}

/* One counter family: a series per controller. */
static void counter_family(tau_buf *b, const char *name, const char *help,
                           tau_controller *const *ctls, size_t n,
                           const atomic_uint_fast64_t *(*field)(tau_controller *ctl))
{
	tau_prom_family(b, name, "counter", help);
	for (size_t i = 0; i < n; i++)
		tau_prom_labelled(b, name, "controller", ctls[i]->name,
		                  atomic_load(field(ctls[i])));
}

static const atomic_uint_fast64_t *f_reconciles(tau_controller *c)
{
	return &c->reconciles;
}

static const atomic_uint_fast64_t *f_failures(tau_controller *c)
{
	return &c->failures;
}

static const atomic_uint_fast64_t *f_conflicts(tau_controller *c)
{
	return &c->conflicts;
}

static const atomic_uint_fast64_t *f_resyncs(tau_controller *c)
{
	return &c->resyncs;
}

static const atomic_uint_fast64_t *f_enqueue_failures(tau_controller *c)
{
	return &c->enqueue_failures;
}

void tau_controller_metrics_write(tau_buf *b, tau_controller *const *ctls, size_t n)
{
	tau_workqueue_stats st;

	counter_family(b, "tau_controller_reconcile_total",
	               "Reconcile passes that ended, by controller (errors and conflicts "
	               "included).",
	               ctls, n, f_reconciles);
	counter_family(b, "tau_controller_reconcile_errors_total",
	               "Reconcile passes that failed (retried with backoff), by controller.", ctls,
	               n, f_failures);
	counter_family(b, "tau_controller_reconcile_conflicts_total",
	               "Reconcile passes whose write lost a race (409; retried at once).", ctls, n,
	               f_conflicts);
	counter_family(b, "tau_controller_resyncs_total",
	               "Rounds that queued every key (periodic resync, leadership, triggers).",
	               ctls, n, f_resyncs);
	counter_family(b, "tau_controller_enqueue_failures_total",
	               "Keys the work queue refused (out of memory; the next resync heals).", ctls,
	               n, f_enqueue_failures);
	tau_prom_family(b, "tau_controller_reconcile_duration_seconds", "histogram",
	                "Time one reconcile pass took, by controller.");
	for (size_t i = 0; i < n; i++)
		tau_prom_histogram_write(b, "tau_controller_reconcile_duration_seconds",
		                         (const char *const[]){"controller", ctls[i]->name, NULL},
		                         &ctls[i]->reconcile_latency);
	tau_prom_family(b, "tau_workqueue_depth", "gauge",
	                "Keys queued and ready, waiting for the worker (delayed retries not "
	                "counted), by queue (the controller's name).");
	for (size_t i = 0; i < n; i++) {
		tau_workqueue_stats_get(ctls[i]->queue, &st);
		tau_prom_labelled(b, "tau_workqueue_depth", "name", ctls[i]->name, st.depth);
	}
	tau_prom_family(b, "tau_workqueue_delayed", "gauge",
	                "Keys waiting for a delay (coalescing, backoff, requeue-after), by queue.");
	for (size_t i = 0; i < n; i++) {
		tau_workqueue_stats_get(ctls[i]->queue, &st);
		tau_prom_labelled(b, "tau_workqueue_delayed", "name", ctls[i]->name, st.delayed);
	}
	tau_prom_family(b, "tau_workqueue_adds_total", "counter",
	                "Keys queued (adding a key already waiting counts once), by queue.");
	for (size_t i = 0; i < n; i++) {
		tau_workqueue_stats_get(ctls[i]->queue, &st);
		tau_prom_labelled(b, "tau_workqueue_adds_total", "name", ctls[i]->name, st.adds);
	}
	tau_prom_family(b, "tau_workqueue_retries_total", "counter",
	                "Keys queued again with backoff after a failed or conflicting pass, by "
	                "queue.");
	for (size_t i = 0; i < n; i++) {
		tau_workqueue_stats_get(ctls[i]->queue, &st);
		tau_prom_labelled(b, "tau_workqueue_retries_total", "name", ctls[i]->name,
		                  st.retries);
	}
	tau_prom_family(b, "tau_workqueue_queue_duration_seconds", "histogram",
	                "Time a key waited in the queue before the worker took it, by queue.");
	for (size_t i = 0; i < n; i++)
		tau_prom_histogram_write(b, "tau_workqueue_queue_duration_seconds",
		                         (const char *const[]){"name", ctls[i]->name, NULL},
		                         tau_workqueue_queue_latency(ctls[i]->queue));
}
