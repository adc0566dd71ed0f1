/*
 * keys.c - the issuer's key set and the thread that keeps it (keys.h).
 */
#include "keys.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/mem.h"
#include "tau/thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REFRESH_S     300 /* a held set is fetched again this often */
#define REFETCH_MIN_S 10  /* an unknown kid refetches at most this often */
#define RETRY_MIN_S   1
#define RETRY_MAX_S   30

struct tau_auth_keys {
	tau_auth_keys_fetch_fn fetch;
	void *ud;
	char *audience, *user;
	pthread_rwlock_t lock; /* guards issuer, jwks */
	char *issuer;
	tau_jwks *jwks;
	pthread_mutex_t mu; /* guards the fields below */
	pthread_cond_t cond;
	bool stop, started, want;
	int64_t last_fetch_s; /* monotonic */
	pthread_t thread;
	atomic_uint_fast64_t fetched, fetch_failed, n_keys;
};

int tau_auth_keys_new(tau_auth_keys **out, tau_auth_keys_fetch_fn fetch, void *ud,
                      const char *audience, const char *user)
{
	tau_auth_keys *k;

	if (fetch == NULL || audience == NULL || user == NULL)
		return tau_error_set(TAU_EINVAL, "local token verification needs fetch, audience "
		                                 "and user");
	k = calloc(1, sizeof(*k));
	if (k == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	k->fetch = fetch;
	k->ud = ud;
	k->audience = strdup(audience);
	k->user = strdup(user);
	if (k->audience == NULL || k->user == NULL) {
		free(k->audience);
		free(k->user);
		free(k);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	pthread_rwlock_init(&k->lock, NULL);
	pthread_mutex_init(&k->mu, NULL);
	tau_thread_cond_init_monotonic(&k->cond);
	*out = k;
	return 0;
}

/* One fetch; the set is replaced only by a good one. */
static bool fetch_once(tau_auth_keys *k)
{
	char *issuer = NULL, count[24];
	tau_jwks *jwks = NULL;
	char *old_issuer;
	tau_jwks *old;
	bool changed;

	if (k->fetch(k->ud, &issuer, &jwks) < 0) {
		atomic_fetch_add(&k->fetch_failed, 1);
		tau_log_warn(
		        "cannot fetch the service-account issuer's keys; agents wait for their "
		        "TokenReview until they are fetched",
		        "reason", tau_error_last()->msg, NULL);
		return false;
	}
	pthread_rwlock_wrlock(&k->lock);
	changed = k->issuer == NULL || strcmp(k->issuer, issuer) != 0 ||
	          tau_jwks_count(k->jwks) != tau_jwks_count(jwks);
	old_issuer = k->issuer;
	old = k->jwks;
	k->issuer = issuer;
	k->jwks = jwks;
	pthread_rwlock_unlock(&k->lock);
	free(old_issuer);
	tau_jwks_free(old);
	atomic_fetch_add(&k->fetched, 1);
	atomic_store(&k->n_keys, tau_jwks_count(jwks));
	if (changed) {
		snprintf(count, sizeof(count), "%zu", tau_jwks_count(jwks));
		tau_log_info(
		        "service-account issuer keys fetched: agents with a verified token are "
		        "admitted before their TokenReview",
		        "issuer", issuer, "keys", count, NULL);
	}
	return true;
}

static void *keys_thread(void *arg)
{
	tau_auth_keys *k = arg;
	int64_t retry = RETRY_MIN_S;

	pthread_mutex_lock(&k->mu);
	while (!k->stop) {
		struct timespec until;
		bool ok;

		k->want = false;
		k->last_fetch_s = (int64_t)(tau_clock_mono_ms() / 1000);
		pthread_mutex_unlock(&k->mu);
		ok = fetch_once(k);
		pthread_mutex_lock(&k->mu);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += ok ? REFRESH_S : retry;
		retry = ok ? RETRY_MIN_S : (retry * 2 > RETRY_MAX_S ? RETRY_MAX_S : retry * 2);
		while (!k->stop && !k->want &&
		       pthread_cond_timedwait(&k->cond, &k->mu, &until) == 0)
			;
		/* An unknown kid waits out REFETCH_MIN_S since the last fetch. */
		if (!k->stop && k->want) {
			int64_t left = k->last_fetch_s + REFETCH_MIN_S -
			               (int64_t)(tau_clock_mono_ms() / 1000);

			if (left > 0) {
				clock_gettime(CLOCK_MONOTONIC, &until);
				until.tv_sec += left;
				while (!k->stop &&
				       pthread_cond_timedwait(&k->cond, &k->mu, &until) == 0)
					;
			}
		}
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int tau_auth_keys_start(tau_auth_keys *k)
{
	if (pthread_create(&k->thread, NULL, keys_thread, k) != 0)
		return tau_error_set(TAU_EIO, "cannot start the issuer keys thread");
	k->started = true;
	return 0;
}

void tau_auth_keys_free(tau_auth_keys *k)
{
	if (k == NULL)
		return;
	if (k->started)
		tau_thread_stop_join(&k->mu, &k->cond, &k->stop, &k->thread, 1);
	tau_jwks_free(k->jwks);
	tau_free_many(k->issuer, k->audience, k->user);
	pthread_rwlock_destroy(&k->lock);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cond);
	free(k);
}

tau_jwt_result tau_auth_keys_verify(tau_auth_keys *k, const char *token, tau_jwt_claims *out,
                                    char *msg, size_t cap)
{
	tau_jwt_expect e = {.audience = k->audience, .user = k->user, .now_s = time(NULL)};
	tau_jwt_result r;

	pthread_rwlock_rdlock(&k->lock);
	e.issuer = k->issuer;
	if (k->jwks == NULL) {
		snprintf(msg, cap, "the issuer's keys are not fetched yet");
		r = TAU_JWT_UNKNOWN_KEY;
	} else {
		r = tau_jwt_verify(out, msg, cap, k->jwks, token, &e);
	}
	pthread_rwlock_unlock(&k->lock);
	if (r == TAU_JWT_UNKNOWN_KEY) {
		pthread_mutex_lock(&k->mu);
		if (!k->want) {
			k->want = true;
			pthread_cond_signal(&k->cond);
		}
		pthread_mutex_unlock(&k->mu);
	}
	return r;
}

void tau_auth_keys_stats_get(tau_auth_keys *k, tau_auth_keys_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (k == NULL)
		return;
	out->fetched = atomic_load(&k->fetched);
	out->fetch_failed = atomic_load(&k->fetch_failed);
	out->keys = atomic_load(&k->n_keys);
}
