/*
 * capacity.h - free-now capacity from node truth: per GPU class, beside the
 * pool, how many GPUs are healthy, in use and free right now, and where a job
 * of N GPUs of a class fits.  Pure functions over the node store (the caller
 * holds its lock); the budget does not read them (it follows the contract's
 * advertised allocatable).
 *
 * A node takes part only while the pool counts it (Ready, schedulable, not
 * deleting: a job cannot start elsewhere).  Its GPU figures are used only
 * when they are known: its agent reported, is not stale, and kubelet's
 * pod-resources answered.  Every other counted node is "unknown", never free.
 *
 * A node whose GPUs the pool counts through DRA (TAU_NODETRUTH_GPU_RESOURCE
 * from its ResourceSlices, dra.h) has its GPU figures from DRA instead: its
 * counted units under that resource are its GPUs, one held by a ResourceClaim
 * (any device of the unit, named by driver, pool and device in the agent's
 * dra_devices) is in use, exactly as a device-plugin ID a pod holds is; they
 * are known only while the agent's list of held DRA devices is whole.
 */
#ifndef TAU_AGGREGATOR_CAPACITY_H
#define TAU_AGGREGATOR_CAPACITY_H

#include "nodestore.h"
#include "query.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Largest job a fit query takes, in GPUs. */
#define TAU_FIT_MAX_GPUS 65536u
/** Unknown nodes a fit answer names (unknown_count has them all). */
#define TAU_FIT_UNKNOWN_NAMES 16

/** One GPU class's free-now figures. */
typedef struct tau_class_capacity {
	char gpu_class[64];
	uint32_t nodes;            /**< counted nodes of the class */
	uint32_t nodes_known;      /**< of them, with known GPU figures */
	uint32_t nodes_unknown;    /**< nodes - nodes_known */
	uint32_t nodes_degraded;   /**< of the known, health DEGRADED */
	uint32_t gpus_healthy;     /**< on the known nodes */
	uint32_t gpus_in_use;      /**< on the known nodes */
	uint32_t gpus_free;        /**< on the known nodes */
	uint32_t whole_nodes_free; /**< known nodes with GPUs, none in use, every one healthy */
} tau_class_capacity;

/**
 * The figures of the pool's GPU class `i` (0 <= i < tau_pool_flavor_count).
 * O(nodes).  @return 0 or -TAU_ENOTFOUND.
 */
int tau_capacity_class(tau_class_capacity *out, const tau_nodestore *store, size_t i,
                       const tau_query_opts *opts);

/**
 * A node's GPU figures for free now: the device-plugin figures of its node
 * truth, or, when the pool counts its GPUs through DRA (its DRA view node has
 * TAU_NODETRUTH_GPU_RESOURCE and allocatable does not already count it), its
 * DRA units under that resource: each a GPU, in use when a claim holds any of
 * its devices, taken as healthy as its driver publishes it (NVML health does
 * not join DRA device names); known when st->truth->dra_known.
 * @param view  the DRA view the nodes were counted with (tau_nodestore_dra_view); may be NULL
 * @param dra   set to whether the figures come from DRA; may be NULL
 * @return the figures; all zero and not known when st has no truth.
 */
tau_truth_gpus tau_capacity_node_gpus(const tau_node_status *st, const tau_dra_view *view,
                                      bool *dra);

/** Where a job may go. */
typedef struct tau_fit_request {
	const char *gpu_class;
	uint32_t gpus; /**< N, 1..TAU_FIT_MAX_GPUS */
	uint32_t
	        gpus_per_node; /**< 0: any split; else N per node across gpus/gpus_per_node nodes */
	bool whole_nodes;      /**< only nodes with every GPU healthy and free, each taken whole */
	bool needs_ib;         /**< only nodes with an ACTIVE RDMA port */
} tau_fit_request;

/** One node of a placement. */
typedef struct tau_fit_place {
	const char *node; /**< lent from the store */
	uint32_t gpus;    /**< GPUs the job takes there */
	uint32_t free;    /**< free GPUs there now */
} tau_fit_place;

/** A fit answer.  Strings are lent from the store: valid until it changes. */
typedef struct tau_fit_result {
	bool fits;
	char reason[512];      /**< what was found, and why it does not fit */
	tau_fit_place *places; /**< the placement when it fits (owned, tau_fit_result_clear) */
	size_t n_places;
	uint32_t nodes;                             /**< counted nodes of the class */
	uint32_t candidates;                        /**< known nodes that meet every option */
	uint32_t candidate_gpus;                    /**< GPUs those nodes can give the job */
	uint32_t unknown_count;                     /**< counted nodes whose figures are unknown */
	const char *unknown[TAU_FIT_UNKNOWN_NAMES]; /**< the first of them, by name */
	size_t n_unknown;
} tau_fit_result;

/**
 * Answer "where does a job of req->gpus GPUs of class req->gpu_class fit
 * right now": greedily, largest free first (ties by name), so a job uses as
 * few nodes as it can.
 * @param out  zeroed; filled (tau_fit_result_clear) on success
 * @return 0 (fits or not: out->fits); -TAU_EINVAL (no class, gpus 0 or over
 *         TAU_FIT_MAX_GPUS, gpus not a multiple of gpus_per_node, whole_nodes
 *         with gpus_per_node); -TAU_ENOTFOUND (the pool has no such class);
 *         -TAU_ENOMEM.  The error message names the field.
 */
int tau_capacity_fit(tau_fit_result *out, const tau_nodestore *store, const tau_fit_request *req,
                     const tau_query_opts *opts);

/** Free what a fit result owns; the result is zeroed. */
void tau_fit_result_clear(tau_fit_result *r);

#endif /* TAU_AGGREGATOR_CAPACITY_H */
