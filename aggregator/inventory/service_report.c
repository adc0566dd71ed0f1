/*
 * service_report.c - one agent's Report stream: its lifetime, the reports it carries (an
 * inventory stored with its node truth, a heartbeat checked against the digest held, a
 * stopping notice), the node -> stream binding, and the rpc callbacks that open, feed and end
 * the stream.
 *
 * A stream is accepted at once; its token is then reviewed by an auth worker
 * (service_review.c) unless a cached review or the issuer's keys decide it, and reports that
 * arrive meanwhile wait in a small per-stream queue.  A token that cannot be the agent
 * ServiceAccount's (not a JWT, or its own claims name someone else) is refused before any
 * review.  Lock order: stream, then state.
 */
#include "service_internal.h"

#include "nodestore.h"
#include "nodetruth.h"
#include "report.h"
#include "truthrules.h"

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/log.h"
#include "tau/nodefacts.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVENTORY_STACK_BYTES 8192 /* an inventory packed up to this size needs no malloc */

static char no_digest[] = "";

/* ---- stream lifetime ---- */

/* Drop the review state: the token and any reports still held. */
void tau_inventory_stream_review_free(stream *s)
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

void tau_inventory_stream_unref(stream *s)
{
	if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	tau_inventory_stream_review_free(s);
	free(s->node);
	if (s->digest != no_digest)
		free(s->digest);
	tau_rpc_call_unref(s->call);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* ---- node -> stream binding (state mutex held) ---- */

static binding *binding_of(tau_inventory *a, const char *node)
{
	tau_hmap_node *n = tau_hmap_get(&a->bindings, node);

	return n != NULL ? TAU_HMAP_ENTRY(n, binding, hnode) : NULL;
}

/*
 * Make `s` the stream of `node`; *replaced gets the call of the stream it replaced
 * (referenced) or NULL.  @return 0, or -TAU_ENOMEM with `s` left unbound (its heartbeats are
 * then answered RESEND_FULL, so the agent's next full inventory binds it).
 */
static int bind_stream(tau_inventory *a, stream *s, const char *node, tau_rpc_call **replaced)
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

static void unbind_stream(tau_inventory *a, stream *s)
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

/* ---- Report processing (stream mutex held, stream authenticated) ---- */

/* Log an agent/Node difference once, when it appears (taken from the store under the lock). */
void tau_inventory_log_mismatch(const char *node, const char *mismatch)
{
	if (mismatch[0] != '\0')
		tau_log_warn("agent report differs from the Node object; the Node counts", "node",
		             node, "difference", mismatch, NULL);
}

/* The node's agent.* verdicts as a fingerprint (truthrules.h); 0 for none failing or unknown. */
static uint64_t truth_fingerprint_locked(tau_inventory *a, const char *name)
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
                           const Tau__Inventory__V1__NodeInventory *inv, tau_nodetruth *truth,
                           uint64_t fingerprint)
{
	tau_inventory *a = s->agg;
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
	             : tau_nodestore_report(a->store, facts, tau_clock_wall_ms());
	mismatch[0] = '\0';
	(void)tau_nodestore_take_mismatch(a->store, facts->name, mismatch, sizeof(mismatch));
	if (rc >= 0) {
		/* The facts are stored whatever follows; a failure below is refused to the agent.
		 * Unchanged facts (rc 1) cannot move the pool: no rebuild for them. */
		if (rc == 0)
			tau_inventory_mark_dirty_locked(a);
		uint64_t before = truth_fingerprint_locked(a, facts->name);

		rc = tau_nodestore_set_inventory(a->store, facts->name, bytes, len, (uint8_t)elided,
		                                 fingerprint);
		if (rc == 0)
			s->elided = (uint8_t)elided;
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
	tau_inventory_log_mismatch(facts->name, mismatch);
	if (replaced != NULL) {
		tau_rpc_call_finish(replaced, TAU_RPC_ABORTED,
		                    "replaced by a newer Report stream for the same node");
		tau_rpc_call_unref(replaced);
	}
	return rc;
}

/*
 * An inventory this stream sent before, but for its digest and time (the fingerprint, report.h;
 * the agent's digest decides nothing): its facts and node truth were validated and stored from
 * the same bytes, and the store still holds them for this stream's node, so it costs what a
 * heartbeat costs, plus the kept copy's new digest and time.  Returns true when so handled;
 * false to take the full path (nothing changed).
 */
static bool store_same(stream *s, const Tau__Inventory__V1__NodeInventory *inv,
                       uint64_t fingerprint)
{
	tau_inventory *a = s->agg;
	Tau__Inventory__V1__NodeInventory kept;
	uint8_t bytes[INVENTORY_STACK_BYTES];
	size_t len;
	int rc = 0;

	if (fingerprint == 0 || atomic_load(&s->replaced))
		return false;
	tau_report_inventory_kept(&kept, inv, s->elided);
	len = protobuf_c_message_get_packed_size(&kept.base);
	if (len > sizeof(bytes))
		return false;
	protobuf_c_message_pack(&kept.base, bytes);
	pthread_mutex_lock(&a->mu);
	if (s->bound)
		rc = tau_nodestore_report_same(a->store, s->node, fingerprint, bytes, len,
		                               s->elided, tau_clock_wall_ms());
	pthread_mutex_unlock(&a->mu);
	return rc > 0;
}

void tau_inventory_handle_report(stream *s, Tau__Inventory__V1__AgentReport *rep)
{
	tau_inventory *a = s->agg;
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
			size_t wire_len;
			const uint8_t *wire = tau_rpc_message_wire(&rep->base, &wire_len);
			uint64_t fingerprint = tau_report_fingerprint(wire, wire_len);

			if (code != TAU_RPC_OK) {
				tau_inventory_refuse(s, code, msg);
				s->auth = AUTH_FAILED;
				goto out;
			}
			memset(&view, 0, sizeof(view));
			/* The facts borrow the message's strings: the store copies them only if
			 * they changed. */
			/* Facts and node truth are both checked before anything is stored. */
			if (store_same(s, inv, fingerprint)) {
				tau_report_seq_accept(&s->seq, rep->seq, rep->body_case);
				stream_set_digest(s, inv->digest);
				atomic_fetch_add(&a->reports_inventory, 1);
				atomic_fetch_add(&a->reports_same, 1);
			} else if (tau_report_view_facts(&view, inv) < 0 ||
			           tau_nodetruth_decode(&truth, inv) < 0 ||
			           store_inventory(s, &view.facts, inv, truth, fingerprint) < 0) {
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
				                                        tau_clock_wall_ms())
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

/* ---- Report callbacks (CQ thread) ---- */

static int report_start_with_token(tau_rpc_call *call, void *ud)
{
	tau_inventory *a = ud;
	const char *token = tau_rpc_call_bearer_token(call);
	char host[128], hash[65];
	stream *s;
	tau_auth_review review;
	int64_t exp_s;
	char msg[512];

	tau_inventory_peer_host(host, sizeof(host), tau_rpc_call_peer_address(call));
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
		tau_inventory_refuse(s, TAU_RPC_UNAUTHENTICATED, msg);
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
			tau_inventory_refuse(s, code, msg);
			return (int)code;
		}
	}
	tau_auth_token_hash(hash, token);
	if ((tau_auth_token_expiry(&exp_s, token) < 0 ||
	     exp_s * 1000 > (int64_t)tau_clock_wall_ms()) &&
	    tau_auth_cache_get(a->cache, hash, tau_clock_wall_ms(), &review)) {
		tau_rpc_code code =
		        tau_auth_decide_user(msg, sizeof(msg), true, false, &review, a->agent_user);

		if (code != TAU_RPC_OK) {
			s->auth = AUTH_FAILED;
			tau_inventory_refuse(s, code, msg);
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
	if (tau_inventory_admit_locally(a, s, token, hash))
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
		tau_rpc_code code = tau_inventory_enqueue_review(a, s, key != NULL ? key : "", msg,
		                                                 sizeof(msg));

		if (code != TAU_RPC_OK) {
			tau_inventory_stream_unref(s); /* the queue's reference */
			s->auth = AUTH_FAILED;
			tau_inventory_refuse(s, code, msg);
			return (int)code;
		}
	}
	return 0;
}

/* The token is copied (review block) or reduced to a node name here: the call's own copy of
 * its headers (~1 KiB with a real ServiceAccount token) need not live as long as the stream. */
int tau_inventory_report_start(tau_rpc_call *call, void *ud)
{
	int rc = report_start_with_token(call, ud);

	tau_rpc_call_drop_metadata(call);
	return rc;
}

void tau_inventory_report_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud)
{
	stream *s = tau_rpc_call_user(call);

	(void)ud;
	pthread_mutex_lock(&s->mu);
	switch (s->auth) {
	case AUTH_OK:
		tau_inventory_handle_report(s, (Tau__Inventory__V1__AgentReport *)msg);
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

void tau_inventory_report_half_close(tau_rpc_call *call, void *ud)
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

void tau_inventory_report_done(tau_rpc_call *call, tau_rpc_end end, void *ud)
{
	stream *s = tau_rpc_call_user(call);
	tau_inventory *a = ud;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	if (s->auth == AUTH_PENDING) {
		char key[300];

		/* Cancelled or gone before its review: nobody can be told, but the log says so. */
		atomic_fetch_add(&a->ended_unauthenticated, 1);
		snprintf(key, sizeof(key), "%s|ended-unauthenticated", s->peer);
		if (tau_inventory_first_time(a, key))
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
		tau_nodestore_set_connected(a->store, s->node, false, tau_clock_wall_ms());
		unbind_stream(a, s);
	}
	pthread_mutex_unlock(&a->mu);
	tau_rpc_call_set_user(call, NULL);
	tau_inventory_stream_unref(s);
}
