/*
 * explicit.c - the decision for one explicit-quota team (E1-E10, docs/budget.md); its
 * arithmetic is cells.c's and its objects explicit_objects.c's.
 *
 * The one idea: a team's quota is the total it may hold in Kueue; the
 * workspace guarantees become ClusterQueue nominal quota and the team Cohort
 * holds the rest.  Every queue whose change is refused keeps what it has, and
 * the Cohort is computed from what the queues will really hold, so the
 * team's total never exceeds its quota because of a refusal.  Growth is
 * checked against the discovered capacity (other teams counted as applied);
 * reductions never go below active reservations.
 */
#include "explicit.h"

#include "explicit_objects.h"
#include "helpers.h"

#include "controller/apply.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"
#include "tau/names.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX          2048
#define REASON_OWNERSHIP "OwnershipConflict"
#define REASON_WAITING   "WaitingForInventory"

/* What is known of one linked workspace. */
typedef struct wsinfo {
	const cJSON *ws;
	const char *name;
	const char *ns; /* NULL: gets no queue */
	char cq[TAU_BUDGET_NAME_BUF];
	const cJSON *observed;
	bool owned;
	tau_budget_ownership ownership;
	char owner_why[512];
	bool migrating_in; /* its owned queue names another Cohort */
	tau_budget_cells nominal, borrowing, lending, applied, reserved;
} wsinfo;

typedef struct team_ctx {
	const tau_budget_explicit_input *in;
	const char *name, *uid;
	char cohort[TAU_BUDGET_NAME_BUF];
	tau_budget_cells quota, shape;
	tau_budget_cells outgoing;     /* applied nominal of managed queues in our Cohort whose
	                                  workspace is not ours now */
	tau_budget_cells out_reserved; /* their reservations */
	wsinfo *ws;
	size_t n_ws;
	tau_budget_explicit_team *t;
	char team_msg[MSG_MAX]; /* team-level refusal */
	const char *team_reason;
} team_ctx;

static void ctx_free(team_ctx *c)
{
	tau_budget_cells_clear_many(&c->quota, &c->shape, &c->outgoing, &c->out_reserved);
	for (size_t i = 0; i < c->n_ws; i++)
		tau_budget_cells_clear_many(&c->ws[i].nominal, &c->ws[i].borrowing,
		                            &c->ws[i].lending, &c->ws[i].applied,
		                            &c->ws[i].reserved);
	free(c->ws);
}

void tau_budget_explicit_team_free(tau_budget_explicit_team *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n_queues; i++) {
		cJSON_Delete(t->queues[i].desired);
		free(t->queues[i].refusal);
	}
	cJSON_Delete(t->desired_cohort);
	tau_free_many(t->queues, t->message, t->summary, t);
}

const char *tau_budget_workspace_namespace(const cJSON *ws, bool multiple)
{
	const char *ns = tau_json_str(ws, "status.target.resolvedNamespace");
	const cJSON *conds = tau_json_find(ws, "status.conditions"), *c;

	if (ns == NULL || ns[0] == '\0')
		return NULL;
	/* Status can be written by hand: a value no namespace can have selects nothing. */
	if (tau_names_check_dns1123_label(ns) < 0) {
		tau_error_clear();
		return NULL;
	}
	if (!multiple && cJSON_IsArray(conds))
		cJSON_ArrayForEach(c, conds)
		{
			if (tau_str_eq_both_set(tau_json_str(c, "reason"),
			                        "BlockedByActiveWorkspace"))
				return NULL;
		}
	return ns;
}

/* E8 in the words. */
static void ownership_message(char *buf, size_t len, const char *kind, const char *name,
                              tau_budget_ownership o, const char *why)
{
	switch (o) {
	case TAU_BUDGET_OTHER_OWNER:
		snprintf(buf, len,
		         "%s \"%s\" has a different owner UID (%s); it is not adopted: remove it "
		         "through its owner",
		         kind, name, why);
		break;
	case TAU_BUDGET_LEGACY_OWNER:
		snprintf(buf, len,
		         "%s \"%s\" has legacy ownership metadata (%s); it is not adopted: remove "
		         "it "
		         "or add the owner annotation through its owner",
		         kind, name, why);
		break;
	default:
		snprintf(buf, len,
		         "%s \"%s\" is not managed by TauGrid (%s); it is not adopted: remove it "
		         "through its owner",
		         kind, name, why);
		break;
	}
}

static int set_team(tau_budget_explicit_team *t, const char *reason, const char *status,
                    const char *phase, const char *message)
{
	free(t->message);
	t->reason = reason;
	t->status = status;
	t->phase = phase;
	t->message = strdup(message);
	return t->message != NULL ? 0 : tau_budget_nomem();
}

/* Queues the team keeps: every linked workspace that gets a queue. */
static int list_queues(team_ctx *c)
{
	tau_budget_explicit_team *t = c->t;

	t->queues = calloc(c->n_ws + 1, sizeof(*t->queues));
	if (t->queues == NULL)
		return tau_budget_nomem();
	for (size_t i = 0; i < c->n_ws; i++) {
		if (c->ws[i].ns == NULL)
			continue;
		t->queues[t->n_queues].workspace = c->ws[i].ws;
		memcpy(t->queues[t->n_queues].name, c->ws[i].cq, sizeof(c->ws[i].cq));
		t->queues[t->n_queues].observed = c->ws[i].observed;
		t->n_queues++;
	}
	return 0;
}

