/*
 * test_budget_conflict.c - P4 conflicts: each kind, the non-conflicts
 * (our own objects, a flavor that selects no pool node, reservations off
 * the pool), deterministic order, and unreadable input.
 */
#include "budget/conflict.h"

#include "tau/error.h"
#include "tau/json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_OBJ      8

static cJSON *parse(const char *text)
{
	cJSON *j = NULL;

	if (tau_json_parse(&j, text, strlen(text), 0) != 0)
		fail_msg("bad test JSON: %s", text);
	return j;
}

/* Ownership metadata literals. */
#define OURS_RF                                                                                    \
	"\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"              \
	"\"tau.azure.com/cluster-uid\":\"c-1\"}"
#define OURS_COHORT                                                                                \
	"\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"              \
	"\"tau.azure.com/team-uid\":\"t-1\"}"
#define OURS_CQ_ALPHA                                                                              \
	"\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\"},\"annotations\":{"              \
	"\"tau.azure.com/workspace-uid\":\"w-1\"}"
/* A workspace queue's full ownership metadata: team, workspace and its UID. */
#define ORPHAN_CQ(team, ws, uid)                                                                   \
	"\"labels\":{\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/team\":\"" team  \
	"\",\"tau.azure.com/workspace\":\"" ws "\"},\"annotations\":{"                             \
	"\"tau.azure.com/workspace-uid\":\"" uid "\"}"
#define RESERVING(flavor, total)                                                                   \
	"\"status\":{\"flavorsReservation\":[{\"name\":\"" flavor "\",\"resources\":[{\"name\":"   \
	"\"cpu\",\"total\":\"0\"},{\"name\":\"nvidia.com/gpu\",\"total\":" total                   \
	",\"borrowed\":\"0\"}]}]}"
#define NOMINAL(flavor, q)                                                                         \
	"\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"nvidia.com/gpu\"],\"flavors\":[{"  \
	"\"name\":\"" flavor "\",\"resources\":[{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":" q  \
	"}]}]}]}"

typedef struct want_conflict {
	const char *reason, *kind, *name, *message_has;
} want_conflict;

typedef struct conflict_case {
	const char *what;
	const char *flavors, *cluster_queues, *cohorts; /* JSON arrays, NULL for [] */
	bool team_missing;
	const char *team_quota, *alpha_quota; /* NULL: absent */
	want_conflict want[6];
} conflict_case;

