/*
 * test_selector.c - label selectors: the parse tables of apimachinery's
 * selector tests, matching (both entry points), the JSON form and its
 * errors, the limits, and to_string -> parse round trips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tau/error.h"
#include "tau/selector.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define MSG_QNAME                                                                                  \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "   \
	"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "  \
	"validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define MSG_VALUE                                                                                  \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "   \
	"or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "      \
	"'my_value',  or '12345', regex used for validation is "                                   \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define MSG_INT "for 'Gt', 'Lt' operators, the value must be an integer"
#define MSG_OPS ", expected: in, notin, =, ==, !=, gt, lt"
#define REQ     "unable to parse requirement: "

/* ---- helpers ---------------------------------------------------------- */

static tau_selector *parse_ok(const char *s)
{
	tau_selector *sel = NULL;
	int rc = tau_selector_parse(&sel, s);

	if (rc != 0)
		fail_msg("parse '%s': %d %s", s, rc, tau_error_last()->msg);
	assert_non_null(sel);
	return sel;
}

static char *string_of(const tau_selector *sel)
{
	char *s = NULL;
	int rc = tau_selector_to_string(&s, sel);

	if (rc != 0)
		fail_msg("to_string: %d %s", rc, tau_error_last()->msg);
	return s;
}

static cJSON *json(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	if (j == NULL)
		fail_msg("bad JSON in test: %s", text);
	return j;
}

static tau_selector *from_json_ok(const char *text)
{
	cJSON *j = json(text);
	tau_selector *sel = NULL;
	int rc = tau_selector_from_json(&sel, j);

	if (rc != 0)
		fail_msg("from_json %s: %d %s", text, rc, tau_error_last()->msg);
	cJSON_Delete(j);
	return sel;
}

/*
 * Match sel against the labels in JSON text through both entry points and
 * insist they agree.  The pairs are every member whose value is a string.
 */
static bool match_both(const tau_selector *sel, const char *labels_text)
{
	cJSON *labels = json(labels_text);
	const char *keys[64];
	const char *values[64];
	size_t n = 0;
	bool by_json;
	bool by_pairs;

	if (cJSON_IsObject(labels)) {
		for (const cJSON *m = labels->child; m != NULL; m = m->next) {
			if (!cJSON_IsString(m))
				continue;
			assert_true(n < ARRAY_LEN(keys));
			keys[n] = m->string;
			values[n] = m->valuestring;
			n++;
		}
	}
	by_json = tau_selector_matches(sel, labels);
	by_pairs = tau_selector_matches_pairs(sel, n ? keys : NULL, n ? values : NULL, n);
	cJSON_Delete(labels);
	if (by_json != by_pairs)
		fail_msg("matches and matches_pairs disagree on %s", labels_text);
	return by_json;
}

/* ---- parsing ---------------------------------------------------------- */

struct parse_case {
	const char *in;
	const char *canonical;
};

static void test_parse_valid(void **state)
{
	static const struct parse_case cases[] = {
	        /* TestSelectorParse good strings: the canonical form drops blanks. */
	        {"x=a,y=b,z=c", "x=a,y=b,z=c"},
	        {"", ""},
	        {"x!=a,y=b", "x!=a,y=b"},
	        {"x=", "x="},
	        {"x= ", "x="},
	        {"x=,z= ", "x=,z="},
	        {"x= ,z= ", "x=,z="},
	        {"!x", "!x"},
	        {"x>1", "x>1"},
	        {"x>1,z<5", "x>1,z<5"},
	        /* TestSetSelectorParser valid strings. */
	        {"\rx", "x"},
	        {"this-is-a-dns.domain.com/key-with-dash",
	         "this-is-a-dns.domain.com/key-with-dash"},
	        {"this-is-another-dns.domain.com/key-with-dash in (so,what)",
	         "this-is-another-dns.domain.com/key-with-dash in (so,what)"},
	        {"0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
	         "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)"},
	        {"foo  in\t (abc)", "foo in (abc)"},
	        {"x notin\n (abc)", "x notin (abc)"},
	        {"x  notin\t\t\t(abc,def)", "x notin (abc,def)"},
	        {"x in (abc,def)", "x in (abc,def)"},
	        {"x in (abc,)", "x in (,abc)"},
	        {"x in ()", "x in ()"},
	        {"x notin (abc,,def),bar,z in (),w", "bar,w,x notin (,abc,def),z in ()"},
	        {"x,y in (a)", "x,y in (a)"},
	        {"x=a", "x=a"},
	        {"x<7", "x<7"},
	        {"x=a,y!=b", "x=a,y!=b"},
	        {"x=a,y!=b,z in (h,i,j)", "x=a,y!=b,z in (h,i,j)"},
	        {"x notin ( )", "x notin ()"},
	        {"x notin (, a)", "x notin (,a)"},
	        {"a ", "a"},
	        {"a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"},
	        /* TestToString expectations, reached by parsing. */
	        {"x in (abc,def),y notin (jkl),z", "x in (abc,def),y notin (jkl),z"},
	        {"x notin (abc,def),y!=jkl,!z", "x notin (abc,def),y!=jkl,!z"},
	        {"x notin (abc),y in (jkl,mno),z notin ()",
	         "x notin (abc),y in (jkl,mno),z notin ()"},
	        {"x=abc,y==jkl,z!=a,z", "x=abc,y==jkl,z!=a,z"},
	        {"x>2,y<8,z", "x>2,y<8,z"},
	        /* TestDeterministicParse, and more. */
	        {"x=a,a=x", "a=x,x=a"},
	        {"b=1,a=2,b=0", "a=2,b=1,b=0"},
	        {"notin=in", "notin=in"},
	        {"in in (in)", "in in (in)"},
	        {"!in", "!in"},
	        {"x in (b,a,b)", "x in (a,b)"},
	        {" \t\r\n x \n== \ty ,\n!z ", "x==y,!z"},
	        {"x>007", "x>007"},
	        {"example.com/App_1 in (A.b-c_D)", "example.com/App_1 in (A.b-c_D)"},
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		tau_selector *sel = parse_ok(cases[i].in);
		char *s = string_of(sel);

		if (strcmp(s, cases[i].canonical) != 0)
			fail_msg("parse '%s' printed '%s', want '%s'", cases[i].in, s,
			         cases[i].canonical);
		free(s);
		tau_selector_free(sel);
	}
}

