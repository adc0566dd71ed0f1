/*
 * pool.c - exact, incremental capacity pool per GPU class.
 *
 * The one idea: a node's contribution is remembered with the node, so an
 * update subtracts exactly what was added before and adds the new facts.
 * Sums are exact quantities (no floating point), and each sum also counts
 * how many contributors wrote it in each notation so the printed format does
 * not depend on event order: the incremental pool equals a full recompute.
 *
 * Kueue counts every resource in int64 (cpu in milli-units) and saturates,
 * so nothing beyond that may reach a budget.  A node whose allocatable Kueue
 * cannot represent is not eligible at all (its own rule says why).  A flavor
 * sum must fit as well: the eligible nodes of a flavor are admitted in name
 * order, each one that would take a sum beyond int64 is left out (greedy,
 * skip and continue).  The result depends only on the set of nodes, never
 * on arrival order.  In the normal case every node fits and an update stays
 * O(one node); only a flavor that has left a node out (absurd quantities) is
 * recomputed, O(its nodes), on each change that could let one back in.
 */
#include "pool.h"
#include "sorted.h"

#include "tau/error.h"
#include "tau/hmap.h"
#include "tau/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The public handle (tau_pool_node) is this entry; it lives as long as the node is stored. */
struct tau_pool_node {
	const tau_node_facts *facts; /* lent by the caller, or `owned` */
	tau_node_facts *owned;       /* the pool's own copy (tau_pool_upsert_node), else NULL */
	bool eligible;               /* passes every per-node rule */
	bool counted;        /* eligible and fits its flavor's sums (see the file comment) */
	tau_hmap_node hnode; /* in tau_pool.nodes, keyed by facts->name */
};
typedef struct tau_pool_node stored_node;

struct tau_pool {
	tau_selector *selector; /* NULL: everything */
	char *selector_error;   /* the TauCluster's selector is unusable (why): nothing matches */
	tau_hmap nodes;         /* stored_node by name */
	tau_pool_flavor *flavors;
	size_t n_flavors;
	size_t cap_flavors;
	uint64_t generation;
};

static stored_node *node_of(tau_hmap_node *n)
{
	return n != NULL ? TAU_HMAP_ENTRY(n, stored_node, hnode) : NULL;
}

/* Walk every stored node: `for (it = first(pool, &i); it; it = node_of(tau_hmap_iter_next(&i)))`.
 */
static stored_node *first(const tau_pool *pool, tau_hmap_iter *it)
{
	tau_hmap_iter_init(it, &pool->nodes);
	return node_of(tau_hmap_iter_next(it));
}

int tau_pool_new(tau_pool **out)
{
	tau_pool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory creating pool");
	if (tau_hmap_init(&p->nodes, 64) < 0) {
		free(p);
		return tau_error_set(TAU_ENOMEM, "out of memory creating pool");
	}
	*out = p;
	return 0;
}

static void owned_free(tau_node_facts *f)
{
	if (f == NULL)
		return;
	tau_node_facts_clear(f);
	free(f);
}

static void stored_node_free(stored_node *n)
{
	if (n == NULL)
		return;
	owned_free(n->owned);
	free(n);
}

static void flavor_clear(tau_pool_flavor *f)
{
	for (size_t i = 0; i < f->n_resources; i++)
		free(f->resources[i].name);
	tau_free_many(f->resources, f->name);
	memset(f, 0, sizeof(*f));
}

void tau_pool_free(tau_pool *pool)
{
	tau_hmap_iter it;

	if (pool == NULL)
		return;
	for (stored_node *n = first(pool, &it); n != NULL; n = node_of(tau_hmap_iter_next(&it)))
		stored_node_free(n);
	tau_hmap_destroy(&pool->nodes);
	for (size_t i = 0; i < pool->n_flavors; i++)
		flavor_clear(&pool->flavors[i]);
	free(pool->flavors);
	tau_selector_free(pool->selector);
	free(pool->selector_error);
	free(pool);
}

static stored_node *find(const tau_pool *pool, const char *name)
{
	return node_of(tau_hmap_get(&pool->nodes, name));
}

#define set_rule(r, rule_name, ok, ...)                                                            \
	do {                                                                                       \
		(r)->name = (rule_name);                                                           \
		(r)->pass = (ok);                                                                  \
		snprintf((r)->detail, sizeof((r)->detail), __VA_ARGS__);                           \
	} while (0)

