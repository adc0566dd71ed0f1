/*
 * service.c - Report streams, inventory queries and the pool publisher.
 *
 * The one idea: a single mutex guards one aggregator state (node store, pool,
 * the node -> stream binding, pool watchers), and nothing slow ever runs
 * under it.  TokenReview is the slow step, so a new Report stream is
 * accepted at once and its token reviewed by a worker thread; reports that
 * arrive meanwhile wait in a small per-stream queue and are processed, in
 * order, once the review allows the stream.  Lock order: stream, then state.
 *
 * Reviews are scheduled fairly: each peer (TLS identity, else host) has its own queue and the
 * workers take from the peers in turn, so a peer with thousands of streams waiting delays
 * another peer's review by at most one review per worker.  A token that cannot be the agent
 * ServiceAccount's (not a JWT, or its own claims name someone else) is refused before any
 * review, and each peer may have only a few reviews queued or running.
 *
 * WatchPool pushes are coalesced: changes only mark the pool dirty, and the
 * publisher rebuilds it once per window, publishing only when the packed
 * content (without generation and time) differs from the last published one.
 *
 * ListWorkspaces and GetWorkspace read the workspace controller's informer
 * cache, which every replica fills (only the leader reconciles).  The pointer
 * to it has its own mutex (held across a cache read, so it cannot be freed
 * under a query) and is NULL with --no-workspace-controller, where those
 * queries answer UNAVAILABLE.
 */
#include "service.h"

#include "drastore.h"
#include "metrics.h"
#include "nodestore.h"
#include "query.h"
#include "report.h"
#include "snapshot.h"
#include "capacity.h"
#include "truthrules.h"

#include "tau/backoff.h"
#include "tau/error.h"
#include "tau/promtext.h"
#include "tau/hmap.h"
#include "tau/log.h"
#include "tau/names.h"
#include "tau/nodefacts.h"
#include "tau/selector.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/inventory/v1/query.pb-c.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INVENTORY_STACK_BYTES 8192 /* an inventory packed up to this size needs no malloc */
#define PENDING_MAX           16   /* reports held per stream while its token is reviewed */
#define WATCH_QUEUE_MAX       4    /* a watcher further behind gets the newest pool later */
#define PEER_LOG_MAX          4096
#define SUBSCRIBERS_MAX       16 /* pool-change callbacks (snapshot.h) */

typedef enum auth_state { AUTH_PENDING = 0, AUTH_OK, AUTH_FAILED } auth_state;

typedef struct review_peer review_peer;

/*
 * What a stream needs only until its token is reviewed (allocated then, freed once decided,
 * so an authenticated stream carries none of it): the token and the reports that arrived
 * meanwhile.
 */
typedef struct stream_review {
	char *token;
	char token_hash[65];
	size_t n_pending;
	ProtobufCMessage *pending[PENDING_MAX];
} stream_review;

/*
 * One Report stream.  Kept small (10,000 agents are 10,000 of these): what varies in size
 * lives behind a pointer, sized to what it holds.
 */
typedef struct stream {
	atomic_int refs;
	pthread_mutex_t mu;
	tau_agg *agg;
	tau_rpc_call *call; /* referenced for the stream's lifetime */
	auth_state auth;
	bool done;
	bool half_closed; /* the client half-closed while the review ran: finish after it */
	bool warned_invalid;
	bool confirming;   /* admitted on a locally verified token; its TokenReview is to come */
	stream_review *rv; /* while the review is pending, else NULL */
	char *node;        /* the node its token is bound to, once authenticated */
	tau_report_seq seq;
	char *digest;         /* of the inventory held; never NULL (no_digest until one is) */
	atomic_bool replaced; /* a newer stream took over the node: ignore what this one sends */
	/* Guarded by the state mutex: */
	bool bound; /* the current stream of node */
	/* Guarded by jobs_mu: */
	struct stream *next_job;
	review_peer *rpeer; /* whose review queue holds it */
	char peer[];        /* the peer's host, for logs */
} stream;

static char no_digest[] = "";

/* The reviews of one peer: its queue, and how many are queued or running (jobs_mu). */
struct review_peer {
	tau_hmap_node hnode; /* in tau_agg.review_peers */
	stream *head, *tail;
	size_t reviews;
	bool in_turn; /* in the round of peers with queued streams */
	review_peer *next_turn;
	char key[];
};

typedef struct binding {
	tau_hmap_node hnode; /* in tau_agg.bindings, keyed by node */
	stream *s;
	char node[];
} binding;

typedef struct watcher {
	tau_rpc_call *call;
	uint64_t sent_generation;
} watcher;

struct tau_agg {
	tau_agg_config cfg;
	char *agent_user;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* publisher wake-up: dirty, stop */
	tau_nodestore *store;
	tau_dra_store *dra; /* DeviceClasses, ResourceSlices, Kueue mappings (drawatch.h) */
	tau_hmap bindings;  /* binding by node name; .len streams are bound */
	watcher *watchers;
	size_t n_watchers, cap_watchers;
	Tau__Inventory__V1__Pool *pool_msg;
	uint8_t *pool_key;
	size_t pool_key_len;
	uint64_t pool_gen;
	int64_t build_us;      /* cost of the last pool rebuild, to stretch the coalescing window */
	struct timespec built; /* when it ended */
	bool dirty;
	bool leader;
	bool nodes_synced;
	int64_t sync_deadline_ms; /* past it, an input list still unread is worth a warning */
	bool warned_unsynced;
	bool told_established; /* "pool established" logged: the gate opens on a tick or a report */
	bool (*sync_probe)(void *ud);
	void *sync_probe_ud;
	bool stop;
	bool started;
	pthread_t publisher;
	/* auth workers */
	pthread_mutex_t jobs_mu;
	pthread_cond_t jobs_cond;
	tau_hmap review_peers;               /* review_peer by key */
	review_peer *turn_head, *turn_tail;  /* peers with queued streams, in turn */
	size_t reviews_pending;              /* queued or running, all peers */
	stream *confirm_head, *confirm_tail; /* locally admitted, waiting for their review */
	size_t confirms_pending;             /* queued or running */
	bool jobs_stop;
	pthread_t *workers;
	int n_workers;
	tau_auth_cache *cache;
	/* log once per peer */
	pthread_mutex_t peers_mu;
	char **peers;
	size_t n_peers;
	/* counters */
	atomic_uint_fast64_t reports_inventory, reports_heartbeat, reports_stopping;
	atomic_uint_fast64_t reports_rejected, reports_resend;
	atomic_uint_fast64_t auth_unauth, auth_denied, auth_unavail, token_reviews;
	tau_prom_histogram review_latency;     /* Report TokenReviews */
	atomic_uint_fast64_t watchers_refused; /* WatchPool calls over max_pool_watchers */
	atomic_uint_fast64_t auth_overloaded;  /* Report reviews refused over a cap */
	atomic_uint_fast64_t tokens_not_jwt, tokens_not_agent; /* refused before any review */
	atomic_uint_fast64_t ended_unauthenticated; /* streams that ended before their review */
	/* local verification: admitted, left to the review (unknown key, invalid, queue full) */
	atomic_uint_fast64_t local_admitted, local_unknown_key, local_invalid, local_queue_full;
	atomic_uint_fast64_t confirmed, confirm_refused, confirm_failed; /* confirming reviews */
	tau_rpc_server *srv; /* for its refusal counters */
	/* pool-change subscribers (snapshot.h); subs_mu is never taken while mu is held */
	pthread_mutex_t subs_mu;
	tau_pool_changed_fn sub_fn[SUBSCRIBERS_MAX];
	void *sub_ud[SUBSCRIBERS_MAX];
	size_t n_subs;
	/* what subscribers were last told about (guarded by mu) */
	bool notify_pending;
	uint64_t notified_gen;
	bool notified_established, notified_valid;
	/* the workspace controller whose cache ListWorkspaces/GetWorkspace read; NULL: none */
	pthread_mutex_t ws_mu;
	tau_ws_controller *workspaces;
};

int64_t tau_agg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- stream lifetime ---- */

/* Drop the review state: the token and any reports still held. */
static void stream_review_free(stream *s)
{
	if (s->rv == NULL)
		return;
	for (size_t i = 0; i < s->rv->n_pending; i++)
		tau_rpc_message_free(s->rv->pending[i]);
	free(s->rv->token);
	free(s->rv);
	s->rv = NULL;
}

/* Keep `digest` as the digest of the inventory held (unchanged when it is the same). */
static void stream_set_digest(stream *s, const char *digest)
{
	char *copy;

	if (digest == NULL)
		digest = "";
	if (strcmp(s->digest, digest) == 0)
		return;
	copy = digest[0] != '\0' ? strdup(digest) : no_digest;
	if (s->digest != no_digest)
		free(s->digest);
	/* Out of memory: no digest held, so the next heartbeat asks for a full inventory. */
	s->digest = copy != NULL ? copy : no_digest;
}

