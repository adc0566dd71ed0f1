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
 * Retired page counts and remapped rows are reported as numbers, not judged.  Also unhealthy:
 * a GPU with some NVLink links active and others not (a link went down; a GPU with none
 * active may have no bridge and is not judged), and a GPU with a critical XID since the
 * agent's NVML event session began, except the XIDs NVIDIA's device plugin also treats as
 * application errors (13, 31, 43, 45, 68, 109).
 *
 * The event session (see nvml.h) is the one piece of NVML state kept between probes: its own
 * dlopen handle and nvmlInit_v2 reference, so each probe's own init/shutdown and dlclose leave
 * it alive, and the event set with every GPU registered once by UUID.  Each probe drains it
 * with a 0 ms wait; an error other than "no event" ends the session (the next probe opens a
 * new one).  Its lock is taken inside the probe only, and one probe runs at a time.
 *
 * NVML types are declared here from the C API's published signatures: nvmlReturn_t is an
 * int-sized enum (0 success), nvmlDevice_t an opaque pointer, nvmlEnableState_t an int.
 */
#include "nvml.h"

#include "hostprobe.h"
#include "records.h"

#include "tau/error.h"
#include "tau/str.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Return codes used here (nvmlReturn_t). */
#define NVML_SUCCESS                 0
#define NVML_ERROR_INVALID_ARGUMENT  2
#define NVML_ERROR_NOT_SUPPORTED     3
#define NVML_ERROR_NOT_FOUND         6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_TIMEOUT           10
#define NVML_ERROR_GPU_IS_LOST       15
/* nvmlEventTypeXidCriticalError (nvml.h) */
#define NVML_EVENT_XID_CRITICAL 0x0000000000000008ULL
/* Links asked per GPU (NVML_NVLINK_MAX_LINKS in current nvml.h); INVALID_ARGUMENT ends it. */
#define NVML_NVLINK_LINKS 18
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
typedef int (*nvml_nvlink_fn)(nvml_device device, unsigned int link, int *is_active);
typedef int (*nvml_mig_count_fn)(nvml_device device, unsigned int *count);
typedef int (*nvml_mig_handle_fn)(nvml_device device, unsigned int index, nvml_device *mig);
typedef void *nvml_event_set;
/* nvmlEventData_t */
typedef struct nvml_event_data {
	nvml_device device;
	unsigned long long event_type;
	unsigned long long event_data;
	unsigned int gpu_instance_id;
	unsigned int compute_instance_id;
} nvml_event_data;
typedef int (*nvml_set_create_fn)(nvml_event_set *set);
typedef int (*nvml_register_fn)(nvml_device device, unsigned long long types, nvml_event_set set);
typedef int (*nvml_set_wait_fn)(nvml_event_set set, nvml_event_data *data, unsigned int ms);
typedef int (*nvml_set_free_fn)(nvml_event_set set);

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
	nvml_nvlink_fn nvlink_state;
	nvml_mig_count_fn mig_max;
	nvml_mig_handle_fn mig_handle;
	nvml_set_create_fn set_create;
	nvml_register_fn register_events;
	nvml_set_wait_fn set_wait;
	nvml_set_free_fn set_free;
} nvml_api;

/* ------------------------------------------------------------ XID event session */

#define XID_SEEN_MAX 64

/* Critical XIDs seen per GPU (by UUID), kept until the session is reset. */
typedef struct xid_seen {
	char uuid[96];
	bool registered; /* registered in the current event set */
	int64_t count;   /* critical XIDs, application XIDs excepted */
	uint64_t last;
} xid_seen;

static struct {
	pthread_mutex_t mu;
	char *library; /* what the session was opened on; NULL: closed */
	void *lib;
	nvml_api api;
	nvml_event_set set;
	xid_seen seen[XID_SEEN_MAX];
	size_t n_seen;
} ev = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* XIDs NVIDIA's device plugin treats as application errors, not GPU faults. */
static bool application_xid(uint64_t xid)
{
	static const uint64_t app[] = {13, 31, 43, 45, 68, 109};

	for (size_t i = 0; i < sizeof(app) / sizeof(app[0]); i++)
		if (app[i] == xid)
			return true;
	return false;
}