static void test_parse_invalid(void **state)
{
	static const struct parse_case cases[] = {
	        /* TestSelectorParse bad strings. */
	        {"x=a||y=b", REQ "values[0][x]: Invalid value: \"a||y\": " MSG_VALUE},
	        {"x==a==b", "found '==', expected: ',' or 'end of string'"},
	        {"!x=a", "found '=', expected: ',' or 'end of string'"},
	        {"x<a", REQ "values[0]: Invalid value: \"a\": " MSG_INT},
	        /* TestSetSelectorParser bad strings. */
	        {"x,,y", "found ',', expected: identifier after ','"},
	        {",x,y", "found ',', expected: !, identifier, or 'end of string'"},
	        {"x nott in (y)", REQ "found 'nott'" MSG_OPS},
	        {"a in (xyz),", "found '', expected: identifier after ','"},
	        {"a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"},
	        {"a in (xyz abc)", REQ "found 'abc', expected: ',' or ')'"},
	        {"a notin(", REQ "found '', expected: ',', ')' or identifier"},
	        {"a (", REQ "found '('" MSG_OPS},
	        {"(", "found '(', expected: !, identifier, or 'end of string'"},
	        /* TestParseOperator. */
	        {"x !", REQ "found '!'" MSG_OPS},
	        {"x exists", REQ "found 'exists'" MSG_OPS},
	        /* More syntax. */
	        {"x in (a,=)", REQ "found '=', expected: ',', or identifier"},
	        {"x in (a,", REQ "found '', expected: ',', or identifier"},
	        /* labels.Parse quirk: ",," eats the next token, so "(,,)" is an error. */
	        {"x in (,,)", REQ "found ')', expected: ',', or identifier"},
	        {"x in a", REQ "found 'a' expected: '('"},
	        {"x=(a)", REQ "found '(', expected: identifier"},
	        {"!", REQ "found '', expected: identifier"},
	        {"!,x", REQ "found ',', expected: identifier"},
	        {"!=a", "found '!=', expected: !, identifier, or 'end of string'"},
	        {"x>=1", REQ "found '=', expected: identifier"},
	        {"x=\x01", REQ "values[0][x]: Invalid value: \"\\x01\": " MSG_VALUE},
	        {"x=\x01,(", REQ "values[0][x]: Invalid value: \"\\x01\": " MSG_VALUE},
	        {"x\x7f y", REQ "key: Invalid value: \"x\\x7f\": name part " MSG_QNAME},
	        {"x,\x80", REQ "key: Invalid value: \"\\x80\": name part " MSG_QNAME},
	        {"x \x80", REQ "found '\\x80'" MSG_OPS},
	        /* Keys and values are validated. */
	        {"-x", REQ "key: Invalid value: \"-x\": name part " MSG_QNAME},
	        {"a/b/c=d", REQ "key: Invalid value: \"a/b/c\": a qualified name " MSG_QNAME
	                        " with an optional DNS subdomain prefix and '/' (e.g. "
	                        "'example.com/MyName')"},
	        {"x in (a_)", REQ "values[0][x]: Invalid value: \"a_\": " MSG_VALUE},
	        {"x in (a,b_)", REQ "values[1][x]: Invalid value: \"b_\": " MSG_VALUE},
	        {"x=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	         REQ "values[0][x]: Invalid value: "
	             "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must "
	             "be no more than 63 characters"},
	        /* gt / lt take one base-10 int64 that is also a label value. */
	        {"x>", REQ "values[0]: Invalid value: \"\": " MSG_INT},
	        {"x>1.5", REQ "values[0]: Invalid value: \"1.5\": " MSG_INT},
	        {"x<9223372036854775808",
	         REQ "values[0]: Invalid value: \"9223372036854775808\": " MSG_INT},
	        {"x<-1", REQ "values[0][x]: Invalid value: \"-1\": " MSG_VALUE},
	        {"x>+1", REQ "values[0][x]: Invalid value: \"+1\": " MSG_VALUE},
	        {"x<1 2", "found '2', expected: ',' or 'end of string'"},
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		tau_selector *sel = (tau_selector *)(uintptr_t)0x1;
		int rc = tau_selector_parse(&sel, cases[i].in);

		if (rc != -TAU_EINVAL)
			fail_msg("parse '%s' gave %d, want -TAU_EINVAL", cases[i].in, rc);
		/* The out parameter is untouched on failure. */
		assert_ptr_equal(sel, (tau_selector *)(uintptr_t)0x1);
		assert_int_equal(tau_error_last()->code, TAU_EINVAL);
		if (strcmp(tau_error_last()->msg, cases[i].canonical) != 0)
			fail_msg("parse '%s':\n got '%s'\nwant '%s'", cases[i].in,
			         tau_error_last()->msg, cases[i].canonical);
	}
}

