/*
 * tau/drain.h - what holds a TauWorkspace's drain: the work that still routes
 * through its Kueue LocalQueues and has not finished.
 *
 * One set of rules for the two places that need them: the aggregator's
 * workspace controller (aggregator/workspace/drain.c decides whether cleanup
 * may proceed) and `tau workspace delete` (which lists what the finalizer
 * waits for).  A source holds the route when its queue is one of the
 * workspace's queues (for a Deployment also the pod template's queue label
 * with kueue.x-k8s.io/managed "true") and it has not finished: Workloads
 * until condition Finished, Jobs until Complete or Failed, RayJobs until
 * status.jobDeploymentStatus is Complete or Failed, RayServices and
 * Deployments while they exist.  No I/O.
 */
#ifndef TAU_DRAIN_H
#define TAU_DRAIN_H

#include "tau/kube.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** Kueue's routing labels. */
#define TAU_DRAIN_LABEL_QUEUE_NAME    "kueue.x-k8s.io/queue-name"
#define TAU_DRAIN_LABEL_KUEUE_MANAGED "kueue.x-k8s.io/managed"

/** Kinds of work that can hold a route. */
typedef enum tau_drain_kind {
	TAU_DRAIN_WORKLOAD = 0, /**< kueue.x-k8s.io Workload (spec.queueName) */
	TAU_DRAIN_JOB,          /**< batch/v1 Job */
	TAU_DRAIN_RAYJOB,       /**< ray.io RayJob (optional API) */
	TAU_DRAIN_RAYSERVICE,   /**< ray.io RayService (optional API) */
	TAU_DRAIN_DEPLOYMENT,   /**< apps/v1 Deployment managed by Kueue */
	TAU_DRAIN_KINDS
} tau_drain_kind;

/** The API of each kind, indexed by tau_drain_kind. */
extern const tau_kube_resource tau_drain_resources[TAU_DRAIN_KINDS];

/** One observed object.  Strings borrowed from its JSON. */
typedef struct tau_drain_source {
	tau_drain_kind kind;
	const char *name;
	/** Workload: spec.queueName; others: metadata.labels[kueue.x-k8s.io/queue-name]. */
	const char *queue;
	/** Deployment: spec.template.metadata.labels[kueue.x-k8s.io/queue-name]. */
	const char *template_queue;
	/** Deployment: spec.template.metadata.labels[kueue.x-k8s.io/managed]. */
	const char *template_managed;
	/** Workload: condition Finished=True; Job: condition Complete or Failed True. */
	bool finished;
	/** RayJob: status.jobDeploymentStatus (NULL when unset). */
	const char *job_deployment_status;
} tau_drain_source;

/**
 * Read a source from its Kubernetes JSON.  Strings are lent from obj.
 * @return 0; -TAU_EINVAL (no metadata.name, kind out of range); -TAU_ETYPE.
 */
int tau_drain_source_from_json(tau_drain_source *out, tau_drain_kind kind, const cJSON *obj);

/** True if this source finished and no longer holds its route (RayService/Deployment never). */
bool tau_drain_source_finished(const tau_drain_source *src);

/** True if the source routes through one of `queues` (n of them; NULL entries ignored). */
bool tau_drain_source_routed(const tau_drain_source *src, const char *const *queues, size_t n);

/** True when a kind's API may be absent without blocking (Workloads, RayJobs, RayServices). */
bool tau_drain_absent_tolerated(tau_drain_kind kind);

/** "Workload", "Job", ... and "Workloads", "Jobs", ...; "unknown" out of range. */
const char *tau_drain_kind_name(tau_drain_kind kind);
const char *tau_drain_kind_plural(tau_drain_kind kind);

/**
 * Describe a holding source for people: "Job NS/NAME (unfinished)", "RayJob NS/NAME
 * (jobDeploymentStatus Running)", "Deployment NS/NAME (no terminal state: delete it)".
 */
void tau_drain_describe(char *buf, size_t len, const char *ns, const tau_drain_source *src);

#endif /* TAU_DRAIN_H */
