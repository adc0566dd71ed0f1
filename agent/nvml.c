/*
 * nvml.c - GPU health, identity and versions from NVML through dlopen.
 *
 * The one idea: every NVML entry point beyond the four required ones is looked up on its
 * own and may be missing; a missing one is named in missing_symbols and leaves its fact
 * unknown (-1 / NULL), so an old driver gives fewer facts, never wrong ones.
 *
 * Health, per GPU: NVML returned its handle; no call said NVML_ERROR_GPU_IS_LOST (the GPU
 * fell off the bus); no row remap failed (the GPU needs service); no rows wait to be remapped
 * and no page retirement waits (both need a GPU reset or reboot before the memory is trusted).
 * Retired page counts and remapped rows are reported as numbers, not judged.  XID events are
 * not read: they need a long-lived NVML event set, and NVIDIA's device plugin already takes
 * critical XIDs into its own health, which kubelet's pod-resources allocatable list shows.
 *
 * NVML types are declared here from the C API's published signatures: nvmlReturn_t is an
 * int-sized enum (0 success), nvmlDevice_t an opaque pointer, nvmlEnableState_t an int.
 */
#include "nvml.h"

#include "hostprobe.h"

#include "tau/error.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Return codes used here (nvmlReturn_t). */
#define NVML_SUCCESS                 0
#define NVML_ERROR_NOT_SUPPORTED     3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST       15
/* nvmlPageRetirementCause_t */
#define NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS 0
#define NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR           1
/* Buffer sizes NVML documents for its string getters. */
#define NVML_UUID_BUFFER   96
#define NVML_NAME_BUFFER   96
#define NVML_DRIVER_BUFFER 80
/* Above this count the answer is bogus and ignored. */
#define NVML_COUNT_LIMIT 1024

typedef void *nvml_device;
typedef int (*nvml_void_fn)(void);
typedef int (*nvml_count_fn)(unsigned int *count);
typedef int (*nvml_handle_fn)(unsigned int index, nvml_device *device);
typedef int (*nvml_device_string_fn)(nvml_device device, char *buf, unsigned int length);
typedef int (*nvml_system_string_fn)(char *buf, unsigned int length);
typedef int (*nvml_int_fn)(int *value);
typedef int (*nvml_remapped_fn)(nvml_device device, unsigned int *corr, unsigned int *unc,
                                unsigned int *pending, unsigned int *failure);
typedef int (*nvml_retired_fn)(nvml_device device, int cause, unsigned int *count,
                               unsigned long long *addresses);
typedef int (*nvml_enable_fn)(nvml_device device, int *state);
typedef int (*nvml_mig_fn)(nvml_device device, unsigned int *current, unsigned int *pending);

/* The library's entry points; NULL where it lacks one. */
typedef struct nvml_api {
	nvml_void_fn init, shutdown;
	nvml_count_fn count;
	nvml_handle_fn handle;
	nvml_device_string_fn uuid, name;
	nvml_system_string_fn driver_version;
	nvml_int_fn cuda_version;
	nvml_remapped_fn remapped_rows;
	nvml_retired_fn retired_pages;
	nvml_enable_fn retired_pending;
	nvml_mig_fn mig_mode;
} nvml_api;

/* dlsym gives an object pointer; copy its bits into a function pointer (POSIX). */
static bool load_symbol(void *lib, const char *name, void *fn_out, size_t fn_size)
{
	void *sym = dlsym(lib, name);

	if (sym == NULL || fn_size != sizeof(sym))
		return false;
	memcpy(fn_out, &sym, fn_size);
	return true;
}

static void optional_symbol(tau_agent_nvml *n, void *lib, const char *name, void *fn_out,
                            size_t fn_size)
{
	if (load_symbol(lib, name, fn_out, fn_size))
		return;
	if (n->n_missing < TAU_AGENT_NVML_MAX_MISSING)
		n->missing_symbols[n->n_missing++] = name;
}

void tau_agent_nvml_init(tau_agent_nvml *n)
{
	memset(n, 0, sizeof(*n));
	n->cuda_version = -1;
}

static void gpus_free(tau_agent_gpu *gpus, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		free(gpus[i].uuid);
		free(gpus[i].name);
		free(gpus[i].reason);
	}
	free(gpus);
}

void tau_agent_nvml_free(tau_agent_nvml *n)
{
	if (n == NULL)
		return;
	free(n->note);
	free(n->driver_version);
	gpus_free(n->gpus, n->n_gpus);
	tau_agent_nvml_init(n);
}

int64_t tau_agent_nvml_healthy(const tau_agent_nvml *n)
{
	int64_t healthy = 0;

	for (size_t i = 0; i < n->n_gpus; i++)
		healthy += n->gpus[i].healthy;
	return healthy;
}

