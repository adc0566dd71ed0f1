/*
 * inventory_internal.h - what the inventory's files share and nothing else includes.
 *
 * The inventory is one object read by several files (inventory.c and its inventory_*.c
 * readers); these are the pieces more than one of them needs.
 */
#ifndef TAU_AGENT_INVENTORY_INTERNAL_H
#define TAU_AGENT_INVENTORY_INTERNAL_H

#include "inventory.h"

#include <stddef.h>

/**
 * Copy s when it is at most TAU_AGENT_MAX_STRING bytes.
 * @return 0, -TAU_ETOOBIG (longer; nothing copied) or -TAU_ENOMEM.
 */
int tau_agent_copy_bounded(char **out, const char *s);

/** Free n key-value pairs and the array. */
void tau_agent_kvs_free(tau_agent_kv *kvs, size_t n);

/** qsort/bsearch order of key-value pairs: by key. */
int tau_agent_kv_cmp(const void *a, const void *b);

/**
 * Find or add (sorted by name) the inventory's entry for a CSI driver.
 * @return 0; -TAU_ETOOBIG when the table is full or the name too long (a problem is
 *         recorded: skip the driver); -TAU_ENOMEM.
 */
int tau_agent_inventory_driver_get(tau_agent_inventory *inv, const char *name,
                                   tau_agent_csi_driver **out);

#endif /* TAU_AGENT_INVENTORY_INTERNAL_H */
