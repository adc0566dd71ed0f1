/*
 * test_names.c - Kubernetes name and label checks against the good and bad
 * lists of apimachinery's validation tests, plus the exact messages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tau/error.h"
#include "tau/names.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define MSG_LABEL                                                                                  \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
	"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "   \
	"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define MSG_SUBDOMAIN                                                                              \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
	"or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "      \
	"regex used for validation is "                                                            \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define MSG_QNAME                                                                                  \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "   \
	"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "  \
	"validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define MSG_VALUE                                                                                  \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "   \
	"or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "      \
	"'my_value',  or '12345', regex used for validation is "                                   \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"

typedef int (*check_fn)(const char *);

/* A string of n copies of c, in a static buffer per slot. */
static const char *rep(int slot, char c, size_t n)
{
	static char buf[4][1100];

	assert_true(n < sizeof(buf[0]));
	memset(buf[slot], c, n);
	buf[slot][n] = '\0';
	return buf[slot];
}

static void expect_good(check_fn f, const char *const *vals, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		tau_error_clear();
		if (f(vals[i]) != 0)
			fail_msg("expected '%s' to be valid: %s", vals[i], tau_error_last()->msg);
	}
}

static void expect_bad(check_fn f, const char *const *vals, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		tau_error_clear();
		if (f(vals[i]) != -TAU_EINVAL)
			fail_msg("expected '%s' to be invalid", vals[i]);
		assert_int_equal(tau_error_last()->code, TAU_EINVAL);
		assert_true(tau_error_last()->msg[0] == '"');
	}
}

static void expect_msg(check_fn f, const char *val, const char *want)
{
	tau_error_clear();
	assert_int_equal(f(val), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg, want);
}

static void test_dns1123_label_tables(void **state)
{
	static const char *const good[] = {
	        "a", "ab", "abc", "a1", "a-1", "a--1--2--b",
	        "0", "01", "012", "1a", "1-a", "1--a--b--2",
	};
	static const char *const bad[] = {
	        "",    "A",  "ABC", "aBc", "A1",  "A-1", "1-A", "-",   "a-", "-a", "1-",
	        "-1",  "_",  "a_",  "_a",  "a_b", "1_",  "_1",  "1_2", ".",  "a.", ".a",
	        "a.b", "1.", ".1",  "1.2", " ",   "a ",  " a",  "a b", "1 ", " 1", "1 2",
	};
	(void)state;
	expect_good(tau_names_check_dns1123_label, good, ARRAY_LEN(good));
	expect_bad(tau_names_check_dns1123_label, bad, ARRAY_LEN(bad));
}

static void test_dns1123_label_length(void **state)
{
	(void)state;
	assert_int_equal(tau_names_check_dns1123_label(rep(0, 'a', 63)), 0);
	assert_int_equal(tau_names_check_dns1123_label(rep(0, 'a', 64)), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, ": must be no more than 63 characters"));
	assert_null(strstr(tau_error_last()->msg, "RFC 1123"));
}

static void test_dns1123_label_messages(void **state)
{
	char want[4 * 1100 + 128];
	char long_upper[70];

	(void)state;
	expect_msg(tau_names_check_dns1123_label, "Ab", "\"Ab\": " MSG_LABEL);
	expect_msg(tau_names_check_dns1123_label, "", "\"\": " MSG_LABEL);
	/* Kubernetes 1.32 says nothing special about dots in a label. */
	expect_msg(tau_names_check_dns1123_label, "a.b", "\"a.b\": " MSG_LABEL);

	snprintf(want, sizeof(want), "\"%s\": must be no more than 63 characters", rep(1, 'a', 64));
	expect_msg(tau_names_check_dns1123_label, rep(1, 'a', 64), want);

	/* Both reasons, in Kubernetes' order, joined with "; ". */
	memset(long_upper, 'A', 64);
	long_upper[64] = '\0';
	snprintf(want, sizeof(want), "\"%s\": must be no more than 63 characters; " MSG_LABEL,
	         long_upper);
	expect_msg(tau_names_check_dns1123_label, long_upper, want);
}