static tau_budget_explicit_queue *queue_of(team_ctx *c, const wsinfo *w)
{
	for (size_t i = 0; i < c->t->n_queues; i++)
		if (c->t->queues[i].workspace == w->ws)
			return &c->t->queues[i];
	return NULL;
}

static int refuse(team_ctx *c, const wsinfo *w, const char *reason, const char *msg)
{
	tau_budget_explicit_queue *q = queue_of(c, w);

	if (q == NULL)
		return 0;
	free(q->refusal);
	q->reason = reason;
	q->refusal = strdup(msg);
	return q->refusal != NULL ? 0 : tau_budget_nomem();
}

/* Gather the team's quota, its workspaces and the queues leaving it. */
/*
 * Is ClusterQueue `cq` workspace `ws`'s from before the workspace was created again: our labels
 * naming that workspace (and a team), a recorded workspace UID that no TauWorkspace has?  The
 * same rule as the capacity team's queues (docs/budget.md, "Ownership"): the caller's write
 * adopts it, with an Adopted Event.
 */
static bool recreated_queue(const team_ctx *c, const cJSON *cq, const char *ws)
{
	const char *uid = tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_WORKSPACE_UID);

	if (!tau_budget_is_managed(cq) ||
	    !tau_str_eq_both_set(tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE), ws) ||
	    tau_json_label(cq, TAU_BUDGET_LABEL_TEAM) == NULL || uid == NULL || uid[0] == '\0')
		return false;
	for (size_t i = 0; i < c->in->api.n_workspaces; i++)
		if (tau_str_eq_both_set(tau_json_str(c->in->api.workspaces[i], "metadata.uid"),
		                        uid))
			return false;
	return true;
}

static int gather(team_ctx *c, char *err, size_t err_len)
{
	const tau_budget_explicit_input *in = c->in;
	char owner[TAU_BUDGET_NAME_BUF + 32];
	int rc;

	snprintf(owner, sizeof(owner), "TauTeam \"%s\"", c->name);
	if ((rc = tau_budget_quota_parse(&c->quota, NULL, NULL,
	                                 tau_json_find(in->team, "spec.quota"), owner, err,
	                                 err_len)) < 0)
		return rc == -TAU_ENOMEM ? rc : 1;
	c->ws = calloc(in->api.n_workspaces + 1, sizeof(*c->ws));
	if (c->ws == NULL)
		return tau_budget_nomem();
	for (size_t i = 0; i < in->api.n_workspaces; i++) {
		const cJSON *ws = in->api.workspaces[i];
		wsinfo *w;

		if (!tau_str_eq_both_set(tau_json_str(ws, "spec.teamRef.name"), c->name) ||
		    tau_json_str(ws, "metadata.name") == NULL ||
		    tau_json_str(ws, "metadata.uid") == NULL ||
		    tau_json_str(ws, "metadata.uid")[0] == '\0')
			continue; /* no uid (not from an API server): it can own no queue */
		w = &c->ws[c->n_ws++];
		w->ws = ws;
		w->name = tau_json_str(ws, "metadata.name");
		w->ns = tau_budget_workspace_namespace(ws, in->multiple_workspaces);
		if ((rc = tau_budget_cluster_queue_name(w->cq, sizeof(w->cq), w->name)) < 0)
			return rc;
		w->observed = tau_budget_find_named(in->api.cluster_queues,
		                                    in->api.n_cluster_queues, w->cq);
		snprintf(owner, sizeof(owner), "TauWorkspace \"%s\"", w->name);
		if ((rc = tau_budget_quota_parse(&w->nominal, &w->borrowing, &w->lending,
		                                 tau_json_find(ws, "spec.quota"), owner, err,
		                                 err_len)) < 0)
			return rc == -TAU_ENOMEM ? rc : 1;
		if (w->observed != NULL) {
			w->ownership =
			        tau_budget_ownership_of(w->observed, TAU_BUDGET_CLUSTER_QUEUE,
			                                tau_json_str(ws, "metadata.uid"),
			                                w->owner_why, sizeof(w->owner_why));
			if (w->ownership == TAU_BUDGET_OTHER_OWNER &&
			    recreated_queue(c, w->observed, w->name))
				w->ownership = TAU_BUDGET_OWNED; /* adopted by the write */
			w->owned = w->ownership == TAU_BUDGET_OWNED;
		}
		if (w->owned) {
			const char *cn = tau_json_str(w->observed, "spec.cohortName");

			w->migrating_in =
			        cn != NULL && cn[0] != '\0' && !tau_str_eq_both_set(cn, c->cohort);
			if ((rc = tau_budget_groups_read(&w->applied, w->observed,
			                                 "nominalQuota")) < 0 ||
			    (rc = tau_budget_reservations_read(&w->reserved, w->observed)) < 0) {
				snprintf(err, err_len, "ClusterQueue \"%s\": %s", w->cq,
				         tau_error_last()->msg);
				return rc == -TAU_ENOMEM ? rc : 1;
			}
		}
	}
	/* E6: managed queues still in our Cohort whose workspace is not ours now stay charged. */
	for (size_t i = 0; i < in->api.n_cluster_queues; i++) {
		const cJSON *cq = in->api.cluster_queues[i];
		bool ours = false;

		if (!tau_budget_is_managed(cq) ||
		    !tau_str_eq_both_set(tau_json_str(cq, "spec.cohortName"), c->cohort))
			continue;
		for (size_t k = 0; k < c->n_ws && !ours; k++)
			ours = c->ws[k].observed == cq && c->ws[k].owned && c->ws[k].ns != NULL;
		if (ours)
			continue;
		if ((rc = tau_budget_groups_read(&c->outgoing, cq, "nominalQuota")) < 0 ||
		    (rc = tau_budget_reservations_read(&c->out_reserved, cq)) < 0) {
			snprintf(err, err_len, "ClusterQueue \"%s\": %s",
			         tau_json_str(cq, "metadata.name"), tau_error_last()->msg);
			return rc == -TAU_ENOMEM ? rc : 1;
		}
	}
	return 0;
}