static void test_parse_limits(void **state)
{
	size_t cap = TAU_SELECTOR_MAX_STRING + 16;
	char *s = malloc(cap);
	tau_selector *sel = NULL;
	size_t o = 0;

	(void)state;
	assert_non_null(s);

	/* Exactly the cap parses (all blanks: match everything); one more does not. */
	memset(s, ' ', TAU_SELECTOR_MAX_STRING);
	s[TAU_SELECTOR_MAX_STRING] = '\0';
	sel = parse_ok(s);
	assert_true(tau_selector_is_everything(sel));
	tau_selector_free(sel);
	sel = NULL;
	s[TAU_SELECTOR_MAX_STRING] = 'x';
	s[TAU_SELECTOR_MAX_STRING + 1] = '\0';
	assert_int_equal(tau_selector_parse(&sel, s), -TAU_ETOOBIG);
	assert_null(sel);

	/* 256 requirements parse, 257 do not. */
	for (int i = 0; i < TAU_SELECTOR_MAX_REQUIREMENTS; i++)
		o += (size_t)snprintf(s + o, cap - o, "%sk%d", i ? "," : "", i);
	sel = parse_ok(s);
	tau_selector_free(sel);
	sel = NULL;
	snprintf(s + o, cap - o, ",last");
	assert_int_equal(tau_selector_parse(&sel, s), -TAU_ETOOBIG);
	assert_int_equal(tau_error_last()->code, TAU_ETOOBIG);
	assert_null(sel);

	/* 256 values in one set parse, 257 do not. */
	o = (size_t)snprintf(s, cap, "x in (");
	for (int i = 0; i < TAU_SELECTOR_MAX_VALUES; i++)
		o += (size_t)snprintf(s + o, cap - o, "%sv%d", i ? "," : "", i);
	snprintf(s + o, cap - o, ")");
	sel = parse_ok(s);
	tau_selector_free(sel);
	sel = NULL;
	snprintf(s + o, cap - o, ",more)");
	assert_int_equal(tau_selector_parse(&sel, s), -TAU_ETOOBIG);
	assert_null(sel);
	/* Empty values count too: a wall of commas is bounded. */
	o = (size_t)snprintf(s, cap, "x in (");
	memset(s + o, ',', 600);
	snprintf(s + o + 600, cap - o - 600, ")");
	assert_int_equal(tau_selector_parse(&sel, s), -TAU_ETOOBIG);
	assert_null(sel);
	free(s);
}

/* ---- matching --------------------------------------------------------- */

struct match_case {
	const char *selector;
	const char *labels;
	bool want;
};