/* A string getter's answer as an owned copy; *lost set on NVML_ERROR_GPU_IS_LOST. */
static int device_string(char **out, nvml_device_string_fn fn, nvml_device dev, size_t cap,
                         int *lost)
{
	char buf[NVML_UUID_BUFFER > NVML_NAME_BUFFER ? NVML_UUID_BUFFER : NVML_NAME_BUFFER];
	int ret;

	if (fn == NULL)
		return 0;
	memset(buf, 0, sizeof(buf));
	ret = fn(dev, buf, (unsigned int)(cap < sizeof(buf) ? cap : sizeof(buf)));
	if (ret == NVML_ERROR_GPU_IS_LOST)
		*lost = 1;
	if (ret != NVML_SUCCESS)
		return 0;
	buf[sizeof(buf) - 1] = '\0';
	*out = strdup(buf);
	return *out != NULL ? 0 : tau_error_set(TAU_ENOMEM, "out of memory reading NVML");
}

/* The first reason a GPU is not healthy, or NULL. */
static const char *unhealthy_reason(const tau_agent_gpu *g)
{
	if (g->lost == 1)
		return "fell off the bus (NVML: GPU is lost)";
	if (g->remap_failure == 1)
		return "row remapping failed: the GPU needs service";
	if (g->remap_pending == 1)
		return "row remap pending: the GPU needs a reset";
	if (g->retired_pending == 1)
		return "page retirement pending: the GPU needs a reset";
	return NULL;
}

static int probe_gpu(tau_agent_gpu *g, const nvml_api *api, unsigned int index)
{
	nvml_device dev = NULL;
	char why[96];
	int ret;

	g->index = index;
	g->lost = g->remap_pending = g->remap_failure = g->retired_pending = g->mig_mode = -1;
	g->remapped_correctable = g->remapped_uncorrectable = -1;
	g->retired_pages_sbe = g->retired_pages_dbe = -1;
	ret = api->handle(index, &dev);
	if (ret != NVML_SUCCESS) {
		if (ret == NVML_ERROR_GPU_IS_LOST)
			g->lost = 1;
		snprintf(why, sizeof(why), "NVML gives no handle (NVML error %d)", ret);
		g->reason = strdup(g->lost == 1 ? unhealthy_reason(g) : why);
		return g->reason != NULL ? 0 : tau_error_set(TAU_ENOMEM, "out of memory");
	}
	g->lost = 0;
	if (device_string(&g->uuid, api->uuid, dev, NVML_UUID_BUFFER, &g->lost) < 0 ||
	    device_string(&g->name, api->name, dev, NVML_NAME_BUFFER, &g->lost) < 0)
		return -TAU_ENOMEM;
	if (api->remapped_rows != NULL) {
		unsigned int corr = 0, unc = 0, pending = 0, failure = 0;

		ret = api->remapped_rows(dev, &corr, &unc, &pending, &failure);
		if (ret == NVML_SUCCESS) {
			g->remapped_correctable = corr;
			g->remapped_uncorrectable = unc;
			g->remap_pending = pending != 0;
			g->remap_failure = failure != 0;
		} else if (ret == NVML_ERROR_GPU_IS_LOST) {
			g->lost = 1;
		}
	}
	if (api->retired_pages != NULL) {
		int64_t *counts[2] = {&g->retired_pages_sbe, &g->retired_pages_dbe};
		int causes[2] = {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
		                 NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR};

		for (int c = 0; c < 2; c++) {
			unsigned int count = 0;

			/* Asking with no buffer: the count comes back, with or without
			 * INSUFFICIENT_SIZE. */
			ret = api->retired_pages(dev, causes[c], &count, NULL);
			if (ret == NVML_SUCCESS || ret == NVML_ERROR_INSUFFICIENT_SIZE)
				*counts[c] = count;
			else if (ret == NVML_ERROR_GPU_IS_LOST)
				g->lost = 1;
		}
	}
	if (api->retired_pending != NULL) {
		int state = 0;

		ret = api->retired_pending(dev, &state);
		if (ret == NVML_SUCCESS)
			g->retired_pending = state != 0;
		else if (ret == NVML_ERROR_GPU_IS_LOST)
			g->lost = 1;
	}
	if (api->mig_mode != NULL) {
		unsigned int current = 0, pending = 0;

		ret = api->mig_mode(dev, &current, &pending);
		if (ret == NVML_SUCCESS)
			g->mig_mode = current != 0;
		else if (ret == NVML_ERROR_GPU_IS_LOST)
			g->lost = 1;
		/* NOT_SUPPORTED: a GPU without MIG; the mode stays unknown. */
	}
	if (unhealthy_reason(g) != NULL) {
		g->reason = strdup(unhealthy_reason(g));
		if (g->reason == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		return 0;
	}
	g->healthy = true;
	return 0;
}

int tau_agent_nvml_probe(tau_agent_nvml *n, const char *library)
{
	nvml_api api;
	unsigned int count = 0;
	void *lib;
	int ret, rc = 0;

	tau_agent_nvml_free(n);
	if (library == NULL)
		library = "libnvidia-ml.so.1";
	lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *why = dlerror();

		tau_agent_note_set(&n->note, "NVML not loaded: %s", why != NULL ? why : library);
		return 0;
	}
	memset(&api, 0, sizeof(api));
	if (!load_symbol(lib, "nvmlInit_v2", &api.init, sizeof(api.init)) ||
	    !load_symbol(lib, "nvmlShutdown", &api.shutdown, sizeof(api.shutdown)) ||
	    !load_symbol(lib, "nvmlDeviceGetCount_v2", &api.count, sizeof(api.count)) ||
	    !load_symbol(lib, "nvmlDeviceGetHandleByIndex_v2", &api.handle, sizeof(api.handle))) {
		tau_agent_note_set(&n->note, "NVML in %s lacks the v2 entry points", library);
		goto out;
	}
	optional_symbol(n, lib, "nvmlSystemGetDriverVersion", &api.driver_version,
	                sizeof(api.driver_version));
	optional_symbol(n, lib, "nvmlSystemGetCudaDriverVersion_v2", &api.cuda_version,
	                sizeof(api.cuda_version));
	optional_symbol(n, lib, "nvmlDeviceGetUUID", &api.uuid, sizeof(api.uuid));
	optional_symbol(n, lib, "nvmlDeviceGetName", &api.name, sizeof(api.name));
	optional_symbol(n, lib, "nvmlDeviceGetRemappedRows", &api.remapped_rows,
	                sizeof(api.remapped_rows));
	optional_symbol(n, lib, "nvmlDeviceGetRetiredPages", &api.retired_pages,
	                sizeof(api.retired_pages));
	optional_symbol(n, lib, "nvmlDeviceGetRetiredPagesPendingStatus", &api.retired_pending,
	                sizeof(api.retired_pending));
	optional_symbol(n, lib, "nvmlDeviceGetMigMode", &api.mig_mode, sizeof(api.mig_mode));

	ret = api.init();
	if (ret != NVML_SUCCESS) {
		tau_agent_note_set(&n->note, "nvmlInit_v2 failed with NVML error %d", ret);
		goto out;
	}
	ret = api.count(&count);
	if (ret != NVML_SUCCESS) {
		tau_agent_note_set(&n->note, "nvmlDeviceGetCount_v2 failed with NVML error %d",
		                   ret);
		goto shutdown;
	}
	if (count > NVML_COUNT_LIMIT) {
		tau_agent_note_set(&n->note, "NVML reports %u GPUs, more than %d; ignored", count,
		                   NVML_COUNT_LIMIT);
		goto shutdown;
	}
	if (api.driver_version != NULL) {
		char buf[NVML_DRIVER_BUFFER];

		memset(buf, 0, sizeof(buf));
		if (api.driver_version(buf, sizeof(buf)) == NVML_SUCCESS) {
			buf[sizeof(buf) - 1] = '\0';
			if ((n->driver_version = strdup(buf)) == NULL) {
				rc = tau_error_set(TAU_ENOMEM, "out of memory reading NVML");
				goto shutdown;
			}
		}
	}
	if (api.cuda_version != NULL) {
		int v = 0;

		if (api.cuda_version(&v) == NVML_SUCCESS && v > 0)
			n->cuda_version = v;
	}
	n->count = count;
	if (count > 0) {
		size_t want = count < TAU_AGENT_NVML_MAX_GPUS ? count : TAU_AGENT_NVML_MAX_GPUS;

		n->gpus = calloc(want, sizeof(*n->gpus));
		if (n->gpus == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory reading NVML");
			goto shutdown;
		}
		for (size_t i = 0; i < want; i++) {
			n->n_gpus++;
			rc = probe_gpu(&n->gpus[i], &api, (unsigned int)i);
			if (rc < 0)
				goto shutdown;
		}
	}
	n->probed = true;
shutdown:
	api.shutdown();
out:
	dlclose(lib);
	return rc;
}

