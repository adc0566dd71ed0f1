/*
 * decide.c - one reconcile of the team capacity budget (docs/budget.md).
 *
 * The one idea: from the observed world alone, say which Kueue objects to
 * write or remove, what each TauTeam and the TauCluster should report, and
 * which Events tell the story.  The state of the capacity team is decided
 * first, in a fixed order of causes (never established, owner conflicts,
 * P4 conflicts, pool not valid, limits), so one root cause shows one reason;
 * every write then follows from that state and the plan.  Explicit-quota
 * teams (explicit.c) are decided in the same pass.  Events, for either kind
 * of team, come from comparing the new state with the observed condition, so
 * they follow changes, never passes.
 */
#include "decide.h"

#include "explicit.h"
#include "helpers.h"

#include "tau/buf.h"
#include "tau/conditions.h"
#include "tau/error.h"
#include "tau/json.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most conflicts or workspaces named in one message before "and N more". */
#define NAMED_MAX 5
#define MSG_MAX   2048

typedef struct builder {
	tau_budget_decision *d;
	size_t cap_writes, cap_statuses, cap_events;
	int rc;
} builder;

/* ------------------------------------------------------------------------------------------ */
/* Output                                                                                      */

static void add_write(builder *b, tau_budget_kind kind, const char *name, bool remove, bool create,
                      cJSON *body, const char *uid, char *why)
{
	tau_budget_write *w;

	if (b->rc < 0 || tau_budget_grow((void **)&b->d->writes, &b->cap_writes, b->d->n_writes + 1,
	                                 sizeof(*b->d->writes))) {
		cJSON_Delete(body);
		free(why);
		if (b->rc == 0)
			b->rc = tau_budget_nomem();
		return;
	}
	w = &b->d->writes[b->d->n_writes];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	w->name = strdup(name);
	w->remove = remove;
	w->create = create;
	w->body = body;
	w->uid = uid != NULL ? strdup(uid) : NULL;
	w->why = why;
	b->d->n_writes++;
	if (w->name == NULL || why == NULL || (uid != NULL && w->uid == NULL))
		b->rc = tau_budget_nomem();
}

static void add_status(builder *b, const cJSON *object, cJSON *status)
{
	if (b->rc < 0 || status == NULL ||
	    tau_budget_grow((void **)&b->d->statuses, &b->cap_statuses, b->d->n_statuses + 1,
	                    sizeof(*b->d->statuses))) {
		cJSON_Delete(status);
		if (b->rc == 0)
			b->rc = tau_budget_nomem();
		return;
	}
	b->d->statuses[b->d->n_statuses].object = object;
	b->d->statuses[b->d->n_statuses].status = status;
	b->d->n_statuses++;
}

static void add_event(builder *b, const cJSON *object, const char *type, const char *reason,
                      const char *message)
{
	tau_budget_event *e;

	if (b->rc < 0 || object == NULL)
		return;
	if (tau_budget_grow((void **)&b->d->events, &b->cap_events, b->d->n_events + 1,
	                    sizeof(*b->d->events))) {
		b->rc = tau_budget_nomem();
		return;
	}
	e = &b->d->events[b->d->n_events];
	e->object = object;
	e->type = type;
	e->reason = reason;
	e->on_write = false;
	e->message = strdup(message);
	b->d->n_events++;
	if (e->message == NULL)
		b->rc = tau_budget_nomem();
}

void tau_budget_decision_free(tau_budget_decision *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->n_writes; i++) {
		free(d->writes[i].name);
		cJSON_Delete(d->writes[i].body);
		free(d->writes[i].uid);
		free(d->writes[i].why);
	}
	for (size_t i = 0; i < d->n_statuses; i++)
		cJSON_Delete(d->statuses[i].status);
	for (size_t i = 0; i < d->n_events; i++)
		free(d->events[i].message);
	free(d->writes);
	free(d->statuses);
	free(d->events);
	free(d->summary);
	free(d);
}

/* ------------------------------------------------------------------------------------------ */
/* Teams and workspaces                                                                        */

static const char *team_of(const cJSON *ws)
{
	return tau_json_str(ws, "spec.teamRef.name");
}

/* Names of the workspaces linked to `team`, "a, b and N more"; count in *n. */
static void team_workspaces(char *buf, size_t len, size_t *n, const tau_budget_observed *in,
                            const char *team)
{
	size_t named = 0, used = 0;

	*n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < in->n_workspaces; i++) {
		const char *name = tau_json_str(in->workspaces[i], "metadata.name");

		if (!tau_budget_streq(team_of(in->workspaces[i]), team) || name == NULL)
			continue;
		(*n)++;
		if (named < NAMED_MAX && used < len) {
			int k = snprintf(buf + used, len - used, "%s%s", named > 0 ? ", " : "",
			                 name);

			if (k > 0)
				used += (size_t)k;
			named++;
		}
	}
	if (*n > named && used < len)
		snprintf(buf + used, len - used, " and %zu more", *n - named);
}

/* ------------------------------------------------------------------------------------------ */
/* The capacity team's state                                                                   */

typedef struct team_state {
	const char *reason; /* QuotaReady reason */
	const char *status; /* "True", "False", "Unknown" */
	const char *phase;  /* Pending, Ready, Degraded */
	bool zeroed;        /* write every root quota as 0 */
	bool write_cohort;  /* the Cohort (and flavors) may be written */
	bool write_queues;  /* workspace ClusterQueues may be written */
	char message[MSG_MAX];
} team_state;

static void set_state(team_state *s, const char *reason, const char *status, const char *phase,
                      const char *f, ...) __attribute__((format(printf, 5, 6)));

static void set_state(team_state *s, const char *reason, const char *status, const char *phase,
                      const char *f, ...)
{
	va_list ap;

	s->reason = reason;
	s->status = status;
	s->phase = phase;
	va_start(ap, f);
	vsnprintf(s->message, sizeof(s->message), f, ap);
	va_end(ap);
}

static bool is_zeroing(const char *reason)
{
	return tau_budget_streq(reason, TAU_BUDGET_REASON_ZEROED) ||
	       tau_budget_streq(reason, TAU_BUDGET_REASON_CONFLICT);
}

/* ------------------------------------------------------------------------------------------ */
/* Status objects                                                                              */

static cJSON *conditions_of(const cJSON *obj)
{
	return (cJSON *)tau_json_find(obj, "status.conditions");
}

/* Index of the condition of `type` in the array conds, -1 when absent. */
static int condition_index(const cJSON *conds, const char *type)
{
	const cJSON *c;
	int i = 0;

	if (!cJSON_IsArray(conds))
		return -1;
	cJSON_ArrayForEach(c, conds)
	{
		if (tau_budget_streq(tau_json_str(c, "type"), type))
			return i;
		i++;
	}
	return -1;
}

/* Whether the new status differs from obj's .status on the fields we write. */
static bool status_differs(const cJSON *obj, const cJSON *st, const char *const *fields)
{
	const cJSON *old = tau_json_find(obj, "status");

	if (!cJSON_IsObject(old))
		return true;
	for (size_t i = 0; fields[i] != NULL; i++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, fields[i]);
		const cJSON *b = cJSON_GetObjectItemCaseSensitive(old, fields[i]);

		if (a == NULL && b == NULL)
			continue;
		if (a == NULL || b == NULL || !cJSON_Compare(a, b, true))
			return true;
	}
	return !tau_conditions_equal(cJSON_GetObjectItemCaseSensitive(st, "conditions"),
	                             cJSON_GetObjectItemCaseSensitive(old, "conditions"));
}

static const char *const TEAM_FIELDS[] = {"phase", "observedGeneration", "cohort", "cohortUID",
                                          NULL};
static const char *const CLUSTER_FIELDS[] = {
        "phase", "observedGeneration", "discoveredCapacity", "managedResources", "systemNamespace",
        NULL};

