/*
 * Unit tests of tau/quantity: the vectors of apimachinery's quantity_test.go
 * (include/tau/quantity.h states the rules), the fixture strings, the limits we
 * add (128-bit mantissa, exponent bound), and fixed-seed property tests.
 */
#include "tau/error.h"
#include "tau/quantity.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define DEC TAU_QUANTITY_DECIMAL_SI
#define BIN TAU_QUANTITY_BINARY_SI
#define EXP TAU_QUANTITY_DECIMAL_EXPONENT

/* ---- helpers ----------------------------------------------------------------------------------
 */

static tau_quantity parse_ok(const char *s)
{
	tau_quantity q;
	int rc = tau_quantity_parse_str(&q, s);

	if (rc != 0)
		fail_msg("parse \"%s\": rc %d: %s", s, rc, tau_error_last()->msg);
	return q;
}

static tau_quantity scaled(int64_t value, int32_t scale, tau_quantity_fmt format)
{
	tau_quantity q;

	assert_int_equal(tau_quantity_from_scaled(&q, value, scale, format), 0);
	return q;
}

/* Canonical text of q in a rotating static buffer (two live results suffice here). */
static const char *fmt(const tau_quantity *q)
{
	static char bufs[4][TAU_QUANTITY_STR_MAX];
	static unsigned next;
	char *b = bufs[next++ % 4];

	assert_int_equal(tau_quantity_format(b, TAU_QUANTITY_STR_MAX, q), 0);
	return b;
}

static void expect_canonical(const char *in, const char *expect)
{
	tau_quantity q = parse_ok(in);
	const char *got = fmt(&q);

	if (strcmp(got, expect) != 0)
		fail_msg("\"%s\" formats as \"%s\", want \"%s\"", in, got, expect);
}

/* parse fails with code, and the message names the input and contains reason. */
static void expect_parse_error(const char *in, int code, const char *reason)
{
	tau_quantity q, before;
	const char *msg;
	int rc;

	memset(&q, 0xa5, sizeof(q));
	before = q;
	tau_error_clear();
	rc = tau_quantity_parse_str(&q, in);
	if (rc != -code)
		fail_msg("parse \"%s\": rc %d, want %d (%s)", in, rc, -code, tau_error_last()->msg);
	assert_memory_equal(&q, &before, sizeof(q)); /* untouched on failure */
	msg = tau_error_last()->msg;
	assert_int_equal(tau_error_last()->code, code);
	assert_true(msg[0] != '\0');
	if (in[0] != '\0' && strlen(in) < 60 && strstr(msg, in) == NULL)
		fail_msg("message \"%s\" does not name the input \"%s\"", msg, in);
	if (reason != NULL && strstr(msg, reason) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"", msg, reason);
}

#define MSG_FORMAT                                                                                 \
	"quantities must match the regular expression "                                            \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define MSG_SUFFIX  "unable to parse quantity's suffix"
#define MSG_NUMERIC "unable to parse numeric part of quantity"

/* ---- parsing ----------------------------------------------------------------------------------
 */

struct parse_vector {
	const char *in;
	int64_t mant; /* expected value = mant * 10^exp */
	int32_t exp;
	tau_quantity_fmt format;
};

/* TestQuantityParse of apimachinery plus the parse limits of include/tau/quantity.h. */
static const struct parse_vector parse_vectors[] = {
        {"0", 0, 0, DEC},
        {"0n", 0, 0, DEC},
        {"0u", 0, 0, DEC},
        {"0m", 0, 0, DEC},
        {"0Ki", 0, 0, BIN},
        {"0k", 0, 0, DEC},
        {"0Mi", 0, 0, BIN},
        {"0M", 0, 0, DEC},
        {"0Gi", 0, 0, BIN},
        {"0G", 0, 0, DEC},
        {"0Ti", 0, 0, BIN},
        {"0T", 0, 0, DEC},
        {"1", 1, 0, DEC},
        {"1Ki", 1024, 0, BIN},
        {"8Ki", 8 * 1024, 0, BIN},
        {"7Mi", 7 * 1024 * 1024, 0, BIN},
        {"6Gi", 6LL * 1024 * 1024 * 1024, 0, BIN},
        {"5Ti", 5LL * 1024 * 1024 * 1024 * 1024, 0, BIN},
        {"4Pi", 4LL * 1024 * 1024 * 1024 * 1024 * 1024, 0, BIN},
        {"3Ei", 3LL * 1024 * 1024 * 1024 * 1024 * 1024 * 1024, 0, BIN},
        {"10Ti", 10LL * 1024 * 1024 * 1024 * 1024, 0, BIN},
        {"100Ti", 100LL * 1024 * 1024 * 1024 * 1024, 0, BIN},
        {"5n", 5, -9, DEC},
        {"4u", 4, -6, DEC},
        {"3m", 3, -3, DEC},
        {"9", 9, 0, DEC},
        {"8k", 8, 3, DEC},
        {"50k", 5, 4, DEC},
        {"7M", 7, 6, DEC},
        {"6G", 6, 9, DEC},
        {"5T", 5, 12, DEC},
        {"40T", 4, 13, DEC},
        {"300T", 3, 14, DEC},
        {"2P", 2, 15, DEC},
        {"1E", 1, 18, DEC},
        {"1E-3", 1, -3, EXP},
        {"1e3", 1, 3, EXP},
        {"1E6", 1, 6, EXP},
        {"1e9", 1, 9, EXP},
        {"1E12", 1, 12, EXP},
        {"1e15", 1, 15, EXP},
        {"1E18", 1, 18, EXP},
        {"1e14", 1, 14, EXP},
        {"1e13", 1, 13, EXP},
        {"100.035k", 100035, 0, DEC},
        {"0.001", 1, -3, DEC},
        {"0.0005k", 5, -1, DEC},
        {"0.005", 5, -3, DEC},
        {"0.05", 5, -2, DEC},
        {"0.5", 5, -1, DEC},
        {"0.00050k", 5, -1, DEC},
        {"0.00500", 5, -3, DEC},
        {"0.05000", 5, -2, DEC},
        {"0.50000", 5, -1, DEC},
        {"0.5e0", 5, -1, EXP},
        {"0.5e-1", 5, -2, EXP},
        {"0.5e-2", 5, -3, EXP},
        {"10.035M", 10035, 3, DEC},
        {"1.2e3", 12, 2, EXP},
        {"1.3E+6", 13, 5, EXP},
        {"1.40e9", 14, 8, EXP},
        {"1.53E12", 153, 10, EXP},
        {"1.6e15", 16, 14, EXP},
        {"1.7E18", 17, 17, EXP},
        {"9.01", 901, -2, DEC},
        {"8.1k", 81, 2, DEC},
        {"7.123456M", 7123456, 0, DEC},
        {"6.987654321G", 6987654321LL, 0, DEC},
        {"5.444T", 5444, 9, DEC},
        {"40.1T", 401, 11, DEC},
        {"300.2T", 3002, 11, DEC},
        {"2.5P", 25, 14, DEC},
        {"1.01E", 101, 16, DEC},
        {"3.001n", 4, -9, DEC},
        {"1.1E-9", 2, -9, EXP},
        {"0.0000000001", 1, -9, DEC},
        {"0.0000000005", 1, -9, DEC},
        {"0.00000000050", 1, -9, DEC},
        {"0.5e-9", 1, -9, EXP},
        {"0.9n", 1, -9, DEC},
        {"0.00000012345", 124, -9, DEC},
        {"0.00000012354", 124, -9, DEC},
        {"9Ei", INT64_MAX, 0, BIN},
        {"9223372036854775807Ki", INT64_MAX, 0, BIN},
        {"12E", 12, 18, DEC},
        {"100.035Ki", 10243584, -2, BIN},
        {"0.5Mi", 512 * 1024, 0, BIN},
        {"0.05Gi", 536870912, -1, BIN},
        {"0.025Ti", 274877906944LL, -1, BIN},
        {"0.000000000001Ki", 2, -9, DEC}, /* rounds up and becomes DecimalSI */
        {".001", 1, -3, DEC},
        {".0001k", 100, -3, DEC},
        {"1.", 1, 0, DEC},
        {"1.G", 1, 9, DEC},
        /* Fixture strings (tests/fixtures/kube/node-*.json). */
        {"94940m", 9494, -2, DEC},
        {"1977700032Ki", 1977700032LL * 1024, 0, BIN},
        {"119703055367", 119703055367LL, 0, DEC},
        /* More edges. */
        {"0.000000000001", 1, -9, DEC},
        {"00001.5000", 15, -1, DEC},
        {"1.0000000000000000000000000000000000000000000000001", 1000000001, -9, DEC},
        {"0.00000000000000000000000000000000000000000000000001", 1, -9, DEC},
        {"8Ei", INT64_MAX, 0, BIN},
        {"7.99999999999999999999Ei", INT64_MAX, 0, BIN},
        {"0.5Ki", 512, 0, BIN},
        {"0.0009765625Ki", 1, 0, BIN}, /* exactly 1: not below one, stays BinarySI */
};