static void test_match_table(void **state)
{
	static const struct match_case cases[] = {
	        /* TestSelectorMatches. */
	        {"", "{\"x\":\"y\"}", true},
	        {"x=y", "{\"x\":\"y\"}", true},
	        {"x=y,z=w", "{\"x\":\"y\",\"z\":\"w\"}", true},
	        {"x!=y,z!=w", "{\"x\":\"z\",\"z\":\"a\"}", true},
	        {"notin=in", "{\"notin\":\"in\"}", true},
	        {"x", "{\"x\":\"z\"}", true},
	        {"!x", "{\"y\":\"z\"}", true},
	        {"x>1", "{\"x\":\"2\"}", true},
	        {"x<1", "{\"x\":\"0\"}", true},
	        {"x=z", "{}", false},
	        {"x=y", "{\"x\":\"z\"}", false},
	        {"x=y,z=w", "{\"x\":\"w\",\"z\":\"w\"}", false},
	        {"x!=y,z!=w", "{\"x\":\"z\",\"z\":\"w\"}", false},
	        {"x", "{\"y\":\"z\"}", false},
	        {"!x", "{\"x\":\"z\"}", false},
	        {"x>1", "{\"x\":\"0\"}", false},
	        {"x<1", "{\"x\":\"2\"}", false},
	        {"foo=bar", "{\"foo\":\"bar\",\"baz\":\"blah\"}", true},
	        {"baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", true},
	        {"foo=bar,baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", true},
	        {"foo=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", false},
	        {"baz=bar", "{\"foo\":\"bar\",\"baz\":\"blah\"}", false},
	        {"foo=bar,foobar=bar,baz=blah", "{\"foo\":\"bar\",\"baz\":\"blah\"}", false},
	        /* TestRequirementSelectorMatching. */
	        {"x in (foo),y notin (alpha)", "{\"x\":\"foo\",\"y\":\"baz\"}", true},
	        {"x in (foo),y in (alpha)", "{\"x\":\"foo\",\"y\":\"baz\"}", false},
	        {"x notin (),y", "{\"y\":\"\"}", true},
	        {"!x,y", "{\"y\":\"\"}", true},
	        {"x notin (),!y", "{\"y\":\"\"}", false},
	        {"x in ()", "{\"y\":\"baz\"}", false},
	        {"z>1", "{\"z\":\"2\"}", true},
	        {"z>1", "{\"z\":\"v2\"}", false},
	        /* != and notin match objects WITHOUT the key. */
	        {"x!=a", "{}", true},
	        {"x notin (a,b)", "{}", true},
	        {"x notin (a,b)", "{\"x\":\"b\"}", false},
	        {"x notin (a,b)", "{\"x\":\"c\"}", true},
	        {"x!=a", "{\"x\":\"a\"}", false},
	        /* Exists / DoesNotExist, empty values. */
	        {"x", "{}", false},
	        {"x", "{\"x\":\"\"}", true},
	        {"!x", "{}", true},
	        {"x=", "{\"x\":\"\"}", true},
	        {"x=", "{}", false},
	        {"x!=", "{\"x\":\"\"}", false},
	        {"x in (,a)", "{\"x\":\"\"}", true},
	        {"x in (a,b)", "{\"x\":\"b\"}", true},
	        {"x==b", "{\"x\":\"b\"}", true},
	        /* The empty selector matches everything, even no labels. */
	        {"", "{}", true},
	        {"", "null", true},
	        {"!x", "null", true},
	        {"x", "null", false},
	        /* gt / lt: integer comparison, missing or non-integer fails both. */
	        {"x>5", "{\"x\":\"10\"}", true},
	        {"x>5", "{\"x\":\"5\"}", false},
	        {"x<5", "{\"x\":\"5\"}", false},
	        {"x<5", "{\"x\":\"-7\"}", true},
	        {"x<5", "{\"x\":\"+4\"}", true},
	        {"x>5", "{}", false},
	        {"x<5", "{}", false},
	        {"x<5", "{\"x\":\"\"}", false},
	        {"x<5", "{\"x\":\"4a\"}", false},
	        {"x>007", "{\"x\":\"8\"}", true},
	        {"x>9223372036854775806", "{\"x\":\"9223372036854775807\"}", true},
	        {"x>9223372036854775806", "{\"x\":\"9223372036854775808\"}", false},
	        {"x<9223372036854775806", "{\"x\":\"9223372036854775808\"}", false},
	        {"x<0", "{\"x\":\"-9223372036854775808\"}", true},
	        {"x<0", "{\"x\":\"-9223372036854775809\"}", false},
	        /* Prefixed keys are compared whole. */
	        {"tau.azure.com/workspace=alpha", "{\"tau.azure.com/workspace\":\"alpha\"}", true},
	        {"tau.azure.com/workspace=alpha", "{\"workspace\":\"alpha\"}", false},
	        /* Values compare exactly (case matters). */
	        {"x=A", "{\"x\":\"a\"}", false},
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		tau_selector *sel = parse_ok(cases[i].selector);

		if (match_both(sel, cases[i].labels) != cases[i].want)
			fail_msg("'%s' on %s: want %s", cases[i].selector, cases[i].labels,
			         cases[i].want ? "match" : "no match");
		tau_selector_free(sel);
	}
}