static void stream_unref(stream *s)
{
	if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	stream_review_free(s);
	free(s->node);
	if (s->digest != no_digest)
		free(s->digest);
	tau_rpc_call_unref(s->call);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ---- node -> stream binding (state mutex held) ---- */

static binding *binding_of(tau_agg *a, const char *node)
{
	tau_hmap_node *n = tau_hmap_get(&a->bindings, node);

	return n != NULL ? TAU_HMAP_ENTRY(n, binding, hnode) : NULL;
}

/*
 * Make `s` the stream of `node`; *replaced gets the call of the stream it replaced
 * (referenced) or NULL.  @return 0, or -TAU_ENOMEM with `s` left unbound (its heartbeats are
 * then answered RESEND_FULL, so the agent's next full inventory binds it).
 */
static int bind_stream(tau_agg *a, stream *s, const char *node, tau_rpc_call **replaced)
{
	binding *b = binding_of(a, node);

	*replaced = NULL;
	if (b != NULL) {
		if (b->s == s)
			return 0;
		b->s->bound = false;
		atomic_store(&b->s->replaced, true);
		*replaced = tau_rpc_call_ref(b->s->call);
		b->s = s;
	} else {
		size_t len = strlen(node);

		b = calloc(1, sizeof(*b) + len + 1);
		if (b == NULL)
			return tau_error_set(TAU_ENOMEM,
			                     "out of memory binding the stream of node %s", node);
		memcpy(b->node, node, len + 1);
		b->s = s;
		tau_hmap_insert(&a->bindings, &b->hnode, b->node);
	}
	s->bound = true;
	return 0;
}

static void unbind_stream(tau_agg *a, stream *s)
{
	binding *b;

	if (!s->bound)
		return;
	b = binding_of(a, s->node);
	if (b != NULL && b->s == s) {
		tau_hmap_remove(&a->bindings, &b->hnode);
		free(b);
	}
	s->bound = false;
}

/* ---- logging once per peer ---- */

/* True the first time `key` is seen (bounded: the set is forgotten when full). */
static bool first_time(tau_agg *a, const char *key)
{
	bool first = true;

	pthread_mutex_lock(&a->peers_mu);
	for (size_t i = 0; i < a->n_peers; i++) {
		if (strcmp(a->peers[i], key) == 0) {
			first = false;
			break;
		}
	}
	if (first) {
		if (a->n_peers == PEER_LOG_MAX) {
			for (size_t i = 0; i < a->n_peers; i++)
				free(a->peers[i]);
			a->n_peers = 0;
		}
		a->peers[a->n_peers] = strdup(key);
		if (a->peers[a->n_peers] != NULL)
			a->n_peers++;
	}
	pthread_mutex_unlock(&a->peers_mu);
	return first;
}

/* The peer's address without its port: one agent reconnecting is one peer. */
static void peer_host(char *out, size_t cap, const char *peer)
{
	const char *colon = peer != NULL ? strrchr(peer, ':') : NULL;
	size_t n = colon != NULL ? (size_t)(colon - peer) : (peer != NULL ? strlen(peer) : 0);

	if (n >= cap)
		n = cap - 1;
	memcpy(out, peer != NULL ? peer : "", n);
	out[n] = '\0';
}

static void refuse(stream *s, tau_rpc_code code, const char *msg)
{
	tau_agg *a = s->agg;
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
	if (first_time(a, key))
		tau_log_warn("agent stream refused", "peer", s->peer, "code",
		             tau_rpc_code_name(code), "reason", msg, NULL);
	tau_rpc_call_finish(s->call, code, msg);
}

/* ---- Report processing (stream mutex held, stream authenticated) ---- */

static void mark_dirty_locked(tau_agg *a)
{
	if (!a->dirty) {
		a->dirty = true;
		pthread_cond_signal(&a->cond);
	}
}

/* Log an agent/Node difference once, when it appears (taken from the store under the lock). */
static void log_mismatch(const char *node, const char *mismatch)
{
	if (mismatch[0] != '\0')
		tau_log_warn("agent report differs from the Node object; the Node counts", "node",
		             node, "difference", mismatch, NULL);
}

/* The node's agent.* verdicts as a fingerprint (truthrules.h); 0 for none failing or unknown. */
static uint64_t truth_fingerprint_locked(tau_agg *a, const char *name)
{
	tau_node_status st;

	if (tau_nodestore_get(a->store, name, &st) < 0 || st.truth == NULL)
		return 0;
	return tau_truth_rules_fingerprint(st.facts, st.truth);
}

/*
 * Store an accepted inventory and its decoded node truth (ownership moves).  Returns 0 or the
 * store's error (nothing changed).
 */
static int store_inventory(stream *s, const tau_node_facts *facts,
                           const Tau__Inventory__V1__NodeInventory *inv, tau_nodetruth *truth)
{
	tau_agg *a = s->agg;
	/* Labels and allocatable the agent's facts give back are not kept twice (report.h). */
	unsigned elided = tau_report_inventory_elidable(inv, facts);
	Tau__Inventory__V1__NodeInventory kept;
	size_t len;
	/* Packed on the stack when it fits (a typical inventory is 2-3 KiB); the store copies. */
	uint8_t stack_bytes[INVENTORY_STACK_BYTES];
	uint8_t *bytes;
	tau_rpc_call *replaced = NULL;
	int rc, trc;
	char mismatch[TAU_NODE_MISMATCH_MAX];

	tau_report_inventory_kept(&kept, inv, elided);
	len = protobuf_c_message_get_packed_size(&kept.base);
	bytes = len <= sizeof(stack_bytes) ? stack_bytes : malloc(len);
	if (bytes == NULL) {
		tau_nodetruth_free(truth);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	protobuf_c_message_pack(&kept.base, bytes);
	pthread_mutex_lock(&a->mu);
	rc = atomic_load(&s->replaced)
	             ? tau_error_set(TAU_ECONFLICT, "a newer Report stream reports for this node")
	             : tau_nodestore_report(a->store, facts, tau_agg_now_ms());
	mismatch[0] = '\0';
	(void)tau_nodestore_take_mismatch(a->store, facts->name, mismatch, sizeof(mismatch));
	if (rc >= 0) {
		/* The facts are stored whatever follows; a failure below is refused to the agent.
		 * Unchanged facts (rc 1) cannot move the pool: no rebuild for them. */
		if (rc == 0)
			mark_dirty_locked(a);
		uint64_t before = truth_fingerprint_locked(a, facts->name);

		rc = tau_nodestore_set_inventory(a->store, facts->name, bytes, len,
		                                 (uint8_t)elided);
		/* The truth goes with the inventory it was decoded from, or not at all. */
		trc = tau_nodestore_set_truth(a->store, facts->name, rc == 0 ? truth : NULL);
		truth = NULL;
		rc = rc < 0 ? rc : trc;
		/* What its agent.* rules say changed: subscribers (the TauCluster's
		 * NodeTruthAgrees) hear of it at the publisher's next tick, without a rebuild. */
		if (truth_fingerprint_locked(a, facts->name) != before)
			a->notify_pending = true;
		if (rc == 0)
			rc = bind_stream(a, s, facts->name, &replaced);
	}
	pthread_mutex_unlock(&a->mu);
	tau_nodetruth_free(truth);
	if (bytes != stack_bytes)
		free(bytes);
	log_mismatch(facts->name, mismatch);
	if (replaced != NULL) {
		tau_rpc_call_finish(replaced, TAU_RPC_ABORTED,
		                    "replaced by a newer Report stream for the same node");
		tau_rpc_call_unref(replaced);
	}
	return rc;
}

static void handle_report(stream *s, Tau__Inventory__V1__AgentReport *rep)
{
	tau_agg *a = s->agg;
	Tau__Inventory__V1__ReportAck ack = TAU__INVENTORY__V1__REPORT_ACK__INIT;
	char msg[TAU_ERROR_MSG_MAX];
	tau_report_action act = tau_report_seq_classify(&s->seq, rep->seq, rep->body_case);

	msg[0] = '\0';
	ack.seq = rep->seq;
	ack.heartbeat_interval_seconds = (uint32_t)a->cfg.heartbeat_interval_s;
	ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK;
	switch (act) {
	case TAU_REPORT_INVALID_SEQ:
		ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_REJECTED;
		snprintf(msg, sizeof(msg), "%s",
		         rep->seq == 0 ? "seq must start at 1" : "report carries no body");
		atomic_fetch_add(&a->reports_rejected, 1);
		break;
	case TAU_REPORT_DUPLICATE:
		break;
	case TAU_REPORT_NEED_FULL:
		ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_RESEND_FULL;
		snprintf(msg, sizeof(msg), "%s",
		         s->seq.have_full
		                 ? "sequence gap: send a full inventory"
		                 : "the first report of a stream must be a full inventory");
		atomic_fetch_add(&a->reports_resend, 1);
		break;
	case TAU_REPORT_PROCESS:
		if (rep->body_case == TAU__INVENTORY__V1__AGENT_REPORT__BODY_INVENTORY) {
			const Tau__Inventory__V1__NodeInventory *inv = rep->inventory;
			tau_report_view view;
			tau_nodetruth *truth = NULL;
			tau_rpc_code code =
			        tau_auth_decide_node(msg, sizeof(msg), s->node, inv->node_name);

			if (code != TAU_RPC_OK) {
				refuse(s, code, msg);
				s->auth = AUTH_FAILED;
				goto out;
			}
			/* The facts borrow the message's strings: the store copies them only if
			 * they changed. */
			/* Facts and node truth are both checked before anything is stored. */
			if (tau_report_view_facts(&view, inv) < 0 ||
			    tau_nodetruth_decode(&truth, inv) < 0 ||
			    store_inventory(s, &view.facts, inv, truth) < 0) {
				ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_REJECTED;
				snprintf(msg, sizeof(msg), "inventory of %.100s refused: %.380s",
				         inv->node_name, tau_error_last()->msg);
				atomic_fetch_add(&a->reports_rejected, 1);
				if (!s->warned_invalid) {
					s->warned_invalid = true;
					tau_log_warn("agent report refused", "node", inv->node_name,
					             "peer", s->peer, "reason", msg, NULL);
				}
			} else {
				tau_report_seq_accept(&s->seq, rep->seq, rep->body_case);
				stream_set_digest(s, inv->digest);
				atomic_fetch_add(&a->reports_inventory, 1);
			}
			tau_report_view_clear(&view);
		} else if (rep->body_case == TAU__INVENTORY__V1__AGENT_REPORT__BODY_HEARTBEAT) {
			const char *d =
			        rep->heartbeat->digest != NULL ? rep->heartbeat->digest : "";
			int rc = -TAU_ENOTFOUND;

			if (strcmp(d, s->digest) == 0) {
				pthread_mutex_lock(&a->mu);
				rc = s->bound ? tau_nodestore_heartbeat(a->store, s->node,
				                                        tau_agg_now_ms())
				              : -TAU_ENOTFOUND;
				pthread_mutex_unlock(&a->mu);
			}
			tau_report_seq_accept(&s->seq, rep->seq, rep->body_case);
			if (rc < 0) {
				ack.status = TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_RESEND_FULL;
				snprintf(
				        msg, sizeof(msg), "%s",
				        strcmp(d, s->digest) != 0
				                ? "heartbeat digest differs from the inventory held"
				                : "no inventory held for this node");
				atomic_fetch_add(&a->reports_resend, 1);
			} else {
				atomic_fetch_add(&a->reports_heartbeat, 1);
			}
		} else {
			tau_report_seq_accept(&s->seq, rep->seq, rep->body_case);
			atomic_fetch_add(&a->reports_stopping, 1);
			tau_log_info("agent stopping", "node", s->node, "reason",
			             rep->stopping->reason, NULL);
		}
		break;
	}
	ack.message = msg;
	/* Acks are cumulative (docs/protocol.md): an OK ack still waiting behind the one in flight
	 * is superseded by this one when this is OK too and for the highest seq accepted, so a
	 * burst costs one write. Any other ack (a duplicate's too) is queued as it is. */
	if ((ack.status == TAU__INVENTORY__V1__ACK_STATUS__ACK_STATUS_OK &&
	                     tau_report_ack_supersedes(&s->seq, rep->seq, act)
	             ? tau_rpc_call_send_latest(s->call, &ack.base)
	             : tau_rpc_call_send(s->call, &ack.base)) == -TAU_EAGAIN)
		tau_rpc_call_finish(s->call, TAU_RPC_RESOURCE_EXHAUSTED,
		                    "acks are not being read; reconnect");
out:
	tau_rpc_message_free(&rep->base);
}

/* ---- auth workers ---- */

/*
 * The confirming review of a locally admitted stream is in (stream mutex held): a refusal, or
 * a review that could not be made, closes the stream (fail closed; the agent reconnects and is
 * admitted again only on a token that verifies).
 */
static void confirm_decided(tau_agg *a, stream *s, int rc, bool expired,
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
	refuse(s, code, msg);
}

static void review_stream(tau_agg *a, stream *s)
{
	tau_auth_review review;
	/* Only this worker frees s->rv before the stream's end: its token may be read unlocked. */
	const char *token = s->rv->token, *hash = s->rv->token_hash;
	char msg[512];
	int64_t now = tau_agg_now_ms(), exp_s = 0;
	bool have_exp = tau_auth_token_expiry(&exp_s, token) == 0;
	bool expired = have_exp && exp_s * 1000 <= now;
	tau_rpc_code code;
	int rc = 0;

	memset(&review, 0, sizeof(review));
	pthread_mutex_lock(&s->mu);
	if (s->done) {
		/* Ended while it waited (logged by report_done): its review would cost for nothing.
		 */
		stream_review_free(s);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	pthread_mutex_unlock(&s->mu);
	if (!expired && !tau_auth_cache_get(a->cache, hash, now, &review)) {
		uint64_t started_us = tau_backoff_now_us();

		atomic_fetch_add(&a->token_reviews, 1);
		rc = a->cfg.review(a->cfg.review_ud, token, &review);
		tau_prom_histogram_observe(&a->review_latency, tau_backoff_now_us() - started_us);
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
		refuse(s, TAU_RPC_UNAVAILABLE, msg);
		goto out;
	}
	code = tau_auth_decide_user(msg, sizeof(msg), true, expired, &review, a->agent_user);
	if (code == TAU_RPC_OK && (s->node = strdup(review.node_name)) == NULL) {
		snprintf(msg, sizeof(msg), "out of memory");
		code = TAU_RPC_RESOURCE_EXHAUSTED;
	}
	if (code != TAU_RPC_OK) {
		s->auth = AUTH_FAILED;
		refuse(s, code, msg);
		goto out;
	}
	s->auth = AUTH_OK;
	for (size_t i = 0; i < s->rv->n_pending && s->auth == AUTH_OK; i++) {
		handle_report(s, (Tau__Inventory__V1__AgentReport *)s->rv->pending[i]);
		s->rv->pending[i] = NULL;
	}
	if (s->half_closed)
		tau_rpc_call_finish(s->call, TAU_RPC_OK, NULL); /* after the acks just queued */
out:
	stream_review_free(s); /* the token and what the review held: no longer needed */
	pthread_mutex_unlock(&s->mu);
}

/* Put `p` at the end of the round (jobs_mu held). */
static void turn_append(tau_agg *a, review_peer *p)
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
static stream *next_job(tau_agg *a)
{
	review_peer *p = a->turn_head;
	stream *s;

	if (p == NULL) {
		/* Nobody waits for admission: confirm the streams admitted on their own token. */
		s = a->confirm_head;
		if (s != NULL) {
			a->confirm_head = s->next_job;
			if (a->confirm_head == NULL)
				a->confirm_tail = NULL;
			s->next_job = NULL;
		}
		return s;
	}
	a->turn_head = p->next_turn;
	if (a->turn_head == NULL)
		a->turn_tail = NULL;
	p->in_turn = false;
	s = p->head;
	p->head = s->next_job;
	if (p->head == NULL)
		p->tail = NULL;
	else
		turn_append(a, p); /* its next stream waits for every other peer's turn */
	s->next_job = NULL;
	return s;
}

/* One review of `p` (NULL: a confirming review) is over (jobs_mu held); forget a peer with
 * none left. */
static void review_peer_release(tau_agg *a, review_peer *p)
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

static void *auth_worker(void *arg)
{
	tau_agg *a = arg;

	pthread_mutex_lock(&a->jobs_mu);
	for (;;) {
		stream *s;

		while (a->turn_head == NULL && a->confirm_head == NULL && !a->jobs_stop)
			pthread_cond_wait(&a->jobs_cond, &a->jobs_mu);
		if (a->jobs_stop)
			break;
		s = next_job(a);
		pthread_mutex_unlock(&a->jobs_mu);
		review_stream(a, s);
		pthread_mutex_lock(&a->jobs_mu);
		review_peer_release(a, s->rpeer);
		s->rpeer = NULL;
		pthread_mutex_unlock(&a->jobs_mu);
		stream_unref(s);
		pthread_mutex_lock(&a->jobs_mu);
	}
	pthread_mutex_unlock(&a->jobs_mu);
	return NULL;
}

/*
 * Queue `s` for review in its peer's queue.  @return 0, or RESOURCE_EXHAUSTED with `msg` set
 * when the peer or the whole aggregator has as many reviews queued or running as allowed.
 */
static tau_rpc_code enqueue_review(tau_agg *a, stream *s, const char *key, char *msg, size_t cap)
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
		s->next_job = NULL;
		if (p->tail != NULL)
			p->tail->next_job = s;
		else
			p->head = s;
		p->tail = s;
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
static bool enqueue_confirm(tau_agg *a, stream *s)
{
	bool ok;

	pthread_mutex_lock(&a->jobs_mu);
	ok = !a->jobs_stop && a->confirms_pending < a->cfg.max_pending_confirms;
	if (ok) {
		s->rpeer = NULL;
		s->next_job = NULL;
		if (a->confirm_tail != NULL)
			a->confirm_tail->next_job = s;
		else
			a->confirm_head = s;
		a->confirm_tail = s;
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
static bool admit_locally(tau_agg *a, stream *s, const char *token, const char *hash)
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
		if (first_time(a, key))
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
	stream_review_free(s);
	free(s->node);
	s->node = NULL;
	return false;
}

/* ---- Report callbacks (CQ thread) ---- */

static int report_start_with_token(tau_rpc_call *call, void *ud)
{
	tau_agg *a = ud;
	const char *token = tau_rpc_call_bearer_token(call);
	char host[128], hash[65];
	stream *s;
	tau_auth_review review;
	int64_t exp_s;
	char msg[512];

	peer_host(host, sizeof(host), tau_rpc_call_peer_address(call));
	s = calloc(1, sizeof(*s) + strlen(host) + 1);
	if (s == NULL)
		return TAU_RPC_RESOURCE_EXHAUSTED;
	atomic_init(&s->refs, 1);
	atomic_init(&s->replaced, false);
	pthread_mutex_init(&s->mu, NULL);
	s->agg = a;
	s->call = tau_rpc_call_ref(call);
	s->digest = no_digest;
	memcpy(s->peer, host, strlen(host) + 1);
	tau_rpc_call_set_user(call, s);
	if (token == NULL || token[0] == '\0') {
		tau_auth_decide_user(msg, sizeof(msg), false, false, NULL, a->agent_user);
		s->auth = AUTH_FAILED;
		refuse(s, TAU_RPC_UNAUTHENTICATED, msg);
		return TAU_RPC_UNAUTHENTICATED;
	}
	/* Not a JWT, or its own (unverified) claims are someone else's: no API request. */
	{
		tau_rpc_code code = tau_auth_token_precheck(msg, sizeof(msg), token, a->agent_user);

		if (code != TAU_RPC_OK) {
			atomic_fetch_add(strstr(msg, "not a JWT") != NULL ? &a->tokens_not_jwt
			                                                  : &a->tokens_not_agent,
			                 1);
			s->auth = AUTH_FAILED;
			refuse(s, code, msg);
			return (int)code;
		}
	}
	tau_auth_token_hash(hash, token);
	if ((tau_auth_token_expiry(&exp_s, token) < 0 || exp_s * 1000 > tau_agg_now_ms()) &&
	    tau_auth_cache_get(a->cache, hash, tau_agg_now_ms(), &review)) {
		tau_rpc_code code =
		        tau_auth_decide_user(msg, sizeof(msg), true, false, &review, a->agent_user);

		if (code != TAU_RPC_OK) {
			s->auth = AUTH_FAILED;
			refuse(s, code, msg);
			return (int)code;
		}
		s->node = strdup(review.node_name);
		if (s->node == NULL) {
			s->auth = AUTH_FAILED;
			return TAU_RPC_RESOURCE_EXHAUSTED;
		}
		s->auth = AUTH_OK;
		return 0;
	}
	if (admit_locally(a, s, token, hash))
		return 0;
	s->rv = calloc(1, sizeof(*s->rv));
	if (s->rv == NULL || (s->rv->token = strdup(token)) == NULL) {
		free(s->rv);
		s->rv = NULL;
		s->auth = AUTH_FAILED;
		return TAU_RPC_RESOURCE_EXHAUSTED;
	}
	memcpy(s->rv->token_hash, hash, sizeof(hash));
	atomic_fetch_add(&s->refs, 1);
	{
		const char *key = tau_rpc_call_peer_key(call);
		tau_rpc_code code = enqueue_review(a, s, key != NULL ? key : "", msg, sizeof(msg));

		if (code != TAU_RPC_OK) {
			stream_unref(s); /* the queue's reference */
			s->auth = AUTH_FAILED;
			refuse(s, code, msg);
			return (int)code;
		}
	}
	return 0;
}

/* The token is copied (review block) or reduced to a node name here: the call's own copy of
 * its headers (~1 KiB with a real ServiceAccount token) need not live as long as the stream. */
static int report_start(tau_rpc_call *call, void *ud)
{
	int rc = report_start_with_token(call, ud);

	tau_rpc_call_drop_metadata(call);
	return rc;
}

static void report_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	stream *s = tau_rpc_call_user(call);

	(void)ud;
	pthread_mutex_lock(&s->mu);
	switch (s->auth) {
	case AUTH_OK:
		handle_report(s, (Tau__Inventory__V1__AgentReport *)msg);
		break;
	case AUTH_PENDING:
		if (s->rv != NULL && s->rv->n_pending < PENDING_MAX) {
			s->rv->pending[s->rv->n_pending++] = msg;
		} else {
			tau_rpc_message_free(msg);
			tau_rpc_call_finish(call, TAU_RPC_RESOURCE_EXHAUSTED,
			                    "too many reports before authentication finished");
		}
		break;
	default:
		tau_rpc_message_free(msg);
	}
	pthread_mutex_unlock(&s->mu);
}

static void report_half_close(tau_rpc_call *call, void *ud)
{
	stream *s = tau_rpc_call_user(call);
	bool later = false;

	(void)ud;
	if (s != NULL) {
		pthread_mutex_lock(&s->mu);
		/* Its reports wait for the review: answer them, then finish (review_stream). */
		if (s->auth == AUTH_PENDING)
			later = s->half_closed = true;
		pthread_mutex_unlock(&s->mu);
	}
	if (!later)
		tau_rpc_call_finish(call, TAU_RPC_OK, NULL);
}

static void report_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	stream *s = tau_rpc_call_user(call);
	tau_agg *a = ud;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	if (s->auth == AUTH_PENDING) {
		char key[300];

		/* Cancelled or gone before its review: nobody can be told, but the log says so. */
		atomic_fetch_add(&a->ended_unauthenticated, 1);
		snprintf(key, sizeof(key), "%s|ended-unauthenticated", s->peer);
		if (first_time(a, key))
			tau_log_warn("agent stream ended before authentication completed", "peer",
			             s->peer, "end",
			             end == TAU_RPC_END_DEADLINE ? "deadline" : "cancelled", NULL);
	}
	s->done = true;
	/* The reports it held go now; the token stays for the worker that may be reading it. */
	if (s->rv != NULL) {
		for (size_t i = 0; i < s->rv->n_pending; i++)
			tau_rpc_message_free(s->rv->pending[i]);
		s->rv->n_pending = 0;
	}
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&a->mu);
	if (s->bound) {
		tau_nodestore_set_connected(a->store, s->node, false, tau_agg_now_ms());
		unbind_stream(a, s);
	}
	pthread_mutex_unlock(&a->mu);
	tau_rpc_call_set_user(call, NULL);
	stream_unref(s);
}

/* ---- pool snapshot and watchers (state mutex held) ---- */

static void send_to_watchers_locked(tau_agg *a)
{
	for (size_t i = 0; i < a->n_watchers; i++) {
		watcher *w = &a->watchers[i];

		if (a->pool_msg == NULL || w->sent_generation == a->pool_gen)
			continue;
		if (tau_rpc_call_send_queue_len(w->call) >= WATCH_QUEUE_MAX)
			continue; /* behind: the publisher's tick retries with the newest pool */
		if (tau_rpc_call_send(w->call, &a->pool_msg->base) == 0)
			w->sent_generation = a->pool_gen;
	}
}

static void rebuild_pool_locked(tau_agg *a)
{
	Tau__Inventory__V1__Pool *p = NULL;
	uint8_t *key;
	size_t len;
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (tau_query_pool(&p, a->store) < 0)
		return; /* stays dirty: retried on the next tick */
	a->dirty = false;
	len = protobuf_c_message_get_packed_size(&p->base);
	key = malloc(len > 0 ? len : 1);
	if (key == NULL) {
		tau_rpc_message_free(&p->base);
		a->dirty = true;
		return;
	}
	protobuf_c_message_pack(&p->base, key);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a->build_us = (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
	a->built = t1;
	if (a->pool_msg != NULL && len == a->pool_key_len && memcmp(key, a->pool_key, len) == 0) {
		free(key);
		tau_rpc_message_free(&p->base);
		return;
	}
	free(a->pool_key);
	a->pool_key = key;
	a->pool_key_len = len;
	p->generation = ++a->pool_gen;
	p->computed_unix_ms = tau_agg_now_ms();
	if (a->pool_msg != NULL)
		tau_rpc_message_free(&a->pool_msg->base);
	a->pool_msg = p;
	if (p->established)
		tau_log_debug("pool published", NULL);
	send_to_watchers_locked(a);
}

static void ensure_pool_locked(tau_agg *a)
{
	if (a->dirty || a->pool_msg == NULL)
		rebuild_pool_locked(a);
}

static void tick_locked(tau_agg *a)
{
	uint64_t gen = tau_pool_generation(tau_nodestore_pool(a->store));

	if (!a->nodes_synced && a->sync_probe != NULL && a->sync_probe(a->sync_probe_ud)) {
		a->nodes_synced = true;
		tau_nodestore_api_synced(a->store);
		tau_log_info("Node and TauCluster watches synced", NULL);
	} else if (!a->nodes_synced && !a->warned_unsynced &&
	           tau_agg_now_ms() >= a->sync_deadline_ms) {
		a->warned_unsynced = true;
		tau_log_warn("pool not established: the Node or TauCluster list has not been read "
		             "yet (is the TauCluster CRD installed? can the aggregator list both?)",
		             NULL);
	}
	tau_nodestore_tick(a->store, tau_agg_now_ms());
	if (!a->told_established && tau_nodestore_established(a->store)) {
		size_t missing = tau_nodestore_missing(a->store, NULL, 0);
		char count[32];

		snprintf(count, sizeof(count), "%zu", missing);
		tau_log_info("pool established", "missing_nodes", count, NULL);
		if (missing > 0) {
			const char *names[16];
			size_t n = tau_nodestore_missing(a->store, names, 16);

			for (size_t i = 0; i < n && i < 16; i++)
				tau_log_warn(
				        "node counted from its Node object: agent never reported",
				        "node", names[i], NULL);
		}
		a->told_established = true;
		a->dirty = true;
	}
	if (gen != tau_pool_generation(tau_nodestore_pool(a->store)))
		a->dirty = true;
}

/* True (and the news marked as told) when subscribers must hear of a pool change. */
static bool take_pool_news_locked(tau_agg *a)
{
	const tau_pool *pool = tau_nodestore_pool(a->store);
	uint64_t gen = tau_pool_generation(pool);
	bool established = tau_nodestore_established(a->store);
	bool valid = tau_pool_invalid_reason(pool) == NULL;

	if (!a->notify_pending && gen == a->notified_gen &&
	    established == a->notified_established && valid == a->notified_valid)
		return false;
	a->notify_pending = false;
	a->notified_gen = gen;
	a->notified_established = established;
	a->notified_valid = valid;
	return true;
}

/* Call every subscriber; no state lock held (they take snapshots). */
static void notify_subscribers(tau_agg *a)
{
	pthread_mutex_lock(&a->subs_mu);
	for (size_t i = 0; i < a->n_subs; i++)
		a->sub_fn[i](a->sub_ud[i]);
	pthread_mutex_unlock(&a->subs_mu);
}

int tau_agg_pool_subscribe(tau_agg *a, tau_pool_changed_fn fn, void *ud)
{
	pthread_mutex_lock(&a->subs_mu);
	if (a->n_subs == SUBSCRIBERS_MAX) {
		pthread_mutex_unlock(&a->subs_mu);
		return tau_error_set(TAU_ETOOBIG, "more than %d pool subscribers", SUBSCRIBERS_MAX);
	}
	a->sub_fn[a->n_subs] = fn;
	a->sub_ud[a->n_subs] = ud;
	a->n_subs++;
	pthread_mutex_unlock(&a->subs_mu);
	pthread_mutex_lock(&a->mu);
	a->notify_pending = true;
	mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	return 0;
}

int tau_agg_pool_unsubscribe(tau_agg *a, tau_pool_changed_fn fn, void *ud)
{
	int rc = tau_error_set(TAU_ENOTFOUND, "no such pool subscriber");

	pthread_mutex_lock(&a->subs_mu);
	for (size_t i = 0; i < a->n_subs; i++) {
		if (a->sub_fn[i] == fn && a->sub_ud[i] == ud) {
			memmove(&a->sub_fn[i], &a->sub_fn[i + 1],
			        (a->n_subs - i - 1) * sizeof(a->sub_fn[0]));
			memmove(&a->sub_ud[i], &a->sub_ud[i + 1],
			        (a->n_subs - i - 1) * sizeof(a->sub_ud[0]));
			a->n_subs--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&a->subs_mu);
	return rc;
}

int tau_agg_pool_snapshot(tau_agg *a, tau_pool_snapshot **out)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_pool_snapshot_build(out, a->store);
	pthread_mutex_unlock(&a->mu);
	return rc;
}

static void add_ms(struct timespec *ts, int64_t ms)
{
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static void *publisher(void *arg)
{
	tau_agg *a = arg;

	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		struct timespec deadline;

		/* The periodic tick (sync-gate timer, watchers that were behind), or a change. */
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		add_ms(&deadline, 250);
		while (!a->stop && !a->dirty &&
		       pthread_cond_timedwait(&a->cond, &a->mu, &deadline) != ETIMEDOUT)
			;
		if (a->dirty && a->cfg.coalesce_ms > 0) {
			/*
			 * Coalescing window: changes arriving in it ride along.  A rebuild is
			 * O(nodes) under the lock, so under churn (the last rebuild was within
			 * the stretched window) the window stretches to ten times its cost (at
			 * most 1 s): rebuilding then takes <= 10% of the time.  A change on a
			 * quiet system still goes out after the plain window.
			 */
			int64_t window = a->build_us / 100, since_ms;
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			since_ms = (int64_t)(now.tv_sec - a->built.tv_sec) * 1000 +
			           (now.tv_nsec - a->built.tv_nsec) / 1000000;
			if (since_ms > window)
				window = a->cfg.coalesce_ms;
			if (window < a->cfg.coalesce_ms)
				window = a->cfg.coalesce_ms;
			if (window > 1000)
				window = 1000;
			clock_gettime(CLOCK_MONOTONIC, &deadline);
			add_ms(&deadline, window);
			while (!a->stop &&
			       pthread_cond_timedwait(&a->cond, &a->mu, &deadline) != ETIMEDOUT)
				;
		}
		if (a->stop)
			break;
		tick_locked(a);
		if (a->dirty)
			rebuild_pool_locked(a);
		send_to_watchers_locked(a);
		if (take_pool_news_locked(a)) {
			pthread_mutex_unlock(&a->mu);
			notify_subscribers(a);
			pthread_mutex_lock(&a->mu);
		}
	}
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* ---- query callbacks (CQ thread) ---- */

static tau_query_opts query_opts(const tau_agg *a)
{
	tau_query_opts o = {.now_ms = tau_agg_now_ms(),
	                    .stale_after_ms = 3000LL * a->cfg.heartbeat_interval_s};
	return o;
}

static void finish_error(tau_rpc_call *call, int rc)
{
	tau_rpc_call_finish(call,
	                    rc == -TAU_ENOTFOUND ? TAU_RPC_NOT_FOUND
	                    : rc == -TAU_EINVAL  ? TAU_RPC_INVALID_ARGUMENT
	                                         : TAU_RPC_INTERNAL,
	                    tau_error_last()->msg);
}

/* Answer a unary query with `resp` (on success) or the error `rc`, then free `resp`. */
static void answer(tau_rpc_call *call, int rc, ProtobufCMessage *resp)
{
	if (rc < 0)
		finish_error(call, rc);
	else
		tau_rpc_call_reply(call, resp);
	if (resp != NULL)
		tau_rpc_message_free(resp);
}

static void q_list_nodes(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	Tau__Inventory__V1__ListNodesResponse *resp = NULL;
	tau_query_opts o = query_opts(a);
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_query_list_nodes(&resp, a->store, (Tau__Inventory__V1__ListNodesRequest *)msg, &o);
	pthread_mutex_unlock(&a->mu);
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_rpc_message_free(msg);
}

static void q_get_node(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	Tau__Inventory__V1__GetNodeResponse *resp = NULL;
	tau_query_opts o = query_opts(a);
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_query_get_node(&resp, a->store, ((Tau__Inventory__V1__GetNodeRequest *)msg)->name,
	                        &o);
	pthread_mutex_unlock(&a->mu);
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_rpc_message_free(msg);
}

static void q_explain(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	Tau__Inventory__V1__ExplainNodeResponse *resp = NULL;
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_query_explain(&resp, a->store,
	                       ((Tau__Inventory__V1__ExplainNodeRequest *)msg)->name);
	pthread_mutex_unlock(&a->mu);
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_rpc_message_free(msg);
}

static void q_get_pool(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;

	pthread_mutex_lock(&a->mu);
	ensure_pool_locked(a);
	if (a->pool_msg != NULL)
		tau_rpc_call_reply(call, &a->pool_msg->base);
	else
		tau_rpc_call_finish(call, TAU_RPC_INTERNAL, "pool could not be computed");
	pthread_mutex_unlock(&a->mu);
	tau_rpc_message_free(msg);
}

static void q_watch_pool(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;

	tau_rpc_message_free(msg);
	pthread_mutex_lock(&a->mu);
	if (a->n_watchers >= a->cfg.max_pool_watchers) {
		char text[160];

		pthread_mutex_unlock(&a->mu);
		atomic_fetch_add(&a->watchers_refused, 1);
		snprintf(text, sizeof(text),
		         "too many WatchPool streams (%zu, --max-pool-watchers); poll GetPool or "
		         "retry later",
		         a->cfg.max_pool_watchers);
		{
			char key[160];

			peer_host(key, sizeof(key), tau_rpc_call_peer_address(call));
			strncat(key, "|watchpool-cap", sizeof(key) - strlen(key) - 1);
			if (first_time(a, key)) /* once per peer host */
				tau_log_warn("WatchPool refused: watcher cap reached", "peer",
				             tau_rpc_call_peer_address(call), "reason", text, NULL);
		}
		tau_rpc_call_finish(call, TAU_RPC_RESOURCE_EXHAUSTED, text);
		return;
	}
	if (a->n_watchers == a->cap_watchers) {
		size_t cap = a->cap_watchers ? a->cap_watchers * 2 : 16;
		watcher *grown = realloc(a->watchers, cap * sizeof(*grown));

		if (grown == NULL) {
			pthread_mutex_unlock(&a->mu);
			tau_rpc_call_finish(call, TAU_RPC_RESOURCE_EXHAUSTED, "out of memory");
			return;
		}
		a->watchers = grown;
		a->cap_watchers = cap;
	}
	a->watchers[a->n_watchers].call = tau_rpc_call_ref(call);
	a->watchers[a->n_watchers].sent_generation = 0;
	a->n_watchers++;
	ensure_pool_locked(a);
	send_to_watchers_locked(a);
	pthread_mutex_unlock(&a->mu);
}

static void q_watch_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	tau_agg *a = ud;

	(void)end;
	/* The call user is not ours (the query guard owns it): look the call up. */
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n_watchers; i++) {
		if (a->watchers[i].call == call) {
			tau_rpc_call_unref(call);
			a->watchers[i] = a->watchers[--a->n_watchers];
			break;
		}
	}
	pthread_mutex_unlock(&a->mu);
}

/* Called with ws_mu held.  False (and the call finished) when no synced controller runs here. */
static bool workspaces_available(tau_agg *a, tau_rpc_call *call)
{
	if (a->workspaces == NULL) {
		tau_rpc_call_finish(call, TAU_RPC_UNAVAILABLE,
		                    "workspace controller not running on this replica");
		return false;
	}
	if (!tau_ws_controller_synced(a->workspaces)) {
		tau_rpc_call_finish(call, TAU_RPC_UNAVAILABLE,
		                    "workspace controller has not synced its cache yet");
		return false;
	}
	return true;
}

static void q_list_workspaces(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	Tau__Inventory__V1__ListWorkspacesResponse *resp = NULL;
	tau_ws_summary *list = NULL;
	size_t n = 0;
	int rc;

	tau_rpc_message_free(msg);
	pthread_mutex_lock(&a->ws_mu);
	if (!workspaces_available(a, call)) {
		pthread_mutex_unlock(&a->ws_mu);
		return;
	}
	rc = tau_ws_controller_list(&list, &n, a->workspaces);
	pthread_mutex_unlock(&a->ws_mu);
	if (rc == 0)
		rc = tau_query_list_workspaces(&resp, list, n);
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_ws_summaries_free(list, n);
}

static void q_get_workspace(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	const char *name = ((Tau__Inventory__V1__GetWorkspaceRequest *)msg)->name;
	Tau__Inventory__V1__WorkspaceSummary *resp = NULL;
	tau_ws_summary sum = {0};
	int rc;

	if (name == NULL || name[0] == '\0') {
		tau_rpc_call_finish(call, TAU_RPC_INVALID_ARGUMENT, "workspace name is required");
		goto out;
	}
	pthread_mutex_lock(&a->ws_mu);
	if (!workspaces_available(a, call)) {
		pthread_mutex_unlock(&a->ws_mu);
		goto out;
	}
	rc = tau_ws_controller_get(&sum, a->workspaces, name);
	pthread_mutex_unlock(&a->ws_mu);
	if (rc == -TAU_ENOTFOUND) {
		char text[384];

		snprintf(text, sizeof(text), "workspace %.253s not found", name);
		tau_rpc_call_finish(call, TAU_RPC_NOT_FOUND, text);
		goto out;
	}
	if (rc == 0)
		rc = tau_query_workspace(&resp, &sum);
	if (rc < 0)
		finish_error(call, rc);
	else
		tau_rpc_call_reply(call, &resp->base);
out:
	if (resp != NULL)
		tau_rpc_message_free(&resp->base);
	tau_ws_summary_clear(&sum);
	tau_rpc_message_free(msg);
}

static void q_get_capacity(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	Tau__Inventory__V1__GetCapacityResponse *resp = NULL;
	tau_query_opts o = query_opts(a);
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_query_capacity(&resp, a->store, &o);
	pthread_mutex_unlock(&a->mu);
	if (resp != NULL)
		resp->computed_unix_ms = tau_agg_now_ms();
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_rpc_message_free(msg);
}

static void q_fit(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	tau_agg *a = ud;
	Tau__Inventory__V1__FitResponse *resp = NULL;
	tau_query_opts o = query_opts(a);
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_query_fit(&resp, a->store, (Tau__Inventory__V1__FitRequest *)msg, &o);
	pthread_mutex_unlock(&a->mu);
	answer(call, rc, resp != NULL ? &resp->base : NULL);
	tau_rpc_message_free(msg);
}

int tau_agg_register(tau_agg *a, tau_rpc_server *srv)
{
	a->srv = srv;
#define QUERY(p, k, req, resp, fn)                                                                 \
	{.path = "/tau.inventory.v1.QueryService/" p,                                              \
	 .kind = (k),                                                                              \
	 .request = &tau__inventory__v1__##req##__descriptor,                                      \
	 .response = &tau__inventory__v1__##resp##__descriptor,                                    \
	 .on_message = (fn),                                                                       \
	 .ud = a}
	tau_rpc_method methods[] = {
	        {.path = "/tau.inventory.v1.InventoryService/Report",
	         .kind = TAU_RPC_BIDI,
	         .request = &tau__inventory__v1__agent_report__descriptor,
	         .response = &tau__inventory__v1__report_ack__descriptor,
	         .on_start = report_start,
	         .on_message = report_message,
	         .on_half_close = report_half_close,
	         .on_done = report_done,
	         .ud = a},
	        QUERY("ListNodes", TAU_RPC_UNARY, list_nodes_request, list_nodes_response,
	              q_list_nodes),
	        QUERY("GetNode", TAU_RPC_UNARY, get_node_request, get_node_response, q_get_node),
	        QUERY("GetPool", TAU_RPC_UNARY, get_pool_request, pool, q_get_pool),
	        QUERY("ExplainNode", TAU_RPC_UNARY, explain_node_request, explain_node_response,
	              q_explain),
	        QUERY("WatchPool", TAU_RPC_SERVER_STREAM, watch_pool_request, pool, q_watch_pool),
	        QUERY("ListWorkspaces", TAU_RPC_UNARY, list_workspaces_request,
	              list_workspaces_response, q_list_workspaces),
	        QUERY("GetWorkspace", TAU_RPC_UNARY, get_workspace_request, workspace_summary,
	              q_get_workspace),
	        QUERY("GetCapacity", TAU_RPC_UNARY, get_capacity_request, get_capacity_response,
	              q_get_capacity),
	        QUERY("Fit", TAU_RPC_UNARY, fit_request, fit_response, q_fit),
	};
#undef QUERY
	methods[5].on_done = q_watch_done;
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		int rc = 0;

		/* Every query but Report (its own agent auth) is guarded unless anonymous. */
		if (i > 0 && a->cfg.qauth != NULL)
			rc = tau_qauth_guard(a->cfg.qauth, &methods[i],
			                     strstr(methods[i].path, "Workspace") != NULL
			                             ? "workspaces"
			                             : "inventory");
		if (rc == 0)
			rc = tau_rpc_server_add_method(srv, &methods[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- kube side ---- */

void tau_agg_node_upsert(tau_agg *a, const cJSON *node)
{
	tau_node_facts facts = {0};
	char mismatch[TAU_NODE_MISMATCH_MAX];
	int rc = tau_node_facts_from_json(&facts, node);

	if (rc < 0) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(node, "metadata"), "name");
		char reason[TAU_ERROR_MSG_MAX];

		snprintf(reason, sizeof(reason), "%s", tau_error_last()->msg);
		tau_log_warn("node does not count: its Node object is unreadable", "node",
		             cJSON_IsString(name) ? name->valuestring : "?", "reason", reason,
		             NULL);
		/* Fail closed: whatever it counted with before no longer holds. */
		if (cJSON_IsString(name) &&
		    tau_names_check_dns1123_subdomain(name->valuestring) == 0) {
			pthread_mutex_lock(&a->mu);
			(void)tau_nodestore_api_unreadable(a->store, name->valuestring, reason);
			mark_dirty_locked(a);
			pthread_mutex_unlock(&a->mu);
		}
		return;
	}
	pthread_mutex_lock(&a->mu);
	rc = tau_nodestore_api_upsert(a->store, &facts);
	mismatch[0] = '\0';
	(void)tau_nodestore_take_mismatch(a->store, facts.name, mismatch, sizeof(mismatch));
	mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	if (rc < 0)
		tau_log_warn("node ignored", "node", facts.name, "reason", tau_error_last()->msg,
		             NULL);
	log_mismatch(facts.name, mismatch);
	tau_node_facts_clear(&facts);
}

void tau_agg_node_delete(tau_agg *a, const cJSON *node)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(node, "metadata"), "name");

	if (!cJSON_IsString(name))
		return;
	pthread_mutex_lock(&a->mu);
	if (tau_nodestore_api_delete(a->store, name->valuestring) == 0)
		mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	tau_log_info("node deleted", "node", name->valuestring, NULL);
}

