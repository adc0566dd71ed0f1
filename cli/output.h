/*
 * output.h - `-o table|json|yaml`, kubectl's output option, for every `tau`
 * command that prints a document: one parse with one message, and one writer
 * of the document in the format chosen (YAML through tau/yaml.h).
 */
#ifndef TAU_CLI_OUTPUT_H
#define TAU_CLI_OUTPUT_H

#include "cli.h"

#include <stdbool.h>
#include <stdio.h>

/**
 * Take -o's value into *fmt: "table", "json" or "yaml" ("wide" too, as table, where the
 * command has always taken it: `wide_is_table`).  Anything else prints
 * "<cmd>: -o must be table, json or yaml, not \"X\"" on stderr.
 * @return 0, or -1 (message printed; exit TAU_CLI_USAGE), *fmt untouched.
 */
int tau_cli_output_parse(tau_cli_format *fmt, const char *arg, bool wide_is_table, const char *cmd);

/**
 * The text of `doc` in `fmt` (JSON: cJSON's indented form; YAML: tau_yaml_from_json), ending
 * in a newline.  TAU_CLI_TABLE is refused (a table is the command's own).
 * @param out  receives the text (free()); untouched on failure.
 * @return 0, or <0 (error set).
 */
int tau_cli_doc_render(char **out, const cJSON *doc, tau_cli_format fmt);

/** tau_cli_doc_render written to `out`.  @return 0, or <0 (error set, nothing written). */
int tau_cli_doc_print(FILE *out, const cJSON *doc, tau_cli_format fmt);

#endif /* TAU_CLI_OUTPUT_H */
