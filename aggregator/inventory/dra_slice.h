/*
 * dra_slice.h - ResourceSlices (resource.k8s.io/v1): what one says, and whether its pool is
 * whole (docs/budget.md, "How DRA devices count").
 *
 * A driver publishes a pool of devices as one or more ResourceSlices that all
 * carry the pool's name, generation and resourceSliceCount.  Consumers use
 * only the slices of the pool's highest generation, and the pool is complete
 * once resourceSliceCount of them are seen; until then (a driver rewriting its
 * slices, a watch that has not caught up) nothing of the pool may count.
 */
#ifndef TAU_AGGREGATOR_DRA_SLICE_H
#define TAU_AGGREGATOR_DRA_SLICE_H

#include "dra_cel.h"

#include <cjson/cJSON.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Bounds of the API (resource.k8s.io/v1 validation). */
#define TAU_DRA_SLICE_MAX_DEVICES    128
#define TAU_DRA_DEVICE_MAX_NAMES     32 /**< attributes + capacity of one device */
#define TAU_DRA_ATTRIBUTE_STRING_MAX 64

/** Which nodes a slice's devices are on. */
typedef enum tau_dra_scope {
	TAU_DRA_SCOPE_NODE = 0,   /**< spec.nodeName: devices local to that node */
	TAU_DRA_SCOPE_SELECTOR,   /**< spec.nodeSelector: reachable from several nodes */
	TAU_DRA_SCOPE_ALL_NODES,  /**< spec.allNodes */
	TAU_DRA_SCOPE_PER_DEVICE, /**< spec.perDeviceNodeSelection: each device says */
} tau_dra_scope;

/** One device of a slice; every string owned. */
typedef struct tau_dra_device {
	char *name;
	tau_dra_value *attributes; /**< sorted by "domain/identifier" */
	size_t n_attributes;
	tau_dra_value *capacity; /**< sorted by "domain/identifier" */
	size_t n_capacity;
	char *node_name;   /**< perDeviceNodeSelection with device nodeName, else NULL */
	char *counter_set; /**< first consumesCounters[].counterSet (partitionable), else NULL */
} tau_dra_device;

/** The facts of one ResourceSlice; every string owned. */
typedef struct tau_dra_slice {
	char *name;
	char *driver;
	char *pool;
	int64_t generation;
	int64_t slice_count; /**< pool.resourceSliceCount */
	tau_dra_scope scope;
	char *node_name; /**< TAU_DRA_SCOPE_NODE only */
	tau_dra_device *devices;
	size_t n_devices;
} tau_dra_slice;

/**
 * Read a ResourceSlice object (JSON from the API), checking what the API server checks of
 * the fields the pool reads.  `out` must be zeroed; on failure it is left zeroed.
 * Attribute and capacity names without a domain get the driver's ("type" of driver
 * gpu.nvidia.com is "gpu.nvidia.com/type"), as CEL sees them.
 * @return 0, -TAU_EINVAL (the message names the slice and the field), -TAU_ETOOBIG, -TAU_ENOMEM.
 */
int tau_dra_slice_from_json(tau_dra_slice *out, const cJSON *obj);

/**
 * The length of an optional list in a DRA object's spec (`field` names it in the error, as the
 * API server does): 0 when absent or null.  Shared by the ResourceSlice and DeviceClass readers.
 * @return 0 (*n the length), -TAU_EINVAL (not a list) or -TAU_ETOOBIG (more than `max` items).
 */
int tau_dra_spec_list(size_t *n, const cJSON *list, const char *field, size_t max);

/** Release what `slice` owns and zero it; NULL is a no-op. */
void tau_dra_slice_clear(tau_dra_slice *slice);

/** What a selector sees of device `d` of slice `s` (lends their strings). */
tau_dra_device_view tau_dra_device_view_of(const tau_dra_slice *s, const tau_dra_device *d);

/** The state of one pool (driver + pool name). */
typedef struct tau_dra_pool_state {
	const char *driver; /**< lent from the slices */
	const char *pool;
	int64_t generation; /**< the highest seen */
	int64_t expected;   /**< resourceSliceCount of that generation (0 if they disagree) */
	size_t seen;        /**< slices of that generation */
	size_t older;       /**< slices of older generations (never used) */
	bool complete;
	char reason[320]; /**< why it is not complete, "" when it is */
} tau_dra_pool_state;

/**
 * Group slices into pools and decide which are complete: all of the highest generation's
 * resourceSliceCount slices seen, all agreeing on that count, and no device name published
 * twice in the pool.
 * @param out    receives the pools sorted by (driver, pool) (free()); NULL when there are none
 * @param slices the slices (lent; the states point into them)
 * @return 0 or -TAU_ENOMEM.
 */
int tau_dra_pools_assess(tau_dra_pool_state **out, size_t *n_out, const tau_dra_slice *slices,
                         size_t n_slices);

/** Lends the state of pool (driver, pool) from a sorted array, or NULL. */
const tau_dra_pool_state *tau_dra_pool_find(const tau_dra_pool_state *pools, size_t n,
                                            const char *driver, const char *pool);

#endif /* TAU_AGGREGATOR_DRA_SLICE_H */