/* End the session (lock held); what was seen is kept unless `forget`. */
static void session_close(bool forget)
{
	if (ev.set != NULL && ev.api.set_free != NULL)
		(void)ev.api.set_free(ev.set);
	if (ev.lib != NULL) {
		if (ev.api.shutdown != NULL && ev.library != NULL)
			(void)ev.api.shutdown();
		dlclose(ev.lib);
	}
	free(ev.library);
	ev.library = NULL;
	ev.lib = NULL;
	ev.set = NULL;
	memset(&ev.api, 0, sizeof(ev.api));
	for (size_t i = 0; i < ev.n_seen; i++)
		ev.seen[i].registered = false;
	if (forget)
		ev.n_seen = 0;
}

void tau_agent_nvml_events_reset(void)
{
	pthread_mutex_lock(&ev.mu);
	session_close(true);
	pthread_mutex_unlock(&ev.mu);
}

/* dlsym gives an object pointer; copy its bits into a function pointer (POSIX). */
static bool load_symbol(void *lib, const char *name, void *fn_out, size_t fn_size);

/* Open the session on `library` when it is closed (lock held).  False: no session now. */
static bool session_open(const char *library)
{
	nvml_api *a = &ev.api;

	if (tau_str_eq_both_set(ev.library, library))
		return true;
	session_close(false);
	ev.lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (ev.lib == NULL)
		return false;
	if (!load_symbol(ev.lib, "nvmlInit_v2", &a->init, sizeof(a->init)) ||
	    !load_symbol(ev.lib, "nvmlShutdown", &a->shutdown, sizeof(a->shutdown)) ||
	    !load_symbol(ev.lib, "nvmlDeviceGetUUID", &a->uuid, sizeof(a->uuid)) ||
	    !load_symbol(ev.lib, "nvmlEventSetCreate", &a->set_create, sizeof(a->set_create)) ||
	    !load_symbol(ev.lib, "nvmlDeviceRegisterEvents", &a->register_events,
	                 sizeof(a->register_events)) ||
	    !load_symbol(ev.lib, "nvmlEventSetWait_v2", &a->set_wait, sizeof(a->set_wait)) ||
	    !load_symbol(ev.lib, "nvmlEventSetFree", &a->set_free, sizeof(a->set_free)) ||
	    a->init() != NVML_SUCCESS) {
		a->shutdown = NULL; /* no reference taken */
		session_close(false);
		return false;
	}
	ev.library = strdup(library);
	if (ev.library == NULL || a->set_create(&ev.set) != NVML_SUCCESS) {
		ev.set = NULL;
		if (ev.library == NULL)
			(void)a->shutdown();
		session_close(false);
		return false;
	}
	return true;
}

static xid_seen *seen_for(const char *uuid, bool add)
{
	for (size_t i = 0; i < ev.n_seen; i++)
		if (strcmp(ev.seen[i].uuid, uuid) == 0)
			return &ev.seen[i];
	if (!add || ev.n_seen >= XID_SEEN_MAX)
		return NULL;
	memset(&ev.seen[ev.n_seen], 0, sizeof(ev.seen[0]));
	snprintf(ev.seen[ev.n_seen].uuid, sizeof(ev.seen[0].uuid), "%s", uuid);
	return &ev.seen[ev.n_seen++];
}

/* Register GPU `dev` (UUID known) in the event set once (lock held, session open). */
static void session_register(nvml_device dev, const char *uuid)
{
	xid_seen *x = seen_for(uuid, true);

	if (x == NULL || x->registered)
		return;
	if (ev.api.register_events(dev, NVML_EVENT_XID_CRITICAL, ev.set) == NVML_SUCCESS)
		x->registered = true;
}

/* Take every pending event without waiting (lock held, session open). */
static void session_drain(void)
{
	for (int i = 0; i < 4096; i++) {
		nvml_event_data d;
		char uuid[96];
		xid_seen *x;
		int ret;

		memset(&d, 0, sizeof(d));
		ret = ev.api.set_wait(ev.set, &d, 0);
		if (ret == NVML_ERROR_TIMEOUT)
			return;
		if (ret != NVML_SUCCESS) {
			session_close(false); /* reopened by the next probe */
			return;
		}
		if ((d.event_type & NVML_EVENT_XID_CRITICAL) == 0)
			continue;
		memset(uuid, 0, sizeof(uuid));
		if (ev.api.uuid(d.device, uuid, sizeof(uuid)) != NVML_SUCCESS)
			continue;
		uuid[sizeof(uuid) - 1] = '\0';
		if ((x = seen_for(uuid, true)) == NULL)
			continue;
		x->last = d.event_data;
		if (!application_xid(d.event_data))
			x->count++;
	}
}

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

