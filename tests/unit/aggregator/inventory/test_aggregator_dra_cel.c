/* Unit tests of the DeviceClass selector subset (inventory/dra_cel.h): what is read, what is
 * refused (fail closed, expression quoted), and CEL's run-time errors. */
#include "inventory/dra_cel.h"
#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* An H100 as NVIDIA's DRA driver publishes it (names already qualified, sorted). */
static tau_dra_value attrs[] = {
        {.name = (char *)"gpu.nvidia.com/index", .kind = TAU_DRA_VALUE_INT, .integer = 3},
        {.name = (char *)"gpu.nvidia.com/productName",
         .kind = TAU_DRA_VALUE_STRING,
         .text = (char *)"NVIDIA H100 80GB HBM3"},
        {.name = (char *)"gpu.nvidia.com/shared", .kind = TAU_DRA_VALUE_BOOL, .boolean = false},
        {.name = (char *)"gpu.nvidia.com/type",
         .kind = TAU_DRA_VALUE_STRING,
         .text = (char *)"gpu"},
        {.name = (char *)"gpu.nvidia.com/driverVersion",
         .kind = TAU_DRA_VALUE_VERSION,
         .text = (char *)"570.172.8"},
};
static tau_dra_value caps[1];

static tau_dra_device_view h100(void)
{
	tau_dra_device_view d = {.driver = "gpu.nvidia.com",
	                         .attributes = attrs,
	                         .n_attributes = 4, /* driverVersion is looked at separately */
	                         .capacity = caps,
	                         .n_capacity = 1};

	caps[0].name = (char *)"gpu.nvidia.com/memory";
	caps[0].kind = TAU_DRA_VALUE_QUANTITY;
	assert_int_equal(tau_quantity_parse_str(&caps[0].quantity, "81559Mi"), 0);
	return d;
}

/* 1 true, 0 false, -1 evaluation error; fails the test if it does not compile. */
static int eval(const char *expr)
{
	tau_dra_cel *c = NULL;
	tau_dra_device_view d = h100();
	bool v = false;
	int rc;

	if (tau_dra_cel_compile(&c, expr) != 0)
		fail_msg("%s: %s", expr, tau_error_last()->msg);
	rc = tau_dra_cel_eval(&v, c, &d);
	tau_dra_cel_free(c);
	return rc < 0 ? -1 : v ? 1 : 0;
}

static void test_reads_what_gpu_classes_use(void **state)
{
	(void)state;
	/* NVIDIA's gpu.nvidia.com class, as its chart ships it */
	assert_int_equal(eval("device.driver == 'gpu.nvidia.com' && "
	                      "device.attributes['gpu.nvidia.com'].type == 'gpu'"),
	                 1);
	assert_int_equal(eval("device.driver == \"gpu.nvidia.com\" && "
	                      "device.attributes[\"gpu.nvidia.com\"].type == \"mig\""),
	                 0);
	assert_int_equal(eval("device.attributes[\"gpu.nvidia.com\"].productName == "
	                      "\"NVIDIA H100 80GB HBM3\""),
	                 1);
	assert_int_equal(eval("device.driver != 'dra.example.com'"), 1);
	assert_int_equal(
	        eval("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"),
	        1);
	assert_int_equal(
	        eval("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('100Gi')) >= 0"),
	        0);
	assert_int_equal(eval("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('"
	                      "81559Mi')) == 0"),
	                 1);
	assert_int_equal(
	        eval("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('1Ti')) < 0"), 1);
	assert_int_equal(
	        eval("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80Gi'))"),
	        0);
	assert_int_equal(
	        eval("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('80Gi'))"), 1);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].index < 4"), 1);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].index >= -1"), 1);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].index != 3"), 0);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].shared"), 0);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].shared == false"), 1);
	assert_int_equal(eval("(device.driver == 'gpu.nvidia.com' && "
	                      "(device.attributes['gpu.nvidia.com'].index == 3))\n"
	                      "  && device.attributes['gpu.nvidia.com'].type == 'gpu'"),
	                 1);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].productName == 'it\\'s'"), 0);
}

static void test_runtime_errors_follow_cel(void **state)
{
	(void)state;
	/* an unknown attribute, or an unknown domain (an empty map), is "no such key" */
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].model == 'x'"), -1);
	assert_string_equal(tau_error_last()->msg, "no such key: attribute gpu.nvidia.com/model");
	assert_int_equal(eval("device.attributes['other.example.com'].type == 'gpu'"), -1);
	assert_int_equal(eval("device.capacity['gpu.nvidia.com'].cores.isLessThan(quantity('1'))"),
	                 -1);
	/* a type mismatch is "no such overload" */
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].type == 1"), -1);
	assert_non_null(strstr(tau_error_last()->msg, "no such overload"));
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].type"), -1);
	/* CEL's &&: false absorbs an error, true does not */
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].model == 'x' && "
	                      "device.driver == 'other'"),
	                 0);
	assert_int_equal(eval("device.attributes['gpu.nvidia.com'].model == 'x' && "
	                      "device.driver == 'gpu.nvidia.com'"),
	                 -1);
}

