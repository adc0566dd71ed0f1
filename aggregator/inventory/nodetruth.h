/*
 * nodetruth.h - what only a node knows, as its agent last reported it: the
 * kubelet's devices and who holds them (pod-resources), GPU health (NVML),
 * InfiniBand/RoCE ports (sysfs) and the live CSI check, with each probe's
 * reason when it could not run.  Decoded once per inventory into one compact
 * read-only block that the node store keeps beside the node's record
 * (tau_node_status.truth) and every reader (queries, explain rules, metrics,
 * the TauCluster condition) reads without decoding again.
 *
 * The one idea: "unknown" is never "free".  Every figure derived here says
 * whether the source it comes from answered (`known`), and readers must
 * treat a node whose figures are not known as unknown, never as idle.
 *
 * A tau_nodetruth is immutable once built, so it can be lent freely while the
 * caller holds the lock that guards the store.
 */
#ifndef TAU_AGGREGATOR_NODETRUTH_H
#define TAU_AGGREGATOR_NODETRUTH_H

#include "tau/inventory/v1/inventory.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The device-plugin resource whose devices are "GPUs" in the figures below. */
#define TAU_NODETRUTH_GPU_RESOURCE "nvidia.com/gpu"

/* Limits on one inventory's node-local facts (the agent sends at most these). */
#define TAU_NODETRUTH_MAX_DEVICES 256  /**< pod_devices */
#define TAU_NODETRUTH_MAX_DRA     256  /**< dra_devices */
#define TAU_NODETRUTH_MAX_GPUS    64   /**< gpus */
#define TAU_NODETRUTH_MAX_PORTS   64   /**< rdma_ports */
#define TAU_NODETRUTH_MAX_CSI     64   /**< csi_drivers */
#define TAU_NODETRUTH_MAX_ID      253  /**< bytes of an ID, name or version */
#define TAU_NODETRUTH_MAX_TEXT    1024 /**< bytes of a reason or note */

/** A yes/no fact the agent may not have been able to read. */
typedef enum tau_truth_tri { TAU_TRUTH_UNKNOWN = 0, TAU_TRUTH_FALSE, TAU_TRUTH_TRUE } tau_truth_tri;

/** A node's health as its agent sees it. */
typedef enum tau_truth_health {
	TAU_TRUTH_HEALTH_UNKNOWN = 0, /**< neither NVML nor pod-resources answered */
	TAU_TRUTH_HEALTH_OK,          /**< every probe that answered found nothing wrong */
	TAU_TRUTH_HEALTH_DEGRADED     /**< a GPU, device, port or CSI driver is not healthy */
} tau_truth_health;

/** One device of a device-plugin resource (kubelet pod-resources). */
typedef struct tau_truth_device {
	const char *resource;      /**< "nvidia.com/gpu" (shared by the devices of a resource) */
	const char *id;            /**< the device plugin's ID ("GPU-5f1c...") */
	const char *pod_namespace; /**< the holder; all three NULL when the device is free */
	const char *pod_name;
	const char *container;
	int32_t numa_node; /**< -1 unknown */
	bool allocatable;  /**< kubelet lists it as allocatable (its plugin calls it healthy) */
	bool healthy; /**< allocatable, and NVML does not call the GPU with this ID unhealthy */
	const char *reason; /**< why not healthy; NULL when healthy */
} tau_truth_device;

/** One DRA device a ResourceClaim holds (kubelet pod-resources' dynamic_resources). */
typedef struct tau_truth_dra_device {
	const char *driver; /**< with pool and device: the device as ResourceSlices name it */
	const char *pool;
	const char *device;
	const char *claim_namespace; /**< the claim; NULL when the agent did not say */
	const char *claim_name;
	const char *pod_namespace; /**< the first container found holding it; NULL when unsaid */
	const char *pod_name;
	const char *container;
} tau_truth_dra_device;

/** One GPU as NVML sees it. */
typedef struct tau_truth_gpu {
	uint32_t index;
	const char *uuid;   /**< NULL when unknown; joins with tau_truth_device.id */
	const char *model;  /**< NULL when unknown */
	bool healthy;       /**< NVML's verdict (see the Gpu message) */
	const char *reason; /**< why not healthy; NULL when healthy */
} tau_truth_gpu;

/** One InfiniBand or RoCE port. */
typedef struct tau_truth_port {
	const char *device;     /**< "mlx5_0" */
	const char *port;       /**< "1" */
	const char *link_layer; /**< "InfiniBand", "Ethernet"; NULL when unread */
	uint64_t rate_mbps;     /**< 0 when unread */
	int64_t link_downed;    /**< -1 unknown */
	uint8_t state;          /**< 4 ACTIVE, 1 DOWN, ...; 0 unread */
	uint8_t phys_state;     /**< 5 LinkUp, ...; 0 unread */
	bool active;            /**< state is ACTIVE (4) or ACTIVE_DEFER (5) */
} tau_truth_port;