/* Kueue's unit for a resource: milli-units for cpu, base units for the rest. */
static int32_t kueue_scale(const char *resource)
{
	return strcmp(resource, "cpu") == 0 ? -3 : 0;
}

/* True when Kueue can count `q` of `resource` (int64 in its unit, rounded up). */
static bool kueue_can_count(const char *resource, const tau_quantity *q)
{
	int64_t v;

	return tau_quantity_scaled_value(&v, q, kueue_scale(resource)) == 0;
}

static void kueue_range_rule(const tau_node_facts *node, tau_pool_rule *rule)
{
	rule->name = "kueue-int64";
	rule->pass = true;
	snprintf(rule->detail, sizeof(rule->detail), "%s",
	         "every allocatable quantity fits Kueue's int64");
	for (size_t i = 0; i < node->n_allocatable; i++) {
		const tau_node_resource *r = &node->allocatable[i];
		char q[TAU_QUANTITY_STR_MAX];

		if (kueue_can_count(r->name, &r->value))
			continue;
		if (tau_quantity_format(q, sizeof(q), &r->value) < 0)
			snprintf(q, sizeof(q), "?");
		rule->pass = false;
		snprintf(rule->detail, sizeof(rule->detail),
		         "allocatable %.63s %.63s is more than Kueue can count (int64 %s)", r->name,
		         q, kueue_scale(r->name) < 0 ? "milli-units" : "units");
		return;
	}
}

bool tau_pool_evaluate(const tau_pool *pool, const tau_node_facts *node,
                       tau_pool_rule rules[TAU_POOL_RULE_COUNT])
{
	const char *os = node->os;
	const char *cls = tau_node_facts_label(node, TAU_GPU_CLASS_LABEL);
	bool sel_ok = pool->selector_error == NULL &&
	              (pool->selector == NULL ||
	               tau_selector_matches_pairs(
	                       pool->selector, (const char *const *)node->label_keys,
	                       (const char *const *)node->label_values, node->n_labels));
	bool counted = true;

	if (os != NULL && strcmp(os, "linux") == 0)
		set_rule(&rules[TAU_POOL_RULE_LINUX], "linux", true, "os is linux");
	else
		set_rule(&rules[TAU_POOL_RULE_LINUX], "linux", false, "os is \"%s\", not linux",
		         os != NULL ? os : "unknown");
	if (cls != NULL && *cls != '\0')
		set_rule(&rules[TAU_POOL_RULE_GPU_CLASS], "gpu-class", true,
		         "labelled with gpu class %s", cls);
	else
		set_rule(&rules[TAU_POOL_RULE_GPU_CLASS], "gpu-class", false,
		         "no " TAU_GPU_CLASS_LABEL " label");
	if (pool->selector_error != NULL)
		set_rule(&rules[TAU_POOL_RULE_SELECTOR], "selector", false,
		         "the TauCluster node selector is unusable, so no node counts: %s",
		         pool->selector_error);
	else
		set_rule(&rules[TAU_POOL_RULE_SELECTOR], "selector", sel_ok, "%s",
		         sel_ok ? "matches the TauCluster node selector"
		                : "does not match the TauCluster node selector");
	set_rule(&rules[TAU_POOL_RULE_READY], "ready", node->ready, "%s",
	         node->ready ? "Ready condition is True" : "Ready condition is not True");
	set_rule(&rules[TAU_POOL_RULE_SCHEDULABLE], "schedulable", node->schedulable, "%s",
	         node->schedulable ? "schedulable" : "cordoned (spec.unschedulable)");
	set_rule(&rules[TAU_POOL_RULE_NOT_DELETING], "not-deleting", !node->deleting, "%s",
	         node->deleting ? "being deleted" : "not being deleted");
	kueue_range_rule(node, &rules[TAU_POOL_RULE_KUEUE_RANGE]);
	set_rule(&rules[TAU_POOL_RULE_FLAVOR_SUM], "flavor-sum", true, "%s",
	         "the flavor's sums stay within what Kueue can count");
	for (int i = 0; i < TAU_POOL_RULE_COUNT; i++)
		counted = counted && rules[i].pass;
	return counted;
}

/* Binary search; returns the index where `name` is or would be inserted. */
static size_t flavor_index(const tau_pool *pool, const char *name, bool *found)
{
	return tau_sorted_index(pool->flavors, pool->n_flavors, sizeof(*pool->flavors), name,
	                        found);
}