static void test_dns1123_subdomain_tables(void **state)
{
	static const char *const good[] = {
	        "a",
	        "ab",
	        "abc",
	        "a1",
	        "a-1",
	        "a--1--2--b",
	        "0",
	        "01",
	        "012",
	        "1a",
	        "1-a",
	        "1--a--b--2",
	        "a.a",
	        "ab.a",
	        "abc.a",
	        "a1.a",
	        "a-1.a",
	        "a--1--2--b.a",
	        "a.1",
	        "ab.1",
	        "abc.1",
	        "a1.1",
	        "a-1.1",
	        "a--1--2--b.1",
	        "0.a",
	        "01.a",
	        "012.a",
	        "1a.a",
	        "1-a.a",
	        "0.1",
	        "01.1",
	        "012.1",
	        "1a.1",
	        "1-a.1",
	        "1--a--b--2.1",
	        "a.b.c.d.e",
	        "aa.bb.cc.dd.ee",
	        "1.2.3.4.5",
	        "11.22.33.44.55",
	};
	static const char *const bad[] = {
	        "",
	        "A",
	        "ABC",
	        "aBc",
	        "A1",
	        "A-1",
	        "1-A",
	        "-",
	        "a-",
	        "-a",
	        "1-",
	        "-1",
	        "_",
	        "a_",
	        "_a",
	        "a_b",
	        "1_",
	        "_1",
	        "1_2",
	        ".",
	        "a.",
	        ".a",
	        "a..b",
	        "1.",
	        ".1",
	        "1..2",
	        " ",
	        "a ",
	        " a",
	        "a b",
	        "1 ",
	        " 1",
	        "1 2",
	        "A.a",
	        "aB.a",
	        "ab.A",
	        "A1.a",
	        "a1.A",
	        "A.1",
	        "aB.1",
	        "A1.1",
	        "1A.1",
	        "0.A",
	        "01.A",
	        "012.A",
	        "1A.a",
	        "1a.A",
	        "A.B.C.D.E",
	        "AA.BB.CC.DD.EE",
	        "a.B.c.d.e",
	        "aa.bB.cc.dd.ee",
	        "a@b",
	        "a,b",
	        "a;b",
	        "a:b",
	        "a%b",
	        "a?b",
	        "a$b",
	};
	(void)state;
	expect_good(tau_names_check_dns1123_subdomain, good, ARRAY_LEN(good));
	expect_bad(tau_names_check_dns1123_subdomain, bad, ARRAY_LEN(bad));
}

static void test_dns1123_subdomain_length(void **state)
{
	char want[4 * 1100 + 128];

	(void)state;
	assert_int_equal(tau_names_check_dns1123_subdomain(rep(0, 'a', 253)), 0);
	assert_int_equal(tau_names_check_dns1123_subdomain(rep(0, 'a', 254)), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, ": must be no more than 253 characters"));
	/* 63-byte labels joined by dots up to 253 bytes are fine, 254 are not. */
	snprintf(want, sizeof(want), "%s.%s.%s.%s", rep(0, 'a', 63), rep(1, 'b', 63),
	         rep(2, 'c', 63), rep(3, 'd', 61));
	assert_int_equal(strlen(want), 253);
	assert_int_equal(tau_names_check_dns1123_subdomain(want), 0);
	strcat(want, "d");
	assert_int_equal(tau_names_check_dns1123_subdomain(want), -TAU_EINVAL);
}

static void test_dns1123_subdomain_messages(void **state)
{
	(void)state;
	expect_msg(tau_names_check_dns1123_subdomain, "A.b", "\"A.b\": " MSG_SUBDOMAIN);
	expect_msg(tau_names_check_dns1123_subdomain, "a..b", "\"a..b\": " MSG_SUBDOMAIN);
}

