/*
 * capacity.c - free-now figures per GPU class and the fit query, from node truth.
 *
 * The one idea: a node is one of three things for a new job, decided in one
 * place (classify): not a place at all (the pool does not count it), unknown
 * (no live agent report with pod-resources answered), or known with its free
 * GPUs.  The per-class figures and the fit answer are both sums over that
 * verdict, so they cannot disagree, and "unknown" never becomes "free".
 * Which GPUs a node has, device-plugin or DRA, is decided in one place too
 * (tau_capacity_node_gpus), which `tau inventory nodes` reads as well.
 */
#include "capacity.h"

#include "tau/error.h"
#include "tau/nodefacts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum verdict {
	NOT_COUNTED = 0, /* not of the class, or the pool does not count it */
	UNKNOWN,         /* counted, figures not known */
	KNOWN            /* counted, figures known */
} verdict;

/* The DRA resource of node `st` the pool counts as its GPUs, or NULL. */
static const tau_dra_resource *dra_gpus(const tau_node_status *st, const tau_dra_view *view)
{
	const tau_dra_node *n;

	if (view == NULL || st->facts == NULL || (n = tau_dra_view_node(view, st->name)) == NULL)
		return NULL;
	for (size_t i = 0; i < n->n_resources; i++)
		if (strcmp(n->resources[i].name, TAU_NODETRUTH_GPU_RESOURCE) == 0)
			return tau_dra_counts_beside(&n->resources[i], st->facts, NULL, 0)
			               ? &n->resources[i]
			               : NULL;
	return NULL;
}

/* Units of `n` under the GPU resource that a claim holds (t->dra and n's members, both sorted). */
static uint32_t dra_units_held(const tau_dra_node *n, const tau_nodetruth *t)
{
	uint8_t seen[(TAU_NODETRUTH_MAX_DRA + 7) / 8];
	uint8_t *held =
	        n->n_units <= TAU_NODETRUTH_MAX_DRA ? seen : calloc((n->n_units + 7) / 8, 1);
	uint32_t count = 0;

	if (held == NULL)
		return n->n_units; /* out of memory: never more free than there is */
	if (held == seen)
		memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < t->n_dra; i++) {
		const tau_truth_dra_device *d = &t->dra[i];
		const tau_dra_member *m = tau_dra_node_member(n, d->driver, d->pool, d->device);

		if (m == NULL || strcmp(m->resource, TAU_NODETRUTH_GPU_RESOURCE) != 0 ||
		    (held[m->unit / 8] & (1u << (m->unit % 8))) != 0)
			continue;
		held[m->unit / 8] |= (uint8_t)(1u << (m->unit % 8));
		count++;
	}
	if (held != seen)
		free(held);
	return count;
}

tau_truth_gpus tau_capacity_node_gpus(const tau_node_status *st, const tau_dra_view *view,
                                      bool *dra)
{
	tau_truth_gpus g = {0};
	const tau_dra_resource *r = dra_gpus(st, view);

	if (dra != NULL)
		*dra = r != NULL;
	if (st->truth == NULL)
		return g;
	if (r == NULL)
		return st->truth->gpu;
	g.known = st->truth->dra_known;
	if (!g.known)
		return g;
	g.devices = r->devices;
	g.healthy = r->devices;
	g.in_use = dra_units_held(tau_dra_view_node(view, st->name), st->truth);
	if (g.in_use > g.devices)
		g.in_use = g.devices;
	g.free = g.devices - g.in_use;
	return g;
}

/*
 * The verdict on the store's k-th node (*st, NOT_COUNTED when there is none) for class `cls`;
 * *g receives its figures when KNOWN.
 */
static verdict classify(const tau_nodestore *store, size_t k, const char *cls,
                        const tau_dra_view *view, const tau_query_opts *opts, tau_node_status *st,
                        tau_truth_gpus *g)
{
	const char *c;

	if (tau_nodestore_at(store, k, st) < 0)
		return NOT_COUNTED;
	c = st->facts != NULL ? tau_node_facts_label(st->facts, TAU_GPU_CLASS_LABEL) : NULL;
	if (c == NULL || strcmp(c, cls) != 0 || !st->counted)
		return NOT_COUNTED;
	if (st->truth == NULL || tau_query_is_stale(st, opts))
		return UNKNOWN;
	*g = tau_capacity_node_gpus(st, view, NULL);
	return g->known ? KNOWN : UNKNOWN;
}

