/*
 * tau/kueueconfig.h - what taugrid reads from Kueue's manager Configuration: the Dynamic
 * Resource Allocation mappings (`resources.deviceClassMappings`) and the manager's
 * `featureGates.DynamicResourceAllocation`.
 *
 * Kueue's manager reads a `Configuration` (config.kueue.x-k8s.io/v1beta1 or v1beta2) from the
 * key `controller_manager_config.yaml` of the ConfigMap `kueue-manager-config` in
 * `kueue-system` (docs/budget.md, "Dynamic Resource Allocation: facts").  Each mapping names
 * the quota resource Kueue counts for claims of the listed DeviceClasses.  The parser takes
 * bytes and does no I/O; every other setting of the document is ignored.
 */
#ifndef TAU_KUEUECONFIG_H
#define TAU_KUEUECONFIG_H

#include <stddef.h>

/** A ConfigMap holds at most 1 MiB; a larger document is refused. */
#define TAU_KUEUE_CONFIG_MAX_BYTES (1024u * 1024u)
/** At most this many mappings, and classes in one mapping, are read. */
#define TAU_KUEUE_DRA_MAPPINGS_MAX 256u
#define TAU_KUEUE_DRA_CLASSES_MAX  256u

/** One `resources.deviceClassMappings` entry. */
typedef struct tau_kueue_dra_mapping {
	char *name;            /**< the quota resource name (`name`) */
	char **device_classes; /**< `deviceClassNames`, as written (at least one) */
	size_t n_device_classes;
} tau_kueue_dra_mapping;

/** The parts of Kueue's Configuration taugrid reads. */
typedef struct tau_kueue_config {
	tau_kueue_dra_mapping *mappings; /**< in document order */
	size_t n_mappings;
	/** `featureGates.DynamicResourceAllocation`: 1 true, 0 false, -1 not written (Kueue's
	 * default for the release applies). */
	int dra_gate;
} tau_kueue_config;

/**
 * Parse a Kueue Configuration document (YAML or JSON).
 * @param out receives the configuration (tau_kueue_config_free); untouched on failure
 * @return 0; -TAU_ETOOBIG (over TAU_KUEUE_CONFIG_MAX_BYTES); -TAU_EINVAL with the error set
 *         naming the field: not YAML, not a mapping, `kind` not `Configuration` or `apiVersion`
 *         not config.kueue.x-k8s.io/v1beta1|v1beta2, a mapping without `name` or without
 *         `deviceClassNames`, a non-string name, a DeviceClass in two mappings, a feature gate
 *         that is not a boolean, more than the limits above; -TAU_ENOMEM.
 */
int tau_kueue_config_parse(tau_kueue_config **out, const char *buf, size_t len);

/** Free; NULL is a no-op. */
void tau_kueue_config_free(tau_kueue_config *cfg);

/** The mapping listing `device_class`, or NULL (lends; valid while `cfg` lives). */
const tau_kueue_dra_mapping *tau_kueue_config_mapping_for(const tau_kueue_config *cfg,
                                                          const char *device_class);

#endif /* TAU_KUEUECONFIG_H */
