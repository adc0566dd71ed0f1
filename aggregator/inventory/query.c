/*
 * query.c - QueryService answers from the node store.
 *
 * The one idea: the answers are derived, never stored.  Whether a node
 * counts, why not, and the pool's sums all come from the store and the pool
 * at the moment of the query, so a query can never disagree with the pool
 * that WatchPool publishes.  Messages are built with malloc so that
 * protobuf-c's own free walks and releases them.  Workspace answers are
 * the same kind of translation, from the workspace controller's summaries.
 */
#include "query.h"
#include "capacity.h"
#include "pbmsg.h"
#include "report.h"
#include "truthrules.h"

#include "tau/error.h"
#include "tau/names.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() tau_error_set(TAU_ENOMEM, "out of memory building a query answer")

static char *dup_str(const char *s)
{
	return strdup(s != NULL ? s : "");
}

/* Set each *dst[i] to dup_str(src[i]), all of them; 0, or -1 when any copy failed. */
static int dup_strs(char **const *dst, const char *const *src, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		if ((*dst[i] = dup_str(src[i])) == NULL)
			rc = -1;
	return rc;
}

static void free_msg(void *m)
{
	if (m != NULL)
		protobuf_c_message_free_unpacked(m, NULL);
}

/* A new message of descriptor `d`, initialised; NULL, with the tau error set, when out of memory.
 */
static void *new_msg(const ProtobufCMessageDescriptor *d)
{
	ProtobufCMessage *m = malloc(d->sizeof_message);

	if (m == NULL) {
		OOM();
		return NULL;
	}
	protobuf_c_message_init(d, m);
	return m;
}

/* The record of node `name`, or -TAU_ENOTFOUND with the tau error set. */
static int known_node(const tau_nodestore *store, const char *name, tau_node_status *st)
{
	if (tau_nodestore_get(store, name, st) < 0)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not known", name);
	return 0;
}

/* Out of memory building `m` (freed): the tau error, as OOM(). */
static int oom_free(void *m)
{
	free_msg(m);
	return OOM();
}

/*
 * A message of two strings, `d` saying which (ResourceQuantity: name and quantity; an entry of
 * a string map: key and value): fields 1 and 2 get copies of `first` and `second`.
 * NULL, with the tau error set, when out of memory.
 */
static void *string_pair(const ProtobufCMessageDescriptor *d, const char *first, const char *second)
{
	ProtobufCMessage *m = new_msg(d);
	char **a, **b;

	if (m == NULL)
		return NULL;
	a = (char **)(void *)((char *)m + protobuf_c_message_descriptor_get_field(d, 1)->offset);
	b = (char **)(void *)((char *)m + protobuf_c_message_descriptor_get_field(d, 2)->offset);
	*a = dup_str(first);
	*b = dup_str(second);
	if (*a == NULL || *b == NULL) {
		free_msg(m);
		OOM();
		return NULL;
	}
	return m;
}

/* string_pair with a count as the second string. */
static void *count_pair(const ProtobufCMessageDescriptor *d, const char *name, uint64_t count)
{
	char q[32];

	snprintf(q, sizeof(q), "%" PRIu64, count);
	return string_pair(d, name, q);
}

bool tau_query_is_stale(const tau_node_status *st, const tau_query_opts *opts)
{
	if (st->stale)
		return true;
	return st->reported && st->connected && opts->stale_after_ms > 0 &&
	       opts->now_ms - st->last_heard_ms > opts->stale_after_ms;
}

static void set_rule(tau_query_rule *r, const char *name, bool pass, const char *detail)
{
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->pass = pass;
	snprintf(r->detail, sizeof(r->detail), "%s", detail);
}