/* Known, with GPUs, none in use and every one healthy. */
static bool whole_free(const tau_truth_gpus *g)
{
	return g->devices > 0 && g->in_use == 0 && g->free == g->devices;
}

int tau_capacity_class(tau_class_capacity *out, const tau_nodestore *store, size_t i,
                       const tau_query_opts *opts)
{
	const tau_pool *pool = tau_nodestore_pool(store);
	const tau_pool_flavor *f;
	const tau_dra_view *view = tau_nodestore_dra_view(store);
	tau_class_capacity c;
	size_t n = tau_nodestore_count(store);

	if (i >= tau_pool_flavor_count(pool))
		return tau_error_set(TAU_ENOTFOUND, "no GPU class %zu", i);
	f = tau_pool_flavor_at(pool, i);
	memset(&c, 0, sizeof(c));
	snprintf(c.gpu_class, sizeof(c.gpu_class), "%s", f->name);
	for (size_t k = 0; k < n; k++) {
		tau_node_status st;
		tau_truth_gpus g = {0};
		verdict v = classify(store, k, f->name, view, opts, &st, &g);

		if (v == NOT_COUNTED)
			continue;
		c.nodes++;
		if (v == UNKNOWN) {
			c.nodes_unknown++;
			continue;
		}
		c.nodes_known++;
		c.nodes_degraded += st.truth->health == TAU_TRUTH_HEALTH_DEGRADED ? 1 : 0;
		c.gpus_healthy += g.healthy;
		c.gpus_in_use += g.in_use;
		c.gpus_free += g.free;
		c.whole_nodes_free += whole_free(&g) ? 1 : 0;
	}
	*out = c;
	return 0;
}

static int check_request(const tau_fit_request *req, const tau_pool *pool)
{
	size_t nf = tau_pool_flavor_count(pool);

	if (req->gpu_class == NULL || req->gpu_class[0] == '\0')
		return tau_error_set(TAU_EINVAL, "gpu_class is required");
	if (req->gpus == 0)
		return tau_error_set(TAU_EINVAL, "gpus must be at least 1");
	if (req->gpus > TAU_FIT_MAX_GPUS)
		return tau_error_set(TAU_EINVAL, "gpus %u is over the limit of %u", req->gpus,
		                     TAU_FIT_MAX_GPUS);
	if (req->whole_nodes && req->gpus_per_node > 0)
		return tau_error_set(
		        TAU_EINVAL,
		        "whole_nodes and gpus_per_node exclude each other (a whole node "
		        "gives the job all its GPUs)");
	if (req->gpus_per_node > 0 && req->gpus % req->gpus_per_node != 0)
		return tau_error_set(TAU_EINVAL,
		                     "gpus %u is not a multiple of gpus_per_node %u (N per node "
		                     "across M nodes)",
		                     req->gpus, req->gpus_per_node);
	for (size_t i = 0; i < nf; i++) {
		if (strcmp(tau_pool_flavor_at(pool, i)->name, req->gpu_class) == 0)
			return 0;
	}
	return tau_error_set(TAU_ENOTFOUND,
	                     "GPU class %.63s is not in the pool (%zu classes; "
	                     "tau inventory pool lists them)",
	                     req->gpu_class, nf);
}

/* A node that can take part of the job. */
typedef struct candidate {
	const char *node;
	uint32_t offer; /* GPUs it can give the job */
	uint32_t free;  /* free GPUs there now */
} candidate;

/* Largest offer first, then by name: deterministic, and as few nodes as possible. */
static int by_offer_desc(const void *a, const void *b)
{
	const candidate *x = a, *y = b;

	if (x->offer != y->offer)
		return x->offer > y->offer ? -1 : 1;
	return strcmp(x->node, y->node);
}

