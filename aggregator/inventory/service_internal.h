/*
 * service_internal.h - what the files of the inventory service (aggregator/inventory/service*.c)
 * share: the one state and the streams it serves; not for other parts (they use service.h).
 *
 * The one idea: a single mutex guards one aggregator state (node store, pool, the node ->
 * stream binding, pool watchers), and nothing slow ever runs under it.  TokenReview is the
 * slow step, so a new Report stream is accepted at once and its token reviewed by a worker
 * thread; reports that arrive meanwhile wait in a small per-stream queue and are processed, in
 * order, once the review allows the stream.  Lock order: stream, then state.
 */
#ifndef TAU_AGGREGATOR_SERVICE_INTERNAL_H
#define TAU_AGGREGATOR_SERVICE_INTERNAL_H

#include "service.h"

#include "drastore.h"
#include "nodestore.h"
#include "query.h"
#include "report.h"
#include "snapshot.h"

#include "tau/hmap.h"
#include "tau/prom.h"

#include "tau/inventory/v1/inventory.pb-c.h"
#include "tau/rpc_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define PENDING_MAX     16 /* reports held per stream while its token is reviewed */
#define SUBSCRIBERS_MAX 16 /* pool-change callbacks (snapshot.h) */

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
	tau_inventory *agg;
	tau_rpc_call *call; /* referenced for the stream's lifetime */
	auth_state auth;
	bool done;
	bool half_closed; /* the client half-closed while the review ran: finish after it */
	bool warned_invalid;
	bool confirming;   /* admitted on a locally verified token; its TokenReview is to come */
	uint8_t elided;    /* the mask its last stored inventory was kept with (report.h) */
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

/* The reviews of one peer: its queue, and how many are queued or running (jobs_mu). */
struct review_peer {
	tau_hmap_node hnode; /* in tau_inventory.review_peers */
	stream *head, *tail;
	size_t reviews;
	bool in_turn; /* in the round of peers with queued streams */
	review_peer *next_turn;
	char key[];
};

typedef struct binding {
	tau_hmap_node hnode; /* in tau_inventory.bindings, keyed by node */
	stream *s;
	char node[];
} binding;

typedef struct watcher {
	tau_rpc_call *call;
	uint64_t sent_generation;
} watcher;

struct tau_inventory {
	tau_inventory_config cfg;
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
	int64_t build_us;  /* cost of the last pool rebuild, to stretch the coalescing window */
	uint64_t built_us; /* when it ended (tau_clock_mono_us) */
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
	atomic_uint_fast64_t reports_same; /* inventories recognised unchanged (fingerprint) */
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

/* ---- service.c: shared helpers ---- */

/* True the first time `key` is seen (bounded: the set is forgotten when full). */
bool tau_inventory_first_time(tau_inventory *a, const char *key);
/* The peer's address without its port: one agent reconnecting is one peer. */
void tau_inventory_peer_host(char *out, size_t cap, const char *peer);

/* ---- service_report.c: the Report stream ---- */

/* Drop the review state: the token and any reports still held. */
void tau_inventory_stream_review_free(stream *s);
void tau_inventory_stream_unref(stream *s);
/* Log an agent/Node difference once, when it appears (taken from the store under the lock). */
void tau_inventory_log_mismatch(const char *node, const char *mismatch);
/* Handle one report of an authenticated stream (stream mutex held); frees `rep`. */
void tau_inventory_handle_report(stream *s, Tau__Inventory__V1__AgentReport *rep);
/* The Report method's callbacks (CQ thread). */
int tau_inventory_report_start(tau_rpc_call *call, void *ud);
void tau_inventory_report_message(tau_rpc_call *call, ProtobufCMessage *msg, void *ud);
void tau_inventory_report_half_close(tau_rpc_call *call, void *ud);
void tau_inventory_report_done(tau_rpc_call *call, tau_rpc_end end, void *ud);

/* ---- service_review.c: the review queue and the auth workers ---- */

/* Count and log (once per peer and reason) a refused stream, and finish its call. */
void tau_inventory_refuse(stream *s, tau_rpc_code code, const char *msg);
/*
 * Queue `s` for review in its peer's queue.  @return 0, or RESOURCE_EXHAUSTED with `msg` set
 * when the peer or the whole aggregator has as many reviews queued or running as allowed.
 */
tau_rpc_code tau_inventory_enqueue_review(tau_inventory *a, stream *s, const char *key, char *msg,
                                          size_t cap);
/*
 * Admit `s` on its own token when the issuer's keys verify it, its TokenReview queued to
 * confirm it.  @return true when admitted; false: it waits for its review.
 */
bool tau_inventory_admit_locally(tau_inventory *a, stream *s, const char *token, const char *hash);
/* The next stream to review (jobs_mu held); NULL when none waits. */
stream *tau_inventory_next_job(tau_inventory *a);
/* One review of `p` (NULL: a confirming review) is over (jobs_mu held). */
void tau_inventory_review_peer_release(tau_inventory *a, review_peer *p);
/* An auth worker thread. */
void *tau_inventory_auth_worker(void *arg);

/* ---- service_pool.c: the pool publisher and its subscribers (state mutex held) ---- */

/* Mark the pool for a rebuild and wake the publisher. */
void tau_inventory_mark_dirty_locked(tau_inventory *a);
/* Rebuild the pool now when it is dirty or was never built. */
void tau_inventory_ensure_pool_locked(tau_inventory *a);
/* Send the current pool to every watcher that has not had it and is not behind. */
void tau_inventory_send_to_watchers_locked(tau_inventory *a);
/* The publisher thread. */
void *tau_inventory_publisher(void *arg);

/* ---- service_query.c ---- */

/* The query options of now (staleness from the heartbeat interval). */
tau_query_opts tau_inventory_query_opts(const tau_inventory *a);

#endif /* TAU_AGGREGATOR_SERVICE_INTERNAL_H */
