/*
 * test_budget_desired.c - pool snapshot, Cohort plan, desired Kueue objects
 * (exact JSON), retained flavors at 0, zeroing, Kueue limits, owned-field
 * comparison by value, merge, and ownership.
 */
#include "budget/desired.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/nodefacts.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static cJSON *parse(const char *text)
{
	cJSON *j = NULL;

	if (tau_json_parse(&j, text, strlen(text), 0) != 0)
		fail_msg("bad test JSON: %s", text);
	return j;
}

static void assert_json(const cJSON *j, const char *want)
{
	char *got = NULL;
	cJSON *w = parse(want);
	char *wp = NULL;

	assert_int_equal(tau_json_print(&got, j), 0);
	assert_int_equal(tau_json_print(&wp, w), 0);
	if (strcmp(got, wp) != 0)
		fail_msg("got  %s\nwant %s", got, wp);
	free(got);
	free(wp);
	cJSON_Delete(w);
}

typedef struct pool_row {
	const char *cls, *resource, *qty;
} pool_row;

static tau_budget_pool *make_pool(const pool_row *rows, size_t n)
{
	tau_budget_pool *p = NULL;

	assert_int_equal(tau_budget_pool_new(&p), 0);
	for (size_t i = 0; i < n; i++) {
		tau_quantity q;

		if (rows[i].resource == NULL) {
			assert_int_equal(tau_budget_pool_add_class(p, rows[i].cls), 0);
			continue;
		}
		assert_int_equal(tau_quantity_parse_str(&q, rows[i].qty), 0);
		assert_int_equal(tau_budget_pool_set(p, rows[i].cls, rows[i].resource, &q), 0);
	}
	return p;
}

/* Two classes, given out of order; h100 lacks memory, a100 lacks rdma/ib. */
static const pool_row two_classes[] = {
        {"h100", "nvidia.com/gpu", "16"}, {"h100", "cpu", "191.5"}, {"a100", "nvidia.com/gpu", "8"},
        {"a100", "memory", "1024Gi"},     {"a100", "cpu", "96"},    {"h100", "rdma/ib", "4"},
};

#define META_COHORT                                                                                \
	"\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Cohort\",\"metadata\":{\"name\":"    \
	"\"tau-team-research\",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","          \
	"\"tau.azure.com/team\":\"research\"},\"annotations\":{\"tau.azure.com/team-uid\":"        \
	"\"team-uid-1\"}}"

static const char want_cohort[] =
        "{" META_COHORT ",\"spec\":{\"resourceGroups\":[{"
        "\"coveredResources\":[\"cpu\",\"memory\",\"nvidia.com/gpu\",\"rdma/ib\"],\"flavors\":["
        "{\"name\":\"taugrid-gpu-a100\",\"resources\":["
        "{\"name\":\"cpu\",\"nominalQuota\":\"96\"},{\"name\":\"memory\",\"nominalQuota\":\"1Ti\"},"
        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"8\"},"
        "{\"name\":\"rdma/ib\",\"nominalQuota\":\"0\"}]},"
        "{\"name\":\"taugrid-gpu-h100\",\"resources\":["
        "{\"name\":\"cpu\",\"nominalQuota\":\"191500m\"},{\"name\":\"memory\",\"nominalQuota\":"
        "\"0\"},"
        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"16\"},"
        "{\"name\":\"rdma/ib\",\"nominalQuota\":\"4\"}]}]}]}}";

static tau_budget_plan *plan_of(const tau_budget_pool *pool, const char *observed_cohort)
{
	tau_budget_plan *plan = NULL;
	cJSON *obs = observed_cohort != NULL ? parse(observed_cohort) : NULL;

	if (tau_budget_plan_build(&plan, pool, obs, NULL, 0, "cluster-uid-1") != 0)
		fail_msg("plan: %s", tau_error_last()->msg);
	cJSON_Delete(obs);
	return plan;
}

static void test_cohort_exact(void **state)
{
	tau_budget_pool *pool = make_pool(two_classes, ARRAY_LEN(two_classes));
	tau_budget_plan *plan = plan_of(pool, NULL);
	cJSON *cohort = NULL;

	(void)state;
	assert_int_equal(plan->n_flavors, 2);
	assert_false(plan->flavors[0].retained);
	assert_string_equal(plan->flavors[1].gpu_class, "h100");
	assert_int_equal(tau_budget_desired_cohort(&cohort, plan, "research", "team-uid-1", false),
	                 0);
	assert_json(cohort, want_cohort);
	cJSON_Delete(cohort);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

static void test_cohort_zeroed_keeps_shape(void **state)
{
	tau_budget_pool *pool = make_pool(two_classes, ARRAY_LEN(two_classes));
	tau_budget_plan *plan = plan_of(pool, NULL);
	cJSON *cohort = NULL;

	(void)state;
	assert_int_equal(tau_budget_desired_cohort(&cohort, plan, "research", "team-uid-1", true),
	                 0);
	assert_json(cohort,
	            "{" META_COHORT ",\"spec\":{\"resourceGroups\":[{"
	            "\"coveredResources\":[\"cpu\",\"memory\",\"nvidia.com/gpu\",\"rdma/ib\"],"
	            "\"flavors\":[{\"name\":\"taugrid-gpu-a100\",\"resources\":["
	            "{\"name\":\"cpu\",\"nominalQuota\":\"0\"},{\"name\":\"memory\","
	            "\"nominalQuota\":\"0\"},"
	            "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"},"
	            "{\"name\":\"rdma/ib\",\"nominalQuota\":\"0\"}]},"
	            "{\"name\":\"taugrid-gpu-h100\",\"resources\":["
	            "{\"name\":\"cpu\",\"nominalQuota\":\"0\"},{\"name\":\"memory\","
	            "\"nominalQuota\":\"0\"},"
	            "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"},"
	            "{\"name\":\"rdma/ib\",\"nominalQuota\":\"0\"}]}]}]}}");
	cJSON_Delete(cohort);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

