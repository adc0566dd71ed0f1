/*
 * snapshot.c - deep copies of the pool for readers outside the state lock.
 *
 * The one idea: a reader never holds a pointer into the live store.  The
 * copy is made once, under the lock, and everything in it is owned by the
 * snapshot, so the budget controller can take its time over it while
 * reports and Node events keep changing the live pool.
 */
#include "snapshot.h"

#include "truthrules.h"

#include "tau/error.h"
#include "tau/mem.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

void tau_pool_snapshot_free(tau_pool_snapshot *snap)
{
	if (snap == NULL)
		return;
	for (size_t i = 0; i < snap->n_flavors; i++) {
		tau_pool_snapshot_flavor *f = &snap->flavors[i];

		for (size_t r = 0; r < f->n_resources; r++)
			free(f->resources[r].name);
		tau_free_many(f->resources, f->name);
	}
	/* the nodes' strings and label arrays live in the two arenas */
	tau_free_many(snap->invalid_reason, snap->flavors, snap->nodes, snap->node_strings,
	              snap->node_labels);
	free(snap);
}

static int copy_flavors(tau_pool_snapshot *snap, const tau_pool *pool)
{
	size_t n = tau_pool_flavor_count(pool);

	if (n == 0)
		return 0;
	snap->flavors = calloc(n, sizeof(*snap->flavors));
	if (snap->flavors == NULL)
		return -TAU_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const tau_pool_flavor *src = tau_pool_flavor_at(pool, i);
		tau_pool_snapshot_flavor *dst = &snap->flavors[i];

		snap->n_flavors = i + 1;
		dst->name = strdup(src->name);
		dst->nodes = src->nodes;
		if (dst->name == NULL)
			return -TAU_ENOMEM;
		if (src->n_resources == 0)
			continue;
		dst->resources = calloc(src->n_resources, sizeof(*dst->resources));
		if (dst->resources == NULL)
			return -TAU_ENOMEM;
		for (size_t r = 0; r < src->n_resources; r++) {
			dst->n_resources = r + 1;
			dst->resources[r].value = src->resources[r].total;
			dst->resources[r].name = strdup(src->resources[r].name);
			if (dst->resources[r].name == NULL)
				return -TAU_ENOMEM;
		}
	}
	return 0;
}

/* The facts of record i when the pool counts it now, else NULL. */
static const tau_node_facts *counted_facts(const tau_nodestore *store, size_t i)
{
	tau_node_status st;

	if (tau_nodestore_at(store, i, &st) < 0 || st.source == TAU_NODE_SOURCE_NONE ||
	    st.facts == NULL || !st.counted)
		return NULL;
	return st.facts;
}

static size_t str_size(const char *s)
{
	return s != NULL ? strlen(s) + 1 : 0;
}

/* Copy `s` (NULL stays NULL) to *at, which then points past it. */
static char *pack(char **at, const char *s)
{
	char *dst = *at;
	size_t n = str_size(s);

	if (s == NULL)
		return NULL;
	memcpy(dst, s, n);
	*at += n;
	return dst;
}

/*
 * The counted nodes' name, os, gpu class and labels, packed into two arenas (one for the
 * strings, one for the label pointer arrays): four allocations for the whole pool instead of
 * a score per node, because this runs under the state lock on every budget pass.  Two walks:
 * sizes, then copies; the store cannot change in between (the caller holds its lock).
 */
static int copy_nodes(tau_pool_snapshot *snap, const tau_nodestore *store)
{
	size_t counted = 0, n = tau_nodestore_count(store), chars = 0, labels = 0;
	char *at, **lp;

	for (size_t i = 0; i < snap->n_flavors; i++)
		counted += snap->flavors[i].nodes;
	if (counted == 0)
		return 0;
	for (size_t i = 0, seen = 0; i < n && seen < counted; i++) {
		const tau_node_facts *f = counted_facts(store, i);

		if (f == NULL)
			continue;
		seen++;
		chars += str_size(f->name) + str_size(f->os) + str_size(f->gpu_class);
		for (size_t l = 0; l < f->n_labels; l++)
			chars += str_size(f->label_keys[l]) + str_size(f->label_values[l]);
		labels += f->n_labels;
	}
	snap->nodes = calloc(counted, sizeof(*snap->nodes));
	snap->node_strings = malloc(chars > 0 ? chars : 1);
	snap->node_labels = malloc((2 * labels > 0 ? 2 * labels : 1) * sizeof(char *));
	if (snap->nodes == NULL || snap->node_strings == NULL || snap->node_labels == NULL)
		return -TAU_ENOMEM;
	at = snap->node_strings;
	lp = snap->node_labels;
	for (size_t i = 0; i < n && snap->n_nodes < counted; i++) {
		const tau_node_facts *f = counted_facts(store, i);
		tau_node_facts *dst;

		if (f == NULL)
			continue;
		dst = &snap->nodes[snap->n_nodes++];
		dst->name = pack(&at, f->name);
		dst->os = pack(&at, f->os);
		dst->gpu_class = pack(&at, f->gpu_class);
		dst->ready = f->ready;
		dst->schedulable = f->schedulable;
		dst->deleting = f->deleting;
		dst->n_labels = f->n_labels;
		dst->label_keys = lp;
		dst->label_values = lp + f->n_labels;
		for (size_t l = 0; l < f->n_labels; l++) {
			dst->label_keys[l] = pack(&at, f->label_keys[l]);
			dst->label_values[l] = pack(&at, f->label_values[l]);
		}
		lp += 2 * f->n_labels;
	}
	return 0;
}

