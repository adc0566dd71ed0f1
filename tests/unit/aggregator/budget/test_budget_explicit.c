/* Unit tests of budget/explicit.c: the arithmetic (tables) and the rules E1-E10; the sorted
 * insert of budget/helpers.h and clearing several cell sets at once. */
#include "budget/explicit.h"
#include "budget/helpers.h"

#include "tau/error.h"
#include "tau/json.h"
#include "tau/quantity.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define H100 "taugrid-gpu-h100"
#define GPU  "nvidia.com/gpu"

static cJSON *parse(const char *s)
{
	cJSON *j = cJSON_Parse(s);

	if (j == NULL)
		fail_msg("bad JSON in test: %s", s);
	return j;
}

static tau_quantity q(const char *s)
{
	tau_quantity v;

	assert_int_equal(tau_quantity_parse_str(&v, s), 0);
	return v;
}

static void assert_cell(const tau_budget_cells *c, const char *flavor, const char *res,
                        const char *want)
{
	tau_quantity got = tau_budget_cells_get(c, flavor, res), w = q(want);
	char text[TAU_QUANTITY_STR_MAX];

	tau_quantity_format(text, sizeof(text), &got);
	if (tau_quantity_cmp(&got, &w) != 0)
		fail_msg("cell %s/%s is %s, want %s", flavor, res, text, want);
}

