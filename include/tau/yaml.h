/*
 * tau/yaml.h - a JSON document written as YAML (block style), for the
 * `-o yaml` of the tau CLI: a YAML 1.1 or 1.2 reader (kubectl, PyYAML,
 * libyaml with the core schema) reads it back to the same document.
 * libtau's YAML readers (kubeconfig, Kueue configuration) live in their own
 * modules.
 */
#ifndef TAU_YAML_H
#define TAU_YAML_H

#include <cjson/cJSON.h>

/** The largest YAML text tau_yaml_from_json writes. */
#define TAU_YAML_MAX_BYTES (64u << 20)

/**
 * Write `doc` (any JSON value; an object or array is written in block style, a scalar as a
 * one-line document) as YAML, through libyaml's emitter.  A string is written plain only
 * where no YAML 1.1 or 1.2 reader can take it for a null, bool, number, timestamp or merge
 * key; otherwise quoted.  Numbers are written so that they read back to the same double.
 * The text ends with a newline and has no "---" or "..." markers.
 * @param out  receives the text (free()); untouched on failure.
 * @return 0; -TAU_EINVAL for a number that is not finite or a value that is no JSON type;
 *         -TAU_ETOOBIG past TAU_YAML_MAX_BYTES; -TAU_ENOMEM.
 */
int tau_yaml_from_json(char **out, const cJSON *doc);

#endif /* TAU_YAML_H */
