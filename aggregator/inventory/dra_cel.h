/*
 * dra_cel.h - the subset of CEL that DeviceClass selectors use, compiled and evaluated
 * against one DRA device (docs/budget.md, "How DRA devices count").
 *
 * A DeviceClass selects devices with CEL expressions (resource.k8s.io/v1
 * CELDeviceSelector).  The pool must know which devices a class selects, but
 * runs no general CEL: it reads only the forms real GPU classes are written in,
 * joined by `&&` (parentheses allowed around such a conjunction):
 *
 *   device.driver == "gpu.nvidia.com"                       (== and != on strings)
 *   device.attributes["gpu.nvidia.com"].type == "gpu"       (strings, bools: == !=)
 *   device.attributes["d"].index < 4                        (ints: == != < <= > >=)
 *   device.attributes["d"].isGpu                            (a bool attribute alone)
 *   device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0
 *   device.capacity["d"].memory.isGreaterThan(quantity("40Gi"))    (and isLessThan)
 *
 * Anything else (||, !, in, functions, versions, other literals) is refused at
 * compile time with the expression quoted: the class that holds it counts
 * nothing (fail closed).  Evaluation follows Kubernetes: an unknown domain is
 * an empty map, an unknown attribute or a type mismatch is an evaluation error
 * (for the pool: the device does not match, and the error is reported).
 */
#ifndef TAU_AGGREGATOR_DRA_CEL_H
#define TAU_AGGREGATOR_DRA_CEL_H

#include "tau/quantity.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** CELDeviceSelector.expression's bound in the API (10 Ki). */
#define TAU_DRA_CEL_EXPRESSION_MAX (10 * 1024)

/** Most `&&`-joined comparisons one compiled expression holds. */
#define TAU_DRA_CEL_MAX_TERMS 64

/** The kind of a device attribute (resource.k8s.io/v1 DeviceAttribute) or a capacity. */
typedef enum tau_dra_value_kind {
	TAU_DRA_VALUE_STRING = 0,
	TAU_DRA_VALUE_INT,
	TAU_DRA_VALUE_BOOL,
	TAU_DRA_VALUE_VERSION, /**< semver text; no comparison of the subset reads it */
	TAU_DRA_VALUE_QUANTITY /**< a capacity */
} tau_dra_value_kind;

/** One attribute or capacity of a device; `name` is always "domain/identifier". */
typedef struct tau_dra_value {
	char *name;
	tau_dra_value_kind kind;
	char *text; /**< STRING and VERSION */
	int64_t integer;
	bool boolean;
	tau_quantity quantity;
} tau_dra_value;

/** What a selector sees of a device (strings lent by the caller). */
typedef struct tau_dra_device_view {
	const char *driver;
	const tau_dra_value *attributes; /**< sorted by name */
	size_t n_attributes;
	const tau_dra_value *capacity; /**< sorted by name */
	size_t n_capacity;
} tau_dra_device_view;

typedef struct tau_dra_cel tau_dra_cel;

/**
 * Compile `expression` if it is in the subset.
 * @param out  receives the compiled expression (free with tau_dra_cel_free); untouched on failure
 * @return 0, -TAU_EINVAL (outside the subset or malformed: the message quotes the expression
 *         and says what at which offset), -TAU_ETOOBIG (over the API's 10 Ki or
 *         TAU_DRA_CEL_MAX_TERMS comparisons), -TAU_ENOMEM.
 */
int tau_dra_cel_compile(tau_dra_cel **out, const char *expression);

/** Free a compiled expression; NULL is a no-op. */
void tau_dra_cel_free(tau_dra_cel *cel);

/**
 * Evaluate against one device.
 * @param out  receives the result; untouched on error
 * @return 0, or -TAU_EINVAL when evaluation fails the way CEL fails at run time (an unknown
 *         attribute or capacity, a comparison of the wrong types); the message says which.
 */
int tau_dra_cel_eval(bool *out, const tau_dra_cel *cel, const tau_dra_device_view *device);

/** Lends the value named `name` ("domain/identifier") of a sorted array, or NULL. */
const tau_dra_value *tau_dra_value_find(const tau_dra_value *values, size_t n, const char *name);

#endif /* TAU_AGGREGATOR_DRA_CEL_H */