/* Cells from "flavor/resource=qty,..." */
static void cells_of(tau_budget_cells *c, const char *spec)
{
	char buf[512], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *slash = strchr(tok, '/');
		tau_quantity v;

		assert_non_null(eq);
		assert_non_null(slash);
		*eq = '\0';
		*slash = '\0';
		v = q(eq + 1);
		assert_int_equal(tau_budget_cells_add(c, tok, slash + 1, &v), 0);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Arithmetic tables                                                                           */

static void test_remainder_table(void **state)
{
	static const struct {
		const char *team, *guarantees, *flavor, *resource, *want, *error;
	} rows[] = {
	        {"f/gpu=10", "f/gpu=4", "f", "gpu", "6", NULL},
	        {"f/gpu=10", "", "f", "gpu", "10", NULL},
	        {"f/gpu=10", "f/gpu=10", "f", "gpu", "0", NULL},
	        {"f/cpu=1500m", "f/cpu=1", "f", "cpu", "500m", NULL},
	        {"f/mem=1Gi", "f/mem=512Mi", "f", "mem", "512Mi", NULL},
	        {"f/gpu=4", "f/gpu=5", "f", "gpu", NULL,
	         "workspace guarantees 5 exceed team quota 4 for flavor f resource gpu"},
	        /* E10: a resource the team does not list has zero quota. */
	        {"f/gpu=4", "g/gpu=1", "g", "gpu", NULL,
	         "workspace guarantees 1 exceed team quota 0 for flavor g resource gpu"},
	        {"", "", "f", "gpu", "0", NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tau_budget_cells team = {0}, g = {0}, out = {0};
		char err[256];
		int rc;

		cells_of(&team, rows[i].team);
		cells_of(&g, rows[i].guarantees);
		rc = tau_budget_remainder(&out, &team, &g, err, sizeof(err));
		if (rows[i].error != NULL) {
			assert_int_equal(rc, -TAU_ERANGE);
			assert_string_equal(err, rows[i].error);
		} else {
			assert_int_equal(rc, 0);
			assert_cell(&out, rows[i].flavor, rows[i].resource, rows[i].want);
		}
		tau_budget_cells_clear(&team);
		tau_budget_cells_clear(&g);
		tau_budget_cells_clear(&out);
	}
}

static void test_new_maximum_table(void **state)
{
	static const struct {
		const char *nominal, *borrowing, *want;
	} rows[] = {
	        {"f/gpu=4", "f/gpu=2", "6"},        {"f/gpu=4", "", "4"}, {"", "f/gpu=3", "3"},
	        {"f/gpu=1500m", "f/gpu=500m", "2"}, {"", "", "0"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tau_budget_cells n = {0}, b = {0}, out = {0};

		cells_of(&n, rows[i].nominal);
		cells_of(&b, rows[i].borrowing);
		assert_int_equal(tau_budget_new_maximum(&out, &n, &b), 0);
		assert_cell(&out, "f", "gpu", rows[i].want);
		tau_budget_cells_clear(&n);
		tau_budget_cells_clear(&b);
		tau_budget_cells_clear(&out);
	}
}

static void test_applied_allocation_table(void **state)
{
#define GROUPS(n)                                                                                  \
	"\"resourceGroups\":[{\"coveredResources\":[\"gpu\"],\"flavors\":[{\"name\":\"f\","        \
	"\"resources\":[{\"name\":\"gpu\",\"nominalQuota\":" n "}]}]}]"
#define MANAGED ",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"}"
	cJSON *co =
	        parse("{\"metadata\":{\"name\":\"tau-team-ml\"},\"spec\":{" GROUPS("\"6\"") "}}");
	cJSON *other =
	        parse("{\"metadata\":{\"name\":\"tau-team-x\"},\"spec\":{" GROUPS("\"100\"") "}}");
	cJSON *cq = parse("{\"metadata\":{\"name\":\"tau-ws-a\"" MANAGED "},"
	                  "\"spec\":{\"cohortName\":\"tau-team-ml\"," GROUPS("4") "}}");
	cJSON *foreign = parse("{\"metadata\":{\"name\":\"other\"},\"spec\":{\"cohortName\":"
	                       "\"tau-team-ml\"," GROUPS("\"50\"") "}}");
	cJSON *moved = parse("{\"metadata\":{\"name\":\"tau-ws-b\"" MANAGED "},"
	                     "\"spec\":{\"cohortName\":\"tau-team-x\"," GROUPS("\"1500m\"") "}}");
	const cJSON *cohorts[] = {co, other}, *cqs[] = {cq, foreign, moved};
	tau_budget_cells out = {0};

	(void)state;
	/* Cohort 6 + our managed queue 4; the foreign queue and the other team do not count. */
	assert_int_equal(tau_budget_applied(&out, "tau-team-ml", cohorts, 2, cqs, 3), 0);
	assert_cell(&out, "f", "gpu", "10");
	tau_budget_cells_clear(&out);
	/* A queue counts where its cohortName is, whatever its labels say (E6). */
	assert_int_equal(tau_budget_applied(&out, "tau-team-x", cohorts, 2, cqs, 3), 0);
	assert_cell(&out, "f", "gpu", "101500m");
	tau_budget_cells_clear(&out);
	assert_int_equal(tau_budget_applied(&out, "tau-team-none", cohorts, 2, cqs, 3), 0);
	assert_int_equal(out.n, 0);
	cJSON_Delete(co);
	cJSON_Delete(other);
	cJSON_Delete(cq);
	cJSON_Delete(foreign);
	cJSON_Delete(moved);
#undef GROUPS
#undef MANAGED
}

static void test_quota_parse_table(void **state)
{
	static const struct {
		const char *json, *error;
		const char *nominal, *borrowing, *lending;
	} rows[] = {
	        {"[{\"flavor\":\"f\",\"resource\":\"gpu\",\"nominalQuota\":\"4\"}]", NULL, "4", "0",
	         "0"},
	        {"[{\"flavor\":\"f\",\"resource\":\"gpu\",\"nominalQuota\":4,\"borrowingLimit\":"
	         "\"2\",\"lendingLimit\":1}]",
	         NULL, "4", "2", "1"},
	        {"null", NULL, "0", "0", "0"},
	        {"[]", NULL, "0", "0", "0"},
	        {"[{\"flavor\":\"f\",\"resource\":\"gpu\",\"nominalQuota\":\"-1\"}]",
	         "TauTeam \"ml\": spec.quota[0].nominalQuota \"-1\" is not a non-negative quantity",
	         NULL, NULL, NULL},
	        {"[{\"flavor\":\"f\",\"resource\":\"gpu\",\"nominalQuota\":\"x\"}]",
	         "TauTeam \"ml\": spec.quota[0].nominalQuota \"x\" is not a non-negative quantity",
	         NULL, NULL, NULL},
	        {"[{\"flavor\":\"f\",\"nominalQuota\":\"1\"}]",
	         "TauTeam \"ml\": spec.quota[0] needs flavor, resource and nominalQuota", NULL,
	         NULL, NULL},
	        {"[{\"flavor\":\"f\",\"resource\":\"gpu\",\"nominalQuota\":\"1\"},"
	         "{\"flavor\":\"f\",\"resource\":\"gpu\",\"nominalQuota\":\"2\"}]",
	         "TauTeam \"ml\": spec.quota lists flavor f resource gpu twice", NULL, NULL, NULL},
	        {"{\"flavor\":\"f\"}", "TauTeam \"ml\": spec.quota is not a list", NULL, NULL,
	         NULL},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tau_budget_cells n = {0}, b = {0}, l = {0};
		cJSON *j = parse(rows[i].json);
		char err[256];
		int rc = tau_budget_quota_parse(&n, &b, &l, j, "TauTeam \"ml\"", err, sizeof(err));

		if (rows[i].error != NULL) {
			assert_int_equal(rc, -TAU_EINVAL);
			assert_string_equal(err, rows[i].error);
		} else {
			assert_int_equal(rc, 0);
			assert_cell(&n, "f", "gpu", rows[i].nominal);
			assert_cell(&b, "f", "gpu", rows[i].borrowing);
			assert_cell(&l, "f", "gpu", rows[i].lending);
		}
		tau_budget_cells_clear(&n);
		tau_budget_cells_clear(&b);
		tau_budget_cells_clear(&l);
		cJSON_Delete(j);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Decisions                                                                                   */

typedef struct world {
	cJSON *objs[16];
	size_t n_objs;
	const cJSON *ws[4], *flavors[4], *cohorts[4], *cqs[6];
	tau_budget_pool *pool;
	tau_budget_explicit_input in;
	tau_budget_explicit_team *x;
} world;

static const cJSON *add(world *w, const char *json)
{
	assert_true(w->n_objs < 16);
	w->objs[w->n_objs] = parse(json);
	return w->objs[w->n_objs++];
}

static void team(world *w, const char *name, const char *quota, const char *extra_meta)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
	         "{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"tau-system\","
	         "\"uid\":\"uid-%s\",\"finalizers\":[\"tau.azure.com/team-cleanup\"]%s},"
	         "\"spec\":{\"quota\":%s}}",
	         name, name, extra_meta, quota);
	w->in.team = add(w, buf);
}

static void workspace(world *w, const char *name, const char *team_name, const char *quota)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
	         "{\"kind\":\"TauWorkspace\",\"metadata\":{\"name\":\"%s\",\"uid\":\"uid-%s\"},"
	         "\"spec\":{\"teamRef\":{\"name\":\"%s\"},\"quota\":%s},"
	         "\"status\":{\"target\":{\"resolvedNamespace\":\"ns-%s\"}}}",
	         name, name, team_name, quota, name);
	w->ws[w->in.api.n_workspaces++] = add(w, buf);
}

/* A queue as we would have written it: nominal/borrowing on H100/GPU, reservation `res`. */
static void queue(world *w, const char *ws, const char *cohort, const char *nominal,
                  const char *borrowing, const char *res)
{
	char buf[1536];

	snprintf(buf, sizeof(buf),
	         "{\"kind\":\"ClusterQueue\",\"metadata\":{\"name\":\"tau-ws-%s\",\"uid\":\"k\","
	         "\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\","
	         "\"tau.azure.com/workspace\":\"%s\"},"
	         "\"annotations\":{\"tau.azure.com/workspace-uid\":\"uid-%s\"}},"
	         "\"spec\":{\"cohortName\":\"%s\",\"resourceGroups\":[{\"coveredResources\":[\"" GPU
	         "\"],\"flavors\":[{\"name\":\"" H100 "\",\"resources\":[{\"name\":\"" GPU "\","
	         "\"nominalQuota\":\"%s\",\"borrowingLimit\":\"%s\",\"lendingLimit\":\"0\"}]}]}]},"
	         "\"status\":{\"flavorsReservation\":[{\"name\":\"" H100 "\",\"resources\":[{"
	         "\"name\":\"" GPU "\",\"total\":\"%s\",\"borrowed\":\"0\"}]}]}}",
	         ws, ws, ws, cohort, nominal, borrowing, res);
	w->cqs[w->in.api.n_cluster_queues++] = add(w, buf);
}

static void cohort(world *w, const char *team_name, const char *nominal, const char *meta)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
	         "{\"kind\":\"Cohort\",\"metadata\":{\"name\":\"tau-team-%s\",\"uid\":\"co-%s\"%s},"
	         "\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"" GPU "\"],"
	         "\"flavors\":[{\"name\":\"" H100 "\",\"resources\":[{\"name\":\"" GPU "\","
	         "\"nominalQuota\":\"%s\"}]}]}]}}",
	         team_name, team_name, meta, nominal);
	w->cohorts[w->in.api.n_cohorts++] = add(w, buf);
}