static void test_match_json_oddities(void **state)
{
	tau_selector *sel;
	cJSON *labels;

	(void)state;
	/* A member that is not a string counts as absent. */
	sel = parse_ok("x");
	labels = json("{\"x\":5}");
	assert_false(tau_selector_matches(sel, labels));
	cJSON_Delete(labels);
	/* A non-object labels value means no labels. */
	labels = json("[\"x\"]");
	assert_false(tau_selector_matches(sel, labels));
	cJSON_Delete(labels);
	assert_false(tau_selector_matches(sel, NULL));
	tau_selector_free(sel);

	sel = parse_ok("!x");
	labels = json("{\"x\":true}");
	assert_true(tau_selector_matches(sel, labels));
	cJSON_Delete(labels);
	tau_selector_free(sel);

	/* A repeated key uses its last value, in both entry points. */
	sel = parse_ok("x=b");
	labels = json("{\"x\":\"a\",\"x\":\"b\"}");
	assert_true(tau_selector_matches(sel, labels));
	cJSON_Delete(labels);
	{
		const char *keys[] = {"x", "x"};
		const char *values[] = {"a", "b"};

		assert_true(tau_selector_matches_pairs(sel, keys, values, 2));
		values[1] = "c";
		assert_false(tau_selector_matches_pairs(sel, keys, values, 2));
	}
	assert_false(tau_selector_matches_pairs(sel, NULL, NULL, 0));
	tau_selector_free(sel);
}

static void test_everything_nothing(void **state)
{
	tau_selector *sel = NULL;
	char *s = (char *)(uintptr_t)0x1;
	cJSON *labels = json("{\"a\":\"b\"}");

	(void)state;
	assert_int_equal(tau_selector_everything(&sel), 0);
	assert_true(tau_selector_is_everything(sel));
	assert_false(tau_selector_is_nothing(sel));
	assert_true(tau_selector_matches(sel, labels));
	assert_true(tau_selector_matches(sel, NULL));
	assert_true(tau_selector_matches_pairs(sel, NULL, NULL, 0));
	assert_int_equal(tau_selector_to_string(&s, sel), 0);
	assert_string_equal(s, "");
	free(s);
	tau_selector_free(sel);

	assert_int_equal(tau_selector_nothing(&sel), 0);
	assert_true(tau_selector_is_nothing(sel));
	assert_false(tau_selector_is_everything(sel));
	assert_false(tau_selector_matches(sel, labels));
	assert_false(tau_selector_matches(sel, NULL));
	assert_false(tau_selector_matches_pairs(sel, NULL, NULL, 0));
	/* No string form: "" would select everything on the server. */
	s = (char *)(uintptr_t)0x1;
	assert_int_equal(tau_selector_to_string(&s, sel), -TAU_EINVAL);
	assert_ptr_equal(s, (char *)(uintptr_t)0x1);
	tau_selector_free(sel);

	sel = parse_ok("a");
	assert_false(tau_selector_is_everything(sel));
	assert_false(tau_selector_is_nothing(sel));
	tau_selector_free(sel);

	tau_selector_free(NULL);
	cJSON_Delete(labels);
}

/* ---- JSON form -------------------------------------------------------- */

static void test_json_valid(void **state)
{
	static const struct parse_case cases[] = {
	        {"{}", ""},
	        {"{\"matchLabels\":{},\"matchExpressions\":[]}", ""},
	        {"{\"matchLabels\":null,\"matchExpressions\":null}", ""},
	        {"{\"matchLabels\":{\"tier\":\"db\",\"app\":\"web\"}}", "app=web,tier=db"},
	        {"{\"matchLabels\":{\"b\":\"1\"},\"matchExpressions\":["
	         "{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"y\",\"x\",\"y\"]},"
	         "{\"key\":\"c\",\"operator\":\"Exists\"},"
	         "{\"key\":\"d\",\"operator\":\"DoesNotExist\",\"values\":[]},"
	         "{\"key\":\"e\",\"operator\":\"NotIn\",\"values\":[\"z\",\"\"]},"
	         "{\"key\":\"f\",\"operator\":\"Exists\",\"values\":null}]}",
	         "a in (x,y),b=1,c,!d,e notin (,z),f"},
	        {"{\"matchLabels\":{\"x\":\"1\",\"x\":\"2\"}}", "x=2"},
	        {"{\"matchLabels\":{\"x\":\"\"},\"unknown\":[1,2]}", "x="},
	        /* JSON null is Go's zero value: "" for a label or a value. */
	        {"{\"matchLabels\":{\"a\":null}}", "a="},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[null,\"b\"]"
	         "}]}",
	         "a in (,b)"},
	        {"{\"matchExpressions\":[{\"key\":\"tau.azure.com/workspace\",\"operator\":\"In\","
	         "\"values\":[\"alpha\"],\"extra\":1}]}",
	         "tau.azure.com/workspace in (alpha)"},
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		tau_selector *sel = from_json_ok(cases[i].in);
		char *s = string_of(sel);

		if (strcmp(s, cases[i].canonical) != 0)
			fail_msg("from_json %s printed '%s', want '%s'", cases[i].in, s,
			         cases[i].canonical);
		free(s);
		tau_selector_free(sel);
	}
}

