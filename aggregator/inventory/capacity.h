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
