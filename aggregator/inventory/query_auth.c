/*
 * query_auth.c - QueryService authentication and authorization (see query_auth.h).
 *
 * Per call a small state (qcall) holds the one request message until the
 * decision.  The call's handler runs with the qcall mutex held and only while
 * the call is not done, and on_done marks the call done under the same
 * mutex before the wrapped on_done runs: a handler that registers the call
 * somewhere (WatchPool) therefore either ran before on_done, which then
 * unregisters it, or never runs.
 */
#include "query_auth.h"

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

typedef struct guard {
	tau_query_auth *q;
	tau_rpc_method orig;
	char resource[32];
	struct guard *next;
} guard;

typedef enum qstate { Q_PENDING = 0, Q_ALLOWED, Q_REFUSED } qstate;

typedef struct qcall {
	atomic_int refs;
	pthread_mutex_t mu;
	guard *g;
	tau_rpc_call *call; /* referenced while a review job holds the qcall */
	qstate state;
	bool done;
	ProtobufCMessage *held; /* the request, while the review runs */
	char *token;            /* until reviewed */
	char key[65];           /* hash of resource and token */
	int64_t exp_ms;         /* the token's own exp, 0 when it has none */
	struct qcall *next_job;
} qcall;

struct tau_query_auth {
	tau_query_auth_config cfg;
	tau_auth_cache *cache;
	guard *guards;
	pthread_mutex_t jobs_mu;
	pthread_cond_t jobs_cond;
	qcall *head, *tail;
	size_t n_pending;
	bool stop;
	pthread_t *workers;
	int n_workers;
	atomic_uint_fast64_t allowed, unauth, denied, unavail, overloaded, reviews;
	tau_prom_histogram review_latency; /* TokenReview + SubjectAccessReview, each pair */
	/* refusal logs: at most LOG_PER_S a second, the rest counted in the next line */
	pthread_mutex_t log_mu;
	int64_t log_second;
	unsigned log_count, log_dropped;
};

#define LOG_PER_S 10

tau_rpc_code tau_query_auth_decide(char *msg, size_t cap, bool token_present,
                                   const tau_auth_review *review, const char *resource)
{
	if (!token_present) {
		snprintf(msg, cap,
		         "missing bearer token (authorization: Bearer <token>); queries need a "
		         "Kubernetes identity allowed to get %s." TAU_QUERY_AUTH_GROUP,
		         resource);
		return TAU_RPC_UNAUTHENTICATED;
	}
	if (review == NULL || !review->authenticated) {
		snprintf(msg, cap, "bearer token rejected by TokenReview: %.300s",
		         review != NULL && review->error[0] ? review->error : "not authenticated");
		return TAU_RPC_UNAUTHENTICATED;
	}
	if (review->error[0] != '\0') {
		snprintf(msg, cap, "user %.200s may not get %s." TAU_QUERY_AUTH_GROUP ": %.200s",
		         review->username, resource, review->error);
		return TAU_RPC_PERMISSION_DENIED;
	}
	msg[0] = '\0';
	return TAU_RPC_OK;
}