/* P6: the observed Cohort lists v100 and example.com/slots; the pool has neither any more. */
static void test_retained_flavor_and_resource_at_zero(void **state)
{
	static const pool_row rows[] = {{"a100", "nvidia.com/gpu", "8"}};
	static const char observed[] =
	        "{\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"example.com/slots\","
	        "\"nvidia.com/gpu\"],\"flavors\":[{\"name\":\"taugrid-gpu-v100\",\"resources\":["
	        "{\"name\":\"example.com/slots\",\"nominalQuota\":2},{\"name\":\"nvidia.com/gpu\","
	        "\"nominalQuota\":\"4\"}]},{\"name\":\"taugrid-gpu-a100\",\"resources\":["
	        "{\"name\":\"example.com/slots\",\"nominalQuota\":\"1\"},{\"name\":\"nvidia.com/"
	        "gpu\","
	        "\"nominalQuota\":\"4\"}]}]}]}}";
	tau_budget_pool *pool = make_pool(rows, ARRAY_LEN(rows));
	tau_budget_plan *plan = plan_of(pool, observed);
	cJSON *cohort = NULL;

	(void)state;
	assert_int_equal(plan->n_flavors, 2);
	assert_string_equal(plan->flavors[1].name, "taugrid-gpu-v100");
	assert_true(plan->flavors[1].retained);
	assert_string_equal(plan->flavors[1].gpu_class, "v100"); /* from the plain name */
	assert_false(plan->flavors[0].retained);
	assert_int_equal(tau_budget_desired_cohort(&cohort, plan, "research", "team-uid-1", false),
	                 0);
	assert_json(cohort, "{" META_COHORT ",\"spec\":{\"resourceGroups\":[{"
	                    "\"coveredResources\":[\"example.com/slots\",\"nvidia.com/gpu\"],"
	                    "\"flavors\":[{\"name\":\"taugrid-gpu-a100\",\"resources\":["
	                    "{\"name\":\"example.com/slots\",\"nominalQuota\":\"0\"},"
	                    "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"8\"}]},"
	                    "{\"name\":\"taugrid-gpu-v100\",\"resources\":["
	                    "{\"name\":\"example.com/slots\",\"nominalQuota\":\"0\"},"
	                    "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"}]}]}]}}");
	cJSON_Delete(cohort);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

/* A retained hashed flavor gets its class from our ResourceFlavor's label, not another's. */
static void test_retained_class_from_owned_flavor(void **state)
{
	static const char observed[] =
	        "{\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"nvidia.com/gpu\"],"
	        "\"flavors\":[{\"name\":\"taugrid-gpu-v100-1b741d3a\",\"resources\":["
	        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"4\"}]},"
	        "{\"name\":\"gpu-legacy\",\"resources\":["
	        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"}]}]}]}}";
	static const char ours[] =
	        "{\"metadata\":{\"name\":\"taugrid-gpu-v100-1b741d3a\",\"labels\":{"
	        "\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"
	        "gpu-class\":\"V100\"},"
	        "\"annotations\":{\"tau.azure.com/cluster-uid\":\"cluster-uid-1\"}}}";
	static const char theirs[] = "{\"metadata\":{\"name\":\"gpu-legacy\",\"labels\":{"
	                             "\"tau.azure.com/gpu-class\":\"legacy\"}}}";
	tau_budget_pool *pool = NULL;
	tau_budget_plan *plan = NULL;
	cJSON *obs = parse(observed), *rf[2] = {parse(ours), parse(theirs)};

	(void)state;
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	assert_int_equal(tau_budget_plan_build(&plan, pool, obs, (const cJSON *const *)rf, 2,
	                                       "cluster-uid-1"),
	                 0);
	assert_int_equal(plan->n_flavors, 2);
	assert_string_equal(plan->flavors[0].name, "gpu-legacy");
	assert_null(plan->flavors[0].gpu_class);
	assert_string_equal(plan->flavors[1].gpu_class, "V100");
	assert_true(tau_quantity_is_zero(tau_budget_plan_quota(plan, 1, 0)));
	tau_budget_plan_free(plan);
	/* An earlier TauCluster's flavor (a reinstall) still names the class it was written for. */
	assert_int_equal(tau_budget_plan_build(&plan, pool, obs, (const cJSON *const *)rf, 2,
	                                       "cluster-uid-2"),
	                 0);
	assert_string_equal(plan->flavors[1].gpu_class, "V100");
	tau_budget_plan_free(plan);
	/* Without any TauGrid flavor of that name, a cleaned-up name ("-<8 hex>") names no class:
	 * reading "v100-1b741d3a" from it would write a flavor selecting no node. */
	assert_int_equal(tau_budget_plan_build(&plan, pool, obs, (const cJSON *const *)rf + 1, 1,
	                                       "cluster-uid-2"),
	                 0);
	assert_null(plan->flavors[1].gpu_class);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
	cJSON_Delete(obs);
	cJSON_Delete(rf[0]);
	cJSON_Delete(rf[1]);
}

static void test_empty_pool_gives_no_groups(void **state)
{
	tau_budget_pool *pool = NULL;
	tau_budget_plan *plan;
	cJSON *cohort = NULL;

	(void)state;
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	plan = plan_of(pool, NULL);
	assert_int_equal(tau_budget_desired_cohort(&cohort, plan, "research", "team-uid-1", false),
	                 0);
	assert_json(cohort, "{" META_COHORT ",\"spec\":{\"resourceGroups\":[]}}");
	cJSON_Delete(cohort);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

/* Our a100 flavor for cluster-uid-1, up to its nodeLabels' class and OS. */
#define RF_A100_HEAD                                                                               \
	"{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ResourceFlavor\","                  \
	"\"metadata\":{\"name\":\"taugrid-gpu-a100\",\"labels\":{"                                 \
	"\"app.kubernetes.io/managed-by\":\"taugrid\","                                            \
	"\"tau.azure.com/gpu-class\":\"a100\"},\"annotations\":{"                                  \
	"\"tau.azure.com/cluster-uid\":\"cluster-uid-1\"}},\"spec\":{\"nodeLabels\":{"             \
	"\"tau.azure.com/gpu-class\":\"a100\",\"kubernetes.io/os\":\"linux\""

static void test_flavor_exact(void **state)
{
	cJSON *rf = NULL;

	(void)state;
	assert_int_equal(tau_budget_desired_flavor(&rf, "a100", "cluster-uid-1", NULL), 0);
	assert_json(rf, RF_A100_HEAD "}}}");
	cJSON_Delete(rf);
	assert_int_equal(tau_budget_desired_flavor(&rf, "H100_SXM", "cluster-uid-1", NULL), 0);
	assert_string_equal(
	        cJSON_GetObjectItem(cJSON_GetObjectItem(rf, "metadata"), "name")->valuestring,
	        "taugrid-gpu-h100-sxm-69f9dd6b");
	cJSON_Delete(rf);
	rf = NULL;
	assert_int_equal(tau_budget_desired_flavor(&rf, "a100", "", NULL), -TAU_EINVAL);
	assert_int_equal(tau_budget_desired_flavor(&rf, "bad value!", "u", NULL), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "GPU class: Invalid value"));
	assert_null(rf);
}