bool tau_query_rules(const tau_nodestore *store, const tau_node_status *st,
                     tau_query_rule rules[TAU_QUERY_RULE_COUNT])
{
	const tau_pool *pool = tau_nodestore_pool(store);
	tau_pool_rule p1[TAU_POOL_RULE_COUNT];
	bool counted = true;
	size_t k = 0;

	if (st->api_error != NULL) {
		snprintf(rules[k].name, sizeof(rules[k].name), "%s", TAU_QUERY_RULE_API);
		rules[k].pass = false;
		snprintf(rules[k].detail, sizeof(rules[k].detail), "Node object unreadable: %s",
		         st->api_error);
		k++;
	} else {
		set_rule(&rules[k++], TAU_QUERY_RULE_API, st->api_known,
		         st->api_known ? "Node object exists"
		                       : "no Node object (only an agent reported it)");
	}
	/* The pool's own explanation when it holds the node (it knows what was left out). */
	if (tau_pool_explain(pool, st->name, p1) < 0) {
		tau_node_facts none = {0};

		(void)tau_pool_evaluate(pool, st->facts != NULL ? st->facts : &none, p1);
	}
	for (int i = 0; i < TAU_POOL_RULE_COUNT; i++) {
		snprintf(rules[k].name, sizeof(rules[k].name), "%s.%s",
		         i < TAU_POOL_RULE_FIRST_P2 ? "P1" : "P2", p1[i].name);
		rules[k].pass = p1[i].pass;
		snprintf(rules[k].detail, sizeof(rules[k].detail), "%s", p1[i].detail);
		k++;
	}
	if (st->reported && st->mismatch != NULL) {
		snprintf(rules[k].name, sizeof(rules[k].name), "%s", TAU_QUERY_RULE_AGENT);
		rules[k].pass = true;
		snprintf(rules[k].detail, sizeof(rules[k].detail),
		         "agent reported, but its report differs from the Node object, which is "
		         "what counts: %s",
		         st->mismatch);
		k++;
	} else if (st->source == TAU_NODE_SOURCE_AGENT)
		set_rule(&rules[k++], TAU_QUERY_RULE_AGENT, true,
		         "agent reported; counts with its Node object's facts");
	else if (st->source == TAU_NODE_SOURCE_API)
		set_rule(&rules[k++], TAU_QUERY_RULE_AGENT, true,
		         "agent never reported; counts with the Node's allocatable after the "
		         "initial "
		         "sync timeout");
	else if (st->reported)
		set_rule(&rules[k++], TAU_QUERY_RULE_AGENT, true, "agent reported");
	else
		set_rule(&rules[k++], TAU_QUERY_RULE_AGENT, false,
		         "agent has not reported yet (waiting for it or the initial sync timeout)");
	for (size_t i = 0; i < k; i++)
		counted = counted && rules[i].pass;
	/* The pool is the authority: a node it does not hold does not count. */
	return counted && st->counted;
}

static int fill_resources(Tau__Inventory__V1__ResourceQuantity ***out, size_t *n,
                          const tau_node_facts *f)
{
	if (f == NULL || f->n_allocatable == 0)
		return 0;
	*out = calloc(f->n_allocatable, sizeof(**out));
	if (*out == NULL)
		return OOM();
	for (size_t i = 0; i < f->n_allocatable; i++) {
		char q[TAU_QUANTITY_STR_MAX];

		if (tau_quantity_format(q, sizeof(q), &f->allocatable[i].value) < 0)
			snprintf(q, sizeof(q), "0");
		(*out)[i] = string_pair(&tau__inventory__v1__resource_quantity__descriptor,
		                        f->allocatable[i].name, q);
		if ((*out)[i] == NULL)
			return -TAU_ENOMEM;
		*n = i + 1;
	}
	return 0;
}

/* Problems a NodeTruth names one by one (problem_count has them all). */
#define TRUTH_PROBLEMS_MAX 16

static Tau__Inventory__V1__TriState tri_msg(tau_truth_tri t)
{
	return t == TAU_TRUTH_TRUE    ? TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_TRUE
	       : t == TAU_TRUTH_FALSE ? TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_FALSE
	                              : TAU__INVENTORY__V1__TRI_STATE__TRI_STATE_UNKNOWN;
}

static Tau__Inventory__V1__NodeHealth health_msg(tau_truth_health h)
{
	return h == TAU_TRUTH_HEALTH_OK ? TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_OK
	       : h == TAU_TRUTH_HEALTH_DEGRADED
	               ? TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_DEGRADED
	               : TAU__INVENTORY__V1__NODE_HEALTH__NODE_HEALTH_UNKNOWN;
}

/*
 * The summary of node `st`'s truth (no device list), its GPU figures as free now counts them
 * (capacity.h).  On failure *out holds what was built, for free_msg.
 */
