/*
 * workspace/internal.h - what the workspace controller's files share
 * (controller.c: wiring and lifecycle; config.c: flags and TauCluster;
 * reconcile.c: the pass and its phases; objects.c: writing owned objects;
 * cleanup.c: draining a namespace left behind; summary.c: the read API).
 * Not for other folders; unit tests of the phases include it.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_INTERNAL_H
#define TAU_AGGREGATOR_WORKSPACE_INTERNAL_H

#include "allowlist_file.h"
#include "controller.h"
#include "desired.h"
#include "drain.h"
#include "status.h"

#include "controller/apply.h"
#include "controller/events.h"
#include "controller/runtime.h"

#include "tau/kube.h"
#include "tau/kube_informer.h"
#include "tau/selector.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

extern const tau_kube_resource tau_ws_res_workspaces;
extern const tau_kube_resource tau_ws_res_clusters;
extern const tau_kube_resource tau_ws_res_rolebindings;
extern const tau_kube_resource tau_ws_res_serviceaccounts;
extern const tau_kube_resource tau_ws_res_localqueues;
extern const tau_kube_resource tau_ws_res_clusterqueues;
/** Sources that hold a route during a drain, indexed by tau_ws_source_kind (tau/drain.h). */
#define tau_ws_res_sources tau_drain_resources

enum {
	WS_INF_WORKSPACES = 0,
	WS_INF_CLUSTER,
	WS_INF_NAMESPACES,
	WS_INF_CQ,
	WS_INF_RB,
	WS_INF_LQ,
	WS_INF_SA,
	WS_INF_N
};

struct tau_ws_controller {
	tau_kube_client *client;
	char *system_namespace;
	bool ns_mode_set;
	bool multiple_workspaces; /* feature gate: lifts the v0 block */
	tau_ws_ns_mode ns_mode;
	char *flag_allowlist_file;        /* --allowlist-file */
	tau_selector *allowlist_selector; /* --allowlist-selector */
	cJSON *map;                       /* --namespace-map-file; NULL when none */
	char *researcher_role;
	uint64_t drain_poll_ms;

	tau_controller *ctl;
	tau_kube_informer *inf[WS_INF_N];
	tau_ws_allowlist_file *allowlist_file; /* follows the flag's or TauCluster's file */
	atomic_uint_fast64_t passes;
};

/* ------------------------------------------------------------------------------------------ */
/* Configuration of one pass (config.c)                                                        */

typedef struct ws_config {
	tau_ws_ns_mode mode;
	bool map_set;
	tau_ws_ns_map_entry *map;
	size_t n_map;
	bool allow_shared;
	const char *default_queue; /* lent from cluster */
	tau_ws_allowlist *allowlist;
	/* Set when the allowlist sources contradict each other: every Operator-mode
	 * workspace is refused with TAU_WS_REASON_ALLOWLIST_CONFLICT and this text. */
	char conflict[TAU_WS_MESSAGE_MAX];
	cJSON *cluster;    /* TauCluster copy, NULL if absent */
	cJSON *namespaces; /* snapshot, for the selector source */
} ws_config;

/** Read flags and the cached TauCluster into `c`.  @return 0 or < 0 (the pass fails). */
int tau_ws_config_load(ws_config *c, tau_ws_controller *ctl);

/** Free what a config holds. */
void tau_ws_config_clear(ws_config *c);

/** Parse and load the namespace map file.  @return 0, -TAU_EINVAL, -TAU_ENOMEM. */
int tau_ws_map_load(cJSON **out, const char *path);

/* ------------------------------------------------------------------------------------------ */
/* One pass (reconcile.c)                                                                      */

#define WS_PASS_TEXTS 16

/** What a phase tells the pass. */
typedef enum ws_next {
	WS_NEXT = 0, /* go on with the next phase */
	WS_STOP      /* this pass is over (status written or nothing more to do) */
} ws_next;

typedef struct ws_old_view ws_old_view;

/** Everything one reconcile of one workspace holds. */
typedef struct ws_pass {
	tau_ws_controller *ctl;
	const char *name;
	ws_config cfg;
	cJSON *ws;           /* live copy of the workspace; NULL when gone */
	tau_ws_spec spec;    /* lent from ws */
	bool spec_ok;        /* false: spec invalid (refusal set) */
	const cJSON *status; /* ws.status */
	const char *prev_ns; /* status.target.resolvedNamespace */
	cJSON *all;          /* the workspaces cache snapshot */
	tau_ws_refusal refusal;
	tau_ws_ns_result nsr;
	tau_ws_ns_observed observed;
	char now[40];
	char cq_name[300];
	tau_ws_status_input sin;
	char texts[WS_PASS_TEXTS][TAU_WS_MESSAGE_MAX];
	size_t n_texts;
	tau_ws_drift_item drift[8];
	size_t n_drift;
	bool revocation_pending;
	uint64_t requeue_ms; /* > 0: come back sooner than the resync */
	ws_old_view *old;
} ws_pass;

