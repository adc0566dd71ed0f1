/*
 * hmap.c - the intrusive string-keyed hash map (tau/hmap.h).
 *
 * Chained buckets, a power-of-two table indexed by the low bits of FNV-1a, the full hash kept
 * in each node so growing and lookups compare strings only on a hash match.
 */
#include "tau/hmap.h"

#include "tau/error.h"

#include <stdlib.h>
#include <string.h>

uint64_t tau_hmap_hash(const char *key)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return h;
}

int tau_hmap_init(tau_hmap *m, size_t buckets)
{
	size_t n = 64;

	if (buckets != 0) {
		n = 1;
		while (n < buckets && n <= SIZE_MAX / 2 / sizeof(*m->buckets))
			n *= 2;
	}
	m->buckets = calloc(n, sizeof(*m->buckets));
	if (m->buckets == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	m->n_buckets = n;
	m->len = 0;
	return 0;
}

void tau_hmap_destroy(tau_hmap *m)
{
	free(m->buckets);
	m->buckets = NULL;
	m->n_buckets = m->len = 0;
}

void tau_hmap_destroy_free(tau_hmap *m, size_t node_offset)
{
	tau_hmap_iter it;
	tau_hmap_node *n;

	tau_hmap_iter_init(&it, m);
	while ((n = tau_hmap_iter_next(&it)) != NULL)
		free((char *)n - node_offset);
	tau_hmap_destroy(m);
}

tau_hmap_node *tau_hmap_get(const tau_hmap *m, const char *key)
{
	uint64_t h = tau_hmap_hash(key);

	for (tau_hmap_node *n = m->buckets[h & (m->n_buckets - 1)]; n != NULL; n = n->next)
		if (n->hash == h && strcmp(n->key, key) == 0)
			return n;
	return NULL;
}

static void grow(tau_hmap *m)
{
	size_t n = m->n_buckets * 2;
	tau_hmap_node **b;

	if (n > SIZE_MAX / sizeof(*b) || (b = calloc(n, sizeof(*b))) == NULL)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < m->n_buckets; i++) {
		for (tau_hmap_node *e = m->buckets[i], *next; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = n;
}

void tau_hmap_insert(tau_hmap *m, tau_hmap_node *n, const char *key)
{
	tau_hmap_node **slot;

	if (m->len >= m->n_buckets)
		grow(m);
	n->key = key;
	n->hash = tau_hmap_hash(key);
	slot = &m->buckets[n->hash & (m->n_buckets - 1)];
	n->next = *slot;
	*slot = n;
	m->len++;
}

void tau_hmap_remove(tau_hmap *m, tau_hmap_node *n)
{
	for (tau_hmap_node **pp = &m->buckets[n->hash & (m->n_buckets - 1)]; *pp != NULL;
	     pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			n->next = NULL;
			m->len--;
			return;
		}
	}
}

void tau_hmap_iter_init(tau_hmap_iter *it, const tau_hmap *m)
{
	it->map = m;
	it->bucket = 0;
	it->next = m->n_buckets != 0 ? m->buckets[0] : NULL;
}

tau_hmap_node *tau_hmap_iter_next(tau_hmap_iter *it)
{
	tau_hmap_node *n;

	while (it->next == NULL) {
		if (++it->bucket >= it->map->n_buckets)
			return NULL;
		it->next = it->map->buckets[it->bucket];
	}
	n = it->next;
	it->next = n->next;
	return n;
}