static void team_status(builder *b, const tau_budget_observed *in, const cJSON *team,
                        const team_state *s, const char *cohort, const char *cohort_uid)
{
	cJSON *st = cJSON_CreateObject(), *conds = cJSON_CreateArray();
	int64_t gen = tau_budget_generation(team);

	if (st == NULL || conds == NULL || cJSON_AddStringToObject(st, "phase", s->phase) == NULL ||
	    cJSON_AddNumberToObject(st, "observedGeneration", (double)gen) == NULL ||
	    (cohort != NULL && cJSON_AddStringToObject(st, "cohort", cohort) == NULL) ||
	    (cohort_uid != NULL && cJSON_AddStringToObject(st, "cohortUID", cohort_uid) == NULL)) {
		cJSON_Delete(st);
		cJSON_Delete(conds);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	cJSON_AddItemToObject(st, "conditions", conds);
	if (tau_conditions_set(conds, conditions_of(team), "QuotaReady", s->status, s->reason,
	                       s->message, gen, in->now) < 0) {
		cJSON_Delete(st);
		b->rc = b->rc < 0 ? b->rc : -TAU_ENOMEM;
		return;
	}
	if (status_differs(team, st, TEAM_FIELDS))
		add_status(b, team, st);
	else
		cJSON_Delete(st);
}

/* The capacity per flavor and resource, as the pool sums it. */
static int discovered_capacity(cJSON *arr, const tau_budget_pool *pool)
{
	char fname[TAU_BUDGET_NAME_BUF], q[TAU_QUANTITY_STR_MAX];

	for (size_t i = 0; i < pool->n_classes; i++) {
		const tau_budget_class *c = &pool->classes[i];

		if (tau_budget_flavor_name(fname, sizeof(fname), c->name) < 0)
			continue; /* reported by the plan */
		for (size_t j = 0; j < c->n_resources; j++) {
			cJSON *e = cJSON_CreateObject();

			if (e == NULL ||
			    tau_quantity_format(q, sizeof(q), &c->resources[j].total) < 0 ||
			    cJSON_AddStringToObject(e, "flavor", fname) == NULL ||
			    cJSON_AddStringToObject(e, "resource", c->resources[j].name) == NULL ||
			    cJSON_AddStringToObject(e, "capacity", q) == NULL) {
				cJSON_Delete(e);
				return tau_budget_nomem();
			}
			cJSON_AddItemToArray(arr, e);
		}
	}
	return 0;
}

static int managed_add(cJSON *arr, const char *kind, const char *name)
{
	cJSON *e = cJSON_CreateObject();

	if (e == NULL || cJSON_AddStringToObject(e, "kind", kind) == NULL ||
	    cJSON_AddStringToObject(e, "name", name) == NULL) {
		cJSON_Delete(e);
		return tau_budget_nomem();
	}
	cJSON_AddItemToArray(arr, e);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Writes                                                                                      */

/* Does any of `objs` have metadata.uid `uid`? */
static bool uid_alive(const cJSON *const *objs, size_t n, const char *uid)
{
	for (size_t i = 0; i < n; i++)
		if (tau_budget_streq(tau_json_str(objs[i], "metadata.uid"), uid))
			return true;
	return false;
}

/*
 * Is `obs` one of our own objects whose recorded owner no longer exists, so that its current
 * owner adopts it?  Our managed-by label, the kind's own label mapping back to the object's
 * name (a ResourceFlavor's gpu-class, a Cohort's team, a ClusterQueue's workspace with its
 * team) and an owner-UID annotation naming no live owner: the TauCluster (one, named cluster,
 * so any other UID is an earlier one: `helm uninstall && helm install`), a TauTeam or a
 * TauWorkspace re-created under the same name.  An object naming a live owner, without an
 * owner-UID annotation (legacy) or without our labels is never adopted.
 */
static bool orphaned(const tau_budget_observed *in, const char *cluster_uid, tau_budget_kind kind,
                     const cJSON *obs)
{
	const char *name = tau_json_str(obs, "metadata.name");
	const char *uid = tau_json_annotation(obs, tau_budget_owner_annotation(kind));
	char want[TAU_BUDGET_NAME_BUF];
	const char *label;
	int rc = -1;

	if (name == NULL || uid == NULL || uid[0] == '\0' || !tau_budget_is_managed(obs))
		return false;
	switch (kind) {
	case TAU_BUDGET_RESOURCE_FLAVOR:
		label = tau_json_label(obs, TAU_BUDGET_LABEL_GPU_CLASS);
		if (label != NULL)
			rc = tau_budget_flavor_name(want, sizeof(want), label);
		tau_error_clear();
		return rc == 0 && tau_budget_streq(want, name) && cluster_uid != NULL &&
		       !tau_budget_streq(uid, cluster_uid);
	case TAU_BUDGET_COHORT:
		label = tau_json_label(obs, TAU_BUDGET_LABEL_TEAM);
		if (label != NULL)
			rc = tau_budget_cohort_name(want, sizeof(want), label);
		tau_error_clear();
		return rc == 0 && tau_budget_streq(want, name) &&
		       !uid_alive(in->teams, in->n_teams, uid);
	case TAU_BUDGET_CLUSTER_QUEUE:
		label = tau_json_label(obs, TAU_BUDGET_LABEL_WORKSPACE);
		if (label != NULL && tau_json_label(obs, TAU_BUDGET_LABEL_TEAM) != NULL)
			rc = tau_budget_cluster_queue_name(want, sizeof(want), label);
		tau_error_clear();
		return rc == 0 && tau_budget_streq(want, name) &&
		       !uid_alive(in->workspaces, in->n_workspaces, uid);
	case TAU_BUDGET_TEAM:
		break;
	}
	return false;
}

/* Who adopts an orphaned object (docs/budget.md, "Ownership"); NULL: nothing is adopted. */
typedef struct adopter {
	const tau_budget_observed *in;
	const char *cluster_uid;
	const cJSON *by; /* the new owner, which the Adopted Event is about */
} adopter;

/*
 * Create `desired` when nothing is observed, update it when ours and different (or ours to
 * adopt: see orphaned), and report (in *problem, returning false) an object of that name we do
 * not own.
 */
static bool ensure(builder *b, tau_budget_kind kind, cJSON *desired, const cJSON *observed,
                   const char *owner_uid, bool allowed, char *problem, size_t problem_len,
                   const adopter *adopt)
{
	const char *name = tau_json_str(desired, "metadata.name");
	char why[512];
	bool equal = false;
	cJSON *body = NULL;

	if (observed == NULL) {
		if (allowed)
			add_write(b, kind, name, false, true, desired, NULL,
			          tau_budget_fmt("%s %s does not exist", tau_budget_kind_name(kind),
			                         name));
		else
			cJSON_Delete(desired);
		return true;
	}
	if (tau_budget_ownership_of(observed, kind, owner_uid, why, sizeof(why)) !=
	    TAU_BUDGET_OWNED) {
		const char *was = tau_json_annotation(observed, tau_budget_owner_annotation(kind));

		if (adopt == NULL || !orphaned(adopt->in, adopt->cluster_uid, kind, observed)) {
			tau_str_printf(problem, problem_len, "%s %s exists but is not ours: %s",
			               tau_budget_kind_name(kind), name, why);
			cJSON_Delete(desired);
			return false;
		}
		if (allowed) {
			char msg[MSG_MAX];

			tau_str_printf(
			        msg, sizeof(msg),
			        "%s %s carries TauGrid's labels but its owner (%s %s) no longer "
			        "exists: adopted by %s %s (UID %s)",
			        tau_budget_kind_name(kind), name, tau_budget_owner_annotation(kind),
			        was, tau_json_str(adopt->by, "kind"),
			        tau_json_str(adopt->by, "metadata.name"), owner_uid);
			if (tau_budget_merge(&body, observed, desired) < 0) {
				b->rc = b->rc < 0 ? b->rc : -TAU_ENOMEM;
			} else {
				add_write(b, kind, name, false, false, body, NULL,
				          tau_budget_fmt("%s", msg));
				add_event(b, adopt->by, "Normal", "Adopted", msg);
				if (b->rc == 0)
					b->d->events[b->d->n_events - 1].on_write = true;
			}
		}
		cJSON_Delete(desired);
		return true;
	}
	if (tau_budget_owned_equal(&equal, why, sizeof(why), desired, observed) < 0) {
		b->rc = b->rc < 0 ? b->rc : -TAU_EINVAL;
		cJSON_Delete(desired);
		return true;
	}
	if (!equal && allowed) {
		if (tau_budget_merge(&body, observed, desired) < 0)
			b->rc = b->rc < 0 ? b->rc : -TAU_ENOMEM;
		else
			add_write(b, kind, name, false, false, body, NULL,
			          tau_budget_fmt("%s", why));
	}
	cJSON_Delete(desired);
	return true;
}

/* The nominalQuota of flavor `flavor`, resource `resource` in Cohort `co`, or NULL. */
static const cJSON *cohort_cell(const cJSON *co, const char *flavor, const char *resource)
{
	const cJSON *g, *f, *r;

	cJSON_ArrayForEach(g, tau_json_find(co, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			if (!tau_budget_streq(tau_json_str(f, "name"), flavor))
				continue;
			cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
			{
				if (tau_budget_streq(tau_json_str(r, "name"), resource))
					return cJSON_GetObjectItemCaseSensitive(r, "nominalQuota");
			}
		}
	}
	return NULL;
}

/*
 * Every cell of the desired Cohort whose live nominalQuota differs, as "<flavor>/<resource>
 * holds <live>, want <desired>" joined by "; " into buf (empty when none differs); false when
 * a quantity cannot be read.  With `to_zero` the desired Cohort is `live` at 0 (one that
 * would be deleted): every non-zero cell is listed.
 */
static bool cohort_cells_drift(char *buf, size_t len, const cJSON *desired, const cJSON *live,
                               bool to_zero)
{
	const cJSON *g, *f, *r;
	size_t used = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(g, tau_json_find(desired, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
			{
				const char *flavor = tau_json_str(f, "name"),
				           *res = tau_json_str(r, "name");
				const cJSON *have = cohort_cell(live, flavor, res);
				tau_quantity want, got = tau_quantity_zero();
				char w[64], l[64];

				if (flavor == NULL || res == NULL ||
				    tau_budget_quantity_of(&want, cJSON_GetObjectItemCaseSensitive(
				                                          r, "nominalQuota")) < 0 ||
				    (have != NULL && tau_budget_quantity_of(&got, have) < 0))
					return false;
				if (to_zero)
					want = tau_quantity_zero();
				if (have != NULL && tau_quantity_cmp(&want, &got) == 0)
					continue;
				tau_quantity_format(w, sizeof(w), &want);
				tau_quantity_format(l, sizeof(l), &got);
				tau_str_printf(buf + used, len - used, "%s%s/%s holds %s, want %s",
				               used > 0 ? "; " : "", flavor, res,
				               have != NULL ? l : "nothing", w);
				used += strlen(buf + used);
			}
		}
	}
	return true;
}

/* ------------------------------------------------------------------------------------------ */
/* The decision                                                                                */

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

static int record_policy(cJSON *obj, const char *policy);
static bool cohort_applied(const tau_budget_observed *in, const char *cohort, const char **first);

/*
 * Write our automatic Cohort `co` of team `team` (owner `uid`) at 0, its shape kept and
 * deletionPolicy `policy` recorded.  An unreadable Cohort is left as it is (nothing safe to
 * write): 0 then, as for success; < 0 only when out of memory.
 */
static int zero_cohort(builder *b, const tau_budget_observed *in, const cJSON *co, const char *team,
                       const char *uid, const char *policy)
{
	tau_budget_pool *empty = NULL;
	tau_budget_plan *plan = NULL;
	cJSON *want = NULL;
	char scratch[MSG_MAX];
	int rc = tau_budget_pool_new(&empty);

	if (rc < 0)
		return rc;
	rc = tau_budget_plan_build(&plan, empty, co, in->flavors, in->n_flavors, NULL);
	tau_budget_pool_free(empty);
	if (rc == -TAU_ENOMEM)
		return rc;
	if (rc < 0) {
		tau_error_clear();
		return 0;
	}
	rc = tau_budget_desired_cohort(&want, plan, team, uid, true);
	tau_budget_plan_free(plan);
	if (rc == 0)
		rc = record_policy(want, policy);
	if (rc < 0) {
		cJSON_Delete(want);
		return rc;
	}
	ensure(b, TAU_BUDGET_COHORT, want, co, uid, true, scratch, sizeof(scratch), NULL);
	return 0;
}

/* P7: owned automatic Cohorts of teams that are no longer the capacity team. */
static void previous_teams(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_cohorts; i++) {
		const cJSON *co = in->cohorts[i];
		const char *t = tau_json_label(co, TAU_BUDGET_LABEL_TEAM),
		           *name = tau_json_str(co, "metadata.name");
		const cJSON *team;
		const char *uid;
		const char *applied = NULL;
		size_t n = 0;
		char ws[MSG_MAX];
		int rc;

		if (!tau_budget_is_managed(co) || t == NULL || name == NULL ||
		    tau_budget_streq(t, c->capacity))
			continue;
		team = tau_budget_find_named(in->teams, in->n_teams, t);
		/* A deleted team still owns what carries its annotation. */
		uid = team != NULL ? tau_json_str(team, "metadata.uid")
		                   : tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID);
		if (tau_budget_ownership_of(co, TAU_BUDGET_COHORT, uid, NULL, 0) !=
		    TAU_BUDGET_OWNED)
			continue;
		if ((team != NULL && tau_json_find(team, "spec.quota") != NULL) ||
		    tau_budget_streq(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
		                     TAU_BUDGET_QUOTA_MODE_EXPLICIT))
			continue; /* an explicit-quota team's Cohort */
		team_workspaces(ws, sizeof(ws), &n, in, t);
		if (n > 0) {
			if (c->blocked_team == NULL) {
				c->blocked_team = t;
				tau_str_printf(c->blocked_ws, sizeof(c->blocked_ws), "%s", ws);
			}
			continue;
		}
		c->retiring = true;
		if (!c->reconcile) {
			size_t used = strlen(c->retire_drift);
			char cells[MSG_MAX];

			if (!cohort_cells_drift(cells, sizeof(cells), co, co, true))
				tau_str_printf(cells, sizeof(cells), "its quota cannot be read");
			tau_str_printf(
			        c->retire_drift + used, sizeof(c->retire_drift) - used,
			        "%sCohort %s of previous capacity team %s is not removed%s%s",
			        used > 0 ? "; " : "", name, t, cells[0] != '\0' ? ": " : "", cells);
		}
		if (cohort_applied(in, name, &applied)) {
			/*
			 * A held queue (its workspace gone, its work still running) is still
			 * applied to it: the Cohort stays, at 0, until it has drained and gone, and
			 * the next capacity team waits (effective NULL) so no two budgets cover
			 * that work.
			 */
			tau_budget_append(
			        c->retire_wait, sizeof(c->retire_wait),
			        "Cohort %s goes once ClusterQueue %s, still applied to it, has "
			        "drained",
			        name, applied);
			if (c->writes_allowed &&
			    (rc = zero_cohort(c->b, in, co, t, uid,
			                      tau_json_annotation(
			                              co, TAU_BUDGET_ANNOTATION_DELETION_POLICY))) <
			            0)
				c->b->rc = c->b->rc < 0 ? c->b->rc : rc;
			continue;
		}
		if (c->writes_allowed)
			add_write(c->b, TAU_BUDGET_COHORT, name, true, false, NULL,
			          tau_json_str(co, "metadata.uid"),
			          tau_budget_fmt("team %s is no longer the capacity team and has "
			                         "no workspaces: "
			                         "its automatic budget goes before another team "
			                         "takes the pool",
			                         t));
	}
	c->effective = c->blocked_team != NULL ? c->blocked_team : c->retiring ? NULL : c->capacity;
}

/*
 * Does a ClusterQueue hold work: admitted or reserving workloads, or a reservation?  A value
 * that cannot be read counts as work (deleting the queue could not be undone).
 */
static bool queue_has_work(const cJSON *cq)
{
	int64_t admitted = 0, reserving = 0;
	const cJSON *f, *r;

	if ((tau_json_get_int(&admitted, cq, "status.admittedWorkloads") == 0 && admitted != 0) ||
	    (tau_json_get_int(&reserving, cq, "status.reservingWorkloads") == 0 && reserving != 0))
		return true;
	cJSON_ArrayForEach(f, tau_json_find(cq, "status.flavorsReservation"))
	{
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(f, "resources"))
		{
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "total");
			tau_quantity q;

			if (t == NULL || cJSON_IsNull(t))
				continue;
			if (tau_budget_quantity_of(&q, t) < 0 || !tau_quantity_is_zero(&q)) {
				tau_error_clear();
				return true;
			}
		}
	}
	return false;
}

/*
 * Does a workspace of the team get no ClusterQueue now because of a misconfiguration its owner
 * fixes?  Then `buf` says which and how; false when it is not one of the team's or nothing is
 * wrong with it.
 */