/* ---- DRA objects (drawatch.h feeds these; docs/budget.md, "How DRA devices count") ---- */

static const char *object_name(const cJSON *obj)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "name");

	return cJSON_IsString(name) ? name->valuestring : NULL;
}

/*
 * Recount the nodes with the store as it now is (a->mu held); logs a failure.  `classes`: a
 * DeviceClass or Kueue's configuration changed, so subscribers (the TauCluster's
 * DRAClassesUsable) hear of it even when no count moves (a class that selects nothing yet).
 */
static void dra_recount_locked(tau_agg *a, bool classes)
{
	if (tau_nodestore_set_dra(a->store, a->dra) < 0)
		tau_log_error("nodes not recounted with their DRA devices", "reason",
		              tau_error_last()->msg, NULL);
	if (classes)
		a->notify_pending = true;
	mark_dirty_locked(a);
}

void tau_agg_dra_object(tau_agg *a, tau_agg_dra_kind kind, const cJSON *obj, bool deleted)
{
	const char *what = kind == TAU_AGG_DRA_SLICE ? "ResourceSlice" : "DeviceClass";
	const char *name = object_name(obj);
	char reason[TAU_ERROR_MSG_MAX];
	int rc;

	if (deleted && name == NULL)
		return;
	pthread_mutex_lock(&a->mu);
	if (kind == TAU_AGG_DRA_SLICE)
		rc = deleted ? tau_dra_store_slice_delete(a->dra, name)
		             : tau_dra_store_slice_upsert(a->dra, obj);
	else
		rc = deleted ? tau_dra_store_class_delete(a->dra, name)
		             : tau_dra_store_class_upsert(a->dra, obj);
	reason[0] = '\0';
	if (rc < 0 && rc != -TAU_ENOTFOUND)
		snprintf(reason, sizeof(reason), "%s", tau_error_last()->msg);
	/* A refused object replaced the old one by nothing: the nodes follow either way. */
	dra_recount_locked(a, kind == TAU_AGG_DRA_CLASS);
	pthread_mutex_unlock(&a->mu);
	if (reason[0] != '\0')
		tau_log_warn("DRA object does not count", "kind", what, "name",
		             name != NULL ? name : "?", "reason", reason, NULL);
}