#define OURS(team_name)                                                                            \
	",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/"               \
	"team\":\"" team_name "\",\"tau.azure.com/quota-mode\":\"explicit\"},\"annotations\":{"    \
	"\"tau.azure.com/team-uid\":\"uid-" team_name "\"}"

static int setup(void **state)
{
	world *w = calloc(1, sizeof(*w));
	tau_quantity v = q("16");

	assert_non_null(w);
	assert_int_equal(tau_budget_pool_new(&w->pool), 0);
	assert_int_equal(tau_budget_pool_set(w->pool, "h100", GPU, &v), 0);
	w->flavors[w->in.api.n_flavors++] = add(w, "{\"kind\":\"ResourceFlavor\",\"metadata\":"
	                                           "{\"name\":\"" H100 "\"}}");
	w->in.capacity = w->pool;
	w->in.cluster_uid = "c-uid";
	w->in.api.workspaces = w->ws;
	w->in.api.flavors = w->flavors;
	w->in.api.cohorts = w->cohorts;
	w->in.api.cluster_queues = w->cqs;
	w->in.multiple_workspaces = true;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;

	for (size_t i = 0; i < w->n_objs; i++)
		cJSON_Delete(w->objs[i]);
	tau_budget_pool_free(w->pool);
	tau_budget_explicit_team_free(w->x);
	free(w);
	return 0;
}