static size_t sum_index(const tau_pool_flavor *f, const char *name, bool *found)
{
	return tau_sorted_index(f->resources, f->n_resources, sizeof(*f->resources), name, found);
}

static tau_pool_flavor *flavor_get_or_add(tau_pool *pool, const char *name)
{
	void *f = NULL;

	if (tau_sorted_add(&f, (void **)&pool->flavors, &pool->n_flavors, &pool->cap_flavors,
	                   sizeof(*pool->flavors), name) < 0)
		return NULL;
	return f;
}

static void flavor_remove_if_empty(tau_pool *pool, const char *name)
{
	bool found;
	size_t i = flavor_index(pool, name, &found);

	if (!found || pool->flavors[i].nodes > 0)
		return;
	flavor_clear(&pool->flavors[i]);
	memmove(&pool->flavors[i], &pool->flavors[i + 1],
	        (pool->n_flavors - i - 1) * sizeof(*pool->flavors));
	pool->n_flavors--;
}

static void vote(tau_pool_sum *s, const tau_quantity *q, int dir)
{
	if (tau_quantity_is_zero(q))
		return;
	switch (tau_quantity_get_format(q)) {
	case TAU_QUANTITY_BINARY_SI:
		s->n_binary += (uint32_t)dir;
		break;
	case TAU_QUANTITY_DECIMAL_EXPONENT:
		s->n_exponent += (uint32_t)dir;
		break;
	default:
		s->n_decimal += (uint32_t)dir;
	}
}

static const char *class_of(const stored_node *n)
{
	return tau_node_facts_label(n->facts, TAU_GPU_CLASS_LABEL);
}

static tau_pool_flavor *flavor_of(tau_pool *pool, const char *cls)
{
	bool found;
	size_t i = flavor_index(pool, cls, &found);

	return found ? &pool->flavors[i] : NULL;
}

/*
 * Whether adding eligible node `n` keeps every sum of its flavor within what
 * Kueue can count.  When it does not, *over names the first resource that
 * would go beyond (lent from the node).
 */
static bool fits(const tau_pool *pool, const stored_node *n, const char **over)
{
	bool found;
	size_t fi = flavor_index(pool, class_of(n), &found);

	for (size_t r = 0; r < n->facts->n_allocatable; r++) {
		const tau_node_resource *res = &n->facts->allocatable[r];
		tau_quantity sum = res->value;

		if (found) {
			const tau_pool_flavor *f = &pool->flavors[fi];
			bool sfound;
			size_t si = sum_index(f, res->name, &sfound);

			if (sfound &&
			    tau_quantity_add(&sum, &f->resources[si].total, &res->value) < 0) {
				*over = res->name;
				return false;
			}
		}
		if (!kueue_can_count(res->name, &sum)) {
			*over = res->name;
			return false;
		}
	}
	return true;
}

/*
 * Add (dir=+1) or take away (dir=-1) a node's contribution.  Adding only
 * happens after fits(), so no sum can overflow; taking away cannot.
 */