static const size_t GPU_STRINGS[] = {
        offsetof(tau_agent_gpu, uuid),
        offsetof(tau_agent_gpu, name),
        offsetof(tau_agent_gpu, reason),
        offsetof(tau_agent_gpu, mig_profiles),
};

void tau_agent_nvml_free(tau_agent_nvml *n)
{
	if (n == NULL)
		return;
	free(n->note);
	free(n->driver_version);
	tau_agent_records_free(n->gpus, n->n_gpus, sizeof(*n->gpus),
	                       TAU_AGENT_RECORD_STRINGS(GPU_STRINGS));
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
	if (g->xid_critical > 0)
		return "critical XID since the agent's NVML session began";
	if (g->nvlink_down > 0 && g->nvlink_active > 0)
		return "NVLink links down";
	return NULL;
}

/* The reason with its figures (XID number, links down), owned; NULL when healthy. */
static char *unhealthy_text(const tau_agent_gpu *g)
{
	const char *why = unhealthy_reason(g);
	char buf[160];

	if (why == NULL)
		return NULL;
	if (strcmp(why, "critical XID since the agent's NVML session began") == 0)
		snprintf(buf, sizeof(buf),
		         "critical XID %llu (%lld since the agent's NVML session "
		         "began): the GPU needs a reset",
		         (unsigned long long)g->last_xid, (long long)g->xid_critical);
	else if (strcmp(why, "NVLink links down") == 0)
		snprintf(buf, sizeof(buf), "NVLink: %d of %d links down", g->nvlink_down,
		         g->nvlink_down + g->nvlink_active);
	else
		snprintf(buf, sizeof(buf), "%s", why);
	return strdup(buf);
}

/*
 * MIG geometry: with MIG enabled, the MIG devices that exist (nvmlDeviceGetMaxMigDeviceCount
 * slots, NOT_FOUND for an empty one) and each one's profile, the part of its name after
 * "MIG " ("NVIDIA H100 80GB HBM3 MIG 1g.10gb" -> "1g.10gb").
 */