int tau_agent_nvml_copy(tau_agent_nvml *dst, const tau_agent_nvml *src)
{
	bool failed = false;

	tau_agent_nvml_free(dst);
	*dst = *src;
	dst->note = tau_agent_strdup_opt(src->note, &failed);
	dst->driver_version = tau_agent_strdup_opt(src->driver_version, &failed);
	dst->gpus = NULL;
	dst->n_gpus = 0;
	if (src->n_gpus > 0) {
		dst->gpus = calloc(src->n_gpus, sizeof(*dst->gpus));
		if (dst->gpus == NULL) {
			failed = true;
		} else {
			for (size_t i = 0; i < src->n_gpus; i++) {
				dst->gpus[i] = src->gpus[i];
				dst->gpus[i].uuid =
				        tau_agent_strdup_opt(src->gpus[i].uuid, &failed);
				dst->gpus[i].name =
				        tau_agent_strdup_opt(src->gpus[i].name, &failed);
				dst->gpus[i].reason =
				        tau_agent_strdup_opt(src->gpus[i].reason, &failed);
			}
			dst->n_gpus = src->n_gpus;
		}
	}
	if (failed) {
		tau_agent_nvml_free(dst);
		return tau_error_set(TAU_ENOMEM, "out of memory copying NVML facts");
	}
	return 0;
}

/* ------------------------------------------------------------ bounded probe */

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
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
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