static bool misconfigured(char *buf, size_t len, const ctx *c, const cJSON *ws)
{
	const char *name = tau_json_str(ws, "metadata.name");
	const char *ns = tau_json_str(ws, "status.target.resolvedNamespace");
	const cJSON *queue_ready =
	        tau_conditions_find(tau_json_find(ws, "status.conditions"), "QueueReady");

	if (ws == NULL || c->effective == NULL || !tau_budget_streq(team_of(ws), c->effective))
		return false;
	if (tau_json_find(ws, "spec.quota") != NULL) {
		tau_str_printf(
		        buf, len,
		        "TauWorkspace %s of capacity team %s sets spec.quota (workspaces of the "
		        "capacity team share the pool): remove spec.quota",
		        name, c->effective);
	} else if (!c->in->multiple_workspaces &&
	           tau_budget_streq(tau_json_str(queue_ready, "reason"),
	                            "BlockedByActiveWorkspace")) {
		/* v0 is one active workspace in the cluster (a blocked one loses its resolved
		 * namespace too): its QueueReady names the active one. */
		const char *which = tau_json_str(queue_ready, "message");

		tau_str_printf(
		        buf, len,
		        "TauWorkspace %s is blocked by the one-active-workspace rule (%s): delete "
		        "the active workspace or enable the MultipleWorkspaces feature gate",
		        name,
		        which != NULL && which[0] != '\0' ? which : "another workspace is active");
	} else if (ns == NULL || ns[0] == '\0' ||
	           tau_budget_workspace_namespace(ws, c->in->multiple_workspaces) == NULL) {
		tau_str_printf(
		        buf, len,
		        "TauWorkspace %s has no resolved namespace: fix what its Ready condition "
		        "names (namespaceMap, namespace allowlist or a namespace taken by another "
		        "workspace)",
		        name);
	} else {
		return false;
	}
	return true;
}

/* The per-workspace note that its queue is held (ctx.ws_held), for its QuotaReady. */
static void note_held(ctx *c, const cJSON *ws, const char *why)
{
	for (size_t i = 0; i < c->in->n_workspaces && c->ws_held != NULL; i++)
		if (c->in->workspaces[i] == ws && c->ws_held[i] == NULL &&
		    (c->ws_held[i] = strdup(why)) == NULL)
			c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
}

/*
 * Owned workspace ClusterQueues that no workspace wants any more.  A queue is deleted only
 * once its workspace is gone (or has left the team) and it holds no work; until then it is
 * held (spec.stopPolicy Hold: nothing new is admitted, admitted work runs to completion) with
 * the annotation tau.azure.com/held saying why, so a misconfiguration never deletes a queue
 * with running work and undoing it releases the queue as it was (issue 24, finding 4).
 */
static void orphan_queues(ctx *c, const char *const *wanted, size_t n_wanted)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_cluster_queues; i++) {
		const cJSON *cq = in->cluster_queues[i];
		const char *name = tau_json_str(cq, "metadata.name");
		const char *w = tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE);
		const char *ann = tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_WORKSPACE_UID);
		const cJSON *ws;
		char why[MSG_MAX];
		bool keep = false, mistake;

		if (!tau_budget_is_managed(cq) ||
		    tau_json_label(cq, TAU_BUDGET_LABEL_TEAM) == NULL || w == NULL || ann == NULL ||
		    name == NULL || tau_json_find(cq, "metadata.deletionTimestamp") != NULL)
			continue;
		for (size_t j = 0; j < n_wanted && !keep; j++)
			keep = tau_budget_streq(wanted[j], name);
		for (size_t j = 0; j < c->n_explicit_wanted && !keep; j++)
			keep = tau_budget_streq(c->explicit_wanted[j], name);
		ws = tau_budget_find_named(in->workspaces, in->n_workspaces, w);
		if (keep ||
		    (ws != NULL && !tau_budget_streq(tau_json_str(ws, "metadata.uid"), ann)))
			continue;
		mistake = misconfigured(why, sizeof(why), c, ws);
		if (!mistake && !queue_has_work(cq)) {
			if (c->writes_allowed)
				add_write(
				        c->b, TAU_BUDGET_CLUSTER_QUEUE, name, true, false, NULL,
				        tau_json_str(cq, "metadata.uid"),
				        tau_budget_fmt(
				                ws == NULL
				                        ? "workspace %s no longer exists and the "
				                          "queue holds no work"
				                        : "workspace %s no longer takes part in "
				                          "the "
				                          "team budget and the queue holds no work",
				                w));
			continue;
		}
		if (!mistake)
			tau_str_printf(
			        why, sizeof(why),
			        ws == NULL
			                ? "TauWorkspace %s no longer exists: its queue is deleted "
			                  "once its admitted and reserving work has drained"
			                : "TauWorkspace %s no longer takes part in the team "
			                  "budget: "
			                  "its queue is deleted once its admitted and reserving "
			                  "work has drained",
			        w);
		if (!c->writes_allowed)
			continue; /* Observe, or not established yet: nothing is held */
		if (ws != NULL)
			note_held(c, ws, why);
		if (!(tau_budget_streq(tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_HELD), why) &&
		      tau_budget_streq(tau_json_str(cq, "spec.stopPolicy"), "Hold"))) {
			cJSON *body = NULL;

			if (tau_budget_hold_body(&body, cq, why) < 0) {
				c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
				return;
			}
			add_write(c->b, TAU_BUDGET_CLUSTER_QUEUE, name, false, false, body, NULL,
			          tau_budget_fmt("held (stopPolicy Hold) instead of deleted: %s",
			                         why));
		}
	}
}

/* The capacity team's state, before any write is planned. */
static void decide_state(team_state *s, ctx *c, const cJSON *team, int plan_rc,
                         const char *plan_error, const char *owner_problem, const char *cohort,
                         const char *conflicts, const char *read_problem)
{
	const tau_budget_observed *in = c->in;

	if (!in->ever_established) {
		set_state(s, TAU_BUDGET_REASON_WAITING, "False", "Pending",
		          "the inventory was not established yet (%zu of the labelled nodes "
		          "counted so far); nothing is written before it is",
		          in->nodes_counted);
	} else if (owner_problem != NULL && owner_problem[0] != '\0') {
		set_state(s, TAU_BUDGET_REASON_OWNERSHIP, "False", "Degraded",
		          "%s; it is never changed or adopted: remove it through its owner",
		          owner_problem);
	} else if (conflicts[0] != '\0') {
		set_state(s, TAU_BUDGET_REASON_CONFLICT, "False", "Degraded",
		          "root quota is 0 until these conflicts are removed through their owners: "
		          "%s",
		          conflicts);
		s->zeroed = true;
	} else if (read_problem != NULL) {
		set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded", "root quota is 0: %s",
		          read_problem);
		s->zeroed = true;
	} else if (in->pool_problem != NULL) {
		set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		          "root quota is 0: the pool cannot be validated: %s", in->pool_problem);
		s->zeroed = true;
	} else if (!in->established) {
		set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		          "root quota is 0: the inventory is no longer established (%zu of %zu "
		          "labelled nodes counted)",
		          in->nodes_counted, in->nodes_observed);
		s->zeroed = true;
	} else if (plan_rc == -TAU_ERANGE) {
		set_state(s, TAU_BUDGET_REASON_LIMITS, "False", "Degraded",
		          "%s; no partial budget is written and the root quota is 0", plan_error);
		s->zeroed = true;
	} else if (plan_rc < 0) {
		set_state(s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		          "root quota is 0: the budget cannot be planned: %s", plan_error);
		s->zeroed = true;
	} else {
		set_state(s, TAU_BUDGET_REASON_APPLIED, "True", "Ready",
		          "Cohort %s holds the pool of %zu counted nodes", cohort,
		          in->nodes_counted);
	}
	s->write_cohort = c->writes_allowed && team != NULL &&
	                  !tau_budget_streq(s->reason, TAU_BUDGET_REASON_OWNERSHIP);
	s->write_queues = s->write_cohort && !tau_budget_streq(s->reason, TAU_BUDGET_REASON_LIMITS);
}

/* Events: what changed between the observed condition and the new one. */
static void budget_events(builder *b, const cJSON *obj, const char *cond_type, const team_state *s)
{
	const cJSON *old = tau_conditions_find(conditions_of(obj), cond_type);
	const char *old_reason = old != NULL ? tau_json_str(old, "reason") : NULL;

	if (is_zeroing(s->reason) && !is_zeroing(old_reason))
		add_event(b, obj, "Warning", "BudgetZeroed", s->message);
	else if (tau_budget_streq(s->reason, TAU_BUDGET_REASON_APPLIED) && is_zeroing(old_reason))
		add_event(b, obj, "Normal", "BudgetRestored", s->message);
	if (tau_budget_streq(s->reason, TAU_BUDGET_REASON_LEAVE_BLOCKED) &&
	    !tau_budget_streq(old_reason, TAU_BUDGET_REASON_LEAVE_BLOCKED))
		add_event(b, obj, "Warning", "LeaveRefused", s->message);
}

static void conflict_events(builder *b, const cJSON *obj, bool now, const char *message)
{
	const cJSON *old = tau_conditions_find(conditions_of(obj), "ConflictDetected");
	bool was = old != NULL && tau_budget_streq(tau_json_str(old, "status"), "True");
	const char *old_msg = old != NULL ? tau_json_str(old, "message") : NULL;

	if (now && (!was || !tau_budget_streq(old_msg, message)))
		add_event(b, obj, "Warning", "ConflictDetected", message);
	else if (!now && was)
		add_event(b, obj, "Normal", "ConflictCleared", "no conflicting budget remains");
}

/*
 * NodeTruthAgrees: whether the counted nodes' agents see what their Nodes advertise
 * (inventory/truthrules.h, docs/agent.md).  True when every counted node that reports node
 * truth agrees; False naming how many disagree and the first few with their first failing
 * rule and what it says; Unknown when no counted node's agent reports.  It never changes the
 * budget: the pool follows the Node objects (the contract), and a remediation reaches it
 * through Node conditions and cordons.
 */
static int node_truth_condition(cJSON *conds, const cJSON *prev, const tau_budget_observed *in,
                                int64_t gen)
{
	const tau_budget_truth *t = in->truth;
	tau_buf msg = TAU_BUF_INIT(8192);
	char *text;
	int rc;

	if (t == NULL || t->reporting == 0)
		return tau_conditions_set(conds, prev, "NodeTruthAgrees", "Unknown",
		                          "NoAgentReports",
		                          "no counted node's agent reports node-local facts "
		                          "(tau-node-agent not running there, or not reported yet)",
		                          gen, in->now);
	if (t->disagreeing == 0) {
		tau_buf_printf(
		        &msg,
		        "the agents of %zu of %zu counted nodes report node-local facts; none "
		        "disagrees with what its Node advertises",
		        t->reporting, in->nodes_counted);
	} else {
		tau_buf_printf(&msg,
		               "%zu of %zu counted nodes reporting node-local facts disagree with "
		               "what their Node advertises (they still count: the budget follows "
		               "the Node objects):",
		               t->disagreeing, t->reporting);
		for (size_t i = 0; i < t->n_nodes; i++) {
			const tau_budget_truth_node *n = &t->nodes[i];

			tau_buf_printf(&msg, "%s %s: %s: %s", i > 0 ? ";" : "",
			               n->node != NULL ? n->node : "?",
			               n->rule != NULL ? n->rule : "?",
			               n->detail != NULL ? n->detail : "");
			if (n->more_rules > 0)
				tau_buf_printf(&msg, " (and %u more rule%s)", n->more_rules,
				               n->more_rules == 1 ? "" : "s");
		}
		if (t->disagreeing > t->n_nodes)
			tau_buf_printf(&msg, "; and %zu more node%s", t->disagreeing - t->n_nodes,
			               t->disagreeing - t->n_nodes == 1 ? "" : "s");
		tau_buf_printf(&msg, " (tau inventory explain NODE)");
	}
	if ((rc = tau_buf_error(&msg)) < 0) {
		tau_buf_free(&msg);
		return rc;
	}
	text = tau_buf_take(&msg, NULL);
	rc = tau_conditions_set(conds, prev, "NodeTruthAgrees",
	                        t->disagreeing == 0 ? "True" : "False",
	                        t->disagreeing == 0 ? "Agrees" : "Disagrees", text, gen, in->now);
	free(text);
	return rc;
}

/*
 * DRAClassesUsable: whether every DeviceClass that maps to a quota resource (Kueue's
 * deviceClassMappings or its extendedResourceName) can count its devices (docs/budget.md,
 * "How DRA devices count").  False naming each unusable class with its reason, which quotes
 * the refused CEL expression and offset (or Kueue's two names for it), and False when
 * Kueue's configuration cannot be read (then no class counts); True otherwise, with its own
 * reason when no class maps to anything.  Like NodeTruthAgrees it changes no write: the pool
 * already leaves those devices out (fail closed).
 */
