/*
 * test_cli_output.c - `-o` for every `tau` command (cli/output.c): the values
 * taken and refused, "wide" only where a command takes it, and one document
 * written as JSON and as YAML.
 */
#include "output.h"

#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_parse(void **state)
{
	tau_cli_format fmt = TAU_CLI_JSON;

	(void)state;
	assert_int_equal(tau_cli_output_parse(&fmt, "table", false, "tau test"), 0);
	assert_int_equal(fmt, TAU_CLI_TABLE);
	assert_int_equal(tau_cli_output_parse(&fmt, "json", false, "tau test"), 0);
	assert_int_equal(fmt, TAU_CLI_JSON);
	assert_int_equal(tau_cli_output_parse(&fmt, "yaml", false, "tau test"), 0);
	assert_int_equal(fmt, TAU_CLI_YAML);
	/* wide: a table where the command has always taken it, refused elsewhere */
	assert_int_equal(tau_cli_output_parse(&fmt, "wide", false, "tau test"), -1);
	assert_int_equal(fmt, TAU_CLI_YAML); /* untouched */
	assert_int_equal(tau_cli_output_parse(&fmt, "wide", true, "tau test"), 0);
	assert_int_equal(fmt, TAU_CLI_TABLE);
	assert_int_equal(tau_cli_output_parse(&fmt, "xml", true, "tau test"), -1);
	assert_int_equal(tau_cli_output_parse(&fmt, "", true, "tau test"), -1);
	assert_int_equal(tau_cli_output_parse(&fmt, "JSON", true, "tau test"), -1);
	assert_int_equal(fmt, TAU_CLI_TABLE);
}

static void test_render(void **state)
{
	cJSON *doc = cJSON_Parse("{\"name\":\"a\",\"ready\":true,\"n\":2,\"phase\":null,"
	                         "\"items\":[\"no\"]}");
	char *text = NULL;

	(void)state;
	assert_int_equal(tau_cli_doc_render(&text, doc, TAU_CLI_JSON), 0);
	assert_string_equal(text, "{\n\t\"name\":\t\"a\",\n\t\"ready\":\ttrue,\n\t\"n\":\t2,\n"
	                          "\t\"phase\":\tnull,\n\t\"items\":\t[\"no\"]\n}\n");
	free(text);
	text = NULL;
	assert_int_equal(tau_cli_doc_render(&text, doc, TAU_CLI_YAML), 0);
	/* "n" and "no" are YAML 1.1 booleans: quoted, key or value */
	assert_string_equal(text,
	                    "name: a\nready: true\n\"n\": 2\nphase: null\nitems:\n- \"no\"\n");
	free(text);
	text = NULL;
	/* A table is each command's own; no document, nothing to write. */
	assert_int_equal(tau_cli_doc_render(&text, doc, TAU_CLI_TABLE), -TAU_EINVAL);
	assert_int_equal(tau_cli_doc_render(&text, NULL, TAU_CLI_JSON), -TAU_EINVAL);
	assert_null(text);
	cJSON_Delete(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse),
	        cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