static int apply(tau_pool *pool, const stored_node *n, int dir)
{
	tau_pool_flavor *f;

	if (dir > 0) {
		f = flavor_get_or_add(pool, tau_node_facts_label(n->facts, TAU_GPU_CLASS_LABEL));
		if (f == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory adding flavor");
	} else {
		bool found;
		size_t fi = flavor_index(pool, tau_node_facts_label(n->facts, TAU_GPU_CLASS_LABEL),
		                         &found);

		if (!found)
			return tau_error_set(TAU_EINTERNAL, "flavor %s missing",
			                     tau_node_facts_label(n->facts, TAU_GPU_CLASS_LABEL));
		f = &pool->flavors[fi];
	}
	for (size_t r = 0; r < n->facts->n_allocatable; r++) {
		const tau_node_resource *res = &n->facts->allocatable[r];
		bool found;
		size_t si = sum_index(f, res->name, &found);
		tau_pool_sum *s;

		if (!found) {
			tau_pool_sum ns = {0};

			if (dir < 0)
				return tau_error_set(TAU_EINTERNAL, "sum %s missing", res->name);
			if (f->n_resources == f->cap_resources) {
				size_t cap = f->cap_resources ? f->cap_resources * 2 : 16;
				tau_pool_sum *grown = realloc(f->resources, cap * sizeof(*grown));

				if (grown == NULL)
					return tau_error_set(TAU_ENOMEM, "out of memory");
				f->resources = grown;
				f->cap_resources = cap;
			}
			ns.name = strdup(res->name);
			if (ns.name == NULL)
				return tau_error_set(TAU_ENOMEM, "out of memory");
			ns.total = tau_quantity_zero();
			memmove(&f->resources[si + 1], &f->resources[si],
			        (f->n_resources - si) * sizeof(*f->resources));
			f->resources[si] = ns;
			f->n_resources++;
		}
		s = &f->resources[si];
		if (dir > 0)
			tau_quantity_add(&s->total, &s->total, &res->value);
		else
			tau_quantity_sub(&s->total, &s->total, &res->value);
		s->contributors += (uint32_t)dir;
		vote(s, &res->value, dir);
		if (s->contributors == 0) {
			free(s->name);
			memmove(&f->resources[si], &f->resources[si + 1],
			        (f->n_resources - si - 1) * sizeof(*f->resources));
			f->n_resources--;
		}
	}
	f->nodes += (size_t)dir;
	if (dir < 0)
		flavor_remove_if_empty(pool, tau_node_facts_label(n->facts, TAU_GPU_CLASS_LABEL));
	pool->generation++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	const stored_node *x = *(const stored_node *const *)a, *y = *(const stored_node *const *)b;

	return strcmp(x->facts->name, y->facts->name);
}

/*
 * Recount flavor `cls` from its eligible nodes: in name order, each node
 * that fits is counted, each one that would take a sum beyond Kueue's int64
 * is left out.  O(all nodes) to find them; only runs for a flavor that
 * leaves, or would leave, a node out.
 */
static int rebalance(tau_pool *pool, const char *cls)
{
	stored_node **list = NULL;
	size_t n = 0, cap = 0, left_out = 0;
	tau_pool_flavor *f;
	tau_hmap_iter it;
	int rc = 0;

	for (stored_node *nd = first(pool, &it); nd != NULL;
	     nd = node_of(tau_hmap_iter_next(&it))) {
		if (!nd->eligible || strcmp(class_of(nd), cls) != 0)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			stored_node **grown = realloc(list, ncap * sizeof(*grown));

			if (grown == NULL) {
				free(list);
				return tau_error_set(TAU_ENOMEM, "out of memory recounting %s",
				                     cls);
			}
			list = grown;
			cap = ncap;
		}
		list[n++] = nd;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (list[i]->counted) {
			rc = apply(pool, list[i], -1);
			list[i]->counted = false;
		}
	}
	if (n > 0)
		qsort(list, n, sizeof(*list), by_name);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *over;

		if (!fits(pool, list[i], &over)) {
			left_out++;
			continue;
		}
		rc = apply(pool, list[i], +1);
		list[i]->counted = rc == 0;
	}
	f = flavor_of(pool, cls);
	if (f != NULL)
		f->left_out = left_out;
	free(list);
	return rc;
}

/* Count an eligible node that is not counted yet: O(node) unless its flavor must be recounted. */
static int admit(tau_pool *pool, stored_node *n)
{
	tau_pool_flavor *f = flavor_of(pool, class_of(n));
	const char *over;
	int rc;

	if ((f == NULL || f->left_out == 0) && fits(pool, n, &over)) {
		rc = apply(pool, n, +1);
		n->counted = rc == 0;
		return rc;
	}
	return rebalance(pool, class_of(n));
}

/*
 * Take a stored node's share out of its flavor.  *recount is set when the
 * flavor had left nodes out: one of them may fit now.
 */
static int withdraw(tau_pool *pool, stored_node *n, bool *recount)
{
	tau_pool_flavor *f = n->eligible ? flavor_of(pool, class_of(n)) : NULL;
	int rc = 0;

	*recount = false;
	if (n->counted) {
		*recount = f != NULL && f->left_out > 0;
		rc = apply(pool, n, -1);
		n->counted = false;
	} else if (f != NULL && f->left_out > 0) {
		/* A node left out changed nothing that was counted: nothing to recount. */
		f->left_out--;
	}
	return rc;
}

/*
 * Store `node` (lent, or owned when `owned` is it) under its name, replacing what was stored:
 * the old contribution is taken out with the old facts, which stay valid until this returns.
 * The entry itself stays where it is, so a handle the caller keeps stays valid.
 */
