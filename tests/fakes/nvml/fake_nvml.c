/*
 * fake_nvml.c - a stand-in libnvidia-ml.so.1 for the agent's tests, built from our own C.
 *
 * It exports the NVML C API entry points the agent's NVML probe (agent/nvml.c) looks up, with
 * NVML's signatures, and answers from a small text file named by $TAU_FAKE_NVML_CONFIG, read
 * at every nvmlInit_v2 so a test can change a GPU's health between two probes:
 *
 *   # comment
 *   driver 550.54.15            nvmlSystemGetDriverVersion
 *   cuda 12040                  nvmlSystemGetCudaDriverVersion_v2 (12.4)
 *   init_error 0                what nvmlInit_v2 returns
 *   init_delay_ms 0             how long nvmlInit_v2 takes (a hung driver)
 *   gpu uuid=GPU-0 model=NVIDIA_H100_80GB_HBM3 lost=0 remap_pending=0 remap_failure=0
 *       corr=0 unc=0 sbe=0 dbe=0 retire_pending=0 mig=0 handle_error=0 nvlink=0 nvlink_down=0
 *                               one line per GPU ('_' in model reads as a space); omitted
 *                               keys are 0, an omitted uuid is GPU-fake-<index>; nvlink: links
 *                               the GPU has (0: NVLink not supported), the last nvlink_down of
 *                               them inactive; mig_profiles=3g.40gb,1g.10gb (with mig=1):
 *                               the MIG devices that exist, in index order, of 7 slots
 *   xid 3 79                    a critical XID event (79) on GPU 3; each xid line is delivered
 *                               once by nvmlEventSetWait_v2 to a set the GPU is registered in,
 *                               in file order, so a test appends lines to raise new events
 *
 * nvmlInit_v2 and nvmlShutdown count references like NVML's, so the agent's XID event session
 * (its own reference) outlives each probe's init/shutdown.
 *
 * Built twice (cmake/agent-probes.cmake): the full library, and with FAKE_NVML_OLD an "old
 * driver" that lacks nvmlDeviceGetRemappedRows, nvmlDeviceGetMigMode and
 * nvmlSystemGetCudaDriverVersion_v2, nvmlDeviceGetNvLinkState, the MIG device calls
 * (nvmlDeviceGetMaxMigDeviceCount, nvmlDeviceGetMigDeviceHandleByIndex) and the event set calls
 * (nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait_v2, nvmlEventSetFree), so
 * the agent's handling of missing symbols is tested
 * against a real dlopen.  Test-only: never installed, never linked into a program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_MAX_GPUS 16
#define NVML_SUCCESS  0
#define NVML_NOT_INIT 1
#define NVML_INVALID  2
#define NVML_NOT_SUPP 3
#define NVML_INSUFF   7
#define NVML_TIMEOUT  10
#define FAKE_MAX_XIDS 64
#define XID_CRITICAL  0x8ULL
#define NVML_GPU_LOST 15
#define NVML_UNKNOWN  999

typedef struct fake_gpu {
	char uuid[96];
	char model[96];
	int lost, remap_pending, remap_failure, retire_pending, mig, handle_error, nvlink,
	        nvlink_down, registered;
	unsigned int corr, unc, sbe, dbe;
	char mig_profiles[256];
} fake_gpu;

#define FAKE_MIG_SLOTS 7
/* A MIG device: its handle is its address; its name is "<model> MIG <profile>". */
typedef struct fake_mig {
	char name[96];
} fake_mig;

static fake_gpu gpus[FAKE_MAX_GPUS];
static fake_mig migs[FAKE_MAX_GPUS][FAKE_MIG_SLOTS];
static unsigned int n_gpus;
static char driver[80] = "550.54.15";
static int cuda = 12040;
static int initialised; /* references: nvmlInit_v2 minus nvmlShutdown */
/* XID events from the config (gpu index, code); the first `xids_delivered` were delivered. */
static struct {
	unsigned int gpu;
	unsigned long long code;
} xids[FAKE_MAX_XIDS];
static unsigned int n_xids, xids_delivered;

