/*
 * test_budget_names.c - published budget object names, cleaned up with a
 * stable SHA-256 suffix only when the plain name is not a valid subdomain.
 */
#include "budget/names.h"

#include "tau/error.h"
#include "tau/names.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

typedef struct name_case {
	int (*fn)(char *, size_t, const char *);
	const char *input;
	const char *want;
} name_case;

static const name_case cases[] = {
        {tau_budget_flavor_name, "a100", "taugrid-gpu-a100"},
        {tau_budget_flavor_name, "a100.80gb", "taugrid-gpu-a100.80gb"},
        {tau_budget_flavor_name, "nd-h100-v5", "taugrid-gpu-nd-h100-v5"},
        /* uppercase, '_' and '.': cleaned up, suffix = sha256(input)[:8] */
        {tau_budget_flavor_name, "A100", "taugrid-gpu-a100-9e909fd5"},
        {tau_budget_flavor_name, "a100_", "taugrid-gpu-a100--7c9f6117"},
        {tau_budget_flavor_name, "h100_sxm", "taugrid-gpu-h100-sxm-2d9a4eeb"},
        {tau_budget_flavor_name, "H100.80GB", "taugrid-gpu-h100.80gb-c78eeeb1"},
        {tau_budget_flavor_name, "GPU..A", "taugrid-gpu-gpu--a-7fa0099d"},
        {tau_budget_flavor_name, "-a-", "taugrid-gpu--a--a75a468f"},
        {tau_budget_cohort_name, "research", "tau-team-research"},
        {tau_budget_cluster_queue_name, "alpha", "tau-ws-alpha"},
        {tau_budget_cluster_queue_name, "Alpha", "tau-ws-alpha-b1a96dd6"},
};

static void test_names_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char out[TAU_BUDGET_NAME_BUF];

		assert_int_equal(cases[i].fn(out, sizeof(out), cases[i].input), 0);
		if (strcmp(out, cases[i].want) != 0)
			fail_msg("case %zu (%s): got %s, want %s", i, cases[i].input, out,
			         cases[i].want);
		assert_int_equal(tau_names_check_dns1123_subdomain(out), 0);
	}
}

/* A 63-byte class (the label value maximum) keeps its plain name. */
static void test_longest_class_is_plain(void **state)
{
	char cls[64], want[80], out[TAU_BUDGET_NAME_BUF];

	(void)state;
	memset(cls, 'g', 63);
	cls[63] = '\0';
	snprintf(want, sizeof(want), "taugrid-gpu-%s", cls);
	assert_int_equal(tau_budget_flavor_name(out, sizeof(out), cls), 0);
	assert_string_equal(out, want);
}

/* Too long for a subdomain: shortened to 253 bytes, hash of the whole input. */
static void test_too_long_is_shortened(void **state)
{
	char in[301], want[300], out[TAU_BUDGET_NAME_BUF];

	(void)state;
	memset(in, 'x', 300);
	in[300] = '\0';
	snprintf(want, sizeof(want), "taugrid-gpu-%.*s-0d4e2ca9", 232, in);
	assert_int_equal(tau_budget_flavor_name(out, sizeof(out), in), 0);
	assert_string_equal(out, want);
	assert_int_equal(strlen(out), 253);
	/* One more byte of input: same cleaned prefix, different name. */
	in[299] = 'y';
	assert_int_equal(tau_budget_flavor_name(out, sizeof(out), in), 0);
	assert_int_equal(strlen(out), 253);
	assert_string_not_equal(out, want);
}

/* Inputs that clean up alike still get different names; repeated calls agree. */
static void test_distinct_and_stable(void **state)
{
	static const char *const inputs[] = {"a100",  "A100",  "a100_", "a100-",
	                                     "A100_", "a_100", "a-100"};
	char names[ARRAY_LEN(inputs)][TAU_BUDGET_NAME_BUF], again[TAU_BUDGET_NAME_BUF];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(inputs); i++) {
		assert_int_equal(tau_budget_flavor_name(names[i], sizeof(names[i]), inputs[i]), 0);
		assert_int_equal(tau_budget_flavor_name(again, sizeof(again), inputs[i]), 0);
		assert_string_equal(names[i], again);
		for (size_t j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				fail_msg("%s and %s share %s", inputs[i], inputs[j], names[i]);
	}
}

static void test_errors(void **state)
{
	char out[TAU_BUDGET_NAME_BUF], small[8];

	(void)state;
	memcpy(small, "unused", 7);
	assert_int_equal(tau_budget_flavor_name(out, sizeof(out), ""), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "empty input"));
	assert_int_equal(tau_budget_flavor_name(out, sizeof(out), NULL), -TAU_EINVAL);
	assert_int_equal(tau_budget_name(out, sizeof(out), "", "x"), -TAU_EINVAL);
	assert_int_equal(tau_budget_cohort_name(small, sizeof(small), "research"), -TAU_ERANGE);
	assert_non_null(strstr(tau_error_last()->msg, "does not fit 8 bytes"));
	assert_string_equal(small, "unused");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_names_table),
	        cmocka_unit_test(test_longest_class_is_plain),
	        cmocka_unit_test(test_too_long_is_shortened),
	        cmocka_unit_test(test_distinct_and_stable),
	        cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
