/*
 * drain.c - drain decision and old-namespace plan for TauWorkspace
 * deletion and retargeting.
 *
 * The one idea: routing objects outlive the workspace's wish to leave as
 * long as anything may still be admitted through them, and we decide that
 * from what we can prove.  A kind we could not list blocks (we cannot prove
 * it is empty); only optional APIs that are not installed are skipped.
 * Identity is handled before access: the plan revokes an obsolete
 * ServiceAccount first and makes every later grant conditional on that
 * revocation being confirmed, so a researcher is never granted a namespace
 * where a revoked identity could still run.
 */
#include "drain.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Blocking sources named in one message before "and N more". */
#define NAMED_MAX 4

int tau_ws_drain_source_from_json(tau_ws_source *out, tau_ws_source_kind kind, const cJSON *obj)
{
	return tau_drain_source_from_json(out, kind, obj);
}

bool tau_ws_drain_source_finished(const tau_ws_source *src)
{
	return tau_drain_source_finished(src);
}

/* Does the source route through one of the workspace's queues? */
static bool routed(const tau_ws_drain_input *in, const tau_ws_source *s)
{
	return tau_drain_source_routed(s, in->queues, in->n_queues);
}

int tau_ws_drain_decide(tau_ws_drain_decision *out, const tau_ws_drain_input *in)
{
	char *msg;
	size_t len, used, named = 0;
	int n;

	if (out == NULL || in == NULL || in->namespace_name == NULL ||
	    (in->n_sources > 0 && in->sources == NULL) || (in->n_queues > 0 && in->queues == NULL))
		return tau_error_set(TAU_EINVAL, "drain decision: missing input");
	memset(out, 0, sizeof(*out));
	msg = out->refusal.message;
	len = sizeof(out->refusal.message);

	/* A kind we cannot list blocks: we cannot prove it holds no route. */
	for (int k = 0; k < TAU_WS_SRC_KINDS; k++) {
		bool blocks = in->api[k] == TAU_WS_API_UNREADABLE ||
		              (in->api[k] == TAU_WS_API_ABSENT && !tau_drain_absent_tolerated(k));

		if (!blocks)
			continue;
		tau_ws_namespace_refuse(&out->refusal, TAU_WS_REASON_DISCOVERY_FAILED, true,
		                        "cleanup of namespace %s waits until %s can be listed: %s",
		                        in->namespace_name, tau_drain_kind_plural(k),
		                        in->api[k] == TAU_WS_API_ABSENT
		                                ? "the API is not served"
		                                : (in->api_error[k] != NULL ? in->api_error[k]
		                                                            : "the list failed"));
		return 0;
	}

	for (size_t i = 0; i < in->n_sources; i++) {
		const tau_ws_source *s = &in->sources[i];

		if ((int)s->kind < 0 || s->kind >= TAU_WS_SRC_KINDS || s->name == NULL)
			continue;
		if (in->api[s->kind] != TAU_WS_API_LISTED)
			continue;
		if (routed(in, s) && !tau_ws_drain_source_finished(s))
			out->n_blocking++;
	}
	if (out->n_blocking == 0) {
		out->may_cleanup = true;
		return 0;
	}
	tau_ws_namespace_refuse(
	        &out->refusal, TAU_WS_REASON_DRAIN_PENDING, true,
	        "cleanup of namespace %s waits for %zu source%s still routed through the "
	        "workspace queue: ",
	        in->namespace_name, out->n_blocking, out->n_blocking == 1 ? "" : "s");
	used = strlen(msg);
	for (size_t i = 0; i < in->n_sources && named < NAMED_MAX && used + 1 < len; i++) {
		const tau_ws_source *s = &in->sources[i];
		char d[400];

		if ((int)s->kind < 0 || s->kind >= TAU_WS_SRC_KINDS || s->name == NULL ||
		    in->api[s->kind] != TAU_WS_API_LISTED || !routed(in, s) ||
		    tau_ws_drain_source_finished(s))
			continue;
		tau_drain_describe(d, sizeof(d), in->namespace_name, s);
		n = snprintf(msg + used, len - used, "%s%s", named > 0 ? "; " : "", d);
		if (n > 0)
			used += (size_t)n < len - used ? (size_t)n : len - used - 1;
		named++;
	}
	if (out->n_blocking > named && used + 1 < len)
		snprintf(msg + used, len - used, "; and %zu more", out->n_blocking - named);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Plan                                                                                        */

static const char *const step_names[] = {"revoke-service-account",
                                         "remove-researcher-binding",
                                         "grant-researcher-binding",
                                         "wait-revocation",
                                         "wait-drain",
                                         "delete-local-queue",
                                         "delete-service-account",
                                         "delete-namespace",
                                         "release-namespace",
                                         "remove-finalizer"};

const char *tau_ws_drain_step_name(tau_ws_step_kind kind)
{
	if ((int)kind < 0 || (size_t)kind >= sizeof(step_names) / sizeof(step_names[0]))
		return "unknown";
	return step_names[kind];
}

bool tau_ws_drain_identity_changed(const tau_ws_old_ns_input *in)
{
	if (in == NULL || in->sa_name == NULL)
		return false;
	return !in->wi_wanted || !tau_str_eq_or_both_null(in->sa_name, in->wi_sa_name) ||
	       !tau_str_eq_or_both_null(in->sa_client_id, in->wi_client_id);
}

/* The plan's message; truncation is fine (it is bounded prose, not data). */
static void say(tau_ws_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(tau_ws_plan *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->message, sizeof(p->message), fmt, ap);
	va_end(ap);
}

static void add(tau_ws_plan *p, tau_ws_step_kind kind, tau_ws_step_when when, const char *ns,
                const char *name)
{
	tau_ws_step *s = &p->steps[p->n++];

	s->kind = kind;
	s->when = when;
	s->namespace_name = ns;
	s->name = name;
}

int tau_ws_drain_plan(tau_ws_plan *out, const tau_ws_old_ns_input *in)
{
	const char *ns;
	bool changed, revoke = false, cleanup;
	tau_ws_step_when after;

	if (out == NULL || in == NULL || in->namespace_name == NULL || in->drain == NULL ||
	    (in->n_local_queues > 0 && in->local_queues == NULL))
		return tau_error_set(TAU_EINVAL, "old namespace plan: missing input");
	/* Worst case: revoke, two binding steps, LQs, SA, binding, namespace, finalizer. */
	if (in->n_local_queues > TAU_WS_PLAN_MAX - 8)
		return tau_error_set(TAU_ETOOBIG,
		                     "old namespace plan: %zu LocalQueues exceed the plan's room",
		                     in->n_local_queues);
	memset(out, 0, sizeof(*out));
	ns = in->namespace_name;
	changed = tau_ws_drain_identity_changed(in);
	cleanup = in->drain->may_cleanup;

	if (changed && in->sa_terminating) {
		/* Revocation asked for but not confirmed: no researcher access meanwhile. */
		if (in->binding_present)
			add(out, TAU_WS_STEP_REMOVE_RESEARCHER_BINDING, TAU_WS_WHEN_ALWAYS, ns,
			    in->binding_name);
		add(out, TAU_WS_STEP_WAIT_REVOCATION, TAU_WS_WHEN_ALWAYS, ns, in->sa_name);
		say(out,
		    "obsolete ServiceAccount %s/%s is terminating; researcher access to %s is "
		    "withheld until its revocation is confirmed",
		    ns, in->sa_name, ns);
		return 0;
	}
	if (changed) {
		add(out, TAU_WS_STEP_REVOKE_SERVICE_ACCOUNT, TAU_WS_WHEN_ALWAYS, ns, in->sa_name);
		revoke = true;
		if (in->binding_present && !cleanup)
			add(out, TAU_WS_STEP_REMOVE_RESEARCHER_BINDING, TAU_WS_WHEN_NOT_REVOKED, ns,
			    in->binding_name);
	}
	after = revoke ? TAU_WS_WHEN_REVOKED : TAU_WS_WHEN_ALWAYS;

	if (!cleanup) {
		/* Draining: the current researcher may inspect or cancel what remains. */
		if (in->binding_wanted)
			add(out, TAU_WS_STEP_GRANT_RESEARCHER_BINDING, after, ns, in->binding_name);
		else if (in->binding_present)
			add(out, TAU_WS_STEP_REMOVE_RESEARCHER_BINDING, TAU_WS_WHEN_ALWAYS, ns,
			    in->binding_name);
		add(out, TAU_WS_STEP_WAIT_DRAIN, TAU_WS_WHEN_ALWAYS, ns, NULL);
		say(out, "%s%s", revoke ? "obsolete workload identity revoked first; " : "",
		    in->drain->refusal.message[0] != '\0' ? in->drain->refusal.message
		                                          : "cleanup waits for the drain");
		return 0;
	}

	for (size_t i = 0; i < in->n_local_queues; i++)
		add(out, TAU_WS_STEP_DELETE_LOCAL_QUEUE, after, ns, in->local_queues[i]);
	if (in->sa_name != NULL && !changed)
		add(out, TAU_WS_STEP_DELETE_SERVICE_ACCOUNT, after, ns, in->sa_name);
	if (in->binding_present)
		add(out, TAU_WS_STEP_REMOVE_RESEARCHER_BINDING, TAU_WS_WHEN_ALWAYS, ns,
		    in->binding_name);
	if (in->namespace_owned && !in->namespace_shared)
		add(out,
		    in->deleting ? TAU_WS_STEP_DELETE_NAMESPACE : TAU_WS_STEP_RELEASE_NAMESPACE,
		    after, ns, ns);
	if (in->deleting)
		add(out, TAU_WS_STEP_REMOVE_FINALIZER, after, NULL, NULL);
	out->completes = true;
	say(out, "%snamespace %s drained; cleaning up",
	    revoke ? "obsolete workload identity revoked first; " : "", ns);
	return 0;
}