/* Exported with NVML's names and signatures; prototypes keep -Wmissing-prototypes quiet. */
int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *count);
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device);
int nvmlDeviceGetUUID(void *device, char *uuid, unsigned int length);
int nvmlDeviceGetName(void *device, char *name, unsigned int length);
int nvmlSystemGetDriverVersion(char *version, unsigned int length);
int nvmlDeviceGetRetiredPages(void *device, int cause, unsigned int *count,
                              unsigned long long *addresses);
int nvmlDeviceGetRetiredPagesPendingStatus(void *device, int *pending);
#ifndef FAKE_NVML_OLD
typedef struct fake_event {
	void *device;
	unsigned long long type, data;
	unsigned int gpu_instance, compute_instance;
} fake_event;
int nvmlSystemGetCudaDriverVersion_v2(int *version);
int nvmlDeviceGetNvLinkState(void *device, unsigned int link, int *active);
int nvmlDeviceGetMaxMigDeviceCount(void *device, unsigned int *count);
int nvmlDeviceGetMigDeviceHandleByIndex(void *device, unsigned int index, void **mig);
int nvmlEventSetCreate(void **set);
int nvmlDeviceRegisterEvents(void *device, unsigned long long types, void *set);
int nvmlEventSetWait_v2(void *set, fake_event *data, unsigned int timeout_ms);
int nvmlEventSetFree(void *set);
int nvmlDeviceGetRemappedRows(void *device, unsigned int *corr, unsigned int *unc,
                              unsigned int *pending, unsigned int *failure);
int nvmlDeviceGetMigMode(void *device, unsigned int *current, unsigned int *pending);
#endif

static void parse_gpu(fake_gpu *g, char *rest, unsigned int index)
{
	char *save = NULL;

	memset(g, 0, sizeof(*g));
	snprintf(g->uuid, sizeof(g->uuid), "GPU-fake-%u", index);
	snprintf(g->model, sizeof(g->model), "Fake GPU");
	for (char *tok = strtok_r(rest, " \t\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\n", &save)) {
		char *eq = strchr(tok, '=');
		int v;

		if (eq == NULL)
			continue;
		*eq++ = '\0';
		v = atoi(eq);
		if (strcmp(tok, "uuid") == 0)
			snprintf(g->uuid, sizeof(g->uuid), "%s", eq);
		else if (strcmp(tok, "model") == 0) {
			snprintf(g->model, sizeof(g->model), "%s", eq);
			for (char *p = g->model; *p != '\0'; p++)
				if (*p == '_')
					*p = ' ';
		} else if (strcmp(tok, "lost") == 0)
			g->lost = v;
		else if (strcmp(tok, "remap_pending") == 0)
			g->remap_pending = v;
		else if (strcmp(tok, "remap_failure") == 0)
			g->remap_failure = v;
		else if (strcmp(tok, "retire_pending") == 0)
			g->retire_pending = v;
		else if (strcmp(tok, "mig") == 0)
			g->mig = v;
		else if (strcmp(tok, "handle_error") == 0)
			g->handle_error = v;
		else if (strcmp(tok, "corr") == 0)
			g->corr = (unsigned int)v;
		else if (strcmp(tok, "unc") == 0)
			g->unc = (unsigned int)v;
		else if (strcmp(tok, "sbe") == 0)
			g->sbe = (unsigned int)v;
		else if (strcmp(tok, "dbe") == 0)
			g->dbe = (unsigned int)v;
		else if (strcmp(tok, "mig_profiles") == 0)
			snprintf(g->mig_profiles, sizeof(g->mig_profiles), "%s", eq);
		else if (strcmp(tok, "nvlink") == 0)
			g->nvlink = v;
		else if (strcmp(tok, "nvlink_down") == 0)
			g->nvlink_down = v;
	}
}