/**
 * Begin a pass: read the workspace live, parse it, load the configuration
 * and the workspaces snapshot.  @return 0 (p->ws NULL when the workspace is
 * gone) or < 0.  Always pair with tau_ws_pass_end.
 */
int tau_ws_pass_begin(ws_pass *p, tau_ws_controller *ctl, const char *name);

/** Free what a pass holds. */
void tau_ws_pass_end(ws_pass *p);

/* The phases, in order.  Each returns WS_NEXT, WS_STOP or < 0 (the pass fails). */
int tau_ws_phase_deletion(ws_pass *p);          /* deleting: drain, clean up, drop the finalizer */
int tau_ws_phase_finalizer(ws_pass *p);         /* add our finalizer; an invalid spec stops here */
int tau_ws_phase_v0(ws_pass *p);                /* one active workspace */
int tau_ws_phase_namespace(ws_pass *p);         /* resolve, and ensure the Namespace (Managed) */
int tau_ws_phase_retarget(ws_pass *p);          /* drain the namespace left behind */
int tau_ws_phase_identity(ws_pass *p);          /* obsolete ServiceAccounts go first */
int tau_ws_phase_access(ws_pass *p);            /* the researcher RoleBinding, or none */
int tau_ws_phase_queue(ws_pass *p);             /* LocalQueue and its ClusterQueue */
int tau_ws_phase_workload_identity(ws_pass *p); /* the ServiceAccount */
int tau_ws_phase_status(ws_pass *p);            /* write status when it changed */

/* ------------------------------------------------------------------------------------------ */
/* Owned objects (objects.c)                                                                   */

/** A string member by path, or NULL. */
const char *tau_ws_str(const cJSON *obj, const char *path);
/** Equal strings; NULL equals only NULL. */
bool tau_ws_same(const char *a, const char *b);
/** metadata.<section>[key] (labels or annotations) as a string, or NULL. */
const char *tau_ws_label(const cJSON *obj, const char *section, const char *key);
/** The API's message for this thread's last failure, else the libtau error. */
const char *tau_ws_last_error(void);
/** "plural ns/name" for logs. */
void tau_ws_describe(char *buf, size_t len, const tau_kube_resource *res, const char *ns,
                     const char *name);
/** A text buffer of TAU_WS_MESSAGE_MAX bytes living as long as the pass. */
char *tau_ws_pass_text(ws_pass *p);
/** Come back after `ms` (the earliest request wins). */
void tau_ws_pass_requeue(ws_pass *p, uint64_t ms);
/** The previous status's condition `type`: its `field`, or NULL. */
const char *tau_ws_pass_condition(const ws_pass *p, const char *type, const char *field);
/** Whether the previous status had condition `type` True. */
bool tau_ws_pass_was_true(const ws_pass *p, const char *type);
/** Make `desired` exist as desired; `was_ready`: a re-create is drift.  Fills *check. */
void tau_ws_pass_ensure(ws_pass *p, const tau_kube_resource *res, const cJSON *desired,
                        bool was_ready, tau_ws_obj_check *check);
/** Delete an owned object.  @return 0, -TAU_EPERM (not ours, logged), or the API error. */
int tau_ws_pass_delete(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *name,
                       const char *why);

typedef struct ws_prune_ctx {
	ws_pass *p;
	const tau_kube_resource *res;
	const char *why;
	char failed[TAU_WS_MESSAGE_MAX]; /* the last object that could not go, and why */
} ws_prune_ctx;

/** Delete every owned object of `res` in `ns` but `keep` (may be NULL).  @return as prune. */
int tau_ws_pass_prune(ws_pass *p, const tau_kube_resource *res, const char *ns, const char *keep,
                      const char *why, ws_prune_ctx *ctx);
/** List the objects of `res` in `ns` labelled as this workspace's. */
int tau_ws_pass_list_owned(cJSON **out, ws_pass *p, const tau_kube_resource *res, const char *ns);

/* ------------------------------------------------------------------------------------------ */
/* Cleanup (cleanup.c)                                                                         */

/** Whether the workspace carries our finalizer. */
bool tau_ws_has_finalizer(const cJSON *ws);
/** Free an old-namespace view; NULL is a no-op. */
void tau_ws_old_view_free(ws_old_view *v);
/** Delete LocalQueues we own in the namespace under another name than `lq_name`, once drained. */
void tau_ws_prune_stale_queues(ws_pass *p, const char *lq_name);

/** The runtime's reconcile function: every phase in order. */
int tau_ws_reconcile(void *arg, tau_controller *ctl, const char *key, tau_controller_result *res);

/** An Event about the pass's workspace (controller/events.h; best effort). */
void tau_ws_pass_event(ws_pass *p, const char *type, const char *reason, const char *message);

/** The ownership the controller writes for workspace `name` (uid may be NULL). */
tau_apply_owner tau_ws_owner(const char *name, const char *uid);

#endif /* TAU_AGGREGATOR_WORKSPACE_INTERNAL_H */