static void decide(world *w)
{
	tau_budget_explicit_team_free(w->x);
	w->x = NULL;
	assert_int_equal(tau_budget_explicit_decide(&w->x, &w->in), 0);
}

static void assert_reason(world *w, const char *reason, const char *text)
{
	if (strcmp(w->x->reason, reason) != 0 || strstr(w->x->message, text) == NULL)
		fail_msg("team reason %s (%s), want %s naming \"%s\"", w->x->reason, w->x->message,
		         reason, text);
}

static const char *field(const cJSON *obj, const char *key)
{
	const cJSON *r = cJSON_GetArrayItem(
	        tau_json_find(cJSON_GetArrayItem(
	                              tau_json_find(cJSON_GetArrayItem(
	                                                    tau_json_find(obj, "spec."
	                                                                       "resourceGroups"),
	                                                    0),
	                                            "flavors"),
	                              0),
	                      "resources"),
	        0);
	const cJSON *v = cJSON_GetObjectItem(r, key);

	return cJSON_IsString(v) ? v->valuestring : "(absent)";
}

static const tau_budget_explicit_queue *xq(world *w, const char *name)
{
	for (size_t i = 0; i < w->x->n_queues; i++)
		if (strcmp(w->x->queues[i].name, name) == 0)
			return &w->x->queues[i];
	fail_msg("no queue %s", name);
	return NULL;
}

#define QUOTA(n) "[{\"flavor\":\"" H100 "\",\"resource\":\"" GPU "\",\"nominalQuota\":\"" n "\"}]"
#define QUOTA_B(n, b)                                                                              \
	"[{\"flavor\":\"" H100 "\",\"resource\":\"" GPU "\",\"nominalQuota\":\"" n "\","           \
	"\"borrowingLimit\":\"" b "\"}]"

/* E1, E2: remainder in the Cohort, guarantees as nominal quota, limits written as "0". */
static void test_e1_e2_remainder_and_guarantees(void **state)
{
	world *w = *state;
	const tau_budget_explicit_queue *a, *b;

	team(w, "ml", QUOTA("10"), "");
	workspace(w, "a", "ml", QUOTA_B("4", "2"));
	workspace(w, "b", "ml", "null");
	decide(w);
	assert_reason(w, "QuotaApplied", "tau-team-ml");
	assert_string_equal(w->x->phase, "Ready");
	assert_non_null(w->x->desired_cohort);
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "6");
	assert_string_equal(field(w->x->desired_cohort, "borrowingLimit"), "(absent)");
	assert_string_equal(field(w->x->desired_cohort, "lendingLimit"), "(absent)");
	assert_string_equal(tau_json_find(w->x->desired_cohort, "metadata.labels")
	                            ->child->next->next->valuestring,
	                    "explicit");
	a = xq(w, "tau-ws-a");
	b = xq(w, "tau-ws-b");
	assert_string_equal(field(a->desired, "nominalQuota"), "4");
	assert_string_equal(field(a->desired, "borrowingLimit"), "2");
	assert_string_equal(field(a->desired, "lendingLimit"), "0");
	assert_string_equal(field(b->desired, "nominalQuota"), "0");
	assert_string_equal(field(b->desired, "borrowingLimit"), "0");
	assert_string_equal(tau_json_find(a->desired, "spec.cohortName")->valuestring,
	                    "tau-team-ml");
	assert_false(w->x->add_finalizer); /* already there */
}