static void qcall_unref(qcall *c)
{
	if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	tau_rpc_message_free(c->held);
	if (c->token != NULL) {
		memset(c->token, 0, strlen(c->token));
		free(c->token);
	}
	tau_rpc_call_unref(c->call);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* Count a decision by its code; every code not named here counts as unavailable. */
static void count(tau_query_auth *q, tau_rpc_code code)
{
	atomic_uint_fast64_t *const by_code[] = {
	        [TAU_RPC_OK] = &q->allowed,
	        [TAU_RPC_UNAUTHENTICATED] = &q->unauth,
	        [TAU_RPC_PERMISSION_DENIED] = &q->denied,
	        [TAU_RPC_RESOURCE_EXHAUSTED] = &q->overloaded,
	};
	size_t i = (size_t)code;

	atomic_fetch_add(
	        i < TAU_N_ELEMENTS(by_code) && by_code[i] != NULL ? by_code[i] : &q->unavail, 1);
}

/* Finish a refused call, count and log it (rate-limited). */
static void refuse(tau_query_auth *q, tau_rpc_call *call, tau_rpc_code code, const char *msg)
{
	int64_t sec = (int64_t)tau_clock_wall_ms() / 1000;
	unsigned dropped = 0;
	bool log;

	count(q, code);
	pthread_mutex_lock(&q->log_mu);
	if (sec != q->log_second) {
		dropped = q->log_dropped;
		q->log_second = sec;
		q->log_count = 0;
		q->log_dropped = 0;
	}
	log = q->log_count < LOG_PER_S;
	if (log)
		q->log_count++;
	else
		q->log_dropped++;
	pthread_mutex_unlock(&q->log_mu);
	if (log) {
		char more[32];

		snprintf(more, sizeof(more), "%u", dropped);
		tau_log_warn("query refused", "method", tau_rpc_call_method(call), "peer",
		             tau_rpc_call_peer_address(call), "code", tau_rpc_code_name(code),
		             "reason", msg, "unlogged_refusals_before", more, NULL);
	}
	tau_rpc_call_finish(call, code, msg);
}

/* Run the wrapped handler on the held request; qcall mutex held. */
static void run_held_locked(qcall *c, tau_rpc_call *call)
{
	ProtobufCMessage *msg = c->held;

	c->held = NULL;
	if (msg == NULL)
		return;
	if (c->done) {
		tau_rpc_message_free(msg);
		return;
	}
	c->g->orig.on_message(call, msg, c->g->orig.ud);
}

static void key_of(char out[65], const char *resource, const char *token)
{
	size_t lr = strlen(resource), lt = strlen(token);
	char *buf = malloc(lr + lt + 2);

	if (buf == NULL) {
		/* Without memory the token's own hash is still a key, just not per resource. */
		tau_auth_token_hash(out, token);
		out[0] = resource[0];
		return;
	}
	memcpy(buf, resource, lr);
	buf[lr] = '\n';
	memcpy(buf + lr + 1, token, lt + 1);
	tau_auth_token_hash(out, buf);
	memset(buf, 0, lr + lt + 2);
	free(buf);
}

/* ---- workers ---- */

static void review_one(tau_query_auth *q, qcall *c)
{
	tau_auth_review review;
	char msg[512];
	int64_t now = (int64_t)tau_clock_wall_ms();
	tau_rpc_code code;
	int rc = 0;

	memset(&review, 0, sizeof(review));
	if (!tau_auth_cache_get(q->cache, c->key, now, &review)) {
		uint64_t started_us = tau_clock_mono_us();

		atomic_fetch_add(&q->reviews, 1);
		rc = q->cfg.review(q->cfg.review_ud, c->token, c->g->resource, &review);
		tau_prom_histogram_observe(&q->review_latency, tau_clock_mono_us() - started_us);
		if (rc == 0) {
			int64_t until = now + q->cfg.ttl_ms;

			if (c->exp_ms > 0 && c->exp_ms < until)
				until = c->exp_ms;
			tau_auth_cache_put(q->cache, c->key, &review, until, now);
		}
	}
	pthread_mutex_lock(&c->mu);
	memset(c->token, 0, strlen(c->token));
	free(c->token);
	c->token = NULL;
	if (c->done) {
		tau_rpc_message_free(c->held);
		c->held = NULL;
		pthread_mutex_unlock(&c->mu);
		if (rc == 0)
			count(q, tau_query_auth_decide(msg, sizeof(msg), true, &review,
			                               c->g->resource));
		tau_log_info("query ended before its review finished", "method",
		             tau_rpc_call_method(c->call), "peer",
		             tau_rpc_call_peer_address(c->call), NULL);
		return;
	}
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "could not review the token: %.400s",
		         tau_error_last()->msg);
		c->state = Q_REFUSED;
		refuse(q, c->call, TAU_RPC_UNAVAILABLE, msg);
	} else if ((code = tau_query_auth_decide(msg, sizeof(msg), true, &review,
	                                         c->g->resource)) != TAU_RPC_OK) {
		c->state = Q_REFUSED;
		refuse(q, c->call, code, msg);
	} else {
		count(q, TAU_RPC_OK);
		c->state = Q_ALLOWED;
		run_held_locked(c, c->call);
	}
	tau_rpc_message_free(c->held);
	c->held = NULL;
	pthread_mutex_unlock(&c->mu);
}

