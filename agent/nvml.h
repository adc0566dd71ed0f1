/*
 * nvml.h - GPU facts from NVIDIA's NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is opened with dlopen on every probe and closed after it, so the agent
 * builds and runs on nodes without the NVIDIA driver, and a driver upgrade under a running
 * agent is picked up at the next probe.  Only the NVML C API's names and signatures are used
 * (the few types needed are declared in nvml.c; no NVIDIA header is needed).
 *
 * Four entry points are required (nvmlInit_v2, nvmlShutdown, nvmlDeviceGetCount_v2,
 * nvmlDeviceGetHandleByIndex_v2); without them NVML counts as not probed.  Every other one is
 * optional: a library that lacks it is listed in missing_symbols and the facts it gives stay
 * unknown, never a crash and never "healthy by default".
 *
 * Critical XID events need an NVML event set that lives between probes: the first probe that
 * finds the event entry points opens an event session (its own dlopen and nvmlInit_v2
 * reference, one event set, each GPU registered for nvmlEventTypeXidCriticalError once), and
 * every probe drains it without blocking (nvmlEventSetWait_v2 with a 0 ms timeout; an error
 * ends the session and the next probe opens a new one).  A GPU with a critical XID stays
 * unhealthy until the agent restarts (or tau_agent_nvml_events_reset), as NVIDIA's device
 * plugin keeps it unhealthy until it restarts (docs/agent.md).  One probe runs at a time (the
 * bounded probe's guard); the session has its own lock as well.
 */
#ifndef TAU_AGENT_NVML_H
#define TAU_AGENT_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Most GPUs described (more than any machine has; bounds the loop against a bogus count). */
#define TAU_AGENT_NVML_MAX_GPUS 64
/** Most optional symbols listed as missing. */
#define TAU_AGENT_NVML_MAX_MISSING 16

/** One GPU as NVML sees it.  Counts and flags are -1 when NVML could not tell. */
typedef struct tau_agent_gpu {
	unsigned int index;
	char *uuid;        /**< owned; "GPU-5f1c..."; NULL unknown */
	char *name;        /**< owned; "NVIDIA H100 80GB HBM3"; NULL unknown */
	bool healthy;      /**< handle answered, not lost, no remap failure or pending reset */
	int lost;          /**< 1: fell off the bus (NVML_ERROR_GPU_IS_LOST) */
	int remap_pending; /**< 1: rows are waiting to be remapped: the GPU needs a reset */
	int remap_failure; /**< 1: a row remap failed: the GPU needs service (RMA) */
	int64_t remapped_correctable;   /**< rows remapped for correctable errors */
	int64_t remapped_uncorrectable; /**< rows remapped for uncorrectable errors */
	int64_t retired_pages_sbe;      /**< pages retired for multiple single-bit ECC errors */
	int64_t retired_pages_dbe;      /**< pages retired for a double-bit ECC error */
	int retired_pending;            /**< 1: a page retirement waits for a reboot */
	int mig_mode;                   /**< current MIG mode: 1 enabled, 0 disabled */
	int mig_devices;                /**< MIG devices that exist now (MIG enabled); -1 unknown */
	char *mig_profiles;   /**< owned; their profiles in index order, "3g.40gb,1g.10gb"; NULL
	                         unknown or none */
	int nvlink_active;    /**< NVLink links active (nvmlDeviceGetNvLinkState); -1 unknown */
	int nvlink_down;      /**< NVLink links the GPU has that are not active; -1 unknown */
	int64_t xid_critical; /**< critical XIDs seen since the agent's NVML session began (the
	                         application XIDs excepted); -1: no event set for this GPU */
	uint64_t last_xid;    /**< the last critical XID seen (any); 0 none */
	char *reason; /**< owned; why healthy is false ("row remap pending: reset needed"), or NULL
	               */
} tau_agent_gpu;

/** What one NVML probe found. */
typedef struct tau_agent_nvml {
	bool probed;          /**< loaded, init and count answered */
	char *note;           /**< owned; why not probed (NULL when probed) */
	char *driver_version; /**< owned; "550.54.15"; NULL unknown */
	int cuda_version;     /**< nvmlSystemGetCudaDriverVersion: 12040 is CUDA 12.4; -1 unknown */
	unsigned int count;   /**< GPUs NVML counts (may exceed n_gpus when over the cap) */
	tau_agent_gpu *gpus;  /**< owned; one per index up to TAU_AGENT_NVML_MAX_GPUS */
	size_t n_gpus;
	/** Optional NVML entry points the library lacks (constant strings), in a fixed order. */
	const char *missing_symbols[TAU_AGENT_NVML_MAX_MISSING];
	size_t n_missing;
} tau_agent_nvml;

/** An empty result (nothing probed).  Pairs with tau_agent_nvml_free. */
void tau_agent_nvml_init(tau_agent_nvml *n);

/** Free what the result owns and leave it as after init.  NULL is a no-op. */
void tau_agent_nvml_free(tau_agent_nvml *n);

/**
 * Probe NVML in `library` ("libnvidia-ml.so.1", or a path; NULL: the default name).
 * Whatever `n` held is freed first.  Never fails the caller: a library that does not load,
 * lacks a required symbol or fails init leaves probed false with a note; per-GPU failures
 * mark that GPU unhealthy with a reason.
 * @return 0, or -TAU_ENOMEM (the result is then partial).
 */
int tau_agent_nvml_probe(tau_agent_nvml *n, const char *library);

/** How long the agent waits for NVML in one probe (ms). */
#define TAU_AGENT_NVML_TIMEOUT_MS 5000

/**
 * tau_agent_nvml_probe on a thread of its own, waited for at most `timeout_ms`.  NVML is a
 * library call into the driver and cannot be cancelled: when it does not return in time the
 * thread is left to finish on its own (it frees its result), `n` says so in its note, and
 * later calls return at once with a note until that thread has returned.  So a hung driver
 * costs the agent one timeout, not its event loop.
 * @return 0, or -TAU_ENOMEM.
 */
int tau_agent_nvml_probe_bounded(tau_agent_nvml *n, const char *library, int timeout_ms);

/**
 * End the XID event session (free the event set, drop its NVML reference and library handle)
 * and forget every XID seen.  The next probe opens a new one.  For the agent's exit and tests;
 * must not run while a probe is inside NVML.
 */
void tau_agent_nvml_events_reset(void);

/** Number of GPUs described that are healthy. */
int64_t tau_agent_nvml_healthy(const tau_agent_nvml *n);

/**
 * Deep copy of `src` into `dst` (what `dst` held is freed).
 * @return 0 or -TAU_ENOMEM (dst then empty).
 */
int tau_agent_nvml_copy(tau_agent_nvml *dst, const tau_agent_nvml *src);

#endif /* TAU_AGENT_NVML_H */