static void test_json_null_is_nothing(void **state)
{
	tau_selector *sel = NULL;
	cJSON *null_json = json("null");

	(void)state;
	assert_int_equal(tau_selector_from_json(&sel, NULL), 0);
	assert_true(tau_selector_is_nothing(sel));
	tau_selector_free(sel);
	sel = NULL;
	assert_int_equal(tau_selector_from_json(&sel, null_json), 0);
	assert_true(tau_selector_is_nothing(sel));
	tau_selector_free(sel);
	cJSON_Delete(null_json);

	/* ... while {} is everything. */
	sel = from_json_ok("{}");
	assert_true(tau_selector_is_everything(sel));
	assert_true(match_both(sel, "{\"any\":\"thing\"}"));
	tau_selector_free(sel);
}

static void test_json_matching(void **state)
{
	tau_selector *sel =
	        from_json_ok("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
	                     "{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"dev\"]},"
	                     "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"fe\",\"be\"]},"
	                     "{\"key\":\"legacy\",\"operator\":\"DoesNotExist\"},"
	                     "{\"key\":\"team\",\"operator\":\"Exists\"}]}");

	(void)state;
	assert_true(match_both(sel, "{\"app\":\"web\",\"tier\":\"fe\",\"team\":\"a\"}"));
	assert_true(match_both(
	        sel, "{\"app\":\"web\",\"tier\":\"be\",\"team\":\"a\",\"env\":\"prod\"}"));
	assert_false(match_both(
	        sel, "{\"app\":\"web\",\"tier\":\"be\",\"team\":\"a\",\"env\":\"dev\"}"));
	assert_false(match_both(sel, "{\"app\":\"web\",\"tier\":\"fe\"}"));
	assert_false(match_both(sel, "{\"app\":\"web\",\"tier\":\"db\",\"team\":\"a\"}"));
	assert_false(match_both(
	        sel, "{\"app\":\"web\",\"tier\":\"fe\",\"team\":\"a\",\"legacy\":\"\"}"));
	assert_false(match_both(sel, "{\"app\":\"api\",\"tier\":\"fe\",\"team\":\"a\"}"));
	assert_false(match_both(sel, "{}"));
	tau_selector_free(sel);
}

struct json_error_case {
	const char *in;
	int code;
	const char *msg; /* NULL: only the code is checked */
};