static void *worker(void *arg)
{
	tau_query_auth *q = arg;

	pthread_mutex_lock(&q->jobs_mu);
	for (;;) {
		qcall *c;

		while (q->head == NULL && !q->stop)
			pthread_cond_wait(&q->jobs_cond, &q->jobs_mu);
		if (q->head == NULL)
			break;
		c = q->head;
		q->head = c->next_job;
		if (q->head == NULL)
			q->tail = NULL;
		q->n_pending--;
		pthread_mutex_unlock(&q->jobs_mu);
		review_one(q, c);
		qcall_unref(c);
		pthread_mutex_lock(&q->jobs_mu);
	}
	pthread_mutex_unlock(&q->jobs_mu);
	return NULL;
}

/* ---- the wrapped callbacks (CQ thread) ---- */

static int g_start_with_token(tau_rpc_call *call, void *ud)
{
	guard *g = ud;
	tau_query_auth *q = g->q;
	const char *token = tau_rpc_call_bearer_token(call);
	qcall *c;
	tau_auth_review review;
	tau_rpc_code code;
	char msg[512];
	int64_t exp_s = 0, now = (int64_t)tau_clock_wall_ms();
	bool queued = false;

	if (token == NULL || token[0] == '\0') {
		code = tau_query_auth_decide(msg, sizeof(msg), false, NULL, g->resource);
		refuse(q, call, code, msg);
		return (int)code;
	}
	if (tau_auth_token_expiry(&exp_s, token) == 0 && exp_s * 1000 <= now) {
		refuse(q, call, TAU_RPC_UNAUTHENTICATED, "bearer token has expired");
		return TAU_RPC_UNAUTHENTICATED;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		refuse(q, call, TAU_RPC_RESOURCE_EXHAUSTED, "out of memory");
		return TAU_RPC_RESOURCE_EXHAUSTED;
	}
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	c->g = g;
	c->exp_ms = exp_s * 1000;
	key_of(c->key, g->resource, token);
	tau_rpc_call_set_user(call, c);
	if (tau_auth_cache_get(q->cache, c->key, now, &review)) {
		code = tau_query_auth_decide(msg, sizeof(msg), true, &review, g->resource);
		if (code != TAU_RPC_OK) {
			c->state = Q_REFUSED;
			refuse(q, call, code, msg);
			return (int)code;
		}
		count(q, TAU_RPC_OK);
		c->state = Q_ALLOWED;
		return 0;
	}
	c->token = strdup(token);
	if (c->token == NULL) {
		c->state = Q_REFUSED;
		refuse(q, call, TAU_RPC_RESOURCE_EXHAUSTED, "out of memory");
		return TAU_RPC_RESOURCE_EXHAUSTED;
	}
	c->call = tau_rpc_call_ref(call);
	pthread_mutex_lock(&q->jobs_mu);
	if (q->n_pending < q->cfg.max_pending && !q->stop) {
		atomic_fetch_add(&c->refs, 1);
		c->next_job = NULL;
		if (q->tail != NULL)
			q->tail->next_job = c;
		else
			q->head = c;
		q->tail = c;
		q->n_pending++;
		queued = true;
		pthread_cond_signal(&q->jobs_cond);
	}
	pthread_mutex_unlock(&q->jobs_mu);
	if (!queued) {
		c->state = Q_REFUSED;
		snprintf(msg, sizeof(msg),
		         "too many token reviews pending (%zu, --max-pending-reviews); retry later",
		         q->cfg.max_pending);
		refuse(q, call, TAU_RPC_RESOURCE_EXHAUSTED, msg);
		return TAU_RPC_RESOURCE_EXHAUSTED;
	}
	return 0;
}

/* The token is copied (c->token) or reduced to a cache key here, and the guarded handlers
 * read no headers: the call's copy of them need not live as long as a WatchPool stream. */
static int g_start(tau_rpc_call *call, void *ud)
{
	int rc = g_start_with_token(call, ud);

	tau_rpc_call_drop_metadata(call);
	return rc;
}

static void g_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	guard *g = ud;
	qcall *c = tau_rpc_call_user(call);

	if (c == NULL) {
		tau_rpc_message_free(msg);
		return;
	}
	pthread_mutex_lock(&c->mu);
	switch (c->state) {
	case Q_ALLOWED:
		if (!c->done)
			g->orig.on_message(call, msg, g->orig.ud);
		else
			tau_rpc_message_free(msg);
		break;
	case Q_PENDING:
		if (c->held == NULL) {
			c->held = msg;
		} else {
			tau_rpc_message_free(msg);
			tau_rpc_call_finish(call, TAU_RPC_INVALID_ARGUMENT,
			                    "more than one request message");
		}
		break;
	default:
		tau_rpc_message_free(msg);
	}
	pthread_mutex_unlock(&c->mu);
}