static int truth_summary(Tau__Inventory__V1__NodeTruth **out, const tau_nodestore *store,
                         const tau_node_status *st)
{
	const tau_nodetruth *t = st->truth;
	Tau__Inventory__V1__NodeTruth *m = malloc(sizeof(*m));
	size_t np = t->n_problems < TRUTH_PROBLEMS_MAX ? t->n_problems : TRUTH_PROBLEMS_MAX;
	bool dra = false;
	tau_truth_gpus g = tau_capacity_node_gpus(st, tau_nodestore_dra_view(store), &dra);

	*out = m;
	if (m == NULL)
		return OOM();
	tau__inventory__v1__node_truth__init(m);
	m->health = health_msg(t->health);
	m->problem_count = (uint32_t)t->n_problems;
	m->gpus_through_dra = dra;
	m->gpus_known = g.known;
	m->gpu_devices = g.known ? g.devices : 0;
	m->gpus_healthy = g.known ? g.healthy : 0;
	m->gpus_in_use = g.known ? g.in_use : 0;
	m->gpus_free = g.known ? g.free : 0;
	m->pod_resources_probed = t->pod_resources_known;
	m->nvml_probed = t->gpus_probed;
	m->nvml_gpus = t->gpus_present;
	m->nvml_gpus_healthy = t->gpus_healthy;
	m->rdma_ports_total = t->rdma_ports_total;
	m->rdma_ports_active = t->rdma_ports_up;
	char **const texts[] = {&m->pod_resources_note, &m->nvml_not_probed_reason,
	                        &m->driver_version, &m->cuda_version};
	const char *const from[] = {t->pod_resources_note, t->gpus_not_probed_reason,
	                            t->driver_version, t->cuda_version};

	if (dup_strs(texts, from, 4) < 0)
		return OOM();
	if (np > 0 && (m->problems = calloc(np, sizeof(char *))) == NULL)
		return OOM();
	for (size_t i = 0; i < np; i++) {
		char line[TAU_NODETRUTH_MAX_TEXT + 160];

		if (!tau_nodetruth_problem(t, i, line, sizeof(line)))
			break;
		if ((m->problems[i] = strdup(line)) == NULL)
			return OOM();
		m->n_problems = i + 1;
	}
	if (tau_pb_new_repeated(&m->csi, &m->n_csi, t->n_csi,
	                        &tau__inventory__v1__csi_probe_result__descriptor) < 0)
		return OOM();
	for (size_t i = 0; i < t->n_csi; i++) {
		Tau__Inventory__V1__CsiProbeResult *c = m->csi[i];

		c->probed = t->csi[i].probed;
		c->ready = tri_msg(t->csi[i].ready);
		c->name = dup_str(t->csi[i].name);
		c->error = dup_str(t->csi[i].error);
		if (c->name == NULL || c->error == NULL)
			return OOM();
	}
	return 0;
}

/* Add every device of `t` to `m` (GetNode). */
static int truth_devices(Tau__Inventory__V1__NodeTruth *m, const tau_nodetruth *t)
{
	if (tau_pb_new_repeated(&m->devices, &m->n_devices, t->n_devices,
	                        &tau__inventory__v1__device_truth__descriptor) < 0)
		return OOM();
	for (size_t i = 0; i < t->n_devices; i++) {
		const tau_truth_device *d = &t->devices[i];
		Tau__Inventory__V1__DeviceTruth *dm = m->devices[i];
		char **const texts[] = {&dm->resource_name, &dm->device_id, &dm->reason,
		                        &dm->pod_namespace, &dm->pod_name,  &dm->container_name};
		const char *const from[] = {d->resource,      d->id,       d->reason,
		                            d->pod_namespace, d->pod_name, d->container};

		dm->numa_node = d->numa_node;
		dm->healthy = d->healthy;
		if (dup_strs(texts, from, 6) < 0)
			return OOM();
	}
	return 0;
}

/* What node st's DRA devices add beside its allocatable (NodeStatus.dra_resources). */
static int fill_dra_resources(Tau__Inventory__V1__NodeStatus *ns, const tau_nodestore *store,
                              const tau_node_status *st)
{
	const tau_dra_view *view = tau_nodestore_dra_view(store);
	const tau_dra_node *n = view != NULL ? tau_dra_view_node(view, st->name) : NULL;

	if (n == NULL || n->n_resources == 0 || st->facts == NULL)
		return 0;
	if ((ns->dra_resources = calloc(n->n_resources, sizeof(*ns->dra_resources))) == NULL)
		return OOM();
	for (size_t i = 0; i < n->n_resources; i++) {
		Tau__Inventory__V1__ResourceQuantity *r;

		if (!tau_dra_counts_beside(&n->resources[i], st->facts, NULL, 0))
			continue;
		r = count_pair(&tau__inventory__v1__resource_quantity__descriptor,
		               n->resources[i].name, n->resources[i].devices);
		if (r == NULL)
			return -TAU_ENOMEM;
		ns->dra_resources[ns->n_dra_resources++] = r;
	}
	return 0;
}