/* What a known node (figures `g`) can give the job under req's options; 0: nothing. */
static uint32_t offer(const tau_nodetruth *t, const tau_truth_gpus *g, const tau_fit_request *req)
{
	if (req->needs_ib && !tau_nodetruth_has_active_port(t))
		return 0;
	if (req->whole_nodes)
		return whole_free(g) ? g->devices : 0;
	if (req->gpus_per_node > 0)
		return g->free >= req->gpus_per_node ? req->gpus_per_node : 0;
	return g->free;
}

static const char *options_text(const tau_fit_request *req, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", req->whole_nodes ? ", whole nodes" : "",
	         req->gpus_per_node > 0 ? ", N per node" : "",
	         req->needs_ib ? ", with an ACTIVE RDMA port" : "");
	return buf;
}

int tau_capacity_fit(tau_fit_result *out, const tau_nodestore *store, const tau_fit_request *req,
                     const tau_query_opts *opts)
{
	const tau_dra_view *view = tau_nodestore_dra_view(store);
	size_t n = tau_nodestore_count(store), nc = 0, len;
	tau_fit_result r;
	candidate *cand = NULL;
	uint32_t need = req->gpus, got = 0;
	char opt[96];
	int rc = check_request(req, tau_nodestore_pool(store));

	if (rc < 0)
		return rc;
	memset(&r, 0, sizeof(r));
	if (n > 0 && (cand = calloc(n, sizeof(*cand))) == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory answering a fit query");
	for (size_t k = 0; k < n; k++) {
		tau_node_status st;
		tau_truth_gpus g = {0};
		verdict v = classify(store, k, req->gpu_class, view, opts, &st, &g);
		uint32_t o;

		if (v == NOT_COUNTED)
			continue;
		r.nodes++;
		if (v == UNKNOWN) {
			if (r.n_unknown < TAU_FIT_UNKNOWN_NAMES)
				r.unknown[r.n_unknown++] = st.name;
			r.unknown_count++;
			continue;
		}
		o = offer(st.truth, &g, req);
		if (o == 0)
			continue;
		cand[nc++] = (candidate){.node = st.name, .offer = o, .free = g.free};
		r.candidates++;
		r.candidate_gpus += o;
	}
	qsort(cand, nc, sizeof(*cand), by_offer_desc);
	for (size_t k = 0; k < nc && got < need; k++) {
		r.n_places++;
		got += cand[k].offer < need - got ? cand[k].offer : need - got;
	}
	r.fits = got >= need;
	if (r.fits && r.n_places > 0) {
		r.places = calloc(r.n_places, sizeof(*r.places));
		if (r.places == NULL) {
			free(cand);
			return tau_error_set(TAU_ENOMEM, "out of memory answering a fit query");
		}
		got = 0;
		for (size_t k = 0; k < r.n_places; k++) {
			uint32_t take = cand[k].offer < need - got ? cand[k].offer : need - got;

			r.places[k] = (tau_fit_place){
			        .node = cand[k].node, .gpus = take, .free = cand[k].free};
			got += take;
		}
	} else {
		r.n_places = 0;
	}
	free(cand);
	options_text(req, opt, sizeof(opt));
	if (r.fits) {
		snprintf(r.reason, sizeof(r.reason), "%u GPUs of class %s fit now on %zu node%s%s",
		         need, req->gpu_class, r.n_places, r.n_places == 1 ? "" : "s", opt);
	} else {
		snprintf(r.reason, sizeof(r.reason),
		         "%u GPUs of class %s do not fit now%s: %u can be had on %u of %u counted "
		         "nodes",
		         need, req->gpu_class, opt, r.candidate_gpus, r.candidates, r.nodes);
		len = strlen(r.reason);
		if (r.unknown_count > 0)
			snprintf(r.reason + len, sizeof(r.reason) - len,
			         "; %u node%s unknown (no live agent report with pod-resources; "
			         "never taken as free)",
			         r.unknown_count, r.unknown_count == 1 ? "" : "s");
	}
	*out = r;
	return 0;
}

void tau_fit_result_clear(tau_fit_result *r)
{
	free(r->places);
	memset(r, 0, sizeof(*r));
}
