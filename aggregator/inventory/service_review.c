/*
 * service_review.c - the review queue and the auth workers: who may report.
 *
 * TokenReview is the slow step, so it runs on worker threads, never under the state mutex.
 * Reviews are scheduled fairly: each peer (TLS identity, else host) has its own queue and the
 * workers take from the peers in turn, so a peer with thousands of streams waiting delays
 * another peer's review by at most one review per worker; each peer may have only a few
 * reviews queued or running.  A token the issuer's keys verify is admitted at once (local
 * admission) and confirmed by a TokenReview afterwards, when no stream waits for admission.
 */
#include "service_internal.h"

#include "auth.h"
#include "keys.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/hmap.h"
#include "tau/log.h"
#include "tau/prom.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tau_inventory_refuse(stream *s, tau_rpc_code code, const char *msg)
{
	tau_inventory *a = s->agg;
	char key[400];

	if (code == TAU_RPC_UNAUTHENTICATED)
		atomic_fetch_add(&a->auth_unauth, 1);
	else if (code == TAU_RPC_PERMISSION_DENIED)
		atomic_fetch_add(&a->auth_denied, 1);
	else if (code == TAU_RPC_RESOURCE_EXHAUSTED)
		atomic_fetch_add(&a->auth_overloaded, 1);
	else
		atomic_fetch_add(&a->auth_unavail, 1);
	snprintf(key, sizeof(key), "%s|%d|%.250s", s->peer, (int)code, msg);
	if (tau_inventory_first_time(a, key))
		tau_log_warn("agent stream refused", "peer", s->peer, "code",
		             tau_rpc_code_name(code), "reason", msg, NULL);
	tau_rpc_call_finish(s->call, code, msg);
}

/* ---- auth workers ---- */

/*
 * The confirming review of a locally admitted stream is in (stream mutex held): a refusal, or
 * a review that could not be made, closes the stream (fail closed; the agent reconnects and is
 * admitted again only on a token that verifies).
 */
static void confirm_decided(tau_inventory *a, stream *s, int rc, bool expired,
                            const tau_auth_review *review)
{
	char msg[512];
	tau_rpc_code code;

	s->confirming = false;
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "could not confirm the token by TokenReview: %.400s",
		         tau_error_last()->msg);
		code = TAU_RPC_UNAVAILABLE;
		atomic_fetch_add(&a->confirm_failed, 1);
	} else {
		code = tau_auth_decide_user(msg, sizeof(msg), true, expired, review, a->agent_user);
		if (code == TAU_RPC_OK)
			code = tau_auth_decide_node(msg, sizeof(msg), review->node_name, s->node);
		if (code == TAU_RPC_OK) {
			atomic_fetch_add(&a->confirmed, 1);
			return;
		}
		atomic_fetch_add(&a->confirm_refused, 1);
	}
	s->auth = AUTH_FAILED;
	tau_log_warn("locally admitted agent stream closed: its TokenReview did not confirm it",
	             "node", s->node, "peer", s->peer, "code", tau_rpc_code_name(code), "reason",
	             msg, NULL);
	tau_inventory_refuse(s, code, msg);
}

static void review_stream(tau_inventory *a, stream *s)
{
	tau_auth_review review;
	/* Only this worker frees s->rv before the stream's end: its token may be read unlocked. */
	const char *token = s->rv->token, *hash = s->rv->token_hash;
	char msg[512];
	int64_t now = tau_clock_wall_ms(), exp_s = 0;
	bool have_exp = tau_auth_token_expiry(&exp_s, token) == 0;
	bool expired = have_exp && exp_s * 1000 <= now;
	tau_rpc_code code;
	int rc = 0;

	memset(&review, 0, sizeof(review));
	pthread_mutex_lock(&s->mu);
	if (s->done) {
		/* Ended while it waited (logged by tau_inventory_report_done): its review would
		 * cost for nothing.
		 */
		tau_inventory_stream_review_free(s);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	pthread_mutex_unlock(&s->mu);
	if (!expired && !tau_auth_cache_get(a->cache, hash, now, &review)) {
		uint64_t started_us = tau_clock_mono_us();

		atomic_fetch_add(&a->token_reviews, 1);
		rc = a->cfg.review(a->cfg.review_ud, token, &review);
		tau_prom_histogram_observe(&a->review_latency, tau_clock_mono_us() - started_us);
		if (rc == 0) {
			int64_t until = review.authenticated ? now + a->cfg.review_ttl_ms
			                                     : now + a->cfg.negative_ttl_ms;

			if (have_exp && (review.authenticated || exp_s * 1000 < until))
				until = exp_s * 1000;
			tau_auth_cache_put(a->cache, hash, &review, until, now);
		}
	}
	pthread_mutex_lock(&s->mu);
	if (s->done)
		goto out;
	if (s->confirming) {
		confirm_decided(a, s, rc, expired, &review);
		goto out;
	}
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "could not review the token: %.400s",
		         tau_error_last()->msg);
		s->auth = AUTH_FAILED;
		tau_inventory_refuse(s, TAU_RPC_UNAVAILABLE, msg);
		goto out;
	}
	code = tau_auth_decide_user(msg, sizeof(msg), true, expired, &review, a->agent_user);
	if (code == TAU_RPC_OK && (s->node = strdup(review.node_name)) == NULL) {
		snprintf(msg, sizeof(msg), "out of memory");
		code = TAU_RPC_RESOURCE_EXHAUSTED;
	}
	if (code != TAU_RPC_OK) {
		s->auth = AUTH_FAILED;
		tau_inventory_refuse(s, code, msg);
		goto out;
	}
	s->auth = AUTH_OK;
	for (size_t i = 0; i < s->rv->n_pending && s->auth == AUTH_OK; i++) {
		tau_inventory_handle_report(s,
		                            (Tau__Inventory__V1__AgentReport *)s->rv->pending[i]);
		s->rv->pending[i] = NULL;
	}
	if (s->half_closed)
		tau_rpc_call_finish(s->call, TAU_RPC_OK, NULL); /* after the acks just queued */