static int dra_classes_condition(cJSON *conds, const cJSON *prev, const tau_budget_observed *in,
                                 int64_t gen)
{
	const tau_budget_dra *d = in->dra;
	tau_buf msg = TAU_BUF_INIT(8192);
	const char *status = "True", *reason = "Usable";
	char *text;
	int rc;

	if (d == NULL)
		return tau_conditions_set(conds, prev, "DRAClassesUsable", "Unknown", "NotObserved",
		                          "the inventory's DeviceClasses have not been read yet",
		                          gen, in->now);
	if (d->kueue_error != NULL) {
		status = "False";
		reason = "KueueConfigUnreadable";
		tau_buf_printf(&msg,
		               "Kueue's configuration cannot be read, so no DeviceClass counts "
		               "until it is fixed: %s",
		               d->kueue_error);
	} else if (d->unusable > 0) {
		status = "False";
		reason = "UnusableDeviceClass";
		tau_buf_printf(&msg,
		               "%zu of %zu DeviceClasses that map to a quota resource count "
		               "nothing (their devices are left out of the pool):",
		               d->unusable, d->mapped);
		for (size_t i = 0; i < d->n_classes; i++)
			tau_buf_printf(&msg, "%s %s", i > 0 ? ";" : "",
			               d->classes[i].reason != NULL ? d->classes[i].reason : "?");
		if (d->unusable > d->n_classes)
			tau_buf_printf(&msg, "; and %zu more", d->unusable - d->n_classes);
	} else if (d->mapped == 0) {
		reason = "NoMappedClasses";
		tau_buf_printf(&msg,
		               "no DeviceClass maps to a quota resource (extendedResourceName "
		               "or Kueue's deviceClassMappings): no DRA device counts");
	} else {
		tau_buf_printf(&msg,
		               "%zu DeviceClass%s map%s to a quota resource; every one is usable",
		               d->mapped, d->mapped == 1 ? "" : "es", d->mapped == 1 ? "s" : "");
	}
	if ((rc = tau_buf_error(&msg)) < 0) {
		tau_buf_free(&msg);
		return rc;
	}
	text = tau_buf_take(&msg, NULL);
	rc = tau_conditions_set(conds, prev, "DRAClassesUsable", status, reason, text, gen,
	                        in->now);
	free(text);
	return rc;
}

static void cluster_status(ctx *c, const team_state *s, const cJSON *managed, bool conflict,
                           const char *conflict_msg)
{
	const tau_budget_observed *in = c->in;
	const cJSON *cl = in->cluster;
	const cJSON *old = tau_json_find(cl, "status");
	cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	cJSON *conds = cJSON_CreateArray(), *cap = cJSON_CreateArray();
	cJSON *prev = conditions_of(cl);
	int64_t gen = tau_budget_generation(cl);
	bool no_team = c->capacity == NULL && c->effective == NULL && !c->retiring;
	const char *phase = no_team ? (in->established ? "Ready" : "Pending") : s->phase;
	const char *selector_problem = in->pool_problem != NULL         ? in->pool_problem
	                               : c->selector_problem[0] != '\0' ? c->selector_problem
	                                                                : NULL;
	builder *b = c->b;
	int rc = 0;

	if (st == NULL || conds == NULL || cap == NULL) {
		cJSON_Delete(st);
		cJSON_Delete(conds);
		cJSON_Delete(cap);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(st, "phase");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "observedGeneration");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "discoveredCapacity");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "managedResources");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
	cJSON_DeleteItemFromObjectCaseSensitive(st, "systemNamespace");
	if (in->system_namespace != NULL)
		cJSON_AddStringToObject(st, "systemNamespace", in->system_namespace);
	cJSON_AddStringToObject(st, "phase", phase);
	cJSON_AddNumberToObject(st, "observedGeneration", (double)gen);
	cJSON_AddItemToObject(st, "discoveredCapacity", cap);
	cJSON_AddItemToObject(st, "managedResources", cJSON_Duplicate(managed, true));
	cJSON_AddItemToObject(st, "conditions", conds);
	if (in->ever_established)
		rc = discovered_capacity(cap, in->pool);
	if (rc == 0)
		rc = tau_conditions_set(
		        conds, prev, "InventoryEstablished", in->established ? "True" : "False",
		        in->established ? "Established" : "WaitingForNodes",
		        in->established
		                ? "the sync gate is open: every GPU node's agent reported, or "
		                  "the initial sync timeout passed and nodes without one "
		                  "count from their Node objects (tau inventory pool lists "
		                  "them as missing)"
		                : "the inventory's sync gate is not open",
		        gen, in->now);
	if (rc == 0)
		rc = tau_conditions_set(conds, prev, "NodeSelectorValid",
		                        selector_problem == NULL ? "True" : "False",
		                        selector_problem == NULL ? "Valid" : "Invalid",
		                        selector_problem != NULL ? selector_problem : "", gen,
		                        in->now);
	if (rc == 0 && no_team)
		rc = tau_conditions_set(
		        conds, prev, "BudgetReady", "False", TAU_BUDGET_REASON_NO_TEAM,
		        "spec.queues.capacityTeamRef is not set: explicit quotas and "
		        "external queues apply",
		        gen, in->now);
	else if (rc == 0)
		rc = tau_conditions_set(conds, prev, "BudgetReady", s->status, s->reason,
		                        s->message, gen, in->now);
	if (rc == 0)
		rc = tau_conditions_set(conds, prev, "ConflictDetected",
		                        conflict ? "True" : "False",
		                        conflict ? "ConflictDetected" : "NoConflict",
		                        conflict ? conflict_msg : "", gen, in->now);
	if (rc == 0)
		rc = node_truth_condition(conds, prev, in, gen);
	if (rc == 0)
		rc = dra_classes_condition(conds, prev, in, gen);
	if (rc < 0) {
		cJSON_Delete(st);
		b->rc = b->rc < 0 ? b->rc : rc;
		return;
	}
	if (!no_team)
		budget_events(b, cl, "BudgetReady", s);
	conflict_events(b, cl, conflict, conflict_msg);
	if (status_differs(cl, st, CLUSTER_FIELDS))
		add_status(b, cl, st);
	else
		cJSON_Delete(st);
}

/* Plan the Cohort; on a planning error, a zeroed plan of what was written before. */
static int plan_budget(tau_budget_plan **plan, int *plan_rc, char *err, size_t err_len,
                       const tau_budget_observed *in, const cJSON *cohort, const char *cluster_uid)
{
	tau_budget_pool *empty = NULL;
	int rc;

	*plan = NULL;
	*plan_rc = tau_budget_plan_build(plan, in->pool, cohort, in->flavors, in->n_flavors,
	                                 cluster_uid);
	if (*plan_rc == 0)
		return 0;
	if (*plan_rc == -TAU_ENOMEM)
		return *plan_rc;
	tau_str_printf(err, err_len, "%s", tau_error_last()->msg);
	rc = tau_budget_pool_new(&empty);
	if (rc < 0)
		return rc;
	rc = tau_budget_plan_build(plan, empty, cohort, in->flavors, in->n_flavors, cluster_uid);
	tau_budget_pool_free(empty);
	if (rc == -TAU_ENOMEM)
		return rc;
	if (rc < 0)
		*plan = NULL; /* nothing safe to write */
	return 0;
}

/*
 * P4: the conflicts as one message ("" when none).  An object whose fields
 * cannot be read fills `unreadable` instead (the pool cannot be validated).
 */
static int find_conflicts(char *buf, size_t len, char *unreadable, size_t unreadable_len, ctx *c,
                          const cJSON *team, const tau_budget_plan *plan)
{
	const tau_budget_observed *in = c->in;
	tau_budget_conflict_input ci = {0};
	tau_budget_conflicts *list = NULL;
	tau_budget_workspace *ws = NULL;
	const char **own = NULL;
	char(*names)[TAU_BUDGET_NAME_BUF] = NULL;
	size_t n_own = 0, n_ws = 0;
	int rc;

	buf[0] = '\0';
	ws = calloc(in->n_workspaces + 1, sizeof(*ws));
	own = calloc((plan != NULL ? plan->n_flavors : 0) + in->pool->n_classes + 1, sizeof(*own));
	names = calloc(in->pool->n_classes + 1, sizeof(*names));
	if (ws == NULL || own == NULL || names == NULL) {
		rc = tau_budget_nomem();
		goto out;
	}
	for (size_t f = 0; plan != NULL && f < plan->n_flavors; f++)
		own[n_own++] = plan->flavors[f].name;
	for (size_t i = 0; plan == NULL && i < in->pool->n_classes; i++)
		if (tau_budget_flavor_name(names[i], sizeof(names[i]), in->pool->classes[i].name) ==
		    0)
			own[n_own++] = names[i];
	for (size_t i = 0; i < in->n_workspaces; i++) {
		const cJSON *w = in->workspaces[i];

		if (!tau_budget_streq(team_of(w), c->effective))
			continue;
		ws[n_ws].name = tau_json_str(w, "metadata.name");
		ws[n_ws].uid = tau_json_str(w, "metadata.uid");
		ws[n_ws].quota = tau_json_find(w, "spec.quota");
		n_ws++;
	}
	ci.nodes = in->nodes;
	ci.n_nodes = in->n_nodes;
	ci.own_flavors = own;
	ci.n_own_flavors = n_own;
	ci.cluster_uid = c->cluster_uid;
	ci.flavors = in->flavors;
	ci.n_flavors = in->n_flavors;
	ci.cluster_queues = in->cluster_queues;
	ci.n_cluster_queues = in->n_cluster_queues;
	ci.cohorts = in->cohorts;
	ci.n_cohorts = in->n_cohorts;
	ci.team = c->effective;
	ci.team_exists = team != NULL;
	ci.team_uid = tau_json_str(team, "metadata.uid");
	ci.team_quota = tau_json_find(team, "spec.quota");
	ci.workspaces = ws;
	ci.n_workspaces = n_ws;
	rc = tau_budget_conflicts_find(&list, &ci);
	if (rc == -TAU_ETYPE || rc == -TAU_EINVAL) {
		tau_str_printf(unreadable, unreadable_len, "%s", tau_error_last()->msg);
		rc = 0;
	} else if (rc == 0) {
		tau_budget_conflicts_summary(buf, len, list);
	}
out:
	tau_budget_conflicts_free(list);
	free(ws);
	free(own);
	free(names);
	return rc;
}

/* Is any ClusterQueue applied to Cohort `cohort`?  Its name in *first. */
static bool cohort_applied(const tau_budget_observed *in, const char *cohort, const char **first)
{
	for (size_t i = 0; i < in->n_cluster_queues; i++)
		if (tau_budget_streq(tau_json_str(in->cluster_queues[i], "spec.cohortName"),
		                     cohort)) {
			*first = tau_json_str(in->cluster_queues[i], "metadata.name");
			return true;
		}
	return false;
}

/*
 * What Observe mode reports instead of writing: how the live Cohort differs from the one the
 * pool makes (every quota cell that differs, with the live and the desired value; else the
 * first owned field that differs), or that it matches.
 */
static void observe_drift(char *buf, size_t len, const cJSON *desired, const cJSON *live,
                          const char *cohort)
{
	char what[MSG_MAX] = "";
	bool equal = false;

	if (desired == NULL)
		tau_str_printf(buf, len, "no budget can be computed for Cohort %s", cohort);
	else if (live == NULL)
		tau_str_printf(buf, len, "Cohort %s does not exist, the pool would create it",
		               cohort);
	else if (tau_budget_owned_equal(&equal, what, sizeof(what), desired, live) < 0)
		tau_str_printf(buf, len, "the live Cohort %s cannot be compared with the pool",
		               cohort);
	else if (equal)
		tau_str_printf(buf, len, "the live Cohort %s matches the pool", cohort);
	else if (cohort_cells_drift(what, sizeof(what), desired, live, false) && what[0] != '\0')
		tau_str_printf(buf, len, "the live Cohort %s does not follow the pool: %s", cohort,
		               what);
	else if (tau_budget_owned_equal(&equal, what, sizeof(what), desired, live) == 0)
		tau_str_printf(buf, len, "the live Cohort %s does not follow the pool: %s", cohort,
		               what);
	else
		tau_str_printf(buf, len, "the live Cohort %s cannot be compared with the pool",
		               cohort);
}

/*
 * The TauCluster's deletionPolicy, recorded on the automatic Cohorts and the ResourceFlavors it
 * makes: once no TauCluster exists it still says what to do with them (Retain: the Cohort kept
 * at 0, flavors kept; DeleteManaged: its queues and then the Cohort go once drained, then the
 * flavors no Cohort or ClusterQueue names any more).
 */
static int record_policy(cJSON *obj, const char *policy)
{
	cJSON *ann = (cJSON *)tau_json_find(obj, "metadata.annotations");

	if (!tau_budget_streq(policy, TAU_BUDGET_POLICY_DELETE))
		policy = TAU_BUDGET_POLICY_RETAIN;
	if (!cJSON_IsObject(ann) ||
	    cJSON_AddStringToObject(ann, TAU_BUDGET_ANNOTATION_DELETION_POLICY, policy) == NULL)
		return tau_budget_nomem();
	return 0;
}