/*
 * Finding 3 of issue 24: the flavor carries the pool's node selector, so Kueue confines the pods
 * it admits to the nodes the pool counts; the class and OS stay the flavor's own; a selector
 * Kueue's 8 nodeLabels cannot hold, or that is not a map of labels, is refused with why.
 */
static void test_flavor_carries_node_selector(void **state)
{
	cJSON *rf = NULL, *sel;

	(void)state;
	sel = cJSON_Parse("{\"pool\":\"a\",\"tau.azure.com/gpu-class\":\"h100\","
	                  "\"kubernetes.io/os\":\"windows\",\"zone\":\"\"}");
	assert_int_equal(tau_budget_desired_flavor(&rf, "a100", "cluster-uid-1", sel), 0);
	assert_json(rf, RF_A100_HEAD ","
	                             "\"pool\":\"a\",\"zone\":\"\"}}}");
	cJSON_Delete(rf);
	rf = NULL;
	cJSON_Delete(sel);
	/* 6 labels besides the class and OS fit; a 7th does not. */
	sel = cJSON_Parse("{\"a\":\"1\",\"b\":\"1\",\"c\":\"1\",\"d\":\"1\",\"e\":\"1\","
	                  "\"f\":\"1\",\"kubernetes.io/os\":\"linux\"}");
	assert_int_equal(tau_budget_flavor_selector_check(sel), 0);
	cJSON_AddStringToObject(sel, "g", "1");
	assert_int_equal(tau_budget_desired_flavor(&rf, "a100", "cluster-uid-1", sel), -TAU_ERANGE);
	assert_string_equal(tau_error_last()->msg,
	                    "spec.nodes.selector has 7 labels besides tau.azure.com/gpu-class and "
	                    "kubernetes.io/os; a Kueue ResourceFlavor holds at most 8 nodeLabels, "
	                    "so TauGrid's flavors could not confine pods to the selected nodes: "
	                    "select the pool with at most 6 labels");
	assert_null(rf);
	cJSON_Delete(sel);
	sel = cJSON_Parse("{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\","
	                  "\"values\":[\"a\",\"b\"]}]}");
	assert_int_equal(tau_budget_flavor_selector_check(sel), -TAU_EINVAL);
	assert_string_equal(tau_error_last()->msg,
	                    "spec.nodes.selector[matchExpressions]: not a label key with a label "
	                    "value, so no ResourceFlavor can confine pods to the selected nodes");
	cJSON_Delete(sel);
	sel = cJSON_Parse("[\"pool=a\"]");
	assert_int_equal(tau_budget_flavor_selector_check(sel), -TAU_EINVAL);
	cJSON_Delete(sel);
	sel = cJSON_Parse("null");
	assert_int_equal(tau_budget_flavor_selector_check(sel), 0);
	cJSON_Delete(sel);
}

static void test_cluster_queue_exact(void **state)
{
	tau_budget_pool *pool = make_pool(two_classes, ARRAY_LEN(two_classes));
	tau_budget_plan *plan = plan_of(pool, NULL);
	cJSON *cq = NULL;

	(void)state;
	assert_int_equal(tau_budget_desired_cluster_queue(&cq, plan, "research", "alpha",
	                                                  "ws-uid-1", "ml-alpha"),
	                 0);
	assert_json(
	        cq,
	        "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ClusterQueue\","
	        "\"metadata\":{\"name\":\"tau-ws-alpha\",\"labels\":{"
	        "\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/team\":\"research\","
	        "\"tau.azure.com/workspace\":\"alpha\"},\"annotations\":{"
	        "\"tau.azure.com/workspace-uid\":\"ws-uid-1\"}},\"spec\":{"
	        "\"cohortName\":\"tau-team-research\",\"namespaceSelector\":{\"matchLabels\":{"
	        "\"kubernetes.io/metadata.name\":\"ml-alpha\"}},\"resourceGroups\":[{"
	        "\"coveredResources\":[\"cpu\",\"memory\",\"nvidia.com/gpu\",\"rdma/ib\"],"
	        "\"flavors\":[{\"name\":\"taugrid-gpu-a100\",\"resources\":["
	        "{\"name\":\"cpu\",\"nominalQuota\":\"0\"},{\"name\":\"memory\",\"nominalQuota\":"
	        "\"0\"},"
	        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"},"
	        "{\"name\":\"rdma/ib\",\"nominalQuota\":\"0\"}]},"
	        "{\"name\":\"taugrid-gpu-h100\",\"resources\":["
	        "{\"name\":\"cpu\",\"nominalQuota\":\"0\"},{\"name\":\"memory\",\"nominalQuota\":"
	        "\"0\"},"
	        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"},"
	        "{\"name\":\"rdma/ib\",\"nominalQuota\":\"0\"}]}]}]}}");
	cJSON_Delete(cq);
	cq = NULL;
	assert_int_equal(tau_budget_desired_cluster_queue(&cq, plan, "research", "alpha",
	                                                  "ws-uid-1", "Bad_NS"),
	                 -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "namespace: Invalid value"));
	assert_int_equal(
	        tau_budget_desired_cluster_queue(&cq, plan, "research", "alpha", NULL, "ml-alpha"),
	        -TAU_EINVAL);
	assert_null(cq);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

