/*
 * test_yaml.c - a JSON document as YAML (lib/yaml_emit.c): strings a reader
 * could take for something else are quoted and plain ones stay plain,
 * numbers, bools and null are plain and read back to the same value, nesting
 * and empty maps and lists, and each document read back through libtau's
 * YAML loader (lib/yaml_internal.h) with the core schema equals the one
 * written; tau_yaml_read's cap, load errors and hand-over of the root;
 * tau_yaml_scalar_copy.
 */
#include "tau/yaml.h"

#include "../../../lib/yaml_internal.h"
#include "tau/error.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- reading back: YAML 1.2's core schema over libyaml's document ---- */

static cJSON *plain_value(const char *s)
{
	char *end;
	double d;

	if (s[0] == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0)
		return cJSON_CreateNull();
	if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
		return cJSON_CreateBool(s[0] == 't');
	d = strtod(s, &end);
	if (end != s && *end == '\0' && strspn(s, "0123456789+-.eE") == strlen(s))
		return cJSON_CreateNumber(d);
	return cJSON_CreateString(s);
}

static cJSON *to_json(yaml_document_t *doc, yaml_node_t *n)
{
	cJSON *out;

	if (n->type == YAML_SCALAR_NODE) {
		const char *s = (const char *)n->data.scalar.value;

		return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_value(s)
		                                                       : cJSON_CreateString(s);
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		out = cJSON_CreateArray();
		for (yaml_node_item_t *i = n->data.sequence.items.start;
		     i < n->data.sequence.items.top; i++)
			cJSON_AddItemToArray(out, to_json(doc, yaml_document_get_node(doc, *i)));
		return out;
	}
	out = cJSON_CreateObject();
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		assert_int_equal(k->type, YAML_SCALAR_NODE);
		cJSON_AddItemToObject(out, (const char *)k->data.scalar.value,
		                      to_json(doc, yaml_document_get_node(doc, p->value)));
	}
	return out;
}

/* Write `doc` as YAML, read it back, and expect the same document; gives the text. */
static char *round_trip(const cJSON *doc)
{
	yaml_parser_t parser;
	yaml_document_t ydoc;
	char *text = NULL;
	cJSON *back;

	assert_int_equal(tau_yaml_from_json(&text, doc), 0);
	assert_non_null(text);
	assert_int_equal(tau_yaml_load(&parser, &ydoc, text, strlen(text), "test"), 0);
	back = to_json(&ydoc, yaml_document_get_root_node(&ydoc));
	tau_yaml_unload(&parser, &ydoc);
	if (!cJSON_Compare(doc, back, true)) {
		char *a = cJSON_PrintUnformatted(doc), *b = cJSON_PrintUnformatted(back);

		fail_msg("round trip differs:\n%s\nYAML:\n%s\nread back:\n%s", a, text, b);
	}
	cJSON_Delete(back);
	return text;
}

/* The style of the first scalar value of one-key document {"k": <s>} once written. */
static yaml_scalar_style_t style_of(const char *s)
{
	cJSON *doc = cJSON_CreateObject();
	yaml_parser_t parser;
	yaml_document_t ydoc;
	yaml_scalar_style_t st;
	yaml_node_t *v;
	char *text;

	cJSON_AddStringToObject(doc, "k", s);
	text = round_trip(doc);
	assert_int_equal(tau_yaml_load(&parser, &ydoc, text, strlen(text), "test"), 0);
	v = tau_yaml_map_get(&ydoc, yaml_document_get_root_node(&ydoc), "k");
	assert_non_null(v);
	st = v->data.scalar.style;
	tau_yaml_unload(&parser, &ydoc);
	free(text);
	cJSON_Delete(doc);
	return st;
}

/* ---- the tests ---- */

static void test_strings_that_need_quotes(void **state)
{
	static const char *const quoted[] = {
	        "",        "true",   "False",       "YES",
	        "no",      "y",      "N",           "on",
	        "Off",     "null",   "NULL",        "~",
	        "0",       "0123",   "1.5",         "-1",
	        "+1",      ".inf",   ".NaN",        "0x1f",
	        "0o17",    "1e3",    "1_000",       "12:30",
	        "<<",      "=",      "2026-12-02",  "2026-12-02T18:00:00Z",
	        "- item",  "a: b",   "# comment",   "x #y",
	        " lead",   "trail ", "multi\nline", "tab\there",
	        "\x01ctl", "*alias", "&anchor",     "!tag",
	        "{flow}",  "[list]", "|",           ">",
	        "@at",     "`tick",  "%pct",        "?",
	        ":"};

	(void)state;
	for (size_t i = 0; i < sizeof(quoted) / sizeof(quoted[0]); i++)
		if (style_of(quoted[i]) == YAML_PLAIN_SCALAR_STYLE)
			fail_msg("\"%s\" was written plain", quoted[i]);
}

static void test_plain_strings_stay_plain(void **state)
{
	static const char *const plain[] = {
	        "hello",     "nvidia.com/gpu", "/dev/nvidia0", "Ready for generation 3",
	        "h100-80gb", "yesterday",      "nothing",      "ünïcode",
	        "tau-system"};

	(void)state;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (style_of(plain[i]) != YAML_PLAIN_SCALAR_STYLE)
			fail_msg("\"%s\" was quoted", plain[i]);
}

