/*
 * summary.c - the read API: workspace summaries from the informer cache.
 *
 * The one idea: reads never touch the API server or the worker; they copy
 * from the workspaces informer's cache, which is filled on every replica,
 * so a follower answers as well as the leader.
 */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/mem.h"

#include <stdlib.h>
#include <string.h>

/* Read API                                                                                    */

void tau_ws_summary_clear(tau_ws_summary *s)
{
	if (s == NULL)
		return;
	tau_free_many(s->name, s->phase, s->namespace_name, s->local_queue, s->cluster_queue);
	for (size_t i = 0; i < s->n_conditions; i++) {
		const tau_ws_summary_condition *c = &s->conditions[i];

		tau_free_many(c->type, c->status, c->reason, c->message);
	}
	free(s->conditions);
	memset(s, 0, sizeof(*s));
}

void tau_ws_summaries_free(tau_ws_summary *s, size_t n)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		tau_ws_summary_clear(&s[i]);
	free(s);
}

static bool dup_ok(char **dst, const char *src)
{
	*dst = src != NULL ? strdup(src) : NULL;
	return src == NULL || *dst != NULL;
}

int tau_ws_summary_from_json(tau_ws_summary *out, const cJSON *obj)
{
	tau_ws_summary s = {0};
	const cJSON *conds, *c;
	bool ok;

	if (tau_ws_str(obj, "metadata.name") == NULL)
		return tau_error_set(TAU_EINVAL, "workspace without metadata.name");
	tau_json_get_int(&s.generation, obj, "metadata.generation");
	tau_json_get_int(&s.observed_generation, obj, "status.observedGeneration");
	s.deleting = tau_ws_str(obj, "metadata.deletionTimestamp") != NULL;
	ok = dup_ok(&s.name, tau_ws_str(obj, "metadata.name")) &&
	     dup_ok(&s.phase, tau_ws_str(obj, "status.phase")) &&
	     dup_ok(&s.namespace_name, tau_ws_str(obj, "status.target.resolvedNamespace")) &&
	     dup_ok(&s.local_queue, tau_ws_str(obj, "status.queue.localQueue")) &&
	     dup_ok(&s.cluster_queue, tau_ws_str(obj, "status.queue.clusterQueue"));
	conds = tau_json_find(obj, "status.conditions");
	if (ok && cJSON_IsArray(conds) && cJSON_GetArraySize(conds) > 0) {
		s.conditions = calloc((size_t)cJSON_GetArraySize(conds), sizeof(*s.conditions));
		ok = s.conditions != NULL;
		cJSON_ArrayForEach(c, conds)
		{
			tau_ws_summary_condition *sc;

			if (!ok)
				break;
			sc = &s.conditions[s.n_conditions++];
			ok = dup_ok(&sc->type, tau_ws_str(c, "type")) &&
			     dup_ok(&sc->status, tau_ws_str(c, "status")) &&
			     dup_ok(&sc->reason, tau_ws_str(c, "reason")) &&
			     dup_ok(&sc->message, tau_ws_str(c, "message"));
			if (tau_ws_namespace_time_ms(&sc->last_transition_unix_ms,
			                             tau_ws_str(c, "lastTransitionTime")) != 0)
				sc->last_transition_unix_ms = 0;
		}
	}
	if (!ok) {
		tau_ws_summary_clear(&s);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	*out = s;
	return 0;
}

int tau_ws_controller_list(tau_ws_summary **out, size_t *n, tau_ws_controller *ctl)
{
	cJSON *all = NULL;
	tau_ws_summary *arr = NULL;
	size_t count = 0, cap;
	const cJSON *it;
	int rc;

	if ((rc = tau_kube_informer_snapshot(&all, ctl->inf[WS_INF_WORKSPACES])) != 0)
		return rc;
	cap = (size_t)cJSON_GetArraySize(all);
	if (cap > 0 && (arr = calloc(cap, sizeof(*arr))) == NULL) {
		cJSON_Delete(all);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	/* The snapshot is sorted by key, and the key is the name in one namespace. */
	cJSON_ArrayForEach(it, all)
	{
		if (tau_ws_summary_from_json(&arr[count], it) == 0)
			count++;
		else if (tau_error_last()->code == TAU_ENOMEM) {
			tau_ws_summaries_free(arr, count);
			cJSON_Delete(all);
			return -TAU_ENOMEM;
		}
	}
	cJSON_Delete(all);
	if (count == 0) {
		free(arr);
		arr = NULL;
	}
	*out = arr;
	*n = count;
	return 0;
}

int tau_ws_controller_get(tau_ws_summary *out, tau_ws_controller *ctl, const char *name)
{
	cJSON *obj = NULL;
	int rc;

	if ((rc = tau_kube_informer_get(&obj, ctl->inf[WS_INF_WORKSPACES], ctl->system_namespace,
	                                name)) != 0)
		return rc;
	rc = tau_ws_summary_from_json(out, obj);
	cJSON_Delete(obj);
	return rc;
}