/* E3, E10 and Kueue's limits: the quota as written makes sense.  1 with err set when not. */
static int validate(team_ctx *c, const char **reason, char *err, size_t err_len)
{
	const tau_budget_explicit_input *in = c->in;
	tau_budget_cells guarantees = {0}, rem = {0};
	size_t nf = 0, nr = 0;
	int rc = 0;

	*reason = TAU_BUDGET_REASON_QUOTA_INVALID;
	for (size_t i = 0; i < c->n_ws && rc == 0; i++) {
		const wsinfo *w = &c->ws[i];

		rc = tau_budget_cells_merge(&guarantees, &w->nominal, 1);
		for (size_t k = 0; k < w->lending.n && rc == 0; k++) {
			tau_quantity n =
			        tau_budget_cells_get(&w->nominal, w->lending.items[k].flavor,
			                             w->lending.items[k].resource);
			char ls[TAU_QUANTITY_STR_MAX], ns[TAU_QUANTITY_STR_MAX];

			if (tau_quantity_cmp(&w->lending.items[k].q, &n) <= 0)
				continue;
			tau_budget_quantity_text(ls, sizeof(ls), &w->lending.items[k].q);
			tau_budget_quantity_text(ns, sizeof(ns), &n);
			snprintf(err, err_len,
			         "TauWorkspace \"%s\": lendingLimit %s exceeds its nominalQuota %s "
			         "for flavor %s resource %s",
			         w->name, ls, ns, w->lending.items[k].flavor,
			         w->lending.items[k].resource);
			rc = 1;
		}
	}
	if (rc == 0 && (rc = tau_budget_cells_merge(&c->shape, &c->quota, 1)) == 0)
		rc = tau_budget_cells_cover(&c->shape, &guarantees);
	if (rc == 0) {
		rc = tau_budget_remainder(&rem, &c->quota, &guarantees, err, err_len);
		if (rc == -TAU_ERANGE) {
			char msg[MSG_MAX];

			snprintf(msg, sizeof(msg), "%s", err);
			snprintf(err, err_len, "team \"%.200s\": %.1500s", c->name, msg);
			rc = 1;
		}
	}
	for (size_t i = 0; rc == 0 && i < c->shape.n; i++) {
		const char *f = c->shape.items[i].flavor;

		if (i == 0 || strcmp(f, c->shape.items[i - 1].flavor) != 0) {
			nf++;
			if (tau_budget_find_named(in->api.flavors, in->api.n_flavors, f) == NULL) {
				snprintf(err, err_len,
				         "ResourceFlavor \"%s\" named in the quota of team \"%s\" "
				         "does "
				         "not exist",
				         f, c->name);
				*reason = TAU_BUDGET_REASON_FLAVOR_NOT_READY;
				rc = 1;
			}
		}
	}
	for (size_t i = 0; rc == 0 && i < c->shape.n; i++) {
		bool seen = false;

		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(c->shape.items[k].resource, c->shape.items[i].resource) == 0;
		nr += seen ? 0 : 1;
	}
	if (rc == 0 && (nf > TAU_BUDGET_MAX_FLAVORS || nr > TAU_BUDGET_MAX_RESOURCES)) {
		snprintf(err, err_len,
		         "team \"%s\": %zu flavors and %zu resources exceed Kueue's limits of %d "
		         "and %d in one resource group",
		         c->name, nf, nr, TAU_BUDGET_MAX_FLAVORS, TAU_BUDGET_MAX_RESOURCES);
		rc = 1;
	}
	tau_budget_cells_clear_many(&guarantees, &rem);
	return rc;
}

/* The discovered capacity of a cell; false when the flavor is not a pool flavor. */
static bool capacity_of(const team_ctx *c, const char *flavor, const char *resource,
                        tau_quantity *out)
{
	const tau_budget_pool *pool = c->in->capacity;
	const cJSON *rf;
	char fname[TAU_BUDGET_NAME_BUF];
	bool known = false;

	*out = tau_quantity_zero();
	for (size_t i = 0; pool != NULL && i < pool->n_classes; i++) {
		const tau_budget_class *k = &pool->classes[i];

		if (tau_budget_flavor_name(fname, sizeof(fname), k->name) < 0 ||
		    strcmp(fname, flavor) != 0)
			continue;
		known = true;
		for (size_t r = 0; r < k->n_resources; r++)
			if (strcmp(k->resources[r].name, resource) == 0)
				*out = k->resources[r].total;
	}
	rf = tau_budget_find_named(c->in->api.flavors, c->in->api.n_flavors, flavor);
	if (!known && rf != NULL && c->in->cluster_uid != NULL &&
	    tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, c->in->cluster_uid, NULL, 0) ==
	            TAU_BUDGET_OWNED)
		known = true; /* a pool flavor whose nodes are gone: capacity 0 */
	return known;
}

