/*
 * yaml.h - a JSON document as block-style YAML that kubectl apply reads back
 * to the same object (cli/yaml.c says how strings are quoted).
 */
#ifndef TAU_CLI_YAML_H
#define TAU_CLI_YAML_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/** Write `doc` (an object) as YAML.  @return 0, or <0 (error set: not an object, a non-finite
 * number, out of memory). */
int tau_cli_yaml_write(FILE *out, const cJSON *doc);

#endif /* TAU_CLI_YAML_H */