static void test_numbers_bools_null(void **state)
{
	static const double numbers[] = {0,
	                                 -5,
	                                 42,
	                                 3.5,
	                                 0.1,
	                                 1e20,
	                                 1e300,
	                                 -2.5e-10,
	                                 1.0 / 3,
	                                 4294967296.0,
	                                 9007199254740993.0,
	                                 -0.75};
	cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "n");
	char *text;

	(void)state;
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(numbers[i]));
	cJSON_AddTrueToObject(doc, "t");
	cJSON_AddFalseToObject(doc, "f");
	cJSON_AddNullToObject(doc, "z");
	text = round_trip(doc);
	/* Plain, never quoted; an exponent keeps a '.' for YAML 1.1. */
	assert_non_null(strstr(text, "\n- 42\n"));
	assert_non_null(strstr(text, "\n- 1.0e+300\n"));
	assert_non_null(strstr(text, "\n- 1.0e+20\n"));
	assert_non_null(strstr(text, "\n- 4294967296\n"));
	assert_non_null(strstr(text, "\nt: true\nf: false\nz: null\n"));
	free(text);
	cJSON_Delete(doc);
}

static void test_nested_and_empty(void **state)
{
	cJSON *doc = cJSON_Parse("{\"a\":1,\"b\":[1,\"x\",{\"c\":[],\"d\":{}},[[]]],"
	                         "\"e\":{\"f\":{\"g\":\"h\"}},\"empty\":{},\"none\":[]}");
	cJSON *map = cJSON_CreateObject(), *list = cJSON_CreateArray();
	char *text;

	(void)state;
	text = round_trip(doc);
	assert_string_equal(text, "a: 1\n"
	                          "b:\n"
	                          "- 1\n"
	                          "- x\n"
	                          "- c: []\n"
	                          "  d: {}\n"
	                          "- - []\n"
	                          "e:\n"
	                          "  f:\n"
	                          "    g: h\n"
	                          "empty: {}\n"
	                          "none: []\n");
	free(text);
	text = round_trip(map);
	assert_string_equal(text, "{}\n");
	free(text);
	text = round_trip(list);
	assert_string_equal(text, "[]\n");
	free(text);
	cJSON_Delete(doc);
	cJSON_Delete(map);
	cJSON_Delete(list);
}

static void test_keys_quoted_like_values(void **state)
{
	cJSON *doc = cJSON_CreateObject();
	char *text;

	(void)state;
	cJSON_AddStringToObject(doc, "true", "k");
	cJSON_AddStringToObject(doc, "", "empty key");
	cJSON_AddStringToObject(doc, "nvidia.com/gpu", "8");
	text = round_trip(doc);
	assert_non_null(strstr(text, "\"true\": k\n"));
	assert_non_null(strstr(text, "nvidia.com/gpu: \"8\"\n"));
	free(text);
	cJSON_Delete(doc);
}

static void test_refusals(void **state)
{
	cJSON *doc = cJSON_CreateObject();
	char *text = NULL;

	(void)state;
	assert_int_equal(tau_yaml_from_json(&text, NULL), -TAU_EINVAL);
	cJSON_AddItemToObject(doc, "x", cJSON_CreateNumber(INFINITY));
	assert_int_equal(tau_yaml_from_json(&text, doc), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "not finite"));
	assert_null(text); /* untouched */
	cJSON_Delete(doc);
}

/* tau_yaml_read's reader: counts the root's pairs (-1 for no root), returns ctx's rc. */
typedef struct reading {
	int pairs;
	int rc;
} reading;

static int count_pairs(void *ctx, yaml_document_t *doc, yaml_node_t *root)
{
	reading *r = ctx;

	(void)doc;
	if (root == NULL)
		r->pairs = -1;
	else if (root->type == YAML_MAPPING_NODE)
		r->pairs = (int)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
	return r->rc;
}

static void test_read_document(void **state)
{
	static const char two[] = "a: 1\nb: [x]\n";
	reading r = {.pairs = 0, .rc = 0};

	(void)state;
	assert_int_equal(tau_yaml_read(two, strlen(two), 64, "doc", count_pairs, &r), 0);
	assert_int_equal(r.pairs, 2);
	assert_int_equal(tau_yaml_read("", 0, 64, "doc", count_pairs, &r), 0);
	assert_int_equal(r.pairs, -1); /* an empty document has no root */
	r.rc = -TAU_EINVAL;            /* what the reader says is what comes back */
	assert_int_equal(tau_yaml_read(two, strlen(two), 64, "doc", count_pairs, &r), -TAU_EINVAL);
	r.rc = 0;
	r.pairs = 0;
	assert_int_equal(tau_yaml_read(two, strlen(two), 4, "doc", count_pairs, &r), -TAU_ETOOBIG);
	assert_string_equal(tau_error_last()->msg, "doc of 12 bytes exceeds the 4 byte cap");
	assert_int_equal(tau_yaml_read("a: [", 4, 64, "doc", count_pairs, &r), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "doc: invalid YAML at line "));
	assert_int_equal(r.pairs, 0); /* the reader never ran */
}

static void test_scalar_copy(void **state)
{
	yaml_node_t n = {.type = YAML_SCALAR_NODE};
	char *s = NULL;

	(void)state;
	n.data.scalar.value = (yaml_char_t *)"abcdef";
	n.data.scalar.length = 3; /* a scalar is not NUL-terminated where it ends */
	assert_int_equal(tau_yaml_scalar_copy(&s, &n), 0);
	assert_string_equal(s, "abc");
	free(s);
	n.data.scalar.length = 0;
	assert_int_equal(tau_yaml_scalar_copy(&s, &n), 0);
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_strings_that_need_quotes),
	        cmocka_unit_test(test_plain_strings_stay_plain),
	        cmocka_unit_test(test_numbers_bools_null),
	        cmocka_unit_test(test_nested_and_empty),
	        cmocka_unit_test(test_keys_quoted_like_values),
	        cmocka_unit_test(test_refusals),
	        cmocka_unit_test(test_read_document),
	        cmocka_unit_test(test_scalar_copy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
