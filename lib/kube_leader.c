/*
 * kube_leader.c - Lease-based leader election (client-go's algorithm).
 *
 * The one idea: expiry is judged by *our* monotonic clock against the moment
 * we last saw the Lease record change, never by the renewTime written by
 * another machine, so clock skew between candidates cannot hand out two
 * leaderships.  The record is compared as serialized spec bytes; any change
 * restarts the observation.
 *
 * The elector owns one thread.  Waiting between tries is a timed wait on a
 * condition variable, so stop() interrupts it at once.
 */
#define _POSIX_C_SOURCE 200809L
#include "tau/clock.h"
#include "tau/kube_leader.h"

#include "kube_internal.h"
#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/log.h"
#include "tau/mem.h"
#include "tau/thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tau_kube_leader {
	tau_kube_client *client;
	tau_kube_leader_config cfg;
	char *ns, *name, *identity;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	pthread_t thread;
	bool thread_running;
	atomic_bool leading;
	atomic_bool lost;

	/* elector-thread state */
	cJSON *lease;        /* last Lease read or written */
	char *observed_spec; /* its spec, serialized */
	char observed_holder[256];
	uint64_t observed_ms; /* our clock when the record last changed */
	int64_t observed_duration_s;
};

void tau_kube_leader_microtime(char *buf, size_t cap, uint64_t wall_us)
{
	time_t secs = (time_t)(wall_us / 1000000u);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(wall_us % 1000000u));
}