static void g_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	guard *g = ud;
	qcall *c = tau_rpc_call_user(call);
	bool ran = true;

	if (c != NULL) {
		pthread_mutex_lock(&c->mu);
		c->done = true;
		ran = c->state == Q_ALLOWED;
		tau_rpc_message_free(c->held);
		c->held = NULL;
		pthread_mutex_unlock(&c->mu);
		tau_rpc_call_set_user(call, NULL);
		qcall_unref(c);
	} else {
		ran = false;
	}
	if (ran && g->orig.on_done != NULL)
		g->orig.on_done(call, end, g->orig.ud);
}

int tau_query_auth_guard(tau_query_auth *q, tau_rpc_method *m, const char *resource)
{
	guard *g;

	if (m->kind != TAU_RPC_UNARY && m->kind != TAU_RPC_SERVER_STREAM)
		return tau_error_set(TAU_EINVAL,
		                     "%s: only unary and server-streaming queries "
		                     "can be guarded",
		                     m->path);
	if (strlen(resource) >= sizeof(g->resource))
		return tau_error_set(TAU_EINVAL, "resource name %s too long", resource);
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	g->q = q;
	g->orig = *m;
	snprintf(g->resource, sizeof(g->resource), "%s", resource);
	g->next = q->guards;
	q->guards = g;
	m->on_start = g_start;
	m->on_message = g_message;
	m->on_done = g_done;
	m->ud = g;
	return 0;
}

/* ---- lifecycle ---- */

int tau_query_auth_new(tau_query_auth **out, const tau_query_auth_config *cfg)
{
	tau_query_auth *q;
	int rc;

	if (cfg->review == NULL)
		return tau_error_set(TAU_EINVAL, "query auth needs a review function");
	q = calloc(1, sizeof(*q));
	if (q == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	q->cfg = *cfg;
	if (q->cfg.threads <= 0)
		q->cfg.threads = 2;
	if (q->cfg.max_pending == 0)
		q->cfg.max_pending = 256;
	if (q->cfg.ttl_ms <= 0)
		q->cfg.ttl_ms = 10000;
	if (q->cfg.cache_max == 0)
		q->cfg.cache_max = 16384;
	if ((rc = tau_auth_cache_new(&q->cache, q->cfg.cache_max)) < 0) {
		free(q);
		return rc;
	}
	pthread_mutex_init(&q->jobs_mu, NULL);
	pthread_cond_init(&q->jobs_cond, NULL);
	pthread_mutex_init(&q->log_mu, NULL);
	if ((rc = tau_thread_start_n(&q->workers, q->cfg.threads, &q->n_workers, worker, q,
	                             "a query auth worker")) < 0) {
		tau_query_auth_free(q);
		return rc;
	}
	*out = q;
	return 0;
}

void tau_query_auth_free(tau_query_auth *q)
{
	if (q == NULL)
		return;
	tau_thread_stop_join(&q->jobs_mu, &q->jobs_cond, &q->stop, q->workers, q->n_workers);
	free(q->workers);
	while (q->head != NULL) {
		qcall *c = q->head;

		q->head = c->next_job;
		qcall_unref(c);
	}
	while (q->guards != NULL) {
		guard *g = q->guards;

		q->guards = g->next;
		free(g);
	}
	tau_auth_cache_free(q->cache);
	pthread_mutex_destroy(&q->jobs_mu);
	pthread_cond_destroy(&q->jobs_cond);
	pthread_mutex_destroy(&q->log_mu);
	free(q);
}

void tau_query_auth_counts_get(tau_query_auth *q, tau_query_auth_counts *out)
{
	memset(out, 0, sizeof(*out));
	if (q == NULL)
		return;
	out->allowed = atomic_load(&q->allowed);
	out->unauthenticated = atomic_load(&q->unauth);
	out->denied = atomic_load(&q->denied);
	out->unavailable = atomic_load(&q->unavail);
	out->overloaded = atomic_load(&q->overloaded);
	out->reviews = atomic_load(&q->reviews);
	pthread_mutex_lock(&q->jobs_mu);
	out->pending = q->n_pending;
	pthread_mutex_unlock(&q->jobs_mu);
}

const tau_prom_histogram *tau_query_auth_review_latency(const tau_query_auth *q)
{
	return q != NULL ? &q->review_latency : NULL;
}