static void test_label_key_tables(void **state)
{
	static const char *const good[] = {
	        "simple",
	        "now-with-dashes",
	        "1-starts-with-num",
	        "1234",
	        "simple/simple",
	        "now-with-dashes/simple",
	        "now-with-dashes/now-with-dashes",
	        "now.with.dots/simple",
	        "now-with.dashes-and.dots/simple",
	        "1-num.2-num/3-num",
	        "1234/5678",
	        "1.2.3.4/5678",
	        "Uppercase_Is_OK_123",
	        "example.com/Uppercase_Is_OK_123",
	        "requests.storage-foo",
	        "tau.azure.com/workspace",
	        "app.kubernetes.io/managed-by",
	};
	static const char *const bad[] = {
	        "nospecialchars%^=@",
	        "cantendwithadash-",
	        "-cantstartwithadash-",
	        "only/one/slash",
	        "Example.com/abc",
	        "example_com/abc",
	        "example.com/",
	        "/simple",
	        "",
	        "a b",
	};
	char key[2 * 1100 + 16];

	(void)state;
	expect_good(tau_names_check_label_key, good, ARRAY_LEN(good));
	expect_bad(tau_names_check_label_key, bad, ARRAY_LEN(bad));

	/* The limits: 63 for the name, 253 for the prefix. */
	assert_int_equal(tau_names_check_label_key(rep(0, 'a', 63)), 0);
	assert_int_equal(tau_names_check_label_key(rep(0, 'a', 64)), -TAU_EINVAL);
	snprintf(key, sizeof(key), "%s/%s", rep(0, 'a', 253), rep(1, 'b', 63));
	assert_int_equal(tau_names_check_label_key(key), 0);
	snprintf(key, sizeof(key), "%s/%s", rep(0, 'a', 254), "abc");
	assert_int_equal(tau_names_check_label_key(key), -TAU_EINVAL);
	assert_non_null(
	        strstr(tau_error_last()->msg, ": prefix part must be no more than 253 characters"));
	snprintf(key, sizeof(key), "%s/%s", "example.com", rep(1, 'b', 64));
	assert_int_equal(tau_names_check_label_key(key), -TAU_EINVAL);
	assert_non_null(
	        strstr(tau_error_last()->msg, ": name part must be no more than 63 characters"));
}

static void test_label_key_messages(void **state)
{
	(void)state;
	expect_msg(tau_names_check_label_key, "only/one/slash",
	           "\"only/one/slash\": a qualified name " MSG_QNAME
	           " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
	expect_msg(tau_names_check_label_key, "/simple",
	           "\"/simple\": prefix part must be non-empty");
	expect_msg(tau_names_check_label_key, "example.com/",
	           "\"example.com/\": name part must be non-empty; name part " MSG_QNAME);
	expect_msg(tau_names_check_label_key, "",
	           "\"\": name part must be non-empty; name part " MSG_QNAME);
	expect_msg(tau_names_check_label_key, "Example.com/abc",
	           "\"Example.com/abc\": prefix part " MSG_SUBDOMAIN);
	expect_msg(tau_names_check_label_key, "-x", "\"-x\": name part " MSG_QNAME);

	/* Two long reasons pass TAU_ERROR_MSG_MAX: the stored text is their start. */
	{
		static const char full[] =
		        "\"A_/b-\": prefix part " MSG_SUBDOMAIN "; name part " MSG_QNAME;

		assert_true(sizeof(full) > TAU_ERROR_MSG_MAX);
		assert_int_equal(tau_names_check_label_key("A_/b-"), -TAU_EINVAL);
		assert_int_equal(strlen(tau_error_last()->msg), TAU_ERROR_MSG_MAX - 1);
		assert_memory_equal(tau_error_last()->msg, full, TAU_ERROR_MSG_MAX - 1);
	}
}

static void test_label_value_tables(void **state)
{
	static const char *const good[] = {
	        "simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234",
	        "",       "MyValue",         "my_value",          "a.b_c-D",
	};
	static const char *const bad[] = {
	        "nospecialchars%^=@",
	        "Tama-nui-te-r\xc4\x81.is.M\xc4\x81ori.sun",
	        "\\backslashes\\are\\bad",
	        "-starts-with-dash",
	        "ends-with-dash-",
	        ".starts.with.dot",
	        "ends.with.dot.",
	        "a b",
	        "a/b",
	};
	(void)state;
	expect_good(tau_names_check_label_value, good, ARRAY_LEN(good));
	expect_bad(tau_names_check_label_value, bad, ARRAY_LEN(bad));
	assert_int_equal(tau_names_check_label_value(rep(0, 'a', 63)), 0);
	assert_int_equal(tau_names_check_label_value(rep(0, 'a', 64)), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, ": must be no more than 63 characters"));
}