int tau_kube_leader_new(tau_kube_leader **out, tau_kube_client *client,
                        const tau_kube_leader_config *cfg)
{
	tau_kube_leader *le;

	if (cfg->namespace == NULL || cfg->name == NULL || cfg->identity == NULL ||
	    cfg->identity[0] == '\0')
		return tau_error_set(TAU_EINVAL,
		                     "leader election: namespace, name and identity are "
		                     "required");
	if (strlen(cfg->identity) >= sizeof(le->observed_holder))
		return tau_error_set(TAU_EINVAL, "leader election: identity is too long");
	le = calloc(1, sizeof(*le));
	if (le == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	le->client = client;
	le->cfg = *cfg;
	if (le->cfg.lease_duration_ms == 0)
		le->cfg.lease_duration_ms = 15000;
	if (le->cfg.renew_deadline_ms == 0)
		le->cfg.renew_deadline_ms = 10000;
	if (le->cfg.retry_period_ms == 0)
		le->cfg.retry_period_ms = 2000;
	if (!(le->cfg.lease_duration_ms > le->cfg.renew_deadline_ms &&
	      (double)le->cfg.renew_deadline_ms > 1.2 * (double)le->cfg.retry_period_ms) ||
	    le->cfg.lease_duration_ms < 1000) {
		free(le);
		return tau_error_set(
		        TAU_EINVAL,
		        "leader election: need lease duration (>= 1 s) > renew deadline "
		        "> 1.2 x retry period");
	}
	le->ns = tau_kube_strdup(cfg->namespace);
	le->name = tau_kube_strdup(cfg->name);
	le->identity = tau_kube_strdup(cfg->identity);
	if (le->ns == NULL || le->name == NULL || le->identity == NULL) {
		tau_free_many(le->ns, le->name, le->identity);
		free(le);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	le->cfg.namespace = le->ns;
	le->cfg.name = le->name;
	le->cfg.identity = le->identity;
	pthread_mutex_init(&le->lock, NULL);
	tau_thread_cond_init_monotonic(&le->cond);
	atomic_init(&le->leading, false);
	atomic_init(&le->lost, false);
	*out = le;
	return 0;
}

/* Wait up to ms; @return true if asked to stop. */
static bool wait_or_stop(tau_kube_leader *le, uint64_t ms)
{
	uint64_t until = tau_clock_mono_ms() + ms;
	struct timespec ts = {.tv_sec = (time_t)(until / 1000),
	                      .tv_nsec = (long)(until % 1000) * 1000000L};
	bool stop;

	pthread_mutex_lock(&le->lock);
	while (!le->stopping && tau_clock_mono_ms() < until)
		pthread_cond_timedwait(&le->cond, &le->lock, &ts);
	stop = le->stopping;
	pthread_mutex_unlock(&le->lock);
	return stop;
}

static bool stop_requested(tau_kube_leader *le)
{
	bool stop;

	pthread_mutex_lock(&le->lock);
	stop = le->stopping;
	pthread_mutex_unlock(&le->lock);
	return stop;
}

/* Send a Lease write (PUT or POST) and keep the result. */
static int lease_write(tau_kube_leader *le, const cJSON *lease, bool create, uint64_t timeout_ms)
{
	char *path = NULL, *body = NULL;
	cJSON *resp = NULL;
	int rc;

	rc = tau_kube_path(&path, &tau_kube_res_leases, le->ns, create ? NULL : le->name, NULL);
	if (rc == 0)
		rc = tau_json_print(&body, lease);
	if (rc == 0) {
		tau_kube_request req = {.method = create ? "POST" : "PUT",
		                        .path = path,
		                        .body = body,
		                        .body_len = strlen(body),
		                        .timeout_ms = timeout_ms,
		                        .max_retries = 0};

		rc = tau_kube_client_request(&resp, le->client, &req);
	}
	if (rc == 0) {
		cJSON_Delete(le->lease);
		le->lease = resp;
		resp = NULL;
	}
	free(path);
	free(body);
	cJSON_Delete(resp);
	return rc;
}

/* Fill spec with our record; keep acquireTime/transitions when renewing. */
static int fill_spec(tau_kube_leader *le, cJSON *spec, bool renewing, int64_t transitions)
{
	char now[40];

	tau_kube_leader_microtime(now, sizeof(now), tau_clock_wall_us());
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "holderIdentity");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
	if (!cJSON_AddStringToObject(spec, "holderIdentity", le->identity) ||
	    !cJSON_AddNumberToObject(spec, "leaseDurationSeconds",
	                             (double)((le->cfg.lease_duration_ms + 999) / 1000)) ||
	    !cJSON_AddStringToObject(spec, "renewTime", now))
		return -1;
	if (!renewing || !cJSON_HasObjectItem(spec, "acquireTime")) {
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "acquireTime");
		if (!cJSON_AddStringToObject(spec, "acquireTime", now))
			return -1;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseTransitions");
	if (!cJSON_AddNumberToObject(spec, "leaseTransitions", (double)transitions))
		return -1;
	return 0;
}

static void observe(tau_kube_leader *le, const cJSON *lease)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
	const char *holder = "";
	char *text = NULL;
	int64_t dur = 0;

	if (spec == NULL || tau_json_print(&text, spec) < 0)
		text = tau_kube_strdup("");
	if (text == NULL)
		return;
	if (le->observed_spec == NULL || strcmp(le->observed_spec, text) != 0) {
		free(le->observed_spec);
		le->observed_spec = text;
		text = NULL;
		le->observed_ms = tau_clock_mono_ms();
		if (tau_json_get_string(&holder, lease, "spec.holderIdentity") < 0)
			holder = "";
		if (tau_json_get_int(&dur, lease, "spec.leaseDurationSeconds") < 0 || dur <= 0)
			dur = (int64_t)(le->cfg.lease_duration_ms / 1000);
		le->observed_duration_s = dur;
		if (strcmp(le->observed_holder, holder) != 0) {
			snprintf(le->observed_holder, sizeof(le->observed_holder), "%s", holder);
			if (le->cfg.on_new_leader && holder[0])
				le->cfg.on_new_leader(le->cfg.arg, holder);
		}
	}
	free(text);
	tau_error_clear();
}