/* E3: guarantees above the quota write nothing. */
static void test_e3_guarantees_above_quota(void **state)
{
	world *w = *state;

	team(w, "ml", QUOTA("4"), "");
	workspace(w, "a", "ml", QUOTA("3"));
	workspace(w, "b", "ml", QUOTA("2"));
	decide(w);
	assert_reason(w, "QuotaInvalid",
	              "team \"ml\": workspace guarantees 5 exceed team quota 4 for flavor " H100
	              " resource " GPU);
	assert_string_equal(w->x->phase, "Degraded");
	assert_null(w->x->desired_cohort);
	assert_null(xq(w, "tau-ws-a")->desired);
}

/* E4: growth above the capacity (others counted as applied) is refused; a reduction is not. */
static void test_e4_capacity(void **state)
{
	world *w = *state;

	cohort(w, "other", "10", OURS("other"));
	team(w, "ml", QUOTA("8"), "");
	decide(w);
	assert_reason(w, "CapacityExceeded",
	              "team allocations 18 exceed discovered capacity 16 for flavor " H100
	              " resource " GPU);
	/* Nothing applied yet: the Degraded team keeps its (empty) allocation at 0. */
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "0");
	/* The team already holds 12 and shrinks to 8: never blocked by capacity. */
	cohort(w, "ml", "12", OURS("ml"));
	decide(w);
	assert_reason(w, "QuotaApplied", "");
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "8");
}

/* E4 beside a capacity team: it claims every pool flavor in full; shrinking is still allowed. */
static void test_e4_pool_claimed_by_capacity_team(void **state)
{
	world *w = *state;

	w->in.pool_claimed_by = "research";
	cohort(w, "research", "0", ""); /* the automatic budget, zeroed for now */
	team(w, "ml", QUOTA("4"), "");
	decide(w);
	assert_reason(w, "CapacityExceeded",
	              "flavor " H100 " is in the automatic pool of capacity team \"research\" "
	              "(TauCluster spec.queues.capacityTeamRef), which holds all of its discovered "
	              "capacity 16 for resource " GPU " even while its budget is zeroed; team "
	              "\"ml\" keeps its applied allocation: quote a flavor outside the pool");
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "0");
	/* A team that already holds 12 (from before the capacity team) may shrink to 4. */
	cohort(w, "ml", "12", OURS("ml"));
	decide(w);
	assert_reason(w, "QuotaApplied", "");
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "4");
}

/* E5: a queue never goes below its own reservation, the team never below its queues'. */
static void test_e5_queue_guard(void **state)
{
	world *w = *state;
	const tau_budget_explicit_queue *a;

	team(w, "ml", QUOTA("10"), "");
	cohort(w, "ml", "2", OURS("ml"));
	workspace(w, "a", "ml", QUOTA_B("4", "0"));
	queue(w, "a", "tau-team-ml", "8", "0", "7");
	decide(w);
	/* New maximum 4 < reservation 7: refused; it keeps 8 and the Cohort does not grow by
	 * the blocked 4 (10 - 8 = 2). */
	a = xq(w, "tau-ws-a");
	assert_null(a->desired);
	assert_string_equal(a->reason, "ReductionBlocked");
	assert_string_equal(a->refusal,
	                    "refusing to reduce ClusterQueue \"tau-ws-a\" below active "
	                    "reservation 7 (new maximum 4) for flavor " H100 " resource " GPU);
	assert_reason(w, "ReductionBlocked", a->refusal);
	assert_string_equal(w->x->phase, "Degraded");
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "2");
}

static void test_e5_team_guard(void **state)
{
	world *w = *state;

	team(w, "ml", QUOTA("6"), "");
	cohort(w, "ml", "8", OURS("ml"));
	workspace(w, "a", "ml", QUOTA_B("2", "10"));
	queue(w, "a", "tau-team-ml", "2", "10", "7");
	decide(w);
	assert_reason(w, "ReductionBlocked",
	              "refusing to reduce team \"ml\" below active "
	              "reservations 7 (new allocation 6) for flavor " H100 " resource " GPU);
	/* The team keeps its applied 10: the Cohort stays at 8. */
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "8");
}

