/*
 * podresources.h - which devices this node can allocate and which pod holds which, from
 * kubelet's pod-resources API (v1, GA since Kubernetes 1.28).
 *
 * A gRPC client over the unix socket <host-root>/var/lib/kubelet/pod-resources/kubelet.sock
 * (libtau's rpc client, target "unix:..."): GetAllocatableResources gives every device kubelet
 * can allocate, per resource name, with its NUMA node (kubelet lists only the devices their
 * device plugin calls healthy); List gives every pod's containers and the devices each holds.
 * The two are joined into one list of devices.  List also names the devices each container's
 * ResourceClaims hold through Dynamic Resource Allocation (ContainerResources.dynamic_resources,
 * filled by kubelets with KubeletPodResourcesDynamicResources: on by default since 1.34); those
 * are kept apart, identified as DRA identifies them (driver, pool, device), each once.
 * Every call has a deadline, so a kubelet that
 * never answers costs at most two timeouts.  Nothing here fails the agent: an absent socket,
 * a refused call or a timeout leave `probed` false with a note saying why.
 */
#ifndef TAU_AGENT_PODRESOURCES_H
#define TAU_AGENT_PODRESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Socket path below the host root. */
#define TAU_AGENT_PODRESOURCES_SOCKET "/var/lib/kubelet/pod-resources/kubelet.sock"
/** Most devices kept; beyond it the rest is counted in n_dropped. */
#define TAU_AGENT_PODRESOURCES_MAX_DEVICES 256
/** Most DRA devices kept; the rest (and any not usable) is counted in n_dra_dropped. */
#define TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES 256
/** Longest driver, pool, device, claim or pod name kept (the aggregator's limit). */
#define TAU_AGENT_PODRESOURCES_MAX_NAME 253
/** Deadline of each call unless the caller gives one (ms). */
#define TAU_AGENT_PODRESOURCES_TIMEOUT_MS 2000

/** One device of a device-plugin resource. */
typedef struct tau_agent_pod_device {
	char *resource;      /**< owned; "nvidia.com/gpu" */
	char *id;            /**< owned; the device ID ("GPU-5f1c..." for NVIDIA GPUs) */
	int64_t numa_node;   /**< first NUMA node kubelet names; -1 unknown */
	bool allocatable;    /**< listed by GetAllocatableResources (healthy, allocatable) */
	char *pod_namespace; /**< owned; holder's namespace, NULL when free */
	char *pod_name;      /**< owned; NULL when free */
	char *container;     /**< owned; NULL when free */
} tau_agent_pod_device;

/** One DRA device a container's ResourceClaim holds (List's dynamic_resources). */
typedef struct tau_agent_dra_device {
	char *driver;          /**< owned; the DRA driver, "gpu.nvidia.com" */
	char *pool;            /**< owned; its ResourceSlice pool (NVIDIA's driver: the node) */
	char *device;          /**< owned; the device in that pool, "gpu-0" */
	char *claim_namespace; /**< owned; the ResourceClaim */
	char *claim_name;      /**< owned */
	char *pod_namespace;   /**< owned; the first container found holding it */
	char *pod_name;        /**< owned */
	char *container;       /**< owned */
} tau_agent_dra_device;

/** What one pod-resources probe found. */
typedef struct tau_agent_podres {
	bool probed;            /**< List answered (GetAllocatableResources may not have) */
	bool allocatable_known; /**< GetAllocatableResources answered */
	char *note;             /**< owned; why not probed, or why allocatable is unknown; NULL */
	tau_agent_pod_device *devices; /**< owned; sorted by resource, then id */
	size_t n_devices;
	size_t n_dropped;          /**< devices beyond TAU_AGENT_PODRESOURCES_MAX_DEVICES */
	tau_agent_dra_device *dra; /**< owned; sorted by driver, pool, device; each once */
	size_t n_dra;
	/** Held DRA devices not in `dra`: beyond TAU_AGENT_PODRESOURCES_MAX_DRA_DEVICES, or
	 * named without a driver or pool, or with a name over TAU_AGENT_PODRESOURCES_MAX_NAME. */
	size_t n_dra_dropped;
} tau_agent_podres;

/** An empty result.  Pairs with tau_agent_podres_free. */
void tau_agent_podres_init(tau_agent_podres *r);

/** Free what the result owns and leave it as after init.  NULL is a no-op. */
void tau_agent_podres_free(tau_agent_podres *r);

/**
 * Ask kubelet below `host_root` (NULL or "": "/"), each call bounded by `timeout_ms`
 * (<= 0: TAU_AGENT_PODRESOURCES_TIMEOUT_MS).  Whatever `r` held is freed first.
 * @return 0 (look at r->probed and r->note), or -TAU_ENOMEM.
 */
int tau_agent_podres_probe(tau_agent_podres *r, const char *host_root, int timeout_ms);

/**
 * Deep copy of `src` into `dst` (what `dst` held is freed).
 * @return 0 or -TAU_ENOMEM (dst then empty).
 */
int tau_agent_podres_copy(tau_agent_podres *dst, const tau_agent_podres *src);

#endif /* TAU_AGENT_PODRESOURCES_H */