/* ------------------------------------------------------------------------------------------ */
/* Limits and bad pools: an error with a message, and no plan                                  */

static void expect_plan_error(tau_budget_pool *pool, int rc, const char *msg_has)
{
	tau_budget_plan *plan = NULL;

	assert_int_equal(tau_budget_plan_build(&plan, pool, NULL, NULL, 0, "u"), rc);
	assert_null(plan);
	if (strstr(tau_error_last()->msg, msg_has) == NULL)
		fail_msg("message \"%s\" lacks \"%s\"", tau_error_last()->msg, msg_has);
}

static void test_limits(void **state)
{
	tau_budget_pool *pool = NULL;
	tau_quantity one, q;
	char name[32];

	(void)state;
	assert_int_equal(tau_quantity_parse_str(&one, "1"), 0);
	/* 64 resources fit, the 65th does not. */
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "example.com/r%02d", i);
		assert_int_equal(tau_budget_pool_set(pool, "a100", name, &one), 0);
	}
	tau_budget_plan_free(plan_of(pool, NULL));
	assert_int_equal(tau_budget_pool_set(pool, "h100", "example.com/r64", &one), 0);
	expect_plan_error(pool, -TAU_ERANGE,
	                  "covers 65 resources; a Kueue resource group covers "
	                  "at most 64");
	tau_budget_pool_free(pool);

	/* 64 flavors fit, the 65th does not. */
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	for (int i = 0; i < 64; i++) {
		snprintf(name, sizeof(name), "c%02d", i);
		assert_int_equal(tau_budget_pool_set(pool, name, "nvidia.com/gpu", &one), 0);
	}
	tau_budget_plan_free(plan_of(pool, NULL));
	assert_int_equal(tau_budget_pool_add_class(pool, "c64"), 0);
	expect_plan_error(pool, -TAU_ERANGE,
	                  "has 65 flavors; a Kueue resource group holds at most 64");
	tau_budget_pool_free(pool);

	/* int64 in Kueue's units: cpu in milli-units. */
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	assert_int_equal(tau_quantity_parse_str(&q, "9223372036854775807"), 0);
	assert_int_equal(tau_budget_pool_set(pool, "a100", "memory", &q), 0);
	tau_budget_plan_free(plan_of(pool, NULL));
	assert_int_equal(tau_quantity_parse_str(&q, "9223372036854776"), 0);
	assert_int_equal(tau_budget_pool_set(pool, "a100", "cpu", &q), 0);
	expect_plan_error(
	        pool, -TAU_ERANGE,
	        "flavor taugrid-gpu-a100 resource cpu: the pool sum 9223372036854776 does "
	        "not fit the int64 milli-units Kueue counts in");
	tau_budget_pool_free(pool);

	assert_int_equal(tau_budget_pool_new(&pool), 0);
	assert_int_equal(tau_quantity_parse_str(&q, "9223372036854775808"), 0);
	assert_int_equal(tau_budget_pool_set(pool, "a100", "memory", &q), 0);
	expect_plan_error(pool, -TAU_ERANGE, "base units");
	tau_budget_pool_free(pool);
}

static void test_bad_pools(void **state)
{
	tau_budget_pool *pool = NULL;
	tau_quantity one, neg;
	tau_budget_plan *plan = NULL;
	cJSON *bad;

	(void)state;
	assert_int_equal(tau_quantity_parse_str(&one, "1"), 0);
	assert_int_equal(tau_quantity_parse_str(&neg, "-1"), 0);
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	assert_int_equal(tau_budget_pool_set(pool, "a100", "cpu", &neg), -TAU_EINVAL);
	assert_int_equal(tau_budget_pool_set(pool, "", "cpu", &one), -TAU_EINVAL);
	assert_int_equal(tau_budget_pool_set(pool, "a100", "cpu", &one), 0);
	assert_int_equal(tau_budget_pool_set(pool, "a100", "cpu", &one), -TAU_EINVAL);
	assert_non_null(strstr(tau_error_last()->msg, "set twice"));
	/* Kueue refuses resource names that are not qualified names. */
	assert_int_equal(tau_budget_pool_set(pool, "a100", "bad name", &one), 0);
	expect_plan_error(pool, -TAU_EINVAL, "Kueue accepts qualified names only");
	tau_budget_pool_free(pool);

	/* "A" cleans up to taugrid-gpu-a-559aead0, which class "a-559aead0" has as plain name. */
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	assert_int_equal(tau_budget_pool_add_class(pool, "A"), 0);
	assert_int_equal(tau_budget_pool_add_class(pool, "a-559aead0"), 0);
	expect_plan_error(pool, -TAU_EINVAL,
	                  "GPU classes A and a-559aead0 map to one ResourceFlavor name "
	                  "taugrid-gpu-a-559aead0");
	tau_budget_pool_free(pool);

	/* An observed Cohort that cannot be read. */
	assert_int_equal(tau_budget_pool_new(&pool), 0);
	bad = parse("{\"spec\":{\"resourceGroups\":{}}}");
	assert_int_equal(tau_budget_plan_build(&plan, pool, bad, NULL, 0, "u"), -TAU_ETYPE);
	assert_null(plan);
	cJSON_Delete(bad);
	tau_budget_pool_free(pool);
}

/* ------------------------------------------------------------------------------------------ */
/* Owned-field comparison                                                                      */

