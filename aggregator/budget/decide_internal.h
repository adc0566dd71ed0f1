/*
 * budget/decide_internal.h - what the parts of one budget decision share (decide.c and the
 * decide_*.c files it calls): the decision being built, the pass's context, a team's state,
 * and the functions each part offers the others.  Private to aggregator/budget/.
 */
#ifndef TAU_AGGREGATOR_BUDGET_DECIDE_INTERNAL_H
#define TAU_AGGREGATOR_BUDGET_DECIDE_INTERNAL_H

#include "budget/decide.h"
#include "budget/explicit.h"
#include "helpers.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Most conflicts or workspaces named in one message before "and N more". */
#define NAMED_MAX 5
#define MSG_MAX   2048

/* The decision being built; rc is the first error (every later add is a no-op). */
typedef struct builder {
	tau_budget_decision *d;
	size_t cap_writes, cap_statuses, cap_events;
	int rc;
} builder;

/* A team's QuotaReady (BudgetReady on the TauCluster) and what it lets the pass write. */
typedef struct team_state {
	const char *reason; /* QuotaReady reason */
	const char *status; /* "True", "False", "Unknown" */
	const char *phase;  /* Pending, Ready, Degraded */
	bool zeroed;        /* write every root quota as 0 */
	bool write_cohort;  /* the Cohort (and flavors) may be written */
	bool write_queues;  /* workspace ClusterQueues may be written */
	char message[MSG_MAX];
} team_state;

/* Who adopts an orphaned object (docs/budget.md, "Ownership"); NULL: nothing is adopted. */
typedef struct adopter {
	const tau_budget_observed *in;
	const char *cluster_uid;
	const cJSON *by; /* the new owner, which the Adopted Event is about */
} adopter;

/* One pass: what it observed, the decision it builds, and what its parts tell each other. */
typedef struct ctx {
	const tau_budget_observed *in;
	builder *b;
	bool reconcile;      /* managementMode Reconcile */
	bool writes_allowed; /* reconcile and the pool was established in this process */
	const char *capacity;
	const char *cluster_uid;
	const char *effective;      /* the team whose budget is kept now */
	const char *blocked_team;   /* the previous team that cannot leave yet */
	bool retiring;              /* a previous team's budget is being removed */
	char retire_drift[MSG_MAX]; /* Observe: the previous teams' Cohorts that are not removed */
	char retire_wait[MSG_MAX];  /* previous teams' Cohorts waiting for a held queue to drain */
	char blocked_ws[MSG_MAX];   /* its workspaces */
	const char **
	        explicit_wanted; /* ClusterQueues explicit teams keep (names borrowed from input) */
	size_t n_explicit_wanted;
	char *explicit_summary; /* explicit teams, for the log */
	bool *ws_linked; /* per observed workspace: linked to an explicit team decided this pass */
	const cJSON *selector;          /* TauCluster spec.nodes.selector, for our flavors */
	char selector_problem[MSG_MAX]; /* why our flavors cannot carry it; "" when they can */
	char **ws_held;       /* per observed workspace: why its ClusterQueue is held, or NULL */
	bool cleanup_pending; /* the effective team is being deleted and still holds something */
} ctx;

/* ------------------------------------------------------------------------------------------ */
/* The decision under construction and object writes (decide_writes.c)                         */

/* Append a write (`body` and `why` are taken); out of memory sets b->rc. */
void tau_budget_add_write(builder *b, tau_budget_kind kind, const char *name, bool remove,
                          bool create, cJSON *body, const char *uid, char *why);

/* Append a new .status of `object` (taken). */
void tau_budget_add_status(builder *b, const cJSON *object, cJSON *status);

/* Append an Event about `object` (the message is copied). */
void tau_budget_add_event(builder *b, const cJSON *object, const char *type, const char *reason,
                          const char *message);

/* Append {kind, name} to the TauCluster's managedResources list. */
int tau_budget_managed_add(cJSON *arr, const char *kind, const char *name);