static int decide_team(ctx *c, cJSON *managed)
{
	const tau_budget_observed *in = c->in;
	builder *b = c->b;
	const cJSON *team = c->effective != NULL
	                            ? tau_budget_find_named(in->teams, in->n_teams, c->effective)
	                            : NULL;
	const char *team_uid = tau_json_str(team, "metadata.uid");

	if (team_uid == NULL || team_uid[0] == '\0') {
		team = NULL; /* no uid (not from an API server): it can own nothing, as if absent */
		team_uid = NULL;
	}
	char cohort_name[TAU_BUDGET_NAME_BUF] = "", problem[MSG_MAX] = "", err[MSG_MAX] = "";
	char conflict_msg[MSG_MAX], read_problem[MSG_MAX] = "", rf_problem[MSG_MAX] = "";
	char scratch[MSG_MAX] = "", drift[MSG_MAX] = "", team_ws[MSG_MAX] = "";
	char flavor_drift[MSG_MAX] = "";
	const cJSON *cohort = NULL, *owned_cohort = NULL, *orphan_cohort = NULL;
	const cJSON **rfs = NULL;
	const char **wanted = NULL, *applied_cq = NULL, *cohort_uid = NULL;
	size_t n_wanted = 0, n_rfs = 0, n_foreign = 0, n_team_ws = 0;
	adopter by_team = {in, c->cluster_uid, team},
	        by_cluster = {in, c->cluster_uid, in->cluster};
	bool deleting = team != NULL && tau_json_find(team, "metadata.deletionTimestamp") != NULL;
	bool cleanup = false;
	tau_budget_plan *plan = NULL;
	team_state s = {0};
	int plan_rc = 0, rc;

	if (c->effective != NULL) {
		rc = tau_budget_cohort_name(cohort_name, sizeof(cohort_name), c->effective);
		if (rc < 0)
			return rc;
		cohort = tau_budget_find_named(in->cohorts, in->n_cohorts, cohort_name);
		if (cohort != NULL) {
			char why[512];

			if (tau_budget_ownership_of(cohort, TAU_BUDGET_COHORT, team_uid, why,
			                            sizeof(why)) == TAU_BUDGET_OWNED)
				owned_cohort = cohort;
			else if (orphaned(in, c->cluster_uid, TAU_BUDGET_COHORT, cohort))
				orphan_cohort =
				        cohort; /* adopted by the team; zeroed while it is gone */
			else if (team != NULL)
				tau_str_printf(problem, sizeof(problem),
				               "Cohort %s exists but is not ours: %s", cohort_name,
				               why);
		}
		team_workspaces(team_ws, sizeof(team_ws), &n_team_ws, in, c->effective);
	}
	/* A capacity team being deleted with no workspace left is cleaned up, not budgeted. */
	cleanup = deleting && n_team_ws == 0;
	rc = plan_budget(&plan, &plan_rc, err, sizeof(err), in,
	                 owned_cohort != NULL ? owned_cohort : orphan_cohort, c->cluster_uid);
	if (rc < 0)
		return rc;

	/*
	 * Flavors: an object of another owner under our name is never written and blocks only
	 * its flavor, left out of the Cohort and the queues (the nodes it selects are not proven
	 * to be the pool's, and while a ClusterQueue of ours names it Kueue's resource-in-use
	 * finalizer keeps its owner from deleting it); ours whose recorded TauCluster is gone (a
	 * reinstall) is adopted.
	 */
	rfs = calloc(in->n_flavors + 1, sizeof(*rfs));
	if (rfs == NULL) {
		tau_budget_plan_free(plan);
		return tau_budget_nomem();
	}
	for (size_t i = 0; i < in->n_flavors; i++)
		if (!orphaned(in, c->cluster_uid, TAU_BUDGET_RESOURCE_FLAVOR, in->flavors[i]))
			rfs[n_rfs++] = in->flavors[i];
	for (size_t f = 0; plan != NULL && f < plan->n_flavors;) {
		const cJSON *rf =
		        tau_budget_find_named(in->flavors, in->n_flavors, plan->flavors[f].name);
		char why[512];

		if (rf == NULL ||
		    tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, c->cluster_uid, why,
		                            sizeof(why)) == TAU_BUDGET_OWNED ||
		    orphaned(in, c->cluster_uid, TAU_BUDGET_RESOURCE_FLAVOR, rf)) {
			f++;
			continue;
		}
		if (n_foreign++ == 0)
			tau_str_printf(rf_problem, sizeof(rf_problem),
			               "ResourceFlavor %s exists but is not ours: %s",
			               plan->flavors[f].name, why);
		tau_budget_plan_drop_flavor(plan, f);
	}
	if (n_foreign > 1)
		tau_str_printf(rf_problem + strlen(rf_problem),
		               sizeof(rf_problem) - strlen(rf_problem), " (and %zu more flavors)",
		               n_foreign - 1);
	{
		tau_budget_observed filtered = *in;

		filtered.flavors = rfs;
		filtered.n_flavors = n_rfs;
		c->in = &filtered; /* adopted flavors are ours: no P4 conflict */
		rc = find_conflicts(conflict_msg, sizeof(conflict_msg), read_problem,
		                    sizeof(read_problem), c, team, plan);
		c->in = in;
	}
	free(rfs);
	if (rc < 0) {
		tau_budget_plan_free(plan);
		return rc;
	}
	decide_state(&s, c, team, plan_rc, err, problem, cohort_name, conflict_msg,
	             read_problem[0] != '\0'          ? read_problem
	             : in->read_problem != NULL       ? in->read_problem
	             : c->selector_problem[0] != '\0' ? c->selector_problem
	                                              : NULL);
	if (rf_problem[0] != '\0' && tau_budget_streq(s.reason, TAU_BUDGET_REASON_APPLIED)) {
		set_state(&s, TAU_BUDGET_REASON_OWNERSHIP, "False", "Degraded",
		          "%s; it is never changed or adopted: its flavor is left out of Cohort %s "
		          "and its ClusterQueues (the rest of the pool is applied), so no queue of "
		          "ours keeps its owner from deleting it",
		          rf_problem, cohort_name);
	} else if (rf_problem[0] != '\0' &&
	           !tau_budget_streq(s.reason, TAU_BUDGET_REASON_OWNERSHIP)) {
		char keep[MSG_MAX];

		tau_str_printf(keep, sizeof(keep), "%s", s.message);
		tau_str_printf(s.message, sizeof(s.message), "%s; also %s", keep, rf_problem);
	}
	/* Our own Cohort is written even while its team is gone (zeroed), never another's. */
	s.write_cohort = c->writes_allowed && (team != NULL || orphan_cohort != NULL) &&
	                 problem[0] == '\0' && !cleanup;
	s.write_queues = s.write_cohort && team != NULL &&
	                 !tau_budget_streq(s.reason, TAU_BUDGET_REASON_LIMITS);

	/* ResourceFlavors, then the Cohort. */
	for (size_t f = 0; plan != NULL && f < plan->n_flavors; f++) {
		cJSON *rf = NULL;

		if (plan->flavors[f].gpu_class == NULL || c->cluster_uid == NULL ||
		    c->selector_problem[0] != '\0')
			continue; /* a flavor we cannot confine to the pool is left as it is */
		if ((rc = tau_budget_desired_flavor(&rf, plan->flavors[f].gpu_class, c->cluster_uid,
		                                    c->selector)) < 0) {
			b->rc = b->rc < 0 ? b->rc : rc;
			break;
		}
		if ((rc = record_policy(rf, tau_json_str(in->cluster, "spec.deletionPolicy"))) <
		    0) {
			cJSON_Delete(rf);
			b->rc = b->rc < 0 ? b->rc : rc;
			break;
		}
		managed_add(managed, "ResourceFlavor", plan->flavors[f].name);
		if (!c->reconcile) {
			/* Observe: a flavor not rewritten (a new node selector) says so too. */
			const cJSON *live = tau_budget_find_named(in->flavors, in->n_flavors,
			                                          plan->flavors[f].name);
			char what[MSG_MAX] = "";
			bool same = false;

			if (live != NULL &&
			    tau_budget_owned_equal(&same, what, sizeof(what), rf, live) == 0 &&
			    !same)
				tau_budget_append(flavor_drift, sizeof(flavor_drift),
				                  "ResourceFlavor %s does not follow the pool: %s",
				                  plan->flavors[f].name, what);
		}
		/* Another owner's Cohort under our name blocks the Cohort, not our flavors. */
		ensure(b, TAU_BUDGET_RESOURCE_FLAVOR, rf,
		       tau_budget_find_named(in->flavors, in->n_flavors, plan->flavors[f].name),
		       c->cluster_uid,
		       c->writes_allowed && !cleanup && (team != NULL || orphan_cohort != NULL),
		       scratch, sizeof(scratch), &by_cluster);
	}
	if (plan != NULL && c->effective != NULL && (team != NULL || orphan_cohort != NULL)) {
		const char *uid = team != NULL
		                          ? team_uid
		                          : tau_json_annotation(orphan_cohort,
		                                                TAU_BUDGET_ANNOTATION_TEAM_UID);
		cJSON *co = NULL;

		if ((rc = tau_budget_desired_cohort(&co, plan, c->effective, uid,
		                                    s.zeroed || team == NULL)) < 0 ||
		    (rc = record_policy(co, tau_json_str(in->cluster, "spec.deletionPolicy"))) <
		            0) {
			cJSON_Delete(co);
			b->rc = b->rc < 0 ? b->rc : rc;
		} else {
			if (!c->reconcile)
				observe_drift(drift, sizeof(drift), co, cohort, cohort_name);
			managed_add(managed, "Cohort", cohort_name);
			ensure(b, TAU_BUDGET_COHORT, co, cohort, uid, s.write_cohort, scratch,
			       sizeof(scratch), team != NULL ? &by_team : NULL);
		}
	} else if (!c->reconcile) {
		observe_drift(drift, sizeof(drift), NULL, cohort, cohort_name);
	}

	/* Workspace ClusterQueues. */
	wanted = calloc(in->n_workspaces + 1, sizeof(*wanted));
	if (wanted == NULL) {
		tau_budget_plan_free(plan);
		return tau_budget_nomem();
	}
	for (size_t i = 0; c->effective != NULL && i < in->n_workspaces; i++) {
		const cJSON *ws = in->workspaces[i];
		const char *wname = tau_json_str(ws, "metadata.name"), *ns;
		char cq_name[TAU_BUDGET_NAME_BUF], ws_problem[MSG_MAX] = "";
		cJSON *cq = NULL;

		if (!tau_budget_streq(team_of(ws), c->effective) || wname == NULL ||
		    tau_json_str(ws, "metadata.uid") == NULL ||
		    tau_json_str(ws, "metadata.uid")[0] == '\0' ||
		    (ns = tau_budget_workspace_namespace(ws, in->multiple_workspaces)) == NULL ||
		    tau_json_find(ws, "spec.quota") != NULL ||
		    tau_budget_cluster_queue_name(cq_name, sizeof(cq_name), wname) < 0)
			continue;
		/* The queue is wanted even when it cannot be written now: never an orphan. */
		wanted[n_wanted] = tau_json_str(
		        tau_budget_find_named(in->cluster_queues, in->n_cluster_queues, cq_name),
		        "metadata.name");
		if (wanted[n_wanted] != NULL)
			n_wanted++;
		if (plan == NULL || team == NULL)
			continue;
		if ((rc = tau_budget_desired_cluster_queue(&cq, plan, c->effective, wname,
		                                           tau_json_str(ws, "metadata.uid"), ns)) <
		    0) {
			b->rc = b->rc < 0 ? b->rc : rc;
			break;
		}
		managed_add(managed, "ClusterQueue", cq_name);
		if (!ensure(b, TAU_BUDGET_CLUSTER_QUEUE, cq,
		            tau_budget_find_named(in->cluster_queues, in->n_cluster_queues,
		                                  cq_name),
		            tau_json_str(ws, "metadata.uid"), s.write_queues, ws_problem,
		            sizeof(ws_problem), &by_team) &&
		    tau_budget_streq(s.reason, TAU_BUDGET_REASON_APPLIED)) {
			set_state(&s, TAU_BUDGET_REASON_OWNERSHIP, "False", "Degraded",
			          "%s; it is never changed or adopted: remove it through its owner",
			          ws_problem);
		}
	}
	orphan_queues(c, wanted, n_wanted);
	free(wanted);

	/* A capacity team being deleted (its finalizer, capacity_finalizers, holds it). */
	if (deleting && !cleanup) {
		char keep[MSG_MAX];

		tau_str_printf(keep, sizeof(keep), "%s", s.message);
		set_state(&s, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Degraded",
		          "team %s is being deleted but its workspaces (%s) still use its budget: "
		          "delete them or move them to another team; until then finalizer %s "
		          "holds the team and the budget keeps following the pool (%s)",
		          c->effective, team_ws, TAU_BUDGET_TEAM_FINALIZER, keep);
		c->cleanup_pending = true;
	} else if (cleanup && cohort_applied(in, cohort_name, &applied_cq)) {
		set_state(
		        &s, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Pending",
		        "team %s is being deleted: Cohort %s goes once no ClusterQueue is applied "
		        "to it (ClusterQueue %s is, held until its work drains)",
		        c->effective, cohort_name, applied_cq);
		c->cleanup_pending = true;
	} else if (cleanup) {
		set_state(&s, TAU_BUDGET_REASON_DELETION_BLOCKED, "False", "Pending",
		          "team %s is being deleted and no ClusterQueue is applied to Cohort %s: "
		          "cleaning up",
		          c->effective, cohort_name);
		if (c->writes_allowed && owned_cohort != NULL)
			add_write(b, TAU_BUDGET_COHORT, cohort_name, true, false, NULL,
			          tau_json_str(owned_cohort, "metadata.uid"),
			          tau_budget_fmt("team %s is being deleted and no ClusterQueue is "
			                         "applied to "
			                         "its "
			                         "Cohort",
			                         c->effective));
	}

	/* Leaving the mode, then Observe, override what the team is told. */
	if (c->blocked_team != NULL) {
		char keep[MSG_MAX];

		tau_str_printf(keep, sizeof(keep), "%s", s.message);
		set_state(
		        &s, TAU_BUDGET_REASON_LEAVE_BLOCKED, "False", "Degraded",
		        "spec.queues.capacityTeamRef %s%s, but team %s still has workspaces (%s): "
		        "drain and delete them first; the budget is kept (%s)",
		        c->capacity != NULL ? "now names " : "was removed",
		        c->capacity != NULL ? c->capacity : "", c->blocked_team, c->blocked_ws,
		        keep);
	}
	if (c->effective == NULL) {
		/* The previous capacity team's budget goes first (P7). */
		set_state(&s, TAU_BUDGET_REASON_LEAVE_BLOCKED, "False", "Pending",
		          "removing the previous capacity team's budget before team %s takes the "
		          "pool%s%s%s",
		          c->capacity != NULL ? c->capacity : "(none)",
		          c->retire_wait[0] != '\0' ? " (" : "", c->retire_wait,
		          c->retire_wait[0] != '\0' ? ")" : "");
		tau_str_printf(drift, sizeof(drift), "%s", c->retire_drift);
	} else if (c->retire_drift[0] != '\0') {
		size_t used = strlen(drift);

		tau_str_printf(drift + used, sizeof(drift) - used, "; %s", c->retire_drift);
	}
	if (!c->reconcile) {
		char would[MSG_MAX];

		if (flavor_drift[0] != '\0')
			tau_budget_append(drift, sizeof(drift), "%s", flavor_drift);

		tau_str_printf(would, sizeof(would), "%s: %s", s.reason, s.message);
		set_state(&s, TAU_BUDGET_REASON_OBSERVE_ONLY, "Unknown", "Pending",
		          "managementMode is Observe: nothing is written; %s (would be %s)", drift,
		          would);
	}
	b->d->state = s.reason;
	b->d->summary =
	        tau_budget_fmt("team %s: %s: %s", c->effective != NULL ? c->effective : "(none)",
	                       s.reason, s.message);
	cohort_uid = owned_cohort != NULL ? tau_json_str(owned_cohort, "metadata.uid") : NULL;
	if (team != NULL) {
		team_status(b, in, team, &s, cohort_name, cohort_uid);
		budget_events(b, team, "QuotaReady", &s);
		conflict_events(b, team, conflict_msg[0] != '\0', conflict_msg);
	}
	cluster_status(c, &s, managed, conflict_msg[0] != '\0', conflict_msg);
	tau_budget_plan_free(plan);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Explicit-quota teams (E1-E10, explicit.c)                                                   */