/* want_cohort as Kueue might return it: quantities rewritten, defaults, others' metadata. */
static const char cohort_read_back[] =
        "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Cohort\",\"metadata\":{"
        "\"name\":\"tau-team-research\",\"uid\":\"c-1\",\"resourceVersion\":\"42\","
        "\"finalizers\":[\"example.com/keep\"],\"labels\":{\"app.kubernetes.io/managed-by\":"
        "\"taugrid\",\"tau.azure.com/team\":\"research\",\"example.com/other\":\"x\"},"
        "\"annotations\":{\"tau.azure.com/team-uid\":\"team-uid-1\",\"note\":\"hi\"}},"
        "\"spec\":{\"fairSharing\":{\"weight\":\"1\"},\"resourceGroups\":[{"
        "\"coveredResources\":[\"cpu\",\"memory\",\"nvidia.com/gpu\",\"rdma/ib\"],\"flavors\":["
        "{\"name\":\"taugrid-gpu-a100\",\"resources\":["
        "{\"name\":\"cpu\",\"nominalQuota\":96},{\"name\":\"memory\",\"nominalQuota\":\"1024Gi\"},"
        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"8000m\"},"
        "{\"name\":\"rdma/ib\",\"nominalQuota\":0}]},"
        "{\"name\":\"taugrid-gpu-h100\",\"resources\":["
        "{\"name\":\"cpu\",\"nominalQuota\":\"191.5\"},{\"name\":\"memory\",\"nominalQuota\":\"0\"}"
        ","
        "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"16\"},"
        "{\"name\":\"rdma/ib\",\"nominalQuota\":\"4\"}]}]}]},\"status\":{}}";

typedef struct diff_case {
	const char *from, *to; /* replace `from` by `to` in cohort_read_back */
	const char *what_has;  /* NULL: still equal */
} diff_case;

static const diff_case cohort_diffs[] = {
        {"", "", NULL},
        {"\"example.com/other\":\"x\"", "\"example.com/other\":\"y\"", NULL},
        {"\"note\":\"hi\"", "\"note\":\"bye\"", NULL},
        {"\"fairSharing\":{\"weight\":\"1\"},", "", NULL},
        {"\"nominalQuota\":\"16\"", "\"nominalQuota\":\"16.001\"",
         "spec.resourceGroups[0].flavors[1].resources[2].nominalQuota is \"16.001\", want 16"},
        {"\"nominalQuota\":\"16\"", "\"nominalQuota\":\"16\",\"borrowingLimit\":\"1\"",
         "spec.resourceGroups[0].flavors[1].resources[2].borrowingLimit is \"1\", want absent"},
        {"\"nominalQuota\":\"16\"", "\"nominalQuota\":\"16\",\"lendingLimit\":0",
         "resources[2].lendingLimit is 0, want absent"},
        {"\"nominalQuota\":\"16\"", "\"nominalQuota\":\"lots\"", "nominalQuota is \"lots\""},
        {"\"fairSharing\"", "\"parentName\":\"org\",\"fairSharing\"",
         "spec.parentName is \"org\", want absent"},
        {"\"fairSharing\"", "\"parentName\":\"\",\"fairSharing\"", NULL},
        {"\"tau.azure.com/team\":\"research\"", "\"tau.azure.com/team\":\"other\"",
         "metadata.labels[tau.azure.com/team] is \"other\", want \"research\""},
        {"\"tau.azure.com/team-uid\":\"team-uid-1\",", "",
         "metadata.annotations[tau.azure.com/team-uid] is absent"},
        {"\"rdma/ib\"]", "\"rdma/ib\",\"pods\"]",
         "spec.resourceGroups[0].coveredResources has 5 entries, want 4"},
        {"\"taugrid-gpu-a100\"", "\"taugrid-gpu-zzz\"",
         "spec.resourceGroups[0].flavors[0].name is \"taugrid-gpu-zzz\", want "
         "\"taugrid-gpu-a100\""},
};

static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = from[0] != '\0' ? strstr(s, from) : s;
	size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
	char *out = malloc(n);

	assert_non_null(at);
	assert_non_null(out);
	snprintf(out, n, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
	return out;
}

static void test_cohort_owned_equal(void **state)
{
	cJSON *desired = parse(want_cohort);

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cohort_diffs); i++) {
		char *text = replace(cohort_read_back, cohort_diffs[i].from, cohort_diffs[i].to);
		cJSON *obs = parse(text);
		char what[512];
		bool eq = false;

		assert_int_equal(tau_budget_owned_equal(&eq, what, sizeof(what), desired, obs), 0);
		if (cohort_diffs[i].what_has == NULL) {
			if (!eq)
				fail_msg("case %zu: differs: %s", i, what);
			assert_string_equal(what, "");
		} else if (eq || strstr(what, cohort_diffs[i].what_has) == NULL) {
			fail_msg("case %zu: eq=%d what=\"%s\", want \"%s\"", i, eq, what,
			         cohort_diffs[i].what_has);
		}
		cJSON_Delete(obs);
		free(text);
	}
	cJSON_Delete(desired);
}

static void test_quantities_by_value(void **state)
{
	static const struct {
		const char *desired, *observed;
		bool equal;
	} rows[] = {
	        {"\"12\"", "12", true},
	        {"\"12\"", "\"12000m\"", true},
	        {"\"12\"", "\"12.0\"", true},
	        {"\"1Gi\"", "\"1024Mi\"", true},
	        {"\"1Gi\"", "1073741824", true},
	        {"\"1Gi\"", "\"1G\"", false},
	        {"\"0\"", "0", true},
	        {"\"0\"", "\"0m\"", true},
	        {"\"12\"", "\"12001m\"", false},
	        {"\"12\"", "null", false},
	        {"\"12\"", "true", false},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char d[256], o[256];
		cJSON *dj, *oj;
		bool eq = !rows[i].equal;

		snprintf(d, sizeof(d),
		         "{\"kind\":\"Cohort\",\"spec\":{\"resourceGroups\":[{\"coveredResources\":"
		         "[\"cpu\"],\"flavors\":[{\"name\":\"f\",\"resources\":[{\"name\":\"cpu\","
		         "\"nominalQuota\":%s}]}]}]}}",
		         rows[i].desired);
		snprintf(o, sizeof(o),
		         "{\"kind\":\"Cohort\",\"spec\":{\"resourceGroups\":[{\"coveredResources\":"
		         "[\"cpu\"],\"flavors\":[{\"name\":\"f\",\"resources\":[{\"name\":\"cpu\","
		         "\"nominalQuota\":%s}]}]}]}}",
		         rows[i].observed);
		dj = parse(d);
		oj = parse(o);
		assert_int_equal(tau_budget_owned_equal(&eq, NULL, 0, dj, oj), 0);
		if (eq != rows[i].equal)
			fail_msg("%s vs %s: equal=%d", rows[i].desired, rows[i].observed, eq);
		cJSON_Delete(dj);
		cJSON_Delete(oj);
	}
}