/* Everything managed that is applied, except our Cohort and the queues in it. */
static int others_applied(team_ctx *c, tau_budget_cells *out)
{
	const tau_budget_explicit_input *in = c->in;
	int rc;

	for (size_t i = 0; i < in->api.n_cohorts; i++)
		if (tau_budget_is_managed(in->api.cohorts[i]) &&
		    !tau_str_eq_both_set(tau_json_str(in->api.cohorts[i], "metadata.name"),
		                         c->cohort) &&
		    (rc = tau_budget_groups_read(out, in->api.cohorts[i], "nominalQuota")) < 0)
			return rc;
	for (size_t i = 0; i < in->api.n_cluster_queues; i++) {
		const cJSON *cq = in->api.cluster_queues[i];
		bool moving = false;

		for (size_t k = 0; k < c->n_ws && !moving; k++)
			moving = c->ws[k].observed == cq && c->ws[k].migrating_in;
		if (tau_budget_is_managed(cq) && !moving &&
		    !tau_str_eq_both_set(tau_json_str(cq, "spec.cohortName"), c->cohort) &&
		    (rc = tau_budget_groups_read(out, cq, "nominalQuota")) < 0)
			return rc;
	}
	return 0;
}

/*
 * E6: a queue moving in from another Cohort must fit with its reservations
 * (those of the queues already charged here plus its own) within the team's
 * quota; a Degraded team takes no queue with a guarantee.  msg is left empty
 * when the move may go ahead.
 */
static int migration_check(team_ctx *c, const wsinfo *w, bool ready,
                           const tau_budget_cells *reserved, char *msg, size_t len)
{
	const tau_budget_cells none = {0};
	const char *from = tau_json_str(w->observed, "spec.cohortName");
	tau_budget_cells need = {0};
	size_t at = 0;
	int rc;

	msg[0] = '\0';
	rc = tau_budget_cells_merge(&need, reserved, 1);
	if (rc == 0)
		rc = tau_budget_cells_merge(&need, &w->reserved, 1);
	for (size_t k = 0; rc == 0 && k < w->reserved.n && msg[0] == '\0'; k++) {
		const char *f = w->reserved.items[k].flavor, *r = w->reserved.items[k].resource;
		tau_quantity has = tau_budget_cells_get(&c->quota, f, r),
		             n = tau_budget_cells_get(&need, f, r);
		char ns[TAU_QUANTITY_STR_MAX], hs[TAU_QUANTITY_STR_MAX];

		if (tau_quantity_cmp(&has, &n) >= 0)
			continue;
		tau_budget_quantity_text(ns, sizeof(ns), &n);
		tau_budget_quantity_text(hs, sizeof(hs), &has);
		snprintf(
		        msg, len,
		        "refusing workspace migration of \"%s\" from Cohort \"%s\" to team \"%s\": "
		        "its quota %s of flavor %s resource %s would be below active reservations "
		        "%s; the queue keeps its Cohort",
		        w->name, from, c->name, hs, f, r, ns);
	}
	tau_budget_cells_clear(&need);
	if (rc == 0 && msg[0] == '\0' && !ready &&
	    tau_budget_cells_first_above(&w->nominal, &none, &at))
		snprintf(
		        msg, len,
		        "refusing workspace migration of \"%s\" from Cohort \"%s\" to team \"%s\": "
		        "team \"%s\" is not Ready; the queue keeps its Cohort",
		        w->name, from, c->name, c->name);
	return rc;
}

/*
 * One pass over the queues in a mode: `ready` (the team may grow to its quota)
 * or not (E7: only shrinks converge).  Fills the queues' desired objects and
 * refusals and *charged with what the team's queues will hold.
 */
