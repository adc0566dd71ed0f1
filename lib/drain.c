/*
 * drain.c - what holds a TauWorkspace's drain (tau/drain.h): reading the
 * sources from their JSON, when each has finished, whether it routes through
 * the workspace's queues, and how it is named to people.
 */
#include "tau/drain.h"

#include "tau/error.h"
#include "tau/json.h"

#include <stdio.h>
#include <string.h>

const tau_kube_resource tau_drain_resources[TAU_DRAIN_KINDS] = {
        [TAU_DRAIN_WORKLOAD] = {"kueue.x-k8s.io", "v1beta2", "workloads", true},
        [TAU_DRAIN_JOB] = {"batch", "v1", "jobs", true},
        [TAU_DRAIN_RAYJOB] = {"ray.io", "v1", "rayjobs", true},
        [TAU_DRAIN_RAYSERVICE] = {"ray.io", "v1", "rayservices", true},
        [TAU_DRAIN_DEPLOYMENT] = {"apps", "v1", "deployments", true},
};

static const char *const kind_names[TAU_DRAIN_KINDS] = {"Workload", "Job", "RayJob", "RayService",
                                                        "Deployment"};
static const char *const kind_plurals[TAU_DRAIN_KINDS] = {"Workloads", "Jobs", "RayJobs",
                                                          "RayServices", "Deployments"};

const char *tau_drain_kind_name(tau_drain_kind kind)
{
	return (int)kind >= 0 && kind < TAU_DRAIN_KINDS ? kind_names[kind] : "unknown";
}

const char *tau_drain_kind_plural(tau_drain_kind kind)
{
	return (int)kind >= 0 && kind < TAU_DRAIN_KINDS ? kind_plurals[kind] : "unknown";
}

/* Absent APIs that are tolerated: Kueue (no Workloads can exist) and the optional Ray APIs. */
bool tau_drain_absent_tolerated(tau_drain_kind k)
{
	return k == TAU_DRAIN_WORKLOAD || k == TAU_DRAIN_RAYJOB || k == TAU_DRAIN_RAYSERVICE;
}

/* True if status.conditions holds one of the types with status "True". */
static bool condition_true(const cJSON *obj, const char *type_a, const char *type_b)
{
	const cJSON *conds = NULL, *c;

	if (tau_json_get_array(&conds, obj, "status.conditions") < 0)
		return false;
	cJSON_ArrayForEach(c, conds)
	{
		const char *t = NULL, *s = NULL;

		if (tau_json_get_string(&t, c, "type") < 0 ||
		    tau_json_get_string(&s, c, "status") < 0)
			continue;
		if (strcmp(s, "True") == 0 &&
		    (strcmp(t, type_a) == 0 || (type_b != NULL && strcmp(t, type_b) == 0)))
			return true;
	}
	return false;
}

int tau_drain_source_from_json(tau_drain_source *out, tau_drain_kind kind, const cJSON *obj)
{
	tau_drain_source s;
	int rc;

	memset(&s, 0, sizeof(s));
	if (out == NULL || obj == NULL || (int)kind < 0 || kind >= TAU_DRAIN_KINDS)
		return tau_error_set(TAU_EINVAL, "drain source: bad arguments");
	s.kind = kind;
	rc = tau_json_get_string(&s.name, obj, "metadata.name");
	if (rc < 0)
		return tau_error_set(rc == -TAU_ETYPE ? TAU_ETYPE : TAU_EINVAL,
		                     "%s: metadata.name missing or not a string", kind_names[kind]);
	switch (kind) {
	case TAU_DRAIN_WORKLOAD:
		rc = tau_json_get_string(&s.queue, obj, "spec.queueName");
		if (rc < 0 && rc != -TAU_ENOTFOUND)
			return tau_error_set(TAU_ETYPE,
			                     "Workload %s: spec.queueName is not a string", s.name);
		if (rc < 0)
			s.queue = NULL;
		s.finished = condition_true(obj, "Finished", NULL);
		break;
	case TAU_DRAIN_JOB:
		s.queue = tau_json_label(obj, TAU_DRAIN_LABEL_QUEUE_NAME);
		s.finished = condition_true(obj, "Complete", "Failed");
		break;
	case TAU_DRAIN_RAYJOB:
		s.queue = tau_json_label(obj, TAU_DRAIN_LABEL_QUEUE_NAME);
		rc = tau_json_get_string(&s.job_deployment_status, obj,
		                         "status.jobDeploymentStatus");
		if (rc < 0 && rc != -TAU_ENOTFOUND)
			return tau_error_set(
			        TAU_ETYPE, "RayJob %s: status.jobDeploymentStatus is not a string",
			        s.name);
		if (rc < 0)
			s.job_deployment_status = NULL;
		break;
	case TAU_DRAIN_RAYSERVICE:
		s.queue = tau_json_label(obj, TAU_DRAIN_LABEL_QUEUE_NAME);
		break;
	default:
		s.queue = tau_json_label(obj, TAU_DRAIN_LABEL_QUEUE_NAME);
		s.template_queue =
		        tau_json_member_str(tau_json_find(obj, "spec.template.metadata.labels"),
		                            TAU_DRAIN_LABEL_QUEUE_NAME);
		s.template_managed =
		        tau_json_member_str(tau_json_find(obj, "spec.template.metadata.labels"),
		                            TAU_DRAIN_LABEL_KUEUE_MANAGED);
		break;
	}
	*out = s;
	return 0;
}

bool tau_drain_source_finished(const tau_drain_source *src)
{
	const char *st;

	switch (src->kind) {
	case TAU_DRAIN_WORKLOAD:
	case TAU_DRAIN_JOB:
		return src->finished;
	case TAU_DRAIN_RAYJOB:
		/* As Kueue: only these two are terminal; a failed driver awaiting retry is not. */
		st = src->job_deployment_status;
		return st != NULL && (strcmp(st, "Complete") == 0 || strcmp(st, "Failed") == 0);
	default:
		/* RayServices and Deployments have no terminal state. */
		return false;
	}
}

static bool in_queues(const char *const *queues, size_t n, const char *q)
{
	if (q == NULL || q[0] == '\0')
		return false;
	for (size_t i = 0; i < n; i++)
		if (queues[i] != NULL && strcmp(queues[i], q) == 0)
			return true;
	return false;
}

bool tau_drain_source_routed(const tau_drain_source *s, const char *const *queues, size_t n)
{
	if (in_queues(queues, n, s->queue))
		return true;
	/* Kueue copies the queue label into the pod template and marks it managed. */
	return s->kind == TAU_DRAIN_DEPLOYMENT && s->template_managed != NULL &&
	       strcmp(s->template_managed, "true") == 0 && in_queues(queues, n, s->template_queue);
}

void tau_drain_describe(char *buf, size_t len, const char *ns, const tau_drain_source *s)
{
	switch (s->kind) {
	case TAU_DRAIN_RAYJOB:
		snprintf(buf, len, "RayJob %s/%s (jobDeploymentStatus %s)", ns, s->name,
		         s->job_deployment_status != NULL ? s->job_deployment_status : "unset");
		break;
	case TAU_DRAIN_RAYSERVICE:
	case TAU_DRAIN_DEPLOYMENT:
		snprintf(buf, len, "%s %s/%s (no terminal state: delete it)",
		         tau_drain_kind_name(s->kind), ns, s->name);
		break;
	default:
		snprintf(buf, len, "%s %s/%s (unfinished)", tau_drain_kind_name(s->kind), ns,
		         s->name);
		break;
	}
}