static void test_cluster_queue_and_flavor_owned_equal(void **state)
{
	static const char cq_desired[] = "{\"kind\":\"ClusterQueue\",\"metadata\":{\"labels\":{"
	                                 "\"app.kubernetes.io/managed-by\":"
	                                 "\"taugrid\"}},\"spec\":{\"cohortName\":\"tau-team-"
	                                 "research\",\"namespaceSelector\":"
	                                 "{\"matchLabels\":{\"kubernetes.io/"
	                                 "metadata.name\":\"ml-alpha\"}},\"resourceGroups\":"
	                                 "[]}}";
	static const struct {
		const char *spec;
		const char *what_has;
	} cq_rows[] = {
	        {"\"cohortName\":\"tau-team-research\",\"namespaceSelector\":{\"matchLabels\":{"
	         "\"kubernetes.io/metadata.name\":\"ml-alpha\"},\"matchExpressions\":[]},"
	         "\"queueingStrategy\":\"BestEffortFIFO\",\"stopPolicy\":\"None\",\"preemption\":{"
	         "\"withinClusterQueue\":\"Never\"},\"flavorFungibility\":{\"whenCanBorrow\":"
	         "\"MayStopSearch\"},\"admissionChecksStrategy\":{\"admissionChecks\":[{\"name\":"
	         "\"ac\"}]}",
	         NULL},
	        {"\"cohortName\":\"other\",\"namespaceSelector\":{\"matchLabels\":{"
	         "\"kubernetes.io/metadata.name\":\"ml-alpha\"}}",
	         "spec.cohortName is \"other\""},
	        {"\"cohortName\":\"tau-team-research\",\"namespaceSelector\":{\"matchLabels\":{"
	         "\"kubernetes.io/metadata.name\":\"ml-beta\"}}",
	         "spec.namespaceSelector.matchLabels[kubernetes.io/metadata.name] is \"ml-beta\""},
	        {"\"cohortName\":\"tau-team-research\",\"namespaceSelector\":{}",
	         "is absent, want \"ml-alpha\""},
	        {"\"cohortName\":\"tau-team-research\"", "spec.namespaceSelector is absent"},
	        {"\"cohortName\":\"tau-team-research\",\"namespaceSelector\":{\"matchLabels\":{"
	         "\"kubernetes.io/metadata.name\":\"ml-alpha\",\"x\":\"y\"}}",
	         "matchLabels has x, which we do not set"},
	        {"\"cohortName\":\"tau-team-research\",\"namespaceSelector\":{\"matchLabels\":{"
	         "\"kubernetes.io/metadata.name\":\"ml-alpha\"},\"matchExpressions\":[{\"key\":"
	         "\"a\",\"operator\":\"Exists\"}]}",
	         "matchExpressions differ"},
	};
	static const char rf_desired[] = "{\"kind\":\"ResourceFlavor\",\"spec\":{\"nodeLabels\":{"
	                                 "\"tau.azure.com/gpu-class\":"
	                                 "\"a100\",\"kubernetes.io/os\":\"linux\"}}}";
	cJSON *d = parse(cq_desired);

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cq_rows); i++) {
		char text[1024], what[256];
		cJSON *o;
		bool eq;

		snprintf(
		        text, sizeof(text),
		        "{\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"}},"
		        "\"spec\":{%s}}",
		        cq_rows[i].spec);
		o = parse(text);
		assert_int_equal(tau_budget_owned_equal(&eq, what, sizeof(what), d, o), 0);
		if (cq_rows[i].what_has == NULL ? !eq
		                                : eq || strstr(what, cq_rows[i].what_has) == NULL)
			fail_msg("cq case %zu: eq=%d what=\"%s\"", i, eq, what);
		cJSON_Delete(o);
	}
	cJSON_Delete(d);

	d = parse(rf_desired);
	{
		cJSON *same_rf = parse("{\"spec\":{\"nodeLabels\":{\"kubernetes.io/os\":\"linux\","
		                       "\"tau.azure.com/gpu-class\":\"a100\"},\"nodeTaints\":[]},"
		                       "\"metadata\":{\"finalizers\":["
		                       "\"kueue.x-k8s.io/resource-in-use\"]}}");
		cJSON *extra = parse("{\"spec\":{\"nodeLabels\":{\"kubernetes.io/os\":\"linux\","
		                     "\"tau.azure.com/gpu-class\":\"a100\",\"zone\":\"1\"}}}");
		char what[256];
		bool eq = false;

		assert_int_equal(tau_budget_owned_equal(&eq, what, sizeof(what), d, same_rf), 0);
		assert_true(eq);
		assert_int_equal(tau_budget_owned_equal(&eq, what, sizeof(what), d, extra), 0);
		assert_false(eq);
		assert_string_equal(what, "spec.nodeLabels has zone, which we do not set");
		cJSON_Delete(same_rf);
		cJSON_Delete(extra);
	}
	cJSON_Delete(d);

	d = parse("{\"kind\":\"LocalQueue\"}");
	{
		bool eq;

		assert_int_equal(tau_budget_owned_equal(&eq, NULL, 0, d, d), -TAU_EINVAL);
	}
	cJSON_Delete(d);
}

/* ------------------------------------------------------------------------------------------ */
/* Merge                                                                                       */