static int plan_queues(team_ctx *c, bool ready, tau_budget_cells *charged,
                       tau_budget_cells *reserved)
{
	const tau_budget_cells none = {0};
	char msg[MSG_MAX];
	int rc;

	if ((rc = tau_budget_cells_merge(charged, &c->outgoing, 1)) < 0 ||
	    (rc = tau_budget_cells_merge(reserved, &c->out_reserved, 1)) < 0)
		return rc;
	for (size_t i = 0; i < c->n_ws; i++) {
		wsinfo *w = &c->ws[i];
		tau_budget_explicit_queue *q = queue_of(c, w);
		tau_budget_cells max = {0};
		size_t at = 0;

		msg[0] = '\0';
		if (q == NULL) { /* no namespace yet: its guarantee is still set aside */
			if ((rc = tau_budget_cells_merge(charged, &w->nominal, 1)) < 0)
				return rc;
			continue;
		}
		cJSON_Delete(q->desired);
		q->desired = NULL;
		free(q->refusal);
		q->refusal = NULL;
		q->reason = NULL;
		if (w->observed != NULL && !w->owned) {
			ownership_message(msg, sizeof(msg), "ClusterQueue", w->cq, w->ownership,
			                  w->owner_why);
			if ((rc = refuse(c, w, REASON_OWNERSHIP, msg)) < 0 ||
			    (rc = tau_budget_cells_merge(charged, &w->nominal, 1)) < 0)
				return rc;
			continue;
		}
		if (w->migrating_in) {
			if ((rc = migration_check(c, w, ready, reserved, msg, sizeof(msg))) < 0)
				return rc;
			if (msg[0] != '\0') {
				if ((rc = refuse(c, w, TAU_BUDGET_REASON_MIGRATION_BLOCKED, msg)) <
				    0)
					return rc;
				continue; /* stays in its old Cohort, charged there */
			}
		} else if (!ready && tau_budget_cells_first_above(&w->nominal, &w->applied, &at)) {
			/* E7: a Degraded team takes nothing from its Cohort. */
			snprintf(msg, sizeof(msg),
			         "refusing to raise the nominal quota of ClusterQueue \"%s\" "
			         "(workspace \"%s\"): team \"%s\" is not Ready",
			         w->cq, w->name, c->name);
			if ((rc = refuse(c, w, TAU_BUDGET_REASON_TEAM_NOT_READY, msg)) < 0 ||
			    (rc = tau_budget_cells_merge(charged, &w->applied, 1)) < 0 ||
			    (rc = tau_budget_cells_merge(reserved, &w->reserved, 1)) < 0)
				return rc;
			continue;
		}
		/* E5: the new maximum must hold the queue's own reservation. */
		rc = tau_budget_new_maximum(&max, &w->nominal, &w->borrowing);
		if (rc == 0 && tau_budget_cells_first_above(&w->reserved, &max, &at)) {
			tau_quantity m = tau_budget_cells_get(&max, w->reserved.items[at].flavor,
			                                      w->reserved.items[at].resource);
			char ns[TAU_QUANTITY_STR_MAX], ms[TAU_QUANTITY_STR_MAX];

			tau_budget_quantity_text(ns, sizeof(ns), &w->reserved.items[at].q);
			tau_budget_quantity_text(ms, sizeof(ms), &m);
			snprintf(msg, sizeof(msg),
			         "refusing to reduce ClusterQueue \"%s\" below active reservation "
			         "%s "
			         "(new maximum %s) for flavor %s resource %s",
			         w->cq, ns, ms, w->reserved.items[at].flavor,
			         w->reserved.items[at].resource);
			tau_budget_cells_clear(&max);
			/* It keeps what it has: charged where it is applied now. */
			if ((rc = refuse(c, w, TAU_BUDGET_REASON_REDUCTION_BLOCKED, msg)) < 0 ||
			    (rc = tau_budget_cells_merge(
			             charged, w->migrating_in ? &none : &w->applied, 1)) < 0 ||
			    (rc = tau_budget_cells_merge(
			             reserved, w->migrating_in ? &none : &w->reserved, 1)) < 0)
				return rc;
			continue;
		}
		tau_budget_cells_clear(&max);
		if (rc < 0)
			return rc;
		if ((rc = tau_budget_explicit_cluster_queue(&q->desired, c->name, w->ws, w->ns,
		                                            &c->shape, &w->nominal, &w->borrowing,
		                                            &w->lending)) < 0 ||
		    (rc = tau_budget_cells_merge(charged, &w->nominal, 1)) < 0 ||
		    (rc = tau_budget_cells_merge(reserved, &w->reserved, 1)) < 0)
			return rc;
	}
	return 0;
}

/* The Cohort's quota: target − charged, at least 0, on the shape. */
static int cohort_quota(tau_budget_cells *out, const tau_budget_cells *target,
                        const tau_budget_cells *charged, const tau_budget_cells *shape)
{
	int rc;

	if ((rc = tau_budget_cells_cover(out, shape)) < 0 ||
	    (rc = tau_budget_cells_merge(out, target, 1)) < 0 ||
	    (rc = tau_budget_cells_merge(out, charged, -1)) < 0)
		return rc;
	for (size_t i = 0; i < out->n; i++)
		if (tau_quantity_sign(&out->items[i].q) < 0)
			out->items[i].q = tau_quantity_zero();
	return 0;
}