static void test_parse_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_vectors) / sizeof(parse_vectors[0]); i++) {
		const struct parse_vector *v = &parse_vectors[i];
		tau_quantity want = scaled(v->mant, v->exp, v->format);
		tau_quantity neg_want = scaled(-v->mant, v->exp, v->format);
		char signed_in[128];
		tau_quantity got = parse_ok(v->in);
		tau_quantity_fmt format = v->format;

		if (tau_quantity_cmp(&got, &want) != 0)
			fail_msg("\"%s\" parsed as %s, want %s", v->in, fmt(&got), fmt(&want));
		assert_int_equal(tau_quantity_get_format(&got), format);

		snprintf(signed_in, sizeof(signed_in), "-%s", v->in);
		got = parse_ok(signed_in);
		if (tau_quantity_cmp(&got, &neg_want) != 0)
			fail_msg("\"%s\" parsed as %s, want %s", signed_in, fmt(&got),
			         fmt(&neg_want));
		assert_int_equal(tau_quantity_get_format(&got), format);

		snprintf(signed_in, sizeof(signed_in), "+%s", v->in);
		got = parse_ok(signed_in);
		if (tau_quantity_cmp(&got, &want) != 0)
			fail_msg("\"%s\" parsed as %s, want %s", signed_in, fmt(&got), fmt(&want));
		assert_int_equal(tau_quantity_get_format(&got), format);
	}
}

/* Inputs Kubernetes rejects, with the Kubernetes reason. */
static void test_parse_invalid(void **state)
{
	static const struct {
		const char *in;
		const char *reason;
	} invalid[] = {
	        {"", MSG_FORMAT},
	        {" 1", MSG_FORMAT},
	        {"1 ", MSG_FORMAT},
	        {"1.1.M", MSG_FORMAT},
	        {"1+1.0M", MSG_FORMAT},
	        {"0.1mi", MSG_SUFFIX},
	        {"0.1am", MSG_FORMAT},
	        {"aoeu", MSG_FORMAT},
	        {".5i", MSG_SUFFIX},
	        {"1i", MSG_SUFFIX},
	        {"-3.01i", MSG_SUFFIX},
	        {"-3.01e-", MSG_SUFFIX},
	        {"1K", MSG_SUFFIX},
	        {"1e", MSG_SUFFIX},
	        {"1E+", MSG_SUFFIX},
	        {"1ki", MSG_SUFFIX},
	        {"1Ki5", MSG_SUFFIX},
	        {"1ee3", MSG_SUFFIX},
	        {"1e3e", MSG_FORMAT},
	        {"1k3", MSG_SUFFIX},
	        {"1mm", MSG_SUFFIX},
	        {"--1", MSG_SUFFIX},
	        {"1-", MSG_SUFFIX},
	        {"1e3.5", MSG_FORMAT},
	        {"Non-Numeric", MSG_FORMAT},
	        {"Pi", MSG_NUMERIC},
	        {"+Ei", MSG_NUMERIC},
	        {".e-10", MSG_NUMERIC},
	        {"-e-20", MSG_NUMERIC},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		expect_parse_error(invalid[i].in, TAU_EINVAL, invalid[i].reason);
}

/* Embedded NUL and non-ASCII bytes are rejected and quoted safely. */
static void test_parse_binary_garbage(void **state)
{
	static const char with_nul[] = {'1', '\0', 'k'};
	tau_quantity q;
	char big[300];

	(void)state;
	assert_int_equal(tau_quantity_parse(&q, with_nul, sizeof(with_nul)), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "\\x00"));
	assert_int_equal(tau_quantity_parse(&q, "1\xc2\xa0", 3), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "\\xc2\\xa0"));
	/* A long input is quoted, truncated, in a bounded message. */
	memset(big, 'x', sizeof(big));
	assert_int_equal(tau_quantity_parse(&q, big, sizeof(big)), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "xxx..."));
	assert_true(strlen(tau_error_last()->msg) < TAU_ERROR_MSG_MAX - 1);
}