static void test_merge_keeps_what_is_not_ours(void **state)
{
	static const char observed[] =
	        "{\"apiVersion\":\"kueue.x-k8s.io/"
	        "v1beta2\",\"kind\":\"ClusterQueue\",\"metadata\":{"
	        "\"name\":\"tau-ws-alpha\",\"resourceVersion\":\"7\",\"finalizers\":["
	        "\"kueue.x-k8s.io/resource-in-use\"],\"labels\":{\"app.kubernetes.io/managed-by\":"
	        "\"taugrid\",\"tau.azure.com/team\":\"old\",\"example.com/"
	        "x\":\"1\"},\"annotations\":{"
	        "\"tau.azure.com/workspace-uid\":\"ws-uid-1\"}},\"spec\":{\"cohortName\":\"old\","
	        "\"queueingStrategy\":\"BestEffortFIFO\",\"admissionChecksStrategy\":{"
	        "\"admissionChecks\":[{\"name\":\"ac\"}]},\"resourceGroups\":[{"
	        "\"coveredResources\":"
	        "[\"cpu\"],\"flavors\":[{\"name\":\"f\",\"resources\":[{\"name\":\"cpu\","
	        "\"nominalQuota\":\"5\"}]}]}]},\"status\":{\"pendingWorkloads\":1}}";
	static const pool_row rows[] = {{"a100", "nvidia.com/gpu", "8"}};
	tau_budget_pool *pool = make_pool(rows, 1);
	tau_budget_plan *plan = plan_of(pool, NULL);
	cJSON *desired = NULL, *obs = parse(observed), *body = NULL;
	bool eq = false;

	(void)state;
	assert_int_equal(tau_budget_desired_cluster_queue(&desired, plan, "research", "alpha",
	                                                  "ws-uid-1", "ml-alpha"),
	                 0);
	assert_int_equal(tau_budget_merge(&body, obs, desired), 0);
	assert_json(
	        body,
	        "{\"apiVersion\":\"kueue.x-k8s.io/"
	        "v1beta2\",\"kind\":\"ClusterQueue\",\"metadata\":{"
	        "\"name\":\"tau-ws-alpha\",\"resourceVersion\":\"7\",\"finalizers\":["
	        "\"kueue.x-k8s.io/resource-in-use\"],\"labels\":{"
	        "\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/team\":\"research\","
	        "\"example.com/x\":\"1\",\"tau.azure.com/workspace\":\"alpha\"},\"annotations\":{"
	        "\"tau.azure.com/workspace-uid\":\"ws-uid-1\"}},\"spec\":{"
	        "\"cohortName\":\"tau-team-research\",\"queueingStrategy\":\"BestEffortFIFO\","
	        "\"admissionChecksStrategy\":{\"admissionChecks\":[{\"name\":\"ac\"}]},"
	        "\"resourceGroups\":[{\"coveredResources\":[\"nvidia.com/gpu\"],\"flavors\":[{"
	        "\"name\":\"taugrid-gpu-a100\",\"resources\":[{\"name\":\"nvidia.com/gpu\","
	        "\"nominalQuota\":\"0\"}]}]}],\"namespaceSelector\":{\"matchLabels\":{"
	        "\"kubernetes.io/metadata.name\":\"ml-alpha\"}}},\"status\":{"
	        "\"pendingWorkloads\":1}}");
	assert_int_equal(tau_budget_owned_equal(&eq, NULL, 0, desired, body), 0);
	assert_true(eq);
	assert_int_equal(tau_budget_diff(&eq, NULL, 0, desired, obs), 0);
	assert_true(eq); /* the observed CQ differs */
	assert_int_equal(tau_budget_diff(&eq, NULL, 0, desired, body), 0);
	assert_false(eq);
	cJSON_Delete(body);
	cJSON_Delete(desired);
	cJSON_Delete(obs);

	/* A Cohort loses its parentName; an observed object without metadata gets ours. */
	desired = NULL;
	assert_int_equal(tau_budget_desired_cohort(&desired, plan, "research", "team-uid-1", false),
	                 0);
	obs = parse("{\"spec\":{\"parentName\":\"org\",\"fairSharing\":{\"weight\":\"2\"}}}");
	assert_int_equal(tau_budget_merge(&body, obs, desired), 0);
	assert_json(
	        body,
	        "{\"spec\":{\"fairSharing\":{\"weight\":\"2\"},\"resourceGroups\":[{"
	        "\"coveredResources\":[\"nvidia.com/gpu\"],\"flavors\":[{\"name\":"
	        "\"taugrid-gpu-a100\",\"resources\":[{\"name\":\"nvidia.com/gpu\","
	        "\"nominalQuota\":\"8\"}]}]}]},\"apiVersion\":\"kueue.x-k8s.io/v1beta2\","
	        "\"kind\":\"Cohort\",\"metadata\":{\"labels\":{\"app.kubernetes.io/managed-by\":"
	        "\"taugrid\",\"tau.azure.com/team\":\"research\"},\"annotations\":{"
	        "\"tau.azure.com/team-uid\":\"team-uid-1\"}}}");
	cJSON_Delete(body);
	body = NULL;
	assert_int_equal(tau_budget_merge(&body, obs, obs), -TAU_EINVAL);
	assert_null(body);
	cJSON_Delete(obs);
	cJSON_Delete(desired);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

/* ------------------------------------------------------------------------------------------ */
/* Ownership                                                                                   */

static void test_ownership(void **state)
{
	static const struct {
		const char *meta;
		tau_budget_kind kind;
		const char *uid;
		tau_budget_ownership want;
		const char *why_has;
	} rows[] = {
	        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"
	         "\"tau.azure.com/team-uid\":\"t-1\"}}",
	         TAU_BUDGET_COHORT, "t-1", TAU_BUDGET_OWNED, ""},
	        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"
	         "\"tau.azure.com/team-uid\":\"t-2\"}}",
	         TAU_BUDGET_COHORT, "t-1", TAU_BUDGET_OTHER_OWNER,
	         "annotation tau.azure.com/team-uid is \"t-2\", not \"t-1\": another owner"},
	        /* the right UID under another kind's key is not ownership */
	        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"
	         "\"tau.azure.com/team-uid\":\"t-1\"}}",
	         TAU_BUDGET_CLUSTER_QUEUE, "t-1", TAU_BUDGET_LEGACY_OWNER,
	         "legacy ownership metadata: labelled app.kubernetes.io/managed-by=taugrid but no "
	         "tau.azure.com/workspace-uid annotation"},
	        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	         "\"tau.azure.com/gpu-class\":\"a100\"}}",
	         TAU_BUDGET_RESOURCE_FLAVOR, "c-1", TAU_BUDGET_LEGACY_OWNER, "legacy ownership"},
	        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"Helm\"},\"annotations\":{"
	         "\"tau.azure.com/cluster-uid\":\"c-1\"}}",
	         TAU_BUDGET_RESOURCE_FLAVOR, "c-1", TAU_BUDGET_FOREIGN,
	         "label app.kubernetes.io/managed-by is \"Helm\", not \"taugrid\""},
	        {"{}", TAU_BUDGET_RESOURCE_FLAVOR, "c-1", TAU_BUDGET_FOREIGN,
	         "label app.kubernetes.io/managed-by is absent: not managed by TauGrid"},
	        {"{\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"
	         "\"tau.azure.com/workspace-uid\":\"w-1\"}}",
	         TAU_BUDGET_CLUSTER_QUEUE, NULL, TAU_BUDGET_OTHER_OWNER, "another owner"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		char text[512], why[512];
		cJSON *obj;
		tau_budget_ownership got;

		snprintf(text, sizeof(text), "{\"metadata\":%s}", rows[i].meta);
		obj = parse(text);
		got = tau_budget_ownership_of(obj, rows[i].kind, rows[i].uid, why, sizeof(why));
		if (got != rows[i].want || strstr(why, rows[i].why_has) == NULL)
			fail_msg("case %zu: got %s (%s), want %s", i,
			         tau_budget_ownership_name(got), why,
			         tau_budget_ownership_name(rows[i].want));
		if (rows[i].want == TAU_BUDGET_OWNED)
			assert_string_equal(why, "");
		cJSON_Delete(obj);
	}
	assert_int_equal(tau_budget_ownership_of(NULL, TAU_BUDGET_COHORT, "t", NULL, 0),
	                 TAU_BUDGET_FOREIGN);
}