void tau_agg_dra_kueue(tau_agg *a, const tau_kueue_config *cfg, const char *error)
{
	int rc;

	pthread_mutex_lock(&a->mu);
	rc = tau_dra_store_set_mappings(a->dra, cfg != NULL ? cfg->mappings : NULL,
	                                cfg != NULL ? cfg->n_mappings : 0, error);
	dra_recount_locked(a, true);
	pthread_mutex_unlock(&a->mu);
	if (rc < 0)
		tau_log_error("Kueue deviceClassMappings not applied", "reason",
		              tau_error_last()->msg, NULL);
	else if (error != NULL)
		tau_log_warn(
		        "Kueue's configuration is unreadable: no DRA device counts until it is "
		        "fixed",
		        "reason", error, NULL);
}

void tau_agg_set_sync_probe(tau_agg *a, bool (*probe)(void *ud), void *ud)
{
	pthread_mutex_lock(&a->mu);
	a->sync_probe = probe;
	a->sync_probe_ud = ud;
	pthread_mutex_unlock(&a->mu);
}

void tau_agg_nodes_synced(tau_agg *a)
{
	pthread_mutex_lock(&a->mu);
	a->nodes_synced = true;
	tau_nodestore_api_synced(a->store);
	a->dirty = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->mu);
}