/* A PUT body of the team with our finalizer added or removed (E9); `why` is taken. */
static void team_finalizer(builder *b, const cJSON *team, bool add, char *why)
{
	cJSON *body = cJSON_Duplicate(team, true), *meta, *fins, *f, *keep;
	const char *name = tau_json_str(team, "metadata.name");

	if (body == NULL || (keep = cJSON_CreateArray()) == NULL) {
		cJSON_Delete(body);
		free(why);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	meta = cJSON_GetObjectItemCaseSensitive(body, "metadata");
	fins = cJSON_GetObjectItemCaseSensitive(meta, "finalizers");
	cJSON_ArrayForEach(f, fins)
	{
		if (!cJSON_IsString(f) || strcmp(f->valuestring, TAU_BUDGET_TEAM_FINALIZER) != 0)
			cJSON_AddItemToArray(keep, cJSON_Duplicate(f, true));
	}
	if (add)
		cJSON_AddItemToArray(keep, cJSON_CreateString(TAU_BUDGET_TEAM_FINALIZER));
	cJSON_DeleteItemFromObjectCaseSensitive(meta, "finalizers");
	cJSON_AddItemToObject(meta, "finalizers", keep);
	cJSON_DeleteItemFromObjectCaseSensitive(body, "status");
	add_write(b, TAU_BUDGET_TEAM, name, false, false, body, NULL, why);
}

/*
 * The QuotaReady condition of a workspace linked to explicit team `team` (E5-E8 refusals), its
 * other conditions kept.  `q` is its queue in the decision, NULL when it gets none (no resolved
 * namespace yet, or the team's inputs could not be read): then it says only that the team is
 * not Ready, and has no QuotaReady while the team is, since no queue holds anything for it.
 */
/* Set the workspace's QuotaReady (status "" removes it), its other conditions kept. */
static void ws_quota_ready(builder *b, const tau_budget_observed *in, const cJSON *ws,
                           const char *status, const char *reason, const char *msg)
{
	const cJSON *old = tau_json_find(ws, "status");
	const cJSON *prev = tau_json_find(ws, "status.conditions");
	cJSON *st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
	cJSON *conds = cJSON_IsArray(prev) ? cJSON_Duplicate(prev, true) : cJSON_CreateArray();
	int rc = 0;

	if (st == NULL || conds == NULL) {
		cJSON_Delete(st);
		cJSON_Delete(conds);
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	if (status[0] == '\0')
		cJSON_DeleteItemFromArray(conds, condition_index(conds, "QuotaReady"));
	else
		rc = tau_conditions_set(conds, prev, "QuotaReady", status, reason, msg,
		                        tau_budget_generation(ws), in->now);
	if (rc < 0 || tau_conditions_equal(conds, prev)) {
		if (rc < 0)
			b->rc = b->rc < 0 ? b->rc : rc;
		cJSON_Delete(st);
		cJSON_Delete(conds);
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
	cJSON_AddItemToObject(st, "conditions", conds);
	add_status(b, ws, st);
}

static void workspace_status(builder *b, const tau_budget_observed *in, const char *team,
                             const tau_budget_explicit_team *x, const cJSON *ws,
                             const tau_budget_explicit_queue *q)
{
	char msg[MSG_MAX];

	if (q != NULL && q->refusal != NULL) {
		ws_quota_ready(b, in, ws, "False", q->reason, q->refusal);
	} else if (tau_budget_streq(x->status, "True") && q != NULL) {
		ws_quota_ready(b, in, ws, "True", TAU_BUDGET_REASON_QUOTA_APPLIED,
		               "its ClusterQueue holds the workspace's guarantee");
	} else if (tau_budget_streq(x->status, "True")) {
		ws_quota_ready(b, in, ws, "", NULL, NULL);
	} else {
		tau_str_printf(msg, sizeof(msg), "team \"%s\" is not Ready: %s", team, x->message);
		ws_quota_ready(b, in, ws, "False", x->reason, msg);
	}
}

/*
 * A workspace linked to no explicit team (its teamRef removed, or naming the capacity team or a
 * team that does not exist) has no QuotaReady: one left from a team it left is removed.
 */
static void workspace_unlinked(builder *b, const cJSON *ws)
{
	const cJSON *prev = tau_json_find(ws, "status.conditions");
	int at = condition_index(prev, "QuotaReady");
	cJSON *st;

	if (at < 0)
		return;
	st = cJSON_Duplicate(tau_json_find(ws, "status"), true);
	if (st == NULL) {
		b->rc = b->rc < 0 ? b->rc : tau_budget_nomem();
		return;
	}
	cJSON_DeleteItemFromArray(cJSON_GetObjectItemCaseSensitive(st, "conditions"), at);
	add_status(b, ws, st);
}

/*
 * Events of an explicit team, only when its state changes: a Warning named after the reason
 * when it becomes Degraded (or Degraded for another reason), a Normal QuotaRestored when a
 * Degraded team is Ready again.  Pending states (waiting for the inventory after a restart,
 * cleaning up a deleted team) make none.
 */
static void explicit_events(builder *b, const cJSON *team, const team_state *s)
{
	const cJSON *old = tau_conditions_find(conditions_of(team), "QuotaReady");
	const char *old_phase = tau_json_str(team, "status.phase");
	bool was_degraded = tau_budget_streq(old_phase, "Degraded");

	if (tau_budget_streq(s->phase, "Degraded") &&
	    (!was_degraded || !tau_budget_streq(tau_json_str(old, "reason"), s->reason)))
		add_event(b, team, "Warning", s->reason, s->message);
	else if (tau_budget_streq(s->status, "True") && was_degraded)
		add_event(b, team, "Normal", TAU_BUDGET_EVENT_QUOTA_RESTORED, s->message);
}

/* Carry out one explicit team's decision: writes in order, then its status. */
static void explicit_apply(ctx *c, const cJSON *team, tau_budget_explicit_team *x, cJSON *managed)
{
	const tau_budget_observed *in = c->in;
	builder *b = c->b;
	const char *uid = tau_json_str(team, "metadata.uid"),
	           *name = tau_json_str(team, "metadata.name");
	char problem[MSG_MAX] = "";
	team_state s = {0};
	bool w = c->writes_allowed,
	     has_cohort = x->desired_cohort != NULL || x->owned_cohort != NULL;
	adopter by_team = {in, c->cluster_uid, team};

	if (w && x->add_finalizer)
		team_finalizer(
		        b, team, true,
		        tau_budget_fmt(
		                "finalizer %s added: deleting team %s waits for its workspace "
		                "queues",
		                TAU_BUDGET_TEAM_FINALIZER, tau_json_str(team, "metadata.name")));
	for (size_t i = 0; i < x->n_queues; i++) {
		tau_budget_explicit_queue *q = &x->queues[i];

		if (q->desired == NULL)
			continue;
		managed_add(managed, "ClusterQueue", q->name);
		ensure(b, TAU_BUDGET_CLUSTER_QUEUE, q->desired, q->observed,
		       tau_json_str(q->workspace, "metadata.uid"), w, problem, sizeof(problem),
		       &by_team);
		q->desired = NULL; /* ensure took it */
	}
	if (x->desired_cohort != NULL) {
		managed_add(managed, "Cohort", x->cohort);
		ensure(b, TAU_BUDGET_COHORT, x->desired_cohort,
		       tau_budget_find_named(in->cohorts, in->n_cohorts, x->cohort), uid, w,
		       problem, sizeof(problem), &by_team);
		x->desired_cohort = NULL;
	}
	if (w && x->delete_cohort && x->owned_cohort != NULL)
		add_write(b, TAU_BUDGET_COHORT, x->cohort, true, false, NULL,
		          tau_json_str(x->owned_cohort, "metadata.uid"),
		          tau_budget_fmt("team %s is being deleted and no ClusterQueue is applied "
		                         "to its Cohort",
		                         tau_json_str(team, "metadata.name")));
	if (w && x->remove_finalizer)
		team_finalizer(
		        b, team, false,
		        tau_budget_fmt(
		                "finalizer %s removed: no ClusterQueue is applied to team %s's "
		                "Cohort",
		                TAU_BUDGET_TEAM_FINALIZER, tau_json_str(team, "metadata.name")));
	set_state(&s, x->reason, x->status, x->phase, "%s", x->message);
	if (!c->reconcile) {
		char would[MSG_MAX];

		tau_str_printf(would, sizeof(would), "%s: %s", s.reason, s.message);
		set_state(&s, TAU_BUDGET_REASON_OBSERVE_ONLY, "Unknown", "Pending",
		          "managementMode is Observe: nothing is written (%s)", would);
	}
	for (size_t i = 0; i < in->n_workspaces; i++) {
		const cJSON *ws = in->workspaces[i];
		const tau_budget_explicit_queue *q = NULL;

		if (!tau_budget_streq(team_of(ws), name) ||
		    tau_json_str(ws, "metadata.name") == NULL)
			continue;
		c->ws_linked[i] = true;
		for (size_t k = 0; k < x->n_queues && q == NULL; k++)
			if (x->queues[k].workspace == ws)
				q = &x->queues[k];
		workspace_status(b, in, name, x, ws, q);
	}
	team_status(b, in, team, &s, has_cohort ? x->cohort : NULL,
	            x->owned_cohort != NULL ? tau_json_str(x->owned_cohort, "metadata.uid") : NULL);
	explicit_events(b, team, &s);
}

/*
 * An explicit Cohort whose team is gone without its finalizer (removed by hand) is ours by its
 * annotation; once no ClusterQueue is applied to it, it is deleted, as E9 would have.
 */
static void explicit_leftovers(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_cohorts && c->writes_allowed; i++) {
		const cJSON *co = in->cohorts[i];
		const char *t = tau_json_label(co, TAU_BUDGET_LABEL_TEAM),
		           *name = tau_json_str(co, "metadata.name");
		bool applied = false;

		if (t == NULL || name == NULL ||
		    !tau_budget_streq(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
		                      TAU_BUDGET_QUOTA_MODE_EXPLICIT) ||
		    tau_budget_find_named(in->teams, in->n_teams, t) != NULL ||
		    tau_json_find(co, "metadata.deletionTimestamp") != NULL ||
		    tau_budget_ownership_of(co, TAU_BUDGET_COHORT,
		                            tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID),
		                            NULL, 0) != TAU_BUDGET_OWNED)
			continue;
		for (size_t k = 0; k < in->n_cluster_queues && !applied; k++)
			applied = tau_budget_streq(
			        tau_json_str(in->cluster_queues[k], "spec.cohortName"), name);
		if (!applied)
			add_write(c->b, TAU_BUDGET_COHORT, name, true, false, NULL,
			          tau_json_str(co, "metadata.uid"),
			          tau_budget_fmt("team %s no longer exists and no ClusterQueue is "
			                         "applied to "
			                         "its "
			                         "explicit Cohort",
			                         t));
	}
}

/* Every team that is neither the kept budget nor the capacity team has an explicit quota. */
static void explicit_teams(ctx *c, cJSON *managed)
{
	const tau_budget_observed *in = c->in;
	tau_budget_explicit_input xi = {0};

	c->explicit_wanted = calloc(in->n_cluster_queues + 1, sizeof(*c->explicit_wanted));
	c->ws_linked = calloc(in->n_workspaces + 1, sizeof(*c->ws_linked));
	if (c->explicit_wanted == NULL || c->ws_linked == NULL) {
		c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
		return;
	}
	xi.capacity = in->ever_established ? in->pool : NULL;
	xi.pool_claimed_by = c->blocked_team != NULL ? c->blocked_team : c->capacity;
	xi.teams = in->teams;
	xi.n_teams = in->n_teams;
	xi.cluster_uid = c->cluster_uid;
	xi.workspaces = in->workspaces;
	xi.n_workspaces = in->n_workspaces;
	xi.flavors = in->flavors;
	xi.n_flavors = in->n_flavors;
	xi.cohorts = in->cohorts;
	xi.n_cohorts = in->n_cohorts;
	xi.cluster_queues = in->cluster_queues;
	xi.n_cluster_queues = in->n_cluster_queues;
	xi.multiple_workspaces = in->multiple_workspaces;
	for (size_t i = 0; i < in->n_teams && c->b->rc == 0; i++) {
		const cJSON *t = in->teams[i];
		const char *name = tau_json_str(t, "metadata.name");
		tau_budget_explicit_team *x = NULL;
		int rc;

		if (name == NULL || tau_budget_streq(name, c->effective) ||
		    tau_budget_streq(name, c->capacity))
			continue;
		/* No uid (not from an API server): nothing can be owned by it; skip, never fail. */
		if (tau_json_str(t, "metadata.uid") == NULL ||
		    tau_json_str(t, "metadata.uid")[0] == '\0')
			continue;
		xi.team = t;
		if ((rc = tau_budget_explicit_decide(&x, &xi)) < 0) {
			c->b->rc = rc;
			break;
		}
		for (size_t q = 0; q < x->n_queues; q++)
			if (x->queues[q].observed != NULL &&
			    c->n_explicit_wanted < in->n_cluster_queues)
				c->explicit_wanted[c->n_explicit_wanted++] =
				        tau_json_str(x->queues[q].observed, "metadata.name");
		explicit_apply(c, t, x, managed);
		{
			char *sum = tau_budget_fmt(
			        "%s%s%s", c->explicit_summary != NULL ? c->explicit_summary : "",
			        c->explicit_summary != NULL ? "; " : "", x->summary);

			free(c->explicit_summary);
			c->explicit_summary = sum;
		}
		tau_budget_explicit_team_free(x);
	}
	explicit_leftovers(c);
}

static void workspace_held(builder *b, const tau_budget_observed *in, const cJSON *ws,
                           const char *why);

/* Workspaces no explicit team decided: a held queue's QuotaReady, else none. */
static void workspaces_unlinked(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_workspaces && c->b->rc == 0; i++)
		if (c->ws_held != NULL && c->ws_held[i] != NULL)
			workspace_held(c->b, in, in->workspaces[i], c->ws_held[i]);
		else if (c->ws_linked != NULL && !c->ws_linked[i])
			workspace_unlinked(c->b, in->workspaces[i]);
}