int tau_query_node_status(Tau__Inventory__V1__NodeStatus **out, const tau_nodestore *store,
                          const tau_node_status *st, const tau_query_opts *opts)
{
	Tau__Inventory__V1__NodeStatus *ns = malloc(sizeof(*ns));
	tau_query_rule rules[TAU_QUERY_RULE_COUNT];
	const char *cls =
	        st->facts != NULL ? tau_node_facts_label(st->facts, TAU_GPU_CLASS_LABEL) : NULL;
	size_t failed = 0;

	if (ns == NULL)
		return OOM();
	tau__inventory__v1__node_status__init(ns);
	ns->name = dup_str(st->name);
	ns->gpu_class = dup_str(cls);
	if (ns->name == NULL || ns->gpu_class == NULL)
		goto oom;
	ns->counted = tau_query_rules(store, st, rules);
	for (int i = 0; i < TAU_QUERY_RULE_COUNT; i++)
		failed += rules[i].pass ? 0 : 1;
	if (failed > 0) {
		ns->reasons = calloc(failed, sizeof(char *));
		if (ns->reasons == NULL)
			goto oom;
		for (int i = 0; i < TAU_QUERY_RULE_COUNT; i++) {
			char line[sizeof(rules[i].name) + sizeof(rules[i].detail) + 4];

			if (rules[i].pass)
				continue;
			snprintf(line, sizeof(line), "%.31s: %.383s", rules[i].name,
			         rules[i].detail);
			ns->reasons[ns->n_reasons] = strdup(line);
			if (ns->reasons[ns->n_reasons] == NULL)
				goto oom;
			ns->n_reasons++;
		}
	}
	ns->connected = st->connected;
	ns->stale = tau_query_is_stale(st, opts);
	ns->last_heard_unix_ms = st->last_heard_ms;
	if (fill_resources(&ns->allocatable, &ns->n_allocatable, st->facts) < 0 ||
	    fill_dra_resources(ns, store, st) < 0)
		goto oom;
	if (st->truth != NULL && truth_summary(&ns->truth, store, st) < 0)
		goto oom;
	*out = ns;
	return 0;
oom:
	return oom_free(ns);
}

int tau_query_list_nodes(Tau__Inventory__V1__ListNodesResponse **out, const tau_nodestore *store,
                         const Tau__Inventory__V1__ListNodesRequest *req,
                         const tau_query_opts *opts)
{
	Tau__Inventory__V1__ListNodesResponse *resp;
	size_t n = tau_nodestore_count(store), start = 0, want = TAU_QUERY_PAGE_DEFAULT, bytes = 0;
	const char *want_class = req != NULL && req->gpu_class != NULL && req->gpu_class[0] != '\0'
	                                 ? req->gpu_class
	                                 : NULL;
	const char *token = req != NULL && req->page_token != NULL ? req->page_token : "";
	size_t i;

	if (req != NULL && req->page_size > 0)
		want = req->page_size < TAU_QUERY_PAGE_MAX ? req->page_size : TAU_QUERY_PAGE_MAX;
	if (token[0] != '\0') {
		/* The token is the name of the last node of the previous page. */
		if (tau_names_check_dns1123_subdomain(token) < 0)
			return tau_error_set(TAU_EINVAL, "invalid page_token \"%.64s\"", token);
		start = tau_nodestore_index_after(store, token);
	}
	resp = malloc(sizeof(*resp));
	if (resp == NULL)
		return OOM();
	tau__inventory__v1__list_nodes_response__init(resp);
	if (n > start && (resp->nodes = calloc(want, sizeof(*resp->nodes))) == NULL)
		goto oom;
	for (i = start; i < n && resp->n_nodes < want && bytes < TAU_QUERY_PAGE_BYTES; i++) {
		tau_node_status st;
		Tau__Inventory__V1__NodeStatus *ns = NULL;

		if (tau_nodestore_at(store, i, &st) < 0)
			continue;
		if (want_class != NULL) {
			const char *cls =
			        st.facts != NULL
			                ? tau_node_facts_label(st.facts, TAU_GPU_CLASS_LABEL)
			                : NULL;

			if (cls == NULL || strcmp(cls, want_class) != 0)
				continue;
		}
		if (tau_query_node_status(&ns, store, &st, opts) < 0)
			goto oom;
		if (req != NULL && req->counted_only && !ns->counted) {
			free_msg(ns);
			continue;
		}
		/* Field overhead: tag, length prefix (at most 5 bytes for < 1 MiB). */
		bytes += protobuf_c_message_get_packed_size(&ns->base) + 6;
		resp->nodes[resp->n_nodes++] = ns;
	}
	if (i < n && resp->n_nodes > 0) {
		resp->next_page_token = dup_str(resp->nodes[resp->n_nodes - 1]->name);
		if (resp->next_page_token == NULL)
			goto oom;
	}
	*out = resp;
	return 0;
oom:
	return oom_free(resp);
}

int tau_query_get_node(Tau__Inventory__V1__GetNodeResponse **out, const tau_nodestore *store,
                       const char *name, const tau_query_opts *opts)
{
	Tau__Inventory__V1__GetNodeResponse *resp;
	tau_node_status st;

	if (known_node(store, name, &st) < 0)
		return -TAU_ENOTFOUND;
	if ((resp = new_msg(&tau__inventory__v1__get_node_response__descriptor)) == NULL)
		return -TAU_ENOMEM;
	if (tau_query_node_status(&resp->status, store, &st, opts) < 0)
		goto oom;
	if (st.truth != NULL && truth_devices(resp->status->truth, st.truth) < 0)
		goto oom;
	if (st.inventory != NULL) {
		/* Bytes we packed ourselves from a validated message: unpacking only fails on OOM.
		 */
		resp->inventory = tau__inventory__v1__node_inventory__unpack(NULL, st.inventory_len,
		                                                             st.inventory);
		if (resp->inventory == NULL)
			goto oom;
		/* What was left out equals the agent's facts: put back as the agent sent it. */
		if (tau_report_inventory_restore(resp->inventory, st.agent_facts,
		                                 st.inventory_elided) < 0)
			goto oom;
	}
	*out = resp;
	return 0;
oom:
	return oom_free(resp);
}