/*
 * Read the node selector of a TauCluster: 0 with *out (NULL: every node), or
 * -1 with `why` filled when it is present but unusable.
 */
static int cluster_selector(tau_selector **out, char *why, size_t cap, const cJSON *cluster)
{
	const cJSON *spec, *nodes, *sel_map;
	cJSON *ls;
	int rc;

	*out = NULL;
	if (cluster == NULL)
		return 0;
	spec = cJSON_GetObjectItemCaseSensitive(cluster, "spec");
	nodes = cJSON_GetObjectItemCaseSensitive(spec, "nodes");
	sel_map = cJSON_GetObjectItemCaseSensitive(nodes, "selector");
	if ((spec != NULL && !cJSON_IsNull(spec) && !cJSON_IsObject(spec)) ||
	    (nodes != NULL && !cJSON_IsNull(nodes) && !cJSON_IsObject(nodes))) {
		snprintf(why, cap, "spec.nodes: not an object");
		return -1;
	}
	if (sel_map == NULL || cJSON_IsNull(sel_map))
		return 0;
	if (!cJSON_IsObject(sel_map)) {
		snprintf(why, cap, "spec.nodes.selector: not a map of label keys to values");
		return -1;
	}
	ls = cJSON_CreateObject();
	if (ls == NULL || !cJSON_AddItemToObject(ls, "matchLabels", cJSON_Duplicate(sel_map, 1))) {
		cJSON_Delete(ls);
		snprintf(why, cap, "out of memory reading spec.nodes.selector");
		return -1;
	}
	rc = tau_selector_from_json(out, ls);
	cJSON_Delete(ls);
	if (rc < 0) {
		snprintf(why, cap, "spec.nodes.selector: %.400s", tau_error_last()->msg);
		return -1;
	}
	return 0;
}