out:
	tau_inventory_stream_review_free(
	        s); /* the token and what the review held: no longer needed */
	pthread_mutex_unlock(&s->mu);
}

/* Put `s` at the end of the job list `head`..`tail` (jobs_mu held). */
static void job_push(stream **head, stream **tail, stream *s)
{
	s->next_job = NULL;
	if (*tail != NULL)
		(*tail)->next_job = s;
	else
		*head = s;
	*tail = s;
}

/* Take the first stream of the job list `head`..`tail`; NULL when it is empty (jobs_mu held). */
static stream *job_pop(stream **head, stream **tail)
{
	stream *s = *head;

	if (s != NULL) {
		*head = s->next_job;
		if (*head == NULL)
			*tail = NULL;
		s->next_job = NULL;
	}
	return s;
}

/* Put `p` at the end of the round (jobs_mu held). */
static void turn_append(tau_inventory *a, review_peer *p)
{
	p->in_turn = true;
	p->next_turn = NULL;
	if (a->turn_tail != NULL)
		a->turn_tail->next_turn = p;
	else
		a->turn_head = p;
	a->turn_tail = p;
}

/* The next stream to review: the first of the peer whose turn it is (jobs_mu held). */
stream *tau_inventory_next_job(tau_inventory *a)
{
	review_peer *p = a->turn_head;
	stream *s;

	/* Nobody waits for admission: confirm the streams admitted on their own token. */
	if (p == NULL)
		return job_pop(&a->confirm_head, &a->confirm_tail);
	a->turn_head = p->next_turn;
	if (a->turn_head == NULL)
		a->turn_tail = NULL;
	p->in_turn = false;
	s = job_pop(&p->head, &p->tail);
	if (p->head != NULL)
		turn_append(a, p); /* its next stream waits for every other peer's turn */
	return s;
}

/* One review of `p` (NULL: a confirming review) is over (jobs_mu held); forget a peer with
 * none left. */
void tau_inventory_review_peer_release(tau_inventory *a, review_peer *p)
{
	if (p == NULL) {
		a->confirms_pending--;
		return;
	}
	a->reviews_pending--;
	if (--p->reviews == 0 && !p->in_turn) {
		tau_hmap_remove(&a->review_peers, &p->hnode);
		free(p);
	}
}

void *tau_inventory_auth_worker(void *arg)
{
	tau_inventory *a = arg;

	pthread_mutex_lock(&a->jobs_mu);
	for (;;) {
		stream *s;

		while (a->turn_head == NULL && a->confirm_head == NULL && !a->jobs_stop)
			pthread_cond_wait(&a->jobs_cond, &a->jobs_mu);
		if (a->jobs_stop)
			break;
		s = tau_inventory_next_job(a);
		pthread_mutex_unlock(&a->jobs_mu);
		review_stream(a, s);
		pthread_mutex_lock(&a->jobs_mu);
		tau_inventory_review_peer_release(a, s->rpeer);
		s->rpeer = NULL;
		pthread_mutex_unlock(&a->jobs_mu);
		tau_inventory_stream_unref(s);
		pthread_mutex_lock(&a->jobs_mu);
	}
	pthread_mutex_unlock(&a->jobs_mu);
	return NULL;
}

/*
 * Queue `s` for review in its peer's queue.  @return 0, or RESOURCE_EXHAUSTED with `msg` set
 * when the peer or the whole aggregator has as many reviews queued or running as allowed.
 */