static void test_json_errors(void **state)
{
	static const struct json_error_case cases[] = {
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[]}]}",
	         TAU_EINVAL,
	         "matchExpressions[0].values: Required value: must be specified when `operator` is "
	         "'In' or 'NotIn'"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"},"
	         "{\"key\":\"b\",\"operator\":\"NotIn\"}]}",
	         TAU_EINVAL,
	         "matchExpressions[1].values: Required value: must be specified when `operator` is "
	         "'In' or 'NotIn'"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}"
	         "]}",
	         TAU_EINVAL,
	         "matchExpressions[0].values: Forbidden: may not be specified when `operator` is "
	         "'Exists' or 'DoesNotExist'"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"DoesNotExist\",\"values\":["
	         "\"\"]}]}",
	         TAU_EINVAL,
	         "matchExpressions[0].values: Forbidden: may not be specified when `operator` is "
	         "'Exists' or 'DoesNotExist'"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
	         TAU_EINVAL,
	         "matchExpressions[0].operator: Invalid value: \"Gt\": not a valid selector "
	         "operator"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"in\",\"values\":[\"1\"]}]}",
	         TAU_EINVAL,
	         "matchExpressions[0].operator: Invalid value: \"in\": not a valid selector "
	         "operator"},
	        {"{\"matchExpressions\":[{\"key\":\"a\"}]}", TAU_EINVAL,
	         "matchExpressions[0].operator: Invalid value: \"\": not a valid selector "
	         "operator"},
	        {"{\"matchExpressions\":[{\"key\":\"a b\",\"operator\":\"Exists\"}]}", TAU_EINVAL,
	         "matchExpressions[0].key: Invalid value: \"a b\": name part " MSG_QNAME},
	        {"{\"matchExpressions\":[{\"operator\":\"Exists\"}]}", TAU_EINVAL,
	         "matchExpressions[0].key: Invalid value: \"\": name part must be non-empty; name "
	         "part " MSG_QNAME},
	        {"{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[\"ok\",\"a "
	         "b\"]}]}",
	         TAU_EINVAL, "matchExpressions[0].values[1]: Invalid value: \"a b\": " MSG_VALUE},
	        {"{\"matchLabels\":{\"app\":\"bad value\"}}", TAU_EINVAL,
	         "matchLabels: Invalid value: \"bad value\": " MSG_VALUE},
	        {"{\"matchLabels\":{\"bad key\":\"v\"}}", TAU_EINVAL,
	         "matchLabels: Invalid value: \"bad key\": name part " MSG_QNAME},
	        /* Wrong JSON types. */
	        {"[]", TAU_ETYPE, "labelSelector: must be an object"},
	        {"\"app=web\"", TAU_ETYPE, "labelSelector: must be an object"},
	        {"{\"matchLabels\":[\"a\"]}", TAU_ETYPE, "matchLabels: must be an object"},
	        {"{\"matchLabels\":{\"a\":1}}", TAU_ETYPE,
	         "matchLabels: the value of \"a\" must be a string"},
	        {"{\"matchExpressions\":{}}", TAU_ETYPE, "matchExpressions: must be an array"},
	        {"{\"matchExpressions\":[\"a\"]}", TAU_ETYPE,
	         "matchExpressions[0]: must be an object"},
	        {"{\"matchExpressions\":[{\"key\":1,\"operator\":\"Exists\"}]}", TAU_ETYPE,
	         "matchExpressions[0].key: must be a string"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":[\"In\"]}]}", TAU_ETYPE,
	         "matchExpressions[0].operator: must be a string"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":\"x\"}]}",
	         TAU_ETYPE, "matchExpressions[0].values: must be an array"},
	        {"{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x\",2]}]"
	         "}",
	         TAU_ETYPE, "matchExpressions[0].values[1]: must be a string"},
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		cJSON *j = json(cases[i].in);
		tau_selector *sel = (tau_selector *)(uintptr_t)0x1;
		int rc = tau_selector_from_json(&sel, j);

		cJSON_Delete(j);
		if (rc != -cases[i].code)
			fail_msg("from_json %s gave %d (%s), want -%s", cases[i].in, rc,
			         tau_error_last()->msg, tau_error_name(cases[i].code));
		assert_ptr_equal(sel, (tau_selector *)(uintptr_t)0x1);
		if (cases[i].msg != NULL && strcmp(tau_error_last()->msg, cases[i].msg) != 0)
			fail_msg("from_json %s:\n got '%s'\nwant '%s'", cases[i].in,
			         tau_error_last()->msg, cases[i].msg);
	}
}

static void test_json_limits(void **state)
{
	cJSON *root;
	cJSON *labels;
	cJSON *exprs;
	cJSON *expr;
	cJSON *values;
	tau_selector *sel = NULL;
	char key[32];

	(void)state;
	/* 200 matchLabels + 56 expressions = 256: fine; one more: too big. */
	root = cJSON_CreateObject();
	labels = cJSON_AddObjectToObject(root, "matchLabels");
	exprs = cJSON_AddArrayToObject(root, "matchExpressions");
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "l%d", i);
		cJSON_AddStringToObject(labels, key, "v");
	}
	for (int i = 0; i < 56; i++) {
		expr = cJSON_CreateObject();
		snprintf(key, sizeof(key), "e%d", i);
		cJSON_AddStringToObject(expr, "key", key);
		cJSON_AddStringToObject(expr, "operator", "Exists");
		cJSON_AddItemToArray(exprs, expr);
	}
	assert_int_equal(tau_selector_from_json(&sel, root), 0);
	tau_selector_free(sel);
	sel = NULL;
	cJSON_AddStringToObject(labels, "one-more", "v");
	assert_int_equal(tau_selector_from_json(&sel, root), -TAU_ETOOBIG);
	assert_null(sel);
	cJSON_Delete(root);

	/* 256 values fine, 257 too big. */
	root = cJSON_CreateObject();
	exprs = cJSON_AddArrayToObject(root, "matchExpressions");
	expr = cJSON_CreateObject();
	cJSON_AddStringToObject(expr, "key", "k");
	cJSON_AddStringToObject(expr, "operator", "In");
	values = cJSON_AddArrayToObject(expr, "values");
	cJSON_AddItemToArray(exprs, expr);
	for (int i = 0; i < TAU_SELECTOR_MAX_VALUES; i++) {
		snprintf(key, sizeof(key), "v%d", i);
		cJSON_AddItemToArray(values, cJSON_CreateString(key));
	}
	assert_int_equal(tau_selector_from_json(&sel, root), 0);
	tau_selector_free(sel);
	sel = NULL;
	cJSON_AddItemToArray(values, cJSON_CreateString("more"));
	assert_int_equal(tau_selector_from_json(&sel, root), -TAU_ETOOBIG);
	assert_string_equal(tau_error_last()->msg,
	                    "matchExpressions[0].values: more than 256 values");
	assert_null(sel);
	cJSON_Delete(root);
}