/* Teams other than the one whose budget is kept. */
static void other_teams(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_teams; i++) {
		const cJSON *t = in->teams[i];
		const char *name = tau_json_str(t, "metadata.name");
		team_state s = {0};

		if (name == NULL || tau_budget_streq(name, c->effective) ||
		    !tau_budget_streq(name, c->capacity))
			continue; /* the kept budget, or an explicit team (explicit_teams) */
		set_state(&s, TAU_BUDGET_REASON_LEAVE_BLOCKED, "False", "Pending",
		          c->blocked_team != NULL ? "waiting for team %s to leave: it "
		                                    "still has workspaces (%s)"
		                                  : "waiting for the previous capacity "
		                                    "team's budget%s%s to be "
		                                    "removed",
		          c->blocked_team != NULL ? c->blocked_team : "",
		          c->blocked_team != NULL ? c->blocked_ws : "");
		team_status(c->b, in, t, &s, NULL, NULL);
	}
}

/*
 * The capacity team's cleanup finalizer: held while it has workspaces (deleting it then waits,
 * DeletionBlocked, and its budget keeps following the pool) and, once it is being deleted,
 * until its queues and Cohort are gone; a team without workspaces carries none, so deleting it
 * never waits for the aggregator.  The team the pool waits for (capacityTeamRef moved to it
 * while the previous one leaves) follows the same rule on its workspaces.
 */
static void capacity_finalizers(ctx *c)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_teams && c->writes_allowed; i++) {
		const cJSON *t = in->teams[i];
		const char *name = tau_json_str(t, "metadata.name");
		bool has = tau_budget_has_team_finalizer(t), want, deleting;
		char ws[MSG_MAX];
		size_t n = 0;

		if (!tau_budget_streq(name, c->effective) && !tau_budget_streq(name, c->capacity))
			continue;
		deleting = tau_json_find(t, "metadata.deletionTimestamp") != NULL;
		team_workspaces(ws, sizeof(ws), &n, in, name);
		want = deleting ? tau_budget_streq(name, c->effective) && c->cleanup_pending
		                : n > 0;
		if (want && !has && !deleting)
			team_finalizer(
			        c->b, t, true,
			        tau_budget_fmt(
			                "finalizer %s added: capacity team %s has workspaces (%s), "
			                "so deleting it waits for them",
			                TAU_BUDGET_TEAM_FINALIZER, name, ws));
		else if (!want && has)
			team_finalizer(
			        c->b, t, false,
			        tau_budget_fmt(
			                deleting ? "finalizer %s removed: capacity team %s is "
			                           "cleaned up"
			                         : "finalizer %s removed: capacity team %s has no "
			                           "workspaces, so its deletion does not wait",
			                TAU_BUDGET_TEAM_FINALIZER, name));
	}
}

/* QuotaReady of a workspace whose ClusterQueue is held (orphan_queues). */
static void workspace_held(builder *b, const tau_budget_observed *in, const cJSON *ws,
                           const char *why)
{
	char msg[MSG_MAX];

	tau_str_printf(
	        msg, sizeof(msg),
	        "its ClusterQueue is held (stopPolicy Hold: nothing new is admitted, admitted "
	        "work runs to completion) instead of deleted: %s",
	        why);
	ws_quota_ready(b, in, ws, "False", TAU_BUDGET_REASON_QUEUE_HELD, msg);
}

/* Does Cohort or ClusterQueue `obj` name ResourceFlavor `flavor` in its resourceGroups? */
static bool names_flavor(const cJSON *obj, const char *flavor)
{
	const cJSON *g, *f;

	cJSON_ArrayForEach(g, tau_json_find(obj, "spec.resourceGroups"))
	{
		cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(g, "flavors"))
		{
			if (tau_budget_streq(tau_json_str(f, "name"), flavor))
				return true;
		}
	}
	return false;
}

/* The first Cohort or ClusterQueue (any owner) naming `flavor`, as "<Kind> <name>", or NULL. */
static const char *flavor_user(const tau_budget_observed *in, const char *flavor, char *buf,
                               size_t len)
{
	for (size_t i = 0; i < in->n_cluster_queues; i++)
		if (names_flavor(in->cluster_queues[i], flavor)) {
			tau_str_printf(buf, len, "ClusterQueue %s",
			               tau_json_str(in->cluster_queues[i], "metadata.name"));
			return buf;
		}
	for (size_t i = 0; i < in->n_cohorts; i++)
		if (names_flavor(in->cohorts[i], flavor)) {
			tau_str_printf(buf, len, "Cohort %s",
			               tau_json_str(in->cohorts[i], "metadata.name"));
			return buf;
		}
	return NULL;
}

/*
 * DeleteManaged, no TauCluster: each ResourceFlavor of ours that recorded that policy is deleted
 * once no Cohort or ClusterQueue (ours, an explicit team's or anyone's) names it, so our queues
 * and Cohorts have drained and gone first and Kueue's resource-in-use finalizer never holds
 * it; one still named is kept and said (`held`), never deleted into Terminating.
 */
static void delete_managed_flavors(ctx *c, cJSON *left, char *held, size_t len)
{
	const tau_budget_observed *in = c->in;

	for (size_t i = 0; i < in->n_flavors; i++) {
		const cJSON *rf = in->flavors[i];
		const char *name = tau_json_str(rf, "metadata.name");
		const char *uid = tau_json_annotation(rf, TAU_BUDGET_ANNOTATION_CLUSTER_UID);
		char user[TAU_BUDGET_NAME_BUF + 32];

		if (name == NULL || uid == NULL || uid[0] == '\0' ||
		    tau_json_label(rf, TAU_BUDGET_LABEL_GPU_CLASS) == NULL ||
		    tau_budget_ownership_of(rf, TAU_BUDGET_RESOURCE_FLAVOR, uid, NULL, 0) !=
		            TAU_BUDGET_OWNED ||
		    !tau_budget_streq(
		            tau_json_annotation(rf, TAU_BUDGET_ANNOTATION_DELETION_POLICY),
		            TAU_BUDGET_POLICY_DELETE))
			continue;
		if (tau_json_find(rf, "metadata.deletionTimestamp") != NULL) {
			if (flavor_user(in, name, user, sizeof(user)) != NULL)
				tau_budget_append(
				        held, len,
				        "ResourceFlavor %s is terminating: Kueue's resource-in-use "
				        "finalizer holds it while %s names it",
				        name, user);
			managed_add(left, "ResourceFlavor", name);
			continue;
		}
		if (flavor_user(in, name, user, sizeof(user)) != NULL) {
			tau_budget_append(held, len, "ResourceFlavor %s is kept while %s names it",
			                  name, user);
			managed_add(left, "ResourceFlavor", name);
			continue;
		}
		add_write(
		        c->b, TAU_BUDGET_RESOURCE_FLAVOR, name, true, false, NULL,
		        tau_json_str(rf, "metadata.uid"),
		        tau_budget_fmt(
		                "TauCluster cluster is gone (deletionPolicy DeleteManaged) and no "
		                "Cohort or ClusterQueue names the flavor"));
	}
}

/*
 * DeleteManaged once no TauCluster exists: the queues applied to automatic Cohort `co` go, each
 * held (stopPolicy Hold) while its work drains; true when none is applied any more, so the
 * Cohort itself may go.
 */