/*
 * Is `obs` one of our own objects whose recorded owner no longer exists, so that its current
 * owner adopts it?  Our managed-by label, the kind's own label mapping back to the object's
 * name (a ResourceFlavor's gpu-class, a Cohort's team, a ClusterQueue's workspace with its
 * team) and an owner-UID annotation naming no live owner: the TauCluster (one, named cluster,
 * so any other UID is an earlier one: `helm uninstall && helm install`), a TauTeam or a
 * TauWorkspace re-created under the same name.  An object naming a live owner, without an
 * owner-UID annotation (legacy) or without our labels is never adopted.
 */
bool tau_budget_orphaned(const tau_budget_observed *in, const char *cluster_uid,
                         tau_budget_kind kind, const cJSON *obs);

/*
 * Create `desired` when nothing is observed, update it when ours and different (or ours to
 * adopt: see orphaned), and report (in *problem, returning false) an object of that name we do
 * not own.
 */
bool tau_budget_ensure(builder *b, tau_budget_kind kind, cJSON *desired, const cJSON *observed,
                       const char *owner_uid, bool allowed, char *problem, size_t problem_len,
                       const adopter *adopt);

/*
 * Write our automatic Cohort `co` of team `team` (owner `uid`) at 0, its shape kept and
 * deletionPolicy `policy` recorded.  An unreadable Cohort is left as it is (nothing safe to
 * write): 0 then, as for success; < 0 only when out of memory.
 */
int tau_budget_zero_cohort(builder *b, const tau_budget_observed *in, const cJSON *co,
                           const char *team, const char *uid, const char *policy);

/*
 * The TauCluster's deletionPolicy, recorded on the automatic Cohorts and the ResourceFlavors it
 * makes: once no TauCluster exists it still says what to do with them (Retain: the Cohort kept
 * at 0, flavors kept; DeleteManaged: its queues and then the Cohort go once drained, then the
 * flavors no Cohort or ClusterQueue names any more).
 */
int tau_budget_record_policy(cJSON *obj, const char *policy);

/* A PUT body of the team with our finalizer added or removed (E9); `why` is taken. */
void tau_budget_team_finalizer(builder *b, const cJSON *team, bool add, char *why);

/* ------------------------------------------------------------------------------------------ */
/* States, statuses and Events (decide_status.c)                                               */

/* Set a team's state; the message is formatted (and truncated) into s->message. */
void tau_budget_set_state(team_state *s, const char *reason, const char *status, const char *phase,
                          const char *f, ...) __attribute__((format(printf, 5, 6)));

/* The object's status.conditions (lent), or NULL. */
cJSON *tau_budget_conditions_of(const cJSON *obj);

/* A TauTeam's status from its state, added when it differs from the observed one. */
void tau_budget_team_status(builder *b, const tau_budget_observed *in, const cJSON *team,
                            const team_state *s, const char *cohort, const char *cohort_uid);

/* Events: what changed between the observed condition and the new one. */
void tau_budget_state_events(builder *b, const cJSON *obj, const char *cond_type,
                             const team_state *s);

/* ConflictDetected when a conflict appears or changes, ConflictCleared when it is gone. */
void tau_budget_conflict_events(builder *b, const cJSON *obj, bool now, const char *message);

/* The TauCluster's status and conditions, and the Events of its BudgetReady and conflicts. */
void tau_budget_cluster_status(ctx *c, const team_state *s, const cJSON *managed, bool conflict,
                               const char *conflict_msg);

/* Set the workspace's QuotaReady (status "" removes it), its other conditions kept. */
void tau_budget_ws_quota_ready(builder *b, const tau_budget_observed *in, const cJSON *ws,
                               const char *status, const char *reason, const char *msg);

/*
 * A workspace linked to no explicit team (its teamRef removed, or naming the capacity team or a
 * team that does not exist) has no QuotaReady: one left from a team it left is removed.
 */
void tau_budget_workspace_unlinked(builder *b, const cJSON *ws);