static void test_e5_shrink_releases_to_the_cohort(void **state)
{
	world *w = *state;

	team(w, "ml", QUOTA("10"), "");
	cohort(w, "ml", "4", OURS("ml"));
	workspace(w, "a", "ml", QUOTA_B("2", "1"));
	queue(w, "a", "tau-team-ml", "6", "0", "3");
	decide(w);
	assert_reason(w, "QuotaApplied", "");
	assert_string_equal(field(xq(w, "tau-ws-a")->desired, "nominalQuota"), "2");
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "8");
}

/* E6: a queue still in the old Cohort is charged there; a move that cannot hold is refused. */
static void test_e6_migration(void **state)
{
	world *w = *state;
	const tau_budget_explicit_queue *a;

	team(w, "ml", QUOTA("4"), "");
	workspace(w, "a", "ml", QUOTA("2"));
	queue(w, "a", "tau-team-old", "2", "0", "6");
	decide(w);
	a = xq(w, "tau-ws-a");
	assert_null(a->desired);
	assert_string_equal(a->reason, "MigrationBlocked");
	assert_non_null(strstr(a->refusal, "refusing workspace migration of \"a\" from Cohort "
	                                   "\"tau-team-old\" to team \"ml\""));
	assert_non_null(strstr(a->refusal, "below active reservations 6"));
	/* Not charged here: the whole quota stays in the Cohort. */
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "4");
	assert_reason(w, "MigrationBlocked", "refusing workspace migration");
}

static void test_e6_old_team_keeps_the_charge(void **state)
{
	world *w = *state;

	team(w, "old", QUOTA("10"), "");
	cohort(w, "old", "7", OURS("old"));
	workspace(w, "a", "ml", QUOTA("3")); /* moved to team ml, queue still in tau-team-old */
	queue(w, "a", "tau-team-old", "3", "0", "0");
	decide(w);
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "7");
	assert_int_equal(w->x->n_queues, 0);
}

/* E7: a Degraded team still lets a shrink converge but refuses a raise. */
static void test_e7_degraded_team(void **state)
{
	world *w = *state;
	const tau_budget_explicit_queue *a, *b;

	cohort(w, "other", "12", OURS("other"));
	team(w, "ml", QUOTA("10"), ""); /* wants 10, 12 + 10 > 16: CapacityExceeded */
	cohort(w, "ml", "2", OURS("ml"));
	workspace(w, "a", "ml", QUOTA("1"));
	queue(w, "a", "tau-team-ml", "2", "0", "0");
	workspace(w, "b", "ml", QUOTA_B("1", "0"));
	queue(w, "b", "tau-team-ml", "0", "4", "0");
	decide(w);
	assert_reason(w, "CapacityExceeded", "exceed discovered capacity 16");
	a = xq(w, "tau-ws-a");
	b = xq(w, "tau-ws-b");
	assert_non_null(a->desired);
	assert_string_equal(field(a->desired, "nominalQuota"), "1");
	assert_null(b->desired);
	assert_string_equal(b->refusal, "refusing to raise the nominal quota of ClusterQueue "
	                                "\"tau-ws-b\" (workspace \"b\"): team \"ml\" is not Ready");
	/* Applied 2 + 2 + 0 = 4; a releases 1 to the Cohort: 3. */
	assert_string_equal(field(w->x->desired_cohort, "nominalQuota"), "3");
}

/* E8: another owner's or legacy objects are never adopted. */
static void test_e8_ownership(void **state)
{
	world *w = *state;

	team(w, "ml", QUOTA("4"), "");
	cohort(w, "ml", "4",
	       ",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"
	       "\"tau.azure.com/team-uid\":\"someone-else\"}");
	decide(w);
	assert_reason(w, "OwnershipConflict", "Cohort \"tau-team-ml\" has a different owner UID");
	assert_null(w->x->desired_cohort);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem((cJSON *)w->cohorts[0], "metadata"),
	                           "annotations");
	decide(w);
	assert_reason(w, "OwnershipConflict",
	              "Cohort \"tau-team-ml\" has legacy ownership metadata");
}

