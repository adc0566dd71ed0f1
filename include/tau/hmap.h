/*
 * tau/hmap.h - a string-keyed hash map, intrusive and chained.
 *
 * The map stores no values: the caller embeds a tau_hmap_node in its own entry
 * (a cache entry, a work-queue record, a stored node) and finds the entry again with
 * TAU_HMAP_ENTRY.  So an entry is allocated once, keyed by a string it already owns,
 * and removing it frees nothing but what the caller frees.  Keys are hashed with
 * 64-bit FNV-1a; the bucket array doubles when the map holds as many entries as buckets
 * (a failed doubling only lengthens chains).  Not thread-safe: the owner locks.
 *
 *   typedef struct item { tau_hmap_node node; char *name; int v; } item;
 *   tau_hmap_insert(&m, &it->node, it->name);
 *   tau_hmap_node *n = tau_hmap_get(&m, "x");
 *   item *it = n != NULL ? TAU_HMAP_ENTRY(n, item, node) : NULL;
 */
#ifndef TAU_HMAP_H
#define TAU_HMAP_H

#include <stddef.h>
#include <stdint.h>

/** Embedded in each entry; the map owns none of it. */
typedef struct tau_hmap_node {
	struct tau_hmap_node *next;
	uint64_t hash;
	const char *key; /**< lent by the entry; must stay valid while the entry is in the map */
} tau_hmap_node;

/** The map; tau_hmap_init before use. */
typedef struct tau_hmap {
	tau_hmap_node **buckets;
	size_t n_buckets; /**< a power of two */
	size_t len;       /**< entries held */
} tau_hmap;

/** Walks every entry; removing the current entry while walking is allowed. */
typedef struct tau_hmap_iter {
	const tau_hmap *map;
	size_t bucket;
	tau_hmap_node *next;
} tau_hmap_iter;

/** The entry of type `type` whose member `member` is the node `n`. */
#define TAU_HMAP_ENTRY(n, type, member) ((type *)(void *)((char *)(n)-offsetof(type, member)))

/** 64-bit FNV-1a of a NUL-terminated string. */
uint64_t tau_hmap_hash(const char *key);

/**
 * An empty map with room for `buckets` entries before growing (rounded up to a power of
 * two; 0 means 64).  @return 0 or -TAU_ENOMEM.
 */
int tau_hmap_init(tau_hmap *m, size_t buckets);

/** Release the bucket array (not the entries).  The map is then empty and needs init. */
void tau_hmap_destroy(tau_hmap *m);

/**
 * free() every entry, each the allocation that holds its node `node_offset`
 * bytes in (offsetof(type, member)), then tau_hmap_destroy(m).
 */
void tau_hmap_destroy_free(tau_hmap *m, size_t node_offset);

/** The node stored under `key`, or NULL. */
tau_hmap_node *tau_hmap_get(const tau_hmap *m, const char *key);

/**
 * Add `n` under `key` (lent: it must live as long as the entry is in the map).  The key must
 * not be in the map already (tau_hmap_get first).  Never fails: when the table cannot grow,
 * chains get longer.
 */
void tau_hmap_insert(tau_hmap *m, tau_hmap_node *n, const char *key);

/** Take `n` (which is in the map) out. */
void tau_hmap_remove(tau_hmap *m, tau_hmap_node *n);

/** Start walking `m` (in no particular order). */
void tau_hmap_iter_init(tau_hmap_iter *it, const tau_hmap *m);

/** The next node, or NULL at the end. */
tau_hmap_node *tau_hmap_iter_next(tau_hmap_iter *it);

#endif /* TAU_HMAP_H */
