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
 *       corr=0 unc=0 sbe=0 dbe=0 retire_pending=0 mig=0 handle_error=0
 *                               one line per GPU ('_' in model reads as a space); omitted
 *                               keys are 0, an omitted uuid is GPU-fake-<index>
 *
 * Built twice (cmake/agent-probes.cmake): the full library, and with FAKE_NVML_OLD an "old
 * driver" that lacks nvmlDeviceGetRemappedRows, nvmlDeviceGetMigMode and
 * nvmlSystemGetCudaDriverVersion_v2, so the agent's handling of missing symbols is tested
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
#define NVML_GPU_LOST 15
#define NVML_UNKNOWN  999

typedef struct fake_gpu {
	char uuid[96];
	char model[96];
	int lost, remap_pending, remap_failure, retire_pending, mig, handle_error;
	unsigned int corr, unc, sbe, dbe;
} fake_gpu;

static fake_gpu gpus[FAKE_MAX_GPUS];
static unsigned int n_gpus;
static char driver[80] = "550.54.15";
static int cuda = 12040;
static int initialised;

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
int nvmlSystemGetCudaDriverVersion_v2(int *version);
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
	}
}

int nvmlInit_v2(void)
{
	const char *path = getenv("TAU_FAKE_NVML_CONFIG");
	char line[512];
	int init_error = 0;
	FILE *f;

	n_gpus = 0;
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
			parse_gpu(&gpus[n_gpus], line + 3, n_gpus);
			n_gpus++;
		}
	}
	fclose(f);
	if (init_error != 0)
		return init_error;
	initialised = 1;
	return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	if (!initialised)
		return NVML_NOT_INIT;
	initialised = 0;
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
	int rc = gpu_of(&g, device);

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
#endif
