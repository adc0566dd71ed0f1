/* Unit tests of the bounded JSON helpers. */
#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *parse_ok(const char *text)
{
	cJSON *root = NULL;

	assert_int_equal(tau_json_parse(&root, text, strlen(text), 0), 0);
	assert_non_null(root);
	return root;
}

static void test_parse_valid_and_trailing_space(void **state)
{
	cJSON *root = parse_ok("{\"a\":1} \n\t");

	(void)state;
	cJSON_Delete(root);
}

static void test_parse_rejects_malformed(void **state)
{
	static const char *const bad[] = {
	        "", "{", "{\"a\":}", "[1,2", "{\"a\":1}x", "nul", "{\"a\" 1}", "\"unterminated",
	};
	cJSON *root = (cJSON *)0x1;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tau_json_parse(&root, bad[i], strlen(bad[i]), 0), -TAU_EINVAL);
		/* out untouched on failure */
		assert_ptr_equal(root, (cJSON *)0x1);
		assert_non_null(strstr(tau_error_last()->msg, "JSON"));
	}
	assert_int_equal(tau_json_parse(&root, NULL, 0, 0), -TAU_EINVAL);
}

static void test_parse_caps(void **state)
{
	const char *doc = "{\"key\":\"0123456789\"}";
	char deep[512];
	cJSON *root = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(tau_json_parse(&root, doc, strlen(doc), 10), -TAU_ETOOBIG);
	assert_non_null(strstr(tau_error_last()->msg, "cap"));
	assert_null(root);

	for (int i = 0; i < TAU_JSON_MAX_DEPTH + 1; i++)
		deep[n++] = '[';
	for (int i = 0; i < TAU_JSON_MAX_DEPTH + 1; i++)
		deep[n++] = ']';
	assert_int_equal(tau_json_parse(&root, deep, n, 0), -TAU_ETOOBIG);
	/* Brackets inside strings do not count as nesting. */
	n = 0;
	deep[n++] = '"';
	for (int i = 0; i < 200; i++)
		deep[n++] = '[';
	deep[n++] = '"';
	assert_int_equal(tau_json_parse(&root, deep, n, 0), 0);
	cJSON_Delete(root);
	/* Exactly at the depth limit is fine. */
	n = 0;
	for (int i = 0; i < TAU_JSON_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (int i = 0; i < TAU_JSON_MAX_DEPTH; i++)
		deep[n++] = ']';
	root = NULL;
	assert_int_equal(tau_json_parse(&root, deep, n, 0), 0);
	cJSON_Delete(root);
}

static void test_getters(void **state)
{
	cJSON *root = parse_ok("{\"metadata\":{\"name\":\"n1\",\"generation\":7,"
	                       "\"labels\":{\"a\":\"b\"},\"null\":null},"
	                       "\"spec\":{\"unschedulable\":true,\"taints\":[],\"frac\":1.5,"
	                       "\"huge\":1e30},\"dotted.key\":1}");
	const char *s = NULL;
	int64_t i = 0;
	bool b = false;
	const cJSON *obj = NULL;

	(void)state;
	assert_int_equal(tau_json_get_string(&s, root, "metadata.name"), 0);
	assert_string_equal(s, "n1");
	assert_int_equal(tau_json_get_int(&i, root, "metadata.generation"), 0);
	assert_int_equal(i, 7);
	assert_int_equal(tau_json_get_bool(&b, root, "spec.unschedulable"), 0);
	assert_true(b);
	assert_int_equal(tau_json_get_object(&obj, root, "metadata.labels"), 0);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(obj, "a"));
	assert_int_equal(tau_json_get_array(&obj, root, "spec.taints"), 0);

	/* absent, null and wrong types */
	s = "keep";
	assert_int_equal(tau_json_get_string(&s, root, "metadata.missing"), -TAU_ENOTFOUND);
	assert_string_equal(s, "keep");
	assert_int_equal(tau_json_get_string(&s, root, "metadata.null"), -TAU_ENOTFOUND);
	assert_int_equal(tau_json_get_string(&s, root, "metadata.generation"), -TAU_ETYPE);
	assert_non_null(strstr(tau_error_last()->msg, "metadata.generation"));
	assert_int_equal(tau_json_get_int(&i, root, "metadata.name"), -TAU_ETYPE);
	assert_int_equal(tau_json_get_int(&i, root, "spec.frac"), -TAU_ERANGE);
	assert_int_equal(tau_json_get_int(&i, root, "spec.huge"), -TAU_ERANGE);
	assert_int_equal(tau_json_get_bool(&b, root, "metadata.name"), -TAU_ETYPE);
	assert_int_equal(tau_json_get_object(&obj, root, "spec.taints"), -TAU_ETYPE);
	assert_int_equal(tau_json_get_array(&obj, root, "metadata"), -TAU_ETYPE);
	/* a path through a non-object stops */
	assert_int_equal(tau_json_get_string(&s, root, "metadata.name.x"), -TAU_ENOTFOUND);
	assert_null(tau_json_find(root, "spec.taints.0"));
	assert_ptr_equal(tau_json_find(root, ""), root);
	cJSON_Delete(root);
}