/** The live check of one CSI driver. */
typedef struct tau_truth_csi {
	const char *name;
	bool in_csi_node;    /**< kubelet lists it in the node's CSINode */
	bool socket_present; /**< its registration socket exists */
	bool probed;         /**< the agent made the live check */
	tau_truth_tri ready; /**< Identity Probe's answer (UNKNOWN: no answer) */
	const char *error;   /**< why ready is not TRUE; NULL when it is */
} tau_truth_csi;

/** A node's GPU figures (TAU_NODETRUTH_GPU_RESOURCE), derived once at decode. */
typedef struct tau_truth_gpus {
	bool known;       /**< pod-resources answered both List and GetAllocatableResources */
	uint32_t devices; /**< GPU devices kubelet lists (allocatable or held) */
	uint32_t healthy; /**< of them, allocatable and not unhealthy per NVML */
	uint32_t in_use;  /**< of them, held by a pod */
	uint32_t free;    /**< healthy and not held */
} tau_truth_gpus;

/** The decoded facts.  Read-only; every pointer lives as long as the block. */
typedef struct tau_nodetruth {
	/* pod-resources */
	bool pod_resources_known;       /**< kubelet's List answered */
	bool allocatable_known;         /**< GetAllocatableResources answered */
	const char *pod_resources_note; /**< why not probed or partial; NULL when all answered */
	size_t n_devices;
	const tau_truth_device *devices; /**< sorted by resource, then ID */
	/** The DRA devices claims hold are the node's truth: List answered, the agent reads
	 * dynamic_resources, and none were left out (dra_devices_dropped 0). */
	bool dra_known;
	uint32_t dra_dropped; /**< held DRA devices the agent could not list */
	size_t n_dra;
	const tau_truth_dra_device *dra; /**< sorted by driver, pool, then device */
	/* NVML */
	bool gpus_probed;
	const char *gpus_not_probed_reason; /**< NULL when probed */
	uint32_t gpus_present;              /**< GPUs NVML counts (gpus lists the first 64) */
	uint32_t gpus_healthy;              /**< of them, healthy per NVML */
	const char *driver_version;         /**< NULL when unknown */
	const char *cuda_version;           /**< NULL when unknown */
	size_t n_gpus;
	const tau_truth_gpu *gpus; /**< by index */
	/* RDMA ports */
	uint32_t rdma_ports_total; /**< all ports found (ports lists the first 64) */
	uint32_t rdma_ports_up;    /**< of them, ACTIVE */
	size_t n_ports;
	const tau_truth_port *ports;
	/* CSI */
	size_t n_csi;
	const tau_truth_csi *csi; /**< sorted by name */
	/* derived */
	tau_truth_gpus gpu;      /**< the GPU figures */
	tau_truth_health health; /**< see tau_truth_health */
	size_t n_problems;       /**< what makes it DEGRADED (tau_nodetruth_problem) */
	size_t bytes; /**< memory the block takes (its one allocation); 0 for the shared one */
} tau_nodetruth;

/**
 * Decode the node-local facts of an inventory (pure: no I/O, no lock).
 * Checks: at most TAU_NODETRUTH_MAX_* entries per list; IDs and names within
 * TAU_NODETRUTH_MAX_ID bytes, reasons within TAU_NODETRUTH_MAX_TEXT; every
 * pod device has a resource name and an ID and is listed once, in the
 * protocol's order (resource, then ID); a holder has namespace and pod name;
 * every DRA device has driver, pool and device name and is listed once, in
 * the protocol's order (driver, pool, device);
 * numa_node -1..1023; port state 0..5, phys_state 0..7.
 * An inventory that carries no node-local facts (nothing a reader would see differ from
 * "all unknown, no lists") gets the one shared empty block (tau_nodetruth_is_shared), not
 * a block of its own: readers see the same figures either way.
 * @param out  set to a block (tau_nodetruth_free) on success; untouched on failure
 * @return 0; -TAU_EINVAL or -TAU_ETOOBIG naming the first bad field (tau_error_last);
 *         -TAU_ENOMEM.
 */
int tau_nodetruth_decode(tau_nodetruth **out, const Tau__Inventory__V1__NodeInventory *inv);

/** Free a block; NULL and the shared empty block are no-ops. */
void tau_nodetruth_free(tau_nodetruth *t);

/** True for the shared empty block (see tau_nodetruth_decode). */
bool tau_nodetruth_is_shared(const tau_nodetruth *t);

/**
 * Describe problem `i` (0 <= i < t->n_problems) into buf: an unhealthy GPU,
 * a GPU device kubelet no longer lists as allocatable, an RDMA port that is
 * not ACTIVE, a CSI driver whose Probe did not answer ready.
 * @return true when written; false (buf untouched) when `i` is out of range.
 */
bool tau_nodetruth_problem(const tau_nodetruth *t, size_t i, char *buf, size_t cap);

/** True when at least one RDMA port is ACTIVE. */
bool tau_nodetruth_has_active_port(const tau_nodetruth *t);

/** "ok", "degraded" or "unknown". */
const char *tau_nodetruth_health_name(tau_truth_health h);

#endif /* TAU_AGGREGATOR_NODETRUTH_H */
