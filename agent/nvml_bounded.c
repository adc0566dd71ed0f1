/*
 * nvml_bounded.c - the NVML probe with a deadline: on a thread of its own, given up on
 * when the driver does not answer.
 *
 * The one idea: a hung driver must not hang the agent.  The probe runs on a detached
 * thread; past the deadline the caller gets "not probed" and the thread is abandoned (it
 * frees its job when NVML returns); until then no new probe starts, so at most one thread
 * is ever stuck inside NVML.
 */
#include "nvml.h"

#include "hostprobe.h"

#include "tau/error.h"
#include "tau/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One probe handed to a thread; freed by whichever side is last (the waiter, or the thread
 * once the waiter gave up on it). */
typedef struct nvml_job {
	pthread_mutex_t lock;
	pthread_cond_t done_cond;
	bool done;
	bool abandoned;
	int rc;
	char *library;
	tau_agent_nvml result;
} nvml_job;

/* True while an abandoned probe's thread is still inside NVML. */
static atomic_bool nvml_stuck;

static void job_free(nvml_job *job)
{
	pthread_mutex_destroy(&job->lock);
	pthread_cond_destroy(&job->done_cond);
	tau_agent_nvml_free(&job->result);
	free(job->library);
	free(job);
}

static void *nvml_thread(void *arg)
{
	nvml_job *job = arg;
	int rc = tau_agent_nvml_probe(&job->result, job->library);
	bool abandoned;

	pthread_mutex_lock(&job->lock);
	job->rc = rc;
	job->done = true;
	abandoned = job->abandoned;
	pthread_cond_signal(&job->done_cond);
	pthread_mutex_unlock(&job->lock);
	if (abandoned) {
		job_free(job);
		atomic_store(&nvml_stuck, false);
	}
	return NULL;
}

int tau_agent_nvml_probe_bounded(tau_agent_nvml *n, const char *library, int timeout_ms)
{
	struct timespec deadline;
	pthread_attr_t attr;
	pthread_t thread;
	nvml_job *job;
	int rc = 0, wait_rc = 0;

	tau_agent_nvml_free(n);
	if (atomic_load(&nvml_stuck)) {
		tau_agent_note_set(&n->note,
		                   "NVML not probed: an earlier probe is still inside NVML");
		return 0;
	}
	job = calloc(1, sizeof(*job));
	if (job == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory probing NVML");
	tau_agent_nvml_init(&job->result);
	pthread_mutex_init(&job->lock, NULL);
	pthread_cond_init(&job->done_cond, NULL);
	job->library = strdup(library != NULL ? library : "libnvidia-ml.so.1");
	if (job->library == NULL) {
		job_free(job);
		return tau_error_set(TAU_ENOMEM, "out of memory probing NVML");
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, nvml_thread, job) != 0) {
		pthread_attr_destroy(&attr);
		job_free(job);
		/* No thread to spare: probe inline rather than not at all. */
		return tau_agent_nvml_probe(n, library);
	}
	pthread_attr_destroy(&attr);
	tau_thread_deadline_ms(&deadline, CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&job->lock);
	while (!job->done && wait_rc != ETIMEDOUT)
		wait_rc = pthread_cond_timedwait(&job->done_cond, &job->lock, &deadline);
	if (!job->done) {
		job->abandoned = true;
		atomic_store(&nvml_stuck, true);
		pthread_mutex_unlock(&job->lock);
		tau_agent_note_set(&n->note,
		                   "NVML did not answer within %d ms (driver hung?); not "
		                   "probed until it does",
		                   timeout_ms);
		return 0;
	}
	pthread_mutex_unlock(&job->lock);
	rc = job->rc;
	*n = job->result; /* moved: the job no longer owns it */
	tau_agent_nvml_init(&job->result);
	job_free(job);
	return rc;
}