/* ---- round trip ------------------------------------------------------- */

static void test_round_trip(void **state)
{
	static const char *const selectors[] = {
	        "",
	        "x=a,y=b",
	        "x!=a",
	        "x in (a,b,,c),y notin (d),z,!w",
	        "z>1,a<10,a",
	        "tau.azure.com/workspace in (alpha,beta),app.kubernetes.io/managed-by==taugrid",
	        "in in (in,notin),notin notin (),!in",
	        "b=2,a=1,b!=3",
	        "x= ,y in ( , )",
	};
	static const char *const label_sets[] = {
	        "{}",
	        "{\"x\":\"a\"}",
	        "{\"x\":\"a\",\"y\":\"b\"}",
	        "{\"x\":\"\",\"y\":\"\"}",
	        "{\"x\":\"c\",\"y\":\"e\",\"z\":\"1\"}",
	        "{\"z\":\"2\",\"a\":\"5\"}",
	        "{\"z\":\"2\",\"a\":\"10\"}",
	        ("{\"tau.azure.com/workspace\":\"beta\","
	         "\"app.kubernetes.io/managed-by\":\"taugrid\"}"),
	        "{\"in\":\"notin\",\"notin\":\"x\"}",
	        "{\"in\":\"in\"}",
	        "{\"a\":\"1\",\"b\":\"2\"}",
	        "{\"a\":\"1\",\"b\":\"3\"}",
	        "{\"w\":\"\"}",
	};
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(selectors); i++) {
		tau_selector *a = parse_ok(selectors[i]);
		char *s1 = string_of(a);
		tau_selector *b = parse_ok(s1);
		char *s2 = string_of(b);

		/* The canonical form is a fixed point... */
		assert_string_equal(s1, s2);
		/* ... and means the same thing. */
		for (size_t j = 0; j < ARRAY_LEN(label_sets); j++) {
			if (match_both(a, label_sets[j]) != match_both(b, label_sets[j]))
				fail_msg("'%s' and '%s' disagree on %s", selectors[i], s1,
				         label_sets[j]);
		}
		free(s1);
		free(s2);
		tau_selector_free(a);
		tau_selector_free(b);
	}
}

static void test_json_round_trip(void **state)
{
	tau_selector *a =
	        from_json_ok("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
	                     "{\"key\":\"env\",\"operator\":\"NotIn\",\"values\":[\"dev\",\"\"]},"
	                     "{\"key\":\"legacy\",\"operator\":\"DoesNotExist\"}]}");
	char *s = string_of(a);
	tau_selector *b = parse_ok(s);

	(void)state;
	assert_string_equal(s, "app=web,env notin (,dev),!legacy");
	assert_true(match_both(b, "{\"app\":\"web\"}"));
	assert_true(match_both(a, "{\"app\":\"web\"}"));
	assert_false(match_both(b, "{\"app\":\"web\",\"env\":\"\"}"));
	assert_false(match_both(a, "{\"app\":\"web\",\"env\":\"\"}"));
	free(s);
	tau_selector_free(a);
	tau_selector_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_valid),
	        cmocka_unit_test(test_parse_invalid),
	        cmocka_unit_test(test_parse_limits),
	        cmocka_unit_test(test_match_table),
	        cmocka_unit_test(test_match_json_oddities),
	        cmocka_unit_test(test_everything_nothing),
	        cmocka_unit_test(test_json_valid),
	        cmocka_unit_test(test_json_null_is_nothing),
	        cmocka_unit_test(test_json_matching),
	        cmocka_unit_test(test_json_errors),
	        cmocka_unit_test(test_json_limits),
	        cmocka_unit_test(test_round_trip),
	        cmocka_unit_test(test_json_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