static const conflict_case cases[] = {
        {"clean: our own objects, a flavor that selects no pool node, work off the pool",
         "[{\"metadata\":{\"name\":\"taugrid-gpu-a100\"," OURS_RF "},\"spec\":{\"nodeLabels\":{"
         "\"tau.azure.com/gpu-class\":\"a100\",\"kubernetes.io/os\":\"linux\"}}},"
         "{\"metadata\":{\"name\":\"cpu-nodes\"},\"spec\":{\"nodeLabels\":{\"pool\":\"cpu\"}}},"
         "{\"metadata\":{\"name\":\"a100-zone9\"},\"spec\":{\"nodeLabels\":{"
         "\"tau.azure.com/gpu-class\":\"a100\",\"zone\":\"9\"}}}]",
         "[{\"metadata\":{\"name\":\"tau-ws-alpha\"," OURS_CQ_ALPHA "},"
         "\"spec\":{\"cohortName\":\"tau-team-research\"}," RESERVING("taugrid-gpu-a100", "\"4\"") "},{\"metadata\":{\"name\":\"cpu-queue\"}," NOMINAL(
                 "cpu-nodes",
                 "\"8\"") "," RESERVING("cpu-nodes",
                                        "\"3\"") "},"
                                                 "{\"metadata\":{\"name\":\"idle\"}," NOMINAL(
                                                         "taugrid-gpu-a100",
                                                         "\"0\"") "," RESERVING("taugrid-gpu-a100",
                                                                                "0") "}]",
         "[{\"metadata\":{\"name\":\"tau-team-research\"," OURS_COHORT
         "}," NOMINAL("taugrid-gpu-a100", "\"16\"") "},{\"metadata\":{\"name\":\"org\"}}]",
         false,
         NULL,
         NULL,
         {{NULL, NULL, NULL, NULL}}},
        {"(a) a foreign flavor selects pool nodes by label, whatever its name",
         "[{\"metadata\":{\"name\":\"gpu-a\",\"labels\":{\"app.kubernetes.io/managed-by\":"
         "\"Helm\"}},\"spec\":{\"nodeLabels\":{\"tau.azure.com/gpu-class\":\"a100\"}}}]",
         NULL,
         NULL,
         false,
         NULL,
         NULL,
         {{"ForeignFlavorSelectsPool", "ResourceFlavor", "gpu-a",
           "ResourceFlavor gpu-a is not this TauCluster's (label app.kubernetes.io/managed-by "
           "is \"Helm\", not \"taugrid\") and its nodeLabels select 2 pool nodes, e.g. n1"}}},
        {"(a) no nodeLabels selects every node",
         "[{\"metadata\":{\"name\":\"everything\"},\"spec\":{}}]",
         NULL,
         NULL,
         false,
         NULL,
         NULL,
         {{"ForeignFlavorSelectsPool", "ResourceFlavor", "everything",
           "ResourceFlavor everything (label app.kubernetes.io/managed-by is absent: not "
           "managed by TauGrid) has no nodeLabels, so Kueue may place what it admits on any "
           "node, the 3 GPU pool nodes (e.g. n1) included: the pool's cpu, memory and GPUs "
           "are the team budget, and quota on this flavor, even for cpu only, admits work "
           "onto them outside it; give everything nodeLabels that only non-pool nodes carry"}}},
        {"(a) the stock Kueue default-flavor (empty nodeLabels) says why and how to fix",
         "[{\"metadata\":{\"name\":\"default-flavor\"},\"spec\":{\"nodeLabels\":{}}}]",
         NULL,
         NULL,
         false,
         NULL,
         NULL,
         {{"ForeignFlavorSelectsPool", "ResourceFlavor", "default-flavor",
           "give default-flavor nodeLabels that only non-pool nodes carry (a label your CPU "
           "nodes have and the GPU nodes lack), or delete it if no ClusterQueue uses it"}}},
        {"(a) our name, but legacy ownership metadata",
         "[{\"metadata\":{\"name\":\"taugrid-gpu-h100\",\"labels\":{"
         "\"app.kubernetes.io/managed-by\":\"taugrid\"}},\"spec\":{\"nodeLabels\":{"
         "\"tau.azure.com/gpu-class\":\"h100\"}}}]",
         NULL,
         NULL,
         false,
         NULL,
         NULL,
         {{"ForeignFlavorSelectsPool", "ResourceFlavor", "taugrid-gpu-h100",
           "legacy ownership metadata: labelled app.kubernetes.io/managed-by=taugrid but no "
           "tau.azure.com/cluster-uid annotation"}}},
        {"(b) external reservations on a pool flavor",
         NULL,
         "[{\"metadata\":{\"name\":\"ext\"}," RESERVING("taugrid-gpu-h100", "\"2\"") "}]",
         NULL,
         false,
         NULL,
         NULL,
         {{"ExternalReservation", "ClusterQueue", "ext",
           "ClusterQueue ext is not TauGrid's and holds reservations on pool flavor "
           "taugrid-gpu-h100 (nvidia.com/gpu \"2\")"}}},
        {"(b) a workspace queue name owned by another workspace UID is not ours",
         NULL,
         "[{\"metadata\":{\"name\":\"tau-ws-alpha\",\"labels\":{\"app.kubernetes.io/managed-by\":"
         "\"taugrid\"},\"annotations\":{\"tau.azure.com/workspace-uid\":\"w-9\"}}," RESERVING(
                 "taugrid-gpu-a100", "1") "}]",
         NULL,
         false,
         NULL,
         NULL,
         {{"ExternalReservation", "ClusterQueue", "tau-ws-alpha", "(nvidia.com/gpu 1)"}}},
        {"(b) nominal quota on a flavor found by (a), and a foreign Cohort's quota",
         "[{\"metadata\":{\"name\":\"gpu-a\"},\"spec\":{\"nodeLabels\":{"
         "\"tau.azure.com/gpu-class\":\"a100\"}}}]",
         "[{\"metadata\":{\"name\":\"ext\"}," NOMINAL("gpu-a", "8") "}]",
         "[{\"metadata\":{\"name\":\"org\"}," NOMINAL("taugrid-gpu-a100", "\"500m\"") "}]",
         false,
         NULL,
         NULL,
         {{"ForeignFlavorSelectsPool", "ResourceFlavor", "gpu-a", "select 2 pool nodes"},
          {"ExternalQuota", "ClusterQueue", "ext",
           "ClusterQueue ext is not TauGrid's and has nominalQuota 8 of nvidia.com/gpu on pool "
           "flavor gpu-a"},
          {"ExternalQuota", "Cohort", "org", "nominalQuota \"500m\" of nvidia.com/gpu"}}},
        {"(b) an explicit team's Cohort and queue on a pool flavor are named as TauGrid's",
         NULL,
         "[{\"metadata\":{\"name\":\"tau-ws-x\"," ORPHAN_CQ("ml", "x", "w-x") "}," NOMINAL(
                 "taugrid-gpu-h100", "\"2\"") "}]",
         "[{\"metadata\":{\"name\":\"tau-team-ml\",\"labels\":{"
         "\"app.kubernetes.io/managed-by\":\"taugrid\",\"tau.azure.com/team\":\"ml\","
         "\"tau.azure.com/quota-mode\":\"explicit\"},\"annotations\":{"
         "\"tau.azure.com/team-uid\":\"t-ml\"}}," NOMINAL("taugrid-gpu-h100", "\"8\"") "}]",
         false,
         NULL,
         NULL,
         {{"ExternalQuota", "ClusterQueue", "tau-ws-x",
           "ClusterQueue tau-ws-x is the queue of workspace x of explicit-quota team ml and has "
           "nominalQuota \"2\" of nvidia.com/gpu on pool flavor taugrid-gpu-h100, which the "
           "capacity team's Cohort already holds: the same nodes would be budgeted twice; "
           "remove flavor taugrid-gpu-h100 from TauWorkspace x and TauTeam ml spec.quota"},
          {"ExternalQuota", "Cohort", "tau-team-ml",
           "Cohort tau-team-ml is the budget of explicit-quota team ml and has nominalQuota "
           "\"8\" of nvidia.com/gpu on pool flavor taugrid-gpu-h100, which the capacity "
           "team's Cohort already holds: the same nodes would be budgeted twice; remove "
           "flavor taugrid-gpu-h100 from TauTeam ml spec.quota"}}},
        {"a foreign queue or Cohort joining the team Cohort",
         NULL,
         "[{\"metadata\":{\"name\":\"sneaky\"},\"spec\":{\"cohortName\":\"tau-team-research\"}}]",
         "[{\"metadata\":{\"name\":\"sub\"},\"spec\":{\"parentName\":\"tau-team-research\"}}]",
         false,
         NULL,
         NULL,
         {{"ForeignTeamCohortMember", "ClusterQueue", "sneaky",
           "its cohortName is tau-team-research"},
          {"ForeignTeamCohortMember", "Cohort", "sub", "its parentName is tau-team-research"}}},
        {"the queue of a workspace just deleted (ours, being removed) is no member conflict",
         NULL,
         "[{\"metadata\":{\"name\":\"tau-ws-gone\"," ORPHAN_CQ(
                 "research", "gone",
                 "w-9") "},\"spec\":{\"cohortName\":\"tau-team-research\"}},"
                        "{\"metadata\":{\"name\":\"tau-ws-going\",\"deletionTimestamp\":"
                        "\"2026-12-03T00:00:00Z\",\"finalizers\":[\"kueue.x-k8s.io/"
                        "resource-in-use\"]," ORPHAN_CQ("research", "going",
                                                        "w-8") "},\"spec\":{\"cohortName\":"
                                                               "\"tau-team-research\"}}]",
         NULL,
         false,
         NULL,
         NULL,
         {{NULL, NULL, NULL, NULL}}},
        {"a queue with our labels but another team, no workspace UID or another name still "
         "conflicts; one named after a live workspace recording a UID that is gone is the "
         "queue of a re-created workspace, adopted (issue 24): no conflict",
         NULL,
         "[{\"metadata\":{\"name\":\"tau-ws-gone\"," ORPHAN_CQ(
                 "other", "gone",
                 "w-9") "},\"spec\":{\"cohortName\":\"tau-team-research\"}},"
                        "{\"metadata\":{\"name\":\"tau-ws-nouid\"," ORPHAN_CQ(
                                "research", "nouid",
                                "") "},\"spec\":{\"cohortName\":\"tau-team-research\"}},"
                                    "{\"metadata\":{\"name\":\"renamed\"," ORPHAN_CQ(
                                            "research", "gone",
                                            "w-9") "},\"spec\":{\"cohortName\":\"tau-team-"
                                                   "research\"}},"
                                                   "{\"metadata\":{\"name\":\"tau-ws-"
                                                   "alpha\"," ORPHAN_CQ(
                                                           "research", "alpha",
                                                           "w-7") "},\"spec\":{\"cohortName\":"
                                                                  "\"tau-team-research\"}}]",
         NULL,
         false,
         NULL,
         NULL,
         {{"ForeignTeamCohortMember", "ClusterQueue", "renamed", NULL},
          {"ForeignTeamCohortMember", "ClusterQueue", "tau-ws-gone", NULL},
          {"ForeignTeamCohortMember", "ClusterQueue", "tau-ws-nouid", NULL}}},
        {"(c) legacy GPU discovery, even on a queue with nothing reserved",
         NULL,
         "[{\"metadata\":{\"name\":\"legacy\",\"labels\":{"
         "\"tau.azure.com/discover-gpu-flavors\":\"true\"}}},{\"metadata\":{\"name\":\"off\","
         "\"labels\":{\"tau.azure.com/discover-gpu-flavors\":\"false\"}}}]",
         NULL,
         false,
         NULL,
         NULL,
         {{"LegacyGPUDiscovery", "ClusterQueue", "legacy",
           "ClusterQueue legacy is labelled tau.azure.com/discover-gpu-flavors=true"}}},
        {"(d) spec.quota on the team and on a workspace",
         NULL,
         NULL,
         NULL,
         false,
         "{\"flavors\":[]}",
         "{}",
         {{"ExplicitQuota", "TauTeam", "research",
           "TauTeam research is the capacity team but sets spec.quota"},
          {"ExplicitQuota", "TauWorkspace", "alpha",
           "TauWorkspace alpha of capacity team research sets spec.quota"}}},
        {"(d) a JSON null quota is absent",
         NULL,
         NULL,
         NULL,
         false,
         "null",
         "null",
         {{NULL, NULL, NULL, NULL}}},
        {"(e) the capacity team does not exist",
         NULL,
         NULL,
         NULL,
         true,
         NULL,
         NULL,
         {{"CapacityTeamNotFound", "TauTeam", "research",
           "TauCluster capacityTeamRef names TauTeam research, which does not exist"}}},
        {"order: by reason, then kind, then name",
         "[{\"metadata\":{\"name\":\"zz\"},\"spec\":{}},{\"metadata\":{\"name\":\"aa\"},"
         "\"spec\":{}}]",
         "[{\"metadata\":{\"name\":\"q2\",\"labels\":{\"tau.azure.com/discover-gpu-flavors\":"
         "\"true\"}}},{\"metadata\":{\"name\":\"q1\"}," RESERVING("zz", "\"1\"") "}]",
         NULL,
         true,
         NULL,
         NULL,
         {{"ForeignFlavorSelectsPool", "ResourceFlavor", "aa", NULL},
          {"ForeignFlavorSelectsPool", "ResourceFlavor", "zz", NULL},
          {"ExternalReservation", "ClusterQueue", "q1", "pool flavor zz"},
          {"LegacyGPUDiscovery", "ClusterQueue", "q2", NULL},
          {"CapacityTeamNotFound", "TauTeam", "research", NULL}}},
};