tau_rpc_code tau_inventory_enqueue_review(tau_inventory *a, stream *s, const char *key, char *msg,
                                          size_t cap)
{
	tau_hmap_node *n;
	review_peer *p;
	tau_rpc_code code = TAU_RPC_OK;

	pthread_mutex_lock(&a->jobs_mu);
	n = tau_hmap_get(&a->review_peers, key);
	p = n != NULL ? TAU_HMAP_ENTRY(n, review_peer, hnode) : NULL;
	if (a->jobs_stop) {
		snprintf(msg, cap, "the aggregator is shutting down");
		code = TAU_RPC_UNAVAILABLE;
	} else if (a->reviews_pending >= a->cfg.max_pending_reviews) {
		snprintf(msg, cap,
		         "too many token reviews pending (%zu, --max-pending-reviews); retry later",
		         a->cfg.max_pending_reviews);
		code = TAU_RPC_RESOURCE_EXHAUSTED;
	} else if (p != NULL && p->reviews >= a->cfg.max_reviews_per_peer) {
		snprintf(msg, cap,
		         "too many token reviews pending for this peer (%zu, "
		         "--max-reviews-per-peer); retry later",
		         a->cfg.max_reviews_per_peer);
		code = TAU_RPC_RESOURCE_EXHAUSTED;
	} else if (p == NULL) {
		size_t len = strlen(key);

		p = calloc(1, sizeof(*p) + len + 1);
		if (p == NULL) {
			snprintf(msg, cap, "out of memory");
			code = TAU_RPC_RESOURCE_EXHAUSTED;
		} else {
			memcpy(p->key, key, len + 1);
			tau_hmap_insert(&a->review_peers, &p->hnode, p->key);
		}
	}
	if (code == TAU_RPC_OK) {
		s->rpeer = p;
		job_push(&p->head, &p->tail, s);
		p->reviews++;
		a->reviews_pending++;
		if (!p->in_turn)
			turn_append(a, p);
		pthread_cond_signal(&a->jobs_cond);
	}
	pthread_mutex_unlock(&a->jobs_mu);
	return code;
}

/* Queue `s` for its confirming review.  @return false when as many wait as allowed. */
static bool enqueue_confirm(tau_inventory *a, stream *s)
{
	bool ok;

	pthread_mutex_lock(&a->jobs_mu);
	ok = !a->jobs_stop && a->confirms_pending < a->cfg.max_pending_confirms;
	if (ok) {
		s->rpeer = NULL;
		job_push(&a->confirm_head, &a->confirm_tail, s);
		a->confirms_pending++;
		pthread_cond_signal(&a->jobs_cond);
	}
	pthread_mutex_unlock(&a->jobs_mu);
	return ok;
}

/*
 * Admit `s` on its own token when the issuer's keys verify it (its node from the token's
 * claims), its TokenReview queued to confirm it.  @return true when admitted; false: it waits
 * for its review as without local verification (counted by why).
 */
bool tau_inventory_admit_locally(tau_inventory *a, stream *s, const char *token, const char *hash)
{
	tau_jwt_claims claims;
	char msg[256];
	tau_jwt_result r;

	if (a->cfg.keys == NULL)
		return false;
	r = tau_auth_keys_verify(a->cfg.keys, token, &claims, msg, sizeof(msg));
	if (r != TAU_JWT_OK) {
		char key[400];

		atomic_fetch_add(
		        r == TAU_JWT_UNKNOWN_KEY ? &a->local_unknown_key : &a->local_invalid, 1);
		snprintf(key, sizeof(key), "%s|local|%.250s", s->peer, msg);
		if (tau_inventory_first_time(a, key))
			tau_log_info("agent token not verified locally: admitted only after its "
			             "TokenReview",
			             "peer", s->peer, "reason", msg, NULL);
		return false;
	}
	s->rv = calloc(1, sizeof(*s->rv));
	s->node = strdup(claims.node);
	if (s->rv == NULL || s->node == NULL || (s->rv->token = strdup(token)) == NULL)
		goto undo;
	memcpy(s->rv->token_hash, hash, sizeof(s->rv->token_hash));
	/* Decided before it is queued: its review may run (and refuse it) at once. */
	s->confirming = true;
	s->auth = AUTH_OK;
	atomic_fetch_add(&s->refs, 1); /* the confirm queue's */
	if (!enqueue_confirm(a, s)) {
		atomic_fetch_sub(&s->refs, 1);
		s->confirming = false;
		s->auth = AUTH_PENDING;
		atomic_fetch_add(&a->local_queue_full, 1);
		goto undo;
	}
	atomic_fetch_add(&a->local_admitted, 1);
	return true;
undo:
	tau_inventory_stream_review_free(s);
	free(s->node);
	s->node = NULL;
	return false;
}
