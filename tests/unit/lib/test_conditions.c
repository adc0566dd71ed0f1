/* Unit tests of tau/conditions.h: level-triggered condition lists. */
#include "tau/conditions.h"
#include "tau/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static cJSON *parse(const char *s)
{
	cJSON *j = cJSON_Parse(s);

	assert_non_null(j);
	return j;
}

static const char *field(const cJSON *c, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, name);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static void test_new_condition_takes_now(void **state)
{
	cJSON *conds = cJSON_CreateArray();
	const cJSON *c;

	(void)state;
	assert_int_equal(tau_conditions_set(conds, NULL, "QuotaReady", "True", "BudgetApplied",
	                                    "the Cohort holds the pool", 3, "2026-12-02T10:00:00Z"),
	                 0);
	c = tau_conditions_find(conds, "QuotaReady");
	assert_non_null(c);
	assert_string_equal(field(c, "status"), "True");
	assert_string_equal(field(c, "reason"), "BudgetApplied");
	assert_string_equal(field(c, "message"), "the Cohort holds the pool");
	assert_string_equal(field(c, "lastTransitionTime"), "2026-12-02T10:00:00Z");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(c, "observedGeneration")->valueint, 3);
	cJSON_Delete(conds);
}

/* A Node condition (v1.NodeCondition) has no observedGeneration: a negative one writes none. */
static void test_negative_generation_writes_none(void **state)
{
	cJSON *conds = cJSON_CreateArray();
	const cJSON *c;

	(void)state;
	assert_int_equal(tau_conditions_set(conds, NULL, "TauGPUHealthy", "True", "GPUsHealthy",
	                                    "8 of 8 GPUs healthy", -1, "2026-12-02T10:00:00Z"),
	                 0);
	c = tau_conditions_find(conds, "TauGPUHealthy");
	assert_non_null(c);
	assert_null(cJSON_GetObjectItemCaseSensitive(c, "observedGeneration"));
	assert_string_equal(field(c, "lastTransitionTime"), "2026-12-02T10:00:00Z");
	cJSON_Delete(conds);
}

static void test_transition_time_kept_while_status_same(void **state)
{
	cJSON *prev = parse("[{\"type\":\"QuotaReady\",\"status\":\"False\",\"reason\":\"A\","
	                    "\"message\":\"m\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]");
	cJSON *same = cJSON_CreateArray(), *flipped = cJSON_CreateArray();

	(void)state;
	/* Reason and message change, status stays False: the time stays. */
	assert_int_equal(tau_conditions_set(same, prev, "QuotaReady", "False", "B", "other", 1,
	                                    "2026-12-02T10:00:00Z"),
	                 0);
	assert_string_equal(field(tau_conditions_find(same, "QuotaReady"), "lastTransitionTime"),
	                    "2026-01-01T00:00:00Z");
	/* Status flips: now. */
	assert_int_equal(tau_conditions_set(flipped, prev, "QuotaReady", "True", "C", NULL, 1,
	                                    "2026-12-02T10:00:00Z"),
	                 0);
	assert_string_equal(field(tau_conditions_find(flipped, "QuotaReady"), "lastTransitionTime"),
	                    "2026-12-02T10:00:00Z");
	assert_string_equal(field(tau_conditions_find(flipped, "QuotaReady"), "message"), "");
	cJSON_Delete(prev);
	cJSON_Delete(same);
	cJSON_Delete(flipped);
}

static void test_set_replaces_same_type(void **state)
{
	cJSON *conds = cJSON_CreateArray();

	(void)state;
	assert_int_equal(tau_conditions_set(conds, NULL, "A", "True", "R", "", 1, "t"), 0);
	assert_int_equal(tau_conditions_set(conds, NULL, "B", "True", "R", "", 1, "t"), 0);
	assert_int_equal(tau_conditions_set(conds, NULL, "A", "False", "S", "", 1, "t"), 0);
	assert_int_equal(cJSON_GetArraySize(conds), 2);
	assert_string_equal(field(tau_conditions_find(conds, "A"), "reason"), "S");
	cJSON_Delete(conds);
}

static void test_invalid_input_refused(void **state)
{
	cJSON *conds = cJSON_CreateArray();

	(void)state;
	assert_int_equal(tau_conditions_set(conds, NULL, "A", "Maybe", "R", "", 1, "t"),
	                 -TAU_EINVAL);
	assert_int_equal(tau_conditions_set(conds, NULL, "A", "True", "", "", 1, "t"), -TAU_EINVAL);
	assert_int_equal(tau_conditions_set(conds, NULL, "", "True", "R", "", 1, "t"), -TAU_EINVAL);
	assert_int_equal(tau_conditions_set(conds, NULL, "A", "True", "R", "", 1, NULL),
	                 -TAU_EINVAL);
	assert_int_equal(tau_conditions_set(NULL, NULL, "A", "True", "R", "", 1, "t"), -TAU_EINVAL);
	assert_int_equal(cJSON_GetArraySize(conds), 0);
	cJSON_Delete(conds);
}

static void test_equal_ignores_time_and_order(void **state)
{
	cJSON *a = parse("[{\"type\":\"A\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"m\","
	                 "\"observedGeneration\":2,\"lastTransitionTime\":\"x\"},"
	                 "{\"type\":\"B\",\"status\":\"False\",\"reason\":\"S\",\"message\":\"\","
	                 "\"observedGeneration\":2,\"lastTransitionTime\":\"y\"}]");
	cJSON *b = parse("[{\"type\":\"B\",\"status\":\"False\",\"reason\":\"S\",\"message\":\"\","
	                 "\"observedGeneration\":2,\"lastTransitionTime\":\"z\"},"
	                 "{\"type\":\"A\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"m\","
	                 "\"observedGeneration\":2,\"lastTransitionTime\":\"w\"}]");
	cJSON *c = parse("[{\"type\":\"A\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"m2\","
	                 "\"observedGeneration\":2},"
	                 "{\"type\":\"B\",\"status\":\"False\",\"reason\":\"S\",\"message\":\"\","
	                 "\"observedGeneration\":2}]");
	cJSON *empty = parse("[]");

	(void)state;
	assert_true(tau_conditions_equal(a, b));
	assert_false(tau_conditions_equal(a, c));
	assert_false(tau_conditions_equal(a, NULL));
	assert_true(tau_conditions_equal(empty, NULL));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(empty);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_new_condition_takes_now),
	        cmocka_unit_test(test_negative_generation_writes_none),
	        cmocka_unit_test(test_transition_time_kept_while_status_same),
	        cmocka_unit_test(test_set_replaces_same_type),
	        cmocka_unit_test(test_invalid_input_refused),
	        cmocka_unit_test(test_equal_ignores_time_and_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