/* Append one rule to an ExplainNode response (room reserved by the caller). */
static int add_rule(Tau__Inventory__V1__ExplainNodeResponse *resp, const char *name, bool pass,
                    const char *detail)
{
	Tau__Inventory__V1__Rule *r = malloc(sizeof(*r));

	if (r == NULL)
		return -TAU_ENOMEM;
	tau__inventory__v1__rule__init(r);
	resp->rules[resp->n_rules++] = r;
	r->name = dup_str(name);
	r->pass = pass;
	r->detail = dup_str(detail);
	return r->name != NULL && r->detail != NULL ? 0 : -TAU_ENOMEM;
}

/*
 * The node's DRA devices (docs/budget.md, "How DRA devices count"): what counts beside
 * allocatable ("dra.devices"), then each note.  A dra.* rule that fails keeps devices out;
 * it never takes the node out of the pool.
 */
static size_t dra_rule_count(const tau_dra_node *n)
{
	return n == NULL ? 0 : 1 + n->n_resources + n->n_notes;
}

static int dra_rules(Tau__Inventory__V1__ExplainNodeResponse *resp, const tau_dra_node *n,
                     const tau_node_facts *facts)
{
	char detail[512];
	size_t len = 0;

	if (n == NULL)
		return 0;
	detail[0] = '\0';
	for (size_t i = 0; i < n->n_resources; i++) {
		char why[320];

		if (facts != NULL &&
		    !tau_dra_counts_beside(&n->resources[i], facts, why, sizeof(why))) {
			if (add_rule(resp, TAU_DRA_RULE_ALLOCATABLE, false, why) < 0)
				return -TAU_ENOMEM;
			continue;
		}
		len += (size_t)snprintf(
		        detail + len, len < sizeof(detail) ? sizeof(detail) - len : 0, "%s%u %s",
		        len > 0 ? ", " : "", n->resources[i].devices, n->resources[i].name);
	}
	if (add_rule(resp, "dra.devices", true,
	             len > 0 ? detail : "no DRA device of this node counts") < 0)
		return -TAU_ENOMEM;
	for (size_t i = 0; i < n->n_notes; i++) {
		const char *rule = n->notes[i].rule;
		bool informs = strcmp(rule, TAU_DRA_RULE_OVERLAP) == 0 ||
		               strcmp(rule, TAU_DRA_RULE_PARTITIONABLE) == 0;

		if (add_rule(resp, rule, informs, n->notes[i].detail) < 0)
			return -TAU_ENOMEM;
	}
	return 0;
}

/* The agent.* rules (truthrules.h): beside the pool's rules, never part of `counted`. */
static int explain_truth(Tau__Inventory__V1__ExplainNodeResponse *resp, const tau_node_status *st)
{
	tau_truth_rule truth[TAU_TRUTH_RULE_COUNT];

	tau_truth_rules(truth, st->facts, st->truth);
	if (tau_pb_new_repeated(&resp->node_truth, &resp->n_node_truth, TAU_TRUTH_RULE_COUNT,
	                        &tau__inventory__v1__rule__descriptor) < 0)
		return OOM();
	for (int i = 0; i < TAU_TRUTH_RULE_COUNT; i++) {
		Tau__Inventory__V1__Rule *r = resp->node_truth[i];

		r->name = dup_str(truth[i].name);
		r->pass = truth[i].pass;
		r->unknown = truth[i].unknown;
		r->detail = dup_str(truth[i].detail);
		if (r->name == NULL || r->detail == NULL)
			return OOM();
	}
	return 0;
}