/* QuotaReady of a workspace whose ClusterQueue is held (tau_budget_orphan_queues). */
void tau_budget_workspace_held(builder *b, const tau_budget_observed *in, const cJSON *ws,
                               const char *why);

/* ------------------------------------------------------------------------------------------ */
/* The capacity team (decide_capacity.c)                                                       */

/*
 * Every cell of the desired Cohort whose live nominalQuota differs, as "<flavor>/<resource>
 * holds <live>, want <desired>" joined by "; " into buf (empty when none differs); false when
 * a quantity cannot be read.  With `to_zero` the desired Cohort is `live` at 0 (one that
 * would be deleted): every non-zero cell is listed.
 */
bool tau_budget_cohort_cells_drift(char *buf, size_t len, const cJSON *desired, const cJSON *live,
                                   bool to_zero);

/* The capacity team's state, flavors, Cohort and workspace queues; < 0 only on errors. */
int tau_budget_decide_capacity_team(ctx *c, cJSON *managed);

/* ------------------------------------------------------------------------------------------ */
/* Workspace ClusterQueues left behind (decide_queues.c)                                       */

/*
 * Does a ClusterQueue hold work: admitted or reserving workloads, or a reservation?  A value
 * that cannot be read counts as work (deleting the queue could not be undone).
 */
bool tau_budget_queue_has_work(const cJSON *cq);

/* The per-workspace note that its queue is held (ctx.ws_held), for its QuotaReady. */
void tau_budget_note_held(ctx *c, const cJSON *ws, const char *why);

/*
 * Owned workspace ClusterQueues that no workspace wants any more.  A queue is deleted only
 * once its workspace is gone (or has left the team) and it holds no work; until then it is
 * held (spec.stopPolicy Hold: nothing new is admitted, admitted work runs to completion) with
 * the annotation tau.azure.com/held saying why, so a misconfiguration never deletes a queue
 * with running work and undoing it releases the queue as it was (issue 24, finding 4).
 */
void tau_budget_orphan_queues(ctx *c, const char *const *wanted, size_t n_wanted);

/* ------------------------------------------------------------------------------------------ */
/* Explicit-quota teams (decide_explicit.c)                                                    */

/* Every team that is neither the kept budget nor the capacity team has an explicit quota. */
void tau_budget_decide_explicit_teams(ctx *c, cJSON *managed);

/* Workspaces no explicit team decided: a held queue's QuotaReady, else none. */
void tau_budget_workspaces_unlinked(ctx *c);

/* ------------------------------------------------------------------------------------------ */
/* No TauCluster (decide_gone.c)                                                               */

/*
 * The TauCluster is gone or being deleted: what happens to the automatic budgets it made is the
 * deletionPolicy recorded on each Cohort (docs/api.md, docs/budget.md "States").  Retain (the
 * default): the Cohort is retained but bounded, written at 0 (shape and recorded owner kept)
 * and a TauCluster created again (a reinstall) adopts our flavors and restores it.
 * DeleteManaged: also at 0, its queues go as they drain (held meanwhile), then the Cohort, then
 * our ResourceFlavors that recorded DeleteManaged once nothing names them.  Its team says
 * which, and a TauCluster still being deleted (another finalizer holds it) what is held and
 * why.  Explicit teams' objects are never touched here.
 */
int tau_budget_decide_cluster_gone(ctx *c);

/* ------------------------------------------------------------------------------------------ */
/* The pass (decide.c)                                                                         */

/* The team a TauWorkspace names (spec.teamRef.name), or NULL. */
const char *tau_budget_team_of(const cJSON *ws);

/* Names of the workspaces linked to `team`, "a, b and N more"; count in *n. */
void tau_budget_team_workspaces(char *buf, size_t len, size_t *n, const tau_budget_observed *in,
                                const char *team);

/* Is any ClusterQueue applied to Cohort `cohort`?  Its name in *first. */
bool tau_budget_cohort_applied(const tau_budget_observed *in, const char *cohort,
                               const char **first);

#endif /* TAU_AGGREGATOR_BUDGET_DECIDE_INTERNAL_H */