_Static_assert(sizeof(((tau_pool_truth_example *)0)->detail) ==
                       sizeof(((tau_truth_rule *)0)->detail),
               "a summary keeps a rule's whole detail");

/*
 * The counted nodes' agent.* verdicts (truthrules.h), for the NodeTruthAgrees condition: how
 * many counted nodes report node-local facts, how many of them disagree with their Node, and
 * the first few (name order) with their first failing rule.  Only nodes with node truth are
 * read, from the verdicts the store keeps with each record (tau_node_status.truth_failed);
 * the rules run again only for the few named, for their details.
 */
static void summarise_truth(tau_pool_truth_summary *sum, const tau_nodestore *store)
{
	size_t n = tau_nodestore_count(store);

	for (size_t i = 0; i < n; i++) {
		tau_truth_rule rules[TAU_TRUTH_RULE_COUNT];
		tau_pool_truth_example *ex;
		tau_node_status st;
		int first = -1, failing;

		if (tau_nodestore_at(store, i, &st) < 0 || !st.counted || st.truth == NULL)
			continue;
		sum->reporting++;
		/* The verdicts the store keeps; the details only for the few named. */
		if ((failing = __builtin_popcount(st.truth_failed)) == 0)
			continue;
		sum->disagreeing++;
		if (sum->n_examples >= TAU_POOL_TRUTH_EXAMPLES)
			continue;
		tau_truth_rules(rules, st.facts, st.truth);
		for (int r = 0; r < TAU_TRUTH_RULE_COUNT && first < 0; r++)
			if (!rules[r].pass)
				first = r;
		if (first < 0)
			continue; /* cannot happen: the same rules */
		ex = &sum->examples[sum->n_examples++];
		snprintf(ex->node, sizeof(ex->node), "%s", st.name);
		ex->rule = rules[first].name;
		ex->more_rules = (unsigned int)failing - 1;
		memcpy(ex->detail, rules[first].detail, sizeof(ex->detail));
	}
}

/*
 * The DeviceClasses of the DRA view the nodes were counted with, for the DRAClassesUsable
 * condition: how many map to a quota resource, how many of those count nothing, and the
 * first few (name order) with the reason, which quotes the refused expression.
 */
static void summarise_dra(tau_pool_dra_summary *sum, const tau_nodestore *store)
{
	const tau_dra_view *view = tau_nodestore_dra_view(store);
	const char *kueue = tau_nodestore_dra_kueue_error(store);
	size_t n = view != NULL ? tau_dra_view_class_count(view) : 0;

	if (kueue != NULL)
		snprintf(sum->kueue_error, sizeof(sum->kueue_error), "%s", kueue);
	for (size_t i = 0; i < n; i++) {
		const tau_dra_class_state *cs = tau_dra_view_class_at(view, i);
		tau_pool_dra_class_example *ex;

		if (cs->via == TAU_DRA_VIA_NONE)
			continue;
		sum->mapped++;
		if (!cs->unusable)
			continue;
		sum->unusable++;
		if (sum->n_examples >= TAU_POOL_DRA_EXAMPLES)
			continue;
		ex = &sum->examples[sum->n_examples++];
		snprintf(ex->name, sizeof(ex->name), "%s", cs->cls->name);
		/* The class's own reason is whole; the view's note is cut at 320 bytes. */
		if (cs->cls->unusable != NULL)
			snprintf(ex->reason, sizeof(ex->reason), "class %s: %s", cs->cls->name,
			         cs->cls->unusable);
		else
			snprintf(ex->reason, sizeof(ex->reason), "%s", cs->note);
	}
}

int tau_pool_snapshot_build(tau_pool_snapshot **out, const tau_nodestore *store)
{
	const tau_pool *pool = tau_nodestore_pool(store);
	const char *why = tau_pool_invalid_reason(pool);
	tau_pool_snapshot *snap = calloc(1, sizeof(*snap));

	if (snap == NULL)
		goto oom;
	snap->established = tau_nodestore_established(store);
	snap->valid = why == NULL;
	snap->generation = tau_pool_generation(pool);
	snap->missing_nodes = tau_nodestore_missing(store, NULL, 0);
	if ((why != NULL && (snap->invalid_reason = strdup(why)) == NULL) ||
	    copy_flavors(snap, pool) < 0 || copy_nodes(snap, store) < 0)
		goto oom;
	summarise_truth(&snap->truth, store);
	summarise_dra(&snap->dra, store);
	*out = snap;
	return 0;
oom:
	tau_pool_snapshot_free(snap);
	return tau_error_set(TAU_ENOMEM, "out of memory taking a pool snapshot");
}