static int upsert(tau_pool *pool, const tau_node_facts *node, tau_node_facts *owned,
                  const tau_pool_node **handle)
{
	tau_pool_rule rules[TAU_POOL_RULE_COUNT];
	stored_node *n = find(pool, node->name);
	tau_node_facts *old_owned = NULL;
	const char *old_class = NULL;
	bool recount = false;
	int rc = 0;

	if (n == NULL) {
		n = calloc(1, sizeof(*n));
		if (n == NULL) {
			owned_free(owned);
			return tau_error_set(TAU_ENOMEM, "out of memory storing node %s",
			                     node->name);
		}
		n->facts = node;
		tau_hmap_insert(&pool->nodes, &n->hnode, node->name);
	} else {
		old_owned = n->owned;
		old_class = class_of(n);
		rc = withdraw(pool, n, &recount);
		n->facts = node;
		n->hnode.key = node->name; /* the same name, so the same hash */
	}
	n->owned = owned;
	n->eligible = tau_pool_evaluate(pool, node, rules);
	/* A recount of the old flavor also places the new facts when the class is the same. */
	if (rc == 0 && recount)
		rc = rebalance(pool, old_class);
	if (rc == 0 && n->eligible && !n->counted &&
	    !(recount && strcmp(old_class, class_of(n)) == 0))
		rc = admit(pool, n);
	owned_free(old_owned);
	if (handle != NULL)
		*handle = n;
	return rc;
}

int tau_pool_upsert_node(tau_pool *pool, const tau_node_facts *node)
{
	tau_node_facts *copy;
	int rc = tau_node_facts_validate(node);

	if (rc < 0)
		return rc;
	copy = calloc(1, sizeof(*copy));
	if (copy == NULL || tau_node_facts_copy(copy, node) < 0) {
		free(copy);
		return tau_error_set(TAU_ENOMEM, "out of memory storing node %s", node->name);
	}
	return upsert(pool, copy, copy, NULL);
}

int tau_pool_upsert_node_lent(tau_pool *pool, const tau_node_facts *node,
                              const tau_pool_node **handle)
{
	int rc = tau_node_facts_validate(node);

	if (rc < 0)
		return rc;
	return upsert(pool, node, NULL, handle);
}

int tau_pool_remove_node(tau_pool *pool, const char *name)
{
	stored_node *old = find(pool, name);
	bool recount = false;
	int rc;

	if (old == NULL)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not in the pool", name);
	rc = withdraw(pool, old, &recount);
	tau_hmap_remove(&pool->nodes, &old->hnode);
	if (rc == 0 && recount)
		rc = rebalance(pool, class_of(old));
	stored_node_free(old);
	return rc;
}

bool tau_pool_node_is_counted(const tau_pool_node *handle)
{
	return handle != NULL && handle->counted;
}

/* Re-evaluate every node after the selector changed. */
static int recompute(tau_pool *pool)
{
	tau_pool_rule rules[TAU_POOL_RULE_COUNT];
	const char **recount = NULL;
	size_t n_recount = 0;
	tau_hmap_iter it;
	int rc = 0;

	for (size_t i = 0; i < pool->n_flavors; i++)
		flavor_clear(&pool->flavors[i]);
	pool->n_flavors = 0;
	pool->generation++;
	for (stored_node *n = first(pool, &it); n != NULL; n = node_of(tau_hmap_iter_next(&it))) {
		n->counted = false;
		n->eligible = tau_pool_evaluate(pool, n->facts, rules);
	}
	/* Fast pass in table order; a flavor where something does not fit is recounted after. */
	for (stored_node *n = first(pool, &it); n != NULL && rc == 0;
	     n = node_of(tau_hmap_iter_next(&it))) {
		const char *over;
		bool listed = false;

		if (!n->eligible)
			continue;
		if (fits(pool, n, &over)) {
			rc = apply(pool, n, +1);
			n->counted = rc == 0;
			continue;
		}
		for (size_t k = 0; k < n_recount && !listed; k++)
			listed = strcmp(recount[k], class_of(n)) == 0;
		if (!listed) {
			const char **grown = realloc(recount, (n_recount + 1) * sizeof(*recount));

			if (grown == NULL) {
				rc = tau_error_set(TAU_ENOMEM, "out of memory");
				break;
			}
			recount = grown;
			recount[n_recount++] = class_of(n);
		}
	}
	for (size_t k = 0; k < n_recount && rc == 0; k++)
		rc = rebalance(pool, recount[k]);
	free(recount);
	return rc;
}