int tau_query_explain(Tau__Inventory__V1__ExplainNodeResponse **out, const tau_nodestore *store,
                      const char *name)
{
	const tau_dra_view *dra = tau_nodestore_dra_view(store);
	const tau_dra_node *dra_node = dra != NULL ? tau_dra_view_node(dra, name) : NULL;
	Tau__Inventory__V1__ExplainNodeResponse *resp;
	tau_query_rule rules[TAU_QUERY_RULE_COUNT];
	tau_node_status st;

	if (known_node(store, name, &st) < 0)
		return -TAU_ENOTFOUND;
	if ((resp = new_msg(&tau__inventory__v1__explain_node_response__descriptor)) == NULL)
		return -TAU_ENOMEM;
	resp->counted = tau_query_rules(store, &st, rules);
	resp->name = dup_str(name);
	resp->flavor = dup_str(resp->counted && st.facts != NULL
	                               ? tau_node_facts_label(st.facts, TAU_GPU_CLASS_LABEL)
	                               : "");
	resp->rules = calloc(TAU_QUERY_RULE_COUNT + dra_rule_count(dra_node), sizeof(*resp->rules));
	if (resp->name == NULL || resp->flavor == NULL || resp->rules == NULL)
		goto oom;
	for (int i = 0; i < TAU_QUERY_RULE_COUNT; i++)
		if (add_rule(resp, rules[i].name, rules[i].pass, rules[i].detail) < 0)
			goto oom;
	if (dra_rules(resp, dra_node, st.facts) < 0)
		goto oom;
	if (explain_truth(resp, &st) < 0)
		goto oom;
	*out = resp;
	return 0;
oom:
	return oom_free(resp);
}

/* The DRA part of one flavor's sum of one resource. */
typedef struct dra_share {
	const char *resource; /* lent from the DRA view */
	uint64_t devices;
} dra_share;

/* The DRA parts of one flavor, sorted by resource. */
typedef struct dra_shares {
	dra_share *v;
	size_t n;
} dra_shares;

static int dra_share_add(dra_shares *s, const char *resource, uint64_t devices)
{
	size_t i = 0;
	dra_share *v;

	while (i < s->n && strcmp(s->v[i].resource, resource) < 0)
		i++;
	if (i < s->n && strcmp(s->v[i].resource, resource) == 0) {
		s->v[i].devices += devices;
		return 0;
	}
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (v == NULL)
		return OOM();
	memmove(&v[i + 1], &v[i], (s->n - i) * sizeof(*v));
	v[i] = (dra_share){.resource = resource, .devices = devices};
	s->v = v;
	s->n++;
	return 0;
}

/*
 * The DRA part of every flavor's sums (`out`: one entry per flavor, zeroed): the resources
 * each node of the DRA view that the pool counts adds beside its allocatable, as
 * tau_dra_merge_facts adds them.  O(DRA nodes x log nodes): nodes without DRA devices are
 * never visited.
 */
static int dra_shares_of(dra_shares *out, const tau_nodestore *store, const tau_pool *pool,
                         size_t nf)
{
	const tau_dra_view *view = tau_nodestore_dra_view(store);
	size_t nn = view != NULL ? tau_dra_view_node_count(view) : 0;

	for (size_t i = 0; i < nn; i++) {
		const tau_dra_node *n = tau_dra_view_node_at(view, i);
		const char *cls;
		tau_node_status st;
		size_t f = 0;

		if (n->n_resources == 0 || tau_nodestore_get(store, n->name, &st) < 0 ||
		    !st.counted || st.facts == NULL ||
		    (cls = tau_node_facts_label(st.facts, TAU_GPU_CLASS_LABEL)) == NULL)
			continue;
		while (f < nf && strcmp(tau_pool_flavor_at(pool, f)->name, cls) != 0)
			f++;
		if (f == nf)
			continue;
		for (size_t r = 0; r < n->n_resources; r++)
			if (tau_dra_counts_beside(&n->resources[r], st.facts, NULL, 0) &&
			    dra_share_add(&out[f], n->resources[r].name, n->resources[r].devices) <
			            0)
				return -TAU_ENOMEM;
	}
	return 0;
}

static int flavor_dra(Tau__Inventory__V1__Flavor *fl, const dra_shares *s)
{
	if (s->n > 0 && (fl->dra_resources = calloc(s->n, sizeof(*fl->dra_resources))) == NULL)
		return OOM();
	for (size_t r = 0; r < s->n; r++) {
		Tau__Inventory__V1__Flavor__DraResourcesEntry *e =
		        count_pair(&tau__inventory__v1__flavor__dra_resources_entry__descriptor,
		                   s->v[r].resource, s->v[r].devices);

		if (e == NULL)
			return -TAU_ENOMEM;
		fl->dra_resources[fl->n_dra_resources++] = e;
	}
	return 0;
}

