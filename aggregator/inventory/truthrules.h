/*
 * truthrules.h - the agent.* explain rules: what a node's own agent sees (nodetruth.h) against
 * what its Node object advertises.
 *
 * They never change whether a node counts: the pool and the budget follow the Node object (the
 * contract), and node truth reaches them only through Node conditions (docs/agent.md).  They
 * say where the advertised capacity will not run: GPUs the Node advertises that the agent does
 * not see healthy, an rdma/ resource with a port down, a CSI driver registered but not
 * answering Probe, kubelet's pod-resources unreachable.  Pure: facts and truth in, rules out.
 */
#ifndef TAU_AGGREGATOR_TRUTHRULES_H
#define TAU_AGGREGATOR_TRUTHRULES_H

#include "nodetruth.h"

#include "tau/nodefacts.h"

#include <stdbool.h>
#include <stdint.h>

/** The rules, in the order ExplainNode reports them. */
typedef enum tau_truth_rule_id {
	TAU_TRUTH_RULE_GPU_HEALTH = 0, /**< "agent.gpu-health" */
	TAU_TRUTH_RULE_RDMA_PORTS,     /**< "agent.rdma-ports" */
	TAU_TRUTH_RULE_CSI_PROBE,      /**< "agent.csi-probe" */
	TAU_TRUTH_RULE_POD_RESOURCES,  /**< "agent.pod-resources" */
	TAU_TRUTH_RULE_COUNT
} tau_truth_rule_id;

/** One rule's verdict.  `unknown`: the agent could not tell (pass is then true). */
typedef struct tau_truth_rule {
	const char *name; /**< constant */
	bool pass;
	bool unknown;
	bool quiet; /**< private: verdicts only, detail left empty */
	char detail[384];
} tau_truth_rule;

/** The rule's name ("agent.gpu-health"); NULL out of range. */
const char *tau_truth_rule_name(tau_truth_rule_id id);

/**
 * Evaluate every rule for one node.
 * @param facts  the Node object's facts (NULL: none known: nothing advertised)
 * @param truth  the agent's last node-local facts (NULL: no agent inventory carried them:
 *               every rule unknown)
 */
void tau_truth_rules(tau_truth_rule out[TAU_TRUTH_RULE_COUNT], const tau_node_facts *facts,
                     const tau_nodetruth *truth);

/**
 * How many rules fail for the node (0: it agrees with its Node, or nothing is known), without
 * writing any detail: the cheap check for a scan over every node (snapshots, metrics).
 * @param failed  when not NULL, set per rule (by tau_truth_rule_id): whether it fails
 */
int tau_truth_rules_failing(const tau_node_facts *facts, const tau_nodetruth *truth,
                            bool failed[TAU_TRUTH_RULE_COUNT]);

/**
 * A fingerprint of a node's verdicts: 0 when every rule passes, else a hash of the failing
 * rules' names and details, so a caller can tell cheaply whether what the node's agent.*
 * rules say changed between two inventories (the TauCluster condition follows it).
 */
uint64_t tau_truth_rules_fingerprint(const tau_node_facts *facts, const tau_nodetruth *truth);

#endif /* TAU_AGGREGATOR_TRUTHRULES_H */