/*
 * Whether `sel` selects exactly what the pool already applies: no error, and
 * both absent or both with the same canonical string (tau_selector_to_string).
 * A TauCluster event that leaves the selector as it was (its status, written
 * by each budget pass) then costs nothing instead of a recompute of every node.
 */
static bool same_selector(const tau_pool *pool, const tau_selector *sel)
{
	char *have = NULL, *want = NULL;
	bool same;

	if (pool->selector_error != NULL)
		return false;
	if (pool->selector == NULL || sel == NULL)
		return pool->selector == NULL && sel == NULL;
	if (tau_selector_to_string(&have, pool->selector) < 0 ||
	    tau_selector_to_string(&want, sel) < 0) {
		free(have);
		return false; /* not comparable (the nothing selector, or no memory): recompute */
	}
	same = strcmp(have, want) == 0;
	free(have);
	free(want);
	return same;
}

int tau_pool_set_selector(tau_pool *pool, tau_selector *sel)
{
	if (same_selector(pool, sel)) {
		tau_selector_free(sel);
		return 0;
	}
	tau_selector_free(pool->selector);
	pool->selector = sel;
	free(pool->selector_error);
	pool->selector_error = NULL;
	return recompute(pool);
}

int tau_pool_set_selector_error(tau_pool *pool, const char *reason)
{
	char *copy = strdup(reason != NULL && reason[0] != '\0' ? reason : "unusable");

	if (copy != NULL && pool->selector_error != NULL &&
	    strcmp(copy, pool->selector_error) == 0) {
		free(copy); /* the same failure again: nothing counts already */
		return 0;
	}
	if (copy == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	tau_selector_free(pool->selector);
	pool->selector = NULL;
	free(pool->selector_error);
	pool->selector_error = copy;
	return recompute(pool);
}

const char *tau_pool_invalid_reason(const tau_pool *pool)
{
	return pool->selector_error;
}

int tau_pool_explain(const tau_pool *pool, const char *name,
                     tau_pool_rule rules[TAU_POOL_RULE_COUNT])
{
	stored_node *n = find(pool, name);
	const char *over = "";

	if (n == NULL)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not known", name);
	(void)tau_pool_evaluate(pool, n->facts, rules);
	if (n->eligible && !n->counted) {
		/* Sums only grow past the point where it was left out: it still does not fit. */
		(void)fits(pool, n, &over);
		set_rule(&rules[TAU_POOL_RULE_FLAVOR_SUM], "flavor-sum", false,
		         "counting it would take flavor %.63s's %.63s beyond what Kueue can count "
		         "(int64); a flavor's nodes count in name order and this one does not fit",
		         class_of(n), over);
	}
	return n->counted ? 1 : 0;
}

int tau_pool_node_counted(const tau_pool *pool, const char *name)
{
	stored_node *n = find(pool, name);

	if (n == NULL)
		return tau_error_set(TAU_ENOTFOUND, "node %s is not in the pool", name);
	return n->counted ? 1 : 0;
}

size_t tau_pool_node_count(const tau_pool *pool)
{
	return pool->nodes.len;
}

size_t tau_pool_flavor_count(const tau_pool *pool)
{
	return pool->n_flavors;
}

const tau_pool_flavor *tau_pool_flavor_at(const tau_pool *pool, size_t i)
{
	return i < pool->n_flavors ? &pool->flavors[i] : NULL;
}

uint64_t tau_pool_generation(const tau_pool *pool)
{
	return pool->generation;
}

int tau_pool_sum_format(char *buf, size_t cap, const tau_pool_sum *sum)
{
	tau_quantity q = sum->total;
	tau_quantity_fmt fmt = TAU_QUANTITY_DECIMAL_SI;
	uint32_t nonzero = sum->n_binary + sum->n_decimal + sum->n_exponent;

	if (nonzero > 0 && sum->n_binary == nonzero)
		fmt = TAU_QUANTITY_BINARY_SI;
	else if (nonzero > 0 && sum->n_exponent == nonzero)
		fmt = TAU_QUANTITY_DECIMAL_EXPONENT;
	tau_quantity_set_format(&q, fmt);
	return tau_quantity_format(buf, cap, &q);
}