/* One flavor of the pool with its sums and the DRA part of them. */
static int pool_flavor(Tau__Inventory__V1__Pool *p, const tau_pool_flavor *f, const dra_shares *dra)
{
	Tau__Inventory__V1__Flavor *fl = malloc(sizeof(*fl));

	if (fl == NULL)
		return OOM();
	tau__inventory__v1__flavor__init(fl);
	p->flavors[p->n_flavors++] = fl;
	fl->name = dup_str(f->name);
	if (fl->name == NULL)
		return OOM();
	fl->node_count = (uint32_t)f->nodes;
	if (f->n_resources > 0 &&
	    (fl->resources = calloc(f->n_resources, sizeof(*fl->resources))) == NULL)
		return OOM();
	for (size_t r = 0; r < f->n_resources; r++) {
		Tau__Inventory__V1__Flavor__ResourcesEntry *e;
		char q[TAU_QUANTITY_STR_MAX];

		if (tau_pool_sum_format(q, sizeof(q), &f->resources[r]) < 0)
			snprintf(q, sizeof(q), "0");
		e = string_pair(&tau__inventory__v1__flavor__resources_entry__descriptor,
		                f->resources[r].name, q);
		if (e == NULL)
			return -TAU_ENOMEM;
		fl->resources[fl->n_resources++] = e;
	}
	return flavor_dra(fl, dra);
}

static int pool_flavors(Tau__Inventory__V1__Pool *p, const tau_nodestore *store)
{
	const tau_pool *pool = tau_nodestore_pool(store);
	size_t nf = tau_pool_flavor_count(pool);
	dra_shares *dra;
	int rc = 0;

	if (nf == 0)
		return 0;
	dra = calloc(nf, sizeof(*dra));
	if (dra == NULL || dra_shares_of(dra, store, pool, nf) < 0) {
		rc = OOM();
		goto out;
	}
	p->flavors = calloc(nf, sizeof(*p->flavors));
	if (p->flavors == NULL) {
		rc = OOM();
		goto out;
	}
	for (size_t i = 0; i < nf && rc == 0; i++)
		rc = pool_flavor(p, tau_pool_flavor_at(pool, i), &dra[i]);
out:
	for (size_t i = 0; dra != NULL && i < nf; i++)
		free(dra[i].v);
	free(dra);
	return rc;
}

int tau_query_pool(Tau__Inventory__V1__Pool **out, const tau_nodestore *store)
{
	Tau__Inventory__V1__Pool *p = malloc(sizeof(*p));
	size_t missing;

	if (p == NULL)
		return OOM();
	tau__inventory__v1__pool__init(p);
	p->established = tau_nodestore_established(store);
	p->valid = tau_pool_invalid_reason(tau_nodestore_pool(store)) == NULL;
	p->invalid_reason = dup_str(tau_pool_invalid_reason(tau_nodestore_pool(store)));
	if (p->invalid_reason == NULL)
		goto oom;
	missing = tau_nodestore_missing(store, NULL, 0);
	p->missing_count = (uint32_t)missing;
	if (missing > TAU_QUERY_POOL_MISSING_MAX)
		missing = TAU_QUERY_POOL_MISSING_MAX; /* the Pool's size must not grow with the
		                                         cluster */
	if (missing > 0) {
		const char **names = calloc(missing, sizeof(*names));

		p->missing_nodes = calloc(missing, sizeof(char *));
		if (names == NULL || p->missing_nodes == NULL) {
			free(names);
			goto oom;
		}
		(void)tau_nodestore_missing(store, names, missing);
		for (size_t i = 0; i < missing; i++) {
			p->missing_nodes[i] = dup_str(names[i]);
			if (p->missing_nodes[i] == NULL) {
				free(names);
				goto oom;
			}
			p->n_missing_nodes = i + 1;
		}
		free(names);
	}
	if (pool_flavors(p, store) < 0)
		goto oom;
	*out = p;
	return 0;
oom:
	return oom_free(p);
}

/* ---- free-now capacity ---- */

int tau_query_capacity(Tau__Inventory__V1__GetCapacityResponse **out, const tau_nodestore *store,
                       const tau_query_opts *opts)
{
	Tau__Inventory__V1__GetCapacityResponse *resp = malloc(sizeof(*resp));
	size_t nf = tau_pool_flavor_count(tau_nodestore_pool(store));

	if (resp == NULL)
		return OOM();
	tau__inventory__v1__get_capacity_response__init(resp);
	if (tau_pb_new_repeated(&resp->classes, &resp->n_classes, nf,
	                        &tau__inventory__v1__class_capacity__descriptor) < 0)
		goto oom;
	for (size_t i = 0; i < nf; i++) {
		Tau__Inventory__V1__ClassCapacity *m = resp->classes[i];
		tau_class_capacity c;

		if (tau_capacity_class(&c, store, i, opts) < 0)
			goto oom; /* i < nf: cannot happen */
		m->gpu_class = dup_str(c.gpu_class);
		if (m->gpu_class == NULL)
			goto oom;
		m->nodes = c.nodes;
		m->nodes_known = c.nodes_known;
		m->nodes_unknown = c.nodes_unknown;
		m->nodes_degraded = c.nodes_degraded;
		m->gpus_healthy = c.gpus_healthy;
		m->gpus_in_use = c.gpus_in_use;
		m->gpus_free = c.gpus_free;
		m->whole_nodes_free = c.whole_nodes_free;
	}
	*out = resp;
	return 0;
oom:
	return oom_free(resp);
}

