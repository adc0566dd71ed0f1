/*
 * output.c - what `-o` means for every `tau` command.
 *
 * The one idea: a command builds one document (a cJSON tree, its stable
 * interface) and prints it in the format asked for; JSON and YAML are two
 * spellings of the same document, so a script may read either and get the
 * same values (tests/e2e compares them).  Tables stay each command's own.
 */
#include "output.h"

#include "tau/error.h"
#include "tau/yaml.h"

#include <stdlib.h>
#include <string.h>

int tau_cli_output_parse(tau_cli_format *fmt, const char *arg, bool wide_is_table, const char *cmd)
{
	if (strcmp(arg, "table") == 0 || (wide_is_table && strcmp(arg, "wide") == 0))
		*fmt = TAU_CLI_TABLE;
	else if (strcmp(arg, "json") == 0)
		*fmt = TAU_CLI_JSON;
	else if (strcmp(arg, "yaml") == 0)
		*fmt = TAU_CLI_YAML;
	else {
		fprintf(stderr, "%s: -o must be table, json or yaml, not \"%s\"\n", cmd, arg);
		return -1;
	}
	return 0;
}

int tau_cli_doc_render(char **out, const cJSON *doc, tau_cli_format fmt)
{
	char *text, *grown;
	size_t n;

	if (fmt == TAU_CLI_YAML)
		return tau_yaml_from_json(out, doc);
	if (fmt != TAU_CLI_JSON || doc == NULL)
		return tau_error_set(TAU_EINVAL, "no document to print as %s",
		                     fmt == TAU_CLI_JSON ? "json" : "a table");
	if ((text = cJSON_Print(doc)) == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	n = strlen(text);
	if ((grown = realloc(text, n + 2)) == NULL) {
		free(text);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	grown[n] = '\n';
	grown[n + 1] = '\0';
	*out = grown;
	return 0;
}

int tau_cli_doc_print(FILE *out, const cJSON *doc, tau_cli_format fmt)
{
	char *text = NULL;
	int rc = tau_cli_doc_render(&text, doc, fmt);

	if (rc < 0)
		return rc;
	fputs(text, out);
	free(text);
	return 0;
}
