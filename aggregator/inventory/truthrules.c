/*
 * truthrules.c - the agent.* explain rules (see truthrules.h).
 *
 * The one idea: a rule fails only on a fact the agent read, never on one it could not read;
 * "could not tell" is its own verdict (unknown), so a node whose NVML is missing is not called
 * sick and a node without an agent is not called healthy.  Each detail names the figures on
 * both sides and the first sick GPU, port or driver, bounded to the rule's buffer.
 */
#include "truthrules.h"

#include "tau/hmap.h"
#include "tau/quantity.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const NAMES[TAU_TRUTH_RULE_COUNT] = {
        "agent.gpu-health",
        "agent.rdma-ports",
        "agent.csi-probe",
        "agent.pod-resources",
};

const char *tau_truth_rule_name(tau_truth_rule_id id)
{
	return (int)id >= 0 && id < TAU_TRUTH_RULE_COUNT ? NAMES[id] : NULL;
}

/* Append to a rule's detail; stops quietly at the buffer's end (ending in "..."). */
static void add(tau_truth_rule *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(tau_truth_rule *r, const char *fmt, ...)
{
	size_t len, room;
	va_list ap;
	int n;

	if (r->quiet)
		return; /* verdicts only (tau_truth_rules_failing) */
	len = strlen(r->detail);
	room = sizeof(r->detail) - len;
	if (room <= 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->detail + len, room, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n >= room)
		memcpy(r->detail + sizeof(r->detail) - 4, "...", 4);
}

static void verdict(tau_truth_rule *r, bool pass, bool unknown)
{
	r->pass = pass || unknown;
	r->unknown = unknown;
}

/* Whole units of an advertised resource; -1 when absent, 0 when not a whole number. */
static int64_t advertised(const tau_node_facts *f, const char *name)
{
	int64_t v = 0;

	for (size_t i = 0; f != NULL && i < f->n_allocatable; i++)
		if (strcmp(f->allocatable[i].name, name) == 0)
			return tau_quantity_value(&v, &f->allocatable[i].value) == 0 ? v : 0;
	return -1;
}

static void gpu_health(tau_truth_rule *r, const tau_node_facts *f, const tau_nodetruth *t)
{
	int64_t want = advertised(f, TAU_NODETRUTH_GPU_RESOURCE);
	const char *replicas =
	        f != NULL ? tau_node_facts_label(f, "nvidia.com/gpu.replicas") : NULL;
	const char *mig = f != NULL ? tau_node_facts_label(f, "nvidia.com/mig.strategy") : NULL;
	int64_t healthy;
	const char *source;

	if (want <= 0) {
		add(r, "Node advertises no %s", TAU_NODETRUTH_GPU_RESOURCE);
		verdict(r, true, false);
		return;
	}
	if (mig != NULL && strcmp(mig, "single") == 0) {
		add(r, "not checked: MIG strategy single, %s counts MIG devices, not GPUs",
		    TAU_NODETRUTH_GPU_RESOURCE);
		verdict(r, true, true);
		return;
	}
	if (replicas != NULL) {
		long long n = strtoll(replicas, NULL, 10);

		if (n > 1)
			want = (want + n - 1) / n; /* time-sliced: each GPU advertised n times */
	}
	if (t->gpus_probed) {
		healthy = t->gpus_healthy;
		source = "NVML";
	} else if (t->gpu.known) {
		healthy = t->gpu.healthy;
		source = "kubelet pod-resources";
	} else {
		add(r, "not checked: NVML not probed (%s) and kubelet pod-resources unreachable",
		    t->gpus_not_probed_reason != NULL ? t->gpus_not_probed_reason
		                                      : "no reason given");
		verdict(r, true, true);
		return;
	}
	add(r, "Node advertises %lld %s GPUs; the agent sees %lld healthy (%s)", (long long)want,
	    TAU_NODETRUTH_GPU_RESOURCE, (long long)healthy, source);
	if (t->gpus_probed)
		for (size_t i = 0; i < t->n_gpus; i++)
			if (!t->gpus[i].healthy)
				add(r, "; GPU %u (%s): %s", t->gpus[i].index,
				    t->gpus[i].uuid != NULL ? t->gpus[i].uuid : "UUID unknown",
				    t->gpus[i].reason != NULL ? t->gpus[i].reason : "unhealthy");
	verdict(r, healthy >= want, false);
}

static void rdma_ports(tau_truth_rule *r, const tau_node_facts *f, const tau_nodetruth *t)
{
	const char *rdma = NULL;
	int64_t amount = 0;

	for (size_t i = 0; f != NULL && i < f->n_allocatable; i++)
		if (strncmp(f->allocatable[i].name, "rdma/", 5) == 0 &&
		    !tau_quantity_is_zero(&f->allocatable[i].value)) {
			rdma = f->allocatable[i].name;
			amount = advertised(f, rdma);
			break;
		}
	if (rdma == NULL) {
		add(r, "Node advertises no rdma/* resource");
		verdict(r, true, false);
		return;
	}
	if (t->rdma_ports_total == 0) {
		add(r, "Node advertises %s %lld; the agent finds no InfiniBand/RoCE port", rdma,
		    (long long)amount);
		verdict(r, false, false);
		return;
	}
	add(r, "Node advertises %s %lld; %u of %u ports active", rdma, (long long)amount,
	    t->rdma_ports_up, t->rdma_ports_total);
	for (size_t i = 0; i < t->n_ports; i++)
		if (!t->ports[i].active)
			add(r, "; %s port %s not active (state %u)", t->ports[i].device,
			    t->ports[i].port, t->ports[i].state);
	verdict(r, t->rdma_ports_up == t->rdma_ports_total, false);
}

static void csi_probe(tau_truth_rule *r, const tau_nodetruth *t)
{
	size_t registered = 0, bad = 0;

	for (size_t i = 0; i < t->n_csi; i++) {
		const tau_truth_csi *c = &t->csi[i];

		if (!c->in_csi_node)
			continue;
		registered++;
		if (c->probed && c->ready == TAU_TRUTH_TRUE)
			continue;
		add(r, "%s%s registered in CSINode but not answering Probe: %s", bad ? "; " : "",
		    c->name,
		    c->error != NULL ? c->error
		    : !c->probed     ? "no live check (registration socket missing)"
		                     : "no answer");
		bad++;
	}
	if (registered == 0)
		add(r, "no CSI driver registered in CSINode");
	else if (bad == 0)
		add(r, "%zu registered CSI driver%s answer%s Probe ready", registered,
		    registered == 1 ? "" : "s", registered == 1 ? "s" : "");
	verdict(r, bad == 0, false);
}

static void pod_resources(tau_truth_rule *r, const tau_nodetruth *t)
{
	if (t->pod_resources_known && t->allocatable_known) {
		add(r, "kubelet pod-resources answered: %u GPU devices, %u in use, %u free",
		    t->gpu.devices, t->gpu.in_use, t->gpu.free);
		/* DRA devices are not device-plugin GPUs: what claims hold, said apart */
		if (t->n_dra > 0 || t->dra_dropped > 0)
			add(r, "; %zu DRA devices held by ResourceClaims%s", t->n_dra,
			    t->dra_dropped > 0 ? " and more the agent could not list" : "");
		verdict(r, true, false);
		return;
	}
	add(r, "kubelet pod-resources %s: %s",
	    t->pod_resources_known ? "answered List only" : "unreachable",
	    t->pod_resources_note != NULL ? t->pod_resources_note : "no reason given");
	verdict(r, false, false);
}

/* Evaluate every rule; `quiet`: verdicts only, no details written. */
static void evaluate(tau_truth_rule out[TAU_TRUTH_RULE_COUNT], const tau_node_facts *facts,
                     const tau_nodetruth *truth, bool quiet)
{
	for (int i = 0; i < TAU_TRUTH_RULE_COUNT; i++) {
		out[i].name = NAMES[i];
		out[i].pass = out[i].unknown = false;
		out[i].quiet = quiet;
		out[i].detail[0] = '\0';
		if (truth == NULL) {
			add(&out[i], "not checked: no agent inventory with node-local facts");
			verdict(&out[i], true, true);
		}
	}
	if (truth == NULL)
		return;
	gpu_health(&out[TAU_TRUTH_RULE_GPU_HEALTH], facts, truth);
	rdma_ports(&out[TAU_TRUTH_RULE_RDMA_PORTS], facts, truth);
	csi_probe(&out[TAU_TRUTH_RULE_CSI_PROBE], truth);
	pod_resources(&out[TAU_TRUTH_RULE_POD_RESOURCES], truth);
}

void tau_truth_rules(tau_truth_rule out[TAU_TRUTH_RULE_COUNT], const tau_node_facts *facts,
                     const tau_nodetruth *truth)
{
	evaluate(out, facts, truth, false);
}

int tau_truth_rules_failing(const tau_node_facts *facts, const tau_nodetruth *truth,
                            bool failed[TAU_TRUTH_RULE_COUNT])
{
	tau_truth_rule rules[TAU_TRUTH_RULE_COUNT];
	int failing = 0;

	evaluate(rules, facts, truth, true);
	for (int r = 0; r < TAU_TRUTH_RULE_COUNT; r++) {
		failing += rules[r].pass ? 0 : 1;
		if (failed != NULL)
			failed[r] = !rules[r].pass;
	}
	return failing;
}

/* libtau's FNV-1a of each failing rule's name and detail, chained; 0 is kept for "all pass". */
uint64_t tau_truth_rules_fingerprint(const tau_node_facts *facts, const tau_nodetruth *truth)
{
	tau_truth_rule rules[TAU_TRUTH_RULE_COUNT];
	uint64_t h = 0;
	bool failing = false;

	if (truth == NULL)
		return 0;
	tau_truth_rules(rules, facts, truth);
	for (int r = 0; r < TAU_TRUTH_RULE_COUNT; r++) {
		if (rules[r].pass)
			continue;
		failing = true;
		h = h * 31u + tau_hmap_hash(rules[r].name);
		h = h * 31u + tau_hmap_hash(rules[r].detail);
	}
	return !failing ? 0 : h != 0 ? h : 1;
}