void tau_agg_cluster(tau_agg *a, const cJSON *cluster)
{
	tau_selector *sel = NULL;
	char why[TAU_ERROR_MSG_MAX];
	bool usable = cluster_selector(&sel, why, sizeof(why), cluster) == 0;
	const char *shown = sel != NULL ? "set" : "none (every node)";
	uint64_t gen;
	bool changed;
	int rc;

	pthread_mutex_lock(&a->mu);
	gen = tau_pool_generation(tau_nodestore_pool(a->store));
	/* Fail closed: an unusable selector counts nothing, never "every node". */
	rc = usable ? tau_nodestore_set_selector(a->store, sel)
	            : tau_nodestore_set_selector_error(a->store, why);
	/* Most TauCluster events are its status (the budget's own writes): the same selector. */
	changed = rc < 0 || gen != tau_pool_generation(tau_nodestore_pool(a->store));
	if (changed)
		mark_dirty_locked(a);
	pthread_mutex_unlock(&a->mu);
	if (!changed)
		return;
	if (rc < 0)
		tau_log_error("TauCluster node selector not applied", "reason",
		              tau_error_last()->msg, NULL);
	else if (!usable)
		tau_log_warn("TauCluster node selector unusable: no node counts until it is fixed",
		             "reason", why, NULL);
	else
		tau_log_info("TauCluster node selector", "selector", shown, NULL);
}

