/*
 * drastore.h - the DRA objects the aggregator has seen, and the view of what counts
 * (dra.h) built from them (docs/budget.md, "How DRA devices count").
 *
 * The receiving end of the DRA watch: ResourceSlices and DeviceClasses by
 * name as the API hands them (JSON), and Kueue's deviceClassMappings.  An
 * object that does not read (the API would have refused it) is dropped and
 * remembered with its reason, so what it would have added never counts and a
 * pool it belonged to stays incomplete.  Kueue's configuration that cannot be
 * read counts no class at all (fail closed), since the name Kueue charges
 * under is then unknown.  The view is rebuilt on the first read after a
 * change, from every object (O(all slices)); one rebuild serves any number of
 * changes in between.
 */
#ifndef TAU_AGGREGATOR_DRASTORE_H
#define TAU_AGGREGATOR_DRASTORE_H

#include "dra.h"

#include <cjson/cJSON.h>

#include <stddef.h>
#include <stdint.h>

typedef struct tau_dra_store tau_dra_store;

/** @return 0 or -TAU_ENOMEM. */
int tau_dra_store_new(tau_dra_store **out);

/** NULL is a no-op. */
void tau_dra_store_free(tau_dra_store *store);

/**
 * A ResourceSlice appeared or changed (lent).  One that does not read replaces the old
 * version by nothing and is kept as refused (tau_dra_store_refused_at).
 * @return 0, -TAU_EINVAL (refused; the message says why), -TAU_ENOMEM.
 */
int tau_dra_store_slice_upsert(tau_dra_store *store, const cJSON *slice);

/** A ResourceSlice went away.  @return 0 or -TAU_ENOTFOUND. */
int tau_dra_store_slice_delete(tau_dra_store *store, const char *name);

/** A DeviceClass appeared or changed (lent); refused like slices. */
int tau_dra_store_class_upsert(tau_dra_store *store, const cJSON *device_class);

/** A DeviceClass went away.  @return 0 or -TAU_ENOTFOUND. */
int tau_dra_store_class_delete(tau_dra_store *store, const char *name);

/**
 * Kueue's deviceClassMappings as they now stand (copied; NULL/0 for none), or `error` when
 * Kueue's configuration cannot be read: then no class counts until it can.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_dra_store_set_mappings(tau_dra_store *store, const tau_kueue_dra_mapping *mappings,
                               size_t n, const char *error);

/** Why Kueue's configuration is unusable, or NULL.  Lends it. */
const char *tau_dra_store_kueue_error(const tau_dra_store *store);

/**
 * The view of everything stored (rebuilt here after a change).  Lends it: valid until the
 * next change of the store.
 * @return 0 or -TAU_ENOMEM (*out untouched).
 */
int tau_dra_store_view(tau_dra_store *store, const tau_dra_view **out);

/** The view as last built, or NULL when the store changed since (const readers). */
const tau_dra_view *tau_dra_store_built_view(const tau_dra_store *store);

/** Bumped on every change: a reader compares it to know whether to look again. */
uint64_t tau_dra_store_generation(const tau_dra_store *store);

/** Objects refused, "ResourceSlice <name>: why" / "DeviceClass <name>: why", by name. */
size_t tau_dra_store_refused_count(const tau_dra_store *store);
const char *tau_dra_store_refused_at(const tau_dra_store *store, size_t i);

#endif /* TAU_AGGREGATOR_DRASTORE_H */