static void test_version_attributes_are_not_strings(void **state)
{
	tau_dra_cel *c = NULL;
	tau_dra_device_view d = h100();
	bool v = true;

	(void)state;
	d.n_attributes = 5;
	/* sorted lookup needs the array sorted: driverVersion sorts first */
	{
		tau_dra_value sorted[5] = {attrs[4], attrs[0], attrs[1], attrs[2], attrs[3]};

		d.attributes = sorted;
		assert_int_equal(tau_dra_cel_compile(
		                         &c, "device.attributes['gpu.nvidia.com'].driverVersion == "
		                             "'570.172.8'"),
		                 0);
		assert_int_equal(tau_dra_cel_eval(&v, c, &d), -TAU_EINVAL);
		assert_non_null(strstr(tau_error_last()->msg, "is a version"));
		tau_dra_cel_free(c);
	}
}

/* Refused at compile time: -TAU_EINVAL, the expression quoted, the reason named. */
static void refused(const char *expr, const char *why)
{
	tau_dra_cel *c = NULL;
	int rc = tau_dra_cel_compile(&c, expr);

	if (rc != -TAU_EINVAL)
		fail_msg("%s: compiled (%d), expected a refusal", expr, rc);
	assert_null(c);
	if (strstr(tau_error_last()->msg, "is outside the CEL subset") == NULL ||
	    strstr(tau_error_last()->msg, why) == NULL)
		fail_msg("%s: message %s lacks %s", expr, tau_error_last()->msg, why);
}

static void test_refuses_everything_else(void **state)
{
	(void)state;
	refused("device.driver == 'a' || device.driver == 'b'", "disjunction");
	refused("!(device.driver == 'a')", "negation");
	refused("'gpu' in device.attributes['gpu.nvidia.com']", "expected device.driver");
	refused("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA')",
	        "methods of attributes");
	refused("device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('1.0.0')) >= 0",
	        "methods of attributes");
	refused("device.attributes['gpu.nvidia.com']['type'] == 'gpu'", "map indexing");
	refused("device.capacity['gpu.nvidia.com'].memory >= quantity('40Gi')",
	        "compareTo, isGreaterThan or isLessThan");
	refused("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0.5",
	        "only int literals");
	refused("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('forty')) >= 0",
	        "quantities must match");
	refused("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity(40)) >= 0",
	        "one string literal");
	refused("device.driver < 'b'", "only with == or !=");
	refused("device.attributes['gpu.nvidia.com'].type < 'b'", "only == and !=");
	refused("device.attributes['gpu.nvidia.com'].index == 0x1", "only decimal integers");
	refused("device.attributes['gpu.nvidia.com'].index == 1u", "only int literals");
	refused("device.attributes['gpu.nvidia.com'].index == 99999999999999999999",
	        "out of int64 range");
	refused("device.driver == 'a' == true", "a comparison of a comparison");
	refused("device.driver == '''a'''", "triple-quoted");
	refused("device.driver == 'a", "unterminated string");
	refused("device.driver == 'a\\nb'", "escapes");
	refused("device.driver == r'a'", "string literal");
	refused("true", "expected device.driver");
	refused("", "empty expression");
	refused("   ", "empty expression");
	refused("device.driver = 'a'", "assignment");
	refused("device.driver == 'a' // comment", "unexpected character '/'");
	refused("device.attributes[''].type == 'gpu'", "non-empty");
	refused("device.attributes['gpu.nvidia.com'].type == 'gpu' &&", "expected device.driver");
	refused("((((((((((device.driver == 'a'))))))))))", "nested too deep");
	refused("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('1')) == true",
	        "read alone");
}

static void test_bounds(void **state)
{
	tau_dra_cel *c = NULL;
	char *big = malloc(TAU_DRA_CEL_EXPRESSION_MAX + 2);
	char terms[65 * 32] = "";

	(void)state;
	assert_non_null(big);
	memset(big, ' ', TAU_DRA_CEL_EXPRESSION_MAX + 1);
	big[TAU_DRA_CEL_EXPRESSION_MAX + 1] = '\0';
	assert_int_equal(tau_dra_cel_compile(&c, big), -TAU_ETOOBIG);
	free(big);
	for (int i = 0; i < 65; i++)
		strcat(terms, i == 0 ? "device.driver == 'a'" : " && device.driver == 'a'");
	assert_int_equal(tau_dra_cel_compile(&c, terms), -TAU_ETOOBIG);
	assert_null(c);
	/* 64 is accepted */
	terms[strlen(terms) - strlen(" && device.driver == 'a'")] = '\0';
	assert_int_equal(tau_dra_cel_compile(&c, terms), 0);
	tau_dra_cel_free(c);
}

static void test_long_expression_is_quoted_short(void **state)
{
	tau_dra_cel *c = NULL;
	char expr[600];

	(void)state;
	snprintf(expr, sizeof(expr), "device.driver == '%0500d' || x", 0);
	assert_int_equal(tau_dra_cel_compile(&c, expr), -TAU_EINVAL);
	assert_true(strlen(tau_error_last()->msg) < 400);
	assert_non_null(strstr(tau_error_last()->msg, "...\""));
	assert_non_null(
	        strstr(tau_error_last()->msg, "disjunction (||) is not read at offset 520"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_reads_what_gpu_classes_use),
	        cmocka_unit_test(test_runtime_errors_follow_cel),
	        cmocka_unit_test(test_version_attributes_are_not_strings),
	        cmocka_unit_test(test_refuses_everything_else),
	        cmocka_unit_test(test_bounds),
	        cmocka_unit_test(test_long_expression_is_quoted_short),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