void tau_agg_set_workspaces(tau_agg *a, tau_ws_controller *ctl)
{
	pthread_mutex_lock(&a->ws_mu);
	a->workspaces = ctl;
	pthread_mutex_unlock(&a->ws_mu);
}

void tau_agg_set_leader(tau_agg *a, bool leader)
{
	pthread_mutex_lock(&a->mu);
	a->leader = leader;
	pthread_mutex_unlock(&a->mu);
}

bool tau_agg_established(tau_agg *a)
{
	bool e;

	pthread_mutex_lock(&a->mu);
	e = tau_nodestore_established(a->store);
	pthread_mutex_unlock(&a->mu);
	return e;
}

int tau_agg_metrics(tau_agg *a, char **out)
{
	tau_metrics m = {0};
	tau_metrics_flavor *flavors = NULL;
	tau_metrics_resource *resources = NULL;
	size_t n_res = 0, cap_res = 0;
	tau_query_opts o = query_opts(a);
	const tau_pool *pool;
	int rc = -TAU_ENOMEM;

	pthread_mutex_lock(&a->mu);
	pool = tau_nodestore_pool(a->store);
	m.nodes_known = tau_nodestore_count(a->store);
	for (size_t i = 0; i < m.nodes_known; i++) {
		tau_node_status st;

		if (tau_nodestore_at(a->store, i, &st) < 0)
			continue;
		m.nodes_stale += tau_query_is_stale(&st, &o) ? 1 : 0;
		m.nodes_counted += st.counted ? 1 : 0;
		/* The verdicts the store keeps with each record: no rule runs for a scrape. */
		for (int r = 0; r < TAU_TRUTH_RULE_COUNT; r++)
			m.node_truth_failing[r] += (st.truth_failed >> r) & 1u;
	}
	m.nodes_mismatch = tau_nodestore_mismatch_count(a->store);
	{
		tau_dra_totals dra = tau_dra_view_totals(tau_nodestore_dra_view(a->store));

		m.dra_devices = dra.devices;
		m.dra_pools_incomplete = dra.pools_incomplete;
		m.dra_classes_unusable = dra.classes_unusable;
	}
	m.agents_connected = a->bindings.len;
	m.pool_watchers = a->n_watchers;
	m.established = tau_nodestore_established(a->store);
	m.valid = tau_pool_invalid_reason(pool) == NULL;
	m.missing_nodes = tau_nodestore_missing(a->store, NULL, 0);
	m.pool_generation = a->pool_gen;
	m.leader = a->leader;
	m.n_flavors = tau_pool_flavor_count(pool);
	flavors = calloc(m.n_flavors + 1, sizeof(*flavors));
	if (flavors == NULL)
		goto unlock;
	for (size_t i = 0; i < m.n_flavors; i++) {
		const tau_pool_flavor *f = tau_pool_flavor_at(pool, i);

		tau_class_capacity now;

		flavors[i].name = f->name;
		flavors[i].nodes = f->nodes;
		if (tau_capacity_class(&now, a->store, i, &o) == 0) {
			flavors[i].gpus[0] = now.gpus_healthy;
			flavors[i].gpus[1] = now.gpus_in_use;
			flavors[i].gpus[2] = now.gpus_free;
			flavors[i].node_states[0] = now.nodes_unknown;
			flavors[i].node_states[1] = now.nodes_degraded;
			flavors[i].node_states[2] = now.whole_nodes_free;
		}
		for (size_t r = 0; r < f->n_resources; r++) {
			if (n_res == cap_res) {
				size_t cap = cap_res ? cap_res * 2 : 32;
				tau_metrics_resource *g = realloc(resources, cap * sizeof(*g));

				if (g == NULL)
					goto unlock;
				resources = g;
				cap_res = cap;
			}
			resources[n_res].flavor = f->name;
			resources[n_res].resource = f->resources[r].name;
			if (tau_prom_quantity_value(resources[n_res].value,
			                            sizeof(resources[n_res].value),
			                            &f->resources[r].total) < 0)
				snprintf(resources[n_res].value, sizeof(resources[n_res].value),
				         "NaN");
			n_res++;
		}
	}
	m.flavors = flavors;
	m.resources = resources;
	m.n_resources = n_res;
	m.reports_inventory = atomic_load(&a->reports_inventory);
	m.reports_heartbeat = atomic_load(&a->reports_heartbeat);
	m.reports_stopping = atomic_load(&a->reports_stopping);
	m.reports_rejected = atomic_load(&a->reports_rejected);
	m.reports_resend_full = atomic_load(&a->reports_resend);
	m.auth_unauthenticated = atomic_load(&a->auth_unauth);
	m.auth_permission_denied = atomic_load(&a->auth_denied);
	m.auth_unavailable = atomic_load(&a->auth_unavail);
	m.token_reviews = atomic_load(&a->token_reviews);
	m.auth_overloaded = atomic_load(&a->auth_overloaded);
	m.tokens_not_jwt = atomic_load(&a->tokens_not_jwt);
	m.tokens_not_agent = atomic_load(&a->tokens_not_agent);
	m.ended_unauthenticated = atomic_load(&a->ended_unauthenticated);
	m.local_admitted = atomic_load(&a->local_admitted);
	m.local_unknown_key = atomic_load(&a->local_unknown_key);
	m.local_invalid = atomic_load(&a->local_invalid);
	m.local_queue_full = atomic_load(&a->local_queue_full);
	m.confirmed = atomic_load(&a->confirmed);
	m.confirm_refused = atomic_load(&a->confirm_refused);
	m.confirm_failed = atomic_load(&a->confirm_failed);
	{
		tau_auth_keys_stats ks;

		tau_auth_keys_stats_get(a->cfg.keys, &ks);
		m.keys_fetched = ks.fetched;
		m.keys_fetch_failed = ks.fetch_failed;
		m.keys_held = ks.keys;
	}
	pthread_mutex_lock(&a->jobs_mu);
	m.token_reviews_pending = a->reviews_pending;
	m.confirms_pending = a->confirms_pending;
	pthread_mutex_unlock(&a->jobs_mu);
	if (a->srv != NULL) {
		tau_rpc_server_stats st;

		tau_rpc_server_stats_get(a->srv, &st);
		m.grpc_refused_per_peer = st.refused_peer_cap;
		m.grpc_refused_metadata = st.refused_metadata;
	}
	{
		tau_qauth_counts qc;

		m.pool_watchers_refused = atomic_load(&a->watchers_refused);
		tau_qauth_counts_get(a->cfg.qauth, &qc);
		m.query_allowed = qc.allowed;
		m.query_unauthenticated = qc.unauthenticated;
		m.query_denied = qc.denied;
		m.query_unavailable = qc.unavailable;
		m.query_overloaded = qc.overloaded;
		m.query_reviews = qc.reviews;
		m.query_reviews_pending = qc.pending;
		m.query_review_latency = tau_qauth_review_latency(a->cfg.qauth);
	}
	m.report_review_latency = &a->review_latency;
	/* Names are lent from the pool: render before letting go of the lock. */
	rc = tau_metrics_render(out, &m);
unlock:
	pthread_mutex_unlock(&a->mu);
	free(flavors);
	free(resources);
	return rc;
}