static void test_label_value_messages(void **state)
{
	(void)state;
	expect_msg(tau_names_check_label_value, "-a", "\"-a\": " MSG_VALUE);
	expect_msg(tau_names_check_label_value, "a b", "\"a b\": " MSG_VALUE);
}

static void test_quoting(void **state)
{
	const char *msg;

	(void)state;
	/* Quotes, backslashes, control and non-ASCII bytes are escaped. */
	expect_msg(tau_names_check_label_value, "a\"b\\c\x01\t\xff",
	           "\"a\\\"b\\\\c\\x01\\t\\xff\": " MSG_VALUE);

	/* A huge value is shown shortened; the reason still follows it. */
	assert_int_equal(tau_names_check_dns1123_label(rep(0, 'a', 1000)), -TAU_EINVAL);
	msg = tau_error_last()->msg;
	assert_true(strlen(msg) < TAU_ERROR_MSG_MAX);
	assert_non_null(strstr(msg, "...\": must be no more than 63 characters"));
}

static void test_error_slot(void **state)
{
	(void)state;
	tau_error_clear();
	assert_int_equal(tau_names_check_dns1123_label("ok"), 0);
	assert_int_equal(tau_error_last()->code, 0);
	assert_int_equal(tau_names_check_dns1123_label("NO"), -TAU_EINVAL);
	assert_string_equal(tau_error_name(tau_error_last()->code), "EINVAL");
}

/* The one quoting function: Go's %q for ASCII, the bare form, and the cut. */
static void test_quote(void **state)
{
	char out[16];
	const char raw[] = {'a', '"', 'b', '\\', '\t', '\n', '\r', 0x01, (char)0xff};

	(void)state;
	assert_string_equal(tau_names_quote(out, sizeof(out), raw, sizeof(raw), true),
	                    "\"a\\\"b\\\\\\t\\n...\"");
	assert_string_equal(tau_names_quote(out, sizeof(out), "x\"\\\x01", 4, false), "x\"\\\\x01");
	assert_string_equal(tau_names_quote(out, sizeof(out), NULL, 0, true), "\"\"");
	assert_string_equal(tau_names_quote(out, sizeof(out), "0123456789abcdef", 16, true),
	                    "\"0123456789...\"");
	/* Bytes past len are not read: no NUL needed. */
	assert_string_equal(tau_names_quote(out, sizeof(out), "abc", 2, true), "\"ab\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_quote),
	        cmocka_unit_test(test_dns1123_label_tables),
	        cmocka_unit_test(test_dns1123_label_length),
	        cmocka_unit_test(test_dns1123_label_messages),
	        cmocka_unit_test(test_dns1123_subdomain_tables),
	        cmocka_unit_test(test_dns1123_subdomain_length),
	        cmocka_unit_test(test_dns1123_subdomain_messages),
	        cmocka_unit_test(test_label_key_tables),
	        cmocka_unit_test(test_label_key_messages),
	        cmocka_unit_test(test_label_value_tables),
	        cmocka_unit_test(test_label_value_messages),
	        cmocka_unit_test(test_quoting),
	        cmocka_unit_test(test_error_slot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