static int probe_mig(tau_agent_gpu *g, const nvml_api *api, nvml_device dev)
{
	char profiles[512] = "";
	unsigned int max = 0;
	size_t used = 0;
	int found = 0;

	if (g->mig_mode != 1 || api->mig_max == NULL || api->mig_handle == NULL ||
	    api->mig_max(dev, &max) != NVML_SUCCESS)
		return 0;
	for (unsigned int i = 0; i < max && i < 64; i++) {
		nvml_device mig = NULL;
		char name[NVML_NAME_BUFFER];
		const char *profile;
		int ret = api->mig_handle(dev, i, &mig);

		if (ret == NVML_ERROR_NOT_FOUND)
			continue;
		if (ret != NVML_SUCCESS)
			return 0; /* a partial geometry would mislead: unknown */
		found++;
		memset(name, 0, sizeof(name));
		if (api->name == NULL || api->name(mig, name, sizeof(name)) != NVML_SUCCESS)
			snprintf(name, sizeof(name), "unknown");
		name[sizeof(name) - 1] = '\0';
		profile = strstr(name, "MIG ") != NULL ? strstr(name, "MIG ") + 4 : name;
		if (used + strlen(profile) + 2 < sizeof(profiles))
			used += (size_t)snprintf(profiles + used, sizeof(profiles) - used, "%s%s",
			                         used > 0 ? "," : "", profile);
	}
	g->mig_devices = found;
	if (found > 0 && (g->mig_profiles = strdup(profiles)) == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory reading NVML");
	return 0;
}

/* Links active and not, up to the first link the GPU does not have. */
static void probe_nvlink(tau_agent_gpu *g, const nvml_api *api, nvml_device dev)
{
	int active = 0, down = 0;

	if (api->nvlink_state == NULL)
		return;
	for (unsigned int link = 0; link < NVML_NVLINK_LINKS; link++) {
		int state = 0, ret = api->nvlink_state(dev, link, &state);

		if (ret == NVML_ERROR_INVALID_ARGUMENT)
			break; /* past the GPU's last link */
		if (ret == NVML_ERROR_GPU_IS_LOST) {
			g->lost = 1;
			return;
		}
		if (ret != NVML_SUCCESS)
			continue; /* NOT_SUPPORTED: no link there */
		if (state != 0)
			active++;
		else
			down++;
	}
	if (active + down > 0) {
		g->nvlink_active = active;
		g->nvlink_down = down;
	}
}

/* The GPU's XID figures from the session (lock held); registers it when new. */
static void probe_xid(tau_agent_gpu *g, nvml_device dev, bool session)
{
	xid_seen *x;

	if (!session || g->uuid == NULL)
		return;
	session_register(dev, g->uuid);
	x = seen_for(g->uuid, false);
	if (x == NULL || !x->registered)
		return;
	g->xid_critical = x->count;
	g->last_xid = x->last;
}

static int probe_gpu(tau_agent_gpu *g, const nvml_api *api, unsigned int index, bool session)
{
	nvml_device dev = NULL;
	char why[96];
	int ret;

	g->index = index;
	g->lost = g->remap_pending = g->remap_failure = g->retired_pending = g->mig_mode = -1;
	g->remapped_correctable = g->remapped_uncorrectable = -1;
	g->retired_pages_sbe = g->retired_pages_dbe = -1;
	g->nvlink_active = g->nvlink_down = -1;
	g->mig_devices = -1;
	g->xid_critical = -1;
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
	probe_nvlink(g, api, dev);
	probe_xid(g, dev, session);
	if (probe_mig(g, api, dev) < 0)
		return -TAU_ENOMEM;
	if (unhealthy_reason(g) != NULL) {
		g->reason = unhealthy_text(g);
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
	bool session = false;

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
	optional_symbol(n, lib, "nvmlDeviceGetMaxMigDeviceCount", &api.mig_max,
	                sizeof(api.mig_max));
	optional_symbol(n, lib, "nvmlDeviceGetMigDeviceHandleByIndex", &api.mig_handle,
	                sizeof(api.mig_handle));
	optional_symbol(n, lib, "nvmlDeviceGetNvLinkState", &api.nvlink_state,
	                sizeof(api.nvlink_state));
	optional_symbol(n, lib, "nvmlEventSetCreate", &api.set_create, sizeof(api.set_create));
	optional_symbol(n, lib, "nvmlDeviceRegisterEvents", &api.register_events,
	                sizeof(api.register_events));
	optional_symbol(n, lib, "nvmlEventSetWait_v2", &api.set_wait, sizeof(api.set_wait));
	optional_symbol(n, lib, "nvmlEventSetFree", &api.set_free, sizeof(api.set_free));

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
		/* The XID session: events since the last probe first, then each GPU's figures. */
		pthread_mutex_lock(&ev.mu);
		session = api.set_create != NULL && api.register_events != NULL &&
		          api.set_wait != NULL && api.set_free != NULL && api.uuid != NULL &&
		          session_open(library);
		if (session) {
			session_drain();
			session = ev.library != NULL;
		}
		for (size_t i = 0; i < want && rc == 0; i++) {
			n->n_gpus++;
			rc = probe_gpu(&n->gpus[i], &api, (unsigned int)i, session);
		}
		pthread_mutex_unlock(&ev.mu);
		if (rc < 0)
			goto shutdown;
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
	void *gpus = NULL;

	tau_agent_nvml_free(dst);
	*dst = *src;
	dst->note = tau_agent_strdup_opt(src->note, &failed);
	dst->driver_version = tau_agent_strdup_opt(src->driver_version, &failed);
	if (tau_agent_records_copy(&gpus, src->gpus, src->n_gpus, sizeof(*src->gpus),
	                           TAU_AGENT_RECORD_STRINGS(GPU_STRINGS), "NVML facts") < 0)
		failed = true;
	dst->gpus = gpus;
	dst->n_gpus = gpus != NULL ? src->n_gpus : 0;
	if (failed) {
		tau_agent_nvml_free(dst);
		return tau_error_set(TAU_ENOMEM, "out of memory copying NVML facts");
	}
	return 0;
}