/* ---- lifecycle ---- */

int tau_agg_new(tau_agg **out, const tau_agg_config *cfg)
{
	tau_agg *a;
	int rc;

	if (cfg->agent_user == NULL || cfg->review == NULL)
		return tau_error_set(TAU_EINVAL, "aggregator config needs agent_user and review");
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	a->cfg = *cfg;
	if (a->cfg.heartbeat_interval_s <= 0)
		a->cfg.heartbeat_interval_s = 30;
	if (a->cfg.sync_timeout_ms <= 0)
		a->cfg.sync_timeout_ms = 60000;
	if (a->cfg.auth_threads <= 0)
		a->cfg.auth_threads = 4;
	if (a->cfg.review_ttl_ms <= 0)
		a->cfg.review_ttl_ms = 300000;
	if (a->cfg.negative_ttl_ms <= 0)
		a->cfg.negative_ttl_ms = 10000;
	if (a->cfg.coalesce_ms < 0)
		a->cfg.coalesce_ms = 0;
	else if (a->cfg.coalesce_ms == 0)
		a->cfg.coalesce_ms = 20;
	if (a->cfg.auth_cache_max == 0)
		a->cfg.auth_cache_max = 65536;
	if (a->cfg.max_pool_watchers == 0)
		a->cfg.max_pool_watchers = 1024;
	if (a->cfg.max_pending_reviews == 0)
		a->cfg.max_pending_reviews = 256;
	if (a->cfg.max_reviews_per_peer == 0)
		a->cfg.max_reviews_per_peer = 8;
	if (a->cfg.max_pending_confirms == 0)
		a->cfg.max_pending_confirms = 65536;
	a->agent_user = strdup(cfg->agent_user);
	a->peers = calloc(PEER_LOG_MAX, sizeof(*a->peers));
	if (a->agent_user == NULL || a->peers == NULL || tau_hmap_init(&a->bindings, 1024) < 0 ||
	    tau_hmap_init(&a->review_peers, 256) < 0) {
		rc = tau_error_set(TAU_ENOMEM, "out of memory");
		goto fail;
	}
	a->sync_deadline_ms = tau_agg_now_ms() + a->cfg.sync_timeout_ms;
	if ((rc = tau_nodestore_new(&a->store, tau_agg_now_ms(), a->cfg.sync_timeout_ms)) < 0 ||
	    (rc = tau_dra_store_new(&a->dra)) < 0 ||
	    (rc = tau_auth_cache_new(&a->cache, a->cfg.auth_cache_max)) < 0)
		goto fail;
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->jobs_mu, NULL);
	pthread_mutex_init(&a->peers_mu, NULL);
	pthread_mutex_init(&a->ws_mu, NULL);
	pthread_mutex_init(&a->subs_mu, NULL);
	a->notified_valid = true;
	pthread_cond_init(&a->jobs_cond, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&a->cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	a->dirty = true;
	*out = a;
	return 0;
fail:
	tau_nodestore_free(a->store);
	tau_dra_store_free(a->dra);
	free(a->agent_user);
	tau_hmap_destroy(&a->bindings);
	tau_hmap_destroy(&a->review_peers);
	free(a->peers);
	free(a);
	return rc;
}

int tau_agg_start(tau_agg *a)
{
	a->workers = calloc((size_t)a->cfg.auth_threads, sizeof(*a->workers));
	if (a->workers == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	for (int i = 0; i < a->cfg.auth_threads; i++) {
		if (pthread_create(&a->workers[i], NULL, auth_worker, a) != 0) {
			tau_agg_stop(a);
			return tau_error_set(TAU_EIO, "cannot start auth worker");
		}
		a->n_workers++;
	}
	if (pthread_create(&a->publisher, NULL, publisher, a) != 0) {
		tau_agg_stop(a);
		return tau_error_set(TAU_EIO, "cannot start pool publisher");
	}
	a->started = true;
	return 0;
}

void tau_agg_stop(tau_agg *a)
{
	pthread_mutex_lock(&a->jobs_mu);
	a->jobs_stop = true;
	pthread_cond_broadcast(&a->jobs_cond);
	pthread_mutex_unlock(&a->jobs_mu);
	for (int i = 0; i < a->n_workers; i++)
		pthread_join(a->workers[i], NULL);
	a->n_workers = 0;
	free(a->workers);
	a->workers = NULL;
	/* Jobs never taken: the rpc server is down, their calls are over. */
	pthread_mutex_lock(&a->jobs_mu);
	for (stream *s; (s = next_job(a)) != NULL;) {
		review_peer_release(a, s->rpeer);
		stream_unref(s);
	}
	pthread_mutex_unlock(&a->jobs_mu);
	if (a->started) {
		pthread_mutex_lock(&a->mu);
		a->stop = true;
		pthread_cond_broadcast(&a->cond);
		pthread_mutex_unlock(&a->mu);
		pthread_join(a->publisher, NULL);
		a->started = false;
	}
}

void tau_agg_free(tau_agg *a)
{
	if (a == NULL)
		return;
	tau_agg_stop(a);
	for (size_t i = 0; i < a->n_watchers; i++)
		tau_rpc_call_unref(a->watchers[i].call);
	free(a->watchers);
	{
		tau_hmap_iter it;
		tau_hmap_node *n;

		tau_hmap_iter_init(&it, &a->bindings);
		while ((n = tau_hmap_iter_next(&it)) != NULL)
			free(TAU_HMAP_ENTRY(n, binding, hnode));
	}
	tau_hmap_destroy(&a->bindings);
	tau_hmap_destroy(&a->review_peers); /* empty: every review released its peer */
	for (size_t i = 0; i < a->n_peers; i++)
		free(a->peers[i]);
	free(a->peers);
	if (a->pool_msg != NULL)
		tau_rpc_message_free(&a->pool_msg->base);
	free(a->pool_key);
	tau_nodestore_free(a->store);
	tau_dra_store_free(a->dra);
	tau_auth_cache_free(a->cache);
	free(a->agent_user);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->jobs_mu);
	pthread_mutex_destroy(&a->peers_mu);
	pthread_mutex_destroy(&a->ws_mu);
	pthread_mutex_destroy(&a->subs_mu);
	pthread_cond_destroy(&a->cond);
	pthread_cond_destroy(&a->jobs_cond);
	free(a);
}