/* Quirks of apimachinery's scanner that we keep on purpose. */
static void test_parse_kubernetes_quirks(void **state)
{
	static const struct {
		const char *in;
		tau_quantity_fmt format;
	} zeros[] = {
	        {"+", DEC},     {"-", DEC},  {".", DEC},     {"-.", DEC},   {"m", DEC},
	        {"n", DEC},     {"Ki", BIN}, {"Ti", BIN},    {"E", DEC},    {"e5", EXP},
	        {"0e-20", EXP}, {"-0", DEC}, {"0.000", DEC}, {"-0Ei", BIN}, {"000", DEC},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++) {
		tau_quantity q = parse_ok(zeros[i].in);

		assert_true(tau_quantity_is_zero(&q));
		assert_int_equal(tau_quantity_sign(&q), 0);
		assert_int_equal(tau_quantity_get_format(&q), zeros[i].format);
		assert_string_equal(fmt(&q), "0");
	}
	expect_canonical("1.", "1");
	expect_canonical("1.G", "1G");
	expect_canonical("+1Ki", "1Ki");
	expect_canonical("01Ki", "1Ki");
	expect_canonical("1e-0", "1");
	expect_canonical("1e+3", "1e3");
	expect_canonical("1e0000000000000000000000000000000000000003", "1e3");
}

/* Our limits: no exponent past 10^6, no mantissa past 128 bits. */
static void test_parse_range(void **state)
{
	(void)state;
	expect_parse_error("1e2147483647", TAU_ERANGE, "exponent");
	expect_parse_error("1e-9999999", TAU_ERANGE, "exponent");
	expect_parse_error("1e1000001", TAU_ERANGE, "exponent");
	expect_parse_error("1E-1000001", TAU_ERANGE, "exponent");
	expect_parse_error("1e99999999999999999999999999", TAU_ERANGE, "exponent");
	expect_parse_error("12345678901234567890123456789012345678901234567890", TAU_ERANGE,
	                   "significant digits");
	expect_parse_error("1234567890123456789012345678901234567890.5", TAU_ERANGE,
	                   "significant digits");
	/* 2^128 - 1 fits, 2^128 does not. */
	expect_canonical("340282366920938463463374607431768211455",
	                 "340282366920938463463374607431768211455");
	expect_parse_error("340282366920938463463374607431768211456", TAU_ERANGE,
	                   "significant digits");
	/* Rounding to nano can push a long number over. */
	expect_parse_error("1000000000000000000000000000000.0000000001", TAU_ERANGE,
	                   "significant digits");
	/* A long fraction beyond 128 bits is fine for BinarySI only if it fits. */
	expect_parse_error("0.12345678901234567890123456789012345678901Ki", TAU_ERANGE,
	                   "significant digits");
	/* The limit exponent itself is fine; one more decade is not. */
	expect_canonical("1e1000000", "10e999999");
	expect_canonical("1e-1000000", "1e-9");
	expect_canonical("-1e-1000000", "-1e-9");
	expect_parse_error("10e1000000", TAU_ERANGE, "10e1000000");
	/* Huge BinarySI numbers are capped, not refused. */
	expect_parse_error("1e1000000Ki", TAU_EINVAL, MSG_FORMAT);
	expect_canonical("1000000000000000000000000000000Ki", "9223372036854775807");
}

static void test_parse_len_and_str(void **state)
{
	tau_quantity q;

	(void)state;
	/* Only len bytes are read. */
	assert_int_equal(tau_quantity_parse(&q, "1Gi and more", 3), 0);
	assert_string_equal(fmt(&q), "1Gi");
	assert_int_equal(tau_quantity_parse(&q, "12", 1), 0);
	assert_string_equal(fmt(&q), "1");
	assert_int_equal(tau_quantity_parse(&q, NULL, 0), -TAU_EINVAL);
}

static void test_parse_json_value(void **state)
{
	static const struct {
		const char *in;
		const char *expect;
	} ok[] = {
	        {"\" 1\"", "1"},
	        {"\"1 \"", "1"},
	        {"1", "1"},
	        {" 1", "1"},
	        {"1 ", "1"},
	        {"10", "10"},
	        {"-1", "-1"},
	        {" -1", "-1"},
	        {"null", "0"},
	        {"\"1Gi\"", "1Gi"},
	        {"1.5", "1500m"},
	        {"2e3", "2e3"},
	        {"\"\t\n100m\r\"", "100m"},
	        {"-0.5", "-500m"},
	};
	static const char *const bad[] = {"\"\"", "\"null\"", " null", "\"1", "true", "\"1Q\""};
	tau_quantity q;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int rc = tau_quantity_parse_json_value(&q, ok[i].in, strlen(ok[i].in));

		if (rc != 0)
			fail_msg("json %s: %s", ok[i].in, tau_error_last()->msg);
		assert_string_equal(fmt(&q), ok[i].expect);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tau_quantity_parse_json_value(&q, bad[i], strlen(bad[i])),
		                 -TAU_EINVAL);
		assert_true(tau_error_last()->msg[0] != '\0');
	}
}

/* ---- formatting -------------------------------------------------------------------------------
 */

struct format_vector {
	int64_t mant;
	int32_t exp;
	tau_quantity_fmt format;
	const char *expect;
	const char *alternate; /* another spelling that canonicalises to expect, or NULL */
};