int nvmlInit_v2(void)
{
	const char *path = getenv("TAU_FAKE_NVML_CONFIG");
	char line[512];
	int init_error = 0;
	FILE *f;

	n_gpus = 0;
	n_xids = 0;
	if (path == NULL || (f = fopen(path, "r")) == NULL)
		return NVML_UNKNOWN;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "driver ", 7) == 0) {
			size_t len = strcspn(line + 7, "\n");

			if (len >= sizeof(driver))
				len = sizeof(driver) - 1;
			memcpy(driver, line + 7, len);
			driver[len] = '\0';
		} else if (strncmp(line, "cuda ", 5) == 0) {
			cuda = atoi(line + 5);
		} else if (strncmp(line, "init_error ", 11) == 0) {
			init_error = atoi(line + 11);
		} else if (strncmp(line, "init_delay_ms ", 14) == 0) {
			int ms = atoi(line + 14);
			struct timespec ts = {.tv_sec = ms / 1000,
			                      .tv_nsec = (long)(ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		} else if (strncmp(line, "gpu", 3) == 0 && n_gpus < FAKE_MAX_GPUS) {
			int registered = gpus[n_gpus].registered; /* survives a config re-read */

			parse_gpu(&gpus[n_gpus], line + 3, n_gpus);
			gpus[n_gpus].registered = registered;
			n_gpus++;
		} else if (strncmp(line, "xid ", 4) == 0 && n_xids < FAKE_MAX_XIDS) {
			unsigned int gpu = 0;
			unsigned long long code = 0;

			if (sscanf(line + 4, "%u %llu", &gpu, &code) == 2) {
				xids[n_xids].gpu = gpu;
				xids[n_xids].code = code;
				n_xids++;
			}
		}
	}
	fclose(f);
	if (xids_delivered > n_xids)
		xids_delivered = n_xids; /* the file was rewritten shorter */
	if (init_error != 0)
		return init_error;
	initialised++;
	return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	if (!initialised)
		return NVML_NOT_INIT;
	initialised--;
	return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!initialised)
		return NVML_NOT_INIT;
	*count = n_gpus;
	return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device)
{
	if (!initialised)
		return NVML_NOT_INIT;
	if (index >= n_gpus)
		return NVML_INVALID;
	if (gpus[index].handle_error != 0)
		return gpus[index].handle_error;
	*device = &gpus[index];
	return NVML_SUCCESS;
}

/* Every per-GPU query: a GPU that fell off the bus answers GPU_IS_LOST. */
static int gpu_of(fake_gpu **out, void *device)
{
	fake_gpu *g = device;

	if (!initialised)
		return NVML_NOT_INIT;
	if (g < gpus || g >= gpus + n_gpus)
		return NVML_INVALID;
	if (g->lost)
		return NVML_GPU_LOST;
	*out = g;
	return NVML_SUCCESS;
}

static int copy_out(char *buf, unsigned int length, const char *text)
{
	if (strlen(text) + 1 > length)
		return NVML_INSUFF;
	memcpy(buf, text, strlen(text) + 1);
	return NVML_SUCCESS;
}

int nvmlDeviceGetUUID(void *device, char *uuid, unsigned int length)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	return rc != NVML_SUCCESS ? rc : copy_out(uuid, length, g->uuid);
}

int nvmlDeviceGetName(void *device, char *name, unsigned int length)
{
	fake_gpu *g = NULL;
	fake_mig *m = device;
	int rc;

	if (m >= &migs[0][0] && m < &migs[0][0] + FAKE_MAX_GPUS * FAKE_MIG_SLOTS)
		return initialised ? copy_out(name, length, m->name) : NVML_NOT_INIT;
	rc = gpu_of(&g, device);
	return rc != NVML_SUCCESS ? rc : copy_out(name, length, g->model);
}

int nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	return initialised ? copy_out(version, length, driver) : NVML_NOT_INIT;
}

int nvmlDeviceGetRetiredPages(void *device, int cause, unsigned int *count,
                              unsigned long long *addresses)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);
	unsigned int have;

	if (rc != NVML_SUCCESS)
		return rc;
	have = cause == 0 ? g->sbe : g->dbe;
	if (*count < have || addresses == NULL) {
		*count = have;
		return have > 0 ? NVML_INSUFF : NVML_SUCCESS;
	}
	for (unsigned int i = 0; i < have; i++)
		addresses[i] = 0x1000ull * (i + 1);
	*count = have;
	return NVML_SUCCESS;
}

int nvmlDeviceGetRetiredPagesPendingStatus(void *device, int *pending)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	if (rc != NVML_SUCCESS)
		return rc;
	*pending = g->retire_pending != 0;
	return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
int nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	*version = cuda;
	return NVML_SUCCESS;
}

int nvmlDeviceGetRemappedRows(void *device, unsigned int *corr, unsigned int *unc,
                              unsigned int *pending, unsigned int *failure)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	if (rc != NVML_SUCCESS)
		return rc;
	*corr = g->corr;
	*unc = g->unc;
	*pending = g->remap_pending != 0;
	*failure = g->remap_failure != 0;
	return NVML_SUCCESS;
}

int nvmlDeviceGetMigMode(void *device, unsigned int *current, unsigned int *pending)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	if (rc != NVML_SUCCESS)
		return rc;
	if (g->mig < 0)
		return NVML_NOT_SUPP;
	*current = (unsigned int)g->mig;
	*pending = (unsigned int)g->mig;
	return NVML_SUCCESS;
}

int nvmlDeviceGetNvLinkState(void *device, unsigned int link, int *active)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	if (rc != NVML_SUCCESS)
		return rc;
	if (g->nvlink <= 0)
		return NVML_NOT_SUPP;
	if ((int)link >= g->nvlink)
		return NVML_INVALID;
	*active = (int)link < g->nvlink - g->nvlink_down;
	return NVML_SUCCESS;
}

int nvmlDeviceGetMaxMigDeviceCount(void *device, unsigned int *count)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	if (rc != NVML_SUCCESS)
		return rc;
	*count = g->mig > 0 ? FAKE_MIG_SLOTS : 0;
	return NVML_SUCCESS;
}

/* The index-th profile of the GPU's mig_profiles as a MIG device; NOT_FOUND past the list. */
int nvmlDeviceGetMigDeviceHandleByIndex(void *device, unsigned int index, void **mig)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);
	char list[256], *save = NULL, *p;
	unsigned int i = 0;

	if (rc != NVML_SUCCESS)
		return rc;
	if (g->mig <= 0 || index >= FAKE_MIG_SLOTS)
		return NVML_INVALID;
	snprintf(list, sizeof(list), "%s", g->mig_profiles);
	for (p = strtok_r(list, ",", &save); p != NULL; p = strtok_r(NULL, ",", &save), i++) {
		fake_mig *m = &migs[g - gpus][index];

		if (i != index)
			continue;
		snprintf(m->name, sizeof(m->name), "%.60s MIG %.30s", g->model, p);
		*mig = m;
		return NVML_SUCCESS;
	}
	return 6; /* NVML_ERROR_NOT_FOUND: an empty slot */
}

static int event_set; /* the one event set's address is the handle */

int nvmlEventSetCreate(void **set)
{
	if (!initialised)
		return NVML_NOT_INIT;
	*set = &event_set;
	return NVML_SUCCESS;
}

int nvmlDeviceRegisterEvents(void *device, unsigned long long types, void *set)
{
	fake_gpu *g = NULL;
	int rc = gpu_of(&g, device);

	if (rc != NVML_SUCCESS)
		return rc;
	if (set != &event_set || (types & XID_CRITICAL) == 0)
		return NVML_INVALID;
	g->registered = 1;
	return NVML_SUCCESS;
}

/* Delivers the next undelivered xid line of a registered GPU; never waits. */
int nvmlEventSetWait_v2(void *set, fake_event *data, unsigned int timeout_ms)
{
	(void)timeout_ms;
	if (!initialised)
		return NVML_NOT_INIT;
	if (set != &event_set || data == NULL)
		return NVML_INVALID;
	while (xids_delivered < n_xids) {
		unsigned int i = xids_delivered++;

		if (xids[i].gpu >= n_gpus || !gpus[xids[i].gpu].registered)
			continue;
		memset(data, 0, sizeof(*data));
		data->device = &gpus[xids[i].gpu];
		data->type = XID_CRITICAL;
		data->data = xids[i].code;
		return NVML_SUCCESS;
	}
	return NVML_TIMEOUT;
}

int nvmlEventSetFree(void *set)
{
	if (set != &event_set)
		return NVML_INVALID;
	for (unsigned int i = 0; i < FAKE_MAX_GPUS; i++)
		gpus[i].registered = 0;
	return NVML_SUCCESS;
}
#endif