static void test_string_readers(void **state)
{
	cJSON *root =
	        parse_ok("{\"metadata\":{\"name\":\"n1\",\"namespace\":null,\"generation\":7,"
	                 "\"labels\":{\"tau.azure.com/team\":\"ml\",\"n\":3,\"a.b\":\"dotted\"},"
	                 "\"annotations\":{\"tau.azure.com/owner-uid\":\"u-1\",\"x\":null}},"
	                 "\"spec\":{\"labels\":[\"not\",\"a\",\"map\"]}}");

	(void)state;
	assert_string_equal(tau_json_str(root, "metadata.name"), "n1");
	assert_null(tau_json_str(root, "metadata.namespace"));  /* JSON null */
	assert_null(tau_json_str(root, "metadata.generation")); /* a number */
	assert_null(tau_json_str(root, "metadata.uid"));        /* absent */
	assert_null(tau_json_str(root, "metadata.name.x"));     /* through a string */
	assert_null(tau_json_str(NULL, "metadata.name"));

	/* Member keys are whole, dots and all. */
	assert_string_equal(tau_json_member_str(tau_json_find(root, "metadata.labels"), "a.b"),
	                    "dotted");
	assert_null(tau_json_member_str(tau_json_find(root, "metadata.labels"), "a"));
	assert_null(tau_json_member_str(tau_json_find(root, "metadata.labels"), "n"));
	assert_null(tau_json_member_str(tau_json_find(root, "spec.labels"), "0"));
	assert_null(tau_json_member_str(NULL, "a.b"));
	assert_null(tau_json_member_str(root, NULL));

	assert_string_equal(tau_json_label(root, "tau.azure.com/team"), "ml");
	assert_null(tau_json_label(root, "n"));
	assert_null(tau_json_label(root, "missing"));
	assert_string_equal(tau_json_annotation(root, "tau.azure.com/owner-uid"), "u-1");
	assert_null(tau_json_annotation(root, "x"));
	assert_null(tau_json_annotation(root, "tau.azure.com/team"));
	assert_null(tau_json_label(tau_json_find(root, "spec"), "0")); /* no metadata */
	assert_null(tau_json_label(NULL, "k"));
	assert_null(tau_json_annotation(NULL, "k"));
	cJSON_Delete(root);
}

static void test_print(void **state)
{
	cJSON *root = parse_ok("{ \"a\" : [1, 2] }");
	char *s = NULL;

	(void)state;
	assert_int_equal(tau_json_print(&s, root), 0);
	assert_string_equal(s, "{\"a\":[1,2]}");
	free(s);
	cJSON_Delete(root);
}

static void test_fix_utf8(void **state)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *text = NULL;

	(void)state;
	assert_non_null(root);
	cJSON_AddStringToObject(root, "ok", "caf\xc3\xa9");
	cJSON_AddStringToObject(root, "bad\xfe", "x\xffy");
	arr = cJSON_AddArrayToObject(root, "list");
	cJSON_AddItemToArray(arr, cJSON_CreateString("\xc3"));
	assert_int_equal(tau_json_fix_utf8(root), 3);
	assert_int_equal(tau_json_print(&text, root), 0);
	assert_string_equal(
	        text,
	        "{\"ok\":\"caf\xc3\xa9\",\"bad\xc3\xbe\":\"x\xc3\xbfy\",\"list\":[\"\xc3\x83\"]}");
	free(text);
	assert_int_equal(tau_json_fix_utf8(root), 0); /* already valid: nothing changes */
	cJSON_Delete(root);
	assert_int_equal(tau_json_fix_utf8(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_valid_and_trailing_space),
	        cmocka_unit_test(test_parse_rejects_malformed),
	        cmocka_unit_test(test_parse_caps),
	        cmocka_unit_test(test_getters),
	        cmocka_unit_test(test_string_readers),
	        cmocka_unit_test(test_print),
	        cmocka_unit_test(test_fix_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