/* TestQuantityString of apimachinery plus the canonical forms of include/tau/quantity.h. */
static const struct format_vector format_vectors[] = {
        {1024 * 1024 * 1024, 0, BIN, "1Gi", "1024Mi"},
        {300 * 1024 * 1024, 0, BIN, "300Mi", "307200Ki"},
        {6 * 1024, 0, BIN, "6Ki", NULL},
        {1001LL * 1024 * 1024 * 1024, 0, BIN, "1001Gi", "1025024Mi"},
        {1024LL * 1024 * 1024 * 1024, 0, BIN, "1Ti", "1024Gi"},
        {5, 0, BIN, "5", "5000m"},
        {500, -3, BIN, "500m", "0.5"},
        {1, 9, DEC, "1G", "1000M"},
        {1000, 6, DEC, "1G", "0.001T"},
        {1000000, 3, DEC, "1G", NULL},
        {1000000000, 0, DEC, "1G", NULL},
        {1, -3, DEC, "1m", "1000u"},
        {80, -3, DEC, "80m", NULL},
        {1080, -3, DEC, "1080m", "1.08"},
        {108, -2, DEC, "1080m", "1080000000n"},
        {10800, -4, DEC, "1080m", NULL},
        {300, 6, DEC, "300M", NULL},
        {1, 12, DEC, "1T", NULL},
        {1, 18, DEC, "1E", NULL},
        {1, 21, DEC, "1e21", "1000E"}, /* kubernetes#140459 */
        {5, 21, DEC, "5e21", "5000E"},
        {1, 24, DEC, "1e24", "1000000E"},
        {1234567, 6, DEC, "1234567M", NULL},
        {1234567, -3, BIN, "1234567m", NULL},
        {3, 3, DEC, "3k", NULL},
        {1025, 0, BIN, "1025", NULL},
        {0, 0, DEC, "0", NULL},
        {0, 0, BIN, "0", NULL},
        {1, 9, EXP, "1e9", ".001e12"},
        {1, -3, EXP, "1e-3", "0.001e0"},
        {1, -9, EXP, "1e-9", "1000e-12"},
        {80, -3, EXP, "80e-3", NULL},
        {8, -2, EXP, "80e-3", "0.08e0"},
        {300, 6, EXP, "300e6", NULL},
        {1, 12, EXP, "1e12", NULL},
        {1, 3, EXP, "1e3", NULL},
        {3, 3, EXP, "3e3", NULL},
        {0, 0, EXP, "0", "00"},
        {1, -9, DEC, "1n", NULL},
        {80, -9, DEC, "80n", NULL},
        {1080, -9, DEC, "1080n", NULL},
        {108, -8, DEC, "1080n", "1.08u"},
        {10800, -10, DEC, "1080n", NULL},
        {1, -6, DEC, "1u", NULL},
        {80, -6, DEC, "80u", NULL},
        {1080, -6, DEC, "1080u", NULL},
        {1234567, 0, DEC, "1234567", NULL},
        /* Below nano, built programmatically (kubernetes#140459). */
        {1, -12, DEC, "1e-12", NULL},
        {15, -11, DEC, "150e-12", NULL},
        /* BinarySI with more than six factors of 1024 keeps "Ei" (our choice). */
        {1024LL * 1024 * 1024 * 1024 * 1024 * 1024, 0, BIN, "1Ei", NULL},
};

static void test_format_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(format_vectors) / sizeof(format_vectors[0]); i++) {
		const struct format_vector *v = &format_vectors[i];
		tau_quantity q = scaled(v->mant, v->exp, v->format);
		tau_quantity back;
		char neg[TAU_QUANTITY_STR_MAX + 1];

		if (strcmp(fmt(&q), v->expect) != 0)
			fail_msg("%" PRId64 "e%" PRId32 " formats as %s, want %s", v->mant, v->exp,
			         fmt(&q), v->expect);
		/* The canonical text parses back to the same value (not below nano). */
		if (v->exp >= -9 || v->mant == 0) {
			back = parse_ok(v->expect);
			assert_int_equal(tau_quantity_cmp(&back, &q), 0);
			assert_string_equal(fmt(&back), v->expect);
		}
		if (v->alternate != NULL)
			expect_canonical(v->alternate, v->expect);
		/* Negated, the text gains a "-" (never "-0"). */
		q = scaled(-v->mant, v->exp, v->format);
		snprintf(neg, sizeof(neg), "%s%s", v->mant == 0 ? "" : "-", v->expect);
		assert_string_equal(fmt(&q), neg);
	}
}

