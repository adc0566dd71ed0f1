/*
 * dra.c - the DRA devices that count, per node and quota resource (dra.h).
 *
 * The one idea: counting happens per *unit*, not per device.  A unit is a
 * device, or every device that draws on one shared counter set (a
 * partitionable GPU and its partitions).  Each (unit, class) that matches is
 * one record; sorting the records by (node, unit, class name) puts a unit's
 * classes side by side, so "count once, under the first class by name" and
 * "report the other classes as an overlap" are one walk.  The same walk names
 * each counted unit's devices (tau_dra_member), so free-now figures can tell
 * which units a ResourceClaim holds; a partitionable unit's devices that no
 * class selects get a record without a class for that alone (a claim on a
 * partition holds its GPU).  The view is rebuilt
 * from all inputs on each change: the result depends only on the objects,
 * never on the order they arrived in.
 */
#include "dra.h"
#include "sorted.h"

#include "tau/array.h"
#include "tau/error.h"
#include "tau/mem.h"
#include "tau/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct match {
	const char *node;
	const char *driver;
	const char *pool;
	const char *unit;   /* device name, or the counter set's name */
	const char *device; /* the device itself */
	bool counter_set;   /* unit is a shared counter set */
	size_t class_index; /* into view->classes (sorted by name); NO_CLASS: none selects it */
} match;

/* A device of a partitionable unit that no class selects (it still belongs to the unit). */
#define NO_CLASS SIZE_MAX

typedef struct node_note {
	const char *node;
	tau_dra_note note;
} node_note;

struct tau_dra_view {
	tau_dra_class_state *classes;
	size_t n_classes;
	tau_dra_pool_state *pools;
	size_t n_pools;
	tau_dra_node *nodes;
	size_t n_nodes;
	tau_dra_note *notes; /* cluster-wide */
	size_t n_notes;
	/* building */
	match *matches;
	size_t n_matches, cap_matches;
	node_note *node_notes;
	size_t n_node_notes, cap_node_notes;
	tau_dra_member *members; /* the members of the node being counted */
	size_t n_members, cap_members;
};