int tau_query_fit(Tau__Inventory__V1__FitResponse **out, const tau_nodestore *store,
                  const Tau__Inventory__V1__FitRequest *req, const tau_query_opts *opts)
{
	tau_fit_request fr = {.gpu_class = req->gpu_class,
	                      .gpus = req->gpus,
	                      .gpus_per_node = req->gpus_per_node,
	                      .whole_nodes = req->whole_nodes,
	                      .needs_ib = req->needs_ib};
	tau_fit_result r = {0};
	Tau__Inventory__V1__FitResponse *resp;
	int rc = tau_capacity_fit(&r, store, &fr, opts);

	if (rc < 0)
		return rc;
	resp = malloc(sizeof(*resp));
	if (resp == NULL)
		goto oom;
	tau__inventory__v1__fit_response__init(resp);
	resp->fits = r.fits;
	resp->nodes = r.nodes;
	resp->candidates = r.candidates;
	resp->candidate_gpus = r.candidate_gpus;
	resp->unknown_count = r.unknown_count;
	resp->reason = dup_str(r.reason);
	if (resp->reason == NULL)
		goto oom;
	if (tau_pb_new_repeated(&resp->placement, &resp->n_placement, r.n_places,
	                        &tau__inventory__v1__fit_placement__descriptor) < 0)
		goto oom;
	for (size_t i = 0; i < r.n_places; i++) {
		Tau__Inventory__V1__FitPlacement *p = resp->placement[i];

		p->gpus = r.places[i].gpus;
		p->gpus_free = r.places[i].free;
		if ((p->node = dup_str(r.places[i].node)) == NULL)
			goto oom;
	}
	if (r.n_unknown > 0 && (resp->unknown_nodes = calloc(r.n_unknown, sizeof(char *))) == NULL)
		goto oom;
	for (size_t i = 0; i < r.n_unknown; i++) {
		if ((resp->unknown_nodes[i] = dup_str(r.unknown[i])) == NULL)
			goto oom;
		resp->n_unknown_nodes = i + 1;
	}
	tau_fit_result_clear(&r);
	*out = resp;
	return 0;
oom:
	tau_fit_result_clear(&r);
	return oom_free(resp);
}

/* ---- workspaces ---- */

int tau_query_workspace(Tau__Inventory__V1__WorkspaceSummary **out, const tau_ws_summary *s)
{
	Tau__Inventory__V1__WorkspaceSummary *ws = malloc(sizeof(*ws));

	if (ws == NULL)
		return OOM();
	tau__inventory__v1__workspace_summary__init(ws);
	ws->name = dup_str(s->name);
	ws->phase = dup_str(s->phase);
	ws->namespace_ = dup_str(s->namespace_name);
	ws->queue = dup_str(s->local_queue);
	if (ws->name == NULL || ws->phase == NULL || ws->namespace_ == NULL || ws->queue == NULL)
		goto oom;
	if (tau_pb_new_repeated(&ws->conditions, &ws->n_conditions, s->n_conditions,
	                        &tau__inventory__v1__condition__descriptor) < 0)
		goto oom;
	for (size_t i = 0; i < s->n_conditions; i++) {
		const tau_ws_summary_condition *sc = &s->conditions[i];
		Tau__Inventory__V1__Condition *c = ws->conditions[i];

		c->type = dup_str(sc->type);
		c->status = dup_str(sc->status);
		c->reason = dup_str(sc->reason);
		c->message = dup_str(sc->message);
		c->last_transition_unix_ms = sc->last_transition_unix_ms;
		if (c->type == NULL || c->status == NULL || c->reason == NULL || c->message == NULL)
			goto oom;
	}
	*out = ws;
	return 0;
oom:
	/* Every string was replaced by a malloc'd copy or NULL, so protobuf-c's free fits. */
	return oom_free(ws);
}

int tau_query_list_workspaces(Tau__Inventory__V1__ListWorkspacesResponse **out,
                              const tau_ws_summary *s, size_t n)
{
	Tau__Inventory__V1__ListWorkspacesResponse *resp = malloc(sizeof(*resp));

	if (resp == NULL)
		return OOM();
	tau__inventory__v1__list_workspaces_response__init(resp);
	if (n > 0) {
		resp->workspaces = calloc(n, sizeof(*resp->workspaces));
		if (resp->workspaces == NULL)
			goto oom;
	}
	for (size_t i = 0; i < n; i++) {
		if (tau_query_workspace(&resp->workspaces[i], &s[i]) < 0)
			goto oom;
		resp->n_workspaces++;
	}
	*out = resp;
	return 0;
oom:
	return oom_free(resp);
}