static void team_refuse(team_ctx *c, const char *reason, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Record why the team may not change (its reason and message). */
static void team_refuse(team_ctx *c, const char *reason, const char *fmt, ...)
{
	va_list ap;

	c->team_reason = reason;
	va_start(ap, fmt);
	vsnprintf(c->team_msg, sizeof(c->team_msg), fmt, ap);
	va_end(ap);
}

/* E4 and E5 at the team level; sets c->team_reason / team_msg when the team may not change. */
static int team_checks(team_ctx *c, const tau_budget_cells *next, const tau_budget_cells *applied,
                       const tau_budget_cells *reserved)
{
	tau_budget_cells others = {0};
	int rc = others_applied(c, &others);

	if (rc == -TAU_EINVAL || rc == -TAU_ERANGE) {
		/* Another team's Cohort or queue holds a quantity we cannot read (kubectl edit,
		 * no Kueue webhook): what is free is unknown, so this team may not change, and the
		 * other teams are decided as usual. */
		team_refuse(
		        c, TAU_BUDGET_REASON_QUOTA_INVALID,
		        "the quota applied by other teams cannot be read (%s); team \"%s\" keeps "
		        "its "
		        "applied allocation",
		        tau_error_last()->msg, c->name);
		rc = 0;
	}
	for (size_t i = 0; rc == 0 && i < next->n && c->team_reason == NULL; i++) {
		const char *f = next->items[i].flavor, *r = next->items[i].resource;
		tau_quantity was = tau_budget_cells_get(applied, f, r), cap, total,
		             o = tau_budget_cells_get(&others, f, r),
		             res = tau_budget_cells_get(reserved, f, r);
		char a[TAU_QUANTITY_STR_MAX], b[TAU_QUANTITY_STR_MAX];

		if (tau_quantity_cmp(&next->items[i].q, &was) > 0 && capacity_of(c, f, r, &cap) &&
		    c->in->pool_claimed_by != NULL) {
			/* The automatic budget owns every pool flavor in full, even while it is
			 * zeroed: a share taken now would overlap it once it is restored. */
			tau_budget_quantity_text(b, sizeof(b), &cap);
			team_refuse(
			        c, TAU_BUDGET_REASON_CAPACITY,
			        "flavor %s is in the automatic pool of capacity team \"%s\" "
			        "(TauCluster spec.queues.capacityTeamRef), which holds all of its "
			        "discovered capacity %s for resource %s even while its budget is "
			        "zeroed; team \"%s\" keeps its applied allocation: quote a flavor "
			        "outside the pool",
			        f, c->in->pool_claimed_by, b, r, c->name);
		} else if (tau_quantity_cmp(&next->items[i].q, &was) > 0 &&
		           capacity_of(c, f, r, &cap)) {
			/* Growing: everything applied elsewhere plus our new allocation must fit.
			 */
			if ((rc = tau_quantity_add(&total, &next->items[i].q, &o)) == -TAU_ERANGE) {
				/* Past what a quantity holds: certainly past the capacity. */
				tau_budget_quantity_text(b, sizeof(b), &cap);
				team_refuse(
				        c, TAU_BUDGET_REASON_CAPACITY,
				        "team allocations are too large to add up and exceed "
				        "discovered capacity %s for flavor %s resource %s; team "
				        "\"%s\" keeps its applied allocation",
				        b, f, r, c->name);
				rc = 0;
				break;
			}
			if (rc < 0)
				break;
			if (tau_quantity_cmp(&total, &cap) > 0) {
				tau_budget_quantity_text(a, sizeof(a), &total);
				tau_budget_quantity_text(b, sizeof(b), &cap);
				team_refuse(
				        c, TAU_BUDGET_REASON_CAPACITY,
				        "team allocations %s exceed discovered capacity %s for "
				        "flavor "
				        "%s resource %s; team \"%s\" keeps its applied allocation",
				        a, b, f, r, c->name);
			}
		} else if (tau_quantity_cmp(&next->items[i].q, &was) < 0 &&
		           tau_quantity_cmp(&next->items[i].q, &res) < 0) {
			tau_budget_quantity_text(a, sizeof(a), &res);
			tau_budget_quantity_text(b, sizeof(b), &next->items[i].q);
			team_refuse(
			        c, TAU_BUDGET_REASON_REDUCTION_BLOCKED,
			        "refusing to reduce team \"%s\" below active reservations %s (new "
			        "allocation %s) for flavor %s resource %s",
			        c->name, a, b, f, r);
		}
	}
	tau_budget_cells_clear(&others);
	return rc;
}

/* Plan the queues and the Cohort in one mode; *next receives the team's new allocation. */
static int plan_mode(team_ctx *c, bool ready, const tau_budget_cells *applied,
                     tau_budget_cells *next, tau_budget_cells *reserved, tau_budget_cells *cohort_q)
{
	tau_budget_cells charged = {0}, shape = {0};
	int rc;

	tau_budget_cells_clear_many(next, reserved, cohort_q);
	rc = plan_queues(c, ready, &charged, reserved);
	if (rc == 0)
		rc = tau_budget_cells_merge(&shape, &c->shape, 1);
	if (rc == 0 && !ready) /* keep what the Cohort holds now: nothing shrinks by shape */
		for (size_t i = 0; rc == 0 && i < applied->n; i++)
			rc = tau_budget_cells_add(&shape, applied->items[i].flavor,
			                          applied->items[i].resource, &(tau_quantity){0});
	if (rc == 0)
		rc = cohort_quota(cohort_q, ready ? &c->quota : applied, &charged, &shape);
	if (rc == 0)
		rc = tau_budget_cells_merge(next, cohort_q, 1);
	if (rc == 0)
		rc = tau_budget_cells_merge(next, &charged, 1);
	if (rc == 0) {
		/* The Cohort's shape is the plan's (E1): rebuild c->shape to include retained. */
		tau_budget_cells_clear(&c->shape);
		rc = tau_budget_cells_merge(&c->shape, &shape, 1);
		if (rc == 0) {
			for (size_t i = 0; i < c->shape.n; i++)
				c->shape.items[i].q = tau_quantity_zero();
		}
	}
	tau_budget_cells_clear_many(&charged, &shape);
	return rc;
}

static int finish(team_ctx *c, const tau_budget_cells *cohort_q)
{
	tau_budget_explicit_team *t = c->t;
	char msg[MSG_MAX] = "";
	const char *reason = c->team_reason;
	int rc;

	if ((rc = tau_budget_explicit_cohort(&t->desired_cohort, c->name, c->uid, &c->shape,
	                                     cohort_q)) < 0)
		return rc;
	if (c->team_reason != NULL)
		tau_budget_append(msg, sizeof(msg), "%s", c->team_msg);
	for (size_t i = 0; i < t->n_queues; i++) {
		if (t->queues[i].refusal == NULL)
			continue;
		tau_budget_append(msg, sizeof(msg), "%s", t->queues[i].refusal);
		if (reason == NULL)
			reason = t->queues[i].reason;
	}
	if (reason == NULL) {
		snprintf(msg, sizeof(msg),
		         "Cohort \"%s\" holds team \"%s\"'s quota less the guarantees of %zu "
		         "workspace queue%s",
		         c->cohort, c->name, t->n_queues, t->n_queues == 1 ? "" : "s");
		rc = set_team(t, TAU_BUDGET_REASON_QUOTA_APPLIED, "True", "Ready", msg);
	} else {
		rc = set_team(t, reason, "False", "Degraded", msg);
	}
	return rc;
}

/* E9: a team being deleted waits for every queue applied to its Cohort. */
static int deleting(team_ctx *c)
{
	const tau_budget_explicit_input *in = c->in;
	tau_budget_explicit_team *t = c->t;
	char msg[MSG_MAX] = "";
	size_t n = 0;

	for (size_t i = 0; i < in->api.n_cluster_queues; i++) {
		const cJSON *cq = in->api.cluster_queues[i];
		const char *ws = tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE);

		if (!tau_str_eq_both_set(tau_json_str(cq, "spec.cohortName"), c->cohort))
			continue;
		if (n++ == 0)
			snprintf(msg, sizeof(msg), "team \"%s\" is being deleted but ", c->name);
		else
			tau_budget_append(msg, sizeof(msg), "%s", "");
		snprintf(
		        msg + strlen(msg), sizeof(msg) - strlen(msg),
		        "ClusterQueue \"%s\" of workspace \"%s\" is still applied to Cohort \"%s\"",
		        tau_json_str(cq, "metadata.name"), ws != NULL ? ws : "?", c->cohort);
	}
	if (n > 0) {
		tau_budget_append(msg, sizeof(msg), "%s",
		                  "move the workspaces to another team or delete them first");
		return set_team(t, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Degraded", msg);
	}
	t->delete_cohort = t->owned_cohort != NULL;
	t->remove_finalizer = true;
	snprintf(msg, sizeof(msg),
	         "team \"%s\" is being deleted and no ClusterQueue is applied to Cohort \"%s\": "
	         "cleaning up",
	         c->name, c->cohort);
	return set_team(t, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Pending", msg);
}

bool tau_budget_has_team_finalizer(const cJSON *team)
{
	return tau_apply_has_finalizer(team, TAU_BUDGET_TEAM_FINALIZER);
}

/*
 * Is Cohort `co` this team's from before it was created again: our labels naming this team, a
 * recorded team UID that no TauTeam has?
 */
static bool recreated_owner(const team_ctx *c, const cJSON *co)
{
	const char *uid = tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID);

	if (!tau_budget_is_managed(co) ||
	    !tau_str_eq_both_set(tau_json_label(co, TAU_BUDGET_LABEL_TEAM), c->name) ||
	    uid == NULL || uid[0] == '\0')
		return false;
	for (size_t i = 0; i < c->in->api.n_teams; i++)
		if (tau_str_eq_both_set(tau_json_str(c->in->api.teams[i], "metadata.uid"), uid))
			return false;
	return true;
}

/* Does the team set a quota (an empty list sets none)? */
static bool quota_given(const cJSON *team)
{
	const cJSON *q = tau_json_find(team, "spec.quota");

	return q != NULL && !cJSON_IsNull(q) && !(cJSON_IsArray(q) && cJSON_GetArraySize(q) == 0);
}

/* Is any ClusterQueue applied to the team's Cohort? */
static bool cohort_applied(const team_ctx *c)
{
	for (size_t i = 0; i < c->in->api.n_cluster_queues; i++)
		if (tau_str_eq_both_set(
		            tau_json_str(c->in->api.cluster_queues[i], "spec.cohortName"),
		            c->cohort))
			return true;
	return false;
}

static int decide(team_ctx *c)
{
	const tau_budget_explicit_input *in = c->in;
	tau_budget_explicit_team *t = c->t;
	const cJSON *co = tau_budget_find_named(in->api.cohorts, in->api.n_cohorts, c->cohort);
	tau_budget_cells applied = {0}, next = {0}, reserved = {0}, cohort_q = {0};
	const char *reason = NULL;
	char err[MSG_MAX] = "", why[512] = "";
	tau_budget_ownership own = TAU_BUDGET_FOREIGN;
	int rc;

	if (co != NULL) {
		own = tau_budget_ownership_of(co, TAU_BUDGET_COHORT, c->uid, why, sizeof(why));
		if (own == TAU_BUDGET_OTHER_OWNER && recreated_owner(c, co))
			own = TAU_BUDGET_OWNED; /* ours: the caller's write adopts it (Adopted) */
		if (own == TAU_BUDGET_OWNED)
			t->owned_cohort = co;
	}
	int invalid;

	if ((invalid = gather(c, err, sizeof(err))) < 0)
		return invalid;
	if ((rc = list_queues(c)) < 0)
		return rc;
	if (tau_json_find(in->team, "metadata.deletionTimestamp") != NULL) {
		t->remove_finalizer = false;
		return tau_budget_has_team_finalizer(in->team)
		               ? deleting(c)
		               : set_team(t, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Pending",
		                          "being deleted");
	}
	/* The finalizer guards what the team holds; a team that holds nothing gets none, and one
	 * it got earlier goes, so deleting an empty team never waits for the aggregator. */
	if (!quota_given(in->team) && c->n_ws == 0 && co == NULL && !cohort_applied(c)) {
		t->remove_finalizer = tau_budget_has_team_finalizer(in->team);
		return set_team(t, TAU_BUDGET_REASON_QUOTA_APPLIED, "True", "Ready",
		                "no spec.quota and no workspaces: the team holds nothing, so no "
		                "Cohort and no finalizer are written");
	}
	t->add_finalizer = !tau_budget_has_team_finalizer(in->team);
	if (invalid == 1)
		return set_team(t, TAU_BUDGET_REASON_QUOTA_INVALID, "False", "Degraded", err);
	if (t->owned_cohort != NULL &&
	    !tau_str_eq_both_set(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
	                         TAU_BUDGET_QUOTA_MODE_EXPLICIT) &&
	    tau_json_find(in->team, "spec.quota") == NULL) {
		snprintf(err, sizeof(err),
		         "Cohort \"%s\" is the automatic budget team \"%s\" held as the capacity "
		         "team: it is removed first (P7)",
		         c->cohort, c->name);
		return set_team(t, "LeaveBlocked", "False", "Pending", err);
	}
	if ((rc = validate(c, &reason, err, sizeof(err))) < 0)
		return rc;
	if (rc == 1)
		return set_team(t, reason, "False", "Degraded", err);
	if (co != NULL && own != TAU_BUDGET_OWNED) {
		ownership_message(err, sizeof(err), "Cohort", c->cohort, own, why);
		return set_team(t, REASON_OWNERSHIP, "False", "Degraded", err);
	}
	if (c->quota.n == 0 && c->n_ws == 0 && co == NULL)
		return set_team(t, TAU_BUDGET_REASON_QUOTA_APPLIED, "True", "Ready",
		                "no spec.quota and no workspaces: the team holds nothing, so no "
		                "Cohort is written");
	if (in->capacity == NULL)
		return set_team(t, REASON_WAITING, "False", "Pending",
		                "the inventory was not established yet: the discovered capacity "
		                "is unknown, so nothing is written");
	rc = tau_budget_applied(&applied, c->cohort, in->api.cohorts, in->api.n_cohorts,
	                        in->api.cluster_queues, in->api.n_cluster_queues);
	if (rc == -TAU_EINVAL) {
		snprintf(err, sizeof(err), "applied quota of team \"%s\" cannot be read: %s",
		         c->name, tau_error_last()->msg);
		rc = set_team(t, TAU_BUDGET_REASON_QUOTA_INVALID, "False", "Degraded", err);
		goto out;
	}
	if (rc == 0)
		rc = plan_mode(c, true, &applied, &next, &reserved, &cohort_q);
	if (rc == 0)
		rc = team_checks(c, &next, &applied, &reserved);
	if (rc == 0 && c->team_reason != NULL)
		rc = plan_mode(c, false, &applied, &next, &reserved, &cohort_q);
	if (rc == 0)
		rc = finish(c, &cohort_q);
out:
	tau_budget_cells_clear_many(&applied, &next, &reserved, &cohort_q);
	return rc;
}

int tau_budget_explicit_decide(tau_budget_explicit_team **out, const tau_budget_explicit_input *in)
{
	team_ctx c = {0};
	int rc;

	if (out == NULL || in == NULL || in->team == NULL)
		return tau_error_set(TAU_EINVAL, "explicit quota: missing input");
	c.in = in;
	c.name = tau_json_str(in->team, "metadata.name");
	c.uid = tau_json_str(in->team, "metadata.uid");
	if (c.name == NULL || c.uid == NULL)
		return tau_error_set(TAU_EINVAL, "explicit quota: TauTeam without name or uid");
	if ((rc = tau_budget_cohort_name(c.cohort, sizeof(c.cohort), c.name)) < 0)
		return rc;
	c.t = calloc(1, sizeof(*c.t));
	if (c.t == NULL)
		return tau_budget_nomem();
	memcpy(c.t->cohort, c.cohort, sizeof(c.cohort));
	rc = decide(&c);
	if (rc == 0) {
		c.t->summary = malloc(MSG_MAX);
		if (c.t->summary == NULL)
			rc = tau_budget_nomem();
		else
			snprintf(c.t->summary, MSG_MAX, "team %s (explicit): %s: %s", c.name,
			         c.t->reason, c.t->message);
	}
	ctx_free(&c);
	if (rc < 0) {
		tau_budget_explicit_team_free(c.t);
		return rc;
	}
	*out = c.t;
	return 0;
}