/* E9: deletion waits for every queue applied to the Cohort, then cleans up. */
static void test_e9_deletion(void **state)
{
	world *w = *state;

	team(w, "ml", QUOTA("4"), ",\"deletionTimestamp\":\"2026-12-02T18:00:00Z\"");
	cohort(w, "ml", "2", OURS("ml"));
	workspace(w, "a", "ml", QUOTA("2"));
	queue(w, "a", "tau-team-ml", "2", "0", "0");
	decide(w);
	assert_reason(w, "DeletionBlocked",
	              "ClusterQueue \"tau-ws-a\" of workspace \"a\" is "
	              "still applied to Cohort \"tau-team-ml\"");
	assert_false(w->x->remove_finalizer);
	assert_false(w->x->delete_cohort);
	w->in.api.n_cluster_queues = 0;
	decide(w);
	assert_true(w->x->remove_finalizer);
	assert_true(w->x->delete_cohort);
}

/* E9: a team holding nothing (no quota, workspaces, Cohort or queue) gets no finalizer, and
 * one it got earlier is removed, so deleting it never waits for the aggregator. */
static void test_e9_empty_team_has_no_finalizer(void **state)
{
	world *w = *state;

	team(w, "empty", "null", "");
	decide(w);
	assert_reason(w, "QuotaApplied", "the team holds nothing, so no Cohort and no finalizer");
	assert_true(w->x->remove_finalizer);
	assert_false(w->x->add_finalizer);
	assert_null(w->x->desired_cohort);
	w->in.team = add(w, "{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"bare\","
	                    "\"namespace\":\"tau-system\",\"uid\":\"uid-bare\"},\"spec\":{}}");
	decide(w);
	assert_false(w->x->remove_finalizer);
	assert_false(w->x->add_finalizer);
	/* A workspace (or a quota) makes it hold something: the finalizer is added. */
	w->in.team = add(w, "{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"bare\","
	                    "\"namespace\":\"tau-system\",\"uid\":\"uid-bare\"},\"spec\":{}}");
	workspace(w, "a", "bare", "null");
	decide(w);
	assert_true(w->x->add_finalizer);
}

/* A team created again (new UID) finds its Cohort recording the old one: ours, adopted (the
 * caller's write, with an Event); one recording a live team's UID is another owner's (E8). */
static void test_e8_recreated_team_adopts_its_cohort(void **state)
{
	world *w = *state;
	const cJSON *other;

	team(w, "ml", QUOTA("4"), "");
	cohort(w, "ml", "4",
	       ",\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/team\":"
	       "\"ml\",\"tau.azure.com/quota-mode\":\"explicit\"},\"annotations\":{"
	       "\"tau.azure.com/team-uid\":\"uid-old\"}");
	w->in.api.teams = &w->in.team;
	w->in.api.n_teams = 1;
	decide(w);
	assert_non_null(w->x->owned_cohort);
	assert_reason(w, "QuotaApplied", "tau-team-ml");
	other = add(w, "{\"kind\":\"TauTeam\",\"metadata\":{\"name\":\"vision\",\"uid\":"
	               "\"uid-old\"},\"spec\":{}}");
	{
		const cJSON *both[2] = {w->in.team, other};

		w->in.api.teams = both;
		w->in.api.n_teams = 2;
		decide(w);
		assert_null(w->x->owned_cohort);
		assert_reason(w, "OwnershipConflict", "tau-team-ml");
	}
	w->in.api.teams = NULL;
	w->in.api.n_teams = 0;
}

/* A workspace created again (new UID) finds its queue recording the old one: ours (our labels
 * naming it and a team), adopted by the caller's write; one recording a live workspace's UID is
 * another owner's (E8), as for the capacity team's queues. */
