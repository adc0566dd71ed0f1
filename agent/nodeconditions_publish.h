/*
 * nodeconditions_publish.h - writing the agent's Node conditions to the API (--node-conditions).
 *
 * The event loop calls tau_agent_conditions_publish after every inventory build; it patches
 * nodes/<name>/status only when a condition the agent owns (nodeconditions.h) differs from
 * the Node as the informer has it.
 */
#ifndef TAU_AGENT_NODECONDITIONS_PUBLISH_H
#define TAU_AGENT_NODECONDITIONS_PUBLISH_H

#include "http.h"
#include "inventory.h"

#include "tau/kube.h"

#include <stdint.h>

#include <cjson/cJSON.h>

/** What the publisher remembers between builds; zero-initialise. */
typedef struct tau_agent_conditions_publisher {
	cJSON *written;     /**< the conditions of the last accepted patch */
	char rv[64];        /**< the cached Node's resourceVersion when they were written */
	int64_t retry_ms;   /**< after a failure, not before this (monotonic ms); 0: none due */
	int64_t backoff_ms; /**< the last delay */
	char *error;        /**< the failure last logged (each distinct one is logged once) */
} tau_agent_conditions_publisher;

/**
 * Publish what differs between the conditions built from `inv` and `node` (the Node as the
 * informer has it; NULL: nothing is done).  Right after a write the cache may still hold the
 * Node from before it; while its resourceVersion has not moved, the written conditions stand
 * in for it.  Before p->retry_ms nothing is tried.  One PATCH of at most 3 s; the result is
 * counted in `m` and logged.
 */
void tau_agent_conditions_publish(tau_agent_conditions_publisher *p, tau_kube_client *kc,
                                  const char *node_name, tau_agent_metrics *m,
                                  const tau_agent_inventory *inv, const cJSON *node);

/** Free what the publisher holds and zero it. */
void tau_agent_conditions_publisher_free(tau_agent_conditions_publisher *p);

#endif /* TAU_AGENT_NODECONDITIONS_PUBLISH_H */