/* One tryAcquireOrRenew.  @return true when we hold the Lease afterwards. */
static bool try_acquire_or_renew(tau_kube_leader *le, uint64_t timeout_ms)
{
	uint64_t now = tau_clock_mono_ms();
	cJSON *got = NULL, *spec;
	int64_t transitions = 0;
	bool mine;
	int rc;

	/* Fast path: we hold it and our view is fresh - PUT our cached copy. */
	if (le->lease != NULL && strcmp(le->observed_holder, le->identity) == 0 &&
	    now < le->observed_ms + le->cfg.lease_duration_ms) {
		cJSON *copy = cJSON_Duplicate(le->lease, 1);

		spec = copy ? cJSON_GetObjectItemCaseSensitive(copy, "spec") : NULL;
		if (spec && tau_json_get_int(&transitions, copy, "spec.leaseTransitions") < 0)
			transitions = 0;
		if (spec && fill_spec(le, spec, true, transitions) == 0 &&
		    lease_write(le, copy, false, timeout_ms) == 0) {
			cJSON_Delete(copy);
			observe(le, le->lease);
			return true;
		}
		cJSON_Delete(copy);
		tau_log_debug("leader: fast renew failed", "lease", le->name, "error",
		              tau_error_last()->msg, NULL);
	}
	{
		char *path = NULL;
		tau_kube_request req = {
		        .method = "GET", .timeout_ms = timeout_ms, .max_retries = 0};

		rc = tau_kube_path(&path, &tau_kube_res_leases, le->ns, le->name, NULL);
		req.path = path;
		if (rc == 0)
			rc = tau_kube_client_request(&got, le->client, &req);
		free(path);
	}
	if (rc == -TAU_ENOTFOUND) {
		cJSON *lease = cJSON_CreateObject(), *md;

		spec = NULL;
		if (lease &&
		    cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1") &&
		    cJSON_AddStringToObject(lease, "kind", "Lease") &&
		    (md = cJSON_AddObjectToObject(lease, "metadata")) &&
		    cJSON_AddStringToObject(md, "name", le->name) &&
		    cJSON_AddStringToObject(md, "namespace", le->ns))
			spec = cJSON_AddObjectToObject(lease, "spec");
		rc = spec && fill_spec(le, spec, false, 0) == 0
		             ? lease_write(le, lease, true, timeout_ms)
		             : -TAU_ENOMEM;
		cJSON_Delete(lease);
		if (rc < 0)
			return false; /* lost the create race, or an error */
		observe(le, le->lease);
		return true;
	}
	if (rc < 0) {
		tau_log_debug("leader: cannot read lease", "lease", le->name, "error",
		              tau_error_last()->msg, NULL);
		return false;
	}
	observe(le, got);
	mine = strcmp(le->observed_holder, le->identity) == 0;
	if (le->observed_holder[0] != '\0' && !mine &&
	    now < le->observed_ms + (uint64_t)le->observed_duration_s * 1000u) {
		cJSON_Delete(le->lease);
		le->lease = got;
		return false; /* held by someone else and not expired */
	}
	spec = cJSON_GetObjectItemCaseSensitive(got, "spec");
	if (spec == NULL)
		spec = cJSON_AddObjectToObject(got, "spec");
	if (tau_json_get_int(&transitions, got, "spec.leaseTransitions") < 0)
		transitions = 0;
	if (!mine)
		transitions++;
	rc = spec && fill_spec(le, spec, mine, transitions) == 0
	             ? lease_write(le, got, false, timeout_ms)
	             : -TAU_ENOMEM;
	cJSON_Delete(got);
	if (rc < 0) {
		tau_log_debug("leader: lease update failed", "lease", le->name, "error",
		              tau_error_last()->msg, NULL);
		return false;
	}
	observe(le, le->lease);
	return true;
}