/* The three counted pool nodes. */
static const char nodes_json[] =
        "[{\"tau.azure.com/gpu-class\":\"a100\",\"kubernetes.io/os\":\"linux\",\"zone\":\"1\"},"
        "{\"tau.azure.com/gpu-class\":\"a100\",\"kubernetes.io/os\":\"linux\"},"
        "{\"tau.azure.com/gpu-class\":\"h100\",\"kubernetes.io/os\":\"linux\"}]";

typedef struct world {
	cJSON *node_labels, *flavors, *cqs, *cohorts, *team_quota, *alpha_quota;
	tau_budget_node nodes[3];
	const cJSON *rf[MAX_OBJ], *cq[MAX_OBJ], *co[MAX_OBJ];
	tau_budget_workspace ws[2];
	tau_budget_conflict_input in;
} world;

static size_t items(const cJSON **out, const cJSON *array)
{
	size_t n = 0;
	const cJSON *it;

	cJSON_ArrayForEach(it, array)
	{
		assert_true(n < MAX_OBJ);
		out[n++] = it;
	}
	return n;
}

static const char *const own_flavors[] = {"taugrid-gpu-a100", "taugrid-gpu-h100"};

static void world_build(world *w, const conflict_case *c)
{
	static const char *const names[] = {"n2", "n1", "n3"}; /* n1 is not first on purpose */

	memset(w, 0, sizeof(*w));
	w->node_labels = parse(nodes_json);
	for (size_t i = 0; i < 3; i++) {
		w->nodes[i].name = names[i];
		w->nodes[i].labels = cJSON_GetArrayItem(w->node_labels, (int)i);
	}
	w->flavors = parse(c->flavors != NULL ? c->flavors : "[]");
	w->cqs = parse(c->cluster_queues != NULL ? c->cluster_queues : "[]");
	w->cohorts = parse(c->cohorts != NULL ? c->cohorts : "[]");
	w->team_quota = c->team_quota != NULL ? parse(c->team_quota) : NULL;
	w->alpha_quota = c->alpha_quota != NULL ? parse(c->alpha_quota) : NULL;
	w->ws[0] = (tau_budget_workspace){"alpha", "w-1", w->alpha_quota};
	w->ws[1] = (tau_budget_workspace){"beta", "w-2", NULL};
	w->in.nodes = w->nodes;
	w->in.n_nodes = 3;
	w->in.own_flavors = own_flavors;
	w->in.n_own_flavors = 2;
	w->in.cluster_uid = "c-1";
	w->in.flavors = w->rf;
	w->in.n_flavors = items(w->rf, w->flavors);
	w->in.cluster_queues = w->cq;
	w->in.n_cluster_queues = items(w->cq, w->cqs);
	w->in.cohorts = w->co;
	w->in.n_cohorts = items(w->co, w->cohorts);
	w->in.team = "research";
	w->in.team_exists = !c->team_missing;
	w->in.team_uid = c->team_missing ? NULL : "t-1";
	w->in.team_quota = w->team_quota;
	w->in.workspaces = w->ws;
	w->in.n_workspaces = 2;
}

