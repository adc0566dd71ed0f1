/*
 * dra_class.h - DeviceClasses and the quota resource each one counts under
 * (docs/budget.md, "How DRA devices count").
 *
 * A class maps to a quota resource name in one of two ways, and the pool uses
 * the one Kueue uses: Kueue's own configuration (resources.deviceClassMappings
 * in the Configuration the manager reads from ConfigMap
 * kueue-system/kueue-manager-config) when it names the class, else the class's
 * spec.extendedResourceName.  A class with neither counts nothing (most
 * classes outside GPUs).  A class whose selectors are outside the CEL subset,
 * or that two Kueue mappings claim under different names, is unusable: it
 * counts nothing, and the reason quotes what was refused.
 */
#ifndef TAU_AGGREGATOR_DRA_CLASS_H
#define TAU_AGGREGATOR_DRA_CLASS_H

#include "dra_cel.h"

#include "tau/kueueconfig.h"

#include <cjson/cJSON.h>

#include <stdbool.h>
#include <stddef.h>

/** DeviceClassSpec.selectors' bound in the API. */
#define TAU_DRA_CLASS_MAX_SELECTORS 32

/** One DeviceClass; every string owned. */
typedef struct tau_dra_class {
	char *name;
	char *extended_resource_name; /**< spec.extendedResourceName, NULL when unset */
	tau_dra_cel **selectors;      /**< compiled, all must hold; NULL entries when unusable */
	size_t n_selectors;
	char *unusable; /**< why the class counts nothing (quotes the expression), or NULL */
} tau_dra_class;

/**
 * Read a DeviceClass object.  A selector outside the CEL subset is not an error: the class
 * is read, with `unusable` saying why.  `out` must be zeroed; on failure it is left zeroed.
 * @return 0, -TAU_EINVAL (malformed object: the message names the class and field),
 *         -TAU_ETOOBIG, -TAU_ENOMEM.
 */
int tau_dra_class_from_json(tau_dra_class *out, const cJSON *obj);

/** Release what `cls` owns and zero it; NULL is a no-op. */
void tau_dra_class_clear(tau_dra_class *cls);

/** Free an array of mappings whose strings it owns; NULL is a no-op. */
void tau_dra_mappings_free(tau_kueue_dra_mapping *mappings, size_t n);

/** How a class reached its quota resource. */
typedef enum tau_dra_via {
	TAU_DRA_VIA_NONE = 0, /**< maps to nothing: counts nothing */
	TAU_DRA_VIA_KUEUE,    /**< Kueue's deviceClassMappings */
	TAU_DRA_VIA_EXTENDED, /**< spec.extendedResourceName */
	TAU_DRA_VIA_CONFLICT, /**< Kueue maps it under two names: unusable */
} tau_dra_via;

/**
 * The quota resource a class counts under.
 * @param resource  receives the name (lent from the class or the mappings), NULL for none
 * @param note      receives why, for explain (e.g. that Kueue's mapping overrides a different
 *                  extendedResourceName); may be NULL
 * @return how.
 */
tau_dra_via tau_dra_class_resource(const char **resource, const tau_dra_class *cls,
                                   const tau_kueue_dra_mapping *mappings, size_t n_mappings,
                                   char *note, size_t note_cap);

#endif /* TAU_AGGREGATOR_DRA_CLASS_H */