/* ------------------------------------------------------------------------------------------ */
/* Snapshot from the inventory pool                                                            */

static void upsert_node(tau_pool *inv, const char *name, const char *cls, const char *alloc)
{
	char text[1024];
	tau_node_facts facts;
	cJSON *node;

	snprintf(text, sizeof(text),
	         "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\",\"labels\":{"
	         "\"kubernetes.io/os\":\"linux\",\"tau.azure.com/gpu-class\":\"%s\"}},"
	         "\"spec\":{},\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
	         "\"True\"}],\"allocatable\":%s}}",
	         name, name, cls, alloc);
	node = parse(text);
	memset(&facts, 0, sizeof(facts));
	if (tau_node_facts_from_json(&facts, node) != 0 || tau_pool_upsert_node(inv, &facts) != 0)
		fail_msg("node %s: %s", name, tau_error_last()->msg);
	tau_node_facts_clear(&facts);
	cJSON_Delete(node);
}

static void test_snapshot_from_inventory(void **state)
{
	tau_pool *inv = NULL;
	tau_budget_pool *pool = NULL;
	tau_budget_plan *plan;
	cJSON *cohort = NULL;

	(void)state;
	assert_int_equal(tau_pool_new(&inv), 0);
	upsert_node(inv, "n2", "a100",
	            "{\"cpu\":\"48\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"4\"}");
	upsert_node(inv, "n1", "a100",
	            "{\"cpu\":\"47500m\",\"memory\":\"512Gi\",\"nvidia.com/gpu\":\"4\"}");
	upsert_node(inv, "n3", "h100", "{\"cpu\":\"96\",\"rdma/ib\":\"1k\"}");
	assert_int_equal(tau_budget_pool_from_inventory(&pool, inv), 0);
	tau_pool_free(inv);
	assert_int_equal(pool->n_classes, 2);
	assert_string_equal(pool->classes[0].name, "a100");
	assert_int_equal(pool->classes[0].n_resources, 3);
	plan = plan_of(pool, NULL);
	assert_int_equal(tau_budget_desired_cohort(&cohort, plan, "research", "team-uid-1", false),
	                 0);
	assert_json(cohort,
	            "{" META_COHORT ",\"spec\":{\"resourceGroups\":[{"
	            "\"coveredResources\":[\"cpu\",\"memory\",\"nvidia.com/gpu\",\"rdma/ib\"],"
	            "\"flavors\":[{\"name\":\"taugrid-gpu-a100\",\"resources\":["
	            "{\"name\":\"cpu\",\"nominalQuota\":\"95500m\"},"
	            "{\"name\":\"memory\",\"nominalQuota\":\"1Ti\"},"
	            "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"8\"},"
	            "{\"name\":\"rdma/ib\",\"nominalQuota\":\"0\"}]},"
	            "{\"name\":\"taugrid-gpu-h100\",\"resources\":["
	            "{\"name\":\"cpu\",\"nominalQuota\":\"96\"},"
	            "{\"name\":\"memory\",\"nominalQuota\":\"0\"},"
	            "{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":\"0\"},"
	            "{\"name\":\"rdma/ib\",\"nominalQuota\":\"1k\"}]}]}]}}");
	cJSON_Delete(cohort);
	tau_budget_plan_free(plan);
	tau_budget_pool_free(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cohort_exact),
	        cmocka_unit_test(test_cohort_zeroed_keeps_shape),
	        cmocka_unit_test(test_retained_flavor_and_resource_at_zero),
	        cmocka_unit_test(test_retained_class_from_owned_flavor),
	        cmocka_unit_test(test_empty_pool_gives_no_groups),
	        cmocka_unit_test(test_flavor_exact),
	        cmocka_unit_test(test_flavor_carries_node_selector),
	        cmocka_unit_test(test_cluster_queue_exact),
	        cmocka_unit_test(test_limits),
	        cmocka_unit_test(test_bad_pools),
	        cmocka_unit_test(test_cohort_owned_equal),
	        cmocka_unit_test(test_quantities_by_value),
	        cmocka_unit_test(test_cluster_queue_and_flavor_owned_equal),
	        cmocka_unit_test(test_merge_keeps_what_is_not_ours),
	        cmocka_unit_test(test_ownership),
	        cmocka_unit_test(test_snapshot_from_inventory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