/* TestQuantityParseEmit, derived canonical pairs, and real allocatable strings. */
static void test_parse_emit(void **state)
{
	static const struct {
		const char *in;
		const char *expect;
	} pairs[] = {
	        {"1Ki", "1Ki"},
	        {"1Mi", "1Mi"},
	        {"1Gi", "1Gi"},
	        {"1024Mi", "1Gi"},
	        {"1000M", "1G"},
	        {".001Ki", "1024m"},
	        {".000001Ki", "1024u"},
	        {".000000001Ki", "1024n"},
	        {".000000000001Ki", "2n"},
	        {"1.5Gi", "1536Mi"},
	        {"0.5Mi", "512Ki"},
	        {"1.2e3", "1200"},
	        {"1.3E+6", "1300e3"},
	        {"1.01E", "1010P"},
	        {"100.035k", "100035"},
	        {"9Ei", "9223372036854775807"},
	        {"5n", "5n"},
	        {"3.001n", "4n"},
	        {"0.00000012345", "124n"},
	        {"-3.001n", "-4n"},
	        {"1000E", "1e21"},
	        {"1.5", "1500m"},
	        {"1.1E-9", "2e-9"},
	        {"0.1m", "100u"},
	        {"10000T", "10P"},
	        {"1e3", "1e3"},
	        {"1E3", "1e3"},
	        {"1e0", "1"},
	        {"10e0", "10"},
	        {"1000e0", "1e3"},
	        {"1024", "1024"},
	        {"1024e0", "1024"},
	        {"2048Ki", "2Mi"},
	        {"1536Ki", "1536Ki"},
	        {"1.1Ki", "1126400m"},
	        {"1023.5Ki", "1048064"},
	        {"1000Ki", "1000Ki"},
	        {"0.5Ki", "512"},
	        {"1048576Ei", "9223372036854775807"},
	        {"100e48", "100e48"},
	        {"1e50", "100e48"},
	        {"123456789012345678901234567890123456789e3",
	         "123456789012345678901234567890123456789e3"},
	        {"3402823669209384634633746074317682114550000",
	         "3402823669209384634633746074317682114550k"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		expect_canonical(pairs[i].in, pairs[i].expect);
		/* Negative inputs emit the same text with a sign. */
		if (strcmp(pairs[i].expect, "0") != 0 && pairs[i].in[0] != '-') {
			char neg_in[96], neg_out[96];

			snprintf(neg_in, sizeof(neg_in), "-%s", pairs[i].in);
			snprintf(neg_out, sizeof(neg_out), "-%s", pairs[i].expect);
			expect_canonical(neg_in, neg_out);
		}
	}
}

/* The allocatable and capacity strings of the fixture nodes are canonical. */
static void test_fixture_strings(void **state)
{
	static const char *const fixtures[] = {
	        "96",
	        "94940m",
	        "23660m",
	        "126500m",
	        "1980106432Ki",
	        "119703055367",
	        "129886128Ki",
	        "63",
	        "0",
	        "8",
	        "110",
	        "1977700032Ki",
	        "7",
	        "227205812Ki",
	        "229612212Ki",
	        "24",
	        "128",
	        "3454538474Ki",
	        "2105082040Ki",
	        "3748418500Ki",
	        "2113470648Ki",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		expect_canonical(fixtures[i], fixtures[i]);
}

static void test_format_buffer(void **state)
{
	tau_quantity q = parse_ok("1536Mi");
	char buf[16];

	(void)state;
	memset(buf, 'z', sizeof(buf));
	assert_int_equal(tau_quantity_format(buf, 6, &q), -TAU_ETOOBIG);
	assert_int_equal(buf[0], 'z'); /* untouched */
	assert_non_null(strstr(tau_error_last()->msg, "1536Mi"));
	assert_int_equal(tau_quantity_format(NULL, 0, &q), -TAU_ETOOBIG);
	assert_int_equal(tau_quantity_format(buf, 7, &q), 0);
	assert_string_equal(buf, "1536Mi");

	/* The longest forms fit TAU_QUANTITY_STR_MAX. */
	q = scaled(-9223372036854775807, -1000000, DEC);
	assert_string_equal(fmt(&q), "-922337203685477580700e-1000002");
	q = parse_ok("-340282366920938463463374607431768211455e999998");
	assert_string_equal(fmt(&q), "-34028236692093846346337460743176821145500e999996");
	assert_true(strlen(fmt(&q)) < TAU_QUANTITY_STR_MAX);
}

/* A zero-initialised struct is the DecimalSI zero; so is tau_quantity_zero(). */
static void test_zero(void **state)
{
	tau_quantity a = {0};
	tau_quantity b = tau_quantity_zero();
	tau_quantity c = parse_ok("0");

	(void)state;
	assert_memory_equal(&a, &b, sizeof(a));
	assert_memory_equal(&b, &c, sizeof(b));
	assert_true(tau_quantity_is_zero(&a));
	assert_int_equal(tau_quantity_get_format(&a), DEC);
	assert_string_equal(fmt(&a), "0");
	/* -0 normalises to 0 (never "-0"). */
	c = parse_ok("-0.0");
	assert_memory_equal(&b, &c, sizeof(b));
}

/* ---- arithmetic -------------------------------------------------------------------------------
 */

static const char *sum2(const char *x, const char *y)
{
	tau_quantity a = parse_ok(x), b = parse_ok(y), r;

	assert_int_equal(tau_quantity_add(&r, &a, &b), 0);
	return fmt(&r);
}

static const char *diff2(const char *x, const char *y)
{
	tau_quantity a = parse_ok(x), b = parse_ok(y), r;

	assert_int_equal(tau_quantity_sub(&r, &a, &b), 0);
	return fmt(&r);
}

static void test_add_sub(void **state)
{
	(void)state;
	assert_string_equal(sum2("1", "1Ki"), "1025");
	assert_string_equal(sum2("1Gi", "512Mi"), "1536Mi");
	assert_string_equal(sum2("100m", "2"), "2100m");
	/* A zero receiver adopts y's format; a zero y changes nothing. */
	assert_string_equal(sum2("0", "1Gi"), "1Gi");
	assert_string_equal(sum2("1Gi", "0"), "1Gi");
	assert_string_equal(sum2("100m", "0"), "100m");
	assert_string_equal(sum2("0", "100m"), "100m");
	assert_string_equal(diff2("100m", "0"), "100m");
	assert_string_equal(diff2("0", "100m"), "-100m");
	assert_string_equal(diff2("0", "1Gi"), "-1Gi");
	assert_string_equal(diff2("1Gi", "1Gi"), "0");
	assert_string_equal(diff2("1", "1500m"), "-500m");
	assert_string_equal(sum2("-1", "1500m"), "500m");
	assert_string_equal(sum2("1e3", "1"), "1001");
	assert_string_equal(sum2("1e3", "1k"), "2e3");
	assert_string_equal(sum2("1k", "1e3"), "2k");
	assert_string_equal(sum2("1n", "999999999n"), "1");
	assert_string_equal(sum2("500E", "500E"), "1e21");
	assert_string_equal(diff2("1n", "1n"), "0");
	assert_string_equal(diff2("-1n", "-2n"), "1n");

	/* out may alias either operand. */
	{
		tau_quantity a = parse_ok("1Gi"), b = parse_ok("512Mi");

		assert_int_equal(tau_quantity_add(&a, &a, &b), 0);
		assert_string_equal(fmt(&a), "1536Mi");
		assert_int_equal(tau_quantity_sub(&b, &a, &b), 0);
		assert_string_equal(fmt(&b), "1Gi");
	}
}

static void test_add_overflow(void **state)
{
	tau_quantity max = parse_ok("340282366920938463463374607431768211455");
	tau_quantity one = parse_ok("1"), nano = parse_ok("1n"), big = parse_ok("1e30");
	tau_quantity r, before;

	(void)state;
	memset(&r, 0x5a, sizeof(r));
	before = r;
	assert_int_equal(tau_quantity_add(&r, &max, &one), -TAU_ERANGE);
	assert_memory_equal(&r, &before, sizeof(r));
	assert_non_null(strstr(tau_error_last()->msg, "340282366920938463463374607431768211455"));
	assert_int_equal(tau_quantity_add(&r, &big, &nano), -TAU_ERANGE);
	assert_int_equal(tau_quantity_sub(&r, &big, &nano), -TAU_ERANGE);
	assert_int_equal(tau_quantity_sub(&r, &nano, &big), -TAU_ERANGE);
	assert_memory_equal(&r, &before, sizeof(r));
	/* max - 1 and -max + max are fine. */
	assert_int_equal(tau_quantity_sub(&r, &max, &one), 0);
	assert_string_equal(fmt(&r), "340282366920938463463374607431768211454");

	/* The aligned operand exceeds 128 bits but the difference does not. */
	{
		tau_quantity x = parse_ok("34028236692093846346337460743176821146e1");

		assert_int_equal(tau_quantity_sub(&r, &x, &max), 0);
		assert_string_equal(fmt(&r), "5");
		assert_int_equal(tau_quantity_sub(&r, &max, &x), 0);
		assert_string_equal(fmt(&r), "-5");
		assert_int_equal(tau_quantity_cmp(&x, &max), 1);
		assert_int_equal(tau_quantity_cmp(&max, &x), -1);
		assert_int_equal(tau_quantity_add(&r, &x, &max), -TAU_ERANGE);
	}
	/* A sum past 2^128 that ends in zero fits once normalised (found by the fuzzer). */
	assert_string_equal(sum2("170141183460469231731687303715884105735",
	                         "170141183460469231731687303715884105735"),
	                    "340282366920938463463374607431768211470");
	{
		tau_quantity a = parse_ok("-34028236692093846346337460743176821146e1");
		tau_quantity b = parse_ok("34028236692093"), ab;

		assert_int_equal(tau_quantity_add(&ab, &a, &b), 0);
		assert_int_equal(tau_quantity_sub(&r, &ab, &b), 0);
		assert_int_equal(tau_quantity_cmp(&r, &a), 0);
	}
	/* The exponent limit holds for results too. */
	{
		tau_quantity h = parse_ok("5e1000000");

		assert_int_equal(tau_quantity_add(&r, &h, &h), -TAU_ERANGE);
		assert_int_equal(tau_quantity_sub(&r, &h, &h), 0);
		assert_true(tau_quantity_is_zero(&r));
	}
}

static void test_sum(void **state)
{
	tau_quantity items[4], r;

	(void)state;
	assert_int_equal(tau_quantity_sum(&r, NULL, 0), 0);
	assert_true(tau_quantity_is_zero(&r));

	items[0] = parse_ok("1Gi");
	items[1] = parse_ok("512Mi");
	items[2] = parse_ok("100m");
	items[3] = parse_ok("-100m");
	assert_int_equal(tau_quantity_sum(&r, items, 4), 0);
	assert_string_equal(fmt(&r), "1536Mi");

	/* The three fixture nodes' memory allocatable. */
	items[0] = parse_ok("2105082040Ki");
	items[1] = parse_ok("227205812Ki");
	items[2] = parse_ok("1977700032Ki");
	assert_int_equal(tau_quantity_sum(&r, items, 3), 0);
	assert_string_equal(fmt(&r), "4309987884Ki");
	/* ... and CPU. */
	items[0] = parse_ok("126500m");
	items[1] = parse_ok("23660m");
	items[2] = parse_ok("94940m");
	assert_int_equal(tau_quantity_sum(&r, items, 3), 0);
	assert_string_equal(fmt(&r), "245100m");

	/* Overflow names the item and leaves out alone. */
	items[0] = parse_ok("340282366920938463463374607431768211455");
	items[1] = parse_ok("1");
	r = parse_ok("7");
	assert_int_equal(tau_quantity_sum(&r, items, 2), -TAU_ERANGE);
	assert_string_equal(fmt(&r), "7");
	assert_non_null(strstr(tau_error_last()->msg, "item 1 of 2"));
}

static void test_cmp(void **state)
{
	static const struct {
		const char *x, *y;
		int expect;
	} table[] = {
	        {"0", "0", 0},
	        {"100m", "50m", 1},
	        {"50m", "100m", -1},
	        {"10000T", "100Gi", 1},
	        {"1Ki", "1024", 0},
	        {"1G", "1e9", 0},
	        {"-1", "1", -1},
	        {"-1", "-2", 1},
	        {"0", "-1n", 1},
	        {"0", "1n", -1},
	        {"9.01", "9.0", 1},
	        {"800m", "1", -1},
	        {"800m", "790m", 1},
	        {"1e1000000", "9Ei", 1},
	        {"-1e1000000", "-9Ei", -1},
	        {"99999999999999999999999999999999999999", "1e38", -1},
	        {"1000000000000000000000000000000000000000", "1e39", 0},
	        {"0Ki", "-0", 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		tau_quantity x = parse_ok(table[i].x), y = parse_ok(table[i].y);

		if (tau_quantity_cmp(&x, &y) != table[i].expect)
			fail_msg("cmp(%s, %s) = %d, want %d", table[i].x, table[i].y,
			         tau_quantity_cmp(&x, &y), table[i].expect);
		assert_int_equal(tau_quantity_cmp(&y, &x), -table[i].expect);
	}
}

static void test_value(void **state)
{
	static const struct {
		const char *in;
		int64_t value, milli;
	} table[] = {
	        {"0", 0, 0},
	        {"1", 1, 1000},
	        {"1.5", 2, 1500},
	        {"-1.5", -2, -1500},
	        {"100m", 1, 100},
	        {"-100m", -1, -100},
	        {"1n", 1, 1},
	        {"-1n", -1, -1},
	        {"1001u", 1, 2},
	        {"1Ki", 1024, 1024000},
	        {"1.5Gi", 1610612736, 1610612736000},
	        {"94940m", 95, 94940},
	        {"1977700032Ki", 2025164832768, 2025164832768000},
	        {"9223372036854775807m", 9223372036854776, 9223372036854775807},
	        {"-9223372036854775808m", -9223372036854776, INT64_MIN},
	        {"1e-1000000", 1, 1},
	};
	int64_t v, before = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		tau_quantity q = parse_ok(table[i].in);

		assert_int_equal(tau_quantity_value(&v, &q), 0);
		if (v != table[i].value)
			fail_msg("value(%s) = %" PRId64, table[i].in, v);
		assert_int_equal(tau_quantity_milli_value(&v, &q), 0);
		if (v != table[i].milli)
			fail_msg("milli_value(%s) = %" PRId64, table[i].in, v);
	}
	{
		tau_quantity q = parse_ok("9Ei");

		assert_int_equal(tau_quantity_value(&v, &q), 0);
		assert_true(v == INT64_MAX);
		v = before;
		assert_int_equal(tau_quantity_milli_value(&v, &q), -TAU_ERANGE);
		assert_true(v == before);
		assert_non_null(strstr(tau_error_last()->msg, "9223372036854775807"));
	}
	{
		tau_quantity q = parse_ok("-9223372036854775808");

		assert_int_equal(tau_quantity_value(&v, &q), 0);
		assert_true(v == INT64_MIN);
		q = parse_ok("9223372036854775808");
		v = before;
		assert_int_equal(tau_quantity_value(&v, &q), -TAU_ERANGE);
		assert_true(v == before);
		q = parse_ok("-9223372036854775809");
		assert_int_equal(tau_quantity_value(&v, &q), -TAU_ERANGE);
		q = parse_ok("9223372036854775807.1");
		assert_int_equal(tau_quantity_value(&v, &q), -TAU_ERANGE);
		q = parse_ok("1e1000000");
		assert_int_equal(tau_quantity_value(&v, &q), -TAU_ERANGE);
		q = parse_ok("1P");
		assert_int_equal(tau_quantity_milli_value(&v, &q), 0);
		assert_true(v == 1000000000000000000LL);
		q = parse_ok("10P");
		assert_int_equal(tau_quantity_milli_value(&v, &q), -TAU_ERANGE);
		q = parse_ok("10E");
		assert_int_equal(tau_quantity_value(&v, &q), -TAU_ERANGE);
	}
	{
		tau_quantity q = parse_ok("9.01");

		/* ScaledValue rounds up away from zero at any scale. */
		assert_int_equal(tau_quantity_scaled_value(&v, &q, 1), 0);
		assert_true(v == 1);
		assert_int_equal(tau_quantity_scaled_value(&v, &q, -1), 0);
		assert_true(v == 91);
		assert_int_equal(tau_quantity_scaled_value(&v, &q, -9), 0);
		assert_true(v == 9010000000);
		q = parse_ok("-9.01");
		assert_int_equal(tau_quantity_scaled_value(&v, &q, -1), 0);
		assert_true(v == -91);
	}
}

static void test_from_scaled(void **state)
{
	tau_quantity q;

	(void)state;
	assert_int_equal(tau_quantity_from_scaled(&q, 1234000, -3, DEC), 0);
	assert_string_equal(fmt(&q), "1234");
	assert_int_equal(tau_quantity_from_scaled(&q, 1024, -3, BIN), 0);
	assert_string_equal(fmt(&q), "1024m");
	assert_int_equal(tau_quantity_from_scaled(&q, 1024, 0, BIN), 0);
	assert_string_equal(fmt(&q), "1Ki");
	assert_int_equal(tau_quantity_from_scaled(&q, 1000000, 0, EXP), 0);
	assert_string_equal(fmt(&q), "1e6");
	assert_int_equal(tau_quantity_from_scaled(&q, INT64_MIN, 0, DEC), 0);
	assert_string_equal(fmt(&q), "-9223372036854775808");
	assert_int_equal(tau_quantity_from_scaled(&q, 1, 1000001, DEC), -TAU_ERANGE);
	assert_int_equal(tau_quantity_from_scaled(&q, 10, 999999, DEC), 0);
	assert_int_equal(tau_quantity_from_scaled(&q, 1, -1000001, DEC), -TAU_ERANGE);
	assert_int_equal(tau_quantity_from_scaled(&q, 1, 0, (tau_quantity_fmt)7), -TAU_EINVAL);
	/* set_format changes the notation only. */
	q = parse_ok("1536Mi");
	tau_quantity_set_format(&q, DEC);
	assert_string_equal(fmt(&q), "1610612736");
	tau_quantity_set_format(&q, EXP);
	assert_string_equal(fmt(&q), "1610612736");
	tau_quantity_set_format(&q, BIN);
	assert_string_equal(fmt(&q), "1536Mi");
	q = parse_ok("2k");
	tau_quantity_set_format(&q, BIN);
	assert_string_equal(fmt(&q), "2000");
	tau_quantity_set_format(&q, EXP);
	assert_string_equal(fmt(&q), "2e3");
	/* An unknown format stored in the struct prints as DecimalExponent. */
	q = parse_ok("1000000");
	q.format = 9;
	assert_string_equal(fmt(&q), "1e6");
}

/* ---- property tests ---------------------------------------------------------------------------
 */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static unsigned rng_below(unsigned n)
{
	return (unsigned)(rng() % n);
}

/* A random quantity in the grammar: at most max_int integer digits, e<exp> or a suffix. */
static void random_text(char *buf, size_t cap, unsigned max_int, int min_exp, int max_exp,
                        unsigned n_suffixes)
{
	/* Small suffixes first, so that n_suffixes bounds the magnitude. */
	static const char *const suffixes[] = {"",   "n",  "u", "m", "k", "M",  "G",  "Ki",
	                                       "Mi", "Gi", "T", "P", "E", "Ti", "Pi", "Ei"};
	size_t n = 0;
	unsigned n_int = rng_below(max_int + 1), n_frac = rng_below(13);

	switch (rng_below(4)) {
	case 0:
		buf[n++] = '-';
		break;
	case 1:
		buf[n++] = '+';
		break;
	default:
		break;
	}
	for (unsigned i = 0; i < n_int; i++)
		buf[n++] = (char)('0' + rng_below(10));
	if (n_frac > 0 || n_int == 0) {
		buf[n++] = '.';
		for (unsigned i = 0; i < n_frac + 1; i++)
			buf[n++] = (char)('0' + rng_below(10));
	}
	if (rng_below(4) == 0)
		snprintf(buf + n, cap - n, "e%d",
		         min_exp + (int)rng_below((unsigned)(max_exp - min_exp + 1)));
	else
		snprintf(buf + n, cap - n, "%s", suffixes[rng_below(n_suffixes)]);
}

/* format -> parse keeps the value; canonical text re-formats to itself. */
static void test_property_round_trip(void **state)
{
	char text[96];
	unsigned parsed = 0;

	(void)state;
	rng_state = 0x2545f4914f6cdd1du;
	for (int i = 0; i < 5000; i++) {
		tau_quantity q, back, again;
		char canon[TAU_QUANTITY_STR_MAX];

		random_text(text, sizeof(text), 24, -40, 40, 16);
		if (tau_quantity_parse_str(&q, text) != 0) {
			/* Only the 128-bit limit may refuse grammatical input. */
			if (tau_error_last()->code != TAU_ERANGE)
				fail_msg("%s: %s", text, tau_error_last()->msg);
			continue;
		}
		parsed++;
		snprintf(canon, sizeof(canon), "%s", fmt(&q));
		if (tau_quantity_parse_str(&back, canon) != 0)
			fail_msg("%s -> %s does not parse: %s", text, canon, tau_error_last()->msg);
		if (tau_quantity_cmp(&q, &back) != 0)
			fail_msg("%s -> %s -> %s", text, canon, fmt(&back));
		if (strcmp(fmt(&back), canon) != 0)
			fail_msg("%s -> %s re-formats as %s", text, canon, fmt(&back));
		again = parse_ok(fmt(&back));
		assert_memory_equal(&again, &back, sizeof(again));
	}
	assert_true(parsed > 4500);
}

/* Random int64 values with random scales and formats round-trip through text. */
static void test_property_scaled_round_trip(void **state)
{
	(void)state;
	rng_state = 0x1234567887654321u;
	for (int i = 0; i < 5000; i++) {
		int64_t v = (int64_t)(rng() >> (1 + rng_below(63)));
		tau_quantity_fmt format = (tau_quantity_fmt)rng_below(3);
		/* BinarySI above 2^63-1 would be capped when parsed back, as in Kubernetes. */
		int32_t s = format == BIN ? -(int32_t)rng_below(10) : (int32_t)rng_below(40) - 9;
		tau_quantity q = scaled(rng_below(2) ? -v : v, s, format);
		tau_quantity back = parse_ok(fmt(&q));
		int64_t got;

		assert_int_equal(tau_quantity_cmp(&q, &back), 0);
		if (s == 0) {
			assert_int_equal(tau_quantity_value(&got, &q), 0);
			assert_true(got == (q.negative ? -v : v));
		}
	}
}

/* Summing a shuffled array gives the same value; (a + b) - b == a; cmp agrees with sub. */
static void test_property_sum(void **state)
{
	enum { N = 3000 };
	static tau_quantity items[N], shuffled[N];
	tau_quantity total, again, reverse, acc, d;
	char text[96];

	(void)state;
	rng_state = 0xdeadbeefcafef00du;
	for (int i = 0; i < N; i++) {
		random_text(text, sizeof(text), 12, -9, 9, 10);
		items[i] = parse_ok(text);
	}
	assert_int_equal(tau_quantity_sum(&total, items, N), 0);
	memcpy(shuffled, items, sizeof(items));
	for (int round = 0; round < 5; round++) {
		for (int i = N - 1; i > 0; i--) {
			unsigned j = rng_below((unsigned)i + 1);
			tau_quantity t = shuffled[i];

			shuffled[i] = shuffled[j];
			shuffled[j] = t;
		}
		assert_int_equal(tau_quantity_sum(&again, shuffled, N), 0);
		if (tau_quantity_cmp(&total, &again) != 0)
			fail_msg("sum %s vs shuffled %s", fmt(&total), fmt(&again));
	}
	/* Right to left by hand. */
	reverse = tau_quantity_zero();
	for (int i = N - 1; i >= 0; i--)
		assert_int_equal(tau_quantity_add(&reverse, &reverse, &items[i]), 0);
	assert_int_equal(tau_quantity_cmp(&total, &reverse), 0);
	/* Subtracting everything again gives zero. */
	acc = total;
	for (int i = 0; i < N; i++)
		assert_int_equal(tau_quantity_sub(&acc, &acc, &shuffled[i]), 0);
	assert_true(tau_quantity_is_zero(&acc));

	for (int i = 0; i + 1 < N; i++) {
		const tau_quantity *a = &items[i], *b = &items[i + 1];

		assert_int_equal(tau_quantity_add(&acc, a, b), 0);
		assert_int_equal(tau_quantity_sub(&acc, &acc, b), 0);
		assert_int_equal(tau_quantity_cmp(&acc, a), 0);
		assert_int_equal(tau_quantity_sub(&d, a, b), 0);
		assert_int_equal(tau_quantity_sign(&d), tau_quantity_cmp(a, b));
		assert_int_equal(tau_quantity_cmp(a, b), -tau_quantity_cmp(b, a));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_parse_vectors),
	        cmocka_unit_test(test_parse_invalid),
	        cmocka_unit_test(test_parse_binary_garbage),
	        cmocka_unit_test(test_parse_kubernetes_quirks),
	        cmocka_unit_test(test_parse_range),
	        cmocka_unit_test(test_parse_len_and_str),
	        cmocka_unit_test(test_parse_json_value),
	        cmocka_unit_test(test_format_vectors),
	        cmocka_unit_test(test_parse_emit),
	        cmocka_unit_test(test_fixture_strings),
	        cmocka_unit_test(test_format_buffer),
	        cmocka_unit_test(test_zero),
	        cmocka_unit_test(test_add_sub),
	        cmocka_unit_test(test_add_overflow),
	        cmocka_unit_test(test_sum),
	        cmocka_unit_test(test_cmp),
	        cmocka_unit_test(test_value),
	        cmocka_unit_test(test_from_scaled),
	        cmocka_unit_test(test_property_round_trip),
	        cmocka_unit_test(test_property_scaled_round_trip),
	        cmocka_unit_test(test_property_sum),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