static char *vformat(const char *fmt, va_list ap)
{
	va_list copy;
	int n;
	char *s;

	va_copy(copy, ap);
	n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	if (n < 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (s != NULL)
		vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

/* A note about `node` (NULL: cluster-wide). */
static int note(tau_dra_view *v, const char *node, const char *rule, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int note(tau_dra_view *v, const char *node, const char *rule, const char *fmt, ...)
{
	va_list ap;
	char *detail;

	va_start(ap, fmt);
	detail = vformat(fmt, ap);
	va_end(ap);
	if (detail == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
	if (node == NULL) {
		size_t cap = v->n_notes; /* exact size: cluster-wide notes are few */
		tau_dra_note *p = realloc(v->notes, (cap + 1) * sizeof(*p));

		if (p == NULL) {
			free(detail);
			return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
		}
		v->notes = p;
		v->notes[v->n_notes++] = (tau_dra_note){.rule = rule, .detail = detail};
		return 0;
	}
	if (tau_array_grow((void **)&v->node_notes, &v->cap_node_notes, v->n_node_notes + 1,
	                   sizeof(*v->node_notes)) < 0) {
		free(detail);
		return -TAU_ENOMEM;
	}
	v->node_notes[v->n_node_notes++] =
	        (node_note){.node = node, .note = {.rule = rule, .detail = detail}};
	return 0;
}

static void free_note(tau_dra_note *n)
{
	free(n->detail);
}

void tau_dra_view_free(tau_dra_view *view)
{
	if (view == NULL)
		return;
	for (size_t i = 0; i < view->n_nodes; i++) {
		for (size_t j = 0; j < view->nodes[i].n_notes; j++)
			free_note(&view->nodes[i].notes[j]);
		tau_free_many(view->nodes[i].notes, view->nodes[i].resources,
		              view->nodes[i].members);
	}
	for (size_t i = 0; i < view->n_notes; i++)
		free_note(&view->notes[i]);
	for (size_t i = 0; i < view->n_node_notes; i++)
		free_note(&view->node_notes[i].note);
	tau_free_many(view->nodes, view->notes, view->node_notes, view->matches, view->members,
	              view->classes, view->pools);
	free(view);
}

static int by_class_name(const void *a, const void *b)
{
	return strcmp(((const tau_dra_class_state *)a)->cls->name,
	              ((const tau_dra_class_state *)b)->cls->name);
}

static int classes_resolve(tau_dra_view *v, const tau_dra_class *classes, size_t n,
                           const tau_kueue_dra_mapping *mappings, size_t n_mappings)
{
	if (n == 0)
		return 0;
	v->classes = calloc(n, sizeof(*v->classes));
	if (v->classes == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
	v->n_classes = n;
	for (size_t i = 0; i < n; i++) {
		tau_dra_class_state *s = &v->classes[i];

		s->cls = &classes[i];
		s->via = tau_dra_class_resource(&s->resource, s->cls, mappings, n_mappings, s->note,
		                                sizeof(s->note));
		if (s->via == TAU_DRA_VIA_CONFLICT) {
			s->unusable = true;
		} else if (s->cls->unusable != NULL) {
			s->unusable = true;
			s->resource = NULL;
			tau_str_printf(s->note, sizeof(s->note), "class %s: %s", s->cls->name,
			               s->cls->unusable);
		}
	}
	qsort(v->classes, n, sizeof(*v->classes), by_class_name);
	return 0;
}

/* Evaluate every counting class against one device of a complete pool. */
static int add_match(tau_dra_view *v, const tau_dra_slice *s, const tau_dra_device *d,
                     const char *node, size_t class_index)
{
	if (tau_array_grow((void **)&v->matches, &v->cap_matches, v->n_matches + 1,
	                   sizeof(*v->matches)) < 0)
		return -TAU_ENOMEM;
	v->matches[v->n_matches++] = (match){
	        .node = node,
	        .driver = s->driver,
	        .pool = s->pool,
	        .unit = d->counter_set != NULL ? d->counter_set : d->name,
	        .device = d->name,
	        .counter_set = d->counter_set != NULL,
	        .class_index = class_index,
	};
	return 0;
}

static int match_device(tau_dra_view *v, const tau_dra_slice *s, const tau_dra_device *d,
                        const char *node)
{
	tau_dra_device_view dv = tau_dra_device_view_of(s, d);
	size_t matched = 0;

	for (size_t c = 0; c < v->n_classes; c++) {
		const tau_dra_class_state *cs = &v->classes[c];
		bool all = true;

		if (cs->resource == NULL || cs->unusable)
			continue;
		for (size_t k = 0; k < cs->cls->n_selectors && all; k++) {
			bool ok = false;

			if (tau_dra_cel_eval(&ok, cs->cls->selectors[k], &dv) < 0) {
				if (note(v, node, TAU_DRA_RULE_SELECTOR,
				         "device %s of pool %s (driver %s): class %s: %s: not "
				         "counted "
				         "under it",
				         d->name, s->pool, s->driver, cs->cls->name,
				         tau_error_last()->msg) < 0)
					return -TAU_ENOMEM;
				ok = false;
			}
			all = ok;
		}
		if (!all)
			continue;
		if (add_match(v, s, d, node, c) < 0)
			return -TAU_ENOMEM;
		matched++;
	}
	if (matched == 0 && d->counter_set != NULL)
		return add_match(v, s, d, node, NO_CLASS);
	return 0;
}

static int slice_matches(tau_dra_view *v, const tau_dra_slice *s)
{
	const tau_dra_pool_state *p = tau_dra_pool_find(v->pools, v->n_pools, s->driver, s->pool);

	if (p == NULL || s->generation != p->generation)
		return 0; /* an older generation: never used */
	if (s->scope == TAU_DRA_SCOPE_SELECTOR || s->scope == TAU_DRA_SCOPE_ALL_NODES) {
		if (s->n_devices == 0)
			return 0;
		return note(v, NULL, TAU_DRA_RULE_NODE_LOCAL,
		            "slice %s (pool %s, driver %s): %zu devices reachable from %s count on "
		            "no node (only node-local devices count)",
		            s->name, s->pool, s->driver, s->n_devices,
		            s->scope == TAU_DRA_SCOPE_ALL_NODES ? "all nodes" : "a node selector");
	}
	for (size_t i = 0; i < s->n_devices; i++) {
		const tau_dra_device *d = &s->devices[i];
		const char *node = s->scope == TAU_DRA_SCOPE_NODE ? s->node_name : d->node_name;

		if (node == NULL) {
			if (note(v, NULL, TAU_DRA_RULE_NODE_LOCAL,
			         "device %s of slice %s (pool %s, driver %s) is not bound to one "
			         "node: "
			         "counted on no node",
			         d->name, s->name, s->pool, s->driver) < 0)
				return -TAU_ENOMEM;
			continue;
		}
		if (!p->complete) {
			/* one note per node and slice is enough */
			if (i > 0 && s->scope == TAU_DRA_SCOPE_NODE)
				continue;
			if (note(v, node, TAU_DRA_RULE_POOL_COMPLETE,
			         "%s: its devices do not count", p->reason) < 0)
				return -TAU_ENOMEM;
			continue;
		}
		if (match_device(v, s, d, node) < 0)
			return -TAU_ENOMEM;
	}
	return 0;
}

static int by_node_unit_class(const void *a, const void *b)
{
	const match *x = a, *y = b;
	int c = strcmp(x->node, y->node);

	if (c == 0)
		c = strcmp(x->driver, y->driver);
	if (c == 0)
		c = strcmp(x->pool, y->pool);
	if (c == 0)
		c = (x->counter_set > y->counter_set) - (x->counter_set < y->counter_set);
	if (c == 0)
		c = strcmp(x->unit, y->unit);
	if (c == 0)
		c = (x->class_index > y->class_index) - (x->class_index < y->class_index);
	if (c == 0)
		c = strcmp(x->device, y->device);
	return c;
}

static bool same_unit(const match *x, const match *y)
{
	return strcmp(x->node, y->node) == 0 && strcmp(x->driver, y->driver) == 0 &&
	       strcmp(x->pool, y->pool) == 0 && x->counter_set == y->counter_set &&
	       strcmp(x->unit, y->unit) == 0;
}

static int by_note_node(const void *a, const void *b)
{
	return strcmp(((const node_note *)a)->node, ((const node_note *)b)->node);
}

static tau_dra_node *node_get(tau_dra_view *v, const char *name, size_t *cap)
{
	if (v->n_nodes > 0 && strcmp(v->nodes[v->n_nodes - 1].name, name) == 0)
		return &v->nodes[v->n_nodes - 1];
	if (tau_array_grow((void **)&v->nodes, cap, v->n_nodes + 1, sizeof(*v->nodes)) < 0)
		return NULL;
	v->nodes[v->n_nodes] = (tau_dra_node){.name = name};
	return &v->nodes[v->n_nodes++];
}

static int add_device(tau_dra_node *n, const char *resource)
{
	size_t i = 0;
	tau_dra_resource *p;

	while (i < n->n_resources && strcmp(n->resources[i].name, resource) < 0)
		i++;
	if (i < n->n_resources && strcmp(n->resources[i].name, resource) == 0) {
		n->resources[i].devices++;
		return 0;
	}
	p = realloc(n->resources, (n->n_resources + 1) * sizeof(*p));
	if (p == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
	n->resources = p;
	memmove(&p[i + 1], &p[i], (n->n_resources - i) * sizeof(*p));
	p[i] = (tau_dra_resource){.name = resource, .devices = 1};
	n->n_resources++;
	return 0;
}

static int member_cmp_key(const tau_dra_member *m, const char *driver, const char *pool,
                          const char *device)
{
	int c = strcmp(m->driver, driver);

	if (c == 0)
		c = strcmp(m->pool, pool);
	return c != 0 ? c : strcmp(m->device, device);
}

static int by_member(const void *a, const void *b)
{
	const tau_dra_member *y = b;

	return member_cmp_key(a, y->driver, y->pool, y->device);
}

static int add_member(tau_dra_view *v, const match *m, const char *resource, uint32_t unit)
{
	if (tau_array_grow((void **)&v->members, &v->cap_members, v->n_members + 1,
	                   sizeof(*v->members)) < 0)
		return -TAU_ENOMEM;
	v->members[v->n_members++] = (tau_dra_member){
	        .driver = m->driver,
	        .pool = m->pool,
	        .device = m->device,
	        .resource = resource,
	        .unit = unit,
	};
	return 0;
}

/* Hand node `n` the members gathered for it: sorted, each device once. */
static int flush_members(tau_dra_view *v, tau_dra_node *n)
{
	size_t k = 0;

	if (v->n_members == 0)
		return 0;
	qsort(v->members, v->n_members, sizeof(*v->members), by_member);
	for (size_t i = 0; i < v->n_members; i++)
		if (k == 0 || by_member(&v->members[k - 1], &v->members[i]) != 0)
			v->members[k++] = v->members[i];
	n->members = malloc(k * sizeof(*n->members));
	if (n->members == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
	memcpy(n->members, v->members, k * sizeof(*n->members));
	n->n_members = k;
	v->n_members = 0;
	return 0;
}

/* Count the matches into per-node resources, once per unit. */
static int count_units(tau_dra_view *v, size_t *cap_nodes)
{
	size_t cur = SIZE_MAX; /* the node whose members v->members gathers */

	if (v->n_matches > 1)
		qsort(v->matches, v->n_matches, sizeof(*v->matches), by_node_unit_class);
	for (size_t lo = 0; lo < v->n_matches;) {
		const match *m = &v->matches[lo];
		const tau_dra_class_state *winner;
		tau_dra_node *n;
		size_t hi = lo + 1;
		uint32_t unit;

		while (hi < v->n_matches && same_unit(m, &v->matches[hi]))
			hi++;
		if (m->class_index == NO_CLASS) {
			lo = hi; /* no class selects any device of this unit: it counts nothing */
			continue;
		}
		winner = &v->classes[m->class_index];
		if (cur != SIZE_MAX && strcmp(v->nodes[cur].name, m->node) != 0 &&
		    flush_members(v, &v->nodes[cur]) < 0)
			return -TAU_ENOMEM;
		n = node_get(v, m->node, cap_nodes);
		if (n == NULL || add_device(n, winner->resource) < 0)
			return -TAU_ENOMEM;
		cur = (size_t)(n - v->nodes);
		unit = n->n_units++;
		for (size_t k = lo; k < hi; k++) {
			const match *o = &v->matches[k];
			const tau_dra_class_state *other;

			if (add_member(v, o, winner->resource, unit) < 0)
				return -TAU_ENOMEM;
			if (k == lo || o->class_index == NO_CLASS ||
			    o->class_index == v->matches[k - 1].class_index)
				continue;
			other = &v->classes[o->class_index];
			if (strcmp(other->resource, winner->resource) == 0)
				continue;
			if (note(v, m->node, TAU_DRA_RULE_OVERLAP,
			         "%s %s of pool %s (driver %s) is selected by class %s (%s) and "
			         "class "
			         "%s (%s): counted once, as %s",
			         m->counter_set ? "counter set" : "device", m->unit, m->pool,
			         m->driver, winner->cls->name, winner->resource, other->cls->name,
			         other->resource, winner->resource) < 0)
				return -TAU_ENOMEM;
		}
		if (m->counter_set &&
		    note(v, m->node, TAU_DRA_RULE_PARTITIONABLE,
		         "devices of pool %s (driver %s) that share counter set %s count as one %s",
		         m->pool, m->driver, m->unit, winner->resource) < 0)
			return -TAU_ENOMEM;
		lo = hi;
	}
	if (cur != SIZE_MAX && flush_members(v, &v->nodes[cur]) < 0)
		return -TAU_ENOMEM;
	return 0;
}

static int by_node_name(const void *a, const void *b)
{
	return strcmp(((const tau_dra_node *)a)->name, ((const tau_dra_node *)b)->name);
}

/* Hand each node its notes (nodes that have only notes are added). */
static int attach_notes(tau_dra_view *v, size_t *cap_nodes)
{
	if (v->n_node_notes > 1)
		qsort(v->node_notes, v->n_node_notes, sizeof(*v->node_notes), by_note_node);
	for (size_t i = 0; i < v->n_node_notes;) {
		const char *name = v->node_notes[i].node;
		tau_dra_node *n = (tau_dra_node *)tau_dra_view_node(v, name);
		size_t j = i;

		if (n == NULL) {
			n = node_get(v, name, cap_nodes);
			if (n == NULL)
				return -TAU_ENOMEM;
			qsort(v->nodes, v->n_nodes, sizeof(*v->nodes), by_node_name);
			n = (tau_dra_node *)tau_dra_view_node(v, name);
		}
		while (j < v->n_node_notes && strcmp(v->node_notes[j].node, name) == 0)
			j++;
		n->notes = calloc(j - i < TAU_DRA_MAX_NOTES ? j - i : TAU_DRA_MAX_NOTES,
		                  sizeof(*n->notes));
		if (n->notes == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
		for (size_t k = i; k < j; k++) {
			if (n->n_notes < TAU_DRA_MAX_NOTES) {
				n->notes[n->n_notes++] = v->node_notes[k].note;
			} else {
				free_note(&v->node_notes[k].note);
				n->notes_dropped++;
			}
			v->node_notes[k].note.detail = NULL;
		}
		i = j;
	}
	return 0;
}

int tau_dra_view_build(tau_dra_view **out, const tau_dra_class *classes, size_t n_classes,
                       const tau_dra_slice *slices, size_t n_slices,
                       const tau_kueue_dra_mapping *mappings, size_t n_mappings)
{
	tau_dra_view *v = calloc(1, sizeof(*v));
	size_t cap_nodes = 0;
	int rc = -TAU_ENOMEM;

	if (v == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory building the DRA view");
	if (classes_resolve(v, classes, n_classes, mappings, n_mappings) < 0 ||
	    tau_dra_pools_assess(&v->pools, &v->n_pools, slices, n_slices) < 0)
		goto out;
	for (size_t i = 0; i < n_slices; i++)
		if (slice_matches(v, &slices[i]) < 0)
			goto out;
	if (count_units(v, &cap_nodes) < 0 || attach_notes(v, &cap_nodes) < 0)
		goto out;
	free(v->matches);
	v->matches = NULL;
	v->n_matches = 0;
	*out = v;
	v = NULL;
	rc = 0;
out:
	tau_dra_view_free(v);
	return rc;
}

const tau_dra_node *tau_dra_view_node(const tau_dra_view *view, const char *name)
{
	bool found;
	size_t i = tau_sorted_index(view->nodes, view->n_nodes, sizeof(*view->nodes), name, &found);

	return found ? &view->nodes[i] : NULL;
}

const tau_dra_member *tau_dra_node_member(const tau_dra_node *n, const char *driver,
                                          const char *pool, const char *device)
{
	size_t lo = 0, hi = n != NULL ? n->n_members : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = member_cmp_key(&n->members[mid], driver, pool, device);

		if (c == 0)
			return &n->members[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t tau_dra_view_node_count(const tau_dra_view *view)
{
	return view->n_nodes;
}

const tau_dra_node *tau_dra_view_node_at(const tau_dra_view *view, size_t i)
{
	return i < view->n_nodes ? &view->nodes[i] : NULL;
}

size_t tau_dra_view_class_count(const tau_dra_view *view)
{
	return view->n_classes;
}

const tau_dra_class_state *tau_dra_view_class_at(const tau_dra_view *view, size_t i)
{
	return i < view->n_classes ? &view->classes[i] : NULL;
}

size_t tau_dra_view_pool_count(const tau_dra_view *view)
{
	return view->n_pools;
}

const tau_dra_pool_state *tau_dra_view_pool_at(const tau_dra_view *view, size_t i)
{
	return i < view->n_pools ? &view->pools[i] : NULL;
}

size_t tau_dra_view_note_count(const tau_dra_view *view)
{
	return view->n_notes;
}

const tau_dra_note *tau_dra_view_note_at(const tau_dra_view *view, size_t i)
{
	return i < view->n_notes ? &view->notes[i] : NULL;
}

tau_dra_totals tau_dra_view_totals(const tau_dra_view *view)
{
	tau_dra_totals t = {0};

	if (view == NULL)
		return t;
	for (size_t i = 0; i < view->n_nodes; i++)
		for (size_t j = 0; j < view->nodes[i].n_resources; j++)
			t.devices += view->nodes[i].resources[j].devices;
	for (size_t i = 0; i < view->n_pools; i++)
		t.pools_incomplete += view->pools[i].complete ? 0 : 1;
	for (size_t i = 0; i < view->n_classes; i++)
		t.classes_unusable += view->classes[i].unusable ? 1 : 0;
	return t;
}

bool tau_dra_counts_beside(const tau_dra_resource *r, const tau_node_facts *facts, char *why,
                           size_t why_cap)
{
	for (size_t i = 0; i < facts->n_allocatable; i++) {
		char q[TAU_QUANTITY_STR_MAX];

		if (strcmp(facts->allocatable[i].name, r->name) != 0 ||
		    tau_quantity_is_zero(&facts->allocatable[i].value))
			continue;
		if (tau_quantity_format(q, sizeof(q), &facts->allocatable[i].value) < 0)
			snprintf(q, sizeof(q), "?");
		tau_str_printf(
		        why, why_cap,
		        "node %s advertises %s %s in allocatable and %u DRA devices map to it: "
		        "allocatable counts, the DRA devices do not",
		        facts->name, q, r->name, r->devices);
		return false;
	}
	return true;
}

static int by_resource_name(const void *a, const void *b)
{
	return strcmp(((const tau_node_resource *)a)->name, ((const tau_node_resource *)b)->name);
}

int tau_dra_merge_facts(tau_node_facts *out, const tau_node_facts *node, const tau_dra_node *dra,
                        size_t *left_out)
{
	tau_node_facts f = {0};
	tau_node_resource *res;
	size_t n, skipped = 0;

	if (left_out != NULL)
		*left_out = 0;
	if (tau_node_facts_copy(&f, node) < 0)
		return -TAU_ENOMEM;
	n = f.n_allocatable;
	if (dra == NULL || dra->n_resources == 0)
		goto done;
	if (n + dra->n_resources > TAU_NODE_MAX_RESOURCES) {
		tau_node_facts_clear(&f);
		return tau_error_set(TAU_ETOOBIG,
		                     "node %s: %zu allocatable and %zu DRA resources "
		                     "exceed %d",
		                     node->name, n, dra->n_resources, TAU_NODE_MAX_RESOURCES);
	}
	res = realloc(f.allocatable, (n + dra->n_resources) * sizeof(*res));
	if (res == NULL) {
		tau_node_facts_clear(&f);
		return tau_error_set(TAU_ENOMEM, "out of memory merging DRA devices");
	}
	f.allocatable = res;
	for (size_t i = 0; i < dra->n_resources; i++) {
		const tau_dra_resource *r = &dra->resources[i];

		if (!tau_dra_counts_beside(r, node, NULL, 0)) {
			skipped++;
			continue;
		}
		res[n].name = strdup(r->name);
		if (res[n].name == NULL || tau_quantity_from_scaled(&res[n].value, r->devices, 0,
		                                                    TAU_QUANTITY_DECIMAL_SI) < 0) {
			free(res[n].name);
			tau_node_facts_clear(&f);
			return tau_error_set(TAU_ENOMEM, "out of memory merging DRA devices");
		}
		n++;
		/* a zero allocatable entry of the same name is replaced by the DRA count */
		for (size_t k = 0; k < f.n_allocatable; k++)
			if (strcmp(res[k].name, r->name) == 0) {
				free(res[k].name);
				res[k] = res[--n];
				break;
			}
	}
	f.n_allocatable = n;
	qsort(f.allocatable, n, sizeof(*f.allocatable), by_resource_name);
done:
	if (left_out != NULL)
		*left_out = skipped;
	*out = f;
	return 0;
}