static void world_free(world *w)
{
	cJSON_Delete(w->node_labels);
	cJSON_Delete(w->flavors);
	cJSON_Delete(w->cqs);
	cJSON_Delete(w->cohorts);
	cJSON_Delete(w->team_quota);
	cJSON_Delete(w->alpha_quota);
}

static void test_conflict_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const conflict_case *c = &cases[i];
		tau_budget_conflicts *list = NULL;
		size_t n_want = 0;
		world w;

		world_build(&w, c);
		if (tau_budget_conflicts_find(&list, &w.in) != 0)
			fail_msg("%s: %s", c->what, tau_error_last()->msg);
		while (n_want < ARRAY_LEN(c->want) && c->want[n_want].reason != NULL)
			n_want++;
		if (list->n != n_want) {
			for (size_t k = 0; k < list->n; k++)
				print_message("  got %s %s %s: %s\n", list->items[k].reason_code,
				              list->items[k].kind, list->items[k].name,
				              list->items[k].message);
			fail_msg("%s: %zu conflicts, want %zu", c->what, list->n, n_want);
		}
		for (size_t k = 0; k < n_want; k++) {
			const tau_budget_conflict *got = &list->items[k];
			const want_conflict *want = &c->want[k];

			if (strcmp(got->reason_code, want->reason) != 0 ||
			    strcmp(got->kind, want->kind) != 0 ||
			    strcmp(got->name, want->name) != 0 ||
			    (want->message_has != NULL &&
			     strstr(got->message, want->message_has) == NULL))
				fail_msg("%s: #%zu got %s %s %s: %s\nwant %s %s %s: ...%s...",
				         c->what, k, got->reason_code, got->kind, got->name,
				         got->message, want->reason, want->kind, want->name,
				         want->message_has != NULL ? want->message_has : "");
		}
		tau_budget_conflicts_free(list);
		world_free(&w);
	}
}