static void test_e8_recreated_workspace_adopts_its_queue(void **state)
{
	world *w = *state;
	cJSON *meta;

	team(w, "ml", QUOTA("4"), "");
	cohort(w, "ml", "4", OURS("ml"));
	workspace(w, "a", "ml", QUOTA("1"));
	queue(w, "a", "tau-team-ml", "1", "0", "0");
	meta = cJSON_GetObjectItem((cJSON *)w->cqs[0], "metadata");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(meta, "annotations"),
	                          "tau.azure.com/workspace-uid", cJSON_CreateString("uid-gone"));
	cJSON_AddStringToObject(cJSON_GetObjectItem(meta, "labels"), "tau.azure.com/team", "ml");
	decide(w);
	assert_reason(w, "QuotaApplied", "");
	assert_non_null(xq(w, "tau-ws-a")->desired);
	/* The recorded UID is a live workspace's: never adopted. */
	workspace(w, "b", "other", "null");
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem((cJSON *)w->ws[1], "metadata"), "uid",
	                          cJSON_CreateString("uid-gone"));
	decide(w);
	assert_reason(w, "OwnershipConflict", "tau-ws-a");
	/* Without our team label (legacy labels) it is not ours either. */
	w->in.api.n_workspaces = 1;
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(meta, "labels"), "tau.azure.com/team");
	decide(w);
	assert_reason(w, "OwnershipConflict", "tau-ws-a");
}

/* E10: missing quota is zero; unknown flavors are FlavorNotReady. */
static void test_e10_zero_and_missing_flavor(void **state)
{
	world *w = *state;

	team(w, "ml", "null", "");
	workspace(w, "a", "ml", QUOTA("1"));
	decide(w);
	assert_reason(w, "QuotaInvalid", "workspace guarantees 1 exceed team quota 0");
	w->in.api.n_workspaces = 0;
	team(w, "ml2", "[{\"flavor\":\"nope\",\"resource\":\"gpu\",\"nominalQuota\":\"1\"}]", "");
	decide(w);
	assert_reason(w, "FlavorNotReady", "ResourceFlavor \"nope\"");
	assert_null(w->x->desired_cohort);
}

typedef struct named {
	char *name;
	int value;
} named;

/* Find-or-insert keeps the records sorted, copies the name and zeroes the rest. */
static void test_sorted_add(void **state)
{
	named *items = NULL;
	size_t n = 0, cap = 0;
	void *rec = NULL;

	(void)state;
	assert_int_equal(
	        tau_budget_sorted_add(&rec, (void **)&items, &n, &cap, sizeof(*items), "b"), 1);
	((named *)rec)->value = 2;
	assert_int_equal(
	        tau_budget_sorted_add(&rec, (void **)&items, &n, &cap, sizeof(*items), "a"), 1);
	assert_int_equal(((named *)rec)->value, 0);
	((named *)rec)->value = 1;
	assert_int_equal(
	        tau_budget_sorted_add(&rec, (void **)&items, &n, &cap, sizeof(*items), "b"), 0);
	assert_int_equal(((named *)rec)->value, 2);
	assert_int_equal(n, 2);
	assert_string_equal(items[0].name, "a");
	assert_string_equal(items[1].name, "b");
	assert_int_equal(items[1].value, 2);
	for (size_t i = 0; i < n; i++)
		free(items[i].name);
	free(items);
}

static void test_cells_clear_many(void **state)
{
	tau_budget_cells a = {0}, b = {0};
	tau_quantity one = q("1");

	(void)state;
	assert_int_equal(tau_budget_cells_add(&a, "f", "gpu", &one), 0);
	assert_int_equal(tau_budget_cells_add(&b, "f", "cpu", &one), 0);
	tau_budget_cells_clear_many(&a, &b, NULL);
	assert_int_equal(a.n, 0);
	assert_null(a.items);
	assert_int_equal(b.n, 0);
	assert_null(b.items);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_remainder_table),
	        cmocka_unit_test(test_new_maximum_table),
	        cmocka_unit_test(test_applied_allocation_table),
	        cmocka_unit_test(test_quota_parse_table),
	        cmocka_unit_test(test_sorted_add),
	        cmocka_unit_test(test_cells_clear_many),
	        T(test_e1_e2_remainder_and_guarantees),
	        T(test_e3_guarantees_above_quota),
	        T(test_e4_capacity),
	        T(test_e4_pool_claimed_by_capacity_team),
	        T(test_e5_queue_guard),
	        T(test_e5_team_guard),
	        T(test_e5_shrink_releases_to_the_cohort),
	        T(test_e6_migration),
	        T(test_e6_old_team_keeps_the_charge),
	        T(test_e7_degraded_team),
	        T(test_e8_ownership),
	        T(test_e9_deletion),
	        T(test_e9_empty_team_has_no_finalizer),
	        T(test_e8_recreated_team_adopts_its_cohort),
	        T(test_e8_recreated_workspace_adopts_its_queue),
	        T(test_e10_zero_and_missing_flavor),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