static bool delete_managed_queues(ctx *c, const char *cohort, char *held, size_t held_len)
{
	const tau_budget_observed *in = c->in;
	bool applied = false;
	char why[MSG_MAX];

	tau_str_printf(
	        why, sizeof(why),
	        "TauCluster cluster is gone (deletionPolicy DeleteManaged): the queue is deleted "
	        "once its admitted and reserving work has drained, then Cohort %s",
	        cohort);
	for (size_t i = 0; i < in->n_cluster_queues; i++) {
		const cJSON *cq = in->cluster_queues[i];
		const char *name = tau_json_str(cq, "metadata.name");
		const char *w = tau_json_label(cq, TAU_BUDGET_LABEL_WORKSPACE);
		cJSON *body = NULL;

		if (!tau_budget_streq(tau_json_str(cq, "spec.cohortName"), cohort) || name == NULL)
			continue;
		applied = true;
		if (tau_json_find(cq, "metadata.deletionTimestamp") != NULL) {
			tau_budget_append(held, held_len, "ClusterQueue %s is terminating", name);
			continue; /* going: waited for */
		}
		if (w == NULL || !tau_budget_is_managed(cq) ||
		    tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_WORKSPACE_UID) == NULL) {
			tau_budget_append(
			        held, held_len,
			        "ClusterQueue %s, not TauGrid's, is applied to Cohort %s (never "
			        "touched: remove it through its owner)",
			        name, cohort);
			continue;
		}
		if (!queue_has_work(cq)) {
			add_write(c->b, TAU_BUDGET_CLUSTER_QUEUE, name, true, false, NULL,
			          tau_json_str(cq, "metadata.uid"),
			          tau_budget_fmt("TauCluster cluster is gone (deletionPolicy "
			                         "DeleteManaged) and "
			                         "the queue holds no work"));
			continue;
		}
		note_held(c, tau_budget_find_named(in->workspaces, in->n_workspaces, w), why);
		tau_budget_append(
		        held, held_len,
		        "ClusterQueue %s is held (stopPolicy Hold) until its admitted and "
		        "reserving "
		        "work drains",
		        name);
		if (tau_budget_streq(tau_json_annotation(cq, TAU_BUDGET_ANNOTATION_HELD), why) &&
		    tau_budget_streq(tau_json_str(cq, "spec.stopPolicy"), "Hold"))
			continue;
		if (tau_budget_hold_body(&body, cq, why) < 0) {
			c->b->rc = c->b->rc < 0 ? c->b->rc : tau_budget_nomem();
			return false;
		}
		add_write(c->b, TAU_BUDGET_CLUSTER_QUEUE, name, false, false, body, NULL,
		          tau_budget_fmt("held (stopPolicy Hold) instead of deleted: %s", why));
	}
	return !applied;
}

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
static int cluster_gone(ctx *c)
{
	const tau_budget_observed *in = c->in;
	const char *gone = in->cluster == NULL ? "does not exist" : "is being deleted";
	cJSON *left = cJSON_CreateArray(); /* what is still ours, for a deleting TauCluster */
	char held[MSG_MAX] = "";
	size_t n = 0;
	int rc = left == NULL ? tau_budget_nomem() : 0;

	for (size_t i = 0; rc == 0 && i < in->n_cohorts; i++) {
		const cJSON *co = in->cohorts[i];
		const char *t = tau_json_label(co, TAU_BUDGET_LABEL_TEAM),
		           *uid = tau_json_annotation(co, TAU_BUDGET_ANNOTATION_TEAM_UID),
		           *name = tau_json_str(co, "metadata.name");
		const cJSON *team =
		        t != NULL ? tau_budget_find_named(in->teams, in->n_teams, t) : NULL;
		bool del = tau_budget_streq(
		        tau_json_annotation(co, TAU_BUDGET_ANNOTATION_DELETION_POLICY),
		        TAU_BUDGET_POLICY_DELETE);
		team_state s = {0};

		if (t == NULL || name == NULL ||
		    tau_json_find(co, "metadata.deletionTimestamp") != NULL ||
		    tau_budget_streq(tau_json_label(co, TAU_BUDGET_LABEL_QUOTA_MODE),
		                     TAU_BUDGET_QUOTA_MODE_EXPLICIT) ||
		    tau_budget_ownership_of(co, TAU_BUDGET_COHORT, uid, NULL, 0) !=
		            TAU_BUDGET_OWNED)
			continue;
		n++;
		if (del && delete_managed_queues(c, name, held, sizeof(held))) {
			add_write(c->b, TAU_BUDGET_COHORT, name, true, false, NULL,
			          tau_json_str(co, "metadata.uid"),
			          tau_budget_fmt("TauCluster cluster %s (deletionPolicy "
			                         "DeleteManaged) and no "
			                         "ClusterQueue is applied to the Cohort",
			                         gone));
		} else {
			rc = zero_cohort(c->b, in, co, t, uid,
			                 del ? TAU_BUDGET_POLICY_DELETE : TAU_BUDGET_POLICY_RETAIN);
			if (rc < 0)
				break;
			managed_add(left, "Cohort", name);
			if (del)
				tau_budget_append(
				        held, sizeof(held),
				        "Cohort %s is at 0 and goes once no ClusterQueue is "
				        "applied "
				        "to it",
				        name);
			else
				tau_budget_append(held, sizeof(held),
				                  "Cohort %s is kept at 0 (deletionPolicy Retain)",
				                  name);
		}
		if (team == NULL || !tau_budget_streq(tau_json_str(team, "metadata.uid"), uid))
			continue;
		if (del)
			set_state(&s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
			          "root quota is 0: TauCluster cluster %s (deletionPolicy "
			          "DeleteManaged): the team's ClusterQueues are deleted as their "
			          "work "
			          "drains, then Cohort %s",
			          gone, name);
		else
			set_state(&s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
			          "root quota is 0: TauCluster cluster %s (deletionPolicy Retain): "
			          "Cohort %s is kept at 0 until a TauCluster names this team again",
			          gone, name);
		team_status(c->b, in, team, &s, name, tau_json_str(co, "metadata.uid"));
		budget_events(c->b, team, "QuotaReady", &s);
	}
	if (rc == 0)
		delete_managed_flavors(c, left, held, sizeof(held));
	for (size_t i = 0; rc == 0 && i < in->n_workspaces; i++)
		if (c->ws_held[i] != NULL)
			workspace_held(c->b, in, in->workspaces[i], c->ws_held[i]);
	if (rc == 0 && in->cluster != NULL) {
		/* Held by another finalizer (foreground deletion): it still says what happens. */
		const char *policy = tau_json_str(in->cluster, "spec.deletionPolicy");
		team_state s = {0};

		c->capacity = tau_json_str(in->cluster, "spec.queues.capacityTeamRef.name");
		c->capacity = c->capacity != NULL ? c->capacity : "";
		set_state(&s, TAU_BUDGET_REASON_ZEROED, "False", "Degraded",
		          "root quota is 0: TauCluster cluster is being deleted (deletionPolicy "
		          "%s): %s",
		          tau_budget_streq(policy, TAU_BUDGET_POLICY_DELETE)
		                  ? TAU_BUDGET_POLICY_DELETE
		                  : TAU_BUDGET_POLICY_RETAIN,
		          held[0] != '\0' ? held : "nothing of TauGrid's is left to remove");
		cluster_status(c, &s, left, false, "");
	}
	cJSON_Delete(left);
	c->b->d->summary =
	        tau_budget_fmt("TauCluster cluster %s: %zu automatic Cohorts kept at 0 or "
	                       "removed by their deletionPolicy%s%s",
	                       gone, n, held[0] != '\0' ? ": " : "", held);
	if (c->b->d->summary == NULL && rc == 0)
		rc = tau_budget_nomem();
	return rc;
}

/* Did a process whose inventory was established write the TauCluster's status last? */
static bool established_before(const cJSON *cluster)
{
	const cJSON *c = tau_conditions_find(conditions_of(cluster), "InventoryEstablished");

	return tau_budget_streq(tau_json_str(c, "status"), "True");
}

/*
 * A restarted (or newly elected) aggregator whose own inventory is not established yet
 * writes nothing (P5), and that includes status: the budget in the Cohort is still the one
 * an established inventory wrote, so the TauTeam and TauCluster keep saying so (Ready, the
 * discovered capacity) instead of flapping to Pending and an empty capacity on every
 * restart.  Statuses and Events wait until this process's inventory is established.
 */
static void keep_established_status(tau_budget_decision *d)
{
	char *sum;

	for (size_t i = 0; i < d->n_statuses; i++)
		cJSON_Delete(d->statuses[i].status);
	for (size_t i = 0; i < d->n_events; i++)
		free(d->events[i].message);
	d->n_statuses = 0;
	d->n_events = 0;
	sum = tau_budget_fmt(
	        "%s; the statuses written by an established inventory are kept until this "
	        "process's is established",
	        d->summary != NULL ? d->summary : "");
	free(d->summary);
	d->summary = sum;
}

int tau_budget_decide(tau_budget_decision **out, const tau_budget_observed *in)
{
	builder b = {0};
	ctx c = {0};
	cJSON *managed = NULL;
	team_state none = {0};
	int rc;

	if (out == NULL || in == NULL || in->pool == NULL || in->now == NULL)
		return tau_error_set(TAU_EINVAL, "budget decision: missing input");
	b.d = calloc(1, sizeof(*b.d));
	managed = cJSON_CreateArray();
	if (b.d == NULL || managed == NULL) {
		free(b.d);
		cJSON_Delete(managed);
		return tau_budget_nomem();
	}
	b.d->state = TAU_BUDGET_REASON_NO_TEAM;
	c.in = in;
	c.b = &b;
	c.ws_held = calloc(in->n_workspaces + 1, sizeof(*c.ws_held));
	if (c.ws_held == NULL) {
		b.rc = tau_budget_nomem();
		goto done;
	}
	if (in->cluster == NULL ||
	    tau_json_find(in->cluster, "metadata.deletionTimestamp") != NULL) {
		if (!in->ever_established) { /* P5: nothing is written before the inventory is */
			b.d->summary = tau_budget_fmt(
			        "TauCluster cluster %s: waiting for the inventory",
			        in->cluster == NULL ? "does not exist" : "is being deleted");
			goto done;
		}
		rc = cluster_gone(&c);
		if (rc < 0 && b.rc == 0)
			b.rc = rc;
		goto done;
	}
	c.reconcile =
	        tau_budget_streq(tau_json_str(in->cluster, "spec.managementMode"), "Reconcile");
	c.writes_allowed = c.reconcile && in->ever_established;
	c.capacity = tau_json_str(in->cluster, "spec.queues.capacityTeamRef.name");
	if (c.capacity != NULL && c.capacity[0] == '\0')
		c.capacity = NULL;
	c.cluster_uid = tau_json_str(in->cluster, "metadata.uid");
	if (c.cluster_uid != NULL && c.cluster_uid[0] == '\0')
		c.cluster_uid = NULL; /* no owner: we own no ResourceFlavor (never an error) */
	c.selector = tau_json_find(in->cluster, "spec.nodes.selector");
	if (tau_budget_flavor_selector_check(c.selector) < 0)
		tau_str_printf(c.selector_problem, sizeof(c.selector_problem), "%s",
		               tau_error_last()->msg);
	previous_teams(&c);
	explicit_teams(&c, managed);
	if (c.effective != NULL || c.capacity != NULL || c.retiring) {
		rc = decide_team(&c, managed);
		if (rc < 0 && b.rc == 0)
			b.rc = rc;
	} else {
		set_state(&none, TAU_BUDGET_REASON_NO_TEAM, "False", "Ready", "no capacity team");
		orphan_queues(&c, NULL, 0);
		cluster_status(&c, &none, managed, false, "");
		b.d->summary = tau_budget_fmt("no capacity team: %zu workspace queues to remove",
		                              b.d->n_writes);
	}
	other_teams(&c);
	capacity_finalizers(&c);
	workspaces_unlinked(&c);
	if (c.explicit_summary != NULL && b.d->summary != NULL) {
		char *sum = tau_budget_fmt("%s; %s", b.d->summary, c.explicit_summary);

		free(b.d->summary);
		b.d->summary = sum;
	}
	if (!in->ever_established && established_before(in->cluster))
		keep_established_status(b.d);
done:
	for (size_t i = 0; c.ws_held != NULL && i < in->n_workspaces; i++)
		free(c.ws_held[i]);
	free(c.ws_held);
	free(c.explicit_wanted);
	free(c.ws_linked);
	free(c.explicit_summary);
	cJSON_Delete(managed);
	if (b.rc < 0) {
		tau_budget_decision_free(b.d);
		return b.rc;
	}
	*out = b.d;
	return 0;
}