static void test_summary(void **state)
{
	tau_budget_conflicts *list = NULL;
	char buf[160];
	world w;

	(void)state;
	world_build(&w, &cases[ARRAY_LEN(cases) - 1]);
	assert_int_equal(tau_budget_conflicts_find(&list, &w.in), 0);
	tau_budget_conflicts_summary(buf, sizeof(buf), list);
	assert_int_equal(strncmp(buf, "5 conflicts: ResourceFlavor aa (label", 37), 0);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	tau_budget_conflicts_free(list);
	world_free(&w);

	world_build(&w, &cases[0]);
	assert_int_equal(tau_budget_conflicts_find(&list, &w.in), 0);
	tau_budget_conflicts_summary(buf, sizeof(buf), list);
	assert_string_equal(buf, "");
	tau_budget_conflicts_free(list);
	world_free(&w);
}

static void test_unreadable_input(void **state)
{
	static const struct {
		const char *flavors, *cqs;
		int rc;
		const char *msg_has;
	} rows[] = {
	        {"[{\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeLabels\":\"gpu\"}}]", NULL,
	         -TAU_ETYPE, "ResourceFlavor x: spec.nodeLabels is not a map"},
	        {"[{\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeLabels\":{\"a\":1}}}]", NULL,
	         -TAU_ETYPE, "spec.nodeLabels[a] is not a string"},
	        {"[{\"spec\":{}}]", NULL, -TAU_ETYPE, "a ResourceFlavor has no metadata.name"},
	        {NULL,
	         "[{\"metadata\":{\"name\":\"q\"}," NOMINAL("taugrid-gpu-a100", "\"lots\"") "}]",
	         -TAU_EINVAL, "ClusterQueue q: flavor taugrid-gpu-a100: nominalQuota"},
	        {NULL, "[{\"metadata\":{\"name\":\"q\"},\"status\":{\"flavorsReservation\":{}}}]",
	         -TAU_ETYPE, "ClusterQueue q: status.flavorsReservation is not a list"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(rows); i++) {
		conflict_case c = {"bad", rows[i].flavors, rows[i].cqs, NULL, false, NULL, NULL,
		                   {{0}}};
		tau_budget_conflicts *list = NULL;
		world w;

		world_build(&w, &c);
		assert_int_equal(tau_budget_conflicts_find(&list, &w.in), rows[i].rc);
		assert_null(list);
		if (strstr(tau_error_last()->msg, rows[i].msg_has) == NULL)
			fail_msg("row %zu: message \"%s\" lacks \"%s\"", i, tau_error_last()->msg,
			         rows[i].msg_has);
		world_free(&w);
	}
	{
		tau_budget_conflicts *list = NULL;
		tau_budget_conflict_input in;

		memset(&in, 0, sizeof(in));
		assert_int_equal(tau_budget_conflicts_find(&list, &in), -TAU_EINVAL);
		in.team = "research";
		in.n_nodes = 1;
		assert_int_equal(tau_budget_conflicts_find(&list, &in), -TAU_EINVAL);
	}
}

/* Nodes given as the inventory's facts instead of JSON labels. */
static void test_nodes_as_facts(void **state)
{
	static const char *const node_json[] = {
	        "{\"metadata\":{\"name\":\"gpu-b\",\"labels\":{\"kubernetes.io/os\":\"linux\","
	        "\"tau.azure.com/gpu-class\":\"a100\",\"zone\":\"2\"}}}",
	        "{\"metadata\":{\"name\":\"gpu-a\",\"labels\":{\"kubernetes.io/os\":\"linux\","
	        "\"tau.azure.com/gpu-class\":\"a100\",\"zone\":\"1\"}}}",
	};
	tau_node_facts facts[2];
	tau_budget_node nodes[2];
	cJSON *rf = parse("{\"metadata\":{\"name\":\"zone1\"},\"spec\":{\"nodeLabels\":{"
	                  "\"zone\":\"1\"}}}");
	const cJSON *rfs[1] = {rf};
	tau_budget_conflict_input in;
	tau_budget_conflicts *list = NULL;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		cJSON *n = parse(node_json[i]);

		memset(&facts[i], 0, sizeof(facts[i]));
		assert_int_equal(tau_node_facts_from_json(&facts[i], n), 0);
		nodes[i] = (tau_budget_node){NULL, NULL, &facts[i]};
		cJSON_Delete(n);
	}
	memset(&in, 0, sizeof(in));
	in.nodes = nodes;
	in.n_nodes = 2;
	in.flavors = rfs;
	in.n_flavors = 1;
	in.team = "research";
	in.team_exists = true;
	assert_int_equal(tau_budget_conflicts_find(&list, &in), 0);
	assert_int_equal(list->n, 1);
	assert_string_equal(list->items[0].name, "zone1");
	assert_non_null(strstr(list->items[0].message, "select 1 pool node, e.g. gpu-a:"));
	tau_budget_conflicts_free(list);
	cJSON_Delete(rf);
	tau_node_facts_clear(&facts[0]);
	tau_node_facts_clear(&facts[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_conflict_table),
	        cmocka_unit_test(test_summary),
	        cmocka_unit_test(test_unreadable_input),
	        cmocka_unit_test(test_nodes_as_facts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