static void release(tau_kube_leader *le)
{
	for (int i = 0; i < 3 && le->lease; i++) {
		cJSON *copy = cJSON_Duplicate(le->lease, 1);
		cJSON *spec = copy ? cJSON_GetObjectItemCaseSensitive(copy, "spec") : NULL;
		char now[40];
		int rc = -1;

		tau_kube_leader_microtime(now, sizeof(now), tau_clock_wall_us());
		if (spec) {
			cJSON_ReplaceItemInObjectCaseSensitive(spec, "holderIdentity",
			                                       cJSON_CreateString(""));
			cJSON_DeleteItemFromObjectCaseSensitive(spec, "leaseDurationSeconds");
			cJSON_AddNumberToObject(spec, "leaseDurationSeconds", 1);
			cJSON_DeleteItemFromObjectCaseSensitive(spec, "renewTime");
			cJSON_AddStringToObject(spec, "renewTime", now);
			cJSON_DeleteItemFromObjectCaseSensitive(spec, "acquireTime");
			cJSON_AddStringToObject(spec, "acquireTime", now);
			rc = lease_write(le, copy, false, le->cfg.renew_deadline_ms);
		}
		cJSON_Delete(copy);
		if (rc == 0 || rc != -TAU_ECONFLICT)
			break;
		/* 409: refresh our copy and try again. */
		{
			cJSON *got = NULL;

			if (tau_kube_get(&got, le->client, &tau_kube_res_leases, le->ns,
			                 le->name) != 0)
				break;
			cJSON_Delete(le->lease);
			le->lease = got;
		}
	}
}

static void *elector(void *arg)
{
	tau_kube_leader *le = arg;
	const tau_kube_leader_config *c = &le->cfg;

	/* acquire(): try every retry period, jittered by 1.2. */
	for (;;) {
		if (stop_requested(le))
			return NULL;
		if (try_acquire_or_renew(le, c->renew_deadline_ms))
			break;
		if (wait_or_stop(le, c->retry_period_ms + (uint64_t)(tau_backoff_rand() * 1.2 *
		                                                     (double)c->retry_period_ms)))
			return NULL;
	}
	atomic_store(&le->leading, true);
	tau_log_debug("leader: acquired lease", "lease", le->name, "identity", le->identity, NULL);
	if (c->on_started)
		c->on_started(c->arg);
	/* renew(): each round must succeed within the renew deadline. */
	for (;;) {
		uint64_t deadline = tau_clock_mono_ms() + c->renew_deadline_ms;
		bool renewed = false;

		if (wait_or_stop(le, c->retry_period_ms))
			break;
		while (!stop_requested(le)) {
			uint64_t now = tau_clock_mono_ms();

			if (now >= deadline)
				break;
			if (try_acquire_or_renew(le, deadline - now)) {
				renewed = true;
				break;
			}
			now = tau_clock_mono_ms();
			if (now >= deadline)
				break;
			wait_or_stop(le, deadline - now < c->retry_period_ms ? deadline - now
			                                                     : c->retry_period_ms);
		}
		if (stop_requested(le))
			break;
		if (!renewed) {
			tau_log_debug("leader: failed to renew lease", "lease", le->name, NULL);
			atomic_store(&le->leading, false);
			atomic_store(&le->lost, true);
			if (c->on_stopped)
				c->on_stopped(c->arg);
			return NULL;
		}
	}
	/* Asked to stop while leading. */
	if (c->release_on_cancel)
		release(le);
	atomic_store(&le->leading, false);
	if (c->on_stopped)
		c->on_stopped(c->arg);
	return NULL;
}

int tau_kube_leader_start(tau_kube_leader *le)
{
	if (le->thread_running)
		return 0;
	if (pthread_create(&le->thread, NULL, elector, le) != 0)
		return tau_error_set(TAU_EIO, "cannot start the leader election thread");
	le->thread_running = true;
	return 0;
}

void tau_kube_leader_stop(tau_kube_leader *le)
{
	if (!le->thread_running)
		return;
	tau_thread_stop_join(&le->lock, &le->cond, &le->stopping, &le->thread, 1);
	le->thread_running = false;
}

bool tau_kube_leader_is_leader(tau_kube_leader *le)
{
	return atomic_load(&le->leading);
}

bool tau_kube_leader_lost(tau_kube_leader *le)
{
	return atomic_load(&le->lost);
}

void tau_kube_leader_free(tau_kube_leader *le)
{
	if (le == NULL)
		return;
	tau_kube_leader_stop(le);
	cJSON_Delete(le->lease);
	free(le->observed_spec);
	pthread_cond_destroy(&le->cond);
	pthread_mutex_destroy(&le->lock);
	tau_free_many(le->ns, le->name, le->identity);
	free(le);
}
