/*
 * build.h - one build of the inventory: the Kubernetes inputs, then the host probe (reused
 * while nothing on the host changed), then the consistency checks.
 *
 * Both modes build through tau_agent_build, so what --once prints is exactly what the daemon
 * would report.
 */
#ifndef TAU_AGENT_BUILD_H
#define TAU_AGENT_BUILD_H

#include "hostprobe.h"
#include "inventory.h"

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/** The Kubernetes inputs of one build; a NULL object comes with a problem text or none. */
typedef struct tau_agent_inputs {
	const cJSON *node;           /**< the Node, or NULL */
	const char *node_problem;    /**< why the Node is missing (used when node is NULL) */
	const cJSON *csinode;        /**< the CSINode, or NULL (no driver registered) */
	const char *csinode_problem; /**< why the CSINode is missing, or NULL */
	const cJSON *pods;           /**< PodList or array of pods on the node, or NULL */
	const char *pods_problem;    /**< why the pods are unknown, or NULL */
} tau_agent_inputs;

/** The last host probe and the driver names it answered for (reused while nothing changed). */
typedef struct tau_agent_probe_cache {
	tau_agent_host_probe probe;
	char **names;
	size_t n_names;
	bool valid;
} tau_agent_probe_cache;

/** Free what the cache holds and mark it invalid; a zeroed cache is empty. */
void tau_agent_probe_cache_free(tau_agent_probe_cache *cache);

/**
 * Driver names with a registration socket file "<name>-reg.sock" in
 * <host_root>/var/lib/kubelet/plugins_registry (at most
 * TAU_AGENT_PROBE_MAX_DRIVERS; an unreadable directory gives none: the
 * probe itself reports it).
 * @param out  receives a new array of new strings (free each, then the array)
 * @return 0 or -TAU_ENOMEM.
 */
int tau_agent_registry_socket_names(char ***out, size_t *n, const char *host_root);

/**
 * Rebuild `inv` from `in` and the host: Node, CSINode, pods, then the host
 * probe for every driver the inventory knows plus every registration socket
 * present, then the consistency checks.  The host is probed again when
 * `reprobe` is true, the cache is empty, or the set of driver names changed;
 * otherwise the cached probe is reused.
 * @param probed  set to true when the host was probed (may be NULL)
 * @return 0 or -TAU_ENOMEM (bad input only ever adds problems).
 */
int tau_agent_build(tau_agent_inventory *inv, const tau_agent_inputs *in, const char *host_root,
                    tau_agent_probe_cache *cache, bool reprobe, bool *probed);

#endif /* TAU_AGENT_BUILD_H */
